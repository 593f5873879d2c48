/* matmul.c - batched matrix multiplication for the interpreter.
 *
 * out[..., M, N] = a[..., M, K] @ b[..., K, N]; the batch dims of a and b
 * are right-aligned against out's and broadcast by a stride of 0.  The
 * output is zeroed and every product accumulates into it, so K == 0 gives
 * zeros.
 *
 * f32 and f64 use a blocked, packed GEMM (matmul_kernel.h) compiled three
 * times each: generic (SSE2 on x86-64), AVX2+FMA and AVX-512, picked once
 * at run time from the CPU's features.  Small products (M < 6 or M*N*K
 * below 32768 multiply-adds) skip the packing and use the simple kernel, a
 * cache-blocked i-k-j loop whose inner j loop GCC vectorises; the integer
 * types always use it, wrapping around (computed in unsigned types).
 *
 * Products of at least 2^21 multiply-adds run on the thread pool
 * (runtime/pool.h, TDSL_NUM_THREADS): one task per batch item, or, with
 * fewer items than threads, per range of rows (multiples of 8), each
 * thread packing into its own workspace.  Smaller products stay on the
 * calling thread.  Every output element is computed by one task in the
 * same order as sequentially, so results do not depend on the thread count.
 */
#include "interp/kernels.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pool.h"
#include "runtime/mem.h"

/* GCC 12 at -O2 vectorises only loops without an epilogue: ask for the
 * full cost model (the simple kernels' inner loops must vectorise).  And
 * -std=c11 turns off FMA contraction, which the micro-kernel needs. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=fast")
#endif

/* Block sizes of the packed GEMMs in elements (multiples of every MR / NR below). */
#define GEMM_KC 256
#define GEMM_MC 192
#define GEMM_NC 2048

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TD_GEMM_MULTI_ISA 1
#endif

/* matmul_kernel.h per (type, ISA); block sizes in elements. */
#define GEMM_T float
#define GEMM_SFX f32_generic
#define GEMM_MR 4
#define GEMM_NR 8
#define GEMM_VL 4
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T
#define GEMM_T double
#define GEMM_SFX f64_generic
#define GEMM_MR 4
#define GEMM_NR 4
#define GEMM_VL 2
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T

#ifdef TD_GEMM_MULTI_ISA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define GEMM_T float
#define GEMM_SFX f32_avx2
#define GEMM_MR 6
#define GEMM_NR 16
#define GEMM_VL 8
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T
#define GEMM_T double
#define GEMM_SFX f64_avx2
#define GEMM_MR 6
#define GEMM_NR 8
#define GEMM_VL 4
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,fma")
#define GEMM_T float
#define GEMM_SFX f32_avx512
#define GEMM_MR 6
#define GEMM_NR 64
#define GEMM_VL 16
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T
#define GEMM_T double
#define GEMM_SFX f64_avx512
#define GEMM_MR 6
#define GEMM_NR 32
#define GEMM_VL 8
#include "interp/matmul_kernel.h"
#undef GEMM_SFX
#undef GEMM_MR
#undef GEMM_NR
#undef GEMM_VL
#undef GEMM_T
#pragma GCC pop_options
#endif

typedef void (*sgemm_fn)(int64_t, int64_t, int64_t, const float *, int64_t, const float *,
                         int64_t, float *, int64_t, float *, float *);
typedef void (*dgemm_fn)(int64_t, int64_t, int64_t, const double *, int64_t, const double *,
                         int64_t, double *, int64_t, double *, double *);

/* The widest ISA this CPU runs: 2 AVX-512, 1 AVX2+FMA, 0 baseline, capped
 * by TDSL_GEMM_ISA=generic|avx2 (so tests can reach every variant).
 * Decided once; threads that ask first at the same time all find the same
 * answer (atomic, so that is no data race). */
static int gemm_isa(void) {
  static _Atomic int isa = -1;
  int known = atomic_load_explicit(&isa, memory_order_relaxed);
  if (known >= 0) return known;
  int v = 0;
#ifdef TD_GEMM_MULTI_ISA
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) v = 2;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) v = 1;
  const char *cap = getenv("TDSL_GEMM_ISA");
  if (cap && strcmp(cap, "generic") == 0) v = 0;
  else if (cap && strcmp(cap, "avx2") == 0 && v > 1) v = 1;
#endif
  atomic_store_explicit(&isa, v, memory_order_relaxed);
  return v;
}

static sgemm_fn sgemm_pick(void) {
#ifdef TD_GEMM_MULTI_ISA
  static const sgemm_fn f[3] = {gemm_f32_generic, gemm_f32_avx2, gemm_f32_avx512};
  return f[gemm_isa()];
#else
  return gemm_f32_generic;
#endif
}

static dgemm_fn dgemm_pick(void) {
#ifdef TD_GEMM_MULTI_ISA
  static const dgemm_fn f[3] = {gemm_f64_generic, gemm_f64_avx2, gemm_f64_avx512};
  return f[gemm_isa()];
#else
  return gemm_f64_generic;
#endif
}

/* ---- simple kernels: blocked i-k-j ------------------------------------- */

#define MM_JB 512
#define MM_KB 128

/* C[M x N] += A * B for one type; OP_MULADD(c, a, b) gives c + a * b. */
#define MM_SIMPLE(NAME, T, MULADD)                                               \
  static void NAME(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,    \
                   const T *b, int64_t ldb, T *c, int64_t ldc) {                \
    for (int64_t jb = 0; jb < n; jb += MM_JB) {                                  \
      int64_t je = n - jb < MM_JB ? n : jb + MM_JB;                              \
      for (int64_t kb = 0; kb < k; kb += MM_KB) {                                \
        int64_t ke = k - kb < MM_KB ? k : kb + MM_KB;                            \
        for (int64_t i = 0; i < m; i++) {                                        \
          T *restrict cr = c + i * ldc;                                          \
          for (int64_t p = kb; p < ke; p++) {                                    \
            T av = a[i * lda + p];                                               \
            const T *restrict br = b + p * ldb;                                  \
            for (int64_t j = jb; j < je; j++) cr[j] = MULADD(cr[j], av, br[j]);  \
          }                                                                      \
        }                                                                        \
      }                                                                          \
    }                                                                            \
  }
#define FMA_PLAIN(c, a, b) ((c) + (a) * (b))
#define FMA_U32(c, a, b) ((int32_t)((uint32_t)(c) + (uint32_t)(a) * (uint32_t)(b)))
#define FMA_U64(c, a, b) ((int64_t)((uint64_t)(c) + (uint64_t)(a) * (uint64_t)(b)))
MM_SIMPLE(mm_f32, float, FMA_PLAIN)
MM_SIMPLE(mm_f64, double, FMA_PLAIN)
MM_SIMPLE(mm_i32, int32_t, FMA_U32)
MM_SIMPLE(mm_i64, int64_t, FMA_U64)

/* ---- the batched driver ------------------------------------------------ */

/* One matmul call: sizes, the path, and one packing workspace per thread. */
typedef struct mm_ctx {
  td_dtype dt;
  int64_t m, n, k;
  int packed;            /* f32/f64 through the packed GEMM */
  size_t ws_each;        /* bytes of one thread's workspace (packed only) */
  void *ws;              /* threads * ws_each bytes, 64-byte aligned slices */
  /* the tasks: every batch item's rows split into `parts` ranges */
  const char *a, *b;
  char *c;
  const int64_t *oa, *ob, *oc;   /* element offsets per batch item */
  int64_t parts, rows;           /* ranges per item, rows per range */
} mm_ctx;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Decides the path; the workspace is allocated by mm_split. */
static void mm_ctx_init(mm_ctx *c) {
  c->ws = NULL;
  c->ws_each = 0;
  c->packed = (c->dt == TD_F32 || c->dt == TD_F64) && c->m >= 6 && c->m * c->n * c->k >= 32768;
  if (!c->packed) return;
  int64_t kc = c->k < GEMM_KC ? c->k : GEMM_KC;
  int64_t na = (round_up(c->m < GEMM_MC ? c->m : GEMM_MC, 64) + 64) * kc;
  int64_t nb = round_up(c->n < GEMM_NC ? c->n : GEMM_NC, 64) * kc;
  c->ws_each = (size_t)round_up((na + nb) * (int64_t)td_dtype_size(c->dt) + 128, 64);
}

/* Rows [r0, r1) of one [M, K] @ [K, N] product into c (already zero),
 * packing into workspace slice w. */
static void mm_rows(const mm_ctx *x, const char *a, const char *b, char *c, int64_t r0, int64_t r1, char *w) {
  int64_t m = r1 - r0, n = x->n, k = x->k;
  size_t es = td_dtype_size(x->dt);
  a += (size_t)(r0 * k) * es;
  c += (size_t)(r0 * n) * es;
  void *abuf = NULL, *bbuf = NULL;
  if (x->packed) {
    int64_t kc = k < GEMM_KC ? k : GEMM_KC;
    int64_t na = (round_up(x->m < GEMM_MC ? x->m : GEMM_MC, 64) + 64) * kc;
    abuf = w;
    bbuf = w + round_up(na * (int64_t)es, 64);
  }
  switch (x->dt) {
  case TD_F32:
    if (x->packed) sgemm_pick()(m, n, k, (const float *)a, k, (const float *)b, n, (float *)c, n, abuf, bbuf);
    else mm_f32(m, n, k, (const float *)a, k, (const float *)b, n, (float *)c, n);
    break;
  case TD_F64:
    if (x->packed) dgemm_pick()(m, n, k, (const double *)a, k, (const double *)b, n, (double *)c, n, abuf, bbuf);
    else mm_f64(m, n, k, (const double *)a, k, (const double *)b, n, (double *)c, n);
    break;
  case TD_I32: mm_i32(m, n, k, (const int32_t *)a, k, (const int32_t *)b, n, (int32_t *)c, n); break;
  default: mm_i64(m, n, k, (const int64_t *)a, k, (const int64_t *)b, n, (int64_t *)c, n); break;
  }
}

/* Pool task t: range t % parts of batch item t / parts. */
static void mm_task(void *ctx, int64_t t, int tid) {
  const mm_ctx *x = ctx;
  int64_t item = t / x->parts, r0 = t % x->parts * x->rows;
  int64_t r1 = r0 + x->rows < x->m ? r0 + x->rows : x->m;
  size_t es = td_dtype_size(x->dt);
  char *w = x->ws ? (char *)(((uintptr_t)x->ws + 63) & ~(uintptr_t)63) + x->ws_each * (size_t)tid : NULL;
  if (r0 < r1)
    mm_rows(x, x->a + (size_t)x->oa[item] * es, x->b + (size_t)x->ob[item] * es, x->c + (size_t)x->oc[item] * es,
            r0, r1, w);
}

/* Multiply-adds below which a product stays on the calling thread: waking
 * a parked worker costs microseconds. */
#define MM_PAR_WORK ((int64_t)1 << 21)

/* Chooses how the items' rows are split over the pool's threads and
 * allocates one workspace per thread that can run a task.  Returns the
 * number of threads used. */
static int mm_split(mm_ctx *x, int64_t items, td_err *err) {
  int threads = 1;
  int64_t work = x->m * x->n * x->k;
  if (work > 0 && items <= INT64_MAX / work && work * items >= MM_PAR_WORK) threads = td_pool_threads();
  x->parts = 1;
  if (threads > 1 && items < threads) {
    /* split the rows, in multiples of 8 (the micro-kernels' MR divides it) */
    int64_t want = (threads + items - 1) / items, per = round_up((x->m + want - 1) / want, 8);
    x->parts = (x->m + per - 1) / per;
    x->rows = per;
  } else {
    x->rows = x->m;
  }
  if (x->packed) {   /* a slice for every tid the pool may hand out */
    x->ws = td_malloc(x->ws_each * (size_t)threads + 64);
    if (!x->ws) return td_err_set(err, "out of memory (matmul workspace)");
  }
  return x->parts * items < threads ? (int)(x->parts * items) : threads;
}

/* Element stride of each out batch axis in t (0 where t broadcasts). */
static void batch_strides(const td_tensor *t, const td_tensor *out, int64_t *st) {
  int nb = out->rank - 2, tb = t->rank - 2, off = nb - tb;
  int64_t s = t->shape[t->rank - 2] * t->shape[t->rank - 1];
  for (int k = nb - 1; k >= 0; k--) {
    int j = k - off;
    if (j < 0) {
      st[k] = 0;
      continue;
    }
    st[k] = t->shape[j] == 1 ? 0 : s;
    s *= t->shape[j];
  }
}

/* Checks ranks, dtypes, the contracted size and the batch broadcast. */
static int mm_check(const td_tensor *a, const td_tensor *b, const td_tensor *out,
                    td_err *err) {
  char sa[128], sb[128], so[128];
  int ok = a->rank >= 2 && b->rank >= 2 && out->rank >= 2 && a->rank <= out->rank &&
           b->rank <= out->rank && a->dtype == out->dtype && b->dtype == out->dtype &&
           a->shape[a->rank - 1] == b->shape[b->rank - 2] &&
           out->shape[out->rank - 2] == a->shape[a->rank - 2] &&
           out->shape[out->rank - 1] == b->shape[b->rank - 1];
  for (int k = 0; ok && k < out->rank - 2; k++) {
    int ja = k - (out->rank - a->rank), jb = k - (out->rank - b->rank);
    if (ja >= 0 && a->shape[ja] != 1 && a->shape[ja] != out->shape[k]) ok = 0;
    if (jb >= 0 && b->shape[jb] != 1 && b->shape[jb] != out->shape[k]) ok = 0;
  }
  if (!ok)
    return td_err_set(err, "matmul: %s @ %s cannot give %s",
                      td_shape_str(a->dtype, a->rank, a->shape, sa, sizeof sa),
                      td_shape_str(b->dtype, b->rank, b->shape, sb, sizeof sb),
                      td_shape_str(out->dtype, out->rank, out->shape, so, sizeof so));
  if (out->dtype == TD_BOOL) return td_err_set(err, "matmul is not defined for bool");
  return 0;
}

int tdk_matmul(const td_tensor *a, const td_tensor *b, td_tensor *out, td_err *err) {
  if (mm_check(a, b, out, err) < 0) return -1;
  size_t es = td_dtype_size(out->dtype);
  if (out->numel == 0) return 0;
  memset(out->data, 0, (size_t)out->numel * es);
  mm_ctx x = {.dt = out->dtype,
              .m = out->shape[out->rank - 2],
              .n = out->shape[out->rank - 1],
              .k = a->shape[a->rank - 1]};
  if (x.k == 0) return 0;
  mm_ctx_init(&x);
  int nb = out->rank - 2;
  int64_t items = 1;
  for (int k = 0; k < nb; k++) items *= out->shape[k];
  int64_t *offs = td_malloc((size_t)items * 3 * sizeof *offs);
  if (!offs) return td_err_set(err, "out of memory (matmul)");
  int64_t sa[TD_MAX_RANK], sb[TD_MAX_RANK], idx[TD_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0, oc = 0, mn = x.m * x.n;
  batch_strides(a, out, sa);
  batch_strides(b, out, sb);
  for (int64_t it = 0; it < items; it++) {
    offs[it] = oa;
    offs[items + it] = ob;
    offs[2 * items + it] = oc;
    oc += mn;
    for (int k = nb - 1; k >= 0; k--) {
      oa += sa[k];
      ob += sb[k];
      if (++idx[k] < out->shape[k]) break;
      oa -= sa[k] * out->shape[k];
      ob -= sb[k] * out->shape[k];
      idx[k] = 0;
    }
  }
  x.a = a->data;
  x.b = b->data;
  x.c = out->data;
  x.oa = offs;
  x.ob = offs + items;
  x.oc = offs + 2 * items;
  int threads = mm_split(&x, items, err);
  if (threads < 0) {
    td_free(offs);
    return -1;
  }
  if (threads == 1)
    for (int64_t t = 0; t < items * x.parts; t++) mm_task(&x, t, 0);
  else
    td_pool_run(mm_task, &x, items * x.parts);
  td_free(x.ws);
  td_free(offs);
  return 0;
}

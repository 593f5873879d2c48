/* floors.c - the machine's limits and hand-written C floors, for bench/run.
 *
 * The same measurements as ../shared/peers/w0_limits.c, w1_linear.c,
 * w2_gelu.c and w5_norm.c (their method, this project's code), sized so
 * that `bench/run --quick` stays short:
 *
 *   limits  copy bandwidth (STREAM convention: bytes read + bytes written,
 *           write-allocate not counted), the same copy with non-temporal
 *           stores, FP32 FMA peak (16 independent chains of the widest
 *           vector the compiler targets), the effective clock (a chain of
 *           dependent adds, x86 only), and the cost of touching fresh
 *           memory (mmap + touch + munmap of 64 MiB, 4 KiB pages vs THP),
 *           and the read bandwidth for W4's 2.69 MB of weights, which
 *           live in L3 (the bound of the batch-1 MLP).
 *   w1      the seed models as C functions (one call = one forward).
 *   w2      y = gelu_tanh(x * w + b) over 16M floats as ONE loop, exp by a
 *           range-reduced polynomial (auto-vectorised, no -ffast-math).
 *   w5      row softmax / layer_norm over [4096, 4096] in one pass over
 *           memory, with 16-lane vector accumulators.
 *
 * build: gcc -O3 -march=native -fopenmp -ffp-contract=fast floors.c -lm
 * run:   floors THREADS [--quick] [limits] [w1] [w2] [w5]
 * Output: one JSON object per line.  Every floor checks its own result
 * against float64 and reports the relative error.
 */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

static int quick, threads = 1;
static volatile float sink;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and prints one result line; amount/unit give a rate (per
 * median time) when amount > 0; relerr < 0 means "not checked". */
static void report(const char *part, const char *name, double *t, int n, double amount, const char *unit,
                   double relerr) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  printf("{\"part\": \"%s\", \"name\": \"%s\", \"threads\": %d, \"median_s\": %.9g, \"min_s\": %.9g, "
         "\"max_s\": %.9g, \"runs\": %d",
         part, name, threads, med, t[0], t[n - 1], n);
  if (amount > 0) printf(", \"rate\": %.6g, \"rate_best\": %.6g, \"unit\": \"%s\"", amount / med, amount / t[0], unit);
  if (relerr >= 0) printf(", \"relerr\": %.3g", relerr);
  printf("}\n");
  fflush(stdout);
}

static float *big_alloc(size_t n) {
  float *p = aligned_alloc(2u << 20, (n * sizeof(float) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1));
  if (!p) {
    fprintf(stderr, "floors: out of memory\n");
    exit(1);
  }
  madvise(p, n * sizeof(float), MADV_HUGEPAGE);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) p[i] = 1.0f;
  return p;
}

/* ---- limits ---------------------------------------------------------------- */

static void copy_plain(float *restrict a, const float *restrict b, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) a[i] = b[i];
}

/* Copy with non-temporal stores where the ISA has them (else plain). */
static void copy_nt(float *restrict a, const float *restrict b, long n) {
#if defined(__AVX512F__)
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i += 16) _mm512_stream_ps(a + i, _mm512_load_ps(b + i));
  _mm_sfence();
#elif defined(__AVX__)
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i += 8) _mm256_stream_ps(a + i, _mm256_load_ps(b + i));
  _mm_sfence();
#else
  copy_plain(a, b, n);
#endif
}

static void limits_bandwidth(void) {
  const long n = quick ? (32L << 20) : (64L << 20); /* floats per array */
  const int reps = quick ? 8 : 20;
  float *a = big_alloc((size_t)n), *b = big_alloc((size_t)n);
  double t[64];
  for (int k = 0; k < 2; k++) {
    for (int r = -2; r < reps; r++) {
      double t0 = now_s();
      if (k == 0) copy_plain(a, b, n);
      else copy_nt(a, b, n);
      if (r >= 0) t[r] = now_s() - t0;
    }
    report("limits", k ? "copy_nt" : "copy", t, reps, 2.0 * (double)n * 4 / 1e9, "GB/s", -1);
  }
  free(a);
  free(b);
}

/* Reading W4's weights again and again: 2.69 MB of f32 (784x512 + 512x512
 * + 512x10 and the biases), more than one core's L2 here (1 MB per core
 * on Zen 4 and Zen 5), so a batch-1 MLP call streams them from L3.  Each
 * thread sums its contiguous share with 4 vector accumulators per pass;
 * one barrier per pass (one MLP call has three).  Rate: bytes read per
 * second. */
static void limits_weights_read(void) {
  const long n = ((784L * 512 + 512 * 512 + 512 * 10 + 512 + 512 + 10) + 63) & ~63L;
  const int passes = quick ? 2000 : 10000, reps = quick ? 5 : 15;
  float *w = aligned_alloc(64, (size_t)n * sizeof *w);
  if (!w) return;
  for (long i = 0; i < n; i++) w[i] = 1e-3f * (float)(i % 1000);
  double t[64], total = 0;
  for (int r = -1; r < reps; r++) {
    double t0 = now_s();
#pragma omp parallel reduction(+ : total)
    {
      int id = omp_get_thread_num(), nt = omp_get_num_threads();
      long share = (n / nt) & ~63L, lo = id * share, hi = id == nt - 1 ? n : lo + share;
      v16 acc[4] = {{0}, {0}, {0}, {0}};
      for (int p = 0; p < passes; p++) {
        for (long i = lo; i < hi; i += 64)
          for (int k = 0; k < 4; k++) {
            v16 x;
            memcpy(&x, w + i + 16 * k, sizeof x);
            acc[k] += x;
          }
#pragma omp barrier
      }
      for (int l = 0; l < 16; l++) total += acc[0][l] + acc[1][l] + acc[2][l] + acc[3][l];
    }
    if (r >= 0) t[r] = (now_s() - t0) / passes;
  }
  sink = (float)total;
  report("limits", "weights_read", t, reps, (double)n * 4 / 1e9, "GB/s", -1);
  free(w);
}

/* 16 independent FMA chains of 16 lanes each; returns a sum so nothing is dead. */
static float fma_kernel(long iters) {
  v16 acc[16];
  for (int i = 0; i < 16; i++) acc[i] = (v16){0} + (1.0f + (float)i * 1e-3f);
  const v16 m = (v16){0} + 0.999999f, ad = (v16){0} + 1e-7f;
  for (long it = 0; it < iters; it++) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) acc[i] = acc[i] * m + ad;
  }
  v16 s = acc[0];
  for (int i = 1; i < 16; i++) s += acc[i];
  float r = 0;
  for (int l = 0; l < 16; l++) r += s[l];
  return r;
}

static void limits_fma(void) {
  const long iters = quick ? 1000000L : 5000000L;
  const int reps = quick ? 5 : 20;
  double t[64];
  for (int r = -1; r < reps; r++) {
    float tot = 0;
    double t0 = now_s();
#pragma omp parallel reduction(+ : tot)
    tot += fma_kernel(iters);
    if (r >= 0) t[r] = now_s() - t0;
    sink = tot;
  }
  report("limits", "fma_peak", t, reps, (double)threads * iters * 16 * 16 * 2 / 1e9, "GFLOP/s", -1);
}

static void limits_clock(void) {
#if defined(__x86_64__)
  const long n = quick ? 10000000L : 50000000L;
  const int reps = quick ? 5 : 20;
  double t[64];
  for (int r = -1; r < reps; r++) {
    unsigned long x = (unsigned long)r;
    double t0 = now_s();
    for (long i = 0; i < n; i++)
      __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                       "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                       : "+r"(x));
    if (r >= 0) t[r] = now_s() - t0;
    sink = (float)x;
  }
  report("limits", "clock", t, reps, 8.0 * (double)n / 1e9, "GHz", -1);
#endif
}

static void limits_fault(void) {
  const size_t sz = 64UL << 20;
  const int reps = quick ? 5 : 20;
  for (int huge = 0; huge < 2; huge++) {
    double t[64];
    for (int r = -1; r < reps; r++) {
      double t0 = now_s();
      char *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return;
      if (huge) madvise(p, sz, MADV_HUGEPAGE);
      for (size_t i = 0; i < sz; i += 4096) p[i] = 1;
      munmap(p, sz);
      if (r >= 0) t[r] = now_s() - t0;
    }
    report("limits", huge ? "fault64M_thp" : "fault64M_4k", t, reps, 0, "", -1);
  }
}

/* ---- W1: the seed models as C ----------------------------------------------- */

static float X[16 * 32] __attribute__((aligned(64))), W16t[16 * 16] __attribute__((aligned(64)));
static float W4[2 * 4], B16[16] __attribute__((aligned(64))), W1v[16], Y[16 * 32] __attribute__((aligned(64)));
static uint32_t rng_state = 2463534242u;

/* relu(x[1,4] @ W[2,4]^T + b) */
__attribute__((noinline)) static void c_simple(void) {
  for (int o = 0; o < 2; o++) {
    float s = B16[o];
    for (int i = 0; i < 4; i++) s += X[i] * W4[o * 4 + i];
    Y[o] = s > 0 ? s : 0;
  }
}

/* rows x[n,16] @ W^T + b + d, W pre-transposed, one 16-lane accumulator per row */
static inline void lin16(int rows, float d) {
  v16 bb, w[16];
  memcpy(&bb, B16, 64);
  memcpy(w, W16t, sizeof w);
  bb += d;
  for (int n = 0; n < rows; n++) {
    v16 acc = bb;
    for (int i = 0; i < 16; i++) acc += X[n * 16 + i] * w[i];
    memcpy(Y + n * 16, &acc, 64);
  }
}

__attribute__((noinline)) static void c_goodwhere(void) {
  uint32_t s = rng_state;
  s ^= s << 13, s ^= s >> 17, s ^= s << 5;
  rng_state = s;
  lin16(4, (float)(s >> 8) * (1.0f / 16777216.0f) > 0.5f ? 1.0f : -1.0f);
}

/* y[8,1] = x @ w + b, and mean(y) */
__attribute__((noinline)) static void c_ret_log(void) {
  float m = 0;
  for (int n = 0; n < 8; n++) {
    float s = B16[0];
    for (int i = 0; i < 16; i++) s += X[n * 16 + i] * W1v[i];
    Y[n] = s;
    m += s;
  }
  Y[8] = m / 8;
}

__attribute__((noinline)) static void c_goodvec(void) {
  for (int i = 0; i < 32 * 16; i++) Y[i] = X[i] + 10.0f;
}

__attribute__((noinline)) static void c_dyn8(void) { lin16(8, 0); }
__attribute__((noinline)) static void c_dyn16(void) { lin16(16, 0); }

static void w1_one(const char *name, void (*f)(void)) {
  const long calls = quick ? 200000 : 1000000;
  const int reps = quick ? 7 : 25;
  double t[64];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s();
    for (long i = 0; i < calls; i++) {
      f();
      __asm__ volatile("" ::"r"(Y) : "memory");
    }
    if (r >= 0) t[r] = (now_s() - t0) / (double)calls;
  }
  report("w1", name, t, reps, 0, "", -1);
}

static void run_w1(void) {
  for (int i = 0; i < 16 * 32; i++) X[i] = (float)(i % 7) * 0.1f;
  for (int i = 0; i < 256; i++) W16t[i] = (float)((i * 3) % 5) * 0.05f;
  for (int i = 0; i < 16; i++) B16[i] = (float)i * 0.01f, W1v[i] = (float)(i % 3) * 0.1f;
  for (int i = 0; i < 8; i++) W4[i] = (float)i * 0.1f - 0.3f;
  w1_one("Simple[1,4]", c_simple);
  w1_one("GoodWhere[4,16]", c_goodwhere);
  w1_one("ReturnTensorForLog[8,16]", c_ret_log);
  w1_one("GoodVectorized[32,16]", c_goodvec);
  w1_one("GoodDynamic[8,16]", c_dyn8);
  w1_one("GoodDynamic[16,16]", c_dyn16);
}

/* ---- W2: gelu_tanh(x * w + b), one loop ---------------------------------- */

/* exp(t): t = n ln2 + r, |r| <= ln2 / 2, degree-6 polynomial, 2^n by bits. */
static inline float exp_poly(float t) {
  t = t < -87.0f ? -87.0f : t;
  t = t > 88.0f ? 88.0f : t;
  float n = __builtin_rintf(t * 1.4426950408889634f);
  float r = t - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t e = ((int32_t)n + 127) << 23;
  float s;
  memcpy(&s, &e, 4);
  return p * s;
}

/* 0.5 z (1 + tanh(u)) == z / (1 + exp(-2u)) */
static inline float gelu_poly(float z) {
  float u = 0.7978845608028654f * (z + 0.044715f * z * z * z);
  return z / (1.0f + exp_poly(-2.0f * u));
}

static void gelu_scalar(const float *restrict x, float *restrict y, long n, float w, float b) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) y[i] = gelu_poly(x[i] * w + b);
}

static void gelu_arrays(const float *restrict x, const float *restrict w, const float *restrict b,
                        float *restrict y, long n) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) y[i] = gelu_poly(x[i] * w[i] + b[i]);
}

static double gelu_err(const float *x, const float *w, const float *b, const float *y, long n, int arrays) {
  double m = 0;
  for (long i = 0; i < n; i += 97) {
    double z = arrays ? (double)x[i] * w[i] + b[i] : (double)x[i] * 1.25 + 0.1;
    double r = 0.5 * z * (1 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
    double e = fabs(r - y[i]) / (fabs(r) > 1 ? fabs(r) : 1);
    m = e > m ? e : m;
  }
  return m;
}

static void run_w2(void) {
  const long n = 16L << 20;
  const int reps = quick ? 7 : 25;
  float *x = big_alloc((size_t)n), *w = big_alloc((size_t)n), *b = big_alloc((size_t)n), *y = big_alloc((size_t)n);
  uint32_t s = 12345;
  for (long i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u, x[i] = (float)(s >> 8) / 16777216.0f * 8.0f - 4.0f;
    s = s * 1664525u + 1013904223u, w[i] = 0.5f + (float)(s >> 8) / 16777216.0f;
    s = s * 1664525u + 1013904223u, b[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
  }
  for (int arrays = 0; arrays < 2; arrays++) {
    double t[64];
    for (int r = -2; r < reps; r++) {
      double t0 = now_s();
      if (arrays) gelu_arrays(x, w, b, y, n);
      else gelu_scalar(x, y, n, 1.25f, 0.1f);
      if (r >= 0) t[r] = now_s() - t0;
    }
    report("w2", arrays ? "array w,b" : "scalar w,b", t, reps, (arrays ? 4.0 : 2.0) * (double)n * 4 / 1e9, "GB/s",
           gelu_err(x, w, b, y, n, arrays));
  }
  free(x), free(w), free(b), free(y);
}

/* ---- W5: row softmax / layer_norm ------------------------------------------- */

enum { RM = 4096, RN = 4096 };

static inline v16 vmax(v16 a, v16 b) {
  v16i k = a > b;
  return (v16)((k & (v16i)a) | (~k & (v16i)b));
}
static inline v16 ld(const float *p) {
  v16 v;
  memcpy(&v, p, 64);
  return v;
}
static inline float hsum(v16 v) {
  float s = 0;
  for (int l = 0; l < 16; l++) s += v[l];
  return s;
}

static void softmax_rows(const float *restrict x, float *restrict y) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < RM; i++) {
    const float *xr = x + (long)i * RN;
    float *yr = y + (long)i * RN;
    v16 mx = ld(xr);
    for (int j = 16; j < RN; j += 16) mx = vmax(ld(xr + j), mx);
    float m = mx[0];
    for (int l = 1; l < 16; l++) m = mx[l] > m ? mx[l] : m;
    v16 acc = {0};
    for (int j = 0; j < RN; j += 16) {
      v16 e;
      for (int l = 0; l < 16; l++) e[l] = exp_poly(xr[j + l] - m);
      memcpy(yr + j, &e, 64);
      acc += e;
    }
    float inv = 1.0f / hsum(acc);
    for (int j = 0; j < RN; j++) yr[j] *= inv;
  }
}

static void layernorm_rows(const float *restrict x, const float *restrict g, const float *restrict b,
                           float *restrict y) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < RM; i++) {
    const float *xr = x + (long)i * RN;
    float *yr = y + (long)i * RN;
    v16 acc = {0};
    for (int j = 0; j < RN; j += 16) acc += ld(xr + j);
    float mean = hsum(acc) / RN;
    v16 sq = {0};
    for (int j = 0; j < RN; j += 16) {
      v16 d = ld(xr + j) - mean;
      sq += d * d;
    }
    float rstd = 1.0f / sqrtf(hsum(sq) / RN + 1e-5f);
    for (int j = 0; j < RN; j++) yr[j] = (xr[j] - mean) * rstd * g[j] + b[j];
  }
}

static double norm_err(const float *x, const float *g, const float *b, const float *y, int ln) {
  double maxe = 0;
  for (int i = 0; i < RM; i += 511) {
    const float *xr = x + (long)i * RN;
    double m = -1e30, sum = 0, mean = 0, var = 0;
    for (int j = 0; j < RN; j++) m = xr[j] > m ? xr[j] : m, mean += xr[j];
    mean /= RN;
    for (int j = 0; j < RN; j++) sum += exp(xr[j] - m), var += (xr[j] - mean) * (xr[j] - mean);
    var /= RN;
    for (int j = 0; j < RN; j++) {
      double r = ln ? (xr[j] - mean) / sqrt(var + 1e-5) * g[j] + b[j] : exp(xr[j] - m) / sum;
      double fl = ln ? 1.0 : 1e-3, e = fabs(r - y[(long)i * RN + j]) / (fabs(r) > fl ? fabs(r) : fl);
      maxe = e > maxe ? e : maxe;
    }
  }
  return maxe;
}

static void run_w5(void) {
  const int reps = quick ? 7 : 25;
  float *x = big_alloc((size_t)RM * RN), *y = big_alloc((size_t)RM * RN);
  float *g = big_alloc(RN), *b = big_alloc(RN);
  uint32_t s = 777;
  for (long i = 0; i < (long)RM * RN; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 12.0f;
  }
  for (int j = 0; j < RN; j++) g[j] = 0.5f + (float)(j % 97) / 97.0f, b[j] = (float)(j % 31) / 31.0f - 0.5f;
  for (int ln = 0; ln < 2; ln++) {
    double t[64];
    for (int r = -2; r < reps; r++) {
      double t0 = now_s();
      if (ln) layernorm_rows(x, g, b, y);
      else softmax_rows(x, y);
      if (r >= 0) t[r] = now_s() - t0;
    }
    report("w5", ln ? "layernorm" : "softmax", t, reps, 2.0 * RM * RN * 4 / 1e9, "GB/s", norm_err(x, g, b, y, ln));
  }
  free(x), free(y), free(g), free(b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: floors THREADS [--quick] [limits] [w1] [w2] [w5]\n");
    return 2;
  }
  threads = atoi(argv[1]);
  if (threads < 1) threads = 1;
  omp_set_num_threads(threads);
  int any = 0, want[4] = {0};
  const char *parts[4] = {"limits", "w1", "w2", "w5"};
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = 1;
    for (int k = 0; k < 4; k++)
      if (!strcmp(argv[i], parts[k])) want[k] = 1, any = 1;
  }
  if (!any) want[0] = want[1] = want[2] = want[3] = 1;
  if (want[0]) {
    limits_bandwidth();
    limits_fma();
    limits_weights_read();
    if (threads == 1) limits_clock(), limits_fault();
  }
  if (want[1] && threads == 1) run_w1();
  if (want[2]) run_w2();
  if (want[3]) run_w5();
  return 0;
}

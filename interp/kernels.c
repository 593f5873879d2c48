/* kernels.c - the interpreter's kernels (everything except matmul).
 *
 * Elementwise ops run through one strided iterator (ew_run): the output is
 * contiguous, each input has an element stride per output axis (0 where it
 * broadcasts), adjacent axes that are contiguous for every operand are
 * merged, and the innermost merged axis is handed to a typed row kernel.
 * So same-shape operands become one call over the whole tensor, a rank-0
 * operand is a stride-0 scalar, and [2,3,4]+[4] is 6 rows of 4.  Each row
 * kernel has separate loops for stride patterns (1,1), (1,0), (0,1) that
 * GCC vectorises; a switch on (op, dtype) picks the kernel once per node.
 *
 * Reductions merge runs of adjacent reduced / kept axes and walk the input
 * in memory order: when the innermost run is reduced each row collapses to
 * one value (float sums in 16 double lanes, the order compiled row kernels
 * use too, so the two agree bit for bit), otherwise a row is combined
 * elementwise into the output row, in memory order.  f32 and f64
 * sums and products accumulate in double, integer ones in 64-bit integers
 * with wrap-around; max/min propagate NaN; argmax/argmin return the first
 * extreme index and treat NaN as the extreme (NumPy's rule).
 *
 * Integer arithmetic wraps (computed in unsigned types); float -> int casts
 * truncate toward zero, saturate out of range and send NaN to 0.
 *
 * f16/bf16 (uint16_t bits, runtime/half.h) have kernels only for CAST, the
 * movement ops and creation; the interpreter runs every other op on them
 * in f32 (interp.c converts the operands and rounds the result once).
 * Casts into a half type round once: from f32 directly, from f64 and the
 * integer types through td_f64_to_f16/bf16.
 */
#include "interp/kernels.h"

#include <math.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/half.h"
#include "runtime/philox.h"
#include "runtime/scalar.h"

/* GCC 12 at -O2 vectorises only loops without an epilogue; the kernels
 * below are written to be vectorised, so ask for the full cost model. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif

/* ---- the strided iterator ---------------------------------------------- */

/* A row kernel: n output elements at o (contiguous); input j starts at
 * in[j] and advances st[j] elements per output element. */
typedef void (*ew_fn)(int64_t n, void *o, const void *const *in, const int64_t *st);

#define EW_MAX_OPS 4

typedef struct ew_operand {
  char *p;                  /* element 0 */
  size_t es;                /* element size in bytes */
  int64_t st[TD_MAX_RANK];  /* element stride per output axis */
} ew_operand;

/* Contiguous C-order strides of a shape. */
static void contig_strides(int rank, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= shape[k];
  }
}

/* Merges size-1 axes away and adjacent axes contiguous for every operand.
 * Returns the new rank; dim and st receive the merged axes. */
static int ew_coalesce(int rank, const int64_t *shape, int nops, const ew_operand *ops,
                       int64_t *dim, int64_t st[][TD_MAX_RANK]) {
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (shape[k] == 1) continue;
    int merge = r > 0;
    for (int o = 0; o < nops && merge; o++)
      merge = st[o][r - 1] == ops[o].st[k] * shape[k];
    if (merge) {
      dim[r - 1] *= shape[k];
      for (int o = 0; o < nops; o++) st[o][r - 1] = ops[o].st[k];
    } else {
      dim[r] = shape[k];
      for (int o = 0; o < nops; o++) st[o][r] = ops[o].st[k];
      r++;
    }
  }
  return r;
}

/* Calls fn once per innermost row of `shape`; ops[0] is the output. */
static void ew_run(ew_fn fn, int rank, const int64_t *shape, int nops, const ew_operand *ops) {
  int64_t dim[TD_MAX_RANK], st[EW_MAX_OPS][TD_MAX_RANK];
  int64_t off[EW_MAX_OPS] = {0}, ist[EW_MAX_OPS] = {0}, idx[TD_MAX_RANK] = {0};
  const void *ip[EW_MAX_OPS];
  for (int k = 0; k < rank; k++)
    if (shape[k] == 0) return;
  int r = ew_coalesce(rank, shape, nops, ops, dim, st);
  int64_t n = r ? dim[r - 1] : 1;
  for (int o = 1; o < nops; o++) ist[o - 1] = r ? st[o][r - 1] : 0;
  for (;;) {
    for (int o = 1; o < nops; o++) ip[o - 1] = ops[o].p + off[o] * (int64_t)ops[o].es;
    fn(n, ops[0].p + off[0] * (int64_t)ops[0].es, ip, ist);
    int k = r - 2;
    for (; k >= 0; k--) {
      for (int o = 0; o < nops; o++) off[o] += st[o][k];
      if (++idx[k] < dim[k]) break;
      for (int o = 0; o < nops; o++) off[o] -= st[o][k] * dim[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* Operand for tensor t read broadcast into an output of rank r / shape. */
static void ew_bcast_operand(const td_tensor *t, int r, const int64_t *shape, ew_operand *op) {
  int64_t cs[TD_MAX_RANK];
  contig_strides(t->rank, t->shape, cs);
  op->p = t->data;
  op->es = td_dtype_size(t->dtype);
  int off = r - t->rank;
  for (int k = 0; k < r; k++) {
    int j = k - off;
    op->st[k] = (j < 0 || (t->shape[j] == 1 && shape[k] != 1)) ? 0 : cs[j];
  }
}

static int can_broadcast(const td_tensor *t, const td_tensor *out) {
  if (t->rank > out->rank) return 0;
  int off = out->rank - t->rank;
  for (int j = 0; j < t->rank; j++)
    if (t->shape[j] != 1 && t->shape[j] != out->shape[j + off]) return 0;
  return 1;
}

/* ---- row kernels ---------------------------------------------------------- */

#define EW1(NAME, TI, TO, EXPR)                                                  \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    TO *restrict o = o_;                                                         \
    const TI *restrict A = in[0];                                                \
    int64_t sa = st[0];                                                          \
    if (sa == 1) {                                                               \
      for (int64_t i = 0; i < n; i++) {                                          \
        TI a = A[i];                                                             \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) {                                          \
        TI a = A[i * sa];                                                        \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    }                                                                            \
  }

#define EW2(NAME, T, TO, EXPR)                                                   \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    TO *restrict o = o_;                                                         \
    const T *restrict A = in[0], *restrict B = in[1];                            \
    int64_t sa = st[0], sb = st[1];                                              \
    if (sa == 1 && sb == 1) {                                                    \
      for (int64_t i = 0; i < n; i++) {                                          \
        T a = A[i], b = B[i];                                                    \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    } else if (sa == 1 && sb == 0) {                                             \
      T b = B[0];                                                                \
      for (int64_t i = 0; i < n; i++) {                                          \
        T a = A[i];                                                              \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    } else if (sa == 0 && sb == 1) {                                             \
      T a = A[0];                                                                \
      for (int64_t i = 0; i < n; i++) {                                          \
        T b = B[i];                                                              \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) {                                          \
        T a = A[i * sa], b = B[i * sb];                                          \
        o[i] = (TO)(EXPR);                                                       \
      }                                                                          \
    }                                                                            \
  }

/* WHERE works on element bits, so one kernel per element size. */
#define EW_WHERE(NAME, T)                                                        \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    T *restrict o = o_;                                                          \
    const uint8_t *restrict C = in[0];                                           \
    const T *restrict A = in[1], *restrict B = in[2];                            \
    int64_t sc = st[0], sa = st[1], sb = st[2];                                  \
    if (sc == 1 && sa == 1 && sb == 1) {                                         \
      for (int64_t i = 0; i < n; i++) o[i] = C[i] ? A[i] : B[i];                 \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) o[i] = C[i * sc] ? A[i * sa] : B[i * sb];  \
    }                                                                            \
  }

/* Plain copy with a stride (movement ops). */
#define EW_COPY(NAME, T)                                                         \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    T *restrict o = o_;                                                          \
    const T *restrict A = in[0];                                                 \
    int64_t s = st[0];                                                           \
    if (s == 1) {                                                                \
      memcpy(o, A, (size_t)n * sizeof(T));                                       \
    } else if (s == 0) {                                                         \
      T v = A[0];                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = v;                                  \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) o[i] = A[i * s];                           \
    }                                                                            \
  }

EW_WHERE(where_1, uint8_t)
EW_WHERE(where_2, uint16_t)
EW_WHERE(where_4, uint32_t)
EW_WHERE(where_8, uint64_t)
EW_COPY(copy_1, uint8_t)
EW_COPY(copy_2, uint16_t)
EW_COPY(copy_4, uint32_t)
EW_COPY(copy_8, uint64_t)

static ew_fn copy_fn(size_t es) {
  return es == 1 ? copy_1 : es == 2 ? copy_2 : es == 4 ? copy_4 : copy_8;
}

/* ---- op lists: X(OP, T, EXPR) ---- */

#define FLOAT_UNARY(X, T)                                                        \
  X(NEG, T, -a) X(ABS, T, td_abs(a)) X(EXP, T, td_exp(a)) X(LOG, T, td_log(a))   \
  X(SQRT, T, td_sqrt(a)) X(RSQRT, T, td_rsqrt(a)) X(SIN, T, td_sin(a))           \
  X(COS, T, td_cos(a)) X(TANH, T, td_tanh(a)) X(SIGMOID, T, td_sigmoid(a))       \
  X(RELU, T, td_relu(a)) X(GELU, T, td_gelu(a)) X(SILU, T, td_silu(a))           \
  X(ERF, T, td_erf(a)) X(FLOOR, T, td_floor(a)) X(CEIL, T, td_ceil(a))           \
  X(ROUND, T, td_round(a))

#define INT_UNARY(X, T, U)                                                       \
  X(NEG, T, (T)(0 - (U)a)) X(ABS, T, td_abs(a)) X(RELU, T, td_relu(a))           \
  X(FLOOR, T, a) X(CEIL, T, a) X(ROUND, T, a)

#define BOOL_UNARY(X, T) X(NOT, T, !a)

#define FLOAT_BINARY(X, T)                                                       \
  X(ADD, T, a + b) X(SUB, T, a - b) X(MUL, T, a * b) X(DIV, T, td_div(a, b))     \
  X(MOD, T, td_mod(a, b)) X(POW, T, td_pow(a, b)) X(MIN, T, td_min(a, b))        \
  X(MAX, T, td_max(a, b))

#define INT_BINARY(X, T, U)                                                      \
  X(ADD, T, (U)a + (U)b) X(SUB, T, (U)a - (U)b) X(MUL, T, (U)a * (U)b)           \
  X(DIV, T, td_div(a, b)) X(MOD, T, td_mod(a, b)) X(POW, T, td_pow(a, b))        \
  X(MIN, T, td_min(a, b)) X(MAX, T, td_max(a, b))

#define BOOL_BINARY(X, T)                                                        \
  X(AND, T, a && b) X(OR, T, a || b) X(MIN, T, a && b) X(MAX, T, a || b)

#define COMPARE(X, T)                                                            \
  X(LT, T, a < b) X(LE, T, a <= b) X(GT, T, a > b) X(GE, T, a >= b)              \
  X(EQ, T, a == b) X(NE, T, a != b)

#define DEF_UN(OP, T, EXPR) EW1(un_##OP##_##T, T, T, EXPR)
/* runtime/scalar.h's f32 transcendentals are written with fmaf: in a clone
 * for CPUs with FMA that is one instruction and the loops vectorise; the
 * default clone calls libm's fmaf, as exact (an FMA rounds once wherever it
 * runs), so eager results never depend on the CPU.  Not under
 * ThreadSanitizer: the clones' resolver (an ifunc, instrumented too) runs
 * while the program is relocated, before TSan is initialised, and crashes
 * it at start-up (tests/tsan/cuda_stress.c links the library built so). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define DEF_UN_F32(OP, T, EXPR) __attribute__((target_clones("arch=x86-64-v3", "default"))) DEF_UN(OP, T, EXPR)
#else
#define DEF_UN_F32(OP, T, EXPR) DEF_UN(OP, T, EXPR)
#endif
#define DEF_BIN(OP, T, EXPR) EW2(bin_##OP##_##T, T, T, EXPR)
#define DEF_CMP(OP, T, EXPR) EW2(cmp_##OP##_##T, T, uint8_t, EXPR)
#define CASE_UN(OP, T, EXPR) case TD_IR_##OP: return un_##OP##_##T;
#define CASE_BIN(OP, T, EXPR) case TD_IR_##OP: return bin_##OP##_##T;
#define CASE_CMP(OP, T, EXPR) case TD_IR_##OP: return cmp_##OP##_##T;

FLOAT_UNARY(DEF_UN_F32, float)
FLOAT_UNARY(DEF_UN, double)
INT_UNARY(DEF_UN, int32_t, uint32_t)
INT_UNARY(DEF_UN, int64_t, uint64_t)
BOOL_UNARY(DEF_UN, uint8_t)
FLOAT_BINARY(DEF_BIN, float)
FLOAT_BINARY(DEF_BIN, double)
INT_BINARY(DEF_BIN, int32_t, uint32_t)
INT_BINARY(DEF_BIN, int64_t, uint64_t)
BOOL_BINARY(DEF_BIN, uint8_t)
COMPARE(DEF_CMP, float)
COMPARE(DEF_CMP, double)
COMPARE(DEF_CMP, int32_t)
COMPARE(DEF_CMP, int64_t)
COMPARE(DEF_CMP, uint8_t)

static ew_fn pick_unary(td_op op, td_dtype dt) {
  switch (dt) {
  case TD_F32: switch (op) { FLOAT_UNARY(CASE_UN, float) default: return NULL; }
  case TD_F64: switch (op) { FLOAT_UNARY(CASE_UN, double) default: return NULL; }
  case TD_I32: switch (op) { INT_UNARY(CASE_UN, int32_t, uint32_t) default: return NULL; }
  case TD_I64: switch (op) { INT_UNARY(CASE_UN, int64_t, uint64_t) default: return NULL; }
  case TD_BOOL: switch (op) { BOOL_UNARY(CASE_UN, uint8_t) default: return NULL; }
  default: return NULL;
  }
}

static ew_fn pick_binary(td_op op, td_dtype dt) {
  switch (dt) {
  case TD_F32: switch (op) { FLOAT_BINARY(CASE_BIN, float) default: return NULL; }
  case TD_F64: switch (op) { FLOAT_BINARY(CASE_BIN, double) default: return NULL; }
  case TD_I32: switch (op) { INT_BINARY(CASE_BIN, int32_t, uint32_t) default: return NULL; }
  case TD_I64: switch (op) { INT_BINARY(CASE_BIN, int64_t, uint64_t) default: return NULL; }
  case TD_BOOL: switch (op) { BOOL_BINARY(CASE_BIN, uint8_t) default: return NULL; }
  default: return NULL;
  }
}

static ew_fn pick_compare(td_op op, td_dtype dt) {
  switch (dt) {
  case TD_F32: switch (op) { COMPARE(CASE_CMP, float) default: return NULL; }
  case TD_F64: switch (op) { COMPARE(CASE_CMP, double) default: return NULL; }
  case TD_I32: switch (op) { COMPARE(CASE_CMP, int32_t) default: return NULL; }
  case TD_I64: switch (op) { COMPARE(CASE_CMP, int64_t) default: return NULL; }
  case TD_BOOL: switch (op) { COMPARE(CASE_CMP, uint8_t) default: return NULL; }
  default: return NULL;
  }
}

/* ---- casts ---- */

/* Float -> int casts use td_f2i32 / td_f2i64 (truncate, saturate, NaN -> 0). */
#define DEF_CASTS(SI, TI, TO_I32, TO_I64, TO_F16, TO_BF16)                                        \
  EW1(cast_##SI##_bool, TI, uint8_t, a != 0)                                     \
  EW1(cast_##SI##_i32, TI, int32_t, TO_I32)                                      \
  EW1(cast_##SI##_i64, TI, int64_t, TO_I64)                                      \
  EW1(cast_##SI##_f32, TI, float, a)                                             \
  EW1(cast_##SI##_f64, TI, double, a)                                            \
  EW1(cast_##SI##_f16, TI, uint16_t, TO_F16)                                     \
  EW1(cast_##SI##_bf16, TI, uint16_t, TO_BF16)
DEF_CASTS(bool, uint8_t, a, a, td_f64_to_f16(a), td_f64_to_bf16(a))
DEF_CASTS(i32, int32_t, a, a, td_f64_to_f16(a), td_f64_to_bf16(a))
DEF_CASTS(i64, int64_t, a, a, td_f64_to_f16((double)a), td_f64_to_bf16((double)a))
DEF_CASTS(f32, float, td_f2i32(a), td_f2i64(a), td_f32_to_f16(a), td_f32_to_bf16(a))
DEF_CASTS(f64, double, td_f2i32(a), td_f2i64(a), td_f64_to_f16(a), td_f64_to_bf16(a))

/* From a half type: widen to f32 (exact), then as from f32. */
#define DEF_HALF_CASTS(SI, WIDEN)                                                \
  EW1(cast_##SI##_bool, uint16_t, uint8_t, WIDEN(a) != 0.0f)                     \
  EW1(cast_##SI##_i32, uint16_t, int32_t, td_f2i32(WIDEN(a)))                    \
  EW1(cast_##SI##_i64, uint16_t, int64_t, td_f2i64(WIDEN(a)))                    \
  EW1(cast_##SI##_f32, uint16_t, float, WIDEN(a))                                \
  EW1(cast_##SI##_f64, uint16_t, double, WIDEN(a))                               \
  EW1(cast_##SI##_f16, uint16_t, uint16_t, td_f32_to_f16(WIDEN(a)))              \
  EW1(cast_##SI##_bf16, uint16_t, uint16_t, td_f32_to_bf16(WIDEN(a)))
DEF_HALF_CASTS(f16, td_f16_to_f32)
DEF_HALF_CASTS(bf16, td_bf16_to_f32)

#define CAST_ROW(SI)                                                             \
  {cast_##SI##_bool, cast_##SI##_i32, cast_##SI##_i64, cast_##SI##_f32,          \
   cast_##SI##_f64,  cast_##SI##_f16, cast_##SI##_bf16}
static const ew_fn cast_tab[TD_DTYPE_COUNT][TD_DTYPE_COUNT] = {
    [TD_BOOL] = CAST_ROW(bool), [TD_I32] = CAST_ROW(i32), [TD_I64] = CAST_ROW(i64),
    [TD_F32] = CAST_ROW(f32),   [TD_F64] = CAST_ROW(f64), [TD_F16] = CAST_ROW(f16),
    [TD_BF16] = CAST_ROW(bf16),
};

/* ---- elementwise entry ---- */

/* Checks the arity and dtypes of an elementwise node: operands share one
 * dtype (WHERE: its values; the condition is bool), the result has it
 * (comparisons: bool).  CAST accepts any pair. */
static int ew_check(td_op op, td_tensor *const *in, int n_in, const td_tensor *out,
                    td_err *err) {
  const char *name = td_ops[op].name;
  td_opkind kind = td_ops[op].kind;
  if (n_in != td_ops[op].arity)
    return td_err_set(err, "op '%s' got %d inputs, expected %d", name, n_in, td_ops[op].arity);
  if (op == TD_IR_CAST) return 0;
  td_dtype dt = kind == TD_K_TERNARY ? in[1]->dtype : in[0]->dtype;
  for (int j = kind == TD_K_TERNARY ? 1 : 0; j < n_in; j++)
    if (in[j]->dtype != dt)
      return td_err_set(err, "op '%s' got operands of dtypes %s and %s", name,
                        td_dtype_name(dt), td_dtype_name(in[j]->dtype));
  td_dtype want = kind == TD_K_COMPARE ? TD_BOOL : dt;
  if (out->dtype != want || (kind == TD_K_TERNARY && in[0]->dtype != TD_BOOL))
    return td_err_set(err, "op '%s': inconsistent dtypes (result %s, operands %s)", name,
                      td_dtype_name(out->dtype), td_dtype_name(dt));
  return 0;
}

/* The row kernel of a checked elementwise node, or NULL with err filled. */
static ew_fn ew_pick(td_op op, td_tensor *const *in, const td_tensor *out, td_err *err) {
  if (op == TD_IR_CAST) return cast_tab[in[0]->dtype][out->dtype];
  td_opkind kind = td_ops[op].kind;
  td_dtype dt = kind == TD_K_TERNARY ? in[1]->dtype : in[0]->dtype;
  ew_fn fn = NULL;
  switch (kind) {
  case TD_K_UNARY: fn = pick_unary(op, dt); break;
  case TD_K_BINARY: fn = pick_binary(op, dt); break;
  case TD_K_COMPARE: fn = pick_compare(op, dt); break;
  case TD_K_TERNARY: {
    size_t es = td_dtype_size(dt);
    fn = es == 1 ? where_1 : es == 2 ? where_2 : es == 4 ? where_4 : where_8;
    break;
  }
  default: break;
  }
  if (!fn) td_err_set(err, "op '%s' is not defined for %s", td_ops[op].name, td_dtype_name(dt));
  return fn;
}

int tdk_elementwise(td_op op, td_tensor *const *in, int n_in, td_tensor *out,
                    td_err *err) {
  ew_operand ops[EW_MAX_OPS];
  if (n_in < 1 || n_in >= EW_MAX_OPS)
    return td_err_set(err, "op '%s' got %d inputs", td_ops[op].name, n_in);
  if (ew_check(op, in, n_in, out, err) < 0) return -1;
  ew_fn fn = ew_pick(op, in, out, err);
  if (!fn) return -1;
  ops[0].p = out->data;
  ops[0].es = td_dtype_size(out->dtype);
  contig_strides(out->rank, out->shape, ops[0].st);
  for (int j = 0; j < n_in; j++) {
    if (!can_broadcast(in[j], out)) {
      char a[128], b[128];
      return td_err_set(err, "op '%s': operand %d of shape %s does not broadcast to %s",
                        td_ops[op].name, j,
                        td_shape_str(in[j]->dtype, in[j]->rank, in[j]->shape, a, sizeof a),
                        td_shape_str(out->dtype, out->rank, out->shape, b, sizeof b));
    }
    ew_bcast_operand(in[j], out->rank, out->shape, &ops[j + 1]);
  }
  ew_run(fn, out->rank, out->shape, n_in + 1, ops);
  return 0;
}

/* ---- reductions ------------------------------------------------------------ */

/* Input axes merged into alternating runs of reduced and kept axes. */
typedef struct red_plan {
  int r;
  int64_t dim[TD_MAX_RANK];
  int red[TD_MAX_RANK];
  int64_t ost[TD_MAX_RANK];  /* output stride of a run (0 when reduced) */
} red_plan;

static void red_plan_make(const td_tensor *in, uint32_t axes, red_plan *p) {
  p->r = 0;
  for (int k = 0; k < in->rank; k++) {
    if (in->shape[k] == 1) continue;
    int rd = (axes >> k) & 1;
    if (p->r && p->red[p->r - 1] == rd) {
      p->dim[p->r - 1] *= in->shape[k];
    } else {
      p->dim[p->r] = in->shape[k];
      p->red[p->r++] = rd;
    }
  }
  int64_t s = 1;
  for (int j = p->r - 1; j >= 0; j--) {
    p->ost[j] = p->red[j] ? 0 : s;
    if (!p->red[j]) s *= p->dim[j];
  }
}

/* Combines one input row of n elements into the accumulators at acc[o]:
 * red != 0: the row reduces to acc[o]; else acc[o + j] with element j. */
typedef void (*red_row_fn)(void *acc, int64_t o, const void *x, int64_t n, int red);

/* Walks the (non-empty) input in memory order, one row per call. */
static void red_rows(const red_plan *p, const char *x, size_t es, void *acc, red_row_fn fn) {
  int r = p->r;
  if (r == 0) {
    fn(acc, 0, x, 1, 1);
    return;
  }
  int64_t n = p->dim[r - 1], idx[TD_MAX_RANK] = {0}, oo = 0, xo = 0;
  for (;;) {
    fn(acc, oo, x + xo * (int64_t)es, n, p->red[r - 1]);
    xo += n;
    int k = r - 2;
    for (; k >= 0; k--) {
      oo += p->ost[k];
      if (++idx[k] < p->dim[k]) break;
      oo -= p->ost[k] * p->dim[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* The order of every float sum over a contiguous run, shared with compiled
 * row kernels (compiler/codegen_reduce.c, "16 lanes"), so that the two
 * agree bit for bit: 16 double lanes, lane l adding elements l, l + 16, ...
 * of the first n - n % 16, the last n % 16 elements added to lane 0 in
 * order, then lane j += lane j + h for h = 8, 4, 2, 1.  The lanes also
 * make the loop vectorise (a single accumulator could not). */
#define SUM16(NAME, T)                                                           \
  static double NAME(const T *x, int64_t n) {                                    \
    double s[16] = {0};                                                          \
    int64_t full = n - n % 16, i = 0;                                            \
    for (; i < full; i += 16)                                                    \
      for (int l = 0; l < 16; l++) s[l] += (double)x[i + l];                     \
    for (; i < n; i++) s[0] += (double)x[i];                                     \
    for (int h = 8; h >= 1; h /= 2)                                              \
      for (int j = 0; j < h; j++) s[j] += s[j + h];                              \
    return s[0];                                                                 \
  }
SUM16(sum_f32, float)
SUM16(sum_f64, double)
#undef SUM16

static void sum_row_f32(void *acc_, int64_t o, const void *x_, int64_t n, int red) {
  double *acc = acc_;
  const float *x = x_;
  if (red) {
    acc[o] += sum_f32(x, n);
  } else {
    for (int64_t j = 0; j < n; j++) acc[o + j] += x[j];
  }
}

static void sum_row_f64(void *acc_, int64_t o, const void *x_, int64_t n, int red) {
  double *acc = acc_;
  const double *x = x_;
  if (red) {
    acc[o] += sum_f64(x, n);
  } else {
    for (int64_t j = 0; j < n; j++) acc[o + j] += x[j];
  }
}

/* Integer sums and all products in ACC accumulators. */
#define RED_ROW(NAME, T, ACC, INIT, OPR)                                         \
  static void NAME(void *acc_, int64_t o, const void *x_, int64_t n, int red) {  \
    ACC *acc = acc_;                                                             \
    const T *x = x_;                                                             \
    if (red) {                                                                   \
      ACC s = INIT;                                                              \
      for (int64_t j = 0; j < n; j++) s = s OPR (ACC)x[j];                       \
      acc[o] = acc[o] OPR s;                                                     \
    } else {                                                                     \
      for (int64_t j = 0; j < n; j++) acc[o + j] = acc[o + j] OPR (ACC)x[j];     \
    }                                                                            \
  }
/* Signed -> unsigned conversion is modulo 2^64, so negatives sign-extend. */
RED_ROW(sum_row_bool, uint8_t, uint64_t, 0, +)
RED_ROW(sum_row_i32, int32_t, uint64_t, 0, +)
RED_ROW(sum_row_i64, int64_t, uint64_t, 0, +)
RED_ROW(prod_row_f32, float, double, 1, *)
RED_ROW(prod_row_f64, double, double, 1, *)
RED_ROW(prod_row_bool, uint8_t, uint64_t, 1, *)
RED_ROW(prod_row_i32, int32_t, uint64_t, 1, *)
RED_ROW(prod_row_i64, int64_t, uint64_t, 1, *)

/* max/min in the input type, in place in the output (NaN propagates). */
#define MINMAX_ROW(NAME, T, F)                                                   \
  static void NAME(void *acc_, int64_t o, const void *x_, int64_t n, int red) {  \
    T *acc = acc_;                                                               \
    const T *x = x_;                                                             \
    if (red) {                                                                   \
      T m = acc[o];                                                              \
      for (int64_t j = 0; j < n; j++) m = F(m, x[j]);                            \
      acc[o] = m;                                                                \
    } else {                                                                     \
      for (int64_t j = 0; j < n; j++) acc[o + j] = F(acc[o + j], x[j]);          \
    }                                                                            \
  }
#define BMAX(a, b) ((uint8_t)((a) | (b)))
#define BMIN(a, b) ((uint8_t)((a) & (b)))
MINMAX_ROW(max_row_f32, float, td_max_f32)
MINMAX_ROW(max_row_f64, double, td_max_f64)
MINMAX_ROW(max_row_i32, int32_t, td_max_i32)
MINMAX_ROW(max_row_i64, int64_t, td_max_i64)
MINMAX_ROW(max_row_bool, uint8_t, BMAX)
MINMAX_ROW(min_row_f32, float, td_min_f32)
MINMAX_ROW(min_row_f64, double, td_min_f64)
MINMAX_ROW(min_row_i32, int32_t, td_min_i32)
MINMAX_ROW(min_row_i64, int64_t, td_min_i64)
MINMAX_ROW(min_row_bool, uint8_t, BMIN)

/* Fills out with the identity of max (is_max) or min. */
static void minmax_init(td_tensor *out, int is_max) {
  int64_t n = out->numel;
  switch (out->dtype) {
  case TD_F32: for (int64_t i = 0; i < n; i++) ((float *)out->data)[i] = is_max ? -INFINITY : INFINITY; break;
  case TD_F64: for (int64_t i = 0; i < n; i++) ((double *)out->data)[i] = is_max ? -INFINITY : INFINITY; break;
  case TD_I32: for (int64_t i = 0; i < n; i++) ((int32_t *)out->data)[i] = is_max ? INT32_MIN : INT32_MAX; break;
  case TD_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)out->data)[i] = is_max ? INT64_MIN : INT64_MAX; break;
  default: memset(out->data, is_max ? 0 : 1, (size_t)n); break;
  }
}

/* Writes accumulators (double or uint64 holding int64) into out. */
static void acc_store(const void *acc, int is_float, td_tensor *out) {
  int64_t n = out->numel;
  const double *d = acc;
  const uint64_t *u = acc;
  for (int64_t i = 0; i < n; i++) {
    switch (out->dtype) {
    case TD_F32: ((float *)out->data)[i] = is_float ? (float)d[i] : (float)(int64_t)u[i]; break;
    case TD_F64: ((double *)out->data)[i] = is_float ? d[i] : (double)(int64_t)u[i]; break;
    case TD_I32: ((int32_t *)out->data)[i] = is_float ? td_f2i32(d[i]) : (int32_t)(int64_t)u[i]; break;
    case TD_I64: ((int64_t *)out->data)[i] = is_float ? td_f2i64(d[i]) : (int64_t)u[i]; break;
    default: ((uint8_t *)out->data)[i] = is_float ? d[i] != 0 : u[i] != 0; break;
    }
  }
}

static red_row_fn sum_prod_row(td_op op, td_dtype dt) {
  static const red_row_fn sum[TD_DTYPE_COUNT] = {
      sum_row_bool, sum_row_i32, sum_row_i64, sum_row_f32, sum_row_f64};
  static const red_row_fn prod[TD_DTYPE_COUNT] = {
      prod_row_bool, prod_row_i32, prod_row_i64, prod_row_f32, prod_row_f64};
  return op == TD_IR_SUM ? sum[dt] : prod[dt];
}

static int reduce_sum_prod(td_op op, const red_plan *p, const td_tensor *in, td_tensor *out,
                           td_err *err) {
  int is_float = td_dtype_is_float(in->dtype);
  void *acc = td_malloc((size_t)(out->numel ? out->numel : 1) * 8);
  if (!acc) return td_err_set(err, "out of memory");
  for (int64_t i = 0; i < out->numel; i++) {
    if (is_float) ((double *)acc)[i] = op == TD_IR_SUM ? 0.0 : 1.0;
    else ((uint64_t *)acc)[i] = op == TD_IR_SUM ? 0 : 1;
  }
  if (in->numel > 0)
    red_rows(p, in->data, td_dtype_size(in->dtype), acc, sum_prod_row(op, in->dtype));
  acc_store(acc, is_float, out);
  td_free(acc);
  return 0;
}

static int reduce_minmax(td_op op, const red_plan *p, const td_tensor *in, td_tensor *out,
                         td_err *err) {
  static const red_row_fn mx[TD_DTYPE_COUNT] = {
      max_row_bool, max_row_i32, max_row_i64, max_row_f32, max_row_f64};
  static const red_row_fn mn[TD_DTYPE_COUNT] = {
      min_row_bool, min_row_i32, min_row_i64, min_row_f32, min_row_f64};
  if (out->dtype != in->dtype)
    return td_err_set(err, "op '%s': result dtype %s differs from input %s",
                      td_ops[op].name, td_dtype_name(out->dtype), td_dtype_name(in->dtype));
  if (in->numel == 0 && out->numel > 0)
    return td_err_set(err, "op '%s' over an empty axis has no value", td_ops[op].name);
  minmax_init(out, op == TD_IR_RMAX);
  if (in->numel > 0)
    red_rows(p, in->data, td_dtype_size(in->dtype), out->data,
             op == TD_IR_RMAX ? mx[in->dtype] : mn[in->dtype]);
  return 0;
}

/* ---- argmax / argmin ---- */

/* For each (outer, inner) position the first index k of the extreme along
 * the middle axis; NaN beats every number and the first NaN wins. */
#define ARG_FN(NAME, T, BETTER)                                                  \
  static void NAME(const void *x_, int64_t outer, int64_t n, int64_t inner,      \
                   int64_t *out, void *best_) {                                  \
    const T *x = x_;                                                             \
    T *best = best_;                                                             \
    for (int64_t o = 0; o < outer; o++) {                                        \
      const T *b = x + o * n * inner;                                            \
      int64_t *oi = out + o * inner;                                             \
      for (int64_t j = 0; j < inner; j++) {                                      \
        best[j] = b[j];                                                          \
        oi[j] = 0;                                                               \
      }                                                                          \
      for (int64_t k = 1; k < n; k++) {                                          \
        const T *row = b + k * inner;                                            \
        for (int64_t j = 0; j < inner; j++) {                                    \
          T v = row[j], c = best[j];                                             \
          if (BETTER) {                                                          \
            best[j] = v;                                                         \
            oi[j] = k;                                                           \
          }                                                                      \
        }                                                                        \
      }                                                                          \
    }                                                                            \
  }
ARG_FN(argmax_f32, float, v > c || (v != v && c == c))
ARG_FN(argmax_f64, double, v > c || (v != v && c == c))
ARG_FN(argmax_i32, int32_t, v > c)
ARG_FN(argmax_i64, int64_t, v > c)
ARG_FN(argmax_bool, uint8_t, v > c)
ARG_FN(argmin_f32, float, v < c || (v != v && c == c))
ARG_FN(argmin_f64, double, v < c || (v != v && c == c))
ARG_FN(argmin_i32, int32_t, v < c)
ARG_FN(argmin_i64, int64_t, v < c)
ARG_FN(argmin_bool, uint8_t, v < c)

typedef void (*arg_fn)(const void *, int64_t, int64_t, int64_t, int64_t *, void *);

static int reduce_arg(td_op op, uint32_t axes, const td_tensor *in, td_tensor *out,
                      td_err *err) {
  static const arg_fn amax[TD_DTYPE_COUNT] = {argmax_bool, argmax_i32, argmax_i64,
                                              argmax_f32, argmax_f64};
  static const arg_fn amin[TD_DTYPE_COUNT] = {argmin_bool, argmin_i32, argmin_i64,
                                              argmin_f32, argmin_f64};
  const char *name = td_ops[op].name;
  if (axes == 0 || (axes & (axes - 1)) != 0 || axes >= (1u << in->rank))
    return td_err_set(err, "op '%s' needs exactly one axis", name);
  if (out->dtype != TD_I64)
    return td_err_set(err, "op '%s' must produce i64, not %s", name, td_dtype_name(out->dtype));
  int ax = __builtin_ctz(axes);
  int ok = out->rank == in->rank;
  for (int k = 0; ok && k < in->rank; k++) ok = out->shape[k] == (k == ax ? 1 : in->shape[k]);
  if (!ok) return td_err_set(err, "op '%s': result shape does not match its input", name);
  int64_t outer = 1, inner = 1, n = in->shape[ax];
  for (int k = 0; k < ax; k++) outer *= in->shape[k];
  for (int k = ax + 1; k < in->rank; k++) inner *= in->shape[k];
  if (out->numel == 0) return 0;
  if (n == 0) return td_err_set(err, "op '%s' over an empty axis has no value", name);
  void *best = td_malloc((size_t)inner * td_dtype_size(in->dtype));
  if (!best) return td_err_set(err, "out of memory");
  (op == TD_IR_ARGMAX ? amax : amin)[in->dtype](in->data, outer, n, inner, out->data, best);
  td_free(best);
  return 0;
}

int tdk_reduce(td_op op, uint32_t axes, const td_tensor *in, td_tensor *out, td_err *err) {
  if (op == TD_IR_ARGMAX || op == TD_IR_ARGMIN) return reduce_arg(op, axes, in, out, err);
  for (int k = 0; k < in->rank && out->rank == in->rank; k++)
    if (out->shape[k] != ((axes >> k) & 1 ? 1 : in->shape[k])) {
      char a[128], b[128];
      return td_err_set(err, "op '%s': result %s does not match input %s reduced over axes "
                        "mask 0x%x", td_ops[op].name,
                        td_shape_str(out->dtype, out->rank, out->shape, a, sizeof a),
                        td_shape_str(in->dtype, in->rank, in->shape, b, sizeof b), axes);
    }
  if (out->rank != in->rank)
    return td_err_set(err, "op '%s': result rank %d differs from input rank %d",
                      td_ops[op].name, out->rank, in->rank);
  red_plan p;
  red_plan_make(in, axes, &p);
  if (op == TD_IR_SUM || op == TD_IR_PROD) return reduce_sum_prod(op, &p, in, out, err);
  if (op == TD_IR_RMAX || op == TD_IR_RMIN) return reduce_minmax(op, &p, in, out, err);
  return td_err_set(err, "op '%s' is not a reduction", td_ops[op].name);
}

/* ---- movement --------------------------------------------------------------- */

void tdk_copy(const td_tensor *in, td_tensor *out) {
  if (out->numel > 0)
    memcpy(out->data, in->data, (size_t)out->numel * td_dtype_size(out->dtype));
}

/* Transposing copies: one plane out[i, j] = in[i * is + j * js'] of a
 * permute whose innermost output axis reads the input with a large stride.
 * Walking TILE x TILE tiles keeps both sides' cache lines in L1. */
#define TILE 16
#define TILE_FN(NAME, T)                                                         \
  static void NAME(char *o_, const char *in_, int64_t ni, int64_t nj, int64_t os, \
                   int64_t js) {                                                 \
    T *o = (T *)o_;                                                              \
    const T *in = (const T *)in_;                                                \
    for (int64_t ib = 0; ib < ni; ib += TILE) {                                  \
      int64_t ie = ni - ib < TILE ? ni : ib + TILE;                              \
      for (int64_t jb = 0; jb < nj; jb += TILE) {                                \
        int64_t je = nj - jb < TILE ? nj : jb + TILE;                            \
        for (int64_t i = ib; i < ie; i++)                                        \
          for (int64_t j = jb; j < je; j++) o[i * os + j] = in[i + j * js];      \
      }                                                                          \
    }                                                                            \
  }
TILE_FN(tile_1, uint8_t)
TILE_FN(tile_2, uint16_t)
TILE_FN(tile_4, uint32_t)
TILE_FN(tile_8, uint64_t)

/* The tiled path for coalesced dims: p is the output axis reading the input
 * contiguously, the last axis the one reading it with stride js. */
static void tiled_copy(int r, const int64_t *dim, int64_t st[][TD_MAX_RANK], int p,
                       char *out, const char *src, size_t es) {
  void (*fn)(char *, const char *, int64_t, int64_t, int64_t, int64_t) =
      es == 1 ? tile_1 : es == 2 ? tile_2 : es == 4 ? tile_4 : tile_8;
  int64_t idx[TD_MAX_RANK] = {0}, oo = 0, io = 0;
  for (;;) {
    fn(out + oo * (int64_t)es, src + io * (int64_t)es, dim[p], dim[r - 1], st[0][p],
       st[1][r - 1]);
    int k = r - 2;
    for (; k >= 0; k--) {
      if (k == p) continue;
      oo += st[0][k];
      io += st[1][k];
      if (++idx[k] < dim[k]) break;
      oo -= st[0][k] * dim[k];
      io -= st[1][k] * dim[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* Copies from `src` (element strides per output axis) into contiguous out. */
static void strided_copy(const td_tensor *out, char *src, const int64_t *st) {
  ew_operand ops[2];
  ops[0].p = out->data;
  ops[0].es = td_dtype_size(out->dtype);
  contig_strides(out->rank, out->shape, ops[0].st);
  ops[1].p = src;
  ops[1].es = ops[0].es;
  memcpy(ops[1].st, st, sizeof ops[1].st);
  for (int k = 0; k < out->rank; k++)
    if (out->shape[k] == 0) return;
  int64_t dim[TD_MAX_RANK], cst[EW_MAX_OPS][TD_MAX_RANK];
  int r = ew_coalesce(out->rank, out->shape, 2, ops, dim, cst);
  if (r >= 2 && dim[r - 1] >= TILE / 2 && (cst[1][r - 1] > 16 || cst[1][r - 1] < -16)) {
    for (int p = r - 2; p >= 0; p--)
      if (cst[1][p] == 1 && dim[p] >= TILE / 2) {
        tiled_copy(r, dim, cst, p, ops[0].p, ops[1].p, ops[0].es);
        return;
      }
  }
  ew_run(copy_fn(ops[0].es), out->rank, out->shape, 2, ops);
}

void tdk_permute(const int *perm, const td_tensor *in, td_tensor *out) {
  int64_t cs[TD_MAX_RANK], st[TD_MAX_RANK] = {0};
  contig_strides(in->rank, in->shape, cs);
  for (int i = 0; i < out->rank; i++) st[i] = cs[perm[i]];
  strided_copy(out, in->data, st);
}

int tdk_broadcast(const td_tensor *in, td_tensor *out, td_err *err) {
  ew_operand op;
  if (!can_broadcast(in, out) || in->dtype != out->dtype) {
    char a[128], b[128];
    return td_err_set(err, "cannot broadcast %s to %s",
                      td_shape_str(in->dtype, in->rank, in->shape, a, sizeof a),
                      td_shape_str(out->dtype, out->rank, out->shape, b, sizeof b));
  }
  ew_bcast_operand(in, out->rank, out->shape, &op);
  strided_copy(out, in->data, op.st);
  return 0;
}

int tdk_slice(const int64_t *start, const int64_t *step, const td_tensor *in,
              td_tensor *out, td_err *err) {
  int64_t cs[TD_MAX_RANK], st[TD_MAX_RANK] = {0}, base = 0;
  contig_strides(in->rank, in->shape, cs);
  for (int k = 0; k < in->rank; k++) {
    int64_t c = out->shape[k], d = in->shape[k];
    if (c > 0) {
      int64_t last = start[k] + step[k] * (c - 1);
      if (start[k] < 0 || start[k] >= d || last < 0 || last >= d)
        return td_err_set(err,
                          "slice out of range: axis %d of size %lld, start %lld, step "
                          "%lld, %lld elements",
                          k, (long long)d, (long long)start[k], (long long)step[k],
                          (long long)c);
      base += start[k] * cs[k];
    }
    st[k] = step[k] * cs[k];
  }
  if (out->numel == 0) return 0;
  strided_copy(out, (char *)in->data + base * (int64_t)td_dtype_size(in->dtype), st);
  return 0;
}

void tdk_concat(int axis, td_tensor *const *in, int n_in, td_tensor *out) {
  size_t es = td_dtype_size(out->dtype);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; k++) outer *= out->shape[k];
  for (int k = axis + 1; k < out->rank; k++) inner *= out->shape[k];
  char *dst = out->data;
  if (out->numel == 0) return;
  for (int64_t o = 0; o < outer; o++) {
    for (int j = 0; j < n_in; j++) {
      size_t chunk = (size_t)(in[j]->shape[axis] * inner) * es;
      if (!chunk) continue;
      memcpy(dst, (const char *)in[j]->data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  }
}

/* Index j of idx as int64 (i32 or i64 tensors). */
static int64_t idx_at(const td_tensor *idx, int64_t j) {
  return idx->dtype == TD_I32 ? ((const int32_t *)idx->data)[j]
                              : ((const int64_t *)idx->data)[j];
}

int tdk_gather(int axis, const td_tensor *x, const td_tensor *idx, td_tensor *out,
               td_err *err) {
  if (idx->dtype != TD_I32 && idx->dtype != TD_I64)
    return td_err_set(err, "take: indices must be i32 or i64, not %s",
                      td_dtype_name(idx->dtype));
  if (axis < 0 || axis >= x->rank)
    return td_err_set(err, "take: axis %d out of range for rank %d", axis, x->rank);
  int ok = out->rank == x->rank - 1 + idx->rank && out->dtype == x->dtype;
  for (int k = 0; ok && k < out->rank; k++) {
    int64_t want = k < axis ? x->shape[k]
                 : k < axis + idx->rank ? idx->shape[k - axis]
                 : x->shape[k - idx->rank + 1];
    ok = out->shape[k] == want;
  }
  if (!ok) return td_err_set(err, "take: result shape does not match x and the indices");
  int64_t d = x->shape[axis], outer = 1, inner = 1, ni = idx->numel;
  for (int k = 0; k < axis; k++) outer *= x->shape[k];
  for (int k = axis + 1; k < x->rank; k++) inner *= x->shape[k];
  /* The indices that are read are checked, as compiled code checks them:
   * an empty result (another axis of size 0) reads nothing. */
  if (out->numel == 0) return 0;
  for (int64_t j = 0; j < ni; j++) {
    int64_t v = idx_at(idx, j);
    if (v < -d || v >= d)
      return td_err_set(err, "take: index %lld is out of range for axis %d of size %lld",
                        (long long)v, axis, (long long)d);
  }
  size_t es = td_dtype_size(x->dtype), row = (size_t)inner * es;
  if (out->numel == 0) return 0;
  char *dst = out->data;
  for (int64_t o = 0; o < outer; o++) {
    const char *src = (const char *)x->data + (size_t)(o * d) * row;
    for (int64_t j = 0; j < ni; j++, dst += row) {
      int64_t v = idx_at(idx, j);
      memcpy(dst, src + (size_t)(v < 0 ? v + d : v) * row, row);
    }
  }
  return 0;
}

/* ---- creation ----------------------------------------------------------------- */

void tdk_fill(td_tensor *out, double f, int64_t i) {
  int64_t n = out->numel;
  switch (out->dtype) {
  case TD_F32: for (int64_t k = 0; k < n; k++) ((float *)out->data)[k] = (float)f; break;
  case TD_F64: for (int64_t k = 0; k < n; k++) ((double *)out->data)[k] = f; break;
  case TD_I32: for (int64_t k = 0; k < n; k++) ((int32_t *)out->data)[k] = (int32_t)i; break;
  case TD_I64: for (int64_t k = 0; k < n; k++) ((int64_t *)out->data)[k] = i; break;
  case TD_F16: case TD_BF16: for (int64_t k = 0; k < n; k++) td_tensor_set(out, k, f); break;
  default: if (n) memset(out->data, i != 0, (size_t)n); break;
  }
}

void tdk_arange(td_tensor *out, double f, double f2, int64_t i, int64_t i2) {
  int64_t n = out->numel;
  switch (out->dtype) {
  case TD_F32: for (int64_t k = 0; k < n; k++) ((float *)out->data)[k] = (float)(f + f2 * (double)k); break;
  case TD_F64: for (int64_t k = 0; k < n; k++) ((double *)out->data)[k] = f + f2 * (double)k; break;
  case TD_I32: for (int64_t k = 0; k < n; k++) ((int32_t *)out->data)[k] = (int32_t)(uint64_t)(i + i2 * k); break;
  case TD_I64: for (int64_t k = 0; k < n; k++) ((int64_t *)out->data)[k] = i + i2 * k; break;
  case TD_F16: case TD_BF16:
    for (int64_t k = 0; k < n; k++) td_tensor_set(out, k, f + f2 * (double)k);
    break;
  default: for (int64_t k = 0; k < n; k++) ((uint8_t *)out->data)[k] = (i + i2 * k) != 0; break;
  }
}

void tdk_random(td_tensor *out, int normal, uint64_t seed, uint64_t stream) {
  int64_t n = out->numel;
  for (int64_t k = 0; k < n; k++) {
    double v = normal ? td_rand_normal(seed, stream, (uint64_t)k)
                      : td_rand_uniform(seed, stream, (uint64_t)k);
    if (out->dtype == TD_F32) ((float *)out->data)[k] = (float)v;
    else if (out->dtype == TD_F64) ((double *)out->data)[k] = v;
    else td_tensor_set(out, k, v);
  }
}

/* ---- statistics -------------------------------------------------------------- */

#define STATS_LOOP(T)                                                            \
  do {                                                                           \
    const T *x = t->data;                                                        \
    for (int64_t i = 0; i < t->numel; i++) {                                     \
      double v = (double)x[i];                                                   \
      if (v != v) { s->n_nan++; continue; }                                      \
      if (isinf(v)) { s->n_inf++; continue; }                                    \
      if (s->n_finite == 0 || v < s->min) s->min = v;                            \
      if (s->n_finite == 0 || v > s->max) s->max = v;                            \
      sum += v;                                                                  \
      s->n_finite++;                                                             \
    }                                                                            \
  } while (0)

void tdk_stats_of(const td_tensor *t, tdk_stats *s) {
  double sum = 0;
  memset(s, 0, sizeof *s);
  switch (t->dtype) {
  case TD_F32: STATS_LOOP(float); break;
  case TD_F64: STATS_LOOP(double); break;
  case TD_I32: STATS_LOOP(int32_t); break;
  case TD_I64: STATS_LOOP(int64_t); break;
  case TD_F16: case TD_BF16: {
    for (int64_t i = 0; i < t->numel; i++) {
      double v = td_tensor_get(t, i);
      if (v != v) { s->n_nan++; continue; }
      if (isinf(v)) { s->n_inf++; continue; }
      if (s->n_finite == 0 || v < s->min) s->min = v;
      if (s->n_finite == 0 || v > s->max) s->max = v;
      sum += v;
      s->n_finite++;
    }
    break;
  }
  default: STATS_LOOP(uint8_t); break;
  }
  s->mean = s->n_finite ? sum / (double)s->n_finite : 0.0;
}

int64_t tdk_first_nonfinite(const td_tensor *t, int *is_nan) {
  int64_t n = t->numel;
  if (t->dtype == TD_F32) {
    const float *x = t->data;
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(x[i])) return *is_nan = isnan(x[i]), i;
  } else if (t->dtype == TD_F64) {
    const double *x = t->data;
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(x[i])) return *is_nan = isnan(x[i]), i;
  } else if (td_dtype_is_half(t->dtype)) {
    const uint16_t *x = t->data;
    uint16_t exp_mask = t->dtype == TD_F16 ? 0x7c00 : 0x7f80;
    for (int64_t i = 0; i < n; i++)
      if ((x[i] & exp_mask) == exp_mask) return *is_nan = (x[i] & 0x7fff) != exp_mask, i;
  }
  return -1;
}

/* reduce.c - the interpreter's reductions: sum, prod, max, min over a set
 * of axes, argmax and argmin over one.
 *
 * Reductions merge runs of adjacent reduced / kept axes and walk the input
 * in memory order: when the innermost run is reduced each row collapses to
 * one value (float sums in 16 double lanes, the order compiled row kernels
 * use too, so the two agree bit for bit), otherwise a row is combined
 * elementwise into the output row, in memory order.  f32 and f64
 * sums and products accumulate in double, integer ones in 64-bit integers
 * with wrap-around; max/min propagate NaN (runtime/scalar.h's td_max and
 * td_min); argmax/argmin return the first extreme index and treat NaN as
 * the extreme (NumPy's rule).
 */
#include "interp/kernels.h"

#include <math.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/scalar.h"

TDK_VECTORIZE

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
#define SUM16(S, T)                                                              \
  static double sum_##S(const T *x, int64_t n) {                                 \
    double s[16] = {0};                                                          \
    int64_t full = n - n % 16, i = 0;                                            \
    for (; i < full; i += 16)                                                    \
      for (int l = 0; l < 16; l++) s[l] += (double)x[i + l];                     \
    for (; i < n; i++) s[0] += (double)x[i];                                     \
    for (int h = 8; h >= 1; h /= 2)                                              \
      for (int j = 0; j < h; j++) s[j] += s[j + h];                              \
    return s[0];                                                                 \
  }                                                                              \
  static void sum_row_##S(void *acc_, int64_t o, const void *x_, int64_t n, int red) { \
    double *acc = acc_;                                                          \
    const T *x = x_;                                                             \
    if (red) {                                                                   \
      acc[o] += sum_##S(x, n);                                                   \
    } else {                                                                     \
      for (int64_t j = 0; j < n; j++) acc[o + j] += x[j];                        \
    }                                                                            \
  }
SUM16(f32, float)
SUM16(f64, double)
#undef SUM16

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

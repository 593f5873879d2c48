/* kernels.h - internal: the interpreter's kernels, one entry per op family.
 *
 * Every kernel writes into an output tensor the interpreter has already
 * allocated with the node's dtype and evaluated shape, reads contiguous
 * C-order inputs, and never allocates more than a small workspace.  They
 * return 0, or -1 with err filled (the interpreter adds the node's span).
 * Hot loops are plain typed loops chosen by a table or a switch outside
 * the loop.  One file per family: elementwise.c (generated from
 * lang/ops.def), reduce.c, matmul.c, movement.c, gather.c, creation.c,
 * stats.c; strided.c is the iterator elementwise and movement share.
 *
 * Integer arithmetic wraps; float -> int casts truncate toward zero,
 * saturate out of range and send NaN to 0 (runtime/scalar.h,
 * lang/casts.def).  f16/bf16 (uint16_t bits, runtime/half.h) have kernels
 * only for CAST, WHERE, the movement ops and creation; the interpreter runs
 * every other op on them in f32 (interp.c).
 */
#ifndef TD_INTERP_KERNELS_H
#define TD_INTERP_KERNELS_H

#include "lang/ir.h"
#include "runtime/tensor.h"

/* GCC 12 at -O2 vectorises only loops without an epilogue; the kernels are
 * written to be vectorised, so each kernel file asks for the full cost
 * model with TDK_VECTORIZE after its includes (the scalar helpers the
 * loops inline keep the default options). */
#if defined(__GNUC__) && !defined(__clang__)
#define TDK_VECTORIZE _Pragma("GCC optimize(\"tree-vectorize\", \"vect-cost-model=dynamic\")")
#else
#define TDK_VECTORIZE
#endif

/* Unary, binary, compare, ternary (WHERE) and CAST nodes: inputs broadcast
 * NumPy-style to out's shape; the dtypes are checked by td_ew_check
 * (lang/opeval.h). */
int tdk_elementwise(td_op op, td_tensor *const *in, int n_in, td_tensor *out,
                    td_err *err);

/* SUM PROD RMAX RMIN ARGMAX ARGMIN over the axes in `axes` (bit k = axis k
 * of `in`); out keeps reduced axes as size 1. */
int tdk_reduce(td_op op, uint32_t axes, const td_tensor *in, td_tensor *out,
               td_err *err);

/* [..., M, K] @ [..., K, N] with broadcast batch dims (f32, f64, i32, i64). */
int tdk_matmul(const td_tensor *a, const td_tensor *b, td_tensor *out, td_err *err);

/* CONV (conv.c): x [N, C, *in] with w [O, C / groups, *k] into y [N, O,
 * *out] by the attributes a (lang/ir.h); f32 and f64. */
int tdk_conv(const td_conv_attr *a, const td_tensor *x, const td_tensor *w, td_tensor *y, td_err *err);

/* Movement: copies into out (same element count / broadcastable / ...). */
void tdk_copy(const td_tensor *in, td_tensor *out);              /* RESHAPE */
void tdk_permute(const int *perm, const td_tensor *in, td_tensor *out);
int tdk_broadcast(const td_tensor *in, td_tensor *out, td_err *err);
/* start/step per axis of `in`; checks every selected index is in range. */
int tdk_slice(const int64_t *start, const int64_t *step, const td_tensor *in,
              td_tensor *out, td_err *err);
void tdk_concat(int axis, td_tensor *const *in, int n_in, td_tensor *out);
/* take(x, idx, axis); negative indices count from the end; out-of-range
 * indices are an error. */
int tdk_gather(int axis, const td_tensor *x, const td_tensor *idx, td_tensor *out,
               td_err *err);

/* Creation (creation.c): a fill, arange, RAND / RANDN. */
void tdk_fill(td_tensor *out, double f, int64_t i);   /* f for floats, i for ints */
void tdk_arange(td_tensor *out, double f, double f2, int64_t i, int64_t i2);
void tdk_random(td_tensor *out, int normal, uint64_t seed, uint64_t stream);

/* Statistics for tracing: min/max/mean over the finite values (ints and
 * bools exactly as numbers), with counts of NaN and +-Inf. */
typedef struct tdk_stats {
  double min, max, mean;
  int64_t n_finite, n_nan, n_inf;
} tdk_stats;
void tdk_stats_of(const td_tensor *t, tdk_stats *s);
/* Flat index of the first NaN or Inf in a float tensor, or -1; *is_nan says
 * which it was. */
int64_t tdk_first_nonfinite(const td_tensor *t, int *is_nan);

#endif

/* elementwise.c - the interpreter's elementwise kernels, generated from
 * lang/ops.def.
 *
 * Every elementwise op's line in ops.def carries TD_EW(DOMAIN, EXPR).  This
 * file expands the table with its own TD_EW, making for each op and each
 * dtype of its DOMAIN (lang/opeval.h) one typed row kernel whose loop body
 * is EXPR over `a`, `b`, `c` of the element type, and the table
 * ew_kernels[op][dtype] of them; CAST's kernels come from lang/casts.def
 * the same way.  So an op added to ops.def (with its runtime/scalar.h
 * helper) runs here with no edit to this file, and what differs between
 * dtypes (integer wrap-around, floor division, NaN rules) is the helper's.
 * lang/opeval.c expands the same table into the constant folder's scalar
 * cases, so folding and eager evaluation agree bit for bit.
 *
 * The operands go through the strided iterator (strided.h).  Each row
 * kernel has separate loops for the stride patterns (1,1), (1,0), (0,1)
 * that GCC vectorises; a table lookup picks the kernel once per node.
 *
 * f16/bf16 are outside every domain but WHERE's (a selection of bits) and
 * CAST's: the interpreter runs every other op on them in f32 (interp.c
 * converts the operands and rounds the result once).
 */
#include "interp/kernels.h"

#include <string.h>

#include "lang/opeval.h"
#include "runtime/half.h"
#include "runtime/scalar.h"
#include "interp/strided.h"

TDK_VECTORIZE

/* ---- row kernel templates ------------------------------------------------- */

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

/* Ternary ops (WHERE): a is the bool condition, b and c the values. */
#define EW3(NAME, T, EXPR)                                                       \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    T *restrict o = o_;                                                          \
    const uint8_t *restrict C = in[0];                                           \
    const T *restrict B = in[1], *restrict D = in[2];                            \
    int64_t sc = st[0], sa = st[1], sb = st[2];                                  \
    if (sc == 1 && sa == 1 && sb == 1) {                                         \
      for (int64_t i = 0; i < n; i++) {                                          \
        uint8_t a = C[i];                                                        \
        T b = B[i], c = D[i];                                                    \
        o[i] = (T)(EXPR);                                                        \
      }                                                                          \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) {                                          \
        uint8_t a = C[i * sc];                                                   \
        T b = B[i * sa], c = D[i * sb];                                          \
        o[i] = (T)(EXPR);                                                        \
      }                                                                          \
    }                                                                            \
  }

/* runtime/scalar.h's f32 transcendentals are written with fmaf: in a clone
 * for CPUs with FMA that is one instruction and the loops vectorise; the
 * default clone calls libm's fmaf, as exact (an FMA rounds once wherever it
 * runs), so eager results never depend on the CPU.  Only the f32 unary
 * kernels have clones.  Not under ThreadSanitizer: the clones' resolver (an
 * ifunc, instrumented too) runs while the program is relocated, before TSan
 * is initialised, and crashes it at start-up (tests/tsan/cuda_stress.c
 * links the library built so). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define CLONES_f32 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONES_f32
#endif
#define CLONES_f64
#define CLONES_i32
#define CLONES_i64
#define CLONES_b8
#define CLONES_f16
#define CLONES_bf16

/* ---- the kernels of ops.def ------------------------------------------------ */

/* TD_OP(E, name, K, A, TD_EW(D, X)) becomes EW_<K>(E, D, X); ops of other
 * kinds expand to nothing. */
#define TD_EW(dom, ...) dom, __VA_ARGS__
#define EW_KIND_(K, E, ...) EW_##K(E, __VA_ARGS__)
#define EW_NONE_(...)
#define EW_TD_K_LEAF EW_NONE_
#define EW_TD_K_RANDOM EW_NONE_
#define EW_TD_K_REDUCE EW_NONE_
#define EW_TD_K_MATMUL EW_NONE_
#define EW_TD_K_CONV EW_NONE_
#define EW_TD_K_MOVE EW_NONE_
#define EW_TD_K_GATHER EW_NONE_
#define EW_TD_K_SCAN EW_NONE_
#define EW_TD_K_EFFECT EW_NONE_

/* First expansion: one row kernel ew_<E>_<S> per op E and dtype S. */
#define DEF_UN_(S, E, X) CLONES_##S EW1(ew_##E##_##S, TD_EW_T_##S, TD_EW_T_##S, X)
#define DEF_BIN_(S, E, X) EW2(ew_##E##_##S, TD_EW_T_##S, TD_EW_T_##S, X)
#define DEF_CMP_(S, E, X) EW2(ew_##E##_##S, TD_EW_T_##S, uint8_t, X)
#define DEF_SEL_(S, E, X) EW3(ew_##E##_##S, TD_EW_T_##S, X)
#define EW_TD_K_UNARY(E, D, X) TD_EW_DOM_##D(DEF_UN_, E, X)
#define EW_TD_K_BINARY(E, D, X) TD_EW_DOM_##D(DEF_BIN_, E, X)
#define EW_TD_K_COMPARE(E, D, X) TD_EW_DOM_##D(DEF_CMP_, E, X)
#define EW_TD_K_TERNARY(E, D, X) TD_EW_DOM_##D(DEF_SEL_, E, X)
#define TD_OP(e, name, kind, arity, c) EW_KIND_(kind, e, c)
#include "lang/ops.def"
#undef TD_OP
#undef EW_TD_K_UNARY
#undef EW_TD_K_BINARY
#undef EW_TD_K_COMPARE
#undef EW_TD_K_TERNARY

/* Second expansion: the table of those kernels. */
#define TAB_ONE_(S, E, X) [TD_IR_##E][TD_EW_DT_##S] = ew_##E##_##S,
#define EW_TD_K_UNARY(E, D, X) TD_EW_DOM_##D(TAB_ONE_, E, X)
#define EW_TD_K_BINARY EW_TD_K_UNARY
#define EW_TD_K_COMPARE EW_TD_K_UNARY
#define EW_TD_K_TERNARY EW_TD_K_UNARY
static const tdk_row_fn ew_kernels[TD_IR_OP_COUNT][TD_DTYPE_COUNT] = {
#define TD_OP(e, name, kind, arity, c) EW_KIND_(kind, e, c)
#include "lang/ops.def"
#undef TD_OP
};

/* ---- casts: lang/casts.def ---------------------------------------------- */

#define TD_CAST(F, T, X) EW1(cast_##F##_##T, TD_EW_T_##F, TD_EW_T_##T, X)
#include "lang/casts.def"
#undef TD_CAST

static const tdk_row_fn cast_kernels[TD_DTYPE_COUNT][TD_DTYPE_COUNT] = {
#define TD_CAST(F, T, X) [TD_EW_DT_##F][TD_EW_DT_##T] = cast_##F##_##T,
#include "lang/casts.def"
#undef TD_CAST
};

/* ---- the entry -------------------------------------------------------------- */

/* The row kernel of a checked elementwise node, or NULL with err filled. */
static tdk_row_fn ew_pick(td_op op, td_tensor *const *in, const td_tensor *out, td_err *err) {
  if (op == TD_IR_CAST) return cast_kernels[in[0]->dtype][out->dtype];
  td_dtype dt = td_ops[op].kind == TD_K_TERNARY ? in[1]->dtype : in[0]->dtype;
  tdk_row_fn fn = ew_kernels[op][dt];
  if (!fn) td_err_set(err, "op '%s' is not defined for %s", td_ops[op].name, td_dtype_name(dt));
  return fn;
}

int tdk_elementwise(td_op op, td_tensor *const *in, int n_in, td_tensor *out,
                    td_err *err) {
  tdk_operand ops[TDK_MAX_OPS];
  td_dtype dts[TDK_MAX_OPS];
  if (n_in < 1 || n_in >= TDK_MAX_OPS)
    return td_err_set(err, "op '%s' got %d inputs", td_ops[op].name, n_in);
  for (int j = 0; j < n_in; j++) dts[j] = in[j]->dtype;
  if (td_ew_check(op, dts, n_in, out->dtype, err) < 0) return -1;
  tdk_row_fn fn = ew_pick(op, in, out, err);
  if (!fn) return -1;
  ops[0].p = out->data;
  ops[0].es = td_dtype_size(out->dtype);
  tdk_contig_strides(out->rank, out->shape, ops[0].st);
  for (int j = 0; j < n_in; j++) {
    if (!tdk_can_broadcast(in[j], out)) {
      char a[128], b[128];
      return td_err_set(err, "op '%s': operand %d of shape %s does not broadcast to %s",
                        td_ops[op].name, j,
                        td_shape_str(in[j]->dtype, in[j]->rank, in[j]->shape, a, sizeof a),
                        td_shape_str(out->dtype, out->rank, out->shape, b, sizeof b));
    }
    tdk_bcast_operand(in[j], out->rank, out->shape, &ops[j + 1]);
  }
  tdk_run(fn, out->rank, out->shape, n_in + 1, ops);
  return 0;
}

/* opeval.h - ops.def's elementwise columns as code: dtype domains, the
 * typing check and a scalar evaluator.
 *
 * An elementwise op's line in lang/ops.def carries TD_EW(DOMAIN, EXPR).
 * This header turns a DOMAIN into its dtypes, so that a file expanding
 * ops.def with its own TD_EW (interp/elementwise.c: one typed loop per op
 * and dtype) and lang/opeval.c (one scalar case per op and dtype) make
 * exactly the same (op, dtype) pairs from the table.
 *
 * A dtype is named by a short name S (b8 i32 i64 f32 f64 f16 bf16; b8 is
 * bool, not spelled `bool` because <stdbool.h> makes that a macro).
 * TD_EW_T_<S> is the C type an element is stored in and TD_EW_DT_<S> its
 * td_dtype; paste a short name onto them.
 */
#ifndef TD_LANG_OPEVAL_H
#define TD_LANG_OPEVAL_H

#include <stdint.h>

#include "lang/ir.h"
#include "runtime/tensor.h"

#define TD_EW_T_b8 uint8_t
#define TD_EW_T_i32 int32_t
#define TD_EW_T_i64 int64_t
#define TD_EW_T_f32 float
#define TD_EW_T_f64 double
#define TD_EW_T_f16 uint16_t
#define TD_EW_T_bf16 uint16_t
#define TD_EW_DT_b8 TD_BOOL
#define TD_EW_DT_i32 TD_I32
#define TD_EW_DT_i64 TD_I64
#define TD_EW_DT_f32 TD_F32
#define TD_EW_DT_f64 TD_F64
#define TD_EW_DT_f16 TD_F16
#define TD_EW_DT_bf16 TD_BF16

/* TD_EW_DOM_<DOMAIN>(X, ...) is X(S, ...) for every dtype of DOMAIN (the
 * domains are listed in ops.def's header).  CAST expands to nothing: its
 * pairs are lang/casts.def's. */
#define TD_EW_DOM_FLOAT(X, ...) X(f32, __VA_ARGS__) X(f64, __VA_ARGS__)
#define TD_EW_DOM_NUM(X, ...) TD_EW_DOM_FLOAT(X, __VA_ARGS__) X(i32, __VA_ARGS__) X(i64, __VA_ARGS__)
#define TD_EW_DOM_ANY(X, ...) TD_EW_DOM_NUM(X, __VA_ARGS__) X(b8, __VA_ARGS__)
#define TD_EW_DOM_BOOL(X, ...) X(b8, __VA_ARGS__)
#define TD_EW_DOM_ALL(X, ...) TD_EW_DOM_ANY(X, __VA_ARGS__) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__)
#define TD_EW_DOM_CAST(X, ...)

/* One element of any dtype, in its storage type (halves: their bits). */
typedef union td_scalar {
  uint8_t b8;
  int32_t i32;
  int64_t i64;
  float f32;
  double f64;
  uint16_t f16, bf16;
} td_scalar;

/* 1 when op is elementwise (unary, binary, compare, ternary). */
int td_op_is_elementwise(td_op op);

/* 1 when elementwise op is defined on operands of dtype dt (ops.def's
 * DOMAIN; CAST: every dtype), else 0. */
int td_ew_defined(td_op op, td_dtype dt);

/* Checks an elementwise op's arity and dtypes: operands share one dtype
 * (WHERE: its values, the condition is bool), the result has it
 * (comparisons: bool), CAST takes any pair, and the op is defined on the
 * operands' dtype.  Returns 0, or -1 with err saying what is wrong. */
int td_ew_check(td_op op, const td_dtype *in, int n_in, td_dtype out, td_err *err);

/* *r = op(in[0], ..., in[n_in - 1]) for operands of dtypes in_dt and a
 * result of dtype out_dt, computed by ops.def's expression (CAST: by
 * casts.def) exactly as the interpreter computes each element.  Returns 0,
 * or -1 with err filled when td_ew_check refuses the dtypes. */
int td_ew_eval(td_op op, const td_dtype *in_dt, int n_in, td_dtype out_dt, const td_scalar *in,
               td_scalar *r, td_err *err);

#endif

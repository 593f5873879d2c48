/* opeval.c - elementwise ops on scalars, generated from lang/ops.def.
 *
 * The compiler's constant folder evaluates an elementwise node whose
 * operands are constants here; the interpreter computes the same op over
 * whole tensors in interp/elementwise.c.  Both expand ops.def's
 * TD_EW(DOMAIN, EXPR) (and casts.def for CAST) into code over the same
 * dtypes, with `a`, `b`, `c` of the element's storage type and the result
 * converted by the same C cast, so a folded value is the interpreter's bit
 * for bit (with -ffp-contract=off, which the build uses everywhere).
 *
 * The typing check (td_ew_check) is the interpreter's too, so the folder
 * folds exactly the nodes the interpreter would compute.
 */
#include "lang/opeval.h"

#include "runtime/half.h"
#include "runtime/scalar.h"

/* ---- which dtypes an op is defined on ---- */

#define TD_EW(dom, ...) dom, __VA_ARGS__
#define DEF_KIND_(K, E, ...) DEF_##K(E, __VA_ARGS__)
#define DEF_ONE_(S, E) [TD_IR_##E][TD_EW_DT_##S] = 1,
#define DEF_EW_(E, D, X) TD_EW_DOM_##D(DEF_ONE_, E)
#define DEF_TD_K_UNARY DEF_EW_
#define DEF_TD_K_BINARY DEF_EW_
#define DEF_TD_K_COMPARE DEF_EW_
#define DEF_TD_K_TERNARY DEF_EW_
#define DEF_NONE_(...)
#define DEF_TD_K_LEAF DEF_NONE_
#define DEF_TD_K_RANDOM DEF_NONE_
#define DEF_TD_K_REDUCE DEF_NONE_
#define DEF_TD_K_MATMUL DEF_NONE_
#define DEF_TD_K_CONV DEF_NONE_
#define DEF_TD_K_MOVE DEF_NONE_
#define DEF_TD_K_GATHER DEF_NONE_
#define DEF_TD_K_SCAN DEF_NONE_
#define DEF_TD_K_EFFECT DEF_NONE_
static const unsigned char ew_defined[TD_IR_OP_COUNT][TD_DTYPE_COUNT] = {
#define TD_OP(e, name, kind, arity, c) DEF_KIND_(kind, e, c)
#include "lang/ops.def"
#undef TD_OP
};

int td_op_is_elementwise(td_op op) {
  if ((unsigned)op >= TD_IR_OP_COUNT) return 0;
  td_opkind k = td_ops[op].kind;
  return k == TD_K_UNARY || k == TD_K_BINARY || k == TD_K_COMPARE || k == TD_K_TERNARY;
}

int td_ew_defined(td_op op, td_dtype dt) {
  if ((unsigned)op >= TD_IR_OP_COUNT || (unsigned)dt >= TD_DTYPE_COUNT) return 0;
  return op == TD_IR_CAST || ew_defined[op][dt];
}

/* ---- the typing check ---- */

int td_ew_check(td_op op, const td_dtype *in, int n_in, td_dtype out, td_err *err) {
  const char *name = td_ops[op].name;
  td_opkind kind = td_ops[op].kind;
  if (n_in != td_ops[op].arity)
    return td_err_set(err, "op '%s' got %d inputs, expected %d", name, n_in, td_ops[op].arity);
  if (op == TD_IR_CAST) return 0;
  td_dtype dt = kind == TD_K_TERNARY ? in[1] : in[0];
  for (int j = kind == TD_K_TERNARY ? 1 : 0; j < n_in; j++)
    if (in[j] != dt)
      return td_err_set(err, "op '%s' got operands of dtypes %s and %s", name,
                        td_dtype_name(dt), td_dtype_name(in[j]));
  td_dtype want = kind == TD_K_COMPARE ? TD_BOOL : dt;
  if (out != want || (kind == TD_K_TERNARY && in[0] != TD_BOOL))
    return td_err_set(err, "op '%s': inconsistent dtypes (result %s, operands %s)", name,
                      td_dtype_name(out), td_dtype_name(dt));
  if (!td_ew_defined(op, dt))
    return td_err_set(err, "op '%s' is not defined for %s", name, td_dtype_name(dt));
  return 0;
}

/* ---- evaluation: a case per op and dtype of its domain ---- */

#define EV_KIND_(K, E, ...) EV_##K(E, __VA_ARGS__)
#define EV_OP_(E, D, X, ONE)                                                     \
  case TD_IR_##E:                                                                \
    switch (dt) {                                                                \
      TD_EW_DOM_##D(ONE, X)                                                      \
    default: break;                                                              \
    }                                                                            \
    break;
#define EV_UN_(S, X)                                                             \
  case TD_EW_DT_##S: {                                                           \
    TD_EW_T_##S a = in[0].S;                                                     \
    r->S = (TD_EW_T_##S)(X);                                                     \
    return 0;                                                                    \
  }
#define EV_BIN_(S, X)                                                            \
  case TD_EW_DT_##S: {                                                           \
    TD_EW_T_##S a = in[0].S, b = in[1].S;                                        \
    r->S = (TD_EW_T_##S)(X);                                                     \
    return 0;                                                                    \
  }
#define EV_CMP_(S, X)                                                            \
  case TD_EW_DT_##S: {                                                           \
    TD_EW_T_##S a = in[0].S, b = in[1].S;                                        \
    r->b8 = (uint8_t)(X);                                                        \
    return 0;                                                                    \
  }
#define EV_SEL_(S, X)                                                            \
  case TD_EW_DT_##S: {                                                           \
    uint8_t a = in[0].b8;                                                        \
    TD_EW_T_##S b = in[1].S, c = in[2].S;                                        \
    r->S = (X);                                                                  \
    return 0;                                                                    \
  }
#define EV_TD_K_UNARY(E, D, X) EV_OP_(E, D, X, EV_UN_)
#define EV_TD_K_BINARY(E, D, X) EV_OP_(E, D, X, EV_BIN_)
#define EV_TD_K_COMPARE(E, D, X) EV_OP_(E, D, X, EV_CMP_)
#define EV_TD_K_TERNARY(E, D, X) EV_OP_(E, D, X, EV_SEL_)
#define EV_TD_K_LEAF DEF_NONE_
#define EV_TD_K_RANDOM DEF_NONE_
#define EV_TD_K_REDUCE DEF_NONE_
#define EV_TD_K_MATMUL DEF_NONE_
#define EV_TD_K_CONV DEF_NONE_
#define EV_TD_K_MOVE DEF_NONE_
#define EV_TD_K_GATHER DEF_NONE_
#define EV_TD_K_SCAN DEF_NONE_
#define EV_TD_K_EFFECT DEF_NONE_

/* CAST: the (from, to) pair's case of casts.def. */
static int eval_cast(td_dtype from, td_dtype to, td_scalar x, td_scalar *r) {
#define TD_CAST(F, T, X)                                                         \
  if (from == TD_EW_DT_##F && to == TD_EW_DT_##T) {                              \
    TD_EW_T_##F a = x.F;                                                         \
    r->T = (TD_EW_T_##T)(X);                                                     \
    return 0;                                                                    \
  }
#include "lang/casts.def"
#undef TD_CAST
  return -1;
}

int td_ew_eval(td_op op, const td_dtype *in_dt, int n_in, td_dtype out_dt, const td_scalar *in,
               td_scalar *r, td_err *err) {
  if (td_ew_check(op, in_dt, n_in, out_dt, err) < 0) return -1;
  if (op == TD_IR_CAST && eval_cast(in_dt[0], out_dt, in[0], r) == 0) return 0;
  td_dtype dt = td_ops[op].kind == TD_K_TERNARY ? in_dt[1] : in_dt[0];
  switch (op) {
#define TD_OP(e, name, kind, arity, c) EV_KIND_(kind, e, c)
#include "lang/ops.def"
#undef TD_OP
  default: break;
  }
  return td_err_set(err, "op '%s' has no scalar case for %s", td_ops[op].name, td_dtype_name(dt));
}

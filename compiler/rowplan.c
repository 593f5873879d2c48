/* rowplan.c - the accumulators of a row kernel's reductions (see rowplan.h).
 *
 * Every field of a td_rred follows from the reduction's op and its input's
 * dtype, by the rules both code generators used to apply themselves.
 */
#include "compiler/rowplan.h"

static int sum_or_prod(td_op op) { return op == TD_IR_SUM || op == TD_IR_PROD; }

td_rinit td_rowplan_identity(td_op op, td_dtype acc_dt, double *f, int64_t *i) {
  int fl = td_dtype_is_float(acc_dt);
  *f = 0;
  *i = 0;
  switch (op) {
  case TD_IR_SUM: case TD_IR_PROD:
    if (fl) *f = op == TD_IR_SUM ? 0 : 1;
    else *i = op == TD_IR_SUM ? 0 : 1;
    return op == TD_IR_SUM ? TD_RI_ZERO : TD_RI_ONE;
  case TD_IR_RMAX: case TD_IR_ARGMAX:
    if (fl) *f = -__builtin_inf();
    else *i = acc_dt == TD_I32 ? INT32_MIN : acc_dt == TD_I64 ? INT64_MIN : 0;
    return TD_RI_LOWEST;
  default:
    if (fl) *f = __builtin_inf();
    else *i = acc_dt == TD_I32 ? INT32_MAX : acc_dt == TD_I64 ? INT64_MAX : 1;
    return TD_RI_HIGHEST;
  }
}

/* The analysis of reduction node id. */
static td_rred describe(const td_graph *g, int id) {
  td_rred e;
  const td_node *nd = &g->nodes[id];
  td_dtype in_dt = g->nodes[nd->in[0]].dtype;
  e.node = id;
  e.src = nd->in[0];
  e.has_idx = nd->op == TD_IR_ARGMAX || nd->op == TD_IR_ARGMIN;
  if (sum_or_prod(nd->op)) e.acc_dt = td_dtype_is_float(in_dt) ? TD_F64 : TD_I64;
  else e.acc_dt = in_dt;
  e.init = td_rowplan_identity(nd->op, e.acc_dt, &e.init_f, &e.init_i);
  if (e.has_idx) e.fin_dt = TD_I64;
  else if (sum_or_prod(nd->op)) e.fin_dt = td_dtype_is_float(nd->dtype) ? TD_F64 : TD_I64;
  else e.fin_dt = nd->dtype;
  return e;
}

void td_rowplan_stage(const td_graph *g, const td_kstage *S, td_rred *out) {
  for (int i = 0; i < S->n_reds; i++) out[i] = describe(g, S->reds[i]);
}

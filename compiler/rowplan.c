/* rowplan.c - the roles of a row kernel's reductions (see rowplan.h).
 *
 * Roles come from the fusion pass's partner links; every other field of a
 * td_rred follows from the role, the reduction's op and its input's dtype,
 * by the rules both code generators used to apply themselves.
 */
#include "rowplan.h"

/* Roles and partners from S->partner: a tail whose input is an EXP makes
 * an online-softmax pair, any other pair is moments. */
static void assign_roles(const td_graph *g, const td_kstage *S, td_rred *r) {
  for (int i = 0; i < S->n_reds; i++) {
    r[i].node = S->reds[i];
    r[i].role = TD_RR_PLAIN;
    r[i].partner = -1;
  }
  for (int i = 0; i < S->n_reds; i++) {
    if (S->partner[i] < 0) continue;
    int online = g->nodes[g->nodes[S->reds[i]].in[0]].op == TD_IR_EXP;
    for (int j = 0; j < S->n_reds; j++)
      if (S->reds[j] == S->partner[i]) {
        r[j].role = online ? TD_RR_ONLINE_HEAD : TD_RR_MOMENTS_HEAD;
        r[i].role = online ? TD_RR_ONLINE_TAIL : TD_RR_MOMENTS_TAIL;
        r[i].partner = j;
      }
  }
}

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

/* The accumulator's identity: the pair accumulators sum, an online head
 * is a max whatever its op, any other reduction starts from its op's. */
static void set_identity(td_rred *r, td_op op) {
  if (r->role == TD_RR_ONLINE_TAIL || r->role == TD_RR_MOMENTS_HEAD) op = TD_IR_SUM;
  else if (r->role == TD_RR_ONLINE_HEAD) op = TD_IR_RMAX;
  r->init = td_rowplan_identity(op, r->acc_dt, &r->init_f, &r->init_i);
}

/* Every field but the role and partner, for entry i of r. */
static void describe(const td_graph *g, td_rred *r, int i) {
  td_rred *e = &r[i];
  const td_node *nd = &g->nodes[e->node];
  td_dtype in_dt = g->nodes[nd->in[0]].dtype;
  int pair = e->role == TD_RR_ONLINE_TAIL || e->role == TD_RR_MOMENTS_HEAD;
  e->src = e->role == TD_RR_ONLINE_TAIL ? g->nodes[r[e->partner].node].in[0] : nd->in[0];
  e->steps = e->role != TD_RR_ONLINE_HEAD && e->role != TD_RR_MOMENTS_TAIL;
  e->has_acc = e->role != TD_RR_MOMENTS_TAIL;
  e->has_sq = e->role == TD_RR_MOMENTS_HEAD;
  e->has_idx = e->role == TD_RR_PLAIN && (nd->op == TD_IR_ARGMAX || nd->op == TD_IR_ARGMIN);
  if (pair) e->acc_dt = TD_F64;
  else if (e->role == TD_RR_PLAIN && sum_or_prod(nd->op)) e->acc_dt = td_dtype_is_float(in_dt) ? TD_F64 : TD_I64;
  else e->acc_dt = in_dt;
  set_identity(e, nd->op);
  if (e->has_idx) e->fin_dt = TD_I64;
  else if (pair || e->role == TD_RR_MOMENTS_TAIL) e->fin_dt = TD_F64;
  else if (sum_or_prod(nd->op)) e->fin_dt = td_dtype_is_float(nd->dtype) ? TD_F64 : TD_I64;
  else e->fin_dt = nd->dtype;
  e->mu = -1;
  if (e->role == TD_RR_MOMENTS_TAIL) {   /* the tail sums sq = xc * xc with xc = x - mu */
    const td_node *sq = &g->nodes[nd->in[0]];
    e->mu = g->nodes[sq->in[0]].in[1];
  }
}

void td_rowplan_stage(const td_graph *g, const td_kstage *S, td_rred *out) {
  assign_roles(g, S, out);
  for (int i = 0; i < S->n_reds; i++) describe(g, out, i);
}

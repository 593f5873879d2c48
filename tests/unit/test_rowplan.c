/* test_rowplan.c - the reduction roles both code generators share
 * (compiler/rowplan.c).
 *
 * Small programs (softmax, layer_norm, plain sums, argmax/argmin, a chain
 * of two reductions) go through the front end, the optimiser and the
 * planner; the analysis of each REDUCE stage is checked against what the
 * program says by hand: which reduction is the max or the sum of an online
 * softmax, which is the sum(x) or the sum of squares of a moments pair,
 * what feeds each one, which accumulators it keeps, their dtypes and
 * identities, and the mean a moments tail subtracts.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "../../compiler/passes.h"
#include "../../compiler/plan.h"
#include "../../compiler/rowplan.h"
#include "elab.h"
#include "mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

static td_arena *A;

static void setup(void) { A = td_arena_new(); }
static void teardown(void) { td_arena_free(A); }

TestSuite(rowplan, .init = setup, .fini = teardown);

/* The plan of entry f of program text. */
static td_plan *plan_text(const char *text) {
  td_diags d;
  td_diags_init(&d, A);
  td_program *p = td_program_new(A, &d);
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
  int rc = td_program_load_text(p, "t.td", text);
  if (rc) td_diag_render(&d, stderr, 0);
  cr_assert_eq(rc, 0);
  td_graph *g = td_program_lower(p, "f"), *o;
  if (!g) td_diag_render(&d, stderr, 0);
  cr_assert_not_null(g);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *pl = td_plan_build(o, &e);
  cr_assert_not_null(pl, "%s", e.msg);
  return pl;
}

/* The only REDUCE kernel of p. */
static const td_kernel *reduce_kernel(const td_plan *p) {
  const td_kernel *k = NULL;
  for (int i = 0; i < p->n_kernels; i++)
    if (p->kernels[i].kind == TD_KERN_REDUCE) {
      cr_assert_null(k, "more than one REDUCE kernel");
      k = &p->kernels[i];
    }
  cr_assert_not_null(k, "no REDUCE kernel");
  return k;
}

/* The analysis of stage s of k. */
static td_rred *analyse(const td_plan *p, const td_kernel *k, int s) {
  cr_assert_lt(s, k->n_stages);
  const td_kstage *S = &k->stages[s];
  td_rred *r = td_arena_alloc(A, (size_t)(S->n_reds + 1) * sizeof *r);
  cr_assert_not_null(r);
  td_rowplan_stage(p->g, S, r);
  for (int i = 0; i < S->n_reds; i++) cr_expect_eq(r[i].node, S->reds[i]);
  return r;
}

static td_op op_of(const td_plan *p, int n) { return p->g->nodes[n].op; }

/* Index in r[0 .. n) of the reduction with op `op` (exactly one). */
static int find_op(const td_plan *p, const td_rred *r, int n, td_op op) {
  int at = -1;
  for (int i = 0; i < n; i++)
    if (op_of(p, r[i].node) == op) {
      cr_assert_eq(at, -1, "two reductions with op %d", (int)op);
      at = i;
    }
  cr_assert_geq(at, 0, "no reduction with op %d", (int)op);
  return at;
}

/* Whether node `from` depends on node `to` (through inputs). */
static int depends(const td_graph *g, int from, int to) {
  if (from == to) return 1;
  const td_node *nd = &g->nodes[from];
  for (int i = 0; i < nd->n_in; i++)
    if (nd->in[i] >= 0 && depends(g, nd->in[i], to)) return 1;
  return 0;
}

Test(rowplan, softmax_is_an_online_pair) {
  td_plan *p = plan_text("import nn\nfn f(x: f32[N, 10]) -> f32[N, 10] { nn.softmax(x) }\n");
  const td_kernel *k = reduce_kernel(p);
  cr_assert_eq(k->n_stages, 1);
  cr_assert_eq(k->stages[0].n_reds, 2);
  td_rred *r = analyse(p, k, 0);
  int h = find_op(p, r, 2, TD_IR_RMAX), t = find_op(p, r, 2, TD_IR_SUM);
  /* m = max(x): the head, a running max of x in f32 from -inf */
  cr_expect_eq(r[h].role, TD_RR_ONLINE_HEAD);
  cr_expect_eq(r[h].partner, -1);
  cr_expect_eq(op_of(p, r[h].src), TD_IR_INPUT);
  cr_expect_eq(r[h].steps, 0);
  cr_expect(r[h].has_acc && !r[h].has_sq && !r[h].has_idx);
  cr_expect_eq(r[h].acc_dt, TD_F32);
  cr_expect_eq(r[h].init, TD_RI_LOWEST);
  cr_expect(isinf(r[h].init_f) && r[h].init_f < 0);
  cr_expect_eq(r[h].fin_dt, TD_F32);
  /* s = sum(exp(x - m)): the tail, updated from x itself (the head's
   * input), not from the exp node; an f64 sum from 0 */
  cr_expect_eq(r[t].role, TD_RR_ONLINE_TAIL);
  cr_expect_eq(r[t].partner, h);
  cr_expect_eq(op_of(p, p->g->nodes[r[t].node].in[0]), TD_IR_EXP);
  cr_expect_eq(r[t].src, r[h].src);
  cr_expect_eq(r[t].steps, 1);
  cr_expect(r[t].has_acc && !r[t].has_sq && !r[t].has_idx);
  cr_expect_eq(r[t].acc_dt, TD_F64);
  cr_expect_eq(r[t].init, TD_RI_ZERO);
  cr_expect_eq(r[t].init_f, 0.0);
  cr_expect_eq(r[t].fin_dt, TD_F64);
  cr_expect_eq(r[h].mu, -1);
  cr_expect_eq(r[t].mu, -1);
}

Test(rowplan, layer_norm_is_a_moments_pair) {
  td_plan *p = plan_text("import nn\n"
                         "fn f(x: f32[N, 64], w: f32[64], b: f32[64]) -> f32[N, 64] {\n"
                         "  nn.layer_norm(x, w, b)\n}\n");
  const td_kernel *k = reduce_kernel(p);
  cr_assert_eq(k->n_stages, 1);
  cr_assert_eq(k->stages[0].n_reds, 2);
  td_rred *r = analyse(p, k, 0);
  /* sum(x) is the head (earlier), sum(xc * xc) the tail */
  int h = k->stages[0].partner[0] < 0 ? 0 : 1, t = 1 - h;
  cr_expect_eq(r[h].role, TD_RR_MOMENTS_HEAD);
  cr_expect_eq(r[t].role, TD_RR_MOMENTS_TAIL);
  cr_expect_eq(r[t].partner, h);
  cr_expect_eq(r[h].partner, -1);
  cr_expect_eq(op_of(p, r[h].src), TD_IR_INPUT);
  cr_expect_eq(op_of(p, r[t].src), TD_IR_MUL);   /* xc * xc */
  cr_expect_eq(r[h].steps, 1);
  cr_expect_eq(r[t].steps, 0);
  /* the head keeps sum(x) and sum(x * x) in f64; the tail keeps nothing */
  cr_expect(r[h].has_acc && r[h].has_sq && !r[h].has_idx);
  cr_expect(!r[t].has_acc && !r[t].has_sq && !r[t].has_idx);
  cr_expect_eq(r[h].acc_dt, TD_F64);
  cr_expect_eq(r[h].init, TD_RI_ZERO);
  cr_expect_eq(r[h].fin_dt, TD_F64);
  cr_expect_eq(r[t].fin_dt, TD_F64);
  /* mu: the mean, computed from the head, and what xc subtracts */
  cr_expect_eq(r[h].mu, -1);
  int mu = r[t].mu;
  cr_assert_geq(mu, 0);
  cr_expect(depends(p->g, mu, r[h].node));
  cr_expect_neq(op_of(p, mu), TD_IR_SUM);
  const td_node *xc = &p->g->nodes[p->g->nodes[r[t].src].in[0]];
  cr_expect_eq(xc->op, TD_IR_SUB);
  cr_expect_eq(xc->in[1], mu);
}

Test(rowplan, plain_sums_and_products) {
  td_plan *p = plan_text("fn f(x: f32[N, 8]) -> f32[N] { sum(x, axis = 1) }\n");
  td_rred *r = analyse(p, reduce_kernel(p), 0);
  cr_expect_eq(r[0].role, TD_RR_PLAIN);
  cr_expect_eq(r[0].partner, -1);
  cr_expect_eq(r[0].steps, 1);
  cr_expect(r[0].has_acc && !r[0].has_sq && !r[0].has_idx);
  cr_expect_eq(r[0].acc_dt, TD_F64);   /* float sums accumulate in f64 */
  cr_expect_eq(r[0].init, TD_RI_ZERO);
  cr_expect_eq(r[0].init_f, 0.0);
  cr_expect_eq(r[0].fin_dt, TD_F64);
  cr_expect_eq(r[0].mu, -1);

  p = plan_text("fn f(x: i32[N, 8]) { sum(x, axis = 1) }\n");
  r = analyse(p, reduce_kernel(p), 0);
  cr_expect_eq(r[0].role, TD_RR_PLAIN);
  cr_expect_eq(r[0].acc_dt, TD_I64);   /* integer sums in i64 */
  cr_expect_eq(r[0].init, TD_RI_ZERO);
  cr_expect_eq(r[0].init_i, 0);
  cr_expect_eq(r[0].fin_dt, TD_I64);

  p = plan_text("fn f(x: f64[N, 8]) -> f64[N] { prod(x, axis = 1) }\n");
  r = analyse(p, reduce_kernel(p), 0);
  cr_expect_eq(r[0].acc_dt, TD_F64);
  cr_expect_eq(r[0].init, TD_RI_ONE);
  cr_expect_eq(r[0].init_f, 1.0);
}

Test(rowplan, argmax_and_argmin_keep_an_index) {
  td_plan *p = plan_text("fn f(x: f32[N, 8]) { argmax(x, axis = 1) }\n");
  td_rred *r = analyse(p, reduce_kernel(p), 0);
  cr_expect_eq(r[0].role, TD_RR_PLAIN);
  cr_expect(r[0].has_acc && !r[0].has_sq && r[0].has_idx);
  cr_expect_eq(r[0].acc_dt, TD_F32);   /* the best value, in the input's dtype */
  cr_expect_eq(r[0].init, TD_RI_LOWEST);
  cr_expect(isinf(r[0].init_f) && r[0].init_f < 0);
  cr_expect_eq(r[0].fin_dt, TD_I64);   /* the result is the index */

  p = plan_text("fn f(x: i32[N, 8]) { argmin(x, axis = 1) }\n");
  r = analyse(p, reduce_kernel(p), 0);
  cr_expect(r[0].has_idx);
  cr_expect_eq(r[0].acc_dt, TD_I32);
  cr_expect_eq(r[0].init, TD_RI_HIGHEST);
  cr_expect_eq(r[0].init_i, INT32_MAX);
  cr_expect_eq(r[0].fin_dt, TD_I64);
}

Test(rowplan, a_chain_of_two_reductions_is_two_plain_stages) {
  /* the sum needs the finished max: two passes, nothing paired */
  td_plan *p = plan_text("fn f(x: f32[N, 8]) -> f32[N] {\n"
                         "  sum(abs(x - max(x, axis = 1, keepdims = true)), axis = 1)\n}\n");
  const td_kernel *k = reduce_kernel(p);
  cr_assert_eq(k->n_stages, 2);
  cr_assert_eq(k->stages[0].n_reds, 1);
  cr_assert_eq(k->stages[1].n_reds, 1);
  td_rred *a = analyse(p, k, 0), *b = analyse(p, k, 1);
  cr_expect_eq(op_of(p, a[0].node), TD_IR_RMAX);
  cr_expect_eq(op_of(p, b[0].node), TD_IR_SUM);
  cr_expect_eq(a[0].role, TD_RR_PLAIN);
  cr_expect_eq(b[0].role, TD_RR_PLAIN);
  cr_expect_eq(a[0].acc_dt, TD_F32);
  cr_expect_eq(a[0].init, TD_RI_LOWEST);
  cr_expect_eq(a[0].fin_dt, TD_F32);
  cr_expect_eq(b[0].acc_dt, TD_F64);
  cr_expect_eq(b[0].fin_dt, TD_F64);
  cr_expect(depends(p->g, b[0].src, a[0].node));   /* abs(x - m) reads the max */
}

Test(rowplan, identities) {
  double f;
  int64_t i;
  cr_expect_eq(td_rowplan_identity(TD_IR_RMAX, TD_I64, &f, &i), TD_RI_LOWEST);
  cr_expect_eq(i, INT64_MIN);
  cr_expect_eq(td_rowplan_identity(TD_IR_RMIN, TD_I64, &f, &i), TD_RI_HIGHEST);
  cr_expect_eq(i, INT64_MAX);
  cr_expect_eq(td_rowplan_identity(TD_IR_RMAX, TD_I32, &f, &i), TD_RI_LOWEST);
  cr_expect_eq(i, INT32_MIN);
  cr_expect_eq(td_rowplan_identity(TD_IR_RMAX, TD_BOOL, &f, &i), TD_RI_LOWEST);
  cr_expect_eq(i, 0);   /* false */
  cr_expect_eq(td_rowplan_identity(TD_IR_ARGMIN, TD_BOOL, &f, &i), TD_RI_HIGHEST);
  cr_expect_eq(i, 1);   /* true */
  cr_expect_eq(td_rowplan_identity(TD_IR_RMIN, TD_F64, &f, &i), TD_RI_HIGHEST);
  cr_expect(isinf(f) && f > 0 && i == 0);
  cr_expect_eq(td_rowplan_identity(TD_IR_PROD, TD_I64, &f, &i), TD_RI_ONE);
  cr_expect(i == 1 && f == 0.0);
}

/* test_rowplan.c - the reduction accumulators both code generators share
 * (compiler/rowplan.c).
 *
 * Small programs (softmax, layer_norm, plain sums, argmax/argmin, a chain
 * of two reductions) go through the front end, the optimiser and the
 * planner; the analysis of each REDUCE stage is checked against what the
 * program says by hand: which reductions share a pass, what feeds each
 * one, which accumulators it keeps, their dtypes and identities.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/passes.h"
#include "compiler/plan.h"
#include "compiler/rowplan.h"
#include "lang/elab.h"
#include "runtime/mem.h"

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

/* Whether node `from` depends on node `to` (through inputs). */
static int depends(const td_graph *g, int from, int to) {
  if (from == to) return 1;
  const td_node *nd = &g->nodes[from];
  for (int i = 0; i < nd->n_in; i++)
    if (nd->in[i] >= 0 && depends(g, nd->in[i], to)) return 1;
  return 0;
}

/* The only REDUCE kernel of p has two stages of one reduction each: *a
 * and *b, their analyses. */
static void two_stages(const td_plan *p, td_rred **a, td_rred **b) {
  const td_kernel *k = reduce_kernel(p);
  cr_assert_eq(k->n_stages, 2);
  cr_assert_eq(k->stages[0].n_reds, 1);
  cr_assert_eq(k->stages[1].n_reds, 1);
  *a = analyse(p, k, 0);
  *b = analyse(p, k, 1);
}

/* Softmax: the max, then the sum of exp(x - max) in a pass of its own (it
 * needs the finished max, as in eager mode): two plain stages. */
Test(rowplan, softmax_is_two_stages) {
  td_plan *p = plan_text("import nn\nfn f(x: f32[N, 10]) -> f32[N, 10] { nn.softmax(x) }\n");
  td_rred *a, *b;
  two_stages(p, &a, &b);
  /* m = max(x): a max of x in f32 from -inf */
  cr_expect_eq(op_of(p, a[0].node), TD_IR_RMAX);
  cr_expect_eq(op_of(p, a[0].src), TD_IR_INPUT);
  cr_expect(!a[0].has_idx);
  cr_expect_eq(a[0].acc_dt, TD_F32);
  cr_expect_eq(a[0].init, TD_RI_LOWEST);
  cr_expect(isinf(a[0].init_f) && a[0].init_f < 0);
  cr_expect_eq(a[0].fin_dt, TD_F32);
  /* s = sum(exp(x - m)): updated from the exp node, an f64 sum from 0 */
  cr_expect_eq(op_of(p, b[0].node), TD_IR_SUM);
  cr_expect_eq(op_of(p, b[0].src), TD_IR_EXP);
  cr_expect(depends(p->g, b[0].src, a[0].node));
  cr_expect_eq(b[0].acc_dt, TD_F64);
  cr_expect_eq(b[0].init, TD_RI_ZERO);
  cr_expect_eq(b[0].init_f, 0.0);
  cr_expect_eq(b[0].fin_dt, TD_F64);
}

/* layer_norm: the mean's sum, then the sum of (x - mean)^2: two stages. */
Test(rowplan, layer_norm_is_two_stages) {
  td_plan *p = plan_text("import nn\n"
                         "fn f(x: f32[N, 64], w: f32[64], b: f32[64]) -> f32[N, 64] {\n"
                         "  nn.layer_norm(x, w, b)\n}\n");
  td_rred *a, *b;
  two_stages(p, &a, &b);
  cr_expect_eq(op_of(p, a[0].src), TD_IR_INPUT);
  cr_expect_eq(op_of(p, b[0].src), TD_IR_MUL);   /* xc * xc */
  cr_expect(depends(p->g, b[0].src, a[0].node));
  const td_node *xc = &p->g->nodes[p->g->nodes[b[0].src].in[0]];
  cr_expect_eq(xc->op, TD_IR_SUB);
  cr_expect(depends(p->g, xc->in[1], a[0].node), "xc subtracts the mean");
  for (int s = 0; s < 2; s++) {
    td_rred *r = s ? b : a;
    cr_expect(!r[0].has_idx);
    cr_expect_eq(r[0].acc_dt, TD_F64);
    cr_expect_eq(r[0].init, TD_RI_ZERO);
    cr_expect_eq(r[0].fin_dt, TD_F64);
  }
}

Test(rowplan, plain_sums_and_products) {
  td_plan *p = plan_text("fn f(x: f32[N, 8]) -> f32[N] { sum(x, axis = 1) }\n");
  td_rred *r = analyse(p, reduce_kernel(p), 0);
  cr_expect(!r[0].has_idx);
  cr_expect_eq(r[0].acc_dt, TD_F64);   /* float sums accumulate in f64 */
  cr_expect_eq(r[0].init, TD_RI_ZERO);
  cr_expect_eq(r[0].init_f, 0.0);
  cr_expect_eq(r[0].fin_dt, TD_F64);

  p = plan_text("fn f(x: i32[N, 8]) { sum(x, axis = 1) }\n");
  r = analyse(p, reduce_kernel(p), 0);
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
  cr_expect(r[0].has_idx);
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
  /* the sum needs the finished max: two passes */
  td_plan *p = plan_text("fn f(x: f32[N, 8]) -> f32[N] {\n"
                         "  sum(abs(x - max(x, axis = 1, keepdims = true)), axis = 1)\n}\n");
  td_rred *a, *b;
  two_stages(p, &a, &b);
  cr_expect_eq(op_of(p, a[0].node), TD_IR_RMAX);
  cr_expect_eq(op_of(p, b[0].node), TD_IR_SUM);
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

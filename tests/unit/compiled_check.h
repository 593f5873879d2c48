/* compiled_check.h - what the tests of compiled code against eager mode
 * share (test_compiled.c, test_exact.c): loading a program, compiling a
 * graph, random inputs, and the exactness contract of docs/compiler.md
 * written out on its own (promised_exact) with the bit-for-bit comparison
 * it asks for.  Static functions: each test program includes it once,
 * after criterion.h.
 */
#ifndef TD_COMPILED_CHECK_H
#define TD_COMPILED_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "lang/elab.h"
#include "interp/interp.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

/* ---- one program ---- */

typedef struct prog {
  td_arena *a;
  td_diags d;
  td_program *p;
} prog;

static int load(prog *P, const char *path, const char *text) {
  P->a = td_arena_new();
  td_diags_init(&P->d, P->a);
  P->p = td_program_new(P->a, &P->d);
  td_program_add_search_dir(P->p, TDSL_SRCDIR "/stdlib");
  return text ? td_program_load_text(P->p, path, text) : td_program_load_file(P->p, path);
}

static void release_all(td_tensor **t, int n) {
  for (int i = 0; t && i < n; i++) td_tensor_release(t[i]);
  td_free(t);
}

typedef struct compiled_graph {
  td_plan *plan;
  td_compiled *c;
} compiled_graph;

static void compile_graph(const td_graph *g, compiled_graph *cg_, const char *what) {
  td_graph *o;
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s: %s", what, e.msg);
  cg_->plan = td_plan_build(o, &e);
  cr_assert_not_null(cg_->plan, "%s: %s", what, e.msg);
  cg_->c = td_compile(cg_->plan, NULL, &e);
  cr_assert_not_null(cg_->c, "%s: %s", what, e.msg);
}

/* Random inputs for g with every single-symbol size set to `size`. */
static int make_inputs(const td_graph *g, int64_t size, uint64_t seed, td_tensor **in) {
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    int64_t shape[TD_MAX_RANK], vals[64];
    for (int s = 0; s < 64; s++) vals[s] = size + s % 2;
    for (int k = 0; k < n->rank; k++) shape[k] = td_dim_eval(g, n->shape[k], vals);
    td_err e;
    in[i] = td_tensor_new(n->dtype, n->rank, shape, &e);
    if (!in[i]) return -1;
    uint64_t s = seed * 7919 + (uint64_t)i;
    for (int64_t j = 0; j < in[i]->numel; j++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(s >> 11) / 9007199254740992.0;
      td_tensor_set(in[i], j, td_dtype_is_float(n->dtype) ? 4 * u - 2 : floor(3 * u));
    }
  }
  return 0;
}

/* ---- the exactness contract (docs/compiler.md, "Exactness") ----
 *
 * Written here on its own, from the graph eager mode runs: a value is
 * promised bit for bit unless it is, or depends on, a float matmul (its
 * summation order and fused multiply-adds are the GEMM's) or a float sum
 * or product over several axes that include the innermost one (eager mode
 * sums runs of the merged innermost axes; the row kernel loops over axes).
 * Float sums over one axis, or with the innermost axis kept, follow eager
 * mode's order; every other op computes eager mode's formula. */

/* Is the innermost axis of size other than 1 of x reduced by axes, and
 * how many reduced axes have a size other than 1?  (A symbolic size
 * counts as other than 1.) */
static void reduced_shape(const td_node *x, uint32_t axes, int *inner_reduced, int *n_real) {
  *inner_reduced = 0;
  *n_real = 0;
  for (int a = 0; a < x->rank; a++)
    if ((axes >> a & 1) && x->shape[a] != 1) ++*n_real;
  for (int a = x->rank - 1; a >= 0; a--)
    if (x->shape[a] != 1) {
      *inner_reduced = axes >> a & 1;
      break;
    }
}

/* Does the contract promise node n of g bit for bit?  memo[n]: 0 unknown,
 * 1 yes, 2 no. */
static int promised_exact(const td_graph *g, int n, char *memo) {
  if (memo[n]) return memo[n] == 1;
  const td_node *nd = &g->nodes[n];
  int ok = 1;
  for (int k = 0; k < nd->n_in && ok; k++) ok = promised_exact(g, nd->in[k], memo);
  if (ok && (nd->op == TD_IR_MATMUL || nd->op == TD_IR_CONV)) ok = !td_dtype_is_float(nd->dtype);
  if (ok && (nd->op == TD_IR_SUM || nd->op == TD_IR_PROD)) {
    const td_node *x = &g->nodes[nd->in[0]];
    int inner, n_real;
    reduced_shape(x, nd->attr.axes, &inner, &n_real);
    ok = !td_dtype_is_float(x->dtype) || !inner || n_real <= 1;
  }
  if (ok && nd->op == TD_IR_SCAN) {   /* each step computes its body's ops: exact when they all are */
    const td_graph *b = nd->attr.body;
    char *bm = calloc((size_t)b->n_nodes + 1, 1);
    ok = bm != NULL;
    for (int k = 0; k < b->n_outputs && ok; k++) ok = promised_exact(b, b->outputs[k], bm);
    free(bm);
  }
  memo[n] = ok ? 1 : 2;
  return ok;
}

/* NULL when got and want have the same bits (any NaN for a NaN), else a
 * description (static buffer). */
static const char *differ_bits(const td_tensor *got, const td_tensor *want) {
  static char why[256];
  size_t es = td_dtype_size(want->dtype);
  for (int64_t i = 0; i < want->numel; i++) {
    const char *a = (const char *)got->data + i * (int64_t)es, *b = (const char *)want->data + i * (int64_t)es;
    if (!memcmp(a, b, es)) continue;
    double x = td_tensor_get(got, i), y = td_tensor_get(want, i);
    if (isnan(x) && isnan(y)) continue;
    snprintf(why, sizeof why, "element %lld: compiled %.9g, eager %.9g: not the same bits, as the contract promises",
             (long long)i, x, y);
    return why;
  }
  return NULL;
}

#endif

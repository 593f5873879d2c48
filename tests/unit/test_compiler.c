/* test_compiler.c - the optimisation passes, fusion and the kernel plan.
 *
 * Pass tests build small graphs by hand, optimise them, check the shape of
 * the result (the folded, merged or removed nodes are gone) and run both
 * the original and the optimised graph with the interpreter on the same
 * random inputs, comparing each against a reference computed here in plain
 * C.  Fusion tests lower real programs (the examples and stdlib functions)
 * and assert how many kernels the plan has and what they contain; memory
 * plan tests check that buffers sharing arena memory never live at the same
 * time and that inputs, parameters and outputs stay out of the arena.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/explain.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "lang/elab.h"
#include "lang/opeval.h"
#include "interp/interp.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

static td_arena *A;
static td_graph *G;

static void setup(void) {
  A = td_arena_new();
  G = td_graph_new(A, "t");
}
static void teardown(void) { td_arena_free(A); }

TestSuite(passes, .init = setup, .fini = teardown);
TestSuite(fusion, .init = setup, .fini = teardown);
TestSuite(memplan, .init = setup, .fini = teardown);
TestSuite(explain, .init = setup, .fini = teardown);

/* ---- graph building ---- */

static td_span at(int line) {
  td_span s = {-1, 0, 0, line, 1};
  return s;
}

static int input(const char *name, td_dtype dt, int rank, const td_dim *shape) {
  td_attr a;
  memset(&a, 0, sizeof a);
  a.i = G->n_inputs;
  int id = td_graph_add(G, TD_IR_INPUT, dt, rank, shape, NULL, 0, &a, at(1));
  cr_assert_geq(id, 0);
  G->nodes[id].name = name;
  return id;
}

static int cnst(td_dtype dt, double v) {
  td_attr a;
  memset(&a, 0, sizeof a);
  a.f = v;
  a.i = (int64_t)v;
  return td_graph_add(G, TD_IR_CONST, dt, 0, NULL, NULL, 0, &a, at(2));
}

static int node(td_op op, td_dtype dt, int rank, const td_dim *shape, const int *in, int n_in,
                const td_attr *a) {
  td_attr z;
  memset(&z, 0, sizeof z);
  int id = td_graph_add(G, op, dt, rank, shape, in, n_in, a ? a : &z, at(3));
  cr_assert_geq(id, 0);
  return id;
}

static int un(td_op op, int x) {
  const td_node *n = &G->nodes[x];
  return node(op, n->dtype, n->rank, n->shape, &x, 1, NULL);
}

/* Binary op with the shape of the higher-rank operand. */
static int bin(td_op op, int x, int y) {
  int in[2] = {x, y};
  const td_node *n = G->nodes[x].rank >= G->nodes[y].rank ? &G->nodes[x] : &G->nodes[y];
  return node(op, n->dtype, n->rank, n->shape, in, 2, NULL);
}

static int permute(int x, const int *perm) {
  const td_node *n = &G->nodes[x];
  td_attr a;
  memset(&a, 0, sizeof a);
  td_dim shape[TD_MAX_RANK];
  for (int i = 0; i < n->rank; i++) {
    a.perm[i] = perm[i];
    shape[i] = n->shape[perm[i]];
  }
  return node(TD_IR_PERMUTE, n->dtype, n->rank, shape, &x, 1, &a);
}

static int reshape(int x, int rank, const td_dim *shape) {
  return node(TD_IR_RESHAPE, G->nodes[x].dtype, rank, shape, &x, 1, NULL);
}

static void out(int id) { cr_assert_eq(td_graph_add_output(G, id), 0); }

static int count_op(const td_graph *g, td_op op) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
  return n;
}

static td_graph *optimize(td_graph *g) {
  td_graph *o = NULL;
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  cr_assert_eq(td_graph_verify(o, &e), 0, "%s", e.msg);
  return o;
}

/* ---- running ---- */

/* f32 tensor of the given shape with values in [-2, 2) from a fixed LCG. */
static td_tensor *random_tensor(int rank, const int64_t *shape, uint64_t seed) {
  td_err e;
  td_tensor *t = td_tensor_new(TD_F32, rank, shape, &e);
  cr_assert_not_null(t);
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (int64_t i = 0; i < t->numel; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ((float *)t->data)[i] = (float)(4.0 * (double)(s >> 11) / 9007199254740992.0 - 2.0);
  }
  return t;
}

/* Runs g on one input and returns its only output. */
static td_tensor *run1(const td_graph *g, td_tensor *x) {
  td_tensor **outs = NULL;
  td_err e;
  cr_assert_eq(td_interp_run(g, &x, NULL, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  td_tensor *t = outs[0];
  td_free(outs);
  return t;
}

typedef double (*ref_fn)(const td_tensor *x, int64_t i);

/* Runs the original and the optimised graph on x and checks both against
 * ref element by element. */
static void check_both(td_graph *g, td_graph *o, td_tensor *x, ref_fn ref) {
  const td_graph *gs[2] = {g, o};
  for (int k = 0; k < 2; k++) {
    td_tensor *y = run1(gs[k], x);
    for (int64_t i = 0; i < y->numel; i++) {
      double want = ref(x, i), got = ((float *)y->data)[i];
      cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "%s graph, element %lld: %g vs %g",
                k ? "optimised" : "original", (long long)i, got, want);
    }
    td_tensor_release(y);
  }
}

static double X(const td_tensor *x, int64_t i) { return ((const float *)x->data)[i]; }

/* ---- passes ---- */

static double ref_plus6(const td_tensor *x, int64_t i) { return X(x, i) + 6.0; }

Test(passes, folds_constant_arithmetic) {
  td_dim s[1] = {5};
  int x = input("x", TD_F32, 1, s);
  int m = bin(TD_IR_MUL, cnst(TD_F32, 2), cnst(TD_F32, 3));
  out(bin(TD_IR_ADD, x, m));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_MUL), 0);
  int found6 = 0;
  for (int i = 0; i < o->n_nodes; i++)
    found6 |= o->nodes[i].op == TD_IR_CONST && o->nodes[i].attr.f == 6.0;
  cr_expect(found6, "2*3 was not folded into 6");
  int64_t sh[1] = {5};
  td_tensor *t = random_tensor(1, sh, 1);
  check_both(G, o, t, ref_plus6);
  td_tensor_release(t);
}

Test(passes, folds_integer_floor_division_like_the_interpreter) {
  int d = bin(TD_IR_DIV, cnst(TD_I64, -7), cnst(TD_I64, 2));
  out(d);
  td_graph *o = optimize(G);
  const td_node *r = &o->nodes[o->outputs[0]];
  cr_assert_eq(r->op, TD_IR_CONST);
  cr_expect_eq(r->attr.i, -4); /* Python's -7 // 2 */
}

/* Folding computes what the interpreter computes: for every elementwise op
 * of ops.def and every dtype, a graph of the op over every tuple of probe
 * constants (NaN, infinities, -0, integer extremes, zero divisors) is
 * folded, and each folded output has the bits the interpreter gives the
 * unfolded graph (NaNs: any NaN).  Ops outside their domain (f16/bf16
 * arithmetic, which runs in f32, and e.g. exp on ints) stay unfolded. */
static const double FOLD_F[] = {0.0, -0.0, 0.5, -1.5, 2.5, 3.0, -7.25, 1e30, 70000.0, INFINITY, -INFINITY, NAN};
static const int64_t FOLD_I[] = {0, 1, -1, 2, -7, 31, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
#define N_FF ((int)(sizeof FOLD_F / sizeof FOLD_F[0]))
#define N_FI ((int)(sizeof FOLD_I / sizeof FOLD_I[0]))

static int fold_probes(td_dtype dt) { return dt == TD_BOOL ? 2 : td_dtype_is_float(dt) ? N_FF : N_FI; }

static int fold_const(td_dtype dt, int i) {
  td_attr a;
  memset(&a, 0, sizeof a);
  if (td_dtype_is_float(dt)) a.f = FOLD_F[i];
  else a.i = dt == TD_BOOL ? i : FOLD_I[i];
  int id = td_graph_add(G, TD_IR_CONST, dt, 0, NULL, NULL, 0, &a, at(2));
  cr_assert_geq(id, 0);
  return id;
}

static int any_nan(const td_tensor *t) {
  return td_dtype_is_float(t->dtype) && isnan(td_tensor_get(t, 0));
}

static void check_fold(td_op op, td_dtype dt, td_dtype odt) {
  teardown();
  setup();
  int arity = td_ops[op].arity, n = 1;
  td_dtype dts[3] = {td_ops[op].kind == TD_K_TERNARY ? TD_BOOL : dt, dt, dt};
  for (int k = 0; k < arity; k++) n *= fold_probes(dts[k]);
  for (int i = 0; i < n; i++) {
    int in[3], r = i;
    for (int k = 0; k < arity; k++) {
      in[k] = fold_const(dts[k], r % fold_probes(dts[k]));
      r /= fold_probes(dts[k]);
    }
    out(node(op, odt, 0, NULL, in, arity, NULL));
  }
  td_err e;
  td_graph *f = td_pass_fold(G, &e);
  cr_assert_not_null(f, "%s", e.msg);
  int folds = op == TD_IR_CAST || td_ew_defined(op, dt);
  for (int k = 0; k < n; k++)
    cr_assert_eq(f->nodes[f->outputs[k]].op == TD_IR_CONST, folds, "%s on %s: output %d %s",
                 td_ops[op].name, td_dtype_name(dt), k, folds ? "not folded" : "folded");
  /* the interpreter refuses it too, unless it runs it in f32 */
  if (!folds && !(td_dtype_is_half(dt) && td_ew_defined(op, TD_F32))) return;
  td_tensor **a = NULL, **b = NULL;
  cr_assert_eq(td_interp_run(G, NULL, NULL, NULL, &a, &e, NULL), 0, "%s", e.msg);
  cr_assert_eq(td_interp_run(f, NULL, NULL, NULL, &b, &e, NULL), 0, "%s", e.msg);
  for (int k = 0; k < n; k++) {
    int same = memcmp(a[k]->data, b[k]->data, td_dtype_size(odt)) == 0 || (any_nan(a[k]) && any_nan(b[k]));
    cr_expect(same, "%s %s -> %s, output %d: folded %.17g, interpreted %.17g", td_ops[op].name,
              td_dtype_name(dt), td_dtype_name(odt), k, td_tensor_get(b[k], 0), td_tensor_get(a[k], 0));
    td_tensor_release(a[k]);
    td_tensor_release(b[k]);
  }
  td_free(a);
  td_free(b);
}

Test(passes, folding_gives_the_interpreters_bits_for_every_op_and_dtype) {
  for (int op = 0; op < TD_IR_OP_COUNT; op++)
    for (int dt = 0; td_op_is_elementwise((td_op)op) && dt < TD_DTYPE_COUNT; dt++)
      for (int to = 0; to < TD_DTYPE_COUNT; to++) {
        td_dtype natural = td_ops[op].kind == TD_K_COMPARE ? TD_BOOL : (td_dtype)dt;
        if (op == TD_IR_CAST || to == (int)natural) check_fold((td_op)op, (td_dtype)dt, (td_dtype)to);
      }
}

static double ref_2exp(const td_tensor *x, int64_t i) { return 2.0 * exp(X(x, i)); }

Test(passes, cse_merges_duplicate_subexpressions) {
  int n = td_sym_new(G, "N");
  td_dim s[2] = {td_dim_sym(G, n), 4};
  int x = input("x", TD_F32, 2, s);
  int a = un(TD_IR_EXP, x), b = un(TD_IR_EXP, x);
  out(bin(TD_IR_ADD, a, b));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(G, TD_IR_EXP), 2);
  cr_expect_eq(count_op(o, TD_IR_EXP), 1);
  int64_t sh[2] = {3, 4};
  td_tensor *t = random_tensor(2, sh, 2);
  check_both(G, o, t, ref_2exp);
  td_tensor_release(t);
}

static double ref_cos(const td_tensor *x, int64_t i) { return cos(X(x, i)); }

Test(passes, dce_removes_unused_nodes_but_keeps_inputs_and_prints) {
  td_dim s[1] = {6};
  int x = input("x", TD_F32, 1, s);
  input("unused", TD_F32, 1, s);
  un(TD_IR_SIN, x);                       /* dead */
  int c = un(TD_IR_COS, x);
  td_print_part part = {NULL, 0};
  td_attr pa;
  memset(&pa, 0, sizeof pa);
  pa.parts = &part;
  pa.n_parts = 1;
  int t = un(TD_IR_TANH, x);
  node(TD_IR_PRINT, TD_F32, 0, NULL, &t, 1, &pa);
  out(c);
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_SIN), 0);
  cr_expect_eq(count_op(o, TD_IR_TANH), 1, "a printed value must stay");
  cr_expect_eq(count_op(o, TD_IR_PRINT), 1);
  cr_expect_eq(o->n_inputs, 2, "unused arguments stay: they are the entry's interface");
  int64_t sh[1] = {6};
  td_tensor *tx = random_tensor(1, sh, 3), *tu = random_tensor(1, sh, 4);
  td_tensor *ins[2] = {tx, tu}, **outs = NULL;
  td_err e;
  cr_assert_eq(td_interp_run(o, ins, NULL, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  for (int64_t i = 0; i < 6; i++)
    cr_expect_float_eq(((float *)outs[0]->data)[i], ref_cos(tx, i), 1e-6);
  td_tensor_release(outs[0]);
  td_free(outs);
  td_tensor_release(tx);
  td_tensor_release(tu);
}

static double ref_relu(const td_tensor *x, int64_t i) { return X(x, i) < 0 ? 0 : X(x, i); }

Test(passes, simplify_removes_multiplying_by_one_and_adding_zero) {
  td_dim s[2] = {3, 5};
  int x = input("x", TD_F32, 2, s);
  int y = bin(TD_IR_MUL, x, cnst(TD_F32, 1));
  y = bin(TD_IR_MUL, cnst(TD_F32, 1), y);
  y = bin(TD_IR_ADD, y, cnst(TD_F32, -0.0));   /* x + (-0.0) is x, signed zeros too */
  y = bin(TD_IR_ADD, cnst(TD_F32, -0.0), y);
  y = bin(TD_IR_SUB, y, cnst(TD_F32, 0));
  y = bin(TD_IR_DIV, y, cnst(TD_F32, 1));
  out(un(TD_IR_RELU, y));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_MUL) + count_op(o, TD_IR_ADD) + count_op(o, TD_IR_SUB) +
                   count_op(o, TD_IR_DIV), 0);
  cr_expect_eq(td_graph_count_ops(o), 1, "only relu is left");
  int64_t sh[2] = {3, 5};
  td_tensor *t = random_tensor(2, sh, 5);
  check_both(G, o, t, ref_relu);
  td_tensor_release(t);
}

/* -0.0 + 0.0 is +0.0 and -0.0 - (-0.0) too: on floats x + 0 and x - (-0.0)
 * are not x, so they stay (eager mode computes them); on integers they go. */
Test(passes, simplify_keeps_adding_positive_zero_to_a_float) {
  td_dim s[1] = {4};
  int x = input("x", TD_F32, 1, s), k = input("k", TD_I64, 1, s);
  out(bin(TD_IR_ADD, x, cnst(TD_F32, 0)));
  out(bin(TD_IR_ADD, cnst(TD_F32, 0), x));
  out(bin(TD_IR_SUB, x, cnst(TD_F32, -0.0)));
  out(bin(TD_IR_ADD, k, cnst(TD_I64, 0)));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_ADD), 2, "the float additions of +0.0 stay, the integer one goes");
  cr_expect_eq(count_op(o, TD_IR_SUB), 1);
}

Test(passes, simplify_keeps_a_multiply_that_broadcasts) {
  td_dim s[1] = {4}, big[2] = {3, 4};
  int x = input("x", TD_F32, 1, s);
  int in[2] = {x, cnst(TD_F32, 1)};
  out(node(TD_IR_MUL, TD_F32, 2, big, in, 2, NULL)); /* x*1 broadcast to [3, 4] */
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_MUL), 1, "x is [4], the result [3, 4]: not an identity");
}

/* neg(transpose(transpose(x))) over a [3, 5] x. */
static double ref_neg(const td_tensor *x, int64_t i) { return -X(x, i); }

Test(passes, transpose_of_transpose_is_removed) {
  td_dim s[2] = {3, 5};
  int x = input("x", TD_F32, 2, s);
  int p[2] = {1, 0};
  out(un(TD_IR_NEG, permute(permute(x, p), p)));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_PERMUTE), 0);
  int64_t sh[2] = {3, 5};
  td_tensor *t = random_tensor(2, sh, 6);
  check_both(G, o, t, ref_neg);
  td_tensor_release(t);
}

/* permute(permute(x, [1,2,0]), [1,2,0]) == permute(x, [2,0,1]) */
static double ref_perm201(const td_tensor *x, int64_t i) {
  /* y[a][b][c] = x[b][c][a] with x [2,3,4], y [4,2,3] */
  int64_t a = i / 6, b = (i / 3) % 2, c = i % 3;
  return X(x, b * 12 + c * 4 + a);
}

Test(passes, permute_chains_compose) {
  td_dim s[3] = {2, 3, 4};
  int x = input("x", TD_F32, 3, s);
  int p[3] = {1, 2, 0};
  out(permute(permute(x, p), p));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_PERMUTE), 1);
  int64_t sh[3] = {2, 3, 4};
  td_tensor *t = random_tensor(3, sh, 7);
  check_both(G, o, t, ref_perm201);
  td_tensor_release(t);
}

Test(passes, reshape_chain_collapses) {
  td_dim s[3] = {2, 3, 4}, s1[2] = {6, 4}, s2[1] = {24}, s3[2] = {4, 6};
  int x = input("x", TD_F32, 3, s);
  out(un(TD_IR_NEG, reshape(reshape(reshape(x, 2, s1), 1, s2), 2, s3)));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_RESHAPE), 1);
  int64_t sh[3] = {2, 3, 4};
  td_tensor *t = random_tensor(3, sh, 8);
  check_both(G, o, t, ref_neg);
  td_tensor_release(t);
}

Test(passes, reshape_back_to_the_same_shape_disappears) {
  td_dim s[2] = {4, 6}, s1[1] = {24};
  int x = input("x", TD_F32, 2, s);
  out(un(TD_IR_NEG, reshape(reshape(x, 1, s1), 2, s)));
  td_graph *o = optimize(G);
  cr_expect_eq(count_op(o, TD_IR_RESHAPE), 0);
  int64_t sh[2] = {4, 6};
  td_tensor *t = random_tensor(2, sh, 9);
  check_both(G, o, t, ref_neg);
  td_tensor_release(t);
}

static int dumped;
static void count_dumps(void *ud, const char *pass, const td_graph *g) {
  (void)ud;
  (void)g;
  if (!strcmp(pass, "cse")) dumped++;
}

Test(passes, dump_hook_sees_the_chosen_passes) {
  td_dim s[1] = {3};
  out(un(TD_IR_EXP, input("x", TD_F32, 1, s)));
  td_opt_opts o = {count_dumps, NULL, 1u << td_pass_index("cse", 3)};
  td_graph *r;
  td_err e;
  dumped = 0;
  cr_assert_eq(td_optimize(G, &o, &r, NULL, &e), 0);
  cr_expect_eq(dumped, 2, "cse runs twice in the pipeline");
  cr_expect_eq(td_pass_index("nope", 4), -1);
}

Test(passes, out_of_memory_is_reported_not_crashed) {
  td_dim s[1] = {3};
  int x = input("x", TD_F32, 1, s);
  out(bin(TD_IR_ADD, un(TD_IR_EXP, x), un(TD_IR_EXP, x)));
  for (long n = 1; n < 200; n++) {
    td_graph *r = NULL;
    td_err e;
    td_mem_fail_after(n);
    int rc = td_optimize(G, NULL, &r, NULL, &e);
    td_mem_fail_after(0);
    if (rc == 0) break;
    cr_expect(strstr(e.msg, "out of memory") != NULL, "%s", e.msg);
  }
}

/* ---- programs ---- */

typedef struct prog {
  td_diags d;
  td_program *p;
} prog;

static prog P;

static void load(const char *path, const char *text) {
  td_diags_init(&P.d, A);
  P.p = td_program_new(A, &P.d);
  td_program_add_search_dir(P.p, TDSL_SRCDIR "/stdlib");
  int rc = text ? td_program_load_text(P.p, path, text) : td_program_load_file(P.p, path);
  if (rc) td_diag_render(&P.d, stderr, 0);
  cr_assert_eq(rc, 0, "cannot load %s", path);
}

static td_plan *plan_of(const char *entry, td_opt_stats *st) {
  td_graph *g = td_program_lower(P.p, entry), *o;
  if (!g) td_diag_render(&P.d, stderr, 0);
  cr_assert_not_null(g, "cannot lower %s", entry);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, st, &e), 0, "%s", e.msg);
  td_plan *p = td_plan_build(o, &e);
  cr_assert_not_null(p, "%s", e.msg);
  return p;
}

static td_plan *plan_file(const char *rel, const char *entry) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TDSL_SRCDIR, rel);
  load(path, NULL);
  return plan_of(entry, NULL);
}

static td_plan *plan_text(const char *text, const char *entry) {
  load("t.td", text);
  return plan_of(entry, NULL);
}

static int kernel_has(const td_plan *p, const td_kernel *k, td_op op) {
  for (int i = 0; i < k->n_nodes; i++)
    if (p->g->nodes[k->nodes[i]].op == op) return 1;
  return 0;
}

/* ---- fusion ---- */

Test(fusion, linear_bias_relu_is_one_matmul_kernel) {
  td_plan *p = plan_file("examples/seed/simple.td", "Simple.forward");
  cr_assert_eq(p->n_kernels, 1);
  const td_kernel *k = &p->kernels[0];
  cr_expect_eq(k->kind, TD_KERN_MATMUL);
  cr_expect(kernel_has(p, k, TD_IR_ADD) && kernel_has(p, k, TD_IR_RELU), "epilogue: bias and relu");
  cr_expect(kernel_has(p, k, TD_IR_PERMUTE), "weight.T is read as a strided view");
  cr_expect_eq(k->b.base, p->g->params[0], "the matmul reads fc.weight in place");
  /* weight [2, 4] read transposed: element (k, j) at j*4 + k */
  cr_expect_eq(k->b.stride[0], 1);
  cr_expect_eq(k->b.stride[1], 4);
}

Test(fusion, mlp_is_one_kernel_per_layer) {
  td_plan *p = plan_file("examples/mlp.td", "MLP.forward");
  cr_assert_eq(p->n_kernels, 3);
  for (int i = 0; i < 3; i++) {
    cr_expect_eq(p->kernels[i].kind, TD_KERN_MATMUL);
    cr_expect(kernel_has(p, &p->kernels[i], TD_IR_ADD));
    cr_expect_eq(kernel_has(p, &p->kernels[i], TD_IR_RELU), i < 2);
  }
  /* FLOPs of layer 1 for every N: 2*784*512 per row for the matmul, plus
   * bias add and relu (512 each) */
  for (int64_t n = 0; n < 5; n++) {
    int64_t sym[4] = {n, n, n, n};
    cr_expect_eq(td_dim_eval(p->g, p->kernels[0].flops, sym), n * (2 * 784 * 512 + 2 * 512));
    cr_expect_eq(td_dim_eval(p->g, p->kernels[0].bytes_written, sym), n * 512 * 4);
  }
}

/* Issue 12's program: terms of five and six symbols (the byte counts of
 * f32[A, B, C, D, E]).  With four symbols per term they used to become 0
 * ("bytes moved: 0").  The costs must match counts made here from the
 * values of the sizes. */
Test(fusion, costs_of_five_symbol_shapes) {
  td_plan *p = plan_text("fn f(x: f32[A, B, C, D, E], w: f32[E, F]) -> f32[A, B, C, D, F] {\n"
                         "  let y = exp(x) * 2.0\n"
                         "  tanh(y @ w) + sum(y, axis = 4, keepdims = true)\n"
                         "}\n", "f");
  int64_t v[6] = {2, 3, 5, 7, 11, 13}; /* A .. F, in the order they were bound */
  cr_assert_eq(p->g->n_syms, 6);
  int64_t abcd = v[0] * v[1] * v[2] * v[3], x = abcd * v[4], out = abcd * v[5];
  /* exp, mul and sum over x; 2*E per element of the matmul; tanh and add over the output */
  int64_t want_flops = 3 * x + 2 * v[4] * out + 2 * out, flops = 0, written = 0;
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    flops += td_dim_eval(p->g, kn->flops, v);
    written += td_dim_eval(p->g, kn->bytes_written, v);
    int64_t numel = 1;
    for (int d = 0; d < p->g->nodes[kn->root].rank; d++) numel *= td_dim_eval(p->g, p->g->nodes[kn->root].shape[d], v);
    cr_expect_eq(td_dim_eval(p->g, kn->bytes_written, v), 4 * numel, "kernel %s", kn->name);
    cr_expect_gt(td_dim_eval(p->g, kn->bytes_read, v), 0, "kernel %s", kn->name);
  }
  cr_expect_eq(flops, want_flops);
  cr_expect_geq(written, 4 * (out + abcd), "at least the output and the row sums");
  cr_expect_eq(td_dim_eval(p->g, p->output_bytes, v), 4 * out);
  cr_expect_geq(td_dim_eval(p->g, p->arena_bytes, v), 4 * abcd);
}

Test(fusion, good_where_is_at_most_two_kernels) {
  td_plan *p = plan_file("examples/seed/good_where.td", "GoodWhere.forward");
  cr_expect_leq(p->n_kernels, 2);
  int where = 0;
  for (int i = 0; i < p->n_kernels; i++) where |= kernel_has(p, &p->kernels[i], TD_IR_WHERE);
  cr_expect(where);
}

/* The max, the sum of exp(x - max) (which needs the finished max) and the
 * output: three passes over each row of one kernel, as eager mode computes
 * them (docs/compiler.md, "Exactness"). */
Test(fusion, softmax_is_one_kernel_with_three_passes) {
  td_plan *p = plan_text("import nn\nfn f(x: f32[N, 10]) -> f32[N, 10] { nn.softmax(x) }\n", "f");
  cr_assert_eq(p->n_kernels, 1);
  const td_kernel *k = &p->kernels[0];
  cr_expect_eq(k->kind, TD_KERN_REDUCE);
  cr_expect_eq(k->red_axes, 2u);
  cr_expect_eq(k->n_stages, 2, "the max, then the sum");
  cr_expect_eq(k->n_passes, 3);
}

/* The mean, the variance (which needs the mean) and the output. */
Test(fusion, layer_norm_is_one_kernel_with_three_passes) {
  td_plan *p = plan_text("import nn\n"
                         "fn f(x: f32[N, 64], w: f32[64], b: f32[64]) -> f32[N, 64] {\n"
                         "  nn.layer_norm(x, w, b)\n}\n", "f");
  cr_assert_eq(p->n_kernels, 1);
  cr_expect_eq(p->kernels[0].kind, TD_KERN_REDUCE);
  cr_expect_eq(p->kernels[0].n_stages, 2);
  cr_expect_eq(p->kernels[0].n_passes, 3);
}

Test(fusion, reduction_along_the_first_axis_fuses_with_its_consumer) {
  td_plan *p = plan_text("fn f(x: f32[N, 8]) -> f32[N, 8] {\n"
                         "  x - mean(x, axis = 0, keepdims = true)\n}\n", "f");
  cr_assert_eq(p->n_kernels, 1);
  cr_expect_eq(p->kernels[0].kind, TD_KERN_REDUCE);
  cr_expect_eq(p->kernels[0].red_axes, 1u);
}

Test(fusion, pointwise_chain_with_broadcast_and_transpose_is_one_kernel) {
  td_plan *p = plan_text("fn f(x: f32[N, 8], b: f32[8]) -> f32[8, N] {\n"
                         "  transpose(tanh(x * 2 + b), 0, 1) * 3\n}\n", "f");
  cr_assert_eq(p->n_kernels, 1);
  cr_expect_eq(p->kernels[0].kind, TD_KERN_POINTWISE);
  cr_expect_eq(p->kernels[0].n_reads, 2, "reads x and b only");
}

Test(fusion, transformer_block_fuses_below_its_op_count) {
  td_opt_stats st;
  char path[512];
  snprintf(path, sizeof path, "%s/examples/transformer.td", TDSL_SRCDIR);
  load(path, NULL);
  td_plan *p = plan_of("Block.forward", &st);
  cr_expect_lt(p->n_kernels, p->n_ops);
  cr_expect_leq(p->n_kernels, 12);
  int matmuls = 0, reduces = 0;
  for (int i = 0; i < p->n_kernels; i++) {
    matmuls += p->kernels[i].kind == TD_KERN_MATMUL;
    reduces += p->kernels[i].kind == TD_KERN_REDUCE;
    if (p->kernels[i].kind == TD_KERN_REDUCE) cr_expect_leq(p->kernels[i].n_passes, 3);
  }
  cr_expect_eq(matmuls, 8, "q, k, v, scores, weights@v, out, fc1, fc2");
  cr_expect_eq(reduces, 3, "two layer norms and the softmax");
}

/* ---- memory plan ---- */

static void check_memory(const td_plan *p) {
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *a = &p->bufs[i];
    const td_node *n = &p->g->nodes[a->node];
    if (n->op == TD_IR_INPUT) cr_expect_eq(a->kind, TD_BUF_INPUT);
    if (n->op == TD_IR_PARAM) cr_expect_eq(a->kind, TD_BUF_PARAM);
    for (int k = 0; k < p->g->n_outputs; k++)
      if (p->g->outputs[k] == a->node && n->op != TD_IR_INPUT && n->op != TD_IR_PARAM)
        cr_expect_eq(a->kind, TD_BUF_OUTPUT);
    if (a->kind != TD_BUF_TEMP) continue;
    cr_expect_geq(a->last, a->first, "a temporary is read after it is written");
    cr_expect(td_dim_le(p->g, a->bytes, p->slot_bytes[a->index]), "buffer fits its slot");
    for (int j = i + 1; j < p->n_bufs; j++) {
      const td_buffer *b = &p->bufs[j];
      if (b->kind != TD_BUF_TEMP || b->index != a->index) continue;
      cr_expect(b->first > a->last || a->first > b->last,
                "buffers %%%d and %%%d share slot %d while both are live", a->node, b->node, a->index);
    }
  }
}

Test(memplan, transformer_buffers_reuse_memory_safely) {
  td_plan *p = plan_file("examples/transformer.td", "Block.forward");
  check_memory(p);
  int temps = 0;
  for (int i = 0; i < p->n_bufs; i++) temps += p->bufs[i].kind == TD_BUF_TEMP;
  cr_expect_lt(p->n_slots, temps, "some slot is reused");
  /* the arena is smaller than the sum of all temporaries, for any B and T */
  td_dim sum = 0;
  for (int i = 0; i < p->n_bufs; i++)
    if (p->bufs[i].kind == TD_BUF_TEMP) sum = td_dim_add(p->g, sum, p->bufs[i].bytes);
  int64_t vals[8] = {2, 8, 2, 8, 2, 8, 2, 8};
  cr_expect_lt(td_dim_eval(p->g, p->arena_bytes, vals), td_dim_eval(p->g, sum, vals));
}

Test(memplan, mlp_predict_plan_is_consistent) {
  td_plan *p = plan_file("examples/mlp.td", "MLP.predict");
  check_memory(p);
  cr_expect_eq(p->n_out_nodes, 2);
}

Test(memplan, printed_values_become_outputs) {
  td_plan *p = plan_file("examples/mlp.td", "main");
  check_memory(p);
  cr_expect_eq(p->n_out_nodes, 3, "three printed tensors");
  for (int i = 0; i < p->n_out_nodes; i++)
    cr_expect_eq(p->bufs[p->buf_of[p->out_nodes[i]]].kind, TD_BUF_OUTPUT);
}

/* ---- explain ---- */

static char *explain_text(const char *rel, td_explain_fmt fmt) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TDSL_SRCDIR, rel);
  load(path, NULL);
  const char **names;
  int n = td_program_entries(P.p, &names);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  td_explain_opts o;
  memset(&o, 0, sizeof o);
  o.fmt = fmt;
  o.diags = &P.d;
  td_explain_begin(&o, f);
  for (int i = 0; i < n; i++) {
    td_opt_stats st;
    td_plan *p = plan_of(names[i], &st);
    td_explain(p, &st, &o, i, f);
  }
  td_explain_end(&o, f);
  fclose(f);
  return buf;
}

static int count_str(const char *s, const char *sub) {
  int n = 0;
  for (const char *q = s; (q = strstr(q, sub)); q++) n++;
  return n;
}

Test(explain, mlp_reports_one_graph_and_no_breaks) {
  char *t = explain_text("examples/mlp.td", TD_EXPLAIN_TEXT);
  cr_expect_eq(count_str(t, "Graph Count: 1"), 3, "%s", t);     /* forward, predict, main */
  cr_expect_eq(count_str(t, "Graph Break Count: 0"), 3);
  cr_expect(strstr(t, "kernel 0: k0_matmul_add_relu (matmul+epilogue)") != NULL, "%s", t);
  cr_expect(strstr(t, "stdlib/nn.td:15:") != NULL, "ops name their source lines");
  cr_expect(strstr(t, "peak memory:") != NULL);
  /* the weights of fc1, fc2, fc3 (784x512 + 512x512 + 512x10 f32), packed once */
  cr_expect(strstr(t, "prepacked weights: 2674688 bytes") != NULL, "%s", t);
  free(t);
}

Test(explain, transformer_has_fewer_kernels_than_ops) {
  char *t = explain_text("examples/transformer.td", TD_EXPLAIN_TEXT);
  cr_expect(strstr(t, "Graph Count: 1") && strstr(t, "Graph Break Count: 0"));
  /* every "ops: A in the graph, B after passes, K kernels" line has K < B */
  for (const char *q = t; (q = strstr(q, "  ops: ")); q++) {
    int a, b, k;
    cr_assert_eq(sscanf(q, "  ops: %d in the graph, %d after passes, %d kernel", &a, &b, &k), 3);
    cr_expect_lt(k, b);
  }
  free(t);
}

/* Identical layers share code (kernel_key.c): a stack of 4 transformer
 * blocks has as many distinct kernels as a stack of 1, and explain says
 * so ("..., 52 kernels after fusion, 11 distinct"). */
static const char *stack_src =
    "import nn\n"
    "model S(n: int) {\n"
    "  blocks = [nn.TransformerBlock(32, 4, 64) for i in 0..n]\n"
    "  fn forward(x: f32[B, T, 32]) -> f32[B, T, 32] {\n"
    "    let h = x\n"
    "    for i in 0..n { h = blocks[i](h) }\n"
    "    h\n"
    "  }\n"
    "}\n"
    "model One { s = S(1)\n fn forward(x: f32[B, T, 32]) -> f32[B, T, 32] { s(x) } }\n"
    "model Four { s = S(4)\n fn forward(x: f32[B, T, 32]) -> f32[B, T, 32] { s(x) } }\n"
    "model Mixed {\n"
    "  a = nn.TransformerBlock(32, 4, 64)\n"
    "  b = nn.TransformerBlock(32, 4, 96)\n"
    "  fn forward(x: f32[B, T, 32]) -> f32[B, T, 32] { b(a(x)) }\n"
    "}\n";

Test(explain, identical_layers_are_one_distinct_kernel_each) {
  td_kgroups one, four, mixed;
  td_plan *p1 = plan_text(stack_src, "One.forward");
  cr_assert_eq(td_kernel_groups(p1, &one), 0);
  td_plan *p4 = plan_text(stack_src, "Four.forward");
  cr_assert_eq(td_kernel_groups(p4, &four), 0);
  td_plan *pm = plan_text(stack_src, "Mixed.forward");
  cr_assert_eq(td_kernel_groups(pm, &mixed), 0);
  cr_expect_eq(p4->n_kernels, 4 * p1->n_kernels);
  cr_expect_eq(four.n_distinct, one.n_distinct, "4 layers: %d distinct, 1 layer: %d", four.n_distinct,
               one.n_distinct);
  cr_expect_lt(one.n_distinct, p1->n_kernels, "q, k and v are one matmul's code");
  /* the MLP of another width (96) is other code; attention and the norms are not */
  cr_expect_gt(mixed.n_distinct, one.n_distinct);
  cr_expect_lt(mixed.n_distinct, 2 * one.n_distinct);
  /* every kernel of a group has the same kind, space and number of nodes */
  for (int k = 0; k < p4->n_kernels; k++) {
    const td_kernel *a = &p4->kernels[k], *r = &p4->kernels[four.rep[k]];
    cr_expect(a->kind == r->kind && a->n_nodes == r->n_nodes && a->rank == r->rank);
  }
  int nd4 = four.n_distinct;
  td_kgroups_free(&one);
  td_kgroups_free(&four);
  td_kgroups_free(&mixed);
  td_explain_opts o = {0};
  char *t = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&t, &n);
  td_explain(p4, NULL, &o, 0, f);
  fclose(f);
  char want[96];
  snprintf(want, sizeof want, "%d kernels after fusion, %d distinct", p4->n_kernels, nd4);
  cr_expect(strstr(t, want) != NULL, "%s", t);
  cr_expect(strstr(t, ", the code of kernel 0") != NULL, "%s", t);
  free(t);
}

Test(explain, json_and_dot_are_well_formed_enough) {
  char *j = explain_text("examples/seed/simple.td", TD_EXPLAIN_JSON);
  cr_expect(j[0] == '[' && strstr(j, "\"graph_break_count\": 0") != NULL, "%s", j);
  int depth = 0;
  for (const char *q = j; *q; q++) {
    if (*q == '"') { for (q++; *q && *q != '"'; q++) if (*q == '\\') q++; continue; }
    depth += (*q == '{' || *q == '[') - (*q == '}' || *q == ']');
    cr_assert_geq(depth, 0);
  }
  cr_expect_eq(depth, 0);
  free(j);
  char *d = explain_text("examples/seed/simple.td", TD_EXPLAIN_DOT);
  cr_expect(!strncmp(d, "digraph", 7) && strstr(d, "subgraph cluster_") != NULL);
  free(d);
}

/* The explanation of entry `entry` of source text, in format fmt. */
static char *explain_src(const char *src, const char *entry, td_explain_fmt fmt) {
  td_plan *p = plan_text(src, entry);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  td_explain_opts o;
  memset(&o, 0, sizeof o);
  o.fmt = fmt;
  o.diags = &P.d;
  td_explain_begin(&o, f);
  td_explain(p, NULL, &o, 0, f);
  td_explain_end(&o, f);
  fclose(f);
  return buf;
}

/* 25 slices of x summed: one pointwise kernel, its 25 slices (from two
 * places in the source) and 24 adds counted instead of listed. */
static const char *slices25 =
    "fn f(x: f32[100]) -> f32[4] {\n"
    "  let acc = x[0:4]\n"
    "  for i in 1..25 { acc = acc + x[4 * i:4 * i + 4] }\n"
    "  acc\n"
    "}\n";

Test(explain, kernel_listings_count_repeated_ops) {
  char *t = explain_src(slices25, "f", TD_EXPLAIN_TEXT);
  cr_expect(strstr(t, "fuses: slice \xc3\x97" "25 (t.td:2:13, t.td:3:32), add \xc3\x97" "24 (t.td:3:26)\n"), "%s", t);
  cr_expect_eq(count_str(t, "slice"), 1, "%s", t);
  free(t);
  char *k = explain_src(slices25, "f", TD_EXPLAIN_DOT_KERNELS);
  cr_expect_eq(count_str(k, "shape=box"), 1, "%s", k);
  cr_expect(strstr(k, "\\lslice \xc3\x97" "25, add \xc3\x97" "24\\l"), "%s", k);
  cr_expect(strstr(k, "label=\"input\\nx %0 f32[100]\"") && strstr(k, "label=\"output\\n%49 f32[4]\""), "%s", k);
  free(k);
  /* op by op: every slice is its own node, with its shape and dtype */
  char *d = explain_src(slices25, "f", TD_EXPLAIN_DOT);
  cr_expect_eq(count_str(d, "[label=\"slice %"), 25, "%s", d);
  cr_expect(strstr(d, "e0_n1_k0 [label=\"slice %1\\nf32[4]\\nt.td:2:13\"]"), "%s", d);
  cr_expect_eq(count_str(d, "\\nf32[4]\\n"), 49, "every op is f32[4]: %s", d);
  free(d);
}

/* --dot=kernels: one box per kernel (as many as the plan has), the inputs
 * and outputs as ellipses, an edge per buffer between kernels labelled
 * with its shape, the weights inside the boxes; the kernels of one layer
 * of a stack in a cluster named after it (4 layers: 4 clusters). */
Test(explain, dot_kernels_has_one_box_per_kernel_and_a_cluster_per_layer) {
  td_plan *p = plan_file("examples/mlp.td", "MLP.forward");
  int nk = p->n_kernels;
  cr_assert_eq(nk, 3);
  char *k = explain_text("examples/mlp.td", TD_EXPLAIN_DOT_KERNELS);
  /* three entry points (forward, predict, main): a cluster each */
  cr_expect(strstr(k, "subgraph cluster_e0 {\n    label=\"MLP.forward (3 kernels)\""), "%s", k);
  const char *e1 = strstr(k, "subgraph cluster_e1 ");
  cr_assert_not_null(e1, "%s", k);
  char *fwd = strndup(k, (size_t)(e1 - k));
  cr_expect_eq(count_str(fwd, "shape=box"), 3, "%s", fwd);
  cr_expect(strstr(fwd, "e0_k0 [shape=box, label=\"kernel 0: k0_matmul_add_relu (matmul+epilogue)\\lover [N, 512]\\l"
                        "permute, matmul, add, relu\\lweights: fc1.weight %0 f32[512, 784], fc1.bias %1 f32[512]\\l"),
            "%s", fwd);
  cr_expect(strstr(fwd, "e0_k0 -> e0_k1 [label=\"%10 f32[N, 512]\"]") &&
                strstr(fwd, "e0_k1 -> e0_k2 [label=\"%14 f32[N, 512]\"]"),
            "%s", fwd);
  cr_expect(strstr(fwd, "label=\"input\\nx %6 f32[N, 784]\"") && strstr(fwd, "e0_b6 -> e0_k0;"), "%s", fwd);
  cr_expect(strstr(fwd, "label=\"output\\n%17 f32[N, 10]\"") && strstr(fwd, "e0_k2 -> e0_b17;"), "%s", fwd);
  cr_expect_eq(count_str(fwd, " -> "), 4, "%s", fwd);
  free(fwd);
  free(k);
  /* a stack of 4 transformer blocks */
  char *s = explain_src(stack_src, "Four.forward", TD_EXPLAIN_DOT_KERNELS);
  td_plan *p4 = plan_text(stack_src, "Four.forward");
  cr_expect_eq(count_str(s, "shape=box"), p4->n_kernels, "%s", s);
  cr_expect_eq(count_str(s, "subgraph cluster_e0_l"), 4, "%s", s);
  for (int i = 0; i < 4; i++) {
    char want[64];
    snprintf(want, sizeof want, "label=\"s.blocks.%d\";", i);
    cr_expect_eq(count_str(s, want), 1, "%s", want);
  }
  free(s);
}

/* A chain of 20 000 sin() (an unrolled loop) is not fused into one kernel
 * whose expression is 20 000 deep: the code generators evaluate inputs
 * recursively, and deeper expressions overflowed their stack (10^5 ops
 * crashed --compiled; 10^4 under ASan).  No kernel evaluates an expression
 * more than 201 levels deep, and the chain is split into about 100. */
Test(fusion, deep_chains_are_split_into_kernels_of_bounded_depth) {
  int x = input("x", TD_F32, 1, (td_dim[]){4}), y = x;
  for (int i = 0; i < 20000; i++) y = un(TD_IR_SIN, y);
  out(y);
  td_err e;
  td_plan *p = td_plan_build(G, &e);
  cr_assert_not_null(p, "%s", e.msg);
  cr_expect_geq(p->n_kernels, 100);
  for (int k = 0; k < p->n_kernels; k++) {
    /* nodes of kernel k in a chain: its depth is how many it evaluates */
    cr_expect_leq(p->kernels[k].n_nodes, 202, "kernel %d evaluates %d nodes", k, p->kernels[k].n_nodes);
  }
}

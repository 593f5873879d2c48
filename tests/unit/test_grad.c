/* test_grad.c - td_grad against central finite differences.
 *
 * Each test builds a small f64 graph by hand (INPUT nodes, the op under
 * test), makes a scalar loss sum(op(...) * W) with W a fixed pseudo-random
 * weighting (so every output element matters), appends the gradient with
 * td_grad, verifies the graph, runs it with the interpreter and compares
 * each gradient element with (L(x + h) - L(x - h)) / 2h.  Then exact
 * cases: ties of maximum/max, gather's scatter-add with repeated and
 * negative indices, gradients of gradients, zeros where y does not depend
 * on wrt, a seed (vector-Jacobian product), and the errors.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "interp/interp.h"
#include "lang/grad.h"
#include "runtime/mem.h"

static td_arena *A;
static td_graph *G;
static td_diags D;

static void setup(void) {
  A = td_arena_new();
  G = td_graph_new(A, "t");
  td_diags_init(&D, A);
}
static void teardown(void) { td_arena_free(A); }
static void reset(void) { teardown(); setup(); }

TestSuite(grad, .init = setup, .fini = teardown);

static td_span at(int line) {
  td_span s = {0, line * 100, line * 100 + 3, line, 1};
  return s;
}

static td_attr noattr(void) {
  td_attr a;
  memset(&a, 0, sizeof a);
  return a;
}

static void dims(int rank, const int64_t *s, td_dim *d) {
  for (int i = 0; i < rank; i++) d[i] = s[i];
}

static int input(td_dtype dt, int rank, const int64_t *shape) {
  td_attr a = noattr();
  td_dim d[TD_MAX_RANK];
  dims(rank, shape, d);
  a.i = G->n_inputs;
  int id = td_graph_add(G, TD_IR_INPUT, dt, rank, d, NULL, 0, &a, at(1));
  cr_assert_geq(id, 0);
  return id;
}

static int node(td_op op, td_dtype dt, int rank, const td_dim *shape, const int *in, int n_in,
                const td_attr *a) {
  td_attr z = noattr();
  int id = td_graph_add(G, op, dt, rank, shape, in, n_in, a ? a : &z, at(2));
  cr_assert_geq(id, 0);
  return id;
}

static int un(td_op op, int x) {
  const td_node *n = &G->nodes[x];
  return node(op, n->dtype, n->rank, n->shape, &x, 1, NULL);
}

static int bin(td_op op, int x, int y) {
  td_node a = G->nodes[x], b = G->nodes[y];
  int r = a.rank > b.rank ? a.rank : b.rank, in[2] = {x, y};
  td_dim s[TD_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a.rank), ib = i - (r - b.rank);
    td_dim da = ia >= 0 ? a.shape[ia] : 1, db = ib >= 0 ? b.shape[ib] : 1;
    s[i] = da == 1 ? db : da;
  }
  td_dtype dt = td_ops[op].kind == TD_K_COMPARE ? TD_BOOL : a.dtype;
  return node(op, dt, r, s, in, 2, NULL);
}

static int cnst(td_dtype dt, double v) {
  td_attr a = noattr();
  a.f = v;
  a.i = (int64_t)v;
  return node(TD_IR_CONST, dt, 0, NULL, NULL, 0, &a);
}

static int reduce(td_op op, int x, uint32_t axes) {
  td_node n = G->nodes[x];
  td_attr a = noattr();
  a.axes = axes;
  for (int i = 0; i < n.rank; i++)
    if (axes >> i & 1) n.shape[i] = 1;
  return node(op, n.dtype, n.rank, n.shape, &x, 1, &a);
}

/* sum over every axis, as a rank-0 value */
static int total(int x) {
  int r = G->nodes[x].rank;
  int s = reduce(TD_IR_SUM, x, r ? (1u << r) - 1 : 0);
  if (!r) return s;
  return node(TD_IR_RESHAPE, G->nodes[x].dtype, 0, NULL, &s, 1, NULL);
}

/* ---- tensors ---- */

static uint64_t rng = 1;
static double urand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 9007199254740992.0;
}

/* What an input holds: uniform in [lo, hi), pushed at least 0.2 away from
 * 0 when away0 (relu, abs at their kinks), or the values v. */
typedef struct spec {
  td_dtype dt;
  int rank;
  int64_t shape[TD_MAX_RANK];
  double lo, hi;
  int away0;
  const double *v;
} spec;

static td_tensor *make(const spec *s) {
  td_err e;
  td_tensor *t = td_tensor_new(s->dt, s->rank, s->shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  for (int64_t i = 0; i < t->numel; i++) {
    double v = s->v ? s->v[i] : s->lo + (s->hi - s->lo) * urand();
    if (s->away0 && fabs(v) < 0.2) v = v < 0 ? v - 0.2 : v + 0.2;
    td_tensor_set(t, i, v);
  }
  return t;
}

static td_tensor **run(td_tensor **in) {
  td_tensor **outs = NULL;
  td_err e;
  td_span sp;
  cr_assert_eq(td_interp_run(G, in, NULL, NULL, &outs, &e, &sp), 0, "run: %s", e.msg);
  return outs;
}

static void free_outs(td_tensor **outs) {
  for (int k = 0; k < G->n_outputs; k++) td_tensor_release(outs[k]);
  td_free(outs);
}

static void verify(void) {
  td_err e;
  cr_assert_eq(td_graph_verify(G, &e), 0, "%s", e.msg);
}

static double loss_at(td_tensor **in) {
  td_tensor **o = run(in);
  double l = td_tensor_get(o[0], 0);
  free_outs(o);
  return l;
}

/* The inputs X[0..n) (made from s[]) feed node out; checks td_grad of
 * sum(out * W) with respect to every float X[i] against finite differences. */
static int X[8];
static void inputs(int n, const spec *s) {
  for (int i = 0; i < n; i++) X[i] = input(s[i].dt, s[i].rank, s[i].shape);
}

static void check(int n, const spec *s, int out, const char *what) {
  td_node o = G->nodes[out];
  spec ws = {TD_F64, o.rank, {0}, -1, 1, 0, NULL};
  for (int i = 0; i < o.rank; i++) ws.shape[i] = o.shape[i];
  int w = input(TD_F64, o.rank, ws.shape);
  int loss = total(bin(TD_IR_MUL, out, w));
  int wrt[8], grads[8], m = 0;
  for (int i = 0; i < n; i++)
    if (td_dtype_is_float(s[i].dt)) wrt[m++] = X[i];
  cr_assert_eq(td_grad(G, &D, at(9), loss, -1, wrt, m, grads), 0, "%s: td_grad failed", what);
  cr_assert_eq(td_graph_add_output(G, loss), 0);
  for (int i = 0; i < m; i++) {
    cr_assert_eq(G->nodes[grads[i]].dtype, G->nodes[wrt[i]].dtype);
    cr_assert_eq(G->nodes[grads[i]].rank, G->nodes[wrt[i]].rank);
    cr_assert_eq(td_graph_add_output(G, grads[i]), 0);
  }
  verify();
  td_tensor *in[9];
  for (int i = 0; i < n; i++) in[i] = make(&s[i]);
  in[n] = make(&ws);
  td_tensor **outs = run(in);
  for (int i = 0, gi = 0; i < n; i++) {
    if (!td_dtype_is_float(s[i].dt)) continue;
    td_tensor *x = in[i], *gr = outs[1 + gi++];
    cr_assert_eq(gr->numel, x->numel);
    for (int64_t j = 0; j < x->numel; j++) {
      double v = td_tensor_get(x, j), h = 1e-6 * fmax(1.0, fabs(v));
      td_tensor_set(x, j, v + h);
      double lp = loss_at(in);
      td_tensor_set(x, j, v - h);
      double lm = loss_at(in);
      td_tensor_set(x, j, v);
      double fd = (lp - lm) / (2 * h), got = td_tensor_get(gr, j);
      cr_expect(fabs(got - fd) <= 1e-6 * fmax(1.0, fabs(fd)),
                "%s: d/dx%d[%lld]: grad %.12g, finite difference %.12g", what, i,
                (long long)j, got, fd);
    }
  }
  free_outs(outs);
  for (int i = 0; i <= n; i++) td_tensor_release(in[i]);
}

/* ---- every differentiable op against finite differences ---- */

Test(grad, unary) {
  static const struct { td_op op; double lo, hi; int away0; } ops[] = {
    {TD_IR_NEG, -2, 2, 0},    {TD_IR_ABS, -2, 2, 1},     {TD_IR_EXP, -1, 1, 0},
    {TD_IR_LOG, 0.5, 2, 0},   {TD_IR_SQRT, 0.5, 2, 0},   {TD_IR_RSQRT, 0.5, 2, 0},
    {TD_IR_SIN, -3, 3, 0},    {TD_IR_COS, -3, 3, 0},     {TD_IR_TANH, -2, 2, 0},
    {TD_IR_SIGMOID, -3, 3, 0}, {TD_IR_RELU, -2, 2, 1},   {TD_IR_GELU, -3, 3, 0},
    {TD_IR_SILU, -3, 3, 0},   {TD_IR_ERF, -2, 2, 0},     {TD_IR_LOG1P, -0.5, 2, 0},
    {TD_IR_FLOOR, 1.1, 1.4, 0}, {TD_IR_CEIL, 1.1, 1.4, 0}, {TD_IR_ROUND, 1.1, 1.4, 0},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    reset();
    spec s[] = {{TD_F64, 3, {2, 1, 3}, ops[k].lo, ops[k].hi, ops[k].away0, NULL}};
    inputs(1, s);
    check(1, s, un(ops[k].op, X[0]), td_ops[ops[k].op].name);
  }
}

Test(grad, binary_broadcast) {
  static const struct { td_op op; double alo, ahi, blo, bhi; } ops[] = {
    {TD_IR_ADD, -2, 2, -2, 2}, {TD_IR_SUB, -2, 2, -2, 2}, {TD_IR_MUL, -2, 2, -2, 2},
    {TD_IR_DIV, -2, 2, 0.5, 2}, {TD_IR_MOD, 2.1, 2.4, 0.9, 1.0}, {TD_IR_POW, 0.5, 2, -1, 2},
    {TD_IR_MIN, -2, 2, -2, 2}, {TD_IR_MAX, -2, 2, -2, 2},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    for (int swap = 0; swap < 2; swap++) {
      reset();
      spec s[] = {{TD_F64, 3, {3, 1, 4}, ops[k].alo, ops[k].ahi, 0, NULL},
                  {TD_F64, 2, {2, 1}, ops[k].blo, ops[k].bhi, 0, NULL}};
      if (swap) {  /* the other operand broadcast: [2, 1] op [3, 1, 4] */
        spec t = s[0];
        s[0] = s[1];
        s[1] = t;
        s[0].lo = ops[k].alo, s[0].hi = ops[k].ahi, s[1].lo = ops[k].blo, s[1].hi = ops[k].bhi;
      }
      inputs(2, s);
      check(2, s, bin(ops[k].op, X[0], X[1]), td_ops[ops[k].op].name);
    }
  }
}

Test(grad, pow_at_zero_base) {
  /* d/db a^b at a == 0 is 0 (not NaN) for b > 0 */
  static const double av[] = {0, 2}, bv[] = {2, 3};
  spec s[] = {{TD_F64, 1, {2}, 0, 0, 0, av}, {TD_F64, 1, {2}, 0, 0, 0, bv}};
  inputs(2, s);
  int y = total(bin(TD_IR_POW, X[0], X[1]));
  int wrt[2] = {X[0], X[1]}, gr[2];
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, wrt, 2, gr), 0);
  td_graph_add_output(G, gr[0]);
  td_graph_add_output(G, gr[1]);
  verify();
  td_tensor *in[2] = {make(&s[0]), make(&s[1])};
  td_tensor **o = run(in);
  cr_expect_eq(td_tensor_get(o[0], 0), 0.0);
  cr_expect_eq(td_tensor_get(o[0], 1), 12.0);
  cr_expect_eq(td_tensor_get(o[1], 0), 0.0);
  cr_expect(fabs(td_tensor_get(o[1], 1) - 8 * log(2.0)) < 1e-12);
  free_outs(o);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(grad, where_and_cast) {
  spec s[] = {{TD_F64, 2, {3, 4}, -2, 2, 1, NULL}, {TD_F64, 2, {3, 4}, -2, 2, 0, NULL},
              {TD_F64, 1, {4}, -2, 2, 0, NULL}};
  inputs(3, s);
  int cond = bin(TD_IR_GT, X[0], cnst(TD_F64, 0));
  int in3[3] = {cond, X[1], X[2]};
  const td_node *n = &G->nodes[X[1]];
  int w = node(TD_IR_WHERE, TD_F64, 2, n->shape, in3, 3, NULL);
  check(3, s, w, "where");
  reset();
  /* f64 -> f64 through f32 would lose the finite differences' precision;
   * f64 -> f32 -> f64 of a sum of cubes at values exact in f32 */
  static const double xv[] = {0.5, -1.5, 2};
  spec c[] = {{TD_F64, 1, {3}, 0, 0, 0, xv}};
  inputs(1, c);
  int x = X[0];
  int cube = bin(TD_IR_MUL, bin(TD_IR_MUL, x, x), x);
  int f = node(TD_IR_CAST, TD_F32, 1, G->nodes[x].shape, &cube, 1, NULL);
  int b = node(TD_IR_CAST, TD_F64, 1, G->nodes[x].shape, &f, 1, NULL);
  int y = total(b), gr;
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, &x, 1, &gr), 0);
  td_graph_add_output(G, gr);
  verify();
  td_tensor *in[1] = {make(&c[0])};
  td_tensor **o = run(in);
  for (int i = 0; i < 3; i++) cr_expect_eq(td_tensor_get(o[0], i), 3 * xv[i] * xv[i]);
  free_outs(o);
  td_tensor_release(in[0]);
}

Test(grad, reductions) {
  static const struct { td_op op; uint32_t axes; double lo, hi; } ops[] = {
    {TD_IR_SUM, 5, -2, 2}, {TD_IR_SUM, 2, -2, 2}, {TD_IR_PROD, 4, 0.5, 1.5},
    {TD_IR_PROD, 3, 0.5, 1.5}, {TD_IR_RMAX, 2, -2, 2}, {TD_IR_RMIN, 6, -2, 2},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    reset();
    spec s[] = {{TD_F64, 3, {2, 3, 4}, ops[k].lo, ops[k].hi, 0, NULL}};
    inputs(1, s);
    check(1, s, reduce(ops[k].op, X[0], ops[k].axes), td_ops[ops[k].op].name);
  }
}

static int matmul(int a, int b) {
  td_node x = G->nodes[a], y = G->nodes[b];
  int r = x.rank > y.rank ? x.rank : y.rank, in[2] = {a, b};
  td_dim s[TD_MAX_RANK];
  for (int i = 0; i < r - 2; i++) {
    int ia = i - (r - x.rank), ib = i - (r - y.rank);
    td_dim da = ia >= 0 ? x.shape[ia] : 1, db = ib >= 0 ? y.shape[ib] : 1;
    s[i] = da == 1 ? db : da;
  }
  s[r - 2] = x.shape[x.rank - 2];
  s[r - 1] = y.shape[y.rank - 1];
  return node(TD_IR_MATMUL, TD_F64, r, s, in, 2, NULL);
}

Test(grad, matmul_broadcast_batch) {
  spec s1[] = {{TD_F64, 3, {2, 3, 4}, -1, 1, 0, NULL}, {TD_F64, 2, {4, 5}, -1, 1, 0, NULL}};
  inputs(2, s1);
  check(2, s1, matmul(X[0], X[1]), "[2,3,4] @ [4,5]");
  reset();
  spec s2[] = {{TD_F64, 3, {1, 3, 4}, -1, 1, 0, NULL}, {TD_F64, 3, {2, 4, 5}, -1, 1, 0, NULL}};
  inputs(2, s2);
  check(2, s2, matmul(X[0], X[1]), "[1,3,4] @ [2,4,5]");
  reset();
  spec s3[] = {{TD_F64, 2, {3, 4}, -1, 1, 0, NULL}, {TD_F64, 4, {2, 1, 4, 2}, -1, 1, 0, NULL}};
  inputs(2, s3);
  check(2, s3, matmul(X[0], X[1]), "[3,4] @ [2,1,4,2]");
}

/* CONV of x and w with symmetric padding pad (negative: a crop) per axis. */
static int conv(int x, int w, int S, int groups, const int *stride, const int *dil, const int *ldil,
                const int *pad) {
  td_node xn = G->nodes[x], wn = G->nodes[w];
  td_attr a = noattr();
  a.conv.spatial = S;
  a.conv.groups = groups;
  td_dim s[TD_MAX_RANK];
  s[0] = xn.shape[0];
  s[1] = wn.shape[0];
  for (int i = 0; i < S; i++) {
    a.conv.stride[i] = stride[i];
    a.conv.dil[i] = dil[i];
    a.conv.ldil[i] = ldil[i];
    a.conv.pad[i] = pad[i];
    int64_t hv = (xn.shape[2 + i] - 1) * ldil[i] + 1;
    s[2 + i] = (hv + 2 * pad[i] - dil[i] * (wn.shape[2 + i] - 1) - 1) / stride[i] + 1;
  }
  int in[2] = {x, w};
  return node(TD_IR_CONV, xn.dtype, S + 2, s, in, 2, &a);
}

Test(grad, conv) {
  /* the shapes users make (groups, strides, dilation, 1-D and 3-D), and
   * the transposed convolutions gradients make (input dilation, crops) */
  static const struct {
    int S, groups;
    int64_t x[5], w[5];
    int stride[3], dil[3], ldil[3], pad[3];
  } cs[] = {
    {2, 2, {2, 4, 5, 6}, {6, 2, 3, 2}, {2, 1}, {1, 2}, {1, 1}, {1, 2}},
    {2, 1, {1, 3, 4, 5}, {2, 3, 2, 3}, {1, 2}, {2, 1}, {2, 3}, {-1, 1}},
    {1, 2, {2, 2, 7}, {4, 1, 3}, {3}, {1}, {1}, {2}},
    {3, 1, {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, {1, 2, 1}, {1, 1, 2}, {1, 1, 1}, {1, 0, 1}},
  };
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    reset();
    int r = cs[k].S + 2;
    spec s[2] = {{TD_F64, r, {0}, -1, 1, 0, NULL}, {TD_F64, r, {0}, -1, 1, 0, NULL}};
    memcpy(s[0].shape, cs[k].x, sizeof cs[k].x);
    memcpy(s[1].shape, cs[k].w, sizeof cs[k].w);
    inputs(2, s);
    char what[32];
    snprintf(what, sizeof what, "conv case %zu", k);
    check(2, s, conv(X[0], X[1], cs[k].S, cs[k].groups, cs[k].stride, cs[k].dil, cs[k].ldil, cs[k].pad), what);
  }
}

Test(grad, movement) {
  spec s[] = {{TD_F64, 3, {2, 3, 4}, -1, 1, 0, NULL}};
  inputs(1, s);
  td_dim r[2] = {6, 4};
  int y = node(TD_IR_RESHAPE, TD_F64, 2, r, &X[0], 1, NULL);
  check(1, s, bin(TD_IR_MUL, y, y), "reshape");

  reset();
  inputs(1, s);
  td_attr p = noattr();
  p.perm[0] = 2, p.perm[1] = 0, p.perm[2] = 1;
  td_dim ps[3] = {4, 2, 3};
  check(1, s, un(TD_IR_SIN, node(TD_IR_PERMUTE, TD_F64, 3, ps, &X[0], 1, &p)), "permute");

  reset();
  spec b[] = {{TD_F64, 2, {3, 1}, -1, 1, 0, NULL}};
  inputs(1, b);
  td_dim bs[3] = {2, 3, 4};
  check(1, b, un(TD_IR_EXP, node(TD_IR_BROADCAST, TD_F64, 3, bs, &X[0], 1, NULL)), "broadcast");
}

static int slice(int x, const td_dim *start, const int64_t *step, const td_dim *shape) {
  td_attr a = noattr();
  int r = G->nodes[x].rank;
  for (int i = 0; i < r; i++) a.start[i] = start[i], a.step[i] = step[i];
  return node(TD_IR_SLICE, TD_F64, r, shape, &x, 1, &a);
}

Test(grad, slice_steps) {
  spec s[] = {{TD_F64, 2, {5, 6}, -1, 1, 0, NULL}};
  inputs(1, s);
  td_dim st[2] = {1, 4}, sh[2] = {3, 3};
  int64_t step[2] = {1, -1};
  check(1, s, slice(X[0], st, step, sh), "slice 1:4, 4:1:-1");
  reset();
  inputs(1, s);
  td_dim st2[2] = {0, 5}, sh2[2] = {5, 6};
  int64_t step2[2] = {1, -1};
  check(1, s, slice(X[0], st2, step2, sh2), "slice ::-1 whole axis");
  reset();
  inputs(1, s);
  td_dim st3[2] = {4, 0}, sh3[2] = {1, 2};
  check(1, s, slice(X[0], st3, (int64_t[]){1, 1}, sh3), "slice 4:5, 0:2");
}

Test(grad, slice_other_steps) {
  static const struct { td_dim start[2]; int64_t step[2]; td_dim shape[2]; } cases[] = {
    {{0, 1}, {2, 1}, {3, 4}},    /* rows 0, 2, 4 */
    {{1, 5}, {3, -2}, {2, 3}},   /* rows 1, 4; columns 5, 3, 1 */
    {{4, 0}, {-3, 5}, {2, 2}},   /* rows 4, 1; columns 0, 5 */
    {{2, 4}, {2, -4}, {2, 1}},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    reset();
    spec s[] = {{TD_F64, 2, {5, 6}, -1, 1, 0, NULL}};
    inputs(1, s);
    char what[64];
    snprintf(what, sizeof what, "slice steps %lld, %lld", (long long)cases[k].step[0],
             (long long)cases[k].step[1]);
    check(1, s, slice(X[0], cases[k].start, cases[k].step, cases[k].shape), what);
  }
}

Test(grad, no_gradient_is_reported_at_the_forward_node) {
  /* a step other than +-1 on a tensor of the largest rank has no room for
   * the axis its rule adds */
  spec s[] = {{TD_F64, TD_MAX_RANK, {0}, -1, 1, 0, NULL}};
  for (int i = 0; i < TD_MAX_RANK; i++) s[0].shape[i] = i ? 1 : 4;
  inputs(1, s);
  td_dim st[TD_MAX_RANK] = {0}, sh[TD_MAX_RANK];
  int64_t step[TD_MAX_RANK];
  for (int i = 0; i < TD_MAX_RANK; i++) sh[i] = 1, step[i] = 1;
  sh[0] = 2, step[0] = 2;
  int y = total(slice(X[0], st, step, sh)), gr;
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, &X[0], 1, &gr), -1);
  cr_assert_eq(D.n_errors, 1);
  cr_expect(strncmp(D.items[0].msg, "no gradient for slice with step 2", 33) == 0, "%s",
            D.items[0].msg);
  cr_expect_eq(D.items[0].span.line, 2, "at the forward node's span");
}

Test(grad, concat) {
  spec s[] = {{TD_F64, 2, {2, 3}, -1, 1, 0, NULL}, {TD_F64, 2, {2, 1}, -1, 1, 0, NULL},
              {TD_F64, 2, {2, 2}, -1, 1, 0, NULL}};
  inputs(3, s);
  td_attr a = noattr();
  a.axis = 1;
  td_dim sh[2] = {2, 6};
  int y = node(TD_IR_CONCAT, TD_F64, 2, sh, X, 3, &a);
  check(3, s, bin(TD_IR_MUL, y, y), "concat");
}

Test(grad, gather_scatter_add) {
  /* repeated and negative indices: x[:, 2] is taken three times */
  static const double iv[] = {0, 2, -2, 2, -1};
  spec s[] = {{TD_F64, 2, {3, 4}, -1, 1, 0, NULL}, {TD_I64, 1, {5}, 0, 0, 0, iv}};
  inputs(2, s);
  td_attr a = noattr();
  a.axis = 1;
  td_dim sh[2] = {3, 5};
  int in[2] = {X[0], X[1]};
  check(2, s, node(TD_IR_GATHER, TD_F64, 2, sh, in, 2, &a), "gather axis 1");
  reset();
  static const double iv2[] = {1, -3, 1, 0, 2, 1};
  spec s2[] = {{TD_F64, 3, {3, 2, 2}, -1, 1, 0, NULL}, {TD_I32, 2, {2, 3}, 0, 0, 0, iv2}};
  inputs(2, s2);
  a.axis = 0;
  td_dim sh2[4] = {2, 3, 2, 2};
  int in2[2] = {X[0], X[1]};
  check(2, s2, node(TD_IR_GATHER, TD_F64, 4, sh2, in2, 2, &a), "gather axis 0, i32 [2, 3]");
}

/* ---- exact cases ---- */

/* Runs G with inputs in and returns output k's element i. */
static double out_at(td_tensor **in, int k, int i) {
  td_tensor **o = run(in);
  double v = td_tensor_get(o[k], i);
  free_outs(o);
  return v;
}

Test(grad, ties_split) {
  static const double av[] = {1, 2, 3}, bv[] = {1, 5, 3};
  spec s[] = {{TD_F64, 1, {3}, 0, 0, 0, av}, {TD_F64, 1, {3}, 0, 0, 0, bv}};
  inputs(2, s);
  int y = total(bin(TD_IR_MAX, X[0], X[1]));
  int z = total(bin(TD_IR_MIN, X[0], X[1]));
  int r = total(reduce(TD_IR_RMAX, X[1], 1));
  int wrt[2] = {X[0], X[1]}, gy[2], gz[2], gr[2];
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, wrt, 2, gy), 0);
  cr_assert_eq(td_grad(G, &D, at(9), z, -1, wrt, 2, gz), 0);
  cr_assert_eq(td_grad(G, &D, at(9), r, -1, wrt, 2, gr), 0);
  int outs[6] = {gy[0], gy[1], gz[0], gz[1], gr[0], gr[1]};
  for (int k = 0; k < 6; k++) td_graph_add_output(G, outs[k]);
  verify();
  td_tensor *in[2] = {make(&s[0]), make(&s[1])};
  static const double want[6][3] = {
    {0.5, 0, 0.5}, {0.5, 1, 0.5},  /* maximum */
    {0.5, 1, 0.5}, {0.5, 0, 0.5},  /* minimum */
    {0, 0, 0}, {0, 1, 0},          /* max(b) = 5 once */
  };
  td_tensor **o = run(in);
  for (int k = 0; k < 6; k++)
    for (int i = 0; i < 3; i++)
      cr_expect_eq(td_tensor_get(o[k], i), want[k][i], "output %d element %d", k, i);
  free_outs(o);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);

  /* max over a row with a tie: 0.5 each */
  reset();
  static const double xv[] = {3, 1, 3, 2};
  spec t[] = {{TD_F64, 2, {1, 4}, 0, 0, 0, xv}};
  inputs(1, t);
  int m = total(reduce(TD_IR_RMAX, X[0], 2)), g;
  cr_assert_eq(td_grad(G, &D, at(9), m, -1, &X[0], 1, &g), 0);
  td_graph_add_output(G, g);
  verify();
  td_tensor *xi[1] = {make(&t[0])};
  static const double wm[] = {0.5, 0, 0.5, 0};
  for (int i = 0; i < 4; i++) cr_expect_eq(out_at(xi, 0, i), wm[i], "element %d", i);
  td_tensor_release(xi[0]);
}

Test(grad, second_derivative) {
  static const double xv[] = {1.5};
  spec s[] = {{TD_F64, 0, {0}, 0, 0, 0, xv}};
  inputs(1, s);
  int x = X[0];
  int y = bin(TD_IR_MUL, bin(TD_IR_MUL, x, x), x), g1, g2;
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, &x, 1, &g1), 0);
  cr_assert_eq(td_grad(G, &D, at(9), g1, -1, &x, 1, &g2), 0);
  int t = un(TD_IR_TANH, x), t1, t2;
  cr_assert_eq(td_grad(G, &D, at(9), t, -1, &x, 1, &t1), 0);
  cr_assert_eq(td_grad(G, &D, at(9), t1, -1, &x, 1, &t2), 0);
  td_graph_add_output(G, g1);
  td_graph_add_output(G, g2);
  td_graph_add_output(G, t2);
  verify();
  td_tensor *in[1] = {make(&s[0])};
  double th = tanh(1.5);
  cr_expect(fabs(out_at(in, 0, 0) - 3 * 1.5 * 1.5) < 1e-12);
  cr_expect(fabs(out_at(in, 1, 0) - 6 * 1.5) < 1e-12);
  cr_expect(fabs(out_at(in, 2, 0) - (-2 * th * (1 - th * th))) < 1e-12);
  td_tensor_release(in[0]);
}

Test(grad, zeros_when_independent_or_integer) {
  spec s[] = {{TD_F64, 2, {2, 3}, -1, 1, 0, NULL}, {TD_F64, 1, {3}, -1, 1, 0, NULL},
              {TD_I64, 1, {3}, 0, 5, 0, NULL}};
  inputs(3, s);
  int y = total(bin(TD_IR_ADD, un(TD_IR_EXP, X[0]),
                    node(TD_IR_CAST, TD_F64, 1, G->nodes[X[2]].shape, &X[2], 1, NULL)));
  int n0 = G->n_nodes;
  int wrt[2] = {X[1], X[2]}, gr[2];
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, wrt, 2, gr), 0);
  cr_expect_leq(G->n_nodes - n0, 4, "only the zeros are made, not a backward");
  cr_assert_eq(G->nodes[gr[1]].dtype, TD_I64);
  td_graph_add_output(G, gr[0]);
  td_graph_add_output(G, gr[1]);
  verify();
  td_tensor *in[3] = {make(&s[0]), make(&s[1]), make(&s[2])};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 3; i++) cr_expect_eq(out_at(in, k, i), 0.0);
  for (int k = 0; k < 3; k++) td_tensor_release(in[k]);
}

Test(grad, seed_is_a_vjp) {
  static const double xv[] = {0.1, -0.7, 1.2}, vv[] = {2, -1, 0.5};
  spec s[] = {{TD_F64, 1, {3}, 0, 0, 0, xv}, {TD_F64, 1, {3}, 0, 0, 0, vv}};
  inputs(2, s);
  int y = un(TD_IR_EXP, X[0]), gr;
  cr_assert_eq(td_grad(G, &D, at(9), y, X[1], &X[0], 1, &gr), 0);
  td_graph_add_output(G, gr);
  verify();
  td_tensor *in[2] = {make(&s[0]), make(&s[1])};
  for (int i = 0; i < 3; i++)
    cr_expect(fabs(out_at(in, 0, i) - vv[i] * exp(xv[i])) < 1e-12);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(grad, errors) {
  spec s[] = {{TD_F64, 1, {3}, -1, 1, 0, NULL}, {TD_I64, 0, {0}, 0, 1, 0, NULL}};
  inputs(2, s);
  int y = un(TD_IR_EXP, X[0]), gr;
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, &X[0], 1, &gr), -1);
  cr_assert_eq(D.n_errors, 1);
  cr_expect_eq(D.items[0].span.line, 9);
  cr_expect(strstr(D.items[0].msg, "non-scalar") != NULL, "%s", D.items[0].msg);
  cr_expect(D.items[0].help && strstr(D.items[0].help, "sum"));
  cr_assert_eq(td_grad(G, &D, at(9), X[1], -1, &X[0], 1, &gr), -1);
  cr_expect_eq(D.n_errors, 2, "an integer y");
}

Test(grad, every_op_has_an_entry) {
  for (int op = 0; op < TD_IR_OP_COUNT; op++)
    cr_expect(td_grad_has_rule((td_op)op), "no gradient table entry for %s", td_ops[op].name);
  cr_expect(!td_grad_has_rule(TD_IR_OP_COUNT));
}

Test(grad, symbolic_sizes) {
  /* x: f64[N, 3]; y = sum(sin(x[1:N, ::-1]) * x[1:N, ::-1]) + sum(x * x) */
  td_dim n = td_dim_sym(G, td_sym_new(G, "N"));
  td_dim xs[2] = {n, 3};
  td_attr a = noattr();
  int x = td_graph_add(G, TD_IR_INPUT, TD_F64, 2, xs, NULL, 0, &a, at(1));
  td_dim st[2] = {1, 2}, sh[2] = {td_dim_sub(G, n, 1), 3};
  int s = slice(x, st, (int64_t[]){1, -1}, sh);
  int y = bin(TD_IR_ADD, total(bin(TD_IR_MUL, un(TD_IR_SIN, s), s)), total(bin(TD_IR_MUL, x, x)));
  int gr;
  cr_assert_eq(td_grad(G, &D, at(9), y, -1, &x, 1, &gr), 0);
  td_graph_add_output(G, gr);
  verify();
  spec v = {TD_F64, 2, {4, 3}, -1, 1, 0, NULL};
  td_tensor *in[1] = {make(&v)};
  td_tensor **o = run(in);
  for (int i = 0; i < 12; i++) {
    double xv = td_tensor_get(in[0], i), want = 2 * xv;
    if (i >= 3) want += cos(xv) * xv + sin(xv);
    cr_expect(fabs(td_tensor_get(o[0], i) - want) < 1e-12, "element %d", i);
  }
  free_outs(o);
  td_tensor_release(in[0]);
}

Test(grad, narrow_floats) {
  /* the backward computes in the forward's dtype: f32 runs, f16 and bf16
   * verify (the compiler legalises them) */
  static const td_dtype dts[] = {TD_F32, TD_F16, TD_BF16};
  static const double xv[] = {0.25, -1.5, 2};
  for (int k = 0; k < 3; k++) {
    reset();
    spec s[] = {{dts[k], 1, {3}, 0, 0, 0, xv}};
    inputs(1, s);
    int x = X[0], gr;
    int y = total(bin(TD_IR_MUL, un(TD_IR_TANH, x), bin(TD_IR_MAX, x, cnst(dts[k], 0))));
    cr_assert_eq(td_grad(G, &D, at(9), y, -1, &x, 1, &gr), 0);
    cr_assert_eq(G->nodes[gr].dtype, dts[k]);
    td_graph_add_output(G, gr);
    verify();
    if (dts[k] != TD_F32) continue;
    td_tensor *in[1] = {make(&s[0])};
    td_tensor **o = run(in);
    for (int i = 0; i < 3; i++) {
      double t = tanh(xv[i]), want = xv[i] > 0 ? (1 - t * t) * xv[i] + t : 0;
      cr_expect(fabs(td_tensor_get(o[0], i) - want) < 1e-5, "element %d", i);
    }
    free_outs(o);
    td_tensor_release(in[0]);
  }
}

Test(grad, out_of_memory) {
  /* every allocation failing in turn: -1 with no diagnostic, until it
   * succeeds with a graph that verifies */
  for (long fail = 1;; fail++) {
    reset();
    spec s[] = {{TD_F64, 2, {3, 4}, -1, 1, 0, NULL}, {TD_F64, 2, {4, 2}, -1, 1, 0, NULL}};
    inputs(2, s);
    int y = total(un(TD_IR_TANH, matmul(X[0], X[1])));
    int wrt[2] = {X[0], X[1]}, gr[2];
    td_mem_fail_after(fail);
    int rc = td_grad(G, &D, at(9), y, -1, wrt, 2, gr);
    td_mem_fail_after(0);
    if (rc == 0) {
      verify();
      break;
    }
    cr_assert_eq(rc, -1);
    cr_assert_eq(D.n, 0, "no diagnostic for out of memory (allocation %ld)", fail);
    cr_assert_lt(fail, 10000);
  }
}

/* test_interp.c - the eager interpreter against naive float64 references.
 *
 * Every test builds a graph by hand (td_graph_new + td_graph_add), runs it
 * with td_interp_run and compares the result element by element with a
 * reference computed here in plain double-precision C (or with known
 * values): elementwise ops with NumPy broadcasting, reductions, matmul,
 * movement ops, gather, creation and random ops, print, trace,
 * check-numerics, argument binding and parameter initialisation/loading.
 * Allocation-failure injection checks the error paths free everything
 * (run under ASan to see leaks).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"
#include "interp/kernels.h"
#include "lang/opeval.h"
#include "runtime/half.h"
#include "runtime/mem.h"
#include "runtime/philox.h"

static td_arena *A;
static td_graph *G;
static td_diags D;
static const char SRC[] = "fn main(x) {\n  let y = f(x)\n}\n";

static void setup(void) {
  A = td_arena_new();
  G = td_graph_new(A, "t");
  td_diags_init(&D, A);
  td_diags_add_source(&D, "m.td", SRC, sizeof SRC - 1);
}
static void teardown(void) { td_arena_free(A); }

TestSuite(elementwise, .init = setup, .fini = teardown);
TestSuite(reduce, .init = setup, .fini = teardown);
TestSuite(matmul, .init = setup, .fini = teardown);
TestSuite(movement, .init = setup, .fini = teardown);
TestSuite(creation, .init = setup, .fini = teardown);
TestSuite(effects, .init = setup, .fini = teardown);
TestSuite(binding, .init = setup, .fini = teardown);
TestSuite(params, .init = setup, .fini = teardown);
TestSuite(memory, .init = setup, .fini = teardown);

/* ---- graph building helpers ---- */

static td_span at(int line, int col) {
  td_span s = {0, line * 100 + col, line * 100 + col + 3, line, col};
  return s;
}

static td_attr noattr(void) {
  td_attr a;
  memset(&a, 0, sizeof a);
  return a;
}

static int input(const char *name, td_dtype dt, int rank, const td_dim *shape) {
  td_attr a = noattr();
  a.i = G->n_inputs;
  int id = td_graph_add(G, TD_IR_INPUT, dt, rank, shape, NULL, 0, &a, at(1, 9));
  cr_assert_geq(id, 0);
  G->nodes[id].name = name;
  return id;
}

static int node(td_op op, td_dtype dt, int rank, const td_dim *shape, const int *in, int n_in,
                const td_attr *a) {
  td_attr z = noattr();
  int id = td_graph_add(G, op, dt, rank, shape, in, n_in, a ? a : &z, at(2, 11));
  cr_assert_geq(id, 0);
  return id;
}

static int un(td_op op, td_dtype dt, int rank, const td_dim *shape, int x) {
  return node(op, dt, rank, shape, &x, 1, NULL);
}

static int bin(td_op op, td_dtype dt, int rank, const td_dim *shape, int x, int y) {
  int in[2] = {x, y};
  return node(op, dt, rank, shape, in, 2, NULL);
}

static void out(int id) { cr_assert_eq(td_graph_add_output(G, id), 0); }

/* ---- tensor helpers ---- */

static td_tensor *tensor(td_dtype dt, int rank, const int64_t *shape) {
  td_err e;
  td_tensor *t = td_tensor_new(dt, rank, shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  return t;
}

static td_tensor *from(td_dtype dt, int rank, const int64_t *shape, const double *v) {
  td_tensor *t = tensor(dt, rank, shape);
  for (int64_t i = 0; i < t->numel; i++) td_tensor_set(t, i, v[i]);
  return t;
}

/* Deterministic pseudo-random values in [lo, hi) (integers for int dtypes). */
static td_tensor *pattern(td_dtype dt, int rank, const int64_t *shape, uint64_t seed,
                          double lo, double hi) {
  td_tensor *t = tensor(dt, rank, shape);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t->numel; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(s >> 11) / 9007199254740992.0;
    double v = lo + (hi - lo) * u;
    td_tensor_set(t, i, td_dtype_is_float(dt) ? v : floor(v));
  }
  return t;
}

/* Runs G; returns rc, outputs in *outs (caller frees with free_outs). */
static int run_opts(td_tensor **in, const td_run_opts *o, td_tensor ***outs, td_err *err,
                    td_span *sp) {
  return td_interp_run(G, in, NULL, o, outs, err, sp);
}

static void free_outs(td_tensor **outs) {
  if (!outs) return;
  for (int k = 0; k < G->n_outputs; k++) td_tensor_release(outs[k]);
  td_free(outs);
}

/* Runs G and returns its first output (asserting success). */
static td_tensor *run1(td_tensor **in) {
  td_tensor **outs = NULL;
  td_err e;
  td_span sp;
  int rc = run_opts(in, NULL, &outs, &e, &sp);
  cr_assert_eq(rc, 0, "run failed: %s", e.msg);
  td_tensor *t = td_tensor_retain(outs[0]);
  free_outs(outs);
  return t;
}

/* Runs G expecting failure; returns the message (static buffer). */
static const char *run_err(td_tensor **in, td_span *sp) {
  static td_err e;
  td_tensor **outs = NULL;
  td_span local;
  int rc = run_opts(in, NULL, &outs, &e, sp ? sp : &local);
  cr_assert_eq(rc, -1, "run unexpectedly succeeded");
  cr_assert_null(outs);
  return e.msg;
}

static int same_or_nan(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Compares every element with ref; reports the first mismatch. */
static void expect_close(const td_tensor *t, const double *ref, double rtol, double atol) {
  for (int64_t i = 0; i < t->numel; i++) {
    double g = td_tensor_get(t, i);
    if (!same_or_nan(g, ref[i], rtol, atol)) {
      cr_expect(0, "element %lld: got %.17g, want %.17g", (long long)i, g, ref[i]);
      return;
    }
  }
}

static void expect_shape(const td_tensor *t, int rank, const int64_t *shape) {
  cr_assert_eq(t->rank, rank);
  for (int k = 0; k < rank; k++) cr_expect_eq(t->shape[k], shape[k], "axis %d", k);
}

/* Flat index into a (right-aligned, broadcast) input for output index flat. */
static int64_t bidx(int orank, const int64_t *oshape, int64_t flat, int irank,
                    const int64_t *ishape) {
  int64_t idx = 0, stride = 1;
  for (int k = orank - 1, j = irank - 1; k >= 0; k--, j--) {
    int64_t c = flat % oshape[k];
    flat /= oshape[k];
    if (j >= 0) {
      if (ishape[j] != 1) idx += c * stride;
      stride *= ishape[j];
    }
  }
  return idx;
}

/* ---- references ---- */

static double round_half_even(double x) {
  double f = floor(x), d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0.0 ? f : f + 1;
}

static double ref_unary(td_op op, double x) {
  switch (op) {
  case TD_IR_NEG: return -x;
  case TD_IR_ABS: return x < 0 ? -x : x;
  case TD_IR_EXP: return exp(x);
  case TD_IR_LOG: return log(x);
  case TD_IR_SQRT: return sqrt(x);
  case TD_IR_RSQRT: return 1.0 / sqrt(x);
  case TD_IR_SIN: return sin(x);
  case TD_IR_COS: return cos(x);
  case TD_IR_TANH: return tanh(x);
  case TD_IR_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case TD_IR_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
  case TD_IR_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  case TD_IR_SILU: return x / (1.0 + exp(-x));
  case TD_IR_ERF: return erf(x);
  case TD_IR_FLOOR: return floor(x);
  case TD_IR_CEIL: return ceil(x);
  case TD_IR_ROUND: return round_half_even(x);
  default: cr_assert_fail("no reference for %s", td_ops[op].name); return 0;
  }
}

/* Python's floor division and modulo on integers. */
static int64_t py_div(int64_t a, int64_t b) {
  int64_t q = (int64_t)floor((double)a / (double)b);
  return q;
}
static int64_t py_mod(int64_t a, int64_t b) { return a - b * py_div(a, b); }

static double ref_binary(td_op op, double a, double b, int is_int) {
  switch (op) {
  case TD_IR_ADD: return a + b;
  case TD_IR_SUB: return a - b;
  case TD_IR_MUL: return a * b;
  case TD_IR_DIV:
    if (is_int) return b == 0 ? 0 : (double)py_div((int64_t)a, (int64_t)b);
    return a / b;
  case TD_IR_MOD:
    if (is_int) return b == 0 ? 0 : (double)py_mod((int64_t)a, (int64_t)b);
    return a - b * floor(a / b);
  case TD_IR_POW: {
    if (!is_int) return pow(a, b);
    double r = 1;
    for (int k = 0; k < (int)b; k++) r *= a;
    return b < 0 ? (a == 1 ? 1 : 0) : r;
  }
  case TD_IR_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case TD_IR_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case TD_IR_LT: return a < b;
  case TD_IR_LE: return a <= b;
  case TD_IR_GT: return a > b;
  case TD_IR_GE: return a >= b;
  case TD_IR_EQ: return a == b;
  case TD_IR_NE: return a != b;
  case TD_IR_AND: return a != 0 && b != 0;
  case TD_IR_OR: return a != 0 || b != 0;
  default: cr_assert_fail("no reference for %s", td_ops[op].name); return 0;
  }
}

/* ======================================================================= */
/* elementwise                                                              */
/* ======================================================================= */

static const double UNARY_X[] = {-4.0, -3.0, -2.5, -1.5, -1.0, -0.75, -0.5, -0.1, 0.0,
                                 0.1,  0.5,  0.75, 1.0,  1.5,  2.5,   3.0,  4.0,  7.25,
                                 NAN,  INFINITY, -INFINITY};
#define N_UX ((int64_t)(sizeof UNARY_X / sizeof UNARY_X[0]))

static void check_unary_float(td_op op, td_dtype dt) {
  teardown();
  setup();
  int64_t n = N_UX;
  td_dim shp[1] = {n};
  int x = input("x", dt, 1, shp);
  out(un(op, dt, 1, shp, x));
  td_tensor *tx = from(dt, 1, &n, UNARY_X);
  td_tensor *y = run1(&tx);
  double ref[N_UX];
  for (int64_t i = 0; i < n; i++) {
    double xi = td_tensor_get(tx, i);
    ref[i] = ref_unary(op, xi);
    if (dt == TD_F32 && isfinite(ref[i])) ref[i] = (float)ref[i];
  }
  cr_expect_eq(y->dtype, dt);
  if (dt == TD_F32) expect_close(y, ref, 1e-5, 1e-6);
  else expect_close(y, ref, 1e-12, 1e-14);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(elementwise, every_unary_float_op_matches_libm_in_double) {
  const td_op ops[] = {TD_IR_NEG,  TD_IR_ABS,  TD_IR_EXP,     TD_IR_LOG,  TD_IR_SQRT,
                       TD_IR_RSQRT, TD_IR_SIN, TD_IR_COS,     TD_IR_TANH, TD_IR_SIGMOID,
                       TD_IR_RELU, TD_IR_GELU, TD_IR_SILU,    TD_IR_ERF,  TD_IR_FLOOR,
                       TD_IR_CEIL, TD_IR_ROUND};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    check_unary_float(ops[k], TD_F32);
    check_unary_float(ops[k], TD_F64);
  }
}

Test(elementwise, round_is_half_to_even_and_relu_keeps_nan) {
  int64_t n = 6;
  td_dim shp[1] = {6};
  int x = input("x", TD_F32, 1, shp);
  out(un(TD_IR_ROUND, TD_F32, 1, shp, x));
  out(un(TD_IR_RELU, TD_F32, 1, shp, x));
  td_tensor *tx = from(TD_F32, 1, &n, (double[]){0.5, 1.5, 2.5, -0.5, -1.5, NAN});
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){0, 2, 2, -0.0, -2, NAN}, 0, 0);
  expect_close(outs[1], (double[]){0.5, 1.5, 2.5, 0, 0, NAN}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(elementwise, integer_unary_ops) {
  int64_t n = 5;
  td_dim shp[1] = {5};
  const double xs[] = {-7, -1, 0, 3, -2147483647};
  td_dtype dts[] = {TD_I32, TD_I64};
  for (int d = 0; d < 2; d++) {
    teardown();
    setup();
    int x = input("x", dts[d], 1, shp);
    out(un(TD_IR_NEG, dts[d], 1, shp, x));
    out(un(TD_IR_ABS, dts[d], 1, shp, x));
    out(un(TD_IR_RELU, dts[d], 1, shp, x));
    td_tensor *tx = from(dts[d], 1, &n, xs);
    td_tensor **outs;
    td_err e;
    cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
    expect_close(outs[0], (double[]){7, 1, 0, -3, 2147483647}, 0, 0);
    expect_close(outs[1], (double[]){7, 1, 0, 3, 2147483647}, 0, 0);
    expect_close(outs[2], (double[]){0, 0, 0, 3, 0}, 0, 0);
    free_outs(outs);
    td_tensor_release(tx);
  }
}

/* a (shape sa) OP b (shape sb) -> out shape so, against ref_binary. */
static void check_binary(td_op op, td_dtype dt, int ra, const int64_t *sa, int rb,
                         const int64_t *sb, int ro, const int64_t *so, double lo, double hi) {
  teardown();
  setup();
  td_dim da[TD_MAX_RANK], db[TD_MAX_RANK], dout[TD_MAX_RANK];
  for (int k = 0; k < ra; k++) da[k] = sa[k];
  for (int k = 0; k < rb; k++) db[k] = sb[k];
  for (int k = 0; k < ro; k++) dout[k] = so[k];
  td_opkind kind = td_ops[op].kind;
  td_dtype odt = kind == TD_K_COMPARE ? TD_BOOL : dt;
  int a = input("a", dt, ra, da), b = input("b", dt, rb, db);
  out(bin(op, odt, ro, dout, a, b));
  td_tensor *in[2] = {pattern(dt, ra, sa, 1, lo, hi), pattern(dt, rb, sb, 2, lo, hi)};
  if (op == TD_IR_POW && !td_dtype_is_float(dt)) {
    for (int64_t i = 0; i < in[1]->numel; i++)
      td_tensor_set(in[1], i, fabs(td_tensor_get(in[1], i)));
  }
  if (op == TD_IR_POW && td_dtype_is_float(dt)) {
    for (int64_t i = 0; i < in[0]->numel; i++)
      td_tensor_set(in[0], i, fabs(td_tensor_get(in[0], i)));
  }
  td_tensor *y = run1(in);
  expect_shape(y, ro, so);
  cr_expect_eq(y->dtype, odt);
  double *ref = malloc(sizeof(double) * (size_t)(y->numel + 1));
  for (int64_t i = 0; i < y->numel; i++) {
    double av = td_tensor_get(in[0], bidx(ro, so, i, ra, sa));
    double bv = td_tensor_get(in[1], bidx(ro, so, i, rb, sb));
    ref[i] = ref_binary(op, av, bv, !td_dtype_is_float(dt));
    if (odt == TD_F32 && isfinite(ref[i])) ref[i] = (float)ref[i];
  }
  double rtol = dt == TD_F32 ? 2e-6 : dt == TD_F64 ? 1e-14 : 0;
  double atol = op == TD_IR_MOD && td_dtype_is_float(dt) ? 1e-5 : 0;
  expect_close(y, ref, rtol, atol);
  free(ref);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  td_tensor_release(y);
}

static const td_op ARITH[] = {TD_IR_ADD, TD_IR_SUB, TD_IR_MUL, TD_IR_DIV,
                              TD_IR_MOD, TD_IR_POW, TD_IR_MIN, TD_IR_MAX};
static const td_op CMPS[] = {TD_IR_LT, TD_IR_LE, TD_IR_GT, TD_IR_GE, TD_IR_EQ, TD_IR_NE};

Test(elementwise, binary_float_ops_same_shape) {
  int64_t s[2] = {5, 7};
  for (size_t k = 0; k < 8; k++) {
    check_binary(ARITH[k], TD_F32, 2, s, 2, s, 2, s, -3, 3);
    check_binary(ARITH[k], TD_F64, 2, s, 2, s, 2, s, -3, 3);
  }
}

Test(elementwise, binary_broadcasting_shapes) {
  int64_t c31[2] = {3, 1}, r14[2] = {1, 4}, o34[2] = {3, 4};
  int64_t m23[2] = {2, 3}, t234[3] = {2, 3, 4}, v4[1] = {4};
  int64_t a214[3] = {2, 1, 4}, b31[2] = {3, 1};
  for (size_t k = 0; k < 8; k++) {
    check_binary(ARITH[k], TD_F32, 2, c31, 2, r14, 2, o34, -3, 3);
    check_binary(ARITH[k], TD_F32, 0, NULL, 2, m23, 2, m23, -3, 3);
    check_binary(ARITH[k], TD_F32, 2, m23, 0, NULL, 2, m23, -3, 3);
    check_binary(ARITH[k], TD_F64, 3, t234, 1, v4, 3, t234, -3, 3);
    check_binary(ARITH[k], TD_F32, 1, v4, 3, t234, 3, t234, -3, 3);
    check_binary(ARITH[k], TD_F32, 3, a214, 2, b31, 3, t234, -3, 3);
  }
}

Test(elementwise, size_one_zero_size_and_rank_zero) {
  int64_t z3[2] = {0, 3}, o3[2] = {1, 3}, one[3] = {1, 1, 1}, s5[1] = {5};
  check_binary(TD_IR_ADD, TD_F32, 2, z3, 2, o3, 2, z3, -1, 1);
  check_binary(TD_IR_MUL, TD_F32, 3, one, 1, s5, 3, (int64_t[]){1, 1, 5}, -1, 1);
  check_binary(TD_IR_SUB, TD_F64, 0, NULL, 0, NULL, 0, NULL, -1, 1);
  check_binary(TD_IR_ADD, TD_I64, 2, z3, 0, NULL, 2, z3, -1, 1);
}

Test(elementwise, integer_division_and_modulo_follow_python) {
  int64_t s[1] = {42};
  double av[42], bv[42];
  const double bs[] = {-3, -2, -1, 1, 2, 3};
  for (int i = 0; i < 7; i++)
    for (int j = 0; j < 6; j++) {
      av[i * 6 + j] = i - 3 - (i > 4 ? 4 : 0); /* -3..1 and -3,-2 */
      bv[i * 6 + j] = bs[j];
    }
  av[0] = -7;
  av[1] = 7;
  td_dtype dts[] = {TD_I32, TD_I64};
  for (int d = 0; d < 2; d++) {
    teardown();
    setup();
    td_dim shp[1] = {42};
    int a = input("a", dts[d], 1, shp), b = input("b", dts[d], 1, shp);
    out(bin(TD_IR_DIV, dts[d], 1, shp, a, b));
    out(bin(TD_IR_MOD, dts[d], 1, shp, a, b));
    out(bin(TD_IR_FLOORDIV, dts[d], 1, shp, a, b));
    td_tensor *in[2] = {from(dts[d], 1, s, av), from(dts[d], 1, s, bv)};
    td_tensor **outs;
    td_err e;
    cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
    double rq[42], rm[42];
    for (int i = 0; i < 42; i++) {
      rq[i] = (double)py_div((int64_t)av[i], (int64_t)bv[i]);
      rm[i] = (double)py_mod((int64_t)av[i], (int64_t)bv[i]);
    }
    expect_close(outs[0], rq, 0, 0);
    expect_close(outs[1], rm, 0, 0);
    expect_close(outs[2], rq, 0, 0);   /* `//` on ints is the same floor division */
    free_outs(outs);
    td_tensor_release(in[0]);
    td_tensor_release(in[1]);
  }
  /* known values: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1, x // 0 == 0 */
  teardown();
  setup();
  td_dim s4[1] = {4};
  int a = input("a", TD_I32, 1, s4), b = input("b", TD_I32, 1, s4);
  out(bin(TD_IR_DIV, TD_I32, 1, s4, a, b));
  out(bin(TD_IR_MOD, TD_I32, 1, s4, a, b));
  int64_t n4 = 4;
  td_tensor *in[2] = {from(TD_I32, 1, &n4, (double[]){-7, -7, 7, 5}),
                      from(TD_I32, 1, &n4, (double[]){2, 2, -2, 0})};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){-4, -4, -4, 0}, 0, 0);
  expect_close(outs[1], (double[]){1, 1, -1, 0}, 0, 0);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(elementwise, float_modulo_takes_the_divisor_sign) {
  int64_t n = 4;
  td_dim shp[1] = {4};
  int a = input("a", TD_F64, 1, shp), b = input("b", TD_F64, 1, shp);
  out(bin(TD_IR_MOD, TD_F64, 1, shp, a, b));
  td_tensor *in[2] = {from(TD_F64, 1, &n, (double[]){5.5, -5.5, 5.5, -5.5}),
                      from(TD_F64, 1, &n, (double[]){2, 2, -2, -2})};
  td_tensor *y = run1(in);
  expect_close(y, (double[]){1.5, 0.5, -0.5, -1.5}, 0, 0);
  td_tensor_release(y);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(elementwise, integer_binary_ops_with_broadcast) {
  int64_t c31[2] = {3, 1}, r14[2] = {1, 4}, o34[2] = {3, 4};
  for (size_t k = 0; k < 8; k++) {
    if (ARITH[k] == TD_IR_DIV || ARITH[k] == TD_IR_MOD) continue; /* zero divisors */
    check_binary(ARITH[k], TD_I32, 2, c31, 2, r14, 2, o34, -5, 5);
    check_binary(ARITH[k], TD_I64, 2, c31, 2, r14, 2, o34, -5, 5);
  }
  check_binary(TD_IR_DIV, TD_I64, 2, c31, 2, r14, 2, o34, 1, 9);
  check_binary(TD_IR_MOD, TD_I32, 2, c31, 2, r14, 2, o34, 1, 9);
}

Test(elementwise, comparisons_give_bool) {
  int64_t c31[2] = {3, 1}, r14[2] = {1, 4}, o34[2] = {3, 4};
  for (size_t k = 0; k < 6; k++) {
    check_binary(CMPS[k], TD_F32, 2, c31, 2, r14, 2, o34, -2, 2);
    check_binary(CMPS[k], TD_I64, 2, c31, 2, r14, 2, o34, -2, 2);
    check_binary(CMPS[k], TD_F64, 0, NULL, 2, o34, 2, o34, -2, 2);
  }
}

Test(elementwise, logic_and_not_on_bool) {
  int64_t n = 4;
  td_dim shp[1] = {4};
  int a = input("a", TD_BOOL, 1, shp), b = input("b", TD_BOOL, 1, shp);
  out(bin(TD_IR_AND, TD_BOOL, 1, shp, a, b));
  out(bin(TD_IR_OR, TD_BOOL, 1, shp, a, b));
  out(un(TD_IR_NOT, TD_BOOL, 1, shp, a));
  td_tensor *in[2] = {from(TD_BOOL, 1, &n, (double[]){0, 0, 1, 1}),
                      from(TD_BOOL, 1, &n, (double[]){0, 1, 0, 1})};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){0, 0, 0, 1}, 0, 0);
  expect_close(outs[1], (double[]){0, 1, 1, 1}, 0, 0);
  expect_close(outs[2], (double[]){1, 1, 0, 0}, 0, 0);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(elementwise, min_max_propagate_nan) {
  int64_t n = 3;
  td_dim shp[1] = {3};
  int a = input("a", TD_F32, 1, shp), b = input("b", TD_F32, 1, shp);
  out(bin(TD_IR_MIN, TD_F32, 1, shp, a, b));
  out(bin(TD_IR_MAX, TD_F32, 1, shp, a, b));
  td_tensor *in[2] = {from(TD_F32, 1, &n, (double[]){NAN, 1, 2}),
                      from(TD_F32, 1, &n, (double[]){1, NAN, 3})};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){NAN, NAN, 2}, 0, 0);
  expect_close(outs[1], (double[]){NAN, NAN, 3}, 0, 0);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(elementwise, where_broadcasts_all_three) {
  int64_t sc[2] = {3, 1}, sa[1] = {4}, so[2] = {3, 4};
  td_dim dc[2] = {3, 1}, da[1] = {4}, dout[2] = {3, 4};
  int c = input("c", TD_BOOL, 2, dc), a = input("a", TD_F64, 1, da), b = input("b", TD_F64, 0, NULL);
  int in3[3] = {c, a, b};
  out(node(TD_IR_WHERE, TD_F64, 2, dout, in3, 3, NULL));
  td_tensor *in[3] = {from(TD_BOOL, 2, sc, (double[]){1, 0, 1}),
                      from(TD_F64, 1, sa, (double[]){1, 2, 3, 4}),
                      from(TD_F64, 0, NULL, (double[]){-9})};
  td_tensor *y = run1(in);
  expect_shape(y, 2, so);
  expect_close(y, (double[]){1, 2, 3, 4, -9, -9, -9, -9, 1, 2, 3, 4}, 0, 0);
  td_tensor_release(y);
  for (int k = 0; k < 3; k++) td_tensor_release(in[k]);
}

Test(elementwise, casts_truncate_saturate_and_test_nonzero) {
  int64_t n = 7;
  td_dim shp[1] = {7};
  int x = input("x", TD_F32, 1, shp);
  out(un(TD_IR_CAST, TD_I32, 1, shp, x));
  out(un(TD_IR_CAST, TD_BOOL, 1, shp, x));
  out(un(TD_IR_CAST, TD_I64, 1, shp, x));
  td_tensor *tx = from(TD_F32, 1, &n, (double[]){-2.7, 2.7, 0, -0.0, NAN, 1e10, -1e10});
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){-2, 2, 0, 0, 0, 2147483647, -2147483648.0}, 0, 0);
  expect_close(outs[1], (double[]){1, 1, 0, 0, 1, 1, 1}, 0, 0);
  expect_close(outs[2], (double[]){-2, 2, 0, 0, 0, 1e10, -1e10}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
  /* int and bool to float */
  teardown();
  setup();
  td_dim s3[1] = {3};
  int64_t n3 = 3;
  int b = input("b", TD_BOOL, 1, s3), i = input("i", TD_I64, 1, s3);
  out(un(TD_IR_CAST, TD_F32, 1, s3, b));
  out(un(TD_IR_CAST, TD_F64, 1, s3, i));
  td_tensor *in[2] = {from(TD_BOOL, 1, &n3, (double[]){1, 0, 1}),
                      from(TD_I64, 1, &n3, (double[]){-5, 0, 123456789})};
  cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){1, 0, 1}, 0, 0);
  expect_close(outs[1], (double[]){-5, 0, 123456789}, 0, 0);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

/* i32 / i64 neg, add, sub and mul wrap around (two's complement), against
 * the same arithmetic done here in unsigned integers. */
Test(elementwise, integer_arithmetic_wraps_around) {
  const td_op ops[] = {TD_IR_NEG, TD_IR_ADD, TD_IR_SUB, TD_IR_MUL};
  const int64_t xs[] = {INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, -1, 65536, 3037000500};
  const int64_t ys[] = {-1, 1, -1, 1, INT64_MIN, 65536, 3037000500};
  int64_t n = 7;
  td_dim shp[1] = {7};
  for (int d = 0; d < 2; d++) {
    td_dtype dt = d ? TD_I64 : TD_I32;
    for (int k = 0; k < 4; k++) {
      teardown();
      setup();
      int x = input("x", dt, 1, shp), y = input("y", dt, 1, shp);
      out(ops[k] == TD_IR_NEG ? un(ops[k], dt, 1, shp, x) : bin(ops[k], dt, 1, shp, x, y));
      td_tensor *in[2] = {tensor(dt, 1, &n), tensor(dt, 1, &n)};
      for (int i = 0; i < n; i++) {
        if (d) {
          ((int64_t *)in[0]->data)[i] = xs[i];
          ((int64_t *)in[1]->data)[i] = ys[i];
        } else {
          ((int32_t *)in[0]->data)[i] = (int32_t)xs[i];
          ((int32_t *)in[1]->data)[i] = (int32_t)ys[i];
        }
      }
      td_tensor *r = run1(in);
      for (int i = 0; i < n; i++) {
        uint64_t a = (uint64_t)xs[i], b = (uint64_t)ys[i], want;
        if (!d) {
          a = (uint32_t)(int32_t)xs[i];
          b = (uint32_t)(int32_t)ys[i];
        }
        switch (ops[k]) {
        case TD_IR_NEG: want = 0 - a; break;
        case TD_IR_ADD: want = a + b; break;
        case TD_IR_SUB: want = a - b; break;
        default: want = a * b; break;
        }
        uint64_t got = d ? (uint64_t)((int64_t *)r->data)[i] : (uint32_t)((int32_t *)r->data)[i];
        if (!d) want = (uint32_t)want;
        cr_expect_eq(got, want, "%s %s element %d: got %llu, want %llu", td_ops[ops[k]].name,
                     td_dtype_name(dt), i, (unsigned long long)got, (unsigned long long)want);
      }
      td_tensor_release(r);
      td_tensor_release(in[0]);
      td_tensor_release(in[1]);
    }
  }
}

/* The dtypes each elementwise op runs on, written out here (ops.def's
 * domains): FLOAT f32 f64, NUM and ints, ANY and bool, BOOL, ALL and the
 * halves (WHERE), CAST every pair.  Each op is run on each dtype: inside
 * its domain it runs, outside the interpreter names the op and dtype. */
static const char *expected_domain(td_op op) {
  switch (op) {
  case TD_IR_NEG: case TD_IR_ABS: case TD_IR_RELU: case TD_IR_FLOOR: case TD_IR_CEIL:
  case TD_IR_ROUND: case TD_IR_ADD: case TD_IR_SUB: case TD_IR_MUL: case TD_IR_DIV:
  case TD_IR_MOD: case TD_IR_FLOORDIV: case TD_IR_POW:
    return "NUM";
  case TD_IR_MIN: case TD_IR_MAX: case TD_IR_LT: case TD_IR_LE: case TD_IR_GT: case TD_IR_GE:
  case TD_IR_EQ: case TD_IR_NE:
    return "ANY";
  case TD_IR_NOT: case TD_IR_AND: case TD_IR_OR: return "BOOL";
  case TD_IR_WHERE: return "ALL";
  case TD_IR_CAST: return "CAST";
  default: return "FLOAT";
  }
}

static int in_domain(const char *dom, td_dtype dt) {
  int fl = dt == TD_F32 || dt == TD_F64, num = fl || dt == TD_I32 || dt == TD_I64;
  if (!strcmp(dom, "FLOAT")) return fl;
  if (!strcmp(dom, "NUM")) return num;
  if (!strcmp(dom, "ANY")) return num || dt == TD_BOOL;
  if (!strcmp(dom, "BOOL")) return dt == TD_BOOL;
  return 1;   /* ALL, CAST */
}

Test(elementwise, each_op_runs_on_the_dtypes_of_its_domain) {
  int n_ew = 0;
  for (int op = 0; op < TD_IR_OP_COUNT; op++) {
    td_opkind kind = td_ops[op].kind;
    if (!td_op_is_elementwise((td_op)op)) continue;
    n_ew++;
    cr_expect(td_ops[op].cexpr && *td_ops[op].cexpr, "%s has no C spelling", td_ops[op].name);
    for (int dt = 0; dt < TD_DTYPE_COUNT; dt++) {
      int want = in_domain(expected_domain((td_op)op), (td_dtype)dt);
      cr_expect_eq(td_ew_defined((td_op)op, (td_dtype)dt), want, "%s on %s", td_ops[op].name,
                   td_dtype_name((td_dtype)dt));
      /* run it on 3 elements of that dtype (tdk_elementwise itself: the
       * interpreter widens halves to f32 before it gets there) */
      int64_t n = 3;
      td_tensor *x[3] = {tensor(kind == TD_K_TERNARY ? TD_BOOL : (td_dtype)dt, 1, &n),
                         tensor((td_dtype)dt, 1, &n), tensor((td_dtype)dt, 1, &n)};
      td_tensor *y = tensor(kind == TD_K_COMPARE ? TD_BOOL : (td_dtype)dt, 1, &n);
      td_err e;
      int rc = tdk_elementwise((td_op)op, x, td_ops[op].arity, y, &e);
      if (want) {
        cr_expect_eq(rc, 0, "%s on %s: %s", td_ops[op].name, td_dtype_name((td_dtype)dt), e.msg);
      } else {
        char msg[128];
        snprintf(msg, sizeof msg, "op '%s' is not defined for %s", td_ops[op].name,
                 td_dtype_name((td_dtype)dt));
        cr_expect_eq(rc, -1, "%s on %s ran", td_ops[op].name, td_dtype_name((td_dtype)dt));
        cr_expect_str_eq(e.msg, msg);
      }
      for (int k = 0; k < 3; k++) td_tensor_release(x[k]);
      td_tensor_release(y);
    }
  }
  cr_expect_geq(n_ew, 36, "ops.def lists only %d elementwise ops", n_ew);
}

/* The same op through the interpreter's loops and through the scalar
 * evaluator the constant folder uses (lang/opeval.h) gives the same bits,
 * for every op and dtype of its domain, on values that probe the special
 * cases (NaN, infinities, -0, integer extremes, zero divisors); CAST on
 * every pair of dtypes. */
static const double PROBE_F[] = {0.0, -0.0, 0.5, -1.5, 2.5, 3.0, -7.25, 1e30, -1e-40, 88.5,
                                 INFINITY, -INFINITY, NAN};
static const int64_t PROBE_I[] = {0, 1, -1, 2, -7, 31, 100, INT32_MAX, INT32_MIN, INT64_MAX,
                                  INT64_MIN};
#define N_PF ((int)(sizeof PROBE_F / sizeof PROBE_F[0]))
#define N_PI ((int)(sizeof PROBE_I / sizeof PROBE_I[0]))

static int n_probes(td_dtype dt) {
  return dt == TD_BOOL ? 2 : td_dtype_is_float(dt) ? N_PF : N_PI;
}

/* Probe value i of dtype dt, as an element and as a scalar. */
static td_scalar probe(td_dtype dt, int i) {
  td_scalar v;
  memset(&v, 0, sizeof v);
  switch (dt) {
  case TD_BOOL: v.b8 = (uint8_t)i; break;
  case TD_I32: v.i32 = (int32_t)PROBE_I[i]; break;
  case TD_I64: v.i64 = PROBE_I[i]; break;
  case TD_F32: v.f32 = (float)PROBE_F[i]; break;
  case TD_F64: v.f64 = PROBE_F[i]; break;
  case TD_F16: v.f16 = td_f64_to_f16(PROBE_F[i]); break;
  default: v.bf16 = td_f64_to_bf16(PROBE_F[i]); break;
  }
  return v;
}

/* NaN's sign and payload are not part of any op's semantics: x86's FMA
 * instruction forms propagate different operands' NaNs, so a vectorised
 * loop and scalar code may give NaNs of different signs. */
static int is_nan(td_dtype dt, td_scalar v) {
  switch (dt) {
  case TD_F32: return isnan(v.f32);
  case TD_F64: return isnan(v.f64);
  case TD_F16: return (v.f16 & 0x7fff) > 0x7c00;
  case TD_BF16: return (v.bf16 & 0x7fff) > 0x7f80;
  default: return 0;
  }
}

/* Runs op over every tuple of probes (operand dtype dt, result odt) and
 * compares each element with td_ew_eval. */
static void check_against_scalars(td_op op, td_dtype dt, td_dtype odt) {
  int arity = td_ops[op].arity, n = 1;
  td_dtype dts[3] = {dt, dt, dt};
  if (td_ops[op].kind == TD_K_TERNARY) dts[0] = TD_BOOL;
  for (int k = 0; k < arity; k++) n *= n_probes(dts[k]);
  int64_t len = n;
  size_t oes = td_dtype_size(odt);
  td_tensor *x[3] = {NULL, NULL, NULL};
  for (int k = 0; k < arity; k++) x[k] = tensor(dts[k], 1, &len);
  td_tensor *y = tensor(odt, 1, &len);
  for (int i = 0; i < n; i++) {
    int r = i;   /* tuple i: operand k takes probe digit k of i */
    for (int k = 0; k < arity; k++) {
      int m = n_probes(dts[k]);
      td_scalar v = probe(dts[k], r % m);
      r /= m;
      memcpy((char *)x[k]->data + (size_t)i * td_dtype_size(dts[k]), &v, td_dtype_size(dts[k]));
    }
  }
  td_err e;
  cr_assert_eq(tdk_elementwise(op, x, arity, y, &e), 0, "%s on %s: %s", td_ops[op].name,
               td_dtype_name(dt), e.msg);
  for (int i = 0; i < n; i++) {
    td_scalar in[3], want;
    memset(&want, 0, sizeof want);
    for (int k = 0; k < arity; k++) {
      memset(&in[k], 0, sizeof in[k]);
      memcpy(&in[k], (char *)x[k]->data + (size_t)i * td_dtype_size(dts[k]), td_dtype_size(dts[k]));
    }
    cr_assert_eq(td_ew_eval(op, dts, arity, odt, in, &want, &e), 0, "%s", e.msg);
    td_scalar got;
    memset(&got, 0, sizeof got);
    memcpy(&got, (char *)y->data + (size_t)i * oes, oes);
    if (memcmp(&got, &want, oes) != 0 && !(is_nan(odt, got) && is_nan(odt, want))) {
      cr_expect(0, "%s %s -> %s, element %d: the loop and the scalar evaluator differ",
                td_ops[op].name, td_dtype_name(dt), td_dtype_name(odt), i);
      break;
    }
  }
  for (int k = 0; k < arity; k++) td_tensor_release(x[k]);
  td_tensor_release(y);
}

Test(elementwise, loops_and_scalar_evaluator_agree_bit_for_bit) {
  for (int op = 0; op < TD_IR_OP_COUNT; op++) {
    td_opkind kind = td_ops[op].kind;
    if (!td_op_is_elementwise((td_op)op)) continue;
    for (int dt = 0; dt < TD_DTYPE_COUNT; dt++) {
      if (op == TD_IR_CAST) {
        for (int to = 0; to < TD_DTYPE_COUNT; to++)
          check_against_scalars((td_op)op, (td_dtype)dt, (td_dtype)to);
      } else if (td_ew_defined((td_op)op, (td_dtype)dt)) {
        check_against_scalars((td_op)op, (td_dtype)dt, kind == TD_K_COMPARE ? TD_BOOL : (td_dtype)dt);
      }
    }
  }
}

Test(elementwise, large_contiguous_and_strided_paths_agree) {
  /* [64, 1000] + [1000] and [64, 1000] * [64, 1] against the reference */
  int64_t big[2] = {64, 1000}, row[1] = {1000}, col[2] = {64, 1};
  check_binary(TD_IR_ADD, TD_F32, 2, big, 1, row, 2, big, -1, 1);
  check_binary(TD_IR_MUL, TD_F32, 2, big, 2, col, 2, big, -1, 1);
  check_binary(TD_IR_SUB, TD_F32, 2, big, 2, big, 2, big, -1, 1);
}

/* ======================================================================= */
/* reductions                                                               */
/* ======================================================================= */

/* Reduces x (shape s, rank r) over `axes` with op, against a naive loop. */
static void check_reduce(td_op op, td_dtype dt, int r, const int64_t *s, uint32_t axes,
                         double lo, double hi) {
  teardown();
  setup();
  td_dim ds[TD_MAX_RANK], dout[TD_MAX_RANK];
  int64_t os[TD_MAX_RANK];
  for (int k = 0; k < r; k++) {
    ds[k] = s[k];
    os[k] = (axes >> k) & 1 ? 1 : s[k];
    dout[k] = os[k];
  }
  int x = input("x", dt, r, ds);
  td_attr a = noattr();
  a.axes = axes;
  td_dtype odt = op == TD_IR_ARGMAX || op == TD_IR_ARGMIN ? TD_I64 : dt;
  out(node(op, odt, r, dout, &x, 1, &a));
  td_tensor *tx = pattern(dt, r, s, 7, lo, hi);
  td_tensor *y = run1(&tx);
  expect_shape(y, r, os);
  int64_t on = y->numel;
  double *ref = calloc((size_t)on + 1, sizeof *ref);
  int64_t *seen = calloc((size_t)on + 1, sizeof *seen);
  for (int64_t i = 0; i < tx->numel; i++) {
    /* output index of input element i */
    int64_t rem = i, o = 0, ostride = 1;
    for (int k = r - 1; k >= 0; k--) {
      int64_t c = rem % s[k];
      rem /= s[k];
      if (!((axes >> k) & 1)) o += c * ostride;
      ostride *= os[k];
    }
    double v = td_tensor_get(tx, i);
    if (seen[o] == 0) ref[o] = op == TD_IR_SUM ? 0 : op == TD_IR_PROD ? 1 : v;
    switch (op) {
    case TD_IR_SUM: ref[o] += v; break;
    case TD_IR_PROD: ref[o] *= v; break;
    case TD_IR_RMAX: if (v > ref[o]) ref[o] = v; break;
    case TD_IR_RMIN: if (v < ref[o]) ref[o] = v; break;
    default: cr_assert_fail("check_reduce handles sum/prod/max/min"); break;
    }
    seen[o]++;
  }
  double rtol = dt == TD_F32 ? 1e-6 : dt == TD_F64 ? 1e-13 : 0;
  expect_close(y, ref, rtol, dt == TD_F32 ? 1e-6 : 0);
  free(ref);
  free(seen);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(reduce, sum_prod_max_min_over_axes) {
  int64_t s2[2] = {5, 7}, s3[3] = {3, 4, 5}, s4[4] = {2, 3, 2, 3};
  const td_op ops[] = {TD_IR_SUM, TD_IR_PROD, TD_IR_RMAX, TD_IR_RMIN};
  for (int k = 0; k < 4; k++) {
    td_op op = ops[k];
    double lo = op == TD_IR_PROD ? 0.5 : -3, hi = op == TD_IR_PROD ? 1.5 : 3;
    for (uint32_t m = 1; m < 4; m++) check_reduce(op, TD_F32, 2, s2, m, lo, hi);
    for (uint32_t m = 1; m < 8; m++) check_reduce(op, TD_F64, 3, s3, m, lo, hi);
    check_reduce(op, TD_F32, 4, s4, 0x5, lo, hi); /* axes {0, 2}: alternating runs */
    check_reduce(op, TD_F32, 4, s4, 0xA, lo, hi);
    check_reduce(op, TD_F32, 4, s4, 0xF, lo, hi);
    check_reduce(op, TD_I64, 3, s3, 0x2, -5, 5);
    check_reduce(op, TD_I32, 3, s3, 0x5, -5, 5);
  }
}

Test(reduce, size_one_axes_and_rank_zero) {
  int64_t s[3] = {1, 4, 1};
  check_reduce(TD_IR_SUM, TD_F32, 3, s, 0x1, -1, 1);
  check_reduce(TD_IR_SUM, TD_F32, 3, s, 0x2, -1, 1);
  check_reduce(TD_IR_RMAX, TD_F64, 3, s, 0x7, -1, 1);
  check_reduce(TD_IR_SUM, TD_F64, 0, NULL, 0, -1, 1);
}

Test(reduce, sum_of_a_million_f32_is_accurate) {
  int64_t n = 1000000;
  td_dim shp[1] = {n};
  td_dim one[1] = {1};
  int x = input("x", TD_F32, 1, shp);
  td_attr a = noattr();
  a.axes = 1;
  out(node(TD_IR_SUM, TD_F32, 1, one, &x, 1, &a));
  td_tensor *tx = pattern(TD_F32, 1, &n, 3, 0.0, 1.0);
  double ref = 0;
  for (int64_t i = 0; i < n; i++) ref += ((float *)tx->data)[i];
  td_tensor *y = run1(&tx);
  double got = ((float *)y->data)[0];
  cr_expect_leq(fabs(got - ref) / ref, 1e-6, "got %.9g want %.9g", got, ref);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(reduce, empty_axes_give_identities_and_max_fails) {
  td_dim s[2] = {0, 3}, o[2] = {1, 3};
  int x = input("x", TD_F32, 2, s);
  td_attr a = noattr();
  a.axes = 1;
  out(node(TD_IR_SUM, TD_F32, 2, o, &x, 1, &a));
  out(node(TD_IR_PROD, TD_F32, 2, o, &x, 1, &a));
  int64_t sh[2] = {0, 3};
  td_tensor *tx = tensor(TD_F32, 2, sh);
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){0, 0, 0}, 0, 0);
  expect_close(outs[1], (double[]){1, 1, 1}, 0, 0);
  free_outs(outs);
  /* max over the empty axis has no value */
  teardown();
  setup();
  x = input("x", TD_F32, 2, s);
  int m = node(TD_IR_RMAX, TD_F32, 2, o, &x, 1, &a);
  out(m);
  td_span sp;
  const char *msg = run_err(&tx, &sp);
  cr_expect(strstr(msg, "empty") != NULL, "%s", msg);
  cr_expect_eq(sp.line, 2);
  td_tensor_release(tx);
}

Test(reduce, max_and_min_propagate_nan) {
  td_dim s[2] = {2, 3}, o[2] = {2, 1};
  int x = input("x", TD_F32, 2, s);
  td_attr a = noattr();
  a.axes = 2;
  out(node(TD_IR_RMAX, TD_F32, 2, o, &x, 1, &a));
  out(node(TD_IR_RMIN, TD_F32, 2, o, &x, 1, &a));
  int64_t sh[2] = {2, 3};
  td_tensor *tx = from(TD_F32, 2, sh, (double[]){1, NAN, 3, -1, 5, 2});
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  expect_close(outs[0], (double[]){NAN, 5}, 0, 0);
  expect_close(outs[1], (double[]){NAN, -1}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(reduce, argmax_argmin_first_index_and_nan) {
  td_dim s[2] = {4, 3}, o0[2] = {1, 3}, o1[2] = {4, 1};
  int x = input("x", TD_F32, 2, s);
  td_attr a0 = noattr(), a1 = noattr();
  a0.axes = 1;
  a1.axes = 2;
  out(node(TD_IR_ARGMAX, TD_I64, 2, o0, &x, 1, &a0));
  out(node(TD_IR_ARGMIN, TD_I64, 2, o0, &x, 1, &a0));
  out(node(TD_IR_ARGMAX, TD_I64, 2, o1, &x, 1, &a1));
  out(node(TD_IR_ARGMIN, TD_I64, 2, o1, &x, 1, &a1));
  int64_t sh[2] = {4, 3};
  /* rows: ties, NaN in the middle, ties of the minimum, plain */
  td_tensor *tx = from(TD_F32, 2, sh,
                       (double[]){2, 7, 1,
                                  2, NAN, 0,
                                  9, 7, 0,
                                  -1, NAN, 5});
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  /* columns: col0 {2,2,9,-1} max at 2, min at 3; col1 {7,NaN,7,NaN} NaN at
   * 1 for both; col2 {1,0,0,5} max at 3, min first 0 at 1 */
  expect_close(outs[0], (double[]){2, 1, 3}, 0, 0);
  expect_close(outs[1], (double[]){3, 1, 1}, 0, 0);
  /* rows: {2,7,1} max 1 min 2; {2,NaN,0} NaN at 1; {9,7,0} 0 / 2; {-1,NaN,5} 1 / 1 */
  expect_close(outs[2], (double[]){1, 1, 0, 1}, 0, 0);
  expect_close(outs[3], (double[]){2, 1, 2, 1}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(reduce, argmax_of_integers_with_ties_over_a_middle_axis) {
  td_dim s[3] = {2, 3, 2}, o[3] = {2, 1, 2};
  int x = input("x", TD_I32, 3, s);
  td_attr a = noattr();
  a.axes = 2;
  out(node(TD_IR_ARGMAX, TD_I64, 3, o, &x, 1, &a));
  int64_t sh[3] = {2, 3, 2};
  td_tensor *tx = from(TD_I32, 3, sh, (double[]){1, 5, 4, 5, 4, 0, 3, 3, 3, 3, 3, 9});
  td_tensor *y = run1(&tx);
  expect_close(y, (double[]){1, 0, 0, 2}, 0, 0);
  td_tensor_release(y);
  td_tensor_release(tx);
}

/* ======================================================================= */
/* matmul                                                                   */
/* ======================================================================= */

/* a [.., M, K] @ b [.., K, N] with batch shapes ba / bb (right-aligned). */
static void check_matmul(td_dtype dt, int nba, const int64_t *ba, int nbb, const int64_t *bb,
                         int64_t m, int64_t k, int64_t n) {
  teardown();
  setup();
  int ra = nba + 2, rb = nbb + 2, nbo = nba > nbb ? nba : nbb, ro = nbo + 2;
  int64_t sa[TD_MAX_RANK], sb[TD_MAX_RANK], so[TD_MAX_RANK];
  td_dim da[TD_MAX_RANK], db[TD_MAX_RANK], dout[TD_MAX_RANK];
  for (int i = 0; i < nba; i++) sa[i] = ba[i];
  for (int i = 0; i < nbb; i++) sb[i] = bb[i];
  for (int i = 0; i < nbo; i++) {
    int ja = i - (nbo - nba), jb = i - (nbo - nbb);
    int64_t x = ja >= 0 ? ba[ja] : 1, y = jb >= 0 ? bb[jb] : 1;
    so[i] = x == 1 ? y : x;
  }
  sa[nba] = m, sa[nba + 1] = k;
  sb[nbb] = k, sb[nbb + 1] = n;
  so[nbo] = m, so[nbo + 1] = n;
  for (int i = 0; i < ra; i++) da[i] = sa[i];
  for (int i = 0; i < rb; i++) db[i] = sb[i];
  for (int i = 0; i < ro; i++) dout[i] = so[i];
  int a = input("a", dt, ra, da), b = input("b", dt, rb, db);
  out(bin(TD_IR_MATMUL, dt, ro, dout, a, b));
  td_tensor *in[2] = {pattern(dt, ra, sa, 11, -2, 2), pattern(dt, rb, sb, 12, -2, 2)};
  td_tensor *y = run1(in);
  expect_shape(y, ro, so);
  /* naive reference per output element */
  int64_t batches = m * n == 0 ? 0 : y->numel / (m * n);
  double *ref = calloc((size_t)y->numel + 1, sizeof *ref);
  for (int64_t bi = 0; bi < batches; bi++) {
    int64_t oa = bidx(nbo, so, bi, nba, ba) * m * k;
    int64_t ob = bidx(nbo, so, bi, nbb, bb) * k * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
          double x = td_tensor_get(in[0], oa + i * k + p), z = td_tensor_get(in[1], ob + p * n + j);
          s += x * z;
          mag += fabs(x * z);
        }
        ref[bi * m * n + i * n + j] = s;
        double g = td_tensor_get(y, bi * m * n + i * n + j);
        double tol = dt == TD_F32 ? 1e-5 * (mag + 1) : dt == TD_F64 ? 1e-12 * (mag + 1) : 0;
        if (fabs(g - s) > tol) {
          cr_expect(0, "[%lld,%lld,%lld]: got %.9g want %.9g", (long long)bi, (long long)i,
                    (long long)j, g, s);
          goto done;
        }
      }
  }
done:
  free(ref);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  td_tensor_release(y);
}

Test(matmul, odd_sizes_f32) {
  check_matmul(TD_F32, 0, NULL, 0, NULL, 1, 1, 1);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 7, 13, 5);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 65, 129, 33);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 3, 300, 70);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 200, 300, 150);
}

Test(matmul, large_blocked_f32_and_f64) {
  /* crosses the K (256) and M (192) block edges and several NR panels */
  check_matmul(TD_F32, 0, NULL, 0, NULL, 197, 531, 131);
  check_matmul(TD_F64, 0, NULL, 0, NULL, 197, 531, 131);
}

/* Each test runs in its own process, so the ISA cap read at the first
 * matmul applies to the whole test. */
static void check_packed_sizes(void) {
  check_matmul(TD_F32, 0, NULL, 0, NULL, 65, 129, 33);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 197, 531, 131);
  check_matmul(TD_F64, 0, NULL, 0, NULL, 65, 129, 33);
  check_matmul(TD_F64, 0, NULL, 0, NULL, 197, 300, 37);
}

Test(matmul, generic_kernels) {
  setenv("TDSL_GEMM_ISA", "generic", 1);
  check_packed_sizes();
}

Test(matmul, avx2_kernels) {
  setenv("TDSL_GEMM_ISA", "avx2", 1);
  check_packed_sizes();
}

/* Products above the threading threshold (2^21 multiply-adds) on two
 * threads: rows split over the threads (fewer batch items than threads),
 * batch items over the threads, and a row count that is not a multiple of
 * the split, against the naive reference. */
Test(matmul, two_threads) {
  setenv("TDSL_NUM_THREADS", "2", 1);
  int64_t b3[1] = {3}, b1[1] = {1};
  check_matmul(TD_F32, 0, NULL, 0, NULL, 301, 257, 65);
  check_matmul(TD_F64, 1, b1, 0, NULL, 203, 300, 157);
  check_matmul(TD_F32, 1, b3, 0, NULL, 130, 130, 130);
  check_matmul(TD_I32, 0, NULL, 0, NULL, 129, 129, 129);
}

Test(matmul, other_dtypes) {
  check_matmul(TD_F64, 0, NULL, 0, NULL, 7, 13, 5);
  check_matmul(TD_F64, 0, NULL, 0, NULL, 65, 129, 33);
  check_matmul(TD_I32, 0, NULL, 0, NULL, 9, 17, 5);
  check_matmul(TD_I64, 0, NULL, 0, NULL, 33, 20, 7);
}

Test(matmul, batched_with_broadcast_batch_dims) {
  int64_t b23[2] = {2, 3}, b3[1] = {3}, b1[1] = {1}, b4[1] = {4}, b21[2] = {2, 1};
  check_matmul(TD_F32, 2, b23, 1, b3, 4, 5, 6);
  check_matmul(TD_F32, 1, b1, 1, b4, 3, 2, 5);
  check_matmul(TD_F32, 0, NULL, 2, b23, 8, 40, 16);
  check_matmul(TD_F32, 2, b21, 1, b3, 9, 70, 70);
  check_matmul(TD_F64, 1, b4, 0, NULL, 3, 3, 3);
}

Test(matmul, empty_contraction_gives_zeros) {
  check_matmul(TD_F32, 0, NULL, 0, NULL, 3, 0, 4);
  check_matmul(TD_F32, 0, NULL, 0, NULL, 0, 5, 4);
  int64_t b2[1] = {2};
  check_matmul(TD_F64, 1, b2, 0, NULL, 2, 0, 2);
}

/* ======================================================================= */
/* movement and gather                                                      */
/* ======================================================================= */

Test(movement, reshape_copies_inputs_and_takes_over_intermediates) {
  td_dim s[2] = {2, 3}, r[2] = {3, 2};
  int x = input("x", TD_F32, 2, s);
  int direct = un(TD_IR_RESHAPE, TD_F32, 2, r, x); /* input: must copy */
  int e = un(TD_IR_NEG, TD_F32, 2, s, x);
  int stolen = un(TD_IR_RESHAPE, TD_F32, 2, r, e); /* intermediate: may take over */
  out(direct);
  out(stolen);
  int64_t sh[2] = {2, 3};
  td_tensor *tx = from(TD_F32, 2, sh, (double[]){1, 2, 3, 4, 5, 6});
  td_tensor **outs;
  td_err err;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &err, NULL), 0, "%s", err.msg);
  int64_t rs[2] = {3, 2};
  expect_shape(outs[0], 2, rs);
  expect_shape(outs[1], 2, rs);
  expect_close(outs[0], (double[]){1, 2, 3, 4, 5, 6}, 0, 0);
  expect_close(outs[1], (double[]){-1, -2, -3, -4, -5, -6}, 0, 0);
  cr_expect_neq(outs[0]->data, tx->data);
  cr_expect_eq(tx->refcount, 1);
  expect_close(tx, (double[]){1, 2, 3, 4, 5, 6}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(movement, permute_matches_index_arithmetic) {
  td_dim s[3] = {2, 3, 4}, p[3] = {4, 2, 3};
  int x = input("x", TD_F64, 3, s);
  td_attr a = noattr();
  a.perm[0] = 2, a.perm[1] = 0, a.perm[2] = 1;
  out(node(TD_IR_PERMUTE, TD_F64, 3, p, &x, 1, &a));
  int64_t sh[3] = {2, 3, 4};
  td_tensor *tx = pattern(TD_F64, 3, sh, 5, -1, 1);
  td_tensor *y = run1(&tx);
  double ref[24];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) ref[(i * 2 + j) * 3 + k] = td_tensor_get(tx, (j * 3 + k) * 4 + i);
  expect_close(y, ref, 0, 0);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(movement, broadcast_to_a_larger_shape) {
  td_dim s[2] = {3, 1}, o[3] = {2, 3, 4};
  int x = input("x", TD_I32, 2, s);
  out(un(TD_IR_BROADCAST, TD_I32, 3, o, x));
  int64_t sh[2] = {3, 1};
  td_tensor *tx = from(TD_I32, 2, sh, (double[]){7, 8, 9});
  td_tensor *y = run1(&tx);
  double ref[24];
  for (int i = 0; i < 24; i++) ref[i] = 7 + (i / 4) % 3;
  expect_close(y, ref, 0, 0);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(movement, slice_with_negative_step_and_symbolic_start) {
  int n = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, n);
  td_dim s[2] = {N, 4}, o[2] = {N, 2};
  int x = input("x", TD_F32, 2, s);
  td_attr a = noattr();
  a.start[0] = td_dim_sub(G, N, 1); /* x[::-1, 1::2] */
  a.step[0] = -1;
  a.start[1] = 1;
  a.step[1] = 2;
  out(node(TD_IR_SLICE, TD_F32, 2, o, &x, 1, &a));
  int64_t sh[2] = {3, 4};
  td_tensor *tx = pattern(TD_F32, 2, sh, 9, -5, 5);
  td_tensor *y = run1(&tx);
  int64_t os[2] = {3, 2};
  expect_shape(y, 2, os);
  double ref[6];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) ref[i * 2 + j] = td_tensor_get(tx, (2 - i) * 4 + 1 + 2 * j);
  expect_close(y, ref, 0, 0);
  td_tensor_release(tx);
  td_tensor_release(y);
}

Test(movement, slice_out_of_range_is_an_error_with_span) {
  td_dim s[1] = {4}, o[1] = {3};
  int x = input("x", TD_F32, 1, s);
  td_attr a = noattr();
  a.start[0] = 2;
  a.step[0] = 1;
  out(node(TD_IR_SLICE, TD_F32, 1, o, &x, 1, &a));
  int64_t sh[1] = {4};
  td_tensor *tx = tensor(TD_F32, 1, sh);
  td_span sp;
  const char *msg = run_err(&tx, &sp);
  cr_expect(strstr(msg, "out of range") != NULL, "%s", msg);
  cr_expect_eq(sp.line, 2);
  cr_expect_eq(sp.col, 11);
  td_tensor_release(tx);
}

Test(movement, concat_along_an_inner_axis) {
  td_dim s1[2] = {2, 3}, s2[2] = {2, 2}, o[2] = {2, 5};
  int a = input("a", TD_I64, 2, s1), b = input("b", TD_I64, 2, s2);
  td_attr at1 = noattr();
  at1.axis = 1;
  int in2[2] = {a, b};
  out(node(TD_IR_CONCAT, TD_I64, 2, o, in2, 2, &at1));
  td_tensor *in[2] = {from(TD_I64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                      from(TD_I64, 2, (int64_t[]){2, 2}, (double[]){7, 8, 9, 10})};
  td_tensor *y = run1(in);
  expect_close(y, (double[]){1, 2, 3, 7, 8, 4, 5, 6, 9, 10}, 0, 0);
  td_tensor_release(y);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(movement, concat_of_many_inputs_along_axis_0) {
  td_dim s[1] = {2}, o[1] = {10};
  int ids[5];
  for (int k = 0; k < 5; k++) ids[k] = input("p", TD_F32, 1, s);
  td_attr a = noattr();
  out(node(TD_IR_CONCAT, TD_F32, 1, o, ids, 5, &a));
  td_tensor *in[5];
  for (int k = 0; k < 5; k++) in[k] = from(TD_F32, 1, (int64_t[]){2}, (double[]){k, 10 + k});
  td_tensor *y = run1(in);
  expect_close(y, (double[]){0, 10, 1, 11, 2, 12, 3, 13, 4, 14}, 0, 0);
  td_tensor_release(y);
  for (int k = 0; k < 5; k++) td_tensor_release(in[k]);
}

Test(movement, gather_with_negative_indices) {
  td_dim xs[2] = {4, 3}, is[2] = {2, 2}, o0[3] = {2, 2, 3}, o1[3] = {4, 2, 2};
  int x = input("x", TD_F32, 2, xs), idx = input("i", TD_I64, 2, is);
  td_attr a0 = noattr(), a1 = noattr();
  a1.axis = 1;
  out(bin(TD_IR_GATHER, TD_F32, 3, o0, x, idx));
  out(node(TD_IR_GATHER, TD_F32, 3, o1, (int[]){x, idx}, 2, &a1));
  (void)a0;
  td_tensor *in[2] = {pattern(TD_F32, 2, (int64_t[]){4, 3}, 4, -9, 9),
                      from(TD_I64, 2, (int64_t[]){2, 2}, (double[]){-1, 0, 2, -3})};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(in, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  const int r0[4] = {3, 0, 2, 1}; /* axis 0 of size 4 */
  const int r1[4] = {2, 0, 2, 0}; /* axis 1 of size 3 */
  double ref0[12], ref1[16];
  for (int j = 0; j < 4; j++)
    for (int c = 0; c < 3; c++) ref0[j * 3 + c] = td_tensor_get(in[0], r0[j] * 3 + c);
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 4; j++) ref1[r * 4 + j] = td_tensor_get(in[0], r * 3 + r1[j]);
  expect_close(outs[0], ref0, 0, 0);
  expect_close(outs[1], ref1, 0, 0);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(movement, gather_out_of_range_names_the_node) {
  td_dim xs[1] = {5}, is[1] = {2};
  int x = input("x", TD_F32, 1, xs), idx = input("i", TD_I32, 1, is);
  int g = bin(TD_IR_GATHER, TD_F32, 1, is, x, idx);
  G->nodes[g].span = at(2, 17);
  out(g);
  td_tensor *in[2] = {tensor(TD_F32, 1, (int64_t[]){5}),
                      from(TD_I32, 1, (int64_t[]){2}, (double[]){1, 7})};
  memset(in[0]->data, 0, 20);
  td_span sp;
  const char *msg = run_err(in, &sp);
  cr_expect(strstr(msg, "index 7") != NULL, "%s", msg);
  cr_expect(strstr(msg, "size 5") != NULL, "%s", msg);
  cr_expect_eq(sp.line, 2);
  cr_expect_eq(sp.col, 17);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

/* ======================================================================= */
/* creation and random                                                      */
/* ======================================================================= */

Test(creation, const_arange_and_dim) {
  int n = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, n);
  td_dim s[1] = {N}, five[1] = {5};
  input("x", TD_F32, 1, s);
  td_attr c = noattr(), ar = noattr(), ai = noattr(), d = noattr();
  c.f = 2.5;
  ar.f = 1.0, ar.f2 = 0.5;
  ai.i = 10, ai.i2 = -3;
  d.dim = td_dim_add(G, td_dim_mul(G, N, 2), 1);
  out(node(TD_IR_CONST, TD_F32, 0, NULL, NULL, 0, &c));
  out(node(TD_IR_ARANGE, TD_F64, 1, s, NULL, 0, &ar));
  out(node(TD_IR_ARANGE, TD_I32, 1, five, NULL, 0, &ai));
  out(node(TD_IR_DIM, TD_I64, 0, NULL, NULL, 0, &d));
  td_tensor *tx = tensor(TD_F32, 1, (int64_t[]){4});
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  cr_expect_eq(outs[0]->rank, 0);
  expect_close(outs[0], (double[]){2.5}, 0, 0);
  expect_close(outs[1], (double[]){1.0, 1.5, 2.0, 2.5}, 0, 0);
  expect_close(outs[2], (double[]){10, 7, 4, 1, -2}, 0, 0);
  expect_close(outs[3], (double[]){9}, 0, 0);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(creation, rand_and_randn_follow_philox) {
  td_dim s[2] = {3, 5};
  td_attr u = noattr(), g = noattr();
  u.seed = 42, u.stream = 7;
  g.seed = 42, g.stream = 8;
  out(node(TD_IR_RAND, TD_F32, 2, s, NULL, 0, &u));
  out(node(TD_IR_RANDN, TD_F64, 2, s, NULL, 0, &g));
  td_tensor **o1, **o2, **o3;
  td_err e;
  td_run_opts opts;
  memset(&opts, 0, sizeof opts);
  cr_assert_eq(run_opts(NULL, &opts, &o1, &e, NULL), 0, "%s", e.msg);
  cr_assert_eq(run_opts(NULL, &opts, &o2, &e, NULL), 0, "%s", e.msg);
  opts.call_index = 3;
  cr_assert_eq(run_opts(NULL, &opts, &o3, &e, NULL), 0, "%s", e.msg);
  uint64_t s3u = td_hash_mix(7, 3), s3n = td_hash_mix(8, 3);
  int diff = 0;
  for (int i = 0; i < 15; i++) {
    float want = (float)td_rand_uniform(42, 7, (uint64_t)i);
    cr_expect_eq(((float *)o1[0]->data)[i], want, "rand %d", i);
    cr_expect_eq(((float *)o2[0]->data)[i], want, "rand again %d", i);
    cr_expect_eq(((double *)o1[1]->data)[i], td_rand_normal(42, 8, (uint64_t)i), "randn %d", i);
    cr_expect_eq(((float *)o3[0]->data)[i], (float)td_rand_uniform(42, s3u, (uint64_t)i));
    cr_expect_eq(((double *)o3[1]->data)[i], td_rand_normal(42, s3n, (uint64_t)i));
    diff += ((float *)o3[0]->data)[i] != want;
  }
  cr_expect_gt(diff, 10, "call_index must change the stream");
  free_outs(o1);
  free_outs(o2);
  free_outs(o3);
}

/* ======================================================================= */
/* print, trace, check-numerics                                             */
/* ======================================================================= */

typedef struct capture {
  char text[8192];
  int calls;
} capture;

static void on_text(void *ud, const char *s) {
  capture *c = ud;
  strncat(c->text, s, sizeof c->text - strlen(c->text) - 1);
  c->calls++;
}

static int print_node(const td_print_part *parts, int n_parts, const int *in, int n_in) {
  td_attr a = noattr();
  a.parts = td_arena_alloc(A, sizeof *parts * (size_t)n_parts);
  memcpy(a.parts, parts, sizeof *parts * (size_t)n_parts);
  a.n_parts = n_parts;
  return node(TD_IR_PRINT, TD_F32, 0, NULL, in, n_in, &a);
}

Test(effects, print_joins_parts_with_spaces) {
  td_dim s[1] = {3};
  int x = input("x", TD_F32, 1, s);
  int n = node(TD_IR_CONST, TD_I64, 0, NULL, NULL, 0, &(td_attr){.i = 3});
  td_print_part parts[] = {{"n =", 0}, {NULL, 1}, {"x:", 0}, {NULL, 0}};
  print_node(parts, 4, (int[]){x, n}, 2);
  out(x);
  td_tensor *tx = from(TD_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  capture c = {{0}, 0};
  td_run_opts o = {.on_print = on_text, .ud = &c};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, NULL), 0, "%s", e.msg);
  char *arr = td_tensor_format(tx, 1000);
  char want[256];
  snprintf(want, sizeof want, "n = 3 x: %s (f32[3])\n", arr);
  td_free(arr);
  cr_expect_str_eq(c.text, want);
  cr_expect_eq(c.calls, 1);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(effects, multi_line_arrays_stay_aligned) {
  td_dim s[2] = {2, 2};
  int x = input("x", TD_I64, 2, s);
  td_print_part parts[] = {{"m", 0}, {NULL, 0}};
  print_node(parts, 2, &x, 1);
  td_tensor *tx = from(TD_I64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  capture c = {{0}, 0};
  td_run_opts o = {.on_print = on_text, .ud = &c};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, NULL), 0, "%s", e.msg);
  /* expected: continuation lines shifted by the 2 columns of "m " */
  char *arr = td_tensor_format(tx, 1000);
  char want[256] = "m ";
  for (const char *p = arr; *p; p++) {
    size_t l = strlen(want);
    want[l] = *p;
    want[l + 1] = 0;
    if (*p == '\n' && p[1] && p[1] != '\n') strcat(want, "  ");
  }
  strcat(want, " (i64[2, 2])\n");
  td_free(arr);
  cr_expect_str_eq(c.text, want);
  cr_expect(strchr(c.text, '\n') < c.text + strlen(c.text) - 1, "the array spans lines");
  free_outs(outs);
  td_tensor_release(tx);
}

Test(effects, trace_reports_location_op_type_and_stats) {
  td_dim s[1] = {2};
  int x = input("x", TD_F32, 1, s);
  int one = node(TD_IR_CONST, TD_F32, 0, NULL, NULL, 0, &(td_attr){.f = 1.0});
  int y = bin(TD_IR_ADD, TD_F32, 1, s, x, one);
  G->nodes[y].span = at(2, 11);
  out(y);
  td_tensor *tx = from(TD_F32, 1, (int64_t[]){2}, (double[]){1, 3});
  capture c = {{0}, 0};
  td_run_opts o = {.on_trace = on_text, .ud = &c, .trace = 1, .diags = &D};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, NULL), 0, "%s", e.msg);
  cr_expect_eq(c.calls, 3);
  cr_expect(strstr(c.text, "m.td:2:11  add  f32[2]  min=2 max=4 mean=3\n") != NULL, "%s",
            c.text);
  cr_expect(strstr(c.text, "m.td:1:9  input  f32[2]  min=1 max=3 mean=2\n") != NULL, "%s",
            c.text);
  free_outs(outs);
  /* without diags: line:col */
  memset(&c, 0, sizeof c);
  o.diags = NULL;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, NULL), 0, "%s", e.msg);
  cr_expect(strstr(c.text, "2:11  add  f32[2]  min=2 max=4 mean=3\n") != NULL, "%s", c.text);
  free_outs(outs);
  td_tensor_release(tx);
}

Test(effects, check_numerics_stops_at_log_of_negative) {
  td_dim s[1] = {3};
  int x = input("x", TD_F32, 1, s);
  int l = un(TD_IR_LOG, TD_F32, 1, s, x);
  G->nodes[l].span = at(2, 13);
  int m = un(TD_IR_NEG, TD_F32, 1, s, l);
  out(m);
  td_tensor *tx = from(TD_F32, 1, (int64_t[]){3}, (double[]){1, -1, 2});
  td_run_opts o = {.check_numerics = 1};
  td_tensor **outs = NULL;
  td_err e;
  td_span sp;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, &sp), -1);
  cr_expect_str_eq(e.msg, "op 'log' produced NaN (first at flat index 1)");
  cr_expect_eq(sp.line, 2);
  cr_expect_eq(sp.col, 13);
  cr_expect_eq(sp.start, 213);
  /* Inf is reported too; without the check the run succeeds */
  td_tensor_set(tx, 1, 0.0);
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, &sp), -1);
  cr_expect_str_eq(e.msg, "op 'log' produced Inf (first at flat index 1)");
  o.check_numerics = 0;
  cr_assert_eq(run_opts(&tx, &o, &outs, &e, &sp), 0, "%s", e.msg);
  cr_expect_eq(sp.file, -1);
  free_outs(outs);
  td_tensor_release(tx);
}

/* ======================================================================= */
/* binding                                                                  */
/* ======================================================================= */

Test(binding, symbols_bind_and_mismatches_are_named) {
  int n = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, n);
  td_dim sx[2] = {N, 4}, sy[1] = {td_dim_add(G, td_dim_mul(G, N, 2), 1)};
  input("x", TD_F32, 2, sx);
  input("y", TD_I64, 1, sy);
  int64_t sv[1];
  td_err e;
  td_tensor *x = tensor(TD_F32, 2, (int64_t[]){3, 4});
  td_tensor *y = tensor(TD_I64, 1, (int64_t[]){7});
  td_tensor *in[2] = {x, y};
  cr_assert_eq(td_bind_inputs(G, in, 2, sv, &e), 0, "%s", e.msg);
  cr_expect_eq(sv[0], 3);
  /* wrong count */
  cr_expect_eq(td_bind_inputs(G, in, 1, sv, &e), -1);
  cr_expect(strstr(e.msg, "2 arguments, got 1") != NULL, "%s", e.msg);
  /* literal dim */
  td_tensor *x5 = tensor(TD_F32, 2, (int64_t[]){3, 5});
  in[0] = x5;
  cr_expect_eq(td_bind_inputs(G, in, 2, sv, &e), -1);
  cr_expect_str_eq(e.msg,
                   "argument 'x': expected f32[N, 4], got f32[3, 5]: dimension 1 is 5, expected 4");
  /* dtype */
  td_tensor *xi = tensor(TD_I32, 2, (int64_t[]){3, 4});
  in[0] = xi;
  cr_expect_eq(td_bind_inputs(G, in, 2, sv, &e), -1);
  cr_expect_str_eq(e.msg,
                   "argument 'x': expected f32[N, 4], got i32[3, 4]: dtype is i32, expected f32");
  /* rank */
  td_tensor *x1 = tensor(TD_F32, 1, (int64_t[]){3});
  in[0] = x1;
  cr_expect_eq(td_bind_inputs(G, in, 2, sv, &e), -1);
  cr_expect(strstr(e.msg, "rank is 1, expected 2") != NULL, "%s", e.msg);
  /* composite dim */
  td_tensor *y8 = tensor(TD_I64, 1, (int64_t[]){8});
  in[0] = x;
  in[1] = y8;
  cr_expect_eq(td_bind_inputs(G, in, 2, sv, &e), -1);
  cr_expect_str_eq(e.msg, "argument 'y': expected i64[2*N + 1], got i64[8]: dimension 0 is 8, "
                          "expected 2*N + 1 = 7");
  /* the run itself reports the same and blames no node */
  td_span sp;
  td_tensor **outs = NULL;
  cr_expect_eq(td_interp_run(G, in, NULL, NULL, &outs, &e, &sp), -1);
  cr_expect_eq(sp.file, -1);
  td_tensor *all[] = {x, y, x5, xi, x1, y8};
  for (int k = 0; k < 6; k++) td_tensor_release(all[k]);
}

Test(binding, a_symbol_seen_twice_must_agree) {
  int n = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, n);
  td_dim sa[1] = {N}, sb[2] = {2, N};
  input("a", TD_F32, 1, sa);
  input("b", TD_F32, 2, sb);
  td_tensor *in[2] = {tensor(TD_F32, 1, (int64_t[]){3}), tensor(TD_F32, 2, (int64_t[]){2, 4})};
  int64_t sv[1];
  td_err e;
  cr_expect_eq(td_bind_inputs(G, in, 2, sv, &e), -1);
  cr_expect_str_eq(e.msg, "argument 'b': expected f32[2, N], got f32[2, 4]: dimension 1 is 4, "
                          "expected N = 3 (from argument 'a', dimension 0)");
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

/* ======================================================================= */
/* params                                                                   */
/* ======================================================================= */

static int param(const char *name, td_dtype dt, int rank, const td_dim *shape, td_init_kind k,
                 double a, double b) {
  td_attr at1 = noattr();
  at1.i = G->n_params;
  at1.init = k;
  at1.init_a = a;
  at1.init_b = b;
  int id = node(TD_IR_PARAM, dt, rank, shape, NULL, 0, &at1);
  G->nodes[id].name = name;
  return id;
}

Test(params, recipes_initialise_reproducibly) {
  td_dim s[2] = {3, 4}, v[1] = {5};
  param("w", TD_F32, 2, s, TD_INIT_UNIFORM, -0.5, 0.5);
  param("b", TD_F64, 1, v, TD_INIT_NORMAL, 1.0, 2.0);
  param("z", TD_F32, 1, v, TD_INIT_ZEROS, 0, 0);
  param("o", TD_I32, 1, v, TD_INIT_ONES, 0, 0);
  param("f", TD_F32, 1, v, TD_INIT_FULL, 0.25, 0);
  td_tensor *p[5];
  td_err e;
  cr_assert_eq(td_make_params(G, NULL, 9, p, &e), 0, "%s", e.msg);
  uint64_t hw = td_hash_str("w"), hb = td_hash_str("b");
  for (int i = 0; i < 12; i++)
    cr_expect_eq(((float *)p[0]->data)[i], (float)(-0.5 + 1.0 * td_rand_uniform(9, hw, (uint64_t)i)));
  for (int i = 0; i < 5; i++) {
    cr_expect_eq(((double *)p[1]->data)[i], 1.0 + 2.0 * td_rand_normal(9, hb, (uint64_t)i));
    cr_expect_eq(td_tensor_get(p[2], i), 0.0);
    cr_expect_eq(((int32_t *)p[3]->data)[i], 1);
    cr_expect_eq(td_tensor_get(p[4], i), 0.25);
  }
  /* the params feed a run */
  int w = G->params[0];
  td_dim s1[2] = {1, 4};
  td_attr a = noattr();
  a.axes = 1;
  out(node(TD_IR_SUM, TD_F32, 2, s1, &w, 1, &a));
  td_tensor **outs;
  cr_assert_eq(td_interp_run(G, NULL, p, NULL, &outs, &e, NULL), 0, "%s", e.msg);
  for (int j = 0; j < 4; j++) {
    double r = 0;
    for (int i = 0; i < 3; i++) r += ((float *)p[0]->data)[i * 4 + j];
    cr_expect_float_eq(td_tensor_get(outs[0], j), r, 1e-6);
  }
  free_outs(outs);
  for (int k = 0; k < 5; k++) td_tensor_release(p[k]);
}

Test(params, weights_are_checked_and_every_problem_reported) {
  td_dim s[2] = {3, 4}, v[1] = {4};
  param("fc.weight", TD_F32, 2, s, TD_INIT_ZEROS, 0, 0);
  param("fc.bias", TD_F32, 1, v, TD_INIT_ZEROS, 0, 0);
  param("norm.scale", TD_F32, 1, v, TD_INIT_ONES, 0, 0);
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err e;
  td_tensor *wt = tensor(TD_F32, 2, (int64_t[]){4, 3});
  td_tensor *bt = tensor(TD_F64, 1, (int64_t[]){4});
  td_tensor *xt = tensor(TD_F32, 1, (int64_t[]){1});
  cr_assert_eq(td_tensor_map_put(&m, "fc.weight", wt, &e), 0);
  cr_assert_eq(td_tensor_map_put(&m, "fc.bias", bt, &e), 0);
  cr_assert_eq(td_tensor_map_put(&m, "extra", xt, &e), 0);
  td_tensor *p[3] = {(td_tensor *)1, (td_tensor *)1, (td_tensor *)1};
  cr_expect_eq(td_make_params(G, &m, 0, p, &e), -1);
  cr_expect(strstr(e.msg, "weight 'fc.weight' is f32[4, 3], expected f32[3, 4]") != NULL, "%s", e.msg);
  cr_expect(strstr(e.msg, "weight 'fc.bias' has dtype f64, expected f32") != NULL, "%s", e.msg);
  cr_expect(strstr(e.msg, "missing weight 'norm.scale' (f32[4])") != NULL, "%s", e.msg);
  cr_expect(strstr(e.msg, "unexpected weight 'extra'") != NULL, "%s", e.msg);
  int lines = 1;
  for (const char *q = e.msg; *q; q++) lines += *q == '\n';
  cr_expect_eq(lines, 4, "%s", e.msg);
  for (int k = 0; k < 3; k++) cr_expect_null(p[k]);
  td_tensor_map_free(&m);
  /* a clean match retains the given tensors */
  td_tensor_map_init(&m);
  td_tensor *w2 = tensor(TD_F32, 2, (int64_t[]){3, 4}), *b2 = tensor(TD_F32, 1, (int64_t[]){4});
  td_tensor *s2 = tensor(TD_F32, 1, (int64_t[]){4});
  td_tensor_map_put(&m, "fc.weight", w2, &e);
  td_tensor_map_put(&m, "fc.bias", b2, &e);
  td_tensor_map_put(&m, "norm.scale", s2, &e);
  cr_assert_eq(td_make_params(G, &m, 0, p, &e), 0, "%s", e.msg);
  cr_expect_eq(p[0], w2);
  cr_expect_eq(p[2], s2);
  cr_expect_eq(w2->refcount, 3);
  td_tensor_map_free(&m);
  for (int k = 0; k < 3; k++) td_tensor_release(p[k]);
  td_tensor *all[] = {wt, bt, xt, w2, b2, s2};
  for (int k = 0; k < 6; k++) td_tensor_release(all[k]);
}

/* ======================================================================= */
/* memory                                                                   */
/* ======================================================================= */

/* A graph touching most kernels: matmul, broadcast add, reduce, reshape,
 * gather, print. */
static void build_mixed(void) {
  td_dim sx[2] = {4, 8}, sw[2] = {8, 8}, s8[1] = {8}, r[2] = {8, 4}, s1[2] = {4, 1};
  int x = input("x", TD_F32, 2, sx), w = input("w", TD_F32, 2, sw);
  int mm = bin(TD_IR_MATMUL, TD_F32, 2, sx, x, w);
  int b = node(TD_IR_ARANGE, TD_F32, 1, s8, NULL, 0, &(td_attr){.f = 0, .f2 = 1});
  int y = bin(TD_IR_ADD, TD_F32, 2, sx, mm, b);
  int t = un(TD_IR_TANH, TD_F32, 2, sx, y);
  int rs = un(TD_IR_RESHAPE, TD_F32, 2, r, t);
  td_attr ax = noattr();
  ax.axes = 2;
  int s = node(TD_IR_SUM, TD_F32, 2, s1, &y, 1, &ax);
  td_print_part parts[] = {{"s", 0}, {NULL, 0}};
  print_node(parts, 2, &s, 1);
  out(rs);
  out(s);
}

static void ignore_text(void *ud, const char *s) {
  (void)ud;
  (void)s;
}

Test(memory, inputs_are_released_and_outputs_owned) {
  build_mixed();
  td_tensor *in[2] = {pattern(TD_F32, 2, (int64_t[]){4, 8}, 1, -1, 1),
                      pattern(TD_F32, 2, (int64_t[]){8, 8}, 2, -1, 1)};
  td_run_opts o = {.on_print = ignore_text, .on_trace = ignore_text, .trace = 1};
  td_tensor **outs;
  td_err e;
  cr_assert_eq(run_opts(in, &o, &outs, &e, NULL), 0, "%s", e.msg);
  cr_expect_eq(in[0]->refcount, 1);
  cr_expect_eq(in[1]->refcount, 1);
  cr_expect_eq(outs[0]->refcount, 1);
  cr_expect_eq(outs[1]->refcount, 1);
  free_outs(outs);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

Test(memory, every_allocation_failure_is_reported_cleanly) {
  build_mixed();
  td_tensor *in[2] = {pattern(TD_F32, 2, (int64_t[]){4, 8}, 1, -1, 1),
                      pattern(TD_F32, 2, (int64_t[]){8, 8}, 2, -1, 1)};
  td_run_opts o = {.on_print = ignore_text, .on_trace = ignore_text, .trace = 1};
  int ok = 0;
  for (long n = 1; n < 200 && !ok; n++) {
    td_tensor **outs = NULL;
    td_err e;
    td_mem_fail_after(n);
    int rc = run_opts(in, &o, &outs, &e, NULL);
    td_mem_fail_after(0);
    if (rc == 0) {
      ok = 1;
      free_outs(outs);
    } else {
      cr_expect_null(outs);
      cr_expect(strlen(e.msg) > 0);
    }
    cr_expect_eq(in[0]->refcount, 1);
  }
  cr_expect(ok, "the run never succeeded");
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

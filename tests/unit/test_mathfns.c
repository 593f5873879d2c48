/* test_mathfns.c - the f32 transcendentals against float64 libm.
 *
 * tdsl's f32 exp, tanh, erf, log and exact gelu (and, through exp,
 * sigmoid and silu) are polynomial approximations, so that compiled loops
 * vectorise: compiler/codegen_expr.c generates them and runtime/scalar.h
 * (eager mode, CUDA) computes them with the same operations in the same
 * order.  Each test compiles `fn f(x: f32[N]) -> f32[N] { op(x) }`, runs
 * it over a dense sweep of f32 inputs (every case split of the
 * approximation and both signs) and over the special values, checks that
 * eager mode gives the same bits for every input, and bounds the error
 * against the float64 function of the same f32 input — the bounds
 * documented in docs/compiler.md.
 */
#include <criterion/criterion.h>
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

typedef double (*ref_fn)(double);

/* Compiles `op(x)` over f32[N] and applies it to n values; returns the
 * outputs (td_malloc'd copy), after checking that eager mode computes the
 * same bits for each of them (any NaN for a NaN). */
static float *run_op(const char *op, const float *xs, int64_t n) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
  char src[256];
  snprintf(src, sizeof src, "import nn\nfn f(x: f32[N]) -> f32[N] { %s }\n", op);
  cr_assert_eq(td_program_load_text(p, "t.td", src), 0, "%s does not load", op);
  td_graph *g = td_program_lower(p, "f"), *o;
  cr_assert_not_null(g);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *plan = td_plan_build(o, &e);
  cr_assert_not_null(plan, "%s", e.msg);
  td_compiled *c = td_compile(plan, NULL, &e);
  cr_assert_not_null(c, "%s", e.msg);
  td_tensor *x = td_tensor_new(TD_F32, 1, &n, &e), **outs = NULL, **eager = NULL;
  memcpy(x->data, xs, (size_t)n * sizeof *xs);
  cr_assert_eq(td_compiled_run(c, &x, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  cr_assert_eq(td_interp_run(g, &x, NULL, NULL, &eager, &e, NULL), 0, "%s", e.msg);
  float *ys = td_malloc((size_t)n * sizeof *ys);
  memcpy(ys, outs[0]->data, (size_t)n * sizeof *ys);
  const float *ye = eager[0]->data;
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&ys[i], &ye[i], sizeof *ys) && !(isnan(ys[i]) && isnan(ye[i]))) differ += first < 0 ? (first = i, 1) : 1;
  cr_expect_eq(differ, 0, "%s: %lld of %lld values differ from eager mode's, first at x = %.9g: %.9g, eager %.9g", op,
               (long long)differ, (long long)n, first < 0 ? 0 : xs[first], first < 0 ? 0 : ys[first],
               first < 0 ? 0 : ye[first]);
  td_tensor_release(outs[0]);
  td_free(outs);
  td_tensor_release(eager[0]);
  td_free(eager);
  td_tensor_release(x);
  td_compiled_free(c);
  td_arena_free(a);
  return ys;
}

/* n evenly spaced f32 values over [lo, hi]. */
static float *sweep(double lo, double hi, int64_t n) {
  float *xs = td_malloc((size_t)n * sizeof *xs);
  for (int64_t i = 0; i < n; i++) xs[i] = (float)(lo + (hi - lo) * (double)i / (double)(n - 1));
  return xs;
}

/* Worst error of op over xs: |y - r| / max(|r|, floor) (floor 0: relative). */
static double worst(const char *op, ref_fn ref, const float *xs, int64_t n, double floor_) {
  float *ys = run_op(op, xs, n);
  double w = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = ref(xs[i]), err = fabs(ys[i] - r) / fmax(fabs(r), floor_);
    if (!(err <= w)) w = err;
  }
  td_free(ys);
  return w;
}

static double sweep_worst(const char *op, ref_fn ref, double lo, double hi, double floor_) {
  int64_t n = 400001;
  float *xs = sweep(lo, hi, n);
  double w = worst(op, ref, xs, n, floor_);
  td_free(xs);
  if (getenv("TDSL_MATHFNS_VERBOSE")) fprintf(stderr, "%s on [%g, %g], floor %g: %.3g\n", op, lo, hi, floor_, w);
  return w;
}

/* Special values: the outputs for NaN, -inf, +inf, -0. */
static void specials(const char *op, float *out4) {
  float xs[4] = {__builtin_nanf(""), -__builtin_inff(), __builtin_inff(), -0.0f};
  float *ys = run_op(op, xs, 4);
  memcpy(out4, ys, sizeof xs);
  td_free(ys);
}

static double gelu64(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double sigmoid64(double x) { return 1 / (1 + exp(-x)); }
/* 0.5 x (1 + tanh(u)) as x / (1 + e^-2u): in float64 too, 1 + tanh(u) cancels to 0 below u = -19 */
static double gelu_tanh64(double x) { return x / (1 + exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double silu64(double x) { return x / (1 + exp(-x)); }

Test(mathfns, tanh_within_4e7_relative) {
  cr_expect_lt(sweep_worst("tanh(x)", tanh, -0.7, 0.7, 1e-30), 4e-7);
  cr_expect_lt(sweep_worst("tanh(x)", tanh, -12, 12, 1e-30), 4e-7);
  float s[4];
  specials("tanh(x)", s);
  cr_expect(isnan(s[0]));
  cr_expect_eq(s[1], -1.0f);
  cr_expect_eq(s[2], 1.0f);
  cr_expect(s[3] == 0 && signbit(s[3]));
}

Test(mathfns, erf_within_2e7_absolute) {
  cr_expect_lt(sweep_worst("erf(x)", erf, -1, 1, 1e-30), 3e-7, "relative below 1");
  cr_expect_lt(sweep_worst("erf(x)", erf, -6, 6, 1), 2e-7);
  float s[4];
  specials("erf(x)", s);
  cr_expect(isnan(s[0]));
  cr_expect_eq(s[1], -1.0f);
  cr_expect_eq(s[2], 1.0f);
  cr_expect(s[3] == 0);
}

Test(mathfns, gelu_within_bound) {
  /* relative where gelu is not tiny, absolute (scaled by 1e-3) in the tail */
  cr_expect_lt(sweep_worst("gelu(x)", gelu64, -10, 10, 1), 1.5e-7, "absolute");
  cr_expect_lt(sweep_worst("gelu(x)", gelu64, -5.6, 8, 1e-30), 3e-6, "relative above -5.6 (the f32 rounding of x / sqrt 2, amplified by 2 s^2 in the tail)");
  float s[4];
  specials("gelu(x)", s);
  cr_expect(isnan(s[0]));
  cr_expect(s[1] == 0 || isnan(s[1]));   /* -inf * 0: libm's form gives NaN too */
  cr_expect(isinf(s[2]) && s[2] > 0);
}

Test(mathfns, log_within_bound) {
  cr_expect_lt(sweep_worst("log(x)", log, 1e-3, 100, 1), 2e-7, "absolute near 1");
  cr_expect_lt(sweep_worst("log(x)", log, 0.5, 0.95, 1e-30), 3e-7);
  cr_expect_lt(sweep_worst("log(x)", log, 1.05, 3e4, 1e-30), 3e-7);
  float tiny[6] = {1e-45f, 1e-40f, 1.17549435e-38f, 3e-30f, 3e30f, 3.4e38f};
  cr_expect_lt(worst("log(x)", log, tiny, 6, 0), 3e-7, "subnormals and extremes");
  float s[4];
  specials("log(x)", s);
  cr_expect(isnan(s[0]));
  cr_expect(isnan(s[1]));
  cr_expect(isinf(s[2]) && s[2] > 0);
  cr_expect(isinf(s[3]) && s[3] < 0);
  float neg = -1.0f, *y = run_op("log(x)", &neg, 1);
  cr_expect(isnan(y[0]));
  td_free(y);
}

Test(mathfns, exp_sigmoid_silu_within_bound) {
  cr_expect_lt(sweep_worst("exp(x)", exp, -87, 88.7, 1e-30), 4e-7);
  cr_expect_lt(sweep_worst("sigmoid(x)", sigmoid64, -80, 80, 1e-30), 6e-7);
  cr_expect_lt(sweep_worst("silu(x)", silu64, -80, 80, 1e-30), 6e-7);
}

/* The tanh form of gelu, nn.gelu_tanh: x * sigmoid(2u), the same as
 * 0.5 x (1 + tanh(u)) without its cancellation.  The f32 rounding of
 * u = 0.79788 (x + 0.044715 x^3) costs up to a few ulp relative in the
 * tail, where gelu ~ x e^2u. */
Test(mathfns, gelu_tanh_within_bound) {
  const char *f = "nn.gelu_tanh(x)";
  cr_expect_lt(sweep_worst(f, gelu_tanh64, -12, 12, 1), 1.6e-7, "absolute");
  cr_expect_lt(sweep_worst(f, gelu_tanh64, -3, 12, 1e-30), 1e-6, "relative above -3");
  cr_expect_lt(sweep_worst(f, gelu_tanh64, -9, -3, 1e-30), 1.5e-5, "relative in the tail");
  float s[4];
  specials(f, s);
  cr_expect(isnan(s[0]));
  cr_expect(isnan(s[1]) || s[1] == 0);   /* -inf * 0 */
  cr_expect(isinf(s[2]) && s[2] > 0);
  float big[3] = {-20.0f, -1e4f, 88.0f}, *y = run_op(f, big, 3);
  cr_expect(y[0] > -1e-30f && y[0] <= 0 && y[1] == 0, "the far tail is 0 or tiny: %g %g", y[0], y[1]);
  cr_expect_eq(y[2], 88.0f);
  td_free(y);
}

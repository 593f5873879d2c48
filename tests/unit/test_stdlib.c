/* test_stdlib.c - the standard library (stdlib/nn.td) against float64
 * references written here in plain C.
 *
 * Each test lowers a small tdsl entry point that calls an nn function,
 * runs it in f32 through the eager interpreter on random inputs, and
 * compares with a naive double-precision implementation of the textbook
 * formula.  The accuracy required is the one promised in the issue:
 * relative error at most 1e-5, measured as max|got - ref| / max|ref|.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang/elab.h"
#include "interp/interp.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

typedef struct run {
  td_arena *arena;
  td_diags diags;
  td_program *prog;
  td_graph *g;
} run;

static void load(run *r, const char *src, const char *entry) {
  r->arena = td_arena_new();
  td_diags_init(&r->diags, r->arena);
  r->prog = td_program_new(r->arena, &r->diags);
  td_program_add_search_dir(r->prog, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(r->prog, "t.td", src), 0, "load failed");
  r->g = td_program_lower(r->prog, entry);
  if (!r->g) td_diag_render(&r->diags, stderr, 0);
  cr_assert_not_null(r->g, "lowering %s failed", entry);
}

/* A tensor of uniform values in [lo, hi) from a fixed-seed LCG. */
static td_tensor *random_tensor(int rank, const int64_t *shape, double lo, double hi, unsigned *seed) {
  td_err err;
  td_tensor *t = td_tensor_new(TD_F32, rank, shape, &err);
  cr_assert_not_null(t);
  float *d = t->data;
  for (int64_t i = 0; i < t->numel; i++) {
    *seed = *seed * 1103515245u + 12345u;
    d[i] = (float)(lo + (hi - lo) * ((*seed >> 8) & 0xffff) / 65536.0);
  }
  return t;
}

/* Runs the graph on inputs; returns output 0 (caller releases). */
static td_tensor *exec(run *r, td_tensor **inputs) {
  td_err err;
  td_tensor **params = calloc((size_t)r->g->n_params + 1, sizeof *params);
  cr_assert_eq(td_make_params(r->g, NULL, 0, params, &err), 0, "%s", err.msg);
  td_run_opts o;
  memset(&o, 0, sizeof o);
  td_tensor **outs = NULL;
  int rc = td_interp_run(r->g, inputs, params, &o, &outs, &err, NULL);
  cr_assert_eq(rc, 0, "%s", err.msg);
  for (int i = 0; i < r->g->n_params; i++) td_tensor_release(params[i]);
  free(params);
  td_tensor *y = outs[0];
  for (int i = 1; i < r->g->n_outputs; i++) td_tensor_release(outs[i]);
  free(outs);
  return y;
}

static double rel_error(const td_tensor *got, const double *ref, int64_t n) {
  cr_assert_eq(got->numel, n);
  const float *g = got->data;
  double maxerr = 0, maxref = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)g[i] - ref[i]);
    if (e > maxerr || e != e) maxerr = e;
    if (fabs(ref[i]) > maxref) maxref = fabs(ref[i]);
  }
  return maxerr / (maxref > 0 ? maxref : 1);
}

static void done(run *r, td_tensor **ts, int n) {
  for (int i = 0; i < n; i++) td_tensor_release(ts[i]);
  td_arena_free(r->arena);
}

/* ---- softmax ---- */

static void ref_softmax(const float *x, double *y, int64_t rows, int64_t d) {
  for (int64_t r = 0; r < rows; r++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < d; j++) m = fmax(m, x[r * d + j]);
    for (int64_t j = 0; j < d; j++) s += exp(x[r * d + j] - m);
    for (int64_t j = 0; j < d; j++) y[r * d + j] = exp(x[r * d + j] - m) / s;
  }
}

Test(stdlib, softmax_matches_float64) {
  run r;
  load(&r, "import nn\nfn f(x: f32[N, D]) -> f32[N, D] { nn.softmax(x) }\n", "f");
  unsigned seed = 1;
  int64_t shapes[][2] = {{1, 1}, {3, 7}, {16, 100}, {64, 1000}};
  for (int k = 0; k < 4; k++) {
    td_tensor *x = random_tensor(2, shapes[k], -20, 20, &seed);
    td_tensor *y = exec(&r, &x);
    int64_t n = x->numel;
    double *ref = malloc((size_t)n * sizeof *ref);
    ref_softmax(x->data, ref, shapes[k][0], shapes[k][1]);
    double e = rel_error(y, ref, n);
    cr_expect_leq(e, 1e-5, "softmax [%lld, %lld]: relative error %g", (long long)shapes[k][0],
                  (long long)shapes[k][1], e);
    free(ref);
    td_tensor *ts[2] = {x, y};
    for (int i = 0; i < 2; i++) td_tensor_release(ts[i]);
  }
  done(&r, NULL, 0);
}

Test(stdlib, log_softmax_matches_float64) {
  run r;
  load(&r, "import nn\nfn f(x: f32[N, D]) -> f32[N, D] { nn.log_softmax(x) }\n", "f");
  unsigned seed = 2;
  int64_t shape[2] = {8, 50};
  td_tensor *x = random_tensor(2, shape, -5, 5, &seed);
  td_tensor *y = exec(&r, &x);
  double ref[400];
  ref_softmax(x->data, ref, 8, 50);
  for (int i = 0; i < 400; i++) ref[i] = log(ref[i]);
  double e = rel_error(y, ref, 400);
  cr_expect_leq(e, 1e-5, "relative error %g", e);
  td_tensor *ts[2] = {x, y};
  done(&r, ts, 2);
}

/* ---- layer_norm ---- */

Test(stdlib, layer_norm_matches_float64) {
  run r;
  load(&r, "import nn\nfn f(x: f32[N, D], w: f32[D], b: f32[D]) -> f32[N, D] { nn.layer_norm(x, w, b) }\n", "f");
  unsigned seed = 3;
  int64_t xs[2] = {32, 256}, ws[1] = {256};
  td_tensor *in[3] = {random_tensor(2, xs, -3, 5, &seed), random_tensor(1, ws, 0.5, 1.5, &seed),
                      random_tensor(1, ws, -1, 1, &seed)};
  td_tensor *y = exec(&r, in);
  const float *x = in[0]->data, *w = in[1]->data, *b = in[2]->data;
  double *ref = malloc(32 * 256 * sizeof *ref);
  for (int i = 0; i < 32; i++) {
    double mu = 0, var = 0;
    for (int j = 0; j < 256; j++) mu += x[i * 256 + j];
    mu /= 256;
    for (int j = 0; j < 256; j++) var += (x[i * 256 + j] - mu) * (x[i * 256 + j] - mu);
    var /= 256;
    for (int j = 0; j < 256; j++)
      ref[i * 256 + j] = (x[i * 256 + j] - mu) / sqrt(var + 1e-5) * w[j] + b[j];
  }
  double e = rel_error(y, ref, 32 * 256);
  cr_expect_leq(e, 1e-5, "relative error %g", e);
  free(ref);
  td_tensor *ts[4] = {in[0], in[1], in[2], y};
  done(&r, ts, 4);
}

Test(stdlib, rms_norm_matches_float64) {
  run r;
  load(&r, "import nn\nfn f(x: f32[N, D], w: f32[D]) -> f32[N, D] { nn.rms_norm(x, w) }\n", "f");
  unsigned seed = 4;
  int64_t xs[2] = {4, 64}, ws[1] = {64};
  td_tensor *in[2] = {random_tensor(2, xs, -2, 2, &seed), random_tensor(1, ws, 0.5, 1.5, &seed)};
  td_tensor *y = exec(&r, in);
  const float *x = in[0]->data, *w = in[1]->data;
  double ref[256];
  for (int i = 0; i < 4; i++) {
    double ms = 0;
    for (int j = 0; j < 64; j++) ms += (double)x[i * 64 + j] * x[i * 64 + j];
    ms /= 64;
    for (int j = 0; j < 64; j++) ref[i * 64 + j] = x[i * 64 + j] / sqrt(ms + 1e-6) * w[j];
  }
  double e = rel_error(y, ref, 256);
  cr_expect_leq(e, 1e-5, "relative error %g", e);
  td_tensor *ts[3] = {in[0], in[1], y};
  done(&r, ts, 3);
}

/* ---- attention ---- */

/* q, k, v: [BH, T, E] flattened; causal masks keys after the query. */
static void ref_attention(const float *q, const float *k, const float *v, double *out,
                          int bh, int t, int e, int causal) {
  double *s = malloc((size_t)t * sizeof *s);
  for (int h = 0; h < bh; h++)
    for (int i = 0; i < t; i++) {
      const float *qi = q + ((size_t)h * t + i) * e;
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < t; j++) {
        const float *kj = k + ((size_t)h * t + j) * e;
        double dot = 0;
        for (int c = 0; c < e; c++) dot += (double)qi[c] * kj[c];
        s[j] = (causal && j > i) ? -INFINITY : dot / sqrt((double)e);
        m = fmax(m, s[j]);
      }
      for (int j = 0; j < t; j++) { s[j] = exp(s[j] - m); sum += s[j]; }
      for (int c = 0; c < e; c++) {
        double acc = 0;
        for (int j = 0; j < t; j++) acc += s[j] / sum * v[((size_t)h * t + j) * e + c];
        out[((size_t)h * t + i) * e + c] = acc;
      }
    }
  free(s);
}

static void attention_case(int causal) {
  run r;
  load(&r, causal ? "import nn\nfn f(q: f32[B, H, T, E], k: f32[B, H, T, E], v: f32[B, H, T, E]) "
                    "-> f32[B, H, T, E] { nn.attention(q, k, v, true) }\n"
                  : "import nn\nfn f(q: f32[B, H, T, E], k: f32[B, H, T, E], v: f32[B, H, T, E]) "
                    "-> f32[B, H, T, E] { nn.attention(q, k, v) }\n", "f");
  unsigned seed = 5 + (unsigned)causal;
  int64_t shape[4] = {2, 3, 17, 16};
  td_tensor *in[3];
  for (int i = 0; i < 3; i++) in[i] = random_tensor(4, shape, -2, 2, &seed);
  td_tensor *y = exec(&r, in);
  int64_t n = in[0]->numel;
  double *ref = malloc((size_t)n * sizeof *ref);
  ref_attention(in[0]->data, in[1]->data, in[2]->data, ref, 6, 17, 16, causal);
  double e = rel_error(y, ref, n);
  cr_expect_leq(e, 1e-5, "attention (causal=%d): relative error %g", causal, e);
  free(ref);
  td_tensor *ts[4] = {in[0], in[1], in[2], y};
  done(&r, ts, 4);
}

Test(stdlib, attention_matches_float64) { attention_case(0); }
Test(stdlib, causal_attention_matches_float64) { attention_case(1); }

/* Linear: y = x @ W.T + b with the parameters the model was given. */
Test(stdlib, linear_uses_weight_transposed_plus_bias) {
  run r;
  load(&r, "import nn\nmodel M { fc = nn.Linear(3, 2)\n fn forward(x: f32[N, 3]) -> f32[N, 2] { fc(x) } }\n",
       "M.forward");
  cr_assert_eq(r.g->n_params, 2);
  td_err err;
  int64_t ws[2] = {2, 3}, bs[1] = {2}, xs[2] = {2, 3};
  td_tensor *w = td_tensor_new(TD_F32, 2, ws, &err), *b = td_tensor_new(TD_F32, 1, bs, &err);
  td_tensor *x = td_tensor_new(TD_F32, 2, xs, &err);
  float wv[6] = {1, 2, 3, -1, 0, 2}, bv[2] = {0.5f, -1}, xv[6] = {1, 1, 1, 2, 0, -1};
  memcpy(w->data, wv, sizeof wv);
  memcpy(b->data, bv, sizeof bv);
  memcpy(x->data, xv, sizeof xv);
  td_tensor_map m;
  td_tensor_map_init(&m);
  cr_assert_eq(td_tensor_map_put(&m, "fc.weight", w, &err), 0);
  cr_assert_eq(td_tensor_map_put(&m, "fc.bias", b, &err), 0);
  td_tensor *params[2];
  cr_assert_eq(td_make_params(r.g, &m, 0, params, &err), 0, "%s", err.msg);
  td_run_opts o;
  memset(&o, 0, sizeof o);
  td_tensor **outs;
  cr_assert_eq(td_interp_run(r.g, &x, params, &o, &outs, &err, NULL), 0, "%s", err.msg);
  /* by hand: row0 = [1+2+3+0.5, -1+0+2-1] = [6.5, 0]; row1 = [2-3+0.5, -2-2-1] = [-0.5, -5] */
  const float *y = outs[0]->data;
  cr_expect_float_eq(y[0], 6.5f, 1e-6);
  cr_expect_float_eq(y[1], 0.0f, 1e-6);
  cr_expect_float_eq(y[2], -0.5f, 1e-6);
  cr_expect_float_eq(y[3], -5.0f, 1e-6);
  td_tensor_release(outs[0]);
  free(outs);
  td_tensor_release(params[0]);
  td_tensor_release(params[1]);
  td_tensor_map_free(&m);
  td_tensor *ts[3] = {w, b, x};
  done(&r, ts, 3);
}

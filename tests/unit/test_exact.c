/* test_exact.c - the exactness contract of docs/compiler.md ("Exactness:
 * what eager and compiled agree on"), beyond the differential tests of
 * test_compiled.c (which compare every example and language test bit for
 * bit where the contract promises it, compiled_check.h's promised_exact):
 *
 *   - the cases that used to differ, each against its float64 value: a
 *     value computed twice in one kernel (x * 3 and its max over one row),
 *     layer_norm of constant rows (exactly the bias), log_softmax of
 *     gelu_tanh (eager mode's bits);
 *   - the same bits on one thread and on two, and at every ISA level the
 *     CPU runs (elementwise and row kernels);
 *   - what has a tolerance instead, within the bound the contract states:
 *     float matmuls on every GEMM path, float sums over several axes.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiled_check.h"

/* Entry `name` of text compiled and eagerly on inputs in (no parameters):
 * output 0 of each, in *comp and *eager (the caller releases them). */
static void run_both(const char *text, const char *name, td_tensor **in, td_tensor **comp, td_tensor **eager) {
  prog P;
  cr_assert_eq(load(&P, "t.td", text), 0);
  td_graph *g = td_program_lower(P.p, name);
  cr_assert_not_null(g);
  compiled_graph cg_;
  compile_graph(g, &cg_, name);
  td_tensor **e = NULL, **c = NULL;
  td_err err;
  cr_assert_eq(td_interp_run(g, in, NULL, NULL, &e, &err, NULL), 0, "%s", err.msg);
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &c, &err, NULL), 0, "%s", err.msg);
  *comp = c[0];
  *eager = e[0];
  for (int i = 1; i < g->n_outputs; i++) td_tensor_release(c[i]), td_tensor_release(e[i]);
  td_free(c);
  td_free(e);
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

static td_tensor *f32_tensor(int rank, const int64_t *shape) {
  td_err e;
  td_tensor *t = td_tensor_new(TD_F32, rank, shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  return t;
}

/* x * 3 is computed in the max's pass and again in the output's: both
 * must round, or `a - max(a)` over one row is a rounding error instead of
 * 0 (GCC contracted the second into fma(x, 3, -max)). */
Test(exact, a_value_and_its_max_over_one_row_cancel) {
  int64_t sh[2] = {1, 8};
  td_tensor *x = f32_tensor(2, sh), *comp, *eager;
  float *xs = x->data;
  int inexact = 0;
  for (int j = 0; j < 8; j++) {
    xs[j] = 0.1f * (float)(j + 1) - 0.35f;
    inexact |= fma((double)xs[j], 3.0, -(double)(xs[j] * 3.0f)) != 0;
  }
  cr_assert(inexact, "x * 3 must round somewhere for the test to mean anything");
  run_both("fn f(x: f32[N, 8]) -> f32[N, 8] {\n  let a = x * 3\n  a - max(a, axis = 0, keepdims = true)\n}\n", "f",
           &x, &comp, &eager);
  for (int j = 0; j < 8; j++) {
    float c = ((float *)comp->data)[j], e = ((float *)eager->data)[j];
    cr_expect(c == 0 && !signbit(c), "compiled [%d]: %g, want +0 (a - a)", j, c);
    cr_expect(e == 0 && !signbit(e), "eager [%d]: %g, want +0 (a - a)", j, e);
  }
  td_tensor_release(comp);
  td_tensor_release(eager);
  td_tensor_release(x);
}

/* layer_norm of rows that are constant: x - mean is exactly 0 (the mean of
 * 64 or 4096 copies of c is c, in float64 as in f32), so the output is
 * the bias, whatever the variance.  The rows are y * y, which rounds:
 * compiled, xc = y * y - mean became an fma (y * y exact minus its
 * rounding), scaled up by rsqrt(eps). */
Test(exact, layer_norm_of_constant_rows_is_the_bias) {
  static const float ys[4] = {1.1f, 3.7f, 0.3f, 123.456f};
  static const int64_t lens[2] = {64, 4096};
  for (int li = 0; li < 2; li++) {
    int64_t n = lens[li], sh[2] = {4, n};
    td_tensor *y = f32_tensor(2, sh), *w = f32_tensor(1, &n), *b = f32_tensor(1, &n), *comp, *eager;
    for (int i = 0; i < 4; i++)
      for (int64_t j = 0; j < n; j++) ((float *)y->data)[i * n + j] = ys[i];
    for (int64_t j = 0; j < n; j++) {
      ((float *)w->data)[j] = 0.5f + (float)(j % 7);
      ((float *)b->data)[j] = (float)(j % 13) * 0.25f - 1.5f;
    }
    td_tensor *in[3] = {y, w, b};
    run_both("import nn\nfn f(y: f32[M, N], w: f32[N], b: f32[N]) -> f32[M, N] { nn.layer_norm(y * y, w, b) }\n",
             "f", in, &comp, &eager);
    for (int i = 0; i < 4; i++)
      for (int64_t j = 0; j < n; j++) {
        float want = ((float *)b->data)[j], c = ((float *)comp->data)[i * n + j], e = ((float *)eager->data)[i * n + j];
        cr_expect(c == want, "n %lld row %d [%lld]: compiled %.9g, want the bias %.9g", (long long)n, i, (long long)j, c, want);
        cr_expect(e == want, "n %lld row %d [%lld]: eager %.9g, want the bias %.9g", (long long)n, i, (long long)j, e, want);
      }
    td_tensor_release(comp);
    td_tensor_release(eager);
    td_tensor_release(y);
    td_tensor_release(w);
    td_tensor_release(b);
  }
}

static double gelu_tanh64(double x) {
  return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/* log_softmax(gelu_tanh(x)): the same bits as eager mode (the same
 * polynomials for exp and log, no 1 + tanh rewritten in one backend only,
 * the sum of exp in eager mode's order and after the max), on rows of one
 * vector, with remainders and over several chunks; and within 4e-6 (1 +
 * |r|) of float64. */
Test(exact, log_softmax_of_gelu_tanh_is_eager_bit_for_bit) {
  static const int64_t lens[3] = {64, 1000, 4100};
  uint32_t seed = 5;
  for (int li = 0; li < 3; li++) {
    int64_t n = lens[li], sh[2] = {3, n};
    td_tensor *x = f32_tensor(2, sh), *comp, *eager;
    float *xs = x->data;
    for (int64_t j = 0; j < 3 * n; j++) {
      seed = seed * 1664525u + 1013904223u;
      xs[j] = (float)(8.0 * (seed >> 8) / 16777216.0 - 4.0);
    }
    run_both("import nn\nfn f(x: f32[M, N]) -> f32[M, N] { nn.log_softmax(nn.gelu_tanh(x)) }\n", "f", &x, &comp,
             &eager);
    const char *why = differ_bits(comp, eager);
    cr_expect(why == NULL, "rows of %lld: %s", (long long)n, why);
    for (int i = 0; i < 3; i++) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; j++) m = fmax(m, gelu_tanh64(xs[i * n + j]));
      for (int64_t j = 0; j < n; j++) s += exp(gelu_tanh64(xs[i * n + j]) - m);
      for (int64_t j = 0; j < n; j++) {
        double r = gelu_tanh64(xs[i * n + j]) - m - log(s), y = ((float *)comp->data)[i * n + j];
        cr_expect(fabs(y - r) <= 4e-6 * (1 + fabs(r)), "rows of %lld, [%d, %lld]: %.9g, want %.9g", (long long)n, i,
                  (long long)j, y, r);
      }
    }
    td_tensor_release(comp);
    td_tensor_release(eager);
    td_tensor_release(x);
  }
}

/* Every output of every entry of text, compiled (parameters from seed 3,
 * inputs from make_inputs at size), appended to buf as bytes. */
static void entry_bits(const char *text, int64_t size, char **buf, size_t *len) {
  prog P;
  if (load(&P, "t.td", text)) _exit(2);
  const char **names;
  int ne = td_program_entries(P.p, &names);
  for (int i = 0; i < ne; i++) {
    td_graph *g = td_program_lower(P.p, names[i]), *o;
    td_err e;
    td_tensor **params = td_calloc((size_t)g->n_params + 1, sizeof *params);
    td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in), **outs = NULL;
    if (td_make_params(g, NULL, 3, params, &e) || make_inputs(g, size, 3, in) || td_optimize(g, NULL, &o, NULL, &e)) _exit(3);
    td_plan *plan = td_plan_build(o, &e);
    td_compiled *c = plan ? td_compile(plan, NULL, &e) : NULL;
    if (!c || td_compiled_run(c, in, params, 0, &outs, &e, NULL)) _exit(4);
    for (int k = 0; k < g->n_outputs; k++) {
      size_t nb = (size_t)outs[k]->numel * td_dtype_size(outs[k]->dtype);
      *buf = realloc(*buf, *len + nb);
      memcpy(*buf + *len, outs[k]->data, nb);
      *len += nb;
    }
    release_all(outs, plan->n_out_nodes);
    release_all(in, g->n_inputs);
    release_all(params, g->n_params);
    td_compiled_free(c);
  }
  td_arena_free(P.a);
}

/* The same program on a pool of 1 thread (a child process: the pool's
 * size is fixed when it starts) and of 2 (this process): every kernel
 * kind, large enough to be split (pointwise, rows, columns, the packed
 * and prepacked GEMMs, batched heads), gives the same bits. */
Test(exact, results_do_not_depend_on_the_thread_count, .timeout = 240) {
  static const char *text =
      "import nn\n"
      "model Lin {\n  fc = nn.Linear(300, 200)\n  fn forward(x: f32[N, 300]) -> f32[N, 200] { relu(fc(x)) }\n}\n"
      "fn p(x: f32[N, 300], b: f32[300]) -> f32[N, 300] { gelu(x * 0.5 + b) + nn.gelu_tanh(x) }\n"
      "fn s(x: f32[N, 300], w: f32[300]) -> f32[N, 300] { nn.softmax(x) + nn.layer_norm(x, w, w) }\n"
      "fn c(x: f32[N, 300]) -> f32[1, 300] { sum(x, axis = 0, keepdims = true) }\n"
      "fn m(x: f32[N, 70], y: f32[70, 45]) -> f32[N, 45] { x @ y + 1 }\n"
      "fn bm(x: f32[4, N, 64], y: f32[4, 64, N]) -> f32[4, N, N] { x @ y }\n";
  int fd[2];
  cr_assert_eq(pipe(fd), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    setenv("TDSL_NUM_THREADS", "1", 1);
    char *buf = NULL;
    size_t len = 0;
    entry_bits(text, 1001, &buf, &len);
    for (size_t off = 0; off < len;) {
      ssize_t w = write(fd[1], buf + off, len - off);
      if (w <= 0) _exit(5);
      off += (size_t)w;
    }
    _exit(0);
  }
  close(fd[1]);
  setenv("TDSL_NUM_THREADS", "2", 1);
  char *mine = NULL, *theirs = NULL;
  size_t len = 0, got = 0;
  entry_bits(text, 1001, &mine, &len);
  theirs = malloc(len + 1);
  for (ssize_t r; (r = read(fd[0], theirs + got, len + 1 - got)) > 0;) got += (size_t)r;
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the one-thread run failed (%d)", status);
  cr_assert_eq(got, len, "%zu bytes on one thread, %zu on two", got, len);
  cr_expect_eq(memcmp(mine, theirs, len), 0, "one thread and two give different bits");
  free(mine);
  free(theirs);
}

/* The vector code differs between ISA levels (AVX-512, AVX2, SSE: lanes,
 * the clamps, conversions); the values may not: elementwise chains and
 * row kernels give eager mode's bits at every level this CPU runs.  (A
 * float matmul does not: x86-64-v2 has no FMA instructions.) */
Test(exact, elementwise_and_rows_are_the_same_at_every_isa_level, .timeout = 240) {
  static const char *levels[] = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
  const char *cpu = td_detect_march();
  prog P;
  cr_assert_eq(load(&P, "t.td", "import nn\n"
                                "fn f(x: f32[N, 300], w: f32[300]) -> (f32[N, 300], f32[N, 300], f32[1, 300]) {\n"
                                "  (gelu(x) + tanh(x) * erf(x) + log(abs(x)) - sigmoid(x) / exp(x) + silu(x),\n"
                                "   nn.softmax(x) + nn.log_softmax(x) + nn.layer_norm(x, w, w) + nn.rms_norm(x, w),\n"
                                "   mean(x, axis = 0, keepdims = true) + max(x, axis = 0, keepdims = true))\n}\n"), 0);
  td_graph *g = td_program_lower(P.p, "f"), *o;
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *plan = td_plan_build(o, &e);
  td_tensor *in[2], **eager = NULL;
  cr_assert_eq(make_inputs(g, 37, 9, in), 0);
  cr_assert_eq(td_interp_run(g, in, NULL, NULL, &eager, &e, NULL), 0, "%s", e.msg);
  for (int l = 0; l < 3; l++) {
    td_compile_opts opts = {.opt_level = -1, .march = levels[l]};
    td_compiled *c = td_compile(plan, &opts, &e);
    cr_assert_not_null(c, "%s: %s", levels[l], e.msg);
    td_tensor **comp = NULL;
    cr_assert_eq(td_compiled_run(c, in, NULL, 0, &comp, &e, NULL), 0, "%s", e.msg);
    for (int k = 0; k < 3; k++) {
      const char *why = differ_bits(comp[k], eager[k]);
      cr_expect(why == NULL, "%s, output %d: %s", levels[l], k, why);
    }
    release_all(comp, 3);
    td_compiled_free(c);
    if (!strcmp(levels[l], cpu)) break;
  }
  release_all(eager, 3);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  td_arena_free(P.a);
}

/* What the contract bounds instead of promising bits, against float64:
 * a float matmul, every path (the dot path at M < 64, packed, a weight
 * prepacked, one vector of columns), within K 2^-24 sum |a||b| of the
 * exact product; a float sum over several axes with the innermost one
 * (its order is the loop nest's), within 2^-24 |s| + n 2^-53 sum |x|. */
Test(exact, matmul_and_multi_axis_sums_within_their_bounds, .timeout = 120) {
  static const char *text = "fn mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] { a @ b }\n"
                            "fn mt(a: f32[M, K], b: f32[N, K]) -> f32[M, N] { a @ transpose(b, 0, 1) }\n"
                            "fn s(x: f32[M, K, N]) -> f32[] { sum(x) }\n";
  static const int64_t shapes[][3] = {{5, 300, 40}, {200, 97, 33}, {130, 256, 16}, {70, 600, 7}};
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
    int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, st[2] = {N, K}, sx[3] = {M, K, N};
    td_tensor *a = f32_tensor(2, sa), *b = f32_tensor(2, sb), *bt = f32_tensor(2, st), *x = f32_tensor(3, sx);
    uint32_t seed = 17 + (uint32_t)si;
    float *as = a->data, *bs = b->data, *bts = bt->data, *xs = x->data;
    for (int64_t i = 0; i < M * K; i++) as[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1;
    for (int64_t i = 0; i < K * N; i++) bs[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) bts[j * K + k] = bs[k * N + j];
    for (int64_t i = 0; i < M * K * N; i++) xs[i] = (float)((seed = seed * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1;
    const char *names[2] = {"mm", "mt"};
    for (int v = 0; v < 2; v++) {
      td_tensor *in[2] = {a, v ? bt : b}, *comp, *eager;
      run_both(text, names[v], in, &comp, &eager);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          double r = 0, mag = 0;
          for (int64_t k = 0; k < K; k++) {
            r += (double)as[i * K + k] * bs[k * N + j];
            mag += fabs((double)as[i * K + k] * bs[k * N + j]);
          }
          double bound = (double)K * 0x1p-24 * mag, y = ((float *)comp->data)[i * N + j], z = ((float *)eager->data)[i * N + j];
          cr_expect(fabs(y - r) <= bound, "%s %lldx%lldx%lld [%lld, %lld]: compiled %.9g, exact %.9g, bound %.3g", names[v],
                    (long long)M, (long long)K, (long long)N, (long long)i, (long long)j, y, r, bound);
          cr_expect(fabs(z - r) <= bound, "%s [%lld, %lld]: eager %.9g, exact %.9g", names[v], (long long)i, (long long)j, z, r);
        }
      td_tensor_release(comp);
      td_tensor_release(eager);
    }
    td_tensor *comp, *eager;
    run_both(text, "s", &x, &comp, &eager);
    double r = 0, mag = 0;
    for (int64_t i = 0; i < M * K * N; i++) r += xs[i], mag += fabs(xs[i]);
    double bound = 0x1p-24 * fabs(r) + (double)(M * K * N) * 0x1p-53 * mag;
    cr_expect(fabs(((float *)comp->data)[0] - r) <= bound, "sum of %lld: compiled %.9g, exact %.9g", (long long)(M * K * N),
              ((float *)comp->data)[0], r);
    cr_expect(fabs(((float *)eager->data)[0] - r) <= bound, "sum: eager %.9g, exact %.9g", ((float *)eager->data)[0], r);
    td_tensor_release(comp);
    td_tensor_release(eager);
    td_tensor_release(a);
    td_tensor_release(b);
    td_tensor_release(bt);
    td_tensor_release(x);
  }
}


/* The contract as the differential tests apply it (promised_exact), on the
 * cases docs/compiler.md names: what is promised bit for bit and what is
 * not. */
Test(exact, the_contract_as_the_differential_tests_read_it) {
  static const struct { const char *body; int exact; } cases[] = {
      {"nn.softmax(x) + nn.layer_norm(x, x[0], x[1]) + nn.log_softmax(nn.gelu_tanh(x))", 1},
      {"tanh(exp(x) * 3 - 1) / (1 + erf(x)) + gelu(x)", 1},
      {"x - mean(x, axis = 0, keepdims = true)", 1},   /* the innermost axis kept */
      {"x * sum(x, axis = 1, keepdims = true)", 1},    /* one reduced axis */
      {"x * max(x) + f32(argmin(x, axis = 1, keepdims = true))", 1},
      {"x * sum(x)", 0},                               /* several axes with the innermost */
      {"x @ transpose(x, 0, 1) @ x", 0},                 /* a float matmul */
      {"f32(i64(x) @ i64(transpose(x, 0, 1)) @ i64(x))", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text, "import nn\nfn f(x: f32[7, 7]) -> f32[7, 7] { %s }\n", cases[i].body);
    prog P;
    cr_assert_eq(load(&P, "t.td", text), 0, "%s", text);
    td_graph *g = td_program_lower(P.p, "f");
    cr_assert_not_null(g);
    char *memo = td_arena_alloc(P.a, (size_t)g->n_nodes + 1);
    memset(memo, 0, (size_t)g->n_nodes + 1);
    cr_expect_eq(promised_exact(g, g->outputs[0], memo), cases[i].exact, "%s", cases[i].body);
    td_arena_free(P.a);
  }
}

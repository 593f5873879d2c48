/* test_compiled.c - the compiled CPU code against the interpreter.
 *
 * Differential tests: every program under examples/ and tests/lang/ with a
 * `fn main` that `tdsl run` accepts (no # error, # args, # cmd or # runner
 * directives) runs eagerly and compiled; the graph's outputs and every
 * value its print() calls print must agree: same dtype and shape, and the
 * same bits wherever docs/compiler.md's exactness contract promises them
 * (promised_exact: everything but float matmuls and float sums whose
 * summation order differs, and what depends on them), else floats within
 * a relative error of 1e-5 measured against the tensor's largest
 * magnitude (see differ).
 * The eager values of the prints come from the original graph with its
 * printed nodes added as outputs, so the check covers the passes too.
 *
 * Entry points with symbolic sizes are compiled once and run at two sizes
 * on random inputs: one compiled program serves every N.  Further tests
 * cover each kernel kind on hand-made programs (broadcasts, transposes,
 * slices, concat, gather with negative indices, integer division, argmax,
 * reductions along every axis, batched matmul with broadcasting, prints),
 * and rand, generated inline, against the runtime's Philox bit for bit.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cache.h"
#include "compiler/jit_impl.h"
#include "compiled_check.h"
#include "runtime/philox.h"

/* ---- comparing tensors ---- */

static double maxabs(const td_tensor *t) {
  double m = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = fabs(td_tensor_get(t, i));
    if (isfinite(v) && v > m) m = v;
  }
  return m;
}

/* NULL when a and b agree, else a description (static buffer).  exact:
 * the same bits.  Otherwise floats within |a - b| <= 1e-5 * max(|b|,
 * max|want|), the max-norm relative error, since an element that is small
 * only because large terms cancelled carries the rounding of those terms
 * whatever order they are summed in. */
static const char *differ(const td_tensor *got, const td_tensor *want, int exact) {
  static char why[256];
  if (got->dtype != want->dtype || got->rank != want->rank) return "dtype or rank differs";
  for (int k = 0; k < got->rank; k++)
    if (got->shape[k] != want->shape[k]) return "shape differs";
  if (exact) return differ_bits(got, want);
  double floor_ = maxabs(want);
  for (int64_t i = 0; i < want->numel; i++) {
    double a = td_tensor_get(got, i), b = td_tensor_get(want, i);
    if (isnan(a) && isnan(b)) continue;
    if (!td_dtype_is_float(want->dtype) || isinf(b)) {
      if (a == b) continue;
    } else if (fabs(a - b) <= 1e-5 * fmax(fabs(b), floor_)) {
      continue;
    }
    snprintf(why, sizeof why, "element %lld: compiled %.9g, eager %.9g", (long long)i, a, b);
    return why;
  }
  return NULL;
}

/* g with its printed values appended to the outputs (in the plan's order). */
static td_graph *with_prints(const td_graph *g, td_arena *a) {
  td_graph *w = td_arena_alloc(a, sizeof *w);
  *w = *g;
  int n = g->n_outputs;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT) n += g->nodes[i].n_in;
  w->outputs = td_arena_alloc(a, (size_t)(n + 1) * sizeof(int));
  if (g->n_outputs) memcpy(w->outputs, g->outputs, (size_t)g->n_outputs * sizeof(int));
  w->n_outputs = g->n_outputs;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT)
      for (int k = 0; k < g->nodes[i].n_in; k++) w->outputs[w->n_outputs++] = g->nodes[i].in[k];
  return w;
}

/* Does a scan's body in g print? */
static int body_prints(const td_graph *g, int in_body) {
  for (int i = 0; i < g->n_nodes; i++) {
    if (g->nodes[i].op == TD_IR_PRINT && in_body) return 1;
    if (g->nodes[i].op == TD_IR_SCAN && body_prints(g->nodes[i].attr.body, 1)) return 1;
  }
  return 0;
}

static void add_text(void *ud, const char *text) {
  char *buf = ud;
  strncat(buf, text, (1 << 16) - strlen(buf) - 1);
}

/* What a scan's body prints is not an output of the graph: the text
 * printed compiled (every step's lines, td_compiled_run_prints) must be
 * eager mode's, line for line. */
static void check_print_text(const td_graph *g, td_tensor **inputs, td_tensor **params, const char *what) {
  static char eager_text[1 << 16], comp_text[1 << 16];
  eager_text[0] = comp_text[0] = 0;
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = add_text;
  io.ud = eager_text;
  td_tensor **eager = NULL, **comp = NULL;
  td_err e;
  cr_assert_eq(td_interp_run(g, inputs, params, &io, &eager, &e, NULL), 0, "%s: %s", what, e.msg);
  release_all(eager, g->n_outputs);
  compiled_graph cg_;
  compile_graph(g, &cg_, what);
  cr_assert_eq(td_compiled_run(cg_.c, inputs, params, 0, &comp, &e, NULL), 0, "%s: %s", what, e.msg);
  io.ud = comp_text;
  cr_assert_eq(td_compiled_run_prints(cg_.c, comp, &io, &e), 0, "%s: %s", what, e.msg);
  release_all(comp, cg_.plan->n_out_nodes);
  td_compiled_free(cg_.c);
  cr_expect(eager_text[0] != 0, "%s: nothing printed", what);
  cr_expect_str_eq(comp_text, eager_text, "%s: compiled printed\n%s\neager printed\n%s", what, comp_text, eager_text);
}

/* Runs g eagerly (with prints as outputs) and compiled; compares (bit for
 * bit where the contract promises it). */
static void check_graph(const td_graph *g, td_arena *a, td_tensor **inputs, const char *what) {
  td_tensor **params = td_calloc((size_t)g->n_params + 1, sizeof *params);
  td_err e;
  cr_assert_eq(td_make_params(g, NULL, 0, params, &e), 0, "%s: %s", what, e.msg);
  td_graph *w = with_prints(g, a);
  td_tensor **eager = NULL, **comp = NULL;
  int erc = td_interp_run(w, inputs, params, NULL, &eager, &e, NULL);
  if (erc == 0) {
    compiled_graph cg_;
    compile_graph(g, &cg_, what);
    cr_assert_eq(cg_.plan->n_out_nodes, w->n_outputs);
    int rc = td_compiled_run(cg_.c, inputs, params, 0, &comp, &e, NULL);
    cr_expect_eq(rc, 0, "%s: compiled run failed: %s", what, e.msg);
    char *memo = td_arena_alloc(a, (size_t)w->n_nodes + 1);
    cr_assert_not_null(memo);
    memset(memo, 0, (size_t)w->n_nodes + 1);
    for (int i = 0; rc == 0 && i < w->n_outputs; i++) {
      const char *why = differ(comp[i], eager[i], promised_exact(w, w->outputs[i], memo));
      cr_expect(why == NULL, "%s: %s %d: %s", what, i < g->n_outputs ? "output" : "printed value",
                i < g->n_outputs ? i : i - g->n_outputs, why);
    }
    if (rc == 0) release_all(comp, w->n_outputs);
    td_compiled_free(cg_.c);
    if (rc == 0 && body_prints(g, 0)) check_print_text(g, inputs, params, what);
  } else {   /* eager refuses: compiled code must refuse alike, never run on */
    td_err ce;
    compiled_graph cg_;
    compile_graph(g, &cg_, what);
    int rc = td_compiled_run(cg_.c, inputs, params, 0, &comp, &ce, NULL);
    cr_expect_eq(rc, -1, "%s: eager failed (%s), compiled ran", what, e.msg);
    if (rc == 0) release_all(comp, cg_.plan->n_out_nodes);
    else cr_expect_str_eq(ce.msg, e.msg, "%s: compiled and eager fail differently", what);
    td_compiled_free(cg_.c);
  }
  release_all(eager, erc == 0 ? w->n_outputs : 0);
  release_all(params, g->n_params);
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

/* Does `tdsl run` accept the file as is (a main and no directives that
 * make it an error, argument or check test)? */
static int runnable(const char *text) {
  return strstr(text, "fn main") && !strstr(text, "# error") && !strstr(text, "# args:") &&
         !strstr(text, "# cmd:") && !strstr(text, "# runner:");
}

static int check_file(const char *path) {
  char *text = read_text(path);
  int ran = 0;
  if (text && runnable(text)) {
    prog P;
    if (load(&P, path, NULL) == 0) {
      td_graph *g = td_program_lower(P.p, "main");
      if (g) {
        check_graph(g, P.a, NULL, path);
        ran = 1;
      }
    }
    td_arena_free(P.a);
  }
  free(text);
  return ran;
}

static int walk(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st)) continue;
    if (S_ISDIR(st.st_mode)) n += walk(path);
    else if (strlen(e->d_name) > 3 && !strcmp(e->d_name + strlen(e->d_name) - 3, ".td")) n += check_file(path);
  }
  closedir(d);
  return n;
}

Test(differential, every_example_runs_the_same_compiled, .timeout = 300) {
  int n = walk(TDSL_SRCDIR "/examples");
  cr_expect_geq(n, 5, "only %d example programs ran", n);
}

Test(differential, every_language_test_runs_the_same_compiled, .timeout = 300) {
  int n = walk(TDSL_SRCDIR "/tests/lang");
  cr_expect_geq(n, 20, "only %d language tests ran", n);
}

/* ---- entry points at two sizes ---- */

static void check_entries(const char *rel) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TDSL_SRCDIR, rel);
  prog P;
  cr_assert_eq(load(&P, path, NULL), 0);
  const char **names;
  int ne = td_program_entries(P.p, &names);
  for (int i = 0; i < ne; i++) {
    td_graph *g = td_program_lower(P.p, names[i]);
    if (!g || !strcmp(names[i], "main")) continue;
    compiled_graph cg_;
    compile_graph(g, &cg_, names[i]);
    td_tensor **params = td_calloc((size_t)g->n_params + 1, sizeof *params);
    td_err e;
    cr_assert_eq(td_make_params(g, NULL, 3, params, &e), 0, "%s", e.msg);
    for (int64_t size = 2; size <= 7; size += 5) {
      td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in), **eager = NULL, **comp = NULL;
      cr_assert_eq(make_inputs(g, size, (uint64_t)size, in), 0);
      int erc = td_interp_run(g, in, params, NULL, &eager, &e, NULL);
      cr_assert_eq(erc, 0, "%s eager: %s", names[i], e.msg);
      int rc = td_compiled_run(cg_.c, in, params, 0, &comp, &e, NULL);
      cr_assert_eq(rc, 0, "%s compiled: %s", names[i], e.msg);
      char memo[4096] = {0};
      cr_assert_lt(g->n_nodes, 4096);
      for (int k = 0; k < g->n_outputs; k++) {
        const char *why = differ(comp[k], eager[k], promised_exact(g, g->outputs[k], memo));
        cr_expect(why == NULL, "%s at size %lld, output %d: %s", names[i], (long long)size, k, why);
      }
      release_all(eager, g->n_outputs);
      release_all(comp, cg_.plan->n_out_nodes);
      release_all(in, g->n_inputs);
    }
    release_all(params, g->n_params);
    td_compiled_free(cg_.c);
  }
  td_arena_free(P.a);
}

Test(symbolic, seed_models_serve_every_batch_size) {
  check_entries("examples/seed/simple.td");
  check_entries("examples/seed/good_where.td");
  check_entries("examples/seed/good_dynamic.td");
  check_entries("examples/seed/good_vectorized.td");
  check_entries("examples/seed/return_tensor_for_log.td");
}

Test(symbolic, mlp_serves_every_batch_size) { check_entries("examples/mlp.td"); }

Test(symbolic, lenet_serves_every_batch_size, .timeout = 120) { check_entries("examples/lenet.td"); }

Test(symbolic, transformer_serves_every_batch_and_length, .timeout = 120) {
  check_entries("examples/transformer.td");
}

/* ---- kernel kinds on small programs ---- */

static void check_text_at(const char *text, int64_t size);

static void check_text(const char *text) {
  prog P;
  int rc = load(&P, "t.td", text);
  if (rc) td_diag_render(&P.d, stderr, 0);
  cr_assert_eq(rc, 0);
  const char **names;
  int ne = td_program_entries(P.p, &names);
  for (int i = 0; i < ne; i++) {
    td_graph *g = td_program_lower(P.p, names[i]);
    if (!g) td_diag_render(&P.d, stderr, 0);
    cr_assert_not_null(g);
    td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in);
    cr_assert_eq(make_inputs(g, 5, 11, in), 0);
    check_graph(g, P.a, in, text);
    release_all(in, g->n_inputs);
  }
  td_arena_free(P.a);
}

Test(kinds, pointwise_movement_as_index_arithmetic) {
  check_text("fn f(x: f32[N, 8], b: f32[8]) -> f32[8, N] { transpose(tanh(x * 2 + b), 0, 1) * 3 }\n"
             "fn g(x: f32[N, 6]) -> f32[3, N, 2] { transpose(reshape(exp(x), [N, 3, 2]), 0, 1) }\n"
             "fn h(x: f32[N, 6]) -> f32[N, 3] { x[:, 1::2] - x[:, ::2] }\n"
             "fn r(x: f32[4, 6]) -> f32[4, 3] { x[::-1, ::-2] }\n"
             "fn c(x: f32[N, 2], y: f32[N, 3]) -> f32[N, 5] { concat([sin(x), cos(y)], axis = 1) }\n"
             "fn w(x: f32[N, 4]) -> f32[N, 4] { where(x > 0, sqrt(abs(x)), -x * x) }\n");
}

/* Symbolic slices with negative steps and steps that divide the span, a
 * reshape whose -1 needs polynomial division, and terms of five and more
 * symbols (issue 12). */
Test(kinds, symbolic_slices_reshapes_and_many_symbols) {
  check_text("fn r(x: f32[N, 3]) -> (f32[N, 3], f32[3, N], f32[N - 1, 3], f32[N - 3, 3]) {\n"
             "  (x[::-1], transpose(x)[:, ::-1], x[N - 1:0:-1], x[-2:1:-1] * 2)\n"
             "}\n"
             "fn s(x: f32[N, 3], y: f32[2 * N, 2]) -> (f32[N, 2], f32[N, 2], f32[N, 2]) {\n"
             "  (y[1::2], y[::-2], y[2 * N - 2::-2] + 1)\n"
             "}\n"
             "fn k(k: f32[K], b: f32[2, K - 1, K - 1]) -> (f32[2, K - 1, K - 1], f32[K - 1, 2 * K - 2]) {\n"
             "  (reshape(exp(b), [-1, K - 1, K - 1]), reshape(b, [K - 1, -1]))\n"
             "}\n"
             "fn f(x: f32[A, B, C, D, E], w: f32[E, F]) -> f32[A, B, C, D, F] {\n"
             "  let y = exp(x) * 2.0\n"
             "  tanh(y @ w) + sum(y, axis = 4, keepdims = true)\n"
             "}\n");
}

/* Convolutions (lowered to im2col matmuls) and pools (fused slices) on
 * symbolic batch and image sizes, forward and backward, against eager
 * (interp/conv.c): stride 2 works on sizes written as multiples of 2
 * (a symbol is bound by its first bare use, here an argument hw). */
Test(kinds, convolutions_and_pools_at_symbolic_sizes) {
  check_text("fn c(x: f32[N, 3, H, W], w: f32[4, 3, 3, 3], b: f32[4]) -> f32[N, 4, H - 2, W - 2] { conv2d(x, w, b) }\n"
             "fn d(x: f32[N, 4, H, W], w: f32[4, 1, 3, 3]) -> f32[N, 4, H, W] {\n"
             "  relu(conv2d(x, w, padding = 1, groups = 4))\n"
             "}\n"
             "fn s(hw: f32[H, W], x: f32[N, 2, 2 * H, 2 * W], w: f32[6, 2, 3, 3]) -> f32[N, 6, H, W] {\n"
             "  conv2d(x, w, stride = 2, padding = 1)\n"
             "}\n"
             "fn e(x: f32[N, 3, L], w: f32[2, 3, 2]) -> f32[N, 2, L + 1] { conv1d(x, w, padding = 1) }\n"
             "fn p(hw: f32[H, W], x: f32[N, 3, 2 * H, 2 * W]) -> (f32[N, 3, H, W], f32[N, 3, H, W]) {\n"
             "  (max_pool2d(x, 2), avg_pool2d(x, 2))\n"
             "}\n"
             "fn q(x: f32[N, 3, H, W]) -> f32[N, 3, H, W] { avg_pool2d(x, 3, stride = 1, padding = 1, "
             "count_include_pad = false) }\n"
             "fn l(x, w) { sum(sin(conv2d(x, w, padding = 1, groups = 2))) }\n"
             "fn g(x: f32[N, 4, H, W], w: f32[6, 2, 3, 3]) { grad(l, argnums = [0, 1])(x, w) }\n"
             "fn l2(x, w) { sum(sin(max_pool2d(conv2d(x, w, stride = 2, padding = 1), 2, stride = 1))) }\n"
             "fn g2(hw: f32[H, W], x: f32[N, 2, 2 * H, 2 * W], w: f32[3, 2, 3, 3]) {\n"
             "  grad(l2, argnums = [0, 1])(x, w)\n"
             "}\n");
}

Test(kinds, integers_bools_and_casts) {
  check_text("fn f(x: f32[N, 4]) -> i64[N, 4] {\n"
             "  let a = i64(floor(x * 10))\n"
             "  (a % 3) * 100 + a % -4 + i64(x > 0.5) - abs(a) + maximum(a, 2)\n"
             "}\n"
             "fn g(x: f32[N, 4]) -> i32[N, 4] { i32(x * 1e10) }\n"
             "fn h(x: f32[N, 4]) -> bool[N, 4] { (x > 0) and not (x > 1) }\n");
}

Test(kinds, gather_with_negative_indices) {
  check_text("fn f(t: f32[10, 4], i: i64[N]) -> f32[N, 4] { take(t, i - 2, axis = 0) * 2 }\n");
}

Test(kinds, reductions_along_every_axis) {
  check_text("fn a(x: f32[N, 5, 3]) -> f32[N, 1, 3] { sum(x, axis = 1, keepdims = true) }\n"
             "fn b(x: f32[N, 5, 3]) -> f32[5, 3] { max(x, axis = 0) }\n"
             "fn c(x: f32[N, 5, 3]) -> f32[] { mean(x * x) }\n"
             "fn d(x: f32[N, 5]) -> i64[N] { argmax(x, axis = 1) }\n"
             "fn e(x: f32[N, 5]) -> i64[5] { argmin(x, axis = 0) }\n"
             "fn f(x: f32[N, 5]) -> f32[N, 5] { x - mean(x, axis = 0, keepdims = true) }\n"
             "fn g(x: f32[N, 5]) -> f32[N] { logsumexp(x, axis = 1) }\n");
}

/* Squeezed reductions of shapes with two equal sizes: the row's value
 * [N] of space [N, N] is axis 0, not the reduced axis 1. */
Test(kinds, reductions_without_keepdims_on_equal_sizes) {
  check_text("fn a(s: f32[N, N]) -> f32[N] { sum(s, axis = 1) }\n"
             "fn b(s: f32[N, N]) -> f32[N] { max(s, axis = 1) }\n"
             "fn c(s: f32[N, N]) -> f32[N] { min(s * 2, axis = 1) + 1 }\n"
             "fn d(s: f32[N, N]) -> i64[N] { argmax(s, axis = 1) }\n"
             "fn e(s: f32[N, N]) -> f32[N] { logsumexp(s, axis = 1) }\n"
             "fn f(s: f32[N, N]) -> f32[N] { squeeze(min(s, axis = 1, keepdims = true), 1) }\n"
             "fn g(s: f32[N, N, N]) -> f32[N, N] { sum(s, axis = 1) }\n"
             "fn h(s: f32[3, 3]) -> f32[3] { sum(s, axis = 1) }\n");
}

/* Sizes that make a program invalid at some N: eager and compiled code
 * refuse alike (check_graph compares the messages), at N = 0 and 1. */
Test(kinds, sizes_invalid_at_run_time_are_refused_alike) {
  static const char *progs[] = {
      "fn f(x: f32[N, 8]) -> (f32[], f32[8]) { let v = sum(x, axis = 1); (v[-1], x[0]) }\n",
      "fn g(w: f32[4], y: f32[N]) -> f32[2] { w[N + 3:N + 5] * 2 }\n",
      "fn h(x: f32[N]) -> f32[N - 2] { exp(x[1:N - 1]) * 2 }\n",
      "fn m(x: f32[N, 3]) -> f32[3] { max(x, axis = 0) + min(x, axis = 0) }\n",
      "fn a(x: f32[N, 3]) -> i64[3] { argmax(x, axis = 0) }\n",
      "fn s(x: f32[3, N]) -> f32[3] { logsumexp(x, axis = 1) }\n",
  };
  for (size_t i = 0; i < sizeof progs / sizeof *progs; i++)
    for (int64_t n = 0; n <= 1; n++) check_text_at(progs[i], n);
}

/* take() into an empty result reads nothing, so no index is out of range
 * for a read: eager refused it while compiled code (a kernel of extent 0)
 * ran; found by tests/difftest. */
Test(kinds, take_into_an_empty_result_checks_no_index) {
  check_text_at("fn t(x: f32[3, N], i: i64[2]) -> f32[2, N] { take(x, i + 7, axis = 0) }\n", 0);
}

/* Eager mode checks every index of a take; the compiled code must too,
 * also where the take's result is then read only in part (a slice, an
 * index, the data of another take), not at all (an empty slice, an
 * unused value), or the data is empty (whose index arithmetic divides by
 * 0: SIGFPE).  Found by tests/difftest (seed 2026 program 99, seed 5
 * program 31).  Every index is 0 but the last, 2: out of range for the
 * axes of size 2, and read by none of the slices. */
Test(kinds, every_index_of_a_take_is_checked_however_its_result_is_read) {
  static const char *progs[] = {
      "fn a(x: f32[2, 3], i: i32[5]) { take(x, i, axis = 0)[0] }\n",
      "fn b(x: f32[2, 3], i: i32[5]) { take(x, i, axis = 0)[3:1] }\n",
      "fn c(x: f32[2, 3], i: i32[5]) { let t = take(x, i, axis = 0)\n x }\n",
      "fn d(x: f32[0, 0], i: i32[3, 1]) { take(flatten(x), i, axis = 0) }\n",
      "fn e(c: f32[8, 0, 1, 8], i: i32[8, 1]) { take(c, i, axis = 1)[6, -5, -2:-1:-1, -1, 2::3] }\n",
      "fn f(x: f32[2, 3], i: i32[5], j: i32[2]) { take(take(x, i, axis = 0), j, axis = 0) }\n",
      "fn g(x: f32[2, 3], i: i32[5], y: f32[0, 5, 3]) { exp(take(x, i, axis = 0)) + y }\n",
  };
  for (size_t k = 0; k < sizeof progs / sizeof *progs; k++) {
    prog P;
    cr_assert_eq(load(&P, "t.td", progs[k]), 0, "%s", progs[k]);
    const char **names;
    cr_assert_eq(td_program_entries(P.p, &names), 1);
    td_graph *g = td_program_lower(P.p, names[0]);
    cr_assert_not_null(g);
    td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in), **outs = NULL;
    cr_assert_eq(make_inputs(g, 1, 3, in), 0);
    for (int t = 0; t < g->n_inputs; t++)   /* indices 0, ..., 0, 2: only the last is bad (for axes of size 2) */
      if (!td_dtype_is_float(in[t]->dtype))
        for (int64_t j = 0; j < in[t]->numel; j++) td_tensor_set(in[t], j, j + 1 == in[t]->numel ? 2 : 0);
    td_err e, ce;
    cr_assert_eq(td_interp_run(g, in, NULL, NULL, &outs, &e, NULL), -1, "%s: eager ran", progs[k]);
    cr_expect(strstr(e.msg, "out of range") != NULL, "%s: %s", progs[k], e.msg);
    compiled_graph cg_;
    compile_graph(g, &cg_, names[0]);
    int rc = td_compiled_run(cg_.c, in, NULL, 0, &outs, &ce, NULL);
    cr_expect_eq(rc, -1, "%s: eager failed (%s), compiled ran", progs[k], e.msg);
    if (rc == 0) release_all(outs, cg_.plan->n_out_nodes);
    else cr_expect(strstr(ce.msg, "take: an index is out of range") != NULL, "%s: %s", progs[k], ce.msg);
    td_compiled_free(cg_.c);
    release_all(in, g->n_inputs);
    td_arena_free(P.a);
  }
}

/* An f32 constant is rounded to f32 before it is widened: f64(full(.., 0.1))
 * is 0.10000000149011612, as eager mode gives; the compiled code gave 0.1
 * (libgccjit keeps the double in a float constant).  Found by
 * tests/difftest. */
Test(kinds, f32_constants_widen_their_f32_value) {
  check_text("fn f(y: f64[N]) -> (f64[N], f64[N], f64[2]) {\n"
             "  (f64(full([N], 0.1)), y + full([N], 0.1), f64(full([2], 0.1)) * y[0:2])\n"
             "}\n");
}

/* Found by the 10 000-program campaign (seed 2027), each compiled wrong:
 * a reshape of a reduction's row on a square space as the kernel's root
 * (its axis matched to the reduced axis: row 0 written, the rest
 * garbage); f16 constants merged by their truncated value (10 + 0.5 was
 * 10); compared against eager mode, bit for bit where the contract says. */
Test(kinds, campaign_2027_regressions) {
  check_text("fn a(x: f32[M, M]) -> f32[1, M] { reshape(sum(x, axis = 1), [1, M]) }\n"
             "fn b(x: f32[N, N, N]) -> f32[1, N, N] { reshape(min(x, axis = 2), [1, N, N]) }\n"
             "fn c(y: i64[]) { (full([], 10.0, dtype = f16) + 0.5, -tanh(full([], -1, dtype = f16)), y) }\n");
}

/* pow(x, 0.5) is pow, not sqrt, also where the loop is vectorised (GCC's
 * vectoriser rewrote it as sqrt): pow(-inf, 0.5) is +inf, pow(-0, 0.5) +0. */
/* Compiles text's entry f(x: f32[N]) -> f32[N] and runs it on xs[0 .. n)
 * into ys. */
static void run_f32_fn(const char *text, const float *xs, int64_t n, float *ys) {
  prog P;
  cr_assert_eq(load(&P, "t.td", text), 0);
  td_graph *g = td_program_lower(P.p, "f");
  compiled_graph cg_;
  compile_graph(g, &cg_, text);
  td_err e;
  td_tensor *x = td_tensor_new(TD_F32, 1, &n, &e), **outs = NULL;
  memcpy(x->data, xs, (size_t)n * sizeof *xs);
  cr_assert_eq(td_compiled_run(cg_.c, &x, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  memcpy(ys, outs[0]->data, (size_t)n * sizeof *ys);
  release_all(outs, 1);
  td_tensor_release(x);
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

Test(kinds, pow_half_is_not_sqrt) {
  enum { n = 256 };
  static float xs[n], ys[n];
  for (int64_t i = 0; i < n; i++) xs[i] = i % 4 == 0 ? -__builtin_inff() : i % 4 == 1 ? -0.0f : i % 4 == 2 ? 4.0f : -4.0f;
  run_f32_fn("fn f(x: f32[N]) -> f32[N] { pow(x, 0.5) }\n", xs, n, ys);
  for (int64_t i = 0; i < n; i++) {
    float want = powf(xs[i], 0.5f);
    cr_expect(memcmp(&ys[i], &want, 4) == 0 || (isnan(ys[i]) && isnan(want)), "pow(%g, 0.5): %g, libm %g", xs[i],
              ys[i], want);
  }
}

Test(kinds, softmax_and_layer_norm) {
  check_text("import nn\n"
             "fn s(x: f32[N, 7]) -> f32[N, 7] { nn.softmax(x) }\n"
             "fn l(x: f32[N, 7], w: f32[7], b: f32[7]) -> f32[N, 7] { nn.layer_norm(x, w, b) }\n"
             "fn r(x: f32[N, 7], w: f32[7]) -> f32[N, 7] { nn.rms_norm(x, w) }\n"
             "fn ls(x: f32[N, 7]) -> f32[N, 7] { nn.log_softmax(x) }\n");
}

Test(kinds, batched_matmul_with_broadcast_and_epilogue) {
  check_text("fn a(x: f32[B, 3, 4], y: f32[4, 5]) -> f32[B, 3, 5] { relu(x @ y + 1) }\n"
             "fn b(x: f32[B, 3, 4], y: f32[B, 5, 4]) -> f32[B, 3, 5] { x @ transpose(y, 1, 2) }\n"
             "fn c(x: f32[3, 4], y: f32[B, 4, 5]) -> f32[B, 3, 5] { (x @ y) * 0.5 }\n"
             "fn d(x: i64[B, 4], y: i64[4, 2]) -> i64[B, 2] { x @ y }\n");
}

Test(kinds, prints_come_out_as_values) {
  check_text("fn main() {\n"
             "  let x = rand([3, 4], seed = 1)\n"
             "  print(\"x\", x, \"sum\", sum(x))\n"
             "  print(argmax(x, axis = 1))\n"
             "}\n");
}

Test(kinds, outputs_that_are_inputs_or_constants) {
  check_text("fn id(x: f32[N]) -> (f32[N], f32[N], f32[N]) { (x, x * 1, -(-x)) }\n"
             "fn k(x: f32[N]) -> (f32[3], f32[]) { (ones([3]) * 2, sum(zeros([0]))) }\n");
}

Test(kinds, out_of_range_take_is_an_error_naming_the_line) {
  prog P;
  cr_assert_eq(load(&P, "t.td", "fn f(t: f32[4, 2], i: i64[N]) -> f32[N, 2] {\n  take(t, i, axis = 0)\n}\n"), 0);
  td_graph *g = td_program_lower(P.p, "f");
  cr_assert_not_null(g);
  compiled_graph cg_;
  compile_graph(g, &cg_, "take");
  int64_t n = 3, sh[2] = {4, 2};
  td_err e;
  td_tensor *t = td_tensor_zeros(TD_F32, 2, sh, &e), *i = td_tensor_zeros(TD_I64, 1, &n, &e);
  ((int64_t *)i->data)[1] = 4;   /* one past the end */
  td_tensor *in[2] = {t, i}, **outs = NULL;
  td_span sp;
  cr_expect_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, &sp), -1);
  cr_expect(strstr(e.msg, "out of range") != NULL, "%s", e.msg);
  cr_expect_eq(sp.line, 2);
  ((int64_t *)i->data)[1] = -4;  /* wraps to row 0: fine */
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, &sp), 0, "%s", e.msg);
  release_all(outs, cg_.plan->n_out_nodes);
  td_tensor_release(t);
  td_tensor_release(i);
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

/* ---- kernels that share one compiled body (kernel_key.c) ---- */

/* The number of kernels of p that are not the first of their group, and
 * whether kernel k shares kernel r's code. */
static int shares(const td_plan *p, int k, int r) {
  td_kgroups kg;
  cr_assert_eq(td_kernel_groups(p, &kg), 0);
  int same = kg.rep[k] == r;
  td_kgroups_free(&kg);
  return same;
}

/* Program src's fn f lowered and compiled: two kernels with one body. */
static td_graph *shared_pair(prog *P, const char *src, compiled_graph *cg_, const char *what) {
  cr_assert_eq(load(P, "t.td", src), 0);
  td_graph *g = td_program_lower(P->p, "f");
  cr_assert_not_null(g);
  compile_graph(g, cg_, what);
  cr_assert_eq(cg_->plan->n_kernels, 2);
  cr_expect(shares(cg_->plan, 1, 0), "%s: the two kernels share their code", what);
  return g;
}

/* Two identical gathers in two kernels: one body, and the out-of-range
 * index of either is reported at its own line (the status code comes from
 * each kernel's own table). */
Test(shared, a_shared_take_reports_its_own_line) {
  prog P;
  compiled_graph cg_;
  shared_pair(&P,
              "fn f(t: f32[4, 2], u: f32[4, 2], i: i64[N], j: i64[N]) -> (f32[N, 2], f32[N, 2]) {\n"
              "  let a = take(t, i, axis = 0) * 2\n"
              "  let b = take(u, j, axis = 0) * 2\n"
              "  (a, b)\n}\n", &cg_, "take");
  int64_t n = 3, sh[2] = {4, 2};
  td_err e;
  td_tensor *t = td_tensor_zeros(TD_F32, 2, sh, &e), *u = td_tensor_zeros(TD_F32, 2, sh, &e);
  td_tensor *i = td_tensor_zeros(TD_I64, 1, &n, &e), *j = td_tensor_zeros(TD_I64, 1, &n, &e);
  for (int k = 0; k < 8; k++) {
    ((float *)t->data)[k] = (float)k;
    ((float *)u->data)[k] = (float)(100 + k);
  }
  int64_t iv[3] = {3, 0, -1}, jv[3] = {1, 2, -4};
  memcpy(i->data, iv, sizeof iv);
  memcpy(j->data, jv, sizeof jv);
  td_tensor *in[4] = {t, u, i, j}, **outs = NULL;
  td_span sp;
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, &sp), 0, "%s", e.msg);
  /* rows 3, 0, 3 of t and 1, 2, 0 of u, times 2 */
  const float *a = outs[0]->data, *b = outs[1]->data;
  int rows_a[3] = {3, 0, 3}, rows_b[3] = {1, 2, 0};
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++) {
      cr_expect_eq(a[2 * r + c], 2.0f * (float)(2 * rows_a[r] + c));
      cr_expect_eq(b[2 * r + c], 2.0f * (float)(100 + 2 * rows_b[r] + c));
    }
  release_all(outs, cg_.plan->n_out_nodes);
  ((int64_t *)j->data)[1] = 4;
  cr_expect_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, &sp), -1);
  cr_expect(strstr(e.msg, "out of range") != NULL, "%s", e.msg);
  cr_expect_eq(sp.line, 3, "the second take's line, not the first's");
  ((int64_t *)j->data)[1] = 0;
  ((int64_t *)i->data)[0] = -5;
  cr_expect_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, &sp), -1);
  cr_expect_eq(sp.line, 2);
  td_tensor_release(t);
  td_tensor_release(u);
  td_tensor_release(i);
  td_tensor_release(j);
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

/* Random draws in shared kernels: each kernel draws its own stream (as
 * eagerly, bit for bit), so the two masks of equal inputs differ. */
Test(shared, shared_random_kernels_draw_their_own_streams) {
  prog P;
  compiled_graph cg_;
  td_graph *g = shared_pair(&P,
                            "import nn\n"
                            "fn f(x: f32[N, 64], y: f32[N, 64], s: i64[]) -> (f32[N, 64], f32[N, 64]) {\n"
                            "  (nn.dropout(x, 0.5, s), nn.dropout(y, 0.5, s))\n}\n", &cg_, "dropout");
  td_compiled_free(cg_.c);
  int64_t n = 8, sh[2] = {8, 64};
  td_err e;
  td_tensor *x = td_tensor_zeros(TD_F32, 2, sh, &e), *y = td_tensor_zeros(TD_F32, 2, sh, &e);
  td_tensor *sd = td_tensor_zeros(TD_I64, 0, &n, &e);
  for (int k = 0; k < 8 * 64; k++) ((float *)x->data)[k] = ((float *)y->data)[k] = 1.0f + (float)k;
  ((int64_t *)sd->data)[0] = 7;
  td_tensor *in[3] = {x, y, sd};
  check_graph(g, P.a, in, "dropout");   /* against eager, bit for bit */
  td_tensor **outs = NULL;
  compile_graph(g, &cg_, "dropout");
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  cr_expect(memcmp(outs[0]->data, outs[1]->data, 8 * 64 * sizeof(float)) != 0, "two streams, two masks");
  release_all(outs, cg_.plan->n_out_nodes);
  td_compiled_free(cg_.c);
  td_tensor_release(x);
  td_tensor_release(y);
  td_tensor_release(sd);
  td_arena_free(P.a);
}

/* A stack of identical layers (different weights) runs as eager runs it,
 * with one body per distinct kernel; a layer of another width or another
 * constant has code of its own. */
Test(shared, a_stack_of_layers_runs_right_with_shared_bodies) {
  prog P;
  cr_assert_eq(load(&P, "t.td",
                    "import nn\n"
                    "model Stack(n: int = 4) {\n"
                    "  blocks = [nn.TransformerBlock(16, 2, 32) for i in 0..n]\n"
                    "  wide = nn.Linear(16, 24)\n"
                    "  fn forward(x: f32[B, 8, 16]) -> f32[B, 8, 24] {\n"
                    "    let h = x\n"
                    "    for i in 0..n { h = blocks[i](h) }\n"
                    "    let a = h * 2\n"
                    "    let b = a * 3\n"
                    "    wide(b)\n"
                    "  }\n"
                    "}\n"), 0);
  td_graph *g = td_program_lower(P.p, "Stack.forward");
  cr_assert_not_null(g);
  compiled_graph cg_;
  compile_graph(g, &cg_, "stack");
  td_kgroups kg;
  cr_assert_eq(td_kernel_groups(cg_.plan, &kg), 0);
  cr_expect_lt(kg.n_distinct * 3, cg_.plan->n_kernels, "%d distinct of %d", kg.n_distinct, cg_.plan->n_kernels);
  /* the last kernel (the wide matmul) is its own */
  int last = cg_.plan->n_kernels - 1;
  cr_expect_eq(kg.rep[last], last);
  for (int k = 0; k < cg_.plan->n_kernels; k++) {   /* members read other buffers than their first */
    if (kg.rep[k] == k) continue;
    const td_kernel *a = &cg_.plan->kernels[k], *r = &cg_.plan->kernels[kg.rep[k]];
    cr_expect_eq(a->kind, r->kind);
    cr_expect_neq(a->root, r->root);
  }
  td_kgroups_free(&kg);
  td_compiled_free(cg_.c);
  int64_t sh[3] = {3, 8, 16};
  td_err e;
  td_tensor *x = td_tensor_zeros(TD_F32, 3, sh, &e);
  for (int k = 0; k < 3 * 8 * 16; k++) ((float *)x->data)[k] = (float)sin(0.37 * k);
  td_tensor *in[1] = {x};
  check_graph(g, P.a, in, "stack");
  td_tensor_release(x);
  td_arena_free(P.a);
}

/* Integer floor division and modulo (only reachable from hand-built IR:
 * the language's `/` is true division) against Python's rules. */
Test(kinds, integer_floor_division_and_modulo) {
  td_arena *a = td_arena_new();
  td_graph *g = td_graph_new(a, "div");
  td_dim s[1] = {8};
  td_attr at;
  memset(&at, 0, sizeof at);
  int x = td_graph_add(g, TD_IR_INPUT, TD_I64, 1, s, NULL, 0, &at, (td_span){-1, 0, 0, 1, 1});
  at.i = 1;
  int y = td_graph_add(g, TD_IR_INPUT, TD_I64, 1, s, NULL, 0, &at, (td_span){-1, 0, 0, 1, 1});
  int in[2] = {x, y};
  td_graph_add_output(g, td_graph_add(g, TD_IR_DIV, TD_I64, 1, s, in, 2, NULL, (td_span){-1, 0, 0, 2, 1}));
  td_graph_add_output(g, td_graph_add(g, TD_IR_MOD, TD_I64, 1, s, in, 2, NULL, (td_span){-1, 0, 0, 3, 1}));
  int64_t xs[8] = {7, -7, 7, -7, 5, INT64_MIN, 3, -9}, ys[8] = {2, 2, -2, -2, 0, -1, 7, 3};
  int64_t q[8] = {3, -4, -4, 3, 0, INT64_MIN, 0, -3}, m[8] = {1, 1, -1, -1, 0, 0, 3, 0};
  int64_t n = 8;
  td_err e;
  td_tensor *tx = td_tensor_new(TD_I64, 1, &n, &e), *ty = td_tensor_new(TD_I64, 1, &n, &e);
  memcpy(tx->data, xs, sizeof xs);
  memcpy(ty->data, ys, sizeof ys);
  compiled_graph cg_;
  compile_graph(g, &cg_, "div");
  td_tensor *ins[2] = {tx, ty}, **outs = NULL;
  cr_assert_eq(td_compiled_run(cg_.c, ins, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  for (int i = 0; i < 8; i++) {
    cr_expect_eq(((int64_t *)outs[0]->data)[i], q[i], "%lld // %lld", (long long)xs[i], (long long)ys[i]);
    cr_expect_eq(((int64_t *)outs[1]->data)[i], m[i], "%lld %% %lld", (long long)xs[i], (long long)ys[i]);
  }
  release_all(outs, 2);
  td_tensor_release(tx);
  td_tensor_release(ty);
  td_compiled_free(cg_.c);
  td_arena_free(a);
}

/* Random ops in compiled code use the interpreter's Philox mapping, also
 * with a call index mixed into the stream. */
Test(kinds, random_numbers_match_the_interpreter_for_every_call) {
  prog P;
  cr_assert_eq(load(&P, "t.td", "fn f(x: f32[N]) -> f32[N, 3] {\n"
                                "  unsqueeze(x, 1) + rand([N, 3], seed = 5) + randn([3], seed = 6)\n}\n"), 0);
  td_graph *g = td_program_lower(P.p, "f");
  cr_assert_not_null(g);
  compiled_graph cg_;
  compile_graph(g, &cg_, "rand");
  td_tensor *in[1];
  cr_assert_eq(make_inputs(g, 6, 1, in), 0);
  for (uint64_t call = 0; call < 3; call++) {
    td_run_opts io;
    memset(&io, 0, sizeof io);
    io.call_index = call;
    td_tensor **eager = NULL, **comp = NULL;
    td_err e;
    cr_assert_eq(td_interp_run(g, in, NULL, &io, &eager, &e, NULL), 0);
    cr_assert_eq(td_compiled_run(cg_.c, in, NULL, call, &comp, &e, NULL), 0);
    cr_expect_eq(memcmp(eager[0]->data, comp[0]->data, (size_t)eager[0]->numel * 4), 0,
                 "bit-identical random numbers at call %llu", (unsigned long long)call);
    release_all(eager, 1);
    release_all(comp, 1);
  }
  td_tensor_release(in[0]);
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

/* Sizes large enough that kernels are split across the pool's threads
 * (TDSL_NUM_THREADS, default: every CPU): results must not change. */
static void check_text_at(const char *text, int64_t size) {
  prog P;
  cr_assert_eq(load(&P, "t.td", text), 0);
  const char **names;
  int ne = td_program_entries(P.p, &names);
  for (int i = 0; i < ne; i++) {
    td_graph *g = td_program_lower(P.p, names[i]);
    cr_assert_not_null(g);
    td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in);
    cr_assert_eq(make_inputs(g, size, 3, in), 0);
    check_graph(g, P.a, in, names[i]);
    release_all(in, g->n_inputs);
  }
  td_arena_free(P.a);
}

Test(kinds, large_kernels_split_across_threads, .timeout = 120) {
  check_text_at("import nn\n"
                "fn p(x: f32[N, 300], b: f32[300]) -> f32[N, 300] { gelu(x * 0.5 + b) }\n"
                "fn s(x: f32[N, 300]) -> f32[N, 300] { nn.softmax(x) }\n"
                "fn c(x: f32[N, 300]) -> f32[1, 300] { sum(x, axis = 0, keepdims = true) }\n"
                "fn m(x: f32[N, 300], w: f32[200, 300], b: f32[200]) -> f32[N, 200] { relu(x @ transpose(w, 0, 1) + b) }\n"
                "fn bm(x: f32[4, N, 64], y: f32[4, 64, N]) -> f32[4, N, N] { x @ y }\n"
                "fn d(x: f64[N, 70], y: f64[70, 50]) -> f64[N, 50] { sigmoid(x @ y) }\n",
                301);
}

/* C blocks of the packed GEMM (192 rows at AVX-512): on one thread, 401
 * rows are two whole blocks and a part of one; A read in place and
 * packed (transposed), f32 and f64, against the interpreter. */
Test(kinds, packed_matmul_over_several_row_blocks, .timeout = 120) {
  setenv("TDSL_NUM_THREADS", "1", 1);   /* before the pool starts: each test is its own process */
  check_text_at("fn r(x: f32[N, 70], y: f32[70, 45]) -> f32[N, 45] { x @ y + 1 }\n"
                "fn t(x: f32[70, N], y: f32[70, 45]) -> f32[N, 45] { transpose(x, 0, 1) @ y }\n"
                "fn d(x: f64[N, 270], y: f64[270, 33]) -> f64[N, 33] { x @ y }\n",
                401);
}

/* The compiled f32 exp (a polynomial, so that loops vectorise) against
 * libm's expf over its whole range and at the edges. */
Test(kinds, exp_polynomial_is_within_its_error_bound) {
  int64_t n = 200003;
  float *xs = td_malloc((size_t)n * sizeof *xs), *ys = td_malloc((size_t)n * sizeof *ys);
  cr_assert(xs && ys);
  for (int64_t i = 0; i < n - 3; i++) xs[i] = (float)(-87.0 + 175.7 * (double)i / (double)(n - 4));
  xs[n - 3] = __builtin_nanf("");
  xs[n - 2] = -__builtin_inff();
  xs[n - 1] = __builtin_inff();
  run_f32_fn("fn f(x: f32[N]) -> f32[N] { exp(x) }\n", xs, n, ys);
  double worst = 0;
  for (int64_t i = 0; i < n - 3; i++) {
    double want = expf(xs[i]), rel = fabs(ys[i] - want) / want;
    if (rel > worst) worst = rel;
  }
  cr_expect_lt(worst, 4e-7, "worst relative error %g", worst);
  cr_expect(isnan(ys[n - 3]));
  cr_expect_eq(ys[n - 2], 0.0f);
  cr_expect(isinf(ys[n - 1]) && ys[n - 1] > 0);
  td_free(xs);
  td_free(ys);
}

/* Row i of the softmax test: length-n rows of kind i % 6 (see below). */
static void softmax_row(float *x, int64_t n, int kind, uint32_t *seed) {
  for (int64_t j = 0; j < n; j++) {
    *seed = *seed * 1664525u + 1013904223u;
    double u = (double)(*seed >> 8) / 16777216.0;
    switch (kind) {
    case 0: x[j] = (float)(6 * u - 3); break;                              /* ordinary */
    case 1: x[j] = (float)(-300 * u); break;                               /* exp underflows */
    case 2: x[j] = j % 3 ? (float)(8 * u) : -__builtin_inff(); break;      /* -inf holes */
    case 3: x[j] = -__builtin_inff(); break;                               /* only -inf */
    case 4: x[j] = j == n / 2 ? __builtin_inff() : (float)u; break;        /* +inf */
    default: x[j] = j == n - 1 ? __builtin_nanf("") : (float)u; break;     /* NaN */
    }
  }
}

/* Compiled softmax over the last axis (the stored-exp row kernel: max,
 * exp stored and summed in lanes per chunk, scale) against a float64
 * reference, on rows shorter than a vector, with remainders, and over
 * several 1024-element chunks; rows whose exps underflow; -inf holes;
 * rows of -inf only, or holding +inf or NaN (NaN everywhere, as eager). */
Test(kinds, softmax_rows_against_float64) {
  prog P;
  cr_assert_eq(load(&P, "t.td", "import nn\nfn s(x: f32[M, N]) -> f32[M, N] { nn.softmax(x) }\n"), 0);
  td_graph *g = td_program_lower(P.p, "s");
  compiled_graph cg_;
  compile_graph(g, &cg_, "softmax");
  static const int64_t lens[] = {1, 5, 16, 17, 1024, 1030, 3000, 4100};
  uint32_t seed = 7;
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int64_t sh[2] = {12, lens[li]}, n = lens[li];
    td_err e;
    td_tensor *x = td_tensor_new(TD_F32, 2, sh, &e), **outs = NULL;
    float *xs = x->data;
    for (int i = 0; i < 12; i++) softmax_row(xs + i * n, n, i % 6, &seed);
    cr_assert_eq(td_compiled_run(cg_.c, &x, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
    const float *ys = outs[0]->data;
    for (int i = 0; i < 12; i++) {
      const float *xr = xs + i * n, *yr = ys + i * n;
      double m = -INFINITY, s = 0;
      int nan_row = i % 6 >= 3;
      for (int64_t j = 0; j < n; j++) m = xr[j] > m ? xr[j] : m;
      for (int64_t j = 0; j < n; j++) s += exp((double)xr[j] - m);
      for (int64_t j = 0; j < n; j++) {
        if (nan_row) {
          cr_expect(isnan(yr[j]), "len %lld row %d [%lld]: %g, want NaN", (long long)n, i, (long long)j, yr[j]);
          continue;
        }
        /* x - m rounds in f32: exp moves by |x - m| 2^-24 relative */
        double d = (double)xr[j] - m, r = exp(d) / s, err = fabs(yr[j] - r);
        if (isnan(r) || r == 0) {   /* a row of one -inf; an -inf element */
          cr_expect(isnan(r) ? isnan(yr[j]) : yr[j] == 0, "len %lld row %d [%lld]: %g, want %g", (long long)n, i,
                    (long long)j, yr[j], r);
          continue;
        }
        cr_expect(err <= (1e-6 + fabs(d) * 0x1p-24) * r + 1e-38, "len %lld row %d [%lld]: %.9g, want %.9g",
                  (long long)n, i, (long long)j, yr[j], r);
      }
    }
    release_all(outs, 1);
    td_tensor_release(x);
  }
  td_compiled_free(cg_.c);
  td_arena_free(P.a);
}

/* Row means and layer_norm (the 16-lane f64 moments) against float64, on
 * rows shorter than the lanes, with remainders and long ones; values
 * offset by 1000 so that a single-pass variance in f32 would fail. */
Test(kinds, layer_norm_rows_against_float64) {
  prog P;
  cr_assert_eq(load(&P, "t.td",
                    "import nn\n"
                    "fn l(x: f32[M, N], w: f32[N], b: f32[N]) -> f32[M, N] { nn.layer_norm(x, w, b) }\n"
                    "fn m(x: f32[M, N]) -> f32[M] { mean(x, axis = 1) }\n"), 0);
  compiled_graph cl, cm;
  compile_graph(td_program_lower(P.p, "l"), &cl, "layer_norm");
  compile_graph(td_program_lower(P.p, "m"), &cm, "mean");
  static const int64_t lens[] = {1, 7, 16, 33, 1000, 4100};
  uint32_t seed = 11;
  for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
    int64_t n = lens[li], sh[2] = {5, n};
    td_err e;
    td_tensor *x = td_tensor_new(TD_F32, 2, sh, &e), *w = td_tensor_new(TD_F32, 1, &n, &e);
    td_tensor *b = td_tensor_new(TD_F32, 1, &n, &e), **ol = NULL, **om = NULL;
    float *xs = x->data, *ws = w->data, *bs = b->data;
    for (int64_t j = 0; j < 5 * n; j++) {
      seed = seed * 1664525u + 1013904223u;
      xs[j] = (float)(1000 + 4.0 * (seed >> 8) / 16777216.0);
    }
    for (int64_t j = 0; j < n; j++) ws[j] = 0.5f + (float)j / (float)n, bs[j] = (float)(j % 5) - 2;
    td_tensor *in[3] = {x, w, b};
    cr_assert_eq(td_compiled_run(cl.c, in, NULL, 0, &ol, &e, NULL), 0, "%s", e.msg);
    cr_assert_eq(td_compiled_run(cm.c, in, NULL, 0, &om, &e, NULL), 0, "%s", e.msg);
    const float *yl = ol[0]->data, *ym = om[0]->data;
    for (int i = 0; i < 5; i++) {
      const float *xr = xs + i * n;
      double mu = 0, var = 0;
      for (int64_t j = 0; j < n; j++) mu += xr[j];
      mu /= (double)n;
      for (int64_t j = 0; j < n; j++) var += (xr[j] - mu) * (xr[j] - mu);
      var /= (double)n;
      cr_expect(fabs(ym[i] - mu) <= 1e-6 * mu, "len %lld row %d mean %.9g, want %.9g", (long long)n, i, ym[i], mu);
      for (int64_t j = 0; j < n; j++) {
        double r = (xr[j] - mu) / sqrt(var + 1e-5) * ws[j] + bs[j];
        /* the graph's f32 mean (the f32 sum / n) is within 2^-23 |mu|
         * (eager too); x - mean carries that, divided by the std */
        double tol = 2e-6 * fmax(fabs(r), 1) + 0x1p-22 * mu / sqrt(var + 1e-5) * ws[j];
        cr_expect(fabs(yl[i * n + j] - r) <= tol, "len %lld row %d [%lld]: %.9g, want %.9g", (long long)n, i,
                  (long long)j, yl[i * n + j], r);
      }
    }
    release_all(ol, 1);
    release_all(om, 1);
    td_tensor_release(x);
    td_tensor_release(w);
    td_tensor_release(b);
  }
  td_compiled_free(cl.c);
  td_compiled_free(cm.c);
  td_arena_free(P.a);
}

/* A fresh plan of the one entry of text (each with a graph of its own, as
 * in another process). */
static td_plan *fresh_plan(prog *P, const char *text, td_graph **lowered) {
  cr_assert_eq(load(P, "t.td", text), 0);
  const char **names;
  cr_assert_eq(td_program_entries(P->p, &names), 1);
  td_graph *g = td_program_lower(P->p, names[0]), *o;
  cr_assert_not_null(g);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *plan = td_plan_build(o, &e);
  cr_assert_not_null(plan, "%s", e.msg);
  *lowered = g;
  return plan;
}

/* The compile cache: a compilation of the same program from a graph of
 * its own (another process's) loads the shared object the first one
 * stored, without making a gccjit context, and computes the same values.
 * The second program's kernels use sizes the generator interns (N*N*N of
 * the reductions): a hit must intern them again, as the tables stored
 * with the code refer to them (it once read a size table past its end:
 * found by tests/difftest). */
Test(cache, second_compilation_comes_from_the_cache) {
  char dir[] = "/tmp/tdsl-cache-test-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  setenv("TDSL_CACHE_DIR", dir, 1);
  unsetenv("TDSL_CACHE");
  static const char *progs[] = {
      "fn f(x: f32[N, 8], w: f32[8, 8]) -> f32[N, 8] { tanh(x @ w) }\n",
      "fn f(x0: f32[6, 1], x1: f32[N, N, N]) {\n"
      "  (sum(x1, axis = 1, keepdims = true), erf(x1), silu(broadcast_to(x0, [8, N, 6, 1])), nn.softmax(x1, axis = -2))\n"
      "}\n",
  };
  for (int t = 0; t < 2; t++) {
    char text[512];
    snprintf(text, sizeof text, "import nn\n%s", progs[t]);
    prog P[3];
    td_graph *g[3];
    td_plan *plan[3];
    td_compiled *c[3];
    td_err e;
    td_compile_opts co = {-1, 0, NULL, 1}, kc = co;
    kc.keep_c = 1;   /* --dump=c: the context is made for its text, the code still comes from the cache */
    for (int k = 0; k < 3; k++) {
      plan[k] = fresh_plan(&P[k], text, &g[k]);
      c[k] = td_compile(plan[k], k == 2 ? &kc : &co, &e);
      cr_assert_not_null(c[k], "%s", e.msg);
    }
    cr_expect_eq(td_compiled_from_cache(c[0]), 0, "the first compilation fills the cache");
    cr_expect_eq(td_compiled_generated(c[0]), 1);
    cr_expect_eq(td_compiled_from_cache(c[1]), 1, "the second one reads it");
    cr_expect_eq(td_compiled_generated(c[1]), 0, "a hit makes no gccjit context (its key is the plan)");
    cr_expect(td_compiled_from_cache(c[2]) && td_compiled_generated(c[2]) && td_compiled_c_text(c[2]));
    for (int64_t n = 1; n <= 9; n += 4) {   /* a few sizes: the size table is read at each */
      td_tensor **in = td_calloc((size_t)g[0]->n_inputs + 1, sizeof *in), **o[3] = {NULL, NULL, NULL};
      cr_assert_eq(make_inputs(g[0], n, 2, in), 0);
      for (int k = 0; k < 3; k++)
        cr_assert_eq(td_compiled_run(c[k], in, NULL, 0, &o[k], &e, NULL), 0, "%s", e.msg);
      for (int i = 0; i < plan[0]->n_out_nodes; i++)
        for (int k = 1; k < 3; k++) {
          cr_assert_eq(o[k][i]->numel, o[0][i]->numel);
          cr_expect_eq(memcmp(o[0][i]->data, o[k][i]->data, (size_t)o[0][i]->numel * td_dtype_size(o[0][i]->dtype)), 0,
                       "program %d, N = %lld, output %d: the cached code computes other values", t, (long long)n, i);
        }
      for (int k = 0; k < 3; k++) release_all(o[k], plan[0]->n_out_nodes);
      release_all(in, g[0]->n_inputs);
    }
    for (int k = 0; k < 3; k++) {
      td_compiled_free(c[k]);
      td_arena_free(P[k].a);
    }
  }
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* The cache's key is the plan, not the generated code, so it must tell
 * apart every pair of programs that differ in anything the generator
 * reads: here pairs that differ in one constant, slice start or step,
 * axis, permutation, dtype, size, seed, reduction or op each have keys of
 * their own, and the same program twice has one key. */
Test(cache, plan_keys_tell_programs_apart) {
  static const char *progs[] = {
      "fn f(x: f32[N, 8]) { x * 2.0 }", "fn f(x: f32[N, 8]) { x * 2.5 }",
      "fn f(x: f32[N, 8]) { x * 2.5000001 }", "fn f(x: f64[N, 8]) { x * 2.5 }",
      "fn f(x: f32[N, 9]) { x * 2.5 }", "fn f(x: f32[M, 8]) { x * 2.5 }",
      "fn f(x: f32[N, 8]) { x + 2.5 }", "fn f(x: f32[N, 8]) { x[:, 1:] }",
      "fn f(x: f32[N, 8]) { x[:, 2:] }", "fn f(x: f32[N, 8]) { x[:, 1::2] }",
      "fn f(x: f32[N, 8]) { x[1:, :] }", "fn f(x: f32[N, 8]) { x[1:N - 1, :] }",
      "fn f(x: f32[N, 8]) { sum(x, axis = 0) }", "fn f(x: f32[N, 8]) { sum(x, axis = 1) }",
      "fn f(x: f32[N, 8]) { max(x, axis = 1) }", "fn f(x: f32[N, 8]) { transpose(x, 0, 1) }",
      "fn f(x: f32[N, 8], i: i64[3]) { take(x, i, axis = 1) }", "fn f(x: f32[N, 8], i: i64[3]) { take(x, i, axis = 0) }",
      "fn f(x: f32[N, 8]) { x + rand([8], seed = 1) }", "fn f(x: f32[N, 8]) { x + rand([8], seed = 2) }",
      "fn f(x: f32[N, 8]) { concat([x, x], axis = 0) }", "fn f(x: f32[N, 8]) { concat([x, x], axis = 1) }",
      "fn f(x: f32[N, 8], w: f32[8, 4]) { x @ w }", "fn f(x: f32[N, 8], w: f32[8, 4]) { relu(x @ w) }",
  };
  enum { NP = sizeof progs / sizeof *progs };
  char *keys[NP + 1];
  prog P[NP + 1];
  for (int i = 0; i <= NP; i++) {
    const char *text = i < NP ? progs[i] : progs[0];   /* the last: the first again */
    cr_assert_eq(load(&P[i], "t.td", text), 0, "%s", text);
    td_graph *g = td_program_lower(P[i].p, "f"), *o;
    cr_assert_not_null(g, "%s", text);
    td_err e;
    cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s: %s", text, e.msg);
    td_plan *plan = td_plan_build(o, &e);
    cr_assert_not_null(plan, "%s: %s", text, e.msg);
    keys[i] = tdc_plan_key(plan, "x86-64-v3", 2, 0);
    cr_assert_not_null(keys[i]);
  }
  for (int i = 0; i < NP; i++)
    for (int j = i + 1; j < NP; j++)
      cr_expect(strcmp(keys[i], keys[j]) != 0, "one key for %s and %s", progs[i], progs[j]);
  cr_expect_str_eq(keys[NP], keys[0], "the same program has one key");
  for (int i = 0; i <= NP; i++) {
    td_free(keys[i]);
    td_arena_free(P[i].a);
  }
}

/* Threads of one process storing the same cache entry at once (two
 * compiled graphs of the same program): each writes its own temporary
 * (NAME.TID.tmp), so every write succeeds and the file is always one
 * writer's whole content.  With one name per process they took and
 * unlinked each other's temporary ("cannot write the compile cache"). */
typedef struct cache_writer {
  const char *path;
  char data[4096];
  int failures;
  td_err first;
} cache_writer;

static void *write_entry_often(void *arg) {
  cache_writer *w = arg;
  for (int i = 0; i < 300; i++) {
    td_err e;
    if (td_cache_write(w->path, w->data, sizeof w->data, &e) && !w->failures++) w->first = e;
  }
  return NULL;
}

Test(cache, threads_storing_one_entry_never_collide) {
  char dir[] = "/tmp/tdsl-cache-threads-XXXXXX", path[128];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/0123456789abcdef.c", dir);
  enum { N = 4 };
  static cache_writer w[N];
  pthread_t th[N];
  for (int k = 0; k < N; k++) {
    w[k].path = path;
    memset(w[k].data, 'a' + k, sizeof w[k].data);
    cr_assert_eq(pthread_create(&th[k], NULL, write_entry_often, &w[k]), 0);
  }
  for (int k = 0; k < N; k++) pthread_join(th[k], NULL);
  for (int k = 0; k < N; k++)
    cr_expect_eq(w[k].failures, 0, "writer %d failed %d of 300 times: %s", k, w[k].failures, w[k].first.msg);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f);
  char got[4097];
  size_t n = fread(got, 1, sizeof got, f);
  fclose(f);
  cr_assert_eq(n, 4096u, "the entry has %zu bytes", n);
  int whole = 0;
  for (int k = 0; k < N; k++) whole |= !memcmp(got, w[k].data, n);
  cr_expect(whole, "the entry is not one writer's content");
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int files = 0;
  for (struct dirent *e; (e = readdir(d));) files += e->d_name[0] != '.';
  closedir(d);
  cr_expect_eq(files, 1, "temporaries were left behind");
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* The size limit's parsing: MiB, fractions allowed; anything else is the
 * default (1024 MiB). */
Test(cache, size_limit_from_the_environment) {
  static const struct { const char *v; uint64_t want; } cases[] = {
      {"0", 0},          {"1", 1 << 20},     {"2048", 2048ull << 20}, {"0.5", 1 << 19},
      {"1.", 1 << 20},   {".25", 1 << 18},   {"007", 7 << 20},
      {"", 1024ull << 20}, {"abc", 1024ull << 20}, {"-1", 1024ull << 20}, {"1G", 1024ull << 20},
      {"1e3", 1024ull << 20}, {" 1", 1024ull << 20}, {"1 ", 1024ull << 20}, {"0x10", 1024ull << 20},
      {"inf", 1024ull << 20}, {".", 1024ull << 20}, {"1.2.3", 1024ull << 20}, {"+5", 1024ull << 20}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    setenv("TDSL_CACHE_MAX_MB", cases[i].v, 1);
    cr_expect_eq(td_cache_limit(), cases[i].want, "TDSL_CACHE_MAX_MB=\"%s\": %llu bytes, want %llu", cases[i].v,
                 (unsigned long long)td_cache_limit(), (unsigned long long)cases[i].want);
  }
  unsetenv("TDSL_CACHE_MAX_MB");
  cr_expect_eq(td_cache_limit(), 1024ull << 20, "unset: the default");
}

/* A file of n bytes in d with mtime t (seconds since the epoch). */
static void put_file(const char *d, const char *name, size_t n, time_t t) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", d, name);
  FILE *f = fopen(p, "wb");
  cr_assert_not_null(f, "%s", p);
  for (size_t i = 0; i < n; i++) fputc('x', f);
  fclose(f);
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static int exists_in(const char *d, const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", d, name);
  return access(p, F_OK) == 0;
}

/* td_cache_trim on hand-made entries of known sizes and times: whole
 * entries go, oldest first (an entry's time is its newest file's), CUDA
 * modules and incomplete entries count like any other, the entry to keep
 * stays even when it is the oldest, and it stops as soon as the rest fits. */
Test(cache, trim_removes_whole_entries_oldest_first) {
  char dir[] = "/tmp/tdsl-trim-test-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  const time_t T = 1700000000;
  /* "keep": the oldest, 3000 bytes */
  put_file(dir, "00000000000000a0.so", 2000, T + 10);
  put_file(dir, "00000000000000a0.c", 983, T + 10);
  put_file(dir, "00000000000000a0.sum", 17, T + 10);
  /* e1, 3000 bytes; its .so is the newest of its files (a hit touched it) */
  put_file(dir, "00000000000000e1.so", 2000, T + 400);
  put_file(dir, "00000000000000e1.c", 983, T + 100);
  put_file(dir, "00000000000000e1.sum", 17, T + 100);
  /* a CUDA module, 3000 bytes */
  put_file(dir, "cuda-00000000000000e2.cubin", 3000, T + 200);
  /* an incomplete entry (a .c and a .sum left behind), 3000 bytes */
  put_file(dir, "00000000000000e3.c", 2983, T + 300);
  put_file(dir, "00000000000000e3.sum", 17, T + 300);
  /* the newest, 3000 bytes */
  put_file(dir, "00000000000000e4.so", 3000, T + 500);
  /* not the cache's: 10000 bytes, oldest of all */
  put_file(dir, "README", 10000, T);
  /* total 15000; limit 9000: oldest first (the kept a0 aside: e2 at 200,
   * e3 at 300) until it fits: e2 (12000), e3 (9000) */
  td_cache_trim(dir, "00000000000000a0", 9000);
  cr_expect(exists_in(dir, "00000000000000a0.so") && exists_in(dir, "00000000000000a0.c") &&
            exists_in(dir, "00000000000000a0.sum"), "the entry to keep must stay whole");
  cr_expect(!exists_in(dir, "cuda-00000000000000e2.cubin"), "the oldest (a CUDA module) goes first");
  cr_expect(!exists_in(dir, "00000000000000e3.c") && !exists_in(dir, "00000000000000e3.sum"),
            "an incomplete entry counts and goes like any other");
  cr_expect(exists_in(dir, "00000000000000e1.so") && exists_in(dir, "00000000000000e1.c") &&
            exists_in(dir, "00000000000000e1.sum"), "e1's time is its .so's (400, after e3's 300): it stays");
  cr_expect(exists_in(dir, "00000000000000e4.so"));
  cr_expect(exists_in(dir, "README"), "other files are neither counted nor removed");
  /* at the limit: nothing goes */
  td_cache_trim(dir, NULL, 9000);
  cr_expect(exists_in(dir, "00000000000000a0.so") && exists_in(dir, "00000000000000e1.so") &&
            exists_in(dir, "00000000000000e4.so"));
  /* nothing to keep: a0 (10) is the oldest, then e1 (400) */
  td_cache_trim(dir, NULL, 6000);
  cr_expect(!exists_in(dir, "00000000000000a0.so") && !exists_in(dir, "00000000000000a0.c") &&
            !exists_in(dir, "00000000000000a0.sum"), "a0 is the oldest now that it is not kept");
  cr_expect(exists_in(dir, "00000000000000e1.so") && exists_in(dir, "00000000000000e4.so"));
  /* limit 0 keeping e4 (the newest): e1 goes whole, e4 stays though it is
   * over the limit alone */
  td_cache_trim(dir, "00000000000000e4", 0);
  cr_expect(!exists_in(dir, "00000000000000e1.so") && !exists_in(dir, "00000000000000e1.c") &&
            !exists_in(dir, "00000000000000e1.sum"));
  cr_expect(exists_in(dir, "00000000000000e4.so"));
  /* limit 0 and nothing to keep: every entry goes, nothing else */
  td_cache_trim(dir, NULL, 0);
  cr_expect(!exists_in(dir, "00000000000000e4.so"));
  cr_expect(exists_in(dir, "README"));
  /* a directory that does not exist is no error */
  td_cache_trim("/nonexistent/tdsl-cache", NULL, 0);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

/* ---- prepacked weights ---- */

/* Matmuls whose B is a parameter read through w.T (nn.Linear's layout):
 * the compiled module packs the weight once and reuses the packed copy
 * while the parameter is the same tensor.  Each entry is compiled once and
 * run at M = 1, 2, 7, 8, 63, 64, 65 (single rows, tiles of four, the
 * packed path from 64 rows), alternating two weight sets; then one set is
 * freed and a third one made (its memory may be the freed one's): every
 * result must match a float64 reference computed here from the tensors
 * passed, so a stale packed copy would show.  K and N are no multiples of
 * the vector width or the panel width.  Wide (6.6 MB of weight) is large
 * enough that fewer rows than threads are split over the columns: run at
 * M = 1, 2, 3 only, on pools of 1 and 3 threads (a range then starts in
 * one row and ends inside the next).  Narrow (N = 12, one vector) and
 * Panel (N = 24) fit in one panel: every row is whole, and Panel's 64 rows
 * and more take the blocked packed path. */
static const char *prepack_src =
    "model L32 {\n"
    "  param w: f32[100, 70] = uniform(-1.0, 1.0)\n"
    "  param b: f32[100] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f32[M, 70]) -> f32[M, 100] { relu(x @ w.T + b) }\n"
    "}\n"
    "model L64 {\n"
    "  param w: f64[50, 37] = uniform(-1.0, 1.0)\n"
    "  param b: f64[50] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f64[M, 37]) -> f64[M, 50] { relu(x @ w.T + b) }\n"
    "}\n"
    "model Wide {\n"
    "  param w: f32[1500, 1100] = uniform(-1.0, 1.0)\n"
    "  param b: f32[1500] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f32[M, 1100]) -> f32[M, 1500] { relu(x @ w.T + b) }\n"
    "}\n"
    "model Narrow {\n"
    "  param w: f32[12, 20] = uniform(-1.0, 1.0)\n"
    "  param b: f32[12] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f32[M, 20]) -> f32[M, 12] { relu(x @ w.T + b) }\n"
    "}\n"
    "model Panel {\n"
    "  param w: f32[24, 150] = uniform(-1.0, 1.0)\n"
    "  param b: f32[24] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f32[M, 150]) -> f32[M, 24] { relu(x @ w.T + b) }\n"
    "}\n"
    "model Batched {\n"
    "  param w: f32[33, 20] = uniform(-1.0, 1.0)\n"
    "  param b: f32[33] = uniform(-1.0, 1.0)\n"
    "  fn forward(x: f32[3, M, 20]) -> f32[3, M, 33] { relu(x @ w.T + b) }\n"
    "}\n";

/* relu(x @ w.T + b) in float64, from the tensors themselves (w: the rank-2
 * parameter [n, k], b: the rank-1 one); x's leading axes are rows. */
static void expect_linear(const td_tensor *y, const td_tensor *x, td_tensor *const *params, int np, const char *what) {
  const td_tensor *w = NULL, *b = NULL;
  for (int i = 0; i < np; i++) *(params[i]->rank == 2 ? &w : &b) = params[i];
  cr_assert(w && b, "%s: parameters", what);
  int64_t n = w->shape[0], k = w->shape[1], rows = x->numel / k;
  cr_assert_eq(y->numel, rows * n, "%s: output size", what);
  double tol = td_dtype_size(y->dtype) == 4 ? 1e-5 : 1e-12;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = td_tensor_get(b, j), mag = fabs(s);
      for (int64_t kk = 0; kk < k; kk++) {
        double t = td_tensor_get(x, i * k + kk) * td_tensor_get(w, j * k + kk);
        s += t;
        mag += fabs(t);
      }
      double want = s > 0 ? s : 0, got = td_tensor_get(y, i * n + j);
      if (fabs(got - want) > tol * mag) {
        cr_expect(0, "%s: y[%lld, %lld] = %.9g, want %.9g", what, (long long)i, (long long)j, got, want);
        return;
      }
    }
}

static void run_linear(td_compiled *c, td_graph *g, td_tensor *const *params, int64_t m, const char *name) {
  td_tensor *in[1], **out = NULL;
  td_err e;
  cr_assert_eq(make_inputs(g, m, (uint64_t)m, in), 0);
  cr_assert_eq(td_compiled_run(c, in, params, 0, &out, &e, NULL), 0, "%s: %s", name, e.msg);
  char what[96];
  snprintf(what, sizeof what, "%s at M = %lld", name, (long long)m);
  expect_linear(out[0], in[0], params, g->n_params, what);
  td_tensor_release(out[0]);
  td_free(out);
  td_tensor_release(in[0]);
}

static void check_prepacked(const char *threads) {
  setenv("TDSL_NUM_THREADS", threads, 1);   /* before the pool starts: each test is its own process */
  prog P;
  cr_assert_eq(load(&P, "t.td", prepack_src), 0);
  const char *names[] = {"L32.forward", "L64.forward", "Wide.forward", "Narrow.forward", "Panel.forward", "Batched.forward"};
  static const int64_t ms[] = {1, 2, 7, 8, 63, 64, 65}, wide[] = {1, 2, 3};
  for (int i = 0; i < 6; i++) {
    const int64_t *m = i == 2 ? wide : ms;
    size_t nm = i == 2 ? 3 : sizeof ms / sizeof *ms;
    td_graph *g = td_program_lower(P.p, names[i]);
    cr_assert_not_null(g, "%s", names[i]);
    compiled_graph cg_;
    compile_graph(g, &cg_, names[i]);
    td_tensor **p1 = td_calloc((size_t)g->n_params + 1, sizeof *p1), **p2 = td_calloc((size_t)g->n_params + 1, sizeof *p2);
    td_err e;
    cr_assert_eq(td_make_params(g, NULL, 1, p1, &e), 0, "%s", e.msg);
    cr_assert_eq(td_make_params(g, NULL, 2, p2, &e), 0, "%s", e.msg);
    for (size_t k = 0; k < nm; k++) {
      run_linear(cg_.c, g, p1, m[k], names[i]);
      run_linear(cg_.c, g, p2, m[k], names[i]);
    }
    release_all(p1, g->n_params);
    p1 = td_calloc((size_t)g->n_params + 1, sizeof *p1);
    cr_assert_eq(td_make_params(g, NULL, 3, p1, &e), 0, "%s", e.msg);
    run_linear(cg_.c, g, p1, 5, names[i]);
    run_linear(cg_.c, g, p2, 1, names[i]);
    release_all(p1, g->n_params);
    release_all(p2, g->n_params);
    td_compiled_free(cg_.c);
  }
  td_arena_free(P.a);
}

Test(prepack, weights_change_between_calls_on_one_thread, .timeout = 120) { check_prepacked("1"); }

Test(prepack, weights_change_between_calls_on_three_threads, .timeout = 120) { check_prepacked("3"); }

/* ---- rand inline in kernels ---- */

/* Compiled rand is Philox4x32-10 generated inline (codegen_expr.c); the
 * reference here is the runtime's td_rand_uniform (runtime/philox.c, a
 * separate implementation, which test_runtime.c checks against Random123's
 * known answers), with the stream of call `call` as the interpreter mixes
 * it (interp.c). */
static uint64_t stream_of_call(uint64_t stream, uint64_t call) {
  return call ? td_hash_mix(stream, call) : stream;
}

/* The first RAND node of g with this seed. */
static const td_node *rand_node(const td_graph *g, uint64_t seed) {
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_RAND && g->nodes[i].attr.seed == seed) return &g->nodes[i];
  cr_assert_fail("no rand with seed %llu", (unsigned long long)seed);
  return NULL;
}

/* Element i of t (f32 or f64) equals the uniform number at index
 * first + i * step of (seed, stream), bit for bit. */
static void expect_philox(const td_tensor *t, uint64_t seed, uint64_t stream, uint64_t first, uint64_t step,
                          const char *what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    double u = td_rand_uniform(seed, stream, first + (uint64_t)i * step);
    int same = t->dtype == TD_F32 ? ((float *)t->data)[i] == (float)u : ((double *)t->data)[i] == u;
    if (!same && bad++ < 3)
      cr_expect_fail("%s: element %lld is %.9g, Philox gives %.9g", what, (long long)i, td_tensor_get(t, i), u);
  }
  cr_expect_eq(bad, 0, "%s: %lld elements differ", what, (long long)bad);
}

/* Runs g (at most one input, of size 1) compiled and eagerly at call
 * `call`: both outputs must be Philox's numbers for (seed, the node's
 * stream mixed with call). */
static void check_rand_graph_for(const td_graph *g, uint64_t seed, uint64_t call, int eager, const char *march,
                                 const char *what) {
  compiled_graph cg_;
  if (march) {
    td_graph *o;
    td_err e;
    td_compile_opts opts = {.opt_level = -1, .march = march};
    cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s: %s", what, e.msg);
    cr_assert_not_null(cg_.plan = td_plan_build(o, &e), "%s: %s", what, e.msg);
    cr_assert_not_null(cg_.c = td_compile(cg_.plan, &opts, &e), "%s: %s", what, e.msg);
  } else {
    compile_graph(g, &cg_, what);
  }
  uint64_t stream = stream_of_call(rand_node(g, seed)->attr.stream, call);
  td_tensor **comp = NULL, **ref = NULL, *in[1] = {NULL};
  td_err e;
  cr_assert_leq(g->n_inputs, 1);
  cr_assert_eq(make_inputs(g, 1, 1, in), 0);
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, call, &comp, &e, NULL), 0, "%s: %s", what, e.msg);
  expect_philox(comp[0], seed, stream, 0, 1, what);
  if (eager) {
    td_run_opts io;
    memset(&io, 0, sizeof io);
    io.call_index = call;
    cr_assert_eq(td_interp_run(g, in, NULL, &io, &ref, &e, NULL), 0, "%s: %s", what, e.msg);
    cr_expect_eq(memcmp(comp[0]->data, ref[0]->data, (size_t)ref[0]->numel * td_dtype_size(ref[0]->dtype)), 0,
                 "%s: compiled and eager differ", what);
    release_all(ref, 1);
  }
  release_all(comp, 1);
  if (in[0]) td_tensor_release(in[0]);
  td_compiled_free(cg_.c);
}

static void check_rand_graph(const td_graph *g, uint64_t seed, uint64_t call, int eager, const char *what) {
  check_rand_graph_for(g, seed, call, eager, NULL, what);
}

/* [3, 100003]: the vectorised body and its remainder both run, and the
 * kernel is split across threads; seeds with a zero and a non-zero high
 * word, and calls whose streams have both words set. */
Test(random, inline_rand_is_philox_bit_for_bit_over_large_tensors, .timeout = 120) {
  static const uint64_t seeds[] = {0, 5, 4294967296ull, 4294967297ull, 12345678901234567ull};
  for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    char text[160];
    snprintf(text, sizeof text, "fn r(x: f32[1]) -> f32[3, 100003] { rand([3, 100003], seed = %llu) + x * 0.0 }\n",
             (unsigned long long)seeds[k]);
    prog P;
    cr_assert_eq(load(&P, "t.td", text), 0);
    td_graph *g = td_program_lower(P.p, "r");
    cr_assert_not_null(g);
    check_rand_graph(g, seeds[k], 0, 1, text);
    check_rand_graph(g, seeds[k], 3, 1, text);
    td_arena_free(P.a);
  }
}

/* A graph of one RAND node of dtype dt (the language's rand is f32; f64
 * ones come from the half-type legalisation or other front ends). */
static td_graph *rand_graph(td_arena *a, td_dtype dt, int rank, const int64_t *shape, uint64_t seed,
                            uint64_t stream) {
  td_graph *g = td_graph_new(a, "r");
  td_attr at;
  memset(&at, 0, sizeof at);
  at.seed = seed;
  at.stream = stream;
  td_span sp = {-1, 0, 0, 0, 0};
  td_dim shp[TD_MAX_RANK];
  for (int k = 0; k < rank; k++) shp[k] = shape[k];
  int r = td_graph_add(g, TD_IR_RAND, dt, rank, shp, NULL, 0, &at, sp);
  cr_assert_geq(r, 0);
  cr_assert_eq(td_graph_add_output(g, r), 0);
  return g;
}

Test(random, inline_rand_in_f64_matches_the_runtime) {
  td_arena *a = td_arena_new();
  static const int64_t shape[2] = {3, 100003};
  td_graph *g = rand_graph(a, TD_F64, 2, shape, (1ull << 40) + 3, 0xFEDCBA9876543210ull);
  check_rand_graph(g, (1ull << 40) + 3, 0, 1, "f64");
  check_rand_graph(g, (1ull << 40) + 3, 7, 1, "f64, call 7");
  td_arena_free(a);
}

/* Each ISA level this CPU runs (the vector code differs: AVX-512 has
 * 64-bit multiplies and conversions, AVX2 and SSE build them). */
Test(random, inline_rand_is_the_same_at_every_isa_level, .timeout = 120) {
  static const char *levels[] = {"x86-64-v2", "x86-64-v3", "x86-64-v4"};
  const char *cpu = td_detect_march();
  td_arena *a = td_arena_new();
  static const int64_t shape[2] = {3, 100003};
  td_graph *g32 = rand_graph(a, TD_F32, 2, shape, 4294967297ull, 0x0123456789ABCDEFull);
  td_graph *g64 = rand_graph(a, TD_F64, 2, shape, 77, 0xFEDCBA9876543210ull);
  for (int l = 0; l < 3; l++) {
    check_rand_graph_for(g32, 4294967297ull, 2, 0, levels[l], levels[l]);
    check_rand_graph_for(g64, 77, 0, 0, levels[l], levels[l]);
    if (!strcmp(levels[l], cpu)) break;
  }
  td_arena_free(a);
}

/* Random123's known answer for counter and key all zero: r0 = 0x6627e8d5
 * (also what the Python Philox below gives), so element 0 of seed 0,
 * stream 0 is 0x6627e8 * 2^-24. */
Test(random, inline_rand_gives_the_known_answer) {
  td_arena *a = td_arena_new();
  static const int64_t shape[1] = {4};
  for (int d = 0; d < 2; d++) {
    td_graph *g = rand_graph(a, d ? TD_F64 : TD_F32, 1, shape, 0, 0);
    compiled_graph cg_;
    compile_graph(g, &cg_, "kat");
    td_tensor **comp = NULL;
    td_err e;
    cr_assert_eq(td_compiled_run(cg_.c, NULL, NULL, 0, &comp, &e, NULL), 0, "%s", e.msg);
    cr_expect_eq(td_tensor_get(comp[0], 0), (double)0x6627e8 / 16777216.0);
    release_all(comp, 1);
    td_compiled_free(cg_.c);
  }
  td_arena_free(a);
}

/* ---- rand with a seed input ---- */

/* r(seed: dt[]) -> (rand f32[3, 100003], randn f32[1000], rand f32[1000]
 * keyed by seed + 1): the first two keyed by the input itself, all in
 * stream S (chosen, unlike the language's call-site streams, so that the
 * numbers can be written down). */
#define SEED_STREAM 0x0123456789ABCDEFull
static td_graph *seed_input_graph(td_arena *a, td_dtype dt) {
  td_graph *g = td_graph_new(a, "r");
  td_attr at;
  memset(&at, 0, sizeof at);
  td_span sp = {-1, 0, 0, 1, 1};
  int s = td_graph_add(g, TD_IR_INPUT, dt, 0, NULL, NULL, 0, &at, sp);
  at.i = 1;
  int one = td_graph_add(g, TD_IR_CONST, dt, 0, NULL, NULL, 0, &at, sp);
  int add_in[2] = {s, one};
  int s1 = td_graph_add(g, TD_IR_ADD, dt, 0, NULL, add_in, 2, NULL, sp);
  memset(&at, 0, sizeof at);
  at.stream = SEED_STREAM;
  td_dim big[2] = {3, 100003}, small[1] = {1000};
  cr_assert_eq(td_graph_add_output(g, td_graph_add(g, TD_IR_RAND, TD_F32, 2, big, &s, 1, &at, sp)), 0);
  cr_assert_eq(td_graph_add_output(g, td_graph_add(g, TD_IR_RANDN, TD_F32, 1, small, &s, 1, &at, sp)), 0);
  cr_assert_eq(td_graph_add_output(g, td_graph_add(g, TD_IR_RAND, TD_F32, 1, small, &s1, 1, &at, sp)), 0);
  td_err e;
  cr_assert_eq(td_graph_verify(g, &e), 0, "%s", e.msg);
  return g;
}

static td_tensor *scalar_of(td_dtype dt, int64_t v) {
  td_err e;
  td_tensor *t = td_tensor_new(dt, 0, NULL, &e);
  cr_assert_not_null(t, "%s", e.msg);
  if (dt == TD_I64) *(int64_t *)t->data = v;
  else *(int32_t *)t->data = (int32_t)v;
  return t;
}

/* Runs the compiled graph and the interpreter on seed value v: the same
 * bits, and the key is v sign-extended (runtime/philox.c's numbers, and
 * for element 0..3 of output 0 the f32 bits `want` that
 * tests/data/philox_ref.py prints for key v, stream S). */
static void check_seed_input(const compiled_graph *cg_, const td_graph *g, td_dtype dt, int64_t v,
                             const uint32_t want[4], td_tensor ***outs) {
  td_tensor *in[1] = {scalar_of(dt, v)}, **comp = NULL, **ref = NULL;
  td_err e;
  char what[96];
  snprintf(what, sizeof what, "%s seed %lld", td_dtype_name(dt), (long long)v);
  cr_assert_eq(td_compiled_run(cg_->c, in, NULL, 0, &comp, &e, NULL), 0, "%s: %s", what, e.msg);
  td_run_opts io;
  memset(&io, 0, sizeof io);
  cr_assert_eq(td_interp_run(g, in, NULL, &io, &ref, &e, NULL), 0, "%s: %s", what, e.msg);
  for (int o = 0; o < 3; o++)
    cr_expect_eq(memcmp(comp[o]->data, ref[o]->data, (size_t)ref[o]->numel * 4), 0,
                 "%s: output %d: compiled and eager differ", what, o);
  expect_philox(comp[0], (uint64_t)v, SEED_STREAM, 0, 1, what);
  expect_philox(comp[2], (uint64_t)v + 1, SEED_STREAM, 0, 1, what);
  for (int i = 0; i < 4; i++) {
    uint32_t bits;
    memcpy(&bits, (const float *)comp[0]->data + i, 4);
    cr_expect_eq(bits, want[i], "%s: element %d is 0x%08x, the Python Philox gives 0x%08x", what, i, bits, want[i]);
  }
  release_all(ref, 3);
  td_tensor_release(in[0]);
  *outs = comp;
}

/* The seed input is the key at run time, in the compiled code (its fused
 * kernels load it once) and the interpreter alike; a seed that changes
 * between two calls of one compiled graph changes the numbers. */
Test(random, seed_input_is_the_key_at_run_time) {
  /* python3 tests/data/philox_ref.py SEED 0x0123456789ABCDEF 4 */
  static const uint32_t k40[4] = {0x3dc23f10, 0x3f630104, 0x3f3d797b, 0x3e3d9e84};  /* 2^40 + 7 */
  static const uint32_t k2[4] = {0x3df381d8, 0x3ed7c95e, 0x3f20df3a, 0x3f040964};   /* 2 */
  static const uint32_t km1[4] = {0x3e7878f0, 0x3f6d596f, 0x3de5dd78, 0x3f257061};  /* -1: 2^64 - 1 */
  td_arena *a = td_arena_new();
  td_graph *g64 = seed_input_graph(a, TD_I64), *g32 = seed_input_graph(a, TD_I32);
  compiled_graph c64, c32;
  compile_graph(g64, &c64, "i64 seed");
  compile_graph(g32, &c32, "i32 seed");
  td_tensor **x = NULL, **y = NULL, **z = NULL;
  check_seed_input(&c64, g64, TD_I64, (1ll << 40) + 7, k40, &x);
  check_seed_input(&c64, g64, TD_I64, 2, k2, &y);
  check_seed_input(&c32, g32, TD_I32, -1, km1, &z);
  int64_t same = 0;
  for (int64_t i = 0; i < x[0]->numel; i++) same += ((float *)x[0]->data)[i] == ((float *)y[0]->data)[i];
  cr_expect_lt(same, 100, "another seed gives other numbers (%lld of 300009 equal)", (long long)same);
  release_all(x, 3);
  release_all(y, 3);
  release_all(z, 3);
  td_compiled_free(c64.c);
  td_compiled_free(c32.c);
  td_arena_free(a);
}

/* The verifier takes 0 or 1 inputs, the one a rank-0 integer. */
Test(random, verifier_checks_the_seed_input) {
  td_arena *a = td_arena_new();
  td_span sp = {-1, 0, 0, 1, 1};
  td_dim n[1] = {4};
  struct { td_dtype dt; int rank; int n_in; const char *msg; } cases[] = {
      {TD_I64, 0, 1, NULL},
      {TD_I32, 0, 1, NULL},
      {TD_F32, 0, 1, "the seed must be a rank-0 i32 or i64 tensor"},
      {TD_I64, 1, 1, "the seed must be a rank-0 i32 or i64 tensor"},
      {TD_BOOL, 0, 1, "the seed must be a rank-0 i32 or i64 tensor"},
      {TD_I64, 0, 2, "has 2 inputs, expected 0 or 1 (the seed)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    for (int op = 0; op < 2; op++) {
      td_graph *g = td_graph_new(a, "v");
      td_attr at;
      memset(&at, 0, sizeof at);
      int s = td_graph_add(g, TD_IR_INPUT, cases[k].dt, cases[k].rank, n, NULL, 0, &at, sp);
      int in[2] = {s, s};
      td_graph_add_output(g, td_graph_add(g, op ? TD_IR_RANDN : TD_IR_RAND, TD_F32, 1, n, in, cases[k].n_in, &at, sp));
      td_err e;
      memset(&e, 0, sizeof e);
      int rc = td_graph_verify(g, &e);
      if (!cases[k].msg) cr_expect_eq(rc, 0, "case %zu: %s", k, e.msg);
      else cr_expect(rc == -1 && strstr(e.msg, cases[k].msg), "case %zu: rc %d, '%s'", k, rc, e.msg);
    }
  }
  td_arena_free(a);
}

/* nn.dropout fused into its user, its seed an entry input and a value
 * computed from one: eager and compiled agree bit for bit, and an eval
 * model (training = false) lowers to a graph without random ops. */
Test(random, dropout_is_the_same_compiled_and_eager) {
  prog P;
  cr_assert_eq(load(&P, "t.td", "import nn\n"
                                "fn train(x: f32[N, 7], s: i64[]) -> f32[N, 7] {\n"
                                "  let d = nn.Dropout(0.3)\n"
                                "  relu(d(x, s) * 2.0) + nn.dropout(x, 0.5, s * 3 + 1) + sum(nn.dropout(x, 0.1, i32(s)), axis = 1, keepdims = true)\n"
                                "}\n"
                                "fn eval(x: f32[N, 7], s: i64[]) -> f32[N, 7] {\n"
                                "  let d = nn.Dropout(0.3, training = false)\n"
                                "  d(x, s)\n"
                                "}\n"),
               0);
  td_graph *g = td_program_lower(P.p, "train"), *ev = td_program_lower(P.p, "eval");
  cr_assert_not_null(g);
  cr_assert_not_null(ev);
  int nr = 0;
  for (int i = 0; i < g->n_nodes; i++) nr += td_ops[g->nodes[i].op].kind == TD_K_RANDOM;
  cr_expect_eq(nr, 3, "three random ops in training");
  for (int i = 0; i < ev->n_nodes; i++)
    cr_expect_neq(td_ops[ev->nodes[i].op].kind, TD_K_RANDOM, "eval has no random op (node %d)", i);
  compiled_graph cg_, ce;
  compile_graph(g, &cg_, "train");
  compile_graph(ev, &ce, "eval");
  td_tensor *in[2];
  cr_assert_eq(make_inputs(g, 300, 1, in), 0);
  td_tensor *prev = NULL;
  for (int64_t step = 0; step < 3; step++) {
    td_tensor_release(in[1]);
    in[1] = scalar_of(TD_I64, 1000 + step);
    td_tensor **eager = NULL, **comp = NULL, **e2 = NULL;
    td_err e;
    td_run_opts io;
    memset(&io, 0, sizeof io);
    cr_assert_eq(td_interp_run(g, in, NULL, &io, &eager, &e, NULL), 0, "%s", e.msg);
    cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &comp, &e, NULL), 0, "%s", e.msg);
    cr_expect_eq(memcmp(eager[0]->data, comp[0]->data, (size_t)eager[0]->numel * 4), 0,
                 "step %lld: compiled and eager differ", (long long)step);
    if (prev) {
      int64_t same = 0;
      for (int64_t i = 0; i < prev->numel; i++) same += ((float *)prev->data)[i] == ((float *)comp[0]->data)[i];
      cr_expect_lt(same, prev->numel / 2, "step %lld: the masks did not change (%lld equal)", (long long)step,
                   (long long)same);
      td_tensor_release(prev);
    }
    prev = td_tensor_retain(comp[0]);
    cr_assert_eq(td_compiled_run(ce.c, in, NULL, 0, &e2, &e, NULL), 0, "%s", e.msg);
    cr_expect_eq(memcmp(e2[0]->data, in[0]->data, (size_t)in[0]->numel * 4), 0, "eval is the identity");
    release_all(eager, 1);
    release_all(comp, 1);
    release_all(e2, 1);
  }
  td_tensor_release(prev);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  td_compiled_free(cg_.c);
  td_compiled_free(ce.c);
  td_arena_free(P.a);
}

/* Flat indices >= 2^32 put the counter's high word to use: a slice of
 * 65537 x 65537 (4295098369 elements, never materialised: the slice's
 * kernel computes just its 8) at row 65536, indices 0x100010000 + j.  The
 * expected 24-bit values come from this independent Python Philox (which
 * gives Random123's known answers for the all-zero and all-ones inputs):
 *
 *   M = 0xFFFFFFFF
 *   def philox(c0, c1, c2, c3, k0, k1):
 *       for r in range(10):
 *           if r: k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
 *           p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
 *           c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M, (p0 >> 32) ^ c3 ^ k1, p0 & M
 *       return c0
 *   S, T = 0x123456789ABCDEF0, 0xFEDCBA9876543210
 *   [hex(philox(i & M, i >> 32, T & M, T >> 32, S & M, S >> 32) >> 8)
 *    for i in range(0x100010000, 0x100010008)] */
Test(random, inline_rand_uses_the_high_word_of_the_index) {
  static const uint32_t want[8] = {0xc80ede, 0xbd878c, 0x58578a, 0x116356,
                                   0x8584b2, 0xa86b50, 0xc9a640, 0xe8aea7};
  const uint64_t seed = 0x123456789ABCDEF0ull, stream = 0xFEDCBA9876543210ull;
  td_arena *a = td_arena_new();
  static const int64_t shape[2] = {65537, 65537};
  td_graph *g = rand_graph(a, TD_F32, 2, shape, seed, stream);
  td_attr at;
  memset(&at, 0, sizeof at);
  at.start[0] = 65536;
  at.step[0] = at.step[1] = 1;
  td_dim out[2] = {1, 8};
  td_span sp = {-1, 0, 0, 0, 0};
  int r = g->outputs[0];
  int s = td_graph_add(g, TD_IR_SLICE, TD_F32, 2, out, &r, 1, &at, sp);
  cr_assert_geq(s, 0);
  g->outputs[0] = s;
  compiled_graph cg_;
  compile_graph(g, &cg_, "high word");
  td_tensor **comp = NULL;
  td_err e;
  cr_assert_eq(td_compiled_run(cg_.c, NULL, NULL, 0, &comp, &e, NULL), 0, "%s", e.msg);
  for (int j = 0; j < 8; j++)
    cr_expect_eq(((float *)comp[0]->data)[j], (float)want[j] / 16777216.0f, "element %d", j);
  expect_philox(comp[0], seed, stream, 0x100010000ull, 1, "high word");
  release_all(comp, 1);
  td_compiled_free(cg_.c);
  td_arena_free(a);
}

/* rand in a matmul's epilogue (tiles and edges of the packed GEMM): a
 * [N, 100] tensor and a hoisted [1] one, over several calls.  (x @ w) * 0
 * is ±0 for finite inputs, so the sums are the random numbers exactly. */
Test(random, inline_rand_in_a_matmul_epilogue_and_hoisted_across_calls) {
  prog P;
  cr_assert_eq(load(&P, "t.td",
                    "fn d(x: f32[N, 64], w: f32[64, 100]) -> f32[N, 100] { (x @ w) * 0.0 + rand([N, 100], seed = 9) }\n"
                    "fn h(x: f32[N, 64], w: f32[64, 100]) -> f32[N, 100] { (x @ w) * 0.0 + rand([1], seed = 10) }\n"
                    "fn p(x: f32[N]) -> f32[N] { x * 0.0 + rand([1], seed = 11) }\n"),
               0);
  const char *names[] = {"d", "h", "p"};
  for (int k = 0; k < 3; k++) {
    td_graph *g = td_program_lower(P.p, names[k]);
    cr_assert_not_null(g);
    uint64_t seed = (uint64_t)(9 + k);
    uint64_t stream = rand_node(g, seed)->attr.stream;
    compiled_graph cg_;
    compile_graph(g, &cg_, names[k]);
    td_tensor *in[2];
    cr_assert_eq(make_inputs(g, 37, 2, in), 0);
    for (uint64_t call = 0; call < 4; call++) {
      td_tensor **comp = NULL;
      td_err e;
      cr_assert_eq(td_compiled_run(cg_.c, in, NULL, call, &comp, &e, NULL), 0, "%s", e.msg);
      char what[64];
      snprintf(what, sizeof what, "%s, call %llu", names[k], (unsigned long long)call);
      expect_philox(comp[0], seed, stream_of_call(stream, call), 0, k == 0, what);
      release_all(comp, 1);
    }
    for (int i = 0; i < g->n_inputs; i++) td_tensor_release(in[i]);
    td_compiled_free(cg_.c);
  }
  td_arena_free(P.a);
}

/* The packed GEMM reads A's rows in place when A has unit stride along K
 * and packs A otherwise; the first K block writes the C tile (no zeroed C
 * block).  Against the interpreter: row counts that are not a multiple of
 * the register tile's (rows past the end read the last row), K over one
 * K block (256), N not a multiple of the panel width, transposed and
 * strided A (packed), batches, f64.  q, h and g split over a batch axis
 * of literal size (5 entries: uneven over 2 threads), h's behind a
 * symbolic one. */
Test(kinds, packed_matmul_reads_a_in_place_or_packed, .timeout = 120) {
  check_text_at("fn r(x: f32[N, 300], y: f32[300, 45]) -> f32[N, 45] { x @ y }\n"
                "fn t(x: f32[300, N], y: f32[300, 45]) -> f32[N, 45] { transpose(x, 0, 1) @ y + 1 }\n"
                "fn s(x: f32[N, 600], y: f32[300, 45]) -> f32[N, 45] { x[:, ::2] @ y }\n"
                "fn q(x: f32[8, N, 64], y: f32[8, N, 64]) -> f32[8, N, N] { x @ transpose(y, 1, 2) }\n"
                "fn d(x: f64[3, N, 270], y: f64[3, 270, 33]) -> f64[3, N, 33] { tanh(x @ y) }\n"
                "fn h(x: f32[B, 5, N, 16], y: f32[B, 5, 16, N]) -> f32[B, 5, N, N] { x @ y }\n"
                "fn g(x: f32[5, N, 16], y: f32[16, N]) -> f32[5, N, N] { x @ y - 1 }\n",
                67);
}

/* ---- TDSL_DEBUG=bounds ---- */

/* A plan broken on purpose after planning (a slice moved past its input's
 * end, a matmul operand view moved past its buffer): plain compiled code
 * reads outside the buffer unnoticed; under TDSL_DEBUG=bounds the
 * generated kernel, or the check of the views, reports it. */
static void run_broken(const char *text, int slice, int64_t shift, int debug, const char *want) {
  unsetenv("TDSL_DEBUG");   /* this test sets it itself (the suite may run under it) */
  prog P;
  cr_assert_eq(load(&P, "t.td", text), 0);
  td_graph *g = td_program_lower(P.p, "f"), *o;
  cr_assert_not_null(g);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *p = td_plan_build(o, &e);
  cr_assert_not_null(p, "%s", e.msg);
  int moved = 0;
  for (int i = 0; i < o->n_nodes && slice; i++)
    if (o->nodes[i].op == TD_IR_SLICE) { o->nodes[i].attr.start[0] += shift; moved = 1; }
  for (int k = 0; k < p->n_kernels && !slice; k++)
    if (p->kernels[k].kind == TD_KERN_MATMUL) { p->kernels[k].b.offset += shift; moved = 1; }
  cr_assert(moved, "nothing to break in %s", text);
  setenv("TDSL_CACHE", "0", 1);
  if (debug) setenv("TDSL_DEBUG", "bounds", 1);
  td_compiled *c = td_compile(p, NULL, &e);
  unsetenv("TDSL_DEBUG");
  cr_assert_not_null(c, "%s", e.msg);
  td_tensor **in = td_calloc((size_t)g->n_inputs + 1, sizeof *in), **outs = NULL;
  cr_assert_eq(make_inputs(g, 4, 1, in), 0);
  if (debug) setenv("TDSL_DEBUG", "bounds", 1);
  int rc = td_compiled_run(c, in, NULL, 0, &outs, &e, NULL);
  unsetenv("TDSL_DEBUG");
  if (want) {
    cr_expect_eq(rc, -1, "%s: the broken plan ran", text);
    cr_expect(rc == 0 || strstr(e.msg, want), "%s: %s", text, e.msg);
  } else {
    cr_expect_eq(rc, 0, "%s: %s", text, e.msg);
  }
  if (rc == 0) release_all(outs, p->n_out_nodes);
  release_all(in, g->n_inputs);
  td_compiled_free(c);
  td_arena_free(P.a);
}

Test(bounds, generated_code_checks_its_accesses_under_tdsl_debug_bounds) {
  const char *sl = "fn f(x: f32[8, N]) -> f32[4, N] { exp(x[2:6]) * 2 }\n";
  run_broken(sl, 1, 3, 0, NULL);   /* rows 5..8 of 8: unchecked, it runs */
  run_broken(sl, 1, 3, 1, "accessed an element of");
  run_broken(sl, 1, 0, 1, NULL);   /* unbroken: no false alarm */
}

Test(bounds, matmul_operand_views_are_checked_under_tdsl_debug_bounds) {
  const char *mm = "fn f(x: f32[N, 8], w: f32[8, 8]) -> f32[N, 8] { x @ w }\n";
  run_broken(mm, 0, 16, 0, NULL);
  run_broken(mm, 0, 16, 1, "reads its right operand");
  run_broken(mm, 0, 0, 1, NULL);
}

/* test_session.c - the REPL's engine (driver/session.c) and the hooks it
 * added to the front end: td_parse_repl (the REPL grammar and its "needs
 * more lines" answer), el_bind_item (redefinition), the interpreter's
 * interrupt flag.
 *
 * Values are checked against references computed here: hand-worked
 * numbers, or a naive float64 matmul over the weights the session itself
 * shows (so the test checks that a model keeps the same weights from one
 * input to the next and computes with them correctly).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lang/elab_impl.h"
#include "driver/session.h"
#include "interp/interp.h"
#include "lang/lexer/lexer.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

/* ---- a session whose shown values are collected ---- */

static char shown[1 << 16];
static size_t n_shown;

static void on_value(void *ud, const char *text) {
  (void)ud;
  n_shown += (size_t)snprintf(shown + n_shown, sizeof shown - n_shown, "%s\n", text);
}

static void on_print(void *ud, const char *text) {
  (void)ud;
  n_shown += (size_t)snprintf(shown + n_shown, sizeof shown - n_shown, "%s", text);
}

static volatile sig_atomic_t stop;

static td_session *open_session(void) {
  td_session_opts o;
  memset(&o, 0, sizeof o);
  o.on_value = on_value;
  o.on_print = on_print;
  o.interrupt = &stop;
  td_session *s = td_session_new(&o);
  cr_assert_not_null(s);
  td_session_add_search_dir(s, TDSL_SRCDIR "/stdlib");
  return s;
}

/* The rendered diagnostics (static buffer), cleared afterwards. */
static const char *diags_of(td_session *s) {
  static char buf[8192];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  td_diag_render(td_session_diags(s), f, 0);
  fclose(f);
  td_session_clear_diags(s);
  return buf;
}

/* Evaluates text; returns what it showed (static buffer). */
static const char *eval_ok(td_session *s, const char *text) {
  n_shown = 0;
  shown[0] = 0;
  int rc = td_session_eval(s, text, 1);
  cr_assert_eq(rc, 0, "eval of \"%s\" failed:\n%s", text, diags_of(s));
  return shown;
}

static const char *eval_fails(td_session *s, const char *text) {
  n_shown = 0;
  int rc = td_session_eval(s, text, 1);
  cr_assert_eq(rc, -1, "eval of \"%s\" should fail", text);
  return diags_of(s);
}

/* ---- td_parse_repl ---- */

/* 1 complete, 0 needs more lines. */
static int complete(const char *text) {
  td_session *s = open_session();
  int c = td_session_is_complete(s, text);
  cr_assert_eq(td_session_diags(s)->n, 0, "is_complete left diagnostics");
  td_session_free(s);
  return c;
}

Test(parse_repl, incomplete_inputs_ask_for_more) {
  cr_assert_eq(complete("let x = 1 +\n"), 0);
  cr_assert_eq(complete("f(1,\n"), 0);
  cr_assert_eq(complete("fn f(a) {\n"), 0);
  cr_assert_eq(complete("fn f(a) {\n  a * 2\n"), 0);
  cr_assert_eq(complete("model M {\n  param w: f32[2] = zeros()\n"), 0);
  cr_assert_eq(complete("let y = [1, 2,\n"), 0);
  cr_assert_eq(complete("if true { 1 } else\n"), 0);
  cr_assert_eq(complete(":type (x,\n"), 0); /* a command word is not part of the input */
}

Test(parse_repl, complete_inputs) {
  cr_assert_eq(complete("1 + 2\n"), 1);
  cr_assert_eq(complete("fn f(a) {\n  a * 2\n}\n"), 1);
  cr_assert_eq(complete("let x = (1 +\n 2)\n"), 1);
  cr_assert_eq(complete("\n"), 1);
  cr_assert_eq(complete("# just a comment\n"), 1);
  cr_assert_eq(complete("import nn\n"), 1);
  /* already wrong: more lines cannot help, so it is complete (and reported) */
  cr_assert_eq(complete("x +* 2 + (\n"), 1);
  cr_assert_eq(complete("let = 3 +\n"), 1);
  cr_assert_eq(complete("\"unterminated\n"), 1);
}

Test(parse_repl, items_and_statements_in_order) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  const char *text = "import nn\nlet x = 1\nfn f(a) { a }\nf(x); x = 2\nmodel M {}\n";
  int id = td_diags_add_source(&d, "<t>", text, strlen(text));
  int more = -1;
  td_ast *m = td_parse_repl(&d, id, 7, &more);
  cr_assert_not_null(m);
  cr_assert_eq(more, 0);
  cr_assert_eq(d.n_errors, 0);
  td_ast_kind want[] = {TD_A_IMPORT, TD_A_LET, TD_A_FN, TD_A_EXPRSTMT, TD_A_ASSIGN, TD_A_MODEL};
  cr_assert_eq(m->n, 6);
  for (int i = 0; i < 6; i++) cr_assert_eq(m->list[i]->kind, want[i], "item %d", i);
  /* line numbers continue the session's */
  cr_assert_eq(m->list[1]->span.line, 8);
  cr_assert_eq(m->list[5]->span.line, 11);
  td_arena_free(a);
}

Test(parse_repl, final_text_reports_what_is_missing) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  const char *text = "fn f(a) {\n  a +\n";
  int id = td_diags_add_source(&d, "<t>", text, strlen(text));
  td_ast *m = td_parse_repl(&d, id, 1, NULL);
  (void)m;
  cr_assert_geq(d.n_errors, 1);
  cr_assert(strstr(d.items[0].msg, "unexpected end of file"), "%s", d.items[0].msg);
  td_arena_free(a);
}

/* Files still parse with the pull parser: the REPL start rule changes
 * nothing for them (statements at top level stay an error). */
Test(parse_repl, files_unchanged) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  const char *text = "let x = 1\n";
  int id = td_diags_add_source(&d, "<t>", text, strlen(text));
  (void)td_parse(&d, id);
  cr_assert_eq(d.n_errors, 1);
  cr_assert(strstr(d.items[0].msg, "unexpected 'let'"), "%s", d.items[0].msg);
  td_arena_free(a);
}

/* ---- el_bind_item ---- */

Test(elab_hooks, bind_item_redefinition) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  cr_assert_eq(td_program_load_text(p, "<t>", "fn f() { 1 }\nfn g() { 2 }\n"), 0);
  el_module *m = p->main;
  const td_ast *g = m->ast->list[1];
  /* as in a file: a second definition of a name is an error */
  cr_assert_eq(el_bind_item(p, m, g, 0), 0);
  cr_assert_eq(d.n_errors, 1);
  cr_assert(strstr(d.items[0].msg, "'g' is defined twice"));
  /* as in the REPL: it replaces the binding */
  td_ast *renamed = td_ast_new(a, TD_A_FN, g->span);
  *renamed = *g;
  renamed->name = "f";
  cr_assert_eq(el_bind_item(p, m, renamed, 1), 0);
  cr_assert_eq(d.n_errors, 1);
  cr_assert_eq(el_lookup(m->globals, "f")->def, renamed);
  td_arena_free(a);
}

/* ---- the interpreter's interrupt flag ---- */

Test(elab_hooks, interrupt_stops_a_run) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  cr_assert_eq(td_program_load_text(p, "<t>", "fn main() { exp(ones([4])) }\n"), 0);
  td_graph *g = td_program_lower(p, "main");
  cr_assert_not_null(g);
  volatile sig_atomic_t flag = 1;
  td_run_opts o;
  memset(&o, 0, sizeof o);
  o.interrupt = &flag;
  td_tensor **outs = NULL;
  td_err err;
  td_span sp;
  cr_assert_eq(td_interp_run(g, NULL, NULL, &o, &outs, &err, &sp), -1);
  cr_assert_str_eq(err.msg, "interrupted");
  cr_assert_eq(sp.file, -1);
  flag = 0;
  cr_assert_eq(td_interp_run(g, NULL, NULL, &o, &outs, &err, &sp), 0);
  cr_assert_float_eq(((float *)outs[0]->data)[0], (float)exp(1.0), 1e-6);
  td_tensor_release(outs[0]);
  free(outs);
  td_arena_free(a);
}

/* ---- sessions ---- */

Test(session, bindings_persist_and_values_show) {
  td_session *s = open_session();
  eval_ok(s, "let x = reshape(arange(0, 6), [2, 3])\n");
  cr_assert_str_eq(eval_ok(s, "x[1]\n"), "[3, 4, 5] (i64[3])\n");
  cr_assert_str_eq(eval_ok(s, "sum(x * x)\n"), "55 (i64[])\n"); /* 0+1+4+9+16+25 */
  cr_assert_str_eq(eval_ok(s, "let k = 4; k * 2.5\n"), "10.0 (float)\n");
  cr_assert_str_eq(eval_ok(s, "1 / 3\n"), "0.3333333333333333 (float)\n");
  cr_assert_str_eq(eval_ok(s, "(k, true)\n"), "(4, true) (tuple)\n");
  cr_assert_str_eq(eval_ok(s, "print(\"x is\", x[0])\n"), "x is [0, 1, 2] (i64[3])\n");
  td_session_free(s);
}

Test(session, failed_input_binds_nothing) {
  td_session *s = open_session();
  eval_ok(s, "let x = ones([2])\nlet n = 1\n");
  /* an input is atomic: the error in its last statement undoes the rest */
  const char *d = eval_fails(s, "x = x * 10\nn = 5\nlet y = 2\nlet z = x @ ones([3])\n");
  cr_assert(strstr(d, "error:"), "%s", d);
  cr_assert_str_eq(eval_ok(s, "(x, n)\n"), "tuple of 2:\n[0] [1.0000, 1.0000] (f32[2])\n[1] 1 (int)\n");
  d = eval_fails(s, "y\n");
  cr_assert(strstr(d, "unknown name 'y'"), "%s", d);
  /* a runtime error too (gather out of range) */
  d = eval_fails(s, "x = x + 1\ntake(x, arange(5, 6), axis = 0)\n");
  cr_assert(strstr(d, "out of range"), "%s", d);
  cr_assert_str_eq(eval_ok(s, "x\n"), "[1.0000, 1.0000] (f32[2])\n");
  /* and an interrupt */
  stop = 1;
  d = eval_fails(s, "x = x + 1\nx\n");
  stop = 0;
  cr_assert(strstr(d, "interrupted"), "%s", d);
  cr_assert_str_eq(eval_ok(s, "x\n"), "[1.0000, 1.0000] (f32[2])\n");
  td_session_free(s);
}

Test(session, model_members_assigned_in_place_are_restored) {
  td_session *s = open_session();
  eval_ok(s, "model Acc {\n  param t: f32[2] = zeros()\n"
             "  fn add(x) { t = t + x\n t }\n}\nlet a = Acc()\n");
  /* a method may re-bind a member; the input fails, so that is undone */
  eval_fails(s, "a.add(ones([2]))\nnope\n");
  cr_assert_str_eq(eval_ok(s, "a.t\n"), "[0.0000, 0.0000] (f32[2])\n");
  /* and kept when the input succeeds */
  eval_ok(s, "a.add(ones([2]))\n");
  cr_assert_str_eq(eval_ok(s, "a.add(ones([2]))\n"), "[2.0000, 2.0000] (f32[2])\n");
  td_session_free(s);
}

/* Reads the numbers of a shown tensor ("[[0.1, -2], ...] (f32[2, 2])"). */
static int numbers(const char *text, double *out, int max) {
  int n = 0;
  const char *end = strrchr(text, '(');
  for (const char *p = text; *p && p < end && n < max;) {
    if ((*p >= '0' && *p <= '9') || *p == '-') {
      char *e;
      out[n++] = strtod(p, &e);
      p = e;
    } else {
      p++;
    }
  }
  return n;
}

/* nn.Linear keeps its initial weights from one input to the next, and its
 * output is x @ W.T + b computed here in float64 from the shown weights. */
Test(session, model_parameters_persist) {
  td_session *s = open_session();
  eval_ok(s, "import nn\nlet lin = nn.Linear(3, 2)\nlet x = reshape(f32(arange(0, 6)), [2, 3])\n");
  double w[6], b[2], y[4], y2[4];
  cr_assert_eq(numbers(eval_ok(s, "lin.weight\n"), w, 6), 6);
  cr_assert_eq(numbers(eval_ok(s, "lin.bias\n"), b, 2), 2);
  cr_assert_eq(numbers(eval_ok(s, "lin(x)\n"), y, 4), 4);
  cr_assert_eq(numbers(eval_ok(s, "lin(x)\n"), y2, 4), 4);
  for (int i = 0; i < 2; i++)
    for (int o = 0; o < 2; o++) {
      double ref = b[o];
      for (int k = 0; k < 3; k++) ref += (3 * i + k) * w[3 * o + k];
      /* the weights were shown rounded to 4 decimals */
      cr_assert_float_eq(y[2 * i + o], ref, 2e-3, "y[%d][%d] = %g, expected %g", i, o, y[2 * i + o], ref);
      cr_assert_eq(y[2 * i + o], y2[2 * i + o]);
    }
  /* Linear(3, 2) initialises from uniform(-1/sqrt(3), 1/sqrt(3)) */
  for (int k = 0; k < 6; k++) cr_assert_leq(fabs(w[k]), 1 / sqrt(3.0) + 1e-4);
  td_session_free(s);
}

Test(session, tensors_are_freed_when_unbound) {
  td_session *s = open_session();
  cr_assert_eq(td_session_tensor_count(s), 0);
  eval_ok(s, "let a = ones([3])\nlet b = a * 2\n");
  cr_assert_eq(td_session_tensor_count(s), 2);
  eval_ok(s, "let l = [a, b, a]\n"); /* shared, not copied */
  cr_assert_eq(td_session_tensor_count(s), 2);
  eval_ok(s, "a = 1\nb = 2\n");
  cr_assert_eq(td_session_tensor_count(s), 2); /* still in l */
  eval_ok(s, "l = 0\n");
  cr_assert_eq(td_session_tensor_count(s), 0);
  eval_ok(s, "import nn\nlet m = nn.Linear(2, 2)\n");
  cr_assert_eq(td_session_tensor_count(s), 2); /* weight and bias */
  eval_ok(s, "for i in 0..50 { a = a + 1 }\n");
  cr_assert_eq(td_session_tensor_count(s), 2);
  eval_ok(s, "m = 0\n");
  cr_assert_eq(td_session_tensor_count(s), 0);
  td_session_free(s);
}

Test(session, type_ir_and_time_bind_nothing) {
  td_session *s = open_session();
  eval_ok(s, "let x = ones([2, 3])\nfn f(t: f32[N, D]) -> f32[D] { sum(t, axis = 0) }\n");
  char *t = NULL;
  cr_assert_eq(td_session_type(s, "let y = 3\nf(x)\n", 1, &t), 0);
  cr_assert_str_eq(t, "f32[3]");
  free(t);
  cr_assert_eq(td_session_type(s, ":type f\n", 1, &t), 0);
  cr_assert_str_eq(t, "fn f(t: f32[N, D]) -> f32[D]");
  free(t);
  eval_fails(s, "y\n");
  char buf[4096];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_eq(td_session_ir(s, "let z = 1\nx * 2\n", 1, f), 0);
  fclose(f);
  cr_assert(strstr(buf, "= mul f32[2, 3] %0, %1"), "%s", buf);
  cr_assert(strstr(buf, "return %2"), "%s", buf);
  td_session_timing tm;
  cr_assert_eq(td_session_time(s, "let w = 1\nx + 1\n", 1, 3, 0, &tm), 0);
  cr_assert_eq(tm.reps, 3);
  cr_assert_eq(tm.n_ops, 3);
  cr_assert_geq(tm.run_mean_s, tm.run_best_s);
  eval_fails(s, "z\n");
  eval_fails(s, "w\n");
  cr_assert_eq(td_session_tensor_count(s), 1);
  td_session_free(s);
}

/* A runner that, like the REPL's compiler, is slow on its first call
 * (0.3 s) and fast afterwards; it counts its calls. */
static int slow_first_calls;

static int slow_first_runner(void *ud, const td_graph *g, const td_diags *d, td_tensor *const *inputs,
                             td_tensor *const *params, const td_run_opts *io, td_tensor ***outs, td_err *err,
                             td_span *sp) {
  (void)ud;
  (void)d;
  if (slow_first_calls++ == 0) {
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
  }
  return td_interp_run(g, inputs, params, io, outs, err, sp);
}

/* A warm-up run (the compile of :time's compiled row) is never a timing
 * sample: not the best, not in the mean, not counted, with a fixed number
 * of runs or with as many as fit in half a second. */
Test(session, time_leaves_the_warm_up_run_out) {
  td_session *s = open_session();
  eval_ok(s, "let x = ones([2, 3])\n");
  td_session_set_runner(s, slow_first_runner, NULL);
  td_session_timing tm;
  slow_first_calls = 0;
  cr_assert_eq(td_session_time(s, "x + 1\n", 1, 3, 1, &tm), 0);
  cr_expect_eq(slow_first_calls, 4);
  cr_expect_eq(tm.reps, 3);
  cr_expect_lt(tm.run_best_s, 0.1);
  cr_expect_lt(tm.run_mean_s, 0.1);
  slow_first_calls = 0;
  cr_assert_eq(td_session_time(s, "x + 1\n", 1, 0, 1, &tm), 0);
  cr_expect_eq(slow_first_calls, tm.reps + 1);
  cr_expect_gt(tm.reps, 1, "the warm-up's 0.3 s used up the half second");
  cr_expect_lt(tm.run_best_s, 0.1);
  cr_expect_lt(tm.run_mean_s, 0.1);
  /* without a warm-up the first run is timed: the runner is seen to be slow */
  slow_first_calls = 0;
  cr_assert_eq(td_session_time(s, "x + 1\n", 1, 2, 0, &tm), 0);
  cr_expect_eq(tm.reps, 2);
  cr_expect_gt(tm.run_mean_s, 0.1);
  td_session_free(s);
}

static char completions[2048];

static void add_completion(void *ud, const char *name) {
  (void)ud;
  strcat(completions, name);
  strcat(completions, " ");
}

static const char *complete_names(td_session *s, const char *prefix) {
  completions[0] = 0;
  td_session_complete(s, prefix, add_completion, NULL);
  return completions;
}

Test(session, completion) {
  td_session *s = open_session();
  eval_ok(s, "import nn\nlet lin = nn.Linear(2, 2)\nlet result_a = 1\nlet result_b = ones([2])\n");
  cr_assert_str_eq(complete_names(s, "result_"), "result_a result_b ");
  cr_assert_str_eq(complete_names(s, "resh"), "reshape ");
  cr_assert_str_eq(complete_names(s, "retu"), "return ");
  cr_assert_str_eq(complete_names(s, "nn.Lin"), "nn.Linear ");
  cr_assert_str_eq(complete_names(s, "lin.w"), "lin.weight ");
  cr_assert_str_eq(complete_names(s, "result_b.sh"), "result_b.shape ");
  cr_assert_str_eq(complete_names(s, "nope.x"), "");
  td_session_free(s);
}

Test(session, load_and_reload) {
  char path[] = "/tmp/tdsl_session_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs("import nn\nfn g(x) { nn.softmax(x) * 2 }\n", f);
  fclose(f);
  td_session *s = open_session();
  cr_assert_eq(td_session_load(s, path), 0, "%s", diags_of(s));
  cr_assert_str_eq(eval_ok(s, "g(zeros([4]))\n"), "[0.5000, 0.5000, 0.5000, 0.5000] (f32[4])\n");
  /* a file with an error binds nothing and keeps what was there */
  f = fopen(path, "w");
  fputs("fn g(x) { x }\nfn h( { }\n", f);
  fclose(f);
  cr_assert_eq(td_session_reload(s), -1);
  const char *d = diags_of(s);
  cr_assert(strstr(d, path) && strstr(d, "error:"), "%s", d);
  cr_assert_str_eq(eval_ok(s, "g(zeros([4]))\n"), "[0.5000, 0.5000, 0.5000, 0.5000] (f32[4])\n");
  f = fopen(path, "w");
  fputs("fn g(x) { x + 3 }\n", f);
  fclose(f);
  cr_assert_eq(td_session_reload(s), 0, "%s", diags_of(s));
  cr_assert_str_eq(eval_ok(s, "g(1)\n"), "4 (int)\n");
  remove(path);
  td_session_free(s);
}

/* Every allocation failing in turn: each input either works or fails with
 * a diagnostic, and nothing crashes or leaks (run under ASan). */
Test(session, allocation_failures, .timeout = 300) {
  static const char *const inputs[] = {
    "import nn\nlet m = nn.Linear(3, 2)\n",
    "let x = reshape(f32(arange(0, 6)), [2, 3])\n",
    "fn f(t) {\n  m(t) * 2\n}\nf(x)\n",
    "let l = [x, m(x)]\nl[1]\n",
    "x = x + 1\n(x, 2.5)\n",
    "bad + 1\n",
  };
  int n_in = (int)(sizeof inputs / sizeof *inputs);
  int completed = 0;
  long last_n = 0;
  for (long n = 1; n < 20000 && !completed; n++) {
    last_n = n;
    td_mem_fail_after(n);
    td_session_opts o;
    memset(&o, 0, sizeof o);
    o.on_value = on_value;
    td_session *s = td_session_new(&o);
    int ok = 0;
    if (s) {
      td_session_add_search_dir(s, TDSL_SRCDIR "/stdlib");
      for (int i = 0; i < n_in; i++) {
        n_shown = 0;
        ok += td_session_eval(s, inputs[i], 1) == 0;
        td_session_clear_diags(s);
      }
    }
    td_mem_fail_after(0);
    /* once memory is back, whatever was kept is intact: every input works
     * again on top of it */
    for (int i = 0; s && ok < n_in - 1 && i < n_in; i++) {
      n_shown = 0;
      int rc = td_session_eval(s, inputs[i], 1);
      cr_assert_eq(rc, i == n_in - 1 ? -1 : 0, "failure point %ld, input %d:\n%s", n, i, diags_of(s));
    }
    td_session_free(s);
    completed = ok == n_in - 1; /* all but the deliberate error */
  }
  cr_assert(completed, "the inputs never all succeeded");
  fprintf(stderr, "allocation_failures: all inputs worked from failure point %ld\n", last_n);
}

/* A module imported by a failed input is read again by the next import,
 * so fixing a syntax error in it and importing again works. */
Test(session, failed_import_is_retried) {
  char dir[] = "/tmp/tdsl_session_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof path, "%s/mymod.td", dir);
  FILE *f = fopen(path, "w");
  fputs("fn twice(x) { x * }\n", f);
  fclose(f);
  td_session *s = open_session();
  td_session_add_search_dir(s, dir);
  const char *d = eval_fails(s, "import mymod\n");
  cr_assert(strstr(d, "mymod.td:1:19: error:"), "%s", d);
  f = fopen(path, "w");
  fputs("fn twice(x) { x * 2 }\n", f);
  fclose(f);
  cr_assert_str_eq(eval_ok(s, "import mymod\nmymod.twice(21)\n"), "42 (int)\n");
  remove(path);
  rmdir(dir);
  td_session_free(s);
}

/* The session on the driver's CPU backend (td_session_set_driver): every
 * input compiled (TDSL_DEBUG=4 shows the kernels' code), the same shown values and prints as eagerly, bindings
 * kept across inputs; and :time compiles once, before its runs. */
Test(session, runs_on_the_cpu_backend_as_eagerly) {
  setenv("TDSL_CACHE", "0", 1);
  const char *inputs[] = {"let x = reshape(arange(6.0), [2, 3])\n", "print(\"s\", sum(x, 1))\n",
                          "x * 2 + 1\n", "let y = exp(x - 2.0) / 3.0\n", "y\n"};
  char eager[4096] = "";
  td_session *s = open_session();
  for (int i = 0; i < 5; i++) strcat(eager, eval_ok(s, inputs[i]));
  td_session_free(s);
  s = open_session();
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_CPU;
  setenv("TDSL_DEBUG", "4", 1);      /* the kernels' code, to show they were compiled */
  static char code[1 << 16];
  o.debug = fmemopen(code, sizeof code, "w");
  td_session_set_driver(s, &o);
  char compiled[4096] = "";
  for (int i = 0; i < 5; i++) strcat(compiled, eval_ok(s, inputs[i]));
  cr_expect_str_eq(compiled, eager);
  cr_expect(strstr(eager, "s [ 3.0000, 12.0000] (f32[2])\n"), "%s", eager);
  td_session_timing tm;
  cr_assert_eq(td_session_time(s, "x + 1\n", 1, 3, 0, &tm), 0, "%s", diags_of(s));
  cr_expect_gt(tm.prepare_s, 0, "the compile is timed apart");
  cr_expect_eq(tm.reps, 3);
  td_session_free(s);
  fclose(o.debug);
  cr_expect(strstr(code, "extern void\n"), "no kernel was compiled: %s", code);
}

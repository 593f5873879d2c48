/* test_scan.c - scan (lang/builtins_scan.c, the SCAN node of ops.def, the
 * interpreter's run_scan): one lowered graph with a symbolic number of
 * steps serves every length, 0 and 1 included, against a naive float64
 * loop written here; the verifier refuses a SCAN whose outputs were
 * tampered with; --trace and --check-numerics name the step; random draws
 * differ from step to step, and compiled code draws eager mode's; the CPU
 * compiler runs the same graph at every length; CUDA explains a scan as
 * a host loop and builds it (test_gpu_build.c runs it); a built CPU artifact (one library, T symbolic) runs
 * it at every length, draws eager mode's numbers and names the step of an
 * error in a body.  A print in a step prints eager mode's lines, compiled
 * and through an artifact's print callback, at every length.  Gradients
 * with checkpoint = k equal the plain ones bit for bit and central
 * differences of the loop in float64, at every length (T symbolic, so the
 * segments' count is derived at run time), eager, compiled and built, and
 * keep fewer carries; value_and_grad's forward scan runs once compiled
 * (the scan_merge pass). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "artifact/artifact.h"
#include "compiler/passes.h"
#include "driver/driver.h"
#include "runtime/mem.h"
#include "runtime/cuda_loader.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif
#ifndef TDSL_BUILDDIR
#define TDSL_BUILDDIR "."
#endif

/* rnn: the scan at line 6, column 3 */
#define RNN_TEXT \
    "fn cell(h, x, w) {\n" \
    "  let h2 = tanh(h @ w + x)\n" \
    "  (h2, sum(h2, axis = 1))\n" \
    "}\n" \
    "fn rnn(h0: f32[B, H], xs: f32[T, B, H], w: f32[H, H]) {\n" \
    "  scan(cell, h0, xs, args = w)\n" \
    "}\n"

static const char prog_text[] =
    RNN_TEXT
    "fn logs(xs: f32[T, 2]) {\n"
    "  fold(log_step, zeros([2]), xs)\n"
    "}\n"
    "fn log_step(s, x) { s + log(x) }\n"
    "fn noise(n: f32[T]) {\n"
    "  let (c, ys) = scan(draw, zeros([]), n)\n"
    "  ys\n"
    "}\n"
    "fn draw(c, x) { (c, rand([3], seed = 7) + x * 0.0) }\n";

typedef struct prog {
  td_arena *a;
  td_diags d;
  td_program *p;
} prog;

static void load(prog *P) {
  P->a = td_arena_new();
  cr_assert_not_null(P->a);
  td_diags_init(&P->d, P->a);
  P->p = td_program_new(P->a, &P->d);
  cr_assert_not_null(P->p);
  td_program_add_search_dir(P->p, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(P->p, "scan.td", prog_text), 0);
}

static void unload(prog *P) { td_arena_free(P->a); }

static td_tensor *tensor(int rank, const int64_t *shape, const double *v) {
  td_err err;
  td_tensor *t = td_tensor_new(TD_F32, rank, shape, &err);
  cr_assert_not_null(t, "%s", err.msg);
  for (int64_t i = 0; i < t->numel; i++) ((float *)t->data)[i] = (float)v[i];
  return t;
}

static char traced[1 << 16];
static void on_trace(void *ud, const char *line) {
  (void)ud;
  strncat(traced, line, sizeof traced - strlen(traced) - 1);
}

/* Runs graph g on backend b; rc, outputs in *outs, the error in *err. */
static int run_on(td_backend b, const td_graph *g, td_tensor **in, td_run_opts *io, td_tensor ***outs, td_err *err,
                  td_span *sp) {
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = b;
  td_run_opts dflt;
  memset(&dflt, 0, sizeof dflt);
  return td_drive_run(g, &o, in, NULL, io ? io : &dflt, outs, err, sp);
}

static int run(const td_graph *g, td_tensor **in, td_run_opts *io, td_tensor ***outs, td_err *err, td_span *sp) {
  return run_on(TD_BACKEND_EAGER, g, in, io, outs, err, sp);
}

enum { RB = 2, RH = 3 };

/* rnn's outputs against the reference, the loop in float64. */
static void check_rnn(const char *mode, int64_t T, const double *h0, const double *xs, const double *w,
                      const float *hc, const float *ys) {
  double h[RB * RH], hn[RB * RH];
  memcpy(h, h0, sizeof h);
  for (int64_t t = 0; t < T; t++) {
    for (int b = 0; b < RB; b++) {
      double s = 0;
      for (int j = 0; j < RH; j++) {
        double acc = xs[(t * RB + b) * RH + j];
        for (int k = 0; k < RH; k++) acc += h[b * RH + k] * w[k * RH + j];
        hn[b * RH + j] = tanh(acc);
        s += hn[b * RH + j];
      }
      cr_expect(fabs(ys[t * RB + b] - s) < 1e-4, "%s T=%lld ys[%lld][%d]: %g, expected %g", mode, (long long)T,
                (long long)t, b, ys[t * RB + b], s);
    }
    memcpy(h, hn, sizeof h);
  }
  for (int i = 0; i < RB * RH; i++)
    cr_expect(fabs(hc[i] - h[i]) < 1e-4, "%s T=%lld h[%d]: %g, expected %g", mode, (long long)T, i, hc[i], h[i]);
}

/* Eager mode, and one compiled CPU program (compiled once: T is
 * symbolic), for every length. */
Test(scan, one_graph_serves_every_number_of_steps) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "rnn");
  cr_assert_not_null(g);
  td_drive_opts co;
  memset(&co, 0, sizeof co);
  co.backend = TD_BACKEND_CPU;
  td_err cerr;
  td_prepared *cp = td_prepare(g, &co, &cerr);
  cr_assert_not_null(cp, "%s", cerr.msg);
  const int B = RB, H = RH;
  for (int mode = 0; mode < 2; mode++) {
  const int64_t lengths[] = {0, 1, 7, 300};
  for (int li = 0; li < 4; li++) {
    int64_t T = lengths[li];
    double *h0 = malloc(sizeof(double) * B * H), *xs = malloc(sizeof(double) * (size_t)(T * B * H + 1));
    double w[9];
    for (int i = 0; i < B * H; i++) h0[i] = 0.1 * i - 0.2;
    for (int64_t i = 0; i < T * B * H; i++) xs[i] = sin(0.37 * (double)i);
    for (int i = 0; i < 9; i++) w[i] = 0.05 * i - 0.2;
    int64_t sh0[2] = {B, H}, sxs[3] = {T, B, H}, sw[2] = {H, H};
    td_tensor *in[3] = {tensor(2, sh0, h0), tensor(3, sxs, xs), tensor(2, sw, w)};
    td_tensor **outs = NULL;
    td_err err;
    td_run_opts io;
    memset(&io, 0, sizeof io);
    if (mode == 0) cr_assert_eq(run(g, in, NULL, &outs, &err, NULL), 0, "T=%lld: %s", (long long)T, err.msg);
    else cr_assert_eq(td_prepared_run(cp, in, NULL, &io, &outs, &err, NULL), 0, "compiled, T=%lld: %s", (long long)T, err.msg);
    td_tensor *hc = outs[0], *ys = outs[1];
    cr_assert_eq(ys->rank, 2);
    cr_assert_eq(ys->shape[0], T);
    cr_assert_eq(ys->shape[1], B);
    check_rnn(mode ? "compiled" : "eager", T, h0, xs, w, hc->data, ys->data);
    td_tensor_release(outs[0]);
    td_tensor_release(outs[1]);
    td_free(outs);
    for (int i = 0; i < 3; i++) td_tensor_release(in[i]);
    free(h0);
    free(xs);
  }
  }
  td_prepared_free(cp);
  unload(&P);
}

Test(scan, the_verifier_checks_the_outputs_and_the_body) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "rnn");
  cr_assert_not_null(g);
  td_err err;
  cr_assert_eq(td_graph_verify(g, &err), 0, "%s", err.msg);
  int s = -1;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_SCAN) s = i;
  cr_assert_geq(s, 0);
  g->nodes[s + 2].attr.i = 0;   /* the second output claims to be the first */
  cr_expect_neq(td_graph_verify(g, &err), 0);
  cr_expect(strstr(err.msg, "is not followed by its output 1") != NULL, "%s", err.msg);
  g->nodes[s + 2].attr.i = 1;
  g->nodes[s + 1].shape[0] = 5;   /* the final carry's type differs from the body's */
  cr_expect_neq(td_graph_verify(g, &err), 0);
  cr_expect(strstr(err.msg, "does not have the type") != NULL, "%s", err.msg);
  unload(&P);
}

/* Loads the program, lowers "rnn" and sets o up for backend b. */
static td_graph *lower_rnn(prog *P, td_backend b, td_drive_opts *o) {
  load(P);
  td_graph *g = td_program_lower(P->p, "rnn");
  cr_assert_not_null(g);
  memset(o, 0, sizeof *o);
  o->backend = b;
  o->diags = &P->d;
  return g;
}

/* tdsl explain shows a scan's outputs, its FLOPs (the body's times the
 * trip count) and the body's kernels under it. */
Test(scan, explain_shows_the_body_once_per_step) {
  prog P;
  td_drive_opts o;
  td_graph *g = lower_rnn(&P, TD_BACKEND_CPU, &o);
  const char *names[] = {"B", "H", "T"};
  int64_t vals[] = {2, 3, 5};
  td_explain_opts eo;
  memset(&eo, 0, sizeof eo);
  eo.diags = &P.d;
  eo.size_names = names;
  eo.size_values = vals;
  eo.n_sizes = 3;
  char text[1 << 14] = "";
  FILE *f = fmemopen(text, sizeof text - 1, "w");
  cr_assert_not_null(f);
  td_err err;
  td_plan *plan = NULL;
  cr_assert_eq(td_drive_explain(g, &o, &eo, 0, f, &plan, &err), 0, "%s", err.msg);
  fclose(f);
  const char *k = strstr(text, "(scan) over its steps");
  cr_assert_not_null(k, "%s", text);
  const char *w = strstr(k, "writes:"), *body = strstr(k, "body, compiled once, run once per step (5 steps): ");
  cr_assert(w && body, "%s", text);
  /* both outputs (the carry f32[2, 3], the stacked sums f32[5, 2]), not the scan node */
  cr_expect(strstr(w, "f32[2, 3]") && strstr(w, "f32[5, 2]") && !strstr(w, "bool"), "%s", text);
  const char *fl = strstr(k, "FLOPs: ");
  cr_assert(fl && fl < body, "%s", text);
  long long scan_flops = atoll(fl + 7), per_step = 0;
  int nk = atoi(body + strlen("body, compiled once, run once per step (5 steps): "));
  cr_expect_geq(nk, 1, "%s", text);
  /* the body's kernels, indented under it */
  const char *q = body;
  for (int i = 0; i < nk; i++) {
    char want[32];
    snprintf(want, sizeof want, "\n      kernel %d: ", i);
    q = strstr(q, want);
    cr_assert_not_null(q, "body kernel %d missing:\n%s", i, text);
    const char *qf = strstr(q, "FLOPs: ");
    cr_assert_not_null(qf);
    per_step += atoll(qf + 7);
  }
  /* h @ w alone is 2*B*H*H = 36 FLOPs a step */
  cr_expect_geq(per_step, 36, "%s", text);
  cr_expect_eq(scan_flops, 5 * per_step, "%s", text);
  unload(&P);
}

Test(scan, trace_and_numerics_name_the_step) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "logs");
  cr_assert_not_null(g);
  double v[6] = {1, 2, 3, 4, -1, 5};   /* log(-1) at step 2 */
  int64_t shape[2] = {3, 2};
  td_tensor *x = tensor(2, shape, v);
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.trace = 1;
  io.on_trace = on_trace;
  traced[0] = 0;
  td_tensor **outs = NULL;
  td_err err;
  td_span sp;
  cr_assert_eq(run(g, &x, &io, &outs, &err, &sp), 0, "%s", err.msg);
  cr_expect(strstr(traced, "[step 0]") && strstr(traced, "[step 2]") && !strstr(traced, "[step 3]"), "%s", traced);
  td_tensor_release(outs[0]);
  td_free(outs);
  io.trace = 0;
  io.check_numerics = 1;
  cr_assert_neq(run(g, &x, &io, &outs, &err, &sp), 0);
  cr_expect(strstr(err.msg, "op 'log' produced NaN") && strstr(err.msg, "at step 2 of the scan"), "%s", err.msg);
  cr_expect_eq(sp.line, 11, "the error points at the body's log, line %d", sp.line);
  td_tensor_release(x);
  unload(&P);
}

Test(scan, random_draws_differ_from_step_to_step) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "noise");
  cr_assert_not_null(g);
  double z[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  td_tensor *x = tensor(1, shape, z);
  td_tensor **a = NULL, **b = NULL;
  td_err err;
  cr_assert_eq(run(g, &x, NULL, &a, &err, NULL), 0, "%s", err.msg);
  cr_assert_eq(run(g, &x, NULL, &b, &err, NULL), 0, "%s", err.msg);
  const float *ya = a[0]->data, *yb = b[0]->data;
  cr_expect_eq(memcmp(ya, yb, 12 * sizeof *ya), 0, "the same call draws the same numbers");
  for (int t = 1; t < 4; t++) cr_expect(memcmp(ya, ya + 3 * t, 3 * sizeof *ya), "step %d drew step 0's numbers", t);
  for (int i = 0; i < 12; i++) cr_expect(ya[i] >= 0 && ya[i] < 1);
  td_tensor_release(a[0]);
  td_tensor_release(b[0]);
  td_free(a);
  td_free(b);
  td_tensor_release(x);
  unload(&P);
}

/* The compiled CPU code draws what eager mode draws, step by step. */
Test(scan, compiled_random_draws_are_eager_draws) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "noise");
  cr_assert_not_null(g);
  double z[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  td_tensor *x = tensor(1, shape, z);
  td_tensor **a = NULL, **b = NULL;
  td_err err;
  cr_assert_eq(run(g, &x, NULL, &a, &err, NULL), 0, "%s", err.msg);
  cr_assert_eq(run_on(TD_BACKEND_CPU, g, &x, NULL, &b, &err, NULL), 0, "%s", err.msg);
  cr_expect_eq(memcmp(a[0]->data, b[0]->data, 12 * sizeof(float)), 0, "compiled draws differ from eager draws");
  td_tensor_release(a[0]);
  td_tensor_release(b[0]);
  td_free(a);
  td_free(b);
  td_tensor_release(x);
  unload(&P);
}

/* CUDA explains a scan: the entry's plan with the body under the scan,
 * then the launches, the scan a host loop over its steps with its body's
 * kernels (named after the scan) under it. */
Test(scan, cuda_explains_the_host_loop) {
  prog P;
  td_drive_opts o;
  td_graph *g = lower_rnn(&P, TD_BACKEND_CUDA, &o);
  td_err err;
  td_plan *plan = NULL;
  td_explain_opts eo;
  memset(&eo, 0, sizeof eo);
  FILE *null = fopen("/dev/null", "w");
  cr_assert_not_null(null);
  cr_assert_eq(td_drive_explain(g, &o, &eo, 0, null, &plan, &err), 0, "%s", err.msg);
  fclose(null);
  char text[1 << 14] = "";
  FILE *f = fmemopen(text, sizeof text - 1, "w");
  cr_assert_not_null(f);
  cr_assert_eq(td_drive_explain_backend(plan, &o, "rnn", f, &err), 0, "%s", err.msg);
  fclose(f);
  cr_expect(strstr(text, "CUDA: rnn (2 kernels in one module"), "%s", text);
  cr_expect(strstr(text, "scan     a host loop: T steps, each launching the body's 2 kernels"), "%s", text);
  cr_expect(strstr(text, "      s0_k0_matmul_add_tanh        matmul   grid (ceil(H/64), ceil(B/64), 1)"), "%s", text);
  cr_expect(strstr(text, "      s0_k1_sum                    reduce"), "%s", text);
  unload(&P);
}

/* A print inside a scan's step runs eager and on the CPU (prints.td, in
 * test_compiled and the artifact test above); CUDA refuses it, naming the
 * print's line, rather than dropping the lines. */
Test(scan, cuda_refuses_a_print_in_a_step) {
  prog P;
  P.a = td_arena_new();
  cr_assert_not_null(P.a);
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_not_null(P.p);
  cr_assert_eq(td_program_load_text(P.p, "p.td",
                                    "fn show(s, x) {\n  print(\"x\", x)\n  s + x\n}\n"
                                    "fn f(xs: f32[T, 2]) -> f32[2] { fold(show, zeros([2]), xs) }\n"), 0);
  td_graph *g = td_program_lower(P.p, "f");
  cr_assert_not_null(g);
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_CUDA;
  o.diags = &P.d;
  td_explain_opts eo;
  memset(&eo, 0, sizeof eo);
  FILE *null = fopen("/dev/null", "w");
  cr_assert_not_null(null);
  td_err err;
  td_plan *plan = NULL;
  cr_assert_eq(td_drive_explain(g, &o, &eo, 0, null, &plan, &err), 0, "%s", err.msg);
  cr_expect_neq(td_drive_explain_backend(plan, &o, "f", null, &err), 0);
  fclose(null);
  cr_expect(strstr(err.msg, "print inside a scan's step (line 2) is not compiled for CUDA yet"), "%s", err.msg);
  unload(&P);
}

/* A program with a scan builds for the CPU and for CUDA (where NVRTC is
 * installed: test_gpu_build.c runs such a CUDA artifact under a stand-in
 * driver); the library and header are written. */
Test(scan, cpu_and_cuda_builds_take_it) {
  prog P;
  load(&P);
  td_err err;
  char dir[] = "/tmp/tdsl-scan-build-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  td_build_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.dir = dir;
  bo.prefix = "scan";
  bo.source = "scan.td";
  bo.rt_lib = TDSL_BUILDDIR "/libtdsl_rt.a";
  cr_expect_eq(td_drive_build(P.p, TD_BACKEND_CPU, &bo, &err), 0, "%s", err.msg);
  td_err rtc;
  if (td_cuda_load_nvrtc(&rtc)) {
    bo.prefix = "scan_cuda";
    cr_expect_eq(td_drive_build(P.p, TD_BACKEND_CUDA, &bo, &err), 0, "%s", err.msg);
    char so[128];
    snprintf(so, sizeof so, "%s/scan_cuda.so", dir);
    cr_expect_eq(access(so, R_OK), 0, "no %s", so);
  } else {
    cr_expect_neq(td_drive_build(P.p, TD_BACKEND_CUDA, &bo, &err), 0);
    cr_expect(strstr(err.msg, "needs NVRTC"), "%s", err.msg);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
  unload(&P);
}

/* ---- built artifacts ---- */

/* A CPU artifact of a program of one entry point (besides main), loaded
 * as the Python package loads one (artifact.h's tdrt_* through the
 * PREFIX_tdsl_* wrappers). */
typedef struct art {
  char dir[64];
  void *so;
  void *(*create)(int abi);
  const char *(*describe)(void *m);
  int (*bind)(void *m, int e, const int *dtypes, const int *ranks, const int64_t *shapes, int64_t *syms,
              int64_t *out_shapes);
  int (*call)(void *m, int e, const int64_t *syms, void *const *args);
  int (*get_param)(void *m, int i, void *dst, size_t bytes);
  const char *(*error)(const void *m);
  void (*free)(void *m);
} art;

static void *sym_of(art *A, const char *name) {
  char full[64];
  snprintf(full, sizeof full, "art_%s", name);
  void *f = dlsym(A->so, full);
  cr_assert_not_null(f, "%s: %s", full, dlerror());
  return f;
}

static void build_art(art *A, const char *text) {
  prog P;
  P.a = td_arena_new();
  cr_assert_not_null(P.a);
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  td_program_add_search_dir(P.p, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(P.p, "art.td", text), 0);
  snprintf(A->dir, sizeof A->dir, "/tmp/tdsl-scan-art-XXXXXX");
  cr_assert_not_null(mkdtemp(A->dir));
  td_build_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.dir = A->dir;
  bo.prefix = "art";
  bo.source = "art.td";
  bo.rt_lib = TDSL_BUILDDIR "/libtdsl_rt.a";
  td_err err;
  cr_assert_eq(td_drive_build(P.p, TD_BACKEND_CPU, &bo, &err), 0, "%s", err.msg);
  unload(&P);
  char so[128];
  snprintf(so, sizeof so, "%s/art.so", A->dir);
  A->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(A->so, "%s", dlerror());
  A->create = (void *(*)(int))sym_of(A, "tdsl_new");
  A->describe = (const char *(*)(void *))sym_of(A, "tdsl_describe");
  A->bind = (int (*)(void *, int, const int *, const int *, const int64_t *, int64_t *, int64_t *))sym_of(A, "tdsl_bind");
  A->call = (int (*)(void *, int, const int64_t *, void *const *))sym_of(A, "tdsl_call");
  A->get_param = (int (*)(void *, int, void *, size_t))sym_of(A, "tdsl_get_param");
  A->error = (const char *(*)(const void *))sym_of(A, "error");
  A->free = (void (*)(void *))sym_of(A, "free");
}

/* The library stays loaded (it is linked -z nodelete); its files go. */
static void drop_art(art *A) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", A->dir);
  cr_expect_eq(system(cmd), 0);
}

static void *new_model(art *A) {
  void *m = A->create(TDRT_ABI);
  cr_assert_not_null(m, "%s", A->error(NULL));
  return m;
}

/* Calls entry 0 of m on n f32 or i64 inputs: binds the sizes from their
 * shapes, writes the outputs into outs (allocated here, out_shapes theirs:
 * TD_MAX_RANK per output). */
static int call_art(art *A, void *m, int n, const int *dtypes, const int *ranks, const int64_t *shapes,
                    void **inputs, int n_out, const int *out_ranks, void **outs, int64_t *out_shapes) {
  int64_t syms[16], os[8 * TD_MAX_RANK];
  int rc = A->bind(m, 0, dtypes, ranks, shapes, syms, os);
  cr_assert_eq(rc, 0, "%s", A->error(m));
  void *args[16];
  for (int i = 0; i < n; i++) args[i] = inputs[i];
  for (int o = 0, at = 0; o < n_out; o++) {
    size_t numel = 1;
    for (int k = 0; k < out_ranks[o]; k++) numel *= (size_t)os[at + k];
    memcpy(&out_shapes[o * TD_MAX_RANK], &os[at], (size_t)out_ranks[o] * sizeof *os);
    at += out_ranks[o];
    outs[o] = args[n + o] = calloc(numel + 1, 8);
  }
  return A->call(m, 0, syms, args);
}

static const char rnn_text[] = RNN_TEXT;

/* One library (T symbolic) at every length, 0 and 1 included, in one
 * model, against the float64 loop. */
Test(scan, an_artifact_runs_it_at_every_length) {
  art A;
  build_art(&A, rnn_text);
  void *m = new_model(&A);
  const int64_t lengths[] = {0, 1, 7, 300, 7};
  for (int li = 0; li < 5; li++) {
    int64_t T = lengths[li];
    double *xs = malloc(sizeof(double) * (size_t)(T * RB * RH + 1)), h0[RB * RH], w[RH * RH];
    float *fx = malloc(sizeof(float) * (size_t)(T * RB * RH + 1)), fh[RB * RH], fw[RH * RH];
    for (int i = 0; i < RB * RH; i++) fh[i] = (float)(h0[i] = 0.1 * i - 0.2);
    for (int64_t i = 0; i < T * RB * RH; i++) fx[i] = (float)(xs[i] = sin(0.37 * (double)i + (double)li));
    for (int i = 0; i < RH * RH; i++) fw[i] = (float)(w[i] = 0.05 * i - 0.2);
    for (int i = 0; i < RB * RH; i++) h0[i] = fh[i];
    for (int64_t i = 0; i < T * RB * RH; i++) xs[i] = fx[i];
    for (int i = 0; i < RH * RH; i++) w[i] = fw[i];
    int dt[3] = {TD_F32, TD_F32, TD_F32}, rk[3] = {2, 3, 2}, ork[2] = {2, 2};
    int64_t shapes[7] = {RB, RH, T, RB, RH, RH, RH}, oshape[2 * TD_MAX_RANK];
    void *in[3] = {fh, fx, fw}, *out[2];
    int rc = call_art(&A, m, 3, dt, rk, shapes, in, 2, ork, out, oshape);
    cr_assert_eq(rc, 0, "T=%lld: %s", (long long)T, A.error(m));
    cr_expect(oshape[0] == RB && oshape[1] == RH && oshape[TD_MAX_RANK] == T && oshape[TD_MAX_RANK + 1] == RB);
    check_rnn("artifact", T, h0, xs, w, out[0], out[1]);
    free(out[0]);
    free(out[1]);
    free(xs);
    free(fx);
  }
  A.free(m);
  drop_art(&A);
}

/* The artifact draws what eager mode draws, step by step (its first call
 * is call 0, as `tdsl run`), and a second call draws other numbers. */
Test(scan, artifact_random_draws_are_eager_draws) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "noise");
  cr_assert_not_null(g);
  float z[7] = {0};
  double zd[7] = {0};
  int64_t shape[1] = {7};
  td_tensor *x = tensor(1, shape, zd);
  td_tensor **a = NULL;
  td_err err;
  cr_assert_eq(run(g, &x, NULL, &a, &err, NULL), 0, "%s", err.msg);
  art A;
  build_art(&A, "fn noise(n: f32[T]) {\n"
                "  let (c, ys) = scan(draw, zeros([]), n)\n"
                "  ys\n"
                "}\n"
                "fn draw(c, x) { (c, rand([3], seed = 7) + x * 0.0) }\n");
  void *m = new_model(&A);
  int dt[1] = {TD_F32}, rk[1] = {1}, ork[1] = {2};
  int64_t oshape[TD_MAX_RANK];
  void *in[1] = {z}, *out[1], *again[1];
  cr_assert_eq(call_art(&A, m, 1, dt, rk, shape, in, 1, ork, out, oshape), 0, "%s", A.error(m));
  cr_assert(oshape[0] == 7 && oshape[1] == 3);
  cr_expect_eq(memcmp(a[0]->data, out[0], 21 * sizeof(float)), 0, "the artifact's draws differ from eager draws");
  cr_assert_eq(call_art(&A, m, 1, dt, rk, shape, in, 1, ork, again, oshape), 0, "%s", A.error(m));
  cr_expect_neq(memcmp(out[0], again[0], 21 * sizeof(float)), 0, "the second call drew the first call's numbers");
  free(out[0]);
  free(again[0]);
  A.free(m);
  drop_art(&A);
  td_tensor_release(a[0]);
  td_free(a);
  td_tensor_release(x);
  unload(&P);
}

/* An index out of range in a body is an error of the call naming the
 * step, and the model still runs afterwards. */
Test(scan, an_artifact_says_at_which_step_a_body_failed) {
  art A;
  build_art(&A, "fn pick(c, i, v) { (c + take(v, i), take(v, i)) }\n"
                "fn picks(idx: i64[T, 1], v: f32[4]) {\n"
                "  scan(pick, zeros([1]), idx, args = v)\n"
                "}\n");
  void *m = new_model(&A);
  int64_t idx[5] = {0, 1, 2, 9, 3};
  float v[4] = {1, 2, 3, 4};
  int dt[2] = {TD_I64, TD_F32}, rk[2] = {2, 1}, ork[2] = {1, 2};
  int64_t shapes[3] = {5, 1, 4}, oshape[2 * TD_MAX_RANK];
  void *in[2] = {idx, v}, *out[2];
  int rc = call_art(&A, m, 2, dt, rk, shapes, in, 2, ork, out, oshape);
  cr_expect_eq(rc, TDRT_EINDEX, "rc %d: %s", rc, A.error(m));
  cr_expect(strstr(A.error(m), "picks: take: an index is out of range, at step 3 of the scan") != NULL, "%s",
            A.error(m));
  free(out[0]);
  free(out[1]);
  idx[3] = 1;
  cr_assert_eq(call_art(&A, m, 2, dt, rk, shapes, in, 2, ork, out, oshape), 0, "%s", A.error(m));
  const float *c = out[0], *ys = out[1];
  cr_expect(c[0] == 1 + 2 + 3 + 2 + 4, "carry %g", c[0]);
  for (int t = 0; t < 5; t++) cr_expect(ys[t] == v[idx[t]], "ys[%d] = %g", t, ys[t]);
  free(out[0]);
  free(out[1]);
  A.free(m);
  drop_art(&A);
}

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* stdlib/nn.td's GRU (T and B symbolic, its step a model method reading
 * its parameters) against the float64 loop of torch.nn.GRU's equations,
 * with the parameters the artifact made. */
Test(scan, an_artifact_runs_nn_gru) {
  art A;
  build_art(&A, "import nn\n"
                "model G {\n"
                "  rnn = nn.GRU(2, 3)\n"
                "  fn forward(x: f32[T, B, 2]) {\n"
                "    let (y, h) = rnn(x)\n"
                "    (y, h)\n"
                "  }\n"
                "}\n"
                "fn main() {}\n");
  void *m = new_model(&A);
  const char *d = A.describe(m);
  cr_assert_not_null(d);
  const char *pw = strstr(d, "weight_ih_l0"), *ph = strstr(d, "weight_hh_l0"), *pb = strstr(d, "bias_ih_l0"),
             *pc = strstr(d, "bias_hh_l0");
  cr_assert(pw && ph && pb && pc && pw < ph && ph < pb && pb < pc, "parameters not in declaration order: %s", d);
  enum { I = 2, Hd = 3, Bt = 2 };
  float wih[3 * Hd * I], whh[3 * Hd * Hd], bih[3 * Hd], bhh[3 * Hd];
  cr_assert_eq(A.get_param(m, 0, wih, sizeof wih), 0, "%s", A.error(m));
  cr_assert_eq(A.get_param(m, 1, whh, sizeof whh), 0, "%s", A.error(m));
  cr_assert_eq(A.get_param(m, 2, bih, sizeof bih), 0, "%s", A.error(m));
  cr_assert_eq(A.get_param(m, 3, bhh, sizeof bhh), 0, "%s", A.error(m));
  const int64_t lengths[] = {0, 1, 7, 300};
  for (int li = 0; li < 4; li++) {
    int64_t T = lengths[li];
    float *x = malloc(sizeof(float) * (size_t)(T * Bt * I + 1));
    for (int64_t i = 0; i < T * Bt * I; i++) x[i] = (float)sin(0.29 * (double)i);
    int dt[1] = {TD_F32}, rk[1] = {3}, ork[2] = {3, 3};
    int64_t shapes[3] = {T, Bt, I}, oshape[2 * TD_MAX_RANK];
    void *in[1] = {x}, *out[2];
    cr_assert_eq(call_art(&A, m, 1, dt, rk, shapes, in, 2, ork, out, oshape), 0, "T=%lld: %s", (long long)T,
                 A.error(m));
    cr_expect(oshape[0] == T && oshape[1] == Bt && oshape[2] == Hd);
    const float *y = out[0], *hn = out[1];
    double h[Bt][Hd] = {{0}}, h2[Bt][Hd];
    for (int64_t t = 0; t < T; t++) {
      for (int b = 0; b < Bt; b++)
        for (int j = 0; j < Hd; j++) {
          double g[3], hg[3];
          for (int q = 0; q < 3; q++) {
            int row = q * Hd + j;
            g[q] = bih[row];
            hg[q] = bhh[row];
            for (int k = 0; k < I; k++) g[q] += (double)x[(t * Bt + b) * I + k] * wih[row * I + k];
            for (int k = 0; k < Hd; k++) hg[q] += h[b][k] * whh[row * Hd + k];
          }
          double r = sigm(g[0] + hg[0]), z = sigm(g[1] + hg[1]), n = tanh(g[2] + r * hg[2]);
          h2[b][j] = (1 - z) * n + z * h[b][j];
          cr_expect(fabs(y[(t * Bt + b) * Hd + j] - h2[b][j]) < 1e-4, "T=%lld y[%lld][%d][%d]: %g, expected %g",
                    (long long)T, (long long)t, b, j, y[(t * Bt + b) * Hd + j], h2[b][j]);
        }
      memcpy(h, h2, sizeof h);
    }
    for (int b = 0; b < Bt; b++)
      for (int j = 0; j < Hd; j++)
        cr_expect(fabs(hn[b * Hd + j] - h[b][j]) < 1e-4, "T=%lld h_n[%d][%d]: %g, expected %g", (long long)T, b, j,
                  hn[b * Hd + j], h[b][j]);
    free(out[0]);
    free(out[1]);
    free(x);
  }
  A.free(m);
  drop_art(&A);
}

/* What tests/lang/scan/basics.td covers, in one entry built once: reverse,
 * the step index, tuples as carries and sequences, extra arguments, a
 * carry passed through unchanged, a scan in a scan with random draws in
 * the inner body (streams mixed with both steps), against eager mode at
 * every length (the draws bit for bit). */
static const char many_text[] =
    "fn cell(h, x) {\n"
    "  let h2 = tanh(h * 0.5 + x)\n"
    "  (h2, h2 * 2.0)\n"
    "}\n"
    "fn count(c, i) { (c + i, i * i) }\n"
    "fn pair(c, x) {\n"
    "  let (a, b) = c\n"
    "  let (u, v) = x\n"
    "  ((a + u, b * v), a - b)\n"
    "}\n"
    "fn affine(h, x, w, b) { (tanh(h @ w + x + b), sum(h)) }\n"
    "fn noisy(c, i) { (c + i, rand([2], seed = 3) + f32(i)) }\n"
    "fn rows(c, row) {\n"
    "  let (s, r) = scan(noisy, c, length = 3)\n"
    "  (s, r + sum(row))\n"
    "}\n"
    "fn keep(c, x) { (c, x * 2.0) }\n"
    "fn many(xs: f32[T, 3]) {\n"
    "  let (hr, yr) = scan(cell, zeros([3]), xs, reverse = true)\n"
    "  let (c, sq) = scan(count, zeros([], dtype = i64), length = 5)\n"
    "  let (ab, d) = scan(pair, (ones([2]), full([2], 2.0)), (xs[:, 0:2], xs[:, 1:3] + 1.0))\n"
    "  let (a, b) = ab\n"
    "  let w = reshape(arange(9.0), [3, 3]) * 0.1 - 0.3\n"
    "  let (ha, s) = scan(affine, ones([2, 3]), xs, args = (w, 0.25))\n"
    "  let (ci, rr) = scan(rows, zeros([], dtype = i64), xs)\n"
    "  let (k, kx) = scan(keep, ones([3]), xs)\n"
    "  (hr, yr, c, sq, a, b, d, ha, s, ci, rr, k, kx)\n"
    "}\n";

Test(scan, an_artifact_runs_what_eager_mode_runs) {
  prog P;
  P.a = td_arena_new();
  cr_assert_not_null(P.a);
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "many.td", many_text), 0);
  td_graph *g = td_program_lower(P.p, "many");
  cr_assert_not_null(g);
  art A;
  build_art(&A, many_text);
  enum { NOUT = 13, RAND_OUT = 10 };
  const int64_t lengths[] = {0, 1, 7, 300};
  for (int li = 0; li < 4; li++) {
    int64_t T = lengths[li], shape[2] = {T, 3};
    double *v = malloc(sizeof(double) * (size_t)(T * 3 + 1));
    for (int64_t i = 0; i < T * 3; i++) v[i] = 0.1 * (double)(i % 13) - 0.4;
    td_tensor *x = tensor(2, shape, v);
    td_tensor **ref = NULL;
    td_err err;
    cr_assert_eq(run(g, &x, NULL, &ref, &err, NULL), 0, "T=%lld: %s", (long long)T, err.msg);
    void *m = new_model(&A);   /* its first call is call 0, as eager's */
    int dt[1] = {TD_F32}, rk[1] = {2}, ork[NOUT];
    for (int o = 0; o < NOUT; o++) ork[o] = ref[o]->rank;
    int64_t oshape[NOUT * TD_MAX_RANK];
    void *in[1] = {x->data}, *out[NOUT];
    cr_assert_eq(call_art(&A, m, 1, dt, rk, shape, in, NOUT, ork, out, oshape), 0, "T=%lld: %s", (long long)T,
                 A.error(m));
    for (int o = 0; o < NOUT; o++) {
      const td_tensor *r = ref[o];
      cr_expect_eq(memcmp(&oshape[o * TD_MAX_RANK], r->shape, (size_t)r->rank * sizeof *r->shape), 0,
                   "T=%lld output %d: shape differs", (long long)T, o);
      if (o == RAND_OUT || r->dtype != TD_F32) {
        cr_expect_eq(memcmp(out[o], r->data, (size_t)r->numel * td_dtype_size(r->dtype)), 0,
                     "T=%lld output %d differs from eager's", (long long)T, o);
      } else {
        for (int64_t i = 0; i < r->numel; i++) {
          float got = ((float *)out[o])[i], want = ((float *)r->data)[i];
          cr_expect(fabsf(got - want) <= 1e-5f * (1 + fabsf(want)), "T=%lld output %d [%lld]: %g, eager %g",
                    (long long)T, o, (long long)i, got, want);
        }
      }
      free(out[o]);
      td_tensor_release(ref[o]);
    }
    td_free(ref);
    A.free(m);
    td_tensor_release(x);
    free(v);
  }
  drop_art(&A);
  unload(&P);
}

/* ---- print inside a step ---- */

/* A fold over T (symbolic) whose step prints and runs a reverse scan
 * that prints too. */
#define PRINTS_TEXT \
    "fn tick(c, i) {\n" \
    "  print(\"tick\", i)\n" \
    "  (c, i)\n" \
    "}\n" \
    "fn say(s, x) {\n" \
    "  print(\"x\", x, \"s\", s)\n" \
    "  let (n, ys) = scan(tick, s, length = 2, reverse = true)\n" \
    "  n + x\n" \
    "}\n" \
    "fn shout(xs: f32[T]) {\n" \
    "  print(\"start\")\n" \
    "  let s = fold(say, zeros([]), xs)\n" \
    "  print(\"total\", s)\n" \
    "  s\n" \
    "}\n"

/* The lines, computed by hand: s is the running sum before x; each step's
 * scan prints i = 1 then 0. */
static const char *const prints_want[3] = {
    "start\ntotal 0.0000\n",
    "start\nx 5.0000 s 0.0000\ntick 1\ntick 0\ntotal 5.0000\n",
    "start\nx 1.0000 s 0.0000\ntick 1\ntick 0\nx 2.0000 s 1.0000\ntick 1\ntick 0\n"
    "x 3.0000 s 3.0000\ntick 1\ntick 0\ntotal 6.0000\n"};
static const int64_t prints_T[3] = {0, 1, 3};
static const float prints_xs[3][3] = {{0}, {5}, {1, 2, 3}};

static char printed[1 << 14];
static void on_printed(void *ud, const char *text) {
  (void)ud;
  strncat(printed, text, sizeof printed - strlen(printed) - 1);
}

/* Eager mode and one compiled program (T symbolic) print the same lines,
 * every step's, in eager order, at every length. */
Test(scan, prints_in_a_step_compiled_are_eager_prints) {
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "prints.td", PRINTS_TEXT), 0);
  td_graph *g = td_program_lower(P.p, "shout");
  cr_assert_not_null(g);
  td_drive_opts co;
  memset(&co, 0, sizeof co);
  co.backend = TD_BACKEND_CPU;
  td_err err;
  td_prepared *cp = td_prepare(g, &co, &err);
  cr_assert_not_null(cp, "%s", err.msg);
  for (int mode = 0; mode < 2; mode++)
    for (int li = 0; li < 3; li++) {
      double v[3];
      for (int i = 0; i < 3; i++) v[i] = prints_xs[li][i];
      td_tensor *x = tensor(1, &prints_T[li], v);
      td_run_opts io;
      memset(&io, 0, sizeof io);
      io.on_print = on_printed;
      printed[0] = 0;
      td_tensor **outs = NULL;
      if (mode == 0) cr_assert_eq(run(g, &x, &io, &outs, &err, NULL), 0, "%s", err.msg);
      else cr_assert_eq(td_prepared_run(cp, &x, NULL, &io, &outs, &err, NULL), 0, "%s", err.msg);
      cr_expect_str_eq(printed, prints_want[li], "%s, T=%lld: printed\n%s", mode ? "compiled" : "eager",
                       (long long)prints_T[li], printed);
      td_tensor_release(outs[0]);
      td_free(outs);
      td_tensor_release(x);
    }
  td_prepared_free(cp);
  unload(&P);
}

/* A built artifact (one library, T symbolic) hands its print callback the
 * same lines, in the same order, at every length; with no callback it
 * prints nothing and runs all the same. */
Test(scan, an_artifact_prints_every_step_as_eager_mode) {
  art A;
  build_art(&A, PRINTS_TEXT);
  void (*set_print)(void *, void (*)(void *, const char *), void *) =
      (void (*)(void *, void (*)(void *, const char *), void *))sym_of(&A, "set_print");
  void *m = new_model(&A);
  set_print(m, on_printed, NULL);
  for (int round = 0; round < 2; round++)
    for (int li = 0; li < 3; li++) {
      float x[3];
      memcpy(x, prints_xs[li], sizeof x);
      int dt[1] = {TD_F32}, rk[1] = {1}, ork[1] = {0};
      int64_t oshape[TD_MAX_RANK];
      void *in[1] = {x}, *out[1];
      printed[0] = 0;
      cr_assert_eq(call_art(&A, m, 1, dt, rk, &prints_T[li], in, 1, ork, out, oshape), 0, "%s", A.error(m));
      cr_expect_str_eq(printed, prints_want[li], "T=%lld: printed\n%s", (long long)prints_T[li], printed);
      cr_expect_eq(*(float *)out[0], (float)(prints_xs[li][0] + prints_xs[li][1] + prints_xs[li][2]));
      free(out[0]);
    }
  set_print(m, NULL, NULL);
  printed[0] = 0;
  float x[3] = {1, 2, 3};
  int dt[1] = {TD_F32}, rk[1] = {1}, ork[1] = {0};
  int64_t oshape[TD_MAX_RANK];
  void *in[1] = {x}, *out[1];
  cr_assert_eq(call_art(&A, m, 1, dt, rk, &prints_T[2], in, 1, ork, out, oshape), 0, "%s", A.error(m));
  cr_expect_str_eq(printed, "");
  cr_expect_eq(*(float *)out[0], 6.0f);
  free(out[0]);
  A.free(m);
  drop_art(&A);
}

/* ---- checkpointed gradients (scan(..., checkpoint = k), lang/grad.c) ---- */

#define CKPT_TEXT \
    "fn cell(h, x, w) {\n" \
    "  let h2 = tanh(h @ w + x)\n" \
    "  (h2, h2 * h2)\n" \
    "}\n" \
    "fn step(c, i, w) { tanh(c @ w + f64(i) * 0.1) }\n" \
    "fn lp(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w)\n sum(h * 3.0) + sum(ys) }\n" \
    "fn lc(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w, checkpoint = 3)\n sum(h * 3.0) + sum(ys) }\n" \
    "fn rp(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w, reverse = true)\n sum(h * 3.0) + sum(ys) }\n" \
    "fn rc(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w, reverse = true, checkpoint = 3)\n" \
    "  sum(h * 3.0) + sum(ys) }\n" \
    "fn ip(w, h0, xs) { sum(fold(step, h0, length = len(xs), args = w)) }\n" \
    "fn ic(w, h0, xs) { sum(fold(step, h0, length = len(xs), args = w, checkpoint = 2)) }\n" \
    "fn grads(w: f64[3, 3], h0: f64[2, 3], xs: f64[T, 2, 3]) {\n" \
    "  let a = grad(lp, argnums = [0, 1, 2])(w, h0, xs)\n" \
    "  let b = grad(lc, argnums = [0, 1, 2])(w, h0, xs)\n" \
    "  let c = grad(rp, argnums = [0, 1, 2])(w, h0, xs)\n" \
    "  let d = grad(rc, argnums = [0, 1, 2])(w, h0, xs)\n" \
    "  let e = grad(ip, argnums = [0, 1])(w, h0, xs)\n" \
    "  let f = grad(ic, argnums = [0, 1])(w, h0, xs)\n" \
    "  (a[0], a[1], a[2], b[0], b[1], b[2], c[0], c[1], c[2], d[0], d[1], d[2], e[0], e[1], f[0], f[1])\n" \
    "}\n"

/* The loss of lp (reverse: rp) or ip (index) in float64: the loop
 * written out. */
static double ck_loss(int kind, int64_t T, const double *w, const double *h0, const double *xs) {
  double h[6], hn[6], s = 0;
  memcpy(h, h0, sizeof h);
  for (int64_t st = 0; st < T; st++) {
    int64_t t = kind == 1 ? T - 1 - st : st;
    for (int b = 0; b < 2; b++)
      for (int j = 0; j < 3; j++) {
        double acc = kind == 2 ? 0.1 * (double)t : xs[(t * 2 + b) * 3 + j];
        for (int k = 0; k < 3; k++) acc += h[b * 3 + k] * w[k * 3 + j];
        hn[b * 3 + j] = tanh(acc);
        if (kind != 2) s += hn[b * 3 + j] * hn[b * 3 + j];
      }
    memcpy(h, hn, sizeof h);
  }
  for (int i = 0; i < 6; i++) s += kind == 2 ? h[i] : 3 * h[i];
  return s;
}

/* Central differences of ck_loss for value v[i] of the argument v. */
static double ck_fd(int kind, int64_t T, double *w, double *h0, double *xs, double *v, int i) {
  double keep = v[i], e = 1e-6;
  v[i] = keep + e;
  double up = ck_loss(kind, T, w, h0, xs);
  v[i] = keep - e;
  double dn = ck_loss(kind, T, w, h0, xs);
  v[i] = keep;
  return (up - dn) / (2 * e);
}

static td_tensor *f64_tensor(int rank, const int64_t *shape, const double *v) {
  td_err err;
  td_tensor *t = td_tensor_new(TD_F64, rank, shape, &err);
  cr_assert_not_null(t, "%s", err.msg);
  if (t->numel) memcpy(t->data, v, (size_t)t->numel * sizeof(double));
  return t;
}

/* One graph (T symbolic, so T//3 and T - 3*(T//3) segments' sizes bound
 * at run time) at T = 0 .. 10, eager and compiled: the checkpointed
 * gradients are the plain ones bit for bit, for a scan, a reverse scan
 * and a fold over the step index, and the plain ones are the loop's
 * central differences in float64. */
Test(scan, checkpointed_gradients_are_the_plain_ones_at_every_length, .timeout = 120) {
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "ckpt.td", CKPT_TEXT), 0);
  td_graph *g = td_program_lower(P.p, "grads");
  cr_assert_not_null(g);
  td_drive_opts co;
  memset(&co, 0, sizeof co);
  co.backend = TD_BACKEND_CPU;
  td_err err;
  td_prepared *cp = td_prepare(g, &co, &err);
  cr_assert_not_null(cp, "%s", err.msg);
  double w[9], h0[6];
  for (int i = 0; i < 9; i++) w[i] = 0.1 * i - 0.3;
  for (int i = 0; i < 6; i++) h0[i] = 0.1 * i;
  for (int64_t T = 0; T <= 10; T++) {
    double *xs = malloc(sizeof(double) * (size_t)(T * 6 + 1));
    for (int64_t i = 0; i < T * 6; i++) xs[i] = sin((double)i);
    int64_t sw[2] = {3, 3}, sh[2] = {2, 3}, sx[3] = {T, 2, 3};
    td_tensor *in[3] = {f64_tensor(2, sw, w), f64_tensor(2, sh, h0), f64_tensor(3, sx, xs)};
    for (int mode = 0; mode < 2; mode++) {
      td_tensor **o = NULL;
      td_run_opts io;
      memset(&io, 0, sizeof io);
      if (mode == 0) cr_assert_eq(run(g, in, &io, &o, &err, NULL), 0, "T=%lld: %s", (long long)T, err.msg);
      else cr_assert_eq(td_prepared_run(cp, in, NULL, &io, &o, &err, NULL), 0, "T=%lld: %s", (long long)T, err.msg);
      const char *m = mode ? "compiled" : "eager";
      /* bit for bit: a/b, c/d (w, h0, xs), e/f (w, h0) */
      const int pairs[8][2] = {{0, 3}, {1, 4}, {2, 5}, {6, 9}, {7, 10}, {8, 11}, {12, 14}, {13, 15}};
      for (int p = 0; p < 8; p++) {
        const td_tensor *x = o[pairs[p][0]], *y = o[pairs[p][1]];
        cr_assert_eq(x->numel, y->numel);
        cr_expect_eq(memcmp(x->data, y->data, (size_t)x->numel * sizeof(double)), 0,
                     "%s T=%lld: checkpointed gradient %d differs from the plain one", m, (long long)T, pairs[p][1]);
      }
      /* against central differences: scan, reverse scan, fold over the index */
      const int first[3] = {0, 6, 12};
      for (int kind = 0; kind < 3; kind++) {
        double *args[3] = {w, h0, xs};
        int64_t n[3] = {9, 6, T * 6};
        for (int a = 0; a < (kind == 2 ? 2 : 3); a++) {
          const double *got = o[first[kind] + a]->data;
          for (int64_t i = 0; i < n[a]; i++) {
            double want = ck_fd(kind, T, w, h0, xs, args[a], (int)i);
            cr_expect(fabs(got[i] - want) <= 1e-7 * (1 + fabs(want)), "%s T=%lld kind %d arg %d [%lld]: %.12g, "
                      "central differences %.12g", m, (long long)T, kind, a, (long long)i, got[i], want);
          }
        }
      }
      for (int k = 0; k < 16; k++) td_tensor_release(o[k]);
      td_free(o);
    }
    for (int i = 0; i < 3; i++) td_tensor_release(in[i]);
    free(xs);
  }
  td_prepared_free(cp);
  unload(&P);
}

/* The largest stacked value (a SCAN_OUT with the steps' axis) of g and
 * its bodies, in elements. */
static int64_t largest_stack(const td_graph *g) {
  int64_t most = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const td_node *n = &g->nodes[i];
    if (n->op == TD_IR_SCAN) {
      int64_t b = largest_stack(n->attr.body);
      if (b > most) most = b;
    }
    if (n->op != TD_IR_SCAN_OUT) continue;
    int64_t e = 1;
    for (int k = 0; k < n->rank; k++) e *= TD_DIM_IS_CONST(n->shape[k]) ? n->shape[k] : 1 << 20;
    if (e > most) most = e;
  }
  return most;
}

/* T = 64 steps of a carry of 4x16: the plain gradient stacks every
 * step's carry (64*64 elements); checkpoint = 8 keeps 8 checkpoints and
 * one segment's 8 carries at a time; checkpoint = true picks 8 too. */
Test(scan, checkpointing_keeps_fewer_carries) {
  const char *texts[3] = {"", ", checkpoint = 8", ", checkpoint = true"};
  int64_t most[3];
  for (int v = 0; v < 3; v++) {
    char text[1024];
    snprintf(text, sizeof text,
             "fn cell(h, x, w) { tanh(h @ w + x) }\n"
             "fn loss(w, h0, xs) { sum(fold(cell, h0, xs, args = w%s)) }\n"
             "fn g(w: f32[16, 16], h0: f32[4, 16], xs: f32[64, 4, 1]) { grad(loss)(w, h0, xs) }\n",
             texts[v]);
    prog P;
    P.a = td_arena_new();
    td_diags_init(&P.d, P.a);
    P.p = td_program_new(P.a, &P.d);
    cr_assert_eq(td_program_load_text(P.p, "mem.td", text), 0);
    td_graph *g = td_program_lower(P.p, "g");
    cr_assert_not_null(g);
    most[v] = largest_stack(g);
    unload(&P);
  }
  cr_expect_eq(most[0], 64 * 4 * 16, "plain: largest stacked value %lld elements", (long long)most[0]);
  cr_expect_eq(most[1], 8 * 4 * 16, "checkpoint = 8: largest stacked value %lld elements", (long long)most[1]);
  cr_expect_eq(most[2], 8 * 4 * 16, "checkpoint = true: largest stacked value %lld elements", (long long)most[2]);
}

/* A built artifact of a checkpointed gradient (one library, T symbolic:
 * the runtime derives T//3 from T at each call) at T = 0 .. 8, against
 * central differences of the loop in float64. */
Test(scan, an_artifact_runs_a_checkpointed_gradient_at_every_length, .timeout = 120) {
  art A;
  build_art(&A, "fn cell(h, x, w) {\n"
                "  let h2 = tanh(h @ w + x)\n"
                "  (h2, h2 * h2)\n"
                "}\n"
                "fn lc(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w, checkpoint = 3)\n"
                "  sum(h * 3.0) + sum(ys) }\n"
                "fn grads(w: f64[3, 3], h0: f64[2, 3], xs: f64[T, 2, 3]) {\n"
                "  let g = grad(lc, argnums = [0, 1, 2])(w, h0, xs)\n"
                "  (g[0], g[1], g[2])\n"
                "}\n");
  void *m = new_model(&A);
  double w[9], h0[6];
  for (int i = 0; i < 9; i++) w[i] = 0.1 * i - 0.3;
  for (int i = 0; i < 6; i++) h0[i] = 0.1 * i;
  for (int64_t T = 8; T >= 0; T--) {
    double *xs = malloc(sizeof(double) * (size_t)(T * 6 + 1));
    for (int64_t i = 0; i < T * 6; i++) xs[i] = sin((double)i);
    int dt[3] = {TD_F64, TD_F64, TD_F64}, rk[3] = {2, 2, 3}, ork[3] = {2, 2, 3};
    int64_t shapes[7] = {3, 3, 2, 3, T, 2, 3}, oshape[3 * TD_MAX_RANK];
    void *in[3] = {w, h0, xs}, *out[3];
    cr_assert_eq(call_art(&A, m, 3, dt, rk, shapes, in, 3, ork, out, oshape), 0, "T=%lld: %s", (long long)T,
                 A.error(m));
    double *args[3] = {w, h0, xs};
    int64_t n[3] = {9, 6, T * 6};
    for (int a = 0; a < 3; a++) {
      const double *got = out[a];
      for (int64_t i = 0; i < n[a]; i++) {
        double want = ck_fd(0, T, w, h0, xs, args[a], (int)i);
        cr_expect(fabs(got[i] - want) <= 1e-7 * (1 + fabs(want)), "artifact T=%lld arg %d [%lld]: %.12g, central "
                  "differences %.12g", (long long)T, a, (long long)i, got[i], want);
      }
      free(out[a]);
    }
    free(xs);
  }
  A.free(m);
  drop_art(&A);
}

/* ---- value_and_grad runs its forward scan once compiled ---- */

static int count_scans(const td_graph *g) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == TD_IR_SCAN;
  return n;
}

/* The graph of value_and_grad holds the program's scan (the value) and
 * the gradient's forward again (its carries stacked), then the backward:
 * three scans.  The optimiser's scan_merge leaves two: the value comes
 * from the scan that stacks the carries.  The merged program computes
 * what eager mode computes (value and gradients); a body that prints is
 * not merged (each scan prints in eager mode). */
Test(scan, value_and_grad_runs_its_forward_scan_once_compiled) {
  static const char text[] =
      "fn cell(h, x, w) {\n"
      "  let h2 = tanh(h @ w + x)\n"
      "  (h2, h2 * h2)\n"
      "}\n"
      "fn loss(w, h0, xs) { let (h, ys) = scan(cell, h0, xs, args = w)\n sum(h * 3.0) + sum(ys) }\n"
      "fn vg(w: f64[3, 3], h0: f64[2, 3], xs: f64[T, 2, 3]) {\n"
      "  let (l, g) = value_and_grad(loss, argnums = [0, 1, 2])(w, h0, xs)\n"
      "  (l, g[0], g[1], g[2])\n"
      "}\n"
      "fn pcell(h, x, w) {\n"
      "  print(\"h\", h)\n"
      "  cell(h, x, w)\n"
      "}\n"
      "fn ploss(w, h0, xs) { let (h, ys) = scan(pcell, h0, xs, args = w)\n sum(h * 3.0) + sum(ys) }\n"
      "fn pvg(w: f64[3, 3], h0: f64[2, 3], xs: f64[T, 2, 3]) {\n"
      "  value_and_grad(ploss)(w, h0, xs)\n"
      "}\n";
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "vg.td", text), 0);
  const char *names[2] = {"vg", "pvg"};
  const int want[2] = {2, 3};
  for (int e = 0; e < 2; e++) {
    td_graph *g = td_program_lower(P.p, names[e]);
    cr_assert_not_null(g);
    cr_expect_eq(count_scans(g), 3, "%s: %d scans before optimising", names[e], count_scans(g));
    td_graph *opt = NULL;
    td_err err;
    cr_assert_eq(td_optimize(g, NULL, &opt, NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(count_scans(opt), want[e], "%s: %d scans after optimising, expected %d", names[e], count_scans(opt),
                 want[e]);
  }
  td_graph *g = td_program_lower(P.p, "vg");
  double w[9], h0[6], xs[5 * 6];
  for (int i = 0; i < 9; i++) w[i] = 0.1 * i - 0.3;
  for (int i = 0; i < 6; i++) h0[i] = 0.1 * i;
  for (int i = 0; i < 30; i++) xs[i] = sin((double)i);
  int64_t sw[2] = {3, 3}, sh[2] = {2, 3}, sx[3] = {5, 2, 3};
  td_tensor *in[3] = {f64_tensor(2, sw, w), f64_tensor(2, sh, h0), f64_tensor(3, sx, xs)};
  td_tensor **a = NULL, **b = NULL;
  td_err err;
  cr_assert_eq(run(g, in, NULL, &a, &err, NULL), 0, "%s", err.msg);
  cr_assert_eq(run_on(TD_BACKEND_CPU, g, in, NULL, &b, &err, NULL), 0, "%s", err.msg);
  cr_expect(fabs(*(double *)a[0]->data - ck_loss(0, 5, w, h0, xs)) < 1e-12, "eager value %.15g", *(double *)a[0]->data);
  for (int k = 0; k < 4; k++) {
    const double *x = a[k]->data, *y = b[k]->data;
    for (int64_t i = 0; i < a[k]->numel; i++)
      cr_expect(fabs(x[i] - y[i]) <= 1e-12 * (1 + fabs(x[i])), "output %d [%lld]: eager %.15g, compiled %.15g", k,
                (long long)i, x[i], y[i]);
    td_tensor_release(a[k]);
    td_tensor_release(b[k]);
  }
  td_free(a);
  td_free(b);
  for (int i = 0; i < 3; i++) td_tensor_release(in[i]);
  unload(&P);
}

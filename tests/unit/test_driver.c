/* test_driver.c - the driver layer (driver/driver.h): the backend names,
 * the dump stages, the one lowering with its dumps, running one graph on
 * the interpreter and on the CPU compiler with the same outputs and the
 * same print() text, what a compiled backend refuses, and a build on a
 * backend that builds nothing. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

static const char prog_text[] =
    "fn f(x: f32[N, 3]) -> f32[N, 3] {\n"
    "  print(\"sum\", sum(x))\n"
    "  x * 2.0 + 1.0\n"
    "}\n";

typedef struct prog {
  td_arena *a;
  td_diags d;
  td_program *p;
  td_graph *g;
} prog;

/* prog_text loaded and its entry f lowered. */
static void load(prog *P) {
  P->a = td_arena_new();
  cr_assert_not_null(P->a);
  td_diags_init(&P->d, P->a);
  P->p = td_program_new(P->a, &P->d);
  cr_assert_not_null(P->p);
  td_program_add_search_dir(P->p, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(P->p, "driver.td", prog_text), 0);
  P->g = td_program_lower(P->p, "f");
  cr_assert_not_null(P->g);
}

static char printed[4096];

static void on_print(void *ud, const char *text) {
  (void)ud;
  strncat(printed, text, sizeof printed - strlen(printed) - 1);
}

/* Runs P's graph on backend b with x = [[0, 1, 2], [3, 4, 5]]; returns the
 * output (the caller releases it) and what it printed in `printed`. */
static td_tensor *run_on(prog *P, td_backend b) {
  td_err err;
  int64_t shape[2] = {2, 3};
  td_tensor *x = td_tensor_new(TD_F32, 2, shape, &err);
  cr_assert_not_null(x);
  for (int i = 0; i < 6; i++) ((float *)x->data)[i] = (float)i;
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = b;
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = on_print;
  printed[0] = 0;
  td_tensor **outs = NULL;
  int rc = td_drive_run(P->g, &o, &x, NULL, &io, &outs, &err, NULL);
  cr_assert_eq(rc, 0, "%s: %s", td_backend_name(b), err.msg);
  td_tensor *y = outs[0];
  td_free(outs);
  td_tensor_release(x);
  return y;
}

Test(driver, backend_names) {
  td_backend b = TD_BACKEND_EAGER;
  cr_expect_eq(td_backend_parse("cpu", &b), 0);
  cr_expect_eq(b, TD_BACKEND_CPU);
  cr_expect_eq(td_backend_parse("cuda", &b), 0);
  cr_expect_eq(b, TD_BACKEND_CUDA);
  /* only devices are names: eager is what no --device means */
  cr_expect_eq(td_backend_parse("eager", &b), -1);
  cr_expect_eq(td_backend_parse("gpu", &b), -1);
  cr_expect_eq(td_backend_parse("", &b), -1);
  cr_expect_eq(td_backend_parse(NULL, &b), -1);
  cr_expect_eq(b, TD_BACKEND_CUDA, "a failed parse leaves the backend alone");
  cr_expect_str_eq(td_backend_name(TD_BACKEND_EAGER), "eager");
  cr_expect_str_eq(td_backend_name(TD_BACKEND_CPU), "cpu");
  cr_expect_str_eq(td_backend_name(TD_BACKEND_CUDA), "cuda");
}

Test(driver, dump_stages) {
  cr_expect_eq(td_dump_stage("fold", 4) & ~TD_DUMP_PASSES, 0u);
  cr_expect_neq(td_dump_stage("fold", 4), 0u);
  cr_expect_neq(td_dump_stage("dce", 3), td_dump_stage("fold", 4));
  cr_expect_eq(td_dump_stage("fused", 5), TD_DUMP_FUSED);
  cr_expect_eq(td_dump_stage("c,fused", 1), TD_DUMP_C, "the length bounds the name");
  cr_expect_eq(td_dump_stage("cuda", 4), TD_DUMP_CUDA);
  cr_expect_eq(td_dump_stage("ir", 2), 0u, "the IR is the commands' own dump");
  cr_expect_eq(td_dump_stage("bogus", 5), 0u);
}

/* td_lower writes the graph after the passes asked for and the plan. */
Test(driver, lower_writes_its_dumps) {
  prog P;
  load(&P);
  char buf[1 << 14];
  FILE *f = fmemopen(buf, sizeof buf, "w");
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.dumps = td_dump_stage("fold", 4) | TD_DUMP_FUSED;
  o.dump = f;
  o.diags = &P.d;
  td_err err;
  td_plan *plan = td_lower(P.g, &o, NULL, &err);
  fclose(f);
  cr_assert_not_null(plan, "%s", err.msg);
  cr_expect_gt(plan->n_kernels, 0);
  cr_expect(strstr(buf, "# after fold\ngraph f("), "%s", buf);
  cr_expect_null(strstr(buf, "# after dce"), "%s", buf);
  cr_expect(strstr(buf, plan->kernels[0].name), "the plan names its kernels: %s", buf);
  /* without options nothing is written and the plan is the same */
  td_plan *again = td_lower(P.g, NULL, NULL, &err);
  cr_assert_not_null(again);
  cr_expect_eq(again->n_kernels, plan->n_kernels);
  td_arena_free(P.a);
}

/* The interpreter and the CPU compiler, through td_drive_run: the same
 * values (2x + 1 is exact in f32) and the same print() text. */
Test(driver, eager_and_cpu_agree) {
  setenv("TDSL_CACHE", "0", 1);
  prog P;
  load(&P);
  td_tensor *e = run_on(&P, TD_BACKEND_EAGER);
  char eager_printed[4096];
  strcpy(eager_printed, printed);
  td_tensor *c = run_on(&P, TD_BACKEND_CPU);
  cr_expect_str_eq(eager_printed, "sum 15.0000\n");
  cr_expect_str_eq(printed, eager_printed);
  cr_assert_eq(c->numel, 6);
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(((float *)e->data)[i], 2.0f * (float)i + 1.0f);
    cr_expect_eq(((float *)c->data)[i], ((float *)e->data)[i], "element %d", i);
  }
  td_tensor_release(e);
  td_tensor_release(c);
  td_arena_free(P.a);
}

/* A compiled backend refuses to trace, naming the option to drop, before
 * it lowers or compiles anything. */
Test(driver, compiled_backends_refuse_tracing) {
  prog P;
  load(&P);
  static const struct { td_backend b; const char *opt; } cases[] = {
    {TD_BACKEND_CPU, "--compiled"}, {TD_BACKEND_CUDA, "--device cuda"}};
  for (int k = 0; k < 2; k++) {
    td_drive_opts o;
    memset(&o, 0, sizeof o);
    o.backend = cases[k].b;
    td_run_opts io;
    memset(&io, 0, sizeof io);
    io.trace = k == 0;
    io.check_numerics = k == 1;
    td_tensor **outs = NULL;
    td_err err;
    cr_expect_eq(td_drive_run(P.g, &o, NULL, NULL, &io, &outs, &err, NULL), -1);
    char want[160];
    snprintf(want, sizeof want, "--trace and --check-numerics run op by op: use them without %s", cases[k].opt);
    cr_expect_str_eq(err.msg, want);
    cr_expect_null(outs);
  }
  td_arena_free(P.a);
}

Test(driver, the_interpreter_builds_nothing) {
  prog P;
  load(&P);
  td_build_opts bo;
  memset(&bo, 0, sizeof bo);
  bo.dir = "/nonexistent/never-written";
  bo.prefix = "x";
  td_err err;
  cr_expect_eq(td_drive_build(P.p, TD_BACKEND_EAGER, &bo, &err), -1);
  cr_expect_str_eq(err.msg, "the eager backend builds no artifact (cpu or cuda)");
  td_arena_free(P.a);
}

/* A training step on the CPU backend: its parameters and optimizer state
 * are the caller's tensors, updated in place (the same objects and data
 * pointers after every call), the values are the step's (checked against
 * a hand computation of SGD with momentum), and after the first call
 * every call makes the same few allocations: the returned loss, nothing
 * per parameter (counted through runtime/mem.c's hook). */
static const char step_text[] =
    "import optim\n"
    "model Net {\n"
    "  param w: f32[64, 64] = full(0.5)\n"
    "  param b: f32[64] = zeros()\n"
    "  fn forward(x) { x @ transpose(w) + b }\n"
    "}\n"
    "model T {\n"
    "  net = Net()\n"
    "  opt = optim.SGD(net, lr = 0.1, momentum = 0.5)\n"
    "  fn loss(x) { sum(net(x)) }\n"
    "  fn step(x: f32[B, 64]) -> f32[] {\n"
    "    let (l, g) = value_and_grad(loss, wrt = net)(x)\n"
    "    opt.step(g)\n"
    "    l\n"
    "  }\n"
    "}\n";

Test(driver, a_step_updates_its_parameters_in_place) {
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  td_program_add_search_dir(P.p, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(P.p, "step.td", step_text), 0);
  P.g = td_program_lower(P.p, "T.step");
  cr_assert_not_null(P.g);
  cr_assert_eq(P.g->n_updates, 5, "w, b, their momentum buffers and the step count");
  td_err err;
  td_tensor **params = td_calloc((size_t)P.g->n_params, sizeof *params);
  cr_assert_eq(td_make_params(P.g, NULL, 0, params, &err), 0, "%s", err.msg);
  void *data[16];
  for (int i = 0; i < P.g->n_params; i++) data[i] = params[i]->data;
  int64_t shape[2] = {2, 64};
  td_tensor *x = td_tensor_new(TD_F32, 2, shape, &err);
  for (int i = 0; i < 128; i++) ((float *)x->data)[i] = 1.0f;
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_CPU;
  td_prepared *pp = td_prepare(P.g, &o, &err);
  cr_assert_not_null(pp, "%s", err.msg);
  td_run_opts io;
  memset(&io, 0, sizeof io);
  long per_call[3];
  /* by hand: loss = sum(x @ w.T + b) = 8192 w + 128 b for x = ones [2, 64]
   * and w, b constant; d loss / d w = 2 (B) everywhere, d / d b = 2; SGD with
   * momentum 0.5 (PyTorch's: the first buffer is the gradient, then
   * buf = 0.5 buf + g): w goes 0.5, 0.3, 0.0, -0.35 and b 0, -0.2, -0.5, -0.85 */
  const float want_w[4] = {0.5f, 0.3f, 0.0f, -0.35f}, want_b[4] = {0.0f, -0.2f, -0.5f, -0.85f};
  td_mem_fail_after(LONG_MAX);   /* count allocations, fail none */
  for (int call = 0; call < 3; call++) {
    long before = td_mem_requests();
    td_tensor **outs = NULL;
    cr_assert_eq(td_prepared_run(pp, &x, params, &io, &outs, &err, NULL), 0, "%s", err.msg);
    per_call[call] = td_mem_requests() - before;
    /* the loss of the weights the call began with: sum(x @ w.T + b) */
    cr_expect_float_eq(((float *)outs[0]->data)[0], 8192 * want_w[call] + 128 * want_b[call], 1e-2, "call %d", call);
    td_tensor_release(outs[0]);
    td_free(outs);
    for (int i = 0; i < P.g->n_params; i++) cr_expect_eq(params[i]->data, data[i], "parameter %d moved", i);
  }
  for (int i = 0; i < P.g->n_params; i++)
    if (!strcmp(P.g->nodes[P.g->params[i]].name, "net.w"))
      cr_expect_float_eq(((float *)params[i]->data)[7], want_w[3], 1e-6);
  td_mem_fail_after(0);
  cr_expect_eq(per_call[1], per_call[2], "calls 2 and 3 allocate alike");
  /* the loss (its header and data) and the arrays of outputs: 6; with the
   * updates copied instead, each update's output tensor adds 2 (14) */
  cr_expect_leq(per_call[2], 6, "a call allocates its loss only, not per parameter (%ld)", per_call[2]);
  td_prepared_free(pp);
  for (int i = 0; i < P.g->n_params; i++) td_tensor_release(params[i]);
  td_free(params);
  td_tensor_release(x);
  td_arena_free(P.a);
}

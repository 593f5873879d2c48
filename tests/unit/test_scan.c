/* test_scan.c - scan (lang/builtins_scan.c, the SCAN node of ops.def, the
 * interpreter's run_scan): one lowered graph with a symbolic number of
 * steps serves every length, 0 and 1 included, against a naive float64
 * loop written here; the verifier refuses a SCAN whose outputs were
 * tampered with; --trace and --check-numerics name the step; random draws
 * differ from step to step; the compiled backends refuse a scan, naming
 * where it is. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

static const char prog_text[] =
    "fn cell(h, x, w) {\n"
    "  let h2 = tanh(h @ w + x)\n"
    "  (h2, sum(h2, axis = 1))\n"
    "}\n"
    "fn rnn(h0: f32[B, H], xs: f32[T, B, H], w: f32[H, H]) {\n"
    "  scan(cell, h0, xs, args = w)\n"
    "}\n"
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

/* Runs graph g eagerly; rc, outputs in *outs, the error in *err. */
static int run(const td_graph *g, td_tensor **in, td_run_opts *io, td_tensor ***outs, td_err *err, td_span *sp) {
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_EAGER;
  td_run_opts dflt;
  memset(&dflt, 0, sizeof dflt);
  return td_drive_run(g, &o, in, NULL, io ? io : &dflt, outs, err, sp);
}

Test(scan, one_graph_serves_every_number_of_steps) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "rnn");
  cr_assert_not_null(g);
  const int B = 2, H = 3;
  const int64_t lengths[] = {0, 1, 7, 300};
  for (int li = 0; li < 4; li++) {
    int64_t T = lengths[li];
    double *h0 = malloc(sizeof(double) * B * H), *xs = malloc(sizeof(double) * (size_t)(T * B * H + 1));
    double w[9], h[6], hn[6];
    for (int i = 0; i < B * H; i++) h0[i] = 0.1 * i - 0.2;
    for (int64_t i = 0; i < T * B * H; i++) xs[i] = sin(0.37 * (double)i);
    for (int i = 0; i < 9; i++) w[i] = 0.05 * i - 0.2;
    int64_t sh0[2] = {B, H}, sxs[3] = {T, B, H}, sw[2] = {H, H};
    td_tensor *in[3] = {tensor(2, sh0, h0), tensor(3, sxs, xs), tensor(2, sw, w)};
    td_tensor **outs = NULL;
    td_err err;
    cr_assert_eq(run(g, in, NULL, &outs, &err, NULL), 0, "T=%lld: %s", (long long)T, err.msg);
    /* the reference: the loop in float64 */
    memcpy(h, h0, sizeof h);
    td_tensor *hc = outs[0], *ys = outs[1];
    cr_assert_eq(ys->rank, 2);
    cr_assert_eq(ys->shape[0], T);
    cr_assert_eq(ys->shape[1], B);
    for (int64_t t = 0; t < T; t++) {
      for (int b = 0; b < B; b++) {
        double s = 0;
        for (int j = 0; j < H; j++) {
          double acc = xs[(t * B + b) * H + j];
          for (int k = 0; k < H; k++) acc += h[b * H + k] * w[k * H + j];
          hn[b * H + j] = tanh(acc);
          s += hn[b * H + j];
        }
        cr_expect(fabs(((float *)ys->data)[t * B + b] - s) < 1e-4, "T=%lld ys[%lld][%d]: %g, expected %g",
                  (long long)T, (long long)t, b, ((float *)ys->data)[t * B + b], s);
      }
      memcpy(h, hn, sizeof h);
    }
    for (int i = 0; i < B * H; i++)
      cr_expect(fabs(((float *)hc->data)[i] - h[i]) < 1e-4, "T=%lld h[%d]: %g, expected %g", (long long)T, i,
                ((float *)hc->data)[i], h[i]);
    td_tensor_release(outs[0]);
    td_tensor_release(outs[1]);
    td_free(outs);
    for (int i = 0; i < 3; i++) td_tensor_release(in[i]);
    free(h0);
    free(xs);
  }
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

Test(scan, the_compilers_refuse_it_saying_where) {
  prog P;
  load(&P);
  td_graph *g = td_program_lower(P.p, "rnn");
  cr_assert_not_null(g);
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_CPU;
  o.diags = &P.d;
  td_err err;
  td_plan *plan = td_lower(g, &o, NULL, &err);
  cr_expect_null(plan);
  cr_expect(strstr(err.msg, "entry 'rnn' uses scan (scan.td:6:3)") && strstr(err.msg, "without --compiled"), "%s",
            err.msg);
  unload(&P);
}

/* session_explain.c - the session's commands that only look: :ir,
 * :explain and :time.
 *
 * Each builds the graph of its input as an eval would (its shown values
 * are the graph's outputs), answers, and rolls the input back, so nothing
 * is bound.  :explain is the driver's `tdsl explain` report of that graph;
 * :time prepares it once for the session's backend (compiling it, for the
 * compiled ones) and then times runs of the prepared graph.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "driver/session_impl.h"

/* Builds the graph of text for a listing (its values are the outputs). */
static int listing_graph(td_session *s, lowering *L, const char *text, int first_line,
                         const char *what) {
  int rc = tds_lower_text(s, L, text, first_line);
  if (rc == 0 && !tds_last_value(s, L, what)) rc = -1;
  if (rc == 0) rc = tds_finish_graph(s, L, 0, 1);
  return rc;
}

int td_session_ir(td_session *s, const char *text, int first_line, FILE *out) {
  lowering L;
  int rc = listing_graph(s, &L, text, first_line, ":ir");
  if (rc == 0) td_graph_print(L.run, &s->diags, out);
  tds_rollback(s, &L);
  tds_end_input(&L);
  return rc;
}

int td_session_explain(td_session *s, const char *text, int first_line, FILE *out) {
  lowering L;
  int rc = listing_graph(s, &L, text, first_line, ":explain");
  if (rc == 0) {
    td_explain_opts o;
    memset(&o, 0, sizeof o);
    o.fmt = TD_EXPLAIN_TEXT;
    o.diags = &s->diags;
    td_err err;
    if (td_drive_explain(L.run, NULL, &o, 0, out, NULL, &err))
      fprintf(out, "the compiler cannot plan this graph: %s\n", err.msg);
  }
  tds_rollback(s, &L);
  tds_end_input(&L);
  return rc;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int td_session_time(td_session *s, const char *text, int first_line, int reps, int warmup,
                    td_session_timing *t) {
  lowering L;
  td_err err;
  memset(t, 0, sizeof *t);
  double t0 = now_s();
  int rc = listing_graph(s, &L, text, first_line, ":time");
  t->build_s = now_s() - t0;
  if (rc == 0) t->n_ops = L.run->n_nodes;
  if (rc == 0 && !L.params && tds_make_params(s, &L, &err)) { /* not part of any run */
    td_error(&s->diags, tds_no_span(), "%s", err.msg);
    rc = -1;
  }
  td_prepared *prep = NULL;
  if (rc == 0 && !s->run) { /* compiled once, before any run */
    td_drive_opts d = s->drive;
    d.diags = &s->diags;
    double p0 = now_s();
    if (!(prep = td_prepare(L.run, &d, &err))) {
      td_error(&s->diags, tds_no_span(), "%s", err.msg);
      rc = -1;
    }
    t->prepare_s = now_s() - p0;
  }
  for (int i = 0; rc == 0 && i < warmup; i++) rc = tds_run_once(s, &L, 1, prep);
  double total = 0;
  for (int i = 0; rc == 0 && (reps > 0 ? i < reps : i < 1000 && (i == 0 || total < 0.5)); i++) {
    double r0 = now_s();
    rc = tds_run_once(s, &L, 1, prep);
    double dt = now_s() - r0;
    if (rc) break;
    if (i == 0 || dt < t->run_best_s) t->run_best_s = dt;
    total += dt;
    t->reps = i + 1;
  }
  if (t->reps) t->run_mean_s = total / t->reps;
  td_prepared_free(prep);
  tds_rollback(s, &L);
  tds_end_input(&L);
  return rc;
}


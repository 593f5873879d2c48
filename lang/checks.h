/* checks.h - the run-time size checks of a graph (runtime/sizecheck.h):
 * derived once from the graph as written, carried through the optimiser
 * (td_graph.checks) and evaluated by every backend once per set of sizes,
 * before anything runs.  docs/compiler.md, "Run-time checks", lists them. */
#ifndef TD_CHECKS_H
#define TD_CHECKS_H

#include "lang/ir.h"
#include "runtime/sizecheck.h"

typedef struct td_check {
  td_sizecheck c;            /* first: td_sizecheck_run walks these by stride */
  td_span span;              /* the node the interpreter would fail at */
} td_check;

/* The checks of g, in node order (for one node: its sizes, its element
 * count, then what its op needs), dropping what holds for every size;
 * allocated in a.  Returns their number, or -1 when out of memory. */
int td_checks_derive(const td_graph *g, td_arena *a, td_check **out);
/* Evaluates them for symvals: 0, or -1 with the first failure's message in
 * err and its source in *span (span may be NULL). */
int td_checks_run(const td_graph *g, const td_check *checks, int n, const int64_t *symvals, td_err *err,
                  td_span *span);
/* td_checks_run with g's own checks (td_graph.checks), or with checks
 * derived afresh when g has none (a graph that did not go through the
 * optimiser, as the interpreter runs it). */
int td_checks_run_graph(const td_graph *g, const int64_t *symvals, td_err *err, td_span *span);
/* td_dim_eval that sets *overflow when the value does not fit an int64. */
int64_t td_dim_eval_ovf(const td_graph *g, td_dim d, const int64_t *symvals, int *overflow);

#endif

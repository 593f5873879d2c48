/* interp.h - the eager interpreter: the reference semantics of tdsl.
 *
 * Evaluates a td_graph node by node, materialising every value as a
 * td_tensor.  PRINT nodes print as soon as they run (through a callback: the
 * library never writes to stdout itself).  Optional tracing reports every op
 * with its source location, shape, dtype and min/max/mean, and
 * check_numerics stops at the first op that produces a NaN or an Inf.
 */
#ifndef TD_INTERP_H
#define TD_INTERP_H

#include <signal.h>
#include <stdio.h>
#include "lang/ir.h"
#include "runtime/io.h"

typedef struct td_interp_opts {
  /* Called with the complete text of one print (ends with '\n'). */
  void (*on_print)(void *ud, const char *text);
  /* Called once per executed node when tracing (one line, ends with '\n'). */
  void (*on_trace)(void *ud, const char *line);
  void *ud;
  int trace;             /* call on_trace for every node */
  int check_numerics;    /* fail at the first node producing NaN/Inf */
  uint64_t call_index;   /* mixed into rand streams: which call this is */
  int64_t print_threshold; /* elements above which prints summarise (1000) */
  /* Sources for trace locations ("file:line:col"); NULL prints "line:col". */
  const td_diags *diags;
  /* Optional: when *interrupt becomes non-zero (a SIGINT handler sets it),
   * the run stops before the next node with the error "interrupted". */
  volatile sig_atomic_t *interrupt;
} td_interp_opts;

/* Binds the graph's symbolic sizes from the shapes of `inputs` (one tensor
 * per INPUT node, in argument order) and checks dtypes and every dim.
 * symvals must hold g->n_syms entries.  A mismatch is an error naming the
 * argument, the expected type (with its symbols) and the actual one. */
int td_bind_inputs(const td_graph *g, td_tensor *const *inputs, int n_inputs,
                   int64_t *symvals, td_err *err);

/* Builds one tensor per PARAM node (in g->params order) into params[].
 * With weights == NULL, each is initialised from its recipe (attr.init) with
 * the seed `seed` and a stream derived from its name.  With weights, every
 * parameter must be present with the right dtype and shape and no extra
 * entries may exist; otherwise the error lists every problem. */
int td_make_params(const td_graph *g, const td_tensor_map *weights, uint64_t seed,
                   td_tensor **params, td_err *err);

/* Checks what a weights file holds (have: tensors or header-only tensors,
 * by name) against g's parameters, as td_make_params does: 0, or -1 with
 * every problem, under "FILE does not fit <g's name>:" when file is not
 * NULL (runtime/sig.h's td_sig_check_weights). */
int td_check_weights(const td_graph *g, const char *file, const td_named_tensor *have, int n_have,
                     td_err *err);

/* Runs the graph.  inputs: one per INPUT node; params: one per PARAM node.
 * On success *outputs is a malloc'd array of g->n_outputs tensors (owned by
 * the caller: release each, then free the array).  On failure returns -1;
 * err says what went wrong and, when a node is to blame, *err_span (if not
 * NULL) is set to its source span. */
int td_interp_run(const td_graph *g, td_tensor *const *inputs, td_tensor *const *params,
                  const td_interp_opts *opts, td_tensor ***outputs,
                  td_err *err, td_span *err_span);

#endif

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

#include "lang/ir.h"
#include "lang/params.h"
#include "runtime/io.h"
#include "runtime/run_opts.h"

/* Runs the graph.  inputs: one per INPUT node; params: one per PARAM node.
 * On success *outputs is a malloc'd array of g->n_outputs tensors (owned by
 * the caller: release each, then free the array).  On failure returns -1;
 * err says what went wrong and, when a node is to blame, *err_span (if not
 * NULL) is set to its source span. */
int td_interp_run(const td_graph *g, td_tensor *const *inputs, td_tensor *const *params,
                  const td_run_opts *opts, td_tensor ***outputs,
                  td_err *err, td_span *err_span);

#endif

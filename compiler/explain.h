/* explain.h - `tdsl explain`: what the compiler does with each entry point.
 *
 * For one graph: the graph and break counts (always 1 and 0: tdsl has no
 * construct that splits a graph), the op counts before and after the
 * passes and after fusion, every kernel with the ops it fuses and their
 * source lines, its iteration space, the buffers it reads and writes, bytes
 * moved and FLOPs, and the memory plan's peak.  Sizes print symbolically
 * ("2048*N + 64"), or as numbers when every symbol has a value in sizes.
 * Formats: text, JSON (one object per entry point, see docs/compiler.md)
 * and Graphviz DOT, op by op (one cluster per kernel) or one box per
 * kernel.  Kernel listings count repeated ops ("slice x25").
 */
#ifndef TD_EXPLAIN_H
#define TD_EXPLAIN_H

#include <stdio.h>
#include "compiler/passes.h"
#include "compiler/plan.h"

/* TD_EXPLAIN_DOT: every op (its shape, dtype and source line) in a cluster
 * per kernel; TD_EXPLAIN_DOT_KERNELS: one box per kernel listing its ops
 * counted ("slice x25", with the multiplication sign), edges through the
 * buffers between kernels. */
typedef enum td_explain_fmt { TD_EXPLAIN_TEXT, TD_EXPLAIN_JSON, TD_EXPLAIN_DOT, TD_EXPLAIN_DOT_KERNELS } td_explain_fmt;

typedef struct td_explain_opts {
  td_explain_fmt fmt;
  const td_diags *diags;      /* sources for file:line of each op (may be NULL) */
  const char *const *size_names;  /* symbol values for numeric sizes */
  const int64_t *size_values;
  int n_sizes;
} td_explain_opts;

/* Writes the explanation of one entry point: `plan` is the plan of the
 * optimised graph, `st` the statistics of td_optimize (may be NULL), index
 * the entry's position among those written (0 for the first: JSON
 * separators and DOT names depend on it).  The caller writes the text
 * around all entries with td_explain_begin/end. */
void td_explain(const td_plan *plan, const td_opt_stats *st, const td_explain_opts *o,
                int index, FILE *out);

/* The text around all entries: "[" and "]\n" for JSON, "digraph" for DOT. */
void td_explain_begin(const td_explain_opts *o, FILE *out);
void td_explain_end(const td_explain_opts *o, FILE *out);

#endif

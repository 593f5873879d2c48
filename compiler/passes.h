/* passes.h - graph-to-graph optimisation passes of the compiler.
 *
 * Every pass reads one td_graph and builds a NEW graph in the same arena
 * (the input graph is left untouched), so a pass never has to patch uses in
 * place and the result is again in topological order with dense ids.  The
 * new graph shares nothing mutable with the old one: its symbol and dim
 * tables are copies, so interning a new size in one never changes the other.
 *
 * Passes keep every INPUT and PARAM node (they are the entry's interface)
 * and every PRINT node, in order; they never change a graph output's dtype
 * or shape.  td_optimize runs the whole pipeline, verifying the graph after
 * every pass.
 */
#ifndef TD_PASSES_H
#define TD_PASSES_H

#include "lang/ir.h"

/* One pass: returns the new graph, or NULL with err filled (out of memory). */
typedef td_graph *(*td_pass_fn)(const td_graph *g, td_err *err);

/* Rank-0 elementwise nodes whose inputs are constants become CONST nodes
 * (computed by ops.def's scalar evaluator, lang/opeval.h, from the same
 * expressions as the interpreter's loops, so the value is exactly what
 * eager mode computes); DIM nodes of literal sizes become CONST. */
td_graph *td_pass_fold(const td_graph *g, td_err *err);
/* Common subexpressions: two nodes with the same op, type, inputs and
 * attributes become one (random ops included: they are pure functions of
 * seed, stream and index).  PRINT, INPUT and PARAM nodes are never merged. */
td_graph *td_pass_cse(const td_graph *g, td_err *err);
/* Dead code: keeps what the outputs and the prints need, plus every INPUT
 * and PARAM node and every scan whose step prints. */
td_graph *td_pass_dce(const td_graph *g, td_err *err);
/* A scan whose inputs and steps are another's, later scan's, and whose
 * body is the first outputs of that one's (value_and_grad's forward and
 * the gradient's forward with its carries stacked, lang/grad.c): the
 * later scan moves to the earlier one's place and serves both, so the
 * loop runs once.  A body that prints is left alone. */
td_graph *td_pass_scan_merge(const td_graph *g, td_err *err);
/* Algebraic simplification: x*1, 1*x, x+0, 0+x, x-0, x/1, -(-x), cast to
 * the same dtype, where(c, x, x), permute of permute (identity removed),
 * reshape of reshape, reshape/broadcast to the same shape, full slices.
 * x + 0 -> x turns -0.0 into itself rather than +0.0 (documented). */
td_graph *td_pass_simplify(const td_graph *g, td_err *err);
/* f16/bf16 become storage-only: every op on them other than CAST is
 * rewritten to compute in f32 between CASTs (legalize.c). */
td_graph *td_pass_legalize(const td_graph *g, td_err *err);
/* CONV becomes an im2col matmul of primitives the code generators have
 * (lower_conv.c); g itself when it has no CONV. */
td_graph *td_pass_lower_conv(const td_graph *g, td_err *err);

/* For passes that rebuild a graph: a new, empty graph in g's arena with
 * copies of g's symbol and dim tables (NULL when memory runs out). */
td_graph *td_graph_clone_tables(const td_graph *g);

/* Called after a pass with the pass's name and the graph it produced. */
typedef void (*td_pass_dump_fn)(void *ud, const char *pass, const td_graph *g);

typedef struct td_opt_opts {
  td_pass_dump_fn dump;  /* NULL: no dumps */
  void *ud;
  /* Passes to dump (bit i = td_pass_names()[i]); ~0u = all. */
  unsigned dump_mask;
} td_opt_opts;

/* Statistics of one td_optimize run (for `tdsl explain`). */
typedef struct td_opt_stats {
  int nodes_before, nodes_after;   /* all nodes */
  int ops_before, ops_after;       /* compute nodes (see td_graph_count_ops) */
} td_opt_stats;

/* The pass pipeline, top to bottom (see passes.c).  *out receives the
 * optimised graph (a new graph in g's arena).  Returns 0, or -1 with err
 * filled when a pass runs out of memory or the verifier rejects a pass's
 * result (an internal compiler error naming the pass).  opts and stats may
 * be NULL. */
int td_optimize(const td_graph *g, const td_opt_opts *opts, td_graph **out, td_opt_stats *stats,
                td_err *err);

/* Names of the passes as accepted by --dump= ("fold", "cse", ...), NULL
 * terminated; td_pass_index gives a name's bit in dump_mask, or -1. */
const char *const *td_pass_names(void);
int td_pass_index(const char *name, size_t len);

/* Compute nodes: everything but INPUT, PARAM, CONST, DIM and PRINT. */
int td_graph_count_ops(const td_graph *g);

#endif

/* plan_scan.c - the plans of scan bodies.
 *
 * A SCAN node is a kernel of its own (TD_KERN_SCAN, fuse.c): its inputs are
 * in memory, its outputs (the SCAN_OUT nodes right after it) are buffers it
 * writes, and what it runs is the plan of its body, once per step.  The
 * body is optimised and planned here as a graph of its own, the way an
 * entry point is: the passes and the fuser see one step, so the code is
 * generated once for every trip count.
 *
 * A body's sizes are its outermost graph's (ir.h: td_graph_root).  The
 * body planned here is a copy of the body whose size tables are the
 * planned graph's own (which begin with the tables the body was made
 * with: each pass copies them and may only add), detached from its
 * parent: its passes and its plan intern what they make into its own
 * copy, and its sizes are evaluated with the outer plan's symbol values.
 * A scan nested in a body is planned the same way from the body's plan.
 */
#include "compiler/plan_impl.h"

#include <string.h>

#include "compiler/passes.h"

int td_plan_first_scan(const td_plan *p) {
  for (int k = 0; k < p->n_kernels; k++)
    if (p->kernels[k].kind == TD_KERN_SCAN) return p->kernels[k].root;
  return -1;
}

const td_node *td_plan_scan_print(const td_plan *p) {
  for (int k = 0; k < p->n_kernels; k++) {
    const td_plan *b = p->kernels[k].kind == TD_KERN_SCAN ? p->kernels[k].body : NULL;
    if (!b) continue;
    for (int i = 0; i < b->g->n_nodes; i++)
      if (b->g->nodes[i].op == TD_IR_PRINT) return &b->g->nodes[i];
    const td_node *nested = td_plan_scan_print(b);
    if (nested) return nested;
  }
  return NULL;
}

static td_plan *plan_body(const td_plan *p, int scan, td_err *err) {
  const td_graph *b = p->g->nodes[scan].attr.body;
  td_graph *copy = td_arena_alloc(p->g->arena, sizeof *copy);
  if (!copy) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  *copy = *b;
  copy->parent = NULL;
  copy->syms = p->g->syms;
  copy->n_syms = copy->cap_syms = p->g->n_syms;
  copy->dims = p->g->dims;   /* read only: interning past cap_dims makes copy's own table */
  copy->n_dims = copy->cap_dims = p->g->n_dims;
  copy->checks = NULL;
  copy->n_checks = 0;
  copy->has_checks = 0;
  td_graph *opt;
  if (td_optimize(copy, NULL, &opt, NULL, err)) return NULL;
  return td_plan_build(opt, err);
}

int tdc_plan_scans(td_plan *p, td_err *err) {
  for (int k = 0; k < p->n_kernels; k++) {
    td_kernel *K = &p->kernels[k];
    if (K->kind == TD_KERN_SCAN && !(K->body = plan_body(p, K->root, err))) return -1;
  }
  return 0;
}

/* What a scan kernel moves: its inputs once, its outputs once (the body's
 * own traffic per step is its plan's, in the body's size table). */
/* Size d of the planned body graph b as a size of g (b's tables begin with
 * g's, so a literal or an early polynomial is the same; a later one is
 * interned into g). */
static td_dim outer_dim(td_graph *g, const td_graph *b, td_dim d) {
  if (TD_DIM_IS_CONST(d) || TD_DIM_IS_BAD(d)) return d;
  if (-d - 1 < g->n_dims) return d;
  return -d - 1 < b->n_dims ? td_dim_intern(g, &b->dims[-d - 1]) : TD_DIM_BAD;
}

void tdc_scan_costs(td_plan *p, td_kernel *k) {
  td_graph *g = p->g;
  k->bytes_read = k->bytes_written = k->flops = 0;
  /* the arithmetic: the body's kernels, once per step */
  if (k->body) {
    td_dim per_step = 0;
    for (int i = 0; i < k->body->n_kernels; i++)
      per_step = td_dim_add(g, per_step, outer_dim(g, k->body->g, k->body->kernels[i].flops));
    k->flops = td_dim_mul(g, per_step, g->nodes[k->root].attr.dim);
  }
  for (int i = 0; i < k->n_reads; i++)
    k->bytes_read = td_dim_add(g, k->bytes_read, td_node_bytes(g, &g->nodes[k->reads[i]]));
  for (int o = k->root + 1; o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT && g->nodes[o].in[0] == k->root; o++)
    k->bytes_written = td_dim_add(g, k->bytes_written, td_node_bytes(g, &g->nodes[o]));
}

/* plan_verify.c - the kernel plan's verifier (td_plan_verify).
 *
 * td_plan_build ends by calling td_plan_verify, so every plan any backend
 * runs (eager explain, the CPU compiler, CUDA, built artifacts) has been
 * checked once, the way QBE checks its SSA between passes.  The verifier
 * re-derives what the plan claims from the graph, independently of how
 * fuse.c and plan.c made it, in four groups, in this order, stopping at
 * the first failure:
 *
 *   kernels   tables in range, kernels in execution order, every input of
 *             a fused op evaluated in the same kernel or read from the
 *             buffer of an earlier kernel (or a leaf);
 *   spaces    the ops of one kernel agree on its iteration space: a
 *             pointwise kernel runs over its root's shape, a matmul's
 *             epilogue is elementwise at the matmul's shape, and every
 *             reduction of a row kernel reduces the kernel's axes of an
 *             input of the kernel's space, in a pass after the reductions
 *             it needs, and is read only as one value per row;
 *   outputs   the graph's outputs, then every printed tensor in program
 *             order, each produced by a kernel (or an argument);
 *   buffers   one per materialised value, of exactly its bytes; temporaries
 *             fit their arena slots, no two whose live ranges overlap share
 *             one, offsets and totals add up; a matmul operand's view stays
 *             inside its buffer.
 *
 * A failure is an internal error (the compiler made a wrong plan, the
 * program is not at fault) naming the graph, the kernel, the op and its
 * source line.  docs/compiler.md ("The plan verifier") lists what is not
 * checked.
 */
#include "compiler/plan_impl.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"

typedef struct vctx {
  const td_plan *p;
  td_graph *g;
  td_err *err;
  char *mark;        /* per node: IN_NODES / IN_READS for the kernel being checked */
  int *dep;          /* per node: the last reduction stage it depends on (row kernels) */
  int *stage;        /* per node: its pass in the row kernel being checked (1-based), 0 */
} vctx;

enum { IN_NODES = 1, IN_READS = 2, AFTER_MM = 4, HANDED_BACK = 8 };

/* "internal error: the kernel plan of f is wrong: kernel k1_sum, op sum %7
 * (line 3:17): ..." ; k or node may be -1.  Always -1. */
static int vfail(vctx *v, int k, int node, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int vfail(vctx *v, int k, int node, const char *fmt, ...) {
  char where[256] = "";
  size_t w = 0;
  if (k >= 0 && k < v->p->n_kernels)
    w += (size_t)snprintf(where, sizeof where, ", kernel %s", v->p->kernels[k].name ? v->p->kernels[k].name : "?");
  if (node >= 0 && node < v->g->n_nodes) {
    const td_node *n = &v->g->nodes[node];
    if (n->span.line > 0)
      snprintf(where + w, sizeof where - w, ", op %s %%%d (line %d:%d)", td_ops[n->op].name, node,
               n->span.line, n->span.col);
    else
      snprintf(where + w, sizeof where - w, ", op %s %%%d (builtin)", td_ops[n->op].name, node);
  }
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return td_err_set(v->err, "internal error: the kernel plan of %s is wrong (plan verifier)%s: %s",
                    v->g->name, where, msg);
}

static const td_node *ND(const vctx *v, int id) { return &v->g->nodes[id]; }

static int same_shape(const td_dim *a, int ra, const td_dim *b, int rb) {
  if (ra != rb) return 0;
  for (int i = 0; i < ra; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* Does shape (s, r) broadcast to (t, rt): right-aligned, each dim equal or 1? */
static int bcasts_to(const td_dim *s, int r, const td_dim *t, int rt) {
  if (r > rt) return 0;
  for (int i = 0; i < r; i++)
    if (s[i] != 1 && s[i] != t[rt - r + i]) return 0;
  return 1;
}

static td_dim numel(td_graph *g, const td_dim *shape, int rank) {
  td_dim n = 1;
  for (int i = 0; i < rank; i++) n = td_dim_mul(g, n, shape[i]);
  return n;
}

static const char *dstr(const vctx *v, td_dim d, char *buf, size_t n) { return td_dim_str(v->g, d, buf, n); }

/* ---- kernels: tables and dataflow ---------------------------------------------- */

static int check_tables(vctx *v) {
  const td_plan *p = v->p;
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *K = &p->kernels[k];
    if (K->root < 0 || K->root >= v->g->n_nodes) return vfail(v, k, -1, "its root %%%d is not a node", K->root);
    if (K->n_nodes < 1 || K->nodes[K->n_nodes - 1] != K->root)
      return vfail(v, k, K->root, "the root is not the last node it evaluates");
    for (int i = 0; i < K->n_nodes; i++) {
      int n = K->nodes[i];
      if (n < 0 || n > K->root || (i && n <= K->nodes[i - 1]))
        return vfail(v, k, -1, "its node list is not ascending ids up to the root");
      if (p->kernel_of[n] != -1 && p->kernel_of[n] != k)
        return vfail(v, k, n, "the op belongs to kernel %d", p->kernel_of[n]);
      td_op op = ND(v, n)->op;
      if (op == TD_IR_INPUT || op == TD_IR_PARAM || op == TD_IR_PRINT)
        return vfail(v, k, n, "an argument, a parameter or a print is evaluated inside a kernel");
    }
    if (p->kernel_of[K->root] != k) return vfail(v, k, K->root, "kernel_of does not name the kernel of its root");
    if (k && K->root <= p->kernels[k - 1].root)
      return vfail(v, k, K->root, "kernels are not in execution order (by root)");
  }
  for (int n = 0; n < v->g->n_nodes; n++) {
    int k = p->kernel_of[n];
    if (k < -1 || k >= p->n_kernels) return vfail(v, -1, n, "kernel_of is out of range (%d)", k);
  }
  return 0;
}

/* Is node n a value a kernel may read from memory: a leaf, or the root of
 * a kernel before kernel k? */
static int readable_before(const vctx *v, int n, int k) {
  const td_node *nd = ND(v, n);
  if (nd->op == TD_IR_INPUT || nd->op == TD_IR_PARAM) return 1;
  int j = v->p->kernel_of[n];
  if (nd->op == TD_IR_SCAN_OUT)   /* written by its scan's kernel */
    return j >= 0 && j < k && v->p->kernels[j].kind == TD_KERN_SCAN && v->p->kernels[j].root == nd->in[0];
  return j >= 0 && j < k && v->p->kernels[j].root == n;
}

/* Every input of every op of kernel k is evaluated in k or read from a
 * buffer k lists, written before k runs. */
static int check_dataflow(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  for (int i = 0; i < K->n_nodes; i++) v->mark[K->nodes[i]] |= IN_NODES;
  for (int i = 0; i < K->n_reads; i++) {
    int r = K->reads[i];
    if (r < 0 || r >= v->g->n_nodes) return vfail(v, k, -1, "it reads %%%d, which is not a node", r);
    if (!readable_before(v, r, k))
      return vfail(v, k, r, "it reads this value from memory before any kernel has written it");
    v->mark[r] |= IN_READS;
  }
  for (int i = 0; i < K->n_nodes; i++) {
    const td_node *n = ND(v, K->nodes[i]);
    for (int j = 0; j < n->n_in; j++) {
      int src = n->in[j];
      if (v->mark[src] & IN_NODES) continue;
      if (!(v->mark[src] & IN_READS))
        return vfail(v, k, K->nodes[i], "its input %%%d is neither evaluated in the kernel nor read by it", src);
    }
  }
  return 0;
}

static void unmark(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  for (int i = 0; i < K->n_nodes; i++) v->mark[K->nodes[i]] = v->dep[K->nodes[i]] = v->stage[K->nodes[i]] = 0;
  for (int i = 0; i < K->n_reads; i++)
    if (K->reads[i] >= 0 && K->reads[i] < v->g->n_nodes) v->mark[K->reads[i]] = 0;
}

/* ---- spaces -------------------------------------------------------------------- */

static int count_kind(const vctx *v, const td_kernel *K, td_opkind kind, int *first) {
  int c = 0;
  for (int i = 0; i < K->n_nodes; i++)
    if (td_ops[ND(v, K->nodes[i])->op].kind == kind && c++ == 0 && first) *first = K->nodes[i];
  return c;
}

static int check_pointwise(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *r = ND(v, K->root);
  int bad = -1;
  if (!same_shape(K->space, K->rank, r->shape, r->rank))
    return vfail(v, k, K->root, "a pointwise kernel's space is not its root's shape");
  if (count_kind(v, K, TD_K_REDUCE, &bad)) return vfail(v, k, bad, "a pointwise kernel evaluates a reduction");
  if (count_kind(v, K, TD_K_MATMUL, &bad)) return vfail(v, k, bad, "a pointwise kernel evaluates a matmul");
  if (K->red_axes || K->n_stages) return vfail(v, k, K->root, "a pointwise kernel has reduction axes or passes");
  return 0;
}

static int view_inside(vctx *v, const td_view *w);

/* The view of a matmul operand `opnd` has the operand's shape and stays
 * inside its base's buffer. */
static int check_view(vctx *v, int k, const td_view *w, int opnd, const char *which) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *o = ND(v, opnd);
  if (w->base < 0 || w->base >= v->g->n_nodes || !(v->mark[w->base] & IN_READS))
    return vfail(v, k, K->matmul, "the view of operand %s reads %%%d, a buffer the kernel does not list", which, w->base);
  if (!same_shape(w->shape, w->rank, o->shape, o->rank))
    return vfail(v, k, K->matmul, "the view of operand %s does not have the operand's shape", which);
  if (ND(v, w->base)->dtype != o->dtype)
    return vfail(v, k, K->matmul, "the view of operand %s reads a buffer of another dtype", which);
  if (!view_inside(v, w)) {
    char b1[128], b2[128];
    return vfail(v, k, K->matmul, "the view of operand %s (offset %s) reads outside the %s elements of %%%d",
                 which, dstr(v, w->offset, b1, sizeof b1), dstr(v, numel(v->g, ND(v, w->base)->shape, ND(v, w->base)->rank), b2, sizeof b2), w->base);
  }
  return 0;
}

static int check_matmul(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  int bad = -1;
  if (K->matmul < 0 || K->matmul >= v->g->n_nodes || ND(v, K->matmul)->op != TD_IR_MATMUL ||
      !(v->mark[K->matmul] & IN_NODES))
    return vfail(v, k, K->root, "a matmul kernel does not evaluate its matmul node");
  const td_node *m = ND(v, K->matmul), *r = ND(v, K->root);
  if (count_kind(v, K, TD_K_MATMUL, NULL) != 1) return vfail(v, k, K->matmul, "a matmul kernel evaluates more than one matmul");
  if (count_kind(v, K, TD_K_REDUCE, &bad)) return vfail(v, k, bad, "a matmul kernel evaluates a reduction");
  if (!same_shape(K->space, K->rank, m->shape, m->rank) || !same_shape(r->shape, r->rank, m->shape, m->rank))
    return vfail(v, k, K->root, "the kernel's space, its root and its matmul do not have one shape");
  /* the epilogue: every op that depends on the matmul sees each of its
   * elements once, so it is elementwise at the matmul's own shape */
  for (int i = 0; i < K->n_nodes; i++) {
    int id = K->nodes[i];
    const td_node *n = ND(v, id);
    int after = id == K->matmul;
    for (int j = 0; j < n->n_in && !after; j++) after = (v->mark[n->in[j]] & (IN_NODES | AFTER_MM)) == (IN_NODES | AFTER_MM);
    if (!after) continue;
    v->mark[id] |= AFTER_MM;
    if (id != K->matmul && (!tdc_is_elementwise(n->op) || !same_shape(n->shape, n->rank, m->shape, m->rank)))
      return vfail(v, k, id, "an op of the matmul's epilogue is not elementwise at the matmul's shape");
  }
  if (!(v->mark[K->root] & AFTER_MM)) return vfail(v, k, K->root, "the root does not depend on the kernel's matmul");
  if (check_view(v, k, &K->a, m->in[0], "a") || check_view(v, k, &K->b, m->in[1], "b")) return -1;
  return 0;
}

static void axes_str(uint32_t axes, int rank, char *buf, size_t n) {
  size_t w = (size_t)snprintf(buf, n, "[");
  for (int i = 0, first = 1; i < rank && w < n; i++)
    if (axes >> i & 1) { w += (size_t)snprintf(buf + w, n - w, "%s%d", first ? "" : ",", i); first = 0; }
  if (w < n) snprintf(buf + w, n - w, "]");
}

/* One reduction of row kernel k: it reduces the kernel's axes of a value
 * at the kernel's space, in a pass after every reduction it depends on. */
static int check_reduction(vctx *v, int k, int id) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *n = ND(v, id), *x = ND(v, n->in[0]);
  if (n->attr.axes != K->red_axes) {
    char a1[64], a2[64];
    axes_str(n->attr.axes, x->rank, a1, sizeof a1);
    axes_str(K->red_axes, K->rank, a2, sizeof a2);
    return vfail(v, k, id, "it reduces axes %s, but the kernel's rows reduce axes %s: the ops of one "
                 "row kernel must reduce the same axes", a1, a2);
  }
  if (!same_shape(x->shape, x->rank, K->space, K->rank))
    return vfail(v, k, id, "its input's shape is not the kernel's space");
  int s = v->stage[id];
  if (s <= 0) return vfail(v, k, id, "the reduction is in no pass");
  if (v->dep[id] >= s)
    return vfail(v, k, id, "it is computed in pass %d but depends on a reduction of pass %d", s, v->dep[id]);
  return 0;
}

/* An op that depends on a reduction of its row kernel sees one value per
 * row (the reduction's, broadcast), so it must be elementwise at a shape
 * that broadcasts to the space, a later reduction, or the root reshape
 * that drops the reduced axes of a kernel storing one value per row. */
static int check_row_user(vctx *v, int k, int id, const td_dim *row) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *n = ND(v, id);
  if (td_ops[n->op].kind == TD_K_REDUCE) return 0;
  if (tdc_is_elementwise(n->op) && bcasts_to(n->shape, n->rank, K->space, K->rank)) return 0;
  if (id == K->root && n->op == TD_IR_RESHAPE && K->row_root && tdc_squeeze_eq(n->shape, n->rank, row, K->rank))
    return 0;
  return vfail(v, k, id, "it reads a reduction of the kernel, which is one value per row, but is not "
               "elementwise over the rows");
}

static int check_reduce(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *r = ND(v, K->root);
  int bad = -1;
  if (count_kind(v, K, TD_K_MATMUL, &bad)) return vfail(v, k, bad, "a row kernel evaluates a matmul");
  /* no axes at all is a reduction of a scalar: one row of one element */
  if (K->rank < 32 && K->red_axes >> K->rank)
    return vfail(v, k, K->root, "a row kernel's reduction axes are not axes of its space");
  if (K->n_stages < 1 || count_kind(v, K, TD_K_REDUCE, NULL) < 1)
    return vfail(v, k, K->root, "a row kernel has no reduction");
  if (K->n_passes != K->n_stages + !K->row_root) return vfail(v, k, K->root, "its pass count is not its stages and output pass");
  for (int s = 0; s < K->n_stages; s++)
    for (int j = 0; j < K->stages[s].n_reds; j++) {
      int id = K->stages[s].reds[j];
      if (id < 0 || id >= v->g->n_nodes || !(v->mark[id] & IN_NODES) || td_ops[ND(v, id)->op].kind != TD_K_REDUCE)
        return vfail(v, k, id >= 0 && id < v->g->n_nodes ? id : -1, "pass %d lists an op that is not a reduction of the kernel", s + 1);
      if (v->stage[id]) return vfail(v, k, id, "the reduction is in more than one pass");
      v->stage[id] = s + 1;
    }
  td_dim row[TD_MAX_RANK];
  for (int i = 0; i < K->rank; i++) row[i] = K->red_axes >> i & 1 ? 1 : K->space[i];
  for (int i = 0; i < K->n_nodes; i++) {      /* dep: as fuse.c's stages, re-derived */
    int id = K->nodes[i], d = 0, reads_row = 0;
    const td_node *n = ND(v, id);
    for (int j = 0; j < n->n_in; j++) {
      int src = n->in[j];
      if (!(v->mark[src] & IN_NODES)) continue;
      int isred = td_ops[ND(v, src)->op].kind == TD_K_REDUCE;
      int dv = isred ? v->stage[src] : v->dep[src];
      reads_row |= isred || v->dep[src] > 0;
      if (dv > d) d = dv;
    }
    v->dep[id] = d;
    if (td_ops[n->op].kind == TD_K_REDUCE && check_reduction(v, k, id)) return -1;
    if (reads_row && check_row_user(v, k, id, row)) return -1;
  }
  if (K->row_root ? !tdc_squeeze_eq(r->shape, r->rank, row, K->rank) : !same_shape(r->shape, r->rank, K->space, K->rank))
    return vfail(v, k, K->root, K->row_root ? "the root stored once per row is not the shape of a row"
                                          : "the root stored per element is not the kernel's space");
  return 0;
}

/* A scan kernel evaluates its SCAN alone; its body's plan (verified when
 * it was built) takes the scan's inputs and makes one value per output. */
static int check_scan(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  const td_node *s = ND(v, K->root);
  if (s->op != TD_IR_SCAN || K->n_nodes != 1) return vfail(v, k, K->root, "a scan kernel evaluates more than its scan");
  const td_graph *b = K->body ? K->body->g : NULL;
  int outs = 0;
  for (int o = K->root + 1; o < v->g->n_nodes && ND(v, o)->op == TD_IR_SCAN_OUT && ND(v, o)->in[0] == K->root; o++) {
    if (v->p->kernel_of[o] != k) return vfail(v, k, o, "a scan's output is not written by its kernel");
    outs++;
  }
  if (!b || b->n_inputs != s->n_in + (s->attr.index ? 1 : 0) || b->n_outputs != outs)
    return vfail(v, k, K->root, "the scan's body plan does not take its inputs or make its outputs");
  return 0;
}

static int check_space(vctx *v, int k) {
  const td_kernel *K = &v->p->kernels[k];
  if (K->rank < 0 || K->rank > TD_MAX_RANK) return vfail(v, k, K->root, "its rank %d is out of range", K->rank);
  for (int i = 0; i < K->rank; i++)
    if (TD_DIM_IS_BAD(K->space[i])) return vfail(v, k, K->root, "a size of its space cannot be represented");
  switch (K->kind) {
  case TD_KERN_POINTWISE: return check_pointwise(v, k);
  case TD_KERN_MATMUL: return check_matmul(v, k);
  case TD_KERN_REDUCE: return check_reduce(v, k);
  case TD_KERN_SCAN: return check_scan(v, k);
  default: return vfail(v, k, K->root, "kernel kind %d is not one the backends run", (int)K->kind);
  }
}

/* ---- buffers ------------------------------------------------------------------- */

/* 1 unless the view provably reads outside [0, numel(base)).  In bounds
 * is proved on the coefficients when the strides' signs are known (and is
 * exact for literal sizes); a view whose bounds hold only under the
 * run-time size checks (a slice x[a:b] of symbolic bounds) cannot be
 * proved here and is accepted: those checks run before any kernel. */
/* Is d a number (a literal or an interned negative constant)? */
static int number(const td_graph *g, td_dim d) {
  return TD_DIM_IS_CONST(d) || (!TD_DIM_IS_BAD(d) && g->dims[-d - 1].n == 1 && g->dims[-d - 1].t[0].n == 0);
}

static int view_inside(vctx *v, const td_view *w) {
  td_graph *g = v->g;
  const td_node *b = ND(v, w->base);
  td_dim lo = w->offset, hi = w->offset, total = numel(g, b->shape, b->rank);
  int lits = number(g, lo) && number(g, total);
  for (int i = 0; i < w->rank; i++) {
    if (w->shape[i] == 0) return 1;      /* reads nothing */
    if (TD_DIM_IS_BAD(w->shape[i]) || TD_DIM_IS_BAD(w->stride[i])) return 0;
    td_dim ext = td_dim_mul(g, td_dim_sub(g, w->shape[i], 1), w->stride[i]);
    lits &= number(g, w->shape[i]) && number(g, ext);
    if (td_dim_le(g, 0, w->stride[i])) hi = td_dim_add(g, hi, ext);
    else if (td_dim_le(g, w->stride[i], 0)) lo = td_dim_add(g, lo, ext);
    else return 1;                       /* sign unknown: not provable */
  }
  if (TD_DIM_IS_BAD(lo) || TD_DIM_IS_BAD(hi) || TD_DIM_IS_BAD(total)) return 0;
  if (td_dim_le(g, 0, lo) && td_dim_le(g, td_dim_add(g, hi, 1), total)) return 1;
  return !lits;
}

static int check_buffer(vctx *v, int bi) {
  const td_plan *p = v->p;
  const td_buffer *b = &p->bufs[bi];
  if (b->node < 0 || b->node >= v->g->n_nodes || p->buf_of[b->node] != bi)
    return vfail(v, -1, b->node >= 0 && b->node < v->g->n_nodes ? b->node : -1, "buffer %d is not the buffer of its node", bi);
  const td_node *n = ND(v, b->node);
  int leaf = n->op == TD_IR_INPUT || n->op == TD_IR_PARAM;
  if (b->kind == TD_BUF_UPDATE) {   /* in place: plan.c's rule, checked again */
    int at = -1, first = v->g->n_outputs - v->g->n_update_outs;
    for (int i = first; i < v->g->n_outputs && at < 0; i++)
      if (v->g->outputs[i] == b->node && v->g->update_slots[i - first] == b->index) at = i;
    if (leaf || at < 0) return vfail(v, -1, b->node, "its buffer updates parameter slot %d, but it is not that update's value", b->index);
    if (!tdc_update_in_place_ok(p, b->node, b->index))
      return vfail(v, b->first, b->node, "it updates a parameter in place while another kernel still reads the old value");
  }
  if (leaf != (b->kind == TD_BUF_INPUT || b->kind == TD_BUF_PARAM) ||
      (leaf && (b->kind != (n->op == TD_IR_INPUT ? TD_BUF_INPUT : TD_BUF_PARAM) || b->index != (int)n->attr.i)))
    return vfail(v, -1, b->node, "its buffer's kind or index does not match the node");
  if (b->first != p->kernel_of[b->node] || (!leaf && b->first < 0))
    return vfail(v, b->first, b->node, "its buffer is not written by the kernel computing it");
  char b1[128], b2[128];
  td_dim want = td_node_bytes(v->g, n);
  if (TD_DIM_IS_BAD(b->bytes) || (TD_DIM_IS_CONST(b->bytes) && b->bytes < 0))
    return vfail(v, b->first, b->node, "its buffer's size is not a size");
  if (b->bytes != want)
    return vfail(v, b->first, b->node, "its buffer holds %s bytes, but the value has %s", dstr(v, b->bytes, b1, sizeof b1),
                 dstr(v, want, b2, sizeof b2));
  if (b->kind == TD_BUF_OUTPUT && (b->index < 0 || b->index >= p->n_out_nodes || p->out_nodes[b->index] != b->node))
    return vfail(v, b->first, b->node, "its output buffer is not at its place among the outputs");
  if (b->kind == TD_BUF_TEMP) {
    if (b->index < 0 || b->index >= p->n_slots) return vfail(v, b->first, b->node, "its arena slot %d does not exist", b->index);
    if (!td_dim_le(v->g, b->bytes, p->slot_bytes[b->index]))
      return vfail(v, b->first, b->node, "its %s bytes do not fit arena slot %d of %s bytes", dstr(v, b->bytes, b1, sizeof b1),
                   b->index, dstr(v, p->slot_bytes[b->index], b2, sizeof b2));
    if (v->mark[b->node] & HANDED_BACK) return vfail(v, b->first, b->node, "an output is in the arena of temporaries");
  }
  return 0;
}

/* Every materialised node has a buffer; every reader is inside its live range. */
static int check_buffer_map(vctx *v) {
  const td_plan *p = v->p;
  for (int n = 0; n < v->g->n_nodes; n++) {
    int bi = p->buf_of[n], mat = ND(v, n)->op != TD_IR_PRINT && tdc_is_materialised(p, n);
    if (bi < -1 || bi >= p->n_bufs) return vfail(v, -1, n, "buf_of is out of range (%d)", bi);
    if (mat != (bi >= 0)) return vfail(v, p->kernel_of[n], n, mat ? "a materialised value has no buffer" : "a value that no kernel stores has a buffer");
  }
  for (int i = 0; i < p->n_out_nodes; i++) v->mark[p->out_nodes[i]] |= HANDED_BACK;
  int rc = 0;
  for (int i = 0; i < p->n_bufs && !rc; i++) rc = check_buffer(v, i);
  for (int i = 0; i < p->n_out_nodes; i++) v->mark[p->out_nodes[i]] = 0;
  if (rc) return -1;
  for (int k = 0; k < p->n_kernels; k++)
    for (int i = 0; i < p->kernels[k].n_reads; i++) {
      const td_buffer *b = &p->bufs[p->buf_of[p->kernels[k].reads[i]]];
      if (b->last < k) return vfail(v, k, b->node, "the kernel reads a buffer after its last use (%d)", b->last);
    }
  return 0;
}

typedef struct live { int slot, first, last, buf; } live;

static int live_cmp(const void *x, const void *y) {
  const live *a = x, *b = y;
  if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
  return a->first < b->first ? -1 : a->first > b->first;
}

/* No two temporaries whose live ranges [first, last] overlap share a slot
 * (so a kernel never writes the slot of a value it, or a later kernel,
 * still reads). */
static int check_slots(vctx *v) {
  const td_plan *p = v->p;
  live *l = td_malloc(((size_t)p->n_bufs + 1) * sizeof *l);
  if (!l) return td_err_set(v->err, "out of memory");
  int n = 0;
  for (int i = 0; i < p->n_bufs; i++)
    if (p->bufs[i].kind == TD_BUF_TEMP) {
      const td_buffer *b = &p->bufs[i];
      l[n++] = (live){b->index, b->first, b->last > b->first ? b->last : b->first, i};
    }
  qsort(l, (size_t)n, sizeof *l, live_cmp);
  int rc = 0;
  for (int i = 1; i < n && !rc; i++)
    if (l[i].slot == l[i - 1].slot && l[i].first <= l[i - 1].last) {
      const td_buffer *a = &p->bufs[l[i - 1].buf], *b = &p->bufs[l[i].buf];
      rc = vfail(v, b->first, b->node, "its buffer shares arena slot %d with %%%d, which is live until kernel %d",
                 b->index, a->node, l[i - 1].last);
    }
  td_free(l);
  return rc;
}

/* Offsets and totals are the sums of the slots and outputs. */
static int check_totals(vctx *v) {
  const td_plan *p = v->p;
  td_dim off = 0, outs = 0, *start = td_malloc(((size_t)p->n_slots + 1) * sizeof *start);
  if (!start) return td_err_set(v->err, "out of memory");
  for (int s = 0; s < p->n_slots; s++) {
    start[s] = off;
    off = td_dim_add(v->g, off, p->slot_bytes[s]);
  }
  for (int i = 0; i < p->n_bufs; i++)
    if (p->bufs[i].kind == TD_BUF_TEMP && p->bufs[i].offset != start[p->bufs[i].index]) {
      td_free(start);
      return vfail(v, p->bufs[i].first, p->bufs[i].node, "its buffer's offset is not where arena slot %d starts",
                   p->bufs[i].index);
    }
  td_free(start);
  for (int i = 0; i < p->n_bufs; i++)
    if (p->bufs[i].kind == TD_BUF_OUTPUT) outs = td_dim_add(v->g, outs, p->bufs[i].bytes);
  if (off != p->arena_bytes) return vfail(v, -1, -1, "the arena's size is not the sum of its slots");
  if (outs != p->output_bytes) return vfail(v, -1, -1, "the outputs' size is not the sum of the output buffers");
  return 0;
}

/* ---- outputs -------------------------------------------------------------------- */

/* out_nodes is the graph's outputs, then each PRINT's tensors in program
 * order, and each is in memory when the call returns. */
static int check_outputs(vctx *v) {
  const td_plan *p = v->p;
  const td_graph *g = v->g;
  int want = g->n_outputs, at = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT) want += g->nodes[i].n_in;
  if (p->n_out_nodes != want)
    return vfail(v, -1, -1, "it hands back %d values, but the graph has %d outputs and printed tensors", p->n_out_nodes, want);
  for (int i = 0; i < g->n_outputs; i++, at++)
    if (p->out_nodes[at] != g->outputs[i])
      return vfail(v, -1, g->outputs[i], "output %d of the graph is not handed back in its place", i);
  for (int i = 0; i < g->n_nodes; i++)
    for (int j = 0; g->nodes[i].op == TD_IR_PRINT && j < g->nodes[i].n_in; j++, at++)
      if (p->out_nodes[at] != g->nodes[i].in[j])
        return vfail(v, -1, i, "tensor %d of this print is not handed back in program order", j);
  for (int i = 0; i < p->n_out_nodes; i++) {
    int n = p->out_nodes[i], bi = p->buf_of[n];
    if (bi < 0 || bi >= p->n_bufs) return vfail(v, -1, n, "an output or printed value is produced by no kernel");
    const td_buffer *b = &p->bufs[bi];
    if (b->kind == TD_BUF_TEMP) return vfail(v, b->first, n, "an output or printed value is a temporary");
    if (b->kind == TD_BUF_OUTPUT && p->out_nodes[b->index] != n)
      return vfail(v, b->first, n, "an output buffer's index is not its value's place");
  }
  return 0;
}

/* ---- the verifier ---------------------------------------------------------------- */

static int verify_kernels(vctx *v) {
  for (int k = 0; k < v->p->n_kernels; k++) {
    int rc = check_dataflow(v, k) || check_space(v, k);
    unmark(v, k);
    if (rc) return -1;
  }
  return 0;
}

int td_plan_verify(const td_plan *p, td_err *err) {
  vctx v = {p, p->g, err, NULL, NULL, NULL};
  long failures = td_arena_failures(p->g->arena);
  size_t n = (size_t)p->g->n_nodes + 1;
  v.mark = td_malloc(n);
  v.dep = td_malloc(n * sizeof *v.dep);
  v.stage = td_malloc(n * sizeof *v.stage);
  int rc = -1;
  if (!v.mark || !v.dep || !v.stage) {
    td_err_set(err, "out of memory");
  } else {
    memset(v.mark, 0, n);
    memset(v.dep, 0, n * sizeof *v.dep);
    memset(v.stage, 0, n * sizeof *v.stage);
    rc = check_tables(&v) || verify_kernels(&v) || check_outputs(&v) || check_buffer_map(&v) ||
         check_slots(&v) || check_totals(&v) ? -1 : 0;
  }
  td_free(v.mark);
  td_free(v.dep);
  td_free(v.stage);
  /* a size the checks needed that could not be interned */
  if (!rc && td_arena_failures(p->g->arena) > failures) rc = td_err_set(err, "out of memory");
  return rc;
}

/* plan.c - the kernel plan: buffers, liveness, memory, costs, names.
 *
 * td_plan_build runs fusion (fuse.c) and then, in order:
 *   names     each kernel is named after its index and the ops it fuses;
 *   outputs   the graph's outputs, then every printed tensor;
 *   buffers   one per leaf and per kernel root: OUTPUT for values handed to
 *             the caller, TEMP for the rest;
 *   liveness  each buffer lives from the kernel that writes it to the last
 *             kernel that reads it;
 *   memory    TEMP buffers take arena slots: a slot is free again once its
 *             occupant's last reader has run (never during that kernel, so
 *             no kernel reads and writes the same memory).  A buffer takes
 *             a free slot it provably fits in, or a free slot that is
 *             provably smaller (which then grows), or a new slot.  Inputs,
 *             parameters and outputs are never in the arena, so they are
 *             never overwritten;
 *   costs     bytes read and written and FLOPs, as td_dims;
 *   checks    a size that cannot be represented is an error at the source
 *             line of the value that made it; then td_plan_verify
 *             (plan_verify.c) checks the whole plan.
 */
#include "compiler/plan_impl.h"

#include <string.h>

#include "compiler/passes.h"

/* ---- small helpers ----------------------------------------------------------- */

const char *td_kkind_name(td_kkind k) {
  switch (k) {
  case TD_KERN_POINTWISE: return "pointwise";
  case TD_KERN_REDUCE: return "reduce";
  case TD_KERN_MATMUL: return "matmul+epilogue";
  case TD_KERN_SCAN: return "scan";
  default: return "other";
  }
}

static td_dim numel(td_graph *g, const td_dim *shape, int rank) {
  td_dim n = 1;
  for (int i = 0; i < rank; i++) n = td_dim_mul(g, n, shape[i]);
  return n;
}

td_dim td_node_bytes(td_graph *g, const td_node *n) {
  return td_dim_mul(g, numel(g, n->shape, n->rank), (td_dim)td_dtype_size(n->dtype));
}

int td_dim_le(td_graph *g, td_dim a, td_dim b) {
  if (TD_DIM_IS_CONST(a) && TD_DIM_IS_CONST(b)) return a <= b;
  td_dim d = td_dim_sub(g, b, a);
  if (TD_DIM_IS_BAD(d)) return 0;
  if (TD_DIM_IS_CONST(d)) return 1;
  const td_poly *p = &g->dims[-d - 1];
  for (int i = 0; i < p->n; i++)
    if (p->t[i].coef < 0) return 0;
  return 1;
}

static void *palloc(td_plan *p, size_t n, td_err *err) {
  void *q = td_arena_alloc(p->g->arena, n ? n : 1);
  if (!q) td_err_set(err, "out of memory");
  return q;
}

/* ---- names ------------------------------------------------------------------- */

static int name_worthy(td_op op, int movement_too) {
  td_opkind k = td_ops[op].kind;
  if (k == TD_K_LEAF || k == TD_K_EFFECT) return 0;
  return movement_too || k != TD_K_MOVE;
}

/* "k3_matmul_add_relu": up to four distinct op names, in node order. */
static int name_kernel(td_plan *p, int ki, td_err *err) {
  td_kernel *k = &p->kernels[ki];
  char buf[128];
  int w = snprintf(buf, sizeof buf, "k%d", ki), parts = 0, compute = 0;
  for (int i = 0; i < k->n_nodes; i++) compute |= name_worthy(p->g->nodes[k->nodes[i]].op, 0);
  const char *seen[8];
  for (int i = 0; i < k->n_nodes && w < 100; i++) {
    td_op op = p->g->nodes[k->nodes[i]].op;
    if (!name_worthy(op, !compute)) continue;
    int dup = 0;
    for (int j = 0; j < parts && j < 8; j++) dup |= seen[j] == td_ops[op].name;
    if (dup) continue;
    if (parts == 4) { w += snprintf(buf + w, sizeof buf - (size_t)w, "_etc"); break; }
    seen[parts++] = td_ops[op].name;
    w += snprintf(buf + w, sizeof buf - (size_t)w, "_%s", td_ops[op].name);
  }
  if (!parts) snprintf(buf + w, sizeof buf - (size_t)w, "_copy");
  k->name = td_arena_strdup(p->g->arena, buf);
  return k->name ? 0 : td_err_set(err, "out of memory");
}

/* ---- outputs and buffers ----------------------------------------------------- */

static int collect_outputs(td_plan *p, td_err *err) {
  const td_graph *g = p->g;
  int n = g->n_outputs;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT) n += g->nodes[i].n_in;
  if (!(p->out_nodes = palloc(p, (size_t)n * sizeof(int), err))) return -1;
  for (int i = 0; i < g->n_outputs; i++) p->out_nodes[p->n_out_nodes++] = g->outputs[i];
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT)
      for (int k = 0; k < g->nodes[i].n_in; k++) p->out_nodes[p->n_out_nodes++] = g->nodes[i].in[k];
  return 0;
}

static int out_index(const td_plan *p, int node) {
  for (int i = 0; i < p->n_out_nodes; i++)
    if (p->out_nodes[i] == node) return i;
  return -1;
}

/* In place: output node n, the value of an update of parameter slot
 * `slot`, may be written into the parameter's own memory when no kernel
 * reads the old value after the writing kernel has written it: every
 * other kernel reading the parameter runs before it, and inside it the
 * parameter is read only by elementwise ops of the parameter's own shape,
 * that is at the element being written.  Else it is a fresh output that
 * the driver copies (a pointwise root over the parameter's shape is what
 * an optimizer's update is).  A parameter that is also returned or printed
 * (its old value, handed back after the call) is never written in place. */
int tdc_update_in_place_ok(const td_plan *p, int n, int slot) {
  const td_graph *g = p->g;
  int pn = -1;
  for (int i = 0; i < g->n_params; i++)
    if (g->nodes[g->params[i]].attr.i == slot) pn = g->params[i];
  int kw = p->kernel_of[n];
  if (pn < 0 || pn == n || kw < 0) return 0;
  for (int i = 0; i < p->n_out_nodes; i++)   /* the old value returned or printed after the call */
    if (p->out_nodes[i] == pn) return 0;
  const td_kernel *k = &p->kernels[kw];
  const td_node *pd = &g->nodes[pn];
  if (k->kind != TD_KERN_POINTWISE || k->root != n || k->rank != pd->rank) return 0;
  for (int i = 0; i < pd->rank; i++)
    if (k->space[i] != pd->shape[i]) return 0;
  for (int j = 0; j < p->n_kernels; j++)
    for (int r = 0; j > kw && r < p->kernels[j].n_reads; r++)
      if (p->kernels[j].reads[r] == pn) return 0;
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *m = &g->nodes[k->nodes[i]];
    for (int r = 0; r < m->n_in; r++) {
      if (m->in[r] != pn) continue;
      if (!tdc_is_elementwise(m->op) || m->rank != pd->rank ||
          (pd->rank && memcmp(m->shape, pd->shape, (size_t)pd->rank * sizeof *pd->shape)))
        return 0;
    }
  }
  return 1;
}

static int make_buffers(td_plan *p, td_err *err) {
  td_graph *g = p->g;
  if (!(p->bufs = palloc(p, (size_t)(g->n_nodes + 1) * sizeof *p->bufs, err))) return -1;
  for (int n = 0; n < g->n_nodes; n++) {
    p->buf_of[n] = -1;
    if (g->nodes[n].op == TD_IR_PRINT || !tdc_is_materialised(p, n)) continue;
    td_buffer *b = &p->bufs[p->n_bufs];
    const td_node *nd = &g->nodes[n];
    b->node = n;
    b->bytes = td_node_bytes(g, nd);
    b->first = p->kernel_of[n];
    b->last = -1;
    if (nd->op == TD_IR_INPUT || nd->op == TD_IR_PARAM) {
      b->kind = nd->op == TD_IR_INPUT ? TD_BUF_INPUT : TD_BUF_PARAM;
      b->index = (int)nd->attr.i;
    } else if ((b->index = out_index(p, n)) >= 0) {
      int first_upd = g->n_outputs - g->n_update_outs;
      if (b->index >= first_upd && b->index < g->n_outputs &&
          tdc_update_in_place_ok(p, n, g->update_slots[b->index - first_upd])) {
        b->kind = TD_BUF_UPDATE;
        b->index = g->update_slots[b->index - first_upd];
      } else {
        b->kind = TD_BUF_OUTPUT;
        p->output_bytes = td_dim_add(g, p->output_bytes, b->bytes);
      }
    } else {
      b->kind = TD_BUF_TEMP;
    }
    p->buf_of[n] = p->n_bufs++;
  }
  for (int k = 0; k < p->n_kernels; k++)
    for (int i = 0; i < p->kernels[k].n_reads; i++) {
      int bi = p->buf_of[p->kernels[k].reads[i]];
      if (bi >= 0 && p->bufs[bi].last < k) p->bufs[bi].last = k;
    }
  return 0;
}

/* ---- the arena of temporaries ------------------------------------------------------ */

/* The slot for buffer b, allocated at kernel b->first; -1 when OOM. */
static int pick_slot(td_plan *p, const int *busy, const td_buffer *b) {
  int best = -1;
  for (int s = 0; s < p->n_slots; s++) {
    if (busy[s] >= b->first) continue;
    if (td_dim_le(p->g, b->bytes, p->slot_bytes[s]) &&
        (best < 0 || td_dim_le(p->g, p->slot_bytes[s], p->slot_bytes[best])))
      best = s;
  }
  if (best >= 0) return best;
  for (int s = 0; s < p->n_slots; s++)
    if (busy[s] < b->first && td_dim_le(p->g, p->slot_bytes[s], b->bytes)) {
      p->slot_bytes[s] = b->bytes;
      return s;
    }
  p->slot_bytes[p->n_slots] = b->bytes;
  return p->n_slots++;
}

static int plan_memory(td_plan *p, td_err *err) {
  p->slot_bytes = palloc(p, (size_t)(p->n_bufs + 1) * sizeof *p->slot_bytes, err);
  int *busy = palloc(p, (size_t)(p->n_bufs + 1) * sizeof *busy, err);
  if (!p->slot_bytes || !busy) return -1;
  for (int k = 0; k < p->n_kernels; k++)
    for (int i = 0; i < p->n_bufs; i++) {
      td_buffer *b = &p->bufs[i];
      if (b->kind != TD_BUF_TEMP || b->first != k) continue;
      b->index = pick_slot(p, busy, b);
      busy[b->index] = b->last > k ? b->last : k;
    }
  td_dim off = 0;
  for (int s = 0; s < p->n_slots; s++) {
    for (int i = 0; i < p->n_bufs; i++)
      if (p->bufs[i].kind == TD_BUF_TEMP && p->bufs[i].index == s) p->bufs[i].offset = off;
    off = td_dim_add(p->g, off, p->slot_bytes[s]);
  }
  p->arena_bytes = off;
  return 0;
}

/* ---- costs --------------------------------------------------------------------------- */

/* Elementwise ops count one per element, reductions one per input element,
 * matmul 2*M*N*K per batch; movement and creation ops count nothing. */
static td_dim node_flops(td_graph *g, int id) {
  const td_node *n = &g->nodes[id];
  td_opkind kind = td_ops[n->op].kind;
  if (tdc_is_elementwise(n->op)) return numel(g, n->shape, n->rank);
  if (kind == TD_K_REDUCE) {
    const td_node *x = &g->nodes[n->in[0]];
    return numel(g, x->shape, x->rank);
  }
  if (kind == TD_K_MATMUL) {
    const td_node *a = &g->nodes[n->in[0]];
    td_dim kk = a->shape[a->rank - 1];
    return td_dim_mul(g, td_dim_mul(g, 2, kk), numel(g, n->shape, n->rank));
  }
  return 0;
}

static void kernel_costs(td_plan *p, td_kernel *k) {
  td_graph *g = p->g;
  k->bytes_read = k->bytes_written = k->flops = 0;
  for (int i = 0; i < k->n_reads; i++)
    k->bytes_read = td_dim_add(g, k->bytes_read, td_node_bytes(g, &g->nodes[k->reads[i]]));
  k->bytes_written = td_node_bytes(g, &g->nodes[k->root]);
  for (int i = 0; i < k->n_nodes; i++)
    k->flops = td_dim_add(g, k->flops, node_flops(g, k->nodes[i]));
}

/* ---- sizes that cannot be represented --------------------------------------------- */

/* The checker refuses every graph whose shapes, byte counts or FLOPs
 * cannot be represented (lang/shapes.c), but sums over many buffers or
 * kernels, and the strides of views, are made here: a plan holding
 * TD_DIM_BAD is refused, naming the value whose size made the sum fail
 * and its source line, rather than run with a wrong size. */
static int any_bad(const td_dim *d, int n) {
  for (int i = 0; i < n; i++)
    if (TD_DIM_IS_BAD(d[i])) return 1;
  return 0;
}

static int view_bad(const td_view *v) {
  return any_bad(v->shape, v->rank) || any_bad(v->stride, v->rank) || TD_DIM_IS_BAD(v->offset);
}

/* -1 with err: `what` of the plan, first unrepresentable at node's size. */
static int size_err(const td_plan *p, const char *kernel, int node, const char *what, td_err *err) {
  const td_node *n = &p->g->nodes[node];
  char at[64] = "builtin";
  if (n->span.line > 0) snprintf(at, sizeof at, "line %d:%d", n->span.line, n->span.col);
  return td_err_set(err, "size arithmetic cannot be represented in the plan of %s%s%s: %s, at %s %%%d (%s); "
                    "sizes are polynomials in the symbolic sizes of at most %d terms, each of at most %d "
                    "symbols, with 64-bit coefficients: use fewer or smaller symbolic sizes",
                    p->g->name, kernel ? ", kernel " : "", kernel ? kernel : "", what, td_ops[n->op].name, node,
                    at, TD_POLY_MAX, TD_MONO_MAX);
}

/* The value whose buffer makes a running sum unrepresentable: over the
 * arena's slots in order (kind TD_BUF_TEMP: a buffer of that slot), or
 * over the OUTPUT buffers starting from `sum`. */
static int sum_culprit(const td_plan *p, td_bkind kind, td_dim sum) {
  int last = p->n_kernels ? p->kernels[p->n_kernels - 1].root : 0;
  for (int s = 0; kind == TD_BUF_TEMP && s < p->n_slots; s++)
    if (TD_DIM_IS_BAD(sum = td_dim_add(p->g, sum, p->slot_bytes[s])))
      for (int i = 0; i < p->n_bufs; i++)
        if (p->bufs[i].kind == TD_BUF_TEMP && p->bufs[i].index == s) return p->bufs[i].node;
  for (int i = 0; kind == TD_BUF_OUTPUT && i < p->n_bufs; i++)
    if (p->bufs[i].kind == TD_BUF_OUTPUT) {
      last = p->bufs[i].node;
      if (TD_DIM_IS_BAD(sum = td_dim_add(p->g, sum, p->bufs[i].bytes))) return last;
    }
  return last;
}

/* The node of kernel k whose cost makes its sum unrepresentable. */
static int cost_culprit(const td_plan *p, const td_kernel *k) {
  td_graph *g = p->g;
  td_dim r = 0, f = 0;
  for (int i = 0; i < k->n_reads; i++)
    if (TD_DIM_IS_BAD(r = td_dim_add(g, r, td_node_bytes(g, &g->nodes[k->reads[i]])))) return k->reads[i];
  for (int i = 0; i < k->n_nodes; i++)
    if (TD_DIM_IS_BAD(f = td_dim_add(g, f, node_flops(g, k->nodes[i])))) return k->nodes[i];
  return k->kind == TD_KERN_MATMUL && k->matmul >= 0 ? k->matmul : k->root;
}

static int check_sizes(const td_plan *p, td_err *err) {
  for (int i = 0; i < p->n_bufs; i++)
    if (TD_DIM_IS_BAD(p->bufs[i].bytes)) return size_err(p, NULL, p->bufs[i].node, "the bytes of a buffer", err);
  if (TD_DIM_IS_BAD(p->output_bytes))
    return size_err(p, NULL, sum_culprit(p, TD_BUF_OUTPUT, 0), "the bytes of all outputs together", err);
  int bad_arena = TD_DIM_IS_BAD(p->arena_bytes) || any_bad(p->slot_bytes, p->n_slots);
  for (int i = 0; i < p->n_bufs; i++) bad_arena |= TD_DIM_IS_BAD(p->bufs[i].offset);
  if (bad_arena) return size_err(p, NULL, sum_culprit(p, TD_BUF_TEMP, 0), "the bytes of the arena of temporaries", err);
  if (TD_DIM_IS_BAD(td_dim_add(p->g, p->arena_bytes, p->output_bytes)))
    return size_err(p, NULL, sum_culprit(p, TD_BUF_OUTPUT, p->arena_bytes), "the peak memory (temporaries and outputs)", err);
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    if (any_bad(kn->space, kn->rank) || (kn->kind == TD_KERN_MATMUL && (view_bad(&kn->a) || view_bad(&kn->b))))
      return size_err(p, kn->name, kn->matmul >= 0 ? kn->matmul : kn->root, "the kernel's space or strides", err);
    if (TD_DIM_IS_BAD(kn->bytes_read) || TD_DIM_IS_BAD(kn->bytes_written) || TD_DIM_IS_BAD(kn->flops))
      return size_err(p, kn->name, cost_culprit(p, kn), "the kernel's bytes moved or FLOPs", err);
  }
  return 0;
}

/* ---- building ------------------------------------------------------------------------- */

td_plan *td_plan_build(td_graph *g, td_err *err) {
  long failures = td_arena_failures(g->arena);
  td_plan *p = td_arena_alloc(g->arena, sizeof *p);
  if (!p) { td_err_set(err, "out of memory"); return NULL; }
  p->g = g;
  p->n_ops = td_graph_count_ops(g);
  p->kernel_of = palloc(p, (size_t)(g->n_nodes + 1) * sizeof(int), err);
  p->buf_of = palloc(p, (size_t)(g->n_nodes + 1) * sizeof(int), err);
  if (!p->kernel_of || !p->buf_of || tdc_fuse(p, err) || tdc_plan_scans(p, err)) return NULL;
  for (int k = 0; k < p->n_kernels; k++)
    if (name_kernel(p, k, err)) return NULL;
  if (collect_outputs(p, err) || make_buffers(p, err) || plan_memory(p, err)) return NULL;
  for (int k = 0; k < p->n_kernels; k++)
    if (p->kernels[k].kind == TD_KERN_SCAN) tdc_scan_costs(p, &p->kernels[k]);
    else kernel_costs(p, &p->kernels[k]);
  /* a size that could not be interned is TD_DIM_BAD, as an overflow is */
  if (td_arena_failures(g->arena) > failures) { td_err_set(err, "out of memory"); return NULL; }
  /* the verifier runs on every plan, for every backend */
  return check_sizes(p, err) || td_plan_verify(p, err) ? NULL : p;
}

/* ---- printing (--dump=fused) ----------------------------------------------------------- */

static const char *loc(const td_diags *d, td_span sp, char *buf, size_t n) {
  const td_source *s = d ? td_diags_source(d, sp.file) : NULL;
  if (s) {
    const char *base = strrchr(s->path, '/');
    snprintf(buf, n, "%s:%d", base ? base + 1 : s->path, sp.line);
  } else if (sp.line > 0) {
    snprintf(buf, n, "%d", sp.line);
  } else {
    snprintf(buf, n, "builtin");
  }
  return buf;
}

static const char *bkind_name(td_bkind k) {
  static const char *const names[] = {"input", "param", "output", "temp"};
  return names[k];
}

static void print_buf(const td_plan *p, int node, FILE *out) {
  const td_node *n = &p->g->nodes[node];
  char t[256];
  int bi = p->buf_of[node];
  fprintf(out, "%%%d %s", node, td_type_str(p->g, n->dtype, n->rank, n->shape, t, sizeof t));
  if (bi >= 0) fprintf(out, " (%s %d%s%s%s)", bkind_name(p->bufs[bi].kind), p->bufs[bi].index,
                       n->name ? " \"" : "", n->name ? n->name : "", n->name ? "\"" : "");
}

static void print_kernel(const td_plan *p, int ki, const td_diags *d, FILE *out) {
  const td_kernel *k = &p->kernels[ki];
  td_graph *g = p->g;
  char t[256], b1[128], b2[128], b3[128];
  fprintf(out, "kernel %s  %s  space %s", k->name, td_kkind_name(k->kind),
          td_type_str(g, g->nodes[k->root].dtype, k->rank, k->space, t, sizeof t) + 3);
  if (k->kind == TD_KERN_REDUCE) {
    fprintf(out, "  reduce axes=[");
    for (int i = 0, first = 1; i < k->rank; i++)
      if (k->red_axes >> i & 1) { fprintf(out, "%s%d", first ? "" : ",", i); first = 0; }
    fprintf(out, "]  passes=%d%s", k->n_passes, k->row_root ? "  (one value per row)" : "");
  }
  fprintf(out, "\n  ops:");
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *n = &g->nodes[k->nodes[i]];
    if (td_ops[n->op].kind == TD_K_LEAF && n->op != TD_IR_ARANGE) continue;
    fprintf(out, " %s%%%d@%s", td_ops[n->op].name, k->nodes[i], loc(d, n->span, t, sizeof t));
  }
  fprintf(out, "\n  reads:");
  for (int i = 0; i < k->n_reads; i++) { fputc(' ', out); print_buf(p, k->reads[i], out); }
  fprintf(out, "\n  writes: ");
  if (k->kind == TD_KERN_SCAN)
    for (int o = k->root + 1; o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT && g->nodes[o].in[0] == k->root; o++) {
      if (o > k->root + 1) fputc(' ', out);
      print_buf(p, o, out);
    }
  else
    print_buf(p, k->root, out);
  fprintf(out, "\n  bytes read %s, written %s; flops %s\n", td_dim_str(g, k->bytes_read, b1, sizeof b1),
          td_dim_str(g, k->bytes_written, b2, sizeof b2), td_dim_str(g, k->flops, b3, sizeof b3));
  if (k->kind == TD_KERN_SCAN && k->body) {
    fprintf(out, "  body, once per step (%s steps) {\n", td_dim_str(g, g->nodes[k->root].attr.dim, b1, sizeof b1));
    td_plan_print(k->body, d, out);
    fprintf(out, "  }\n");
  }
}

void td_plan_print(const td_plan *p, const td_diags *d, FILE *out) {
  char b1[128], b2[128];
  fprintf(out, "plan %s: %d ops -> %d kernels\n", p->g->name, p->n_ops, p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) print_kernel(p, k, d, out);
  fprintf(out, "memory: temporaries %s bytes in %d slots, outputs %s bytes\n",
          td_dim_str(p->g, p->arena_bytes, b1, sizeof b1), p->n_slots,
          td_dim_str(p->g, p->output_bytes, b2, sizeof b2));
}

int td_kernel_prepack(const td_plan *p, const td_kernel *k, td_prepack *pp) {
  if (k->kind != TD_KERN_MATMUL || k->matmul < 0) return 0;
  td_dtype dt = p->g->nodes[k->matmul].dtype;
  const td_view *b = &k->b;
  int r = b->rank, bi = p->buf_of[b->base];
  if ((dt != TD_F32 && dt != TD_F64) || r < 2 || bi < 0 || p->bufs[bi].kind != TD_BUF_PARAM) return 0;
  if (p->g->nodes[b->base].dtype != dt) return 0;
  for (int t = 0; t + 2 < r; t++)   /* one matrix for every batch index */
    if (b->shape[t] != 1 && b->stride[t] != 0) return 0;
  td_dim d[5] = {b->shape[r - 1], b->shape[r - 2], b->offset, b->stride[r - 2], b->stride[r - 1]};
  for (int i = 0; i < 5; i++)
    if (!TD_DIM_IS_CONST(d[i])) return 0;
  if (d[0] < 1 || d[1] < 1) return 0;
  *pp = (td_prepack){bi, d[0], d[1], d[2], d[3], d[4]};
  return 1;
}

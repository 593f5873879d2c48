/* explain.c - text, JSON and DOT reports of a kernel plan (tdsl explain).
 *
 * Library code that writes to a FILE the caller chose (the CLI passes
 * stdout); nothing here decides anything about the plan.
 */
#include "compiler/explain.h"

#include <string.h>

#include "lang/checks.h"
#include "runtime/sig.h"

/* ---- sizes ------------------------------------------------------------------ */

typedef struct ctx {
  const td_graph *g;
  const td_plan *p;
  const td_explain_opts *o;
  FILE *out;
  int64_t vals[64];
  int all_bound;      /* every symbol of the graph has a value */
  const int *same;    /* per kernel: the first kernel with the same code (td_kernel_groups), or NULL */
  int n_distinct;
  int indent;         /* spaces before each line (a scan body's kernels: more) */
} ctx;

static void ctx_init(ctx *c, const td_graph *g, const td_plan *p, const td_explain_opts *o,
                     FILE *out) {
  memset(c, 0, sizeof *c);
  c->g = g;
  c->p = p;
  c->o = o;
  c->out = out;
  c->all_bound = g->n_syms <= 64;
  for (int s = 0; s < g->n_syms && s < 64; s++) {
    int found = 0;
    for (int i = 0; i < o->n_sizes; i++)
      if (!strcmp(o->size_names[i], g->syms[s])) { c->vals[s] = o->size_values[i]; found = 1; }
    if (!found && !strstr(g->syms[s], "//")) c->all_bound = 0;   /* "T//k" is derived from T */
  }
  if (g->n_syms <= 64) td_sig_derive(g->syms, g->n_syms, c->vals);
}

/* A size as text: a number when all symbols are bound, else symbolic. */
static const char *dim_txt(const ctx *c, td_dim d, char *buf, size_t n) {
  if ((c->all_bound && !TD_DIM_IS_BAD(d)) || TD_DIM_IS_CONST(d)) {
    snprintf(buf, n, "%lld", (long long)td_dim_eval(c->g, d, c->vals));
    return buf;
  }
  return td_dim_str(c->g, d, buf, n);
}

static const char *shape_txt(const ctx *c, const td_dim *s, int rank, char *buf, size_t n) {
  size_t w = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && w < n; i++) {
    char d[96];
    w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : "", dim_txt(c, s[i], d, sizeof d));
  }
  if (w < n) snprintf(buf + w, n - w, "]");
  return buf;
}

/* "nn.td:15:13" style location: stdlib paths from "stdlib/", others as given. */
static const char *loc_txt(const ctx *c, td_span sp, char *buf, size_t n) {
  const td_source *s = c->o->diags ? td_diags_source(c->o->diags, sp.file) : NULL;
  if (!s) {
    snprintf(buf, n, sp.line > 0 ? "line %d" : "builtin", sp.line);
    return buf;
  }
  const char *path = s->path, *std = strstr(path, "/stdlib/");
  if (std) path = std + 1;
  snprintf(buf, n, "%s:%d:%d", path, sp.line, sp.col);
  return buf;
}

static int shown_op(const td_node *n) {
  return td_ops[n->op].kind != TD_K_LEAF || n->op == TD_IR_ARANGE;
}

static const char *bkind(td_bkind k) {
  static const char *const names[] = {"input", "param", "output", "temp", "update in place"};
  return names[k];
}

/* "x f32[N, 784] (input)" */
static const char *buf_txt(const ctx *c, int node, char *buf, size_t n) {
  const td_node *nd = &c->g->nodes[node];
  int bi = c->p->buf_of[node];
  char sh[256];
  snprintf(buf, n, "%s%s%%%d %s%s (%s)", nd->name ? nd->name : "", nd->name ? " " : "", node,
           td_dtype_name(nd->dtype), shape_txt(c, nd->shape, nd->rank, sh, sizeof sh),
           bi >= 0 ? bkind(c->p->bufs[bi].kind) : "?");
  return buf;
}

/* ---- text -------------------------------------------------------------------- */

/* The SCAN_OUT nodes a scan kernel writes: first, and the count. */
static int scan_outs(const ctx *c, const td_kernel *k, int *first) {
  const td_graph *g = c->g;
  int n = 0;
  *first = k->root + 1;
  while (*first + n < g->n_nodes && g->nodes[*first + n].op == TD_IR_SCAN_OUT && g->nodes[*first + n].in[0] == k->root)
    n++;
  return n;
}

static void text_kernel(const ctx *c, int ki) {
  const td_kernel *k = &c->p->kernels[ki];
  char b[512], b2[128], b3[128];
  FILE *out = c->out;
  int in = c->indent;
  fprintf(out, "%*s  kernel %d: %s (%s) over %s", in, "", ki, k->name, td_kkind_name(k->kind),
          k->kind == TD_KERN_SCAN ? "its steps" : shape_txt(c, k->space, k->rank, b, sizeof b));
  if (c->same && c->same[ki] != ki) fprintf(out, ", the code of kernel %d", c->same[ki]);
  if (k->kind == TD_KERN_REDUCE)
    fprintf(out, ", %d pass%s per row%s", k->n_passes, k->n_passes == 1 ? "" : "es",
            k->row_root ? ", one value per row" : "");
  fprintf(out, "\n%*s    fuses:", in, "");
  int first = 1;
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *n = &c->g->nodes[k->nodes[i]];
    if (!shown_op(n)) continue;
    fprintf(out, "%s %s (%s)", first ? "" : ",", td_ops[n->op].name, loc_txt(c, n->span, b, sizeof b));
    first = 0;
  }
  fprintf(out, "\n%*s    reads:", in, "");
  for (int i = 0; i < k->n_reads; i++)
    fprintf(out, "%s %s", i ? "," : "", buf_txt(c, k->reads[i], b, sizeof b));
  fprintf(out, "\n%*s    writes:", in, "");
  if (k->kind == TD_KERN_SCAN) {
    int o0, n = scan_outs(c, k, &o0);
    for (int o = o0; o < o0 + n; o++) fprintf(out, "%s %s", o > o0 ? "," : "", buf_txt(c, o, b, sizeof b));
  } else {
    fprintf(out, " %s", buf_txt(c, k->root, b, sizeof b));
  }
  fprintf(out, "\n%*s    bytes moved: %s read + %s written; FLOPs: %s\n", in, "",
          dim_txt(c, k->bytes_read, b, sizeof b), dim_txt(c, k->bytes_written, b2, sizeof b2),
          dim_txt(c, k->flops, b3, sizeof b3));
  if (k->kind == TD_KERN_SCAN && k->body) {
    /* the body's own plan: its sizes are the entry's symbols (plan_scan.c) */
    const td_plan *bp = k->body;
    fprintf(out, "%*s    body, compiled once, run once per step (%s steps): %d kernel%s\n", in, "",
            dim_txt(c, c->g->nodes[k->root].attr.dim, b, sizeof b), bp->n_kernels, bp->n_kernels == 1 ? "" : "s");
    ctx bc = *c;
    bc.g = bp->g;
    bc.p = bp;
    bc.same = NULL;
    bc.indent = in + 4;
    for (int i = 0; i < bp->n_kernels; i++) text_kernel(&bc, i);
  }
}

/* Bytes of the packed copies of matmul weights compiled code keeps (plan.h's
 * td_kernel_prepack; before padding to whole panels): one per such kernel. */
static int64_t prepacked_bytes(const td_plan *p) {
  int64_t total = 0;
  for (int k = 0; k < p->n_kernels; k++) {
    td_prepack pp;
    if (td_kernel_prepack(p, &p->kernels[k], &pp))
      total += pp.n * pp.k * (int64_t)td_dtype_size(p->g->nodes[p->kernels[k].matmul].dtype);
  }
  return total;
}

/* One run-time size check (lang/checks.h) in words. */
static const char *check_txt(const ctx *c, const td_check *k, char *b, size_t n) {
  const td_sizecheck *s = &k->c;
  char d[128], l[256];
  loc_txt(c, k->span, l, sizeof l);
  switch (s->kind) {
  case TD_SC_SIZE: snprintf(b, n, "%s >= 0 (%s)", s->text, l); break;
  case TD_SC_NUMEL: snprintf(b, n, "the element count of %s fits in 64 bits (%s)",
                             td_type_str(c->g, (td_dtype)s->dtype, s->rank, s->dims, d, sizeof d), l); break;
  case TD_SC_SLICE: snprintf(b, n, "a slice stays inside axis %d of size %s (%s)", s->axis,
                             dim_txt(c, s->dims[0], d, sizeof d), l); break;
  default: snprintf(b, n, "%s reduces a non-empty axis (%s)", s->text, l); break;
  }
  return b;
}

static void text_entry(const ctx *c, const td_opt_stats *st) {
  const td_plan *p = c->p;
  char b[128], b2[128], b3[128];
  FILE *out = c->out;
  fprintf(out, "%s\n", c->g->name);
  fprintf(out, "  Graph Count: 1\n  Graph Break Count: 0\n");
  fprintf(out, "  ops: %d in the graph, %d after passes, %d kernel%s after fusion",
          st ? st->ops_before : p->n_ops, p->n_ops, p->n_kernels, p->n_kernels == 1 ? "" : "s");
  if (c->same && c->n_distinct < p->n_kernels) fprintf(out, ", %d distinct", c->n_distinct);
  fputc('\n', out);
  for (int k = 0; k < p->n_kernels; k++) text_kernel(c, k);
  td_dim peak = td_dim_add(p->g, p->arena_bytes, p->output_bytes);
  fprintf(out, "  peak memory: %s bytes (temporaries %s in %d slot%s, outputs %s)\n",
          dim_txt(c, peak, b, sizeof b), dim_txt(c, p->arena_bytes, b2, sizeof b2), p->n_slots,
          p->n_slots == 1 ? "" : "s", dim_txt(c, p->output_bytes, b3, sizeof b3));
  const td_graph *g = c->g;
  if (g->n_checks)   /* none for literal sizes and most symbolic ones */
    fprintf(out, "  run-time checks: %d (once per set of sizes, as eager mode checks them):\n", g->n_checks);
  for (int i = 0; i < g->n_checks; i++) {
    char cb[512];
    fprintf(out, "    %s\n", check_txt(c, &g->checks[i], cb, sizeof cb));
  }
  int64_t pw = prepacked_bytes(p);
  if (pw > 0)
    fprintf(out, "  prepacked weights: %lld bytes (compiled code keeps a packed copy of each matmul weight)\n",
            (long long)pw);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
    else if (ch < 0x20) fprintf(out, "\\u%04x", ch);
    else fputc(ch, out);
  }
  fputc('"', out);
}

static void json_dim(const ctx *c, const char *key, td_dim d) {
  char b[256];
  fprintf(c->out, "\"%s\": ", key);
  json_str(c->out, dim_txt(c, d, b, sizeof b));
}

static void json_shape(const ctx *c, const td_dim *s, int rank) {
  fputc('[', c->out);
  for (int i = 0; i < rank; i++) {
    char b[128];
    if (i) fputs(", ", c->out);
    json_str(c->out, dim_txt(c, s[i], b, sizeof b));
  }
  fputc(']', c->out);
}

static void json_buf(const ctx *c, int node) {
  const td_node *n = &c->g->nodes[node];
  int bi = c->p->buf_of[node];
  fprintf(c->out, "{\"node\": %d, \"name\": ", node);
  json_str(c->out, n->name ? n->name : "");
  fprintf(c->out, ", \"dtype\": \"%s\", \"shape\": ", td_dtype_name(n->dtype));
  json_shape(c, n->shape, n->rank);
  fprintf(c->out, ", \"kind\": \"%s\"}", bi >= 0 ? bkind(c->p->bufs[bi].kind) : "?");
}

static void json_kernel(const ctx *c, int ki) {
  const td_kernel *k = &c->p->kernels[ki];
  FILE *out = c->out;
  char b[256];
  fprintf(out, "{\"index\": %d, \"name\": \"%s\", \"kind\": \"%s\", \"space\": ", ki, k->name,
          td_kkind_name(k->kind));
  json_shape(c, k->space, k->rank);
  if (k->kind == TD_KERN_REDUCE) fprintf(out, ", \"reduce_axes\": %u, \"passes\": %d", k->red_axes, k->n_passes);
  if (c->same) fprintf(out, ", \"code_of\": %d", c->same[ki]);
  fprintf(out, ", \"ops\": [");
  int first = 1;
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *n = &c->g->nodes[k->nodes[i]];
    if (!shown_op(n)) continue;
    fprintf(out, "%s{\"op\": \"%s\", \"node\": %d, \"source\": ", first ? "" : ", ",
            td_ops[n->op].name, k->nodes[i]);
    json_str(out, loc_txt(c, n->span, b, sizeof b));
    fputc('}', out);
    first = 0;
  }
  fprintf(out, "], \"reads\": [");
  for (int i = 0; i < k->n_reads; i++) {
    if (i) fputs(", ", out);
    json_buf(c, k->reads[i]);
  }
  fprintf(out, "], \"writes\": ");
  if (k->kind == TD_KERN_SCAN) {
    int o0, n = scan_outs(c, k, &o0);
    fputc('[', out);
    for (int o = o0; o < o0 + n; o++) {
      if (o > o0) fputs(", ", out);
      json_buf(c, o);
    }
    fputc(']', out);
  } else {
    json_buf(c, k->root);
  }
  fputs(", ", out);
  json_dim(c, "bytes_read", k->bytes_read);
  fputs(", ", out);
  json_dim(c, "bytes_written", k->bytes_written);
  fputs(", ", out);
  json_dim(c, "flops", k->flops);
  if (k->kind == TD_KERN_SCAN && k->body) {
    ctx bc = *c;
    bc.g = k->body->g;
    bc.p = k->body;
    bc.same = NULL;
    fputs(", ", out);
    json_dim(c, "steps", c->g->nodes[k->root].attr.dim);
    fputs(", \"body_kernels\": [", out);
    for (int i = 0; i < k->body->n_kernels; i++) {
      if (i) fputs(", ", out);
      json_kernel(&bc, i);
    }
    fputc(']', out);
  }
  fputc('}', out);
}

static void json_entry(const ctx *c, const td_opt_stats *st) {
  const td_plan *p = c->p;
  FILE *out = c->out;
  fprintf(out, "{\"entry\": ");
  json_str(out, c->g->name);
  fprintf(out, ", \"graph_count\": 1, \"graph_break_count\": 0, \"ops_in_graph\": %d, "
          "\"ops_after_passes\": %d, \"kernel_count\": %d, \"distinct_kernel_count\": %d,\n  \"kernels\": [",
          st ? st->ops_before : p->n_ops, p->n_ops, p->n_kernels, c->same ? c->n_distinct : p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) {
    fputs(k ? ",\n    " : "\n    ", out);
    json_kernel(c, k);
  }
  fputs("],\n  \"memory\": {", out);
  json_dim(c, "peak_bytes", td_dim_add(p->g, p->arena_bytes, p->output_bytes));
  fputs(", ", out);
  json_dim(c, "temporary_bytes", p->arena_bytes);
  fputs(", ", out);
  json_dim(c, "output_bytes", p->output_bytes);
  fprintf(out, ", \"slots\": %d, \"prepacked_weight_bytes\": %lld}", p->n_slots, (long long)prepacked_bytes(p));
  fprintf(out, ",\n  \"run_time_checks\": [");
  for (int i = 0; i < c->g->n_checks; i++) {
    char cb[512];
    fputs(i ? ", " : "", out);
    json_str(out, check_txt(c, &c->g->checks[i], cb, sizeof cb));
  }
  fputs("]}", out);
}

/* ---- DOT ------------------------------------------------------------------------ */

static void dot_entry(const ctx *c, int entry_no) {
  const td_plan *p = c->p;
  FILE *out = c->out;
  char b[256];
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    fprintf(out, "  subgraph cluster_%d_%d {\n    label=\"%s: %s\";\n", entry_no, k, c->g->name, kn->name);
    for (int i = 0; i < kn->n_nodes; i++) {
      const td_node *n = &c->g->nodes[kn->nodes[i]];
      if (!shown_op(n)) continue;
      fprintf(out, "    e%d_n%d_k%d [label=\"%s %%%d\\n%s\"];\n", entry_no, kn->nodes[i], k,
              td_ops[n->op].name, kn->nodes[i], loc_txt(c, n->span, b, sizeof b));
    }
    fprintf(out, "  }\n");
  }
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *bf = &p->bufs[i];
    const td_node *n = &c->g->nodes[bf->node];
    fprintf(out, "  e%d_b%d [shape=box, label=\"%s%s%%%d\\n%s %s\"];\n", entry_no, bf->node,
            n->name ? n->name : "", n->name ? " " : "", bf->node, bkind(bf->kind),
            td_type_str(c->g, n->dtype, n->rank, n->shape, b, sizeof b));
    if (bf->first >= 0)
      fprintf(out, "  e%d_n%d_k%d -> e%d_b%d;\n", entry_no, bf->node, bf->first, entry_no, bf->node);
  }
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    for (int i = 0; i < kn->n_reads; i++) {
      int src = kn->reads[i];
      /* an edge into the first shown op of the kernel reading it */
      int to = -1;
      for (int j = 0; j < kn->n_nodes && to < 0; j++) {
        const td_node *n = &c->g->nodes[kn->nodes[j]];
        for (int q = 0; q < n->n_in && to < 0 && shown_op(n); q++)
          if (n->in[q] == src) to = kn->nodes[j];
      }
      if (to >= 0) fprintf(out, "  e%d_b%d -> e%d_n%d_k%d;\n", entry_no, src, entry_no, to, k);
    }
    for (int j = 0; j < kn->n_nodes; j++) {
      const td_node *n = &c->g->nodes[kn->nodes[j]];
      if (!shown_op(n)) continue;
      for (int q = 0; q < n->n_in; q++) {
        const td_node *x = &c->g->nodes[n->in[q]];
        int inside = 0;
        for (int t = 0; t < kn->n_nodes; t++) inside |= kn->nodes[t] == n->in[q];
        if (inside && shown_op(x))
          fprintf(out, "  e%d_n%d_k%d -> e%d_n%d_k%d;\n", entry_no, n->in[q], k, entry_no, kn->nodes[j], k);
      }
    }
  }
}

/* ---- entry points ---------------------------------------------------------------- */

void td_explain_begin(const td_explain_opts *o, FILE *out) {
  if (o->fmt == TD_EXPLAIN_JSON) fputs("[", out);
  if (o->fmt == TD_EXPLAIN_DOT) fputs("digraph tdsl {\n  node [fontname=\"monospace\"];\n", out);
}

void td_explain_end(const td_explain_opts *o, FILE *out) {
  if (o->fmt == TD_EXPLAIN_JSON) fputs("]\n", out);
  if (o->fmt == TD_EXPLAIN_DOT) fputs("}\n", out);
}

void td_explain(const td_plan *plan, const td_opt_stats *st, const td_explain_opts *o,
                int index, FILE *out) {
  ctx c;
  ctx_init(&c, plan->g, plan, o, out);
  td_kgroups kg;
  if (!td_kernel_groups(plan, &kg)) {   /* out of memory: the report without it */
    c.same = kg.rep;
    c.n_distinct = kg.n_distinct;
  }
  switch (o->fmt) {
  case TD_EXPLAIN_JSON:
    fputs(index ? ",\n" : "\n", out);
    json_entry(&c, st);
    break;
  case TD_EXPLAIN_DOT: dot_entry(&c, index); break;
  default:
    if (index) fputc('\n', out);
    text_entry(&c, st);
  }
  if (c.same) td_kgroups_free(&kg);
}

/* explain.c - text, JSON and DOT reports of a kernel plan (tdsl explain).
 *
 * Library code that writes to a FILE the caller chose (the CLI passes
 * stdout); nothing here decides anything about the plan.
 */
#include "compiler/explain.h"

#include <stdlib.h>
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

/* ---- the ops of a kernel, counted ---------------------------------------------- */

/* One op of a kernel's listing: how many of its nodes the kernel evaluates
 * and the first few distinct places they come from. */
typedef struct opgroup {
  td_op op;
  int count;
  td_span at[3];
  int n_at, more_places;
} opgroup;

static int same_place(td_span a, td_span b) {
  return a.file == b.file && a.line == b.line && a.col == b.col;
}

/* The shown ops of kernel k grouped by op, in the order of their first
 * appearance, into g (k->n_nodes entries); the number of groups, or -1
 * when g is NULL (out of memory: the caller lists every op). */
static int op_groups(const ctx *c, const td_kernel *k, opgroup *g) {
  if (!g) return -1;
  int n = 0;
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *nd = &c->g->nodes[k->nodes[i]];
    if (!shown_op(nd)) continue;
    int j = 0;
    while (j < n && g[j].op != nd->op) j++;
    if (j == n) {
      memset(&g[n], 0, sizeof g[n]);
      g[n++].op = nd->op;
    }
    opgroup *o = &g[j];
    o->count++;
    int seen = 0;
    for (int a = 0; a < o->n_at; a++) seen |= same_place(o->at[a], nd->span);
    if (seen) continue;
    if (o->n_at < 3) o->at[o->n_at++] = nd->span;
    else o->more_places = 1;
  }
  return n;
}

/* "slice ×25" (the count only when more than one). */
static void group_name(FILE *out, const opgroup *o) {
  fputs(td_ops[o->op].name, out);
  if (o->count > 1) fprintf(out, " \xc3\x97%d", o->count);   /* U+00D7 MULTIPLICATION SIGN, in UTF-8 */
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
  opgroup *gr = k->n_nodes ? malloc((size_t)k->n_nodes * sizeof *gr) : NULL;
  int ng = op_groups(c, k, gr);
  for (int j = 0; j < ng; j++) {   /* "slice ×25 (t.td:3:5), add (t.td:4:7, t.td:5:7)" */
    fputs(j ? ", " : " ", out);
    group_name(out, &gr[j]);
    for (int a = 0; a < gr[j].n_at; a++)
      fprintf(out, "%s%s", a ? ", " : " (", loc_txt(c, gr[j].at[a], b, sizeof b));
    fputs(gr[j].more_places ? ", ...)" : ")", out);
  }
  free(gr);
  int first = 1;
  for (int i = 0; ng < 0 && i < k->n_nodes; i++) {   /* out of memory: every op */
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

/* Text inside a DOT "string": quotes and backslashes escaped, control
 * characters dropped. */
static void dot_text(FILE *out, const char *s) {
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
    else if (ch >= 0x20) fputc(ch, out);
  }
}

/* "f32[N, 4]" of a node (numbers with --size). */
static const char *type_txt(const ctx *c, const td_node *n, char *buf, size_t sz) {
  char sh[256];
  snprintf(buf, sz, "%s%s", td_dtype_name(n->dtype), shape_txt(c, n->shape, n->rank, sh, sizeof sh));
  return buf;
}

/* "x %0 f32[N, 4]" of a buffer's node. */
static void dot_buf_label(const ctx *c, int node, FILE *out) {
  const td_node *n = &c->g->nodes[node];
  char b[320];
  if (n->name) {
    dot_text(out, n->name);
    fputc(' ', out);
  }
  fprintf(out, "%%%d ", node);
  dot_text(out, type_txt(c, n, b, sizeof b));
}

/* --dot: every op of every kernel (a cluster per kernel) with its shape,
 * dtype and source line, and the buffers between kernels. */
static void dot_entry(const ctx *c, int entry_no) {
  const td_plan *p = c->p;
  FILE *out = c->out;
  char b[320];
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    fprintf(out, "  subgraph cluster_%d_%d {\n    label=\"", entry_no, k);
    dot_text(out, c->g->name);
    fprintf(out, ": %s\";\n", kn->name);
    for (int i = 0; i < kn->n_nodes; i++) {
      const td_node *n = &c->g->nodes[kn->nodes[i]];
      if (!shown_op(n)) continue;
      fprintf(out, "    e%d_n%d_k%d [label=\"%s %%%d\\n", entry_no, kn->nodes[i], k, td_ops[n->op].name, kn->nodes[i]);
      dot_text(out, type_txt(c, n, b, sizeof b));
      fputs("\\n", out);
      dot_text(out, loc_txt(c, n->span, b, sizeof b));
      fputs("\"];\n", out);
    }
    fprintf(out, "  }\n");
  }
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *bf = &p->bufs[i];
    fprintf(out, "  e%d_b%d [shape=box, label=\"", entry_no, bf->node);
    dot_buf_label(c, bf->node, out);
    fprintf(out, "\\n%s\"];\n", bkind(bf->kind));
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

/* One left-justified line of a record-less box label. */
static void dot_line_end(FILE *out) { fputs("\\l", out); }

/* The layer of kernel k for --dot=kernels: the start of the name of the
 * first weight it reads up to its first numbered part ("blocks.3" of
 * blocks.3.attn.q.weight); its length, 0 when none. */
static int layer_key(const ctx *c, int k, const char **key) {
  const td_kernel *kn = &c->p->kernels[k];
  for (int i = 0; i < kn->n_reads; i++) {
    int bi = c->p->buf_of[kn->reads[i]];
    const char *name = c->g->nodes[kn->reads[i]].name;
    if (bi < 0 || c->p->bufs[bi].kind != TD_BUF_PARAM || !name) continue;
    for (const char *q = name; *q;) {
      size_t n = strcspn(q, ".");
      if (n && strspn(q, "0123456789") == n) {
        *key = name;
        return (int)(q + n - name);
      }
      q += n + (q[n] == '.');
    }
    return 0;
  }
  return -1;   /* no weights: the layer around it, if any */
}

static int same_key(const char *a, int na, const char *b, int nb) {
  return na > 0 && na == nb && !memcmp(a, b, (size_t)na);
}

/* --dot=kernels: one box per kernel (its kind, space, ops counted, the
 * weights it reads, where its root comes from), the entry's inputs and
 * outputs as ellipses, and an edge per buffer from the kernel writing it to
 * each kernel reading it, labelled with the buffer's shape.  A cluster per
 * entry point. */
static void dot_kernels_entry(const ctx *c, int entry_no) {
  const td_plan *p = c->p;
  const td_graph *g = c->g;
  FILE *out = c->out;
  char b[320];
  fprintf(out, "  subgraph cluster_e%d {\n    label=\"", entry_no);
  dot_text(out, g->name);
  fprintf(out, " (%d kernel%s)\";\n", p->n_kernels, p->n_kernels == 1 ? "" : "s");
  /* the kernels of one layer (blocks.3) in a cluster: a kernel without
   * weights between two of the same layer belongs to it */
  const char **keys = malloc((size_t)(p->n_kernels + 1) * sizeof *keys);
  int *klen = malloc((size_t)(p->n_kernels + 1) * sizeof *klen);
  if (keys && klen) {
    for (int k = 0; k < p->n_kernels; k++) klen[k] = layer_key(c, k, &keys[k]);
    for (int k = 0; k < p->n_kernels; k++) {
      if (klen[k] >= 0) continue;
      int a = k - 1, z = k + 1;
      while (a >= 0 && klen[a] < 0) a--;
      while (z < p->n_kernels && klen[z] < 0) z++;
      klen[k] = 0;
      if (a >= 0 && z < p->n_kernels && same_key(keys[a], klen[a], keys[z], klen[z])) {
        keys[k] = keys[a];
        klen[k] = -2 - klen[a];   /* resolved below, not a key of its own for later kernels */
      }
    }
    for (int k = 0; k < p->n_kernels; k++)
      if (klen[k] <= -2) klen[k] = -2 - klen[k];
      else if (klen[k] < 0) klen[k] = 0;
  }
  int open = -1;   /* the kernel that opened the layer's cluster */
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    if (keys && klen && (open < 0 || !same_key(keys[open], klen[open], keys[k], klen[k]))) {
      if (open >= 0) fputs("    }\n", out);
      open = -1;
      if (klen[k] > 0) {
        fprintf(out, "    subgraph cluster_e%d_l%d {\n    label=\"%.*s\";\n", entry_no, k, klen[k], keys[k]);
        open = k;
      }
    }
    fprintf(out, "    e%d_k%d [shape=box, label=\"kernel %d: %s (%s)", entry_no, k, k, kn->name, td_kkind_name(kn->kind));
    dot_line_end(out);
    if (kn->kind != TD_KERN_SCAN) {
      fputs("over ", out);
      dot_text(out, shape_txt(c, kn->space, kn->rank, b, sizeof b));
      if (c->same && c->same[k] != k) fprintf(out, ", the code of kernel %d", c->same[k]);
      dot_line_end(out);
    } else if (kn->body) {
      fprintf(out, "body: %d kernel%s per step", kn->body->n_kernels, kn->body->n_kernels == 1 ? "" : "s");
      dot_line_end(out);
    }
    /* the ops, counted, about 60 characters a line */
    opgroup *gr = kn->n_nodes ? malloc((size_t)kn->n_nodes * sizeof *gr) : NULL;
    int ng = op_groups(c, kn, gr), col = 0;
    for (int j = 0; j < ng; j++) {
      int w = (int)strlen(td_ops[gr[j].op].name) + (gr[j].count > 1 ? 6 : 0) + 2;
      if (col && col + w > 60) {
        fputc(',', out);
        dot_line_end(out);
        col = 0;
      } else if (col) {
        fputs(", ", out);
      }
      group_name(out, &gr[j]);
      col += w;
    }
    if (ng < 0) fprintf(out, "%d ops", kn->n_nodes);
    free(gr);
    if (ng) dot_line_end(out);
    int nw = 0;
    for (int i = 0; i < kn->n_reads; i++) {
      int bi = p->buf_of[kn->reads[i]];
      if (bi < 0 || p->bufs[bi].kind != TD_BUF_PARAM) continue;
      fputs(nw++ ? ", " : "weights: ", out);
      dot_buf_label(c, kn->reads[i], out);
    }
    if (nw) dot_line_end(out);
    dot_text(out, loc_txt(c, g->nodes[kn->root].span, b, sizeof b));
    dot_line_end(out);
    fputs("\"];\n", out);
  }
  if (open >= 0) fputs("    }\n", out);
  free(keys);
  free(klen);
  /* inputs, outputs and buffers updated in place: ellipses */
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *bf = &p->bufs[i];
    if (bf->kind == TD_BUF_TEMP || bf->kind == TD_BUF_PARAM) continue;
    fprintf(out, "    e%d_b%d [shape=ellipse%s, label=\"%s\\n", entry_no, bf->node,
            bf->kind == TD_BUF_INPUT ? "" : ", style=bold", bkind(bf->kind));
    dot_buf_label(c, bf->node, out);
    fputs("\"];\n", out);
    if (bf->kind != TD_BUF_INPUT && bf->first >= 0)
      fprintf(out, "    e%d_k%d -> e%d_b%d;\n", entry_no, bf->first, entry_no, bf->node);
  }
  /* what each kernel reads: from an input's ellipse, or from the kernel that wrote the buffer */
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    for (int i = 0; i < kn->n_reads; i++) {
      int node = kn->reads[i], bi = p->buf_of[node];
      if (bi < 0 || p->bufs[bi].kind == TD_BUF_PARAM) continue;
      const td_buffer *bf = &p->bufs[bi];
      if (bf->first >= 0 && bf->first != k) {
        fprintf(out, "    e%d_k%d -> e%d_k%d [label=\"", entry_no, bf->first, entry_no, k);
        dot_buf_label(c, node, out);
        fputs("\"];\n", out);
      } else if (bf->first < 0 && bf->kind != TD_BUF_TEMP) {
        fprintf(out, "    e%d_b%d -> e%d_k%d;\n", entry_no, node, entry_no, k);
      }
    }
  }
  fputs("  }\n", out);
}

/* ---- entry points ---------------------------------------------------------------- */

void td_explain_begin(const td_explain_opts *o, FILE *out) {
  if (o->fmt == TD_EXPLAIN_JSON) fputs("[", out);
  if (o->fmt == TD_EXPLAIN_DOT || o->fmt == TD_EXPLAIN_DOT_KERNELS)
    fputs("digraph tdsl {\n  node [fontname=\"monospace\"];\n  edge [fontname=\"monospace\", fontsize=10];\n", out);
}

void td_explain_end(const td_explain_opts *o, FILE *out) {
  if (o->fmt == TD_EXPLAIN_JSON) fputs("]\n", out);
  if (o->fmt == TD_EXPLAIN_DOT || o->fmt == TD_EXPLAIN_DOT_KERNELS) fputs("}\n", out);
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
  case TD_EXPLAIN_DOT_KERNELS: dot_kernels_entry(&c, index); break;
  default:
    if (index) fputc('\n', out);
    text_entry(&c, st);
  }
  if (c.same) td_kgroups_free(&kg);
}

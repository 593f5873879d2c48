/* kernel_key.c - a kernel's code identity (plan.h's td_kernel_groups).
 *
 * Two kernels whose generated code would be the same but for which
 * buffers they read and write (each layer of a stack, each step of an
 * unrolled loop) share one compiled function.  A kernel's key is its
 * description with every node renumbered in the order the kernel meets it
 * (its own nodes in order, then the nodes it loads, in the order its
 * nodes name them as inputs) and every buffer numbered by first use; the
 * buffers themselves (their indices, offsets, names) are left out.  What
 * the code generators read of a kernel is in it: the kind, the iteration
 * space, the stages, the matmul views, whether B is prepacked and how,
 * and per node its op, dtype, shape, inputs (local numbers) and every
 * attribute; per node it loads only what a load reads: dtype, shape and
 * its buffer's size (not its kind: an input, a parameter or a temporary
 * is read alike; what a parameter changes, the prepacked B, is in the
 * kernel's part).  Shapes, views and sizes are written as
 * polynomials; attributes as stored (a symbolic one is an index into the
 * graph's polynomials, which is enough within one graph).
 *
 * A field the generators read that is missing here would let two kernels
 * share code they must not: plan_key.c's static asserts fail when the
 * structures change, and that file's comment names this one too.
 */
#include <string.h>

#include "runtime/mem.h"
#include "runtime/strbuf.h"
#include "compiler/plan.h"
#include "lang/conv.h"

typedef struct keyer {
  const td_plan *p;
  const td_graph *g;
  td_strbuf b;
  int *local;        /* per node: local number, or -1 */
  int *order;        /* local number -> node */
  int n;
  int *lbuf;         /* per buffer: local number, or -1 */
  char *inner;       /* per node: computed inside the kernel being keyed */
  int *stack, *next; /* number_from's walk */
  int n_bufs;
} keyer;

static int local_of(keyer *K, int node) {
  if (node < 0) return -1;
  if (K->local[node] < 0) {
    K->local[node] = K->n;
    K->order[K->n++] = node;
  }
  return K->local[node];
}

static void dim(keyer *K, td_dim d) {
  char s[512];
  if (TD_DIM_IS_CONST(d)) td_sb_printf(&K->b, "%lld", (long long)d);
  else td_sb_printf(&K->b, "(%s)", td_dim_str(K->g, d, s, sizeof s));
}

static void dims(keyer *K, const char *what, const td_dim *d, int n) {
  td_sb_printf(&K->b, " %s=", what);
  for (int i = 0; i < n; i++) {
    if (i) td_sb_puts(&K->b, ",");
    dim(K, d[i]);
  }
}

static void locals(keyer *K, const char *what, const int *v, int n) {
  td_sb_printf(&K->b, " %s=", what);
  for (int i = 0; i < n; i++) td_sb_printf(&K->b, "%s%d", i ? "," : "", local_of(K, v[i]));
}

static void buffer(keyer *K, int node) {
  int bi = K->p->buf_of[node];
  if (bi < 0) {
    td_sb_puts(&K->b, " buf=-");
    return;
  }
  if (K->lbuf[bi] < 0) K->lbuf[bi] = K->n_bufs++;
  td_sb_printf(&K->b, " buf=%d bytes=", K->lbuf[bi]);
  dim(K, K->p->bufs[bi].bytes);
}

static void view(keyer *K, const char *what, const td_view *v) {
  td_sb_printf(&K->b, " %s=%d,%d,", what, local_of(K, v->base), v->rank);
  dim(K, v->offset);
  dims(K, "shape", v->shape, v->rank);
  dims(K, "stride", v->stride, v->rank);
}

/* A node computed inside the kernel: everything. */
static void inner(keyer *K, int n) {
  const td_node *nd = &K->g->nodes[n];
  const td_attr *a = &nd->attr;
  td_sb_printf(&K->b, "n%d op=%d dt=%d", local_of(K, n), (int)nd->op, (int)nd->dtype);
  dims(K, "shape", nd->shape, nd->rank);
  locals(K, "in", nd->in, nd->n_in);
  /* attributes as stored (a slice's steps are plain numbers, negative too;
   * a symbolic value is an index into this graph's polynomials) */
  td_sb_printf(&K->b, " i=%lld,%lld f=%a,%a dim=%lld", (long long)a->i, (long long)a->i2, a->f, a->f2,
               (long long)a->dim);
  /* not attr.stream: the code reads a random node's stream from dv (the
   * runtime mixes it with the call), which each kernel's wrapper fills */
  td_sb_printf(&K->b, " seed=%llu axes=%u axis=%d perm=", (unsigned long long)a->seed, (unsigned)a->axes, a->axis);
  for (int i = 0; i < TD_MAX_RANK; i++) td_sb_printf(&K->b, "%s%d", i ? "," : "", a->perm[i]);
  td_sb_puts(&K->b, " start/step=");
  for (int i = 0; i < TD_MAX_RANK; i++) td_sb_printf(&K->b, "%lld/%lld,", (long long)a->start[i], (long long)a->step[i]);
  td_sb_printf(&K->b, " init=%d,%a,%a buffer=%d parts=%d", (int)a->init, a->init_a, a->init_b, a->buffer,
               a->n_parts);
  td_sb_printf(&K->b, " scan=%d,%d,%d,%d,%d", a->n_carry, a->n_xs, a->index, a->reverse,   /* see plan_key.c */
               a->body ? a->body->n_nodes : -1);
  for (int k = 0; k < a->n_parts; k++) {
    if (a->parts[k].text) td_sb_printf(&K->b, " %zu:%s", strlen(a->parts[k].text), a->parts[k].text);
    else td_sb_printf(&K->b, " #%d", a->parts[k].input);
  }
  int32_t cv[TD_CONV_ATTR_INTS];
  td_conv_attr_ints(&a->conv, cv);
  td_sb_puts(&K->b, " conv=");
  for (int k = 0; k < TD_CONV_ATTR_INTS; k++) td_sb_printf(&K->b, "%s%d", k ? "," : "", (int)cv[k]);
  buffer(K, n);
  td_sb_puts(&K->b, "\n");
}

/* A node the kernel loads: what a load reads. */
static void outer(keyer *K, int n) {
  const td_node *nd = &K->g->nodes[n];
  td_sb_printf(&K->b, "x%d dt=%d", K->local[n], (int)nd->dtype);
  dims(K, "shape", nd->shape, nd->rank);
  buffer(K, n);
  td_sb_puts(&K->b, "\n");
}

/* Numbers the kernel's nodes that `from` depends on inside the kernel,
 * inputs before users (a depth-first walk in input order), so that the
 * numbering follows the structure, not the node ids: a layer whose mask
 * was shared with an earlier one by CSE has its nodes in another id
 * order but the same walk. */
static void number_from(keyer *K, int from) {
  if (from < 0 || !K->inner[from] || K->local[from] >= 0) return;
  int sp = 0;
  K->stack[sp] = from;
  K->next[sp++] = 0;
  K->local[from] = -2;   /* on the stack */
  while (sp) {
    int n = K->stack[sp - 1];
    const td_node *nd = &K->g->nodes[n];
    if (K->next[sp - 1] < nd->n_in) {
      int m = nd->in[K->next[sp - 1]++];
      if (m >= 0 && K->inner[m] && K->local[m] == -1) {
        K->local[m] = -2;
        K->stack[sp] = m;
        K->next[sp++] = 0;
      }
      continue;
    }
    sp--;
    K->local[n] = K->n;
    K->order[K->n++] = n;
  }
}

static char *kernel_key(keyer *K, int ki) {
  const td_kernel *k = &K->p->kernels[ki];
  K->b = (td_strbuf){0};
  K->n = K->n_bufs = 0;
  for (int i = 0; i < k->n_nodes; i++) K->inner[k->nodes[i]] = 1;
  number_from(K, k->root);
  for (int s = 0; s < k->n_stages; s++)
    for (int i = 0; i < k->stages[s].n_reds; i++) number_from(K, k->stages[s].reds[i]);
  for (int i = 0; i < k->n_nodes; i++) number_from(K, k->nodes[i]);
  for (int i = 0; i < k->n_nodes; i++) K->inner[k->nodes[i]] = 0;
  td_sb_printf(&K->b, "k%d nodes=%d\n", (int)k->kind, k->n_nodes);
  for (int i = 0; i < k->n_nodes; i++) inner(K, K->order[i]);
  td_sb_printf(&K->b, "root=%d row_root=%d matmul=%d", local_of(K, k->root), k->row_root,
               local_of(K, k->matmul));
  dims(K, "space", k->space, k->rank);
  td_sb_printf(&K->b, " red=%u passes=%d stages=%d", (unsigned)k->red_axes, k->n_passes, k->n_stages);
  for (int s = 0; s < k->n_stages; s++) locals(K, "reds", k->stages[s].reds, k->stages[s].n_reds);
  if (k->kind == TD_KERN_MATMUL) {
    view(K, "a", &k->a);
    view(K, "b", &k->b);
    td_prepack pp;
    if (td_kernel_prepack(K->p, k, &pp))
      td_sb_printf(&K->b, " prepack=%lld,%lld,%lld,%lld,%lld", (long long)pp.n, (long long)pp.k, (long long)pp.off,
                   (long long)pp.sbk, (long long)pp.sbn);
  }
  locals(K, "reads", k->reads, k->n_reads);
  td_sb_puts(&K->b, "\n");
  /* the loaded nodes, in the order the kernel named them */
  for (int i = k->n_nodes; i < K->n; i++) outer(K, K->order[i]);
  for (int i = 0; i < K->n; i++) {
    int bi = K->p->buf_of[K->order[i]];
    K->local[K->order[i]] = -1;
    if (bi >= 0) K->lbuf[bi] = -1;
  }
  if (K->b.oom) {
    td_free(K->b.s);
    return NULL;
  }
  return K->b.s;
}

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

int td_kernel_groups(const td_plan *p, td_kgroups *kg) {
  const td_graph *g = p->g;
  int nk = p->n_kernels, nn = g->n_nodes;
  memset(kg, 0, sizeof *kg);
  keyer K = {.p = p, .g = g};
  char **keys = td_calloc((size_t)nk + 1, sizeof *keys);
  uint64_t *hash = td_calloc((size_t)nk + 1, sizeof *hash);
  K.local = td_malloc(((size_t)nn + 1) * sizeof *K.local);
  K.order = td_malloc(((size_t)nn + 1) * sizeof *K.order);
  K.lbuf = td_malloc(((size_t)p->n_bufs + 1) * sizeof *K.lbuf);
  K.inner = td_calloc((size_t)nn + 1, 1);
  K.stack = td_malloc(((size_t)nn + 1) * sizeof *K.stack);
  K.next = td_malloc(((size_t)nn + 1) * sizeof *K.next);
  kg->rep = td_malloc(((size_t)nk + 1) * sizeof *kg->rep);
  kg->first = td_malloc(((size_t)nk + 1) * sizeof *kg->first);
  size_t cap = 0;
  int rc = -1;
  if (!keys || !hash || !K.local || !K.order || !K.lbuf || !K.inner || !K.stack || !K.next || !kg->rep || !kg->first) goto out;
  for (int i = 0; i < nn; i++) K.local[i] = -1;
  for (int i = 0; i < p->n_bufs; i++) K.lbuf[i] = -1;
  kg->n_kernels = nk;
  for (int k = 0; k < nk; k++) {
    if (!(keys[k] = kernel_key(&K, k))) goto out;
    /* K.order still holds the kernel's nodes in key order */
    if (kg->n_nodes + (size_t)K.n > cap) {
      size_t nc = 2 * cap + (size_t)K.n + 64;
      int *no = td_realloc(kg->nodes, nc * sizeof *no);
      if (!no) goto out;
      kg->nodes = no;
      cap = nc;
    }
    kg->first[k] = (int)kg->n_nodes;
    memcpy(kg->nodes + kg->n_nodes, K.order, (size_t)K.n * sizeof *K.order);
    kg->n_nodes += (size_t)K.n;
    hash[k] = fnv(keys[k]);
    kg->rep[k] = k;
    /* a scan kernel has no code here (its body's plan has), so none shares */
    for (int j = 0; j < k && p->kernels[k].kind != TD_KERN_SCAN; j++)
      if (kg->rep[j] == j && p->kernels[j].kind != TD_KERN_SCAN && hash[j] == hash[k] && !strcmp(keys[j], keys[k])) {
        kg->rep[k] = j;
        break;
      }
    kg->n_distinct += kg->rep[k] == k;
  }
  rc = 0;
out:
  for (int k = 0; keys && k < nk; k++) td_free(keys[k]);
  td_free(keys);
  td_free(hash);
  td_free(K.local);
  td_free(K.order);
  td_free(K.lbuf);
  td_free(K.inner);
  td_free(K.stack);
  td_free(K.next);
  if (rc) td_kgroups_free(kg);
  return rc;
}

void td_kgroups_free(td_kgroups *kg) {
  td_free(kg->rep);
  td_free(kg->first);
  td_free(kg->nodes);
  memset(kg, 0, sizeof *kg);
}

/* plan_key.c - the compile cache's key: everything the code generator
 * reads, as text.
 *
 * A cache hit must not need libgccjit (it aborts the process when its own
 * memory runs out, and building a context costs as much as the rest of a
 * warm start), so the key is not the generated code but what it is
 * generated from: the graph and the kernel plan, field by field, with the
 * interned size polynomials in their order (kernel descriptions stored in
 * the shared object hold td_dim values, which are indices into that
 * table), after a header naming the generator itself (tdsl's version and
 * TDSL_CODE_ID, a hash of the library's sources taken when it was built),
 * the target and the options.  Equal texts mean equal code; the cache
 * compares them byte for byte.
 *
 * A field the generator reads that is missing here would let two
 * different programs share code: new fields of td_node, td_attr,
 * td_kernel, td_view or td_buffer belong here too (the static asserts
 * below fail when one of those structures changes size), and in
 * kernel_key.c's key of one kernel, which decides what code kernels share.
 */
#include <string.h>

#include "runtime/mem.h"
#include "runtime/strbuf.h"
#include "compiler/build_id.h"
#include "compiler/jit_impl.h"
#include "lang/conv.h"

/* x86-64 sizes when this file was written: a structure of another size has
 * gained (or lost) a field, which the key must then cover. */
#if defined(__x86_64__)
_Static_assert(sizeof(td_attr) == 344 && sizeof(td_node) == 472, "td_node changed: update plan_key.c");
_Static_assert(sizeof(td_kernel) == 472 && sizeof(td_view) == 144 && sizeof(td_kstage) == 16,
               "td_kernel changed: update plan_key.c");
_Static_assert(sizeof(td_buffer) == 40 && sizeof(td_plan) == 112 && sizeof(td_graph) == 168,
               "td_plan or td_graph changed: update plan_key.c");
#endif

static void dims(td_strbuf *b, const char *what, const td_dim *d, int n) {
  td_sb_printf(b, " %s", what);
  for (int i = 0; i < n; i++) td_sb_printf(b, "%s%lld", i ? "," : "=", (long long)d[i]);
}

static void ints(td_strbuf *b, const char *what, const int *v, int n) {
  td_sb_printf(b, " %s", what);
  for (int i = 0; i < n; i++) td_sb_printf(b, "%s%d", i ? "," : "=", v[i]);
}

static void str(td_strbuf *b, const char *s) {
  if (!s) { td_sb_puts(b, " -"); return; }
  td_sb_printf(b, " %zu:", strlen(s));   /* length first: any bytes, no escaping */
  td_sb_puts(b, s);
}

static void node(td_strbuf *b, const td_node *n) {
  const td_attr *a = &n->attr;
  td_sb_printf(b, "n %d %d", (int)n->op, (int)n->dtype);
  dims(b, "shape", n->shape, n->rank);
  ints(b, "in", n->in, n->n_in);
  td_sb_printf(b, " i=%lld,%lld f=%a,%a dim=%lld seed=%llu,%llu axes=%u axis=%d", (long long)a->i,
               (long long)a->i2, a->f, a->f2, (long long)a->dim, (unsigned long long)a->seed,
               (unsigned long long)a->stream, (unsigned)a->axes, a->axis);
  ints(b, "perm", a->perm, TD_MAX_RANK);
  dims(b, "start", a->start, TD_MAX_RANK);
  dims(b, "step", a->step, TD_MAX_RANK);
  td_sb_printf(b, " init=%d,%a,%a buffer=%d parts=%d", (int)a->init, a->init_a, a->init_b, a->buffer, a->n_parts);
  /* a SCAN's body is not in the key: no plan holds a SCAN yet (td_lower
   * refuses them); its counts are, so that one cannot go unnoticed */
  td_sb_printf(b, " scan=%d,%d,%d,%d,%d", a->n_carry, a->n_xs, a->index, a->reverse, a->body ? a->body->n_nodes : -1);
  for (int k = 0; k < a->n_parts; k++) {
    if (a->parts[k].text) str(b, a->parts[k].text);
    else td_sb_printf(b, " #%d", a->parts[k].input);
  }
  int32_t cv[TD_CONV_ATTR_INTS];
  td_conv_attr_ints(&a->conv, cv);
  td_sb_puts(b, " conv=");
  for (int k = 0; k < TD_CONV_ATTR_INTS; k++) td_sb_printf(b, "%s%d", k ? "," : "", (int)cv[k]);
  str(b, n->name);
  td_sb_puts(b, "\n");
}

static void view(td_strbuf *b, const char *what, const td_view *v) {
  td_sb_printf(b, " %s=%d,%d,%lld", what, v->base, v->rank, (long long)v->offset);
  dims(b, "shape", v->shape, v->rank);
  dims(b, "stride", v->stride, v->rank);
}

static void kernel(td_strbuf *b, const td_kernel *k) {
  td_sb_printf(b, "k %d", (int)k->kind);
  str(b, k->name);
  td_sb_printf(b, " root=%d", k->root);
  ints(b, "nodes", k->nodes, k->n_nodes);
  ints(b, "reads", k->reads, k->n_reads);
  dims(b, "space", k->space, k->rank);
  td_sb_printf(b, " red=%u row_root=%d passes=%d stages=%d", (unsigned)k->red_axes, k->row_root, k->n_passes,
               k->n_stages);
  for (int s = 0; s < k->n_stages; s++) ints(b, "reds", k->stages[s].reds, k->stages[s].n_reds);
  td_sb_printf(b, " matmul=%d", k->matmul);
  view(b, "a", &k->a);
  view(b, "b", &k->b);
  td_sb_printf(b, " cost=%lld,%lld,%lld\n", (long long)k->bytes_read, (long long)k->bytes_written,
               (long long)k->flops);
}

char *tdc_plan_key(const td_plan *p, const char *march, int opt, int debug_bounds) {
  const td_graph *g = p->g;
  td_strbuf b = {0};
  char ds[512];
  td_sb_printf(&b, "tdsl-kernels-7 %s %s -O%d %s bounds=%d\n", PACKAGE_VERSION, TDSL_CODE_ID, opt, march,
               debug_bounds);
  td_sb_printf(&b, "graph");
  str(&b, g->name);
  td_sb_printf(&b, "\nsyms %d", g->n_syms);
  for (int s = 0; s < g->n_syms; s++) str(&b, g->syms[s]);
  td_sb_printf(&b, "\ndims %d\n", g->n_dims);
  for (int d = 0; d < g->n_dims; d++) td_sb_printf(&b, "%s\n", td_dim_str(g, -(td_dim)(d + 1), ds, sizeof ds));
  for (int n = 0; n < g->n_nodes; n++) node(&b, &g->nodes[n]);
  ints(&b, "outputs", g->outputs, g->n_outputs);
  ints(&b, "inputs", g->inputs, g->n_inputs);
  ints(&b, "params", g->params, g->n_params);
  ints(&b, "update_slots", g->update_slots, g->n_update_outs);
  td_sb_printf(&b, " updates=%d", g->n_updates);
  for (int u = 0; u < g->n_updates; u++) td_sb_printf(&b, " %d:%d", g->updates[u].param, g->updates[u].value);
  td_sb_printf(&b, "\nplan %d\n", p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) kernel(&b, &p->kernels[k]);
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *u = &p->bufs[i];
    td_sb_printf(&b, "b %d %d %d %lld %lld %d %d\n", u->node, (int)u->kind, u->index, (long long)u->bytes,
                 (long long)u->offset, u->first, u->last);
  }
  ints(&b, "buf_of", p->buf_of, g->n_nodes);
  ints(&b, "kernel_of", p->kernel_of, g->n_nodes);
  ints(&b, "out", p->out_nodes, p->n_out_nodes);
  dims(&b, "slots", p->slot_bytes, p->n_slots);
  td_sb_printf(&b, " arena=%lld outputs=%lld ops=%d\n", (long long)p->arena_bytes, (long long)p->output_bytes,
               p->n_ops);
  if (b.oom) {
    td_free(b.s);
    return NULL;
  }
  return b.s;
}

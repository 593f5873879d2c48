/* conv.c - the CONV primitive's typing contract, printing and window
 * arithmetic (conv.h).  The elaborator (builtins_conv.c) makes CONV nodes
 * from conv1d/conv2d/conv3d, the gradient (grad.c) makes more of them
 * (transposed and weight-gradient convolutions), and every backend reads
 * the same attributes: lang/ir.h's td_conv_attr. */
#include "lang/conv.h"

#include <string.h>

#define VFAIL(...) do { td_err_set(err, "IR verify: node %%%d (conv): ", id); \
    size_t l_ = strlen(err->msg); snprintf(err->msg + l_, sizeof err->msg - l_, __VA_ARGS__); \
    return -1; } while (0)

static int attrs_ok(const td_conv_attr *a) {
  if (a->spatial < 1 || a->spatial > TD_CONV_MAX_SPATIAL || a->groups < 1) return 0;
  for (int i = 0; i < a->spatial; i++)
    if (a->stride[i] < 1 || a->dil[i] < 1 || a->ldil[i] < 1) return 0;
  return 1;
}

int td_conv_verify(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  const td_node *x = &g->nodes[n->in[0]], *w = &g->nodes[n->in[1]];
  const td_conv_attr *a = &n->attr.conv;
  if (!attrs_ok(a)) VFAIL("bad attributes");
  int r = a->spatial + 2;
  if (x->rank != r || w->rank != r || n->rank != r) VFAIL("ranks must be %d", r);
  if (x->dtype != n->dtype || w->dtype != n->dtype || !td_dtype_is_float(n->dtype)) VFAIL("dtypes differ or are not float");
  if (n->shape[0] != x->shape[0]) VFAIL("batch size changed");
  if (n->shape[1] != w->shape[0]) VFAIL("output channels are not the weight's first axis");
  /* channel counts: checked where literal (a weight gradient's channels
   * are the batch size, which may be symbolic) */
  if (a->groups == 1 && x->shape[1] != w->shape[1]) VFAIL("input channels differ from the weight's");
  if (TD_DIM_IS_CONST(x->shape[1]) && TD_DIM_IS_CONST(w->shape[1]) && x->shape[1] != a->groups * w->shape[1])
    VFAIL("input channels are not groups * the weight's");
  if (TD_DIM_IS_CONST(w->shape[0]) && w->shape[0] % a->groups) VFAIL("groups do not divide the output channels");
  return 0;
}

_Static_assert(sizeof(td_conv_attr) == 14 * sizeof(int32_t), "td_conv_attr holds int32_t fields only");

void td_conv_attr_ints(const td_conv_attr *a, int32_t *out) { memcpy(out, a, sizeof *a); }

static void ints(FILE *out, const char *what, const int32_t *v, int n) {
  fprintf(out, " %s=[", what);
  for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? "," : "", (int)v[i]);
  fputc(']', out);
}

void td_conv_print_attr(const td_conv_attr *a, FILE *out) {
  int s = a->spatial > 0 && a->spatial <= TD_CONV_MAX_SPATIAL ? a->spatial : 0;
  ints(out, "stride", a->stride, s);
  ints(out, "pad", a->pad, s);
  ints(out, "dil", a->dil, s);
  for (int i = 0; i < s; i++)
    if (a->ldil[i] != 1) { ints(out, "ldil", a->ldil, s); break; }
  if (a->groups != 1) fprintf(out, " groups=%d", (int)a->groups);
}

int td_dim_const_value(const td_graph *g, td_dim d, int64_t *v) {
  if (TD_DIM_IS_CONST(d)) { *v = d; return 1; }
  if (TD_DIM_IS_BAD(d) || -d - 1 >= g->n_dims) return 0;
  const td_poly *p = &g->dims[-d - 1];
  if (p->n != 1 || p->t[0].n != 0) return 0;
  *v = p->t[0].coef;
  return 1;
}

int td_conv_windows(td_graph *g, td_dim size, int64_t pad_lo, int64_t pad_hi, int64_t k, int64_t dil,
                    int64_t stride, td_dim *out) {
  td_dim span = td_dim_add(g, size, td_dim_const(g, pad_lo + pad_hi - dil * (k - 1)));
  int64_t v;
  if (td_dim_const_value(g, span, &v) && v < 1) return -2;
  return td_dim_ceil_div(g, span, (uint64_t)stride, out) ? -1 : 0;
}

/* builtins_conv.c - convolutions and pooling: conv1d, conv2d, conv3d,
 * max_pool2d, avg_pool2d.
 *
 * A convolution is one CONV primitive (ops.def; lang/conv.c has its
 * contract) plus, with a bias, an elementwise add: what a backend must
 * generate specially is the windowed contraction, so that is the
 * primitive.  Arguments follow PyTorch's torch.nn.functional: NCHW (one
 * batch axis, or none), the weight [out, in / groups, *kernel], padding
 * an int, a list per axis, "valid" or "same" (stride 1 only), so models
 * and state_dicts port unchanged.
 *
 * Pooling needs nothing a backend does not have: a padded input
 * (concat), one strided slice per kernel offset, and a chain of
 * elementwise ops over them, which the compiler fuses into one kernel
 * reading the input in place.  So pooling is a composite, lowered here:
 *   max: m = x[0]; m = where(v > m or v != v, v, m) for each next offset
 *        (the first maximum wins and NaN propagates, as PyTorch's CPU
 *        kernel: the gradient goes to the first maximum of a tie)
 *   avg: the sum of the offsets over the divisor, which counts the
 *        window's elements inside the input (or the padded input, with
 *        count_include_pad) exactly as PyTorch's rule; a divisor that
 *        is not the same for every window is itself the pooling of a
 *        padded tensor of ones.
 *
 * Output sizes: floor((size + 2p - d(k - 1) - 1) / s) + 1 per axis.  A
 * symbolic size is a polynomial (lang/ir.h), so this is a size only
 * where the floor is exact for every value of the symbols: stride 1,
 * or an input size whose symbolic part is a multiple of the stride
 * (f32[N, C, 2*H, 2*W] with stride 2).  Elsewhere the call is an error
 * that says so and how to write the shape.
 */
#include <math.h>
#include <string.h>
#include "lang/conv.h"
#include "lang/elab_impl.h"

static const char *const axis_names[3][3] = {
  {"length", "", ""}, {"height", "width", ""}, {"depth", "height", "width"}};

/* An int, or a list of n ints, each in [lo, 1 << 20], into out[0..n). */
static int int_list(el_ctx *c, const td_value *v, int n, int64_t def, int64_t lo, const char *fn,
                    const char *what, int64_t *out) {
  if (v->k == V_NONE || v->k == V_INT) {
    for (int i = 0; i < n; i++) out[i] = v->k == V_NONE ? def : v->i;
  } else if ((v->k == V_LIST || v->k == V_TUPLE) && v->n == n) {
    for (int i = 0; i < n; i++) {
      if (v->items[i].k != V_INT) goto bad;
      out[i] = v->items[i].i;
    }
  } else
    goto bad;
  for (int i = 0; i < n; i++)
    if (out[i] < lo || out[i] > (1 << 20)) goto bad;
  return 0;
bad:;
  td_diag *g = td_error(c->diags, v->span, "%s's %s must be an integer or a list of %d integers, each at least %lld",
                        fn, what, n, (long long)lo);
  td_diag_help(c->diags, g, "e.g. %s = %lld or %s = [%lld, %lld]", what, (long long)(lo > 0 ? lo + 1 : 1), what,
               (long long)(lo > 0 ? lo + 1 : 1), (long long)(lo > 0 ? lo + 1 : 1));
  return -1;
}

static int want_float(el_ctx *c, const td_value *v, const char *fn, const char *what) {
  if (v->k != V_TENSOR) {
    if (v->k != V_ERR) td_error(c->diags, v->span, "%s() needs a tensor as its %s, found %s", fn, what, el_kind_name(v));
    return -1;
  }
  td_dtype dt = el_node(c, v)->dtype;
  if (dt == TD_F32 || dt == TD_F64) return 0;
  td_diag *g = td_error(c->diags, v->span, "%s() computes on f32 or f64 tensors; its %s is %s", fn, what, td_dtype_name(dt));
  td_diag_help(c->diags, g, "convert it first, e.g. f32(x)");
  return -1;
}

static const char *tstr(el_ctx *c, const td_node *n, char *buf, size_t sz) {
  return td_type_str(c->g, n->dtype, n->rank, n->shape, buf, sz);
}

/* Reports td_conv_windows' failure (rc -1 or -2) for axis i of fn. */
static void windows_error(el_ctx *c, int rc, const char *fn, int S, int i, td_dim size, int64_t pad_lo, int64_t pad_hi,
                          int64_t k, int64_t dil, int64_t stride, td_span sp) {
  char d[128];
  td_dim_str(c->g, size, d, sizeof d);
  const char *ax = axis_names[S - 1][i];
  if (rc == -2) {
    td_diag *g = td_error(c->diags, sp, "%s: the kernel's %s %lld (dilation %lld: %lld elements) is larger than the "
                          "padded input's %s %s + %lld", fn, ax, (long long)k, (long long)dil,
                          (long long)(dil * (k - 1) + 1), ax, d, (long long)(pad_lo + pad_hi));
    td_diag_help(c->diags, g, "pad the input more (padding = ...), use a smaller kernel or dilation, or feed a "
                 "larger input");
    return;
  }
  td_diag *g = td_error(c->diags, sp, "%s: the output %s floor((%s + %lld - %lld) / %lld) + 1 is not a polynomial in "
                        "the symbolic sizes", fn, ax, d, (long long)(pad_lo + pad_hi), (long long)(dil * (k - 1) + 1),
                        (long long)stride);
  td_diag_help(c->diags, g, "with stride %lld the input's symbolic %s must be a multiple of %lld: write it so in the "
               "input's type (e.g. %lld*H), or make it a literal or a model parameter", (long long)stride, ax,
               (long long)stride, (long long)stride);
}

/* ---- convolution ---- */

/* Checks the channel counts of x [N, C, ...] and w [O, C / groups, ...]. */
static int check_channels(el_ctx *c, const char *fn, const td_value *xv, const td_value *wv, int64_t groups,
                          td_span sp) {
  const td_node *x = el_node(c, xv), *w = el_node(c, wv);
  char tx[256], tw[256], d[64], e[64];
  td_dim C = x->shape[1], Cg = w->shape[1], O = w->shape[0];
  if (TD_DIM_IS_CONST(O) && O % groups) {
    td_diag *g = td_error(c->diags, wv->span, "%s: groups = %lld does not divide the weight's %lld output channels (%s)",
                          fn, (long long)groups, (long long)O, tstr(c, w, tw, sizeof tw));
    td_diag_help(c->diags, g, "choose groups dividing both channel counts, or change out_channels");
    return -1;
  }
  if (TD_DIM_IS_CONST(C) && C % groups) {
    td_diag *g = td_error(c->diags, xv->span, "%s: groups = %lld does not divide the input's %lld channels (%s)", fn,
                          (long long)groups, (long long)C, tstr(c, x, tx, sizeof tx));
    td_diag_help(c->diags, g, "choose groups dividing both channel counts, or change in_channels");
    return -1;
  }
  if (td_dim_mul(c->g, Cg, groups) == C) return 0;
  td_diag *g = td_error(c->diags, sp, "%s: the input %s has %s channels, but the weight %s takes %s%s", fn,
                        tstr(c, x, tx, sizeof tx), td_dim_str(c->g, C, d, sizeof d), tstr(c, w, tw, sizeof tw),
                        td_dim_str(c->g, td_dim_mul(c->g, Cg, groups), e, sizeof e),
                        groups > 1 ? " (in_channels / groups times groups)" : "");
  td_diag_note(c->diags, g, xv->span, "%s comes from here", tx);
  td_diag_note(c->diags, g, wv->span, "%s comes from here", tw);
  if (groups == 1)
    td_diag_help(c->diags, g, "the weight is [out_channels, in_channels, kernel...]: make its axis 1 %s (e.g. "
                 "nn.Conv2d(%s, ...)), or give the input %s channels", d, d, td_dim_str(c->g, Cg, e, sizeof e));
  else
    td_diag_help(c->diags, g, "the weight is [out_channels, in_channels / groups, kernel...]: with groups = %lld "
                 "and %s input channels its axis 1 must be %s / %lld", (long long)groups, d, d, (long long)groups);
  return -1;
}

/* Padding per axis: pad_lo/pad_hi from an int, a list, "valid" or "same". */
static int conv_padding(el_ctx *c, const td_value *v, int S, const char *fn, const int64_t *k, const int64_t *dil,
                        const int64_t *stride, int64_t *lo, int64_t *hi) {
  if (v->k == V_STR && (!strcmp(v->s, "valid") || !strcmp(v->s, "same"))) {
    int same = v->s[0] == 's';
    for (int i = 0; i < S; i++) {
      if (same && stride[i] != 1) {
        td_diag *g = td_error(c->diags, v->span, "%s: padding = \"same\" needs stride 1, found stride %lld", fn,
                              (long long)stride[i]);
        td_diag_help(c->diags, g, "as in PyTorch; give the padding as numbers for a strided convolution");
        return -1;
      }
      int64_t total = same ? dil[i] * (k[i] - 1) : 0;
      lo[i] = total / 2;   /* PyTorch puts the odd element after */
      hi[i] = total - lo[i];
    }
    return 0;
  }
  if (v->k == V_STR) {
    td_error(c->diags, v->span, "%s: padding must be a number, a list, \"valid\" or \"same\", found \"%s\"", fn, v->s);
    return -1;
  }
  if (int_list(c, v, S, 0, 0, fn, "padding", lo)) return -1;
  memcpy(hi, lo, (size_t)S * sizeof *hi);
  return 0;
}

/* x [C, ...] as [1, C, ...]. */
static td_value with_batch_axis(el_ctx *c, const td_value *x, td_span sp) {
  const td_node *xn = el_node(c, x);
  td_dim s[TD_MAX_RANK];
  s[0] = 1;
  memcpy(s + 1, xn->shape, (size_t)xn->rank * sizeof *s);
  return el_reshape(c, x, xn->rank + 1, s, sp);
}

/* y [N, O, *out] + bias [O] (broadcast as [O, 1, ...]). */
static td_value add_bias(el_ctx *c, const char *fn, const td_value *y, const td_value *bias, int S, td_span sp) {
  if (want_float(c, bias, fn, "bias")) return el_err();
  const td_node *yn = el_node(c, y), *bn = el_node(c, bias);
  td_dim O = yn->shape[1];
  if (bn->rank != 1 || bn->shape[0] != O || bn->dtype != yn->dtype) {
    char d[64], t[256];
    td_diag *g = td_error(c->diags, bias->span, "%s's bias must be %s[%s] (one per output channel), found %s", fn,
                          td_dtype_name(yn->dtype), td_dim_str(c->g, O, d, sizeof d), tstr(c, bn, t, sizeof t));
    td_diag_help(c->diags, g, "leave the bias out for none");
    return el_err();
  }
  td_dim bs[TD_MAX_RANK];
  bs[0] = O;
  for (int i = 0; i < S; i++) bs[1 + i] = 1;
  td_value b = el_reshape(c, bias, S + 1, bs, sp);
  return b.k == V_ERR ? b : el_binary(c, TD_OP_ADD, y, &b, sp);
}

/* conv{S}d(x, w, bias, stride, padding, dilation, groups). */
static td_value b_conv(el_ctx *c, int S, td_value *a, td_span sp) {
  static const char *const names[] = {"conv1d", "conv2d", "conv3d"};
  const char *fn = names[S - 1];
  if (want_float(c, &a[0], fn, "input") || want_float(c, &a[1], fn, "weight")) return el_err();
  td_value x = a[0];
  const td_node *xn = el_node(c, &x), *wn = el_node(c, &a[1]);
  char t1[256], t2[256];
  int unbatched = xn->rank == S + 1;
  if (xn->rank != S + 2 && !unbatched) {
    td_diag *g = td_error(c->diags, a[0].span, "%s needs an input of rank %d or %d ([N, C, %s]), found %s", fn, S + 2,
                          S + 1, S == 1 ? "L" : S == 2 ? "H, W" : "D, H, W", tstr(c, xn, t1, sizeof t1));
    td_diag_help(c->diags, g, "reshape the input to [batch, channels, %s] first", S == 1 ? "length" : "spatial...");
    return el_err();
  }
  if (wn->rank != S + 2) {
    td_diag *g = td_error(c->diags, a[1].span, "%s's weight must have rank %d, found %s", fn, S + 2, tstr(c, wn, t2, sizeof t2));
    td_diag_help(c->diags, g, "the weight is [out_channels, in_channels / groups, kernel...], as PyTorch's");
    return el_err();
  }
  if (xn->dtype != wn->dtype) {
    td_diag *g = td_error(c->diags, sp, "%s: the input is %s but the weight is %s", fn, td_dtype_name(xn->dtype),
                          td_dtype_name(wn->dtype));
    td_diag_help(c->diags, g, "convert one of them, e.g. %s(x)", td_dtype_name(wn->dtype));
    return el_err();
  }
  if (unbatched) {
    if ((x = with_batch_axis(c, &a[0], sp)).k == V_ERR) return x;
    xn = el_node(c, &x);   /* both again: a new node may move the node array */
    wn = el_node(c, &a[1]);
  }
  td_dtype dt = xn->dtype;
  int64_t groups, k[3], stride[3], dil[3], lo[3], hi[3];
  if (int_list(c, &a[6], 1, 1, 1, fn, "groups", &groups) || int_list(c, &a[3], S, 1, 1, fn, "stride", stride) ||
      int_list(c, &a[5], S, 1, 1, fn, "dilation", dil))
    return el_err();
  if (check_channels(c, fn, &x, &a[1], groups, sp)) return el_err();
  for (int i = 0; i < S; i++) {
    k[i] = wn->shape[2 + i];
    if (!TD_DIM_IS_CONST(k[i]) || k[i] < 1 || k[i] > (1 << 20)) {
      td_error(c->diags, a[1].span, "%s: the kernel's sizes must be known when the model is built, found %s", fn,
               tstr(c, wn, t2, sizeof t2));
      return el_err();
    }
  }
  if (conv_padding(c, &a[4], S, fn, k, dil, stride, lo, hi)) return el_err();
  td_dim shape[TD_MAX_RANK];
  shape[0] = xn->shape[0];
  shape[1] = wn->shape[0];
  td_attr at;
  memset(&at, 0, sizeof at);
  at.conv.spatial = S;
  at.conv.groups = (int32_t)groups;
  for (int i = 0; i < S; i++) {
    int rc = td_conv_windows(c->g, xn->shape[2 + i], lo[i], hi[i], k[i], dil[i], stride[i], &shape[2 + i]);
    if (rc) {
      windows_error(c, rc, fn, S, i, xn->shape[2 + i], lo[i], hi[i], k[i], dil[i], stride[i], sp);
      return el_err();
    }
    at.conv.stride[i] = (int32_t)stride[i];
    at.conv.dil[i] = (int32_t)dil[i];
    at.conv.ldil[i] = 1;
    at.conv.pad[i] = (int32_t)lo[i];
  }
  int in[2] = {x.node, a[1].node};
  int id = el_emit(c, TD_IR_CONV, dt, S + 2, shape, in, 2, &at, sp);
  if (id < 0) return el_err();
  td_value y = el_tensor(id, sp);
  if (a[2].k != V_NONE) y = add_bias(c, fn, &y, &a[2], S, sp);
  if (y.k == V_ERR) return y;
  if (!unbatched) return y;
  return el_reshape(c, &y, S + 1, el_node(c, &y)->shape + 1, sp);
}

/* w [Cin, Cout / groups, *k] (PyTorch's transposed layout) as the weight
 * of the equivalent convolution: [Cout, Cin / groups, *k], flipped along
 * every spatial axis.  Per group gi: w[gi, ci, co] -> [gi, co, ci]. */
static td_value transposed_weight(el_ctx *c, const td_value *wv, int S, int64_t groups, td_span sp) {
  const td_node *wn = el_node(c, wv);
  int r = S + 2;
  td_dim cin = wn->shape[0], cog = wn->shape[1], s5[TD_MAX_RANK], s4[TD_MAX_RANK];
  int64_t cig = cin / groups;
  td_dtype dt = wn->dtype;
  s5[0] = groups;
  s5[1] = cig;
  s5[2] = cog;
  s4[0] = td_dim_mul(c->g, cog, groups);
  s4[1] = cig;
  for (int i = 0; i < S; i++) s5[3 + i] = s4[2 + i] = wn->shape[2 + i];
  int perm[TD_MAX_RANK];
  for (int i = 0; i <= r; i++) perm[i] = i;
  perm[1] = 2;
  perm[2] = 1;
  td_value t = el_reshape(c, wv, r + 1, s5, sp);
  if (t.k != V_ERR) t = el_permute(c, &t, perm, sp);
  if (t.k != V_ERR) t = el_reshape(c, &t, r, s4, sp);
  if (t.k == V_ERR) return t;
  td_attr at;
  memset(&at, 0, sizeof at);
  for (int i = 0; i < r; i++) {
    at.step[i] = i < 2 ? 1 : -1;
    at.start[i] = i < 2 ? 0 : s4[i] - 1;   /* literal kernel sizes */
  }
  int id = el_emit(c, TD_IR_SLICE, dt, r, s4, &t.node, 1, &at, sp);
  return id < 0 ? el_err() : el_tensor(id, sp);
}

/* conv_transpose{S}d(x, w, bias, stride, padding, output_padding, groups,
 * dilation): the gradient of conv{S}d with respect to its input, as
 * PyTorch's: one CONV over x dilated by the stride (lang/ir.h's ldil). */
static td_value b_conv_transpose(el_ctx *c, int S, td_value *a, td_span sp) {
  static const char *const names[] = {"conv_transpose1d", "conv_transpose2d", "conv_transpose3d"};
  const char *fn = names[S - 1];
  if (want_float(c, &a[0], fn, "input") || want_float(c, &a[1], fn, "weight")) return el_err();
  td_value x = a[0];
  const td_node *xn = el_node(c, &x), *wn = el_node(c, &a[1]);
  char t1[256], t2[256];
  int unbatched = xn->rank == S + 1;
  if ((xn->rank != S + 2 && !unbatched) || wn->rank != S + 2 || xn->dtype != wn->dtype) {
    td_diag *g = td_error(c->diags, sp, "%s needs an input [N, C_in, ...] (or [C_in, ...]) and a weight [C_in, "
                          "C_out / groups, kernel...] of rank %d and one dtype, found %s and %s", fn, S + 2,
                          tstr(c, xn, t1, sizeof t1), tstr(c, wn, t2, sizeof t2));
    td_diag_help(c->diags, g, "the weight of a transposed convolution is PyTorch's: in_channels first");
    return el_err();
  }
  if (unbatched) {
    if ((x = with_batch_axis(c, &a[0], sp)).k == V_ERR) return x;
    xn = el_node(c, &x);   /* both again: a new node may move the node array */
    wn = el_node(c, &a[1]);
  }
  int64_t groups, stride[3], pad[3], opad[3], dil[3];
  if (int_list(c, &a[6], 1, 1, 1, fn, "groups", &groups) || int_list(c, &a[3], S, 1, 1, fn, "stride", stride) ||
      int_list(c, &a[4], S, 0, 0, fn, "padding", pad) || int_list(c, &a[5], S, 0, 0, fn, "output_padding", opad) ||
      int_list(c, &a[7], S, 1, 1, fn, "dilation", dil))
    return el_err();
  td_dim cin = wn->shape[0], cout = td_dim_mul(c->g, wn->shape[1], groups);
  if (!TD_DIM_IS_CONST(cin) || cin % groups || xn->shape[1] != cin) {
    char d[64];
    td_diag *g = td_error(c->diags, sp, "%s: the input %s has %s channels, but the weight %s takes %lld%s", fn,
                          tstr(c, xn, t1, sizeof t1), td_dim_str(c->g, xn->shape[1], d, sizeof d),
                          tstr(c, wn, t2, sizeof t2), (long long)cin,
                          TD_DIM_IS_CONST(cin) && cin % groups ? ", which groups does not divide" : "");
    td_diag_help(c->diags, g, "the weight is [in_channels, out_channels / groups, kernel...]: its axis 0 is the "
                 "input's channels");
    return el_err();
  }
  td_dtype dt = xn->dtype;
  td_dim shape[TD_MAX_RANK];
  shape[0] = xn->shape[0];
  shape[1] = cout;
  td_attr at;
  memset(&at, 0, sizeof at);
  at.conv.spatial = S;
  at.conv.groups = (int32_t)groups;
  for (int i = 0; i < S; i++) {
    int64_t k = wn->shape[2 + i], span = dil[i] * (k - 1);
    if (!TD_DIM_IS_CONST(k) || opad[i] >= (stride[i] > dil[i] ? stride[i] : dil[i])) {
      td_diag *g = td_error(c->diags, sp, "%s: along the %s, output_padding %lld must be smaller than the stride "
                            "or the dilation", fn, axis_names[S - 1][i], (long long)opad[i]);
      td_diag_help(c->diags, g, "as in PyTorch: output_padding only picks among the sizes a stride makes");
      return el_err();
    }
    /* (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1 */
    shape[2 + i] = td_dim_add(c->g, td_dim_mul(c->g, td_dim_sub(c->g, xn->shape[2 + i], 1), stride[i]),
                              td_dim_const(c->g, span - 2 * pad[i] + opad[i] + 1));
    int64_t v;
    if (td_dim_const_value(c->g, shape[2 + i], &v) && v < 1) {
      td_diag *g = td_error(c->diags, sp, "%s: the output %s would be %lld; padding %lld crops more than the "
                            "convolution makes", fn, axis_names[S - 1][i], (long long)v, (long long)pad[i]);
      td_diag_help(c->diags, g, "use less padding");
      return el_err();
    }
    at.conv.stride[i] = 1;
    at.conv.ldil[i] = (int32_t)stride[i];
    at.conv.dil[i] = (int32_t)dil[i];
    at.conv.pad[i] = (int32_t)(span - pad[i]);
  }
  td_value wt = transposed_weight(c, &a[1], S, groups, sp);
  if (wt.k == V_ERR) return wt;
  int in[2] = {x.node, wt.node};
  int id = el_emit(c, TD_IR_CONV, dt, S + 2, shape, in, 2, &at, sp);
  if (id < 0) return el_err();
  td_value y = el_tensor(id, sp);
  if (a[2].k != V_NONE) y = add_bias(c, fn, &y, &a[2], S, sp);
  if (y.k == V_ERR || !unbatched) return y;
  return el_reshape(c, &y, S + 1, el_node(c, &y)->shape + 1, sp);
}

/* ---- pooling (composites) ---- */

/* x with `len` elements of value v before (before = 1) or after it along
 * axis; x itself when len is 0. */
static td_value pad_axis(el_ctx *c, const td_value *x, int axis, int64_t len, double v, int before, td_span sp) {
  if (len <= 0) return *x;
  const td_node *n = el_node(c, x);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  s[axis] = len;
  int rank = n->rank;   /* n moves with the node array once a node is added */
  td_value fv = el_float(v, sp);
  int id = el_as_tensor(c, &fv, n->dtype, sp);
  if (id < 0) return el_err();
  td_value f = el_tensor(id, sp);
  td_value part = el_broadcast_to(c, &f, rank, s, sp);
  if (part.k == V_ERR) return part;
  td_value parts[2] = {before ? part : *x, before ? *x : part};
  return el_concat(c, parts, 2, axis, sp);
}

/* x[..., start_a :: step_a (len_a), ...] for the last `na` axes. */
static td_value window(el_ctx *c, const td_value *x, int na, const int64_t *start, const int64_t *step,
                       const td_dim *len, td_span sp) {
  const td_node *n = el_node(c, x);
  td_attr at;
  memset(&at, 0, sizeof at);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  for (int i = 0; i < n->rank; i++) at.step[i] = 1;
  for (int j = 0; j < na; j++) {
    int ax = n->rank - na + j;
    at.start[ax] = start[j];
    at.step[ax] = step[j];
    s[ax] = len[j];
  }
  int id = el_emit(c, TD_IR_SLICE, n->dtype, n->rank, s, &x->node, 1, &at, sp);
  return id < 0 ? el_err() : el_tensor(id, sp);
}

typedef struct pool_axis {
  td_dim size, out;
  int64_t k, stride, pad, dil;
  int64_t extra;      /* padding after the input beyond `pad` that windows reach (ceil_mode) */
  int64_t after;      /* elements padded after the input: what the windows reach, at least 0 */
} pool_axis;

/* The windows of one pooled axis, PyTorch's pooling_output_shape. */
static int pool_out(el_ctx *c, const char *fn, int ceil_mode, int i, pool_axis *p, td_span sp) {
  int64_t hi = p->pad + (ceil_mode ? p->stride - 1 : 0);
  int rc = td_conv_windows(c->g, p->size, p->pad, hi, p->k, p->dil, p->stride, &p->out);
  if (rc) {
    windows_error(c, rc, fn, 2, i, p->size, p->pad, hi, p->k, p->dil, p->stride, sp);
    return -1;
  }
  /* the last window must start inside the input or its left padding:
   * (out - 1) * stride - (size + pad) < 0; and how far the last window
   * reaches past the input: (out - 1) * stride + dil * (k - 1) + 1 - pad - size */
  for (int pass = 0; pass < 2; pass++) {
    td_dim last = td_dim_mul(c->g, td_dim_sub(c->g, p->out, 1), p->stride);
    td_dim start_past = td_dim_sub(c->g, last, td_dim_add(c->g, p->size, p->pad));
    td_dim reach = td_dim_sub(c->g, td_dim_add(c->g, last, p->dil * (p->k - 1) + 1 - p->pad), p->size);
    int64_t sv, rv;
    if (!td_dim_const_value(c->g, start_past, &sv) || !td_dim_const_value(c->g, reach, &rv)) {
      char d[128];
      td_diag *g = td_error(c->diags, sp, "%s: with ceil_mode the windows along the %s depend on the symbolic size %s",
                            fn, axis_names[1][i], td_dim_str(c->g, p->size, d, sizeof d));
      td_diag_help(c->diags, g, "make the size a multiple of the stride in the input's type (e.g. %lld*H), or use "
                   "ceil_mode = false", (long long)p->stride);
      return -1;
    }
    if (pass == 0 && ceil_mode && sv >= 0) {
      p->out = td_dim_sub(c->g, p->out, 1);
      continue;
    }
    p->after = rv > 0 ? rv : 0;
    p->extra = rv > p->pad ? rv - p->pad : 0;
    return 0;
  }
  return 0;
}

/* The pooled value of xp (the input padded by every axis' pad before and
 * `after` after it) over the windows of the last two axes: the first
 * maximum (is_max) or the sum. */
static td_value pool_windows(el_ctx *c, const td_value *xp, int is_max, int na, const pool_axis *ax, td_span sp) {
  td_value acc = el_none(sp);
  int64_t step[2], start[2];
  td_dim len[2];
  for (int j = 0; j < na; j++) {
    step[j] = ax[j].stride;
    len[j] = ax[j].out;
  }
  int64_t k1 = na == 2 ? ax[1].k : 1;
  for (int64_t o = 0; o < ax[0].k * k1; o++) {
    start[0] = (o / k1) * ax[0].dil;
    if (na == 2) start[1] = (o % k1) * ax[1].dil;
    td_value v = window(c, xp, na, start, step, len, sp);
    if (v.k == V_ERR) return v;
    if (o == 0) { acc = v; continue; }
    if (!is_max) {
      acc = el_binary(c, TD_OP_ADD, &acc, &v, sp);
    } else {
      td_value gt = el_binary(c, TD_OP_GT, &v, &acc, sp), nan = el_binary(c, TD_OP_NE, &v, &v, sp);
      if (gt.k == V_ERR || nan.k == V_ERR) return el_err();
      td_value cond = el_binary(c, TD_OP_OR, &gt, &nan, sp);
      if (cond.k == V_ERR) return cond;
      acc = el_where(c, &cond, &v, &acc, sp);
    }
    if (acc.k == V_ERR) return acc;
  }
  return acc;
}

/* The divisor of avg_pool2d along one axis, [out]: per window the count
 * of elements inside the input (with count_include_pad: inside the input
 * and its `pad`), as the sum over the window of a padded vector of ones. */
static td_value pool_count(el_ctx *c, td_dtype dt, const pool_axis *p, int include_pad, td_span sp) {
  td_value one = el_float(1, sp);
  int id = el_as_tensor(c, &one, dt, sp);
  if (id < 0) return el_err();
  td_value t = el_tensor(id, sp);
  td_value ones = el_broadcast_to(c, &t, 1, &p->size, sp);
  double pv = include_pad ? 1 : 0;
  td_value v = pad_axis(c, &ones, 0, p->pad, pv, 1, sp);
  if (v.k != V_ERR) v = pad_axis(c, &v, 0, p->after - p->extra, pv, 0, sp);
  if (v.k != V_ERR) v = pad_axis(c, &v, 0, p->extra, 0, 0, sp);
  if (v.k == V_ERR) return v;
  return pool_windows(c, &v, 0, 1, p, sp);
}

/* max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode) and
 * avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad). */
static td_value b_pool(el_ctx *c, int is_max, td_value *a, td_span sp) {
  const char *fn = is_max ? "max_pool2d" : "avg_pool2d";
  if (want_float(c, &a[0], fn, "input")) return el_err();
  const td_node *xn = el_node(c, &a[0]);
  char t[256];
  if (xn->rank != 3 && xn->rank != 4) {
    td_diag *g = td_error(c->diags, a[0].span, "%s needs an input [N, C, H, W] or [C, H, W], found %s", fn,
                          tstr(c, xn, t, sizeof t));
    td_diag_help(c->diags, g, "reshape the input first");
    return el_err();
  }
  int64_t k[2], s[2], p[2], d[2] = {1, 1};
  int ceil_mode, include_pad = 1;
  const td_value *ceil_v = is_max ? &a[5] : &a[4];
  /* no stride, or [] (PyTorch's empty list): the kernel size */
  int default_stride = a[2].k == V_NONE || ((a[2].k == V_LIST || a[2].k == V_TUPLE) && a[2].n == 0);
  if (int_list(c, &a[1], 2, 1, 1, fn, "kernel_size", k) ||
      (default_stride ? (memcpy(s, k, sizeof s), 0) : int_list(c, &a[2], 2, 1, 1, fn, "stride", s)) ||
      int_list(c, &a[3], 2, 0, 0, fn, "padding", p) || (is_max && int_list(c, &a[4], 2, 1, 1, fn, "dilation", d)))
    return el_err();
  for (int v = 0; v < 2; v++) {
    const td_value *bv = v == 0 ? ceil_v : &a[5];
    int *out = v == 0 ? &ceil_mode : &include_pad;
    if (v == 1 && is_max) break;
    if (bv->k == V_NONE) { *out = v; continue; }
    if (bv->k != V_BOOL) { td_error(c->diags, bv->span, "%s: expected true or false, found %s", fn, el_kind_name(bv)); return el_err(); }
    *out = (int)bv->i;
  }
  pool_axis ax[2];
  for (int i = 0; i < 2; i++) {
    int64_t keff = is_max ? d[i] * (k[i] - 1) + 1 : k[i];
    if (2 * p[i] > keff) {
      td_diag *g = td_error(c->diags, a[3].span, "%s: padding %lld is more than half the kernel's %s %lld", fn,
                            (long long)p[i], axis_names[1][i], (long long)keff);
      td_diag_help(c->diags, g, "as in PyTorch, padding may be at most kernel_size / 2; pad the input yourself for more");
      return el_err();
    }
    ax[i] = (pool_axis){.size = xn->shape[xn->rank - 2 + i], .k = k[i], .stride = s[i], .pad = p[i], .dil = d[i]};
    if (pool_out(c, fn, ceil_mode, i, &ax[i], sp)) return el_err();
  }
  double pv = is_max ? -INFINITY : 0;
  int rank = xn->rank;   /* xn moves with the node array from here on */
  td_dtype dt = xn->dtype;
  td_value xp = a[0];
  for (int i = 0; i < 2 && xp.k != V_ERR; i++) {
    int axis = rank - 2 + i;
    xp = pad_axis(c, &xp, axis, ax[i].pad, pv, 1, sp);
    if (xp.k != V_ERR) xp = pad_axis(c, &xp, axis, ax[i].after, pv, 0, sp);
  }
  if (xp.k == V_ERR) return xp;
  td_value r = pool_windows(c, &xp, is_max, 2, ax, sp);
  if (is_max || r.k == V_ERR) return r;
  int uniform = 1;
  for (int i = 0; i < 2; i++) uniform &= (include_pad || ax[i].pad == 0) && ax[i].extra == 0;
  if (uniform) {
    td_value kk = el_float((double)(k[0] * k[1]), sp);
    return el_binary(c, TD_OP_DIV, &r, &kk, sp);
  }
  td_value ch = pool_count(c, dt, &ax[0], include_pad, sp);
  td_value cw = pool_count(c, dt, &ax[1], include_pad, sp);
  if (ch.k == V_ERR || cw.k == V_ERR) return el_err();
  td_dim col[2] = {ax[0].out, 1};
  ch = el_reshape(c, &ch, 2, col, sp);
  if (ch.k == V_ERR) return ch;
  td_value div = el_binary(c, TD_OP_MUL, &ch, &cw, sp);
  return div.k == V_ERR ? div : el_binary(c, TD_OP_DIV, &r, &div, sp);
}

td_value el_conv_builtin(el_ctx *c, int which, td_value *a, td_span sp) {
  switch (which) {
  case 1: case 2: case 3: return b_conv(c, which, a, sp);
  case 4: case 5: case 6: return b_conv_transpose(c, which - 3, a, sp);
  case 10: return b_pool(c, 1, a, sp);
  case 11: return b_pool(c, 0, a, sp);
  }
  return el_err();
}

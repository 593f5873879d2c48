/* builtins_extra.c - composite built-ins over the primitives of ops.def:
 * cumsum, cumprod, index_add, scatter_add, sort, argsort, topk, einsum and
 * norm (docs/language.md, "Scans, scatters, sorting, einsum and norms").
 *
 * None of them is a primitive: each is lowered here, at elaboration time,
 * to comparisons, where, reductions, reshapes, permutes, matmuls and (to
 * check indices at run time) take, so every backend runs them, autodiff
 * differentiates them through the primitives' rules and the compiler
 * fuses them like hand-written code.  The price is stated in the docs:
 * cumsum, cumprod, sort, argsort and topk compare every pair of elements
 * along their axis (O(n^2) work per row; eager mode materialises the
 * [.., n, n, ..] mask), and index_add/scatter_add compare every index with
 * every destination row.
 *
 * The common shape: a tensor x of rank r gets one more axis, so that axis
 * `a` holds the output position (i) and axis a + 1 the input position (j);
 * a mask over (i, j) selects what each output sums, and a reduction over
 * axis a + 1 removes j again.
 */
#include <math.h>
#include <string.h>
#include "lang/elab_impl.h"

static td_value tensor_of(int node, td_span sp) { return node < 0 ? el_err() : el_tensor(node, sp); }

static int need_tensor(el_ctx *c, const td_value *v, const char *fn, const char *what) {
  if (v->k == V_TENSOR) return 0;
  if (v->k != V_ERR) td_error(c->diags, v->span, "%s() needs a tensor for %s, found %s", fn, what, el_kind_name(v));
  return -1;
}

static int opt_flag(el_ctx *c, const td_value *v, int def, int *out) {
  if (v->k == V_NONE) { *out = def; return 0; }
  if (v->k != V_BOOL) { td_error(c->diags, v->span, "expected true or false, found %s", el_kind_name(v)); return -1; }
  *out = (int)v->i;
  return 0;
}

/* x with a new axis of size 1 at position ax (0..rank). */
static td_value unsq(el_ctx *c, const td_value *x, int ax, td_span sp) {
  if (x->k == V_ERR) return el_err();
  const td_node *n = el_node(c, x);
  if (n->rank + 1 > TD_MAX_RANK) {
    td_error(c->diags, sp, "this needs one more axis than a tensor may have (%d)", TD_MAX_RANK);
    return el_err();
  }
  td_dim s[TD_MAX_RANK];
  for (int i = 0, k = 0; i <= n->rank; i++) s[i] = i == ax ? 1 : n->shape[k++];
  return el_reshape(c, x, n->rank + 1, s, sp);
}

/* arange(n) of dtype dt as a tensor of rank `rank`, n at axis pos, 1 elsewhere. */
static td_value iota(el_ctx *c, td_dim n, td_dtype dt, int rank, int pos, td_span sp) {
  if (rank > TD_MAX_RANK) {
    td_error(c->diags, sp, "this needs more axes than a tensor may have (%d)", TD_MAX_RANK);
    return el_err();
  }
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i2 = 1;
  at.f2 = 1;
  td_value r = tensor_of(el_emit(c, TD_IR_ARANGE, dt, 1, &n, NULL, 0, &at, sp), sp);
  if (r.k == V_ERR) return r;
  td_dim s[TD_MAX_RANK];
  for (int i = 0; i < rank; i++) s[i] = i == pos ? n : 1;
  return el_reshape(c, &r, rank, s, sp);
}

static td_value bin(el_ctx *c, int op, td_value a, td_value b, td_span sp) {
  if (a.k == V_ERR || b.k == V_ERR) return el_err();
  return el_binary(c, op, &a, &b, sp);
}

static td_value sel(el_ctx *c, td_value m, td_value a, td_value b, td_span sp) {
  if (m.k == V_ERR || a.k == V_ERR || b.k == V_ERR) return el_err();
  return el_where(c, &m, &a, &b, sp);
}

static td_value red(el_ctx *c, td_op op, td_value x, uint32_t axes, int keep, td_span sp) {
  if (x.k == V_ERR) return x;
  return el_reduce(c, op, &x, axes, keep, sp);
}

static td_value cast(el_ctx *c, td_value x, td_dtype dt, td_span sp) {
  if (x.k == V_ERR || el_node(c, &x)->dtype == dt) return x;
  return el_cast(c, &x, dt, sp);
}

/* The dtype a cumulative sum or product, index_add or sort works in:
 * halves in f32 (rounded once at the end). */
static td_dtype work_dtype(td_dtype t) { return td_dtype_is_half(t) ? TD_F32 : t; }

/* Emits take(zeros([d]), idx): an i-dtype tensor of zeros of idx's shape
 * whose evaluation checks every index against -d <= i < d, eagerly and
 * compiled alike (a take is never removed as dead code). */
static td_value checked_zero(el_ctx *c, const td_value *idx, td_dim d, td_span sp) {
  /* copied: emitting nodes may move the node array */
  const td_node *ix = el_node(c, idx);
  td_dtype it = ix->dtype;
  int ir = ix->rank;
  td_dim is[TD_MAX_RANK];
  memcpy(is, ix->shape, sizeof is);
  td_value z = el_int(0, sp);
  int zid = el_as_tensor(c, &z, it, sp);
  if (zid < 0) return el_err();
  td_value zt = el_tensor(zid, sp);
  td_value zd = el_broadcast_to(c, &zt, 1, &d, sp);
  if (zd.k == V_ERR) return zd;
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = 0;
  int in[2] = {zd.node, idx->node};
  return tensor_of(el_emit(c, TD_IR_GATHER, it, ir, is, in, 2, &at, sp), sp);
}

/* idx checked against the size d and made non-negative (i < 0 counts from the end). */
static td_value norm_index(el_ctx *c, const td_value *idx, td_dim d, td_span sp) {
  td_value chk = checked_zero(c, idx, d, sp);
  td_value i = bin(c, TD_OP_ADD, *idx, chk, sp);
  td_value dv = el_size(c, d, sp);
  td_value zero = el_int(0, sp);
  return sel(c, bin(c, TD_OP_LT, i, zero, sp), bin(c, TD_OP_ADD, i, dv, sp), i, sp);
}

static int int_index(el_ctx *c, const td_value *v, const char *fn) {
  td_dtype t = el_node(c, v)->dtype;
  if (t == TD_I32 || t == TD_I64) return 0;
  td_diag *g = td_error(c->diags, v->span, "%s's indices must be integers, found %s", fn, td_dtype_name(t));
  td_diag_help(c->diags, g, "convert with i64(idx)");
  return -1;
}

/* ---- cumsum, cumprod ---- */

td_value el_apply_index(el_ctx *c, int in, const int *kind, const td_value *lo,
                        const td_value *hi, const td_value *step, td_span sp);

/* x[.., lo:hi, ..] along axis ax (literal bounds). */
static td_value slice_ax(el_ctx *c, td_value x, int ax, int64_t lo, int64_t hi, td_span sp) {
  if (x.k == V_ERR) return x;
  int kind[TD_MAX_RANK] = {0};
  td_value l[TD_MAX_RANK], h[TD_MAX_RANK], st[TD_MAX_RANK];
  for (int i = 0; i < TD_MAX_RANK; i++) l[i] = h[i] = st[i] = el_none(sp);
  kind[ax] = 2;
  l[ax] = el_int(lo, sp);
  h[ax] = el_int(hi, sp);
  return el_apply_index(c, x.node, kind, l, h, st, sp);
}

/* The inclusive (or exclusive) cumulative sum or product of x along ax,
 * each output its own masked reduction: out[.., i, ..] = sum (prod) over
 * j <= i (j < i) of x[.., j, ..].  x has at most TD_MAX_RANK - 1 axes. */
static td_value cum_mask(el_ctx *c, td_value x, int ax, int prod, int exclusive, td_span sp) {
  if (x.k == V_ERR) return x;
  const td_node *n = el_node(c, &x);
  int r = n->rank;
  td_dim len = n->shape[ax];
  td_value xe = unsq(c, &x, ax, sp);
  td_value ii = iota(c, len, TD_I64, r + 1, ax, sp), jj = iota(c, len, TD_I64, r + 1, ax + 1, sp);
  td_value m = bin(c, exclusive ? TD_OP_LT : TD_OP_LE, jj, ii, sp);
  td_value w = sel(c, m, xe, prod ? el_int(1, sp) : el_int(0, sp), sp);
  return red(c, prod ? TD_IR_PROD : TD_IR_SUM, w, 1u << (ax + 1), 0, sp);
}

/* Axes longer than this (literal sizes) are scanned in blocks. */
#define CUM_BLOCKED_FROM 64

static td_value b_cum(el_ctx *c, int prod, td_value *a, td_span sp) {
  const char *fn = prod ? "cumprod" : "cumsum";
  if (need_tensor(c, &a[0], fn, "x")) return el_err();
  const td_node *n = el_node(c, &a[0]);
  td_dtype t = n->dtype, wt = td_dtype_is_float(t) ? work_dtype(t) : TD_I64;
  int r = n->rank, ax;
  if (el_axis(c, &a[1], r ? r : 1, &ax)) return el_err();
  if (r + 1 > TD_MAX_RANK) { td_error(c->diags, sp, "%s needs a tensor of at most %d dimensions", fn, TD_MAX_RANK - 1); return el_err(); }
  td_value x = cast(c, a[0], wt, sp);
  if (r == 0 || x.k == V_ERR) return cast(c, x, td_dtype_is_float(t) ? t : TD_I64, sp);
  td_dim len = el_node(c, &x)->shape[ax];
  td_value s;
  if (!TD_DIM_IS_CONST(len) || len <= CUM_BLOCKED_FROM || r + 2 > TD_MAX_RANK) {
    s = cum_mask(c, x, ax, prod, 0, sp);
  } else {
    /* Blocks of B ~ sqrt(n): the axis padded (0 for sums, 1 for products)
     * to nb * B and split into [nb, B]; each element is its block's
     * inclusive scan combined with the exclusive scan of the blocks'
     * totals.  O(n sqrt(n)) per row instead of O(n^2), and a NaN or
     * infinity still reaches only the positions after it. */
    int64_t B = 1;
    while (B * B < len) B++;
    int64_t nb = (len + B - 1) / B, pad = nb * B - len;
    td_dim sh[TD_MAX_RANK];
    memcpy(sh, el_node(c, &x)->shape, sizeof sh);
    if (pad) {
      sh[ax] = pad;
      td_value one = prod ? el_int(1, sp) : el_int(0, sp);
      int k = el_as_tensor(c, &one, wt, sp);
      if (k < 0) return el_err();
      td_value kt = el_tensor(k, sp);
      td_value parts[2] = {x, el_broadcast_to(c, &kt, r, sh, sp)};
      if (parts[1].k == V_ERR) return el_err();
      x = el_concat(c, parts, 2, ax, sp);
      if (x.k == V_ERR) return x;
    }
    td_dim bs[TD_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++) {
      if (i == ax) { bs[k++] = nb; bs[k++] = B; }
      else bs[k++] = el_node(c, &x)->shape[i];
    }
    td_value xb = el_reshape(c, &x, r + 1, bs, sp);
    td_value within = cum_mask(c, xb, ax + 1, prod, 0, sp);              /* [.., nb, B, ..] */
    td_value tot = slice_ax(c, within, ax + 1, B - 1, B, sp);                  /* [.., nb, 1, ..] */
    td_value before = cum_mask(c, tot, ax, prod, 1, sp);                   /* blocks before */
    td_value all = bin(c, prod ? TD_OP_MUL : TD_OP_ADD, within, before, sp);
    for (int i = 0, k = 0; i < r; i++) bs[k++] = i == ax ? nb * B : el_node(c, &x)->shape[i];
    td_value flat = all.k == V_ERR ? all : el_reshape(c, &all, r, bs, sp);
    s = pad ? slice_ax(c, flat, ax, 0, len, sp) : flat;
  }
  return td_dtype_is_half(t) ? cast(c, s, t, sp) : s;
}

/* ---- index_add, scatter_add ---- */

static td_value b_scatter(el_ctx *c, int is_scatter, td_value *a, td_span sp) {
  const char *fn = is_scatter ? "scatter_add" : "index_add";
  if (need_tensor(c, &a[0], fn, "x") || need_tensor(c, &a[1], fn, "idx") || need_tensor(c, &a[2], fn, "src"))
    return el_err();
  if (int_index(c, &a[1], fn)) return el_err();
  const td_node *x = el_node(c, &a[0]), *ix = el_node(c, &a[1]), *sr = el_node(c, &a[2]);
  char t1[256], t2[256], t3[256];
  if (x->dtype == TD_BOOL) {
    td_diag *g = td_error(c->diags, a[0].span, "%s on bool values", fn);
    td_diag_help(c->diags, g, "convert first: i32(x) or f32(x)");
    return el_err();
  }
  if (sr->dtype != x->dtype) {
    td_diag *g = td_error(c->diags, a[2].span, "%s needs src of x's dtype %s, found %s", fn,
                          td_dtype_name(x->dtype), td_dtype_name(sr->dtype));
    td_diag_help(c->diags, g, "convert it: %s(%s)", td_dtype_name(x->dtype), td_span_text(c->diags, a[2].span));
    return el_err();
  }
  int r = x->rank, ax = 0;
  if (r == 0) { td_error(c->diags, a[0].span, "%s needs x of rank 1 or more", fn); return el_err(); }
  if (a[3].k != V_NONE && el_axis(c, &a[3], r, &ax)) return el_err();
  td_type_str(c->g, x->dtype, x->rank, x->shape, t1, sizeof t1);
  td_type_str(c->g, ix->dtype, ix->rank, ix->shape, t2, sizeof t2);
  td_type_str(c->g, sr->dtype, sr->rank, sr->shape, t3, sizeof t3);
  int ok = sr->rank == r;
  if (is_scatter) {
    /* idx and src have one shape, equal to x's but along the axis */
    ok = ok && ix->rank == r && !memcmp(ix->shape, sr->shape, (size_t)r * sizeof *sr->shape);
    for (int i = 0; ok && i < r; i++) ok = i == ax || sr->shape[i] == x->shape[i];
    if (!ok) {
      td_diag *g = td_error(c->diags, sp, "scatter_add needs idx and src of one shape, equal to x's %s but along "
                            "axis %d: x is %s, idx %s, src %s", t1, ax, t1, t2, t3);
      td_diag_help(c->diags, g, "src[.., j, ..] is added to out[.., idx[.., j, ..], ..] along the axis; "
                   "for whole rows at a 1-D list of positions use index_add(x, idx, src, axis)");
      return el_err();
    }
  } else {
    ok = ok && ix->rank == 1;
    for (int i = 0; ok && i < r; i++) ok = i == ax ? sr->shape[i] == ix->shape[0] : sr->shape[i] == x->shape[i];
    if (!ok) {
      td_diag *g = td_error(c->diags, sp, "index_add needs a 1-D idx and src shaped like x but with len(idx) "
                            "along axis %d: x is %s, idx %s, src %s", ax, t1, t2, t3);
      td_diag_help(c->diags, g, "src's slice j along the axis is added to x's slice idx[j]; "
                   "for an index per element use scatter_add(x, idx, src, axis)");
      return el_err();
    }
  }
  if (r + 1 > TD_MAX_RANK) { td_error(c->diags, sp, "%s needs x of at most %d dimensions", fn, TD_MAX_RANK - 1); return el_err(); }
  /* copied before anything is emitted, which may move the node array */
  td_dtype t = x->dtype, wt = work_dtype(t), it = ix->dtype;
  td_dim d = x->shape[ax], np = ix->shape[0];
  td_value idx = norm_index(c, &a[1], d, sp);
  /* [.., D, P, ..]: position i of the output (axis ax) against src's j (ax + 1) */
  td_value ie;
  if (is_scatter) ie = unsq(c, &idx, ax, sp);
  else {
    td_dim s[TD_MAX_RANK];
    for (int i = 0; i <= r; i++) s[i] = i == ax + 1 ? np : 1;
    ie = idx.k == V_ERR ? idx : el_reshape(c, &idx, r + 1, s, sp);
  }
  td_value dd = iota(c, d, it, r + 1, ax, sp);
  td_value m = bin(c, TD_OP_EQ, ie, dd, sp);
  td_value src = cast(c, a[2], wt, sp);
  if (!is_scatter && a[4].k != V_NONE) {   /* index_add's alpha: src scaled first, as torch */
    if (a[4].k != V_INT && a[4].k != V_FLOAT) {
      td_error(c->diags, a[4].span, "index_add's alpha must be a number, found %s", el_kind_name(&a[4]));
      return el_err();
    }
    if (a[4].k == V_FLOAT && !td_dtype_is_float(t)) {
      td_diag *g = td_error(c->diags, a[4].span, "index_add's alpha is a float but x is %s", td_dtype_name(t));
      td_diag_help(c->diags, g, "use an integer alpha, or convert x and src to a float dtype");
      return el_err();
    }
    src = bin(c, TD_OP_MUL, src, a[4], sp);
  }
  td_value se = unsq(c, &src, ax, sp);
  td_value s = red(c, TD_IR_SUM, sel(c, m, se, el_int(0, sp), sp), 1u << (ax + 1), 0, sp);
  td_value out = bin(c, TD_OP_ADD, cast(c, a[0], wt, sp), s, sp);
  return td_dtype_is_half(t) ? cast(c, out, t, sp) : out;
}

/* ---- sort, argsort, topk ----
 *
 * The rank of element i along the axis is the number of elements j that
 * come before it: strictly smaller (larger when descending), or equal with
 * j < i (stable).  NaN is larger than every number and equal to NaN, as
 * torch.sort orders it.  Output position p holds the element whose rank is
 * p: a one-hot selection summed over i (exact: the other terms are 0; a
 * -0.0 comes out as 0.0), which is also a gather for the gradient. */
static int sort_args(el_ctx *c, const char *fn, td_value *x, const td_value *axv, int *ax) {
  if (need_tensor(c, x, fn, "x")) return -1;
  const td_node *n = el_node(c, x);
  if (n->rank == 0) { td_error(c->diags, x->span, "%s needs a tensor of rank 1 or more", fn); return -1; }
  if (axv->k == V_NONE) { *ax = n->rank - 1; return 0; }
  return el_axis(c, axv, n->rank, ax);
}

/* values and indices of the first m positions of x sorted along ax. */
static int sort_core(el_ctx *c, const char *fn, const td_value *x0, int ax, int desc, td_dim m, int want_values,
                     td_value *vals, td_value *idxs, td_span sp) {
  const td_node *n = el_node(c, x0);
  td_dtype t = n->dtype;
  int r = n->rank;
  if (r + 1 > TD_MAX_RANK) { td_error(c->diags, sp, "%s needs a tensor of at most %d dimensions", fn, TD_MAX_RANK - 1); return -1; }
  td_dim len = n->shape[ax];
  td_value x = cast(c, *x0, td_dtype_is_half(t) ? TD_F32 : t, sp);
  td_value xi = unsq(c, &x, ax + 1, sp), xj = unsq(c, &x, ax, sp);   /* i at ax, j at ax + 1 */
  td_value lj = bin(c, desc ? TD_OP_GT : TD_OP_LT, xj, xi, sp);     /* j strictly before i */
  td_value li = bin(c, desc ? TD_OP_GT : TD_OP_LT, xi, xj, sp);     /* i strictly before j */
  if (td_dtype_is_float(t)) {
    td_value ni = bin(c, TD_OP_NE, xi, xi, sp), nj = bin(c, TD_OP_NE, xj, xj, sp);
    td_value notni = sel(c, ni, el_bool(0, sp), el_bool(1, sp), sp);
    td_value notnj = sel(c, nj, el_bool(0, sp), el_bool(1, sp), sp);
    /* NaN largest: ascending, a number comes before a NaN; descending, a NaN before a number */
    td_value jn = desc ? bin(c, TD_OP_AND, nj, notni, sp) : bin(c, TD_OP_AND, ni, notnj, sp);
    td_value in_ = desc ? bin(c, TD_OP_AND, ni, notnj, sp) : bin(c, TD_OP_AND, nj, notni, sp);
    lj = bin(c, TD_OP_OR, lj, jn, sp);
    li = bin(c, TD_OP_OR, li, in_, sp);
  }
  td_value ii = iota(c, len, TD_I64, r + 1, ax, sp), jj = iota(c, len, TD_I64, r + 1, ax + 1, sp);
  td_value nli = sel(c, li, el_bool(0, sp), el_bool(1, sp), sp);
  td_value before = bin(c, TD_OP_OR, lj, bin(c, TD_OP_AND, bin(c, TD_OP_LT, jj, ii, sp), nli, sp), sp);
  td_value rank = red(c, TD_IR_SUM, before, 1u << (ax + 1), 0, sp);   /* i64 [.., n, ..] */
  if (rank.k == V_ERR) return -1;
  /* position p (axis ax) against element i (axis ax + 1) */
  td_value pe = iota(c, m, TD_I64, r + 1, ax, sp);
  td_value re = unsq(c, &rank, ax, sp);
  td_value hit = bin(c, TD_OP_EQ, re, pe, sp);
  td_value ie = iota(c, len, TD_I64, r + 1, ax + 1, sp);
  *idxs = red(c, TD_IR_SUM, sel(c, hit, ie, el_int(0, sp), sp), 1u << (ax + 1), 0, sp);
  if (idxs->k == V_ERR) return -1;
  if (!want_values) return 0;
  td_value xv = t == TD_BOOL ? cast(c, x, TD_I32, sp) : x;
  td_value xe = unsq(c, &xv, ax, sp);
  /* selected again from the indices (not from `hit`), so that no
   * [.., m, n, ..] mask is kept between two reductions: each reduction
   * fuses its own comparison */
  td_value pick = bin(c, TD_OP_EQ, unsq(c, idxs, ax + 1, sp), ie, sp);
  *vals = red(c, TD_IR_SUM, sel(c, pick, xe, el_int(0, sp), sp), 1u << (ax + 1), 0, sp);
  if (vals->k != V_ERR && el_node(c, vals)->dtype != t) *vals = cast(c, *vals, t, sp);
  return vals->k == V_ERR ? -1 : 0;
}

static td_value pair(el_ctx *c, td_value a, td_value b, td_span sp) {
  td_value r = el_none(sp);
  r.k = V_TUPLE;
  r.n = 2;
  r.items = td_arena_alloc(c->arena, 2 * sizeof *r.items);
  if (!r.items) return el_err();
  r.items[0] = a;
  r.items[1] = b;
  return r;
}

static td_value b_sort(el_ctx *c, int which, td_value *a, td_span sp) {
  const char *fn = which == 0 ? "sort" : which == 1 ? "argsort" : "topk";
  td_value *axv = which == 2 ? &a[2] : &a[1], *flag = which == 2 ? &a[3] : &a[2];
  int ax, desc, always;
  /* stable (sort, argsort) and sorted (topk) are accepted for PyTorch's
   * signatures: the result is stable and sorted either way */
  if (sort_args(c, fn, &a[0], axv, &ax) || opt_flag(c, flag, which == 2, &desc) ||
      opt_flag(c, which == 2 ? &a[4] : &a[3], 1, &always)) return el_err();
  td_dim len = el_node(c, &a[0])->shape[ax], m = len;
  if (which == 2) {
    if (a[1].k == V_TENSOR) { el_err_host_read(c, &a[1], "topk's k"); return el_err(); }
    if (el_size_arg(c, &a[1], &m, "topk's k")) return el_err();
    if (m >= 0 && len >= 0 && m > len) {
      td_diag *g = td_error(c->diags, a[1].span, "topk's k = %lld is larger than axis %d's size %lld",
                            (long long)m, ax, (long long)len);
      td_diag_help(c->diags, g, "k can be at most the size of the axis");
      return el_err();
    }
  }
  td_value v = el_none(sp), ix = el_none(sp);
  if (sort_core(c, fn, &a[0], ax, desc, m, which != 1, &v, &ix, sp)) return el_err();
  if (which == 2 && (m < 0 || len < 0) && m != len) {
    /* a symbolic k or axis: k <= the axis' size is a run-time size check
     * (lang/checks.c), made by every backend before anything runs, of
     * arange(size)[0:k] */
    td_value pos = iota(c, len, TD_I64, 1, 0, sp);
    if (pos.k == V_ERR) return el_err();
    td_attr at;
    memset(&at, 0, sizeof at);
    at.start[0] = 0;
    at.step[0] = 1;
    int in = pos.node;
    if (el_emit(c, TD_IR_SLICE, TD_I64, 1, &m, &in, 1, &at, sp) < 0) return el_err();
  }
  return which == 1 ? ix : pair(c, v, ix, sp);
}

/* ---- norm (torch.linalg.vector_norm) ---- */

static td_value b_norm(el_ctx *c, td_value *a, td_span sp) {
  if (need_tensor(c, &a[0], "norm", "x")) return el_err();
  const td_node *n = el_node(c, &a[0]);
  td_dtype t = n->dtype;
  if (!td_dtype_is_float(t)) {
    td_diag *g = td_error(c->diags, a[0].span, "norm needs a float tensor, found %s", td_dtype_name(t));
    td_diag_help(c->diags, g, "convert first: norm(f32(x))");
    return el_err();
  }
  double p = 2;
  int pinf = 0;   /* 1: inf, -1: -inf */
  td_value *pv = &a[1];
  if (pv->k == V_INT) p = (double)pv->i;
  else if (pv->k == V_FLOAT) p = pv->f;
  else if (pv->k == V_STR && (!strcmp(pv->s, "inf") || !strcmp(pv->s, "-inf"))) pinf = pv->s[0] == '-' ? -1 : 1;
  else if (pv->k != V_NONE) {
    td_diag *g = td_error(c->diags, pv->span, "norm's p must be a number or \"inf\" or \"-inf\", found %s",
                          el_kind_name(pv));
    td_diag_help(c->diags, g, "p = 1, p = 2 (the default), p = \"inf\" (the largest |x|), or any other number");
    return el_err();
  }
  if (p != p) { td_error(c->diags, pv->span, "norm's p is NaN"); return el_err(); }
  if (isinf(p)) pinf = p > 0 ? 1 : -1;
  uint32_t mask = 0;
  int keep;
  if (opt_flag(c, &a[3], 0, &keep)) return el_err();
  if (a[2].k == V_NONE) mask = n->rank ? (uint32_t)((1u << n->rank) - 1) : 0;
  else if (a[2].k == V_LIST || a[2].k == V_TUPLE) {
    for (int i = 0; i < a[2].n; i++) {
      int ax;
      if (el_axis(c, &a[2].items[i], n->rank, &ax)) return el_err();
      if (mask >> ax & 1) { td_error(c->diags, a[2].items[i].span, "axis %d is listed twice", ax); return el_err(); }
      mask |= 1u << ax;
    }
  } else {
    int ax;
    if (el_axis(c, &a[2], n->rank, &ax)) return el_err();
    mask = 1u << ax;
  }
  td_value x = cast(c, a[0], work_dtype(t), sp);
  td_value ab = x.k == V_ERR ? x : el_unary_op(c, TD_IR_ABS, &x, sp);
  td_value r;
  if (pinf) r = red(c, pinf > 0 ? TD_IR_RMAX : TD_IR_RMIN, ab, mask, keep, sp);
  else if (p == 0) r = red(c, TD_IR_SUM, cast(c, bin(c, TD_OP_NE, x, el_int(0, sp), sp), work_dtype(t), sp), mask, keep, sp);
  else if (p == 1) r = red(c, TD_IR_SUM, ab, mask, keep, sp);
  else {
    /* the root of s = sum(|x|^p), written where(s == 0, 0, root(where(s == 0, 1, s))):
     * the same value, and a gradient of 0 at a zero vector (torch's
     * subgradient) instead of the root's infinite slope times 0 */
    td_value s = p == 2 ? red(c, TD_IR_SUM, bin(c, TD_OP_MUL, x, x, sp), mask, keep, sp)
                        : red(c, TD_IR_SUM, bin(c, TD_OP_POW, ab, el_float(p, sp), sp), mask, keep, sp);
    td_value z = bin(c, TD_OP_EQ, s, el_int(0, sp), sp);
    td_value s1 = sel(c, z, el_int(1, sp), s, sp);
    td_value rt = s1.k == V_ERR ? s1 : p == 2 ? el_unary_op(c, TD_IR_SQRT, &s1, sp) : bin(c, TD_OP_POW, s1, el_float(1.0 / p, sp), sp);
    r = sel(c, z, el_int(0, sp), rt, sp);
  }
  return cast(c, r, t, sp);
}

td_value el_extra_builtin(el_ctx *c, int which, td_value *a, td_span sp) {
  switch (which) {
  case 0: return b_cum(c, 0, a, sp);
  case 1: return b_cum(c, 1, a, sp);
  case 2: return b_scatter(c, 0, a, sp);
  case 3: return b_scatter(c, 1, a, sp);
  case 4: return b_sort(c, 0, a, sp);
  case 5: return b_sort(c, 1, a, sp);
  case 6: return b_sort(c, 2, a, sp);
  case 8: return b_norm(c, a, sp);
  }
  return el_err();
}

/* ---- einsum ----
 *
 * Labels: the letters a-z and A-Z are 0..51; the axes an ellipsis covers
 * are 52 + k, k counted from the right (so `...` of different operands
 * line up as in numpy).  Each operand first loses its repeated labels (a
 * diagonal: a where over an eye mask, summed) and the labels no one else
 * needs (summed); then the operands are combined left to right, two at a
 * time: labels both have and the result needs are batch axes, labels both
 * have and nothing later needs are contracted by one matmul (or, when there
 * are none, the two are multiplied with broadcasting); the result is
 * permuted to the output's order. */

#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + TD_MAX_RANK)

typedef struct ein_op {
  td_value v;                 /* the operand as lowered so far */
  int lab[TD_MAX_RANK];       /* label of each axis */
  int n;                      /* rank */
} ein_op;

static int ein_letter(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
  return -1;
}

static char ein_char(int l) { return l < 26 ? (char)('a' + l) : l < 52 ? (char)('A' + l - 26) : '.'; }

/* Axis of label l in o, or -1. */
static int ein_find(const ein_op *o, int l) {
  for (int i = 0; i < o->n; i++)
    if (o->lab[i] == l) return i;
  return -1;
}

/* Sums axis ax of o away. */
static int ein_sum_axis(el_ctx *c, ein_op *o, int ax, td_span sp) {
  o->v = red(c, TD_IR_SUM, o->v, 1u << ax, 0, sp);
  if (o->v.k == V_ERR) return -1;
  for (int i = ax; i + 1 < o->n; i++) o->lab[i] = o->lab[i + 1];
  o->n--;
  return 0;
}

/* Permutes o to the label order want[0..o->n). */
static int ein_permute(el_ctx *c, ein_op *o, const int *want, td_span sp) {
  int perm[TD_MAX_RANK];
  for (int i = 0; i < o->n; i++) perm[i] = ein_find(o, want[i]);
  o->v = el_permute(c, &o->v, perm, sp);
  memcpy(o->lab, want, (size_t)o->n * sizeof *want);
  return o->v.k == V_ERR ? -1 : 0;
}

static td_value ein_reshape(el_ctx *c, td_value v, int rank, const td_dim *s, td_span sp) {
  return v.k == V_ERR ? v : el_reshape(c, &v, rank, s, sp);
}

/* A and B combined; `keep` marks the labels needed after this step. */
static int ein_pair(el_ctx *c, ein_op *A, ein_op *B, const int *keep, const td_dim *size, td_span sp) {
  int bat[TD_MAX_RANK], ao[TD_MAX_RANK], bo[TD_MAX_RANK], con[TD_MAX_RANK];
  int nb = 0, na = 0, nbo = 0, nc = 0;
  for (int i = 0; i < A->n; i++) {
    int l = A->lab[i];
    if (ein_find(B, l) >= 0) { if (keep[l]) bat[nb++] = l; else con[nc++] = l; }
    else ao[na++] = l;
  }
  for (int i = 0; i < B->n; i++)
    if (ein_find(A, B->lab[i]) < 0) bo[nbo++] = B->lab[i];
  if (nb + na + nbo > TD_MAX_RANK) {
    td_error(c->diags, sp, "einsum: an intermediate result would have more than %d dimensions", TD_MAX_RANK);
    return -1;
  }
  int wa[TD_MAX_RANK], wb[TD_MAX_RANK], k = 0;
  td_dim sa[TD_MAX_RANK], sb[TD_MAX_RANK];
  if (!nc) {
    /* no contraction: broadcast multiply [bat, ao, 1..] * [bat, 1.., bo] */
    for (int i = 0; i < nb; i++) wa[k++] = bat[i];
    for (int i = 0; i < na; i++) wa[k++] = ao[i];
    if (ein_permute(c, A, wa, sp)) return -1;
    k = 0;
    for (int i = 0; i < nb; i++) wb[k++] = bat[i];
    for (int i = 0; i < nbo; i++) wb[k++] = bo[i];
    if (ein_permute(c, B, wb, sp)) return -1;
    int r = nb + na + nbo;
    for (int i = 0; i < r; i++) {
      sa[i] = i < nb + na ? size[wa[i]] : 1;
      sb[i] = i < nb ? size[bat[i]] : i < nb + na ? 1 : size[bo[i - nb - na]];
    }
    td_value x = ein_reshape(c, A->v, r, sa, sp), y = ein_reshape(c, B->v, r, sb, sp);
    A->v = bin(c, TD_OP_MUL, x, y, sp);
    for (int i = 0; i < nbo; i++) wa[nb + na + i] = bo[i];
    memcpy(A->lab, wa, (size_t)r * sizeof *wa);
    A->n = r;
    return A->v.k == V_ERR ? -1 : 0;
  }
  /* [bat, ao, con] @ [bat, con, bo] as [bat, M, K] @ [bat, K, N] */
  for (int i = 0; i < nb; i++) wa[k++] = bat[i];
  for (int i = 0; i < na; i++) wa[k++] = ao[i];
  for (int i = 0; i < nc; i++) wa[k++] = con[i];
  if (ein_permute(c, A, wa, sp)) return -1;
  k = 0;
  for (int i = 0; i < nb; i++) wb[k++] = bat[i];
  for (int i = 0; i < nc; i++) wb[k++] = con[i];
  for (int i = 0; i < nbo; i++) wb[k++] = bo[i];
  if (ein_permute(c, B, wb, sp)) return -1;
  td_dim M = 1, K = 1, N = 1;
  for (int i = 0; i < na; i++) M = td_dim_mul(c->g, M, size[ao[i]]);
  for (int i = 0; i < nc; i++) K = td_dim_mul(c->g, K, size[con[i]]);
  for (int i = 0; i < nbo; i++) N = td_dim_mul(c->g, N, size[bo[i]]);
  if (TD_DIM_IS_BAD(M) || TD_DIM_IS_BAD(K) || TD_DIM_IS_BAD(N)) {
    el_err_overflow(c, sp, "the sizes einsum multiplies together");
    return -1;
  }
  for (int i = 0; i < nb; i++) sa[i] = sb[i] = size[bat[i]];
  sa[nb] = M; sa[nb + 1] = K;
  sb[nb] = K; sb[nb + 1] = N;
  td_value x = ein_reshape(c, A->v, nb + 2, sa, sp), y = ein_reshape(c, B->v, nb + 2, sb, sp);
  td_value p = x.k == V_ERR || y.k == V_ERR ? el_err() : el_matmul(c, &x, &y, sp);
  int r = nb + na + nbo;
  td_dim so[TD_MAX_RANK];
  for (int i = 0; i < nb; i++) { so[i] = size[bat[i]]; A->lab[i] = bat[i]; }
  for (int i = 0; i < na; i++) { so[nb + i] = size[ao[i]]; A->lab[nb + i] = ao[i]; }
  for (int i = 0; i < nbo; i++) { so[nb + na + i] = size[bo[i]]; A->lab[nb + na + i] = bo[i]; }
  A->n = r;
  A->v = ein_reshape(c, p, r, so, sp);
  return A->v.k == V_ERR ? -1 : 0;
}

#define EIN_HELP "an equation names each operand's axes with letters, operands separated by commas, " \
  "and the output's after ->, e.g. einsum(\"ij,jk->ik\", a, b); without -> the output is the letters " \
  "that appear once, in alphabetical order"

td_value el_einsum(el_ctx *c, td_value *args, const char **kw, int n, td_span sp) {
  const td_value *eqv = NULL;
  td_value ops_v[TD_MAX_RANK * 4];
  int nops = 0;
  for (int i = 0; i < n; i++) {
    if (args[i].k == V_ERR) return el_err();
    if (kw[i] && strcmp(kw[i], "equation")) {
      td_error(c->diags, args[i].span, "einsum() has no parameter named '%s'", kw[i]);
      return el_err();
    }
    if (kw[i] || (!eqv && i == 0)) { eqv = &args[i]; continue; }
    if (nops == (int)(sizeof ops_v / sizeof ops_v[0])) {
      td_error(c->diags, args[i].span, "einsum takes at most %d operands", nops);
      return el_err();
    }
    ops_v[nops++] = args[i];
  }
  if (!eqv || eqv->k != V_STR) {
    td_diag *g = td_error(c->diags, eqv ? eqv->span : sp, "einsum's first argument must be its equation, a string%s%s",
                          eqv ? ", found " : "", eqv ? el_kind_name(eqv) : "");
    td_diag_help(c->diags, g, EIN_HELP);
    return el_err();
  }
  const char *eq = eqv->s;
  td_span es = eqv->span;
  for (int i = 0; i < nops; i++)
    if (need_tensor(c, &ops_v[i], "einsum", "each operand")) return el_err();
  /* split the equation */
  const char *arrow = strstr(eq, "->");
  int nterms = 1;
  for (const char *p = eq; *p && (!arrow || p < arrow); p++) nterms += *p == ',';
  if (nterms != nops) {
    td_diag *g = td_error(c->diags, sp, "einsum's equation \"%s\" has %d operand%s, but %d tensor%s given",
                          eq, nterms, nterms == 1 ? "" : "s", nops, nops == 1 ? " is" : "s are");
    td_diag_help(c->diags, g, EIN_HELP);
    return el_err();
  }
  if (nops == 0) { td_error(c->diags, sp, "einsum needs at least one operand"); return el_err(); }
  ein_op *ops = td_arena_alloc(c->arena, (size_t)nops * sizeof *ops);
  if (!ops) return el_err();
  td_dim size[EIN_LABELS];
  int owner[EIN_LABELS], count[EIN_LABELS], ell_rank = 0;
  for (int l = 0; l < EIN_LABELS; l++) { size[l] = -1; owner[l] = -1; count[l] = 0; }
  int have_size[EIN_LABELS] = {0};
  const char *p = eq;
  for (int k = 0; k < nops; k++) {
    const td_node *nd = el_node(c, &ops_v[k]);
    if (nd->dtype == TD_BOOL) {
      td_diag *g = td_error(c->diags, ops_v[k].span, "einsum on bool values");
      td_diag_help(c->diags, g, "convert first: f32(x)");
      return el_err();
    }
    if (nd->dtype != el_node(c, &ops_v[0])->dtype) {
      td_diag *g = td_error(c->diags, ops_v[k].span, "einsum needs operands of one dtype: operand %d is %s, operand 1 is %s",
                            k + 1, td_dtype_name(nd->dtype), td_dtype_name(el_node(c, &ops_v[0])->dtype));
      td_diag_help(c->diags, g, "convert one of them, e.g. f32(x)");
      return el_err();
    }
    int lets[TD_MAX_RANK + 1], nl = 0, ell = -1;
    for (; *p && *p != ',' && !(arrow && p >= arrow); p++) {
      if (*p == ' ') continue;
      if (*p == '.') {
        if (strncmp(p, "...", 3) || ell >= 0) {
          td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": operand %d has %s", eq, k + 1,
                                ell >= 0 ? "two ellipses" : "a '.' that is not part of '...'");
          td_diag_help(c->diags, g, EIN_HELP);
          return el_err();
        }
        ell = nl;
        p += 2;
        continue;
      }
      int l = ein_letter(*p);
      if (l < 0 || nl > TD_MAX_RANK) {
        td_diag *g = td_error(c->diags, es, l < 0 ? "einsum's equation \"%s\": '%c' is not a letter"
                              : "einsum's equation \"%s\": operand %d names too many axes", eq, l < 0 ? *p : k + 1);
        td_diag_help(c->diags, g, EIN_HELP);
        return el_err();
      }
      lets[nl++] = l;
    }
    if (*p == ',') p++;
    int r = nd->rank, er = r - nl;
    if (er < 0 || (ell < 0 && er != 0)) {
      char t[256];
      td_diag *g = td_error(c->diags, ops_v[k].span, "einsum: operand %d is %s, of %d dimension%s, but the equation "
                            "names %d", k + 1, td_type_str(c->g, nd->dtype, nd->rank, nd->shape, t, sizeof t),
                            r, r == 1 ? "" : "s", nl);
      td_diag_help(c->diags, g, "give one letter per axis (or ... for the leading ones) in operand %d of \"%s\"", k + 1, eq);
      return el_err();
    }
    if (er > ell_rank) ell_rank = er;
    ein_op *o = &ops[k];
    o->v = ops_v[k];
    o->n = r;
    for (int i = 0, li = 0; i < r; i++) {
      int l;
      if (ell >= 0 && i >= ell && i < ell + er) l = EIN_LETTERS + (ell + er - 1 - i);
      else l = lets[li++];
      o->lab[i] = l;
      td_dim s = nd->shape[i];
      if (have_size[l] && size[l] != s) {
        char d1[64], d2[64];
        td_dim_str(c->g, size[l], d1, sizeof d1);
        td_dim_str(c->g, s, d2, sizeof d2);
        td_diag *g;
        if (l < EIN_LETTERS)
          g = td_error(c->diags, sp, "einsum: letter '%c' has size %s in operand %d and size %s in operand %d",
                       ein_char(l), d1, owner[l] + 1, d2, k + 1);
        else
          g = td_error(c->diags, sp, "einsum: the axes of ... differ: size %s in operand %d and %s in operand %d "
                       "(ellipsis axes are not broadcast)", d1, owner[l] + 1, d2, k + 1);
        td_diag_note(c->diags, g, ops_v[owner[l]].span, "operand %d", owner[l] + 1);
        td_diag_note(c->diags, g, ops_v[k].span, "operand %d", k + 1);
        td_diag_help(c->diags, g, "every axis named by one letter must have one size");
        return el_err();
      }
      if (!have_size[l]) { have_size[l] = 1; size[l] = s; owner[l] = k; }
    }
    for (int i = 0; i < r; i++) count[o->lab[i]]++;
  }
  /* output labels */
  int out[EIN_LABELS], nout = 0, in_out[EIN_LABELS] = {0};
  if (arrow) {
    int ell = 0;
    for (const char *q = arrow + 2; *q; q++) {
      if (*q == ' ') continue;
      if (*q == '.') {
        if (strncmp(q, "...", 3) || ell) {
          td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": the output has %s", eq,
                                ell ? "two ellipses" : "a '.' that is not part of '...'");
          td_diag_help(c->diags, g, EIN_HELP);
          return el_err();
        }
        ell = 1;
        for (int e = ell_rank - 1; e >= 0; e--) { out[nout++] = EIN_LETTERS + e; in_out[EIN_LETTERS + e] = 1; }
        q += 2;
        continue;
      }
      int l = ein_letter(*q);
      if (l < 0) {
        td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": '%c' is not a letter", eq, *q);
        td_diag_help(c->diags, g, EIN_HELP);
        return el_err();
      }
      if (in_out[l]) {
        td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": letter '%c' appears twice in the output", eq, *q);
        td_diag_help(c->diags, g, "each output letter names one axis of the result; for a diagonal write "
                     "it twice in an operand, e.g. einsum(\"ii->i\", x)");
        return el_err();
      }
      if (!count[l]) {
        td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": output letter '%c' names no axis of an operand",
                              eq, *q);
        td_diag_help(c->diags, g, EIN_HELP);
        return el_err();
      }
      in_out[l] = 1;
      out[nout++] = l;
    }
    if (!ell && ell_rank) {
      td_diag *g = td_error(c->diags, es, "einsum's equation \"%s\": the operands have ... but the output does not", eq);
      td_diag_help(c->diags, g, "write ... in the output too, e.g. \"...ij->...i\"");
      return el_err();
    }
  } else {
    for (int e = ell_rank - 1; e >= 0; e--) { out[nout++] = EIN_LETTERS + e; in_out[EIN_LETTERS + e] = 1; }
    /* ASCII order, as numpy: A-Z, then a-z */
    for (int l = 26; l < EIN_LETTERS; l++)
      if (count[l] == 1) { out[nout++] = l; in_out[l] = 1; }
    for (int l = 0; l < 26; l++)
      if (count[l] == 1) { out[nout++] = l; in_out[l] = 1; }
  }
  if (nout > TD_MAX_RANK) { td_error(c->diags, es, "einsum: the output would have more than %d dimensions", TD_MAX_RANK); return el_err(); }
  /* each operand: diagonals of repeated labels, then labels no one else needs summed */
  for (int k = 0; k < nops; k++) {
    ein_op *o = &ops[k];
    for (int i = 0; i < o->n; i++)
      for (int j = i + 1; j < o->n; j++) {
        if (o->lab[j] != o->lab[i]) continue;
        td_value ii = iota(c, size[o->lab[i]], TD_I64, o->n, i, sp), jj = iota(c, size[o->lab[i]], TD_I64, o->n, j, sp);
        o->v = sel(c, bin(c, TD_OP_EQ, ii, jj, sp), o->v, el_int(0, sp), sp);
        if (o->v.k == V_ERR || ein_sum_axis(c, o, j, sp)) return el_err();
        count[o->lab[i]]--;
        j--;
      }
    for (int i = 0; i < o->n; i++) {
      int l = o->lab[i], elsewhere = 0;
      for (int m = 0; m < nops && !elsewhere; m++) elsewhere = m != k && ein_find(&ops[m], l) >= 0;
      if (!in_out[l] && !elsewhere) {
        if (ein_sum_axis(c, o, i, sp)) return el_err();
        i--;
      }
    }
  }
  /* combine left to right */
  ein_op cur = ops[0];
  for (int k = 1; k < nops; k++) {
    int keep[EIN_LABELS];
    for (int l = 0; l < EIN_LABELS; l++) keep[l] = in_out[l];
    for (int m = k + 1; m < nops; m++)
      for (int i = 0; i < ops[m].n; i++) keep[ops[m].lab[i]] = 1;
    if (ein_pair(c, &cur, &ops[k], keep, size, sp)) return el_err();
  }
  for (int i = 0; i < cur.n; i++)
    if (!in_out[cur.lab[i]]) {
      if (ein_sum_axis(c, &cur, i, sp)) return el_err();
      i--;
    }
  if (ein_permute(c, &cur, out, sp)) return el_err();
  return cur.v;
}

/* lower_conv.c - the "conv" pass: CONV becomes an im2col matmul.
 *
 * The kernel plan has no convolution kernel of its own (yet): this pass,
 * right after legalize in td_optimize's pipeline, rewrites every CONV
 * node into primitives the CPU and CUDA generators already compile,
 *
 *   xv   = x with ldil - 1 zeros between its elements along each dilated
 *          axis (a transposed convolution's input: concat + reshape +
 *          slice), then zero-padded (concat) or cropped so that every
 *          window lies inside it
 *   col  = [N, G, Cg * KK, P]: for each of the KK kernel offsets a strided
 *          slice of xv ([N, C, *out]), or, when there are fewer output
 *          positions P than kernel offsets (the weight gradient, whose
 *          "kernel" is the output gradient), for each output position a
 *          dilated slice ([N, C, *k]); stacked by one concat
 *   y    = W [1, G, Og, Cg * KK] @ col -> [N, G, Og, P] -> [N, O, *out]
 *
 * so the fuser makes col one pointwise kernel reading x in place (the
 * slices, pads and concat are index arithmetic) and the product one GEMM
 * with the packed micro-kernel.  The cost is the col buffer, Cg * KK
 * times the input (docs/compiler.md, "Convolutions", has the measured
 * numbers and what a direct conv kernel would save).  The eager
 * interpreter keeps CONV as it is (interp/conv.c), so the two are
 * independent implementations and difftests compare them.
 */
#include "compiler/passes.h"

#include <string.h>

#include "lang/conv.h"

/* The most slices one im2col concat is made of. */
#define LOWER_MAX_PARTS 4096

typedef struct lw {
  td_graph *dst;
  td_span sp;
  const char *name;   /* the CONV node's name, for the nodes it becomes */
  td_err *err;
} lw;

static int add(lw *L, td_op op, td_dtype dt, int rank, const td_dim *shape, const int *in, int n_in,
               const td_attr *at) {
  for (int k = 0; k < n_in; k++)
    if (in[k] < 0) return -1;
  int id = td_graph_add(L->dst, op, dt, rank, shape, in, n_in, at, L->sp);
  if (id < 0) return td_err_set(L->err, "out of memory");
  L->dst->nodes[id].name = L->name;
  return id;
}

static const td_node *N(lw *L, int id) { return &L->dst->nodes[id]; }

static int reshape(lw *L, int x, int rank, const td_dim *shape) {
  if (x < 0) return -1;
  return add(L, TD_IR_RESHAPE, N(L, x)->dtype, rank, shape, &x, 1, NULL);
}

/* Zeros shaped like x but `len` long along axis. */
static int zeros_like_axis(lw *L, int x, int axis, td_dim len) {
  const td_node *n = N(L, x);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  s[axis] = len;
  td_dtype dt = n->dtype;
  int rank = n->rank;
  td_attr z;
  memset(&z, 0, sizeof z);
  int c = add(L, TD_IR_CONST, dt, 0, NULL, NULL, 0, &z);
  return c < 0 ? -1 : add(L, TD_IR_BROADCAST, dt, rank, s, &c, 1, NULL);
}

static int concat2(lw *L, int a, int b, int axis) {
  if (a < 0 || b < 0) return -1;
  td_dim s[TD_MAX_RANK];
  memcpy(s, N(L, a)->shape, sizeof s);
  s[axis] = td_dim_add(L->dst, s[axis], N(L, b)->shape[axis]);
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = axis;
  int in[2] = {a, b};
  return add(L, TD_IR_CONCAT, N(L, a)->dtype, N(L, a)->rank, s, in, 2, &at);
}

/* x through a one-part concat (a copy in memory for the fuser). */
static int copy_of(lw *L, int x) {
  td_attr at;
  memset(&at, 0, sizeof at);
  const td_node *n = N(L, x);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  return add(L, TD_IR_CONCAT, n->dtype, n->rank, s, &x, 1, &at);
}

/* x[start :: step] (len elements) along each axis i < rank. */
static int slice(lw *L, int x, const td_dim *start, const int64_t *step, const td_dim *len) {
  if (x < 0) return -1;
  td_attr at;
  memset(&at, 0, sizeof at);
  const td_node *n = N(L, x);
  for (int i = 0; i < n->rank; i++) {
    at.start[i] = start[i];
    at.step[i] = step[i];
  }
  return add(L, TD_IR_SLICE, n->dtype, n->rank, len, &x, 1, &at);
}

/* x along axis with ld - 1 zeros after each element but the last. */
static int dilate_axis(lw *L, int x, int axis, int64_t ld) {
  const td_node *n = N(L, x);
  int r = n->rank;
  td_dim s[TD_MAX_RANK], full[TD_MAX_RANK], st[TD_MAX_RANK];
  int64_t step[TD_MAX_RANK];
  for (int i = 0, j = 0; i <= r; i++) s[i] = i == axis + 1 ? 1 : n->shape[j++];
  td_dim H = n->shape[axis];
  int u = reshape(L, x, r + 1, s);
  if (u < 0) return -1;
  int z = zeros_like_axis(L, u, axis + 1, ld - 1);
  int cat = concat2(L, u, z, axis + 1);
  memcpy(full, N(L, x)->shape, sizeof full);
  full[axis] = td_dim_mul(L->dst, H, ld);
  int flat = reshape(L, cat, r, full);
  for (int i = 0; i < r; i++) {
    st[i] = 0;
    step[i] = 1;
  }
  full[axis] = td_dim_add(L->dst, td_dim_mul(L->dst, td_dim_sub(L->dst, H, 1), ld), 1);
  return slice(L, flat, st, step, full);
}

/* The elements of x the windows of node n read, as the slice of part
 * `part` of the col matrix: by kernel offset (by_out = 0: start base +
 * kk d, step s, out long) or by output position (start base + o s, step
 * d, k long), each reshaped to [N, C, KK or 1, P or 1]. */
static int col_part(lw *L, const td_node *n, int xp, const int64_t *base, const td_dim *k, int by_out, int64_t part,
                    td_dim KK, td_dim P) {
  const td_conv_attr *ca = &n->attr.conv;
  int S = ca->spatial;
  const td_node *xn = N(L, xp);
  td_dim start[TD_MAX_RANK], len[TD_MAX_RANK];
  int64_t step[TD_MAX_RANK];
  start[0] = start[1] = 0;
  step[0] = step[1] = 1;
  len[0] = xn->shape[0];
  len[1] = xn->shape[1];
  for (int a = S - 1; a >= 0; a--) {   /* part in C order over the unrolled axes */
    td_dim extent = by_out ? n->shape[2 + a] : k[a];
    int64_t idx = part % extent;
    part /= extent;
    start[2 + a] = base[a] + idx * (by_out ? ca->stride[a] : ca->dil[a]);
    step[2 + a] = by_out ? ca->dil[a] : ca->stride[a];
    len[2 + a] = by_out ? k[a] : n->shape[2 + a];
  }
  int sl = slice(L, xp, start, step, len);
  td_dim s4[4] = {len[0], len[1], by_out ? KK : 1, by_out ? 1 : P};
  return reshape(L, sl, 4, s4);
}

/* The parts col_part makes, concatenated: [N, C, KK, P]. */
static int col_matrix(lw *L, const td_node *n, int xp, const int64_t *base, const td_dim *k, int by_out,
                      int64_t parts, td_dim KK, td_dim P) {
  int *ids = td_arena_alloc(L->dst->arena, (size_t)parts * sizeof *ids);
  if (!ids) return td_err_set(L->err, "out of memory");
  for (int64_t i = 0; i < parts; i++)
    if ((ids[i] = col_part(L, n, xp, base, k, by_out, i, KK, P)) < 0) return -1;
  if (parts == 1) return ids[0];
  const td_node *f = N(L, ids[0]);
  td_dim s[4] = {f->shape[0], f->shape[1], KK, P};
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = by_out ? 3 : 2;
  return add(L, TD_IR_CONCAT, f->dtype, 4, s, ids, (int)parts, &at);
}

/* x dilated and padded so that every window of node n lies inside it;
 * base[a]: where the window at output 0, kernel offset 0 starts. */
static int padded_input(lw *L, const td_node *n, int x, const td_dim *k, int64_t *base) {
  const td_conv_attr *ca = &n->attr.conv;
  int xv = x;
  for (int a = 0; a < ca->spatial && xv >= 0; a++) {
    int ax = 2 + a;
    if (ca->ldil[a] > 1) xv = dilate_axis(L, xv, ax, ca->ldil[a]);
    if (xv >= 0 && ca->pad[a] > 0) xv = concat2(L, zeros_like_axis(L, xv, ax, ca->pad[a]), xv, ax);
    if (xv < 0) return -1;
    base[a] = ca->pad[a] > 0 ? 0 : -(int64_t)ca->pad[a];
    /* the last index read: base + (out - 1) s + (k - 1) d; past the end by need */
    td_dim last = td_dim_add(L->dst, td_dim_mul(L->dst, td_dim_sub(L->dst, n->shape[ax], 1), ca->stride[a]),
                             td_dim_add(L->dst, td_dim_mul(L->dst, td_dim_sub(L->dst, k[a], 1), ca->dil[a]), base[a]));
    int64_t need;
    if (!td_dim_const_value(L->dst, td_dim_sub(L->dst, td_dim_add(L->dst, last, 1), N(L, xv)->shape[ax]), &need))
      return td_err_set(L->err, "cannot lower the convolution at line %d: how far its windows reach along "
                        "spatial axis %d depends on the symbolic sizes", n->span.line, a);
    if (need > 0) xv = concat2(L, xv, zeros_like_axis(L, xv, ax, need), ax);
  }
  return xv;
}

/* CONV node n of the source graph with inputs x, w (new ids): its value
 * as an im2col matmul. */
static int lower_conv(lw *L, const td_node *n, int x, int w) {
  const td_conv_attr *ca = &n->attr.conv;
  int S = ca->spatial;
  int64_t G = ca->groups, base[TD_CONV_MAX_SPATIAL];
  td_dim k[TD_CONV_MAX_SPATIAL], KK = 1, P = 1;
  for (int a = 0; a < S; a++) {
    k[a] = N(L, w)->shape[2 + a];
    KK = td_dim_mul(L->dst, KK, k[a]);
    P = td_dim_mul(L->dst, P, n->shape[2 + a]);
  }
  /* unroll the literal one of KK and P, the smaller when both are */
  int by_out = !TD_DIM_IS_CONST(KK) || (TD_DIM_IS_CONST(P) && P < KK);
  int64_t parts = by_out ? P : KK;
  if (!TD_DIM_IS_CONST(parts) || parts > LOWER_MAX_PARTS)
    return td_err_set(L->err, "cannot lower the convolution at line %d: %s kernel offsets and output "
                      "positions (at most %d of one of them, known when compiling)", n->span.line,
                      TD_DIM_IS_CONST(parts) ? "too many" : "symbolic numbers of", LOWER_MAX_PARTS);
  /* A computed weight (the flipped, transposed ones of transposed and
   * gradient convolutions) is copied by a one-part concat, which ends the
   * fuser's view chains there: a movement chain shared by two matmuls'
   * operands was made the view of one and the base buffer of the other,
   * which the plan verifier rejects (fuse.c setup_operand; seen with
   * conv_transpose2d's gradient).  Weights are small; the copy is one
   * pointwise kernel. */
  td_op wop = N(L, w)->op;
  if (wop != TD_IR_PARAM && wop != TD_IR_INPUT) w = copy_of(L, w);
  int xp = w < 0 ? -1 : padded_input(L, n, x, k, base);
  int col = xp < 0 ? -1 : col_matrix(L, n, xp, base, k, by_out, parts, KK, P);
  if (col < 0) return -1;
  td_dim Nb = n->shape[0], O = n->shape[1], C = N(L, x)->shape[1];
  td_dim CK = td_dim_mul(L->dst, C, KK);
  td_dim Og = O, Cg = N(L, w)->shape[1];
  int a_id, b_id, mm;
  td_dtype dt = n->dtype;
  if (G == 1) {
    td_dim ws[2] = {O, CK}, cs[3] = {Nb, CK, P}, ms[3] = {Nb, O, P};
    a_id = reshape(L, w, 2, ws);
    b_id = reshape(L, col, 3, cs);
    int in[2] = {a_id, b_id};
    mm = a_id < 0 || b_id < 0 ? -1 : add(L, TD_IR_MATMUL, dt, 3, ms, in, 2, NULL);
  } else {
    if (td_dim_div(L->dst, O, G, &Og))   /* the verifier checked literal counts; a symbolic one must divide too */
      return td_err_set(L->err, "cannot lower the convolution at line %d: groups = %lld do not divide its "
                        "output channels", n->span.line, (long long)G);
    td_dim CgK = td_dim_mul(L->dst, Cg, KK);
    td_dim ws[4] = {1, G, Og, CgK}, cs[4] = {Nb, G, CgK, P}, ms[4] = {Nb, G, Og, P};
    a_id = reshape(L, w, 4, ws);
    b_id = reshape(L, col, 4, cs);
    int in[2] = {a_id, b_id};
    mm = a_id < 0 || b_id < 0 ? -1 : add(L, TD_IR_MATMUL, dt, 4, ms, in, 2, NULL);
  }
  td_dim ys[TD_MAX_RANK];
  memcpy(ys, n->shape, sizeof ys);
  return reshape(L, mm, S + 2, ys);
}

td_graph *td_pass_lower_conv(const td_graph *g, td_err *err) {
  int any = 0;
  for (int i = 0; i < g->n_nodes && !any; i++) any = g->nodes[i].op == TD_IR_CONV;
  if (!any) return (td_graph *)g;
  lw L = {.dst = td_graph_clone_tables(g), .err = err};
  int *map = td_arena_alloc(g->arena, (size_t)(g->n_nodes + 1) * sizeof *map);
  if (!L.dst || !map) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  for (int id = 0; id < g->n_nodes; id++) {
    const td_node *n = &g->nodes[id];
    int in[8], *ins = in;
    if (n->n_in > 8 && !(ins = td_arena_alloc(g->arena, (size_t)n->n_in * sizeof *ins))) {
      td_err_set(err, "out of memory");
      return NULL;
    }
    for (int k = 0; k < n->n_in; k++) ins[k] = map[n->in[k]];
    L.sp = n->span;
    L.name = n->name;
    if (n->op == TD_IR_CONV) map[id] = lower_conv(&L, n, ins[0], ins[1]);
    else if ((map[id] = td_graph_add(L.dst, n->op, n->dtype, n->rank, n->shape, ins, n->n_in, &n->attr, n->span)) < 0)
      td_err_set(err, "out of memory");
    else L.dst->nodes[map[id]].name = n->name;
    if (map[id] < 0) return NULL;
  }
  for (int i = 0; i < g->n_outputs; i++)
    if (td_graph_add_output(L.dst, map[g->outputs[i]])) {
      td_err_set(err, "out of memory");
      return NULL;
    }
  return L.dst;
}

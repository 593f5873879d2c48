/* grad.c - reverse-mode automatic differentiation on the Graph IR (grad.h).
 *
 * The sweep: nodes are in topological order, so one backward pass over the
 * ids from y down to 0 visits every node after all of its uses.  A node
 * is *active* when it depends on some wrt node and y depends on it; only
 * active float nodes get an adjoint, so no node is made for a path that
 * cannot carry a gradient.  Each active node's rule (the table at the end,
 * one entry per op of ops.def) turns its adjoint into contributions to
 * its inputs' adjoints, which accumulate with ADD.
 *
 * Adjoints are kept *broadcastable*: the adjoint of a node of shape S is a
 * node whose shape broadcasts to S (right-aligned, each dim equal or 1).
 * The adjoint of sum(x, axis = 1, keepdims) stays [N, 1] when it flows
 * into an elementwise rule, which broadcasts it for free; a BROADCAST node
 * is made only where an op needs the exact shape (reshape, matmul, concat,
 * slice, gather, and the gradients handed back).  Where an input was
 * broadcast by an elementwise op, its contribution is summed over the
 * broadcast axes ("unbroadcast") before it accumulates.
 *
 * New nodes carry the span of the forward node whose rule made them, and
 * the name "grad(op)" of that node's op, so a NaN the interpreter finds in
 * the backward (--check-numerics) names the forward line and op that
 * produced it, and tdsl explain tells backward buffers from forward ones.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "lang/grad.h"
#include "runtime/mem.h"

typedef struct ad {
  td_graph *g;
  td_diags *d;
  td_span sp;          /* span of the forward node being differentiated */
  const char *hint;    /* "grad(sqrt)": the name of the nodes its rule makes */
  int *adj;            /* per forward node: its adjoint's id, or -1 */
  unsigned char *active;
  int oom;
} ad;

static const td_node *N(ad *A, int id) { return &A->g->nodes[id]; }

/* ---- building nodes (each typed by ops.def's contract) ---- */

static int add(ad *A, td_op op, td_dtype dt, int rank, const td_dim *shape, const int *in, int n_in,
               const td_attr *at) {
  if (A->oom) return -1;
  for (int k = 0; k < n_in; k++)
    if (in[k] < 0) return -1;
  int id = td_graph_add(A->g, op, dt, rank, shape, in, n_in, at, A->sp);
  if (id < 0) A->oom = 1;
  else A->g->nodes[id].name = A->hint;
  return id;
}

static int k_const(ad *A, td_dtype dt, double v) {
  td_attr at;
  memset(&at, 0, sizeof at);
  if (td_dtype_is_float(dt)) at.f = v;
  else at.i = (int64_t)v;
  return add(A, TD_IR_CONST, dt, 0, NULL, NULL, 0, &at);
}

/* Broadcast shape of a and b (both broadcast to it by construction). */
static int bshape(ad *A, int a, int b, td_dim *shape) {
  const td_node *x = N(A, a), *y = N(A, b);
  int r = x->rank > y->rank ? x->rank : y->rank;
  for (int i = 0; i < r; i++) {
    int ix = i - (r - x->rank), iy = i - (r - y->rank);
    td_dim dx = ix >= 0 ? x->shape[ix] : 1, dy = iy >= 0 ? y->shape[iy] : 1;
    shape[i] = dx == 1 ? dy : dx;
  }
  return r;
}

static int k_un(ad *A, td_op op, int x) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  return add(A, op, n->dtype, n->rank, s, &x, 1, NULL);
}

static int k_bin(ad *A, td_op op, int a, int b) {
  if (a < 0 || b < 0) return -1;
  td_dim s[TD_MAX_RANK];
  int r = bshape(A, a, b, s);
  int in[2] = {a, b};
  td_dtype dt = td_ops[op].kind == TD_K_COMPARE ? TD_BOOL : N(A, a)->dtype;
  return add(A, op, dt, r, s, in, 2, NULL);
}

/* a op c for a number c of a's dtype. */
static int k_binc(ad *A, td_op op, int a, double c) {
  if (a < 0) return -1;
  return k_bin(A, op, a, k_const(A, N(A, a)->dtype, c));
}

static int k_cast(ad *A, int x, td_dtype dt) {
  if (x < 0) return -1;
  if (N(A, x)->dtype == dt) return x;
  const td_node *n = N(A, x);
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  return add(A, TD_IR_CAST, dt, n->rank, s, &x, 1, NULL);
}

/* where(c, a, b) with a and b of one dtype. */
static int k_where(ad *A, int c, int a, int b) {
  if (c < 0 || a < 0 || b < 0) return -1;
  td_dim s1[TD_MAX_RANK], s[TD_MAX_RANK];
  int r1 = bshape(A, a, b, s1);
  const td_node *cn = N(A, c);
  int r = r1 > cn->rank ? r1 : cn->rank;
  for (int i = 0; i < r; i++) {
    int i1 = i - (r - r1), ic = i - (r - cn->rank);
    td_dim d1 = i1 >= 0 ? s1[i1] : 1, dc = ic >= 0 ? cn->shape[ic] : 1;
    s[i] = d1 == 1 ? dc : d1;
  }
  int in[3] = {c, a, b};
  return add(A, TD_IR_WHERE, N(A, a)->dtype, r, s, in, 3, NULL);
}

/* The mask (a cmp b) as 0/1 of dtype dt. */
static int k_mask(ad *A, td_op cmp, int a, int b, td_dtype dt) { return k_cast(A, k_bin(A, cmp, a, b), dt); }

static int k_reshape(ad *A, int x, int rank, const td_dim *shape) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  if (n->rank == rank && (!rank || !memcmp(n->shape, shape, (size_t)rank * sizeof *shape))) return x;
  return add(A, TD_IR_RESHAPE, n->dtype, rank, shape, &x, 1, NULL);
}

/* sum over the axes of mask, keeping them as size 1. */
static int k_sum(ad *A, int x, uint32_t mask) {
  if (x < 0) return -1;
  if (!mask) return x;
  const td_node *n = N(A, x);
  td_dim s[TD_MAX_RANK];
  for (int i = 0; i < n->rank; i++) s[i] = mask >> i & 1 ? 1 : n->shape[i];
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axes = mask;
  return add(A, TD_IR_SUM, n->dtype, n->rank, s, &x, 1, &at);
}

static int k_permute(ad *A, int x, const int *perm) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  td_dim s[TD_MAX_RANK];
  int ident = 1;
  for (int i = 0; i < n->rank; i++) {
    s[i] = n->shape[perm[i]];
    if (perm[i] != i) ident = 0;
  }
  if (ident) return x;
  td_attr at;
  memset(&at, 0, sizeof at);
  memcpy(at.perm, perm, (size_t)n->rank * sizeof *perm);
  return add(A, TD_IR_PERMUTE, n->dtype, n->rank, s, &x, 1, &at);
}

/* x (broadcastable to shape) at exactly that shape. */
static int k_broadcast(ad *A, int x, int rank, const td_dim *shape) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  if (n->rank == rank && (!rank || !memcmp(n->shape, shape, (size_t)rank * sizeof *shape))) return x;
  return add(A, TD_IR_BROADCAST, n->dtype, rank, shape, &x, 1, NULL);
}

static int k_zeros(ad *A, td_dtype dt, int rank, const td_dim *shape) {
  return k_broadcast(A, k_const(A, dt, 0), rank, shape);
}

/* Swaps the last two axes. */
static int k_mT(ad *A, int x) {
  if (x < 0) return -1;
  int perm[TD_MAX_RANK], r = N(A, x)->rank;
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return k_permute(A, x, perm);
}

static int k_matmul(ad *A, int a, int b) {
  if (a < 0 || b < 0) return -1;
  const td_node *x = N(A, a), *y = N(A, b);
  int r = x->rank > y->rank ? x->rank : y->rank;
  td_dim s[TD_MAX_RANK];
  for (int i = 0; i < r - 2; i++) {
    int ix = i - (r - x->rank), iy = i - (r - y->rank);
    td_dim dx = ix >= 0 ? x->shape[ix] : 1, dy = iy >= 0 ? y->shape[iy] : 1;
    s[i] = dx == 1 ? dy : dx;
  }
  s[r - 2] = x->shape[x->rank - 2];
  s[r - 1] = y->shape[y->rank - 1];
  int in[2] = {a, b};
  return add(A, TD_IR_MATMUL, x->dtype, r, s, in, 2, NULL);
}

/* The size d as a rank-0 tensor of dtype dt. */
static int k_size(ad *A, td_dim d, td_dtype dt) {
  if (TD_DIM_IS_CONST(d)) return k_const(A, dt, (double)d);
  td_attr at;
  memset(&at, 0, sizeof at);
  at.dim = d;
  return k_cast(A, add(A, TD_IR_DIM, TD_I64, 0, NULL, NULL, 0, &at), dt);
}

static int k_concat(ad *A, const int *xs, int n, int axis) {
  for (int k = 0; k < n; k++)
    if (xs[k] < 0) return -1;
  if (n == 1) return xs[0];
  const td_node *f = N(A, xs[0]);
  td_dim s[TD_MAX_RANK];
  memcpy(s, f->shape, sizeof s);
  td_dim tot = 0;
  for (int k = 0; k < n; k++) tot = td_dim_add(A->g, tot, N(A, xs[k])->shape[axis]);
  s[axis] = tot;
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = axis;
  return add(A, TD_IR_CONCAT, f->dtype, f->rank, s, xs, n, &at);
}

/* x[start : start + len] along axis (step 1). */
static int k_slice1(ad *A, int x, int axis, td_dim start, td_dim len) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  if (start == 0 && len == n->shape[axis]) return x;
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  s[axis] = len;
  td_attr at;
  memset(&at, 0, sizeof at);
  for (int i = 0; i < n->rank; i++) at.step[i] = 1;
  at.start[axis] = start;
  return add(A, TD_IR_SLICE, n->dtype, n->rank, s, &x, 1, &at);
}

/* ---- adjoints ---- */

/* The exact-shaped form of adjoint a for node `like` (or any shape). */
static int exact(ad *A, int a, int rank, const td_dim *shape) { return k_broadcast(A, a, rank, shape); }

/* Contribution c (broadcastable to the shape S = [rank, shape] of the
 * forward node it comes through) reduced to input x's shape: summed over
 * the axes where x was broadcast to S.  Returns a node broadcastable to
 * x's shape. */
static int unbroadcast(ad *A, int c, int x, int rank, const td_dim *shape) {
  if (c < 0) return -1;
  const td_node *cn = N(A, c), *xn = N(A, x);
  int cr = cn->rank;
  uint32_t mask = 0;
  int scale = -1;
  for (int i = 0; i < rank; i++) {
    int ix = i - (rank - xn->rank), ic = i - (rank - cr);
    td_dim dx = ix >= 0 ? xn->shape[ix] : 1, dc = ic >= 0 ? cn->shape[ic] : 1;
    if (dx != 1 || shape[i] == 1) continue;
    if (dc != 1) mask |= 1u << ic;              /* sum the axis out */
    else {                                      /* c was constant along it: times the size */
      int sz = k_size(A, shape[i], cn->dtype);
      scale = scale < 0 ? sz : k_bin(A, TD_IR_MUL, scale, sz);
    }
  }
  int r = k_sum(A, c, mask);
  if (scale >= 0) r = k_bin(A, TD_IR_MUL, r, scale);
  if (r < 0) return -1;
  /* drop the leading axes x does not have (each is 1 now) */
  const td_node *rn = N(A, r);
  if (rn->rank > xn->rank) {
    td_dim s[TD_MAX_RANK];
    int off = rn->rank - xn->rank;
    for (int i = 0; i < xn->rank; i++) s[i] = rn->shape[off + i];
    r = k_reshape(A, r, xn->rank, s);
  }
  return r;
}

/* Adds contribution c to input x's adjoint (c broadcastable to x). */
static void accum(ad *A, int x, int c) {
  if (c < 0) return;   /* a node could not be made: A->oom is set */
  if (!A->active[x] || !td_dtype_is_float(N(A, x)->dtype)) return;
  A->adj[x] = A->adj[x] < 0 ? c : k_bin(A, TD_IR_ADD, A->adj[x], c);
}

/* accum after unbroadcasting from the node's shape. */
static void accum_ew(ad *A, int id, int x, int c) {
  if (!A->active[x] || !td_dtype_is_float(N(A, x)->dtype)) return;
  td_dim s[TD_MAX_RANK];
  int r = N(A, id)->rank;
  memcpy(s, N(A, id)->shape, sizeof s);
  accum(A, x, unbroadcast(A, c, x, r, s));
}

/* ---- rules: fn(A, node, its adjoint g) ---- */

typedef void (*rule_fn)(ad *A, int id, int g);

#define IN(k) (N(A, id)->in[k])
#define Y id

static void r_neg(ad *A, int id, int g) { accum_ew(A, id, IN(0), k_un(A, TD_IR_NEG, g)); }
static void r_abs(ad *A, int id, int g) {
  int x = IN(0);
  td_dtype dt = N(A, x)->dtype;
  int zero = k_const(A, dt, 0);
  int sign = k_bin(A, TD_IR_SUB, k_mask(A, TD_IR_GT, x, zero, dt), k_mask(A, TD_IR_LT, x, zero, dt));
  accum_ew(A, id, x, k_bin(A, TD_IR_MUL, g, sign));
}
static void r_exp(ad *A, int id, int g) { accum_ew(A, id, IN(0), k_bin(A, TD_IR_MUL, g, Y)); }
static void r_log(ad *A, int id, int g) { accum_ew(A, id, IN(0), k_bin(A, TD_IR_DIV, g, IN(0))); }
static void r_sqrt(ad *A, int id, int g) {
  accum_ew(A, id, IN(0), k_bin(A, TD_IR_DIV, g, k_binc(A, TD_IR_MUL, Y, 2)));
}
static void r_rsqrt(ad *A, int id, int g) {   /* d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3 */
  int y3 = k_bin(A, TD_IR_MUL, k_bin(A, TD_IR_MUL, Y, Y), Y);
  accum_ew(A, id, IN(0), k_bin(A, TD_IR_MUL, g, k_binc(A, TD_IR_MUL, y3, -0.5)));
}
static void r_sin(ad *A, int id, int g) { accum_ew(A, id, IN(0), k_bin(A, TD_IR_MUL, g, k_un(A, TD_IR_COS, IN(0)))); }
static void r_cos(ad *A, int id, int g) {
  accum_ew(A, id, IN(0), k_un(A, TD_IR_NEG, k_bin(A, TD_IR_MUL, g, k_un(A, TD_IR_SIN, IN(0)))));
}
static void r_tanh(ad *A, int id, int g) {   /* 1 - y^2 */
  int d = k_bin(A, TD_IR_SUB, k_const(A, N(A, Y)->dtype, 1), k_bin(A, TD_IR_MUL, Y, Y));
  accum_ew(A, id, IN(0), k_bin(A, TD_IR_MUL, g, d));
}
static void r_sigmoid(ad *A, int id, int g) {   /* y (1 - y) */
  int d = k_bin(A, TD_IR_MUL, Y, k_bin(A, TD_IR_SUB, k_const(A, N(A, Y)->dtype, 1), Y));
  accum_ew(A, id, IN(0), k_bin(A, TD_IR_MUL, g, d));
}
/* 0 at x == 0, as PyTorch.  The mask reads the output (relu(x) > 0 exactly
 * when x > 0), so the backward keeps y alive, not x too, and relu stays
 * fused into its producer's kernel. */
static void r_relu(ad *A, int id, int g) {
  td_dtype dt = N(A, id)->dtype;
  accum_ew(A, id, IN(0), k_where(A, k_bin(A, TD_IR_GT, Y, k_const(A, dt, 0)), g, k_const(A, dt, 0)));
}
/* The standard normal density exp(-x^2 / 2) / sqrt(2 pi) at x. */
static int normal_pdf(ad *A, int x) {
  int e = k_un(A, TD_IR_EXP, k_binc(A, TD_IR_MUL, k_bin(A, TD_IR_MUL, x, x), -0.5));
  return k_binc(A, TD_IR_MUL, e, 0.39894228040143267794);
}
static void r_gelu(ad *A, int id, int g) {   /* Phi(x) + x phi(x) */
  int x = IN(0);
  int cdf = k_binc(A, TD_IR_MUL, k_binc(A, TD_IR_ADD, k_un(A, TD_IR_ERF, k_binc(A, TD_IR_MUL, x, 0.70710678118654752440)), 1),
                   0.5);
  int d = k_bin(A, TD_IR_ADD, cdf, k_bin(A, TD_IR_MUL, x, normal_pdf(A, x)));
  accum_ew(A, id, x, k_bin(A, TD_IR_MUL, g, d));
}
static void r_silu(ad *A, int id, int g) {   /* s (1 + x (1 - s)), s = sigmoid(x) */
  int x = IN(0);
  td_dtype dt = N(A, x)->dtype;
  int s = k_un(A, TD_IR_SIGMOID, x);
  int d = k_bin(A, TD_IR_MUL, s, k_binc(A, TD_IR_ADD, k_bin(A, TD_IR_MUL, x, k_bin(A, TD_IR_SUB, k_const(A, dt, 1), s)), 1));
  accum_ew(A, id, x, k_bin(A, TD_IR_MUL, g, d));
}
static void r_erf(ad *A, int id, int g) {   /* 2 / sqrt(pi) exp(-x^2) */
  int x = IN(0);
  int e = k_un(A, TD_IR_EXP, k_un(A, TD_IR_NEG, k_bin(A, TD_IR_MUL, x, x)));
  accum_ew(A, id, x, k_bin(A, TD_IR_MUL, g, k_binc(A, TD_IR_MUL, e, 1.12837916709551257390)));
}
static void r_log1p(ad *A, int id, int g) {
  accum_ew(A, id, IN(0), k_bin(A, TD_IR_DIV, g, k_binc(A, TD_IR_ADD, IN(0), 1)));
}
static void r_cast(ad *A, int id, int g) {   /* float to float: the adjoint cast back */
  int x = IN(0);
  if (td_dtype_is_float(N(A, x)->dtype) && td_dtype_is_float(N(A, id)->dtype))
    accum_ew(A, id, x, k_cast(A, g, N(A, x)->dtype));
}
static void r_add(ad *A, int id, int g) { accum_ew(A, id, IN(0), g); accum_ew(A, id, IN(1), g); }
static void r_sub(ad *A, int id, int g) { accum_ew(A, id, IN(0), g); accum_ew(A, id, IN(1), k_un(A, TD_IR_NEG, g)); }
static void r_mul(ad *A, int id, int g) {
  int a = IN(0), b = IN(1);
  if (A->active[a]) accum_ew(A, id, a, k_bin(A, TD_IR_MUL, g, b));
  if (A->active[b]) accum_ew(A, id, b, k_bin(A, TD_IR_MUL, g, a));
}
static void r_div(ad *A, int id, int g) {   /* d/db a/b = -y / b */
  int a = IN(0), b = IN(1);
  if (A->active[a]) accum_ew(A, id, a, k_bin(A, TD_IR_DIV, g, b));
  if (A->active[b]) accum_ew(A, id, b, k_un(A, TD_IR_NEG, k_bin(A, TD_IR_DIV, k_bin(A, TD_IR_MUL, g, Y), b)));
}
static void r_mod(ad *A, int id, int g) {   /* a - b floor(a / b) */
  int a = IN(0), b = IN(1);
  accum_ew(A, id, a, g);
  if (A->active[b])
    accum_ew(A, id, b, k_un(A, TD_IR_NEG, k_bin(A, TD_IR_MUL, g, k_un(A, TD_IR_FLOOR, k_bin(A, TD_IR_DIV, a, b)))));
}
static void r_pow(ad *A, int id, int g) {
  int a = IN(0), b = IN(1);
  td_dtype dt = N(A, id)->dtype;
  int zero = k_const(A, dt, 0);
  if (A->active[a]) {   /* b a^(b-1), and 0 where b == 0 (not 0 * inf at a == 0) */
    int d = k_bin(A, TD_IR_MUL, b, k_bin(A, TD_IR_POW, a, k_binc(A, TD_IR_SUB, b, 1)));
    d = k_where(A, k_bin(A, TD_IR_EQ, b, zero), zero, d);
    accum_ew(A, id, a, k_bin(A, TD_IR_MUL, g, d));
  }
  if (A->active[b]) {   /* y log(a), and 0 where a == 0 (as PyTorch) */
    int d = k_bin(A, TD_IR_MUL, Y, k_un(A, TD_IR_LOG, a));
    d = k_where(A, k_bin(A, TD_IR_EQ, a, zero), zero, d);
    accum_ew(A, id, b, k_bin(A, TD_IR_MUL, g, d));
  }
}
/* maximum/minimum: the winner takes the gradient, ties split it evenly. */
static void minmax(ad *A, int id, int g, td_op win) {
  int a = IN(0), b = IN(1);
  td_dtype dt = N(A, id)->dtype;
  int wa = k_bin(A, TD_IR_ADD, k_mask(A, win, a, b, dt), k_binc(A, TD_IR_MUL, k_mask(A, TD_IR_EQ, a, b, dt), 0.5));
  if (A->active[a]) accum_ew(A, id, a, k_bin(A, TD_IR_MUL, g, wa));
  if (A->active[b]) accum_ew(A, id, b, k_bin(A, TD_IR_MUL, g, k_bin(A, TD_IR_SUB, k_const(A, dt, 1), wa)));
}
static void r_max(ad *A, int id, int g) { minmax(A, id, g, TD_IR_GT); }
static void r_min(ad *A, int id, int g) { minmax(A, id, g, TD_IR_LT); }
static void r_where(ad *A, int id, int g) {
  int c = IN(0), a = IN(1), b = IN(2);
  int zero = k_const(A, N(A, id)->dtype, 0);
  if (A->active[a]) accum_ew(A, id, a, k_where(A, c, g, zero));
  if (A->active[b]) accum_ew(A, id, b, k_where(A, c, zero, g));
}
/* Reductions keep their axes, so the adjoint (of the output's shape)
 * broadcasts back over the input as it is. */
static void r_sum(ad *A, int id, int g) { accum(A, IN(0), g); }
/* prod: the product of the other elements, as torch.prod's backward: y / x
 * where x != 0; where x is the only zero of its reduction, the product of
 * the rest; 0 where the reduction has two zeros or more.  (cumprod, a
 * masked prod, gets its gradient at zeros from this.) */
static void r_prod(ad *A, int id, int g) {
  int x = IN(0);
  const td_node *n = N(A, id);
  td_dtype dt = n->dtype;
  int zero = k_const(A, dt, 0);
  int isz = k_bin(A, TD_IR_EQ, x, zero);
  int nz = k_sum(A, k_cast(A, isz, dt), n->attr.axes);
  int rest = -1;
  if (isz >= 0) {
    td_attr at;
    memset(&at, 0, sizeof at);
    at.axes = n->attr.axes;
    td_dim s[TD_MAX_RANK];
    memcpy(s, n->shape, sizeof s);
    int nx = k_where(A, isz, k_const(A, dt, 1), x);
    rest = nx < 0 ? -1 : add(A, TD_IR_PROD, dt, n->rank, s, &nx, 1, &at);
  }
  int at_zero = k_where(A, k_bin(A, TD_IR_EQ, nz, k_const(A, dt, 1)), rest, zero);
  /* y / x away from zeros; the zeros divide by 1 instead, so that no
   * discarded value is an Inf or NaN that --check-numerics would report */
  int d = k_where(A, isz, at_zero, k_bin(A, TD_IR_DIV, Y, k_where(A, isz, k_const(A, dt, 1), x)));
  accum(A, x, k_bin(A, TD_IR_MUL, g, d));
}
static void r_rmaxmin(ad *A, int id, int g) {   /* split among the elements equal to the result */
  int x = IN(0);
  td_dtype dt = N(A, x)->dtype;
  int m = k_mask(A, TD_IR_EQ, x, Y, dt);
  int cnt = k_sum(A, m, N(A, id)->attr.axes);
  accum(A, x, k_bin(A, TD_IR_MUL, m, k_bin(A, TD_IR_DIV, g, cnt)));
}
/* x when node p is a permute that swaps the last two axes of x, else -1. */
static int transposed_of(ad *A, int p) {
  const td_node *n = N(A, p);
  if (n->op != TD_IR_PERMUTE) return -1;
  for (int i = 0; i < n->rank; i++)
    if (n->attr.perm[i] != (i < n->rank - 2 ? i : 2 * n->rank - 3 - i)) return -1;
  return n->in[0];
}

/* Adds the matmul contribution c (of operand op's shape after unbroadcasting,
 * for op = `which` of node id) to op's adjoint.  When op is x^T (the
 * `weight.T` of every Linear) and no batch axis was broadcast, c^T goes to
 * x directly, computed as the transposed product instead (l @ r)^T =
 * r^T @ l^T: strided views of the operands, so no transpose is copied. */
static void matmul_part(ad *A, int id, int op, int l, int r) {
  int x = transposed_of(A, op);
  const td_node *n = N(A, id), *on = N(A, op);
  int same_batch = on->rank == n->rank;
  for (int i = 0; same_batch && i < n->rank - 2; i++) same_batch = on->shape[i] == n->shape[i];
  if (x >= 0 && same_batch && A->active[x] && td_dtype_is_float(N(A, x)->dtype)) {
    accum(A, x, k_matmul(A, k_mT(A, r), k_mT(A, l)));
    return;
  }
  int c = k_matmul(A, l, r);
  if (c < 0) return;
  td_dim cs[TD_MAX_RANK];
  memcpy(cs, N(A, c)->shape, sizeof cs);
  accum(A, op, unbroadcast(A, c, op, N(A, c)->rank, cs));
}

static void r_matmul(ad *A, int id, int g) {
  int a = IN(0), b = IN(1);
  const td_node *n = N(A, id);
  td_dim s[TD_MAX_RANK];
  int r = n->rank;
  memcpy(s, n->shape, sizeof s);
  int ge = exact(A, g, r, s);
  if (A->active[a]) matmul_part(A, id, a, ge, k_mT(A, b));   /* g @ b^T */
  if (A->active[b]) matmul_part(A, id, b, k_mT(A, a), ge);   /* a^T @ g */
}
static void r_reshape(ad *A, int id, int g) {
  int x = IN(0);
  td_dim s[TD_MAX_RANK], xs[TD_MAX_RANK];
  memcpy(s, N(A, id)->shape, sizeof s);
  memcpy(xs, N(A, x)->shape, sizeof xs);
  accum(A, x, k_reshape(A, exact(A, g, N(A, id)->rank, s), N(A, x)->rank, xs));
}
static void r_permute(ad *A, int id, int g) {
  int x = IN(0), r = N(A, id)->rank, inv[TD_MAX_RANK];
  for (int i = 0; i < r; i++) inv[N(A, id)->attr.perm[i]] = i;
  /* a broadcastable adjoint of lower rank gets its leading 1s first */
  if (g >= 0 && N(A, g)->rank < r) {
    td_dim s[TD_MAX_RANK];
    int off = r - N(A, g)->rank;
    for (int i = 0; i < r; i++) s[i] = i < off ? 1 : N(A, g)->shape[i - off];
    g = k_reshape(A, g, r, s);
  }
  accum(A, x, k_permute(A, g, inv));
}
static void r_broadcast(ad *A, int id, int g) { accum_ew(A, id, IN(0), g); }
static void r_concat(ad *A, int id, int g) {
  const td_node *n = N(A, id);
  int axis = n->attr.axis, r = n->rank, n_in = n->n_in;
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  int ge = exact(A, g, r, s);
  td_dim off = 0;
  for (int k = 0; k < n_in; k++) {
    int x = N(A, id)->in[k];
    td_dim len = N(A, x)->shape[axis];
    if (A->active[x]) accum(A, x, k_slice1(A, ge, axis, off, len));
    off = td_dim_add(A->g, off, len);
  }
}
/* The adjoint of a slice: g placed at the sliced positions of a zero
 * tensor of the input's shape, one axis at a time.  Along an axis with
 * step s (out[i] = in[start + s i]): a negative step is first reversed to
 * a positive one; a step above 1 interleaves g with s - 1 zeros (a concat
 * along a new axis, then a reshape), cut after its last element; then
 * zeros pad it before and after. */
static void r_slice(ad *A, int id, int g) {
  int x = IN(0);
  const td_node *n = N(A, id);
  int r = n->rank;
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  td_attr at = n->attr;
  int cur = exact(A, g, r, s);
  td_dtype dt = n->dtype;
  int64_t bad_step = 0;
  for (int k = 0; k < r && cur >= 0; k++) {
    td_dim in_d = N(A, x)->shape[k], out_d = s[k], start = at.start[k];
    int64_t step = at.step[k];
    if (step == 1 && start == 0 && out_d == in_d) continue;
    if (out_d == 0) { cur = -2; break; }   /* nothing selected: the adjoint is 0 */
    td_dim first = start;                  /* the input index of the first element after reversal */
    if (step < 0) {
      /* reverse along k: element i is in[start + step (out - 1 - i)] */
      td_attr rv;
      memset(&rv, 0, sizeof rv);
      for (int i = 0; i < r; i++) rv.step[i] = 1;
      rv.step[k] = -1;
      rv.start[k] = td_dim_sub(A->g, out_d, 1);
      td_dim cs[TD_MAX_RANK];
      memcpy(cs, N(A, cur)->shape, sizeof cs);
      cur = add(A, TD_IR_SLICE, dt, r, cs, &cur, 1, &rv);
      first = td_dim_add(A->g, start, td_dim_mul(A->g, td_dim_const(A->g, step), td_dim_sub(A->g, out_d, 1)));
      step = step == INT64_MIN ? INT64_MAX : -step;   /* |INT64_MIN| cannot select two elements anyway */
    }
    td_dim span = out_d;                   /* elements from first to the last selected, inclusive */
    if (step > 1) {
      td_dim cs[TD_MAX_RANK];
      int rr = N(A, cur)->rank;
      if (rr + 1 > TD_MAX_RANK) { cur = -4; bad_step = at.step[k]; break; }
      /* [.., out, ..] -> [.., out, 1, ..] ++ zeros [.., out, step - 1, ..] -> [.., out * step, ..] */
      for (int i = 0, j = 0; i <= rr; i++) cs[i] = i == k + 1 ? 1 : N(A, cur)->shape[j++];
      int u = k_reshape(A, cur, rr + 1, cs);
      cs[k + 1] = td_dim_const(A->g, step - 1);
      int z = k_zeros(A, dt, rr + 1, cs);
      int parts[2] = {u, z};
      int cat = k_concat(A, parts, 2, k + 1);
      td_dim ms[TD_MAX_RANK];
      for (int i = 0, j = 0; i <= rr; i++) {
        if (i == k + 1) continue;
        ms[j++] = i == k ? td_dim_mul(A->g, out_d, td_dim_const(A->g, step)) : cs[i];
      }
      cur = k_reshape(A, cat, rr, ms);
      span = td_dim_add(A->g, td_dim_mul(A->g, td_dim_const(A->g, step), td_dim_sub(A->g, out_d, 1)), 1);
      cur = k_slice1(A, cur, k, 0, span);
    }
    td_dim after = td_dim_sub(A->g, td_dim_sub(A->g, in_d, first), span);
    if (TD_DIM_IS_BAD(first) || TD_DIM_IS_BAD(after) || TD_DIM_IS_BAD(span)) { cur = -3; break; }
    int parts[3], np = 0;
    td_dim cs[TD_MAX_RANK];
    memcpy(cs, N(A, cur)->shape, sizeof cs);
    if (first != 0) { cs[k] = first; parts[np++] = k_zeros(A, dt, r, cs); }
    parts[np++] = cur;
    if (after != 0) { cs[k] = after; parts[np++] = k_zeros(A, dt, r, cs); }
    cur = k_concat(A, parts, np, k);
  }
  if (cur == -4) {   /* the interleaving needs one more axis than a tensor may have */
    td_diag *dg = td_error(A->d, A->sp, "no gradient for slice with step %lld on a tensor of %d dimensions",
                           (long long)bad_step, TD_MAX_RANK);
    td_diag_help(A->d, dg, "its adjoint interleaves zeros along a new axis; slice a tensor of fewer "
                 "dimensions (reshape first) or use a step of 1 or -1");
    A->oom = 1;
    return;
  }
  if (cur == -3) {
    td_error(A->d, A->sp, "no gradient for this slice: its size arithmetic overflows");
    A->oom = 1;
    return;
  }
  if (cur == -2) return;
  accum(A, x, cur);
}
/* take(x, idx, axis): the adjoint of x is a scatter-add of g at the
 * indices, written as one_hot(idx)^T @ g over x's axis (repeated indices
 * accumulate): [D, P] @ [A, P, B] -> [A, D, B], reshaped to x's shape. */
static void r_gather(ad *A, int id, int g) {
  int x = IN(0), ix = IN(1);
  if (!A->active[x]) return;
  const td_node *n = N(A, id);
  td_dim s[TD_MAX_RANK], xs[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  memcpy(xs, N(A, x)->shape, sizeof xs);
  int xr = N(A, x)->rank, ir = N(A, ix)->rank, axis = n->attr.axis;
  td_dtype dt = n->dtype, it = N(A, ix)->dtype;
  td_dim D = xs[axis], P = 1, Aa = 1, Bb = 1;
  for (int i = 0; i < ir; i++) P = td_dim_mul(A->g, P, N(A, ix)->shape[i]);
  for (int i = 0; i < axis; i++) Aa = td_dim_mul(A->g, Aa, xs[i]);
  for (int i = axis + 1; i < xr; i++) Bb = td_dim_mul(A->g, Bb, xs[i]);
  if (TD_DIM_IS_BAD(P) || TD_DIM_IS_BAD(Aa) || TD_DIM_IS_BAD(Bb)) {
    td_error(A->d, A->sp, "no gradient for this take: its size arithmetic overflows");
    A->oom = 1;
    return;
  }
  /* indices counted from the end (-D <= i < 0) made non-negative */
  int flat = k_reshape(A, ix, 1, &P);
  int zero = k_const(A, it, 0);
  int idx = k_where(A, k_bin(A, TD_IR_LT, flat, zero), k_bin(A, TD_IR_ADD, flat, k_size(A, D, it)), flat);
  td_attr ar;
  memset(&ar, 0, sizeof ar);
  ar.i2 = 1;
  ar.f2 = 1;
  int rng = add(A, TD_IR_ARANGE, it, 1, &D, NULL, 0, &ar);
  td_dim col[2] = {D, 1};
  int oh = k_mask(A, TD_IR_EQ, k_reshape(A, rng, 2, col), idx, dt);   /* [D, P] */
  td_dim gs[3] = {Aa, P, Bb};
  int g3 = k_reshape(A, exact(A, g, n->rank, s), 3, gs);
  accum(A, x, k_reshape(A, k_matmul(A, oh, g3), xr, xs));
}

/* ---- scan ----
 *
 * The adjoint of a SCAN is a second SCAN that runs the steps backwards.  Its
 * carries are the adjoints of the float carries and an accumulator per
 * float capture; its sequences are each step's input carries, the
 * forward's sequences and the adjoints of the float per-step values; its
 * body is the forward body followed by that body's own reverse sweep (this
 * file, called on the body: so a scan in a body works, and grad of grad).
 * The input carries of every step come from a copy of the forward SCAN
 * that also returns them stacked (the forward is run twice: the cost of
 * keeping the carries without changing the SCAN the program already has);
 * the memory is T times the carries, as JAX's scan stores them. */

/* Appends body src to dst: src's input k reads in_map[k] (a node of dst);
 * map[] gets each src node's id in dst.  -1 when memory runs out. */
static int inline_body(td_graph *dst, const td_graph *src, const int *in_map, int *map) {
  int cap = 8, *in = td_malloc((size_t)cap * sizeof *in);
  if (!in) return -1;
  for (int i = 0; i < src->n_nodes; i++) {
    const td_node *x = &src->nodes[i];
    if (x->op == TD_IR_INPUT) {
      map[i] = in_map[x->attr.i];
      continue;
    }
    if (x->n_in > cap) {
      int *ni = td_realloc(in, (size_t)x->n_in * sizeof *in);
      if (!ni) { td_free(in); return -1; }
      in = ni;
      cap = x->n_in;
    }
    for (int j = 0; j < x->n_in; j++) in[j] = map[x->in[j]];
    if ((map[i] = td_graph_add(dst, x->op, x->dtype, x->rank, x->shape, in, x->n_in, &x->attr, x->span)) < 0) {
      td_free(in);
      return -1;
    }
    dst->nodes[map[i]].name = x->name;
  }
  td_free(in);
  return 0;
}

/* An INPUT of body b at the next slot, of x's type. */
static int body_input(td_graph *b, const td_node *x, int rank_drop) {
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i = b->n_inputs;
  return td_graph_add(b, TD_IR_INPUT, x->dtype, x->rank - rank_drop, x->shape + rank_drop, NULL, 0, &at, x->span);
}

/* A SCAN of body b in A's graph with its SCAN_OUTs (each output's type from
 * b); the first one's id, or -1. */
static int emit_scan(ad *A, const td_attr *like, const td_graph *b, int n_carry, int n_xs, int reverse,
                     const int *in, int n_in) {
  td_attr at = *like;
  at.body = b;
  at.n_carry = n_carry;
  at.n_xs = n_xs;
  at.reverse = reverse;
  int s = add(A, TD_IR_SCAN, TD_BOOL, 0, NULL, in, n_in, &at);
  if (s < 0) return -1;
  for (int k = 0; k < b->n_outputs; k++) {
    const td_node *o = &b->nodes[b->outputs[k]];
    td_dim shp[TD_MAX_RANK];
    int rank = o->rank;
    if (k < n_carry) {
      memcpy(shp, o->shape, sizeof shp);
    } else {
      shp[0] = like->dim;
      memcpy(shp + 1, o->shape, (size_t)rank++ * sizeof shp[0]);
    }
    td_attr oa;
    memset(&oa, 0, sizeof oa);
    oa.i = k;
    if (add(A, TD_IR_SCAN_OUT, o->dtype, rank, shp, &s, 1, &oa) < 0) return -1;
  }
  return s + 1;
}

/* ---- checkpointed scans (scan(..., checkpoint = k)) ----
 *
 * The same gradient, with the carries kept only at the start of every
 * segment of K steps.  The steps, in the order the forward runs them, are
 * a head of R = T mod K steps, then Q = T div K segments of K steps (for
 * reverse = true the head is the last R indices, the segments the first
 * Q*K, both run from their end).  The rewrite, in the graph:
 *   - the head's forward (R steps, carries only) gives the carry the
 *     segments start from;
 *   - a scan over the Q segments, whose step runs the K steps of one
 *     segment (carries only) and stacks its input carry: the checkpoints,
 *     Q times the carries;
 *   - the backward: a scan over the segments, last run first, whose step
 *     runs its segment's K steps again from its checkpoint (stacking that
 *     segment's K input carries) and then the backward body over them;
 *     then the head the same way (R < K steps);
 *   - the step index, when the body reads it, becomes a sequence (arange
 *     of T) sliced like the others.
 * Memory: Q + K carries instead of T (K about sqrt(T) makes it 2 sqrt(T));
 * time: the forward a third time.  Every op is an ordinary op, so every
 * backend runs it.  The backward body is the plain path's (bwd_body). */

typedef struct scan_ad {
  const td_graph *f;
  int nc, nx, ni, ncap, ny;
  int *fc, *fy, *fcap;
  int n_fc, n_fy, n_fcap;
} scan_ad;

/* An INPUT of body b at the next slot, of x's type with a leading axis of
 * size lead. */
static int body_input_lead(td_graph *b, const td_node *x, td_dim lead) {
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i = b->n_inputs;
  td_dim s[TD_MAX_RANK + 1];
  s[0] = lead;
  memcpy(s + 1, x->shape, (size_t)x->rank * sizeof *s);
  return td_graph_add(b, TD_IR_INPUT, x->dtype, x->rank + 1, s, NULL, 0, &at, x->span);
}

/* f's input k and output k */
static const td_node *f_in(const scan_ad *s, int k) { return &s->f->nodes[s->f->inputs[k]]; }
static const td_node *f_out(const scan_ad *s, int k) { return &s->f->nodes[s->f->outputs[k]]; }

/* A copy of f (inputs in f's order and types) returning its carries and,
 * with stack_in, its input carries after them. */
static td_graph *carry_body(ad *A, const scan_ad *s, int stack_in) {
  const td_graph *f = s->f;
  td_graph *b = td_graph_new(A->g->arena, f->name);
  int *in_map = td_malloc((size_t)(f->n_inputs + 1) * sizeof *in_map);
  int *map = td_malloc((size_t)(f->n_nodes + 1) * sizeof *map);
  int ok = b && in_map && map;
  if (ok) b->parent = td_graph_root(A->g);
  for (int k = 0; ok && k < f->n_inputs; k++) ok = (in_map[k] = body_input(b, f_in(s, k), 0)) >= 0;
  if (ok) ok = inline_body(b, f, in_map, map) == 0;
  for (int k = 0; ok && k < s->nc; k++) ok = td_graph_add_output(b, map[f->outputs[k]]) == 0;
  for (int k = 0; ok && stack_in && k < s->nc; k++) ok = td_graph_add_output(b, in_map[k]) == 0;
  td_free(in_map);
  td_free(map);
  return ok ? b : NULL;
}

/* Does body f (or a scan in it) draw random numbers? */
static const td_node *draws(const td_graph *f) {
  for (int i = 0; i < f->n_nodes; i++) {
    const td_node *n = &f->nodes[i];
    if (n->op == TD_IR_RAND || n->op == TD_IR_RANDN) return n;
    if (n->op == TD_IR_SCAN) {
      const td_node *r = draws(n->attr.body);
      if (r) return r;
    }
  }
  return NULL;
}

static td_graph *bwd_body(ad *A, const scan_ad *s);

/* The scans of one checkpointed gradient (above).  0, or -1 (A->oom set,
 * or an error reported). */
static int r_scan_ckpt(ad *A, int id, const scan_ad *s, int64_t K, td_dim Q, td_dim R) {
  const td_node *S = N(A, id);
  const td_attr sa = S->attr;
  td_graph *g = A->g;
  int nc = s->nc, nx = s->nx, ni = s->ni, ncap = s->ncap, nxx = nx + ni, n_fc = s->n_fc, n_fcap = s->n_fcap,
      n_fy = s->n_fy;
  td_dim T = sa.dim, QK = td_dim_mul(g, Q, K);
  int has_head = R != 0;
  td_graph *fcar = carry_body(A, s, 0), *b2c = carry_body(A, s, 1), *bb = bwd_body(A, s);
  td_graph *cb = td_graph_new(g->arena, s->f->name), *sg = td_graph_new(g->arena, s->f->name);
  size_t nall = (size_t)(S->n_in + s->f->n_outputs + 8);
  int *buf = td_malloc(nall * 16 * sizeof *buf);
  if (!fcar || !b2c || !bb || !cb || !sg || !buf) goto oom;
  cb->parent = sg->parent = td_graph_root(g);
  int *xsa = buf, *xH = xsa + nall, *xG = xH + nall, *c0 = xG + nall, *cR = c0 + nall, *dyH = cR + nall,
      *dyG = dyH + nall, *dc = dyG + nall, *dcap = dc + nall, *in = dcap + nall, *dxG = in + 4 * nall,
      *dxH = dxG + nall;
  td_attr la = sa;
  la.index = 0;
  la.i2 = 0;
  td_attr lK = la, lQ = la, lR = la;
  lK.dim = K;
  lQ.dim = Q;
  lR.dim = R;
  for (int j = 0; j < nx; j++) xsa[j] = S->in[nc + j];
  if (ni) {
    td_attr ar;
    memset(&ar, 0, sizeof ar);
    ar.i2 = 1;
    ar.f2 = 1;
    xsa[nx] = add(A, TD_IR_ARANGE, TD_I64, 1, &T, NULL, 0, &ar);
  }
  td_dim h0 = sa.reverse ? td_dim_sub(g, T, R) : 0, g0 = sa.reverse ? 0 : R;
  for (int j = 0; j < nxx; j++) {
    const td_node *x = N(A, xsa[j]);
    td_dim sh[TD_MAX_RANK];
    if (x->rank + 1 > TD_MAX_RANK) {
      td_error(A->d, A->sp, "checkpoint: a sequence of rank %d has no room for the segments' axis (at most %d "
               "axes)", x->rank, TD_MAX_RANK - 1);
      goto oom;
    }
    sh[0] = Q;
    sh[1] = K;
    memcpy(sh + 2, x->shape + 1, (size_t)(x->rank - 1) * sizeof *sh);
    xH[j] = has_head ? k_slice1(A, xsa[j], 0, h0, R) : -1;
    xG[j] = k_reshape(A, k_slice1(A, xsa[j], 0, g0, QK), x->rank + 1, sh);
  }
  for (int k = 0; k < nc; k++) c0[k] = cR[k] = S->in[k];
  /* the head's forward: the carry the segments start from */
  if (has_head) {
    int n = 0;
    for (int k = 0; k < nc; k++) in[n++] = c0[k];
    for (int j = 0; j < nxx; j++) in[n++] = xH[j];
    for (int k = 0; k < ncap; k++) in[n++] = S->in[nc + nx + k];
    int h = emit_scan(A, &lR, fcar, nc, nxx, sa.reverse, in, n);
    if (h < 0) goto oom;
    for (int k = 0; k < nc; k++) cR[k] = h + k;
  }
  /* the checkpoints: a scan over the segments, each step the segment's K
   * steps, stacking the carry it starts from */
  {
    ad B = {.g = cb, .d = A->d, .sp = A->sp, .hint = A->hint};
    int n = 0;
    for (int k = 0; k < nc; k++) in[n++] = body_input(cb, f_in(s, k), 0);
    for (int j = 0; j < nxx; j++) in[n++] = body_input_lead(cb, f_in(s, nc + j), K);
    for (int k = 0; k < ncap; k++) in[n++] = body_input(cb, f_in(s, nc + nx + ni + k), 0);
    int o = emit_scan(&B, &lK, fcar, nc, nxx, sa.reverse, in, n);
    if (o < 0 || B.oom) goto oom;
    for (int k = 0; k < nc; k++)
      if (td_graph_add_output(cb, o + k)) goto oom;
    for (int k = 0; k < nc; k++)
      if (td_graph_add_output(cb, in[k])) goto oom;
  }
  int n = 0;
  for (int k = 0; k < nc; k++) in[n++] = cR[k];
  for (int j = 0; j < nxx; j++) in[n++] = xG[j];
  for (int k = 0; k < ncap; k++) in[n++] = S->in[nc + nx + k];
  int ck = emit_scan(A, &lQ, cb, nc, nxx, sa.reverse, in, n);
  if (ck < 0) goto oom;
  /* the adjoints coming in: final carries, per-step values */
  for (int k = 0; k < n_fc; k++) {
    const td_node *c = N(A, S->in[s->fc[k]]);
    td_dim sh[TD_MAX_RANK];
    memcpy(sh, c->shape, sizeof sh);
    int a = A->adj[id + 1 + s->fc[k]];
    dc[k] = a >= 0 ? exact(A, a, c->rank, sh) : k_zeros(A, c->dtype, c->rank, sh);
  }
  for (int k = 0; k < n_fcap; k++) {
    const td_node *c = N(A, S->in[nc + nx + s->fcap[k]]);
    td_dim sh[TD_MAX_RANK];
    memcpy(sh, c->shape, sizeof sh);
    dcap[k] = k_zeros(A, c->dtype, c->rank, sh);
  }
  for (int k = 0; k < n_fy; k++) {
    const td_node *y = N(A, id + 1 + nc + s->fy[k]);
    td_dim sh[TD_MAX_RANK + 1];
    if (y->rank + 1 > TD_MAX_RANK) {
      td_error(A->d, A->sp, "checkpoint: a per-step value stacked to rank %d has no room for the segments' axis "
               "(at most %d axes)", y->rank, TD_MAX_RANK - 1);
      goto oom;
    }
    memcpy(sh, y->shape, TD_MAX_RANK * sizeof *sh);
    int a = A->adj[id + 1 + nc + s->fy[k]];
    int dy = a >= 0 ? exact(A, a, y->rank, sh) : k_zeros(A, y->dtype, y->rank, sh);
    dyH[k] = has_head ? k_slice1(A, dy, 0, h0, R) : -1;
    sh[0] = Q;
    sh[1] = K;
    memcpy(sh + 2, y->shape + 1, (size_t)(y->rank - 1) * sizeof *sh);
    dyG[k] = k_reshape(A, k_slice1(A, dy, 0, g0, QK), y->rank + 1, sh);
  }
  /* the segments' backward: each step runs its segment again from its
   * checkpoint, then the backward body over it */
  {
    ad B = {.g = sg, .d = A->d, .sp = A->sp, .hint = A->hint};
    int *p = in;
    int *bdc = p, *bdcap = bdc + n_fc, *bck = bdcap + n_fcap, *bxs = bck + nc, *bdy = bxs + nxx, *bcap = bdy + n_fy;
    for (int k = 0; k < n_fc; k++) bdc[k] = body_input(sg, f_in(s, s->fc[k]), 0);
    for (int k = 0; k < n_fcap; k++) bdcap[k] = body_input(sg, f_in(s, nc + nx + ni + s->fcap[k]), 0);
    for (int k = 0; k < nc; k++) bck[k] = body_input(sg, f_in(s, k), 0);
    for (int j = 0; j < nxx; j++) bxs[j] = body_input_lead(sg, f_in(s, nc + j), K);
    for (int k = 0; k < n_fy; k++) bdy[k] = body_input_lead(sg, f_out(s, nc + s->fy[k]), K);
    for (int k = 0; k < ncap; k++) bcap[k] = body_input(sg, f_in(s, nc + nx + ni + k), 0);
    int *v = bcap + ncap, m = 0;
    for (int k = 0; k < nc; k++) v[m++] = bck[k];
    for (int j = 0; j < nxx; j++) v[m++] = bxs[j];
    for (int k = 0; k < ncap; k++) v[m++] = bcap[k];
    int st = emit_scan(&B, &lK, b2c, nc, nxx, sa.reverse, v, m);
    if (st < 0 || B.oom) goto oom;
    m = 0;
    for (int k = 0; k < n_fc; k++) v[m++] = bdc[k];
    for (int k = 0; k < n_fcap; k++) v[m++] = bdcap[k];
    for (int k = 0; k < nc; k++) v[m++] = st + nc + k;
    for (int j = 0; j < nx; j++) v[m++] = bxs[j];
    for (int k = 0; k < n_fy; k++) v[m++] = bdy[k];
    if (ni) v[m++] = bxs[nx];
    for (int k = 0; k < ncap; k++) v[m++] = bcap[k];
    int ob = emit_scan(&B, &lK, bb, n_fc + n_fcap, nc + nx + n_fy + ni, !sa.reverse, v, m);
    if (ob < 0 || B.oom) goto oom;
    int nfx = 0;
    for (int j = 0; j < nx; j++) nfx += td_dtype_is_float(f_in(s, nc + j)->dtype);
    for (int k = 0; k < n_fc + n_fcap + nfx; k++)
      if (td_graph_add_output(sg, ob + k)) goto oom;
  }
  n = 0;
  for (int k = 0; k < n_fc; k++) in[n++] = dc[k];
  for (int k = 0; k < n_fcap; k++) in[n++] = dcap[k];
  for (int k = 0; k < nc; k++) in[n++] = ck + nc + k;
  for (int j = 0; j < nxx; j++) in[n++] = xG[j];
  for (int k = 0; k < n_fy; k++) in[n++] = dyG[k];
  for (int k = 0; k < ncap; k++) in[n++] = S->in[nc + nx + k];
  int sb = emit_scan(A, &lQ, sg, n_fc + n_fcap, nc + nxx + n_fy, !sa.reverse, in, n);
  if (sb < 0) goto oom;
  int nfx = 0;
  for (int j = 0; j < nx; j++)
    if (td_dtype_is_float(N(A, xsa[j])->dtype)) {
      const td_node *x = N(A, xsa[j]);
      td_dim sh[TD_MAX_RANK];
      memcpy(sh, x->shape, sizeof sh);
      sh[0] = QK;
      dxG[nfx] = k_reshape(A, sb + n_fc + n_fcap + nfx, x->rank, sh);
      dxH[nfx] = -1;
      nfx++;
    }
  for (int k = 0; k < n_fc; k++) dc[k] = sb + k;
  for (int k = 0; k < n_fcap; k++) dcap[k] = sb + n_fc + k;
  /* the head's backward: its R steps again, then the backward body */
  if (has_head) {
    n = 0;
    for (int k = 0; k < nc; k++) in[n++] = c0[k];
    for (int j = 0; j < nxx; j++) in[n++] = xH[j];
    for (int k = 0; k < ncap; k++) in[n++] = S->in[nc + nx + k];
    int st = emit_scan(A, &lR, b2c, nc, nxx, sa.reverse, in, n);
    if (st < 0) goto oom;
    n = 0;
    for (int k = 0; k < n_fc; k++) in[n++] = dc[k];
    for (int k = 0; k < n_fcap; k++) in[n++] = dcap[k];
    for (int k = 0; k < nc; k++) in[n++] = st + nc + k;
    for (int j = 0; j < nx; j++) in[n++] = xH[j];
    for (int k = 0; k < n_fy; k++) in[n++] = dyH[k];
    if (ni) in[n++] = xH[nx];
    for (int k = 0; k < ncap; k++) in[n++] = S->in[nc + nx + k];
    int hb = emit_scan(A, &lR, bb, n_fc + n_fcap, nc + nx + n_fy + ni, !sa.reverse, in, n);
    if (hb < 0) goto oom;
    for (int k = 0; k < n_fc; k++) dc[k] = hb + k;
    for (int k = 0; k < n_fcap; k++) dcap[k] = hb + n_fc + k;
    for (int j = 0; j < nfx; j++) dxH[j] = hb + n_fc + n_fcap + j;
  }
  for (int k = 0; k < n_fc; k++) accum(A, S->in[s->fc[k]], dc[k]);
  for (int k = 0; k < n_fcap; k++) accum(A, S->in[nc + nx + s->fcap[k]], dcap[k]);
  for (int j = 0, d = 0; j < nx; j++) {
    if (!td_dtype_is_float(N(A, xsa[j])->dtype)) continue;
    int parts[2] = {sa.reverse ? dxG[d] : dxH[d], sa.reverse ? dxH[d] : dxG[d]};
    int whole = !has_head ? dxG[d] : k_concat(A, parts, 2, 0);
    accum(A, S->in[nc + j], whole);
    d++;
  }
  td_free(buf);
  return A->oom ? -1 : 0;
oom:
  A->oom = 1;
  td_free(buf);
  return -1;
}

/* The segment length of a checkpointed scan and its Q and R, or 0 when
 * the plain path serves (no checkpoint, or one segment would hold every
 * step); -1 after an error. */
static int64_t ckpt_plan(ad *A, const td_node *S, td_dim *Q, td_dim *R) {
  int64_t K = S->attr.i2;
  td_dim T = S->attr.dim;
  td_graph *g = A->g;
  if (K == 0) return 0;
  const td_node *r = draws(S->attr.body);
  if (r) {
    td_diag *dg = td_error(A->d, S->span, "checkpoint: the step draws random numbers (line %d), which the "
                           "backward would draw again differently when it runs a segment a second time",
                           r->span.line);
    td_diag_help(A->d, dg, "draw the noise before the scan and pass it as a sequence, or drop checkpoint");
    A->oom = 1;
    return -1;
  }
  if (K < 0) {   /* checkpoint = true: segments of about sqrt(T) steps */
    if (!TD_DIM_IS_CONST(T)) {
      char t[128];
      td_diag *dg = td_error(A->d, S->span, "checkpoint = true needs a number of steps known when the graph is "
                             "built, and this scan has %s", td_dim_str(g, T, t, sizeof t));
      td_diag_help(A->d, dg, "give the segment length instead, e.g. checkpoint = 32 (about the square root of "
                   "the usual length)");
      A->oom = 1;
      return -1;
    }
    K = 1;
    while (K * K < T) K++;
  }
  if (TD_DIM_IS_CONST(T)) {
    if (K >= T) return 0;
    *Q = T / K;
    *R = T % K;
    return K;
  }
  if (td_dim_div(g, T, K, Q) == 0 && !TD_DIM_IS_BAD(*Q)) {
    *R = 0;
    return K;
  }
  /* T a symbol: Q is the symbol "T//K", derived from T's value whenever
   * the sizes are bound (runtime/sig.h, td_sig_derive), R = T - K*Q */
  td_graph *root = td_graph_root(g);
  const td_poly *p = &root->dims[-T - 1];
  if (p->n == 1 && p->t[0].coef == 1 && p->t[0].n == 1) {
    char name[160];
    snprintf(name, sizeof name, "%s//%lld", root->syms[p->t[0].sym[0]], (long long)K);
    int q = -1;
    for (int i = 0; i < root->n_syms && q < 0; i++)
      if (!strcmp(root->syms[i], name)) q = i;
    if (q < 0 && (q = td_sym_new(root, name)) < 0) {
      A->oom = 1;
      return -1;
    }
    *Q = td_dim_sym(g, q);
    *R = td_dim_sub(g, T, td_dim_mul(g, *Q, K));
    if (TD_DIM_IS_BAD(*Q) || TD_DIM_IS_BAD(*R)) {
      A->oom = 1;
      return -1;
    }
    return K;
  }
  char t[128];
  td_diag *dg = td_error(A->d, S->span, "checkpoint = %lld: the number of steps %s is not one size, so its "
                         "segments cannot be counted", (long long)K, td_dim_str(g, T, t, sizeof t));
  td_diag_help(A->d, dg, "a length made of one size (xs: f32[T, ...]) can be checkpointed; this one is a sum or "
               "product of sizes: slice or reshape the sequence to one size, or drop checkpoint");
  A->oom = 1;
  return -1;
}

/* The backward body of a scan of body f: carries dc (the float carries'
 * adjoints), dcap (an accumulator per float capture); sequences: the
 * step's input carries, its sequences' slices, dy (the float per-step
 * values' adjoints); the step index (when f reads it); the captures.  It
 * runs f again and its reverse sweep; returns dc', dcap' + the captures'
 * contributions, then the float sequences' adjoints.  NULL after A->oom
 * is set (out of memory, or an error reported). */
static td_graph *bwd_body(ad *A, const scan_ad *s) {
  const td_graph *f = s->f;
  int nc = s->nc, nx = s->nx, ni = s->ni, ncap = s->ncap, n_fc = s->n_fc, n_fy = s->n_fy, n_fcap = s->n_fcap;
  td_graph *bb = td_graph_new(A->g->arena, f->name);
  int n_all = f->n_inputs + f->n_outputs + 8;
  int *tmp = td_malloc((size_t)n_all * 2 * sizeof *tmp), *map = td_malloc((size_t)(f->n_nodes + 1) * sizeof *map);
  int *in_map = td_malloc((size_t)(f->n_inputs + 1) * sizeof *in_map);
  int *wrt = td_malloc((size_t)n_all * sizeof *wrt), *grads = td_malloc((size_t)n_all * sizeof *grads);
  if (!bb || !tmp || !map || !in_map || !wrt || !grads) goto oom;
  bb->parent = td_graph_root(A->g);
  int p_dc = 0, p_dcap = n_fc, p_c = p_dcap + n_fcap, p_x = p_c + nc, p_dy = p_x + nx, p_i = p_dy + n_fy,
      p_cap = p_i + ni;
  for (int k = 0; k < n_fc; k++)
    if ((tmp[p_dc + k] = body_input(bb, f_in(s, s->fc[k]), 0)) < 0) goto oom;
  for (int k = 0; k < n_fcap; k++)
    if ((tmp[p_dcap + k] = body_input(bb, f_in(s, nc + nx + ni + s->fcap[k]), 0)) < 0) goto oom;
  for (int k = 0; k < nc; k++)
    if ((tmp[p_c + k] = body_input(bb, f_in(s, k), 0)) < 0) goto oom;
  for (int k = 0; k < nx; k++)
    if ((tmp[p_x + k] = body_input(bb, f_in(s, nc + k), 0)) < 0) goto oom;
  for (int k = 0; k < n_fy; k++)
    if ((tmp[p_dy + k] = body_input(bb, f_out(s, nc + s->fy[k]), 0)) < 0) goto oom;
  if (ni && (tmp[p_i] = body_input(bb, f_in(s, nc + nx), 0)) < 0) goto oom;
  for (int k = 0; k < ncap; k++)
    if ((tmp[p_cap + k] = body_input(bb, f_in(s, nc + nx + ni + k), 0)) < 0) goto oom;
  for (int k = 0; k < nc; k++) in_map[k] = tmp[p_c + k];
  for (int k = 0; k < nx; k++) in_map[nc + k] = tmp[p_x + k];
  if (ni) in_map[nc + nx] = tmp[p_i];
  for (int k = 0; k < ncap; k++) in_map[nc + nx + ni + k] = tmp[p_cap + k];
  if (inline_body(bb, f, in_map, map)) goto oom;
  {
    /* L = sum over the float outputs of sum(output * its adjoint): its
     * gradient is the body's vector-Jacobian product */
    ad B = {.g = bb, .d = A->d, .sp = A->sp, .hint = A->hint};
    int L = -1;
    td_dtype ldt = TD_F32;
    for (int k = 0; k < n_fc + n_fy; k++) {
      int o = map[f->outputs[k < n_fc ? s->fc[k] : nc + s->fy[k - n_fc]]];
      int cot = k < n_fc ? tmp[p_dc + k] : tmp[p_dy + k - n_fc];
      const td_node *on = &bb->nodes[o];
      uint32_t all = on->rank ? (1u << on->rank) - 1 : 0;
      int t = k_reshape(&B, k_sum(&B, k_bin(&B, TD_IR_MUL, o, cot), all), 0, NULL);
      if (L < 0) ldt = on->dtype;
      else t = k_cast(&B, t, ldt);
      L = L < 0 ? t : k_bin(&B, TD_IR_ADD, L, t);
    }
    if (B.oom) goto oom;
    int nw = 0;
    for (int k = 0; k < n_fc; k++) wrt[nw++] = tmp[p_c + s->fc[k]];
    int fx0 = nw;
    for (int k = 0; k < nx; k++)
      if (td_dtype_is_float(bb->nodes[tmp[p_x + k]].dtype)) wrt[nw++] = tmp[p_x + k];
    int fcap0 = nw;
    for (int k = 0; k < n_fcap; k++) wrt[nw++] = tmp[p_cap + s->fcap[k]];
    if (L < 0) {
      for (int k = 0; k < nw; k++) {
        const td_node *w = &bb->nodes[wrt[k]];
        td_dim sh[TD_MAX_RANK];
        memcpy(sh, w->shape, sizeof sh);
        grads[k] = k_zeros(&B, w->dtype, w->rank, sh);
      }
    } else if (td_grad(bb, A->d, A->sp, L, -1, wrt, nw, grads)) {
      goto oom;   /* reported (or out of memory): the sweep stops */
    }
    if (B.oom) goto oom;
    for (int k = 0; k < n_fc; k++)
      if (td_graph_add_output(bb, grads[k])) goto oom;
    for (int k = 0; k < n_fcap; k++) {
      int acc = k_bin(&B, TD_IR_ADD, tmp[p_dcap + k], grads[fcap0 + k]);
      if (acc < 0 || td_graph_add_output(bb, acc)) goto oom;
    }
    for (int k = fx0; k < fcap0; k++)
      if (td_graph_add_output(bb, grads[k])) goto oom;
  }
  if (0) {
  oom:
    A->oom = 1;
    bb = NULL;
  }
  td_free(tmp);
  td_free(map);
  td_free(in_map);
  td_free(wrt);
  td_free(grads);
  return bb;
}

static void r_scan(ad *A, int id, int g) {
  (void)g;
  const td_node *S = N(A, id);
  const td_attr sa = S->attr;
  const td_graph *f = sa.body;
  scan_ad s = {.f = f, .nc = sa.n_carry, .nx = sa.n_xs, .ni = sa.index ? 1 : 0};
  int nc = s.nc, nx = s.nx;
  int ncap = s.ncap = S->n_in - nc - nx, ny = s.ny = f->n_outputs - nc;
  td_arena *ar = A->g->arena;
  td_graph *root = td_graph_root(A->g);
  int n_all = S->n_in + f->n_outputs + 8;
  int *fc = td_malloc((size_t)n_all * 4 * sizeof *fc), *fy = fc + n_all, *fcap = fy + n_all;
  int *map = td_malloc((size_t)(f->n_nodes + 1) * sizeof *map);
  int *in_map = td_malloc((size_t)(f->n_inputs + 1) * sizeof *in_map);
  int *sin = td_malloc((size_t)(2 * S->n_in + f->n_outputs + 1) * sizeof *sin);
  td_graph *b2 = td_graph_new(ar, f->name), *bb = NULL;
  int n_fc = 0, n_fy = 0, n_fcap = 0;
  if (!fc || !map || !in_map || !sin || !b2) goto oom;
  b2->parent = root;
  for (int k = 0; k < nc; k++)
    if (td_dtype_is_float(N(A, S->in[k])->dtype)) fc[n_fc++] = k;
  for (int k = 0; k < ny; k++)
    if (td_dtype_is_float(f->nodes[f->outputs[nc + k]].dtype)) fy[n_fy++] = k;
  for (int k = 0; k < ncap; k++)
    if (td_dtype_is_float(N(A, S->in[nc + nx + k])->dtype)) fcap[n_fcap++] = k;
  s.fc = fc, s.fy = fy, s.fcap = fcap, s.n_fc = n_fc, s.n_fy = n_fy, s.n_fcap = n_fcap;

  td_dim Q = 0, R = 0;
  int64_t K = ckpt_plan(A, S, &Q, &R);
  if (K < 0) goto done;
  if (K > 0) {
    r_scan_ckpt(A, id, &s, K, Q, R);
    goto done;
  }

  /* the forward again, with every step's input carries stacked after its outputs */
  for (int k = 0; k < f->n_inputs; k++)
    if ((in_map[k] = body_input(b2, &f->nodes[f->inputs[k]], 0)) < 0) goto oom;
  if (inline_body(b2, f, in_map, map)) goto oom;
  for (int k = 0; k < f->n_outputs; k++)
    if (td_graph_add_output(b2, map[f->outputs[k]])) goto oom;
  for (int k = 0; k < nc; k++)
    if (td_graph_add_output(b2, in_map[k])) goto oom;
  int o2 = emit_scan(A, &sa, b2, nc, nx, sa.reverse, S->in, S->n_in);
  if (o2 < 0) goto oom;
  int cst = o2 + f->n_outputs;   /* the stacked input carries: cst + k */

  /* the backward body (bwd_body) and its SCAN */
  if (!(bb = bwd_body(A, &s))) goto done;
  {
    int n = 0;
    for (int k = 0; k < n_fc; k++) {
      const td_node *c0 = N(A, S->in[fc[k]]);
      td_dim sh[TD_MAX_RANK];
      memcpy(sh, c0->shape, sizeof sh);
      int a = A->adj[id + 1 + fc[k]];
      sin[n++] = a >= 0 ? exact(A, a, c0->rank, sh) : k_zeros(A, c0->dtype, c0->rank, sh);
    }
    for (int k = 0; k < n_fcap; k++) {
      const td_node *c0 = N(A, S->in[nc + nx + fcap[k]]);
      td_dim sh[TD_MAX_RANK];
      memcpy(sh, c0->shape, sizeof sh);
      sin[n++] = k_zeros(A, c0->dtype, c0->rank, sh);
    }
    for (int k = 0; k < nc; k++) sin[n++] = cst + k;
    for (int k = 0; k < nx; k++) sin[n++] = S->in[nc + k];
    for (int k = 0; k < n_fy; k++) {
      const td_node *y = N(A, id + 1 + nc + fy[k]);
      td_dim sh[TD_MAX_RANK];
      memcpy(sh, y->shape, sizeof sh);
      int a = A->adj[id + 1 + nc + fy[k]];
      sin[n++] = a >= 0 ? exact(A, a, y->rank, sh) : k_zeros(A, y->dtype, y->rank, sh);
    }
    for (int k = 0; k < ncap; k++) sin[n++] = S->in[nc + nx + k];
    if (A->oom) goto oom;
    int ob = emit_scan(A, &sa, bb, n_fc + n_fcap, nc + nx + n_fy, !sa.reverse, sin, n);
    if (ob < 0) goto oom;
    for (int k = 0; k < n_fc; k++) accum(A, S->in[fc[k]], ob + k);
    for (int k = 0; k < n_fcap; k++) accum(A, S->in[nc + nx + fcap[k]], ob + n_fc + k);
    int d = ob + n_fc + n_fcap;
    for (int k = 0; k < nx; k++)
      if (td_dtype_is_float(N(A, S->in[nc + k])->dtype)) accum(A, S->in[nc + k], d++);
  }
  if (0) {
  oom:
    A->oom = 1;
  }
done:
  td_free(fc);
  td_free(map);
  td_free(in_map);
  td_free(sin);
}

/* ---- convolution ---- */

/* conv(x, w) with attributes at, at the output shape `shape`. */
static int k_conv(ad *A, int x, int w, const td_conv_attr *ca, const td_dim *shape) {
  if (x < 0 || w < 0) return -1;
  td_attr at;
  memset(&at, 0, sizeof at);
  at.conv = *ca;
  int in[2] = {x, w};
  return add(A, TD_IR_CONV, N(A, x)->dtype, ca->spatial + 2, shape, in, 2, &at);
}


/* x reversed along its last S axes (the kernel of a transposed conv). */
static int k_flip(ad *A, int x, int S) {
  if (x < 0) return -1;
  const td_node *n = N(A, x);
  td_attr at;
  memset(&at, 0, sizeof at);
  int flip = 0;
  for (int i = 0; i < n->rank; i++) {
    at.step[i] = 1;
    if (i >= n->rank - S && n->shape[i] != 1) {
      at.step[i] = -1;
      at.start[i] = n->shape[i] - 1;   /* kernel sizes are literal */
      flip = 1;
    }
  }
  if (!flip) return x;
  td_dim s[TD_MAX_RANK];
  memcpy(s, n->shape, sizeof s);
  return add(A, TD_IR_SLICE, n->dtype, n->rank, s, &x, 1, &at);
}

/* y = conv(x, w), per spatial axis q = o*s + k*d - p over x dilated by L
 * (lang/ir.h).  Both gradients are convolutions again:
 *   dx = conv(g, flip(w) with in/out channels swapped per group), stride
 *        L, input dilation s, dilation d, padding d(K - 1) - p: the
 *        transposed convolution, output x's size;
 *   dw = conv(x with batch and channels swapped, g likewise), stride d,
 *        input dilation L, dilation s, padding p: output w's size.
 * Groups: channel c = gi * Cg + cl of x and o = gi * Og + ol of y; the
 * weight gradient is a grouped conv whose "batch" is cl and whose
 * channels are (gi, n). */
static void r_conv(ad *A, int id, int g) {
  int x = IN(0), w = IN(1);
  const td_node *n = N(A, id);
  td_conv_attr ca = n->attr.conv;
  int S = ca.spatial, r = n->rank;
  int64_t G = ca.groups;
  td_dim ys[TD_MAX_RANK], xs[TD_MAX_RANK], ws[TD_MAX_RANK];
  memcpy(ys, n->shape, sizeof ys);
  memcpy(xs, N(A, x)->shape, sizeof xs);
  memcpy(ws, N(A, w)->shape, sizeof ws);
  int ge = exact(A, g, r, ys);
  td_dim Og = ws[0], Cg = ws[1];
  if (G > 1 && td_dim_div(A->g, ws[0], G, &Og)) {   /* literal weights are checked; a symbolic count must divide */
    td_error(A->d, A->sp, "no gradient for this convolution: groups = %lld do not divide its output channels "
             "for every size", (long long)G);
    A->oom = 1;
    return;
  }
  if (A->active[x]) {
    /* w [G*Og, Cg, K] -> [G, Og, Cg, K] -> [G, Cg, Og, K] -> [G*Cg, Og, K], flipped */
    int wt;
    if (G == 1) {
      int perm[TD_MAX_RANK];
      for (int i = 0; i < r; i++) perm[i] = i;
      perm[0] = 1;
      perm[1] = 0;
      wt = k_permute(A, w, perm);
    } else {
      td_dim s5[TD_MAX_RANK], s4[TD_MAX_RANK];
      int perm[TD_MAX_RANK];
      s5[0] = G; s5[1] = Og; s5[2] = Cg;
      for (int i = 0; i < S; i++) s5[3 + i] = ws[2 + i];
      for (int i = 0; i < r + 1; i++) perm[i] = i;
      perm[1] = 2;
      perm[2] = 1;
      int t = k_permute(A, k_reshape(A, w, r + 1, s5), perm);
      s4[0] = xs[1]; s4[1] = Og;
      for (int i = 0; i < S; i++) s4[2 + i] = ws[2 + i];
      wt = k_reshape(A, t, r, s4);
    }
    wt = k_flip(A, wt, S);
    td_conv_attr da = ca;
    for (int i = 0; i < S; i++) {
      da.stride[i] = ca.ldil[i];
      da.ldil[i] = ca.stride[i];
      da.dil[i] = ca.dil[i];
      da.pad[i] = (int32_t)(ca.dil[i] * (ws[2 + i] - 1) - ca.pad[i]);
    }
    accum(A, x, k_conv(A, ge, wt, &da, xs));
  }
  if (A->active[w]) {
    /* x [N, G*Cg, H] -> [N, G, Cg, H] -> [Cg, G, N, H] -> [Cg, G*N, H]
     * g [N, G*Og, OH] -> [N, G, Og, OH] -> [G, Og, N, OH] -> [G*Og, N, OH]
     * conv -> [Cg, G*Og, K] -> [G*Og, Cg, K] */
    td_dim Nb = xs[0];
    td_dim s5[TD_MAX_RANK], s4[TD_MAX_RANK];
    int perm[TD_MAX_RANK];
    for (int i = 0; i < r + 1; i++) perm[i] = i;
    s5[0] = Nb; s5[1] = G; s5[2] = Cg;
    for (int i = 0; i < S; i++) s5[3 + i] = xs[2 + i];
    perm[0] = 2; perm[1] = 1; perm[2] = 0;
    int xt = k_permute(A, k_reshape(A, x, r + 1, s5), perm);
    s4[0] = Cg;
    s4[1] = td_dim_mul(A->g, G, Nb);
    for (int i = 0; i < S; i++) s4[2 + i] = xs[2 + i];
    xt = k_reshape(A, xt, r, s4);
    s5[0] = Nb; s5[1] = G; s5[2] = Og;
    for (int i = 0; i < S; i++) s5[3 + i] = ys[2 + i];
    perm[0] = 1; perm[1] = 2; perm[2] = 0;
    int gt = k_permute(A, k_reshape(A, ge, r + 1, s5), perm);
    s4[0] = ws[0];
    s4[1] = Nb;
    for (int i = 0; i < S; i++) s4[2 + i] = ys[2 + i];
    gt = k_reshape(A, gt, r, s4);
    td_conv_attr wa = ca;
    for (int i = 0; i < S; i++) {
      wa.stride[i] = ca.dil[i];
      wa.dil[i] = ca.stride[i];
      wa.ldil[i] = ca.ldil[i];
      wa.pad[i] = ca.pad[i];
    }
    td_dim os[TD_MAX_RANK];
    os[0] = Cg;
    os[1] = ws[0];
    for (int i = 0; i < S; i++) os[2 + i] = ws[2 + i];
    int dw = k_conv(A, xt, gt, &wa, os);
    int sw[TD_MAX_RANK];
    for (int i = 0; i < r; i++) sw[i] = i;
    sw[0] = 1;
    sw[1] = 0;
    accum(A, w, k_permute(A, dw, sw));
  }
}

/* Markers: LEAF (no inputs), NONE (no derivative: passes no gradient). */
static void r_none(ad *A, int id, int g) { (void)A; (void)id; (void)g; }
#define LEAF r_none
#define NONE r_none

/* One rule per op of ops.def; test_grad.c checks that none is missing. */
static const rule_fn rules[TD_IR_OP_COUNT] = {
  [TD_IR_INPUT] = LEAF, [TD_IR_PARAM] = LEAF, [TD_IR_CONST] = LEAF, [TD_IR_DIM] = LEAF,
  [TD_IR_ARANGE] = LEAF, [TD_IR_RAND] = NONE, [TD_IR_RANDN] = NONE,
  [TD_IR_NEG] = r_neg, [TD_IR_ABS] = r_abs, [TD_IR_EXP] = r_exp, [TD_IR_LOG] = r_log,
  [TD_IR_SQRT] = r_sqrt, [TD_IR_RSQRT] = r_rsqrt, [TD_IR_SIN] = r_sin, [TD_IR_COS] = r_cos,
  [TD_IR_TANH] = r_tanh, [TD_IR_SIGMOID] = r_sigmoid, [TD_IR_RELU] = r_relu, [TD_IR_GELU] = r_gelu,
  [TD_IR_SILU] = r_silu, [TD_IR_ERF] = r_erf, [TD_IR_LOG1P] = r_log1p,
  [TD_IR_FLOOR] = NONE, [TD_IR_CEIL] = NONE, [TD_IR_ROUND] = NONE, [TD_IR_NOT] = NONE,
  [TD_IR_CAST] = r_cast,
  [TD_IR_ADD] = r_add, [TD_IR_SUB] = r_sub, [TD_IR_MUL] = r_mul, [TD_IR_DIV] = r_div,
  [TD_IR_MOD] = r_mod, [TD_IR_FLOORDIV] = NONE, [TD_IR_POW] = r_pow, [TD_IR_MIN] = r_min, [TD_IR_MAX] = r_max,
  [TD_IR_LT] = NONE, [TD_IR_LE] = NONE, [TD_IR_GT] = NONE, [TD_IR_GE] = NONE,
  [TD_IR_EQ] = NONE, [TD_IR_NE] = NONE, [TD_IR_AND] = NONE, [TD_IR_OR] = NONE,
  [TD_IR_WHERE] = r_where,
  [TD_IR_SUM] = r_sum, [TD_IR_PROD] = r_prod, [TD_IR_RMAX] = r_rmaxmin, [TD_IR_RMIN] = r_rmaxmin,
  [TD_IR_ARGMAX] = NONE, [TD_IR_ARGMIN] = NONE,
  [TD_IR_MATMUL] = r_matmul,
  [TD_IR_CONV] = r_conv,
  [TD_IR_RESHAPE] = r_reshape, [TD_IR_PERMUTE] = r_permute, [TD_IR_BROADCAST] = r_broadcast,
  [TD_IR_SLICE] = r_slice, [TD_IR_CONCAT] = r_concat, [TD_IR_GATHER] = r_gather,
  [TD_IR_PRINT] = NONE,
  [TD_IR_SCAN] = r_scan, [TD_IR_SCAN_OUT] = NONE,   /* a SCAN_OUT's adjoint is read by its SCAN's rule */
};

int td_grad_has_rule(td_op op) { return (unsigned)op < TD_IR_OP_COUNT && rules[op] != NULL; }

/* ---- the sweep ---- */

int td_grad(td_graph *g, td_diags *d, td_span where, int y, int seed, const int *wrt, int n_wrt, int *grads) {
  if (y < 0 || y >= g->n_nodes) return -1;
  const td_node *yn = &g->nodes[y];
  if (!td_dtype_is_float(yn->dtype)) {
    td_error(d, where, "can only differentiate a float value, not %s", td_dtype_name(yn->dtype));
    return -1;
  }
  if (seed < 0 && yn->rank != 0) {
    char t[128];
    td_diag *dg = td_error(d, where, "cannot take the gradient of a non-scalar value (%s) without a seed",
                           td_type_str(g, yn->dtype, yn->rank, yn->shape, t, sizeof t));
    td_diag_help(d, dg, "reduce it to one value first, e.g. with sum(...) or mean(...)");
    return -1;
  }
  int n0 = y + 1;
  ad A = {.g = g, .d = d, .sp = where};
  A.adj = td_malloc((size_t)n0 * sizeof *A.adj);
  A.active = td_calloc((size_t)n0, 1);
  unsigned char *dep = td_calloc((size_t)n0, 1);
  if (!A.adj || !A.active || !dep) {
    td_free(A.adj);
    td_free(A.active);
    td_free(dep);
    return -1;
  }
  /* dep: a float node that depends on a float wrt node through float
   * nodes (an integer or bool node carries no gradient: cast(argmax(x))) */
  for (int i = 0; i < n_wrt; i++)
    if (wrt[i] >= 0 && wrt[i] < n0 && td_dtype_is_float(g->nodes[wrt[i]].dtype)) dep[wrt[i]] = 1;
  for (int i = 0; i < n0; i++) {
    A.adj[i] = -1;
    /* a SCAN has no value, but its outputs depend on its inputs through it */
    if (!td_dtype_is_float(g->nodes[i].dtype) && g->nodes[i].op != TD_IR_SCAN) continue;
    for (int k = 0; !dep[i] && k < g->nodes[i].n_in; k++) dep[i] = dep[g->nodes[i].in[k]];
  }
  /* active: depends on a wrt node, and y depends on it */
  A.active[y] = dep[y];
  for (int i = y; i >= 0; i--) {
    if (!A.active[i]) continue;
    for (int k = 0; k < g->nodes[i].n_in; k++)
      if (dep[g->nodes[i].in[k]]) A.active[g->nodes[i].in[k]] = 1;
  }
  int rc = 0;
  if (A.active[y]) A.adj[y] = seed >= 0 ? seed : k_const(&A, yn->dtype, 1);
  for (int i = y; i >= 0 && !A.oom; i--) {
    if (g->nodes[i].op == TD_IR_SCAN && A.active[i]) {   /* runs when one of its outputs has an adjoint */
      int any = 0;
      for (int k = 0; k < g->nodes[i].attr.body->n_outputs && i + 1 + k < n0; k++) any |= A.adj[i + 1 + k] >= 0;
      if (any) {
        A.sp = g->nodes[i].span;
        A.hint = td_arena_printf(g->arena, "grad(scan)");
        r_scan(&A, i, -1);
      }
      continue;
    }
    if (!A.active[i] || A.adj[i] < 0 || !td_dtype_is_float(g->nodes[i].dtype)) continue;
    td_op op = g->nodes[i].op;
    if (!rules[op]) {
      td_diag *dg = td_error(d, g->nodes[i].span, "no gradient for %s", td_ops[op].name);
      td_diag_help(d, dg, "this op has no differentiation rule yet (lang/grad.c): compute it from "
                   "differentiable ops, or keep it out of the loss's path");
      rc = -1;
      break;
    }
    A.sp = g->nodes[i].span;
    A.hint = td_arena_printf(g->arena, "grad(%s)", td_ops[op].name);
    rules[op](&A, i, A.adj[i]);
  }
  A.sp = where;
  A.hint = NULL;
  for (int i = 0; i < n_wrt && rc == 0 && !A.oom; i++) {
    int w = wrt[i];
    td_dim s[TD_MAX_RANK];
    memcpy(s, g->nodes[w].shape, sizeof s);
    int r = g->nodes[w].rank;
    td_dtype dt = g->nodes[w].dtype;
    int a = w < n0 ? A.adj[w] : -1;
    grads[i] = a >= 0 ? exact(&A, a, r, s) : k_zeros(&A, dt, r, s);
  }
  if (A.oom) rc = -1;
  td_free(A.adj);
  td_free(A.active);
  td_free(dep);
  return rc;
}

/* shapes.c - tensor operations of the elaborator: dtype promotion, shape
 * rules (broadcasting, matmul, reductions, reshape, indexing, concat) and
 * the IR nodes they emit.
 *
 * Every function takes evaluated values, checks them, reports a diagnostic
 * naming both shapes and where each came from when they do not fit, and
 * returns a V_TENSOR (or V_ERR).  The IR they emit obeys the typing
 * contract of ops.def: operands of elementwise ops already have the node's
 * dtype, reductions keep dims, matmul sees operands of rank >= 2.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "lang/elab_impl.h"

const td_node *el_node(el_ctx *c, const td_value *v) { return &c->g->nodes[v->node]; }

/* ---- size arithmetic that overflows ---- */

int el_err_overflow(el_ctx *c, td_span sp, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  td_diag *g = td_error(c->diags, sp, "size arithmetic overflows: %s", what);
  td_diag_help(c->diags, g, "sizes are kept exactly, as polynomials in the symbolic sizes with 64-bit "
               "integer coefficients (at most %d symbols in a term, %d terms, and every tensor's "
               "byte count must fit too); use smaller sizes", TD_MONO_MAX, TD_POLY_MAX);
  return -1;
}

td_dim el_numel(el_ctx *c, int rank, const td_dim *shape) {
  td_dim n = 1;
  for (int i = 0; i < rank; i++) n = td_dim_mul(c->g, n, shape[i]);
  return n;
}

/* Whether what the later stages derive from a node of this shape can be
 * represented: its dims, its slice starts, its bytes in the widest dtype
 * (so casts and the half-precision rewrite stay in range too) and, for a
 * matmul, its FLOPs (2*K per output element), computed as the planner
 * does.  0, or -1 with a diagnostic at sp. */
static int check_sizes(el_ctx *c, td_op op, td_dtype dt, int rank, const td_dim *shape,
                       const int *in, const td_attr *attr, td_span sp) {
  for (int i = 0; i < rank; i++)
    if (TD_DIM_IS_BAD(shape[i]) || (op == TD_IR_SLICE && TD_DIM_IS_BAD(attr->start[i])))
      return el_err_overflow(c, sp, "dimension %d of the result does not fit", i);
  td_dim n = el_numel(c, rank, shape);
  if (TD_DIM_IS_BAD(td_dim_mul(c->g, n, 8))) {
    char t[256];
    return el_err_overflow(c, sp, "the element count of %s times 8 (the widest dtype's bytes) "
                           "does not fit", td_type_str(c->g, dt, rank, shape, t, sizeof t));
  }
  if (op == TD_IR_MATMUL) {
    const td_node *a = &c->g->nodes[in[0]];
    if (TD_DIM_IS_BAD(td_dim_mul(c->g, td_dim_mul(c->g, 2, a->shape[a->rank - 1]), n)))
      return el_err_overflow(c, sp, "the FLOP count of this matmul does not fit");
  }
  return 0;
}

int el_emit(el_ctx *c, td_op op, td_dtype dt, int rank, const td_dim *shape,
            const int *in, int n_in, const td_attr *attr, td_span sp) {
  if (rank >= 0 && rank <= TD_MAX_RANK && check_sizes(c, op, dt, rank, shape, in, attr, sp)) return -1;
  if (c->g->n_nodes >= c->node_limit) {
    if (c->g->n_nodes == c->node_limit)
      td_error(c->diags, sp, "the graph grew past %d operations", c->node_limit);
    c->node_limit = c->g->n_nodes - 1; /* report once */
    return -1;
  }
  int id = td_graph_add(c->g, op, dt, rank, shape, in, n_in, attr, sp);
  if (id < 0) td_diags_oom(c->diags, sp);
  return id;
}

static td_value tensor_or_err(int node, td_span sp) {
  return node < 0 ? el_err() : el_tensor(node, sp);
}

/* "f32[N, 4]" of a node. */
static const char *tstr(el_ctx *c, const td_node *n, char *buf, size_t sz) {
  return td_type_str(c->g, n->dtype, n->rank, n->shape, buf, sz);
}

int el_value_dtype(const td_value *v, td_dtype *dt, int *weak) {
  *weak = 1;
  switch (v->k) {
  case V_BOOL: *dt = TD_BOOL; return 0;
  case V_INT: case V_SIZE: *dt = TD_I64; return 0;
  case V_FLOAT: *dt = TD_F32; return 0;
  default: return -1;
  }
}

int64_t el_f2i(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)f;
}

int el_as_tensor(el_ctx *c, const td_value *v, td_dtype dt, td_span sp) {
  td_attr at;
  memset(&at, 0, sizeof at);
  switch (v->k) {
  case V_TENSOR: {
    if (el_node(c, v)->dtype == dt) return v->node;
    const td_node *n = el_node(c, v);
    int in = v->node;
    return el_emit(c, TD_IR_CAST, dt, n->rank, n->shape, &in, 1, NULL, sp);
  }
  case V_INT: case V_BOOL:
    at.i = v->i;
    at.f = (double)v->i;
    return el_emit(c, TD_IR_CONST, dt, 0, NULL, NULL, 0, &at, sp);
  case V_FLOAT:
    at.f = v->f;
    at.i = el_f2i(v->f);
    if (dt == TD_BOOL) at.i = v->f != 0;
    return el_emit(c, TD_IR_CONST, dt, 0, NULL, NULL, 0, &at, sp);
  case V_SIZE: {
    at.dim = v->dim;
    int d = el_emit(c, TD_IR_DIM, TD_I64, 0, NULL, NULL, 0, &at, sp);
    if (d < 0 || dt == TD_I64) return d;
    return el_emit(c, TD_IR_CAST, dt, 0, NULL, &d, 1, NULL, sp);
  }
  case V_ERR: return -1;
  default:
    td_error(c->diags, v->span, "expected a tensor or a number, found %s", el_kind_name(v));
    return -1;
  }
}

td_value el_cast(el_ctx *c, const td_value *v, td_dtype dt, td_span sp) {
  return tensor_or_err(el_as_tensor(c, v, dt, sp), sp);
}

/* ---- broadcasting ---- */

int el_broadcast_shapes(el_ctx *c, const td_node *a, const td_node *b, td_span sa,
                        td_span sb, td_span sp, int *rank, td_dim *shape) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    td_dim da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da == db || db == 1) shape[i] = da;
    else if (da == 1) shape[i] = db;
    else {
      char t1[256], t2[256], d1[64], d2[64];
      td_diag *g = td_error(c->diags, sp, "shapes %s and %s cannot be broadcast together: "
                            "dimension %d is %s on the left and %s on the right",
                            tstr(c, a, t1, sizeof t1), tstr(c, b, t2, sizeof t2), i - r,
                            td_dim_str(c->g, da, d1, sizeof d1), td_dim_str(c->g, db, d2, sizeof d2));
      td_diag_note(c->diags, g, a->span.file >= 0 ? a->span : sa, "the left operand's shape %s comes from here", t1);
      td_diag_note(c->diags, g, b->span.file >= 0 ? b->span : sb, "the right operand's shape %s comes from here", t2);
      td_diag_help(c->diags, g, "sizes must be equal or 1 (aligned from the right); "
                   "reshape or transpose one operand, e.g. unsqueeze(x, -1)");
      return -1;
    }
  }
  *rank = r;
  return 0;
}

/* Promotion between two operand dtypes; weak (number) operands adopt the
 * other side's dtype unless they are floats meeting an integer tensor. */
static td_dtype promote(td_dtype a, int wa, td_dtype b, int wb) {
  if (wa && !wb) return (a == TD_F32 && !td_dtype_is_float(b)) ? TD_F32 : (a > b && b == TD_BOOL ? a : b);
  if (wb && !wa) return (b == TD_F32 && !td_dtype_is_float(a)) ? TD_F32 : (b > a && a == TD_BOOL ? b : a);
  return td_dtype_promote(a, b);
}

static td_op binop_ir(int op) {
  switch (op) {
  case TD_OP_ADD: return TD_IR_ADD;
  case TD_OP_SUB: return TD_IR_SUB;
  case TD_OP_MUL: return TD_IR_MUL;
  case TD_OP_DIV: return TD_IR_DIV;
  case TD_OP_MOD: return TD_IR_MOD;
  case TD_OP_FLOORDIV: return TD_IR_FLOORDIV;
  case TD_OP_POW: return TD_IR_POW;
  case TD_OP_EQ: return TD_IR_EQ;
  case TD_OP_NE: return TD_IR_NE;
  case TD_OP_LT: return TD_IR_LT;
  case TD_OP_LE: return TD_IR_LE;
  case TD_OP_GT: return TD_IR_GT;
  case TD_OP_GE: return TD_IR_GE;
  case TD_OP_AND: return TD_IR_AND;
  case TD_OP_OR: return TD_IR_OR;
  default: return TD_IR_OP_COUNT;
  }
}

/* Elementwise binary IR op (op is a td_op here, not a td_binop). */
static td_value ew_binary(el_ctx *c, td_op op, const td_value *a, const td_value *b, td_span sp) {
  td_dtype da, db;
  int wa = 0, wb = 0;
  if (a->k == V_TENSOR) da = el_node(c, a)->dtype;
  else if (el_value_dtype(a, &da, &wa)) goto bad;
  if (b->k == V_TENSOR) db = el_node(c, b)->dtype;
  else if (el_value_dtype(b, &db, &wb)) goto bad;
  td_dtype t = promote(da, wa, db, wb);
  int logical = op == TD_IR_AND || op == TD_IR_OR;
  if (logical) t = TD_BOOL;
  if (op == TD_IR_DIV && !td_dtype_is_float(t)) t = TD_F32; /* true division (docs/language.md) */
  if (op == TD_IR_POW && !td_dtype_is_float(t) && b->k == V_INT && b->i < 0) t = TD_F32;
  if (t == TD_BOOL && !logical && td_ops[op].kind != TD_K_COMPARE && op != TD_IR_MIN && op != TD_IR_MAX) {
    td_diag *g = td_error(c->diags, sp, "arithmetic on bool values");
    td_diag_help(c->diags, g, "convert first: f32(mask) or i32(mask)");
    return el_err();
  }
  int ia = el_as_tensor(c, a, t, a->span), ib = el_as_tensor(c, b, t, b->span);
  if (ia < 0 || ib < 0) return el_err();
  const td_node *na = &c->g->nodes[ia], *nb = &c->g->nodes[ib];
  int rank;
  td_dim shape[TD_MAX_RANK];
  if (el_broadcast_shapes(c, na, nb, a->span, b->span, sp, &rank, shape)) return el_err();
  int in[2] = {ia, ib};
  td_dtype out = td_ops[op].kind == TD_K_COMPARE ? TD_BOOL : t;
  return tensor_or_err(el_emit(c, op, out, rank, shape, in, 2, NULL, sp), sp);
bad:
  td_error(c->diags, sp, "operator needs numbers or tensors, found %s and %s", el_kind_name(a), el_kind_name(b));
  return el_err();
}

td_value el_binary(el_ctx *c, int op, const td_value *a, const td_value *b, td_span sp) {
  if (op == TD_OP_MATMUL) return el_matmul(c, a, b, sp);
  td_op ir = binop_ir(op);
  if (ir == TD_IR_OP_COUNT) return el_err();
  return ew_binary(c, ir, a, b, sp);
}

/* Public entry for minimum/maximum/pow builtins. */
td_value el_binary_ir(el_ctx *c, td_op op, const td_value *a, const td_value *b, td_span sp);
td_value el_binary_ir(el_ctx *c, td_op op, const td_value *a, const td_value *b, td_span sp) {
  return ew_binary(c, op, a, b, sp);
}

td_value el_unary_op(el_ctx *c, td_op op, const td_value *a, td_span sp) {
  if (a->k == V_ERR) return el_err();
  td_dtype t;
  int weak = 0;
  if (a->k == V_TENSOR) t = el_node(c, a)->dtype;
  else if (el_value_dtype(a, &t, &weak)) {
    td_error(c->diags, sp, "%s needs a number or a tensor, found %s", td_ops[op].name, el_kind_name(a));
    return el_err();
  }
  int float_only = op != TD_IR_NEG && op != TD_IR_ABS && op != TD_IR_NOT && op != TD_IR_RELU;
  if (op == TD_IR_NOT) {
    if (t != TD_BOOL) {
      td_diag *g = td_error(c->diags, sp, "`not` needs bool values, found %s", td_dtype_name(t));
      td_diag_help(c->diags, g, "compare first, e.g. not (x > 0), or use x == 0");
      return el_err();
    }
  } else if (t == TD_BOOL) {
    td_error(c->diags, sp, "%s on bool values; convert with f32(x) first", td_ops[op].name);
    return el_err();
  }
  if (float_only && !td_dtype_is_float(t)) t = TD_F32;
  int in = el_as_tensor(c, a, t, a->span);
  if (in < 0) return el_err();
  const td_node *n = &c->g->nodes[in];
  return tensor_or_err(el_emit(c, op, t, n->rank, n->shape, &in, 1, NULL, sp), sp);
}

td_value el_where(el_ctx *c, const td_value *cond, const td_value *a, const td_value *b, td_span sp) {
  if (cond->k == V_ERR || a->k == V_ERR || b->k == V_ERR) return el_err();
  if (cond->k == V_TENSOR && el_node(c, cond)->dtype != TD_BOOL) {
    td_diag *g = td_error(c->diags, cond->span, "where's condition must be a bool tensor, found %s",
                          td_dtype_name(el_node(c, cond)->dtype));
    td_diag_help(c->diags, g, "compare to get a mask, e.g. where(x > 0, a, b)");
    return el_err();
  }
  td_dtype da, db;
  int wa = 0, wb = 0;
  if (a->k == V_TENSOR) da = el_node(c, a)->dtype;
  else if (el_value_dtype(a, &da, &wa)) goto bad;
  if (b->k == V_TENSOR) db = el_node(c, b)->dtype;
  else if (el_value_dtype(b, &db, &wb)) goto bad;
  td_dtype t = promote(da, wa, db, wb);
  int ic = el_as_tensor(c, cond, TD_BOOL, cond->span);
  int ia = el_as_tensor(c, a, t, a->span), ib = el_as_tensor(c, b, t, b->span);
  if (ic < 0 || ia < 0 || ib < 0) return el_err();
  int r1, r2;
  td_dim s1[TD_MAX_RANK], s2[TD_MAX_RANK];
  if (el_broadcast_shapes(c, &c->g->nodes[ia], &c->g->nodes[ib], a->span, b->span, sp, &r1, s1)) return el_err();
  td_node tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.rank = r1;
  memcpy(tmp.shape, s1, sizeof s1);
  tmp.span.file = -1;
  if (el_broadcast_shapes(c, &c->g->nodes[ic], &tmp, cond->span, sp, sp, &r2, s2)) return el_err();
  int in[3] = {ic, ia, ib};
  return tensor_or_err(el_emit(c, TD_IR_WHERE, t, r2, s2, in, 3, NULL, sp), sp);
bad:
  td_error(c->diags, sp, "where needs numbers or tensors for its values");
  return el_err();
}

/* ---- sizes and axes ---- */

int el_size_arg(el_ctx *c, const td_value *v, td_dim *out, const char *what) {
  if (v->k == V_INT && v->i >= 0) { *out = v->i; return 0; }
  if (v->k == V_SIZE) { *out = v->dim; return 0; }
  if (v->k == V_FLOAT && v->f >= 0 && v->f == floor(v->f) && v->f < 9e15) { *out = (td_dim)v->f; return 0; }
  if (v->k == V_ERR) return -1;
  if (v->k == V_TENSOR) { el_err_host_read(c, v, what); return -1; }
  if (v->k == V_INT) td_error(c->diags, v->span, "%s must not be negative, found %lld", what, (long long)v->i);
  else td_error(c->diags, v->span, "%s must be a size (an integer), found %s", what, el_kind_name(v));
  return -1;
}

int el_shape_arg(el_ctx *c, const td_value *v, int *rank, td_dim *shape, td_span sp) {
  if (v->k == V_INT || v->k == V_SIZE) { /* a single size: a 1-D shape */
    *rank = 1;
    return el_size_arg(c, v, &shape[0], "a size");
  }
  if (v->k != V_LIST && v->k != V_TUPLE) {
    if (v->k == V_TENSOR) el_err_host_read(c, v, "a shape");
    else if (v->k != V_ERR) td_error(c->diags, v->span, "a shape is a list of sizes like [N, 4], found %s", el_kind_name(v));
    return -1;
  }
  if (v->n > TD_MAX_RANK) {
    td_error(c->diags, v->span, "tensors have at most %d dimensions, this shape has %d", TD_MAX_RANK, v->n);
    return -1;
  }
  *rank = v->n;
  for (int i = 0; i < v->n; i++)
    if (el_size_arg(c, &v->items[i], &shape[i], "a dimension")) return -1;
  (void)sp;
  return 0;
}

int el_axis(el_ctx *c, const td_value *v, int rank, int *out) {
  if (v->k != V_INT) {
    if (v->k == V_TENSOR) el_err_host_read(c, v, "an axis");
    else if (v->k != V_ERR) td_error(c->diags, v->span, "an axis must be an integer, found %s", el_kind_name(v));
    return -1;
  }
  int64_t a = v->i < 0 ? v->i + rank : v->i;
  if (a < 0 || a >= rank) {
    td_diag *g = td_error(c->diags, v->span, "axis %lld is out of range for a tensor of rank %d", (long long)v->i, rank);
    td_diag_help(c->diags, g, "valid axes are %d..%d (negative axes count from the end)", -rank, rank - 1);
    return -1;
  }
  *out = (int)a;
  return 0;
}

/* ---- movement ---- */

td_value el_reshape(el_ctx *c, const td_value *x, int rank, const td_dim *shape, td_span sp) {
  int in = el_as_tensor(c, x, x->k == V_TENSOR ? el_node(c, x)->dtype : TD_F32, x->span);
  if (in < 0) return el_err();
  const td_node *n = &c->g->nodes[in];
  if (n->rank == rank && !memcmp(n->shape, shape, (size_t)rank * sizeof *shape)) return el_tensor(in, sp);
  td_dim from = el_numel(c, n->rank, n->shape), to = el_numel(c, rank, shape);
  if (TD_DIM_IS_BAD(to) || TD_DIM_IS_BAD(from)) {
    char t2[256];
    el_err_overflow(c, sp, "the element count of %s does not fit",
                    td_type_str(c->g, n->dtype, rank, shape, t2, sizeof t2));
    return el_err();
  }
  if (from != to) {
    char t1[256], t2[256];
    td_diag *g = td_error(c->diags, sp, "cannot reshape %s into %s: the element counts differ",
                          tstr(c, n, t1, sizeof t1),
                          td_type_str(c->g, n->dtype, rank, shape, t2, sizeof t2));
    td_diag_note(c->diags, g, n->span, "the tensor's shape %s comes from here", t1);
    return el_err();
  }
  return tensor_or_err(el_emit(c, TD_IR_RESHAPE, n->dtype, rank, shape, &in, 1, NULL, sp), sp);
}

td_value el_broadcast_to(el_ctx *c, const td_value *x, int rank, const td_dim *shape, td_span sp) {
  td_dtype t = TD_F32;
  int weak;
  if (x->k == V_TENSOR) t = el_node(c, x)->dtype;
  else if (el_value_dtype(x, &t, &weak)) t = TD_F32;
  if (x->k == V_FLOAT) t = TD_F32;
  int in = el_as_tensor(c, x, t, x->span);
  if (in < 0) return el_err();
  const td_node *n = &c->g->nodes[in];
  td_node target;
  memset(&target, 0, sizeof target);
  target.rank = rank;
  memcpy(target.shape, shape, (size_t)rank * sizeof *shape);
  int ok = n->rank <= rank;
  for (int i = 0; ok && i < n->rank; i++) {
    td_dim d = n->shape[i], o = shape[rank - n->rank + i];
    ok = d == o || d == 1;
  }
  if (!ok) {
    char t1[256], t2[256];
    td_diag *g = td_error(c->diags, sp, "cannot broadcast %s to %s", tstr(c, n, t1, sizeof t1),
                          td_type_str(c->g, n->dtype, rank, shape, t2, sizeof t2));
    td_diag_note(c->diags, g, n->span, "the tensor's shape %s comes from here", t1);
    return el_err();
  }
  if (n->rank == rank && !memcmp(n->shape, shape, (size_t)rank * sizeof *shape)) return el_tensor(in, sp);
  return tensor_or_err(el_emit(c, TD_IR_BROADCAST, n->dtype, rank, shape, &in, 1, NULL, sp), sp);
}

td_value el_permute(el_ctx *c, const td_value *x, const int *perm, td_span sp) {
  const td_node *n = el_node(c, x);
  td_attr at;
  memset(&at, 0, sizeof at);
  td_dim shape[TD_MAX_RANK];
  int ident = 1;
  for (int i = 0; i < n->rank; i++) {
    at.perm[i] = perm[i];
    shape[i] = n->shape[perm[i]];
    ident &= perm[i] == i;
  }
  if (ident) return el_tensor(x->node, sp);
  int in = x->node;
  return tensor_or_err(el_emit(c, TD_IR_PERMUTE, n->dtype, n->rank, shape, &in, 1, &at, sp), sp);
}

td_value el_reduce(el_ctx *c, td_op op, const td_value *x, uint32_t axes, int keepdims, td_span sp) {
  td_dtype t = x->k == V_TENSOR ? el_node(c, x)->dtype : TD_F32;
  if (t == TD_BOOL && (op == TD_IR_SUM || op == TD_IR_PROD)) t = TD_I64;
  int in = el_as_tensor(c, x, t, x->span);
  if (in < 0) return el_err();
  const td_node *n = &c->g->nodes[in];
  td_dim kept[TD_MAX_RANK], dropped[TD_MAX_RANK];
  int nd = 0;
  for (int i = 0; i < n->rank; i++) {
    kept[i] = (axes >> i & 1) ? 1 : n->shape[i];
    if (!(axes >> i & 1)) dropped[nd++] = n->shape[i];
  }
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axes = axes;
  td_dtype out = (op == TD_IR_ARGMAX || op == TD_IR_ARGMIN) ? TD_I64 : t;
  int r = el_emit(c, op, out, n->rank, kept, &in, 1, &at, sp);
  if (r < 0) return el_err();
  td_value v = el_tensor(r, sp);
  if (keepdims || axes == 0) return v;
  return el_reshape(c, &v, nd, dropped, sp);
}

/* ---- matmul ---- */

td_value el_matmul(el_ctx *c, const td_value *a, const td_value *b, td_span sp) {
  if (a->k == V_ERR || b->k == V_ERR) return el_err();
  if (a->k != V_TENSOR || b->k != V_TENSOR) {
    td_error(c->diags, sp, "@ multiplies tensors, found %s and %s", el_kind_name(a), el_kind_name(b));
    return el_err();
  }
  const td_node *na = el_node(c, a), *nb = el_node(c, b);
  if (na->rank == 0 || nb->rank == 0) {
    td_diag *g = td_error(c->diags, sp, "@ needs tensors of rank 1 or more; use * to scale by a scalar");
    (void)g;
    return el_err();
  }
  td_dtype t = td_dtype_promote(na->dtype, nb->dtype);
  if (!td_dtype_is_float(t)) t = t == TD_BOOL ? TD_F32 : t;
  td_value va = el_cast(c, a, t, a->span), vb = el_cast(c, b, t, b->span);
  if (va.k == V_ERR || vb.k == V_ERR) return el_err();
  na = el_node(c, &va);
  nb = el_node(c, &vb);
  int a1 = na->rank == 1, b1 = nb->rank == 1;
  if (a1) { td_dim s[2] = {1, na->shape[0]}; va = el_reshape(c, &va, 2, s, a->span); }
  if (b1) { td_dim s[2] = {nb->shape[0], 1}; vb = el_reshape(c, &vb, 2, s, b->span); }
  if (va.k == V_ERR || vb.k == V_ERR) return el_err();
  na = el_node(c, &va);
  nb = el_node(c, &vb);
  td_dim k1 = na->shape[na->rank - 1], k2 = nb->shape[nb->rank - 2];
  if (k1 != k2) {
    char t1[256], t2[256], d1[64], d2[64];
    td_diag *g = td_error(c->diags, sp, "matmul of %s and %s: the inner sizes %s and %s differ",
                          tstr(c, el_node(c, a), t1, sizeof t1), tstr(c, el_node(c, b), t2, sizeof t2),
                          td_dim_str(c->g, k1, d1, sizeof d1), td_dim_str(c->g, k2, d2, sizeof d2));
    td_diag_note(c->diags, g, el_node(c, a)->span, "the left operand's shape %s comes from here", t1);
    td_diag_note(c->diags, g, el_node(c, b)->span, "the right operand's shape %s comes from here", t2);
    td_diag_help(c->diags, g, "a @ b needs a[..., M, K] and b[..., K, N]; did you mean to transpose one (b.T)?");
    return el_err();
  }
  /* batch dims broadcast */
  td_node ba, bb;
  memset(&ba, 0, sizeof ba);
  memset(&bb, 0, sizeof bb);
  ba.rank = na->rank - 2;
  bb.rank = nb->rank - 2;
  memcpy(ba.shape, na->shape, (size_t)ba.rank * sizeof(td_dim));
  memcpy(bb.shape, nb->shape, (size_t)bb.rank * sizeof(td_dim));
  ba.dtype = bb.dtype = t;
  ba.span = na->span;
  bb.span = nb->span;
  for (int i = 1; i <= ba.rank && i <= bb.rank; i++) {
    td_dim da = ba.shape[ba.rank - i], db = bb.shape[bb.rank - i];
    if (da != db && da != 1 && db != 1) {
      char t1[256], t2[256], d1[64], d2[64];
      td_diag *g = td_error(c->diags, sp, "matmul of %s and %s: the batch dimensions %s and %s differ",
                            tstr(c, el_node(c, a), t1, sizeof t1), tstr(c, el_node(c, b), t2, sizeof t2),
                            td_dim_str(c->g, da, d1, sizeof d1), td_dim_str(c->g, db, d2, sizeof d2));
      td_diag_note(c->diags, g, el_node(c, a)->span, "the left operand's shape %s comes from here", t1);
      td_diag_note(c->diags, g, el_node(c, b)->span, "the right operand's shape %s comes from here", t2);
      td_diag_help(c->diags, g, "the dimensions before the last two broadcast like elementwise operands "
                   "(equal or 1, aligned from the right)");
      return el_err();
    }
  }
  int br;
  td_dim shape[TD_MAX_RANK];
  if (el_broadcast_shapes(c, &ba, &bb, a->span, b->span, sp, &br, shape)) return el_err();
  shape[br] = na->shape[na->rank - 2];
  shape[br + 1] = nb->shape[nb->rank - 1];
  int in[2] = {va.node, vb.node};
  int r = el_emit(c, TD_IR_MATMUL, t, br + 2, shape, in, 2, NULL, sp);
  if (r < 0) return el_err();
  td_value v = el_tensor(r, sp);
  if (!a1 && !b1) return v;
  /* drop the axes NumPy drops for 1-D operands */
  td_dim out[TD_MAX_RANK];
  int n = 0;
  for (int i = 0; i < br; i++) out[n++] = shape[i];
  if (!a1) out[n++] = shape[br];
  if (!b1) out[n++] = shape[br + 1];
  return el_reshape(c, &v, n, out, sp);
}

/* ---- concat ---- */

/* A CONCAT node has at most this many inputs; more are concatenated in a
 * tree of CONCATs (the sums of sizes were checked before, so none
 * overflows). */
#define CONCAT_FANIN 64

/* CONCAT of the nodes ids[0..n) along ax (already cast to t, of rank
 * rank, equal but for ax): the node, or -1. */
static int concat_tree(el_ctx *c, td_dtype t, int rank, int ax, int *ids, int n, td_span sp) {
  if (n == 1) return ids[0];
  while (n > CONCAT_FANIN) {
    int m = 0;
    for (int i = 0; i < n; i += CONCAT_FANIN, m++) {
      ids[m] = concat_tree(c, t, rank, ax, ids + i, n - i < CONCAT_FANIN ? n - i : CONCAT_FANIN, sp);
      if (ids[m] < 0) return -1;
    }
    n = m;
  }
  td_dim shape[TD_MAX_RANK];
  memcpy(shape, c->g->nodes[ids[0]].shape, sizeof shape);
  for (int i = 1; i < n; i++) shape[ax] = td_dim_add(c->g, shape[ax], c->g->nodes[ids[i]].shape[ax]);
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = ax;
  return n == 1 ? ids[0] : el_emit(c, TD_IR_CONCAT, t, rank, shape, ids, n, &at, sp);
}

td_value el_concat(el_ctx *c, const td_value *xs, int n, int axis, td_span sp) {
  if (n == 0) { td_error(c->diags, sp, "concat needs at least one tensor"); return el_err(); }
  int *ids = td_arena_alloc(c->arena, (size_t)n * sizeof *ids);
  if (!ids) { td_error(c->diags, sp, "out of memory"); return el_err(); }
  td_dtype t = TD_BOOL;
  for (int i = 0; i < n; i++) {
    if (xs[i].k == V_ERR) return el_err();
    if (xs[i].k != V_TENSOR) { td_error(c->diags, xs[i].span, "concat needs tensors, found %s", el_kind_name(&xs[i])); return el_err(); }
    t = i == 0 ? el_node(c, &xs[i])->dtype : td_dtype_promote(t, el_node(c, &xs[i])->dtype);
  }
  td_node first = *el_node(c, &xs[0]); /* a copy: emitting casts may move nodes */
  const td_node *f = &first;
  int rank = f->rank;
  if (rank == 0) { td_error(c->diags, sp, "cannot concat rank-0 tensors; use stack"); return el_err(); }
  int ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank) { td_error(c->diags, sp, "axis %d is out of range for rank %d", axis, rank); return el_err(); }
  td_dim shape[TD_MAX_RANK];
  memcpy(shape, f->shape, sizeof shape);
  shape[ax] = 0;
  for (int i = 0; i < n; i++) {
    const td_node *x = el_node(c, &xs[i]);
    int ok = x->rank == rank;
    for (int k = 0; ok && k < rank; k++) ok = k == ax || x->shape[k] == f->shape[k];
    if (!ok) {
      char t1[256], t2[256];
      td_diag *g = td_error(c->diags, sp, "concat along axis %d: %s does not fit %s (all other dimensions must match)",
                            ax, tstr(c, x, t1, sizeof t1), tstr(c, f, t2, sizeof t2));
      td_diag_note(c->diags, g, x->span, "%s comes from here", t1);
      td_diag_note(c->diags, g, f->span, "%s comes from here", t2);
      return el_err();
    }
    td_dim sum = td_dim_add(c->g, shape[ax], x->shape[ax]);
    if (TD_DIM_IS_BAD(sum)) {
      char d1[128], d2[128];
      el_err_overflow(c, sp, "concat along axis %d: %s + %s does not fit", ax,
                      td_dim_str(c->g, shape[ax], d1, sizeof d1), td_dim_str(c->g, x->shape[ax], d2, sizeof d2));
      return el_err();
    }
    shape[ax] = sum;
    ids[i] = el_as_tensor(c, &xs[i], t, xs[i].span);
    if (ids[i] < 0) return el_err();
  }
  if (n == 1) return el_tensor(ids[0], sp);
  return tensor_or_err(concat_tree(c, t, rank, ax, ids, n, sp), sp);
}

/* ---- indexing ---- */

/* A compile-time index value (int or size) into *d; negative literal
 * indices count from `len`.  -1 with a diagnostic otherwise. */
static int index_pos(el_ctx *c, const td_value *v, td_dim len, td_dim *d) {
  if (v->k == V_INT && v->i < 0) {
    *d = td_dim_add(c->g, len, td_dim_const(c->g, v->i));
    return TD_DIM_IS_BAD(*d) ? el_err_overflow(c, v->span, "the index does not fit") : 0;
  }
  return el_size_arg(c, v, d, "an index");
}

/* Is d a literal or a polynomial that cannot be negative for sizes >= 0?
 * (we only reject provably negative literals) */
static int neg_literal(el_ctx *c, td_dim d) {
  if (TD_DIM_IS_CONST(d) || TD_DIM_IS_BAD(d)) return 0;
  const td_poly *p = &c->g->dims[-d - 1];
  return p->n == 1 && p->t[0].n == 0 && p->t[0].coef < 0;
}


/* Whether d is a constant (also a negative one, which interns as a
 * polynomial); its value in *v. */
static int lit_value(el_ctx *c, td_dim d, int64_t *v) {
  if (TD_DIM_IS_CONST(d)) { *v = d; return 1; }
  if (TD_DIM_IS_BAD(d)) return 0;
  const td_poly *p = &c->g->dims[-d - 1];
  if (p->n == 1 && p->t[0].n == 0) { *v = p->t[0].coef; return 1; }
  return 0;
}

/* Applies per-axis items to node `in`: kinds[i] 0 = full, 1 = index, 2 = slice. */
td_value el_apply_index(el_ctx *c, int in, const int *kind, const td_value *lo,
                        const td_value *hi, const td_value *step, td_span sp);
td_value el_apply_index(el_ctx *c, int in, const int *kind, const td_value *lo,
                        const td_value *hi, const td_value *step, td_span sp) {
  const td_node *n = &c->g->nodes[in];
  td_attr at;
  memset(&at, 0, sizeof at);
  td_dim shape[TD_MAX_RANK], out[TD_MAX_RANK];
  int nout = 0, any = 0;
  for (int i = 0; i < n->rank; i++) {
    td_dim len = n->shape[i];
    at.step[i] = 1;
    at.start[i] = 0;
    shape[i] = len;
    if (kind[i] == 0) { out[nout++] = len; continue; }
    any = 1;
    if (kind[i] == 1) {
      td_dim p;
      if (index_pos(c, &lo[i], len, &p)) return el_err();
      if ((TD_DIM_IS_CONST(p) && TD_DIM_IS_CONST(len) && p >= len) || neg_literal(c, p)) {
        char d[64];
        td_error(c->diags, lo[i].span, "index %lld is out of range for a dimension of size %s",
                 lo[i].k == V_INT ? (long long)lo[i].i : 0LL, td_dim_str(c->g, len, d, sizeof d));
        return el_err();
      }
      at.start[i] = p;
      shape[i] = 1;
      continue;
    }
    int64_t st = 1;
    if (step[i].k == V_INT) st = step[i].i;
    else if (step[i].k != V_NONE) { td_error(c->diags, step[i].span, "a slice step must be a literal integer"); return el_err(); }
    if (st == 0) { td_error(c->diags, step[i].span, "a slice step cannot be zero"); return el_err(); }
    td_dim a, b = 0, cnt;
    int to_front = 0; /* negative step without a stop: down to index 0 */
    if (st > 0) {
      if (lo[i].k == V_NONE) a = 0;
      else if (index_pos(c, &lo[i], len, &a)) return el_err();
      if (hi[i].k == V_NONE) b = len;
      else if (index_pos(c, &hi[i], len, &b)) return el_err();
    } else {
      if (lo[i].k == V_NONE) a = td_dim_sub(c->g, len, 1);
      else if (index_pos(c, &lo[i], len, &a)) return el_err();
      if (hi[i].k == V_NONE) to_front = 1;
      else if (index_pos(c, &hi[i], len, &b)) return el_err();
    }
    /* |st| as unsigned: -INT64_MIN does not fit in an int64 */
    uint64_t m = st > 0 ? (uint64_t)st : 0 - (uint64_t)st;
    int64_t A = 0, B = 0;
    if (TD_DIM_IS_CONST(len) && lit_value(c, a, &A) && (to_front || lit_value(c, b, &B))) {
      /* Python's clamping on literal sizes (bounds past either end) */
      int64_t L = len;
      if (st > 0) {
        A = A < 0 ? 0 : A > L ? L : A;
        B = B < 0 ? 0 : B > L ? L : B;
        cnt = B > A ? (td_dim)(1 + (uint64_t)(B - A - 1) / m) : 0;
      } else {
        A = A < -1 ? -1 : A > L - 1 ? L - 1 : A;
        B = to_front ? -1 : B < -1 ? -1 : B > L - 1 ? L - 1 : B;
        cnt = A > B ? (td_dim)(1 + (uint64_t)(A - B - 1) / m) : 0;
      }
      a = cnt > 0 ? A : 0;
    } else {
      /* symbolic: no clamping; ceil(span / |step|) elements from a */
      td_dim span = st > 0 ? td_dim_sub(c->g, b, a) : to_front ? td_dim_add(c->g, a, 1) : td_dim_sub(c->g, a, b);
      if (TD_DIM_IS_BAD(span)) {
        el_err_overflow(c, sp, "the slice's bounds do not fit");
        return el_err();
      }
      if (neg_literal(c, span)) { td_error(c->diags, sp, "this slice is empty for every size (stop before start)"); return el_err(); }
      if (td_dim_ceil_div(c->g, span, m, &cnt)) {
        char d[128];
        td_dim_str(c->g, span, d, sizeof d);
        int paren = strchr(d, ' ') != NULL;
        td_diag *g = td_error(c->diags, sp, "slice of %s elements with step %lld: the count ceil(%s%s%s / %llu) "
                              "is not a polynomial in the symbolic sizes", d, (long long)st, paren ? "(" : "", d,
                              paren ? ")" : "", (unsigned long long)m);
        td_diag_help(c->diags, g, "a count is a polynomial when every coefficient of the span except the "
                     "constant is a multiple of the step (e.g. 2*N elements with step 2)");
        return el_err();
      }
    }
    at.start[i] = a;
    at.step[i] = st;
    shape[i] = cnt;
    out[nout++] = cnt;
  }
  if (!any) return el_tensor(in, sp);
  int r = el_emit(c, TD_IR_SLICE, n->dtype, n->rank, shape, &in, 1, &at, sp);
  if (r < 0) return el_err();
  td_value v = el_tensor(r, sp);
  if (nout == n->rank) return v;
  return el_reshape(c, &v, nout, out, sp);
}

/* kexpr.c - the evaluator shared by the CPU and CUDA code generators
 * (kexpr.h): a node's value at an index, over a backend's values.
 *
 *   outside the kernel  a load from the node's buffer;
 *   elementwise         each input at its broadcast index (index.c), then
 *                       the backend's emitter for the op (CAST: the
 *                       conversion rules below);
 *   movement            the input at the derived index (index.c);
 *   concat              a branch per operand on ix[axis], the operand read
 *                       at ix[axis] - (its offset);
 *   gather              the index value read at the index's axes, wrapped
 *                       and checked by the backend, then the data read
 *                       with it on the gathered axis;
 *   creation            const and dim as literals, arange as a formula in
 *                       f64 (floats) or i64 (ints), random by the backend.
 *
 * The order of the backend calls is the order both generators always made
 * them (a symbolic size is numbered in the backend's table when first
 * asked for, and locals are numbered as made): the CPU generator's gccjit
 * code did not change when this file took the walk over, and the CUDA
 * generator's text changed only where it now spells a formula through the
 * shared ops (arange, conversions from bool, parentheses).
 */
#include <stdio.h>
#include <string.h>

#include "compiler/kexpr.h"
#include "compiler/plan_impl.h"

/* Every elementwise op of ops.def has a C spelling: the CUDA backend
 * emits it (gpu/codegen_cuda_expr.c), and an op without one would have no
 * CUDA code.  (The CPU backend's emitter table fails to build instead.) */
#define KX_ELEMENTWISE(K) ((K) == TD_K_UNARY || (K) == TD_K_BINARY || (K) == TD_K_COMPARE || (K) == TD_K_TERNARY)
#define TD_OP(E, name, K, A, C) \
  _Static_assert(!KX_ELEMENTWISE(K) || sizeof(C) > 1, "ops.def: elementwise op '" name "' has no C spelling");
#include "lang/ops.def"
#undef TD_OP

static const td_node *ND(const td_kxgen *x, int n) { return &x->ix.g->nodes[n]; }

/* Records "internal compiler error ..." style messages naming the kernel. */
static void *fail(const td_kxgen *x, const char *what, int n) {
  char msg[256];
  snprintf(msg, sizeof msg, what, x->k ? x->k->name : "?", td_ops[ND(x, n)->op].name, n);
  x->ops->fail(x->ix.be, msg);
  return NULL;
}

td_kxmark td_kx_mark(const td_kxgen *x) { return (td_kxmark){*x->n_memo, *x->ix.n_memo}; }

void td_kx_release(const td_kxgen *x, td_kxmark m) {
  *x->n_memo = m.memo;
  *x->ix.n_memo = m.ixmemo;
}

/* ---- conversions ---- */

void *td_kx_convert(const td_kxgen *x, void *a, td_dtype from, td_dtype to) {
  const td_kx_ops *o = x->ops;
  void *be = x->ix.be;
  if (from == to) return a;
  if (td_dtype_is_half(from)) {   /* widen exactly, then as from f32 */
    a = o->half_to_f32(be, a, from);
    from = TD_F32;
    if (to == TD_F32) return a;
  }
  if (td_dtype_is_half(to)) {     /* one rounding: f64 and ints through f32 rounded to odd */
    if (from != TD_F32) {
      if (from != TD_F64) a = td_kx_convert(x, a, from, TD_F64);
      a = o->f64_to_f32_odd(be, a);
    }
    return o->f32_to_half(be, a, to);
  }
  if (to == TD_BOOL) {
    void *args[2] = {a, o->lit(be, from, 0, 0)};
    return o->op(be, TD_IR_NE, from, args);
  }
  if (from == TD_BOOL) return o->cast(be, o->cast(be, a, TD_BOOL, TD_I32), TD_I32, to);
  if (td_dtype_is_float(from) && !td_dtype_is_float(to)) return o->f2i(be, a, from, to);
  return o->cast(be, a, from, to);
}

/* ---- creation, gather, concat ---- */

/* arange: attr.f + attr.f2 * i in f64 (floats), attr.i + attr.i2 * i in
 * i64 (ints, wrapping), converted to the node's dtype. */
static void *arange_value(const td_kxgen *x, const td_node *nd, const td_ix *ix) {
  const td_kx_ops *o = x->ops;
  void *be = x->ix.be;
  int fl = td_dtype_is_float(nd->dtype);
  td_dtype w = fl ? TD_F64 : TD_I64;
  void *i = fl ? td_kx_convert(x, ix->v[0], TD_I64, TD_F64) : ix->v[0];
  void *prod[2] = {o->lit(be, w, nd->attr.f2, nd->attr.i2), i};
  void *sum[2] = {o->lit(be, w, nd->attr.f, nd->attr.i), NULL};
  if (!(sum[1] = o->op(be, TD_IR_MUL, w, prod))) return NULL;
  void *v = o->op(be, TD_IR_ADD, w, sum);
  return v ? td_kx_convert(x, v, w, nd->dtype) : NULL;
}

/* take(x, idx, axis): the index's value at ix's axes [axis, axis + rank of
 * idx), then x at ix with those axes replaced by that value. */
static void *gather_value(const td_kxgen *x, int n, const td_ix *ix) {
  const td_node *nd = ND(x, n), *xs = ND(x, nd->in[0]), *id = ND(x, nd->in[1]);
  int ax = nd->attr.axis, ri = id->rank;
  void *be = x->ix.be;
  td_ix *ii = x->ix.ops->ix_new(be, ri);
  for (int t = 0; t < ri; t++) {
    ii->v[t] = ix->v[ax + t];
    ii->zero[t] = ix->zero[ax + t];
  }
  void *iv = td_kx_eval(x, nd->in[1], ii);
  if (!iv) return NULL;
  iv = td_kx_convert(x, iv, id->dtype, TD_I64);
  td_kxbranch b;
  memset(&b, 0, sizeof b);
  void *g = x->ops->take_begin(be, &b, n, nd->dtype, iv, xs->shape[ax]);
  if (!g) return NULL;
  td_ix *xi = x->ix.ops->ix_new(be, xs->rank);
  for (int k = 0; k < xs->rank; k++) {
    int from = k < ax ? k : k + ri - 1;
    xi->v[k] = k == ax ? g : ix->v[from];
    xi->zero[k] = k == ax ? 0 : ix->zero[from];
  }
  td_kxmark m = td_kx_mark(x);   /* what is evaluated in the branch is not known past it */
  void *v = td_kx_eval(x, nd->in[0], xi);
  td_kx_release(x, m);
  return v ? x->ops->take_end(be, &b, v) : NULL;
}

static void *concat_value(const td_kxgen *x, int n, const td_ix *ix) {
  const td_node *nd = ND(x, n);
  const td_ix_ops *io = x->ix.ops;
  void *be = x->ix.be;
  int ax = nd->attr.axis;
  td_kxbranch b;
  memset(&b, 0, sizeof b);
  x->ops->cat_begin(be, &b, nd->dtype);
  td_dim off = 0;
  for (int j = 0; j < nd->n_in; j++) {
    const td_node *in = ND(x, nd->in[j]);
    td_dim end = td_dim_add(x->ix.g, off, in->shape[ax]);
    x->ops->cat_case(be, &b, ix->v[ax], end, j + 1 == nd->n_in);
    td_ix *xi = io->ix_new(be, in->rank);
    *xi = *ix;
    void *d = x->ops->isub(be, ix->v[ax], io->size(be, off));
    xi->v[ax] = io->keep_coords ? io->keep(be, d) : d;
    xi->zero[ax] = 0;
    td_kxmark m = td_kx_mark(x);
    void *v = td_kx_eval(x, nd->in[j], xi);
    td_kx_release(x, m);
    if (!v) return NULL;
    x->ops->cat_value(be, &b, v);
    off = end;
  }
  return x->ops->cat_end(be, &b);
}

/* ---- the update rules of reductions ---- */

/* op on two values (a bool for comparisons and and/or). */
static void *op2(const td_kxgen *x, td_op op, td_dtype dt, void *a, void *b) {
  void *args[2] = {a, b};
  return x->ops->op(x->ix.be, op, dt, args);
}

void *td_kx_fold(const td_kxgen *x, td_op red, td_dtype dt, td_dtype acc_dt, void *acc, void *v) {
  void *w = td_dtype_is_float(dt) ? x->ops->cast(x->ix.be, v, dt, acc_dt) : td_kx_convert(x, v, dt, acc_dt);
  return op2(x, red == TD_IR_PROD ? TD_IR_MUL : TD_IR_ADD, acc_dt, acc, w);
}

void *td_kx_better(const td_kxgen *x, td_op red, td_dtype dt, void *v, void *best) {
  int is_max = red == TD_IR_RMAX || red == TD_IR_ARGMAX;
  void *b = op2(x, is_max ? TD_IR_GT : TD_IR_LT, dt, v, best);
  if (!td_dtype_is_float(dt)) return b;
  void *vnan = op2(x, TD_IR_NE, dt, v, v);
  if (red == TD_IR_ARGMAX || red == TD_IR_ARGMIN) vnan = op2(x, TD_IR_AND, TD_BOOL, vnan, op2(x, TD_IR_EQ, dt, best, best));
  return op2(x, TD_IR_OR, TD_BOOL, b, vnan);
}

void *td_kx_arg_takes(const td_kxgen *x, td_op red, td_dtype dt, void *v, void *best, void *idx) {
  void *none = op2(x, TD_IR_LT, TD_I64, idx, x->ops->lit(x->ix.be, TD_I64, 0, 0));
  return op2(x, TD_IR_OR, TD_BOOL, none, td_kx_better(x, red, dt, v, best));
}

void *td_kx_arg_wins(const td_kxgen *x, td_op red, td_dtype dt, void *av, void *ai, void *bv, void *bi) {
  void *be = x->ix.be, *zero = x->ops->lit(be, TD_I64, 0, 0);
  void *tie = op2(x, TD_IR_EQ, dt, bv, av);
  if (td_dtype_is_float(dt))
    tie = op2(x, TD_IR_OR, TD_BOOL, tie, op2(x, TD_IR_AND, TD_BOOL, op2(x, TD_IR_NE, dt, bv, bv), op2(x, TD_IR_NE, dt, av, av)));
  void *wins = op2(x, TD_IR_OR, TD_BOOL, td_kx_better(x, red, dt, bv, av),
                   op2(x, TD_IR_AND, TD_BOOL, tie, op2(x, TD_IR_LT, TD_I64, bi, ai)));
  wins = op2(x, TD_IR_OR, TD_BOOL, op2(x, TD_IR_LT, TD_I64, ai, zero), wins);
  return op2(x, TD_IR_AND, TD_BOOL, op2(x, TD_IR_GE, TD_I64, bi, zero), wins);
}

/* ---- the walk ---- */

static void *elementwise(const td_kxgen *x, int n, const td_ix *ix) {
  const td_node *nd = ND(x, n);
  void *a[3] = {NULL, NULL, NULL};
  for (int k = 0; k < nd->n_in && k < 3; k++)
    if (!(a[k] = td_kx_eval(x, nd->in[k], td_ix_child(&x->ix, n, k, ix)))) return NULL;
  td_dtype in = ND(x, nd->in[0])->dtype;
  if (nd->op == TD_IR_CAST) return td_kx_convert(x, a[0], in, nd->dtype);
  void *v = x->ops->op(x->ix.be, nd->op, td_ops[nd->op].kind == TD_K_COMPARE ? in : nd->dtype, a);
  if (!v && !x->ops->failed(x->ix.be)) {
    char what[128];
    snprintf(what, sizeof what, "kernel %%s: the %s backend cannot compute op '%%s' (node %%%%%%d)", x->ops->name);
    return fail(x, what, n);
  }
  return v;
}

static void *compute(const td_kxgen *x, int n, const td_ix *ix) {
  const td_node *nd = ND(x, n);
  void *be = x->ix.be;
  switch (nd->op) {
  case TD_IR_CONST: return x->ops->lit(be, nd->dtype, nd->attr.f, nd->attr.i);
  case TD_IR_DIM: return x->ix.ops->size(be, nd->attr.dim);
  case TD_IR_ARANGE: return arange_value(x, nd, ix);
  case TD_IR_RAND: case TD_IR_RANDN: return x->ops->random(be, n, ix);
  case TD_IR_GATHER: return gather_value(x, n, ix);
  case TD_IR_CONCAT: return concat_value(x, n, ix);
  case TD_IR_PERMUTE: case TD_IR_RESHAPE: case TD_IR_BROADCAST: case TD_IR_SLICE:
    return td_kx_eval(x, nd->in[0], td_ix_child(&x->ix, n, 0, ix));
  default: break;
  }
  if (tdc_is_elementwise(nd->op)) return elementwise(x, n, ix);
  return fail(x, "internal compiler error in kernel %s: cannot evaluate op '%s' (node %%%d) here", n);
}

static void memo_push(const td_kxgen *x, int n, const td_ix *ix, void *v) {
  if (*x->n_memo == *x->cap_memo) {
    int cap = *x->cap_memo ? 2 * *x->cap_memo : 64;
    td_kxmemo *m = td_arena_alloc(x->ix.arena, (size_t)cap * sizeof *m);
    if (!m) return;  /* no memo: values are recomputed, still correct */
    if (*x->n_memo) memcpy(m, *x->memo, (size_t)*x->n_memo * sizeof *m);
    *x->memo = m;
    *x->cap_memo = cap;
  }
  (*x->memo)[(*x->n_memo)++] = (td_kxmemo){n, ix, v};
}

void *td_kx_eval(const td_kxgen *x, int n, const td_ix *ix) {
  void *be = x->ix.be;
  if (x->ops->failed(be)) return NULL;
  if (x->mm_acc && n == x->k->matmul) return x->mm_acc;
  if (x->red_val[n]) return x->red_val[n];
  for (int i = *x->n_memo - 1; i >= 0; i--)
    if ((*x->memo)[i].node == n && (*x->memo)[i].ix == ix) return (*x->memo)[i].val;
  const td_node *nd = ND(x, n);
  void *v;
  if (!x->in_k[n]) v = x->ops->load(be, n, ix);
  else if (td_ops[nd->op].kind == TD_K_REDUCE || nd->op == TD_IR_MATMUL)
    return fail(x, "internal compiler error in kernel %s: %s %%%d read outside its loop", n);
  else v = compute(x, n, ix);
  if (!v || x->ops->failed(be)) return NULL;
  if (nd->op != TD_IR_CONST) v = x->ops->keep(be, nd->dtype, v);
  memo_push(x, n, ix, v);
  return v;
}

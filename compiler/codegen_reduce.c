/* codegen_reduce.c - the body of a REDUCE (row) kernel.
 *
 * For every kept index (outer loops, the parallel one over [lo, hi)), each
 * stage (plan.h's td_kstage: independent reductions, in the order eager
 * mode computes them) is one pass over the row:
 *   - when the only reduced axis (of a size other than 1) is the innermost
 *     one, the stage's float sums, max and min keep 16 lanes each ("16
 *     lanes" below), in exactly the order in which the interpreter sums a
 *     contiguous run, so these sums are eager mode's bit for bit; when the
 *     root is softmax's exp(x - m) / s, exp is computed once and stored
 *     ("stored exp");
 *   - the stage's other reductions (and all of them in other kernels) run
 *     in one loop nest over the reduced axes updating accumulators: f64 for
 *     float sums and products, i64 for integers, the element type for
 *     max/min, value and first index for argmax/argmin.  The innermost
 *     reduced loop is unrolled into LANES interleaved lanes, each with its
 *     own accumulators, combined after the loop (a remainder loop uses lane
 *     0) - except where a float sum or product must follow eager mode's
 *     order (the innermost axis kept, or one reduced axis): there one lane
 *     walks the reduced elements in memory order, as the interpreter does;
 *   - the finished values become locals (red_val) that cg_eval returns
 *     for the reductions from then on;
 *   - then either the root is stored once per row, or a last loop nest
 *     stores it for every element of the row.
 *
 * What each reduction keeps (its accumulators, their dtypes and
 * identities, the finished dtype) is rowplan.c's analysis, shared with the
 * CUDA generator; this file chooses the loops and emits the code.
 */
#include <string.h>

#include "compiler/jit_impl.h"
#include "compiler/rowplan.h"

#define LANES 4

/* The index of node n (whose shape broadcasts into the kernel space, or is
 * squeeze-equal to a row) at the current row: kept axes from row, reduced
 * axes 0 (index.c's td_ix_row, shared with the CUDA backend). */
cg_ix *cg_row_ix(cg *c, int n, const cg_ix *row) {
  td_ixgen x = cg_ixgen(c);
  return td_ix_row(&x, &c->g->nodes[n], c->k->space, c->k->rank, c->k->red_axes, row);
}

/* ---- reductions ---- */

/* One reduction of a stage in one lane: its analysis (rowplan.h, shared
 * by the lanes and with the CUDA backend) and this lane's accumulators. */
typedef struct racc {
  const td_rred *p;
  gcc_jit_lvalue *acc, *idx;   /* idx: arg index */
} racc;

/* An identity of kind k (rowplan.h) and value f or i, for an accumulator
 * of dtype acc_dt. */
static gcc_jit_rvalue *identity(cg *c, td_rinit k, td_dtype acc_dt, double f, int64_t i) {
  if (k == TD_RI_ZERO || k == TD_RI_ONE)
    return acc_dt == TD_F64 ? gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, f) : cg_i64(c, i);
  return cg_const(c, acc_dt, f, i);
}

static gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static gcc_jit_rvalue *cmpv(cg *c, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(c->ctx, NULL, op, a, b);
}

static gcc_jit_rvalue *binv(cg *c, enum gcc_jit_binary_op op, gcc_jit_type *t, gcc_jit_rvalue *a,
                            gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(c->ctx, NULL, op, t, a, b);
}

static gcc_jit_rvalue *to_f64(cg *c, gcc_jit_rvalue *v) {
  return gcc_jit_context_new_cast(c->ctx, NULL, v, c->t_f64);
}

/* The dtype of reduction r's input. */
static td_dtype in_dt(const cg *c, const racc *r) { return c->g->nodes[r->p->src].dtype; }

static td_op red_op(const cg *c, const racc *r) { return c->g->nodes[r->p->node].op; }

/* "v better than best" for max/min and arg-max/min (kexpr.c's rule). */
static gcc_jit_rvalue *better(cg *c, td_op op, td_dtype dt, gcc_jit_rvalue *v, gcc_jit_rvalue *best) {
  td_kxgen x = cg_kxgen(c);
  return td_kx_better(&x, op, dt, v, best);
}

static void update(cg *c, racc *r, gcc_jit_rvalue *v, gcc_jit_rvalue *kidx) {
  td_op op = red_op(c, r);
  td_dtype dt = in_dt(c, r);
  td_kxgen x = cg_kxgen(c);
  switch (op) {
  case TD_IR_SUM: case TD_IR_PROD:
    cg_assign(c, r->acc, td_kx_fold(&x, op, dt, r->p->acc_dt, rv(r->acc), v));
    break;
  case TD_IR_RMAX: case TD_IR_RMIN:
    cg_assign(c, r->acc, cg_select(c, better(c, op, dt, v, rv(r->acc)), v, rv(r->acc), c->vt[dt]));
    break;
  default: {  /* argmax / argmin: the first index of the extreme */
    gcc_jit_lvalue *tk = cg_local(c, c->t_bool, "take");
    cg_assign(c, tk, td_kx_arg_takes(&x, op, dt, v, rv(r->acc), rv(r->idx)));
    cg_assign(c, r->acc, cg_select(c, rv(tk), v, rv(r->acc), c->vt[dt]));
    cg_assign(c, r->idx, cg_select(c, rv(tk), kidx, rv(r->idx), c->t_i64));
  }
  }
}

/* One lane's racc entries for the stage analysed in p (rowplan.h), each
 * accumulator declared and set to its identity. */
static void stage_init(cg *c, const td_rred *p, racc *r, int n) {
  for (int i = 0; i < n; i++) {
    r[i].p = &p[i];
    r[i].acc = cg_local(c, c->vt[p[i].acc_dt], "acc");
    cg_assign(c, r[i].acc, identity(c, p[i].init, p[i].acc_dt, p[i].init_f, p[i].init_i));
    r[i].idx = NULL;
    if (p[i].has_idx) {
      r[i].idx = cg_local(c, c->t_i64, "arg");
      cg_assign(c, r[i].idx, cg_i64(c, -1));
    }
  }
}

/* The loop variable of the (single) reduced axis, for argmax/argmin. */
static gcc_jit_rvalue *red_index(cg *c, const cg_ix *ix) {
  for (int a = 0; a < c->k->rank; a++)
    if (c->k->red_axes >> a & 1) return ix->v[a];
  return cg_i64(c, 0);
}

/* The reductions r[i] with sel[i] set (all of them when sel is NULL). */
#define PICKED(sel, i) (!(sel) || (sel)[i])

static int stage_body(cg *c, racc *r, int n, const char *sel, const cg_ix *ix) {
  for (int i = 0; i < n; i++) {
    if (!PICKED(sel, i)) continue;
    gcc_jit_rvalue *v = cg_eval(c, r[i].p->src, ix);
    if (!v) return -1;
    update(c, &r[i], v, red_index(c, ix));
  }
  return 0;
}

/* The finished values, converted to the nodes' dtypes, as red_val. */
static void stage_finish(cg *c, racc *r, int n) {
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    gcc_jit_rvalue *v = r[i].idx ? rv(r[i].idx) : rv(r[i].acc);
    gcc_jit_lvalue *l = cg_local(c, c->vt[nd->dtype], "red");
    cg_assign(c, l, cg_convert(c, v, r[i].p->fin_dt, nd->dtype));
    c->red_val[r[i].p->node] = rv(l);
  }
}

/* ---- lanes ---- */

/* Folds lane l's accumulators into lane 0's (a is lane 0, b lane l). */
static void combine(cg *c, racc *a, const racc *b) {
  td_op op = red_op(c, a);
  td_dtype dt = in_dt(c, a);
  td_kxgen x = cg_kxgen(c);
  if (op == TD_IR_SUM || op == TD_IR_PROD) {
    cg_assign(c, a->acc, binv(c, op == TD_IR_PROD ? GCC_JIT_BINARY_OP_MULT : GCC_JIT_BINARY_OP_PLUS,
                              c->vt[a->p->acc_dt], rv(a->acc), rv(b->acc)));
  } else if (op == TD_IR_RMAX || op == TD_IR_RMIN) {
    cg_assign(c, a->acc, cg_select(c, better(c, op, dt, rv(b->acc), rv(a->acc)), rv(b->acc), rv(a->acc), c->vt[dt]));
  } else {   /* arg: kexpr.c's tie rule */
    gcc_jit_rvalue *bv = rv(b->acc), *av = rv(a->acc);
    gcc_jit_lvalue *w = cg_local(c, c->t_bool, "wins");
    cg_assign(c, w, td_kx_arg_wins(&x, op, dt, av, rv(a->idx), bv, rv(b->idx)));
    cg_assign(c, a->acc, cg_select(c, rv(w), bv, av, c->vt[dt]));
    cg_assign(c, a->idx, cg_select(c, rv(w), rv(b->idx), rv(a->idx), c->t_i64));
  }
}

/* The reduced axes of k whose size is not the literal 1 (those add
 * nothing to a row, and eager mode skips them too). */
static uint32_t real_red_axes(const td_kernel *k) {
  uint32_t m = 0;
  for (int a = 0; a < k->rank; a++)
    if ((k->red_axes >> a & 1) && k->space[a] != 1) m |= 1u << a;
  return m;
}

/* Must the float sums and products of the picked reductions follow eager
 * mode's order, one lane in memory order?  When the innermost axis of a
 * size other than 1 is kept (the interpreter adds whole rows, element by
 * element, in memory order) or only one axis is reduced (a product is a
 * serial chain there, and so is a sum over a leading axis; a sum over the
 * innermost one takes the 16 lanes instead).  Over several axes including
 * the innermost one the interpreter sums runs of the merged innermost
 * axes, which no loop nest here reproduces: lanes, as fast as they go. */
static int eager_order(cg *c, racc *r, int n, const char *sel) {
  const td_kernel *k = c->k;
  uint32_t m = real_red_axes(k);
  int inner_kept = 0, single = m && !(m & (m - 1));
  for (int a = k->rank - 1; a >= 0; a--)
    if (k->space[a] != 1) {
      inner_kept = !(k->red_axes >> a & 1);
      break;
    }
  for (int i = 0; i < n; i++) {
    td_op op = red_op(c, &r[i]);
    if (PICKED(sel, i) && (op == TD_IR_SUM || op == TD_IR_PROD) && td_dtype_is_float(in_dt(c, &r[i])))
      return inner_kept || single;
  }
  return 0;
}

/* The innermost reduced axis, when lanes can split it (else -1). */
static int lane_axis(const td_kernel *k) {
  for (int a = k->rank - 1; a >= 0; a--)
    if (k->red_axes >> a & 1) return k->space[a] == 1 ? -1 : a;
  return -1;
}

/* One element of every lane: ix with axis a = j + l for lane l. */
static int lanes_body(cg *c, racc (*r)[64], int n, const char *sel, const cg_ix *ix, int a, gcc_jit_rvalue *j) {
  for (int l = 0; l < LANES; l++) {
    cg_ix *li = cg_ix_new(c, ix->rank);
    *li = *ix;
    li->v[a] = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j, cg_i64(c, l));
    li->zero[a] = 0;
    if (stage_body(c, r[l], n, sel, li)) return -1;
  }
  return 0;
}

/* The picked reductions of a stage (r: lane 0's, initialised) in one loop
 * nest over the reduced axes, in LANES lanes or (eager_order) one. */
static int emit_nest(cg *c, racc *r0, int n, const char *sel, const cg_ix *row) {
  int a = eager_order(c, r0, n, sel) ? -1 : lane_axis(c->k);
  racc (*r)[64] = td_arena_alloc(c->arena, LANES * sizeof *r);
  if (!r) return td_err_set(c->err, "out of memory");
  memcpy(r[0], r0, (size_t)n * sizeof *r0);
  for (int l = 1; a >= 0 && l < LANES; l++)
    for (int i = 0; i < n; i++)
      if (PICKED(sel, i)) stage_init(c, r0[i].p, &r[l][i], 1);
  cloop L[TD_MAX_RANK], main_, rest;
  cg_ix *ix = cg_ix_new(c, c->k->rank);
  *ix = *row;
  long mark = cg_memo_mark(c);
  uint32_t mask = a < 0 ? c->k->red_axes : c->k->red_axes & ~(1u << a);
  int nl = cg_nest_open(c, L, c->k->space, c->k->rank, mask, ix);
  if (a < 0) {
    if (stage_body(c, r[0], n, sel, ix)) return -1;
  } else {
    gcc_jit_rvalue *len = cg_dim(c, c->k->space[a]);
    gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
    cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, len,
                            binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, len, cg_i64(c, LANES))));
    gcc_jit_rvalue *j = cg_loop_range(c, &main_, cg_i64(c, 0), rv(full), LANES);
    if (lanes_body(c, r, n, sel, ix, a, j)) return -1;
    cg_loop_close(c, &main_);
    cg_ix *ri = cg_ix_new(c, ix->rank);
    *ri = *ix;
    ri->v[a] = cg_loop_range(c, &rest, rv(full), len, 1);
    ri->zero[a] = 0;
    if (stage_body(c, r[0], n, sel, ri)) return -1;
    cg_loop_close(c, &rest);
  }
  cg_nest_close(c, L, nl);
  cg_memo_release(c, mark);
  for (int l = 1; a >= 0 && l < LANES; l++)
    for (int i = 0; i < n; i++)
      if (PICKED(sel, i)) combine(c, &r[0][i], &r[l][i]);
  return 0;
}

/* ---- 16 lanes: float sums, max and min over the innermost axis ----
 *
 * When the only reduced axis of a size other than 1 is the innermost such
 * axis, every float sum, max and min of a stage keeps 16 lanes in a local array
 * (f64 for sums, the element type for max/min): for each block of 16
 * elements, lane l takes element l; the last n % 16 elements go into lane
 * 0, in order; then a tree over the lanes, lane j op= lane j + h for
 * h = 8, 4, 2, 1.  GCC keeps the arrays in vector registers (11
 * instructions per 16 elements for a sum).  This is the interpreter's
 * order for every float sum over a contiguous run (interp/reduce.c,
 * SUM16), so these sums are eager mode's bit for bit, and no float
 * reduction needs a loop GCC would have to reassociate to vectorise. */

#define LANES16 16

/* The axis of the 16 lanes: the innermost axis of a size other than 1 when
 * it is the only such axis reduced; else -1. */
static int row16_axis(const cg *c) {
  const td_kernel *k = c->k;
  for (int a = k->rank - 1; a >= 0; a--)
    if (k->space[a] != 1) return real_red_axes(k) == 1u << a ? a : -1;
  return -1;
}

static int row16_red(const cg *c, const racc *r) {
  td_op op = red_op(c, r);
  return td_dtype_is_float(in_dt(c, r)) && (op == TD_IR_SUM || op == TD_IR_RMAX || op == TD_IR_RMIN);
}

static gcc_jit_lvalue *arr_at(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *i) {
  return gcc_jit_context_new_array_access(c->ctx, NULL, rv(arr), i);
}

static gcc_jit_lvalue *new_arr(cg *c, gcc_jit_type *t, int n) {
  return cg_local(c, gcc_jit_context_new_array_type(c->ctx, NULL, t, n), "lanes");
}

/* arr[j] = a for j in [lo, hi) */
static void fill(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, gcc_jit_rvalue *a) {
  cloop L;
  gcc_jit_rvalue *j = cg_loop_range(c, &L, lo, hi, 1);
  cg_assign(c, arr_at(c, arr, j), a);
  cg_loop_close(c, &L);
}

/* a op b for a sum (type t) or max/min: b when better, written without ||
 * (which would be control flow, and keep the loop from vectorising). */
static gcc_jit_rvalue *lane_step(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b, td_op op, gcc_jit_type *t) {
  if (op == TD_IR_SUM) return binv(c, GCC_JIT_BINARY_OP_PLUS, t, a, b);
  gcc_jit_lvalue *av = cg_local(c, t, "ta"), *bv = cg_local(c, t, "tb");
  cg_assign(c, av, a);
  cg_assign(c, bv, b);
  gcc_jit_rvalue *v = cg_select(c, cmpv(c, op == TD_IR_RMAX ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, rv(bv), rv(av)),
                                rv(bv), rv(av), t);
  return cg_select(c, cmpv(c, GCC_JIT_COMPARISON_NE, rv(bv), rv(bv)), rv(bv), v, t);
}

/* The tree over the 16 lanes: straight-line code with constant indices,
 * so the lanes stay in registers and nothing branches. */
static void tree16(cg *c, gcc_jit_lvalue *arr, td_op op, gcc_jit_type *t) {
  for (int h = LANES16 / 2; h >= 1; h /= 2)
    for (int j = 0; j < h; j++) {
      gcc_jit_rvalue *a = rv(arr_at(c, arr, cg_i64(c, j))), *b = rv(arr_at(c, arr, cg_i64(c, j + h)));
      cg_assign(c, arr_at(c, arr, cg_i64(c, j)), lane_step(c, a, b, op, t));
    }
}

/* The index of the current row at element j0 + j of the lanes' axis. */
static cg_ix *row_at(cg *c, const cg_ix *row, gcc_jit_rvalue *j0, gcc_jit_rvalue *j) {
  int a = row16_axis(c);
  cg_ix *ix = cg_ix_new(c, row->rank);
  *ix = *row;
  ix->v[a] = binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j0, j);
  ix->zero[a] = 0;
  return ix;
}

/* The lanes of reduction r: f64 for a sum, the element type for max/min. */
static gcc_jit_type *lane_type(cg *c, const racc *r) {
  return red_op(c, r) == TD_IR_SUM ? c->t_f64 : c->vt[in_dt(c, r)];
}

/* lanes[l] op= v, for reduction r. */
static void lane_add(cg *c, const racc *r, gcc_jit_lvalue *lanes, gcc_jit_rvalue *l, gcc_jit_rvalue *v) {
  gcc_jit_type *t = lane_type(c, r);
  td_op op = red_op(c, r);
  if (op == TD_IR_SUM) {
    gcc_jit_lvalue *x = cg_local(c, c->t_f64, "x");
    cg_assign(c, x, to_f64(c, v));
    v = rv(x);
  }
  cg_assign(c, arr_at(c, lanes, l), lane_step(c, rv(arr_at(c, lanes, l)), v, op, t));
}

/* Element j of the row (ix) into lane l of every picked reduction. */
static int row16_add(cg *c, racc *r, int n, const char *sel, gcc_jit_lvalue **lanes, const cg_ix *ix,
                     gcc_jit_rvalue *l) {
  long mark = cg_memo_mark(c);
  for (int i = 0; i < n; i++) {
    if (!sel[i]) continue;
    gcc_jit_rvalue *v = cg_eval(c, r[i].p->src, ix);
    if (!v) return -1;
    lane_add(c, &r[i], lanes[i], l, v);
  }
  cg_memo_release(c, mark);
  return 0;
}

/* Declares the lanes of the picked reductions, each filled with its
 * identity (0 for sums). */
static gcc_jit_lvalue **lanes_new(cg *c, racc *r, int n, const char *sel) {
  gcc_jit_lvalue **lanes = td_arena_alloc(c->arena, (size_t)n * sizeof *lanes);
  if (!lanes) return NULL;
  for (int i = 0; i < n; i++) {
    lanes[i] = NULL;
    if (!sel[i]) continue;
    lanes[i] = new_arr(c, lane_type(c, &r[i]), LANES16);
    const td_rred *p = r[i].p;
    gcc_jit_rvalue *id = red_op(c, &r[i]) == TD_IR_SUM ? identity(c, p->init, TD_F64, p->init_f, 0)
                                                      : identity(c, p->init, p->acc_dt, p->init_f, p->init_i);
    fill(c, lanes[i], cg_i64(c, 0), cg_i64(c, LANES16), id);
  }
  return lanes;
}

/* The trees over the lanes, into the accumulators. */
static void lanes_finish(cg *c, racc *r, int n, const char *sel, gcc_jit_lvalue **lanes) {
  for (int i = 0; i < n; i++) {
    if (!sel[i]) continue;
    tree16(c, lanes[i], red_op(c, &r[i]), lane_type(c, &r[i]));
    cg_assign(c, r[i].acc, rv(arr_at(c, lanes[i], cg_i64(c, 0))));
  }
}

/* full = len - len % 16 */
static gcc_jit_rvalue *full16(cg *c, gcc_jit_rvalue *len) {
  gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
  cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, len,
                          binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, len, cg_i64(c, LANES16))));
  return rv(full);
}

static int emit_row16(cg *c, racc *r, int n, const char *sel, const cg_ix *row) {
  gcc_jit_lvalue **lanes = lanes_new(c, r, n, sel);
  if (!lanes) return td_err_set(c->err, "out of memory");
  gcc_jit_rvalue *L = cg_dim(c, c->k->space[row16_axis(c)]), *zero = cg_i64(c, 0);
  gcc_jit_rvalue *full = full16(c, L);
  cloop lb, ll, lr;
  gcc_jit_rvalue *jb = cg_loop_range(c, &lb, zero, full, LANES16);
  gcc_jit_rvalue *l = cg_loop_range(c, &ll, zero, cg_i64(c, LANES16), 1);
  if (row16_add(c, r, n, sel, lanes, row_at(c, row, jb, l), l)) return -1;
  cg_loop_close(c, &ll);
  cg_loop_close(c, &lb);
  if (row16_add(c, r, n, sel, lanes, row_at(c, row, zero, cg_loop_range(c, &lr, full, L, 1)), zero)) return -1;
  cg_loop_close(c, &lr);
  lanes_finish(c, r, n, sel, lanes);
  return 0;
}

/* ---- stored exp: softmax computes exp once ----
 *
 * A kernel whose root is E / s, with E = exp(...) at the root's shape and
 * s = sum(E) over the lanes' axis in the last stage (softmax:
 * exp(x - max) / sum), stores E into the root's row while it sums it, and
 * the root's loop then divides the stored values by s.  Per chunk of CHUNK
 * elements (so that the row comes back from L1), one vectorised loop
 * evaluates E and stores it, and a second one reads it back into the sum's
 * 16 f64 lanes: chunks are whole blocks of 16, so the lanes see the
 * elements in the order of emit_row16 (the remainder, n % 16 elements,
 * at the end of the last chunk, into lane 0).  The stored E is the value
 * the root would compute, and E / s is the root's own division: the
 * kernel's values are those of the plain three passes. */

#define CHUNK 1024

/* The node E when the kernel has that shape, else -1. */
static int stored_exp_node(const cg *c) {
  const td_kernel *k = c->k;
  if (k->row_root || k->n_stages < 1 || row16_axis(c) < 0) return -1;
  const td_kstage *S = &k->stages[k->n_stages - 1];
  if (S->n_reds != 1) return -1;
  const td_node *root = &c->g->nodes[k->root];
  if (root->op != TD_IR_DIV || root->rank != k->rank) return -1;
  int e = root->in[0], s = root->in[1];
  const td_node *en = &c->g->nodes[e], *sn = &c->g->nodes[s];
  if (en->op != TD_IR_EXP || en->dtype != root->dtype || en->rank != k->rank) return -1;
  if (root->dtype != TD_F32 && root->dtype != TD_F64) return -1;
  for (int d = 0; d < k->rank; d++)
    if (en->shape[d] != k->space[d] || root->shape[d] != k->space[d]) return -1;
  if (sn->op != TD_IR_SUM || sn->in[0] != e || S->reds[0] != s) return -1;
  return e;
}

/* The root's element at ix (the output row of a stored-exp kernel). */
static gcc_jit_lvalue *root_at(cg *c, const cg_ix *ix) { return cg_element(c, c->k->root, ix); }

/* The last stage of a stored-exp kernel: s = sum(E), E stored. */
static int emit_stored(cg *c, racc *r, int e, const cg_ix *row) {
  char one = 1;
  gcc_jit_lvalue **lanes = lanes_new(c, r, 1, &one);
  if (!lanes) return td_err_set(c->err, "out of memory");
  gcc_jit_rvalue *L = cg_dim(c, c->k->space[row16_axis(c)]), *zero = cg_i64(c, 0), *w = cg_i64(c, LANES16);
  cloop lc, ls, lb, ll, lr;
  gcc_jit_rvalue *j0 = cg_loop_range(c, &lc, zero, L, CHUNK);
  gcc_jit_lvalue *len = cg_local(c, c->t_i64, "len");
  gcc_jit_rvalue *rest = binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, L, j0);
  cg_assign(c, len, cg_select(c, cmpv(c, GCC_JIT_COMPARISON_LT, rest, cg_i64(c, CHUNK)), rest, cg_i64(c, CHUNK), c->t_i64));
  long mark = cg_memo_mark(c);
  cg_ix *ix = row_at(c, row, j0, cg_loop_range(c, &ls, zero, rv(len), 1));
  gcc_jit_rvalue *ev = cg_eval(c, e, ix);
  if (!ev) return -1;
  cg_store(c, c->k->root, ix, ev);
  cg_loop_close(c, &ls);
  cg_memo_release(c, mark);
  gcc_jit_rvalue *full = full16(c, rv(len));
  gcc_jit_rvalue *jb = cg_loop_range(c, &lb, zero, full, LANES16);
  gcc_jit_rvalue *l = cg_loop_range(c, &ll, zero, w, 1);
  lane_add(c, r, lanes[0], l, rv(root_at(c, row_at(c, row, j0, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, jb, l)))));
  cg_loop_close(c, &ll);
  cg_loop_close(c, &lb);
  lane_add(c, r, lanes[0], zero, rv(root_at(c, row_at(c, row, j0, cg_loop_range(c, &lr, full, rv(len), 1)))));
  cg_loop_close(c, &lr);
  cg_loop_close(c, &lc);
  lanes_finish(c, r, 1, &one, lanes);
  return 0;
}

/* ---- stages ---- */

/* Emits stage S for the current row.  stored_e >= 0: the stage is a
 * stored-exp kernel's last one, summing that exp node. */
static int emit_stage(cg *c, const td_kstage *S, const cg_ix *row, int stored_e) {
  int n = S->n_reds;
  if (n > 64) return td_err_set(c->err, "kernel %s: too many reductions in one pass", c->k->name);
  racc *r = td_arena_alloc(c->arena, (size_t)n * sizeof *r);
  td_rred *p = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *p);
  char *in16 = td_arena_alloc(c->arena, (size_t)n + 1), *rest = td_arena_alloc(c->arena, (size_t)n + 1);
  if (!r || !p || !in16 || !rest) return td_err_set(c->err, "out of memory");
  td_rowplan_stage(c->g, S, p);
  stage_init(c, p, r, n);
  int n16 = 0;
  for (int i = 0; i < n; i++) {
    in16[i] = row16_axis(c) >= 0 && row16_red(c, &r[i]);
    rest[i] = !in16[i];
    n16 += in16[i];
  }
  if (stored_e >= 0) {
    if (emit_stored(c, r, stored_e, row)) return -1;
  } else {
    /* the 16-lane reductions and the others in two loops over the row */
    if (n16 && emit_row16(c, r, n, in16, row)) return -1;
    if (n16 < n && emit_nest(c, r, n, rest, row)) return -1;
  }
  stage_finish(c, r, n);
  return 0;
}

int tdc_emit_reduce(cg *c) {
  const td_kernel *k = c->k;
  cloop outer[TD_MAX_RANK], inner[TD_MAX_RANK];
  cg_ix *row = cg_ix_new(c, k->rank);
  for (int a = 0; a < k->rank; a++) { row->v[a] = cg_i64(c, 0); row->zero[a] = 1; }
  int no = cg_nest_open(c, outer, k->space, k->rank, ~k->red_axes, row);
  int stored_e = stored_exp_node(c);
  for (int s = 0; s < k->n_stages; s++)
    if (emit_stage(c, &k->stages[s], row, s == k->n_stages - 1 ? stored_e : -1)) return -1;
  if (k->row_root) {
    cg_ix *rix = cg_row_ix(c, k->root, row);
    gcc_jit_rvalue *v = cg_eval(c, k->root, rix);
    if (!v) return -1;
    cg_store(c, k->root, rix, v);
  } else {
    cg_ix *ix = cg_ix_new(c, k->rank);
    *ix = *row;
    int ni = cg_nest_open(c, inner, k->space, k->rank, k->red_axes, ix);
    gcc_jit_rvalue *v;
    if (stored_e >= 0) {   /* E was stored where the root goes: E / s */
      gcc_jit_type *t = c->vt[c->g->nodes[k->root].dtype];
      v = binv(c, GCC_JIT_BINARY_OP_DIVIDE, t, rv(root_at(c, ix)), c->red_val[c->g->nodes[k->root].in[1]]);
    } else {
      v = cg_eval(c, k->root, ix);
    }
    if (!v) return -1;
    cg_store(c, k->root, ix, v);
    cg_nest_close(c, inner, ni);
  }
  cg_nest_close(c, outer, no);
  for (int i = 0; i < k->n_nodes; i++) c->red_val[k->nodes[i]] = NULL;
  return cg_failed(c);
}

/* codegen_reduce.c - the body of a REDUCE (row) kernel.
 *
 * For every kept index (outer loops, the parallel one over [lo, hi)):
 *   - a stage whose reductions are all float sum/max/min, online-softmax
 *     or moments pairs over the innermost axis alone, with at least one
 *     max/min or online pair, is processed in chunks of vectorisable loops
 *     (see "chunked stages" below); when the root is softmax's
 *     exp(x - m) / s, exp is computed once and stored ("stored exp");
 *   - a stage of float sums and moments pairs alone over the innermost
 *     axis (mean, layer_norm) keeps 16 f64 lanes per accumulator ("wide
 *     lanes");
 *   - any other stage (plan.h's td_kstage) is one loop nest over the reduced
 *     axes updating accumulators: f64 for float sums and products, i64 for
 *     integers, the element type for max/min, value and first index for
 *     argmax/argmin; the online-softmax pair keeps a running maximum and a
 *     sum rescaled when the maximum grows, the moments pair sums x and x^2
 *     in f64.  The innermost reduced loop is unrolled into LANES
 *     interleaved lanes, each with its own accumulators (independent
 *     dependency chains instead of one serial chain), combined after the
 *     loop; a remainder loop uses lane 0;
 *   - the finished values become locals (red_val) that cg_eval returns
 *     for the reductions from then on;
 *   - then either the root is stored once per row, or a last loop nest
 *     stores it for every element of the row.
 *
 * What each reduction is and keeps (its role in a pair, the node updating
 * it, its accumulators, their dtypes and identities, the finished dtype,
 * a moments tail's mean) is rowplan.c's analysis, shared with the CUDA
 * generator; this file chooses the loops and emits the code.
 */
#include <string.h>

#include "jit_impl.h"
#include "rowplan.h"

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
  gcc_jit_lvalue *acc, *acc2, *idx;   /* acc2: moments head's sum of x*x; idx: arg index */
} racc;

/* An identity of kind k (rowplan.h) and value f or i, for an accumulator
 * of dtype acc_dt. */
static gcc_jit_rvalue *identity(cg *c, td_rinit k, td_dtype acc_dt, double f, int64_t i) {
  if (k == TD_RI_ZERO || k == TD_RI_ONE)
    return acc_dt == TD_F64 ? gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, f) : cg_i64(c, i);
  return cg_const(c, acc_dt, f, i);
}

/* The identity of max/min op for values of dtype dt. */
static gcc_jit_rvalue *op_identity(cg *c, td_op op, td_dtype dt) {
  double f;
  int64_t i;
  td_rinit k = td_rowplan_identity(op, dt, &f, &i);
  return identity(c, k, dt, f, i);
}

static gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static gcc_jit_rvalue *cmpv(cg *c, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(c->ctx, NULL, op, a, b);
}

static gcc_jit_rvalue *binv(cg *c, enum gcc_jit_binary_op op, gcc_jit_type *t, gcc_jit_rvalue *a,
                            gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(c->ctx, NULL, op, t, a, b);
}

/* The term of an element equal to the row's max m: exactly 1 (exp(0)),
 * written m - m + 1 so that an infinite m gives NaN, as exp(m - m) does in
 * the interpreter (a row holding +inf, or only -inf, is NaN), without a
 * second compare in the vectorised loop.  Merging partial results keeps
 * a plain 1: an empty part has max -inf and sum 0 and must scale to 0. */
static gcc_jit_rvalue *one_at_max(cg *c, gcc_jit_rvalue *m, gcc_jit_type *t) {
  return binv(c, GCC_JIT_BINARY_OP_PLUS, t, binv(c, GCC_JIT_BINARY_OP_MINUS, t, m, m),
              gcc_jit_context_new_rvalue_from_double(c->ctx, t, 1.0));
}

static gcc_jit_rvalue *to_f64(cg *c, gcc_jit_rvalue *v) {
  return gcc_jit_context_new_cast(c->ctx, NULL, v, c->t_f64);
}

/* "v better than best" for max/min and arg-max/min (NaN wins, first wins). */
static gcc_jit_rvalue *better(cg *c, td_op op, td_dtype dt, gcc_jit_rvalue *v, gcc_jit_rvalue *best) {
  int is_max = op == TD_IR_RMAX || op == TD_IR_ARGMAX;
  if (dt == TD_BOOL) {
    v = gcc_jit_context_new_cast(c->ctx, NULL, v, c->t_i32);
    best = gcc_jit_context_new_cast(c->ctx, NULL, best, c->t_i32);
  }
  gcc_jit_rvalue *b = cmpv(c, is_max ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, v, best);
  if (!td_dtype_is_float(dt)) return b;
  gcc_jit_rvalue *vnan = cmpv(c, GCC_JIT_COMPARISON_NE, v, v);
  if (op == TD_IR_ARGMAX || op == TD_IR_ARGMIN)
    vnan = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool, vnan,
                                         cmpv(c, GCC_JIT_COMPARISON_EQ, best, best));
  return gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool, b, vnan);
}

static void plain_update(cg *c, racc *r, gcc_jit_rvalue *v, gcc_jit_rvalue *kidx) {
  const td_node *nd = &c->g->nodes[r->p->node];
  td_dtype dt = c->g->nodes[nd->in[0]].dtype;
  switch (nd->op) {
  case TD_IR_SUM: case TD_IR_PROD: {
    gcc_jit_type *t = c->vt[r->p->acc_dt];
    gcc_jit_rvalue *x = td_dtype_is_float(dt) ? to_f64(c, v) : cg_convert(c, v, dt, TD_I64);
    cg_assign(c, r->acc, binv(c, nd->op == TD_IR_SUM ? GCC_JIT_BINARY_OP_PLUS : GCC_JIT_BINARY_OP_MULT, t,
                              rv(r->acc), x));
    break;
  }
  case TD_IR_RMAX: case TD_IR_RMIN:
    cg_assign(c, r->acc, cg_select(c, better(c, nd->op, dt, v, rv(r->acc)), v, rv(r->acc), c->vt[dt]));
    break;
  default: {  /* argmax / argmin: the first index of the extreme */
    gcc_jit_rvalue *take = gcc_jit_context_new_binary_op(
        c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool,
        cmpv(c, GCC_JIT_COMPARISON_LT, rv(r->idx), cg_i64(c, 0)), better(c, nd->op, dt, v, rv(r->acc)));
    gcc_jit_lvalue *tk = cg_local(c, c->t_bool, "take");
    cg_assign(c, tk, take);
    cg_assign(c, r->acc, cg_select(c, rv(tk), v, rv(r->acc), c->vt[dt]));
    cg_assign(c, r->idx, cg_select(c, rv(tk), kidx, rv(r->idx), c->t_i64));
  }
  }
}

/* Online softmax: M = running max (head), S = sum of exp(x - M) (tail).
 * When an element raises the maximum (a real branch: rare after the first
 * few elements) S is rescaled by exp(M_old - M_new) and M moves; then
 * exp(v - M) is added.  A term with v == M counts 1 even when both are
 * -inf, as exp(x - max) does in eager mode for every finite row. */
static void online_update(cg *c, racc *head, racc *tail, gcc_jit_rvalue *v) {
  td_dtype dt = c->g->nodes[head->p->node].dtype;
  gcc_jit_type *t = c->vt[dt];
  gcc_jit_rvalue *m = rv(head->acc);
  gcc_jit_block *grow = cg_block(c, "newmax"), *join = cg_block(c, "samemax");
  gcc_jit_block_end_with_conditional(c->blk, NULL, better(c, TD_IR_RMAX, dt, v, m), grow, join);
  c->blk = grow;
  gcc_jit_rvalue *scale = cg_builtin(c, "__builtin_exp", binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_f64,
                                                             to_f64(c, m), to_f64(c, v)), NULL);
  gcc_jit_rvalue *one = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, 1.0);
  scale = cg_select(c, cmpv(c, GCC_JIT_COMPARISON_EQ, m, v), one, scale, c->t_f64);
  cg_assign(c, tail->acc, binv(c, GCC_JIT_BINARY_OP_MULT, c->t_f64, rv(tail->acc), scale));
  cg_assign(c, head->acc, v);
  gcc_jit_block_end_with_jump(c->blk, NULL, join);
  c->blk = join;
  gcc_jit_rvalue *e = to_f64(c, cg_exp(c, dt, binv(c, GCC_JIT_BINARY_OP_MINUS, t, v, rv(head->acc))));
  gcc_jit_rvalue *term = cg_select(c, cmpv(c, GCC_JIT_COMPARISON_EQ, v, rv(head->acc)),
                                   to_f64(c, one_at_max(c, rv(head->acc), t)), e, c->t_f64);
  cg_assign(c, tail->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(tail->acc), term));
}

/* Moments: sum(x) and sum(x*x) in f64. */
static void moments_update(cg *c, racc *head, gcc_jit_rvalue *v) {
  gcc_jit_lvalue *x = cg_local(c, c->t_f64, "x");
  cg_assign(c, x, to_f64(c, v));
  cg_assign(c, head->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(head->acc), rv(x)));
  cg_assign(c, head->acc2, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(head->acc2),
                                binv(c, GCC_JIT_BINARY_OP_MULT, c->t_f64, rv(x), rv(x))));
}

/* One lane's racc entries for the stage analysed in p (rowplan.h), each
 * accumulator declared and set to its identity. */
static void stage_init(cg *c, const td_rred *p, racc *r, int n) {
  for (int i = 0; i < n; i++) {
    r[i].p = &p[i];
    r[i].acc = r[i].acc2 = r[i].idx = NULL;
    if (p[i].has_acc) {
      r[i].acc = cg_local(c, c->vt[p[i].acc_dt], "acc");
      cg_assign(c, r[i].acc, identity(c, p[i].init, p[i].acc_dt, p[i].init_f, p[i].init_i));
    }
    if (p[i].has_sq) {
      r[i].acc2 = cg_local(c, c->t_f64, "acc");
      cg_assign(c, r[i].acc2, gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, 0));
    }
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

static int stage_body(cg *c, racc *r, int n, const cg_ix *ix) {
  for (int i = 0; i < n; i++) {
    if (!r[i].p->steps) continue;   /* driven by their partners */
    gcc_jit_rvalue *v = cg_eval(c, r[i].p->src, ix);
    if (!v) return -1;
    if (r[i].p->role == TD_RR_ONLINE_TAIL) online_update(c, &r[r[i].p->partner], &r[i], v);
    else if (r[i].p->role == TD_RR_MOMENTS_HEAD) moments_update(c, &r[i], v);
    else plain_update(c, &r[i], v, red_index(c, ix));
  }
  return 0;
}

/* Number of elements in a row, as f64. */
static gcc_jit_rvalue *row_count(cg *c) {
  gcc_jit_rvalue *n = cg_i64(c, 1);
  for (int a = 0; a < c->k->rank; a++)
    if (c->k->red_axes >> a & 1) n = binv(c, GCC_JIT_BINARY_OP_MULT, c->t_i64, n, cg_dim(c, c->k->space[a]));
  return to_f64(c, n);
}

static int stage_finish(cg *c, racc *r, int n, const cg_ix *row) {
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    if (r[i].p->role == TD_RR_MOMENTS_TAIL) continue;
    gcc_jit_rvalue *v = r[i].idx ? rv(r[i].idx) : rv(r[i].acc);
    gcc_jit_lvalue *l = cg_local(c, c->vt[nd->dtype], "red");
    cg_assign(c, l, cg_convert(c, v, r[i].p->fin_dt, nd->dtype));
    c->red_val[r[i].p->node] = rv(l);
  }
  for (int i = 0; i < n; i++) {   /* tails of moments need mu, computed from the heads */
    if (r[i].p->role != TD_RR_MOMENTS_TAIL) continue;
    const racc *h = &r[r[i].p->partner];
    int mu_node = r[i].p->mu;
    gcc_jit_rvalue *mu = cg_eval(c, mu_node, cg_row_ix(c, mu_node, row));
    if (!mu) return -1;
    mu = to_f64(c, mu);
    gcc_jit_type *d = c->t_f64;
    gcc_jit_rvalue *two = gcc_jit_context_new_rvalue_from_double(c->ctx, d, 2.0);
    gcc_jit_rvalue *s = binv(c, GCC_JIT_BINARY_OP_MINUS, d, rv(h->acc2),
                             binv(c, GCC_JIT_BINARY_OP_MULT, d, binv(c, GCC_JIT_BINARY_OP_MULT, d, two, mu), rv(h->acc)));
    s = binv(c, GCC_JIT_BINARY_OP_PLUS, d, s, binv(c, GCC_JIT_BINARY_OP_MULT, d, row_count(c),
                                                     binv(c, GCC_JIT_BINARY_OP_MULT, d, mu, mu)));
    gcc_jit_rvalue *zero = gcc_jit_context_new_rvalue_from_double(c->ctx, d, 0.0);
    s = cg_select(c, cmpv(c, GCC_JIT_COMPARISON_LT, s, zero), zero, s, d);
    gcc_jit_lvalue *l = cg_local(c, c->vt[c->g->nodes[r[i].p->node].dtype], "red");
    cg_assign(c, l, cg_convert(c, s, TD_F64, c->g->nodes[r[i].p->node].dtype));
    c->red_val[r[i].p->node] = rv(l);
  }
  return 0;
}

/* ---- lanes ---- */

/* Folds lane l's accumulators into lane 0's (a is lane 0, b lane l). */
static void combine(cg *c, racc *a, const racc *b, racc *a_head, const racc *b_head) {
  const td_node *nd = &c->g->nodes[a->p->node];
  td_dtype dt = c->g->nodes[nd->in[0]].dtype;
  gcc_jit_type *d = c->t_f64;
  switch (a->p->role) {
  case TD_RR_ONLINE_HEAD: break;  /* the online head is combined with its tail */
  case TD_RR_ONLINE_TAIL: {       /* M = max(M0, Ml); S = S0 e^(M0 - M) + Sl e^(Ml - M) */
    gcc_jit_rvalue *m0 = rv(a_head->acc), *ml = rv(b_head->acc);
    gcc_jit_type *t = c->vt[dt];
    gcc_jit_lvalue *m = cg_local(c, t, "mx");
    cg_assign(c, m, cg_select(c, better(c, TD_IR_RMAX, dt, ml, m0), ml, m0, t));
    gcc_jit_rvalue *one = gcc_jit_context_new_rvalue_from_double(c->ctx, d, 1.0), *sc[2];
    gcc_jit_rvalue *ms[2] = {m0, ml};
    for (int i = 0; i < 2; i++)
      sc[i] = cg_select(c, cmpv(c, GCC_JIT_COMPARISON_EQ, ms[i], rv(m)), one,
                        cg_builtin(c, "__builtin_exp", binv(c, GCC_JIT_BINARY_OP_MINUS, d, to_f64(c, ms[i]),
                                                            to_f64(c, rv(m))), NULL), d);
    cg_assign(c, a->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, d, binv(c, GCC_JIT_BINARY_OP_MULT, d, rv(a->acc), sc[0]),
                              binv(c, GCC_JIT_BINARY_OP_MULT, d, rv(b->acc), sc[1])));
    cg_assign(c, a_head->acc, rv(m));
    break;
  }
  case TD_RR_MOMENTS_HEAD:
    cg_assign(c, a->acc2, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(a->acc2), rv(b->acc2)));
    cg_assign(c, a->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(a->acc), rv(b->acc)));
    break;
  case TD_RR_PLAIN:
    if (nd->op == TD_IR_SUM || nd->op == TD_IR_PROD) {
      gcc_jit_type *t = c->vt[a->p->acc_dt];
      cg_assign(c, a->acc, binv(c, nd->op == TD_IR_PROD ? GCC_JIT_BINARY_OP_MULT : GCC_JIT_BINARY_OP_PLUS, t,
                                rv(a->acc), rv(b->acc)));
    } else if (nd->op == TD_IR_RMAX || nd->op == TD_IR_RMIN) {
      cg_assign(c, a->acc, cg_select(c, better(c, nd->op, dt, rv(b->acc), rv(a->acc)), rv(b->acc), rv(a->acc), c->vt[dt]));
    } else {
      /* arg: lane l wins when lane 0 is empty, or it is better, or they tie
       * (equal, or both NaN) and its index is smaller */
      gcc_jit_rvalue *bv = rv(b->acc), *av = rv(a->acc);
      gcc_jit_rvalue *tie = cmpv(c, GCC_JIT_COMPARISON_EQ, bv, av);
      if (td_dtype_is_float(dt))
        tie = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool, tie,
                  gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool,
                                                cmpv(c, GCC_JIT_COMPARISON_NE, bv, bv), cmpv(c, GCC_JIT_COMPARISON_NE, av, av)));
      gcc_jit_rvalue *wins = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool,
          better(c, nd->op, dt, bv, av),
          gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool, tie,
                                        cmpv(c, GCC_JIT_COMPARISON_LT, rv(b->idx), rv(a->idx))));
      wins = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool,
                                           cmpv(c, GCC_JIT_COMPARISON_LT, rv(a->idx), cg_i64(c, 0)), wins);
      wins = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool,
                                           cmpv(c, GCC_JIT_COMPARISON_GE, rv(b->idx), cg_i64(c, 0)), wins);
      gcc_jit_lvalue *w = cg_local(c, c->t_bool, "wins");
      cg_assign(c, w, wins);
      cg_assign(c, a->acc, cg_select(c, rv(w), bv, av, c->vt[dt]));
      cg_assign(c, a->idx, cg_select(c, rv(w), rv(b->idx), rv(a->idx), c->t_i64));
    }
    break;
  default: break;  /* moments tails use their head's sums */
  }
}

/* The innermost reduced axis, when lanes can split it (else -1). */
static int lane_axis(const td_kernel *k) {
  for (int a = k->rank - 1; a >= 0; a--)
    if (k->red_axes >> a & 1) return k->space[a] == 1 ? -1 : a;
  return -1;
}

/* One element of every lane: ix with axis a = j + l for lane l. */
static int lanes_body(cg *c, racc (*r)[64], int n, const cg_ix *ix, int a, gcc_jit_rvalue *j) {
  for (int l = 0; l < LANES; l++) {
    cg_ix *li = cg_ix_new(c, ix->rank);
    *li = *ix;
    li->v[a] = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j, cg_i64(c, l));
    li->zero[a] = 0;
    if (stage_body(c, r[l], n, li)) return -1;
  }
  return 0;
}

/* ---- chunked stages: reductions as vectorisable loops ----
 *
 * When the only reduced axis is the innermost (contiguous) one and every
 * reduction of the stage is a float sum, max or min, an online softmax
 * pair or a moments pair, the row is processed in chunks of CHUNK
 * elements: one elementwise loop evaluates the reductions' inputs into
 * local arrays (it vectorises like any pointwise kernel: exp, casts and
 * selects included), the arrays are padded with the identity up to a power
 * of two P >= 16, and reduced by a pairwise tree of elementwise loops
 * (a[j] = a[j] op a[j + h] for h = P/2, ..., 1), which vectorise too —
 * GCC cannot vectorise a float reduction loop without reassociating it.
 * Sums stay in f64 (pairwise, so more accurate than a serial sum); the
 * online softmax rescales its sum once per chunk by exp(M_old - M_new). */

#define CHUNK 1024

/* Arrays of one reduction of a chunked stage. */
typedef struct carr {
  gcc_jit_lvalue *v, *m, *s, *q;   /* values, max tree, f64 terms, f64 squares */
} carr;

static gcc_jit_lvalue *arr_at(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *i) {
  return gcc_jit_context_new_array_access(c->ctx, NULL, rv(arr), i);
}

static gcc_jit_lvalue *new_arr(cg *c, gcc_jit_type *t) {
  return cg_local(c, gcc_jit_context_new_array_type(c->ctx, NULL, t, CHUNK), "chunk");
}

static int chunk_ok(cg *c, racc *r, int n) {
  const td_kernel *k = c->k;
  if (k->red_axes != 1u << (k->rank - 1) || k->space[k->rank - 1] == 1) return 0;
  /* sums and moments alone take the wide lanes (layer_norm: 14 ms
   * chunked, 11-12 ms in 4 scalar lanes, 8.6 ms in 16 wide lanes); max/min
   * and the online softmax are branches in lanes */
  int wins = 0;
  for (int i = 0; i < n; i++) {
    int op = c->g->nodes[r[i].p->node].op;
    wins |= r[i].p->role == TD_RR_ONLINE_TAIL ||
            (r[i].p->role == TD_RR_PLAIN && (op == TD_IR_RMAX || op == TD_IR_RMIN));
  }
  if (!wins) return 0;
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    td_dtype dt = c->g->nodes[nd->in[0]].dtype;
    if (!td_dtype_is_float(dt)) return 0;
    if (r[i].p->role == TD_RR_PLAIN && nd->op != TD_IR_SUM && nd->op != TD_IR_RMAX && nd->op != TD_IR_RMIN) return 0;
  }
  return 1;
}

/* arr[j] = a for j in [lo, hi) */
static void fill(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, gcc_jit_rvalue *a) {
  cloop L;
  gcc_jit_rvalue *j = cg_loop_range(c, &L, lo, hi, 1);
  cg_assign(c, arr_at(c, arr, j), a);
  cg_loop_close(c, &L);
}

/* One step of a pairwise tree: a + b (op SUM, type t), or better(b, a)
 * for max/min without || (which would be control flow). */
static gcc_jit_rvalue *tree_step(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b, td_op op, gcc_jit_type *t) {
  if (op == TD_IR_SUM) return binv(c, GCC_JIT_BINARY_OP_PLUS, t, a, b);
  gcc_jit_lvalue *av = cg_local(c, t, "ta"), *bv = cg_local(c, t, "tb");
  cg_assign(c, av, a);
  cg_assign(c, bv, b);
  gcc_jit_rvalue *v = cg_select(c, cmpv(c, op == TD_IR_RMAX ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, rv(bv), rv(av)),
                                rv(bv), rv(av), t);
  return cg_select(c, cmpv(c, GCC_JIT_COMPARISON_NE, rv(bv), rv(bv)), rv(bv), v, t);
}

/* Pairwise tree over arr[0 .. P): arr[0] ends up holding the sum (op SUM,
 * type t) or the max/min (op RMAX/RMIN, element dtype dt). */
static void tree(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *P, td_op op, td_dtype dt, gcc_jit_type *t) {
  (void)dt;
  gcc_jit_lvalue *h = cg_local(c, c->t_i64, "h");
  cg_assign(c, h, binv(c, GCC_JIT_BINARY_OP_DIVIDE, c->t_i64, P, cg_i64(c, 2)));
  gcc_jit_block *cond = cg_block(c, "tree"), *body = cg_block(c, "level"), *after = cg_block(c, "tree_end");
  gcc_jit_block_end_with_jump(c->blk, NULL, cond);
  gcc_jit_block_end_with_conditional(cond, NULL, cmpv(c, GCC_JIT_COMPARISON_GE, rv(h), cg_i64(c, 1)), body, after);
  c->blk = body;
  cloop L;
  gcc_jit_rvalue *j = cg_loop_range(c, &L, cg_i64(c, 0), rv(h), 1);
  gcc_jit_rvalue *a = rv(arr_at(c, arr, j));
  gcc_jit_rvalue *b = rv(arr_at(c, arr, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j, rv(h))));
  cg_assign(c, arr_at(c, arr, j), tree_step(c, a, b, op, t));
  cg_loop_close(c, &L);
  cg_assign(c, h, binv(c, GCC_JIT_BINARY_OP_DIVIDE, c->t_i64, rv(h), cg_i64(c, 2)));
  gcc_jit_block_end_with_jump(c->blk, NULL, cond);
  c->blk = after;
}

/* The tree over the LANES16 lanes of a row (a fixed count): straight-line
 * code with constant indices, so the lanes stay in registers and nothing
 * branches (the loop form cost W6's softmax, 4096 rows of 128, two trees
 * of mispredicted short loops per row). */
#define LANES16 16
static void tree16(cg *c, gcc_jit_lvalue *arr, td_op op, gcc_jit_type *t) {
  for (int h = LANES16 / 2; h >= 1; h /= 2)
    for (int j = 0; j < h; j++) {
      gcc_jit_rvalue *a = rv(arr_at(c, arr, cg_i64(c, j))), *b = rv(arr_at(c, arr, cg_i64(c, j + h)));
      cg_assign(c, arr_at(c, arr, cg_i64(c, j)), tree_step(c, a, b, op, t));
    }
}

/* Pads arr from n to P with a, then reduces it; returns arr[0]. */
static gcc_jit_rvalue *pad_reduce(cg *c, gcc_jit_lvalue *arr, gcc_jit_rvalue *n, gcc_jit_rvalue *P, gcc_jit_rvalue *a,
                                  td_op op, td_dtype dt, gcc_jit_type *t) {
  fill(c, arr, n, P, a);
  tree(c, arr, P, op, dt, t);
  return rv(arr_at(c, arr, cg_i64(c, 0)));
}

/* The input of reduction i (its head's input for an online tail) at ix. */
static gcc_jit_rvalue *red_input(cg *c, racc *r, int i, const cg_ix *ix) {
  return cg_eval(c, r[i].p->src, ix);
}

/* Loop A of a chunk: every reduction's input into its arrays. */
static int chunk_load(cg *c, racc *r, carr *A, int n, const cg_ix *row, gcc_jit_rvalue *j0, gcc_jit_rvalue *len) {
  int a = c->k->rank - 1;
  cloop L;
  long mark = cg_memo_mark(c);
  gcc_jit_rvalue *j = cg_loop_range(c, &L, cg_i64(c, 0), len, 1);
  cg_ix *ix = cg_ix_new(c, row->rank);
  *ix = *row;
  ix->v[a] = binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j0, j);
  ix->zero[a] = 0;
  for (int i = 0; i < n; i++) {
    if (!r[i].p->steps) continue;   /* driven by their partners */
    gcc_jit_rvalue *v = red_input(c, r, i, ix);
    if (!v) return -1;
    if (A[i].v) cg_assign(c, arr_at(c, A[i].v, j), v);
    if (A[i].m) cg_assign(c, arr_at(c, A[i].m, j), v);
    if (A[i].s && r[i].p->role != TD_RR_ONLINE_TAIL) {
      gcc_jit_lvalue *x = cg_local(c, c->t_f64, "x");
      cg_assign(c, x, to_f64(c, v));
      cg_assign(c, arr_at(c, A[i].s, j), rv(x));
      if (A[i].q) cg_assign(c, arr_at(c, A[i].q, j), binv(c, GCC_JIT_BINARY_OP_MULT, c->t_f64, rv(x), rv(x)));
    }
  }
  cg_loop_close(c, &L);
  cg_memo_release(c, mark);
  return 0;
}

/* The online pair over one chunk: chunk max, rescale, terms, sum. */
static void chunk_online(cg *c, racc *head, racc *tail, carr *A, gcc_jit_rvalue *len, gcc_jit_rvalue *P) {
  td_dtype dt = c->g->nodes[head->p->node].dtype;
  gcc_jit_type *t = c->vt[dt], *d = c->t_f64;
  gcc_jit_lvalue *cm = cg_local(c, t, "cmax");
  cg_assign(c, cm, pad_reduce(c, A->m, len, P, op_identity(c, TD_IR_RMAX, dt), TD_IR_RMAX, dt, t));
  gcc_jit_lvalue *mn = cg_local(c, t, "mnew");
  cg_assign(c, mn, cg_select(c, better(c, TD_IR_RMAX, dt, rv(cm), rv(head->acc)), rv(cm), rv(head->acc), t));
  gcc_jit_rvalue *one = gcc_jit_context_new_rvalue_from_double(c->ctx, d, 1.0);
  gcc_jit_block *grow = cg_block(c, "newmax"), *join = cg_block(c, "samemax");
  gcc_jit_block_end_with_conditional(c->blk, NULL, cmpv(c, GCC_JIT_COMPARISON_NE, rv(mn), rv(head->acc)), grow, join);
  c->blk = grow;
  gcc_jit_rvalue *scale = cg_builtin(c, "__builtin_exp", binv(c, GCC_JIT_BINARY_OP_MINUS, d, to_f64(c, rv(head->acc)),
                                                             to_f64(c, rv(mn))), NULL);
  cg_assign(c, tail->acc, binv(c, GCC_JIT_BINARY_OP_MULT, d, rv(tail->acc), scale));
  cg_assign(c, head->acc, rv(mn));
  gcc_jit_block_end_with_jump(c->blk, NULL, join);
  c->blk = join;
  cloop L;
  gcc_jit_rvalue *j = cg_loop_range(c, &L, cg_i64(c, 0), len, 1);
  gcc_jit_lvalue *v = cg_local(c, t, "v");
  cg_assign(c, v, rv(arr_at(c, A->v, j)));
  gcc_jit_lvalue *e = cg_local(c, t, "e");
  cg_assign(c, e, cg_exp(c, dt, binv(c, GCC_JIT_BINARY_OP_MINUS, t, rv(v), rv(head->acc))));
  cg_assign(c, arr_at(c, A->s, j), cg_select(c, cmpv(c, GCC_JIT_COMPARISON_EQ, rv(v), rv(head->acc)),
                                             one_at_max(c, rv(head->acc), t), rv(e), t));
  cg_loop_close(c, &L);
  (void)one;
  /* the terms (<= 1 each) are summed pairwise in the element type within
   * the chunk, then in f64 across chunks */
  gcc_jit_rvalue *sum = pad_reduce(c, A->s, len, P, cg_const(c, dt, 0, 0), TD_IR_SUM, dt, t);
  cg_assign(c, tail->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(tail->acc), to_f64(c, sum)));
}

/* Folds the chunk's arrays into the accumulators. */
static void chunk_fold(cg *c, racc *r, carr *A, int n, gcc_jit_rvalue *len, gcc_jit_rvalue *P) {
  gcc_jit_type *d = c->t_f64;
  gcc_jit_rvalue *zero = gcc_jit_context_new_rvalue_from_double(c->ctx, d, 0.0);
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    td_dtype dt = c->g->nodes[nd->in[0]].dtype;
    if (r[i].p->role == TD_RR_ONLINE_TAIL) {
      chunk_online(c, &r[r[i].p->partner], &r[i], &A[i], len, P);
    } else if (r[i].p->role == TD_RR_MOMENTS_HEAD) {
      cg_assign(c, r[i].acc, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(r[i].acc), pad_reduce(c, A[i].s, len, P, zero, TD_IR_SUM, TD_F64, d)));
      cg_assign(c, r[i].acc2, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(r[i].acc2), pad_reduce(c, A[i].q, len, P, zero, TD_IR_SUM, TD_F64, d)));
    } else if (r[i].p->role == TD_RR_PLAIN && nd->op == TD_IR_SUM) {
      cg_assign(c, r[i].acc, binv(c, GCC_JIT_BINARY_OP_PLUS, d, rv(r[i].acc), pad_reduce(c, A[i].s, len, P, zero, TD_IR_SUM, TD_F64, d)));
    } else if (r[i].p->role == TD_RR_PLAIN) {
      gcc_jit_type *t = c->vt[dt];
      gcc_jit_lvalue *m = cg_local(c, t, "cm");
      cg_assign(c, m, pad_reduce(c, A[i].m, len, P, op_identity(c, nd->op, dt), nd->op, dt, t));
      cg_assign(c, r[i].acc, cg_select(c, better(c, nd->op, dt, rv(m), rv(r[i].acc)), rv(m), rv(r[i].acc), t));
    }
  }
}

/* Opens the loop over a row's chunks (lc, step CHUNK) and returns the
 * chunk's first index; *len is its length, *P (unless P is NULL) a power of
 * two >= len, >= 16. */
static gcc_jit_rvalue *chunk_open(cg *c, cloop *lc, gcc_jit_lvalue **len, gcc_jit_lvalue **P) {
  gcc_jit_rvalue *L = cg_dim(c, c->k->space[c->k->rank - 1]);
  gcc_jit_rvalue *j0 = cg_loop_range(c, lc, cg_i64(c, 0), L, CHUNK);
  *len = cg_local(c, c->t_i64, "len");
  gcc_jit_rvalue *rest = binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, L, j0);
  cg_assign(c, *len, cg_select(c, cmpv(c, GCC_JIT_COMPARISON_LT, rest, cg_i64(c, CHUNK)), rest, cg_i64(c, CHUNK), c->t_i64));
  if (!P) return j0;   /* the caller needs no power of two */
  *P = cg_local(c, c->t_i64, "p2");
  cg_assign(c, *P, cg_i64(c, 16));
  gcc_jit_block *cond = cg_block(c, "p2"), *body = cg_block(c, "p2_up"), *after = cg_block(c, "p2_end");
  gcc_jit_block_end_with_jump(c->blk, NULL, cond);
  gcc_jit_block_end_with_conditional(cond, NULL, cmpv(c, GCC_JIT_COMPARISON_LT, rv(*P), rv(*len)), body, after);
  gcc_jit_block_add_assignment_op(body, NULL, *P, GCC_JIT_BINARY_OP_MULT, cg_i64(c, 2));
  gcc_jit_block_end_with_jump(body, NULL, cond);
  c->blk = after;
  return j0;
}

/* The index of the current row at chunk element j0 + j. */
static cg_ix *chunk_ix(cg *c, const cg_ix *row, gcc_jit_rvalue *j0, gcc_jit_rvalue *j) {
  int a = c->k->rank - 1;
  cg_ix *ix = cg_ix_new(c, row->rank);
  *ix = *row;
  ix->v[a] = binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, j0, j);
  ix->zero[a] = 0;
  return ix;
}

/* ---- stored exp: softmax computes exp once ----
 *
 * A kernel whose root is E / s, with E = exp(x - m) the online pair's term
 * and s its sum (softmax), stores E instead of recomputing it: pass 1 finds
 * the row maximum (16 lanes, then a tree), pass 2 evaluates E with the final
 * maximum, stores it into the root's row and sums it (pairwise in the
 * element type within a chunk, f64 across chunks; a term with x == m
 * counts 1, as in the online pair), and the root's loop then multiplies
 * the stored values by 1 / s (within an ulp of E / s).  The stored E is the
 * value the root would compute. */

/* The node E when the kernel has that shape, else -1. */
static int stored_exp_node(const cg *c) {
  const td_kernel *k = c->k;
  if (k->row_root || k->n_stages != 1 || k->stages[0].n_reds != 2) return -1;
  const td_node *root = &c->g->nodes[k->root];
  if (root->op != TD_IR_DIV || root->rank != k->rank) return -1;
  int e = root->in[0], s = root->in[1];
  const td_node *en = &c->g->nodes[e], *sn = &c->g->nodes[s];
  if (en->op != TD_IR_EXP || en->dtype != root->dtype || en->rank != k->rank) return -1;
  if (root->dtype != TD_F32 && root->dtype != TD_F64) return -1;
  for (int d = 0; d < k->rank; d++)
    if (en->shape[d] != k->space[d] || root->shape[d] != k->space[d]) return -1;
  if (sn->op != TD_IR_SUM || sn->in[0] != e) return -1;
  const td_kstage *S = &k->stages[0];
  for (int i = 0; i < 2; i++)
    if (S->reds[i] == s && S->partner[i] >= 0) return e;
  return -1;
}

/* acc = better(v, acc) for max, without || (which would be control flow). */
static void max_step(cg *c, gcc_jit_lvalue *acc, gcc_jit_rvalue *v, gcc_jit_type *t) {
  gcc_jit_lvalue *a = cg_local(c, t, "ma"), *b = cg_local(c, t, "mb");
  cg_assign(c, a, rv(acc));
  cg_assign(c, b, v);
  gcc_jit_rvalue *m = cg_select(c, cmpv(c, GCC_JIT_COMPARISON_GT, rv(b), rv(a)), rv(b), rv(a), t);
  cg_assign(c, acc, cg_select(c, cmpv(c, GCC_JIT_COMPARISON_NE, rv(b), rv(b)), rv(b), m, t));
}

/* Pass 1: the row maximum into head->acc, in 16 lanes (a vector register)
 * then a tree over them. */
static int stored_max(cg *c, racc *head, gcc_jit_lvalue *am, const cg_ix *row) {
  td_dtype dt = c->g->nodes[head->p->node].dtype;
  gcc_jit_type *t = c->vt[dt];
  int x = c->g->nodes[head->p->node].in[0];
  gcc_jit_rvalue *L = cg_dim(c, c->k->space[c->k->rank - 1]), *zero = cg_i64(c, 0), *w = cg_i64(c, 16);
  fill(c, am, zero, w, op_identity(c, TD_IR_RMAX, dt));
  gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
  cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, L, binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, L, w)));
  cloop lo, li, lr;
  long mark = cg_memo_mark(c);
  gcc_jit_rvalue *j0 = cg_loop_range(c, &lo, zero, rv(full), 16);
  gcc_jit_rvalue *l = cg_loop_range(c, &li, zero, w, 1);
  gcc_jit_rvalue *v = cg_eval(c, x, chunk_ix(c, row, j0, l));
  if (!v) return -1;
  max_step(c, arr_at(c, am, l), v, t);
  cg_loop_close(c, &li);
  cg_loop_close(c, &lo);
  cg_memo_release(c, mark);
  mark = cg_memo_mark(c);
  gcc_jit_rvalue *j = cg_loop_range(c, &lr, rv(full), L, 1);
  v = cg_eval(c, x, chunk_ix(c, row, zero, j));
  if (!v) return -1;
  max_step(c, arr_at(c, am, zero), v, t);
  cg_loop_close(c, &lr);
  cg_memo_release(c, mark);
  tree16(c, am, TD_IR_RMAX, t);
  cg_assign(c, head->acc, rv(arr_at(c, am, zero)));
  return 0;
}

/* The root's element at ix (the output row of a stored-exp kernel). */
static gcc_jit_lvalue *root_at(cg *c, const cg_ix *ix) { return cg_element(c, c->k->root, ix); }

/* as[l] += the root's element at chunk offset j. */
static void stored_add(cg *c, gcc_jit_lvalue *as, gcc_jit_rvalue *l, const cg_ix *row, gcc_jit_rvalue *j0,
                       gcc_jit_rvalue *j, gcc_jit_type *t) {
  gcc_jit_rvalue *y = rv(root_at(c, chunk_ix(c, row, j0, j)));
  cg_assign(c, arr_at(c, as, l), binv(c, GCC_JIT_BINARY_OP_PLUS, t, rv(arr_at(c, as, l)), y));
}

/* Pass 2: per chunk, E stored into the root's row (one vectorised loop),
 * then read back (from L1) and summed in 16 lanes of the element type (one
 * vector register: a loop without stores, so without alias checks), a
 * tree over the lanes, and f64 across chunks.  E is cg_exp_flush's (0
 * where it would be below 6e-39: four instructions fewer per vector, and
 * s >= 1, so the outputs move by less than that).  The term is E itself:
 * exp(0) is exactly 1 (x == m finite), and exp(NaN) is NaN (m infinite,
 * x - m NaN where x == m), which is what the online pair's "1 at the max"
 * gives too. */
static int stored_terms(cg *c, racc *head, racc *tail, int e, gcc_jit_lvalue *as, const cg_ix *row) {
  td_dtype dt = c->g->nodes[head->p->node].dtype;
  gcc_jit_type *t = c->vt[dt];
  gcc_jit_lvalue *m = cg_local(c, t, "red");
  cg_assign(c, m, rv(head->acc));
  c->red_val[head->p->node] = rv(m);
  cloop lc, L, lb, ll, lr;
  gcc_jit_lvalue *len;
  gcc_jit_rvalue *j0 = chunk_open(c, &lc, &len, NULL), *zero = cg_i64(c, 0), *w = cg_i64(c, 16);
  long mark = cg_memo_mark(c);
  gcc_jit_rvalue *j = cg_loop_range(c, &L, zero, rv(len), 1);
  cg_ix *ix = chunk_ix(c, row, j0, j);
  gcc_jit_rvalue *ev = cg_eval(c, c->g->nodes[e].in[0], ix);
  if (!ev) return -1;
  cg_store(c, c->k->root, ix, cg_exp_flush(c, dt, ev));
  cg_loop_close(c, &L);
  cg_memo_release(c, mark);
  fill(c, as, zero, w, cg_const(c, dt, 0, 0));
  gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
  cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, rv(len),
                          binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, rv(len), w)));
  gcc_jit_rvalue *jb = cg_loop_range(c, &lb, zero, rv(full), 16);
  gcc_jit_rvalue *l = cg_loop_range(c, &ll, zero, w, 1);
  stored_add(c, as, l, row, j0, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, jb, l), t);
  cg_loop_close(c, &ll);
  cg_loop_close(c, &lb);
  stored_add(c, as, zero, row, j0, cg_loop_range(c, &lr, rv(full), rv(len), 1), t);
  cg_loop_close(c, &lr);
  tree16(c, as, TD_IR_SUM, t);
  cg_assign(c, tail->acc, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(tail->acc), to_f64(c, rv(arr_at(c, as, zero)))));
  cg_loop_close(c, &lc);
  return 0;
}

static int emit_stage_stored(cg *c, racc *r, int n, const cg_ix *row, int e) {
  int ti = r[0].p->role == TD_RR_ONLINE_TAIL ? 0 : 1;
  racc *tail = &r[ti], *head = &r[tail->p->partner];
  gcc_jit_type *t = c->vt[c->g->nodes[head->p->node].dtype];
  gcc_jit_lvalue *am = new_arr(c, t), *as = new_arr(c, t);
  if (stored_max(c, head, am, row) || stored_terms(c, head, tail, e, as, row)) return -1;
  return stage_finish(c, r, n, row);
}

static int emit_stage_chunked(cg *c, racc *r, int n, const cg_ix *row) {
  carr *A = td_arena_alloc(c->arena, (size_t)n * sizeof *A);
  if (!A) return td_err_set(c->err, "out of memory");
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    td_dtype dt = c->g->nodes[nd->in[0]].dtype;
    memset(&A[i], 0, sizeof A[i]);
    if (r[i].p->role == TD_RR_ONLINE_TAIL) {
      dt = c->g->nodes[r[r[i].p->partner].p->node].dtype;
      A[i].v = new_arr(c, c->vt[dt]);
      A[i].m = new_arr(c, c->vt[dt]);
      A[i].s = new_arr(c, c->vt[dt]);
    } else if (r[i].p->role == TD_RR_MOMENTS_HEAD) {
      A[i].s = new_arr(c, c->t_f64);
      A[i].q = new_arr(c, c->t_f64);
    } else if (r[i].p->role == TD_RR_PLAIN && nd->op == TD_IR_SUM) {
      A[i].s = new_arr(c, c->t_f64);
    } else if (r[i].p->role == TD_RR_PLAIN) {
      A[i].m = new_arr(c, c->vt[dt]);
    }
  }
  cloop lc;
  gcc_jit_lvalue *len, *P;
  gcc_jit_rvalue *j0 = chunk_open(c, &lc, &len, &P);
  if (chunk_load(c, r, A, n, row, j0, rv(len))) return -1;
  chunk_fold(c, r, A, n, rv(len), rv(P));
  cg_loop_close(c, &lc);
  return stage_finish(c, r, n, row);
}

/* ---- wide lanes: float sums and moments in 16 f64 lanes ----
 *
 * A stage of float sums and moments pairs alone, over the innermost
 * (contiguous) axis, keeps 16 f64 lanes per accumulator in local arrays:
 * for each 16 elements, lane l adds element l (and its square), which GCC
 * turns into vector conversions and adds on registers (the arrays stay in
 * registers, as in the stored-exp max pass); a remainder loop uses lane 0,
 * a tree over the lanes ends it.  The scalar 4-lane loop before took ~3.5
 * instructions per element (f64 converts and adds do not vectorise across
 * interleaved scalar accumulators). */

static int wide_ok(cg *c, racc *r, int n) {
  const td_kernel *k = c->k;
  if (k->red_axes != 1u << (k->rank - 1) || k->space[k->rank - 1] == 1) return 0;
  for (int i = 0; i < n; i++) {
    const td_node *nd = &c->g->nodes[r[i].p->node];
    if (!td_dtype_is_float(c->g->nodes[nd->in[0]].dtype)) return 0;
    td_rrole role = r[i].p->role;
    if (!(role == TD_RR_PLAIN && nd->op == TD_IR_SUM) && role != TD_RR_MOMENTS_HEAD && role != TD_RR_MOMENTS_TAIL)
      return 0;
  }
  return 1;
}

/* Element j of the row into lane l of every accumulator. */
static int wide_add(cg *c, racc *r, int n, gcc_jit_lvalue **S, gcc_jit_lvalue **Q, const cg_ix *row,
                    gcc_jit_rvalue *j, gcc_jit_rvalue *l) {
  long mark = cg_memo_mark(c);
  cg_ix *ix = chunk_ix(c, row, cg_i64(c, 0), j);
  for (int i = 0; i < n; i++) {
    if (!S[i]) continue;
    gcc_jit_rvalue *v = cg_eval(c, c->g->nodes[r[i].p->node].in[0], ix);
    if (!v) return -1;
    gcc_jit_lvalue *x = cg_local(c, c->t_f64, "x");
    cg_assign(c, x, to_f64(c, v));
    cg_assign(c, arr_at(c, S[i], l), binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(arr_at(c, S[i], l)), rv(x)));
    if (Q[i])
      cg_assign(c, arr_at(c, Q[i], l), binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_f64, rv(arr_at(c, Q[i], l)),
                                            binv(c, GCC_JIT_BINARY_OP_MULT, c->t_f64, rv(x), rv(x))));
  }
  cg_memo_release(c, mark);
  return 0;
}

static int emit_stage_wide(cg *c, racc *r, int n, const cg_ix *row) {
  gcc_jit_lvalue **S = td_arena_alloc(c->arena, 2 * (size_t)n * sizeof *S), **Q = S ? S + n : NULL;
  if (!S) return td_err_set(c->err, "out of memory");
  gcc_jit_rvalue *zero = cg_i64(c, 0), *w = cg_i64(c, 16), *z = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, 0);
  for (int i = 0; i < n; i++) {
    S[i] = Q[i] = NULL;
    if (r[i].p->role == TD_RR_MOMENTS_TAIL) continue;   /* the head's arrays serve it */
    S[i] = new_arr(c, c->t_f64);
    fill(c, S[i], zero, w, z);
    if (r[i].p->role == TD_RR_MOMENTS_HEAD) {
      Q[i] = new_arr(c, c->t_f64);
      fill(c, Q[i], zero, w, z);
    }
  }
  gcc_jit_rvalue *L = cg_dim(c, c->k->space[c->k->rank - 1]);
  gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
  cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, L, binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, L, w)));
  cloop lb, ll, lr;
  gcc_jit_rvalue *jb = cg_loop_range(c, &lb, zero, rv(full), 16);
  gcc_jit_rvalue *l = cg_loop_range(c, &ll, zero, w, 1);
  if (wide_add(c, r, n, S, Q, row, binv(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, jb, l), l)) return -1;
  cg_loop_close(c, &ll);
  cg_loop_close(c, &lb);
  if (wide_add(c, r, n, S, Q, row, cg_loop_range(c, &lr, rv(full), L, 1), zero)) return -1;
  cg_loop_close(c, &lr);
  for (int i = 0; i < n; i++) {
    if (!S[i]) continue;
    tree16(c, S[i], TD_IR_SUM, c->t_f64);
    cg_assign(c, r[i].acc, rv(arr_at(c, S[i], zero)));
    if (Q[i]) {
      tree16(c, Q[i], TD_IR_SUM, c->t_f64);
      cg_assign(c, r[i].acc2, rv(arr_at(c, Q[i], zero)));
    }
  }
  return stage_finish(c, r, n, row);
}

/* Emits stage S for the current row.  store_e >= 0: the kernel may store
 * that exp node (stored_exp_node); *stored is set when it did. */
static int emit_stage(cg *c, const td_kstage *S, const cg_ix *row, int store_e, int *stored) {
  int n = S->n_reds, a = lane_axis(c->k), lanes = a < 0 ? 1 : LANES;
  if (n > 64) return td_err_set(c->err, "kernel %s: too many reductions in one pass", c->k->name);
  racc (*r)[64] = td_arena_alloc(c->arena, LANES * sizeof *r);
  td_rred *p = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *p);
  if (!r || !p) return td_err_set(c->err, "out of memory");
  td_rowplan_stage(c->g, S, p);
  for (int l = 0; l < lanes; l++) {
    stage_init(c, p, r[l], n);
    if (l == 0 && wide_ok(c, r[0], n)) return emit_stage_wide(c, r[0], n, row);
    if (l == 0 && chunk_ok(c, r[0], n)) {
      if (store_e >= 0 && n == 2 && (r[0][0].p->role == TD_RR_ONLINE_TAIL || r[0][1].p->role == TD_RR_ONLINE_TAIL)) {
        *stored = 1;
        return emit_stage_stored(c, r[0], n, row, store_e);
      }
      return emit_stage_chunked(c, r[0], n, row);
    }
  }
  cloop L[TD_MAX_RANK], main_, rest;
  cg_ix *ix = cg_ix_new(c, c->k->rank);
  *ix = *row;
  long mark = cg_memo_mark(c);
  uint32_t mask = a < 0 ? c->k->red_axes : c->k->red_axes & ~(1u << a);
  int nl = cg_nest_open(c, L, c->k->space, c->k->rank, mask, ix);
  if (a < 0) {
    if (stage_body(c, r[0], n, ix)) return -1;
  } else {
    gcc_jit_rvalue *len = cg_dim(c, c->k->space[a]);
    gcc_jit_lvalue *full = cg_local(c, c->t_i64, "full");
    cg_assign(c, full, binv(c, GCC_JIT_BINARY_OP_MINUS, c->t_i64, len,
                            binv(c, GCC_JIT_BINARY_OP_MODULO, c->t_i64, len, cg_i64(c, LANES))));
    gcc_jit_rvalue *j = cg_loop_range(c, &main_, cg_i64(c, 0), rv(full), LANES);
    if (lanes_body(c, r, n, ix, a, j)) return -1;
    cg_loop_close(c, &main_);
    cg_ix *ri = cg_ix_new(c, ix->rank);
    *ri = *ix;
    ri->v[a] = cg_loop_range(c, &rest, rv(full), len, 1);
    ri->zero[a] = 0;
    if (stage_body(c, r[0], n, ri)) return -1;
    cg_loop_close(c, &rest);
  }
  cg_nest_close(c, L, nl);
  cg_memo_release(c, mark);
  for (int l = 1; l < lanes; l++)
    for (int i = 0; i < n; i++) {
      int h = r[0][i].p->partner;
      combine(c, &r[0][i], &r[l][i], h >= 0 ? &r[0][h] : NULL, h >= 0 ? &r[l][h] : NULL);
    }
  return stage_finish(c, r[0], n, row);
}

int tdc_emit_reduce(cg *c) {
  const td_kernel *k = c->k;
  cloop outer[TD_MAX_RANK], inner[TD_MAX_RANK];
  cg_ix *row = cg_ix_new(c, k->rank);
  for (int a = 0; a < k->rank; a++) { row->v[a] = cg_i64(c, 0); row->zero[a] = 1; }
  int no = cg_nest_open(c, outer, k->space, k->rank, ~k->red_axes, row);
  int store_e = stored_exp_node(c), stored = 0;
  for (int s = 0; s < k->n_stages; s++)
    if (emit_stage(c, &k->stages[s], row, store_e, &stored)) return -1;
  if (k->row_root) {
    cg_ix *rix = cg_row_ix(c, k->root, row);
    gcc_jit_rvalue *v = cg_eval(c, k->root, rix);
    if (!v) return -1;
    cg_store(c, k->root, rix, v);
  } else {
    cg_ix *ix = cg_ix_new(c, k->rank);
    *ix = *row;
    gcc_jit_lvalue *inv = NULL;
    if (stored) {   /* E / s as E * (1 / s): within an ulp, and no division per element */
      gcc_jit_type *t = c->vt[c->g->nodes[k->root].dtype];
      inv = cg_local(c, t, "inv");
      cg_assign(c, inv, binv(c, GCC_JIT_BINARY_OP_DIVIDE, t, gcc_jit_context_new_rvalue_from_double(c->ctx, t, 1.0),
                             c->red_val[c->g->nodes[k->root].in[1]]));
    }
    int ni = cg_nest_open(c, inner, k->space, k->rank, k->red_axes, ix);
    gcc_jit_rvalue *v;
    if (stored) {   /* E was stored where the root goes: read it back */
      gcc_jit_lvalue *el = cg_element(c, k->root, ix);
      v = binv(c, GCC_JIT_BINARY_OP_MULT, c->vt[c->g->nodes[k->root].dtype], rv(el), rv(inv));
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


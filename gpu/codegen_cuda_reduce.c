/* codegen_cuda_reduce.c - the body of a REDUCE (row) kernel, as CUDA C
 * (the CUDA side of compiler/codegen_reduce.c).
 *
 * One block per row (grid-stride over rows): each stage (plan.h's
 * td_kstage) is a block-strided pass over the row's reduced elements,
 * updating per-thread accumulators, then a warp-shuffle and shared-memory
 * combine after which every thread holds the row's results; then the
 * root is stored once per row, or for every element of the row.  When the
 * innermost axis is kept and long (a reduction over leading axes), a
 * thread per row instead, so the loads of a warp are contiguous.
 *
 * What each reduction keeps (its accumulators, their dtypes and
 * identities, the finished dtype) is compiler/rowplan.c's analysis,
 * shared with the CPU backend; the combine rules are codegen_reduce.c's.
 */
#include <string.h>

#include "gpu/codegen_cuda_impl.h"

/* ---- REDUCE kernels: one block per row ---- */

/* A reduction of a stage is described by rowplan.h's td_rred (the
 * accumulators decided with the CPU backend); its accumulators are named
 * a<id> and x<id> (arg index) after the node id. */

static td_dtype in_dtype(cx *c, int red) { return ND(c, ND(c, red)->in[0])->dtype; }

/* The accumulator's identity (rowplan.h's init, init_f, init_i). */
static const char *acc_init(cx *c, const td_rred *r) {
  if (r->init == TD_RI_ZERO || r->init == TD_RI_ONE) {
    if (r->acc_dt == TD_F64) return r->init == TD_RI_ZERO ? "0.0" : "1.0";
    return r->init == TD_RI_ZERO ? "0LL" : "1LL";
  }
  return td_dtype_is_float(r->acc_dt) ? cu_flit(c, r->acc_dt, r->init_f) : cu_ilit(c, r->acc_dt, r->init_i);
}

/* Sets (decl: declares) the accumulators of a stage to their identities. */
static void stage_init(cx *c, const td_rred *r, int n, int decl) {
  for (int i = 0; i < n; i++) {
    cu_line(c, "%s%sa%d = %s;", decl ? cu_vtn[r[i].acc_dt] : "", decl ? " " : "", r[i].node, acc_init(c, &r[i]));
    if (r[i].has_idx) cu_line(c, "%sx%d = -1;", decl ? "int64_t " : "", r[i].node);
  }
}

/* "v better than best" (compiler/kexpr.c's rule, as the CPU backend's). */
static const char *better(cx *c, td_op op, td_dtype dt, const char *v, const char *best) {
  td_kxgen x = cu_kxgen(c);
  return td_kx_better(&x, op, dt, cu_ixv(v), cu_ixv(best));
}

static const char *red_index(cx *c, const cx_ix *ix) {
  for (int a = 0; a < c->k->rank; a++)
    if (c->k->red_axes >> a & 1) return ix->v[a];
  return "0LL";
}

static int stage_body(cx *c, const td_rred *r, int n, const cx_ix *ix) {
  for (int i = 0; i < n; i++) {
    const td_node *nd = ND(c, r[i].node);
    int src = r[i].src;
    const char *v = cu_ev(c, src, ix);
    if (!v) return -1;
    td_dtype dt = ND(c, src)->dtype;
    int id = r[i].node;
    const char *acc = cu_fmt(c, "a%d", id);
    td_kxgen x = cu_kxgen(c);
    if (nd->op == TD_IR_SUM || nd->op == TD_IR_PROD) {
      cu_line(c, "%s = %s;", acc, (const char *)td_kx_fold(&x, nd->op, dt, r[i].acc_dt, cu_ixv(acc), cu_ixv(v)));
    } else if (nd->op == TD_IR_RMAX || nd->op == TD_IR_RMIN) {
      cu_line(c, "if (%s) %s = %s;", better(c, nd->op, dt, v, acc), acc, v);
    } else {
      const char *take = td_kx_arg_takes(&x, nd->op, dt, cu_ixv(v), cu_ixv(acc), cu_ixv(cu_fmt(c, "x%d", id)));
      cu_line(c, "if (%s) { a%d = %s; x%d = %s; }", take, id, v, id, red_index(c, ix));
    }
  }
  return 0;
}

/* Folds the accumulators named with prefix `o` (o_a<id>...) into the
 * thread's own (codegen_reduce.c's combine, the same rules). */
static void combine(cx *c, const td_rred *r, int n) {
  for (int i = 0; i < n; i++) {
    const td_node *nd = ND(c, r[i].node);
    td_dtype dt = in_dtype(c, r[i].node);
    int id = r[i].node;
    if (nd->op == TD_IR_SUM || nd->op == TD_IR_PROD) {
      const char *o = nd->op == TD_IR_SUM ? "+" : "*";
      if (td_dtype_is_float(dt)) cu_line(c, "a%d = a%d %s o_a%d;", id, id, o, id);
      else cu_line(c, "a%d = (int64_t)((uint64_t)a%d %s (uint64_t)o_a%d);", id, id, o, id);
    } else if (nd->op == TD_IR_RMAX || nd->op == TD_IR_RMIN) {
      cu_line(c, "if (%s) a%d = o_a%d;", better(c, nd->op, dt, cu_fmt(c, "o_a%d", id), cu_fmt(c, "a%d", id)), id, id);
    } else {   /* arg: kexpr.c's tie rule */
      td_kxgen x = cu_kxgen(c);
      const char *wins = td_kx_arg_wins(&x, nd->op, dt, cu_ixv(cu_fmt(c, "a%d", id)), cu_ixv(cu_fmt(c, "x%d", id)),
                                        cu_ixv(cu_fmt(c, "o_a%d", id)), cu_ixv(cu_fmt(c, "o_x%d", id)));
      cu_line(c, "if (%s) { a%d = o_a%d; x%d = o_x%d; }", wins, id, id, id, id);
    }
  }
}

/* The accumulators of the thread `off` lanes down, as o_*. */
static void shuffle_in(cx *c, const td_rred *r, int n) {
  for (int i = 0; i < n; i++) {
    int id = r[i].node;
    cu_line(c, "%s o_a%d = td_shfl_down(a%d, off);", cu_vtn[r[i].acc_dt], id, id);
    if (r[i].has_idx) cu_line(c, "int64_t o_x%d = td_shfl_down(x%d, off);", id, id);
  }
}

static void warp_reduce(cx *c, const td_rred *r, int n) {
  cu_open(c, "for (int off = 16; off > 0; off >>= 1)");
  shuffle_in(c, r, n);
  combine(c, r, n);
  cu_close(c);
}

/* Moves every accumulator between the thread and shared slot `slot`. */
static void shared_io(cx *c, const td_rred *r, int n, int s, const char *slot, int to_shared) {
  for (int i = 0; i < n; i++) {
    int id = r[i].node;
    const char *names[2] = {"a", "x"};
    int has[2] = {1, r[i].has_idx};
    for (int j = 0; j < 2; j++) {
      if (!has[j]) continue;
      if (to_shared) cu_line(c, "sh%d_%s%d[%s] = %s%d;", s, names[j], id, slot, names[j], id);
      else cu_line(c, "%s%d = sh%d_%s%d[%s];", names[j], id, s, names[j], id, slot);
    }
  }
}

/* Combines the accumulators of all threads of the block; afterwards every
 * thread holds the row's result. */
static void block_reduce(cx *c, const td_rred *r, int n, int s) {
  for (int i = 0; i < n; i++) {
    int id = r[i].node;
    cu_line(c, "__shared__ %s sh%d_a%d[32];", cu_vtn[r[i].acc_dt], s, id);
    if (r[i].has_idx) cu_line(c, "__shared__ int64_t sh%d_x%d[32];", s, id);
  }
  warp_reduce(c, r, n);
  cu_open(c, "if ((threadIdx.x & 31) == 0)");
  shared_io(c, r, n, s, "threadIdx.x >> 5", 1);
  cu_close(c);
  cu_line(c, "__syncthreads();");
  cu_open(c, "if (threadIdx.x < 32)");
  cu_open(c, "if (threadIdx.x < (blockDim.x >> 5))");
  shared_io(c, r, n, s, "threadIdx.x", 0);
  c->indent--;
  cu_line(c, "} else {");
  c->indent++;
  stage_init(c, r, n, 0);
  cu_close(c);
  warp_reduce(c, r, n);
  cu_open(c, "if (threadIdx.x == 0)");
  shared_io(c, r, n, s, "0", 1);
  cu_close(c);
  cu_close(c);
  cu_line(c, "__syncthreads();");
  shared_io(c, r, n, s, "0", 0);
  cu_line(c, "__syncthreads();");
}

/* The index of node n at the current row (index.c's td_ix_row, as the CPU
 * backend's cg_row_ix). */
static cx_ix *row_ix(cx *c, int n, const cx_ix *row) {
  td_ixgen x = cu_ixgen(c);
  return td_ix_row(&x, ND(c, n), c->k->space, c->k->rank, c->k->red_axes, row);
}

static void stage_finish(cx *c, const td_rred *r, int n) {
  for (int i = 0; i < n; i++) {
    const td_node *nd = ND(c, r[i].node);
    int id = r[i].node;
    const char *v = r[i].has_idx ? cu_fmt(c, "x%d", id) : cu_fmt(c, "a%d", id);
    c->red_val[id] = cu_ixv(cu_keep(c, cu_vtn[nd->dtype], cu_convert(c, v, r[i].fin_dt, nd->dtype)));
  }
}

static int emit_stage(cx *c, int s, const cx_ix *row, const char *rlen) {
  const td_kstage *st = &c->k->stages[s];
  int n = st->n_reds;
  td_rred *r = td_arena_alloc(c->a, (size_t)(n + 1) * sizeof *r);
  if (!r) return td_err_set(c->err, "out of memory");
  td_rowplan_stage(c->g, st, r);
  stage_init(c, r, n, 1);
  cu_open(c, cu_fmt(c, c->cols ? "for (int64_t t = 0; t < %s; t++)" : "for (int64_t t = threadIdx.x; t < %s; t += blockDim.x)",
                  rlen));
  td_kxmark m = cu_mark(c);
  cx_ix *ix = cu_ix_new(c, c->k->rank);
  *ix = *row;
  cu_delinearize(c, "t", c->k->space, c->k->rank, c->k->red_axes, "r", ix);
  if (stage_body(c, r, n, ix)) return -1;
  cu_release(c, m);
  cu_close(c);
  if (!c->cols) block_reduce(c, r, n, s);
  stage_finish(c, r, n);
  return 0;
}

/* Column mode: when the innermost axis of the space is kept and at least 64
 * long (or symbolic), neighbouring threads take neighbouring rows and each
 * reduces its row alone, so the loads of a warp are contiguous (a
 * reduction over a leading axis); otherwise a block per row. */
static int column_mode(const td_kernel *k) {
  for (int a = k->rank - 1; a >= 0; a--) {
    if (k->space[a] == 1) continue;
    if (k->red_axes >> a & 1) return 0;
    return !TD_DIM_IS_CONST(k->space[a]) || k->space[a] >= 64;
  }
  return 0;
}

int cu_emit_reduce(cx *c) {
  const td_kernel *k = c->k;
  const char *rows = cu_dim(c, cu_extent(c, k->space, k->rank, ~k->red_axes));
  const char *rlen = cu_dim(c, cu_extent(c, k->space, k->rank, k->red_axes));
  c->cols = column_mode(k);
  if (c->cols)
    cu_open(c, cu_fmt(c, "for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < %s; "
                       "row += (int64_t)gridDim.x * blockDim.x)", rows));
  else cu_open(c, cu_fmt(c, "for (int64_t row = blockIdx.x; row < %s; row += gridDim.x)", rows));
  cx_ix *row = cu_ix_new(c, k->rank);
  cu_delinearize(c, "row", k->space, k->rank, ~k->red_axes, "o", row);
  for (int s = 0; s < k->n_stages; s++)
    if (emit_stage(c, s, row, rlen)) return -1;
  td_kxmark m = cu_mark(c);
  if (k->row_root) {
    cu_open(c, c->cols ? "" : "if (threadIdx.x == 0)");
    cx_ix *rix = row_ix(c, k->root, row);
    const char *v = cu_ev(c, k->root, rix);
    if (!v) return -1;
    cu_store(c, k->root, rix, v);
    cu_close(c);
  } else {
    cu_open(c, cu_fmt(c, c->cols ? "for (int64_t t = 0; t < %s; t++)" : "for (int64_t t = threadIdx.x; t < %s; t += blockDim.x)",
                    rlen));
    cx_ix *ix = cu_ix_new(c, k->rank);
    *ix = *row;
    cu_delinearize(c, "t", k->space, k->rank, k->red_axes, "r", ix);
    const char *v = cu_ev(c, k->root, ix);
    if (!v) return -1;
    cu_store(c, k->root, ix, v);
    cu_close(c);
  }
  cu_release(c, m);
  cu_close(c);
  for (int i = 0; i < k->n_nodes; i++) c->red_val[k->nodes[i]] = NULL;
  return c->failed ? -1 : 0;
}

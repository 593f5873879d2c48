/* codegen_prepack.c - a MATMUL kernel whose B is a parameter packed once
 * by the runtime (tdc_kinfo.pack, artifact/prepack.h) into the packed
 * path's NR-column panels, read at bufs[n_bufs + kernel].
 *
 * The kernel's parallel range runs over rows x column blocks (one block
 * per panel, so even one row splits across threads).  Runs of at least
 * PP_PACKED_M full rows use the blocked packed path (codegen_gemm.c) on
 * the prepacked panels; the rest small tiles (PP_ROWS rows x NR, or one
 * row with K unrolled PP_UNROLL ways): broadcast A, FMA with the panel's
 * vectors, no horizontal sums, then the epilogue of each element.
 */
#include "compiler/gemm_impl.h"

/* ---- prepacked B: the parameter's panels packed once (prepack.h) ---------------------- */

#define PP_ROWS 4     /* rows per tile of the small-M loop */
#define PP_UNROLL 4   /* single rows: K unrolled into this many accumulator sets */
#define PP_PACKED_M 64   /* from this many full rows the blocked packed path takes over */
#define PP_SHORT_EPILOGUE 6   /* short_epilogue: written once per tile row */

/* The prepacked B of this kernel: bufs[n_bufs + kernel index]. */
gcc_jit_rvalue *cg_gemm_prepacked_ptr(cg *c, mm *m) {
  gcc_jit_lvalue *l = cg_local(c, m->tp, "pb");
  gcc_jit_rvalue *raw = rv(gcc_jit_context_new_array_access(c->ctx, NULL, c->p_bufs, cg_i64(c, cg_buf_index(c, c->p->n_bufs + c->kidx, -1))));
  gcc_jit_block_add_assignment(c->entry, NULL, l, gcc_jit_context_new_cast(c->ctx, NULL, raw, m->tp));
  return rv(l);
}

/* One k of a tile: the panel's NV vectors of row kk times the broadcast
 * A[row r, kk], added into acc[r][*]. */
static void pp_step(cg *c, mm *m, packed *P, gcc_jit_lvalue *(*acc)[MAX_NV], gcc_jit_rvalue **arow, int R,
                    gcc_jit_rvalue *pbase, gcc_jit_rvalue *kk) {
  const gemm_shape *s = &P->s;
  gcc_jit_rvalue *bk = keep_i(c, add(c, pbase, mul(c, kk, cg_i64(c, s->nr))), "bk");
  gcc_jit_lvalue *b[MAX_NV];
  cg_gemm_load_b(c, P, bk, b);
  for (int r = 0; r < R; r++) cg_gemm_bcast_fma(c, m, P, acc[r], b, at(c, m->aptr, add(c, arow[r], mul(c, kk, m->sak))));
}

/* Is the kernel's epilogue short: at most PP_SHORT_EPILOGUE nodes, none
 * that expands to a long formula (exp, gelu, a random draw...)? */
static int short_epilogue(const cg *c) {
  if (c->k->n_nodes > PP_SHORT_EPILOGUE) return 0;
  for (int i = 0; i < c->k->n_nodes; i++) {
    const td_node *n = &c->g->nodes[c->k->nodes[i]];
    td_opkind kind = td_ops[n->op].kind;
    if (kind == TD_K_RANDOM || kind == TD_K_GATHER || kind == TD_K_REDUCE || kind == TD_K_EFFECT) return 0;
    if (kind == TD_K_UNARY && n->op != TD_IR_NEG && n->op != TD_IR_ABS && n->op != TD_IR_RELU &&
        n->op != TD_IR_CAST && n->op != TD_IR_NOT)
      return 0;
  }
  return 1;
}

/* R rows from row i times panel jp of the prepacked B over all of K: U
 * independent sets of R x NV vector accumulators (U k's per step), summed,
 * stored to a local tile, then the epilogue of each element. */
static int pp_tile(cg *c, mm *m, packed *P, gcc_jit_rvalue *i, gcc_jit_rvalue *jp, int R, int U) {
  const gemm_shape *s = &P->s;
  gcc_jit_lvalue *acc[PP_UNROLL][PP_ROWS][MAX_NV];
  gcc_jit_rvalue *zeros[64], *arow[PP_ROWS];
  for (int l = 0; l < s->vl; l++) zeros[l] = cg_const(c, m->dt, 0, 0);
  gcc_jit_rvalue *z = gcc_jit_context_new_rvalue_from_vector(c->ctx, NULL, P->vt, (size_t)s->vl, zeros);
  for (int u = 0; u < U; u++)
    for (int r = 0; r < R; r++)
      for (int v = 0; v < s->nv; v++) {
        acc[u][r][v] = cg_local(c, P->vt, "pacc");
        cg_assign(c, acc[u][r][v], z);
      }
  for (int r = 0; r < R; r++) arow[r] = keep_i(c, add(c, m->aoff, mul(c, add(c, i, cg_i64(c, r)), m->sam)), "arow");
  gcc_jit_rvalue *pbase = keep_i(c, mul(c, jp, mul(c, m->K, cg_i64(c, s->nr))), "pbase");
  gcc_jit_rvalue *ku = U > 1 ? keep_i(c, ib(c, GCC_JIT_BINARY_OP_MINUS, m->K, ib(c, GCC_JIT_BINARY_OP_MODULO, m->K, cg_i64(c, U))), "ku") : m->K;
  cloop lk, lt;
  gcc_jit_rvalue *k = cg_loop_range(c, &lk, cg_i64(c, 0), ku, U);
  for (int u = 0; u < U; u++) pp_step(c, m, P, acc[u], arow, R, pbase, u ? add(c, k, cg_i64(c, u)) : k);
  cg_loop_close(c, &lk);
  if (U > 1) {
    k = cg_loop_range(c, &lt, ku, m->K, 1);
    pp_step(c, m, P, acc[0], arow, R, pbase, k);
    cg_loop_close(c, &lt);
  }
  for (int w = U; w > 1; w /= 2)   /* a tree over the sets */
    for (int u = 0; u < w / 2; u++)
      for (int r = 0; r < R; r++)
        for (int v = 0; v < s->nv; v++)
          gcc_jit_block_add_assignment_op(c->blk, NULL, acc[u][r][v], GCC_JIT_BINARY_OP_PLUS, rv(acc[u + w / 2][r][v]));
  /* the tile goes to a local array, not to scratch: GCC sees that nothing
   * else writes it and the vectorised epilogue reads the accumulators
   * from registers (through scratch: a store-forwarding stall per row) */
  gcc_jit_type *tt = gcc_jit_type_get_aligned(gcc_jit_context_new_array_type(c->ctx, NULL, m->t, R * s->nr), 64);
  gcc_jit_rvalue *cb = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c->ctx, NULL, rv(cg_local(c, tt, "tile")), cg_i64(c, 0)), NULL);
  for (int r = 0; r < R; r++)
    for (int v = 0; v < s->nv; v++)
      cg_assign(c, cg_gemm_vec_at(c, P, cb, cg_i64(c, r * s->nr + v * s->vl)), rv(acc[0][r][v]));
  gcc_jit_rvalue *j0 = keep_i(c, mul(c, jp, cg_i64(c, s->nr)), "j0");
  /* the prepacked N is a constant: when panels divide it, every tile's
   * epilogue runs a known number of columns (no remainder loops) */
  gcc_jit_rvalue *jn = c->kinfo->pack.n % s->nr == 0
                           ? cg_i64(c, s->nr)
                           : keep_i(c, imin(c, cg_i64(c, s->nr), ib(c, GCC_JIT_BINARY_OP_MINUS, m->N, j0)), "jn");
  /* a short epilogue (a bias, a relu) is written once per row: the
   * vectorised epilogue then reads the accumulators from registers, not
   * back from the tile; a long one (gelu, a residual) once for the R rows,
   * as compile time grows with every copy */
  int per_row = short_epilogue(c);
  cloop lr, lj;
  for (int r = 0; r < (per_row ? R : 1); r++) {
    gcc_jit_rvalue *rr = per_row ? cg_i64(c, r) : cg_loop_open(c, &lr, cg_i64(c, R));
    gcc_jit_rvalue *row = keep_i(c, add(c, i, rr), "row");
    gcc_jit_rvalue *crow = keep_i(c, mul(c, rr, cg_i64(c, s->nr)), "crow");
    gcc_jit_rvalue *j = cg_loop_open(c, &lj, jn);
    if (cg_gemm_epilogue(c, m->ix, m->r, row, add(c, j0, j), elem(c, cb, add(c, crow, j)))) return -1;
    cg_loop_close(c, &lj);
    if (!per_row) cg_loop_close(c, &lr);
  }
  return 0;
}

/* Rows i0 .. i1 times panels p0 .. p1: per panel (which stays in L2 while
 * the rows go by), tiles of PP_ROWS rows, then single rows. */
static int pp_rows(cg *c, mm *m, packed *P, gcc_jit_rvalue *i0, gcc_jit_rvalue *i1, gcc_jit_rvalue *p0,
                   gcc_jit_rvalue *p1) {
  cloop lp, l4, l1;
  gcc_jit_rvalue *jp = cg_loop_range(c, &lp, p0, p1, 1);
  gcc_jit_rvalue *lim = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MINUS, i1, cg_i64(c, PP_ROWS - 1)), "lim");
  gcc_jit_rvalue *i = cg_loop_range(c, &l4, i0, lim, PP_ROWS);
  /* a tile needs 8 independent FMA chains to hide the FMA latency (2 units
   * x 4 cycles): with one-vector panels, two sets over K */
  if (pp_tile(c, m, P, i, jp, PP_ROWS, PP_ROWS * P->s.nv < 8 ? 2 : 1)) return -1;
  cg_loop_close(c, &l4);
  i = cg_loop_range(c, &l1, rv(l4.i), i1, 1);
  if (pp_tile(c, m, P, i, jp, 1, PP_UNROLL)) return -1;
  cg_loop_close(c, &l1);
  cg_loop_close(c, &lp);
  return 0;
}

static gcc_jit_rvalue *cmp(cg *c, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(c->ctx, NULL, op, a, b);
}

/* Full rows flo .. fhi through the blocked packed path when there are
 * enough of them (then *small_lo = fhi: no rows left for the tiles). */
static int big_rows(cg *c, mm *m, gcc_jit_rvalue *flo, gcc_jit_rvalue *fhi, gcc_jit_rvalue *pb, gcc_jit_lvalue *small_lo) {
  gcc_jit_rvalue *nf = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MINUS, fhi, flo), "nf");
  gcc_jit_rvalue *big = gcc_jit_context_new_binary_op(
      c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool, cmp(c, GCC_JIT_COMPARISON_GE, nf, cg_i64(c, PP_PACKED_M)),
      cmp(c, GCC_JIT_COMPARISON_GE, mul(c, mul(c, nf, m->N), m->K), cg_i64(c, 32768)));
  cif fb;
  if_open(c, &fb, big);
  if (m->r == 2 ? cg_gemm_outlined(c, flo, fhi, 1) : cg_gemm_packed_rows(c, m, flo, fhi, pb)) return -1;
  cg_assign(c, small_lo, fhi);
  if_close(c, &fb);
  return 0;
}

/* The range [lo, hi) of the flattened (row, column block) space, row-major
 * with `cols` blocks of one panel each (tdc_kinfo), is cut into at most
 * three pieces: the rest of a first partial row, the full rows, the start
 * of a last partial row.  Full rows go to the packed path when there are
 * enough of them; everything else to the small-M tiles, which read the
 * panels as they are (no packing, no horizontal sums). */
int cg_gemm_prepacked(cg *c, mm *m) {
  int64_t cols = c->kinfo->cols;
  packed P;
  cg_gemm_packed_init(c, m, &P);
  int full = c->kinfo->pack.nr == P.s.nr;   /* else one vector wide: the small tiles only */
  P.s.nr = (int)c->kinfo->pack.nr;
  P.s.nv = P.s.nr / P.s.vl;
  P.bp = cg_gemm_prepacked_ptr(c, m);
  P.cb = gcc_jit_context_new_cast(c->ctx, NULL, c->p_scratch, m->tp);
  gcc_jit_rvalue *lo = c->par_axis == m->r - 2 ? c->p_lo : cg_i64(c, 0);
  gcc_jit_rvalue *hi = c->par_axis == m->r - 2 ? c->p_hi : keep_i(c, mul(c, m->M, cg_i64(c, cols)), "ext");
  gcc_jit_rvalue *one = cg_i64(c, 1), *zero = cg_i64(c, 0), *ncols = cg_i64(c, cols);
  cif f;
  if_open(c, &f, lt(c, lo, hi));
  if (cols == 1) {   /* one panel: every row is whole (W1's nn.Linear(16, 16)) */
    gcc_jit_lvalue *from = cg_local(c, c->t_i64, "slo");
    cg_assign(c, from, lo);
    if (full && big_rows(c, m, lo, hi, P.bp, from)) return -1;
    if (pp_rows(c, m, &P, rv(from), hi, zero, one)) return -1;
    if_close(c, &f);
    return 0;
  }
  gcc_jit_rvalue *r0 = keep_i(c, ib(c, GCC_JIT_BINARY_OP_DIVIDE, lo, ncols), "r0");
  gcc_jit_rvalue *c0 = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MODULO, lo, ncols), "c0");
  gcc_jit_rvalue *r1 = keep_i(c, ib(c, GCC_JIT_BINARY_OP_DIVIDE, hi, ncols), "r1");
  gcc_jit_rvalue *c1 = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MODULO, hi, ncols), "c1");
  gcc_jit_rvalue *same = cmp(c, GCC_JIT_COMPARISON_EQ, r0, r1);
  /* a: the first row is partial (or the only one) */
  gcc_jit_rvalue *a = cg_select(c, lt(c, zero, c0), one, cg_select(c, same, one, zero, c->t_i64), c->t_i64);
  gcc_jit_rvalue *flo = keep_i(c, add(c, r0, a), "flo");
  gcc_jit_rvalue *fhi = cg_select(c, lt(c, r1, flo), flo, r1, c->t_i64);
  gcc_jit_lvalue *small_lo = cg_local(c, c->t_i64, "slo");
  cg_assign(c, small_lo, flo);
  if (full && big_rows(c, m, flo, fhi, P.bp, small_lo)) return -1;
  /* the pieces left: rows [seg[4s], seg[4s+1]) x panels [seg[4s+2], seg[4s+3]) */
  gcc_jit_rvalue *last = cg_select(c, lt(c, r0, r1), cg_select(c, lt(c, zero, c1), add(c, r1, one), r1, c->t_i64), r1, c->t_i64);
  gcc_jit_rvalue *vals[12] = {r0, flo, c0, cg_select(c, same, c1, ncols, c->t_i64),
                              rv(small_lo), fhi, zero, ncols,
                              r1, last, zero, c1};
  gcc_jit_lvalue *seg = cg_local(c, gcc_jit_context_new_array_type(c->ctx, NULL, c->t_i64, 12), "seg");
  for (int t = 0; t < 12; t++) cg_assign(c, gcc_jit_context_new_array_access(c->ctx, NULL, rv(seg), cg_i64(c, t)), vals[t]);
  cloop ls;
  gcc_jit_rvalue *sg = cg_loop_range(c, &ls, zero, cg_i64(c, 12), 4);
  gcc_jit_rvalue *e[4];
  for (int t = 0; t < 4; t++) e[t] = keep_i(c, elem(c, rv(seg), add(c, sg, cg_i64(c, t))), "sg");
  if (pp_rows(c, m, &P, e[0], e[1], e[2], e[3])) return -1;
  cg_loop_close(c, &ls);
  if_close(c, &f);
  return 0;
}


/* codegen_gemm.c - the body of a MATMUL kernel: GEMM with a fused epilogue.
 *
 * C[b, i, j] = sum_k A[b, i, k] * B[b, k, j], where A and B are strided
 * views of buffers (plan.h's td_view, batch dims broadcast by stride 0),
 * and every element goes through the kernel's epilogue (cg_eval of the
 * root with the accumulated value standing for the matmul) before it is
 * stored.  Two paths, chosen at run time per call:
 *
 * packed (f32/f64, M >= MR and M*N*K >= 32768): two functions shared by
 *   every matmul kernel of the compilation (one pair per dtype, so each
 *   kernel only adds its own epilogue): tdsl_gemm_pack_b_T packs B once per
 *   batch into column panels of NR (zero padded: panel jp holds K rows of
 *   NR elements), and tdsl_gemm_block_T computes the C block of MC rows
 *   (row-major in scratch): per block of KC columns of A it packs A into
 *   row panels of MR (or, when A has unit stride along K, reads A's rows
 *   in place: the scalar packing copy was ~8 % of W6's GEMM time), then
 *   every MR x NR tile is held in MR*NV vector registers (gccjit vector
 *   types, NV vectors of VL lanes per row; zero for the first K block,
 *   loaded from the C block after it), updated with broadcast(a[r]) *
 *   b_vectors for each k of the block (FMAs on x86-64-v3 and v4) and
 *   stored back.  The kernel then runs the
 *   epilogue over the block's rows and stores the final values.  Register
 *   tiles: AVX-512 8 x 32 f32 (16 zmm accumulators), AVX2 6 x 16, SSE 4 x 8
 *   (halved in elements for f64); MC = 8 MR, KC = 256.  With threads, each
 *   range of rows packs its own copy of B.
 *
 * dot (floats, M < 64 or small products, B^T contiguous as in x @ w.T): every
 *   element a dot product of two contiguous vectors, one vector
 *   accumulator per column, 8 columns at a time, nothing packed (dot_path);
 *
 * simple (integers, other small products): per row i, a row accumulator of N
 *   elements gets a[i,k] * B[k, :] for every k (B packed into a row-major
 *   panel when its rows are not contiguous), then the epilogue.
 *
 * prepacked (f32/f64 with B a parameter, tdc_kinfo.pack; codegen_prepack.c):
 *   B was packed once by the runtime into the packed path's panels
 *   (prepack.h) and is read at bufs[n_bufs + kernel].  The parallel range runs over rows x
 *   column blocks (one per panel); runs of >= 64 full rows use the blocked
 *   packed path on the prepacked panels, the rest small tiles (4 rows x
 *   NR, or one row with K unrolled 4 ways): broadcast A, FMA with the
 *   panel's vectors, no horizontal sums (prepacked_path).
 *
 * Scratch layout (64-byte aligned, per thread): [packed B][packed A
 * block][C block]; with a prepacked B: [packed A block][C block], or the
 * small tiles' R x NR tile at the start.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/gemm_impl.h"

static gemm_shape shape_for(int isa, td_dtype dt) {
  gemm_shape s;
  int w = isa == 2 ? 64 : isa == 1 ? 32 : 16;   /* vector bytes */
  s.vl = w / (int)td_dtype_size(dt);
  s.nv = 2;
  s.nr = s.vl * s.nv;
  s.mr = isa == 2 ? 8 : isa == 1 ? 6 : 4;
  /* 24 tiles of rows per C block (192 rows at AVX-512): each B
   * micro-panel fetched from L3 serves 24 tiles; sgemm 2048 at T=1:
   * 64 rows 168-172 ms, 128 rows 164-167, 192 rows 163-166, 256 rows
   * 163-166, 384 rows 167-174 (alternating runs); 1024, W4 and W6 equal.
   * At most TDC_GEMM_MC_MAX (prepack.h: the scratch bound). */
  s.mc = s.mr * 24;
  s.kc = TDC_GEMM_KC;
  return s;
}

int tdc_gemm_nr(int isa, td_dtype dt) { return shape_for(isa, dt).nr; }

size_t tdc_matmul_scratch(int64_t m, int64_t n, int64_t k) {
  (void)m;
  return tdc_gemm_scratch(n, k);
}

/* Element offset of a view at batch index bix (output axes). */
gcc_jit_rvalue *cg_gemm_view_base(cg *c, const td_view *v, const cg_ix *bix, int out_rank) {
  gcc_jit_rvalue *off = cg_dim(c, v->offset);
  for (int t = 0; t + 2 < v->rank; t++) {
    int a = t + out_rank - v->rank;
    if (v->shape[t] == 1 || bix->zero[a]) continue;
    off = add(c, off, mul(c, bix->v[a], cg_dim(c, v->stride[t])));
  }
  return keep_i(c, off, "off");
}

/* Stores value(root, (batch, i, j)) with acc standing for the matmul. */
int cg_gemm_epilogue(cg *c, cg_ix *ix, int r, gcc_jit_rvalue *i, gcc_jit_rvalue *j, gcc_jit_rvalue *acc) {
  ix->v[r - 2] = i;
  ix->zero[r - 2] = 0;
  ix->v[r - 1] = j;
  ix->zero[r - 1] = 0;
  long mark = cg_memo_mark(c);
  c->mm_acc = acc;
  gcc_jit_rvalue *v = cg_eval(c, c->k->root, ix);
  if (v) cg_store(c, c->k->root, ix, v);
  c->mm_acc = NULL;
  cg_memo_release(c, mark);
  return v ? 0 : -1;
}


/* ---- multiply-adds ------------------------------------------------------------------- *
 *
 * Kernels are compiled with -ffp-contract=off (codegen_cpu.c: a value must
 * round the same wherever a kernel computes it), so GCC fuses nothing; the
 * GEMM's accumulations ask for their fused multiply-adds explicitly.  On
 * x86-64-v3 and v4 every product of a float matmul is accumulated with one
 * rounding (an FMA), on v2 (no FMA instructions) with two. */

/* acc += a * b for scalars of dtype dt (a fused __builtin_fma on float
 * types where the ISA has FMA: it vectorises like the plain expression). */
static void fma_acc(cg *c, mm *m, gcc_jit_lvalue *acc, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  if (!td_dtype_is_float(m->dt) || c->isa < 1) {
    gcc_jit_block_add_assignment_op(c->blk, NULL, acc, GCC_JIT_BINARY_OP_PLUS,
                                    gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_MULT, m->t, a, b));
    return;
  }
  gcc_jit_function *f = gcc_jit_context_get_builtin_function(c->ctx, m->dt == TD_F32 ? "__builtin_fmaf" : "__builtin_fma");
  gcc_jit_rvalue *args[3] = {a, b, rv(acc)};
  cg_assign(c, acc, gcc_jit_context_new_call(c->ctx, NULL, f, 3, args));
}

/* acc += a * b for float vectors of type vt: vfmadd231ps/pd where the ISA
 * has FMA (gccjit has no vector FMA builtin, so an asm statement whose
 * operands GCC allocates in vector registers), else a multiply and an add. */
static void vfma_acc(cg *c, mm *m, gcc_jit_type *vt, gcc_jit_lvalue *acc, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  if (c->isa < 1) {
    gcc_jit_block_add_assignment_op(c->blk, NULL, acc, GCC_JIT_BINARY_OP_PLUS,
                                    gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_MULT, vt, a, b));
    return;
  }
  gcc_jit_extended_asm *x = gcc_jit_block_add_extended_asm(
      c->blk, NULL, m->dt == TD_F32 ? "vfmadd231ps %[b], %[a], %[acc]" : "vfmadd231pd %[b], %[a], %[acc]");
  gcc_jit_extended_asm_add_output_operand(x, "acc", "+v", acc);
  gcc_jit_extended_asm_add_input_operand(x, "a", "v", a);
  gcc_jit_extended_asm_add_input_operand(x, "b", "vm", b);
}

/* ---- the simple path ------------------------------------------------------------------ */

static int simple_path(cg *c, mm *m) {
  gcc_jit_rvalue *row = gcc_jit_context_new_cast(c->ctx, NULL, c->p_scratch, m->tp);
  gcc_jit_rvalue *bp = m->bptr, *ldb = m->sbk, *bbase = m->boff;
  cloop li, lj, lk, l2;
  if (m->B->stride[m->B->rank - 1] != 1) {   /* pack B as a row-major K x N panel */
    bp = gcc_jit_lvalue_get_address(at(c, row, m->N), NULL);
    gcc_jit_rvalue *kk = cg_loop_open(c, &lk, m->K);
    gcc_jit_rvalue *src = add(c, m->boff, mul(c, kk, m->sbk));
    gcc_jit_rvalue *j = cg_loop_open(c, &lj, m->N);
    gcc_jit_block_add_assignment(c->blk, NULL, at(c, bp, add(c, j, mul(c, kk, m->N))),
                                 elem(c, m->bptr, add(c, src, mul(c, j, m->sbn))));
    cg_loop_close(c, &lj);
    cg_loop_close(c, &lk);
    ldb = m->N;
    bbase = cg_i64(c, 0);
  }
  gcc_jit_rvalue *i = c->par_axis == m->r - 2 ? cg_loop_range(c, &li, c->p_lo, c->p_hi, 1) : cg_loop_open(c, &li, m->M);
  gcc_jit_rvalue *j = cg_loop_open(c, &lj, m->N);
  gcc_jit_block_add_assignment(c->blk, NULL, at(c, row, j), cg_const(c, m->dt, 0, 0));
  cg_loop_close(c, &lj);
  gcc_jit_rvalue *kk = cg_loop_open(c, &lk, m->K);
  gcc_jit_lvalue *a = cg_local(c, m->t, "a");
  cg_assign(c, a, elem(c, m->aptr, add(c, add(c, m->aoff, mul(c, i, m->sam)), mul(c, kk, m->sak))));
  gcc_jit_rvalue *brow = keep_i(c, add(c, bbase, mul(c, kk, ldb)), "brow");
  j = cg_loop_open(c, &lj, m->N);
  fma_acc(c, m, at(c, row, j), rv(a), elem(c, bp, add(c, brow, j)));
  cg_loop_close(c, &lj);
  cg_loop_close(c, &lk);
  j = cg_loop_open(c, &l2, m->N);
  if (cg_gemm_epilogue(c, m->ix, m->r, i, j, elem(c, row, j))) return -1;
  cg_loop_close(c, &l2);
  cg_loop_close(c, &li);
  return 0;
}

/* ---- the dot path: small M with B transposed in memory -------------------------------- */

#define DOT_J 8    /* columns of C per step: independent FMA chains sharing A's loads */
#define DOT_MAX_M 64   /* the dot path serves products of fewer rows (when B^T is contiguous) */

typedef struct dotv {
  int vl;
  gcc_jit_type *vt, *vtp;     /* the vector type; a pointer to its unaligned variant */
  gcc_jit_lvalue *spill;      /* a local array of vl elements, for the final sums */
  gcc_jit_lvalue *sums;       /* a local array of DOT_J elements: the columns' dot products */
} dotv;

/* &sums[0] */
static gcc_jit_rvalue *sp2(cg *c, const dotv *D) {
  return gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c->ctx, NULL, gcc_jit_lvalue_as_rvalue(D->sums),
                                                                     cg_i64(c, 0)), NULL);
}

/* The vector at base[off] (any alignment of the element type). */
static gcc_jit_lvalue *dot_vec(cg *c, const dotv *D, gcc_jit_rvalue *base, gcc_jit_rvalue *off) {
  gcc_jit_rvalue *addr = gcc_jit_lvalue_get_address(at(c, base, off), NULL);
  return gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(c->ctx, NULL, addr, D->vtp), NULL);
}

/* The epilogue of columns j0 .. j0 + nj - 1 of row i, from sums: one copy
 * for the nj columns (compile time). */
static int dot_epilogue(cg *c, mm *m, const dotv *D, gcc_jit_rvalue *i, gcc_jit_rvalue *j0, int nj) {
  cloop le;
  gcc_jit_rvalue *jj = cg_loop_open(c, &le, cg_i64(c, nj));
  if (cg_gemm_epilogue(c, m->ix, m->r, i, keep_i(c, add(c, j0, jj), "j"), elem(c, sp2(c, D), jj))) return -1;
  cg_loop_close(c, &le);
  return 0;
}

/* tail[jj] += A[row at abase, k] * B^T[brow[jj], k] for k from k0 to K,
 * fused (fma_acc) or a multiply and an add. */
static void dot_scalar(cg *c, mm *m, gcc_jit_lvalue **tail, gcc_jit_rvalue **brow, gcc_jit_rvalue *abase,
                       gcc_jit_rvalue *k0, int nj, int fused) {
  cloop lr;
  gcc_jit_rvalue *k = cg_loop_range(c, &lr, k0, m->K, 1);
  for (int jj = 0; jj < nj; jj++) {
    gcc_jit_rvalue *a = elem(c, m->aptr, add(c, abase, k)), *b = elem(c, m->bptr, add(c, brow[jj], k));
    if (fused) fma_acc(c, m, tail[jj], a, b);
    else gcc_jit_block_add_assignment_op(c->blk, NULL, tail[jj], GCC_JIT_BINARY_OP_PLUS,
                                         gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_MULT, m->t, a, b));
  }
  cg_loop_close(c, &lr);
}

/* nj columns j0 .. j0 + nj - 1 of row i: one vector accumulator per column
 * over the contiguous rows of A and of B^T, a scalar one for the K % vl
 * tail, then the lanes summed and the epilogue of each column. */
static int dot_cols(cg *c, mm *m, const dotv *D, gcc_jit_rvalue *i, gcc_jit_rvalue *abase, gcc_jit_rvalue *kf,
                    gcc_jit_rvalue *j0, int nj) {
  gcc_jit_lvalue *acc[DOT_J], *tail[DOT_J];
  gcc_jit_rvalue *brow[DOT_J], *zeros[64];
  for (int l = 0; l < D->vl; l++) zeros[l] = cg_const(c, m->dt, 0, 0);
  for (int jj = 0; jj < nj; jj++) {
    if (D->spill) {
      acc[jj] = cg_local(c, D->vt, "dacc");
      cg_assign(c, acc[jj], gcc_jit_context_new_rvalue_from_vector(c->ctx, NULL, D->vt, (size_t)D->vl, zeros));
    }
    tail[jj] = cg_local(c, m->t, "dtail");
    cg_assign(c, tail[jj], cg_const(c, m->dt, 0, 0));
    brow[jj] = keep_i(c, add(c, m->boff, mul(c, add(c, j0, cg_i64(c, jj)), m->sbn)), "brow");
  }
  cloop lk;
  gcc_jit_rvalue *k;
  if (!D->spill) {   /* K is a constant below one vector: scalar products only, not fused:
                       * GCC multiplies the K pairs as one vector and adds them in order
                       * (W1 Simple, K = 4: 6 ns a call; with fmaf, a loop of scalar FMAs
                       * or, unrolled, the row loop vectorised, 10-12 ns) */
    dot_scalar(c, m, tail, brow, abase, cg_i64(c, 0), nj, 0);
    for (int jj = 0; jj < nj; jj++)
      cg_assign(c, gcc_jit_context_new_array_access(c->ctx, NULL, rv(D->sums), cg_i64(c, jj)), rv(tail[jj]));
    return dot_epilogue(c, m, D, i, j0, nj);
  }
  k = cg_loop_range(c, &lk, cg_i64(c, 0), kf, D->vl);
  gcc_jit_lvalue *av = cg_local(c, D->vt, "av");
  cg_assign(c, av, rv(dot_vec(c, D, m->aptr, add(c, abase, k))));
  for (int jj = 0; jj < nj; jj++)
    vfma_acc(c, m, D->vt, acc[jj], rv(av), rv(dot_vec(c, D, m->bptr, add(c, brow[jj], k))));
  cg_loop_close(c, &lk);
  dot_scalar(c, m, tail, brow, abase, kf, nj, 1);
  gcc_jit_rvalue *sp = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c->ctx, NULL, rv(D->spill), cg_i64(c, 0)), NULL);
  for (int jj = 0; jj < nj; jj++) {
    cg_assign(c, dot_vec(c, D, sp, cg_i64(c, 0)), rv(acc[jj]));
    /* the lanes summed as a tree of vector halves: spill[0:w/2] += spill[w/2:w] */
    for (int w = D->vl; w > 2; w /= 2) {
      gcc_jit_type *ht = gcc_jit_type_get_vector(m->t, (size_t)(w / 2));
      gcc_jit_type *hp = gcc_jit_type_get_pointer(gcc_jit_type_get_aligned(ht, td_dtype_size(m->dt)));
      gcc_jit_lvalue *lo = gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(c->ctx, NULL, sp, hp), NULL);
      gcc_jit_rvalue *hi_addr = gcc_jit_lvalue_get_address(at(c, sp, cg_i64(c, w / 2)), NULL);
      gcc_jit_lvalue *hi = gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(c->ctx, NULL, hi_addr, hp), NULL);
      gcc_jit_block_add_assignment_op(c->blk, NULL, lo, GCC_JIT_BINARY_OP_PLUS, rv(hi));
    }
    gcc_jit_rvalue *two = gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_PLUS, m->t,
                                                        elem(c, sp, cg_i64(c, 0)),
                                                        D->vl > 1 ? elem(c, sp, cg_i64(c, 1)) : cg_const(c, m->dt, 0, 0));
    cg_assign(c, gcc_jit_context_new_array_access(c->ctx, NULL, rv(D->sums), cg_i64(c, jj)),
              gcc_jit_context_new_binary_op(c->ctx, NULL, GCC_JIT_BINARY_OP_PLUS, m->t, two, rv(tail[jj])));
  }
  return dot_epilogue(c, m, D, i, j0, nj);
}

/* C = A B where A's rows and B's columns are contiguous (x @ w.T with w
 * stored [out, in], as nn.Linear does): every element is a dot product of
 * two contiguous vectors, so nothing is packed or copied — the path for
 * small M (batch-1 inference), where packing B would cost more than the
 * product itself. */
static int dot_path(cg *c, mm *m) {
  dotv D;
  D.vl = shape_for(c->isa, m->dt).vl;
  D.vt = gcc_jit_type_get_vector(m->t, (size_t)D.vl);
  D.vtp = gcc_jit_type_get_pointer(gcc_jit_type_get_aligned(D.vt, td_dtype_size(m->dt)));
  td_dim kd = m->A->shape[m->A->rank - 1];
  /* no vector part (and no 64-byte aligned spill, which costs every call
   * a realigned stack frame) when K is a constant under one vector */
  D.spill = TD_DIM_IS_CONST(kd) && kd < D.vl ? NULL
            : cg_local(c, gcc_jit_context_new_array_type(c->ctx, NULL, m->t, D.vl), "spill");
  D.sums = cg_local(c, gcc_jit_context_new_array_type(c->ctx, NULL, m->t, DOT_J), "dsum");
  cloop li, lj, lr;
  gcc_jit_rvalue *kf = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MINUS, m->K, ib(c, GCC_JIT_BINARY_OP_MODULO, m->K, cg_i64(c, D.vl))), "kf");
  gcc_jit_rvalue *nf = keep_i(c, ib(c, GCC_JIT_BINARY_OP_MINUS, m->N, ib(c, GCC_JIT_BINARY_OP_MODULO, m->N, cg_i64(c, DOT_J))), "nf");
  /* columns outer, rows inner: a block of DOT_J rows of B^T stays in cache
   * for all the rows of A */
  for (int pass = 0; pass < 2; pass++) {
    gcc_jit_rvalue *j = pass == 0 ? cg_loop_range(c, &lj, cg_i64(c, 0), nf, DOT_J) : cg_loop_range(c, &lj, nf, m->N, 1);
    gcc_jit_rvalue *i = c->par_axis == m->r - 2 ? cg_loop_range(c, &li, c->p_lo, c->p_hi, 1) : cg_loop_open(c, &li, m->M);
    gcc_jit_rvalue *abase = keep_i(c, add(c, m->aoff, mul(c, i, m->sam)), "arow");
    if (dot_cols(c, m, &D, i, abase, kf, j, pass == 0 ? DOT_J : 1)) return -1;
    cg_loop_close(c, &li);
    cg_loop_close(c, &lj);
  }
  (void)lr;
  return 0;
}

/* Are A's rows and B's columns contiguous (unit stride along K)? */
static int dot_able(const mm *m) {
  return m->A->stride[m->A->rank - 1] == 1 && m->B->stride[m->B->rank - 2] == 1 &&
         m->B->stride[m->B->rank - 1] != 1;
}

/* ---- the packed path: shared GEMM functions ------------------------------------------ */

/* Zeroes n elements at base[off] (a padded panel). */
static void zero_fill(cg *c, mm *m, gcc_jit_rvalue *base, gcc_jit_rvalue *off, gcc_jit_rvalue *n) {
  cloop l;
  gcc_jit_rvalue *t = cg_loop_open(c, &l, n);
  gcc_jit_block_add_assignment(c->blk, NULL, at(c, base, add(c, off, t)), cg_const(c, m->dt, 0, 0));
  cg_loop_close(c, &l);
}

/* Copies a panel: dst[d0 + x*dx + y*dy] = src[s0 + x*sx + y*sy] for x < nx,
 * y < ny, with the loop over x outside when `x_outer` (so the inner loop
 * runs along whichever side is contiguous). */
typedef struct copy2 {
  gcc_jit_rvalue *dst, *d0, *dx, *dy, *src, *s0, *sx, *sy, *nx, *ny;
} copy2;

/* With x outside, y runs in blocks of COPY_YB: the COPY_YB destination
 * rows a block writes (a transpose: one element per row per x) stay in L1
 * until all of x has filled them, instead of every x sweeping all ny rows
 * (W6: packing a transposed weight was 12 % of the block's time). */
#define COPY_YB 64

static void copy_panel(cg *c, const copy2 *p, int x_outer) {
  cloop lb, lo, li;
  gcc_jit_rvalue *yb = x_outer ? cg_loop_range(c, &lb, cg_i64(c, 0), p->ny, COPY_YB) : NULL;
  gcc_jit_rvalue *o = cg_loop_open(c, &lo, x_outer ? p->nx : p->ny);
  gcc_jit_rvalue *in = x_outer ? cg_loop_range(c, &li, yb, imin(c, add(c, yb, cg_i64(c, COPY_YB)), p->ny), 1)
                               : cg_loop_open(c, &li, p->nx);
  gcc_jit_rvalue *x = x_outer ? o : in, *y = x_outer ? in : o;
  gcc_jit_rvalue *d = add(c, p->d0, add(c, mul(c, x, p->dx), mul(c, y, p->dy)));
  gcc_jit_rvalue *sv = add(c, p->s0, add(c, mul(c, x, p->sx), mul(c, y, p->sy)));
  gcc_jit_block_add_assignment(c->blk, NULL, at(c, p->dst, d), elem(c, p->src, sv));
  cg_loop_close(c, &li);
  cg_loop_close(c, &lo);
  if (x_outer) cg_loop_close(c, &lb);
}

/* Both loop orders, chosen at run time by which source stride is 1. */
static void copy_panel_any(cg *c, const copy2 *p) {
  gcc_jit_block *a = cg_block(c, "rows"), *b = cg_block(c, "cols"), *j = cg_block(c, "copied");
  gcc_jit_block_end_with_conditional(
      c->blk, NULL, gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_EQ, p->sy, cg_i64(c, 1)), a, b);
  c->blk = a;
  copy_panel(c, p, 1);
  gcc_jit_block_end_with_jump(c->blk, NULL, j);
  c->blk = b;
  copy_panel(c, p, 0);
  gcc_jit_block_end_with_jump(c->blk, NULL, j);
  c->blk = j;
}

/* B (K x N) into NR-column panels: panel jp holds K rows of NR elements. */
static void pack_b(cg *c, mm *m, packed *P) {
  cloop lp;
  int nr = P->s.nr;
  gcc_jit_rvalue *jp = cg_loop_open(c, &lp, P->np);
  gcc_jit_rvalue *j0 = keep_i(c, mul(c, jp, cg_i64(c, nr)), "j0");
  gcc_jit_rvalue *jn = keep_i(c, imin(c, cg_i64(c, nr), ib(c, GCC_JIT_BINARY_OP_MINUS, m->N, j0)), "jn");
  gcc_jit_rvalue *dst = keep_i(c, mul(c, jp, mul(c, m->K, cg_i64(c, nr))), "dst");
  cif f;
  if_open(c, &f, lt(c, jn, cg_i64(c, nr)));
  zero_fill(c, m, P->bp, dst, mul(c, m->K, cg_i64(c, nr)));
  if_close(c, &f);
  copy2 cp = {P->bp, dst, cg_i64(c, nr), cg_i64(c, 1), m->bptr, add(c, m->boff, mul(c, j0, m->sbn)),
              m->sbk, m->sbn, m->K, jn};
  cp.s0 = keep_i(c, cp.s0, "s0");
  copy_panel_any(c, &cp);
  cg_loop_close(c, &lp);
}

/* Rows ic .. ic+mc, columns pc .. pc+kc of A into MR-row panels: panel
 * ip holds kc columns of MR elements (at a stride of KC columns). */
static void pack_a(cg *c, mm *m, packed *P, gcc_jit_rvalue *ic, gcc_jit_rvalue *hi) {
  cloop lp;
  int mr = P->s.mr;
  gcc_jit_rvalue *ip = cg_loop_open(c, &lp, P->mp);
  gcc_jit_rvalue *i0 = keep_i(c, add(c, ic, mul(c, ip, cg_i64(c, mr))), "i0");
  gcc_jit_rvalue *rn = keep_i(c, imin(c, cg_i64(c, mr), ib(c, GCC_JIT_BINARY_OP_MINUS, hi, i0)), "rn");
  gcc_jit_rvalue *dst = keep_i(c, mul(c, ip, cg_i64(c, P->s.kc * mr)), "dst");
  cif f;
  if_open(c, &f, lt(c, rn, cg_i64(c, mr)));
  zero_fill(c, m, P->ap, dst, mul(c, P->kc, cg_i64(c, mr)));
  if_close(c, &f);
  /* x: row within the panel, y: k */
  gcc_jit_rvalue *s0 = add(c, add(c, m->aoff, mul(c, i0, m->sam)), mul(c, P->pc, m->sak));
  copy2 cp = {P->ap, dst, cg_i64(c, 1), cg_i64(c, mr), m->aptr, s0, m->sam, m->sak, rn, P->kc};
  cp.s0 = keep_i(c, cp.s0, "s0");
  copy_panel_any(c, &cp);
  cg_loop_close(c, &lp);
}

/* *(vector *)&base[off] */
gcc_jit_lvalue *cg_gemm_vec_at(cg *c, packed *P, gcc_jit_rvalue *base, gcc_jit_rvalue *off) {
  gcc_jit_rvalue *addr = gcc_jit_lvalue_get_address(at(c, base, off), NULL);
  return gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(c->ctx, NULL, addr, P->vtp), NULL);
}

/* b[v] = the NV vectors of packed B at bp[bk ...]. */
void cg_gemm_load_b(cg *c, packed *P, gcc_jit_rvalue *bk, gcc_jit_lvalue **b) {
  for (int v = 0; v < P->s.nv; v++) {
    b[v] = cg_local(c, P->vt, "b");
    cg_assign(c, b[v], rv(cg_gemm_vec_at(c, P, P->bp, add(c, bk, cg_i64(c, v * P->s.vl)))));
  }
}

/* accr[v] += broadcast(a) * b[v] for the NV vectors of one tile row, a
 * being an element in memory.  On x86-64-v4 the FMA reads and broadcasts
 * it itself ({1toN}: what GCC chose when it contracted; a vbroadcastss
 * first made the small tiles' loop 18 instructions instead of 10, W1
 * GoodDynamic [16, 16] 100 -> 140 ns); elsewhere into a register first. */
void cg_gemm_bcast_fma(cg *c, mm *m, packed *P, gcc_jit_lvalue **accr, gcc_jit_lvalue **b, gcc_jit_lvalue *a_elem) {
  if (c->isa == 2) {
    char tmpl[64];
    snprintf(tmpl, sizeof tmpl, "vfmadd231p%c %%[a]%%{1to%d%%}, %%[b], %%[acc]", m->dt == TD_F32 ? 's' : 'd', P->s.vl);
    for (int v = 0; v < P->s.nv; v++) {
      gcc_jit_extended_asm *x = gcc_jit_block_add_extended_asm(c->blk, NULL, tmpl);
      gcc_jit_extended_asm_add_output_operand(x, "acc", "+v", accr[v]);
      gcc_jit_extended_asm_add_input_operand(x, "a", "m", rv(a_elem));
      gcc_jit_extended_asm_add_input_operand(x, "b", "v", rv(b[v]));
    }
    return;
  }
  gcc_jit_lvalue *a = cg_local(c, m->t, "a");
  cg_assign(c, a, rv(a_elem));
  gcc_jit_rvalue *el[64];
  for (int l = 0; l < P->s.vl; l++) el[l] = rv(a);
  gcc_jit_rvalue *av = gcc_jit_context_new_rvalue_from_vector(c->ctx, NULL, P->vt, (size_t)P->s.vl, el);
  for (int v = 0; v < P->s.nv; v++)
    vfma_acc(c, m, P->vt, accr[v], av, rv(b[v]));
}

/* Adds the current K block's contribution to the MR x NR tile of panels
 * (ip, jp) of the row-major C block: the tile is loaded into MR*NV vector
 * registers (zeros for the first K block), updated with broadcast(a) * b
 * for every k, stored back.  A comes from the packed panels, or with ic
 * (rows ic .. hi, unit stride along K) from A itself; rows at or past hi
 * read row hi - 1 (their results are never stored). */
static void micro_kernel(cg *c, mm *m, packed *P, gcc_jit_rvalue *ip, gcc_jit_rvalue *jp, gcc_jit_rvalue *ic,
                         gcc_jit_rvalue *hi) {
  const gemm_shape *s = &P->s;
  gcc_jit_lvalue *acc[MAX_MR][MAX_NV], *b[MAX_NV];
  gcc_jit_rvalue *t0 = keep_i(c, add(c, mul(c, mul(c, ip, cg_i64(c, s->mr)), P->ldc), mul(c, jp, cg_i64(c, s->nr))), "t0");
  gcc_jit_rvalue *row[MAX_MR], *zl[64];
  for (int l = 0; l < s->vl; l++) zl[l] = cg_const(c, m->dt, 0, 0);
  gcc_jit_rvalue *zv = gcc_jit_context_new_rvalue_from_vector(c->ctx, NULL, P->vt, (size_t)s->vl, zl);
  gcc_jit_block *z = cg_block(c, "acc_zero"), *ld = cg_block(c, "acc_load"), *in = cg_block(c, "acc_in");
  for (int r = 0; r < s->mr; r++) {
    row[r] = keep_i(c, add(c, t0, mul(c, cg_i64(c, r), P->ldc)), "cr");
    for (int v = 0; v < s->nv; v++) acc[r][v] = cg_local(c, P->vt, "acc");
  }
  /* the first K block starts from zero (no zeroed C block to load) */
  gcc_jit_block_end_with_conditional(c->blk, NULL, gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_EQ,
                                     P->pc, cg_i64(c, 0)), z, ld);
  for (int r = 0; r < s->mr; r++)
    for (int v = 0; v < s->nv; v++) {
      gcc_jit_block_add_assignment(z, NULL, acc[r][v], zv);
      gcc_jit_block_add_assignment(ld, NULL, acc[r][v], rv(cg_gemm_vec_at(c, P, P->cb, add(c, row[r], cg_i64(c, v * s->vl)))));
    }
  gcc_jit_block_end_with_jump(z, NULL, in);
  gcc_jit_block_end_with_jump(ld, NULL, in);
  c->blk = in;
  gcc_jit_rvalue *arow[MAX_MR];
  if (ic) {   /* A read in place (unit stride along K): row r's K block, the last row standing in for rows past hi */
    gcc_jit_rvalue *i0 = add(c, ic, mul(c, ip, cg_i64(c, s->mr))), *last = ib(c, GCC_JIT_BINARY_OP_MINUS, hi, cg_i64(c, 1));
    for (int r = 0; r < s->mr; r++)
      arow[r] = keep_i(c, add(c, add(c, m->aoff, mul(c, imin(c, add(c, i0, cg_i64(c, r)), last), m->sam)), P->pc), "ar");
  }
  gcc_jit_rvalue *ab = keep_i(c, mul(c, ip, cg_i64(c, s->kc * s->mr)), "ab");
  gcc_jit_rvalue *bb = keep_i(c, mul(c, add(c, mul(c, jp, m->K), P->pc), cg_i64(c, s->nr)), "bb");
  cloop lk;
  gcc_jit_rvalue *kk = cg_loop_open(c, &lk, P->kc);
  gcc_jit_rvalue *bk = keep_i(c, add(c, bb, mul(c, kk, cg_i64(c, s->nr))), "bk");
  gcc_jit_rvalue *ak = ic ? NULL : keep_i(c, add(c, ab, mul(c, kk, cg_i64(c, s->mr))), "ak");
  cg_gemm_load_b(c, P, bk, b);
  for (int r = 0; r < s->mr; r++)
    cg_gemm_bcast_fma(c, m, P, acc[r], b, ic ? at(c, m->aptr, add(c, arow[r], kk)) : at(c, P->ap, add(c, ak, cg_i64(c, r))));
  cg_loop_close(c, &lk);
  for (int r = 0; r < s->mr; r++)
    for (int v = 0; v < s->nv; v++)
      cg_assign(c, cg_gemm_vec_at(c, P, P->cb, add(c, row[r], cg_i64(c, v * s->vl))), rv(acc[r][v]));
}

void cg_gemm_packed_init(cg *c, mm *m, packed *P) {
  P->s = shape_for(c->isa, m->dt);
  P->vt = gcc_jit_type_get_vector(m->t, (size_t)P->s.vl);
  P->vtp = gcc_jit_type_get_pointer(P->vt);
  P->np = keep_i(c, ceil_div(c, m->N, P->s.nr), "np");
  P->ldc = keep_i(c, mul(c, P->np, cg_i64(c, P->s.nr)), "ldc");
}

/* The function state saved while a shared function is built. */
typedef struct fnstate {
  gcc_jit_function *fn;
  gcc_jit_block *entry, *blk;
} fnstate;

static void fn_begin(cg *c, fnstate *save, const char *name, int n, gcc_jit_param **ps) {
  save->fn = c->fn;
  save->entry = c->entry;
  save->blk = c->blk;
  c->fn = gcc_jit_context_new_function(c->ctx, NULL, GCC_JIT_FUNCTION_INTERNAL, c->t_void, name, n, ps, 0);
  c->entry = c->blk = gcc_jit_function_new_block(c->fn, "entry");
}

static void fn_end(cg *c, const fnstate *save) {
  gcc_jit_block_end_with_void_return(c->blk, NULL);
  c->fn = save->fn;
  c->entry = save->entry;
  c->blk = save->blk;
}

static gcc_jit_param *param(cg *c, gcc_jit_type *t, const char *name) {
  return gcc_jit_context_new_param(c->ctx, NULL, t, name);
}

/* gemm_pack_b_T(b, boff, sbk, sbn, n, k, bp): packs all of B. */
static gcc_jit_function *pack_b_fn(cg *c, td_dtype dt) {
  if (c->gemm_pack[dt]) return c->gemm_pack[dt];
  gcc_jit_type *tp = gcc_jit_type_get_pointer(c->vt[dt]);
  gcc_jit_param *ps[7] = {param(c, tp, "b"), param(c, c->t_i64, "boff"), param(c, c->t_i64, "sbk"),
                          param(c, c->t_i64, "sbn"), param(c, c->t_i64, "n"), param(c, c->t_i64, "k"),
                          param(c, tp, "bp")};
  char name[48];
  snprintf(name, sizeof name, "tdsl_gemm_pack_b_%s", td_dtype_name(dt));
  fnstate save;
  fn_begin(c, &save, name, 7, ps);
  mm m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.t = c->vt[dt];
  m.bptr = gcc_jit_param_as_rvalue(ps[0]);
  m.boff = gcc_jit_param_as_rvalue(ps[1]);
  m.sbk = gcc_jit_param_as_rvalue(ps[2]);
  m.sbn = gcc_jit_param_as_rvalue(ps[3]);
  m.N = gcc_jit_param_as_rvalue(ps[4]);
  m.K = gcc_jit_param_as_rvalue(ps[5]);
  packed P;
  cg_gemm_packed_init(c, &m, &P);
  P.bp = gcc_jit_param_as_rvalue(ps[6]);
  pack_b(c, &m, &P);
  gcc_jit_function *f = c->fn;
  fn_end(c, &save);
  return c->gemm_pack[dt] = f;
}

/* gemm_block_T(bp, a, aoff, sam, sak, ic, hi, n, k, ap, cb): the C block of
 * rows ic .. min(ic + MC, hi) (row-major, row stride np*NR) from the packed
 * B: per K block of KC, A packed into MR-row panels (unless A has unit
 * stride along K: then the micro-kernel reads its rows in place), and
 * every (jp, ip) tile updated by the micro-kernel (the B micro-panel, KC x
 * NR, stays in L1 across ip); the first K block writes the tile. */
static gcc_jit_function *block_fn(cg *c, td_dtype dt) {
  if (c->gemm_core[dt]) return c->gemm_core[dt];
  gcc_jit_type *tp = gcc_jit_type_get_pointer(c->vt[dt]), *i = c->t_i64;
  gcc_jit_param *ps[11] = {param(c, tp, "bp"), param(c, tp, "a"), param(c, i, "aoff"), param(c, i, "sam"),
                           param(c, i, "sak"), param(c, i, "ic"), param(c, i, "hi"), param(c, i, "n"),
                           param(c, i, "k"), param(c, tp, "ap"), param(c, tp, "cb")};
  char name[48];
  snprintf(name, sizeof name, "tdsl_gemm_block_%s", td_dtype_name(dt));
  fnstate save;
  fn_begin(c, &save, name, 11, ps);
  mm m;
  memset(&m, 0, sizeof m);
  m.dt = dt;
  m.t = c->vt[dt];
  m.aptr = gcc_jit_param_as_rvalue(ps[1]);
  m.aoff = gcc_jit_param_as_rvalue(ps[2]);
  m.sam = gcc_jit_param_as_rvalue(ps[3]);
  m.sak = gcc_jit_param_as_rvalue(ps[4]);
  m.N = gcc_jit_param_as_rvalue(ps[7]);
  m.K = gcc_jit_param_as_rvalue(ps[8]);
  gcc_jit_rvalue *ic = gcc_jit_param_as_rvalue(ps[5]), *hi = gcc_jit_param_as_rvalue(ps[6]);
  packed P;
  cg_gemm_packed_init(c, &m, &P);
  P.bp = gcc_jit_param_as_rvalue(ps[0]);
  P.ap = gcc_jit_param_as_rvalue(ps[9]);
  P.cb = gcc_jit_param_as_rvalue(ps[10]);
  gcc_jit_rvalue *mc = keep_i(c, imin(c, cg_i64(c, P.s.mc), ib(c, GCC_JIT_BINARY_OP_MINUS, hi, ic)), "mc");
  P.mp = keep_i(c, ceil_div(c, mc, P.s.mr), "mp");
  cif fz;
  if_open(c, &fz, lt(c, m.K, cg_i64(c, 1)));   /* no K block writes the C block */
  zero_fill(c, &m, P.cb, cg_i64(c, 0), mul(c, mul(c, P.mp, cg_i64(c, P.s.mr)), P.ldc));
  if_close(c, &fz);
  gcc_jit_block *dir = cg_block(c, "a_direct"), *pk = cg_block(c, "a_packed"), *done = cg_block(c, "blk_done");
  gcc_jit_block_end_with_conditional(c->blk, NULL, gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_EQ,
                                     m.sak, cg_i64(c, 1)), dir, pk);
  for (int direct = 1; direct >= 0; direct--) {
    c->blk = direct ? dir : pk;
    cloop lp, lj, li;
    gcc_jit_rvalue *pcb = cg_loop_open(c, &lp, ceil_div(c, m.K, P.s.kc));
    P.pc = keep_i(c, mul(c, pcb, cg_i64(c, P.s.kc)), "pc");
    P.kc = keep_i(c, imin(c, cg_i64(c, P.s.kc), ib(c, GCC_JIT_BINARY_OP_MINUS, m.K, P.pc)), "kc");
    if (!direct) pack_a(c, &m, &P, ic, hi);
    gcc_jit_rvalue *jp = cg_loop_open(c, &lj, P.np);
    gcc_jit_rvalue *ip = cg_loop_open(c, &li, P.mp);
    micro_kernel(c, &m, &P, ip, jp, direct ? ic : NULL, hi);
    cg_loop_close(c, &li);
    cg_loop_close(c, &lj);
    cg_loop_close(c, &lp);
    gcc_jit_block_end_with_jump(c->blk, NULL, done);
  }
  c->blk = done;
  gcc_jit_function *f = c->fn;
  fn_end(c, &save);
  return c->gemm_core[dt] = f;
}

static gcc_jit_rvalue *call(cg *c, gcc_jit_function *f, int n, gcc_jit_rvalue **args) {
  return gcc_jit_context_new_call(c->ctx, NULL, f, n, args);
}

/* The kernel's side for rows lo .. hi: B packed once per batch into
 * scratch (or, with pb, the prepacked copy used as it is); for each block
 * of MC rows the shared block function computes the C block and the
 * epilogue stores it row by row. */
int cg_gemm_packed_rows(cg *c, mm *m, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, gcc_jit_rvalue *pb) {
  gcc_jit_function *blk = block_fn(c, m->dt);
  packed P;
  cg_gemm_packed_init(c, m, &P);
  gcc_jit_rvalue *scratch = gcc_jit_context_new_cast(c->ctx, NULL, c->p_scratch, m->tp);
  P.bp = pb ? pb : scratch;
  P.ap = pb ? scratch : gcc_jit_lvalue_get_address(at(c, P.bp, mul(c, P.ldc, m->K)), NULL);
  P.cb = gcc_jit_lvalue_get_address(at(c, P.ap, cg_i64(c, P.s.mc * P.s.kc)), NULL);
  if (!pb) {
    gcc_jit_rvalue *a1[7] = {m->bptr, m->boff, m->sbk, m->sbn, m->N, m->K, P.bp};
    gcc_jit_block_add_eval(c->blk, NULL, call(c, pack_b_fn(c, m->dt), 7, a1));
  }
  cloop lc, lr, lj;
  gcc_jit_rvalue *ic = cg_loop_range(c, &lc, lo, hi, P.s.mc);
  gcc_jit_rvalue *a2[11] = {P.bp, m->aptr, m->aoff, m->sam, m->sak, ic, hi, m->N, m->K, P.ap, P.cb};
  gcc_jit_block_add_eval(c->blk, NULL, call(c, blk, 11, a2));
  gcc_jit_rvalue *rows = keep_i(c, imin(c, cg_i64(c, P.s.mc), ib(c, GCC_JIT_BINARY_OP_MINUS, hi, ic)), "rows");
  gcc_jit_rvalue *r = cg_loop_open(c, &lr, rows);
  gcc_jit_rvalue *crow = keep_i(c, mul(c, r, P.ldc), "crow");
  gcc_jit_rvalue *j = cg_loop_open(c, &lj, m->N);
  if (cg_gemm_epilogue(c, m->ix, m->r, add(c, ic, r), j, elem(c, P.cb, add(c, crow, j)))) return -1;
  cg_loop_close(c, &lj);
  cg_loop_close(c, &lr);
  cg_loop_close(c, &lc);
  return 0;
}

static int packed_path(cg *c, mm *m) {
  gcc_jit_rvalue *lo = c->par_axis == m->r - 2 ? c->p_lo : cg_i64(c, 0), *hi = c->par_axis == m->r - 2 ? c->p_hi : m->M;
  return cg_gemm_packed_rows(c, m, lo, hi, NULL);
}

static void mm_init(cg *c, mm *m);

/* The blocked packed path of a 2-D matmul as a function of its own, called
 * for rows lo .. hi (with pb: of the prepacked B): the small-matrix code
 * the kernel runs on every call of a W1-size model keeps a light frame. */
int cg_gemm_outlined(cg *c, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, int prepacked) {
  cg_outline o;
  if (cg_outline_begin(c, &o, "packed")) return -1;
  mm m;
  mm_init(c, &m);
  m.aoff = cg_gemm_view_base(c, m.A, m.ix, m.r);
  m.boff = cg_gemm_view_base(c, m.B, m.ix, m.r);
  int rc = prepacked ? cg_gemm_packed_rows(c, &m, c->p_lo, c->p_hi, cg_gemm_prepacked_ptr(c, &m)) : cg_gemm_packed_rows(c, &m, c->p_lo, c->p_hi, NULL);
  gcc_jit_function *f = cg_outline_end(c, &o);
  if (rc) return -1;
  cg_outline_call(c, &o, f, lo, hi);
  return cg_failed(c);
}

/* ---- the kernel ---------------------------------------------------------------------- */

static void mm_init(cg *c, mm *m) {
  const td_kernel *k = c->k;
  const td_node *n = &c->g->nodes[k->matmul];
  m->A = &k->a;
  m->B = &k->b;
  m->dt = n->dtype;
  m->t = c->vt[m->dt];
  m->tp = gcc_jit_type_get_pointer(m->t);
  m->r = n->rank;
  m->M = cg_dim(c, n->shape[m->r - 2]);
  m->N = cg_dim(c, n->shape[m->r - 1]);
  m->K = cg_dim(c, m->A->shape[m->A->rank - 1]);
  m->aptr = cg_bufptr(c, m->A->base);
  m->bptr = cg_bufptr(c, m->B->base);
  m->sam = cg_dim(c, m->A->stride[m->A->rank - 2]);
  m->sak = cg_dim(c, m->A->stride[m->A->rank - 1]);
  m->sbk = cg_dim(c, m->B->stride[m->B->rank - 2]);
  m->sbn = cg_dim(c, m->B->stride[m->B->rank - 1]);
  m->ix = cg_ix_new(c, m->r);
}

int tdc_emit_matmul(cg *c) {
  mm m;
  mm_init(c, &m);
  if (m.dt == TD_BOOL) return td_err_set(c->err, "kernel %s: matmul of bool is not supported", c->k->name);
  cloop lb[TD_MAX_RANK];
  const td_node *n = &c->g->nodes[c->k->matmul];
  int nb = cg_nest_open(c, lb, n->shape, m.r, (1u << (m.r - 2)) - 1, m.ix);
  m.aoff = cg_gemm_view_base(c, m.A, m.ix, m.r);
  m.boff = cg_gemm_view_base(c, m.B, m.ix, m.r);
  if (c->kinfo && c->kinfo->pack.nr > 0) {
    if (cg_gemm_prepacked(c, &m)) return -1;
  } else if (!td_dtype_is_float(m.dt)) {
    if (simple_path(c, &m)) return -1;
  } else {
    gemm_shape s = shape_for(c->isa, m.dt);
    /* with B^T contiguous the dot path runs near the FMA peak as long as
     * a block of B's columns stays in L1, and packs nothing: below 64 rows
     * packing B (a strided transpose, per call and per thread) costs more
     * than it saves (W4 B=32: 3.9 ms packed) */
    int min_rows = dot_able(&m) ? DOT_MAX_M : s.mr;
    gcc_jit_rvalue *big = gcc_jit_context_new_binary_op(
        c->ctx, NULL, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool,
        gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_GE, m.M, cg_i64(c, min_rows)),
        gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_GE, mul(c, mul(c, m.M, m.N), m.K),
                                       cg_i64(c, 32768)));
    gcc_jit_block *pk = cg_block(c, "packed"), *sm = cg_block(c, "simple"), *join = cg_block(c, "mm_end");
    gcc_jit_block_end_with_conditional(c->blk, NULL, big, pk, sm);
    c->blk = pk;
    if (m.r == 2 ? cg_gemm_outlined(c, c->par_axis == m.r - 2 ? c->p_lo : cg_i64(c, 0), c->par_axis == m.r - 2 ? c->p_hi : m.M, 0)
                 : packed_path(c, &m))
      return -1;
    gcc_jit_block_end_with_jump(c->blk, NULL, join);
    c->blk = sm;
    if (dot_able(&m) ? dot_path(c, &m) : simple_path(c, &m)) return -1;
    gcc_jit_block_end_with_jump(c->blk, NULL, join);
    c->blk = join;
  }
  cg_nest_close(c, lb, nb);
  return cg_failed(c);
}


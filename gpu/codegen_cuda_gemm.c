/* codegen_cuda_gemm.c - the body of a MATMUL kernel, as CUDA C (the CUDA
 * side of compiler/codegen_gemm.c).
 *
 * A 64x64 output tile per block (grid x: columns, y: rows, z: batch,
 * grid-stride), 256 threads: K walked in panels loaded into shared memory
 * (A transposed), then
 *   - f32/f64/int: 4x4 outputs per thread, FMA (f32, f64) or wrap-around
 *     integer multiply-add;
 *   - TF32 (asked for, f32): the 8 warps as 2 x 4, each 32 x 16 outputs
 *     as m16n8k8 mma.sync tiles, operands rounded to TF32;
 *   - f16/bf16: a matmul of two widened half buffers reads the 16-bit
 *     values themselves (half_source) into m16n8k16 mma.sync tiles with
 *     f32 accumulators; the kernels that widened them to f32 temporaries
 *     are left empty (cu_elidable).
 * The epilogue (the kernel's other ops) is evaluated at every accumulated
 * element before it is stored (c->mm_acc stands for the product).
 */
#include <string.h>

#include "gpu/codegen_cuda_impl.h"

/* ---- MATMUL kernels: shared-memory tiles with a fused epilogue ---- */

/* Element offset of view v at the batch index (output axes bix), plus the
 * view's offset: an int64 expression. */
static const char *view_base(cx *c, const td_view *v, const cx_ix *bix, int out_rank) {
  const char *off = cu_dim(c, v->offset);
  for (int t = 0; t + 2 < v->rank; t++) {
    int a = t + out_rank - v->rank;
    if (v->shape[t] == 1 || bix->zero[a]) continue;
    off = cu_fmt(c, "%s + %s * %s", off, ixs(bix, a), cu_dim(c, v->stride[t]));
  }
  return cu_keep(c, "int64_t", off);
}

/* The tile loads of one operand: rows x cols elements of view v starting at
 * (r0, c0) into shared array sh[col][row] (A, transposed) or sh[row][col]. */
static void tile_load(cx *c, const char *sh, const char *p, const char *base, const td_view *v, const char *r0,
                      const char *c0, const char *rlim, const char *clim, int is_a, const char *at) {
  const char *s0 = cu_dim(c, v->stride[v->rank - 2]), *s1 = cu_dim(c, v->stride[v->rank - 1]);
  if (is_a) {
    cu_open(c, "for (int e = threadIdx.x; e < 64 * 16; e += blockDim.x)");
    cu_line(c, "const int kk = e & 15, ii = e >> 4;");
    cu_line(c, "const int64_t gi = %s + ii, gk = %s + kk;", r0, c0);
    cu_line(c, "%s[kk][ii] = (gi < %s && gk < %s) ? (%s)%s[%s + gi * %s + gk * %s] : (%s)0;", sh, rlim, clim, at, p,
         base, s0, s1, at);
  } else {
    cu_open(c, "for (int e = threadIdx.x; e < 16 * 64; e += blockDim.x)");
    cu_line(c, "const int jj = e & 63, kk = e >> 6;");
    cu_line(c, "const int64_t gk = %s + kk, gj = %s + jj;", r0, c0);
    cu_line(c, "%s[kk][jj] = (gk < %s && gj < %s) ? (%s)%s[%s + gk * %s + gj * %s] : (%s)0;", sh, rlim, clim, at, p,
         base, s0, s1, at);
  }
  cu_close(c);
}

/* ---- f16/bf16 operands: tensor cores reading the 16-bit buffers ---- */

/* After legalize a matmul on halves reads CAST(x -> f32) nodes that the plan
 * materialises as f32 temporaries.  Where the CAST's input x has a buffer,
 * the matmul kernel reads x's 16-bit values instead, through the same view
 * (a CAST keeps the shape, and both buffers are contiguous).  x must still
 * hold its value when kernel mk runs: an input, parameter or output, or a
 * temporary whose arena slot no other buffer takes before mk ends.
 * Returns x, or -1. */
static int half_source(const td_plan *p, const td_view *v, int mk) {
  const td_node *b = &p->g->nodes[v->base];
  if (b->op != TD_IR_CAST || b->dtype != TD_F32 || !td_dtype_is_half(p->g->nodes[b->in[0]].dtype)) return -1;
  int x = b->in[0], bx = p->buf_of[x];
  if (bx < 0) return -1;
  const td_buffer *xb = &p->bufs[bx];
  if (xb->kind != TD_BUF_TEMP) return x;
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *o = &p->bufs[i];
    if (i != bx && o->kind == TD_BUF_TEMP && o->index == xb->index && o->first <= mk && o->last >= xb->first)
      return -1;
  }
  return x;
}

/* The half type both operands of matmul kernel mk are read as (the f32
 * matmul of two widened f16 or two widened bf16 buffers), else TD_F32. */
td_dtype cu_half_matmul(const td_plan *p, int mk) {
  const td_kernel *k = &p->kernels[mk];
  if (k->kind != TD_KERN_MATMUL || p->g->nodes[k->matmul].dtype != TD_F32 || k->a.rank < 2 || k->b.rank < 2)
    return TD_F32;
  int xa = half_source(p, &k->a, mk), xb = half_source(p, &k->b, mk);
  if (xa < 0 || xb < 0 || p->g->nodes[xa].dtype != p->g->nodes[xb].dtype) return TD_F32;
  return p->g->nodes[xa].dtype;
}

/* Does node n reach nothing in kernel k but k's matmul (through movement
 * ops, which then are parts of an operand view)? */
static int only_feeds_matmul(const td_plan *p, const td_kernel *k, int n, int depth) {
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *u = &p->g->nodes[k->nodes[i]];
    for (int j = 0; j < u->n_in; j++) {
      if (u->in[j] != n || k->nodes[i] == k->matmul) continue;
      if (td_ops[u->op].kind != TD_K_MOVE || depth > 16 || !only_feeds_matmul(p, k, k->nodes[i], depth + 1))
        return 0;
    }
  }
  return 1;
}

/* Is pointwise kernel ki a widening CAST (half -> f32 temporary) read only
 * as an operand of matmuls that read the half buffer instead?  Then its
 * f32 temporary is never needed and the kernel does nothing. */
int cu_elidable(const td_plan *p, const td_dtype *mm_half, int ki) {
  const td_kernel *k = &p->kernels[ki];
  int b = p->buf_of[k->root], readers = 0;
  if (k->kind != TD_KERN_POINTWISE || b < 0 || p->bufs[b].kind != TD_BUF_TEMP) return 0;
  const td_node *r = &p->g->nodes[k->root];
  if (r->op != TD_IR_CAST || r->dtype != TD_F32 || !td_dtype_is_half(p->g->nodes[r->in[0]].dtype)) return 0;
  for (int j = 0; j < p->n_kernels; j++) {
    const td_kernel *u = &p->kernels[j];
    int reads = 0;
    for (int i = 0; i < u->n_reads; i++) reads |= u->reads[i] == k->root;
    if (!reads) continue;
    if (mm_half[j] == TD_F32 || (u->a.base != k->root && u->b.base != k->root) ||
        !only_feeds_matmul(p, u, k->root, 0))
      return 0;
    readers++;
  }
  return readers > 0;
}

/* The tile load of one half operand into sh[row][k] (A: 64 rows of M; B:
 * 64 columns of N), 32 deep in K, the 16-bit values as they are (zero
 * outside the matrix).  Consecutive threads walk the operand's unit-stride
 * axis (K unless only the other axis has stride 1), so a warp's loads are
 * contiguous. */
static void half_tile_load(cx *c, const char *sh, const char *p, const char *base, const td_view *v, const char *o0,
                           const char *k0, const char *olim, const char *klim, int is_a) {
  td_dim sk = v->stride[is_a ? v->rank - 1 : v->rank - 2], so = v->stride[is_a ? v->rank - 2 : v->rank - 1];
  cu_open(c, "for (int e = threadIdx.x; e < 64 * 32; e += blockDim.x)");
  if (so == 1 && sk != 1) cu_line(c, "const int oo = e & 63, kk = e >> 6;");
  else cu_line(c, "const int kk = e & 31, oo = e >> 5;");
  cu_line(c, "const int64_t go = %s + oo, gk = %s + kk;", o0, k0);
  cu_line(c, "%s[oo][kk] = (go < %s && gk < %s) ? %s[%s + go * %s + gk * %s] : (uint16_t)0;", sh, olim, klim, p, base,
       cu_dim(c, so), cu_dim(c, sk));
  cu_close(c);
}

/* One 32-deep K panel on f16/bf16 tensor cores: the 8 warps of the block as
 * 2 x 4, each computing 32 x 16 outputs as 2 x 2 tiles of m16n8k16
 * mma.sync, twice (k 0..15, 16..31).  Fragments (PTX ISA, m16n8k16 .f16 /
 * .bf16, g = lane / 4, t = lane % 4; each 32-bit register holds two
 * consecutive k, the lower k in the low half): A rows g, g + 8, k pairs at
 * 2t and 2t + 8; B column g, the same k pairs; f32 accumulators as TF32's. */
static void mma_half_panel(cx *c, td_dtype ht) {
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int ks = 0; ks < 32; ks += 16)");
  cu_line(c, "uint32_t af[2][4], bf[2][2];");
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int mt = 0; mt < 2; mt++)");
  cu_line(c, "const int r0 = wm * 32 + mt * 16 + g;");
  cu_line(c, "af[mt][0] = td_pair(&As[r0][ks + 2 * t4]);");
  cu_line(c, "af[mt][1] = td_pair(&As[r0 + 8][ks + 2 * t4]);");
  cu_line(c, "af[mt][2] = td_pair(&As[r0][ks + 2 * t4 + 8]);");
  cu_line(c, "af[mt][3] = td_pair(&As[r0 + 8][ks + 2 * t4 + 8]);");
  cu_close(c);
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int nt = 0; nt < 2; nt++)");
  cu_line(c, "const int c0 = wn * 16 + nt * 8 + g;");
  cu_line(c, "bf[nt][0] = td_pair(&Bs[c0][ks + 2 * t4]);");
  cu_line(c, "bf[nt][1] = td_pair(&Bs[c0][ks + 2 * t4 + 8]);");
  cu_close(c);
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int mt = 0; mt < 2; mt++)");
  cu_line(c, "  #pragma unroll");
  cu_line(c, "  for (int nt = 0; nt < 2; nt++) td_mma_%s(acc[2 * mt + nt], af[mt], bf[nt]);",
       ht == TD_F16 ? "f16" : "bf16");
  cu_close(c);
}

/* One 16-deep K panel on TF32 tensor cores: the 8 warps of the block as
 * 2 x 4, each computing 32 x 16 outputs as 2 x 2 tiles of m16n8k8
 * mma.sync (fragment layouts of the PTX ISA for .tf32: A row-major, B
 * column-major, f32 accumulators), operands rounded to TF32 (cvt.rna). */
static void mma_tf32_panel(cx *c) {
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int ks = 0; ks < 16; ks += 8)");
  cu_line(c, "uint32_t af[2][4], bf[2][2];");
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int mt = 0; mt < 2; mt++)");
  cu_line(c, "const int r0 = wm * 32 + mt * 16 + g;");
  cu_line(c, "af[mt][0] = td_tf32(As[ks + t4][r0]);");
  cu_line(c, "af[mt][1] = td_tf32(As[ks + t4][r0 + 8]);");
  cu_line(c, "af[mt][2] = td_tf32(As[ks + t4 + 4][r0]);");
  cu_line(c, "af[mt][3] = td_tf32(As[ks + t4 + 4][r0 + 8]);");
  cu_close(c);
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int nt = 0; nt < 2; nt++)");
  cu_line(c, "const int c0 = wn * 16 + nt * 8 + g;");
  cu_line(c, "bf[nt][0] = td_tf32(Bs[ks + t4][c0]);");
  cu_line(c, "bf[nt][1] = td_tf32(Bs[ks + t4 + 4][c0]);");
  cu_close(c);
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int mt = 0; mt < 2; mt++)");
  cu_line(c, "  #pragma unroll");
  cu_line(c, "  for (int nt = 0; nt < 2; nt++) td_mma_tf32(acc[2 * mt + nt], af[mt], bf[nt]);");
  cu_close(c);
}

int cu_emit_matmul(cx *c) {
  const td_kernel *k = c->k;
  const td_node *mm = ND(c, k->matmul);
  int r = mm->rank;
  td_dtype dt = mm->dtype;
  if (dt == TD_BOOL)
    return cu_fail_msg(c, "the CUDA backend has no bool matmul");
  if (ND(c, k->root)->rank != r)
    return cu_fail_msg(c, "the CUDA backend needs the epilogue in the matmul's shape");
  const char *at = cu_vtn[dt];
  const char *M = cu_dim(c, mm->shape[r - 2]), *N = cu_dim(c, mm->shape[r - 1]);
  const char *K = cu_dim(c, k->a.shape[k->a.rank - 1]);
  td_dim batch = cu_extent(c, mm->shape, r - 2, ~0u);
  int ki = (int)(k - c->p->kernels);
  td_dtype ht = c->mm_half[ki];  /* f16/bf16 tensor cores (reading the 16-bit buffers) */
  int half = ht != TD_F32, tc = half || (c->tf32 && dt == TD_F32);
  cu_line(c, "const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;");
  if (tc) cu_line(c, "const int g = (threadIdx.x & 31) >> 2, t4 = threadIdx.x & 3, wm = threadIdx.x >> 7, "
                  "wn = (threadIdx.x >> 5) & 3;");
  cu_line(c, "const int64_t m0 = (int64_t)blockIdx.y * 64, n0 = (int64_t)blockIdx.x * 64;");
  if (half) cu_line(c, "__shared__ __align__(16) uint16_t As[64][32 + 8], Bs[64][32 + 8];");
  else cu_line(c, "__shared__ %s As[16][64 + 1], Bs[16][64 + 1];", at);
  cu_open(c, cu_fmt(c, "for (int64_t bz = blockIdx.z; bz < %s; bz += gridDim.z)", cu_dim(c, batch)));
  cx_ix *ix = cu_ix_new(c, r);
  cu_delinearize(c, "bz", mm->shape, r - 2, ~0u, "z", ix);
  const char *pa = cu_bufname(c, half ? half_source(c->p, &k->a, ki) : k->a.base);
  const char *pb = cu_bufname(c, half ? half_source(c->p, &k->b, ki) : k->b.base);
  const char *oa = view_base(c, &k->a, ix, r), *ob = view_base(c, &k->b, ix, r);
  cu_line(c, "%s acc[4][4];", at);
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int ii = 0; ii < 4; ii++)");
  cu_line(c, "  #pragma unroll");
  cu_line(c, "  for (int jj = 0; jj < 4; jj++) acc[ii][jj] = (%s)0;", at);
  cu_open(c, cu_fmt(c, "for (int64_t k0 = 0; k0 < %s; k0 += %d)", K, half ? 32 : 16));
  if (half) {
    half_tile_load(c, "As", pa, oa, &k->a, "m0", "k0", M, K, 1);
    half_tile_load(c, "Bs", pb, ob, &k->b, "n0", "k0", N, K, 0);
  } else {
    tile_load(c, "As", pa, oa, &k->a, "m0", "k0", M, K, 1, at);
    tile_load(c, "Bs", pb, ob, &k->b, "k0", "n0", K, N, 0, at);
  }
  cu_line(c, "__syncthreads();");
  if (half) {
    mma_half_panel(c, ht);
  } else if (tc) {
    mma_tf32_panel(c);
  } else {
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int kk = 0; kk < 16; kk++)");
  cu_line(c, "%s a[4], b[4];", at);
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int ii = 0; ii < 4; ii++) a[ii] = As[kk][ty + 16 * ii];");
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int jj = 0; jj < 4; jj++) b[jj] = Bs[kk][tx + 16 * jj];");
  cu_line(c, "#pragma unroll");
  cu_line(c, "for (int ii = 0; ii < 4; ii++)");
  cu_line(c, "  #pragma unroll");
  if (td_dtype_is_float(dt))
    cu_line(c, "  for (int jj = 0; jj < 4; jj++) acc[ii][jj] = %s(a[ii], b[jj], acc[ii][jj]);", dt == TD_F32 ? "fmaf" : "fma");
  else
    cu_line(c, "  for (int jj = 0; jj < 4; jj++) acc[ii][jj] = (%s)((%s)acc[ii][jj] + (%s)a[ii] * (%s)b[jj]);", at,
         cu_utn[dt], cu_utn[dt], cu_utn[dt]);
  cu_close(c);
  }
  cu_line(c, "__syncthreads();");
  cu_close(c);
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int ii = 0; ii < 4; ii++)");
  cu_line(c, "#pragma unroll");
  cu_open(c, "for (int jj = 0; jj < 4; jj++)");
  if (tc)  /* acc[2 * mt + nt][e]: m16n8 tile (mt, nt) of the warp, element e */
    cu_line(c, "const int64_t gi = m0 + wm * 32 + (ii >> 1) * 16 + g + (jj >> 1) * 8, "
            "gj = n0 + wn * 16 + (ii & 1) * 8 + 2 * t4 + (jj & 1);");
  else cu_line(c, "const int64_t gi = m0 + ty + 16 * ii, gj = n0 + tx + 16 * jj;");
  cu_open(c, cu_fmt(c, "if (gi < %s && gj < %s)", M, N));
  ix->v[r - 2] = "gi";
  ix->zero[r - 2] = 0;
  ix->v[r - 1] = "gj";
  ix->zero[r - 1] = 0;
  td_kxmark m = cu_mark(c);
  c->mm_acc = "acc[ii][jj]";
  const char *v = cu_ev(c, k->root, ix);
  if (v) cu_store(c, k->root, ix, v);
  c->mm_acc = NULL;
  cu_release(c, m);
  cu_close(c);
  cu_close(c);
  cu_close(c);
  cu_close(c);
  if (!v) return -1;
  c->k = k;
  return c->failed ? -1 : 0;
}

/* Launch sizes of a matmul kernel (filled after emit_kernel's generic part). */
void cu_matmul_info(cx *c, const td_kernel *k, td_cuda_kernel *info) {
  const td_node *mm = ND(c, k->matmul);
  info->m = mm->shape[mm->rank - 2];
  info->n = mm->shape[mm->rank - 1];
  info->work = cu_extent(c, mm->shape, mm->rank - 2, ~0u);
}


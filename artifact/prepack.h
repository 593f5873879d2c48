/* prepack.h - packing a matmul's parameter operand once (compiled.c and
 * the artifact runtime share it; the generated kernels read the result).
 *
 * Layout (codegen_gemm.c's packed panels over all of K): panel jp holds K
 * rows of NR elements, element (k, l) at dst[(jp*K + k)*NR + l] = B[k,
 * jp*NR + l], zero past column N-1.  Panels start 64-byte aligned when
 * dst is and NR * elsize is a multiple of 64.  Also: how a kernel's
 * parallel range is cut (both runtimes cut it the same way).
 */
#ifndef TD_PREPACK_H
#define TD_PREPACK_H

#include <stdint.h>
#include <string.h>

/* What the runtime needs to pack kernel k's B: sizes and strides in
 * elements, the element size, the panel width NR (0: nothing to pack). */
typedef struct tdc_prepack_desc {
  int64_t buf, elsize, nr, n, k, off, sbk, sbn;
} tdc_prepack_desc;

/* The rows of a C block (MC) and the depth of a K block (KC) of
 * codegen_gemm.c's packed GEMM, at most, over every ISA and dtype. */
#define TDC_GEMM_MC_MAX 192
#define TDC_GEMM_KC 256

/* Bytes of scratch a matmul kernel with N columns and depth K needs per
 * thread (both runtimes allocate it): B padded to 32 columns, an A block
 * of MC x KC, a C block of MC rows; the simple path's row and panel fit
 * too; 8-byte elements (f64) bound every dtype. */
static inline size_t tdc_gemm_scratch(int64_t n, int64_t k) {
  size_t bp = (size_t)(n + 32) * (size_t)k, ap = (size_t)TDC_GEMM_MC_MAX * TDC_GEMM_KC;
  size_t cb = (size_t)TDC_GEMM_MC_MAX * (size_t)(n + 32);
  size_t simple = (size_t)n + (size_t)n * (size_t)k;
  size_t packed = bp + ap + cb;
  return (packed > simple ? packed : simple) * 8 + 256;
}

/* Bytes of the packed copy (0 when nothing is packed). */
static inline size_t tdc_prepack_bytes(const tdc_prepack_desc *d) {
  if (d->nr <= 0) return 0;
  return (size_t)((d->n + d->nr - 1) / d->nr) * (size_t)d->nr * (size_t)d->k * (size_t)d->elsize;
}

/* Packs B (elements of d->elsize bytes at src) into dst. */
static inline void tdc_prepack(const tdc_prepack_desc *d, const void *src, void *dst) {
  const char *s = src;
  char *o = dst;
  size_t es = (size_t)d->elsize;
  int64_t np = (d->n + d->nr - 1) / d->nr;
  for (int64_t jp = 0; jp < np; jp++)
    for (int64_t kk = 0; kk < d->k; kk++)
      for (int64_t l = 0; l < d->nr; l++) {
        int64_t j = jp * d->nr + l;
        char *to = o + (size_t)((jp * d->k + kk) * d->nr + l) * es;
        if (j < d->n) memcpy(to, s + (size_t)(d->off + kk * d->sbk + j * d->sbn) * es, es);
        else memset(to, 0, es);
      }
}

/* How many ranges a kernel with column blocks is cut into, from n (the
 * usual rule, at most the threads, about one range per 256 KB of work in
 * the usual bytes + flops/4 units): with fewer rows than n, ranges cut
 * rows into column pieces.  That pays because the pool's workers watch
 * for the next job for a while before they park (pool.c, TDSL_SPIN_US):
 * W4's fc1 at B=1 (1.6 MB of weights) on 2 threads went from 36-41 µs
 * with parked workers to 17-20 µs, on a loaded machine. */
static inline int64_t tdc_column_ranges(int64_t n, double work, int64_t extent, int64_t cols) {
  if (cols <= 1 || extent / cols >= n) return n;
  int64_t m = (int64_t)(work / 262144.0);
  if (m < n) n = m;
  return n < 1 ? 1 : n;
}

/* The length of each of n ranges a kernel's parallel extent is cut into:
 * with column blocks (cols > 1, tdc_kinfo) and at least n rows, whole rows
 * per range (the packed path keeps its row blocks), else ceil(extent / n). */
static inline int64_t tdc_split_chunk(int64_t extent, int64_t n, int64_t cols) {
  if (n < 1) n = 1;
  if (cols > 1 && extent / cols >= n) {
    int64_t rows = extent / cols;
    return (rows + n - 1) / n * cols;
  }
  return (extent + n - 1) / n;
}

#endif

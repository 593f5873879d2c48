/* launch_cuda.h - the launch geometry of a generated CUDA kernel.
 *
 * Shared by the in-process runtime (runtime_cuda.c) and the runtime of
 * built CUDA artifacts (artifact_cuda.c), so that both launch every kernel
 * of codegen_cuda.c the same way: 256 threads per block; pointwise and
 * column-mode reduce kernels grid-stride over at most 32 blocks per SM;
 * row reductions one block per row, at most 64 per SM; matmuls one block
 * per 64x64 output tile and gridDim.z over the batch (grid-stride).
 * Header-only (static inline) so the artifact runtime needs no other
 * object of the backend.
 */
#ifndef TD_LAUNCH_CUDA_H
#define TD_LAUNCH_CUDA_H

#include <stdint.h>

#define TD_CUDA_LAUNCH_BLOCK 256   /* == TD_CUDA_BLOCK of codegen_cuda.h */
#define TD_CUDA_LAUNCH_TILE 64     /* == TD_CUDA_TILE */

/* Kernel kinds as stored by artifacts (td_kkind's order in plan.h). */
enum { TD_CUDA_LK_POINTWISE = 0, TD_CUDA_LK_REDUCE = 1, TD_CUDA_LK_MATMUL = 2 };

static inline unsigned td_cuda_clamp_grid(int64_t n, int64_t cap) {
  return (unsigned)(n < 1 ? 1 : n > cap ? cap : n);
}

/* The grid of one kernel: matmul (is_matmul, m x n products, work = batch),
 * row/column reduce (is_reduce, work = rows) or pointwise (work = elements,
 * vec: 4 a thread).  Returns 1 with grid[3] set, 0 when there is nothing to
 * do, -1 when the rows of a matmul exceed what one launch covers. */
static inline int td_cuda_grid(int is_matmul, int is_reduce, int vec, int cols, int64_t work, int64_t m, int64_t n,
                               int sms, unsigned grid[3]) {
  grid[1] = grid[2] = 1;
  if (is_matmul) {
    if (!m || !n || !work) return 0;
    if ((m + TD_CUDA_LAUNCH_TILE - 1) / TD_CUDA_LAUNCH_TILE > 65535) return -1;
    grid[0] = td_cuda_clamp_grid((n + TD_CUDA_LAUNCH_TILE - 1) / TD_CUDA_LAUNCH_TILE, 0x7fffffff);
    grid[1] = td_cuda_clamp_grid((m + TD_CUDA_LAUNCH_TILE - 1) / TD_CUDA_LAUNCH_TILE, 65535);
    grid[2] = td_cuda_clamp_grid(work, 65535);
    return 1;
  }
  if (!work) return 0;
  if (is_reduce) {
    grid[0] = cols ? td_cuda_clamp_grid((work + TD_CUDA_LAUNCH_BLOCK - 1) / TD_CUDA_LAUNCH_BLOCK, (int64_t)sms * 32)
                   : td_cuda_clamp_grid(work, (int64_t)sms * 64);
    return 1;
  }
  int64_t threads = vec ? (work + 3) / 4 : work;
  grid[0] = td_cuda_clamp_grid((threads + TD_CUDA_LAUNCH_BLOCK - 1) / TD_CUDA_LAUNCH_BLOCK, (int64_t)sms * 32);
  return 1;
}

#endif

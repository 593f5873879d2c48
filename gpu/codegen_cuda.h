/* codegen_cuda.h - CUDA C for a kernel plan (the CUDA backend's code
 * generator).
 *
 * td_cuda_codegen turns every kernel of a td_plan (compiler/plan.h, the
 * contract the CPU backend implements too) into one __global__ function of
 * one CUDA C++ module, named after the plan's kernel ("k3_matmul_add_relu")
 * and preceded by a comment listing its ops and source lines:
 *
 *   POINTWISE  a grid-stride loop over the flat index of the kernel space
 *              (4 elements a thread with 16-byte loads and stores when every
 *              buffer is f32/i32 of the kernel's shape);
 *   REDUCE     one block per row (grid-stride over rows): each stage is a
 *              block-strided pass over the reduced elements, a warp-shuffle
 *              and shared-memory combine; then the row's output.  When the
 *              innermost axis is kept (a reduction over leading axes), a
 *              thread per row instead, so a warp's loads are contiguous;
 *   MATMUL     a 64x64 shared-memory tile per block (4x4 outputs per
 *              thread, f32 FMA, or TF32 mma.sync when asked; f16/bf16
 *              operands read as 16-bit values by m16n8k16 mma.sync, sm_80
 *              and later), the epilogue applied to every accumulated element.
 *
 * A scan kernel (TD_KERN_SCAN) has no function: its body's plan is
 * generated into the same module, its kernels named s<k>_<name> after the
 * scan's kernel k, and the host launches them once per step
 * (runtime_cuda.c, artifact_cuda.c).
 *
 * Every kernel has the signature
 *   extern "C" __global__ void NAME(void *const *bufs, const int64_t *dv, int *status)
 * bufs: the device pointer of every plan buffer (plan->bufs order); dv: the
 * runtime table (dims, in td_cuda_code.dims order: symbolic sizes and the
 * streams of random nodes, evaluated by the host before each call exactly
 * as compiler/compiled.c does); status: set to 1 + the node id of a gather
 * that saw an out-of-range index.  The scalar semantics come from
 * runtime/scalar.h itself, compiled into the module; Philox is the same
 * integer algorithm as runtime/philox.c.
 */
#ifndef TD_CODEGEN_CUDA_H
#define TD_CODEGEN_CUDA_H

#include "compiler/plan.h"

#define TD_CUDA_BLOCK 256   /* threads per block of every kernel */
#define TD_CUDA_TILE 64     /* matmul: output tile per block (square) */

/* An entry of the runtime table: a size, or the stream of a random node. */
typedef struct td_cuda_dimref {
  td_dim dim;                /* when rand_node < 0 */
  int rand_node;
} td_cuda_dimref;

struct td_cuda_code;

/* What the host needs to launch one kernel. */
typedef struct td_cuda_kernel {
  const char *name;          /* the __global__ function (a scan's: the plan kernel's name) */
  td_kkind kind;
  td_dim work;               /* POINTWISE: elements; REDUCE: rows; MATMUL: batch */
  td_dim m, n;               /* MATMUL: rows and columns of the product */
  int vec;                   /* POINTWISE: runs on 16-byte vectors (4 elements a thread) */
  int cols;                  /* REDUCE: a thread per row (work = rows), not a block */
  int half_mma;              /* MATMUL: 16-bit operands on tensor cores (TD_F16 or TD_BF16), else 0 */
  int idle;                  /* POINTWISE: an empty kernel (a widening CAST no one reads) */
  /* SCAN (kind TD_KERN_SCAN): no function of its own; the code of its
   * body's plan (kernel k's body), whose functions are in the same module
   * named s<k>_<body kernel> (nested: s<k>_s<j>_...), its runtime table its
   * own (src NULL).  The host runs the body's kernels once per step. */
  struct td_cuda_code *body;
} td_cuda_kernel;

typedef struct td_cuda_code {
  char *src;                 /* the module (td_malloc'd) */
  td_cuda_kernel *kernels;   /* per plan kernel (in the arena) */
  int n_kernels;
  td_cuda_dimref *dims;      /* the runtime table (in the arena) */
  int n_dims;
} td_cuda_code;

/* Generates the module for plan p into *out (tables in arena a).  tf32:
 * f32 matmuls use TF32 tensor cores (mma.sync m16n8k8, sm_80 and later;
 * inputs rounded to 10-bit mantissas, f32 accumulation), else f32 FMA.
 * Matmuls of two f16 or two bf16 buffers always use m16n8k16 tensor cores
 * (docs/gpu.md, "Tensor cores").  Returns 0, or -1 with err filled (an op
 * or dtype the backend does not handle). */
int td_cuda_codegen(const td_plan *p, td_arena *a, int tf32, td_cuda_code *out, td_err *err);

/* Frees out->src. */
void td_cuda_code_free(td_cuda_code *out);

#endif

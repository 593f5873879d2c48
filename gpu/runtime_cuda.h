/* runtime_cuda.h - running a kernel plan on an NVIDIA GPU (tdsl run --device cuda).
 *
 * td_cuda_run takes the plan the driver lowered (driver/driver.h: the same
 * plan the CPU compiler compiles), generates one CUDA kernel per planned
 * kernel (codegen_cuda.h), compiles the module with NVRTC for the device's
 * architecture (cached in memory and on disk), places every buffer in one
 * device allocation, copies inputs and parameters in, launches the kernels
 * asynchronously on one stream (optionally captured into a CUDA Graph and
 * launched as one), copies outputs and printed values back, and prints what
 * the program's print() calls print, after the call.  A scan's body is
 * generated into the same module and launched once per step from a host
 * loop, with the semantics of compiler/compiled.c's run_scan (docs/gpu.md,
 * "Scans").
 *
 * Without a driver, NVRTC or a device it fails with one sentence saying
 * which (the same sentence for every later call: the device is set up
 * once).  Every driver and NVRTC call is checked; a failure names the call
 * and, for launches, the kernel.
 *
 * Threads: td_cuda_run may run on several threads at once, each call with
 * its own plan (a plan's graph arena receives the generated code, so one
 * plan is used by one thread at a time), tensors (inputs and parameters
 * may be shared: they are only read) and options.  Each call makes the
 * device's primary context current on its thread and leaves it so.  See
 * docs/gpu.md, "Threads".
 */
#ifndef TD_RUNTIME_CUDA_H
#define TD_RUNTIME_CUDA_H

#include <stdio.h>
#include "compiler/plan.h"
#include "runtime/run_opts.h"

typedef struct td_cuda_opts {
  int cuda_graph;      /* capture the launches into a CUDA Graph */
  FILE *dump_cuda;     /* non-NULL: write the generated module here first */
  int repeat;          /* > 1: run the kernels this many times (benchmarks) */
  double *ms_per_call; /* non-NULL: receives the mean device time per call */
} td_cuda_opts;

/* Runs plan (its graph's inputs and parameters, as td_interp_run takes
 * them; io->trace and io->check_numerics are not looked at: the driver
 * refuses them).  With co->dump_cuda, writes the module there first. */
int td_cuda_run(const td_plan *plan, td_tensor *const *inputs, td_tensor *const *params,
                const td_run_opts *io, const td_cuda_opts *co, td_tensor ***outs, td_err *err,
                td_span *sp);

/* Whether a GPU can be used here: the driver, a device and NVRTC load.
 * 0, or -1 with the sentence td_cuda_run would fail with. */
int td_cuda_ready(td_err *err);

/* Writes the CUDA module of plan to out, without needing a GPU; 0 or -1
 * with err filled. */
int td_cuda_dump(const td_plan *plan, FILE *out, td_err *err);

/* Writes how each kernel of plan (entry point `entry`) is launched on the
 * GPU: its kind of CUDA kernel, the grid as a function of the symbolic
 * sizes, the block, 16-byte vectors or tensor cores, its shared memory
 * (`tdsl explain --device cuda`, gpu/explain_cuda.c).  Needs no GPU.  0,
 * or -1 with err filled. */
int td_cuda_explain(const td_plan *plan, const char *entry, FILE *out, td_err *err);

#endif

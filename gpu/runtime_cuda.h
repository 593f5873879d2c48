/* runtime_cuda.h - running a graph on an NVIDIA GPU (tdsl run --device cuda).
 *
 * td_cuda_run is a drop-in for td_interp_run (as cli/compile_cmd.c's
 * td_cli_run_compiled is): it optimises and plans the graph exactly as the
 * CPU compiler does, generates one CUDA kernel per planned kernel
 * (codegen_cuda.h), compiles the module with NVRTC for the device's
 * architecture (cached in memory and on disk), places every buffer in one
 * device allocation, copies inputs and parameters in, launches the kernels
 * asynchronously on one stream (optionally captured into a CUDA Graph and
 * launched as one), copies outputs and printed values back, and prints what
 * the program's print() calls print, after the call.
 *
 * Without a driver, NVRTC or a device it fails with one sentence saying
 * which (the same sentence for every later call: the device is set up
 * once).  Every driver and NVRTC call is checked; a failure names the call
 * and, for launches, the kernel.
 *
 * Threads: td_cuda_run may run on several threads at once, each call with
 * its own graph (a graph's arena receives the optimised graph and plan, so
 * one graph is used by one thread at a time), tensors (inputs and
 * parameters may be shared: they are only read) and options.  Each call
 * makes the device's primary context current on its thread and leaves it
 * so.  See docs/gpu.md, "Threads".
 */
#ifndef TD_RUNTIME_CUDA_H
#define TD_RUNTIME_CUDA_H

#include <stdio.h>
#include "lang/ir.h"
#include "runtime/run_opts.h"

typedef struct td_cuda_opts {
  int cuda_graph;      /* capture the launches into a CUDA Graph */
  FILE *dump_cuda;     /* non-NULL: write the generated module here first */
  int repeat;          /* > 1: run the kernels this many times (benchmarks) */
  double *ms_per_call; /* non-NULL: receives the mean device time per call */
} td_cuda_opts;

int td_cuda_run(const td_graph *g, td_tensor *const *inputs, td_tensor *const *params,
                const td_run_opts *io, const td_cuda_opts *co, td_tensor ***outs, td_err *err,
                td_span *sp);

/* Writes the CUDA module of g (optimised and planned) to out, without
 * needing a GPU; 0 or -1 with err filled. */
int td_cuda_dump(const td_graph *g, FILE *out, td_err *err);

/* `tdsl explain` with main's argc/argv: without --device cuda (or with
 * --device cpu) exactly cli/explain_cmd.c's report; with it, that report
 * and then each entry point's CUDA launches (gpu/explain_cuda.c, part of
 * the tdsl binary only).  Returns the exit code. */
int td_cuda_cli_explain(int argc, char **argv);

#endif

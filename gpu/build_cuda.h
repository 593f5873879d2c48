/* build_cuda.h - `tdsl build --device cuda`: a model compiled into a CUDA
 * artifact (gpu/build_cuda.c; the runtime inside it: artifact_cuda.h).
 *
 * Writes into o->dir, under the CPU artifact's names: <prefix>.so (per
 * entry point the CUDA kernels of the same kernel plan `tdsl run --device
 * cuda` uses, as a cubin for the target architecture and as PTX; the
 * initial parameters; the C API; the CUDA artifact runtime), <prefix>.h
 * (the C API: host-pointer and device-pointer calls, the stream,
 * synchronise), and with o->exe the executable <prefix>.  Files appear
 * complete or not at all (temporary names, renamed at the end).
 */
#ifndef TD_BUILD_CUDA_H
#define TD_BUILD_CUDA_H

#include <stddef.h>
#include "compiler/build.h"

/* Builds with NVRTC for o->cuda_arch ("sm_90"; NULL: sm_90).  Returns 0,
 * or -1 with err filled (NVRTC missing, a bad --arch, an NVRTC error with
 * its log, a link error). */
int td_build_cuda(td_program *p, const td_build_opts *o, td_err *err);

/* The architecture to build for when none is given: the GPU's
 * ($TDSL_CUDA_DEVICE or 0) when a driver and GPU are present, else 90;
 * why receives "the GPU's (NAME)" or why there is none. */
int td_cuda_default_arch(char *why, size_t n);

#endif

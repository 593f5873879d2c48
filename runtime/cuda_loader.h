/* cuda_loader.h - libcuda and libnvrtc, loaded with dlopen at run time.
 *
 * tdsl never links against CUDA: the binary and the tests build and run on
 * machines without it.  td_cuda_load_nvrtc finds libnvrtc (the compiler of
 * CUDA C to PTX/cubin, usable without a GPU); td_cuda_load_driver finds
 * libcuda.so.1 (the driver), initialises it and checks that a device
 * exists.  Each fills err with one sentence when it cannot ("no CUDA
 * driver (libcuda.so.1 not found)", "no NVRTC (libnvrtc.so not found in
 * ...)", "no CUDA device (...)") and returns -1.  Both are idempotent and
 * keep the libraries loaded for the life of the process.
 *
 * Threads: each library is loaded once, by whichever thread asks first
 * (pthread_once); the others wait for that load and get the same table,
 * or the same message when it failed (a failed load is not retried).  The
 * tables are never written afterwards, so any number of threads may use
 * them at once.  The driver and NVRTC are themselves thread-safe (NVRTC
 * for distinct programs), but the driver's current context is per thread:
 * code that calls into the driver makes its context current on the calling
 * thread first (cuCtxSetCurrent).
 *
 * Only the subset of the driver API and NVRTC that tdsl uses is declared
 * here, with the C types of the CUDA headers (opaque handles are pointers,
 * CUdeviceptr is a 64-bit integer), so cuda.h is not needed to build.
 */
#ifndef TD_CUDA_LOADER_H
#define TD_CUDA_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include "runtime/tensor.h"

typedef int td_cu_result;               /* CUresult; 0 = CUDA_SUCCESS */
typedef int td_cu_device;               /* CUdevice */
typedef struct td_cu_ctx_s *td_cu_ctx;  /* CUcontext */
typedef struct td_cu_mod_s *td_cu_module;
typedef struct td_cu_fn_s *td_cu_function;
typedef struct td_cu_stream_s *td_cu_stream;
typedef struct td_cu_graph_s *td_cu_graph;
typedef struct td_cu_graphexec_s *td_cu_graph_exec;
typedef uint64_t td_cu_deviceptr;
typedef int td_nvrtc_result;            /* nvrtcResult; 0 = NVRTC_SUCCESS */
typedef struct td_nvrtc_prog_s *td_nvrtc_program;

/* CUdevice_attribute values used (stable across CUDA versions). */
#define TD_CU_ATTR_MULTIPROCESSOR_COUNT 16
#define TD_CU_ATTR_CC_MAJOR 75
#define TD_CU_ATTR_CC_MINOR 76

typedef struct td_cuda_api {
  void *lib;
  td_cu_result (*cuInit)(unsigned flags);
  td_cu_result (*cuDriverGetVersion)(int *v);
  td_cu_result (*cuDeviceGetCount)(int *n);
  td_cu_result (*cuDeviceGet)(td_cu_device *d, int ordinal);
  td_cu_result (*cuDeviceGetAttribute)(int *v, int attr, td_cu_device d);
  td_cu_result (*cuDeviceGetName)(char *name, int len, td_cu_device d);
  td_cu_result (*cuDevicePrimaryCtxRetain)(td_cu_ctx *c, td_cu_device d);
  td_cu_result (*cuDevicePrimaryCtxRelease)(td_cu_device d);
  td_cu_result (*cuCtxSetCurrent)(td_cu_ctx c);
  td_cu_result (*cuModuleLoadData)(td_cu_module *m, const void *image);
  td_cu_result (*cuModuleUnload)(td_cu_module m);
  td_cu_result (*cuModuleGetFunction)(td_cu_function *f, td_cu_module m, const char *name);
  td_cu_result (*cuMemAlloc)(td_cu_deviceptr *p, size_t bytes);
  td_cu_result (*cuMemFree)(td_cu_deviceptr p);
  td_cu_result (*cuMemAllocHost)(void **p, size_t bytes);
  td_cu_result (*cuMemFreeHost)(void *p);
  td_cu_result (*cuMemcpyHtoDAsync)(td_cu_deviceptr dst, const void *src, size_t n, td_cu_stream s);
  td_cu_result (*cuMemcpyDtoHAsync)(void *dst, td_cu_deviceptr src, size_t n, td_cu_stream s);
  td_cu_result (*cuMemcpyDtoDAsync)(td_cu_deviceptr dst, td_cu_deviceptr src, size_t n, td_cu_stream s);
  td_cu_result (*cuMemsetD32Async)(td_cu_deviceptr dst, unsigned v, size_t n, td_cu_stream s);
  td_cu_result (*cuLaunchKernel)(td_cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shmem, td_cu_stream s, void **params,
                                 void **extra);
  td_cu_result (*cuStreamCreate)(td_cu_stream *s, unsigned flags);
  td_cu_result (*cuStreamDestroy)(td_cu_stream s);
  td_cu_result (*cuStreamSynchronize)(td_cu_stream s);
  td_cu_result (*cuStreamBeginCapture)(td_cu_stream s, int mode);
  td_cu_result (*cuStreamEndCapture)(td_cu_stream s, td_cu_graph *g);
  td_cu_result (*cuGraphInstantiateWithFlags)(td_cu_graph_exec *e, td_cu_graph g, unsigned long long flags);
  td_cu_result (*cuGraphLaunch)(td_cu_graph_exec e, td_cu_stream s);
  td_cu_result (*cuGraphExecDestroy)(td_cu_graph_exec e);
  td_cu_result (*cuGraphDestroy)(td_cu_graph g);
  td_cu_result (*cuGetErrorName)(td_cu_result r, const char **s);
  td_cu_result (*cuGetErrorString)(td_cu_result r, const char **s);
} td_cuda_api;

typedef struct td_nvrtc_api {
  void *lib;
  td_nvrtc_result (*nvrtcVersion)(int *major, int *minor);
  const char *(*nvrtcGetErrorString)(td_nvrtc_result r);
  td_nvrtc_result (*nvrtcCreateProgram)(td_nvrtc_program *p, const char *src, const char *name, int n_headers,
                                        const char *const *headers, const char *const *include_names);
  td_nvrtc_result (*nvrtcDestroyProgram)(td_nvrtc_program *p);
  td_nvrtc_result (*nvrtcCompileProgram)(td_nvrtc_program p, int n_opts, const char *const *opts);
  td_nvrtc_result (*nvrtcGetProgramLogSize)(td_nvrtc_program p, size_t *n);
  td_nvrtc_result (*nvrtcGetProgramLog)(td_nvrtc_program p, char *log);
  td_nvrtc_result (*nvrtcGetCUBINSize)(td_nvrtc_program p, size_t *n);
  td_nvrtc_result (*nvrtcGetCUBIN)(td_nvrtc_program p, char *cubin);
  td_nvrtc_result (*nvrtcGetPTXSize)(td_nvrtc_program p, size_t *n);
  td_nvrtc_result (*nvrtcGetPTX)(td_nvrtc_program p, char *ptx);
} td_nvrtc_api;

/* The loaded driver API (initialised, with at least one device), or NULL
 * with err filled. */
const td_cuda_api *td_cuda_load_driver(td_err *err);

/* The loaded NVRTC, or NULL with err filled.  $TDSL_NVRTC names the
 * library file explicitly (no search then: tests use it to simulate a
 * missing NVRTC). */
const td_nvrtc_api *td_cuda_load_nvrtc(td_err *err);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a driver result (for
 * callers that hold the driver's table, or inside its load). */
const char *td_cuda_strerror(td_cu_result r, char *buf, size_t n);

/* Compiles CUDA C `src` with NVRTC for sm_<arch> (90 for the H200) to a
 * cubin.  opts are extra NVRTC options (may be NULL).  On success returns 0
 * with *cubin and *cubin_size (td_malloc'd) and *log (td_malloc'd, may be
 * empty; the caller frees both).  On failure -1 with err naming `what` and
 * the NVRTC log. */
int td_nvrtc_compile(const char *src, const char *what, int arch, const char *const *opts, int n_opts,
                     char **cubin, size_t *cubin_size, char **log, td_err *err);

/* The same for the virtual architecture compute_<arch>: the PTX text
 * (NUL-terminated; *ptx_size excludes the NUL), which a driver of that or a
 * newer GPU compiles when it loads the module. */
int td_nvrtc_compile_ptx(const char *src, const char *what, int arch, const char *const *opts, int n_opts,
                         char **ptx, size_t *ptx_size, char **log, td_err *err);

#endif

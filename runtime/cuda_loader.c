/* cuda_loader.c - dlopen of libcuda.so.1 and libnvrtc (see cuda_loader.h).
 *
 * The driver is looked up by its soname only (it lives in the system's
 * library path, installed with the kernel driver; the toolkit's stub
 * libcuda.so is never loaded).  NVRTC is looked up by its versioned and
 * unversioned names, first on the default path, then in $CUDA_HOME/lib64,
 * /usr/local/cuda/lib64 and /usr/local/cuda-13/lib64; $TDSL_NVRTC, when set,
 * names the one file to load (no search).
 */
#include "runtime/cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"

/* Each library is loaded once per process, by the first caller, under
 * pthread_once: the tables (and the message of a failed load) are written
 * only inside the once routine and only read after pthread_once returned,
 * which orders the writes before every read in every thread.  A failed
 * load is not retried: every caller gets the same message. */
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static td_cuda_api drv;
static int drv_ok;
static td_err drv_err;
static pthread_once_t rtc_once = PTHREAD_ONCE_INIT;
static td_nvrtc_api rtc;
static int rtc_ok;
static td_err rtc_err;

/* dlsym into *slot; returns 0, or -1 naming the symbol in err. */
static int sym(void *lib, const char *name, void *slot, const char *libname, td_err *err) {
  void *p = dlsym(lib, name);
  if (!p) return td_err_set(err, "%s lacks %s (too old a version?)", libname, name);
  memcpy(slot, &p, sizeof p);
  return 0;
}

const char *td_cuda_strerror(td_cu_result r, char *buf, size_t n) {
  const char *name = NULL, *text = NULL;
  if (drv.cuGetErrorName) drv.cuGetErrorName(r, &name);
  if (drv.cuGetErrorString) drv.cuGetErrorString(r, &text);
  snprintf(buf, n, "%s (%s)", name ? name : "CUDA error", text ? text : "no description");
  if (!name && !text) snprintf(buf, n, "CUDA error %d", r);
  return buf;
}

#define DSYM(f, name) sym(drv.lib, name, &drv.f, "libcuda.so.1", err)

static int bind_driver(td_err *err) {
  return DSYM(cuInit, "cuInit") || DSYM(cuDriverGetVersion, "cuDriverGetVersion") ||
         DSYM(cuDeviceGetCount, "cuDeviceGetCount") || DSYM(cuDeviceGet, "cuDeviceGet") ||
         DSYM(cuDeviceGetAttribute, "cuDeviceGetAttribute") || DSYM(cuDeviceGetName, "cuDeviceGetName") ||
         DSYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") ||
         DSYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") ||
         DSYM(cuCtxSetCurrent, "cuCtxSetCurrent") || DSYM(cuModuleLoadData, "cuModuleLoadData") ||
         DSYM(cuModuleUnload, "cuModuleUnload") || DSYM(cuModuleGetFunction, "cuModuleGetFunction") ||
         DSYM(cuMemAlloc, "cuMemAlloc_v2") || DSYM(cuMemFree, "cuMemFree_v2") ||
         DSYM(cuMemAllocHost, "cuMemAllocHost_v2") || DSYM(cuMemFreeHost, "cuMemFreeHost") ||
         DSYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") || DSYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") ||
         DSYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") || DSYM(cuMemsetD32Async, "cuMemsetD32Async") ||
         DSYM(cuLaunchKernel, "cuLaunchKernel") ||
         DSYM(cuStreamCreate, "cuStreamCreate") || DSYM(cuStreamDestroy, "cuStreamDestroy_v2") ||
         DSYM(cuStreamSynchronize, "cuStreamSynchronize") ||
         DSYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2") || DSYM(cuStreamEndCapture, "cuStreamEndCapture") ||
         DSYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") ||
         DSYM(cuGraphLaunch, "cuGraphLaunch") || DSYM(cuGraphExecDestroy, "cuGraphExecDestroy") ||
         DSYM(cuGraphDestroy, "cuGraphDestroy") || DSYM(cuGetErrorName, "cuGetErrorName") ||
         DSYM(cuGetErrorString, "cuGetErrorString")
             ? -1 : 0;
}

static int open_driver(td_err *err) {
  drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!drv.lib) return td_err_set(err, "no CUDA driver (libcuda.so.1 not found): --device cuda needs an NVIDIA GPU and its driver");
  if (bind_driver(err)) return -1;
  char msg[160];
  td_cu_result r = drv.cuInit(0);
  if (r) return td_err_set(err, "no CUDA device (cuInit failed: %s)", td_cuda_strerror(r, msg, sizeof msg));
  int n = 0;
  r = drv.cuDeviceGetCount(&n);
  if (r) return td_err_set(err, "no CUDA device (cuDeviceGetCount failed: %s)", td_cuda_strerror(r, msg, sizeof msg));
  if (n < 1) return td_err_set(err, "no CUDA device (the driver is installed but sees no GPU)");
  return 0;
}

static void init_driver(void) { drv_ok = open_driver(&drv_err) == 0; }

const td_cuda_api *td_cuda_load_driver(td_err *err) {
  pthread_once(&drv_once, init_driver);
  if (drv_ok) return &drv;
  if (err) *err = drv_err;
  return NULL;
}

#define RSYM(f) sym(rtc.lib, #f, &rtc.f, "libnvrtc", err)

static int bind_nvrtc(td_err *err) {
  return RSYM(nvrtcVersion) || RSYM(nvrtcGetErrorString) || RSYM(nvrtcCreateProgram) ||
         RSYM(nvrtcDestroyProgram) || RSYM(nvrtcCompileProgram) || RSYM(nvrtcGetProgramLogSize) ||
         RSYM(nvrtcGetProgramLog) || RSYM(nvrtcGetCUBINSize) || RSYM(nvrtcGetCUBIN) ||
         RSYM(nvrtcGetPTXSize) || RSYM(nvrtcGetPTX)
             ? -1 : 0;
}

static int open_nvrtc(td_err *err) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  const char *dirs[] = {NULL, getenv("CUDA_HOME"), "/usr/local/cuda/lib64", "/usr/local/cuda-13/lib64",
                        "/usr/local/cuda-12/lib64"};
  const char *explicit_path = getenv("TDSL_NVRTC");
  char path[1024];
  if (explicit_path && *explicit_path) {   /* named explicitly: that file or nothing */
    if (!(rtc.lib = dlopen(explicit_path, RTLD_NOW | RTLD_LOCAL)))
      return td_err_set(err, "no NVRTC ($TDSL_NVRTC names %s, which cannot be loaded): install the CUDA toolkit "
                             "or point $TDSL_NVRTC at its libnvrtc.so", explicit_path);
    return bind_nvrtc(err);
  }
  for (size_t d = 0; !rtc.lib && d < sizeof dirs / sizeof *dirs; d++) {
    if (d && (!dirs[d] || !*dirs[d])) continue;
    for (size_t i = 0; !rtc.lib && i < sizeof names / sizeof *names; i++) {
      if (!d) snprintf(path, sizeof path, "%s", names[i]);
      else snprintf(path, sizeof path, "%s%s/%s", dirs[d], d == 1 ? "/lib64" : "", names[i]);
      rtc.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!rtc.lib)
    return td_err_set(err, "no NVRTC (libnvrtc.so not found on the library path, in $CUDA_HOME/lib64 or "
                           "/usr/local/cuda/lib64): install the CUDA toolkit");
  return bind_nvrtc(err);
}

static void init_nvrtc(void) { rtc_ok = open_nvrtc(&rtc_err) == 0; }

const td_nvrtc_api *td_cuda_load_nvrtc(td_err *err) {
  pthread_once(&rtc_once, init_nvrtc);
  if (rtc_ok) return &rtc;
  if (err) *err = rtc_err;
  return NULL;
}

/* The program's log (td_malloc'd, possibly empty) or NULL. */
static char *program_log(td_nvrtc_program p) {
  size_t n = 0;
  if (rtc.nvrtcGetProgramLogSize(p, &n)) return NULL;
  char *log = td_malloc(n + 1);
  if (!log) return NULL;
  log[0] = 0;
  if (n && rtc.nvrtcGetProgramLog(p, log)) log[0] = 0;
  log[n] = 0;
  return log;
}

/* Compiles src with NVRTC for --gpu-architecture=<target> (sm_XY: a cubin;
 * compute_XY: PTX text, NUL-terminated) into *out / *out_size. */
static int compile_for(const char *src, const char *what, const char *target, int ptx, const char *const *opts,
                       int n_opts, char **out, size_t *out_size, char **log, td_err *err) {
  *out = NULL;
  *out_size = 0;
  *log = NULL;
  if (!td_cuda_load_nvrtc(err)) return -1;
  td_nvrtc_program p = NULL;
  td_nvrtc_result r = rtc.nvrtcCreateProgram(&p, src, what, 0, NULL, NULL);
  if (r) return td_err_set(err, "nvrtcCreateProgram failed for %s: %s", what, rtc.nvrtcGetErrorString(r));
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", target);
  const char *all[32];
  int n = 0;
  all[n++] = archopt;
  all[n++] = "--std=c++17";
  all[n++] = "-default-device";
  for (int i = 0; i < n_opts && n < 32; i++) all[n++] = opts[i];
  r = rtc.nvrtcCompileProgram(p, n, all);
  *log = program_log(p);
  if (r) {
    td_err_set(err, "NVRTC could not compile %s for %s (nvrtcCompileProgram: %s):\n%s", what, target,
               rtc.nvrtcGetErrorString(r), *log ? *log : "(no log)");
    rtc.nvrtcDestroyProgram(&p);
    return -1;
  }
  size_t sz = 0;
  r = ptx ? rtc.nvrtcGetPTXSize(p, &sz) : rtc.nvrtcGetCUBINSize(p, &sz);
  if (!r && sz) {
    *out = td_malloc(sz + 1);
    if (!*out) r = 1;
    else r = ptx ? rtc.nvrtcGetPTX(p, *out) : rtc.nvrtcGetCUBIN(p, *out);
    if (!r) (*out)[sz] = 0;
  }
  rtc.nvrtcDestroyProgram(&p);
  if (r || !sz) {
    td_free(*out);
    *out = NULL;
    return td_err_set(err, "NVRTC produced no %s for %s", ptx ? "PTX" : "cubin", what);
  }
  *out_size = sz;
  return 0;
}

int td_nvrtc_compile(const char *src, const char *what, int arch, const char *const *opts, int n_opts,
                     char **cubin, size_t *cubin_size, char **log, td_err *err) {
  char target[32];
  snprintf(target, sizeof target, "sm_%d", arch);
  return compile_for(src, what, target, 0, opts, n_opts, cubin, cubin_size, log, err);
}

int td_nvrtc_compile_ptx(const char *src, const char *what, int arch, const char *const *opts, int n_opts,
                         char **ptx, size_t *ptx_size, char **log, td_err *err) {
  char target[32];
  snprintf(target, sizeof target, "compute_%d", arch);
  return compile_for(src, what, target, 1, opts, n_opts, ptx, ptx_size, log, err);
}

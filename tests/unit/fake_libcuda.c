/* fake_libcuda.c - a stand-in libcuda.so.1 for tests without a GPU
 * (tests/unit/test_gpu_build.c compiles it into a scratch directory and
 * puts that on LD_LIBRARY_PATH).
 *
 * It implements the part of the driver API that gpu/cuda_loader.c binds,
 * on host memory: one device (compute capability $FAKE_CUDA_CC, default
 * 90, one SM), allocations are aligned host blocks (a device address is
 * the host address), copies are memcpy, streams run everything at once.
 * cuModuleLoadData accepts what a real driver would: a cubin (ELF,
 * e_machine EM_CUDA = 190) only for exactly the device's architecture,
 * PTX text only for the device's or an older target; otherwise
 * CUDA_ERROR_NO_BINARY_FOR_GPU.  The k-th module loaded runs as the k-th
 * shared object of $FAKE_CUDA_EMU (colon-separated): the same module
 * compiled for the CPU under tests/unit/cuda_emu_shim.h, whose
 * td_emu_launch runs a kernel on a grid; cuModuleGetFunction is dlsym.
 * Each module load appends "cubin sm_90" or "ptx sm_90" to $FAKE_CUDA_LOG.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef void (*kfn)(void *const *, const int64_t *, int *);
typedef int (*launch_fn)(kfn, unsigned, unsigned, unsigned, void *const *, const int64_t *, int *);

typedef struct fake_fn fake_fn;

typedef struct fake_mod {
  void *so;
  launch_fn launch;
  fake_fn *fns;              /* handed out by cuModuleGetFunction, freed with the module */
} fake_mod;

struct fake_fn {
  fake_mod *mod;
  kfn fn;
  fake_fn *next;
};

static int n_loaded;

static int device_cc(void) {
  const char *v = getenv("FAKE_CUDA_CC");
  return v && *v ? atoi(v) : 90;
}

static void note(const char *kind, int arch) {
  const char *path = getenv("FAKE_CUDA_LOG");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, "%s sm_%d\n", kind, arch);
  fclose(f);
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  (void)d;
  *v = attr == 75 ? device_cc() / 10 : attr == 76 ? device_cc() % 10 : attr == 16 ? 1 : 0;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  snprintf(name, (size_t)len, "fake GPU");
  return 0;
}
static int ctx_token;
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { (void)d; *c = &ctx_token; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }

/* The architecture of a cubin (e_flags: sm in bits 8..15, or 0..7 in older
 * cubins), or -1 when image is not a CUDA ELF. */
static int cubin_arch(const unsigned char *image) {
  if (memcmp(image, "\x7f" "ELF", 4)) return -1;
  uint16_t machine;
  uint32_t flags;
  memcpy(&machine, image + 18, 2);
  memcpy(&flags, image + 48, 4);
  if (machine != 190) return -1;
  return (flags >> 8 & 0xff) ? (int)(flags >> 8 & 0xff) : (int)(flags & 0xff);
}

CUresult cuModuleLoadData(void **mod, const void *image) {
  const unsigned char *img = image;
  int arch = cubin_arch(img), ok;
  if (arch >= 0) {
    ok = arch == device_cc();
    if (ok) note("cubin", arch);
  } else {
    const char *t = strstr((const char *)img, ".target sm_");
    if (!t || !strstr((const char *)img, ".version")) return 200;   /* CUDA_ERROR_INVALID_IMAGE */
    arch = atoi(t + 11);
    ok = arch <= device_cc();
    if (ok) note("ptx", arch);
  }
  if (!ok) return 209;   /* CUDA_ERROR_NO_BINARY_FOR_GPU */
  const char *list = getenv("FAKE_CUDA_EMU");
  char path[1024];
  for (int k = 0; list && k < n_loaded; k++) list = strchr(list, ':') ? strchr(list, ':') + 1 : NULL;
  if (!list) return 200;
  size_t n = strcspn(list, ":");
  snprintf(path, sizeof path, "%.*s", (int)n, list);
  fake_mod *m = calloc(1, sizeof *m);
  if (!m || !(m->so = dlopen(path, RTLD_NOW | RTLD_LOCAL)) || !(m->launch = (launch_fn)dlsym(m->so, "td_emu_launch"))) {
    free(m);
    return 200;
  }
  n_loaded++;
  *mod = m;
  return 0;
}
CUresult cuModuleUnload(void *mod) {
  fake_mod *m = mod;
  while (m->fns) {
    fake_fn *next = m->fns->next;
    free(m->fns);
    m->fns = next;
  }
  dlclose(m->so);
  free(m);
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
  fake_fn *fn = calloc(1, sizeof *fn);
  if (!fn) return 2;
  fn->mod = mod;
  if (!(fn->fn = (kfn)dlsym(fn->mod->so, name))) {
    free(fn);
    return 500;   /* CUDA_ERROR_NOT_FOUND */
  }
  fn->next = fn->mod->fns;
  fn->mod->fns = fn;
  *f = fn;
  return 0;
}

CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
  if (!m) return 2;
  memset(m, 0xa5, n);   /* garbage, as device memory is */
  *p = (uint64_t)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s) {
  (void)s;
  memcpy((void *)(uintptr_t)dst, src, n);
  return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s) {
  (void)s;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s) {
  (void)s;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return 0;
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void *s) {
  (void)s;
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < n; i++) p[i] = v;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *s, void **params, void **extra) {
  (void)s;
  (void)extra;
  fake_fn *fn = f;
  if (bx != 256 || by != 1 || bz != 1 || shmem) return 1;   /* CUDA_ERROR_INVALID_VALUE */
  void *const *bufs = *(void *const **)params[0];
  const int64_t *dv = *(const int64_t **)params[1];
  int *status = *(int **)params[2];
  return fn->mod->launch(fn->fn, gx, gy, gz, bufs, dv, status) ? 719 : 0;
}
static int stream_token;
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = &stream_token; return 0; }
CUresult cuStreamDestroy_v2(void *s) { (void)s; return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
CUresult cuStreamBeginCapture_v2(void *s, int mode) { (void)s; (void)mode; return 801; }
CUresult cuStreamEndCapture(void *s, void **g) { (void)s; (void)g; return 801; }
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { (void)e; (void)g; (void)f; return 801; }
CUresult cuGraphLaunch(void *e, void *s) { (void)e; (void)s; return 801; }
CUresult cuGraphExecDestroy(void *e) { (void)e; return 0; }
CUresult cuGraphDestroy(void *g) { (void)g; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU" : r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 209 ? "no kernel image is available for execution on the device" : "fake driver error";
  return 0;
}

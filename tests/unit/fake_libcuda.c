/* fake_libcuda.c - a stand-in libcuda.so.1 for tests without a GPU
 * (tests/unit/test_gpu_build.c and tests/tsan/cuda_stress.c compile it
 * into a scratch directory and put that on LD_LIBRARY_PATH).
 *
 * It implements the part of the driver API that runtime/cuda_loader.c binds,
 * on host memory: one device (compute capability $FAKE_CUDA_CC, default
 * 90, one SM), allocations are aligned host blocks (a device address is
 * the host address), copies are memcpy, streams run everything at once.
 * cuModuleLoadData accepts what a real driver would: a cubin (ELF,
 * e_machine EM_CUDA = 190) only for exactly the device's architecture,
 * PTX text only for the device's or an older target; otherwise
 * CUDA_ERROR_NO_BINARY_FOR_GPU.  A module runs as one shared object of
 * $FAKE_CUDA_EMU (colon-separated): the same module compiled for the CPU
 * under tests/unit/cuda_emu_shim.h, whose td_emu_launch runs a kernel on a
 * grid; cuModuleGetFunction is dlsym.  A plain entry PATH is taken in load
 * order (the k-th module loaded is the k-th entry); an entry TAG=PATH is
 * taken by every module whose image holds the text TAG (NVRTC's -lineinfo
 * puts the program's name, tdsl's graph name, into the image), for loads
 * in any order.  Each module load appends "cubin sm_90" or "ptx sm_90" to
 * $FAKE_CUDA_LOG.
 *
 * Threads, as the real driver's rules go: every call may come from any
 * thread at once (a mutex guards the fake's own lists; kernels run one at
 * a time, since the emulation keeps its grid in statics).  The current
 * context is per thread: calls that need one fail with
 * CUDA_ERROR_INVALID_CONTEXT (201) on a thread that has not made the
 * primary context current, or while nobody holds it retained.  Streams
 * are distinct objects.  Stream capture is emulated: launches (and
 * device-to-device copies) on a capturing stream are recorded (another thread's launch on that stream
 * is recorded too, as on a GPU), cuGraphLaunch replays them; during a
 * capture in CU_STREAM_CAPTURE_MODE_GLOBAL (0) the unsafe calls
 * (cuMemAlloc, cuMemFree, cuModuleLoadData, cuModuleUnload) of every
 * other thread fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) and
 * invalidate that capture (cuStreamEndCapture: 901); in THREAD_LOCAL (1)
 * only the capturing thread's own.  With $FAKE_CUDA_CAPTURE_US,
 * cuStreamBeginCapture returns only once another thread has made an
 * unsafe call or a launch (or after that many microseconds), so that the
 * capture certainly meets other threads' work.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef void (*kfn)(void *const *, const int64_t *, int *);
typedef int (*launch_fn)(kfn, unsigned, unsigned, unsigned, void *const *, const int64_t *, int *);

enum {
  E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_INVALID_IMAGE = 200, E_INVALID_CONTEXT = 201,
  E_NO_BINARY_FOR_GPU = 209, E_NOT_FOUND = 500, E_LAUNCH_FAILED = 719, E_NOT_SUPPORTED = 801,
  E_CAPTURE_UNSUPPORTED = 900, E_CAPTURE_INVALIDATED = 901, E_CAPTURE_WRONG_THREAD = 908
};

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

/* One recorded launch: the kernel, its grid and its three arguments'
 * values (copied when it is recorded, as the driver copies parameters);
 * fn NULL: a device-to-device copy (dst, src, bytes). */
typedef struct rec {
  fake_fn *fn;
  unsigned grid[3];
  uint64_t arg[3];
} rec;

typedef struct fake_stream {
  int capturing, mode, invalid;
  const void *owner;         /* the capturing thread (its `me`) */
  rec *recs;                 /* what the capture recorded */
  int n, cap;
  struct fake_stream *next;
} fake_stream;

typedef struct fake_graph {  /* a captured graph, and its instantiation */
  rec *recs;
  int n;
} fake_graph;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;         /* everything below */
static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER;  /* one kernel at a time */
static int n_loaded;
static fake_stream *streams;
static _Thread_local char me;   /* its address names the calling thread */

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

/* ---- contexts: the primary one, current per thread ---- */

static int ctx_token;
static atomic_int calls;                /* unsafe calls and launches so far (FAKE_CUDA_CAPTURE_US) */
static atomic_int retained;             /* retains minus releases */
static _Thread_local void *current;     /* this thread's current context */

static CUresult need_ctx(void) { return current == &ctx_token && atomic_load(&retained) > 0 ? 0 : E_INVALID_CONTEXT; }

/* An unsafe call (not ordered by any stream) while a capture forbids it:
 * this thread's own capture (not relaxed), or another thread's global one,
 * which it invalidates.  mu held. */
static CUresult capture_forbids(void) {
  CUresult r = 0;
  for (fake_stream *s = streams; s; s = s->next)
    if (s->capturing && ((s->owner == &me && s->mode != 2) || (s->owner != &me && s->mode == 0))) {
      r = E_CAPTURE_UNSUPPORTED;
      s->invalid = 1;
    }
  return r;
}

static CUresult unsafe_call(void) {
  CUresult r = need_ctx();
  if (r) return r;
  atomic_fetch_add(&calls, 1);
  pthread_mutex_lock(&mu);
  r = capture_forbids();
  pthread_mutex_unlock(&mu);
  return r;
}

/* Is stream s capturing (so no copies may be queued on it)? */
static int capturing(void *s) {
  fake_stream *fs = s;
  pthread_mutex_lock(&mu);
  int c = fs && fs->capturing;
  pthread_mutex_unlock(&mu);
  return c;
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
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  atomic_fetch_add(&retained, 1);
  *c = &ctx_token;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  (void)d;
  return atomic_fetch_sub(&retained, 1) > 0 ? 0 : E_INVALID_CONTEXT;
}
CUresult cuCtxSetCurrent(void *c) {
  if (c && c != &ctx_token) return E_INVALID_CONTEXT;
  current = c;
  return 0;
}

/* ---- modules ---- */

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

/* The bytes of an image: an ELF's headers are at its end (the larger of
 * the section and the program header tables' ends); PTX is text. */
static size_t image_size(const unsigned char *img) {
  if (cubin_arch(img) < 0) return strlen((const char *)img);
  uint64_t shoff, phoff;
  uint16_t shentsize, shnum, phentsize, phnum;
  memcpy(&phoff, img + 0x20, 8);
  memcpy(&shoff, img + 0x28, 8);
  memcpy(&phentsize, img + 0x36, 2);
  memcpy(&phnum, img + 0x38, 2);
  memcpy(&shentsize, img + 0x3a, 2);
  memcpy(&shnum, img + 0x3c, 2);
  uint64_t a = shoff + (uint64_t)shentsize * shnum, b = phoff + (uint64_t)phentsize * phnum;
  return (size_t)(a > b ? a : b);
}

/* The shared object that runs image (see the top), into path; 0 or -1.
 * mu held (n_loaded). */
static int emu_path(const unsigned char *img, char *path, size_t n) {
  const char *list = getenv("FAKE_CUDA_EMU");
  size_t size = image_size(img);
  for (int k = 0; list && *list; k++) {
    size_t len = strcspn(list, ":");
    const char *eq = memchr(list, '=', len);
    if (eq ? memmem(img, size, list, (size_t)(eq - list)) != NULL : k == n_loaded) {
      const char *p = eq ? eq + 1 : list;
      snprintf(path, n, "%.*s", (int)(list + len - p), p);
      return 0;
    }
    list += len + (list[len] == ':');
  }
  return -1;
}

CUresult cuModuleLoadData(void **mod, const void *image) {
  CUresult r = unsafe_call();
  if (r) return r;
  const unsigned char *img = image;
  int arch = cubin_arch(img), ok;
  if (arch >= 0) {
    ok = arch == device_cc();
    if (ok) note("cubin", arch);
  } else {
    const char *t = strstr((const char *)img, ".target sm_");
    if (!t || !strstr((const char *)img, ".version")) return E_INVALID_IMAGE;
    arch = atoi(t + 11);
    ok = arch <= device_cc();
    if (ok) note("ptx", arch);
  }
  if (!ok) return E_NO_BINARY_FOR_GPU;
  char path[1024];
  pthread_mutex_lock(&mu);
  int found = emu_path(img, path, sizeof path) == 0;
  if (found) n_loaded++;
  pthread_mutex_unlock(&mu);
  if (!found) return E_INVALID_IMAGE;
  fake_mod *m = calloc(1, sizeof *m);
  if (!m || !(m->so = dlopen(path, RTLD_NOW | RTLD_LOCAL)) || !(m->launch = (launch_fn)dlsym(m->so, "td_emu_launch"))) {
    free(m);
    return E_INVALID_IMAGE;
  }
  *mod = m;
  return 0;
}
CUresult cuModuleUnload(void *mod) {
  CUresult r = unsafe_call();
  if (r) return r;
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
  CUresult r = need_ctx();
  if (r) return r;
  fake_fn *fn = calloc(1, sizeof *fn);
  if (!fn) return E_OUT_OF_MEMORY;
  fn->mod = mod;
  if (!(fn->fn = (kfn)dlsym(fn->mod->so, name))) {
    free(fn);
    return E_NOT_FOUND;
  }
  pthread_mutex_lock(&mu);   /* two threads may look up functions of one module */
  fn->next = fn->mod->fns;
  fn->mod->fns = fn;
  pthread_mutex_unlock(&mu);
  *f = fn;
  return 0;
}

/* ---- memory ---- */

CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  CUresult r = unsafe_call();
  if (r) return r;
  void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
  if (!m) return E_OUT_OF_MEMORY;
  memset(m, 0xa5, n);   /* garbage, as device memory is */
  *p = (uint64_t)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(uint64_t p) {
  CUresult r = unsafe_call();
  if (r) return r;
  free((void *)(uintptr_t)p);
  return 0;
}
CUresult cuMemAllocHost_v2(void **p, size_t n) {
  CUresult r = need_ctx();
  if (r) return r;
  *p = malloc(n ? n : 1);
  return *p ? 0 : E_OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) {
  CUresult r = need_ctx();
  if (r) return r;
  free(p);
  return 0;
}
/* Copies and sets run at once; one queued on a capturing stream would be
 * captured, which the fake emulates only for device-to-device copies
 * (a scan's copies between steps, runtime_cuda.c): the others fail. */
static CUresult queue_ok(void *s) {
  CUresult r = need_ctx();
  return r ? r : capturing(s) ? E_NOT_SUPPORTED : 0;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *s) {
  CUresult r = queue_ok(s);
  if (!r) memcpy((void *)(uintptr_t)dst, src, n);
  return r;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *s) {
  CUresult r = queue_ok(s);
  if (!r) memcpy(dst, (const void *)(uintptr_t)src, n);
  return r;
}
static CUresult add_rec(rec **list, int *n, int *cap, const rec *k);
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void *s) {
  CUresult r = need_ctx();
  if (r) return r;
  fake_stream *fs = s;
  rec k = {NULL, {0, 0, 0}, {dst, src, (uint64_t)n}};   /* fn NULL: a copy */
  pthread_mutex_lock(&mu);
  if (fs && fs->capturing) {   /* recorded, replayed by cuGraphLaunch */
    r = add_rec(&fs->recs, &fs->n, &fs->cap, &k);
    pthread_mutex_unlock(&mu);
    return r;
  }
  pthread_mutex_unlock(&mu);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return 0;
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void *s) {
  CUresult r = queue_ok(s);
  if (r) return r;
  uint32_t *p = (uint32_t *)(uintptr_t)dst;
  for (size_t i = 0; i < n; i++) p[i] = v;
  return 0;
}

/* ---- launches ---- */

static CUresult run_rec(const rec *k) {
  if (!k->fn) {   /* a captured device-to-device copy */
    memmove((void *)(uintptr_t)k->arg[0], (const void *)(uintptr_t)k->arg[1], (size_t)k->arg[2]);
    return 0;
  }
  void *const *bufs = (void *const *)(uintptr_t)k->arg[0];
  const int64_t *dv = (const int64_t *)(uintptr_t)k->arg[1];
  int *status = (int *)(uintptr_t)k->arg[2];
  pthread_mutex_lock(&launch_mu);
  int bad = k->fn->mod->launch(k->fn->fn, k->grid[0], k->grid[1], k->grid[2], bufs, dv, status);
  pthread_mutex_unlock(&launch_mu);
  return bad ? E_LAUNCH_FAILED : 0;
}

/* Appends k to a list; 0 or E_OUT_OF_MEMORY. */
static CUresult add_rec(rec **list, int *n, int *cap, const rec *k) {
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 16;
    rec *p = realloc(*list, (size_t)c * sizeof *p);
    if (!p) return E_OUT_OF_MEMORY;
    *list = p;
    *cap = c;
  }
  (*list)[(*n)++] = *k;
  return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *s, void **params, void **extra) {
  (void)extra;
  CUresult r = need_ctx();
  if (r) return r;
  if (bx != 256 || by != 1 || bz != 1 || shmem) return E_INVALID_VALUE;
  atomic_fetch_add(&calls, 1);
  rec k = {f, {gx, gy, gz}, {0, 0, 0}};
  for (int i = 0; i < 3; i++) memcpy(&k.arg[i], params[i], sizeof k.arg[i]);
  fake_stream *fs = s;
  pthread_mutex_lock(&mu);
  if (fs && fs->capturing) {   /* recorded, whichever thread launches */
    r = add_rec(&fs->recs, &fs->n, &fs->cap, &k);
    pthread_mutex_unlock(&mu);
    return r;
  }
  pthread_mutex_unlock(&mu);
  return run_rec(&k);
}

/* ---- streams and graphs ---- */

CUresult cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  CUresult r = need_ctx();
  if (r) return r;
  fake_stream *fs = calloc(1, sizeof *fs);
  if (!fs) return E_OUT_OF_MEMORY;
  pthread_mutex_lock(&mu);
  fs->next = streams;
  streams = fs;
  pthread_mutex_unlock(&mu);
  *s = fs;
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
  CUresult r = need_ctx();
  if (r) return r;
  fake_stream *fs = s, **p;
  pthread_mutex_lock(&mu);
  for (p = &streams; *p && *p != fs; p = &(*p)->next) {}
  int known = fs && *p;
  if (known) *p = fs->next;
  pthread_mutex_unlock(&mu);
  if (!known) return E_INVALID_VALUE;
  free(fs->recs);
  free(fs);
  return 0;
}
CUresult cuStreamSynchronize(void *s) {
  CUresult r = need_ctx();
  return r ? r : capturing(s) ? E_CAPTURE_UNSUPPORTED : 0;
}
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  CUresult r = need_ctx();
  if (r) return r;
  fake_stream *fs = s;
  if (!fs || mode < 0 || mode > 2) return E_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  r = fs->capturing ? E_INVALID_VALUE : 0;
  if (!r) {
    fs->capturing = 1;
    fs->mode = mode;
    fs->invalid = 0;
    fs->owner = &me;
    fs->n = 0;
  }
  pthread_mutex_unlock(&mu);
  const char *hold = getenv("FAKE_CUDA_CAPTURE_US");   /* keeps the capture open: other threads meet it */
  int before = atomic_load(&calls);
  for (long t = 0, most = hold ? atol(hold) : 0; !r && t < most && atomic_load(&calls) == before; t += 1000)
    usleep(1000);
  return r;
}
CUresult cuStreamEndCapture(void *s, void **g) {
  CUresult r = need_ctx();
  if (r) return r;
  fake_stream *fs = s;
  *g = NULL;
  pthread_mutex_lock(&mu);
  if (!fs || !fs->capturing) r = E_INVALID_VALUE;
  else if (fs->owner != &me) r = E_CAPTURE_WRONG_THREAD;
  else {
    fs->capturing = 0;
    fake_graph *graph = fs->invalid ? NULL : calloc(1, sizeof *graph);
    r = fs->invalid ? E_CAPTURE_INVALIDATED : graph ? 0 : E_OUT_OF_MEMORY;
    if (graph) {
      graph->recs = fs->recs;
      graph->n = fs->n;
      fs->recs = NULL;
      fs->n = fs->cap = 0;
      *g = graph;
    }
  }
  pthread_mutex_unlock(&mu);
  return r;
}
CUresult cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) {
  (void)f;
  CUresult r = need_ctx();
  if (r) return r;
  const fake_graph *graph = g;
  fake_graph *x = calloc(1, sizeof *x);
  if (!x || !(x->recs = malloc(((size_t)graph->n + 1) * sizeof *x->recs))) {
    free(x);
    return E_OUT_OF_MEMORY;
  }
  memcpy(x->recs, graph->recs, (size_t)graph->n * sizeof *x->recs);
  x->n = graph->n;
  *e = x;
  return 0;
}
CUresult cuGraphLaunch(void *e, void *s) {
  CUresult r = need_ctx();
  if (r) return r;
  if (capturing(s)) return E_NOT_SUPPORTED;
  const fake_graph *x = e;
  for (int i = 0; i < x->n && !r; i++) r = run_rec(&x->recs[i]);
  return r;
}
static void graph_free(fake_graph *g) {
  if (!g) return;
  free(g->recs);
  free(g);
}
CUresult cuGraphExecDestroy(void *e) { graph_free(e); return 0; }
CUresult cuGraphDestroy(void *g) { graph_free(g); return 0; }

/* The driver's private tables.  NVRTC, loaded in the same process, looks
 * this up in libcuda.so.1 and crashes when it is missing; it copes with
 * having none. */
CUresult cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = NULL;
  return E_NOT_FOUND;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == E_NO_BINARY_FOR_GPU    ? "CUDA_ERROR_NO_BINARY_FOR_GPU"
       : r == E_INVALID_IMAGE      ? "CUDA_ERROR_INVALID_IMAGE"
       : r == E_INVALID_CONTEXT    ? "CUDA_ERROR_INVALID_CONTEXT"
       : r == E_CAPTURE_UNSUPPORTED ? "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"
       : r == E_CAPTURE_INVALIDATED ? "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"
                                    : "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == E_NO_BINARY_FOR_GPU ? "no kernel image is available for execution on the device"
       : r == E_INVALID_CONTEXT ? "invalid device context"
                                : "fake driver error";
  return 0;
}

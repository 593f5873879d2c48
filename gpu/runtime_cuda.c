/* runtime_cuda.c - a graph on the GPU (see runtime_cuda.h).
 *
 * Device memory: one cuMemAlloc per call holding, each at a 256-byte
 * boundary, the arena of temporaries (the plan's slots, each rounded up to
 * 64 bytes as on the CPU), every input, parameter and output buffer, the
 * table of buffer pointers the kernels index (bufs), the runtime table
 * (dv: sizes and random streams, computed exactly as compiler/compiled.c
 * does) and the gather status word.
 *
 * Modules: compiled once per (source, architecture, options, tdsl version):
 * looked up in a per-process list, then in the on-disk cache
 * ($TDSL_CACHE_DIR, else $XDG_CACHE_HOME/tdsl, else ~/.cache/tdsl; off with
 * TDSL_CACHE=0) as cuda-<key>.cubin, else compiled with NVRTC and stored.
 * The cubins share the CPU entries' size limit and least-recently-used
 * eviction (compiler/cache.h): a disk hit touches the file, a store trims.
 *
 * Threads: td_cuda_run may be called from several threads at once (each
 * with its own graph, tensors and options).  What they share is made
 * once and then only read, or locked:
 *   - the driver and NVRTC tables (cuda_loader.c, pthread_once);
 *   - the device: GPU 0, its primary context and its attributes, set up
 *     once (pthread_once; a failure is remembered and reported to every
 *     caller).  The driver's current context is per thread, so every call
 *     makes the primary context current on its own thread;
 *   - the module list, under modules_mu.  A thread that needs a module
 *     another thread is compiling waits for it (modules_cv) instead of
 *     compiling it again, so one key is written to the disk cache by one
 *     thread; different modules compile in parallel (the lock is not held
 *     while NVRTC runs).
 * Everything else of a call is its own: its stream (created and destroyed
 * by the call, so one call's synchronise does not wait for another's
 * kernels and a CUDA Graph captures only its own launches; capture is
 * thread-local), its device allocation and its tables.
 *
 * gpu/device-check.sh exercises this file on a GPU machine; without one,
 * tests/tsan/cuda_stress.c runs it on several threads under the stand-in
 * driver (tests/unit/fake_libcuda.c), in make check and under
 * ThreadSanitizer in .ci/run.
 */
#include "gpu/runtime_cuda.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/cache.h"
#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "lang/checks.h"
#include "lang/params.h"
#include "runtime/mem.h"
#include "runtime/fileio.h"
#include "runtime/philox.h"
#include "gpu/codegen_cuda.h"
#include "runtime/cuda_loader.h"
#include "artifact/launch_cuda.h"

_Static_assert(TD_CUDA_BLOCK == TD_CUDA_LAUNCH_BLOCK && TD_CUDA_TILE == TD_CUDA_LAUNCH_TILE,
               "launch_cuda.h must match codegen_cuda.h");
_Static_assert((int)TD_KERN_POINTWISE == (int)TD_CUDA_LK_POINTWISE && (int)TD_KERN_REDUCE == (int)TD_CUDA_LK_REDUCE &&
                   (int)TD_KERN_MATMUL == (int)TD_CUDA_LK_MATMUL, "artifact kernel kinds are td_kkind's");

#ifndef TDSL_VERSION
#define TDSL_VERSION "0.1.0"
#endif

/* NVRTC options of every module (part of the cache key). */
static const char *const rtc_opts[] = {"--fmad=false", "-lineinfo"};
#define N_RTC_OPTS 2

/* Checks a driver call: on failure fills err with the call, the kernel (if
 * any) and the driver's message, and returns -1. */
static int ck(const td_cuda_api *cu, td_cu_result r, const char *call, const char *kernel, td_err *err) {
  if (!r) return 0;
  char msg[200];
  td_cuda_strerror(r, msg, sizeof msg);
  if (kernel) return td_err_set(err, "%s failed for kernel %s: %s", call, kernel, msg);
  (void)cu;
  return td_err_set(err, "%s failed: %s", call, msg);
}

/* ---- the module cache ---- */

/* This process's modules (kept until exit).  An entry whose mod is NULL
 * is being loaded by another thread; it is removed if that load fails. */
typedef struct modent {
  uint64_t key;
  td_cu_module mod;
  struct modent *next;
} modent;
static pthread_mutex_t modules_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t modules_cv = PTHREAD_COND_INITIALIZER;   /* an entry was loaded or removed */
static modent *modules;

static uint64_t module_key(const char *src, int arch) {
  uint64_t h = td_hash_str(src);
  h = td_hash_mix(h, (uint64_t)arch);
  for (int i = 0; i < N_RTC_OPTS; i++) h = td_hash_mix(h, td_hash_str(rtc_opts[i]));
  return td_hash_mix(h, td_hash_str(TDSL_VERSION));
}

/* The largest cubin read from the cache. */
#define CUBIN_MAX ((size_t)1 << 30)

/* The module of key from the disk cache, else compiled with NVRTC (and
 * stored in the disk cache). */
static int load_uncached(const td_cuda_api *cu, const char *src, int arch, const char *what, uint64_t key,
                         td_cu_module *mod, td_err *err) {
  char dir[900], path[1024], stem[32];
  size_t size = 0;
  char *cubin = NULL, *log = NULL;
  int cached = td_cache_dir(dir, sizeof dir, NULL) == 0, why;
  snprintf(stem, sizeof stem, "cuda-%016llx", (unsigned long long)key);
  if (cached) {
    snprintf(path, sizeof path, "%s/%s.cubin", dir, stem);
    if (td_io_read_all(path, CUBIN_MAX, &cubin, &size, &why)) cubin = NULL;   /* regular files only */
  }
  if (cubin && cu->cuModuleLoadData(mod, cubin)) {   /* a stale or damaged entry: recompile */
    td_free(cubin);
    cubin = NULL;
  } else if (cubin) {
    td_cache_touch(path);   /* recently used: evicted last */
    goto loaded;
  }
  if (td_nvrtc_compile(src, what, arch, rtc_opts, N_RTC_OPTS, &cubin, &size, &log, err)) {
    td_free(log);
    return -1;
  }
  td_free(log);
  if (ck(cu, cu->cuModuleLoadData(mod, cubin), "cuModuleLoadData", NULL, err)) {
    td_free(cubin);
    return -1;
  }
  if (cached) {   /* stored, then the cache trimmed to its limit (compiler/cache.h) */
    (void)td_cache_write(path, cubin, size, NULL);
    td_cache_trim(dir, stem, td_cache_limit());
  }
loaded:
  td_free(cubin);
  return 0;
}

/* The module of src for arch: from this process's list (waiting while
 * another thread loads the same one), else loaded by this thread, which
 * holds an entry for it meanwhile. */
static int load_module(const td_cuda_api *cu, const char *src, int arch, const char *what, td_cu_module *mod,
                       td_err *err) {
  uint64_t key = module_key(src, arch);
  modent *e;
  pthread_mutex_lock(&modules_mu);
  for (;;) {
    for (e = modules; e && e->key != key; e = e->next) {}
    if (!e || e->mod) break;
    pthread_cond_wait(&modules_cv, &modules_mu);   /* loading elsewhere: its result, or its removal */
  }
  if (e) {
    *mod = e->mod;
    pthread_mutex_unlock(&modules_mu);
    return 0;
  }
  if ((e = td_malloc(sizeof *e))) {   /* no memory for an entry: loaded, not kept */
    *e = (modent){key, NULL, modules};
    modules = e;
  }
  pthread_mutex_unlock(&modules_mu);
  int rc = load_uncached(cu, src, arch, what, key, mod, err);
  if (!e) return rc;
  pthread_mutex_lock(&modules_mu);
  if (rc) {   /* removed: a waiter tries (and reports) for itself */
    modent **p = &modules;
    while (*p != e) p = &(*p)->next;
    *p = e->next;
    td_free(e);
  } else {
    e->mod = *mod;
  }
  pthread_cond_broadcast(&modules_cv);
  pthread_mutex_unlock(&modules_mu);
  return rc;
}

/* ---- one call ---- */

typedef struct dev {
  const td_cuda_api *cu;
  int arch, sms;
  td_cu_stream stream;      /* this call's own */
} dev;

/* GPU 0 and its primary context, the same for every call of the process:
 * set up by the first call (pthread_once), only read afterwards. */
static struct {
  pthread_once_t once;
  const td_cuda_api *cu;
  td_cu_ctx ctx;
  int arch, sms, ok;
  td_err err;
} device = {PTHREAD_ONCE_INIT};

static void init_device(void) {
  const td_cuda_api *cu = device.cu = td_cuda_load_driver(&device.err);
  td_cu_device d;
  int major = 0, minor = 0;
  device.ok = cu && !ck(cu, cu->cuDeviceGet(&d, 0), "cuDeviceGet", NULL, &device.err) &&
              !ck(cu, cu->cuDeviceGetAttribute(&major, TD_CU_ATTR_CC_MAJOR, d), "cuDeviceGetAttribute", NULL,
                  &device.err) &&
              !ck(cu, cu->cuDeviceGetAttribute(&minor, TD_CU_ATTR_CC_MINOR, d), "cuDeviceGetAttribute", NULL,
                  &device.err) &&
              !ck(cu, cu->cuDeviceGetAttribute(&device.sms, TD_CU_ATTR_MULTIPROCESSOR_COUNT, d),
                  "cuDeviceGetAttribute", NULL, &device.err) &&
              !ck(cu, cu->cuDevicePrimaryCtxRetain(&device.ctx, d), "cuDevicePrimaryCtxRetain", NULL, &device.err);
  device.arch = major * 10 + minor;
}

/* The device for one call: the primary context made current on the
 * calling thread (the driver's current context is per thread). */
static int open_device(dev *d, td_err *err) {
  pthread_once(&device.once, init_device);
  if (!device.ok) {
    *err = device.err;
    return -1;
  }
  d->cu = device.cu;
  d->arch = device.arch;
  d->sms = device.sms;
  return ck(d->cu, d->cu->cuCtxSetCurrent(device.ctx), "cuCtxSetCurrent", NULL, err);
}

typedef struct run {
  dev d;
  const td_plan *p;
  const td_cuda_code *code;
  td_err *err;
  int64_t *symvals;
  int64_t *dv;
  size_t *buf_off;          /* per plan buffer: byte offset in the allocation */
  size_t *buf_bytes;
  size_t total, off_table, off_dv, off_status;
  td_cu_deviceptr mem;
  td_cu_function *fns;
  td_tensor **owned;        /* host tensors of the OUTPUT buffers */
} run;

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

static int eval_shape(run *r, int n, int64_t *shape) {
  const td_node *nd = &r->p->g->nodes[n];
  for (int k = 0; k < nd->rank; k++)
    if ((shape[k] = td_dim_eval(r->p->g, nd->shape[k], r->symvals)) < 0)
      return td_err_set(r->err, "size of axis %d of %s evaluates to %lld", k, td_ops[nd->op].name, (long long)shape[k]);
  return 0;
}

/* Lays out the one allocation and creates the host output tensors. */
static int layout(run *r) {
  const td_plan *p = r->p;
  size_t arena = 0;
  size_t *slot_off = td_calloc((size_t)p->n_slots + 1, sizeof *slot_off);
  if (!slot_off) return td_err_set(r->err, "out of memory");
  for (int s = 0; s < p->n_slots; s++) {
    slot_off[s] = arena;
    arena += ((size_t)td_dim_eval(p->g, p->slot_bytes[s], r->symvals) + 63) & ~(size_t)63;
  }
  size_t at = up256(arena);
  int rc = 0;
  for (int i = 0; i < p->n_bufs && !rc; i++) {
    const td_buffer *b = &p->bufs[i];
    int64_t shape[TD_MAX_RANK];
    const td_node *nd = &p->g->nodes[b->node];
    if ((rc = eval_shape(r, b->node, shape))) break;
    size_t n = td_dtype_size(nd->dtype);
    for (int k = 0; k < nd->rank; k++) n *= (size_t)shape[k];
    r->buf_bytes[i] = n;
    if (b->kind == TD_BUF_TEMP) { r->buf_off[i] = slot_off[b->index]; continue; }
    r->buf_off[i] = at;
    at += up256(n ? n : 1);
    if (b->kind == TD_BUF_OUTPUT && !(r->owned[i] = td_tensor_new(nd->dtype, nd->rank, shape, r->err))) rc = -1;
  }
  td_free(slot_off);
  r->off_table = at;
  at += up256(sizeof(uint64_t) * (size_t)(p->n_bufs + 1));
  r->off_dv = at;
  at += up256(sizeof(int64_t) * (size_t)(r->code->n_dims + 1));
  r->off_status = at;
  r->total = at + 256;
  return rc;
}

static void eval_table(run *r, uint64_t call) {
  const td_graph *g = r->p->g;
  for (int i = 0; i < r->code->n_dims; i++) {
    const td_cuda_dimref *d = &r->code->dims[i];
    if (d->rand_node >= 0) {
      uint64_t s = g->nodes[d->rand_node].attr.stream;
      if (call) s = td_hash_mix(s, call);
      memcpy(&r->dv[i], &s, sizeof s);
    } else {
      r->dv[i] = td_dim_eval(g, d->dim, r->symvals);
    }
  }
}

/* Copies inputs, parameters and the two tables to the device. */
static int upload(run *r, td_tensor *const *inputs, td_tensor *const *params, uint64_t *table) {
  const td_cuda_api *cu = r->d.cu;
  for (int i = 0; i < r->p->n_bufs; i++) {
    const td_buffer *b = &r->p->bufs[i];
    table[i] = r->mem + r->buf_off[i];
    const td_tensor *t = b->kind == TD_BUF_INPUT ? inputs[b->index] : b->kind == TD_BUF_PARAM ? params[b->index] : NULL;
    if (t && r->buf_bytes[i] &&
        ck(cu, cu->cuMemcpyHtoDAsync(table[i], t->data, r->buf_bytes[i], r->d.stream), "cuMemcpyHtoDAsync", NULL,
           r->err))
      return -1;
  }
  if (ck(cu, cu->cuMemcpyHtoDAsync(r->mem + r->off_table, table, sizeof *table * (size_t)(r->p->n_bufs + 1),
                                   r->d.stream), "cuMemcpyHtoDAsync", NULL, r->err) ||
      ck(cu, cu->cuMemcpyHtoDAsync(r->mem + r->off_dv, r->dv, sizeof *r->dv * (size_t)(r->code->n_dims + 1),
                                   r->d.stream), "cuMemcpyHtoDAsync", NULL, r->err) ||
      ck(cu, cu->cuMemsetD32Async(r->mem + r->off_status, 0, 1, r->d.stream), "cuMemsetD32Async", NULL, r->err))
    return -1;
  return 0;
}

/* Launches every kernel once, in plan order, on the stream (geometry:
 * launch_cuda.h, shared with the artifact runtime). */
static int launch_all(run *r) {
  const td_cuda_api *cu = r->d.cu;
  td_cu_deviceptr table = r->mem + r->off_table, dv = r->mem + r->off_dv, status = r->mem + r->off_status;
  void *args[3] = {&table, &dv, &status};
  for (int k = 0; k < r->code->n_kernels; k++) {
    const td_cuda_kernel *kn = &r->code->kernels[k];
    int64_t work = td_dim_eval(r->p->g, kn->work, r->symvals), m = 0, n = 0;
    if (kn->kind == TD_KERN_MATMUL) {
      m = td_dim_eval(r->p->g, kn->m, r->symvals);
      n = td_dim_eval(r->p->g, kn->n, r->symvals);
    }
    unsigned g[3];
    int go = td_cuda_grid(kn->kind == TD_KERN_MATMUL, kn->kind == TD_KERN_REDUCE, kn->vec, kn->cols, work, m, n,
                          r->d.sms, g);
    if (go < 0) return td_err_set(r->err, "kernel %s: %lld rows are more than one launch covers", kn->name, (long long)m);
    if (!go) continue;
    if (ck(cu, cu->cuLaunchKernel(r->fns[k], g[0], g[1], g[2], TD_CUDA_BLOCK, 1, 1, 0, r->d.stream, args, NULL),
           "cuLaunchKernel", kn->name, r->err))
      return -1;
  }
  return 0;
}

/* Runs the launches `repeat` times, directly or through a CUDA Graph. */
static int execute(run *r, const td_cuda_opts *co) {
  const td_cuda_api *cu = r->d.cu;
  int repeat = co && co->repeat > 1 ? co->repeat : 1;
  if (!co || !co->cuda_graph) {
    struct timespec t0, t1;
    /* timing: the copies in must not count */
    if (co && co->ms_per_call && ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err))
      return -1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < repeat; i++)
      if (launch_all(r)) return -1;
    if (ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err)) return -1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (co && co->ms_per_call)
      *co->ms_per_call = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / repeat;
    return 0;
  }
  td_cu_graph graph = NULL;
  td_cu_graph_exec exec = NULL;
  /* thread-local capture: other threads' calls stay allowed meanwhile (a
   * global capture makes their cuMemAlloc, cuModuleLoadData, ... fail) */
  if (ck(cu, cu->cuStreamBeginCapture(r->d.stream, 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */), "cuStreamBeginCapture",
         NULL, r->err))
    return -1;
  int rc = launch_all(r);
  td_cu_result er = cu->cuStreamEndCapture(r->d.stream, &graph);
  if (!rc) rc = ck(cu, er, "cuStreamEndCapture", NULL, r->err);
  if (!rc) rc = ck(cu, cu->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags", NULL, r->err);
  if (!rc) rc = ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < repeat && !rc; i++) rc = ck(cu, cu->cuGraphLaunch(exec, r->d.stream), "cuGraphLaunch", NULL, r->err);
  if (!rc) rc = ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (!rc && co->ms_per_call)
    *co->ms_per_call = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / repeat;
  if (exec) cu->cuGraphExecDestroy(exec);
  if (graph) cu->cuGraphDestroy(graph);
  return rc;
}

/* Copies the OUTPUT buffers back and checks the gather status. */
static int download(run *r, td_span *sp) {
  const td_cuda_api *cu = r->d.cu;
  int32_t status = 0;
  for (int i = 0; i < r->p->n_bufs; i++)
    if (r->owned[i] && r->buf_bytes[i] &&
        ck(cu, cu->cuMemcpyDtoHAsync(r->owned[i]->data, r->mem + r->buf_off[i], r->buf_bytes[i], r->d.stream),
           "cuMemcpyDtoHAsync", NULL, r->err))
      return -1;
  if (ck(cu, cu->cuMemcpyDtoHAsync(&status, r->mem + r->off_status, sizeof status, r->d.stream), "cuMemcpyDtoHAsync",
         NULL, r->err) ||
      ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err))
    return -1;
  if (status > 0 && status <= r->p->g->n_nodes) {
    const td_node *nd = &r->p->g->nodes[status - 1];
    if (sp) *sp = nd->span;
    return td_err_set(r->err, "take: an index is out of range for axis %d of size %lld", nd->attr.axis,
                      (long long)td_dim_eval(r->p->g, r->p->g->nodes[nd->in[0]].shape[nd->attr.axis], r->symvals));
  }
  return 0;
}

static int collect(run *r, td_tensor *const *inputs, td_tensor *const *params, td_tensor ***all) {
  const td_plan *p = r->p;
  td_tensor **o = td_malloc((size_t)(p->n_out_nodes + 1) * sizeof *o);
  if (!o) return td_err_set(r->err, "out of memory");
  for (int i = 0; i < p->n_out_nodes; i++) {
    int b = p->buf_of[p->out_nodes[i]];
    const td_buffer *bf = &p->bufs[b];
    td_tensor *t = bf->kind == TD_BUF_INPUT ? inputs[bf->index] : bf->kind == TD_BUF_PARAM ? params[bf->index] : r->owned[b];
    o[i] = td_tensor_retain(t);
  }
  *all = o;
  return 0;
}

static int get_functions(run *r, td_cu_module mod) {
  for (int k = 0; k < r->code->n_kernels; k++)
    if (ck(r->d.cu, r->d.cu->cuModuleGetFunction(&r->fns[k], mod, r->code->kernels[k].name), "cuModuleGetFunction",
           r->code->kernels[k].name, r->err))
      return -1;
  return 0;
}

static int run_plan(run *r, td_tensor *const *inputs, td_tensor *const *params, const td_run_opts *io,
                    const td_cuda_opts *co, td_tensor ***all, td_span *sp) {
  const td_plan *p = r->p;
  td_cu_module mod;
  uint64_t *table = td_calloc((size_t)p->n_bufs + 1, sizeof *table);
  int rc = table ? 0 : td_err_set(r->err, "out of memory");
  if (!rc && ck(r->d.cu, r->d.cu->cuStreamCreate(&r->d.stream, 1 /* non-blocking */), "cuStreamCreate", NULL, r->err)) {
    r->d.stream = NULL;
    rc = -1;
  }
  if (!rc) rc = load_module(r->d.cu, r->code->src, r->d.arch, p->g->name, &mod, r->err);
  if (!rc) rc = get_functions(r, mod);
  if (!rc) rc = td_bind_inputs(p->g, inputs, p->g->n_inputs, r->symvals, r->err);
  if (!rc) rc = td_checks_run_graph(p->g, r->symvals, r->err, sp);
  if (!rc) rc = layout(r);
  if (!rc) {
    eval_table(r, io->call_index);
    rc = ck(r->d.cu, r->d.cu->cuMemAlloc(&r->mem, r->total), "cuMemAlloc", NULL, r->err);
  }
  if (!rc) rc = upload(r, inputs, params, table);
  if (!rc) rc = execute(r, co);
  if (!rc) rc = download(r, sp);
  if (!rc) rc = collect(r, inputs, params, all);
  if (r->mem) {
    r->d.cu->cuStreamSynchronize(r->d.stream);
    r->d.cu->cuMemFree(r->mem);
  }
  if (r->d.stream) r->d.cu->cuStreamDestroy(r->d.stream);
  td_free(table);
  return rc;
}

/* TDSL_CUDA_TF32=1: f32 matmuls on TF32 tensor cores (off by default:
 * TF32 rounds the operands to 10-bit mantissas). */
static int want_tf32(void) {
  const char *e = getenv("TDSL_CUDA_TF32");
  return e && !strcmp(e, "1");
}

int td_cuda_dump(const td_plan *plan, FILE *out, td_err *err) {
  td_cuda_code code;
  if (td_cuda_codegen(plan, plan->g->arena, want_tf32(), &code, err)) return -1;
  fputs(code.src, out);
  td_cuda_code_free(&code);
  return 0;
}

int td_cuda_ready(td_err *err) {
  dev d;
  if (open_device(&d, err)) return -1;
  return td_cuda_load_nvrtc(err) ? 0 : -1;
}

int td_cuda_run(const td_plan *plan, td_tensor *const *inputs, td_tensor *const *params,
                const td_run_opts *io, const td_cuda_opts *co, td_tensor ***outs, td_err *err,
                td_span *sp) {
  *outs = NULL;
  if (co && co->dump_cuda && td_cuda_dump(plan, co->dump_cuda, err)) return -1;
  run r;
  memset(&r, 0, sizeof r);
  r.err = err;
  if (open_device(&r.d, err)) return -1;
  if (!td_cuda_load_nvrtc(err)) return -1;
  const td_graph *g = plan->g;
  td_cuda_code code;
  if (td_cuda_codegen(plan, plan->g->arena, want_tf32() && r.d.arch >= 80, &code, err)) return -1;
  r.p = plan;
  r.code = &code;
  r.symvals = td_calloc((size_t)plan->g->n_syms + 1, sizeof *r.symvals);
  r.dv = td_calloc((size_t)code.n_dims + 1, sizeof *r.dv);
  r.buf_off = td_calloc((size_t)plan->n_bufs + 1, sizeof *r.buf_off);
  r.buf_bytes = td_calloc((size_t)plan->n_bufs + 1, sizeof *r.buf_bytes);
  r.fns = td_calloc((size_t)code.n_kernels + 1, sizeof *r.fns);
  r.owned = td_calloc((size_t)plan->n_bufs + 1, sizeof *r.owned);
  td_tensor **all = NULL;
  int rc = r.symvals && r.dv && r.buf_off && r.buf_bytes && r.fns && r.owned ? 0 : td_err_set(err, "out of memory");
  if (!rc) rc = run_plan(&r, inputs, params, io, co, &all, sp);
  if (!rc) rc = td_compiled_prints(plan, all, io, err);
  if (!rc) {
    *outs = td_malloc((size_t)(g->n_outputs + 1) * sizeof **outs);
    if (!*outs) rc = td_err_set(err, "out of memory");
  }
  for (int i = 0; all && i < plan->n_out_nodes; i++) {
    if (!rc && i < g->n_outputs) (*outs)[i] = all[i];
    else td_tensor_release(all[i]);
  }
  td_free(all);
  for (int i = 0; r.owned && i < plan->n_bufs; i++) td_tensor_release(r.owned[i]);
  td_free(r.symvals);
  td_free(r.dv);
  td_free(r.buf_off);
  td_free(r.buf_bytes);
  td_free(r.fns);
  td_free(r.owned);
  td_cuda_code_free(&code);
  return rc;
}

/* runtime_cuda.c - a graph on the GPU (see runtime_cuda.h).
 *
 * Device memory: one cuMemAlloc per call holding, each at a 256-byte
 * boundary, the arena of temporaries (the plan's slots, each rounded up to
 * 64 bytes as on the CPU), every input, parameter and output buffer, the
 * table of buffer pointers the kernels index (bufs), the runtime table
 * (dv: sizes and random streams, computed exactly as compiler/compiled.c
 * does) and the gather status word; with scans, each body's temporaries,
 * outputs not written in place and carries' second buffers too, and a
 * second allocation for the frames of every step (see "scans: the host
 * loop" below).
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

/* A scan kernel's body (runtime_cuda.h: the host loop): its plan and
 * code, its functions, and where its own buffers are in the call's
 * allocation (the same at every step: the steps run one after another). */
typedef struct level {
  const td_plan *p;
  const td_cuda_code *code;
  td_cu_function *fns;
  size_t *off;              /* per body buffer: offset of a TEMP or an OUTPUT not written in place */
  size_t *alt;              /* per carry: offset of its second buffer */
  struct level **sub;       /* per body kernel: a nested scan's body, else NULL */
} level;

/* One launch of the call, or (fn NULL) one device-to-device copy. */
typedef struct launch {
  td_cu_function fn;
  const char *name;
  unsigned g[3];
  td_cu_deviceptr table, dv, status;   /* the kernel's three arguments */
  td_cu_deviceptr dst, src;             /* a copy */
  size_t bytes;
} launch;

/* A step of a scan: a body's tables in the frames' allocation. */
typedef struct frame {
  const td_plan *p;
  int parent;               /* the enclosing step's frame, -1: the entry */
  int64_t step;
} frame;

typedef struct run {
  dev d;
  const td_plan *p;
  const td_cuda_code *code;
  td_err *err;
  td_span *sp;
  int64_t *symvals;
  int64_t *dv;
  size_t *buf_off;          /* per plan buffer: byte offset in the allocation */
  size_t *buf_bytes;
  size_t total, off_table, off_dv, off_status;
  td_cu_deviceptr mem;
  td_cu_function *fns;
  td_tensor **owned;        /* host tensors of the OUTPUT buffers */
  uint64_t call;            /* the call index (random streams) */
  level **sub;              /* per entry kernel: a scan's body, else NULL */
  /* scans: every step's tables, made on the host and copied once */
  td_cu_deviceptr fmem;
  unsigned char *fhost;
  size_t fbytes, fat, fstatus;   /* size, bytes used, offset of the status words */
  frame *frames;
  int n_frames, cap_frames;
  launch *launches;
  int n_launches, cap_launches;
} run;

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

static int eval_shape(run *r, int n, int64_t *shape) {
  const td_node *nd = &r->p->g->nodes[n];
  for (int k = 0; k < nd->rank; k++)
    if ((shape[k] = td_dim_eval(r->p->g, nd->shape[k], r->symvals)) < 0)
      return td_err_set(r->err, "size of axis %d of %s evaluates to %lld", k, td_ops[nd->op].name, (long long)shape[k]);
  return 0;
}

/* ---- scans: the host loop ----
 *
 * A scan kernel's body is a plan of its own whose kernels are in the same
 * module (codegen_cuda.h).  The call's allocation also holds, per body,
 * its temporaries, its outputs that are not written in place and its
 * carries' second buffers.  Before the launches, the host walks the
 * steps: per step a frame (the body's table of buffer addresses, its
 * runtime table with the random streams mixed with the step as eager
 * mode mixes them, the step's index value and a status word) is written
 * into one host buffer, and the step's launches (and the copies of
 * outputs the body does not write in place) are appended to the call's
 * list.  The frames go to the device in one copy, into one allocation
 * made for the call; then the list is launched like the entry's own
 * kernels.  Nothing is allocated or copied per step: a step's launches
 * differ only in their table and runtime-table arguments. */

static level *level_new(const td_plan *p, const td_cuda_code *code) {
  level *L = td_calloc(1, sizeof *L);
  if (!L) return NULL;
  L->p = p;
  L->code = code;
  L->fns = td_calloc((size_t)p->n_kernels + 1, sizeof *L->fns);
  L->off = td_calloc((size_t)p->n_bufs + 1, sizeof *L->off);
  L->alt = td_calloc((size_t)p->g->n_outputs + 1, sizeof *L->alt);
  L->sub = td_calloc((size_t)p->n_kernels + 1, sizeof *L->sub);
  int ok = L->fns && L->off && L->alt && L->sub;
  for (int k = 0; ok && k < p->n_kernels; k++)
    if (code->kernels[k].body && !(L->sub[k] = level_new(p->kernels[k].body, code->kernels[k].body))) ok = 0;
  if (ok) return L;
  for (int k = 0; L->sub && k < p->n_kernels; k++) td_free(L->sub[k]);
  td_free(L->fns);
  td_free(L->off);
  td_free(L->alt);
  td_free(L->sub);
  td_free(L);
  return NULL;
}

static void level_free(level *L) {
  if (!L) return;
  for (int k = 0; k < L->p->n_kernels; k++) level_free(L->sub[k]);
  td_free(L->fns);
  td_free(L->off);
  td_free(L->alt);
  td_free(L->sub);
  td_free(L);
}

/* Bytes of node n of g at the call's sizes (its shape was checked). */
static size_t node_bytes(const run *r, const td_graph *g, int n) {
  const td_node *nd = &g->nodes[n];
  size_t b = td_dtype_size(nd->dtype);
  for (int i = 0; i < nd->rank; i++) {
    int64_t v = td_dim_eval(g, nd->shape[i], r->symvals);
    b *= v > 0 ? (size_t)v : 0;
  }
  return b;
}

/* Is body output i written by the body's kernels straight into the
 * step's destination (else it is copied there after the step)? */
static int out_direct(const td_plan *bp, int i) {
  int ob = bp->buf_of[bp->out_nodes[i]];
  return ob >= 0 && bp->bufs[ob].kind == TD_BUF_OUTPUT && bp->bufs[ob].index == i;
}

/* Places body L's memory from *at on (after its size checks, which
 * compiled code makes once per size too); then its nested bodies'. */
static int layout_level(run *r, level *L, size_t *at) {
  const td_plan *p = L->p;
  const td_graph *g = p->g;
  if (td_checks_run_graph(g, r->symvals, r->err, r->sp)) return -1;
  size_t base = *at;
  for (int s = 0; s < p->n_slots; s++) {
    size_t off = *at;
    *at += ((size_t)td_dim_eval(g, p->slot_bytes[s], r->symvals) + 63) & ~(size_t)63;
    for (int i = 0; i < p->n_bufs; i++)
      if (p->bufs[i].kind == TD_BUF_TEMP && p->bufs[i].index == s) L->off[i] = off;
  }
  *at = base + up256(*at - base);
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *b = &p->bufs[i];
    if (b->kind == TD_BUF_PARAM || b->kind == TD_BUF_UPDATE)
      return td_err_set(r->err, "internal compiler error: a scan's body reads a parameter");
    if (b->kind != TD_BUF_OUTPUT || out_direct(p, b->index)) continue;
    L->off[i] = *at;
    *at += up256(node_bytes(r, g, b->node) + 1);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    L->alt[i] = *at;
    *at += up256(node_bytes(r, g, p->out_nodes[i]) + 1);
  }
  for (int k = 0; k < p->n_kernels; k++)
    if (L->sub[k] && layout_level(r, L->sub[k], at)) return -1;
  return 0;
}

/* Bytes of one frame of body plan p (8-byte words: the table, the runtime
 * table, the step's index). */
static size_t frame_bytes(const td_plan *p, const td_cuda_code *code) {
  return sizeof(uint64_t) * ((size_t)p->n_bufs + 1 + (size_t)code->n_dims + 1 + 1);
}

/* The frames the scans of plan p make per run of p, and their bytes
 * (*n, *bytes added to); -1 when a trip count is negative (reported when
 * the steps are recorded) or the count overflows. */
static int count_frames(run *r, const td_plan *p, const td_cuda_code *code, int64_t *n, size_t *bytes) {
  for (int k = 0; k < p->n_kernels; k++) {
    if (!code->kernels[k].body) continue;
    const td_plan *bp = p->kernels[k].body;
    int64_t T = td_dim_eval(p->g, p->g->nodes[p->kernels[k].root].attr.dim, r->symvals), n1 = 1;
    size_t b1 = frame_bytes(bp, code->kernels[k].body);
    if (T < 0) continue;
    if (count_frames(r, bp, code->kernels[k].body, &n1, &b1)) return -1;
    if (T && (n1 > ((int64_t)1 << 40) / T || b1 > ((size_t)1 << 40) / (size_t)T)) return -1;
    *n += T * n1;
    *bytes += (size_t)T * b1;
    if (*n > ((int64_t)1 << 31) - 2) return -1;
  }
  return 0;
}

static int push_launch(run *r, const launch *l) {
  if (r->n_launches == r->cap_launches) {
    int cap = r->cap_launches ? 2 * r->cap_launches : 64;
    launch *n = td_realloc(r->launches, (size_t)cap * sizeof *n);
    if (!n) return td_err_set(r->err, "out of memory");
    r->launches = n;
    r->cap_launches = cap;
  }
  r->launches[r->n_launches++] = *l;
  return 0;
}

static int push_copy(run *r, td_cu_deviceptr dst, td_cu_deviceptr src, size_t bytes) {
  if (!bytes || dst == src) return 0;
  launch l;
  memset(&l, 0, sizeof l);
  l.dst = dst;
  l.src = src;
  l.bytes = bytes;
  return push_launch(r, &l);
}

/* The launch of kernel k of plan p with the given arguments. */
static int push_kernel(run *r, const td_plan *p, const td_cuda_kernel *kn, td_cu_function fn, td_cu_deviceptr table,
                       td_cu_deviceptr dv, td_cu_deviceptr status) {
  int64_t work = td_dim_eval(p->g, kn->work, r->symvals), m = 0, n = 0;
  if (kn->kind == TD_KERN_MATMUL) {
    m = td_dim_eval(p->g, kn->m, r->symvals);
    n = td_dim_eval(p->g, kn->n, r->symvals);
  }
  launch l;
  memset(&l, 0, sizeof l);
  int go = td_cuda_grid(kn->kind == TD_KERN_MATMUL, kn->kind == TD_KERN_REDUCE, kn->vec, kn->cols, work, m, n,
                        r->d.sms, l.g);
  if (go < 0) return td_err_set(r->err, "kernel %s: %lld rows are more than one launch covers", kn->name, (long long)m);
  if (!go) return 0;
  l.fn = fn;
  l.name = kn->name;
  l.table = table;
  l.dv = dv;
  l.status = status;
  return push_launch(r, &l);
}

/* Scans nest at most this deep (the elaborator's limit, lang/builtins_scan.c). */
#define SCAN_DEPTH_MAX 16

static int record_plan(run *r, const td_plan *p, const td_cuda_code *code, td_cu_function *fns, level **sub,
                       const uint64_t *addr, td_cu_deviceptr table, td_cu_deviceptr dv, td_cu_deviceptr status,
                       int frame_of, int64_t *steps, int depth);

/* Scan kernel k of plan p (whose buffers are at addr), as compiled.c's
 * run_scan runs it: per step a frame for the body, whose table reads
 * carry i from cur[i] and writes it to the other of two buffers (the
 * scan's output and L's second one), chosen so that the last step writes
 * the output; step t's slice of a sequence and row t of a stacked output
 * are read and written in place; with no step the carries are the initial
 * values. */
static int record_scan(run *r, const td_plan *p, int k, level *L, const uint64_t *addr, int frame_of, int64_t *steps,
                       int depth) {
  const td_plan *bp = L->p;
  const td_graph *bg = bp->g;
  int id = p->kernels[k].root;
  const td_node *s = &p->g->nodes[id];
  const td_attr *a = &s->attr;
  int nc = a->n_carry, nx = a->n_xs, no = bg->n_outputs, ni = bg->n_inputs;
  int idx = a->index ? nc + nx : -1, shift = a->index ? 1 : 0;
  int64_t T = td_dim_eval(p->g, a->dim, r->symvals);
  if (T < 0) {
    if (r->sp) *r->sp = s->span;
    return td_err_set(r->err, "scan: the number of steps evaluates to %lld", (long long)T);
  }
  if (depth >= SCAN_DEPTH_MAX) return td_err_set(r->err, "scans nest more than %d deep", SCAN_DEPTH_MAX);
  uint64_t *in = td_calloc((size_t)ni + 1, sizeof *in), *cur = td_calloc((size_t)nc + 1, sizeof *cur);
  uint64_t *fin = td_calloc((size_t)no + 1, sizeof *fin), *dst = td_calloc((size_t)no + 1, sizeof *dst);
  size_t *bytes = td_calloc((size_t)no + 1, sizeof *bytes), *slice = td_calloc((size_t)ni + 1, sizeof *slice);
  int rc = in && cur && fin && dst && bytes && slice ? 0 : td_err_set(r->err, "out of memory");
  for (int i = 0; rc == 0 && i < no; i++) {
    bytes[i] = node_bytes(r, bg, bp->out_nodes[i]);
    fin[i] = addr[p->buf_of[id + 1 + i]];
  }
  for (int j = 0; rc == 0 && j < ni; j++) {
    if (j == idx) continue;
    in[j] = addr[p->buf_of[s->in[j > idx && idx >= 0 ? j - shift : j]]];
    if (j >= nc && j < nc + nx) slice[j] = node_bytes(r, bg, bg->inputs[j]);
  }
  for (int i = 0; rc == 0 && i < nc; i++) cur[i] = in[i];
  size_t fb = frame_bytes(bp, L->code);
  for (int64_t st = 0; rc == 0 && st < T; st++) {
    int64_t t = a->reverse ? T - 1 - st : st;
    steps[depth] = t;
    if (r->n_frames == r->cap_frames) {
      int cap = r->cap_frames ? 2 * r->cap_frames : 64;
      frame *nf = td_realloc(r->frames, (size_t)cap * sizeof *nf);
      if (!nf) {
        rc = td_err_set(r->err, "out of memory");
        break;
      }
      r->frames = nf;
      r->cap_frames = cap;
    }
    int f = r->n_frames++;
    r->frames[f] = (frame){bp, frame_of, t};
    if (r->fat + fb > r->fstatus) {
      rc = td_err_set(r->err, "internal error: the scan's steps outgrow their tables");
      break;
    }
    uint64_t *tbl = (uint64_t *)(void *)(r->fhost + r->fat);
    int64_t *dvv = (int64_t *)(tbl + bp->n_bufs + 1), *tv = dvv + L->code->n_dims + 1;
    td_cu_deviceptr dtbl = r->fmem + r->fat, ddv = dtbl + sizeof(uint64_t) * ((size_t)bp->n_bufs + 1),
                    dt = ddv + sizeof(int64_t) * ((size_t)L->code->n_dims + 1);
    r->fat += fb;
    *tv = t;
    for (int i = 0; i < no; i++)
      dst[i] = i >= nc ? fin[i] + (uint64_t)t * bytes[i] : (T - 1 - st) % 2 == 0 ? fin[i] : r->mem + L->alt[i];
    for (int i = 0; i < bp->n_bufs; i++) {
      const td_buffer *u = &bp->bufs[i];
      int j = u->index;
      if (u->kind == TD_BUF_INPUT)
        tbl[i] = j < nc ? cur[j] : j < nc + nx ? in[j] + (uint64_t)t * slice[j] : j == idx ? dt : in[j];
      else if (u->kind == TD_BUF_OUTPUT && out_direct(bp, j))
        tbl[i] = dst[j];
      else
        tbl[i] = r->mem + L->off[i];
    }
    for (int i = 0; i < L->code->n_dims; i++) {   /* compiled.c's eval_table, with the steps */
      const td_cuda_dimref *d = &L->code->dims[i];
      if (d->rand_node < 0) {
        dvv[i] = td_dim_eval(bg, d->dim, r->symvals);
        continue;
      }
      uint64_t sd = bg->nodes[d->rand_node].attr.stream;
      if (r->call) sd = td_hash_mix(sd, r->call);
      for (int q = 0; q <= depth; q++) sd = td_hash_mix(sd, (uint64_t)steps[q] + 1);   /* as eager mode */
      memcpy(&dvv[i], &sd, sizeof sd);
    }
    rc = record_plan(r, bp, L->code, L->fns, L->sub, tbl, dtbl, ddv, r->fmem + r->fstatus + 4 * (size_t)f, f, steps,
                     depth + 1);
    for (int i = 0; rc == 0 && i < no; i++)
      if (!out_direct(bp, i)) rc = push_copy(r, dst[i], tbl[bp->buf_of[bp->out_nodes[i]]], bytes[i]);
    for (int i = 0; i < nc; i++) cur[i] = dst[i];
  }
  for (int i = 0; rc == 0 && T == 0 && i < nc; i++)   /* no step: the carries are the initial values */
    rc = push_copy(r, fin[i], in[i], bytes[i]);
  td_free(in);
  td_free(cur);
  td_free(fin);
  td_free(dst);
  td_free(bytes);
  td_free(slice);
  return rc;
}

/* The launches of plan p, whose buffers are at addr (its table at table,
 * its runtime table at dv), in order; a scan's steps recorded in place. */
static int record_plan(run *r, const td_plan *p, const td_cuda_code *code, td_cu_function *fns, level **sub,
                       const uint64_t *addr, td_cu_deviceptr table, td_cu_deviceptr dv, td_cu_deviceptr status,
                       int frame_of, int64_t *steps, int depth) {
  for (int k = 0; k < code->n_kernels; k++) {
    int rc = sub[k] ? record_scan(r, p, k, sub[k], addr, frame_of, steps, depth)
                    : push_kernel(r, p, &code->kernels[k], fns[k], table, dv, status);
    if (rc) return rc;
  }
  return 0;
}

/* The call's launch list; with scans, their frames made and copied to a
 * second allocation (status words zeroed). */
static int record(run *r, const uint64_t *table) {
  int64_t n = 0;
  size_t bytes = 0;
  int scans = 0;
  for (int k = 0; k < r->code->n_kernels; k++) scans |= r->sub[k] != NULL;
  if (scans) {
    if (count_frames(r, r->p, r->code, &n, &bytes))
      return td_err_set(r->err, "the scans of %s take too many steps to record (over 2^31 steps)", r->p->g->name);
    r->fstatus = bytes;
    r->fbytes = bytes + 4 * (size_t)n + 8;
    if (!(r->fhost = td_calloc(r->fbytes, 1))) return td_err_set(r->err, "out of memory");
    if (ck(r->d.cu, r->d.cu->cuMemAlloc(&r->fmem, r->fbytes), "cuMemAlloc", NULL, r->err)) {
      r->fmem = 0;
      return -1;
    }
  }
  int64_t steps[SCAN_DEPTH_MAX];
  int rc = record_plan(r, r->p, r->code, r->fns, r->sub, table, r->mem + r->off_table, r->mem + r->off_dv,
                       r->mem + r->off_status, -1, steps, 0);
  if (!rc && scans)
    rc = ck(r->d.cu, r->d.cu->cuMemcpyHtoDAsync(r->fmem, r->fhost, r->fbytes, r->d.stream), "cuMemcpyHtoDAsync",
            NULL, r->err);
  return rc;
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
  for (int k = 0; !rc && k < p->n_kernels; k++)
    if (r->sub[k]) rc = layout_level(r, r->sub[k], &at);
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
 * launch_cuda.h, shared with the artifact runtime; the list: record). */
static int launch_all(run *r) {
  const td_cuda_api *cu = r->d.cu;
  for (int i = 0; i < r->n_launches; i++) {
    launch *l = &r->launches[i];
    if (!l->fn) {   /* a scan's output its body does not write in place, or its initial carries */
      if (ck(cu, cu->cuMemcpyDtoDAsync(l->dst, l->src, l->bytes, r->d.stream), "cuMemcpyDtoDAsync", NULL, r->err))
        return -1;
      continue;
    }
    void *args[3] = {&l->table, &l->dv, &l->status};
    if (ck(cu, cu->cuLaunchKernel(l->fn, l->g[0], l->g[1], l->g[2], TD_CUDA_BLOCK, 1, 1, 0, r->d.stream, args, NULL),
           "cuLaunchKernel", l->name, r->err))
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
      (r->n_frames && ck(cu, cu->cuMemcpyDtoHAsync(r->fhost + r->fstatus, r->fmem + r->fstatus, 4 * (size_t)r->n_frames,
                                                   r->d.stream), "cuMemcpyDtoHAsync", NULL, r->err)) ||
      ck(cu, cu->cuStreamSynchronize(r->d.stream), "cuStreamSynchronize", NULL, r->err))
    return -1;
  for (int f = 0; f < r->n_frames; f++) {   /* the first step that failed, as the steps ran */
    int32_t st;
    memcpy(&st, r->fhost + r->fstatus + 4 * (size_t)f, sizeof st);
    const td_graph *g = r->frames[f].p->g;
    if (st <= 0 || st > g->n_nodes) continue;
    const td_node *nd = &g->nodes[st - 1];
    if (sp) *sp = nd->span;
    td_err_set(r->err, "take: an index is out of range for axis %d of size %lld", nd->attr.axis,
               (long long)td_dim_eval(g, g->nodes[nd->in[0]].shape[nd->attr.axis], r->symvals));
    for (int q = f; q >= 0; q = r->frames[q].parent) {   /* innermost scan first, as compiled.c says it */
      char m[sizeof r->err->msg];
      snprintf(m, sizeof m, "%s", r->err->msg);
      td_err_set(r->err, "%s, at step %lld of the scan", m, (long long)r->frames[q].step);
    }
    return -1;
  }
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

/* The functions of code's kernels (a scan's: its body's, into sub[k]). */
static int get_functions(run *r, td_cu_module mod, const td_cuda_code *code, td_cu_function *fns, level **sub) {
  for (int k = 0; k < code->n_kernels; k++) {
    if (sub[k]) {
      if (get_functions(r, mod, sub[k]->code, sub[k]->fns, sub[k]->sub)) return -1;
      continue;
    }
    if (ck(r->d.cu, r->d.cu->cuModuleGetFunction(&fns[k], mod, code->kernels[k].name), "cuModuleGetFunction",
           code->kernels[k].name, r->err))
      return -1;
  }
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
  if (!rc) rc = get_functions(r, mod, r->code, r->fns, r->sub);
  if (!rc) rc = td_bind_inputs(p->g, inputs, p->g->n_inputs, r->symvals, r->err);
  if (!rc) rc = td_checks_run_graph(p->g, r->symvals, r->err, sp);
  if (!rc) rc = layout(r);
  if (!rc) {
    r->call = io->call_index;
    eval_table(r, io->call_index);
    rc = ck(r->d.cu, r->d.cu->cuMemAlloc(&r->mem, r->total), "cuMemAlloc", NULL, r->err);
  }
  if (!rc) rc = upload(r, inputs, params, table);
  if (!rc) rc = record(r, table);
  if (!rc) rc = execute(r, co);
  if (!rc) rc = download(r, sp);
  if (!rc) rc = collect(r, inputs, params, all);
  if (r->mem || r->fmem) r->d.cu->cuStreamSynchronize(r->d.stream);
  if (r->mem) r->d.cu->cuMemFree(r->mem);
  if (r->fmem) r->d.cu->cuMemFree(r->fmem);
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
  r.sub = td_calloc((size_t)plan->n_kernels + 1, sizeof *r.sub);
  r.sp = sp;
  td_tensor **all = NULL;
  int rc = r.symvals && r.dv && r.buf_off && r.buf_bytes && r.fns && r.owned && r.sub ? 0 : td_err_set(err, "out of memory");
  for (int k = 0; !rc && k < plan->n_kernels; k++)
    if (code.kernels[k].body && !(r.sub[k] = level_new(plan->kernels[k].body, code.kernels[k].body)))
      rc = td_err_set(err, "out of memory");
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
  for (int k = 0; r.sub && k < plan->n_kernels; k++) level_free(r.sub[k]);
  td_free(r.sub);
  td_free(r.fhost);
  td_free(r.frames);
  td_free(r.launches);
  td_cuda_code_free(&code);
  return rc;
}

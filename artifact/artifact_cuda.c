/* artifact_cuda.c - the runtime linked into every CUDA artifact (see
 * artifact_cuda.h; the CPU counterpart is artifact/artifact_rt.c).
 *
 * tdcu_create reads the descriptor into per-entry tables, opens the driver
 * (cuda_loader.c, dlopen of libcuda.so.1 only), GPU $TDSL_CUDA_DEVICE or 0,
 * its primary context and one non-blocking stream, loads each entry's
 * module (the embedded cubin when the GPU's architecture is the one built
 * for, else the embedded PTX, which the driver compiles), and uploads the
 * parameters once into one device allocation (which also holds the gather
 * status word).
 *
 * Device memory of calls: one allocation per model, grown (after waiting
 * for the stream) when a call needs more: the entry's arena of temporaries
 * laid out by the plan's memory plan (slots, 64-byte aligned), its outputs
 * that are not the caller's (printed values), staging space for the inputs
 * and outputs of host-pointer calls, the table of buffer addresses and the
 * runtime table (sizes, random streams), as runtime_cuda.c lays them out.
 * Everything that depends only on the sizes is recomputed when they change.
 *
 * A device-pointer call binds the caller's addresses, uploads the two small
 * tables and launches the kernels on the stream; nothing waits.  A
 * host-pointer call stages the inputs, does the same, copies the outputs
 * back and waits (tdcu_synchronize).  The status word is sticky until the
 * next synchronise, which reports an out-of-range take of any call since.
 * Printed values of a call are copied back and printed at the synchronise
 * (a later call first waits for them).  Every driver call is checked and a
 * failure names the call, the kernel of launches and the driver's message.
 *
 * Random numbers: call k of a model uses call index k, as on the CPU.
 *
 * Scans: a host loop launching the body's kernels per step ("scans: the
 * host loop" below); each step has a status word of its own (smem),
 * sticky like the model's, so the synchronise names the step of an index
 * error.
 *
 * What does not depend on the device (the descriptor's common parts,
 * weights files, the print format, the --exe command line) is
 * artifact/artifact_common.c, shared with the CPU runtime.
 */
#include "artifact/artifact_cuda.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact/artifact_common.h"
#include "runtime/mem.h"
#include "runtime/philox.h"
#include "runtime/cuda_loader.h"
#include "artifact/launch_cuda.h"

enum { BK_INPUT = TDA_BK_INPUT, BK_PARAM = TDA_BK_PARAM, BK_OUTPUT = TDA_BK_OUTPUT, BK_TEMP = TDA_BK_TEMP };

typedef tda_arg cu_arg;

/* Kernel kinds beyond launch_cuda.h's: a scan (td_kkind's TD_KERN_SCAN). */
enum { LK_SCAN = 4 };

typedef struct cu_kern {
  char *name;
  int64_t kind, work, m, n, vec, cols;
  td_cu_function fn;
  struct cu_scan *scan;      /* LK_SCAN: its body, run per step by the host loop */
} cu_kern;

typedef struct cu_entry {
  union {                    /* what every artifact reads (artifact_common.h) */
    tda_entry c;
    struct { TDA_ENTRY_FIELDS };
  };
  int n_kern;
  cu_kern *kern;
  int64_t cubin_off, cubin_bytes, ptx_off, ptx_bytes;
  td_cu_module mod;
  /* for the current sizes (and have, symvals, dv) */
  size_t *off;               /* per buffer: offset in the call memory (TEMP, unbound OUTPUT) */
  size_t *stage;             /* per argument: staging offset (host-pointer calls) */
  size_t *argbytes;          /* per argument: bytes */
  size_t off_table, off_dv, need;
  uint64_t *table;           /* host copy of the last call's buffer addresses */
  /* scans (an entry's): every step's tables, made on the host, copied once per call */
  size_t off_frames, frame_bytes;
  unsigned char *fhost;
  int n_frames;              /* steps of a call at the current sizes */
  int *fparent;              /* per step: the enclosing scan's step (-1: none) */
  int64_t *fstep;            /* per step: its index */
} cu_entry;

/* A scan kernel (artifact_cuda.h, "per scan"): how its body's inputs and
 * outputs map to the outer entry's buffers, and the body, an entry of its
 * own that evaluates its sizes with the outer entry's symbols. */
typedef struct cu_scan {
  int64_t steps;                 /* the trip count (an outer size) */
  int reverse, nc, nx, idx, ni, no;
  int64_t *in_buf, *sliced, *slice;           /* per body input: outer buffer (-1: the step), slice bytes */
  int64_t *out_buf, *out_bbuf, *out_bytes, *direct;   /* per body output */
  cu_entry body;
  size_t *alt;                   /* per carry: its second buffer's offset in the call memory */
  uint64_t *in, *cur, *fin, *dst;   /* per step (allocated once) */
  size_t *bytes, *slice_b;
} cu_scan;

typedef tda_param cu_param;

struct tdcu_model {
  const td_cuda_api *cu;
  td_cu_device device;
  td_cu_ctx ctx;
  td_cu_stream stream;
  int arch, built_arch, sms;
  int n_params, n_entries;
  cu_param *params;
  cu_entry *entries;
  td_cu_deviceptr pmem, mem;  /* parameters (+ status word), call memory */
  size_t status_off, mem_cap;
  td_cu_deviceptr smem;      /* a status word per step of a scan, sticky like the other */
  int scap, sused;           /* words of smem, words the calls since the synchronise used */
  int pending;               /* entry whose prints await the synchronise, or -1 */
  int pending_status;        /* an entry call since the last synchronise: 1 + entry */
  uint64_t calls;
  tdcu_print_fn print;
  void *print_ud;
  char label[256];           /* the entry names, for weights messages */
  char err[sizeof(td_err)];
};

static _Thread_local char create_err[sizeof(td_err)];

static int fail(tdcu_model *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(tdcu_model *m, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof m->err, fmt, ap);
  va_end(ap);
  return code;
}

/* Checks a driver call; on failure the message names the call and kernel. */
static int ck(tdcu_model *m, td_cu_result r, const char *call, const char *kernel) {
  if (!r) return 0;
  char msg[200];
  td_cuda_strerror(r, msg, sizeof msg);
  if (kernel) return fail(m, TDCU_ECUDA, "%s failed for kernel %s: %s", call, kernel, msg);
  return fail(m, TDCU_ECUDA, "%s failed: %s", call, msg);
}

static size_t up256(size_t n) { return (n + 255) & ~(size_t)255; }

/* ---- reading the descriptor ---- */

static int64_t dim_eval(const cu_entry *e, int64_t d) { return tda_dim_eval(&e->c, d); }

static int read_kernels(tda_rd *r, cu_entry *e);

static int read_scan(tda_rd *r, const cu_entry *outer, cu_scan *s) {
  const tda_scan_io io = {&s->steps,  &s->reverse, &s->nc,      &s->nx,      &s->idx,
                          &s->ni,     &s->no,      &s->in_buf,  &s->sliced,  &s->slice,
                          &s->out_buf, &s->out_bbuf, &s->out_bytes, &s->direct};
  if (tda_read_scan_io(r, &io)) return -1;
  size_t nio = (size_t)(s->ni > s->no ? s->ni : s->no);
  uint64_t **pv[4] = {&s->in, &s->cur, &s->fin, &s->dst};
  for (int i = 0; i < 4; i++)
    if (!(*pv[i] = tda_alloc_n(nio, sizeof(uint64_t)))) return -1;
  if (!(s->bytes = tda_alloc_n(nio, sizeof(size_t))) || !(s->slice_b = tda_alloc_n(nio, sizeof(size_t))) ||
      !(s->alt = tda_alloc_n(nio, sizeof(size_t))))
    return -1;
  cu_entry *b = &s->body;
  if (tda_read_body(r, &b->c, &outer->c) || read_kernels(r, b)) return -1;
  for (int o = 0; o < s->no; o++)   /* written in place: the step's destination */
    if (s->direct[o]) b->bound[s->out_bbuf[o]] = o;
  return 0;
}

/* CUDA's part of an entry: its kernels (between the common head and the
 * prints; a scan's body after the scan), and the per-buffer and
 * per-argument tables of calls. */
static int read_kernels(tda_rd *r, cu_entry *e) {
  int n_io = e->n_in + e->n_out;
  e->off = tda_alloc_n((size_t)e->n_bufs, sizeof(size_t));
  e->table = tda_alloc_n((size_t)e->n_bufs, sizeof(uint64_t));
  e->stage = tda_alloc_n((size_t)n_io, sizeof(size_t));
  e->argbytes = tda_alloc_n((size_t)n_io, sizeof(size_t));
  e->n_kern = (int)tda_word(r);
  e->kern = tda_alloc_n((size_t)e->n_kern, sizeof *e->kern);
  if (!e->off || !e->table || !e->stage || !e->argbytes || !e->kern) return -1;
  for (int k = 0; k < e->n_kern; k++) {
    cu_kern *kn = &e->kern[k];
    if (!(kn->name = tda_str(r))) return -1;
    int64_t *v[6] = {&kn->kind, &kn->work, &kn->m, &kn->n, &kn->vec, &kn->cols};
    for (int i = 0; i < 6; i++) *v[i] = tda_word(r);
    if (kn->kind == LK_SCAN && (!(kn->scan = td_calloc(1, sizeof *kn->scan)) || read_scan(r, e, kn->scan))) return -1;
  }
  return 0;
}

static int read_entry(tda_rd *r, cu_entry *e) {
  if (tda_read_entry(r, &e->c) || read_kernels(r, e) || tda_read_prints(r, &e->c)) return -1;
  e->cubin_off = tda_word(r);
  e->cubin_bytes = tda_word(r);
  e->ptx_off = tda_word(r);
  e->ptx_bytes = tda_word(r);
  return 0;
}

static void print_stdout(void *ud, const char *text) {
  (void)ud;
  fputs(text, stdout);
  fflush(stdout);
}

/* ---- the device ---- */

/* The GPU: $TDSL_CUDA_DEVICE or 0, its primary context, one stream. */
static int open_device(tdcu_model *m) {
  td_err err;
  if (!(m->cu = td_cuda_load_driver(&err))) {
    if (!strncmp(err.msg, "no CUDA driver", 14))   /* the loader's sentence speaks of --device cuda */
      return fail(m, TDCU_ECUDA, "no CUDA driver (libcuda.so.1 not found): this model runs on an NVIDIA GPU and "
                                 "needs its driver");
    return fail(m, TDCU_ECUDA, "%s", err.msg);
  }
  const td_cuda_api *cu = m->cu;
  const char *env = getenv("TDSL_CUDA_DEVICE");
  int ordinal = 0, count = 0;
  if (ck(m, cu->cuDeviceGetCount(&count), "cuDeviceGetCount", NULL)) return TDCU_ECUDA;
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end || v < 0 || v >= count)
      return fail(m, TDCU_EARG, "TDSL_CUDA_DEVICE=%s names no GPU (this machine has %d, numbered from 0)", env, count);
    ordinal = (int)v;
  }
  int major = 0, minor = 0;
  if (ck(m, cu->cuDeviceGet(&m->device, ordinal), "cuDeviceGet", NULL) ||
      ck(m, cu->cuDeviceGetAttribute(&major, TD_CU_ATTR_CC_MAJOR, m->device), "cuDeviceGetAttribute", NULL) ||
      ck(m, cu->cuDeviceGetAttribute(&minor, TD_CU_ATTR_CC_MINOR, m->device), "cuDeviceGetAttribute", NULL) ||
      ck(m, cu->cuDeviceGetAttribute(&m->sms, TD_CU_ATTR_MULTIPROCESSOR_COUNT, m->device), "cuDeviceGetAttribute",
         NULL))
    return TDCU_ECUDA;
  if (ck(m, cu->cuDevicePrimaryCtxRetain(&m->ctx, m->device), "cuDevicePrimaryCtxRetain", NULL)) {
    m->ctx = NULL;
    return TDCU_ECUDA;
  }
  m->arch = major * 10 + minor;
  if (ck(m, cu->cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent", NULL) ||
      ck(m, cu->cuStreamCreate(&m->stream, 1 /* non-blocking */), "cuStreamCreate", NULL))
    return TDCU_ECUDA;
  return 0;
}

/* The functions of e's kernels in mod (a scan's: its body's). */
static int get_functions(tdcu_model *m, cu_entry *e, td_cu_module mod) {
  for (int k = 0; k < e->n_kern; k++) {
    if (e->kern[k].scan) {
      if (get_functions(m, &e->kern[k].scan->body, mod)) return TDCU_ECUDA;
      continue;
    }
    if (ck(m, m->cu->cuModuleGetFunction(&e->kern[k].fn, mod, e->kern[k].name), "cuModuleGetFunction",
           e->kern[k].name))
      return TDCU_ECUDA;
  }
  return 0;
}

/* The cubin when the GPU is the architecture built for, else the PTX. */
static int load_module(tdcu_model *m, cu_entry *e, const unsigned char *data) {
  const td_cuda_api *cu = m->cu;
  if (m->arch == m->built_arch && e->cubin_bytes > 0 && !cu->cuModuleLoadData(&e->mod, data + e->cubin_off))
    goto functions;
  e->mod = NULL;
  td_cu_result r = cu->cuModuleLoadData(&e->mod, data + e->ptx_off);
  if (r) {
    char msg[200];
    e->mod = NULL;
    return fail(m, TDCU_ECUDA,
                "the kernels of %s do not load on this GPU (sm_%d; the artifact holds a cubin for sm_%d and its "
                "PTX): cuModuleLoadData failed: %s; rebuild with --arch sm_%d",
                e->name, m->arch, m->built_arch, td_cuda_strerror(r, msg, sizeof msg), m->arch);
  }
functions:
  return get_functions(m, e, e->mod);
}

/* Uploads the parameters from host memory (src[i] for parameter i) and
 * waits. */
static int upload_params(tdcu_model *m, const void *const *src) {
  for (int i = 0; i < m->n_params; i++)
    if (m->params[i].bytes &&
        ck(m, m->cu->cuMemcpyHtoDAsync(m->pmem + m->params[i].off, src[i], m->params[i].bytes, m->stream),
           "cuMemcpyHtoDAsync", NULL))
      return TDCU_ECUDA;
  return ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL);
}

static int alloc_params(tdcu_model *m, const unsigned char *data) {
  size_t total = 0;
  for (int i = 0; i < m->n_params; i++) {
    m->params[i].off = total;
    total += up256(m->params[i].bytes ? m->params[i].bytes : 1);
  }
  m->status_off = total;
  const void **src = tda_alloc_n((size_t)m->n_params, sizeof *src);
  void **made = tda_alloc_n((size_t)m->n_params, sizeof *made);   /* host copies of recipes' values */
  int rc = src && made ? 0 : fail(m, TDCU_ENOMEM, "out of memory");
  for (int i = 0; !rc && i < m->n_params; i++) {
    const cu_param *p = &m->params[i];
    if (p->data_off >= 0 && data) {
      src[i] = data + p->data_off;
      continue;
    }
    if (!(made[i] = td_malloc(p->bytes ? p->bytes : 1))) rc = fail(m, TDCU_ENOMEM, "out of memory");
    else if (tda_param_initial(p, data, made[i], m->err, sizeof m->err)) rc = TDCU_EARG;
    src[i] = made[i];
  }
  if (!rc) rc = ck(m, m->cu->cuMemAlloc(&m->pmem, total + 256), "cuMemAlloc", NULL);
  if (!rc) rc = ck(m, m->cu->cuMemsetD32Async(m->pmem + m->status_off, 0, 1, m->stream), "cuMemsetD32Async", NULL);
  if (!rc) rc = upload_params(m, src);   /* waits: the host copies can go */
  for (int i = 0; made && i < m->n_params; i++) td_free(made[i]);
  td_free(made);
  td_free(src);
  return rc;
}

static int setup(tdcu_model *m, const int64_t *desc, const unsigned char *data) {
  tda_rd r = {desc, 2};
  m->built_arch = (int)tda_word(&r);
  (void)tda_word(&r);   /* the signature, checked by tdcu_create */
  m->n_entries = (int)tda_word(&r);
  m->n_params = (int)tda_word(&r);
  m->params = tda_alloc_n((size_t)m->n_params, sizeof *m->params);
  m->entries = tda_alloc_n((size_t)m->n_entries, sizeof *m->entries);
  if (!m->params || !m->entries) return fail(m, TDCU_ENOMEM, "out of memory");
  for (int i = 0; i < m->n_params; i++)
    if (tda_read_param(&r, &m->params[i])) return fail(m, TDCU_ENOMEM, "out of memory");
  for (int e = 0; e < m->n_entries; e++) {
    if (read_entry(&r, &m->entries[e])) return fail(m, TDCU_ENOMEM, "out of memory");
    tda_label_add(m->label, sizeof m->label, m->entries[e].name);
  }
  int rc = open_device(m);
  for (int e = 0; !rc && e < m->n_entries; e++) rc = load_module(m, &m->entries[e], data);
  if (!rc) rc = alloc_params(m, data);
  return rc;
}

tdcu_model *tdcu_create(int abi, uint64_t sig, const int64_t *desc, const unsigned char *data) {
  create_err[0] = 0;
  if (tda_check_head(abi, sig, desc, TDCU_MAGIC, TDCU_ABI, create_err, sizeof create_err)) return NULL;
  if (tda_update_pending((const void *)tdcu_create, create_err, sizeof create_err)) return NULL;
  tdcu_model *m = td_calloc(1, sizeof *m);
  if (!m) {
    snprintf(create_err, sizeof create_err, "out of memory");
    return NULL;
  }
  m->print = print_stdout;
  m->pending = -1;
  if (setup(m, desc, data)) {
    snprintf(create_err, sizeof create_err, "%s", m->err);
    tdcu_free(m);
    return NULL;
  }
  return m;
}

static void free_kernels(cu_entry *e) {
  for (int k = 0; e->kern && k < e->n_kern; k++) {
    cu_scan *s = e->kern[k].scan;
    td_free(e->kern[k].name);
    if (!s) continue;
    free_kernels(&s->body);
    tda_free_body(&s->body.c);
    void *own[] = {s->in_buf, s->sliced, s->slice, s->out_buf, s->out_bbuf, s->out_bytes, s->direct, s->alt,
                   s->in, s->cur, s->fin, s->dst, s->bytes, s->slice_b, s};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) td_free(own[i]);
  }
  void *own[] = {e->kern, e->off, e->stage, e->argbytes, e->table, e->fhost, e->fparent, e->fstep};
  for (size_t k = 0; k < sizeof own / sizeof *own; k++) td_free(own[k]);
}

static void free_entry(const td_cuda_api *cu, cu_entry *e) {
  if (cu && e->mod) cu->cuModuleUnload(e->mod);
  tda_free_entry(&e->c);
  free_kernels(e);
}

void tdcu_free(tdcu_model *m) {
  if (!m) return;
  const td_cuda_api *cu = m->cu;
  if (cu && m->ctx) cu->cuCtxSetCurrent(m->ctx);
  if (cu && m->stream) cu->cuStreamSynchronize(m->stream);
  if (cu && m->mem) cu->cuMemFree(m->mem);
  if (cu && m->pmem) cu->cuMemFree(m->pmem);
  if (cu && m->smem) cu->cuMemFree(m->smem);
  for (int i = 0; m->entries && i < m->n_entries; i++) free_entry(cu, &m->entries[i]);
  for (int i = 0; m->params && i < m->n_params; i++) td_free(m->params[i].name);
  if (cu && m->stream) cu->cuStreamDestroy(m->stream);
  if (cu && m->ctx) cu->cuDevicePrimaryCtxRelease(m->device);
  td_free(m->params);
  td_free(m->entries);
  td_free(m);
}

const char *tdcu_error(const tdcu_model *m) { return m ? m->err : create_err; }

void tdcu_set_print(tdcu_model *m, tdcu_print_fn fn, void *ud) {
  if (!m) return;
  m->print = fn;
  m->print_ud = ud;
}

void *tdcu_stream(const tdcu_model *m) { return m ? (void *)m->stream : NULL; }

/* ---- weights ---- */

int tdcu_load_weights(tdcu_model *m, const char *path, char *err, size_t errlen) {
  if (tda_weights_args(m != NULL, path, err, errlen, m ? m->err : NULL, m ? sizeof m->err : 0)) return -1;
  td_tensor_map w;
  td_tensor_map_init(&w);
  int rc = tda_read_weights(m->params, m->n_params, m->label, path, &w, m->err, sizeof m->err);
  const void **src = rc ? NULL : tda_alloc_n((size_t)m->n_params, sizeof *src);
  if (rc == 0 && !src) rc = fail(m, -1, "out of memory");
  for (int i = 0; rc == 0 && i < m->n_params; i++) src[i] = td_tensor_map_get(&w, m->params[i].name)->data;
  if (rc == 0 && (ck(m, m->cu->cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent", NULL) || upload_params(m, src))) rc = -1;
  td_free(src);
  td_tensor_map_free(&w);
  if (rc && err && errlen) snprintf(err, errlen, "%s", m->err);
  return rc;
}

/* ---- sizes and memory ---- */

/* ---- scans: the host loop ----
 *
 * As `tdsl run --device cuda` runs them (gpu/runtime_cuda.c): the call
 * memory also holds, per scan body, its temporaries, its outputs that are
 * not written in place and its carries' second buffers, and the frames of
 * the call's steps (per step, the body's table of buffer addresses, its
 * runtime table with the random streams mixed with the steps as eager mode
 * mixes them, and the step's index value).  A call walks the steps twice:
 * first writing the frames into one host buffer, copied to the device in
 * one copy, then launching every step's kernels with its frame's tables.
 * The body reads carry i from cur[i] and writes it to the other of two
 * buffers, the scan's output and its second one, chosen so that the last
 * step writes the output; a sequence's slice and a stacked output's row
 * are read and written in place; an output the body does not write in
 * place is copied after the step; with no step the carries are the
 * initial values.  Nothing is allocated or copied per step. */

/* Scans nest at most this deep (the elaborator's limit, lang/builtins_scan.c). */
#define SCAN_DEPTH_MAX 16

/* Bytes of one frame of body b: its table, its runtime table, the step. */
static size_t frame_bytes(const cu_entry *b) { return sizeof(uint64_t) * ((size_t)b->n_bufs + 1 + (size_t)b->n_dv + 1 + 1); }

/* Lays out the scans' bodies of e from *total on (their size checks
 * first), and adds the bytes of the frames one run of e makes to *frames. */
static int prepare_bodies(tdcu_model *m, cu_entry *e, size_t *total, size_t *frames, int64_t *steps) {
  for (int k = 0; k < e->n_kern; k++) {
    cu_scan *s = e->kern[k].scan;
    if (!s) continue;
    cu_entry *b = &s->body;
    char why[sizeof m->err];
    if (tda_check_sizes(&b->c, why, sizeof why)) return fail(m, TDCU_EARG, "%s", why);
    int64_t T = dim_eval(e, s->steps);
    if (T < 0) return fail(m, TDCU_EARG, "%s: scan: the number of steps evaluates to %lld", e->name, (long long)T);
    for (int i = 0; i < b->n_dv; i++)
      if (!b->dvdesc[2 * i]) b->dv[i] = dim_eval(b, b->dvdesc[2 * i + 1]);
    size_t body = 0, *slot = td_calloc((size_t)b->n_slots + 1, sizeof *slot);
    if (!slot) return fail(m, TDCU_ENOMEM, "out of memory");
    if (tda_slots(&b->c, slot, &body)) {
      td_free(slot);
      return fail(m, TDCU_EARG, "%s: a scan's temporaries would be too large for these sizes", e->name);
    }
    for (int i = 0; i < b->n_bufs; i++)
      if (b->bkind[i] == BK_TEMP) b->off[i] = *total + slot[b->bindex[i]];
    td_free(slot);
    *total += up256(body);
    for (int i = 0; i < b->n_bufs; i++)
      if (b->bkind[i] == BK_OUTPUT && b->bound[i] < 0) {
        b->off[i] = *total;
        *total += up256((size_t)dim_eval(b, b->bbytes[i]) + 1);
      }
    for (int i = 0; i < s->no; i++) {
      s->alt[i] = *total;
      *total += up256((size_t)dim_eval(b, s->out_bytes[i]) + 1);
    }
    size_t inner = frame_bytes(b);
    int64_t n1 = 1;
    if (prepare_bodies(m, b, total, &inner, &n1)) return TDCU_EARG;
    if (T && (inner > ((size_t)1 << 40) / (size_t)T || n1 > ((int64_t)1 << 30) / T))
      return fail(m, TDCU_EARG, "%s: a scan takes too many steps (%lld) to record", e->name, (long long)T);
    *frames += (size_t)T * inner;
    *steps += T * n1;
    if (*steps > ((int64_t)1 << 30))
      return fail(m, TDCU_EARG, "%s: the scans take too many steps to record", e->name);
  }
  return 0;
}

/* Everything of entry e that depends only on its sizes. */
static int prepare(tdcu_model *m, cu_entry *e) {
  for (int i = 0; i < e->n_dv; i++)
    if (!e->dvdesc[2 * i]) e->dv[i] = dim_eval(e, e->dvdesc[2 * i + 1]);
  size_t total = 0, *slot = td_calloc((size_t)e->n_slots + 1, sizeof *slot);
  if (!slot) return fail(m, TDCU_ENOMEM, "out of memory");
  if (tda_slots(&e->c, slot, &total)) {
    td_free(slot);
    return fail(m, TDCU_EARG, "%s: temporaries would be too large for these sizes", e->name);
  }
  total = up256(total);
  for (int b = 0; b < e->n_bufs; b++)
    if (e->bkind[b] == BK_TEMP) e->off[b] = slot[e->bindex[b]];
    else if (e->bkind[b] == BK_OUTPUT && e->bound[b] < 0) {
      e->off[b] = total;
      total += up256((size_t)dim_eval(e, e->bbytes[b]) + 1);
    }
  td_free(slot);
  for (int i = 0; i < e->n_in + e->n_out; i++) {
    e->argbytes[i] = tda_arg_bytes(&e->c, i < e->n_in ? &e->in[i] : &e->out[i - e->n_in]);
    e->stage[i] = total;
    total += up256(e->argbytes[i] + 1);
  }
  e->off_table = total;
  total += up256(sizeof(uint64_t) * (size_t)(e->n_bufs + 1));
  e->off_dv = total;
  total += up256(sizeof(int64_t) * (size_t)(e->n_dv + 1));
  size_t frames = 0;
  int64_t steps = 0;
  int rc = prepare_bodies(m, e, &total, &frames, &steps);
  if (rc) return rc;
  if (steps != e->n_frames || (steps && !e->fstep)) {
    td_free(e->fparent);
    td_free(e->fstep);
    e->fparent = NULL;
    e->fstep = NULL;
    e->n_frames = 0;
    if (steps && (!(e->fparent = td_malloc((size_t)steps * sizeof *e->fparent)) ||
                  !(e->fstep = td_malloc((size_t)steps * sizeof *e->fstep))))
      return fail(m, TDCU_ENOMEM, "out of memory (a scan's steps)");
    e->n_frames = (int)steps;
  }
  e->off_frames = total;
  if (frames != e->frame_bytes || (frames && !e->fhost)) {
    td_free(e->fhost);
    e->fhost = NULL;
    e->frame_bytes = frames;
    if (frames && !(e->fhost = td_malloc(frames))) return fail(m, TDCU_ENOMEM, "out of memory (a scan's steps)");
  }
  e->need = total + up256(frames + 1);
  e->have = 1;
  return 0;
}

/* Binds the sizes of a call, recomputing what depends on them. */
static int set_sizes(tdcu_model *m, cu_entry *e, const int64_t *syms) {
  int same = e->have;
  for (int i = 0; i < e->n_args; i++)
    if (syms[i] < 0) return fail(m, TDCU_EARG, "%s: size argument %d is negative (%lld)", e->name, i, (long long)syms[i]);
  for (int i = 0; i < e->n_args; i++) {
    same = same && e->symvals[e->arg_syms[i]] == syms[i];
    e->symvals[e->arg_syms[i]] = syms[i];
  }
  td_sig_derive(e->sizes.syms, e->n_syms, e->symvals);   /* a checkpointed scan's segments (runtime/sig.h) */
  if (same) return 0;
  e->have = 0;
  char why[sizeof m->err];
  if (tda_check_sizes(&e->c, why, sizeof why)) return fail(m, TDCU_EARG, "%s", why);
  return prepare(m, e);
}

/* The call memory holds at least need bytes (growing waits for the stream). */
static int ensure_mem(tdcu_model *m, size_t need) {
  if (m->mem && need <= m->mem_cap) return 0;
  if (m->mem) {
    if (ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL)) return TDCU_ECUDA;
    m->cu->cuMemFree(m->mem);
    m->mem = 0;
    m->mem_cap = 0;
  }
  need += need / 4;   /* room for a little growth */
  if (ck(m, m->cu->cuMemAlloc(&m->mem, need), "cuMemAlloc", NULL)) {
    m->mem = 0;
    return fail(m, TDCU_ENOMEM, "out of GPU memory (%zu bytes for a call): %s", need, m->err);
  }
  m->mem_cap = need;
  return 0;
}

/* The per-step status words hold at least n (growing waits for the stream
 * and keeps the words set since the last synchronise). */
static int ensure_steps(tdcu_model *m, int n) {
  if (n <= m->scap) return 0;
  int cap = n + n / 4 + 16;
  td_cu_deviceptr s = 0;
  if (ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL)) return TDCU_ECUDA;
  if (ck(m, m->cu->cuMemAlloc(&s, 4 * (size_t)cap), "cuMemAlloc", NULL))
    return fail(m, TDCU_ENOMEM, "out of GPU memory (a scan's %d steps): %s", n, m->err);
  int rc = ck(m, m->cu->cuMemsetD32Async(s, 0, (size_t)cap, m->stream), "cuMemsetD32Async", NULL);
  if (!rc && m->sused)
    rc = ck(m, m->cu->cuMemcpyDtoDAsync(s, m->smem, 4 * (size_t)m->sused, m->stream), "cuMemcpyDtoDAsync", NULL);
  if (!rc) rc = ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL);
  if (rc) {
    m->cu->cuMemFree(s);
    return rc;
  }
  if (m->smem) m->cu->cuMemFree(m->smem);
  m->smem = s;
  m->scap = cap;
  return 0;
}

/* ---- prints (the interpreter's format: artifact_common.c) ---- */

/* Copies a printed value back from the GPU. */
static int print_fetch(void *ud, const tda_arg *a, size_t bytes, void **data, int *owned) {
  void **ctx = ud;
  tdcu_model *m = ctx[0];
  const cu_entry *e = ctx[1];
  if (!(*data = td_malloc(bytes + 1))) return fail(m, TDCU_ENOMEM, "out of memory");
  *owned = 1;
  if (bytes && (ck(m, m->cu->cuMemcpyDtoHAsync(*data, e->table[a->buf], bytes, m->stream), "cuMemcpyDtoHAsync", NULL) ||
                ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL))) {
    td_free(*data);
    *data = NULL;
    return TDCU_ECUDA;
  }
  return 0;
}

static int run_prints(tdcu_model *m, cu_entry *e) {
  void *ctx[2] = {m, e};
  return tda_run_prints(&e->c, print_fetch, ctx, m->print, m->print_ud, m->err, sizeof m->err);
}

/* ---- calls ---- */

/* The first step of a scan whose status word is set, or -1 (read after
 * the stream is done). */
static int failed_step(tdcu_model *m, int used, int *bad) {
  *bad = 0;
  if (!used) return -1;
  int32_t *w = td_malloc(4 * (size_t)used);
  if (!w) return fail(m, TDCU_ENOMEM, "out of memory"), *bad = 1, -1;
  int f = -1;
  if (ck(m, m->cu->cuMemcpyDtoHAsync(w, m->smem, 4 * (size_t)used, m->stream), "cuMemcpyDtoHAsync", NULL) ||
      ck(m, m->cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL))
    *bad = 1;
  for (int i = 0; !*bad && i < used && f < 0; i++)
    if (w[i]) f = i;
  td_free(w);
  return f;
}

int tdcu_synchronize(tdcu_model *m) {
  if (!m) return TDCU_EARG;
  const td_cuda_api *cu = m->cu;
  int32_t status = 0;
  if (ck(m, cu->cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent", NULL) ||
      ck(m, cu->cuMemcpyDtoHAsync(&status, m->pmem + m->status_off, sizeof status, m->stream), "cuMemcpyDtoHAsync",
         NULL) ||
      ck(m, cu->cuStreamSynchronize(m->stream), "cuStreamSynchronize", NULL))
    return TDCU_ECUDA;
  int last = m->pending_status - 1, pend = m->pending, used = m->sused, bad;
  int f = failed_step(m, used, &bad);
  if (bad) return TDCU_ECUDA;
  m->pending = -1;
  m->pending_status = 0;
  m->sused = 0;
  if (f >= 0 && ck(m, cu->cuMemsetD32Async(m->smem, 0, (size_t)used, m->stream), "cuMemsetD32Async", NULL))
    return TDCU_ECUDA;
  if (status) {
    if (ck(m, cu->cuMemsetD32Async(m->pmem + m->status_off, 0, 1, m->stream), "cuMemsetD32Async", NULL))
      return TDCU_ECUDA;
    return fail(m, TDCU_EINDEX, "%s: take: an index is out of range", last >= 0 ? m->entries[last].name : "?");
  }
  if (f >= 0) {   /* in a scan's step: named as the CPU runtime names it (steps of the last call) */
    const cu_entry *e = last >= 0 ? &m->entries[last] : NULL;
    fail(m, TDCU_EINDEX, "%s: take: an index is out of range", e ? e->name : "?");
    for (int q = f; e && q >= 0 && q < e->n_frames; q = e->fparent[q]) {
      char msg[sizeof m->err];
      snprintf(msg, sizeof msg, "%s", m->err);
      fail(m, TDCU_EINDEX, "%s, at step %lld of the scan", msg, (long long)e->fstep[q]);
    }
    return TDCU_EINDEX;
  }
  return pend >= 0 ? run_prints(m, &m->entries[pend]) : 0;
}

/* Launches kernel k of e with the given tables. */
static int launch_kernel(tdcu_model *m, const cu_entry *e, int k, td_cu_deviceptr table, td_cu_deviceptr dv,
                         td_cu_deviceptr status) {
  void *params[3] = {&table, &dv, &status};
  const cu_kern *kn = &e->kern[k];
  int64_t work = dim_eval(e, kn->work), mm = 0, nn = 0;
  if (kn->kind == TD_CUDA_LK_MATMUL) {
    mm = dim_eval(e, kn->m);
    nn = dim_eval(e, kn->n);
  }
  unsigned g[3];
  int go = td_cuda_grid(kn->kind == TD_CUDA_LK_MATMUL, kn->kind == TD_CUDA_LK_REDUCE, (int)kn->vec, (int)kn->cols,
                        work, mm, nn, m->sms, g);
  if (go < 0) return fail(m, TDCU_EARG, "kernel %s: %lld rows are more than one launch covers", kn->name, (long long)mm);
  if (go && ck(m, m->cu->cuLaunchKernel(kn->fn, g[0], g[1], g[2], TD_CUDA_LAUNCH_BLOCK, 1, 1, 0, m->stream, params,
                                        NULL), "cuLaunchKernel", kn->name))
    return TDCU_ECUDA;
  return 0;
}

/* A walk over a call's steps: the first pass (launching 0) writes the
 * frames, the second launches, each frame at the same place. */
typedef struct walk {
  tdcu_model *m;
  const cu_entry *top;
  int launching;
  size_t at;                     /* the next frame's offset */
  int nf, frame;                 /* the next frame's number; the current one (-1: the entry's own kernels) */
  uint64_t call;
  int64_t steps[SCAN_DEPTH_MAX];
  int depth;
} walk;

static int walk_entry(walk *w, cu_entry *e, const uint64_t *addr, td_cu_deviceptr table, td_cu_deviceptr dv);

/* Frame f's status word: the model's own outside scans, else the step's. */
static td_cu_deviceptr status_of(const tdcu_model *m, int f) {
  return f < 0 ? m->pmem + m->status_off : m->smem + 4 * (size_t)f;
}

static int copy_dd(tdcu_model *m, uint64_t dst, uint64_t src, size_t bytes) {
  if (!bytes || dst == src) return 0;
  return ck(m, m->cu->cuMemcpyDtoDAsync(dst, src, bytes, m->stream), "cuMemcpyDtoDAsync", NULL);
}

/* Scan kernel s of e, whose buffers are at addr. */
static int walk_scan(walk *w, cu_entry *e, cu_scan *s, const uint64_t *addr) {
  tdcu_model *m = w->m;
  cu_entry *b = &s->body;
  int64_t T = dim_eval(e, s->steps);
  if (w->depth >= SCAN_DEPTH_MAX) return fail(m, TDCU_EARG, "%s: scans nest more than %d deep", e->name, SCAN_DEPTH_MAX);
  int nc = s->nc, nx = s->nx, idx = s->idx;
  for (int i = 0; i < s->no; i++) {
    s->bytes[i] = (size_t)dim_eval(b, s->out_bytes[i]);
    s->fin[i] = addr[s->out_buf[i]];
  }
  for (int j = 0; j < s->ni; j++) {
    s->in[j] = j == idx ? 0 : addr[s->in_buf[j]];
    s->slice_b[j] = s->sliced[j] ? (size_t)dim_eval(b, s->slice[j]) : 0;
  }
  for (int i = 0; i < nc; i++) s->cur[i] = s->in[i];
  size_t fb = frame_bytes(b);
  int rc = 0;
  for (int64_t st = 0; rc == 0 && st < T; st++) {
    int64_t t = s->reverse ? T - 1 - st : st;
    w->steps[w->depth] = t;
    uint64_t *tbl = (uint64_t *)(void *)(w->top->fhost + w->at);
    int64_t *dvv = (int64_t *)(tbl + b->n_bufs + 1), *tv = dvv + b->n_dv + 1;
    td_cu_deviceptr dtbl = m->mem + w->top->off_frames + w->at, ddv = dtbl + sizeof(uint64_t) * ((size_t)b->n_bufs + 1),
                    dt = ddv + sizeof(int64_t) * ((size_t)b->n_dv + 1);
    w->at += fb;
    int f = w->nf++, parent = w->frame;
    for (int i = 0; i < s->no; i++)
      s->dst[i] = i >= nc ? s->fin[i] + (uint64_t)t * s->bytes[i] : (T - 1 - st) % 2 == 0 ? s->fin[i] : m->mem + s->alt[i];
    if (!w->launching) {
      w->top->fparent[f] = parent;
      w->top->fstep[f] = t;
      *tv = t;
      for (int i = 0; i < b->n_bufs; i++) {
        int j = (int)b->bindex[i];
        if (b->bkind[i] == BK_INPUT)
          tbl[i] = j < nc ? s->cur[j] : j < nc + nx ? s->in[j] + (uint64_t)t * s->slice_b[j] : j == idx ? dt : s->in[j];
        else if (b->bkind[i] == BK_OUTPUT && b->bound[i] >= 0)
          tbl[i] = s->dst[b->bound[i]];
        else
          tbl[i] = m->mem + b->off[i];
      }
      for (int i = 0; i < b->n_dv; i++) {   /* sizes (prepare), and streams mixed with the steps */
        uint64_t sd = (uint64_t)b->dvdesc[2 * i + 1];
        if (!b->dvdesc[2 * i]) {
          dvv[i] = b->dv[i];
          continue;
        }
        if (w->call) sd = td_hash_mix(sd, w->call);
        for (int q = 0; q <= w->depth; q++) sd = td_hash_mix(sd, (uint64_t)w->steps[q] + 1);
        dvv[i] = (int64_t)sd;
      }
    }
    w->depth++;
    w->frame = f;
    rc = walk_entry(w, b, tbl, dtbl, ddv);
    w->frame = parent;
    w->depth--;
    for (int i = 0; rc == 0 && w->launching && i < s->no; i++)
      if (!s->direct[i]) rc = copy_dd(m, s->dst[i], tbl[s->out_bbuf[i]], s->bytes[i]);
    for (int i = 0; i < nc; i++) s->cur[i] = s->dst[i];
  }
  for (int i = 0; rc == 0 && w->launching && T == 0 && i < nc; i++)   /* no step: the initial carries */
    rc = copy_dd(m, s->fin[i], s->in[i], s->bytes[i]);
  return rc;
}

/* e's kernels in order (its scans' steps in place): launched, or, in the
 * first pass, only their frames written. */
static int walk_entry(walk *w, cu_entry *e, const uint64_t *addr, td_cu_deviceptr table, td_cu_deviceptr dv) {
  for (int k = 0; k < e->n_kern; k++) {
    int rc = e->kern[k].scan ? walk_scan(w, e, e->kern[k].scan, addr)
           : w->launching ? launch_kernel(w->m, e, k, table, dv, status_of(w->m, w->frame)) : 0;
    if (rc) return rc;
  }
  return 0;
}

/* Launches the kernels of e in order on the stream; with scans, their
 * frames first, in one copy from pageable memory (staged by the driver
 * before it returns, so the next call may write the frames again). */
static int launch(tdcu_model *m, cu_entry *e, uint64_t call) {
  walk w;
  memset(&w, 0, sizeof w);
  w.m = m;
  w.top = e;
  w.call = call;
  w.frame = -1;
  td_cu_deviceptr table = m->mem + e->off_table, dv = m->mem + e->off_dv;
  if (e->frame_bytes) {
    int rc = walk_entry(&w, e, e->table, table, dv);
    if (rc) return rc;
    if (ck(m, m->cu->cuMemcpyHtoDAsync(m->mem + e->off_frames, e->fhost, e->frame_bytes, m->stream),
           "cuMemcpyHtoDAsync", NULL))
      return TDCU_ECUDA;
  }
  w.launching = 1;
  w.at = 0;
  w.nf = 0;
  if (e->n_frames > m->sused) m->sused = e->n_frames;
  return walk_entry(&w, e, e->table, table, dv);
}

/* Enqueues entry e on device addresses dev[] (inputs then outputs).  The
 * two tables are copied from pageable host memory, which the driver stages
 * (or waits for) before cuMemcpyHtoDAsync returns, so the next call may
 * overwrite them while this one is still queued; pinned memory would not
 * allow that. */
static int enqueue(tdcu_model *m, int ei, const td_cu_deviceptr *dev) {
  cu_entry *e = &m->entries[ei];
  const td_cuda_api *cu = m->cu;
  for (int b = 0; b < e->n_bufs; b++) {
    if (e->bkind[b] == BK_INPUT) e->table[b] = dev[e->bindex[b]];
    else if (e->bkind[b] == BK_PARAM) e->table[b] = m->pmem + m->params[e->pslot[e->bindex[b]]].off;
    else if (e->bkind[b] == BK_OUTPUT && e->bound[b] >= 0) e->table[b] = dev[e->n_in + e->bound[b]];
    else e->table[b] = m->mem + e->off[b];
  }
  uint64_t call = m->calls++;
  for (int i = 0; i < e->n_dv; i++)
    if (e->dvdesc[2 * i]) {
      uint64_t s = (uint64_t)e->dvdesc[2 * i + 1];
      e->dv[i] = (int64_t)(call ? td_hash_mix(s, call) : s);
    }
  if (ck(m, cu->cuMemcpyHtoDAsync(m->mem + e->off_table, e->table, sizeof *e->table * (size_t)(e->n_bufs + 1),
                                  m->stream), "cuMemcpyHtoDAsync", NULL) ||
      ck(m, cu->cuMemcpyHtoDAsync(m->mem + e->off_dv, e->dv, sizeof *e->dv * (size_t)(e->n_dv + 1), m->stream),
         "cuMemcpyHtoDAsync", NULL))
    return TDCU_ECUDA;
  m->pending_status = ei + 1;
  int rc = launch(m, e, call);
  for (int o = 0; rc == 0 && o < e->n_out; o++) {   /* outputs that are another buffer (an input, a parameter) */
    int b = e->out[o].buf;
    if (e->bound[b] != o && e->argbytes[e->n_in + o] &&
        ck(m, cu->cuMemcpyDtoDAsync(dev[e->n_in + o], e->table[b], e->argbytes[e->n_in + o], m->stream),
           "cuMemcpyDtoDAsync", NULL))
      rc = TDCU_ECUDA;
  }
  if (rc == 0 && e->n_prints) m->pending = ei;
  return rc;
}

/* Checks a call's arguments and prepares its sizes and memory. */
static int begin(tdcu_model *m, int ei, const int64_t *syms, void *const *args) {
  if (!m) return TDCU_EARG;
  if (ei < 0 || ei >= m->n_entries) return fail(m, TDCU_EENTRY, "no entry point %d", ei);
  cu_entry *e = &m->entries[ei];
  for (int i = 0; i < e->n_in + e->n_out; i++)
    if (!args[i]) return fail(m, TDCU_EARG, "%s: argument %d is NULL", e->name, i);
  if (ck(m, m->cu->cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent", NULL)) return TDCU_ECUDA;
  int rc = m->pending >= 0 ? tdcu_synchronize(m) : 0;   /* an earlier call's prints first */
  if (!rc) rc = set_sizes(m, e, syms);
  if (!rc) rc = ensure_mem(m, e->need);
  if (!rc) rc = ensure_steps(m, e->n_frames);
  return rc;
}

int tdcu_call_device(tdcu_model *m, int ei, const int64_t *syms, void *const *args) {
  int rc = begin(m, ei, syms, args);
  if (rc) return rc;
  cu_entry *e = &m->entries[ei];
  td_cu_deviceptr *dev = tda_alloc_n((size_t)(e->n_in + e->n_out), sizeof *dev);
  if (!dev) return fail(m, TDCU_ENOMEM, "out of memory");
  for (int i = 0; i < e->n_in + e->n_out; i++) dev[i] = (td_cu_deviceptr)(uintptr_t)args[i];
  rc = enqueue(m, ei, dev);
  td_free(dev);
  return rc;
}

int tdcu_call(tdcu_model *m, int ei, const int64_t *syms, void *const *args) {
  int rc = begin(m, ei, syms, args);
  if (rc) return rc;
  cu_entry *e = &m->entries[ei];
  const td_cuda_api *cu = m->cu;
  td_cu_deviceptr *dev = tda_alloc_n((size_t)(e->n_in + e->n_out), sizeof *dev);
  if (!dev) return fail(m, TDCU_ENOMEM, "out of memory");
  for (int i = 0; i < e->n_in + e->n_out; i++) dev[i] = m->mem + e->stage[i];
  for (int i = 0; i < e->n_in && !rc; i++)
    if (e->argbytes[i])
      rc = ck(m, cu->cuMemcpyHtoDAsync(dev[i], args[i], e->argbytes[i], m->stream), "cuMemcpyHtoDAsync", NULL);
  if (!rc) rc = enqueue(m, ei, dev);
  for (int o = e->n_in; o < e->n_in + e->n_out && !rc; o++)
    if (e->argbytes[o])
      rc = ck(m, cu->cuMemcpyDtoHAsync(args[o], dev[o], e->argbytes[o], m->stream), "cuMemcpyDtoHAsync", NULL);
  td_free(dev);
  if (rc) {   /* leave nothing in flight that reads the caller's memory */
    cu->cuStreamSynchronize(m->stream);
    return rc;
  }
  return tdcu_synchronize(m);
}

/* ---- the --exe command line (artifact_common.c) ---- */

static tda_entry *exe_entry(void *m, int ei) { return &((tdcu_model *)m)->entries[ei].c; }
static int exe_load(void *m, const char *path) { return tdcu_load_weights(m, path, NULL, 0); }
static int exe_call(void *m, int ei, const int64_t *syms, void *const *args) { return tdcu_call(m, ei, syms, args); }
static void exe_quiet(void *m) { tdcu_set_print(m, NULL, NULL); }
static const char *exe_error(void *m) { return tdcu_error(m); }

int tdcu_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data) {
  tda_exe_opts o;
  int rc = tda_exe_parse(argc, argv, &o);
  if (rc) {
    tda_exe_opts_free(&o);
    return rc;
  }
  tdcu_model *m = tdcu_create(TDCU_ABI, (uint64_t)desc[3], desc, data);
  if (!m) {
    fprintf(stderr, "%s: error: %s\n", argv[0], tdcu_error(NULL));
    tda_exe_opts_free(&o);
    return 1;
  }
  tda_exe_model x = {m, m->n_entries, exe_entry, exe_load, exe_call, exe_quiet, exe_error, NULL};
  rc = tda_exe_run(&x, &o, argv[0]);
  tdcu_free(m);
  tda_exe_opts_free(&o);
  return rc;
}

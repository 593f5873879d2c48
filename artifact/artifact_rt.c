/* artifact_rt.c - the runtime linked into every built artifact.
 *
 * It reads the descriptor (artifact.h) once, at tdrt_create, into per-entry
 * tables, makes the initial parameters (copied, or from their recipes),
 * and runs entry calls: the symbolic sizes come from the caller; everything derived from them (the runtime
 * table of sizes and random streams, the arena layout, scratch sizes and
 * how each kernel splits across threads) is computed only when they differ
 * from the previous call's, so a call with unchanged sizes is: bind the
 * caller's pointers, call the kernels, check their status.  Kernels whose
 * work is small run on the calling thread; large ones are split over the
 * thread pool (runtime/pool.h) as td_compiled_run does.  Temporaries live in an
 * arena that is kept and grown across calls.  One call at a time per model.
 * After the kernels, the entry's print() calls are formatted as the
 * interpreter formats them (interp.c's run_print) and handed to the
 * model's print function (stdout by default).  What does not depend on
 * the CPU (the descriptor's common parts, weights files, the print format,
 * the --exe command line) is artifact_common.c, shared with the CUDA
 * artifact runtime.
 *
 * Random numbers: call k of a model (k = 0, 1, ...) uses call index k, so
 * the first call draws what `tdsl run` draws.
 *
 * tdrt_exe_main is the command line of --exe artifacts (see docs/compiler.md),
 * artifact_common.c's tda_exe_run on this model.
 */
#include "artifact/artifact.h"
#include "artifact/artifact_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/philox.h"
#include "runtime/scalar.h"
#include "runtime/tensor.h"
#include "runtime/pool.h"
#include "artifact/prepack.h"

enum { BK_INPUT = TDA_BK_INPUT, BK_PARAM = TDA_BK_PARAM, BK_OUTPUT = TDA_BK_OUTPUT, BK_TEMP = TDA_BK_TEMP,
       BK_UPDATE = TDA_BK_UPDATE };

typedef void (*kfn)(void **bufs, const int64_t *dv, void *scratch, int32_t *status, void *const *rt, int64_t lo,
                    int64_t hi);

typedef tda_arg rt_arg;

typedef struct rt_kern {
  int64_t parallel, extent, br, bw, fl, scratch, mm_n, mm_k, cols;
  tdc_prepack_desc pack;         /* a prepacked B when pack.nr > 0 */
  void *packed;                  /* its packed copy, made from ... */
  uint64_t packed_gen;           /* ... the model's weights of this generation */
  int64_t n_ranges, chunk, ext;  /* for the current sizes */
  struct rt_scan *scan;          /* a scan kernel: its body, run per step (run_scan) */
} rt_kern;

typedef struct rt_entry {
  union {                    /* what every artifact reads (artifact_common.h) */
    tda_entry c;
    struct { TDA_ENTRY_FIELDS };
  };
  int n_kern;
  rt_kern *kern;
  kfn *fns;
  tdrt_call_fn call_fn;      /* the generated entry function (fast path) */
  /* state for the current sizes (and have, symvals, dv) */
  void **bufs;
  int64_t *off;              /* per buffer: arena offset (TEMP and unbound OUTPUT) */
  void *arena, *scratch;
  size_t arena_cap, scratch_cap, scratch_each;
  /* a training step's updates (n_updates, update_param): the buffer of
   * each value, where each is copied from (apply_updates), and the copies
   * of values that are parameters overwritten by another update */
  int64_t *upd_buf;
  void **upd_src;
  void *stage;
  size_t stage_cap;
} rt_entry;

/* A scan kernel (artifact.h, "per scan"): how its body's inputs and
 * outputs map to the outer entry's buffers, and the body, an entry of
 * its own that evaluates its sizes with the outer entry's symbols. */
typedef struct rt_scan {
  int64_t steps;                 /* the trip count (an outer size) */
  int reverse, nc, nx, idx, ni, no;
  int64_t *in_buf, *sliced, *slice;           /* per body input: outer buffer (-1: the step), slice bytes */
  int64_t *out_buf, *out_bbuf, *out_bytes, *direct;   /* per body output */
  rt_entry body;
  void *alt;                     /* the carries' second buffers */
  size_t alt_cap;
  void **in, **cur, **fin, **dst, **alts;   /* per step (allocated once) */
  size_t *bytes, *slice_b;
  /* prints: the scan's go after the first pos prints of its entry (scans
   * at one place in the order of their nodes); lines holds what its steps
   * printed in this call, handed on after the enclosing step or call */
  int pos, node, oom;
  char **lines;
  size_t n_lines, cap_lines;
} rt_scan;

typedef tda_param rt_param;

struct tdrt_model {
  tdrt_fast *fast;           /* first: per entry, read by the generated code */
  int n_params, n_entries;
  rt_param *params;
  rt_entry *entries;
  uint64_t calls;
  uint64_t weights_gen;      /* from 1; load_weights makes every packed copy stale */
  tdrt_print_fn print;
  void *print_ud;
  char label[256];           /* the entry names, for weights messages */
  char *description;         /* tdrt_describe's JSON, made on first use */
  char err[sizeof(td_err)];
};

static void *const rt_table[4] = {(void *)td_rand_uniform, (void *)td_rand_normal, (void *)td_pow_i32,
                                  (void *)td_pow_i64};

static int fail(tdrt_model *m, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof m->err, fmt, ap);
  va_end(ap);
  return code;
}

/* ---- reading the descriptor ---- */

static int64_t dim_eval(const rt_entry *e, int64_t d) { return tda_dim_eval(&e->c, d); }

static int read_kernels(tda_rd *r, rt_entry *e);

static int read_scan(tda_rd *r, const rt_entry *outer, rt_scan *s) {
  const tda_scan_io io = {&s->steps,  &s->reverse, &s->nc,      &s->nx,      &s->idx,
                          &s->ni,     &s->no,      &s->in_buf,  &s->sliced,  &s->slice,
                          &s->out_buf, &s->out_bbuf, &s->out_bytes, &s->direct};
  if (tda_read_scan_io(r, &io)) return -1;
  size_t nio = (size_t)(s->ni > s->no ? s->ni : s->no);
  void ***pv[5] = {&s->in, &s->cur, &s->fin, &s->dst, &s->alts};
  for (int i = 0; i < 5; i++)
    if (!(*pv[i] = tda_alloc_n(nio, sizeof(void *)))) return -1;
  if (!(s->bytes = tda_alloc_n(nio, sizeof(size_t))) || !(s->slice_b = tda_alloc_n(nio, sizeof(size_t)))) return -1;
  rt_entry *b = &s->body;
  if (tda_read_body(r, &b->c, &outer->c) || read_kernels(r, b)) return -1;
  s->pos = (int)tda_word(r);
  s->node = (int)tda_word(r);
  if (tda_read_prints(r, &b->c)) return -1;
  for (int o = 0; o < s->no; o++)   /* bound to the step's destination by run_scan */
    if (s->direct[o]) b->bound[s->out_bbuf[o]] = o;
  return 0;
}

/* The CPU's part of an entry: its kernels, between the common head and
 * the prints. */
static int read_kernels(tda_rd *r, rt_entry *e) {
  e->n_kern = (int)tda_word(r);
  e->off = tda_alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->kern = tda_alloc_n((size_t)e->n_kern, sizeof *e->kern);
  e->fns = tda_alloc_n((size_t)e->n_kern, sizeof *e->fns);
  /* one pointer per buffer, and one more per kernel: its prepacked B */
  e->bufs = tda_alloc_n((size_t)e->n_bufs + (size_t)e->n_kern, sizeof(void *));
  if (!e->off || !e->kern || !e->fns || !e->bufs) return -1;
  for (int k = 0; k < e->n_kern; k++) {
    rt_kern *kn = &e->kern[k];
    int64_t *v[9] = {&kn->parallel, &kn->extent, &kn->br, &kn->bw, &kn->fl, &kn->scratch, &kn->mm_n, &kn->mm_k,
                     &kn->cols};
    for (int i = 0; i < 9; i++) *v[i] = tda_word(r);
    int64_t *pk = &kn->pack.buf;   /* buf, elsize, nr, n, k, off, sbk, sbn */
    for (int i = 0; i < 8; i++) pk[i] = tda_word(r);
    if (tda_word(r) && (!(kn->scan = td_calloc(1, sizeof *kn->scan)) || read_scan(r, e, kn->scan))) return -1;
  }
  return 0;
}

/* Kernels of e and of its scans' bodies: how many addresses the kernel
 * table writes for them (entry: one more, the generated function). */
static size_t n_code(const rt_entry *e) {
  size_t n = (size_t)e->n_kern;
  for (int k = 0; k < e->n_kern; k++)
    if (e->kern[k].scan) n += n_code(&e->kern[k].scan->body);
  return n;
}

/* e's kernels from the table's addresses at *at on, then its bodies' (in
 * build.c's import_kernels order). */
static void take_code(rt_entry *e, void **code, size_t *at, int entry) {
  memcpy(e->fns, code + *at, (size_t)e->n_kern * sizeof *e->fns);
  *at += (size_t)e->n_kern;
  if (entry) memcpy(&e->call_fn, &code[(*at)++], sizeof e->call_fn);
  for (int k = 0; k < e->n_kern; k++)
    if (e->kern[k].scan) take_code(&e->kern[k].scan->body, code, at, 0);
}

static void drop_lines(rt_scan *s) {
  for (size_t i = 0; i < s->n_lines; i++) td_free(s->lines[i]);
  s->n_lines = 0;
  s->oom = 0;
}

static void free_kernels(rt_entry *e) {
  for (int k = 0; e->kern && k < e->n_kern; k++) {
    rt_scan *s = e->kern[k].scan;
    td_aligned_free(e->kern[k].packed);
    if (!s) continue;
    drop_lines(s);
    td_free(s->lines);
    free_kernels(&s->body);
    tda_free_body(&s->body.c);
    void *own[] = {s->in_buf, s->sliced, s->slice, s->out_buf, s->out_bbuf, s->out_bytes, s->direct,
                   s->in, s->cur, s->fin, s->dst, s->alts, s->bytes, s->slice_b, s};
    td_aligned_free(s->alt);
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) td_free(own[i]);
  }
  void *own[] = {e->kern, e->fns, e->bufs, e->off};
  for (size_t k = 0; k < sizeof own / sizeof *own; k++) td_free(own[k]);
  td_aligned_free(e->arena);
  td_aligned_free(e->scratch);
}

/* The sizes changed: every body lays itself out again when it next runs. */
static void forget_sizes(rt_entry *e) {
  e->have = 0;
  for (int k = 0; k < e->n_kern; k++)
    if (e->kern[k].scan) forget_sizes(&e->kern[k].scan->body);
}

/* A training step's updates (artifact.h, "per update"), after the prints. */
static int read_updates(tda_rd *r, rt_entry *e) {
  e->n_updates = (int)tda_word(r);
  e->update_param = tda_alloc_n((size_t)e->n_updates, sizeof *e->update_param);
  e->upd_buf = tda_alloc_n((size_t)e->n_updates, sizeof *e->upd_buf);
  e->upd_src = tda_alloc_n((size_t)e->n_updates, sizeof *e->upd_src);
  if (!e->update_param || !e->upd_buf || !e->upd_src) return -1;
  for (int u = 0; u < e->n_updates; u++) {
    e->update_param[u] = (int)tda_word(r);
    e->upd_buf[u] = tda_word(r);
  }
  return 0;
}

static int read_entry(tda_rd *r, rt_entry *e) {
  return tda_read_entry(r, &e->c) || read_kernels(r, e) || tda_read_prints(r, &e->c) || read_updates(r, e) ? -1 : 0;
}

/* A parameter with its initial values (copied from data, or made from its
 * recipe).  0, or -1 with the reason in err. */
static int read_param(tda_rd *r, rt_param *p, const unsigned char *data, char *err, size_t errlen) {
  if (tda_read_param(r, p) || !(p->data = td_aligned_alloc(64, p->bytes ? p->bytes : 64)))
    return snprintf(err, errlen, "out of memory"), -1;
  return tda_param_initial(p, data, p->data, err, errlen);
}

static void print_stdout(void *ud, const char *text) {
  (void)ud;
  fputs(text, stdout);
  fflush(stdout);
}

/* Does this CPU run code compiled for isa level (descriptor word 2)? */
static int cpu_has(int64_t isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (isa >= 2 && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
    return 0;
  if (isa >= 1 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
  return isa < 0 || __builtin_cpu_supports("sse4.2");
#else
  return isa < 0;
#endif
}

/* Why the last tdrt_create of this thread returned NULL (tdrt_error(NULL)). */
static _Thread_local char create_err[4600];

tdrt_model *tdrt_create(int abi, uint64_t sig, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels) {
  create_err[0] = 0;
  if (tda_check_head(abi, sig, desc, TDRT_MAGIC, TDRT_ABI, create_err, sizeof create_err)) return NULL;
  if (!cpu_has(desc[2])) {
    snprintf(create_err, sizeof create_err, "this CPU lacks the instructions it was built for; rebuild with --march");
    return NULL;
  }
  if (tda_update_pending((const void *)tdrt_create, create_err, sizeof create_err)) return NULL;
  tdrt_model *m = td_calloc(1, sizeof *m);
  if (!m) {
    snprintf(create_err, sizeof create_err, "out of memory");
    return NULL;
  }
  m->print = print_stdout;
  m->weights_gen = 1;
  tda_rd r = {desc, 4};
  m->n_entries = (int)tda_word(&r);
  m->n_params = (int)tda_word(&r);
  m->params = tda_alloc_n((size_t)m->n_params, sizeof *m->params);
  m->entries = tda_alloc_n((size_t)m->n_entries, sizeof *m->entries);
  m->fast = tda_alloc_n((size_t)m->n_entries, sizeof *m->fast);
  int ok = m->params && m->entries && m->fast;
  if (!ok) snprintf(create_err, sizeof create_err, "out of memory");
  for (int i = 0; ok && i < m->n_params; i++)
    ok = read_param(&r, &m->params[i], data, create_err, sizeof create_err) == 0;
  for (int e = 0; ok && e < m->n_entries; e++) {
    ok = read_entry(&r, &m->entries[e]) == 0;
    if (!ok) snprintf(create_err, sizeof create_err, "out of memory");
    if (ok) {
      rt_entry *en = &m->entries[e];
      tda_label_add(m->label, sizeof m->label, en->name);
      size_t n = n_code(en) + 1, at = 0;
      void **code = tda_alloc_n(n, sizeof *code);
      if ((ok = code != NULL)) {
        kernels(e, code);
        take_code(en, code, &at, 1);
      } else {
        snprintf(create_err, sizeof create_err, "out of memory");
      }
      td_free(code);
    }
  }
  if (!ok) {
    tdrt_free(m);
    return NULL;
  }
  return m;
}

void tdrt_free(tdrt_model *m) {
  if (!m) return;
  for (int i = 0; m->params && i < m->n_params; i++) {
    td_free(m->params[i].name);
    td_aligned_free(m->params[i].data);
  }
  for (int i = 0; m->entries && i < m->n_entries; i++) {
    rt_entry *e = &m->entries[i];
    tda_free_entry(&e->c);
    free_kernels(e);
    td_free(e->upd_buf);
    td_free(e->upd_src);
    td_aligned_free(e->stage);
  }
  td_free(m->params);
  td_free(m->entries);
  td_free(m->fast);
  td_free(m->description);
  td_free(m);
}

const char *tdrt_error(const tdrt_model *m) { return m ? m->err : create_err[0] ? create_err : "no model"; }

void tdrt_set_print(tdrt_model *m, tdrt_print_fn fn, void *ud) {
  if (!m) return;
  m->print = fn;
  m->print_ud = ud;
}

/* ---- weights ---- */

/* After the parameters' values changed: the prepacked copies are made
 * again on the next call, which takes the full path (the fast one does
 * not pack). */
static void weights_changed(tdrt_model *m) {
  m->weights_gen++;
  for (int e = 0; e < m->n_entries; e++) m->fast[e].ok = 0;
}

int tdrt_load_weights(tdrt_model *m, const char *path, char *err, size_t errlen) {
  if (tda_weights_args(m != NULL, path, err, errlen, m ? m->err : NULL, m ? sizeof m->err : 0)) return -1;
  td_tensor_map w;
  td_tensor_map_init(&w);
  int rc = tda_read_weights(m->params, m->n_params, m->label, path, &w, m->err, sizeof m->err);
  for (int i = 0; rc == 0 && i < m->n_params; i++)
    memcpy(m->params[i].data, td_tensor_map_get(&w, m->params[i].name)->data, m->params[i].bytes);
  if (rc == 0) weights_changed(m);
  td_tensor_map_free(&w);
  if (rc && err && errlen) snprintf(err, errlen, "%s", m->err);
  return rc;
}

/* Parameter i, or NULL after a message when there is none or bytes is
 * not its size. */
static rt_param *param_of(tdrt_model *m, int i, size_t bytes) {
  if (i < 0 || i >= m->n_params) {
    fail(m, TDRT_EARG, "no parameter %d (the model has %d)", i, m->n_params);
    return NULL;
  }
  if (bytes != m->params[i].bytes) {
    fail(m, TDRT_EARG, "parameter '%s' has %zu bytes, not %zu", m->params[i].name, m->params[i].bytes, bytes);
    return NULL;
  }
  return &m->params[i];
}

int tdrt_get_param(tdrt_model *m, int i, void *dst, size_t bytes) {
  if (!m) return TDRT_EARG;
  rt_param *p = param_of(m, i, bytes);
  if (!p) return TDRT_EARG;
  memcpy(dst, p->data, bytes);
  return 0;
}

void *tdrt_param_data(tdrt_model *m, int i) {
  if (!m) return NULL;
  if (i < 0 || i >= m->n_params) {
    fail(m, TDRT_EARG, "no parameter %d (the model has %d)", i, m->n_params);
    return NULL;
  }
  return m->params[i].data;
}

int tdrt_set_param(tdrt_model *m, int i, const void *src, size_t bytes) {
  if (!m) return TDRT_EARG;
  rt_param *p = param_of(m, i, bytes);
  if (!p) return TDRT_EARG;
  memcpy(p->data, src, bytes);
  weights_changed(m);
  return 0;
}

/* ---- calls ---- */

static int grow(void **mem, size_t *cap, size_t need) {
  if (need <= *cap && *mem) return 0;
  td_aligned_free(*mem);
  *cap = 0;
  if (!(*mem = td_aligned_alloc(64, need ? need : 64))) return -1;
  *cap = need;
  return 0;
}

/* Everything that depends on the sizes only. */
static int prepare(tdrt_model *m, rt_entry *e) {
  for (int i = 0; i < e->n_dv; i++)
    e->dv[i] = e->dvdesc[2 * i] ? (int64_t)e->dvdesc[2 * i + 1] : dim_eval(e, e->dvdesc[2 * i + 1]);
  size_t total = 0, *slot = td_calloc((size_t)e->n_slots + 1, sizeof *slot);
  if (!slot) return fail(m, TDRT_ENOMEM, "out of memory");
  for (int s = 0; s < e->n_slots; s++) {
    slot[s] = total;
    int64_t n = dim_eval(e, e->slot_bytes[s]);
    if (n < 0 || (uint64_t)n > ((uint64_t)1 << 48)) {
      td_free(slot);
      return fail(m, TDRT_EARG, "%s: temporaries would be too large for these sizes", e->name);
    }
    total += ((size_t)n + 63) & ~(size_t)63;
  }
  for (int b = 0; b < e->n_bufs; b++)
    if (e->bkind[b] == BK_TEMP) e->off[b] = (int64_t)slot[e->bindex[b]];
    else if (e->bkind[b] == BK_OUTPUT && e->bound[b] < 0) {
      e->off[b] = (int64_t)total;
      total += ((size_t)dim_eval(e, e->bbytes[b]) + 63) & ~(size_t)63;
    }
  td_free(slot);
  size_t sc = 64;
  int threads = 1;   /* the pool is started only for a kernel worth splitting */
  for (int k = 0; k < e->n_kern; k++) {
    rt_kern *kn = &e->kern[k];
    size_t s = kn->scratch >= 0 ? (size_t)kn->scratch : tdc_gemm_scratch(dim_eval(e, kn->mm_n), dim_eval(e, kn->mm_k));
    if (s > sc) sc = s;
    kn->ext = kn->parallel ? dim_eval(e, kn->extent) : 1;
    double work = (double)dim_eval(e, kn->br) + (double)dim_eval(e, kn->bw) + (double)dim_eval(e, kn->fl) / 4;
    int64_t n = kn->parallel && kn->ext >= 2 ? (int64_t)(work / 262144.0) : 1;
    if (n >= 2 && threads == 1) threads = td_pool_threads();
    if (n > threads) n = threads;
    if (n > kn->ext) n = kn->ext;
    kn->n_ranges = tdc_column_ranges(n < 1 ? 1 : n, work, kn->ext, kn->cols);
    kn->chunk = tdc_split_chunk(kn->ext, kn->n_ranges, kn->cols);
  }
  e->scratch_each = (sc + 63) & ~(size_t)63;
  if (grow(&e->arena, &e->arena_cap, total) ||
      grow(&e->scratch, &e->scratch_cap, e->scratch_each * (size_t)threads))
    return fail(m, TDRT_ENOMEM, "out of memory (%zu bytes of temporaries)", total);
  for (int b = 0; b < e->n_bufs; b++)
    if (e->bkind[b] == BK_TEMP || (e->bkind[b] == BK_OUTPUT && e->bound[b] < 0))
      e->bufs[b] = (char *)e->arena + e->off[b];
  e->have = 1;
  return 0;
}

typedef struct split {
  rt_entry *e;
  kfn fn;
  const rt_kern *k;
  int32_t status[64];
} split;

static void run_range(void *ctx, int64_t task, int tid) {
  split *s = ctx;
  int64_t lo = task * s->k->chunk, hi = lo + s->k->chunk < s->k->ext ? lo + s->k->chunk : s->k->ext;
  s->fn(s->e->bufs, s->e->dv, (char *)s->e->scratch + (size_t)tid * s->e->scratch_each, &s->status[tid],
        rt_table, lo, hi);
}

/* The prepacked B of every kernel that has one, at bufs[n_bufs + kernel]:
 * packed on the first call and after each load_weights. */
static int prepack_weights(tdrt_model *m, rt_entry *e) {
  for (int k = 0; k < e->n_kern; k++) {
    rt_kern *kn = &e->kern[k];
    if (kn->pack.nr <= 0) continue;
    if (!kn->packed && !(kn->packed = td_aligned_alloc(64, tdc_prepack_bytes(&kn->pack))))
      return fail(m, TDRT_ENOMEM, "out of memory (prepacked weights)");
    if (kn->packed_gen != m->weights_gen) {
      tdc_prepack(&kn->pack, e->bufs[kn->pack.buf], kn->packed);
      kn->packed_gen = m->weights_gen;
    }
    e->bufs[e->n_bufs + k] = kn->packed;
  }
  return 0;
}

/* Scans nest at most this deep (the elaborator's limit, lang/builtins_scan.c). */
#define SCAN_DEPTH_MAX 16

/* A call: its index (random streams) and, inside scans' bodies, the step
 * of each, outermost first. */
typedef struct rt_run {
  tdrt_model *m;
  uint64_t call;
  int64_t steps[SCAN_DEPTH_MAX];
  int depth;
} rt_run;

/* Random streams mixed with the call index, then with the step of every
 * scan the entry (a body) is in, as eager mode and compiled.c mix them. */
static void mix_streams(rt_entry *e, uint64_t call, const int64_t *steps, int depth) {
  for (int i = 0; i < e->n_dv; i++)
    if (e->dvdesc[2 * i]) {
      uint64_t s = (uint64_t)e->dvdesc[2 * i + 1];
      if (call) s = td_hash_mix(s, call);
      for (int k = 0; k < depth; k++) s = td_hash_mix(s, (uint64_t)steps[k] + 1);
      e->dv[i] = (int64_t)s;
    }
}

static int run_scan(rt_run *x, rt_entry *e, rt_scan *s);

/* ---- prints (the interpreter's format: artifact_common.c) ---- */

/* A printed value is in host memory already. */
static int print_fetch(void *ud, const tda_arg *a, size_t bytes, void **data, int *owned) {
  (void)bytes;
  *data = ((rt_entry *)ud)->bufs[a->buf];
  *owned = 0;
  return 0;
}

/* Does e, or a scan body in it, print? */
static int entry_prints(const rt_entry *e) {
  if (e->n_prints) return 1;
  for (int k = 0; k < e->n_kern; k++)
    if (e->kern[k].scan && entry_prints(&e->kern[k].scan->body)) return 1;
  return 0;
}

/* A line a scan's step printed, kept (in s->lines) until its step or
 * call ends. */
static void keep_line(void *ud, const char *text) {
  rt_scan *s = ud;
  size_t n = strlen(text) + 1;
  char *c = td_malloc(n);
  if (c && s->n_lines == s->cap_lines) {
    size_t cap = s->cap_lines ? 2 * s->cap_lines : 16;
    char **nl = td_realloc(s->lines, cap * sizeof *nl);
    if (nl) {
      s->lines = nl;
      s->cap_lines = cap;
    }
  }
  if (!c || s->n_lines == s->cap_lines) {
    td_free(c);
    s->oom = 1;
    return;
  }
  memcpy(c, text, n);
  s->lines[s->n_lines++] = c;
}

/* What e printed, to fn(ud, line) in eager mode's order: its prints in
 * order, each scan's lines (every step's) where its node stands among
 * them.  Empties the scans' lines.  0 or an error code. */
static int emit_prints(tdrt_model *m, rt_entry *e, void (*fn)(void *, const char *), void *ud) {
  for (int i = 0; i <= e->n_prints; i++) {
    for (int last = -1;;) {   /* the scans at place i, in node order */
      rt_scan *at = NULL;
      for (int k = 0; k < e->n_kern; k++) {
        rt_scan *s = e->kern[k].scan;
        if (s && s->pos == i && s->node > last && (!at || s->node < at->node)) at = s;
      }
      if (!at) break;
      last = at->node;
      if (at->oom) {
        drop_lines(at);
        return fail(m, TDRT_ENOMEM, "out of memory (printed lines)");
      }
      for (size_t l = 0; l < at->n_lines; l++) fn(ud, at->lines[l]);
      drop_lines(at);
    }
    if (i < e->n_prints) {
      int rc = tda_run_print(&e->c, i, print_fetch, e, fn, ud, m->err, sizeof m->err);
      if (rc) return rc;
    }
  }
  return 0;
}

static int run_kernels(rt_run *x, rt_entry *e) {
  tdrt_model *m = x->m;
  for (int k = 0; k < e->n_kern; k++) {
    const rt_kern *kn = &e->kern[k];
    int32_t st = 0;
    if (kn->scan) {
      int rc = run_scan(x, e, kn->scan);
      if (rc) return rc;
      continue;
    }
    if (kn->ext <= 0) continue;
    if (kn->n_ranges == 1) {
      e->fns[k](e->bufs, e->dv, e->scratch, &st, rt_table, 0, kn->ext);
    } else {
      split s;
      s.e = e;
      s.fn = e->fns[k];
      s.k = kn;
      memset(s.status, 0, sizeof s.status);
      td_pool_run(run_range, &s, kn->n_ranges);
      for (int t = 0; t < 64; t++)
        if (s.status[t] != 0) st = s.status[t];
    }
    if (st < 0)   /* built with TDSL_DEBUG=bounds */
      return fail(m, TDRT_EINDEX, "%s: internal error (TDSL_DEBUG=bounds): kernel %d accessed node %d outside its buffer",
                  e->name, k, -st - 1);
    if (st > 0) return fail(m, TDRT_EINDEX, "%s: take: an index is out of range", e->name);
  }
  return 0;
}

/* Scan kernel s of e, as compiled.c's run_scan runs it: the body's kernels
 * once per step with the step's pointers.  The body reads carry i from
 * cur[i] and writes it to the other of two buffers, the scan's output and
 * a second one (s->alt), chosen so that the last step writes the output;
 * step t's slice of a sequence and row t of a stacked output are read and
 * written in place; a body output its kernels do not write (a carry
 * passed through, an input returned) is copied after the step; with no
 * step the carries are the initial values.  The body's layout is made on
 * its first run for these sizes (its size checks then). */
static int run_scan(rt_run *x, rt_entry *e, rt_scan *s) {
  tdrt_model *m = x->m;
  rt_entry *b = &s->body;
  int64_t T = dim_eval(e, s->steps);
  if (T < 0) return fail(m, TDRT_EARG, "%s: scan: the number of steps evaluates to %lld", e->name, (long long)T);
  if (x->depth >= SCAN_DEPTH_MAX) return fail(m, TDRT_EARG, "%s: scans nest more than %d deep", e->name, SCAN_DEPTH_MAX);
  if (!b->have) {
    char why[sizeof m->err];
    if (tda_check_sizes(&b->c, why, sizeof why)) return fail(m, TDRT_EARG, "%s", why);
    int rc = prepare(m, b);
    if (rc) return rc;
  }
  int nc = s->nc, nx = s->nx, idx = s->idx, prints = m->print && entry_prints(b);
  drop_lines(s);   /* a failed call's */
  size_t alt_total = 0;
  for (int i = 0; i < s->no; i++) {
    s->bytes[i] = (size_t)dim_eval(b, s->out_bytes[i]);
    s->fin[i] = e->bufs[s->out_buf[i]];
    if (i < nc) alt_total += (s->bytes[i] + 63) & ~(size_t)63;
  }
  if (grow(&s->alt, &s->alt_cap, alt_total)) return fail(m, TDRT_ENOMEM, "out of memory (a scan's carries)");
  size_t off = 0;
  for (int i = 0; i < nc; i++) {
    s->alts[i] = (char *)s->alt + off;
    off += (s->bytes[i] + 63) & ~(size_t)63;
  }
  for (int j = 0; j < s->ni; j++) {
    s->in[j] = j == idx ? NULL : e->bufs[s->in_buf[j]];
    s->slice_b[j] = s->sliced[j] ? (size_t)dim_eval(b, s->slice[j]) : 0;
  }
  for (int i = 0; i < nc; i++) s->cur[i] = s->in[i];
  int64_t tval = 0;
  int rc = 0;
  for (int64_t st = 0; rc == 0 && st < T; st++) {
    int64_t t = s->reverse ? T - 1 - st : st;
    x->steps[x->depth] = tval = t;
    for (int i = 0; i < s->no; i++)
      s->dst[i] = i >= nc ? (char *)s->fin[i] + (size_t)t * s->bytes[i] : (T - 1 - st) % 2 == 0 ? s->fin[i] : s->alts[i];
    for (int i = 0; i < b->n_bufs; i++) {
      int j = (int)b->bindex[i];
      if (b->bkind[i] != BK_INPUT) continue;
      b->bufs[i] = j < nc ? s->cur[j] : j < nc + nx ? (char *)s->in[j] + (size_t)t * s->slice_b[j]
                 : j == idx ? (void *)&tval : s->in[j];
    }
    for (int i = 0; i < s->no; i++)
      if (s->direct[i]) b->bufs[s->out_bbuf[i]] = s->dst[i];
    mix_streams(b, x->call, x->steps, x->depth + 1);
    x->depth++;
    rc = run_kernels(x, b);
    x->depth--;
    if (rc) {
      char msg[sizeof m->err];
      snprintf(msg, sizeof msg, "%s", m->err);
      fail(m, rc, "%s, at step %lld of the scan", msg, (long long)t);
      break;
    }
    if (prints && (rc = emit_prints(m, b, keep_line, s))) break;
    for (int i = 0; i < s->no; i++)
      if (!s->direct[i] && s->bytes[i]) memmove(s->dst[i], b->bufs[s->out_bbuf[i]], s->bytes[i]);
    for (int i = 0; i < nc; i++) s->cur[i] = s->dst[i];
  }
  for (int i = 0; rc == 0 && T == 0 && i < nc; i++)   /* no step: the carries are the initial values */
    if (s->bytes[i]) memmove(s->fin[i], s->in[i], s->bytes[i]);
  return rc;
}

/* The entry's prints, its scans' where they stand among them. */
static int run_prints(tdrt_model *m, rt_entry *e) {
  return m->print ? emit_prints(m, e, m->print, m->print_ud) : 0;
}

/* After a full call: can the next call with the same sizes and weights
 * only point the inputs and outputs at its arguments and run the kernels?
 * Then fill the entry's record for the generated fast path (artifact.h). */
static void setup_fast(tdrt_model *m, int ei) {
  rt_entry *e = &m->entries[ei];
  tdrt_fast *f = &m->fast[ei];
  int n_io = e->n_in + e->n_out;
  f->ok = 0;
  if (!e->have || e->n_prints || e->n_updates || e->n_args > TDRT_FAST_SYMS || n_io > TDRT_FAST_ARGS ||
      e->n_kern > TDRT_FAST_KERNS)
    return;
  for (int k = 0; k < e->n_kern; k++) {
    if (e->kern[k].scan) return;   /* its body runs per step here (run_scan) */
    if (e->kern[k].ext > 0 && e->kern[k].n_ranges != 1) return;
    f->ext[k] = e->kern[k].ext;
  }
  for (int i = 0; i < n_io; i++) f->bind[i] = -1;
  for (int b = 0; b < e->n_bufs; b++) {
    int arg = e->bkind[b] == BK_INPUT ? (int)e->bindex[b]
            : e->bkind[b] == BK_OUTPUT ? (e->bound[b] >= 0 ? e->n_in + e->bound[b] : -2) : -1;
    if (arg == -2 || (arg >= 0 && f->bind[arg] >= 0)) return;   /* an output copied, or two buffers */
    if (arg >= 0) f->bind[arg] = b;
  }
  for (int i = 0; i < n_io; i++)   /* an argument no buffer reads: the spare slot */
    if (f->bind[i] < 0) f->bind[i] = e->n_bufs + e->n_kern;
  for (int o = 0; o < e->n_out; o++)
    if (e->bound[e->out[o].buf] != o) return;   /* one buffer returned twice: copied */
  for (int i = 0; i < e->n_args; i++) f->syms[i] = e->symvals[e->arg_syms[i]];
  f->bufs = e->bufs;
  f->dv = e->dv;
  f->scratch = e->scratch;
  f->rt = rt_table;
  f->calls = &m->calls;
  f->ok = 1;
}

/* After a training step's kernels, prints and outputs: each parameter an
 * update writes takes its value, as `tdsl run --compiled` gives it
 * (driver.c's td_prepared_run).  The values the kernels wrote into the
 * parameters' memory are there already; the others are copied, those
 * that are the memory of a parameter another update overwrites through a
 * copy made first (assign(a, b); assign(b, a)).  The copies' memory is
 * allocated on the first call and kept.  Then every packed copy of a
 * weight is stale, and the other entries' fast paths wait for a full call. */
static int apply_updates(tdrt_model *m, rt_entry *e) {
  if (!e->n_updates) return 0;
  size_t need = 0, off = 0;
  for (int u = 0; u < e->n_updates; u++) e->upd_src[u] = e->bufs[e->upd_buf[u]];
  for (int pass = 0; pass < 2; pass++) {
    for (int u = 0; u < e->n_updates; u++) {
      const rt_param *p = &m->params[e->update_param[u]];
      int staged = 0;
      for (int v = 0; v < e->n_updates && !staged; v++) {
        void *dst = m->params[e->update_param[v]].data;
        staged = v != u && dst == e->upd_src[u] && e->bufs[e->upd_buf[v]] != dst;
      }
      if (!staged) continue;
      size_t n = (p->bytes + 63) & ~(size_t)63;
      if (pass == 1) {
        void *copy = (char *)e->stage + off;
        memcpy(copy, e->upd_src[u], p->bytes);
        e->upd_src[u] = copy;
      }
      if (pass == 0) need += n;
      else off += n;
    }
    if (pass == 0 && need && grow(&e->stage, &e->stage_cap, need))
      return fail(m, TDRT_ENOMEM, "out of memory (%zu bytes of updated parameters)", need);
  }
  for (int u = 0; u < e->n_updates; u++) {
    const rt_param *p = &m->params[e->update_param[u]];
    if (e->upd_src[u] != p->data && p->bytes) memcpy(p->data, e->upd_src[u], p->bytes);
  }
  weights_changed(m);
  return 0;
}

void tdrt_fast_rand(tdrt_model *m, int ei) { mix_streams(&m->entries[ei], m->calls++, NULL, 0); }

int tdrt_fast_index_error(tdrt_model *m, int ei) {
  return fail(m, TDRT_EINDEX, "%s: take: an index is out of range", m->entries[ei].name);
}

int tdrt_call(tdrt_model *m, int ei, const int64_t *syms, void *const *args) {
  if (!m) return TDRT_EARG;
  if (ei < 0 || ei >= m->n_entries) return fail(m, TDRT_EENTRY, "no entry point %d", ei);
  rt_entry *e = &m->entries[ei];
  m->fast[ei].ok = 0;   /* set again when this call succeeds */
  int same = e->have;
  for (int i = 0; i < e->n_args; i++)
    if (syms[i] < 0) return fail(m, TDRT_EARG, "%s: size argument %d is negative (%lld)", e->name, i, (long long)syms[i]);
  for (int i = 0; i < e->n_args; i++) {
    same = same && e->symvals[e->arg_syms[i]] == syms[i];
    e->symvals[e->arg_syms[i]] = syms[i];
  }
  td_sig_derive(e->sizes.syms, e->n_syms, e->symvals);   /* a checkpointed scan's segments (runtime/sig.h) */
  if (!same) {
    forget_sizes(e);
    char why[sizeof m->err];
    if (tda_check_sizes(&e->c, why, sizeof why)) return fail(m, TDRT_EARG, "%s", why);
    int rc = prepare(m, e);
    if (rc) return rc;
  }
  for (int i = 0; i < e->n_in + e->n_out; i++)
    if (!args[i]) return fail(m, TDRT_EARG, "%s: argument %d is NULL", e->name, i);
  for (int b = 0; b < e->n_bufs; b++) {
    if (e->bkind[b] == BK_INPUT) e->bufs[b] = args[e->bindex[b]];
    else if (e->bkind[b] == BK_PARAM || e->bkind[b] == BK_UPDATE) e->bufs[b] = m->params[e->pslot[e->bindex[b]]].data;
    else if (e->bkind[b] == BK_OUTPUT && e->bound[b] >= 0) e->bufs[b] = args[e->n_in + e->bound[b]];
  }
  rt_run x = {m, m->calls++, {0}, 0};
  mix_streams(e, x.call, NULL, 0);
  int rc = prepack_weights(m, e);
  if (rc == 0) rc = run_kernels(&x, e);
  if (rc == 0) rc = run_prints(m, e);
  for (int o = 0; rc == 0 && o < e->n_out; o++) {
    int b = e->out[o].buf;
    if (e->bound[b] == o) continue;
    size_t n = td_dtype_size((td_dtype)e->out[o].dtype);
    for (int k = 0; k < e->out[o].rank; k++) n *= (size_t)dim_eval(e, e->out[o].dims[k]);
    memmove(args[e->n_in + o], e->bufs[b], n);
  }
  if (rc == 0) rc = apply_updates(m, e);
  if (rc == 0) setup_fast(m, ei);
  return rc;
}

/* ---- for callers without the header (artifact.h) ---- */

static tda_entry *entry_of(void *m, int ei) { return &((tdrt_model *)m)->entries[ei].c; }

const char *tdrt_describe(tdrt_model *m) {
  if (!m) return NULL;
  if (!m->description &&
      !(m->description = tda_describe(TDRT_ABI, m->params, m->n_params, entry_of, m, m->n_entries)))
    fail(m, TDRT_ENOMEM, "out of memory");
  return m->description;
}

int tdrt_bind(tdrt_model *m, int ei, const int *dtypes, const int *ranks, const int64_t *shapes, int64_t *syms,
              int64_t *out_shapes) {
  if (!m) return TDRT_EARG;
  if (ei < 0 || ei >= m->n_entries) return fail(m, TDRT_EENTRY, "no entry point %d", ei);
  return tda_bind(&m->entries[ei].c, dtypes, ranks, shapes, syms, out_shapes, m->err, sizeof m->err);
}

int tdrt_call_entry(tdrt_model *m, int ei, const int64_t *syms, void *const *args) {
  if (m && ei >= 0 && ei < m->n_entries && m->entries[ei].call_fn) return m->entries[ei].call_fn(m, ei, syms, args);
  return tdrt_call(m, ei, syms, args);
}

/* ---- the --exe command line (artifact_common.c) ---- */

static int exe_load(void *m, const char *path) { return tdrt_load_weights(m, path, NULL, 0); }
static int exe_call(void *m, int ei, const int64_t *syms, void *const *args) { return tdrt_call(m, ei, syms, args); }
/* the generated entry function, which a program calling the C API runs */
static tda_call_fn exe_direct(void *m, int ei) { return ((tdrt_model *)m)->entries[ei].call_fn; }
static void exe_quiet(void *m) { tdrt_set_print(m, NULL, NULL); }
static const char *exe_error(void *m) { return tdrt_error(m); }

int tdrt_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels) {
  tda_exe_opts o;
  int rc = tda_exe_parse(argc, argv, &o);
  if (rc) {
    tda_exe_opts_free(&o);
    return rc;
  }
  tdrt_model *m = tdrt_create(TDRT_ABI, (uint64_t)desc[3], desc, data, kernels);
  if (!m) {
    fprintf(stderr, "%s: error: cannot create the model: %s\n", argv[0], tdrt_error(NULL));
    tda_exe_opts_free(&o);
    return 1;
  }
  tda_exe_model x = {m, m->n_entries, entry_of, exe_load, exe_call, exe_quiet, exe_error, exe_direct};
  rc = tda_exe_run(&x, &o, argv[0]);
  tdrt_free(m);
  tda_exe_opts_free(&o);
  return rc;
}

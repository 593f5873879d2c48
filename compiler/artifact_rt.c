/* artifact_rt.c - the runtime linked into every built artifact.
 *
 * It reads the descriptor (artifact.h) once, at tdrt_create, into per-entry
 * tables, copies the initial parameters, and runs entry calls: the symbolic
 * sizes come from the caller; everything derived from them (the runtime
 * table of sizes and random streams, the arena layout, scratch sizes and
 * how each kernel splits across threads) is computed only when they differ
 * from the previous call's, so a call with unchanged sizes is: bind the
 * caller's pointers, call the kernels, check their status.  Kernels whose
 * work is small run on the calling thread; large ones are split over the
 * thread pool (pool.h) as td_compiled_run does.  Temporaries live in an
 * arena that is kept and grown across calls.  One call at a time per model.
 * After the kernels, the entry's print() calls are formatted as the
 * interpreter formats them (interp.c's run_print) and handed to the
 * model's print function (stdout by default).
 *
 * Random numbers: call k of a model (k = 0, 1, ...) uses call index k, so
 * the first call draws what `tdsl run` draws.
 *
 * tdrt_exe_main is the command line of --exe artifacts (see docs/compiler.md).
 */
#include "artifact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lang/mem.h"
#include "../runtime/io.h"
#include "../runtime/philox.h"
#include "../runtime/scalar.h"
#include "../runtime/strbuf.h"
#include "../runtime/tensor.h"
#include "pool.h"

#define MAXR 8
enum { BK_INPUT, BK_PARAM, BK_OUTPUT, BK_TEMP };

typedef void (*kfn)(void **bufs, const int64_t *dv, void *scratch, int32_t *status, void *const *rt, int64_t lo,
                    int64_t hi);

typedef struct rt_poly {
  int n;
  const int64_t *t;          /* n terms of 6 words: coef, nsym, sym[4] */
} rt_poly;

typedef struct rt_arg {
  const char *name;          /* inputs only */
  int dtype, rank, buf;
  int64_t dims[MAXR];
} rt_arg;

typedef struct rt_kern {
  int64_t parallel, extent, br, bw, fl, scratch, mm_n, mm_k;
  int64_t n_ranges, chunk, ext;  /* for the current sizes */
} rt_kern;

typedef struct rt_part {
  char *text;                /* a literal, or NULL: the value in arg */
  rt_arg arg;
} rt_part;

typedef struct rt_print {
  int n;
  rt_part *parts;
} rt_print;

typedef struct rt_entry {
  char *name;
  int n_syms, n_args, *arg_syms;
  int n_in, n_out;
  rt_arg *in, *out;
  int n_polys;
  rt_poly *polys;
  int n_pslots, *pslot;
  int n_bufs;
  int64_t *bkind, *bindex, *bbytes;
  int *bound;                /* per buffer: graph output bound to it, or -1 */
  int n_slots;
  const int64_t *slot_bytes;
  int n_dv;
  const int64_t *dvdesc;     /* pairs: is_rand, value */
  int n_kern;
  rt_kern *kern;
  kfn *fns;
  int n_prints;
  rt_print *prints;
  /* state for the current sizes */
  int have;
  int64_t *symvals, *dv;
  void **bufs;
  int64_t *off;              /* per buffer: arena offset (TEMP and unbound OUTPUT) */
  void *arena, *scratch;
  size_t arena_cap, scratch_cap, scratch_each;
} rt_entry;

typedef struct rt_param {
  char *name;
  int dtype, rank;
  int64_t shape[MAXR];
  size_t bytes;
  void *data;
} rt_param;

struct tdrt_model {
  int n_params, n_entries;
  rt_param *params;
  rt_entry *entries;
  uint64_t calls;
  tdrt_print_fn print;
  void *print_ud;
  char err[512];
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

typedef struct rd {
  const int64_t *w;
  size_t at;
} rd;

static int64_t word(rd *r) { return r->w[r->at++]; }

static char *str(rd *r) {
  int64_t n = word(r);
  char *s = td_malloc((size_t)n + 1);
  if (s) {
    memcpy(s, &r->w[r->at], (size_t)n);
    s[n] = 0;
  }
  r->at += (size_t)(n + 7) / 8;
  return s;
}

static int64_t dim_eval(const rt_entry *e, int64_t d) {
  if (d >= 0) return d;
  const rt_poly *p = &e->polys[-d - 1];
  int64_t v = 0;
  for (int i = 0; i < p->n; i++) {
    const int64_t *t = &p->t[6 * i];
    int64_t x = t[0];
    for (int k = 0; k < t[1]; k++) x *= e->symvals[t[2 + k]];
    v += x;
  }
  return v;
}

static void *alloc_n(size_t n, size_t each) { return td_calloc(n + 1, each); }

static void read_arg(rd *r, rt_arg *a, int input) {
  if (input) a->name = str(r);
  else a->buf = (int)word(r);
  a->dtype = (int)word(r);
  a->rank = (int)word(r);
  for (int k = 0; k < a->rank; k++) a->dims[k] = word(r);
}

static int read_entry(rd *r, rt_entry *e) {
  e->name = str(r);
  e->n_syms = (int)word(r);
  e->n_args = (int)word(r);
  e->arg_syms = alloc_n((size_t)e->n_args, sizeof(int));
  e->symvals = alloc_n((size_t)e->n_syms, sizeof(int64_t));
  if (!e->name || !e->arg_syms || !e->symvals) return -1;
  for (int i = 0; i < e->n_args; i++) e->arg_syms[i] = (int)word(r);
  e->n_in = (int)word(r);
  if (!(e->in = alloc_n((size_t)e->n_in, sizeof *e->in))) return -1;
  for (int i = 0; i < e->n_in; i++) read_arg(r, &e->in[i], 1);
  e->n_out = (int)word(r);
  if (!(e->out = alloc_n((size_t)e->n_out, sizeof *e->out))) return -1;
  for (int i = 0; i < e->n_out; i++) read_arg(r, &e->out[i], 0);
  e->n_polys = (int)word(r);
  if (!(e->polys = alloc_n((size_t)e->n_polys, sizeof *e->polys))) return -1;
  for (int i = 0; i < e->n_polys; i++) {
    e->polys[i].n = (int)word(r);
    e->polys[i].t = &r->w[r->at];
    r->at += 6 * (size_t)e->polys[i].n;
  }
  e->n_pslots = (int)word(r);
  if (!(e->pslot = alloc_n((size_t)e->n_pslots, sizeof(int)))) return -1;
  for (int i = 0; i < e->n_pslots; i++) e->pslot[i] = (int)word(r);
  e->n_bufs = (int)word(r);
  e->bkind = alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bindex = alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bbytes = alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->off = alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bound = alloc_n((size_t)e->n_bufs, sizeof(int));
  e->bufs = alloc_n((size_t)e->n_bufs, sizeof(void *));
  if (!e->bkind || !e->bindex || !e->bbytes || !e->off || !e->bound || !e->bufs) return -1;
  for (int i = 0; i < e->n_bufs; i++) {
    e->bkind[i] = word(r);
    e->bindex[i] = word(r);
    e->bbytes[i] = word(r);
    e->bound[i] = -1;
  }
  for (int o = e->n_out - 1; o >= 0; o--)   /* the first output naming a buffer gets it */
    if (e->bkind[e->out[o].buf] == BK_OUTPUT) e->bound[e->out[o].buf] = o;
  e->n_slots = (int)word(r);
  e->slot_bytes = &r->w[r->at];
  r->at += (size_t)e->n_slots;
  e->n_dv = (int)word(r);
  e->dvdesc = &r->w[r->at];
  r->at += 2 * (size_t)e->n_dv;
  if (!(e->dv = alloc_n((size_t)e->n_dv, sizeof(int64_t)))) return -1;
  e->n_kern = (int)word(r);
  if (!(e->kern = alloc_n((size_t)e->n_kern, sizeof *e->kern))) return -1;
  if (!(e->fns = alloc_n((size_t)e->n_kern, sizeof *e->fns))) return -1;
  for (int k = 0; k < e->n_kern; k++) {
    rt_kern *kn = &e->kern[k];
    kn->parallel = word(r);
    kn->extent = word(r);
    kn->br = word(r);
    kn->bw = word(r);
    kn->fl = word(r);
    kn->scratch = word(r);
    kn->mm_n = word(r);
    kn->mm_k = word(r);
  }
  e->n_prints = (int)word(r);
  if (!(e->prints = alloc_n((size_t)e->n_prints, sizeof *e->prints))) return -1;
  for (int i = 0; i < e->n_prints; i++) {
    rt_print *pr = &e->prints[i];
    pr->n = (int)word(r);
    if (!(pr->parts = alloc_n((size_t)pr->n, sizeof *pr->parts))) return -1;
    for (int k = 0; k < pr->n; k++)
      if (word(r) == 0) {
        if (!(pr->parts[k].text = str(r))) return -1;
      } else {
        read_arg(r, &pr->parts[k].arg, 0);
      }
  }
  return 0;
}

static int read_param(rd *r, rt_param *p, const unsigned char *data) {
  p->name = str(r);
  p->dtype = (int)word(r);
  p->rank = (int)word(r);
  for (int k = 0; k < p->rank; k++) p->shape[k] = word(r);
  int64_t off = word(r);
  p->bytes = (size_t)word(r);
  p->data = td_aligned_alloc(64, p->bytes ? p->bytes : 64);
  if (!p->name || !p->data) return -1;
  memcpy(p->data, data + off, p->bytes);
  return 0;
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

tdrt_model *tdrt_create(int abi, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels) {
  if (abi != TDRT_ABI || !desc || desc[0] != TDRT_MAGIC || desc[1] != TDRT_ABI || !cpu_has(desc[2])) return NULL;
  tdrt_model *m = td_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->print = print_stdout;
  rd r = {desc, 3};
  m->n_entries = (int)word(&r);
  m->n_params = (int)word(&r);
  m->params = alloc_n((size_t)m->n_params, sizeof *m->params);
  m->entries = alloc_n((size_t)m->n_entries, sizeof *m->entries);
  int ok = m->params && m->entries;
  for (int i = 0; ok && i < m->n_params; i++) ok = read_param(&r, &m->params[i], data) == 0;
  for (int e = 0; ok && e < m->n_entries; e++) {
    ok = read_entry(&r, &m->entries[e]) == 0;
    if (ok) kernels(e, (void **)m->entries[e].fns);
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
    for (int k = 0; e->in && k < e->n_in; k++) td_free((void *)e->in[k].name);
    for (int k = 0; e->prints && k < e->n_prints; k++) {
      for (int j = 0; e->prints[k].parts && j < e->prints[k].n; j++) td_free(e->prints[k].parts[j].text);
      td_free(e->prints[k].parts);
    }
    td_free(e->prints);
    void *own[] = {e->name, e->arg_syms, e->in, e->out, e->polys, e->pslot, e->bkind, e->bindex, e->bbytes,
                   e->bound, e->kern, e->fns, e->symvals, e->dv, e->bufs, e->off};
    for (size_t k = 0; k < sizeof own / sizeof *own; k++) td_free(own[k]);
    td_aligned_free(e->arena);
    td_aligned_free(e->scratch);
  }
  td_free(m->params);
  td_free(m->entries);
  td_free(m);
}

const char *tdrt_error(const tdrt_model *m) { return m ? m->err : "no model"; }

void tdrt_set_print(tdrt_model *m, tdrt_print_fn fn, void *ud) {
  if (!m) return;
  m->print = fn;
  m->print_ud = ud;
}

/* ---- weights ---- */

int tdrt_load_weights(tdrt_model *m, const char *path, char *err, size_t errlen) {
  td_tensor_map w;
  td_err e;
  int rc = 0;
  td_tensor_map_init(&w);
  if (td_safetensors_read(path, &w, &e)) rc = fail(m, -1, "%s", e.msg);
  for (int i = 0; rc == 0 && i < m->n_params; i++) {
    const rt_param *p = &m->params[i];
    const td_tensor *t = td_tensor_map_get(&w, p->name);
    int same = t && (int)t->dtype == p->dtype && t->rank == p->rank;
    for (int k = 0; same && k < p->rank; k++) same = t->shape[k] == p->shape[k];
    if (!same) rc = fail(m, -1, "%s: weight '%s' is %s", path, p->name, t ? "of the wrong dtype or shape" : "missing");
  }
  if (rc == 0 && w.n != m->n_params) rc = fail(m, -1, "%s: has %d tensors, the model %d parameters", path, w.n, m->n_params);
  for (int i = 0; rc == 0 && i < m->n_params; i++)
    memcpy(m->params[i].data, td_tensor_map_get(&w, m->params[i].name)->data, m->params[i].bytes);
  td_tensor_map_free(&w);
  if (rc && err && errlen) snprintf(err, errlen, "%s", m->err);
  return rc;
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

static size_t mm_scratch(int64_t n, int64_t k) {   /* the bound of codegen_gemm.c */
  size_t bp = (size_t)(n + 32) * (size_t)k, cb = 64 * (size_t)(n + 32), simple = (size_t)n + (size_t)n * (size_t)k;
  size_t packed = bp + 64 * 256 + cb;
  return (packed > simple ? packed : simple) * 8 + 256;
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
    size_t s = kn->scratch >= 0 ? (size_t)kn->scratch : mm_scratch(dim_eval(e, kn->mm_n), dim_eval(e, kn->mm_k));
    if (s > sc) sc = s;
    kn->ext = kn->parallel ? dim_eval(e, kn->extent) : 1;
    double work = (double)dim_eval(e, kn->br) + (double)dim_eval(e, kn->bw) + (double)dim_eval(e, kn->fl) / 4;
    int64_t n = kn->parallel && kn->ext >= 2 ? (int64_t)(work / 262144.0) : 1;
    if (n >= 2 && threads == 1) threads = td_pool_threads();
    if (n > threads) n = threads;
    if (n > kn->ext) n = kn->ext;
    kn->n_ranges = n < 1 ? 1 : n;
    kn->chunk = (kn->ext + kn->n_ranges - 1) / kn->n_ranges;
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

static int run_kernels(tdrt_model *m, rt_entry *e) {
  for (int k = 0; k < e->n_kern; k++) {
    const rt_kern *kn = &e->kern[k];
    int32_t st = 0;
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
        if (s.status[t] > 0) st = s.status[t];
    }
    if (st > 0) return fail(m, TDRT_EINDEX, "%s: take: an index is out of range", e->name);
  }
  return 0;
}

/* ---- prints (the interpreter's format: interp.c's run_print) ---- */

/* Appends text, indenting its later lines to the current column. */
static void add_aligned(td_strbuf *b, const char *text) {
  size_t col = 0;
  while (col < b->len && b->s[b->len - col - 1] != '\n') col++;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (p != text && len > 0)
      for (size_t i = 0; i < col; i++) td_sb_add(b, " ", 1);
    td_sb_add(b, p, len);
    if (!nl) break;
    td_sb_add(b, "\n", 1);
    p = nl + 1;
  }
}

static void add_value(td_strbuf *b, rt_entry *e, const rt_arg *a) {
  td_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = (td_dtype)a->dtype;
  t.rank = a->rank;
  t.numel = 1;
  for (int k = 0; k < a->rank; k++) t.numel *= t.shape[k] = dim_eval(e, a->dims[k]);
  t.data = e->bufs[a->buf];
  t.refcount = 1;
  char *s = td_tensor_format(&t, 1000), shp[256];
  if (!s) {
    b->oom = 1;
    return;
  }
  add_aligned(b, s);
  td_free(s);
  if (t.rank > 0) {
    td_sb_puts(b, " (");
    td_sb_puts(b, td_shape_str(t.dtype, t.rank, t.shape, shp, sizeof shp));
    td_sb_puts(b, ")");
  }
}

static int run_prints(tdrt_model *m, rt_entry *e) {
  for (int i = 0; i < e->n_prints && m->print; i++) {
    td_strbuf b = {0};
    for (int k = 0; k < e->prints[i].n; k++) {
      const rt_part *p = &e->prints[i].parts[k];
      if (k) td_sb_puts(&b, " ");
      if (p->text) td_sb_puts(&b, p->text);
      else add_value(&b, e, &p->arg);
    }
    td_sb_puts(&b, "\n");
    if (!b.oom) m->print(m->print_ud, b.s);
    td_free(b.s);
    if (b.oom) return fail(m, TDRT_ENOMEM, "out of memory");
  }
  return 0;
}

/* Random streams mixed with the call index (entries of dv that are streams). */
static void mix_streams(rt_entry *e, uint64_t call) {
  for (int i = 0; i < e->n_dv; i++)
    if (e->dvdesc[2 * i]) {
      uint64_t s = (uint64_t)e->dvdesc[2 * i + 1];
      e->dv[i] = (int64_t)(call ? td_hash_mix(s, call) : s);
    }
}

int tdrt_call(tdrt_model *m, int ei, const int64_t *syms, void *const *args) {
  if (!m) return TDRT_EARG;
  if (ei < 0 || ei >= m->n_entries) return fail(m, TDRT_EENTRY, "no entry point %d", ei);
  rt_entry *e = &m->entries[ei];
  int same = e->have;
  for (int i = 0; i < e->n_args; i++)
    if (syms[i] < 0) return fail(m, TDRT_EARG, "%s: size argument %d is negative (%lld)", e->name, i, (long long)syms[i]);
  for (int i = 0; i < e->n_args; i++) {
    same = same && e->symvals[e->arg_syms[i]] == syms[i];
    e->symvals[e->arg_syms[i]] = syms[i];
  }
  if (!same) {
    e->have = 0;
    for (int i = 0; i < e->n_in + e->n_out; i++) {
      const rt_arg *a = i < e->n_in ? &e->in[i] : &e->out[i - e->n_in];
      uint64_t bytes = 8;
      for (int k = 0; k < a->rank; k++) {
        int64_t d = dim_eval(e, a->dims[k]);
        if (d < 0) return fail(m, TDRT_EARG, "%s: a size of argument %d is negative", e->name, i);
        if (__builtin_mul_overflow(bytes, (uint64_t)d, &bytes) || bytes > ((uint64_t)1 << 48))
          return fail(m, TDRT_EARG, "%s: argument %d would be too large", e->name, i);
      }
    }
    int rc = prepare(m, e);
    if (rc) return rc;
  }
  for (int i = 0; i < e->n_in + e->n_out; i++)
    if (!args[i]) return fail(m, TDRT_EARG, "%s: argument %d is NULL", e->name, i);
  for (int b = 0; b < e->n_bufs; b++) {
    if (e->bkind[b] == BK_INPUT) e->bufs[b] = args[e->bindex[b]];
    else if (e->bkind[b] == BK_PARAM) e->bufs[b] = m->params[e->pslot[e->bindex[b]]].data;
    else if (e->bkind[b] == BK_OUTPUT && e->bound[b] >= 0) e->bufs[b] = args[e->n_in + e->bound[b]];
  }
  mix_streams(e, m->calls++);
  int rc = run_kernels(m, e);
  if (rc == 0) rc = run_prints(m, e);
  for (int o = 0; rc == 0 && o < e->n_out; o++) {
    int b = e->out[o].buf;
    if (e->bound[b] == o) continue;
    size_t n = td_dtype_size((td_dtype)e->out[o].dtype);
    for (int k = 0; k < e->out[o].rank; k++) n *= (size_t)dim_eval(e, e->out[o].dims[k]);
    memmove(args[e->n_in + o], e->bufs[b], n);
  }
  return rc;
}

/* ---- the --exe command line ---- */

typedef struct exe_opts {
  const char *entry, *weights, *in_name[64], *in_path[64], *out[64];
  int n_in, n_out;
  long bench;
} exe_opts;

static int exe_usage(const char *prog, const char *msg) {
  fprintf(stderr, "%s: %s\nusage: %s [--entry NAME] --in ARG=FILE.npy... [--out FILE.npy]... "
          "[--weights W.safetensors] [--bench N]\n", prog, msg, prog);
  return 2;
}

static int exe_parse(int argc, char **argv, exe_opts *o) {
  memset(o, 0, sizeof *o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--entry") && strcmp(a, "--in") && strcmp(a, "--out") && strcmp(a, "--weights") &&
        strcmp(a, "--bench"))
      return exe_usage(argv[0], "unknown argument");
    if (!v) return exe_usage(argv[0], "an option needs a value");
    i++;
    if (!strcmp(a, "--entry")) o->entry = v;
    else if (!strcmp(a, "--weights")) o->weights = v;
    else if (!strcmp(a, "--bench")) o->bench = strtol(v, NULL, 10);
    else if (!strcmp(a, "--out") && o->n_out < 64) o->out[o->n_out++] = v;
    else if (!strcmp(a, "--in") && o->n_in < 64 && strchr(v, '=')) {
      o->in_name[o->n_in] = v;
      o->in_path[o->n_in++] = strchr(v, '=') + 1;
    } else return exe_usage(argv[0], "bad --in or --out");
  }
  return 0;
}

/* Binds the entry's symbols from the shapes of the inputs and checks them. */
static int bind_shapes(tdrt_model *m, rt_entry *e, td_tensor **in, int64_t *syms) {
  for (int i = 0; i < e->n_args; i++) syms[i] = -1;
  for (int i = 0; i < e->n_in; i++)
    for (int k = 0; k < e->in[i].rank; k++) {
      int64_t d = e->in[i].dims[k];
      if (d >= 0 || e->polys[-d - 1].n != 1 || e->polys[-d - 1].t[0] != 1 || e->polys[-d - 1].t[1] != 1) continue;
      for (int a = 0; a < e->n_args; a++)
        if (e->arg_syms[a] == e->polys[-d - 1].t[2] && syms[a] < 0) syms[a] = in[i]->shape[k];
    }
  for (int a = 0; a < e->n_args; a++) {
    if (syms[a] < 0) return fail(m, 1, "%s: a size is not bound by the inputs", e->name);
    e->symvals[e->arg_syms[a]] = syms[a];
  }
  e->have = 0;
  for (int i = 0; i < e->n_in; i++) {
    int ok = (int)in[i]->dtype == e->in[i].dtype && in[i]->rank == e->in[i].rank;
    for (int k = 0; ok && k < e->in[i].rank; k++) ok = in[i]->shape[k] == dim_eval(e, e->in[i].dims[k]);
    if (!ok) return fail(m, 1, "%s: input '%s' has the wrong dtype or shape", e->name, e->in[i].name);
  }
  return 0;
}

static int exe_inputs(tdrt_model *m, rt_entry *e, const exe_opts *o, td_tensor **in) {
  for (int i = 0; i < e->n_in; i++) {
    const char *path = NULL;
    size_t n = strlen(e->in[i].name);
    for (int k = 0; k < o->n_in; k++)
      if (!strncmp(o->in_name[k], e->in[i].name, n) && o->in_name[k][n] == '=') path = o->in_path[k];
    td_err err;
    if (!path) return fail(m, 1, "missing input for argument '%s' (--in %s=FILE.npy)", e->in[i].name, e->in[i].name);
    if (td_npy_read(path, &in[i], &err)) return fail(m, 1, "%s", err.msg);
  }
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* --bench: one warm-up call; n calls back to back (the mean), then n calls
 * each timed (the median and minimum, which include a clock read). */
static int exe_bench(tdrt_model *m, int ei, const int64_t *syms, void **args, long n) {
  int64_t *t = td_malloc((size_t)n * sizeof *t);
  if (!t) return fail(m, 1, "out of memory");
  m->print = NULL;
  int rc = tdrt_call(m, ei, syms, args);
  int64_t t0 = now_ns();
  for (long i = 0; i < n && rc == 0; i++) rc = tdrt_call(m, ei, syms, args);
  int64_t total = now_ns() - t0;
  for (long i = 0; i < n && rc == 0; i++) {
    int64_t a = now_ns();
    rc = tdrt_call(m, ei, syms, args);
    t[i] = now_ns() - a;
  }
  if (rc == 0) {
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    printf("%s: %ld calls, per-call latency median %lld ns, mean %.1f ns, min %lld ns\n", m->entries[ei].name, n,
           (long long)t[n / 2], (double)total / (double)n, (long long)t[0]);
  }
  td_free(t);
  return rc;
}

static int exe_outputs(tdrt_model *m, rt_entry *e, const exe_opts *o, td_tensor **out) {
  if (o->n_out && o->n_out != e->n_out) return fail(m, 1, "%s returns %d values but %d --out files were given", e->name, e->n_out, o->n_out);
  for (int i = 0; i < e->n_out; i++) {
    td_err err;
    if (o->n_out) {
      if (td_npy_write(o->out[i], out[i], &err)) return fail(m, 1, "%s", err.msg);
      continue;
    }
    char *text = td_tensor_format(out[i], 1000), t[256];
    if (e->n_out > 1) printf("output %d: ", i);
    printf("%s\n%s\n", td_shape_str(out[i]->dtype, out[i]->rank, out[i]->shape, t, sizeof t), text ? text : "?");
    td_free(text);
  }
  return 0;
}

static int exe_run(tdrt_model *m, const exe_opts *o, td_tensor **in, td_tensor **out, int64_t *syms, void **args) {
  int ei = 0;
  while (o->entry && ei < m->n_entries && strcmp(m->entries[ei].name, o->entry)) ei++;
  if (ei == m->n_entries) return fail(m, 1, "no entry point '%s'", o->entry);
  rt_entry *e = &m->entries[ei];
  if (o->weights && tdrt_load_weights(m, o->weights, NULL, 0)) return -1;
  if (exe_inputs(m, e, o, in) || bind_shapes(m, e, in, syms)) return -1;
  for (int i = 0; i < e->n_out; i++) {
    int64_t shape[MAXR];
    td_err err;
    for (int k = 0; k < e->out[i].rank; k++) shape[k] = dim_eval(e, e->out[i].dims[k]);
    if (!(out[i] = td_tensor_new((td_dtype)e->out[i].dtype, e->out[i].rank, shape, &err))) return fail(m, 1, "%s", err.msg);
    args[e->n_in + i] = out[i]->data;
  }
  for (int i = 0; i < e->n_in; i++) args[i] = in[i]->data;
  if (o->bench > 0) return exe_bench(m, ei, syms, args, o->bench);
  if (tdrt_call(m, ei, syms, args)) return -1;
  return exe_outputs(m, e, o, out);
}

int tdrt_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels) {
  exe_opts o;
  int rc = exe_parse(argc, argv, &o);
  if (rc) return rc;
  tdrt_model *m = tdrt_create(TDRT_ABI, desc, data, kernels);
  if (!m) {
    fprintf(stderr, "%s: error: cannot create the model (%s)\n", argv[0],
            cpu_has(desc[2]) ? "out of memory" : "this CPU lacks the instructions it was built for; rebuild with --march");
    return 1;
  }
  td_tensor *in[64] = {0}, *out[64] = {0};
  int64_t syms[64];
  void *args[128];
  rc = exe_run(m, &o, in, out, syms, args) ? 1 : 0;
  if (rc) fprintf(stderr, "%s: error: %s\n", argv[0], m->err);
  for (int i = 0; i < 64; i++) {
    td_tensor_release(in[i]);
    td_tensor_release(out[i]);
  }
  tdrt_free(m);
  return rc;
}

/* artifact_common.c - the parts of the artifact runtimes that do not
 * depend on the device (artifact_common.h): reading the descriptor's
 * common parts, slot layout, weights files, print() formatting (the
 * interpreter's format: interp.c's run_print) and the --exe command line.
 */
#include "artifact/artifact_common.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/mem.h"
#include "runtime/io.h"

static void set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
}

/* ---- reading the descriptor ---- */

char *tda_str(tda_rd *r) {
  int64_t n = tda_word(r);
  char *s = td_malloc((size_t)n + 1);
  if (s) {
    memcpy(s, &r->w[r->at], (size_t)n);
    s[n] = 0;
  }
  r->at += (size_t)(n + 7) / 8;
  return s;
}

void *tda_alloc_n(size_t n, size_t each) { return td_calloc(n + 1, each); }

static void read_arg(tda_rd *r, tda_arg *a, int input) {
  if (input) a->name = tda_str(r);
  else a->buf = (int)tda_word(r);
  a->dtype = (int)tda_word(r);
  a->rank = (int)tda_word(r);
  for (int k = 0; k < a->rank; k++) a->dims[k] = tda_word(r);
}

static int read_bufs(tda_rd *r, tda_entry *e) {
  e->n_bufs = (int)tda_word(r);
  e->bkind = tda_alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bindex = tda_alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bbytes = tda_alloc_n((size_t)e->n_bufs, sizeof(int64_t));
  e->bound = tda_alloc_n((size_t)e->n_bufs, sizeof(int));
  if (!e->bkind || !e->bindex || !e->bbytes || !e->bound) return -1;
  for (int i = 0; i < e->n_bufs; i++) {
    e->bkind[i] = tda_word(r);
    e->bindex[i] = tda_word(r);
    e->bbytes[i] = tda_word(r);
    e->bound[i] = -1;
  }
  for (int o = e->n_out - 1; o >= 0; o--)   /* the first output naming a buffer gets it */
    if (e->bkind[e->out[o].buf] == TDA_BK_OUTPUT) e->bound[e->out[o].buf] = o;
  return 0;
}

static int read_checks(tda_rd *r, tda_entry *e) {
  e->n_checks = (int)tda_word(r);
  e->checks = tda_alloc_n((size_t)e->n_checks, sizeof *e->checks);
  e->check_where = tda_alloc_n((size_t)e->n_checks, sizeof *e->check_where);
  if (!e->checks || !e->check_where) return -1;
  for (int i = 0; i < e->n_checks; i++) {
    td_sizecheck *c = &e->checks[i];
    c->kind = (td_sc_kind)tda_word(r);
    c->axis = (int)tda_word(r);
    c->rank = (int)tda_word(r);
    c->dtype = (int)tda_word(r);
    c->axes = (uint32_t)tda_word(r);
    c->step = tda_word(r);
    for (int k = 0; k < td_sizecheck_n_dims(c); k++) c->dims[k] = tda_word(r);
    if (!(c->text = tda_str(r)) || !(e->check_where[i] = tda_str(r))) return -1;
  }
  return 0;
}

int64_t tda_dim_eval_ovf(const tda_entry *e, int64_t d, int *overflow) {
  return td_sizes_eval_ovf(&e->sizes, d, e->symvals, overflow);
}

static int64_t check_eval(const void *ctx, int64_t d, int *overflow) { return tda_dim_eval_ovf(ctx, d, overflow); }

/* The arguments' sizes: each fits, none is negative, no argument beyond
 * 2^48 bytes. */
static int check_args(const tda_entry *e, char *err, size_t errlen) {
  for (int i = 0; i < e->n_in + e->n_out; i++) {
    const tda_arg *a = i < e->n_in ? &e->in[i] : &e->out[i - e->n_in];
    uint64_t bytes = 8;
    for (int k = 0; k < a->rank; k++) {
      int ovf = 0;
      int64_t d = tda_dim_eval_ovf(e, a->dims[k], &ovf);
      if (ovf) return set_err(err, errlen, "%s: a size of argument %d does not fit in 64 bits", e->name, i), -1;
      if (d < 0) return set_err(err, errlen, "%s: a size of argument %d is negative", e->name, i), -1;
      if (__builtin_mul_overflow(bytes, (uint64_t)d, &bytes) || bytes > ((uint64_t)1 << 48))
        return set_err(err, errlen, "%s: argument %d would be too large", e->name, i), -1;
    }
  }
  return 0;
}

int tda_check_sizes(const tda_entry *e, char *err, size_t errlen) {
  td_err m;
  int bad = td_sizecheck_run(e->checks, sizeof *e->checks, e->n_checks, check_eval, e, &m);
  if (bad >= 0) {
    set_err(err, errlen, "%s: %s", e->check_where[bad], m.msg);
    return -1;
  }
  return check_args(e, err, errlen);
}

/* The entry's signature as runtime/sig.h checks it: the descriptor's
 * polynomials as td_polys, its inputs as td_sig_args. */
static int make_sig(tda_entry *e) {
  size_t terms = 0;
  for (int i = 0; i < e->n_polys; i++) terms += (size_t)e->polys[i][0];
  e->sig_polys = tda_alloc_n((size_t)e->n_polys, sizeof *e->sig_polys);
  e->sig_monos = tda_alloc_n(terms, sizeof *e->sig_monos);
  e->sig_in = tda_alloc_n((size_t)e->n_in, sizeof *e->sig_in);
  if (!e->sig_polys || !e->sig_monos || !e->sig_in) return -1;
  td_mono *m = e->sig_monos;
  for (int i = 0; i < e->n_polys; i++) {
    const int64_t *p = e->polys[i];
    e->sig_polys[i] = (td_poly){(int)p[0], m};
    for (int64_t t = 0; t < p[0]; t++, m++) {
      const int64_t *w = &p[1 + TDA_TERM_WORDS * t];
      m->coef = w[0];
      m->n = (int)w[1];
      for (int k = 0; k < TD_MONO_MAX; k++) m->sym[k] = (int)w[2 + k];
    }
  }
  for (int i = 0; i < e->n_in; i++)
    e->sig_in[i] = (td_sig_arg){e->in[i].name, (td_dtype)e->in[i].dtype, e->in[i].rank, e->in[i].dims};
  e->sizes = (td_sizes){(const char *const *)e->sym_names, e->n_syms, e->sig_polys};
  return 0;
}

static int read_layout(tda_rd *r, tda_entry *e);

int tda_read_entry(tda_rd *r, tda_entry *e) {
  e->name = tda_str(r);
  e->n_syms = (int)tda_word(r);
  if (!(e->sym_names = tda_alloc_n((size_t)e->n_syms, sizeof *e->sym_names))) return -1;
  for (int s = 0; s < e->n_syms; s++)
    if (!(e->sym_names[s] = tda_str(r))) return -1;
  e->n_args = (int)tda_word(r);
  e->arg_syms = tda_alloc_n((size_t)e->n_args, sizeof(int));
  e->symvals = tda_alloc_n((size_t)e->n_syms, sizeof(int64_t));
  if (!e->name || !e->arg_syms || !e->symvals) return -1;
  for (int i = 0; i < e->n_args; i++) e->arg_syms[i] = (int)tda_word(r);
  e->n_in = (int)tda_word(r);
  if (!(e->in = tda_alloc_n((size_t)e->n_in, sizeof *e->in))) return -1;
  for (int i = 0; i < e->n_in; i++) read_arg(r, &e->in[i], 1);
  e->n_out = (int)tda_word(r);
  if (!(e->out = tda_alloc_n((size_t)e->n_out, sizeof *e->out))) return -1;
  for (int i = 0; i < e->n_out; i++) read_arg(r, &e->out[i], 0);
  return read_layout(r, e);
}

/* From the polynomials to the dv table: what an entry and a scan's body
 * both have. */
static int read_layout(tda_rd *r, tda_entry *e) {
  e->n_polys = (int)tda_word(r);
  if (!(e->polys = tda_alloc_n((size_t)e->n_polys, sizeof *e->polys))) return -1;
  for (int i = 0; i < e->n_polys; i++) {
    e->polys[i] = &r->w[r->at];
    r->at += 1 + TDA_TERM_WORDS * (size_t)r->w[r->at];
  }
  e->n_pslots = (int)tda_word(r);
  if (!(e->pslot = tda_alloc_n((size_t)e->n_pslots, sizeof(int)))) return -1;
  for (int i = 0; i < e->n_pslots; i++) e->pslot[i] = (int)tda_word(r);
  if (read_bufs(r, e)) return -1;
  e->n_slots = (int)tda_word(r);
  e->slot_bytes = &r->w[r->at];
  r->at += (size_t)e->n_slots;
  if (read_checks(r, e)) return -1;
  e->n_dv = (int)tda_word(r);
  e->dvdesc = &r->w[r->at];
  r->at += 2 * (size_t)e->n_dv;
  if (!(e->dv = tda_alloc_n((size_t)e->n_dv, sizeof(int64_t)))) return -1;
  return make_sig(e);
}

int tda_read_body(tda_rd *r, tda_entry *e, const tda_entry *outer) {
  size_t n = strlen(outer->name) + 1;
  if (!(e->name = td_malloc(n))) return -1;
  memcpy(e->name, outer->name, n);
  e->n_syms = outer->n_syms;
  e->symvals = outer->symvals;
  e->in = tda_alloc_n(0, sizeof *e->in);
  e->out = tda_alloc_n(0, sizeof *e->out);
  e->arg_syms = tda_alloc_n(0, sizeof(int));
  if (!e->in || !e->out || !e->arg_syms || read_layout(r, e)) return -1;
  e->sizes.syms = (const char *const *)outer->sym_names;
  return 0;
}

void tda_free_body(tda_entry *e) {
  e->symvals = NULL;   /* the outer entry's */
  tda_free_entry(e);
}

int tda_read_prints(tda_rd *r, tda_entry *e) {
  e->n_prints = (int)tda_word(r);
  if (!(e->prints = tda_alloc_n((size_t)e->n_prints, sizeof *e->prints))) return -1;
  for (int i = 0; i < e->n_prints; i++) {
    tda_print *pr = &e->prints[i];
    pr->n = (int)tda_word(r);
    if (!(pr->parts = tda_alloc_n((size_t)pr->n, sizeof *pr->parts))) return -1;
    for (int k = 0; k < pr->n; k++)
      if (tda_word(r) == 0) {
        if (!(pr->parts[k].text = tda_str(r))) return -1;
      } else {
        read_arg(r, &pr->parts[k].arg, 0);
      }
  }
  return 0;
}

void tda_free_entry(tda_entry *e) {
  for (int k = 0; e->in && k < e->n_in; k++) td_free((void *)e->in[k].name);
  for (int k = 0; e->sym_names && k < e->n_syms; k++) td_free(e->sym_names[k]);
  for (int k = 0; e->prints && k < e->n_prints; k++) {
    for (int j = 0; e->prints[k].parts && j < e->prints[k].n; j++) td_free(e->prints[k].parts[j].text);
    td_free(e->prints[k].parts);
  }
  for (int k = 0; e->checks && k < e->n_checks; k++) td_free((void *)e->checks[k].text);
  for (int k = 0; e->check_where && k < e->n_checks; k++) td_free(e->check_where[k]);
  void *own[] = {e->name,   e->arg_syms, e->in,      e->out,        e->polys,     e->pslot,
                 e->bkind,  e->bindex,   e->bbytes,  e->bound,      e->prints,    e->symvals,
                 e->dv,     e->sym_names, e->sig_polys, e->sig_monos, e->sig_in, e->checks,
                 e->check_where, e->update_param};
  for (size_t k = 0; k < sizeof own / sizeof *own; k++) td_free(own[k]);
}

int tda_read_param(tda_rd *r, tda_param *p) {
  p->name = tda_str(r);
  p->dtype = (int)tda_word(r);
  p->rank = (int)tda_word(r);
  for (int k = 0; k < p->rank; k++) p->shape[k] = tda_word(r);
  p->data_off = tda_word(r);
  p->bytes = (size_t)tda_word(r);
  int64_t kind = tda_word(r), a = tda_word(r), b = tda_word(r);
  p->init.kind = (td_init_kind)kind;
  memcpy(&p->init.a, &a, sizeof a);
  memcpy(&p->init.b, &b, sizeof b);
  p->init.seed = (uint64_t)tda_word(r);
  p->init.stream = (uint64_t)tda_word(r);
  return p->name ? 0 : -1;
}

int tda_param_initial(const tda_param *p, const unsigned char *data, void *dst, char *err, size_t errlen) {
  if (p->data_off >= 0) {
    if (!data) return snprintf(err, errlen, "parameter '%s': the library holds no weights", p->name), -1;
    memcpy(dst, data + p->data_off, p->bytes);
    return 0;
  }
  td_err e;
  size_t each = td_dtype_size((td_dtype)p->dtype);
  if (!each || td_init_fill(dst, (td_dtype)p->dtype, (int64_t)(p->bytes / each), &p->init, &e))
    return snprintf(err, errlen, "parameter '%s': %s", p->name, each ? e.msg : "unknown dtype"), -1;
  return 0;
}

/* ---- sizes ---- */

size_t tda_arg_bytes(const tda_entry *e, const tda_arg *a) {
  size_t n = td_dtype_size((td_dtype)a->dtype);
  for (int k = 0; k < a->rank; k++) n *= (size_t)tda_dim_eval(e, a->dims[k]);
  return n;
}

int tda_slots(const tda_entry *e, size_t *slot, size_t *total) {
  *total = 0;
  for (int s = 0; s < e->n_slots; s++) {
    slot[s] = *total;
    int64_t n = tda_dim_eval(e, e->slot_bytes[s]);
    if (n < 0 || (uint64_t)n > ((uint64_t)1 << 48)) return -1;
    *total += ((size_t)n + 63) & ~(size_t)63;
  }
  return 0;
}

/* ---- weights ---- */

int tda_check_head(int abi, uint64_t sig, const int64_t *desc, int64_t magic, int lib_abi, char *err, size_t errlen) {
  if (abi != lib_abi || !desc || desc[1] != lib_abi) {
    set_err(err, errlen, "the header's ABI version (%d) is not the library's (%d): rebuild the program against this "
            "artifact's header", abi, lib_abi);
    return -1;
  }
  if (desc[0] != magic) {
    set_err(err, errlen, "not an artifact's descriptor");
    return -1;
  }
  if ((uint64_t)desc[3] != sig) {
    set_err(err, errlen, "this library holds another model than the header's (signature %016llx, the header's "
            "%016llx): rebuild the program against this library's header, or load the library it was built with",
            (unsigned long long)desc[3], (unsigned long long)sig);
    return -1;
  }
  return 0;
}

int tda_update_pending(const void *addr, char *err, size_t errlen) {
  char self[4096], pending[4400];
  const char *file = NULL;
  Dl_info info;
  if (dladdr(addr, &info) && info.dli_fname && strchr(info.dli_fname, '/')) file = info.dli_fname;
  else {   /* the executable: its link map has no name */
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) {
      self[k] = 0;
      file = self;
    }
  }
  if (!file) return 0;
  const char *base = strrchr(file, '/') + 1;
  size_t n = strlen(base);
  if (n > 3 && !strcmp(base + n - 3, ".so")) n -= 3;
  snprintf(pending, sizeof pending, "%.*s.%.*s" TDA_COMMIT_DIR, (int)(base - file), file, (int)n, base);
  struct stat st;
  if (lstat(pending, &st)) return 0;
  snprintf(err, errlen, "%s exists: an update of this artifact by tdsl build was interrupted, so its files may be "
           "of two builds; run tdsl build again", pending);
  return 1;
}

int tda_read_weights(const tda_param *p, int n, const char *what, const char *path, td_tensor_map *w, char *err,
                     size_t errlen) {
  td_err e;
  td_st_file f;
  td_sig_arg *want = tda_alloc_n((size_t)n, sizeof *want);
  int rc = -1;
  if (!want) td_err_set(&e, "out of memory");
  else if (td_safetensors_open(path, &f, &e) == 0) {
    for (int i = 0; i < n; i++) want[i] = (td_sig_arg){p[i].name, (td_dtype)p[i].dtype, p[i].rank, p[i].shape};
    rc = td_sig_check_weights(path, what, want, n, f.items, f.n, &e);
    if (rc == 0) rc = td_safetensors_load_all(&f, w, &e);
    td_safetensors_close(&f);
  }
  td_free(want);
  if (rc) set_err(err, errlen, "%s", e.msg);
  return rc;
}

void tda_label_add(char *label, size_t n, const char *entry) {
  size_t len = strlen(label);
  if (len + 1 < n) snprintf(label + len, n - len, "%s%s", len ? ", " : "", entry);
}

/* ---- the description and binding (for callers without the header) ---- */

/* A shape as JSON: a literal size as a number, a symbolic one as its text
 * ("N", "2*N + 1"). */
static void describe_dims(td_strbuf *b, const td_sizes *s, int rank, const int64_t *dims) {
  char ds[256];
  td_sb_puts(b, "[");
  for (int k = 0; k < rank; k++) {
    td_sb_puts(b, k ? ", " : "");
    if (TD_DIM_IS_CONST(dims[k])) td_sb_printf(b, "%lld", (long long)dims[k]);
    else td_sb_json_str(b, td_sizes_dim_str(s, dims[k], ds, sizeof ds));
  }
  td_sb_puts(b, "]");
}

/* "dtype", "shape" and "type" (the signature's text, "f32[N, 784]") of a. */
static void describe_arg(td_strbuf *b, const td_sizes *s, const tda_arg *a) {
  char ts[512];
  td_sb_puts(b, "\"dtype\": ");
  td_sb_json_str(b, td_dtype_name((td_dtype)a->dtype));
  td_sb_puts(b, ", \"shape\": ");
  describe_dims(b, s, a->rank, a->dims);
  td_sb_puts(b, ", \"type\": ");
  td_sb_json_str(b, td_sizes_type_str(s, (td_dtype)a->dtype, a->rank, a->dims, ts, sizeof ts));
}

static void describe_entry(td_strbuf *b, const tda_entry *e) {
  td_sb_puts(b, "{\"name\": ");
  td_sb_json_str(b, e->name);
  td_sb_puts(b, ", \"sizes\": [");
  for (int a = 0; a < e->n_args; a++) {
    td_sb_puts(b, a ? ", " : "");
    td_sb_json_str(b, e->sym_names[e->arg_syms[a]]);
  }
  td_sb_puts(b, "],\n    \"inputs\": [");
  for (int i = 0; i < e->n_in; i++) {
    td_sb_puts(b, i ? ", {\"name\": " : "{\"name\": ");
    td_sb_json_str(b, e->in[i].name);
    td_sb_puts(b, ", ");
    describe_arg(b, &e->sizes, &e->in[i]);
    td_sb_puts(b, "}");
  }
  td_sb_puts(b, "],\n    \"outputs\": [");
  for (int i = 0; i < e->n_out; i++) {
    td_sb_puts(b, i ? ", {" : "{");
    describe_arg(b, &e->sizes, &e->out[i]);
    td_sb_puts(b, "}");
  }
  td_sb_printf(b, "], \"prints\": %d,\n    \"updates\": [", e->n_prints);
  for (int u = 0; u < e->n_updates; u++) td_sb_printf(b, "%s%d", u ? ", " : "", e->update_param[u]);
  td_sb_puts(b, "]}");
}

char *tda_describe(int abi, const tda_param *p, int n_params, tda_entry *(*entry)(void *m, int ei), void *m,
                   int n_entries) {
  td_strbuf b = {0};
  td_sb_printf(&b, "{\"abi\": %d,\n \"dtypes\": [", abi);
  for (int t = 0; t < TD_DTYPE_COUNT; t++) {
    td_sb_puts(&b, t ? ", " : "");
    td_sb_json_str(&b, td_dtype_name((td_dtype)t));
  }
  td_sb_puts(&b, "],\n \"entries\": [");
  for (int ei = 0; ei < n_entries; ei++) {
    td_sb_puts(&b, ei ? ",\n   " : "\n   ");
    describe_entry(&b, entry(m, ei));
  }
  td_sb_puts(&b, "],\n \"params\": [");
  for (int i = 0; i < n_params; i++) {
    td_sb_puts(&b, i ? ",\n   {\"name\": " : "\n   {\"name\": ");
    td_sb_json_str(&b, p[i].name);
    td_sb_puts(&b, ", \"dtype\": ");
    td_sb_json_str(&b, td_dtype_name((td_dtype)p[i].dtype));
    td_sb_puts(&b, ", \"shape\": ");
    describe_dims(&b, NULL, p[i].rank, p[i].shape);
    td_sb_printf(&b, ", \"bytes\": %zu}", p[i].bytes);
  }
  td_sb_puts(&b, "]}\n");
  if (b.oom) td_free(b.s);
  return b.oom ? NULL : b.s;
}

/* The caller's input i (its dtype code, rank and shape) as a header-only
 * tensor, which runtime/sig.c checks; 0, or -1 with a message in err. */
static int bind_input(const tda_entry *e, int i, int dtype, int rank, const int64_t *shape, td_tensor *t, char *err,
                      size_t errlen) {
  const char *name = e->in[i].name;
  if (dtype < 0 || dtype >= TD_DTYPE_COUNT) {
    set_err(err, errlen, "%s: argument '%s': dtype code %d is not a tdsl dtype", e->name, name, dtype);
    return -1;
  }
  if (rank < 0 || rank > TD_MAX_RANK) {
    set_err(err, errlen, "%s: argument '%s' has %d axes; a tdsl tensor has at most %d", e->name, name, rank,
            TD_MAX_RANK);
    return -1;
  }
  for (int k = 0; k < rank; k++)
    if (shape[k] < 0) {
      set_err(err, errlen, "%s: argument '%s': size %d is negative", e->name, name, k);
      return -1;
    }
  memset(t, 0, sizeof *t);
  t->dtype = (td_dtype)dtype;
  t->rank = rank;
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  return 0;
}

int tda_bind(tda_entry *e, const int *dtypes, const int *ranks, const int64_t *shapes, int64_t *syms,
             int64_t *out_shapes, char *err, size_t errlen) {
  td_tensor *t = tda_alloc_n((size_t)e->n_in, sizeof *t);
  const td_tensor **got = tda_alloc_n((size_t)e->n_in, sizeof *got);
  int64_t *save = tda_alloc_n((size_t)e->n_syms, sizeof *save);
  int rc = 0;
  if (!t || !got || !save) {
    set_err(err, errlen, "out of memory");
    rc = 3;
  }
  const int64_t *at = shapes;
  for (int i = 0; rc == 0 && i < e->n_in; at += ranks[i], i++) {
    rc = bind_input(e, i, dtypes[i], ranks[i], at, &t[i], err, errlen) ? 1 : 0;
    got[i] = &t[i];
  }
  /* The binding is made in the entry's symvals, where the size checks and
   * tda_dim_eval read it, and undone after: what the last call prepared
   * for its sizes stays valid, so a next call with them stays fast. */
  int saved = rc == 0;
  if (saved) memcpy(save, e->symvals, (size_t)e->n_syms * sizeof *save);
  td_err why;
  if (rc == 0 && td_sig_bind(&e->sizes, e->sig_in, e->n_in, got, e->symvals, &why)) {
    set_err(err, errlen, "%s: %s", e->name, why.msg);
    rc = 1;
  }
  if (rc == 0 && tda_check_sizes(e, err, errlen)) rc = 1;
  for (int a = 0; rc == 0 && a < e->n_args; a++) syms[a] = e->symvals[e->arg_syms[a]];
  for (int o = 0; rc == 0 && o < e->n_out; o++)
    for (int k = 0; k < e->out[o].rank; k++) *out_shapes++ = tda_dim_eval(e, e->out[o].dims[k]);
  if (saved) memcpy(e->symvals, save, (size_t)e->n_syms * sizeof *save);
  td_free(t);
  td_free(got);
  td_free(save);
  return rc;
}

/* ---- prints ---- */


/* Appends the text of printed value a, its bytes fetched; 0 or a code
 * (3: out of memory). */
static int add_value(td_strbuf *b, const tda_entry *e, const tda_arg *a, tda_fetch_fn fetch, void *ud) {
  td_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = (td_dtype)a->dtype;
  t.rank = a->rank;
  t.numel = 1;
  for (int k = 0; k < a->rank; k++) t.numel *= t.shape[k] = tda_dim_eval(e, a->dims[k]);
  t.refcount = 1;
  int owned = 0, rc = fetch(ud, a, (size_t)t.numel * td_dtype_size(t.dtype), &t.data, &owned);
  if (rc) return rc;
  char *s = td_tensor_format(&t, 1000), shp[256];
  if (owned) td_free(t.data);
  if (!s) return 3;
  td_sb_add_aligned(b, s);
  td_free(s);
  if (t.rank > 0) {
    td_sb_puts(b, " (");
    td_sb_puts(b, td_shape_str(t.dtype, t.rank, t.shape, shp, sizeof shp));
    td_sb_puts(b, ")");
  }
  return 0;
}

int tda_run_print(const tda_entry *e, int i, tda_fetch_fn fetch, void *ud, void (*print)(void *, const char *),
                  void *print_ud, char *err, size_t errlen) {
  if (!print || i < 0 || i >= e->n_prints) return 0;
  td_strbuf b = {0};
  int rc = 0;
  for (int k = 0; k < e->prints[i].n && !rc; k++) {
    const tda_part *p = &e->prints[i].parts[k];
    if (k) td_sb_puts(&b, " ");
    if (p->text) td_sb_puts(&b, p->text);
    else rc = add_value(&b, e, &p->arg, fetch, ud);
  }
  td_sb_puts(&b, "\n");
  if ((!rc && b.oom) || rc == 3) {
    rc = 3;
    set_err(err, errlen, "out of memory");
  }
  if (!rc) print(print_ud, b.s);
  td_free(b.s);
  return rc;
}

int tda_run_prints(const tda_entry *e, tda_fetch_fn fetch, void *ud, void (*print)(void *, const char *),
                   void *print_ud, char *err, size_t errlen) {
  for (int i = 0; i < e->n_prints && print; i++) {
    int rc = tda_run_print(e, i, fetch, ud, print, print_ud, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

/* ---- the --exe command line ---- */

static int exe_usage(const char *prog, const char *msg) {
  fprintf(stderr, "%s: %s\nusage: %s [--entry NAME] --in ARG=FILE.npy... [--out FILE.npy]... "
          "[--weights W.safetensors] [--bench N]\n", prog, msg, prog);
  return 2;
}

int tda_exe_parse(int argc, char **argv, tda_exe_opts *o) {
  memset(o, 0, sizeof *o);
  o->in_name = td_calloc((size_t)argc + 1, sizeof *o->in_name);
  o->in_path = td_calloc((size_t)argc + 1, sizeof *o->in_path);
  o->out = td_calloc((size_t)argc + 1, sizeof *o->out);
  if (!o->in_name || !o->in_path || !o->out) {
    fprintf(stderr, "%s: error: out of memory\n", argv[0]);
    return 1;
  }
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
    else if (!strcmp(a, "--out")) o->out[o->n_out++] = v;
    else if (!strcmp(a, "--in") && strchr(v, '=') > v && strchr(v, '=')[1]) {
      char *eq = strchr(argv[i], '=');
      *eq = 0;                 /* NAME=FILE.npy: the name ends here */
      o->in_name[o->n_in] = argv[i];
      o->in_path[o->n_in++] = eq + 1;
    } else return exe_usage(argv[0], "--in needs ARG=FILE.npy");
  }
  return 0;
}

void tda_exe_opts_free(tda_exe_opts *o) {
  td_free(o->in_name);
  td_free(o->in_path);
  td_free(o->out);
  o->in_name = o->in_path = o->out = NULL;
}

/* The state of one command line run. */
typedef struct exe_run {
  const tda_exe_model *x;
  const tda_exe_opts *o;
  tda_entry *e;
  int ei;
  td_tensor **in, **out;     /* the entry's, n_in and n_out of them */
  int64_t *syms;             /* its n_args symbolic sizes */
  void **args;               /* n_in + n_out */
  char err[sizeof(td_err)];
  int problems;              /* err is a list of problems, one per line */
} exe_run;

static int run_fail(exe_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_fail(exe_run *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  return -1;
}

/* A failure of the model: its message. */
static int model_fail(exe_run *r) { return run_fail(r, "%s", r->x->error(r->x->m)); }

static int exe_open(exe_run *r, td_npy_file *files);

/* The entry's .npy inputs, then the weights, each checked from its header
 * (runtime/sig.c, as `tdsl run` checks them) before any data is read; the
 * entry's sizes are bound from the inputs' shapes.  The run's arrays are
 * sized for the entry (any number of inputs, outputs and sizes). */
static int exe_inputs(exe_run *r) {
  tda_entry *e = r->e;
  td_npy_file *files = td_calloc((size_t)e->n_in + 1, sizeof *files);
  r->in = td_calloc((size_t)e->n_in + 1, sizeof *r->in);
  r->out = td_calloc((size_t)e->n_out + 1, sizeof *r->out);
  r->syms = td_calloc((size_t)e->n_args + 1, sizeof *r->syms);
  r->args = td_calloc((size_t)e->n_in + (size_t)e->n_out + 1, sizeof *r->args);
  if (!files || !r->in || !r->out || !r->syms || !r->args) {
    td_free(files);
    return run_fail(r, "out of memory");
  }
  int rc = exe_open(r, files);
  td_free(files);
  return rc;
}

static int exe_open(exe_run *r, td_npy_file *files) {
  tda_entry *e = r->e;
  const tda_exe_opts *o = r->o;
  td_err err;
  if (td_sig_open_inputs(&e->sizes, e->name, e->sig_in, e->n_in, o->in_name, o->in_path, o->n_in, files, e->symvals,
                         &err)) {
    r->problems = 1;
    return run_fail(r, "%s", err.msg);
  }
  e->have = 0;
  for (int a = 0; a < e->n_args; a++) r->syms[a] = e->symvals[e->arg_syms[a]];
  if (o->weights && r->x->load_weights(r->x->m, o->weights)) {
    td_sig_close_inputs(files, e->n_in);
    return model_fail(r);
  }
  if (td_sig_load_inputs(files, e->n_in, r->in, &err)) return run_fail(r, "%s", err.msg);
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
static int exe_bench(exe_run *r, long n) {
  const tda_exe_model *x = r->x;
  int64_t *t = td_malloc((size_t)n * sizeof *t);
  if (!t) return run_fail(r, "out of memory");
  x->quiet(x->m);
  tda_call_fn call = x->direct ? x->direct(x->m, r->ei) : NULL;
  if (!call) call = x->call;
  int rc = call(x->m, r->ei, r->syms, r->args);
  int64_t t0 = now_ns();
  for (long i = 0; i < n && rc == 0; i++) rc = call(x->m, r->ei, r->syms, r->args);
  int64_t total = now_ns() - t0;
  for (long i = 0; i < n && rc == 0; i++) {
    int64_t a = now_ns();
    rc = call(x->m, r->ei, r->syms, r->args);
    t[i] = now_ns() - a;
  }
  if (rc == 0) {
    qsort(t, (size_t)n, sizeof *t, cmp_i64);
    printf("%s: %ld calls, per-call latency median %lld ns, mean %.1f ns, min %lld ns\n", r->e->name, n,
           (long long)t[n / 2], (double)total / (double)n, (long long)t[0]);
  }
  td_free(t);
  return rc ? model_fail(r) : 0;
}

static int exe_outputs(exe_run *r) {
  const tda_entry *e = r->e;
  const tda_exe_opts *o = r->o;
  if (o->n_out && o->n_out != e->n_out)
    return run_fail(r, "%s returns %d values but %d --out files were given", e->name, e->n_out, o->n_out);
  for (int i = 0; i < e->n_out; i++) {
    td_err err;
    if (o->n_out) {
      if (td_npy_write(o->out[i], r->out[i], &err)) return run_fail(r, "%s", err.msg);
      continue;
    }
    char *text = td_tensor_format(r->out[i], 1000), t[256];
    if (e->n_out > 1) printf("output %d: ", i);
    printf("%s\n%s\n", td_shape_str(r->out[i]->dtype, r->out[i]->rank, r->out[i]->shape, t, sizeof t),
           text ? text : "?");
    td_free(text);
  }
  return 0;
}

static int exe_steps(exe_run *r) {
  const tda_exe_model *x = r->x;
  const tda_exe_opts *o = r->o;
  while (o->entry && r->ei < x->n_entries && strcmp(x->entry(x->m, r->ei)->name, o->entry)) r->ei++;
  if (r->ei == x->n_entries) return run_fail(r, "no entry point '%s'", o->entry);
  tda_entry *e = r->e = x->entry(x->m, r->ei);
  if (exe_inputs(r)) return -1;
  if (tda_check_sizes(e, r->err, sizeof r->err)) return -1;   /* before the outputs' shapes are used */
  for (int i = 0; i < e->n_out; i++) {
    int64_t shape[TDA_MAXR];
    td_err err;
    for (int k = 0; k < e->out[i].rank; k++) shape[k] = tda_dim_eval(e, e->out[i].dims[k]);
    if (!(r->out[i] = td_tensor_new((td_dtype)e->out[i].dtype, e->out[i].rank, shape, &err)))
      return run_fail(r, "%s", err.msg);
    r->args[e->n_in + i] = r->out[i]->data;
  }
  for (int i = 0; i < e->n_in; i++) r->args[i] = r->in[i]->data;
  if (o->bench > 0) return exe_bench(r, o->bench);
  if (x->call(x->m, r->ei, r->syms, r->args)) return model_fail(r);
  return exe_outputs(r);
}

int tda_exe_run(const tda_exe_model *x, const tda_exe_opts *o, const char *argv0) {
  exe_run *r = td_calloc(1, sizeof *r);
  if (!r) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 1;
  }
  r->x = x;
  r->o = o;
  int rc = exe_steps(r) ? 1 : 0;
  if (rc && r->problems) td_sig_print_errors(stderr, argv0, r->err);
  else if (rc) fprintf(stderr, "%s: error: %s\n", argv0, r->err);
  for (int i = 0; r->e && r->in && i < r->e->n_in; i++) td_tensor_release(r->in[i]);
  for (int i = 0; r->e && r->out && i < r->e->n_out; i++) td_tensor_release(r->out[i]);
  td_free(r->in);
  td_free(r->out);
  td_free(r->syms);
  td_free(r->args);
  td_free(r);
  return rc;
}

int tda_weights_args(int have_model, const char *path, char *err, size_t errlen, char *model_err,
                     size_t model_errlen) {
  if (have_model && path) return 0;
  if (err && errlen) snprintf(err, errlen, "%s", !have_model ? "no model (create returned NULL)" : "no weights file (path is NULL)");
  if (have_model) snprintf(model_err, model_errlen, "no weights file (path is NULL)");
  return -1;
}

int tda_read_scan_io(tda_rd *r, const tda_scan_io *io) {
  *io->steps = tda_word(r);
  *io->reverse = (int)tda_word(r);
  *io->nc = (int)tda_word(r);
  *io->nx = (int)tda_word(r);
  *io->idx = (int)tda_word(r);
  *io->ni = (int)tda_word(r);
  int64_t **iv[3] = {io->in_buf, io->sliced, io->slice};
  for (int i = 0; i < 3; i++)
    if (!(*iv[i] = tda_alloc_n((size_t)*io->ni, sizeof(int64_t)))) return -1;
  for (int j = 0; j < *io->ni; j++)
    for (int i = 0; i < 3; i++) (*iv[i])[j] = tda_word(r);
  *io->no = (int)tda_word(r);
  int64_t **ov[4] = {io->out_buf, io->out_bbuf, io->out_bytes, io->direct};
  for (int i = 0; i < 4; i++)
    if (!(*ov[i] = tda_alloc_n((size_t)*io->no, sizeof(int64_t)))) return -1;
  for (int o = 0; o < *io->no; o++)
    for (int i = 0; i < 4; i++) (*ov[i])[o] = tda_word(r);
  return 0;
}

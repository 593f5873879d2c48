/* compiled.c - compiling a plan with libgccjit, and running the result.
 *
 * td_compile: picks -march from the CPU (x86-64-v4 with AVX-512, v3 with
 * AVX2+FMA, else v2) and either finds the code in the compile cache (a
 * shared object per distinct key: plan_key.c; a hit makes no gccjit
 * context) or builds every kernel (codegen_cpu.c) in one gccjit context
 * and compiles it (into the cache, or in memory), then looks up each
 * kernel's code.  With keep_c the context is built in any case, for its
 * C-like dump.  The context is released right after; the gcc_jit_result
 * or the dlopen handle lives in the td_compiled.
 *
 * td_compiled_run: per call, binds the symbols from the inputs; when they
 * differ from the previous call's (or on the first call) it re-evaluates
 * the layout: parameter shapes, the runtime table's sizes, the arena of
 * temporaries (slot sizes rounded up to 64 bytes; kept and grown across
 * calls), output shapes, scratch, and each kernel's split.  Then, every
 * call: random streams mixed with the call index, fresh outputs, the
 * kernels in order.  A kernel with a parallel loop whose work is large
 * enough (see split) is cut into one range of that loop per thread of the
 * pool (runtime/pool.h); each thread gets its own scratch and status.  Matmul
 * kernels with a parameter B read a packed copy kept here, made again when
 * the parameter tensor changes (prepack_params, keyed on td_tensor.id).
 */
#include "compiler/compiled.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/checks.h"
#include "lang/print.h"
#include "runtime/mem.h"
#include "runtime/fileio.h"
#include "runtime/philox.h"
#include "compiler/cache.h"
#include "compiler/jit_impl.h"
#include "runtime/pool.h"
#include "runtime/phase_time.h"

/* What td_compiled_run derives from the bound sizes alone, kept for the
 * next call: valid while the symbol values and the pool's thread count are
 * the same. */
typedef struct layout {
  int valid, threads;
  int64_t *syms;            /* the symbol values it was made for */
  int64_t *dv;              /* the runtime table (random streams: per call) */
  void **bufs;              /* per buffer; temporaries placed here */
  td_tensor **owned;        /* per buffer: this call's output tensors */
  int64_t *shapes;          /* per buffer, TD_MAX_RANK each: outputs' shapes */
  int64_t *pshapes;         /* per parameter, TD_MAX_RANK each */
  int64_t *ishapes;         /* per input, TD_MAX_RANK each: the shapes bound */
  int64_t *extent, *ranges; /* per kernel: parallel extent, ranges it is cut into */
} layout;

static void layout_free(layout *l);

/* What a scan's body printed during a call, in eager order (every step's
 * PRINT nodes and nested scans' prints, in the body's node order), kept
 * until td_compiled_run_prints formats it. */
typedef struct plog_ent {
  const td_node *pr;        /* the PRINT node of the body's planned graph */
  td_tensor **vals;         /* its inputs' values at that step */
} plog_ent;
typedef struct plog {
  plog_ent *e;
  int n, cap;
} plog;

struct td_compiled {
  const td_plan *p;
  gcc_jit_result *res;     /* compiled in memory, or */
  void *dl;                /* loaded from the compile cache */
  int cached;              /* found in the cache (not compiled now) */
  int generated;           /* a gccjit context was built (a miss, or keep_c) */
  tdc_kernel_fn *fns;
  tdc_kinfo *info;         /* per kernel: its parallel loop */
  cg_dimref *dims;
  int n_dims;
  char march[32];
  char *key;               /* the compile cache's key (plan_key.c), with a cache */
  int key_dims;            /* the graph's interned sizes when the key was made */
  char *c_text;
  char warning[1200];      /* the first thing that went wrong with the cache, or "" */
  void *arena;             /* temporaries, kept across calls */
  size_t arena_cap;
  void *scratch;            /* threads * scratch_each bytes */
  size_t scratch_cap, scratch_each;
  void **packed;            /* per kernel: its prepacked B (prepack.h), or NULL */
  uint64_t *packed_id;      /* per kernel: td_tensor.id of the parameter packed */
  layout lay;               /* what the last call's sizes made (td_compiled_run) */
  td_compiled **sub;        /* per kernel: a scan's compiled body, else NULL */
  void *alt;                /* a scan's body: its carries' second buffers (run_scan) */
  size_t alt_cap;
  plog *plogs;              /* per kernel: what a scan printed this call (run_scan), or NULL */
};

static void plog_clear(plog *l) {
  for (int i = 0; i < l->n; i++) {
    for (int k = 0; k < l->e[i].pr->n_in; k++) td_tensor_release(l->e[i].vals[k]);
    td_free(l->e[i].vals);
  }
  l->n = 0;
}

/* Forgets what c and its bodies printed (a call that failed half way). */
static void plogs_clear(td_compiled *c) {
  for (int k = 0; k < c->p->n_kernels; k++) {
    if (c->plogs) plog_clear(&c->plogs[k]);
    if (c->sub && c->sub[k]) plogs_clear(c->sub[k]);
  }
}

static int plog_push(plog *l, plog_ent e, td_err *err) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    plog_ent *ne = td_realloc(l->e, (size_t)cap * sizeof *ne);
    if (!ne) return td_err_set(err, "out of memory (printed values)");
    l->e = ne;
    l->cap = cap;
  }
  l->e[l->n++] = e;
  return 0;
}

/* Appends src's entries to dst, emptying src. */
static int plog_move(plog *dst, plog *src, td_err *err) {
  for (int i = 0; i < src->n; i++)
    if (plog_push(dst, src->e[i], err)) {
      memmove(src->e, src->e + i, (size_t)(src->n - i) * sizeof *src->e);
      src->n -= i;
      return -1;
    }
  src->n = 0;
  return 0;
}

/* Does plan p, or a scan body in it, print? */
static int plan_prints(const td_plan *p) {
  for (int i = 0; i < p->g->n_nodes; i++)
    if (p->g->nodes[i].op == TD_IR_PRINT) return 1;
  for (int k = 0; k < p->n_kernels; k++)
    if (p->kernels[k].kind == TD_KERN_SCAN && plan_prints(p->kernels[k].body)) return 1;
  return 0;
}

/* The scan kernel of p whose root is node n, or -1. */
static int scan_kernel_of(const td_plan *p, int n) {
  for (int k = 0; k < p->n_kernels; k++)
    if (p->kernels[k].kind == TD_KERN_SCAN && p->kernels[k].root == n) return k;
  return -1;
}

/* ---- compiling ------------------------------------------------------------------- */

const char *td_detect_march(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-64-v3";
  return "x86-64-v2";
#else
  return "native";
#endif
}

/* Every dynamic-loader call tdsl makes for compiled code, its own dlopen,
 * dlsym and dlclose and libgccjit's (gcc_jit_context_compile dlopens the
 * object it built, gcc_jit_result_release dlcloses it), is made under
 * dl_mu.  glibc serialises dlopen and dlclose itself, but on a lock inside
 * ld.so that ThreadSanitizer cannot see: two threads loading and freeing
 * the same cached object (one link map, reference-counted) were reported
 * as a race in _dl_close_worker.  With dl_mu the order is one TSan sees,
 * at no cost worth measuring (the calls are short; an in-memory compile
 * holds it through its compilation, which libgccjit's own mutex
 * serialises anyway, so only cache hits of other threads wait on it). */
static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;

static void *dl_open(const char *path) {
  pthread_mutex_lock(&dl_mu);
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  pthread_mutex_unlock(&dl_mu);
  return dl;
}

static void *dl_sym(void *dl, const char *name) {
  pthread_mutex_lock(&dl_mu);
  void *p = dlsym(dl, name);
  pthread_mutex_unlock(&dl_mu);
  return p;
}

static void dl_close(void *dl) {
  pthread_mutex_lock(&dl_mu);
  dlclose(dl);
  pthread_mutex_unlock(&dl_mu);
}

/* The largest dump or cached object read back. */
#define CACHE_FILE_MAX ((size_t)1 << 30)

/* The gccjit dump of ctx as a td_malloc'd string (NULL on failure). */
static char *dump_text(gcc_jit_context *ctx) {
  const char *dir = getenv("TMPDIR");
  char path[512], *text = NULL;
  size_t n;
  int why;
  snprintf(path, sizeof path, "%s/tdsl-kernels-XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) return NULL;
  close(fd);
  gcc_jit_context_dump_to_file(ctx, path, 0);
  if (td_io_read_all(path, CACHE_FILE_MAX, &text, &n, &why)) text = NULL;
  unlink(path);
  return text;
}

/* Records the first warning of a compilation (the CLI prints it). */
static void warn(td_compiled *c, const char *what, const char *how) {
  if (!c->warning[0]) snprintf(c->warning, sizeof c->warning, "%s; %s", what, how);
}

/* ---- the compile cache ---------------------------------------------------------------- */

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* An entry's identity: h names its files (FNV-1a of the key's text), h2
 * is a second, independent hash of the same bytes; both are compiled into
 * its shared object as tdsl_cache_key. */
typedef struct cache_entry {
  uint64_t h, h2;
  char dir[900], stem[20], so[1000], key[1000], sum[1000];
} cache_entry;

#define KEY_SYMBOL "tdsl_cache_key"
/* What td_compile derives from the generator besides the code (c->info,
 * c->dims), stored in the shared object so that a hit needs no gccjit
 * context: meta_head, then the tdc_kinfo of every kernel, then the
 * cg_dimref entries, then the size polynomials the generator interned
 * into the graph (their td_dims appear in the two tables), each as its
 * term count and terms, to be interned again, in order, on a hit. */
#define META_SYMBOL "tdsl_cache_meta"
typedef struct meta_head {
  uint64_t magic;
  int64_t n_kernels, n_dims, kinfo_size, dimref_size, mono_size;
  int64_t key_dims, n_polys;   /* the graph's dims before generation; how many it added */
} meta_head;
#define META_MAGIC 0x74646d6574613032ull   /* "tdmeta02" */

static uint64_t fnv1a(const char *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* A multiply-rotate hash, unrelated to FNV-1a's structure. */
static uint64_t mixhash(const char *s, uint64_t h) {
  for (; *s; s++) {
    h = (h + (unsigned char)*s) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  return h;
}

/* text: the key (its header names the version, -O and -march). */
static void entry_names(cache_entry *e, const char *text) {
  e->h = fnv1a(text, strlen(text), 14695981039346656037ull);
  e->h2 = mixhash(text, 0x243f6a8885a308d3ull);
  snprintf(e->stem, sizeof e->stem, "%016llx", (unsigned long long)e->h);
  snprintf(e->so, sizeof e->so, "%s/%s.so", e->dir, e->stem);
  snprintf(e->key, sizeof e->key, "%s/%s.key", e->dir, e->stem);
  snprintf(e->sum, sizeof e->sum, "%s/%s.sum", e->dir, e->stem);
}

/* Is the regular file at path exactly text? */
static int same_text(const char *path, const char *text) {
  char *got;
  size_t n;
  int why, same = td_io_read_all(path, CACHE_FILE_MAX, &got, &n, &why) == 0 && n == strlen(text) &&
                  !memcmp(got, text, n);
  td_free(got);
  return same;
}

/* FNV-1a of a regular file's bytes into *h; 0, or -1 when it cannot be read. */
static int hash_file(const char *path, uint64_t *h) {
  char *data;
  size_t n;
  int why;
  if (td_io_read_all(path, CACHE_FILE_MAX, &data, &n, &why)) return -1;
  *h = fnv1a(data, n, 14695981039346656037ull);
  td_free(data);
  return 0;
}

/* The checksum file next to a cached object: "<fnv1a of the .so>\n". */
static int sum_matches(const char *sum_path, const char *so_path) {
  char *text;
  size_t n;
  int why;
  if (td_io_read_all(sum_path, 64, &text, &n, &why)) return 0;
  char *end;
  unsigned long long want = strtoull(text, &end, 16);
  int ok = end == text + 16 && *end == '\n';
  td_free(text);
  uint64_t got;
  return ok && hash_file(so_path, &got) == 0 && got == (uint64_t)want;
}

/* The exported const unsigned long long tdsl_cache_key[2] = {h, h2}, and
 * tdsl_cache_meta (META_SYMBOL): added after the dump was taken, so the
 * dump shows the kernels only.  -1 when out of memory. */
static int add_entry_symbols(td_compiled *c, gcc_jit_context *ctx, const cache_entry *e) {
  gcc_jit_type *u64 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_UNSIGNED_LONG_LONG);
  gcc_jit_type *arr = gcc_jit_context_new_array_type(ctx, NULL, gcc_jit_type_get_const(u64), 2);
  gcc_jit_lvalue *g = gcc_jit_context_new_global(ctx, NULL, GCC_JIT_GLOBAL_EXPORTED, arr, KEY_SYMBOL);
  unsigned long long v[2] = {e->h, e->h2};
  gcc_jit_global_set_initializer(g, v, sizeof v);
  const td_graph *gr = c->p->g;
  meta_head h = {META_MAGIC, c->p->n_kernels, c->n_dims, (int64_t)sizeof(tdc_kinfo), (int64_t)sizeof(cg_dimref),
                 (int64_t)sizeof(td_mono), c->key_dims, gr->n_dims - c->key_dims};
  size_t ni = (size_t)c->p->n_kernels * sizeof *c->info, nd = (size_t)c->n_dims * sizeof *c->dims;
  size_t n = sizeof h + ni + nd;
  for (int d = c->key_dims; d < gr->n_dims; d++) n += sizeof(int64_t) + (size_t)gr->dims[d].n * sizeof(td_mono);
  unsigned char *m = td_calloc(n, 1);
  if (!m) return -1;
  memcpy(m, &h, sizeof h);
  if (ni) memcpy(m + sizeof h, c->info, ni);
  if (nd) memcpy(m + sizeof h + ni, c->dims, nd);
  size_t at = sizeof h + ni + nd;
  for (int d = c->key_dims; d < gr->n_dims; d++) {
    int64_t terms = gr->dims[d].n;
    memcpy(m + at, &terms, sizeof terms);
    at += sizeof terms;
    memcpy(m + at, gr->dims[d].t, (size_t)terms * sizeof(td_mono));
    at += (size_t)terms * sizeof(td_mono);
  }
  gcc_jit_type *u8 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_UNSIGNED_CHAR);
  arr = gcc_jit_context_new_array_type(ctx, NULL, gcc_jit_type_get_const(u8), (int)n);
  g = gcc_jit_context_new_global(ctx, NULL, GCC_JIT_GLOBAL_EXPORTED, arr, META_SYMBOL);
  gcc_jit_global_set_initializer(g, m, n);
  td_free(m);
  return 0;
}

/* c->info and c->dims from a loaded entry's META_SYMBOL, with the
 * generator's polynomials interned into the graph again (each must get
 * the td_dim it had: the graph's table is the key's); 0, or -1 when the
 * symbol is missing or does not describe this plan. */
static int load_meta(td_compiled *c, void *dl) {
  const unsigned char *m = dl_sym(dl, META_SYMBOL);
  td_graph *g = c->p->g;
  meta_head h;
  if (!m) return -1;
  memcpy(&h, m, sizeof h);
  if (h.magic != META_MAGIC || h.n_kernels != c->p->n_kernels || h.n_dims < 0 || h.n_dims > (1 << 24) ||
      h.kinfo_size != (int64_t)sizeof(tdc_kinfo) || h.dimref_size != (int64_t)sizeof(cg_dimref) ||
      h.mono_size != (int64_t)sizeof(td_mono) || h.key_dims != c->key_dims || h.n_polys < 0 ||
      h.n_polys > (1 << 20) || g->n_dims < c->key_dims)
    return -1;
  size_t ni = (size_t)h.n_kernels * sizeof *c->info, nd = (size_t)h.n_dims * sizeof *c->dims;
  size_t at = sizeof h + ni + nd;
  td_mono *t = td_malloc((size_t)TD_POLY_MAX * sizeof *t);
  if (!t) return -1;
  for (int64_t i = 0; i < h.n_polys; i++) {
    int64_t terms;
    memcpy(&terms, m + at, sizeof terms);
    at += sizeof terms;
    if (terms < 1 || terms > TD_POLY_MAX) {
      td_free(t);
      return -1;
    }
    memcpy(t, m + at, (size_t)terms * sizeof *t);
    at += (size_t)terms * sizeof *t;
    td_poly p = {(int)terms, t};
    if (td_dim_intern(g, &p) != -(td_dim)(c->key_dims + i) - 1) {   /* not the generator's table */
      td_free(t);
      return -1;
    }
  }
  td_free(t);
  tdc_kinfo *info = td_calloc((size_t)h.n_kernels + 1, sizeof *info);
  cg_dimref *dims = h.n_dims ? td_malloc(nd) : NULL;
  if (!info || (h.n_dims && !dims)) {
    td_free(info);
    td_free(dims);
    return -1;
  }
  memcpy(info, m + sizeof h, ni);
  if (nd) memcpy(dims, m + sizeof h + ni, nd);
  td_free(c->info);
  td_free(c->dims);
  c->info = info;
  c->dims = dims;
  c->n_dims = (int)h.n_dims;
  return 0;
}

static int lookup_kernels(td_compiled *c, td_err *err);

/* Loads the shared object at path as e's code: it must carry e's key
 * (another program's object, even with a checksum that matches it, is
 * refused) and every kernel of the plan.  0 with c->dl and c->fns set, or
 * -1 with nothing loaded. */
static int load_entry(td_compiled *c, const cache_entry *e, const char *path) {
  void *dl = dl_open(path);
  const unsigned long long *k = dl ? dl_sym(dl, KEY_SYMBOL) : NULL;
  c->dl = dl;
  if (k && k[0] == e->h && k[1] == e->h2 && load_meta(c, dl) == 0 && lookup_kernels(c, NULL) == 0) return 0;
  if (dl) dl_close(dl);
  c->dl = NULL;
  td_free(c->fns);
  c->fns = NULL;
  return -1;
}

/* Removes what a failed store wrote of entry e. */
static void unstore(const cache_entry *e) {
  unlink(e->sum);
  unlink(e->so);
  unlink(e->key);
}

/* A miss: compiles ctx into e's shared object, loads it from its temporary
 * name (so a library of the same name this process loaded earlier is not
 * what dlopen returns), then renames it into place and writes the key and
 * the checksum.  0 with the code loaded, even when storing it failed (a
 * warning then); -1 when nothing is loaded: *ctx is NULL when the failed
 * compilation left errors in the context, which cannot compile again. */
static int store_entry(td_compiled *c, gcc_jit_context **ctx, const cache_entry *e) {
  char tmp[1100], line[32];
  td_err why;
  uint64_t fh;
  if (td_cache_tmp(e->so, ".so", 1, tmp, sizeof tmp, &why)) {   /* not writable: ctx untouched */
    warn(c, why.msg, "compiled in memory");
    return -1;
  }
  if (add_entry_symbols(c, *ctx, e)) {
    unlink(tmp);
    return -1;
  }
  gcc_jit_context_compile_to_file(*ctx, GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, tmp);
  const char *failed = gcc_jit_context_get_first_error(*ctx);
  if (failed) {   /* a full disk, a directory removed meanwhile: compiled again, in memory */
    snprintf(why.msg, sizeof why.msg, "cannot write the compile cache %s: %s", e->dir, failed);
    warn(c, why.msg, "compiled in memory");
    gcc_jit_context_release(*ctx);
    *ctx = NULL;
    unlink(tmp);
    return -1;
  }
  if (hash_file(tmp, &fh) || load_entry(c, e, tmp)) {
    unlink(tmp);
    return -1;
  }
  snprintf(line, sizeof line, "%016llx\n", (unsigned long long)fh);
  int rc = rename(tmp, e->so) ? td_err_set(&why, "cannot write the compile cache %s: %s", e->dir, strerror(errno)) : 0;
  if (rc == 0) rc = td_cache_write(e->key, c->key, strlen(c->key), &why);
  if (rc == 0) rc = td_cache_write(e->sum, line, strlen(line), &why);
  if (rc) {
    unlink(tmp);
    unstore(e);
    warn(c, why.msg, "the code is not cached");
  }
  td_cache_trim(e->dir, e->stem, td_cache_limit());   /* after every write: keeps the cache under its limit */
  return 0;
}

/* The compile cache (cache.h).  An entry is three files named by a hash
 * of the key (plan_key.c: the graph and the kernel plan, the generator's
 * version and build, -march, -O): the shared object, the key itself
 * (compared byte for byte, so a hash collision cannot load the wrong
 * code) and the shared object's checksum.  Only regular files are read,
 * without blocking (a FIFO or a link to /dev/zero planted there is no
 * entry).  The object carries the entry's key (tdsl_cache_key) and what
 * the generator derives besides the code (tdsl_cache_meta): another
 * program's object, with its own checksum, is unloaded.  A hit needs no
 * gccjit context at all.  An entry whose key differs, whose object does
 * not match its checksum (truncated, corrupt), or that is another's is
 * compiled again and replaced, never used.  A hit marks the entry as used
 * (the .so's mtime); a miss, once it has written its entry, trims the
 * cache to TDSL_CACHE_MAX_MB, least recently used entries first, never the
 * new one.  A directory that cannot be used or written (not a directory,
 * read-only, another user's, full) leaves a warning (td_compiled_warning).
 *
 * cache_open: 0 with e named after c->key, or -1 (no usable directory). */
static int cache_open(td_compiled *c, cache_entry *e) {
  td_err why;
  if (!c->key) return -1;
  if (td_cache_dir(e->dir, sizeof e->dir, &why)) {
    if (why.msg[0]) warn(c, why.msg, "compiled in memory");
    return -1;
  }
  entry_names(e, c->key);
  return 0;
}

/* A hit: 0 with c->dl, c->fns, c->info and c->dims set, or -1. */
static int cache_hit(td_compiled *c, const cache_entry *e) {
  if (!(same_text(e->key, c->key) && sum_matches(e->sum, e->so) && load_entry(c, e, e->so) == 0)) return -1;
  c->cached = 1;
  td_cache_touch(e->so);   /* recently used: evicted last (cache.h) */
  return 0;
}

static int lookup_kernels(td_compiled *c, td_err *err) {
  const td_plan *p = c->p;
  c->fns = td_calloc((size_t)p->n_kernels + 1, sizeof *c->fns);
  if (!c->fns) return td_err_set(err, "out of memory");
  for (int k = 0; k < p->n_kernels; k++) {
    if (p->kernels[k].kind == TD_KERN_SCAN) continue;   /* run from its body's code */
    pthread_mutex_lock(&dl_mu);   /* gcc_jit_result_get_code is a dlsym */
    void *code = c->dl ? dlsym(c->dl, p->kernels[k].name) : gcc_jit_result_get_code(c->res, p->kernels[k].name);
    pthread_mutex_unlock(&dl_mu);
    if (!code)
      return td_err_set(err, "internal compiler error in kernel %s: no code was produced", p->kernels[k].name);
    memcpy(&c->fns[k], &code, sizeof code);
  }
  return 0;
}

/* The kernels' gccjit context (codegen_cpu.c), with c->info and c->dims
 * (made afresh); the arena it used into *a, to free after the context. */
static gcc_jit_context *generate(td_compiled *c, int opt, td_arena **a, td_err *err) {
  const td_plan *plan = c->p;
  cg_dimref *dims = NULL;
  c->generated = 1;
  td_free(c->info);
  td_free(c->dims);
  c->dims = NULL;
  c->info = td_calloc((size_t)plan->n_kernels + 1, sizeof *c->info);
  *a = td_arena_new();
  gcc_jit_context *ctx = c->info && *a ? tdc_codegen(plan, c->march, opt, *a, &dims, &c->n_dims, c->info, err) : NULL;
  if (!c->info || !*a) td_err_set(err, "out of memory");
  if (ctx && c->n_dims && !(c->dims = td_malloc((size_t)c->n_dims * sizeof *c->dims))) {
    td_err_set(err, "out of memory");
    gcc_jit_context_release(ctx);
    return NULL;
  }
  if (ctx && c->n_dims) memcpy(c->dims, dims, (size_t)c->n_dims * sizeof *c->dims);
  return ctx;
}

/* Each scan kernel's body, compiled as a plan of its own (once, whatever
 * the trip count), with the same options but no C text; its cache
 * warning, if any, becomes c's. */
static int compile_bodies(td_compiled *c, const td_compile_opts *opts, td_err *err) {
  const td_plan *p = c->p;
  td_compile_opts bo = opts ? *opts : (td_compile_opts){-1, 0, NULL, 0};
  bo.keep_c = 0;
  for (int k = 0; k < p->n_kernels; k++) {
    if (p->kernels[k].kind != TD_KERN_SCAN) continue;
    if (!c->sub && !(c->sub = td_calloc((size_t)p->n_kernels, sizeof *c->sub))) return td_err_set(err, "out of memory");
    if (!(c->sub[k] = td_compile(p->kernels[k].body, &bo, err))) return -1;
    if (c->sub[k]->warning[0] && !c->warning[0]) memcpy(c->warning, c->sub[k]->warning, sizeof c->warning);
  }
  return 0;
}

td_compiled *td_compile(const td_plan *plan, const td_compile_opts *opts, td_err *err) {
  td_compiled *c = td_calloc(1, sizeof *c);
  if (!c) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  c->p = plan;
  snprintf(c->march, sizeof c->march, "%s", opts && opts->march ? opts->march : td_detect_march());
  int opt = opts && opts->opt_level >= 0 ? opts->opt_level : 2, cache = opts && opts->cache;
  int keep_c = opts && opts->keep_c, ok = 1;
  cache_entry e;
  c->key_dims = plan->g->n_dims;
  if (cache && !(c->key = tdc_plan_key(plan, c->march, opt, tdc_debug_bounds()))) ok = !td_err_set(err, "out of memory");
  int have_dir = ok && cache && cache_open(c, &e) == 0;
  double t0 = td_now();
  if (have_dir && cache_hit(c, &e) == 0) td_phase_done("compile cache hit", t0, plan->g->name);
  td_arena *a = NULL, *a2 = NULL;
  gcc_jit_context *ctx = NULL;
  if (ok && (!c->fns || keep_c)) {   /* a miss, or the text of the kernels asked for */
    ok = (ctx = generate(c, opt, &a, err)) != NULL;
    if (ok && keep_c) c->c_text = dump_text(ctx);   /* NULL when it cannot be had: nothing shown */
  }
  int missed = ok && !c->fns;
  t0 = td_now();
  if (ok && !c->fns && have_dir && store_entry(c, &ctx, &e) && !ctx)   /* the cache's compilation failed: again */
    ok = (ctx = generate(c, opt, &a2, err)) != NULL;
  if (ok && !c->fns) {
    pthread_mutex_lock(&dl_mu);
    c->res = gcc_jit_context_compile(ctx);
    pthread_mutex_unlock(&dl_mu);
  }
  if (ok && !c->fns && !c->res) {
    const char *m = gcc_jit_context_get_first_error(ctx);
    td_err_set(err, "internal compiler error in the kernels of %s: %s", plan->g->name, m ? m : "compilation failed");
    ok = 0;
  }
  if (ctx) gcc_jit_context_release(ctx);
  td_arena_free(a);
  td_arena_free(a2);
  if (ok && !c->fns && lookup_kernels(c, err)) ok = 0;
  if (ok && missed) td_phase_done(have_dir ? "libgccjit compile, into the cache, and load" : "libgccjit compile", t0, plan->g->name);
  if (ok) ok = compile_bodies(c, opts, err) == 0;
  if (!ok) {
    td_compiled_free(c);
    return NULL;
  }
  return c;
}

void td_compiled_free(td_compiled *c) {
  if (!c) return;
  if (c->res || c->dl) {
    pthread_mutex_lock(&dl_mu);
    if (c->res) gcc_jit_result_release(c->res);
    if (c->dl) dlclose(c->dl);
    pthread_mutex_unlock(&dl_mu);
  }
  td_free(c->fns);
  td_free(c->info);
  td_free(c->dims);
  td_free(c->c_text);
  td_free(c->key);
  td_aligned_free(c->arena);
  td_aligned_free(c->scratch);
  for (int k = 0; c->packed && k < c->p->n_kernels; k++) td_aligned_free(c->packed[k]);
  td_free(c->packed);
  td_free(c->packed_id);
  layout_free(&c->lay);
  for (int k = 0; c->sub && k < c->p->n_kernels; k++) td_compiled_free(c->sub[k]);
  td_free(c->sub);
  for (int k = 0; c->plogs && k < c->p->n_kernels; k++) {
    plog_clear(&c->plogs[k]);
    td_free(c->plogs[k].e);
  }
  td_free(c->plogs);
  td_aligned_free(c->alt);
  td_free(c);
}

const char *td_compiled_march(const td_compiled *c) { return c->march; }
int td_compiled_from_cache(const td_compiled *c) { return c->cached; }
int td_compiled_generated(const td_compiled *c) { return c->generated; }
const char *td_compiled_warning(const td_compiled *c) { return c->warning[0] ? c->warning : NULL; }
const char *td_compiled_c_text(const td_compiled *c) { return c->c_text; }

/* ---- running ------------------------------------------------------------------------ */

/* Scans nest at most this deep (the elaborator's limit, lang/builtins_scan.c). */
#define SCAN_DEPTH_MAX 16

typedef struct run {
  td_compiled *c;
  layout *l;
  const td_graph *g;
  int64_t *symvals;
  td_err *err;
  td_span *err_span;
  uint64_t call;             /* the call index (random streams) */
  int64_t steps[SCAN_DEPTH_MAX];   /* inside scan bodies: the step of each, outermost first */
  int n_steps;
} run;

static void blame(run *r, int node) {
  if (r->err_span) *r->err_span = r->g->nodes[node].span;
}

/* Evaluated shape of node n; fails on negative sizes. */
static int eval_shape(run *r, int n, int64_t *shape) {
  const td_node *nd = &r->g->nodes[n];
  for (int k = 0; k < nd->rank; k++) {
    shape[k] = td_dim_eval(r->g, nd->shape[k], r->symvals);
    if (shape[k] < 0) {
      char ds[128];
      blame(r, n);
      return td_err_set(r->err, "size %s of axis %d evaluates to %lld",
                        td_dim_str(r->g, nd->shape[k], ds, sizeof ds), k, (long long)shape[k]);
    }
  }
  return 0;
}

/* The per-size arrays of c->lay, allocated on the first call. */
static int layout_alloc(td_compiled *c, td_err *err) {
  layout *l = &c->lay;
  if (l->syms) return 0;
  const td_plan *p = c->p;
  size_t nk = (size_t)p->n_kernels + 1, nb = (size_t)p->n_bufs + nk;   /* then the prepacked Bs */
  l->syms = td_calloc((size_t)p->g->n_syms + 1, sizeof *l->syms);
  l->dv = td_calloc((size_t)c->n_dims + 1, sizeof *l->dv);
  l->bufs = td_calloc(nb, sizeof *l->bufs);
  l->owned = td_calloc(nb, sizeof *l->owned);
  l->shapes = td_calloc(nb * TD_MAX_RANK, sizeof *l->shapes);
  l->pshapes = td_calloc(((size_t)p->g->n_params + 1) * TD_MAX_RANK, sizeof *l->pshapes);
  l->ishapes = td_calloc(((size_t)p->g->n_inputs + 1) * TD_MAX_RANK, sizeof *l->ishapes);
  l->extent = td_calloc(nk, sizeof *l->extent);
  l->ranges = td_calloc(nk, sizeof *l->ranges);
  if (l->syms && l->dv && l->bufs && l->owned && l->shapes && l->pshapes && l->ishapes && l->extent && l->ranges)
    return 0;
  layout_free(l);
  return td_err_set(err, "out of memory");
}

static void layout_free(layout *l) {
  td_free(l->syms);
  td_free(l->dv);
  td_free(l->bufs);
  td_free(l->owned);
  td_free(l->shapes);
  td_free(l->pshapes);
  td_free(l->ishapes);
  td_free(l->extent);
  td_free(l->ranges);
  memset(l, 0, sizeof *l);
}

/* Parameters' expected shapes (they may change between calls, their
 * shapes may not). */
static int param_shapes(run *r) {
  for (int i = 0; i < r->g->n_params; i++)
    if (eval_shape(r, r->g->params[i], &r->l->pshapes[(size_t)i * TD_MAX_RANK])) return -1;
  return 0;
}

static int check_params(run *r, td_tensor *const *params) {
  for (int i = 0; i < r->g->n_params; i++) {
    const td_node *nd = &r->g->nodes[r->g->params[i]];
    const td_tensor *t = params ? params[nd->attr.i] : NULL;
    const int64_t *shape = &r->l->pshapes[(size_t)i * TD_MAX_RANK];
    int ok = t && t->dtype == nd->dtype && t->rank == nd->rank;
    for (int k = 0; ok && k < nd->rank; k++) ok = t->shape[k] == shape[k];
    if (!ok) return td_err_set(r->err, "parameter '%s' is missing or has the wrong type", nd->name ? nd->name : "?");
  }
  return 0;
}

/* The runtime table: sizes with sizes (at layout time), random streams
 * mixed with the call index (every call). */
static void eval_table(run *r, uint64_t call, int sizes) {
  for (int i = 0; i < r->c->n_dims; i++) {
    const cg_dimref *d = &r->c->dims[i];
    if (d->rand_node >= 0) {
      uint64_t s = r->g->nodes[d->rand_node].attr.stream;
      if (call) s = td_hash_mix(s, call);
      for (int k = 0; k < r->n_steps; k++) s = td_hash_mix(s, (uint64_t)r->steps[k] + 1);   /* as eager mode */
      memcpy(&r->l->dv[i], &s, sizeof s);
    } else if (sizes) {
      r->l->dv[i] = td_dim_eval(r->g, d->dim, r->symvals);
    }
  }
}

static int ensure(void **mem, size_t *cap, size_t need, td_err *err) {
  if (need <= *cap && *mem) return 0;
  td_aligned_free(*mem);
  *cap = 0;
  *mem = td_aligned_alloc(64, need ? need : 64);
  if (!*mem) return td_err_set(err, "out of memory (%zu bytes of temporaries)", need);
  *cap = need;
  return 0;
}

/* The arena (slot sizes rounded up to 64 bytes), the temporaries'
 * pointers and the outputs' shapes. */
static int place_temps(run *r) {
  const td_plan *p = r->c->p;
  size_t *slot_off = td_calloc((size_t)p->n_slots + 1, sizeof *slot_off), total = 0;
  if (!slot_off) return td_err_set(r->err, "out of memory");
  for (int s = 0; s < p->n_slots; s++) {
    slot_off[s] = total;
    total += ((size_t)td_dim_eval(r->g, p->slot_bytes[s], r->symvals) + 63) & ~(size_t)63;
  }
  int rc = ensure(&r->c->arena, &r->c->arena_cap, total, r->err);
  for (int i = 0; i < p->n_bufs && rc == 0; i++) {
    const td_buffer *b = &p->bufs[i];
    if (b->kind == TD_BUF_INPUT || b->kind == TD_BUF_PARAM || b->kind == TD_BUF_UPDATE) continue;
    rc = eval_shape(r, b->node, &r->l->shapes[(size_t)i * TD_MAX_RANK]);
    if (rc == 0 && b->kind == TD_BUF_TEMP) r->l->bufs[i] = (char *)r->c->arena + slot_off[b->index];
  }
  td_free(slot_off);
  return rc;
}

/* Per call: inputs, parameters and fresh outputs. */
static int place_call_buffers(run *r, td_tensor *const *inputs, td_tensor *const *params) {
  const td_plan *p = r->c->p;
  for (int i = 0; i < p->n_bufs; i++) {
    const td_buffer *b = &p->bufs[i];
    const td_node *nd = &r->g->nodes[b->node];
    switch (b->kind) {
    case TD_BUF_INPUT: r->l->bufs[i] = inputs[b->index]->data; break;
    case TD_BUF_PARAM: case TD_BUF_UPDATE: r->l->bufs[i] = params[b->index]->data; break;
    case TD_BUF_TEMP: break;
    default:
      r->l->owned[i] = td_tensor_new(nd->dtype, nd->rank, &r->l->shapes[(size_t)i * TD_MAX_RANK], r->err);
      if (!r->l->owned[i]) return -1;
      r->l->bufs[i] = r->l->owned[i]->data;
    }
  }
  return 0;
}

/* The prepacked B of every kernel that has one (tdc_kinfo.pack), at
 * bufs[n_bufs + kernel]: packed again when the parameter is not the
 * tensor (by td_tensor.id) packed last time. */
static int prepack_params(run *r, td_tensor *const *params) {
  td_compiled *c = r->c;
  const td_plan *p = c->p;
  for (int k = 0; k < p->n_kernels; k++) {
    const tdc_prepack_desc *d = &c->info[k].pack;
    if (d->nr <= 0) continue;
    if (!c->packed && (!(c->packed = td_calloc((size_t)p->n_kernels, sizeof *c->packed)) ||
                       !(c->packed_id = td_calloc((size_t)p->n_kernels, sizeof *c->packed_id))))
      return td_err_set(r->err, "out of memory");
    const td_tensor *t = params[p->bufs[d->buf].index];
    if (!c->packed[k] && !(c->packed[k] = td_aligned_alloc(64, tdc_prepack_bytes(d))))
      return td_err_set(r->err, "out of memory (%zu bytes of prepacked weights)", tdc_prepack_bytes(d));
    if (t->id == 0 || t->id != c->packed_id[k]) {
      tdc_prepack(d, t->data, c->packed[k]);
      c->packed_id[k] = t->id;
    }
    r->l->bufs[p->n_bufs + k] = c->packed[k];
  }
  return 0;
}

/* Scratch for the matmul kernels (packed panels, tiles, rows). */
static int place_scratch(run *r) {
  const td_plan *p = r->c->p;
  size_t need = 64;
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    if (kn->kind != TD_KERN_MATMUL) continue;
    const td_node *m = &r->g->nodes[kn->matmul];
    int64_t mm = td_dim_eval(r->g, m->shape[m->rank - 2], r->symvals);
    int64_t n = td_dim_eval(r->g, m->shape[m->rank - 1], r->symvals);
    int64_t kk = td_dim_eval(r->g, kn->a.shape[kn->a.rank - 1], r->symvals);
    size_t s = tdc_matmul_scratch(mm, n, kk);
    if (s > need) need = s;
  }
  need = (need + 63) & ~(size_t)63;
  r->c->scratch_each = need;
  return ensure(&r->c->scratch, &r->c->scratch_cap, need * (size_t)td_pool_threads(), r->err);
}

/* One kernel call split into ranges of its parallel loop. */
typedef struct split {
  run *r;
  tdc_kernel_fn fn;
  int64_t extent, chunk;
  int32_t status[64];
} split;

static void run_range(void *ctx, int64_t task, int tid) {
  split *s = ctx;
  int64_t lo = task * s->chunk, hi = lo + s->chunk < s->extent ? lo + s->chunk : s->extent;
  char *scratch = (char *)s->r->c->scratch + (size_t)tid * s->r->c->scratch_each;
  s->fn(s->r->l->bufs, s->r->l->dv, scratch, &s->status[tid], tdc_runtime_table(), lo, hi);
}

/* Ranges per kernel: one per thread when the kernel moves or computes
 * enough (about 256 KB or 1 MFLOP per thread), else one. */
static int64_t n_ranges(run *r, int k, int64_t extent) {
  const td_kernel *kn = &r->c->p->kernels[k];
  int threads = td_pool_threads();
  if (!r->c->info[k].parallel || threads == 1 || extent < 2) return 1;
  double work = (double)td_dim_eval(r->g, kn->bytes_read, r->symvals) +
                (double)td_dim_eval(r->g, kn->bytes_written, r->symvals) +
                (double)td_dim_eval(r->g, kn->flops, r->symvals) / 4;
  int64_t n = (int64_t)(work / 262144.0);
  if (n > threads) n = threads;
  if (n > extent) n = extent;
  return tdc_column_ranges(n < 1 ? 1 : n, work, extent, r->c->info[k].cols);
}

/* Each kernel's parallel extent and number of ranges. */
static void plan_splits(run *r) {
  for (int k = 0; k < r->c->p->n_kernels; k++) {
    r->l->extent[k] = r->c->info[k].parallel ? td_dim_eval(r->g, r->c->info[k].extent, r->symvals) : 1;
    r->l->ranges[k] = n_ranges(r, k, r->l->extent[k]);
  }
}

/* Do the inputs have exactly the dtypes and shapes the valid layout was
 * bound from?  Then binding them again (td_bind_inputs) would give the same
 * symbol values and pass its checks. */
static int same_inputs(const td_compiled *c, td_tensor *const *inputs) {
  const td_graph *g = c->p->g;
  if (!c->lay.valid || c->lay.threads != td_pool_threads()) return 0;
  for (int k = 0; k < g->n_inputs; k++) {
    const td_node *n = &g->nodes[g->inputs[k]];
    const td_tensor *t = inputs[k];
    if (!t || t->dtype != n->dtype || t->rank != n->rank) return 0;
    if (memcmp(t->shape, &c->lay.ishapes[(size_t)k * TD_MAX_RANK], (size_t)n->rank * sizeof *t->shape)) return 0;
  }
  return 1;
}

/* TDSL_DEBUG=bounds: the elements a matmul reads through its operand
 * views (packed GEMM code addresses them itself, unchecked by cg_element)
 * lie inside the views' buffers. */
static int check_views(run *r) {
  const td_plan *p = r->c->p;
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    if (kn->kind != TD_KERN_MATMUL) continue;
    const td_view *vs[2] = {&kn->a, &kn->b};
    for (int v = 0; v < 2; v++) {
      const td_view *w = vs[v];
      const td_node *base = &r->g->nodes[w->base];
      int64_t lo = td_dim_eval(r->g, w->offset, r->symvals), hi = lo, numel = 1, empty = 0;
      for (int d = 0; d < w->rank; d++) {
        int64_t n = td_dim_eval(r->g, w->shape[d], r->symvals), s = td_dim_eval(r->g, w->stride[d], r->symvals);
        if (n == 0) empty = 1;
        else if (s > 0) hi += (n - 1) * s;
        else lo += (n - 1) * s;
      }
      for (int d = 0; d < base->rank; d++) numel *= td_dim_eval(r->g, base->shape[d], r->symvals);
      if (!empty && (lo < 0 || hi >= numel)) {
        blame(r, kn->matmul);
        return td_err_set(r->err, "internal compiler error (TDSL_DEBUG=bounds): kernel %s reads its %s operand at "
                          "elements %lld..%lld of %%%d, which has %lld", kn->name, v ? "right" : "left",
                          (long long)lo, (long long)hi, w->base, (long long)numel);
      }
    }
  }
  return 0;
}

/* Re-evaluates everything that depends on the sizes only; the layout is
 * marked valid for r->symvals (bound from inputs) on success. */
static int make_layout(run *r, td_tensor *const *inputs) {
  layout *l = r->l;
  l->valid = 0;
  int rc = td_checks_run_graph(r->g, r->symvals, r->err, r->err_span);
  if (rc == 0 && tdc_debug_bounds()) rc = check_views(r);
  if (rc == 0) rc = param_shapes(r);
  if (rc == 0) {
    eval_table(r, 0, 1);
    rc = place_temps(r);
  }
  if (rc == 0) rc = place_scratch(r);
  if (rc) return rc;
  plan_splits(r);
  memcpy(l->syms, r->symvals, (size_t)r->g->n_syms * sizeof *l->syms);
  for (int k = 0; k < r->g->n_inputs; k++)
    memcpy(&l->ishapes[(size_t)k * TD_MAX_RANK], inputs[k]->shape, (size_t)inputs[k]->rank * sizeof *l->ishapes);
  l->threads = td_pool_threads();
  l->valid = 1;
  return 0;
}

static int run_scan(run *r, int k);

static int call_kernels(run *r) {
  const td_plan *p = r->c->p;
  for (int k = 0; k < p->n_kernels; k++) {
    if (p->kernels[k].kind == TD_KERN_SCAN) {
      if (run_scan(r, k)) return -1;
      continue;
    }
    split s;
    memset(&s, 0, sizeof s);
    s.r = r;
    s.fn = r->c->fns[k];
    s.extent = r->l->extent[k];
    int64_t n = r->l->ranges[k];
    s.chunk = tdc_split_chunk(s.extent, n, r->c->info[k].cols);
    if (s.extent > 0) td_pool_run(run_range, &s, n);
    int32_t status = 0;
    for (int t = 0; t < 64; t++)
      if (s.status[t] != 0) status = s.status[t];
    if (status < 0) {   /* TDSL_DEBUG=bounds */
      int bad = -status - 1;
      blame(r, bad);
      return td_err_set(r->err, "internal compiler error (TDSL_DEBUG=bounds): kernel %s accessed an element of "
                        "%%%d (%s) outside its buffer", p->kernels[k].name, bad, td_ops[r->g->nodes[bad].op].name);
    }
    if (status > 0) {
      int bad = status - 1;
      const td_node *nd = &r->g->nodes[bad];
      blame(r, bad);
      return td_err_set(r->err, "take: an index is out of range for axis %d of size %lld", nd->attr.axis,
                        (long long)td_dim_eval(r->g, r->g->nodes[nd->in[0]].shape[nd->attr.axis], r->symvals));
    }
  }
  return 0;
}

/* ---- scans ------------------------------------------------------------------------ */

/* Bytes of node n's value at the bound sizes (its shape was checked). */
static size_t value_bytes(const run *r, int n) {
  const td_node *nd = &r->g->nodes[n];
  size_t b = td_dtype_size(nd->dtype);
  for (int i = 0; i < nd->rank; i++) {
    int64_t v = td_dim_eval(r->g, nd->shape[i], r->symvals);
    b *= v > 0 ? (size_t)v : 0;
  }
  return b;
}

/* A body's layout, as make_layout's but with no inputs to bind: its size
 * checks (a body's shapes are the same at every step, so once per size),
 * its table, temporaries, scratch and splits. */
static int body_layout(run *b) {
  layout *l = b->l;
  l->valid = 0;
  int rc = td_checks_run_graph(b->g, b->symvals, b->err, b->err_span);
  if (rc == 0 && tdc_debug_bounds()) rc = check_views(b);
  if (rc == 0) {
    eval_table(b, 0, 1);
    rc = place_temps(b);
  }
  if (rc == 0) rc = place_scratch(b);
  if (rc) return rc;
  plan_splits(b);
  memcpy(l->syms, b->symvals, (size_t)b->g->n_syms * sizeof *l->syms);
  l->threads = td_pool_threads();
  l->valid = 1;
  return 0;
}

/* After a step of scan kernel k of r (its body run by b): the values the
 * step printed, copied, and what its nested scans printed in it, in the
 * body's node order (eager mode's), appended to r->c->plogs[k]. */
static int log_step_prints(run *r, int k, run *b) {
  td_compiled *bc = b->c;
  const td_plan *bp = bc->p;
  const td_graph *bg = bp->g;
  plog *dst = &r->c->plogs[k];
  int next = bg->n_outputs;
  for (int n = 0; n < bg->n_nodes; n++) {
    const td_node *nd = &bg->nodes[n];
    if (nd->op == TD_IR_SCAN) {
      int kk = scan_kernel_of(bp, n);
      if (kk >= 0 && bc->plogs && plog_move(dst, &bc->plogs[kk], r->err)) return -1;
      continue;
    }
    if (nd->op != TD_IR_PRINT) continue;
    plog_ent e = {nd, td_calloc((size_t)nd->n_in + 1, sizeof(td_tensor *))};
    int rc = e.vals ? 0 : td_err_set(r->err, "out of memory (printed values)");
    for (int i = 0; rc == 0 && i < nd->n_in; i++) {
      int64_t shape[TD_MAX_RANK];
      int v = next + i < bp->n_out_nodes ? bp->out_nodes[next + i] : -1;
      if (v < 0) rc = td_err_set(r->err, "internal error: print %d of a scan's body has no value", n);
      if (rc == 0) rc = eval_shape(b, v, shape);
      if (rc == 0 && !(e.vals[i] = td_tensor_new(bg->nodes[v].dtype, bg->nodes[v].rank, shape, r->err))) rc = -1;
      size_t nb = rc == 0 ? value_bytes(b, v) : 0;
      if (nb) memcpy(e.vals[i]->data, bc->lay.bufs[bp->buf_of[v]], nb);
    }
    next += nd->n_in;
    if (rc == 0) rc = plog_push(dst, e, r->err);
    if (rc) {
      for (int i = 0; e.vals && i < nd->n_in; i++) td_tensor_release(e.vals[i]);
      td_free(e.vals);
      return -1;
    }
  }
  return 0;
}

/* Scan kernel k (plan_scan.c): its body's kernels once per step, called
 * directly with the step's pointers, no allocation per step.  The body
 * reads carry i from cur[i] and writes it to the other of two buffers,
 * the scan's output and a second one of the body's (c->alt), chosen so
 * that the last step writes the output: no carry is copied between steps.
 * Step t's slice of a sequence and row t of a stacked output are read and
 * written in place (both are contiguous: axis 0 of a buffer).  A body
 * output its kernels do not write (a carry passed through unchanged, an
 * input returned, one value returned twice) is copied after the step. */
static int run_scan(run *r, int k) {
  td_compiled *c = r->c, *bc = c->sub[k];
  const td_plan *p = c->p, *bp = bc->p;
  int id = p->kernels[k].root;
  const td_node *s = &r->g->nodes[id];
  const td_attr *a = &s->attr;
  const td_graph *bg = bp->g;
  int nc = a->n_carry, nx = a->n_xs, no = bg->n_outputs, ni = bg->n_inputs;
  int idx = a->index ? nc + nx : -1, shift = a->index ? 1 : 0;
  int64_t T = td_dim_eval(r->g, a->dim, r->symvals);
  if (T < 0) {
    blame(r, id);
    return td_err_set(r->err, "scan: the number of steps evaluates to %lld", (long long)T);
  }
  if (r->n_steps >= SCAN_DEPTH_MAX) return td_err_set(r->err, "scans nest more than %d deep", SCAN_DEPTH_MAX);
  run b = {bc, &bc->lay, bg, r->symvals, r->err, r->err_span, r->call, {0}, r->n_steps + 1};
  memcpy(b.steps, r->steps, sizeof b.steps);
  if (layout_alloc(bc, r->err)) return -1;
  if (!(bc->lay.valid && bc->lay.threads == td_pool_threads() &&
        !memcmp(bc->lay.syms, r->symvals, (size_t)bg->n_syms * sizeof *r->symvals)) &&
      body_layout(&b))
    return -1;
  void **in = td_calloc((size_t)ni + 1, sizeof *in), **cur = td_calloc((size_t)nc + 1, sizeof *cur);
  void **fin = td_calloc((size_t)no + 1, sizeof *fin), **alt = td_calloc((size_t)nc + 1, sizeof *alt);
  void **dst = td_calloc((size_t)no + 1, sizeof *dst);
  size_t *bytes = td_calloc((size_t)no + 1, sizeof *bytes), *slice = td_calloc((size_t)ni + 1, sizeof *slice);
  char *direct = td_calloc((size_t)no + 1, 1);
  int rc = in && cur && fin && alt && dst && bytes && slice && direct ? 0 : td_err_set(r->err, "out of memory");
  size_t alt_total = 0;
  for (int i = 0; rc == 0 && i < no; i++) {
    int on = bp->out_nodes[i], ob = bp->buf_of[on];
    bytes[i] = value_bytes(&b, on);
    fin[i] = r->l->bufs[p->buf_of[id + 1 + i]];
    direct[i] = ob >= 0 && bp->bufs[ob].kind == TD_BUF_OUTPUT && bp->bufs[ob].index == i;
    if (i < nc) alt_total += (bytes[i] + 63) & ~(size_t)63;
  }
  if (rc == 0) rc = ensure(&bc->alt, &bc->alt_cap, alt_total, r->err);
  for (int i = 0, off = 0; rc == 0 && i < nc; i++) {
    alt[i] = (char *)bc->alt + off;
    off += (int)((bytes[i] + 63) & ~(size_t)63);
  }
  for (int j = 0; rc == 0 && j < ni; j++) {
    if (j == idx) continue;
    int outer = s->in[j > idx && idx >= 0 ? j - shift : j];
    in[j] = r->l->bufs[p->buf_of[outer]];
    if (j >= nc && j < nc + nx) slice[j] = value_bytes(&b, bg->inputs[j]);
  }
  for (int i = 0; rc == 0 && i < nc; i++) cur[i] = in[i];
  /* prints: the values printed (after the body's outputs in out_nodes)
   * that are the body's own outputs get a buffer here, read after each
   * step (log_step_prints) */
  int prints = plan_prints(bp), *pbuf = NULL, n_pbuf = 0;
  void *pmem = NULL;
  size_t ptotal = 0;
  if (rc == 0 && prints) {
    if (!c->plogs && !(c->plogs = td_calloc((size_t)p->n_kernels, sizeof *c->plogs)))
      rc = td_err_set(r->err, "out of memory");
    if (rc == 0) plog_clear(&c->plogs[k]);
    if (rc == 0 && !(pbuf = td_calloc((size_t)bp->n_out_nodes + 1, sizeof *pbuf))) rc = td_err_set(r->err, "out of memory");
    for (int i = no; rc == 0 && i < bp->n_out_nodes; i++) {
      int ob = bp->buf_of[bp->out_nodes[i]];
      if (ob >= 0 && bp->bufs[ob].kind == TD_BUF_OUTPUT && bp->bufs[ob].index == i) {
        pbuf[n_pbuf++] = ob;
        ptotal += (value_bytes(&b, bp->out_nodes[i]) + 63) & ~(size_t)63;
      }
    }
    if (rc == 0 && !(pmem = td_aligned_alloc(64, ptotal ? ptotal : 64))) rc = td_err_set(r->err, "out of memory (printed values)");
  }
  int64_t tval = 0;
  void **bb = bc->lay.bufs;
  for (int64_t st = 0; rc == 0 && st < T; st++) {
    int64_t t = a->reverse ? T - 1 - st : st;
    b.steps[r->n_steps] = tval = t;
    for (int i = 0; i < no; i++)
      dst[i] = i >= nc ? (char *)fin[i] + (size_t)t * bytes[i] : (T - 1 - st) % 2 == 0 ? fin[i] : alt[i];
    for (int i = 0; i < bp->n_bufs; i++) {
      const td_buffer *u = &bp->bufs[i];
      int j = u->index;
      if (u->kind != TD_BUF_INPUT) continue;
      bb[i] = j < nc ? cur[j] : j < nc + nx ? (char *)in[j] + (size_t)t * slice[j] : j == idx ? (void *)&tval : in[j];
    }
    for (int i = 0; i < no; i++)
      if (direct[i]) bb[bp->buf_of[bp->out_nodes[i]]] = dst[i];
    size_t poff = 0;
    for (int i = 0; i < n_pbuf; i++) {
      bb[pbuf[i]] = (char *)pmem + poff;
      poff += (value_bytes(&b, bp->bufs[pbuf[i]].node) + 63) & ~(size_t)63;
    }
    eval_table(&b, r->call, 0);
    if ((rc = call_kernels(&b))) {
      char m[sizeof r->err->msg];
      snprintf(m, sizeof m, "%s", r->err->msg);
      td_err_set(r->err, "%s, at step %lld of the scan", m, (long long)t);
      break;
    }
    if (prints && (rc = log_step_prints(r, k, &b))) break;
    for (int i = 0; i < no; i++)
      if (!direct[i] && bytes[i]) memmove(dst[i], bb[bp->buf_of[bp->out_nodes[i]]], bytes[i]);
    for (int i = 0; i < nc; i++) cur[i] = dst[i];
  }
  td_free(pbuf);
  td_aligned_free(pmem);
  for (int i = 0; rc == 0 && T == 0 && i < nc; i++)   /* no step: the carries are the initial values */
    if (bytes[i]) memmove(fin[i], in[i], bytes[i]);
  td_free(in);
  td_free(cur);
  td_free(fin);
  td_free(alt);
  td_free(dst);
  td_free(bytes);
  td_free(slice);
  td_free(direct);
  return rc;
}

static int collect(run *r, td_tensor *const *inputs, td_tensor *const *params, td_tensor ***outs) {
  const td_plan *p = r->c->p;
  td_tensor **o = td_malloc((size_t)(p->n_out_nodes + 1) * sizeof *o);
  if (!o) return td_err_set(r->err, "out of memory");
  for (int i = 0; i < p->n_out_nodes; i++) {
    const td_buffer *b = &p->bufs[p->buf_of[p->out_nodes[i]]];
    td_tensor *t = b->kind == TD_BUF_INPUT ? inputs[b->index]
                 : b->kind == TD_BUF_PARAM || b->kind == TD_BUF_UPDATE ? params[b->index]
                 : r->l->owned[p->buf_of[p->out_nodes[i]]];
    o[i] = td_tensor_retain(t);
  }
  *outs = o;
  return 0;
}

/* Per call: bind the sizes (skipped when the inputs' shapes are the
 * layout's); only when they (or the pool's thread count) differ from the
 * layout's does make_layout run.  The layout's arrays live
 * in c, which td_compiled_run already used for its arena (one call at a
 * time per td_compiled). */
int td_compiled_run(td_compiled *c, td_tensor *const *inputs, td_tensor *const *params,
                    uint64_t call_index, td_tensor ***outs, td_err *err, td_span *err_span) {
  const td_plan *p = c->p;
  int64_t local[16], *heap = NULL;
  size_t ns = (size_t)p->g->n_syms;
  run r = {c, &c->lay, p->g, local, err, err_span, call_index, {0}, 0};
  if (err_span) err_span->file = -1;
  *outs = NULL;
  plogs_clear(c);
  if (ns + 1 > sizeof local / sizeof *local && !(r.symvals = heap = td_calloc(ns + 1, sizeof *heap)))
    return td_err_set(err, "out of memory");
  memset(r.symvals, 0, (ns + 1) * sizeof *r.symvals);
  int rc = layout_alloc(c, err);
  if (rc == 0 && same_inputs(c, inputs)) memcpy(r.symvals, c->lay.syms, ns * sizeof *r.symvals);
  else if (rc == 0 && (rc = td_bind_inputs(p->g, inputs, p->g->n_inputs, r.symvals, err)) == 0 &&
           !(c->lay.valid && c->lay.threads == td_pool_threads() &&
             !memcmp(c->lay.syms, r.symvals, ns * sizeof *r.symvals)))
    rc = make_layout(&r, inputs);
  else if (rc == 0)  /* same sizes from other shapes: keep the layout, note these shapes */
    for (int k = 0; k < p->g->n_inputs; k++)
      memcpy(&c->lay.ishapes[(size_t)k * TD_MAX_RANK], inputs[k]->shape, (size_t)inputs[k]->rank * sizeof(int64_t));
  if (rc == 0) rc = check_params(&r, params);
  if (rc == 0) {
    eval_table(&r, call_index, 0);
    rc = place_call_buffers(&r, inputs, params);
  }
  if (rc == 0) rc = prepack_params(&r, params);
  if (rc == 0) rc = call_kernels(&r);
  if (rc == 0) rc = collect(&r, inputs, params, outs);
  for (int i = 0; c->lay.owned && i < p->n_bufs; i++) {
    td_tensor_release(c->lay.owned[i]);
    c->lay.owned[i] = NULL;
  }
  td_free(heap);
  return rc;
}

/* ---- prints ------------------------------------------------------------------------ */

/* The printed values are the outputs after the graph's own, the inputs of
 * every PRINT node in program order; each line is made as the interpreter
 * makes it (lang/print.h).  With c, a SCAN node prints there what its
 * steps printed (run_scan logged it). */
static int print_line(const td_node *nd, td_tensor *const *vals, const td_run_opts *opts, td_err *err) {
  char *text;
  if (opts->interrupt && *opts->interrupt) return td_err_set(err, "interrupted");
  if (!opts->on_print) return 0;
  if (td_print_text(nd, vals, opts->print_threshold, &text, err)) return -1;
  opts->on_print(opts->ud, text);
  td_free(text);
  return 0;
}

static int print_graph(const td_plan *plan, td_compiled *c, td_tensor *const *outs, const td_run_opts *opts,
                       td_err *err) {
  const td_graph *g = plan->g;
  td_tensor *const *vals = outs + g->n_outputs;
  int next = 0, n_vals = plan->n_out_nodes - g->n_outputs;
  for (int n = 0; n < g->n_nodes; n++) {
    const td_node *nd = &g->nodes[n];
    if (nd->op == TD_IR_SCAN && c && c->plogs) {
      int k = scan_kernel_of(plan, n);
      for (int i = 0; k >= 0 && i < c->plogs[k].n; i++)
        if (print_line(c->plogs[k].e[i].pr, c->plogs[k].e[i].vals, opts, err)) return -1;
      continue;
    }
    if (nd->op != TD_IR_PRINT) continue;
    if (next + nd->n_in > n_vals) return td_err_set(err, "print %d has no values to print", n);
    if (print_line(nd, vals + next, opts, err)) return -1;
    next += nd->n_in;
  }
  return 0;
}

int td_compiled_prints(const td_plan *plan, td_tensor *const *outs, const td_run_opts *opts,
                       td_err *err) {
  return print_graph(plan, NULL, outs, opts, err);
}

int td_compiled_run_prints(td_compiled *c, td_tensor *const *outs, const td_run_opts *opts, td_err *err) {
  int rc = print_graph(c->p, c, outs, opts, err);
  plogs_clear(c);
  return rc;
}

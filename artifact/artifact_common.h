/* artifact_common.h - what the runtimes of CPU artifacts (artifact_rt.c)
 * and CUDA artifacts (artifact/artifact_cuda.c) share; internal to them, linked
 * into libtdsl_rt.a.
 *
 * Both descriptors (artifact.h, artifact_cuda.h) start alike: magic, abi,
 * a device word, the entry and parameter counts, the parameters, and per
 * entry its name, sizes, inputs, outputs, polynomials, parameter slots,
 * buffers, slots and dv table; then come the device's kernels, the prints
 * (alike again) and, for CUDA, the module offsets.  Here: reading those
 * common parts, evaluating sizes, laying out the slots, checking a weights
 * file, formatting print() output as the interpreter does, and the
 * command line of --exe artifacts (.npy inputs and outputs, --bench).
 *
 * A device's entry type starts with the common fields through
 *   union { tda_entry c; struct { TDA_ENTRY_FIELDS }; };
 * so its code names them directly (e->name) and hands &e->c to these
 * functions.
 */
#ifndef TD_ARTIFACT_COMMON_H
#define TD_ARTIFACT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/io.h"
#include "runtime/param_init.h"
#include "runtime/sig.h"
#include "runtime/sizecheck.h"
#include "runtime/strbuf.h"
#include "runtime/tensor.h"

#define TDA_MAXR 8
/* Symbols per term of a descriptor polynomial: lang/ir.h's TD_MONO_MAX
 * (build_common.c checks that they agree); a term is coef, n, sym[]. */
#define TDA_MONO_MAX 16
#define TDA_TERM_WORDS (2 + TDA_MONO_MAX)
/* Buffer kinds (td_bkind). */
enum { TDA_BK_INPUT, TDA_BK_PARAM, TDA_BK_OUTPUT, TDA_BK_TEMP, TDA_BK_UPDATE };

typedef struct tda_rd {
  const int64_t *w;
  size_t at;
} tda_rd;

static inline int64_t tda_word(tda_rd *r) { return r->w[r->at++]; }
/* A descriptor string (its length, then its bytes in whole words), copied;
 * NULL when out of memory. */
char *tda_str(tda_rd *r);
/* n + 1 zeroed elements (never NULL for n == 0 unless out of memory). */
void *tda_alloc_n(size_t n, size_t each);

/* Where the head of a scan's description goes (artifact.h: trip count,
 * reverse, carries, sequences, index, then per body input its outer
 * buffer, sliced flag and slice bytes, per body output its buffers, bytes
 * and direct flag): the CPU and CUDA runtimes' scan records point these
 * at their own fields.  The arrays are allocated here (tda_alloc_n). */
typedef struct tda_scan_io {
  int64_t *steps;
  int *reverse, *nc, *nx, *idx, *ni, *no;
  int64_t **in_buf, **sliced, **slice, **out_buf, **out_bbuf, **out_bytes, **direct;
} tda_scan_io;
int tda_read_scan_io(tda_rd *r, const tda_scan_io *io);

typedef struct tda_arg {
  const char *name;          /* inputs only */
  int dtype, rank, buf;      /* buf: outputs and printed values */
  int64_t dims[TDA_MAXR];
} tda_arg;

typedef struct tda_part {
  char *text;                /* a literal, or NULL: the value in arg */
  tda_arg arg;
} tda_part;

typedef struct tda_print {
  int n;
  tda_part *parts;
} tda_print;

#define TDA_ENTRY_FIELDS                                                                        \
  char *name;                                                                                   \
  int n_syms, n_args, *arg_syms;                                                                \
  char **sym_names;                                                                             \
  int n_in, n_out;                                                                              \
  tda_arg *in, *out;                                                                            \
  int n_polys;                                                                                  \
  const int64_t **polys;     /* per poly: n_terms, then TDA_TERM_WORDS per term */             \
  int n_pslots, *pslot;                                                                         \
  int n_bufs;                                                                                   \
  int64_t *bkind, *bindex, *bbytes;                                                             \
  int *bound;                /* per buffer: the output bound to it, or -1 */                    \
  int n_slots;                                                                                  \
  const int64_t *slot_bytes;                                                                    \
  int n_checks;                                                                                 \
  td_sizecheck *checks;      /* the run-time size checks (runtime/sizecheck.h) */               \
  char **check_where;        /* per check: "file:line:col" */                                   \
  int n_dv;                                                                                     \
  const int64_t *dvdesc;     /* pairs: is_rand, value */                                        \
  int n_prints;                                                                                 \
  tda_print *prints;                                                                            \
  int n_updates;             /* a training step's (CPU artifacts): per update, */               \
  int *update_param;         /* the model's index of the parameter it writes */                 \
  int have;                  /* what depends on the sizes is computed for symvals */            \
  int64_t *symvals, *dv;                                                                        \
  /* the signature as runtime/sig.h checks it: symbols, polynomials, inputs */                 \
  td_sizes sizes;                                                                               \
  td_poly *sig_polys;                                                                           \
  td_mono *sig_monos;                                                                           \
  td_sig_arg *sig_in;

typedef struct tda_entry {
  TDA_ENTRY_FIELDS
} tda_entry;

typedef struct tda_param {
  char *name;
  int dtype, rank;
  int64_t shape[TDA_MAXR];
  size_t bytes;
  int64_t data_off;          /* initial value: in the embedded data, or -1: */
  td_init init;              /* made from this recipe */
  void *data;                /* CPU: the values */
  size_t off;                /* CUDA: offset in the device allocation */
} tda_param;

/* A size of e: d >= 0 literal, else polynomial -d - 1 of e's symbols. */
/* Wraps around on overflow; tda_check_sizes has ruled that out for every
 * size the entry uses before its sizes are evaluated with this. */
static inline int64_t tda_dim_eval(const tda_entry *e, int64_t d) {
  if (d >= 0) return d;
  const int64_t *p = e->polys[-d - 1];
  uint64_t v = 0;
  for (int64_t i = 0; i < p[0]; i++) {
    const int64_t *t = &p[1 + TDA_TERM_WORDS * i];
    uint64_t x = (uint64_t)t[0];
    for (int k = 0; k < t[1]; k++) x *= (uint64_t)e->symvals[t[2 + k]];
    v += x;
  }
  return (int64_t)v;
}

/* tda_dim_eval that sets *overflow when the value does not fit an int64. */
int64_t tda_dim_eval_ovf(const tda_entry *e, int64_t d, int *overflow);
/* The sizes of a call, for e's symvals: the entry's size checks in order
 * (as the interpreter makes them), then every argument's (each fits, none
 * is negative or beyond 2^48 bytes).  0, or -1 with the first failure in
 * err ("file:line:col: message" for a check). */
int tda_check_sizes(const tda_entry *e, char *err, size_t errlen);

/* Bytes of argument a for the current sizes. */
size_t tda_arg_bytes(const tda_entry *e, const tda_arg *a);

/* The common head of an entry: everything up to and including its dv
 * table (the device's kernels follow).  0, or -1 when out of memory (free
 * with tda_free_entry either way). */
int tda_read_entry(tda_rd *r, tda_entry *e);
/* A scan's body (artifact.h): its polynomials, buffers, slots, size
 * checks and dv table, in e, which evaluates its sizes with outer's
 * symbol values and names itself as outer does in messages.  0, or -1
 * when out of memory (free with tda_free_body either way). */
int tda_read_body(tda_rd *r, tda_entry *e, const tda_entry *outer);
void tda_free_body(tda_entry *e);
/* The entry's prints (after the device's kernels). */
int tda_read_prints(tda_rd *r, tda_entry *e);
void tda_free_entry(tda_entry *e);
/* A parameter's description (not its values). */
int tda_read_param(tda_rd *r, tda_param *p);
/* Writes p's initial values (p->bytes) to dst: its bytes in data when they
 * are embedded, else made from its recipe.  0, or -1 with err set. */
int tda_param_initial(const tda_param *p, const unsigned char *data, void *dst, char *err, size_t errlen);

/* Offsets of e's slots (64-byte aligned) into slot[n_slots]; *total their
 * end.  -1 when the sizes make one too large. */
int tda_slots(const tda_entry *e, size_t *slot, size_t *total);

/* The head of a descriptor against what create was called with: the ABI
 * version (the caller's abi, the descriptor's and the library's lib_abi),
 * the magic word, and the signature (word 3) against the header's sig.
 * 0, or -1 with the reason in err. */
int tda_check_head(int abi, uint64_t sig, const int64_t *desc, int64_t magic, int lib_abi, char *err, size_t errlen);

/* The directory DIR/.PREFIX<TDA_COMMIT_DIR> holds the outputs of a `tdsl
 * build` that were committed but not all moved into DIR yet (a kill left
 * DIR half updated, compiler/build_dir.c); the next build finishes it. */
#define TDA_COMMIT_DIR ".tdsl-commit"

/* Is an update of the directory holding the artifact that contains addr
 * (the shared library, or the executable) by `tdsl build` unfinished,
 * its DIR/.NAME.tdsl-commit there (artifact.h's TDA_COMMIT_DIR; NAME the
 * file's name without ".so")?  Then 1, with a message in err: its files
 * may be of two builds, and create refuses.  0 otherwise, also when the
 * file cannot be found (a copy outside any build directory is whole). */
int tda_update_pending(const void *addr, char *err, size_t errlen);

/* load_weights' argument check, the same for both runtimes: -1 with the
 * message in err (and in the model's model_err when there is a model)
 * when there is no model or no path, else 0. */
int tda_weights_args(int have_model, const char *path, char *err, size_t errlen, char *model_err,
                     size_t model_errlen);

/* Checks a safetensors file from its header against the n parameters p
 * (exactly these names, dtypes and shapes; every problem listed, under
 * "PATH does not fit WHAT:", as `tdsl run --weights` says it), and only
 * then reads its tensors into w (initialised and freed by the caller).
 * 0, or -1 with a message in err. */
int tda_read_weights(const tda_param *p, int n, const char *what, const char *path, td_tensor_map *w, char *err,
                     size_t errlen);
/* Appends an entry's name to a model's label ("Simple.forward",
 * "MLP.forward, MLP.predict"), which weights messages name. */
void tda_label_add(char *label, size_t n, const char *entry);

/* ---- for callers without the generated header (tdrt_describe, tdrt_bind) ---- */

/* What a model holds, as JSON (td_malloc'd; NULL when out of memory): the
 * ABI, the dtype names by code, each entry (its name, size arguments in
 * order, inputs with names, outputs, dtypes, shapes: a literal size a
 * number, a symbolic one its text) and each parameter (name, dtype, shape,
 * bytes); entry(m, ei) gives the entries.  docs/python.md shows it. */
char *tda_describe(int abi, const tda_param *p, int n_params, tda_entry *(*entry)(void *m, int ei), void *m,
                   int n_entries);
/* Binds e's sizes from its inputs' dtypes (td_dtype codes), ranks and
 * shapes (concatenated) and checks them as `tdsl run` checks its
 * arguments (runtime/sig.c), then runs the entry's size checks; writes the
 * size arguments (argument order, for a call) to syms and every output's
 * shape (concatenated) to out_shapes.  e's own sizes are left as they
 * were.  0, or 1 (a bad argument) or 3 (out of memory) with a message in
 * err that starts with the entry's name. */
int tda_bind(tda_entry *e, const int *dtypes, const int *ranks, const int64_t *shapes, int64_t *syms,
             int64_t *out_shapes, char *err, size_t errlen);

/* The bytes of printed value a: into *data (host memory; td_free it when
 * *owned).  0 or the device's error code (its message set by it). */
typedef int (*tda_fetch_fn)(void *ud, const tda_arg *a, size_t bytes, void **data, int *owned);
/* Formats each print() of e (the interpreter's format) and hands the line
 * to print(print_ud, text); nothing when print is NULL.  0, 3 (out of
 * memory, message in err) or fetch's code. */
int tda_run_prints(const tda_entry *e, tda_fetch_fn fetch, void *ud, void (*print)(void *, const char *),
                   void *print_ud, char *err, size_t errlen);
/* The same for print i of e alone. */
int tda_run_print(const tda_entry *e, int i, tda_fetch_fn fetch, void *ud, void (*print)(void *, const char *),
                  void *print_ud, char *err, size_t errlen);

/* ---- the --exe command line ---- */

typedef struct tda_exe_opts {
  const char *entry, *weights;
  const char **in_name, **in_path, **out;   /* as many as the command line has */
  int n_in, n_out;
  long bench;
} tda_exe_opts;

/* 0, or 2 after a usage message on stderr (1 when out of memory); what it
 * allocated is freed by tda_exe_opts_free, whatever it returned. */
int tda_exe_parse(int argc, char **argv, tda_exe_opts *o);
void tda_exe_opts_free(tda_exe_opts *o);

/* A model as the command line drives it. */
typedef int (*tda_call_fn)(void *m, int ei, const int64_t *syms, void *const *args);

typedef struct tda_exe_model {
  void *m;
  int n_entries;
  tda_entry *(*entry)(void *m, int ei);
  int (*load_weights)(void *m, const char *path);
  tda_call_fn call;
  void (*quiet)(void *m);    /* drops print() output (--bench) */
  const char *(*error)(void *m);
  /* entry ei's own generated function, which a program calling the C API
   * runs (--bench times it directly), or NULL: call */
  tda_call_fn (*direct)(void *m, int ei);
} tda_exe_model;

/* Runs the command line o on x: the entry's .npy inputs, one call (or the
 * --bench loop), its outputs to .npy files or stdout.  0, or 1 after
 * "<argv0>: error: <why>" on stderr. */
int tda_exe_run(const tda_exe_model *x, const tda_exe_opts *o, const char *argv0);

#endif

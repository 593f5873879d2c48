/* build_common.h - what the CPU and the CUDA artifact builders share
 * (compiler/build.c, gpu/build_cuda.c; internal to them).
 *
 * The common builder state (entry points, parameters, the descriptor being
 * written, the data blob), lowering an entry point to its plan, the parts
 * of the descriptor both layouts have in common (artifact.h and
 * artifact_cuda.h: parameters, an entry's head up to its slots, its
 * prints), the gccjit pieces of the API context (types, imports, blobs,
 * forwarding and entry wrappers), the header's text, and how the outputs
 * reach the output directory, all of them or none (build_dir.c).
 */
#ifndef TD_BUILD_COMMON_H
#define TD_BUILD_COMMON_H

#include <libgccjit.h>
#include <stdio.h>

#include "lang/params.h"
#include "compiler/build.h"
#include "compiler/passes.h"
#include "compiler/plan.h"

/* One entry point (every one of the program but main). */
typedef struct tdb_entry {
  const char *name;          /* "MLP.forward" */
  char cname[128];           /* "mlp_forward" */
  td_graph *g, *opt;
  td_plan *plan;
  const td_diags *diags;     /* the sources, for the checks' locations */
  int args[TD_MAX_RANK * 8]; /* symbols passed as size arguments */
  int n_args;
} tdb_entry;

typedef struct tdb_param {
  const char *name;          /* the model's own name for it ("l0.weight") */
  const char *model;         /* the model it belongs to ("" for none) */
  const char *aname;         /* its name in the artifact (tdb_pack_params): name, or
                                "Model.name" when another model's parameter has it too */
  td_dtype dtype;
  int rank;
  int64_t shape[TD_MAX_RANK];
  td_init init;              /* its recipe, with the build's seed (runtime/param_init.h) */
  int64_t off;               /* its initial values in the data blob (--embed-weights), else -1 */
} tdb_param;

typedef struct tdb_builder {
  const td_build_opts *o;
  td_err *err;
  td_arena *a;
  tdb_entry *e;
  int n_e;
  tdb_param *p;
  int n_p;
  int64_t *w;                /* the descriptor */
  size_t n_w, cap_w;
  unsigned char *data;       /* parameters (64-byte aligned), then the device's */
  size_t n_data;
  int made_dir;              /* tdb_begin created o->dir (removed again when left empty) */
  int data_files;            /* tdb_data_symbol wrote the blob's files */
} tdb_builder;

/* The outputs: <prefix>.so, <prefix>.h and with exe <prefix>, each written
 * as tmp[i] into the build's staging directory inside the output
 * directory, where the entry objects go too (build_dir.c). */
typedef struct tdb_outs {
  char final[3][1300], tmp[3][1300];
  char stage[1100];          /* DIR/.PREFIX.tdsl-tmp.PID.XXXXXX ("" when none) */
  char commit[1100];         /* DIR/.PREFIX.tdsl-commit */
  int n;
} tdb_outs;
enum { TDB_SO, TDB_H, TDB_EXE };

/* Checks the output directory (created) and the runtime library, makes
 * the arena and the staging directory (tdb_dir_begin).  0 or -1 with
 * b->err. */
int tdb_begin(tdb_builder *b, const td_build_opts *o, td_err *err, tdb_outs *out);
/* Removes the staging directory when it is still there, and the output
 * directory when tdb_begin created it and nothing was built into it (a
 * failed build leaves no trace), frees b. */
void tdb_end(tdb_builder *b, const tdb_outs *out);

/* ---- the output directory (build_dir.c) ---- */
/* Finishes the updates of b->o->dir that killed builds left half done,
 * removes what dead builds left, makes the staging directory and the
 * names of out.  0 or -1 with b->err. */
int tdb_dir_begin(tdb_builder *b, tdb_outs *out);
/* Publishes the staged outputs: one rename commits them, then each takes
 * its place (see build_dir.c for what a kill leaves).  0, or -1 with
 * b->err and the earlier files untouched when nothing was committed. */
int tdb_commit(tdb_builder *b, const tdb_outs *out);
/* Removes the staging directory and its files (after a failure). */
void tdb_dir_end(const tdb_outs *out);

/* The entry points of prog but main, with their C names; returns a zeroed
 * array of what the device adds per entry (each bytes an entry), or NULL
 * with b->err. */
void *tdb_collect_entries(tdb_builder *b, td_program *prog, size_t each);
/* Lowers entry e, optimises and plans it (b->o->lower: the driver's
 * td_lower), finds its size arguments and adds its parameters with their
 * recipes (no values: those are made by tdb_pack_params when the weights
 * are embedded, else by the artifact's create). */
int tdb_lower_entry(tdb_builder *b, td_program *prog, tdb_entry *e);
/* Lays out the data blob: with b->o->embed_weights every parameter's
 * initial values (made here from its recipe, 64-byte aligned), then extra
 * bytes (zeroed, pad bytes after them); returns the parameters' end (0
 * without embedded weights) or -1 with b->err. */
int64_t tdb_pack_params(tdb_builder *b, size_t extra, size_t pad);
size_t tdb_param_bytes(const tdb_param *p);

/* ---- the descriptor ---- */
void tdb_put(tdb_builder *b, int64_t v);
void tdb_put_str(tdb_builder *b, const char *s);
/* magic, abi, the device word, n_entries, then the parameters. */
void tdb_put_start(tdb_builder *b, int64_t magic, int64_t abi, int64_t device);
/* A hash of what the header declares: every entry point (name, size
 * arguments, inputs' names and types, outputs' types) and every parameter
 * (name, dtype, shape).  The descriptor carries it; create compares it
 * with the header's. */
uint64_t tdb_signature(const tdb_builder *b);
/* The index among b's parameters of entry e's parameter `name` (its
 * model's), or -1. */
int tdb_param_index(const tdb_builder *b, const tdb_entry *e, const char *name);
/* The outputs the caller of entry e gets: its graph's, less a training
 * step's updates (which the plan hands back after them). */
int tdb_n_outs(const tdb_entry *e);
/* Name, sizes, inputs, outputs, polynomials, parameter slots, buffers and
 * slots of entry e (what comes before its n_dv). */
void tdb_put_entry_head(tdb_builder *b, const tdb_entry *e);
/* The polynomials (of p's graph), parameter slots (none for a scan's
 * body), buffers, slots and size checks of plan p of entry e: the part of
 * tdb_put_entry_head that a scan's body repeats (artifact.h). */
void tdb_put_plan(tdb_builder *b, const tdb_entry *e, const td_plan *p);
/* One entry of the dv table: rand_node >= 0 a random stream (that node's
 * of graph g), else the size dim. */
void tdb_put_dv1(tdb_builder *b, const td_graph *g, int rand_node, td_dim dim);
/* The PRINT nodes of entry e. */
void tdb_put_prints(tdb_builder *b, const tdb_entry *e);
/* The same for plan p of graph g (an entry's, or a scan body's). */
void tdb_put_plan_prints(tdb_builder *b, const td_graph *g, const td_plan *p);
/* A training step's updates, after the prints (CPU artifacts only:
 * artifact.h, "per update"). */
void tdb_put_updates(tdb_builder *b, const tdb_entry *e);

/* ---- the API context ---- */
typedef struct tdb_api {
  gcc_jit_context *ctx;
  gcc_jit_type *t_int, *t_i64, *t_vp, *t_vpp, *t_cp, *t_size, *t_void, *t_u8;
  gcc_jit_lvalue *desc;
  gcc_jit_rvalue *data;      /* the data blob's address (tdb_data_symbol) */
} tdb_api;

/* A new context (-O2, errors kept) with the common types. */
int tdb_api_init(tdb_api *A);
gcc_jit_function *tdb_fn_new(tdb_api *A, enum gcc_jit_function_kind kind, gcc_jit_type *ret, const char *name, int n,
                             gcc_jit_type **types, gcc_jit_param **ps);
gcc_jit_rvalue *tdb_ival(tdb_api *A, gcc_jit_type *t, long v);
gcc_jit_function *tdb_import(tdb_api *A, gcc_jit_type *ret, const char *name, int n, gcc_jit_type **types);
/* A global array of elem (each bytes) initialised with n bytes. */
gcc_jit_lvalue *tdb_blob(tdb_api *A, gcc_jit_type *elem, const char *name, const void *bytes, size_t n, size_t each);
/* &arr[0] as a void pointer. */
gcc_jit_rvalue *tdb_addr0(tdb_api *A, gcc_jit_lvalue *arr);
/* <prefix>_<suffix>(...) forwarding its parameters to the runtime's rt. */
void tdb_add_forward(tdb_builder *b, tdb_api *A, const char *suffix, gcc_jit_type *ret, const char *rt, int n,
                     gcc_jit_type **ts);
/* <prefix>_create_abi(int abi) calling create(abi, args...), and
 * <prefix>_abi_version(void) returning abi. */
void tdb_add_create(tdb_builder *b, tdb_api *A, const char *create, int abi, int n, gcc_jit_rvalue **args);
/* <prefix>_tdsl_new(int abi) calling create(abi, this model's signature,
 * args...): for callers that read the library's description rather than
 * compile against its header, so have no signature to pass. */
void tdb_add_create_own(tdb_builder *b, tdb_api *A, const char *create, int n, gcc_jit_rvalue **args);
/* int <cname><suffix>(void *m, int64_t sym..., void *in..., void *out...),
 * packing its arguments for call(m, entry, syms, args). */
void tdb_add_entry_fn(tdb_builder *b, tdb_api *A, gcc_jit_function *call, int ei, const char *suffix);
/* int main(int argc, char **argv) returning em(argc, argv, args...). */
void tdb_add_main(tdb_api *A, const char *em, int n, gcc_jit_rvalue **args);
/* The data blob as the read-only, 64-byte aligned symbol `sym` of the
 * library, never through the C compiler: its bytes go to a file in the
 * staging directory, which an assembler file there includes (.incbin);
 * ctx gets that file as a driver input, and A->data the symbol (an
 * imported array), or a NULL pointer when the blob is empty.  0 or -1
 * with b->err.  The files are written once per build; tdb_commit leaves
 * them out of the published outputs. */
int tdb_data_symbol(tdb_builder *b, tdb_api *A, const tdb_outs *out, const char *sym);
/* Compiles ctx (released) to a shared library or executable at path. */
int tdb_compile(tdb_builder *b, gcc_jit_context *ctx, int is_exe, const char *path);

/* ---- the header ---- */
/* Opens path; the first comment line of the header is written by the
 * caller, then tdb_header_guard. */
FILE *tdb_header_open(tdb_builder *b, const char *path);
/* The prefix in capitals (the header's macros). */
void tdb_upper(const char *p, char *up, size_t n);
/* The include guard, includes and extern "C" (abi: <PREFIX>_TDSL_ABI). */
void tdb_header_guard(const tdb_builder *b, FILE *f, int abi);
/* The comment line of entry e: its name and types. */
void tdb_header_sig(const tdb_entry *e, FILE *f);
/* int <cname><suffix>(<prefix>_model *m, sizes, inputs, outputs); */
void tdb_header_proto(const tdb_builder *b, const tdb_entry *e, const char *suffix, FILE *f);
int tdb_header_close(tdb_builder *b, FILE *f, const char *path);

#endif

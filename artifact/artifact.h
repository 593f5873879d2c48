/* artifact.h - the runtime of built artifacts (`tdsl build`), and the
 * descriptor that `tdsl build` writes for it.
 *
 * A built shared library holds: the kernels of every entry point (libgccjit
 * object code, one set per entry, named <prefix>_e<i>_<kernel>; a scan's
 * body's once, whatever its trip count, named <prefix>_e<i>_s<k>_<kernel>
 * for scan kernel k, nested scans adding _s<k> again), a
 * descriptor (a const int64_t array, layout below), with --embed-weights
 * the initial parameter bytes (else create makes them from each
 * parameter's recipe: runtime/param_init.h, as `tdsl run` does), small generated wrapper functions (the C API of the header), and
 * this runtime (artifact/artifact_rt.c with philox, the thread pool, npy and
 * safetensors I/O), linked in from libtdsl_rt.a.  Nothing else is needed at
 * run time but libc, libm and pthreads.
 *
 * Descriptor (every field one int64 word; a string is its length then its
 * bytes padded to whole words; a dim is a td_dim: >= 0 literal, < 0 an
 * index into the entry's polynomial table):
 *   magic TDRT_MAGIC, abi TDRT_ABI, isa (0 x86-64-v2, 1 v3, 2 v4, -1 any),
 *   signature (build_common.h's tdb_signature), n_entries, n_params
 *   per param:  name, dtype, rank, shape[rank], data offset (-1: not
 *               embedded), bytes, recipe (td_init): kind, a and b (the
 *               bits of doubles), seed, stream
 *   per entry:  name, n_syms, symbol names[n_syms], n_args,
 *               arg symbol ids[n_args],
 *               n_inputs, per input: name, dtype, rank, dims[rank]
 *               n_outputs, per output: buffer, dtype, rank, dims[rank]
 *               n_polys, per poly: n_terms, per term: coef, n, sym[16]
 *                 (TDA_MONO_MAX symbols, the first n used, the rest 0)
 *               n_param_slots, model param index per slot
 *               n_bufs, per buffer: kind (td_bkind), index, bytes dim
 *               n_slots, slot bytes dims
 *               n_checks, per run-time size check (runtime/sizecheck.h):
 *                 kind, axis, rank, dtype, axes, step, its dims (1, 3 or
 *                 rank of them), text, "file:line:col"
 *               n_dv, per entry: is_rand, dim or stream
 *               n_kernels, per kernel: parallel, extent, bytes_read,
 *                 bytes_written, flops, scratch bytes (-1: from mm n, k),
 *                 mm n dim, mm k dim, column blocks (tdc_kinfo.cols),
 *                 prepacked B (prepack.h): buffer, element size, NR (0:
 *                 none), n, k, offset, stride k, stride n, is_scan, and
 *                 for a scan kernel (is_scan 1) its scan (below)
 *               n_prints, per print: n_parts, per part: 0 and a string,
 *                 or 1, buffer, dtype, rank, dims[rank]
 *               n_updates (a training step's assign()s), per update: the
 *                 model's index of the parameter it writes, and the
 *                 buffer holding its value: that parameter's own memory
 *                 (a buffer of kind 4, TD_BUF_UPDATE, whose index is the
 *                 parameter's slot) when the kernels write it in place,
 *                 else a buffer the runtime copies into the parameter
 *                 after the kernels and the prints (the outputs are
 *                 copied before: a parameter returned keeps its value of
 *                 the call), through a copy made first when it is itself
 *                 an updated parameter (assign(a, b); assign(b, a))
 *   per scan:   steps (a dim of the kernel's entry or body), reverse,
 *               n_carry, n_xs, index (the body input that is the step, or
 *               -1), n_in, per body input: outer buffer (-1: the step),
 *               sliced (a sequence: row t at step t), slice bytes (a dim
 *               of the body), n_out, per body output: outer buffer, body
 *               buffer, bytes (a body dim), direct (the body's kernels
 *               write it: an OUTPUT buffer of its index); then the body,
 *               laid out as an entry from n_polys to its kernels (n_polys
 *               and polys, n_param_slots 0, n_bufs and buffers, n_slots
 *               and slots, n_checks and checks, n_dv and dv, n_kernels and
 *               kernels), its dims its own polynomials of the entry's
 *               symbols; then the scan's place among its entry's (or
 *               body's) prints: the number of PRINT nodes before it and
 *               its node (scans at one place print in node order); then
 *               the body's n_prints and prints, as an entry's (their
 *               buffers the body's): every step's lines print there.  The kernel table (tdrt_kernels_fn) writes an
 *               entry's kernels (NULL for a scan), its generated entry
 *               function, then each scan's body's kernels in order, a
 *               body's own before its scans' bodies'.
 */
#ifndef TD_ARTIFACT_H
#define TD_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

/* Version of the artifact ABI: the descriptor layout, the kernel calling
 * convention (jit_impl.h's tdc_kernel_fn and runtime table) and the C API.
 * The header a program compiles against passes its version to create. */
#define TDRT_ABI 7
#define TDRT_MAGIC 0x7464736c61727431ll /* "tdslart1" */

/* Error codes of an entry call. */
enum { TDRT_OK = 0, TDRT_EARG = 1, TDRT_EINDEX = 2, TDRT_ENOMEM = 3, TDRT_EENTRY = 4 };

typedef struct tdrt_model tdrt_model;
/* Writes the kernel addresses of entry e into out (one per kernel), then
 * its generated entry function (a tdrt_call_fn, or NULL), then its scans'
 * bodies' kernels (the descriptor's comment above). */
typedef void (*tdrt_kernels_fn)(int e, void **out);

/* A model with its initial parameters (from data when the descriptor
 * gives their offsets, else made from their recipes; data may be NULL
 * when no parameter is embedded); NULL when abi is not TDRT_ABI, the
 * descriptor is not one, this CPU lacks the instructions the kernels were
 * compiled for (the descriptor's isa), the library holds another model than
 * the header sig was taken from, an update of the artifact's directory by
 * tdsl build was interrupted (tda_update_pending), or memory ran out;
 * tdrt_error(NULL) then says which (in this thread). */
tdrt_model *tdrt_create(int abi, uint64_t sig, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels);
void tdrt_free(tdrt_model *m);
/* Replaces the parameters from a safetensors file (all of them, exact
 * dtypes and shapes).  0, or -1 with a message in err (and tdrt_error). */
int tdrt_load_weights(tdrt_model *m, const char *path, char *err, size_t errlen);
/* Where the entry points' print() calls go: fn(ud, text) per printed line
 * (text ends in a newline), after each successful call.  The default
 * writes to stdout; fn NULL drops them. */
typedef void (*tdrt_print_fn)(void *ud, const char *text);
void tdrt_set_print(tdrt_model *m, tdrt_print_fn fn, void *ud);
/* The message of the last failure ("" when none); with m NULL, why this
 * thread's last tdrt_create failed. */
const char *tdrt_error(const tdrt_model *m);
/* Calls entry e: syms holds the entry's symbolic sizes (argument order),
 * args its inputs then its outputs (caller-owned, contiguous). */
int tdrt_call(tdrt_model *m, int e, const int64_t *syms, void *const *args);
/* The per-call fast path of the generated entry functions (build.c):
 * after a successful call the runtime fills entry e's record,
 * ((tdrt_fast **)model)[0][e], when the next call with the same sizes and
 * weights needs nothing but the caller's pointers bound and the kernels
 * called (no prints, no scan, every output written in place, no kernel
 * split over threads); ok is 0 otherwise.  The generated function checks the sizes
 * and pointers, binds, calls the kernels directly, and otherwise calls
 * tdrt_call.  Every field is 8 bytes: build.c declares the same layout. */
#define TDRT_FAST_SYMS 8
#define TDRT_FAST_ARGS 24
#define TDRT_FAST_KERNS 16
typedef struct tdrt_fast {
  int64_t ok;
  void **bufs;
  int64_t *dv;
  void *scratch;
  void *const *rt;                  /* the kernels' runtime table */
  uint64_t *calls;                  /* the model's call counter */
  int64_t syms[TDRT_FAST_SYMS];     /* the sizes it holds for */
  int64_t bind[TDRT_FAST_ARGS];     /* per input, then output: its buffer (a spare one when unused) */
  int64_t ext[TDRT_FAST_KERNS];     /* per kernel: its range (skipped when <= 0) */
} tdrt_fast;
/* For the generated fast path: the random streams of this call (and the
 * call counter's step), and the error of a kernel's index check. */
void tdrt_fast_rand(tdrt_model *m, int e);
int tdrt_fast_index_error(tdrt_model *m, int e);
/* The generated entry function of entry e (build.c), written by the
 * kernels table at out[n_kernels]: what the --exe command line calls. */
typedef int (*tdrt_call_fn)(void *m, int e, const int64_t *syms, void *const *args);

/* For callers that read what the library holds instead of compiling
 * against its header (the Python package, docs/python.md); the generated
 * wrappers PREFIX_tdsl_* forward to these.  */
/* The model's description as JSON, owned by the model (made on the first
 * call; NULL with tdrt_error when out of memory): the dtype names by code,
 * per entry its name, size arguments, inputs (name, dtype, shape: a
 * literal size a number, a symbolic one its text, "N" or "2*N + 1"),
 * outputs, and the parameters (name, dtype, shape, bytes) in index order
 * (artifact_common.h's tda_describe). */
const char *tdrt_describe(tdrt_model *m);
/* Binds entry e's symbolic sizes from its inputs' dtypes (codes: the
 * description's list), ranks and shapes (concatenated) with the checks
 * and messages of `tdsl run` ("MLP.forward: argument 'x': expected
 * f32[N, 784], got f64[3, 784]: dtype is f64, expected f32"), and its
 * size checks; writes the size arguments for tdrt_call (argument order)
 * to syms and the outputs' shapes (concatenated) to out_shapes.  0, or an
 * error code with tdrt_error. */
int tdrt_bind(tdrt_model *m, int e, const int *dtypes, const int *ranks, const int64_t *shapes, int64_t *syms,
              int64_t *out_shapes);
/* tdrt_call through the entry's generated function, as PREFIX_method
 * calls it (the fast path when its record holds). */
int tdrt_call_entry(tdrt_model *m, int e, const int64_t *syms, void *const *args);
/* Copies parameter i's values (bytes: its size) out of the model, or into
 * it (the next call sees them; prepacked copies are made again).  0, or
 * TDRT_EARG with tdrt_error. */
int tdrt_get_param(tdrt_model *m, int i, void *dst, size_t bytes);
int tdrt_set_param(tdrt_model *m, int i, const void *src, size_t bytes);
/* Parameter i's own memory (NULL, with tdrt_error, when there is none):
 * its address does not change for the model's life; an entry that
 * assigns parameters (a training step) writes its new values there, in
 * place, at each call.  For reading: tdrt_set_param is how to change it
 * (the model keeps packed copies of some weights). */
void *tdrt_param_data(tdrt_model *m, int i);

/* main() of an --exe artifact. */
int tdrt_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data,
                  tdrt_kernels_fn kernels);

#endif

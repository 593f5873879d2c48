/* artifact.h - the runtime of built artifacts (`tdsl build`), and the
 * descriptor that `tdsl build` writes for it.
 *
 * A built shared library holds: the kernels of every entry point (libgccjit
 * object code, one set per entry, named <prefix>_e<i>_<kernel>), a
 * descriptor (a const int64_t array, layout below), the initial parameter
 * bytes, small generated wrapper functions (the C API of the header), and
 * this runtime (compiler/artifact_rt.c with philox, the thread pool, npy and
 * safetensors I/O), linked in from libtdsl_rt.a.  Nothing else is needed at
 * run time but libc, libm and pthreads.
 *
 * Descriptor (every field one int64 word; a string is its length then its
 * bytes padded to whole words; a dim is a td_dim: >= 0 literal, < 0 an
 * index into the entry's polynomial table):
 *   magic TDRT_MAGIC, abi TDRT_ABI, isa (0 x86-64-v2, 1 v3, 2 v4, -1 any),
 *   n_entries, n_params
 *   per param:  name, dtype, rank, shape[rank], data offset, bytes
 *   per entry:  name, n_syms, n_args, arg symbol ids[n_args],
 *               n_inputs, per input: name, dtype, rank, dims[rank]
 *               n_outputs, per output: buffer, dtype, rank, dims[rank]
 *               n_polys, per poly: n_terms, per term: coef, n, sym[4]
 *               n_param_slots, model param index per slot
 *               n_bufs, per buffer: kind (td_bkind), index, bytes dim
 *               n_slots, slot bytes dims
 *               n_dv, per entry: is_rand, dim or stream
 *               n_kernels, per kernel: parallel, extent, bytes_read,
 *                 bytes_written, flops, scratch bytes (-1: from mm n, k),
 *                 mm n dim, mm k dim, column blocks (tdc_kinfo.cols),
 *                 prepacked B (prepack.h): buffer, element size, NR (0:
 *                 none), n, k, offset, stride k, stride n
 *               n_prints, per print: n_parts, per part: 0 and a string,
 *                 or 1, buffer, dtype, rank, dims[rank]
 */
#ifndef TD_ARTIFACT_H
#define TD_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

/* Version of the artifact ABI: the descriptor layout, the kernel calling
 * convention (jit_impl.h's tdc_kernel_fn and runtime table) and the C API.
 * The header a program compiles against passes its version to create. */
#define TDRT_ABI 2
#define TDRT_MAGIC 0x7464736c61727431ll /* "tdslart1" */

/* Error codes of an entry call. */
enum { TDRT_OK = 0, TDRT_EARG = 1, TDRT_EINDEX = 2, TDRT_ENOMEM = 3, TDRT_EENTRY = 4 };

typedef struct tdrt_model tdrt_model;
/* Writes the kernel addresses of entry e into out (one per kernel). */
typedef void (*tdrt_kernels_fn)(int e, void **out);

/* A model with its initial parameters; NULL when abi is not TDRT_ABI, the
 * descriptor is not one, this CPU lacks the instructions the kernels were
 * compiled for (the descriptor's isa), or memory ran out. */
tdrt_model *tdrt_create(int abi, const int64_t *desc, const unsigned char *data, tdrt_kernels_fn kernels);
void tdrt_free(tdrt_model *m);
/* Replaces the parameters from a safetensors file (all of them, exact
 * dtypes and shapes).  0, or -1 with a message in err (and tdrt_error). */
int tdrt_load_weights(tdrt_model *m, const char *path, char *err, size_t errlen);
/* Where the entry points' print() calls go: fn(ud, text) per printed line
 * (text ends in a newline), after each successful call.  The default
 * writes to stdout; fn NULL drops them. */
typedef void (*tdrt_print_fn)(void *ud, const char *text);
void tdrt_set_print(tdrt_model *m, tdrt_print_fn fn, void *ud);
/* The message of the last failure ("" when none). */
const char *tdrt_error(const tdrt_model *m);
/* Calls entry e: syms holds the entry's symbolic sizes (argument order),
 * args its inputs then its outputs (caller-owned, contiguous). */
int tdrt_call(tdrt_model *m, int e, const int64_t *syms, void *const *args);
/* main() of an --exe artifact. */
int tdrt_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data,
                  tdrt_kernels_fn kernels);

#endif

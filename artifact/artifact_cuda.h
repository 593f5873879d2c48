/* artifact_cuda.h - the runtime of CUDA artifacts (`tdsl build --device
 * cuda`), and the descriptor gpu/build_cuda.c writes for it.
 *
 * A CUDA artifact's shared library holds the descriptor (a const int64_t
 * array, layout below), one data blob (the initial parameters, then per
 * entry point its module as a cubin for the built architecture and as PTX
 * text), small generated wrappers (the C API of the header) and this
 * runtime (artifact/artifact_cuda.c and runtime/cuda_loader.c, linked in from
 * libtdsl_rt.a).  At run time it needs libc, libm, libdl and the NVIDIA
 * driver (libcuda.so.1, found with dlopen), never NVRTC or the toolkit.
 *
 * Descriptor (int64 words; a string is its length then its bytes padded to
 * whole words; a dim is a td_dim: >= 0 literal, < 0 an index into the
 * entry's polynomial table):
 *   magic TDCU_MAGIC, abi TDCU_ABI, arch (90 for sm_90), signature
 *   (build_common.h's tdb_signature), n_entries, n_params
 *   per param:  name, dtype, rank, shape[rank], data offset (-1: not
 *               embedded), bytes, recipe (artifact.h)
 *   per entry:  name, n_syms, symbol names[n_syms], n_args,
 *               arg symbol ids[n_args],
 *               n_inputs, per input: name, dtype, rank, dims[rank]
 *               n_outputs, per output: buffer, dtype, rank, dims[rank]
 *               n_polys, per poly: n_terms, per term: coef, n, sym[16]
 *                 (TDA_MONO_MAX symbols, the first n used, the rest 0)
 *               n_param_slots, model param index per slot
 *               n_bufs, per buffer: kind (td_bkind), index, bytes dim
 *               n_slots, slot bytes dims
 *               n_dv, per entry: is_rand, dim or stream
 *               n_kernels, per kernel: name, kind (td_kkind), work dim,
 *                 m dim, n dim, vec, cols (codegen_cuda.h's td_cuda_kernel);
 *                 a scan (kind 4, TD_KERN_SCAN) then "per scan" below
 *               n_prints, per print: n_parts, per part: 0 and a string,
 *                 or 1, buffer, dtype, rank, dims[rank]
 *               cubin offset, cubin bytes, ptx offset, ptx bytes (in data)
 *   per scan (as CPU artifacts describe one, artifact.h): trip count dim,
 *               reverse, n_carry, n_xs, index input (-1: none),
 *               n_inputs, per body input: outer buffer (-1: the step
 *                 index), sliced, slice bytes dim
 *               n_outputs, per body output: outer buffer, body buffer,
 *                 bytes dim, written in place
 *               the body as an entry: polys ... slots, checks, n_dv and
 *               its dv entries, n_kernels and its kernels (functions in
 *               the entry's module, named s<k>_...; nested scans the same)
 * A scan runs from the host: its body's kernels launched once per step
 * with that step's tables (artifact_cuda.c, "the host loop").
 */
#ifndef TD_ARTIFACT_CUDA_H
#define TD_ARTIFACT_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* Version of the CUDA artifact ABI (descriptor layout, kernel signature of
 * codegen_cuda.h, the C API).  The header passes its version to create. */
#define TDCU_ABI 3
#define TDCU_MAGIC 0x7464736c63756431ll /* "tdslcud1" */

/* Error codes of calls (the CPU artifact's, plus a failed CUDA call). */
enum { TDCU_OK = 0, TDCU_EARG = 1, TDCU_EINDEX = 2, TDCU_ENOMEM = 3, TDCU_EENTRY = 4, TDCU_ECUDA = 5 };

typedef struct tdcu_model tdcu_model;
typedef void (*tdcu_print_fn)(void *ud, const char *text);

/* A model on GPU $TDSL_CUDA_DEVICE (default 0) with its initial parameters
 * uploaded; NULL when the ABI or descriptor is wrong, there is no driver or
 * device, the kernels do not load on this GPU, or memory ran out, with the
 * reason in tdcu_error(NULL) (one sentence, per thread). */
tdcu_model *tdcu_create(int abi, uint64_t sig, const int64_t *desc, const unsigned char *data);
void tdcu_free(tdcu_model *m);
/* The message of m's last failure ("" when none); m NULL: of the calling
 * thread's last failed tdcu_create. */
const char *tdcu_error(const tdcu_model *m);
/* Replaces every parameter from a safetensors file (exact dtypes/shapes);
 * 0, or -1 with the message in err and tdcu_error. */
int tdcu_load_weights(tdcu_model *m, const char *path, char *err, size_t errlen);
/* Where print() output goes (after the call or tdcu_synchronize); default
 * stdout, fn NULL drops it. */
void tdcu_set_print(tdcu_model *m, tdcu_print_fn fn, void *ud);
/* Entry e with host pointers (inputs then outputs, contiguous): copies in,
 * runs, copies out and waits.  0 or a TDCU_E* code. */
int tdcu_call(tdcu_model *m, int e, const int64_t *syms, void *const *args);
/* Entry e with device pointers: only enqueues on the model's stream. */
int tdcu_call_device(tdcu_model *m, int e, const int64_t *syms, void *const *args);
/* The model's stream (a CUstream). */
void *tdcu_stream(const tdcu_model *m);
/* Waits for the enqueued calls; reports their index errors and prints. */
int tdcu_synchronize(tdcu_model *m);
/* main() of an --exe CUDA artifact. */
int tdcu_exe_main(int argc, char **argv, const int64_t *desc, const unsigned char *data);

#endif

/* compiled.h - a graph compiled to machine code, and running it.
 *
 * td_compile turns a kernel plan (plan.h) into native code in memory with
 * libgccjit: one C-like function per kernel, compiled in one gccjit
 * context, with an explicit -march chosen from the CPU's features at run
 * time.  The td_compiled keeps the gcc_jit_result alive as long as its code
 * may run.  td_compiled_run binds the symbolic sizes from the inputs (as
 * the interpreter does), lays out the arena of temporaries, allocates the
 * outputs and calls the kernels in order.
 *
 * Results match the interpreter's: the same formulas per element (runtime
 * /scalar.h's semantics), random numbers from the same Philox stream, f32
 * sums accumulated in f64.  Matmul and reductions may sum in a different
 * order, so floats agree to rounding, not bit for bit.
 */
#ifndef TD_COMPILED_H
#define TD_COMPILED_H

#include "lang/params.h"
#include "runtime/run_opts.h"
#include "compiler/plan.h"

typedef struct td_compiled td_compiled;

typedef struct td_compile_opts {
  int opt_level;        /* 0..3; -1 for the default (2, with the vectoriser on) */
  int keep_c;           /* keep the C-like text of every kernel (td_compiled_c_text) */
  const char *march;    /* NULL: chosen from the CPU (x86-64-v2/v3/v4) */
  /* Use the compile cache: a directory of shared objects keyed by a hash
   * of the kernels' gccjit dump (which names every op, size and the
   * -march), each stored with that dump and reused only when the dump is
   * identical.  The directory is $TDSL_CACHE_DIR, else
   * $XDG_CACHE_HOME/tdsl, else ~/.cache/tdsl; TDSL_CACHE=0 turns it off.
   * A directory that cannot be used compiles in memory with a warning
   * (td_compiled_warning).  0 compiles in memory. */
  int cache;
} td_compile_opts;

/* Compiles a plan.  The plan (and its graph) must outlive the result.
 * Errors inside libgccjit are reported as "internal compiler error in
 * kernel NAME: ..." in err; returns NULL then. */
td_compiled *td_compile(const td_plan *plan, const td_compile_opts *opts, td_err *err);
void td_compiled_free(td_compiled *c);   /* NULL is fine */

/* Did td_compile find the code in the compile cache? */
int td_compiled_from_cache(const td_compiled *c);

/* Why the compile cache could not be used or written, when it could not:
 * "cannot write the compile cache DIR: Permission denied; compiled in
 * memory" (the code is then compiled in memory and runs all the same), or
 * NULL.  One sentence, for the caller to show as a warning. */
const char *td_compiled_warning(const td_compiled *c);
/* 1 when td_compile built the kernels' gccjit context (a miss, or
 * keep_c); a cache hit builds none. */
int td_compiled_generated(const td_compiled *c);

/* The -march level this CPU supports: "x86-64-v4" (AVX-512), "x86-64-v3"
 * (AVX2+FMA) or "x86-64-v2" (libgccjit rejects -march=native). */
const char *td_detect_march(void);

/* The -march the kernels were compiled for ("x86-64-v3"). */
const char *td_compiled_march(const td_compiled *c);
/* With keep_c: the gccjit dump of all kernels (C-like text), else NULL. */
const char *td_compiled_c_text(const td_compiled *c);

/* Runs the compiled graph.  inputs: one per INPUT node; params: one per
 * PARAM node; call_index as in td_run_opts (rand streams).
 * Prepacked weights: a matmul whose B is a parameter (x @ w.T) reads a
 * packed copy of it kept in c (docs/compiler.md), made again whenever the
 * parameter is another tensor than last time (by td_tensor.id).  Tensors
 * are values: do not write into a parameter tensor between calls (pass a
 * new tensor with the new values instead), or the old copy is used.  On success
 * *outs is a td_malloc'd array of plan->n_out_nodes tensors: the graph's
 * outputs, then the printed values (see td_compiled_prints); the caller
 * releases each and td_frees the array.  On failure returns -1 with err
 * filled and, when a node is to blame, *err_span set to its span. */
int td_compiled_run(td_compiled *c, td_tensor *const *inputs, td_tensor *const *params,
                    uint64_t call_index, td_tensor ***outs, td_err *err, td_span *err_span);

/* Prints what the graph's PRINT nodes print, in program order, from the
 * values td_compiled_run returned, through opts->on_print and with exactly
 * the interpreter's formatting.  Returns 0 or -1 (out of memory). */
int td_compiled_prints(const td_plan *plan, td_tensor *const *outs, const td_run_opts *opts,
                       td_err *err);
/* td_compiled_prints for the last td_compiled_run of c, scans included:
 * each SCAN prints, where it stands in the graph, what its body printed
 * at every step (in the order of the steps, nested scans' prints within
 * their step), as eager mode prints it.  Forgets those values. */
int td_compiled_run_prints(td_compiled *c, td_tensor *const *outs, const td_run_opts *opts, td_err *err);

#endif

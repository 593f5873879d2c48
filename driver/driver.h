/* driver.h - the one way from a checked graph to a result.
 *
 * Every command and the REPL go through here: choose a backend (one enum,
 * one parser of its name), lower the graph to a kernel plan once
 * (td_lower: optimise, then plan; the planner verifies what it makes),
 * then run, build or explain on that backend.  The backends are a table
 * (driver.c): the interpreter, which needs no plan, and the CPU and CUDA
 * compilers, which take the plan.  Nothing else in the tree spells out
 * "optimise then plan" or switches over the backends.
 *
 * Like every library layer the driver prints nothing of its own: dumps go
 * to the FILE the caller names, warnings to a callback, errors to a td_err.
 */
#ifndef TD_DRIVER_H
#define TD_DRIVER_H

#include <stddef.h>
#include <stdio.h>

#include "compiler/build.h"
#include "compiler/explain.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "lang/elab.h"
#include "lang/params.h"
#include "runtime/run_opts.h"

typedef enum td_backend {
  TD_BACKEND_EAGER,   /* the interpreter, op by op: the reference semantics */
  TD_BACKEND_CPU,     /* the kernel plan compiled to native code (libgccjit) */
  TD_BACKEND_CUDA,    /* the kernel plan as CUDA kernels (NVRTC), on the GPU */
  TD_BACKEND_COUNT
} td_backend;

/* The backend a device name chooses: "cpu" (TD_BACKEND_CPU) or "cuda"
 * (TD_BACKEND_CUDA).  0, or -1 for any other name (NULL included).
 * `--device` of every command and the REPL's `:device` read it. */
int td_backend_parse(const char *name, td_backend *b);

/* "eager", "cpu" or "cuda". */
const char *td_backend_name(td_backend b);

/* Dump bits, beside the passes' (1 << td_pass_index(...), below 1 << 16). */
#define TD_DUMP_PASSES 0xffffu
#define TD_DUMP_FUSED (1u << 16)  /* the kernel plan */
#define TD_DUMP_C (1u << 17)      /* the CPU kernels as C-like code */
#define TD_DUMP_CUDA (1u << 18)   /* the CUDA module */

/* The dump bit of a stage name name[0..len): a pass ("legalize", "fold",
 * "cse", "simplify", "dce"), "fused", "c" or "cuda"; 0 for anything else. */
unsigned td_dump_stage(const char *name, size_t len);

typedef struct td_drive_opts {
  td_backend backend;
  unsigned dumps;           /* TD_DUMP_* and pass bits; a backend writes those it makes */
  FILE *dump;               /* where dumps go (NULL: none are written) */
  FILE *debug;              /* TDSL_DEBUG >= 4: the CPU kernels' C-like code too (NULL: nowhere) */
  const td_diags *diags;    /* the sources, for dumps' locations (may be NULL) */
  int cuda_graph;           /* CUDA: launch the kernels as one CUDA Graph */
  /* Called with a warning sentence (the compile cache cannot be used). */
  void (*on_warning)(void *ud, const char *text);
  void *ud;
} td_drive_opts;

/* The one lowering: optimises g (compiler/passes.h) and plans the result
 * (compiler/plan.h), both in g's arena.  o may be NULL; with o, the
 * graph after each pass in o->dumps and with TD_DUMP_FUSED the plan are
 * written to o->dump.  st (may be NULL) receives the passes' counts.
 * NULL with err filled when the graph cannot be planned. */
td_plan *td_lower(const td_graph *g, const td_drive_opts *o, td_opt_stats *st, td_err *err);

/* A graph made ready to run on a backend, for as many runs as wanted:
 * nothing for the interpreter, the plan for CUDA, the plan compiled for
 * the CPU.  g (and its arena) must outlive it. */
typedef struct td_prepared td_prepared;

/* Prepares g for o->backend, writing the dumps that backend makes.  NULL
 * with err filled (the graph cannot be planned or compiled, no GPU). */
td_prepared *td_prepare(const td_graph *g, const td_drive_opts *o, td_err *err);
void td_prepared_free(td_prepared *p);   /* NULL is fine */

/* Runs a prepared graph; the contract of td_interp_run (interp/interp.h):
 * inputs and params in the graph's order, *outs a td_malloc'd array of its
 * outputs, prints through io->on_print, after the call for compiled
 * backends.  io->trace and io->check_numerics run op by op: only the
 * interpreter takes them, the others refuse with an error saying so. */
int td_prepared_run(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params,
                    const td_run_opts *io, td_tensor ***outs, td_err *err, td_span *sp);

/* td_prepare, td_prepared_run and td_prepared_free: one run of g. */
int td_drive_run(const td_graph *g, const td_drive_opts *o, td_tensor *const *inputs,
                 td_tensor *const *params, const td_run_opts *io, td_tensor ***outs, td_err *err,
                 td_span *sp);

/* `tdsl explain` of one entry point: lowers g (with o's dumps) and writes
 * the compiler's report (compiler/explain.h; index: the entry's place in
 * the report) to out.  *plan (may be NULL) receives the plan, for
 * td_drive_explain_backend.  0, or -1 with err filled. */
int td_drive_explain(const td_graph *g, const td_drive_opts *o, const td_explain_opts *eo, int index,
                     FILE *out, td_plan **plan, td_err *err);

/* What o->backend adds to the report of plan (entry point `entry`): the
 * CUDA launches; nothing for the CPU and the interpreter.  0 or -1. */
int td_drive_explain_backend(const td_plan *plan, const td_drive_opts *o, const char *entry, FILE *out,
                             td_err *err);

/* `tdsl build`: the artifact of every entry point of p but main, for
 * backend b (CPU or CUDA; the interpreter builds nothing), planned by
 * td_lower.  0, or -1 with err filled (program errors are in p's
 * diagnostics when lowering failed). */
int td_drive_build(td_program *p, td_backend b, const td_build_opts *o, td_err *err);

#endif

/* build.h - `tdsl build`: a model compiled into a self-contained artifact.
 *
 * td_build writes into dir: <prefix>.so (the kernels of every entry point,
 * each parameter's recipe, with embed_weights its initial values, the C API and the artifact runtime of
 * artifact_rt.c), <prefix>.h (the C API), and with exe also <prefix> (an
 * executable reading .npy inputs; see docs/compiler.md, "Artifacts and
 * their C API").  The artifact needs only libc, libm and pthreads.
 */
#ifndef TD_BUILD_H
#define TD_BUILD_H

#include "compiler/plan.h"
#include "lang/elab.h"
#include "runtime/tensor.h"

typedef struct td_build_opts {
  const char *dir;       /* output directory (created) */
  const char *prefix;    /* C name prefix and file stem ("simple") */
  const char *source;    /* the .td file, named in the header */
  const char *rt_lib;    /* path of libtdsl_rt.a */
  const char *march;     /* NULL: the building CPU's level (x86-64-v2/v3/v4) */
  int exe;               /* also write the executable */
  uint64_t seed;         /* parameter initialisation, as `tdsl run --seed` */
  int embed_weights;     /* store the initial parameters in the library (else
                            create makes them from their recipes) */
  const char *cuda_arch; /* gpu/build_cuda.h's builds: "sm_90"; NULL: sm_90 */
  const char *const *entries;  /* --entry: build only these entry points (n_entries > 0) */
  int n_entries;
  /* The program's sources, for messages naming a file:line:col (set by
   * the driver's td_drive_build). */
  const td_diags *diags;
  /* Lowers an entry point's graph to its kernel plan (in the graph's
   * arena); NULL with err filled.  The driver's td_lower: a build plans
   * exactly as `tdsl run` does. */
  td_plan *(*lower)(const td_graph *g, const struct td_build_opts *o, td_err *err);
} td_build_opts;

/* Builds every entry point of p except main for the CPU (the driver's
 * td_drive_build chooses between this and gpu/build_cuda.h's).  Returns 0,
 * or -1 with err filled (program errors are in p's diagnostics when
 * lowering failed). */
int td_build(td_program *p, const td_build_opts *o, td_err *err);

#endif

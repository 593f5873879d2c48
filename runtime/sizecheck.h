/* sizecheck.h - the run-time size checks of an entry point, evaluated once
 * per set of sizes by every backend (interpreter, compiled CPU code, CUDA,
 * built artifacts).
 *
 * What eager mode used to find while running (a slice past its input, a
 * size that comes out negative, a tensor too large to hold, a max over an
 * empty axis) depends on the symbolic sizes only.  lang/checks.c turns
 * each such condition that the checker could not prove for every size into
 * a td_sizecheck; every backend evaluates the same list, in the same
 * order, before running anything, and the first failure is the error, with
 * the message the interpreter always gave.  Sizes are opaque here: a
 * td_sizecheck holds size handles (td_dim values of the graph, or of an
 * artifact's table) and the caller evaluates them.
 */
#ifndef TD_SIZECHECK_H
#define TD_SIZECHECK_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor.h"

typedef enum td_sc_kind {
  TD_SC_SIZE,   /* dims[0] (written `text`), axis `axis` of a node: >= 0 */
  TD_SC_NUMEL,  /* a node of dtype `dtype` and shape dims[0..rank): its bytes fit an int64
                   (the interpreter's limit on the size of one tensor,
                   TDSL_MAX_TENSOR_BYTES, is its own: fused code never holds
                   most of its intermediate tensors) */
  TD_SC_SLICE,  /* along axis `axis`: input size dims[0], start dims[1], count dims[2],
                   step `step`: every element read lies in [0, size) */
  TD_SC_VALUE,  /* op `text` reduces axes `axes` of shape dims[0..rank): when the
                   result has elements, the reduced axes have some too */
  TD_SC_KIND_COUNT
} td_sc_kind;

typedef struct td_sizecheck {
  td_sc_kind kind;
  int axis;                    /* SIZE, SLICE */
  int rank;                    /* NUMEL, VALUE: entries of dims used */
  int dtype;                   /* NUMEL */
  uint32_t axes;               /* VALUE */
  int64_t step;                /* SLICE */
  int64_t dims[TD_MAX_RANK];   /* size handles, evaluated by the caller */
  const char *text;            /* SIZE: the size as written ("N - 2"); VALUE: the op */
} td_sizecheck;

/* How many of dims a check uses: 1 (SIZE), 3 (SLICE) or rank. */
int td_sizecheck_n_dims(const td_sizecheck *c);

/* Evaluates size handle d; sets *overflow when the value does not fit an
 * int64 (the value is then meaningless). */
typedef int64_t (*td_sc_eval_fn)(const void *ctx, int64_t d, int *overflow);

/* Runs n checks in order, the first at `first` and each `stride` bytes
 * after the one before (so a check may head a larger record); returns the
 * index of the first that fails, with its message in err, or -1 when all
 * hold. */
int td_sizecheck_run(const td_sizecheck *first, size_t stride, int n, td_sc_eval_fn eval, const void *ctx,
                     td_err *err);

#endif

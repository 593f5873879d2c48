/* param_init.h - a parameter's initial values made from its recipe.
 *
 * The interpreter, compiled code and CUDA runtime (through lang/params.c)
 * and the runtime of built artifacts (artifact/artifact_common.c, which
 * must not link the compiler) initialise parameters with this one code, so
 * `tdsl run --seed N` and an artifact built with `tdsl build --seed N`
 * give every parameter the same bits.  Element i of a random recipe uses
 * the seed, the parameter's stream (td_init_stream) and the counter i:
 *   ZEROS / ONES / FULL   0, 1, a
 *   UNIFORM               a + (b - a) * td_rand_uniform(seed, stream, i)
 *   NORMAL                a + b * td_rand_normal(seed, stream, i)
 * computed in double, then rounded to the parameter's dtype.
 */
#ifndef TD_PARAM_INIT_H
#define TD_PARAM_INIT_H

#include <stdint.h>

#include "runtime/tensor.h"

/* How a parameter is initialised without weights.  The numbers are stable:
 * artifact descriptors store them (artifact.h). */
typedef enum td_init_kind {
  TD_INIT_ZEROS,   /* every element 0 */
  TD_INIT_ONES,    /* every element 1 */
  TD_INIT_FULL,    /* every element a (integers: a truncated) */
  TD_INIT_UNIFORM, /* uniform in [a, b) */
  TD_INIT_NORMAL,  /* normal, mean a, standard deviation b */
  TD_INIT_KIND_COUNT
} td_init_kind;

/* One parameter's recipe. */
typedef struct td_init {
  td_init_kind kind;
  double a, b;               /* the kind's arguments (above) */
  uint64_t seed;             /* the run's seed (tdsl run/build --seed) */
  uint64_t stream;           /* td_init_stream of the parameter */
} td_init;

/* The stream of parameter `name` (its state_dict path): td_hash_str(name),
 * mixed with td_hash_mix when salt (attr.stream: the 2nd, 3rd... top-level
 * instance of a program) is not 0. */
uint64_t td_init_stream(const char *name, uint64_t salt);

/* Writes the recipe's values into the n elements of dtype dt at data.
 * 0, or -1 with err set for an unknown kind or dtype. */
int td_init_fill(void *data, td_dtype dt, int64_t n, const td_init *r, td_err *err);

#endif

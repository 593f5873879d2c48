/* params.h - a graph's arguments and parameters, for every backend.
 *
 * Binding the inputs (which gives the symbolic sizes their values) and
 * making the parameters (from their recipes, or from loaded weights) are
 * the same for the interpreter, compiled code and the CUDA runtime, so they
 * live here, over the IR and the runtime, and no backend reaches into
 * another for them.  lang/params.c.
 */
#ifndef TD_PARAMS_H
#define TD_PARAMS_H

#include "lang/ir.h"
#include "runtime/io.h"

/* Binds the graph's symbolic sizes from the shapes of `inputs` (one tensor
 * per INPUT node, in argument order) and checks dtypes and every dim.
 * symvals must hold g->n_syms entries.  A mismatch is an error naming the
 * argument, the expected type (with its symbols) and the actual one. */
int td_bind_inputs(const td_graph *g, td_tensor *const *inputs, int n_inputs,
                   int64_t *symvals, td_err *err);

/* Builds one tensor per PARAM node (in g->params order) into params[].
 * With weights == NULL, each is initialised from its recipe (attr.init) with
 * the seed `seed` and a stream derived from its name.  With weights, every
 * parameter must be present with the right dtype and shape and no extra
 * entries may exist; otherwise the error lists every problem. */
int td_make_params(const td_graph *g, const td_tensor_map *weights, uint64_t seed,
                   td_tensor **params, td_err *err);

/* The shape (shape[n->rank]) and recipe (runtime/param_init.h, with the
 * seed `seed`) of PARAM node n, as td_make_params initialises it.  0, or
 * -1 with err set for a symbolic size or an unknown initialiser. */
int td_param_recipe(const td_graph *g, const td_node *n, uint64_t seed, int64_t *shape, td_init *r,
                    td_err *err);

/* Checks what a weights file holds (have: tensors or header-only tensors,
 * by name) against g's parameters, as td_make_params does: 0, or -1 with
 * every problem, under "FILE does not fit <g's name>:" when file is not
 * NULL (runtime/sig.h's td_sig_check_weights). */
int td_check_weights(const td_graph *g, const char *file, const td_named_tensor *have, int n_have,
                     td_err *err);

#endif

/* params.c - a graph's arguments bound, its parameters initialised or loaded.
 *
 * td_bind_inputs gives the symbolic sizes their values from the inputs' shapes
 * (runtime/sig.c checks them); every backend calls it before it runs.
 *
 * Without weights every PARAM node gets a fresh tensor built from its
 * recipe (attr.init, init_a, init_b), reproducibly: runtime/param_init.h
 * fills it from the run's seed and a stream derived from the parameter's
 * name (the state_dict path, salted by attr.stream for the 2nd, 3rd...
 * top-level instance of a program), so the same parameter gets the same
 * values in every backend and in built artifacts, which run the same code
 * when they are created (td_param_recipe gives `tdsl build` the recipe).
 *
 * With weights, every problem is collected first - missing names, names
 * that are not parameters, wrong dtypes, wrong shapes - and reported in one
 * message, one line per problem (runtime/sig.c's td_sig_check_weights,
 * which the artifacts use too); only a clean match retains the tensors.
 */
#include <stdio.h>
#include <string.h>

#include "lang/params.h"
#include "runtime/mem.h"

/* The literal shape of a PARAM node (parameters are never symbolic). */
static int param_shape(const td_graph *g, const td_node *n, int64_t *shape, td_err *err) {
  for (int k = 0; k < n->rank; k++) {
    if (!TD_DIM_IS_CONST(n->shape[k])) {
      char ds[128];
      return td_err_set(err, "parameter '%s' has the symbolic size %s; parameter sizes "
                        "must be known when the model is built", n->name ? n->name : "?",
                        td_dim_str(g, n->shape[k], ds, sizeof ds));
    }
    shape[k] = td_dim_eval(g, n->shape[k], NULL);
  }
  return 0;
}

int td_param_recipe(const td_graph *g, const td_node *n, uint64_t seed, int64_t *shape, td_init *r,
                    td_err *err) {
  if (param_shape(g, n, shape, err) < 0) return -1;
  const td_attr *a = &n->attr;
  if ((int)a->init < 0 || a->init >= TD_INIT_KIND_COUNT)
    return td_err_set(err, "parameter '%s' has an unknown initialiser %d", n->name ? n->name : "?", (int)a->init);
  /* attr.stream salts the stream of the 2nd, 3rd... top-level instance of
   * a program, so two instances of one model get different weights */
  *r = (td_init){a->init, a->init_a, a->init_b, seed, td_init_stream(n->name, a->stream)};
  return 0;
}

static td_tensor *init_param(const td_graph *g, const td_node *n, uint64_t seed, td_err *err) {
  int64_t shape[TD_MAX_RANK];
  td_init r;
  if (td_param_recipe(g, n, seed, shape, &r, err) < 0) return NULL;
  td_tensor *t = td_tensor_new(n->dtype, n->rank, shape, err);
  if (t && td_init_fill(t->data, t->dtype, t->numel, &r, err) < 0) {
    td_tensor_release(t);
    return NULL;
  }
  return t;
}

/* ---- binding the inputs (runtime/sig.c) -------------------------------- */

int td_bind_inputs(const td_graph *g, td_tensor *const *inputs, int n_inputs,
                   int64_t *symvals, td_err *err) {
  if (n_inputs != g->n_inputs)
    return td_err_set(err, "%s takes %d argument%s, got %d", g->name && *g->name ? g->name : "the graph",
                      g->n_inputs, g->n_inputs == 1 ? "" : "s", n_inputs);
  td_sig_arg few[16], *args = few;
  if (n_inputs > 16 && !(args = td_malloc((size_t)n_inputs * sizeof *args)))
    return td_err_set(err, "out of memory");
  for (int k = 0; k < n_inputs; k++) args[k] = td_node_sig(&g->nodes[g->inputs[k]]);
  td_sizes s = td_graph_sizes(g);
  int rc = td_sig_bind(&s, args, n_inputs, (const td_tensor *const *)inputs, symvals, err);
  if (args != few) td_free(args);
  return rc;
}

/* ---- checking loaded weights (runtime/sig.c) ---- */

int td_check_weights(const td_graph *g, const char *file, const td_named_tensor *have, int n_have,
                     td_err *err) {
  int64_t shape[TD_MAX_RANK];
  for (int k = 0; k < g->n_params; k++)
    if (param_shape(g, &g->nodes[g->params[k]], shape, err) < 0) return -1;
  td_sig_arg *p = td_malloc((size_t)(g->n_params + 1) * sizeof *p);
  if (!p) return td_err_set(err, "out of memory");
  for (int k = 0; k < g->n_params; k++) p[k] = td_node_sig(&g->nodes[g->params[k]]);
  int rc = td_sig_check_weights(file, g->name, p, g->n_params, have, n_have, err);
  td_free(p);
  return rc;
}

int td_make_params(const td_graph *g, const td_tensor_map *weights, uint64_t seed,
                   td_tensor **params, td_err *err) {
  for (int k = 0; k < g->n_params; k++) params[k] = NULL;
  if (weights && td_check_weights(g, NULL, weights->items, weights->n, err) < 0) return -1;
  for (int k = 0; k < g->n_params; k++) {
    const td_node *n = &g->nodes[g->params[k]];
    if (weights) params[k] = td_tensor_retain(td_tensor_map_get(weights, n->name ? n->name : ""));
    else params[k] = init_param(g, n, seed, err);
    if (!params[k]) {
      for (int j = 0; j < k; j++) {
        td_tensor_release(params[j]);
        params[j] = NULL;
      }
      return -1;
    }
  }
  return 0;
}

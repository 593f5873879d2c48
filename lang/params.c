/* params.c - a graph's arguments bound, its parameters initialised or loaded.
 *
 * td_bind_inputs gives the symbolic sizes their values from the inputs' shapes
 * (runtime/sig.c checks them); every backend calls it before it runs.
 *
 * Without weights every PARAM node gets a fresh tensor built from its
 * recipe (attr.init), reproducibly: element i of a random initialiser uses
 * the run's seed, the stream td_hash_str(name) (the state_dict path; mixed
 * with td_hash_mix when attr.stream, the instance salt, is not 0: the 2nd,
 * 3rd... top-level instance of a program) and the counter i, so the same
 * parameter gets the same values in every backend:
 *   ZEROS / ONES / FULL   0, 1, init_a
 *   UNIFORM               lo + (hi - lo) * td_rand_uniform(seed, h, i),
 *                         lo = init_a, hi = init_b
 *   NORMAL                mean + std * td_rand_normal(seed, h, i),
 *                         mean = init_a, std = init_b
 * (computed in double, then rounded to the parameter's dtype).
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
#include "runtime/philox.h"

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

/* Every element of t set to f (float dtypes) or i (integer and bool). */
static void fill_const(td_tensor *t, double f, int64_t i) {
  for (int64_t k = 0; k < t->numel; k++) switch (t->dtype) {
    case TD_I32: ((int32_t *)t->data)[k] = (int32_t)i; break;
    case TD_I64: ((int64_t *)t->data)[k] = i; break;
    case TD_BOOL: ((uint8_t *)t->data)[k] = i != 0; break;
    default: td_tensor_set(t, k, f); break;
    }
}

/* Writes v(i) = a + b * r(i) for a random recipe into t. */
static void init_random(td_tensor *t, int normal, double a, double b, uint64_t seed,
                        uint64_t stream) {
  for (int64_t i = 0; i < t->numel; i++) {
    double r = normal ? td_rand_normal(seed, stream, (uint64_t)i)
                      : td_rand_uniform(seed, stream, (uint64_t)i);
    double v = normal ? a + b * r : a + (b - a) * r;
    if (t->dtype == TD_F32) ((float *)t->data)[i] = (float)v;
    else if (t->dtype == TD_F64) ((double *)t->data)[i] = v;
    else td_tensor_set(t, i, v);
  }
}

static td_tensor *init_param(const td_graph *g, const td_node *n, uint64_t seed, td_err *err) {
  int64_t shape[TD_MAX_RANK];
  if (param_shape(g, n, shape, err) < 0) return NULL;
  td_tensor *t = td_tensor_new(n->dtype, n->rank, shape, err);
  if (!t) return NULL;
  const td_attr *a = &n->attr;
  /* attr.stream salts the stream of the 2nd, 3rd... top-level instance of
   * a program, so two instances of one model get different weights */
  uint64_t stream = td_hash_str(n->name ? n->name : "");
  if (n->attr.stream) stream = td_hash_mix(stream, n->attr.stream);
  switch (a->init) {
  case TD_INIT_ZEROS: fill_const(t, 0.0, 0); break;
  case TD_INIT_ONES: fill_const(t, 1.0, 1); break;
  case TD_INIT_FULL: fill_const(t, a->init_a, (int64_t)a->init_a); break;
  case TD_INIT_UNIFORM: init_random(t, 0, a->init_a, a->init_b, seed, stream); break;
  case TD_INIT_NORMAL: init_random(t, 1, a->init_a, a->init_b, seed, stream); break;
  default:
    td_tensor_release(t);
    td_err_set(err, "parameter '%s' has an unknown initialiser %d", n->name ? n->name : "?",
               (int)a->init);
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

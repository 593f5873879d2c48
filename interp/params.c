/* params.c - model parameters for a graph: initialised or loaded.
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
 * message, one line per problem; only a clean match retains the tensors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "interp.h"
#include "kernels.h"
#include "../lang/mem.h"
#include "../runtime/philox.h"

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
  case TD_INIT_ZEROS: tdk_fill(t, 0.0, 0); break;
  case TD_INIT_ONES: tdk_fill(t, 1.0, 1); break;
  case TD_INIT_FULL: tdk_fill(t, a->init_a, (int64_t)a->init_a); break;
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

/* ---- checking loaded weights ---- */

/* Problems collected one per line into a fixed buffer; later ones are
 * counted when the buffer is full. */
typedef struct problems {
  char *buf;
  size_t cap, len;
  int n, dropped;
} problems;

static void problem(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(problems *p, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t need = strlen(line) + (p->n ? 1 : 0);
  p->n++;
  if (p->dropped || p->len + need + 48 >= p->cap) {
    p->dropped++;
    return;
  }
  p->len += (size_t)snprintf(p->buf + p->len, p->cap - p->len, "%s%s", p->n > 1 ? "\n" : "",
                             line);
}

static int param_named(const td_graph *g, const char *name) {
  for (int k = 0; k < g->n_params; k++) {
    const char *pn = g->nodes[g->params[k]].name;
    if (pn && strcmp(pn, name) == 0) return 1;
  }
  return 0;
}

static void check_param(const td_graph *g, const td_node *n, const td_tensor_map *w,
                        problems *p) {
  char want[256], got[256];
  int64_t shape[TD_MAX_RANK];
  td_err e;
  const char *name = n->name ? n->name : "";
  if (param_shape(g, n, shape, &e) < 0) {
    problem(p, "%s", e.msg);
    return;
  }
  td_shape_str(n->dtype, n->rank, shape, want, sizeof want);
  const td_tensor *t = td_tensor_map_get(w, name);
  if (!t) {
    problem(p, "missing weight '%s' (%s)", name, want);
    return;
  }
  td_shape_str(t->dtype, t->rank, t->shape, got, sizeof got);
  int same = t->rank == n->rank;
  for (int k = 0; same && k < n->rank; k++) same = t->shape[k] == shape[k];
  if (t->dtype != n->dtype)
    problem(p, "weight '%s' has dtype %s, expected %s (%s)", name, td_dtype_name(t->dtype),
            td_dtype_name(n->dtype), want);
  else if (!same)
    problem(p, "weight '%s' is %s, expected %s", name, got, want);
}

static int check_weights(const td_graph *g, const td_tensor_map *w, td_err *err) {
  char buf[sizeof err->msg];
  problems p = {buf, sizeof buf, 0, 0, 0};
  buf[0] = 0;
  for (int k = 0; k < g->n_params; k++) check_param(g, &g->nodes[g->params[k]], w, &p);
  for (int i = 0; i < w->n; i++)
    if (!param_named(g, w->items[i].name))
      problem(&p, "unexpected weight '%s': the model has no parameter of that name",
              w->items[i].name);
  if (p.n == 0) return 0;
  if (p.dropped)
    snprintf(buf + p.len, sizeof buf - p.len, "\n(and %d more problem%s)", p.dropped,
             p.dropped == 1 ? "" : "s");
  return td_err_set(err, "%s", buf);
}

int td_make_params(const td_graph *g, const td_tensor_map *weights, uint64_t seed,
                   td_tensor **params, td_err *err) {
  for (int k = 0; k < g->n_params; k++) params[k] = NULL;
  if (weights && check_weights(g, weights, err) < 0) return -1;
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

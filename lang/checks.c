/* checks.c - the run-time size checks of a graph (checks.h): derived from
 * the graph as the user wrote it, before any optimisation, so that eager
 * mode and every compiled backend check exactly the same conditions in the
 * same order (runtime/sizecheck.h says why and what each kind checks).
 *
 * A condition is dropped when it holds for every value of the symbols
 * (sizes are >= 0): a polynomial whose coefficients are all >= 0 is >= 0.
 * That proves the common cases (N, 2*N + 1, a slice x[1:N - 1] whose last
 * index is N - 2 < N) and leaves checks only where a size can really go
 * wrong (N - 2, v[-1] of a [N], w[0:N] of a [4]).
 */
#include "lang/checks.h"

#include <string.h>

#include "runtime/mem.h"

/* ---- evaluating sizes ---------------------------------------------------- */

int64_t td_dim_eval_ovf(const td_graph *g, td_dim d, const int64_t *symvals, int *overflow) {
  td_sizes s = td_graph_sizes(g);
  return td_sizes_eval_ovf(&s, d, symvals, overflow);
}

/* ---- proving a condition for every size --------------------------------- */

/* A linear combination of sizes, sum coef[i] * dim[i], as a list of
 * monomials (merged when equal): >= 0 for every size when every merged
 * coefficient is >= 0.  Overflowing coefficients prove nothing. */
#define LC_MAX 64
typedef struct lincomb {
  int n, bad;
  td_mono t[LC_MAX];
} lincomb;

static int mono_same(const td_mono *a, const td_mono *b) {
  if (a->n != b->n) return 0;
  for (int k = 0; k < a->n; k++)
    if (a->sym[k] != b->sym[k]) return 0;
  return 1;
}

static void lc_add_mono(lincomb *l, td_mono m, int64_t s) {
  if (__builtin_mul_overflow(m.coef, s, &m.coef)) { l->bad = 1; return; }
  for (int i = 0; i < l->n; i++)
    if (mono_same(&l->t[i], &m)) {
      if (__builtin_add_overflow(l->t[i].coef, m.coef, &l->t[i].coef)) l->bad = 1;
      return;
    }
  if (l->n == LC_MAX) { l->bad = 1; return; }
  l->t[l->n++] = m;
}

static void lc_add(lincomb *l, const td_graph *g, td_dim d, int64_t s) {
  if (TD_DIM_IS_CONST(d)) {
    td_mono m = {.coef = d, .n = 0};
    lc_add_mono(l, m, s);
    return;
  }
  const td_poly *p = &g->dims[-d - 1];
  for (int i = 0; i < p->n; i++) lc_add_mono(l, p->t[i], s);
}

static int lc_nonneg(const lincomb *l) {
  if (l->bad) return 0;
  for (int i = 0; i < l->n; i++)
    if (l->t[i].coef < 0) return 0;
  return 1;
}

/* c0 + s1 * d1 + s2 * d2 + s3 * d3 >= 0 for every size? */
static int proven(const td_graph *g, int64_t c0, int64_t s1, td_dim d1, int64_t s2, td_dim d2, int64_t s3, td_dim d3) {
  lincomb l = {0};
  td_mono m = {.coef = c0, .n = 0};
  lc_add_mono(&l, m, 1);
  if (s1) lc_add(&l, g, d1, s1);
  if (s2) lc_add(&l, g, d2, s2);
  if (s3) lc_add(&l, g, d3, s3);
  return lc_nonneg(&l);
}

/* ---- deriving the checks ------------------------------------------------- */

typedef struct deriver {
  const td_graph *g;
  td_arena *a;
  td_check *out;       /* in the arena, grown by doubling */
  int n_out, cap_out;
  td_dim *seen_dims;   /* SIZE: open-addressed set of dims already checked */
  int *seen_nodes;     /* NUMEL: set of node ids whose shape is already checked */
  size_t cap;          /* of both sets, a power of two */
  int oom;
} deriver;

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

/* 1 when d was not in the set (and is now). */
static int first_dim(deriver *v, td_dim d) {
  for (size_t i = mix((uint64_t)d) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
    if (v->seen_dims[i] == d) return 0;
    if (v->seen_dims[i] == 0) { v->seen_dims[i] = d; return 1; }
  }
}

/* The byte count does not depend on the order of the axes, nor on how the
 * literal sizes split it: a node's key is its element size times its
 * literal sizes, and its symbolic sizes sorted (a transpose, or a reshape
 * of [B, T, 4, 16] into [B, T, 64], needs no check of its own). */
typedef struct shape_key {
  int rank;
  uint64_t lit;
  td_dim d[TD_MAX_RANK];
} shape_key;

static shape_key key_of(const td_node *n) {
  shape_key k = {.rank = 0, .lit = td_dtype_size(n->dtype)};
  for (int i = 0; i < n->rank; i++) {
    td_dim s = n->shape[i];
    if (TD_DIM_IS_CONST(s)) {
      if (__builtin_mul_overflow(k.lit, (uint64_t)s, &k.lit)) k.lit = UINT64_MAX;
      continue;
    }
    int j = k.rank++;
    while (j > 0 && k.d[j - 1] > s) { k.d[j] = k.d[j - 1]; j--; }
    k.d[j] = s;
  }
  return k;
}

static uint64_t key_hash(const shape_key *k) {
  uint64_t h = mix(k->lit * 31 + (uint64_t)k->rank);
  for (int i = 0; i < k->rank; i++) h = mix(h ^ (uint64_t)k->d[i]);
  return h;
}

static int same_key(const shape_key *a, const shape_key *b) {
  if (a->lit != b->lit || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->d[i] != b->d[i]) return 0;
  return 1;
}

/* 1 when no earlier node had n's element size and sizes. */
static int first_shape(deriver *v, int id) {
  shape_key k = key_of(&v->g->nodes[id]);
  for (size_t i = key_hash(&k) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
    int s = v->seen_nodes[i];
    if (s < 0) { v->seen_nodes[i] = id; return 1; }
    shape_key ks = key_of(&v->g->nodes[s]);
    if (same_key(&ks, &k)) return 0;
  }
}

static td_sizecheck *add(deriver *v, td_sc_kind kind, const td_node *n) {
  if (v->n_out == v->cap_out) {
    int cap = v->cap_out ? 2 * v->cap_out : 16;
    td_check *t = td_arena_alloc(v->a, (size_t)cap * sizeof *t);
    if (!t) { v->oom = 1; return NULL; }
    if (v->n_out) memcpy(t, v->out, (size_t)v->n_out * sizeof *t);
    v->out = t;
    v->cap_out = cap;
  }
  td_check *c = &v->out[v->n_out++];
  memset(c, 0, sizeof *c);
  c->c.kind = kind;
  c->span = n->span;
  return &c->c;
}

static void size_checks(deriver *v, const td_node *n) {
  for (int k = 0; k < n->rank; k++) {
    td_dim d = n->shape[k];
    if (TD_DIM_IS_CONST(d) || proven(v->g, 0, 1, d, 0, 0, 0, 0) || !first_dim(v, d)) continue;
    char buf[256];
    td_sizecheck *c = add(v, TD_SC_SIZE, n);
    if (!c) return;
    c->axis = k;
    c->dims[0] = d;
    if (!(c->text = td_arena_strdup(v->a, td_dim_str(v->g, d, buf, sizeof buf)))) v->oom = 1;
  }
}

/* A literal shape whose bytes fit is dropped here. */
static void numel_check(deriver *v, const td_node *n, int id) {
  int symbolic = 0;
  uint64_t bytes = td_dtype_size(n->dtype);
  for (int k = 0; k < n->rank; k++) {
    if (!TD_DIM_IS_CONST(n->shape[k])) symbolic = 1;
    else if (n->shape[k] > 0 && __builtin_mul_overflow(bytes, (uint64_t)n->shape[k], &bytes)) bytes = UINT64_MAX;
  }
  if ((!symbolic && bytes <= (uint64_t)INT64_MAX) || !first_shape(v, id)) return;
  td_sizecheck *c = add(v, TD_SC_NUMEL, n);
  if (!c) return;
  c->dtype = n->dtype;
  c->rank = n->rank;
  for (int k = 0; k < n->rank; k++) c->dims[k] = n->shape[k];
}

/* Every element x[start + step * i], i < count, lies in [0, size): for a
 * positive step the first index is >= 0 and the last < size, for a
 * negative one the first < size and the last >= 0. */
static void slice_checks(deriver *v, const td_node *n) {
  const td_node *x = &v->g->nodes[n->in[0]];
  for (int k = 0; k < n->rank; k++) {
    td_dim d = x->shape[k], start = n->attr.start[k], count = n->shape[k];
    int64_t step = n->attr.step[k], ok;
    if (step == INT64_MIN || step == INT64_MAX) ok = 0;   /* -step, step - 1 and the like would overflow */
    else if (step > 0) /* start >= 0 and size - 1 - (start + step * (count - 1)) >= 0 */
      ok = proven(v->g, 0, 1, start, 0, 0, 0, 0) && proven(v->g, step - 1, 1, d, -1, start, -step, count);
    else          /* size - 1 - start >= 0 and start + step * (count - 1) >= 0 */
      ok = proven(v->g, -1, 1, d, -1, start, 0, 0) && proven(v->g, -step, 1, start, step, count, 0, 0);
    if (ok) continue;
    td_sizecheck *c = add(v, TD_SC_SLICE, n);
    if (!c) return;
    c->axis = k;
    c->step = step;
    c->dims[0] = d;
    c->dims[1] = start;
    c->dims[2] = count;
  }
}

/* max, min, argmax and argmin have no value over an empty axis; a reduced
 * size proven >= 1 (size - 1 >= 0) needs no check. */
static void value_check(deriver *v, const td_node *n) {
  const td_node *x = &v->g->nodes[n->in[0]];
  int needed = 0;
  for (int k = 0; k < x->rank; k++)
    if ((n->attr.axes >> k & 1) && !proven(v->g, -1, 1, x->shape[k], 0, 0, 0, 0)) needed = 1;
  if (!needed) return;
  td_sizecheck *c = add(v, TD_SC_VALUE, n);
  if (!c) return;
  c->text = td_ops[n->op].name;
  c->axes = n->attr.axes;
  c->rank = x->rank;
  for (int k = 0; k < x->rank; k++) c->dims[k] = x->shape[k];
}

int td_checks_derive(const td_graph *g, td_arena *a, td_check **out) {
  deriver v = {.g = g, .a = a};
  v.cap = 64;
  while (v.cap < 2 * (size_t)g->n_nodes) v.cap *= 2;
  v.seen_dims = td_calloc(v.cap, sizeof *v.seen_dims);
  v.seen_nodes = td_malloc(v.cap * sizeof *v.seen_nodes);
  int rc = -1;
  if (v.seen_dims && v.seen_nodes) {
    memset(v.seen_nodes, 0xff, v.cap * sizeof *v.seen_nodes);
    for (int id = 0; id < g->n_nodes && !v.oom; id++) {
      const td_node *n = &g->nodes[id];
      if (n->op == TD_IR_INPUT) continue;   /* bound and checked against the arguments */
      size_checks(&v, n);
      if (!v.oom) numel_check(&v, n, id);
      if (v.oom) break;
      if (n->op == TD_IR_SLICE) slice_checks(&v, n);
      else if (n->op == TD_IR_RMAX || n->op == TD_IR_RMIN || n->op == TD_IR_ARGMAX || n->op == TD_IR_ARGMIN)
        value_check(&v, n);
    }
    if (!v.oom) {
      *out = v.out;
      rc = v.n_out;
    }
  }
  td_free(v.seen_dims);
  td_free(v.seen_nodes);
  return rc;
}

/* ---- running them ---------------------------------------------------------- */

typedef struct eval_ctx {
  const td_graph *g;
  const int64_t *symvals;
} eval_ctx;

static int64_t eval_dim(const void *ctx, int64_t d, int *overflow) {
  const eval_ctx *e = ctx;
  return td_dim_eval_ovf(e->g, d, e->symvals, overflow);
}

int td_checks_run(const td_graph *g, const td_check *checks, int n, const int64_t *symvals, td_err *err,
                  td_span *span) {
  if (n <= 0) return 0;   /* checks may be NULL then */
  eval_ctx e = {g, symvals};
  int bad = td_sizecheck_run(&checks->c, sizeof *checks, n, eval_dim, &e, err);
  if (bad < 0) return 0;
  if (span) *span = checks[bad].span;
  return -1;
}

int td_checks_run_graph(const td_graph *g, const int64_t *symvals, td_err *err, td_span *span) {
  if (g->has_checks) return td_checks_run(g, g->checks, g->n_checks, symvals, err, span);
  td_arena *a = td_arena_new();
  td_check *checks = NULL;
  int n = a ? td_checks_derive(g, a, &checks) : -1;
  int rc = n < 0 ? td_err_set(err, "out of memory") : td_checks_run(g, checks, n, symvals, err, span);
  td_arena_free(a);
  return rc;
}

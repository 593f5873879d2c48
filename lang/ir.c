/* ir.c - the Graph IR: symbolic sizes, graph building, verifier, printer.
 *
 * Symbolic sizes are polynomials with integer coefficients over the graph's
 * symbols, kept canonical (monomials sorted by their symbol lists, no zero
 * coefficients) and interned, so equality of sizes is equality of td_dim
 * values.  A polynomial that is a constant is stored as the literal itself.
 * The arithmetic is exact or gives TD_DIM_BAD: coefficients are checked
 * for int64 overflow, terms hold at most TD_MONO_MAX symbols and
 * polynomials at most TD_POLY_MAX terms.
 */
#include <stdio.h>
#include <string.h>
#include "lang/ir.h"
#include "lang/conv.h"

const td_opinfo td_ops[TD_IR_OP_COUNT] = {
#define TD_OP(e, name, kind, arity, c) {name, kind, arity, c},
#include "lang/ops.def"
#undef TD_OP
};

td_graph *td_graph_new(td_arena *a, const char *name) {
  td_graph *g = td_arena_alloc(a, sizeof *g);
  if (!g) return NULL;
  g->arena = a;
  g->name = td_arena_strdup(a, name ? name : "");
  return g;
}

td_graph *td_graph_root(const td_graph *g) {
  while (g && g->parent) g = g->parent;
  return (td_graph *)g;
}

/* ---- polynomials ---- */

/* The monomial order: by degree, then by the sorted symbol lists.  It is a
 * total order, a well-order and kept by multiplication (m1 < m2 implies
 * m1*m3 < m2*m3), so a canonical polynomial's last term is its leading
 * term and the products of a sorted polynomial with one monomial come out
 * sorted: what polynomial division needs. */
static int mono_cmp(const td_mono *a, const td_mono *b) {
  if (a->n != b->n) return a->n - b->n;
  for (int i = 0; i < a->n; i++)
    if (a->sym[i] != b->sym[i]) return a->sym[i] - b->sym[i];
  return 0;
}

/* x * y into *m (symbols merged in order); -1 when the coefficient
 * overflows or the term would have more than TD_MONO_MAX symbols. */
static int mono_mul(const td_mono *x, const td_mono *y, td_mono *m) {
  if (x->n + y->n > TD_MONO_MAX || __builtin_mul_overflow(x->coef, y->coef, &m->coef)) return -1;
  int i = 0, j = 0;
  m->n = x->n + y->n;
  for (int k = 0; k < m->n; k++)
    m->sym[k] = j == y->n || (i < x->n && x->sym[i] <= y->sym[j]) ? x->sym[i++] : y->sym[j++];
  return 0;
}

/* y / x into *m when x divides y (its symbols are among y's and its
 * coefficient divides y's): 0; 1 when it does not; -1 when the quotient's
 * coefficient overflows (INT64_MIN / -1). */
static int mono_div(const td_mono *y, const td_mono *x, td_mono *m) {
  if (x->coef == -1) {
    if (y->coef == INT64_MIN) return -1;
    m->coef = -y->coef;
  } else {
    if (y->coef % x->coef) return 1;
    m->coef = y->coef / x->coef;
  }
  int i = 0;
  m->n = 0;
  for (int j = 0; j < y->n; j++) {
    if (i < x->n && x->sym[i] == y->sym[j]) { i++; continue; }
    if (i < x->n && x->sym[i] < y->sym[j]) return 1; /* x has a symbol y lacks */
    m->sym[m->n++] = y->sym[j];
  }
  return i == x->n ? 0 : 1;
}

/* Scratch room for one polynomial. */
typedef struct pbuf {
  int n;
  td_mono t[TD_POLY_MAX];
} pbuf;

static int poly_eq(const td_poly *a, const td_poly *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++)
    if (a->t[i].coef != b->t[i].coef || mono_cmp(&a->t[i], &b->t[i])) return 0;
  return 1;
}

/* The polynomial of d (not TD_DIM_BAD) in scratch storage (one monomial
 * for literals). */
static td_poly poly_of(const td_graph *g, td_dim d, td_mono *scratch) {
  td_poly p;
  if (TD_DIM_IS_CONST(d)) {
    scratch->coef = d;
    scratch->n = 0;
    p.n = d ? 1 : 0;
    p.t = scratch;
    return p;
  }
  return g->dims[-d - 1];
}

/* Interns a canonical polynomial; constants become literals.  A negative
 * constant cannot be a size: it is interned as a polynomial so the checker
 * can still print it, but TD_DIM_IS_CONST is false for it.  TD_DIM_BAD
 * when memory runs out. */
static td_dim intern(td_graph *g, const td_poly *p) {
  if (p->n == 0) return 0;
  if (p->n == 1 && p->t[0].n == 0 && p->t[0].coef > 0) return p->t[0].coef;
  for (int i = 0; i < g->n_dims; i++)
    if (poly_eq(&g->dims[i], p)) return -(td_dim)i - 1;
  if (g->n_dims == g->cap_dims) {
    int cap = g->cap_dims ? 2 * g->cap_dims : 16;
    td_poly *nd = td_arena_alloc(g->arena, (size_t)cap * sizeof *nd);
    if (!nd) return TD_DIM_BAD;
    if (g->n_dims) memcpy(nd, g->dims, (size_t)g->n_dims * sizeof *nd);
    g->dims = nd;
    g->cap_dims = cap;
  }
  td_mono *t = td_arena_alloc(g->arena, (size_t)p->n * sizeof *t);
  if (!t) return TD_DIM_BAD;
  memcpy(t, p->t, (size_t)p->n * sizeof *t);
  g->dims[g->n_dims].n = p->n;
  g->dims[g->n_dims].t = t;
  return -(td_dim)(g->n_dims++) - 1;
}

td_dim td_dim_intern(td_graph *g, const td_poly *p) {
  g = td_graph_root(g);
  if (p->n < 0 || p->n > TD_POLY_MAX) return TD_DIM_BAD;
  for (int i = 0; i < p->n; i++) {
    if (p->t[i].n < 0 || p->t[i].n > TD_MONO_MAX || p->t[i].coef == 0) return TD_DIM_BAD;
    for (int k = 0; k < p->t[i].n; k++)
      if (p->t[i].sym[k] < 0 || p->t[i].sym[k] >= g->n_syms || (k && p->t[i].sym[k] < p->t[i].sym[k - 1]))
        return TD_DIM_BAD;
  }
  return intern(g, p);
}

static td_dim intern_buf(td_graph *g, pbuf *b) {
  td_poly p = {b->n, b->t};
  return intern(g, &p);
}

int td_sym_new(td_graph *g, const char *name) {
  g = td_graph_root(g);
  if (g->n_syms == g->cap_syms) {
    int cap = g->cap_syms ? 2 * g->cap_syms : 8;
    const char **s = td_arena_alloc(g->arena, (size_t)cap * sizeof *s);
    if (!s) return -1;
    if (g->n_syms) memcpy(s, g->syms, (size_t)g->n_syms * sizeof *s);
    g->syms = s;
    g->cap_syms = cap;
  }
  g->syms[g->n_syms] = td_arena_strdup(g->arena, name);
  return g->n_syms++;
}

td_dim td_dim_sym(td_graph *g, int sym) {
  g = td_graph_root(g);
  if (sym < 0) return TD_DIM_BAD;
  td_mono m = {.coef = 1, .n = 1, .sym = {sym}};
  td_poly p = {1, &m};
  return intern(g, &p);
}

td_dim td_dim_const(td_graph *g, int64_t v) {
  g = td_graph_root(g);
  if (v >= 0) return v;
  td_mono m = {.coef = v, .n = 0};
  td_poly p = {1, &m};
  return intern(g, &p);
}

/* a + s * b into r, s = 1 or -1, a and b canonical: a merge of two sorted
 * lists.  -1 when a coefficient overflows or r would overflow. */
static int merge_scaled(const td_poly *a, const td_poly *b, int64_t s, pbuf *r) {
  int i = 0, j = 0;
  r->n = 0;
  while (i < a->n || j < b->n) {
    int c = i == a->n ? 1 : j == b->n ? -1 : mono_cmp(&a->t[i], &b->t[j]);
    td_mono m = c < 0 ? a->t[i] : b->t[j];
    if (c >= 0 && __builtin_mul_overflow(b->t[j].coef, s, &m.coef)) return -1;
    if (c == 0 && __builtin_add_overflow(a->t[i].coef, m.coef, &m.coef)) return -1;
    i += c <= 0;
    j += c >= 0;
    if (m.coef == 0) continue;
    if (r->n == TD_POLY_MAX) return -1;
    r->t[r->n++] = m;
  }
  return 0;
}

static td_dim add_scaled(td_graph *g, td_dim a, td_dim b, int64_t s) {
  if (TD_DIM_IS_BAD(a) || TD_DIM_IS_BAD(b)) return TD_DIM_BAD;
  td_mono sa, sb;
  td_poly pa = poly_of(g, a, &sa), pb = poly_of(g, b, &sb);
  pbuf r;
  if (merge_scaled(&pa, &pb, s, &r)) return TD_DIM_BAD;
  return intern_buf(g, &r);
}

td_dim td_dim_add(td_graph *g, td_dim a, td_dim b) {
  g = td_graph_root(g);
  td_dim r;
  if (TD_DIM_IS_CONST(a) && TD_DIM_IS_CONST(b)) return __builtin_add_overflow(a, b, &r) ? TD_DIM_BAD : r;
  return add_scaled(g, a, b, 1);
}

td_dim td_dim_sub(td_graph *g, td_dim a, td_dim b) {
  g = td_graph_root(g);
  if (TD_DIM_IS_CONST(a) && TD_DIM_IS_CONST(b) && a >= b) return a - b;
  return add_scaled(g, a, b, -1);
}

/* Adds m into r, merging it with an equal term; -1 on overflow. */
static int acc_term(pbuf *r, const td_mono *m) {
  for (int k = 0; k < r->n; k++)
    if (!mono_cmp(&r->t[k], m)) return __builtin_add_overflow(r->t[k].coef, m->coef, &r->t[k].coef) ? -1 : 0;
  if (r->n == TD_POLY_MAX) { /* terms that cancelled free their places */
    int w = 0;
    for (int k = 0; k < r->n; k++)
      if (r->t[k].coef) r->t[w++] = r->t[k];
    r->n = w;
    if (w == TD_POLY_MAX) return -1;
  }
  r->t[r->n++] = *m;
  return 0;
}

/* Sorts r and drops zero coefficients (r's terms are distinct). */
static void canon(pbuf *r) {
  int w = 0;
  for (int k = 0; k < r->n; k++)
    if (r->t[k].coef) r->t[w++] = r->t[k];
  r->n = w;
  for (int i = 1; i < r->n; i++) { /* insertion sort: polys are tiny */
    td_mono m = r->t[i];
    int j = i - 1;
    while (j >= 0 && mono_cmp(&r->t[j], &m) > 0) { r->t[j + 1] = r->t[j]; j--; }
    r->t[j + 1] = m;
  }
}

td_dim td_dim_mul(td_graph *g, td_dim a, td_dim b) {
  g = td_graph_root(g);
  if (TD_DIM_IS_BAD(a) || TD_DIM_IS_BAD(b)) return TD_DIM_BAD;
  td_dim c;
  if (TD_DIM_IS_CONST(a) && TD_DIM_IS_CONST(b)) return __builtin_mul_overflow(a, b, &c) ? TD_DIM_BAD : c;
  td_mono sa, sb;
  td_poly pa = poly_of(g, a, &sa), pb = poly_of(g, b, &sb);
  pbuf r;
  r.n = 0;
  for (int i = 0; i < pa.n; i++)
    for (int j = 0; j < pb.n; j++) {
      td_mono m;
      if (mono_mul(&pa.t[i], &pb.t[j], &m) || acc_term(&r, &m)) return TD_DIM_BAD;
    }
  canon(&r);
  return intern_buf(g, &r);
}

/* Exact division of canonical polynomials by the division algorithm: the
 * leading term of the remainder must be a multiple of b's, else b does not
 * divide a (with one divisor, an exact division leaves remainder 0 in any
 * monomial order).  Each step removes the remainder's leading term and
 * adds only smaller ones, so it ends.  0 with the quotient in s[0]; 1 when
 * not exact; -1 on overflow.  s: four scratch buffers. */
static int poly_div(const td_poly *a, const td_poly *b, pbuf *s) {
  pbuf *q = &s[0], *r = &s[1], *t = &s[2], *u = &s[3];
  const td_mono *lb = &b->t[b->n - 1];
  memcpy(r->t, a->t, (size_t)a->n * sizeof *a->t);
  r->n = a->n;
  q->n = 0;
  while (r->n > 0) {
    td_mono m;
    int rc = mono_div(&r->t[r->n - 1], lb, &m);
    if (rc) return rc;
    if (q->n == TD_POLY_MAX) return -1;
    q->t[q->n++] = m;
    t->n = b->n;                    /* m * b, sorted as b is */
    for (int k = 0; k < b->n; k++)
      if (mono_mul(&m, &b->t[k], &t->t[k])) return -1;
    td_poly pr = {r->n, r->t}, pt = {t->n, t->t};
    if (merge_scaled(&pr, &pt, -1, u)) return -1;
    pbuf *w = r;
    r = u;
    u = w;
  }
  for (int i = 0, j = q->n - 1; i < j; i++, j--) { /* found largest first */
    td_mono m = q->t[i];
    q->t[i] = q->t[j];
    q->t[j] = m;
  }
  return 0;
}

int td_dim_div(td_graph *g, td_dim a, td_dim b, td_dim *out) {
  g = td_graph_root(g);
  if (b == 0) return -1;
  if (TD_DIM_IS_BAD(a) || TD_DIM_IS_BAD(b)) { *out = TD_DIM_BAD; return 0; }
  if (TD_DIM_IS_CONST(a) && TD_DIM_IS_CONST(b)) {
    if (a % b) return -1;
    *out = a / b;
    return 0;
  }
  if (a == b) { *out = 1; return 0; }
  td_mono sa, sb;
  td_poly pa = poly_of(g, a, &sa), pb = poly_of(g, b, &sb);
  if (pa.n == 0) { *out = 0; return 0; }
  pbuf *s = td_malloc(4 * sizeof *s);
  if (!s) { *out = TD_DIM_BAD; return 0; }
  int rc = poly_div(&pa, &pb, s);
  if (rc <= 0) *out = rc ? TD_DIM_BAD : intern_buf(g, &s[0]);
  td_free(s);
  return rc > 0 ? -1 : 0;
}

/* ceil(c / m) for any int64 c and 1 <= m <= 2^63, without overflow. */
static int64_t ceil_div_i(int64_t c, uint64_t m) {
  if (c > 0) return (int64_t)(((uint64_t)c - 1) / m + 1);
  uint64_t f = (0 - (uint64_t)c) / m;   /* floor(-c / m), at most 2^63 */
  return (int64_t)(0 - f);              /* -f; 2^63 wraps to INT64_MIN, which it is */
}

int td_dim_ceil_div(td_graph *g, td_dim a, uint64_t m, td_dim *out) {
  g = td_graph_root(g);
  if (m == 0 || m > (uint64_t)1 << 63) return -1;
  if (TD_DIM_IS_BAD(a)) { *out = TD_DIM_BAD; return 0; }
  td_mono sa;
  td_poly pa = poly_of(g, a, &sa);
  pbuf r;
  r.n = 0;
  for (int i = 0; i < pa.n; i++) {
    td_mono t = pa.t[i];
    if (t.n == 0) t.coef = ceil_div_i(t.coef, m);
    else if (m > INT64_MAX) { /* m == 2^63 divides only INT64_MIN */
      if (t.coef != INT64_MIN) return -1;
      t.coef = -1;
    } else {
      if (t.coef % (int64_t)m) return -1;
      t.coef /= (int64_t)m;
    }
    if (t.coef) r.t[r.n++] = t;
  }
  *out = intern_buf(g, &r);
  return 0;
}

td_sizes td_graph_sizes(const td_graph *g) {
  g = td_graph_root(g);
  td_sizes s = {g->syms, g->n_syms, g->dims};
  return s;
}

td_sig_arg td_node_sig(const td_node *n) {
  td_sig_arg a = {n->name, n->dtype, n->rank, n->shape};
  return a;
}

int64_t td_dim_eval(const td_graph *g, td_dim d, const int64_t *symvals) {
  if (TD_DIM_IS_CONST(d)) return d; /* the common case, without building a view */
  td_sizes s = td_graph_sizes(g);
  return td_sizes_eval(&s, d, symvals);
}

char *td_dim_str(const td_graph *g, td_dim d, char *buf, size_t n) {
  g = td_graph_root(g);
  td_sizes s = td_graph_sizes(g);
  return td_sizes_dim_str(&s, d, buf, n);
}

char *td_type_str(const td_graph *g, td_dtype dt, int rank, const td_dim *shape,
                  char *buf, size_t n) {
  g = td_graph_root(g);
  td_sizes s = td_graph_sizes(g);
  return td_sizes_type_str(&s, dt, rank, shape, buf, n);
}

/* ---- building ---- */

static int push_int(td_arena *a, int **arr, int *n, int v) {
  int *na = td_arena_alloc(a, (size_t)(*n + 1) * sizeof *na);
  if (!na) return -1;
  if (*n) memcpy(na, *arr, (size_t)*n * sizeof *na);
  na[(*n)++] = v;
  *arr = na;
  return 0;
}

int td_graph_add(td_graph *g, td_op op, td_dtype dt, int rank, const td_dim *shape,
                 const int *in, int n_in, const td_attr *attr, td_span sp) {
  if (rank < 0 || rank > TD_MAX_RANK) return -1;
  if (g->n_nodes == g->cap_nodes) {
    int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
    td_node *nn = td_arena_alloc(g->arena, (size_t)cap * sizeof *nn);
    if (!nn) return -1;
    if (g->n_nodes) memcpy(nn, g->nodes, (size_t)g->n_nodes * sizeof *nn);
    g->nodes = nn;
    g->cap_nodes = cap;
  }
  td_node *n = &g->nodes[g->n_nodes];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->dtype = dt;
  n->rank = rank;
  if (rank) memcpy(n->shape, shape, (size_t)rank * sizeof *shape);
  if (n_in) {
    n->in = td_arena_alloc(g->arena, (size_t)n_in * sizeof *n->in);
    if (!n->in) return -1;
    memcpy(n->in, in, (size_t)n_in * sizeof *in);
  }
  n->n_in = n_in;
  if (attr) n->attr = *attr;
  n->span = sp;
  int id = g->n_nodes++;
  if (op == TD_IR_INPUT && push_int(g->arena, &g->inputs, &g->n_inputs, id)) return -1;
  if (op == TD_IR_PARAM && push_int(g->arena, &g->params, &g->n_params, id)) return -1;
  return id;
}

int td_graph_add_output(td_graph *g, int node) {
  return push_int(g->arena, &g->outputs, &g->n_outputs, node);
}

int td_graph_add_update(td_graph *g, int param, int value) {
  td_update *nu = td_arena_alloc(g->arena, (size_t)(g->n_updates + 1) * sizeof *nu);
  if (!nu) return -1;
  if (g->n_updates) memcpy(nu, g->updates, (size_t)g->n_updates * sizeof *nu);
  memset(&nu[g->n_updates], 0, sizeof nu[g->n_updates]);
  nu[g->n_updates].param = param;
  nu[g->n_updates].value = value;
  nu[g->n_updates].span.file = -1;
  g->updates = nu;
  g->n_updates++;
  return 0;
}

const td_graph *td_graph_with_update_outputs(const td_graph *g, int in_place, td_err *err) {
  if (!g->n_updates) return g;
  td_graph *c = td_arena_alloc(g->arena, sizeof *c);
  int *outs = td_arena_alloc(g->arena, (size_t)(g->n_outputs + g->n_updates) * sizeof *outs);
  int *slots = td_arena_alloc(g->arena, (size_t)g->n_updates * sizeof *slots);
  if (!c || !outs || !slots) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  *c = *g;
  if (g->n_outputs) memcpy(outs, g->outputs, (size_t)g->n_outputs * sizeof *outs);
  for (int i = 0; i < g->n_updates; i++) {
    outs[g->n_outputs + i] = g->updates[i].value;
    slots[i] = (int)g->nodes[g->updates[i].param].attr.i;
  }
  /* the CPU backend may write them into the parameters' memory (its
   * compiled code runs on the caller's tensors); the others hand them back */
  if (in_place) {
    c->update_slots = slots;
    c->n_update_outs = g->n_updates;
  }
  c->outputs = outs;
  c->n_outputs = g->n_outputs + g->n_updates;
  c->updates = NULL;
  c->n_updates = 0;
  return c;
}

/* ---- verifier ---- */

#define VFAIL(...) do { td_err_set(err, "IR verify: node %%%d (%s): ", id, td_ops[n->op].name); \
    size_t l_ = strlen(err->msg); snprintf(err->msg + l_, sizeof err->msg - l_, __VA_ARGS__); \
    return -1; } while (0)

/* Can shape `in` broadcast to `out` (right-aligned, equal or literal 1)? */
static int broadcasts_to(const td_node *in, const td_node *out) {
  if (in->rank > out->rank) return 0;
  int off = out->rank - in->rank;
  for (int i = 0; i < in->rank; i++)
    if (in->shape[i] != out->shape[off + i] && in->shape[i] != 1) return 0;
  return 1;
}

static int verify_elementwise(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  for (int k = 0; k < n->n_in; k++) {
    const td_node *x = &g->nodes[n->in[k]];
    if (!broadcasts_to(x, n)) VFAIL("input %d does not broadcast to the output shape", k);
    td_dtype want = n->dtype;
    td_opkind kind = td_ops[n->op].kind;
    if (n->op == TD_IR_CAST) continue;
    if (kind == TD_K_COMPARE) want = g->nodes[n->in[0]].dtype;
    if (n->op == TD_IR_WHERE && k == 0) want = TD_BOOL;
    if (x->dtype != want) VFAIL("input %d has dtype %s, expected %s", k, td_dtype_name(x->dtype), td_dtype_name(want));
  }
  if (td_ops[n->op].kind == TD_K_COMPARE && n->dtype != TD_BOOL) VFAIL("comparison must produce bool");
  if ((n->op == TD_IR_AND || n->op == TD_IR_OR || n->op == TD_IR_NOT) && n->dtype != TD_BOOL) VFAIL("logical op on non-bool");
  return 0;
}

static int verify_reduce(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  const td_node *x = &g->nodes[n->in[0]];
  if (x->rank != n->rank) VFAIL("reduction must keep the rank");
  if (x->rank < 32 && (n->attr.axes >> x->rank)) VFAIL("axis mask out of range");
  for (int i = 0; i < n->rank; i++) {
    int red = (n->attr.axes >> i) & 1;
    if (red && n->shape[i] != 1) VFAIL("reduced axis %d must have size 1", i);
    if (!red && n->shape[i] != x->shape[i]) VFAIL("kept axis %d changed size", i);
  }
  int arg = n->op == TD_IR_ARGMAX || n->op == TD_IR_ARGMIN;
  if (arg && n->dtype != TD_I64) VFAIL("argmax/argmin produce i64");
  if (arg && __builtin_popcount(n->attr.axes) != 1) VFAIL("argmax/argmin take one axis");
  if (!arg && n->dtype != x->dtype) VFAIL("dtype changed");
  return 0;
}

static int verify_matmul(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  const td_node *a = &g->nodes[n->in[0]], *b = &g->nodes[n->in[1]];
  if (a->rank < 2 || b->rank < 2 || n->rank != (a->rank > b->rank ? a->rank : b->rank))
    VFAIL("bad ranks");
  if (a->shape[a->rank - 1] != b->shape[b->rank - 2]) VFAIL("inner sizes differ");
  if (n->shape[n->rank - 2] != a->shape[a->rank - 2] || n->shape[n->rank - 1] != b->shape[b->rank - 1])
    VFAIL("output is not [..., M, N]");
  if (a->dtype != n->dtype || b->dtype != n->dtype) VFAIL("dtypes differ");
  return 0;
}

static int same_type(const td_node *a, const td_node *b) {
  return a->dtype == b->dtype && a->rank == b->rank &&
         (!a->rank || !memcmp(a->shape, b->shape, (size_t)a->rank * sizeof a->shape[0]));
}

/* A SCAN (ops.def): its inputs against its body's INPUTs, its SCAN_OUTs
 * right after it against the body's outputs, and the body itself. */
/* Does b's size tables begin g's: the same symbols, and b's polynomials
 * the first of g's? */
static int same_tables_prefix(const td_graph *b, const td_graph *g) {
  if (b->n_syms != g->n_syms || b->n_dims > g->n_dims) return 0;
  for (int s = 0; s < b->n_syms; s++)
    if (b->syms != g->syms && strcmp(b->syms[s], g->syms[s])) return 0;
  for (int d = 0; d < b->n_dims && b->dims != g->dims; d++)
    if (!poly_eq(&b->dims[d], &g->dims[d])) return 0;
  return 1;
}

static int verify_scan(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  const td_attr *a = &n->attr;
  const td_graph *b = a->body;
  /* the body's sizes are this graph's: the same outermost graph, or one
   * whose tables this graph's begin with (the REPL's pruned graph shares
   * them; each optimisation pass copies them and may add to its copy) */
  const td_graph *rb = b ? td_graph_root(b) : NULL, *rg = td_graph_root(g);
  if (!b || !(rb == rg || same_tables_prefix(rb, rg))) VFAIL("has no body of this graph's sizes");
  if (a->n_carry < 0 || a->n_xs < 0 || a->n_carry + a->n_xs > n->n_in) VFAIL("bad carry and sequence counts");
  if (TD_DIM_IS_BAD(a->dim)) VFAIL("bad trip count");
  int n_idx = a->index ? 1 : 0;
  if (b->n_inputs != n->n_in + n_idx) VFAIL("has %d inputs, its body %d", n->n_in, b->n_inputs);
  if (b->n_outputs < a->n_carry) VFAIL("its body returns %d values for %d carries", b->n_outputs, a->n_carry);
  if (b->n_updates) VFAIL("its body updates parameters");
  for (int k = 0; k < b->n_inputs; k++) {
    const td_node *bi = &b->nodes[b->inputs[k]];
    if (bi->attr.i != k) VFAIL("body input %d has slot %lld", k, (long long)bi->attr.i);
    if (a->index && k == a->n_carry + a->n_xs) {
      if (bi->dtype != TD_I64 || bi->rank) VFAIL("the body's step index is not an i64[]");
      continue;
    }
    const td_node *x = &g->nodes[n->in[k > a->n_carry + a->n_xs ? k - n_idx : k]];
    if (k >= a->n_carry && k < a->n_carry + a->n_xs) {   /* a sequence: one slice per step */
      if (x->rank < 1 || x->shape[0] != a->dim || x->dtype != bi->dtype || bi->rank != x->rank - 1 ||
          (bi->rank && memcmp(bi->shape, x->shape + 1, (size_t)bi->rank * sizeof bi->shape[0])))
        VFAIL("sequence %d does not match its slice in the body", k - a->n_carry);
    } else if (!same_type(x, bi)) {
      VFAIL("input %d does not have the type of the body's input", k);
    }
  }
  for (int k = 0; k < a->n_carry; k++)
    if (!same_type(&b->nodes[b->outputs[k]], &g->nodes[n->in[k]])) VFAIL("carry %d changes its type in the body", k);
  for (int k = 0; k < b->n_outputs; k++) {
    int o = id + 1 + k;
    if (o >= g->n_nodes || g->nodes[o].op != TD_IR_SCAN_OUT || g->nodes[o].in[0] != id || g->nodes[o].attr.i != k)
      VFAIL("is not followed by its output %d", k);
    const td_node *bo = &b->nodes[b->outputs[k]], *so = &g->nodes[o];
    if (k < a->n_carry ? !same_type(bo, so)
                       : so->dtype != bo->dtype || so->rank != bo->rank + 1 || so->shape[0] != a->dim ||
                             (bo->rank && memcmp(so->shape + 1, bo->shape, (size_t)bo->rank * sizeof bo->shape[0])))
      VFAIL("output %d does not have the type of its body's value", k);
  }
  if (td_graph_verify(b, err)) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    return td_err_set(err, "%s (in the body of the scan %%%d)", m, id);
  }
  return 0;
}

static int verify_node(const td_graph *g, int id, td_err *err) {
  const td_node *n = &g->nodes[id];
  if ((unsigned)n->op >= TD_IR_OP_COUNT) { td_err_set(err, "IR verify: node %%%d: bad op", id); return -1; }
  if ((unsigned)n->dtype >= TD_DTYPE_COUNT) VFAIL("bad dtype");
  int arity = td_ops[n->op].arity;
  if (arity >= 0 && n->n_in != arity) VFAIL("has %d inputs, expected %d", n->n_in, arity);
  for (int k = 0; k < n->n_in; k++)
    if (n->in[k] < 0 || n->in[k] >= id) VFAIL("input %d refers to %%%d", k, n->in[k]);
  int nd = td_graph_root(g)->n_dims;
  for (int i = 0; i < n->rank; i++) {
    td_dim d = n->shape[i], s = n->op == TD_IR_SLICE ? n->attr.start[i] : 0;
    if (TD_DIM_IS_BAD(d) || TD_DIM_IS_BAD(s)) VFAIL("size arithmetic overflowed in dimension %d", i);
    if ((!TD_DIM_IS_CONST(d) && (-d - 1) >= nd) || (!TD_DIM_IS_CONST(s) && (-s - 1) >= nd))
      VFAIL("bad dim");
  }
  if ((n->op == TD_IR_DIM || n->op == TD_IR_SCAN) &&
      (TD_DIM_IS_BAD(n->attr.dim) || (!TD_DIM_IS_CONST(n->attr.dim) && -n->attr.dim - 1 >= nd)))
    VFAIL("bad dim");
  if (n->op != TD_IR_SCAN_OUT)
    for (int k = 0; k < n->n_in; k++)
      if (g->nodes[n->in[k]].op == TD_IR_SCAN) VFAIL("reads the scan %%%d itself, not one of its outputs", n->in[k]);
  switch (td_ops[n->op].kind) {
  case TD_K_UNARY: case TD_K_BINARY: case TD_K_COMPARE: case TD_K_TERNARY:
    return verify_elementwise(g, id, err);
  case TD_K_REDUCE: return verify_reduce(g, id, err);
  case TD_K_MATMUL: return verify_matmul(g, id, err);
  case TD_K_CONV: return td_conv_verify(g, id, err);
  case TD_K_LEAF:
    if ((n->op == TD_IR_CONST || n->op == TD_IR_DIM) && n->rank) VFAIL("must be rank 0");
    if (n->op == TD_IR_ARANGE && n->rank != 1) VFAIL("must be rank 1");
    return 0;
  case TD_K_MOVE:
    if (n->op == TD_IR_PERMUTE) {
      const td_node *x = &g->nodes[n->in[0]];
      unsigned seen = 0;
      if (x->rank != n->rank) VFAIL("rank changed");
      for (int i = 0; i < n->rank; i++) {
        int p = n->attr.perm[i];
        if (p < 0 || p >= n->rank || (seen >> p & 1)) VFAIL("bad permutation");
        seen |= 1u << p;
        if (n->shape[i] != x->shape[p]) VFAIL("shape does not follow the permutation");
      }
    }
    if (n->op == TD_IR_BROADCAST && !broadcasts_to(&g->nodes[n->in[0]], n)) VFAIL("cannot broadcast");
    if (n->op == TD_IR_CONCAT && (n->attr.axis < 0 || n->attr.axis >= n->rank)) VFAIL("bad axis");
    if (n->op != TD_IR_RESHAPE && n->op != TD_IR_BROADCAST && n->op != TD_IR_CONCAT &&
        g->nodes[n->in[0]].dtype != n->dtype) VFAIL("dtype changed");
    return 0;
  case TD_K_RANDOM:
    if (n->n_in > 1) VFAIL("has %d inputs, expected 0 or 1 (the seed)", n->n_in);
    if (n->n_in) {
      const td_node *s = &g->nodes[n->in[0]];
      if ((s->dtype != TD_I32 && s->dtype != TD_I64) || s->rank) VFAIL("the seed must be a rank-0 i32 or i64 tensor");
    }
    return 0;
  case TD_K_GATHER: {
    const td_node *x = &g->nodes[n->in[0]], *ix = &g->nodes[n->in[1]];
    if (ix->dtype != TD_I32 && ix->dtype != TD_I64) VFAIL("indices must be integers");
    if (n->rank != x->rank - 1 + ix->rank) VFAIL("bad output rank");
    return 0;
  }
  case TD_K_SCAN:
    if (n->op == TD_IR_SCAN) return verify_scan(g, id, err);
    if (g->nodes[n->in[0]].op != TD_IR_SCAN) VFAIL("does not read a scan");
    if (n->attr.i < 0 || n->attr.i >= g->nodes[n->in[0]].attr.body->n_outputs || n->in[0] + 1 + n->attr.i != id)
      VFAIL("is not output %lld right after its scan", (long long)n->attr.i);
    return 0;   /* its type: verify_scan */
  default: return 0;
  }
}

int td_graph_verify(const td_graph *g, td_err *err) {
  for (int id = 0; id < g->n_nodes; id++)
    if (verify_node(g, id, err)) return -1;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] < 0 || g->outputs[i] >= g->n_nodes)
      return td_err_set(err, "IR verify: output %d refers to %%%d", i, g->outputs[i]);
  for (int i = 0; i < g->n_updates; i++) {
    int p = g->updates[i].param, v = g->updates[i].value;
    if (p < 0 || p >= g->n_nodes || g->nodes[p].op != TD_IR_PARAM)
      return td_err_set(err, "IR verify: update %d: %%%d is not a parameter", i, p);
    if (v < 0 || v >= g->n_nodes)
      return td_err_set(err, "IR verify: update %d refers to %%%d", i, v);
    const td_node *pn = &g->nodes[p], *vn = &g->nodes[v];
    if (pn->dtype != vn->dtype || pn->rank != vn->rank ||
        (pn->rank && memcmp(pn->shape, vn->shape, (size_t)pn->rank * sizeof pn->shape[0])))
      return td_err_set(err, "IR verify: update %d: %%%d does not have the type of parameter %%%d", i, v, p);
    for (int j = 0; j < i; j++)
      if (g->updates[j].param == p)
        return td_err_set(err, "IR verify: parameter %%%d is updated twice", p);
  }
  return 0;
}

/* ---- printer ---- */

static void print_attr(const td_graph *g, const td_node *n, FILE *out) {
  char b[128];
  switch (n->op) {
  case TD_IR_INPUT: case TD_IR_PARAM: fprintf(out, " \"%s\"", n->name ? n->name : ""); break;
  case TD_IR_CONST:
    if (td_dtype_is_float(n->dtype)) fprintf(out, " %.9g", n->attr.f);
    else fprintf(out, " %lld", (long long)n->attr.i);
    break;
  case TD_IR_DIM: fprintf(out, " %s", td_dim_str(g, n->attr.dim, b, sizeof b)); break;
  case TD_IR_ARANGE:
    if (td_dtype_is_float(n->dtype)) fprintf(out, " start=%.9g step=%.9g", n->attr.f, n->attr.f2);
    else fprintf(out, " start=%lld step=%lld", (long long)n->attr.i, (long long)n->attr.i2);
    break;
  case TD_IR_RAND: case TD_IR_RANDN:   /* with an input, that is the seed */
    if (!n->n_in) fprintf(out, " seed=%llu", (unsigned long long)n->attr.seed);
    fprintf(out, " stream=%#llx", (unsigned long long)n->attr.stream);
    break;
  case TD_IR_PERMUTE:
    fputs(" perm=[", out);
    for (int i = 0; i < n->rank; i++) fprintf(out, "%s%d", i ? "," : "", n->attr.perm[i]);
    fputs("]", out);
    break;
  case TD_IR_CONCAT: case TD_IR_GATHER: fprintf(out, " axis=%d", n->attr.axis); break;
  case TD_IR_SCAN:
    fprintf(out, " steps=%s carries=%d sequences=%d%s%s", td_dim_str(g, n->attr.dim, b, sizeof b), n->attr.n_carry,
            n->attr.n_xs, n->attr.index ? " index" : "", n->attr.reverse ? " reverse" : "");
    break;
  case TD_IR_SCAN_OUT: fprintf(out, " %lld", (long long)n->attr.i); break;
  case TD_IR_CONV: td_conv_print_attr(&n->attr.conv, out); break;
  case TD_IR_SLICE:
    fputs(" [", out);
    for (int i = 0; i < n->rank; i++)
      fprintf(out, "%s%s::%lld", i ? ", " : "", td_dim_str(g, n->attr.start[i], b, sizeof b),
              (long long)n->attr.step[i]);
    fputs("]", out);
    break;
  default:
    if (td_ops[n->op].kind == TD_K_REDUCE) {
      fputs(" axes=[", out);
      int first = 1;
      for (int i = 0; i < 32; i++)
        if (n->attr.axes >> i & 1) { fprintf(out, "%s%d", first ? "" : ",", i); first = 0; }
      fputs("]", out);
    }
  }
}

/* g at indentation depth (a SCAN's body is printed under it, one level in,
 * as "body(%inputs) { ... }"; its node numbers are its own). */
static void print_graph(const td_graph *g, const td_diags *d, FILE *out, int depth) {
  int w = 2 * depth;
  if (depth) fprintf(out, "body(");
  else fprintf(out, "graph %s(", g->name);
  for (int i = 0; i < g->n_inputs; i++) fprintf(out, "%s%%%d", i ? ", " : "", g->inputs[i]);
  fprintf(out, ") {\n");
  for (int id = 0; id < g->n_nodes; id++) {
    const td_node *n = &g->nodes[id];
    char t[256];
    if (n->op == TD_IR_PRINT) fprintf(out, "%*s  print", w, "");
    else if (n->op == TD_IR_SCAN) fprintf(out, "%*s  %%%d = scan", w, "", id);
    else fprintf(out, "%*s  %%%d = %s %s", w, "", id, td_ops[n->op].name, td_type_str(g, n->dtype, n->rank, n->shape, t, sizeof t));
    for (int k = 0; k < n->n_in; k++) fprintf(out, "%s %%%d", k ? "," : "", n->in[k]);
    print_attr(g, n, out);
    const td_source *s = d ? td_diags_source(d, n->span.file) : NULL;
    if (s) fprintf(out, "  # %s:%d:%d", s->path, n->span.line, n->span.col);
    fputc('\n', out);
    if (n->op == TD_IR_SCAN && n->attr.body) {
      fprintf(out, "%*s    ", w, "");
      print_graph(n->attr.body, d, out, depth + 2);
    }
  }
  for (int i = 0; i < g->n_updates; i++) {
    const td_node *pn = &g->nodes[g->updates[i].param];
    fprintf(out, "%*s  update %%%d \"%s\" = %%%d\n", w, "", g->updates[i].param, pn->name ? pn->name : "",
            g->updates[i].value);
  }
  fprintf(out, "%*s  return", w, "");
  for (int i = 0; i < g->n_outputs; i++) fprintf(out, "%s %%%d", i ? "," : "", g->outputs[i]);
  fprintf(out, "\n%*s}\n", w, "");
}

void td_graph_print(const td_graph *g, const td_diags *d, FILE *out) { print_graph(g, d, out, 0); }

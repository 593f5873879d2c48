/* passes.c - the optimisation pipeline: fold, CSE, simplify, DCE.
 *
 * The pipeline is the list in td_optimize, read top to bottom; the verifier
 * runs after every pass and a failure there is an internal compiler error
 * naming the pass.  Each pass rebuilds the graph (see passes.h): it walks
 * the old nodes in order, maps each to a node of the new graph (a copy, an
 * existing node it is equal to, or a replacement) and adds the outputs
 * through the map.  Because nodes are visited in topological order, a
 * pattern over a node's inputs is matched on the NEW graph, where the
 * inputs have already been rewritten; so one walk simplifies whole chains
 * (a reshape of a reshape of a reshape collapses to one reshape).
 */
#include "compiler/passes.h"

#include <math.h>
#include <string.h>

#include "lang/checks.h"
#include "lang/opeval.h"
#include "runtime/mem.h"
#include "runtime/half.h"

/* ---- rebuilding ----------------------------------------------------------- */

typedef struct rebuild {
  const td_graph *src;
  td_graph *dst;
  int *map;        /* src id -> dst id (-1: dropped) */
  td_err *err;
} rebuild;

td_graph *td_graph_clone_tables(const td_graph *g) {
  td_graph *d = td_graph_new(g->arena, g->name);
  if (!d) return NULL;
  if (g->n_syms) {
    d->syms = td_arena_alloc(g->arena, (size_t)g->n_syms * sizeof *d->syms);
    if (!d->syms) return NULL;
    memcpy(d->syms, g->syms, (size_t)g->n_syms * sizeof *d->syms);
  }
  d->n_syms = d->cap_syms = g->n_syms;
  if (g->n_dims) {
    d->dims = td_arena_alloc(g->arena, (size_t)g->n_dims * sizeof *d->dims);
    if (!d->dims) return NULL;
    memcpy(d->dims, g->dims, (size_t)g->n_dims * sizeof *d->dims);
  }
  d->n_dims = d->cap_dims = g->n_dims;
  d->checks = g->checks;
  d->n_checks = g->n_checks;
  d->has_checks = g->has_checks;
  d->update_slots = g->update_slots;   /* the outputs keep their order */
  d->n_update_outs = g->n_update_outs;
  return d;
}

static int rb_init(rebuild *r, const td_graph *g, td_err *err) {
  r->src = g;
  r->err = err;
  r->dst = td_graph_clone_tables(g);
  r->map = td_arena_alloc(g->arena, (size_t)(g->n_nodes + 1) * sizeof *r->map);
  if (!r->dst || !r->map) return td_err_set(err, "out of memory");
  for (int i = 0; i < g->n_nodes; i++) r->map[i] = -1;
  return 0;
}

/* Adds a node like `n` to the new graph with the given (new) inputs. */
static int rb_add(rebuild *r, const td_node *n, const int *in, int n_in, const td_attr *attr) {
  int id = td_graph_add(r->dst, n->op, n->dtype, n->rank, n->shape, in, n_in,
                        attr ? attr : &n->attr, n->span);
  if (id < 0) return td_err_set(r->err, "out of memory");
  r->dst->nodes[id].name = n->name;
  return id;
}

/* Copies src node `id` with its inputs mapped. */
static int rb_copy(rebuild *r, int id) {
  const td_node *n = &r->src->nodes[id];
  int stack_in[8], *in = stack_in;
  if (n->n_in > 8 && !(in = td_arena_alloc(r->src->arena, (size_t)n->n_in * sizeof *in)))
    return td_err_set(r->err, "out of memory");
  for (int k = 0; k < n->n_in; k++) in[k] = r->map[n->in[k]];
  return rb_add(r, n, in, n->n_in, NULL);
}

static td_graph *rb_finish(rebuild *r) {
  for (int i = 0; i < r->src->n_outputs; i++)
    if (td_graph_add_output(r->dst, r->map[r->src->outputs[i]])) {
      td_err_set(r->err, "out of memory");
      return NULL;
    }
  return r->dst;
}

/* The new-graph node of src input k of node n. */
static const td_node *rb_in(const rebuild *r, const td_node *n, int k) {
  return &r->dst->nodes[r->map[n->in[k]]];
}

static int same_type(const td_node *a, const td_node *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

static int is_elementwise(td_op op) {
  td_opkind k = td_ops[op].kind;
  return k == TD_K_UNARY || k == TD_K_BINARY || k == TD_K_COMPARE || k == TD_K_TERNARY;
}

/* ---- constant folding ------------------------------------------------------ */

/* The value of CONST node c in its dtype's storage type, as the
 * interpreter fills a constant (interp/creation.c: f for floats, i for
 * ints, halves rounded from f). */
static td_scalar const_value(const td_node *c) {
  td_scalar v;
  memset(&v, 0, sizeof v);
  switch (c->dtype) {
  case TD_F32: v.f32 = (float)c->attr.f; break;
  case TD_F64: v.f64 = c->attr.f; break;
  case TD_I32: v.i32 = (int32_t)c->attr.i; break;
  case TD_I64: v.i64 = c->attr.i; break;
  case TD_F16: v.f16 = td_f64_to_f16(c->attr.f); break;
  case TD_BF16: v.bf16 = td_f64_to_bf16(c->attr.f); break;
  default: v.b8 = c->attr.i != 0; break;
  }
  return v;
}

/* Stores value v of dtype dt into a CONST attribute (f and i agree; a
 * float's i is its value truncated, 0 where that is not an int64: the
 * conversion would be undefined for NaN, inf and huge values). */
static void const_attr(td_dtype dt, td_scalar v, td_attr *a) {
  memset(a, 0, sizeof *a);
  switch (dt) {
  case TD_I32: a->i = v.i32; a->f = (double)a->i; return;
  case TD_I64: a->i = v.i64; a->f = (double)a->i; return;
  case TD_BOOL: a->i = v.b8 != 0; a->f = (double)a->i; return;
  case TD_F32: a->f = v.f32; break;
  case TD_F64: a->f = v.f64; break;
  case TD_F16: a->f = td_f16_to_f32(v.f16); break;
  default: a->f = td_bf16_to_f32(v.bf16); break;
  }
  a->i = a->f > -9e18 && a->f < 9e18 ? (int64_t)a->f : 0;
}

/* Evaluates elementwise node n over constant (new-graph) inputs into *a
 * with the scalar evaluator of ops.def (lang/opeval.h), which computes
 * what the interpreter computes.  Returns 1 when folded, 0 when the op is
 * not defined on the operands' dtypes (the interpreter refuses it too;
 * f16/bf16 arithmetic, which runs in f32, is left to the backends). */
static int eval_const(const rebuild *r, const td_node *n, td_attr *a) {
  td_scalar in[3], out;
  td_dtype dt[3];
  td_err e;
  for (int k = 0; k < n->n_in; k++) {
    const td_node *c = rb_in(r, n, k);
    in[k] = const_value(c);
    dt[k] = c->dtype;
  }
  if (td_ew_eval(n->op, dt, n->n_in, n->dtype, in, &out, &e) < 0) return 0;
  const_attr(n->dtype, out, a);
  return 1;
}

static int foldable(const rebuild *r, const td_node *n) {
  if (!is_elementwise(n->op) || n->rank != 0 || n->n_in > 3) return 0;
  for (int k = 0; k < n->n_in; k++)
    if (rb_in(r, n, k)->op != TD_IR_CONST) return 0;
  return 1;
}

static int fold_node(rebuild *r, int id) {
  const td_node *n = &r->src->nodes[id];
  td_attr a;
  if (n->op == TD_IR_DIM && TD_DIM_IS_CONST(n->attr.dim)) {
    memset(&a, 0, sizeof a);
    a.i = n->attr.dim;
    a.f = (double)a.i;
  } else if (foldable(r, n)) {
    if (!eval_const(r, n, &a)) return rb_copy(r, id);
  } else {
    return rb_copy(r, id);
  }
  td_node c = *n;
  c.op = TD_IR_CONST;
  return rb_add(r, &c, NULL, 0, &a);
}

td_graph *td_pass_fold(const td_graph *g, td_err *err) {
  rebuild r;
  if (rb_init(&r, g, err)) return NULL;
  for (int id = 0; id < g->n_nodes; id++)
    if ((r.map[id] = fold_node(&r, id)) < 0) return NULL;
  return rb_finish(&r);
}

/* ---- common subexpressions ---------------------------------------------- */

/* Equality of the attributes that matter for op. */
static int attr_eq(const td_node *a, const td_node *b) {
  const td_attr *x = &a->attr, *y = &b->attr;
  switch (a->op) {
  case TD_IR_CONST:
    if (a->dtype == TD_F32) {
      float fx = (float)x->f, fy = (float)y->f;
      return memcmp(&fx, &fy, sizeof fx) == 0;
    }
    if (a->dtype == TD_F64) return memcmp(&x->f, &y->f, sizeof x->f) == 0;
    /* halves by their bits (attr.i is the value truncated: 10 and 10.5
     * were one constant) */
    if (a->dtype == TD_F16) return td_f64_to_f16(x->f) == td_f64_to_f16(y->f);
    if (a->dtype == TD_BF16) return td_f64_to_bf16(x->f) == td_f64_to_bf16(y->f);
    if (a->dtype == TD_BOOL) return (x->i != 0) == (y->i != 0);
    return x->i == y->i;
  case TD_IR_DIM: return x->dim == y->dim;
  case TD_IR_ARANGE:
    return x->i == y->i && x->i2 == y->i2 && !memcmp(&x->f, &y->f, sizeof x->f) &&
           !memcmp(&x->f2, &y->f2, sizeof x->f2);
  case TD_IR_RAND: case TD_IR_RANDN: return x->seed == y->seed && x->stream == y->stream;
  case TD_IR_PERMUTE: return !memcmp(x->perm, y->perm, (size_t)a->rank * sizeof x->perm[0]);
  case TD_IR_SLICE:
    return !memcmp(x->start, y->start, (size_t)a->rank * sizeof x->start[0]) &&
           !memcmp(x->step, y->step, (size_t)a->rank * sizeof x->step[0]);
  case TD_IR_CONCAT: case TD_IR_GATHER: return x->axis == y->axis;
  default:
    if (td_ops[a->op].kind == TD_K_REDUCE) return x->axes == y->axes;
    return 1;
  }
}

static int node_eq(const td_node *a, const td_node *b) {
  if (a->op != b->op || a->n_in != b->n_in || !same_type(a, b)) return 0;
  for (int k = 0; k < a->n_in; k++)
    if (a->in[k] != b->in[k]) return 0;
  return attr_eq(a, b);
}

static uint64_t hmix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

/* A hash consistent with node_eq (attributes hashed coarsely). */
static uint64_t node_hash(const td_node *n) {
  uint64_t h = hmix((uint64_t)n->op, (uint64_t)n->dtype);
  h = hmix(h, (uint64_t)n->rank);
  for (int i = 0; i < n->rank; i++) h = hmix(h, (uint64_t)n->shape[i]);
  for (int k = 0; k < n->n_in; k++) h = hmix(h, (uint64_t)n->in[k]);
  if (n->op == TD_IR_CONST) h = hmix(h, (uint64_t)n->attr.i);
  if (n->op == TD_IR_RAND || n->op == TD_IR_RANDN) h = hmix(h, n->attr.stream);
  if (td_ops[n->op].kind == TD_K_REDUCE) h = hmix(h, n->attr.axes);
  return h;
}

/* A scan is never merged: attr_eq does not compare bodies, and its outputs
 * must stay right after it (ops.def). */
static int cse_candidate(td_op op) {
  return op != TD_IR_PRINT && op != TD_IR_INPUT && op != TD_IR_PARAM && op != TD_IR_SCAN && op != TD_IR_SCAN_OUT;
}

td_graph *td_pass_cse(const td_graph *g, td_err *err) {
  rebuild r;
  if (rb_init(&r, g, err)) return NULL;
  size_t cap = 16;
  while (cap < 2 * (size_t)g->n_nodes) cap *= 2;
  int *tab = td_malloc(cap * sizeof *tab);
  if (!tab) { td_err_set(err, "out of memory"); return NULL; }
  for (size_t i = 0; i < cap; i++) tab[i] = -1;
  for (int id = 0; id < g->n_nodes; id++) {
    int nid = rb_copy(&r, id);
    if (nid < 0) { td_free(tab); return NULL; }
    const td_node *n = &r.dst->nodes[nid];
    r.map[id] = nid;
    if (!cse_candidate(n->op)) continue;
    size_t s = node_hash(n) & (cap - 1);
    while (tab[s] >= 0 && !node_eq(&r.dst->nodes[tab[s]], n)) s = (s + 1) & (cap - 1);
    if (tab[s] < 0) { tab[s] = nid; continue; }
    r.map[id] = tab[s];
    r.dst->n_nodes--;   /* the copy just added is a duplicate: drop it */
  }
  td_free(tab);
  return rb_finish(&r);
}

/* ---- merging a scan into the one that extends it ------------------------- */

/* Does body b compute body f's outputs as its first ones, f's nodes copied
 * in f's order after b's inputs (lang/grad.c makes the forward of a
 * gradient so: f with its input carries stacked as more outputs)? */
static int body_extends(const td_graph *b, const td_graph *f) {
  if (b == f) return 1;
  if (b->n_inputs != f->n_inputs || b->n_outputs < f->n_outputs) return 0;
  int *map = td_malloc((size_t)(f->n_nodes + 1) * sizeof *map), ok = map != NULL, j = 0;
  for (int i = 0; ok && i < f->n_nodes; i++) {
    const td_node *x = &f->nodes[i];
    if (x->op == TD_IR_PRINT) ok = 0;   /* each scan prints: merging would print less */
    if (x->op == TD_IR_INPUT) {
      ok = x->attr.i >= 0 && x->attr.i < b->n_inputs && same_type(x, &b->nodes[b->inputs[x->attr.i]]);
      if (ok) map[i] = b->inputs[x->attr.i];
      continue;
    }
    while (j < b->n_nodes && b->nodes[j].op == TD_IR_INPUT) j++;
    if (!ok || j >= b->n_nodes) { ok = 0; break; }
    const td_node *y = &b->nodes[j];
    ok = x->op == y->op && x->n_in == y->n_in && same_type(x, y) && !memcmp(&x->attr, &y->attr, sizeof x->attr);
    for (int k = 0; ok && k < x->n_in; k++) ok = map[x->in[k]] == y->in[k];
    map[i] = j++;
  }
  for (int k = 0; ok && k < f->n_outputs; k++) ok = map[f->outputs[k]] == b->outputs[k];
  td_free(map);
  return ok;
}

/* Does body b (or a scan in it) print? */
static int body_prints(const td_graph *b) {
  for (int i = 0; i < b->n_nodes; i++)
    if (b->nodes[i].op == TD_IR_PRINT || (b->nodes[i].op == TD_IR_SCAN && body_prints(b->nodes[i].attr.body)))
      return 1;
  return 0;
}

static int same_scan(const td_node *a, const td_node *b) {
  const td_attr *x = &a->attr, *y = &b->attr;
  if (a->n_in != b->n_in || x->dim != y->dim || x->n_carry != y->n_carry || x->n_xs != y->n_xs ||
      x->index != y->index || x->reverse != y->reverse)
    return 0;
  for (int k = 0; k < a->n_in; k++)
    if (a->in[k] != b->in[k]) return 0;
  return 1;
}

td_graph *td_pass_scan_merge(const td_graph *g, td_err *err) {
  int *partner = td_malloc((size_t)(g->n_nodes + 1) * sizeof *partner);
  char *skip = td_calloc((size_t)g->n_nodes + 1, 1);
  if (!partner || !skip) {
    td_free(partner);
    td_free(skip);
    td_err_set(err, "out of memory");
    return NULL;
  }
  for (int i = 0; i < g->n_nodes; i++) partner[i] = -1;
  for (int j = 0; j < g->n_nodes; j++) {
    const td_node *s2 = &g->nodes[j];
    if (s2->op != TD_IR_SCAN || skip[j]) continue;
    for (int i = 0; i < j; i++) {
      const td_node *s = &g->nodes[i];
      if (s->op != TD_IR_SCAN || partner[i] >= 0 || skip[i] || !same_scan(s, s2) || body_prints(s->attr.body) ||
          !body_extends(s2->attr.body, s->attr.body))
        continue;
      partner[i] = j;
      skip[j] = 1;
      for (int o = j + 1; o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT && g->nodes[o].in[0] == j; o++) skip[o] = 1;
      break;
    }
  }
  rebuild r;
  td_graph *out = NULL;
  if (rb_init(&r, g, err) == 0) {
    int ok = 1;
    for (int id = 0; id < g->n_nodes && ok; id++) {
      if (skip[id]) continue;
      if (partner[id] < 0) {
        ok = (r.map[id] = rb_copy(&r, id)) >= 0;
        continue;
      }
      /* the scan that extends this one, here, with all of its outputs:
       * this one's are its first */
      int j = partner[id], n = rb_copy(&r, j);
      ok = n >= 0;
      r.map[id] = r.map[j] = n;
      for (int o = j + 1; ok && o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT && g->nodes[o].in[0] == j; o++)
        ok = (r.map[o] = rb_copy(&r, o)) >= 0;
      for (int o = id + 1; ok && o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT && g->nodes[o].in[0] == id; o++) {
        r.map[o] = r.map[j + 1 + g->nodes[o].attr.i];
        skip[o] = 1;
      }
    }
    if (ok) out = rb_finish(&r);
  }
  td_free(partner);
  td_free(skip);
  return out;
}

/* ---- dead code ------------------------------------------------------------ */

td_graph *td_pass_dce(const td_graph *g, td_err *err) {
  char *live = td_calloc((size_t)g->n_nodes + 1, 1);
  if (!live) { td_err_set(err, "out of memory"); return NULL; }
  for (int i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = 1;
  for (int id = g->n_nodes - 1; id >= 0; id--) {
    const td_node *n = &g->nodes[id];
    /* a take stays even when unused: eager checks its indices, so the
     * compiled code does too */
    if (n->op == TD_IR_PRINT || n->op == TD_IR_INPUT || n->op == TD_IR_PARAM || n->op == TD_IR_GATHER)
      live[id] = 1;
    /* a scan whose step prints runs, as in eager mode, read or not */
    if (n->op == TD_IR_SCAN && body_prints(n->attr.body)) live[id] = 1;
    if (!live[id]) continue;
    for (int k = 0; k < n->n_in; k++) live[n->in[k]] = 1;
    /* a live scan keeps all its outputs, which follow it (ops.def), even
     * those nobody reads: the body computes them anyway */
    for (int o = id + 1; n->op == TD_IR_SCAN && o < g->n_nodes && g->nodes[o].op == TD_IR_SCAN_OUT &&
                         g->nodes[o].in[0] == id; o++)
      live[o] = 1;
  }
  rebuild r;
  td_graph *out = NULL;
  if (rb_init(&r, g, err) == 0) {
    int ok = 1;
    for (int id = 0; id < g->n_nodes && ok; id++)
      if (live[id]) ok = (r.map[id] = rb_copy(&r, id)) >= 0;
    if (ok) out = rb_finish(&r);
  }
  td_free(live);
  return out;
}

/* ---- algebraic simplification ------------------------------------------- */

/* Is new-graph node c a CONST equal to v? */
static int const_is(const td_node *c, double v) {
  if (c->op != TD_IR_CONST) return 0;
  if (td_dtype_is_float(c->dtype)) return c->dtype == TD_F32 ? (float)c->attr.f == (float)v : c->attr.f == v;
  return c->attr.i == (int64_t)v;
}

/* Is new-graph node c a CONST zero that leaves every x unchanged, signed
 * zeros included: for floats x + (-0.0) and x - (+0.0) are x, but
 * -0.0 + (+0.0) is +0.0, so x + 0 stays an addition (neg: the zero of an
 * addition, else of a subtraction). */
static int zero_identity(const td_node *c, int neg) {
  if (!const_is(c, 0)) return 0;
  return !td_dtype_is_float(c->dtype) || !!signbit(c->attr.f) == neg;
}

/* For x OP c or c OP x with identity constant c: the new id of x, or -1. */
static int binary_identity(const rebuild *r, const td_node *n) {
  const td_node *a = rb_in(r, n, 0), *b = rb_in(r, n, 1);
  int ia = r->map[n->in[0]], ib = r->map[n->in[1]];
  switch (n->op) {
  case TD_IR_MUL:
    if (const_is(b, 1) && same_type(a, n)) return ia;
    if (const_is(a, 1) && same_type(b, n)) return ib;
    return -1;
  case TD_IR_ADD:
    if (zero_identity(b, 1) && same_type(a, n)) return ia;
    if (zero_identity(a, 1) && same_type(b, n)) return ib;
    return -1;
  case TD_IR_SUB:
    return zero_identity(b, 0) && same_type(a, n) ? ia : -1;
  case TD_IR_DIV:
    return const_is(b, 1) && same_type(a, n) ? ia : -1;
  default: return -1;
  }
}

static int is_identity_perm(const int *p, int rank) {
  for (int i = 0; i < rank; i++)
    if (p[i] != i) return 0;
  return 1;
}

static int full_slice(const td_node *n, const td_node *x) {
  if (!same_type(n, x)) return 0;
  for (int i = 0; i < n->rank; i++)
    if (n->attr.start[i] != 0 || n->attr.step[i] != 1) return 0;
  return 1;
}

/* The replacement of a movement node, or -1 to keep it; may add a node. */
static int simplify_move(rebuild *r, const td_node *n) {
  const td_node *x = rb_in(r, n, 0);
  int ix = r->map[n->in[0]];
  switch (n->op) {
  case TD_IR_RESHAPE:
    if (same_type(n, x)) return ix;
    if (x->op == TD_IR_RESHAPE) {
      int inner = x->in[0];
      if (same_type(&r->dst->nodes[inner], n)) return inner;
      return rb_add(r, n, &inner, 1, NULL);
    }
    return -1;
  case TD_IR_BROADCAST: return same_type(n, x) ? ix : -1;
  case TD_IR_SLICE: return full_slice(n, x) ? ix : -1;
  case TD_IR_PERMUTE: {
    if (is_identity_perm(n->attr.perm, n->rank)) return ix;
    if (x->op != TD_IR_PERMUTE) return -1;
    td_attr a = n->attr;
    for (int i = 0; i < n->rank; i++) a.perm[i] = x->attr.perm[n->attr.perm[i]];
    int inner = x->in[0];
    if (is_identity_perm(a.perm, n->rank)) return inner;
    return rb_add(r, n, &inner, 1, &a);
  }
  default: return -1;
  }
}

/* The replacement of src node id, or -1 to copy it.  (When adding a
 * replacement runs out of memory the copy that follows fails too.) */
static int simplify_node(rebuild *r, int id) {
  const td_node *n = &r->src->nodes[id];
  int rep = -1;
  td_opkind k = td_ops[n->op].kind;
  if (k == TD_K_BINARY) rep = binary_identity(r, n);
  else if (k == TD_K_MOVE && n->op != TD_IR_CONCAT) {
    int before = r->dst->n_nodes;
    rep = simplify_move(r, n);
    if (rep < 0 && r->dst->n_nodes != before) return -2;
  } else if (n->op == TD_IR_CAST && same_type(rb_in(r, n, 0), n)) rep = r->map[n->in[0]];
  else if (n->op == TD_IR_NEG && rb_in(r, n, 0)->op == TD_IR_NEG) {
    const td_node *x = &r->dst->nodes[rb_in(r, n, 0)->in[0]];
    if (same_type(x, n)) rep = rb_in(r, n, 0)->in[0];
  } else if (n->op == TD_IR_WHERE && n->in[1] == n->in[2] && same_type(rb_in(r, n, 1), n))
    rep = r->map[n->in[1]];
  return rep;
}

td_graph *td_pass_simplify(const td_graph *g, td_err *err) {
  rebuild r;
  if (rb_init(&r, g, err)) return NULL;
  for (int id = 0; id < g->n_nodes; id++) {
    int rep = simplify_node(&r, id);
    r.map[id] = rep >= 0 ? rep : rb_copy(&r, id);
    if (r.map[id] < 0) return NULL;
  }
  return rb_finish(&r);
}

/* ---- the pipeline -------------------------------------------------------------- */

static const char *const pass_names[] = {"fold", "cse", "simplify", "dce", "legalize", "conv", NULL};

const char *const *td_pass_names(void) { return pass_names; }

int td_pass_index(const char *name, size_t len) {
  for (int i = 0; pass_names[i]; i++)
    if (strlen(pass_names[i]) == len && !strncmp(pass_names[i], name, len)) return i;
  return -1;
}

int td_graph_count_ops(const td_graph *g) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    td_op op = g->nodes[i].op;
    n += op != TD_IR_INPUT && op != TD_IR_PARAM && op != TD_IR_CONST && op != TD_IR_DIM &&
         op != TD_IR_PRINT;
  }
  return n;
}

/* Runs one pass on *g, verifies its result and dumps it when asked; *g
 * becomes the result. */
static int run_pass(const char *name, td_pass_fn fn, td_graph **g, const td_opt_opts *o,
                    td_err *err) {
  td_graph *next = fn(*g, err);
  if (!next) return -1;
  td_err verr;
  if (td_graph_verify(next, &verr))
    return td_err_set(err, "internal compiler error: pass '%s' produced an invalid graph "
                      "for %s: %s", name, (*g)->name, verr.msg);
  int bit = td_pass_index(name, strlen(name));
  if (o && o->dump && bit >= 0 && (o->dump_mask >> bit & 1)) o->dump(o->ud, name, next);
  *g = next;
  return 0;
}

int td_optimize(const td_graph *g, const td_opt_opts *opts, td_graph **out, td_opt_stats *stats,
                td_err *err) {
  td_graph *cur = td_pass_dce(g, err);  /* a private copy the pipeline may replace */
  int rc = cur ? 0 : -1;
  if (rc == 0 && !g->has_checks) {      /* what eager checks at run time, from the graph as written */
    td_check *checks = NULL;
    int n = td_checks_derive(g, g->arena, &checks);
    if (n < 0) return td_err_set(err, "out of memory");
    cur->checks = checks;
    cur->n_checks = n;
    cur->has_checks = 1;
  }
#define PASS(name, fn) if (rc == 0) rc = run_pass(name, fn, &cur, opts, err)
  PASS("legalize", td_pass_legalize);  /* f16/bf16 compute in f32 (legalize.c) */
  PASS("conv", td_pass_lower_conv);    /* convolutions as im2col matmuls (lower_conv.c) */
  PASS("fold", td_pass_fold);          /* constants first: exposes x*1, x+0 */
  PASS("cse", td_pass_cse);            /* one node per distinct value */
  PASS("scan_merge", td_pass_scan_merge); /* a gradient's forward scan serves the value too */
  PASS("simplify", td_pass_simplify);  /* algebra and movement chains */
  PASS("fold", td_pass_fold);          /* what simplify exposed */
  PASS("cse", td_pass_cse);            /* chains rebuilt by simplify may coincide */
  PASS("dce", td_pass_dce);            /* drop what no output or print needs */
#undef PASS
  if (rc) return -1;
  if (stats) {
    stats->nodes_before = g->n_nodes;
    stats->nodes_after = cur->n_nodes;
    stats->ops_before = td_graph_count_ops(g);
    stats->ops_after = td_graph_count_ops(cur);
  }
  *out = cur;
  return 0;
}

/* legalize.c - the "legalize" pass: f16/bf16 become storage-only types.
 *
 * The code generators compute in bool, i32, i64, f32 and f64 only.  This
 * pass, first in td_optimize's pipeline, rewrites every node that reads or
 * produces an f16/bf16 value, other than CAST, INPUT, PARAM and PRINT, into
 *     CAST(half -> f32) of each half operand
 *     the same op computing in f32 (reductions and matmul accumulate there)
 *     CAST(f32 -> half) of the result, when the node's dtype was half
 * which is exactly what the eager interpreter does (interp.c), so compiled
 * and eager results agree bit for bit on the rounding points.  Creation
 * leaves (const, arange, rand, randn) of a half dtype are made in f64 and
 * CAST once, like the interpreter's one rounding from double.  After the
 * pass only CAST nodes and leaves/outputs carry half dtypes, and a code
 * generator needs half support only in its type table (uint16_t storage)
 * and in its conversions.
 *
 * Widening casts are shared: each half value is widened once.  A widening
 * of CAST(f32 -> T)(y) is replaced by y itself only where that is exact:
 * when y's values are known to be representable in T, i.e. y is a widening
 * CAST(T -> f32) (the pass's own or the program's) or a movement (reshape,
 * permute, broadcast, slice, concat, gather) of such values.  f32 -> bf16 -> f32 in general loses bits and is
 * kept.
 */
#include "compiler/passes.h"

#include <string.h>

#include "runtime/mem.h"

typedef struct lg {
  const td_graph *src;
  td_graph *dst;
  int *map;      /* src id -> dst id */
  int *widened;  /* dst id -> dst id of its f32 widening, or -1 */
  char *exact;   /* dst id -> the f32 value holds only values of exact[id]'s half type */
  int cap;       /* size of widened[] and exact[] */
  td_err *err;
} lg;

/* Adds a node shaped like n with the given op, dtype, inputs and attributes;
 * its exactness mark starts clear.  Returns the new id or -1. */
static int add(lg *L, const td_node *n, td_op op, td_dtype dt, const int *in, int n_in,
               const td_attr *attr, const char *name) {
  int id = td_graph_add(L->dst, op, dt, n->rank, n->shape, in, n_in, attr, n->span);
  if (id < 0 || id >= L->cap) return td_err_set(L->err, "out of memory");
  L->dst->nodes[id].name = name;
  L->widened[id] = -1;
  L->exact[id] = 0;
  return id;
}

static int is_move(td_op op) {
  td_opkind k = td_ops[op].kind;
  return k == TD_K_MOVE || k == TD_K_GATHER;
}

/* The f32 value of new-graph node v (a half value). */
static int widen(lg *L, int v) {
  if (L->widened[v] >= 0) return L->widened[v];
  const td_node *n = &L->dst->nodes[v];
  td_dtype half = n->dtype;
  if (n->op == TD_IR_CAST && L->exact[n->in[0]] == (char)half) return L->widened[v] = n->in[0];
  td_attr a;
  memset(&a, 0, sizeof a);
  int w = add(L, n, TD_IR_CAST, TD_F32, &v, 1, &a, NULL);
  if (w < 0) return -1;
  L->exact[w] = (char)half;
  return L->widened[v] = w;
}

/* Rounds new-graph f32 node v into the half dtype of src node n. */
static int narrow(lg *L, const td_node *n, int v) {
  td_attr a;
  memset(&a, 0, sizeof a);
  return add(L, n, TD_IR_CAST, n->dtype, &v, 1, &a, NULL);
}

/* Does src node n read or produce a half value? */
static int touches_half(const lg *L, const td_node *n) {
  if (td_dtype_is_half(n->dtype)) return 1;
  for (int k = 0; k < n->n_in; k++)
    if (td_dtype_is_half(L->src->nodes[n->in[k]].dtype)) return 1;
  return 0;
}

/* A creation leaf of a half dtype: made in f64, then one CAST. */
static int half_leaf(lg *L, const td_node *n) {
  int in = n->n_in ? L->map[n->in[0]] : -1;  /* a random op's seed */
  int v = add(L, n, n->op, TD_F64, n->n_in ? &in : NULL, n->n_in, &n->attr, n->name);
  return v < 0 ? -1 : narrow(L, n, v);
}

/* Any other op on half values: computed in f32. */
static int half_op(lg *L, const td_node *n) {
  int stack_in[8], *in = stack_in;
  if (n->n_in > 8 && !(in = td_arena_alloc(L->src->arena, (size_t)n->n_in * sizeof *in)))
    return td_err_set(L->err, "out of memory");
  int all_exact = n->n_in > 0;
  char kind = 0;
  for (int k = 0; k < n->n_in; k++) {
    int v = L->map[n->in[k]];
    if (td_dtype_is_half(L->dst->nodes[v].dtype) && (v = widen(L, v)) < 0) return -1;
    in[k] = v;
    if (k == 0 || n->op != TD_IR_GATHER) {
      if (!L->exact[v] || (kind && kind != L->exact[v])) all_exact = 0;
      kind = L->exact[v];
    }
  }
  int half_out = td_dtype_is_half(n->dtype);
  int v = add(L, n, n->op, half_out ? TD_F32 : n->dtype, in, n->n_in, &n->attr, n->name);
  if (v < 0) return -1;
  if (half_out && is_move(n->op) && all_exact && kind == (char)n->dtype) L->exact[v] = kind;
  return half_out ? narrow(L, n, v) : v;
}

static int legalize_node(lg *L, int id) {
  const td_node *n = &L->src->nodes[id];
  td_opkind kind = td_ops[n->op].kind;
  int plain = n->op == TD_IR_INPUT || n->op == TD_IR_PARAM || n->op == TD_IR_PRINT ||
              n->op == TD_IR_CAST || !touches_half(L, n);
  if (!plain && (kind == TD_K_LEAF || kind == TD_K_RANDOM)) return half_leaf(L, n);
  if (!plain) return half_op(L, n);
  int stack_in[8], *in = stack_in;
  if (n->n_in > 8 && !(in = td_arena_alloc(L->src->arena, (size_t)n->n_in * sizeof *in)))
    return td_err_set(L->err, "out of memory");
  for (int k = 0; k < n->n_in; k++) in[k] = L->map[n->in[k]];
  int v = add(L, n, n->op, n->dtype, in, n->n_in, &n->attr, n->name);
  if (v >= 0 && n->op == TD_IR_CAST && n->dtype == TD_F32 && td_dtype_is_half(L->dst->nodes[in[0]].dtype))
    L->exact[v] = (char)L->dst->nodes[in[0]].dtype; /* a widening written in the program */
  return v;
}

td_graph *td_pass_legalize(const td_graph *g, td_err *err) {
  lg L;
  memset(&L, 0, sizeof L);
  L.src = g;
  L.err = err;
  L.dst = td_graph_clone_tables(g);
  int64_t cap = 2 * (int64_t)g->n_nodes + 1;
  for (int i = 0; i < g->n_nodes; i++) cap += g->nodes[i].n_in;
  L.cap = (int)cap;
  L.map = td_arena_alloc(g->arena, (size_t)(g->n_nodes + 1) * sizeof *L.map);
  L.widened = td_arena_alloc(g->arena, (size_t)cap * sizeof *L.widened);
  L.exact = td_arena_alloc(g->arena, (size_t)cap);
  if (!L.dst || !L.map || !L.widened || !L.exact) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  for (int id = 0; id < g->n_nodes; id++)
    if ((L.map[id] = legalize_node(&L, id)) < 0) return NULL;
  for (int i = 0; i < g->n_outputs; i++)
    if (td_graph_add_output(L.dst, L.map[g->outputs[i]])) {
      td_err_set(err, "out of memory");
      return NULL;
    }
  return L.dst;
}

/* interp.c - the eager interpreter: runs a td_graph node by node.
 *
 * td_interp_run binds the symbolic sizes from the inputs, then walks the
 * nodes in order (their topological order), materialising each value as a
 * td_tensor with the node's dtype and evaluated shape.  Before the walk it
 * computes, per node, the last node that reads it; an intermediate value is
 * released right after its last reader ran, and a RESHAPE that is the last
 * reader of an unshared tensor takes it over instead of copying.  Outputs
 * are kept and handed to the caller.  On any error every value is released.
 *
 * Random ops: element i of a RAND / RANDN node is td_rand_uniform /
 * td_rand_normal(seed, stream, i), seed being attr.seed or, with an input,
 * that rank-0 integer's value sign-extended to 64 bits, and
 *   stream = attr.stream                                  if call_index == 0
 *   stream = td_hash_mix(attr.stream, opts->call_index)   otherwise,
 * so call 0 reproduces the graph's own streams and later calls differ.
 *
 * PRINT builds one line: its parts joined by single spaces; a literal part
 * is written as is, a tensor part as td_tensor_format's text, followed for
 * rank >= 1 by " (f32[2, 3])".  A multi-line array keeps its shape: its
 * continuation lines are indented to the column where the array started
 * (empty lines stay empty).  The line ends with '\n' and goes to on_print.
 *
 * Tracing (opts->trace) sends one line per executed node to on_trace:
 *   file:line:col  op  f32[3, 4]  min=-1 max=2.5 mean=0.25
 * stats are over the finite elements, followed by "nan=K inf=K" when there
 * are any; an empty tensor shows "(empty)"; PRINT shows just its location
 * and "print".  Without opts->diags the location is "line:col".
 *
 * f16 / bf16: an arithmetic, comparison, WHERE, reduction or matmul node
 * touching a half dtype runs in f32: half operands are widened into f32
 * temporaries (exact), the f32 kernel runs (reductions and matmul
 * accumulate in f32 or wider), and a half result is rounded once, to
 * nearest even.  CAST, movement and creation have half kernels.
 *
 * check_numerics: after each float node (inputs and parameters included)
 * the first NaN or Inf stops the run with e.g.
 *   op 'div' produced NaN (first at flat index 12)
 * and *err_span set to the node's span.  Every error caused by a node sets
 * *err_span to its span; otherwise *err_span.file is -1.
 */
#include "interp/interp.h"
#include "runtime/strbuf.h"

#include <stdio.h>
#include <string.h>

#include "lang/checks.h"
#include "runtime/mem.h"
#include "runtime/philox.h"
#include "interp/kernels.h"
#include "lang/print.h"

/* ---- the run state ------------------------------------------------------ */

typedef struct interp {
  const td_graph *g;
  td_tensor *const *inputs;
  td_tensor *const *params;
  const td_run_opts *o;
  int64_t *symvals;
  td_tensor **vals;     /* value of each node, NULL when not (or no longer) held */
  int *last_use;        /* last node reading each node; -1 when none */
  char *keep;           /* node is a graph output */
  td_err *err;
  /* inside a SCAN's body: the step of each enclosing scan, outermost first
   * (traces, errors and random streams name them); symvals are the
   * outermost graph's, not owned */
  int64_t steps[16];
  int n_steps;
  int shared_symvals;
  td_span inner_span;   /* a failure inside a body: the body node's span */
  int inner_failed;
} interp;

/* Evaluates the node's shape; sizes must come out non-negative. */
static int node_shape(interp *I, const td_node *n, int64_t *shape) {
  for (int k = 0; k < n->rank; k++) {
    shape[k] = td_dim_eval(I->g, n->shape[k], I->symvals);
    if (shape[k] < 0) {
      char ds[128];
      return td_err_set(I->err, "size %s of axis %d evaluates to %lld",
                        td_dim_str(I->g, n->shape[k], ds, sizeof ds), k, (long long)shape[k]);
    }
  }
  return 0;
}

static td_tensor *new_out(interp *I, const td_node *n) {
  int64_t shape[TD_MAX_RANK];
  if (node_shape(I, n, shape) < 0) return NULL;
  return td_tensor_new(n->dtype, n->rank, shape, I->err);
}

/* The tensor of a leaf handed in by the caller, checked against the node. */
static int leaf_value(interp *I, const td_node *n, td_tensor **out) {
  int is_param = n->op == TD_IR_PARAM;
  int64_t cnt = is_param ? I->g->n_params : I->g->n_inputs;
  int64_t idx = n->attr.i;
  const char *what = is_param ? "parameter" : "argument";
  if (idx < 0 || idx >= cnt || !(is_param ? I->params : I->inputs)[idx])
    return td_err_set(I->err, "%s '%s' (slot %lld) was not supplied", what,
                      n->name ? n->name : "?", (long long)idx);
  td_tensor *t = (is_param ? I->params : I->inputs)[idx];
  int64_t shape[TD_MAX_RANK];
  if (node_shape(I, n, shape) < 0) return -1;
  int ok = t->dtype == n->dtype && t->rank == n->rank;
  for (int k = 0; ok && k < n->rank; k++) ok = t->shape[k] == shape[k];
  if (!ok) {
    char want[128], got[128];
    return td_err_set(I->err, "%s '%s': expected %s, got %s", what, n->name ? n->name : "?",
                      td_shape_str(n->dtype, n->rank, shape, want, sizeof want),
                      td_shape_str(t->dtype, t->rank, t->shape, got, sizeof got));
  }
  *out = td_tensor_retain(t);
  return 0;
}

/* Leaves other than INPUT/PARAM, and the random ops (in: their seed
 * input, if any). */
static int run_creation(interp *I, const td_node *n, td_tensor *const *in, td_tensor **out) {
  if ((n->op == TD_IR_RAND || n->op == TD_IR_RANDN) && !td_dtype_is_float(n->dtype))
    return td_err_set(I->err, "op '%s' must produce a float dtype, not %s",
                      td_ops[n->op].name, td_dtype_name(n->dtype));
  td_tensor *t = new_out(I, n);
  if (!t) return -1;
  const td_attr *a = &n->attr;
  switch (n->op) {
  case TD_IR_CONST: tdk_fill(t, a->f, a->i); break;
  case TD_IR_DIM: {
    int64_t v = td_dim_eval(I->g, a->dim, I->symvals);
    tdk_fill(t, (double)v, v);
    break;
  }
  case TD_IR_ARANGE: tdk_arange(t, a->f, a->f2, a->i, a->i2); break;
  default: {
    uint64_t call = I->o->call_index;
    uint64_t stream = call ? td_hash_mix(a->stream, call) : a->stream;
    for (int s = 0; s < I->n_steps; s++) stream = td_hash_mix(stream, (uint64_t)I->steps[s] + 1);   /* a scan's step */
    uint64_t seed = a->seed;
    if (n->n_in) {
      const td_tensor *k = in[0];
      if (k->numel != 1 || (k->dtype != TD_I32 && k->dtype != TD_I64)) {
        td_tensor_release(t);
        return td_err_set(I->err, "op '%s': the seed must be a rank-0 i32 or i64 tensor", td_ops[n->op].name);
      }
      seed = k->dtype == TD_I64 ? (uint64_t)((const int64_t *)k->data)[0]
                                : (uint64_t)(int64_t)((const int32_t *)k->data)[0];
    }
    tdk_random(t, n->op == TD_IR_RANDN, seed, stream);
    break;
  }
  }
  *out = t;
  return 0;
}

/* ---- movement ------------------------------------------------------------ */

/* RESHAPE: takes over the input when this node is its last reader and no
 * one else holds it; otherwise copies. */
static int run_reshape(interp *I, int id, const td_node *n, td_tensor **out) {
  int src = n->in[0];
  td_tensor *in = I->vals[src];
  int64_t shape[TD_MAX_RANK], numel = 1;
  if (node_shape(I, n, shape) < 0) return -1;
  for (int k = 0; k < n->rank; k++) numel *= shape[k];
  if (numel != in->numel || in->dtype != n->dtype)
    return td_err_set(I->err, "reshape of %lld elements into %lld", (long long)in->numel,
                      (long long)numel);
  if (I->last_use[src] == id && !I->keep[src] && in->refcount == 1) {
    in->rank = n->rank;
    memcpy(in->shape, shape, sizeof shape);
    I->vals[src] = NULL;
    *out = in;
    return 0;
  }
  td_tensor *t = td_tensor_new(n->dtype, n->rank, shape, I->err);
  if (!t) return -1;
  tdk_copy(in, t);
  *out = t;
  return 0;
}

static int run_slice(interp *I, const td_node *n, td_tensor *in, td_tensor *t) {
  int64_t start[TD_MAX_RANK];
  for (int k = 0; k < in->rank; k++) {
    start[k] = td_dim_eval(I->g, n->attr.start[k], I->symvals);
    if (n->attr.step[k] == 0) return td_err_set(I->err, "slice step 0 on axis %d", k);
  }
  if (t->rank != in->rank)
    return td_err_set(I->err, "slice changes the rank from %d to %d", in->rank, t->rank);
  return tdk_slice(start, n->attr.step, in, t, I->err);
}

static int check_concat(interp *I, const td_node *n, td_tensor *const *in, const td_tensor *t) {
  int ax = n->attr.axis;
  if (ax < 0 || ax >= t->rank) return td_err_set(I->err, "concat axis %d out of range", ax);
  int64_t total = 0;
  for (int j = 0; j < n->n_in; j++) {
    int ok = in[j]->rank == t->rank && in[j]->dtype == t->dtype;
    for (int k = 0; ok && k < t->rank; k++) ok = k == ax || in[j]->shape[k] == t->shape[k];
    if (!ok) return td_err_set(I->err, "concat operand %d does not match the result", j);
    total += in[j]->shape[ax];
  }
  if (total != t->shape[ax])
    return td_err_set(I->err, "concat sizes add up to %lld, expected %lld", (long long)total,
                      (long long)t->shape[ax]);
  return 0;
}

static int check_permute(interp *I, const td_node *n, const td_tensor *in, const td_tensor *t) {
  unsigned seen = 0;
  int ok = in->rank == t->rank;
  for (int i = 0; ok && i < t->rank; i++) {
    int p = n->attr.perm[i];
    ok = p >= 0 && p < in->rank && !(seen & (1u << p)) && in->shape[p] == t->shape[i];
    if (ok) seen |= 1u << p;
  }
  return ok ? 0 : td_err_set(I->err, "permute: invalid permutation for rank %d", in->rank);
}

/* ---- PRINT ------------------------------------------------------------- */

static int run_print(interp *I, const td_node *n, td_tensor *const *in) {
  if (!I->o->on_print) return 0;
  char *text;
  if (td_print_text(n, in, I->o->print_threshold, &text, I->err)) return -1;
  I->o->on_print(I->o->ud, text);
  td_free(text);
  return 0;
}

/* ---- one node ------------------------------------------------------------ */

/* Nodes that write into a freshly allocated tensor of the node's type. */
static int run_into(interp *I, const td_node *n, td_tensor *const *in, td_tensor *t) {
  td_opkind kind = td_ops[n->op].kind;
  switch (kind) {
  case TD_K_UNARY: case TD_K_BINARY: case TD_K_COMPARE: case TD_K_TERNARY:
    return tdk_elementwise(n->op, in, n->n_in, t, I->err);
  case TD_K_REDUCE: return tdk_reduce(n->op, n->attr.axes, in[0], t, I->err);
  case TD_K_MATMUL: return tdk_matmul(in[0], in[1], t, I->err);
  case TD_K_GATHER: return tdk_gather(n->attr.axis, in[0], in[1], t, I->err);
  case TD_K_CONV: return tdk_conv(&n->attr.conv, in[0], in[1], t, I->err);
  default: break;
  }
  switch (n->op) {
  case TD_IR_PERMUTE:
    if (check_permute(I, n, in[0], t) < 0) return -1;
    tdk_permute(n->attr.perm, in[0], t);
    return 0;
  case TD_IR_BROADCAST: return tdk_broadcast(in[0], t, I->err);
  case TD_IR_SLICE: return run_slice(I, n, in[0], t);
  case TD_IR_CONCAT:
    if (check_concat(I, n, in, t) < 0) return -1;
    tdk_concat(n->attr.axis, in, n->n_in, t);
    return 0;
  default: return td_err_set(I->err, "op '%s' is not supported by the interpreter", td_ops[n->op].name);
  }
}

/* Does the node compute on a half dtype (and so run through run_in_f32)? */
static int needs_f32(const td_node *n, td_tensor *const *in, const td_tensor *t) {
  td_opkind kind = td_ops[n->op].kind;
  if (n->op == TD_IR_CAST) return 0;
  if (kind != TD_K_UNARY && kind != TD_K_BINARY && kind != TD_K_COMPARE &&
      kind != TD_K_TERNARY && kind != TD_K_REDUCE && kind != TD_K_MATMUL)
    return 0;
  int half = td_dtype_is_half(t->dtype);
  for (int j = 0; j < n->n_in; j++) half |= td_dtype_is_half(in[j]->dtype);
  return half;
}

/* A new f32 tensor holding the values of half tensor h (exact). */
static td_tensor *widen(interp *I, td_tensor *h) {
  td_tensor *w = td_tensor_new(TD_F32, h->rank, h->shape, I->err);
  if (w && tdk_elementwise(TD_IR_CAST, &h, 1, w, I->err) < 0) {
    td_tensor_release(w);
    w = NULL;
  }
  return w;
}

/* Runs node n (at most 3 operands, see needs_f32) in f32: widened
 * operands, an f32 result where t is half, then one rounding into t. */
static int run_in_f32(interp *I, const td_node *n, td_tensor *const *in, td_tensor *t) {
  td_tensor *win[3] = {NULL, NULL, NULL}, *use[3], *out = t;
  int rc = n->n_in <= 3 ? 0 : td_err_set(I->err, "op '%s' has %d inputs", td_ops[n->op].name, n->n_in);
  for (int j = 0; rc == 0 && j < n->n_in; j++) {
    use[j] = in[j];
    if (td_dtype_is_half(in[j]->dtype) && !(use[j] = win[j] = widen(I, in[j]))) rc = -1;
  }
  if (rc == 0 && td_dtype_is_half(t->dtype) &&
      !(out = td_tensor_new(TD_F32, t->rank, t->shape, I->err)))
    rc = -1;
  if (rc == 0) rc = run_into(I, n, use, out);
  if (rc == 0 && out != t) rc = tdk_elementwise(TD_IR_CAST, &out, 1, t, I->err);
  if (out != t) td_tensor_release(out);
  for (int j = 0; j < 3; j++) td_tensor_release(win[j]);
  return rc;
}

/* The inputs' values; fails when one is not available. */
static int gather_inputs(interp *I, const td_node *n, td_tensor **in) {
  if ((unsigned)n->op >= TD_IR_OP_COUNT)
    return td_err_set(I->err, "unknown op %d", (int)n->op);
  int arity = td_ops[n->op].arity;
  if ((arity >= 0 && n->n_in != arity) || (n->op == TD_IR_CONCAT && n->n_in < 1))
    return td_err_set(I->err, "op '%s' has %d inputs", td_ops[n->op].name, n->n_in);
  for (int j = 0; j < n->n_in; j++) {
    int src = n->in[j];
    if (src < 0 || src >= I->g->n_nodes || !I->vals[src])
      return td_err_set(I->err, "op '%s': input %d (node %%%d) has no value", td_ops[n->op].name,
                        j, src);
    in[j] = I->vals[src];
  }
  return 0;
}

static int run_scan(interp *I, int id);

static int run_node(interp *I, int id) {
  const td_node *n = &I->g->nodes[id];
  if (n->op == TD_IR_SCAN) return run_scan(I, id);
  if (n->op == TD_IR_SCAN_OUT) {   /* its SCAN made its value */
    if (!I->vals[id]) return td_err_set(I->err, "op 'scan_out': its scan made no value");
    return 0;
  }
  td_tensor *stack_in[4], **in = stack_in;
  if (n->n_in > 4 && !(in = td_malloc((size_t)n->n_in * sizeof *in)))
    return td_err_set(I->err, "out of memory");
  int rc = gather_inputs(I, n, in);
  td_tensor *t = NULL;
  if (rc == 0) {
    if (n->op == TD_IR_INPUT || n->op == TD_IR_PARAM) rc = leaf_value(I, n, &t);
    else if (td_ops[n->op].kind == TD_K_LEAF || td_ops[n->op].kind == TD_K_RANDOM)
      rc = run_creation(I, n, in, &t);
    else if (n->op == TD_IR_PRINT) rc = run_print(I, n, in);
    else if (n->op == TD_IR_RESHAPE) rc = run_reshape(I, id, n, &t);
    else if (!(t = new_out(I, n))) rc = -1;
    else if (needs_f32(n, in, t)) rc = run_in_f32(I, n, in, t);
    else rc = run_into(I, n, in, t);
  }
  if (rc < 0) {
    td_tensor_release(t);
    t = NULL;
  }
  if (in != stack_in) td_free(in);
  I->vals[id] = t;
  return rc;
}

/* ---- tracing and numerics -------------------------------------------------- */

static void span_loc(const td_diags *d, td_span sp, char *buf, size_t n) {
  const td_source *src = d && sp.file >= 0 ? td_diags_source(d, sp.file) : NULL;
  if (src) snprintf(buf, n, "%s:%d:%d", src->path, sp.line, sp.col);
  else if (sp.line > 0) snprintf(buf, n, "%d:%d", sp.line, sp.col);
  else if (sp.file < 0) snprintf(buf, n, "<builtin>");
  else snprintf(buf, n, "@%d", sp.start);
}

static void trace_node(interp *I, const td_node *n, const td_tensor *t) {
  char line[768], loc[320], shp[256];
  span_loc(I->o->diags, n->span, loc, sizeof loc - 64);
  for (int s = 0; s < I->n_steps; s++) {   /* inside a scan: "file:line:col [step 3]" */
    size_t l = strlen(loc);
    snprintf(loc + l, sizeof loc - l, s ? ",%lld" : " [step %lld", (long long)I->steps[s]);
    if (s == I->n_steps - 1) snprintf(loc + strlen(loc), sizeof loc - strlen(loc), "]");
  }
  if (!t) {
    snprintf(line, sizeof line, "%s  %s\n", loc, td_ops[n->op].name);
  } else {
    td_shape_str(t->dtype, t->rank, t->shape, shp, sizeof shp);
    tdk_stats s;
    tdk_stats_of(t, &s);
    int w = snprintf(line, sizeof line, "%s  %s  %s", loc, td_ops[n->op].name, shp);
    size_t at = w < 0 ? 0 : (size_t)w < sizeof line ? (size_t)w : sizeof line - 1;
    if (t->numel == 0)
      snprintf(line + at, sizeof line - at, "  (empty)\n");
    else if (s.n_nan || s.n_inf)
      snprintf(line + at, sizeof line - at, "  min=%.6g max=%.6g mean=%.6g nan=%lld inf=%lld\n",
               s.min, s.max, s.mean, (long long)s.n_nan, (long long)s.n_inf);
    else
      snprintf(line + at, sizeof line - at, "  min=%.6g max=%.6g mean=%.6g\n", s.min, s.max,
               s.mean);
  }
  I->o->on_trace(I->o->ud, line);
}

static int check_numerics(interp *I, const td_node *n, const td_tensor *t) {
  int is_nan = 0;
  int64_t at = tdk_first_nonfinite(t, &is_nan);
  if (at < 0) return 0;
  const char *what = is_nan ? "NaN" : "Inf";
  if (n->op == TD_IR_INPUT || n->op == TD_IR_PARAM)
    return td_err_set(I->err, "%s '%s' contains %s (first at flat index %lld)",
                      n->op == TD_IR_INPUT ? "argument" : "parameter", n->name ? n->name : "?",
                      what, (long long)at);
  /* a node of a backward pass is named after its forward op: grad(sqrt) */
  int bwd = n->name && !strncmp(n->name, "grad(", 5);
  if (bwd)
    return td_err_set(I->err, "the gradient of %.*s (its op '%s') produced %s (first at flat index %lld)",
                      (int)strlen(n->name) - 6, n->name + 5, td_ops[n->op].name, what, (long long)at);
  return td_err_set(I->err, "op '%s' produced %s (first at flat index %lld)", td_ops[n->op].name, what,
                    (long long)at);
}

/* ---- the run loop ---------------------------------------------------------- */

static void release_value(interp *I, int id) {
  td_tensor_release(I->vals[id]);
  I->vals[id] = NULL;
}

/* Releases the values whose last reader was node id (and id itself when
 * nothing reads it and it is not an output). */
static void release_dead(interp *I, int id) {
  const td_node *n = &I->g->nodes[id];
  for (int j = 0; j < n->n_in; j++) {
    int src = n->in[j];
    if (I->last_use[src] == id && !I->keep[src]) release_value(I, src);
  }
  if (I->last_use[id] < 0 && !I->keep[id]) release_value(I, id);
}

static int state_init(interp *I, const td_graph *g, td_err *err) {
  int nn = g->n_nodes > 0 ? g->n_nodes : 1;
  I->symvals = td_calloc((size_t)(g->n_syms > 0 ? g->n_syms : 1), sizeof *I->symvals);
  I->vals = td_calloc((size_t)nn, sizeof *I->vals);
  I->last_use = td_malloc((size_t)nn * sizeof *I->last_use);
  I->keep = td_calloc((size_t)nn, 1);
  if (!I->symvals || !I->vals || !I->last_use || !I->keep)
    return td_err_set(err, "out of memory");
  for (int i = 0; i < g->n_nodes; i++) I->last_use[i] = -1;
  for (int i = 0; i < g->n_nodes; i++) {
    const td_node *n = &g->nodes[i];
    for (int j = 0; j < n->n_in; j++) {
      if (n->in[j] < 0 || n->in[j] >= i)
        return td_err_set(err, "node %%%d reads node %%%d, which does not come before it", i,
                          n->in[j]);
      I->last_use[n->in[j]] = i;
    }
  }
  for (int k = 0; k < g->n_outputs; k++) {
    if (g->outputs[k] < 0 || g->outputs[k] >= g->n_nodes)
      return td_err_set(err, "output %d names node %%%d, which does not exist", k, g->outputs[k]);
    I->keep[g->outputs[k]] = 1;
  }
  return 0;
}

static void state_free(interp *I) {
  if (I->vals)
    for (int i = 0; i < I->g->n_nodes; i++) td_tensor_release(I->vals[i]);
  td_free(I->vals);
  if (!I->shared_symvals) td_free(I->symvals);
  td_free(I->last_use);
  td_free(I->keep);
}

/* Runs every node; on failure *bad is the node to blame. */
static int run_all(interp *I, int *bad) {
  for (int id = 0; id < I->g->n_nodes; id++) {
    const td_node *n = &I->g->nodes[id];
    if (I->o->interrupt && *I->o->interrupt) {
      *bad = -1; /* no node is to blame */
      return td_err_set(I->err, "interrupted");
    }
    *bad = id;
    if (run_node(I, id) < 0) return -1;
    td_tensor *t = I->vals[id];
    if (I->o->trace && I->o->on_trace) trace_node(I, n, t);
    if (I->o->check_numerics && t && td_dtype_is_float(t->dtype) && check_numerics(I, n, t) < 0)
      return -1;
    release_dead(I, id);
  }
  *bad = -1;
  return 0;
}

static int collect_outputs(interp *I, td_tensor ***outputs) {
  int no = I->g->n_outputs;
  td_tensor **outs = td_malloc((size_t)(no > 0 ? no : 1) * sizeof *outs);
  if (!outs) return td_err_set(I->err, "out of memory");
  for (int k = 0; k < no; k++) {
    td_tensor *t = I->vals[I->g->outputs[k]];
    if (!t) {
      for (int j = 0; j < k; j++) td_tensor_release(outs[j]);
      td_free(outs);
      return td_err_set(I->err, "output %d (node %%%d) has no value", k, I->g->outputs[k]);
    }
    outs[k] = td_tensor_retain(t);
  }
  *outputs = outs;
  return 0;
}

/* ---- scan ------------------------------------------------------------------ */

/* Runs body b once, as step t of a scan of P: its inputs ins, its outputs
 * into *outs (owned by the caller). */
static int run_body(interp *P, const td_graph *b, td_tensor *const *ins, int64_t t, td_tensor ***outs) {
  interp B = {.g = b, .inputs = ins, .o = P->o, .err = P->err};
  if (P->n_steps >= (int)(sizeof B.steps / sizeof B.steps[0]))
    return td_err_set(P->err, "scans nest more than %d deep", (int)(sizeof B.steps / sizeof B.steps[0]));
  memcpy(B.steps, P->steps, sizeof B.steps);
  B.steps[P->n_steps] = t;
  B.n_steps = P->n_steps + 1;
  int bad = -1;
  int rc = state_init(&B, b, P->err);
  if (rc == 0) {
    td_free(B.symvals);
    B.symvals = P->symvals;
    B.shared_symvals = 1;
    rc = run_all(&B, &bad);
  }
  if (rc == 0) rc = collect_outputs(&B, outs);
  if (rc < 0 && !P->inner_failed) {
    if (B.inner_failed) P->inner_span = B.inner_span;
    else if (bad >= 0) P->inner_span = b->nodes[bad].span;
    P->inner_failed = B.inner_failed || bad >= 0;
  }
  state_free(&B);
  return rc;
}

/* A SCAN (ops.def): the body once per step, the carries passed from step to
 * step, each sequence's slice t copied out for step t and each per-step
 * value copied into row t of its stacked output; then the outputs become
 * the values of the SCAN_OUTs that follow. */
static int run_scan(interp *I, int id) {
  const td_node *n = &I->g->nodes[id];
  const td_attr *a = &n->attr;
  const td_graph *b = a->body;
  int nc = a->n_carry, nx = a->n_xs, nb = b->n_inputs, no = b->n_outputs;
  int64_t T = td_dim_eval(I->g, a->dim, I->symvals);
  if (T < 0) return td_err_set(I->err, "scan: the number of steps evaluates to %lld", (long long)T);
  for (int j = 0; j < n->n_in; j++)
    if (!I->vals[n->in[j]]) return td_err_set(I->err, "op 'scan': input %d has no value", j);
  td_tensor **carry = td_calloc((size_t)nc + 1, sizeof *carry), **ys = td_calloc((size_t)(no - nc) + 1, sizeof *ys);
  td_tensor **bin = td_calloc((size_t)nb + 1, sizeof *bin);
  int rc = carry && ys && bin ? 0 : td_err_set(I->err, "out of memory");
  for (int k = 0; rc == 0 && k < nc; k++) carry[k] = td_tensor_retain(I->vals[n->in[k]]);
  for (int k = 0; rc == 0 && k < no - nc; k++)
    if (!(ys[k] = new_out(I, &I->g->nodes[id + 1 + nc + k]))) rc = -1;
  int x0 = nc, idx = a->index ? nc + nx : -1, c0 = nc + nx + (a->index ? 1 : 0);
  for (int k = c0; rc == 0 && k < nb; k++) bin[k] = I->vals[n->in[k - (a->index ? 1 : 0)]];   /* captures */
  for (int s = 0; rc == 0 && s < T; s++) {
    int64_t t = a->reverse ? T - 1 - s : s;
    for (int k = 0; k < nc; k++) bin[k] = carry[k];
    for (int k = 0; rc == 0 && k < nx; k++) {   /* slice t of sequence k, fresh (the body may keep it) */
      const td_tensor *xs = I->vals[n->in[nc + k]];
      if (!(bin[x0 + k] = td_tensor_new(xs->dtype, xs->rank - 1, xs->shape + 1, I->err))) { rc = -1; break; }
      size_t bytes = (size_t)bin[x0 + k]->numel * td_dtype_size(xs->dtype);
      if (bytes) memcpy(bin[x0 + k]->data, (const char *)xs->data + (size_t)t * bytes, bytes);
    }
    if (rc == 0 && idx >= 0) {
      if (!(bin[idx] = td_tensor_new(TD_I64, 0, NULL, I->err))) rc = -1;
      else ((int64_t *)bin[idx]->data)[0] = t;
    }
    td_tensor **outs = NULL;
    if (rc == 0) rc = run_body(I, b, bin, t, &outs);
    if (rc < 0) {
      char m[sizeof I->err->msg];
      snprintf(m, sizeof m, "%s", I->err->msg);
      td_err_set(I->err, "%s, at step %lld of the scan", m, (long long)t);
    }
    for (int k = x0; k < c0; k++) {
      td_tensor_release(bin[k]);
      bin[k] = NULL;
    }
    if (rc < 0) break;
    for (int k = 0; k < nc; k++) {
      td_tensor_release(carry[k]);
      carry[k] = outs[k];
    }
    for (int k = 0; k < no - nc; k++) {
      td_tensor *y = outs[nc + k];
      size_t bytes = (size_t)y->numel * td_dtype_size(y->dtype);
      if (rc == 0 && (y->dtype != ys[k]->dtype || y->numel * T != ys[k]->numel))
        rc = td_err_set(I->err, "scan: the value of step %lld does not fit its stacked output", (long long)t);
      if (bytes && rc == 0) memcpy((char *)ys[k]->data + (size_t)t * bytes, y->data, bytes);
      td_tensor_release(y);
    }
    td_free(outs);
  }
  for (int k = 0; k < nc; k++) {
    if (rc == 0) I->vals[id + 1 + k] = carry[k];
    else td_tensor_release(carry[k]);
  }
  for (int k = 0; k < no - nc; k++) {
    if (rc == 0) I->vals[id + 1 + nc + k] = ys[k];
    else td_tensor_release(ys[k]);
  }
  td_free(carry);
  td_free(ys);
  td_free(bin);
  return rc;
}

int td_interp_run(const td_graph *g, td_tensor *const *inputs, td_tensor *const *params,
                  const td_run_opts *opts, td_tensor ***outputs, td_err *err,
                  td_span *err_span) {
  static const td_run_opts defaults;
  interp I = {.g = g, .inputs = inputs, .params = params, .o = opts ? opts : &defaults,
              .err = err};
  td_err local;
  if (!I.err) I.err = &local;
  if (err_span) err_span->file = -1;
  *outputs = NULL;
  int bad = -1;
  int rc = state_init(&I, g, I.err);
  if (rc == 0) rc = td_bind_inputs(g, inputs, g->n_inputs, I.symvals, I.err);
  if (rc == 0) rc = td_checks_run_graph(g, I.symvals, I.err, err_span);
  if (rc == 0) rc = run_all(&I, &bad);
  if (rc == 0) rc = collect_outputs(&I, outputs);
  if (rc < 0 && bad >= 0 && err_span) *err_span = I.inner_failed ? I.inner_span : g->nodes[bad].span;
  state_free(&I);
  return rc;
}

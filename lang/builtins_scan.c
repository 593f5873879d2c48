/* builtins_scan.c - scan and fold: a loop that stays one loop.
 *
 *   let (h, ys) = scan(step, h0, xs)        # step(h, x) -> (h, y)
 *   let h = fold(step, h0, xs)              # step(h, x) -> h
 *   let (h, ys) = scan(step, h0, length = n)  # step(h, i), i the step index
 *   scan(step, h0, xs, args = (w, b))       # step(h, x, w, b): the same w, b every step
 *
 * The body function is evaluated once, whatever the trip count, on
 * placeholders: one per carry leaf (the value it has at the start of a
 * step) and one per sequence leaf (its slice along axis 0).  The elaborator
 * needs no mode for this: the body's nodes are appended to the graph being
 * built as any call's are, then moved out of it into a graph of their own
 * (extract), the SCAN node's body; what the body read from before the
 * placeholders (weights, values computed before the loop) becomes a
 * capture, an input of the SCAN passed to every step.  The graph is then
 * set back to where it was and gets the SCAN and its outputs (ops.def).
 *
 * Carries and sequences are tensors, or tuples and lists of them (nested),
 * as in JAX; the carry the body returns must have the structure, dtypes and
 * shapes of the initial one, so the body is checked once for every step.
 */
#include <string.h>
#include "lang/elab_impl.h"

typedef el_ints leaves;
#define push el_ints_push

/* The tensors of v (a tensor, or tuples and lists of them) in order. */
static int flatten(el_ctx *c, const td_value *v, leaves *l, const char *what, const char *fn, int depth) {
  if (v->k == V_TENSOR) return push(c, l, v->node);
  if ((v->k == V_TUPLE || v->k == V_LIST) && depth < 64) {
    for (int i = 0; i < v->n; i++)
      if (flatten(c, &v->items[i], l, what, fn, depth + 1)) return -1;
    return 0;
  }
  td_diag *g = td_error(c->diags, v->span, "%s: the %s must be a tensor or a tuple of tensors, found %s", fn, what,
                        el_kind_name(v));
  td_diag_help(c->diags, g, "a number becomes a tensor with full([], value) or zeros_like(x); the state a "
               "scan carries lives in the graph, one tensor per value");
  return -1;
}

/* A value shaped like template t whose tensors are ids[*at...]. */
static td_value rebuild(el_ctx *c, const td_value *t, const int *ids, int *at, td_span sp) {
  if (t->k == V_TENSOR) return el_tensor(ids[(*at)++], sp);
  td_value r = *t;
  r.span = sp;
  r.items = td_arena_alloc(c->arena, (size_t)(t->n + 1) * sizeof *r.items);
  if (!r.items) return el_err();
  for (int i = 0; i < t->n; i++) r.items[i] = rebuild(c, &t->items[i], ids, at, sp);
  return r;
}

/* Does v have template t's structure (tensors where t has them)? */
static int same_structure(const td_value *t, const td_value *v) {
  if (t->k == V_TENSOR) return v->k == V_TENSOR || v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL;
  if (v->k != t->k || v->n != t->n) return 0;
  for (int i = 0; i < t->n; i++)
    if (!same_structure(&t->items[i], &v->items[i])) return 0;
  return 1;
}

/* A number the body returns for a carry becomes a tensor of the carry's
 * dtype when the carry is a scalar (as `h = 0.0` would). */
static int carry_numbers(el_ctx *c, const td_value *t, td_value *v, const int *init, int *at) {
  if (t->k == V_TENSOR) {
    const td_node *in = &c->g->nodes[init[(*at)++]];
    if (v->k == V_TENSOR || in->rank) return 0;
    int id = el_as_tensor(c, v, in->dtype, v->span);
    if (id < 0) return -1;
    *v = el_tensor(id, v->span);
    return 0;
  }
  for (int i = 0; i < t->n; i++)
    if (carry_numbers(c, &t->items[i], &v->items[i], init, at)) return -1;
  return 0;
}

static void type_of(el_ctx *c, int id, char *buf, size_t n) {
  const td_node *x = &c->g->nodes[id];
  td_type_str(c->g, x->dtype, x->rank, x->shape, buf, n);
}

/* A placeholder: an INPUT node of the graph being built that is not one of
 * its arguments (it becomes the body's input `slot`). */
static int placeholder(el_ctx *c, td_dtype dt, int rank, const td_dim *shape, int slot, const char *name, td_span sp) {
  td_attr a = {0};
  a.i = slot;
  int id = el_emit(c, TD_IR_INPUT, dt, rank, shape, NULL, 0, &a, sp);
  if (id < 0) return -1;
  c->g->n_inputs--;   /* td_graph_add listed it as an argument */
  c->g->nodes[id].name = name;
  return id;
}

/* Moves nodes [k0, g->n_nodes) into a new body graph whose first n_ph
 * inputs are the placeholders k0 .. k0 + n_ph - 1; a node read from before
 * k0 becomes a capture (an input after them, its outer node appended to
 * caps).  outs are made the body's outputs.  NULL when memory runs out. */
static td_graph *extract(el_ctx *c, int k0, int n_ph, const leaves *outs, leaves *caps, td_span sp) {
  td_graph *g = c->g;
  td_graph *b = td_graph_new(c->arena, td_arena_printf(c->arena, "%s.scan", g->name));
  int n = g->n_nodes - k0;
  int *map = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *map);
  int *cap_of = td_arena_alloc(c->arena, (size_t)(k0 + 1) * sizeof *cap_of);   /* outer id -> body input */
  int *in = td_arena_alloc(c->arena, 64 * sizeof *in);
  int in_cap = 64;
  if (!b || !map || !cap_of || !in) return NULL;
  b->parent = td_graph_root(g);
  for (int i = 0; i < k0; i++) cap_of[i] = -1;
  /* a capture: the outer node's type, slot after the placeholders */
#define CAPTURE(o, dst)                                                                        \
  do {                                                                                         \
    if (cap_of[o] < 0) {                                                                       \
      const td_node *on = &g->nodes[o];                                                        \
      td_attr ca = {0};                                                                        \
      ca.i = n_ph + caps->n;                                                                   \
      int cid = td_graph_add(b, TD_IR_INPUT, on->dtype, on->rank, on->shape, NULL, 0, &ca, on->span); \
      if (cid < 0 || push(c, caps, o)) return NULL;                                            \
      b->nodes[cid].name = on->name;                                                           \
      cap_of[o] = cid;                                                                         \
    }                                                                                          \
    (dst) = cap_of[o];                                                                         \
  } while (0)
  for (int i = 0; i < n; i++) {
    const td_node *x = &g->nodes[k0 + i];
    if (x->n_in > in_cap) {
      in_cap = x->n_in;
      if (!(in = td_arena_alloc(c->arena, (size_t)in_cap * sizeof *in))) return NULL;
    }
    for (int j = 0; j < x->n_in; j++) {
      int o = x->in[j];
      if (o >= k0) in[j] = map[o - k0];
      else CAPTURE(o, in[j]);
    }
    int id = td_graph_add(b, x->op, x->dtype, x->rank, x->shape, in, x->n_in, &x->attr, x->span);
    if (id < 0) return NULL;
    b->nodes[id].name = x->name;
    map[i] = id;
  }
  for (int k = 0; k < outs->n; k++) {
    int o = outs->ids[k], bo;
    if (o >= k0) bo = map[o - k0];
    else CAPTURE(o, bo);
    if (td_graph_add_output(b, bo)) return NULL;
  }
#undef CAPTURE
  (void)sp;
  g->n_nodes = k0;
  return b;
}

/* How deep the scans of graph b nest (1 for a body with none inside). */
static int nesting(const td_graph *b) {
  int d = 0;
  for (int i = 0; i < b->n_nodes; i++)
    if (b->nodes[i].op == TD_IR_SCAN && b->nodes[i].attr.body) {
      int k = nesting(b->nodes[i].attr.body);
      if (k > d) d = k;
    }
  return d + 1;
}

/* The deepest nesting of scans the backends run (interp/interp.c's steps). */
#define MAX_SCAN_DEPTH 16

/* scan (which 0) and fold (which 1): a[] = f, init, xs, length, reverse,
 * args, checkpoint (attr.i2 of the SCAN: 0 none, k > 0 segments of k
 * steps, -1 segments of about sqrt(T) steps; lang/grad.c). */
td_value el_scan_builtin(el_ctx *c, int which, td_value *a, td_span sp) {
  const char *fn = which ? "fold" : "scan";
  td_graph *g = c->g;
  int reverse = 0;
  if (a[4].k == V_BOOL) reverse = (int)a[4].i;
  else if (a[4].k != V_NONE) {
    td_error(c->diags, a[4].span, "%s: reverse must be true or false, found %s", fn, el_kind_name(&a[4]));
    return el_err();
  }
  int64_t ckpt = 0;
  if (a[6].k == V_BOOL) ckpt = a[6].i ? -1 : 0;
  else if (a[6].k == V_INT && a[6].i >= 1) ckpt = a[6].i;
  else if (a[6].k != V_NONE && a[6].k != V_ERR) {
    td_diag *d = td_error(c->diags, a[6].span, "%s: checkpoint must be true, false or a number of steps >= 1, "
                          "found %s", fn, a[6].k == V_INT ? "a number below 1" : el_kind_name(&a[6]));
    td_diag_help(c->diags, d, "checkpoint = 32 keeps the carry every 32 steps for the gradient and runs each "
                 "segment again in the backward; checkpoint = true picks about sqrt(T) steps");
    return el_err();
  } else if (a[6].k == V_ERR) {
    return el_err();
  }
  leaves init = {0}, xs = {0};
  if (flatten(c, &a[1], &init, "initial carry", fn, 0)) return el_err();
  int has_xs = a[2].k != V_NONE;
  if (has_xs && flatten(c, &a[2], &xs, "sequence", fn, 0)) return el_err();
  /* the trip count: the sequences' first axis, or length */
  td_dim T = 0;
  int have_t = 0;
  for (int k = 0; k < xs.n; k++) {
    const td_node *x = &g->nodes[xs.ids[k]];
    char t1[128], t2[128];
    if (x->rank < 1) {
      td_diag *d = td_error(c->diags, a[2].span, "%s: sequence %d is a scalar (%s); a scan steps along axis 0", fn, k,
                            (type_of(c, xs.ids[k], t1, sizeof t1), t1));
      td_diag_help(c->diags, d, "pass tensors with a leading step axis, or give the number of steps as length = n");
      return el_err();
    }
    if (have_t && x->shape[0] != T) {
      td_dim_str(g, T, t1, sizeof t1);
      td_dim_str(g, x->shape[0], t2, sizeof t2);
      td_diag *d = td_error(c->diags, a[2].span, "%s: the sequences disagree on the number of steps: %s for "
                            "sequence 0, %s for sequence %d", fn, t1, t2, k);
      td_diag_help(c->diags, d, "every sequence is sliced along axis 0 once per step, so their first axes must "
                   "have the same size");
      return el_err();
    }
    T = x->shape[0];
    have_t = 1;
  }
  if (a[3].k != V_NONE) {
    td_dim L;
    if (el_size_arg(c, &a[3], &L, "length")) return el_err();
    if (have_t && L != T) {
      char t1[128], t2[128];
      td_error(c->diags, a[3].span, "%s: length = %s, but the sequences have %s steps", fn,
               td_dim_str(g, L, t1, sizeof t1), td_dim_str(g, T, t2, sizeof t2));
      return el_err();
    }
    T = L;
    have_t = 1;
  }
  if (!have_t) {
    td_diag *d = td_error(c->diags, sp, "%s needs sequences to step through or a number of steps", fn);
    td_diag_help(c->diags, d, "write %s(f, init, xs) to slice xs along axis 0, or %s(f, init, length = n) to call "
                 "f(carry, i) for i = 0 .. n-1", fn, fn);
    return el_err();
  }
  int n_params = g->n_params, n_updates = g->n_updates, n_inputs = g->n_inputs, n_outputs = g->n_outputs;
  /* the placeholders: carries, slices, the step index */
  int k0 = g->n_nodes, slot = 0;
  leaves ph_c = {0}, ph_x = {0};
  for (int k = 0; k < init.n; k++) {
    const td_node *x = &g->nodes[init.ids[k]];
    td_dim s[TD_MAX_RANK];
    memcpy(s, x->shape, sizeof s);
    int id = placeholder(c, x->dtype, x->rank, s, slot++, "carry", a[1].span);
    if (id < 0 || push(c, &ph_c, id)) return el_err();
  }
  for (int k = 0; k < xs.n; k++) {
    const td_node *x = &g->nodes[xs.ids[k]];
    td_dim s[TD_MAX_RANK];
    memcpy(s, x->shape + 1, (size_t)(x->rank - 1) * sizeof s[0]);
    int id = placeholder(c, x->dtype, x->rank - 1, s, slot++, "x", a[2].span);
    if (id < 0 || push(c, &ph_x, id)) return el_err();
  }
  int idx = has_xs ? -1 : placeholder(c, TD_I64, 0, NULL, slot++, "step", sp);
  if (!has_xs && idx < 0) return el_err();
  int at = 0;
  td_value args[2];
  args[0] = rebuild(c, &a[1], ph_c.ids, &at, a[1].span);
  at = 0;
  args[1] = has_xs ? rebuild(c, &a[2], ph_x.ids, &at, a[2].span) : el_tensor(idx, sp);
  /* args: passed after x to every step (tensors among them become captures) */
  int n_extra = a[5].k == V_NONE ? 0 : a[5].k == V_TUPLE || a[5].k == V_LIST ? a[5].n : 1;
  td_value *call = td_arena_alloc(c->arena, (size_t)(2 + n_extra) * sizeof *call);
  const char **kw = td_arena_alloc(c->arena, (size_t)(2 + n_extra) * sizeof *kw);
  if (!call || !kw) return el_err();
  call[0] = args[0];
  call[1] = args[1];
  for (int k = 0; k < n_extra; k++) call[2 + k] = a[5].k == V_TUPLE || a[5].k == V_LIST ? a[5].items[k] : a[5];
  for (int k = 0; k < 2 + n_extra; k++) kw[k] = NULL;
  c->in_scan++;   /* load() and save() refuse to be inside (builtins_io.c) */
  td_value r = el_call_value(c, &a[0], call, kw, 2 + n_extra, sp, NULL);
  c->in_scan--;
  td_value carry = r, y = el_none(sp);
  if (r.k != V_ERR && !which) {
    if (r.k != V_TUPLE || r.n != 2) {
      td_diag *d = td_error(c->diags, sp, "scan: the step function must return (carry, y), found %s",
                            el_kind_name(&r));
      td_diag_help(c->diags, d, "return the new carry and the value of this step, as (h, y); to keep only "
                   "the carry, use fold(f, init, xs)");
      r = el_err();
    } else {
      carry = r.items[0];
      y = r.items[1];
    }
  }
  leaves outs = {0}, ys = {0}, caps = {0};
  int ok = r.k != V_ERR;
  if (ok && !same_structure(&a[1], &carry)) {
    td_diag *d = td_error(c->diags, sp, "%s: the step function returns %s for the carry, which was %s", fn,
                          el_kind_name(&carry), el_kind_name(&a[1]));
    td_diag_help(c->diags, d, "the carry must come back with the structure it went in with (the same tuple "
                 "of tensors), so that every step can take it");
    ok = 0;
  }
  at = 0;
  if (ok && carry_numbers(c, &a[1], &carry, init.ids, &at)) ok = 0;
  if (ok && flatten(c, &carry, &outs, "carry", fn, 0)) ok = 0;
  for (int k = 0; ok && k < outs.n; k++) {
    const td_node *i0 = &g->nodes[init.ids[k]], *o = &g->nodes[outs.ids[k]];
    if (i0->dtype == o->dtype && i0->rank == o->rank &&
        (!o->rank || !memcmp(i0->shape, o->shape, (size_t)o->rank * sizeof o->shape[0])))
      continue;
    char t1[128], t2[128];
    type_of(c, init.ids[k], t1, sizeof t1);
    type_of(c, outs.ids[k], t2, sizeof t2);
    td_diag *d = td_error(c->diags, sp, "%s: carry %d goes into the step as %s but comes out as %s (made at line %d)",
                          fn, k, t1, t2, o->span.line);
    td_diag_help(c->diags, d, "a carry keeps its dtype and shape at every step (the body is checked once, for "
                 "every step); return values of another shape as the step's output y, which are stacked");
    ok = 0;
  }
  if (ok && y.k != V_NONE && flatten(c, &y, &ys, "per-step output", fn, 0)) ok = 0;
  for (int k = 0; ok && k < ys.n; k++) {
    if (g->nodes[ys.ids[k]].rank < TD_MAX_RANK) continue;
    td_error(c->diags, g->nodes[ys.ids[k]].span, "scan: per-step output %d has rank %d; stacked along the steps "
             "it would pass the largest rank, %d", k, g->nodes[ys.ids[k]].rank, TD_MAX_RANK);
    ok = 0;
  }
  if (ok && (g->n_params != n_params || g->n_inputs != n_inputs)) {
    td_diag *d = td_error(c->diags, sp, "%s: the step function declares parameters", fn);
    td_diag_help(c->diags, d, "make the model outside the loop (a member, or a let before the %s) and call it "
                 "inside: every step then uses the same weights", fn);
    ok = 0;
  }
  if (ok && (g->n_updates != n_updates || g->n_outputs != n_outputs)) {
    td_error(c->diags, sp, "%s: the step function assigns parameters; a scan computes values, assign its "
             "results after it", fn);
    ok = 0;
  }
  if (!ok) {   /* set the graph back; the error is reported */
    g->n_nodes = k0;
    g->n_params = n_params;
    g->n_updates = n_updates;
    g->n_outputs = n_outputs;
    g->n_inputs = n_inputs;
    return el_err();
  }
  for (int k = 0; k < ys.n; k++)
    if (push(c, &outs, ys.ids[k])) return el_err();
  int n_ph = init.n + xs.n + (has_xs ? 0 : 1);
  /* the per-step outputs' types, read before extract sets the graph back */
  td_dtype *ydt = td_arena_alloc(c->arena, (size_t)(outs.n + 1) * sizeof *ydt);
  int *yrank = td_arena_alloc(c->arena, (size_t)(outs.n + 1) * sizeof *yrank);
  td_dim(*yshape)[TD_MAX_RANK] = td_arena_alloc(c->arena, (size_t)(outs.n + 1) * sizeof *yshape);
  if (!ydt || !yrank || !yshape) return el_err();
  for (int k = 0; k < outs.n; k++) {
    const td_node *o = &g->nodes[outs.ids[k]];
    ydt[k] = o->dtype;
    yrank[k] = o->rank;
    memcpy(yshape[k], o->shape, sizeof yshape[k]);
  }
  td_graph *body = extract(c, k0, n_ph, &outs, &caps, sp);
  if (!body) {
    td_diags_oom(c->diags, sp);
    return el_err();
  }
  if (nesting(body) > MAX_SCAN_DEPTH) {
    td_diag *d = td_error(c->diags, sp, "%s: scans nest more than %d deep here", fn, MAX_SCAN_DEPTH);
    td_diag_help(c->diags, d, "flatten the inner loops: a scan's step can carry a tuple, so two nested "
                 "recurrences over the same steps are one scan");
    return el_err();
  }
  /* the SCAN: initial carries, sequences, captures */
  leaves sin = {0};
  for (int k = 0; k < init.n; k++)
    if (push(c, &sin, init.ids[k])) return el_err();
  for (int k = 0; k < xs.n; k++)
    if (push(c, &sin, xs.ids[k])) return el_err();
  for (int k = 0; k < caps.n; k++)
    if (push(c, &sin, caps.ids[k])) return el_err();
  td_attr sa = {0};
  sa.body = body;
  sa.dim = T;
  sa.n_carry = init.n;
  sa.n_xs = xs.n;
  sa.index = !has_xs;
  sa.reverse = reverse;
  sa.i2 = ckpt;
  int s = el_emit(c, TD_IR_SCAN, TD_BOOL, 0, NULL, sin.ids, sin.n, &sa, sp);
  if (s < 0) return el_err();
  leaves res = {0};
  for (int k = 0; k < outs.n; k++) {
    td_attr oa = {0};
    oa.i = k;
    td_dim shp[TD_MAX_RANK];
    int rank = yrank[k];
    if (k < init.n) {
      memcpy(shp, yshape[k], sizeof shp);
    } else {
      shp[0] = T;
      memcpy(shp + 1, yshape[k], (size_t)rank * sizeof shp[0]);
      rank++;
    }
    int id = el_emit(c, TD_IR_SCAN_OUT, ydt[k], rank, shp, &s, 1, &oa, sp);
    if (id < 0 || push(c, &res, id)) return el_err();
  }
  at = 0;
  td_value fc = rebuild(c, &a[1], res.ids, &at, sp);
  if (which) return fc;
  td_value out = {0};
  out.k = V_TUPLE;
  out.n = 2;
  out.span = sp;
  out.items = td_arena_alloc(c->arena, 2 * sizeof *out.items);
  if (!out.items) return el_err();
  out.items[0] = fc;
  out.items[1] = y.k == V_NONE ? el_none(sp) : rebuild(c, &y, res.ids, &at, sp);
  return out;
}

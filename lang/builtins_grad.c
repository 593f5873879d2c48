/* builtins_grad.c - the training built-ins: grad, value_and_grad, params,
 * state_like, buffer.
 *
 * grad(f) and value_and_grad(f) are compile-time function values, as in
 * JAX: calling one evaluates f's body into the graph being built (f is
 * inlined like every call), then asks lang/grad.c for the reverse sweep
 * from f's result, appended to the same graph.  So the forward, the
 * backward and whatever the caller does with the gradients (an optimizer's
 * update) are one graph, and the compiler fuses across them.
 *
 * What is differentiated:
 *   argnums = k or [k, ...]   the call's arguments (default 0 when no wrt)
 *   wrt = model               the trainable parameters of a model instance
 *                             and its sub-models, in declaration order (the
 *                             order of params(model)); buffers are state,
 *                             never differentiated
 * A differentiated argument is passed to f through a fresh identity node,
 * so its gradient counts the uses inside f only, even when the same tensor
 * is passed twice or used elsewhere in the graph.
 *
 * Optimizer state is declared with state_like(model, "exp_avg"): one
 * buffer per trainable parameter, named after it ("fc1.weight.exp_avg"),
 * so it lands in the same safetensors file as the weights.
 */
#include <string.h>
#include "lang/elab_impl.h"
#include "lang/grad.h"

enum { GF_VALUE = 1, GF_AUX = 2 };

/* ---- a model's parameters ---- */

typedef el_ints plist;

static int plist_add(el_ctx *c, plist *l, int id) {
  for (int i = 0; i < l->n; i++)
    if (l->ids[i] == id) return 0;  /* a sub-model reachable twice */
  return el_ints_push(c, l, id);
}

static int collect_value(el_ctx *c, const td_value *v, plist *l, int depth);

/* The trainable PARAM nodes of instance in, in declaration order: its own
 * `param`s, then each member's as they come (sub-models, lists of them). */
static int collect_inst(el_ctx *c, const el_inst *in, plist *l, int depth) {
  if (depth > 200) return 0;
  const td_ast *members = in->def->a;
  for (int i = 0; members && i < members->n; i++) {
    const td_ast *m = members->list[i];
    if (m->kind != TD_A_PARAM && m->kind != TD_A_MEMBER) continue;
    const td_value *v = el_lookup(in->env, m->name);
    if (v && collect_value(c, v, l, depth + 1)) return -1;
  }
  return 0;
}

static int collect_value(el_ctx *c, const td_value *v, plist *l, int depth) {
  switch (v->k) {
  case V_TENSOR: {
    const td_node *n = &c->g->nodes[v->node];
    if (n->op == TD_IR_PARAM && !n->attr.buffer) return plist_add(c, l, v->node);
    return 0;
  }
  case V_MODEL: return collect_inst(c, v->inst, l, depth);
  case V_LIST: case V_TUPLE:
    for (int i = 0; i < v->n; i++)
      if (collect_value(c, &v->items[i], l, depth + 1)) return -1;
    return 0;
  default: return 0;
  }
}

/* The trainable parameters of `m` (a model instance, or a list of them). */
static int model_params(el_ctx *c, const td_value *m, const char *fn, plist *l) {
  if (m->k != V_MODEL && m->k != V_LIST) {
    td_diag *g = td_error(c->diags, m->span, "%s needs a model instance, found %s", fn, el_kind_name(m));
    td_diag_help(c->diags, g, "e.g. %s with net = MLP() a member of the training model", fn);
    return -1;
  }
  if (collect_value(c, m, l, 0)) { td_diags_oom(c->diags, m->span); return -1; }
  return 0;
}

static td_value list_of(el_ctx *c, const int *ids, int n, td_span sp) {
  td_value v = el_none(sp);
  v.k = V_LIST;
  v.items = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *v.items);
  if (!v.items) return el_err();
  for (int i = 0; i < n; i++) v.items[i] = el_tensor(ids[i], sp);
  v.n = n;
  return v;
}

/* ---- grad, value_and_grad ---- */

/* argnums as a list of argument indices; *single when it was one int. */
static int parse_argnums(el_ctx *c, const td_value *v, int **out, int *n, int *single) {
  *single = v->k == V_INT;
  int cnt = v->k == V_INT ? 1 : v->k == V_LIST || v->k == V_TUPLE ? v->n : -1;
  if (cnt < 0) {
    td_error(c->diags, v->span, "argnums must be an integer or a list of integers, found %s", el_kind_name(v));
    return -1;
  }
  int *a = td_arena_alloc(c->arena, (size_t)(cnt + 1) * sizeof *a);
  if (!a) return -1;
  for (int i = 0; i < cnt; i++) {
    const td_value *e = v->k == V_INT ? v : &v->items[i];
    if (e->k != V_INT || e->i < 0 || e->i > 64) {
      td_error(c->diags, e->span, "argnums holds argument positions (0, 1, ...), found %s", el_kind_name(e));
      return -1;
    }
    a[i] = (int)e->i;
  }
  *out = a;
  *n = cnt;
  return 0;
}

static td_value make_gradfn(el_ctx *c, td_value *a, int flags, td_span sp) {
  /* a: f, wrt, argnums, has_aux */
  const td_value *f = &a[0];
  if (f->k != V_FUNC && f->k != V_BUILTIN && f->k != V_MODEL && f->k != V_GRADFN) {
    td_diag *g = td_error(c->diags, f->span, "%s() needs a function to differentiate, found %s",
                          flags & GF_VALUE ? "value_and_grad" : "grad", el_kind_name(f));
    td_diag_help(c->diags, g, "write the loss as a function or method, e.g. fn loss(x, y) { ... }, then "
                 "grad(loss, wrt = net)(x, y)");
    return el_err();
  }
  if (a[1].k != V_NONE && a[1].k != V_MODEL && a[1].k != V_LIST) {
    td_error(c->diags, a[1].span, "wrt must be a model instance (its parameters), found %s", el_kind_name(&a[1]));
    return el_err();
  }
  int aux = 0;
  if (a[3].k != V_NONE) {
    if (a[3].k != V_BOOL) { td_error(c->diags, a[3].span, "has_aux must be true or false"); return el_err(); }
    aux = (int)a[3].i;
  }
  td_value v = el_none(sp);
  v.k = V_GRADFN;
  v.items = td_arena_alloc(c->arena, 3 * sizeof *v.items);
  if (!v.items) return el_err();
  v.items[0] = a[0];
  v.items[1] = a[1];
  v.items[2] = a[2].k == V_NONE && a[1].k == V_NONE ? el_int(0, sp) : a[2];
  v.n = 3;
  v.i = flags | (aux ? GF_AUX : 0);
  return v;
}

td_value el_call_gradfn(el_ctx *c, const td_value *gf, td_value *args, const char **kw, int n, td_span sp) {
  const char *fname = gf->i & GF_VALUE ? "value_and_grad" : "grad";
  int *argnums = NULL, n_arg = 0, single = 0;
  if (gf->items[2].k != V_NONE && parse_argnums(c, &gf->items[2], &argnums, &n_arg, &single)) return el_err();
  int n_pos = 0;
  while (n_pos < n && !kw[n_pos]) n_pos++;
  /* the differentiated arguments, each through its own identity node */
  td_value *a2 = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *a2);
  int *wrt = td_arena_alloc(c->arena, (size_t)(n_arg + 1) * sizeof *wrt);
  if (!a2 || !wrt) return el_err();
  memcpy(a2, args, (size_t)n * sizeof *a2);
  for (int i = 0; i < n_arg; i++) {
    int k = argnums[i];
    if (k >= n_pos) {
      td_error(c->diags, sp, "%s: argnums names argument %d, but the call passes %d positional argument%s",
               fname, k, n_pos, n_pos == 1 ? "" : "s");
      return el_err();
    }
    for (int j = 0; j < i; j++)
      if (argnums[j] == k) { td_error(c->diags, gf->items[2].span, "argnums names argument %d twice", k); return el_err(); }
    if (a2[k].k != V_TENSOR || !td_dtype_is_float(el_node(c, &a2[k])->dtype)) {
      td_diag *g = td_error(c->diags, args[k].span, "%s with respect to argument %d needs a float tensor, found %s",
                            fname, k, a2[k].k == V_TENSOR ? "an integer or bool tensor" : el_kind_name(&a2[k]));
      td_diag_help(c->diags, g, "differentiate with respect to float inputs only; pass labels and indices "
                   "as other arguments (argnums = 0 is the default)");
      return el_err();
    }
    const td_node *x = el_node(c, &a2[k]);
    int id = el_emit(c, TD_IR_RESHAPE, x->dtype, x->rank, x->shape, &a2[k].node, 1, NULL, args[k].span);
    if (id < 0) return el_err();
    a2[k] = el_tensor(id, args[k].span);
    wrt[i] = id;
  }
  plist mp = {0};
  if (gf->items[1].k != V_NONE && model_params(c, &gf->items[1], fname, &mp)) return el_err();

  td_value r = el_call_value(c, &gf->items[0], a2, kw, n, sp, NULL);
  if (r.k == V_ERR) return el_err();
  td_value loss = r;
  if (gf->i & GF_AUX) {
    if (r.k != V_TUPLE || r.n < 2) {
      td_error(c->diags, sp, "%s with has_aux = true: the function must return a tuple (loss, aux...), found %s",
               fname, el_kind_name(&r));
      return el_err();
    }
    loss = r.items[0];
  }
  if (loss.k != V_TENSOR || el_node(c, &loss)->rank != 0 || !td_dtype_is_float(el_node(c, &loss)->dtype)) {
    char t[128] = "";
    if (loss.k == V_TENSOR) {
      const td_node *ln = el_node(c, &loss);
      td_type_str(c->g, ln->dtype, ln->rank, ln->shape, t, sizeof t);
    }
    td_diag *g = td_error(c->diags, sp, "%s needs a function that returns a scalar float loss, found %s%s%s", fname,
                          loss.k == V_TENSOR ? "a tensor " : el_kind_name(&loss), t, "");
    td_diag_help(c->diags, g, "reduce the loss to one value, e.g. mean(...) or sum(...)%s",
                 gf->i & GF_AUX ? "" : "; to return more, use has_aux = true and return (loss, aux)");
    return el_err();
  }
  int nw = n_arg + mp.n;
  int *all = td_arena_alloc(c->arena, (size_t)(nw + 1) * sizeof *all);
  int *grads = td_arena_alloc(c->arena, (size_t)(nw + 1) * sizeof *grads);
  if (!all || !grads) return el_err();
  if (n_arg) memcpy(all, wrt, (size_t)n_arg * sizeof *all);
  if (mp.n) memcpy(all + n_arg, mp.ids, (size_t)mp.n * sizeof *all);
  int errs = c->diags->n_errors;
  if (td_grad(c->g, c->diags, sp, loss.node, -1, all, nw, grads)) {
    if (c->diags->n_errors == errs) td_diags_oom(c->diags, sp);
    return el_err();
  }
  if (c->g->n_nodes > c->node_limit) {
    td_error(c->diags, sp, "the graph grew past %d operations", c->node_limit);
    return el_err();
  }
  /* the result: argument gradients (one, or a tuple), then the model's as a
   * list; both: a tuple (arg grads..., model list) */
  td_value gv;
  td_value mlist = list_of(c, grads + n_arg, mp.n, sp);
  if (mlist.k == V_ERR) return el_err();
  if (gf->items[1].k == V_NONE) {
    if (single) gv = el_tensor(grads[0], sp);
    else {
      gv = list_of(c, grads, n_arg, sp);
      gv.k = V_TUPLE;
    }
  } else if (n_arg == 0) {
    gv = mlist;
  } else {
    gv = el_none(sp);
    gv.k = V_TUPLE;
    gv.items = td_arena_alloc(c->arena, (size_t)(n_arg + 2) * sizeof *gv.items);
    if (!gv.items) return el_err();
    for (int i = 0; i < n_arg; i++) gv.items[i] = el_tensor(grads[i], sp);
    gv.items[n_arg] = mlist;
    gv.n = n_arg + 1;
  }
  if (!(gf->i & GF_VALUE)) return gv;
  td_value out = el_none(sp);
  out.k = V_TUPLE;
  out.items = td_arena_alloc(c->arena, 2 * sizeof *out.items);
  if (!out.items) return el_err();
  out.items[0] = r;
  out.items[1] = gv;
  out.n = 2;
  return out;
}

/* ---- state: buffers ---- */

/* A buffer PARAM of dtype/shape, filled with v, named `name`. */
static int declare_buffer(el_ctx *c, const char *name, td_dtype dt, int rank, const td_dim *shape, double v,
                          td_span sp) {
  td_attr at;
  memset(&at, 0, sizeof at);
  at.init = v == 0 ? TD_INIT_ZEROS : TD_INIT_FULL;
  at.init_a = v;
  at.buffer = 1;
  for (int i = 0; i < c->g->n_params; i++) {
    const td_node *p = &c->g->nodes[c->g->params[i]];
    if (p->name && !strcmp(p->name, name)) {
      td_diag *g = td_error(c->diags, sp, "the state '%s' is declared twice", name);
      td_diag_help(c->diags, g, "each parameter has one state of a name: two optimizers over one model need "
                   "different state names");
      return -1;
    }
  }
  int id = el_emit(c, TD_IR_PARAM, dt, rank, shape, NULL, 0, &at, sp);
  if (id < 0) return -1;
  c->g->nodes[id].name = name;
  c->g->nodes[id].attr.i = c->g->n_params - 1;
  return id;
}

static int in_member(el_ctx *c, const char *fn, td_span sp) {
  if (c->inst_prefix) return 0;
  td_diag *g = td_error(c->diags, sp, "%s() declares a model's state; it is only allowed as a model member", fn);
  td_diag_help(c->diags, g, "e.g. model Opt(net) { exp_avg = state_like(net, \"exp_avg\") ... }");
  return -1;
}

static int number(const td_value *v, double *out) {
  if (v->k == V_INT || v->k == V_BOOL) { *out = (double)v->i; return 0; }
  if (v->k == V_FLOAT) { *out = v->f; return 0; }
  return -1;
}

/* state_like(model, name, value = 0): a buffer per trainable parameter. */
static td_value b_state_like(el_ctx *c, td_value *a, td_span sp) {
  if (in_member(c, "state_like", sp)) return el_err();
  plist l = {0};
  if (model_params(c, &a[0], "state_like", &l)) return el_err();
  if (a[1].k != V_STR || !a[1].s[0] || strchr(a[1].s, '.')) {
    td_error(c->diags, a[1].span, "state_like's name must be a non-empty string without dots, e.g. \"exp_avg\"");
    return el_err();
  }
  double v = 0;
  if (a[2].k != V_NONE && number(&a[2], &v)) {
    td_error(c->diags, a[2].span, "state_like's value must be a number, found %s", el_kind_name(&a[2]));
    return el_err();
  }
  int *ids = td_arena_alloc(c->arena, (size_t)(l.n + 1) * sizeof *ids);
  if (!ids) return el_err();
  for (int i = 0; i < l.n; i++) {
    td_node p = c->g->nodes[l.ids[i]];
    const char *name = td_arena_printf(c->arena, "%s.%s", p.name ? p.name : "?", a[1].s);
    if (!name || (ids[i] = declare_buffer(c, name, p.dtype, p.rank, p.shape, v, sp)) < 0) return el_err();
  }
  return list_of(c, ids, l.n, sp);
}

/* buffer(shape, value = 0, dtype = f32): one buffer, named by its member. */
static td_value b_buffer(el_ctx *c, td_value *a, td_span sp) {
  if (in_member(c, "buffer", sp)) return el_err();
  int rank;
  td_dim shape[TD_MAX_RANK];
  if (el_shape_arg(c, &a[0], &rank, shape, sp)) return el_err();
  for (int i = 0; i < rank; i++)
    if (!TD_DIM_IS_CONST(shape[i])) {
      td_error(c->diags, a[0].span, "a buffer's shape must be known when the model is built");
      return el_err();
    }
  double v = 0;
  if (a[1].k != V_NONE && number(&a[1], &v)) {
    td_error(c->diags, a[1].span, "buffer's value must be a number, found %s", el_kind_name(&a[1]));
    return el_err();
  }
  td_dtype dt = TD_F32;
  if (a[2].k != V_NONE) {
    int d = el_builtin_dtype(&a[2]);
    if (d < 0) { td_error(c->diags, a[2].span, "dtype must be a dtype name such as f32 or i64"); return el_err(); }
    dt = (td_dtype)d;
  }
  size_t l = strlen(c->inst_prefix);
  const char *name = td_arena_strndup(c->arena, c->inst_prefix, l ? l - 1 : 0);
  if (!name) return el_err();
  int id = declare_buffer(c, name, dt, rank, shape, v, sp);
  return id < 0 ? el_err() : el_tensor(id, sp);
}

/* assign(p, v): parameter or buffer p takes v's value when the call ends
 * (lang/ir.h, "Updates"); v is made p's exact type. */
static td_value b_assign(el_ctx *c, td_value *a, td_span sp) {
  const td_node *p = a[0].k == V_TENSOR ? el_node(c, &a[0]) : NULL;
  if (!p || p->op != TD_IR_PARAM) {
    td_diag *g = td_error(c->diags, a[0].span, "assign updates a model's parameter or state, found %s",
                          p ? "a computed tensor" : el_kind_name(&a[0]));
    td_diag_help(c->diags, g, "values are immutable: to name a new value use let; to update a parameter "
                 "write assign(fc.weight, fc.weight - lr * g)");
    return el_err();
  }
  int pid = a[0].node;
  for (int i = 0; i < c->g->n_updates; i++)
    if (c->g->updates[i].param == pid) {
      const td_source *src = td_diags_source(c->diags, c->g->updates[i].span.file);
      td_diag *g = td_error(c->diags, sp, "'%s' is assigned twice in this graph", p->name ? p->name : "?");
      td_diag_help(c->diags, g, "the first assign is at %s:%d; a step updates each parameter once (compute the "
                   "final value, then assign it)", src ? src->path : "?", c->g->updates[i].span.line);
      return el_err();
    }
  td_dtype dt = p->dtype;
  int rank = p->rank;
  td_dim shape[TD_MAX_RANK];
  memcpy(shape, p->shape, sizeof shape);
  const char *pname = p->name;
  if (a[1].k == V_TENSOR && el_node(c, &a[1])->dtype != dt) {
    td_diag *g = td_error(c->diags, a[1].span, "assign: '%s' is %s, the value is %s", pname ? pname : "?",
                          td_dtype_name(dt), td_dtype_name(el_node(c, &a[1])->dtype));
    td_diag_help(c->diags, g, "convert the value, e.g. %s(...)", td_dtype_name(dt));
    return el_err();
  }
  int v = el_as_tensor(c, &a[1], dt, a[1].span);
  if (v < 0) return el_err();
  td_value vv = el_tensor(v, a[1].span);
  td_value b = el_broadcast_to(c, &vv, rank, shape, sp);
  if (b.k == V_ERR) return el_err();
  const td_node *bn = el_node(c, &b);
  int same = bn->rank == rank;
  for (int i = 0; same && i < rank; i++) same = bn->shape[i] == shape[i];
  if (!same) {
    td_error(c->diags, a[1].span, "assign: the value does not have the shape of '%s'", pname ? pname : "?");
    return el_err();
  }
  int node = b.node;
  if (node == pid) return el_none(sp);   /* assign(p, p): nothing changes */
  /* a value that is another parameter itself is copied through an
   * identity, so that each update has a value of its own */
  if (c->g->nodes[node].op == TD_IR_PARAM && (node = el_emit(c, TD_IR_RESHAPE, dt, rank, shape, &node, 1, NULL, sp)) < 0)
    return el_err();
  if (td_graph_add_update(c->g, pid, node)) {
    td_diags_oom(c->diags, sp);
    return el_err();
  }
  c->g->updates[c->g->n_updates - 1].span = sp;
  return el_none(sp);
}

td_value el_train_builtin(el_ctx *c, int which, td_value *a, td_span sp) {
  switch (which) {
  case 0: return make_gradfn(c, a, 0, sp);
  case 1: return make_gradfn(c, a, GF_VALUE, sp);
  case 2: {
    plist l = {0};
    if (model_params(c, &a[0], "params", &l)) return el_err();
    return list_of(c, l.ids, l.n, sp);
  }
  case 3: return b_state_like(c, a, sp);
  case 4: return b_buffer(c, a, sp);
  case 6: return b_assign(c, a, sp);
  case 5: /* len: of a list or tuple, or a tensor's first axis (Python's) */
    if (a[0].k == V_LIST || a[0].k == V_TUPLE) return el_int(a[0].n, sp);
    if (a[0].k == V_TENSOR && el_node(c, &a[0])->rank > 0) return el_size(c, el_node(c, &a[0])->shape[0], sp);
    td_error(c->diags, a[0].span, "len() needs a list, a tuple or a tensor with an axis, found %s",
             a[0].k == V_TENSOR ? "a rank-0 tensor" : el_kind_name(&a[0]));
    return el_err();
  }
  return el_err();
}

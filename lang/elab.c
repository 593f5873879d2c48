/* elab.c - the elaborator: values, scopes, statements, expressions, calls
 * and models, lowering each entry point to one Graph IR graph (program.c
 * loads the modules and drives the lowering of an entry point).
 *
 * Overview.  A program is a set of modules (the main file and its imports).
 * Lowering an entry point evaluates its body with a partial evaluator:
 * compile-time values (numbers, sizes, bools, lists, models, functions) are
 * computed here; every tensor operation becomes an IR node whose dtype and
 * shape are checked on the spot (shapes.c).  Functions and models are
 * inlined, `if` and `for` are decided and unrolled at compile time, so the
 * result is one graph with no control flow: what the whole language is for.
 *
 * The constructs that would split a graph in PyTorch are caught here, each
 * with its teaching error: `if` on a tensor, reading a tensor on the host
 * (.item(), int(x), a tensor as a size), loops over runtime values, and `if`
 * on a symbolic size.
 *
 * Errors evaluate to V_ERR, which every operation propagates without a new
 * message, so one run reports several independent errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lang/elab_impl.h"
#include "runtime/philox.h"
#include "runtime/scalar.h"
#include "runtime/strbuf.h"

#define MAX_DEPTH 200
#define MAX_UNROLL 100000

/* ---- values ---- */

td_value el_err(void) {
  td_value v;
  memset(&v, 0, sizeof v);
  v.k = V_ERR;
  v.span.file = -1;
  return v;
}

td_value el_none(td_span sp) {
  td_value v = el_err();
  v.k = V_NONE;
  v.span = sp;
  return v;
}

td_value el_int(int64_t i, td_span sp) {
  td_value v = el_none(sp);
  v.k = V_INT;
  v.i = i;
  return v;
}

td_value el_float(double f, td_span sp) {
  td_value v = el_none(sp);
  v.k = V_FLOAT;
  v.f = f;
  return v;
}

td_value el_bool(int b, td_span sp) {
  td_value v = el_int(b != 0, sp);
  v.k = V_BOOL;
  return v;
}

td_value el_size(el_ctx *c, td_dim d, td_span sp) {
  if (TD_DIM_IS_BAD(d)) {
    el_err_overflow(c, sp, "this size does not fit");
    return el_err();
  }
  if (TD_DIM_IS_CONST(d)) return el_int(d, sp);
  td_value v = el_none(sp);
  v.k = V_SIZE;
  v.dim = d;
  return v;
}

td_value el_tensor(int node, td_span sp) {
  td_value v = el_none(sp);
  v.k = V_TENSOR;
  v.node = node;
  return v;
}

const char *el_kind_name(const td_value *v) {
  switch (v->k) {
  case V_ERR: return "an error";
  case V_NONE: return "no value";
  case V_INT: return "an integer";
  case V_FLOAT: return "a float";
  case V_BOOL: return "a bool";
  case V_STR: return "a string";
  case V_SIZE: return "a size";
  case V_TENSOR: return "a tensor";
  case V_LIST: return "a list";
  case V_TUPLE: return "a tuple";
  case V_RANGE: return "a range";
  case V_MODEL: return "a model instance";
  case V_MODELDEF: return "a model";
  case V_FUNC: return "a function";
  case V_MODULE: return "a module";
  case V_BUILTIN: return "a built-in function";
  case V_GRADFN: return "a function";
  }
  return "a value";
}

/* ---- scopes ---- */

el_scope *el_scope_new(el_ctx *c, el_scope *parent) {
  el_scope *s = td_arena_alloc(c->arena, sizeof *s);
  if (s) s->parent = parent;
  return s;
}

#define INDEX_FROM 16   /* bindings past which a scope gets a hash index */


static void index_put(el_scope *s, int i) {
  uint32_t m = (uint32_t)s->idx_cap - 1;
  for (uint32_t k = td_str_hash(s->b[i].name) & m;; k = (k + 1) & m)
    if (!s->idx[k]) { s->idx[k] = i + 1; return; }
}

/* Makes s's index describe its bindings (arena memory; left without one
 * when memory runs out: lookups then search the bindings one by one). */
static void index_sync(el_ctx *c, el_scope *s) {
  int fresh = s->idx && s->idx_b == s->b && s->idx_n <= s->n;
  if (fresh && 2 * s->n <= s->idx_cap) {
    for (; s->idx_n < s->n; s->idx_n++) index_put(s, s->idx_n);
    return;
  }
  int cap = 64;
  while (cap < 4 * s->n) cap *= 2;
  s->idx = td_arena_alloc(c->arena, (size_t)cap * sizeof *s->idx);
  s->idx_n = 0;
  if (!s->idx) return;
  memset(s->idx, 0, (size_t)cap * sizeof *s->idx);
  s->idx_cap = cap;
  s->idx_b = s->b;
  for (; s->idx_n < s->n; s->idx_n++) index_put(s, s->idx_n);
}

/* The binding of name in s itself, or NULL. */
static el_binding *find_in(el_scope *s, const char *name) {
  if (s->idx && s->idx_b == s->b && s->idx_n == s->n) {
    uint32_t m = (uint32_t)s->idx_cap - 1;
    for (uint32_t k = td_str_hash(name) & m; s->idx[k]; k = (k + 1) & m)
      if (!strcmp(s->b[s->idx[k] - 1].name, name)) return &s->b[s->idx[k] - 1];
    return NULL;
  }
  for (int i = s->n - 1; i >= 0; i--)
    if (!strcmp(s->b[i].name, name)) return &s->b[i];
  return NULL;
}

int el_bind(el_ctx *c, el_scope *s, const char *name, td_value v) {
  if (s->n > INDEX_FROM) index_sync(c, s);
  el_binding *old = find_in(s, name);
  if (old) { old->v = v; return 0; }
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    el_binding *nb = td_arena_alloc(c->arena, (size_t)cap * sizeof *nb);
    if (!nb) return -1;
    if (s->n) memcpy(nb, s->b, (size_t)s->n * sizeof *nb);
    s->b = nb;
    s->cap = cap;
  }
  s->b[s->n].name = name;
  s->b[s->n].v = v;
  s->n++;
  if (s->n > INDEX_FROM) index_sync(c, s);
  return 0;
}

td_value *el_lookup(el_scope *s, const char *name) {
  for (; s; s = s->parent) {
    el_binding *b = find_in(s, name);
    if (b) return &b->v;
  }
  return NULL;
}

int el_ints_push(el_ctx *c, el_ints *l, int id) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    int *ni = td_arena_alloc(c->arena, (size_t)cap * sizeof *ni);
    if (!ni) return -1;
    if (l->n) memcpy(ni, l->ids, (size_t)l->n * sizeof *ni);
    l->ids = ni;
    l->cap = cap;
  }
  l->ids[l->n++] = id;
  return 0;
}

/* ---- "did you mean" ---- */

static int edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 64 || lb > 64) return 99;
  int d[65][65];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++)
    for (int j = 1; j <= lb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
        d[i][j] = d[i - 2][j - 2] + 1;   /* two letters swapped: one typo */
    }
  return d[la][lb];
}

static void consider(const char *name, const char *cand, const char **best, int *bd) {
  int d = edit_distance(name, cand);
  int lim = (int)strlen(name) <= 4 ? 1 : 2;   /* 'nope' is not a typo of 'norm' */
  if (d <= lim && d < *bd && strcmp(name, cand)) { *bd = d; *best = cand; }
}

static const char *suggest(el_scope *s, const char *name) {
  const char *best = NULL;
  int bd = 99;
  for (; s; s = s->parent)
    for (int i = 0; i < s->n; i++) consider(name, s->b[i].name, &best, &bd);
  for (int i = 0; i < el_builtin_count(); i++) consider(name, el_builtin_name(i), &best, &bd);
  return best;
}

/* Python habits worth a direct hint. */
static const char *python_hint(const char *name) {
  static const char *map[][2] = {
    {"torch", "tdsl has its built-ins at top level: write relu(x), not torch.relu(x)"},
    {"np", "tdsl has its built-ins at top level: write exp(x), not np.exp(x)"},
    {"self", "inside a model method, members are in scope by name: write fc(x), not self.fc(x)"},
    {"range", "a compile-time range is written lo..hi: for i in 0..5 { ... }"},
    {"None", "tdsl has no None; optional members are declared with `if cond`"},
    {"True", "booleans are written true and false"},
    {"False", "booleans are written true and false"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(name, map[i][0])) return map[i][1];
  return NULL;
}

static td_value unknown_name(el_ctx *c, el_scope *s, const td_ast *e) {
  td_diag *g = td_error(c->diags, e->span, "unknown name '%s'", e->name);
  const char *h = python_hint(e->name);
  const char *best = suggest(s, e->name);
  if (h) td_diag_help(c->diags, g, "%s", h);
  else if (best) td_diag_help(c->diags, g, "did you mean '%s'?", best);
  return el_err();
}

/* ---- teaching errors ---- */

void el_err_host_read(el_ctx *c, const td_value *v, const char *what) {
  td_diag *g = td_error(c->diags, v->span,
                        "tensors never leave the graph: a tensor's value cannot be used as %s", what);
  td_diag_help(c->diags, g, "sizes, axes and loop bounds must be known when the graph is built "
               "(literals, model parameters or symbolic sizes like x.shape[0]);\n"
               "to look at a tensor's value, return it from the entry point or print it");
}

static void err_symbolic_branch(el_ctx *c, td_span sp, const char *name) {
  int simple = name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == strlen(name);
  if (!simple) {
    td_diag *g = td_error(c->diags, sp, "%s depends on sizes bound at call time, so this condition is not known "
                          "when the graph is built", name);
    td_diag_help(c->diags, g, "make those sizes model parameters, or write the computation for any size");
    return;
  }
  td_diag *g = td_error(c->diags, sp, "%s is bound at call time, so this condition is not known when the graph is built", name);
  td_diag_help(c->diags, g, "make %s a model parameter (model M(%s: int) { ... }) so each value gets its own model, "
               "or write the computation for any %s", name, name, name);
}

/* d as text, in the arena (no static buffer: programs may be elaborated
 * on several threads at once). */
static const char *sym_name(el_ctx *c, td_dim d) {
  char buf[256];
  const char *s = td_arena_strdup(c->arena, td_dim_str(c->g, d, buf, sizeof buf));
  return s ? s : "a size";
}

/* ---- compile-time arithmetic ---- */

/* Compile-time integers are 64-bit and exact: an operation whose result
 * does not fit is an error (sizes are made of them). */
static td_value int_overflow(el_ctx *c, int op, int64_t i, int64_t j, td_span sp) {
  td_diag *g = td_error(c->diags, sp, "integer overflow in a compile-time expression: %lld %s %lld %s",
                        (long long)i, td_binop_str(op), (long long)j,
                        op == TD_OP_MOD ? "overflows (its quotient, 2^63, does not fit in 64 bits)"
                                        : "does not fit in 64 bits");
  td_diag_help(c->diags, g, "compile-time integers are 64-bit (-2^63 .. 2^63 - 1); "
               "for a large number use a float, e.g. 2.0 ** 64");
  return el_err();
}

static int is_num(const td_value *v) { return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL || v->k == V_SIZE; }
static double num_f(const td_value *v) { return v->k == V_FLOAT ? v->f : (double)v->i; }

static td_value const_arith(el_ctx *c, int op, const td_value *a, const td_value *b, td_span sp) {
  /* symbolic sizes: + - * and exact / or // */
  if (a->k == V_SIZE || b->k == V_SIZE) {
    td_dim da, db;
    if ((a->k != V_SIZE && a->k != V_INT) || (b->k != V_SIZE && b->k != V_INT)) {
      td_error(c->diags, sp, "a symbolic size can only be combined with integers and sizes");
      return el_err();
    }
    da = a->k == V_SIZE ? a->dim : td_dim_const(c->g, a->i);
    db = b->k == V_SIZE ? b->dim : td_dim_const(c->g, b->i);
    td_dim r = 0;
    int arith = 1, inexact = 0;
    switch (op) {
    case TD_OP_ADD: r = td_dim_add(c->g, da, db); break;
    case TD_OP_SUB: r = td_dim_sub(c->g, da, db); break;
    case TD_OP_MUL: r = td_dim_mul(c->g, da, db); break;
    case TD_OP_DIV: case TD_OP_FLOORDIV: inexact = td_dim_div(c->g, da, db, &r) != 0; break;
    default: arith = 0; break;
    }
    if (arith && (TD_DIM_IS_BAD(r) || TD_DIM_IS_BAD(da) || TD_DIM_IS_BAD(db))) {
      static const char *const what[] = {"sum", "difference", "product", "quotient"};
      char s1[128], s2[128];
      td_dim_str(c->g, da, s1, sizeof s1);
      td_dim_str(c->g, db, s2, sizeof s2);
      if (strlen(s1) + strlen(s2) < 80) el_err_overflow(c, sp, "%s %s %s does not fit", s1, td_binop_str(op), s2);
      else el_err_overflow(c, sp, "this %s of sizes does not fit", what[op == TD_OP_ADD ? 0 : op == TD_OP_SUB ? 1 : op == TD_OP_MUL ? 2 : 3]);
      return el_err();
    }
    switch (op) {
    case TD_OP_ADD: case TD_OP_SUB: case TD_OP_MUL: return el_size(c, r, sp);
    case TD_OP_DIV: case TD_OP_FLOORDIV:
      if (!inexact) return el_size(c, r, sp);
      {
        char s1[64], s2[64];
        td_diag *g = td_error(c->diags, sp, "%s %s %s is not a whole size for every value of the symbols",
                              td_dim_str(c->g, da, s1, sizeof s1), td_binop_str(op), td_dim_str(c->g, db, s2, sizeof s2));
        td_diag_help(c->diags, g, "sizes must stay integers; restructure the shape so the division is exact");
      }
      return el_err();
    case TD_OP_EQ: case TD_OP_NE:
      if (da == db) return el_bool(op == TD_OP_EQ, sp);
      err_symbolic_branch(c, sp, sym_name(c, a->k == V_SIZE ? a->dim : b->dim));
      return el_err();
    default:
      err_symbolic_branch(c, sp, sym_name(c, a->k == V_SIZE ? a->dim : b->dim));
      return el_err();
    }
  }
  int fl = a->k == V_FLOAT || b->k == V_FLOAT;
  if (op == TD_OP_AND || op == TD_OP_OR) {
    if (a->k != V_BOOL || b->k != V_BOOL) {
      td_error(c->diags, sp, "`%s` needs bools, found %s and %s", td_binop_str(op), el_kind_name(a), el_kind_name(b));
      return el_err();
    }
    return el_bool(op == TD_OP_AND ? (a->i && b->i) : (a->i || b->i), sp);
  }
  double x = num_f(a), y = num_f(b);
  int64_t i = a->i, j = b->i;
  switch (op) {
  case TD_OP_EQ: return el_bool(fl ? x == y : i == j, sp);
  case TD_OP_NE: return el_bool(fl ? x != y : i != j, sp);
  case TD_OP_LT: return el_bool(fl ? x < y : i < j, sp);
  case TD_OP_LE: return el_bool(fl ? x <= y : i <= j, sp);
  case TD_OP_GT: return el_bool(fl ? x > y : i > j, sp);
  case TD_OP_GE: return el_bool(fl ? x >= y : i >= j, sp);
  default: break;
  }
  if (a->k == V_BOOL || b->k == V_BOOL) {
    td_error(c->diags, sp, "arithmetic on bools");
    return el_err();
  }
  int64_t r;
  switch (op) {
  case TD_OP_ADD:
    if (fl) return el_float(x + y, sp);
    return __builtin_add_overflow(i, j, &r) ? int_overflow(c, op, i, j, sp) : el_int(r, sp);
  case TD_OP_SUB:
    if (fl) return el_float(x - y, sp);
    return __builtin_sub_overflow(i, j, &r) ? int_overflow(c, op, i, j, sp) : el_int(r, sp);
  case TD_OP_MUL:
    if (fl) return el_float(x * y, sp);
    return __builtin_mul_overflow(i, j, &r) ? int_overflow(c, op, i, j, sp) : el_int(r, sp);
  case TD_OP_DIV:
    if (!fl && j != 0 && !(i == INT64_MIN && j == -1) && i % j == 0) return el_int(i / j, sp);
    if (y == 0) { td_error(c->diags, sp, "division by zero in a compile-time expression"); return el_err(); }
    return el_float(x / y, sp);
  case TD_OP_FLOORDIV:
    if (y == 0) { td_error(c->diags, sp, "division by zero in a compile-time expression"); return el_err(); }
    if (fl) return el_float(td_floordiv_f64(x, y), sp);
    if (i == INT64_MIN && j == -1) return int_overflow(c, op, i, j, sp);
    return el_int(td_floordiv_i64(i, j), sp);
  case TD_OP_MOD:
    if (fl) {
      if (y == 0) { td_error(c->diags, sp, "modulo by zero"); return el_err(); }
      return el_float(x - y * __builtin_floor(x / y), sp);
    }
    if (j == 0) { td_error(c->diags, sp, "modulo by zero"); return el_err(); }
    if (i == INT64_MIN && j == -1) return int_overflow(c, op, i, j, sp); /* C's % would trap */
    r = i % j;
    if (r && ((r < 0) != (j < 0))) r += j;
    return el_int(r, sp);
  case TD_OP_POW:
    if (!fl && j >= 0) { /* exact; |i| >= 2 overflows within 63 steps */
      if (i == 0 || i == 1) return el_int(j == 0 ? 1 : i, sp);
      if (i == -1) return el_int(j & 1 ? -1 : 1, sp);
      r = 1;
      for (int64_t k = 0; k < j; k++)
        if (__builtin_mul_overflow(r, i, &r)) return int_overflow(c, op, i, j, sp);
      return el_int(r, sp);
    }
    return el_float(__builtin_pow(x, y), sp);
  default:
    td_error(c->diags, sp, "operator %s does not apply to numbers", td_binop_str(op));
    return el_err();
  }
}

/* ---- statements and blocks ---- */


/* Binds NAME to v, checking it against an optional type annotation. */

static void assign(el_ctx *c, el_scope *s, const td_ast *st, td_value v) {
  td_value *slot = el_lookup(s, st->name);
  if (!slot) {
    td_diag *g = td_error(c->diags, st->span, "assignment to '%s', which is not defined", st->name);
    td_diag_help(c->diags, g, "introduce it with let: let %s = ...", st->name);
    return;
  }
  if (slot->k == V_MODELDEF || slot->k == V_FUNC || slot->k == V_MODULE || slot->k == V_BUILTIN) {
    td_error(c->diags, st->span, "'%s' is %s and cannot be re-bound", st->name, el_kind_name(slot));
    return;
  }
  *slot = v;
}

static void let_tuple(el_ctx *c, el_scope *s, const td_ast *st, td_value v) {
  if (v.k == V_ERR) {
    for (int i = 0; i < st->n; i++) el_bind(c, s, st->list[i]->name, el_err());
    return;
  }
  if ((v.k != V_TUPLE && v.k != V_LIST) || v.n != st->n) {
    td_error(c->diags, st->span, "cannot unpack %s into %d names",
             v.k == V_TUPLE ? td_arena_printf(c->arena, "a tuple of %d values", v.n) : el_kind_name(&v), st->n);
    for (int i = 0; i < st->n; i++) el_bind(c, s, st->list[i]->name, el_err());
    return;
  }
  for (int i = 0; i < st->n; i++) el_bind(c, s, st->list[i]->name, v.items[i]);
}

/* The names a for loop's body carries from one iteration to the next: the
 * assignments (at any depth of its blocks) to names of the enclosing scope
 * s, at most max of them, each once. */
static int carried_names(const td_ast *b, el_scope *s, const char **names, int n, int max) {
  if (!b) return n;
  if (b->kind == TD_A_ASSIGN && el_lookup(s, b->name)) {
    for (int i = 0; i < n; i++)
      if (!strcmp(names[i], b->name)) return n;
    if (n < max) names[n++] = b->name;
    return n;
  }
  if (b->kind == TD_A_BLOCK || b->kind == TD_A_IF || b->kind == TD_A_FOR) {
    for (int i = 0; b->kind == TD_A_BLOCK && i < b->n; i++) n = carried_names(b->list[i], s, names, n, max);
    if (b->kind != TD_A_BLOCK) {
      n = carried_names(b->b, s, names, n, max);
      n = carried_names(b->c, s, names, n, max);
    }
  }
  return n;
}

/* Does expression e read any of names[0..n)? */
static int mentions(const td_ast *e, const char **names, int n) {
  if (!e) return 0;
  if (e->kind == TD_A_NAME)
    for (int i = 0; i < n; i++)
      if (!strcmp(e->name, names[i])) return 1;
  if (mentions(e->a, names, n) || mentions(e->b, names, n) || mentions(e->c, names, n)) return 1;
  for (int i = 0; i < e->n; i++)
    if (mentions(e->list[i], names, n)) return 1;
  return 0;
}

/* Is every assignment to a carried name in b an accumulation, x = x + e or
 * x = x - e with e reading no carried name (a sum over the steps: it
 * vectorises)? */
static int only_sums(const td_ast *b, const char **names, int n) {
  if (!b) return 1;
  if (b->kind == TD_A_ASSIGN) {
    const td_ast *v = b->b;
    int carried = 0;
    for (int i = 0; i < n; i++) carried |= !strcmp(b->name, names[i]);
    if (!carried) return 1;
    if (!v || v->kind != TD_A_BINARY || (v->op != TD_OP_ADD && v->op != TD_OP_SUB)) return 0;
    const td_ast *self = v->a, *term = v->b;
    if (v->op == TD_OP_ADD && term && term->kind == TD_A_NAME && !strcmp(term->name, b->name)) {
      self = v->b;
      term = v->a;
    }
    return self && self->kind == TD_A_NAME && !strcmp(self->name, b->name) && !mentions(term, names, n);
  }
  if (b->kind == TD_A_BLOCK)
    for (int i = 0; i < b->n; i++)
      if (!only_sums(b->list[i], names, n)) return 0;
  if (b->kind == TD_A_IF || b->kind == TD_A_FOR) return only_sums(b->b, names, n) && only_sums(b->c, names, n);
  return 1;
}

/* Help for a loop that carries values from step to step: the loop written
 * as a fold, which stays one loop in the graph for every trip count.  The
 * loop runs count times (a size bound at call time, or a number too large
 * to unroll), or over the rows of the tensor whose source is xs (count
 * NULL).  -1 (no help given) when the body carries nothing or only sums
 * terms that do not depend on what it carries. */
static int help_recurrence(el_ctx *c, el_scope *s, td_diag *g, const td_ast *st, const char *count,
                           const char *xs) {
  const char *names[8];
  int n = carried_names(st->b, s, names, 0, 8);
  if (!n || only_sums(st->b, names, n)) return -1;   /* nothing carried, or a sum: vectorise */
  const char *text = td_span_text(c->diags, st->b->span);   /* the block, with or without its braces */
  int len = (int)strlen(text);
  if (len && text[0] == '{') { text++; len--; }
  if (len && text[len - 1] == '}') len--;
  while (len && (*text == ' ' || *text == '\n' || *text == '\t')) { text++; len--; }
  while (len && (text[len - 1] == ' ' || text[len - 1] == '\n' || text[len - 1] == '\t' || text[len - 1] == ';')) len--;
  if (!len) return -1;
  td_strbuf carry = {0}, unpack = {0};
  for (int i = 0; i < n; i++) td_sb_printf(&carry, "%s%s", i ? ", " : "", names[i]);
  if (!carry.s) return -1;
  const char *cv = n == 1 ? carry.s : td_arena_printf(c->arena, "(%s)", carry.s);
  if (n > 1) td_sb_printf(&unpack, " let %s = carry;", cv);
  const char *open = text - 1;
  int literal = count && count[0] >= '0' && count[0] <= '9';
  const char *every = !count ? td_arena_printf(c->arena, "for every length of %s", xs)
                      : literal ? td_arena_printf(c->arena, "compiled once, not %s times", count)
                                : td_arena_printf(c->arena, "for every %s", count);
  const char *source = count ? td_arena_printf(c->arena, "length = %s", count) : xs;
  if (!every || !source) {
    td_free(carry.s);
    td_free(unpack.s);
    return -1;
  }
  td_diag_help(c->diags, g, "the loop carries %s from step to step (a recurrence): a scan runs it as one loop "
               "in the graph, %s:\n  fn step(%s, %s) {%s %.*s; %s }\n  %s%s = fold(step, %s, %s)\n"
               "(step is a top-level fn; pass the other values it reads with args = (...))",
               carry.s, every, n == 1 ? carry.s : "carry", st->name, unpack.s ? unpack.s : "", len, open + 1, cv,
               n == 1 ? "" : "let ", cv, cv, source);
  td_free(carry.s);
  td_free(unpack.s);
  return 0;
}

/* A compile-time range for `for`/comprehensions (st: the for statement, or
 * NULL); teaching errors otherwise. */
static int eval_range(el_ctx *c, el_scope *s, const td_ast *it, int64_t *lo, int64_t *hi,
                      td_value **items, int *n_items, const td_ast *st) {
  *items = NULL;
  if (it->kind == TD_A_RANGE) {
    td_value a = el_eval(c, s, it->a), b = el_eval(c, s, it->b);
    if (a.k == V_ERR || b.k == V_ERR) return -1;
    const td_value *bad = a.k == V_INT ? &b : &a;
    if (a.k == V_INT && b.k == V_INT) { *lo = a.i; *hi = b.i; return 0; }
    if (bad->k == V_SIZE) {
      td_diag *g = td_error(c->diags, bad->span, "this loop runs %s times, and %s is bound at call time: "
                            "a loop whose trip count depends on runtime values cannot be unrolled into one graph",
                            sym_name(c, bad->dim), sym_name(c, bad->dim));
      if (!st || help_recurrence(c, s, g, st, sym_name(c, bad->dim), NULL))
        td_diag_help(c->diags, g, "vectorise: operate on the whole axis at once (reductions, matmul, "
                     "broadcasting), or make the count a model parameter");
    } else if (bad->k == V_TENSOR) {
      td_diag *g = td_error(c->diags, bad->span, "a loop bound is a tensor: tensors never leave the graph, "
                            "so a loop over runtime values cannot be unrolled into one graph");
      td_diag_help(c->diags, g, "vectorise: operate on the whole tensor at once instead of element by element");
    } else {
      td_error(c->diags, bad->span, "a range bound must be an integer, found %s", el_kind_name(bad));
    }
    return -1;
  }
  td_value v = el_eval(c, s, it);
  if (v.k == V_ERR) return -1;
  if (v.k == V_LIST || v.k == V_TUPLE) { *items = v.items; *n_items = v.n; return 0; }
  if (v.k == V_TENSOR) {
    const char *src = td_span_text(c->diags, it->span);
    td_diag *g = td_error(c->diags, it->span, "a loop over the values of a tensor: its values are known only when "
                          "the graph runs, so the loop cannot be unrolled into one graph");
    const char *names[8];
    int n = st ? carried_names(st->b, s, names, 0, 8) : 0;
    if (!st || help_recurrence(c, s, g, st, NULL, src))
      td_diag_help(c->diags, g, "vectorise: apply the operation to the whole tensor at once,\n"
                   "e.g. instead of adding each %s of %s in turn, write %s + sum(%s%s)",
                   st ? st->name : "row", src, n ? names[0] : "x", src, el_node(c, &v)->rank > 1 ? ", axis = 0" : "");
    return -1;
  }
  td_diag *g = td_error(c->diags, it->span, "cannot loop over %s", el_kind_name(&v));
  td_diag_help(c->diags, g, "loop over a compile-time range lo..hi or a list");
  return -1;
}

static void exec_for(el_ctx *c, el_scope *s, const td_ast *st) {
  int64_t lo = 0, hi = 0;
  td_value *items;
  int n_items = 0;
  if (eval_range(c, s, st->a, &lo, &hi, &items, &n_items, st)) return;
  int64_t count = items ? n_items : (hi > lo ? hi - lo : 0);
  if (count > MAX_UNROLL) {
    td_diag *g = td_error(c->diags, st->a->span, "this loop unrolls %lld times (at most %d)", (long long)count, MAX_UNROLL);
    const char *n = td_arena_printf(c->arena, "%lld", (long long)count);
    if (items || lo != 0 || !n || help_recurrence(c, s, g, st, n, NULL))
      td_diag_help(c->diags, g, "a for loop is unrolled into the graph; vectorise the body instead");
    return;
  }
  for (int64_t i = 0; i < count && !c->ret; i++) {
    el_scope *body = el_scope_new(c, s);
    if (!body) return;
    el_bind(c, body, st->name, items ? items[i] : el_int(lo + i, st->span));
    el_eval_block(c, body, st->b);
    if (c->diags->n_errors > c->diags->max_errors) return;
  }
}

static void exec_stmt(el_ctx *c, el_scope *s, const td_ast *st) {
  switch (st->kind) {
  case TD_A_LET:
    if (st->name) {
      td_value v = el_eval(c, s, st->b);
      if (st->a && v.k != V_ERR) el_check_type(c, s, st->a, &v, st->name, 0);
      if (v.k == V_TENSOR && !c->g->nodes[v.node].name) c->g->nodes[v.node].name = st->name;
      el_bind(c, s, st->name, v);
    } else {
      let_tuple(c, s, st, el_eval(c, s, st->b));
    }
    break;
  case TD_A_ASSIGN: assign(c, s, st, el_eval(c, s, st->b)); break;
  case TD_A_EXPRSTMT: (void)el_eval(c, s, st->a); break;
  case TD_A_FOR: exec_for(c, s, st); break;
  case TD_A_WHILE: {
    td_diag *g = td_error(c->diags, st->span, "a while loop's trip count depends on runtime values, "
                          "so it cannot be part of one graph");
    td_diag_help(c->diags, g, "vectorise (operate on whole tensors), or loop a compile-time number of "
                 "times: for i in 0..n { ... }");
    break;
  }
  case TD_A_RETURN: {
    td_value *r = td_arena_alloc(c->arena, sizeof *r);
    if (!r) return;
    *r = st->a ? el_eval(c, s, st->a) : el_none(st->span);
    c->ret = r;
    break;
  }
  default: (void)el_eval(c, s, st); break;
  }
}

td_value el_eval_block(el_ctx *c, el_scope *s, const td_ast *b) {
  if (b->kind != TD_A_BLOCK) return el_eval(c, s, b);
  el_scope *inner = el_scope_new(c, s);
  if (!inner) return el_err();
  for (int i = 0; i < b->n && !c->ret; i++) exec_stmt(c, inner, b->list[i]);
  if (c->ret) return el_none(b->span);
  return b->a ? el_eval(c, inner, b->a) : el_none(b->span);
}

/* ---- if ---- */

static const td_ast *block_value(const td_ast *b) {
  if (b && b->kind == TD_A_BLOCK && b->n == 0 && b->a) return b->a;
  return NULL;
}

static td_value eval_if(el_ctx *c, el_scope *s, const td_ast *e) {
  td_value cond = el_eval(c, s, e->a);
  if (cond.k == V_ERR) return el_err();
  if (cond.k == V_TENSOR) {
    const td_ast *tv = block_value(e->b), *ev = block_value(e->c);
    td_diag *g = td_error(c->diags, e->a->span, "`if` on a tensor: a tensor's value is known only when the graph runs, "
                          "so the graph would split into one graph per branch");
    if (tv && ev)
      td_diag_help(c->diags, g, "choose with where(cond, a, b), which keeps one graph:\n    where(%s, %s, %s)",
                   td_span_text(c->diags, e->a->span), td_span_text(c->diags, tv->span),
                   td_span_text(c->diags, ev->span));
    else
      td_diag_help(c->diags, g, "choose with where(cond, a, b), which keeps one graph: compute both branches "
                   "as values and select elementwise");
    return el_err();
  }
  if (cond.k != V_BOOL) {
    td_error(c->diags, e->a->span, "an `if` condition must be a bool, found %s", el_kind_name(&cond));
    return el_err();
  }
  if (cond.i) return el_eval_block(c, s, e->b);
  if (e->c) return e->c->kind == TD_A_IF ? eval_if(c, s, e->c) : el_eval_block(c, s, e->c);
  return el_none(e->span);
}

/* ---- types ---- */

/* Matches one declared dim against an actual dim, binding new names. */
static int match_dim(el_ctx *c, el_scope *s, const td_ast *d, td_dim actual, int entry,
                     td_dim *out, el_scope *bind_in) {
  if (d->kind == TD_A_NAME) {
    td_value *v = el_lookup(s, d->name);
    if (!v) {
      td_dim dim = actual;
      if (entry) {
        int sym = td_sym_new(c->g, d->name);
        if (sym < 0) return -1;
        dim = td_dim_sym(c->g, sym);
      }
      el_bind(c, bind_in, d->name, el_size(c, dim, d->span));
      *out = dim;
      return 0;
    }
    if (el_size_arg(c, v, out, "a dimension")) return -1;
    return 0;
  }
  td_value v = el_eval(c, s, d);
  return el_size_arg(c, &v, out, "a dimension");
}

static int dtype_of_name(const char *n, td_dtype *dt) { return td_dtype_from_name(n, dt); }

static const char *type_text(el_ctx *c, const td_ast *ty) { return td_span_text(c->diags, ty->span); }

/* Checks v against type ty (binding dim names in s).  entry != 0 means v is
 * being created as an entry input: the caller passes a V_NONE and gets the
 * shape back through check_type's side effects (see make_input). */
int el_check_type(el_ctx *c, el_scope *s, const td_ast *ty, const td_value *v, const char *what, int entry) {
  (void)entry;
  if (v->k == V_ERR) return -1;
  if (ty->kind == TD_A_TTUPLE) {
    if (v->k != V_TUPLE || v->n != ty->n) {
      td_error(c->diags, v->span, "%s should be a tuple of %d values (%s), found %s", what, ty->n,
               type_text(c, ty), el_kind_name(v));
      return -1;
    }
    int bad = 0;
    for (int i = 0; i < ty->n; i++) bad |= el_check_type(c, s, ty->list[i], &v->items[i], what, 0);
    return bad ? -1 : 0;
  }
  if (ty->kind == TD_A_TNAME) {
    const char *n = ty->name;
    td_dtype dt;
    if (!strcmp(n, "int")) { if (v->k == V_INT || v->k == V_SIZE) return 0; }
    else if (!strcmp(n, "float")) { if (v->k == V_FLOAT || v->k == V_INT) return 0; }
    else if (!strcmp(n, "bool")) { if (v->k == V_BOOL) return 0; }
    else if (!dtype_of_name(n, &dt)) {
      if (v->k == V_TENSOR && el_node(c, v)->rank == 0 && el_node(c, v)->dtype == dt) return 0;
      if (v->k != V_TENSOR && v->k != V_ERR) return 0; /* numbers convert */
    } else {
      td_diag *g = td_error(c->diags, ty->span, "unknown type '%s'", n);
      td_diag_help(c->diags, g, "types are int, float, bool, or a tensor type like f32[N, 4]");
      return -1;
    }
    char t[256] = "";
    if (v->k == V_TENSOR) td_type_str(c->g, el_node(c, v)->dtype, el_node(c, v)->rank, el_node(c, v)->shape, t, sizeof t);
    td_error(c->diags, v->span, "%s should be %s, found %s%s%s", what, n, el_kind_name(v), *t ? " " : "", t);
    return -1;
  }
  /* tensor type */
  td_dtype dt;
  if (dtype_of_name(ty->name, &dt)) {
    td_diag *g = td_error(c->diags, ty->span, "unknown dtype '%s'", ty->name);
    td_diag_help(c->diags, g, "dtypes are f32, f64, i32, i64, bool, f16 and bf16");
    return -1;
  }
  if (v->k != V_TENSOR) {
    td_error(c->diags, v->span, "%s should be a tensor %s, found %s", what, type_text(c, ty), el_kind_name(v));
    return -1;
  }
  const td_node *n = el_node(c, v);
  char t1[256];
  td_type_str(c->g, n->dtype, n->rank, n->shape, t1, sizeof t1);
  if (n->dtype != dt) {
    td_diag *g = td_error(c->diags, v->span, "%s should be %s, found %s", what, type_text(c, ty), t1);
    td_diag_note(c->diags, g, ty->span, "the type is declared here");
    td_diag_help(c->diags, g, "convert explicitly with %s(...)", ty->name);
    return -1;
  }
  int ell = -1;
  for (int i = 0; i < ty->n; i++)
    if (ty->list[i]->kind == TD_A_ELLIPSIS) ell = i;
  int fixed = ell >= 0 ? ty->n - 1 : ty->n;
  if (n->rank < fixed || (ell < 0 && n->rank != fixed)) {
    td_diag *g = td_error(c->diags, v->span, "%s should have rank %s%d (%s), found %s", what,
                          ell >= 0 ? "at least " : "", fixed, type_text(c, ty), t1);
    td_diag_note(c->diags, g, n->span, "the shape %s comes from here", t1);
    return -1;
  }
  for (int i = 0; i < ty->n; i++) {
    if (i == ell) continue;
    int ax = (ell >= 0 && i > ell) ? n->rank - (ty->n - i) : i;
    td_dim want;
    if (match_dim(c, s, ty->list[i], n->shape[ax], 0, &want, s)) return -1;
    if (want != n->shape[ax]) {
      char d1[64], d2[64];
      td_diag *g = td_error(c->diags, v->span, "%s should be %s, found %s: dimension %d is %s, expected %s",
                            what, type_text(c, ty), t1, ax, td_dim_str(c->g, n->shape[ax], d1, sizeof d1),
                            td_dim_str(c->g, want, d2, sizeof d2));
      td_diag_note(c->diags, g, n->span, "the shape %s comes from here", t1);
      td_diag_note(c->diags, g, ty->list[i]->span, "the expected size comes from here");
      return -1;
    }
  }
  return 0;
}

/* Creates an INPUT node for an entry argument of tensor type ty. */
td_value el_make_input(el_ctx *c, el_scope *s, const td_ast *pd, int index) {
  const td_ast *ty = pd->a;
  if (!ty || (ty->kind != TD_A_TTENSOR && ty->kind != TD_A_TNAME)) {
    td_diag *g = td_error(c->diags, pd->span, "entry point argument '%s' needs a tensor type", pd->name);
    td_diag_help(c->diags, g, "declare its dtype and shape, e.g. %s: f32[N, 16]", pd->name);
    return el_err();
  }
  td_dtype dt;
  if (dtype_of_name(ty->name, &dt)) {
    td_diag *g = td_error(c->diags, ty->span, "entry point argument '%s' must be a tensor, not %s", pd->name, ty->name);
    td_diag_help(c->diags, g, "compile-time values (int, float, bool) belong to the model: model M(%s: %s)", pd->name, ty->name);
    return el_err();
  }
  td_dim shape[TD_MAX_RANK];
  int rank = ty->kind == TD_A_TTENSOR ? ty->n : 0;
  if (rank > TD_MAX_RANK) { td_error(c->diags, ty->span, "at most %d dimensions", TD_MAX_RANK); return el_err(); }
  for (int i = 0; i < rank; i++) {
    const td_ast *d = ty->list[i];
    if (d->kind == TD_A_ELLIPSIS) {
      td_diag *g = td_error(c->diags, d->span, "an entry point argument needs a fixed rank");
      td_diag_help(c->diags, g, "name each dimension, e.g. f32[B, T, 16]");
      return el_err();
    }
    if (match_dim(c, s, d, 0, 1, &shape[i], s)) return el_err();
  }
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i = index;
  int id = el_emit(c, TD_IR_INPUT, dt, rank, shape, NULL, 0, &at, pd->span);
  if (id < 0) return el_err();
  c->g->nodes[id].name = pd->name;
  return el_tensor(id, pd->span);
}

/* ---- calls ---- */


/* Binds call arguments to a parameter list (PARAMDECLs) in scope `into`,
 * evaluating defaults in `defenv`. */
int el_bind_args(el_ctx *c, const td_ast *decl, el_scope *into, el_scope *defenv,
                     td_value *args, const char **kw, int n, td_span sp, int skip_self) {
  int np = decl->n;
  td_value *vals = td_arena_alloc(c->arena, (size_t)(np + 1) * sizeof *vals);
  int *set = td_arena_alloc(c->arena, (size_t)(np + 1) * sizeof *set);
  if (!vals || !set) return -1;
  (void)skip_self;
  int pos = 0, bad = 0;
  for (int i = 0; i < n; i++) {
    if (!kw[i]) {
      if (pos >= np) {
        td_diag *g = td_error(c->diags, args[i].span, "too many arguments: '%s' takes %d", decl->name, np);
        td_diag_note(c->diags, g, decl->span, "'%s' is defined here", decl->name);
        return -1;
      }
      vals[pos] = args[i];
      set[pos++] = 1;
      continue;
    }
    int k = -1;
    for (int j = 0; j < np; j++)
      if (!strcmp(decl->list[j]->name, kw[i])) k = j;
    if (k < 0) {
      td_diag *g = td_error(c->diags, args[i].span, "'%s' has no parameter named '%s'", decl->name, kw[i]);
      td_diag_note(c->diags, g, decl->span, "'%s' is defined here", decl->name);
      bad = 1;
      continue;
    }
    if (set[k]) { td_error(c->diags, args[i].span, "parameter '%s' is given twice", kw[i]); bad = 1; continue; }
    vals[k] = args[i];
    set[k] = 1;
  }
  if (bad) return -1;
  for (int j = 0; j < np; j++) {
    const td_ast *pd = decl->list[j];
    if (!set[j]) {
      if (!pd->b) {
        td_diag *g = td_error(c->diags, sp, "missing argument '%s' in the call of '%s'", pd->name, decl->name);
        td_diag_note(c->diags, g, pd->span, "the parameter is declared here");
        bad = 1;
        continue;
      }
      vals[j] = el_eval(c, defenv, pd->b);
    }
    if (pd->a && el_check_type(c, into, pd->a, &vals[j],
                            td_arena_printf(c->arena, "argument '%s' of '%s'", pd->name, decl->name), 0))
      bad = 1;
    el_bind(c, into, pd->name, vals[j]);
  }
  return bad ? -1 : 0;
}

static td_value call_fn(el_ctx *c, const td_value *f, td_value *args, const char **kw, int n, td_span sp) {
  const td_ast *decl = f->def;
  if (c->depth >= MAX_DEPTH) {
    td_diag *g = td_error(c->diags, sp, "calls nest more than %d deep", MAX_DEPTH);
    td_diag_help(c->diags, g, "tdsl inlines every call into the graph, so recursion must end at compile time");
    return el_err();
  }
  el_scope *parent = f->inst ? f->inst->env : f->mod->globals;
  el_scope *s = el_scope_new(c, parent);
  if (!s) return el_err();
  if (el_bind_args(c, decl, s, parent, args, kw, n, sp, 0)) return el_err();
  c->depth++;
  td_value *saved = c->ret;
  c->ret = NULL;
  td_value r = el_eval_block(c, s, decl->b);
  if (c->ret) r = *c->ret;
  c->ret = saved;
  c->depth--;
  if (decl->a && r.k != V_ERR &&
      el_check_type(c, s, decl->a, &r, td_arena_printf(c->arena, "the result of '%s'", decl->name), 0))
    return el_err();
  return r;
}

td_value el_call_value(el_ctx *c, const td_value *callee, td_value *args,
                       const char **kw, int n, td_span sp, const td_ast *call) {
  for (int i = 0; i < n; i++)
    if (args[i].k == V_ERR) return el_err();
  switch (callee->k) {
  case V_ERR: return el_err();
  case V_BUILTIN: return el_builtin_call(c, (int)callee->i, args, kw, n, sp, call);
  case V_FUNC: return call_fn(c, callee, args, kw, n, sp);
  case V_GRADFN: return el_call_gradfn(c, callee, args, kw, n, sp);
  case V_MODELDEF: return el_instantiate(c, callee, args, kw, n, sp);
  case V_MODEL: {
    td_value *fw = el_lookup(callee->inst->env, "forward");
    if (!fw || fw->k != V_FUNC || fw->inst != callee->inst) {
      td_error(c->diags, sp, "model '%s' has no forward method to call", callee->inst->def->name);
      return el_err();
    }
    return call_fn(c, fw, args, kw, n, sp);
  }
  default:
    td_error(c->diags, sp, "%s cannot be called", el_kind_name(callee));
    return el_err();
  }
}

static td_value eval_call(el_ctx *c, el_scope *s, const td_ast *e) {
  /* x.item() and friends: the seed's host-sync mistake */
  if (e->a->kind == TD_A_FIELD) {
    const char *m = e->a->name;
    if (!strcmp(m, "item") || !strcmp(m, "tolist") || !strcmp(m, "numpy") || !strcmp(m, "cpu")) {
      td_value obj = el_eval(c, s, e->a->a);
      if (obj.k == V_ERR) return el_err();
      if (obj.k == V_TENSOR) {
        const char *src = td_span_text(c->diags, e->a->a->span);
        td_diag *g = td_error(c->diags, e->span, "tensors never leave the graph: .%s() would copy a value to the host "
                              "in the middle of the graph (a sync and a graph break in PyTorch)", m);
        td_diag_help(c->diags, g, "return the value from the entry point, e.g. (y, %s), "
                     "or print it: print(\"value\", %s) (printing never syncs)", src, src);
        return el_err();
      }
    }
  }
  /* the arguments are evaluated outside the member being declared: a model
   * instantiated in an argument (opt = AdamW(net, schedule = Cosine()))
   * must not take the member's state_dict prefix, which belongs to the
   * instance this call makes */
  const char *prefix = c->inst_prefix;
  c->inst_prefix = NULL;
  td_value callee = el_eval(c, s, e->a);
  int n = e->n;
  td_value *args = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *args);
  const char **kw = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *kw);
  if (!args || !kw) { c->inst_prefix = prefix; return el_err(); }
  int seen_kw = 0;
  for (int i = 0; i < n; i++) {
    const td_ast *a = e->list[i];
    if (a->kind == TD_A_KWARG) {
      kw[i] = a->name;
      args[i] = el_eval(c, s, a->a);
      seen_kw = 1;
    } else {
      if (seen_kw) {
        td_error(c->diags, a->span, "a positional argument follows a keyword argument");
        c->inst_prefix = prefix;
        return el_err();
      }
      kw[i] = NULL;
      args[i] = el_eval(c, s, a);
    }
  }
  c->inst_prefix = prefix;
  if (callee.k == V_ERR) return el_err();
  return el_call_value(c, &callee, args, kw, n, e->span, e);
}

/* ---- models ---- */

static const char *param_path(el_ctx *c, el_inst *in, const char *name) {
  return td_arena_printf(c->arena, "%s%s", in->prefix, name);
}

/* Evaluates `param name: T = init [if cond]` into a PARAM node. */
static void declare_param(el_ctx *c, el_inst *in, const td_ast *m) {
  if (m->c) {
    td_value cond = el_eval(c, in->env, m->c);
    if (cond.k == V_ERR) return;
    if (cond.k != V_BOOL) { td_error(c->diags, m->c->span, "a param's condition must be a compile-time bool"); return; }
    if (!cond.i) { el_bind(c, in->env, m->name, el_none(m->span)); return; }
  }
  const td_ast *ty = m->a;
  td_dtype dt;
  if (!ty || dtype_of_name(ty->name, &dt)) {
    td_error(c->diags, ty ? ty->span : m->span, "a param needs a tensor type like f32[out, in]");
    return;
  }
  td_dim shape[TD_MAX_RANK];
  int rank = ty->kind == TD_A_TTENSOR ? ty->n : 0;
  if (rank > TD_MAX_RANK) { td_error(c->diags, ty->span, "at most %d dimensions", TD_MAX_RANK); return; }
  for (int i = 0; i < rank; i++) {
    td_value v = el_eval(c, in->env, ty->list[i]);
    if (v.k == V_SIZE) {
      td_diag *g = td_error(c->diags, ty->list[i]->span, "a param's shape must be known when the model is built");
      td_diag_help(c->diags, g, "use literals or model parameters for weight shapes");
      return;
    }
    if (el_size_arg(c, &v, &shape[i], "a dimension")) return;
  }
  /* the initialiser: a call of zeros/ones/full/uniform/normal */
  td_attr at;
  memset(&at, 0, sizeof at);
  const td_ast *init = m->b;
  const char *fn = init && init->kind == TD_A_CALL && init->a->kind == TD_A_NAME ? init->a->name : NULL;
  static const char *inits[] = {"zeros", "ones", "full", "uniform", "normal"};
  static const int nargs[] = {0, 0, 1, 2, 2};
  int k = -1;
  for (int i = 0; fn && i < 5; i++)
    if (!strcmp(fn, inits[i])) k = i;
  if (k < 0 || init->n != nargs[k]) {
    td_diag *g = td_error(c->diags, init ? init->span : m->span, "a param's initialiser must be zeros(), ones(), full(v), "
                          "uniform(lo, hi) or normal(mean, std)");
    td_diag_help(c->diags, g, "e.g. param weight: f32[out, in] = uniform(-0.1, 0.1)");
    return;
  }
  double a[2] = {0, 0};
  for (int i = 0; i < nargs[k]; i++) {
    td_value v = el_eval(c, in->env, init->list[i]);
    if (v.k == V_ERR) return;
    if (!is_num(&v) || v.k == V_SIZE) {
      if (v.k == V_TENSOR) el_err_host_read(c, &v, "an initialiser argument");
      else td_error(c->diags, v.span, "initialiser arguments must be numbers, found %s", el_kind_name(&v));
      return;
    }
    a[i] = num_f(&v);
  }
  at.init = (td_init_kind)k;
  if (k == 1) a[0] = 1;
  at.init_a = a[0];
  at.init_b = a[1];
  at.stream = in->salt;
  int id = el_emit(c, TD_IR_PARAM, dt, rank, shape, NULL, 0, &at, m->span);
  if (id < 0) return;
  c->g->nodes[id].name = param_path(c, in, m->name);
  c->g->nodes[id].attr.i = c->g->n_params - 1;
  el_bind(c, in->env, m->name, el_tensor(id, m->span));
}

td_value el_instantiate(el_ctx *c, const td_value *def, td_value *args, const char **kw, int n, td_span sp) {
  const td_ast *d = def->def;
  if (c->depth >= MAX_DEPTH) {
    td_error(c->diags, sp, "models nest more than %d deep", MAX_DEPTH);
    return el_err();
  }
  el_inst *in = td_arena_alloc(c->arena, sizeof *in);
  if (!in) return el_err();
  in->def = d;
  in->mod = def->mod;
  in->prefix = c->inst_prefix ? c->inst_prefix : "";
  in->salt = c->inst_prefix ? c->cur_salt : c->n_roots++;
  c->inst_prefix = NULL;
  uint64_t saved_salt = c->cur_salt;
  c->cur_salt = in->salt;
  in->env = el_scope_new(c, def->mod->globals);
  if (!in->env) return el_err();
  if (el_bind_args(c, d, in->env, def->mod->globals, args, kw, n, sp, 0)) return el_err();
  c->n_insts++;
  c->depth++;
  const td_ast *members = d->a;
  /* methods first, so members can refer to each other in any order */
  for (int i = 0; members && i < members->n; i++) {
    const td_ast *m = members->list[i];
    if (m->kind != TD_A_FN) continue;
    td_value f = el_none(m->span);
    f.k = V_FUNC;
    f.def = m;
    f.mod = def->mod;
    f.inst = in;
    el_bind(c, in->env, m->name, f);
  }
  for (int i = 0; members && i < members->n; i++) {
    const td_ast *m = members->list[i];
    if (m->kind == TD_A_PARAM) declare_param(c, in, m);
    else if (m->kind == TD_A_MEMBER) {
      const char *saved = c->inst_prefix;
      c->inst_prefix = td_arena_printf(c->arena, "%s%s.", in->prefix, m->name);
      td_value v = el_eval(c, in->env, m->a);
      c->inst_prefix = saved;
      el_bind(c, in->env, m->name, v);
    }
  }
  c->depth--;
  c->cur_salt = saved_salt;
  td_value v = el_none(sp);
  v.k = V_MODEL;
  v.inst = in;
  return v;
}

/* ---- expressions ---- */

static td_value eval_field(el_ctx *c, el_scope *s, const td_ast *e) {
  td_value o = el_eval(c, s, e->a);
  const char *f = e->name;
  switch (o.k) {
  case V_ERR: return el_err();
  case V_MODULE: {
    td_value *v = el_lookup(o.mod->globals, f);
    if (v && v->k != V_MODULE) return *v;
    td_diag *g = td_error(c->diags, e->span, "module '%s' has no item '%s'", o.mod->name, f);
    const char *best = suggest(o.mod->globals, f);
    if (best) td_diag_help(c->diags, g, "did you mean '%s.%s'?", o.mod->name, best);
    return el_err();
  }
  case V_MODEL: {
    for (int i = 0; i < o.inst->env->n; i++)
      if (!strcmp(o.inst->env->b[i].name, f)) return o.inst->env->b[i].v;
    td_diag *g = td_error(c->diags, e->span, "model '%s' has no member '%s'", o.inst->def->name, f);
    const char *best = suggest(o.inst->env, f);
    if (best) td_diag_help(c->diags, g, "did you mean '%s'?", best);
    return el_err();
  }
  case V_TENSOR: {
    const td_node *n = el_node(c, &o);
    if (!strcmp(f, "T")) {
      if (n->rank < 2) return o;
      int perm[TD_MAX_RANK];
      for (int i = 0; i < n->rank; i++) perm[i] = i;
      perm[n->rank - 1] = n->rank - 2;
      perm[n->rank - 2] = n->rank - 1;
      return el_permute(c, &o, perm, e->span);
    }
    if (!strcmp(f, "shape")) {
      td_value l = el_none(e->span);
      l.k = V_LIST;
      l.n = n->rank;
      l.items = td_arena_alloc(c->arena, (size_t)(n->rank + 1) * sizeof *l.items);
      if (!l.items) return el_err();
      for (int i = 0; i < n->rank; i++) l.items[i] = el_size(c, n->shape[i], e->span);
      return l;
    }
    if (!strcmp(f, "ndim")) return el_int(n->rank, e->span);
    td_diag *g = td_error(c->diags, e->span, "a tensor has no field '%s'", f);
    td_diag_help(c->diags, g, "tensors have .T, .shape and .ndim; operations are functions: %s(x)", f);
    return el_err();
  }
  default:
    td_error(c->diags, e->span, "%s has no field '%s'", el_kind_name(&o), f);
    return el_err();
  }
}

static td_value eval_seq(el_ctx *c, el_scope *s, const td_ast *e, vkind k) {
  td_value v = el_none(e->span);
  v.k = k;
  v.n = e->n;
  v.items = td_arena_alloc(c->arena, (size_t)(e->n + 1) * sizeof *v.items);
  if (!v.items) return el_err();
  for (int i = 0; i < e->n; i++) {
    v.items[i] = el_eval(c, s, e->list[i]);
    if (v.items[i].k == V_ERR) return el_err();
  }
  return v;
}

static td_value eval_listcomp(el_ctx *c, el_scope *s, const td_ast *e) {
  int64_t lo = 0, hi = 0;
  td_value *items;
  int n_items = 0;
  if (eval_range(c, s, e->b, &lo, &hi, &items, &n_items, NULL)) return el_err();
  int64_t count = items ? n_items : (hi > lo ? hi - lo : 0);
  if (count > MAX_UNROLL) { td_error(c->diags, e->b->span, "this comprehension has %lld elements (at most %d)", (long long)count, MAX_UNROLL); return el_err(); }
  td_value v = el_none(e->span);
  v.k = V_LIST;
  v.n = (int)count;
  v.items = td_arena_alloc(c->arena, (size_t)(count + 1) * sizeof *v.items);
  if (!v.items) return el_err();
  const char *prefix = c->inst_prefix;
  for (int64_t i = 0; i < count; i++) {
    el_scope *sc = el_scope_new(c, s);
    if (!sc) return el_err();
    el_bind(c, sc, e->name, items ? items[i] : el_int(lo + i, e->span));
    if (prefix) c->inst_prefix = td_arena_printf(c->arena, "%s%lld.", prefix, (long long)i);
    v.items[i] = el_eval(c, sc, e->a);
    if (v.items[i].k == V_ERR) { c->inst_prefix = prefix; return el_err(); }
  }
  c->inst_prefix = prefix;
  return v;
}

td_value el_apply_index(el_ctx *c, int in, const int *kind, const td_value *lo,
                        const td_value *hi, const td_value *step, td_span sp);

/* x[items]: integers select (and drop the axis), slices keep it, `...`
 * stands for the axes not named.  A tensor index is a teaching error. */
static td_value index_tensor(el_ctx *c, el_scope *s, const td_value *x, const td_ast *e) {
  const td_node *n = el_node(c, x);
  const int rank = n->rank; /* n may move as items emit nodes */
  int kind[TD_MAX_RANK] = {0};
  td_value lo[TD_MAX_RANK], hi[TD_MAX_RANK], st[TD_MAX_RANK];
  for (int i = 0; i < TD_MAX_RANK; i++) lo[i] = hi[i] = st[i] = el_none(e->span);
  int n_items = 0, ell = -1;
  for (int i = 0; i < e->n; i++) {
    if (e->list[i]->kind == TD_A_ELLIPSIS) {
      if (ell >= 0) { td_error(c->diags, e->list[i]->span, "only one ... per index"); return el_err(); }
      ell = i;
    } else n_items++;
  }
  if (n_items > rank) {
    char t[256];
    td_error(c->diags, e->span, "too many indices (%d) for a tensor %s", n_items,
             td_type_str(c->g, n->dtype, n->rank, n->shape, t, sizeof t));
    return el_err();
  }
  int ax = 0;
  for (int i = 0; i < e->n; i++) {
    const td_ast *it = e->list[i];
    if (it->kind == TD_A_ELLIPSIS) { ax += rank - n_items; continue; }
    if (it->kind == TD_A_SLICE) {
      kind[ax] = 2;
      if (it->a) lo[ax] = el_eval(c, s, it->a);
      if (it->b) hi[ax] = el_eval(c, s, it->b);
      if (it->c) st[ax] = el_eval(c, s, it->c);
      if (lo[ax].k == V_ERR || hi[ax].k == V_ERR || st[ax].k == V_ERR) return el_err();
    } else {
      kind[ax] = 1;
      lo[ax] = el_eval(c, s, it);
      if (lo[ax].k == V_ERR) return el_err();
      if (lo[ax].k == V_TENSOR) {
        const char *xs = td_span_text(c->diags, e->a->span), *is = td_span_text(c->diags, it->span);
        if (el_node(c, &lo[ax])->dtype == TD_BOOL) {   /* a mask: how many it keeps is known only at run time */
          td_diag *g = td_error(c->diags, it->span, "indexing with a boolean mask: the number of elements it selects "
                                "depends on the values, so the result's shape would not be known when the graph is built");
          td_diag_help(c->diags, g, "keep the shape and zero what the mask drops: where(%s, %s, 0)\n"
                       "or reduce over the selected elements: sum(where(%s, %s, 0)), or count them: sum(i64(%s))",
                       is, xs, is, xs, is);
          return el_err();
        }
        td_diag *g = td_error(c->diags, it->span, "indexing with a tensor: index positions must be known when the graph is built");
        td_diag_help(c->diags, g, "to select with runtime indices use take (a gather inside the graph):\n    take(%s, %s, axis = %d)",
                     xs, is, ax);
        return el_err();
      }
    }
    ax++;
  }
  /* re-read n: evaluating the items may have grown the node array */
  return el_apply_index(c, x->node, kind, lo, hi, st, e->span);
}

/* Indexing of lists/tuples (compile time) and tensors. */
static td_value eval_index(el_ctx *c, el_scope *s, const td_ast *e) {
  td_value o = el_eval(c, s, e->a);
  if (o.k == V_ERR) return el_err();
  if (o.k == V_LIST || o.k == V_TUPLE) {
    if (e->n != 1 || e->list[0]->kind == TD_A_SLICE || e->list[0]->kind == TD_A_ELLIPSIS) {
      td_error(c->diags, e->span, "a list takes one integer index");
      return el_err();
    }
    td_value i = el_eval(c, s, e->list[0]);
    if (i.k == V_ERR) return el_err();
    if (i.k != V_INT) {
      if (i.k == V_TENSOR) el_err_host_read(c, &i, "a list index");
      else td_error(c->diags, i.span, "a list index must be an integer, found %s", el_kind_name(&i));
      return el_err();
    }
    int64_t k = i.i < 0 ? i.i + o.n : i.i;
    if (k < 0 || k >= o.n) {
      td_error(c->diags, i.span, "index %lld is out of range for %s of %d elements", (long long)i.i, el_kind_name(&o), o.n);
      return el_err();
    }
    return o.items[k];
  }
  if (o.k != V_TENSOR) {
    td_error(c->diags, e->span, "%s cannot be indexed", el_kind_name(&o));
    return el_err();
  }
  return index_tensor(c, s, &o, e);
}

static td_value eval_unary(el_ctx *c, el_scope *s, const td_ast *e) {
  td_value a = el_eval(c, s, e->a);
  if (a.k == V_ERR) return el_err();
  if (e->op == TD_OP_POS) return a;
  if (a.k == V_TENSOR) return el_unary_op(c, e->op == TD_OP_NOT ? TD_IR_NOT : TD_IR_NEG, &a, e->span);
  if (e->op == TD_OP_NOT) {
    if (a.k != V_BOOL) { td_error(c->diags, e->span, "`not` needs a bool, found %s", el_kind_name(&a)); return el_err(); }
    return el_bool(!a.i, e->span);
  }
  td_value zero = el_int(0, e->span);
  if (a.k == V_INT && a.i == INT64_MIN) {
    td_diag *g = td_error(c->diags, e->span, "integer overflow in a compile-time expression: "
                          "-(-9223372036854775808) does not fit in 64 bits");
    td_diag_help(c->diags, g, "compile-time integers are 64-bit (-2^63 .. 2^63 - 1)");
    return el_err();
  }
  if (a.k == V_INT || a.k == V_FLOAT || a.k == V_SIZE) return const_arith(c, TD_OP_SUB, &zero, &a, e->span);
  td_error(c->diags, e->span, "cannot negate %s", el_kind_name(&a));
  return el_err();
}

static td_value eval_binary(el_ctx *c, el_scope *s, const td_ast *e) {
  td_value a = el_eval(c, s, e->a);
  /* `and`/`or` on compile-time bools short-circuit, like Python */
  if ((e->op == TD_OP_AND || e->op == TD_OP_OR) && a.k == V_BOOL) {
    if (e->op == TD_OP_AND && !a.i) return el_bool(0, e->span);
    if (e->op == TD_OP_OR && a.i) return el_bool(1, e->span);
  }
  td_value b = el_eval(c, s, e->b);
  if (a.k == V_ERR || b.k == V_ERR) return el_err();
  if (a.k == V_TENSOR || b.k == V_TENSOR) {
    if ((e->op == TD_OP_AND || e->op == TD_OP_OR)) {
      const td_value *t = a.k == V_TENSOR ? &a : &b;
      if (el_node(c, t)->dtype != TD_BOOL) {
        td_diag *g = td_error(c->diags, e->span, "`%s` needs bool tensors, found %s", td_binop_str(e->op),
                              td_dtype_name(el_node(c, t)->dtype));
        td_diag_help(c->diags, g, "compare first, e.g. (x > 0) %s (x < 1)", td_binop_str(e->op));
        return el_err();
      }
    }
    return el_binary(c, e->op, &a, &b, e->span);
  }
  if (is_num(&a) && is_num(&b)) return const_arith(c, e->op, &a, &b, e->span);
  if (e->op == TD_OP_ADD && (a.k == V_LIST || a.k == V_TUPLE) && a.k == b.k) {
    td_value v = a;
    v.n = a.n + b.n;
    v.items = td_arena_alloc(c->arena, (size_t)(v.n + 1) * sizeof *v.items);
    if (!v.items) return el_err();
    memcpy(v.items, a.items, (size_t)a.n * sizeof *v.items);
    memcpy(v.items + a.n, b.items, (size_t)b.n * sizeof *v.items);
    v.span = e->span;
    return v;
  }
  if ((e->op == TD_OP_EQ || e->op == TD_OP_NE) && a.k == V_STR && b.k == V_STR)
    return el_bool((strcmp(a.s, b.s) == 0) == (e->op == TD_OP_EQ), e->span);
  td_error(c->diags, e->span, "operator %s does not apply to %s and %s", td_binop_str(e->op),
           el_kind_name(&a), el_kind_name(&b));
  return el_err();
}

td_value el_eval(el_ctx *c, el_scope *s, const td_ast *e) {
  if (!e) return el_err();
  if (c->diags->max_errors > 0 && c->diags->n_errors > c->diags->max_errors) return el_err();
  if (++c->steps > c->step_limit) {
    if (c->steps == c->step_limit + 1) {
      td_diag *g = td_error(c->diags, e->span, "compile-time evaluation did not finish within %ld steps", c->step_limit);
      td_diag_help(c->diags, g, "tdsl unrolls loops and inlines every call while building the graph; "
                   "a loop or recursion this large should be vectorised");
    }
    return el_err();
  }
  switch (e->kind) {
  case TD_A_INT: return el_int(e->ival, e->span);
  case TD_A_FLOAT: return el_float(e->fval, e->span);
  case TD_A_BOOL: return el_bool((int)e->ival, e->span);
  case TD_A_STR: {
    td_value v = el_none(e->span);
    v.k = V_STR;
    v.s = e->name;
    return v;
  }
  case TD_A_NAME: {
    td_value *v = el_lookup(s, e->name);
    if (v) {
      td_value r = *v;
      r.span = e->span; /* the value is where it is used: errors point at the use */
      return r;
    }
    int bi = el_builtin_find(e->name);
    if (bi >= 0) {
      td_value b = el_none(e->span);
      b.k = V_BUILTIN;
      b.i = bi;
      return b;
    }
    return unknown_name(c, s, e);
  }
  case TD_A_FIELD: return eval_field(c, s, e);
  case TD_A_CALL: return eval_call(c, s, e);
  case TD_A_INDEX: return eval_index(c, s, e);
  case TD_A_UNARY: return eval_unary(c, s, e);
  case TD_A_BINARY: return eval_binary(c, s, e);
  case TD_A_LIST: return eval_seq(c, s, e, V_LIST);
  case TD_A_TUPLE: return eval_seq(c, s, e, V_TUPLE);
  case TD_A_LISTCOMP: return eval_listcomp(c, s, e);
  case TD_A_IF: return eval_if(c, s, e);
  case TD_A_BLOCK: return el_eval_block(c, s, e);
  case TD_A_RANGE: {
    td_diag *g = td_error(c->diags, e->span, "a range lo..hi can only be looped over");
    td_diag_help(c->diags, g, "for a tensor of consecutive values use arange(lo, hi)");
    return el_err();
  }
  case TD_A_SLICE: case TD_A_ELLIPSIS:
    td_error(c->diags, e->span, "a slice can only appear inside [ ] after a tensor");
    return el_err();
  case TD_A_KWARG:
    td_error(c->diags, e->span, "a keyword argument outside a call");
    return el_err();
  default:
    exec_stmt(c, s, e);
    return el_none(e->span);
  }
}


/* build_common.c - what `tdsl build` does the same for CPU and CUDA
 * artifacts (build_common.h): the builder's entries and parameters, the
 * common parts of the two descriptors, the pieces of the libgccjit context
 * holding the C API and the header's shared text.  How the outputs reach
 * the output directory is build_dir.c's.
 */
#include "compiler/build_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/checks.h"
#include "runtime/mem.h"
#include "artifact/artifact_common.h"

_Static_assert(TD_MONO_MAX == TDA_MONO_MAX, "the descriptor's terms hold TD_MONO_MAX symbols");

/* ---- setup and outputs ---- */

int tdb_begin(tdb_builder *b, const td_build_opts *o, td_err *err, tdb_outs *out) {
  memset(b, 0, sizeof *b);
  memset(out, 0, sizeof *out);
  b->o = o;
  b->err = err;
  err->msg[0] = 0;
  if (mkdir(o->dir, 0755) == 0) b->made_dir = 1;
  else if (errno != EEXIST) return td_err_set(err, "cannot create %s: %s", o->dir, strerror(errno));
  if (access(o->rt_lib, R_OK)) return td_err_set(err, "the artifact runtime %s is missing (is tdsl installed?)", o->rt_lib);
  if (!(b->a = td_arena_new())) return td_err_set(err, "out of memory");
  return tdb_dir_begin(b, out);
}

void tdb_end(tdb_builder *b, const tdb_outs *out) {
  tdb_dir_end(out);   /* after a failure: the staging directory; gone after a commit */
  if (b->made_dir) rmdir(b->o->dir);   /* fails, as it should, unless it is empty */
  td_free(b->w);
  td_free(b->p);
  td_free(b->data);
  td_arena_free(b->a);
}

/* ---- entries and parameters ---- */

/* C names: the method alone when no two entries share it, else model_method. */
static void name_entries(tdb_builder *b) {
  for (int i = 0; i < b->n_e; i++) {
    const char *dot = strrchr(b->e[i].name, '.'), *m = dot ? dot + 1 : b->e[i].name;
    int dup = 0;
    for (int j = 0; j < b->n_e; j++) {
      const char *d2 = strrchr(b->e[j].name, '.');
      dup |= j != i && !strcmp(d2 ? d2 + 1 : b->e[j].name, m);
    }
    snprintf(b->e[i].cname, sizeof b->e[i].cname, "%s_%s", b->o->prefix, dup ? b->e[i].name : m);
    for (char *s = b->e[i].cname; *s; s++)
      if (*s == '.') *s = '_';
      else if (*s >= 'A' && *s <= 'Z') *s = (char)(*s + 32);
  }
}

/* Whether the build makes entry point `name` (every one without --entry). */
static int wanted(const td_build_opts *o, const char *name) {
  if (o->n_entries <= 0) return 1;
  for (int k = 0; k < o->n_entries; k++)
    if (!strcmp(o->entries[k], name)) return 1;
  return 0;
}

void *tdb_collect_entries(tdb_builder *b, td_program *prog, size_t each) {
  const char **names;
  int n = td_program_entries(prog, &names);
  b->e = td_arena_alloc(b->a, (size_t)(n + 1) * sizeof *b->e);
  unsigned char *extra = td_arena_alloc(b->a, (size_t)(n + 1) * each);
  if (!b->e || !extra) {
    td_err_set(b->err, "out of memory");
    return NULL;
  }
  memset(extra, 0, (size_t)(n + 1) * each);
  for (int k = 0; k < b->o->n_entries; k++) {   /* --entry: each must be an entry point */
    int found = 0;
    for (int i = 0; i < n && !found; i++) found = strcmp(names[i], "main") && !strcmp(names[i], b->o->entries[k]);
    if (found) continue;
    char list[600];
    size_t w = 0;
    list[0] = 0;
    for (int i = 0; i < n && w < sizeof list; i++)
      if (strcmp(names[i], "main")) w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", w ? ", " : "", names[i]);
    const char *help, *why;
    td_span at;
    if ((why = td_program_not_entry(prog, b->o->entries[k], &help, &at)))
      td_err_set(b->err, "--entry %s: %s:%d: %s%s%s", b->o->entries[k], b->o->source, at.line, why,
                 help ? "\nhelp: " : "", help ? help : "");
    else
      td_err_set(b->err, "--entry %s: %s has no entry point of that name (its entry points: %s)", b->o->entries[k],
                 b->o->source, w ? list : "none");
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], "main") && wanted(b->o, names[i])) {
      memset(&b->e[b->n_e], 0, sizeof *b->e);
      b->e[b->n_e++].name = names[i];
    }
  if (!b->n_e) {
    td_err_set(b->err, "%s has no entry point to build (only main)", b->o->source);
    return NULL;
  }
  name_entries(b);
  return extra;
}

size_t tdb_param_bytes(const tdb_param *p) {
  size_t n = td_dtype_size(p->dtype);
  for (int k = 0; k < p->rank; k++) n *= (size_t)p->shape[k];
  return n;
}

/* The model of entry e: "A" of "A.forward", "" for a top-level fn.  Entries
 * of one model share its parameters; two models' parameters are distinct
 * even when their names are the same (each model's "l0.weight"). */
static size_t model_len(const tdb_entry *e) {
  const char *dot = strrchr(e->name, '.');
  return dot ? (size_t)(dot - e->name) : 0;
}

int tdb_param_index(const tdb_builder *b, const tdb_entry *e, const char *name) {
  size_t ml = model_len(e);
  for (int i = 0; i < b->n_p; i++)
    if (!strcmp(b->p[i].name, name) && strlen(b->p[i].model) == ml && !strncmp(b->p[i].model, e->name, ml))
      return i;
  return -1;
}

static int add_params(tdb_builder *b, tdb_entry *e) {
  for (int i = 0; i < e->g->n_params; i++) {
    const td_node *n = &e->g->nodes[e->g->params[i]];
    const char *name = n->name;
    tdb_param q = {name, NULL, name, n->dtype, n->rank, {0}, {0}, -1};
    if (tdb_param_index(b, e, name) >= 0) continue;
    if (td_param_recipe(e->g, n, b->o->seed, q.shape, &q.init, b->err)) return -1;
    tdb_param *np = td_realloc(b->p, (size_t)(b->n_p + 1) * sizeof *np);
    char *model = td_arena_alloc(b->a, model_len(e) + 1);
    if (!np || !model) {
      if (np) b->p = np;
      return td_err_set(b->err, "out of memory");
    }
    memcpy(model, e->name, model_len(e));
    model[model_len(e)] = 0;
    b->p = np;
    q.model = model;
    b->p[b->n_p++] = q;
  }
  return 0;
}

/* The artifact's parameter names: each model's own, except a name that
 * parameters of two models share, which is qualified by its model. */
static int name_params(tdb_builder *b) {
  for (int i = 0; i < b->n_p; i++) {
    int shared = 0;
    for (int j = 0; j < b->n_p && !shared; j++)
      shared = j != i && !strcmp(b->p[i].name, b->p[j].name) && strcmp(b->p[i].model, b->p[j].model);
    if (!shared) continue;
    size_t n = strlen(b->p[i].model) + strlen(b->p[i].name) + 2;
    char *q = td_arena_alloc(b->a, n);
    if (!q) return td_err_set(b->err, "out of memory");
    snprintf(q, n, "%s.%s", b->p[i].model, b->p[i].name);
    b->p[i].aname = q;
  }
  return 0;
}

/* Is symbol s one of e's arguments? */
static int is_arg(const tdb_entry *e, int s) {
  for (int a = 0; a < e->n_args; a++)
    if (e->args[a] == s) return 1;
  return 0;
}

/* The symbols bound by the inputs' plain-symbol axes, in order; every
 * symbol of an input must be one of them. */
static int find_args(tdb_builder *b, tdb_entry *e) {
  const td_graph *g = e->opt;
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    for (int k = 0; k < n->rank; k++) {
      td_dim d = n->shape[k];
      if (TD_DIM_IS_CONST(d)) continue;
      const td_poly *p = &g->dims[-d - 1];
      if (p->n != 1 || p->t[0].coef != 1 || p->t[0].n != 1) continue;
      if (!is_arg(e, p->t[0].sym[0]) && e->n_args < (int)(sizeof e->args / sizeof *e->args))
        e->args[e->n_args++] = p->t[0].sym[0];
    }
  }
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    for (int k = 0; k < n->rank; k++) {
      if (TD_DIM_IS_CONST(n->shape[k])) continue;
      const td_poly *p = &g->dims[-n->shape[k] - 1];
      for (int t = 0; t < p->n; t++)
        for (int s = 0; s < p->t[t].n; s++)
          if (!is_arg(e, p->t[t].sym[s]))
            return td_err_set(b->err, "%s: size %s of input '%s' is bound by no axis of its own", e->name,
                              g->syms[p->t[t].sym[s]], n->name ? n->name : "?");
    }
  }
  return 0;
}

int tdb_lower_entry(tdb_builder *b, td_program *prog, tdb_entry *e) {
  if (!(e->g = td_program_lower(prog, e->name))) return td_err_set(b->err, "%s does not compile", e->name);
  e->diags = td_program_diags(prog);
  if (!(e->plan = b->o->lower(e->g, b->o, b->err))) return -1;
  e->opt = e->plan->g;
  return find_args(b, e) || add_params(b, e) ? -1 : 0;
}

int64_t tdb_pack_params(tdb_builder *b, size_t extra, size_t pad) {
  if (name_params(b)) return -1;
  size_t total = 0;
  for (int i = 0; b->o->embed_weights && i < b->n_p; i++) {
    b->p[i].off = (int64_t)total;
    total += (tdb_param_bytes(&b->p[i]) + 63) & ~(size_t)63;
  }
  b->data = td_calloc(total + extra + pad, 1);
  if (!b->data) return td_err_set(b->err, "out of memory");
  for (int i = 0; b->o->embed_weights && i < b->n_p; i++) {
    const tdb_param *p = &b->p[i];
    int64_t n = (int64_t)(tdb_param_bytes(p) / td_dtype_size(p->dtype));
    if (td_init_fill(b->data + p->off, p->dtype, n, &p->init, b->err)) return -1;
  }
  b->n_data = total + extra;
  return (int64_t)total;
}

/* ---- the descriptor ---- */

void tdb_put(tdb_builder *b, int64_t v) {
  if (b->n_w == b->cap_w) {
    size_t cap = b->cap_w ? 2 * b->cap_w : 1024;
    int64_t *w = td_realloc(b->w, cap * sizeof *w);
    if (!w) {
      td_err_set(b->err, "out of memory");
      return;
    }
    b->w = w;
    b->cap_w = cap;
  }
  if (b->n_w < b->cap_w) b->w[b->n_w++] = v;
}

void tdb_put_str(tdb_builder *b, const char *s) {
  size_t n = strlen(s);
  tdb_put(b, (int64_t)n);
  for (size_t i = 0; i < n; i += 8) {
    int64_t v = 0;
    memcpy(&v, s + i, n - i < 8 ? n - i : 8);
    tdb_put(b, v);
  }
}

static uint64_t sig_add(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;   /* a separator: "ab","c" differs from "a","bc" */
}

static uint64_t sig_type(uint64_t h, const td_graph *g, const td_node *n) {
  char buf[512];
  return sig_add(h, td_type_str(g, n->dtype, n->rank, n->shape, buf, sizeof buf));
}

int tdb_n_outs(const tdb_entry *e) { return e->opt->n_outputs - e->opt->n_update_outs; }

uint64_t tdb_signature(const tdb_builder *b) {
  uint64_t h = sig_add(14695981039346656037ull, "tdsl artifact signature 1");
  char buf[512];
  for (int i = 0; i < b->n_p; i++) {
    const tdb_param *p = &b->p[i];
    h = sig_add(sig_add(h, p->aname), td_shape_str(p->dtype, p->rank, p->shape, buf, sizeof buf));
  }
  for (int ei = 0; ei < b->n_e; ei++) {
    const tdb_entry *e = &b->e[ei];
    const td_graph *g = e->opt;
    h = sig_add(h, e->name);
    snprintf(buf, sizeof buf, "%d %d %d", e->n_args, g->n_inputs, tdb_n_outs(e));
    h = sig_add(h, buf);
    for (int u = 0; u < e->g->n_updates; u++) h = sig_add(sig_add(h, "updates"), e->g->nodes[e->g->updates[u].param].name);
    for (int i = 0; i < e->n_args; i++) h = sig_add(h, g->syms[e->args[i]]);
    for (int i = 0; i < g->n_inputs; i++) {
      const td_node *n = &g->nodes[g->inputs[i]];
      h = sig_type(sig_add(h, n->name ? n->name : "?"), g, n);
    }
    for (int i = 0; i < tdb_n_outs(e); i++) h = sig_type(h, g, &g->nodes[e->plan->out_nodes[i]]);
  }
  return h;
}

void tdb_put_start(tdb_builder *b, int64_t magic, int64_t abi, int64_t device) {
  int64_t head[6] = {magic, abi, device, (int64_t)tdb_signature(b), b->n_e, b->n_p};
  for (int i = 0; i < 6; i++) tdb_put(b, head[i]);
  for (int i = 0; i < b->n_p; i++) {
    const tdb_param *p = &b->p[i];
    tdb_put_str(b, p->aname);
    tdb_put(b, p->dtype);
    tdb_put(b, p->rank);
    for (int k = 0; k < p->rank; k++) tdb_put(b, p->shape[k]);
    tdb_put(b, p->off);
    tdb_put(b, (int64_t)tdb_param_bytes(p));
    int64_t a, bb;   /* the recipe's doubles as their bits */
    memcpy(&a, &p->init.a, sizeof a);
    memcpy(&bb, &p->init.b, sizeof bb);
    int64_t recipe[5] = {p->init.kind, a, bb, (int64_t)p->init.seed, (int64_t)p->init.stream};
    for (int k = 0; k < 5; k++) tdb_put(b, recipe[k]);
  }
}

static void put_node_type(tdb_builder *b, const td_node *n) {
  tdb_put(b, n->dtype);
  tdb_put(b, n->rank);
  for (int k = 0; k < n->rank; k++) tdb_put(b, n->shape[k]);
}

static void put_polys(tdb_builder *b, const td_graph *g) {
  tdb_put(b, g->n_dims);
  for (int i = 0; i < g->n_dims; i++) {
    tdb_put(b, g->dims[i].n);
    for (int t = 0; t < g->dims[i].n; t++) {
      const td_mono *m = &g->dims[i].t[t];
      tdb_put(b, m->coef);
      tdb_put(b, m->n);
      for (int k = 0; k < TD_MONO_MAX; k++) tdb_put(b, k < m->n ? m->sym[k] : 0);
    }
  }
}

/* "file:line:col" of a span, as `tdsl run` names it. */
static void put_where(tdb_builder *b, const tdb_entry *e, td_span sp) {
  const td_source *src = e->diags && sp.file >= 0 ? td_diags_source(e->diags, sp.file) : NULL;
  char buf[600];
  if (src) snprintf(buf, sizeof buf, "%s:%d:%d", src->path, sp.line, sp.col);
  else snprintf(buf, sizeof buf, "%d:%d", sp.line, sp.col);
  tdb_put_str(b, buf);
}

/* The run-time size checks (lang/checks.h), each: kind, axis, rank,
 * dtype, axes, step, its size handles, its text and where it is. */
static void put_checks(tdb_builder *b, const tdb_entry *e, const td_graph *g) {
  tdb_put(b, g->n_checks);
  for (int i = 0; i < g->n_checks; i++) {
    const td_sizecheck *c = &g->checks[i].c;
    int64_t head[6] = {c->kind, c->axis, c->rank, c->dtype, c->axes, c->step};
    for (int k = 0; k < 6; k++) tdb_put(b, head[k]);
    for (int k = 0; k < td_sizecheck_n_dims(c); k++) tdb_put(b, c->dims[k]);
    tdb_put_str(b, c->text ? c->text : "");
    put_where(b, e, g->checks[i].span);
  }
}

void tdb_put_entry_head(tdb_builder *b, const tdb_entry *e) {
  const td_graph *g = e->opt;
  const td_plan *p = e->plan;
  tdb_put_str(b, e->name);
  tdb_put(b, g->n_syms);
  for (int s = 0; s < g->n_syms; s++) tdb_put_str(b, g->syms[s]); /* for messages (runtime/sig.c) */
  tdb_put(b, e->n_args);
  for (int i = 0; i < e->n_args; i++) tdb_put(b, e->args[i]);
  tdb_put(b, g->n_inputs);
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    tdb_put_str(b, n->name ? n->name : "?");
    put_node_type(b, n);
  }
  tdb_put(b, tdb_n_outs(e));   /* the caller's: not the updates' values */
  for (int i = 0; i < tdb_n_outs(e); i++) {
    tdb_put(b, p->buf_of[p->out_nodes[i]]);
    put_node_type(b, &g->nodes[p->out_nodes[i]]);
  }
  tdb_put_plan(b, e, p);
}

void tdb_put_plan(tdb_builder *b, const tdb_entry *e, const td_plan *p) {
  const td_graph *g = p->g;
  int entry = p == e->plan;   /* a scan's body has no parameters of its own */
  put_polys(b, g);
  tdb_put(b, entry ? e->g->n_params : 0);
  for (int i = 0; entry && i < e->g->n_params; i++)
    tdb_put(b, tdb_param_index(b, e, e->g->nodes[e->g->params[i]].name));
  tdb_put(b, p->n_bufs);
  for (int i = 0; i < p->n_bufs; i++) {
    tdb_put(b, p->bufs[i].kind);
    tdb_put(b, p->bufs[i].index);
    tdb_put(b, p->bufs[i].bytes);
  }
  tdb_put(b, p->n_slots);
  for (int i = 0; i < p->n_slots; i++) tdb_put(b, p->slot_bytes[i]);
  put_checks(b, e, g);
}

void tdb_put_dv1(tdb_builder *b, const td_graph *g, int rand_node, td_dim dim) {
  tdb_put(b, rand_node >= 0);
  tdb_put(b, rand_node >= 0 ? (int64_t)g->nodes[rand_node].attr.stream : dim);
}

/* The printed values follow the outputs in plan->out_nodes, each PRINT's
 * inputs in order, as td_compiled_prints reads them; a value is named by
 * the buffer holding it. */
void tdb_put_prints(tdb_builder *b, const tdb_entry *e) { tdb_put_plan_prints(b, e->opt, e->plan); }

void tdb_put_plan_prints(tdb_builder *b, const td_graph *g, const td_plan *p) {
  int n = 0, next = g->n_outputs;
  for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == TD_IR_PRINT;
  tdb_put(b, n);
  for (int i = 0; i < g->n_nodes; i++) {
    const td_node *nd = &g->nodes[i];
    if (nd->op != TD_IR_PRINT) continue;
    tdb_put(b, nd->attr.n_parts);
    for (int k = 0; k < nd->attr.n_parts; k++) {
      const td_print_part *part = &nd->attr.parts[k];
      int at = next + part->input;
      if (part->text || part->input < 0 || at >= p->n_out_nodes) {
        tdb_put(b, 0);
        tdb_put_str(b, part->text ? part->text : "?");
        continue;
      }
      tdb_put(b, 1);
      tdb_put(b, p->buf_of[p->out_nodes[at]]);
      put_node_type(b, &g->nodes[p->out_nodes[at]]);
    }
    next += nd->n_in;
  }
}

/* A training step's updates (artifact.h, "per update"): the model's index
 * of the parameter each writes, and the buffer holding its value, which
 * is that parameter's own memory (a buffer of kind TD_BUF_UPDATE) when
 * the planner wrote it in place. */
void tdb_put_updates(tdb_builder *b, const tdb_entry *e) {
  const td_graph *g = e->opt;
  const td_plan *p = e->plan;
  int first = g->n_outputs - g->n_update_outs;
  tdb_put(b, g->n_update_outs);
  for (int k = 0; k < g->n_update_outs; k++) {
    const char *name = e->g->nodes[e->g->updates[k].param].name;
    tdb_put(b, tdb_param_index(b, e, name));
    tdb_put(b, p->buf_of[p->out_nodes[first + k]]);
  }
}

/* ---- the API context ---- */

int tdb_api_init(tdb_api *A) {
  memset(A, 0, sizeof *A);
  if (!(A->ctx = gcc_jit_context_acquire())) return -1;
  gcc_jit_context_set_bool_print_errors_to_stderr(A->ctx, 0);
  gcc_jit_context_set_int_option(A->ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, 2);
  /* The fast path of an entry of a few kernels is always_inline into its C
   * API wrapper (build.c); one with several outputs and a gather's status
   * check grew past GCC's default size limit, and GCC refuses to build a
   * function it was told to inline but would not ("inlining failed in call
   * to always_inline"). */
  gcc_jit_context_add_command_line_option(A->ctx, "--param=max-inline-insns-single=4000");
  A->t_int = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT);
  A->t_i64 = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT64_T);
  A->t_vp = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_VOID_PTR);
  A->t_vpp = gcc_jit_type_get_pointer(A->t_vp);
  A->t_cp = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_CONST_CHAR_PTR);
  A->t_size = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_SIZE_T);
  A->t_void = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_VOID);
  A->t_u8 = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_UNSIGNED_CHAR);
  return 0;
}

gcc_jit_function *tdb_fn_new(tdb_api *A, enum gcc_jit_function_kind kind, gcc_jit_type *ret, const char *name, int n,
                             gcc_jit_type **types, gcc_jit_param **ps) {
  for (int i = 0; i < n; i++) {
    char pn[16];
    snprintf(pn, sizeof pn, "a%d", i);
    ps[i] = gcc_jit_context_new_param(A->ctx, NULL, types[i], pn);
  }
  return gcc_jit_context_new_function(A->ctx, NULL, kind, ret, name, n, ps, 0);
}

static gcc_jit_rvalue *pv(gcc_jit_param *p) { return gcc_jit_param_as_rvalue(p); }

gcc_jit_rvalue *tdb_ival(tdb_api *A, gcc_jit_type *t, long v) {
  return gcc_jit_context_new_rvalue_from_long(A->ctx, t, v);
}

gcc_jit_function *tdb_import(tdb_api *A, gcc_jit_type *ret, const char *name, int n, gcc_jit_type **types) {
  gcc_jit_param *ps[8];
  return tdb_fn_new(A, GCC_JIT_FUNCTION_IMPORTED, ret, name, n, types, ps);
}

gcc_jit_lvalue *tdb_blob(tdb_api *A, gcc_jit_type *elem, const char *name, const void *bytes, size_t n, size_t each) {
  size_t count = (n + each - 1) / each ? (n + each - 1) / each : 1;
  unsigned char *padded = td_calloc(count, each);
  if (!padded) return NULL;
  if (n) memcpy(padded, bytes, n);
  gcc_jit_type *at = gcc_jit_context_new_array_type(A->ctx, NULL, elem, (int)count);
  gcc_jit_lvalue *g = gcc_jit_context_new_global(A->ctx, NULL, GCC_JIT_GLOBAL_INTERNAL, at, name);
  gcc_jit_global_set_initializer(g, padded, count * each);
  td_free(padded);
  return g;
}

/* The blob's bytes and the assembler file including them, in the staging
 * directory.  The path is a string of the assembler's, so '"' and '\'
 * are escaped; a newline cannot be. */
static int write_data_files(tdb_builder *b, const char *bin, const char *asm_path, const char *sym) {
  if (strchr(bin, '\n')) return td_err_set(b->err, "cannot build into %s: its name holds a newline", b->o->dir);
  FILE *f = fopen(bin, "wb");
  if (!f) return td_err_set(b->err, "cannot write %s: %s", bin, strerror(errno));
  size_t put = fwrite(b->data, 1, b->n_data, f);
  if (fclose(f) || put != b->n_data) return td_err_set(b->err, "cannot write %s", bin);
  if (!(f = fopen(asm_path, "w"))) return td_err_set(b->err, "cannot write %s: %s", asm_path, strerror(errno));
  /* hidden: the library's own symbol, never exported; no executable stack */
  fprintf(f, "\t.section .rodata.%s,\"a\",@progbits\n\t.balign 64\n\t.globl %s\n\t.hidden %s\n"
             "\t.type %s, @object\n%s:\n\t.incbin \"",
          sym, sym, sym, sym, sym);
  for (const char *c = bin; *c; c++) fprintf(f, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
  fprintf(f, "\"\n\t.size %s, .-%s\n\t.section .note.GNU-stack,\"\",@progbits\n", sym, sym);
  return fclose(f) ? td_err_set(b->err, "cannot write %s", asm_path) : 0;
}

int tdb_data_symbol(tdb_builder *b, tdb_api *A, const tdb_outs *out, const char *sym) {
  if (!b->n_data) {
    A->data = gcc_jit_context_null(A->ctx, A->t_vp);
    return 0;
  }
  char bin[1300], asm_path[1300];
  snprintf(bin, sizeof bin, "%s/%s_data.bin", out->stage, b->o->prefix);
  snprintf(asm_path, sizeof asm_path, "%s/%s_data.s", out->stage, b->o->prefix);
  if (!b->data_files && write_data_files(b, bin, asm_path, sym)) return -1;
  b->data_files = 1;
  gcc_jit_type *at = gcc_jit_context_new_array_type(A->ctx, NULL, A->t_u8, 1);
  A->data = tdb_addr0(A, gcc_jit_context_new_global(A->ctx, NULL, GCC_JIT_GLOBAL_IMPORTED, at, sym));
  gcc_jit_context_add_driver_option(A->ctx, asm_path);
  return 0;
}

gcc_jit_rvalue *tdb_addr0(tdb_api *A, gcc_jit_lvalue *arr) {
  return gcc_jit_context_new_cast(
      A->ctx, NULL,
      gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(arr),
                                                                  tdb_ival(A, A->t_int, 0)), NULL),
      A->t_vp);
}

void tdb_add_forward(tdb_builder *b, tdb_api *A, const char *suffix, gcc_jit_type *ret, const char *rt, int n,
                     gcc_jit_type **ts) {
  char name[200];
  gcc_jit_param *ps[8];
  gcc_jit_rvalue *as[8];
  gcc_jit_function *rtf = tdb_import(A, ret, rt, n, ts);
  snprintf(name, sizeof name, "%s_%s", b->o->prefix, suffix);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, ret, name, n, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  for (int i = 0; i < n; i++) as[i] = pv(ps[i]);
  gcc_jit_rvalue *r = gcc_jit_context_new_call(A->ctx, NULL, rtf, n, as);
  if (ret == A->t_void) {
    gcc_jit_block_add_eval(blk, NULL, r);
    gcc_jit_block_end_with_void_return(blk, NULL);
  } else {
    gcc_jit_block_end_with_return(blk, NULL, r);
  }
}

/* <name>(int abi, uint64_t sig) or, with sig given, <name>(int abi), calling
 * create(abi, sig, args...). */
static void add_create_fn(tdb_api *A, const char *name, const char *create, gcc_jit_rvalue *sig, int n,
                          gcc_jit_rvalue **args) {
  gcc_jit_type *t_u64 = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_UINT64_T);
  gcc_jit_type *ts[8] = {A->t_int, t_u64};
  gcc_jit_rvalue *cargs[8];
  gcc_jit_param *ps[2];
  for (int i = 0; i < n && i < 6; i++) ts[2 + i] = A->t_vp;
  gcc_jit_function *rt = tdb_import(A, A->t_vp, create, 2 + n, ts);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_vp, name, sig ? 1 : 2, ts, ps);
  cargs[0] = pv(ps[0]);
  cargs[1] = sig ? gcc_jit_context_new_cast(A->ctx, NULL, sig, t_u64) : pv(ps[1]);
  for (int i = 0; i < n && i < 6; i++) cargs[2 + i] = args[i];
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL,
                                gcc_jit_context_new_call(A->ctx, NULL, rt, 2 + n, cargs));
}

void tdb_add_create(tdb_builder *b, tdb_api *A, const char *create, int abi, int n, gcc_jit_rvalue **args) {
  gcc_jit_param *ps[1];
  char name[200];
  snprintf(name, sizeof name, "%s_create_abi", b->o->prefix);
  add_create_fn(A, name, create, NULL, n, args);
  snprintf(name, sizeof name, "%s_abi_version", b->o->prefix);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_int, name, 0, NULL, ps);
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL, tdb_ival(A, A->t_int, abi));
}

void tdb_add_create_own(tdb_builder *b, tdb_api *A, const char *create, int n, gcc_jit_rvalue **args) {
  char name[200];
  snprintf(name, sizeof name, "%s_tdsl_new", b->o->prefix);
  add_create_fn(A, name, create, tdb_ival(A, A->t_i64, (long)(int64_t)tdb_signature(b)), n, args);
}

void tdb_add_entry_fn(tdb_builder *b, tdb_api *A, gcc_jit_function *call, int ei, const char *suffix) {
  const tdb_entry *e = &b->e[ei];
  int n_io = e->opt->n_inputs + tdb_n_outs(e), n = 1 + e->n_args + n_io;
  gcc_jit_type **ts = td_arena_alloc(b->a, (size_t)n * sizeof *ts);
  gcc_jit_param **ps = td_arena_alloc(b->a, (size_t)n * sizeof *ps);
  if (!ts || !ps) {
    td_err_set(b->err, "out of memory");
    return;
  }
  char name[200];
  snprintf(name, sizeof name, "%s%s", e->cname, suffix);
  for (int i = 0; i < n; i++) ts[i] = i > 0 && i <= e->n_args ? A->t_i64 : A->t_vp;
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_int, name, n, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  gcc_jit_lvalue *syms = gcc_jit_function_new_local(
      f, NULL, gcc_jit_context_new_array_type(A->ctx, NULL, A->t_i64, e->n_args ? e->n_args : 1), "syms");
  gcc_jit_lvalue *args = gcc_jit_function_new_local(
      f, NULL, gcc_jit_context_new_array_type(A->ctx, NULL, A->t_vp, n_io ? n_io : 1), "args");
  for (int i = 0; i < e->n_args; i++)
    gcc_jit_block_add_assignment(blk, NULL, gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(syms),
                                                                             tdb_ival(A, A->t_int, i)), pv(ps[1 + i]));
  for (int i = 0; i < n_io; i++)
    gcc_jit_block_add_assignment(blk, NULL, gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(args),
                                                                             tdb_ival(A, A->t_int, i)),
                                 pv(ps[1 + e->n_args + i]));
  gcc_jit_rvalue *cargs[4] = {pv(ps[0]), tdb_ival(A, A->t_int, ei),
                              gcc_jit_context_new_cast(A->ctx, NULL, tdb_addr0(A, syms), gcc_jit_type_get_pointer(A->t_i64)),
                              gcc_jit_context_new_cast(A->ctx, NULL, tdb_addr0(A, args), A->t_vpp)};
  gcc_jit_block_end_with_return(blk, NULL, gcc_jit_context_new_call(A->ctx, NULL, call, 4, cargs));
}

void tdb_add_main(tdb_api *A, const char *em, int n, gcc_jit_rvalue **args) {
  gcc_jit_type *ts[8] = {A->t_int, A->t_vpp};
  gcc_jit_rvalue *margs[8];
  gcc_jit_param *mp[2];
  for (int i = 0; i < n && i < 6; i++) ts[2 + i] = A->t_vp;
  gcc_jit_function *rt = tdb_import(A, A->t_int, em, 2 + n, ts);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_int, "main", 2, ts, mp);
  margs[0] = pv(mp[0]);
  margs[1] = pv(mp[1]);
  for (int i = 0; i < n && i < 6; i++) margs[2 + i] = args[i];
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL,
                                gcc_jit_context_new_call(A->ctx, NULL, rt, 2 + n, margs));
}

int tdb_compile(tdb_builder *b, gcc_jit_context *ctx, int is_exe, const char *path) {
  if (b->err->msg[0]) {
    gcc_jit_context_release(ctx);
    return -1;
  }
  gcc_jit_context_compile_to_file(ctx, is_exe ? GCC_JIT_OUTPUT_KIND_EXECUTABLE : GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, path);
  const char *msg = gcc_jit_context_get_first_error(ctx);
  int rc = msg ? td_err_set(b->err, "cannot link %s: %s", path, msg) : 0;
  gcc_jit_context_release(ctx);
  return rc;
}

/* ---- the header ---- */

/* The C element type of an argument: f16/bf16 as their bit patterns
 * (runtime/half.h converts). */
static const char *ctype(td_dtype t) {
  switch (t) {
  case TD_BOOL: return "uint8_t";
  case TD_I32: return "int32_t";
  case TD_I64: return "int64_t";
  case TD_F32: return "float";
  case TD_F16: case TD_BF16: return "uint16_t";
  default: return "double";
  }
}

static void type_comment(const td_graph *g, const td_node *n, FILE *f) {
  char buf[256];
  fputs(td_type_str(g, n->dtype, n->rank, n->shape, buf, sizeof buf), f);
}

FILE *tdb_header_open(tdb_builder *b, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) td_err_set(b->err, "cannot write %s: %s", path, strerror(errno));
  return f;
}

void tdb_upper(const char *p, char *up, size_t n) {
  size_t i = 0;
  for (; p[i] && i + 1 < n; i++) up[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
  up[i] = 0;
}

void tdb_header_guard(const tdb_builder *b, FILE *f, int abi) {
  const char *p = b->o->prefix;
  char up[128];
  tdb_upper(p, up, sizeof up);
  fprintf(f, "#ifndef %s_TDSL_H\n#define %s_TDSL_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
             "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
             "#define %s_TDSL_ABI %d\n"
             "/* What this header declares (entry points, their arguments and the\n"
             " * parameters), hashed: create refuses a library built from another model. */\n"
             "#define %s_TDSL_SIG 0x%016llxull\n",
          up, up, up, abi, up, (unsigned long long)tdb_signature(b));
}

void tdb_header_sig(const tdb_entry *e, FILE *f) {
  const td_graph *g = e->opt;
  fprintf(f, "/* %s(", e->name);
  for (int i = 0; i < g->n_inputs; i++) {
    fprintf(f, "%s%s: ", i ? ", " : "", g->nodes[g->inputs[i]].name);
    type_comment(g, &g->nodes[g->inputs[i]], f);
  }
  fprintf(f, ") -> (");
  for (int i = 0; i < tdb_n_outs(e); i++) {
    fprintf(f, "%s", i ? ", " : "");
    type_comment(g, &g->nodes[g->outputs[i]], f);
  }
  fprintf(f, ")\n * Arrays are contiguous, row-major; outputs are written.");
}

void tdb_header_proto(const tdb_builder *b, const tdb_entry *e, const char *suffix, FILE *f) {
  const td_graph *g = e->opt;
  fprintf(f, "int %s%s(%s_model *m", e->cname, suffix, b->o->prefix);
  for (int i = 0; i < e->n_args; i++) fprintf(f, ", int64_t %s", g->syms[e->args[i]]);
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    fprintf(f, ", const %s *%s", ctype(n->dtype), n->name);
  }
  for (int i = 0; i < tdb_n_outs(e); i++) {
    if (tdb_n_outs(e) == 1) fprintf(f, ", %s *out", ctype(g->nodes[g->outputs[i]].dtype));
    else fprintf(f, ", %s *out%d", ctype(g->nodes[g->outputs[i]].dtype), i);
  }
  fprintf(f, ");\n");
}

int tdb_header_close(tdb_builder *b, FILE *f, const char *path) {
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  return fclose(f) ? td_err_set(b->err, "cannot write %s", path) : 0;
}

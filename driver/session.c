/* session.c - an incremental session, the engine of `tdsl repl`: its core.
 *
 * Overview.  The session is a td_program whose main module is the session
 * itself: its globals are the session's scope, where `let` binds and where
 * models and functions typed (or :load'ed) are defined.  Each input is
 * parsed with the REPL grammar (td_parse_repl), elaborated into a fresh
 * graph (el_eval on each statement, el_bind_item on each item), run
 * through the driver (driver/driver.h: eagerly by default, or on the
 * backend `:compiled` / `:device` chose) and committed.  Showing values,
 * the listing commands and completion are in session_show.c,
 * session_explain.c and session_complete.c.
 *
 * Tensors across inputs.  A td_value of kind V_TENSOR names a node of the
 * graph being built, and every input builds a new graph.  So between inputs
 * the session keeps tensors in *slots* (materialised td_tensors, reference
 * counted) and every persistent V_TENSOR is *detached*: its node field holds
 * -1 - slot.  An input then goes through these steps:
 *
 *   attach    walk every value reachable from the session's scope (lists,
 *             tuples, model instances, bound methods) and turn each detached
 *             tensor into a leaf of the new graph: an INPUT node with the
 *             tensor's literal shape, or a PARAM node (same name and recipe)
 *             for a model parameter.  Each location changed is journaled.
 *   elaborate the input's items and statements, in the session's scope.
 *   collect   walk again: every tensor now bound that is not a leaf made by
 *             attach must be materialised (a graph output, or a freshly
 *             initialised PARAM of a model instance created by this input).
 *   prune     copy the graph without the leaves nobody used (so --dump=ir
 *             style listings show only what the input reads), then verify.
 *   run       the driver, with the slots' tensors as inputs and params.
 *   commit    new slots for the materialised values, detach every value
 *             again, free the slots nothing refers to any more.
 *
 * An input is atomic: on any error (or an interrupt) it is rolled back by
 * restoring the scope's binding array and writing the journal back, which
 * undoes both the attach step and whatever the input assigned in place;
 * modules it imported for the first time are forgotten.
 * The commands that only look (:type, :ir, :explain, :time) always roll
 * back.  Graphs live in a per-input arena; the session's arena keeps the
 * sources, syntax trees and compile-time values, which bindings refer to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/session_impl.h"

td_span tds_no_span(void) {
  td_span sp = {-1, 0, 0, 0, 0};
  return sp;
}

void tds_oom(td_session *s) { td_diags_oom(&s->diags, tds_no_span()); }

void td_session_set_runner(td_session *s, td_session_runner run, void *ud) {
  s->run = run;
  s->run_ud = ud;
}

void td_session_set_driver(td_session *s, const td_drive_opts *o) {
  s->drive = *o;
  s->drive.dumps = 0;
  s->drive.dump = NULL;
}

td_session *td_session_new(const td_session_opts *o) {
  td_session *s = td_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->o = *o;
  if (!s->o.source_name) s->o.source_name = "<repl>";
  if (s->o.print_threshold == 0) s->o.print_threshold = 1000;
  s->arena = td_arena_new();
  if (!s->arena) { td_free(s); return NULL; }
  td_diags_init(&s->diags, s->arena);
  s->prog = td_program_new(s->arena, &s->diags);
  s->o.source_name = td_arena_strdup(s->arena, s->o.source_name);
  /* the session's own module: an empty file named after the source */
  if (!s->prog || !s->o.source_name || td_program_load_text(s->prog, s->o.source_name, "")) {
    td_session_free(s);
    return NULL;
  }
  td_program_set_seed(s->prog, s->o.seed);
  td_program_allow_files(s->prog, 1);   /* load() and save(): tds_run_once and td_session_eval */
  return s;
}

void td_session_free(td_session *s) {
  if (!s) return;
  for (int j = 0; j < s->n_slots; j++) td_tensor_release(s->slots[j].t);
  td_free(s->slots);
  for (int i = 0; i < s->n_loaded; i++) td_free(s->loaded[i]);
  td_free(s->loaded);
  td_arena_free(s->arena);
  td_free(s);
}

void td_session_add_search_dir(td_session *s, const char *dir) {
  td_program_add_search_dir(s->prog, dir);
}

const td_diags *td_session_diags(const td_session *s) { return &s->diags; }

void td_session_clear_diags(td_session *s) { td_diags_clear(&s->diags); }

el_scope *tds_top_scope(td_session *s) { return s->prog->main->globals; }

/* A new slot holding t (retained); its index, or -1 when memory runs out. */
static int slot_new(td_session *s, td_tensor *t, const td_node *n) {
  if (s->n_slots == s->cap_slots) {
    int cap = s->cap_slots ? 2 * s->cap_slots : 64;
    slot *ns = td_realloc(s->slots, (size_t)cap * sizeof *ns);
    if (!ns) return -1;
    s->slots = ns;
    s->cap_slots = cap;
  }
  slot *sl = &s->slots[s->n_slots];
  memset(sl, 0, sizeof *sl);
  sl->name = n->name ? td_arena_strdup(s->arena, n->name)
                    : td_arena_printf(s->arena, "_%d", s->n_slots);
  sl->span = n->span;
  sl->is_param = n->op == TD_IR_PARAM;
  if (sl->is_param) sl->attr = n->attr;
  sl->t = td_tensor_retain(t);
  return s->n_slots++;
}

/* ---- walking the session's values --------------------------------------- */

enum { W_ATTACH, W_COLLECT, W_DETACH, W_MARK };

typedef struct walker {
  td_session *s;
  lowering *L;
  int mode;
  const void **seen;        /* model instances visited (open addressing) */
  size_t cap_seen, n_seen;
  unsigned char *mark;      /* W_MARK: slots reachable */
  int oom;
} walker;

/* Adds p to the visited set; 1 when it was not there yet. */
static int seen_add(walker *w, const void *p) {
  if (2 * (w->n_seen + 1) > w->cap_seen) {
    size_t cap = w->cap_seen ? 2 * w->cap_seen : 64;
    const void **ns = td_calloc(cap, sizeof *ns);
    if (!ns) { w->oom = 1; return 0; }
    for (size_t i = 0; i < w->cap_seen; i++) {
      if (!w->seen[i]) continue;
      size_t h = ((uintptr_t)w->seen[i] >> 4) & (cap - 1);
      while (ns[h]) h = (h + 1) & (cap - 1);
      ns[h] = w->seen[i];
    }
    td_free(w->seen);
    w->seen = ns;
    w->cap_seen = cap;
  }
  size_t h = ((uintptr_t)p >> 4) & (w->cap_seen - 1);
  while (w->seen[h]) {
    if (w->seen[h] == p) return 0;
    h = (h + 1) & (w->cap_seen - 1);
  }
  w->seen[h] = p;
  w->n_seen++;
  return 1;
}

static void journal(walker *w, td_value *at) {
  lowering *L = w->L;
  if (L->n_jr == L->cap_jr) {
    int cap = L->cap_jr ? 2 * L->cap_jr : 64;
    journal_entry *nj = td_realloc(L->jr, (size_t)cap * sizeof *nj);
    if (!nj) { w->oom = 1; return; }
    L->jr = nj;
    L->cap_jr = cap;
  }
  L->jr[L->n_jr].at = at;
  L->jr[L->n_jr++].old = *at;
}

/* The leaf node of slot j in the graph being built (made on first use);
 * -1 for a slot that does not exist, -2 when memory runs out. */
static int attach_slot(td_session *s, lowering *L, int j) {
  if (j < 0 || j >= s->n_slots || !s->slots[j].t) return -1;
  if (L->slot_node[j] >= 0) return L->slot_node[j];
  const slot *sl = &s->slots[j];
  td_graph *g = L->g;
  td_dim shape[TD_MAX_RANK];
  for (int k = 0; k < sl->t->rank; k++) shape[k] = sl->t->shape[k];
  td_attr at;
  memset(&at, 0, sizeof at);
  if (sl->is_param) at = sl->attr;
  at.i = sl->is_param ? g->n_params : g->n_inputs;
  int id = td_graph_add(g, sl->is_param ? TD_IR_PARAM : TD_IR_INPUT, sl->t->dtype, sl->t->rank,
                        shape, NULL, 0, &at, sl->span);
  if (id < 0) return -2;
  g->nodes[id].name = sl->name;
  L->slot_node[j] = id;
  return id;
}

static void visit_tensor(walker *w, td_value *v) {
  lowering *L = w->L;
  switch (w->mode) {
  case W_ATTACH:
    if (v->node < 0) {
      int id = attach_slot(w->s, L, -1 - v->node);
      if (id == -2) {
        w->oom = 1;
      } else if (id < 0) {
        td_error(&w->s->diags, v->span, "internal error: a session value lost its tensor");
        *v = el_err();
      } else {
        v->node = id;
      }
    }
    break;
  case W_COLLECT:
    if (v->node >= L->n_attach && v->node < L->n) L->need[v->node] = 1;
    break;
  case W_DETACH:
    if (v->node >= 0) {
      int j = v->node < L->n_attach ? L->attach[v->node] : v->node < L->n ? L->new_slot[v->node] : -1;
      if (j < 0) *v = el_err(); /* cannot happen: collect asked for every such node */
      else v->node = -1 - j;
    }
    break;
  case W_MARK:
    if (v->node < 0 && -1 - v->node < w->s->n_slots) w->mark[-1 - v->node] = 1;
    break;
  }
}

static void walk_scope(walker *w, el_scope *sc);

/* Visits the tensors of v.  in_scope: v is a binding (assignable, so it is
 * journaled whole by walk_scope); list items are journaled one by one. */
static void walk_value(walker *w, td_value *v, int in_scope) {
  if (w->oom) return; /* stop: tds_rollback restores what was journaled */
  switch (v->k) {
  case V_TENSOR:
    if (w->mode == W_ATTACH && !in_scope) journal(w, v);
    if (!w->oom) visit_tensor(w, v);
    break;
  case V_LIST: case V_TUPLE: case V_GRADFN:
    for (int i = 0; i < v->n; i++) walk_value(w, &v->items[i], 0);
    break;
  case V_MODEL:
    if (seen_add(w, v->inst)) walk_scope(w, v->inst->env);
    break;
  case V_FUNC:
    if (v->inst && seen_add(w, v->inst)) walk_scope(w, v->inst->env);
    break;
  default:
    break;
  }
}

static void walk_scope(walker *w, el_scope *sc) {
  for (int i = 0; i < sc->n && !w->oom; i++) {
    if (w->mode == W_ATTACH) journal(w, &sc->b[i].v);
    walk_value(w, &sc->b[i].v, 1);
  }
}

/* Walks everything reachable from the session's scope in the given mode. */
static int walk_session(td_session *s, lowering *L, int mode, unsigned char *mark) {
  walker w = {s, L, mode, NULL, 0, 0, mark, 0};
  walk_scope(&w, tds_top_scope(s));
  td_free(w.seen);
  return w.oom ? -1 : 0;
}

/* ---- one input: begin, finish, run, commit or roll back ---------------- */

void tds_rollback(td_session *s, lowering *L) {
  if (!L->begun) return;
  el_scope *top = tds_top_scope(s);
  top->b = L->saved_b;
  top->n = L->saved_n;
  top->cap = L->saved_cap;
  for (int i = L->n_jr - 1; i >= 0; i--) *L->jr[i].at = L->jr[i].old;
  L->n_jr = 0;
  /* modules first imported by the failed input are forgotten: one may be
   * half loaded (a syntax error in it, memory running out), and a later
   * import reads it again */
  s->prog->n_mods = L->saved_mods;
}

/* Starts a graph and attaches the session's tensors to it. */
static int begin_input(td_session *s, lowering *L) {
  memset(L, 0, sizeof *L);
  L->before = s->diags.n_errors;
  el_scope *top = tds_top_scope(s);
  L->saved_b = top->b;
  L->saved_n = top->n;
  L->saved_cap = top->cap;
  L->saved_mods = s->prog->n_mods;
  L->begun = 1;
  L->arena = td_arena_new();
  L->slot_node = td_malloc((size_t)(s->n_slots + 1) * sizeof *L->slot_node);
  if (!L->arena || !L->slot_node || !el_graph_begin(s->prog, L->arena, "repl")) {
    tds_oom(s);
    return -1;
  }
  L->g = s->prog->g;
  for (int j = 0; j < s->n_slots; j++) L->slot_node[j] = -1;
  if (walk_session(s, L, W_ATTACH, NULL)) { tds_oom(s); return -1; }
  L->n_attach = L->g->n_nodes;
  L->attach = td_malloc((size_t)(L->n_attach + 1) * sizeof *L->attach);
  if (!L->attach) { tds_oom(s); return -1; }
  for (int j = 0; j < s->n_slots; j++)
    if (L->slot_node[j] >= 0) L->attach[L->slot_node[j]] = j;
  return s->diags.n_errors > L->before ? -1 : 0;
}

void tds_end_input(lowering *L) {
  if (L->params && L->own && L->run)
    for (int k = 0; k < L->run->n_params; k++)
      if (L->own[k]) td_tensor_release(L->params[k]);
  if (L->outs && L->run)
    for (int k = 0; k < L->run->n_outputs; k++) td_tensor_release(L->outs[k]);
  td_free(L->outs);
  td_free(L->params);
  td_free(L->own);
  td_free(L->attach);
  td_free(L->slot_node);
  td_free(L->jr);
  td_free(L->shown);
  td_free(L->need);
  td_free(L->out_of);
  td_free(L->remap);
  td_free(L->new_slot);
  td_free(L->orig);
  td_arena_free(L->arena);
}

static void add_shown(lowering *L, td_value v) {
  if (L->n_shown == L->cap_shown) {
    int cap = L->cap_shown ? 2 * L->cap_shown : 4;
    td_value *ns = td_realloc(L->shown, (size_t)cap * sizeof *ns);
    if (!ns) { L->oom = 1; return; }
    L->shown = ns;
    L->cap_shown = cap;
  }
  L->shown[L->n_shown++] = v;
}

/* Elaborates the items and statements of a REPL input in the session's
 * scope; expression statements' values are kept to be shown. */
static void exec_input(td_session *s, lowering *L, const td_ast *mod) {
  td_program *p = s->prog;
  el_scope *top = tds_top_scope(s);
  for (int i = 0; i < mod->n && !L->oom; i++) {
    const td_ast *e = mod->list[i];
    if (e->kind == TD_A_IMPORT || e->kind == TD_A_MODEL || e->kind == TD_A_FN) {
      if (el_bind_item(p, p->main, e, 1)) L->oom = 1;
    } else if (e->kind == TD_A_EXPRSTMT) {
      td_value v = el_eval(p, top, e->a);
      if (v.k != V_NONE && v.k != V_ERR) add_shown(L, v);
    } else {
      (void)el_eval(p, top, e);
    }
    if (p->ret) {
      td_diag *g = td_error(&s->diags, e->span, "`return` outside a function");
      td_diag_help(&s->diags, g, "to see a value, write the expression on its own line");
      p->ret = NULL;
    }
  }
  if (L->oom) tds_oom(s);
}

/* Marks the tensors of a shown value as needed. */
static void need_shown(lowering *L, const td_value *v) {
  if (v->k == V_TENSOR && v->node >= 0 && v->node < L->n) L->need[v->node] = 1;
  if (v->k == V_LIST || v->k == V_TUPLE)
    for (int i = 0; i < v->n; i++) need_shown(L, &v->items[i]);
}

/* Copies g without the attached leaves nobody reads into L->run. */
static int prune(lowering *L) {
  td_graph *g = L->g;
  unsigned char *used = td_calloc((size_t)L->n + 1, 1);
  td_graph *r = td_graph_new(L->arena, g->name);
  L->orig = td_malloc((size_t)(L->n + 1) * sizeof *L->orig);
  if (!used || !r || !L->orig) { td_free(used); return -1; }
  for (int i = 0; i < L->n; i++)
    for (int k = 0; k < g->nodes[i].n_in; k++) used[g->nodes[i].in[k]] = 1;
  for (int k = 0; k < g->n_outputs; k++) used[g->outputs[k]] = 1;
  r->syms = g->syms, r->n_syms = r->cap_syms = g->n_syms;   /* shared: sizes are the same */
  r->dims = g->dims, r->n_dims = r->cap_dims = g->n_dims;
  int rc = 0;
  for (int i = 0; i < L->n && !rc; i++) {
    const td_node *n = &g->nodes[i];
    L->remap[i] = -1;
    if (i < L->n_attach && !used[i]) continue;
    int in[64], *ins = n->n_in <= 64 ? in : td_malloc((size_t)n->n_in * sizeof *ins);
    if (!ins) { rc = -1; break; }
    for (int k = 0; k < n->n_in; k++) ins[k] = L->remap[n->in[k]];
    td_attr at = n->attr;
    if (n->op == TD_IR_INPUT) at.i = r->n_inputs;
    if (n->op == TD_IR_PARAM) at.i = r->n_params;
    int id = td_graph_add(r, n->op, n->dtype, n->rank, n->shape, ins, n->n_in, &at, n->span);
    if (ins != in) td_free(ins);
    if (id < 0) { rc = -1; break; }
    r->nodes[id].name = n->name;
    L->remap[i] = id;
    L->orig[id] = i;
  }
  for (int k = 0; k < g->n_outputs && !rc; k++) rc = td_graph_add_output(r, L->remap[g->outputs[k]]);
  td_free(used);
  L->run = r;
  return rc;
}

/* Chooses what to materialise (bind: the session's new bindings; always:
 * the shown values, and with show_leaves the shown attached leaves too, so
 * that a listing returns them), adds those outputs, prunes and verifies. */
int tds_finish_graph(td_session *s, lowering *L, int bind, int show_leaves) {
  td_graph *g = L->g;
  /* The session rebuilds each input's graph (prune) and keeps parameters
   * in its own slots; carrying an update into a slot is not built yet, and
   * dropping it silently would be worse than refusing. */
  if (g->n_updates) {
    td_diag *d = td_error(&s->diags, g->updates[0].span, "the REPL does not run assign() yet");
    td_diag_help(&s->diags, d, "run the step with `tdsl run FILE --entry M.step` (--save-weights keeps the "
                 "result) or train with `tdsl train FILE`");
    return -1;
  }
  L->n = g->n_nodes;
  size_t n = (size_t)L->n + 1;
  L->need = td_calloc(n, 1);
  L->out_of = td_malloc(n * sizeof *L->out_of);
  L->remap = td_malloc(n * sizeof *L->remap);
  L->new_slot = td_malloc(n * sizeof *L->new_slot);
  if (!L->need || !L->out_of || !L->remap || !L->new_slot) { tds_oom(s); return -1; }
  for (int i = 0; i < L->n; i++) L->out_of[i] = L->new_slot[i] = -1;
  if (bind && walk_session(s, L, W_COLLECT, NULL)) { tds_oom(s); return -1; }
  for (int k = 0; k < L->n_shown; k++) need_shown(L, &L->shown[k]);
  const td_host_file *sv;
  int n_sv = td_program_saves(s->prog, &sv);
  for (int k = 0; bind && k < n_sv; k++)   /* save()'s values, written by td_session_eval */
    if (sv[k].node >= 0 && sv[k].node < L->n) L->need[sv[k].node] = 1;
  for (int i = show_leaves ? 0 : L->n_attach; i < L->n; i++) {
    if (!L->need[i] || (g->nodes[i].op == TD_IR_PARAM && i >= L->n_attach)) continue;
    L->out_of[i] = g->n_outputs;
    if (td_graph_add_output(g, i)) { tds_oom(s); return -1; }
  }
  if (prune(L)) { tds_oom(s); return -1; }
  td_err err;
  if (td_graph_verify(L->run, &err)) {
    td_error(&s->diags, tds_no_span(), "internal compiler error: %s", err.msg);
    return -1;
  }
  return 0;
}

/* The parameters of the run: attached slots, and fresh ones initialised
 * from their recipes (through a view of the graph listing only those). */
int tds_make_params(td_session *s, lowering *L, td_err *err) {
  td_graph *r = L->run;
  int np = r->n_params, nf = 0;
  L->params = td_calloc((size_t)np + 1, sizeof *L->params);
  L->own = td_calloc((size_t)np + 1, 1);
  int *fresh = td_malloc((size_t)(np + 1) * sizeof *fresh);
  td_tensor **made = td_calloc((size_t)np + 1, sizeof *made);
  if (!L->params || !L->own || !fresh || !made) {
    td_free(L->params);
    td_free(L->own);
    L->params = NULL;
    L->own = NULL;
    td_free(fresh);
    td_free(made);
    return td_err_set(err, "out of memory");
  }
  for (int k = 0; k < np; k++) {
    int old = L->orig[r->params[k]];
    if (old < L->n_attach) L->params[k] = s->slots[L->attach[old]].t;
    else fresh[nf++] = r->params[k];
  }
  td_graph view = *r;
  view.params = fresh;
  view.n_params = nf;
  int rc = td_make_params(&view, NULL, s->o.seed, made, err);
  for (int k = 0, f = 0; rc == 0 && k < np; k++)
    if (L->orig[r->params[k]] >= L->n_attach) {
      L->params[k] = made[f++];
      L->own[k] = 1;
    }
  td_free(fresh);
  td_free(made);
  return rc;
}

/* print() output of a quiet run. */
static void ignore_print(void *ud, const char *text) {
  (void)ud;
  (void)text;
}

/* What a failed run leaves: an interrupt, or the error at its node. */
static void run_failed(td_session *s, const td_err *err, td_span sp) {
  if (s->o.interrupt && *s->o.interrupt)
    td_error(&s->diags, tds_no_span(), "interrupted: nothing of this input was kept");
  else
    td_error(&s->diags, sp, "%s", err->msg);
}

int tds_run_once(td_session *s, lowering *L, int quiet, td_prepared *prep) {
  td_graph *r = L->run;
  td_tensor **inputs = td_calloc((size_t)r->n_inputs + 1, sizeof *inputs);
  td_err err;
  td_span sp = tds_no_span();
  int rc = -1;
  unsigned char *own = td_calloc((size_t)r->n_inputs + 1, 1);
  if (!inputs || !own) { td_free(inputs); td_free(own); tds_oom(s); return -1; }
  const td_host_file *ld;
  int n_ld = td_program_loads(s->prog, &ld);
  for (int k = 0; k < r->n_inputs; k++) {
    int x = L->orig[r->inputs[k]];
    if (x < L->n_attach) {
      inputs[k] = s->slots[L->attach[x]].t;
      continue;
    }
    for (int j = 0; j < n_ld; j++)   /* a load(): its data, read now (lang/builtins_io.c) */
      if (ld[j].node == x) {
        own[k] = 1;
        if (!(inputs[k] = td_host_read(&ld[j], &L->g->nodes[x], &err))) {
          td_error(&s->diags, ld[j].span, "%s", err.msg);
          goto out;
        }
      }
  }
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = quiet || !s->o.on_print ? ignore_print : s->o.on_print;
  io.ud = s->o.ud;
  io.print_threshold = s->o.print_threshold;
  io.diags = &s->diags;
  io.interrupt = s->o.interrupt;
  if (L->outs) {
    for (int k = 0; k < r->n_outputs; k++) td_tensor_release(L->outs[k]);
    td_free(L->outs);
    L->outs = NULL;
  }
  td_drive_opts d = s->drive;
  d.diags = &s->diags;
  if (!L->params && tds_make_params(s, L, &err)) {
    td_error(&s->diags, tds_no_span(), "%s", err.msg);
  } else if (s->run ? s->run(s->run_ud, r, &s->diags, inputs, L->params, &io, &L->outs, &err, &sp)
             : prep ? td_prepared_run(prep, inputs, L->params, &io, &L->outs, &err, &sp)
                    : td_drive_run(r, &d, inputs, L->params, &io, &L->outs, &err, &sp)) {
    L->outs = NULL;
    run_failed(s, &err, sp);
  } else {
    rc = 0;
  }
out:
  for (int k = 0; k < r->n_inputs; k++)
    if (own[k]) td_tensor_release(inputs[k]);
  td_free(own);
  td_free(inputs);
  return rc;
}

/* Writes the files of the input's save()s, in program order; 0, or -1
 * with a diagnostic at the save() that failed. */
static int write_saves(td_session *s, lowering *L) {
  const td_host_file *sv;
  int n = td_program_saves(s->prog, &sv);
  for (int k = 0; k < n; k++) {
    td_tensor *t = tds_node_tensor(s, L, sv[k].node);
    td_err err;
    if (!t) {
      td_error(&s->diags, sv[k].span, "internal error: save()'s value was not computed");
      return -1;
    }
    if (td_host_write(&sv[k], t, &err)) {
      td_error(&s->diags, sv[k].span, "%s", err.msg);
      return -1;
    }
  }
  return 0;
}

/* The tensor of node x of g after the run (NULL when there is none). */
td_tensor *tds_node_tensor(td_session *s, lowering *L, int x) {
  if (x < 0 || x >= L->n) return NULL;
  if (x < L->n_attach) return s->slots[L->attach[x]].t;
  if (L->out_of[x] >= 0) return L->outs ? L->outs[L->out_of[x]] : NULL;
  int r = L->remap[x];
  if (r >= 0 && L->run->nodes[r].op == TD_IR_PARAM && L->params)
    return L->params[L->run->nodes[r].attr.i];
  return NULL;
}

/* Makes slots for the new values, detaches every value, frees the slots
 * that nothing refers to any more. */
static int commit(td_session *s, lowering *L) {
  for (int x = L->n_attach; x < L->n; x++) {
    if (!L->need[x]) continue;
    td_tensor *t = tds_node_tensor(s, L, x);
    if (t && (L->new_slot[x] = slot_new(s, t, &L->g->nodes[x])) < 0) { tds_oom(s); return -1; }
  }
  if (walk_session(s, L, W_DETACH, NULL)) { tds_oom(s); return -1; }
  L->n_jr = 0;
  unsigned char *mark = td_calloc((size_t)s->n_slots + 1, 1);
  if (!mark) return 0; /* only garbage stays around */
  if (walk_session(s, L, W_MARK, mark) == 0)
    for (int j = 0; j < s->n_slots; j++)
      if (!mark[j] && s->slots[j].t) {
        td_tensor_release(s->slots[j].t);
        s->slots[j].t = NULL;
      }
  td_free(mark);
  return 0;
}

/* ---- parsing --------------------------------------------------------------- */

/* Length of a leading REPL command word (":type ") of text, or 0. */
static size_t command_prefix(const char *text) {
  size_t n = strspn(text, " \t");
  if (text[n] != ':') return 0;
  return n + 1 + strcspn(text + n + 1, " \t\r\n");
}

int td_session_is_complete(td_session *s, const char *text) {
  td_arena *a = td_arena_new();
  if (!a) return 1;
  td_diags d;
  td_diags_init(&d, a);
  int incomplete = 0;
  int id = td_diags_add_source(&d, s->o.source_name, text, strlen(text));
  if (id >= 0) {
    memset((char *)td_diags_source(&d, id)->text, ' ', command_prefix(text));
    (void)td_parse_repl(&d, id, 1, &incomplete);
  }
  td_arena_free(a);
  return !incomplete;
}

/* Registers and parses an input; NULL after syntax errors.  A leading
 * command word is blanked while parsing and put back afterwards, so that
 * messages show the line as it was typed. */
static td_ast *parse_input(td_session *s, const char *text, int first_line) {
  int before = s->diags.n_errors;
  int id = td_diags_add_source(&s->diags, s->o.source_name, text, strlen(text));
  if (id < 0) { tds_oom(s); return NULL; }
  size_t skip = command_prefix(text);
  char *src = (char *)td_diags_source(&s->diags, id)->text; /* the registry's own copy */
  memset(src, ' ', skip);
  td_ast *mod = td_parse_repl(&s->diags, id, first_line, NULL);
  memcpy(src, text, skip);
  if (!mod && s->diags.n_errors == before) tds_oom(s);
  return s->diags.n_errors > before ? NULL : mod;
}

/* Parses and elaborates text; 0 when it is correct. */
int tds_lower_text(td_session *s, lowering *L, const char *text, int first_line) {
  memset(L, 0, sizeof *L);
  td_ast *mod = parse_input(s, text, first_line);
  if (!mod) return -1;
  if (begin_input(s, L)) return -1;
  exec_input(s, L, mod);
  return s->diags.n_errors > L->before ? -1 : 0;
}

/* ---- the public operations ------------------------------------------------ */

int td_session_eval(td_session *s, const char *text, int first_line) {
  lowering L;
  int rc = tds_lower_text(s, &L, text, first_line);
  if (rc == 0) rc = tds_finish_graph(s, &L, 1, 0);
  if (rc == 0 && L.run->n_nodes > 0) rc = tds_run_once(s, &L, 0, NULL);
  if (rc == 0) rc = write_saves(s, &L);
  char **texts = NULL;
  if (rc == 0 && s->o.on_value && !(texts = tds_value_texts(s, &L))) {
    tds_oom(s);
    rc = -1;
  }
  if (rc == 0) rc = commit(s, &L);
  if (rc == 0)
    for (int k = 0; texts && k < L.n_shown; k++) s->o.on_value(s->o.ud, texts[k]);
  else tds_rollback(s, &L);
  tds_free_texts(texts, L.n_shown);
  tds_end_input(&L);
  return rc;
}

static char *dir_of(td_session *s, const char *path) {
  const char *sl = strrchr(path, '/');
  if (!sl) return td_arena_strdup(s->arena, ".");
  return td_arena_strndup(s->arena, path, (size_t)(sl > path ? sl - path : 1));
}

/* Reads a whole text file (td_malloc'd); NULL with a diagnostic. */
static char *read_text(td_session *s, const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  td_strbuf b = {0};
  char buf[4096];
  size_t n;
  if (f) {
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) td_sb_add(&b, buf, n);
    if (ferror(f)) b.oom = 2;
    fclose(f);
  }
  if (!f || b.oom) {
    td_error(&s->diags, tds_no_span(), "cannot read %s: %s", path,
             !f || b.oom == 2 ? strerror(errno ? errno : EIO) : "out of memory");
    td_free(b.s);
    return NULL;
  }
  if (!b.s) td_sb_puts(&b, "");
  *len = b.len;
  if (b.s && memchr(b.s, 0, b.len)) {
    td_error(&s->diags, tds_no_span(), "%s is not a text file (it contains NUL bytes)", path);
    td_free(b.s);
    return NULL;
  }
  return b.s;
}

/* Parses a file and binds its items in the session (imports are searched
 * next to the file first). */
static int load_file(td_session *s, const char *path) {
  size_t len;
  char *text = read_text(s, path, &len);
  if (!text) return -1;
  int before = s->diags.n_errors;
  int id = td_diags_add_source(&s->diags, path, text, len);
  td_free(text);
  td_ast *mod = id >= 0 ? td_parse(&s->diags, id) : NULL;
  if (!mod || s->diags.n_errors > before) return -1;
  lowering L;
  el_module *m = s->prog->main;
  int rc = begin_input(s, &L);
  const char *dir = m->dir;
  m->dir = dir_of(s, path);
  for (int i = 0; rc == 0 && i < mod->n; i++)
    if (el_bind_item(s->prog, m, mod->list[i], 1)) rc = -1;   /* out of memory: no diagnostic yet */
  if (rc && s->diags.n_errors == L.before) tds_oom(s);
  m->dir = dir;
  if (rc == 0 && s->diags.n_errors > L.before) rc = -1;
  if (rc == 0) rc = tds_finish_graph(s, &L, 1, 0);
  if (rc == 0) rc = commit(s, &L);
  if (rc) tds_rollback(s, &L);
  tds_end_input(&L);
  return rc;
}

int td_session_load(td_session *s, const char *path) {
  if (load_file(s, path)) return -1;
  for (int i = 0; i < s->n_loaded; i++)
    if (!strcmp(s->loaded[i], path)) return 0;
  if (s->n_loaded == s->cap_loaded) {
    int cap = s->cap_loaded ? 2 * s->cap_loaded : 4;
    char **nl = td_realloc(s->loaded, (size_t)cap * sizeof *nl);
    if (!nl) return 0; /* loaded, just not remembered for :reload */
    s->loaded = nl;
    s->cap_loaded = cap;
  }
  char *copy = td_strdup(path);
  if (copy) s->loaded[s->n_loaded++] = copy;
  return 0;
}

int td_session_reload(td_session *s) {
  if (s->n_loaded == 0) {
    td_error(&s->diags, tds_no_span(), "nothing to reload: no file was loaded with :load");
    return -1;
  }
  int rc = 0;
  for (int i = 0; i < s->n_loaded; i++)
    if (load_file(s, s->loaded[i])) rc = -1;
  return rc;
}

/* The last shown value of an input, or NULL with a diagnostic. */
const td_value *tds_last_value(td_session *s, lowering *L, const char *what) {
  if (L->n_shown > 0) return &L->shown[L->n_shown - 1];
  td_error(&s->diags, tds_no_span(), "%s needs an expression", what);
  return NULL;
}

int td_session_tensor_count(const td_session *s) {
  int n = 0;
  for (int j = 0; j < s->n_slots; j++) n += s->slots[j].t != NULL;
  return n;
}


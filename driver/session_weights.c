/* session_weights.c - :load-weights and :save-weights: a model instance
 * bound in the session, and a safetensors file of its state_dict.
 *
 * An instance's parameters (and buffers) are session slots (session.c):
 * materialised tensors that every input attaches as PARAM leaves.  Loading
 * replaces the tensors of those slots, so every value bound to one of them
 * (`let w = m.weight`) sees the loaded values, as in PyTorch, where
 * load_state_dict copies into the parameters in place.  The names are the
 * state_dict paths relative to the instance (a sub-model `m.fc` given as
 * the instance has "weight", not "fc.weight"), checked as `tdsl run
 * --weights` checks them (runtime/weights.h, with its options).  Every
 * tensor is read, and converted, before any slot changes: a failed load
 * changes nothing.
 */
#include <string.h>

#include "driver/session_impl.h"
#include "runtime/weights.h"

/* The parameter slots of an instance, each once, in the order its scope
 * (and its sub-models' scopes) binds them. */
typedef struct pslots {
  int *j;
  int n, cap;
  const void **seen;       /* instances visited */
  int n_seen, cap_seen;
  int oom;
} pslots;

static void push_slot(pslots *p, int j) {
  for (int k = 0; k < p->n; k++)
    if (p->j[k] == j) return;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 16;
    int *nj = td_realloc(p->j, (size_t)cap * sizeof *nj);
    if (!nj) { p->oom = 1; return; }
    p->j = nj;
    p->cap = cap;
  }
  p->j[p->n++] = j;
}

static int visit_inst(pslots *p, const el_inst *in) {
  for (int k = 0; k < p->n_seen; k++)
    if (p->seen[k] == in) return 0;
  if (p->n_seen == p->cap_seen) {
    int cap = p->cap_seen ? 2 * p->cap_seen : 16;
    const void **ns = td_realloc(p->seen, (size_t)cap * sizeof *ns);
    if (!ns) { p->oom = 1; return 0; }
    p->seen = ns;
    p->cap_seen = cap;
  }
  p->seen[p->n_seen++] = in;
  return 1;
}

static void collect(td_session *s, pslots *p, const td_value *v);

static void collect_scope(td_session *s, pslots *p, const el_scope *sc) {
  for (int i = 0; i < sc->n && !p->oom; i++) collect(s, p, &sc->b[i].v);
}

static void collect(td_session *s, pslots *p, const td_value *v) {
  switch (v->k) {
  case V_TENSOR: {
    int j = -1 - v->node;
    if (v->node < 0 && j < s->n_slots && s->slots[j].t && s->slots[j].is_param) push_slot(p, j);
    break;
  }
  case V_LIST: case V_TUPLE:
    for (int i = 0; i < v->n && !p->oom; i++) collect(s, p, &v->items[i]);
    break;
  case V_MODEL:
    if (visit_inst(p, v->inst)) collect_scope(s, p, v->inst->env);
    break;
  default:
    break;
  }
}

/* The instance bound to `name`, its parameter slots into *p; NULL with a
 * diagnostic. */
static const el_inst *instance(td_session *s, const char *name, pslots *p, const char *cmd) {
  memset(p, 0, sizeof *p);
  const td_value *v = el_lookup(tds_top_scope(s), name);
  if (!v || v->k != V_MODEL) {
    td_diag *d = td_error(&s->diags, tds_no_span(), v ? "%s: '%s' is %s, not a model instance"
                          : "%s: no model instance named '%s' in the session", cmd, name,
                          v ? el_kind_name(v) : "");
    td_diag_help(&s->diags, d, "%s FILE.safetensors NAME, after e.g. `let NAME = nn.Linear(16, 2)`", cmd);
    return NULL;
  }
  collect_scope(s, p, v->inst->env);
  if (p->oom) { tds_oom(s); return NULL; }
  return v->inst;
}

static void pslots_free(pslots *p) {
  td_free(p->j);
  td_free(p->seen);
}

/* A slot's name relative to the instance (its state_dict name there). */
static const char *rel_name(const el_inst *in, const char *name) {
  size_t n = strlen(in->prefix);
  return strncmp(name, in->prefix, n) ? name : name + n;
}

int td_session_load_weights(td_session *s, const char *name, const char *path, const td_weights_opts *o,
                            char **note) {
  *note = NULL;
  pslots p;
  const el_inst *in = instance(s, name, &p, ":load-weights");
  if (!in) { pslots_free(&p); return -1; }
  td_sig_arg *args = td_calloc((size_t)p.n + 1, sizeof *args);
  td_dim (*shapes)[TD_MAX_RANK] = td_calloc((size_t)p.n + 1, sizeof *shapes);
  int *src = td_calloc((size_t)p.n + 1, sizeof *src);
  td_tensor **fresh = td_calloc((size_t)p.n + 1, sizeof *fresh);
  td_st_file f;
  td_err err;
  int rc = -1, open = 0;
  if (!args || !shapes || !src || !fresh) {
    tds_oom(s);
    goto done;
  }
  for (int k = 0; k < p.n; k++) {
    const slot *sl = &s->slots[p.j[k]];
    for (int d = 0; d < sl->t->rank; d++) shapes[k][d] = sl->t->shape[d];
    args[k] = (td_sig_arg){rel_name(in, sl->name), sl->t->dtype, sl->t->rank, shapes[k]};
  }
  if (td_safetensors_open(path, &f, &err)) {
    td_error(&s->diags, tds_no_span(), "%s", err.msg);
    goto done;
  }
  open = 1;
  if (td_weights_match(path, name, args, p.n, &f, o, src, note, &err)) {
    td_error(&s->diags, tds_no_span(), "%s", err.msg);
    goto done;
  }
  for (int k = 0; k < p.n; k++)
    if (src[k] >= 0 && !(fresh[k] = td_weights_load(&f, src[k], args[k].dtype, &err))) {
      td_error(&s->diags, tds_no_span(), "%s", err.msg);
      goto done;
    }
  for (int k = 0; k < p.n; k++)   /* all read: now swap them in */
    if (fresh[k]) {
      td_tensor_release(s->slots[p.j[k]].t);
      s->slots[p.j[k]].t = fresh[k];
      fresh[k] = NULL;
    }
  rc = 0;
done:
  if (open) td_safetensors_close(&f);
  for (int k = 0; fresh && k < p.n; k++) td_tensor_release(fresh[k]);
  if (rc) {
    td_free(*note);
    *note = NULL;
  }
  td_free(fresh);
  td_free(src);
  td_free(shapes);
  td_free(args);
  pslots_free(&p);
  return rc;
}

int td_session_save_weights(td_session *s, const char *name, const char *path, int *count) {
  pslots p;
  const el_inst *in = instance(s, name, &p, ":save-weights");
  if (!in) { pslots_free(&p); return -1; }
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err err;
  int rc = 0;
  for (int k = 0; k < p.n && !rc; k++) {
    const slot *sl = &s->slots[p.j[k]];
    if (!td_tensor_map_get(&m, rel_name(in, sl->name))) rc = td_tensor_map_put(&m, rel_name(in, sl->name), sl->t, &err);
  }
  if (!rc) rc = td_safetensors_write(path, &m, &err);
  if (rc) td_error(&s->diags, tds_no_span(), "%s", err.msg);
  *count = m.n;
  td_tensor_map_free(&m);
  pslots_free(&p);
  return rc;
}

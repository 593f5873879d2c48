/* model_args.c - a model's parameters given on the command line.
 *
 * An entry point "Model.method" is elaborated on an instance of Model made
 * with its default parameters (program.c, lower).  `--param T=5` (any
 * command that elaborates a file) and `--entry 'Net(T=5).forward'` give
 * some of them: each entry's model is made with the given parameters it
 * declares, as keyword arguments, so their type annotations and defaults
 * apply as in `Net(T = 5)` written in the source.  A value is an integer,
 * a float, true/false or else a string.  A name that no model of the main
 * file declares is an error with a "did you mean" (td_program_check_model_args).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lang/elab_impl.h"
#include "runtime/weights.h"   /* td_edit_distance */

int td_program_add_model_arg(td_program *p, const char *name, const char *value) {
  if (p->n_margs == p->cap_margs) {
    int cap = p->cap_margs ? 2 * p->cap_margs : 8;
    const char **nn = td_arena_alloc(p->arena, (size_t)cap * sizeof *nn);
    const char **nv = td_arena_alloc(p->arena, (size_t)cap * sizeof *nv);
    if (!nn || !nv) return -1;
    if (p->n_margs) {
      memcpy(nn, p->marg_names, (size_t)p->n_margs * sizeof *nn);
      memcpy(nv, p->marg_vals, (size_t)p->n_margs * sizeof *nv);
    }
    p->marg_names = nn;
    p->marg_vals = nv;
    p->cap_margs = cap;
  }
  const char *n = td_arena_strdup(p->arena, name), *v = td_arena_strdup(p->arena, value);
  if (!n || !v) return -1;
  for (int i = 0; i < p->n_margs; i++)   /* given again: the last one counts */
    if (!strcmp(p->marg_names[i], n)) {
      p->marg_vals[i] = v;
      return 0;
    }
  p->marg_names[p->n_margs] = n;
  p->marg_vals[p->n_margs++] = v;
  return 0;
}

int td_program_entry_spec(td_program *p, const char *spec, const char **entry, char *why, size_t why_n) {
  const char *open = strchr(spec, '(');
  const char *dot = strchr(spec, '.');
  *entry = spec;
  if (!open || (dot && dot < open)) return 0;
  const char *close = strchr(open, ')');
  if (open == spec || !close || close[1] != '.' || !close[2]) {
    snprintf(why, why_n, "--entry '%s': write Model(NAME=VALUE, ...).method, e.g. Net(T=5).forward", spec);
    return -1;
  }
  char *e = td_arena_printf(p->arena, "%.*s%s", (int)(open - spec), spec, close + 1);
  if (!e) { snprintf(why, why_n, "out of memory"); return -1; }
  for (const char *a = open + 1; a < close;) {
    while (a < close && (*a == ' ' || *a == ',')) a++;
    if (a == close) break;
    const char *end = a;
    while (end < close && *end != ',') end++;
    const char *eq = memchr(a, '=', (size_t)(end - a));
    if (!eq || eq == a) {
      snprintf(why, why_n, "--entry '%s': '%.*s' is not NAME=VALUE", spec, (int)(end - a), a);
      return -1;
    }
    const char *ne = eq;
    while (ne > a && ne[-1] == ' ') ne--;
    const char *v = eq + 1, *ve = end;
    while (v < ve && *v == ' ') v++;
    while (ve > v && ve[-1] == ' ') ve--;
    char *name = td_arena_printf(p->arena, "%.*s", (int)(ne - a), a);
    char *val = td_arena_printf(p->arena, "%.*s", (int)(ve - v), v);
    if (!name || !val || td_program_add_model_arg(p, name, val)) { snprintf(why, why_n, "out of memory"); return -1; }
    a = end;
  }
  *entry = e;
  return 0;
}

/* The value of a command-line string: int, float, bool or string. */
static td_value parse_value(const char *s, td_span sp) {
  char *end;
  if (*s) {
    long long i = strtoll(s, &end, 10);
    if (!*end) return el_int(i, sp);
    double f = strtod(s, &end);
    if (!*end) return el_float(f, sp);
  }
  if (!strcmp(s, "true") || !strcmp(s, "false")) return el_bool(s[0] == 't', sp);
  td_value v = el_none(sp);
  v.k = V_STR;
  v.s = s;
  return v;
}

static int declares(const td_ast *model, const char *name) {
  for (int k = 0; k < model->n; k++)
    if (model->list[k]->name && !strcmp(model->list[k]->name, name)) return 1;
  return 0;
}

int el_entry_model_args(el_ctx *c, const td_ast *model, td_value **args, const char ***kw) {
  *args = NULL;
  *kw = NULL;
  if (!c->n_margs) return 0;
  *args = td_arena_alloc(c->arena, (size_t)c->n_margs * sizeof **args);
  *kw = td_arena_alloc(c->arena, (size_t)c->n_margs * sizeof **kw);
  if (!*args || !*kw) return -1;
  int n = 0;
  for (int i = 0; i < c->n_margs; i++)
    if (declares(model, c->marg_names[i])) {
      (*args)[n] = parse_value(c->marg_vals[i], model->span);
      (*kw)[n++] = c->marg_names[i];
    }
  return n;
}

int td_program_check_model_args(td_program *p) {
  td_span none = {-1, 0, 0, 0, 0};
  int bad = 0;
  const td_ast *mod = p->main ? p->main->ast : NULL;
  for (int i = 0; mod && i < p->n_margs; i++) {
    const char *name = p->marg_names[i], *best = NULL;
    int found = 0, best_d = 0;
    char list[512];
    size_t w = 0;
    list[0] = 0;
    for (int j = 0; j < mod->n && !found; j++) {
      const td_ast *m = mod->list[j];
      if (m->kind != TD_A_MODEL) continue;
      for (int k = 0; k < m->n; k++) {
        const char *pn = m->list[k]->name;
        if (!pn) continue;
        if (!strcmp(pn, name)) { found = 1; break; }
        if (w < sizeof list) w += (size_t)snprintf(list + w, sizeof list - w, "%s%s(%s)", w ? ", " : "", m->name, pn);
        int d = td_edit_distance(pn, name);
        if (!strcasecmp(pn, name)) d = 0;   /* t for T */
        if ((d == 0 || 3 * d <= (int)strlen(name)) && (!best || d < best_d)) {
          best = pn;
          best_d = d;
        }
      }
    }
    if (found) continue;
    bad++;
    td_diag *g = td_error(p->diags, none, "--param %s: no model of %s has a parameter named '%s'", name,
                          p->main->path, name);
    if (best) td_diag_help(p->diags, g, "did you mean '%s'?", best);
    else if (w) td_diag_help(p->diags, g, "the models' parameters: %s", list);
    else td_diag_help(p->diags, g, "%s declares no model with parameters (model Net(T: int = 8) { ... })",
                      p->main->path);
  }
  return bad;
}

/* session_show.c - the text of the session's values.
 *
 * What an expression statement shows ("[1, 2] (i64[2])", "3 (int)", a
 * model instance with its members), and the answer of :type, which names
 * kinds instead of values ("int", "f32[4, 16]", "fn softmax(x, axis = -1)").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/session_impl.h"


/* Appends text, indenting every line after the first by `indent` blanks
 * (so a multi-line array stays aligned after a prefix). */
static void sb_indented(td_strbuf *b, const char *text, int indent) {
  for (const char *p = text; *p; p++) {
    td_sb_add(b, p, 1);
    if (*p == '\n' && p[1] && p[1] != '\n')
      for (int i = 0; i < indent; i++) td_sb_add(b, " ", 1);
  }
}

/* ---- showing values ---------------------------------------------------------- */

/* The shortest text that reads back as f, like Python's repr: "10.0",
 * "0.1", "1e-05", "1e+20". */
static void fmt_float(double f, char *buf, size_t n) {
  if (isnan(f)) { snprintf(buf, n, "nan"); return; }
  if (isinf(f)) { snprintf(buf, n, f < 0 ? "-inf" : "inf"); return; }
  int fixed = f == 0 || (fabs(f) >= 1e-4 && fabs(f) < 1e16);
  for (int prec = fixed; prec <= 17; prec++) {
    snprintf(buf, n, fixed ? "%.*f" : "%.*g", prec, f);
    if (strtod(buf, NULL) == f) break;
  }
  if (!strpbrk(buf, ".en")) strncat(buf, ".0", n - strlen(buf) - 1);
}

/* "(x, axis = -1)" from the parameter declarations of an item. */
static void signature(td_session *s, const td_ast *decl, td_strbuf *b) {
  td_sb_puts(b, "(");
  for (int i = 0; i < decl->n; i++)
    td_sb_printf(b, "%s%s", i ? ", " : "", td_span_text(&s->diags, decl->list[i]->span));
  td_sb_puts(b, ")");
  if (decl->kind == TD_A_FN && decl->a) td_sb_printf(b, " -> %s", td_span_text(&s->diags, decl->a->span));
}

static void type_of(td_session *s, lowering *L, const td_value *v, td_strbuf *b);

/* The shape of a tensor value, attached or detached. */
static void tensor_type(td_session *s, lowering *L, const td_value *v, td_strbuf *b) {
  char t[256];
  if (v->node < 0) {
    int j = -1 - v->node;
    const td_tensor *x = j < s->n_slots ? s->slots[j].t : NULL;
    td_sb_puts(b, x ? td_shape_str(x->dtype, x->rank, x->shape, t, sizeof t) : "tensor");
  } else {
    const td_node *n = &L->g->nodes[v->node];
    td_sb_puts(b, td_type_str(L->g, n->dtype, n->rank, n->shape, t, sizeof t));
  }
}

/* "Linear(in = 4, out = 2, has_bias = true)": a model instance and the
 * values of its model parameters. */
static void instance_name(td_session *s, lowering *L, const el_inst *in, td_strbuf *b) {
  const td_ast *d = in->def;
  td_sb_printf(b, "%s(", d->name);
  for (int i = 0; i < d->n && i < in->env->n; i++) {
    td_sb_printf(b, "%s%s = ", i ? ", " : "", in->env->b[i].name);
    type_of(s, L, &in->env->b[i].v, b);
  }
  td_sb_puts(b, ")");
}

/* One-line description of v: its type, or its value when it is a
 * compile-time scalar (used inside model and list descriptions). */
static void type_of(td_session *s, lowering *L, const td_value *v, td_strbuf *b) {
  char f[64];
  switch (v->k) {
  case V_TENSOR: tensor_type(s, L, v, b); break;
  case V_INT: td_sb_printf(b, "%lld", (long long)v->i); break;
  case V_FLOAT: fmt_float(v->f, f, sizeof f); td_sb_puts(b, f); break;
  case V_BOOL: td_sb_puts(b, v->i ? "true" : "false"); break;
  case V_STR: td_sb_printf(b, "\"%s\"", v->s); break;
  case V_LIST: case V_TUPLE:
    td_sb_puts(b, v->k == V_LIST ? "[" : "(");
    for (int i = 0; i < v->n && !b->oom; i++) {
      if (i) td_sb_puts(b, ", ");
      type_of(s, L, &v->items[i], b);
    }
    td_sb_puts(b, v->k == V_LIST ? "]" : v->n == 1 ? ",)" : ")");
    break;
  case V_MODEL: instance_name(s, L, v->inst, b); break;
  case V_MODELDEF: td_sb_printf(b, "model %s", v->def->name); signature(s, v->def, b); break;
  case V_FUNC:
    td_sb_printf(b, "fn %s%s%s", v->inst ? v->inst->def->name : "", v->inst ? "." : "", v->def->name);
    signature(s, v->def, b);
    break;
  case V_MODULE: td_sb_printf(b, "module %s", v->mod->name); break;
  case V_BUILTIN: td_sb_printf(b, "built-in %s", el_builtin_name((int)v->i)); break;
  default: td_sb_puts(b, el_kind_name(v)); break;
  }
}

/* The :type answer: like type_of, but scalars give their kind. */
void tds_type_answer(td_session *s, lowering *L, const td_value *v, td_strbuf *b) {
  switch (v->k) {
  case V_INT: td_sb_puts(b, "int"); break;
  case V_FLOAT: td_sb_puts(b, "float"); break;
  case V_BOOL: td_sb_puts(b, "bool"); break;
  case V_STR: td_sb_puts(b, "str"); break;
  case V_LIST: case V_TUPLE:
    td_sb_puts(b, v->k == V_LIST ? "[" : "(");
    for (int i = 0; i < v->n && !b->oom; i++) {
      if (i) td_sb_puts(b, ", ");
      tds_type_answer(s, L, &v->items[i], b);
    }
    td_sb_puts(b, v->k == V_LIST ? "]" : v->n == 1 ? ",)" : ")");
    break;
  case V_MODEL: td_sb_puts(b, "model instance "); type_of(s, L, v, b); break;
  default: type_of(s, L, v, b); break;
  }
}

/* "<Linear(in = 4, out = 2, has_bias = true): weight f32[2, 4], bias f32[2]>" */
static void show_instance(td_session *s, lowering *L, const el_inst *in, td_strbuf *b) {
  td_sb_puts(b, "<");
  instance_name(s, L, in, b);
  int shown = 0;
  for (int i = in->def->n; i < in->env->n; i++) {
    const el_binding *m = &in->env->b[i];
    if (m->v.k == V_FUNC || m->v.k == V_NONE) continue;
    if (shown == 8) { td_sb_puts(b, ", ..."); break; }
    td_sb_printf(b, "%s%s ", shown++ ? ", " : ": ", m->name);
    if (m->v.k == V_MODEL) td_sb_puts(b, m->v.inst->def->name);
    else if (m->v.k == V_LIST && m->v.n && m->v.items[0].k == V_MODEL)
      td_sb_printf(b, "[%d x %s]", m->v.n, m->v.items[0].inst->def->name);
    else type_of(s, L, &m->v, b);
  }
  td_sb_puts(b, ">");
}

static int is_scalar(const td_value *v) {
  return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL || v->k == V_STR;
}

/* The text of a shown value: "[1, 2] (i64[2])", "3 (int)", ... */
static void show_value(td_session *s, lowering *L, const td_value *v, td_strbuf *b) {
  static const char *kinds[] = {[V_INT] = "int", [V_FLOAT] = "float", [V_BOOL] = "bool", [V_STR] = "str"};
  if (v->k == V_TENSOR) {
    const td_tensor *t = v->node < 0 ? s->slots[-1 - v->node].t : tds_node_tensor(s, L, v->node);
    char *text = t ? td_tensor_format(t, s->o.print_threshold) : NULL;
    if (t && !text) b->oom = 1;
    td_sb_puts(b, text ? text : "(no value)");
    td_free(text);
    td_sb_puts(b, " (");
    tensor_type(s, L, v, b);
    td_sb_puts(b, ")");
  } else if (is_scalar(v)) {
    type_of(s, L, v, b);
    td_sb_printf(b, " (%s)", kinds[v->k]);
  } else if (v->k == V_LIST || v->k == V_TUPLE) {
    int all = 1;
    for (int i = 0; i < v->n; i++) all &= is_scalar(&v->items[i]);
    if (all) {
      type_of(s, L, v, b);
      td_sb_puts(b, v->k == V_LIST ? " (list)" : " (tuple)");
      return;
    }
    td_sb_printf(b, "%s of %d:", v->k == V_LIST ? "list" : "tuple", v->n);
    for (int i = 0; i < v->n && !b->oom; i++) {
      td_strbuf item = {0};
      char pre[32];
      int w = snprintf(pre, sizeof pre, "\n[%d] ", i);
      show_value(s, L, &v->items[i], &item);
      td_sb_puts(b, pre);
      sb_indented(b, item.s ? item.s : "", w - 1);
      b->oom |= item.oom;
      td_free(item.s);
    }
  } else if (v->k == V_MODEL) {
    show_instance(s, L, v->inst, b);
  } else {
    td_sb_puts(b, "<");
    type_of(s, L, v, b);
    td_sb_puts(b, ">");
  }
}

void tds_free_texts(char **t, int n) {
  for (int k = 0; t && k < n; k++) td_free(t[k]);
  td_free(t);
}

/* The texts of the values the input shows, made before its commit so that
 * an input whose values cannot be shown binds nothing; NULL when memory
 * runs out. */
char **tds_value_texts(td_session *s, lowering *L) {
  char **t = td_calloc((size_t)L->n_shown + 1, sizeof *t);
  for (int k = 0; t && k < L->n_shown; k++) {
    td_strbuf b = {0};
    show_value(s, L, &L->shown[k], &b);
    if (b.oom || !b.s) {
      td_free(b.s);
      tds_free_texts(t, k);
      return NULL;
    }
    t[k] = b.s;
  }
  return t;
}

/* ---- :type ---------------------------------------------------------------- */

int td_session_type(td_session *s, const char *text, int first_line, char **out) {
  lowering L;
  *out = NULL;
  int rc = tds_lower_text(s, &L, text, first_line);
  const td_value *v = rc == 0 ? tds_last_value(s, &L, ":type") : NULL;
  if (v) {
    td_strbuf b = {0};
    tds_type_answer(s, &L, v, &b);
    if (b.oom) { td_free(b.s); tds_oom(s); rc = -1; }
    else *out = b.s;
  } else {
    rc = -1;
  }
  tds_rollback(s, &L);
  tds_end_input(&L);
  return rc;
}


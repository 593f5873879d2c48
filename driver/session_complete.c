/* session_complete.c - tab completion over the session's names.
 *
 * Names bound in the session, built-ins and keywords; after "mod." or "m."
 * the items of a module or the members of a model instance; after a
 * tensor's name its fields.
 */
#include <stdio.h>
#include <string.h>

#include "driver/session_impl.h"

static const char *const keywords[] = {"model", "fn", "export", "param", "let", "import", "for",
                                       "in", "if", "else", "while", "return", "and", "or", "not",
                                       "true", "false"};

static int starts(const char *name, const char *prefix) {
  return !strncmp(name, prefix, strlen(prefix));
}

/* The value that a dotted path ("nn", "m.fc") names in the session. */
static const td_value *resolve_path(td_session *s, const char *path) {
  char part[256];
  const td_value *v = NULL;
  for (const char *p = path; *p;) {
    size_t n = strcspn(p, ".");
    if (n == 0 || n >= sizeof part) return NULL;
    memcpy(part, p, n);
    part[n] = 0;
    el_scope *sc = !v ? tds_top_scope(s) : v->k == V_MODULE ? v->mod->globals
                                      : v->k == V_MODEL ? v->inst->env : NULL;
    if (!sc) return NULL;
    v = NULL;
    for (int i = 0; i < sc->n; i++)
      if (!strcmp(sc->b[i].name, part)) v = &sc->b[i].v;
    if (!v) return NULL;
    p += n + (p[n] == '.');
  }
  return v;
}

static void complete_scope(el_scope *sc, const char *head, const char *prefix,
                           void (*add)(void *, const char *), void *ud) {
  char buf[512];
  for (int i = 0; i < sc->n; i++) {
    if (!starts(sc->b[i].name, prefix)) continue;
    snprintf(buf, sizeof buf, "%s%s%s", head, *head ? "." : "", sc->b[i].name);
    add(ud, buf);
  }
}

void td_session_complete(td_session *s, const char *prefix,
                         void (*add)(void *ud, const char *name), void *ud) {
  const char *dot = strrchr(prefix, '.');
  if (dot) {
    char head[256];
    size_t n = (size_t)(dot - prefix);
    if (n >= sizeof head) return;
    memcpy(head, prefix, n);
    head[n] = 0;
    const td_value *v = resolve_path(s, head);
    if (v && v->k == V_MODULE) complete_scope(v->mod->globals, head, dot + 1, add, ud);
    if (v && v->k == V_MODEL) complete_scope(v->inst->env, head, dot + 1, add, ud);
    if (v && v->k == V_TENSOR) {
      static const char *const fields[] = {"T", "shape", "ndim"};
      char buf[512];
      for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (starts(fields[i], dot + 1)) {
          snprintf(buf, sizeof buf, "%s.%s", head, fields[i]);
          add(ud, buf);
        }
    }
    return;
  }
  complete_scope(tds_top_scope(s), "", prefix, add, ud);
  for (int i = 0; i < el_builtin_count(); i++)
    if (starts(el_builtin_name(i), prefix)) add(ud, el_builtin_name(i));
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
    if (starts(keywords[i], prefix)) add(ud, keywords[i]);
}


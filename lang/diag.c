/* diag.c - source registry, diagnostics and their caret rendering.
 *
 * Diagnostics are collected, never printed here (cli/ calls td_diag_render).
 * Rendering shows the first line of the span with a caret under its first
 * character and tildes under the rest of it on that line, like gcc/clang.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lang/diag.h"

void td_diags_init(td_diags *d, td_arena *a) {
  memset(d, 0, sizeof *d);
  d->arena = a;
  d->max_errors = 20;
  d->arena_failures = td_arena_failures(a);
}

void td_diags_clear(td_diags *d) {
  d->n = d->n_errors = d->n_hidden = d->oom = d->oom_said = 0;
  d->arena_failures = td_arena_failures(d->arena);
}

int td_diags_out_of_memory(const td_diags *d) {
  return d->oom || td_arena_failures(d->arena) > d->arena_failures;
}

int td_diags_add_source(td_diags *d, const char *path, const char *text, size_t len) {
  if (d->n_files == d->cap_files) {
    int cap = d->cap_files ? 2 * d->cap_files : 8;
    td_source **f = td_arena_alloc(d->arena, (size_t)cap * sizeof *f);
    if (!f) return -1;
    if (d->n_files) memcpy(f, d->files, (size_t)d->n_files * sizeof *f);
    d->files = f;
    d->cap_files = cap;
  }
  td_source *s = td_arena_alloc(d->arena, sizeof *s);
  char *copy = td_arena_alloc(d->arena, len + 1); /* zeroed: NUL-terminated */
  char *p = td_arena_strdup(d->arena, path);
  if (!s || !copy || !p) return -1;
  memcpy(copy, text, len); /* all of it, embedded NULs included: the lexer reports them */
  s->path = p;
  s->text = copy;
  s->len = len;
  s->id = d->n_files;
  d->files[d->n_files] = s;
  return d->n_files++;
}

const td_source *td_diags_source(const td_diags *d, int id) {
  if (id < 0 || id >= d->n_files) return NULL;
  return d->files[id];
}

/* Keeps a diagnostic; NULL (and d->oom set) when there is no room. */
static td_diag *keep(td_diags *d, td_severity sev, td_span sp, const char *msg) {
  if (d->n == d->cap) {
    int cap = d->cap ? 2 * d->cap : 16;
    td_diag *items = td_arena_alloc(d->arena, (size_t)cap * sizeof *items);
    if (!items) return d->oom = 1, NULL;
    if (d->n) memcpy(items, d->items, (size_t)d->n * sizeof *items);
    d->items = items;
    d->cap = cap;
  }
  td_diag *g = &d->items[d->n];
  memset(g, 0, sizeof *g);
  g->sev = sev;
  g->span = sp;
  g->msg = td_arena_strdup(d->arena, msg);
  if (!g->msg) return d->oom = 1, NULL;
  d->n++;
  return g;
}

static td_diag *add(td_diags *d, td_severity sev, td_span sp, const char *fmt, va_list ap) {
  if (sev == TD_SEV_ERROR) d->n_errors++;
  if (td_diags_out_of_memory(d)) return NULL;  /* perhaps a consequence of it */
  if (sev == TD_SEV_ERROR && d->max_errors > 0 && d->n_errors > d->max_errors) return d->n_hidden++, NULL;
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return keep(d, sev, sp, buf);
}

void td_diags_oom(td_diags *d, td_span sp) {
  d->n_errors++;
  if (!d->oom_said && keep(d, TD_SEV_ERROR, sp, "out of memory")) d->oom_said = 1;
  d->oom = 1;
}

td_diag *td_error(td_diags *d, td_span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  td_diag *g = add(d, TD_SEV_ERROR, sp, fmt, ap);
  va_end(ap);
  return g;
}

td_diag *td_warning(td_diags *d, td_span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  td_diag *g = add(d, TD_SEV_WARNING, sp, fmt, ap);
  va_end(ap);
  return g;
}

void td_diag_help(td_diags *d, td_diag *g, const char *fmt, ...) {
  if (!g) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g->help = td_arena_strdup(d->arena, buf);
}

void td_diag_note(td_diags *d, td_diag *g, td_span sp, const char *fmt, ...) {
  if (!g || g->n_notes >= (int)(sizeof g->notes / sizeof g->notes[0])) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  td_note *n = &g->notes[g->n_notes];
  n->span = sp;
  n->msg = td_arena_strdup(d->arena, buf);
  if (n->msg) g->n_notes++;
}

td_span td_span_join(td_span a, td_span b) {
  if (a.file < 0) return b;
  if (b.file < 0 || b.file != a.file) return a;
  td_span r = a.start <= b.start ? a : b;
  r.end = a.end > b.end ? a.end : b.end;
  return r;
}

const char *td_span_text(td_diags *d, td_span sp) {
  const td_source *s = td_diags_source(d, sp.file);
  if (!s || sp.start < 0 || sp.end > (int)s->len || sp.end < sp.start) return "";
  const char *t = td_arena_strndup(d->arena, s->text + sp.start, (size_t)(sp.end - sp.start));
  return t ? t : "";
}

/* ---- rendering ---- */

static const char *sev_name(td_severity s) {
  return s == TD_SEV_ERROR ? "error" : s == TD_SEV_WARNING ? "warning" : "note";
}

static const char *sev_color(td_severity s) {
  return s == TD_SEV_ERROR ? "\033[1;31m" : s == TD_SEV_WARNING ? "\033[1;35m" : "\033[1;36m";
}

/* Prints the source line of sp with a caret underline below it. */
static void render_snippet(const td_source *s, td_span sp, FILE *out, int color) {
  if (!s || sp.start < 0 || sp.start > (int)s->len) return;
  int ls = sp.start;
  while (ls > 0 && s->text[ls - 1] != '\n') ls--;
  int le = sp.start;
  while (le < (int)s->len && s->text[le] != '\n') le++;
  int end = sp.end > le ? le : sp.end;
  if (end <= sp.start) end = sp.start + 1;
  /* very long lines: show a window around the span */
  if (sp.start - ls > 120) ls = sp.start - 60;
  if (le - ls > 240) le = ls + 240 > end ? ls + 240 : end;
  if (end > le) end = le;
  fprintf(out, "%5d | ", sp.line);
  for (int i = ls; i < le; i++) fputc(s->text[i] == '\t' ? ' ' : s->text[i], out);
  fprintf(out, "\n      | ");
  for (int i = ls; i < sp.start; i++) fputc(' ', out);
  if (color) fputs("\033[1;32m", out);
  fputc('^', out);
  for (int i = sp.start + 1; i < end; i++) fputc('~', out);
  if (color) fputs("\033[0m", out);
  fputc('\n', out);
}

static void render_loc(const td_diags *d, td_span sp, FILE *out, int color) {
  const td_source *s = td_diags_source(d, sp.file);
  if (color) fputs("\033[1m", out);
  if (s) fprintf(out, "%s:%d:%d: ", s->path, sp.line, sp.col);
  else fputs("tdsl: ", out);
  if (color) fputs("\033[0m", out);
}

static void render_one(const td_diags *d, const td_diag *g, FILE *out, int color) {
  render_loc(d, g->span, out, color);
  if (color) fputs(sev_color(g->sev), out);
  fprintf(out, "%s:", sev_name(g->sev));
  if (color) fputs("\033[0m\033[1m", out);
  fprintf(out, " %s\n", g->msg);
  if (color) fputs("\033[0m", out);
  render_snippet(td_diags_source(d, g->span.file), g->span, out, color);
  for (int k = 0; k < g->n_notes; k++) {
    const td_note *n = &g->notes[k];
    render_loc(d, n->span, out, color);
    fprintf(out, "note: %s\n", n->msg);
    render_snippet(td_diags_source(d, n->span.file), n->span, out, color);
  }
  if (g->help) {
    if (color) fputs("\033[1;36m", out);
    fputs("help:", out);
    if (color) fputs("\033[0m", out);
    /* indent continuation lines of the help under its first line */
    fputc(' ', out);
    for (const char *p = g->help; *p; p++) {
      fputc(*p, out);
      if (*p == '\n' && p[1]) fputs("      ", out);
    }
    fputc('\n', out);
  }
}

void td_diag_render(const td_diags *d, FILE *out, int color) {
  for (int i = 0; i < d->n; i++) render_one(d, &d->items[i], out, color);
  if (d->n_hidden)
    fprintf(out, "tdsl: %d more errors not shown\n", d->n_hidden);
  if (d->n_errors && !d->oom_said && td_diags_out_of_memory(d)) {
    td_diag oom;
    memset(&oom, 0, sizeof oom);
    oom.sev = TD_SEV_ERROR;
    oom.span.file = -1;
    oom.msg = "out of memory";
    render_one(d, &oom, out, color);
  }
}

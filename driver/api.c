/* api.c - the public embedding API of include/tdsl.h, on top of the
 * elaborator.  Each call is one compilation: one arena, freed on return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "include/tdsl.h"
#include "lang/elab.h"

const char *tdsl_version(void) { return TDSL_VERSION_STRING; }

typedef struct session {
  td_arena *arena;
  td_diags diags;
  td_program *prog;
} session;

static int open_session(session *s, const char *path, const char *search_path) {
  memset(s, 0, sizeof *s);
  s->arena = td_arena_new();
  if (!s->arena) return -1;
  td_diags_init(&s->diags, s->arena);
  s->prog = td_program_new(s->arena, &s->diags);
  if (!s->prog) return -1;
  if (search_path) {
    char *copy = td_strdup(search_path);
    if (!copy) return -1;
    for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
      if (*tok) td_program_add_search_dir(s->prog, tok);
    td_free(copy);
  }
  td_program_load_file(s->prog, path);
  return 0;
}

/* Renders the diagnostics into a malloc'd string. */
static void report_to(session *s, char **report) {
  if (!report) return;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) { *report = NULL; return; }
  td_diag_render(&s->diags, f, 0);
  fclose(f);
  *report = buf;
}

int tdsl_check_file(const char *path, const char *search_path, char **report) {
  session s;
  if (report) *report = NULL;
  if (open_session(&s, path, search_path)) { td_arena_free(s.arena); return -1; }
  if (!s.diags.n_errors) td_program_check(s.prog);
  int n = s.diags.n_errors;
  report_to(&s, report);
  td_arena_free(s.arena);
  return n;
}

char *tdsl_entries(const char *path, const char *search_path, char **report) {
  session s;
  if (report) *report = NULL;
  if (open_session(&s, path, search_path)) { td_arena_free(s.arena); return NULL; }
  char *out = NULL;
  if (!s.diags.n_errors) {
    const char **names;
    int n = td_program_entries(s.prog, &names);
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(names[i]) + 1;
    out = malloc(len);
    if (out) {
      out[0] = 0;
      for (int i = 0; i < n; i++) { strcat(out, names[i]); strcat(out, "\n"); }
    }
  }
  report_to(&s, report);
  td_arena_free(s.arena);
  return out;
}

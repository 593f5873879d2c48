/* diag.h - source files, spans and diagnostics.
 *
 * Every AST and IR node carries a td_span.  A diagnostic has a primary span,
 * a one-sentence message, an optional help text (the fix, possibly a
 * rewritten expression) and optional notes with their own spans ("this shape
 * came from here").  Library code only collects diagnostics; cli/ renders
 * them with td_diag_render and decides exit codes.
 */
#ifndef TD_DIAG_H
#define TD_DIAG_H

#include <stdio.h>
#include "runtime/mem.h"

/* A loaded source file.  text is NUL-terminated (the lexer's sentinel). */
typedef struct td_source {
  const char *path;   /* as shown in messages */
  const char *text;
  size_t len;
  int id;             /* index in td_sources */
} td_source;

/* A half-open byte range [start, end) in one source file, plus the 1-based
 * line and column of start (cached for messages). */
typedef struct td_span {
  int file;           /* td_source id; -1 = no location (builtin) */
  int start, end;
  int line, col;
} td_span;

typedef enum td_severity { TD_SEV_ERROR, TD_SEV_WARNING, TD_SEV_NOTE } td_severity;

typedef struct td_note {
  td_span span;
  const char *msg;
} td_note;

typedef struct td_diag {
  td_severity sev;
  td_span span;
  const char *msg;    /* one sentence, no trailing period needed */
  const char *help;   /* NULL or the fix; may span several lines */
  td_note notes[8];
  int n_notes;
} td_diag;

/* The diagnostics and sources of one compilation (all in its arena).
 *
 * Out of memory: once an allocation of the compilation has failed (one of
 * the arena's since td_diags_init or td_diags_clear, or one reported with
 * td_diags_oom), later errors may be its consequences ("unknown name" for
 * a binding that could not be made), so they are counted but not kept, and
 * td_diag_render says "out of memory" instead. */
typedef struct td_diags {
  td_arena *arena;
  td_source **files;
  int n_files, cap_files;
  td_diag *items;
  int n, cap;
  int n_errors;
  int max_errors;     /* stop collecting after this many (default 20) */
  int n_hidden;       /* errors past max_errors */
  int oom;            /* td_diags_oom, or a diagnostic that could not be kept */
  int oom_said;       /* an "out of memory" error is among the items */
  long arena_failures;  /* td_arena_failures(arena) at init or clear */
} td_diags;

void td_diags_init(td_diags *d, td_arena *a);
/* Forgets the diagnostics (not the sources) and any running out of memory,
 * for the next input of a session. */
void td_diags_clear(td_diags *d);
/* An allocation failed: counts an error, "out of memory" at sp (kept when
 * there is room for it, else said by td_diag_render). */
void td_diags_oom(td_diags *d, td_span sp);
/* Whether memory ran out since init or clear (see above). */
int td_diags_out_of_memory(const td_diags *d);
/* Registers a source (text copied into the arena); returns its id or -1. */
int td_diags_add_source(td_diags *d, const char *path, const char *text, size_t len);
const td_source *td_diags_source(const td_diags *d, int id);

/* Adds a diagnostic; returns it so the caller can attach help and notes.
 * Never fails visibly: when memory runs out (or ran out before) the
 * diagnostic is dropped but n_errors still counts. */
td_diag *td_error(td_diags *d, td_span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
td_diag *td_warning(td_diags *d, td_span sp, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void td_diag_help(td_diags *d, td_diag *g, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void td_diag_note(td_diags *d, td_diag *g, td_span sp, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Span covering a and b (same file). */
td_span td_span_join(td_span a, td_span b);
/* The source text of a span (arena copy), for rewritten-expression hints. */
const char *td_span_text(td_diags *d, td_span sp);

/* Writes all diagnostics in the caret style:
 *   file:line:col: error: message
 *      12 |     if rand([1]) > 0.5 {
 *         |        ^~~~~~~~~~~~~~~
 *   help: ...
 * and, when memory ran out and no kept error says so, "tdsl: error: out of
 * memory".  color != 0 adds ANSI colours. */
void td_diag_render(const td_diags *d, FILE *out, int color);

#endif

/* lexer.h - the token interface between the re2c lexer and the Bison parser.
 *
 * td_lex hands the parser one token at a time: its kind (the TDT_* names
 * and character codes of the generated parser.h), its value and its span.
 * The lexer also ends statements: at a newline it returns a zero-width ';'
 * when the line can end there (see lexer.re), so the grammar only ever sees
 * ';'.  It keeps just enough history (the last two tokens, open brackets)
 * for the parser's error messages.
 *
 * Include order: parser.h (generated, in the build tree) defines TDYYSTYPE
 * and the token kinds; it includes ast.h but never this file.
 */
#ifndef TD_LEXER_H
#define TD_LEXER_H

#include "lang/ast.h"
#include "lang/parser/parser.h"


typedef struct td_lexer {
  td_diags *diags;
  td_arena *arena;
  const char *src;        /* source text, NUL terminated */
  const char *end;        /* src + its length (an earlier NUL is an error) */
  const char *cur;        /* next byte to scan */
  const char *line_start; /* first byte of the current line */
  int file, line;         /* file id; 1-based line of cur */
  int nest;               /* open ( [ { brackets */
  char *open;             /* their characters, innermost last (arena, grown by doubling; */
  td_span *open_at;       /* the parser's nesting limit ends a deep program) and where each was opened */
  int cap_open;
  int closing;            /* auto-closing unclosed ( [ before a statement */
  int last;               /* kind of the last token returned (0: none) */
  td_span last_span;      /* its span */
  td_span prev_span;      /* the span of the token before it */
  int in_cond;            /* between `if`/`while` and the next '{' or ';' */
  int done;               /* the end (a NUL) was reached */
  int oom;                /* an allocation failed: the parse must fail */
} td_lexer;

void td_lexer_init(td_lexer *lx, td_diags *diags, int file_id);

/* Returns the next token kind (TDT_YYEOF at the end), filling *val for
 * identifiers, literals and strings, and *loc always.  Lexical errors go to
 * diags; the lexer then skips the offending text and goes on.  Once
 * diags->max_errors is reached it returns end of file. */
int td_lex(td_lexer *lx, TDYYSTYPE *val, td_span *loc);

/* The innermost bracket still open (NULL when none): for "unclosed" notes. */
const td_span *td_lex_open_bracket(const td_lexer *lx, char *which);

#endif

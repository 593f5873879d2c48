/* lexer.re - tdsl's tokens (re2c source; the build generates lexer.c).
 *
 * The scanner is one re2c block inside scan(), using the source's
 * terminating NUL as sentinel (no YYFILL).  Around it sit the rules that a
 * regular expression cannot express:
 *
 *  - statement ends: a newline becomes a zero-width ';' when the innermost
 *    open bracket is a '{' (or none), the previous token can end a statement
 *    (identifier, literal, ')', ']', '}', true, false, return) and the next
 *    token is not `else` (so `}` newline `else` continues an `if`);
 *  - unclosed brackets: a statement keyword at the start of a line inside
 *    ( or [, or a '}' there, cannot be meant; the lexer reports the unclosed
 *    bracket and hands the parser the missing closers, so one forgotten ')'
 *    does not swallow the rest of the file;
 *  - literals: integers (decimal, 0x hex, '_' between digits; overflow is an
 *    error), floats, strings with \n \t \\ \" escapes.
 *
 * Lexical errors are reported and skipped (or, for `&&`, `||`, `!` and
 * 'single quoted' strings, replaced by the tdsl token), so the parser only
 * sees well-formed tokens.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lang/lexer/lexer.h"

void td_lexer_init(td_lexer *lx, td_diags *diags, int file_id) {
  const td_source *s = td_diags_source(diags, file_id);
  memset(lx, 0, sizeof *lx);
  lx->diags = diags;
  lx->arena = diags->arena;
  lx->src = s ? s->text : "";
  lx->end = lx->src + (s ? s->len : 0);
  lx->cur = lx->line_start = lx->src;
  lx->file = file_id;
  lx->line = 1;
}

const td_span *td_lex_open_bracket(const td_lexer *lx, char *which) {
  if (lx->nest <= 0 || lx->nest > lx->cap_open) return NULL;
  if (which) *which = lx->open[lx->nest - 1];
  return &lx->open_at[lx->nest - 1];
}

/* The span of [b, e), which lies on the current line. */
static td_span span_at(const td_lexer *lx, const char *b, const char *e) {
  td_span sp = {lx->file, (int)(b - lx->src), (int)(e - lx->src), lx->line,
                (int)(b - lx->line_start) + 1};
  return sp;
}

/* A zero-width span just after the last token: where virtual tokens go. */
static td_span after_last(const td_lexer *lx) {
  td_span sp = lx->last_span;
  if (!lx->last) return span_at(lx, lx->cur, lx->cur);
  sp.col += sp.end - sp.start;
  sp.start = sp.end;
  return sp;
}

/* ---- brackets ---- */

static int innermost(const td_lexer *lx) {
  if (lx->nest == 0) return 0;
  return lx->nest > lx->cap_open ? '(' : lx->open[lx->nest - 1];
}

static int in_parens(const td_lexer *lx) {
  int c = innermost(lx);
  return c == '(' || c == '[';
}

static void open_bracket(td_lexer *lx, char c, td_span sp) {
  if (lx->nest == lx->cap_open) {
    int cap = lx->cap_open ? 2 * lx->cap_open : 64;
    char *o = td_arena_alloc(lx->arena, (size_t)cap);
    td_span *at = td_arena_alloc(lx->arena, (size_t)cap * sizeof *at);
    if (!o || !at) {
      lx->oom = 1;   /* the parse fails with "out of memory" */
      return;
    }
    if (lx->nest) {
      memcpy(o, lx->open, (size_t)lx->nest);
      memcpy(at, lx->open_at, (size_t)lx->nest * sizeof *at);
    }
    lx->open = o;
    lx->open_at = at;
    lx->cap_open = cap;
  }
  lx->open[lx->nest] = c;
  lx->open_at[lx->nest] = sp;
  lx->nest++;
}

/* ')' and ']' only close a ( or [; '}' only a '{' (mismatches are left to
 * the parser, which reports them). */
static void close_bracket(td_lexer *lx, int c) {
  if ((c == '}') == (innermost(lx) == '{') && lx->nest > 0) lx->nest--;
}

/* Reports the innermost unclosed ( or [ and starts handing out closers
 * before the token at tok, which is re-scanned afterwards.  then_end = 1
 * ends the statement after the closers. */
static void auto_close(td_lexer *lx, const char *tok, int then_end) {
  char c = '(';
  const td_span *at = td_lex_open_bracket(lx, &c);
  td_span sp = at ? *at : span_at(lx, tok, tok + 1);
  td_diag *g = td_error(lx->diags, sp, "unclosed '%c'", c);
  td_diag_help(lx->diags, g, "add the missing '%c'", c == '(' ? ')' : ']');
  lx->cur = tok;
  lx->closing = then_end ? 2 : 1;
}

/* One virtual closer per call while inside ( or [, then ';' if asked. */
static int next_closer(td_lexer *lx, td_span *loc) {
  *loc = after_last(lx);
  if (in_parens(lx)) {
    int c = innermost(lx) == '[' ? ']' : ')';
    lx->nest--;
    return c;
  }
  int then_end = lx->closing == 2;
  lx->closing = 0;
  return then_end ? ';' : -1;
}

/* ---- newlines ---- */

static int ends_statement(int tok) {
  switch (tok) {
  case TDT_IDENT: case TDT_INT: case TDT_FLOAT: case TDT_STRING: case TDT_IN:
  case TDT_TRUE: case TDT_FALSE: case TDT_RETURN:
  case ')': case ']': case '}':
    return 1;
  default:
    return 0;
  }
}

static int is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_';
}

/* Whether the next token after p (skipping blanks, newlines and comments)
 * is the keyword `else`. */
static int next_is_else(const char *p) {
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v')
      p++;
    if (*p != '#') break;
    while (*p && *p != '\n') p++;
  }
  return strncmp(p, "else", 4) == 0 && !is_ident_char(p[4]);
}

/* Consumes the newline before lx->cur; 1 when it ends a statement. */
static int newline(td_lexer *lx) {
  lx->line++;
  lx->line_start = lx->cur;
  return !in_parens(lx) && ends_statement(lx->last) && !next_is_else(lx->cur);
}

/* ---- literals ---- */

static int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

/* Decimal or 0x integer with '_' separators; values above INT64_MAX are an
 * error. */
static int lex_int(td_lexer *lx, const char *b, const char *e, TDYYSTYPE *val, td_span sp) {
  int base = 10;
  if (e - b > 2 && b[0] == '0' && (b[1] | 0x20) == 'x') {
    base = 16;
    b += 2;
  }
  int64_t v = 0;
  for (; b < e; b++) {
    if (*b == '_') continue;
    int d = digit_value(*b);
    if (v > (INT64_MAX - d) / base) {
      td_diag *g = td_error(lx->diags, sp, "integer literal is too large");
      td_diag_help(lx->diags, g, "integers are 64-bit: at most 9223372036854775807");
      v = 0;
      break;
    }
    v = v * base + d;
  }
  val->ival = v;
  return TDT_INT;
}

static int lex_float(td_lexer *lx, const char *b, const char *e, TDYYSTYPE *val, td_span sp) {
  char *s = td_arena_strndup(lx->arena, b, (size_t)(e - b));
  if (!s) {
    lx->oom = 1;
    return TDT_YYEOF;
  }
  char *w = s;
  for (const char *r = s; *r; r++)
    if (*r != '_') *w++ = *r;
  *w = '\0';
  errno = 0;
  val->fval = strtod(s, NULL);
  if (errno == ERANGE && (val->fval > 1.0 || val->fval < -1.0)) {
    td_error(lx->diags, sp, "float literal is out of range");
    val->fval = 0.0;
  }
  return TDT_FLOAT;
}

/* Finds the end of the string whose opening quote is at b: the closing
 * quote, or the newline / NUL that leaves it unterminated. */
static const char *string_end(const char *b) {
  const char *p = b + 1;
  while (*p != '"' && *p != '\n' && *p != '\0') {
    if (*p == '\\' && p[1] != '\n' && p[1] != '\0') p++;
    p++;
  }
  return p;
}

static char unescape(char c) {
  switch (c) {
  case 'n': return '\n';
  case 't': return '\t';
  case '\\': return '\\';
  case '"': return '"';
  default: return 0;
  }
}

/* Scans a string literal starting at the quote b; leaves lx->cur after it. */
static int lex_string(td_lexer *lx, const char *b, TDYYSTYPE *val, td_span *loc) {
  const char *e = string_end(b);
  char *out = td_arena_alloc(lx->arena, (size_t)(e - b));
  if (!out) {
    lx->oom = 1;
    return TDT_YYEOF;
  }
  char *w = out;
  for (const char *p = b + 1; p < e; p++) {
    if (*p != '\\') {
      *w++ = *p;
      continue;
    }
    char c = unescape(*++p);
    if (!c) {
      td_diag *g = td_error(lx->diags, span_at(lx, p - 1, p + 1), "unknown escape '\\%c'", *p);
      td_diag_help(lx->diags, g, "the escapes are \\n \\t \\\\ and \\\"");
      c = *p;
    }
    *w++ = c;
  }
  val->str = out;
  if (*e == '"') {
    lx->cur = e + 1;
  } else {
    lx->cur = e;
    td_diag *g = td_error(lx->diags, span_at(lx, b, e), "unterminated string");
    td_diag_help(lx->diags, g, "close it with '\"' on the same line");
  }
  *loc = span_at(lx, b, lx->cur);
  return TDT_STRING;
}

/* ---- errors ---- */

/* Length of the UTF-8 character at p (1 for an invalid byte). */
static int char_len(const unsigned char *p) {
  int n = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC0 ? 2 : 1;
  if (p[0] >= 0xF8) return 1;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 1;
  return n;
}

/* Reports the character at tok and skips it; fix, if not NULL, is the
 * tdsl spelling of what was probably meant (the caller then hands the
 * parser that token instead, so parsing goes on undisturbed). */
static void stray(td_lexer *lx, const char *tok, const char *fix) {
  const unsigned char *u = (const unsigned char *)tok;
  int n = char_len(u);
  if (fix) n = (int)(lx->cur - tok);
  td_span sp = span_at(lx, tok, tok + n);
  td_diag *g;
  if (u[0] < 0x20 || u[0] == 0x7f || (n == 1 && u[0] >= 0x80))
    g = td_error(lx->diags, sp, "unexpected byte 0x%02x", u[0]);
  else
    g = td_error(lx->diags, sp, "unexpected character '%.*s'", n, tok);
  if (fix) td_diag_help(lx->diags, g, "write '%s'", fix);
  lx->cur = tok + n;
}

/* The NUL at p: the end of the text, or an embedded NUL (an error that
 * also ends it, so the lexer never reads past a NUL). */
static int at_nul(td_lexer *lx, const char *p, td_span *loc) {
  if (!lx->done && p < lx->end)
    td_error(lx->diags, span_at(lx, p, p + 1),
             "unexpected NUL byte; the rest of the file is ignored");
  lx->done = 1;
  lx->cur = p;
  *loc = span_at(lx, p, p);
  return TDT_YYEOF;
}

/* ---- the scanner ---- */

static int keyword(td_lexer *lx, const char *tok, int kind) {
  int line_start = !lx->last || lx->last_span.line < lx->line;
  if (line_start && in_parens(lx) && kind != TDT_FOR && kind != TDT_IF) {
    auto_close(lx, tok, 1);
    return -1;
  }
  return kind;
}

/* An identifier (kind TDT_IDENT) or other token whose value is its text. */
static int ident(td_lexer *lx, const char *b, const char *e, TDYYSTYPE *val, int kind) {
  val->str = td_arena_strndup(lx->arena, b, (size_t)(e - b));
  if (!val->str) {
    lx->oom = 1;
    return TDT_YYEOF;
  }
  return kind;
}

/* 'text': reported, then handed on as the string it was meant to be. */
static int single_quoted(td_lexer *lx, const char *b, const char *e, TDYYSTYPE *val,
                         td_span sp) {
  td_diag *g = td_error(lx->diags, sp, "strings use double quotes");
  td_diag_help(lx->diags, g, "write \"%.*s\"", (int)(e - b - 2), b + 1);
  return ident(lx, b + 1, e - 1, val, TDT_STRING);
}

/* Scans one token; returns -1 for what the parser does not see (blanks,
 * comments, lexical errors, a newline that does not end a statement). */
static int scan(td_lexer *lx, TDYYSTYPE *val, td_span *loc) {
  const char *tok = lx->cur;
  const char *YYCURSOR = tok, *YYMARKER = tok;
  /* SPAN() ends the token at YYCURSOR; TOK and KW then return its kind. */
#define SPAN() (lx->cur = YYCURSOR, *loc = span_at(lx, tok, YYCURSOR))
#define TOK(kind) do { SPAN(); return (kind); } while (0)
#define KW(kind) do { SPAN(); return keyword(lx, tok, (kind)); } while (0)
  /*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:yyfill:enable = 0;

    dec = [0-9] ("_"? [0-9])*;
    hex = "0" [xX] [0-9a-fA-F] ("_"? [0-9a-fA-F])*;
    exp = [eE] [+-]? dec;
    flt = dec "." dec? exp? | "." dec exp? | dec exp;
    id  = [A-Za-z_] [A-Za-z0-9_]*;

    "\x00"             { return at_nul(lx, tok, loc); }
    [ \t\r\f\v]+       { lx->cur = YYCURSOR; return -1; }
    "#" [^\n\x00]*     { lx->cur = YYCURSOR; return -1; }
    "\n"               { lx->cur = YYCURSOR;
                         if (!newline(lx)) return -1;
                         *loc = after_last(lx);
                         return ';'; }

    "model"            { KW(TDT_MODEL); }
    "fn"               { KW(TDT_FN); }
    "export"           { KW(TDT_EXPORT); }
    "param"            { KW(TDT_PARAM); }
    "let"              { KW(TDT_LET); }
    "import"           { KW(TDT_IMPORT); }
    "for"              { KW(TDT_FOR); }
    "in"               { TOK(TDT_IN); }
    "if"               { KW(TDT_IF); }
    "else"             { TOK(TDT_ELSE); }
    "while"            { KW(TDT_WHILE); }
    "return"           { KW(TDT_RETURN); }
    "and"              { TOK(TDT_AND); }
    "or"               { TOK(TDT_OR); }
    "not"              { TOK(TDT_NOT); }
    "true"             { TOK(TDT_TRUE); }
    "false"            { TOK(TDT_FALSE); }
    id                 { SPAN(); return ident(lx, tok, YYCURSOR, val, TDT_IDENT); }

    dec / ".."         { SPAN(); return lex_int(lx, tok, YYCURSOR, val, *loc); }
    dec | hex          { SPAN(); return lex_int(lx, tok, YYCURSOR, val, *loc); }
    flt                { SPAN(); return lex_float(lx, tok, YYCURSOR, val, *loc); }
    [0-9] [0-9A-Za-z_]* | flt [0-9A-Za-z_]+
                       { SPAN();
                         td_error(lx->diags, *loc, "invalid number '%.*s'",
                                  (int)(YYCURSOR - tok), tok);
                         val->ival = 0;
                         return TDT_INT; }
    "\""               { return lex_string(lx, tok, val, loc); }
    "'" [^'\n\x00]* "'" { SPAN(); return single_quoted(lx, tok, YYCURSOR, val, *loc); }

    "**"               { TOK(TDT_POW); }
    "//"               { TOK(TDT_FLOORDIV); }
    "=="               { TOK(TDT_EQ); }
    "!="               { TOK(TDT_NE); }
    "<="               { TOK(TDT_LE); }
    ">="               { TOK(TDT_GE); }
    ".."               { TOK(TDT_DOTDOT); }
    "..."              { TOK(TDT_ELLIPSIS); }
    "->"               { TOK(TDT_ARROW); }
    [\-+*/%@<>=,:;.]   { TOK(*tok); }
    [([{]              { SPAN(); open_bracket(lx, *tok, *loc); return *tok; }
    "}"                { if (in_parens(lx)) { auto_close(lx, tok, 0); return -1; }
                         close_bracket(lx, '}');
                         TOK('}'); }
    [)\]]              { close_bracket(lx, *tok); TOK(*tok); }

    "&&" | "&"         { SPAN(); stray(lx, tok, "and"); return TDT_AND; }
    "||" | "|"         { SPAN(); stray(lx, tok, "or"); return TDT_OR; }
    "!"                { SPAN(); stray(lx, tok, "not"); return TDT_NOT; }
    *                  { stray(lx, tok, NULL); return -1; }
  */
#undef SPAN
#undef TOK
#undef KW
}

int td_lex(td_lexer *lx, TDYYSTYPE *val, td_span *loc) {
  int t = -1;
  while (t < 0) {
    if (lx->oom || (lx->diags->max_errors > 0 && lx->diags->n_errors >= lx->diags->max_errors)) {
      *loc = span_at(lx, lx->cur, lx->cur);
      return TDT_YYEOF;
    }
    t = lx->closing ? next_closer(lx, loc) : scan(lx, val, loc);
  }
  lx->prev_span = lx->last_span;
  lx->last_span = *loc;
  lx->last = t;
  if (t == TDT_IF || t == TDT_WHILE) lx->in_cond = 1;
  else if (t == '{' || t == ';') lx->in_cond = 0;
  return t;
}

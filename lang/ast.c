/* ast.c - AST nodes: construction, names of kinds and operators, and the
 * S-expression dump used by --dump=ast and the parser tests.
 *
 * Dump format: `(kind attrs children...)`.  Attributes are the node's name,
 * operator or literal value; children follow in the order of each kind's
 * layout below, a missing optional child printed as `_`.  A node containing
 * a block (functions, models, ifs...) prints one child per line, indented by
 * two; everything else prints on one line.
 */
#include <stdlib.h>
#include <string.h>
#include "lang/ast.h"

td_ast *td_ast_new(td_arena *a, td_ast_kind k, td_span sp) {
  td_ast *n = td_arena_alloc(a, sizeof *n);
  if (!n) return NULL;
  n->kind = k;
  n->span = sp;
  return n;
}

/* Lists grow by doubling from 4; their capacity is implied by n (the next
 * power of two, at least 4), so a list must only ever grow through this
 * function (shrinking n is fine). */
int td_ast_push(td_arena *a, td_ast *parent, td_ast *child) {
  int n = parent->n;
  if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
    if (n > (1 << 28)) return -1;
    int cap = n ? 2 * n : 4;
    td_ast **list = td_arena_alloc(a, (size_t)cap * sizeof *list);
    if (!list) return -1;
    if (n) memcpy(list, parent->list, (size_t)n * sizeof *list);
    parent->list = list;
  }
  parent->list[parent->n++] = child;
  return 0;
}

const char *td_binop_str(int op) {
  static const char *const names[] = {
      [TD_OP_ADD] = "+",   [TD_OP_SUB] = "-",  [TD_OP_MUL] = "*",   [TD_OP_DIV] = "/",
      [TD_OP_MOD] = "%",   [TD_OP_POW] = "**", [TD_OP_MATMUL] = "@", [TD_OP_EQ] = "==",
      [TD_OP_NE] = "!=",   [TD_OP_LT] = "<",   [TD_OP_LE] = "<=",   [TD_OP_GT] = ">",
      [TD_OP_GE] = ">=",   [TD_OP_AND] = "and", [TD_OP_OR] = "or",  [TD_OP_NEG] = "-",
      [TD_OP_NOT] = "not", [TD_OP_POS] = "+",  [TD_OP_FLOORDIV] = "//",
  };
  if (op < 0 || op >= (int)(sizeof names / sizeof names[0])) return "?";
  return names[op];
}

/* Each kind's name and dump layout: n name, s string, o operator, i int,
 * B bool, f float; a b c children; L list elements; P list as (params ...)
 * and N list as (names ...), both only when non-empty. */
static const struct {
  const char *name, *layout;
} kinds[TD_A_KIND_COUNT] = {
    [TD_A_MODULE] = {"module", "L"},     [TD_A_IMPORT] = {"import", "n"},
    [TD_A_MODEL] = {"model", "nPa"},     [TD_A_FN] = {"fn", "nPab"},
    [TD_A_PARAMDECL] = {"paramdecl", "nab"},
    [TD_A_PARAM] = {"param", "nabc"},    [TD_A_MEMBER] = {"member", "na"},
    [TD_A_MEMBERS] = {"members", "L"},   [TD_A_TNAME] = {"tname", "n"},
    [TD_A_TTENSOR] = {"ttensor", "nL"},  [TD_A_TTUPLE] = {"ttuple", "L"},
    [TD_A_LET] = {"let", "nNab"},        [TD_A_ASSIGN] = {"assign", "nb"},
    [TD_A_EXPRSTMT] = {"exprstmt", "a"}, [TD_A_FOR] = {"for", "nab"},
    [TD_A_WHILE] = {"while", "ab"},      [TD_A_RETURN] = {"return", "a"},
    [TD_A_INT] = {"int", "i"},           [TD_A_FLOAT] = {"float", "f"},
    [TD_A_STR] = {"str", "s"},           [TD_A_BOOL] = {"bool", "B"},
    [TD_A_NAME] = {"name", "n"},         [TD_A_FIELD] = {"field", "na"},
    [TD_A_CALL] = {"call", "aL"},        [TD_A_KWARG] = {"kwarg", "na"},
    [TD_A_INDEX] = {"index", "aL"},      [TD_A_SLICE] = {"slice", "abc"},
    [TD_A_ELLIPSIS] = {"ellipsis", ""},  [TD_A_UNARY] = {"unary", "oa"},
    [TD_A_BINARY] = {"binary", "oab"},   [TD_A_LIST] = {"list", "L"},
    [TD_A_TUPLE] = {"tuple", "L"},       [TD_A_LISTCOMP] = {"listcomp", "nab"},
    [TD_A_RANGE] = {"range", "ab"},      [TD_A_IF] = {"if", "abc"},
    [TD_A_BLOCK] = {"block", "La"},
};

const char *td_ast_kind_name(td_ast_kind k) {
  if ((int)k < 0 || k >= TD_A_KIND_COUNT || !kinds[k].name) return "?";
  return kinds[k].name;
}

static const char *layout(const td_ast *n) {
  if ((int)n->kind < 0 || n->kind >= TD_A_KIND_COUNT || !kinds[n->kind].layout) return "";
  return kinds[n->kind].layout;
}

/* Whether n (or anything below it) holds a block-like node, which makes it
 * print over several lines. */
static int is_tall(const td_ast *n) {
  if (!n) return 0;
  switch (n->kind) {
  case TD_A_MODULE: case TD_A_MODEL: case TD_A_MEMBERS: case TD_A_FN: case TD_A_BLOCK:
    return 1;
  default:
    break;
  }
  if (is_tall(n->a) || is_tall(n->b) || is_tall(n->c)) return 1;
  for (int i = 0; i < n->n; i++)
    if (is_tall(n->list[i])) return 1;
  return 0;
}

static void dump_string(const char *s, FILE *out) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

/* The shortest %g form that reads back as the same double. */
static void dump_float(double v, FILE *out) {
  char buf[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    if (strtod(buf, NULL) == v) break;
  }
  fputs(buf, out);
}

/* The attributes of n, each preceded by a space. */
static void dump_attrs(const td_ast *n, FILE *out) {
  for (const char *l = layout(n); *l; l++) {
    switch (*l) {
    case 'n': if (n->name) fprintf(out, " %s", n->name); break;
    case 's': fputc(' ', out); dump_string(n->name ? n->name : "", out); break;
    case 'o': fprintf(out, " %s", td_binop_str(n->op)); break;
    case 'i': fprintf(out, " %lld", (long long)n->ival); break;
    case 'B': fputs(n->ival ? " true" : " false", out); break;
    case 'f': fputc(' ', out); dump_float(n->fval, out); break;
    default: break;
    }
  }
}

static void dump_node(const td_ast *n, FILE *out, int indent);

/* Starts a child: a space on one line, a new indented line otherwise. */
static void child_sep(FILE *out, int tall, int indent) {
  if (tall) fprintf(out, "\n%*s", indent, "");
  else fputc(' ', out);
}

static void dump_list(const td_ast *n, const char *label, FILE *out, int tall, int indent) {
  if (label) {
    if (n->n == 0) return;
    child_sep(out, tall, indent);
    fprintf(out, "(%s", label);
    int group_tall = 0;
    for (int i = 0; i < n->n; i++) group_tall |= is_tall(n->list[i]);
    for (int i = 0; i < n->n; i++) {
      child_sep(out, group_tall, indent + 2);
      dump_node(n->list[i], out, indent + 2);
    }
    fputc(')', out);
    return;
  }
  for (int i = 0; i < n->n; i++) {
    child_sep(out, tall, indent);
    dump_node(n->list[i], out, indent);
  }
}

/* Writes n (whose first line starts at column indent) without a newline. */
static void dump_node(const td_ast *n, FILE *out, int indent) {
  if (!n) {
    fputc('_', out);
    return;
  }
  int tall = is_tall(n);
  fprintf(out, "(%s", td_ast_kind_name(n->kind));
  if (n->kind == TD_A_FN && n->ival) fputs(" export", out);
  dump_attrs(n, out);
  for (const char *l = layout(n); *l; l++) {
    const td_ast *child = *l == 'a' ? n->a : *l == 'b' ? n->b : n->c;
    switch (*l) {
    case 'a': case 'b': case 'c':
      child_sep(out, tall, indent + 2);
      dump_node(child, out, indent + 2);
      break;
    case 'L': dump_list(n, NULL, out, tall, indent + 2); break;
    case 'P': dump_list(n, "params", out, tall, indent + 2); break;
    case 'N': dump_list(n, "names", out, tall, indent + 2); break;
    default: break;
    }
  }
  fputc(')', out);
}

void td_ast_dump(const td_ast *n, FILE *out) {
  dump_node(n, out, 0);
  fputc('\n', out);
}

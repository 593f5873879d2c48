/* ast.h - the abstract syntax tree built by the parser.
 *
 * One node struct for every construct; `kind` says which fields carry what
 * (documented on each enum member).  Every node has a source span.  Nodes,
 * lists and strings live in the compilation's arena.  The parser builds the
 * tree and does nothing else; names, types and shapes are the elaborator's
 * job (lang/elab.c).
 */
#ifndef TD_AST_H
#define TD_AST_H

#include <stdint.h>
#include "lang/diag.h"

typedef enum td_ast_kind {
  /* ---- items (top level and model members) ---- */
  TD_A_MODULE,    /* list = items (IMPORT, MODEL, FN) of one file */
  TD_A_IMPORT,    /* name = module name ("nn") */
  TD_A_MODEL,     /* name; list = params (PARAMDECL); a = BLOCK-less member
                     list: a->list = members (PARAM, MEMBER, FN) */
  TD_A_FN,        /* name; list = params (PARAMDECL); a = return type or NULL;
                     b = body (BLOCK); ival = 1 when marked `export` */
  TD_A_PARAMDECL, /* name; a = type or NULL (untyped); b = default or NULL */
  TD_A_PARAM,     /* `param name: type = init [if cond]`: name; a = type;
                     b = init expr; c = condition or NULL */
  TD_A_MEMBER,    /* `name = expr` inside a model: name; a = expr */
  TD_A_MEMBERS,   /* list = members of a model (PARAM, MEMBER, FN) */

  /* ---- types ---- */
  TD_A_TNAME,     /* name = "int" | "float" | "bool" | dtype for a rank-0 tensor */
  TD_A_TTENSOR,   /* name = dtype ("f32"); list = dims, each an expr or ELLIPSIS */
  TD_A_TTUPLE,    /* list = element types */

  /* ---- statements ---- */
  TD_A_LET,       /* `let x[: T] = e`: name; a = type or NULL; b = value.
                     `let (a, b) = e`: name = NULL; list = NAME nodes; b = value */
  TD_A_ASSIGN,    /* `x = e` (rebinding a let name): name; b = value */
  TD_A_EXPRSTMT,  /* a = expression */
  TD_A_FOR,       /* `for i in iter { body }`: name = loop variable; a = iter
                     (RANGE or any expr); b = body (BLOCK) */
  TD_A_WHILE,     /* `while cond { body }`: a = cond; b = body (always an
                     error: it exists to teach scan/vectorise) */
  TD_A_RETURN,    /* a = value or NULL */

  /* ---- expressions ---- */
  TD_A_INT,       /* ival */
  TD_A_FLOAT,     /* fval */
  TD_A_STR,       /* name = decoded string */
  TD_A_BOOL,      /* ival = 0 or 1 */
  TD_A_NAME,      /* name */
  TD_A_FIELD,     /* a.name: a = object; name = field ("T" included) */
  TD_A_CALL,      /* a = callee; list = positional args then KWARGs */
  TD_A_KWARG,     /* name = keyword; a = value */
  TD_A_INDEX,     /* a[...]: a = object; list = items (expr, SLICE, ELLIPSIS) */
  TD_A_SLICE,     /* start:stop:step: a, b, c = start, stop, step, each NULL
                     when omitted */
  TD_A_ELLIPSIS,  /* `...` in an index or a tensor type */
  TD_A_UNARY,     /* op = TD_OP_NEG | TD_OP_NOT | TD_OP_POS; a = operand */
  TD_A_BINARY,    /* op = a td_binop; a, b = operands */
  TD_A_LIST,      /* [e, ...]: list = elements */
  TD_A_TUPLE,     /* (e, ...) with 0 or >= 2 elements (or a trailing comma) */
  TD_A_LISTCOMP,  /* [e for name in iter]: a = element; name = variable;
                     b = iter */
  TD_A_RANGE,     /* lo..hi (only as a for/comprehension iterator): a, b */
  TD_A_IF,        /* if cond { then } else { else }: a = cond; b = then BLOCK;
                     c = else BLOCK, another IF, or NULL */
  TD_A_BLOCK,     /* { stmts; value }: list = statements; a = final
                     expression (the block's value) or NULL */
  TD_A_KIND_COUNT
} td_ast_kind;

/* Operators of UNARY and BINARY nodes. */
typedef enum td_binop {
  TD_OP_ADD, TD_OP_SUB, TD_OP_MUL, TD_OP_DIV, TD_OP_MOD, TD_OP_POW,
  TD_OP_MATMUL,
  TD_OP_EQ, TD_OP_NE, TD_OP_LT, TD_OP_LE, TD_OP_GT, TD_OP_GE,
  TD_OP_AND, TD_OP_OR,
  TD_OP_NEG, TD_OP_NOT, TD_OP_POS,
  TD_OP_FLOORDIV   /* `//`, binary */
} td_binop;

typedef struct td_ast td_ast;
struct td_ast {
  td_ast_kind kind;
  td_span span;
  const char *name;
  int op;
  int64_t ival;
  double fval;
  td_ast *a, *b, *c;
  td_ast **list;
  int n;
};

/* Spelling of an operator as written ("+", "and", "@"). */
const char *td_binop_str(int op);
const char *td_ast_kind_name(td_ast_kind k);

/* Constructors used by the parser (arena allocation; NULL on OOM). */
td_ast *td_ast_new(td_arena *a, td_ast_kind k, td_span sp);
int td_ast_push(td_arena *a, td_ast *parent, td_ast *child); /* to list */

/* Writes the tree as an indented S-expression (for --dump=ast and tests). */
void td_ast_dump(const td_ast *n, FILE *out);

/* Parses one source file into a MODULE node.  Syntax errors go to diags
 * (several per run, thanks to error recovery); returns NULL only when no
 * tree could be built at all.  A non-NULL result may still come with
 * errors in diags: check diags->n_errors. */
td_ast *td_parse(td_diags *diags, int file_id);

/* Parses one REPL input: items and statements in any order, appended in
 * order to the list of the MODULE node returned.  first_line is the line
 * number of the text's first line (messages count the session's lines).
 * With incomplete != NULL, a text that is a correct beginning needing more
 * lines (an open bracket, a trailing operator) gives NULL, *incomplete = 1
 * and no diagnostic; with NULL the text is final and such an ending is a
 * syntax error.  Otherwise like td_parse. */
td_ast *td_parse_repl(td_diags *diags, int file_id, int first_line, int *incomplete);

#endif

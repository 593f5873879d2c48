/* parser.y - tdsl's grammar (Bison 3.8; the build generates parser.c/.h).
 *
 * A pure parser with locations (a td_span per symbol) that builds the AST
 * of lang/ast.h and nothing else.  The lexer (lang/lexer/lexer.re) already
 * turned line ends into ';', so statements are simply separated by ';'.
 *
 * Syntax errors: messages read "unexpected X, expected Y or Z", with a help
 * line where the fix is obvious (`==` for `=` in a condition, `fn` for
 * `def`...).  Recovery happens at three levels so that one run reports
 * several errors: inside ( ) and [ ], at statements (up to the next ';' or
 * '}') and at items and model members; `fn name error block` and friends
 * skip a broken header up to its body.  What recovery keeps is still a
 * well-formed tree: a dropped statement is left out, a broken expression
 * becomes `()`, a broken parameter or argument list an empty one.
 *
 * Both pull (td_parse) and push (tdyypush_parse) interfaces are generated.
 * The REPL uses the push parser (td_parse_repl): a REPL_START token, which
 * the lexer never produces, selects the `repl` grammar (items and
 * statements in any order), and an input that ends while the parser still
 * answers YYPUSH_MORE inside an open bracket or after an operator is
 * reported as incomplete, so the REPL reads another line.
 */

%require "3.8"
%define api.pure full
%define api.push-pull both
%define api.prefix {tdyy}
%define api.token.prefix {TDT_}
%define api.location.type {td_span}
%define parse.error custom
%locations
%expect 0
%param {td_parser *tp}

%code requires {
#include "lang/ast.h"

typedef struct td_lexer td_lexer;

/* What one parse shares between the lexer, the actions and error reports. */
typedef struct td_parser {
  td_diags *diags;
  td_arena *arena;
  td_lexer *lx;      /* for error hints about the tokens around an error */
  td_ast *module;    /* items are appended here as they are parsed */
  int oom;           /* an allocation failed */
  int too_deep;      /* "nested too deeply" was reported */
} td_parser;
}

%code {
#include <stddef.h>
#include <string.h>
#include "lang/lexer/lexer.h"

#define YYMALLOC td_malloc
#define YYFREE td_free
/* A fixed stack: deeper nesting is an error, so later recursive passes are
 * safe (and the parser's own stack is never reallocated). */
#define YYINITDEPTH 1000
#define YYMAXDEPTH 1000
#define YYLLOC_DEFAULT(cur, rhs, n) ((cur) = rule_span((rhs), (n)))

static td_span rule_span(const td_span *rhs, int n);
static int tdyylex(TDYYSTYPE *val, td_span *loc, td_parser *tp);
static void tdyyerror(const td_span *loc, td_parser *tp, const char *msg);
static td_ast *mk(td_parser *tp, td_ast_kind k, td_span sp, const char *name,
                  td_ast *a, td_ast *b, td_ast *c);
static td_ast *binary(td_parser *tp, int op, td_ast *a, td_ast *b, td_span sp);
static int push(td_parser *tp, td_ast *parent, td_ast *child);
static td_ast *take_list(td_ast *dst, const td_ast *src);
static td_ast *tuple(td_parser *tp, td_ast_kind k, td_ast *first, const td_ast *rest,
                     td_span sp);
static td_ast *finish_block(td_parser *tp, td_ast *b, td_ast *last, td_span sp);

#define NOMEM do { tp->oom = 1; YYNOMEM; } while (0)
#define CHECK(e) do { if (!(e)) NOMEM; } while (0)
#define NODE(dst, k, sp, name, a, b, c) CHECK((dst) = mk(tp, (k), (sp), (name), (a), (b), (c)))
#define LIST(dst, sp) NODE(dst, TD_A_LIST, sp, NULL, NULL, NULL, NULL)
#define PUSH(parent, child) CHECK(push(tp, (parent), (child)) == 0)
#define BIN(dst, op, a, b, sp) CHECK((dst) = binary(tp, (op), (a), (b), (sp)))
}

%union {
  td_ast *node;
  const char *str;
  int64_t ival;
  double fval;
}

/* Closers first: expected-token lists print in this order. */
%token ')' ']' '}' ',' ';'
%token <str> IDENT "identifier"
%token <ival> INT "integer"
%token <fval> FLOAT "float"
%token <str> STRING "string"
%token MODEL "'model'" FN "'fn'" EXPORT "'export'" PARAM "'param'" LET "'let'" IMPORT "'import'"
       FOR "'for'" IN "'in'" IF "'if'" ELSE "'else'" WHILE "'while'"
       RETURN "'return'" AND "'and'" OR "'or'" NOT "'not'"
       TRUE "'true'" FALSE "'false'"
%token POW "'**'" FLOORDIV "'//'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='"
       DOTDOT "'..'" ELLIPSIS "'...'" ARROW "'->'"
/* Selects the REPL grammar: td_parse_repl pushes it first; the lexer never
 * produces it. */
%token REPL_START "start of a REPL input"

%type <str> name
%type <node> item import model mparams model_body members member fn plain_fn ret
%type <node> params param_list pdecl opt_type opt_default
%type <node> type type_list dims dim
%type <node> block stmts stmt let_names iter
%type <node> expr postfix primary if_expr else_part exprs arg_list arg
%type <node> indices index slice oexpr

%left OR
%left AND
%precedence NOT
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' FLOORDIV '%' '@'
%precedence UMINUS
%right POW

%%

/* ---- files and REPL inputs ---- */

input
  : module
  | REPL_START repl
  | REPL_START repl stmt    { PUSH(tp->module, $3); }
  ;

/* A REPL input: items and statements in any order, appended to the module
 * node as they are parsed (see td_parse_repl). */
repl
  : %empty
  | repl ';'
  | repl item           { PUSH(tp->module, $2); }
  | repl stmt ';'       { PUSH(tp->module, $2); }
  | repl error ';'      { yyerrok; }
  ;

/* ---- items ---- */

module
  : %empty
  | module ';'
  | module item         { PUSH(tp->module, $2); }
  | module error ';'     { yyerrok; }
  ;

item
  : import | model | fn
  | EXPORT model        { $$ = $2;
                          td_diag *g = td_error(tp->diags, @1, "only functions can be exported, not a model");
                          td_diag_help(tp->diags, g, "mark the methods that are entry points: "
                                       "model %s { export fn forward(...) { ... } }", $2 ? $2->name : "M"); }
  ;

name
  : IDENT
  | IN                  { $$ = "in"; }   /* `in` is a keyword only in `for` */
  ;

import
  : IMPORT name         { NODE($$, TD_A_IMPORT, @$, $2, NULL, NULL, NULL); }
  ;

model
  : MODEL name mparams model_body
                        { NODE($$, TD_A_MODEL, @$, $2, $4, NULL, NULL); take_list($$, $3); }
  | MODEL name error model_body
                        { NODE($$, TD_A_MODEL, @$, $2, $4, NULL, NULL); }
  ;

mparams
  : %empty              { LIST($$, @$); }
  | params
  ;

model_body
  : '{' members '}'         { $$ = $2; $$->span = @$; }
  | '{' members member '}'  { $$ = $2; $$->span = @$; PUSH($$, $3); }
  | '{' members error '}'   { $$ = $2; $$->span = @$; }
  ;

members
  : %empty                  { NODE($$, TD_A_MEMBERS, @$, NULL, NULL, NULL, NULL); }
  | members ';'
  | members member ';'      { $$ = $1; PUSH($$, $2); }
  | members fn              { $$ = $1; PUSH($$, $2); }
  | members error ';'       { $$ = $1; yyerrok; }
  ;

member
  : PARAM name ':' type '=' expr
                        { NODE($$, TD_A_PARAM, @$, $2, $4, $6, NULL); }
  | PARAM name ':' type '=' expr IF expr
                        { NODE($$, TD_A_PARAM, @$, $2, $4, $6, $8); }
  | name '=' expr       { NODE($$, TD_A_MEMBER, @$, $1, $3, NULL, NULL); }
  ;

/* `export fn`: an entry point, marked (docs/language.md, "Entry points");
 * ival = 1 on the FN node.  Only functions are exported (`export model`,
 * an item below, is an error that says where the word goes). */
fn
  : plain_fn
  | EXPORT plain_fn     { $$ = $2; if ($$) $$->ival = 1; }
  ;

plain_fn
  : FN name params ret block
                        { NODE($$, TD_A_FN, @$, $2, $4, $5, NULL); take_list($$, $3); }
  | FN name error block { NODE($$, TD_A_FN, @$, $2, NULL, $4, NULL); }
  ;

ret
  : %empty              { $$ = NULL; }
  | ARROW type          { $$ = $2; }
  ;

/* Comma lists spell out their closing bracket (rather than using an
 * optional-comma symbol) so that errors after an element expect both the
 * closer and ','. */
params
  : '(' ')'                 { LIST($$, @$); }
  | '(' param_list ')'      { $$ = $2; }
  | '(' param_list ',' ')'  { $$ = $2; }
  ;

param_list
  : pdecl                   { LIST($$, @$); PUSH($$, $1); }
  | param_list ',' pdecl    { $$ = $1; PUSH($$, $3); }
  ;

pdecl
  : name opt_type opt_default
                        { NODE($$, TD_A_PARAMDECL, @$, $1, $2, $3, NULL); }
  ;

opt_type
  : %empty              { $$ = NULL; }
  | ':' type            { $$ = $2; }
  ;

opt_default
  : %empty              { $$ = NULL; }
  | '=' expr            { $$ = $2; }
  ;

/* ---- types ---- */

type
  : name                { NODE($$, TD_A_TNAME, @$, $1, NULL, NULL, NULL); }
  | name '[' ']'        { NODE($$, TD_A_TTENSOR, @$, $1, NULL, NULL, NULL); }
  | name '[' dims ']'   { NODE($$, TD_A_TTENSOR, @$, $1, NULL, NULL, NULL); take_list($$, $3); }
  | '(' ')'             { NODE($$, TD_A_TTUPLE, @$, NULL, NULL, NULL, NULL); }
  | '(' type ')'        { $$ = $2; }
  | '(' type ',' ')'    { NODE($$, TD_A_TTUPLE, @$, NULL, NULL, NULL, NULL); PUSH($$, $2); }
  | '(' type ',' type_list ')'
                        { CHECK($$ = tuple(tp, TD_A_TTUPLE, $2, $4, @$)); }
  | '(' type ',' type_list ',' ')'
                        { CHECK($$ = tuple(tp, TD_A_TTUPLE, $2, $4, @$)); }
  ;

type_list
  : type                { LIST($$, @$); PUSH($$, $1); }
  | type_list ',' type  { $$ = $1; PUSH($$, $3); }
  ;

dims
  : dim                 { LIST($$, @$); PUSH($$, $1); }
  | dims ',' dim        { $$ = $1; PUSH($$, $3); }
  ;

dim
  : expr
  | ELLIPSIS            { NODE($$, TD_A_ELLIPSIS, @$, NULL, NULL, NULL, NULL); }
  ;

/* ---- statements ---- */

block
  : '{' stmts '}'           { CHECK($$ = finish_block(tp, $2, NULL, @$)); }
  | '{' stmts stmt '}'      { CHECK($$ = finish_block(tp, $2, $3, @$)); }
  | '{' stmts error '}'     { CHECK($$ = finish_block(tp, $2, NULL, @$)); }
  ;

stmts
  : %empty                  { NODE($$, TD_A_BLOCK, @$, NULL, NULL, NULL, NULL); }
  | stmts ';'
  | stmts stmt ';'          { $$ = $1; PUSH($$, $2); }
  | stmts error ';'         { $$ = $1; yyerrok; }
  ;

stmt
  : LET name opt_type '=' expr
                        { NODE($$, TD_A_LET, @$, $2, $3, $5, NULL); }
  | LET '(' let_names ')' '=' expr
                        { NODE($$, TD_A_LET, @$, NULL, NULL, $6, NULL); take_list($$, $3); }
  | name '=' expr       { NODE($$, TD_A_ASSIGN, @$, $1, NULL, $3, NULL); }
  | expr                { NODE($$, TD_A_EXPRSTMT, @$, NULL, $1, NULL, NULL); }
  | FOR name IN iter block
                        { NODE($$, TD_A_FOR, @$, $2, $4, $5, NULL); }
  | FOR error block     { $$ = NULL; }
  | WHILE expr block    { NODE($$, TD_A_WHILE, @$, NULL, $2, $3, NULL); }
  | WHILE error block   { $$ = NULL; }
  | RETURN              { NODE($$, TD_A_RETURN, @$, NULL, NULL, NULL, NULL); }
  | RETURN expr         { NODE($$, TD_A_RETURN, @$, NULL, $2, NULL, NULL); }
  ;

let_names
  : name                { td_ast *n; NODE(n, TD_A_NAME, @1, $1, NULL, NULL, NULL);
                          LIST($$, @$); PUSH($$, n); }
  | let_names ',' name  { td_ast *n; NODE(n, TD_A_NAME, @3, $3, NULL, NULL, NULL);
                          $$ = $1; PUSH($$, n); }
  ;

iter
  : expr
  | expr DOTDOT expr    { NODE($$, TD_A_RANGE, @$, NULL, $1, $3, NULL); }
  ;

/* ---- expressions ---- */

expr
  : expr OR expr        { BIN($$, TD_OP_OR, $1, $3, @$); }
  | expr AND expr       { BIN($$, TD_OP_AND, $1, $3, @$); }
  | NOT expr            { NODE($$, TD_A_UNARY, @$, NULL, $2, NULL, NULL); $$->op = TD_OP_NOT; }
  | expr EQ expr        { BIN($$, TD_OP_EQ, $1, $3, @$); }
  | expr NE expr        { BIN($$, TD_OP_NE, $1, $3, @$); }
  | expr '<' expr       { BIN($$, TD_OP_LT, $1, $3, @$); }
  | expr LE expr        { BIN($$, TD_OP_LE, $1, $3, @$); }
  | expr '>' expr       { BIN($$, TD_OP_GT, $1, $3, @$); }
  | expr GE expr        { BIN($$, TD_OP_GE, $1, $3, @$); }
  | expr '+' expr       { BIN($$, TD_OP_ADD, $1, $3, @$); }
  | expr '-' expr       { BIN($$, TD_OP_SUB, $1, $3, @$); }
  | expr '*' expr       { BIN($$, TD_OP_MUL, $1, $3, @$); }
  | expr '/' expr       { BIN($$, TD_OP_DIV, $1, $3, @$); }
  | expr FLOORDIV expr  { BIN($$, TD_OP_FLOORDIV, $1, $3, @$); }
  | expr '%' expr       { BIN($$, TD_OP_MOD, $1, $3, @$); }
  | expr '@' expr       { BIN($$, TD_OP_MATMUL, $1, $3, @$); }
  | '-' expr %prec UMINUS
                        { NODE($$, TD_A_UNARY, @$, NULL, $2, NULL, NULL); $$->op = TD_OP_NEG; }
  | '+' expr %prec UMINUS
                        { NODE($$, TD_A_UNARY, @$, NULL, $2, NULL, NULL); $$->op = TD_OP_POS; }
  | expr POW expr       { BIN($$, TD_OP_POW, $1, $3, @$); }
  | postfix
  ;

postfix
  : primary
  | postfix '(' ')'         { NODE($$, TD_A_CALL, @$, NULL, $1, NULL, NULL); }
  | postfix '(' arg_list ')'
                            { NODE($$, TD_A_CALL, @$, NULL, $1, NULL, NULL); take_list($$, $3); }
  | postfix '(' arg_list ',' ')'
                            { NODE($$, TD_A_CALL, @$, NULL, $1, NULL, NULL); take_list($$, $3); }
  | postfix '(' error ')'   { NODE($$, TD_A_CALL, @$, NULL, $1, NULL, NULL); }
  | postfix '[' indices ']' { NODE($$, TD_A_INDEX, @$, NULL, $1, NULL, NULL); take_list($$, $3); }
  | postfix '[' error ']'   { NODE($$, TD_A_INDEX, @$, NULL, $1, NULL, NULL); }
  | postfix '.' name        { NODE($$, TD_A_FIELD, @$, $3, $1, NULL, NULL); }
  ;

arg_list
  : arg                     { LIST($$, @$); PUSH($$, $1); }
  | arg_list ',' arg        { $$ = $1; PUSH($$, $3); }
  ;

arg
  : expr
  | name '=' expr           { NODE($$, TD_A_KWARG, @$, $1, $3, NULL, NULL); }
  ;

indices
  : index                   { LIST($$, @$); PUSH($$, $1); }
  | indices ',' index       { $$ = $1; PUSH($$, $3); }
  ;

index
  : expr
  | ELLIPSIS                { NODE($$, TD_A_ELLIPSIS, @$, NULL, NULL, NULL, NULL); }
  | slice
  ;

slice
  : oexpr ':' oexpr         { NODE($$, TD_A_SLICE, @$, NULL, $1, $3, NULL); }
  | oexpr ':' oexpr ':' oexpr
                            { NODE($$, TD_A_SLICE, @$, NULL, $1, $3, $5); }
  ;

oexpr
  : %empty                  { $$ = NULL; }
  | expr
  ;

primary
  : INT                     { NODE($$, TD_A_INT, @$, NULL, NULL, NULL, NULL); $$->ival = $1; }
  | FLOAT                   { NODE($$, TD_A_FLOAT, @$, NULL, NULL, NULL, NULL); $$->fval = $1; }
  | STRING                  { NODE($$, TD_A_STR, @$, $1, NULL, NULL, NULL); }
  | TRUE                    { NODE($$, TD_A_BOOL, @$, NULL, NULL, NULL, NULL); $$->ival = 1; }
  | FALSE                   { NODE($$, TD_A_BOOL, @$, NULL, NULL, NULL, NULL); }
  | name                    { NODE($$, TD_A_NAME, @$, $1, NULL, NULL, NULL); }
  | '(' ')'                 { NODE($$, TD_A_TUPLE, @$, NULL, NULL, NULL, NULL); }
  | '(' expr ')'            { $$ = $2; }
  | '(' expr ',' ')'        { NODE($$, TD_A_TUPLE, @$, NULL, NULL, NULL, NULL); PUSH($$, $2); }
  | '(' expr ',' exprs ')'  { CHECK($$ = tuple(tp, TD_A_TUPLE, $2, $4, @$)); }
  | '(' expr ',' exprs ',' ')'
                            { CHECK($$ = tuple(tp, TD_A_TUPLE, $2, $4, @$)); }
  | '(' error ')'           { NODE($$, TD_A_TUPLE, @$, NULL, NULL, NULL, NULL); }
  | '[' ']'                 { LIST($$, @$); }
  | '[' exprs ']'           { $$ = $2; $$->span = @$; }
  | '[' exprs ',' ']'       { $$ = $2; $$->span = @$; }
  | '[' expr FOR name IN iter ']'
                            { NODE($$, TD_A_LISTCOMP, @$, $4, $2, $6, NULL); }
  | '[' error ']'           { LIST($$, @$); }
  | if_expr
  ;

exprs
  : expr                    { LIST($$, @$); PUSH($$, $1); }
  | exprs ',' expr          { $$ = $1; PUSH($$, $3); }
  ;

if_expr
  : IF expr block else_part { NODE($$, TD_A_IF, @$, NULL, $2, $3, $4); }
  | IF error block else_part
                            { td_ast *c; NODE(c, TD_A_TUPLE, @2, NULL, NULL, NULL, NULL);
                              NODE($$, TD_A_IF, @$, NULL, c, $3, $4); }
  ;

else_part
  : %empty                  { $$ = NULL; }
  | ELSE block              { $$ = $2; }
  | ELSE if_expr            { $$ = $2; }
  ;

%%

/* ---- locations and nodes ---- */

/* The span of a rule: from its first to its last non-empty symbol (empty
 * ones are zero-width: virtual ';', end of file, %empty rules). */
static td_span rule_span(const td_span *rhs, int n) {
  int first = 0, last = 0;
  for (int i = 1; i <= n; i++) {
    if (rhs[i].end <= rhs[i].start) continue;
    if (!first) first = i;
    last = i;
  }
  if (first) return td_span_join(rhs[first], rhs[last]);
  if (n > 0) return rhs[n];
  td_span sp = rhs[0];
  sp.end = sp.start;
  return sp;
}

/* The tree's depth is bounded, so that every recursive pass over it is
 * safe: operator and postfix chains (`a + b + ...`, `f(x)(y)...`) grow the
 * tree without growing Bison's stack.  Each node the parser makes carries
 * its height just before it in memory; a child that reaches MAX_DEPTH is
 * reported once and replaced by `()`. */
#define MAX_DEPTH 1000

typedef struct pnode {
  int height;
  td_ast node;
} pnode;

static int height(const td_ast *n) {
  return n ? ((const pnode *)(const void *)((const char *)n - offsetof(pnode, node)))->height
           : 0;
}

static void grow(td_ast *parent, const td_ast *child) {
  pnode *p = (pnode *)(void *)((char *)parent - offsetof(pnode, node));
  if (height(child) >= p->height) p->height = height(child) + 1;
}

/* child, or `()` in its place when it is too deep. */
static td_ast *bounded(td_parser *tp, td_ast *child) {
  if (height(child) < MAX_DEPTH) return child;
  if (!tp->too_deep)
    td_error(tp->diags, child->span, "expression nested too deeply (over %d levels)", MAX_DEPTH);
  tp->too_deep = 1;
  return mk(tp, TD_A_TUPLE, child->span, NULL, NULL, NULL, NULL);
}

static td_ast *mk(td_parser *tp, td_ast_kind k, td_span sp, const char *name,
                  td_ast *a, td_ast *b, td_ast *c) {
  pnode *p = td_arena_alloc(tp->arena, sizeof *p);
  if (!p) return NULL;
  td_ast *n = &p->node;
  p->height = 1;
  n->kind = k;
  n->span = sp;
  n->name = name;
  if ((a && !(n->a = bounded(tp, a))) || (b && !(n->b = bounded(tp, b))) ||
      (c && !(n->c = bounded(tp, c))))
    return NULL;
  grow(n, n->a);
  grow(n, n->b);
  grow(n, n->c);
  return n;
}

static td_ast *binary(td_parser *tp, int op, td_ast *a, td_ast *b, td_span sp) {
  td_ast *n = mk(tp, TD_A_BINARY, sp, NULL, a, b, NULL);
  if (n) n->op = op;
  return n;
}

/* Appends child to parent's list; a NULL child (a statement dropped by
 * error recovery) is skipped.  0 or -1 (out of memory). */
static int push(td_parser *tp, td_ast *parent, td_ast *child) {
  if (!child) return 0;
  if (!(child = bounded(tp, child)) || td_ast_push(tp->arena, parent, child) < 0) return -1;
  grow(parent, child);
  return 0;
}

/* Gives dst the elements collected in the scratch LIST src. */
static td_ast *take_list(td_ast *dst, const td_ast *src) {
  dst->list = src->list;
  dst->n = src->n;
  grow(dst, src);
  return dst;
}

/* A TUPLE or TTUPLE of first and the elements of the scratch LIST rest. */
static td_ast *tuple(td_parser *tp, td_ast_kind k, td_ast *first, const td_ast *rest,
                     td_span sp) {
  td_ast *t = mk(tp, k, sp, NULL, NULL, NULL, NULL);
  if (!t || push(tp, t, first) < 0) return NULL;
  for (int i = 0; i < rest->n; i++)
    if (push(tp, t, rest->list[i]) < 0) return NULL;
  return t;
}

/* Closes a block: appends the final statement (written without ';'), then
 * makes a trailing expression statement (an `if` included) the value. */
static td_ast *finish_block(td_parser *tp, td_ast *b, td_ast *last, td_span sp) {
  if (push(tp, b, last) < 0) return NULL;
  b->span = sp;
  if (b->n > 0 && b->list[b->n - 1]->kind == TD_A_EXPRSTMT) b->a = b->list[--b->n]->a;
  return b;
}

static int tdyylex(TDYYSTYPE *val, td_span *loc, td_parser *tp) {
  return td_lex(tp->lx, val, loc);
}

/* Bison calls this only when its stack is full or an action ran out of
 * memory (its state is made by the callers, which report its failure). */
static void tdyyerror(const td_span *loc, td_parser *tp, const char *msg) {
  (void)msg;
  if (tp->oom)
    td_diags_oom(tp->diags, *loc);
  else
    td_error(tp->diags, *loc, "the program is nested too deeply (over %d levels)", YYMAXDEPTH);
}

/* ---- syntax error messages ---- */

#define SYM(code) YYTRANSLATE(code)
#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* Whether symbol k is one of the token codes in set. */
static int in_set(yysymbol_kind_t k, const int *set, int n) {
  for (int i = 0; i < n; i++)
    if (SYM(set[i]) == k) return 1;
  return 0;
}

static const int expr_starts[] = {TDT_IDENT, TDT_IN, TDT_INT, TDT_FLOAT, TDT_STRING,
                                  TDT_TRUE, TDT_FALSE, TDT_NOT, TDT_IF, '(', '[', '-', '+'};
static const int stmt_keywords[] = {TDT_LET, TDT_FOR, TDT_WHILE, TDT_RETURN};
static const int operators[] = {TDT_OR, TDT_AND, TDT_EQ, TDT_NE, '<', TDT_LE, '>', TDT_GE,
                                '+', '-', '*', '/', TDT_FLOORDIV, '%', '@', TDT_POW, '(', '[', '.'};
static const int comparisons[] = {TDT_EQ, TDT_NE, '<', TDT_LE, '>', TDT_GE};

/* The expected tokens of an error, as a phrase: "')' or ','".  Token
 * families are summarised ("a statement", "an expression", "an operator");
 * an empty string when the list would be too long to help. */
static void expected_phrase(const yypcontext_t *ctx, char *out, size_t size) {
  yysymbol_kind_t ex[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, ex, YYNTOKENS);
  int has[YYNTOKENS] = {0};
  for (int i = 0; i < n; i++) has[ex[i]] = 1;
  const char *words[8];
  int nw = 0;
  int items = has[SYM(TDT_FN)] && has[SYM(TDT_IMPORT)];
  if (has[SYM(TDT_LET)] && has[SYM(TDT_IDENT)]) words[nw++] = "a statement";
  else if (has[SYM(TDT_IDENT)] && has[SYM(TDT_INT)]) words[nw++] = "an expression";
  int exprs = nw > 0, ops = has[SYM('*')] && has[SYM('+')];
  if (ops) words[nw++] = "an operator";
  for (int i = 0; i < n && nw < 8; i++) {
    yysymbol_kind_t k = ex[i];
    if (exprs && (in_set(k, expr_starts, COUNT(expr_starts)) ||
                  in_set(k, stmt_keywords, COUNT(stmt_keywords))))
      continue;
    if (ops && in_set(k, operators, COUNT(operators))) continue;
    if (items && (k == SYM(';') || k == YYSYMBOL_YYEOF)) continue;
    if (k == SYM(TDT_EXPORT)) continue;   /* `export` goes with 'fn', which is listed */
    words[nw++] = k == SYM(';') ? "end of line" : yysymbol_name(k);
  }
  out[0] = '\0';
  if (n == 0 || nw > 5) return;
  size_t len = 0;
  for (int i = 0; i < nw && len < size; i++) {
    const char *sep = i == 0 ? "" : i == nw - 1 ? " or " : ", ";
    len += (size_t)snprintf(out + len, size - len, "%s%s", sep, words[i]);
  }
}

/* The source text of a span, at most 40 bytes. */
static int span_text(const td_parser *tp, td_span sp, const char **text) {
  const td_source *s = td_diags_source(tp->diags, sp.file);
  int n = sp.end - sp.start;
  if (!s || sp.start < 0 || n <= 0 || (size_t)sp.end > s->len) return *text = "", 0;
  *text = s->text + sp.start;
  return n > 40 ? 40 : n;
}

/* "end of line", "identifier 'foo'", "'}'". */
static void token_phrase(const td_parser *tp, yysymbol_kind_t k, td_span sp, char *out,
                         size_t size) {
  const char *t;
  int n = span_text(tp, sp, &t);
  if (k == SYM(';') && n == 0)
    snprintf(out, size, "end of line");
  else if (k == SYM(TDT_IDENT) || k == SYM(TDT_INT) || k == SYM(TDT_FLOAT))
    snprintf(out, size, "%s '%.*s'", yysymbol_name(k), n, t);
  else
    snprintf(out, size, "%s", yysymbol_name(k));
}

/* Words from other languages, and what tdsl writes instead. */
static const char *foreign_word(const td_parser *tp, td_span sp) {
  static const char *const table[][2] = {
      {"def", "did you mean 'fn'?"},   {"function", "did you mean 'fn'?"},
      {"func", "did you mean 'fn'?"},  {"class", "did you mean 'model'?"},
      {"var", "did you mean 'let'?"},  {"const", "did you mean 'let'?"},
      {"elif", "write 'else if'"},     {"elsif", "write 'else if'"},
  };
  const char *t;
  int n = span_text(tp, sp, &t);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if ((int)strlen(table[i][0]) == n && strncmp(t, table[i][0], (size_t)n) == 0)
      return table[i][1];
  return NULL;
}

static int expects(const yypcontext_t *ctx, yysymbol_kind_t want) {
  yysymbol_kind_t ex[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, ex, YYNTOKENS);
  for (int i = 0; i < n; i++)
    if (ex[i] == want) return 1;
  return 0;
}

/* Adds the fix to g when the mistake is a common one. */
static void add_help(td_parser *tp, const yypcontext_t *ctx, td_diag *g, yysymbol_kind_t k,
                     td_span sp) {
  const td_lexer *lx = tp->lx;
  td_span prev = lx ? lx->prev_span : sp;
  const char *t;
  const char *word = foreign_word(tp, sp);
  if (!word && lx && prev.end <= sp.start) word = foreign_word(tp, prev);
  if (word) {
    td_diag_help(tp->diags, g, "%s", word);
  } else if (k == SYM('=') && lx && lx->in_cond) {
    td_diag_help(tp->diags, g, "`=` is assignment; use `==` to compare");
  } else if (k == SYM('=') && lx && prev.end == sp.start && span_text(tp, prev, &t) == 1 &&
             strchr("+-*/%@", t[0])) {
    td_diag_help(tp->diags, g, "there is no `%c=`; write `x = x %c ...`", t[0], t[0]);
  } else if (k == SYM(':') && expects(ctx, SYM('{'))) {
    td_diag_help(tp->diags, g, "blocks are written in braces `{ ... }`, not with ':'");
  } else if (k == SYM(';') && sp.end == sp.start && expects(ctx, SYM('{'))) {
    td_diag_help(tp->diags, g, "put the '{' on the same line");
  } else if (in_set(k, comparisons, COUNT(comparisons)) && !expects(ctx, SYM(TDT_IDENT))) {
    td_diag_help(tp->diags, g, "comparisons do not chain: write `a < b and b < c`");
  }
}

/* Called by Bison on a syntax error (parse.error custom). */
static int yyreport_syntax_error(const yypcontext_t *ctx, td_parser *tp) {
  yysymbol_kind_t k = yypcontext_token(ctx);
  td_span sp = *yypcontext_location(ctx);
  char tok[96], ex[256];
  token_phrase(tp, k, sp, tok, sizeof tok);
  expected_phrase(ctx, ex, sizeof ex);
  td_diag *g = ex[0] ? td_error(tp->diags, sp, "unexpected %s, expected %s", tok, ex)
                     : td_error(tp->diags, sp, "unexpected %s", tok);
  add_help(tp, ctx, g, k, sp);
  char c;
  const td_span *open = tp->lx ? td_lex_open_bracket(tp->lx, &c) : NULL;
  if (k == YYSYMBOL_YYEOF && open) td_diag_note(tp->diags, g, *open, "'%c' opened here", c);
  return 0;
}

/* ---- entry point ---- */

td_ast *td_parse(td_diags *diags, int file_id) {
  const td_source *src = td_diags_source(diags, file_id);
  if (!src) return NULL;
  td_lexer lx;
  td_lexer_init(&lx, diags, file_id);
  td_parser tp = {diags, diags->arena, &lx, NULL, 0, 0};
  td_span whole = {file_id, 0, (int)src->len, 1, 1};
  /* through mk, like every node: the height header it keeps must exist */
  tp.module = mk(&tp, TD_A_MODULE, whole, NULL, NULL, NULL, NULL);
  tdyypstate *ps = tp.module ? tdyypstate_new() : NULL;
  if (!ps) return td_diags_oom(diags, whole), NULL;
  tdyypull_parse(ps, &tp);
  tdyypstate_delete(ps);
  if (lx.oom && !tp.oom) td_diags_oom(diags, lx.last_span);
  return tp.oom || lx.oom ? NULL : tp.module;
}

/* The REPL's answer for text that ends before its last statement does: an
 * open bracket, or a last token after which a newline does not end a
 * statement (an operator, ',', '=', `else`).  Only a text with no error so
 * far counts: more lines cannot fix a mistake already made. */
static int needs_more(const td_lexer *lx, int last_tok, int errors_before) {
  if (lx->diags->n_errors > errors_before || lx->oom) return 0;
  return lx->nest > 0 || (last_tok != 0 && last_tok != ';');
}

td_ast *td_parse_repl(td_diags *diags, int file_id, int first_line, int *incomplete) {
  const td_source *src = td_diags_source(diags, file_id);
  int more = 0;
  if (!src) return NULL;
  td_lexer lx;
  td_lexer_init(&lx, diags, file_id);
  lx.line = first_line > 0 ? first_line : 1;
  td_parser tp = {diags, diags->arena, &lx, NULL, 0, 0};
  td_span whole = {file_id, 0, (int)src->len, lx.line, 1};
  /* through mk, like every node: the height header it keeps must exist */
  tp.module = mk(&tp, TD_A_MODULE, whole, NULL, NULL, NULL, NULL);
  tdyypstate *ps = tp.module ? tdyypstate_new() : NULL;
  if (!ps) return td_diags_oom(diags, whole), NULL;
  int before = diags->n_errors, last = 0, tok = TDT_REPL_START;
  TDYYSTYPE val;
  td_span loc = whole;
  memset(&val, 0, sizeof val);
  loc.end = 0;
  int status = tdyypush_parse(ps, tok, &val, &loc, &tp);
  while (status == YYPUSH_MORE) {
    tok = td_lex(&lx, &val, &loc);
    if (tok == TDT_YYEOF && incomplete && needs_more(&lx, last, before)) {
      more = 1;
      break;
    }
    last = tok;
    status = tdyypush_parse(ps, tok, &val, &loc, &tp);
  }
  tdyypstate_delete(ps);
  if (lx.oom && !tp.oom) td_diags_oom(diags, lx.last_span);
  if (incomplete) *incomplete = more;
  return tp.oom || lx.oom || more ? NULL : tp.module;
}

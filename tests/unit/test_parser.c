/* test_parser.c - Criterion tests of the lexer and parser.
 *
 * Valid programs are checked through their AST dump (td_ast_dump) against
 * S-expressions written by hand from docs/language.md; invalid ones through
 * the exact text and position of their diagnostics.  Random bytes, deep
 * nesting and failing allocations must never crash the parser.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* open_memstream */
#endif
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lang/ast.h"
#include "lang/lexer/lexer.h" /* and the generated parser.h: the push interface */

typedef struct parsed {
  td_arena *arena;
  td_diags diags;
  td_ast *ast;
} parsed;

static parsed parse_n(const char *src, size_t len) {
  parsed p;
  p.arena = td_arena_new();
  cr_assert(p.arena);
  td_diags_init(&p.diags, p.arena);
  int id = td_diags_add_source(&p.diags, "t.td", src, len);
  cr_assert_geq(id, 0);
  p.ast = td_parse(&p.diags, id);
  return p;
}

static parsed parse(const char *src) { return parse_n(src, strlen(src)); }

static void done(parsed *p) { td_arena_free(p->arena); }

/* The dump of n as a malloc'd string, without its final newline. */
static char *dump(const td_ast *n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  td_ast_dump(n, f);
  fclose(f);
  if (len && buf[len - 1] == '\n') buf[len - 1] = '\0';
  return buf;
}

/* All diagnostics as "line:col: message" lines (with "help: ..." lines). */
static char *diag_text(const parsed *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  for (int i = 0; i < p->diags.n; i++) {
    const td_diag *g = &p->diags.items[i];
    fprintf(f, "%d:%d: %s\n", g->span.line, g->span.col, g->msg);
    if (g->help) fprintf(f, "help: %s\n", g->help);
  }
  fclose(f);
  return buf;
}

/* Parses a whole file that must have no errors; compares its dump. */
static void check_module(const char *src, const char *want) {
  parsed p = parse(src);
  char *d = diag_text(&p);
  cr_assert_eq(p.diags.n, 0, "unexpected diagnostics for\n%s\n%s", src, d);
  cr_assert(p.ast);
  char *got = dump(p.ast);
  cr_expect_str_eq(got, want, "source:\n%s\ngot:\n%s\nwant:\n%s", src, got, want);
  free(got);
  free(d);
  done(&p);
}

/* Parses `fn f() { <body> }` and compares the dump of the body BLOCK. */
static void check_block(const char *body, const char *want) {
  char src[1024];
  snprintf(src, sizeof src, "fn f() {%s}", body);
  parsed p = parse(src);
  char *d = diag_text(&p);
  cr_assert_eq(p.diags.n, 0, "unexpected diagnostics for\n%s\n%s", src, d);
  cr_assert(p.ast && p.ast->n == 1 && p.ast->list[0]->kind == TD_A_FN);
  char *got = dump(p.ast->list[0]->b);
  cr_expect_str_eq(got, want, "source:\n%s\ngot:\n%s\nwant:\n%s", src, got, want);
  free(got);
  free(d);
  done(&p);
}

/* An expression's dump: the value of `fn f() { <e> }`. */
static void check_expr(const char *e, const char *want) {
  char src[1024];
  snprintf(src, sizeof src, "fn f() { %s }", e);
  parsed p = parse(src);
  char *d = diag_text(&p);
  cr_assert_eq(p.diags.n, 0, "unexpected diagnostics for %s\n%s", e, d);
  cr_assert(p.ast && p.ast->n == 1);
  const td_ast *value = p.ast->list[0]->b->a;
  cr_assert(value, "no block value for %s", e);
  char *got = dump(value);
  cr_expect_str_eq(got, want, "expression: %s", e);
  free(got);
  free(d);
  done(&p);
}

/* Parses a file that must fail; compares all its diagnostics. */
static void check_errors(const char *src, const char *want) {
  parsed p = parse(src);
  char *got = diag_text(&p);
  cr_expect_str_eq(got, want, "source:\n%s\ngot:\n%s\nwant:\n%s", src, got, want);
  cr_expect_eq(p.diags.n_errors, p.diags.n);
  free(got);
  done(&p);
}

/* ---- expressions ---- */

Test(parser, literals) {
  check_expr("42", "(int 42)");
  check_expr("0x2a", "(int 42)");
  check_expr("0XFF_ff", "(int 65535)");
  check_expr("1_000_000", "(int 1000000)");
  check_expr("9223372036854775807", "(int 9223372036854775807)");
  check_expr("3.5", "(float 3.5)");
  check_expr("1e-5", "(float 1e-05)");
  check_expr("2.", "(float 2)");
  check_expr(".5", "(float 0.5)");
  check_expr("1_0.2_5e1", "(float 102.5)");
  check_expr("0.1", "(float 0.1)");
  check_expr("true", "(bool true)");
  check_expr("false", "(bool false)");
  check_expr("\"a\\tb\\n\\\\\\\"\"", "(str \"a\\tb\\n\\\\\\\"\")");
  check_expr("\"\"", "(str \"\")");
}

Test(parser, names_fields_calls) {
  check_expr("x", "(name x)");
  check_expr("in", "(name in)");
  check_expr("x.T", "(field T (name x))");
  check_expr("nn.Linear(4, 2)", "(call (field Linear (name nn)) (int 4) (int 2))");
  check_expr("f()", "(call (name f))");
  check_expr("rand([2, 3], seed = 0)",
             "(call (name rand) (list (int 2) (int 3)) (kwarg seed (int 0)))");
  check_expr("Linear(in = 4, out = 2)",
             "(call (name Linear) (kwarg in (int 4)) (kwarg out (int 2)))");
  check_expr("f(a, b,)", "(call (name f) (name a) (name b))");
  check_expr("layers[i](h).shape[0]",
             "(index (field shape (call (index (name layers) (name i)) (name h))) (int 0))");
}

Test(parser, indexing) {
  check_expr("x[0]", "(index (name x) (int 0))");
  check_expr("x[-1]", "(index (name x) (unary - (int 1)))");
  check_expr("x[:, 1:3]", "(index (name x) (slice _ _ _) (slice (int 1) (int 3) _))");
  check_expr("x[..., -1]", "(index (name x) (ellipsis) (unary - (int 1)))");
  check_expr("x[::2]", "(index (name x) (slice _ _ (int 2)))");
  check_expr("x[::-1]", "(index (name x) (slice _ _ (unary - (int 1))))");
  check_expr("x[1:]", "(index (name x) (slice (int 1) _ _))");
  check_expr("x[:N - 1]", "(index (name x) (slice _ (binary - (name N) (int 1)) _))");
  check_expr("x[a:b:c]", "(index (name x) (slice (name a) (name b) (name c)))");
  check_expr("x[1::]", "(index (name x) (slice (int 1) _ _))");
}

Test(parser, lists_tuples_comprehensions) {
  check_expr("[]", "(list)");
  check_expr("[1, 2, 3]", "(list (int 1) (int 2) (int 3))");
  check_expr("[1,]", "(list (int 1))");
  check_expr("()", "(tuple)");
  check_expr("(a)", "(name a)");
  check_expr("(a,)", "(tuple (name a))");
  check_expr("(a, b)", "(tuple (name a) (name b))");
  check_expr("(a, b, c,)", "(tuple (name a) (name b) (name c))");
  check_expr("[Linear(d, d) for i in 0..n]",
             "(listcomp i (call (name Linear) (name d) (name d)) (range (int 0) (name n)))");
  check_expr("[i * 2 for i in xs]", "(listcomp i (binary * (name i) (int 2)) (name xs))");
}

Test(parser, precedence) {
  check_expr("-x ** 2", "(unary - (binary ** (name x) (int 2)))");
  check_expr("a + b * c @ d",
             "(binary + (name a) (binary @ (binary * (name b) (name c)) (name d)))");
  check_expr("not a == b", "(unary not (binary == (name a) (name b)))");
  check_expr("2 ** 3 ** 2", "(binary ** (int 2) (binary ** (int 3) (int 2)))");
  check_expr("a - b - c", "(binary - (binary - (name a) (name b)) (name c))");
  check_expr("a / b % c", "(binary % (binary / (name a) (name b)) (name c))");
  check_expr("-a * b", "(binary * (unary - (name a)) (name b))");
  check_expr("2 ** -x", "(binary ** (int 2) (unary - (name x)))");
  check_expr("+a - -b", "(binary - (unary + (name a)) (unary - (name b)))");
  check_expr("-f(x).T", "(unary - (field T (call (name f) (name x))))");
  check_expr("a or b and not c",
             "(binary or (name a) (binary and (name b) (unary not (name c))))");
  check_expr("a and b or c", "(binary or (binary and (name a) (name b)) (name c))");
  check_expr("a + 1 < b * 2",
             "(binary < (binary + (name a) (int 1)) (binary * (name b) (int 2)))");
  check_expr("(a <= b) != (c >= d)",
             "(binary != (binary <= (name a) (name b)) (binary >= (name c) (name d)))");
}

Test(parser, comparisons_do_not_chain) {
  check_errors("fn f() { a < b < c }\n",
               "1:16: unexpected '<', expected an operator\n"
               "help: comparisons do not chain: write `a < b and b < c`\n");
  check_errors("fn f() { a <= b != c }\n",
               "1:17: unexpected '!=', expected an operator\n"
               "help: comparisons do not chain: write `a < b and b < c`\n");
}

Test(parser, if_expressions) {
  check_expr("if c { 1 } else { 2 }",
             "(if\n"
             "  (name c)\n"
             "  (block\n"
             "    (int 1))\n"
             "  (block\n"
             "    (int 2)))");
  check_expr("if c { 1 } else if d { 2 } else { 3 }",
             "(if\n"
             "  (name c)\n"
             "  (block\n"
             "    (int 1))\n"
             "  (if\n"
             "    (name d)\n"
             "    (block\n"
             "      (int 2))\n"
             "    (block\n"
             "      (int 3))))");
  check_expr("if c { }", "(if\n  (name c)\n  (block\n    _)\n  _)");
}

/* ---- statements, blocks and line ends ---- */

Test(parser, statements) {
  check_block("\n  let y = x @ w\n  let y: f32[N, 2] = f(x)\n  let (a, b) = pair(x)\n"
              "  print(\"mean\", mean(y))\n  y = y + 1\n  return y\n",
              "(block\n"
              "  (let y _ (binary @ (name x) (name w)))\n"
              "  (let y (ttensor f32 (name N) (int 2)) (call (name f) (name x)))\n"
              "  (let (names (name a) (name b)) _ (call (name pair) (name x)))\n"
              "  (exprstmt (call (name print) (str \"mean\") (call (name mean) (name y))))\n"
              "  (assign y (binary + (name y) (int 1)))\n"
              "  (return (name y))\n"
              "  _)");
  check_block(" return ", "(block\n  (return _)\n  _)");
  check_block(" while c { x } ",
              "(block\n"
              "  (while\n"
              "    (name c)\n"
              "    (block\n"
              "      (name x)))\n"
              "  _)");
  check_block(" for i in 0..4 { h = block(h) } ",
              "(block\n"
              "  (for i\n"
              "    (range (int 0) (int 4))\n"
              "    (block\n"
              "      (assign h (call (name block) (name h)))\n"
              "      _))\n"
              "  _)");
  check_block(" for j in [1, 2] { } ",
              "(block\n"
              "  (for j\n"
              "    (list (int 1) (int 2))\n"
              "    (block\n"
              "      _))\n"
              "  _)");
}

Test(parser, block_value) {
  /* The automatic ';' after `y + 1` must not hide the block's value. */
  check_block(" let y = x \n y + 1 \n ",
              "(block\n  (let y _ (name x))\n  (binary + (name y) (int 1)))");
  check_block(" let a = 1; a ", "(block\n  (let a _ (int 1))\n  (name a))");
  check_block(" let a = 1; a; ", "(block\n  (let a _ (int 1))\n  (name a))");
  check_block(" x ; y ", "(block\n  (exprstmt (name x))\n  (name y))");
  check_block("", "(block\n  _)");
  check_block("\n  if c {\n    a\n  } else {\n    b\n  }\n",
              "(block\n"
              "  (if\n"
              "    (name c)\n"
              "    (block\n"
              "      (name a))\n"
              "    (block\n"
              "      (name b))))");
}

Test(parser, line_continuation) {
  /* after a binary operator, a comma, '=' and inside ( ) and [ ] */
  check_block("\n let y = x +\n   1\n let z = g(a,\n   b)\n let w =\n   [1,\n 2]\n",
              "(block\n"
              "  (let y _ (binary + (name x) (int 1)))\n"
              "  (let z _ (call (name g) (name a) (name b)))\n"
              "  (let w _ (list (int 1) (int 2)))\n"
              "  _)");
  /* `}` newline `else` continues the if, even across comments and blank lines */
  check_block("\n if c { 1 }\n # comment\n\n else { 2 }\n",
              "(block\n"
              "  (if\n"
              "    (name c)\n"
              "    (block\n"
              "      (int 1))\n"
              "    (block\n"
              "      (int 2))))");
  /* a newline after a name ends the statement: `x` and `-y` are two */
  check_block("\n x\n -y\n", "(block\n  (exprstmt (name x))\n  (unary - (name y)))");
  /* `elsewhere` is not `else` */
  check_block("\n if c { 1 }\n elsewhere\n",
              "(block\n"
              "  (exprstmt\n"
              "    (if\n"
              "      (name c)\n"
              "      (block\n"
              "        (int 1))\n"
              "      _))\n"
              "  (name elsewhere))");
  /* CRLF line ends */
  check_block("\r\n let a = 1\r\n a\r\n", "(block\n  (let a _ (int 1))\n  (name a))");
}

/* ---- types and items ---- */

Test(parser, types) {
  check_module("fn f(a: f32[N, 4], b: f32[], c: f32[..., D], d: int, e: float, g: bool,"
               " h: f32[2 * D], i: f32) -> (f32[N], i64[]) { a }",
               "(module\n"
               "  (fn f\n"
               "    (params (paramdecl a (ttensor f32 (name N) (int 4)) _)"
               " (paramdecl b (ttensor f32) _)"
               " (paramdecl c (ttensor f32 (ellipsis) (name D)) _)"
               " (paramdecl d (tname int) _) (paramdecl e (tname float) _)"
               " (paramdecl g (tname bool) _)"
               " (paramdecl h (ttensor f32 (binary * (int 2) (name D))) _)"
               " (paramdecl i (tname f32) _))\n"
               "    (ttuple (ttensor f32 (name N)) (ttensor i64))\n"
               "    (block\n"
               "      (name a))))");
  check_module("fn f() -> (int,) { }\nfn g() -> () { }\nfn h() -> (int) { }",
               "(module\n"
               "  (fn f\n"
               "    (ttuple (tname int))\n"
               "    (block\n"
               "      _))\n"
               "  (fn g\n"
               "    (ttuple)\n"
               "    (block\n"
               "      _))\n"
               "  (fn h\n"
               "    (tname int)\n"
               "    (block\n"
               "      _)))");
}

/* `export fn` marks an entry point (docs/language.md, "Entry points"), at
 * the top level and in a model; `export model` is an error saying where the
 * word goes. */
Test(parser, export_marks_functions) {
  check_module("export fn f(x: f32[N]) { x }\nfn g() { }\nmodel M { export fn h(y) { y } }",
               "(module\n"
               "  (fn export f\n"
               "    (params (paramdecl x (ttensor f32 (name N)) _))\n"
               "    _\n"
               "    (block\n"
               "      (name x)))\n"
               "  (fn g\n"
               "    _\n"
               "    (block\n"
               "      _))\n"
               "  (model M\n"
               "    (members\n"
               "      (fn export h\n"
               "        (params (paramdecl y _ _))\n"
               "        _\n"
               "        (block\n"
               "          (name y))))))");
  parsed p = parse("export model M { fn f(x) { x } }\n");
  cr_expect_eq(p.diags.n_errors, 1);
  char *got = diag_text(&p);
  cr_expect(strstr(got, "1:1: only functions can be exported, not a model") &&
                strstr(got, "model M { export fn forward(...) { ... } }"),
            "%s", got);
  free(got);
  done(&p);
}

Test(parser, functions) {
  check_module("fn gelu_tanh(x) {                     # untyped\n"
               "  0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))\n"
               "}\n"
               "fn scale(x: f32[N, D], k: float = 2.0) -> f32[N, D] { x * k }\n",
               "(module\n"
               "  (fn gelu_tanh\n"
               "    (params (paramdecl x _ _))\n"
               "    _\n"
               "    (block\n"
               "      (binary * (binary * (float 0.5) (name x)) (binary + (int 1)"
               " (call (name tanh) (binary * (float 0.7978845608) (binary + (name x)"
               " (binary * (float 0.044715) (binary ** (name x) (int 3))))))))))\n"
               "  (fn scale\n"
               "    (params (paramdecl x (ttensor f32 (name N) (name D)) _)"
               " (paramdecl k (tname float) (float 2)))\n"
               "    (ttensor f32 (name N) (name D))\n"
               "    (block\n"
               "      (binary * (name x) (name k)))))");
  check_module("fn f(a = 1, b,) { }",
               "(module\n"
               "  (fn f\n"
               "    (params (paramdecl a _ (int 1)) (paramdecl b _ _))\n"
               "    _\n"
               "    (block\n"
               "      _)))");
}

static const char linear_src[] =
    "import nn                      # stdlib/nn.td\n"
    "\n"
    "model Linear(in: int, out: int, has_bias: bool = true) {\n"
    "  param weight: f32[out, in] = uniform(-1 / sqrt(in), 1 / sqrt(in))\n"
    "  param bias: f32[out] = uniform(-1 / sqrt(in), 1 / sqrt(in)) if has_bias\n"
    "  fn forward(x: f32[..., in]) -> f32[..., out] {\n"
    "    let y = x @ weight.T\n"
    "    if has_bias { y + bias } else { y }\n"
    "  }\n"
    "}\n";

Test(parser, model_linear) {
  const char *init = "(call (name uniform)"
                     " (binary / (unary - (int 1)) (call (name sqrt) (name in)))"
                     " (binary / (int 1) (call (name sqrt) (name in))))";
  char want[2048];
  snprintf(want, sizeof want,
           "(module\n"
           "  (import nn)\n"
           "  (model Linear\n"
           "    (params (paramdecl in (tname int) _) (paramdecl out (tname int) _)"
           " (paramdecl has_bias (tname bool) (bool true)))\n"
           "    (members\n"
           "      (param weight (ttensor f32 (name out) (name in)) %s _)\n"
           "      (param bias (ttensor f32 (name out)) %s (name has_bias))\n"
           "      (fn forward\n"
           "        (params (paramdecl x (ttensor f32 (ellipsis) (name in)) _))\n"
           "        (ttensor f32 (ellipsis) (name out))\n"
           "        (block\n"
           "          (let y _ (binary @ (name x) (field T (name weight))))\n"
           "          (if\n"
           "            (name has_bias)\n"
           "            (block\n"
           "              (binary + (name y) (name bias)))\n"
           "            (block\n"
           "              (name y))))))))",
           init, init);
  check_module(linear_src, want);
}

Test(parser, model_stack) {
  check_module("model Stack(d: int, n: int) {\n"
               "  layers = [Linear(d, d) for i in 0..n]      # layers.0.weight\n"
               "  scale = 1.0 / n                           # a constant\n"
               "  fn forward(x: f32[B, d]) -> f32[B, d] {\n"
               "    let h = x\n"
               "    for i in 0..n { h = relu(layers[i](h)) }\n"
               "    h * scale\n"
               "  }\n"
               "}\n",
               "(module\n"
               "  (model Stack\n"
               "    (params (paramdecl d (tname int) _) (paramdecl n (tname int) _))\n"
               "    (members\n"
               "      (member layers (listcomp i (call (name Linear) (name d) (name d))"
               " (range (int 0) (name n))))\n"
               "      (member scale (binary / (float 1) (name n)))\n"
               "      (fn forward\n"
               "        (params (paramdecl x (ttensor f32 (name B) (name d)) _))\n"
               "        (ttensor f32 (name B) (name d))\n"
               "        (block\n"
               "          (let h _ (name x))\n"
               "          (for i\n"
               "            (range (int 0) (name n))\n"
               "            (block\n"
               "              (assign h (call (name relu) (call (index (name layers) (name i))"
               " (name h))))\n"
               "              _))\n"
               "          (binary * (name h) (name scale)))))))");
}

Test(parser, model_without_params_and_main) {
  check_module("model Simple {\n"
               "  fc = nn.Linear(4, 2)\n"
               "  fn forward(x: f32[N, 4]) -> f32[N, 2] {\n"
               "    relu(fc(x))\n"
               "  }\n"
               "}\n"
               "fn main() {\n"
               "  let m = Simple()\n"
               "  print(m(randn([3, 4], seed = 0)))\n"
               "}\n",
               "(module\n"
               "  (model Simple\n"
               "    (members\n"
               "      (member fc (call (field Linear (name nn)) (int 4) (int 2)))\n"
               "      (fn forward\n"
               "        (params (paramdecl x (ttensor f32 (name N) (int 4)) _))\n"
               "        (ttensor f32 (name N) (int 2))\n"
               "        (block\n"
               "          (call (name relu) (call (name fc) (name x)))))))\n"
               "  (fn main\n"
               "    _\n"
               "    (block\n"
               "      (let m _ (call (name Simple)))\n"
               "      (call (name print) (call (name m) (call (name randn)"
               " (list (int 3) (int 4)) (kwarg seed (int 0))))))))");
}

Test(parser, items_separators) {
  check_module("import a; import b\n\n;fn f() { } fn g() { }\n",
               "(module\n"
               "  (import a)\n"
               "  (import b)\n"
               "  (fn f\n"
               "    _\n"
               "    (block\n"
               "      _))\n"
               "  (fn g\n"
               "    _\n"
               "    (block\n"
               "      _)))");
  check_module("", "(module)");
  check_module("# only a comment", "(module)");
}

/* ---- spans ---- */

Test(parser, spans) {
  parsed p = parse("import nn\nfn f(x) {\n  let y = x +\n    foo(1)\n  y\n}\n");
  cr_assert_eq(p.diags.n, 0);
  const td_ast *m = p.ast;
  cr_expect_eq(m->span.start, 0);
  cr_expect_eq(m->span.end, 51);
  const td_ast *imp = m->list[0];
  cr_expect_eq(imp->span.start, 0);
  cr_expect_eq(imp->span.end, 9);
  const td_ast *fn = m->list[1];
  cr_expect_eq(fn->span.line, 2);
  cr_expect_eq(fn->span.col, 1);
  cr_expect_eq(fn->span.start, 10);
  cr_expect_eq(fn->span.end, 50); /* through the closing '}' */
  const td_ast *let = fn->b->list[0];
  cr_expect_eq(let->span.line, 3);
  cr_expect_eq(let->span.col, 3);
  const td_ast *sum = let->b;
  cr_expect_eq(sum->kind, TD_A_BINARY);
  cr_expect_eq(sum->span.start, 30); /* `x` */
  cr_expect_eq(sum->span.end, 44);   /* after `foo(1)` on the next line */
  cr_expect_eq(sum->span.col, 11);
  const td_ast *call = sum->b;
  cr_expect_eq(call->span.line, 4);
  cr_expect_eq(call->span.col, 5);
  cr_expect_eq(call->span.end - call->span.start, 6);
  const td_ast *value = fn->b->a;
  cr_expect_eq(value->span.line, 5);
  cr_expect_eq(value->span.col, 3);
  cr_expect_eq(value->span.end - value->span.start, 1);
  done(&p);
}

/* ---- syntax errors ---- */

Test(parser, error_messages) {
  check_errors("fn f(x) {\n  let y = (x + )\n}\n",
               "2:16: unexpected ')', expected an expression\n");
  check_errors("fn f(x) {\n  g(a b)\n}\n",
               "2:7: unexpected identifier 'b', expected ')' or ','\n");
  check_errors("fn f(x) {\n  let y = \n}\n",
               "3:1: unexpected '}', expected an expression\n");
  check_errors("fn f(x) {\n  if x = 1 { x } else { 2 }\n}\n",
               "2:8: unexpected '=', expected an operator or '{'\n"
               "help: `=` is assignment; use `==` to compare\n");
  check_errors("def f(x):\n  return x\n",
               "1:1: unexpected identifier 'def', expected 'model', 'fn' or 'import'\n"
               "help: did you mean 'fn'?\n");
  check_errors("fn f(x):\n  return x\n",
               "1:8: unexpected ':', expected '{'\n"
               "help: blocks are written in braces `{ ... }`, not with ':'\n");
  check_errors("fn f(x)\n{\n  x\n}\n",
               "1:8: unexpected end of line, expected '{'\n"
               "help: put the '{' on the same line\n");
  check_errors("fn f(x) {\n  if x { 1 }\n  elif y { 2 }\n}\n",
               "3:8: unexpected identifier 'y', expected '}' or end of line\n"
               "help: write 'else if'\n");
  check_errors("fn f(x) {\n  x += 1\n}\n",
               "2:6: unexpected '=', expected an expression\n"
               "help: there is no `+=`; write `x = x + ...`\n");
  check_errors("fn f(x) {\n  let 3 = x\n}\n",
               "2:7: unexpected integer '3', expected identifier, 'in' or '('\n");
  check_errors("model M {\n  param w f32[3] = zeros()\n}\n",
               "2:11: unexpected identifier 'f32', expected ':'\n");
  check_errors("fn f() {\n  g(\n", "3:1: unexpected end of file, expected an expression or ')'\n");
}

Test(parser, unclosed_brackets) {
  /* a statement keyword inside ( ) means the ')' was forgotten */
  check_errors("fn f(x) {\n  let y = g(x,\n  let z = 2\n  z\n}\n",
               "2:12: unclosed '('\n"
               "help: add the missing ')'\n");
  check_errors("fn f(x) {\n  let y = [g(x +\n  return y\n}\n",
               "2:13: unclosed '('\n"
               "help: add the missing ')'\n"
               "2:17: unexpected ')', expected an expression\n");
  check_errors("fn f(x) {\n  let y = g(x\n}\nfn h() { 1 }\n",
               "2:12: unclosed '('\n"
               "help: add the missing ')'\n");
  parsed p = parse("fn f(x) {\n  let y = 1\n");
  cr_assert_eq(p.diags.n, 1);
  cr_expect_str_eq(p.diags.items[0].msg,
                   "unexpected end of file, expected a statement, '}' or end of line");
  cr_assert_eq(p.diags.items[0].n_notes, 1);
  cr_expect_str_eq(p.diags.items[0].notes[0].msg, "'{' opened here");
  cr_expect_eq(p.diags.items[0].notes[0].span.line, 1);
  cr_expect_eq(p.diags.items[0].notes[0].span.col, 9);
  done(&p);
}

Test(parser, several_errors_per_file) {
  const char *src = "fn a(x) {\n"
                    "  let y = (x + )\n"       /* 1: inside ( ) */
                    "  y\n"
                    "}\n"
                    "model M(d: int) {\n"
                    "  param w f32[d] = zeros()\n" /* 2: model member */
                    "  fn forward(x) { x * w }\n"
                    "}\n"
                    "fn b(x) {\n"
                    "  for i in 0..3 x { }\n"  /* 3: statement header */
                    "  x\n"
                    "}\n"
                    "fn c() { 1 }\n";
  parsed p = parse(src);
  char *d = diag_text(&p);
  cr_expect_str_eq(d,
                   "2:16: unexpected ')', expected an expression\n"
                   "6:11: unexpected identifier 'f32', expected ':'\n"
                   "10:17: unexpected identifier 'x', expected '{'\n");
  /* recovery keeps the rest of the file */
  cr_assert(p.ast);
  cr_expect_eq(p.ast->n, 4);
  cr_expect_str_eq(p.ast->list[1]->name, "M");
  cr_expect_eq(p.ast->list[1]->a->n, 1); /* forward survived */
  cr_expect_str_eq(p.ast->list[3]->name, "c");
  free(d);
  done(&p);
}

Test(parser, error_cap) {
  char src[4096] = "";
  for (int i = 0; i < 100; i++) strcat(src, "fn f() { let = 1 }\n");
  parsed p = parse(src);
  cr_expect_eq(p.diags.n, p.diags.max_errors);
  cr_expect_leq(p.diags.n_errors, p.diags.max_errors + 1);
  done(&p);
}

/* ---- lexical errors ---- */

Test(lexer, errors) {
  check_errors("fn f() {\n  let s = \"abc\n  s\n}\n",
               "2:11: unterminated string\n"
               "help: close it with '\"' on the same line\n");
  check_errors("fn f() { \"a\\qb\" }", "1:12: unknown escape '\\q'\n"
                                     "help: the escapes are \\n \\t \\\\ and \\\"\n");
  check_errors("fn f() { a $ }", "1:12: unexpected character '$'\n");
  check_errors("fn f() { a && b || c }",
               "1:12: unexpected character '&&'\nhelp: write 'and'\n"
               "1:17: unexpected character '||'\nhelp: write 'or'\n");
  parsed p = parse("fn f() { a && !b }"); /* reported, then read as `and`, `not` */
  char *value = dump(p.ast->list[0]->b->a);
  cr_expect_str_eq(value, "(binary and (name a) (unary not (name b)))");
  free(value);
  done(&p);
  check_errors("fn f() { !b }", "1:10: unexpected character '!'\nhelp: write 'not'\n");
  check_errors("fn f() { 'ab' }", "1:10: strings use double quotes\nhelp: write \"ab\"\n");
  check_errors("fn f() { \x01 }", "1:10: unexpected byte 0x01\n");
  check_errors("fn f() { \xc3\xa9 }", "1:10: unexpected character '\xc3\xa9'\n");
  check_errors("fn f() { 9223372036854775808 }",
               "1:10: integer literal is too large\n"
               "help: integers are 64-bit: at most 9223372036854775807\n");
  check_errors("fn f() { 0x1_0000_0000_0000_0000 }",
               "1:10: integer literal is too large\n"
               "help: integers are 64-bit: at most 9223372036854775807\n");
  check_errors("fn f() { 1e400 }", "1:10: float literal is out of range\n");
  check_errors("fn f() { 1_ + 12ab + 0x + 1.5f }",
               "1:10: invalid number '1_'\n"
               "1:15: invalid number '12ab'\n"
               "1:22: invalid number '0x'\n"
               "1:27: invalid number '1.5f'\n");
}

Test(lexer, range_is_not_a_float) {
  check_expr("[i for i in 0..10]", "(listcomp i (name i) (range (int 0) (int 10)))");
  check_expr("[i for i in 1..n]", "(listcomp i (name i) (range (int 1) (name n)))");
}

Test(lexer, embedded_nul) {
  static const char src[] = "fn f() { 1 }\0 garbage";
  parsed p = parse_n(src, sizeof src - 1);
  cr_assert(p.ast);
  cr_expect_eq(p.ast->n, 1);
  cr_assert_eq(p.diags.n, 1);
  cr_expect_str_eq(p.diags.items[0].msg, "unexpected NUL byte; the rest of the file is ignored");
  done(&p);
}

/* ---- robustness ---- */

Test(parser, nesting_limit) {
  static char src[20000];
  strcpy(src, "fn f() { ");
  for (int i = 0; i < 5000; i++) strcat(src, "(");
  strcat(src, "1");
  for (int i = 0; i < 5000; i++) strcat(src, ")");
  strcat(src, " }");
  parsed p = parse(src);
  cr_assert_geq(p.diags.n, 1);
  cr_expect_str_eq(p.diags.items[0].msg, "the program is nested too deeply (over 1000 levels)");
  done(&p);
  /* well within the limit */
  strcpy(src, "fn f() { ");
  for (int i = 0; i < 100; i++) strcat(src, "-(");
  strcat(src, "1");
  for (int i = 0; i < 100; i++) strcat(src, ")");
  strcat(src, " }");
  p = parse(src);
  cr_expect_eq(p.diags.n, 0);
  done(&p);
}

/* Left-associative chains deepen the tree without deepening Bison's stack;
 * the parser bounds them too, so recursive passes cannot overflow. */
Test(parser, chain_limit) {
  static char src[20000];
  strcpy(src, "fn f() { a");
  for (int i = 0; i < 5000; i++) strcat(src, i % 2 ? " + a" : "(1)");
  strcat(src, " }");
  parsed p = parse(src);
  cr_assert_eq(p.diags.n, 1);
  cr_expect_str_eq(p.diags.items[0].msg, "expression nested too deeply (over 1000 levels)");
  cr_expect_eq(p.diags.items[0].span.col, 10);
  char *d = dump(p.ast); /* must not overflow the stack */
  free(d);
  done(&p);
  strcpy(src, "fn f() { a");
  for (int i = 0; i < 900; i++) strcat(src, " + a");
  strcat(src, " }");
  p = parse(src);
  cr_expect_eq(p.diags.n, 0);
  done(&p);
}

static unsigned rng_next(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 16;
}

Test(parser, random_input_never_crashes) {
  static const char *const pieces[] = {
      "fn", "model", "param", "let", "import", "export", "for", "in", "if", "else", "while",
      "return", "and", "or", "not", "true", "x", "f32", "1", "2.5", "\"s\"", "(", ")",
      "[", "]", "{", "}", ",", ":", ";", ".", "..", "...", "->", "=", "==", "+", "-",
      "*", "**", "@", "<", "\n", " ", "#c\n", "$", "'", "\"", "0x", "\\",
  };
  unsigned seed = 12345;
  char src[512];
  for (int iter = 0; iter < 3000; iter++) {
    size_t len = 0;
    int n = (int)(rng_next(&seed) % 60);
    for (int i = 0; i < n; i++) {
      if (iter % 3 == 0) {
        src[len++] = (char)(rng_next(&seed) % 255 + 1); /* raw bytes */
      } else {
        const char *t = pieces[rng_next(&seed) % (sizeof pieces / sizeof pieces[0])];
        size_t tl = strlen(t);
        memcpy(src + len, t, tl);
        len += tl;
        src[len++] = ' ';
      }
    }
    src[len] = '\0';
    parsed p = parse(src);
    if (p.ast) {
      char *d = dump(p.ast);
      free(d);
    }
    done(&p);
  }
}

Test(parser, allocation_failures) {
  for (long n = 1; n < 400; n++) {
    td_arena *arena = td_arena_new();
    td_diags diags;
    td_diags_init(&diags, arena);
    int id = td_diags_add_source(&diags, "t.td", linear_src, strlen(linear_src));
    cr_assert_geq(id, 0);
    td_mem_fail_after(n);
    td_ast *m = td_parse(&diags, id);
    td_mem_fail_after(0);
    if (m) {
      char *d = dump(m);
      free(d);
    } else {   /* said as out of memory, never as a syntax or nesting error */
      cr_expect(td_diags_out_of_memory(&diags), "n = %ld", n);
      cr_expect_gt(diags.n_errors, 0, "n = %ld", n);
      for (int i = 0; i < diags.n; i++) cr_expect_str_eq(diags.items[i].msg, "out of memory", "n = %ld", n);
    }
    td_arena_free(arena);
  }
}

/* The diagnostics as td_diag_render writes them (malloc'd). */
static char *rendered(const td_diags *d) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  td_diag_render(d, f, 0);
  fclose(f);
  return buf;
}

/* Once an allocation of the compilation failed, later errors may be its
 * consequences: counted, not kept, and rendered as "out of memory". */
Test(diag, errors_after_running_out_of_memory) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_span none = {-1, 0, 0, 0, 0};
  td_error(&d, none, "a real error");
  cr_assert_eq(d.n, 1);
  td_mem_fail_after(1);
  cr_assert_null(td_arena_alloc(a, 1 << 20));   /* a chunk of its own: fails */
  td_mem_fail_after(0);
  cr_assert(td_diags_out_of_memory(&d));
  cr_assert_null(td_error(&d, none, "unknown name 'weight'"));
  cr_expect_eq(d.n, 1);
  cr_expect_eq(d.n_errors, 2);
  char *r = rendered(&d);
  cr_expect_str_eq(r, "tdsl: error: a real error\ntdsl: error: out of memory\n");
  free(r);
  /* a session's next input starts afresh */
  td_diags_clear(&d);
  cr_expect(!td_diags_out_of_memory(&d));
  cr_expect_not_null(td_error(&d, none, "kept again"));
  /* td_diags_oom keeps its message when there is room, and says it once */
  td_diags_oom(&d, none);
  cr_expect(td_diags_out_of_memory(&d));
  cr_expect_eq(d.n_errors, 2);
  r = rendered(&d);
  cr_expect_str_eq(r, "tdsl: error: kept again\ntdsl: error: out of memory\n");
  free(r);
  td_arena_free(a);
}

/* The push interface (for the REPL): tokens go in one at a time and the
 * parser asks for more until the input is complete. */
Test(parser, push_interface) {
  td_arena *arena = td_arena_new();
  td_diags diags;
  td_diags_init(&diags, arena);
  int id = td_diags_add_source(&diags, "repl", "fn f(x) {\n  x + 1\n}\n", 20);
  td_lexer lx;
  td_lexer_init(&lx, &diags, id);
  td_span whole = {id, 0, 20, 1, 1};
  td_parser tp = {.diags = &diags, .arena = arena, .lx = &lx,
                  .module = td_ast_new(arena, TD_A_MODULE, whole)};
  tdyypstate *ps = tdyypstate_new();
  cr_assert(ps && tp.module);
  int status, tokens = 0;
  do {
    TDYYSTYPE val;
    td_span loc;
    int t = td_lex(&lx, &val, &loc);
    status = tdyypush_parse(ps, t, &val, &loc, &tp);
    tokens++;
  } while (status == YYPUSH_MORE);
  tdyypstate_delete(ps);
  cr_expect_eq(status, 0);
  cr_expect_eq(tokens, 13); /* fn f ( x ) { x + 1 ; } ; end */
  cr_assert_eq(tp.module->n, 1);
  char *d = dump(tp.module->list[0]->b);
  cr_expect_str_eq(d, "(block\n  (binary + (name x) (int 1)))");
  free(d);
  td_arena_free(arena);
}

Test(ast, names) {
  cr_expect_str_eq(td_binop_str(TD_OP_MATMUL), "@");
  cr_expect_str_eq(td_binop_str(TD_OP_POW), "**");
  cr_expect_str_eq(td_binop_str(TD_OP_NOT), "not");
  cr_expect_str_eq(td_binop_str(99), "?");
  cr_expect_str_eq(td_ast_kind_name(TD_A_LISTCOMP), "listcomp");
  cr_expect_str_eq(td_ast_kind_name(TD_A_KIND_COUNT), "?");
  for (int k = 0; k < TD_A_KIND_COUNT; k++)
    cr_expect_str_neq(td_ast_kind_name((td_ast_kind)k), "?", "kind %d has no name", k);
}

Test(ast, push_grows) {
  td_arena *arena = td_arena_new();
  td_span sp = {0, 0, 0, 1, 1};
  td_ast *list = td_ast_new(arena, TD_A_LIST, sp);
  td_ast *items[100];
  for (int i = 0; i < 100; i++) {
    items[i] = td_ast_new(arena, TD_A_INT, sp);
    items[i]->ival = i;
    cr_assert_eq(td_ast_push(arena, list, items[i]), 0);
  }
  cr_assert_eq(list->n, 100);
  for (int i = 0; i < 100; i++) cr_expect_eq(list->list[i]->ival, i);
  td_arena_free(arena);
}

/* test_elab.c - unit tests of the elaborator (lang/elab.c, shapes.c,
 * builtins.c): programs given as strings are loaded with
 * td_program_load_text and lowered with td_program_lower, and the tests
 * look at the Graph IR they produce.
 *
 * What is checked, each against facts written out by hand here (never
 * against another output of the elaborator):
 *  - which primitive ops a construct lowers to (Linear + relu is matmul,
 *    permute, add, relu), how many (for loops unroll, compile-time `if`
 *    emits only the branch taken), and that td_graph_verify accepts it;
 *  - dtypes and symbolic shapes as td_type_str prints them ("f32[N, 2]"),
 *    including promotion, reductions, matmul batch broadcasting, slicing;
 *  - symbolic sizes intern (N*T/T is T, N*T == T*N), reshape element
 *    count checks;
 *  - diagnostics: message, line:col and help text of the teaching errors,
 *    several independent errors reported by one check;
 *  - robustness: thousands of mutated variants of a valid program (seeded,
 *    so reproducible) and failing allocations never crash the front end.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/elab.h"
#include "lang/ir.h"
#include "runtime/mem.h"

/* ---- fixture: one compilation per test ---- */

static td_arena *arena;
static td_diags diags;
static td_program *prog;

static void setup(void) {
  arena = td_arena_new();
  cr_assert_not_null(arena);
  td_diags_init(&diags, arena);
  prog = td_program_new(arena, &diags);
  cr_assert_not_null(prog);
#ifdef TDSL_SRCDIR
  td_program_add_search_dir(prog, TDSL_SRCDIR "/stdlib");
#endif
}

static void teardown(void) {
  td_arena_free(arena);
  arena = NULL;
  prog = NULL;
}

TestSuite(elab, .init = setup, .fini = teardown);

/* All diagnostics as one string, for assertion messages. */
static const char *all_msgs(void) {
  static char buf[8192];
  size_t w = 0;
  buf[0] = 0;
  for (int i = 0; i < diags.n && w < sizeof buf - 1; i++) {
    const td_diag *g = &diags.items[i];
    w += (size_t)snprintf(buf + w, sizeof buf - w, "%d:%d: %s%s%s\n", g->span.line, g->span.col,
                          g->msg, g->help ? " | help: " : "", g->help ? g->help : "");
  }
  return buf;
}

/* Loads src and lowers entry; fails the test on any diagnostic. */
static td_graph *lower_ok(const char *src, const char *entry) {
  cr_assert_eq(td_program_load_text(prog, "t.td", src), 0, "load failed:\n%s", all_msgs());
  td_graph *g = td_program_lower(prog, entry);
  cr_assert_not_null(g, "lowering %s failed:\n%s", entry, all_msgs());
  cr_assert_eq(diags.n_errors, 0, "%s", all_msgs());
  td_err err;
  cr_assert_eq(td_graph_verify(g, &err), 0, "verify: %s", err.msg);
  return g;
}

/* Loads src and lowers every entry point; returns the number of errors. */
static int check_errors(const char *src) {
  if (td_program_load_text(prog, "t.td", src)) return diags.n_errors;
  return td_program_check(prog);
}

static int count_op(const td_graph *g, td_op op) {
  int n = 0;
  for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
  return n;
}

static const char *node_type(const td_graph *g, int id) {
  static char buf[4][256];
  static int k;
  const td_node *n = &g->nodes[id];
  k = (k + 1) % 4;
  return td_type_str(g, n->dtype, n->rank, n->shape, buf[k], sizeof buf[k]);
}

static const char *out_type(const td_graph *g, int i) {
  cr_assert_lt(i, g->n_outputs, "graph has %d outputs", g->n_outputs);
  return node_type(g, g->outputs[i]);
}

/* The first diagnostic whose message contains `part`, or NULL. */
static const td_diag *find_diag(const char *part) {
  for (int i = 0; i < diags.n; i++)
    if (diags.items[i].msg && strstr(diags.items[i].msg, part)) return &diags.items[i];
  return NULL;
}

static const td_diag *want_diag(const char *part, int line, int col) {
  const td_diag *g = find_diag(part);
  cr_assert_not_null(g, "no diagnostic containing \"%s\"; got:\n%s", part, all_msgs());
  if (line) cr_assert_eq(g->span.line, line, "\"%s\" at line %d, expected %d", part, g->span.line, line);
  if (col) cr_assert_eq(g->span.col, col, "\"%s\" at column %d, expected %d", part, g->span.col, col);
  return g;
}

static void want_help(const td_diag *g, const char *part) {
  cr_assert_not_null(g->help, "diagnostic \"%s\" has no help", g->msg);
  cr_assert_not_null(strstr(g->help, part), "help \"%s\" lacks \"%s\"", g->help, part);
}

/* ---- lowering: which ops ---- */

static const char *linear_src =
    "model Linear(in: int, out: int) {\n"
    "  param weight: f32[out, in] = uniform(-0.5, 0.5)\n"
    "  param bias: f32[out] = zeros()\n"
    "  fn forward(x: f32[..., in]) -> f32[..., out] { x @ weight.T + bias }\n"
    "}\n"
    "model Simple {\n"
    "  fc = Linear(4, 2)\n"
    "  fn forward(x: f32[N, 4]) -> f32[N, 2] { relu(fc(x)) }\n"
    "}\n";

Test(elab, linear_relu_lowers_to_matmul_permute_add_relu) {
  td_graph *g = lower_ok(linear_src, "Simple.forward");
  cr_expect_eq(count_op(g, TD_IR_INPUT), 1);
  cr_expect_eq(count_op(g, TD_IR_PARAM), 2);
  cr_expect_eq(count_op(g, TD_IR_MATMUL), 1);
  cr_expect_eq(count_op(g, TD_IR_PERMUTE), 1);
  cr_expect_eq(count_op(g, TD_IR_ADD), 1);
  cr_expect_eq(count_op(g, TD_IR_RELU), 1);
  /* nothing else: no casts, reshapes or broadcasts are needed here */
  cr_expect_eq(g->n_nodes, 7, "nodes: %d", g->n_nodes);
  cr_assert_eq(g->n_outputs, 1);
  cr_expect_str_eq(out_type(g, 0), "f32[N, 2]");
  cr_expect_eq(g->nodes[g->outputs[0]].op, TD_IR_RELU);
  cr_assert_eq(g->n_inputs, 1);
  cr_expect_str_eq(node_type(g, g->inputs[0]), "f32[N, 4]");
  cr_expect_str_eq(g->nodes[g->inputs[0]].name, "x");
}

Test(elab, param_names_follow_state_dict) {
  td_graph *g = lower_ok(linear_src, "Simple.forward");
  cr_assert_eq(g->n_params, 2);
  cr_expect_str_eq(g->nodes[g->params[0]].name, "fc.weight");
  cr_expect_str_eq(g->nodes[g->params[1]].name, "fc.bias");
  cr_expect_str_eq(node_type(g, g->params[0]), "f32[2, 4]");
  cr_expect_str_eq(node_type(g, g->params[1]), "f32[2]");
  cr_expect_eq(g->nodes[g->params[0]].attr.init, TD_INIT_UNIFORM);
  cr_expect_float_eq(g->nodes[g->params[0]].attr.init_a, -0.5, 1e-12);
  cr_expect_float_eq(g->nodes[g->params[0]].attr.init_b, 0.5, 1e-12);
  cr_expect_eq(g->nodes[g->params[1]].attr.init, TD_INIT_ZEROS);
}

Test(elab, list_of_submodels_are_numbered) {
  const char *src =
      "model Lin(d: int) {\n"
      "  param weight: f32[d, d] = ones()\n"
      "  fn forward(x: f32[B, d]) -> f32[B, d] { x @ weight }\n"
      "}\n"
      "model Stack(n: int = 3) {\n"
      "  layers = [Lin(2) for i in 0..n]\n"
      "  head = Lin(2)\n"
      "  fn forward(x: f32[B, 2]) -> f32[B, 2] {\n"
      "    let h = x\n"
      "    for i in 0..n { h = layers[i](h) }\n"
      "    head(h)\n"
      "  }\n"
      "}\n";
  td_graph *g = lower_ok(src, "Stack.forward");
  cr_assert_eq(g->n_params, 4);
  cr_expect_str_eq(g->nodes[g->params[0]].name, "layers.0.weight");
  cr_expect_str_eq(g->nodes[g->params[1]].name, "layers.1.weight");
  cr_expect_str_eq(g->nodes[g->params[2]].name, "layers.2.weight");
  cr_expect_str_eq(g->nodes[g->params[3]].name, "head.weight");
  cr_expect_eq(count_op(g, TD_IR_MATMUL), 4);
  cr_expect_str_eq(out_type(g, 0), "f32[B, 2]");
}

Test(elab, for_loop_unrolls) {
  const char *src = "fn f(x: f32[N]) {\n  let y = x\n  for i in 0..5 { y = y + x }\n  y\n}\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_eq(count_op(g, TD_IR_ADD), 5);
  cr_expect_str_eq(out_type(g, 0), "f32[N]");
}

Test(elab, compile_time_if_emits_one_branch) {
  const char *src =
      "fn pick(x, up: bool) { if up { exp(x) } else { if false { sin(x) } else { cos(x) } } }\n"
      "fn f(x: f32[4]) { (pick(x, true), pick(x, false)) }\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_eq(count_op(g, TD_IR_EXP), 1);
  cr_expect_eq(count_op(g, TD_IR_COS), 1);
  cr_expect_eq(count_op(g, TD_IR_SIN), 0);
  cr_expect_eq(g->n_outputs, 2);
}

Test(elab, functions_are_inlined_with_defaults_and_keywords) {
  const char *src =
      "fn scale(x, k: float = 2.0, shift: float = 0.0) { x * k + shift }\n"
      "fn f(x: f32[3]) { (scale(x), scale(x, shift = 1.0), scale(x, 3.0, 4.0)) }\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_eq(g->n_outputs, 3);
  cr_expect_eq(count_op(g, TD_IR_MUL), 3);
  /* constants: 2.0, 0.0; 2.0, 1.0; 3.0, 4.0 */
  double want[] = {2, 0, 2, 1, 3, 4};
  int k = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_CONST && k < 6) {
      cr_expect_float_eq(g->nodes[i].attr.f, want[k], 1e-12, "const %d is %g", k, g->nodes[i].attr.f);
      cr_expect_eq(g->nodes[i].dtype, TD_F32);
      k++;
    }
  cr_expect_eq(k, 6);
}

Test(elab, print_is_one_node_with_parts) {
  const char *src = "fn main() {\n  let x = ones([2])\n  print(\"sum\", sum(x), 3)\n}\n";
  td_graph *g = lower_ok(src, "main");
  cr_assert_eq(count_op(g, TD_IR_PRINT), 1);
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_PRINT) {
      const td_node *n = &g->nodes[i];
      cr_assert_eq(n->attr.n_parts, 3);
      cr_expect_str_eq(n->attr.parts[0].text, "sum");
      cr_expect_null(n->attr.parts[1].text);
      cr_expect_eq(n->attr.parts[1].input, 0);
      cr_expect_str_eq(n->attr.parts[2].text, "3");
      cr_assert_eq(n->n_in, 1);
      cr_expect_str_eq(node_type(g, n->in[0]), "f32[]");
      /* sum over all axes: SUM keeps dims, a RESHAPE drops them */
      const td_node *in = &g->nodes[n->in[0]];
      if (in->op == TD_IR_RESHAPE) in = &g->nodes[in->in[0]];
      cr_expect_eq(in->op, TD_IR_SUM);
    }
}

Test(elab, stdlib_import_softmax) {
  const char *src = "import nn\nfn f(x: f32[N, 5]) { nn.softmax(x) }\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_eq(count_op(g, TD_IR_EXP), 1);
  cr_expect_eq(count_op(g, TD_IR_RMAX), 1);
  cr_expect_eq(count_op(g, TD_IR_SUM), 1);
  cr_expect_eq(count_op(g, TD_IR_DIV), 1);
  cr_expect_str_eq(out_type(g, 0), "f32[N, 5]");
}

/* ---- dtypes ---- */

Test(elab, dtype_rules) {
  const char *src =
      "fn f(x: f32[N], i: i64[N], j: i32[N], b: bool[N]) {\n"
      "  (x + 1, i + 1, i + 1.5, i + j, j * 2, b and (x > 0), x < i,\n"
      "   mean(i), sum(b), argmax(x), i32(x), f64(x) + x, i / 2, i % 3)\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f32[N]", "i64[N]", "f32[N]", "i64[N]", "i32[N]", "bool[N]", "bool[N]",
                        "f32[]", "i64[]", "i64[]", "i32[N]", "f64[N]", "f32[N]", "i64[N]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

/* f16/bf16 promote like PyTorch: half with the same half stays, f16 with
 * bf16 is f32, a half with f32/f64 is that float, an int or bool tensor
 * with a half is the half, numbers keep the half; matmul and concat use
 * the same table; dtype arguments and the casts accept the names. */
Test(elab, half_dtype_promotion) {
  const char *src =
      "fn f(h: f16[N], b: bf16[N], x: f32[N], d: f64[N], i: i32[N], l: i64[N], m: bool[N]) {\n"
      "  (h + h, b * b, h + b, b - x, h * d, i + b, l * h, m * b, h + 1, b * 2.5, h / 3,\n"
      "   h > b, where(m, h, 0.5), concat([h, b]), reshape(h, [N, 1]) @ reshape(h, [1, N]),\n"
      "   reshape(b, [1, N]) @ reshape(x, [N, 1]), sum(b), mean(h), argmax(b), bf16(x), f16(i),\n"
      "   zeros([2], dtype = bf16), full([2], 1, dtype = f16), arange(3, dtype = bf16), exp(h))\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f16[N]", "bf16[N]", "f32[N]", "f32[N]", "f64[N]", "bf16[N]", "f16[N]",
                        "bf16[N]", "f16[N]", "bf16[N]", "f16[N]", "bool[N]", "f16[N]",
                        "f32[2*N]", "f16[N, N]", "f32[1, 1]", "bf16[]", "f16[]", "i64[]",
                        "bf16[N]", "f16[N]", "bf16[2]", "f16[2]", "bf16[3]", "f16[N]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

Test(elab, half_dtype_table) {
  /* td_dtype_promote over every pair, against the table written out */
  static const char *names[] = {"bool", "i32", "i64", "f32", "f64", "f16", "bf16"};
  static const char *want[7][7] = {
      /*          bool    i32    i64    f32    f64    f16    bf16 */
      /* bool */ {"bool", "i32", "i64", "f32", "f64", "f16", "bf16"},
      /* i32  */ {"i32", "i32", "i64", "f32", "f64", "f16", "bf16"},
      /* i64  */ {"i64", "i64", "i64", "f32", "f64", "f16", "bf16"},
      /* f32  */ {"f32", "f32", "f32", "f32", "f64", "f32", "f32"},
      /* f64  */ {"f64", "f64", "f64", "f64", "f64", "f64", "f64"},
      /* f16  */ {"f16", "f16", "f16", "f32", "f64", "f16", "f32"},
      /* bf16 */ {"bf16", "bf16", "bf16", "f32", "f64", "f32", "bf16"},
  };
  for (int a = 0; a < 7; a++)
    for (int b = 0; b < 7; b++) {
      td_dtype da, db;
      cr_assert_eq(td_dtype_from_name(names[a], &da), 0);
      cr_assert_eq(td_dtype_from_name(names[b], &db), 0);
      cr_expect_str_eq(td_dtype_name(td_dtype_promote(da, db)), want[a][b], "%s with %s", names[a], names[b]);
    }
}

Test(elab, creation_dtypes_and_shapes) {
  const char *src =
      "fn main() {\n"
      "  (zeros([2, 3]), ones([4], dtype = i64), full([2], true), arange(5), arange(0.0, 1.0, 0.25),\n"
      "   arange(10, 0, -3), eye(3), eye(2, dtype = i32), rand([2, 2], seed = 1), one_hot(arange(3), 4))\n"
      "}\n";
  td_graph *g = lower_ok(src, "main");
  const char *want[] = {"f32[2, 3]", "i64[4]", "bool[2]", "i64[5]", "f32[4]",
                        "i64[4]", "f32[3, 3]", "i32[2, 2]", "f32[2, 2]", "f32[3, 4]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

/* ---- shapes ---- */

Test(elab, reduction_shapes) {
  const char *src =
      "fn f(x: f32[A, B, C]) {\n"
      "  (sum(x), sum(x, axis = 1), sum(x, axis = -1, keepdims = true), max(x, axis = [0, 2]),\n"
      "   argmin(x, axis = 0), mean(x, axis = [-1, -2], keepdims = true), logsumexp(x, axis = 2))\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f32[]", "f32[A, C]", "f32[A, B, 1]", "f32[B]", "i64[B, C]",
                        "f32[A, 1, 1]", "f32[A, B]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

Test(elab, matmul_shapes_vector_right) {
  const char *src =
      "fn f(a: f32[M, K], b: f32[K, P], v: f32[K], bt: f32[B, 1, M, K], h: f32[H, K, P], w: f32[P]) {\n"
      "  (a @ b, v @ b, a @ v, v @ v, bt @ h, h @ w)\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f32[M, P]", "f32[P]", "f32[M]", "f32[]", "f32[B, H, M, P]", "f32[H, K]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
  cr_expect_eq(count_op(g, TD_IR_MATMUL), 6);
}

Test(elab, movement_shapes) {
  const char *src =
      "fn f(x: f32[N, 6]) {\n"
      "  (reshape(x, [N, 2, 3]), reshape(x, [-1, 3]), reshape(x, [N * 6]), transpose(x), x.T,\n"
      "   permute(reshape(x, [N, 2, 3]), [2, 0, 1]), concat([x, x], axis = 0), concat([x, x], axis = -1),\n"
      "   stack([x, x], axis = 1), unsqueeze(x, 0), squeeze(unsqueeze(x, -1)), flatten(x),\n"
      "   broadcast_to(x, [3, N, 6]))\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f32[N, 2, 3]", "f32[2*N, 3]", "f32[6*N]", "f32[6, N]", "f32[6, N]",
                        "f32[3, N, 2]", "f32[2*N, 6]", "f32[N, 12]", "f32[N, 2, 6]", "f32[1, N, 6]",
                        "f32[N, 6]", "f32[6*N]", "f32[3, N, 6]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

Test(elab, split_gives_a_tuple) {
  const char *src = "fn f(x: f32[N, 6]) {\n  let (a, b, c) = split(x, 3, axis = 1)\n  (a, b, c)\n}\n";
  td_graph *g = lower_ok(src, "f");
  cr_assert_eq(g->n_outputs, 3);
  for (int i = 0; i < 3; i++) cr_expect_str_eq(out_type(g, i), "f32[N, 2]");
  cr_expect_eq(count_op(g, TD_IR_SLICE), 3);
}

Test(elab, indexing_shapes) {
  const char *src =
      "fn f(x: f32[N, 5, 4]) {\n"
      "  (x[0], x[-1], x[:, 1:3], x[..., -1], x[:, ::2, 0], x[1:], x[:, ::-1], x[1:-1, :, 0:1],\n"
      "   x[0, ...], x[:, 10:], x[N - 1])\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  const char *want[] = {"f32[5, 4]", "f32[5, 4]", "f32[N, 2, 4]", "f32[N, 5]", "f32[N, 3]",
                        "f32[N - 1, 5, 4]", "f32[N, 5, 4]", "f32[N - 2, 5, 1]", "f32[5, 4]",
                        "f32[N, 0, 4]", "f32[5, 4]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++)
    cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

Test(elab, literal_indexing_and_slices) {
  const char *src =
      "fn main() {\n"
      "  let x = zeros([6, 4])\n"
      "  (x[::2], x[::-1], x[4:1:-1], x[-2:], x[1:-1:2], x[:, -3:-1], x[10:], x[::4])\n"
      "}\n";
  td_graph *g = lower_ok(src, "main");
  const char *want[] = {"f32[3, 4]", "f32[6, 4]", "f32[3, 4]", "f32[2, 4]", "f32[2, 4]",
                        "f32[6, 2]", "f32[0, 4]", "f32[2, 4]"};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(g->n_outputs, nw);
  for (int i = 0; i < nw; i++) cr_expect_str_eq(out_type(g, i), want[i], "output %d", i);
}

Test(elab, take_shapes) {
  const char *src =
      "fn f(x: f32[V, D], idx: i64[B, T]) { (take(x, idx), take(x, idx, axis = 1), one_hot(idx, V)) }\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_str_eq(out_type(g, 0), "f32[B, T, D]");
  cr_expect_str_eq(out_type(g, 1), "f32[V, B, T]");
  cr_expect_str_eq(out_type(g, 2), "f32[B, T, V]");
  cr_expect_eq(count_op(g, TD_IR_GATHER), 2);
}

Test(elab, symbolic_sizes_as_values) {
  const char *src =
      "fn f(x: f32[N, T]) {\n"
      "  let n = x.shape[0]\n"
      "  (arange(n), zeros([n * T, 2]), reshape(x, [N * T]), arange(1, T), x.shape[1] + 0 * x[0, 0])\n"
      "}\n";
  td_graph *g = lower_ok(src, "f");
  cr_expect_str_eq(out_type(g, 0), "i64[N]");
  cr_expect_str_eq(out_type(g, 1), "f32[N*T, 2]");
  cr_expect_str_eq(out_type(g, 2), "f32[N*T]");
  cr_expect_str_eq(out_type(g, 3), "i64[T - 1]");
  cr_expect_str_eq(out_type(g, 4), "f32[]");
  cr_expect_eq(count_op(g, TD_IR_DIM), 1);
}

/* ---- symbolic dims intern ---- */

Test(elab, dims_intern) {
  td_graph *g = td_graph_new(arena, "dims");
  cr_assert_not_null(g);
  td_dim n = td_dim_sym(g, td_sym_new(g, "N")), t = td_dim_sym(g, td_sym_new(g, "T"));
  cr_assert(!TD_DIM_IS_CONST(n) && !TD_DIM_IS_CONST(t) && n != t);
  td_dim nt = td_dim_mul(g, n, t), tn = td_dim_mul(g, t, n);
  cr_expect_eq(nt, tn, "N*T and T*N intern to one dim");
  td_dim q;
  cr_assert_eq(td_dim_div(g, nt, t, &q), 0);
  cr_expect_eq(q, n, "N*T/T == N");
  cr_assert_eq(td_dim_div(g, nt, n, &q), 0);
  cr_expect_eq(q, t, "N*T/N == T");
  cr_expect_neq(td_dim_div(g, n, 2, &q), 0, "N/2 is not exact");
  cr_expect_neq(td_dim_div(g, td_dim_add(g, nt, 1), t, &q), 0, "(N*T + 1)/T is not exact");
  /* (N + 1)(N - 1) == N*N - 1 */
  td_dim lhs = td_dim_mul(g, td_dim_add(g, n, 1), td_dim_sub(g, n, 1));
  td_dim rhs = td_dim_sub(g, td_dim_mul(g, n, n), 1);
  cr_expect_eq(lhs, rhs);
  /* N + T - N == T; 2*N/2 == N; literals stay literals */
  cr_expect_eq(td_dim_sub(g, td_dim_add(g, n, t), n), t);
  cr_assert_eq(td_dim_div(g, td_dim_mul(g, 2, n), 2, &q), 0);
  cr_expect_eq(q, n);
  cr_expect_eq(td_dim_sub(g, td_dim_add(g, n, 7), n), 7);
  cr_expect_eq(td_dim_mul(g, 3, 4), 12);
  char buf[64];
  cr_expect_str_eq(td_dim_str(g, td_dim_add(g, td_dim_mul(g, 2, n), 1), buf, sizeof buf), "2*N + 1");
  int64_t vals[2] = {5, 3};
  cr_expect_eq(td_dim_eval(g, lhs, vals), 24);
  cr_expect_eq(td_dim_eval(g, nt, vals), 15);
}

Test(elab, reshape_counts_are_checked_symbolically) {
  const char *src =
      "fn ok(x: f32[N, T, D]) { reshape(reshape(x, [N * T, D]), [N, T * D]) }\n"
      "fn bad(x: f32[N, T, D]) { reshape(x, [N, D]) }\n"
      "fn bad2(x: f32[N, 6]) { reshape(x, [-1, 4]) }\n";
  cr_assert_eq(td_program_load_text(prog, "t.td", src), 0);
  td_graph *g = td_program_lower(prog, "ok");
  cr_assert_not_null(g, "%s", all_msgs());
  cr_expect_str_eq(out_type(g, 0), "f32[N, T*D]");
  cr_expect_null(td_program_lower(prog, "bad"));
  const td_diag *d = want_diag("cannot reshape f32[N, T, D] into f32[N, D]", 2, 0);
  (void)d;
  cr_expect_null(td_program_lower(prog, "bad2"));
  want_diag("cannot reshape f32[N, 6]", 3, 0);
}

/* ---- diagnostics ---- */

Test(elab, if_on_tensor_has_where_hint) {
  const char *src =
      "fn main() {\n"
      "  let x = ones([3])\n"
      "  let y = if sum(x) > 1.0 { x + 1 } else { x - 1 }\n"
      "  y\n"
      "}\n";
  cr_expect_eq(check_errors(src), 1, "%s", all_msgs());
  const td_diag *g = want_diag("`if` on a tensor", 3, 14);
  want_help(g, "where(sum(x) > 1.0, x + 1, x - 1)");
}

Test(elab, host_reads_are_teaching_errors) {
  const char *src =
      "fn main() {\n"
      "  let x = ones([3])\n"
      "  let a = sum(x).item()\n"
      "  let b = int(sum(x))\n"
      "  let c = zeros([sum(x)])\n"
      "  let d = sum(x, axis = argmax(x))\n"
      "}\n";
  cr_expect_eq(check_errors(src), 4, "%s", all_msgs());
  want_help(want_diag(".item() would copy a value to the host", 3, 11), "print(");
  want_help(want_diag("int() would read a tensor's value", 4, 11), "i64(sum(x))");
  want_diag("cannot be used as a dimension", 5, 18);
  want_diag("cannot be used as an axis", 6, 25);
}

Test(elab, runtime_loops_are_teaching_errors) {
  const char *src =
      "fn f(x: f32[N]) {\n"
      "  let y = x\n"
      "  for i in arange(3) { y = y + i }\n"
      "  for i in 0..N { y = y + 1 }\n"
      "  while true { y = y + 1 }\n"
      "  y\n"
      "}\n";
  cr_expect_eq(check_errors(src), 3, "%s", all_msgs());
  want_help(want_diag("a loop over the values of a tensor", 3, 12), "y + sum(arange(3))");
  want_help(want_diag("N is bound at call time", 4, 15), "vectorise");
  want_help(want_diag("while loop", 5, 3), "vectorise");
}

Test(elab, a_recurrence_loop_is_shown_as_a_scan) {
  const char *src =
      "fn f(x: f32[N]) {\n"
      "  let y = x\n"
      "  for i in 0..N { y = tanh(y * 2.0) + i }\n"
      "  y\n"
      "}\n";
  cr_expect_eq(check_errors(src), 1, "%s", all_msgs());
  want_help(want_diag("N is bound at call time", 3, 15),
            "the loop carries y from step to step (a recurrence): a scan runs it as one loop in the graph, for "
            "every N:\n  fn step(y, i) { y = tanh(y * 2.0) + i; y }\n  y = fold(step, y, length = N)");
}

Test(elab, branch_on_symbolic_size) {
  const char *src =
      "fn f(x: f32[N, 16]) {\n"
      "  let y = if N == 16 { x } else { x * 2 }\n"
      "  let z = if x.shape[0] > 3 { y } else { y }\n"
      "  let w = if x.shape[1] == 16 { z } else { x }\n"
      "  w\n"
      "}\n";
  cr_expect_eq(check_errors(src), 2, "%s", all_msgs());
  want_help(want_diag("N is bound at call time", 2, 14), "make N a model parameter");
  want_diag("N is bound at call time", 2, 0);
  /* the second one is on line 3; line 4 compares literal 16 with 16: fine */
  int on3 = 0;
  for (int i = 0; i < diags.n; i++) on3 += diags.items[i].span.line == 3;
  cr_expect_eq(on3, 1, "%s", all_msgs());
}

Test(elab, unknown_names_suggest) {
  const char *src =
      "fn main() {\n"
      "  let hidden = ones([2])\n"
      "  let a = hiden + 1\n"
      "  let b = reul(hidden)\n"
      "  let c = torch.relu(hidden)\n"
      "  let d = self.fc(hidden)\n"
      "}\n";
  cr_expect_eq(check_errors(src), 4, "%s", all_msgs());
  want_help(want_diag("unknown name 'hiden'", 3, 11), "did you mean 'hidden'?");
  want_help(want_diag("unknown name 'reul'", 4, 11), "did you mean 'relu'?");
  want_help(want_diag("unknown name 'torch'", 5, 11), "relu(x)");
  want_help(want_diag("unknown name 'self'", 6, 11), "fc(x)");
}

Test(elab, shape_mismatch_names_both_shapes) {
  const char *src =
      "fn f(a: f32[N, 3], b: f32[N, 4]) { a + b }\n"
      "fn g(a: f32[N, 3], b: f32[4, 5]) { a @ b }\n"
      "fn h(a: f32[N, 3], b: f32[N, 4]) { concat([a, b], axis = 0) }\n";
  cr_expect_eq(check_errors(src), 3, "%s", all_msgs());
  const td_diag *g = want_diag("shapes f32[N, 3] and f32[N, 4] cannot be broadcast", 1, 36);
  cr_expect_eq(g->n_notes, 2);
  g = want_diag("matmul of f32[N, 3] and f32[4, 5]: the inner sizes 3 and 4 differ", 2, 36);
  want_help(g, "b.T");
  want_diag("concat along axis 0", 3, 36);
}

Test(elab, call_argument_errors) {
  const char *src =
      "fn two(a, b: int = 1) { a * b }\n"
      "fn main() {\n"
      "  let x = ones([2])\n"
      "  let a = two(x, 1, 2)\n"
      "  let b = two()\n"
      "  let c = two(x, c = 3)\n"
      "  let d = sum(x, axes = 0)\n"
      "}\n";
  cr_expect_eq(check_errors(src), 4, "%s", all_msgs());
  want_diag("too many arguments: 'two' takes 2", 4, 21);
  want_diag("missing argument 'a' in the call of 'two'", 5, 11);
  want_diag("'two' has no parameter named 'c'", 6, 22);
  want_help(want_diag("sum() has no parameter named 'axes'", 7, 25), "sum(x, axis, keepdims)");
}

Test(elab, type_annotation_errors) {
  const char *src =
      "fn f(x: f32[N, 4]) -> f32[N, 3] {\n"
      "  let a: i64[N, 4] = x\n"
      "  let b: f32[N] = x\n"
      "  x\n"
      "}\n";
  cr_expect_eq(check_errors(src), 3, "%s", all_msgs());
  want_diag("a should be i64[N, 4], found f32[N, 4]", 2, 0);
  want_diag("b should have rank 1", 3, 0);
  want_diag("the result of 'f' should be f32[N, 3], found f32[N, 4]: dimension 1 is 4, expected 3", 0, 0);
}

Test(elab, several_independent_errors_in_one_check) {
  const char *src =
      "fn main() {\n"
      "  let x = ones([2, 3])\n"
      "  let a = x @ x\n"
      "  let b = undefined_thing\n"
      "  let c = x + ones([4])\n"
      "  let d = a + b + c\n"   /* errors propagate silently */
      "  let e = sum(x, axis = 5)\n"
      "}\n";
  cr_expect_eq(check_errors(src), 4, "%s", all_msgs());
  int lines[] = {3, 4, 5, 7};
  for (int i = 0; i < 4; i++) {
    int found = 0;
    for (int k = 0; k < diags.n; k++) found += diags.items[k].span.line == lines[i];
    cr_expect_eq(found, 1, "line %d: %s", lines[i], all_msgs());
  }
}

Test(elab, entries_list) {
  const char *src =
      "model A {\n  fn forward(x: f32[N]) { x }\n  fn helper(x, k: int) { x * k }\n}\n"
      "model B(d: int) { fn forward(x: f32[N]) { x } }\n"
      "fn typed(x: f32[N, 2], y: i64[]) { x }\n"
      "fn untyped(x) { x }\n"
      "fn ell(x: f32[..., 2]) { x }\n"
      "fn main() { }\n";
  cr_assert_eq(td_program_load_text(prog, "t.td", src), 0, "%s", all_msgs());
  const char **names;
  int n = td_program_entries(prog, &names);
  const char *want[] = {"A.forward", "typed", "main"};
  cr_assert_eq(n, 3, "entries: %d", n);
  for (int i = 0; i < 3; i++) {
    int found = 0;
    for (int k = 0; k < n; k++) found += !strcmp(names[k], want[i]);
    cr_expect_eq(found, 1, "entry %s", want[i]);
  }
  cr_expect_null(td_program_lower(prog, "nope"));
  cr_expect_not_null(find_diag("no entry point 'nope'"));
}

Test(elab, random_streams) {
  const char *src =
      "fn main() { (rand([2]), rand([2]), rand([2], seed = 5), randn([2], seed = 5)) }\n";
  td_graph *g = lower_ok(src, "main");
  const td_node *r[4];
  int k = 0;
  for (int i = 0; i < g->n_nodes && k < 4; i++)
    if (g->nodes[i].op == TD_IR_RAND || g->nodes[i].op == TD_IR_RANDN) r[k++] = &g->nodes[i];
  cr_assert_eq(k, 4);
  cr_expect_neq(r[0]->attr.stream, r[1]->attr.stream, "two unseeded calls get different streams");
  cr_expect_eq(r[2]->attr.seed, 5);
  cr_expect_eq(r[3]->attr.seed, 5);
  cr_expect_eq(r[3]->op, TD_IR_RANDN);
}

/* ---- robustness ---- */

static const char *fuzz_base =
    "import nn\n"
    "model Block(d: int = 4, n: int = 2) {\n"
    "  param w: f32[d, d] = uniform(-0.1, 0.1)\n"
    "  param b: f32[d] = zeros() if n > 1\n"
    "  layers = [nn.Linear(d, d) for i in 0..n]\n"
    "  fn forward(x: f32[B, T, d]) -> f32[B, T, d] {\n"
    "    let h = x @ w + b\n"
    "    for i in 0..n { h = relu(layers[i](h)) }\n"
    "    let (a, c) = split(h, 2, axis = -1)\n"
    "    let m = if n == 2 { concat([c, a], axis = -1) } else { h }\n"
    "    m[:, :, ::-1] * sum(x, axis = [0, 1], keepdims = true) / 2.0\n"
    "  }\n"
    "  fn stats(x: f32[B, T, d]) -> (f32[B, T], i64[B]) {\n"
    "    (mean(x, axis = -1), argmax(x[..., 0], axis = 1))\n"
    "  }\n"
    "}\n"
    "fn helper(x, k: int = 3) { take(x, arange(k) % 2, axis = 0) }\n"
    "fn main() {\n"
    "  let m = Block(4)\n"
    "  let x = reshape(arange(24), [2, 3, 4])\n"
    "  print(\"out\", m(f32(x)), [1, 2][0], x.shape[-1])\n"
    "  let y = where(x > 3, x, -x) ** 2\n"
    "  print(nn.softmax(f32(y)), helper(y, k = 2), one_hot(i64(y[0, 0]), 40))\n"
    "}\n";

static uint64_t rng_state;
static uint32_t rng(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}

/* Token-ish boundaries: start of an identifier, number or symbol run. */
static int tok_start(const char *s, int i) {
  if (i == 0) return 1;
  int a = s[i - 1], b = s[i];
  int wa = (a >= 'a' && a <= 'z') || (a >= 'A' && a <= 'Z') || (a >= '0' && a <= '9') || a == '_';
  int wb = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_';
  return !(wa && wb) && b != ' ';
}

static int tok_end(const char *s, int i, int len) {
  int j = i + 1;
  while (j < len && !tok_start(s, j)) j++;
  return j;
}

/* One mutation of src into out: delete, duplicate or swap a token or a
 * character, or insert a character from a set of troublemakers. */
static void mutate(const char *src, char *out, size_t cap) {
  static const char junk[] = "()[]{}.,:;=+-*/%@<>!#\"\n0123456789_ ...";
  int len = (int)strlen(src);
  int i = (int)(rng() % (uint32_t)len);
  int kind = (int)(rng() % 6);
  while (kind < 4 && !tok_start(src, i) && i > 0) i--;
  int j = kind < 4 ? tok_end(src, i, len) : i + 1;
  size_t w = 0;
#define PUT(p, n) do { size_t n_ = (size_t)(n); if (w + n_ < cap) { memcpy(out + w, p, n_); w += n_; } } while (0)
  switch (kind) {
  case 0: case 4: /* delete a token / a character */
    PUT(src, i);
    PUT(src + j, len - j);
    break;
  case 1: case 5: /* duplicate */
    PUT(src, j);
    PUT(src + i, j - i);
    PUT(src + j, len - j);
    break;
  case 2: { /* move the token elsewhere */
    int k = (int)(rng() % (uint32_t)len);
    if (k >= i && k < j) k = i;
    if (k < i) { PUT(src, k); PUT(src + i, j - i); PUT(src + k, i - k); PUT(src + j, len - j); }
    else { PUT(src, i); PUT(src + j, k - j); PUT(src + i, j - i); PUT(src + k, len - k); }
    break;
  }
  default: { /* insert a character */
    char ch = junk[rng() % (sizeof junk - 1)];
    PUT(src, i);
    PUT(&ch, 1);
    PUT(src + i, len - i);
    break;
  }
  }
#undef PUT
  out[w] = 0;
}

/* Loads and checks text in a fresh compilation; returns the error count. */
static int check_fresh(const char *text) {
  td_arena *a = td_arena_new();
  cr_assert_not_null(a);
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  cr_assert_not_null(p);
#ifdef TDSL_SRCDIR
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
#endif
  if (td_program_load_text(p, "fuzz.td", text) == 0) (void)td_program_check(p);
  int n = d.n_errors;
  /* every error has a message; located ones lie inside the text */
  for (int i = 0; i < d.n; i++) {
    cr_assert_not_null(d.items[i].msg);
    if (d.items[i].span.file == 0) {
      cr_assert_geq(d.items[i].span.start, 0);
      cr_assert_leq(d.items[i].span.end, (int)strlen(text) + 1);
      cr_assert_geq(d.items[i].span.line, 1);
    }
  }
  td_arena_free(a);
  return n;
}

Test(elab, fuzz_base_is_valid) {
#ifdef TDSL_SRCDIR
  cr_expect_eq(check_fresh(fuzz_base), 0);
#else
  cr_skip_test("needs TDSL_SRCDIR for the stdlib");
#endif
}

Test(elab, mutated_programs_never_crash, .timeout = 300) {
  static char buf[8192], buf2[8192];
  rng_state = 20240601;
  int with_errors = 0;
  for (int v = 0; v < 2000; v++) {
    mutate(fuzz_base, buf, sizeof buf);
    if (v % 3 == 0) { /* some variants get two mutations */
      mutate(buf, buf2, sizeof buf2);
      memcpy(buf, buf2, sizeof buf);
    }
    with_errors += check_fresh(buf) > 0;
  }
  /* most single mutations break something: the checks did run */
  cr_log_info("%d of 2000 mutated programs had errors", with_errors);
  cr_expect_gt(with_errors, 500, "only %d of 2000 variants had errors", with_errors);
}

Test(elab, failing_allocations_never_crash, .timeout = 300) {
  /* the n-th allocation and all after it fail, for every n until the
   * whole check succeeds without hitting the limit */
  int done = 0;
  long n;
  for (n = 1; n < 20000 && !done; n += (n < 400 ? 1 : 37)) {
    td_mem_fail_after(n);
    td_arena *a = td_arena_new();
    if (a) {
      td_diags d;
      td_diags_init(&d, a);
      td_program *p = td_program_new(a, &d);
#ifdef TDSL_SRCDIR
      if (p) td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
#endif
      if (p && td_program_load_text(p, "oom.td", fuzz_base) == 0 && td_program_check(p) == 0) done = 1;
      else if (p) {   /* the program is right: its only error is memory */
        cr_expect_gt(d.n_errors, 0, "n = %ld: a failure with no error", n);
        cr_expect(td_diags_out_of_memory(&d), "n = %ld", n);
        for (int i = 0; i < d.n; i++)
          cr_expect_str_eq(d.items[i].msg, "out of memory", "n = %ld", n);
      }
      td_arena_free(a);
    }
    td_mem_fail_after(0);
  }
  cr_log_info("the check first succeeded with allocation %ld failing", n);
  cr_expect(done, "the check never succeeded");
}

/* The entry points listed in an arena that has no room left: none, and an
 * "out of memory" error (not a silent empty list, which `tdsl check` took
 * for a program with nothing to check). */
Test(elab, entries_out_of_memory) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  cr_assert(p);
  cr_assert_eq(td_program_load_text(p, "e.td", "fn f(x: f32[4]) { x }\nfn main() { print(1) }\n"), 0);
  const char **names;
  cr_assert_eq(td_program_entries(p, &names), 2);
  td_mem_fail_after(1);
  while (td_arena_alloc(a, 16)) {}   /* the chunk is full and no new one comes */
  int n = td_program_entries(p, &names), errors = d.n_errors;
  td_mem_fail_after(0);
  cr_expect_eq(n, 0);
  cr_expect_gt(errors, 0);
  cr_expect(td_diags_out_of_memory(&d));
  td_arena_free(a);
}

/* Names are found through a hash index, not one by one: 100 000 functions
 * and as many local bindings check in about a second (before, 40 000
 * functions took 22 s: every definition and lookup walked the scope). */
Test(elab, many_names_check_in_linear_time, .timeout = 40) {
  enum { N = 100000 };
  size_t cap = (size_t)N * 64 + 4096, w = 0;
  char *src = malloc(cap);
  cr_assert_not_null(src);
  for (int i = 0; i < N; i++) w += (size_t)snprintf(src + w, cap - w, "fn f%d(x) { x + %d }\n", i, i % 7);
  w += (size_t)snprintf(src + w, cap - w, "fn main() {\n");
  for (int i = 0; i < N; i += 1000) w += (size_t)snprintf(src + w, cap - w, "  let v%d = f%d(%d)\n", i, N - 1 - i, i);
  snprintf(src + w, cap - w, "  print(v0 + v%d)\n}\n", N - 1000);
  cr_assert_eq(check_errors(src), 0, "%s", all_msgs());
  free(src);
}

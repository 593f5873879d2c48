/* test_ir.c - symbolic sizes, graph building, the verifier and the printer.
 *
 * Symbolic-size arithmetic is checked against plain integer arithmetic:
 * every polynomial built is evaluated at many symbol values and compared
 * with the same expression computed directly in C.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

static td_arena *A;
static td_graph *G;

static void setup(void) {
  A = td_arena_new();
  G = td_graph_new(A, "t");
}
static void teardown(void) { td_arena_free(A); }

TestSuite(dims, .init = setup, .fini = teardown);

Test(dims, literals_stay_literals) {
  cr_expect_eq(td_dim_add(G, 3, 4), 7);
  cr_expect_eq(td_dim_mul(G, 3, 4), 12);
  cr_expect_eq(td_dim_sub(G, 9, 4), 5);
  td_dim q;
  cr_expect_eq(td_dim_div(G, 12, 4, &q), 0);
  cr_expect_eq(q, 3);
  cr_expect_eq(td_dim_div(G, 13, 4, &q), -1);
  cr_expect(TD_DIM_IS_CONST(td_dim_add(G, 0, 0)));
}

Test(dims, interning_makes_equal_sizes_equal) {
  int n = td_sym_new(G, "N"), t = td_sym_new(G, "T");
  td_dim N = td_dim_sym(G, n), T = td_dim_sym(G, t);
  cr_expect_lt(N, 0);
  cr_expect_neq(N, T);
  cr_expect_eq(td_dim_sym(G, n), N);
  /* N*T == T*N, (N+1)*T - T == N*T, N + N == 2*N */
  cr_expect_eq(td_dim_mul(G, N, T), td_dim_mul(G, T, N));
  cr_expect_eq(td_dim_sub(G, td_dim_mul(G, td_dim_add(G, N, 1), T), T), td_dim_mul(G, N, T));
  cr_expect_eq(td_dim_add(G, N, N), td_dim_mul(G, 2, N));
  /* N - N is the literal 0, N*T/T is N, 4*N/2 is 2*N */
  cr_expect_eq(td_dim_sub(G, N, N), 0);
  td_dim q;
  cr_assert_eq(td_dim_div(G, td_dim_mul(G, N, T), T, &q), 0);
  cr_expect_eq(q, N);
  cr_assert_eq(td_dim_div(G, td_dim_mul(G, 4, N), 2, &q), 0);
  cr_expect_eq(q, td_dim_mul(G, 2, N));
  /* not exact for every N */
  cr_expect_eq(td_dim_div(G, N, 2, &q), -1);
  cr_expect_eq(td_dim_div(G, td_dim_add(G, N, 1), N, &q), -1);
}

Test(dims, evaluation_matches_integer_arithmetic) {
  int n = td_sym_new(G, "N"), t = td_sym_new(G, "T");
  td_dim N = td_dim_sym(G, n), T = td_dim_sym(G, t);
  /* e = 3*N*T + 2*N - 5 + T*T */
  td_dim e = td_dim_add(G, td_dim_mul(G, 3, td_dim_mul(G, N, T)), td_dim_mul(G, 2, N));
  e = td_dim_sub(G, e, 5);
  e = td_dim_add(G, e, td_dim_mul(G, T, T));
  srand(1);
  for (int k = 0; k < 1000; k++) {
    int64_t vals[2] = {rand() % 1000, rand() % 1000};
    int64_t want = 3 * vals[0] * vals[1] + 2 * vals[0] - 5 + vals[1] * vals[1];
    cr_assert_eq(td_dim_eval(G, e, vals), want, "N=%lld T=%lld", (long long)vals[0], (long long)vals[1]);
  }
}

Test(dims, printing) {
  int n = td_sym_new(G, "N"), t = td_sym_new(G, "T");
  td_dim N = td_dim_sym(G, n), T = td_dim_sym(G, t);
  char b[128];
  cr_expect_str_eq(td_dim_str(G, 16, b, sizeof b), "16");
  cr_expect_str_eq(td_dim_str(G, N, b, sizeof b), "N");
  cr_expect_str_eq(td_dim_str(G, td_dim_add(G, td_dim_mul(G, 2, N), 1), b, sizeof b), "2*N + 1");
  cr_expect_str_eq(td_dim_str(G, td_dim_sub(G, N, 1), b, sizeof b), "N - 1");
  cr_expect_str_eq(td_dim_str(G, td_dim_mul(G, N, T), b, sizeof b), "N*T");
  td_dim shape[2] = {N, 4};
  cr_expect_str_eq(td_type_str(G, TD_F32, 2, shape, b, sizeof b), "f32[N, 4]");
  cr_expect_str_eq(td_type_str(G, TD_I64, 0, shape, b, sizeof b), "i64[]");
}

/* ---- graphs ---- */

static td_span nospan(void) {
  td_span s = {-1, 0, 0, 0, 0};
  return s;
}

TestSuite(graph, .init = setup, .fini = teardown);

Test(graph, build_and_verify_a_linear_layer) {
  int n = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, n);
  td_dim xs[2] = {N, 4}, ws[2] = {2, 4}, wt[2] = {4, 2}, ys[2] = {N, 2}, bs[1] = {2};
  td_attr at;
  memset(&at, 0, sizeof at);
  int x = td_graph_add(G, TD_IR_INPUT, TD_F32, 2, xs, NULL, 0, NULL, nospan());
  int w = td_graph_add(G, TD_IR_PARAM, TD_F32, 2, ws, NULL, 0, NULL, nospan());
  int b = td_graph_add(G, TD_IR_PARAM, TD_F32, 1, bs, NULL, 0, NULL, nospan());
  at.perm[0] = 1;
  at.perm[1] = 0;
  int t = td_graph_add(G, TD_IR_PERMUTE, TD_F32, 2, wt, &w, 1, &at, nospan());
  int mm_in[2] = {x, t};
  int mm = td_graph_add(G, TD_IR_MATMUL, TD_F32, 2, ys, mm_in, 2, NULL, nospan());
  int add_in[2] = {mm, b};
  int y = td_graph_add(G, TD_IR_ADD, TD_F32, 2, ys, add_in, 2, NULL, nospan());
  cr_assert_geq(y, 0);
  td_graph_add_output(G, y);
  cr_expect_eq(G->n_inputs, 1);
  cr_expect_eq(G->n_params, 2);
  td_err err;
  cr_expect_eq(td_graph_verify(G, &err), 0, "%s", err.msg);

  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  td_graph_print(G, NULL, f);
  fclose(f);
  cr_expect(strstr(text, "%4 = matmul f32[N, 2] %0, %3") != NULL, "%s", text);
  cr_expect(strstr(text, "%3 = permute f32[4, 2] %1 perm=[1,0]") != NULL, "%s", text);
  cr_expect(strstr(text, "return %5") != NULL, "%s", text);
  free(text);
}

Test(graph, verifier_rejects_broken_graphs) {
  td_dim s3[1] = {3}, s4[1] = {4}, s1[2] = {3, 1};
  td_err err;
  int a = td_graph_add(G, TD_IR_INPUT, TD_F32, 1, s3, NULL, 0, NULL, nospan());
  int b = td_graph_add(G, TD_IR_INPUT, TD_F32, 1, s4, NULL, 0, NULL, nospan());
  int in[2] = {a, b};
  /* [3] + [4] does not broadcast to [4] */
  td_graph_add(G, TD_IR_ADD, TD_F32, 1, s4, in, 2, NULL, nospan());
  cr_expect_eq(td_graph_verify(G, &err), -1);
  cr_expect(strstr(err.msg, "broadcast") != NULL, "%s", err.msg);

  td_graph *g2 = td_graph_new(A, "t2");
  a = td_graph_add(g2, TD_IR_INPUT, TD_I32, 1, s3, NULL, 0, NULL, nospan());
  b = td_graph_add(g2, TD_IR_INPUT, TD_F32, 1, s3, NULL, 0, NULL, nospan());
  int in2[2] = {a, b};
  td_graph_add(g2, TD_IR_ADD, TD_F32, 1, s3, in2, 2, NULL, nospan()); /* i32 input to f32 add */
  cr_expect_eq(td_graph_verify(g2, &err), -1);
  cr_expect(strstr(err.msg, "dtype") != NULL, "%s", err.msg);

  td_graph *g3 = td_graph_new(A, "t3");
  a = td_graph_add(g3, TD_IR_INPUT, TD_F32, 2, s1, NULL, 0, NULL, nospan());
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axes = 1; /* reduce axis 0 but claim it kept size 3 */
  td_graph_add(g3, TD_IR_SUM, TD_F32, 2, s1, &a, 1, &at, nospan());
  cr_expect_eq(td_graph_verify(g3, &err), -1);

  td_graph *g4 = td_graph_new(A, "t4");
  a = td_graph_add(g4, TD_IR_INPUT, TD_F32, 1, s3, NULL, 0, NULL, nospan());
  int fwd = a + 5; /* refers forward */
  td_graph_add(g4, TD_IR_NEG, TD_F32, 1, s3, &fwd, 1, NULL, nospan());
  cr_expect_eq(td_graph_verify(g4, &err), -1);
}

Test(graph, op_table_is_consistent) {
  for (int i = 0; i < TD_IR_OP_COUNT; i++) {
    cr_expect(td_ops[i].name && td_ops[i].name[0], "op %d has no name", i);
    for (int j = 0; j < i; j++)
      cr_expect(strcmp(td_ops[i].name, td_ops[j].name), "ops %d and %d share the name %s", i, j, td_ops[i].name);
    td_opkind k = td_ops[i].kind;
    if (k == TD_K_UNARY) cr_expect_eq(td_ops[i].arity, 1, "%s", td_ops[i].name);
    if (k == TD_K_BINARY || k == TD_K_COMPARE) cr_expect_eq(td_ops[i].arity, 2, "%s", td_ops[i].name);
  }
}

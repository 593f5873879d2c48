/* test_ir.c - symbolic sizes, graph building, the verifier and the printer.
 *
 * Symbolic-size arithmetic is checked against plain integer arithmetic:
 * every polynomial built is evaluated at many symbol values and compared
 * with the same expression computed directly in C.  What cannot be
 * represented (coefficients past int64, more than TD_MONO_MAX symbols in
 * a term or TD_POLY_MAX terms, memory running out) must give TD_DIM_BAD,
 * never a size.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lang/ir.h"
#include "runtime/mem.h"

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

/* ---- exact or TD_DIM_BAD ---- */

Test(dims, overflow_gives_bad_never_a_size) {
  td_dim N = td_dim_sym(G, td_sym_new(G, "N"));
  cr_expect(TD_DIM_IS_BAD(td_dim_add(G, INT64_MAX, 1)));
  cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, (int64_t)1 << 32, (int64_t)1 << 32)));
  cr_expect_eq(td_dim_mul(G, (int64_t)1 << 31, (int64_t)1 << 31), (int64_t)1 << 62);
  td_dim big = td_dim_mul(G, N, (int64_t)1 << 62); /* 2^62 * N */
  cr_assert(!TD_DIM_IS_BAD(big));
  cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, big, 4)), "N * 2^62 * 4");
  cr_expect(TD_DIM_IS_BAD(td_dim_add(G, big, big)));
  cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, big, big)));
  cr_expect(TD_DIM_IS_BAD(td_dim_sub(G, 0, td_dim_const(G, INT64_MIN))), "-(-2^63)");
  cr_expect(TD_DIM_IS_BAD(td_dim_sub(G, N, td_dim_const(G, INT64_MIN))), "N + 2^63");
  /* what fits is kept exactly */
  cr_expect_eq(td_dim_sub(G, td_dim_add(G, big, N), big), N);
  td_dim low = td_dim_add(G, td_dim_const(G, INT64_MIN), N);
  int64_t v[1] = {5};
  cr_expect_eq(td_dim_eval(G, low, v), INT64_MIN + 5);
  cr_expect_eq(td_dim_eval(G, td_dim_const(G, -7), NULL), -7);
}

Test(dims, a_term_holds_sixteen_symbols) {
  td_dim p = 1, s[TD_MONO_MAX + 1];
  int64_t vals[TD_MONO_MAX + 1], want = 1;
  for (int i = 0; i <= TD_MONO_MAX; i++) {
    char name[8];
    snprintf(name, sizeof name, "S%d", i);
    s[i] = td_dim_sym(G, td_sym_new(G, name));
    vals[i] = i % 3 + 1;
  }
  cr_assert_geq(TD_MONO_MAX, 16);
  for (int i = 0; i < TD_MONO_MAX; i++) {
    p = td_dim_mul(G, p, s[i]);
    want *= vals[i];
  }
  cr_assert(!TD_DIM_IS_BAD(p));
  cr_expect_eq(td_dim_eval(G, p, vals), want);
  cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, p, s[TD_MONO_MAX])), "17 symbols in a term");
  cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, p, s[0])), "a repeated symbol counts too");
  cr_expect(!TD_DIM_IS_BAD(td_dim_add(G, p, s[TD_MONO_MAX])));
}

Test(dims, a_polynomial_holds_256_terms) {
  td_dim p = 1, s[9];
  int64_t vals[9], want = 1;
  for (int i = 0; i < 9; i++) {
    char name[8];
    snprintf(name, sizeof name, "S%d", i);
    s[i] = td_dim_sym(G, td_sym_new(G, name));
    vals[i] = 2 * i + 1;
  }
  cr_assert_geq(TD_POLY_MAX, 256);
  for (int i = 0; i < 8; i++) { /* (S0 + 1) ... (S7 + 1): 256 terms */
    p = td_dim_mul(G, p, td_dim_add(G, s[i], 1));
    want *= vals[i] + 1;
  }
  cr_assert(!TD_DIM_IS_BAD(p));
  cr_expect_eq(G->dims[-p - 1].n, 256);
  cr_expect_eq(td_dim_eval(G, p, vals), want);
  if (TD_POLY_MAX == 256) {
    cr_expect(TD_DIM_IS_BAD(td_dim_mul(G, p, td_dim_add(G, s[8], 1))), "512 terms");
    cr_expect(TD_DIM_IS_BAD(td_dim_add(G, p, s[8])), "257 terms");
  }
  cr_expect_eq(td_dim_sub(G, td_dim_add(G, p, 1), 1), p, "adding to an existing term keeps 256");
}

Test(dims, bad_propagates_through_every_operation) {
  td_dim N = td_dim_sym(G, td_sym_new(G, "N")), B = TD_DIM_BAD, q = 0;
  td_dim r[] = {td_dim_add(G, B, 1), td_dim_add(G, N, B), td_dim_sub(G, B, N), td_dim_sub(G, 1, B),
                td_dim_mul(G, B, 0), td_dim_mul(G, 0, B), td_dim_mul(G, B, N), td_dim_sym(G, -1)};
  for (size_t i = 0; i < sizeof r / sizeof *r; i++) cr_expect(TD_DIM_IS_BAD(r[i]), "result %zu", i);
  cr_expect_eq(td_dim_div(G, B, 2, &q), 0);
  cr_expect(TD_DIM_IS_BAD(q));
  q = 0;
  cr_expect_eq(td_dim_div(G, N, B, &q), 0);
  cr_expect(TD_DIM_IS_BAD(q));
  q = 0;
  cr_expect_eq(td_dim_ceil_div(G, B, 2, &q), 0);
  cr_expect(TD_DIM_IS_BAD(q));
  char b[16];
  cr_expect_str_eq(td_dim_str(G, B, b, sizeof b), "?");
}

Test(dims, out_of_memory_gives_bad) {
  td_dim N = td_dim_sym(G, td_sym_new(G, "N"));
  td_mem_fail_after(1);
  int bad = 0, wrong = 0;
  for (int64_t i = 1; i < 1000000 && !bad; i++) { /* new polynomials until the arena needs memory */
    td_dim d = td_dim_add(G, N, i);
    int64_t v[1] = {3};
    if (TD_DIM_IS_BAD(d)) bad = 1;
    else wrong += TD_DIM_IS_CONST(d) || td_dim_eval(G, d, v) != 3 + i;
  }
  td_dim q = 0;
  int rc = td_dim_div(G, td_dim_mul(G, N, N), N, &q);  /* its scratch memory fails */
  td_mem_fail_after(0);
  cr_expect(bad);
  cr_expect_eq(wrong, 0);
  cr_expect_eq(rc, 0);
  cr_expect(TD_DIM_IS_BAD(q));
}

/* a / b must give q exactly, checked at symbol values. */
static void expect_div(td_dim a, td_dim b, td_dim q) {
  td_dim got = 0;
  cr_assert_eq(td_dim_div(G, a, b, &got), 0);
  char s1[128], s2[128];
  cr_expect_eq(got, q, "got %s, want %s", td_dim_str(G, got, s1, sizeof s1), td_dim_str(G, q, s2, sizeof s2));
}

Test(dims, division_is_polynomial_division) {
  int k = td_sym_new(G, "K"), a = td_sym_new(G, "A"), b = td_sym_new(G, "B");
  td_dim K = td_dim_sym(G, k), Av = td_dim_sym(G, a), Bv = td_dim_sym(G, b), q;
  td_dim k1 = td_dim_sub(G, K, 1), k1sq = td_dim_mul(G, k1, k1);
  expect_div(k1sq, k1, k1);                                             /* (K-1)^2 / (K-1) */
  expect_div(td_dim_mul(G, 8, k1sq), k1sq, 8);                          /* the reshape(-1) of issue 12 */
  expect_div(td_dim_mul(G, td_dim_add(G, Av, Bv), td_dim_sub(G, Av, Bv)), td_dim_add(G, Av, Bv), td_dim_sub(G, Av, Bv));
  td_dim k3 = td_dim_sub(G, td_dim_mul(G, K, td_dim_mul(G, K, K)), 1);  /* K^3 - 1 = (K-1)(K^2+K+1) */
  expect_div(k3, k1, td_dim_add(G, td_dim_add(G, td_dim_mul(G, K, K), K), 1));
  expect_div(td_dim_add(G, td_dim_mul(G, 2, K), 2), 2, td_dim_add(G, K, 1));
  expect_div(td_dim_mul(G, 2, K), td_dim_const(G, -2), td_dim_sub(G, 0, K));
  expect_div(0, k1, 0);
  /* not exact for every value, or not with integer coefficients */
  cr_expect_eq(td_dim_div(G, td_dim_add(G, td_dim_mul(G, Av, Av), td_dim_mul(G, Bv, Bv)), td_dim_add(G, Av, Bv), &q), -1);
  cr_expect_eq(td_dim_div(G, k3, td_dim_add(G, K, 1), &q), -1);
  cr_expect_eq(td_dim_div(G, td_dim_add(G, td_dim_mul(G, K, K), K), 2, &q), -1, "K(K+1)/2 has coefficients 1/2");
  cr_expect_eq(td_dim_div(G, td_dim_add(G, K, 1), K, &q), -1);
  cr_expect_eq(td_dim_div(G, k1, 0, &q), -1);
  /* random products divide back; products plus one do not */
  srand(7);
  td_dim sy[3] = {K, Av, Bv};
  for (int t = 0; t < 300; t++) {
    td_dim p[2];
    for (int j = 0; j < 2; j++) {
      p[j] = rand() % 5 - 2;
      if (p[j] < 0) p[j] = td_dim_const(G, p[j]);
      for (int n = rand() % 3 + 1; n > 0; n--) {
        td_dim m = td_dim_const(G, rand() % 7 - 3);
        for (int d = rand() % 3; d > 0; d--) m = td_dim_mul(G, m, sy[rand() % 3]);
        p[j] = td_dim_add(G, p[j], m);
      }
    }
    if (p[1] == 0) continue;
    td_dim prod = td_dim_mul(G, p[0], p[1]);
    for (int64_t x = 0; x < 4; x++) { /* the product is the product of the values */
      int64_t vals[3] = {x, 2 * x + 1, 3 - x};
      cr_assert_eq(td_dim_eval(G, prod, vals), td_dim_eval(G, p[0], vals) * td_dim_eval(G, p[1], vals));
    }
    expect_div(prod, p[1], p[0]);
    if (!TD_DIM_IS_CONST(p[1]) && G->dims[-p[1] - 1].t[G->dims[-p[1] - 1].n - 1].n > 0)
      cr_expect_eq(td_dim_div(G, td_dim_add(G, prod, 1), p[1], &q), -1);
  }
}

/* ceil(v / m) in plain C, for m > 0. */
static int64_t ceil_ref(int64_t v, int64_t m) { return v >= 0 ? (v + m - 1) / m : -((-v) / m); }

Test(dims, ceil_division_counts_slices) {
  int n = td_sym_new(G, "N"), t = td_sym_new(G, "T");
  td_dim N = td_dim_sym(G, n), T = td_dim_sym(G, t), q;
  struct { td_dim span; int64_t m; } ok[] = {
    {td_dim_sub(G, td_dim_mul(G, 2, N), 1), 2},                 /* y[1::2] of 2*N rows: N */
    {td_dim_mul(G, 2, N), 2},
    {td_dim_add(G, td_dim_mul(G, 2, N), 1), 2},
    {td_dim_sub(G, td_dim_mul(G, 3, N), 5), 3},
    {td_dim_sub(G, td_dim_mul(G, 4, td_dim_mul(G, N, T)), 3), 4},
    {N, 1},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    cr_assert_eq(td_dim_ceil_div(G, ok[i].span, (uint64_t)ok[i].m, &q), 0, "case %zu", i);
    for (int64_t x = 0; x < 20; x++) {
      int64_t vals[2] = {x, 20 - x};
      int64_t sv = td_dim_eval(G, ok[i].span, vals);
      cr_expect_eq(td_dim_eval(G, q, vals), ceil_ref(sv, ok[i].m), "case %zu at N=%lld", i, (long long)x);
    }
  }
  cr_expect_eq(td_dim_ceil_div(G, N, 2, &q), -1, "ceil(N / 2) is no polynomial");
  cr_expect_eq(td_dim_ceil_div(G, td_dim_add(G, td_dim_mul(G, 2, N), T), 2, &q), -1);
  cr_expect_eq(td_dim_ceil_div(G, N, 0, &q), -1);
  cr_assert_eq(td_dim_ceil_div(G, 5, 2, &q), 0);
  cr_expect_eq(q, 3);
  cr_assert_eq(td_dim_ceil_div(G, td_dim_const(G, -5), 2, &q), 0);
  cr_expect_eq(td_dim_eval(G, q, NULL), -2);
  /* steps of 2^63 (|INT64_MIN|) and counts of -2^63 */
  uint64_t m63 = (uint64_t)1 << 63;
  cr_assert_eq(td_dim_ceil_div(G, td_dim_mul(G, td_dim_const(G, INT64_MIN), N), m63, &q), 0);
  cr_expect_eq(q, td_dim_sub(G, 0, N));
  cr_expect_eq(td_dim_ceil_div(G, td_dim_mul(G, td_dim_const(G, INT64_MAX), N), m63, &q), -1);
  cr_assert_eq(td_dim_ceil_div(G, INT64_MAX, m63, &q), 0);
  cr_expect_eq(q, 1);
  cr_assert_eq(td_dim_ceil_div(G, td_dim_const(G, INT64_MIN), 1, &q), 0);
  cr_expect_eq(td_dim_eval(G, q, NULL), INT64_MIN);
  cr_expect_eq(td_dim_ceil_div(G, 1, m63 + 1, &q), -1);
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

Test(graph, verifier_rejects_sizes_that_overflowed) {
  td_dim s[2] = {3, TD_DIM_BAD};
  td_err err;
  td_graph_add(G, TD_IR_INPUT, TD_F32, 2, s, NULL, 0, NULL, nospan());
  cr_expect_eq(td_graph_verify(G, &err), -1);
  cr_expect(strstr(err.msg, "overflow") != NULL, "%s", err.msg);
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

/* test_verify.c - the kernel plan's verifier (compiler/plan_verify.c) and
 * sizes that cannot be represented.
 *
 * Each rejection test builds the real plan of a small program, checks that
 * it verifies, then breaks it the way a wrong planner would (two
 * reductions over different axes merged into one row kernel, as fuse.c
 * does without its axes check; two live temporaries in one arena slot; an
 * output dropped; a buffer, a slot or a matmul view too small) and asserts
 * that td_plan_verify rejects it with a message naming what is wrong and
 * where.  The compiled tests run programs whose plans the verifier guards
 * (the two-axes program, the 5-symbol entry of issue 14) and compare the
 * results with float64 references computed here.
 */
#include <criterion/criterion.h>

#include "compiled_check.h"

static prog P;

static void teardown(void) { td_arena_free(P.a); }

TestSuite(verify, .fini = teardown);

static void load_text(const char *text) {
  int rc = load(&P, "t.td", text);
  if (rc) td_diag_render(&P.d, stderr, 0);
  cr_assert_eq(rc, 0, "cannot load the test program");
}

static td_graph *lower(const char *entry) {
  td_graph *g = td_program_lower(P.p, entry);
  if (!g) td_diag_render(&P.d, stderr, 0);
  cr_assert_not_null(g, "cannot lower %s", entry);
  return g;
}

/* The verified plan of entry `entry` of text. */
static td_plan *plan_text(const char *text, const char *entry) {
  load_text(text);
  td_graph *o;
  td_err e;
  cr_assert_eq(td_optimize(lower(entry), NULL, &o, NULL, &e), 0, "%s", e.msg);
  td_plan *p = td_plan_build(o, &e);
  cr_assert_not_null(p, "%s", e.msg);
  cr_assert_eq(td_plan_verify(p, &e), 0, "the real plan: %s", e.msg);
  return p;
}

/* td_plan_verify rejects p with a message containing every string of want. */
static void rejected(const td_plan *p, const char *const *want, int n) {
  td_err e = {{0}};
  cr_assert_eq(td_plan_verify(p, &e), -1, "the broken plan verifies");
  cr_assert(strstr(e.msg, "internal error") != NULL, "not an internal error: %s", e.msg);
  for (int i = 0; i < n; i++) cr_expect(strstr(e.msg, want[i]) != NULL, "'%s' not in: %s", want[i], e.msg);
}

static int kernel_of_node(const td_plan *p, int node) {
  int k = p->kernel_of[node];
  cr_assert_geq(k, 0, "%%%d is computed by no kernel", node);
  return k;
}

/* ---- the fusion mutation ----------------------------------------------------- */

/* Sorted union of two ascending id lists, without `drop`, into a new array. */
static int *merge_ids(td_graph *g, const int *a, int na, const int *b, int nb, int drop, int *n) {
  int *r = td_arena_alloc(g->arena, (size_t)(na + nb + 1) * sizeof *r), i = 0, j = 0;
  cr_assert_not_null(r);
  *n = 0;
  while (i < na || j < nb) {
    int x = j == nb || (i < na && a[i] < b[j]) ? a[i++] : b[j++];
    if (*n && r[*n - 1] == x) continue;
    if (x != drop) r[(*n)++] = x;
  }
  return r;
}

/* What fuse.c builds when it lets a reduction join a row kernel of other
 * axes: kernel `from` (a row kernel) is evaluated inside kernel `into`,
 * its reductions in into's first pass, its root no longer stored. */
static void merge_kernels(td_plan *p, int from, int into) {
  td_kernel *F = &p->kernels[from], *K = &p->kernels[into];
  td_graph *g = p->g;
  int n;
  K->nodes = merge_ids(g, F->nodes, F->n_nodes, K->nodes, K->n_nodes, -1, &n);
  K->n_nodes = n;
  int *reads = merge_ids(g, F->reads, F->n_reads, K->reads, K->n_reads, F->root, &n);
  K->reads = reads;
  K->n_reads = n;
  K->stages[0].reds = merge_ids(g, F->stages[0].reds, F->stages[0].n_reds, K->stages[0].reds,
                                K->stages[0].n_reds, -1, &n);
  K->stages[0].n_reds = n;
  for (int i = 0; i < F->n_nodes; i++) p->kernel_of[F->nodes[i]] = into;
  /* the root of `from` is evaluated, no longer stored: its buffer goes */
  int bi = p->buf_of[F->root];
  memmove(&p->bufs[bi], &p->bufs[bi + 1], (size_t)(p->n_bufs - bi - 1) * sizeof *p->bufs);
  p->n_bufs--;
  for (int i = 0; i < g->n_nodes; i++)
    if (p->buf_of[i] > bi) p->buf_of[i]--;
  p->buf_of[F->root] = -1;
  /* kernel `from` goes; later kernels move down one place */
  memmove(&p->kernels[from], &p->kernels[from + 1], (size_t)(p->n_kernels - from - 1) * sizeof *p->kernels);
  p->n_kernels--;
  for (int i = 0; i < g->n_nodes; i++)
    if (p->kernel_of[i] > from) p->kernel_of[i]--;
  for (int i = 0; i < p->n_bufs; i++) {
    if (p->bufs[i].first > from) p->bufs[i].first--;
    if (p->bufs[i].last > from) p->bufs[i].last--;
  }
}

static const char TWO_AXES[] =
    "fn f(x: f32[N, E]) -> f32[N, E] {\n"
    "  let a = sum(x, axis = 0, keepdims = true)\n"
    "  let b = sum(x, axis = 1, keepdims = true)\n"
    "  x * a + b\n"
    "}\n";

Test(verify, sums_over_two_axes_in_one_row_kernel_are_rejected) {
  td_plan *p = plan_text(TWO_AXES, "f");
  td_graph *g = p->g;
  int sums[2], ns = 0;
  for (int i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].op == TD_IR_SUM && ns < 2) sums[ns++] = i;
  cr_assert_eq(ns, 2);
  cr_assert_eq(g->nodes[sums[0]].attr.axes, 1u, "the first sum is over axis 0");
  int k0 = kernel_of_node(p, sums[0]), k1 = kernel_of_node(p, sums[1]);
  cr_assert_neq(k0, k1, "the real planner keeps sums over different axes apart");
  cr_assert_eq(p->kernels[k1].red_axes, 2u);
  merge_kernels(p, k0, k1);
  cr_assert_eq(p->n_kernels, 1);
  const char *want[] = {"sum %", "(line 2:", "reduces axes [0]", "reduce axes [1]", "kernel k"};
  rejected(p, want, 5);
}

/* The program the mutation miscompiled, compiled and run against a float64
 * reference: wrong numbers would show here if a wrong plan got through. */
Test(verify, sums_over_two_axes_compile_to_the_right_numbers) {
  load_text(TWO_AXES);
  td_graph *g = lower("f");
  compiled_graph cg_;
  compile_graph(g, &cg_, "f");
  int64_t shape[2] = {3, 5};
  td_err e;
  td_tensor *x = td_tensor_new(TD_F32, 2, shape, &e), **outs = NULL;
  cr_assert_not_null(x);
  float *xv = x->data;
  for (int i = 0; i < 15; i++) xv[i] = (float)((i * 7) % 11) / 4.0f - 1.0f;
  cr_assert_eq(td_compiled_run(cg_.c, &x, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  const float *o = outs[0]->data;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      double a = 0, b = 0;
      for (int r = 0; r < 3; r++) a += xv[r * 5 + j];
      for (int c = 0; c < 5; c++) b += xv[i * 5 + c];
      double want = xv[i * 5 + j] * a + b;
      cr_expect(fabs(o[i * 5 + j] - want) <= 1e-5 * (1 + fabs(want)), "[%d,%d]: %g, want %g", i, j,
                o[i * 5 + j], want);
    }
  release_all(outs, cg_.plan->n_out_nodes);
  td_tensor_release(x);
  td_compiled_free(cg_.c);
}

/* ---- memory and outputs -------------------------------------------------------- */

/* Both matmul operands are temporaries of one size, live at once. */
static const char TWO_TEMPS[] =
    "fn g(x: f32[N, N], w: f32[N, N]) -> f32[N, N] {\n"
    "  exp(x) @ sin(w)\n"
    "}\n";

static int temp_buffers(const td_plan *p, int *t, int max) {
  int n = 0;
  for (int i = 0; i < p->n_bufs && n < max; i++)
    if (p->bufs[i].kind == TD_BUF_TEMP) t[n++] = i;
  return n;
}

Test(verify, live_temporaries_sharing_a_slot_are_rejected) {
  td_plan *p = plan_text(TWO_TEMPS, "g");
  int t[4];
  cr_assert_eq(temp_buffers(p, t, 4), 2);
  td_buffer *a = &p->bufs[t[0]], *b = &p->bufs[t[1]];
  cr_assert_neq(a->index, b->index, "the real plan gives them two slots");
  cr_assert_geq(a->last, b->first, "both live when the matmul runs");
  b->index = a->index;
  b->offset = a->offset;
  const char *want[] = {"shares arena slot", "(line 2:"};
  rejected(p, want, 2);
}

static const char PRINTS[] =
    "fn h(x: f32[4]) -> f32[4] {\n"
    "  let y = exp(x)\n"
    "  print(\"y\", y)\n"
    "  let z = sin(x)\n"
    "  print(\"z\", z)\n"
    "  y * z\n"
    "}\n";

Test(verify, a_missing_output_is_rejected) {
  td_plan *p = plan_text(PRINTS, "h");
  cr_assert_eq(p->n_out_nodes, 3);
  p->n_out_nodes--;                      /* the second print's tensor */
  const char *want[] = {"hands back 2 values", "3 outputs and printed tensors"};
  rejected(p, want, 2);
}

Test(verify, prints_out_of_program_order_are_rejected) {
  td_plan *p = plan_text(PRINTS, "h");
  int t = p->out_nodes[1];
  p->out_nodes[1] = p->out_nodes[2];
  p->out_nodes[2] = t;
  const char *want[] = {"print", "not handed back in program order", "(line 3:"};
  rejected(p, want, 3);
}

Test(verify, an_output_no_kernel_writes_is_rejected) {
  td_plan *p = plan_text(PRINTS, "h");
  int y = p->out_nodes[1];
  p->buf_of[y] = -1;
  const char *want[] = {"produced by no kernel", "(line 2:"};
  rejected(p, want, 2);
}

static const char LITERAL_MM[] =
    "fn m(x: f32[4, 8], w: f32[8, 3]) -> f32[4, 3] {\n"
    "  relu(exp(x) @ w)\n"
    "}\n";

Test(verify, a_buffer_smaller_than_its_value_is_rejected) {
  td_plan *p = plan_text(LITERAL_MM, "m");
  int t[4];
  cr_assert_eq(temp_buffers(p, t, 4), 1);
  cr_assert_eq(p->bufs[t[0]].bytes, 4 * 8 * 4);
  p->bufs[t[0]].bytes = 64;
  const char *want[] = {"holds 64 bytes, but the value has 128", "exp %"};
  rejected(p, want, 2);
}

Test(verify, a_slot_smaller_than_its_buffer_is_rejected) {
  td_plan *p = plan_text(LITERAL_MM, "m");
  int t[4];
  cr_assert_eq(temp_buffers(p, t, 4), 1);
  p->slot_bytes[p->bufs[t[0]].index] = 96;
  const char *want[] = {"do not fit arena slot", "96 bytes"};
  rejected(p, want, 2);
}

Test(verify, a_matmul_view_past_its_buffer_is_rejected) {
  td_plan *p = plan_text(LITERAL_MM, "m");
  cr_assert_eq(p->n_kernels, 2);
  td_kernel *k = &p->kernels[1];
  cr_assert_eq(k->kind, TD_KERN_MATMUL);
  k->b.offset = 1;                       /* w read one element late */
  const char *want[] = {"operand b", "reads outside the 24 elements", "matmul %"};
  rejected(p, want, 3);
}

Test(verify, a_pointwise_op_of_another_space_is_rejected) {
  td_plan *p = plan_text(LITERAL_MM, "m");
  td_kernel *k = &p->kernels[0];
  cr_assert_eq(k->kind, TD_KERN_POINTWISE);
  k->space[1] = 4;
  const char *want[] = {"space is not its root's shape", "kernel k0"};
  rejected(p, want, 2);
}

/* A scalar's reductions reduce no axes: a row kernel of one row (the
 * first difftest run with the verifier on found mean(f16[]) rejected). */
Test(verify, reductions_of_a_scalar_verify) {
  td_plan *p = plan_text("fn s(x: f16[]) -> f16[] {\n"
                         "  mean(x) * max(x)\n"
                         "}\n", "s");
  int reds = 0;
  for (int k = 0; k < p->n_kernels; k++) reds += p->kernels[k].kind == TD_KERN_REDUCE;
  cr_assert_geq(reds, 1, "the plan has a row kernel");
}

/* ---- every example verifies ---------------------------------------------------- */

Test(verify, the_plans_of_the_examples_verify) {
  static const char *const files[] = {"examples/mlp.td", "examples/transformer.td"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TDSL_SRCDIR, files[f]);
    FILE *fp = fopen(path, "r");
    if (!fp) continue;
    fclose(fp);
    prog Q;
    cr_assert_eq(load(&Q, path, NULL), 0, "%s", path);
    const char **names;
    int n = td_program_entries(Q.p, &names);
    for (int i = 0; i < n; i++) {
      td_graph *g = td_program_lower(Q.p, names[i]), *o;
      td_err e;
      cr_assert_not_null(g, "%s: %s", path, names[i]);
      cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
      td_plan *p = td_plan_build(o, &e);
      cr_assert_not_null(p, "%s %s: %s", path, names[i], e.msg);
      cr_expect_eq(td_plan_verify(p, &e), 0, "%s %s: %s", path, names[i], e.msg);
    }
    td_arena_free(Q.a);
  }
}

/* ---- sizes: the 5-symbol entry and sizes that cannot be represented ----------- */

static const char FIVE[] =
    "fn f(x: f32[A,B,C,D,E], w: f32[E,F]) -> f32[A,B,C,D,F] {\n"
    "  let y = exp(x) * 2.0\n"
    "  tanh(y @ w) + sum(y, axis = 4, keepdims = true)\n"
    "}\n";

static double eval_bytes(const td_plan *p, const int64_t *syms) {
  double total = 0;
  for (int k = 0; k < p->n_kernels; k++)
    total += (double)td_dim_eval(p->g, p->kernels[k].bytes_read, syms) +
             (double)td_dim_eval(p->g, p->kernels[k].bytes_written, syms);
  return total;
}

Test(verify, five_symbolic_sizes_compile_to_the_right_numbers) {
  load_text(FIVE);
  td_graph *g = lower("f");
  compiled_graph cg_;
  compile_graph(g, &cg_, "f");
  enum { A_ = 2, B_ = 3, C_ = 2, D_ = 2, E_ = 5, F_ = 3, ROWS = A_ * B_ * C_ * D_ };
  int64_t xs[5] = {A_, B_, C_, D_, E_}, ws[2] = {E_, F_};
  td_err e;
  td_tensor *in[2] = {td_tensor_new(TD_F32, 5, xs, &e), td_tensor_new(TD_F32, 2, ws, &e)}, **outs = NULL;
  cr_assert(in[0] && in[1]);
  float *x = in[0]->data, *w = in[1]->data;
  for (int i = 0; i < ROWS * E_; i++) x[i] = (float)((i * 37) % 23) / 23.0f - 0.5f;
  for (int i = 0; i < E_ * F_; i++) w[i] = (float)((i * 11) % 7) / 7.0f - 0.4f;
  cr_assert_eq(td_compiled_run(cg_.c, in, NULL, 0, &outs, &e, NULL), 0, "%s", e.msg);
  cr_assert_eq(outs[0]->rank, 5);
  cr_assert_eq(outs[0]->shape[4], F_);
  const float *o = outs[0]->data;
  for (int r = 0; r < ROWS; r++) {
    double y[E_], s = 0;
    for (int k = 0; k < E_; k++) s += y[k] = exp((double)x[r * E_ + k]) * 2.0;
    for (int j = 0; j < F_; j++) {
      double mm = 0;
      for (int k = 0; k < E_; k++) mm += y[k] * w[k * F_ + j];
      double want = tanh(mm) + s;
      cr_expect(fabs(o[r * F_ + j] - want) <= 1e-5 * (1 + fabs(want)), "row %d col %d: %g, want %g", r, j,
                o[r * F_ + j], want);
    }
  }
  /* bytes moved: at least the inputs read and the output written, never 0 */
  int64_t syms[64];
  for (int i = 0; i < 64; i++) syms[i] = 0;
  for (int i = 0; i < cg_.plan->g->n_syms; i++) {
    const char *s = cg_.plan->g->syms[i];
    syms[i] = !strcmp(s, "A") ? A_ : !strcmp(s, "B") ? B_ : !strcmp(s, "C") ? C_ : !strcmp(s, "D") ? D_
            : !strcmp(s, "E") ? E_ : F_;
  }
  double floor_bytes = 4.0 * (ROWS * E_ + E_ * F_ + ROWS * F_);
  cr_expect_geq(eval_bytes(cg_.plan, syms), floor_bytes, "bytes moved %g", eval_bytes(cg_.plan, syms));
  release_all(outs, cg_.plan->n_out_nodes);
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  td_compiled_free(cg_.c);
}

/* 17 symbols in one term (TD_MONO_MAX is 16): an error at its line. */
Test(verify, a_term_of_more_than_16_symbols_is_an_error_at_its_line) {
  cr_assert_eq(TD_MONO_MAX, 16);
  load_text("fn f(x: f32[A,B,C,D,E,F,G,H], y: f32[I,J,K,L,M,N,O,P], z: f32[Q]) -> f32[Q] {\n"
            "  let u = reshape(x, [A*B*C*D*E*F*G*H, 1])\n"
            "  let v = reshape(y, [1, I*J*K*L*M*N*O*P])\n"
            "  let s = reshape(u * v, [A*B*C*D*E*F*G*H*I*J*K*L*M*N*O*P, 1]) * reshape(z, [1, Q])\n"
            "  print(s)\n"
            "  z\n"
            "}\n");
  cr_assert_null(td_program_lower(P.p, "f"), "17 symbols in one term are refused");
  cr_assert_geq(P.d.n, 1);
  cr_expect_eq(P.d.items[0].span.line, 4, "the error is at the product's line");
  cr_expect(strstr(P.d.items[0].msg, "does not fit") != NULL, "%s", P.d.items[0].msg);
}

/* 17 * 17 = 289 printed outer products with distinct sizes Ai*Bj: each
 * value is fine, but the sum of the outputs' bytes has more than
 * TD_POLY_MAX (256) terms.  The plan refuses it at the value that made
 * the sum fail, with its line; it never sizes it 0. */
Test(verify, a_sum_of_more_than_256_terms_is_an_error_at_its_line) {
  cr_assert_eq(TD_POLY_MAX, 256);
  char *src = td_malloc(1 << 16);
  cr_assert_not_null(src);
  size_t w = (size_t)snprintf(src, 1 << 16, "fn f(");
  for (int i = 0; i < 17; i++) w += (size_t)snprintf(src + w, (1 << 16) - w, "a%d: f32[A%d], ", i, i);
  for (int i = 0; i < 17; i++) w += (size_t)snprintf(src + w, (1 << 16) - w, "b%d: f32[B%d]%s", i, i, i < 16 ? ", " : "");
  w += (size_t)snprintf(src + w, (1 << 16) - w, ") -> f32[A0] {\n");
  for (int i = 0; i < 17; i++)
    for (int j = 0; j < 17; j++)
      w += (size_t)snprintf(src + w, (1 << 16) - w, "  print(reshape(a%d, [A%d, 1]) * reshape(b%d, [1, B%d]))\n", i, i, j, j);
  snprintf(src + w, (1 << 16) - w, "  a0\n}\n");
  load_text(src);
  td_free(src);
  td_graph *o;
  td_err e;
  cr_assert_eq(td_optimize(lower("f"), NULL, &o, NULL, &e), 0, "%s", e.msg);
  cr_assert_null(td_plan_build(o, &e), "the plan of 289 distinct output sizes is refused");
  cr_expect(strstr(e.msg, "cannot be represented") != NULL, "%s", e.msg);
  cr_expect(strstr(e.msg, "at most 256 terms") != NULL, "%s", e.msg);
  /* the 257th distinct size: the print on line 2 + 256 */
  cr_expect(strstr(e.msg, "(line 258:") != NULL, "%s", e.msg);
}

/* compiled_check.h's helpers this file does not need */
__attribute__((unused)) static void unused_helpers(void) {
  (void)make_inputs;
  (void)promised_exact;
  (void)differ_bits;
}

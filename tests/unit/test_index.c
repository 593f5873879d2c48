/* test_index.c - the index layer the code generators share (compiler/index.c).
 *
 * The layer is run over a backend whose "expressions" are numbers: every
 * builder computes its value at once (a size is evaluated at fixed symbol
 * values), so a derived index can be checked against the mapping computed
 * directly in the test for every element of small shapes: row-major flat
 * positions for reshape, perm for permute, start + step * i for slice,
 * 0 on size-1 axes for broadcast, and the row mapping of reduction kernels.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "compiler/index.h"

static td_arena *A;
static td_graph *G;
static int64_t symvals[4];
static int n_keep;

static void setup(void) {
  A = td_arena_new();
  G = td_graph_new(A, "t");
  n_keep = 0;
}
static void teardown(void) { td_arena_free(A); }

/* ---- the numeric backend: an expression is a pointer to its value ---- */

static void *box(int64_t v) {
  int64_t *p = td_arena_alloc(A, sizeof *p);
  cr_assert(p);
  *p = v;
  return p;
}
static int64_t val(const void *e) { return *(const int64_t *)e; }

static td_ix *b_new(void *be, int rank) {
  (void)be;
  td_ix *ix = td_arena_alloc(A, sizeof *ix);
  cr_assert(ix);
  ix->rank = rank;
  return ix;
}
static void *b_cst(void *be, int64_t v) { (void)be; return box(v); }
static void *b_size(void *be, td_dim d) { (void)be; return box(td_dim_eval(G, d, symvals)); }
static void *b_add(void *be, void *a, void *b) { (void)be; return box(val(a) + val(b)); }
static void *b_mul(void *be, void *a, void *b) { (void)be; return box(val(a) * val(b)); }
static void *b_div(void *be, void *a, void *b) { (void)be; return box(val(a) / val(b)); }
static void *b_mod(void *be, void *a, void *b) { (void)be; return box(val(a) % val(b)); }
static void *b_keep(void *be, void *a) { (void)be; n_keep++; return a; }

static const td_ix_ops ops = {b_new, b_cst, b_size, b_add, b_mul, b_div, b_mod, b_keep, 0};
static td_ixmemo *memo;
static int n_memo, cap_memo;

static td_ixgen gen(void) {
  memo = NULL;
  n_memo = cap_memo = 0;
  return (td_ixgen){&ops, NULL, G, A, &memo, &n_memo, &cap_memo};
}

/* ---- helpers ---- */

static int node(td_op op, int rank, const td_dim *shape, const int *in, int n_in, const td_attr *at) {
  int id = td_graph_add(G, op, TD_F32, rank, shape, in, n_in, at, (td_span){-1, 0, 0, 1, 1});
  cr_assert_geq(id, 0);
  return id;
}
static int input(int rank, const td_dim *shape) {
  td_attr at;
  memset(&at, 0, sizeof at);
  return node(TD_IR_INPUT, rank, shape, NULL, 0, &at);
}

/* Concrete sizes of node n's shape (symbols at symvals). */
static void sizes(int n, int64_t *s) {
  const td_node *nd = &G->nodes[n];
  for (int k = 0; k < nd->rank; k++) s[k] = td_dim_eval(G, nd->shape[k], symvals);
}

static int64_t count(int rank, const int64_t *s) {
  int64_t c = 1;
  for (int k = 0; k < rank; k++) c *= s[k];
  return c;
}

/* Row-major coordinates of flat position f in shape s, and back. */
static void unflat(int64_t f, int rank, const int64_t *s, int64_t *c) {
  for (int k = rank - 1; k >= 0; k--) { c[k] = f % s[k]; f /= s[k]; }
}
static int64_t flat(int rank, const int64_t *s, const int64_t *c) {
  int64_t f = 0;
  for (int k = 0; k < rank; k++) f = f * s[k] + c[k];
  return f;
}

/* The index of node n at coordinates c (no axis known to be 0). */
static td_ix *at_coords(int n, const int64_t *c) {
  td_ix *ix = b_new(NULL, G->nodes[n].rank);
  for (int k = 0; k < ix->rank; k++) { ix->v[k] = box(c[k]); ix->zero[k] = 0; }
  return ix;
}

/* The values of ix; an axis marked zero must hold 0. */
static void values(const td_ix *ix, int64_t *c) {
  for (int k = 0; k < ix->rank; k++) {
    c[k] = val(ix->v[k]);
    if (ix->zero[k]) cr_assert_eq(c[k], 0, "axis %d is marked 0 but holds %lld", k, (long long)c[k]);
  }
}

/* For every element of node n (input 0 = x): checks that the child index
 * is inside x's shape and that expect(...) accepts it. */
typedef int (*expect_fn)(const int64_t *out, const int64_t *in, const void *ud);
static void check_all(int n, int x, expect_fn expect, const void *ud) {
  td_ixgen g = gen();
  int64_t so[TD_MAX_RANK], si[TD_MAX_RANK], c[TD_MAX_RANK], ci[TD_MAX_RANK];
  sizes(n, so);
  sizes(x, si);
  int ro = G->nodes[n].rank, ri = G->nodes[x].rank;
  for (int64_t f = 0; f < count(ro, so); f++) {
    unflat(f, ro, so, c);
    const td_ix *ix = at_coords(n, c);
    const td_ix *ch = td_ix_child(&g, n, 0, ix);
    cr_assert_eq(ch->rank, ri);
    cr_assert_eq(td_ix_child(&g, n, 0, ix), ch, "memoised per (node, slot, parent)");
    values(ch, ci);
    for (int k = 0; k < ri; k++) cr_assert(ci[k] >= 0 && ci[k] < si[k], "element %lld axis %d: %lld", (long long)f, k, (long long)ci[k]);
    cr_assert(expect(c, ci, ud), "element %lld maps wrongly", (long long)f);
  }
}

/* ---- reshape ---- */

typedef struct rs { int ro, ri; int64_t so[TD_MAX_RANK], si[TD_MAX_RANK]; } rs;
static int same_flat(const int64_t *out, const int64_t *in, const void *ud) {
  const rs *r = ud;
  return flat(r->ro, r->so, out) == flat(r->ri, r->si, in);
}

static void check_reshape(int ri, const td_dim *si, int ro, const td_dim *so) {
  int x = input(ri, si);
  int n = node(TD_IR_RESHAPE, ro, so, &x, 1, NULL);
  rs r = {ro, ri, {0}, {0}};
  sizes(n, r.so);
  sizes(x, r.si);
  cr_assert_eq(count(ro, r.so), count(ri, r.si));
  check_all(n, x, same_flat, &r);
}

TestSuite(index_layer, .init = setup, .fini = teardown);

Test(index_layer, reshape_groups_pair_axes_of_equal_size) {
  int gi[TD_MAX_RANK + 2], go[TD_MAX_RANK + 2];
  /* [2,3,4] -> [6,4]: {2,3}->{6}, {4}->{4} */
  int x = input(3, (td_dim[]){2, 3, 4}), n = node(TD_IR_RESHAPE, 2, (td_dim[]){6, 4}, &x, 1, NULL);
  cr_assert_eq(td_reshape_groups(G, &G->nodes[x], &G->nodes[n], gi, go), 2);
  cr_expect_eq(gi[0], 0); cr_expect_eq(gi[1], 2); cr_expect_eq(gi[2], 3);
  cr_expect_eq(go[0], 0); cr_expect_eq(go[1], 1); cr_expect_eq(go[2], 2);
  /* [1,6] -> [2,1,3]: one group; the size-1 axes join it */
  x = input(2, (td_dim[]){1, 6});
  n = node(TD_IR_RESHAPE, 3, (td_dim[]){2, 1, 3}, &x, 1, NULL);
  cr_assert_eq(td_reshape_groups(G, &G->nodes[x], &G->nodes[n], gi, go), 1);
  cr_expect_eq(gi[0], 0); cr_expect_eq(gi[1], 2);
  cr_expect_eq(go[0], 0); cr_expect_eq(go[1], 3);
  /* [2,3] -> [3,2]: sizes do not pair up */
  x = input(2, (td_dim[]){2, 3});
  n = node(TD_IR_RESHAPE, 2, (td_dim[]){3, 2}, &x, 1, NULL);
  cr_expect_eq(td_reshape_groups(G, &G->nodes[x], &G->nodes[n], gi, go), -1);
}

Test(index_layer, reshape_keeps_the_flat_position) {
  check_reshape(3, (td_dim[]){2, 3, 4}, 2, (td_dim[]){6, 4});
  check_reshape(2, (td_dim[]){6, 4}, 3, (td_dim[]){2, 3, 4});
  check_reshape(2, (td_dim[]){1, 6}, 3, (td_dim[]){2, 1, 3});
  check_reshape(2, (td_dim[]){2, 3}, 2, (td_dim[]){3, 2});      /* no grouping: whole-index path */
  check_reshape(4, (td_dim[]){2, 1, 3, 4}, 2, (td_dim[]){4, 6}); /* 2 vs 4, 6 vs 4: whole index */
  check_reshape(4, (td_dim[]){2, 3, 1, 4}, 3, (td_dim[]){6, 2, 2}); /* {2,3}->{6}, {1,4}->{2,2} */
  cr_expect_gt(n_keep, 0, "linear indices are kept");
}

Test(index_layer, reshape_with_symbolic_sizes) {
  int s = td_sym_new(G, "N");
  td_dim N = td_dim_sym(G, s);
  symvals[s] = 3;
  check_reshape(2, (td_dim[]){N, 6}, 3, (td_dim[]){N, 2, 3});
  check_reshape(3, (td_dim[]){N, 2, 3}, 1, (td_dim[]){td_dim_mul(G, N, 6)});
  check_reshape(2, (td_dim[]){2, N}, 2, (td_dim[]){N, 2});      /* not provably pairable */
}

/* ---- permute, slice, broadcast ---- */

static int permuted(const int64_t *out, const int64_t *in, const void *ud) {
  const int *perm = ud;
  for (int i = 0; i < 3; i++)
    if (in[perm[i]] != out[i]) return 0;
  return 1;
}

Test(index_layer, permute_swaps_axes) {
  int x = input(3, (td_dim[]){2, 3, 4});
  td_attr at;
  memset(&at, 0, sizeof at);
  at.perm[0] = 2, at.perm[1] = 0, at.perm[2] = 1;
  int n = node(TD_IR_PERMUTE, 3, (td_dim[]){4, 2, 3}, &x, 1, &at);
  check_all(n, x, permuted, at.perm);
}

typedef struct sl { int64_t start[2], step[2]; } sl;
static int sliced(const int64_t *out, const int64_t *in, const void *ud) {
  const sl *s = ud;
  return in[0] == s->start[0] + s->step[0] * out[0] && in[1] == s->start[1] + s->step[1] * out[1];
}

Test(index_layer, slice_is_start_plus_step_times_index) {
  int sym = td_sym_new(G, "S");
  symvals[sym] = 2;
  int x = input(2, (td_dim[]){7, 9});
  td_attr at;
  memset(&at, 0, sizeof at);
  at.start[0] = td_dim_sym(G, sym), at.step[0] = 2; /* rows 2, 4, 6 */
  at.start[1] = 8, at.step[1] = -3;                 /* columns 8, 5, 2 */
  int n = node(TD_IR_SLICE, 2, (td_dim[]){3, 3}, &x, 1, &at);
  sl s = {{2, 8}, {2, -3}};
  check_all(n, x, sliced, &s);
}

typedef struct bc { int ro, ri; int64_t si[TD_MAX_RANK]; } bc;
static int broadcast(const int64_t *out, const int64_t *in, const void *ud) {
  const bc *b = ud;
  int off = b->ro - b->ri;
  for (int k = 0; k < b->ri; k++)
    if (in[k] != (b->si[k] == 1 ? 0 : out[k + off])) return 0;
  return 1;
}

Test(index_layer, broadcast_reads_zero_on_size_one_axes) {
  int x = input(2, (td_dim[]){3, 1});
  int y = input(3, (td_dim[]){2, 3, 4});
  int n = node(TD_IR_ADD, 3, (td_dim[]){2, 3, 4}, (int[]){x, y}, 2, NULL);
  bc b = {3, 2, {3, 1}};
  check_all(n, x, broadcast, &b);
  /* an operand of the node's own shape reads the very same index */
  td_ixgen g = gen();
  const td_ix *ix = at_coords(n, (int64_t[]){1, 2, 3});
  cr_expect_eq(td_ix_child(&g, n, 1, ix), ix);
}

Test(index_layer, flat_offset_is_row_major_and_skips_zero_axes) {
  int x = input(3, (td_dim[]){2, 3, 4});
  td_ixgen g = gen();
  int64_t s[3] = {2, 3, 4}, c[3];
  for (int64_t f = 0; f < 24; f++) {
    unflat(f, 3, s, c);
    const td_ix *ix = at_coords(x, c);
    void *off = td_ix_lin(&g, &G->nodes[x], ix, 0, 3);
    cr_assert_eq(off ? val(off) : 0, f);
  }
  td_ix *z = at_coords(x, (int64_t[]){1, 2, 3});
  z->zero[0] = z->zero[1] = z->zero[2] = 1; /* known 0: values are not read */
  cr_expect_null(td_ix_lin(&g, &G->nodes[x], z, 0, 3));
}

Test(index_layer, row_index_of_a_reduction_kernel) {
  td_dim space[3] = {2, 3, 4};
  uint32_t red = 1u << 2; /* rows over the last axis */
  td_ixgen g = gen();
  int b = input(3, (td_dim[]){2, 1, 1}); /* broadcasts: (i, 0, 0) */
  int q = input(2, (td_dim[]){2, 3});    /* squeeze-equal to a row: (i, j) */

  int64_t si[3] = {2, 3, 4}, c[3], v[3];
  for (int64_t f = 0; f < 24; f++) {
    unflat(f, 3, si, c);
    td_ix *row = b_new(NULL, 3);
    for (int k = 0; k < 3; k++) { row->v[k] = box(c[k]); row->zero[k] = 0; }
    values(td_ix_row(&g, &G->nodes[b], space, 3, red, row), v);
    cr_assert(v[0] == c[0] && v[1] == 0 && v[2] == 0);
    values(td_ix_row(&g, &G->nodes[q], space, 3, red, row), v);
    cr_assert(v[0] == c[0] && v[1] == c[1]);
  }
  /* of the rank of a square space, with a size on the reduced axis, so
   * not one value per row: the row squeezed and reshaped, (0, i, j) (it
   * was read right-aligned, at (0, j, 0): found by tests/difftest) */
  td_dim sq[3] = {2, 2, 2};
  int64_t s2[3] = {2, 2, 2};
  int r = input(3, (td_dim[]){1, 2, 2});
  for (int64_t f = 0; f < 8; f++) {
    unflat(f, 3, s2, c);
    td_ix *row = b_new(NULL, 3);
    for (int k = 0; k < 3; k++) { row->v[k] = box(c[k]); row->zero[k] = 0; }
    values(td_ix_row(&g, &G->nodes[r], sq, 3, red, row), v);
    cr_assert(v[0] == 0 && v[1] == c[0] && v[2] == c[1], "(%lld, %lld, %lld)", (long long)v[0], (long long)v[1],
              (long long)v[2]);
  }
}

/* fuse.c - grouping the nodes of a graph into kernels.
 *
 * The walk goes over the nodes from the last to the first, so every node is
 * decided after all of its users.  For a node n, S is the set of kernels
 * that evaluate one of n's users.  Then:
 *
 *   - INPUT and PARAM are leaves (buffers handed in).
 *   - A node that must exist in memory (a graph output, a printed value, a
 *     matmul operand that is not a strided view of something else) is the
 *     root of a new kernel.
 *   - Creation ops (const, dim, arange, rand, randn) are duplicated into
 *     every kernel of S: they are functions of the index.  The seed input
 *     of a random op is materialised, so that each of those kernels reads
 *     one scalar from a buffer once rather than recomputing it.
 *   - Movement ops on a matmul operand's path compose into a strided view
 *     (td_view) and are not evaluated at all.
 *   - An elementwise, movement or gather op joins the one kernel of S; with
 *     several kernels in S it is duplicated when cheap (a few ops, no
 *     reduction or matmul below it) and materialised otherwise.  An
 *     elementwise op of more than a few ops joining a pointwise kernel of
 *     8 or more times its elements (an im2col kernel reads each element
 *     once per kernel offset) is materialised too (`amplified`).
 *   - A reduction joins the kernel of S when every path from that kernel's
 *     root down to it is elementwise (so it is read as one value per row);
 *     the kernel becomes a row kernel over the reduction's input.
 *   - A matmul joins the kernel of S as its epilogue when every path from
 *     the root down to it is elementwise at the matmul's own shape (the
 *     epilogue sees each accumulated element exactly once).
 *
 * Kernels are then ordered by their roots' ids, which is a valid execution
 * order (a kernel only reads roots of kernels with smaller roots), and the
 * reductions of each row kernel are assigned to passes (stages).
 */
#include <string.h>

#include "compiler/plan_impl.h"

enum { HOME_NONE = -1, HOME_LEAF = -2, HOME_INLINE = -3 };
#define COST_INF 1000000
#define CHEAP_MAX 4
/* How deep an expression a kernel evaluates at most: the code generators
 * evaluate a node by evaluating its inputs first (recursively), so a chain
 * of 100 000 unrolled sin() calls fused into one kernel overflowed their
 * stack.  A node deeper than this below its kernel's root is materialised
 * (the root of a kernel of its own) instead. */
#define FUSE_DEPTH_MAX 200

typedef struct kb {            /* a kernel under construction */
  td_kkind kind;
  int root, matmul;
  int rank;
  td_dim space[TD_MAX_RANK];
  uint32_t red_axes;
  int row_root;
  td_view a, b;
} kb;

typedef struct fuser {
  td_plan *p;
  td_graph *g;
  td_err *err;
  int *ustart, *users;         /* users of node i: users[ustart[i] .. ustart[i+1]) */
  char *must_mat, *need_buf, *view;
  char *ok_bcast, *ok_ident;   /* see bcast_ok / ident_ok */
  int *home;
  int **kset, *kset_n;         /* HOME_INLINE nodes: kernels evaluating them */
  int *cost;
  int *depth;                  /* decided nodes: levels below the root of their kernel */
  char *full;                  /* decided nodes: every element is evaluated (see reads_all) */
  int *scratch;                /* set S under construction */
  kb *kbs;
  int n_kbs, cap_kbs;
} fuser;

int tdc_is_elementwise(td_op op) {
  td_opkind k = td_ops[op].kind;
  return k == TD_K_UNARY || k == TD_K_BINARY || k == TD_K_COMPARE || k == TD_K_TERNARY;
}

/* The cost (ops, build_costs) from which a rank-0 value used by a larger
 * loop is materialised rather than recomputed per element. */
#define SCALAR_MAT_COST 2

static int is_generator(td_op op) {
  return op == TD_IR_CONST || op == TD_IR_DIM || op == TD_IR_ARANGE || op == TD_IR_RAND ||
         op == TD_IR_RANDN;
}

static int is_inlinable(td_op op) {
  td_opkind k = td_ops[op].kind;
  return tdc_is_elementwise(op) || k == TD_K_MOVE || k == TD_K_GATHER;
}

static int same_shape(const td_dim *a, int ra, const td_dim *b, int rb) {
  if (ra != rb) return 0;
  for (int i = 0; i < ra; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

int tdc_squeeze_eq(const td_dim *a, int ra, const td_dim *b, int rb) {
  int i = 0, j = 0;
  for (;;) {
    while (i < ra && a[i] == 1) i++;
    while (j < rb && b[j] == 1) j++;
    if (i == ra || j == rb) return i == ra && j == rb;
    if (a[i++] != b[j++]) return 0;
  }
}

static const td_node *N(const fuser *f, int id) { return &f->g->nodes[id]; }

/* ---- setup -------------------------------------------------------------- */

static void *zalloc(fuser *f, size_t n) {
  void *q = td_arena_alloc(f->g->arena, n ? n : 1);
  if (!q) td_err_set(f->err, "out of memory");
  return q;
}

static int build_users(fuser *f) {
  int n = f->g->n_nodes, total = 0;
  f->ustart = zalloc(f, (size_t)(n + 1) * sizeof(int));
  if (!f->ustart) return -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < N(f, i)->n_in; k++) f->ustart[N(f, i)->in[k] + 1]++;
  for (int i = 0; i < n; i++) f->ustart[i + 1] += f->ustart[i];
  total = f->ustart[n];
  int *fill = zalloc(f, (size_t)(n + 1) * sizeof(int));
  f->users = zalloc(f, (size_t)(total + 1) * sizeof(int));
  if (!fill || !f->users) return -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < N(f, i)->n_in; k++) {
      int src = N(f, i)->in[k];
      f->users[f->ustart[src] + fill[src]++] = i;
    }
  return 0;
}

/* Forward estimate of the ops needed to evaluate a node inline. */
static void build_costs(fuser *f) {
  for (int i = 0; i < f->g->n_nodes; i++) {
    const td_node *n = N(f, i);
    td_opkind k = td_ops[n->op].kind;
    long c = 0;
    if (k == TD_K_REDUCE || k == TD_K_MATMUL) c = COST_INF;
    else if (k == TD_K_RANDOM) c = 8;
    else if (k != TD_K_LEAF) {
      c = k == TD_K_MOVE ? 0 : 1;
      for (int j = 0; j < n->n_in; j++) c += f->cost[n->in[j]];
    }
    f->cost[i] = c > COST_INF ? COST_INF : (int)c;
  }
}

static int fuser_init(fuser *f, td_plan *p, td_err *err) {
  memset(f, 0, sizeof *f);
  f->p = p;
  f->g = p->g;
  f->err = err;
  size_t n = (size_t)f->g->n_nodes + 1;
  f->must_mat = zalloc(f, n);
  f->need_buf = zalloc(f, n);
  f->view = zalloc(f, n);
  f->ok_bcast = zalloc(f, n);
  f->ok_ident = zalloc(f, n);
  f->home = zalloc(f, n * sizeof(int));
  f->kset = zalloc(f, n * sizeof(int *));
  f->kset_n = zalloc(f, n * sizeof(int));
  f->cost = zalloc(f, n * sizeof(int));
  f->depth = zalloc(f, n * sizeof(int));
  f->full = zalloc(f, n);
  f->scratch = zalloc(f, n * sizeof(int));
  if (!f->must_mat || !f->need_buf || !f->view || !f->ok_bcast || !f->ok_ident || !f->home ||
      !f->kset || !f->kset_n || !f->cost || !f->depth || !f->full || !f->scratch || build_users(f))
    return -1;
  for (int i = 0; i < f->g->n_nodes; i++) f->home[i] = HOME_NONE;
  for (int i = 0; i < f->g->n_outputs; i++) f->must_mat[f->g->outputs[i]] = 1;
  for (int i = 0; i < f->g->n_nodes; i++)
    if (N(f, i)->op == TD_IR_PRINT || N(f, i)->op == TD_IR_SCAN || td_ops[N(f, i)->op].kind == TD_K_RANDOM)
      for (int k = 0; k < N(f, i)->n_in; k++) f->must_mat[N(f, i)->in[k]] = 1;
  build_costs(f);
  /* A scalar that takes several ops to compute (an optimizer's bias
   * corrections, pow(beta, t)) is computed once, in a kernel of its own,
   * instead of once per element of every big loop that uses it: the loop
   * reads it through a pointer the compiler cannot prove unaliased, so it
   * would not be hoisted. */
  for (int i = 0; i < f->g->n_nodes; i++) {
    const td_node *nd = N(f, i);
    if (nd->rank != 0 || f->cost[i] < SCALAR_MAT_COST || !is_inlinable(nd->op)) continue;
    for (int u = f->ustart[i]; u < f->ustart[i + 1]; u++)
      if (N(f, f->users[u])->rank > 0) { f->must_mat[i] = 1; break; }
  }
  return 0;
}

/* ---- kernels under construction ------------------------------------------ */

static int new_kernel(fuser *f, td_kkind kind, int root) {
  if (f->n_kbs == f->cap_kbs) {
    int cap = f->cap_kbs ? 2 * f->cap_kbs : 16;
    kb *nk = zalloc(f, (size_t)cap * sizeof *nk);
    if (!nk) return -1;
    if (f->n_kbs) memcpy(nk, f->kbs, (size_t)f->n_kbs * sizeof *nk);
    f->kbs = nk;
    f->cap_kbs = cap;
  }
  kb *k = &f->kbs[f->n_kbs];
  memset(k, 0, sizeof *k);
  const td_node *n = N(f, root);
  k->kind = kind;
  k->root = root;
  k->matmul = -1;
  k->rank = n->rank;
  memcpy(k->space, n->shape, sizeof k->space);
  if (kind == TD_KERN_REDUCE) {
    const td_node *x = N(f, n->in[0]);
    k->rank = x->rank;
    memcpy(k->space, x->shape, sizeof k->space);
    k->red_axes = n->attr.axes;
    k->row_root = 1;
  }
  f->home[root] = f->n_kbs;
  f->ok_bcast[root] = 1;
  f->ok_ident[root] = 1;
  return f->n_kbs++;
}

static int kset_has(const fuser *f, int node, int k) {
  for (int i = 0; i < f->kset_n[node]; i++)
    if (f->kset[node][i] == k) return 1;
  return 0;
}

/* S: the kernels evaluating a user of n, into f->scratch; returns |S|.
 * A matmul reads its operands through views or buffers, not by evaluating
 * them, so it does not count. */
static int user_kernels(fuser *f, int n) {
  int ns = 0;
  for (int u = f->ustart[n]; u < f->ustart[n + 1]; u++) {
    int user = f->users[u];
    const int *ks = NULL;
    int nk = 0;
    if (f->home[user] >= 0 && N(f, user)->op != TD_IR_MATMUL) {
      ks = &f->home[user];
      nk = 1;
    } else if (f->home[user] == HOME_INLINE) {
      ks = f->kset[user];
      nk = f->kset_n[user];
    }
    for (int i = 0; i < nk; i++) {
      int dup = 0;
      for (int j = 0; j < ns && !dup; j++) dup = f->scratch[j] == ks[i];
      if (!dup) f->scratch[ns++] = ks[i];
    }
  }
  return ns;
}

static int make_inline(fuser *f, int n, int ns) {
  f->home[n] = HOME_INLINE;
  f->kset_n[n] = ns;
  if (!ns) return 0;
  f->kset[n] = zalloc(f, (size_t)ns * sizeof(int));
  if (!f->kset[n]) return -1;
  memcpy(f->kset[n], f->scratch, (size_t)ns * sizeof(int));
  return 0;
}

/* 1: every path from kernel k's root to n is elementwise or ends in a
 * reduction of k, so n is read at the broadcast of the row index; 2: the
 * same through a squeezing reshape that is the root (valid only when the
 * root is stored once per row); 0: otherwise. */
static int bcast_ok(const fuser *f, int n, int k) {
  int res = 1;
  for (int u = f->ustart[n]; u < f->ustart[n + 1]; u++) {
    int user = f->users[u];
    const td_node *un = N(f, user);
    if (f->home[user] == HOME_INLINE && kset_has(f, user, k)) return 0;
    if (f->home[user] != k) continue;
    if (td_ops[un->op].kind == TD_K_REDUCE) continue;
    if (tdc_is_elementwise(un->op)) {
      if (!f->ok_bcast[user]) return 0;
      if (f->ok_bcast[user] == 2) res = 2;
    } else if (un->op == TD_IR_RESHAPE && user == f->kbs[k].root &&
               tdc_squeeze_eq(un->shape, un->rank, N(f, n)->shape, N(f, n)->rank)) {
      res = 2;
    } else {
      return 0;
    }
  }
  return res;
}

/* 1 when every path from kernel k's root to n is elementwise at the
 * kernel's own shape (n is read at exactly the root's index). */
static int ident_ok(const fuser *f, int n, int k) {
  const kb *K = &f->kbs[k];
  if (!same_shape(N(f, n)->shape, N(f, n)->rank, K->space, K->rank)) return 0;
  for (int u = f->ustart[n]; u < f->ustart[n + 1]; u++) {
    int user = f->users[u];
    if (f->home[user] == HOME_INLINE && kset_has(f, user, k)) return 0;
    if (f->home[user] != k) continue;
    if (!tdc_is_elementwise(N(f, user)->op) || !f->ok_ident[user]) return 0;
  }
  return 1;
}

static void join(fuser *f, int n, int k) {
  f->home[n] = k;
  f->ok_bcast[n] = (char)bcast_ok(f, n, k);
  f->ok_ident[n] = (char)ident_ok(f, n, k);
}

/* ---- matmul operands as strided views ------------------------------------------- */

static void view_contig(fuser *f, int base, td_view *v) {
  const td_node *n = N(f, base);
  memset(v, 0, sizeof *v);
  v->base = base;
  v->rank = n->rank;
  td_dim s = 1;
  for (int k = n->rank - 1; k >= 0; k--) {
    v->shape[k] = n->shape[k];
    v->stride[k] = s;
    s = td_dim_mul(f->g, s, n->shape[k]);
  }
}

static int view_is_contig(fuser *f, const td_view *v) {
  td_dim s = 1;
  for (int k = v->rank - 1; k >= 0; k--) {
    if (v->shape[k] != 1 && v->stride[k] != s) return 0;
    s = td_dim_mul(f->g, s, v->shape[k]);
  }
  return 1;
}

/* Reshape of a strided view: contiguous views reshape freely; otherwise the
 * axes are matched in groups of equal size, and each group of the input
 * must itself be contiguous.  Returns 0, or -1 when it is not a view. */
static int view_reshape(fuser *f, const td_node *n, td_view *v) {
  td_view r = *v;
  r.rank = n->rank;
  memcpy(r.shape, n->shape, sizeof r.shape);
  if (view_is_contig(f, v)) {
    td_dim s = 1;
    for (int k = n->rank - 1; k >= 0; k--) {
      r.stride[k] = s;
      s = td_dim_mul(f->g, s, n->shape[k]);
    }
    *v = r;
    return 0;
  }
  int i = 0, o = 0;
  while (o < n->rank || i < v->rank) {
    if (o < n->rank && n->shape[o] == 1) { r.stride[o++] = 0; continue; }
    if (i < v->rank && v->shape[i] == 1) { i++; continue; }
    if (o == n->rank || i == v->rank) return -1;
    /* one group: input axes i..i2, output axes o..o2 of equal product */
    int i2 = i + 1, o2 = o + 1;
    td_dim pin = v->shape[i], pout = n->shape[o], q;
    while (pin != pout) {
      if (td_dim_div(f->g, pout, pin, &q) == 0 && i2 < v->rank) pin = td_dim_mul(f->g, pin, v->shape[i2++]);
      else if (td_dim_div(f->g, pin, pout, &q) == 0 && o2 < n->rank) pout = td_dim_mul(f->g, pout, n->shape[o2++]);
      else return -1;
    }
    for (int k = i; k + 1 < i2; k++)
      if (v->shape[k + 1] != 1 && v->stride[k] != td_dim_mul(f->g, v->stride[k + 1], v->shape[k + 1]))
        return -1;
    td_dim s = v->stride[i2 - 1];
    for (int k = o2 - 1; k >= o; k--) {
      r.stride[k] = s;
      s = td_dim_mul(f->g, s, n->shape[k]);
    }
    i = i2;
    o = o2;
  }
  *v = r;
  return 0;
}

/* Applies movement node n (whose input is the view v) to v. */
static int view_apply(fuser *f, const td_node *n, td_view *v) {
  td_view r = *v;
  r.rank = n->rank;
  memcpy(r.shape, n->shape, sizeof r.shape);
  switch (n->op) {
  case TD_IR_PERMUTE:
    for (int i = 0; i < n->rank; i++) r.stride[i] = v->stride[n->attr.perm[i]];
    break;
  case TD_IR_BROADCAST:
    for (int i = 0; i < n->rank; i++) {
      int j = i - (n->rank - v->rank);
      r.stride[i] = (j < 0 || (v->shape[j] == 1 && n->shape[i] != 1)) ? 0 : v->stride[j];
    }
    break;
  case TD_IR_SLICE:
    for (int i = 0; i < n->rank; i++) {
      r.offset = td_dim_add(f->g, r.offset, td_dim_mul(f->g, n->attr.start[i], v->stride[i]));
      r.stride[i] = td_dim_mul(f->g, td_dim_const(f->g, n->attr.step[i]), v->stride[i]);
    }
    break;
  case TD_IR_RESHAPE: return view_reshape(f, n, v);
  default: return -1;
  }
  *v = r;
  return 0;
}

/* Sets up the view of matmul operand `op`: the movement chain above the
 * first node that must be in memory composes into strides; nodes on the
 * chain are marked as views and the base as needing a buffer. */
static void setup_operand(fuser *f, int op, td_view *v) {
  int chain[64], nc = 0, c = op;
  while (nc < 64 && td_ops[N(f, c)->op].kind == TD_K_MOVE && N(f, c)->op != TD_IR_CONCAT &&
         !f->must_mat[c] && !f->need_buf[c]) {
    chain[nc++] = c;
    c = N(f, c)->in[0];
  }
  view_contig(f, c, v);
  int top = nc;            /* chain[0 .. top) compose onto v */
  for (int j = nc - 1; j >= 0; j--)
    if (view_apply(f, N(f, chain[j]), v)) {
      if (N(f, chain[j])->op == TD_IR_RESHAPE && j + 1 < nc) {
        /* a reshape that merges non-adjacent axes: materialise its input
         * (as many elements) and reshape that contiguous copy for free;
         * the copy then runs over the unmerged axes, with a contiguous
         * inner loop, instead of dividing the merged index per element
         * (W6's merge of the heads) */
        view_contig(f, chain[j + 1], v);
        view_apply(f, N(f, chain[j]), v);
        top = j + 1;
      } else {
        view_contig(f, chain[j], v);  /* chain[j] itself becomes the base */
        top = j;
      }
    }
  for (int j = 0; j < top; j++) f->view[chain[j]] = 1;
  f->need_buf[v->base] = 1;
}

static void setup_matmul(fuser *f, int m, kb *k) {
  k->kind = TD_KERN_MATMUL;
  k->matmul = m;
  setup_operand(f, N(f, m)->in[0], &k->a);
  setup_operand(f, N(f, m)->in[1], &k->b);
}

/* ---- the decisions ----------------------------------------------------------- */

static int try_join_reduce(fuser *f, int r, int k) {
  kb *K = &f->kbs[k];
  const td_node *rn = N(f, r), *x = N(f, rn->in[0]);
  int ok = bcast_ok(f, r, k);
  if (!ok) return 0;
  if (K->kind == TD_KERN_REDUCE) {
    if (!same_shape(x->shape, x->rank, K->space, K->rank) || rn->attr.axes != K->red_axes) return 0;
    if (ok == 2 && !K->row_root) return 0;
  } else if (K->kind == TD_KERN_POINTWISE) {
    int full = same_shape(x->shape, x->rank, K->space, K->rank);
    int row = tdc_squeeze_eq(rn->shape, rn->rank, K->space, K->rank);
    if (!(full && ok == 1) && !row) return 0;
    K->kind = TD_KERN_REDUCE;
    K->row_root = !(full && ok == 1);
    K->rank = x->rank;
    memcpy(K->space, x->shape, sizeof K->space);
    K->red_axes = rn->attr.axes;
  } else {
    return 0;
  }
  join(f, r, k);
  return 1;
}

static int try_join_matmul(fuser *f, int m, int k) {
  kb *K = &f->kbs[k];
  if (K->kind != TD_KERN_POINTWISE || !ident_ok(f, m, k)) return 0;
  join(f, m, k);
  setup_matmul(f, m, K);
  return 1;
}

static int new_root(fuser *f, int n) {
  td_opkind kind = td_ops[N(f, n)->op].kind;
  int k = new_kernel(f, kind == TD_K_REDUCE ? TD_KERN_REDUCE : TD_KERN_POINTWISE, n);
  if (k >= 0 && kind == TD_K_MATMUL) setup_matmul(f, n, &f->kbs[k]);
  return k < 0 ? -1 : 0;
}

/* Levels below its kernel's root at which n would be evaluated: one more
 * than its deepest user (a root is at level 0). */
static int depth_below(const fuser *f, int n) {
  int d = 0;
  for (int u = f->ustart[n]; u < f->ustart[n + 1]; u++) {
    int user = f->users[u];
    if (N(f, user)->op != TD_IR_PRINT && f->depth[user] + 1 > d) d = f->depth[user] + 1;
  }
  return d;
}

/* Does user u, when every element of u is evaluated, evaluate every
 * element of its input n?  Conservative: slices, the data of a gather and
 * a broadcast that may add an axis of size 0 read only part of their input
 * (or none of it); a matmul reads its operands from buffers. */
static int reads_all(const fuser *f, int u, int n) {
  const td_node *un = N(f, u), *x = N(f, n);
  td_opkind k = td_ops[un->op].kind;
  if (tdc_is_elementwise(un->op)) return same_shape(un->shape, un->rank, x->shape, x->rank);
  if (k == TD_K_REDUCE) return 1;
  switch (un->op) {
  case TD_IR_RESHAPE: case TD_IR_PERMUTE: case TD_IR_CONCAT: return 1;
  case TD_IR_GATHER: return un->in[1] == n && un->in[0] != n;
  case TD_IR_BROADCAST:
    for (int i = 0; i < un->rank; i++) {
      int j = i - (un->rank - x->rank);
      if ((j < 0 || x->shape[j] != un->shape[i]) && !(TD_DIM_IS_CONST(un->shape[i]) && un->shape[i] > 0))
        return 0;
    }
    return 1;
  default: return 0;
  }
}

/* A node is evaluated whole when a user that is evaluated whole reads all
 * of it.  Only gathers care: eager checks every index of a take, so the
 * compiled code must read every index too (not only those behind the
 * elements a later slice keeps). */
static int decide_home(fuser *f, int n);

static int whole(const fuser *f, int n) {
  for (int u = f->ustart[n]; u < f->ustart[n + 1]; u++) {
    int user = f->users[u];
    if ((f->home[user] >= 0 || f->home[user] == HOME_INLINE) && N(f, user)->op != TD_IR_MATMUL &&
        f->full[user] && reads_all(f, user, n))
      return 1;
  }
  return 0;
}

/* The ops evaluating n inline costs above the matmuls it reads (their
 * products are materialised anyway), capped at `cap`; COST_INF when it
 * reads a reduction (row kernels own those). */
static int local_cost(fuser *f, int n, int cap, int depth) {
  td_opkind k = td_ops[N(f, n)->op].kind;
  if (k == TD_K_REDUCE) return COST_INF;
  if (k == TD_K_LEAF || k == TD_K_MATMUL || k == TD_K_RANDOM || depth > 32) return 0;
  int c = k == TD_K_MOVE ? 0 : 1;
  for (int j = 0; j < N(f, n)->n_in && c <= cap; j++) {
    int ci = local_cost(f, N(f, n)->in[j], cap - c, depth + 1);
    if (ci >= COST_INF) return COST_INF;
    c += ci;
  }
  return c;
}

/* Would joining elementwise node n to pointwise kernel k evaluate it many
 * times per element?  When k's space has at least AMPLIFY_MIN times n's
 * elements (an im2col kernel reads each input element once per kernel
 * offset) and n is costlier than CHEAP_MAX (the bias, relu and max pool
 * before a convolution), n is worth a kernel of its own. */
#define AMPLIFY_MIN 8
static int amplified(fuser *f, int n, int k) {
  const kb *K = &f->kbs[k];
  const td_node *nd = N(f, n);
  if (K->kind != TD_KERN_POINTWISE || !tdc_is_elementwise(nd->op)) return 0;
  int c = local_cost(f, n, CHEAP_MAX + 1, 0);
  if (c <= CHEAP_MAX || c >= COST_INF) return 0;
  td_dim mine = AMPLIFY_MIN, space = 1;
  for (int i = 0; i < nd->rank; i++) mine = td_dim_mul(f->g, mine, nd->shape[i]);
  for (int i = 0; i < K->rank; i++) space = td_dim_mul(f->g, space, K->space[i]);
  return !TD_DIM_IS_BAD(mine) && !TD_DIM_IS_BAD(space) && td_dim_le(f->g, mine, space);
}

static int decide(fuser *f, int n) {
  int rc = decide_home(f, n);
  f->full[n] = f->home[n] >= 0 && f->kbs[f->home[n]].root == n ? 1
             : f->home[n] >= 0 || f->home[n] == HOME_INLINE ? (char)whole(f, n) : 0;
  return rc;
}

static int decide_home(fuser *f, int n) {
  const td_node *nd = N(f, n);
  if (nd->op == TD_IR_PRINT) return 0;
  if (nd->op == TD_IR_INPUT || nd->op == TD_IR_PARAM) { f->home[n] = HOME_LEAF; return 0; }
  /* a scan is a kernel of its own (its body runs per step), and its
   * outputs are buffers it writes, read as leaves are */
  if (nd->op == TD_IR_SCAN_OUT) { f->home[n] = HOME_LEAF; return 0; }
  if (nd->op == TD_IR_SCAN) return new_kernel(f, TD_KERN_SCAN, n) < 0 ? -1 : 0;
  int ns = user_kernels(f, n);
  f->depth[n] = depth_below(f, n);
  int forced = f->must_mat[n] || f->need_buf[n] ||
               (f->depth[n] > FUSE_DEPTH_MAX && !is_generator(nd->op) && !f->view[n]);
  if (forced) f->depth[n] = 0;
  if (!forced && (f->view[n] || is_generator(nd->op))) return make_inline(f, n, ns);
  if (forced) return new_root(f, n);
  if (nd->op == TD_IR_GATHER && !whole(f, n)) return new_root(f, n);  /* every index is checked */
  if (ns == 0) return 0;  /* read by nobody that evaluates it */
  td_opkind kind = td_ops[nd->op].kind;
  if (is_inlinable(nd->op)) {
    if (ns == 1 && amplified(f, n, f->scratch[0])) return new_root(f, n);
    if (ns == 1) { join(f, n, f->scratch[0]); return 0; }
    if (f->cost[n] <= CHEAP_MAX) return make_inline(f, n, ns);
    return new_root(f, n);
  }
  if (ns == 1 && kind == TD_K_REDUCE && try_join_reduce(f, n, f->scratch[0])) return 0;
  if (ns == 1 && kind == TD_K_MATMUL && try_join_matmul(f, n, f->scratch[0])) return 0;
  if (kind == TD_K_REDUCE || kind == TD_K_MATMUL) return new_root(f, n);
  return td_err_set(f->err, "the compiler does not handle op '%s' (node %%%d)",
                    td_ops[nd->op].name, n);
}

/* ---- final kernels ------------------------------------------------------------ */

int tdc_is_materialised(const td_plan *p, int node) {
  td_op op = p->g->nodes[node].op;
  if (op == TD_IR_INPUT || op == TD_IR_PARAM || op == TD_IR_SCAN_OUT) return 1;
  if (op == TD_IR_SCAN) return 0;   /* no value of its own: its outputs are */
  int k = p->kernel_of[node];
  return k >= 0 && p->kernels[k].root == node;
}

/* Kernel index order: by root id. */
static int *kernel_order(fuser *f) {
  int *ord = zalloc(f, (size_t)(f->n_kbs + 1) * sizeof(int));
  if (!ord) return NULL;
  int j = 0;
  for (int n = 0; n < f->g->n_nodes; n++)
    if (f->home[n] >= 0 && f->kbs[f->home[n]].root == n) ord[f->home[n]] = j++;
  return ord;
}

/* Does kernel kernel (final index) evaluate node n? */
static int evaluated_in(const fuser *f, const int *ord, int n, int kernel) {
  if (f->home[n] >= 0) return ord[f->home[n]] == kernel;
  if (f->home[n] != HOME_INLINE) return 0;
  for (int i = 0; i < f->kset_n[n]; i++)
    if (ord[f->kset[n][i]] == kernel) return 1;
  return 0;
}

/* Is n a view node on a path into kernel k's matmul? */
static int view_of(const fuser *f, const td_kernel *k, int n) {
  if (!f->view[n] || k->kind != TD_KERN_MATMUL) return 0;
  const td_node *m = N(f, k->matmul);
  for (int s = 0; s < 2; s++)
    for (int c = m->in[s]; f->view[c]; c = N(f, c)->in[0])
      if (c == n) return 1;
  return 0;
}

static int collect_nodes(fuser *f, const int *ord, int ki) {
  td_kernel *k = &f->p->kernels[ki];
  int cnt = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int n = 0; n <= k->root; n++) {
      if (!evaluated_in(f, ord, n, ki) && !view_of(f, k, n)) continue;
      if (pass) k->nodes[k->n_nodes++] = n;
      else cnt++;
    }
    if (!pass && !(k->nodes = zalloc(f, (size_t)cnt * sizeof(int)))) return -1;
  }
  return 0;
}

static int collect_reads(fuser *f, int ki) {
  td_kernel *k = &f->p->kernels[ki];
  char *seen = f->ok_ident;  /* reused as scratch: cleared below */
  int *tmp = f->scratch, nr = 0;
  for (int i = 0; i < k->n_nodes; i++) {
    const td_node *n = N(f, k->nodes[i]);
    for (int j = 0; j < n->n_in; j++) {
      int src = n->in[j];
      if (seen[src] == 2 || !tdc_is_materialised(f->p, src) || src == k->root) continue;
      if (f->p->kernel_of[src] == ki && src != k->root) continue;
      seen[src] = 2;
      tmp[nr++] = src;
    }
  }
  for (int i = 0; i < nr; i++) seen[tmp[i]] = 0;
  /* ascending ids */
  for (int i = 1; i < nr; i++)
    for (int j = i; j > 0 && tmp[j - 1] > tmp[j]; j--) { int t = tmp[j]; tmp[j] = tmp[j - 1]; tmp[j - 1] = t; }
  k->reads = zalloc(f, (size_t)nr * sizeof(int));
  if (!k->reads) return -1;
  memcpy(k->reads, tmp, (size_t)nr * sizeof(int));
  k->n_reads = nr;
  return 0;
}

static int finish_kernels(fuser *f) {
  td_plan *p = f->p;
  int *ord = kernel_order(f);
  p->kernels = zalloc(f, (size_t)(f->n_kbs + 1) * sizeof *p->kernels);
  if (!ord || !p->kernels) return -1;
  p->n_kernels = f->n_kbs;
  for (int n = 0; n < f->g->n_nodes; n++) p->kernel_of[n] = f->home[n] >= 0 ? ord[f->home[n]] : -1;
  for (int n = 0; n < f->g->n_nodes; n++)   /* a scan's outputs: written by its kernel */
    if (f->g->nodes[n].op == TD_IR_SCAN_OUT) p->kernel_of[n] = p->kernel_of[f->g->nodes[n].in[0]];
  for (int b = 0; b < f->n_kbs; b++) {
    const kb *K = &f->kbs[b];
    td_kernel *k = &p->kernels[ord[b]];
    k->kind = K->kind;
    k->root = K->root;
    k->matmul = K->matmul;
    k->rank = K->rank;
    memcpy(k->space, K->space, sizeof k->space);
    k->red_axes = K->red_axes;
    k->row_root = K->row_root;
    k->a = K->a;
    k->b = K->b;
  }
  memset(f->ok_ident, 0, (size_t)f->g->n_nodes);
  for (int i = 0; i < p->n_kernels; i++)
    if (collect_nodes(f, ord, i) || collect_reads(f, i)) return -1;
  return 0;
}

/* ---- passes of row kernels -------------------------------------------------------- */

static int in_kernel(const td_plan *p, const td_kernel *k, int n) {
  for (int i = 0; i < k->n_nodes; i++)
    if (k->nodes[i] == n) return 1;
  (void)p;
  return 0;
}

/* Per node of kernel k: dep = the last stage it depends on; per reduction:
 * its stage, one after its inputs' (so each reduction reads finished
 * values only).  Then the stages' node lists. */
static int assign_stages(fuser *f, td_kernel *k) {
  td_plan *p = f->p;
  int *stage = f->scratch, *dep = f->home;  /* home is no longer needed */
  int ns = 0;
  for (int i = 0; i < k->n_nodes; i++) {
    int id = k->nodes[i], d = 0;
    const td_node *n = N(f, id);
    for (int j = 0; j < n->n_in; j++) {
      int src = n->in[j];
      if (!in_kernel(p, k, src)) continue;
      int v = td_ops[N(f, src)->op].kind == TD_K_REDUCE ? stage[src] : dep[src];
      if (v > d) d = v;
    }
    dep[id] = d;
    if (td_ops[n->op].kind != TD_K_REDUCE) continue;
    stage[id] = d + 1;
    if (stage[id] > ns) ns = stage[id];
  }
  k->stages = zalloc(f, (size_t)(ns + 1) * sizeof *k->stages);
  if (!k->stages) return -1;
  k->n_stages = ns;
  for (int s = 0; s < ns; s++) {
    td_kstage *S = &k->stages[s];
    for (int pass = 0; pass < 2; pass++) {
      S->n_reds = 0;
      for (int i = 0; i < k->n_nodes; i++) {
        int id = k->nodes[i];
        if (td_ops[N(f, id)->op].kind != TD_K_REDUCE || stage[id] != s + 1) continue;
        if (pass) S->reds[S->n_reds] = id;
        S->n_reds++;
      }
      if (!pass && !(S->reds = zalloc(f, (size_t)S->n_reds * sizeof(int)))) return -1;
    }
  }
  k->n_passes = ns + (k->row_root ? 0 : 1);
  return 0;
}

int tdc_fuse(td_plan *p, td_err *err) {
  fuser f;
  if (fuser_init(&f, p, err)) return -1;
  for (int n = p->g->n_nodes - 1; n >= 0; n--)
    if (decide(&f, n)) return -1;
  if (finish_kernels(&f)) return -1;
  for (int i = 0; i < p->n_kernels; i++)
    if (p->kernels[i].kind == TD_KERN_REDUCE && assign_stages(&f, &p->kernels[i])) return -1;
  return 0;
}

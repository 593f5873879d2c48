/* codegen_cpu.c - kernels as libgccjit functions (the CPU backend).
 *
 * One gccjit context per compilation; one exported function per kernel of
 * the plan, named after the kernel ("k3_matmul_add_relu").  Every function
 * has an entry block that stays open while the body is built: sizes read
 * from the runtime table dv and typed buffer pointers are hoisted there on
 * first use, so loops see loop-invariant locals.
 *
 * Loop nests (all counted loops over int64 indices, innermost over the
 * last axis, written so GCC's vectoriser sees plain strided loops):
 *
 *   POINTWISE  for every index of the output: out[ix] = value(root, ix).
 *   REDUCE     row kernels: codegen_reduce.c.
 *   MATMUL     codegen_gemm.c.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/philox.h"
#include "compiler/jit_impl.h"
#include "runtime/phase_time.h"

/* ---- building blocks ------------------------------------------------------------ */

gcc_jit_lvalue *cg_local(cg *c, gcc_jit_type *t, const char *hint) {
  char name[48];
  snprintf(name, sizeof name, "%s%d", hint, c->n_names++);
  return gcc_jit_function_new_local(c->fn, NULL, t, name);
}

gcc_jit_block *cg_block(cg *c, const char *hint) {
  char name[48];
  snprintf(name, sizeof name, "%s%d", hint, c->n_names++);
  return gcc_jit_function_new_block(c->fn, name);
}

void cg_assign(cg *c, gcc_jit_lvalue *l, gcc_jit_rvalue *r) {
  gcc_jit_block_add_assignment(c->blk, NULL, l, r);
}

gcc_jit_rvalue *cg_i64(cg *c, int64_t v) {
  return gcc_jit_context_new_rvalue_from_long(c->ctx, c->t_i64, (long)v);
}

/* Index of a dims-table entry, added when new; -1 when memory runs out
 * or d is TD_DIM_BAD (which the checker and the planner keep out, so a
 * kernel that needs one fails instead of reading a wrong size). */
static int dim_entry(cg *c, td_dim d, int rand_node) {
  if (rand_node < 0 && TD_DIM_IS_BAD(d)) {
    td_err_set(c->err, "size arithmetic overflows in kernel %s", c->k ? c->k->name : "?");
    return -1;
  }
  for (int i = 0; i < c->n_dims; i++)
    if (c->dims[i].rand_node == rand_node && (rand_node >= 0 || c->dims[i].dim == d)) return i;
  if (c->n_dims == c->cap_dims) {
    int cap = c->cap_dims ? 2 * c->cap_dims : 32;
    cg_dimref *nd = td_arena_alloc(c->arena, (size_t)cap * sizeof *nd);
    gcc_jit_lvalue **nl = td_arena_alloc(c->arena, (size_t)cap * sizeof *nl);
    if (!nd || !nl) return -1;
    if (c->n_dims) {
      memcpy(nd, c->dims, (size_t)c->n_dims * sizeof *nd);
      memcpy(nl, c->dimloc, (size_t)c->n_dims * sizeof *nl);
    }
    c->dims = nd;
    c->dimloc = nl;
    c->cap_dims = cap;
  }
  c->dims[c->n_dims] = (cg_dimref){d, rand_node};
  c->dimloc[c->n_dims] = NULL;
  return c->n_dims++;
}

/* The slot of (what, node) in a shared body's table, added when new; -1
 * when memory runs out. */
static int local_slot(cg *c, cg_lslot **t, int *n, int *cap, int what, int node) {
  for (int i = 0; i < *n; i++)
    if ((*t)[i].what == what && (what >= 0 || (*t)[i].node == node)) return i;
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    cg_lslot *nt = td_arena_alloc(c->arena, (size_t)nc * sizeof *nt);
    if (!nt) {
      td_err_set(c->err, "out of memory");
      return -1;
    }
    if (*n) memcpy(nt, *t, (size_t)*n * sizeof *nt);
    *t = nt;
    *cap = nc;
  }
  (*t)[*n] = (cg_lslot){what, node};
  return (*n)++;
}

int cg_buf_index(cg *c, int bi, int node) {
  return c->local ? local_slot(c, &c->lbufs, &c->n_lbufs, &c->cap_lbufs, bi, node) : bi;
}

gcc_jit_rvalue *cg_status_code(cg *c, int n, int neg) {
  if (!c->local) return gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, neg ? -(n + 1) : n + 1);
  int at = local_slot(c, &c->ldims, &c->n_ldims, &c->cap_ldims, -1, n);
  if (at < 0) return gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, 0);
  gcc_jit_rvalue *v = gcc_jit_context_new_cast(
      c->ctx, NULL, gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(c->ctx, NULL, c->p_dv, cg_i64(c, at))),
      c->t_i32);
  return neg ? gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, c->t_i32, v) : v;
}

static gcc_jit_rvalue *dim_local(cg *c, int j) {
  if (j < 0) {
    if (!c->err->msg[0]) td_err_set(c->err, "out of memory");
    return cg_i64(c, 0);
  }
  if (!c->dimloc[j]) {
    gcc_jit_lvalue *l = cg_local(c, c->t_i64, "d");
    int at = c->local ? local_slot(c, &c->ldims, &c->n_ldims, &c->cap_ldims, j, -1) : j;
    if (at < 0) return cg_i64(c, 0);
    gcc_jit_rvalue *e = gcc_jit_lvalue_as_rvalue(
        gcc_jit_context_new_array_access(c->ctx, NULL, c->p_dv, cg_i64(c, at)));
    gcc_jit_block_add_assignment(c->entry, NULL, l, e);
    c->dimloc[j] = l;
  }
  return gcc_jit_lvalue_as_rvalue(c->dimloc[j]);
}

gcc_jit_rvalue *cg_dim(cg *c, td_dim d) {
  if (TD_DIM_IS_CONST(d)) return cg_i64(c, d);
  return dim_local(c, dim_entry(c, d, -1));
}

gcc_jit_rvalue *cg_rand_stream(cg *c, int n) { return dim_local(c, dim_entry(c, 0, n)); }

gcc_jit_rvalue *cg_bufptr(cg *c, int node) {
  int bi = c->p->buf_of[node];
  if (!c->bufptr[bi]) {
    gcc_jit_type *pt = gcc_jit_type_get_pointer(c->st[c->g->nodes[node].dtype]);
    gcc_jit_lvalue *l = cg_local(c, pt, "buf");
    int at = cg_buf_index(c, bi, node);
    if (at < 0) return gcc_jit_context_null(c->ctx, gcc_jit_type_get_pointer(c->st[c->g->nodes[node].dtype]));
    gcc_jit_rvalue *raw = gcc_jit_lvalue_as_rvalue(
        gcc_jit_context_new_array_access(c->ctx, NULL, c->p_bufs, cg_i64(c, at)));
    gcc_jit_block_add_assignment(c->entry, NULL, l, gcc_jit_context_new_cast(c->ctx, NULL, raw, pt));
    c->bufptr[bi] = l;
  }
  return gcc_jit_lvalue_as_rvalue(c->bufptr[bi]);
}

cg_ix *cg_ix_new(cg *c, int rank) {
  cg_ix *ix = td_arena_alloc(c->arena, sizeof *ix);
  if (!ix) {   /* the code generator's own spare: never shared between compilations on other threads */
    td_err_set(c->err, "out of memory");
    ix = &c->spare_ix;
  }
  ix->rank = rank;
  return ix;
}

gcc_jit_rvalue *cg_select(cg *c, gcc_jit_rvalue *cond, gcc_jit_rvalue *a, gcc_jit_rvalue *b,
                          gcc_jit_type *t) {
  gcc_jit_lvalue *r = cg_local(c, t, "sel");
  cg_assign(c, r, b);
  gcc_jit_block *then = cg_block(c, "then"), *join = cg_block(c, "join");
  gcc_jit_block_end_with_conditional(c->blk, NULL, cond, then, join);
  gcc_jit_block_add_assignment(then, NULL, r, a);
  gcc_jit_block_end_with_jump(then, NULL, join);
  c->blk = join;
  return gcc_jit_lvalue_as_rvalue(r);
}

long cg_memo_mark(const cg *c) { return (long)c->n_memo << 32 | (long)c->n_ixmemo; }

void cg_memo_release(cg *c, long mark) {
  c->n_memo = (int)(mark >> 32);
  c->n_ixmemo = (int)(mark & 0xffffffffL);
}

/* ---- loops ---------------------------------------------------------------------- */

gcc_jit_rvalue *cg_loop_open(cg *c, cloop *L, gcc_jit_rvalue *n) {
  return cg_loop_range(c, L, cg_i64(c, 0), n, 1);
}

gcc_jit_rvalue *cg_loop_range(cg *c, cloop *L, gcc_jit_rvalue *lo, gcc_jit_rvalue *n, int64_t step) {
  L->i = cg_local(c, c->t_i64, "i");
  L->step = step;
  L->cond = cg_block(c, "loop");
  L->after = cg_block(c, "done");
  gcc_jit_block *body = cg_block(c, "body");
  cg_assign(c, L->i, lo);
  gcc_jit_block_end_with_jump(c->blk, NULL, L->cond);
  gcc_jit_block_end_with_conditional(
      L->cond, NULL,
      gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_LT, gcc_jit_lvalue_as_rvalue(L->i), n),
      body, L->after);
  c->blk = body;
  return gcc_jit_lvalue_as_rvalue(L->i);
}

void cg_loop_close(cg *c, cloop *L) {
  gcc_jit_block_add_assignment_op(c->blk, NULL, L->i, GCC_JIT_BINARY_OP_PLUS, cg_i64(c, L->step));
  gcc_jit_block_end_with_jump(c->blk, NULL, L->cond);
  c->blk = L->after;
}

/* Loops over the axes of `shape` selected by mask (bit k = axis k), in
 * order, writing the loop variables into ix; returns how many opened. */
int cg_nest_open(cg *c, cloop *L, const td_dim *shape, int rank, uint32_t mask, cg_ix *ix) {
  int n = 0;
  for (int k = 0; k < rank; k++) {
    if (!(mask >> k & 1)) continue;
    if (shape[k] == 1) {
      ix->v[k] = cg_i64(c, 0);
      ix->zero[k] = 1;
      continue;
    }
    if (k == c->par_axis) ix->v[k] = cg_loop_range(c, &L[n++], c->p_lo, c->p_hi, 1);
    else ix->v[k] = cg_loop_open(c, &L[n++], cg_dim(c, shape[k]));
    ix->zero[k] = 0;
  }
  return n;
}

void cg_nest_close(cg *c, cloop *L, int n) {
  while (n > 0) cg_loop_close(c, &L[--n]);
}

/* ---- kernels ---------------------------------------------------------------------------- */

int cg_failed(const cg *c) { return c->err->msg[0] ? -1 : 0; }

static int emit_pointwise(cg *c) {
  const td_kernel *k = c->k;
  cloop L[TD_MAX_RANK];
  cg_ix *ix = cg_ix_new(c, k->rank);
  int n = cg_nest_open(c, L, k->space, k->rank, ~0u, ix);
  gcc_jit_rvalue *v = cg_eval(c, k->root, ix);
  if (!v) return -1;
  cg_store(c, k->root, ix, v);
  cg_nest_close(c, L, n);
  return cg_failed(c);
}

/* ---- functions and the context ------------------------------------------------------------ */

static void init_types(cg *c) {
  gcc_jit_context *x = c->ctx;
  c->t_void = gcc_jit_context_get_type(x, GCC_JIT_TYPE_VOID);
  c->t_bool = gcc_jit_context_get_type(x, GCC_JIT_TYPE_BOOL);
  /* named C types rather than gcc_jit_context_get_int_type: that one may
   * answer `long` or `long long` depending on earlier compilations, which
   * would change the dump text the compile cache is keyed on */
  c->t_u8 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_UNSIGNED_CHAR);
  c->t_i32 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_INT);
  c->t_u32 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_UNSIGNED_INT);
  c->t_i64 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_LONG_LONG);
  c->t_u64 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_UNSIGNED_LONG_LONG);
  c->t_f32 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_FLOAT);
  c->t_f64 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_DOUBLE);
  c->t_vp = gcc_jit_context_get_type(x, GCC_JIT_TYPE_VOID_PTR);
  c->t_vpp = gcc_jit_type_get_pointer(c->t_vp);
  c->t_i64p = gcc_jit_type_get_pointer(gcc_jit_type_get_const(c->t_i64));
  c->t_i32p = gcc_jit_type_get_pointer(c->t_i32);
  /* f16 and bf16 are uint16_t bit patterns; only CASTs compute on them
   * (the legalize pass, compiler/legalize.c) */
  gcc_jit_type *u16 = gcc_jit_context_get_type(x, GCC_JIT_TYPE_UNSIGNED_SHORT);
  gcc_jit_type *vt[] = {c->t_bool, c->t_i32, c->t_i64, c->t_f32, c->t_f64, u16, u16};
  gcc_jit_type *st[] = {c->t_u8, c->t_i32, c->t_i64, c->t_f32, c->t_f64, u16, u16};
  memcpy(c->vt, vt, sizeof vt);
  memcpy(c->st, st, sizeof st);
}

/* Starts function `name` with the kernel signature. */
static void begin_function_kind(cg *c, const char *name, enum gcc_jit_function_kind kind) {
  gcc_jit_param *ps[7] = {
      gcc_jit_context_new_param(c->ctx, NULL, c->t_vpp, "bufs"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_i64p, "dv"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_vp, "scratch"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_i32p, "status"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_vpp, "rt"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_i64, "lo"),
      gcc_jit_context_new_param(c->ctx, NULL, c->t_i64, "hi")};
  c->fn = gcc_jit_context_new_function(c->ctx, NULL, kind, c->t_void, name, 7, ps, 0);
  c->p_rt = gcc_jit_param_as_rvalue(ps[4]);
  c->p_lo = gcc_jit_param_as_rvalue(ps[5]);
  c->p_hi = gcc_jit_param_as_rvalue(ps[6]);
  c->p_bufs = gcc_jit_param_as_rvalue(ps[0]);
  c->p_dv = gcc_jit_param_as_rvalue(ps[1]);
  c->p_scratch = gcc_jit_param_as_rvalue(ps[2]);
  c->p_status = gcc_jit_param_as_rvalue(ps[3]);
  c->entry = gcc_jit_function_new_block(c->fn, "entry");
  c->blk = gcc_jit_function_new_block(c->fn, "start");
  for (int i = 0; i < c->p->n_bufs; i++) c->bufptr[i] = NULL;
  for (int i = 0; i < c->n_dims; i++) c->dimloc[i] = NULL;
  c->n_memo = c->n_ixmemo = 0;
}

static void begin_function(cg *c, const char *name) { begin_function_kind(c, name, GCC_JIT_FUNCTION_EXPORTED); }

int cg_outline_begin(cg *c, cg_outline *o, const char *suffix) {
  o->fn = c->fn;
  o->entry = c->entry;
  o->blk = c->blk;
  gcc_jit_rvalue **pv[7] = {&c->p_bufs, &c->p_dv, &c->p_scratch, &c->p_status, &c->p_rt, &c->p_lo, &c->p_hi};
  for (int i = 0; i < 7; i++) o->params[i] = *pv[i];
  o->bufptr = c->bufptr;
  o->dimloc = c->dimloc;
  o->n_dims = c->n_dims;
  o->hoisted = c->hoisted;
  o->memo = c->memo, o->n_memo = c->n_memo, o->cap_memo = c->cap_memo;
  o->ixmemo = c->ixmemo, o->n_ixmemo = c->n_ixmemo, o->cap_ixmemo = c->cap_ixmemo;
  o->mm_acc = c->mm_acc;
  c->bufptr = td_arena_alloc(c->arena, (size_t)(c->p->n_bufs + 1) * sizeof *c->bufptr);
  c->dimloc = td_arena_alloc(c->arena, (size_t)(c->cap_dims + 1) * sizeof *c->dimloc);
  c->hoisted = td_arena_alloc(c->arena, (size_t)(c->g->n_nodes + 1) * sizeof *c->hoisted);
  if (!c->bufptr || !c->dimloc || !c->hoisted) return td_err_set(c->err, "out of memory");
  memset(c->hoisted, 0, (size_t)(c->g->n_nodes + 1) * sizeof *c->hoisted);
  c->memo = NULL, c->cap_memo = 0;
  c->ixmemo = NULL, c->cap_ixmemo = 0;
  char name[160];
  snprintf(name, sizeof name, "%s_%s", c->k->name, suffix);
  begin_function_kind(c, name, GCC_JIT_FUNCTION_INTERNAL);
  o->start = c->blk;
  return 0;
}

void cg_outline_call(cg *c, const cg_outline *o, gcc_jit_function *f, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi) {
  gcc_jit_rvalue *a[7];
  memcpy(a, o->params, sizeof a);
  a[5] = lo;
  a[6] = hi;
  gcc_jit_block_add_eval(c->blk, NULL, gcc_jit_context_new_call(c->ctx, NULL, f, 7, a));
}

gcc_jit_function *cg_outline_end(cg *c, cg_outline *o) {
  gcc_jit_function *f = c->fn;
  gcc_jit_block_end_with_void_return(c->blk, NULL);
  gcc_jit_block_end_with_jump(c->entry, NULL, o->start);
  c->fn = o->fn;
  c->entry = o->entry;
  c->blk = o->blk;
  gcc_jit_rvalue **pv[7] = {&c->p_bufs, &c->p_dv, &c->p_scratch, &c->p_status, &c->p_rt, &c->p_lo, &c->p_hi};
  for (int i = 0; i < 7; i++) *pv[i] = o->params[i];
  c->bufptr = o->bufptr;
  /* entries added to the runtime table meanwhile have no local here yet */
  gcc_jit_lvalue **dl = td_arena_alloc(c->arena, (size_t)(c->cap_dims + 1) * sizeof *dl);
  if (!dl) {
    td_err_set(c->err, "out of memory");
    return f;
  }
  for (int i = 0; i < c->n_dims; i++) dl[i] = i < o->n_dims ? o->dimloc[i] : NULL;
  c->dimloc = dl;
  c->hoisted = o->hoisted;
  c->memo = o->memo, c->n_memo = o->n_memo, c->cap_memo = o->cap_memo;
  c->ixmemo = o->ixmemo, c->n_ixmemo = o->n_ixmemo, c->cap_ixmemo = o->cap_ixmemo;
  c->mm_acc = o->mm_acc;
  return f;
}

/* The parallel loop of kernel k: the first axis of its space that is not
 * a literal 1 (for a row kernel, the first kept axis), or -1.  A matmul
 * splits its rows, unless a batch axis has a literal size of at least
 * PAR_BATCH: then that axis, as each batch entry packs its own B and a
 * thread that owns whole entries packs only those (W6's 4 heads: split
 * over rows, both threads packed all 32 k^T and v).  A symbolic batch
 * axis may be 1 at run time, and a literal 2 or 3 would leave threads
 * idle: those split rows. */
#define PAR_BATCH 4
static int parallel_axis(const td_graph *g, const td_kernel *k) {
  if (k->kind == TD_KERN_MATMUL) {
    const td_node *m = &g->nodes[k->matmul];
    for (int a = 0; a + 2 < m->rank; a++)
      if (m->shape[a] >= PAR_BATCH) return a;
    return m->shape[m->rank - 2] != 1 ? m->rank - 2 : -1;
  }
  for (int a = 0; a < k->rank; a++)
    if (k->space[a] != 1 && !(k->kind == TD_KERN_REDUCE && (k->red_axes >> a & 1))) return a;
  return -1;
}

/* A matmul whose B is a parameter (plan.h's td_kernel_prepack) with at
 * least half a vector of outputs reads a copy packed once into NR-column
 * panels (one vector wide when N fits in one), and is parallel over rows
 * x column blocks (so one row still splits across threads). */
static int prepack_info(cg *c, const td_kernel *k, tdc_kinfo *info) {
  td_prepack pp;
  memset(&info->pack, 0, sizeof info->pack);
  if (!td_kernel_prepack(c->p, k, &pp)) return 0;
  const td_node *m = &c->g->nodes[k->matmul];
  int nr = tdc_gemm_nr(c->isa, m->dtype);
  if (pp.n < nr / 4) return 0;   /* under half a vector of outputs: the dot path wastes less */
  if (pp.n <= nr / 2) nr /= 2;   /* one vector wide: no FMAs on padding for narrow outputs */
  info->pack = (tdc_prepack_desc){pp.buf, (int64_t)td_dtype_size(m->dtype), nr, pp.n, pp.k, pp.off, pp.sbk, pp.sbn};
  info->cols = (pp.n + nr - 1) / nr;
  c->par_axis = m->rank - 2;
  info->parallel = 1;
  info->extent = td_dim_mul(c->g, m->shape[m->rank - 2], info->cols);
  if (TD_DIM_IS_BAD(info->extent)) return td_err_set(c->err, "size arithmetic overflows in kernel %s", k->name);
  return 0;
}

/* How kernel ki splits across threads (info), and c's parallel axis. */
static int kernel_info(cg *c, int ki, tdc_kinfo *info) {
  const td_kernel *k = &c->p->kernels[ki];
  c->k = k;
  c->kidx = ki;
  c->par_axis = parallel_axis(c->g, k);
  info->parallel = c->par_axis >= 0;
  info->extent = c->par_axis < 0 ? 1
               : k->kind == TD_KERN_MATMUL ? c->g->nodes[k->matmul].shape[c->par_axis] : k->space[c->par_axis];
  info->cols = 1;
  c->kinfo = info;
  return prepack_info(c, k, info);
}

/* Kernel ki's code as function `name` (kind), after kernel_info. */
static int emit_body(cg *c, int ki, const char *name, enum gcc_jit_function_kind kind) {
  const td_kernel *k = &c->p->kernels[ki];
  memset(c->in_k, 0, (size_t)c->g->n_nodes);
  memset(c->hoisted, 0, (size_t)c->g->n_nodes * sizeof *c->hoisted);
  for (int i = 0; i < k->n_nodes; i++) c->in_k[k->nodes[i]] = 1;
  gcc_jit_block *start;
  begin_function_kind(c, name, kind);
  start = c->blk;
  int rc = k->kind == TD_KERN_MATMUL ? tdc_emit_matmul(c) : k->kind == TD_KERN_REDUCE ? tdc_emit_reduce(c)
                                                                                   : emit_pointwise(c);
  if (rc) return -1;
  gcc_jit_block_end_with_void_return(c->blk, NULL);
  gcc_jit_block_end_with_jump(c->entry, NULL, start);
  const char *e = gcc_jit_context_get_first_error(c->ctx);
  if (e) return td_err_set(c->err, "internal compiler error in kernel %s: %s", k->name, e);
  return 0;
}

/* The body a group of kernels shares: its function and its tables, whose
 * nodes are positions in the kernels' key order (td_kgroups). */
typedef struct shared_body {
  gcc_jit_function *fn;
  cg_lslot *bufs, *dims;
  int n_bufs, n_dims;
} shared_body;

/* Emits kernel ki's code once as <name>_shared with tables of its own
 * (the first kernel of its group, kg): node ids in the tables become
 * positions in ki's key order. */
static int emit_shared(cg *c, const td_kgroups *kg, int ki, int *pos_of, shared_body *sb) {
  const td_kernel *k = &c->p->kernels[ki];
  const int *order = kg->nodes + kg->first[ki];
  int n_order = (ki + 1 < kg->n_kernels ? kg->first[ki + 1] : (int)kg->n_nodes) - kg->first[ki];
  char name[200];
  snprintf(name, sizeof name, "%s_shared", k->name);
  c->local = 1;
  c->n_lbufs = c->n_ldims = c->cap_lbufs = c->cap_ldims = 0;
  c->lbufs = c->ldims = NULL;
  /* EXPORTED: an interposable function, which GCC does not inline into
   * the wrappers (that would compile the body once per kernel again) */
  int rc = emit_body(c, ki, name, GCC_JIT_FUNCTION_EXPORTED);
  c->local = 0;
  if (rc) return -1;
  for (int i = 0; i < n_order; i++) pos_of[order[i]] = i;
  sb->fn = c->fn;
  sb->bufs = c->lbufs, sb->n_bufs = c->n_lbufs;
  sb->dims = c->ldims, sb->n_dims = c->n_ldims;
  cg_lslot *tabs[2] = {sb->bufs, sb->dims};
  int ns[2] = {sb->n_bufs, sb->n_dims};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < ns[t]; i++) {
      int n = tabs[t][i].node, rn = t == 1 && tabs[t][i].what >= 0 ? c->dims[tabs[t][i].what].rand_node : -1;
      if (rn >= 0) n = rn;
      if (n < 0) continue;
      if (pos_of[n] < 0)
        return td_err_set(c->err, "internal compiler error in kernel %s: node %%%d is outside its key", k->name, n);
      /* a random stream's entry stays found by its node's position */
      if (rn >= 0) tabs[t][i].what = -2;
      tabs[t][i].node = pos_of[n];
    }
  for (int i = 0; i < n_order; i++) pos_of[order[i]] = -1;
  return 0;
}

/* Kernel ki as a function that fills the shared body's tables with its
 * own buffers, sizes, streams and node ids, and calls it. */
static int emit_wrapper(cg *c, const td_kgroups *kg, int ki, const shared_body *sb) {
  const td_kernel *k = &c->p->kernels[ki];
  const int *order = kg->nodes + kg->first[ki];
  begin_function(c, k->name);
  gcc_jit_block *start = c->blk;
  gcc_jit_type *tb = gcc_jit_context_new_array_type(c->ctx, NULL, c->t_vp, sb->n_bufs ? sb->n_bufs : 1);
  gcc_jit_type *td = gcc_jit_context_new_array_type(c->ctx, NULL, c->t_i64, sb->n_dims ? sb->n_dims : 1);
  gcc_jit_lvalue *lb = cg_local(c, tb, "lbufs"), *ld = cg_local(c, td, "ldv");
  for (int i = 0; i < sb->n_bufs; i++) {
    const cg_lslot *e = &sb->bufs[i];
    int bi = e->node < 0 ? c->p->n_bufs + ki : c->p->buf_of[order[e->node]];
    if (bi < 0) return td_err_set(c->err, "internal compiler error in kernel %s: a shared buffer is missing", k->name);
    cg_assign(c, gcc_jit_context_new_array_access(c->ctx, NULL, gcc_jit_lvalue_as_rvalue(lb), cg_i64(c, i)),
              gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(c->ctx, NULL, c->p_bufs, cg_i64(c, bi))));
  }
  for (int i = 0; i < sb->n_dims; i++) {
    const cg_lslot *e = &sb->dims[i];
    gcc_jit_rvalue *v;
    if (e->what == -1) {   /* a status code */
      v = cg_i64(c, order[e->node] + 1);
    } else {
      int j = e->what == -2 ? dim_entry(c, 0, order[e->node]) : e->what;
      if (j < 0) return -1;
      v = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(c->ctx, NULL, c->p_dv, cg_i64(c, j)));
    }
    cg_assign(c, gcc_jit_context_new_array_access(c->ctx, NULL, gcc_jit_lvalue_as_rvalue(ld), cg_i64(c, i)), v);
  }
  gcc_jit_rvalue *a[7] = {
      gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c->ctx, NULL, gcc_jit_lvalue_as_rvalue(lb),
                                                                  cg_i64(c, 0)), NULL),
      gcc_jit_context_new_cast(c->ctx, NULL,
                               gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(
                                                              c->ctx, NULL, gcc_jit_lvalue_as_rvalue(ld), cg_i64(c, 0)),
                                                          NULL),
                               c->t_i64p),
      c->p_scratch, c->p_status, c->p_rt, c->p_lo, c->p_hi};
  gcc_jit_block_add_eval(c->blk, NULL, gcc_jit_context_new_call(c->ctx, NULL, sb->fn, 7, a));
  gcc_jit_block_end_with_void_return(c->blk, NULL);
  gcc_jit_block_end_with_jump(c->entry, NULL, start);
  return cg_failed(c);
}

void *const *tdc_runtime_table(void) {
  static void *const table[TDC_RT_COUNT] = {(void *)td_rand_uniform, (void *)td_rand_normal,
                                            (void *)tdc_pow_i32, (void *)tdc_pow_i64};
  return table;
}

gcc_jit_rvalue *cg_rt_call(cg *c, int which, gcc_jit_type *ret, int n, gcc_jit_type **types,
                           gcc_jit_rvalue **args) {
  gcc_jit_type *ft = gcc_jit_context_new_function_ptr_type(c->ctx, NULL, ret, n, types, 0);
  gcc_jit_rvalue *fp = gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(c->ctx, NULL, c->p_rt, cg_i64(c, which)));
  return gcc_jit_context_new_call_through_ptr(c->ctx, NULL, gcc_jit_context_new_cast(c->ctx, NULL, fp, ft), n, args);
}

/* Every kernel of c->p: a kernel alone in its group as itself, the
 * kernels of a larger group as wrappers of one shared body. */
static int emit_all(cg *c, tdc_kinfo *info) {
  const td_plan *p = c->p;
  double t0 = td_now();
  td_kgroups kg;
  if (td_kernel_groups(p, &kg)) return td_err_set(c->err, "out of memory");
  int nk = p->n_kernels, rc = 0;
  int *size = td_arena_alloc(c->arena, ((size_t)nk + 1) * sizeof *size);
  int *pos_of = td_arena_alloc(c->arena, ((size_t)c->g->n_nodes + 1) * sizeof *pos_of);
  shared_body *sb = td_arena_alloc(c->arena, ((size_t)nk + 1) * sizeof *sb);
  if (!size || !pos_of || !sb) rc = td_err_set(c->err, "out of memory");
  for (int k = 0; !rc && k < nk; k++) size[k] = 0;
  for (int k = 0; !rc && k < nk; k++) size[kg.rep[k]]++;
  for (int i = 0; !rc && i < c->g->n_nodes; i++) pos_of[i] = -1;
  for (int k = 0; !rc && k < nk; k++) {
    int r = kg.rep[k];
    if (p->kernels[k].kind == TD_KERN_SCAN) {   /* run by the caller from its body's code (compiled.c) */
      memset(&info[k], 0, sizeof info[k]);
      continue;
    }
    if (kernel_info(c, k, &info[k])) rc = -1;
    else if (size[r] == 1) rc = emit_body(c, k, p->kernels[k].name, GCC_JIT_FUNCTION_EXPORTED);
    else if ((r == k && emit_shared(c, &kg, k, pos_of, &sb[k])) || emit_wrapper(c, &kg, k, &sb[r])) rc = -1;
  }
  char note[96];
  snprintf(note, sizeof note, "%d kernels, %d distinct", nk, kg.n_distinct);
  td_kgroups_free(&kg);
  if (!rc) td_phase_done("code generation", t0, note);
  return rc;
}

gcc_jit_context *tdc_codegen(const td_plan *p, const char *march, int opt, td_arena *a, cg_dimref **dims,
                             int *n_dims, tdc_kinfo *info, td_err *err) {
  cg c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.g = p->g;
  c.err = err;
  c.arena = a;
  err->msg[0] = 0;
  c.bufptr = td_arena_alloc(a, (size_t)(p->n_bufs + 1) * sizeof *c.bufptr);
  c.red_val = td_arena_alloc(a, (size_t)(p->g->n_nodes + 1) * sizeof *c.red_val);
  c.in_k = td_arena_alloc(a, (size_t)p->g->n_nodes + 1);
  c.hoisted = td_arena_alloc(a, (size_t)(p->g->n_nodes + 1) * sizeof *c.hoisted);
  c.ctx = gcc_jit_context_acquire();
  if (c.ctx) gcc_jit_context_set_bool_print_errors_to_stderr(c.ctx, 0);
  if (!c.bufptr || !c.red_val || !c.in_k || !c.hoisted || !c.ctx) {
    if (c.ctx) gcc_jit_context_release(c.ctx);
    td_err_set(err, "out of memory");
    return NULL;
  }
  char opt_march[64];
  snprintf(opt_march, sizeof opt_march, "-march=%s", march);
  gcc_jit_context_set_int_option(c.ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, opt);
  gcc_jit_context_add_command_line_option(c.ctx, opt_march);
  gcc_jit_context_add_command_line_option(c.ctx, "-fno-math-errno");
  gcc_jit_context_add_command_line_option(c.ctx, "-fwrapv");
  /* no a * b + c fused into one rounding behind our back: a value must
   * round as in eager mode, and the same wherever a kernel computes it
   * (GCC contracts each use separately: `a - max(a)` became fma(x, 3,
   * -max) after max had seen the rounded x * 3).  The GEMM asks for its
   * FMAs explicitly (codegen_gemm.c). */
  gcc_jit_context_add_command_line_option(c.ctx, "-ffp-contract=off");
  /* -O2 with the vectoriser: as fast as -O3 on these loops, and quicker
   * to compile.  The "cheap" cost model (no costly run-time alias or
   * alignment versioning) compiled the W6 block in 0.92-0.95 s instead of
   * 1.43-1.46 s and ran no slower: W2, W4, W6 equal, W5 softmax and
   * layer_norm faster (8.6 vs 10.6-12.1 ms, 8.7-8.9 vs 11.6-11.9 ms;
   * A/B on one build, harness T=1); the hot loops use explicit vector
   * types or need no versioning. */
  gcc_jit_context_add_command_line_option(c.ctx, "-ftree-vectorize");
  gcc_jit_context_add_command_line_option(c.ctx, "-fvect-cost-model=cheap");
  /* the shared GEMM functions (codegen_gemm.c) stay out of line even in a
   * kernel that calls them once: inlined, their 64-byte aligned locals
   * gave the kernel a realigned stack frame that W1's calls paid every
   * time, also when they only took the small-matrix path */
  gcc_jit_context_add_command_line_option(c.ctx, "-fno-inline-functions-called-once");
  if (!strcmp(march, "x86-64-v4")) gcc_jit_context_add_command_line_option(c.ctx, "-mprefer-vector-width=512");
  c.isa = !strcmp(march, "x86-64-v4") ? 2 : !strcmp(march, "x86-64-v3") ? 1 : 0;
  init_types(&c);
  c.bounds = tdc_debug_bounds();
  if (emit_all(&c, info)) {
    gcc_jit_context_release(c.ctx);
    return NULL;
  }
  *dims = c.dims;
  *n_dims = c.n_dims;
  return c.ctx;
}

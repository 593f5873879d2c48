/* build.c - `tdsl build`: writing a model's CPU artifact (build.h).
 *
 * Per entry point (every one but main): lower, optimise, plan
 * (build_common.c, as for CUDA artifacts), give the kernels unique names
 * (<prefix>_e<i>_<kernel>) and generate them with tdc_codegen, and compile
 * that context to an object file.  Then one more gccjit context holds the
 * descriptor (a global with an initialiser; it carries each parameter's
 * recipe, which create runs), with --embed-weights the initial parameter
 * bytes (assembled from a file, never through the C compiler:
 * tdb_data_symbol), a function
 * writing each entry's kernel addresses, and the C API's wrappers, which
 * only pack their arguments and call the runtime (artifact_rt.c); it is
 * compiled to the shared library (and, with exe, once more with a main()
 * to the executable), libgccjit's driver linking the entry objects and
 * libtdsl_rt.a in.  The header is written as text.  Every output is written
 * into a staging directory and the whole set is published at the end
 * (build_dir.c), so a failed or killed build leaves no partial .so, .h or
 * executable behind, nor a mix of two builds' files that a program could
 * use.
 */
#include "compiler/build.h"
#include "compiler/compiled.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/mem.h"
#include "artifact/artifact.h"
#include "compiler/build_common.h"
#include "compiler/jit_impl.h"

/* A plan's generated code: an entry point's, or a scan's body (whose
 * kernels are generated once, whatever the trip count, into an object
 * file of their own). */
typedef struct bplan {
  td_plan *p;
  cg_dimref *dims;
  int n_dims;
  tdc_kinfo *info;
  struct bplan **sub;        /* per kernel: a scan's body, else NULL */
  int n_code;                /* kernels of this plan and every body in it */
  char obj[1300];
} bplan;

/* What the CPU adds to an entry point (b->c.e[i] is the same entry). */
typedef struct bextra {
  bplan code;
} bextra;

typedef struct builder {
  tdb_builder c;
  bextra *x;
  char march[32];
} builder;

/* ---- the descriptor ---- */

static void put_kernels(tdb_builder *b, const tdb_entry *e, const bplan *x);

/* What run_scan needs of scan kernel k of x (artifact.h: "per scan"). */
static void put_scan(tdb_builder *b, const tdb_entry *e, const bplan *x, int k) {
  const td_plan *p = x->p, *bp = x->sub[k]->p;
  td_graph *bg = bp->g;
  int id = p->kernels[k].root;
  const td_node *s = &p->g->nodes[id];
  const td_attr *a = &s->attr;
  int nc = a->n_carry, nx = a->n_xs, idx = a->index ? nc + nx : -1;
  int64_t head[5] = {a->dim, a->reverse, nc, nx, idx};
  for (int i = 0; i < 5; i++) tdb_put(b, head[i]);
  tdb_put(b, bg->n_inputs);
  for (int j = 0; j < bg->n_inputs; j++) {
    int sliced = j >= nc && j < nc + nx;
    tdb_put(b, j == idx ? -1 : p->buf_of[s->in[idx >= 0 && j > idx ? j - 1 : j]]);
    tdb_put(b, sliced);
    tdb_put(b, sliced ? td_node_bytes(bg, &bg->nodes[bg->inputs[j]]) : 0);
  }
  tdb_put(b, bg->n_outputs);
  for (int i = 0; i < bg->n_outputs; i++) {
    int on = bp->out_nodes[i], ob = bp->buf_of[on];
    tdb_put(b, p->buf_of[id + 1 + i]);
    tdb_put(b, ob);
    tdb_put(b, td_node_bytes(bg, &bg->nodes[on]));
    tdb_put(b, ob >= 0 && bp->bufs[ob].kind == TD_BUF_OUTPUT && bp->bufs[ob].index == i);
  }
  const bplan *y = x->sub[k];
  tdb_put_plan(b, e, bp);
  tdb_put(b, y->n_dims);
  for (int i = 0; i < y->n_dims; i++) tdb_put_dv1(b, bg, y->dims[i].rand_node, y->dims[i].dim);
  put_kernels(b, e, y);
  /* where the scan's prints go among its graph's: after this many PRINT
   * nodes (scans at one place in node order); then the body's prints */
  int before = 0;
  for (int i = 0; i < id; i++) before += p->g->nodes[i].op == TD_IR_PRINT;
  tdb_put(b, before);
  tdb_put(b, id);
  tdb_put_plan_prints(b, bg, bp);
}

static void put_kernels(tdb_builder *b, const tdb_entry *e, const bplan *x) {
  const td_plan *p = x->p;
  const td_graph *g = p->g;
  tdb_put(b, p->n_kernels);
  for (int k = 0; k < p->n_kernels; k++) {
    const td_kernel *kn = &p->kernels[k];
    td_dim n = 0, kk = 0;
    int64_t scratch = 0;
    if (kn->kind == TD_KERN_MATMUL) {
      const td_node *m = &g->nodes[kn->matmul];
      n = m->shape[m->rank - 1];
      kk = kn->a.shape[kn->a.rank - 1];
      scratch = TD_DIM_IS_CONST(n) && TD_DIM_IS_CONST(kk) ? (int64_t)tdc_matmul_scratch(0, n, kk) : -1;
    }
    int64_t v[8] = {x->info[k].parallel, x->info[k].parallel ? x->info[k].extent : 1, kn->bytes_read,
                    kn->bytes_written, kn->flops, scratch, n, kk};
    for (int i = 0; i < 8; i++) tdb_put(b, v[i]);
    const tdc_prepack_desc *pk = &x->info[k].pack;   /* column blocks and the prepacked B */
    int64_t w[9] = {x->info[k].cols, pk->buf, pk->elsize, pk->nr, pk->n, pk->k, pk->off, pk->sbk, pk->sbn};
    for (int i = 0; i < 9; i++) tdb_put(b, w[i]);
    tdb_put(b, kn->kind == TD_KERN_SCAN);
    if (kn->kind == TD_KERN_SCAN) put_scan(b, e, x, k);
  }
}

static void put_entry(builder *b, int ei) {
  const tdb_entry *e = &b->c.e[ei];
  const bplan *x = &b->x[ei].code;
  tdb_put_entry_head(&b->c, e);
  tdb_put(&b->c, x->n_dims);
  for (int i = 0; i < x->n_dims; i++) tdb_put_dv1(&b->c, e->opt, x->dims[i].rand_node, x->dims[i].dim);
  put_kernels(&b->c, e, x);
  tdb_put_prints(&b->c, e);
  tdb_put_updates(&b->c, e);
}

/* ---- one entry point ---- */

/* Names the kernels of x <base>_<kernel>, generates them and compiles them
 * into <stage>/<base>.o; then each scan's body the same way, with base
 * <base>_s<kernel>.  A scan's body has no parameters: the elaborator
 * refuses them (a PARAM buffer here would be an internal error). */
static int gen_plan(builder *b, const char *what, bplan *x, const char *base, const char *stage) {
  td_err *err = b->c.err;
  td_plan *p = x->p;
  for (int k = 0; k < p->n_kernels; k++) {
    const char *kn = td_arena_printf(b->c.a, "%s_%s", base, p->kernels[k].name);
    if (!kn) return td_err_set(err, "out of memory");
    p->kernels[k].name = kn;
  }
  x->info = td_arena_alloc(b->c.a, (size_t)(p->n_kernels + 1) * sizeof *x->info);
  x->sub = td_arena_alloc(b->c.a, (size_t)(p->n_kernels + 1) * sizeof *x->sub);
  if (!x->info || !x->sub) return td_err_set(err, "out of memory");
  memset(x->sub, 0, (size_t)(p->n_kernels + 1) * sizeof *x->sub);
  gcc_jit_context *ctx = tdc_codegen(p, b->march, 2, b->c.a, &x->dims, &x->n_dims, x->info, err);
  if (!ctx) return -1;
  snprintf(x->obj, sizeof x->obj, "%s/%s.o", stage, base);
  gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_OBJECT_FILE, x->obj);
  const char *msg = gcc_jit_context_get_first_error(ctx);
  int rc = msg ? td_err_set(err, "internal compiler error in the kernels of %s: %s", what, msg) : 0;
  gcc_jit_context_release(ctx);
  x->n_code = p->n_kernels;
  for (int k = 0; rc == 0 && k < p->n_kernels; k++) {
    if (p->kernels[k].kind != TD_KERN_SCAN) continue;
    td_plan *bp = p->kernels[k].body;
    for (int i = 0; bp && i < bp->n_bufs; i++)
      if (bp->bufs[i].kind != TD_BUF_INPUT && bp->bufs[i].kind != TD_BUF_OUTPUT && bp->bufs[i].kind != TD_BUF_TEMP)
        bp = NULL;
    char *sub = td_arena_printf(b->c.a, "%s_s%d", base, k);
    if (!bp) return td_err_set(err, "internal compiler error in %s: a scan's body reads a parameter", what);
    if (!sub || !(x->sub[k] = td_arena_alloc(b->c.a, sizeof *x->sub[k]))) return td_err_set(err, "out of memory");
    memset(x->sub[k], 0, sizeof *x->sub[k]);
    x->sub[k]->p = bp;
    rc = gen_plan(b, what, x->sub[k], sub, stage);
    x->n_code += x->sub[k]->n_code;
  }
  return rc;
}

/* Lowers, optimises, plans and generates entry ei, compiling its kernels
 * (and its scans' bodies') into object files in the staging directory. */
static int build_entry(builder *b, td_program *prog, int ei, const char *stage) {
  tdb_entry *e = &b->c.e[ei];
  if (tdb_lower_entry(&b->c, prog, e)) return -1;
  char base[200];
  snprintf(base, sizeof base, "%s_e%d", b->c.o->prefix, ei);
  b->x[ei].code.p = e->plan;
  return gen_plan(b, e->name, &b->x[ei].code, base, stage);
}

/* Calls fn on every object file of x (its own, then its bodies'). */
static void each_obj(const bplan *x, void (*fn)(void *ud, const char *path), void *ud) {
  if (!x || !x->p) return;
  if (x->obj[0]) fn(ud, x->obj);
  for (int k = 0; x->sub && k < x->p->n_kernels; k++) each_obj(x->sub[k], fn, ud);
}

static void add_obj(void *ctx, const char *path) { gcc_jit_context_add_driver_option(ctx, path); }
static void remove_obj(void *ud, const char *path) {
  (void)ud;
  unlink(path);
}

/* ---- the API context ---- */

/* static void <prefix>__kernels(int e, void **out): the kernels of entry
 * e, then its generated entry function (calls[e], or NULL), then its
 * scans' bodies' kernels (import_kernels' order). */
static gcc_jit_function *add_kernel_table(builder *b, tdb_api *A, gcc_jit_function ***kern, gcc_jit_function **calls) {
  gcc_jit_type *ts[2] = {A->t_int, A->t_vpp};
  gcc_jit_param *ps[2];
  char name[200];
  snprintf(name, sizeof name, "%s__kernels", b->c.o->prefix);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_INTERNAL, A->t_void, name, 2, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  for (int ei = 0; ei < b->c.n_e; ei++) {
    gcc_jit_block *yes = gcc_jit_function_new_block(f, NULL), *no = gcc_jit_function_new_block(f, NULL);
    gcc_jit_block_end_with_conditional(blk, NULL,
                                       gcc_jit_context_new_comparison(A->ctx, NULL, GCC_JIT_COMPARISON_EQ,
                                                                      gcc_jit_param_as_rvalue(ps[0]),
                                                                      tdb_ival(A, A->t_int, ei)),
                                       yes, no);
    const td_plan *p = b->c.e[ei].plan;
    for (int k = 0; k <= b->x[ei].code.n_code; k++) {
      gcc_jit_function *kf = k != p->n_kernels ? kern[ei][k] : calls[ei];
      gcc_jit_lvalue *slot =
          gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_param_as_rvalue(ps[1]), tdb_ival(A, A->t_int, k));
      gcc_jit_block_add_assignment(yes, NULL, slot,
                                   kf ? gcc_jit_context_new_cast(A->ctx, NULL, gcc_jit_function_get_address(kf, NULL), A->t_vp)
                                      : gcc_jit_context_null(A->ctx, A->t_vp));
    }
    gcc_jit_block_end_with_void_return(yes, NULL);
    blk = no;
  }
  gcc_jit_block_end_with_void_return(blk, NULL);
  return f;
}

/* ---- the per-call fast path (artifact.h's tdrt_fast) ---- */

typedef struct fastgen {
  tdb_api *A;
  gcc_jit_function *f;
  gcc_jit_block *blk, *slow;
  gcc_jit_struct *st;
  gcc_jit_field *fl[9];   /* ok, bufs, dv, scratch, rt, calls, syms, bind, ext */
  gcc_jit_rvalue *rec;    /* the entry's tdrt_fast * */
  gcc_jit_function *rand, *index_error, *rt_call;   /* the runtime's */
  gcc_jit_function ***kern;   /* per entry, per kernel: its declaration */
} fastgen;

/* The declarations of x's kernels into out from *n on, NULL for a scan
 * (run by the runtime from its body's kernels): x's own, with entry one
 * slot more for the generated entry function (add_kernel_table fills it),
 * then each scan's body's, depth first.  artifact_rt.c reads the kernel
 * table in this order. */
static void import_kernels(tdb_api *A, const bplan *x, gcc_jit_type **kt, gcc_jit_function **out, int *n, int entry) {
  const td_plan *p = x->p;
  for (int k = 0; k < p->n_kernels; k++)
    out[(*n)++] = p->kernels[k].kind == TD_KERN_SCAN ? NULL : tdb_import(A, A->t_void, p->kernels[k].name, 7, kt);
  if (entry) out[(*n)++] = NULL;
  for (int k = 0; k < p->n_kernels; k++)
    if (x->sub[k]) import_kernels(A, x->sub[k], kt, out, n, 0);
}

/* What every entry's fast path uses: tdrt_fast as gccjit sees it (the
 * same fields in the same order), the runtime functions, and every
 * kernel's declaration (once per context).  -1 when out of memory. */
static int fast_init(fastgen *g, builder *b, tdb_api *A, gcc_jit_function *rt_call) {
  memset(g, 0, sizeof *g);
  g->A = A;
  g->rt_call = rt_call;
  gcc_jit_type *vi[2] = {A->t_vp, A->t_int};
  g->rand = tdb_import(A, A->t_void, "tdrt_fast_rand", 2, vi);
  g->index_error = tdb_import(A, A->t_int, "tdrt_fast_index_error", 2, vi);
  gcc_jit_type *i64p = gcc_jit_type_get_pointer(A->t_i64), *i32 = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT32_T);
  gcc_jit_type *kt[7] = {A->t_vpp, i64p, A->t_vp, gcc_jit_type_get_pointer(i32), A->t_vpp, A->t_i64, A->t_i64};
  if (!(g->kern = td_arena_alloc(b->c.a, (size_t)(b->c.n_e + 1) * sizeof *g->kern))) return -1;
  for (int ei = 0; ei < b->c.n_e; ei++) {
    const bplan *x = &b->x[ei].code;
    if (!(g->kern[ei] = td_arena_alloc(b->c.a, (size_t)(x->n_code + 2) * sizeof **g->kern))) return -1;
    int n = 0;
    import_kernels(A, x, kt, g->kern[ei], &n, 1);
  }
  gcc_jit_type *t[9] = {A->t_i64, A->t_vpp, i64p, A->t_vp, A->t_vpp, i64p,
                        gcc_jit_context_new_array_type(A->ctx, NULL, A->t_i64, TDRT_FAST_SYMS),
                        gcc_jit_context_new_array_type(A->ctx, NULL, A->t_i64, TDRT_FAST_ARGS),
                        gcc_jit_context_new_array_type(A->ctx, NULL, A->t_i64, TDRT_FAST_KERNS)};
  const char *n[9] = {"ok", "bufs", "dv", "scratch", "rt", "calls", "syms", "bind", "ext"};
  for (int i = 0; i < 9; i++) g->fl[i] = gcc_jit_context_new_field(A->ctx, NULL, t[i], n[i]);
  g->st = gcc_jit_context_new_struct_type(A->ctx, NULL, "tdrt_fast", 9, g->fl);
  return 0;
}

static gcc_jit_rvalue *fget(fastgen *g, int field) {
  return gcc_jit_lvalue_as_rvalue(gcc_jit_rvalue_dereference_field(g->rec, NULL, g->fl[field]));
}

static gcc_jit_rvalue *fidx(fastgen *g, gcc_jit_rvalue *arr, long i) {
  return gcc_jit_lvalue_as_rvalue(gcc_jit_context_new_array_access(g->A->ctx, NULL, arr, tdb_ival(g->A, g->A->t_int, i)));
}

/* Continues in a new block when cond is false; to the slow path when true. */
static void unless(fastgen *g, gcc_jit_rvalue *cond) {
  gcc_jit_block *next = gcc_jit_function_new_block(g->f, NULL);
  gcc_jit_block_end_with_conditional(g->blk, NULL, cond, g->slow, next);
  g->blk = next;
}

static gcc_jit_rvalue *cmp(tdb_api *A, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(A->ctx, NULL, op, a, b);
}

/* static int <prefix>__call<ei>(m, ei, syms, args): when the entry's
 * tdrt_fast record holds for these sizes and no pointer is NULL, binds the
 * pointers and calls the kernels directly; otherwise tdrt_call.  NULL (use
 * tdrt_call) when the entry exceeds the record's limits. */
/* Can kernel k report an index error (does it evaluate a gather)? */
static int checks_indices(const td_plan *p, int k) {
  const td_kernel *kn = &p->kernels[k];
  for (int i = 0; i < kn->n_nodes; i++)
    if (td_ops[p->g->nodes[kn->nodes[i]].op].kind == TD_K_GATHER) return 1;
  return 0;
}

static gcc_jit_function *add_call_fn(builder *b, fastgen *gs, int ei) {
  const tdb_entry *e = &b->c.e[ei];
  const td_plan *p = e->plan;
  tdb_api *A = gs->A;
  int n_io = e->opt->n_inputs + tdb_n_outs(e), rand = 0;
  /* a scan runs its body per step in the runtime, a training step copies
   * updates and makes the weights' packed copies again: no fast path */
  if (e->n_args > TDRT_FAST_SYMS || n_io > TDRT_FAST_ARGS || p->n_kernels > TDRT_FAST_KERNS ||
      td_plan_first_scan(p) >= 0 || e->g->n_updates)
    return NULL;
  for (int i = 0; i < b->x[ei].code.n_dims; i++) rand |= b->x[ei].code.dims[i].rand_node >= 0;
  fastgen g = *gs;
  gcc_jit_type *i64p = gcc_jit_type_get_pointer(A->t_i64), *i32 = gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT32_T);
  gcc_jit_type *ts[4] = {A->t_vp, A->t_int, i64p, A->t_vpp};
  gcc_jit_param *ps[4];
  char name[200];
  snprintf(name, sizeof name, "%s__call%d", b->c.o->prefix, ei);
  /* a few kernels: inlined into the C API wrapper, whose arrays then
   * vanish (what W1's calls measure); GCC refuses to force larger ones */
  g.f = tdb_fn_new(A, p->n_kernels <= 4 ? GCC_JIT_FUNCTION_ALWAYS_INLINE : GCC_JIT_FUNCTION_INTERNAL, A->t_int, name, 4,
                   ts, ps);
  gcc_jit_rvalue *m = gcc_jit_param_as_rvalue(ps[0]), *syms = gcc_jit_param_as_rvalue(ps[2]),
                 *args = gcc_jit_param_as_rvalue(ps[3]);
  g.blk = gcc_jit_function_new_block(g.f, "start");
  g.slow = gcc_jit_function_new_block(g.f, "slow");
  gcc_jit_rvalue *fw[4] = {m, gcc_jit_param_as_rvalue(ps[1]), syms, args};
  gcc_jit_block_end_with_return(g.slow, NULL, gcc_jit_context_new_call(A->ctx, NULL, g.rt_call, 4, fw));
  gcc_jit_type *recp = gcc_jit_type_get_pointer(gcc_jit_struct_as_type(g.st));
  unless(&g, cmp(A, GCC_JIT_COMPARISON_EQ, m, gcc_jit_context_null(A->ctx, A->t_vp)));
  gcc_jit_lvalue *rec = gcc_jit_function_new_local(g.f, NULL, recp, "rec");
  gcc_jit_rvalue *table = gcc_jit_lvalue_as_rvalue(
      gcc_jit_rvalue_dereference(gcc_jit_context_new_cast(A->ctx, NULL, m, gcc_jit_type_get_pointer(recp)), NULL));
  gcc_jit_block_add_assignment(g.blk, NULL, rec,
                               gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(A->ctx, NULL, table,
                                                                                           tdb_ival(A, A->t_int, ei)), NULL));
  g.rec = gcc_jit_lvalue_as_rvalue(rec);
  unless(&g, cmp(A, GCC_JIT_COMPARISON_EQ, fget(&g, 0), tdb_ival(A, A->t_i64, 0)));
  for (int i = 0; i < e->n_args; i++)
    unless(&g, cmp(A, GCC_JIT_COMPARISON_NE, fidx(&g, syms, i), fidx(&g, fget(&g, 6), i)));
  for (int i = 0; i < n_io; i++)
    unless(&g, cmp(A, GCC_JIT_COMPARISON_EQ, fidx(&g, args, i), gcc_jit_context_null(A->ctx, A->t_vp)));
  gcc_jit_lvalue *bufs = gcc_jit_function_new_local(g.f, NULL, A->t_vpp, "bufs");
  gcc_jit_block_add_assignment(g.blk, NULL, bufs, fget(&g, 1));
  for (int i = 0; i < n_io; i++)
    gcc_jit_block_add_assignment(g.blk, NULL,
                                 gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(bufs),
                                                                  fidx(&g, fget(&g, 7), i)),
                                 fidx(&g, args, i));
  gcc_jit_rvalue *me[2] = {m, tdb_ival(A, A->t_int, ei)};
  if (rand) {
    gcc_jit_block_add_eval(g.blk, NULL, gcc_jit_context_new_call(A->ctx, NULL, g.rand, 2, me));
  } else {
    gcc_jit_block_add_assignment_op(g.blk, NULL, gcc_jit_rvalue_dereference(fget(&g, 5), NULL), GCC_JIT_BINARY_OP_PLUS,
                                    tdb_ival(A, A->t_i64, 1));
  }
  /* only a gather (take) can fail inside a kernel: the status slot and
   * its check exist when some kernel has one (W1's calls have none) */
  int checks = 0;
  for (int k = 0; k < p->n_kernels; k++) checks |= checks_indices(p, k);
  gcc_jit_lvalue *st = NULL;
  gcc_jit_block *fail = NULL;
  if (checks) {
    st = gcc_jit_function_new_local(g.f, NULL, i32, "status");
    gcc_jit_block_add_assignment(g.blk, NULL, st, tdb_ival(A, i32, 0));
    fail = gcc_jit_function_new_block(g.f, "index_error");
    gcc_jit_block_end_with_return(fail, NULL, gcc_jit_context_new_call(A->ctx, NULL, g.index_error, 2, me));
  }
  for (int k = 0; k < p->n_kernels; k++) {
    gcc_jit_rvalue *ext = fidx(&g, fget(&g, 8), k);
    gcc_jit_block *run = gcc_jit_function_new_block(g.f, NULL), *next = gcc_jit_function_new_block(g.f, NULL),
                  *ok = gcc_jit_function_new_block(g.f, NULL);
    gcc_jit_block_end_with_conditional(g.blk, NULL, cmp(A, GCC_JIT_COMPARISON_GT, ext, tdb_ival(A, A->t_i64, 0)), run,
                                       next);
    int check = checks_indices(p, k);
    gcc_jit_rvalue *ka[7] = {gcc_jit_lvalue_as_rvalue(bufs), fget(&g, 2), fget(&g, 3),
                             check ? gcc_jit_lvalue_get_address(st, NULL)
                                   : gcc_jit_context_null(A->ctx, gcc_jit_type_get_pointer(i32)),
                             fget(&g, 4), tdb_ival(A, A->t_i64, 0), ext};
    gcc_jit_block_add_eval(run, NULL, gcc_jit_context_new_call(A->ctx, NULL, g.kern[ei][k], 7, ka));
    if (check)
      gcc_jit_block_end_with_conditional(run, NULL, cmp(A, GCC_JIT_COMPARISON_GT, gcc_jit_lvalue_as_rvalue(st),
                                                        tdb_ival(A, i32, 0)), fail, ok);
    else
      gcc_jit_block_end_with_jump(run, NULL, ok);
    gcc_jit_block_end_with_jump(ok, NULL, next);
    g.blk = next;
  }
  gcc_jit_block_end_with_return(g.blk, NULL, tdb_ival(A, A->t_int, 0));
  return g.f;
}

/* The C API (and with is_exe a main) into a new context. */
static gcc_jit_context *api_context(builder *b, int is_exe, const tdb_outs *out) {
  tdb_api A;
  if (tdb_api_init(&A)) return NULL;
  A.desc = tdb_blob(&A, A.t_i64, "tdrt_desc", b->c.w, b->c.n_w * sizeof *b->c.w, sizeof *b->c.w);
  if (!A.desc || tdb_data_symbol(&b->c, &A, out, "tdrt_data")) {
    gcc_jit_context_release(A.ctx);
    return NULL;
  }
  gcc_jit_type *t_call[4] = {A.t_vp, A.t_int, gcc_jit_type_get_pointer(A.t_i64), A.t_vpp};
  gcc_jit_function *rt_call = tdb_import(&A, A.t_int, "tdrt_call", 4, t_call);
  fastgen g;
  gcc_jit_function **calls = td_arena_alloc(b->c.a, (size_t)(b->c.n_e + 1) * sizeof *calls);
  if (!calls || fast_init(&g, b, &A, rt_call)) {
    gcc_jit_context_release(A.ctx);
    return NULL;
  }
  for (int ei = 0; ei < b->c.n_e; ei++) calls[ei] = add_call_fn(b, &g, ei);
  gcc_jit_function *kernels = add_kernel_table(b, &A, g.kern, calls);
  gcc_jit_type *t_load[4] = {A.t_vp, A.t_cp, A.t_vp, A.t_size};
  tdb_add_forward(&b->c, &A, "load_weights", A.t_int, "tdrt_load_weights", 4, t_load);
  tdb_add_forward(&b->c, &A, "free", A.t_void, "tdrt_free", 1, t_load);
  tdb_add_forward(&b->c, &A, "error", A.t_cp, "tdrt_error", 1, t_load);
  gcc_jit_type *t_print[3] = {A.t_vp, A.t_vp, A.t_vp};
  tdb_add_forward(&b->c, &A, "set_print", A.t_void, "tdrt_set_print", 3, t_print);
  gcc_jit_rvalue *fixed[3] = {tdb_addr0(&A, A.desc), A.data,
                              gcc_jit_context_new_cast(A.ctx, NULL, gcc_jit_function_get_address(kernels, NULL), A.t_vp)};
  tdb_add_create(&b->c, &A, "tdrt_create", TDRT_ABI, 3, fixed);
  /* for callers without the header (artifact.h, docs/python.md) */
  tdb_add_create_own(&b->c, &A, "tdrt_create", 3, fixed);
  tdb_add_forward(&b->c, &A, "tdsl_describe", A.t_cp, "tdrt_describe", 1, t_load);
  gcc_jit_type *t_bind[7] = {A.t_vp, A.t_int, A.t_vp, A.t_vp, A.t_vp, A.t_vp, A.t_vp};
  tdb_add_forward(&b->c, &A, "tdsl_bind", A.t_int, "tdrt_bind", 7, t_bind);
  tdb_add_forward(&b->c, &A, "tdsl_call", A.t_int, "tdrt_call_entry", 4, t_call);
  gcc_jit_type *t_param[4] = {A.t_vp, A.t_int, A.t_vp, A.t_size};
  tdb_add_forward(&b->c, &A, "tdsl_get_param", A.t_int, "tdrt_get_param", 4, t_param);
  tdb_add_forward(&b->c, &A, "tdsl_set_param", A.t_int, "tdrt_set_param", 4, t_param);
  tdb_add_forward(&b->c, &A, "tdsl_param_data", A.t_vp, "tdrt_param_data", 2, t_param);
  for (int ei = 0; ei < b->c.n_e; ei++) tdb_add_entry_fn(&b->c, &A, calls[ei] ? calls[ei] : rt_call, ei, "");
  if (is_exe) tdb_add_main(&A, "tdrt_exe_main", 3, fixed);
  for (int ei = 0; ei < b->c.n_e; ei++) each_obj(&b->x[ei].code, add_obj, A.ctx);
  gcc_jit_context_add_driver_option(A.ctx, b->c.o->rt_lib);
  gcc_jit_context_add_driver_option(A.ctx, "-Wl,--exclude-libs,ALL");
  /* the wrappers call the kernels directly, not through the PLT */
  gcc_jit_context_add_driver_option(A.ctx, "-Wl,-Bsymbolic-functions");
  /* the pool's parked threads run the library's code: never unmap it */
  if (!is_exe) gcc_jit_context_add_driver_option(A.ctx, "-Wl,-z,nodelete");
  gcc_jit_context_add_driver_option(A.ctx, "-lm");
  gcc_jit_context_add_driver_option(A.ctx, "-pthread");
  return A.ctx;
}

static int compile_api(builder *b, int is_exe, const tdb_outs *out, const char *path) {
  gcc_jit_context *ctx = api_context(b, is_exe, out);
  if (!ctx) return b->c.err->msg[0] ? -1 : td_err_set(b->c.err, "out of memory");
  return tdb_compile(&b->c, ctx, is_exe, path);
}

/* ---- the header ---- */

static int write_header(builder *b, const char *path) {
  FILE *f = tdb_header_open(&b->c, path);
  if (!f) return -1;
  const char *p = b->c.o->prefix;
  fprintf(f, "/* %s.h - the C API of %s.so, generated by `tdsl build %s`.\n"
             " *\n"
             " * Link with %s.so (or load it); it needs only libc, libm and pthreads.\n"
             " * Calls return 0, or a non-zero code (1 bad argument, 2 index out of\n"
             " * range, 3 out of memory) with %s_error(m) saying why.  Buffers are the\n"
             " * caller's; one call at a time per model (use one model per thread).\n"
             " * See docs/compiler.md, \"Artifacts and their C API\". */\n",
          p, p, b->c.o->source, p, p);
  tdb_header_guard(&b->c, f, TDRT_ABI);
  fprintf(f, "\ntypedef struct %s_model %s_model;\n\n"
             "/* A model with the parameters `tdsl run --seed %llu` initialises (%s); NULL when\n"
             " * the library's ABI is not this header's, the library holds another model\n"
             " * (its signature is not the header's), the CPU lacks the instructions it\n"
             " * was built for (tdsl build --march), an update of its directory by tdsl\n"
             " * build was interrupted, or memory ran out: %s_error(NULL) then says\n"
             " * which, in one sentence. */\n"
             "%s_model *%s_create_abi(int abi, uint64_t sig);\n",
          p, p, (unsigned long long)b->c.o->seed,
          b->c.o->embed_weights ? "stored in the library" : "made from their recipes when it is created", p, p, p);
  char up[128];
  tdb_upper(p, up, sizeof up);
  fprintf(f, "#define %s_create() %s_create_abi(%s_TDSL_ABI, %s_TDSL_SIG)\n"
             "int %s_abi_version(void);\n"
             "/* Loads every parameter from a safetensors file; 0 or -1 with a message. */\n"
             "int %s_load_weights(%s_model *m, const char *path, char *err, size_t errlen);\n"
             "void %s_free(%s_model *m);\n"
             "const char *%s_error(const %s_model *m);\n"
             "/* Where print() inside an entry point goes: fn(ud, text) per printed\n"
             " * line, after each successful call; the default writes to stdout, and\n"
             " * fn NULL drops them. */\n"
             "void %s_set_print(%s_model *m, void (*fn)(void *ud, const char *text), void *ud);\n\n",
          p, p, up, up, p, p, p, p, p, p, p, p, p);
  fprintf(f, "/* For callers that read what the library holds rather than compile\n"
             " * against this header (the Python package: docs/python.md; artifact.h's\n"
             " * tdrt_describe and after it): a model whatever its signature, its\n"
             " * description as JSON (owned by the model), binding an entry's sizes\n"
             " * from its inputs' shapes with tdsl's checks, calling entry e with\n"
             " * its sizes and arrays, and each parameter's values copied out or in. */\n"
             "%s_model *%s_tdsl_new(int abi);\n"
             "const char *%s_tdsl_describe(%s_model *m);\n"
             "int %s_tdsl_bind(%s_model *m, int e, const int *dtypes, const int *ranks, const int64_t *shapes,\n"
             "    int64_t *sizes, int64_t *out_shapes);\n"
             "int %s_tdsl_call(%s_model *m, int e, const int64_t *sizes, void *const *args);\n"
             "int %s_tdsl_get_param(%s_model *m, int i, void *dst, size_t bytes);\n"
             "int %s_tdsl_set_param(%s_model *m, int i, const void *src, size_t bytes);\n"
             "/* Parameter i's own memory in the model (NULL when there is none):\n"
             " * the same address for the model's life, which a training step's call\n"
             " * writes in place.  Read it only: %s_tdsl_set_param changes it (the model\n"
             " * keeps packed copies of some weights). */\n"
             "void *%s_tdsl_param_data(%s_model *m, int i);\n\n",
          p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
  for (int e = 0; e < b->c.n_e; e++) {
    const tdb_entry *en = &b->c.e[e];
    tdb_header_sig(en, f);
    if (en->g->n_updates) {   /* its parameters' names in the artifact (tdsl_describe's) */
      fprintf(f, "\n * A training step: each call updates in place, in the model's own memory,");
      for (int u = 0; u < en->g->n_updates; u++) {
        int i = tdb_param_index(&b->c, en, en->g->nodes[en->g->updates[u].param].name);
        fprintf(f, "%s%s", u % 4 ? ", " : u ? ",\n *   " : "\n *   ", i >= 0 ? b->c.p[i].aname : "?");
      }
      fprintf(f, "\n * (%s_tdsl_get_param and %s_tdsl_param_data read them).", p, p);
    }
    fprintf(f, " */\n");
    tdb_header_proto(&b->c, &b->c.e[e], "", f);
    fprintf(f, "\n");
  }
  return tdb_header_close(&b->c, f, path);
}

/* ---- td_build ---- */

static int build_all(builder *b, td_program *prog, const tdb_outs *out) {
  if (!(b->x = tdb_collect_entries(&b->c, prog, sizeof *b->x))) return -1;
  for (int i = 0; i < b->c.n_e; i++)
    if (build_entry(b, prog, i, out->stage)) return -1;
  if (tdb_pack_params(&b->c, 0, 1) < 0) return -1;
  const char *m = b->march;
  tdb_put_start(&b->c, TDRT_MAGIC, TDRT_ABI,
                !strcmp(m, "x86-64-v4") ? 2 : !strcmp(m, "x86-64-v3") ? 1 : !strcmp(m, "x86-64-v2") ? 0 : -1);
  for (int i = 0; i < b->c.n_e; i++) put_entry(b, i);
  if (b->c.err->msg[0]) return -1;
  if (compile_api(b, 0, out, out->tmp[TDB_SO])) return -1;
  if (b->c.o->exe && compile_api(b, 1, out, out->tmp[TDB_EXE])) return -1;
  if (write_header(b, out->tmp[TDB_H])) return -1;
  return tdb_commit(&b->c, out);
}

int td_build(td_program *prog, const td_build_opts *o, td_err *err) {
  builder b;
  tdb_outs out;
  memset(&b, 0, sizeof b);
  int rc = tdb_begin(&b.c, o, err, &out);
  if (rc == 0) {
    snprintf(b.march, sizeof b.march, "%s", o->march ? o->march : td_detect_march());
    rc = build_all(&b, prog, &out);
  }
  for (int i = 0; b.x && i < b.c.n_e; i++) each_obj(&b.x[i].code, remove_obj, NULL);
  tdb_end(&b.c, &out);
  return rc;
}

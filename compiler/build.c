/* build.c - `tdsl build`: writing a model's artifact (build.h).
 *
 * Per entry point (every one but main): lower, optimise, plan, give the
 * kernels unique names (<prefix>_e<i>_<kernel>) and generate them with
 * tdc_codegen, add a function writing their addresses
 * (<prefix>__kernels_e<i>), and compile that context to an object file.
 * Then one more gccjit context holds the descriptor and parameter bytes
 * (globals with initialisers) and the C API's wrappers, which only pack
 * their arguments and call the runtime (artifact_rt.c); it is compiled to
 * the shared library (and, with exe, once more with a main() to the
 * executable), libgccjit's driver linking the entry objects and
 * libtdsl_rt.a in.  The header is written as text.
 */
#include "build.h"
#include "compiled.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../interp/interp.h"
#include "../lang/mem.h"
#include "artifact.h"
#include "jit_impl.h"
#include "passes.h"

typedef struct bentry {
  const char *name;          /* "Simple.forward" */
  char cname[128];           /* "simple_forward" */
  td_graph *g, *opt;
  td_plan *plan;
  td_tensor **params;        /* per slot of g, initial values */
  cg_dimref *dims;
  int n_dims;
  tdc_kinfo *info;
  int args[TD_MAX_RANK * 8];
  int n_args;
  char obj[1100];
} bentry;

typedef struct bparam {
  const char *name;
  const td_tensor *t;
  int64_t off;
} bparam;

typedef struct builder {
  const td_build_opts *o;
  td_err *err;
  td_arena *a;
  bentry *e;
  int n_e;
  bparam *p;
  int n_p;
  int64_t *w;                /* the descriptor */
  size_t n_w, cap_w;
  unsigned char *data;
  size_t n_data;
  char march[32];
} builder;


/* ---- the descriptor ---- */

static void put(builder *b, int64_t v) {
  if (b->n_w == b->cap_w) {
    size_t cap = b->cap_w ? 2 * b->cap_w : 1024;
    int64_t *w = td_realloc(b->w, cap * sizeof *w);
    if (!w) {
      td_err_set(b->err, "out of memory");
      return;
    }
    b->w = w;
    b->cap_w = cap;
  }
  if (b->n_w < b->cap_w) b->w[b->n_w++] = v;
}

static void put_str(builder *b, const char *s) {
  size_t n = strlen(s);
  put(b, (int64_t)n);
  for (size_t i = 0; i < n; i += 8) {
    int64_t v = 0;
    memcpy(&v, s + i, n - i < 8 ? n - i : 8);
    put(b, v);
  }
}

static size_t tensor_bytes(const td_tensor *t) {
  size_t n = td_dtype_size(t->dtype);
  for (int k = 0; k < t->rank; k++) n *= (size_t)t->shape[k];
  return n;
}

static int param_index(const builder *b, const char *name) {
  for (int i = 0; i < b->n_p; i++)
    if (!strcmp(b->p[i].name, name)) return i;
  return -1;
}

static void put_params(builder *b) {
  put(b, b->n_p);
  for (int i = 0; i < b->n_p; i++) {
    const td_tensor *t = b->p[i].t;
    put_str(b, b->p[i].name);
    put(b, t->dtype);
    put(b, t->rank);
    for (int k = 0; k < t->rank; k++) put(b, t->shape[k]);
    put(b, b->p[i].off);
    put(b, (int64_t)(tensor_bytes(t)));
  }
}

static void put_node_type(builder *b, const td_node *n) {
  put(b, n->dtype);
  put(b, n->rank);
  for (int k = 0; k < n->rank; k++) put(b, n->shape[k]);
}

/* The PRINT nodes: their parts, values named by the buffers holding them
 * (the printed values follow the outputs in plan->out_nodes, each PRINT's
 * inputs in order, as td_compiled_prints reads them). */
static void put_prints(builder *b, const bentry *e) {
  const td_graph *g = e->opt;
  const td_plan *p = e->plan;
  int n = 0, next = g->n_outputs;
  for (int i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == TD_IR_PRINT;
  put(b, n);
  for (int i = 0; i < g->n_nodes; i++) {
    const td_node *nd = &g->nodes[i];
    if (nd->op != TD_IR_PRINT) continue;
    put(b, nd->attr.n_parts);
    for (int k = 0; k < nd->attr.n_parts; k++) {
      const td_print_part *part = &nd->attr.parts[k];
      int at = next + part->input;
      if (part->text || part->input < 0 || at >= p->n_out_nodes) {
        put(b, 0);
        put_str(b, part->text ? part->text : "?");
        continue;
      }
      put(b, 1);
      put(b, p->buf_of[p->out_nodes[at]]);
      put_node_type(b, &g->nodes[p->out_nodes[at]]);
    }
    next += nd->n_in;
  }
}

static void put_entry(builder *b, const bentry *e) {
  const td_graph *g = e->opt;
  const td_plan *p = e->plan;
  put_str(b, e->name);
  put(b, g->n_syms);
  put(b, e->n_args);
  for (int i = 0; i < e->n_args; i++) put(b, e->args[i]);
  put(b, g->n_inputs);
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    put_str(b, n->name ? n->name : "?");
    put_node_type(b, n);
  }
  put(b, g->n_outputs);
  for (int i = 0; i < g->n_outputs; i++) {
    put(b, p->buf_of[p->out_nodes[i]]);
    put_node_type(b, &g->nodes[p->out_nodes[i]]);
  }
  put(b, g->n_dims);
  for (int i = 0; i < g->n_dims; i++) {
    put(b, g->dims[i].n);
    for (int t = 0; t < g->dims[i].n; t++) {
      const td_mono *m = &g->dims[i].t[t];
      put(b, m->coef);
      put(b, m->n);
      for (int k = 0; k < TD_MONO_MAX; k++) put(b, k < m->n ? m->sym[k] : 0);
    }
  }
  put(b, e->g->n_params);
  for (int i = 0; i < e->g->n_params; i++) put(b, param_index(b, e->g->nodes[e->g->params[i]].name));
  put(b, p->n_bufs);
  for (int i = 0; i < p->n_bufs; i++) {
    put(b, p->bufs[i].kind);
    put(b, p->bufs[i].index);
    put(b, p->bufs[i].bytes);
  }
  put(b, p->n_slots);
  for (int i = 0; i < p->n_slots; i++) put(b, p->slot_bytes[i]);
  put(b, e->n_dims);
  for (int i = 0; i < e->n_dims; i++) {
    put(b, e->dims[i].rand_node >= 0);
    put(b, e->dims[i].rand_node >= 0 ? (int64_t)g->nodes[e->dims[i].rand_node].attr.stream : e->dims[i].dim);
  }
  put(b, p->n_kernels);
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
    int64_t v[8] = {e->info[k].parallel, e->info[k].parallel ? e->info[k].extent : 1, kn->bytes_read,
                    kn->bytes_written, kn->flops, scratch, n, kk};
    for (int i = 0; i < 8; i++) put(b, v[i]);
  }
  put_prints(b, e);
}

/* ---- one entry point ---- */

/* The symbols bound by the inputs' plain-symbol axes, in order. */
static int find_args(builder *b, bentry *e) {
  const td_graph *g = e->opt;
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    for (int k = 0; k < n->rank; k++) {
      td_dim d = n->shape[k];
      if (TD_DIM_IS_CONST(d)) continue;
      const td_poly *p = &g->dims[-d - 1];
      if (p->n != 1 || p->t[0].coef != 1 || p->t[0].n != 1) continue;
      int s = p->t[0].sym[0], seen = 0;
      for (int a = 0; a < e->n_args; a++) seen |= e->args[a] == s;
      if (!seen && e->n_args < (int)(sizeof e->args / sizeof *e->args)) e->args[e->n_args++] = s;
    }
  }
  for (int i = 0; i < g->n_inputs; i++) {     /* every symbol of an input must be an argument */
    const td_node *n = &g->nodes[g->inputs[i]];
    for (int k = 0; k < n->rank; k++) {
      if (TD_DIM_IS_CONST(n->shape[k])) continue;
      const td_poly *p = &g->dims[-n->shape[k] - 1];
      for (int t = 0; t < p->n; t++)
        for (int s = 0; s < p->t[t].n; s++) {
          int ok = 0;
          for (int a = 0; a < e->n_args; a++) ok |= e->args[a] == p->t[t].sym[s];
          if (!ok)
            return td_err_set(b->err, "%s: size %s of input '%s' is bound by no axis of its own", e->name,
                              g->syms[p->t[t].sym[s]], n->name ? n->name : "?");
        }
    }
  }
  return 0;
}

static int add_params(builder *b, bentry *e) {
  for (int i = 0; i < e->g->n_params; i++) {
    const char *name = e->g->nodes[e->g->params[i]].name;
    if (param_index(b, name) >= 0) continue;
    bparam *np = td_realloc(b->p, (size_t)(b->n_p + 1) * sizeof *np);
    if (!np) return td_err_set(b->err, "out of memory");
    b->p = np;
    b->p[b->n_p++] = (bparam){name, e->params[i], 0};
  }
  return 0;
}

/* Lowers, optimises, plans and generates entry ei, compiling its kernels
 * into an object file in the output directory. */
static int build_entry(builder *b, td_program *prog, bentry *e, int ei) {
  if (!(e->g = td_program_lower(prog, e->name))) return td_err_set(b->err, "%s does not compile", e->name);
  e->params = td_arena_alloc(b->a, (size_t)(e->g->n_params + 1) * sizeof *e->params);
  if (!e->params) return td_err_set(b->err, "out of memory");
  memset(e->params, 0, (size_t)(e->g->n_params + 1) * sizeof *e->params);
  if (td_make_params(e->g, NULL, b->o->seed, e->params, b->err)) return -1;
  if (td_optimize(e->g, NULL, &e->opt, NULL, b->err) || !(e->plan = td_plan_build(e->opt, b->err))) return -1;
  if (find_args(b, e) || add_params(b, e)) return -1;
  for (int k = 0; k < e->plan->n_kernels; k++) {
    const char *kn = td_arena_printf(b->a, "%s_e%d_%s", b->o->prefix, ei, e->plan->kernels[k].name);
    if (!kn) return td_err_set(b->err, "out of memory");
    e->plan->kernels[k].name = kn;
  }
  e->info = td_arena_alloc(b->a, (size_t)(e->plan->n_kernels + 1) * sizeof *e->info);
  if (!e->info) return td_err_set(b->err, "out of memory");
  gcc_jit_context *ctx = tdc_codegen(e->plan, b->march, 2, b->a, &e->dims, &e->n_dims, e->info, b->err);
  if (!ctx) return -1;
  snprintf(e->obj, sizeof e->obj, "%s/.%s_e%d.o", b->o->dir, b->o->prefix, ei);
  gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_OBJECT_FILE, e->obj);
  const char *msg = gcc_jit_context_get_first_error(ctx);
  int rc = msg ? td_err_set(b->err, "internal compiler error in the kernels of %s: %s", e->name, msg) : 0;
  gcc_jit_context_release(ctx);
  return rc;
}

/* ---- the API context ---- */

typedef struct api {
  gcc_jit_context *ctx;
  gcc_jit_type *t_int, *t_i64, *t_vp, *t_vpp, *t_cp, *t_size, *t_void, *t_kfn;
  gcc_jit_lvalue *desc, *data;
  gcc_jit_function *kernels;
} api;

static gcc_jit_function *fn_new(api *A, enum gcc_jit_function_kind kind, gcc_jit_type *ret, const char *name, int n,
                                gcc_jit_type **types, gcc_jit_param **ps) {
  for (int i = 0; i < n; i++) {
    char pn[16];
    snprintf(pn, sizeof pn, "a%d", i);
    ps[i] = gcc_jit_context_new_param(A->ctx, NULL, types[i], pn);
  }
  return gcc_jit_context_new_function(A->ctx, NULL, kind, ret, name, n, ps, 0);
}

static gcc_jit_rvalue *pv(gcc_jit_param *p) { return gcc_jit_param_as_rvalue(p); }
static gcc_jit_rvalue *ival(api *A, gcc_jit_type *t, long v) { return gcc_jit_context_new_rvalue_from_long(A->ctx, t, v); }

/* Imports the runtime function name(types) -> ret. */
static gcc_jit_function *import(api *A, gcc_jit_type *ret, const char *name, int n, gcc_jit_type **types) {
  gcc_jit_param *ps[8];
  return fn_new(A, GCC_JIT_FUNCTION_IMPORTED, ret, name, n, types, ps);
}

/* A global byte/word array with its initialiser. */
static gcc_jit_lvalue *blob(api *A, gcc_jit_type *elem, const char *name, const void *bytes, size_t n, size_t each) {
  size_t count = n / each ? n / each : 1;
  gcc_jit_type *at = gcc_jit_context_new_array_type(A->ctx, NULL, elem, (int)count);
  gcc_jit_lvalue *g = gcc_jit_context_new_global(A->ctx, NULL, GCC_JIT_GLOBAL_INTERNAL, at, name);
  static const unsigned char zero[8];
  gcc_jit_global_set_initializer(g, n ? bytes : zero, n ? n : each);
  return g;
}

static gcc_jit_rvalue *addr0(api *A, gcc_jit_lvalue *arr) {
  return gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(arr),
                                                                    ival(A, A->t_int, 0)), NULL);
}

/* static void <prefix>__kernels(int e, void **out): the kernels of entry e. */
static void add_kernel_table(builder *b, api *A) {
  gcc_jit_type *ts[2] = {A->t_int, A->t_vpp};
  gcc_jit_param *ps[2];
  char name[200];
  snprintf(name, sizeof name, "%s__kernels", b->o->prefix);
  A->kernels = fn_new(A, GCC_JIT_FUNCTION_INTERNAL, A->t_void, name, 2, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(A->kernels, "start");
  gcc_jit_type *i64 = A->t_i64;
  gcc_jit_type *kt[7] = {A->t_vpp, gcc_jit_type_get_pointer(i64), A->t_vp,
                         gcc_jit_type_get_pointer(gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT32_T)), A->t_vpp,
                         i64, i64};
  for (int ei = 0; ei < b->n_e; ei++) {
    gcc_jit_block *yes = gcc_jit_function_new_block(A->kernels, NULL), *no = gcc_jit_function_new_block(A->kernels, NULL);
    gcc_jit_block_end_with_conditional(
        blk, NULL, gcc_jit_context_new_comparison(A->ctx, NULL, GCC_JIT_COMPARISON_EQ, pv(ps[0]), ival(A, A->t_int, ei)),
        yes, no);
    const td_plan *p = b->e[ei].plan;
    for (int k = 0; k < p->n_kernels; k++) {
      gcc_jit_function *kf = import(A, A->t_void, p->kernels[k].name, 7, kt);
      gcc_jit_lvalue *slot = gcc_jit_context_new_array_access(A->ctx, NULL, pv(ps[1]), ival(A, A->t_int, k));
      gcc_jit_block_add_assignment(yes, NULL, slot,
                                   gcc_jit_context_new_cast(A->ctx, NULL, gcc_jit_function_get_address(kf, NULL), A->t_vp));
    }
    gcc_jit_block_end_with_void_return(yes, NULL);
    blk = no;
  }
  gcc_jit_block_end_with_void_return(blk, NULL);
}

/* int <cname>(void *m, int64_t sym..., void *in..., void *out...) */
static void add_entry_fn(builder *b, api *A, gcc_jit_function *call, int ei) {
  const bentry *e = &b->e[ei];
  int n_io = e->opt->n_inputs + e->opt->n_outputs, n = 1 + e->n_args + n_io;
  gcc_jit_type **ts = td_arena_alloc(b->a, (size_t)n * sizeof *ts);
  gcc_jit_param **ps = td_arena_alloc(b->a, (size_t)n * sizeof *ps);
  if (!ts || !ps) {
    td_err_set(b->err, "out of memory");
    return;
  }
  for (int i = 0; i < n; i++) ts[i] = i > 0 && i <= e->n_args ? A->t_i64 : A->t_vp;
  gcc_jit_function *f = fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_int, e->cname, n, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  gcc_jit_lvalue *syms = gcc_jit_function_new_local(
      f, NULL, gcc_jit_context_new_array_type(A->ctx, NULL, A->t_i64, e->n_args ? e->n_args : 1), "syms");
  gcc_jit_lvalue *args = gcc_jit_function_new_local(
      f, NULL, gcc_jit_context_new_array_type(A->ctx, NULL, A->t_vp, n_io ? n_io : 1), "args");
  for (int i = 0; i < e->n_args; i++)
    gcc_jit_block_add_assignment(blk, NULL, gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(syms), ival(A, A->t_int, i)), pv(ps[1 + i]));
  for (int i = 0; i < n_io; i++)
    gcc_jit_block_add_assignment(blk, NULL, gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_lvalue_as_rvalue(args), ival(A, A->t_int, i)), pv(ps[1 + e->n_args + i]));
  gcc_jit_rvalue *cargs[4] = {pv(ps[0]), ival(A, A->t_int, ei), addr0(A, syms),
                              gcc_jit_context_new_cast(A->ctx, NULL, addr0(A, args), A->t_vpp)};
  cargs[2] = gcc_jit_context_new_cast(A->ctx, NULL, cargs[2], gcc_jit_type_get_pointer(A->t_i64));
  gcc_jit_block_end_with_return(blk, NULL, gcc_jit_context_new_call(A->ctx, NULL, call, 4, cargs));
}

/* A function forwarding its parameters to the runtime function rt. */
static void add_forward(builder *b, api *A, const char *suffix, gcc_jit_type *ret, gcc_jit_function *rt, int n,
                        gcc_jit_type **ts) {
  char name[200];
  gcc_jit_param *ps[8];
  gcc_jit_rvalue *as[8];
  snprintf(name, sizeof name, "%s_%s", b->o->prefix, suffix);
  gcc_jit_function *f = fn_new(A, GCC_JIT_FUNCTION_EXPORTED, ret, name, n, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  for (int i = 0; i < n; i++) as[i] = pv(ps[i]);
  gcc_jit_rvalue *r = gcc_jit_context_new_call(A->ctx, NULL, rt, n, as);
  if (ret == A->t_void) {
    gcc_jit_block_add_eval(blk, NULL, r);
    gcc_jit_block_end_with_void_return(blk, NULL);
  } else {
    gcc_jit_block_end_with_return(blk, NULL, r);
  }
}

/* The C API (and with is_exe a main) into a new context. */
static gcc_jit_context *api_context(builder *b, int is_exe) {
  api A;
  memset(&A, 0, sizeof A);
  A.ctx = gcc_jit_context_acquire();
  if (!A.ctx) return NULL;
  gcc_jit_context_set_bool_print_errors_to_stderr(A.ctx, 0);
  gcc_jit_context_set_int_option(A.ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, 2);
  A.t_int = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_INT);
  A.t_i64 = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_INT64_T);
  A.t_vp = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_VOID_PTR);
  A.t_vpp = gcc_jit_type_get_pointer(A.t_vp);
  A.t_cp = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_CONST_CHAR_PTR);
  A.t_size = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_SIZE_T);
  A.t_void = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_VOID);
  gcc_jit_type *u8 = gcc_jit_context_get_type(A.ctx, GCC_JIT_TYPE_UNSIGNED_CHAR);
  A.desc = blob(&A, A.t_i64, "tdrt_desc", b->w, b->n_w * sizeof *b->w, sizeof *b->w);
  A.data = blob(&A, u8, "tdrt_data", b->data, b->n_data, 1);
  add_kernel_table(b, &A);
  gcc_jit_type *t_create[4] = {A.t_int, A.t_vp, A.t_vp, A.t_vp};
  gcc_jit_function *rt_create = import(&A, A.t_vp, "tdrt_create", 4, t_create);
  gcc_jit_type *t_call[4] = {A.t_vp, A.t_int, gcc_jit_type_get_pointer(A.t_i64), A.t_vpp};
  gcc_jit_function *rt_call = import(&A, A.t_int, "tdrt_call", 4, t_call);
  gcc_jit_type *t_load[4] = {A.t_vp, A.t_cp, A.t_vp, A.t_size};
  add_forward(b, &A, "load_weights", A.t_int, import(&A, A.t_int, "tdrt_load_weights", 4, t_load), 4, t_load);
  add_forward(b, &A, "free", A.t_void, import(&A, A.t_void, "tdrt_free", 1, t_load), 1, t_load);
  add_forward(b, &A, "error", A.t_cp, import(&A, A.t_cp, "tdrt_error", 1, t_load), 1, t_load);
  gcc_jit_type *t_print[3] = {A.t_vp, A.t_vp, A.t_vp};
  add_forward(b, &A, "set_print", A.t_void, import(&A, A.t_void, "tdrt_set_print", 3, t_print), 3, t_print);
  gcc_jit_rvalue *fixed[3] = {gcc_jit_context_new_cast(A.ctx, NULL, addr0(&A, A.desc), A.t_vp),
                              gcc_jit_context_new_cast(A.ctx, NULL, addr0(&A, A.data), A.t_vp),
                              gcc_jit_context_new_cast(A.ctx, NULL, gcc_jit_function_get_address(A.kernels, NULL), A.t_vp)};
  char name[200];
  gcc_jit_param *ps[3];
  snprintf(name, sizeof name, "%s_create_abi", b->o->prefix);   /* create_abi(int abi) */
  gcc_jit_function *f = fn_new(&A, GCC_JIT_FUNCTION_EXPORTED, A.t_vp, name, 1, &A.t_int, ps);
  gcc_jit_rvalue *cargs[4] = {pv(ps[0]), fixed[0], fixed[1], fixed[2]};
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL, gcc_jit_context_new_call(A.ctx, NULL, rt_create, 4, cargs));
  snprintf(name, sizeof name, "%s_abi_version", b->o->prefix);
  f = fn_new(&A, GCC_JIT_FUNCTION_EXPORTED, A.t_int, name, 0, NULL, ps);
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL, ival(&A, A.t_int, TDRT_ABI));
  for (int ei = 0; ei < b->n_e; ei++) add_entry_fn(b, &A, rt_call, ei);
  if (is_exe) {   /* int main(int argc, char **argv) */
    gcc_jit_type *t_main[2] = {A.t_int, A.t_vpp};
    gcc_jit_type *t_em[5] = {A.t_int, A.t_vpp, A.t_vp, A.t_vp, A.t_vp};
    gcc_jit_function *em = import(&A, A.t_int, "tdrt_exe_main", 5, t_em);
    gcc_jit_param *mp[2];
    f = fn_new(&A, GCC_JIT_FUNCTION_EXPORTED, A.t_int, "main", 2, t_main, mp);
    gcc_jit_rvalue *margs[5] = {pv(mp[0]), pv(mp[1]), fixed[0], fixed[1], fixed[2]};
    gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL, gcc_jit_context_new_call(A.ctx, NULL, em, 5, margs));
  }
  for (int ei = 0; ei < b->n_e; ei++) gcc_jit_context_add_driver_option(A.ctx, b->e[ei].obj);
  gcc_jit_context_add_driver_option(A.ctx, b->o->rt_lib);
  gcc_jit_context_add_driver_option(A.ctx, "-Wl,--exclude-libs,ALL");
  /* the pool's parked threads run the library's code: never unmap it */
  if (!is_exe) gcc_jit_context_add_driver_option(A.ctx, "-Wl,-z,nodelete");
  gcc_jit_context_add_driver_option(A.ctx, "-lm");
  gcc_jit_context_add_driver_option(A.ctx, "-pthread");
  return A.ctx;
}

static int compile_api(builder *b, int is_exe, const char *path) {
  gcc_jit_context *ctx = api_context(b, is_exe);
  if (!ctx) return td_err_set(b->err, "out of memory");
  if (b->err->msg[0]) {
    gcc_jit_context_release(ctx);
    return -1;
  }
  gcc_jit_context_compile_to_file(ctx, is_exe ? GCC_JIT_OUTPUT_KIND_EXECUTABLE : GCC_JIT_OUTPUT_KIND_DYNAMIC_LIBRARY, path);
  const char *msg = gcc_jit_context_get_first_error(ctx);
  int rc = msg ? td_err_set(b->err, "cannot link %s: %s", path, msg) : 0;
  gcc_jit_context_release(ctx);
  return rc;
}

/* ---- the header ---- */

static const char *ctype(td_dtype t) {
  switch (t) {
  case TD_BOOL: return "uint8_t";
  case TD_I32: return "int32_t";
  case TD_I64: return "int64_t";
  case TD_F32: return "float";
  default: return "double";
  }
}

static void type_comment(const td_graph *g, const td_node *n, FILE *f) {
  char buf[256];
  fputs(td_type_str(g, n->dtype, n->rank, n->shape, buf, sizeof buf), f);
}

static void header_entry(const builder *b, const bentry *e, FILE *f) {
  const td_graph *g = e->opt;
  const char *pre = b->o->prefix;
  fprintf(f, "/* %s(", e->name);
  for (int i = 0; i < g->n_inputs; i++) {
    fprintf(f, "%s%s: ", i ? ", " : "", g->nodes[g->inputs[i]].name);
    type_comment(g, &g->nodes[g->inputs[i]], f);
  }
  fprintf(f, ") -> (");
  for (int i = 0; i < g->n_outputs; i++) {
    fprintf(f, "%s", i ? ", " : "");
    type_comment(g, &g->nodes[g->outputs[i]], f);
  }
  fprintf(f, ")\n * Arrays are contiguous, row-major; outputs are written. */\nint %s(%s_model *m", e->cname, pre);
  for (int i = 0; i < e->n_args; i++) fprintf(f, ", int64_t %s", g->syms[e->args[i]]);
  for (int i = 0; i < g->n_inputs; i++) {
    const td_node *n = &g->nodes[g->inputs[i]];
    fprintf(f, ", const %s *%s", ctype(n->dtype), n->name);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    if (g->n_outputs == 1) fprintf(f, ", %s *out", ctype(g->nodes[g->outputs[i]].dtype));
    else fprintf(f, ", %s *out%d", ctype(g->nodes[g->outputs[i]].dtype), i);
  }
  fprintf(f, ");\n\n");
}

static int write_header(const builder *b, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return td_err_set(b->err, "cannot write %s: %s", path, strerror(errno));
  const char *p = b->o->prefix;
  char up[128];
  size_t i = 0;
  for (; p[i] && i + 1 < sizeof up; i++) up[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 32 : p[i]);
  up[i] = 0;
  fprintf(f, "/* %s.h - the C API of %s.so, generated by `tdsl build %s`.\n"
             " *\n"
             " * Link with %s.so (or load it); it needs only libc, libm and pthreads.\n"
             " * Calls return 0, or a non-zero code (1 bad argument, 2 index out of\n"
             " * range, 3 out of memory) with %s_error(m) saying why.  Buffers are the\n"
             " * caller's; one call at a time per model (use one model per thread).\n"
             " * See docs/compiler.md, \"Artifacts and their C API\". */\n"
             "#ifndef %s_TDSL_H\n#define %s_TDSL_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
             "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
             "#define %s_TDSL_ABI %d\n\n"
             "typedef struct %s_model %s_model;\n\n"
             "/* A model with the parameters `tdsl run --seed %llu` initialises; NULL when\n"
             " * the library's ABI is not this header's, the CPU lacks the instructions\n"
             " * it was built for (tdsl build --march), or memory ran out. */\n"
             "%s_model *%s_create_abi(int abi);\n"
             "#define %s_create() %s_create_abi(%s_TDSL_ABI)\n"
             "int %s_abi_version(void);\n"
             "/* Loads every parameter from a safetensors file; 0 or -1 with a message. */\n"
             "int %s_load_weights(%s_model *m, const char *path, char *err, size_t errlen);\n"
             "void %s_free(%s_model *m);\n"
             "const char *%s_error(const %s_model *m);\n"
             "/* Where print() inside an entry point goes: fn(ud, text) per printed\n"
             " * line, after each successful call; the default writes to stdout, and\n"
             " * fn NULL drops them. */\n"
             "void %s_set_print(%s_model *m, void (*fn)(void *ud, const char *text), void *ud);\n\n",
          p, p, b->o->source, p, p, up, up, up, TDRT_ABI, p, p, (unsigned long long)b->o->seed, p, p, p, p, up, p, p, p,
          p, p, p, p, p, p);
  for (int e = 0; e < b->n_e; e++) header_entry(b, &b->e[e], f);
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
  return fclose(f) ? td_err_set(b->err, "cannot write %s", path) : 0;
}

/* ---- td_build ---- */

/* C names: the method alone when no two entries share it, else model_method. */
static void name_entries(builder *b) {
  for (int i = 0; i < b->n_e; i++) {
    const char *dot = strrchr(b->e[i].name, '.'), *m = dot ? dot + 1 : b->e[i].name;
    int dup = 0;
    for (int j = 0; j < b->n_e; j++) {
      const char *d2 = strrchr(b->e[j].name, '.');
      dup |= j != i && !strcmp(d2 ? d2 + 1 : b->e[j].name, m);
    }
    snprintf(b->e[i].cname, sizeof b->e[i].cname, "%s_%s", b->o->prefix, dup ? b->e[i].name : m);
    for (char *s = b->e[i].cname; *s; s++)
      if (*s == '.') *s = '_';
      else if (*s >= 'A' && *s <= 'Z') *s = (char)(*s + 32);
  }
}

static int pack_params(builder *b) {
  size_t total = 0;
  for (int i = 0; i < b->n_p; i++) {
    b->p[i].off = (int64_t)total;
    total += (tensor_bytes(b->p[i].t) + 63) & ~(size_t)63;
  }
  b->data = td_calloc(total + 1, 1);
  if (!b->data) return td_err_set(b->err, "out of memory");
  for (int i = 0; i < b->n_p; i++)
    memcpy(b->data + b->p[i].off, b->p[i].t->data, tensor_bytes(b->p[i].t));
  b->n_data = total;
  return 0;
}

static int build_all(builder *b, td_program *prog) {
  const char **names;
  int n = td_program_entries(prog, &names);
  b->e = td_arena_alloc(b->a, (size_t)(n + 1) * sizeof *b->e);
  if (!b->e) return td_err_set(b->err, "out of memory");
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], "main")) {
      memset(&b->e[b->n_e], 0, sizeof *b->e);
      b->e[b->n_e++].name = names[i];
    }
  if (!b->n_e) return td_err_set(b->err, "%s has no entry point to build (only main)", b->o->source);
  name_entries(b);
  for (int i = 0; i < b->n_e; i++)
    if (build_entry(b, prog, &b->e[i], i)) return -1;
  if (pack_params(b)) return -1;
  put(b, TDRT_MAGIC);
  put(b, TDRT_ABI);
  put(b, !strcmp(b->march, "x86-64-v4") ? 2 : !strcmp(b->march, "x86-64-v3") ? 1 : !strcmp(b->march, "x86-64-v2") ? 0 : -1);
  put(b, b->n_e);
  put_params(b);
  for (int i = 0; i < b->n_e; i++) put_entry(b, &b->e[i]);
  if (b->err->msg[0]) return -1;
  char path[1100];
  snprintf(path, sizeof path, "%s/%s.so", b->o->dir, b->o->prefix);
  if (compile_api(b, 0, path)) return -1;
  if (b->o->exe) {
    snprintf(path, sizeof path, "%s/%s", b->o->dir, b->o->prefix);
    if (compile_api(b, 1, path)) return -1;
  }
  snprintf(path, sizeof path, "%s/%s.h", b->o->dir, b->o->prefix);
  return write_header(b, path);
}

int td_build(td_program *prog, const td_build_opts *o, td_err *err) {
  builder b;
  memset(&b, 0, sizeof b);
  b.o = o;
  b.err = err;
  err->msg[0] = 0;
  snprintf(b.march, sizeof b.march, "%s", o->march ? o->march : td_detect_march());
  if (mkdir(o->dir, 0755) && errno != EEXIST) return td_err_set(err, "cannot create %s: %s", o->dir, strerror(errno));
  if (access(o->rt_lib, R_OK)) return td_err_set(err, "the artifact runtime %s is missing (is tdsl installed?)", o->rt_lib);
  if (!(b.a = td_arena_new())) return td_err_set(err, "out of memory");
  int rc = build_all(&b, prog);
  for (int i = 0; i < b.n_e; i++) {
    if (b.e[i].obj[0]) unlink(b.e[i].obj);
    for (int k = 0; b.e[i].g && b.e[i].params && k < b.e[i].g->n_params; k++) td_tensor_release(b.e[i].params[k]);
  }
  td_free(b.w);
  td_free(b.p);
  td_free(b.data);
  td_arena_free(b.a);
  return rc;
}

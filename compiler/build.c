/* build.c - `tdsl build`: writing a model's CPU artifact (build.h).
 *
 * Per entry point (every one but main): lower, optimise, plan
 * (build_common.c, as for CUDA artifacts), give the kernels unique names
 * (<prefix>_e<i>_<kernel>) and generate them with tdc_codegen, and compile
 * that context to an object file.  Then one more gccjit context holds the
 * descriptor and parameter bytes (globals with initialisers), a function
 * writing each entry's kernel addresses, and the C API's wrappers, which
 * only pack their arguments and call the runtime (artifact_rt.c); it is
 * compiled to the shared library (and, with exe, once more with a main()
 * to the executable), libgccjit's driver linking the entry objects and
 * libtdsl_rt.a in.  The header is written as text.  Every output is written
 * under a temporary name and renamed at the end, so a failed build leaves
 * no partial .so, .h or executable behind.
 */
#include "build.h"
#include "compiled.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../gpu/build_cuda.h"
#include "../lang/mem.h"
#include "artifact.h"
#include "build_common.h"
#include "jit_impl.h"

/* What the CPU adds to an entry point (b->c.e[i] is the same entry). */
typedef struct bextra {
  cg_dimref *dims;
  int n_dims;
  tdc_kinfo *info;
  char obj[1100];
} bextra;

typedef struct builder {
  tdb_builder c;
  bextra *x;
  char march[32];
} builder;

/* ---- the descriptor ---- */

static void put_kernels(tdb_builder *b, const tdb_entry *e, const bextra *x) {
  const td_graph *g = e->opt;
  const td_plan *p = e->plan;
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
  }
}

static void put_entry(builder *b, int ei) {
  const tdb_entry *e = &b->c.e[ei];
  const bextra *x = &b->x[ei];
  tdb_put_entry_head(&b->c, e);
  tdb_put(&b->c, x->n_dims);
  for (int i = 0; i < x->n_dims; i++) tdb_put_dv1(&b->c, e, x->dims[i].rand_node, x->dims[i].dim);
  put_kernels(&b->c, e, x);
  tdb_put_prints(&b->c, e);
}

/* ---- one entry point ---- */

/* Lowers, optimises, plans and generates entry ei, compiling its kernels
 * into an object file in the output directory. */
static int build_entry(builder *b, td_program *prog, int ei) {
  tdb_entry *e = &b->c.e[ei];
  bextra *x = &b->x[ei];
  td_err *err = b->c.err;
  if (tdb_lower_entry(&b->c, prog, e)) return -1;
  for (int k = 0; k < e->plan->n_kernels; k++) {
    const char *kn = td_arena_printf(b->c.a, "%s_e%d_%s", b->c.o->prefix, ei, e->plan->kernels[k].name);
    if (!kn) return td_err_set(err, "out of memory");
    e->plan->kernels[k].name = kn;
  }
  x->info = td_arena_alloc(b->c.a, (size_t)(e->plan->n_kernels + 1) * sizeof *x->info);
  if (!x->info) return td_err_set(err, "out of memory");
  gcc_jit_context *ctx = tdc_codegen(e->plan, b->march, 2, b->c.a, &x->dims, &x->n_dims, x->info, err);
  if (!ctx) return -1;
  snprintf(x->obj, sizeof x->obj, "%s/.%s_e%d.o", b->c.o->dir, b->c.o->prefix, ei);
  gcc_jit_context_compile_to_file(ctx, GCC_JIT_OUTPUT_KIND_OBJECT_FILE, x->obj);
  const char *msg = gcc_jit_context_get_first_error(ctx);
  int rc = msg ? td_err_set(err, "internal compiler error in the kernels of %s: %s", e->name, msg) : 0;
  gcc_jit_context_release(ctx);
  return rc;
}

/* ---- the API context ---- */

/* static void <prefix>__kernels(int e, void **out): the kernels of entry e. */
static gcc_jit_function *add_kernel_table(builder *b, tdb_api *A) {
  gcc_jit_type *ts[2] = {A->t_int, A->t_vpp};
  gcc_jit_param *ps[2];
  char name[200];
  snprintf(name, sizeof name, "%s__kernels", b->c.o->prefix);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_INTERNAL, A->t_void, name, 2, ts, ps);
  gcc_jit_block *blk = gcc_jit_function_new_block(f, "start");
  gcc_jit_type *i64 = A->t_i64;
  gcc_jit_type *kt[7] = {A->t_vpp, gcc_jit_type_get_pointer(i64), A->t_vp,
                         gcc_jit_type_get_pointer(gcc_jit_context_get_type(A->ctx, GCC_JIT_TYPE_INT32_T)), A->t_vpp,
                         i64, i64};
  for (int ei = 0; ei < b->c.n_e; ei++) {
    gcc_jit_block *yes = gcc_jit_function_new_block(f, NULL), *no = gcc_jit_function_new_block(f, NULL);
    gcc_jit_block_end_with_conditional(blk, NULL,
                                       gcc_jit_context_new_comparison(A->ctx, NULL, GCC_JIT_COMPARISON_EQ,
                                                                      gcc_jit_param_as_rvalue(ps[0]),
                                                                      tdb_ival(A, A->t_int, ei)),
                                       yes, no);
    const td_plan *p = b->c.e[ei].plan;
    for (int k = 0; k < p->n_kernels; k++) {
      gcc_jit_function *kf = tdb_import(A, A->t_void, p->kernels[k].name, 7, kt);
      gcc_jit_lvalue *slot =
          gcc_jit_context_new_array_access(A->ctx, NULL, gcc_jit_param_as_rvalue(ps[1]), tdb_ival(A, A->t_int, k));
      gcc_jit_block_add_assignment(yes, NULL, slot,
                                   gcc_jit_context_new_cast(A->ctx, NULL, gcc_jit_function_get_address(kf, NULL), A->t_vp));
    }
    gcc_jit_block_end_with_void_return(yes, NULL);
    blk = no;
  }
  gcc_jit_block_end_with_void_return(blk, NULL);
  return f;
}

/* The C API (and with is_exe a main) into a new context. */
static gcc_jit_context *api_context(builder *b, int is_exe) {
  tdb_api A;
  if (tdb_api_init(&A)) return NULL;
  A.desc = tdb_blob(&A, A.t_i64, "tdrt_desc", b->c.w, b->c.n_w * sizeof *b->c.w, sizeof *b->c.w);
  A.data = tdb_blob(&A, A.t_u8, "tdrt_data", b->c.data, b->c.n_data, 1);
  if (!A.desc || !A.data) {
    gcc_jit_context_release(A.ctx);
    return NULL;
  }
  gcc_jit_function *kernels = add_kernel_table(b, &A);
  gcc_jit_type *t_load[4] = {A.t_vp, A.t_cp, A.t_vp, A.t_size};
  tdb_add_forward(&b->c, &A, "load_weights", A.t_int, "tdrt_load_weights", 4, t_load);
  tdb_add_forward(&b->c, &A, "free", A.t_void, "tdrt_free", 1, t_load);
  tdb_add_forward(&b->c, &A, "error", A.t_cp, "tdrt_error", 1, t_load);
  gcc_jit_type *t_print[3] = {A.t_vp, A.t_vp, A.t_vp};
  tdb_add_forward(&b->c, &A, "set_print", A.t_void, "tdrt_set_print", 3, t_print);
  gcc_jit_rvalue *fixed[3] = {tdb_addr0(&A, A.desc), tdb_addr0(&A, A.data),
                              gcc_jit_context_new_cast(A.ctx, NULL, gcc_jit_function_get_address(kernels, NULL), A.t_vp)};
  tdb_add_create(&b->c, &A, "tdrt_create", TDRT_ABI, 3, fixed);
  gcc_jit_type *t_call[4] = {A.t_vp, A.t_int, gcc_jit_type_get_pointer(A.t_i64), A.t_vpp};
  gcc_jit_function *rt_call = tdb_import(&A, A.t_int, "tdrt_call", 4, t_call);
  for (int ei = 0; ei < b->c.n_e; ei++) tdb_add_entry_fn(&b->c, &A, rt_call, ei, "");
  if (is_exe) tdb_add_main(&A, "tdrt_exe_main", 3, fixed);
  for (int ei = 0; ei < b->c.n_e; ei++) gcc_jit_context_add_driver_option(A.ctx, b->x[ei].obj);
  gcc_jit_context_add_driver_option(A.ctx, b->c.o->rt_lib);
  gcc_jit_context_add_driver_option(A.ctx, "-Wl,--exclude-libs,ALL");
  /* the pool's parked threads run the library's code: never unmap it */
  if (!is_exe) gcc_jit_context_add_driver_option(A.ctx, "-Wl,-z,nodelete");
  gcc_jit_context_add_driver_option(A.ctx, "-lm");
  gcc_jit_context_add_driver_option(A.ctx, "-pthread");
  return A.ctx;
}

static int compile_api(builder *b, int is_exe, const char *path) {
  gcc_jit_context *ctx = api_context(b, is_exe);
  if (!ctx) return td_err_set(b->c.err, "out of memory");
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
             "/* A model with the parameters `tdsl run --seed %llu` initialises; NULL when\n"
             " * the library's ABI is not this header's, the CPU lacks the instructions\n"
             " * it was built for (tdsl build --march), or memory ran out. */\n"
             "%s_model *%s_create_abi(int abi);\n",
          p, p, (unsigned long long)b->c.o->seed, p, p);
  char up[128];
  tdb_upper(p, up, sizeof up);
  fprintf(f, "#define %s_create() %s_create_abi(%s_TDSL_ABI)\n"
             "int %s_abi_version(void);\n"
             "/* Loads every parameter from a safetensors file; 0 or -1 with a message. */\n"
             "int %s_load_weights(%s_model *m, const char *path, char *err, size_t errlen);\n"
             "void %s_free(%s_model *m);\n"
             "const char *%s_error(const %s_model *m);\n"
             "/* Where print() inside an entry point goes: fn(ud, text) per printed\n"
             " * line, after each successful call; the default writes to stdout, and\n"
             " * fn NULL drops them. */\n"
             "void %s_set_print(%s_model *m, void (*fn)(void *ud, const char *text), void *ud);\n\n",
          p, p, up, p, p, p, p, p, p, p, p, p);
  for (int e = 0; e < b->c.n_e; e++) {
    tdb_header_sig(&b->c.e[e], f);
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
    if (build_entry(b, prog, i)) return -1;
  if (tdb_pack_params(&b->c, 0, 1) < 0) return -1;
  const char *m = b->march;
  tdb_put_start(&b->c, TDRT_MAGIC, TDRT_ABI,
                !strcmp(m, "x86-64-v4") ? 2 : !strcmp(m, "x86-64-v3") ? 1 : !strcmp(m, "x86-64-v2") ? 0 : -1);
  for (int i = 0; i < b->c.n_e; i++) put_entry(b, i);
  if (b->c.err->msg[0]) return -1;
  if (compile_api(b, 0, out->tmp[TDB_SO])) return -1;
  if (b->c.o->exe && compile_api(b, 1, out->tmp[TDB_EXE])) return -1;
  if (write_header(b, out->tmp[TDB_H])) return -1;
  return tdb_commit(&b->c, out);
}

int td_build(td_program *prog, const td_build_opts *o, td_err *err) {
  if (o->device && strcmp(o->device, "cpu")) {   /* gpu/build_cuda.c */
    if (!strcmp(o->device, "cuda")) return td_build_cuda(prog, o, err);
    return td_err_set(err, "unknown device '%s' (cpu or cuda)", o->device);
  }
  builder b;
  tdb_outs out;
  memset(&b, 0, sizeof b);
  int rc = tdb_begin(&b.c, o, err, &out);
  if (rc == 0) {
    snprintf(b.march, sizeof b.march, "%s", o->march ? o->march : td_detect_march());
    rc = build_all(&b, prog, &out);
  }
  for (int i = 0; b.x && i < b.c.n_e; i++)
    if (b.x[i].obj[0]) unlink(b.x[i].obj);
  tdb_end(&b.c, &out);
  return rc;
}

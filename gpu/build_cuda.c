/* build_cuda.c - `tdsl build --device cuda` (build_cuda.h).
 *
 * Per entry point (every one but main): lower, make the initial
 * parameters, optimise and plan exactly as `tdsl run --device cuda` does
 * (build_common.c, as for CPU artifacts), generate the CUDA module
 * (codegen_cuda.c), and compile it twice with NVRTC: for sm_<arch> (the
 * cubin) and for compute_<arch> (the PTX, which the driver of a newer GPU
 * compiles at load time).  The descriptor (artifact_cuda.h, with each
 * parameter's recipe) becomes an initialised global, and one data blob
 * (with --embed-weights the parameters, then every module's cubin and
 * PTX, each 64-byte aligned) an assembled symbol (tdb_data_symbol), of a
 * libgccjit context that also holds the C API's wrappers (they only pack their arguments and call
 * artifact_cuda.c's tdcu_* functions); that context is compiled into the
 * shared library (and, with exe, once more with a main() into the
 * executable), the driver linking libtdsl_rt.a in.  The header is written
 * as text.  Everything is written into a staging directory and published
 * as a whole at the end (compiler/build_dir.c), so a failed or killed
 * build leaves no partial files.
 * Only what differs from the CPU builder is here: the kernels' part of the
 * descriptor (a scan's body, generated into the entry's module, described
 * as compiler/build.c describes it for CPU artifacts: the host loop of
 * artifact_cuda.c runs it), the modules in the data blob, the _device
 * calls, the stream.
 */
#include "gpu/build_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/build_common.h"
#include "runtime/mem.h"
#include "artifact/artifact_cuda.h"
#include "gpu/codegen_cuda.h"
#include "runtime/cuda_loader.h"

/* NVRTC options of the artifact's modules (runtime_cuda.c's). */
static const char *const rtc_opts[] = {"--fmad=false", "-lineinfo"};
#define N_RTC_OPTS 2

/* What CUDA adds to an entry point (b->c.e[i] is the same entry). */
typedef struct cextra {
  td_cuda_code code;
  char *cubin, *ptx;
  size_t cubin_size, ptx_size;
  int64_t cubin_off, ptx_off;
} cextra;

typedef struct cbuilder {
  tdb_builder c;
  int arch;
  cextra *x;
} cbuilder;

/* ---- the descriptor ---- */

static int put_kernels(tdb_builder *c, const tdb_entry *e, const td_plan *p, const td_cuda_code *code);

/* What the host loop needs of scan kernel k of p (artifact_cuda.h, "per
 * scan"; compiler/build.c's put_scan for CPU artifacts): how the body's
 * inputs and outputs map to p's buffers, then the body as an entry of its
 * own (its plan, runtime table and kernels). */
static int put_scan(tdb_builder *c, const tdb_entry *e, const td_plan *p, int k, const td_cuda_code *body) {
  const td_plan *bp = p->kernels[k].body;
  td_graph *bg = bp->g;
  int id = p->kernels[k].root;
  const td_node *s = &p->g->nodes[id];
  const td_attr *a = &s->attr;
  int nc = a->n_carry, nx = a->n_xs, idx = a->index ? nc + nx : -1;
  for (int i = 0; i < bp->n_bufs; i++)   /* the elaborator refuses them: an internal error */
    if (bp->bufs[i].kind != TD_BUF_INPUT && bp->bufs[i].kind != TD_BUF_OUTPUT && bp->bufs[i].kind != TD_BUF_TEMP)
      return td_err_set(c->err, "internal compiler error in %s: a scan's body reads a parameter", e->name);
  int64_t head[5] = {a->dim, a->reverse, nc, nx, idx};
  for (int i = 0; i < 5; i++) tdb_put(c, head[i]);
  tdb_put(c, bg->n_inputs);
  for (int j = 0; j < bg->n_inputs; j++) {
    int sliced = j >= nc && j < nc + nx;
    tdb_put(c, j == idx ? -1 : p->buf_of[s->in[idx >= 0 && j > idx ? j - 1 : j]]);
    tdb_put(c, sliced);
    tdb_put(c, sliced ? td_node_bytes(bg, &bg->nodes[bg->inputs[j]]) : 0);
  }
  tdb_put(c, bg->n_outputs);
  for (int i = 0; i < bg->n_outputs; i++) {
    int on = bp->out_nodes[i], ob = bp->buf_of[on];
    tdb_put(c, p->buf_of[id + 1 + i]);
    tdb_put(c, ob);
    tdb_put(c, td_node_bytes(bg, &bg->nodes[on]));
    tdb_put(c, ob >= 0 && bp->bufs[ob].kind == TD_BUF_OUTPUT && bp->bufs[ob].index == i);
  }
  tdb_put_plan(c, e, bp);
  tdb_put(c, body->n_dims);
  for (int i = 0; i < body->n_dims; i++) tdb_put_dv1(c, bg, body->dims[i].rand_node, body->dims[i].dim);
  return put_kernels(c, e, bp, body);
}

static int put_kernels(tdb_builder *c, const tdb_entry *e, const td_plan *p, const td_cuda_code *code) {
  tdb_put(c, code->n_kernels);
  for (int k = 0; k < code->n_kernels; k++) {
    const td_cuda_kernel *kn = &code->kernels[k];
    tdb_put_str(c, kn->name);
    int64_t v[6] = {kn->kind, kn->work, kn->kind == TD_KERN_MATMUL ? kn->m : 0,
                    kn->kind == TD_KERN_MATMUL ? kn->n : 0, kn->vec, kn->cols};
    for (int i = 0; i < 6; i++) tdb_put(c, v[i]);
    if (kn->body && put_scan(c, e, p, k, kn->body)) return -1;
  }
  return 0;
}

static int put_entry(cbuilder *b, int ei) {
  const tdb_entry *e = &b->c.e[ei];
  const cextra *x = &b->x[ei];
  tdb_builder *c = &b->c;
  tdb_put_entry_head(c, e);
  tdb_put(c, x->code.n_dims);
  for (int i = 0; i < x->code.n_dims; i++) tdb_put_dv1(c, e->opt, x->code.dims[i].rand_node, x->code.dims[i].dim);
  if (put_kernels(c, e, e->plan, &x->code)) return -1;
  tdb_put_prints(c, e);
  int64_t mods[4] = {x->cubin_off, (int64_t)x->cubin_size, x->ptx_off, (int64_t)x->ptx_size};
  for (int i = 0; i < 4; i++) tdb_put(c, mods[i]);
  return 0;
}

/* ---- one entry point ---- */

/* TDSL_CUDA_TF32=1 at build time: f32 matmuls on TF32 tensor cores, as for
 * `tdsl run --device cuda` (needs sm_80 or later). */
static int want_tf32(int arch) {
  const char *v = getenv("TDSL_CUDA_TF32");
  return v && !strcmp(v, "1") && arch >= 80;
}

/* Lowers, optimises, plans, generates and compiles entry ei. */
static int build_entry(cbuilder *b, td_program *prog, int ei) {
  tdb_entry *e = &b->c.e[ei];
  cextra *x = &b->x[ei];
  td_err *err = b->c.err;
  if (tdb_lower_entry(&b->c, prog, e)) return -1;
  if (td_cuda_codegen(e->plan, b->c.a, want_tf32(b->arch), &x->code, err)) return -1;
  char *log = NULL;
  int rc = td_nvrtc_compile(x->code.src, e->name, b->arch, rtc_opts, N_RTC_OPTS, &x->cubin, &x->cubin_size, &log, err);
  td_free(log);
  log = NULL;
  if (!rc)
    rc = td_nvrtc_compile_ptx(x->code.src, e->name, b->arch, rtc_opts, N_RTC_OPTS, &x->ptx, &x->ptx_size, &log, err);
  td_free(log);
  return rc;
}

/* ---- the data blob ---- */

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Parameters, then each entry's cubin and PTX (with its NUL). */
static int pack_data(cbuilder *b) {
  size_t mods = 0;
  for (int i = 0; i < b->c.n_e; i++) mods += up64(b->x[i].cubin_size) + up64(b->x[i].ptx_size + 1);
  int64_t at = tdb_pack_params(&b->c, mods, 64);
  if (at < 0) return -1;
  for (int i = 0; i < b->c.n_e; i++) {
    cextra *x = &b->x[i];
    x->cubin_off = at;
    at += (int64_t)up64(x->cubin_size);
    x->ptx_off = at;
    at += (int64_t)up64(x->ptx_size + 1);
    memcpy(b->c.data + x->cubin_off, x->cubin, x->cubin_size);
    memcpy(b->c.data + x->ptx_off, x->ptx, x->ptx_size);
  }
  return 0;
}

/* ---- the API context ---- */

static void add_api(cbuilder *b, tdb_api *A, int is_exe) {
  tdb_builder *c = &b->c;
  gcc_jit_type *t_load[4] = {A->t_vp, A->t_cp, A->t_vp, A->t_size};
  tdb_add_forward(c, A, "load_weights", A->t_int, "tdcu_load_weights", 4, t_load);
  tdb_add_forward(c, A, "free", A->t_void, "tdcu_free", 1, t_load);
  tdb_add_forward(c, A, "error", A->t_cp, "tdcu_error", 1, t_load);
  tdb_add_forward(c, A, "stream", A->t_vp, "tdcu_stream", 1, t_load);
  tdb_add_forward(c, A, "synchronize", A->t_int, "tdcu_synchronize", 1, t_load);
  gcc_jit_type *t_print[3] = {A->t_vp, A->t_vp, A->t_vp};
  tdb_add_forward(c, A, "set_print", A->t_void, "tdcu_set_print", 3, t_print);
  gcc_jit_rvalue *fixed[2] = {tdb_addr0(A, A->desc), A->data};
  tdb_add_create(c, A, "tdcu_create", TDCU_ABI, 2, fixed);
  char name[200];
  gcc_jit_param *ps[1];
  snprintf(name, sizeof name, "%s_cuda_arch", c->o->prefix);
  gcc_jit_function *f = tdb_fn_new(A, GCC_JIT_FUNCTION_EXPORTED, A->t_int, name, 0, NULL, ps);
  gcc_jit_block_end_with_return(gcc_jit_function_new_block(f, "start"), NULL, tdb_ival(A, A->t_int, b->arch));
  gcc_jit_type *t_call[4] = {A->t_vp, A->t_int, gcc_jit_type_get_pointer(A->t_i64), A->t_vpp};
  gcc_jit_function *call = tdb_import(A, A->t_int, "tdcu_call", 4, t_call);
  gcc_jit_function *call_dev = tdb_import(A, A->t_int, "tdcu_call_device", 4, t_call);
  for (int ei = 0; ei < c->n_e; ei++) {
    tdb_add_entry_fn(c, A, call, ei, "");
    tdb_add_entry_fn(c, A, call_dev, ei, "_device");
  }
  if (is_exe) tdb_add_main(A, "tdcu_exe_main", 2, fixed);
}

static int compile_api(cbuilder *b, int is_exe, const tdb_outs *out, const char *path) {
  tdb_api A;
  if (tdb_api_init(&A)) return td_err_set(b->c.err, "out of memory");
  A.desc = tdb_blob(&A, A.t_i64, "tdcu_desc", b->c.w, b->c.n_w * sizeof *b->c.w, 8);
  /* 64-byte aligned: the cubins inside the data are ELF images */
  if (!A.desc || tdb_data_symbol(&b->c, &A, out, "tdcu_data")) {
    gcc_jit_context_release(A.ctx);
    return b->c.err->msg[0] ? -1 : td_err_set(b->c.err, "out of memory");
  }
  add_api(b, &A, is_exe);
  gcc_jit_context_add_driver_option(A.ctx, b->c.o->rt_lib);
  gcc_jit_context_add_driver_option(A.ctx, "-Wl,--exclude-libs,ALL");
  gcc_jit_context_add_driver_option(A.ctx, "-lm");
  gcc_jit_context_add_driver_option(A.ctx, "-ldl");
  gcc_jit_context_add_driver_option(A.ctx, "-pthread");
  return tdb_compile(&b->c, A.ctx, is_exe, path);
}

/* ---- the header ---- */

static void header_entry(const cbuilder *b, const tdb_entry *e, FILE *f) {
  tdb_header_sig(e, f);
  fprintf(f, "\n"
             " * %s: host pointers; copies in, runs, copies out, waits.\n"
             " * %s_device: device pointers (CUdeviceptr cast to a pointer, or\n"
             " * cudaMalloc'd memory of this GPU); only enqueues on %s_stream(m). */\n",
          e->cname, e->cname, b->c.o->prefix);
  tdb_header_proto(&b->c, e, "", f);
  tdb_header_proto(&b->c, e, "_device", f);
  fprintf(f, "\n");
}

static void header_common(const cbuilder *b, FILE *f) {
  const char *p = b->c.o->prefix;
  char up[128];
  tdb_upper(p, up, sizeof up);
  fprintf(f, "/* %s.h - the C API of %s.so, generated by `tdsl build %s --device cuda`\n"
             " * (kernels for sm_%d as a cubin, and as PTX for newer GPUs).\n"
             " *\n"
             " * Link with %s.so (or load it).  At run time it needs libc, libm, libdl and\n"
             " * the NVIDIA driver (libcuda.so.1); not the CUDA toolkit.  The model runs\n"
             " * on GPU $TDSL_CUDA_DEVICE (default 0), in its primary context, on one\n"
             " * stream of its own.  Calls return 0, or a non-zero code (1 bad argument,\n"
             " * 2 index out of range, 3 out of memory, 5 a CUDA call failed) with\n"
             " * %s_error(m) saying why.  One call at a time per model.\n"
             " * See docs/gpu.md, \"tdsl build --device cuda\". */\n",
          p, p, b->c.o->source, b->arch, p, p);
  tdb_header_guard(&b->c, f, TDCU_ABI);
  fprintf(f, "#define %s_TDSL_CUDA 1\n\ntypedef struct %s_model %s_model;\n\n", up, p, p);
  fprintf(f, "/* A model with the parameters `tdsl run --seed %llu` initialises, uploaded\n"
             " * to the GPU.  NULL when there is no driver or GPU, the kernels do not\n"
             " * load on it, the ABI differs, the library holds another model (its\n"
             " * signature is not the header's), an update of its directory by tdsl\n"
             " * build was interrupted or memory ran out: %s_error(NULL) then\n"
             " * says which, in one sentence. */\n"
             "%s_model *%s_create_abi(int abi, uint64_t sig);\n"
             "#define %s_create() %s_create_abi(%s_TDSL_ABI, %s_TDSL_SIG)\n"
             "int %s_abi_version(void);\n"
             "/* The architecture the cubin is for (90: sm_90). */\n"
             "int %s_cuda_arch(void);\n"
             "/* Loads every parameter from a safetensors file (to the GPU); 0 or -1. */\n"
             "int %s_load_weights(%s_model *m, const char *path, char *err, size_t errlen);\n"
             "/* Waits for the model's stream, then frees everything. */\n"
             "void %s_free(%s_model *m);\n"
             "/* The last failure of m; m NULL: of the last failed create (this thread). */\n"
             "const char *%s_error(const %s_model *m);\n"
             "/* Where print() inside an entry point goes: fn(ud, text) per printed\n"
             " * line; the default writes to stdout, fn NULL drops them.  Host-pointer\n"
             " * calls print before returning; device-pointer calls at the next\n"
             " * %s_synchronize (or the next call, which then waits). */\n"
             "void %s_set_print(%s_model *m, void (*fn)(void *ud, const char *text), void *ud);\n"
             "/* The model's stream (a CUstream / cudaStream_t): order your own work\n"
             " * with the _device calls through it (events, cudaStreamWaitEvent). */\n"
             "void *%s_stream(const %s_model *m);\n"
             "/* Waits for every call enqueued; reports an index out of range of any\n"
             " * of them (code 2) and emits their print() output.  0 or a code. */\n"
             "int %s_synchronize(%s_model *m);\n\n",
          (unsigned long long)b->c.o->seed, p, p, p, p, p, up, up, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
}

static int write_header(cbuilder *b, const char *path) {
  FILE *f = tdb_header_open(&b->c, path);
  if (!f) return -1;
  header_common(b, f);
  for (int e = 0; e < b->c.n_e; e++) header_entry(b, &b->c.e[e], f);
  return tdb_header_close(&b->c, f, path);
}

/* ---- td_build_cuda ---- */

static int build_all(cbuilder *b, td_program *prog, const tdb_outs *out) {
  if (!(b->x = tdb_collect_entries(&b->c, prog, sizeof *b->x))) return -1;
  for (int i = 0; i < b->c.n_e; i++)
    if (build_entry(b, prog, i)) return -1;
  if (pack_data(b)) return -1;
  tdb_put_start(&b->c, TDCU_MAGIC, TDCU_ABI, b->arch);
  for (int i = 0; i < b->c.n_e; i++)
    if (put_entry(b, i)) return -1;
  if (b->c.err->msg[0]) return -1;
  if (compile_api(b, 0, out, out->tmp[TDB_SO]) || write_header(b, out->tmp[TDB_H])) return -1;
  if (b->c.o->exe && compile_api(b, 1, out, out->tmp[TDB_EXE])) return -1;
  return tdb_commit(&b->c, out);
}

/* "sm_90" -> 90; -1 when not of the form sm_<digits>. */
static int parse_arch(const char *s) {
  if (!s || strncmp(s, "sm_", 3) || !s[3]) return -1;
  int v = 0;
  for (const char *c = s + 3; *c; c++) {
    if (*c < '0' || *c > '9' || v > 10000) return -1;
    v = v * 10 + (*c - '0');
  }
  return v >= 10 ? v : -1;
}

int td_cuda_default_arch(char *why, size_t n) {
  td_err err;
  const td_cuda_api *cu = td_cuda_load_driver(&err);
  int major = 0, minor = 0, ordinal = 0;
  const char *env = getenv("TDSL_CUDA_DEVICE");
  if (env && *env) ordinal = atoi(env);
  td_cu_device d;
  char name[128] = "";
  if (!cu) {
    const char *colon = strchr(err.msg, ':');   /* "no CUDA driver (libcuda.so.1 not found)" */
    snprintf(why, n, "no GPU here: %.*s", colon ? (int)(colon - err.msg) : (int)strlen(err.msg), err.msg);
    return 90;
  }
  if (cu->cuDeviceGet(&d, ordinal) || cu->cuDeviceGetAttribute(&major, TD_CU_ATTR_CC_MAJOR, d) ||
      cu->cuDeviceGetAttribute(&minor, TD_CU_ATTR_CC_MINOR, d)) {
    snprintf(why, n, "GPU %d cannot be queried", ordinal);
    return 90;
  }
  if (cu->cuDeviceGetName(name, (int)sizeof name, d)) name[0] = 0;
  snprintf(why, n, "the architecture of GPU %d, %s", ordinal, name[0] ? name : "?");
  return major * 10 + minor;
}

int td_build_cuda(td_program *prog, const td_build_opts *o, td_err *err) {
  int arch = o->cuda_arch ? parse_arch(o->cuda_arch) : 90;
  if (arch < 0)
    return td_err_set(err, "--arch must name a real GPU architecture as sm_<major><minor> (sm_90 for the H200), "
                           "got '%s'", o->cuda_arch);
  if (!td_cuda_load_nvrtc(err)) {
    td_err e2 = *err;
    return td_err_set(err, "--device cuda needs NVRTC to compile the kernels: %s", e2.msg);
  }
  cbuilder b;
  tdb_outs out;
  memset(&b, 0, sizeof b);
  int rc = tdb_begin(&b.c, o, err, &out);
  b.arch = arch;
  if (rc == 0) rc = build_all(&b, prog, &out);
  for (int i = 0; b.x && i < b.c.n_e; i++) {
    td_cuda_code_free(&b.x[i].code);
    td_free(b.x[i].cubin);
    td_free(b.x[i].ptx);
  }
  tdb_end(&b.c, &out);
  return rc;
}

/* test_gpu_nvrtc.c - the CUDA backend without a GPU.
 *
 *   - every entry point of every program under examples/ and tests/lang/
 *     that type-checks is optimised, planned and turned into a CUDA module
 *     (gpu/codegen_cuda*.c), and the module compiles with NVRTC for sm_90
 *     (the H200) with no errors; ptxas' report (--ptxas-options=-v) must
 *     show no spill stores or loads for any kernel;
 *   - f16/bf16 matmuls read the 16-bit buffers and use m16n8k16 mma.sync
 *     (found in the PTX);
 *   - the generated text has the structure docs/gpu.md promises (kernel
 *     names from the plan, warp shuffles in reductions, shared-memory tiles
 *     in matmuls, a grid-stride loop in pointwise kernels);
 *   - `tdsl run --device cuda` on a machine without the driver fails with
 *     one sentence naming what is missing and exit code 1, after printing
 *     the module for --dump=cuda; `tdsl explain --device cuda` works;
 *   - the kernels of every `fn main` program, compiled as C++ with an
 *     emulation of CUDA's threads, barriers and warp shuffles and run on the
 *     CPU, produce what the CPU compiler produces for the same plan, bit for
 *     bit where the exactness contract promises it (gpu_promised; see
 *     "running the generated kernels on the CPU" below), and so do the
 *     tensor-core matmuls (TF32 m16n8k8, f16/bf16 m16n8k16) with an
 *     emulation of mma.sync's fragment exchange;
 *   - programs with scans (tests/lang/scan, examples) are compiled and
 *     emulated too: each scan's body kernels are in the module under their
 *     s<k>_ names, and the emulation runs them once per step from a loop
 *     written here (runtime_cuda.c's and artifact_cuda.c's own host loops
 *     run under the stand-in driver in test_gpu_build.c).
 * Tests that need NVRTC are skipped, with the reason printed, when it is
 * not installed; the driver test is skipped where a driver exists.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "gpu/codegen_cuda.h"
#include "runtime/cuda_loader.h"
#include "lang/elab.h"
#include "interp/interp.h"
#include "runtime/mem.h"
#include "runtime/philox.h"
#include "cuda_emu_shim.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif
#ifndef TDSL_BIN
#define TDSL_BIN "tdsl"
#endif

/* ---- collecting programs ---- */

typedef struct files {
  char **path;
  int n, cap;
} files;

static void add_file(files *f, const char *path) {
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->path = realloc(f->path, (size_t)f->cap * sizeof *f->path);
    cr_assert(f->path);
  }
  f->path[f->n++] = strdup(path);
}

static void walk(files *f, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = strlen(e->d_name);
    if (n > 3 && !strcmp(e->d_name + n - 3, ".td")) add_file(f, path);
    else walk(f, path);
  }
  closedir(d);
}

/* ---- one module ---- */

typedef struct stats {
  int entries, kernels, modules, spill_reports, tf32, half, scans;
  int kinds[4];
} stats;

/* Checks every "N bytes spill stores, M bytes spill loads" line is 0, 0;
 * returns how many such lines the log has. */
static int check_spills(const char *log, const char *what) {
  int n = 0;
  for (const char *p = strstr(log, "spill stores"); p; p = strstr(p + 1, "spill stores")) {
    const char *line = p;
    while (line > log && line[-1] != '\n') line--;
    unsigned st = 1, ld = 1;
    const char *q = strstr(line, "bytes stack frame, ");
    cr_assert(q, "%s: unexpected ptxas line", what);
    cr_assert_eq(sscanf(q, "bytes stack frame, %u bytes spill stores, %u bytes spill loads", &st, &ld), 2,
                 "%s: unexpected ptxas line", what);
    cr_expect(st == 0 && ld == 0, "%s: a kernel spills registers (%u bytes stored, %u loaded):\n%s", what, st, ld, log);
    n++;
  }
  return n;
}

/* Every function of code (a scan's body's, named after the scan) is in
 * the module src; counts them by kind into s and returns how many. */
static int expect_functions(const td_plan *plan, const td_cuda_code *code, const char *src, const char *what,
                            stats *s) {
  int n = 0;
  cr_assert_eq(code->n_kernels, plan->n_kernels);
  for (int k = 0; k < plan->n_kernels; k++) {
    if (plan->kernels[k].kind == TD_KERN_SCAN) {
      cr_assert(code->kernels[k].body, "%s: scan kernel %s has no body code", what, plan->kernels[k].name);
      n += expect_functions(plan->kernels[k].body, code->kernels[k].body, src, what, s);
      s->scans++;
      continue;
    }
    char head[512];
    snprintf(head, sizeof head, "__global__ void __launch_bounds__(%d, 2)\n%s(", TD_CUDA_BLOCK, code->kernels[k].name);
    cr_expect(strstr(src, head), "%s: no kernel named %s", what, code->kernels[k].name);
    s->kinds[plan->kernels[k].kind]++;
    n++;
  }
  return n;
}

/* Generates and compiles the module of one entry point; with tf32, only
 * when the plan has a matmul (the TF32 variant of the same module). */
static void compile_entry(td_program *p, const char *file, const char *entry, td_arena *a, int tf32, stats *s) {
  td_graph *g0 = td_program_lower(p, entry);
  if (!g0) return;   /* an error test: nothing to compile */
  td_err err;
  /* a training step's updates are outputs, as the driver runs it */
  const td_graph *g = td_graph_with_update_outputs(g0, 0, &err);
  td_graph *opt;
  td_plan *plan = NULL;
  if (!g || td_optimize(g, NULL, &opt, NULL, &err) || !(plan = td_plan_build(opt, &err))) return;  /* the CPU compiler refuses it too */
  int has_mm = 0;
  for (int k = 0; k < plan->n_kernels; k++) has_mm |= plan->kernels[k].kind == TD_KERN_MATMUL;
  if (tf32 && !has_mm) return;
  if (td_plan_scan_print(plan)) {   /* said, not silent: CUDA refuses it (scan::cuda_refuses_a_print_in_a_step) */
    fprintf(stderr, "%s %s: not compiled for CUDA: it prints inside a scan's step\n", file, entry);
    return;
  }
  td_cuda_code code;
  cr_assert_eq(td_cuda_codegen(plan, a, tf32, &code, &err), 0, "%s %s: CUDA codegen failed: %s", file, entry, err.msg);
  char what[1024];
  snprintf(what, sizeof what, "%s:%s%s", file, entry, tf32 ? " (tf32)" : "");
  int nfn = expect_functions(plan, &code, code.src, what, s);
  char *cubin = NULL, *log = NULL;
  size_t size = 0;
  const char *opts[] = {"--ptxas-options=-v", "--fmad=false"};
  int rc = td_nvrtc_compile(code.src, what, 90, opts, 2, &cubin, &size, &log, &err);
  cr_expect_eq(rc, 0, "%s", err.msg);
  if (!rc) {
    cr_expect_gt(size, 0);
    int n = check_spills(log ? log : "", what);
    cr_expect(n >= nfn, "%s: ptxas reported on %d functions for %d kernels:\n%s", what, n, nfn, log ? log : "");
    s->spill_reports += n;
  }
  s->entries++;
  s->kernels += nfn;
  s->modules += !rc;
  s->tf32 += tf32 && strstr(code.src, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
  s->half += !tf32 && (strstr(code.src, "td_mma_bf16(acc") || strstr(code.src, "td_mma_f16(acc"));
  td_free(cubin);
  td_free(log);
  td_cuda_code_free(&code);
}

static void compile_file(const char *path, stats *s) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
  if (!td_program_load_file(p, path)) {
    const char **names;
    int n = td_program_entries(p, &names);
    for (int i = 0; i < n; i++) {
      compile_entry(p, path, names[i], a, 0, s);
      compile_entry(p, path, names[i], a, 1, s);
    }
  }
  td_arena_free(a);
}

static int have_nvrtc(void) {
  td_err err;
  if (td_cuda_load_nvrtc(&err)) return 1;
  cr_log_warn("skipped: %s", err.msg);
  fprintf(stderr, "test_gpu_nvrtc: skipped: %s\n", err.msg);
  return 0;
}

/* 1800 s: the programs with scans run now (examples/generate.td's main,
 * with its unrolled reference decoder, is a module of 600 kernels, a CPU
 * minute of NVRTC per variant); on two busy cores this takes 10+ min. */
Test(gpu_nvrtc, every_program_compiles_for_sm90_without_spills, .timeout = 1800) {
  if (!have_nvrtc()) cr_skip_test("NVRTC (the CUDA toolkit) is not installed");
  files f = {0};
  walk(&f, TDSL_SRCDIR "/examples");
  walk(&f, TDSL_SRCDIR "/tests/lang");
  cr_assert_gt(f.n, 10, "found only %d programs", f.n);
  stats s = {0};
  for (int i = 0; i < f.n; i++) {
    compile_file(f.path[i], &s);
    free(f.path[i]);
  }
  free(f.path);
  fprintf(stderr, "test_gpu_nvrtc: %d modules (%d with TF32 matmuls, %d with f16/bf16 ones), %d kernels (%d pointwise, %d reduce, %d matmul), "
                  "%d scans, %d compiled, %d ptxas reports\n",
          s.entries, s.tf32, s.half, s.kernels, s.kinds[TD_KERN_POINTWISE], s.kinds[TD_KERN_REDUCE], s.kinds[TD_KERN_MATMUL],
          s.scans, s.modules, s.spill_reports);
  cr_expect_eq(s.modules, s.entries);
  cr_expect_gt(s.entries, 20);
  cr_expect_gt(s.kinds[TD_KERN_REDUCE], 0);
  cr_expect_gt(s.kinds[TD_KERN_MATMUL], 0);
  cr_expect_gt(s.tf32, 5);
  cr_expect_geq(s.half, 2, "tests/lang/ops/matmul_bf16.td and matmul_f16.td use f16/bf16 tensor cores");
  cr_expect_geq(s.scans, 10, "the scans of tests/lang/scan and examples compile with their bodies' kernels");
}

/* ---- the structure of the generated code ---- */

static char *module_of(const char *src, const char *entry, td_arena *a, td_plan **planp) {
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
  cr_assert_eq(td_program_load_text(p, "t.td", src), 0);
  td_graph *g = td_program_lower(p, entry);
  cr_assert(g);
  td_err err;
  td_graph *opt;
  cr_assert_eq(td_optimize(g, NULL, &opt, NULL, &err), 0, "%s", err.msg);
  td_plan *plan = td_plan_build(opt, &err);
  cr_assert(plan, "%s", err.msg);
  td_cuda_code code;
  cr_assert_eq(td_cuda_codegen(plan, a, 0, &code, &err), 0, "%s", err.msg);
  char *s = td_arena_strdup(a, code.src);
  td_cuda_code_free(&code);
  *planp = plan;
  return s;
}

/* The generated kernels of module m: after the prelude every module shares
 * (runtime/scalar.h, whose f32 transcendentals use fmaf, Philox...). */
static const char *kernels_of(const char *m) {
  const char *k = strstr(m, "extern \"C\" __global__");
  cr_assert(k, "no kernel in the module");
  return k;
}

Test(gpu_codegen, kernel_shapes) {
  td_arena *a = td_arena_new();
  td_plan *plan;
  const char *src = "import nn\n"
                    "fn main() {\n"
                    "  let x = randn([64, 32], seed=1);\n"
                    "  let w = randn([32, 16], seed=2);\n"
                    "  let h = relu(x @ w + 1.0);\n"
                    "  let s = nn.softmax(h, axis=-1);\n"
                    "  print(sum(s, axis=1));\n"
                    "}\n";
  char *m = module_of(src, "main", a, &plan);
  int kinds[4] = {0};
  for (int k = 0; k < plan->n_kernels; k++) kinds[plan->kernels[k].kind]++;
  cr_expect_gt(kinds[TD_KERN_MATMUL], 0);
  cr_expect_gt(kinds[TD_KERN_REDUCE], 0);
  cr_expect(strstr(m, "__shfl_down_sync"), "reductions combine lanes with warp shuffles");
  cr_expect(strstr(m, "__shared__ float As[16][64 + 1]"), "matmul tiles in shared memory");
  cr_expect(strstr(kernels_of(m), "fmaf("), "f32 matmul accumulates with fmaf");
  cr_expect(strstr(m, "td_philox_words"), "random numbers use Philox");
  cr_expect(strstr(m, "0xD2511F53u") && strstr(m, "0xCD9E8D57u") && strstr(m, "0x9E3779B9u") &&
                strstr(m, "0xBB67AE85u"),
            "the Philox4x32 constants");
  cr_expect(strstr(m, "TD_SCALAR_FN float td_gelu_f32"), "runtime/scalar.h is compiled into the module");
  td_arena_free(a);
}

Test(gpu_codegen, pointwise_grid_stride) {
  td_arena *a = td_arena_new();
  td_plan *plan;
  char *m = module_of("fn main() {\n  let x = arange(10);\n  print(x * 2 + 1);\n}\n", "main", a, &plan);
  cr_expect(strstr(m, "t += (int64_t)gridDim.x * blockDim.x"), "pointwise kernels use grid-stride loops");
  cr_expect(!strstr(m, "float4"), "i64 kernels are not vectorised");
  m = module_of("fn f(x: f32[N], y: f32[N]) {\n  relu(x * 2.0 + y)\n}\n", "f", a, &plan);
  cr_expect(strstr(m, "const float4 Lb0 = ((const float4 *)b0)[q];"), "16-byte loads:\n%s", strstr(m, "k0_"));
  cr_expect(strstr(m, "((float4 *)b2)[q] = o;"), "16-byte stores");
  cr_expect(strstr(m, "t = d0 / 4 * 4 + "), "a scalar loop does the rest");
  td_arena_free(a);
}

/* bf16/f16 operands that are buffers (inputs, parameters, outputs) are read
 * as 16-bit values by the matmul kernel, which computes with m16n8k16
 * mma.sync (in the PTX NVRTC makes for sm_90); the kernels that widened them
 * to f32 temporaries do nothing.  Mixed operands keep the f32 path. */
Test(gpu_nvrtc, half_matmuls_use_tensor_cores) {
  td_arena *a = td_arena_new();
  td_plan *plan;
  static const char *const type[] = {"bf16", "f16"};
  for (int t = 0; t < 2; t++) {
    char src[1024], want[128];
    snprintf(src, sizeof src,
             "fn f(x: %s[N, 96], w: %s[80, 96], v: %s[96, 80], b: f32[80]) -> %s[N, 80] {\n"
             "  %s(relu(x @ w.T + b)) + x @ v\n"
             "}\n"
             "fn mixed(x: %s[N, 96], w: f32[80, 96]) -> f32[N, 80] {\n"
             "  x @ w.T\n"
             "}\n",
             type[t], type[t], type[t], type[t], type[t], type[t]);
    char *m = module_of(src, "f", a, &plan);
    snprintf(want, sizeof want, "td_mma_%s(acc", type[t]);
    const char *p = m;
    int calls = 0;
    while ((p = strstr(p, want))) calls++, p++;
    cr_expect_eq(calls, 2, "both matmuls on %s tensor cores:\n%s", type[t], m);
    p = m;
    int elided = 0;
    while ((p = strstr(p, "every reader of this f32 copy reads the"))) elided++, p++;
    cr_expect_eq(elided, 3, "the three widening casts do nothing:\n%s", m);
    cr_expect(strstr(m, "__shared__ __align__(16) uint16_t As[64][32 + 8]"), "16-bit tiles");
    cr_expect(!strstr(kernels_of(m), "fmaf("), "no FMA matmul");
    if (have_nvrtc()) {
      char *ptx = NULL, *log = NULL;
      size_t size = 0;
      td_err err;
      const char *opts[] = {"--fmad=false"};
      cr_assert_eq(td_nvrtc_compile_ptx(m, "half.cu", 90, opts, 1, &ptx, &size, &log, &err), 0, "%s", err.msg);
      snprintf(want, sizeof want, "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32", type[t], type[t]);
      cr_expect(strstr(ptx, want), "the PTX has %s", want);
      td_free(ptx);
      td_free(log);
    }
    m = module_of(src, "mixed", a, &plan);
    cr_expect(!strstr(m, "td_mma_") && strstr(kernels_of(m), "fmaf(") && !strstr(m, "every reader"),
              "a %s @ f32 product keeps the f32 path:\n%s", type[t], m);
  }
  td_arena_free(a);
}

/* ---- the command line without a driver ---- */

static int run_cmd(const char *cmd, char *out, size_t n, int *code) {
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t len = fread(out, 1, n - 1, f);
  out[len] = 0;
  int st = pclose(f);
  *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return 0;
}

Test(gpu_cli, no_driver_is_one_clear_error) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    dlclose(lib);
    cr_skip_test("a CUDA driver is installed here");
  }
  static char out[1 << 20];
  int code = 0;
  cr_assert_eq(run_cmd(TDSL_BIN " run " TDSL_SRCDIR "/examples/mlp.td --device cuda 2>&1", out, sizeof out, &code), 0);
  cr_expect_eq(code, 1, "exit code %d; output:\n%s", code, out);
  cr_expect(strstr(out, "error: no CUDA driver (libcuda.so.1 not found)"), "output:\n%s", out);
  cr_expect_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line expected:\n%s", out);
  cr_assert_eq(run_cmd(TDSL_BIN " run " TDSL_SRCDIR "/examples/mlp.td --device cuda --dump=cuda 2>/dev/null", out,
                       sizeof out, &code), 0);
  cr_expect_eq(code, 1);
  cr_expect(strstr(out, "extern \"C\" __global__"), "--dump=cuda prints the module first:\n%.500s", out);
  cr_assert_eq(run_cmd(TDSL_BIN " explain " TDSL_SRCDIR "/examples/mlp.td --device cuda 2>&1", out, sizeof out, &code),
               0);
  cr_expect_eq(code, 0, "explain --device cuda needs no GPU:\n%s", out);
  cr_expect(strstr(out, "CUDA: main (7 kernels in one module"), "%s", out);
  cr_expect(strstr(out, "k1_matmul_add_relu           matmul   grid (ceil(512/64), ceil(4/64), 1)"), "%s", out);
  cr_expect(strstr(out, "reduce   one block of 256 threads per row"), "%s", out);
  cr_assert_eq(run_cmd(TDSL_BIN " run " TDSL_SRCDIR "/examples/mlp.td --device tpu 2>&1", out, sizeof out, &code), 0);
  cr_expect_eq(code, 2, "a bad --device is a usage error");
}

/* A compile error names the module and carries NVRTC's log. */
Test(gpu_nvrtc, compile_errors_carry_the_log) {
  if (!have_nvrtc()) cr_skip_test("NVRTC (the CUDA toolkit) is not installed");
  char *cubin = NULL, *log = NULL;
  size_t size = 0;
  td_err err;
  const char *src = "extern \"C\" __global__ void k(float *a) { a[0] = undefined_name; }\n";
  cr_assert_eq(td_nvrtc_compile(src, "broken.cu", 90, NULL, 0, &cubin, &size, &log, &err), -1);
  cr_expect(strstr(err.msg, "NVRTC could not compile broken.cu"), "%s", err.msg);
  cr_expect(strstr(err.msg, "undefined_name"), "the log is in the message: %s", err.msg);
  cr_expect_null(cubin);
  td_free(log);
}

/* ---- running the generated kernels on the CPU ----
 *
 * Without a GPU the kernels' arithmetic can still be checked: the module is
 * compiled as C++ by the host compiler with a small emulation of the CUDA
 * execution model (each block's 256 threads are POSIX threads, __syncthreads
 * a barrier, __shfl_down_sync an exchange through a per-warp slot array
 * between two barriers, __shared__ variables statics since blocks run one
 * after the other), every kernel of the plan is launched on small grids
 * (the kernels are grid-stride, so any grid covers the work), and the plan's
 * outputs and printed values must agree with the CPU compiler's run of the
 * same plan.  Skipped when there is no C++ compiler. */

/* the shim: cuda_emu_shim.h */

typedef void (*emu_kfn)(void *const *, const int64_t *, int *);
typedef int (*emu_launch_fn)(emu_kfn, unsigned, unsigned, unsigned, void *const *, const int64_t *, int *);

static int have_cxx(void) {
  if (system("c++ --version >/dev/null 2>&1") == 0) return 1;
  cr_log_warn("skipped: no C++ compiler (c++) to emulate the kernels with");
  fprintf(stderr, "test_gpu_nvrtc: skipped: no C++ compiler (c++) to emulate the kernels with\n");
  return 0;
}

/* Compiles the module with the shim into a shared object; its handle. */
static void *emu_build(const char *src, const char *tag) {
  char cpp[512], so[512], cmd[1400];
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(cpp, sizeof cpp, "%s/tdsl_emu_%d_%s.cpp", tmp, (int)getpid(), tag);
  snprintf(so, sizeof so, "%s/tdsl_emu_%d_%s.so", tmp, (int)getpid(), tag);
  FILE *f = fopen(cpp, "w");
  cr_assert(f);
  fputs(emu_shim, f);
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -shared -fPIC -pthread -o %s %s 2>&1", so, cpp);
  int rc = system(cmd);
  cr_assert_eq(rc, 0, "the emulated module does not compile (%s)", cpp);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert(h, "%s", dlerror());
  remove(cpp);
  remove(so);
  return h;
}

static unsigned cap(int64_t n, int64_t c) { return (unsigned)(n < 1 ? 1 : n > c ? c : n); }

/* A run of the emulated kernels: the module, the sizes, and inside scan
 * bodies the step of each scan (random streams are mixed with them as
 * compiled.c mixes them; the call index is 0). */
typedef struct emu_ctx {
  void *h;
  emu_launch_fn launch;
  int64_t symvals[64];
  int64_t steps[16];
  int depth;
  int status;
} emu_ctx;

static int emu_kernels(emu_ctx *x, const td_plan *plan, const td_cuda_code *code, void **bufs);

/* The runtime table of code at the context's sizes and steps. */
static void emu_table(emu_ctx *x, const td_graph *g, const td_cuda_code *code, int64_t *dv) {
  for (int i = 0; i < code->n_dims; i++) {
    const td_cuda_dimref *d = &code->dims[i];
    if (d->rand_node >= 0) {
      uint64_t s = g->nodes[d->rand_node].attr.stream;
      for (int k = 0; k < x->depth; k++) s = td_hash_mix(s, (uint64_t)x->steps[k] + 1);
      memcpy(&dv[i], &s, sizeof s);
    } else dv[i] = td_dim_eval(g, d->dim, x->symvals);
  }
}

static size_t emu_bytes(emu_ctx *x, const td_graph *g, int n) {
  const td_node *nd = &g->nodes[n];
  size_t b = td_dtype_size(nd->dtype);
  for (int k = 0; k < nd->rank; k++) b *= (size_t)td_dim_eval(g, nd->shape[k], x->symvals);
  return b;
}

/* Scan kernel k of plan (buffers bufs) with its body's emulated kernels,
 * written here as a loop over the steps independently of the runtimes'
 * host loops: every body buffer and carry gets memory of its own, the
 * carries are copied from step to step, the step's slices are copied in
 * and its outputs out.  0, or -1 when a body is too big to emulate. */
static int emu_scan(emu_ctx *x, const td_plan *plan, int k, const td_cuda_code *body, void **bufs) {
  const td_plan *bp = plan->kernels[k].body;
  const td_graph *bg = bp->g;
  int id = plan->kernels[k].root;
  const td_attr *a = &plan->g->nodes[id].attr;
  int nc = a->n_carry, nx = a->n_xs, idx = a->index ? nc + nx : -1, ni = bg->n_inputs, no = bg->n_outputs;
  int64_t T = td_dim_eval(plan->g, a->dim, x->symvals);
  cr_assert_geq(T, 0);
  cr_assert_lt(x->depth, 16);
  void **bb = calloc((size_t)bp->n_bufs + 1, sizeof *bb), **carry = calloc((size_t)nc + 1, sizeof *carry);
  cr_assert(bb && carry);
  for (int i = 0; i < bp->n_bufs; i++) bb[i] = calloc(emu_bytes(x, bg, bp->bufs[i].node) + 8, 1);
  for (int i = 0; i < nc; i++) {
    size_t n = emu_bytes(x, bg, bg->inputs[i]);
    carry[i] = malloc(n + 8);
    memcpy(carry[i], bufs[plan->buf_of[plan->g->nodes[id].in[i]]], n);
  }
  int rc = 0;
  for (int64_t st = 0; st < T && !rc; st++) {
    int64_t t = a->reverse ? T - 1 - st : st;
    for (int i = 0; i < bp->n_bufs; i++) {   /* the step's inputs, copied in */
      const td_buffer *u = &bp->bufs[i];
      if (u->kind != TD_BUF_INPUT) continue;
      int j = u->index;
      size_t n = emu_bytes(x, bg, u->node);
      const char *src = j < nc ? carry[j] : j == idx ? (const char *)&t
                      : (const char *)bufs[plan->buf_of[plan->g->nodes[id].in[idx >= 0 && j > idx ? j - 1 : j]]] +
                            (j < nc + nx ? (size_t)t * n : 0);
      memcpy(bb[i], src, n);
    }
    x->steps[x->depth++] = t;
    rc = emu_kernels(x, bp, body, bb);
    x->depth--;
    for (int i = 0; i < no && !rc; i++) {   /* the step's outputs, copied out */
      size_t n = emu_bytes(x, bg, bp->out_nodes[i]);
      const void *v = bb[bp->buf_of[bp->out_nodes[i]]];
      if (i < nc) memcpy(carry[i], v, n);
      else memcpy((char *)bufs[plan->buf_of[id + 1 + i]] + (size_t)t * n, v, n);
    }
  }
  for (int i = 0; i < nc && !rc; i++)
    memcpy(bufs[plan->buf_of[id + 1 + i]], carry[i], emu_bytes(x, bg, bg->inputs[i]));
  (void)ni;
  for (int i = 0; i < bp->n_bufs; i++) free(bb[i]);
  for (int i = 0; i < nc; i++) free(carry[i]);
  free(bb);
  free(carry);
  return rc;
}

/* Launches code's kernels (a scan's: its body, per step) on small grids. */
static int emu_kernels(emu_ctx *x, const td_plan *plan, const td_cuda_code *code, void **bufs) {
  const td_graph *g = plan->g;
  int rc = 0;
  int64_t *dv = calloc((size_t)code->n_dims + 1, sizeof *dv);
  emu_table(x, g, code, dv);
  for (int k = 0; k < code->n_kernels && !rc; k++) {
    const td_cuda_kernel *kn = &code->kernels[k];
    if (kn->body) {
      rc = emu_scan(x, plan, k, kn->body, bufs);
      continue;
    }
    emu_kfn fn = (emu_kfn)dlsym(x->h, kn->name);
    cr_assert(fn, "no symbol %s", kn->name);
    int64_t work = td_dim_eval(g, kn->work, x->symvals);
    unsigned gx = 1, gy = 1, gz = 1;
    if (kn->kind == TD_KERN_MATMUL) {
      int64_t m = td_dim_eval(g, kn->m, x->symvals), n = td_dim_eval(g, kn->n, x->symvals);
      gx = cap((n + 63) / 64, 1 << 30);
      gy = cap((m + 63) / 64, 1 << 30);
      gz = cap(work, 2);
      if ((int64_t)gx * gy * gz > 24) rc = -1;
    } else if (kn->kind == TD_KERN_REDUCE) gx = kn->cols ? cap((work + 255) / 256, 2) : cap(work, 3);
    else gx = cap((work + 255) / 256, 2);
    if (!rc) cr_assert_eq(x->launch(fn, gx, gy, gz, bufs, dv, &x->status), 0);
  }
  free(dv);
  return rc;
}

/* Runs the plan's kernels in the emulator; fills outs (one tensor per
 * out node, host buffers of the plan) and returns 0, or -1 when the plan
 * is too big to emulate quickly. */
static int emu_run(const td_plan *plan, const td_cuda_code *code, void *h, td_tensor *const *params,
                   td_tensor **outs) {
  const td_graph *g = plan->g;
  emu_ctx x;
  memset(&x, 0, sizeof x);
  x.h = h;
  td_err err;
  cr_assert_lt(g->n_syms, 64);
  cr_assert_eq(td_bind_inputs(g, NULL, 0, x.symvals, &err), 0, "%s", err.msg);
  void **bufs = calloc((size_t)plan->n_bufs + 1, sizeof *bufs);
  td_tensor **own = calloc((size_t)plan->n_bufs + 1, sizeof *own);
  for (int i = 0; i < plan->n_bufs; i++) {
    const td_buffer *b = &plan->bufs[i];
    const td_node *nd = &g->nodes[b->node];
    if (b->kind == TD_BUF_PARAM) { bufs[i] = params[b->index]->data; continue; }
    int64_t shape[TD_MAX_RANK];
    for (int k = 0; k < nd->rank; k++) shape[k] = td_dim_eval(g, nd->shape[k], x.symvals);
    own[i] = td_tensor_zeros(nd->dtype, nd->rank, shape, &err);
    cr_assert(own[i], "%s", err.msg);
    bufs[i] = own[i]->data;
  }
  x.launch = (emu_launch_fn)dlsym(h, "td_emu_launch");
  cr_assert(x.launch);
  int rc = emu_kernels(&x, plan, code, bufs);
  for (int i = 0; i < plan->n_out_nodes; i++) {
    int b = plan->buf_of[plan->out_nodes[i]];
    outs[i] = own[b] ? td_tensor_retain(own[b]) : td_tensor_retain(params[plan->bufs[b].index]);
  }
  for (int i = 0; i < plan->n_bufs; i++) td_tensor_release(own[i]);
  free(bufs);
  free(own);
  return rc;
}

/* Does docs/compiler.md's contract promise node n of g the same bits on
 * the GPU as on the CPU?  Elementwise chains (runtime/scalar.h's formulas
 * compiled with --fmad=false), except where CUDA's math library stands in
 * for glibc's (sin, cos, pow, the f64 transcendentals, randn's log and
 * cos); not reductions (a block sums in another order) or matmuls.
 * memo[n]: 0 unknown, 1 yes, 2 no. */
static int gpu_promised(const td_graph *g, int n, char *memo) {
  if (memo[n]) return memo[n] == 1;
  const td_node *nd = &g->nodes[n];
  td_op op = nd->op;
  /* a scan's outputs: whatever its body computes (not looked into) */
  int ok = td_ops[op].kind != TD_K_REDUCE && op != TD_IR_MATMUL && op != TD_IR_RANDN && op != TD_IR_SIN &&
           op != TD_IR_COS && op != TD_IR_POW && op != TD_IR_SCAN && op != TD_IR_SCAN_OUT;
  if (ok && nd->dtype == TD_F64)
    ok = op != TD_IR_EXP && op != TD_IR_LOG && op != TD_IR_TANH && op != TD_IR_ERF && op != TD_IR_SIGMOID &&
         op != TD_IR_SILU && op != TD_IR_GELU;
  for (int k = 0; k < nd->n_in && ok; k++) ok = gpu_promised(g, nd->in[k], memo);
  memo[n] = ok ? 1 : 2;
  return ok;
}

/* |got - want| <= tol * max|want| (reductions sum in another order; tol
 * is 1e-4, or 4e-3 for TF32 matmuls, whose operands keep 11 significant
 * bits); tol 0: the same bits (any NaN for a NaN). */
static void expect_close(const td_tensor *got, const td_tensor *want, const char *what, int i, double tol) {
  cr_assert_eq(got->numel, want->numel);
  if (tol == 0) {
    size_t es = td_dtype_size(want->dtype);
    for (int64_t e = 0; e < want->numel; e++) {
      double a = td_tensor_get(got, e), b = td_tensor_get(want, e);
      if (memcmp((const char *)got->data + e * (int64_t)es, (const char *)want->data + e * (int64_t)es, es) &&
          !(isnan(a) && isnan(b))) {
        cr_expect(0, "%s: output %d element %lld: emulated GPU %.9g, CPU %.9g, not the same bits", what, i,
                  (long long)e, a, b);
        return;
      }
    }
    return;
  }
  double m = 0;
  for (int64_t e = 0; e < want->numel; e++) {
    double v = fabs(td_tensor_get(want, e));
    if (isfinite(v) && v > m) m = v;
  }
  for (int64_t e = 0; e < want->numel; e++) {
    double a = td_tensor_get(got, e), b = td_tensor_get(want, e);
    if ((isnan(a) && isnan(b)) || a == b) continue;
    if (!td_dtype_is_float(want->dtype) || isinf(b)) {
      cr_expect(0, "%s: output %d element %lld: emulated GPU %g, CPU %g", what, i, (long long)e, a, b);
      return;
    }
    if (!(fabs(a - b) <= tol * (m > 1 ? m : 1))) {
      cr_expect(0, "%s: output %d element %lld: emulated GPU %.9g, CPU %.9g", what, i, (long long)e, a, b);
      return;
    }
  }
}

/* Emulates the kernels of path's `fn main` (with tf32: the TF32 variant,
 * only when the plan has a matmul) and compares them with the CPU
 * compiler; counts the programs run in *ran.  *src_out (if not NULL)
 * receives a copy of the module (caller frees). */
static int emu_file(const char *path, int tf32, int *ran, char **src_out) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  td_program_add_search_dir(p, TDSL_SRCDIR "/stdlib");
  const td_graph *g = NULL;
  td_err err;
  if (!td_program_load_file(p, path)) g = td_program_lower(p, "main");
  if (g) g = td_graph_with_update_outputs(g, 0, &err);   /* a step's updates as outputs */
  td_graph *opt;
  td_plan *plan = NULL;
  if (!g || g->n_inputs || g->n_params > 64 || td_optimize(g, NULL, &opt, NULL, &err) ||
      !(plan = td_plan_build(opt, &err))) {
    td_arena_free(a);
    return 0;
  }
  td_tensor *params[64] = {0};
  td_tensor **want = NULL;
  td_compile_opts co = {-1, 0, NULL, 0};
  td_compiled *cc = NULL;
  if (td_make_params(opt, NULL, 0, params, &err) || !(cc = td_compile(plan, &co, &err)) ||
      td_compiled_run(cc, NULL, params, 0, &want, &err, NULL)) {
    td_compiled_free(cc);
    for (int i = 0; i < opt->n_params; i++) td_tensor_release(params[i]);
    td_arena_free(a);
    return 0;   /* a runtime error on the CPU too (tested elsewhere) */
  }
  int has_mm = 0;
  for (int k = 0; k < plan->n_kernels; k++) has_mm |= plan->kernels[k].kind == TD_KERN_MATMUL;
  td_cuda_code code = {0};
  int prints = td_plan_scan_print(plan) != NULL;   /* CUDA refuses a print in a scan's step: said, not silent */
  if (prints) fprintf(stderr, "%s: not emulated: it prints inside a scan's step, which CUDA refuses\n", path);
  if ((tf32 && !has_mm) || prints || td_cuda_codegen(plan, a, tf32, &code, &err)) {
    cr_expect((tf32 && !has_mm) || prints, "%s: CUDA codegen failed: %s", path, err.msg);
    for (int i = 0; i < plan->n_out_nodes; i++) td_tensor_release(want[i]);
    td_free(want);
    td_compiled_free(cc);
    for (int i = 0; i < opt->n_params; i++) td_tensor_release(params[i]);
    td_arena_free(a);
    return 0;
  }
  if (src_out) *src_out = strdup(code.src);
  char tag[32];
  snprintf(tag, sizeof tag, "%d", *ran);
  void *h = emu_build(code.src, tag);
  td_tensor **got = calloc((size_t)plan->n_out_nodes + 1, sizeof *got);
  if (emu_run(plan, &code, h, params, got) == 0) {
    char *memo = td_arena_alloc(a, (size_t)plan->g->n_nodes + 1);
    cr_assert(memo);
    memset(memo, 0, (size_t)plan->g->n_nodes + 1);
    for (int i = 0; i < plan->n_out_nodes; i++)
      expect_close(got[i], want[i], path, i, gpu_promised(plan->g, plan->out_nodes[i], memo) ? 0 : tf32 ? 4e-3 : 1e-4);
    (*ran)++;
  }
  for (int i = 0; i < plan->n_out_nodes; i++) {
    td_tensor_release(got[i]);
    td_tensor_release(want[i]);
  }
  free(got);
  td_free(want);
  dlclose(h);
  td_cuda_code_free(&code);
  td_compiled_free(cc);
  for (int i = 0; i < opt->n_params; i++) td_tensor_release(params[i]);
  td_arena_free(a);
  return 0;
}

/* Reductions over leading axes (the column mode of reduce kernels). */
static const char cols_program[] = "import nn\n"
                                   "fn main() {\n"
                                   "  let x = randn([37, 100], seed = 3)\n"
                                   "  print(sum(x, axis = 0))\n"
                                   "  print(argmax(x, axis = 0))\n"
                                   "  print(max(x, axis = 0) - min(x, axis = 0))\n"
                                   "  print(nn.softmax(x, axis = 0))\n"
                                   "  let y = randn([5, 3, 70], seed = 4)\n"
                                   "  print(sum(y, axis = 1))\n"
                                   "}\n";

Test(gpu_codegen, column_reductions) {
  td_arena *a = td_arena_new();
  td_plan *plan;
  char *m = module_of(cols_program, "main", a, &plan);
  cr_expect(strstr(m, "for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < 100LL;"),
            "a thread per column:\n%s", strstr(m, "k1_"));
  td_arena_free(a);
}

/* rand and nn.dropout keyed by seed tensors (one folded to a constant,
 * one the max of other random numbers, exact in any order): the kernels
 * read the key from the seed's buffer, NVRTC compiles them (where it is
 * installed), and emulated they give the CPU compiler's bits. */
static const char seeded_program[] = "import nn\n"
                                     "fn main() {\n"
                                     "  let k = i64(full([], 7)) * 3 + 1\n"
                                     "  let s = i64(max(rand([5], seed = 2)) * 100000.0)\n"
                                     "  let x = randn([33, 70], seed = 3)\n"
                                     "  print(rand([1000], seed = k), rand([3, 70], seed = i32(s)))\n"
                                     "  print(nn.dropout(x, 0.3, s) + nn.dropout(x, 0.5, k))\n"
                                     "}\n";

/* Writes a program's text to a temporary file tdsl_emu_TAG_PID.td, for
 * emu_file and compile_file, which read files. */
static void write_program(char *path, size_t n, const char *tag, const char *text) {
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path, n, "%s/tdsl_emu_%s_%d.td", tmp, tag, (int)getpid());
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(text, f);
  fclose(f);
}

Test(gpu_emu, seed_tensors_agree_with_the_cpu_compiler, .timeout = 300) {
  char path[512];
  write_program(path, sizeof path, "seed", seeded_program);
  td_arena *a = td_arena_new();
  td_plan *plan;
  char *m = module_of(seeded_program, "main", a, &plan);
  cr_expect(strstr(kernels_of(m), "td_rand_uniform((uint64_t)(int64_t)b"), "the key is read from a buffer:\n%s",
            kernels_of(m));
  td_arena_free(a);
  if (have_nvrtc()) {
    stats s = {0};
    compile_file(path, &s);
    cr_expect_eq(s.modules, s.entries, "NVRTC compiles the module");
  }
  if (have_cxx()) {
    int ran = 0;
    emu_file(path, 0, &ran, NULL);
    cr_expect_eq(ran, 1, "the program's kernels were emulated");
  }
  remove(path);
}

Test(gpu_emu, kernels_agree_with_the_cpu_compiler, .timeout = 900) {
  if (!have_cxx()) cr_skip_test("no C++ compiler");
  files f = {0};
  walk(&f, TDSL_SRCDIR "/examples");
  walk(&f, TDSL_SRCDIR "/tests/lang");
  char cols[512];
  write_program(cols, sizeof cols, "cols", cols_program);
  int before = 0;
  emu_file(cols, 0, &before, NULL);
  remove(cols);
  cr_expect_eq(before, 1, "the column-reduction program ran");
  int ran = before;
  for (int i = 0; i < f.n; i++) {
    emu_file(f.path[i], 0, &ran, NULL);
    free(f.path[i]);
  }
  free(f.path);
  fprintf(stderr, "test_gpu_nvrtc: %d programs' kernels emulated and compared\n", ran);
  cr_expect_gt(ran, 20);
}

/* f16/bf16 operand views: broadcast batch axes on either side, a sliced and
 * transposed A (unit stride along M), K not a multiple of the 32-deep
 * panel, several blocks in each direction. */
static const char half_views_program[] = "fn main() {\n"
                                         "  let x = bf16(randn([2, 70, 40], seed = 1))\n"
                                         "  let w = bf16(randn([40, 66], seed = 2))\n"
                                         "  let v = bf16(randn([50, 70], seed = 3))\n"
                                         "  print(x)\n"
                                         "  print(w)\n"
                                         "  print(v)\n"
                                         "  print(x @ w)\n"
                                         "  print(v @ x)\n"
                                         "  print(x[1].T @ v.T)\n"
                                         "  let h = f16(randn([33, 20], seed = 4))\n"
                                         "  print(h)\n"
                                         "  print(h @ h.T)\n"
                                         "  print(h.T @ h)\n"
                                         "}\n";

/* Matmuls on tensor cores, emulated (the mma.sync fragments of the PTX ISA,
 * cuda_emu_shim.h): bf16 and f16 operands read as 16-bit values with
 * m16n8k16 (always on where both operands are buffers of the same half
 * type), and f32 matmuls with TDSL_CUDA_TF32's m16n8k8. */
Test(gpu_emu, tensor_core_matmuls_agree_with_the_cpu_compiler, .timeout = 600) {
  if (!have_cxx()) cr_skip_test("no C++ compiler");
  static const char *const half[] = {"matmul_bf16", "matmul_f16"};
  int ran = 0;
  char path[1024], *src = NULL;
  for (int i = 0; i < 2; i++) {
    src = NULL;
    snprintf(path, sizeof path, "%s/tests/lang/ops/%s.td", TDSL_SRCDIR, half[i]);
    emu_file(path, 0, &ran, &src);
    cr_assert(src, "%s: no module", path);
    const char *call = i ? "td_mma_f16(acc" : "td_mma_bf16(acc";
    cr_expect(strstr(src, call), "%s: the matmuls use %s", path, call);
    cr_expect(strstr(src, "every reader of this f32 copy reads the"), "%s: the widening casts are elided", path);
    free(src);
  }
  src = NULL;
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path, sizeof path, "%s/tdsl_emu_half_%d.td", tmp, (int)getpid());
  FILE *hf = fopen(path, "w");
  cr_assert(hf);
  fputs(half_views_program, hf);
  fclose(hf);
  emu_file(path, 0, &ran, &src);
  remove(path);
  const char *p = src;
  int calls = 0;
  while (p && (p = strstr(p, "(acc[2 * mt + nt], af[mt], bf[nt])"))) calls++, p++;
  cr_expect_eq(calls, 5, "every product of the views on tensor cores:\n%s", src ? src : "");
  free(src);
  cr_expect_eq(ran, 3);
  static const char *const f32[] = {"matmul_2d", "matmul_batched", "matmul_vector"};
  for (int i = 0; i < 3; i++) {
    src = NULL;
    snprintf(path, sizeof path, "%s/tests/lang/ops/%s.td", TDSL_SRCDIR, f32[i]);
    emu_file(path, 1, &ran, &src);
    cr_expect(src && strstr(src, "td_mma_tf32(acc"), "%s: TF32 mma", path);
    free(src);
  }
  src = NULL;
  emu_file(TDSL_SRCDIR "/examples/mlp.td", 1, &ran, &src);
  cr_expect(src && strstr(src, "td_mma_tf32(acc"), "mlp.td: TF32 mma");
  free(src);
  cr_expect_eq(ran, 7, "every program ran (%d)", ran);
}

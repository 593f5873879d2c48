/* test_gpu_nvrtc.c - the CUDA backend without a GPU.
 *
 *   - every entry point of every program under examples/ and tests/lang/
 *     that type-checks is optimised, planned and turned into a CUDA module
 *     (gpu/codegen_cuda.c), and the module compiles with NVRTC for sm_90
 *     (the H200) with no errors; ptxas' report (--ptxas-options=-v) must
 *     show no spill stores or loads for any kernel;
 *   - the generated text has the structure docs/gpu.md promises (kernel
 *     names from the plan, warp shuffles in reductions, shared-memory tiles
 *     in matmuls, a grid-stride loop in pointwise kernels);
 *   - `tdsl run --device cuda` on a machine without the driver fails with
 *     one sentence naming what is missing and exit code 1, after printing
 *     the module for --dump=cuda.
 * Tests that need NVRTC are skipped, with the reason printed, when it is
 * not installed; the driver test is skipped where a driver exists.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../../compiler/passes.h"
#include "../../compiler/plan.h"
#include "../../gpu/codegen_cuda.h"
#include "../../gpu/cuda_loader.h"
#include "elab.h"
#include "mem.h"

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
  int entries, kernels, modules, spill_reports, tf32;
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

/* Generates and compiles the module of one entry point; with tf32, only
 * when the plan has a matmul (the TF32 variant of the same module). */
static void compile_entry(td_program *p, const char *file, const char *entry, td_arena *a, int tf32, stats *s) {
  td_graph *g = td_program_lower(p, entry);
  if (!g) return;   /* an error test: nothing to compile */
  td_err err;
  td_graph *opt;
  td_plan *plan = NULL;
  if (td_optimize(g, NULL, &opt, NULL, &err) || !(plan = td_plan_build(opt, &err))) return;  /* the CPU compiler refuses it too */
  int has_mm = 0;
  for (int k = 0; k < plan->n_kernels; k++) has_mm |= plan->kernels[k].kind == TD_KERN_MATMUL;
  if (tf32 && !has_mm) return;
  td_cuda_code code;
  cr_assert_eq(td_cuda_codegen(plan, a, tf32, &code, &err), 0, "%s %s: CUDA codegen failed: %s", file, entry, err.msg);
  cr_assert_eq(code.n_kernels, plan->n_kernels);
  for (int k = 0; k < plan->n_kernels; k++) {
    char head[512];
    snprintf(head, sizeof head, "__global__ void __launch_bounds__(%d, 2)\n%s(", TD_CUDA_BLOCK, plan->kernels[k].name);
    cr_expect(strstr(code.src, head), "%s %s: no kernel named %s", file, entry, plan->kernels[k].name);
    s->kinds[plan->kernels[k].kind]++;
  }
  char *cubin = NULL, *log = NULL;
  size_t size = 0;
  const char *opts[] = {"--ptxas-options=-v", "--fmad=false"};
  char what[1024];
  snprintf(what, sizeof what, "%s:%s%s", file, entry, tf32 ? " (tf32)" : "");
  int rc = td_nvrtc_compile(code.src, what, 90, opts, 2, &cubin, &size, &log, &err);
  cr_expect_eq(rc, 0, "%s", err.msg);
  if (!rc) {
    cr_expect_gt(size, 0);
    int n = check_spills(log ? log : "", what);
    cr_expect(n >= plan->n_kernels, "%s: ptxas reported on %d functions for %d kernels:\n%s", what, n,
              plan->n_kernels, log ? log : "");
    s->spill_reports += n;
  }
  s->entries++;
  s->kernels += plan->n_kernels;
  s->modules += !rc;
  s->tf32 += tf32 && strstr(code.src, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
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

Test(gpu_nvrtc, every_program_compiles_for_sm90_without_spills, .timeout = 900) {
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
  fprintf(stderr, "test_gpu_nvrtc: %d modules (%d with TF32 matmuls), %d kernels (%d pointwise, %d reduce, %d matmul), "
                  "%d compiled, %d ptxas reports\n",
          s.entries, s.tf32, s.kernels, s.kinds[TD_KERN_POINTWISE], s.kinds[TD_KERN_REDUCE], s.kinds[TD_KERN_MATMUL],
          s.modules, s.spill_reports);
  cr_expect_eq(s.modules, s.entries);
  cr_expect_gt(s.entries, 20);
  cr_expect_gt(s.kinds[TD_KERN_REDUCE], 0);
  cr_expect_gt(s.kinds[TD_KERN_MATMUL], 0);
  cr_expect_gt(s.tf32, 5);
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
  cr_expect(strstr(m, "fmaf("), "f32 matmul accumulates with fmaf");
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
  cr_assert_eq(run_cmd(TDSL_BIN " run " TDSL_SRCDIR "/examples/mlp.td --device tpu 2>&1", out, sizeof out, &code), 0);
  cr_expect_eq(code, 2, "a bad --device is a usage error");
}

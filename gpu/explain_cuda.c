/* explain_cuda.c - `tdsl explain FILE --device cuda`.
 *
 * The CUDA backend runs the CPU compiler's plan, so the report is
 * `tdsl explain`'s (kernels, source lines, bytes, FLOPs, peak memory)
 * followed, per entry point, by how each kernel is launched on the GPU:
 * its kind of CUDA kernel, the grid as a function of the symbolic sizes,
 * the block, whether it uses 16-byte vectors or TF32 tensor cores, and its
 * static shared memory.  With --json or --dot only the explain report is
 * printed.  Needs no GPU (nothing is compiled).  Part of the tdsl binary
 * (it calls cli/explain_cmd.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/explain_cmd.h"
#include "cli/search.h"
#include "compiler/passes.h"
#include "lang/elab.h"
#include "gpu/codegen_cuda.h"
#include "gpu/runtime_cuda.h"

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

/* The launch of kernel k, as text. */
static void launch_line(const td_graph *g, const td_kernel *k, const td_cuda_kernel *ck, int tf32, FILE *out) {
  char w[128], m[128], n[128];
  td_dim_str(g, ck->work, w, sizeof w);
  switch (ck->kind) {
  case TD_KERN_MATMUL:
    td_dim_str(g, ck->m, m, sizeof m);
    td_dim_str(g, ck->n, n, sizeof n);
    if (ck->half_mma)
      fprintf(out, "  %-28s matmul   grid (ceil(%s/64), ceil(%s/64), %s) x %d threads, 64x64 tiles, "
                   "%s mma.sync m16n8k16 on the 16-bit buffers, 10.2 KB shared\n", k->name, n, m, w, TD_CUDA_BLOCK,
              td_dtype_name((td_dtype)ck->half_mma));
    else
      fprintf(out, "  %-28s matmul   grid (ceil(%s/64), ceil(%s/64), %s) x %d threads, 64x64 tiles, %s, "
                   "8.3 KB shared\n", k->name, n, m, w, TD_CUDA_BLOCK, tf32 ? "TF32 mma.sync if f32" : "FMA");
    break;
  case TD_KERN_REDUCE:
    fprintf(out, "  %-28s reduce   one block of %d threads per row, %s rows; %d pass%s over each row, "
                 "warp shuffles\n", k->name, TD_CUDA_BLOCK, w, k->n_passes, k->n_passes == 1 ? "" : "es");
    break;
  default:
    if (ck->idle) {
      fprintf(out, "  %-28s pointwise does nothing: its f32 copy is not read (the matmul reads the 16-bit values)\n",
              k->name);
      break;
    }
    fprintf(out, "  %-28s pointwise grid-stride over %s elements, %d threads per block%s\n", k->name, w,
            TD_CUDA_BLOCK, ck->vec ? ", 16-byte vectors" : "");
  }
}

static int explain_entry(td_program *p, const char *entry, FILE *out) {
  td_graph *g = td_program_lower(p, entry);
  if (!g) return 1;
  td_err err;
  td_graph *opt;
  td_plan *plan;
  if (td_optimize(g, NULL, &opt, NULL, &err) || !(plan = td_plan_build(opt, &err))) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    return 1;
  }
  const char *e = getenv("TDSL_CUDA_TF32");
  int tf32 = e && !strcmp(e, "1");
  td_cuda_code code;
  if (td_cuda_codegen(plan, opt->arena, tf32, &code, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    return 1;
  }
  fprintf(out, "\nCUDA: %s (%d kernel%s in one module, compiled by NVRTC for the GPU's architecture; "
               "tdsl run --device cuda --dump=cuda prints it)\n",
          entry, code.n_kernels, code.n_kernels == 1 ? "" : "s");
  for (int k = 0; k < code.n_kernels; k++) launch_line(opt, &plan->kernels[k], &code.kernels[k], tf32, out);
  td_cuda_code_free(&code);
  return 0;
}

int td_cuda_cli_explain(int argc, char **argv) {
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return 1;
  int n = 0, plain = 0, cuda = 0;
  const char *file = NULL, *entry = NULL;
  for (int i = 0; i < argc; i++) {
    if (i >= 2 && !strcmp(argv[i], "--device")) {
      const char *v = i + 1 < argc ? argv[i + 1] : "";
      if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
        fprintf(stderr, "tdsl: --device needs cpu or cuda, got '%s'\n(run 'tdsl --help' for usage)\n", v);
        free(args);
        return 2;
      }
      cuda = !strcmp(v, "cuda");
      i++;
      continue;
    }
    if (i >= 2 && (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--dot"))) plain = 1;
    if (i >= 2 && (!strcmp(argv[i], "--entry") || !strcmp(argv[i], "--size")) && i + 1 < argc) {
      if (!strcmp(argv[i], "--entry")) entry = argv[i + 1];
      args[n++] = argv[i++];
    } else if (i >= 2 && argv[i][0] != '-' && !file) file = argv[i];
    args[n++] = argv[i];
  }
  int rc = td_cli_explain(n, args);
  free(args);
  if (rc || plain || !file || !cuda) return rc;
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  cli_search_dirs(add_dir, p);
  if (td_program_load_file(p, file)) rc = 1;
  else if (entry) rc = explain_entry(p, entry, stdout);
  else {
    const char **names;
    int ne = td_program_entries(p, &names);
    for (int i = 0; i < ne && !rc; i++) rc = explain_entry(p, names[i], stdout);
  }
  td_arena_free(a);
  return rc;
}

/* explain_cuda.c - what `tdsl explain --device cuda` adds: the launches.
 *
 * The CUDA backend runs the CPU compiler's plan, so the report is
 * `tdsl explain`'s (kernels, source lines, bytes, FLOPs, peak memory,
 * compiler/explain.c) followed, per entry point, by how each kernel is
 * launched on the GPU: its kind of CUDA kernel, the grid as a function of
 * the symbolic sizes, the block, whether it uses 16-byte vectors or TF32
 * tensor cores, and its static shared memory; a scan, its host loop and
 * its body's kernels, indented.  Needs no GPU (nothing is
 * compiled).  The driver calls it (driver/driver.h); the CLI prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/codegen_cuda.h"
#include "gpu/runtime_cuda.h"

static void launch_lines(const td_plan *p, const td_cuda_code *code, int tf32, int depth, FILE *out);

/* The launch of kernel k, as text (indented by depth scans). */
static void launch_line(const td_plan *p, const td_kernel *k, const td_cuda_kernel *ck, int tf32, int depth,
                        FILE *out) {
  const td_graph *g = p->g;
  char w[128], m[128], n[128];
  fprintf(out, "%*s", 4 * depth, "");
  if (ck->body) {
    char t[128];
    td_dim_str(g, g->nodes[k->root].attr.dim, t, sizeof t);
    fprintf(out, "  %-28s scan     a host loop: %s steps, each launching the body's %d kernel%s below with the "
                 "step's tables (no copy or allocation per step)\n", ck->name, t, ck->body->n_kernels,
            ck->body->n_kernels == 1 ? "" : "s");
    launch_lines(k->body, ck->body, tf32, depth + 1, out);
    return;
  }
  td_dim_str(g, ck->work, w, sizeof w);
  switch (ck->kind) {
  case TD_KERN_MATMUL:
    td_dim_str(g, ck->m, m, sizeof m);
    td_dim_str(g, ck->n, n, sizeof n);
    if (ck->half_mma)
      fprintf(out, "  %-28s matmul   grid (ceil(%s/64), ceil(%s/64), %s) x %d threads, 64x64 tiles, "
                   "%s mma.sync m16n8k16 on the 16-bit buffers, 10.2 KB shared\n", ck->name, n, m, w, TD_CUDA_BLOCK,
              td_dtype_name((td_dtype)ck->half_mma));
    else
      fprintf(out, "  %-28s matmul   grid (ceil(%s/64), ceil(%s/64), %s) x %d threads, 64x64 tiles, %s, "
                   "8.3 KB shared\n", ck->name, n, m, w, TD_CUDA_BLOCK, tf32 ? "TF32 mma.sync if f32" : "FMA");
    break;
  case TD_KERN_REDUCE:
    fprintf(out, "  %-28s reduce   one block of %d threads per row, %s rows; %d pass%s over each row, "
                 "warp shuffles\n", ck->name, TD_CUDA_BLOCK, w, k->n_passes, k->n_passes == 1 ? "" : "es");
    break;
  default:
    if (ck->idle) {
      fprintf(out, "  %-28s pointwise does nothing: its f32 copy is not read (the matmul reads the 16-bit values)\n",
              ck->name);
      break;
    }
    fprintf(out, "  %-28s pointwise grid-stride over %s elements, %d threads per block%s\n", ck->name, w,
            TD_CUDA_BLOCK, ck->vec ? ", 16-byte vectors" : "");
  }
}

static void launch_lines(const td_plan *p, const td_cuda_code *code, int tf32, int depth, FILE *out) {
  for (int k = 0; k < code->n_kernels; k++) launch_line(p, &p->kernels[k], &code->kernels[k], tf32, depth, out);
}

/* The __global__ functions of the module: code's kernels and its scans'
 * bodies'. */
static int count_functions(const td_cuda_code *code) {
  int n = 0;
  for (int k = 0; k < code->n_kernels; k++) n += code->kernels[k].body ? count_functions(code->kernels[k].body) : 1;
  return n;
}

int td_cuda_explain(const td_plan *plan, const char *entry, FILE *out, td_err *err) {
  const char *e = getenv("TDSL_CUDA_TF32");
  int tf32 = e && !strcmp(e, "1");
  td_cuda_code code;
  if (td_cuda_codegen(plan, plan->g->arena, tf32, &code, err)) return -1;
  int n = count_functions(&code);
  fprintf(out, "\nCUDA: %s (%d kernel%s in one module, compiled by NVRTC for the GPU's architecture; "
               "tdsl run --device cuda --dump=cuda prints it)\n",
          entry, n, n == 1 ? "" : "s");
  launch_lines(plan, &code, tf32, 0, out);
  td_cuda_code_free(&code);
  return 0;
}

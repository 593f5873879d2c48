/* compile_cmd.c - `tdsl run --compiled`: the graph through the compiler.
 *
 * td_cli_run_compiled is a drop-in for td_interp_run in cli/main.c: it
 * optimises the graph (td_optimize), plans it (td_plan_build), compiles it
 * with libgccjit (td_compile), runs it once, prints what the program's
 * print() calls print (after the call: compiled code has no host sync in
 * the middle of a graph) and hands back the graph's outputs.
 *
 * Dumps: --dump=fold,cse,simplify,dce print the graph after those passes,
 * --dump=fused the kernel plan, --dump=c the C-like code of every kernel
 * (stdout); TDSL_DEBUG=4 in the environment also prints the C-like code
 * (to stderr, so program output stays clean).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "runtime/mem.h"
#include "cli/explain_cmd.h"

#define DUMP_FUSED (1u << 16)
#define DUMP_C (1u << 17)

unsigned td_cli_compiler_stage(const char *name, size_t len) {
  int bit = td_pass_index(name, len);
  if (bit >= 0) return 1u << bit;
  if (len == 5 && !strncmp(name, "fused", 5)) return DUMP_FUSED;
  if (len == 1 && name[0] == 'c') return DUMP_C;
  return 0;
}

static void dump_pass(void *ud, const char *pass, const td_graph *g) {
  printf("# after %s\n", pass);
  td_graph_print(g, ud, stdout);
}

/* A C comment naming kernel k, its kind, and each op with its source line. */
static void kernel_comment(const td_plan *p, int k, const td_diags *d, FILE *out) {
  const td_kernel *kn = &p->kernels[k];
  fprintf(out, "/* kernel %s (%s):", kn->name, td_kkind_name(kn->kind));
  for (int i = 0; i < kn->n_nodes; i++) {
    const td_node *n = &p->g->nodes[kn->nodes[i]];
    if (td_ops[n->op].kind == TD_K_LEAF && n->op != TD_IR_ARANGE) continue;
    const td_source *s = td_diags_source(d, n->span.file);
    const char *path = s ? s->path : "?", *std = s ? strstr(path, "/stdlib/") : NULL;
    fprintf(out, "\n     %s %s:%d:%d", td_ops[n->op].name, std ? std + 1 : path, n->span.line, n->span.col);
  }
  fprintf(out, " */\n");
}

/* The gccjit dump with each kernel's ops and source lines above it. */
static void print_c(const td_plan *p, const td_diags *d, const char *text, FILE *out) {
  const char *at = text;
  for (int k = 0; k < p->n_kernels; k++) {
    char head[160];
    snprintf(head, sizeof head, "extern void\n%s (", p->kernels[k].name);
    const char *f = strstr(at, head);
    if (!f) continue;
    fwrite(at, 1, (size_t)(f - at), out);
    kernel_comment(p, k, d, out);
    at = f;
  }
  fputs(at, out);
}

void td_cli_cache_warning(const td_compiled *c) {
  static int said;
  const char *w = c ? td_compiled_warning(c) : NULL;
  if (!w || said) return;
  said = 1;
  fflush(stdout);
  fprintf(stderr, "tdsl: warning: %s\n", w);
}

static int debug_level(void) {
  const char *s = getenv("TDSL_DEBUG");
  return s ? atoi(s) : 0;
}

int td_cli_run_compiled(const td_graph *g, const td_diags *d, td_tensor *const *inputs,
                        td_tensor *const *params, const td_run_opts *io, unsigned dumps,
                        td_tensor ***outs, td_err *err, td_span *sp) {
  *outs = NULL;
  if (io->trace || io->check_numerics)
    return td_err_set(err, "--trace and --check-numerics run op by op: use them without --compiled");
  td_opt_opts oo = {dump_pass, (void *)d, dumps & 0xffffu};
  td_graph *opt;
  td_plan *plan = NULL;
  if (td_optimize(g, &oo, &opt, NULL, err) || !(plan = td_plan_build(opt, err))) return -1;
  if (dumps & DUMP_FUSED) td_plan_print(plan, d, stdout);
  int dbg = debug_level() >= 4;
  td_compile_opts co = {-1, (dumps & DUMP_C) || dbg, NULL, 1};
  td_compiled *c = td_compile(plan, &co, err);
  if (!c) return -1;
  td_cli_cache_warning(c);
  const char *text = td_compiled_c_text(c);
  if (text && (dumps & DUMP_C)) print_c(plan, d, text, stdout);
  if (text && dbg) print_c(plan, d, text, stderr);
  td_tensor **all = NULL;
  int rc = td_compiled_run(c, inputs, params, io->call_index, &all, err, sp);
  if (rc == 0) rc = td_compiled_prints(plan, all, io, err);
  if (rc == 0) {
    *outs = td_malloc((size_t)(g->n_outputs + 1) * sizeof **outs);
    if (!*outs) rc = td_err_set(err, "out of memory");
  }
  for (int i = 0; all && i < plan->n_out_nodes; i++) {
    if (rc == 0 && i < g->n_outputs) (*outs)[i] = all[i];
    else td_tensor_release(all[i]);
  }
  td_free(all);
  td_compiled_free(c);
  return rc;
}

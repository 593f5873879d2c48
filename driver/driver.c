/* driver.c - backends, lowering, run, build and explain (driver.h).
 *
 * A backend is a row of `backends`: its name, the dumps it makes, how it
 * prepares a graph and runs it, how it builds an artifact and what it adds
 * to `tdsl explain`.  Choosing a backend is indexing that table, so adding
 * one is adding a row: no command or REPL code changes.
 *
 * The order of the steps is the commands' contract (tests check the
 * messages): a backend that runs compiled code refuses --trace and
 * --check-numerics before anything is lowered; CUDA says there is no GPU
 * before it lowers, except with --dump=cuda, which prints the module
 * (needing no GPU) first.
 */
#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>

#include "compiler/compiled.h"
#include "gpu/build_cuda.h"
#include "gpu/runtime_cuda.h"
#include "interp/interp.h"
#include "runtime/mem.h"
#include "runtime/phase_time.h"

struct td_prepared {
  const td_graph *g;        /* what the backend runs: updates made outputs */
  const td_graph *user;     /* the graph as given */
  td_drive_opts o;
  const struct backend *b;
  td_plan *plan;            /* compiled backends: the lowered graph */
  td_compiled *c;           /* CPU: the compiled plan */
};

typedef struct backend {
  const char *name;         /* td_backend_name */
  const char *device;       /* its --device name (NULL: none) */
  const char *stepwise;     /* the option that cannot --trace (NULL: runs op by op) */
  unsigned dumps;           /* what it can dump */
  int (*prepare)(td_prepared *p, td_err *err);
  int (*run)(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params, const td_run_opts *io,
             td_tensor ***outs, td_err *err, td_span *sp);
  int (*build)(td_program *prog, const td_build_opts *o, td_err *err);   /* NULL: builds nothing */
  int (*explain)(const td_plan *plan, const char *entry, FILE *out, td_err *err);   /* NULL: adds nothing */
} backend;

static const backend backends[TD_BACKEND_COUNT];

int td_backend_parse(const char *name, td_backend *b) {
  for (int i = 0; name && i < TD_BACKEND_COUNT; i++)
    if (backends[i].device && !strcmp(backends[i].device, name)) {
      *b = (td_backend)i;
      return 0;
    }
  return -1;
}

const char *td_backend_name(td_backend b) {
  return (unsigned)b < TD_BACKEND_COUNT ? backends[b].name : "?";
}

unsigned td_dump_stage(const char *name, size_t len) {
  int bit = td_pass_index(name, len);
  if (bit >= 0) return 1u << bit;
  if (len == 5 && !strncmp(name, "fused", 5)) return TD_DUMP_FUSED;
  if (len == 1 && name[0] == 'c') return TD_DUMP_C;
  if (len == 4 && !strncmp(name, "cuda", 4)) return TD_DUMP_CUDA;
  return 0;
}

/* ---- lowering ----------------------------------------------------------- */

static void dump_pass(void *ud, const char *pass, const td_graph *g) {
  const td_drive_opts *o = ud;
  fprintf(o->dump, "# after %s\n", pass);
  td_graph_print(g, o->diags, o->dump);
}

td_plan *td_lower(const td_graph *g, const td_drive_opts *o, td_opt_stats *st, td_err *err) {
  unsigned dumps = o && o->dump ? o->dumps : 0;
  td_opt_opts oo = {dump_pass, (void *)o, dumps & TD_DUMP_PASSES};
  td_graph *opt;
  td_plan *plan;
  double t0 = td_now();
  if (td_optimize(g, &oo, &opt, st, err)) return NULL;
  td_phase_done("passes", t0, g->name);
  t0 = td_now();
  if (!(plan = td_plan_build(opt, err))) return NULL;
  td_phase_done("fusion and planning", t0, g->name);
  if (dumps & TD_DUMP_FUSED) td_plan_print(plan, o->diags, o->dump);
  return plan;
}

/* td_build_opts.lower: a build lowers without dumps.  A training step's
 * updates become outputs written into the parameters' own memory where
 * the planner allows it (as `tdsl run --compiled` runs it), the others
 * outputs that the artifact's runtime copies into the parameters after
 * the call (artifact.h, "per update"). */
static td_plan *lower_quietly(const td_graph *g, const td_build_opts *o, td_err *err) {
  (void)o;
  const td_graph *run = td_graph_with_update_outputs(g, 1, err);
  return run ? td_lower(run, NULL, NULL, err) : NULL;
}

/* ... and a CUDA build refuses training steps first. */
static td_plan *lower_quietly_cuda(const td_graph *g, const td_build_opts *o, td_err *err) {
  (void)o;
  if (g->n_updates) {
    td_err_set(err, "entry '%s' assigns parameters (a training step), which CUDA artifacts cannot run yet; "
               "build it for the CPU (`tdsl build` without --device cuda), or train with `tdsl train` and "
               "build a file whose entry points only compute (load the trained weights with "
               "load_weights)", g->name);
    return NULL;
  }
  return td_lower(g, NULL, NULL, err);
}

/* ---- the interpreter ---------------------------------------------------- */

static int eager_prepare(td_prepared *p, td_err *err) {
  (void)p;
  (void)err;
  return 0;
}

static int eager_run(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params, const td_run_opts *io,
                     td_tensor ***outs, td_err *err, td_span *sp) {
  return td_interp_run(p->g, inputs, params, io, outs, err, sp);
}

/* ---- the CPU compiler --------------------------------------------------- */

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

static int debug_level(void) {
  const char *s = getenv("TDSL_DEBUG");
  return s ? atoi(s) : 0;
}

static int cpu_prepare(td_prepared *p, td_err *err) {
  const td_drive_opts *o = &p->o;
  if (!(p->plan = td_lower(p->g, o, NULL, err))) return -1;
  int dump_c = o->dump && (o->dumps & TD_DUMP_C), dbg = o->debug && debug_level() >= 4;
  td_compile_opts co = {-1, dump_c || dbg, NULL, 1};
  if (!(p->c = td_compile(p->plan, &co, err))) return -1;
  const char *w = td_compiled_warning(p->c);
  if (w && o->on_warning) o->on_warning(o->ud, w);
  const char *text = td_compiled_c_text(p->c);
  if (text && dump_c) print_c(p->plan, o->diags, text, o->dump);
  if (text && dbg) print_c(p->plan, o->diags, text, o->debug);
  return 0;
}

static int cpu_run(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params, const td_run_opts *io,
                   td_tensor ***outs, td_err *err, td_span *sp) {
  const td_plan *plan = p->plan;
  int n_outs = p->g->n_outputs;
  td_tensor **all = NULL;
  int rc = td_compiled_run(p->c, inputs, params, io->call_index, &all, err, sp);
  if (rc == 0) rc = td_compiled_run_prints(p->c, all, io, err);
  if (rc == 0) {
    *outs = td_malloc((size_t)(n_outs + 1) * sizeof **outs);
    if (!*outs) rc = td_err_set(err, "out of memory");
  }
  for (int i = 0; all && i < plan->n_out_nodes; i++) {
    if (rc == 0 && i < n_outs) (*outs)[i] = all[i];
    else td_tensor_release(all[i]);
  }
  td_free(all);
  return rc;
}

/* ---- CUDA ------------------------------------------------------------------ */

static int cuda_prepare(td_prepared *p, td_err *err) {
  /* no GPU is said before lowering, unless the module is to be printed */
  if (!(p->o.dump && (p->o.dumps & TD_DUMP_CUDA)) && td_cuda_ready(err)) return -1;
  return (p->plan = td_lower(p->g, &p->o, NULL, err)) ? 0 : -1;
}

static int cuda_run(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params, const td_run_opts *io,
                    td_tensor ***outs, td_err *err, td_span *sp) {
  td_cuda_opts co = {p->o.cuda_graph, p->o.dumps & TD_DUMP_CUDA ? p->o.dump : NULL, 1, NULL};
  return td_cuda_run(p->plan, inputs, params, io, &co, outs, err, sp);
}

static const backend backends[TD_BACKEND_COUNT] = {
  [TD_BACKEND_EAGER] = {"eager", NULL, NULL, 0, eager_prepare, eager_run, NULL, NULL},
  [TD_BACKEND_CPU] = {"cpu", "cpu", "--compiled", TD_DUMP_PASSES | TD_DUMP_FUSED | TD_DUMP_C, cpu_prepare, cpu_run,
                      td_build, NULL},
  [TD_BACKEND_CUDA] = {"cuda", "cuda", "--device cuda", TD_DUMP_CUDA, cuda_prepare, cuda_run, td_build_cuda,
                       td_cuda_explain},
};

/* ---- running ---------------------------------------------------------------- */

/* The backend of o, or NULL with err filled. */
static const backend *backend_of(const td_drive_opts *o, td_err *err) {
  if ((unsigned)o->backend < TD_BACKEND_COUNT) return &backends[o->backend];
  td_err_set(err, "unknown backend %d", (int)o->backend);
  return NULL;
}

/* -1 with the reason when b runs compiled code and io asks for op by op. */
static int refuse_stepping(const backend *b, const td_run_opts *io, td_err *err) {
  if (b->stepwise && io && (io->trace || io->check_numerics))
    return td_err_set(err, "--trace and --check-numerics run op by op: use them without %s", b->stepwise);
  return 0;
}

td_prepared *td_prepare(const td_graph *g, const td_drive_opts *o, td_err *err) {
  const backend *b = backend_of(o, err);
  td_prepared *p = b ? td_calloc(1, sizeof *p) : NULL;
  if (!p) {
    if (b) td_err_set(err, "out of memory");
    return NULL;
  }
  p->user = g;
  p->g = td_graph_with_update_outputs(g, b == &backends[TD_BACKEND_CPU], err);
  if (!p->g) {
    td_free(p);
    return NULL;
  }
  p->o = *o;
  p->o.dumps &= b->dumps;
  p->b = b;
  if (b->prepare(p, err)) {
    td_prepared_free(p);
    return NULL;
  }
  return p;
}

void td_prepared_free(td_prepared *p) {
  if (!p) return;
  td_compiled_free(p->c);
  td_free(p);
}

int td_prepared_run(td_prepared *p, td_tensor *const *inputs, td_tensor *const *params,
                    const td_run_opts *io, td_tensor ***outs, td_err *err, td_span *sp) {
  *outs = NULL;
  if (refuse_stepping(p->b, io, err)) return -1;
  const td_graph *u = p->user;
  if (u->n_updates && !params) return td_err_set(err, "this graph updates parameters, but none were given");
  /* the parameter tensors an update writes: checked before anything runs */
  for (int i = 0; i < u->n_updates; i++) {
    const td_node *pn = &u->nodes[u->updates[i].param];
    const td_tensor *t = params[pn->attr.i];
    if (!t || t->dtype != pn->dtype || t->rank != pn->rank)
      return td_err_set(err, "parameter '%s' is missing or has the wrong type", pn->name ? pn->name : "?");
  }
  int rc = p->b->run(p, inputs, params, io, outs, err, sp);
  if (rc || !u->n_updates) return rc;
  /* the call has ended: each updated parameter takes its new value, in
   * the caller's tensor (same object, same data pointer); an output that
   * is an updated parameter itself keeps the value it had in the call */
  td_tensor **o = *outs;
  /* (update values too: assign(a, b); assign(b, a) hands back b and a
   * themselves, and a must not be overwritten before b has read it) */
  for (int i = 0; i < u->n_outputs + u->n_updates && rc == 0; i++)
    for (int k = 0; k < u->n_updates; k++) {
      td_tensor *pt = params[u->nodes[u->updates[k].param].attr.i];
      if (o[i] != pt || i == u->n_outputs + k) continue;   /* written in place: already its value */
      td_tensor *cp = td_tensor_new(pt->dtype, pt->rank, pt->shape, err);
      if (!cp) { rc = -1; break; }
      if (pt->numel) memcpy(cp->data, pt->data, (size_t)pt->numel * td_dtype_size(pt->dtype));
      td_tensor_release(o[i]);
      o[i] = cp;
      break;
    }
  for (int i = 0; i < u->n_updates; i++) {
    td_tensor *dst = params[u->nodes[u->updates[i].param].attr.i], *src = o[u->n_outputs + i];
    int same = src->dtype == dst->dtype && src->rank == dst->rank && src->numel == dst->numel;
    for (int k = 0; same && k < dst->rank; k++) same = src->shape[k] == dst->shape[k];
    if (!same) rc = td_err_set(err, "the update of parameter '%s' has the wrong shape", u->nodes[u->updates[i].param].name);
    else if (src != dst && dst->numel) memcpy(dst->data, src->data, (size_t)dst->numel * td_dtype_size(dst->dtype));
    if (!same) break;
    td_tensor_touch(dst);
  }
  for (int i = 0; i < u->n_updates; i++) td_tensor_release(o[u->n_outputs + i]);
  if (rc) {
    for (int i = 0; i < u->n_outputs; i++) td_tensor_release(o[i]);
    td_free(o);
    *outs = NULL;
  }
  return rc;
}

int td_drive_run(const td_graph *g, const td_drive_opts *o, td_tensor *const *inputs,
                 td_tensor *const *params, const td_run_opts *io, td_tensor ***outs, td_err *err,
                 td_span *sp) {
  *outs = NULL;
  const backend *b = backend_of(o, err);
  if (!b || refuse_stepping(b, io, err)) return -1;
  td_prepared *p = td_prepare(g, o, err);
  int rc = p ? td_prepared_run(p, inputs, params, io, outs, err, sp) : -1;
  td_prepared_free(p);
  return rc;
}

/* ---- explain and build --------------------------------------------------------- */

int td_drive_explain(const td_graph *g, const td_drive_opts *o, const td_explain_opts *eo, int index,
                     FILE *out, td_plan **plan, td_err *err) {
  td_opt_stats st;
  const td_graph *run = td_graph_with_update_outputs(g, o && o->backend == TD_BACKEND_CPU, err);   /* what td_prepare runs */
  td_plan *p = run ? td_lower(run, o, &st, err) : NULL;
  if (plan) *plan = p;
  if (!p) return -1;
  td_explain(p, &st, eo, index, out);
  return 0;
}

int td_drive_explain_backend(const td_plan *plan, const td_drive_opts *o, const char *entry, FILE *out,
                             td_err *err) {
  const backend *b = backend_of(o, err);
  if (!b) return -1;
  return b->explain ? b->explain(plan, entry, out, err) : 0;
}

int td_drive_build(td_program *p, td_backend which, const td_build_opts *o, td_err *err) {
  td_drive_opts d = {which, 0, NULL, NULL, NULL, 0, NULL, NULL};
  const backend *b = backend_of(&d, err);
  if (!b) return -1;
  if (!b->build) return td_err_set(err, "the %s backend builds no artifact (cpu or cuda)", b->name);
  td_build_opts bo = *o;
  bo.diags = td_program_diags(p);
  bo.lower = which == TD_BACKEND_CUDA ? lower_quietly_cuda : lower_quietly;
  return b->build(p, &bo, err);
}

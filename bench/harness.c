/* harness.c - times one tdsl entry point in-process, for bench/run.
 *
 * Loads a .td file, lowers one entry point to a graph, builds its inputs
 * from a deterministic generator and its parameters from their recipes,
 * then times the EAGER interpreter (td_interp_run) with a monotonic clock:
 * warm-up calls, then `runs` timed runs of `inner` back-to-back calls each
 * (inner is chosen so a run lasts about --target-ms, which makes µs-scale
 * workloads measurable).  The reported time is per call: median, min and
 * max over the runs.  Each call's outputs are released inside the timed
 * region, as a caller of the graph would.
 *
 * Before timing, one result is checked against an independent float64
 * reference computed here (--check KIND, see check_kinds below), and the
 * relative error goes into the report: a fast wrong answer is a failure.
 *
 * --mode compiled times the CPU compiler's artifact (compiler/compiled.h)
 * instead: optimise + plan + compile once (cold, compile cache off; then
 * twice more through a fresh cache directory: the second is the cached
 * compile time, W7), then the same check and timing with td_compiled_run.
 * --compile-only with --mode compiled reports the compile times only.
 *
 * Built artifacts (`tdsl build --exe`) are timed by their own executable's
 * --bench (bench/driver.py runs it); the harness serves them two ways:
 * --write-inputs DIR writes the generated inputs as DIR/NAME.npy (for the
 * executable's --in), and --mode outputs --outputs A.npy[,B.npy...] runs
 * no code of its own: it reads the artifact's outputs and applies --check
 * to them against the same inputs and parameters (the artifact's embedded
 * parameters come from the same recipes and seed).
 *
 * Output: one JSON object on stdout.  Errors: a message on stderr, exit 1.
 *
 *   harness FILE.td --entry NAME [--in NAME=SPEC]... [--check KIND]
 *           [--mode eager|compiled] [--warmup N] [--runs N] [--inner N]
 *           [--new-shape NAME=SPEC]...
 *           [--target-ms X] [--seed S] [--search DIR]... [--label TEXT]
 *           [--frontend-only] [--compile-only] [--write-inputs DIR]
 *           [--mode outputs --outputs A.npy[,B.npy...]]
 *   SPEC: f32[D0,D1,...]:randn | :normal:MEAN:STD | :uniform:LO:HI
 *         (f64 too; i32 and i64 take the floor: i64[1,128]:uniform:0:50257)
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "interp/interp.h"
#include "lang/diag.h"
#include "lang/elab.h"
#include "lang/ir.h"
#include "runtime/mem.h"
#include "runtime/io.h"
#include "runtime/tensor.h"
#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "driver/driver.h"

#define MAX_INPUTS 8
#define MAX_SEARCH 8
#define MAX_RUNS 1000

/* ---- options ------------------------------------------------------------ */

typedef struct input_spec {
  char name[64];
  td_dtype dtype;
  int rank;
  int64_t shape[TD_MAX_RANK];
  int dist;          /* 0 normal, 1 uniform */
  double a, b;       /* mean/std or lo/hi */
} input_spec;

typedef struct opts {
  const char *file, *entry, *check, *mode, *label;
  input_spec in[MAX_INPUTS];
  int n_in;
  input_spec new_shape[MAX_INPUTS];   /* --new-shape: later calls with one input resized */
  int n_new_shape;
  const char *search[MAX_SEARCH];
  int n_search;
  int warmup, runs, inner;
  double target_ms;
  uint64_t seed;
  int frontend_only, compile_only;
  const char *write_inputs, *outputs;
} opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *fmt, const char *arg) {
  fprintf(stderr, "harness: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  return -1;
}

/* Parses "f32[8,16]:randn", "f32[N]:uniform:-4:4", "f32[4,4]:normal:0:3". */
static int parse_spec(const char *name, size_t name_len, const char *s, input_spec *sp) {
  memset(sp, 0, sizeof *sp);
  if (name_len >= sizeof sp->name) return fail("argument name too long in --in '%s'", name);
  memcpy(sp->name, name, name_len);
  const char *br = strchr(s, '[');
  if (!br) return fail("input spec '%s' needs a shape like f32[8,16]", s);
  char dt[8] = {0};
  if (br - s >= (long)sizeof dt) return fail("bad dtype in '%s'", s);
  memcpy(dt, s, (size_t)(br - s));
  if (td_dtype_from_name(dt, &sp->dtype) ||
      (sp->dtype != TD_F32 && sp->dtype != TD_F64 && sp->dtype != TD_I64 && sp->dtype != TD_I32))
    return fail("input spec '%s': only f32, f64, i32 and i64 inputs are generated", s);
  const char *p = br + 1;
  while (*p && *p != ']') {
    if (sp->rank == TD_MAX_RANK) return fail("too many dims in '%s'", s);
    char *end;
    sp->shape[sp->rank++] = strtoll(p, &end, 10);
    if (end == p) return fail("bad dim in '%s'", s);
    p = *end == ',' ? end + 1 : end;
  }
  if (*p != ']') return fail("missing ']' in '%s'", s);
  p++;
  sp->dist = 0, sp->a = 0, sp->b = 1;
  if (!*p || !strcmp(p, ":randn")) return 0;
  if (!strncmp(p, ":normal:", 8) && sscanf(p + 8, "%lf:%lf", &sp->a, &sp->b) == 2) return 0;
  if (!strncmp(p, ":uniform:", 9) && sscanf(p + 9, "%lf:%lf", &sp->a, &sp->b) == 2) {
    sp->dist = 1;
    return 0;
  }
  return fail("unknown distribution in '%s' (randn, normal:M:S, uniform:LO:HI)", s);
}

static const char *next_arg(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    fail("%s needs a value", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

static int parse_opts(int argc, char **argv, opts *o) {
  memset(o, 0, sizeof *o);
  o->mode = "eager", o->check = "none", o->label = "";
  o->warmup = 2, o->runs = 10, o->target_ms = 20, o->seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (!strcmp(a, "--frontend-only")) { o->frontend_only = 1; continue; }
    if (!strcmp(a, "--compile-only")) { o->compile_only = 1; continue; }
    if (a[0] != '-') {
      o->file = a;
      continue;
    }
    if (!(v = next_arg(argc, argv, &i))) return -1;
    if (!strcmp(a, "--entry")) o->entry = v;
    else if (!strcmp(a, "--check")) o->check = v;
    else if (!strcmp(a, "--mode")) o->mode = v;
    else if (!strcmp(a, "--label")) o->label = v;
    else if (!strcmp(a, "--write-inputs")) o->write_inputs = v;
    else if (!strcmp(a, "--outputs")) o->outputs = v;
    else if (!strcmp(a, "--warmup")) o->warmup = atoi(v);
    else if (!strcmp(a, "--runs")) o->runs = atoi(v);
    else if (!strcmp(a, "--inner")) o->inner = atoi(v);
    else if (!strcmp(a, "--target-ms")) o->target_ms = atof(v);
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--search")) {
      if (o->n_search == MAX_SEARCH) return fail("too many %s", a);
      o->search[o->n_search++] = v;
    } else if (!strcmp(a, "--in")) {
      const char *eq = strchr(v, '=');
      if (!eq || o->n_in == MAX_INPUTS) return fail("bad --in '%s' (NAME=SPEC, at most 8)", v);
      if (parse_spec(v, (size_t)(eq - v), eq + 1, &o->in[o->n_in++])) return -1;
    } else if (!strcmp(a, "--new-shape")) {
      const char *eq = strchr(v, '=');
      if (!eq || o->n_new_shape == MAX_INPUTS) return fail("bad --new-shape '%s' (NAME=SPEC, at most 8)", v);
      if (parse_spec(v, (size_t)(eq - v), eq + 1, &o->new_shape[o->n_new_shape++])) return -1;
    } else return fail("unknown option '%s'", a);
  }
  if (!o->file || !o->entry) return fail("%s", "usage: harness FILE.td --entry NAME [--in NAME=SPEC]...");
  if (o->runs < 1 || o->runs > MAX_RUNS) return fail("%s", "--runs must be 1..1000");
  if (strcmp(o->mode, "eager") && strcmp(o->mode, "compiled") && strcmp(o->mode, "outputs"))
    return fail("--mode must be eager, compiled or outputs, not '%s'", o->mode);
  if (!strcmp(o->mode, "outputs") && !o->outputs) return fail("%s", "--mode outputs needs --outputs");
  if (o->n_new_shape && strcmp(o->mode, "compiled"))
    return fail("%s", "--new-shape needs --mode compiled (it times the compiled entry at other sizes)");
  return 0;
}

/* ---- deterministic inputs ---------------------------------------------- */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1.0p-53; }

/* Fills t from the spec's distribution; the stream depends on the seed and
 * the input's name only, so every system can be given the same data. */
static void fill_input(td_tensor *t, const input_spec *sp, uint64_t seed) {
  uint64_t s = seed * 0x100000001B3ull;
  for (const char *c = sp->name; *c; c++) s = (s ^ (unsigned char)*c) * 0x100000001B3ull;
  for (int64_t i = 0; i < t->numel; i++) {
    double v;
    if (sp->dist == 1) v = sp->a + (sp->b - sp->a) * unit(&s);
    else {
      double u1 = unit(&s), u2 = unit(&s);
      v = sp->a + sp->b * sqrt(-2.0 * log(u1 > 0 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
    }
    if (t->dtype == TD_F32) ((float *)t->data)[i] = (float)v;
    else if (t->dtype == TD_F64) ((double *)t->data)[i] = v;
    else if (t->dtype == TD_I64) ((int64_t *)t->data)[i] = (int64_t)floor(v);   /* uniform:0:V: tokens */
    else ((int32_t *)t->data)[i] = (int32_t)floor(v);
  }
}

/* ---- the run context ----------------------------------------------------- */

typedef struct ctx {
  const opts *o;
  td_graph *g;
  td_tensor *inputs[MAX_INPUTS];
  td_tensor **params;
  td_tensor **outs;
  uint64_t calls;
  td_compiled *cc;   /* --mode compiled: the artifact, its plan, compile times */
  const void *plan;
  double compile_cold, compile_cached;
  int n_outs;        /* tensors in outs (compiled: outputs + printed values) */
  char new_shapes[2048];   /* --new-shape results, a JSON array's items */
} ctx;

static void quiet_print(void *ud, const char *text) {
  (void)text;
  (*(long *)ud)++;
}

static long n_prints;

/* One eager call; its outputs are kept in c->outs (released by the caller
 * or by the next call_release). */
static int call_compiled(ctx *c);

static int call_eager(ctx *c) {
  if (c->cc) return call_compiled(c);
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = quiet_print;
  io.ud = &n_prints;
  io.print_threshold = 1000;
  io.call_index = c->calls++;
  td_err err;
  td_span sp;
  if (td_interp_run(c->g, c->inputs, c->params, &io, &c->outs, &err, &sp)) {
    if (sp.line > 0) fprintf(stderr, "harness: %s: run failed at line %d: %s\n", c->o->entry, sp.line, err.msg);
    else fprintf(stderr, "harness: %s: run failed: %s\n", c->o->entry, err.msg);
    return -1;
  }
  return 0;
}

static void release_outs(ctx *c) {
  if (!c->outs) return;
  int n = c->cc ? c->n_outs : c->g->n_outputs;
  for (int i = 0; i < n; i++) td_tensor_release(c->outs[i]);
  if (c->cc) td_free(c->outs);
  else free(c->outs);
  c->outs = NULL;
}

static const td_tensor *param(const ctx *c, const char *name) {
  for (int i = 0; i < c->g->n_params; i++)
    if (!strcmp(c->g->nodes[c->g->params[i]].name, name)) return c->params[i];
  return NULL;
}

static const td_tensor *input(const ctx *c, int i) { return i < c->g->n_inputs ? c->inputs[i] : NULL; }

static double at(const td_tensor *t, int64_t i) {
  return t->dtype == TD_F32 ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* ---- float64 references ---------------------------------------------- */
/* Each checker returns the maximum relative error (as defined per check,
 * matching the peers' scripts), or -1 when the outputs or parameters are
 * not what the check expects. */

typedef struct erracc {
  double max_abs_diff, max_abs_ref, max_rel;
} erracc;

/* rel: |y - r| / max(|r|, floor) when floor > 0; else accumulates for
 * max|y - r| / max|r|. */
static void acc_add(erracc *e, double y, double r, double floor) {
  double d = fabs(y - r);
  if (!(d <= e->max_abs_diff)) e->max_abs_diff = d; /* NaN sticks */
  if (fabs(r) > e->max_abs_ref) e->max_abs_ref = fabs(r);
  if (floor > 0) {
    double rel = d / (fabs(r) > floor ? fabs(r) : floor);
    if (!(rel <= e->max_rel)) e->max_rel = rel;
  }
}

static double acc_norm(const erracc *e) {
  if (isnan(e->max_abs_diff)) return NAN;
  return e->max_abs_ref > 0 ? e->max_abs_diff / e->max_abs_ref : e->max_abs_diff;
}

/* out[j] = sum_k x[row*in + k] * W[j*in + k] + bias[j] for one row (torch Linear). */
static void linear_row(const td_tensor *x, int64_t row, const td_tensor *w, const td_tensor *b,
                       double *out) {
  int64_t o = w->shape[0], in = w->shape[1];
  for (int64_t j = 0; j < o; j++) {
    double s = b ? at(b, j) : 0;
    for (int64_t k = 0; k < in; k++) s += at(x, row * in + k) * at(w, j * in + k);
    out[j] = s;
  }
}

static int64_t rows_of(const td_tensor *t) { return t->numel / t->shape[t->rank - 1]; }

/* linear:P[:relu] - y = x @ P.weight^T + P.bias (relu optional). */
static double check_linear(const ctx *c, const char *arg) {
  char pre[64], nm[80];
  int relu = 0;
  snprintf(pre, sizeof pre, "%s", arg);
  char *colon = strchr(pre, ':');
  if (colon) relu = !strcmp(colon + 1, "relu"), *colon = 0;
  snprintf(nm, sizeof nm, "%s.weight", pre);
  const td_tensor *w = param(c, nm), *x = input(c, 0), *y = c->outs[0];
  snprintf(nm, sizeof nm, "%s.bias", pre);
  const td_tensor *b = param(c, nm);
  if (!w || !x || y->numel != rows_of(x) * w->shape[0]) return -1;
  double *r = calloc((size_t)w->shape[0], sizeof *r);
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < rows_of(x); i++) {
    linear_row(x, i, w, b, r);
    for (int64_t j = 0; j < w->shape[0]; j++)
      acc_add(&e, at(y, i * w->shape[0] + j), relu && r[j] < 0 ? 0 : r[j], 0);
  }
  free(r);
  return acc_norm(&e);
}

/* where_pm1:P - y = linear(x) + 1 everywhere, or - 1 everywhere (one draw). */
static double check_where_pm1(const ctx *c, const char *arg) {
  char nm[80];
  snprintf(nm, sizeof nm, "%s.weight", arg);
  const td_tensor *w = param(c, nm), *x = input(c, 0), *y = c->outs[0];
  snprintf(nm, sizeof nm, "%s.bias", arg);
  const td_tensor *b = param(c, nm);
  if (!w || !x || y->numel != rows_of(x) * w->shape[0]) return -1;
  double *r = calloc((size_t)w->shape[0], sizeof *r), best = INFINITY;
  for (int sign = -1; sign <= 1; sign += 2) {
    erracc e = {0, 0, 0};
    for (int64_t i = 0; i < rows_of(x); i++) {
      linear_row(x, i, w, b, r);
      for (int64_t j = 0; j < w->shape[0]; j++) acc_add(&e, at(y, i * w->shape[0] + j), r[j] + sign, 0);
    }
    if (acc_norm(&e) < best) best = acc_norm(&e);
  }
  free(r);
  return best;
}

/* linear_mean:P - outputs (y = linear(x) [N,1], mean(y)). */
static double check_linear_mean(const ctx *c, const char *arg) {
  char nm[80];
  snprintf(nm, sizeof nm, "%s.weight", arg);
  const td_tensor *w = param(c, nm), *x = input(c, 0);
  snprintf(nm, sizeof nm, "%s.bias", arg);
  const td_tensor *b = param(c, nm);
  if (!w || !x || c->g->n_outputs != 2 || w->shape[0] != 1) return -1;
  erracc e = {0, 0, 0};
  double r, sum = 0;
  for (int64_t i = 0; i < rows_of(x); i++) {
    linear_row(x, i, w, b, &r);
    acc_add(&e, at(c->outs[0], i), r, 0);
    sum += r;
  }
  acc_add(&e, at(c->outs[1], 0), sum / (double)rows_of(x), 0);
  return acc_norm(&e);
}

/* add_const:K - y = x + K. */
static double check_add_const(const ctx *c, const char *arg) {
  double k = atof(arg);
  const td_tensor *x = input(c, 0), *y = c->outs[0];
  if (!x || y->numel != x->numel) return -1;
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < x->numel; i++) acc_add(&e, at(y, i), at(x, i) + k, 0);
  return acc_norm(&e);
}

static double gelu_tanh64(double z) {
  return 0.5 * z * (1 + tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)));
}

static double gelu_erf64(double z) { return 0.5 * z * (1 + erf(z / sqrt(2.0))); }

/* gelu_tanh:W:B / gelu_erf:W:B (scalars) or gelu_tanh / gelu_erf with
 * inputs (x, w, b): max |y - r| / max(|r|, 1) on every 97th element. */
static double check_gelu(const ctx *c, const char *arg, int erf_form) {
  const td_tensor *x = input(c, 0), *y = c->outs[0];
  const td_tensor *w = input(c, 1), *b = input(c, 2);
  double ws = 1, bs = 0;
  if (arg && sscanf(arg, "%lf:%lf", &ws, &bs) != 2) return -1;
  if (!x || y->numel != x->numel || (!arg && (!w || !b))) return -1;
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < x->numel; i += 97) {
    double z = arg ? at(x, i) * ws + bs : at(x, i) * at(w, i) + at(b, i);
    acc_add(&e, at(y, i), erf_form ? gelu_erf64(z) : gelu_tanh64(z), 1.0);
  }
  return e.max_rel;
}

/* gemm: C = A @ B on 4096 sampled entries; max|C - R| / max|R|. */
static double check_gemm(const ctx *c) {
  const td_tensor *a = input(c, 0), *b = input(c, 1), *y = c->outs[0];
  if (!a || !b || a->rank != 2 || b->rank != 2) return -1;
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  uint64_t s = 42;
  erracc e = {0, 0, 0};
  for (int t = 0; t < 4096; t++) {
    int64_t i = (int64_t)(splitmix(&s) % (uint64_t)m), j = (int64_t)(splitmix(&s) % (uint64_t)n);
    double r = 0;
    for (int64_t q = 0; q < k; q++) r += at(a, i * k + q) * at(b, q * n + j);
    acc_add(&e, at(y, i * n + j), r, 0);
  }
  return acc_norm(&e);
}

/* mlp: fc3(relu(fc2(relu(fc1(x))))) on up to 16 rows; max|y - r| / max|r|. */
static double check_mlp(const ctx *c) {
  const td_tensor *x = input(c, 0), *y = c->outs[0];
  const td_tensor *w[3] = {param(c, "fc1.weight"), param(c, "fc2.weight"), param(c, "fc3.weight")};
  const td_tensor *b[3] = {param(c, "fc1.bias"), param(c, "fc2.bias"), param(c, "fc3.bias")};
  if (!x || !w[0] || !w[1] || !w[2]) return -1;
  int64_t rows = rows_of(x), step = rows > 16 ? rows / 16 : 1, no = w[2]->shape[0];
  double *h = malloc(sizeof(double) * 4096), *h2 = malloc(sizeof(double) * 4096);
  td_tensor *row = td_tensor_new(TD_F64, 1, &x->shape[1], NULL);
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < rows; i += step) {
    linear_row(x, i, w[0], b[0], h);
    for (int l = 1; l < 3; l++) {
      for (int64_t j = 0; j < w[l]->shape[1]; j++) ((double *)row->data)[j] = h[j] > 0 ? h[j] : 0;
      linear_row(row, 0, w[l], b[l], h2);
      memcpy(h, h2, sizeof(double) * (size_t)w[l]->shape[0]);
    }
    for (int64_t j = 0; j < no; j++) acc_add(&e, at(y, i * no + j), h[j], 0);
  }
  td_tensor_release(row);
  free(h), free(h2);
  return acc_norm(&e);
}

/* softmax / layernorm over the last axis on 32 sampled rows. */
static double check_rows(const ctx *c, int layernorm, double eps) {
  const td_tensor *x = input(c, 0), *y = c->outs[0], *g = input(c, 1), *bb = input(c, 2);
  if (!x || y->numel != x->numel || (layernorm && (!g || !bb))) return -1;
  int64_t n = x->shape[x->rank - 1], rows = rows_of(x), step = rows > 32 ? rows / 32 : 1;
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < rows; i += step) {
    const int64_t o = i * n;
    double m = layernorm ? 0 : -INFINITY, s = 0;
    for (int64_t j = 0; j < n; j++) m = layernorm ? m + at(x, o + j) : fmax(m, at(x, o + j));
    if (layernorm) m /= (double)n;
    for (int64_t j = 0; j < n; j++) {
      double d = at(x, o + j) - m;
      s += layernorm ? d * d : exp(d);
    }
    double rstd = 1 / sqrt(s / (double)n + eps);
    for (int64_t j = 0; j < n; j++) {
      double d = at(x, o + j) - m;
      double r = layernorm ? d * rstd * at(g, j) + at(bb, j) : exp(d) / s;
      acc_add(&e, at(y, o + j), r, layernorm ? 1.0 : 1e-3);
    }
  }
  return e.max_rel;
}

/* block: the W6 pre-norm transformer block (bench/w6_block.td) on batch 0.
 * x + proj(attn(ln1(x))), then h + fc2(gelu(fc1(ln2(h)))); heads of 64. */
static void ln_rows(const double *x, int64_t s, int64_t d, const td_tensor *g, const td_tensor *b,
                    double *out) {
  for (int64_t i = 0; i < s; i++) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < d; j++) m += x[i * d + j];
    m /= (double)d;
    for (int64_t j = 0; j < d; j++) v += (x[i * d + j] - m) * (x[i * d + j] - m);
    double r = 1 / sqrt(v / (double)d + 1e-5);
    for (int64_t j = 0; j < d; j++) out[i * d + j] = (x[i * d + j] - m) * r * at(g, j) + at(b, j);
  }
}

static void lin_rows(const double *x, int64_t s, const td_tensor *w, const td_tensor *b, double *out) {
  int64_t o = w->shape[0], in = w->shape[1];
  for (int64_t i = 0; i < s; i++)
    for (int64_t j = 0; j < o; j++) {
      double acc = at(b, j);
      for (int64_t k = 0; k < in; k++) acc += x[i * in + k] * at(w, j * in + k);
      out[i * o + j] = acc;
    }
}

static void attention_rows(const double *qkv, int64_t s, int64_t d, int heads, double *o) {
  int64_t dh = d / heads;
  double *p = malloc(sizeof(double) * (size_t)s);
  for (int h = 0; h < heads; h++)
    for (int64_t i = 0; i < s; i++) {
      double m = -INFINITY, z = 0;
      for (int64_t j = 0; j < s; j++) {
        double dot = 0;
        for (int64_t k = 0; k < dh; k++) dot += qkv[i * 3 * d + h * dh + k] * qkv[j * 3 * d + d + h * dh + k];
        p[j] = dot / sqrt((double)dh);
        m = fmax(m, p[j]);
      }
      for (int64_t j = 0; j < s; j++) z += (p[j] = exp(p[j] - m));
      for (int64_t k = 0; k < dh; k++) {
        double acc = 0;
        for (int64_t j = 0; j < s; j++) acc += p[j] / z * qkv[j * 3 * d + 2 * d + h * dh + k];
        o[i * d + h * dh + k] = acc;
      }
    }
  free(p);
}

static double check_block(const ctx *c) {
  const td_tensor *x = input(c, 0), *y = c->outs[0];
  const char *names[] = {"ln1_w", "ln1_b", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias",
                         "ln2_w", "ln2_b", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  const td_tensor *p[12];
  for (int i = 0; i < 12; i++)
    if (!(p[i] = param(c, names[i]))) return -1;
  if (!x || x->rank != 3) return -1;
  int64_t s = x->shape[1], d = x->shape[2], ff = p[8]->shape[0];
  double *h = malloc(sizeof(double) * (size_t)(s * d)), *t = malloc(sizeof(double) * (size_t)(s * 3 * d));
  double *a = malloc(sizeof(double) * (size_t)(s * d)), *x0 = malloc(sizeof(double) * (size_t)(s * d));
  double *f = malloc(sizeof(double) * (size_t)(s * ff));
  for (int64_t i = 0; i < s * d; i++) x0[i] = at(x, i); /* batch 0 */
  ln_rows(x0, s, d, p[0], p[1], h);
  lin_rows(h, s, p[2], p[3], t);
  attention_rows(t, s, d, (int)(d / 64), a);
  lin_rows(a, s, p[4], p[5], h);
  for (int64_t i = 0; i < s * d; i++) x0[i] += h[i];
  ln_rows(x0, s, d, p[6], p[7], h);
  lin_rows(h, s, p[8], p[9], f);
  for (int64_t i = 0; i < s * ff; i++) f[i] = gelu_erf64(f[i]);
  lin_rows(f, s, p[10], p[11], h);
  erracc e = {0, 0, 0};
  for (int64_t i = 0; i < s * d; i++) acc_add(&e, at(y, i), x0[i] + h[i], 0);
  free(h), free(t), free(a), free(x0), free(f);
  return acc_norm(&e);
}

/* Dispatches --check KIND[:ARGS]; *tol is the error above which the result
 * counts as wrong. */
static double run_check(const ctx *c, double *tol) {
  const char *k = c->o->check, *arg = strchr(k, ':');
  size_t n = arg ? (size_t)(arg - k) : strlen(k);
  arg = arg ? arg + 1 : NULL;
  *tol = 1e-4;
#define IS(name) (n == strlen(name) && !strncmp(k, name, n))
  if (IS("none")) return NAN;
  if (IS("linear")) return check_linear(c, arg ? arg : "h");
  if (IS("where_pm1")) return check_where_pm1(c, arg ? arg : "h");
  if (IS("linear_mean")) return check_linear_mean(c, arg ? arg : "h");
  if (IS("add_const")) return check_add_const(c, arg ? arg : "0");
  if (IS("gelu_tanh")) return check_gelu(c, arg, 0);
  if (IS("gelu_erf")) return check_gelu(c, arg, 1);
  if (IS("gemm")) return check_gemm(c);
  if (IS("mlp")) return check_mlp(c);
  if (IS("softmax")) return check_rows(c, 0, 0);
  if (IS("layernorm")) return check_rows(c, 1, arg ? atof(arg) : 1e-5);
  if (IS("block")) return check_block(c);
#undef IS
  fprintf(stderr, "harness: unknown --check '%s'\n", k);
  return -2;
}

/* ---- timing -------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct timing {
  double median, min, max;
  int runs, inner;
} timing;

static void summarise(double *t, int n, int inner, timing *out) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  out->median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  out->min = t[0], out->max = t[n - 1], out->runs = n, out->inner = inner;
}

/* Warm-up, then runs x inner calls; per-call times into *tm. */
static int time_eager(ctx *c, timing *tm) {
  double one = 0;
  for (int w = 0; w < c->o->warmup; w++) {
    double t0 = now_s();
    if (call_eager(c)) return -1;
    release_outs(c);
    one = now_s() - t0;
  }
  if (one <= 0) {
    double t0 = now_s();
    if (call_eager(c)) return -1;
    release_outs(c);
    one = now_s() - t0;
  }
  int inner = c->o->inner;
  if (inner <= 0) {
    double k = c->o->target_ms * 1e-3 / (one > 1e-9 ? one : 1e-9);
    inner = k < 1 ? 1 : k > 100000 ? 100000 : (int)k;
  }
  double t[MAX_RUNS];
  for (int r = 0; r < c->o->runs; r++) {
    double t0 = now_s();
    for (int i = 0; i < inner; i++) {
      if (call_eager(c)) return -1;
      release_outs(c);
    }
    t[r] = (now_s() - t0) / inner;
  }
  summarise(t, c->o->runs, inner, tm);
  return 0;
}

/* ---- program loading ------------------------------------------------------ */

typedef struct loaded {
  td_arena *arena;
  td_diags diags;
  td_graph *g;
} loaded;

static int load_graph(const opts *o, loaded *l) {
  l->arena = td_arena_new();
  td_diags_init(&l->diags, l->arena);
  td_program *p = td_program_new(l->arena, &l->diags);
  if (!p) return fail("%s", "out of memory");
  for (int i = 0; i < o->n_search; i++) td_program_add_search_dir(p, o->search[i]);
  l->g = NULL;
  if (!td_program_load_file(p, o->file)) l->g = td_program_lower(p, o->entry);
  if (!l->g) {
    td_diag_render(&l->diags, stderr, 0);
    return fail("cannot lower entry '%s'", o->entry);
  }
  return 0;
}

/* W7 today: the front end (parse, elaborate, verify) of one entry, cold in
 * a fresh arena each time. */
static int frontend_only(const opts *o) {
  double t[MAX_RUNS];
  int nodes = 0;
  for (int r = -1; r < o->runs; r++) {
    loaded l;
    double t0 = now_s();
    int rc = load_graph(o, &l);
    double dt = now_s() - t0;
    if (!rc) nodes = l.g->n_nodes;
    td_arena_free(l.arena);
    if (rc) return -1;
    if (r >= 0) t[r] = dt;
  }
  timing tm;
  summarise(t, o->runs, 1, &tm);
  printf("{\"label\": \"%s\", \"mode\": \"frontend\", \"entry\": \"%s\", \"status\": \"ok\", "
         "\"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"runs\": %d, \"nodes\": %d}\n",
         o->label, o->entry, tm.median, tm.min, tm.max, tm.runs, nodes);
  return 0;
}

static int make_inputs(const opts *o, ctx *c) {
  if (c->g->n_inputs > MAX_INPUTS) return fail("%s", "too many entry arguments");
  for (int i = 0; i < c->g->n_inputs; i++) {
    const char *name = c->g->nodes[c->g->inputs[i]].name;
    const input_spec *sp = NULL;
    for (int k = 0; k < o->n_in; k++)
      if (!strcmp(o->in[k].name, name)) sp = &o->in[k];
    if (!sp) return fail("missing --in for argument '%s'", name);
    td_err err;
    if (!(c->inputs[i] = td_tensor_new(sp->dtype, sp->rank, sp->shape, &err))) return fail("%s", err.msg);
    fill_input(c->inputs[i], sp, o->seed);
  }
  return 0;
}

static void print_result(const ctx *c, const timing *tm, double relerr, double tol, double fe) {
  const opts *o = c->o;
  int ok = !(relerr > tol) && !isnan(relerr);
  if (!strcmp(o->check, "none")) ok = 1;
  printf("{\"label\": \"%s\", \"mode\": \"%s\", \"entry\": \"%s\", \"status\": \"ok\", "
         "\"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"runs\": %d, \"inner\": %d, ",
         o->label, c->cc ? "compiled" : "eager", o->entry, tm->median, tm->min, tm->max, tm->runs, tm->inner);
  if (isnan(relerr)) printf("\"relerr\": null, ");
  else printf("\"relerr\": %.3g, ", relerr);
  if (c->cc) printf("\"compile_cold_s\": %.6g, \"compile_cached_s\": %.6g, ", c->compile_cold, c->compile_cached);
  if (c->cc && o->n_new_shape) printf("\"new_shapes\": [%s], ", c->new_shapes);
  printf("\"tol\": %.3g, \"correct\": %s, \"check\": \"%s\", \"nodes\": %d, \"frontend_s\": %.6g}\n",
         tol, ok ? "true" : "false", o->check, c->g->n_nodes, fe);
}

/* ---- the compiled path --------------------------------------------------- */

/* One compiled call; outputs (graph outputs, then printed values) kept in
 * c->outs as for call_eager. */
static int call_compiled(ctx *c) {
  td_err err;
  td_span sp = {0};
  if (td_compiled_run(c->cc, c->inputs, c->params, c->calls++, &c->outs, &err, &sp)) {
    fprintf(stderr, "harness: %s: compiled run failed: %s\n", c->o->entry, err.msg);
    return -1;
  }
  c->n_outs = ((const td_plan *)c->plan)->n_out_nodes;
  return 0;
}

/* Optimise, plan and compile g; cache as in td_compile_opts.  *plan
 * receives the plan (in g's arena). */
static td_compiled *compile_graph(td_graph *g, int cache, td_plan **plan) {
  td_err err;
  /* a training step's updates become outputs written into the parameters,
   * as td_prepare runs it: lowered as it is, its backward and update would
   * be dead code, and a "step" would time its forward and loss only */
  const td_graph *run = td_graph_with_update_outputs(g, 1, &err);
  if (!run || !(*plan = td_lower(run, NULL, NULL, &err))) {   /* the driver's lowering */
    fail("%s", err.msg);
    return NULL;
  }
  td_compile_opts co = {-1, 0, NULL, cache};
  td_compiled *cc = td_compile(*plan, &co, &err);
  if (!cc) fail("%s", err.msg);
  return cc;
}

/* Compile times of o's entry, from the lowered graph (optimise + plan +
 * code generation + gcc, or the cache lookup and dlopen): cold (cache off)
 * and cached (a fresh cache directory, filled by one compile; best of two
 * reads).  *hit says whether the cached compile really came from the cache. */
static int compile_times(const opts *o, double *cold, double *cached, int *hit) {
  char dir[] = "/tmp/tdsl-bench-cacheXXXXXX";
  if (!mkdtemp(dir)) return fail("%s", "cannot make a temporary cache directory");
  char *old = getenv("TDSL_CACHE_DIR") ? strdup(getenv("TDSL_CACHE_DIR")) : NULL;
  setenv("TDSL_CACHE_DIR", dir, 1);
  int rc = 0;
  *cold = *cached = 1e30;
  for (int pass = 0; pass < 4 && !rc; pass++) {   /* 0: cold, 1: fill, 2-3: cached */
    loaded l;
    if (load_graph(o, &l)) return -1;
    td_plan *plan;
    double t0 = now_s();
    td_compiled *cc = compile_graph(l.g, pass > 0, &plan);
    double dt = now_s() - t0;
    if (!cc) rc = -1;
    else if (pass == 0) *cold = dt;
    else if (pass >= 2 && dt < *cached) *cached = dt, *hit = td_compiled_from_cache(cc);
    td_compiled_free(cc);
    td_arena_free(l.arena);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) { /* a leftover temporary directory is harmless */ }
  if (old) setenv("TDSL_CACHE_DIR", old, 1), free(old);
  else unsetenv("TDSL_CACHE_DIR");
  return rc;
}

/* --new-shape NAME=SPEC...: after the timed runs, each spec in turn
 * replaces input NAME by a fresh tensor of its shape, and the same compiled
 * entry (nothing is compiled again: the symbolic sizes are bound from the
 * inputs at each call) is called twice; the first and the second call are
 * timed and the first one's outputs checked.  Appends one JSON object per
 * spec to c->new_shapes. */
static int new_shapes(ctx *c) {
  const opts *o = c->o;
  size_t len = 0;
  c->new_shapes[0] = 0;
  for (int k = 0; k < o->n_new_shape; k++) {
    const input_spec *sp = &o->new_shape[k];
    int idx = -1;
    for (int i = 0; i < c->g->n_inputs; i++)
      if (!strcmp(c->g->nodes[c->g->inputs[i]].name, sp->name)) idx = i;
    if (idx < 0) return fail("--new-shape names '%s', which is not an argument of the entry", sp->name);
    td_err err;
    td_tensor *t = td_tensor_new(sp->dtype, sp->rank, sp->shape, &err);
    if (!t) return fail("%s", err.msg);
    fill_input(t, sp, o->seed);
    td_tensor_release(c->inputs[idx]);
    c->inputs[idx] = t;
    double t0 = now_s();
    if (call_eager(c)) return -1;
    double first = now_s() - t0, tol;
    double relerr = run_check(c, &tol);
    release_outs(c);
    if (relerr == -2) return -1;
    t0 = now_s();
    if (call_eager(c)) return -1;
    double second = now_s() - t0;
    release_outs(c);
    char shape[160];
    int n = 0;
    for (int d = 0; d < sp->rank && n < (int)sizeof shape - 24; d++)
      n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", d ? "," : "", (long long)sp->shape[d]);
    char rel[32];
    if (relerr < 0 || isnan(relerr)) snprintf(rel, sizeof rel, "null");
    else snprintf(rel, sizeof rel, "%.3g", relerr);
    int w = snprintf(c->new_shapes + len, sizeof c->new_shapes - len,
                     "%s{\"input\": \"%s\", \"shape\": [%s], \"first_call_s\": %.6g, \"second_call_s\": %.6g, "
                     "\"recompiled\": false, \"relerr\": %s, \"correct\": %s}",
                     k ? ", " : "", sp->name, shape, first, second, rel,
                     (relerr >= 0 && !(relerr > tol)) || !strcmp(o->check, "none") ? "true" : "false");
    if (w < 0 || (size_t)w >= sizeof c->new_shapes - len) return fail("%s", "too many --new-shape results");
    len += (size_t)w;
  }
  return 0;
}

static int run_compiled(const opts *o) {
  double cold = 0, cached = 0;
  int hit = 0;
  if (compile_times(o, &cold, &cached, &hit)) return -1;
  if (o->compile_only) {
    printf("{\"label\": \"%s\", \"mode\": \"compiled\", \"entry\": \"%s\", \"status\": \"ok\", "
           "\"compile_cold_s\": %.6g, \"compile_cached_s\": %.6g, \"cache_hit\": %s}\n",
           o->label, o->entry, cold, cached, hit ? "true" : "false");
    return 0;
  }
  loaded l;
  double t0 = now_s();
  if (load_graph(o, &l)) return -1;
  double fe = now_s() - t0;
  ctx c = {.o = o, .g = l.g};
  int rc = -1;
  td_err err;
  td_plan *plan = NULL;
  c.params = calloc((size_t)l.g->n_params + 1, sizeof *c.params);
  if (make_inputs(o, &c)) goto done;
  if (td_make_params(l.g, NULL, o->seed, c.params, &err)) {
    fail("%s", err.msg);
    goto done;
  }
  if (!(c.cc = compile_graph(l.g, 0, &plan))) goto done;
  c.plan = plan;
  if (call_eager(&c)) goto done;
  double tol, relerr = run_check(&c, &tol);
  release_outs(&c);
  if (relerr == -2) goto done;
  if (relerr == -1) {
    fail("the outputs or parameters do not fit --check %s", o->check);
    goto done;
  }
  timing tm;
  if (time_eager(&c, &tm)) goto done;
  if (new_shapes(&c)) goto done;
  c.compile_cold = cold, c.compile_cached = cached;
  print_result(&c, &tm, relerr, tol, fe);
  rc = 0;
done:
  td_compiled_free(c.cc);
  for (int i = 0; i < l.g->n_inputs && i < MAX_INPUTS; i++) td_tensor_release(c.inputs[i]);
  for (int i = 0; i < l.g->n_params; i++) td_tensor_release(c.params[i]);
  free(c.params);
  td_arena_free(l.arena);
  return rc;
}

static int run_eager(const opts *o) {
  loaded l;
  double t0 = now_s();
  if (load_graph(o, &l)) return -1;
  double fe = now_s() - t0;
  ctx c = {.o = o, .g = l.g};
  int rc = -1;
  td_err err;
  c.params = calloc((size_t)l.g->n_params + 1, sizeof *c.params);
  if (make_inputs(o, &c)) goto done;
  if (td_make_params(l.g, NULL, o->seed, c.params, &err)) {
    fail("%s", err.msg);
    goto done;
  }
  if (call_eager(&c)) goto done;
  double tol, relerr = run_check(&c, &tol);
  release_outs(&c);
  if (relerr == -2) goto done;
  if (relerr == -1) {
    fail("the outputs or parameters do not fit --check %s", o->check);
    goto done;
  }
  timing tm;
  if (time_eager(&c, &tm)) goto done;
  print_result(&c, &tm, relerr, tol, fe);
  rc = 0;
done:
  for (int i = 0; i < l.g->n_inputs && i < MAX_INPUTS; i++) td_tensor_release(c.inputs[i]);
  for (int i = 0; i < l.g->n_params; i++) td_tensor_release(c.params[i]);
  free(c.params);
  td_arena_free(l.arena);
  return rc;
}

/* ---- built artifacts: their inputs and the check of their outputs ------- */

/* The entry's graph, inputs and parameters, as run_eager prepares them. */
static int prepare(const opts *o, loaded *l, ctx *c) {
  memset(c, 0, sizeof *c);
  c->o = o;
  if (load_graph(o, l)) return -1;
  c->g = l->g;
  c->params = calloc((size_t)l->g->n_params + 1, sizeof *c->params);
  td_err err;
  if (!c->params || make_inputs(o, c)) return -1;
  if (td_make_params(l->g, NULL, o->seed, c->params, &err)) return fail("%s", err.msg);
  return 0;
}

static void unprepare(loaded *l, ctx *c) {
  for (int i = 0; c->g && i < c->g->n_inputs && i < MAX_INPUTS; i++) td_tensor_release(c->inputs[i]);
  for (int i = 0; c->params && i < c->g->n_params; i++) td_tensor_release(c->params[i]);
  free(c->params);
  td_arena_free(l->arena);
}

/* --write-inputs DIR: the generated inputs as DIR/NAME.npy; the JSON line
 * says how many inputs and outputs the entry has. */
static int write_inputs(const opts *o) {
  loaded l;
  ctx c;
  int rc = prepare(o, &l, &c);
  for (int i = 0; !rc && i < c.g->n_inputs; i++) {
    char path[4096];
    td_err err;
    snprintf(path, sizeof path, "%s/%s.npy", o->write_inputs, c.g->nodes[c.g->inputs[i]].name);
    if (td_npy_write(path, c.inputs[i], &err)) rc = fail("%s", err.msg);
  }
  if (!rc)
    printf("{\"label\": \"%s\", \"status\": \"ok\", \"inputs\": %d, \"outputs\": %d}\n", o->label,
           c.g->n_inputs, c.g->n_outputs);
  unprepare(&l, &c);
  return rc;
}

/* --mode outputs: reads the comma-separated .npy files as the entry's
 * outputs (in order) and checks them; one JSON object with relerr. */
static int check_outputs(const opts *o) {
  loaded l;
  ctx c;
  int rc = prepare(o, &l, &c), n = 0;
  td_tensor **outs = NULL;
  if (!rc && !(outs = calloc((size_t)c.g->n_outputs + 1, sizeof *outs))) rc = fail("%s", "out of memory");
  for (const char *p = o->outputs; !rc && *p; n++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char path[4096];
    td_err err;
    if (n == c.g->n_outputs || len >= sizeof path) {
      rc = fail("more --outputs than the entry's %s outputs", "");
      break;
    }
    memcpy(path, p, len), path[len] = 0;
    if (td_npy_read(path, &outs[n], &err)) rc = fail("%s", err.msg);
    p = e ? e + 1 : p + len;
  }
  if (!rc && n == 0) rc = fail("%s", "--outputs names no file");
  double tol = 0, relerr = 0;
  if (!rc) {
    c.outs = outs;
    relerr = run_check(&c, &tol);
    c.outs = NULL;
    if (relerr == -2) rc = -1;
    else if (relerr == -1) rc = fail("the outputs or parameters do not fit --check %s", o->check);
  }
  if (!rc) {
    int ok = !strcmp(o->check, "none") || (!(relerr > tol) && !isnan(relerr));
    printf("{\"label\": \"%s\", \"mode\": \"outputs\", \"entry\": \"%s\", \"status\": \"ok\", ", o->label, o->entry);
    if (isnan(relerr)) printf("\"relerr\": null, ");
    else printf("\"relerr\": %.3g, ", relerr);
    printf("\"tol\": %.3g, \"correct\": %s, \"check\": \"%s\"}\n", tol, ok ? "true" : "false", o->check);
  }
  for (int i = 0; outs && i < n; i++) td_tensor_release(outs[i]);
  free(outs);
  unprepare(&l, &c);
  return rc;
}

int main(int argc, char **argv) {
  opts o;
  if (parse_opts(argc, argv, &o)) return 2;
  if (o.frontend_only) return frontend_only(&o) ? 1 : 0;
  if (o.write_inputs) return write_inputs(&o) ? 1 : 0;
  if (!strcmp(o.mode, "outputs")) return check_outputs(&o) ? 1 : 0;
  if (!strcmp(o.mode, "compiled")) return run_compiled(&o) ? 1 : 0;
  return run_eager(&o) ? 1 : 0;
}

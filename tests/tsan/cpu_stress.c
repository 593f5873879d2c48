/* cpu_stress.c - the CPU paths on several threads at once, under
 * ThreadSanitizer (.ci/run builds the library and the artifact runtime
 * with -fsanitize=thread and runs this; tests/unit/test_build.c builds
 * and runs it without sanitizers in make check).
 *
 *   usage: cpu_stress ITERATIONS WORKDIR
 *   (WORKDIR is made if needed; it holds the compile cache, emptied
 *   first, and two weights files.  Compiled with
 *   -DTD_ARTIFACT='"cstress.h"' and linked with cstress.so, the artifact
 *   `tdsl build tests/tsan/cpu_stress.td --name cstress` makes.  The pool
 *   has three threads unless TDSL_NUM_THREADS says otherwise.)
 *
 * Setup, on the main thread: the weights of CsNet as the artifact's
 * create() makes them (seed 0) and a second set, each written to a
 * safetensors file.  Then THREADS threads, released together by a
 * barrier, and again at the start of every iteration, so that they meet
 * in the front end, the compile cache and libgccjit at the same moment.
 * Each iteration a thread, with its own arena, program, graphs, tensors
 * and compiled code:
 *   - loads tests/tsan/cpu_stress.td and lowers its five entries;
 *   - makes CsNet's parameters both ways (td_make_params from the seed,
 *     and from the second file, read with td_safetensors_read);
 *   - compiles every entry (td_compile): with the cache in the shared
 *     TDSL_CACHE_DIR, at -O2 in iterations 0, 1, 4, 5, ... and -O1 in the
 *     others (two entries per graph: all four threads race to store each
 *     the first time, then to hit it), without the cache for one graph in
 *     four, and keeping the C text for one in five; a cache warning (a
 *     store or a hit that failed) is a failure;
 *   - for three pairs of sizes (N, M), from 1 x 1 to 600 x 160, whose
 *     large kernels are split over the thread pool: runs each entry
 *     eagerly (td_interp_run), compiled (td_compiled_run: a new layout for
 *     each size; CsNet's prepacked weights made again when the parameter
 *     set changes) and through the thread's model of the artifact
 *     (cstress_create per thread; cstress_load_weights from the file of
 *     the set the size uses, when the model holds the other); every
 *     output must equal eager's (shape exactly, values within 1e-5
 *     relative: sums and matmuls add in another order) and print() text
 *     too;
 *   - every other iteration frees its model and creates another while
 *     the other threads call theirs.
 * Exit status 1 on any mismatch or error (the first of each thread is
 * printed), 2 when setup fails; TSan (halt_on_error=1) exits non-zero at
 * the first data race.  libgccjit is not instrumented: see
 * tests/tsan/gccjit.supp. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "lang/elab.h"
#include "interp/interp.h"
#include "runtime/io.h"
#include "runtime/mem.h"
#include "runtime/strbuf.h"
#include "stress_common.h"
#ifndef TD_ARTIFACT
#error "build with -DTD_ARTIFACT='\"cstress.h\"' (the header of tdsl build tests/tsan/cpu_stress.td --name cstress)"
#endif
#include TD_ARTIFACT

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

#define THREADS 4
#define GRAPHS 5
enum { NET = 4 };   /* the entry with parameters */
static const char *const names[GRAPHS] = {"cs_point", "cs_rows", "cs_mm", "cs_soft", "CsNet.forward"};
static const char source[] = TDSL_SRCDIR "/tests/tsan/cpu_stress.td";

/* (N, M); the last is large enough that kernels split over the pool */
static const int64_t sizes[][2] = {{1, 1}, {2, 5}, {3, 16}, {7, 33}, {64, 24}, {600, 160}};
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define SIZES_PER_ITER 3

static char weights_file[2][1100];   /* CsNet's parameters: set 0 (the seed's), set 1 */

/* ---- one thread ---- */

typedef struct worker {
  stress_thread t;            /* first: the print callbacks' user data */
  int iters;
  int compiles, hits, in_memory, calls;
  cstress_model *m;
  int m_set;                  /* the weights set m holds */
} worker;

static int load(td_arena *a, td_program **p) { return stress_load(a, p, source, TDSL_SRCDIR "/stdlib"); }

/* One iteration's state of a thread. */
typedef struct iter {
  td_graph *g[GRAPHS];
  td_plan *plan[GRAPHS];
  td_compiled *c[GRAPHS];
  td_tensor *params[2][8];   /* CsNet's, per weights set */
  int n_params;
} iter;

static int make_params(worker *w, iter *it) {
  td_graph *g = it->g[NET];
  td_err err;
  td_tensor_map map;
  it->n_params = g->n_params;
  if (g->n_params > 8) {
    fail(w, "%s has %d parameters", g->name, g->n_params);
    return -1;
  }
  if (td_make_params(g, NULL, 0, it->params[0], &err)) {
    fail(w, "%s's parameters: %s", g->name, err.msg);
    return -1;
  }
  td_tensor_map_init(&map);
  int rc = td_safetensors_read(weights_file[1], &map, &err) || td_make_params(g, &map, 0, it->params[1], &err);
  td_tensor_map_free(&map);
  if (rc) fail(w, "%s: %s", weights_file[1], err.msg);
  return rc ? -1 : 0;
}

static void compile(worker *w, iter *it, int i, int gi) {
  td_err err;
  td_graph *opt;
  if (td_optimize(it->g[gi], NULL, &opt, NULL, &err) || !(it->plan[gi] = td_plan_build(opt, &err))) {
    fail(w, "%s does not plan: %s", names[gi], err.msg);
    return;
  }
  td_compile_opts co = {i % 4 < 2 ? -1 : 1, (i + gi) % 5 == 4, NULL, (i + gi) % 4 != 3};
  td_compiled *c = it->c[gi] = td_compile(it->plan[gi], &co, &err);
  if (!c) {
    fail(w, "td_compile %s: %s", names[gi], err.msg);
    return;
  }
  w->compiles++;
  w->hits += td_compiled_from_cache(c);
  w->in_memory += !co.cache;
  if (td_compiled_warning(c)) fail(w, "td_compile %s: %s", names[gi], td_compiled_warning(c));
  if (td_compiled_from_cache(c) && !co.cache) fail(w, "td_compile %s: a hit without the cache", names[gi]);
  if (td_compiled_from_cache(c) && !co.keep_c && td_compiled_generated(c))
    fail(w, "td_compile %s: a cache hit built a gccjit context", names[gi]);
  if (co.keep_c && !(td_compiled_c_text(c) && strstr(td_compiled_c_text(c), "extern void")))
    fail(w, "td_compile %s: no C text with keep_c", names[gi]);
}

/* got against eager's want: dtype, shape, values. */
static void compare(worker *w, const char *how, const char *name, int i, const td_tensor *want, td_dtype dt,
                    int rank, const int64_t *shape, const float *got) {
  if (dt != want->dtype || rank != want->rank || memcmp(shape, want->shape, (size_t)rank * sizeof *shape)) {
    char a[128], b[128];
    fail(w, "%s %s: output %d is %s, eager's %s", how, name, i, td_shape_str(dt, rank, shape, a, sizeof a),
         td_shape_str(want->dtype, want->rank, want->shape, b, sizeof b));
    return;
  }
  for (int64_t k = 0; k < want->numel; k++) {
    double x = got[k], y = ((const float *)want->data)[k];
    if (!(fabs(x - y) <= 1e-5 * (1 + fabs(y)))) {
      fail(w, "%s %s: output %d element %lld is %.9g, eager %.9g", how, name, i, (long long)k, x, y);
      return;
    }
  }
}

static void check_prints(worker *w, const char *how, const char *name, const char *want) {
  char *got = stress_take_prints(&w->t);
  if (strcmp(got, want)) fail(w, "%s %s printed \"%s\", eager \"%s\"", how, name, got, want);
  td_free(got);
}

static void run_compiled(worker *w, iter *it, int gi, td_tensor *const *in, td_tensor *const *params,
                         td_tensor *const *ref, const char *printed, const td_run_opts *io) {
  const td_graph *g = it->g[gi];
  td_tensor **all = NULL;
  td_err err;
  if (td_compiled_run(it->c[gi], in, params, 0, &all, &err, NULL)) {
    fail(w, "td_compiled_run %s: %s", names[gi], err.msg);
    return;
  }
  for (int k = 0; k < g->n_outputs; k++)
    compare(w, "compiled", names[gi], k, ref[k], all[k]->dtype, all[k]->rank, all[k]->shape, all[k]->data);
  if (td_compiled_prints(it->plan[gi], all, io, &err)) fail(w, "td_compiled_prints %s: %s", names[gi], err.msg);
  check_prints(w, "compiled", names[gi], printed);
  for (int k = 0; k < it->plan[gi]->n_out_nodes; k++) td_tensor_release(all[k]);
  td_free(all);
}

/* Entry gi of the artifact, sizes n x m, inputs in[], output out. */
static int art_entry(cstress_model *m, int gi, int64_t n, int64_t mm, td_tensor *const *in, float *out) {
  const float *x = in[0]->data;
  switch (gi) {
  case 0: return cstress_cs_point(m, n, mm, x, out);
  case 1: return cstress_cs_rows(m, n, mm, x, out);
  case 2: return cstress_cs_mm(m, n, mm, x, in[1]->data, out);
  case 3: return cstress_cs_soft(m, n, mm, x, out);
  default: return cstress_forward(m, n, x, out);
  }
}

static void run_artifact(worker *w, int gi, int64_t n, int64_t m, td_tensor *const *in, const td_tensor *ref,
                         const char *printed) {
  float *out = malloc((size_t)ref->numel * sizeof *out + 1);
  if (!out) {
    fail(w, "out of memory");
    return;
  }
  w->calls++;
  if (art_entry(w->m, gi, n, m, in, out)) {
    fail(w, "artifact %s: %s", names[gi], cstress_error(w->m));
    td_free(stress_take_prints(&w->t));
  } else {
    compare(w, "artifact", names[gi], 0, ref, ref->dtype, ref->rank, ref->shape, out);
    check_prints(w, "artifact", names[gi], printed);
  }
  free(out);
}

/* Entry gi at sizes n x m with weights set `set`: eager, compiled, the
 * artifact. */
static void check_entry(worker *w, iter *it, int gi, int64_t n, int64_t m, int set, int salt) {
  const td_graph *g = it->g[gi];
  td_tensor *in[2] = {NULL, NULL}, **ref = NULL;
  td_tensor *const *params = gi == NET ? it->params[set] : NULL;
  td_run_opts io;
  td_err err;
  memset(&io, 0, sizeof io);
  io.on_print = stress_on_print;
  io.ud = w;
  io.print_threshold = 1000;
  for (int k = 0; k < g->n_inputs; k++) {
    int64_t shape[2] = {k ? m : n, k ? 24 : gi == NET ? 16 : m};
    if (!(in[k] = td_tensor_new(TD_F32, 2, shape, &err))) {
      fail(w, "%s", err.msg);
      goto out;
    }
    for (int64_t e = 0; e < in[k]->numel; e++)
      ((float *)in[k]->data)[e] = (float)sin(0.37 * (double)e + w->t.id + 1.3 * gi + k + 0.1 * salt);
  }
  if (td_interp_run(g, in, params, &io, &ref, &err, NULL)) {
    fail(w, "eager %s: %s", names[gi], err.msg);
    td_free(stress_take_prints(&w->t));
    goto out;
  }
  char *printed = stress_take_prints(&w->t);
  if (it->c[gi]) run_compiled(w, it, gi, in, params, ref, printed, &io);
  if (w->m) run_artifact(w, gi, n, m, in, ref[0], printed);
  td_free(printed);
  for (int k = 0; k < g->n_outputs; k++) td_tensor_release(ref[k]);
  free(ref);
out:
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
}

/* The artifact's model holds weights set `set` afterwards. */
static void model_weights(worker *w, int set) {
  char err[600];
  if (!w->m || w->m_set == set) return;
  if (cstress_load_weights(w->m, weights_file[set], err, sizeof err)) {
    fail(w, "cstress_load_weights %s: %s", weights_file[set], err);
    return;
  }
  w->m_set = set;
}

static void new_model(worker *w) {
  if (!(w->m = cstress_create())) fail(w, "cstress_create: %s", cstress_error(NULL));
  else cstress_set_print(w->m, stress_on_print, w);
  w->m_set = 0;   /* create() initialises the parameters from the build's seed, 0 */
}

static void iteration(worker *w, int i) {
  iter it;
  memset(&it, 0, sizeof it);
  td_arena *a = td_arena_new();
  td_program *p;
  if (!a || load(a, &p)) {
    fail(w, "%s does not load", source);
    td_arena_free(a);
    return;
  }
  for (int gi = 0; gi < GRAPHS; gi++)
    if (!(it.g[gi] = td_program_lower(p, names[gi]))) {
      fail(w, "%s does not lower", names[gi]);
      td_arena_free(a);
      return;
    }
  if (make_params(w, &it) == 0) {
    for (int gi = 0; gi < GRAPHS && !w->t.failures; gi++) compile(w, &it, i, gi);
    for (int j = 0; j < SIZES_PER_ITER && !w->t.failures; j++) {
      const int64_t *s = sizes[(w->t.id + i * SIZES_PER_ITER + j) % N_SIZES];
      int set = (i + j) % 2;
      model_weights(w, set);
      for (int gi = 0; gi < GRAPHS && !w->t.failures; gi++) check_entry(w, &it, gi, s[0], s[1], set, i * 7 + j);
    }
  }
  for (int gi = 0; gi < GRAPHS; gi++) td_compiled_free(it.c[gi]);
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < it.n_params; k++) td_tensor_release(it.params[s][k]);
  td_arena_free(a);
}

static void *work(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(w->t.barrier);
  new_model(w);
  for (int i = 0; i < w->iters; i++) {
    pthread_barrier_wait(w->t.barrier);   /* also after a failure: the others wait for it */
    if (w->t.failures) continue;
    iteration(w, i);
    if (i % 2 == 1) {   /* while the other threads call theirs */
      cstress_free(w->m);
      new_model(w);
    }
  }
  cstress_free(w->m);
  return NULL;
}

/* ---- setup ---- */

/* Removes the files of the compile cache dir (a run starts cold). */
static void empty_dir(const char *dir) {
  DIR *d = opendir(dir);
  char path[2200];
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
}

/* CsNet's parameters from the seed (what the artifact's create() holds)
 * into weights_file[0], other values of the same shapes into [1]. */
static int write_weights(const char *dir) {
  td_arena *a = td_arena_new();
  td_program *p;
  td_graph *g;
  td_err err;
  td_tensor *params[8];
  int rc = -1;
  snprintf(weights_file[0], sizeof weights_file[0], "%s/seed.safetensors", dir);
  snprintf(weights_file[1], sizeof weights_file[1], "%s/other.safetensors", dir);
  if (load(a, &p) || !(g = td_program_lower(p, names[NET])) || g->n_params > 8 ||
      td_make_params(g, NULL, 0, params, &err)) {
    td_arena_free(a);
    return -1;
  }
  for (int set = 0; set < 2; set++) {
    td_tensor_map map;
    td_tensor_map_init(&map);
    rc = 0;
    for (int k = 0; k < g->n_params && !rc; k++) {
      td_tensor *t = params[k];
      if (set) {
        if (!(t = td_tensor_new(params[k]->dtype, params[k]->rank, params[k]->shape, &err))) rc = -1;
        for (int64_t e = 0; !rc && e < t->numel; e++) ((float *)t->data)[e] = (float)(0.4 * cos(0.71 * (double)e + k));
      }
      if (!rc) rc = td_tensor_map_put(&map, g->nodes[g->params[k]].name, t, &err);
      if (set) td_tensor_release(t);
    }
    if (!rc) rc = td_safetensors_write(weights_file[set], &map, &err);
    td_tensor_map_free(&map);
    if (rc) {
      fprintf(stderr, "cpu_stress: %s: %s\n", weights_file[set], err.msg);
      break;
    }
  }
  for (int k = 0; k < g->n_params; k++) td_tensor_release(params[k]);
  td_arena_free(a);
  return rc;
}

int main(int argc, char **argv) {
  char cache[1100];
  int iters = stress_args(argc, argv, cache, sizeof cache);
  if (!iters) return 2;
  const char *dir = argv[2];
  empty_dir(cache);
  if (write_weights(dir)) {
    fprintf(stderr, "cpu_stress: cannot write CsNet's weights from %s\n", source);
    return 2;
  }
  setenv("TDSL_NUM_THREADS", "3", 0);   /* a pool with workers on any machine */
  static worker w[THREADS];
  for (int t = 0; t < THREADS; t++) w[t] = (worker){.iters = iters};
  double s;
  int bad = stress_run("cpu_stress", THREADS, work, w, sizeof *w, &s);
  if (bad == 2) return 2;
  int compiles = 0, hits = 0, in_memory = 0, calls = 0;
  for (int t = 0; t < THREADS; t++) {
    compiles += w[t].compiles;
    hits += w[t].hits;
    in_memory += w[t].in_memory;
    calls += w[t].calls;
  }
  /* from the second iteration on, entries stored in the first are hit */
  if (!bad && iters >= 2 && !hits) {
    fprintf(stderr, "cpu_stress: no compilation was a cache hit\n");
    bad = 1;
  }
  printf("cpu_stress: %d threads x %d iterations: %d compilations (%d cache hits, %d stored, %d in memory), "
         "%d artifact calls: %s in %.1f s\n",
         THREADS, iters, compiles, hits, compiles - hits - in_memory, in_memory, calls, bad ? "FAILED" : "ok", s);
  return bad;
}

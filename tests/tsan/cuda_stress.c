/* cuda_stress.c - the CUDA path on several threads at once, under
 * ThreadSanitizer (.ci/run builds the library with -fsanitize=thread and
 * runs this against tests/unit/fake_libcuda.c, the stand-in driver whose
 * modules are the same kernels compiled for the CPU).
 *
 *   usage: cuda_stress ITERATIONS WORKDIR
 *   (LD_LIBRARY_PATH must lead to the stand-in libcuda.so.1; WORKDIR is
 *   made if needed and keeps the emulated modules and the compile cache)
 *
 * Setup, on the main thread: each graph of cuda_stress.td is planned and
 * its CUDA module compiled for the CPU under tests/unit/cuda_emu_shim.h
 * (FAKE_CUDA_EMU, each tagged with its graph's name).  Then THREADS
 * threads, released together by a barrier so that their first calls meet
 * in the driver's and NVRTC's loading, the device's set-up and the module
 * cache, each with its own program (parsed on that thread), graphs,
 * tensors and, with TD_ARTIFACT, its own model of the artifact built from
 * the same file.  Per iteration a thread runs one graph (thread t starts
 * at graph t, so the four modules are compiled at once, and then needs the
 * ones the others are compiling) through the driver (td_drive_run: td_lower, then td_cuda_run), every other call
 * captured into a CUDA Graph, and, with TD_ARTIFACT, the same entry
 * of its model, with host pointers or (every third call) device pointers;
 * after every other iteration the model is freed and created again (while
 * the other threads call theirs).  Every output
 * must equal the eager interpreter's (within 1e-5 relative: the reduction
 * order differs), and the print() text must be eager's.  Exit status 1 on
 * any mismatch or error (the first is printed), 2 when setup fails; TSan
 * (halt_on_error=1) exits non-zero at the first data race.
 *
 * Run it twice in one WORKDIR: the first run compiles the modules with
 * NVRTC (one thread per module, the others waiting for it), the second
 * finds them in the disk cache.  With FAKE_CUDA_CAPTURE_US set, each
 * capture waits until another thread's work meets it (fake_libcuda.c): a
 * capture in global mode then fails the others' cuMemAlloc, and a stream
 * shared between calls records their launches.
 *
 * NVRTC is not instrumented and trips TSan inside itself when threads
 * compile at once: run with suppressions=tests/tsan/nvrtc.supp (reports
 * with a frame in libnvrtc only).  Kernels run one at a time in the
 * stand-in driver, 256 POSIX threads per block, which is most of the time
 * under TSan: keep ITERATIONS small (4 is about 25 s on two cores). */
#include <pthread.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/passes.h"
#include "compiler/plan.h"
#include "gpu/codegen_cuda.h"
#include "gpu/runtime_cuda.h"
#include "driver/driver.h"
#include "tests/unit/cuda_emu_shim.h"
#include "lang/elab.h"
#include "interp/interp.h"
#include "runtime/mem.h"
#include "runtime/strbuf.h"
#include "stress_common.h"
#ifdef TD_ARTIFACT
#include TD_ARTIFACT
#endif

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

#define THREADS 4
#define GRAPHS 4
static const char *const names[GRAPHS] = {"stress_a", "stress_b", "stress_c", "stress_d"};
static const char source[] = TDSL_SRCDIR "/tests/tsan/cuda_stress.td";

/* ---- setup ---- */

static int load(td_arena *a, td_program **p) { return stress_load(a, p, source, TDSL_SRCDIR "/stdlib"); }

/* Compiles graph g's CUDA module for the CPU into dir/emu_NAME.so and adds
 * NAME=that to the FAKE_CUDA_EMU list. */
static int emulate(td_graph *g, td_arena *a, const char *dir, char *list, size_t n) {
  td_graph *opt;
  td_plan *plan;
  td_err err;
  td_cuda_code code;
  if (td_optimize(g, NULL, &opt, NULL, &err) || !(plan = td_plan_build(opt, &err)) ||
      td_cuda_codegen(plan, a, 0, &code, &err)) {
    fprintf(stderr, "cuda_stress: %s: %s\n", g->name, err.msg);
    return -1;
  }
  char cpp[1024], so[1024], cmd[2200];
  snprintf(cpp, sizeof cpp, "%s/emu_%s.cpp", dir, g->name);
  snprintf(so, sizeof so, "%s/emu_%s.so", dir, g->name);
  FILE *f = fopen(cpp, "w");
  if (!f) return -1;
  fputs(emu_shim, f);
  fputs(code.src, f);
  fclose(f);
  td_cuda_code_free(&code);
  snprintf(cmd, sizeof cmd, "c++ -std=c++17 -O1 -w -shared -fPIC -pthread -o '%s' '%s'", so, cpp);
  if (system(cmd)) {
    fprintf(stderr, "cuda_stress: cannot compile %s\n", cpp);
    return -1;
  }
  size_t at = strlen(list);
  snprintf(list + at, n - at, "%s%s=%s", at ? ":" : "", g->name, so);
  return 0;
}

/* ---- one thread ---- */

typedef struct worker {
  stress_thread t;   /* first: the print callbacks' user data */
  int iters;
} worker;

/* Inputs and eager's results of one graph, for this thread's sizes. */
typedef struct ref {
  td_graph *g;
  td_tensor *in[2];
  td_tensor **out;
  char *printed;
} ref;

/* got[i] against eager's out[i]: dtype, shape and values. */
static void compare(worker *w, const ref *r, const char *how, int n, const float *const *got) {
  for (int i = 0; i < n; i++) {
    const td_tensor *want = r->out[i];
    for (int64_t k = 0; k < want->numel; k++) {
      double a = got[i][k], b = ((const float *)want->data)[k];
      if (!(fabs(a - b) <= 1e-5 * (1 + fabs(b)))) {
        fail(w, "%s %s: output %d element %lld is %.9g, eager %.9g", how, r->g->name, i, (long long)k, a, b);
        return;
      }
    }
  }
}

static void check_prints(worker *w, const ref *r, const char *how) {
  char *got = stress_take_prints(&w->t);
  if (strcmp(got, r->printed)) fail(w, "%s %s printed \"%s\", eager \"%s\"", how, r->g->name, got, r->printed);
  td_free(got);
}

static int make_refs(worker *w, td_program *p, ref *refs, td_run_opts *io) {
  int64_t n = 1 + w->t.id % 2;   /* rows: 1 or 2 (a row reduction launches a block per row) */
  for (int gi = 0; gi < GRAPHS; gi++) {
    ref *r = &refs[gi];
    td_err err;
    if (!(r->g = td_program_lower(p, names[gi]))) {
      fail(w, "%s does not lower", names[gi]);
      return -1;
    }
    int64_t xs[2] = {n, 16}, ws[2] = {16, 8};
    r->in[0] = td_tensor_new(TD_F32, 2, xs, &err);
    r->in[1] = r->g->n_inputs > 1 ? td_tensor_new(TD_F32, 2, ws, &err) : NULL;
    for (int k = 0; k < r->g->n_inputs; k++) {
      if (!r->in[k]) return -1;
      for (int64_t e = 0; e < r->in[k]->numel; e++)
        ((float *)r->in[k]->data)[e] = (float)sin(0.37 * (double)e + w->t.id + 1.3 * gi + k);
    }
    if (td_interp_run(r->g, r->in, NULL, io, &r->out, &err, NULL)) {
      fail(w, "eager %s: %s", names[gi], err.msg);
      return -1;
    }
    r->printed = stress_take_prints(&w->t);
  }
  return 0;
}

static void run_cuda(worker *w, const ref *r, const td_run_opts *io, int graph) {
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = TD_BACKEND_CUDA;
  o.cuda_graph = graph;
  td_tensor **outs = NULL;
  td_err err;
  if (td_drive_run(r->g, &o, r->in, NULL, io, &outs, &err, NULL)) {   /* lowers, then td_cuda_run */
    fail(w, "td_cuda_run %s%s: %s", r->g->name, graph ? " (CUDA Graph)" : "", err.msg);
    td_free(stress_take_prints(&w->t));
    return;
  }
  const float *got[4];
  for (int i = 0; i < r->g->n_outputs; i++) {
    got[i] = outs[i]->data;
    if (outs[i]->numel != r->out[i]->numel) {
      fail(w, "td_cuda_run %s: output %d has %lld elements, eager's %lld", r->g->name, i, (long long)outs[i]->numel,
           (long long)r->out[i]->numel);
      return;
    }
  }
  compare(w, r, graph ? "td_cuda_run (CUDA Graph)" : "td_cuda_run", r->g->n_outputs, got);
  check_prints(w, r, "td_cuda_run");
  for (int i = 0; i < r->g->n_outputs; i++) td_tensor_release(outs[i]);
  free(outs);
}

#ifdef TD_ARTIFACT
typedef int (*alloc_fn)(uint64_t *p, size_t n);
typedef int (*free_fn)(uint64_t p);
typedef int (*copy_fn)(uint64_t dst, const void *src, size_t n, void *stream);
typedef int (*back_fn)(void *dst, uint64_t src, size_t n, void *stream);
static alloc_fn mem_alloc;
static free_fn mem_free;
static copy_fn htod;
static back_fn dtoh;

/* Entry gi of the model with the pointers in a[] (inputs, then the output). */
static int art_entry(stress_model *m, int gi, int device, int64_t n, void *const *a) {
  switch (gi * 2 + device) {
  case 0: return stress_stress_a(m, n, a[0], a[1]);
  case 1: return stress_stress_a_device(m, n, a[0], a[1]);
  case 2: return stress_stress_b(m, n, a[0], a[1]);
  case 3: return stress_stress_b_device(m, n, a[0], a[1]);
  case 4: return stress_stress_c(m, n, a[0], a[1], a[2]);
  case 5: return stress_stress_c_device(m, n, a[0], a[1], a[2]);
  case 6: return stress_stress_d(m, n, a[0], a[1]);
  default: return stress_stress_d_device(m, n, a[0], a[1]);
  }
}

/* The same entry of the artifact: host pointers, or device memory from the
 * driver (the model's calls left its context current on this thread). */
static void run_artifact(worker *w, stress_model *m, const ref *r, int gi, int device) {
  int n_in = r->g->n_inputs, rc = 0;
  const td_tensor *want = r->out[0];
  size_t out_bytes = (size_t)want->numel * sizeof(float);
  float *host = malloc(out_bytes);
  void *a[3];
  uint64_t d[3] = {0, 0, 0};
  for (int k = 0; k < n_in; k++) a[k] = r->in[k]->data;
  a[n_in] = host;
  if (device) {
    void *s = stress_stream(m);
    for (int k = 0; k <= n_in && !rc; k++) {
      size_t bytes = k < n_in ? (size_t)r->in[k]->numel * sizeof(float) : out_bytes;
      rc = mem_alloc(&d[k], bytes) || (k < n_in && htod(d[k], r->in[k]->data, bytes, s));
      a[k] = (void *)(uintptr_t)d[k];
    }
    if (rc) fail(w, "the driver cannot allocate or copy for %s", r->g->name);
    if (!rc && (rc = art_entry(m, gi, 1, r->in[0]->shape[0], a) || stress_synchronize(m)))
      fail(w, "artifact %s_device: %s", r->g->name, stress_error(m));
    if (!rc && (rc = dtoh(host, d[n_in], out_bytes, s) || stress_synchronize(m)))
      fail(w, "the driver cannot copy %s's output back", r->g->name);
    for (int k = 0; k <= n_in; k++)
      if (d[k]) mem_free(d[k]);
  } else if ((rc = art_entry(m, gi, 0, r->in[0]->shape[0], a))) {
    fail(w, "artifact %s: %s", r->g->name, stress_error(m));
  }
  if (!rc) {
    const float *got[1] = {host};
    compare(w, r, device ? "artifact (device pointers)" : "artifact", 1, got);
    check_prints(w, r, device ? "artifact (device pointers)" : "artifact");
  }
  td_free(stress_take_prints(&w->t));
  free(host);
}

static stress_model *new_model(worker *w) {
  stress_model *m = stress_create();
  if (!m) fail(w, "stress_create: %s", stress_error(NULL));
  else stress_set_print(m, stress_on_print, w);
  return m;
}
#endif

static void *work(void *arg) {
  worker *w = arg;
  td_arena *a = td_arena_new();
  td_program *p;
  ref refs[GRAPHS];
  memset(refs, 0, sizeof refs);
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = stress_on_print;
  io.ud = w;
  io.print_threshold = 1000;
  if (load(a, &p) || make_refs(w, p, refs, &io)) {
    if (!w->t.failures) fail(w, "%s does not load", source);
    pthread_barrier_wait(w->t.barrier);
    return NULL;
  }
  pthread_barrier_wait(w->t.barrier);
#ifdef TD_ARTIFACT
  stress_model *m = new_model(w);
#endif
  for (int i = 0; i < w->iters && !w->t.failures; i++) {
    int gi = (w->t.id + i) % GRAPHS;
    run_cuda(w, &refs[gi], &io, i % 2);
#ifdef TD_ARTIFACT
    if (m) run_artifact(w, m, &refs[gi], gi, i % 3 == 2);
    if (i % 2 == 1) {
      stress_free(m);
      m = new_model(w);
    }
#endif
  }
#ifdef TD_ARTIFACT
  stress_free(m);
#endif
  for (int gi = 0; gi < GRAPHS; gi++) {
    ref *r = &refs[gi];
    for (int k = 0; r->g && k < r->g->n_inputs; k++) td_tensor_release(r->in[k]);
    for (int k = 0; r->out && k < r->g->n_outputs; k++) td_tensor_release(r->out[k]);
    free(r->out);
    td_free(r->printed);
  }
  td_arena_free(a);
  return NULL;
}

int main(int argc, char **argv) {
  char cache[1100], list[8192] = "";
  int iters = stress_args(argc, argv, cache, sizeof cache);
  if (!iters) return 2;
  const char *dir = argv[2];
  /* the modules, emulated (the main thread, before any other starts) */
  td_arena *a = td_arena_new();
  td_program *p;
  if (load(a, &p)) {
    fprintf(stderr, "cuda_stress: %s does not load\n", source);
    return 2;
  }
  for (int gi = 0; gi < GRAPHS; gi++) {
    td_graph *g = td_program_lower(p, names[gi]);
    if (!g || emulate(g, a, dir, list, sizeof list)) return 2;
  }
  td_arena_free(a);
  setenv("FAKE_CUDA_EMU", list, 1);
#ifdef TD_ARTIFACT
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  mem_alloc = cu ? (alloc_fn)dlsym(cu, "cuMemAlloc_v2") : NULL;
  mem_free = cu ? (free_fn)dlsym(cu, "cuMemFree_v2") : NULL;
  htod = cu ? (copy_fn)dlsym(cu, "cuMemcpyHtoDAsync_v2") : NULL;
  dtoh = cu ? (back_fn)dlsym(cu, "cuMemcpyDtoHAsync_v2") : NULL;
  if (!mem_alloc || !mem_free || !htod || !dtoh) {
    fprintf(stderr, "cuda_stress: no (stand-in) libcuda.so.1 on the library path\n");
    return 2;
  }
#endif
  static worker w[THREADS];
  for (int t = 0; t < THREADS; t++) w[t] = (worker){.iters = iters};
  double s;
  int bad = stress_run("cuda_stress", THREADS, work, w, sizeof *w, &s);
  if (bad == 2) return 2;
  printf("cuda_stress: %d threads x %d iterations (td_cuda_run%s): %s in %.1f s\n", THREADS, iters,
#ifdef TD_ARTIFACT
         " and the artifact",
#else
         "",
#endif
         bad ? "FAILED" : "ok", s);
  return bad;
}

/* stress_common.h - what the stress programs of tests/tsan/ (cpu_stress.c,
 * cuda_stress.c) share: each thread's record (its first failure, what its
 * calls printed), loading the program on a thread, and starting, joining
 * and reporting on the threads.
 *
 * A program's worker struct begins with a stress_thread `t`; the print
 * callback's user data is the worker (or its `t`). */
#ifndef TD_STRESS_COMMON_H
#define TD_STRESS_COMMON_H

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lang/elab.h"
#include "runtime/mem.h"
#include "runtime/strbuf.h"

typedef struct stress_thread {
  int id;
  int failures;
  char first[1200];   /* the first failure */
  td_strbuf prints;   /* what the call being checked printed */
  pthread_barrier_t *barrier;   /* of all the threads (stress_run's) */
} stress_thread;

static void stress_fail(stress_thread *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void stress_fail(stress_thread *t, const char *fmt, ...) {
  if (!t->failures++) {
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(t->first, sizeof t->first, "thread %d: ", t->id);
    vsnprintf(t->first + n, sizeof t->first - (size_t)n, fmt, ap);
    va_end(ap);
  }
}
#define fail(w, ...) stress_fail(&(w)->t, __VA_ARGS__)

/* td_run_opts.on_print and PREFIX_set_print's callback. */
static void stress_on_print(void *ud, const char *text) { td_sb_puts(&((stress_thread *)ud)->prints, text); }

/* What was printed since the last call (td_malloc'd, never NULL). */
static char *stress_take_prints(stress_thread *t) {
  char *s = t->prints.s ? t->prints.s : td_strdup("");
  memset(&t->prints, 0, sizeof t->prints);
  return s;
}

/* A program of its own, in arena a, loaded from source (the diagnostics
 * live in the arena too); 0 when it loads. */
static int stress_load(td_arena *a, td_program **p, const char *source, const char *stdlib) {
  td_diags *d = td_arena_alloc(a, sizeof *d);
  if (!d) return -1;
  td_diags_init(d, a);
  *p = td_program_new(a, d);
  td_program_add_search_dir(*p, stdlib);
  return td_program_load_file(*p, source);
}

/* The command line "PROG ITERATIONS WORKDIR": WORKDIR is made if needed
 * and the compile cache is WORKDIR/cache (TDSL_CACHE_DIR, into cache[]),
 * on.  Returns ITERATIONS, or 0 after printing the usage. */
static int stress_args(int argc, char **argv, char *cache, size_t n) {
  int iters = argc == 3 ? atoi(argv[1]) : 0;
  if (iters < 1) {
    fprintf(stderr, "usage: %s ITERATIONS WORKDIR\n", argv[0]);
    return 0;
  }
  mkdir(argv[2], 0755);
  snprintf(cache, n, "%s/cache", argv[2]);
  setenv("TDSL_CACHE_DIR", cache, 1);
  unsetenv("TDSL_CACHE");
  return iters;
}

/* Runs fn on n threads, thread k with the k-th of the workers (each
 * `size` bytes, beginning with a stress_thread whose id and barrier, one
 * for the n threads, are set here), joins them and prints each one's
 * failures as "PROG: N failures; the first: ...".  Returns 0, 1 when a
 * thread failed, 2 when one could not be started; *seconds: the time from
 * the first start to the last join. */
static int stress_run(const char *prog, int n, void *(*fn)(void *), void *workers, size_t size, double *seconds) {
  pthread_t th[64];
  pthread_barrier_t barrier;
  struct timespec t0, t1;
  int bad = 0, started = 0;
  if (n > 64 || pthread_barrier_init(&barrier, NULL, (unsigned)n)) return 2;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (; started < n; started++) {
    stress_thread *t = (stress_thread *)((char *)workers + (size_t)started * size);
    t->id = started;
    t->barrier = &barrier;
    if (pthread_create(&th[started], NULL, fn, t)) break;
  }
  if (started < n) {
    fprintf(stderr, "%s: cannot start thread %d\n", prog, started);
    exit(2);   /* the others wait at the barrier */
  }
  for (int k = 0; k < n; k++) {
    stress_thread *t = (stress_thread *)((char *)workers + (size_t)k * size);
    pthread_join(th[k], NULL);
    if (t->failures) {
      fprintf(stderr, "%s: %d failure%s; the first: %s\n", prog, t->failures, t->failures == 1 ? "" : "s", t->first);
      bad = 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_barrier_destroy(&barrier);
  *seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  return bad;
}

#endif

/* pool_stress.c - runtime/pool.c under ThreadSanitizer (.ci/run builds it
 * with -fsanitize=thread and runs it with workers that watch and workers
 * that park).  The Criterion tests (tests/unit/test_runtime.c, "pool")
 * check the same invariants in the ordinary and ASan builds; here TSan
 * also checks that every access the pool's design relies on is ordered.
 *
 * Jobs of 1..64 tasks back to back, each with its context on the stack in
 * the same slot as the previous one's; two callers at once for half of
 * them.  Exit status 1 when a task ran other than exactly once.
 *   usage: pool_stress JOBS   (TDSL_NUM_THREADS, TDSL_SPIN_US as usual) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pool.h"

typedef struct job {
  _Atomic int hits[64];
  int64_t n;
  _Atomic int bad;
} job;

static void task(void *ctx, int64_t i, int tid) {
  job *j = ctx;
  (void)tid;
  if (i < 0 || i >= j->n) atomic_store(&j->bad, 1);
  else atomic_fetch_add(&j->hits[i], 1);
}

static int run_jobs(long jobs, long seed) {
  int wrong = 0;
  for (long r = 0; r < jobs; r++) {
    job j;
    memset(&j, 0, sizeof j);
    j.n = 1 + (r * 7919 + seed) % 64;
    td_pool_run(task, &j, j.n);
    int ok = !atomic_load(&j.bad);
    for (int64_t i = 0; i < j.n; i++) ok = ok && atomic_load(&j.hits[i]) == 1;
    wrong += !ok;
    memset(&j, 0xff, sizeof j);   /* what a late task would find */
  }
  return wrong;
}

static long n_jobs;
static int other_wrong;

static void *second_caller(void *arg) {
  (void)arg;
  other_wrong = run_jobs(n_jobs / 2, 13);
  return NULL;
}

int main(int argc, char **argv) {
  n_jobs = argc > 1 ? atol(argv[1]) : 20000;
  printf("pool_stress: %d threads, %ld jobs\n", td_pool_threads(), n_jobs);
  int wrong = run_jobs(n_jobs / 2, 0);
  pthread_t th;
  if (pthread_create(&th, NULL, second_caller, NULL)) return 2;
  wrong += run_jobs(n_jobs / 2, 7);
  pthread_join(th, NULL);
  wrong += other_wrong;
  printf("pool_stress: %d wrong jobs\n", wrong);
  return wrong ? 1 : 0;
}

/* pool.c - the thread pool of pool.h: workers parked on a condvar, tasks
 * handed out by an atomic counter.
 *
 * One job at a time: td_pool_run publishes (fn, ctx, n) with a new
 * generation number and wakes the workers; every participant (the caller
 * included) takes task numbers from `next` until they run out, then the
 * caller waits until `done` reaches n.  Workers go back to waiting for the
 * next generation.  A worker joins a job under the mutex (`active`), and
 * the caller returns only when every task is done AND no worker is still
 * inside the job, and a worker that wakes after the job is over does not
 * join it, so a late worker can never run tasks of a finished job (whose
 * context may be gone) or of one that replaced it.  A caller that finds the pool busy (another
 * thread is running a job) runs its tasks itself.
 *
 * Waking a parked worker takes the kernel's futex path (several
 * microseconds, more on a loaded machine), longer than the pieces of a
 * small split matmul.  So a worker that finishes a job first watches for
 * the next one for TDSL_SPIN_US microseconds (default 50; 0 parks at once)
 * before it parks, and the caller likewise watches for the workers to
 * finish before it sleeps.  Between calls that are further apart than
 * that, workers are parked and cost nothing.
 */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

typedef struct pool {
  pthread_mutex_t mu;
  pthread_cond_t wake, finished;
  int threads;
  _Atomic unsigned long gen;   /* job number, written under mu */
  td_task_fn fn;
  void *ctx;
  int64_t n;
  _Atomic int64_t done;        /* tasks finished, written under mu */
  _Atomic int active;          /* workers inside the current job, written under mu */
  _Atomic int64_t next;        /* next task number */
  atomic_flag busy;
  int64_t spin_ns;             /* how long to watch before sleeping */
} pool;

static pool P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                 0, 0, NULL, NULL, 0, 0, 0, 0, ATOMIC_FLAG_INIT, 0};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Polls ready(arg) until it holds or P.spin_ns pass; returns ready's last answer. */
static int spin_until(int (*ready)(const void *), const void *arg) {
  if (P.spin_ns <= 0) return ready(arg);
  int64_t end = now_ns() + P.spin_ns;
  for (int i = 0;; i++) {
    if (ready(arg)) return 1;
    relax();
    if ((i & 63) == 63 && now_ns() > end) return ready(arg);
  }
}

static int new_job(const void *seen) { return atomic_load(&P.gen) != *(const unsigned long *)seen; }

static int job_over(const void *n) {
  return atomic_load(&P.done) >= *(const int64_t *)n && atomic_load(&P.active) == 0;
}
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Takes tasks until none are left; returns how many this thread ran. */
static int64_t work(td_task_fn fn, void *ctx, int64_t n, int tid) {
  int64_t ran = 0;
  for (;;) {
    int64_t i = atomic_fetch_add(&P.next, 1);
    if (i >= n) return ran;
    fn(ctx, i, tid);
    ran++;
  }
}

static void *worker(void *arg) {
  int tid = (int)(intptr_t)arg;
  unsigned long seen = 0;
  for (;;) {
    spin_until(new_job, &seen);
    pthread_mutex_lock(&P.mu);
    while (P.gen == seen) pthread_cond_wait(&P.wake, &P.mu);
    seen = P.gen;
    if (P.done >= P.n) {   /* over already: its caller may have returned */
      pthread_mutex_unlock(&P.mu);
      continue;
    }
    td_task_fn fn = P.fn;
    void *ctx = P.ctx;
    int64_t n = P.n;
    P.active++;
    pthread_mutex_unlock(&P.mu);
    int64_t ran = work(fn, ctx, n, tid);
    pthread_mutex_lock(&P.mu);
    P.done += ran;
    P.active--;
    if (P.active == 0 && P.done == n) pthread_cond_signal(&P.finished);
    pthread_mutex_unlock(&P.mu);
  }
  return NULL;
}

static int env_threads(void) {
  const char *s = getenv("TDSL_NUM_THREADS");
  long n = s && *s ? strtol(s, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  return (int)n;
}

static void start(void) {
  int want = env_threads();
  const char *sp = getenv("TDSL_SPIN_US");
  long us = sp && *sp ? strtol(sp, NULL, 10) : 50;
  P.spin_ns = us < 0 ? 0 : us > 100000 ? 100000000 : us * 1000;
  P.threads = 1;
  for (int t = 1; t < want; t++) {
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, worker, (void *)(intptr_t)t) == 0) P.threads++;
    pthread_attr_destroy(&at);
  }
}

int td_pool_threads(void) {
  pthread_once(&once, start);
  return P.threads;
}

void td_pool_run(td_task_fn fn, void *ctx, int64_t n) {
  if (n <= 0) return;
  if (n == 1 || td_pool_threads() == 1 || atomic_flag_test_and_set(&P.busy)) {
    for (int64_t i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  pthread_mutex_lock(&P.mu);
  P.fn = fn;
  P.ctx = ctx;
  P.n = n;
  atomic_store(&P.next, 0);
  P.done = 0;
  P.gen++;
  pthread_cond_broadcast(&P.wake);
  pthread_mutex_unlock(&P.mu);
  int64_t ran = work(fn, ctx, n, 0);
  pthread_mutex_lock(&P.mu);
  P.done += ran;
  pthread_mutex_unlock(&P.mu);
  spin_until(job_over, &n);
  pthread_mutex_lock(&P.mu);
  while (P.done < n || P.active > 0) pthread_cond_wait(&P.finished, &P.mu);
  pthread_mutex_unlock(&P.mu);
  atomic_flag_clear(&P.busy);
}

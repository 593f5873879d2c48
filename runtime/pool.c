/* pool.c - the thread pool of pool.h: workers that watch for jobs, then
 * park on a condvar; tasks claimed from one atomic ticket.
 *
 * One job at a time.  The ticket holds the job's number (high 32 bits)
 * and its next unclaimed task (low 32 bits).  td_pool_run writes the job
 * (fn, ctx, n) into the slot of its number's parity, then publishes
 * ticket = (job << 32 | 0); every participant (the caller included)
 * claims task i by moving the ticket from (job, i) to (job, i + 1) with a
 * compare-and-swap, and only while i < n of that job's slot.  So a late
 * worker can never run a task of a finished job (its context may be gone)
 * or of the one that replaced it: by the time the caller has returned,
 * every task of the job has been claimed, and a ticket of an older job
 * fails the swap.  Two slots, because a worker holding the last job's
 * ticket (job, n) must still compare i with that job's n, not with the
 * next job's, which the caller may be writing (with one slot, a stale
 * ticket passed the check against a larger new n and its swap succeeded:
 * task n of the old job ran with the new one's context).  The next job
 * but one may overwrite a slot only after the next job was published, and
 * then the old ticket's swap fails.  The caller returns when `done` (tasks
 * finished) reaches n.  No lock is taken while workers are awake.
 *
 * Waking a parked worker takes the kernel's futex path (several
 * microseconds, more on a loaded machine), longer than the pieces of a
 * small split matmul.  So a worker that finishes a job watches for the
 * next one for TDSL_SPIN_US microseconds (default 50; 0 parks at once)
 * before it parks, and the caller likewise watches for the workers to
 * finish before it sleeps.  Between calls that are further apart than
 * that, workers are parked and cost nothing.  Parking and waking use the
 * usual pairing: the sleeper announces itself (`sleepers`, `caller_waits`)
 * and re-checks under the mutex; the other side changes the state first,
 * then signals under the mutex if anyone announced (all sequentially
 * consistent atomics, so one of the two always sees the other).
 */
#include "runtime/pool.h"

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
  _Atomic uint64_t ticket;     /* job << 32 | next task */
  struct {                     /* the job: written before its ticket, in slot job & 1 */
    _Atomic(td_task_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int64_t n;
  } slot[2];
  _Atomic int64_t done;        /* tasks of the job finished */
  _Atomic int sleepers;        /* workers parked (or about to) on `wake` */
  _Atomic int caller_waits;    /* the caller parked (or about to) on `finished` (0 or 1) */
  uint32_t job;                /* the last job's number (the caller's, under busy) */
  atomic_flag busy;
  int64_t spin_ns;             /* how long to watch before sleeping */
} pool;

/* everything else starts at zero: the ticket of job 0, whose slot has n = 0 */
static pool P = {.mu = PTHREAD_MUTEX_INITIALIZER,
                 .wake = PTHREAD_COND_INITIALIZER,
                 .finished = PTHREAD_COND_INITIALIZER,
                 .busy = ATOMIC_FLAG_INIT};

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

/* Watches ready(arg) for P.spin_ns, then announces itself (*sleeping + 1)
 * and sleeps on cv until ready holds; whoever makes it hold signals cv
 * under the mutex when it sees an announcement. */
static void wait_until(int (*ready)(const void *), const void *arg, _Atomic int *sleeping, pthread_cond_t *cv) {
  if (spin_until(ready, arg)) return;
  atomic_fetch_add(sleeping, 1);
  pthread_mutex_lock(&P.mu);
  while (!ready(arg)) pthread_cond_wait(cv, &P.mu);
  pthread_mutex_unlock(&P.mu);
  atomic_fetch_sub(sleeping, 1);
}

static uint32_t ticket_job(uint64_t t) { return (uint32_t)(t >> 32); }

static int new_job(const void *seen) { return ticket_job(atomic_load(&P.ticket)) != *(const uint32_t *)seen; }

static int job_over(const void *n) { return atomic_load(&P.done) >= *(const int64_t *)n; }

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Claims and runs tasks of job `job` until none are left; returns how
 * many this thread ran.  fn, ctx and n are read from the job's slot after
 * the ticket showed the job and before the swap that claims a task: a
 * successful swap means the job was not over then, so the slot was still
 * this job's. */
static int64_t work(uint32_t job, int tid) {
  int64_t ran = 0;
  uint64_t t = atomic_load(&P.ticket);
  for (;;) {
    if (ticket_job(t) != job) return ran;
    td_task_fn fn = atomic_load_explicit(&P.slot[job & 1].fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&P.slot[job & 1].ctx, memory_order_relaxed);
    int64_t i = (int64_t)(uint32_t)t;
    if (i >= atomic_load_explicit(&P.slot[job & 1].n, memory_order_relaxed)) return ran;
    if (!atomic_compare_exchange_weak(&P.ticket, &t, t + 1)) continue;   /* t now holds the current ticket */
    fn(ctx, i, tid);
    ran++;
    t = atomic_load(&P.ticket);
  }
}

/* Adds a worker's finished tasks; wakes the caller if it sleeps. */
static void finish(int64_t ran) {
  if (ran == 0) return;
  atomic_fetch_add(&P.done, ran);
  if (atomic_load(&P.caller_waits)) {
    pthread_mutex_lock(&P.mu);
    pthread_cond_signal(&P.finished);
    pthread_mutex_unlock(&P.mu);
  }
}

static void *worker(void *arg) {
  int tid = (int)(intptr_t)arg;
  uint32_t seen = 0;
  for (;;) {
    wait_until(new_job, &seen, &P.sleepers, &P.wake);
    seen = ticket_job(atomic_load(&P.ticket));
    finish(work(seen, tid));
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
  /* one task, one thread, a pool in use by another caller, or more tasks
   * than the ticket counts: here, in order */
  if (n == 1 || n > INT32_MAX || td_pool_threads() == 1 || atomic_flag_test_and_set(&P.busy)) {
    for (int64_t i = 0; i < n; i++) fn(ctx, i, 0);
    return;
  }
  uint32_t job = ++P.job;   /* wraps around: only a change matters, and the parity alternates */
  atomic_store_explicit(&P.slot[job & 1].fn, fn, memory_order_relaxed);
  atomic_store_explicit(&P.slot[job & 1].ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&P.slot[job & 1].n, n, memory_order_relaxed);
  atomic_store(&P.done, 0);
  atomic_store(&P.ticket, (uint64_t)job << 32);
  if (atomic_load(&P.sleepers) > 0) {
    pthread_mutex_lock(&P.mu);
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
  }
  atomic_fetch_add(&P.done, work(job, 0));
  wait_until(job_over, &n, &P.caller_waits, &P.finished);
  atomic_flag_clear(&P.busy);
}

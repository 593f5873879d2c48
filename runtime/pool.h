/* pool.h - a small thread pool for compiled kernels and the interpreter's
 * large matmuls.
 *
 * td_pool_run(fn, ctx, n) runs fn(ctx, i, tid) for i in [0, n): task i on
 * one of the pool's threads (tid in [0, threads)); the calling thread takes
 * part (tid 0), so a pool of one thread is plain sequential calls.  A
 * worker watches for the next job for TDSL_SPIN_US microseconds (default
 * 50) after each one, then parks on a condition variable: back-to-back
 * kernels start without a wake-up, and an idle pool takes no core.
 *
 * The process-wide pool is created on first use with TDSL_NUM_THREADS
 * threads (default: the number of online CPUs, at most 64).  It is meant
 * for one caller at a time; a second concurrent caller runs its tasks on
 * its own thread.
 */
#ifndef TD_POOL_H
#define TD_POOL_H

#include <stdint.h>

typedef void (*td_task_fn)(void *ctx, int64_t task, int tid);

/* Threads of the process-wide pool (>= 1). */
int td_pool_threads(void);

/* Runs n tasks; returns when all have finished. */
void td_pool_run(td_task_fn fn, void *ctx, int64_t n);

#endif

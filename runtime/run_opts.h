/* run_opts.h - how a graph is run, whatever runs it.
 *
 * The options every backend takes (the interpreter, compiled CPU code, the
 * CUDA runtime, the driver over them): where print() output and trace
 * lines go, which call this is (random streams), when to stop.  They sit
 * in the runtime so that no backend needs another backend's header for
 * them.  The library never writes to stdout itself: text goes through the
 * callbacks.
 */
#ifndef TD_RUN_OPTS_H
#define TD_RUN_OPTS_H

#include <signal.h>
#include <stdint.h>

struct td_diags; /* lang/diag.h: the sources, for "file:line:col" */

typedef struct td_run_opts {
  /* Called with the complete text of one print (ends with '\n'). */
  void (*on_print)(void *ud, const char *text);
  /* Called once per executed node when tracing (one line, ends with '\n'). */
  void (*on_trace)(void *ud, const char *line);
  void *ud;
  int trace;             /* call on_trace for every node (eager only) */
  int check_numerics;    /* fail at the first node producing NaN/Inf (eager only) */
  uint64_t call_index;   /* mixed into rand streams: which call this is */
  int64_t print_threshold; /* elements above which prints summarise (1000) */
  /* Sources for trace locations ("file:line:col"); NULL prints "line:col". */
  const struct td_diags *diags;
  /* Optional: when *interrupt becomes non-zero (a SIGINT handler sets it),
   * the run stops before the next node with the error "interrupted". */
  volatile sig_atomic_t *interrupt;
} td_run_opts;

#endif

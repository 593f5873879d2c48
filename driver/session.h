/* session.h - an incremental session: what `tdsl repl` runs.
 *
 * A session evaluates inputs one at a time.  An input is any mix of items
 * (import, model, fn) and statements (let, assignments, for, expressions),
 * exactly as they would appear in a file or a function body.  Definitions
 * and bindings persist from one input to the next: they live in the
 * session's main module, whose globals are the session's scope, so a
 * function defined in the session sees the session's bindings.
 *
 * Each input is elaborated into a fresh graph and run through the driver
 * (driver/driver.h): by the interpreter unless td_session_set_driver chose
 * a compiled backend.
 * Tensors bound by earlier inputs are materialised tensors owned by the
 * session; an input sees each of them as a leaf of its graph (an `input`
 * node, or a `param` node for a model parameter, carrying the literal shape
 * of the tensor), so a model instance keeps the same weights for the whole
 * session.  An input is atomic: when it fails (a syntax, type or shape
 * error, a runtime error, an interrupt) every binding it made is undone.
 *
 * The library prints nothing: diagnostics stay in td_session_diags() for
 * the caller to render, print() output and shown values go to callbacks,
 * and graph listings to a FILE the caller gives.  See docs/repl.md.
 */
#ifndef TD_SESSION_H
#define TD_SESSION_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include "driver/driver.h"
#include "lang/diag.h"
#include "lang/ir.h"
#include "runtime/weights.h"

typedef struct td_session td_session;

typedef struct td_session_opts {
  const char *source_name;  /* how inputs are named in messages ("<repl>") */
  uint64_t seed;            /* rand/randn without seed= and parameter init */
  int64_t print_threshold;  /* elements above which tensors are summarised */
  /* print() output: one complete line per call (ends with '\n'). */
  void (*on_print)(void *ud, const char *text);
  /* The value of an expression statement, formatted: "3 (int)",
   * "[1, 2] (f32[2])" (no trailing newline). */
  void (*on_value)(void *ud, const char *text);
  void *ud;
  /* Polled between graph nodes; non-zero stops the run ("interrupted"). */
  volatile sig_atomic_t *interrupt;
} td_session_opts;

/* A new session (its options are copied); NULL when memory runs out. */
td_session *td_session_new(const td_session_opts *o);
void td_session_free(td_session *s);   /* NULL is fine */

/* Directories searched by `import name`, after the current directory. */
void td_session_add_search_dir(td_session *s, const char *dir);

/* Diagnostics of the last failed call, for td_diag_render; the caller
 * clears them after rendering. */
const td_diags *td_session_diags(const td_session *s);
void td_session_clear_diags(td_session *s);

/* In every function below, `text` is one or more whole lines.  It may
 * start with a REPL command word (":type x @ w"): the word is not part of
 * the input, but messages show the line as typed, with carets at the right
 * columns. */

/* Whether text is a whole input: 1 when it is complete (or already wrong:
 * more lines cannot fix it), 0 when it is a correct beginning that needs
 * more lines (an open bracket, a trailing operator, `} else`).  Leaves no
 * diagnostic and changes nothing. */
int td_session_is_complete(td_session *s, const char *text);

/* Evaluates one input whose first line is line number first_line of the
 * session (for messages).  Shows the value of each expression statement
 * through on_value.  0, or -1 with diagnostics (nothing was bound). */
int td_session_eval(td_session *s, const char *text, int first_line);

/* Loads the items of a .td file into the session (its imports are searched
 * next to it first); `fn main()` and the rest become callable.  0 or -1. */
int td_session_load(td_session *s, const char *path);
/* Loads again every file given to td_session_load, in order.  0 or -1. */
int td_session_reload(td_session *s);

/* The type of the value of `text` (an expression; the last expression
 * statement of several), without running anything: "f32[4, 16]", "int",
 * "fn softmax(x, axis = -1)".  *out is malloc'd.  0, or -1 with
 * diagnostics.  Binds nothing. */
int td_session_type(td_session *s, const char *text, int first_line, char **out);

/* Writes the Graph IR of `text` (td_graph_print's format).  Binds nothing. */
int td_session_ir(td_session *s, const char *text, int first_line, FILE *out);

/* Writes what `tdsl explain` says about the graph of `text`: Graph Count,
 * Graph Break Count, op counts and the kernels the compiler makes of it
 * (or why it cannot plan it).  Binds nothing. */
int td_session_explain(td_session *s, const char *text, int first_line, FILE *out);

/* Timing of `text` on the session's backend: building its graph once,
 * making its parameters, preparing it for the backend once (compiling it:
 * never a timing sample), running it `warmup` times untimed (1 for a
 * runner that compiles on its first call), then `reps` timed runs (0: as
 * many as fit in about half a second, at most 1000).  Binds nothing. */
typedef struct td_session_timing {
  double build_s;           /* elaboration: building the graph */
  double prepare_s;         /* td_prepare: compiling, for a compiled backend (0 with a runner) */
  double run_best_s;        /* fastest timed run */
  double run_mean_s;        /* mean timed run */
  int reps;                 /* timed runs made */
  int n_ops;                /* ops in the graph */
} td_session_timing;
int td_session_time(td_session *s, const char *text, int first_line, int reps, int warmup,
                    td_session_timing *t);

/* How the session runs its graphs: o's backend (TD_BACKEND_EAGER when
 * this was never called), debug output and warnings; the session writes
 * no dumps and gives its own sources.  `tdsl repl` calls it for
 * `:compiled` and `:device`. */
void td_session_set_driver(td_session *s, const td_drive_opts *o);

/* A runner that replaces the driver (tests): same contract as
 * td_interp_run; d holds the sources for messages.  NULL restores the
 * driver. */
typedef int (*td_session_runner)(void *ud, const td_graph *g, const td_diags *d,
                                 td_tensor *const *inputs, td_tensor *const *params,
                                 const td_run_opts *io, td_tensor ***outs, td_err *err,
                                 td_span *err_span);
void td_session_set_runner(td_session *s, td_session_runner run, void *ud);

/* :load-weights: loads the state_dict in safetensors file `path` into the
 * model instance bound to `name` (names relative to the instance, checked
 * as `tdsl run --weights` checks them, with o's options; o may be NULL).
 * All or nothing.  *note receives the non-strict note (malloc'd) or NULL.
 * 0, or -1 with diagnostics.  driver/session_weights.c. */
int td_session_load_weights(td_session *s, const char *name, const char *path, const td_weights_opts *o,
                            char **note);
/* :save-weights: writes the state_dict of the instance bound to `name` to
 * a safetensors file (a temporary file renamed); *count: tensors written.
 * 0, or -1 with diagnostics. */
int td_session_save_weights(td_session *s, const char *name, const char *path, int *count);

/* Number of tensors the session holds (bound values, model parameters);
 * a tensor nothing refers to any more is freed after the input that
 * dropped it.  For tests and memory reports. */
int td_session_tensor_count(const td_session *s);

/* Calls add(ud, name) for every completion of `prefix`: names bound in the
 * session, built-ins and keywords; after "mod." or "m." the items of a
 * module or the members of a model instance (given as "mod.item"). */
void td_session_complete(td_session *s, const char *prefix,
                         void (*add)(void *ud, const char *name), void *ud);

#endif

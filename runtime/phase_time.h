/* phase_time.h - TDSL_DEBUG=time: where the time of loading, lowering
 * and compiling a program goes.
 *
 * TDSL_DEBUG is a comma-separated list of words (and levels: "4" dumps
 * the generated code); with "time" in it, each phase that ends prints one
 * line to stderr, "tdsl: time: <phase> <milliseconds> ms[ (what)]": the
 * front end (parsing and elaboration), lowering an entry point, the IR
 * passes, planning, code generation (building the gccjit context),
 * libgccjit's compilation, loading the code, and for `tdsl build` the
 * descriptor and the link.  Nothing is measured otherwise beyond one
 * clock read per phase.
 */
#ifndef TD_PHASE_TIME_H
#define TD_PHASE_TIME_H

/* Whether the comma-separated list TDSL_DEBUG has `word` in it. */
int td_debug_has(const char *word);

/* A monotonic clock in seconds. */
double td_now(void);

/* With TDSL_DEBUG=time: prints that `phase` took td_now() - since
 * seconds, with an optional note (NULL: none). */
void td_phase_done(const char *phase, double since, const char *note);

#endif

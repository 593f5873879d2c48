/* explain_cmd.h - the compiler's commands: `tdsl explain` (explain_cmd.c)
 * and `tdsl run --compiled` (compile_cmd.c). */
#ifndef TD_EXPLAIN_CMD_H
#define TD_EXPLAIN_CMD_H

#include <stddef.h>
#include "interp/interp.h"

/* Runs `tdsl explain` with main's argc/argv (argv[1] is "explain");
 * returns the exit code: 0, 1 (the program is wrong) or 2 (bad usage). */
int td_cli_explain(int argc, char **argv);

/* The --dump bit of a compiler stage ("fold", "cse", "simplify", "dce",
 * "fused", "c"), or 0 when name[0..len) is none of them. */
unsigned td_cli_compiler_stage(const char *name, size_t len);

/* Like td_interp_run, through the compiler: optimise, plan, compile, run
 * once, print the program's prints (through io->on_print), and return the
 * graph's outputs.  dumps: td_cli_compiler_stage bits. */
int td_cli_run_compiled(const td_graph *g, const td_diags *d, td_tensor *const *inputs,
                        td_tensor *const *params, const td_run_opts *io, unsigned dumps,
                        td_tensor ***outs, td_err *err, td_span *sp);

/* Prints c's compile-cache warning (td_compiled_warning) on stderr, once
 * per process: a REPL that compiles every input says it once. */
struct td_compiled;
void td_cli_cache_warning(const struct td_compiled *c);

#endif

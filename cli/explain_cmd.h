/* explain_cmd.h - `tdsl explain` (explain_cmd.c) and the driver's options
 * as the commands set them (drive_opts.c). */
#ifndef TD_EXPLAIN_CMD_H
#define TD_EXPLAIN_CMD_H

#include "driver/driver.h"

/* Runs `tdsl explain` with main's argc/argv (argv[1] is "explain");
 * returns the exit code: 0, 1 (the program is wrong) or 2 (bad usage). */
int td_cli_explain(int argc, char **argv);

/* The backend `tdsl run` and the REPL choose: CUDA with --device cuda
 * (`:device cuda`), else the CPU compiler with --compiled (`:compiled on`),
 * else the interpreter. */
td_backend td_cli_backend(int cuda, int compiled);

/* Options for backend b with the --dump bits `dumps` (d: the sources):
 * dumps on stdout, TDSL_DEBUG's C-like code on stderr, the compile
 * cache's warning on stderr once per process. */
td_drive_opts td_cli_drive_opts(td_backend b, unsigned dumps, const td_diags *d);

/* Gives p the --param NAME=VALUE options (n of them) and the parameters
 * of an --entry spec (Net(T=5).forward, lang/model_args.c); *entry
 * receives the entry's name, or stays as it is when spec is NULL.  0, or
 * -1 (the error is printed, or in p's diagnostics). */
int cli_model_args(td_program *p, const char *const *params, int n, const char *spec, const char **entry);

#endif

/* repl.h - `tdsl repl`, the interactive eager session (cli/repl.c). */
#ifndef TD_REPL_H
#define TD_REPL_H

/* Runs `tdsl repl [FILE.td]... [--seed N]` (argv[0] is "tdsl", argv[1]
 * "repl" or absent) and returns the exit code: 0, 1 when reading from a
 * non-terminal and some input failed, 2 for a bad command line. */
int td_repl_main(int argc, char **argv);

#endif

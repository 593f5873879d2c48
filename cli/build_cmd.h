/* build_cmd.h - `tdsl build FILE -o DIR [--exe]` (cli/build_cmd.c). */
#ifndef TD_BUILD_CMD_H
#define TD_BUILD_CMD_H

/* Runs the build command (argv[1] is "build"); returns the exit code. */
int td_cli_build(int argc, char **argv);

#endif

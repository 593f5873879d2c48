/* train.h - `tdsl train FILE.td` (cli/train.c, docs/training.md). */
#ifndef TD_CLI_TRAIN_H
#define TD_CLI_TRAIN_H

/* The command with main's argv (argv[1] is "train"); the exit code. */
int td_cli_train(int argc, char **argv);

#endif

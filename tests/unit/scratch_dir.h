/* scratch_dir.h - a fresh temporary directory per test, for the tests that
 * run the tdsl binary on files (test_cli.c, test_build.c).
 *
 * make_dir("tdsl_cli") in a suite's .init makes /tmp/tdsl_cli_XXXXXX;
 * remove_dir() in its .fini deletes it; path("x.npy") names a file in it
 * (the last 8 results stay valid, so several can be passed in one call).
 */
#ifndef TD_SCRATCH_DIR_H
#define TD_SCRATCH_DIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[256];

static void make_dir(const char *stem) {
  snprintf(dir, sizeof dir, "/tmp/%s_XXXXXX", stem);
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) { /* best effort */ }
}

static const char *path(const char *name) {
  static char buf[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

#endif

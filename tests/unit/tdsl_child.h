/* tdsl_child.h - what the tests that run the tdsl binary on files in a
 * scratch directory (scratch_dir.h) share: writing a file there, reading
 * one back, and a child's standard streams and environment.
 */
#ifndef TD_TDSL_CHILD_H
#define TD_TDSL_CHILD_H

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "scratch_dir.h"

#ifndef TDSL_BUILDDIR
#define TDSL_BUILDDIR "."
#endif
#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

/* Writes text to the file name of the scratch directory. */
static void write_text(const char *name, const char *text) {
  FILE *f = fopen(path(name), "w");
  cr_assert_not_null(f, "cannot write %s", name);
  fputs(text, f);
  fclose(f);
}

/* The first 64 KiB of file p, malloc'd ("" when it cannot be read). */
static char *read_text(const char *p) {
  FILE *f = fopen(p, "r");
  if (!f) return strdup("");
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return strdup(buf);
}

/* In a child about to run tdsl: stdout and stderr to the files out and
 * err, stdin from /dev/null, no colours, the source tree's stdlib. */
static void child_stdio(const char *out, const char *err) {
  int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int fi = open("/dev/null", O_RDONLY);
  dup2(fo, 1);
  dup2(fe, 2);
  dup2(fi, 0);
  setenv("NO_COLOR", "1", 1);
  setenv("TDSL_PATH", TDSL_SRCDIR "/stdlib", 1);
}

#endif

/* tdsl_child.h - what the tests that run the tdsl binary on files in a
 * scratch directory (scratch_dir.h) share: writing a file there, reading
 * one back, a child's standard streams and environment, and running the
 * built tdsl as a child (tdsl_start, tdsl_finish).
 */
#ifndef TD_TDSL_CHILD_H
#define TD_TDSL_CHILD_H

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
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

/* A finished child: its exit status (128 + N when signal N ended it) and
 * the first 64 KiB of its stdout and stderr (malloc'd). */
typedef struct tdsl_result {
  int status;
  char *out, *err;
} tdsl_result;

/* Starts the built tdsl with the arguments args (NULL-terminated, at most
 * 40), stdout and stderr to the scratch files stdout.txt and stderr.txt. */
static inline pid_t tdsl_start(const char *const *args) {
  const char *argv[42];
  int n = 0;
  argv[n++] = TDSL_BUILDDIR "/tdsl";
  while (*args && n < 41) argv[n++] = *args++;
  argv[n] = NULL;
  const char *o = path("stdout.txt"), *e = path("stderr.txt");
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    child_stdio(o, e);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* Waits for a child of tdsl_start and collects what it wrote. */
static inline tdsl_result tdsl_finish(pid_t pid) {
  int st;
  tdsl_result r;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = read_text(path("stdout.txt"));
  r.err = read_text(path("stderr.txt"));
  return r;
}

static inline void tdsl_result_free(tdsl_result *r) {
  free(r->out);
  free(r->err);
}

#endif

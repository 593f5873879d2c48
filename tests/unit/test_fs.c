/* test_fs.c - the tools against hostile files and failing file systems
 * (issue 13): FIFOs, devices and unreadable files where modules and cache
 * entries are expected, another program's cache entry, cache directories
 * that cannot be written, builds and --out writers killed half way, and
 * what such writers leave behind.
 *
 * Each test runs the built tdsl ($TDSL_BIN overrides it, to run these tests
 * against another build) as a subprocess in a fresh temporary directory,
 * killed after a timeout: a hang is a failure, not a stuck test run.  What
 * a correct run prints is what eager `tdsl run` prints for the same
 * program (an independent implementation).  Permissions mean nothing to
 * root, so the tests that need a file to be unreadable or a directory to
 * be unwritable run tdsl as user 65534 when they run as root; a full
 * directory is a 16 KiB tmpfs mounted in a private mount namespace, and
 * those tests are skipped, saying why, where neither is possible.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scratch_dir.h"
#include "tdsl_child.h"

static void setup(void) {
  make_dir("tdsl_fs");
  chmod(dir, 0755);   /* user 65534 must reach its files */
}
static void teardown(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null", dir);
  if (system(cmd)) { /* best effort: rm -rf must be able to enter everything */ }
  remove_dir();
}

TestSuite(fs, .init = setup, .fini = teardown, .timeout = 240);

/* The exit status of a child that could not set up what a test needs. */
#define CANNOT 77
#define UNPRIVILEGED 65534

typedef struct run_opts {
  int timeout;           /* seconds; 0: 60 */
  int unprivileged;      /* as user 65534 when run by root */
  const char *full_dir;  /* mount a full 16 KiB tmpfs here first */
  const char *env[4];    /* NAME=VALUE for the child */
} run_opts;

typedef struct result {
  int status;            /* exit status, 128 + signal, or -1: killed at the timeout */
  char *out, *err;
} result;

static const char *tdsl_bin(void) {
  const char *b = getenv("TDSL_BIN");
  return b && *b ? b : TDSL_BUILDDIR "/tdsl";
}

/* Fills the file system holding d: a file as large as it lets it be. */
static void fill(const char *d) {
  char p[600], block[4096];
  snprintf(p, sizeof p, "%s/filler", d);
  memset(block, 'x', sizeof block);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  while (fd >= 0 && write(fd, block, sizeof block) > 0) {}
  if (fd >= 0) close(fd);
}

static void child(const run_opts *o, const char *const *argv, const char *out, const char *err) {
  child_stdio(out, err);
  for (int i = 0; i < 4 && o->env[i]; i++) putenv((char *)o->env[i]);
  if (o->full_dir) {
    if (unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
        mount("tmpfs", o->full_dir, "tmpfs", 0, "size=16k,mode=0777"))
      _exit(CANNOT);
    fill(o->full_dir);
  }
  if (o->unprivileged && geteuid() == 0 && (setgroups(0, NULL) || setgid(UNPRIVILEGED) || setuid(UNPRIVILEGED)))
    _exit(CANNOT);
  execv(argv[0], (char *const *)argv);
  _exit(127);
}

/* Runs tdsl with args (NULL-terminated, without argv[0]). */
static result run(const run_opts *o, const char *const *args) {
  const char *argv[32];
  int n = 0;
  argv[n++] = tdsl_bin();
  while (*args && n < 31) argv[n++] = *args++;
  argv[n] = NULL;
  const char *out = path("stdout.txt"), *err = path("stderr.txt");
  int limit = o && o->timeout ? o->timeout : 60;
  run_opts none = {0};
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) child(o ? o : &none, argv, out, err);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int st = 0, killed = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec >= limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      killed = 1;
      break;
    }
    usleep(20000);
  }
  result r;
  r.status = killed ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = read_text(out);
  r.err = read_text(err);
  if (r.status == CANNOT) cr_skip_test("cannot set up the test's file system here (needs root): %s", r.err);
  return r;
}

static void drop(result *r) {
  free(r->out);
  free(r->err);
}

/* ---- imports ---- */

static const char MAIN_IMPORTS_M[] = "import m\nfn main() { print(m.two()) }\n";

/* A FIFO where a module is looked for: refused at once, with its path
 * (reading it would wait for a writer forever); a link to /dev/zero the
 * same (reading it would never end). */
Test(fs, import_of_a_fifo_or_device_fails_at_once) {
  write_text("a.td", MAIN_IMPORTS_M);
  cr_assert_eq(mkfifo(path("m.td"), 0644), 0);
  result r = run(&(run_opts){.timeout = 20}, (const char *[]){"check", path("a.td"), NULL});
  cr_assert_neq(r.status, -1, "tdsl check waited for the FIFO m.td");
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, "cannot read module 'm'") && strstr(r.err, path("m.td")) &&
            strstr(r.err, "not a regular file"), "%s", r.err);
  drop(&r);
  unlink(path("m.td"));
  cr_assert_eq(symlink("/dev/zero", path("m.td")), 0);
  r = run(&(run_opts){.timeout = 20}, (const char *[]){"check", path("a.td"), NULL});
  cr_assert_neq(r.status, -1, "tdsl check kept reading /dev/zero");
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, "cannot read module 'm'") && strstr(r.err, "not a regular file"), "%s", r.err);
  drop(&r);
}

/* An import that exists but cannot be read is not "cannot find module". */
Test(fs, unreadable_import_says_permission_denied) {
  write_text("a.td", MAIN_IMPORTS_M);
  write_text("m.td", "fn two() { 2 }\n");
  cr_assert_eq(chmod(path("m.td"), 0), 0);
  result r = run(&(run_opts){.unprivileged = 1}, (const char *[]){"check", path("a.td"), NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, "cannot read module 'm'") && strstr(r.err, path("m.td")) &&
            strstr(r.err, "Permission denied"), "%s", r.err);
  cr_expect(!strstr(r.err, "cannot find module"), "%s", r.err);
  drop(&r);
  chmod(path("m.td"), 0644);
  r = run(NULL, (const char *[]){"run", path("a.td"), NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "2\n");
  drop(&r);
}


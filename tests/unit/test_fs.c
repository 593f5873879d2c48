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

#include "build_test.h"
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

/* What eager `tdsl run FILE` prints (it must succeed). */
static char *eager(const char *file) {
  result r = run(NULL, (const char *[]){"run", path(file), NULL});
  cr_assert_eq(r.status, 0, "eager run of %s: %s", file, r.err);
  free(r.err);
  return r.out;
}

static int count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
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

/* ---- the compile cache ---- */

static char cache_env[700];

static void use_cache(const char *name) {
  snprintf(cache_env, sizeof cache_env, "TDSL_CACHE_DIR=%s", path(name));
}

/* The stem H of the only entry (H.so) in cache directory d. */
static void only_stem(const char *d, char *stem) {
  char cmd[800];
  snprintf(cmd, sizeof cmd, "ls '%s' | sed -n 's/^\\([0-9a-f]\\{16\\}\\)\\.so$/\\1/p'", d);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  char line[64] = "";
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (n++ == 0) snprintf(stem, 17, "%s", line);
  }
  pclose(f);
  cr_assert_eq(n, 1, "%d entries in %s", n, d);
}

/* `tdsl run --compiled file` with the cache of use_cache: it must succeed,
 * print what eager mode prints, and warn `warnings` times.  Returns its
 * stderr (free it). */
static char *run_compiled(const char *file, const char *want, int warnings, const run_opts *extra) {
  run_opts o = extra ? *extra : (run_opts){0};
  if (!o.timeout) o.timeout = 60;
  o.env[0] = cache_env;
  result r = run(&o, (const char *[]){"run", "--compiled", path(file), NULL});
  cr_assert_neq(r.status, -1, "tdsl run --compiled %s hung", file);
  cr_expect_eq(r.status, 0, "%s: %s", file, r.err);
  cr_expect_str_eq(r.out, want, "%s", file);
  cr_expect_eq(count_lines(r.err, "warning:"), warnings, "%s: %s", file, r.err);
  free(r.out);
  return r.err;
}

/* The same, when stderr does not matter beyond the warnings. */
static void expect_compiled(const char *file, const char *want, int warnings, const run_opts *extra) {
  free(run_compiled(file, want, warnings, extra));
}

/* The warning names the directory and says the code was compiled in memory. */
static void expect_warning(char *err, const char *d) {
  cr_expect(strstr(err, "tdsl: warning: ") && strstr(err, path(d)) && strstr(err, "compiled in memory"), "%s", err);
  free(err);
}

static int is_regular(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A FIFO or a link to /dev/zero in place of each file of an entry: the
 * run neither hangs nor fails; the entry is compiled again and replaced
 * with regular files. */
Test(fs, cache_files_that_are_fifos_or_devices_are_replaced) {
  write_text("r.td", "fn main() { print(rand([2], seed = 1) * 2) }\n");
  char *want = eager("r.td");
  use_cache("cache");
  expect_compiled("r.td", want, 0, NULL);
  char stem[17];
  only_stem(path("cache"), stem);
  static const char *const ext[] = {".so", ".key", ".sum"};
  for (int kind = 0; kind < 2; kind++)
    for (int i = 0; i < 3; i++) {
      char name[64];
      snprintf(name, sizeof name, "cache/%s%s", stem, ext[i]);
      cr_assert_eq(unlink(path(name)), 0);
      cr_assert_eq(kind ? symlink("/dev/zero", path(name)) : mkfifo(path(name), 0644), 0);
      expect_compiled("r.td", want, 0, &(run_opts){.timeout = 30});
      cr_expect(is_regular(path(name)), "%s (a %s) was not replaced", name, kind ? "link to /dev/zero" : "FIFO");
    }
  free(want);
}

/* Another program's shared object with its own (valid) checksum under
 * this program's name.  With the same kernel names it used to run the
 * other program's code; with others it failed every run with "no code was
 * produced".  Either way it must be compiled again and replaced. */
Test(fs, another_programs_entry_is_compiled_again) {
  static const char *const other[] = {"fn main() { print(rand([2], seed = 2) * 3) }\n",
                                      "fn main() { print(sum(arange(10) * 3)) }\n"};
  write_text("a.td", "fn main() { print(rand([2], seed = 1) * 2) }\n");
  char *want = eager("a.td");
  for (int k = 0; k < 2; k++) {
    char a[17], b[17], cache_a[16], cache_b[16];
    snprintf(cache_a, sizeof cache_a, "ca%d", k);
    snprintf(cache_b, sizeof cache_b, "cb%d", k);
    write_text("b.td", other[k]);
    char *want_b = eager("b.td");
    use_cache(cache_b);
    expect_compiled("b.td", want_b, 0, NULL);
    free(want_b);
    only_stem(path(cache_b), b);
    use_cache(cache_a);
    expect_compiled("a.td", want, 0, NULL);
    only_stem(path(cache_a), a);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "cp '%s/%s.so' '%s/%s.so' && cp '%s/%s.sum' '%s/%s.sum'", path(cache_b), b,
             path(cache_a), a, path(cache_b), b, path(cache_a), a);
    cr_assert_eq(system(cmd), 0);
    expect_compiled("a.td", want, 0, NULL);
    snprintf(cmd, sizeof cmd, "cmp -s '%s/%s.so' '%s/%s.so'", path(cache_b), b, path(cache_a), a);
    cr_expect_neq(system(cmd), 0, "the other program's object was kept");
    expect_compiled("a.td", want, 0, NULL);   /* and the replaced entry is a hit that works */
  }
  free(want);
}

/* A cache directory that is a file, read-only, or another user's: the run
 * compiles in memory and says so once. */
Test(fs, unusable_cache_dirs_compile_in_memory_with_one_warning) {
  write_text("r.td", "fn main() { print(rand([2], seed = 1) * 2) }\n");
  char *want = eager("r.td");
  write_text("file", "not a directory\n");
  use_cache("file");
  expect_warning(run_compiled("r.td", want, 1, NULL), "file");
  /* read-only: an empty directory nobody may write (user 65534 under root) */
  cr_assert_eq(mkdir(path("ro"), 0555), 0);
  chmod(path("ro"), 0555);
  use_cache("ro");
  expect_warning(run_compiled("r.td", want, 1, &(run_opts){.unprivileged = 1}), "ro");
  if (geteuid() == 0) {   /* another user's: root's, writable by root only */
    cr_assert_eq(mkdir(path("theirs"), 0755), 0);
    use_cache("theirs");
    expect_warning(run_compiled("r.td", want, 1, &(run_opts){.unprivileged = 1}), "theirs");
  }
  free(want);
}

/* A full cache directory (a full tmpfs): the failed compilation into the
 * cache is done again in memory, with one warning. */
Test(fs, full_cache_dir_compiles_in_memory_with_one_warning) {
  write_text("r.td", "fn main() { print(rand([2], seed = 1) * 2) }\n");
  char *want = eager("r.td");
  cr_assert_eq(mkdir(path("full"), 0755), 0);
  use_cache("full");
  run_opts o = {.full_dir = path("full"), .env = {cache_env}};
  result r = run(&o, (const char *[]){"run", "--compiled", path("r.td"), NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.out, want);
  cr_expect_eq(count_lines(r.err, "warning:"), 1, "%s", r.err);
  cr_expect(strstr(r.err, "No space left on device") && strstr(r.err, "compiled in memory"), "%s", r.err);
  drop(&r);
  free(want);
}

/* A cache that cannot be written still serves the entries it has. */
Test(fs, read_only_cache_still_serves_its_entries) {
  write_text("r.td", "fn main() { print(rand([2], seed = 1) * 2) }\n");
  char *want = eager("r.td");
  use_cache("cache");
  expect_compiled("r.td", want, 0, NULL);
  cr_assert_eq(chmod(path("cache"), 0555), 0);
  expect_compiled("r.td", want, 0, &(run_opts){.unprivileged = 1});
  free(want);
}

/* ---- what killed writers leave ---- */

/* A PID no process has (kill gives ESRCH: beyond any pid_max). */
#define GONE_PID "1999999999"

/* A file of a few bytes in the scratch directory, last modified age
 * seconds ago. */
static void plant(const char *name, time_t age) {
  write_text(name, "partial");
  time_t t = time(NULL) - age;
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, path(name), ts, 0), 0, "%s", name);
}

static int exists(const char *name) {
  struct stat st;
  return lstat(path(name), &st) == 0;
}

/* A writer of --out killed before its rename leaves its temporary (a 1 GB
 * output leaves 1 GB).  The next atomic write into that directory removes
 * those of writers that are gone (untouched for ten minutes, their process
 * gone) and any a day old; a live writer's, a fresh one's and other files
 * stay. */
Test(fs, out_removes_what_killed_writers_left) {
  char live[64], name[128];
  snprintf(live, sizeof live, "%ld", (long)getpid());
  write_text("o.td", "fn main() { arange(3) * 2 }\n");
  cr_assert_eq(mkdir(path("outs"), 0755), 0);
  static const struct { const char *name; int pid_live; time_t age; int stays; } cases[] = {
      {"y.npy", 0, 3600, 0},      /* gone for an hour */
      {"z.npy", 0, 3600, 0},      /* another output's: the directory is cleaned */
      {"y.npy", 1, 3600, 1},      /* its writer is alive (this test) */
      {"y.npy", 0, 60, 1},        /* gone a minute ago: may be a writer elsewhere */
      {"y.npy", 1, 2 * 86400, 0}, /* two days old, whoever it is */
  };
  int n = (int)(sizeof cases / sizeof *cases);
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "outs/%s.tdsl-tmp.%s.abc%03d", cases[i].name, cases[i].pid_live ? live : GONE_PID, i);
    plant(name, cases[i].age);
  }
  plant("outs/y.npy.tmp.abc123", 2 * 86400);   /* not a tdsl temporary */
  result r = run(NULL, (const char *[]){"run", path("o.td"), "--out", path("outs/y.npy"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  cr_expect(exists("outs/y.npy"));
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "outs/%s.tdsl-tmp.%s.abc%03d", cases[i].name, cases[i].pid_live ? live : GONE_PID, i);
    cr_expect_eq(exists(name), cases[i].stays, "%s should %s", name, cases[i].stays ? "stay" : "be removed");
  }
  cr_expect(exists("outs/y.npy.tmp.abc123"), "a file that is not a tdsl temporary was removed");
}

/* ---- tdsl build killed half way ---- */

static const char *const ARTIFACT[] = {"simple.so", "simple.h", "simple"};

/* Builds examples/seed/simple.td --exe --seed seed into d (kill: the
 * TDSL_TEST_KILL_BUILD point, or NULL); returns the exit status. */
static int build_simple(const char *d, int seed, const char *kill) {
  char s[16], k[64];
  snprintf(s, sizeof s, "%d", seed);
  snprintf(k, sizeof k, "TDSL_TEST_KILL_BUILD=%s", kill ? kill : "");
  result r = run(&(run_opts){.timeout = 120, .env = {k}},
                 (const char *[]){"build", TDSL_SRCDIR "/examples/seed/simple.td", "-o", path(d), "--exe", "--seed", s,
                                  NULL});
  cr_expect(kill || r.status == 0, "tdsl build: %s", r.err);
  int st = r.status;
  drop(&r);
  return st;
}

/* Which build file name of d is: 1 the old one's (in old/), 2 the new
 * one's (in new/), 0 neither. */
static int which_build(const char *d, const char *name) {
  char cmd[2000];
  snprintf(cmd, sizeof cmd, "cmp -s '%s/%s' '%s/%s'", path(d), name, path("old"), name);
  if (system(cmd) == 0) return 1;
  snprintf(cmd, sizeof cmd, "cmp -s '%s/%s' '%s/%s'", path(d), name, path("new"), name);
  return system(cmd) == 0 ? 2 : 0;
}

/* What `out/simple` (its executable) says when it cannot create its model. */
static char *exe_refusal(void) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' --in x=none.npy 2>&1", path("out/simple"));
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  pclose(f);
  return buf;
}

/* A build killed at each point of its commit (TDSL_TEST_KILL_BUILD) over
 * an earlier build: every file is whole, the old build's or the new one's;
 * while they may be a mix the executable and the C API refuse, naming the
 * pending update; the next build into the directory (of another prefix)
 * finishes it, and removes what a build killed before its commit left. */
Test(fs, build_killed_at_any_point_leaves_no_mix, .timeout = 400) {
  if (SANITIZED) cr_skip_test("the artifact runtime is built with sanitizers");
  cr_assert_eq(build_simple("old", 1, NULL), 0);
  cr_assert_eq(build_simple("new", 2, NULL), 0);
  for (int i = 0; i < 3; i++) cr_assert_eq(which_build("new", ARTIFACT[i]), 2, "the two builds must differ");
  write_file(path("api.c"), "#include <stdio.h>\n#include \"simple.h\"\nint main(void) {\n"
                            "  simple_model *m = simple_create();\n  if (!m) { puts(simple_error(NULL)); return 1; }\n"
                            "  simple_free(m);\n  return 0;\n}\n");
  char cmd[2400], point[8];
  for (int k = 0; k <= 4; k++) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", path("out"), path("old"), path("out"));
    cr_assert_eq(system(cmd), 0);
    snprintf(point, sizeof point, "%d", k);
    cr_assert_eq(build_simple("out", 2, point), 128 + SIGKILL, "the build was not killed at point %d", k);
    int mixed = 0, olds = 0;
    for (int i = 0; i < 3; i++) {
      int w = which_build("out", ARTIFACT[i]);
      cr_expect_neq(w, 0, "point %d: %s is neither build's", k, ARTIFACT[i]);
      olds += w == 1;
    }
    mixed = olds != 0 && olds != 3;
    cr_expect(k > 1 || olds == 3, "point %d: nothing may change before the commit's moves", k);
    cr_expect(k < 4 || olds == 0, "point %d: every file moved", k);
    const char *said = exe_refusal();
    cr_expect(k == 0 || strstr(said, "tdsl build was interrupted"), "point %d: the executable ran: %s", k, said);
    cr_expect(k > 0 || !strstr(said, "interrupted"), "point %d: nothing was committed: %s", k, said);
    if (mixed && k == 2) {   /* the new library beside the old header: the C API refuses too */
      cr_assert_eq(sh("cc -I'%s' '%s' '%s/simple.so' -Wl,-rpath,'%s' -o '%s'", path("out"), path("api.c"), path("out"),
                      path("out"), path("api")), 0);
      snprintf(cmd, sizeof cmd, "'%s' > '%s'", path("api"), path("api.txt"));
      cr_expect_neq(system(cmd), 0, "simple_create() accepted a half-updated directory");
      char *t = read_all(path("api.txt"), NULL);
      cr_expect(strstr(t, ".simple.tdsl-commit") && strstr(t, "interrupted"), "%s", t);
      free(t);
    }
  }
  /* the last state (killed after its last move) is finished by a build of
   * another prefix; a staging directory of a build killed before its
   * commit, an hour old, goes too */
  snprintf(cmd, sizeof cmd, "mkdir '%s/.simple" ".tdsl-tmp." GONE_PID ".abcdef' && touch -d '1 hour ago' '%s/.simple"
           ".tdsl-tmp." GONE_PID ".abcdef'", path("out"), path("out"));
  cr_assert_eq(system(cmd), 0);
  result r = run(&(run_opts){.timeout = 120},
                 (const char *[]){"build", TDSL_SRCDIR "/examples/seed/simple.td", "-o", path("out"), "--name", "other",
                                  NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  for (int i = 0; i < 3; i++) cr_expect_eq(which_build("out", ARTIFACT[i]), 2, "%s", ARTIFACT[i]);
  cr_expect_eq(sh("test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'other.h other.so simple simple.h simple.so '", path("out")),
               0, "files left in out/");
  const char *said = exe_refusal();
  cr_expect(!strstr(said, "interrupted"), "%s", said);
}

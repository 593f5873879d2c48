/* test_repl.c - `tdsl repl` end to end.
 *
 *  - Scripted sessions: each tests/repl/NAME.session file is a transcript.
 *    Its lines starting with ">>> " or "... " are fed to `tdsl repl` on
 *    stdin (the prefix removed); every other line after the first prompt is
 *    the expected output, stdout and stderr together, compared line by line
 *    (trailing blanks ignored; "{...}" in an expected line matches any
 *    text).  A comment line "# exit: N" before the first prompt sets the
 *    expected exit status (default 0).  The sessions' values were worked
 *    out by hand.
 *  - Differential checks: the REPL computes exactly what `tdsl run`
 *    computes for the same code (random initialisation included), and
 *    :reload sees a file that changed.
 *  - A pseudo-terminal (forkpty): the prompts ">>> " and "... ", history
 *    written to $XDG_STATE_HOME/tdsl/history (or ~/.tdsl_history) and
 *    recalled by the next session, tab completion, Ctrl-C during a long
 *    computation and at a continuation prompt, Ctrl-D.
 *
 * Children run in the source directory with TDSL_PATH=stdlib and NO_COLOR,
 * and HOME / XDG_STATE_HOME in a fresh temporary directory.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"

#ifndef TDSL_BUILDDIR
#define TDSL_BUILDDIR "."
#endif
#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif

#define TIMEOUT_S 120.0

/* ---- small helpers ---- */

typedef struct buf {
  char *s;
  size_t n, cap;
} buf;

static void buf_add(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (b->n + n + 1 > cap) cap *= 2;
    b->s = realloc(b->s, cap);
    cr_assert_not_null(b->s);
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = 0;
}

static void buf_puts(buf *b, const char *s) { buf_add(b, s, strlen(s)); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *tdsl_bin(void) {
  static char path[4096];
  const char *env = getenv("TDSL_BIN");
  if (env && *env) return env;
  snprintf(path, sizeof path, "%s/tdsl", TDSL_BUILDDIR);
  return path;
}

static char tmp[256];

static void setup(void) {
  strcpy(tmp, "/tmp/tdsl_repl_XXXXXX");
  cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd)) { /* best effort */ }
}

static const char *tmp_path(const char *name) {
  static char bufs[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(bufs[k], sizeof bufs[k], "%s/%s", tmp, name);
  return bufs[k];
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  buf b = {0};
  buf_puts(&b, "");
  if (!f) return b.s;
  char tmpb[4096];
  size_t n;
  while ((n = fread(tmpb, 1, sizeof tmpb, f)) > 0) buf_add(&b, tmpb, n);
  fclose(f);
  return b.s;
}

/* What every child sees (called in the child). */
static void child_env(void) {
  setenv("TDSL_PATH", "stdlib", 1);
  setenv("NO_COLOR", "1", 1);
  setenv("HOME", tmp, 1);
  unsetenv("XDG_STATE_HOME");
  setenv("ASAN_OPTIONS", "exitcode=86", 0);
  setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=87", 0);
  if (chdir(TDSL_SRCDIR)) _exit(127);
}

/* Runs tdsl with argv (argv[0] ignored), stdin from the file `in` (or
 * /dev/null), stdout and stderr into one pipe; returns the exit status. */
static int run_tdsl(char *const argv[], const char *in, buf *out) {
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    child_env();
    int fd = open(in ? in : "/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0) _exit(127);
    close(p[0]);
    execv(tdsl_bin(), argv);
    _exit(127);
  }
  close(p[1]);
  double deadline = now_s() + TIMEOUT_S;
  buf_puts(out, "");
  for (;;) {
    struct pollfd pf = {p[0], POLLIN, 0};
    int r = poll(&pf, 1, 1000);
    if (r > 0) {
      char b[65536];
      ssize_t n = read(p[0], b, sizeof b);
      if (n <= 0) break;
      buf_add(out, b, (size_t)n);
    }
    if (now_s() > deadline) {
      kill(pid, SIGKILL);
      break;
    }
  }
  close(p[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  cr_assert(WIFEXITED(st), "tdsl died with signal %d; output:\n%s", WTERMSIG(st), out->s);
  return WEXITSTATUS(st);
}

/* ---- scripted sessions ---- */

/* Does line match pattern, where "{...}" matches any text? */
static int line_matches(const char *pat, size_t pn, const char *line, size_t ln) {
  const char *star = NULL;
  for (size_t i = 0; i + 5 <= pn; i++)
    if (!memcmp(pat + i, "{...}", 5)) { star = pat + i; break; }
  if (!star) return pn == ln && !memcmp(pat, line, ln);
  size_t pre = (size_t)(star - pat);
  if (ln < pre || memcmp(pat, line, pre)) return 0;
  const char *rest = star + 5;
  size_t rn = pn - pre - 5;
  for (size_t k = pre; k <= ln; k++)
    if (line_matches(rest, rn, line + k, ln - k)) return 1;
  return 0;
}

static size_t trimmed(const char *s, size_t n) {
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
  return n;
}

/* Splits a session file into its input and its expected output. */
static void parse_session(const char *text, buf *input, buf *expect, int *status) {
  int started = 0;
  *status = 0;
  buf_puts(input, "");
  buf_puts(expect, "");
  for (const char *s = text; *s;) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s) : strlen(s);
    if ((n >= 4 && (!strncmp(s, ">>> ", 4) || !strncmp(s, "... ", 4))) ||
        (n == 3 && (!strncmp(s, ">>>", 3) || !strncmp(s, "...", 3)))) {
      started = 1;
      if (n > 4) buf_add(input, s + 4, n - 4);
      buf_puts(input, "\n");
    } else if (started) {
      buf_add(expect, s, n);
      buf_puts(expect, "\n");
    } else if (!strncmp(s, "# exit:", 7)) {
      *status = atoi(s + 7);
    }
    s += n + (nl != NULL);
  }
}

/* Compares output with the expected lines; NULL or a description. */
static char *compare(const char *expect, const char *out) {
  static char msg[8192];
  const char *e = expect, *o = out;
  for (int line = 1;; line++) {
    while (!*e && *o == '\n') o++; /* trailing blank lines */
    if (!*e && !*o) return NULL;
    const char *enl = strchr(e, '\n'), *onl = strchr(o, '\n');
    size_t en = *e ? (enl ? (size_t)(enl - e) : strlen(e)) : 0;
    size_t on = *o ? (onl ? (size_t)(onl - o) : strlen(o)) : 0;
    if (!*e || !*o || !line_matches(e, trimmed(e, en), o, trimmed(o, on))) {
      snprintf(msg, sizeof msg, "output line %d differs\n  expected: \"%.*s\"\n  actual:   \"%.*s\"%s",
               line, (int)trimmed(e, en), e, (int)trimmed(o, on), o, *e ? "" : " (extra line)");
      return msg;
    }
    e += en + (enl != NULL);
    o += on + (onl != NULL);
  }
}

typedef struct session_case {
  char *name;   /* file name in tests/repl (cr_malloc) */
} session_case;

static void free_cases(struct criterion_test_params *ctp) {
  session_case *c = ctp->params;
  for (size_t i = 0; i < ctp->length; i++) cr_free(c[i].name);
  cr_free(c);
}

ParameterizedTestParameters(repl, session) {
  DIR *d = opendir(TDSL_SRCDIR "/tests/repl");
  session_case *c = cr_malloc(64 * sizeof *c);
  size_t n = 0;
  struct dirent *de;
  while (d && c && n < 64 && (de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (len < 9 || strcmp(de->d_name + len - 8, ".session")) continue;
    c[n].name = cr_malloc(len + 1);
    if (c[n].name) memcpy(c[n++].name, de->d_name, len + 1);
  }
  if (d) closedir(d);
  return cr_make_param_array(session_case, c, n, free_cases);
}

ParameterizedTest(session_case *c, repl, session, .init = setup, .fini = teardown,
                  .timeout = TIMEOUT_S) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/repl/%s", TDSL_SRCDIR, c->name);
  char *text = read_file(path);
  buf input = {0}, expect = {0}, out = {0};
  int want;
  parse_session(text, &input, &expect, &want);
  cr_assert_gt(input.n, 0, "%s has no input lines", c->name);
  write_file(tmp_path("input"), input.s);
  char *argv[] = {"tdsl", "repl", NULL};
  int st = run_tdsl(argv, tmp_path("input"), &out);
  char *diff = compare(expect.s, out.s);
  cr_assert_null(diff, "%s: %s\nwhole output:\n%s", c->name, diff, out.s);
  cr_assert_eq(st, want, "%s: exit status %d, expected %d", c->name, st, want);
  free(text);
  free(input.s);
  free(expect.s);
  free(out.s);
}

/* ---- the REPL and `tdsl run` agree ---- */

TestSuite(repl, .init = setup, .fini = teardown, .timeout = TIMEOUT_S);

/* Output of `tdsl repl` on `input`. */
static char *repl_output(const char *input, int *status) {
  buf out = {0};
  write_file(tmp_path("input"), input);
  char *argv[] = {"tdsl", "repl", NULL};
  *status = run_tdsl(argv, tmp_path("input"), &out);
  return out.s;
}

/* nn.Linear's parameters are initialised once and kept: the values shown on
 * two lines equal what `tdsl run` prints for the same program. */
Test(repl, same_numbers_as_run) {
  write_file(tmp_path("lin.td"),
             "import nn\n"
             "fn main() {\n"
             "  let lin = nn.Linear(4, 3)\n"
             "  let x = reshape(f32(arange(0, 8)), [2, 4]) * 0.25\n"
             "  print(lin(x))\n"
             "  print(lin(x))\n"
             "  print(lin.weight)\n"
             "}\n");
  buf run = {0};
  char *argv[] = {"tdsl", "run", (char *)tmp_path("lin.td"), NULL};
  cr_assert_eq(run_tdsl(argv, NULL, &run), 0, "%s", run.s);
  int st;
  char *repl = repl_output("import nn\n"
                           "let lin = nn.Linear(4, 3)\n"
                           "let x = reshape(f32(arange(0, 8)), [2, 4]) * 0.25\n"
                           "print(lin(x))\n"
                           "let y = lin(x)\n"
                           "print(y)\n"
                           "print(lin.weight)\n", &st);
  cr_assert_eq(st, 0, "%s", repl);
  cr_assert_str_eq(repl, run.s);
  free(repl);
  free(run.s);
}

/* :load then main() prints what `tdsl run` prints for the file. */
Test(repl, load_main_matches_run) {
  buf run = {0};
  char *argv[] = {"tdsl", "run", "examples/mlp.td", NULL};
  cr_assert_eq(run_tdsl(argv, NULL, &run), 0, "%s", run.s);
  int st;
  char *repl = repl_output(":load examples/mlp.td\nmain()\n", &st);
  cr_assert_eq(st, 0, "%s", repl);
  const char *loaded = "Loaded examples/mlp.td.\n";
  cr_assert(!strncmp(repl, loaded, strlen(loaded)), "%s", repl);
  cr_assert_str_eq(repl + strlen(loaded), run.s);
  free(repl);
  free(run.s);
}

/* `tdsl repl FILE` loads FILE first; :reload picks up a change. */
Test(repl, reload_sees_changes) {
  const char *lib = tmp_path("lib.td");
  write_file(lib, "fn f(x) { x + 1 }\n");
  /* feed one line through a pipe, change the file, then feed the rest */
  int in[2], outp[2];
  cr_assert_eq(pipe(in), 0);
  cr_assert_eq(pipe(outp), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    child_env();
    if (dup2(in[0], 0) < 0 || dup2(outp[1], 1) < 0 || dup2(outp[1], 2) < 0) _exit(127);
    close(in[1]);
    close(outp[0]);
    execl(tdsl_bin(), "tdsl", "repl", lib, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(outp[1]);
  FILE *w = fdopen(in[1], "w");
  FILE *r = fdopen(outp[0], "r");
  char line[256];
  fputs("f(1)\n", w);
  fflush(w);
  cr_assert_not_null(fgets(line, sizeof line, r));
  cr_assert_str_eq(line, "2 (int)\n");
  write_file(lib, "fn f(x) { x * 10 }\n");
  fputs(":reload\nf(1)\n", w);
  fclose(w);
  cr_assert_not_null(fgets(line, sizeof line, r));
  cr_assert_str_eq(line, "Reloaded.\n");
  cr_assert_not_null(fgets(line, sizeof line, r));
  cr_assert_str_eq(line, "10 (int)\n");
  fclose(r);
  int st;
  waitpid(pid, &st, 0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* "12.3 us" (as :time writes durations) in seconds; -1 when unreadable. */
static double seconds(double v, const char *unit) {
  static const struct {
    const char *unit;
    double scale;
  } units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(unit, units[i].unit)) return v * units[i].scale;
  return -1;
}

/* :time's compiled row never counts the run that compiled: with a graph
 * that takes libgccjit about a second (twelve unrolled softmax layers,
 * the compile cache off), the best and the mean run stay far below the
 * compile time (before, the compile was the one and only sample). */
Test(repl, time_never_counts_the_compile) {
  setenv("TDSL_CACHE", "0", 1);
  int st;
  char *out = repl_output("import nn\n"
                          "let x = randn([8, 64], seed = 1)\n"
                          "let w = randn([64, 64], seed = 2)\n"
                          "fn f(h) { let a = h; for i in 0..12 { a = nn.softmax(a @ w, axis = -1) * h + sum(a, axis = 0) }; a }\n"
                          ":time f(x)\n",
                          &st);
  cr_assert_eq(st, 0, "%s", out);
  const char *row = strstr(out, "\ncompiled ");
  cr_assert_not_null(row, "%s", out);
  double b, best, mean, comp;
  char ub[8], ubest[8], umean[8], ucomp[8];
  int runs;
  cr_assert_eq(sscanf(row + 1, "compiled %lf %7s %lf %7s %lf %7s %d (compile %lf %7[a-z])", &b, ub, &best, ubest, &mean,
                      umean, &runs, &comp, ucomp),
               9, "%s", out);
  best = seconds(best, ubest);
  mean = seconds(mean, umean);
  comp = seconds(comp, ucomp);
  cr_assert(best > 0 && mean > 0 && comp > 0, "%s", out);
  cr_expect_lt(best, comp / 4, "the best run includes the compile:\n%s", out);
  cr_expect_lt(mean, comp / 4, "the mean includes the compile:\n%s", out);
  cr_expect_geq(mean, best, "%s", out);
  cr_expect_geq(runs, 1, "%s", out);
  free(out);
}

/* Bad command lines. */
Test(repl, usage) {
  buf out = {0};
  char *argv[] = {"tdsl", "repl", "--nope", NULL};
  cr_assert_eq(run_tdsl(argv, NULL, &out), 2);
  cr_assert(strstr(out.s, "unknown option '--nope'"), "%s", out.s);
  free(out.s);
  /* without a terminal, `tdsl` alone still prints its usage */
  buf out2 = {0};
  char *argv2[] = {"tdsl", NULL};
  cr_assert_eq(run_tdsl(argv2, NULL, &out2), 2);
  cr_assert(strstr(out2.s, "usage: tdsl run"), "%s", out2.s);
  free(out2.s);
}

/* ---- a pseudo-terminal ---- */

typedef struct term {
  int fd;
  pid_t pid;
  buf out;
  size_t mark;   /* output before this was already matched */
} term;

/* Starts tdsl (argv NULL: `tdsl repl`) on a new pseudo-terminal; state:
 * XDG_STATE_HOME, or NULL to leave it unset (history in $HOME). */
static void term_start(term *t, const char *state, char *const *argv) {
  memset(t, 0, sizeof *t);
  buf_puts(&t->out, "");
  t->pid = forkpty(&t->fd, NULL, NULL, NULL);
  cr_assert_geq(t->pid, 0, "forkpty: %s", strerror(errno));
  if (t->pid == 0) {
    child_env();
    setenv("TERM", "dumb", 1);
    if (state) setenv("XDG_STATE_HOME", state, 1);
    char *def[] = {"tdsl", "repl", NULL};
    execv(tdsl_bin(), argv ? argv : def);
    _exit(127);
  }
}

/* Reads whatever the terminal has within `wait` seconds. */
static void term_read(term *t, double wait) {
  struct pollfd pf = {t->fd, POLLIN, 0};
  if (poll(&pf, 1, (int)(wait * 1000)) <= 0) return;
  char b[4096];
  ssize_t n = read(t->fd, b, sizeof b);
  if (n > 0) buf_add(&t->out, b, (size_t)n);
}

/* Waits until `needle` appears after the mark; moves the mark past it. */
static void term_expect(term *t, const char *needle) {
  double deadline = now_s() + TIMEOUT_S / 2;
  for (;;) {
    char *at = strstr(t->out.s + t->mark, needle);
    if (at) {
      t->mark = (size_t)(at - t->out.s) + strlen(needle);
      return;
    }
    cr_assert(now_s() < deadline, "timed out waiting for \"%s\"; terminal shows:\n%s", needle,
              t->out.s + t->mark);
    term_read(t, 0.1);
  }
}

/* libedit writes the prompt before it puts the terminal in raw mode: a
 * Ctrl-D or Ctrl-C sent in between would reach the line discipline rather
 * than the editor.  Waiting a moment after a prompt avoids that race. */
static void term_settle(void) { usleep(300 * 1000); }

static void term_send(term *t, const char *s) {
  size_t n = strlen(s);
  cr_assert_eq(write(t->fd, s, n), (ssize_t)n);
}

/* Waits for the process to end; returns its exit status. */
static int term_exit(term *t) {
  double deadline = now_s() + TIMEOUT_S / 2;
  int st;
  for (;;) {
    pid_t r = waitpid(t->pid, &st, WNOHANG);
    if (r == t->pid) break;
    cr_assert(now_s() < deadline, "tdsl did not exit; terminal shows:\n%s", t->out.s + t->mark);
    term_read(t, 0.1);
  }
  close(t->fd);
  free(t->out.s);
  cr_assert(WIFEXITED(st), "tdsl died with signal %d", WTERMSIG(st));
  return WEXITSTATUS(st);
}

Test(repl, terminal_prompts_and_continuation) {
  term t;
  char *argv[] = {"tdsl", NULL}; /* `tdsl` alone on a terminal is the REPL */
  term_start(&t, tmp_path("state"), argv);
  term_expect(&t, ">>> ");
  term_send(&t, "let x = (1 +\r");
  term_expect(&t, "... ");
  term_send(&t, "  2)\r");
  term_expect(&t, ">>> ");
  term_send(&t, "fn triple(a) {\r");
  term_expect(&t, "... ");
  term_send(&t, "a * 3\r");
  term_expect(&t, "... ");
  term_send(&t, "}\r");
  term_expect(&t, ">>> ");
  term_send(&t, "triple(x)\r");
  term_expect(&t, "9 (int)");
  term_expect(&t, ">>> ");
  /* an error does not end the session */
  term_send(&t, "nope + 1\r");
  term_expect(&t, "unknown name 'nope'");
  term_expect(&t, ">>> ");
  term_send(&t, "x * 2\r");
  term_expect(&t, "6 (int)");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04"); /* Ctrl-D */
  cr_assert_eq(term_exit(&t), 0);
}

Test(repl, terminal_history_is_kept) {
  term t;
  const char *state = tmp_path("state");
  term_start(&t, state, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "let hist_marker = 41\r");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
  char *h = read_file(tmp_path("state/tdsl/history"));
  cr_assert(strstr(h, "hist_marker"), "history file holds:\n%s", h);
  free(h);
  /* the next session recalls the line with Ctrl-P and runs it */
  term_start(&t, state, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "\x10\r");
  term_expect(&t, ">>> ");
  term_send(&t, "hist_marker + 1\r");
  term_expect(&t, "42 (int)");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
  /* without XDG_STATE_HOME the history is ~/.tdsl_history */
  term_start(&t, NULL, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "let home_marker = 1\r");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
  h = read_file(tmp_path(".tdsl_history"));
  cr_assert(strstr(h, "home_marker"), "~/.tdsl_history holds:\n%s", h);
  free(h);
}

/* A multi-line input is one history entry: the next session recalls the
 * whole `fn` with one Ctrl-P (past the line after it) and running it
 * defines the function again. */
Test(repl, terminal_history_recalls_a_multi_line_input_whole) {
  term t;
  const char *state = tmp_path("state");
  term_start(&t, state, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "fn hist3(a) {\r");
  term_expect(&t, "... ");
  term_send(&t, "  a * 3\r");
  term_expect(&t, "... ");
  term_send(&t, "}\r");
  term_expect(&t, ">>> ");
  term_send(&t, "hist3(2)\r");
  term_expect(&t, "6 (int)");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
  /* two entries: the whole fn (libedit writes its newlines as \012), then
   * the call - not four lines */
  char *h = read_file(tmp_path("state/tdsl/history"));
  int lines = 0;
  for (const char *p = h; *p; p++) lines += *p == '\n';
  cr_expect(strstr(h, "hist3(a)") && strstr(h, "\\012") && strstr(h, "hist3(2)"), "history file holds:\n%s", h);
  cr_expect(lines <= 3, "the fn is not one entry; history file holds:\n%s", h);
  free(h);
  term_start(&t, state, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "hist3(1)\r");
  term_expect(&t, "unknown name 'hist3'");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x10\x10\x10\r");   /* past hist3(1) and hist3(2): the fn, whole */
  term_expect(&t, ">>> ");
  term_send(&t, "hist3(4)\r");
  term_expect(&t, "12 (int)");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
}

/* A history "file" that is a FIFO (or a device) is not used: editline
 * would wait for a writer before the first prompt. */
Test(repl, terminal_history_that_is_no_file_is_not_used) {
  term t;
  const char *state = tmp_path("fifo");
  char d[600];
  snprintf(d, sizeof d, "%s/tdsl", state);
  cr_assert_eq(mkdir(state, 0700), 0);
  cr_assert_eq(mkdir(d, 0700), 0);
  cr_assert_eq(mkfifo(tmp_path("fifo/tdsl/history"), 0600), 0);
  term_start(&t, state, NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "1 + 2\r");
  term_expect(&t, "3 (int)");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
}

Test(repl, terminal_completion) {
  term t;
  term_start(&t, tmp_path("state"), NULL);
  term_expect(&t, ">>> ");
  term_send(&t, "import nn\r");
  term_expect(&t, ">>> ");
  /* "nn.leaky_re" completes to nn.leaky_relu, "aran" to arange */
  term_send(&t, "nn.leaky_re\t(aran\t(-2, 2), 0.5)\r");
  term_expect(&t, "[-1.0000, -0.5000,  0.0000,  1.0000] (f32[4])");
  term_expect(&t, ">>> ");
  term_send(&t, ":he\t\r");
  term_expect(&t, "this list");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
}

Test(repl, terminal_ctrl_c) {
  term t;
  term_start(&t, tmp_path("state"), NULL);
  term_expect(&t, ">>> ");
  /* Ctrl-C at a continuation prompt abandons the input */
  term_send(&t, "let q = (1,\r");
  term_expect(&t, "... ");
  term_settle();
  term_send(&t, "\x03");
  term_expect(&t, "(input abandoned)");
  term_expect(&t, ">>> ");
  /* Ctrl-C during a long computation (a chain of 20000 matmuls) */
  term_send(&t, "let w = randn([256, 256], seed = 1) * 0.05\r");
  term_expect(&t, ">>> ");
  term_send(&t, "let h = w\r");
  term_expect(&t, ">>> ");
  term_send(&t, "for i in 0..20000 { h = tanh(h @ w) }\r");
  usleep(700 * 1000);
  double t0 = now_s();
  term_send(&t, "\x03");
  term_expect(&t, "interrupted");
  term_expect(&t, ">>> ");
  cr_assert_lt(now_s() - t0, 20.0, "the interrupt took %.1f s", now_s() - t0);
  /* nothing of the interrupted input was kept; the session goes on */
  term_send(&t, "max(abs(h - w))\r");
  term_expect(&t, "0.0000 (f32[])");
  term_expect(&t, ">>> ");
  term_settle();
  term_send(&t, "\x04");
  cr_assert_eq(term_exit(&t), 0);
}

/* save() and :save-weights write files (files.session cannot name a
 * temporary directory): save(load(...) * 2) and a state_dict loaded from
 * tests/data/lin_ckpt.safetensors (files.session) saved again, read back
 * here and compared with the values by hand; a failed save() keeps
 * nothing of its input and leaves no file. */
Test(repl, save_and_save_weights_write_files) {
  char in[4096];
  snprintf(in, sizeof in,
           "let a = load(\"tests/data/f32_2x3.npy\")\n"
           "save(\"%s\", a * 2); let kept = 1\n"
           "model Lin {\n"
           "  param weight: f32[2, 3] = zeros()\n"
           "  param bias: f32[2] = zeros()\n"
           "}\n"
           "let m = Lin()\n"
           ":load-weights tests/data/lin_ckpt.safetensors m --prefix model.= --convert --strict=false\n"
           ":save-weights %s m\n"
           "let gone = 1; save(\"%s\", bf16(a))\n"
           "kept\n"
           "gone\n",
           tmp_path("a2.npy"), tmp_path("m.safetensors"), tmp_path("bad.npy"));
  int st;
  char *out = repl_output(in, &st);
  cr_expect_eq(st, 1, "%s", out);   /* the bf16 save fails */
  cr_expect(strstr(out, "Saved 2 tensors of m to "), "%s", out);
  cr_expect(strstr(out, "\n1 (int)\n"), "%s", out);
  cr_expect(strstr(out, "unknown name 'gone'"), "%s", out);
  cr_expect_eq(access(tmp_path("bad.npy"), F_OK), -1);
  td_tensor *t;
  td_err err;
  cr_assert_eq(td_npy_read(tmp_path("a2.npy"), &t, &err), 0, "%s", err.msg);
  float want[6] = {1, -2.5f, 4, 6, 9.5f, -12};
  cr_assert(t->dtype == TD_F32 && t->rank == 2 && t->shape[0] == 2 && t->shape[1] == 3);
  for (int i = 0; i < 6; i++) cr_expect_eq(((float *)t->data)[i], want[i], "a2[%d]", i);
  td_tensor_release(t);
  td_tensor_map m;
  td_tensor_map_init(&m);
  cr_assert_eq(td_safetensors_read(tmp_path("m.safetensors"), &m, &err), 0, "%s", err.msg);
  cr_expect_eq(m.n, 2);
  td_tensor *w = td_tensor_map_get(&m, "weight"), *b = td_tensor_map_get(&m, "bias");
  cr_assert(w && b && w->dtype == TD_F32 && b->dtype == TD_F32);
  float ww[6] = {1, 0, -1, 0.5f, 2, 0}, bw[2] = {0.25f, -3};
  for (int i = 0; i < 6; i++) cr_expect_eq(((float *)w->data)[i], ww[i], "weight[%d]", i);
  for (int i = 0; i < 2; i++) cr_expect_eq(((float *)b->data)[i], bw[i], "bias[%d]", i);
  td_tensor_map_free(&m);
  free(out);
}

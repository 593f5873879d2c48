/* lang_runner.c - runs the language tests: .td programs that carry their
 * own expectations in comments.
 *
 * Every .td file below tests/lang/ and examples/ (found at run time under
 * TDSL_SRCDIR) is one Criterion test.  The runner starts the built
 * tdsl (TDSL_BIN) as a subprocess with cwd = the source directory, stdin
 * from /dev/null, and the file's path relative to the source directory (so
 * messages read `tests/lang/foo.td:3:5: error: ...`), kills it after
 * TDSL_LANG_TIMEOUT seconds (default 60) and compares what it did with the
 * comments in the file:
 *
 *   # expect: TEXT      stdout, line by line, must equal the TEXT lines of
 *                       all `# expect:` comments in order (trailing spaces
 *                       ignored; one space after the colon is not part of
 *                       TEXT).  The file is run with `tdsl run FILE`.
 *   # error: TEXT       on line L: `tdsl check FILE` (or `tdsl run FILE` when
 *                       the file also has expect or args lines) exits with
 *                       status 1 and stderr has a diagnostic line
 *                       `FILE:L:COL: error: MESSAGE` whose MESSAGE contains
 *                       TEXT.  `# error@COL: TEXT` also checks the column.
 *                       Every expected error must appear, and an error
 *                       reported on a line without `# error` (or in another
 *                       file) fails the test.
 *   # help: TEXT        some help text in stderr contains TEXT.  A help
 *                       text runs from `help: ` to the end of its line plus
 *                       the indented lines after it that are not source
 *                       excerpts; runs of blanks and line breaks compare as
 *                       one space.
 *   # args: ARGS        extra arguments after `tdsl run FILE` (several lines
 *                       add up; '...' and "..." quote; `{tmp}` becomes a
 *                       fresh temporary directory).  Implies `tdsl run`.
 *   # cmd: check|run    forces the command.
 *   # runner: skip WHY  skips the file; the reason is printed as a SKIP.
 *
 * A file with none of these must pass `tdsl check FILE` (exit 0), or
 * `tdsl run FILE` when it has `fn main`.  A directive is a comment that
 * starts with one of these words; it may follow code on its line.  A
 * comment that only mentions one later (`see the # expect: lines`) is not
 * a directive.  A malformed directive, a sanitizer report in stderr, a
 * signal or a timeout always fail.
 *
 * Environment: TDSL_BIN and TDSL_SRCDIR override the compiled-in paths;
 * TDSL_LANG_DIRS (colon separated, relative to the source directory,
 * default "tests/lang:examples") chooses what to run.  TDSL_PATH defaults
 * to the source tree's stdlib for the child.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TDSL_SRCDIR
#error "compile with -DTDSL_SRCDIR=\"/path/to/source\""
#endif
#ifndef TDSL_BIN
#error "compile with -DTDSL_BIN=\"/path/to/tdsl\""
#endif

#define OUTPUT_CAP (8u << 20)  /* bytes kept per stream */
#define SHOW_CAP 6000          /* bytes of each stream shown on failure */

/* ---------------------------------------------------------------------------
 * Small utilities
 */

/* A growable NUL-terminated byte buffer; p == NULL means empty. */
typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void buf_add(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return;            /* a test helper: drop output rather than die */
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void buf_printf(buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void buf_printf(buf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    buf_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) return;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf_add(b, big, (size_t)n);
  free(big);
}

static const char *buf_str(const buf *b) { return b->p ? b->p : ""; }

static void buf_clear(buf *b) {
  b->n = 0;
  if (b->p) b->p[0] = '\0';
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

/* Appends p to a malloc'd array of strings. */
static void strv_push(char ***v, size_t *n, char *p) {
  char **nv = realloc(*v, (*n + 1) * sizeof **v);
  if (!nv) {
    free(p);
    return;
  }
  nv[(*n)++] = p;
  *v = nv;
}

static void strv_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* Length of s[0..n) without trailing blanks (space, tab, CR). */
static size_t trim_len(const char *s, size_t n) {
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
  return n;
}

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

/* ---------------------------------------------------------------------------
 * The expectations written in a .td file
 */

enum { CMD_AUTO, CMD_CHECK, CMD_RUN };

typedef struct want_error {
  int line;
  int col;                     /* 0: any column */
  char *text;
} want_error;

typedef struct spec {
  char **expect;               /* expected stdout lines */
  size_t n_expect;
  want_error *errors;
  size_t n_errors;
  char **helps;
  size_t n_helps;
  char **args;
  size_t n_args;
  int cmd;                     /* CMD_* */
  char *skip;                  /* reason, or NULL */
  int has_main;
  buf bad;                     /* malformed directives, one per line */
} spec;

static void spec_free(spec *s) {
  strv_free(s->expect, s->n_expect);
  for (size_t i = 0; i < s->n_errors; i++) free(s->errors[i].text);
  free(s->errors);
  strv_free(s->helps, s->n_helps);
  strv_free(s->args, s->n_args);
  free(s->skip);
  free(s->bad.p);
  memset(s, 0, sizeof *s);
}

/* Splits s[0..n) into words ('...' and "..." group) appended to s->args. */
static void split_args(spec *sp, const char *s, size_t n, int lineno) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i == n) break;
    buf w = {0};
    char quote = 0;
    for (; i < n && (quote || (s[i] != ' ' && s[i] != '\t')); i++) {
      if (!quote && (s[i] == '\'' || s[i] == '"')) quote = s[i];
      else if (quote && s[i] == quote) quote = 0;
      else buf_add(&w, s + i, 1);
    }
    if (quote) buf_printf(&sp->bad, "line %d: unterminated quote in args\n", lineno);
    strv_push(&sp->args, &sp->n_args, w.p ? w.p : dup_n("", 0));
  }
}

/* If s starts with keyword kw, returns the text after it, else NULL. */
static const char *after_kw(const char *s, const char *end, const char *kw) {
  size_t k = strlen(kw);
  if ((size_t)(end - s) < k || memcmp(s, kw, k) != 0) return NULL;
  return s + k;
}

/* Applies the directive at d (just after the comment's `#` and blanks, up
 * to end); returns 0 when the comment is not a directive. */
static int apply_directive(spec *sp, const char *d, const char *end, int lineno) {
  const char *t;
  int col = 0;
  if ((t = after_kw(d, end, "error@"))) {
    char *num_end;
    long c = strtol(t, &num_end, 10);
    if (num_end == t || num_end >= end || *num_end != ':' || c <= 0) {
      buf_printf(&sp->bad, "line %d: malformed `# error@COL:`\n", lineno);
      return 1;
    }
    col = (int)c;
    t = num_end + 1;
  } else if (!(t = after_kw(d, end, "error:")) && !(t = after_kw(d, end, "expect:")) &&
             !(t = after_kw(d, end, "help:")) && !(t = after_kw(d, end, "args:")) &&
             !(t = after_kw(d, end, "cmd:")) && !(t = after_kw(d, end, "runner:"))) {
    return 0;
  }
  if (t < end && *t == ' ') t++;
  size_t n = trim_len(t, (size_t)(end - t));
  if (d[0] == 'e' && d[1] == 'x') {
    strv_push(&sp->expect, &sp->n_expect, dup_n(t, n));
  } else if (d[0] == 'e') {
    want_error *e = realloc(sp->errors, (sp->n_errors + 1) * sizeof *e);
    if (!e) return 1;
    sp->errors = e;
    e[sp->n_errors++] = (want_error){lineno, col, dup_n(t, n)};
  } else if (d[0] == 'h') {
    strv_push(&sp->helps, &sp->n_helps, dup_n(t, n));
  } else if (d[0] == 'a') {
    split_args(sp, t, n, lineno);
  } else if (d[0] == 'c') {
    if (n == 5 && !memcmp(t, "check", 5)) sp->cmd = CMD_CHECK;
    else if (n == 3 && !memcmp(t, "run", 3)) sp->cmd = CMD_RUN;
    else buf_printf(&sp->bad, "line %d: `# cmd:` takes check or run\n", lineno);
  } else if (n >= 4 && !memcmp(t, "skip", 4)) {
    const char *r = t + 4;
    while (r < t + n && *r == ' ') r++;
    free(sp->skip);
    sp->skip = dup_n(r, (size_t)(t + n - r));
    if (sp->skip && !*sp->skip) buf_printf(&sp->bad, "line %d: skip needs a reason\n", lineno);
  } else {
    buf_printf(&sp->bad, "line %d: `# runner:` takes `skip REASON`\n", lineno);
  }
  return 1;
}

/* Looks for a directive at the start of the line's comment: the first `#`
 * outside a "string" (so a comment that mentions `# expect:` later on is
 * just a comment). */
static void scan_line(spec *sp, const char *s, size_t n, int lineno) {
  const char *end = s + n;
  int in_str = 0;
  for (const char *p = s; p < end; p++) {
    if (in_str && *p == '\\' && p + 1 < end) p++;
    else if (*p == '"') in_str = !in_str;
    else if (!in_str && *p == '#') {
      const char *d = p + 1;
      while (d < end && (*d == ' ' || *d == '\t')) d++;
      apply_directive(sp, d, end, lineno);
      return;
    }
  }
}

/* True if the line is `fn main(`, allowing blanks. */
static int is_main_line(const char *s, size_t n) {
  const char *end = s + n;
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  if (end - s < 3 || memcmp(s, "fn", 2) || (s[2] != ' ' && s[2] != '\t')) return 0;
  s += 2;
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  if (end - s < 4 || memcmp(s, "main", 4)) return 0;
  s += 4;
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  return s < end && *s == '(';
}

/* Reads all directives of a program text. */
static void parse_spec(spec *sp, const char *text) {
  memset(sp, 0, sizeof *sp);
  int lineno = 1;
  for (const char *s = text; *s; lineno++) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s) : strlen(s);
    scan_line(sp, s, n, lineno);
    if (is_main_line(s, n)) sp->has_main = 1;
    if (!nl) break;
    s = nl + 1;
  }
}

/* ---------------------------------------------------------------------------
 * Running tdsl
 */

typedef struct outcome {
  buf out, err;
  int status;                  /* exit status, or -1 */
  int signal;                  /* terminating signal, or 0 */
  int timed_out;
  int spawn_errno;             /* fork/pipe failure, or 0 */
} outcome;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The child: own process group (so a timeout kills everything it started),
 * stdin from /dev/null, stdout/stderr into the pipes.  Never returns. */
static void child_exec(char *const argv[], const char *cwd, int out_fd, int err_fd) {
  setpgid(0, 0);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
    _exit(127);
  if (chdir(cwd) != 0) {
    dprintf(2, "lang_runner: cannot chdir to %s: %s\n", cwd, strerror(errno));
    _exit(127);
  }
  execv(argv[0], argv);
  dprintf(2, "lang_runner: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

/* Reads from fd into b (up to OUTPUT_CAP); returns 0 at EOF or error. */
static int drain(int fd, buf *b) {
  char tmp[65536];
  ssize_t r = read(fd, tmp, sizeof tmp);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (r <= 0) return 0;
  if (b->n < OUTPUT_CAP) buf_add(b, tmp, (size_t)r);
  return 1;
}

/* Collects the child's output until both pipes close or the deadline. */
static void collect(pid_t pid, int out_fd, int err_fd, double timeout, outcome *o) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  double deadline = now_s() + timeout;
  int open_fds = 2;
  while (open_fds > 0) {
    double left = deadline - now_s();
    if (left <= 0) {
      o->timed_out = 1;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    int r = poll(fds, 2, (int)(left * 1000) + 1);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && r > 0; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!drain(fds[i].fd, i == 0 ? &o->out : &o->err)) {
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
}

/* Runs argv with cwd, stdin closed, and a timeout; fills o. */
static void run_process(char *const argv[], const char *cwd, double timeout, outcome *o) {
  memset(o, 0, sizeof *o);
  o->status = -1;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    o->spawn_errno = errno;
    return;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    o->spawn_errno = errno;
    close(out[0]);
    close(out[1]);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) child_exec(argv, cwd, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    o->spawn_errno = errno;
  } else {
    setpgid(pid, pid);
    collect(pid, out[0], err[0], timeout, o);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(st)) o->status = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) o->signal = WTERMSIG(st);
  }
  close(out[0]);
  close(err[0]);
}

/* Environment the child sees: the source tree's stdlib, no colours,
 * sanitizer exit codes that cannot be mistaken for tdsl's own. */
static void child_env(const char *srcdir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/stdlib", srcdir);
  setenv("TDSL_PATH", path, 0);
  setenv("NO_COLOR", "1", 1);
  setenv("ASAN_OPTIONS", "exitcode=86", 0);
  setenv("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=87", 0);
}

/* ---------------------------------------------------------------------------
 * Comparing
 */

/* Compares stdout with the expected lines; appends differences to r. */
static void check_stdout(const spec *sp, const char *out, buf *r) {
  size_t i = 0;
  const char *s = out;
  while (*s || i < sp->n_expect) {
    const char *nl = *s ? strchr(s, '\n') : NULL;
    size_t n = *s ? (nl ? (size_t)(nl - s) : strlen(s)) : 0;
    int have = *s != '\0';
    if (!have) {
      buf_printf(r, "stdout ended early: missing line %zu: \"%s\"\n", i + 1, sp->expect[i]);
      return;
    }
    size_t tn = trim_len(s, n);
    if (i >= sp->n_expect) {
      buf_printf(r, "stdout has extra line %zu: \"%.*s\"\n", i + 1, (int)tn, s);
      return;
    }
    if (strlen(sp->expect[i]) != tn || memcmp(sp->expect[i], s, tn) != 0) {
      buf_printf(r, "stdout line %zu differs\n  expected: \"%s\"\n  actual:   \"%.*s\"\n",
                 i + 1, sp->expect[i], (int)tn, s);
      return;
    }
    i++;
    s = nl ? nl + 1 : s + n;
  }
}

/* A located diagnostic line `PATH:LINE[:COL]: error: MSG`.  Returns 1 and
 * fills the fields (path is s[0..*path_len)) if the line is one. */
static int parse_diag(const char *s, size_t n, size_t *path_len, int *line, int *col) {
  const char *e = NULL;
  for (const char *p = s; p + 9 <= s + n; p++)
    if (!memcmp(p, ": error: ", 9)) {
      e = p;
      break;
    }
  if (!e) return 0;
  long nums[2];
  int k = 0;
  const char *p = e;
  while (k < 2) {
    const char *q = p;
    while (q > s && q[-1] >= '0' && q[-1] <= '9') q--;
    if (q == p || q == s || q[-1] != ':') break;
    nums[k++] = strtol(q, NULL, 10);
    p = q - 1;
  }
  if (k == 0) return 0;
  *path_len = (size_t)(p - s);
  *line = (int)(k == 2 ? nums[1] : nums[0]);
  *col = k == 2 ? (int)nums[0] : 0;
  return 1;
}

/* Does stderr have `PATH:LINE:[COL:] error: MSG` with TEXT in MSG? */
static int has_error(const char *err, const char *path, const want_error *w) {
  size_t plen = strlen(path);
  for (const char *s = err; *s;) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s) : strlen(s);
    size_t dl;
    int line, col;
    if (parse_diag(s, n, &dl, &line, &col) && dl == plen && !memcmp(s, path, plen) &&
        line == w->line && (w->col == 0 || col == w->col)) {
      char *l = dup_n(s, n);
      const char *msg = l ? strstr(l, ": error: ") : NULL;
      int found = msg && strstr(msg + 9, w->text) != NULL;
      free(l);
      if (found) return 1;
    }
    if (!nl) break;
    s = nl + 1;
  }
  return 0;
}

/* Every located error must be on a line that expects one. */
static void check_unexpected(const spec *sp, const char *err, const char *path, buf *r) {
  size_t plen = strlen(path);
  for (const char *s = err; *s;) {
    const char *nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s) : strlen(s);
    size_t dl;
    int line, col, ok = 0;
    if (parse_diag(s, n, &dl, &line, &col)) {
      for (size_t i = 0; i < sp->n_errors && dl == plen && !memcmp(s, path, plen); i++)
        if (sp->errors[i].line == line) ok = 1;
      if (!ok) buf_printf(r, "unexpected diagnostic: %.*s\n", (int)n, s);
    }
    if (!nl) break;
    s = nl + 1;
  }
}

/* True for the source excerpt lines of a diagnostic ("  12 |  code",
 * "     |  ^~~"), which never continue a help text. */
static int is_excerpt_line(const char *s, const char *end) {
  while (s < end && *s == ' ') s++;
  while (s < end && *s >= '0' && *s <= '9') s++;
  while (s < end && *s == ' ') s++;
  return s < end && *s == '|';
}

/* Appends s[0..n) to b with every run of blanks turned into one space. */
static void add_collapsed(buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int blank = s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n';
    if (!blank) buf_add(b, s + i, 1);
    else if (b->n && b->p[b->n - 1] != ' ' && b->p[b->n - 1] != '\n') buf_add(b, " ", 1);
  }
}

/* The help texts in stderr, one per line of the result, blanks collapsed:
 * each runs from "help: " to the end of its line, plus the indented lines
 * after it that are not source excerpts (a help may span several lines). */
static void help_blocks(const char *err, buf *out) {
  int in_help = 0;
  for (const char *s = err; *s;) {
    const char *nl = strchr(s, '\n');
    const char *end = nl ? nl : s + strlen(s);
    const char *h = NULL;
    for (const char *p = s; p + 6 <= end && !h; p++)
      if (!memcmp(p, "help: ", 6)) h = p + 6;
    if (h) {
      if (in_help) buf_add(out, "\n", 1);
      add_collapsed(out, h, (size_t)(end - h));
      in_help = 1;
    } else if (in_help && (*s == ' ' || *s == '\t') && !is_excerpt_line(s, end)) {
      buf_add(out, " ", 1);
      add_collapsed(out, s, (size_t)(end - s));
    } else if (in_help) {
      buf_add(out, "\n", 1);
      in_help = 0;
    }
    if (!nl) break;
    s = nl + 1;
  }
}

static void check_stderr(const spec *sp, const char *err, const char *path, buf *r) {
  for (size_t i = 0; i < sp->n_errors; i++) {
    const want_error *w = &sp->errors[i];
    if (!has_error(err, path, w)) {
      if (w->col) buf_printf(r, "missing error at %s:%d:%d: error: %s\n", path, w->line, w->col, w->text);
      else buf_printf(r, "missing error at %s:%d: error: %s\n", path, w->line, w->text);
    }
  }
  if (sp->n_errors) check_unexpected(sp, err, path, r);
  if (!sp->n_helps) return;
  buf helps = {0}, want = {0};
  help_blocks(err, &helps);
  for (size_t i = 0; i < sp->n_helps; i++) {
    buf_clear(&want);
    add_collapsed(&want, sp->helps[i], strlen(sp->helps[i]));
    if (!strstr(buf_str(&helps), buf_str(&want)))
      buf_printf(r, "no help text contains: %s\n", sp->helps[i]);
  }
  free(helps.p);
  free(want.p);
}

static int sanitizer_report(const char *err) {
  return strstr(err, "==ERROR: ") || strstr(err, "Sanitizer:") || strstr(err, ": runtime error: ");
}

/* Checks exit status and output of one run; appends failures to r. */
static void judge(const spec *sp, const outcome *o, const char *path, double timeout, buf *r) {
  int want = sp->n_errors ? 1 : 0;
  const char *err = buf_str(&o->err);
  if (o->spawn_errno) {
    buf_printf(r, "could not start tdsl: %s\n", strerror(o->spawn_errno));
    return;
  }
  if (o->timed_out) buf_printf(r, "timed out after %.0f s (killed)\n", timeout);
  else if (o->signal) buf_printf(r, "tdsl died of signal %d (%s)\n", o->signal, strsignal(o->signal));
  else if (o->status != want) buf_printf(r, "exit status %d, expected %d\n", o->status, want);
  if (sanitizer_report(err)) buf_printf(r, "sanitizer report in stderr\n");
  if (sp->n_expect) check_stdout(sp, buf_str(&o->out), r);
  check_stderr(sp, err, path, r);
}

/* ---------------------------------------------------------------------------
 * Temporary directory for {tmp}
 */

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      struct stat st;
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
      else unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Replaces every "{tmp}" in s with tmp; returns a malloc'd string. */
static char *subst_tmp(const char *s, const char *tmp) {
  buf b = {0};
  for (const char *p = s; *p;) {
    const char *h = strstr(p, "{tmp}");
    if (!h) {
      buf_add(&b, p, strlen(p));
      break;
    }
    buf_add(&b, p, (size_t)(h - p));
    buf_add(&b, tmp, strlen(tmp));
    p = h + 5;
  }
  return b.p ? b.p : dup_n("", 0);
}

/* ---------------------------------------------------------------------------
 * One test file
 */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  buf b = {0};
  char tmp[8192];
  size_t r;
  while ((r = fread(tmp, 1, sizeof tmp, f)) > 0) buf_add(&b, tmp, r);
  fclose(f);
  return b.p ? b.p : dup_n("", 0);
}

static const char *srcdir(void) { return env_or("TDSL_SRCDIR", TDSL_SRCDIR); }
static const char *tdsl_bin(void) { return env_or("TDSL_BIN", TDSL_BIN); }

/* Appends the command and (shortened) outputs to the failure report. */
static void describe_run(char *const argv[], const outcome *o, buf *r) {
  buf_printf(r, "command (in %s):", srcdir());
  for (int i = 0; argv[i]; i++) buf_printf(r, " %s", argv[i]);
  buf_printf(r, "\nexit status: %d\n", o->status);
  const buf *streams[2] = {&o->out, &o->err};
  for (int i = 0; i < 2; i++) {
    const buf *b = streams[i];
    buf_printf(r, "--- %s (%zu bytes) ---\n", i ? "stderr" : "stdout", b->n);
    buf_add(r, buf_str(b), b->n < SHOW_CAP ? b->n : SHOW_CAP);
    if (b->n > SHOW_CAP) buf_printf(r, "\n[... %zu more bytes]", b->n - SHOW_CAP);
    if (b->n && b->p[b->n - 1] != '\n') buf_add(r, "\n", 1);
  }
}

/* Runs the file's test; returns a malloc'd failure report, or NULL. */
static char *run_file_test(const char *rel, const spec *sp) {
  int cmd = sp->cmd;
  if (cmd == CMD_AUTO)
    cmd = (sp->n_expect || sp->n_args) ? CMD_RUN : sp->n_errors ? CMD_CHECK
        : sp->has_main ? CMD_RUN : CMD_CHECK;
  char tmp[4096] = "";
  int need_tmp = 0;
  for (size_t i = 0; i < sp->n_args; i++) need_tmp |= strstr(sp->args[i], "{tmp}") != NULL;
  if (need_tmp) {
    snprintf(tmp, sizeof tmp, "%s/tdsl-lang-XXXXXX", env_or("TMPDIR", "/tmp"));
    if (!mkdtemp(tmp)) return strdup("cannot create a temporary directory for {tmp}\n");
  }
  char **argv = calloc(sp->n_args + 4, sizeof *argv);
  if (!argv) return strdup("out of memory\n");
  argv[0] = strdup(tdsl_bin());
  argv[1] = strdup(cmd == CMD_RUN ? "run" : "check");
  argv[2] = strdup(rel);
  for (size_t i = 0; i < sp->n_args; i++) argv[3 + i] = subst_tmp(sp->args[i], tmp);
  double timeout = atof(env_or("TDSL_LANG_TIMEOUT", "60"));
  outcome o;
  child_env(srcdir());
  run_process(argv, srcdir(), timeout, &o);
  buf r = {0};
  judge(sp, &o, rel, timeout, &r);
  if (r.n) describe_run(argv, &o, &r);
  strv_free(argv, sp->n_args + 3);
  free(o.out.p);
  free(o.err.p);
  if (need_tmp) remove_tree(tmp);
  return r.p;
}

/* Finds, runs and judges one file; returns a malloc'd report or NULL, and
 * sets *skip to a malloc'd reason when the file opts out. */
static char *test_one(const char *rel, char **skip) {
  char abs[4096];
  snprintf(abs, sizeof abs, "%s/%s", srcdir(), rel);
  *skip = NULL;
  char *text = read_file(abs);
  if (!text) {
    char *m = malloc(4200);
    if (m) snprintf(m, 4200, "cannot read %s: %s\n", abs, strerror(errno));
    return m;
  }
  spec sp;
  parse_spec(&sp, text);
  free(text);
  char *report = NULL;
  if (sp.bad.n) {
    report = strdup(buf_str(&sp.bad));
  } else if (sp.skip) {
    *skip = strdup(sp.skip);
  } else {
    report = run_file_test(rel, &sp);
  }
  spec_free(&sp);
  return report;
}

/* ---------------------------------------------------------------------------
 * Discovering the files
 */

typedef struct file_list {
  char **v;
  size_t n;
} file_list;

static int has_td_suffix(const char *name) {
  size_t n = strlen(name);
  return n > 3 && !strcmp(name + n - 3, ".td");
}

/* Adds every *.td below srcdir/rel (recursively, skipping dot entries). */
static void walk(const char *rel, file_list *fl) {
  char abs[4096];
  snprintf(abs, sizeof abs, "%s/%s", srcdir(), rel);
  DIR *d = opendir(abs);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sub[4096], full[8192];
    snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
    snprintf(full, sizeof full, "%s/%s", srcdir(), sub);
    struct stat st;
    if (stat(full, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(sub, fl);
    else if (S_ISREG(st.st_mode) && has_td_suffix(e->d_name)) strv_push(&fl->v, &fl->n, strdup(sub));
  }
  closedir(d);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* All test files, sorted, relative to the source directory. */
static file_list discover(void) {
  file_list fl = {0};
  char *dirs = strdup(env_or("TDSL_LANG_DIRS", "tests/lang:examples"));
  for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d;
       d = strtok_r(NULL, ":", &save))
    walk(d, &fl);
  free(dirs);
  if (fl.n) qsort(fl.v, fl.n, sizeof *fl.v, cmp_str);
  return fl;
}

/* ---------------------------------------------------------------------------
 * Criterion tests
 */

typedef struct td_case {
  char *path;                  /* relative to the source directory (cr_malloc) */
} td_case;

static void free_cases(struct criterion_test_params *ctp) {
  td_case *c = ctp->params;
  for (size_t i = 0; i < ctp->length; i++) cr_free(c[i].path);
  cr_free(c);
}

ParameterizedTestParameters(lang, file) {
  file_list fl = discover();
  td_case *c = fl.n ? cr_malloc(fl.n * sizeof *c) : NULL;
  size_t n = 0;
  for (size_t i = 0; i < fl.n && c; i++) {
    size_t len = strlen(fl.v[i]) + 1;
    c[n].path = cr_malloc(len);
    if (c[n].path) memcpy(c[n++].path, fl.v[i], len);
  }
  strv_free(fl.v, fl.n);
  return cr_make_param_array(td_case, c, n, free_cases);
}

/* Failure text is copied here so nothing is leaked when cr_assert_fail ends the test. */
static char failure_text[1 << 16];

ParameterizedTest(td_case *c, lang, file) {
  char *skip = NULL;
  char *report = test_one(c->path, &skip);
  if (skip) {
    snprintf(failure_text, sizeof failure_text, "%s: %s", c->path, skip);
    free(skip);
    fprintf(stderr, "[lang] SKIP %s\n", failure_text);
    cr_skip_test("%s", failure_text);
  }
  fprintf(stderr, "[lang] %s %s\n", report ? "FAIL" : "PASS", c->path);
  if (report) {
    snprintf(failure_text, sizeof failure_text, "%s:\n%s", c->path, report);
    free(report);
    cr_assert_fail("%s", failure_text);
  }
}

/* The runner must find files and a tdsl binary; otherwise "no test ran"
 * would look like success. */
Test(lang, discovery) {
  file_list fl = discover();
  size_t n = fl.n;
  strv_free(fl.v, fl.n);
  cr_expect(n > 0, "no .td files found under %s (TDSL_LANG_DIRS=%s)", srcdir(),
            env_or("TDSL_LANG_DIRS", "tests/lang:examples"));
  cr_expect(access(tdsl_bin(), X_OK) == 0, "tdsl binary %s is not executable", tdsl_bin());
}

/* --- the runner's own parsing, checked on literal texts -------------------- */

Test(runner, directives) {
  static const char text[] =
      "# expect: hello\n"
      "let x = 1   # error: unknown name `y`\n"
      "#expect:   two spaces  \n"
      "# error@7: shape mismatch\n"
      "print(\"#\")  # help: write where(c, a, b)\n"
      "# args: --entry M.forward --in 'x=a b.npy'\n"
      "  fn  main ( ) {\n"
      "# cmd: check\n"
      "# just a comment: not a directive, nor is this # expect: x\n"
      "print(\"\\\" # expect: y\")\n";
  spec sp;
  parse_spec(&sp, text);
  cr_assert_eq(sp.bad.n, 0, "%s", buf_str(&sp.bad));
  cr_assert_eq(sp.n_expect, 2);
  cr_expect_str_eq(sp.expect[0], "hello");
  cr_expect_str_eq(sp.expect[1], "  two spaces");
  cr_assert_eq(sp.n_errors, 2);
  cr_expect_eq(sp.errors[0].line, 2);
  cr_expect_eq(sp.errors[0].col, 0);
  cr_expect_str_eq(sp.errors[0].text, "unknown name `y`");
  cr_expect_eq(sp.errors[1].line, 4);
  cr_expect_eq(sp.errors[1].col, 7);
  cr_assert_eq(sp.n_helps, 1);
  cr_expect_str_eq(sp.helps[0], "write where(c, a, b)");
  cr_assert_eq(sp.n_args, 4);
  cr_expect_str_eq(sp.args[3], "x=a b.npy");
  cr_expect(sp.has_main);
  cr_expect_eq(sp.cmd, CMD_CHECK);
  cr_expect_null(sp.skip);
  spec_free(&sp);
}

Test(runner, malformed_and_skip) {
  spec sp;
  parse_spec(&sp, "# error@x: oops\n# cmd: build\n# runner: skip needs the GPU\n");
  cr_expect_neq(strstr(buf_str(&sp.bad), "line 1"), NULL);
  cr_expect_neq(strstr(buf_str(&sp.bad), "line 2"), NULL);
  cr_assert_not_null(sp.skip);
  cr_expect_str_eq(sp.skip, "needs the GPU");
  spec_free(&sp);
}

Test(runner, stdout_comparison) {
  spec sp;
  parse_spec(&sp, "# expect: a\n# expect: b\n");
  buf r = {0};
  check_stdout(&sp, "a  \nb\n", &r);
  cr_expect_eq(r.n, 0, "%s", buf_str(&r));
  check_stdout(&sp, "a\n", &r);
  cr_expect_neq(strstr(buf_str(&r), "missing line 2"), NULL, "%s", buf_str(&r));
  buf_clear(&r);
  check_stdout(&sp, "a\nb\nc\n", &r);
  cr_expect_neq(strstr(buf_str(&r), "extra line 3"), NULL, "%s", buf_str(&r));
  buf_clear(&r);
  check_stdout(&sp, "a\nB\n", &r);
  cr_expect_neq(strstr(buf_str(&r), "line 2 differs"), NULL, "%s", buf_str(&r));
  free(r.p);
  spec_free(&sp);
}

Test(runner, diagnostics) {
  spec sp;
  parse_spec(&sp, "x\nif t { } # error: a tensor's value\nz # error@3: bad\n");
  const char *err =
      "t.td:2:4: error: a tensor's value is known only when the graph runs\n"
      "   2 | if t { }\n"
      "help: write where(c, a, b)\n"
      "t.td:3:1: error: bad thing\n";
  buf r = {0};
  check_stderr(&sp, err, "t.td", &r);
  cr_expect_neq(strstr(buf_str(&r), "missing error at t.td:3:3"), NULL, "%s", buf_str(&r));
  cr_expect_null(strstr(buf_str(&r), "t.td:2:"), "%s", buf_str(&r));
  buf_clear(&r);
  check_stderr(&sp, "t.td:2:1: error: a tensor's value\nt.td:3:3: error: bad\n"
               "t.td:5:1: error: surprise\nother.td:2:1: error: x\n", "t.td", &r);
  cr_expect_null(strstr(buf_str(&r), "missing"), "%s", buf_str(&r));
  cr_expect_neq(strstr(buf_str(&r), "unexpected diagnostic: t.td:5:1"), NULL, "%s", buf_str(&r));
  cr_expect_neq(strstr(buf_str(&r), "unexpected diagnostic: other.td:2:1"), NULL, "%s", buf_str(&r));
  free(r.p);
  spec_free(&sp);
}

Test(runner, help_texts) {
  spec sp;
  parse_spec(&sp, "# help: where(c > 0, a, b)\n# help: choose with where\n# help: not there\n");
  const char *err =
      "t.td:9:8: error: `if` on a tensor\n"
      "    9 |     if c > 0 { a } else { b }\n"
      "      |        ^~~~~\n"
      "help: choose with where(cond, a, b), which keeps one graph:\n"
      "          where(c > 0,\n"
      "                a, b)\n"
      "t.td:10:1: note: not there\n";
  buf r = {0};
  check_stderr(&sp, err, "t.td", &r);
  cr_expect_null(strstr(buf_str(&r), "where(c > 0"), "%s", buf_str(&r));
  cr_expect_null(strstr(buf_str(&r), "choose with"), "%s", buf_str(&r));
  cr_expect_neq(strstr(buf_str(&r), "no help text contains: not there"), NULL, "%s", buf_str(&r));
  free(r.p);
  spec_free(&sp);
}

Test(runner, subprocess_timeout_and_signal) {
  char *sleeper[] = {"/bin/sh", "-c", "echo out; echo err >&2; sleep 30", NULL};
  outcome o;
  run_process(sleeper, "/", 0.5, &o);
  cr_expect(o.timed_out);
  cr_expect_str_eq(buf_str(&o.out), "out\n");
  cr_expect_str_eq(buf_str(&o.err), "err\n");
  free(o.out.p);
  free(o.err.p);
  char *stdin_reader[] = {"/bin/sh", "-c", "cat; pwd; exit 3", NULL};
  run_process(stdin_reader, "/", 10, &o);
  cr_expect_not(o.timed_out);
  cr_expect_eq(o.status, 3);
  cr_expect_str_eq(buf_str(&o.out), "/\n");
  free(o.out.p);
  free(o.err.p);
  char *crasher[] = {"/bin/sh", "-c", "kill -SEGV $$", NULL};
  run_process(crasher, "/", 10, &o);
  cr_expect_eq(o.signal, SIGSEGV);
  free(o.out.p);
  free(o.err.p);
}

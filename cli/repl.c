/* repl.c - `tdsl repl`: an interactive, eager session.
 *
 *   tdsl repl [FILE.td]... [--seed N]
 *
 * On a terminal: line editing, persistent history and tab completion
 * (libedit), the prompt ">>> " and, while an input is incomplete (an open
 * bracket, a trailing operator), the continuation prompt "... ".  Ctrl-C
 * abandons the line being typed or interrupts a running computation, Ctrl-D
 * on an empty line exits.  When stdin is not a terminal, statements are
 * read from it and results printed with no prompt and no colour, so
 * `tdsl repl < session.td` works in scripts; the exit status is then 1 when
 * an input failed.
 *
 * Lines starting with ':' are commands (:help lists them).  Everything else
 * is handed to the session (driver/session.h), which does the work; this file
 * only reads lines, decides when an input is complete, prints results and
 * renders diagnostics.  The history is $XDG_STATE_HOME/tdsl/history when
 * XDG_STATE_HOME is set, ~/.tdsl_history otherwise; a multi-line input is
 * one entry of it (its lines joined by newlines), recalled whole.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#include "cli/repl.h"
#include "cli/search.h"
#include "driver/session.h"
#include "cli/explain_cmd.h"
#include "runtime/cuda_loader.h"

#define PROMPT ">>> "
#define PROMPT_MORE "... "

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* A growable string. */
typedef struct text {
  char *s;
  size_t len, cap;
} text;

static int text_add(text *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    while (t->len + n + 1 > cap) cap *= 2;
    char *ns = realloc(t->s, cap);
    if (!ns) return -1;
    t->s = ns;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = 0;
  return 0;
}

struct command;

typedef struct repl {
  td_session *s;
  int interactive, color;
  text buf;                      /* the input read so far (whole lines) */
  const struct command *cmd;     /* the command the input belongs to, or NULL */
  int first_line, line_no;       /* session line numbers, for messages */
  int failed, quit;
  int compiled;                  /* `:compiled on` */
  int cuda;                      /* `:device cuda` */
  char *history;                 /* history file, or NULL */
} repl;

typedef struct command {
  const char *name, *args, *help;
  int takes_input;               /* the rest is an input (may span lines) */
  void (*run)(repl *r, const char *arg);
} command;

/* ---- output ---- */

static void on_print(void *ud, const char *s) {
  (void)ud;
  fputs(s, stdout);
  fflush(stdout);
}

static void on_value(void *ud, const char *s) {
  (void)ud;
  fputs(s, stdout);
  fputc('\n', stdout);
}

/* Renders and clears the session's diagnostics; rc < 0 marks a failure. */
static void report(repl *r, int rc) {
  fflush(stdout);
  td_diag_render(td_session_diags(r->s), stderr, r->color);
  td_session_clear_diags(r->s);
  if (rc < 0) r->failed = 1;
}

static void usage_error(repl *r, const char *msg, const char *help) {
  fflush(stdout);
  fprintf(stderr, "tdsl: error: %s\n", msg);
  if (help) fprintf(stderr, "help: %s\n", help);
  r->failed = 1;
}

/* ---- commands ---- */

static const command commands[];

static void cmd_help(repl *r, const char *arg) {
  (void)r;
  (void)arg;
  puts("Type statements and expressions as in a function body; definitions (model, fn,\n"
       "import) and bindings (let) persist.  An expression's value is shown with its\n"
       "type.  Commands:");
  for (const command *c = commands; c->name; c++) {
    char head[64];
    snprintf(head, sizeof head, ":%s%s%s", c->name, c->args ? " " : "", c->args ? c->args : "");
    printf("  %-24s %s\n", head, c->help);
  }
  puts("Ctrl-C interrupts a computation, Ctrl-D exits.  Docs: docs/repl.md.");
}

static void cmd_type(repl *r, const char *arg) {
  char *t = NULL;
  int rc = td_session_type(r->s, arg, r->first_line, &t);
  if (rc == 0) puts(t);
  free(t);
  report(r, rc);
}

static void cmd_ir(repl *r, const char *arg) {
  report(r, td_session_ir(r->s, arg, r->first_line, stdout));
}

static void set_backend(repl *r, td_backend b);
static void follow_mode(repl *r);

static void cmd_explain(repl *r, const char *arg) {
  report(r, td_session_explain(r->s, arg, r->first_line, stdout));
}

/* "12.3 us": a duration with a unit that suits it. */
static const char *duration(double sec, char *buf, size_t n) {
  if (sec < 1e-6) snprintf(buf, n, "%.0f ns", sec * 1e9);
  else if (sec < 1e-3) snprintf(buf, n, "%.1f us", sec * 1e6);
  else if (sec < 1) snprintf(buf, n, "%.2f ms", sec * 1e3);
  else snprintf(buf, n, "%.3f s", sec);
  return buf;
}

static void cmd_time(repl *r, const char *arg) {
  td_session_timing t;
  set_backend(r, TD_BACKEND_EAGER);   /* the first row is eager whatever the mode */
  int rc = td_session_time(r->s, arg, r->first_line, 0, 0, &t);
  follow_mode(r);
  if (rc == 0) {
    char b[32], best[32], mean[32];
    printf("%-10s%-12s%-12s%-12s%s\n", "", "build", "run (best)", "run (mean)", "runs");
    printf("%-10s%-12s%-12s%-12s%d\n", "eager", duration(t.build_s, b, sizeof b),
           duration(t.run_best_s, best, sizeof best), duration(t.run_mean_s, mean, sizeof mean),
           t.reps);
    td_session_timing tc;
    set_backend(r, TD_BACKEND_CPU);
    /* compiled once, then one untimed run */
    int rc2 = td_session_time(r->s, arg, r->first_line, 0, 1, &tc);
    follow_mode(r);
    if (rc2 == 0) {
      char cb[32];
      printf("%-10s%-12s%-12s%-12s%d   (compile %s)\n", "compiled", duration(tc.build_s, b, sizeof b),
             duration(tc.run_best_s, best, sizeof best), duration(tc.run_mean_s, mean, sizeof mean), tc.reps,
             duration(tc.prepare_s, cb, sizeof cb));
      if (tc.run_best_s > 0)
        printf("%-10s%.1fx faster than eager (best runs)\n", "", t.run_best_s / tc.run_best_s);
    } else {
      rc = rc2;
    }
  }
  report(r, rc);
}

/* The first word of arg (blank-separated) into w. */
static const char *word(const char *arg, char *w, size_t n) {
  while (*arg == ' ' || *arg == '\t') arg++;
  size_t k = strcspn(arg, " \t\r\n");
  if (k >= n) k = n - 1;
  memcpy(w, arg, k);
  w[k] = 0;
  return w;
}

static void cmd_compiled(repl *r, const char *arg) {
  char w[32];
  word(arg, w, sizeof w);
  if (!strcmp(w, "on")) {
    r->compiled = 1;
    follow_mode(r);
    puts("Compiled mode is on: every input runs as one fused graph compiled with libgccjit.");
  } else if (!strcmp(w, "off")) {
    r->compiled = 0;
    follow_mode(r);
    puts("Compiled mode is off: every input is evaluated eagerly.");
  } else if (!*w) {
    printf("Compiled mode is %s.\n", r->compiled ? "on" : "off");
  } else {
    usage_error(r, "`:compiled` takes `on` or `off`", NULL);
  }
}

/* Inputs run on b, as `tdsl run` runs a program there. */
static void set_backend(repl *r, td_backend b) {
  td_drive_opts o = td_cli_drive_opts(b, 0, NULL);
  td_session_set_driver(r->s, &o);
}

/* Inputs run where `:device` and `:compiled` say. */
static void follow_mode(repl *r) { set_backend(r, td_cli_backend(r->cuda, r->compiled)); }

static void cmd_device(repl *r, const char *arg) {
  char w[32];
  word(arg, w, sizeof w);
  td_backend b;
  if (*w && td_backend_parse(w, &b)) {
    usage_error(r, "`:device` takes `cpu` or `cuda`", NULL);
  } else if (*w && b == TD_BACKEND_CUDA) {
    td_err err;
    if (!td_cuda_load_driver(&err) || !td_cuda_load_nvrtc(&err)) {
      printf("%s; the session stays on the CPU.\n", err.msg);
      return;
    }
    r->cuda = 1;
    follow_mode(r);
    puts("Device: cuda (every input runs as CUDA kernels on the GPU).");
  } else if (*w) {
    r->cuda = 0;
    follow_mode(r);
    puts("Device: cpu.");
  } else {
    printf("Device: %s.\n", r->cuda ? "cuda" : "cpu");
  }
}

static void cmd_load(repl *r, const char *arg) {
  char path[4096];
  const char *p = arg;
  while (*p == ' ' || *p == '\t') p++;
  size_t n = strcspn(p, "\r\n");
  while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
  if (!n || n >= sizeof path) {
    usage_error(r, "`:load` needs a file name", "e.g. :load examples/mlp.td");
    return;
  }
  memcpy(path, p, n);
  path[n] = 0;
  int rc = td_session_load(r->s, path);
  if (rc == 0) printf("Loaded %s.\n", path);
  report(r, rc);
}

/* The blank-separated words of arg (at most max, each cut at n - 1
 * characters) into w; their count, or -1 for more than max. */
static int words(const char *arg, char (*w)[1024], int max) {
  int n = 0;
  for (;;) {
    arg += strspn(arg, " \t\r\n");
    if (!*arg) return n;
    if (n == max) return -1;
    size_t k = strcspn(arg, " \t\r\n");
    size_t c = k < 1023 ? k : 1023;
    memcpy(w[n], arg, c);
    w[n++][c] = 0;
    arg += k;
  }
}

#define WEIGHTS_USAGE ":load-weights FILE.safetensors NAME [--prefix FROM=TO] [--strict=false] [--convert]"

static void cmd_load_weights(repl *r, const char *arg) {
  char w[6][1024];
  int n = words(arg, w, 6);
  td_weights_opts o = {NULL, 0, 0};
  const char *bad = n < 2 ? "`:load-weights` needs a file and a model instance" : NULL;
  for (int i = 2; !bad && i < n; i++) {
    if (!strcmp(w[i], "--convert")) o.convert = 1;
    else if (!strcmp(w[i], "--strict=false")) o.lenient = 1;
    else if (!strcmp(w[i], "--strict=true")) o.lenient = 0;
    else if (!strcmp(w[i], "--prefix") && i + 1 < n && td_weights_prefix_ok(w[i + 1])) o.prefix = w[++i];
    else bad = "`:load-weights` takes --prefix FROM=TO, --strict=false and --convert after the file and the name";
  }
  if (bad) {
    usage_error(r, bad, "e.g. " WEIGHTS_USAGE);
    return;
  }
  char *note = NULL;
  int rc = td_session_load_weights(r->s, w[1], w[0], &o, &note);
  if (rc == 0) printf("Loaded %s into %s.\n", w[0], w[1]);
  if (note) printf("note: %s\n", note);
  free(note);
  report(r, rc);
}

static void cmd_save_weights(repl *r, const char *arg) {
  char w[3][1024];
  if (words(arg, w, 2) != 2) {
    usage_error(r, "`:save-weights` needs a file and a model instance", "e.g. :save-weights m.safetensors m");
    return;
  }
  int count = 0;
  int rc = td_session_save_weights(r->s, w[1], w[0], &count);
  if (rc == 0) printf("Saved %d tensor%s of %s to %s.\n", count, count == 1 ? "" : "s", w[1], w[0]);
  report(r, rc);
}

static void cmd_reload(repl *r, const char *arg) {
  (void)arg;
  int rc = td_session_reload(r->s);
  if (rc == 0) puts("Reloaded.");
  report(r, rc);
}

static void cmd_quit(repl *r, const char *arg) {
  (void)arg;
  r->quit = 1;
}

static const command commands[] = {
  {"help", NULL, "this list", 0, cmd_help},
  {"type", "EXPR", "the type of EXPR (dtype and shape), without running it", 1, cmd_type},
  {"explain", "EXPR", "Graph Count, Graph Break Count and the kernels of EXPR's graph", 1, cmd_explain},
  {"ir", "EXPR", "the Graph IR of EXPR", 1, cmd_ir},
  {"time", "EXPR", "how long EXPR takes, eager and compiled", 1, cmd_time},
  {"compiled", "on|off", "evaluate through the compiler (libgccjit) or eagerly", 0, cmd_compiled},
  {"device", "cpu|cuda", "where inputs run: the CPU, or CUDA kernels on an NVIDIA GPU", 0, cmd_device},
  {"load", "FILE", "load the models and functions of a .td file", 0, cmd_load},
  {"reload", NULL, "load the files given to :load again", 0, cmd_reload},
  {"load-weights", "FILE NAME", "load a safetensors state_dict into model instance NAME", 0, cmd_load_weights},
  {"save-weights", "FILE NAME", "write model instance NAME's state_dict to a safetensors file", 0, cmd_save_weights},
  {"quit", NULL, "leave (also Ctrl-D)", 0, cmd_quit},
  {NULL, NULL, NULL, 0, NULL},
};

/* The command named at the start of `s` (after ':'), its length in *len;
 * :q and :exit are :quit. */
static const command *find_command(const char *s, size_t *len) {
  *len = strcspn(s, " \t\r\n");
  const char *name = s;
  size_t n = *len;
  if ((n == 1 && s[0] == 'q') || (n == 4 && !strncmp(s, "exit", 4))) name = "quit", n = 4;
  for (const command *c = commands; c->name; c++)
    if (strlen(c->name) == n && !strncmp(c->name, name, n)) return c;
  return NULL;
}

/* ---- reading inputs ---- */

static void reset_input(repl *r) {
  r->buf.len = 0;
  if (r->buf.s) r->buf.s[0] = 0;
  r->cmd = NULL;
}

/* Runs the input in r->buf (complete, or the last one of a script). */
static void run_input(repl *r) {
  if (r->cmd) r->cmd->run(r, r->buf.s);
  else report(r, td_session_eval(r->s, r->buf.s, r->first_line));
  fflush(stdout);
  reset_input(r);
}

/* Starts a command line ":name args" (colon points at the ':').  Returns
 * 1 when the command takes an input, which the line starts (the session
 * ignores the command word, so messages show the line as typed); 0 when
 * it ran at once or was unknown. */
static int start_command(repl *r, const char *colon) {
  size_t len;
  const command *c = find_command(colon + 1, &len);
  if (!c) {
    char msg[160];
    snprintf(msg, sizeof msg, "unknown command ':%.*s'", (int)(len < 40 ? len : 40), colon + 1);
    usage_error(r, msg, ":help lists the commands");
    return 0;
  }
  if (!c->takes_input) {
    c->run(r, colon + 1 + len);
    return 0;
  }
  r->cmd = c;
  return 1;
}

/* Takes one line (without its '\n'); runs the input once it is complete. */
static void feed_line(repl *r, const char *line) {
  r->line_no++;
  if (r->buf.len == 0 && !r->cmd) {
    const char *p = line + strspn(line, " \t\r");
    if (!*p) return;
    if (*p == ':' && !start_command(r, p)) return;
    r->first_line = r->line_no;
  }
  if (text_add(&r->buf, line, strlen(line)) || text_add(&r->buf, "\n", 1)) {
    usage_error(r, "out of memory", NULL);
    reset_input(r);
    return;
  }
  if (td_session_is_complete(r->s, r->buf.s)) run_input(r);
}

/* Scripted use: statements from a file or pipe, no prompt. */
static void read_stream(repl *r, FILE *in) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while (!r->quit && (n = getline(&line, &cap, in)) >= 0) {
    if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
    feed_line(r, line);
  }
  if (!r->quit && (r->buf.len || r->cmd)) run_input(r); /* reports what is missing */
  free(line);
}

#ifdef HAVE_LIBEDIT

/* ---- completion ---- */

static repl *the_repl;          /* for the completion callbacks */
static char **matches;
static int n_matches, cap_matches;

static void add_match(void *ud, const char *name) {
  (void)ud;
  for (int i = 0; i < n_matches; i++)
    if (!strcmp(matches[i], name)) return;
  if (n_matches == cap_matches) {
    int cap = cap_matches ? 2 * cap_matches : 32;
    char **nm = realloc(matches, (size_t)cap * sizeof *nm);
    if (!nm) return;
    matches = nm;
    cap_matches = cap;
  }
  char *copy = strdup(name);
  if (copy) matches[n_matches++] = copy;
}

static void clear_matches(void) {
  for (int i = 0; i < n_matches; i++) free(matches[i]);
  n_matches = 0;
}

static char *generator(const char *word_text, int state) {
  static int next;
  if (state == 0) {
    clear_matches();
    next = 0;
    if (word_text[0] == ':') {
      char name[64];
      for (const command *c = commands; c->name; c++) {
        snprintf(name, sizeof name, ":%s", c->name);
        if (!strncmp(name, word_text, strlen(word_text))) add_match(NULL, name);
      }
    } else {
      td_session_complete(the_repl->s, word_text, add_match, NULL);
    }
  }
  return next < n_matches ? strdup(matches[next++]) : NULL;
}

static char **attempt_completion(const char *word_text, int start, int end) {
  (void)end;
  const char *line = rl_line_buffer;
  if (line) {
    line += strspn(line, " \t");
    if (!strncmp(line, ":load", 5) && start > 0) return NULL; /* file names */
  }
  rl_attempted_completion_over = 1;
  return rl_completion_matches(word_text, generator);
}

/* ---- history ---- */

static char *history_path(void) {
  const char *state = getenv("XDG_STATE_HOME");
  char *path = NULL;
  if (state && *state) {
    size_t n = strlen(state) + 32;
    char *dir = malloc(n);
    path = malloc(n);
    if (!dir || !path) { free(dir); free(path); return NULL; }
    snprintf(dir, n, "%s/tdsl", state);
    if (mkdir(state, 0700) && errno != EEXIST) { free(dir); free(path); return NULL; }
    if (mkdir(dir, 0700) && errno != EEXIST) { free(dir); free(path); return NULL; }
    snprintf(path, n, "%s/history", dir);
    free(dir);
    return path;
  }
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  size_t n = strlen(home) + 32;
  if ((path = malloc(n))) snprintf(path, n, "%s/.tdsl_history", home);
  return path;
}

static void setup_editing(repl *r) {
  the_repl = r;
  rl_readline_name = "tdsl";
  rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%[])}";
  rl_completer_word_break_characters = (char *)rl_basic_word_break_characters;
  rl_attempted_completion_function = attempt_completion;
  rl_completion_append_character = '\0'; /* a name is usually followed by ( or . */
  using_history();
  stifle_history(1000);
  r->history = history_path();
  struct stat st;   /* editline opens it by path: a FIFO there would block the session's start */
  if (r->history && !stat(r->history, &st) && !S_ISREG(st.st_mode)) {
    free(r->history);
    r->history = NULL;
  }
  if (r->history) read_history(r->history);
}

/* Adds a whole input (its lines joined by newlines) to the history as one
 * entry, so Up recalls all of a multi-line `fn` or `model` at once. */
static void remember(repl *r, text *h) {
  while (h->len && (h->s[h->len - 1] == '\n' || h->s[h->len - 1] == ' ')) h->s[--h->len] = 0;
  if (h->len) {
    add_history(h->s);
    if (r->history) write_history(r->history);
  }
  h->len = 0;
  if (h->s) h->s[0] = 0;
}

/* Interactive use: libedit, prompts, Ctrl-C. */
static void read_terminal(repl *r) {
  setup_editing(r);
  text hist = {0};   /* the lines of the input being typed, for the history */
  while (!r->quit) {
    interrupted = 0;
    int more = r->buf.len > 0 || r->cmd;
    char *line = readline(more ? PROMPT_MORE : PROMPT);
    if (!line) {
      if (!interrupted) break;  /* Ctrl-D */
      if (more) puts("(input abandoned)");
      else putchar('\n');
      reset_input(r);
      remember(r, &hist);       /* an abandoned input can be recalled and fixed */
      continue;
    }
    interrupted = 0;
    /* a recalled entry may hold several lines: each is fed as typed */
    for (char *p = line, *nl; !r->quit; p = nl + 1) {
      nl = strchr(p, '\n');
      if (nl) *nl = 0;
      if (p[strspn(p, " \t")] && (text_add(&hist, p, strlen(p)) || text_add(&hist, "\n", 1))) hist.len = 0;
      feed_line(r, p);
      if (!r->buf.len && !r->cmd) remember(r, &hist);   /* the input ran (or was a command) */
      if (!nl) break;
    }
    free(line);
  }
  remember(r, &hist);
  free(hist.s);
  if (!r->quit) putchar('\n');
  clear_matches();
  free(matches);
}

#else

/* Interactive use without libedit: prompts, no editing or history. */
static void read_terminal(repl *r) {
  char *line = NULL;
  size_t cap = 0;
  while (!r->quit) {
    fputs(r->buf.len || r->cmd ? PROMPT_MORE : PROMPT, stdout);
    fflush(stdout);
    interrupted = 0;
    errno = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
      if (errno == EINTR && interrupted) { clearerr(stdin); putchar('\n'); reset_input(r); continue; }
      break;
    }
    if (n > 0 && line[n - 1] == '\n') line[n - 1] = 0;
    feed_line(r, line);
  }
  if (!r->quit) putchar('\n');
  free(line);
}

#endif

/* ---- the command ---- */

/* Import search path: next to the session (the current directory), then
 * $TDSL_PATH, then the installed and the source tree's stdlib (as `tdsl run`). */
static void add_dir(void *ud, const char *dir) { td_session_add_search_dir(ud, dir); }

static void add_search_dirs(td_session *s) { cli_search_dirs(add_dir, s); }

int td_repl_main(int argc, char **argv) {
  td_session_opts o;
  memset(&o, 0, sizeof o);
  const char *files[64];
  int n_files = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      char *end;
      o.seed = strtoull(argv[++i], &end, 10);
      if (*end || !*argv[i]) {
        fprintf(stderr, "tdsl: --seed needs a non-negative integer, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (argv[i][0] == '-' || n_files == 64) {
      fprintf(stderr, "tdsl: unknown option '%s'\nusage: tdsl repl [FILE.td]... [--seed N]\n", argv[i]);
      return 2;
    } else {
      files[n_files++] = argv[i];
    }
  }
  repl r;
  memset(&r, 0, sizeof r);
  r.interactive = isatty(0);
  r.color = r.interactive && isatty(2) && !getenv("NO_COLOR");
  o.source_name = r.interactive ? "<repl>" : "<stdin>";
  o.on_print = on_print;
  o.on_value = on_value;
  o.interrupt = &interrupted;
  r.s = td_session_new(&o);
  if (!r.s) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    return 1;
  }
  add_search_dirs(r.s);
  for (int i = 0; i < n_files; i++) {
    int rc = td_session_load(r.s, files[i]);
    report(&r, rc);
  }
  if (r.interactive) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: reading a line returns */
    puts("tdsl repl: :help lists the commands, Ctrl-D exits.");
    read_terminal(&r);
  } else {
    read_stream(&r, stdin);
  }
  td_session_free(r.s);
  free(r.buf.s);
  free(r.history);
  return !r.interactive && r.failed ? 1 : 0;
}

/* explain_cmd.c - `tdsl explain FILE`: what the compiler makes of a program.
 *
 *   tdsl explain FILE [--entry NAME] [--json | --dot[=kernels|ops] | --png OUT.png]
 *                     [--size SYM=N]... [--dump=fold,cse,simplify,dce,fused]
 *                     [--device cpu|cuda]
 *
 * For every entry point (or the one named by --entry): Graph Count and
 * Graph Break Count, op counts before and after the passes and after
 * fusion, each kernel with the ops it fuses and their source lines, bytes
 * moved, FLOPs and the peak memory of the plan.  --size binds symbolic
 * sizes to print numbers instead of formulas.  With --device cuda (and
 * neither --json nor --dot) the report is followed, per entry point, by
 * how the GPU launches each kernel (gpu/explain_cuda.c), from the same
 * plans: the program is loaded and lowered once.  --dot writes every op
 * (Graphviz), --dot=kernels one box per kernel; --png renders that graph
 * (the kernel view unless --dot says otherwise) with Graphviz's `dot` into
 * a temporary file beside OUT, renamed to OUT once dot has succeeded.  The
 * work is the driver's (driver/driver.h); this file parses and prints.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/explain_cmd.h"
#include "cli/search.h"

#define MAX_SIZES 32

typedef struct xopts {
  const char *file, *entry;
  const char *png;         /* --png OUT.png */
  int dot_set;             /* --dot or --dot=... was given */
  td_explain_opts eo;
  const char *size_names[MAX_SIZES];
  int64_t size_values[MAX_SIZES];
  unsigned dumps;          /* TD_DUMP_* bits: passes and fused */
  const char *params[MAX_SIZES];   /* --param NAME=VALUE */
  int n_params;
  td_backend device;       /* --device: cpu (the default) or cuda */
} xopts;

static int xusage(const char *fmt, const char *arg) {
  fprintf(stderr, "tdsl: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'tdsl --help' for usage)\n");
  return 2;
}

static int parse_dump(xopts *o, const char *a) {
  for (const char *p = a + 7; *p;) {
    size_t n = strcspn(p, ",");
    unsigned bit = td_dump_stage(p, n);
    if (bit & (TD_DUMP_PASSES | TD_DUMP_FUSED)) o->dumps |= bit;
    else return xusage("unknown --dump stage in '%s' (stages: legalize, fold, cse, simplify, dce, fused)", a);
    p += n + (p[n] == ',');
  }
  return 0;
}

static int parse_size(xopts *o, const char *val) {
  const char *eq = strchr(val, '=');
  char *end;
  if (!eq || eq == val || !eq[1]) return xusage("--size needs SYM=N, got '%s'", val);
  long long v = strtoll(eq + 1, &end, 10);
  if (*end || v < 0) return xusage("--size needs a non-negative integer, got '%s'", val);
  if (o->eo.n_sizes == MAX_SIZES) return xusage("too many %s options", "--size");
  o->size_names[o->eo.n_sizes] = strndup(val, (size_t)(eq - val));
  o->size_values[o->eo.n_sizes++] = v;
  return 0;
}

static int parse_xopts(int argc, char **argv, xopts *o) {
  memset(o, 0, sizeof *o);
  o->device = TD_BACKEND_CPU;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (!strcmp(a, "--json")) o->eo.fmt = TD_EXPLAIN_JSON;
    else if (!strcmp(a, "--dot") || !strcmp(a, "--dot=ops")) o->eo.fmt = TD_EXPLAIN_DOT, o->dot_set = 1;
    else if (!strcmp(a, "--dot=kernels")) o->eo.fmt = TD_EXPLAIN_DOT_KERNELS, o->dot_set = 1;
    else if (!strncmp(a, "--dot=", 6)) return xusage("--dot= takes kernels or ops, got '%s'", a);
    else if (!strcmp(a, "--png")) {
      if (!val || !*val) return xusage("%s needs a file name (--png graph.png)", a);
      o->png = val;
      i++;
    }
    else if (!strncmp(a, "--dump=", 7)) rc = parse_dump(o, a);
    else if (!strcmp(a, "--device")) {
      if (td_backend_parse(val, &o->device))
        return xusage("--device needs cpu or cuda, got '%s'", val ? val : "");
      i++;
    }    else if (!strcmp(a, "--entry") || !strcmp(a, "--size") || !strcmp(a, "--param")) {
      if (!val) return xusage("%s needs a value", a);
      i++;
      if (!strcmp(a, "--entry")) o->entry = val;
      else if (!strcmp(a, "--param")) {
        if (o->n_params == MAX_SIZES) return xusage("too many %s options", a);
        o->params[o->n_params++] = val;
      }
      else rc = parse_size(o, val);
    } else if (a[0] == '-' && a[1]) return xusage("unknown option '%s'", a);
    else if (o->file) return xusage("only one file can be given, found another: '%s'", a);
    else o->file = a;
    if (rc) return rc;
  }
  if (!o->file) return xusage("%s needs a .td file", "explain");
  if (o->png && o->eo.fmt == TD_EXPLAIN_JSON)
    return xusage("%s: --png draws the graph of --dot or --dot=kernels, not --json", "explain");
  if (o->png && !o->dot_set) o->eo.fmt = TD_EXPLAIN_DOT_KERNELS;
  o->eo.size_names = o->size_names;
  o->eo.size_values = o->size_values;
  return 0;
}

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

/* $TDSL_PATH, the installed stdlib and the source tree's stdlib (as run). */
static void search_path(td_program *p) { cli_search_dirs(add_dir, p); }

/* Explains one entry into *plan, writing to out; returns 0 or 1. */
static int explain_entry(const xopts *o, td_diags *d, td_program *p, const char *name, int index,
                         td_plan **plan, FILE *out) {
  td_graph *g = td_program_lower(p, name);
  if (!g) return 1;
  td_drive_opts dopts = td_cli_drive_opts(o->device, o->dumps, d);
  td_err err;
  if (td_drive_explain(g, &dopts, &o->eo, index, out, plan, &err)) {
    fflush(out);
    fprintf(stderr, "tdsl: error: %s: %s\n", name, err.msg);
    return 1;
  }
  return 0;
}

/* After the whole report, what the device adds to each entry's plan. */
static int explain_device(const xopts *o, const char *const *names, td_plan *const *plans, int n) {
  td_drive_opts dopts = td_cli_drive_opts(o->device, 0, NULL);
  td_err err;
  for (int i = 0; i < n; i++)
    if (td_drive_explain_backend(plans[i], &dopts, names[i], stdout, &err)) {
      fprintf(stderr, "tdsl: error: %s\n", err.msg);
      return 1;
    }
  return 0;
}

/* Graphviz's dot: $TDSL_DOT (tests name a stand-in), else `dot` on $PATH;
 * its path in exe, or -1 when there is none. */
static int find_dot(char *exe, size_t n) {
  const char *name = getenv("TDSL_DOT");
  if (!name || !*name) name = "dot";
  if (strchr(name, '/')) {
    snprintf(exe, n, "%s", name);
    return access(exe, X_OK) ? -1 : 0;
  }
  const char *pathv = getenv("PATH");
  for (const char *q = pathv ? pathv : "/usr/bin:/bin"; *q;) {
    size_t l = strcspn(q, ":");
    snprintf(exe, n, "%.*s/%s", (int)l, l ? q : ".", name);
    if (access(exe, X_OK) == 0) return 0;
    q += l + (q[l] == ':');
  }
  return -1;
}

/* --png: dot -Tpng reads the DOT text on a pipe and writes a temporary
 * file beside png, renamed to png when dot exits 0 having written
 * something; anything else removes it, so no partial PNG is ever left. */
static int render_png(const char *text, size_t len, const char *png) {
  char exe[4096];
  if (find_dot(exe, sizeof exe)) {
    fprintf(stderr, "tdsl: error: --png needs Graphviz's `dot` program, which is not installed (no %s on PATH)\n"
            "help: install it: apt-get install graphviz; or write the graph with --dot=kernels > graph.dot "
            "and render it elsewhere\n", getenv("TDSL_DOT") && *getenv("TDSL_DOT") ? getenv("TDSL_DOT") : "dot");
    return 1;
  }
  size_t pl = strlen(png);
  char *tmp = malloc(pl + 16);
  if (!tmp) return fprintf(stderr, "tdsl: error: out of memory\n"), 1;
  snprintf(tmp, pl + 16, "%s.tmp-XXXXXX", png);
  int fd = mkstemp(tmp), pfd[2] = {-1, -1};
  if (fd < 0 || pipe(pfd)) {
    fprintf(stderr, "tdsl: error: --png: cannot write %s: %s\n", fd < 0 ? png : "a pipe to dot", strerror(errno));
    if (fd >= 0) close(fd), unlink(tmp);
    free(tmp);
    return 1;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[0], 0);
    dup2(fd, 1);
    close(pfd[0]);
    close(pfd[1]);
    close(fd);
    execl(exe, "dot", "-Tpng", (char *)NULL);
    fprintf(stderr, "tdsl: error: cannot run %s: %s\n", exe, strerror(errno));
    _exit(127);
  }
  close(pfd[0]);
  close(fd);
  int rc = 1, st = 0;
  if (pid < 0) {
    fprintf(stderr, "tdsl: error: --png: cannot start %s: %s\n", exe, strerror(errno));
    close(pfd[1]);
  } else {
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old);   /* dot may stop reading: EPIPE, not death */
    for (size_t w = 0; w < len;) {
      ssize_t r = write(pfd[1], text + w, len - w);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      w += (size_t)r;
    }
    close(pfd[1]);
    sigaction(SIGPIPE, &old, NULL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    struct stat sb;
    if (!WIFEXITED(st) || WEXITSTATUS(st))
      fprintf(stderr, "tdsl: error: --png: %s failed (%s %d); %s was not written\n", exe,
              WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), png);
    else if (stat(tmp, &sb) || sb.st_size == 0)
      fprintf(stderr, "tdsl: error: --png: %s wrote nothing; %s was not written\n", exe, png);
    else if (rename(tmp, png))
      fprintf(stderr, "tdsl: error: --png: cannot write %s: %s\n", png, strerror(errno));
    else
      rc = 0;
  }
  if (rc) unlink(tmp);
  free(tmp);
  return rc;
}

int td_cli_explain(int argc, char **argv) {
  xopts o;
  int rc = parse_xopts(argc, argv, &o);
  if (rc) return rc;
  o.eo.diags = NULL;
  td_arena *arena = td_arena_new();
  td_diags d;
  td_diags_init(&d, arena);
  td_program *p = td_program_new(arena, &d);
  if (!p) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    rc = 1;
  }
  o.eo.diags = &d;
  if (p) search_path(p);
  int color = isatty(2) && !getenv("NO_COLOR");
  char *dot_text = NULL;   /* --png: the DOT text, in memory */
  size_t dot_len = 0;
  FILE *out = stdout;
  if (o.png && !(out = open_memstream(&dot_text, &dot_len))) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    out = stdout;
    rc = 1;
  }
  const char **names = NULL;
  td_plan **plans = NULL;
  int n = 0;
  if (p && td_program_load_file(p, o.file) == 0 &&
      (cli_model_args(p, o.params, o.n_params, o.entry, &o.entry) || td_program_check_model_args(p)))
    rc = 1;
  else if (p && !d.n_errors && !rc) {
    n = td_program_entries(p, &names);
    if (o.entry) { names = &o.entry; n = 1; }
    plans = td_arena_alloc(arena, (size_t)(n + 1) * sizeof *plans);
    if (!plans) {
      fprintf(stderr, "tdsl: error: out of memory\n");
      rc = 1;
      n = 0;
    }
    td_explain_begin(&o.eo, out);
    for (int i = 0, shown = 0; i < n; i++)
      if (explain_entry(&o, &d, p, names[i], shown, &plans[i], out) == 0) shown++;
      else rc = 1;
    td_explain_end(&o.eo, out);
  }
  if (out != stdout && fclose(out)) {   /* the memstream: out of memory */
    fprintf(stderr, "tdsl: error: out of memory\n");
    rc = 1;
  }
  fflush(stdout);
  td_diag_render(&d, stderr, color);
  if (d.n_errors) rc = 1;
  if (rc == 0 && o.eo.fmt == TD_EXPLAIN_TEXT) rc = explain_device(&o, names, plans, n);
  if (rc == 0 && o.png) rc = render_png(dot_text, dot_len, o.png);
  free(dot_text);
  for (int i = 0; i < o.eo.n_sizes; i++) free((void *)o.size_names[i]);
  td_arena_free(arena);
  return rc;
}

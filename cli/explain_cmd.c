/* explain_cmd.c - `tdsl explain FILE`: what the compiler makes of a program.
 *
 *   tdsl explain FILE [--entry NAME] [--json | --dot] [--size SYM=N]...
 *                     [--dump=fold,cse,simplify,dce,fused]
 *
 * For every entry point (or the one named by --entry): Graph Count and
 * Graph Break Count, op counts before and after the passes and after
 * fusion, each kernel with the ops it fuses and their source lines, bytes
 * moved, FLOPs and the peak memory of the plan.  --size binds symbolic
 * sizes to print numbers instead of formulas.  Kept apart from main.c so
 * the command can grow without touching the other commands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/explain.h"
#include "compiler/passes.h"
#include "compiler/plan.h"
#include "lang/elab.h"
#include "cli/explain_cmd.h"
#include "cli/search.h"

#define MAX_SIZES 32

typedef struct xopts {
  const char *file, *entry;
  td_explain_opts eo;
  const char *size_names[MAX_SIZES];
  int64_t size_values[MAX_SIZES];
  unsigned dump_mask;
  int dump_fused;
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
    int bit = td_pass_index(p, n);
    if (bit >= 0) o->dump_mask |= 1u << bit;
    else if (n == 5 && !strncmp(p, "fused", 5)) o->dump_fused = 1;
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
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (!strcmp(a, "--json")) o->eo.fmt = TD_EXPLAIN_JSON;
    else if (!strcmp(a, "--dot")) o->eo.fmt = TD_EXPLAIN_DOT;
    else if (!strncmp(a, "--dump=", 7)) rc = parse_dump(o, a);
    else if (!strcmp(a, "--entry") || !strcmp(a, "--size")) {
      if (!val) return xusage("%s needs a value", a);
      i++;
      if (!strcmp(a, "--entry")) o->entry = val;
      else rc = parse_size(o, val);
    } else if (a[0] == '-' && a[1]) return xusage("unknown option '%s'", a);
    else if (o->file) return xusage("only one file can be given, found another: '%s'", a);
    else o->file = a;
    if (rc) return rc;
  }
  if (!o->file) return xusage("%s needs a .td file", "explain");
  o->eo.size_names = o->size_names;
  o->eo.size_values = o->size_values;
  return 0;
}

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

/* $TDSL_PATH, the installed stdlib and the source tree's stdlib (as run). */
static void search_path(td_program *p) { cli_search_dirs(add_dir, p); }

static void dump_pass(void *ud, const char *pass, const td_graph *g) {
  printf("# after %s\n", pass);
  td_graph_print(g, ud, stdout);
}

/* Optimises, plans and explains one entry; returns 0 or 1. */
static int explain_entry(const xopts *o, td_diags *d, td_program *p, const char *name, int index) {
  td_graph *g = td_program_lower(p, name), *opt;
  if (!g) return 1;
  td_opt_opts oo = {dump_pass, d, o->dump_mask};
  td_opt_stats st;
  td_err err;
  td_plan *plan = NULL;
  if (td_optimize(g, &oo, &opt, &st, &err) || !(plan = td_plan_build(opt, &err))) {
    fflush(stdout);
    fprintf(stderr, "tdsl: error: %s: %s\n", name, err.msg);
    return 1;
  }
  if (o->dump_fused) td_plan_print(plan, d, stdout);
  td_explain(plan, &st, &o->eo, index, stdout);
  return 0;
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
  if (p && td_program_load_file(p, o.file) == 0) {
    const char **names;
    int n = td_program_entries(p, &names), shown = 0;
    if (o.entry) { names = &o.entry; n = 1; }
    td_explain_begin(&o.eo, stdout);
    for (int i = 0; i < n; i++)
      if (explain_entry(&o, &d, p, names[i], shown) == 0) shown++;
      else rc = 1;
    td_explain_end(&o.eo, stdout);
  }
  fflush(stdout);
  td_diag_render(&d, stderr, color);
  if (d.n_errors) rc = 1;
  for (int i = 0; i < o.eo.n_sizes; i++) free((void *)o.size_names[i]);
  td_arena_free(arena);
  return rc;
}

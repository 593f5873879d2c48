/* main.c - the `tdsl` command line.
 *
 *   tdsl run FILE [options]     run main, or an entry point on .npy inputs
 *   tdsl check FILE             type- and shape-check every entry point
 *   tdsl explain FILE           kernels the compiler makes (cli/explain_cmd.c)
 *   tdsl build FILE -o DIR      a shared library + C header (cli/build_cmd.c)
 *   tdsl train FILE             the training loop over a model's step (cli/train.c)
 *   tdsl repl [FILE]            interactive eager session (cli/repl.c); also
 *                               `tdsl` alone when stdin is a terminal
 *   tdsl --help | --version
 *
 * This is the only place that prints diagnostics and chooses exit codes:
 * 0 success, 1 the program or its inputs are wrong, 2 bad command line.
 * Output files are written completely or not at all (runtime/io.c writes a
 * temporary file and renames it).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/driver.h"
#include "lang/elab.h"
#include "runtime/mem.h"
#include "runtime/io.h"
#include "runtime/phase_time.h"
#include "runtime/weights.h"
#include "cli/search.h"
#include "cli/build_cmd.h"
#include "cli/explain_cmd.h"
#include "cli/repl.h"
#include "cli/train.h"

#ifndef TDSL_VERSION
#define TDSL_VERSION "0.1.0"
#endif

typedef struct opts {
  const char *cmd, *file, *entry, *weights, *save_weights;
  /* --in and --out, as many as the command line has (argc bounds them) */
  const char **in_name, **in_path;
  int n_in;
  const char **out;
  int n_out;
  const char **param;      /* --param NAME=VALUE, as many as given */
  int n_param;
  int trace, check_numerics, dump_ast, dump_ir, color;
  int compiled;            /* --compiled: through the CPU compiler */
  unsigned dumps;          /* --dump= stages after the IR (driver.h's TD_DUMP_*) */
  int cuda, cuda_graph;    /* --device cuda, --cuda-graph */
  uint64_t seed;
  td_weights_opts wopts;   /* --weights-prefix, --weights-strict, --weights-convert */
} opts;

static void usage(FILE *f) {
  fputs("usage: tdsl run FILE [--entry NAME] [--in ARG=FILE.npy]... [--weights W.safetensors]\n"
        "                     [--weights-prefix FROM=TO] [--weights-strict=false] [--weights-convert]\n"
        "                     [--out FILE.npy]... [--save-weights W.safetensors] [--seed N]\n"
        "                     [--trace] [--check-numerics] [--compiled [--no-cache]] [--dump=STAGES]\n"
        "                     [--device cpu|cuda] [--cuda-graph]\n"
        "                     [--param NAME=VALUE]...\n"
        "       tdsl check FILE [--dump=ast,ir] [--param NAME=VALUE]...\n"
        "       tdsl build FILE -o DIR [--exe] [--name PREFIX] [--seed N] [--embed-weights]\n"
        "                              [--entry M.f]... [--param NAME=VALUE]...\n"
        "                              [--device cpu|cuda [--arch sm_XY]]\n"
        "       tdsl explain FILE [--entry NAME] [--json | --dot[=kernels] | --png OUT.png]\n"
        "                         [--size SYM=N]... [--device cuda]\n"
        "                         [--param NAME=VALUE]...\n"
        "                         [--dump=fold,cse,simplify,dce,fused]\n"
        "       tdsl train FILE.td (--train IMAGES,LABELS [--test IMAGES,LABELS] | --dataset fashion-mnist)\n"
        "                          [--epochs E] [--batch B] [--checkpoint F] [--resume F] ... (tdsl train --help)\n"
        "       tdsl repl [FILE.td]... [--seed N]\n"
        "       tdsl --help | --version\n"
        "\n"
        "run     runs fn main() of FILE, or with --entry an entry point (\"Model.method\" or \"fn\")\n"
        "        on inputs from .npy files; outputs go to --out files in order, or are printed\n"
        "check   type- and shape-checks every entry point of FILE without running anything\n"
        "build   compiles every entry point (or each --entry) into DIR/PREFIX.so with a C header\n"
        "        DIR/PREFIX.h (and with --exe an executable reading .npy inputs); see docs/compiler.md;\n"
        "        PREFIX_create() initialises the parameters as `tdsl run --seed N` does, and\n"
        "        --embed-weights stores those initial values in the library instead;\n"
        "        --device cuda embeds NVRTC-compiled kernels (cubin + PTX), see docs/gpu.md\n"
        "explain prints, per entry point, the kernels the compiler fuses its ops into, with\n"
        "        source lines, bytes moved, FLOPs and peak memory (--size N=8 evaluates sizes)\n"
        "train   trains a model: runs its step(x, y) over the batches of a data set for some epochs,\n"
        "        evaluates it, logs, checkpoints and resumes (docs/training.md)\n"
        "repl    an interactive eager session (the default when stdin is a terminal); it reads\n"
        "        statements from stdin when that is not a terminal (docs/repl.md)\n"
        "\n"
        "--param NAME=VALUE give a parameter of the entry's model (model Net(T: int = 8)): --param T=5\n"
        "                   makes Net(T = 5); also --entry 'Net(T=5).forward' (run, check, explain, build)\n"
        "--trace            print every op as it runs: location, op, shape, dtype, min/max/mean\n"
        "--check-numerics   stop at the first op that produces NaN or Inf and name its source line\n"
        "--weights W        load the parameters from a safetensors file (names: PyTorch's state_dict);\n"
        "                   --weights-prefix FROM=TO reads a name starting with FROM as TO + the rest\n"
        "                   (model.= strips 'model.'), --weights-strict=false loads what matches and\n"
        "                   keeps the initial values of the rest (one note lists both), --weights-convert\n"
        "                   converts f64/f16/bf16 weights of f32 parameters (f64 rounded to nearest even)\n"
        "--save-weights W   after the run, write the parameters (loaded or initialised, then updated by\n"
        "                   the entry's assigns) to a safetensors file\n"
        "--seed N           seed for rand/randn without seed= and for parameter initialisation (default 0)\n"
        "--compiled         compile the graph (fusion, libgccjit) and run the native code\n"
        "--no-cache         compile afresh instead of using the compile cache (~/.cache/tdsl,\n"
        "                   at most TDSL_CACHE_MAX_MB MiB, default 1024)\n"
        "--device cuda      compile the graph to CUDA kernels and run them on the GPU (docs/gpu.md);\n"
        "                   --cuda-graph launches them as one CUDA Graph, --dump=cuda prints them\n"
        "--dump=ast,ir      print the syntax tree and/or the Graph IR of each entry point\n"
        "                   with --compiled also fold, cse, simplify, dce (the graph after a\n"
        "                   pass), fused (the kernel plan), c (the kernels as C-like code)\n"
        "\n"
        "Imports are searched next to FILE, then in $TDSL_PATH (colon-separated), then in the stdlib.\n", f);
}

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "tdsl: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'tdsl --help' for usage)\n");
  return 2;
}

static int parse_opts(int argc, char **argv, opts *o) {
  memset(o, 0, sizeof *o);
  o->cmd = argv[1];
  o->in_name = td_calloc((size_t)argc, sizeof *o->in_name);
  o->in_path = td_calloc((size_t)argc, sizeof *o->in_path);
  o->out = td_calloc((size_t)argc, sizeof *o->out);
  o->param = td_calloc((size_t)argc, sizeof *o->param);
  if (!o->in_name || !o->in_path || !o->out || !o->param) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--trace")) o->trace = 1;
    else if (!strcmp(a, "--check-numerics")) o->check_numerics = 1;
    else if (!strcmp(a, "--compiled")) o->compiled = 1;
    else if (!strcmp(a, "--no-cache")) setenv("TDSL_CACHE", "0", 1); /* compiled.c reads it */
    else if (!strcmp(a, "--cuda-graph")) o->cuda_graph = 1;
    else if (!strcmp(a, "--weights-convert")) o->wopts.convert = 1;
    else if (!strncmp(a, "--weights-strict=", 17)) {
      if (!strcmp(a + 17, "false")) o->wopts.lenient = 1;
      else if (!strcmp(a + 17, "true")) o->wopts.lenient = 0;
      else return bad_usage("--weights-strict needs true or false, got '%s'", a + 17);
    } else if (!strcmp(a, "--weights-prefix")) {
      if (!td_weights_prefix_ok(val))
        return bad_usage("--weights-prefix needs FROM=TO (model.= strips 'model.'), got '%s'", val ? val : "nothing");
      o->wopts.prefix = val;
      i++;
    }
    else if (!strcmp(a, "--device")) {
      td_backend b;
      if (td_backend_parse(val, &b)) return bad_usage("--device needs cpu or cuda, got '%s'", val ? val : "nothing");
      o->cuda = b == TD_BACKEND_CUDA;
      i++;
    }
    else if (!strncmp(a, "--dump=", 7)) {
      const char *d = a + 7;
      for (const char *p = d; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 3 && !strncmp(p, "ast", 3)) o->dump_ast = 1;
        else if (n == 2 && !strncmp(p, "ir", 2)) o->dump_ir = 1;
        else if (td_dump_stage(p, n)) o->dumps |= td_dump_stage(p, n);
        else return bad_usage("unknown --dump stage in '%s' (stages: ast, ir, fold, cse, simplify, dce, fused, c, cuda)", a);
        p += n + (p[n] == ',');
      }
    } else if (!strcmp(a, "--param")) {
      if (!val || !strchr(val, '=') || val[0] == '=') return bad_usage("--param needs NAME=VALUE (a model parameter), got '%s'", val ? val : "nothing");
      o->param[o->n_param++] = val;
      i++;
    } else if (!strcmp(a, "--entry") || !strcmp(a, "--in") || !strcmp(a, "--weights") || !strcmp(a, "--save-weights") ||
               !strcmp(a, "--out") || !strcmp(a, "--seed")) {
      if (!val) return bad_usage("%s needs a value", a);
      i++;
      if (!strcmp(a, "--entry")) o->entry = val;
      else if (!strcmp(a, "--weights")) o->weights = val;
      else if (!strcmp(a, "--save-weights")) o->save_weights = val;
      else if (!strcmp(a, "--seed")) {
        char *end;
        o->seed = strtoull(val, &end, 10);
        if (*end || !*val) return bad_usage("--seed needs a non-negative integer, got '%s'", val);
      } else if (!strcmp(a, "--out")) {
        o->out[o->n_out++] = val;
      } else {
        const char *eq = strchr(val, '=');
        if (!eq || eq == val || !eq[1]) return bad_usage("--in needs NAME=FILE.npy, got '%s'", val);
        char *name = td_malloc((size_t)(eq - val) + 1);
        if (!name) {
          fprintf(stderr, "tdsl: error: out of memory\n");
          return 1;
        }
        memcpy(name, val, (size_t)(eq - val));
        name[eq - val] = 0;
        o->in_name[o->n_in] = name;
        o->in_path[o->n_in++] = eq + 1;
      }
    } else if (a[0] == '-' && a[1]) return bad_usage("unknown option '%s'", a);
    else if (o->file) return bad_usage("only one file can be given, found another: '%s'", a);
    else o->file = a;
  }
  if (!o->file) return bad_usage("%s needs a .td file", o->cmd);
  if (!o->weights && (o->wopts.prefix || o->wopts.lenient || o->wopts.convert))
    return bad_usage("%s", "--weights-prefix, --weights-strict and --weights-convert go with --weights FILE");
  return 0;
}

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

/* Adds $TDSL_PATH, the installed stdlib and the source tree's stdlib. */
static void add_search_path(td_program *p) { cli_search_dirs(add_dir, p); }

static void on_print(void *ud, const char *text) {
  (void)ud;
  fputs(text, stdout);
  fflush(stdout);
}

static void on_trace(void *ud, const char *line) {
  (void)ud;
  fputs(line, stderr);
}

static const char *span_loc(const td_diags *d, td_span sp, char *buf, size_t n) {
  const td_source *s = td_diags_source(d, sp.file);
  if (!s) snprintf(buf, n, "tdsl");
  else snprintf(buf, n, "%s:%d:%d", s->path, sp.line, sp.col);
  return buf;
}

/* Opens the --in files of g's arguments (files[k] for argument k) and
 * checks them from their headers alone (runtime/sig.c), so a wrong file is
 * refused before its data is read.  -1 after the messages. */
static int open_inputs(const opts *o, const td_graph *g, const int *pos, int n_args, td_npy_file *files) {
  td_sig_arg *args = td_calloc((size_t)g->n_inputs + 1, sizeof *args);
  int64_t *symvals = td_calloc((size_t)g->n_syms + 1, sizeof *symvals);
  td_err err;
  int rc = -1;
  if (!args || !symvals) {
    fprintf(stderr, "tdsl: error: out of memory\n");
  } else {
    for (int k = 0; k < n_args; k++) args[k] = td_node_sig(&g->nodes[g->inputs[pos[k]]]);
    td_sizes s = td_graph_sizes(g);
    rc = td_sig_open_inputs(&s, g->name, args, n_args, o->in_name, o->in_path, o->n_in, files, symvals, &err);
    if (rc) td_sig_print_errors(stderr, "tdsl", err.msg);
  }
  td_free(args);
  td_free(symvals);
  return rc;
}

/* Opens --weights and matches its header to g's parameters (src[k]: the
 * entry of parameter k, runtime/weights.h; with --weights-strict=false a
 * note says what was ignored and what is missing). */
static int open_weights(const opts *o, const td_graph *g, td_st_file *f, int *src) {
  td_err err;
  if (td_safetensors_open(o->weights, f, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    return -1;
  }
  td_sig_arg *p = td_calloc((size_t)g->n_params + 1, sizeof *p);
  char *note = NULL;
  int rc = -1;
  if (!p) td_err_set(&err, "out of memory");
  else {
    /* the same checks as td_make_params (lang/params.c), with the options */
    for (int k = 0; k < g->n_params; k++) p[k] = td_node_sig(&g->nodes[g->params[k]]);
    rc = td_weights_match(o->weights, g->name, p, g->n_params, f, &o->wopts, src, &note, &err);
  }
  td_free(p);
  if (rc) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    td_safetensors_close(f);
    return -1;
  }
  if (note) fprintf(stderr, "tdsl: note: %s\n", note);
  td_free(note);
  return 0;
}

/* The parameters' tensors from the open weights file (converted), under
 * their names, into w. */
static int read_weights(const td_graph *g, const td_st_file *f, const int *src, td_tensor_map *w, td_err *err) {
  for (int k = 0; k < g->n_params; k++) {
    const td_node *n = &g->nodes[g->params[k]];
    if (src[k] < 0 || td_tensor_map_get(w, n->name)) continue;
    td_tensor *t = td_weights_load(f, src[k], n->dtype, err);
    if (!t) return -1;
    int rc = td_tensor_map_put(w, n->name, t, err);
    td_tensor_release(t);
    if (rc) return -1;
  }
  return 0;
}

/* The data of the graph's load()s (lang/builtins_io.c) into their inputs. */
static int read_loads(const td_program *p, const td_diags *d, const td_graph *g, td_tensor **inputs) {
  const td_host_file *ld;
  int n = td_program_loads(p, &ld);
  for (int j = 0; j < n; j++) {
    td_err err;
    const td_node *x = &g->nodes[ld[j].node];
    if (!(inputs[x->attr.i] = td_host_read(&ld[j], x, &err))) {
      char loc[512];
      fprintf(stderr, "%s: error: %s\n", span_loc(d, ld[j].span, loc, sizeof loc), err.msg);
      return -1;
    }
  }
  return 0;
}

/* Every header first (inputs, then weights), then the data: nothing is
 * read before all the files are known to fit.  The arguments are the
 * inputs that are not load()s. */
static int load_files(const opts *o, const td_program *p, const td_graph *g, td_tensor **inputs, td_tensor_map *w) {
  td_npy_file *files = td_calloc((size_t)g->n_inputs + 1, sizeof *files);
  td_tensor **args = td_calloc((size_t)g->n_inputs + 1, sizeof *args);
  int *pos = td_calloc((size_t)g->n_inputs + 1, sizeof *pos);
  int *src = td_calloc((size_t)g->n_params + 1, sizeof *src);
  td_st_file st;
  td_err err;
  int rc = -1;
  if (!files || !args || !pos || !src) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    td_free(files);
    td_free(args);
    td_free(pos);
    td_free(src);
    return -1;
  }
  int n_args = td_program_arg_inputs(p, g, pos);
  if (open_inputs(o, g, pos, n_args, files) == 0) {
    if (!o->weights || open_weights(o, g, &st, src) == 0) {
      rc = td_sig_load_inputs(files, n_args, args, &err);
      if (rc == 0 && o->weights) rc = read_weights(g, &st, src, w, &err);
      if (rc) fprintf(stderr, "tdsl: error: %s\n", err.msg);
      if (o->weights) td_safetensors_close(&st);
    }
    td_sig_close_inputs(files, n_args);
  }
  for (int k = 0; k < n_args; k++) inputs[pos[k]] = args[k];
  if (rc == 0) rc = read_loads(p, td_program_diags(p), g, inputs);
  td_free(files);
  td_free(args);
  td_free(pos);
  td_free(src);
  return rc;
}

/* Makes the values of the graph's save()s outputs after its own (n_outs). */
static int add_save_outputs(const td_program *p, td_graph *g) {
  const td_host_file *sv;
  int n = td_program_saves(p, &sv);
  for (int j = 0; j < n; j++)
    if (td_graph_add_output(g, sv[j].node)) {
      fprintf(stderr, "tdsl: error: out of memory\n");
      return -1;
    }
  return 0;
}

/* Writes the save()s' files from their outputs, in program order. */
static int write_saves(const td_program *p, const td_diags *d, td_tensor **outs) {
  const td_host_file *sv;
  int n = td_program_saves(p, &sv);
  for (int j = 0; j < n; j++) {
    td_err err;
    if (td_host_write(&sv[j], outs[j], &err)) {
      char loc[512];
      fprintf(stderr, "%s: error: %s\n", span_loc(d, sv[j].span, loc, sizeof loc), err.msg);
      return -1;
    }
  }
  return 0;
}

static int write_outputs(const opts *o, const td_graph *g, int n_outs, td_tensor **outs) {
  if (o->n_out && o->n_out != n_outs) {
    fprintf(stderr, "tdsl: error: %s returns %d value%s but %d --out file%s given\n", g->name, n_outs,
            n_outs == 1 ? "" : "s", o->n_out, o->n_out == 1 ? " was" : "s were");
    return -1;
  }
  for (int i = 0; i < n_outs; i++) {
    if (o->n_out) {
      td_err err;
      if (td_npy_write(o->out[i], outs[i], &err)) {
        fprintf(stderr, "tdsl: error: %s\n", err.msg);
        return -1;
      }
      continue;
    }
    char *text = td_tensor_format(outs[i], 1000);
    char t[256];
    if (!text) {
      fflush(stdout);
      fprintf(stderr, "tdsl: error: out of memory\n");
      return -1;
    }
    if (n_outs > 1) printf("output %d: ", i);
    printf("%s\n%s\n", td_shape_str(outs[i]->dtype, outs[i]->rank, outs[i]->shape, t, sizeof t), text);
    td_free(text);
  }
  return 0;
}

/* Writes the graph's parameters, named by their state_dict paths. */
static int save_params(const char *path, const td_graph *g, td_tensor **params) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err err;
  int rc = 0;
  for (int i = 0; i < g->n_params && !rc; i++) {
    const char *name = g->nodes[g->params[i]].name;
    if (td_tensor_map_get(&m, name)) continue; /* the same weight reached twice */
    rc = td_tensor_map_put(&m, name, params[i], &err);
  }
  if (!rc) rc = td_safetensors_write(path, &m, &err);
  if (rc) fprintf(stderr, "tdsl: error: %s\n", err.msg);
  td_tensor_map_free(&m);
  return rc;
}

/* Runs one graph on the chosen backend; returns the exit code. */
static int run_graph(const opts *o, td_diags *d, const td_program *p, td_graph *g) {
  int n_outs = g->n_outputs;   /* the entry's results; the save()s' values follow */
  if (add_save_outputs(p, g)) return 1;
  td_tensor **inputs = td_calloc((size_t)g->n_inputs + 1, sizeof *inputs);
  td_tensor **params = td_calloc((size_t)g->n_params + 1, sizeof *params);
  td_tensor **outs = NULL;
  td_tensor_map w;
  td_tensor_map_init(&w);
  int rc = 1;
  td_err err;
  td_span sp = {-1, 0, 0, 0, 0};
  if (!inputs || !params) { fprintf(stderr, "tdsl: error: out of memory\n"); goto done; }
  if (load_files(o, p, g, inputs, &w)) goto done;
  /* the weights fit: open_weights checked them; what fails here is memory.
   * Not strict, the parameters the file lacks keep their initial values. */
  if (td_make_params(g, o->weights && !o->wopts.lenient ? &w : NULL, o->seed, params, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    goto done;
  }
  for (int k = 0; o->weights && o->wopts.lenient && k < g->n_params; k++) {
    td_tensor *t = td_tensor_map_get(&w, g->nodes[g->params[k]].name);
    if (!t) continue;
    td_tensor_release(params[k]);
    params[k] = td_tensor_retain(t);
  }
  td_run_opts io;
  memset(&io, 0, sizeof io);
  io.on_print = on_print;
  io.on_trace = on_trace;
  io.trace = o->trace;
  io.check_numerics = o->check_numerics;
  io.print_threshold = 1000;
  io.diags = d;
  td_drive_opts dopts = td_cli_drive_opts(td_cli_backend(o->cuda, o->compiled), o->dumps, d);
  dopts.cuda_graph = o->cuda_graph;
  if (td_drive_run(g, &dopts, inputs, params, &io, &outs, &err, &sp)) {
    char loc[512];
    fflush(stdout);
    fprintf(stderr, "%s: error: %s\n", span_loc(d, sp, loc, sizeof loc), err.msg);
    goto done;
  }
  rc = write_outputs(o, g, n_outs, outs) || write_saves(p, d, outs + n_outs) ? 1 : 0;
  /* after the run: a step's assigns have updated the parameters */
  if (rc == 0 && o->save_weights && save_params(o->save_weights, g, params)) rc = 1;
done:
  for (int i = 0; i < g->n_inputs; i++) td_tensor_release(inputs ? inputs[i] : NULL);
  for (int i = 0; i < g->n_params; i++) td_tensor_release(params ? params[i] : NULL);
  if (outs) {
    for (int i = 0; i < g->n_outputs; i++) td_tensor_release(outs[i]);
    td_free(outs);
  }
  td_free(inputs);
  td_free(params);
  td_tensor_map_free(&w);
  return rc;
}

static int finish(td_diags *d, int color) {
  td_diag_render(d, stderr, color);
  return d->n_errors ? 1 : 0;
}

/* TDSL_TEST_FAIL_ALLOC, for tests only (tests/alloc_fail.sh): K (1, 2, ...)
 * makes allocation K of tdsl's own (runtime/mem.c) and every later one fail;
 * `count` fails none and prints "tdsl: N allocations" on stderr at exit. */
static void report_allocs(void) { fprintf(stderr, "tdsl: %ld allocations\n", td_mem_requests()); }

static void test_fail_alloc(void) {
  const char *s = getenv("TDSL_TEST_FAIL_ALLOC");
  char *end;
  if (!s || !*s) return;
  if (!strcmp(s, "count")) {
    td_mem_fail_after(LONG_MAX);
    atexit(report_allocs);
    return;
  }
  long k = strtol(s, &end, 10);
  if (k > 0 && !*end) td_mem_fail_after(k);
}

int main(int argc, char **argv) {
  test_fail_alloc();
  if ((argc < 2 && isatty(0)) || (argc >= 2 && !strcmp(argv[1], "repl")))
    return td_repl_main(argc, argv);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("tdsl %s\n", TDSL_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "explain")) return td_cli_explain(argc, argv);
  if (!strcmp(argv[1], "build")) return td_cli_build(argc, argv);
  if (!strcmp(argv[1], "train")) return td_cli_train(argc, argv);
  if (strcmp(argv[1], "run") && strcmp(argv[1], "check"))
    return bad_usage("unknown command '%s' (commands: run, check, build, explain, train, repl)", argv[1]);
  opts o;
  td_arena *arena = NULL;
  int rc = parse_opts(argc, argv, &o);
  if (rc) goto out;
  o.color = isatty(2) && !getenv("NO_COLOR");
  arena = td_arena_new();
  td_diags d;
  td_diags_init(&d, arena);
  td_program *p = td_program_new(arena, &d);
  if (!p) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    rc = 1;
    goto out;
  }
  td_program_set_seed(p, o.seed);
  td_program_allow_files(p, 1);   /* load() and save(): run_graph reads and writes them */
  add_search_path(p);
  double t0 = td_now();
  if (td_program_load_file(p, o.file)) {
    rc = finish(&d, o.color);
    goto out;
  }
  td_phase_done("front end (parse, elaborate)", t0, o.file);
  const char *entry = "main";
  if (!strcmp(o.cmd, "run") && !o.entry && o.n_param) {
    fprintf(stderr, "tdsl: error: --param gives the parameters of the model of an --entry (Net.forward); "
            "fn main makes its models itself\nhelp: write them where main makes the model: Net(T = 5)\n");
    rc = 2;
    goto out;
  }
  if (cli_model_args(p, o.param, o.n_param, o.entry, &entry) || td_program_check_model_args(p)) {
    rc = finish(&d, o.color);
    if (!rc) rc = 1;
    goto out;
  }
  if (o.dump_ast) td_program_dump_ast(p, stdout);
  if (!strcmp(o.cmd, "check")) {
    const char **names;
    int n = td_program_entries(p, &names);
    for (int i = 0; i < n; i++) {
      td_graph *g = td_program_lower(p, names[i]);
      if (g && o.dump_ir) td_graph_print(g, &d, stdout);
    }
    rc = finish(&d, o.color);
    goto out;
  }
  t0 = td_now();
  td_graph *g = td_program_lower(p, entry);
  if (g) td_phase_done("lowering to the graph", t0, entry);
  if (!g) {
    if (!o.entry && !d.n_errors) fprintf(stderr, "tdsl: error: %s has no fn main()\n", o.file);
    rc = finish(&d, o.color);
    if (!rc) rc = 1;
    goto out;
  }
  td_diag_render(&d, stderr, o.color); /* warnings */
  if (o.dump_ir) td_graph_print(g, &d, stdout);
  rc = run_graph(&o, &d, p, g);
out:
  for (int i = 0; i < o.n_in; i++) td_free((void *)o.in_name[i]);
  td_free(o.in_name);
  td_free(o.in_path);
  td_free(o.out);
  td_free(o.param);
  td_arena_free(arena);
  return rc;
}

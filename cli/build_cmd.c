/* build_cmd.c - `tdsl build FILE -o DIR [--exe] [--name PREFIX] [--seed N]
 * [--embed-weights] [--device cpu|cuda] [--arch sm_XY]`.
 *
 * Loads FILE and writes the artifact of its entry points (the driver's
 * td_drive_build, over compiler/build.h and gpu/build_cuda.h) into DIR: PREFIX.so, PREFIX.h and with --exe the executable PREFIX.
 * PREFIX defaults to FILE's base name made a C identifier.  The library
 * makes the seed's initial parameters when it is created (from their
 * recipes); --embed-weights stores them in it instead.  The artifact
 * runtime libtdsl_rt.a is found through $TDSL_RT_LIB, else the build tree,
 * else the installed copy.  --device cuda builds the CUDA artifact
 * (gpu/build_cuda.h) for --arch, by default the GPU's architecture when
 * there is one, else sm_90 (said on stderr).
 */
#include "cli/build_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/driver.h"
#include "gpu/build_cuda.h"
#include "runtime/mem.h"
#include "cli/explain_cmd.h"
#include "cli/search.h"

static int busage(const char *msg, const char *arg) {
  fprintf(stderr, "tdsl: ");
  fprintf(stderr, msg, arg);
  fprintf(stderr, "\nusage: tdsl build FILE -o DIR [--exe] [--name PREFIX] [--seed N] [--embed-weights]\n"
                  "       [--march ARCH] [--device cpu|cuda] [--arch sm_XY]\n");
  return 2;
}

static const char *rt_lib(void) {
  const char *env = getenv("TDSL_RT_LIB");
  if (env && *env) return env;
#ifdef TDSL_RT_LIB_BUILD
  if (!access(TDSL_RT_LIB_BUILD, R_OK)) return TDSL_RT_LIB_BUILD;
#endif
#ifdef TDSL_RT_LIB_INSTALL
  return TDSL_RT_LIB_INSTALL;
#else
  return "libtdsl_rt.a";
#endif
}

/* "examples/seed/simple.td" -> "simple" (letters, digits, _; lower case). */
static void default_prefix(const char *file, char *out, size_t n) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t i = 0;
  if (!(base[0] >= 'a' && base[0] <= 'z') && !(base[0] >= 'A' && base[0] <= 'Z') && n > 2) out[i++] = 'm';
  for (; *base && *base != '.' && i + 1 < n; base++) {
    char c = *base;
    if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    out[i++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '_';
  }
  out[i] = 0;
}

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

#define MAX_OPTS 64
static const char *entry_specs[MAX_OPTS], *param_opts[MAX_OPTS];
static int n_entry_specs, n_param_opts;

static int parse(int argc, char **argv, td_build_opts *o, const char **file, td_backend *b) {
  const char *device = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--exe")) o->exe = 1;
    else if (!strcmp(a, "--embed-weights")) o->embed_weights = 1;
    else if (!strncmp(a, "--embed-weights=", 16)) return busage("--embed-weights takes no value, got '%s'", a);
    else if (!strcmp(a, "-o") || !strcmp(a, "--name") || !strcmp(a, "--seed") || !strcmp(a, "--march") ||
             !strcmp(a, "--device") || !strcmp(a, "--arch") || !strcmp(a, "--entry") || !strcmp(a, "--param")) {
      if (!v) return busage("%s needs a value", a);
      i++;
      if (!strcmp(a, "--entry") || !strcmp(a, "--param")) {
        int *n = !strcmp(a, "--entry") ? &n_entry_specs : &n_param_opts;
        if (*n == MAX_OPTS) return busage("too many %s options", a);
        (!strcmp(a, "--entry") ? entry_specs : param_opts)[(*n)++] = v;
      } else if (!strcmp(a, "-o")) o->dir = v;
      else if (!strcmp(a, "--name")) o->prefix = v;
      else if (!strcmp(a, "--march")) o->march = v;
      else if (!strcmp(a, "--device")) device = v;
      else if (!strcmp(a, "--arch")) o->cuda_arch = v;
      else {
        char *end;
        o->seed = strtoull(v, &end, 10);
        if (*end || !*v) return busage("--seed needs a non-negative integer, got '%s'", v);
      }
    } else if (a[0] == '-') return busage("unknown option '%s'", a);
    else if (*file) return busage("only one file can be given, found another: '%s'", a);
    else *file = a;
  }
  if (!*file) return busage("%s needs a .td file", "build");
  if (!o->dir) return busage("%s needs -o DIR", "build");
  *b = TD_BACKEND_CPU;
  if (device && td_backend_parse(device, b)) return busage("--device must be cpu or cuda, got '%s'", device);
  int cuda = *b == TD_BACKEND_CUDA;
  if (o->cuda_arch && !cuda) return busage("%s is for --device cuda (--march sets the CPU)", "--arch");
  if (o->march && cuda) return busage("%s is for the CPU (--arch sets the GPU architecture)", "--march");
  return 0;
}

int td_cli_build(int argc, char **argv) {
  td_build_opts o;
  const char *file = NULL;
  char prefix[64];
  memset(&o, 0, sizeof o);
  td_backend b;
  int rc = parse(argc, argv, &o, &file, &b);
  if (rc) return rc;
  if (!o.prefix) {
    default_prefix(file, prefix, sizeof prefix);
    o.prefix = prefix;
  }
  o.source = file;
  o.rt_lib = rt_lib();
  char arch[32], why[300];
  if (b == TD_BACKEND_CUDA && !o.cuda_arch) {
    snprintf(arch, sizeof arch, "sm_%d", td_cuda_default_arch(why, sizeof why));
    o.cuda_arch = arch;
    fprintf(stderr, "tdsl build: CUDA kernels for %s (%s; --arch chooses another)\n", arch, why);
  }
  td_arena *arena = td_arena_new();
  td_diags d;
  td_diags_init(&d, arena);
  td_program *p = arena ? td_program_new(arena, &d) : NULL;
  if (!p) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    td_arena_free(arena);
    return 1;
  }
  td_program_set_seed(p, o.seed);
  cli_search_dirs(add_dir, p);
  int color = isatty(2) && !getenv("NO_COLOR");
  td_err err;
  rc = 0;
  const char *entries[MAX_OPTS];
  if (td_program_load_file(p, file) == 0) {
    /* --param, and the entries (an --entry may carry parameters: Net(T=5).forward) */
    for (int k = 0; k < n_entry_specs && rc == 0; k++)
      if (cli_model_args(p, NULL, 0, entry_specs[k], &entries[k])) rc = 1;
    if (rc == 0 && (cli_model_args(p, param_opts, n_param_opts, NULL, NULL) || td_program_check_model_args(p))) rc = 1;
    o.entries = entries;
    o.n_entries = n_entry_specs;
  }
  if (rc == 0 && !d.n_errors && td_drive_build(p, b, &o, &err)) {
    if (!d.n_errors) fprintf(stderr, "tdsl: error: %s\n", err.msg);
    rc = 1;
  }
  td_diag_render(&d, stderr, color);
  if (d.n_errors) rc = 1;
  td_arena_free(arena);
  return rc;
}

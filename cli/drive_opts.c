/* drive_opts.c - the driver's options as every command sets them.
 *
 * Dumps go to stdout, the C-like code that TDSL_DEBUG=4 asks for to stderr
 * (so program output stays clean), and the compile cache's warning to
 * stderr once per process: a REPL that compiles every input says it once.
 */
#include <stdio.h>
#include <string.h>

#include "cli/explain_cmd.h"

static void cache_warning(void *ud, const char *text) {
  static int said;
  (void)ud;
  if (said) return;
  said = 1;
  fflush(stdout);
  fprintf(stderr, "tdsl: warning: %s\n", text);
}

td_backend td_cli_backend(int cuda, int compiled) {
  return cuda ? TD_BACKEND_CUDA : compiled ? TD_BACKEND_CPU : TD_BACKEND_EAGER;
}

td_drive_opts td_cli_drive_opts(td_backend b, unsigned dumps, const td_diags *d) {
  td_drive_opts o;
  memset(&o, 0, sizeof o);
  o.backend = b;
  o.dumps = dumps;
  o.dump = stdout;
  o.debug = stderr;
  o.diags = d;
  o.on_warning = cache_warning;
  return o;
}

int cli_model_args(td_program *p, const char *const *params, int n, const char *spec, const char **entry) {
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(params[i], '=');
    char name[256];
    size_t k = eq ? (size_t)(eq - params[i]) : 0;
    if (!eq || k == 0 || k >= sizeof name) {
      fprintf(stderr, "tdsl: error: --param needs NAME=VALUE, got '%s'\n", params[i]);
      return -1;
    }
    memcpy(name, params[i], k);
    name[k] = 0;
    if (td_program_add_model_arg(p, name, eq + 1)) {
      fprintf(stderr, "tdsl: error: out of memory\n");
      return -1;
    }
  }
  char why[512];
  if (spec && td_program_entry_spec(p, spec, entry, why, sizeof why)) {
    fprintf(stderr, "tdsl: error: %s\n", why);
    return -1;
  }
  return 0;
}

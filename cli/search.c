/* search.c - the import search path shared by run, check, explain and the
 * REPL, so every command finds the same modules. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/search.h"

void cli_search_dirs(void (*add)(void *ud, const char *dir), void *ud) {
  const char *env = getenv("TDSL_PATH");
  if (env && *env) {
    char *copy = strdup(env), *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save))
      if (*tok) add(ud, tok);
    free(copy);
  }
  struct stat st;
#ifdef TDSL_STDLIB_DIR
  if (!stat(TDSL_STDLIB_DIR, &st)) add(ud, TDSL_STDLIB_DIR);
#endif
#ifdef TDSL_SRC_STDLIB_DIR
  if (!stat(TDSL_SRC_STDLIB_DIR, &st)) add(ud, TDSL_SRC_STDLIB_DIR);
#endif
  (void)st;
}

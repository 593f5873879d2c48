/* phase_time.c - TDSL_DEBUG=time (phase_time.h). */
#include "runtime/phase_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int td_debug_has(const char *word) {
  const char *s = getenv("TDSL_DEBUG");
  size_t n = strlen(word);
  for (; s && *s; s += strcspn(s, ",")) {
    s += strspn(s, ",");
    if (!strncmp(s, word, n) && (s[n] == ',' || s[n] == 0)) return 1;
  }
  return 0;
}

double td_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void td_phase_done(const char *phase, double since, const char *note) {
  if (!td_debug_has("time")) return;
  fprintf(stderr, "tdsl: time: %s %.1f ms%s%s%s\n", phase, 1e3 * (td_now() - since), note ? " (" : "",
          note ? note : "", note ? ")" : "");
}

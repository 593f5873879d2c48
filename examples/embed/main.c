/* main.c - calling a model built by `tdsl build` from C.
 *
 *   tdsl build examples/seed/simple.td -o out
 *   cc -I out examples/embed/main.c out/simple.so -Wl,-rpath,'$ORIGIN' -o out/embed
 *   out/embed [WEIGHTS.safetensors]
 *
 * creates the model (the parameters `tdsl run` initialises, or the weights
 * given), calls Simple.forward on batches of 1, 3 and 8 rows and prints every
 * output value, one row per line.  The input row r of a batch of N holds
 * sin(0.37 * (r * IN + c) + N) in column c.
 *
 * Another model: -DTD_MODEL=mlp -DTD_HEADER='"mlp.h"' -DTD_IN=784 -DTD_OUT=10
 * (the entry called is TD_MODEL_forward, of f32[N, IN] -> f32[N, OUT]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TD_MODEL
#define TD_MODEL simple
#endif
#ifndef TD_HEADER
#define TD_HEADER "simple.h"
#endif
#ifndef TD_IN
#define TD_IN 4
#endif
#ifndef TD_OUT
#define TD_OUT 2
#endif

#include TD_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODEL CAT(TD_MODEL, _model)
#define CREATE CAT(TD_MODEL, _create)
#define FORWARD CAT(TD_MODEL, _forward)
#define LOAD CAT(TD_MODEL, _load_weights)
#define ERROR CAT(TD_MODEL, _error)
#define FREE CAT(TD_MODEL, _free)

int main(int argc, char **argv) {
  MODEL *m = CREATE();
  if (!m) {
    fprintf(stderr, "cannot create the model: %s\n", ERROR(NULL));
    return 1;
  }
  char err[256];
  if (argc > 1 && LOAD(m, argv[1], err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    FREE(m);
    return 1;
  }
  static const int64_t batches[] = {1, 3, 8};
  for (int b = 0; b < 3; b++) {
    int64_t n = batches[b];
    float *x = malloc(sizeof *x * (size_t)(n * TD_IN)), *y = malloc(sizeof *y * (size_t)(n * TD_OUT));
    if (!x || !y) return 1;
    for (int64_t i = 0; i < n * TD_IN; i++) x[i] = (float)sin(0.37 * (double)i + (double)n);
    if (FORWARD(m, n, x, y)) {
      fprintf(stderr, "forward failed: %s\n", ERROR(m));
      return 1;
    }
    printf("N=%lld\n", (long long)n);
    for (int64_t r = 0; r < n; r++)
      for (int c = 0; c < TD_OUT; c++) printf("%.9g%c", y[r * TD_OUT + c], c + 1 < TD_OUT ? ' ' : '\n');
    free(x);
    free(y);
  }
  FREE(m);
  return 0;
}

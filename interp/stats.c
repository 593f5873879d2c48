/* stats.c - what tracing and --check-numerics read from a value: min, max
 * and mean over the finite elements with counts of NaN and Inf, and the
 * first non-finite element. */
#include "interp/kernels.h"

#include <math.h>
#include <string.h>

TDK_VECTORIZE

#define STATS_LOOP(T)                                                            \
  do {                                                                           \
    const T *x = t->data;                                                        \
    for (int64_t i = 0; i < t->numel; i++) {                                     \
      double v = (double)x[i];                                                   \
      if (v != v) { s->n_nan++; continue; }                                      \
      if (isinf(v)) { s->n_inf++; continue; }                                    \
      if (s->n_finite == 0 || v < s->min) s->min = v;                            \
      if (s->n_finite == 0 || v > s->max) s->max = v;                            \
      sum += v;                                                                  \
      s->n_finite++;                                                             \
    }                                                                            \
  } while (0)

void tdk_stats_of(const td_tensor *t, tdk_stats *s) {
  double sum = 0;
  memset(s, 0, sizeof *s);
  switch (t->dtype) {
  case TD_F32: STATS_LOOP(float); break;
  case TD_F64: STATS_LOOP(double); break;
  case TD_I32: STATS_LOOP(int32_t); break;
  case TD_I64: STATS_LOOP(int64_t); break;
  case TD_F16: case TD_BF16: {
    for (int64_t i = 0; i < t->numel; i++) {
      double v = td_tensor_get(t, i);
      if (v != v) { s->n_nan++; continue; }
      if (isinf(v)) { s->n_inf++; continue; }
      if (s->n_finite == 0 || v < s->min) s->min = v;
      if (s->n_finite == 0 || v > s->max) s->max = v;
      sum += v;
      s->n_finite++;
    }
    break;
  }
  default: STATS_LOOP(uint8_t); break;
  }
  s->mean = s->n_finite ? sum / (double)s->n_finite : 0.0;
}

int64_t tdk_first_nonfinite(const td_tensor *t, int *is_nan) {
  int64_t n = t->numel;
  if (t->dtype == TD_F32) {
    const float *x = t->data;
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(x[i])) return *is_nan = isnan(x[i]), i;
  } else if (t->dtype == TD_F64) {
    const double *x = t->data;
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(x[i])) return *is_nan = isnan(x[i]), i;
  } else if (td_dtype_is_half(t->dtype)) {
    const uint16_t *x = t->data;
    uint16_t exp_mask = t->dtype == TD_F16 ? 0x7c00 : 0x7f80;
    for (int64_t i = 0; i < n; i++)
      if ((x[i] & exp_mask) == exp_mask) return *is_nan = (x[i] & 0x7fff) != exp_mask, i;
  }
  return -1;
}

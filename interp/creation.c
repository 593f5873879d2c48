/* creation.c - the interpreter's creation kernels: a constant fill, arange
 * and the random ops (counter-based Philox, runtime/philox.h: element k of
 * a RAND / RANDN node is the value at (seed, stream, k), as in every
 * backend). */
#include "interp/kernels.h"

#include <string.h>

#include "runtime/philox.h"

TDK_VECTORIZE

void tdk_fill(td_tensor *out, double f, int64_t i) {
  int64_t n = out->numel;
  switch (out->dtype) {
  case TD_F32: for (int64_t k = 0; k < n; k++) ((float *)out->data)[k] = (float)f; break;
  case TD_F64: for (int64_t k = 0; k < n; k++) ((double *)out->data)[k] = f; break;
  case TD_I32: for (int64_t k = 0; k < n; k++) ((int32_t *)out->data)[k] = (int32_t)i; break;
  case TD_I64: for (int64_t k = 0; k < n; k++) ((int64_t *)out->data)[k] = i; break;
  case TD_F16: case TD_BF16: for (int64_t k = 0; k < n; k++) td_tensor_set(out, k, f); break;
  default: if (n) memset(out->data, i != 0, (size_t)n); break;
  }
}

void tdk_arange(td_tensor *out, double f, double f2, int64_t i, int64_t i2) {
  int64_t n = out->numel;
  switch (out->dtype) {
  case TD_F32: for (int64_t k = 0; k < n; k++) ((float *)out->data)[k] = (float)(f + f2 * (double)k); break;
  case TD_F64: for (int64_t k = 0; k < n; k++) ((double *)out->data)[k] = f + f2 * (double)k; break;
  case TD_I32: for (int64_t k = 0; k < n; k++) ((int32_t *)out->data)[k] = (int32_t)(uint64_t)(i + i2 * k); break;
  case TD_I64: for (int64_t k = 0; k < n; k++) ((int64_t *)out->data)[k] = i + i2 * k; break;
  case TD_F16: case TD_BF16:
    for (int64_t k = 0; k < n; k++) td_tensor_set(out, k, f + f2 * (double)k);
    break;
  default: for (int64_t k = 0; k < n; k++) ((uint8_t *)out->data)[k] = (i + i2 * k) != 0; break;
  }
}

void tdk_random(td_tensor *out, int normal, uint64_t seed, uint64_t stream) {
  int64_t n = out->numel;
  for (int64_t k = 0; k < n; k++) {
    double v = normal ? td_rand_normal(seed, stream, (uint64_t)k)
                      : td_rand_uniform(seed, stream, (uint64_t)k);
    if (out->dtype == TD_F32) ((float *)out->data)[k] = (float)v;
    else if (out->dtype == TD_F64) ((double *)out->data)[k] = v;
    else td_tensor_set(out, k, v);
  }
}

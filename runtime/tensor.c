/* tensor.c - runtime tensors: dtypes, errors, allocation, element access.
 *
 * A tensor is one td_malloc'd header plus a 64-byte aligned data block from
 * td_aligned_alloc, both released with the last reference.  Sizes are
 * overflow-checked and capped by td_tensor_max_bytes() so that a bad shape
 * (from a file, say) is an error instead of a huge allocation.
 */
#include "runtime/tensor.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/half.h"
#include "runtime/mem.h"

#define TD_DATA_ALIGN 64
#define TD_DEFAULT_MAX_BYTES ((size_t)16 << 30) /* 16 GiB */

int td_err_set(td_err *err, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
  const char *name;
  size_t size;
} dtype_info[TD_DTYPE_COUNT] = {
    [TD_BOOL] = {"bool", 1}, [TD_I32] = {"i32", 4}, [TD_I64] = {"i64", 8},
    [TD_F32] = {"f32", 4},   [TD_F64] = {"f64", 8},   [TD_F16] = {"f16", 2},
    [TD_BF16] = {"bf16", 2},
};

size_t td_dtype_size(td_dtype t) {
  return (unsigned)t < TD_DTYPE_COUNT ? dtype_info[t].size : 0;
}

const char *td_dtype_name(td_dtype t) {
  return (unsigned)t < TD_DTYPE_COUNT ? dtype_info[t].name : "?";
}

int td_dtype_is_float(td_dtype t) {
  return t == TD_F32 || t == TD_F64 || t == TD_F16 || t == TD_BF16;
}

int td_dtype_is_half(td_dtype t) { return t == TD_F16 || t == TD_BF16; }

/* Promotion rank: bool < i32 < i64 < {f16, bf16} < f32 < f64. */
static int promo_rank(td_dtype t) {
  switch (t) {
  case TD_BOOL: return 0;
  case TD_I32: return 1;
  case TD_I64: return 2;
  case TD_F16: case TD_BF16: return 3;
  case TD_F32: return 4;
  default: return 5;
  }
}

td_dtype td_dtype_promote(td_dtype a, td_dtype b) {
  if (a == b) return a;
  int ra = promo_rank(a), rb = promo_rank(b);
  if (ra == rb) return TD_F32; /* f16 with bf16 */
  return ra > rb ? a : b;
}

int td_dtype_from_name(const char *name, td_dtype *out) {
  for (int i = 0; i < TD_DTYPE_COUNT; i++) {
    if (strcmp(name, dtype_info[i].name) == 0) {
      *out = (td_dtype)i;
      return 0;
    }
  }
  return -1;
}

/* ---- allocation -------------------------------------------------------- */

/* The limit, read from the environment once per process (tensors are
 * allocated on every op and every compiled call: no getenv there).
 * Atomic: threads creating their first tensors at once may each read the
 * environment, and all store the same value. */
static size_t max_bytes_from_env(void);

static _Atomic size_t cached_max_bytes;

size_t td_tensor_max_bytes(void) {
  size_t v = atomic_load_explicit(&cached_max_bytes, memory_order_relaxed);
  if (!v) {
    v = max_bytes_from_env();
    atomic_store_explicit(&cached_max_bytes, v, memory_order_relaxed);
  }
  return v;
}

void td_tensor_limits_reload(void) { atomic_store_explicit(&cached_max_bytes, 0, memory_order_relaxed); }

static size_t max_bytes_from_env(void) {
  const char *s = getenv("TDSL_MAX_TENSOR_BYTES");
  if (!s || !*s)
    return TD_DEFAULT_MAX_BYTES;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || *s == '-' || v > SIZE_MAX)
    return TD_DEFAULT_MAX_BYTES;
  return (size_t)v;
}

/* Checks rank and shape and computes numel and the byte size; -1 with err
 * filled on a bad shape, an overflow or a size above the limit.  Zero-size
 * dims do not hide an overflow of the other dims (like NumPy), but an
 * empty tensor holds no bytes, so the limit never refuses it. */
static int tensor_size(td_dtype dt, int rank, const int64_t *shape,
                       int64_t *numel, size_t *bytes, td_err *err) {
  char sbuf[256];
  if ((unsigned)dt >= TD_DTYPE_COUNT)
    return td_err_set(err, "invalid dtype %d", (int)dt);
  if (rank < 0 || rank > TD_MAX_RANK)
    return td_err_set(err, "rank %d is not supported (at most %d axes)", rank,
                      TD_MAX_RANK);
  int64_t nz = 1, n; /* nz: product of the non-zero sizes */
  int has_zero = 0;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0)
      return td_err_set(err, "negative size %lld in axis %d",
                        (long long)shape[i], i);
    if (shape[i] == 0) {
      has_zero = 1;
      continue;
    }
    if (nz > INT64_MAX / shape[i])
      return td_err_set(err, "tensor %s is too large (element count overflows)",
                        td_shape_str(dt, rank, shape, sbuf, sizeof sbuf));
    nz *= shape[i];
  }
  n = has_zero ? 0 : nz;
  size_t es = td_dtype_size(dt), max = td_tensor_max_bytes();
  if ((uint64_t)nz > SIZE_MAX / es)   /* as NumPy: even with a zero-size axis */
    return td_err_set(err, "tensor %s is too large (its byte count overflows)",
                      td_shape_str(dt, rank, shape, sbuf, sizeof sbuf));
  if ((size_t)n * es > max)           /* the limit is on the bytes it holds */
    return td_err_set(err,
                      "tensor %s needs more than %zu bytes, the limit "
                      "(set TDSL_MAX_TENSOR_BYTES to raise it)",
                      td_shape_str(dt, rank, shape, sbuf, sizeof sbuf), max);
  *numel = n;
  *bytes = (size_t)n * es;
  return 0;
}

/* The last id handed out (td_tensor.id). */
static uint64_t next_tensor_id;

td_tensor *td_tensor_new(td_dtype dt, int rank, const int64_t *shape, td_err *err) {
  int64_t numel = 0;
  size_t bytes = 0;
  if (tensor_size(dt, rank, shape, &numel, &bytes, err) < 0)
    return NULL;
  td_tensor *t = td_malloc(sizeof *t);
  if (!t) {
    td_err_set(err, "out of memory");
    return NULL;
  }
  memset(t, 0, sizeof *t);
  /* round up so vector kernels may touch a whole last block */
  size_t padded = (bytes + TD_DATA_ALIGN - 1) & ~(size_t)(TD_DATA_ALIGN - 1);
  if (padded < bytes)
    padded = bytes;
  t->data = td_aligned_alloc(TD_DATA_ALIGN, padded ? padded : TD_DATA_ALIGN);
  if (!t->data) {
    td_free(t);
    char sbuf[256];
    td_err_set(err, "out of memory allocating %zu bytes for tensor %s", bytes,
               td_shape_str(dt, rank, shape, sbuf, sizeof sbuf));
    return NULL;
  }
  t->dtype = dt;
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->shape[i] = shape[i];
  t->numel = numel;
  t->refcount = 1;
  t->id = __atomic_add_fetch(&next_tensor_id, 1, __ATOMIC_RELAXED);
  return t;
}

td_tensor *td_tensor_zeros(td_dtype dt, int rank, const int64_t *shape, td_err *err) {
  td_tensor *t = td_tensor_new(dt, rank, shape, err);
  if (t)
    memset(t->data, 0, (size_t)t->numel * td_dtype_size(dt));
  return t;
}

/* The count is changed atomically, so threads may share a tensor (read
 * its data, retain and release it) at once; the last release (acq_rel)
 * sees every other owner's use before the free. */
td_tensor *td_tensor_retain(td_tensor *t) {
  if (t)
    __atomic_add_fetch(&t->refcount, 1, __ATOMIC_RELAXED);
  return t;
}

void td_tensor_touch(td_tensor *t) {
  if (t && t->id) t->id = __atomic_add_fetch(&next_tensor_id, 1, __ATOMIC_RELAXED);
}

void td_tensor_release(td_tensor *t) {
  if (!t || __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  td_aligned_free(t->data);
  td_free(t);
}

/* ---- element access ---------------------------------------------------- */

double td_tensor_get(const td_tensor *t, int64_t i) {
  switch (t->dtype) {
  case TD_BOOL: return ((const uint8_t *)t->data)[i] ? 1.0 : 0.0;
  case TD_I32: return ((const int32_t *)t->data)[i];
  case TD_I64: return (double)((const int64_t *)t->data)[i];
  case TD_F32: return ((const float *)t->data)[i];
  case TD_F64: return ((const double *)t->data)[i];
  case TD_F16: return td_f16_to_f32(((const uint16_t *)t->data)[i]);
  case TD_BF16: return td_bf16_to_f32(((const uint16_t *)t->data)[i]);
  default: return 0.0;
  }
}

/* Truncates v toward zero into [lo, hi]; NaN becomes 0 (never UB). */
static int64_t clamp_to_int(double v, double lo, double hi) {
  if (isnan(v))
    return 0;
  if (v <= lo)
    return (int64_t)lo;
  if (v >= hi)
    return hi >= 9223372036854775807.0 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

void td_tensor_set(td_tensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case TD_BOOL: ((uint8_t *)t->data)[i] = v != 0.0; break;
  case TD_I32:
    ((int32_t *)t->data)[i] = (int32_t)clamp_to_int(v, -2147483648.0, 2147483647.0);
    break;
  case TD_I64:
    ((int64_t *)t->data)[i] =
        clamp_to_int(v, -9223372036854775808.0, 9223372036854775807.0);
    break;
  case TD_F32: ((float *)t->data)[i] = (float)v; break;
  case TD_F64: ((double *)t->data)[i] = v; break;
  case TD_F16: ((uint16_t *)t->data)[i] = td_f64_to_f16(v); break;
  case TD_BF16: ((uint16_t *)t->data)[i] = td_f64_to_bf16(v); break;
  default: break;
  }
}

/* param_init.c - parameters' initial values from their recipes
 * (param_init.h).  Compiled into libtdsl and into the artifact runtime
 * libtdsl_rt.a, as philox.c is. */
#include "runtime/param_init.h"

#include "runtime/philox.h"

uint64_t td_init_stream(const char *name, uint64_t salt) {
  uint64_t s = td_hash_str(name ? name : "");
  return salt ? td_hash_mix(s, salt) : s;
}

/* Every element f (float dtypes) or i (integers and bool). */
static void fill_const(td_tensor *t, double f, int64_t i) {
  for (int64_t k = 0; k < t->numel; k++) switch (t->dtype) {
    case TD_I32: ((int32_t *)t->data)[k] = (int32_t)i; break;
    case TD_I64: ((int64_t *)t->data)[k] = i; break;
    case TD_BOOL: ((uint8_t *)t->data)[k] = i != 0; break;
    default: td_tensor_set(t, k, f); break;
    }
}

/* v(i) = a + b * r(i) (normal) or a + (b - a) * r(i) (uniform). */
static void fill_random(td_tensor *t, int normal, const td_init *r) {
  for (int64_t i = 0; i < t->numel; i++) {
    double u = normal ? td_rand_normal(r->seed, r->stream, (uint64_t)i)
                      : td_rand_uniform(r->seed, r->stream, (uint64_t)i);
    double v = normal ? r->a + r->b * u : r->a + (r->b - r->a) * u;
    if (t->dtype == TD_F32) ((float *)t->data)[i] = (float)v;
    else if (t->dtype == TD_F64) ((double *)t->data)[i] = v;
    else td_tensor_set(t, i, v);
  }
}

int td_init_fill(void *data, td_dtype dt, int64_t n, const td_init *r, td_err *err) {
  if ((int)dt < 0 || dt >= TD_DTYPE_COUNT) return td_err_set(err, "unknown dtype %d", (int)dt);
  /* a view of the bytes, so td_tensor_set converts to every dtype */
  td_tensor t = {.dtype = dt, .rank = 1, .shape = {n}, .numel = n, .data = data};
  switch (r->kind) {
  case TD_INIT_ZEROS: fill_const(&t, 0.0, 0); return 0;
  case TD_INIT_ONES: fill_const(&t, 1.0, 1); return 0;
  case TD_INIT_FULL: fill_const(&t, r->a, (int64_t)r->a); return 0;
  case TD_INIT_UNIFORM: fill_random(&t, 0, r); return 0;
  case TD_INIT_NORMAL: fill_random(&t, 1, r); return 0;
  default: return td_err_set(err, "unknown initialiser %d", (int)r->kind);
  }
}

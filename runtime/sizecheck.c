/* sizecheck.c - evaluating the run-time size checks (sizecheck.h) with
 * the messages the interpreter's kernels give for the same conditions. */
#include "runtime/sizecheck.h"

#define OVERFLOWS "size arithmetic overflows 64 bits for these sizes"

static int check_size(const td_sizecheck *c, td_sc_eval_fn eval, const void *ctx, td_err *err) {
  int ovf = 0;
  int64_t v = eval(ctx, c->dims[0], &ovf);
  if (ovf) return td_err_set(err, "size %s of axis %d does not fit in 64 bits", c->text, c->axis);
  if (v < 0) return td_err_set(err, "size %s of axis %d evaluates to %lld", c->text, c->axis, (long long)v);
  return 0;
}

static int check_numel(const td_sizecheck *c, td_sc_eval_fn eval, const void *ctx, td_err *err) {
  int64_t shape[TD_MAX_RANK];
  int ovf = 0;
  for (int k = 0; k < c->rank; k++) shape[k] = eval(ctx, c->dims[k], &ovf);
  if (ovf) return td_err_set(err, OVERFLOWS);
  /* as td_tensor_new counts: zero sizes do not hide an overflow of the others */
  uint64_t bytes = td_dtype_size((td_dtype)c->dtype);
  for (int k = 0; k < c->rank; k++)
    if (shape[k] > 0 && __builtin_mul_overflow(bytes, (uint64_t)shape[k], &bytes)) bytes = UINT64_MAX;
  if (bytes > (uint64_t)INT64_MAX) {
    char s[256];
    for (int k = 0; k < c->rank; k++)
      if (shape[k] < 0) return 0;   /* the size check of that axis reports it */
    return td_err_set(err, "tensor %s is too large (element count overflows)",
                      td_shape_str((td_dtype)c->dtype, c->rank, shape, s, sizeof s));
  }
  return 0;
}

static int check_slice(const td_sizecheck *c, td_sc_eval_fn eval, const void *ctx, td_err *err) {
  int ovf = 0;
  int64_t d = eval(ctx, c->dims[0], &ovf), start = eval(ctx, c->dims[1], &ovf), n = eval(ctx, c->dims[2], &ovf);
  if (ovf) return td_err_set(err, OVERFLOWS);
  if (n <= 0) return 0;
  int64_t last;
  int bad = __builtin_mul_overflow(c->step, n - 1, &last) || __builtin_add_overflow(last, start, &last);
  if (bad || start < 0 || start >= d || last < 0 || last >= d)
    return td_err_set(err, "slice out of range: axis %d of size %lld, start %lld, step %lld, %lld elements", c->axis,
                      (long long)d, (long long)start, (long long)c->step, (long long)n);
  return 0;
}

static int check_value(const td_sizecheck *c, td_sc_eval_fn eval, const void *ctx, td_err *err) {
  int ovf = 0, empty_red = 0, empty_out = 0;
  for (int k = 0; k < c->rank; k++) {
    int64_t v = eval(ctx, c->dims[k], &ovf);
    if (v == 0) {
      if (c->axes >> k & 1) empty_red = 1;
      else empty_out = 1;
    }
  }
  if (ovf) return td_err_set(err, OVERFLOWS);
  if (empty_red && !empty_out) return td_err_set(err, "op '%s' over an empty axis has no value", c->text);
  return 0;
}

int td_sizecheck_n_dims(const td_sizecheck *c) {
  return c->kind == TD_SC_SIZE ? 1 : c->kind == TD_SC_SLICE ? 3 : c->rank;
}

int td_sizecheck_run(const td_sizecheck *first, size_t stride, int n, td_sc_eval_fn eval, const void *ctx,
                     td_err *err) {
  static int (*const run[TD_SC_KIND_COUNT])(const td_sizecheck *, td_sc_eval_fn, const void *, td_err *) = {
      [TD_SC_SIZE] = check_size, [TD_SC_NUMEL] = check_numel, [TD_SC_SLICE] = check_slice,
      [TD_SC_VALUE] = check_value};
  for (int i = 0; i < n; i++) {
    const td_sizecheck *c = (const td_sizecheck *)(const void *)((const char *)first + (size_t)i * stride);
    if ((unsigned)c->kind >= TD_SC_KIND_COUNT) return td_err_set(err, "invalid size check"), i;
    if (run[c->kind](c, eval, ctx, err)) return i;
  }
  return -1;
}

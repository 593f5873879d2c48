/* gather.c - the interpreter's indexing kernel: take(x, idx, axis).
 *
 * Every index is checked before anything is copied (negative indices count
 * from the end), then each selected row of x along the axis is copied.
 */
#include "interp/kernels.h"

#include <string.h>

TDK_VECTORIZE

/* Index j of idx as int64 (i32 or i64 tensors). */
static int64_t idx_at(const td_tensor *idx, int64_t j) {
  return idx->dtype == TD_I32 ? ((const int32_t *)idx->data)[j]
                              : ((const int64_t *)idx->data)[j];
}

int tdk_gather(int axis, const td_tensor *x, const td_tensor *idx, td_tensor *out,
               td_err *err) {
  if (idx->dtype != TD_I32 && idx->dtype != TD_I64)
    return td_err_set(err, "take: indices must be i32 or i64, not %s",
                      td_dtype_name(idx->dtype));
  if (axis < 0 || axis >= x->rank)
    return td_err_set(err, "take: axis %d out of range for rank %d", axis, x->rank);
  int ok = out->rank == x->rank - 1 + idx->rank && out->dtype == x->dtype;
  for (int k = 0; ok && k < out->rank; k++) {
    int64_t want = k < axis ? x->shape[k]
                 : k < axis + idx->rank ? idx->shape[k - axis]
                 : x->shape[k - idx->rank + 1];
    ok = out->shape[k] == want;
  }
  if (!ok) return td_err_set(err, "take: result shape does not match x and the indices");
  int64_t d = x->shape[axis], outer = 1, inner = 1, ni = idx->numel;
  for (int k = 0; k < axis; k++) outer *= x->shape[k];
  for (int k = axis + 1; k < x->rank; k++) inner *= x->shape[k];
  /* The indices that are read are checked, as compiled code checks them:
   * an empty result (another axis of size 0) reads nothing. */
  if (out->numel == 0) return 0;
  for (int64_t j = 0; j < ni; j++) {
    int64_t v = idx_at(idx, j);
    if (v < -d || v >= d)
      return td_err_set(err, "take: index %lld is out of range for axis %d of size %lld",
                        (long long)v, axis, (long long)d);
  }
  size_t es = td_dtype_size(x->dtype), row = (size_t)inner * es;
  if (out->numel == 0) return 0;
  char *dst = out->data;
  for (int64_t o = 0; o < outer; o++) {
    const char *src = (const char *)x->data + (size_t)(o * d) * row;
    for (int64_t j = 0; j < ni; j++, dst += row) {
      int64_t v = idx_at(idx, j);
      memcpy(dst, src + (size_t)(v < 0 ? v + d : v) * row, row);
    }
  }
  return 0;
}

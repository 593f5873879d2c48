/* movement.c - the interpreter's movement kernels: reshape's copy,
 * permute, broadcast, slice and concat.
 *
 * Permute, broadcast and slice are one strided copy each: the input read
 * with an element stride per output axis (strided.h's iterator, with a
 * plain copy as the row kernel).  A copy whose innermost output axis reads
 * the input with a large stride (a transpose) walks tiles instead, so both
 * sides' cache lines stay in L1.  Concat copies contiguous chunks.
 */
#include "interp/kernels.h"

#include <string.h>

#include "interp/strided.h"

TDK_VECTORIZE

/* Plain copy with a stride (movement ops). */
#define COPY_ROW(NAME, T)                                                        \
  static void NAME(int64_t n, void *o_, const void *const *in, const int64_t *st) { \
    T *restrict o = o_;                                                          \
    const T *restrict A = in[0];                                                 \
    int64_t s = st[0];                                                           \
    if (s == 1) {                                                                \
      memcpy(o, A, (size_t)n * sizeof(T));                                       \
    } else if (s == 0) {                                                         \
      T v = A[0];                                                                \
      for (int64_t i = 0; i < n; i++) o[i] = v;                                  \
    } else {                                                                     \
      for (int64_t i = 0; i < n; i++) o[i] = A[i * s];                           \
    }                                                                            \
  }

COPY_ROW(copy_1, uint8_t)
COPY_ROW(copy_2, uint16_t)
COPY_ROW(copy_4, uint32_t)
COPY_ROW(copy_8, uint64_t)

static tdk_row_fn copy_fn(size_t es) {
  return es == 1 ? copy_1 : es == 2 ? copy_2 : es == 4 ? copy_4 : copy_8;
}

void tdk_copy(const td_tensor *in, td_tensor *out) {
  if (out->numel > 0)
    memcpy(out->data, in->data, (size_t)out->numel * td_dtype_size(out->dtype));
}

/* Transposing copies: one plane out[i, j] = in[i * is + j * js'] of a
 * permute whose innermost output axis reads the input with a large stride.
 * Walking TILE x TILE tiles keeps both sides' cache lines in L1. */
#define TILE 16
#define TILE_FN(NAME, T)                                                         \
  static void NAME(char *o_, const char *in_, int64_t ni, int64_t nj, int64_t os, \
                   int64_t js) {                                                 \
    T *o = (T *)o_;                                                              \
    const T *in = (const T *)in_;                                                \
    for (int64_t ib = 0; ib < ni; ib += TILE) {                                  \
      int64_t ie = ni - ib < TILE ? ni : ib + TILE;                              \
      for (int64_t jb = 0; jb < nj; jb += TILE) {                                \
        int64_t je = nj - jb < TILE ? nj : jb + TILE;                            \
        for (int64_t i = ib; i < ie; i++)                                        \
          for (int64_t j = jb; j < je; j++) o[i * os + j] = in[i + j * js];      \
      }                                                                          \
    }                                                                            \
  }
TILE_FN(tile_1, uint8_t)
TILE_FN(tile_2, uint16_t)
TILE_FN(tile_4, uint32_t)
TILE_FN(tile_8, uint64_t)

/* The tiled path for coalesced dims: p is the output axis reading the input
 * contiguously, the last axis the one reading it with stride js. */
static void tiled_copy(int r, const int64_t *dim, int64_t st[][TD_MAX_RANK], int p,
                       char *out, const char *src, size_t es) {
  void (*fn)(char *, const char *, int64_t, int64_t, int64_t, int64_t) =
      es == 1 ? tile_1 : es == 2 ? tile_2 : es == 4 ? tile_4 : tile_8;
  int64_t idx[TD_MAX_RANK] = {0}, oo = 0, io = 0;
  for (;;) {
    fn(out + oo * (int64_t)es, src + io * (int64_t)es, dim[p], dim[r - 1], st[0][p],
       st[1][r - 1]);
    int k = r - 2;
    for (; k >= 0; k--) {
      if (k == p) continue;
      oo += st[0][k];
      io += st[1][k];
      if (++idx[k] < dim[k]) break;
      oo -= st[0][k] * dim[k];
      io -= st[1][k] * dim[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

/* Copies from `src` (element strides per output axis) into contiguous out. */
static void strided_copy(const td_tensor *out, char *src, const int64_t *st) {
  tdk_operand ops[2];
  ops[0].p = out->data;
  ops[0].es = td_dtype_size(out->dtype);
  tdk_contig_strides(out->rank, out->shape, ops[0].st);
  ops[1].p = src;
  ops[1].es = ops[0].es;
  memcpy(ops[1].st, st, sizeof ops[1].st);
  for (int k = 0; k < out->rank; k++)
    if (out->shape[k] == 0) return;
  int64_t dim[TD_MAX_RANK], cst[TDK_MAX_OPS][TD_MAX_RANK];
  int r = tdk_coalesce(out->rank, out->shape, 2, ops, dim, cst);
  if (r >= 2 && dim[r - 1] >= TILE / 2 && (cst[1][r - 1] > 16 || cst[1][r - 1] < -16)) {
    for (int p = r - 2; p >= 0; p--)
      if (cst[1][p] == 1 && dim[p] >= TILE / 2) {
        tiled_copy(r, dim, cst, p, ops[0].p, ops[1].p, ops[0].es);
        return;
      }
  }
  tdk_run(copy_fn(ops[0].es), out->rank, out->shape, 2, ops);
}

void tdk_permute(const int *perm, const td_tensor *in, td_tensor *out) {
  int64_t cs[TD_MAX_RANK], st[TD_MAX_RANK] = {0};
  tdk_contig_strides(in->rank, in->shape, cs);
  for (int i = 0; i < out->rank; i++) st[i] = cs[perm[i]];
  strided_copy(out, in->data, st);
}

int tdk_broadcast(const td_tensor *in, td_tensor *out, td_err *err) {
  tdk_operand op;
  if (!tdk_can_broadcast(in, out) || in->dtype != out->dtype) {
    char a[128], b[128];
    return td_err_set(err, "cannot broadcast %s to %s",
                      td_shape_str(in->dtype, in->rank, in->shape, a, sizeof a),
                      td_shape_str(out->dtype, out->rank, out->shape, b, sizeof b));
  }
  tdk_bcast_operand(in, out->rank, out->shape, &op);
  strided_copy(out, in->data, op.st);
  return 0;
}

int tdk_slice(const int64_t *start, const int64_t *step, const td_tensor *in,
              td_tensor *out, td_err *err) {
  int64_t cs[TD_MAX_RANK], st[TD_MAX_RANK] = {0}, base = 0;
  tdk_contig_strides(in->rank, in->shape, cs);
  for (int k = 0; k < in->rank; k++) {
    int64_t c = out->shape[k], d = in->shape[k];
    if (c > 0) {
      int64_t last = start[k] + step[k] * (c - 1);
      if (start[k] < 0 || start[k] >= d || last < 0 || last >= d)
        return td_err_set(err,
                          "slice out of range: axis %d of size %lld, start %lld, step "
                          "%lld, %lld elements",
                          k, (long long)d, (long long)start[k], (long long)step[k],
                          (long long)c);
      base += start[k] * cs[k];
    }
    st[k] = step[k] * cs[k];
  }
  if (out->numel == 0) return 0;
  strided_copy(out, (char *)in->data + base * (int64_t)td_dtype_size(in->dtype), st);
  return 0;
}

void tdk_concat(int axis, td_tensor *const *in, int n_in, td_tensor *out) {
  size_t es = td_dtype_size(out->dtype);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; k++) outer *= out->shape[k];
  for (int k = axis + 1; k < out->rank; k++) inner *= out->shape[k];
  char *dst = out->data;
  if (out->numel == 0) return;
  for (int64_t o = 0; o < outer; o++) {
    for (int j = 0; j < n_in; j++) {
      size_t chunk = (size_t)(in[j]->shape[axis] * inner) * es;
      if (!chunk) continue;
      memcpy(dst, (const char *)in[j]->data + (size_t)o * chunk, chunk);
      dst += chunk;
    }
  }
}

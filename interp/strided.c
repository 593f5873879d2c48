/* strided.c - the strided iterator of the interpreter's elementwise and
 * movement kernels (strided.h). */
#include "interp/strided.h"

#include "interp/kernels.h"

TDK_VECTORIZE

void tdk_contig_strides(int rank, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= shape[k];
  }
}

int tdk_coalesce(int rank, const int64_t *shape, int nops, const tdk_operand *ops, int64_t *dim,
                 int64_t st[][TD_MAX_RANK]) {
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (shape[k] == 1) continue;
    int merge = r > 0;
    for (int o = 0; o < nops && merge; o++)
      merge = st[o][r - 1] == ops[o].st[k] * shape[k];
    if (merge) {
      dim[r - 1] *= shape[k];
      for (int o = 0; o < nops; o++) st[o][r - 1] = ops[o].st[k];
    } else {
      dim[r] = shape[k];
      for (int o = 0; o < nops; o++) st[o][r] = ops[o].st[k];
      r++;
    }
  }
  return r;
}

void tdk_run(tdk_row_fn fn, int rank, const int64_t *shape, int nops, const tdk_operand *ops) {
  int64_t dim[TD_MAX_RANK], st[TDK_MAX_OPS][TD_MAX_RANK];
  int64_t off[TDK_MAX_OPS] = {0}, ist[TDK_MAX_OPS] = {0}, idx[TD_MAX_RANK] = {0};
  const void *ip[TDK_MAX_OPS];
  for (int k = 0; k < rank; k++)
    if (shape[k] == 0) return;
  int r = tdk_coalesce(rank, shape, nops, ops, dim, st);
  int64_t n = r ? dim[r - 1] : 1;
  for (int o = 1; o < nops; o++) ist[o - 1] = r ? st[o][r - 1] : 0;
  for (;;) {
    for (int o = 1; o < nops; o++) ip[o - 1] = ops[o].p + off[o] * (int64_t)ops[o].es;
    fn(n, ops[0].p + off[0] * (int64_t)ops[0].es, ip, ist);
    int k = r - 2;
    for (; k >= 0; k--) {
      for (int o = 0; o < nops; o++) off[o] += st[o][k];
      if (++idx[k] < dim[k]) break;
      for (int o = 0; o < nops; o++) off[o] -= st[o][k] * dim[k];
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

void tdk_bcast_operand(const td_tensor *t, int r, const int64_t *shape, tdk_operand *op) {
  int64_t cs[TD_MAX_RANK];
  tdk_contig_strides(t->rank, t->shape, cs);
  op->p = t->data;
  op->es = td_dtype_size(t->dtype);
  int off = r - t->rank;
  for (int k = 0; k < r; k++) {
    int j = k - off;
    op->st[k] = (j < 0 || (t->shape[j] == 1 && shape[k] != 1)) ? 0 : cs[j];
  }
}

int tdk_can_broadcast(const td_tensor *t, const td_tensor *out) {
  if (t->rank > out->rank) return 0;
  int off = out->rank - t->rank;
  for (int j = 0; j < t->rank; j++)
    if (t->shape[j] != 1 && t->shape[j] != out->shape[j + off]) return 0;
  return 1;
}

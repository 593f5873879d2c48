/* strided.h - internal to the interpreter's kernels: the strided iterator
 * the elementwise and movement kernels share.
 *
 * The output is contiguous; each other operand has an element stride per
 * output axis (0 where it broadcasts).  tdk_run merges size-1 axes away and
 * adjacent axes that are contiguous for every operand, then hands each
 * innermost merged row to a typed row kernel (tdk_row_fn).  So same-shape
 * operands become one call over the whole tensor, a rank-0 operand is a
 * stride-0 scalar, and [2,3,4]+[4] is 6 rows of 4.
 */
#ifndef TD_INTERP_STRIDED_H
#define TD_INTERP_STRIDED_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor.h"

/* A row kernel: n output elements at o (contiguous); input j starts at
 * in[j] and advances st[j] elements per output element. */
typedef void (*tdk_row_fn)(int64_t n, void *o, const void *const *in, const int64_t *st);

#define TDK_MAX_OPS 4   /* the output and at most 3 inputs */

typedef struct tdk_operand {
  char *p;                  /* element 0 */
  size_t es;                /* element size in bytes */
  int64_t st[TD_MAX_RANK];  /* element stride per output axis */
} tdk_operand;

/* Contiguous C-order strides of a shape. */
void tdk_contig_strides(int rank, const int64_t *shape, int64_t *st);

/* Merges size-1 axes away and adjacent axes contiguous for every operand.
 * Returns the new rank; dim and st receive the merged axes. */
int tdk_coalesce(int rank, const int64_t *shape, int nops, const tdk_operand *ops, int64_t *dim,
                 int64_t st[][TD_MAX_RANK]);

/* Calls fn once per innermost row of `shape`; ops[0] is the output. */
void tdk_run(tdk_row_fn fn, int rank, const int64_t *shape, int nops, const tdk_operand *ops);

/* Operand for tensor t read broadcast into an output of rank r / shape. */
void tdk_bcast_operand(const td_tensor *t, int r, const int64_t *shape, tdk_operand *op);

/* 1 when t broadcasts NumPy-style to out's shape. */
int tdk_can_broadcast(const td_tensor *t, const td_tensor *out);

#endif

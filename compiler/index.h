/* index.h - the index layer the code generators share: which index of an
 * operand a node reads at a given index of its own shape.
 *
 * Both code generators (the CPU one, compiler/codegen_expr.c, building
 * libgccjit rvalues; the CUDA one, gpu/codegen_cuda_expr.c, building C source
 * text) evaluate a node at an index by evaluating its inputs at derived
 * indices: broadcast (size-1 axes read index 0), permute (axes swapped),
 * slice (start + i * step), reshape (axes regrouped: linearised over a group
 * of output axes, split again over the matching input axes).  That mapping
 * is written here once, over an abstract index expression (a `void *`: a
 * gcc_jit_rvalue * in the CPU generator, a const char * for CUDA) built
 * through a small table of builders each backend supplies (td_ix_ops).
 * The layer calls the builders in a fixed order, the order the generators
 * always used, so the generated code (and the CPU compile cache's key) does
 * not depend on which generator-side code asks.
 *
 * Derived indices are memoised per (node, input slot, parent index) in a
 * table the backend owns (it resets and marks it per function/kernel).
 */
#ifndef TD_INDEX_H
#define TD_INDEX_H

#include "lang/ir.h"
#include "runtime/mem.h"

/* An index into a node's shape: one int64 expression per axis; zero[k]
 * marks an axis known to be 0 (broadcast), which address arithmetic skips.
 * v[k] is the backend's expression type (see the overview). */
typedef struct td_ix {
  int rank;
  void *v[TD_MAX_RANK];
  char zero[TD_MAX_RANK];
} td_ix;

/* Input `slot` of `node` evaluated at parent index `parent` -> child index. */
typedef struct td_ixmemo {
  int node, slot;
  const td_ix *parent;
  const td_ix *child;
} td_ixmemo;

/* The builders of one backend.  Every builder takes the backend's state
 * (td_ixgen.be) first; expressions are int64.  None may return NULL. */
typedef struct td_ix_ops {
  td_ix *(*ix_new)(void *be, int rank);   /* a fresh index (never NULL: a dummy on failure) */
  void *(*cst)(void *be, int64_t v);      /* the constant v */
  void *(*size)(void *be, td_dim d);      /* the value of a size (literal or symbolic) */
  void *(*add)(void *be, void *a, void *b);
  void *(*mul)(void *be, void *a, void *b);
  void *(*div)(void *be, void *a, void *b);  /* a, b >= 0 */
  void *(*mod)(void *be, void *a, void *b);  /* a, b >= 0 */
  void *(*keep)(void *be, void *a);       /* a held in a new local/temporary; returns its use */
  /* 1: also keep every derived coordinate (slice, split reshape axes) in a
   * temporary (CUDA: its expressions are text a second use would repeat);
   * 0: only a reshape's linear index is kept (gccjit rvalues are shared). */
  int keep_coords;
} td_ix_ops;

/* A backend's generator as the layer sees it, built on the fly by the
 * backend: its builders, its state, the graph the nodes belong to, the
 * arena of this compilation and its memo table (entries, count, capacity:
 * the backend's own fields, which it resets between functions). */
typedef struct td_ixgen {
  const td_ix_ops *ops;
  void *be;
  td_graph *g;
  td_arena *arena;
  td_ixmemo **memo;
  int *n_memo, *cap_memo;
} td_ixgen;

/* The index of input `slot` of node n evaluated at ix: ix itself when the
 * input has n's shape, else a new index (permute, slice, reshape,
 * broadcast).  Memoised: the same (n, slot, ix) returns the same pointer.
 * Emits code only through ops->keep (a reshape's linear index, and with
 * keep_coords the derived coordinates). */
const td_ix *td_ix_child(const td_ixgen *x, int n, int slot, const td_ix *ix);

/* The linear index of ix over axes [a, b) of node nd's shape (row-major,
 * skipping axes that are 0 or of size 1); NULL when it is constant 0.
 * With a = 0, b = rank: the element offset of a contiguous buffer. */
void *td_ix_lin(const td_ixgen *x, const td_node *nd, const td_ix *ix, int a, int b);

/* The index of node nd at a row of a reduction kernel over space[0..rank)
 * whose axes red_axes (a bit per axis) are reduced in each row: when nd's
 * shape broadcasts into the space, kept axes read the row's index and
 * reduced or size-1 axes 0; otherwise nd is squeeze-equal to a row and its
 * axes of size > 1 take the row's kept axes of size > 1 in order. */
td_ix *td_ix_row(const td_ixgen *x, const td_node *nd, const td_dim *space, int rank, uint32_t red_axes,
                 const td_ix *row);

/* Groups of axes of equal total size for a reshape of x into n; returns the
 * number of groups, or -1 when the sizes do not pair up (symbolic sizes
 * that neither divides).  Group g covers x's axes gi[g]..gi[g+1] and n's
 * axes go[g]..go[g+1]; size-1 axes join the following group.  gi and go
 * have room for TD_MAX_RANK + 2 entries. */
int td_reshape_groups(td_graph *g, const td_node *x, const td_node *n, int *gi, int *go);

#endif

/* index.c - the index layer shared by the CPU and CUDA code generators
 * (index.h): broadcast, permute, slice and reshape index mapping, reshape
 * axis grouping, (de)linearisation, memoised per (node, slot, parent); the
 * index of a node at a reduction kernel's row.
 *
 * The builders are called in the order the generators always called them
 * (a size is asked for before the operation that uses it; a slice's step
 * product before its start), since asking for a symbolic size can add it
 * to the backend's table of sizes and so number it.
 */
#include <string.h>

#include "compiler/index.h"

static void set_zero(const td_ixgen *x, td_ix *ix, int k) {
  ix->v[k] = x->ops->cst(x->be, 0);
  ix->zero[k] = 1;
}

/* e, or e kept in a temporary when the backend keeps derived coordinates. */
static void *coord(const td_ixgen *x, void *e) {
  return x->ops->keep_coords ? x->ops->keep(x->be, e) : e;
}

void *td_ix_lin(const td_ixgen *x, const td_node *nd, const td_ix *ix, int a, int b) {
  void *lin = NULL;
  td_dim stride = 1;
  for (int k = b - 1; k >= a; k--) {
    if (!ix->zero[k] && nd->shape[k] != 1) {
      void *t = ix->v[k];
      if (stride != 1) {
        void *s = x->ops->size(x->be, stride);
        t = x->ops->mul(x->be, t, s);
      }
      lin = lin ? x->ops->add(x->be, lin, t) : t;
    }
    stride = td_dim_mul(x->g, stride, nd->shape[k]);
  }
  return lin;
}

int td_reshape_groups(td_graph *g, const td_node *x, const td_node *n, int *gi, int *go) {
  int i = 0, o = 0, ng = 0;
  while (i < x->rank || o < n->rank) {
    gi[ng] = i;
    go[ng] = o;
    while (i < x->rank && x->shape[i] == 1) i++;
    while (o < n->rank && n->shape[o] == 1) o++;
    if (i == x->rank && o == n->rank) break;
    if (i == x->rank || o == n->rank) return -1;
    td_dim pin = x->shape[i++], pout = n->shape[o++], q;
    while (pin != pout) {
      if (td_dim_div(g, pout, pin, &q) == 0 && i < x->rank) pin = td_dim_mul(g, pin, x->shape[i++]);
      else if (td_dim_div(g, pin, pout, &q) == 0 && o < n->rank) pout = td_dim_mul(g, pout, n->shape[o++]);
      else return -1;
    }
    ng++;
  }
  gi[ng] = x->rank;
  go[ng] = n->rank;
  return ng;
}

/* ix of a node of shape `out` read as an operand of shape xn, broadcast:
 * ix itself when the shapes are equal. */
static const td_ix *bcast_ix(const td_ixgen *x, const td_node *xn, const td_node *out, const td_ix *ix) {
  int same = xn->rank == out->rank;
  for (int k = 0; same && k < xn->rank; k++) same = xn->shape[k] == out->shape[k];
  if (same) return ix;
  td_ix *r = x->ops->ix_new(x->be, xn->rank);
  int off = out->rank - xn->rank;
  for (int k = 0; k < xn->rank; k++) {
    if (xn->shape[k] == 1 && (k + off < 0 || out->shape[k + off] != 1)) set_zero(x, r, k);
    else {
      r->v[k] = ix->v[k + off];
      r->zero[k] = ix->zero[k + off];
    }
  }
  return r;
}

/* Splits lin (NULL: 0) over axes [a, b) of xn's shape into r: axis k gets
 * (lin / inner) % size, without the division by 1 or the modulo of the
 * outermost axis of size > 1. */
static void delin_part(const td_ixgen *x, const td_node *xn, void *lin, int a, int b, td_ix *r) {
  const td_ix_ops *o = x->ops;
  td_dim inner = 1;
  if (lin) lin = o->keep(x->be, lin);
  for (int k = b - 1; k >= a; k--) {
    if (!lin || xn->shape[k] == 1) {
      set_zero(x, r, k);
      continue;
    }
    void *v = lin;
    if (inner != 1) {
      void *s = o->size(x->be, inner);
      v = o->div(x->be, lin, s);
    }
    int first = 1;
    for (int j = a; j < k; j++) first &= xn->shape[j] == 1;
    if (!first) {
      void *s = o->size(x->be, xn->shape[k]);
      v = o->mod(x->be, v, s);
    }
    r->v[k] = coord(x, v);
    r->zero[k] = 0;
    inner = td_dim_mul(x->g, inner, xn->shape[k]);
  }
}

/* ix of reshape node n read as its input xn: per group of axes, n's index
 * linearised and split over xn's axes (the whole shape as one group when
 * the sizes do not pair up). */
static const td_ix *reshape_ix(const td_ixgen *x, const td_node *xn, const td_node *n, const td_ix *ix) {
  int gi[TD_MAX_RANK + 2], go[TD_MAX_RANK + 2];
  td_ix *r = x->ops->ix_new(x->be, xn->rank);
  for (int k = 0; k < xn->rank; k++) set_zero(x, r, k);
  int ng = td_reshape_groups(x->g, xn, n, gi, go);
  if (ng < 0) {
    delin_part(x, xn, td_ix_lin(x, n, ix, 0, n->rank), 0, xn->rank, r);
    return r;
  }
  for (int g = 0; g < ng; g++) delin_part(x, xn, td_ix_lin(x, n, ix, go[g], go[g + 1]), gi[g], gi[g + 1], r);
  return r;
}

static const td_ix *permute_ix(const td_ixgen *x, const td_node *xn, const td_node *nd, const td_ix *ix) {
  td_ix *w = x->ops->ix_new(x->be, xn->rank);
  for (int i = 0; i < nd->rank; i++) {
    w->v[nd->attr.perm[i]] = ix->v[i];
    w->zero[nd->attr.perm[i]] = ix->zero[i];
  }
  return w;
}

/* Slice: input index start + i * step on every axis. */
static const td_ix *slice_ix(const td_ixgen *x, const td_node *xn, const td_node *nd, const td_ix *ix) {
  const td_ix_ops *o = x->ops;
  td_ix *w = o->ix_new(x->be, xn->rank);
  for (int k = 0; k < nd->rank; k++) {
    void *s = o->mul(x->be, ix->v[k], o->cst(x->be, nd->attr.step[k]));
    void *start = o->size(x->be, nd->attr.start[k]);
    w->v[k] = coord(x, o->add(x->be, start, s));
    w->zero[k] = 0;
  }
  return w;
}

td_ix *td_ix_row(const td_ixgen *x, const td_node *nd, const td_dim *space, int rank, uint32_t red_axes,
                 const td_ix *row) {
  td_ix *ix = x->ops->ix_new(x->be, nd->rank);
  if (nd->rank <= rank) {
    /* right-aligned as a broadcast operand; but a value that varies along
     * a reduced axis cannot be one value per row, so it is the squeezed
     * row instead (a [3] of space [3, 3] reduced over axis 1 is axis 0,
     * not axis 1; so is the [1, 3] of a reshape of that row) */
    int off = rank - nd->rank, ok = 1;
    for (int d = 0; d < nd->rank; d++)
      ok &= nd->shape[d] == 1 || (nd->shape[d] == space[d + off] && !(red_axes >> (d + off) & 1));
    if (ok) {
      for (int d = 0; d < nd->rank; d++) {
        int a = d + off, z = nd->shape[d] == 1 || (red_axes >> a & 1);
        ix->v[d] = z ? x->ops->cst(x->be, 0) : row->v[a];
        ix->zero[d] = (char)(z || row->zero[a]);
      }
      return ix;
    }
  }
  /* a squeezed row shape: match the non-1 axes in order */
  int a = 0;
  for (int d = 0; d < nd->rank; d++) {
    set_zero(x, ix, d);
    if (nd->shape[d] == 1) continue;
    while (a < rank && (space[a] == 1 || (red_axes >> a & 1))) a++;
    if (a < rank) {
      ix->v[d] = row->v[a];
      ix->zero[d] = row->zero[a];
      a++;
    }
  }
  return ix;
}

/* Records (n, slot, ix) -> r; when the table cannot grow, r is simply not
 * memoised (it is computed again next time). */
static void memo_push(const td_ixgen *x, int n, int slot, const td_ix *ix, const td_ix *r) {
  if (*x->n_memo == *x->cap_memo) {
    int cap = *x->cap_memo ? 2 * *x->cap_memo : 64;
    td_ixmemo *m = td_arena_alloc(x->arena, (size_t)cap * sizeof *m);
    if (!m) return;
    if (*x->n_memo) memcpy(m, *x->memo, (size_t)*x->n_memo * sizeof *m);
    *x->memo = m;
    *x->cap_memo = cap;
  }
  (*x->memo)[(*x->n_memo)++] = (td_ixmemo){n, slot, ix, r};
}

const td_ix *td_ix_child(const td_ixgen *x, int n, int slot, const td_ix *ix) {
  for (int i = *x->n_memo - 1; i >= 0; i--) {
    const td_ixmemo *m = &(*x->memo)[i];
    if (m->node == n && m->slot == slot && m->parent == ix) return m->child;
  }
  const td_node *nd = &x->g->nodes[n], *xn = &x->g->nodes[nd->in[slot]];
  const td_ix *r;
  switch (nd->op) {
  case TD_IR_PERMUTE: r = permute_ix(x, xn, nd, ix); break;
  case TD_IR_SLICE: r = slice_ix(x, xn, nd, ix); break;
  case TD_IR_RESHAPE: r = reshape_ix(x, xn, nd, ix); break;
  default: r = bcast_ix(x, xn, nd, ix); break;
  }
  memo_push(x, n, slot, ix, r);
  return r;
}

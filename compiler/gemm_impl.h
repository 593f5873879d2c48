/* gemm_impl.h - internal: what the matmul generator's two files share
 * (codegen_gemm.c: the packed, dot and simple paths; codegen_prepack.c:
 * the path over a B packed once by the runtime), beside jit_impl.h.
 */
#ifndef TD_GEMM_IMPL_H
#define TD_GEMM_IMPL_H

#include "compiler/jit_impl.h"

#define MAX_MR 8
#define MAX_NV 2

/* The register tiling of the packed paths for an ISA level and dtype. */
typedef struct gemm_shape {
  int vl, nv, nr, mr, mc, kc;   /* lanes, vectors per tile row, NR, MR, MC, KC */
} gemm_shape;

/* What both paths need: sizes, operand pointers and batch offsets. */
typedef struct mm {
  const td_view *A, *B;
  td_dtype dt;
  gcc_jit_type *t, *tp;
  int r;                                /* output rank */
  gcc_jit_rvalue *M, *N, *K;
  gcc_jit_rvalue *aptr, *bptr, *aoff, *boff;
  gcc_jit_rvalue *sam, *sak, *sbk, *sbn; /* strides: A rows/cols, B rows/cols */
  cg_ix *ix;                            /* output index (batch axes filled) */
} mm;

typedef struct packed {
  gemm_shape s;
  gcc_jit_type *vt, *vtp;        /* vector type and pointer to it */
  gcc_jit_rvalue *cb, *bp, *ap;  /* scratch regions (element pointers) */
  gcc_jit_rvalue *np, *ldc;      /* B panels; C block row stride (np * NR) */
  gcc_jit_rvalue *mp;            /* A panels in the current row block */
  gcc_jit_rvalue *pc, *kc;       /* the current K block */
} packed;


/* ---- small helpers (int64 arithmetic, elements, locals) ---- */

static inline gcc_jit_rvalue *rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static inline gcc_jit_rvalue *ib(cg *c, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(c->ctx, NULL, op, c->t_i64, a, b);
}
static inline gcc_jit_rvalue *add(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) { return ib(c, GCC_JIT_BINARY_OP_PLUS, a, b); }
static inline gcc_jit_rvalue *mul(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) { return ib(c, GCC_JIT_BINARY_OP_MULT, a, b); }

static inline gcc_jit_rvalue *lt(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(c->ctx, NULL, GCC_JIT_COMPARISON_LT, a, b);
}

static inline gcc_jit_rvalue *imin(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return cg_select(c, lt(c, a, b), a, b, c->t_i64);
}

static inline gcc_jit_rvalue *elem(cg *c, gcc_jit_rvalue *base, gcc_jit_rvalue *off) {
  return rv(gcc_jit_context_new_array_access(c->ctx, NULL, base, off));
}

static inline gcc_jit_lvalue *at(cg *c, gcc_jit_rvalue *base, gcc_jit_rvalue *off) {
  return gcc_jit_context_new_array_access(c->ctx, NULL, base, off);
}

static inline gcc_jit_rvalue *keep_i(cg *c, gcc_jit_rvalue *v, const char *hint) {
  gcc_jit_lvalue *l = cg_local(c, c->t_i64, hint);
  cg_assign(c, l, v);
  return rv(l);
}

/* (a + b - 1) / b for positive b */
static inline gcc_jit_rvalue *ceil_div(cg *c, gcc_jit_rvalue *a, int64_t b) {
  return ib(c, GCC_JIT_BINARY_OP_DIVIDE, add(c, a, cg_i64(c, b - 1)), cg_i64(c, b));
}

/* if (cond) { ... } : opens the then-block; if_close continues after it. */
typedef struct cif {
  gcc_jit_block *join;
} cif;

static inline void if_open(cg *c, cif *f, gcc_jit_rvalue *cond) {
  gcc_jit_block *then = cg_block(c, "if");
  f->join = cg_block(c, "fi");
  gcc_jit_block_end_with_conditional(c->blk, NULL, cond, then, f->join);
  c->blk = then;
}

static inline void if_close(cg *c, cif *f) {
  gcc_jit_block_end_with_jump(c->blk, NULL, f->join);
  c->blk = f->join;
}

/* ---- codegen_gemm.c ---- */

/* Element offset of a view at batch index bix (output axes), in a local. */
gcc_jit_rvalue *cg_gemm_view_base(cg *c, const td_view *v, const cg_ix *bix, int out_rank);
/* Stores value(root, (batch, i, j)) with acc standing for the matmul;
 * -1 after an error. */
int cg_gemm_epilogue(cg *c, cg_ix *ix, int r, gcc_jit_rvalue *i, gcc_jit_rvalue *j, gcc_jit_rvalue *acc);
/* The vector at base[off]. */
gcc_jit_lvalue *cg_gemm_vec_at(cg *c, packed *P, gcc_jit_rvalue *base, gcc_jit_rvalue *off);
/* b[v] = the NV vectors of packed B at bp[bk ...]. */
void cg_gemm_load_b(cg *c, packed *P, gcc_jit_rvalue *bk, gcc_jit_lvalue **b);
/* accr[v] += broadcast(*a_elem) * b[v] for the NV vectors of a tile row. */
void cg_gemm_bcast_fma(cg *c, mm *m, packed *P, gcc_jit_lvalue **accr, gcc_jit_lvalue **b, gcc_jit_lvalue *a_elem);
/* The tiling, vector types and C block stride of m's packed path. */
void cg_gemm_packed_init(cg *c, mm *m, packed *P);
/* The packed path for rows lo .. hi (with pb: over that prepacked B). */
int cg_gemm_packed_rows(cg *c, mm *m, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, gcc_jit_rvalue *pb);
/* The packed path of a 2-D matmul as a function of its own, called for
 * rows lo .. hi (prepacked: over the prepacked B). */
int cg_gemm_outlined(cg *c, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, int prepacked);

/* ---- codegen_prepack.c ---- */

/* The prepacked B of this kernel: bufs[n_bufs + kernel index]. */
gcc_jit_rvalue *cg_gemm_prepacked_ptr(cg *c, mm *m);
/* The kernel's rows over the prepacked B (tdc_kinfo.pack). */
int cg_gemm_prepacked(cg *c, mm *m);

#endif

/* codegen_cuda_impl.h - internal: the state shared by the CUDA code
 * generator's files, which mirror the CPU generator's (compiler/):
 *
 *   codegen_cuda.c         building blocks (text, locals, literals, sizes,
 *                          buffers, index loops), POINTWISE kernels, the
 *                          module and its launch table (as codegen_cpu.c);
 *   codegen_cuda_expr.c    the value of a node at an index: this backend's
 *                          pieces of the shared evaluator (compiler/kexpr.h)
 *                          over C source text (as codegen_expr.c);
 *   codegen_cuda_reduce.c  REDUCE (row) kernels (as codegen_reduce.c);
 *   codegen_cuda_gemm.c    MATMUL kernels: shared-memory tiles, TF32 and
 *                          f16/bf16 tensor cores (as codegen_gemm.c).
 *
 * Every value and index coordinate is C source text (a const char *,
 * stored as void * where the shared layers hold it: cu_ixv), allocated in
 * the compilation's arena.  After a failure (c->failed, the error in
 * c->err) the builders keep returning harmless text and the kernel is
 * dropped.
 */
#ifndef TD_CODEGEN_CUDA_IMPL_H
#define TD_CODEGEN_CUDA_IMPL_H

#include <stdint.h>

#include "gpu/codegen_cuda.h"
#include "compiler/index.h"
#include "compiler/kexpr.h"
#include "compiler/plan_impl.h"
#include "compiler/rowplan.h"
#include "runtime/mem.h"

/* A growable string. */
typedef struct sbuf {
  char *s;
  size_t n, cap;
  int oom;
} sbuf;

/* An index (the index layer's td_ix, compiler/index.h): v[k] is C source
 * text, a const char * stored as void * (cu_ixv). */
typedef td_ix cx_ix;

typedef struct cx {
  const td_plan *p;
  td_graph *g;
  td_err *err;
  td_arena *a;
  cx_ix spare_ix;            /* what cu_ix_new returns when memory runs out (failed is set) */
  td_cuda_dimref *dims;
  int n_dims, cap_dims;
  const td_kernel *k;
  const char *prefix;          /* of the kernels' names: "" for an entry, "s3_" for scan kernel 3's body */
  sbuf body;
  int indent;
  int nv;                      /* locals made so far in this kernel */
  char *in_k;                  /* per node: evaluated inside this kernel */
  void **red_val;              /* per node: a finished reduction of this kernel (text) */
  const char *mm_acc;          /* matmul epilogue: the accumulated element */
  unsigned char *buf_used;     /* per plan buffer: referenced by this kernel */
  unsigned char *dim_used;     /* per dims entry: referenced by this kernel */
  td_kxmemo *memo;             /* the shared evaluator's value memo (kexpr.h) */
  int n_memo, cap_memo;
  td_ixmemo *ixmemo;
  int n_ixmemo, cap_ixmemo;
  int failed;
  /* vectorised pointwise kernels: loads are components of 16-byte vectors */
  int vec_lane;                /* -1: scalar code; else the lane (0..3) */
  int vec;                     /* the current kernel has a vector loop */
  int tf32;                    /* f32 matmuls on TF32 tensor cores (mma.sync) */
  td_dtype *mm_half;           /* per kernel: a matmul reading both operands as this half type
                                  (f16/bf16 tensor cores), else TD_F32 */
  unsigned char *elided;       /* per kernel: a widening CAST kernel no one needs (its readers
                                  read the half buffer directly) */
  int cols;                    /* the current REDUCE kernel: a thread per row */
  unsigned char *vec_loaded;   /* per plan buffer: vector loaded this iteration */
} cx;

/* C type names per dtype: value type, storage type, and the unsigned type
 * integer arithmetic wraps in.  f16 and bf16 are uint16_t bit patterns:
 * after the legalize pass only CASTs compute on them. */
extern const char *const cu_vtn[TD_DTYPE_COUNT], *const cu_stn[TD_DTYPE_COUNT], *const cu_utn[TD_DTYPE_COUNT];
/* The components of a 16-byte vector. */
extern const char *const cu_lane_name[4];

static inline const td_node *ND(const cx *c, int n) { return &c->g->nodes[n]; }
/* Text as an index coordinate or evaluator value (they hold void *; the
 * text is never written through it), and coordinate k of ix as text. */
static inline void *cu_ixv(const char *s) { return (void *)(uintptr_t)s; }
static inline const char *ixs(const cx_ix *ix, int k) { return ix->v[k]; }

/* ---- codegen_cuda.c: building blocks ---- */

/* Formatted text in the arena ("0" after running out of memory). */
const char *cu_fmt(cx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line of the kernel body at the current indentation. */
void cu_line(cx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `head {` (a bare `{` for ""), indented; cu_close ends it. */
void cu_open(cx *c, const char *head);
void cu_close(cx *c);
/* A new local of type t holding expr; returns its name. */
const char *cu_keep(cx *c, const char *t, const char *expr);
/* Records "kernel NAME: msg" (the first failure wins); returns -1. */
int cu_fail_msg(cx *c, const char *msg);
/* Records fmt with the kernel's name, a and n (the first failure wins); -1. */
int cu_fail(cx *c, const char *fmt, const char *a, int n);
/* Literals: floats of dt (NaN, inf as bit patterns), ints and bools of dt,
 * and any dtype (halves as their rounded bit pattern). */
const char *cu_flit(cx *c, td_dtype dt, double v);
const char *cu_ilit(cx *c, td_dtype dt, int64_t v);
const char *cu_lit(cx *c, td_dtype dt, double f, int64_t i);
/* Index of a dims-table entry (a size, or the stream of random node
 * rand_node), added when new. */
int cu_dim_entry(cx *c, td_dim d, int rand_node);
/* The value of a size: a literal, or d<i> loaded from dv. */
const char *cu_dim(cx *c, td_dim d);
/* The name of node's buffer in this kernel (b<i>), marking it used. */
const char *cu_bufname(cx *c, int node);
/* A new index of the given rank, all axes the constant 0. */
cx_ix *cu_ix_new(cx *c, int rank);
/* Declares the index variables <pfx><axis> of the axes in mask (size-1 axes
 * are the constant 0) from the flat index `flat` over those axes. */
void cu_delinearize(cx *c, const char *flat, const td_dim *shape, int rank, uint32_t mask, const char *pfx,
                    cx_ix *ix);
/* Product of shape over the axes in mask, as a td_dim. */
td_dim cu_extent(cx *c, const td_dim *shape, int rank, uint32_t mask);

/* ---- codegen_cuda_expr.c: values ---- */

/* Name of a local (or a literal) holding node n's value at ix; NULL after
 * a failure. */
const char *cu_ev(cx *c, int n, const cx_ix *ix);
/* Stores v (node n's value type) at ix of n's buffer. */
void cu_store(cx *c, int n, const cx_ix *ix, const char *v);
/* a of dtype from as dtype to (the shared rules, kexpr.h). */
const char *cu_convert(cx *c, const char *a, td_dtype from, td_dtype to);
/* The element offset of ix in node n's buffer. */
const char *cu_offset(cx *c, int n, const cx_ix *ix);
/* This generator as the index layer sees it (it points at c). */
td_ixgen cu_ixgen(cx *c);
/* This generator as the shared evaluator sees it (it points at c). */
td_kxgen cu_kxgen(cx *c);
/* Memo scopes (values computed in a loop body or branch are forgotten). */
td_kxmark cu_mark(cx *c);
void cu_release(cx *c, td_kxmark m);

/* ---- codegen_cuda_reduce.c ---- */
/* The body of a REDUCE kernel (c->k). */
int cu_emit_reduce(cx *c);

/* ---- codegen_cuda_gemm.c ---- */
/* The half type both operands of matmul kernel mk are read as on tensor
 * cores (two widened f16 or two widened bf16 buffers), else TD_F32. */
td_dtype cu_half_matmul(const td_plan *p, int mk);
/* Is pointwise kernel ki a widening CAST whose f32 copy no one needs? */
int cu_elidable(const td_plan *p, const td_dtype *mm_half, int ki);
/* The body of a MATMUL kernel (c->k). */
int cu_emit_matmul(cx *c);
/* Launch sizes of a matmul kernel. */
void cu_matmul_info(cx *c, const td_kernel *k, td_cuda_kernel *info);

#endif

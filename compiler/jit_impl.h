/* jit_impl.h - internal: the state shared by the libgccjit code generator's
 * files (codegen_cpu.c: functions, loops and kernels; codegen_expr.c: this
 * backend's pieces of the value of a node at an index, every op's formula;
 * codegen_reduce.c: row kernels; codegen_gemm.c and codegen_prepack.c:
 * matmul kernels, gemm_impl.h).  Index mapping is index.h's layer and the
 * walk over a kernel's ops kexpr.h's evaluator, both shared with the CUDA
 * generator.
 *
 * Generated kernels have the C signature (tdc_kernel_fn)
 *   void kN(void **bufs, const int64_t *dv, void *scratch, int32_t *status,
 *           void *const *rt, int64_t lo, int64_t hi)
 * bufs: one pointer per plan buffer (plan->bufs order); dv: the runtime
 * values of the symbolic sizes the kernels use (cg.dims order, evaluated by
 * compiled.c before each call; random-op streams are in it too); scratch:
 * this thread's work memory (matmul panels); status: set to 1 + the node
 * id of a gather that saw an out-of-range index, or under TDSL_DEBUG=bounds
 * to -(1 + the node id) of an element accessed outside its buffer; rt: the runtime functions
 * generated code calls (tdc_runtime_table: no absolute addresses are baked
 * into the code); [lo, hi): the range of the kernel's parallel loop this
 * call covers (tdc_kinfo), ignored by kernels without one.
 */
#ifndef TD_JIT_IMPL_H
#define TD_JIT_IMPL_H

#include <libgccjit.h>

#include "compiler/index.h"
#include "compiler/kexpr.h"
#include "compiler/plan_impl.h"
#include "artifact/prepack.h"

/* An index into a node's shape (index.h's td_ix): one int64 rvalue per
 * axis, v[k] a gcc_jit_rvalue *; zero[k] marks an axis known to be 0
 * (broadcast), which address arithmetic skips. */
typedef td_ix cg_ix;

/* A value computed in the current function: node at index ix, a
 * gcc_jit_rvalue * (the shared evaluator's memo, kexpr.h). */
typedef td_kxmemo cg_memo;

/* Input `slot` of `node` evaluated at parent index `parent` -> child index
 * (the index layer's memo, index.h). */
typedef td_ixmemo cg_ixmemo;

/* An entry of the runtime table dv: a symbolic size, or the stream of a
 * random node (mixed with the call index at run time). */
typedef struct cg_dimref {
  td_dim dim;        /* when rand_node < 0 */
  int rand_node;     /* >= 0: the stream of this RAND/RANDN node */
} cg_dimref;

/* An entry of a shared kernel body's own bufs or dv table (codegen_cpu.c):
 * bufs: what = a plan buffer (n_bufs + kernel: that kernel's prepacked B),
 * node = the node it was asked for; dv: what = an entry of the runtime
 * table, or -1 for the status code of node (1 + its id). */
typedef struct cg_lslot {
  int what, node;
} cg_lslot;

typedef struct cg {
  gcc_jit_context *ctx;
  const td_plan *p;
  td_graph *g;
  td_err *err;
  td_arena *arena;                   /* scratch of this compilation */
  /* types */
  gcc_jit_type *t_void, *t_bool, *t_u8, *t_i32, *t_i64, *t_u64, *t_u32, *t_f32, *t_f64;
  gcc_jit_type *t_vp, *t_vpp, *t_i64p, *t_i32p;
  gcc_jit_type *vt[TD_DTYPE_COUNT];  /* value types (bool is _Bool) */
  gcc_jit_type *st[TD_DTYPE_COUNT];  /* storage types (bool is uint8_t) */
  /* the runtime table */
  cg_dimref *dims;
  int n_dims, cap_dims;
  /* the function being built */
  const td_kernel *k;
  int kidx;
  gcc_jit_function *fn;
  gcc_jit_block *entry, *blk;        /* entry: hoisted loads; blk: where code goes */
  gcc_jit_rvalue *p_bufs, *p_dv, *p_scratch, *p_status, *p_rt, *p_lo, *p_hi;
  int par_axis;                      /* axis of the kernel space run over [lo, hi), or -1 */
  int bounds;                        /* TDSL_DEBUG=bounds: element accesses checked (cg_element) */
  cg_ix spare_ix;                    /* what cg_ix_new returns when memory runs out (the error is set) */
  gcc_jit_lvalue **bufptr;           /* per plan buffer: typed pointer local, lazily */
  gcc_jit_lvalue **dimloc;           /* per dims entry: local in this function, lazily */
  int n_dimloc;
  cg_memo *memo;
  int n_memo, cap_memo;
  cg_ixmemo *ixmemo;
  int n_ixmemo, cap_ixmemo;
  void **red_val;                    /* per node: value (gcc_jit_rvalue *) of a reduction of this kernel */
  gcc_jit_rvalue *mm_acc;            /* matmul: the accumulated element of the epilogue */
  int n_names;
  char *in_k;                        /* per node: evaluated inside the current kernel */
  gcc_jit_lvalue **hoisted;          /* per node: its value computed once in the kernel's entry block */
  int isa;                           /* 0: SSE (x86-64-v2), 1: AVX2 (v3), 2: AVX-512 (v4) */
  /* shared GEMM functions of this context, per dtype (codegen_gemm.c) */
  gcc_jit_function *gemm_pack[TD_DTYPE_COUNT], *gemm_core[TD_DTYPE_COUNT];
  const struct tdc_kinfo *kinfo;     /* the current kernel's (prepacked B, column blocks) */
  /* A body shared by the kernels of a group (kernel_key.c): bufs and dv are
   * then its own short tables, which each kernel's wrapper fills */
  int local;
  cg_lslot *lbufs, *ldims;
  int n_lbufs, cap_lbufs, n_ldims, cap_ldims;
} cg;

/* ---- codegen_cpu.c: building blocks ---- */

/* A part of a kernel emitted as a function of its own (same signature,
 * INTERNAL; kept out of line by -fno-inline-functions-called-once): the
 * kernel's per-function state is set aside between begin and end, so the
 * part hoists its own loads.  Used for code a kernel rarely runs whose
 * locals would otherwise cost every call (a realigned frame, saved
 * registers): the packed GEMM path of a small-matrix kernel. */
typedef struct cg_outline {
  gcc_jit_function *fn;
  gcc_jit_block *entry, *blk, *start;
  gcc_jit_rvalue *params[7];
  gcc_jit_lvalue **bufptr, **dimloc, **hoisted;
  int n_dims;
  cg_memo *memo;
  int n_memo, cap_memo;
  cg_ixmemo *ixmemo;
  int n_ixmemo, cap_ixmemo;
  gcc_jit_rvalue *mm_acc;
} cg_outline;
/* Starts <kernel>_<suffix>: code now goes into it.  -1 when out of memory. */
int cg_outline_begin(cg *c, cg_outline *o, const char *suffix);
/* Ends it and returns to the kernel (after cg_outline_begin's point). */
gcc_jit_function *cg_outline_end(cg *c, cg_outline *o);
/* Node n's element at ix in its buffer.  With c->bounds, an offset outside
 * the buffer sets *status to -(1 + n) and the access goes to a local
 * instead (TDSL_DEBUG=bounds; ASan does not see into generated code). */
gcc_jit_lvalue *cg_element(cg *c, int n, const cg_ix *ix);
/* Whether TDSL_DEBUG (a comma-separated list) asks for "bounds". */
int tdc_debug_bounds(void);

/* In the kernel: f(bufs, dv, scratch, status, rt, lo, hi). */
void cg_outline_call(cg *c, const cg_outline *o, gcc_jit_function *f, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi);
typedef struct cloop {
  gcc_jit_lvalue *i;
  gcc_jit_block *cond, *after;
  int64_t step;
} cloop;
/* `for (i = 0; i < n; i++)`: opens the loop (code then goes into its body)
 * and returns i; cg_loop_close ends the body and continues after it. */
gcc_jit_rvalue *cg_loop_open(cg *c, cloop *L, gcc_jit_rvalue *n);
/* for (i = lo; i < hi; i += step) */
gcc_jit_rvalue *cg_loop_range(cg *c, cloop *L, gcc_jit_rvalue *lo, gcc_jit_rvalue *hi, int64_t step);
void cg_loop_close(cg *c, cloop *L);
/* Loops over the axes of shape selected by mask (bit k = axis k), outer to
 * inner, writing the loop variables into ix (size-1 axes become constant
 * 0); returns the number of loops opened, for cg_nest_close. */
int cg_nest_open(cg *c, cloop *L, const td_dim *shape, int rank, uint32_t mask, cg_ix *ix);
void cg_nest_close(cg *c, cloop *L, int n);
/* -1 when an error was recorded in c->err, else 0. */
int cg_failed(const cg *c);
gcc_jit_lvalue *cg_local(cg *c, gcc_jit_type *t, const char *hint);
gcc_jit_block *cg_block(cg *c, const char *hint);
void cg_assign(cg *c, gcc_jit_lvalue *l, gcc_jit_rvalue *r);
gcc_jit_rvalue *cg_i64(cg *c, int64_t v);
/* The runtime value of a size (a constant, or a local loaded from dv). */
gcc_jit_rvalue *cg_dim(cg *c, td_dim d);
/* The stream of random node n for this call (from dv). */
gcc_jit_rvalue *cg_rand_stream(cg *c, int n);
/* A pointer to node n's buffer, typed by its storage type. */
gcc_jit_rvalue *cg_bufptr(cg *c, int node);
/* The index in bufs of plan buffer bi (asked for node n; -1: none), or
 * -1 when memory runs out (the error is set). */
int cg_buf_index(cg *c, int bi, int node);
/* The status a kernel reports for node n: 1 + its id (neg: the negation),
 * an int32 rvalue. */
gcc_jit_rvalue *cg_status_code(cg *c, int n, int neg);
/* New index objects (owned by the compilation's arena). */
cg_ix *cg_ix_new(cg *c, int rank);
/* cond ? a : b of type t (through a branch GCC if-converts). */
gcc_jit_rvalue *cg_select(cg *c, gcc_jit_rvalue *cond, gcc_jit_rvalue *a, gcc_jit_rvalue *b,
                          gcc_jit_type *t);
/* Memo scopes: values computed inside a loop body or a branch are
 * forgotten when it ends. */
long cg_memo_mark(const cg *c);
void cg_memo_release(cg *c, long mark);


/* Integer power with wrap-around (scalar.h's td_pow), for generated code. */
int32_t tdc_pow_i32(int32_t a, int32_t b);
int64_t tdc_pow_i64(int64_t a, int64_t b);

typedef void (*tdc_kernel_fn)(void **bufs, const int64_t *dv, void *scratch, int32_t *status,
                              void *const *rt, int64_t lo, int64_t hi);

/* Runtime functions reachable from generated code, by index in rt. */
enum { TDC_RT_RAND_UNIFORM, TDC_RT_RAND_NORMAL, TDC_RT_POW_I32, TDC_RT_POW_I64, TDC_RT_COUNT };
void *const *tdc_runtime_table(void);
/* A call of runtime function `which` (type ret(args...)). */
gcc_jit_rvalue *cg_rt_call(cg *c, int which, gcc_jit_type *ret, int n, gcc_jit_type **types,
                           gcc_jit_rvalue **args);

/* How a kernel splits across threads: the extent of its parallel loop
 * (0: not parallel) and whether it is the rows of a matmul. */
typedef struct tdc_kinfo {
  td_dim extent;
  int parallel;
  /* A matmul with a prepacked B (pack.nr > 0): the kernel reads the packed
   * copy at bufs[plan n_bufs + kernel index], which the runtime fills
   * (prepack.h); its parallel range runs over rows x cols column blocks
   * (one per NR-column panel), row-major: extent = M * cols. */
  tdc_prepack_desc pack;
  int64_t cols;
} tdc_kinfo;

/* Builds every kernel of p into a new gccjit context (the caller compiles
 * and releases it); *dims receives the runtime table's entries (in a),
 * info[k] kernel k's parallel loop.  NULL with err filled on failure. */
gcc_jit_context *tdc_codegen(const td_plan *p, const char *march, int opt, td_arena *a,
                             cg_dimref **dims, int *n_dims, tdc_kinfo *info, td_err *err);

/* ---- plan_key.c ---- */
/* The compile cache's key for p (td_malloc'd text; NULL when out of
 * memory): everything the generator reads, after a header naming the
 * generator (version, TDSL_CODE_ID), march, opt and TDSL_DEBUG=bounds. */
char *tdc_plan_key(const td_plan *p, const char *march, int opt, int debug_bounds);

/* ---- codegen_reduce.c ---- */
/* The body of a REDUCE kernel (c->k). */
int tdc_emit_reduce(cg *c);
/* The index of node n (whose shape broadcasts into the kernel space, or is
 * squeeze-equal to a row) at the current row: kept axes from row, reduced
 * axes 0. */
cg_ix *cg_row_ix(cg *c, int n, const cg_ix *row);

/* ---- codegen_gemm.c ---- */
/* The body of a MATMUL kernel (c->k): a packed, register-tiled GEMM for
 * f32/f64 products large enough to pay for packing, a simple row loop
 * otherwise; the epilogue is applied to every element before it is stored. */
int tdc_emit_matmul(cg *c);
/* Bytes of scratch a matmul of M x K by K x N elements needs. */
size_t tdc_matmul_scratch(int64_t m, int64_t n, int64_t k);
/* NR, the width of the packed B panels, for ISA level isa (cg.isa). */
int tdc_gemm_nr(int isa, td_dtype dt);

/* ---- codegen_expr.c ---- */
/* The value of node n at index ix (in n's shape), as an rvalue of its value
 * type, emitted into c->blk.  NULL after an error (c->err filled). */
gcc_jit_rvalue *cg_eval(cg *c, int n, const cg_ix *ix);
/* Flat element offset of ix in a contiguous array of node n's shape. */
gcc_jit_rvalue *cg_offset(cg *c, int n, const cg_ix *ix);
/* This generator as the index layer (index.h) sees it: gccjit builders,
 * c's arena and index memo.  Build it where it is used (it points at c). */
td_ixgen cg_ixgen(cg *c);
/* This generator as the shared evaluator (kexpr.h) sees it: its pieces
 * over gccjit rvalues, c's kernel, memo and reductions.  Build it where it
 * is used (it points at c). */
td_kxgen cg_kxgen(cg *c);
/* Stores value v of node n's value type at index ix of n's buffer. */
void cg_store(cg *c, int n, const cg_ix *ix, gcc_jit_rvalue *v);
/* Converts between value types of dtypes (the interpreter's cast rules). */
gcc_jit_rvalue *cg_convert(cg *c, gcc_jit_rvalue *a, td_dtype from, td_dtype to);
/* Literal of dtype dt (f for floats, i for integers and bools). */
gcc_jit_rvalue *cg_const(cg *c, td_dtype dt, double f, int64_t i);
/* Calls a GCC builtin of one or two arguments ("__builtin_expf"). */
gcc_jit_rvalue *cg_builtin(cg *c, const char *name, gcc_jit_rvalue *a, gcc_jit_rvalue *b);

#endif

/* kexpr.h - the evaluator the code generators share: the value of one IR
 * node at one index of its shape, over a backend's values.
 *
 * Both code generators (the CPU one, compiler/codegen_expr.c, building
 * libgccjit rvalues; the CUDA one, gpu/codegen_cuda_expr.c, building C
 * source text) compute a kernel's fused ops the same way: a node outside
 * the kernel is a load from its buffer; a node inside is computed from its
 * inputs at derived indices (index.h), every computed value is kept in a
 * local and memoised by (node, index object).  That walk lives here once:
 * which op needs which inputs at which index, gather's and concat's index
 * decisions, arange's formula, and the dtype conversion rules (the
 * interpreter's: halves widen exactly to f32 and narrow with one rounding,
 * bool is 0/1 through int32, float -> int truncates and saturates).
 *
 * A backend supplies only what differs between the backends (td_kx_ops):
 * its literals, loads, random numbers, primitive conversions, branches for
 * gather and concat, and one emitter per elementwise op.  Each backend's
 * emitter table is generated from lang/ops.def (an X-macro), so an op added
 * there without a case fails to build; the CUDA backend spells an op with
 * ops.def's C column, which kexpr.c checks, at build time, that every
 * elementwise op has.
 *
 * Values are the backend's handles (void *: a gcc_jit_rvalue *, or a
 * const char * of C text); the evaluator never looks inside them.
 */
#ifndef TD_KEXPR_H
#define TD_KEXPR_H

#include "compiler/index.h"
#include "compiler/plan.h"

/* A value computed in the current function: node at index ix. */
typedef struct td_kxmemo {
  int node;
  const td_ix *ix;
  void *val;
} td_kxmemo;

/* The state of a branch of gather or concat between the backend's calls
 * (the evaluator keeps it on its stack; the fields are the backend's). */
typedef struct td_kxbranch {
  void *var;                 /* the local that receives the branch's value */
  void *join, *next;         /* blocks (CPU) */
  int last, opened;          /* concat: the last case is open; cases opened (CUDA) */
} td_kxbranch;

/* A backend's pieces.  Every function takes the backend's state first
 * (td_kxgen.ix.be).  A function returning a value returns NULL only after
 * recording an error (then failed() is nonzero). */
typedef struct td_kx_ops {
  const char *name;                                        /* "CPU", "CUDA": in messages */
  int (*failed)(void *be);                                 /* an error was recorded */
  void (*fail)(void *be, const char *msg);                 /* records msg (the first one wins) */
  void *(*load)(void *be, int n, const td_ix *ix);         /* node n's element at ix, from its buffer */
  void *(*keep)(void *be, td_dtype dt, void *v);           /* v held in a new local of dt's value type */
  void *(*lit)(void *be, td_dtype dt, double f, int64_t i);  /* a constant (f: floats, i: ints, bool) */
  /* element ix of RAND/RANDN node n; a seed input is read by the backend
   * itself, from its buffer (fuse.c materialises it), once per kernel */
  void *(*random)(void *be, int n, const td_ix *ix);
  void *(*isub)(void *be, void *a, void *b);                /* a - b, of int64 index expressions */
  /* elementwise op `op` of ops.def on a[0..arity), computed in dtype dt
   * (the node's; a comparison's operands' dtype).  NULL (without an
   * error) when the backend has no code for op at dt. */
  void *(*op)(void *be, td_op op, td_dtype dt, void *const *a);
  /* primitive conversions, which td_kx_convert combines */
  void *(*cast)(void *be, void *a, td_dtype from, td_dtype to);  /* C's conversion */
  void *(*f2i)(void *be, void *a, td_dtype from, td_dtype to);   /* float -> int: truncate, saturate, NaN -> 0 */
  void *(*half_to_f32)(void *be, void *a, td_dtype from);        /* exact */
  void *(*f64_to_f32_odd)(void *be, void *a);                    /* rounded to odd */
  void *(*f32_to_half)(void *be, void *a, td_dtype to);          /* rounded to nearest even */
  /* gather: iv (i64) is the index on the gathered axis, of size d;
   * take_begin wraps a negative iv, sets *status to n + 1 when it is out
   * of range, and opens the in-range branch; returns the index to read.
   * take_end closes the branch with v (node n's value, dtype dt) and
   * returns the node's value (0 where the index was out of range). */
  void *(*take_begin)(void *be, td_kxbranch *b, int n, td_dtype dt, void *iv, td_dim d);
  void *(*take_end)(void *be, td_kxbranch *b, void *v);
  /* concat: cat_begin prepares the result of dtype dt; cat_case opens the
   * branch of the next operand, taken when coord < lim (last: the last
   * operand, taken otherwise, lim unused); cat_value ends it with the operand's
   * value; cat_end returns the result. */
  void (*cat_begin)(void *be, td_kxbranch *b, td_dtype dt);
  void (*cat_case)(void *be, td_kxbranch *b, void *coord, td_dim lim, int last);
  void (*cat_value)(void *be, td_kxbranch *b, void *v);
  void *(*cat_end)(void *be, td_kxbranch *b);
} td_kx_ops;

/* A backend's generator as the evaluator sees it, built on the fly by the
 * backend (as td_ixgen): the index layer over the same backend (ix.be is
 * the backend's state), the kernel being generated, which nodes it
 * computes (in_k), the finished reductions of a row kernel (red_val, per
 * node, NULL where none), a matmul epilogue's accumulated element (mm_acc,
 * the value of k->matmul; NULL elsewhere) and the value memo (the
 * backend's fields, which it resets per function). */
typedef struct td_kxgen {
  const td_kx_ops *ops;
  td_ixgen ix;
  const td_kernel *k;
  const char *in_k;
  void *const *red_val;
  void *mm_acc;
  td_kxmemo **memo;
  int *n_memo, *cap_memo;
} td_kxgen;

/* The value of node n at index ix (in n's shape), emitted through the
 * backend.  NULL after an error (recorded through ops->fail). */
void *td_kx_eval(const td_kxgen *x, int n, const td_ix *ix);

/* a, of dtype from, as a value of dtype to (the interpreter's rules). */
void *td_kx_convert(const td_kxgen *x, void *a, td_dtype from, td_dtype to);

/* ---- the update rules of reductions (both backends' row kernels) ----
 * Values of the reduction's input dtype dt (accumulators of rowplan.h's
 * acc_dt); the results are bools or accumulator values, emitted through
 * the backend's op emitters. */

/* The new value of a sum's or product's accumulator acc (acc_dt) after
 * element v (dt): floats widened by a C conversion, ints converted. */
void *td_kx_fold(const td_kxgen *x, td_op red, td_dtype dt, td_dtype acc_dt, void *acc, void *v);
/* "v better than best" for max/min (a NaN wins) and argmax/argmin (a NaN
 * beats a non-NaN only, so the first NaN is kept). */
void *td_kx_better(const td_kxgen *x, td_op red, td_dtype dt, void *v, void *best);
/* Does element v (at some index) replace an arg reduction's (best, idx):
 * nothing seen yet (idx < 0), or v is better? */
void *td_kx_arg_takes(const td_kxgen *x, td_op red, td_dtype dt, void *v, void *best, void *idx);
/* Does partial result (bv, bi) replace (av, ai) when two parts of an arg
 * reduction combine: b has one (bi >= 0) and a has none, or b's is
 * better, or they tie (equal, or both NaN) and b's index is smaller? */
void *td_kx_arg_wins(const td_kxgen *x, td_op red, td_dtype dt, void *av, void *ai, void *bv, void *bi);

/* Memo scopes: values computed inside a loop body or a branch are
 * forgotten when it ends (both the value and the index memo). */
typedef struct td_kxmark {
  int memo, ixmemo;
} td_kxmark;
td_kxmark td_kx_mark(const td_kxgen *x);
void td_kx_release(const td_kxgen *x, td_kxmark m);

#endif

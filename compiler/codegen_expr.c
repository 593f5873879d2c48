/* codegen_expr.c - the value of one IR node at one index, in libgccjit:
 * the CPU backend's pieces of the shared evaluator (kexpr.h).
 *
 * cg_eval(n, ix) returns node n's value at index ix of its shape, emitting
 * the code into the current block.  The walk (a load outside the kernel;
 * elementwise inputs at their broadcast indices, movement, concat, gather,
 * creation inside it; the memo; the conversion rules) is kexpr.c's, shared
 * with the CUDA generator; the index mappings are index.c's.  This file
 * supplies what is particular to gccjit rvalues:
 *
 *   op_NAME       one emitter per elementwise op of lang/ops.def (a table
 *                 generated from it: an op without its emitter does not
 *                 build);
 *   conversions   f16/bf16 bit arithmetic, saturating float -> int;
 *   loads         through cg_element (TDSL_DEBUG=bounds checks);
 *   branches      gather's bounds check and concat's cases as blocks;
 *   random        rand as Philox4x32-10 inline (vectorisable), randn
 *                 through the runtime's td_rand_normal, both at the
 *                 element's flat index.
 *
 * Every computed value is kept in a local and memoised by (node, index
 * object); derived indices are memoised too, so a value read twice at the
 * same index (x * x, a shared subexpression) is computed once.  The op
 * formulas follow runtime/scalar.h and interp/elementwise.c exactly (NaN
 * propagation of min/max/relu, Python's floor division and modulo, wrap-
 * around integers under -fwrapv, saturating float-to-int casts, the f32
 * transcendentals operation for operation), and the context is compiled
 * with -ffp-contract=off, so every elementwise value is eager mode's bit
 * for bit, wherever and however often a kernel computes it.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/half.h"
#include "runtime/scalar.h"
#include "compiler/jit_impl.h"
#include "runtime/phase_time.h"

static const td_node *ND(const cg *c, int n) { return &c->g->nodes[n]; }

static gcc_jit_rvalue *as_rv(gcc_jit_lvalue *l) { return gcc_jit_lvalue_as_rvalue(l); }

static gcc_jit_rvalue *bin(cg *c, enum gcc_jit_binary_op op, gcc_jit_type *t, gcc_jit_rvalue *a,
                           gcc_jit_rvalue *b) {
  return gcc_jit_context_new_binary_op(c->ctx, NULL, op, t, a, b);
}

static gcc_jit_rvalue *cmp(cg *c, enum gcc_jit_comparison op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return gcc_jit_context_new_comparison(c->ctx, NULL, op, a, b);
}

static gcc_jit_rvalue *cast(cg *c, gcc_jit_rvalue *a, gcc_jit_type *t) {
  return gcc_jit_context_new_cast(c->ctx, NULL, a, t);
}

static gcc_jit_rvalue *land(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, GCC_JIT_BINARY_OP_LOGICAL_AND, c->t_bool, a, b);
}

static gcc_jit_rvalue *lor(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, GCC_JIT_BINARY_OP_LOGICAL_OR, c->t_bool, a, b);
}

/* A value kept in a fresh local, so later uses read a variable. */
static gcc_jit_rvalue *keep(cg *c, gcc_jit_rvalue *v, gcc_jit_type *t) {
  gcc_jit_lvalue *l = cg_local(c, t, "v");
  cg_assign(c, l, v);
  return as_rv(l);
}

gcc_jit_rvalue *cg_const(cg *c, td_dtype dt, double f, int64_t i) {
  switch (dt) {
  /* an f32 constant is rounded here: libgccjit keeps the double's value in
   * a float-typed constant, which f64(c) then widened unrounded */
  case TD_F32: return gcc_jit_context_new_rvalue_from_double(c->ctx, c->vt[dt], (double)(float)f);
  case TD_F64: return gcc_jit_context_new_rvalue_from_double(c->ctx, c->vt[dt], f);
  case TD_BOOL: return cmp(c, GCC_JIT_COMPARISON_NE, cg_i64(c, i != 0), cg_i64(c, 0));
  case TD_F16: return gcc_jit_context_new_rvalue_from_long(c->ctx, c->vt[dt], td_f64_to_f16(f));
  case TD_BF16: return gcc_jit_context_new_rvalue_from_long(c->ctx, c->vt[dt], td_f64_to_bf16(f));
  default: return gcc_jit_context_new_rvalue_from_long(c->ctx, c->vt[dt], (long)i);
  }
}

gcc_jit_rvalue *cg_builtin(cg *c, const char *name, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_function *f = gcc_jit_context_get_builtin_function(c->ctx, name);
  gcc_jit_rvalue *args[2] = {a, b};
  return gcc_jit_context_new_call(c->ctx, NULL, f, b ? 2 : 1, args);
}

/* a * b + c in f32 with one rounding (fmaf): an FMA instruction, which
 * vectorises, on x86-64-v3 and v4; libm's fmaf (as exact) on v2. */
static gcc_jit_rvalue *fma_f32(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b, gcc_jit_rvalue *d) {
  gcc_jit_rvalue *args[3] = {a, b, d};
  return gcc_jit_context_new_call(c->ctx, NULL, gcc_jit_context_get_builtin_function(c->ctx, "__builtin_fmaf"), 3, args);
}

/* "__builtin_expf" / "__builtin_exp" for dtype dt. */
static gcc_jit_rvalue *fcall(cg *c, const char *base, td_dtype dt, gcc_jit_rvalue *a,
                             gcc_jit_rvalue *b) {
  char name[64];
  snprintf(name, sizeof name, "__builtin_%s%s", base, dt == TD_F32 ? "f" : "");
  return cg_builtin(c, name, a, b);
}

/* ---- exp ------------------------------------------------------------------- */

static gcc_jit_rvalue *f32c(cg *c, double v) {   /* rounded: see cg_const */
  return gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f32, (double)(float)v);
}

/* An f32 constant the optimiser cannot see through: v + (lo >> 63),
 * computed once in the entry block, where lo (the start of the function's
 * parallel range) is never negative, so the sum is v — but GCC cannot know
 * that.  (gccjit drops `volatile` from locals and from loads through
 * volatile pointers, so that is no way to hide a value.)  A clamp
 * `x > k ? k : x` against it becomes one vminps/vmaxps; against a literal
 * k, GCC propagates k into copies of the code after the select
 * (rint(k * log2e) folded, and so on) and if-converts the copies into
 * compares, mask moves and k-register arithmetic: ~12 instructions for the
 * two clamps of exp in the vectorised loop. */
static gcc_jit_rvalue *opaque_f32(cg *c, double v) {
  gcc_jit_lvalue *l = cg_local(c, c->t_f32, "k");
  gcc_jit_rvalue *z = bin(c, GCC_JIT_BINARY_OP_RSHIFT, c->t_i64, c->p_lo, cg_i64(c, 63));
  gcc_jit_block_add_assignment(c->entry, NULL, l, bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_f32, f32c(c, v), cast(c, z, c->t_f32)));
  return as_rv(l);
}

/* min(x, hi) and max(x, lo) for f32 with NaN passing through (x kept). */
static gcc_jit_rvalue *clamp_hi(cg *c, gcc_jit_rvalue *x, double hi) {
  gcc_jit_rvalue *k = opaque_f32(c, hi);
  return keep(c, cg_select(c, cmp(c, GCC_JIT_COMPARISON_GT, x, k), k, x, c->t_f32), c->t_f32);
}

static gcc_jit_rvalue *clamp_lo(cg *c, gcc_jit_rvalue *x, double lo) {
  gcc_jit_rvalue *k = opaque_f32(c, lo);
  return keep(c, cg_select(c, cmp(c, GCC_JIT_COMPARISON_LT, x, k), k, x, c->t_f32), c->t_f32);
}

/* exp for f32 without a libm call, so loops using it vectorise: Cody-Waite
 * reduction x = n ln2 + r (|r| <= ln2/2), Cephes' degree-6 polynomial for
 * e^r (about 1 ulp), and 2^n built in the exponent bits as 2^h 2^(n-h),
 * h = n/2, so that both factors stay normal.  x is clamped to [-110, 89]
 * first (vminps/vmaxps): below -87.3 the product rounds into the
 * subnormals (as libm's) and to 0 below -103.9; above 88.72 it overflows to
 * +inf; NaN stays NaN through the arithmetic, so no final case split is
 * needed.  The operations of runtime/scalar.h's td_exp_f32, in its order
 * (eager mode's exp is that function): the two agree bit for bit. */
static gcc_jit_rvalue *exp_f32(cg *c, gcc_jit_rvalue *x) {
  gcc_jit_type *f = c->t_f32;
  x = keep(c, x, f);
  gcc_jit_rvalue *xc = clamp_lo(c, clamp_hi(c, x, 89.0), -110.0);
  gcc_jit_rvalue *n = keep(c, cg_builtin(c, "__builtin_rintf", bin(c, GCC_JIT_BINARY_OP_MULT, f, xc, f32c(c, 1.44269504088896341)), NULL), f);
  gcc_jit_rvalue *r = fma_f32(c, n, f32c(c, -0.693359375), xc);
  r = keep(c, fma_f32(c, n, f32c(c, -(double)(float)-2.12194440e-4), r), f);
  static const double cf[] = {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                              1.6666665459e-1, 5.0000001201e-1};
  gcc_jit_rvalue *p = f32c(c, cf[0]);
  for (int i = 1; i < 6; i++) p = fma_f32(c, p, r, f32c(c, cf[i]));
  p = bin(c, GCC_JIT_BINARY_OP_PLUS, f, fma_f32(c, p, bin(c, GCC_JIT_BINARY_OP_MULT, f, r, r), r), f32c(c, 1.0));
  gcc_jit_rvalue *ni = keep(c, cast(c, n, c->t_i32), c->t_i32);
  gcc_jit_rvalue *one_i = gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, 1);
  gcc_jit_rvalue *h = keep(c, bin(c, GCC_JIT_BINARY_OP_RSHIFT, c->t_i32, ni, one_i), c->t_i32);
  gcc_jit_rvalue *parts[2] = {h, bin(c, GCC_JIT_BINARY_OP_MINUS, c->t_i32, ni, h)};
  gcc_jit_rvalue *res = p;
  for (int i = 0; i < 2; i++) {
    gcc_jit_rvalue *e = bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_i32, parts[i],
                            gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, 127));
    e = bin(c, GCC_JIT_BINARY_OP_LSHIFT, c->t_i32, e, gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, 23));
    res = bin(c, GCC_JIT_BINARY_OP_MULT, f, res, gcc_jit_context_new_bitcast(c->ctx, NULL, e, f));
  }
  return res;
}

/* e^a for dtype dt (f32: the inline polynomial; f64: libm's, as eager). */
static gcc_jit_rvalue *exp_of(cg *c, td_dtype dt, gcc_jit_rvalue *a) {
  return dt == TD_F32 ? exp_f32(c, a) : fcall(c, "exp", dt, a, NULL);
}

/* ---- tanh, erf, gelu, log (f32) ----------------------------------------------
 *
 * Like exp_f32, these avoid libm so that loops using them vectorise; both
 * sides of every case split are computed and one is selected.  Each is
 * runtime/scalar.h's function of the same name (td_tanh_f32, ...: eager
 * mode's) operation for operation, so the two agree bit for bit; code
 * changed here must change there.  The
 * coefficients were fitted here (weighted least squares iterated toward
 * minimax, in float64, then rounded to f32).  Errors measured in
 * tests/unit/test_mathfns.c over dense sweeps, against float64 libm (the
 * table in docs/compiler.md):
 *   tanh  relative <= 4e-7 (|x| < 0.625: x P(x^2); else 1 - 2/(e^2|x| + 1))
 *   erf   absolute <= 2e-7 (|x| < 1: x P(x^2), relative 3e-7; else
 *         1 - e^-x^2 Q(1/|x|), Q fitted to erfcx on [1, 4]; 1 beyond 4)
 *   gelu  absolute <= 1.5e-7; relative <= 3e-6 above -5.6 (the tail
 *         1 + erf(s), s <= -1, is e^-s^2 Q(1/|s|): no cancellation)
 *   log   relative <= 3e-7 away from x = 1, absolute <= 2e-7 near it
 *         (x = m 2^e, m in [0.707, 1.414), 2 atanh((m-1)/(m+1)) as an odd
 *         series to s^9; subnormals scaled first; 0, < 0, inf, NaN as libm) */

static gcc_jit_rvalue *horner(cg *c, const double *k, int n, gcc_jit_rvalue *u) {
  gcc_jit_rvalue *p = f32c(c, k[n - 1]);
  for (int i = n - 2; i >= 0; i--) p = fma_f32(c, p, u, f32c(c, k[i]));
  return p;
}

static gcc_jit_rvalue *f_mul(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, GCC_JIT_BINARY_OP_MULT, c->t_f32, a, b);
}

static gcc_jit_rvalue *f_add(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_f32, a, b);
}

static gcc_jit_rvalue *f_sub(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, GCC_JIT_BINARY_OP_MINUS, c->t_f32, a, b);
}

/* cond ? a : b with both sides already computed (so GCC if-converts). */
static gcc_jit_rvalue *fsel(cg *c, gcc_jit_rvalue *cond, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return cg_select(c, cond, keep(c, a, c->t_f32), keep(c, b, c->t_f32), c->t_f32);
}

static gcc_jit_rvalue *tanh_f32(cg *c, gcc_jit_rvalue *x) {
  static const double P[] = {1.0, -0.33333155512809753, 0.13329674303531647, -0.053638387471437454,
                             0.02038448303937912, -0.00547208683565259};
  x = keep(c, x, c->t_f32);
  gcc_jit_rvalue *ax = keep(c, fcall(c, "fabs", TD_F32, x, NULL), c->t_f32);
  gcc_jit_rvalue *small = f_mul(c, x, horner(c, P, 6, keep(c, f_mul(c, x, x), c->t_f32)));
  gcc_jit_rvalue *axc = clamp_hi(c, ax, 10.0);
  gcc_jit_rvalue *e = keep(c, exp_f32(c, f_mul(c, axc, f32c(c, 2.0))), c->t_f32);
  gcc_jit_rvalue *big = keep(c, f_sub(c, f32c(c, 1.0), bin(c, GCC_JIT_BINARY_OP_DIVIDE, c->t_f32, f32c(c, 2.0),
                                                            f_add(c, e, f32c(c, 1.0)))), c->t_f32);
  gcc_jit_rvalue *neg = gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, c->t_f32, big);
  big = fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, x, f32c(c, 0.0)), neg, big);
  return fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, ax, f32c(c, 0.625)), small, big);
}

/* erf's two parts at x: *small = erf(x) for |x| < 1 (x P(x^2)), *tail =
 * erfc(|x|) for |x| >= 1 (0 beyond 4); *ax = |x|, kept. */
static void erf_parts(cg *c, gcc_jit_rvalue *x, gcc_jit_rvalue **ax, gcc_jit_rvalue **small,
                      gcc_jit_rvalue **tail) {
  static const double P[] = {1.1283791065216064, -0.3761230707168579, 0.11280214786529541,
                             -0.026714764535427094, 0.004923390224575996, -0.0005660624592565};
  static const double Q[] = {0.00024081504670903087, 0.5595282912254333, 0.038611654192209244,
                             -0.45846399664878845, 0.4659734070301056, -0.19677415490150452,
                             -0.016038144007325172, 0.047995295375585556, -0.013489649631083012};
  gcc_jit_type *f = c->t_f32;
  *ax = keep(c, fcall(c, "fabs", TD_F32, x, NULL), f);
  *small = keep(c, f_mul(c, x, horner(c, P, 6, keep(c, f_mul(c, x, x), f))), f);
  gcc_jit_rvalue *t = clamp_hi(c, clamp_lo(c, *ax, 1.0), 4.0);
  gcc_jit_rvalue *u = keep(c, bin(c, GCC_JIT_BINARY_OP_DIVIDE, f, f32c(c, 1.0), t), f);
  gcc_jit_rvalue *e = exp_f32(c, gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, f, f_mul(c, t, t)));
  gcc_jit_rvalue *tl = f_mul(c, keep(c, e, f), horner(c, Q, 9, u));
  *tail = fsel(c, cmp(c, GCC_JIT_COMPARISON_GT, *ax, f32c(c, 4.0)), f32c(c, 0.0), tl);
}

static gcc_jit_rvalue *erf_f32(cg *c, gcc_jit_rvalue *x) {
  gcc_jit_rvalue *ax, *small, *tail;
  x = keep(c, x, c->t_f32);
  erf_parts(c, x, &ax, &small, &tail);
  gcc_jit_rvalue *big = keep(c, f_sub(c, f32c(c, 1.0), tail), c->t_f32);
  gcc_jit_rvalue *neg = gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, c->t_f32, big);
  big = fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, x, f32c(c, 0.0)), neg, big);
  return fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, ax, f32c(c, 1.0)), small, big);
}

/* The exact gelu, 0.5 a (1 + erf(a / sqrt 2)), with 1 + erf(s) for s <= -1
 * taken as erfc(|s|) directly (no cancellation). */
static gcc_jit_rvalue *gelu_f32(cg *c, gcc_jit_rvalue *a) {
  gcc_jit_rvalue *ax, *small, *tail;
  a = keep(c, a, c->t_f32);
  gcc_jit_rvalue *s = keep(c, f_mul(c, a, f32c(c, (double)0.70710678118654752f)), c->t_f32);
  erf_parts(c, s, &ax, &small, &tail);
  gcc_jit_rvalue *tl = keep(c, tail, c->t_f32);
  gcc_jit_rvalue *big = fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, s, f32c(c, 0.0)), tl, f_sub(c, f32c(c, 2.0), tl));
  gcc_jit_rvalue *one_p = fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, ax, f32c(c, 1.0)), f_add(c, f32c(c, 1.0), small), big);
  return f_mul(c, f_mul(c, f32c(c, 0.5), a), one_p);
}

static gcc_jit_rvalue *i32c(cg *c, int v) {
  return gcc_jit_context_new_rvalue_from_int(c->ctx, c->t_i32, v);
}

static gcc_jit_rvalue *log_f32(cg *c, gcc_jit_rvalue *x) {
  gcc_jit_type *f = c->t_f32, *i = c->t_i32;
  x = keep(c, x, f);
  gcc_jit_rvalue *sub = keep(c, cmp(c, GCC_JIT_COMPARISON_LT, x, f32c(c, 0x1p-126)), c->t_bool);
  gcc_jit_rvalue *xs = fsel(c, sub, f_mul(c, x, f32c(c, 0x1p23)), x);
  gcc_jit_rvalue *bits = keep(c, gcc_jit_context_new_bitcast(c->ctx, NULL, xs, i), i);
  gcc_jit_rvalue *e = bin(c, GCC_JIT_BINARY_OP_MINUS, i, bin(c, GCC_JIT_BINARY_OP_RSHIFT, i, bits, i32c(c, 23)), i32c(c, 127));
  e = bin(c, GCC_JIT_BINARY_OP_MINUS, i, e, cg_select(c, sub, i32c(c, 23), i32c(c, 0), i));
  gcc_jit_rvalue *mb = bin(c, GCC_JIT_BINARY_OP_BITWISE_OR, i,
                           bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, i, bits, i32c(c, 0x7fffff)), i32c(c, 0x3f800000));
  gcc_jit_rvalue *m = keep(c, gcc_jit_context_new_bitcast(c->ctx, NULL, mb, f), f);
  gcc_jit_rvalue *big = keep(c, cmp(c, GCC_JIT_COMPARISON_GT, m, f32c(c, 1.41421356237)), c->t_bool);
  m = fsel(c, big, f_mul(c, m, f32c(c, 0.5)), m);
  gcc_jit_rvalue *ef = keep(c, cast(c, bin(c, GCC_JIT_BINARY_OP_PLUS, i, e, cg_select(c, big, i32c(c, 1), i32c(c, 0), i)), f), f);
  gcc_jit_rvalue *sx = keep(c, bin(c, GCC_JIT_BINARY_OP_DIVIDE, f, f_sub(c, m, f32c(c, 1.0)), f_add(c, m, f32c(c, 1.0))), f);
  gcc_jit_rvalue *z = keep(c, f_mul(c, sx, sx), f);
  static const double S[] = {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9};
  gcc_jit_rvalue *lm = fma_f32(c, f_mul(c, sx, z), horner(c, S, 4, z), f_mul(c, sx, f32c(c, 2.0)));
  gcc_jit_rvalue *r = fma_f32(c, ef, f32c(c, 0.693359375), fma_f32(c, ef, f32c(c, -2.12194440e-4), lm));
  r = fsel(c, cmp(c, GCC_JIT_COMPARISON_EQ, x, f32c(c, __builtin_inff())), x, r);
  r = fsel(c, cmp(c, GCC_JIT_COMPARISON_EQ, x, f32c(c, 0.0)), f32c(c, -__builtin_inff()), r);
  r = fsel(c, cmp(c, GCC_JIT_COMPARISON_LT, x, f32c(c, 0.0)), f32c(c, __builtin_nanf("")), r);
  return fsel(c, cmp(c, GCC_JIT_COMPARISON_NE, x, x), x, r);
}

/* ---- conversions ------------------------------------------------------------ */

/* Float -> int: truncation toward zero, saturating, NaN -> 0. */
static gcc_jit_rvalue *float_to_int(cg *c, gcc_jit_rvalue *a, td_dtype to) {
  gcc_jit_type *t = c->vt[to];
  gcc_jit_rvalue *x = keep(c, cast(c, a, c->t_f64), c->t_f64);
  double hi = to == TD_I32 ? 2147483647.0 : 9223372036854775807.0;
  double lo = to == TD_I32 ? -2147483648.0 : -9223372036854775808.0;
  gcc_jit_rvalue *dhi = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, hi);
  gcc_jit_rvalue *dlo = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, lo);
  gcc_jit_rvalue *imax = gcc_jit_context_new_rvalue_from_long(c->ctx, t, to == TD_I32 ? INT32_MAX : INT64_MAX);
  gcc_jit_rvalue *imin = gcc_jit_context_new_rvalue_from_long(c->ctx, t, to == TD_I32 ? INT32_MIN : INT64_MIN);
  gcc_jit_rvalue *xc = cg_select(c, cmp(c, GCC_JIT_COMPARISON_GT, x, dlo), x, dlo, c->t_f64);
  gcc_jit_rvalue *r = cg_select(c, cmp(c, GCC_JIT_COMPARISON_LT, xc, dhi), cast(c, xc, t), imax, t);
  r = cg_select(c, cmp(c, GCC_JIT_COMPARISON_LE, x, dlo), imin, r, t);
  return cg_select(c, cmp(c, GCC_JIT_COMPARISON_NE, x, x), cg_const(c, to, 0, 0), r, t);
}

/* f16 / bf16 values are uint16_t bit patterns (c->vt[TD_F16]).  These are
 * runtime/half.h's formulas: integer operations and selects only, so loops
 * over them vectorise. */
static gcc_jit_rvalue *u32c(cg *c, uint32_t v) {
  return gcc_jit_context_new_rvalue_from_long(c->ctx, c->t_u32, (long)v);
}

static gcc_jit_rvalue *ubin(cg *c, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, uint32_t k) {
  return bin(c, op, c->t_u32, a, u32c(c, k));
}

/* cond ? a : b on uint32 values as mask arithmetic: no branch for GCC to
 * keep (a cg_select diamond with float work in an arm stays a branch). */
static gcc_jit_rvalue *usel(cg *c, gcc_jit_rvalue *cond, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_rvalue *m = bin(c, GCC_JIT_BINARY_OP_MINUS, c->t_u32, u32c(c, 0),
                          cast(c, cast(c, cond, c->t_i32), c->t_u32));
  m = keep(c, m, c->t_u32);
  gcc_jit_rvalue *na = bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32, a, m);
  gcc_jit_rvalue *nb = bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32, b,
                           gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_BITWISE_NEGATE, c->t_u32, m));
  return keep(c, bin(c, GCC_JIT_BINARY_OP_BITWISE_OR, c->t_u32, na, nb), c->t_u32);
}

static gcc_jit_rvalue *ucmp(cg *c, enum gcc_jit_comparison op, gcc_jit_rvalue *a, uint32_t k) {
  return cmp(c, op, a, u32c(c, k));
}

static gcc_jit_rvalue *f32_bits(cg *c, gcc_jit_rvalue *f) {
  return keep(c, gcc_jit_context_new_bitcast(c->ctx, NULL, f, c->t_u32), c->t_u32);
}

static gcc_jit_rvalue *bits_f32(cg *c, gcc_jit_rvalue *u) {
  return gcc_jit_context_new_bitcast(c->ctx, NULL, u, c->t_f32);
}

/* f32 -> bf16, round to nearest even; NaN stays a quiet NaN. */
static gcc_jit_rvalue *f32_to_bf16(cg *c, gcc_jit_rvalue *f) {
  gcc_jit_rvalue *u = f32_bits(c, f);
  gcc_jit_rvalue *hi = keep(c, ubin(c, GCC_JIT_BINARY_OP_RSHIFT, u, 16), c->t_u32);
  gcc_jit_rvalue *r = bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_u32, ubin(c, GCC_JIT_BINARY_OP_PLUS, u, 0x7fff),
                          ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, hi, 1));
  r = ubin(c, GCC_JIT_BINARY_OP_RSHIFT, r, 16);
  gcc_jit_rvalue *nan = ubin(c, GCC_JIT_BINARY_OP_BITWISE_OR, hi, 0x40);
  gcc_jit_rvalue *isnan = ucmp(c, GCC_JIT_COMPARISON_GT, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, u, 0x7fffffff),
                               0x7f800000);
  return cast(c, usel(c, isnan, nan, r), c->vt[TD_BF16]);
}

/* f32 -> f16, round to nearest even, subnormals, overflow to inf, NaN. */
static gcc_jit_rvalue *f32_to_f16(cg *c, gcc_jit_rvalue *f) {
  gcc_jit_rvalue *u = f32_bits(c, f);
  gcc_jit_rvalue *sign = ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, ubin(c, GCC_JIT_BINARY_OP_RSHIFT, u, 16), 0x8000);
  gcc_jit_rvalue *a = keep(c, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, u, 0x7fffffff), c->t_u32);
  gcc_jit_rvalue *m = keep(c, ubin(c, GCC_JIT_BINARY_OP_MINUS, a, 0x38000000), c->t_u32);
  gcc_jit_rvalue *odd = ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, ubin(c, GCC_JIT_BINARY_OP_RSHIFT, m, 13), 1);
  gcc_jit_rvalue *norm = bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_u32, ubin(c, GCC_JIT_BINARY_OP_PLUS, m, 0xfff), odd);
  norm = ubin(c, GCC_JIT_BINARY_OP_RSHIFT, norm, 13);
  /* below 2^-14: the significand in units of 2^-24, rounded to nearest
   * even; shift 126 - e clamped to [14, 25] */
  gcc_jit_rvalue *e = keep(c, ubin(c, GCC_JIT_BINARY_OP_RSHIFT, a, 23), c->t_u32);
  e = usel(c, ucmp(c, GCC_JIT_COMPARISON_LT, e, 112), e, u32c(c, 112));
  gcc_jit_rvalue *sh = keep(c, bin(c, GCC_JIT_BINARY_OP_MINUS, c->t_u32, u32c(c, 126), e), c->t_u32);
  sh = usel(c, ucmp(c, GCC_JIT_COMPARISON_GT, sh, 25), u32c(c, 25), sh);
  gcc_jit_rvalue *sig = keep(c, ubin(c, GCC_JIT_BINARY_OP_BITWISE_OR, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, a, 0x7fffff),
                                     0x800000), c->t_u32);
  gcc_jit_rvalue *q = keep(c, bin(c, GCC_JIT_BINARY_OP_RSHIFT, c->t_u32, sig, sh), c->t_u32);
  gcc_jit_rvalue *unit = bin(c, GCC_JIT_BINARY_OP_LSHIFT, c->t_u32, u32c(c, 1), sh);
  gcc_jit_rvalue *rem = keep(c, bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32, sig,
                                    ubin(c, GCC_JIT_BINARY_OP_MINUS, unit, 1)), c->t_u32);
  gcc_jit_rvalue *hw = keep(c, ubin(c, GCC_JIT_BINARY_OP_RSHIFT, unit, 1), c->t_u32);
  /* round up when rem > halfway, or rem == halfway and q is odd */
  gcc_jit_rvalue *gt = cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_GT, rem, hw), c->t_i32), c->t_u32);
  gcc_jit_rvalue *tie = cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_EQ, rem, hw), c->t_i32), c->t_u32);
  gcc_jit_rvalue *up = bin(c, GCC_JIT_BINARY_OP_BITWISE_OR, c->t_u32, gt,
                           bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32, tie, q));
  gcc_jit_rvalue *sub = bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_u32, q, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, up, 1));
  gcc_jit_rvalue *r = usel(c, ucmp(c, GCC_JIT_COMPARISON_LT, a, 0x38800000), sub, norm);
  r = usel(c, ucmp(c, GCC_JIT_COMPARISON_GE, a, 0x477ff000), u32c(c, 0x7c00), r);
  r = usel(c, ucmp(c, GCC_JIT_COMPARISON_GT, a, 0x7f800000), u32c(c, 0x7e00), r);
  return cast(c, bin(c, GCC_JIT_BINARY_OP_BITWISE_OR, c->t_u32, sign, r), c->vt[TD_F16]);
}

/* bf16 -> f32: a shift.  f16 -> f32: exact, subnormals included. */
static gcc_jit_rvalue *half_to_f32(cg *c, gcc_jit_rvalue *h, td_dtype from) {
  gcc_jit_rvalue *u = keep(c, cast(c, h, c->t_u32), c->t_u32);
  if (from == TD_BF16) return bits_f32(c, ubin(c, GCC_JIT_BINARY_OP_LSHIFT, u, 16));
  gcc_jit_rvalue *sign = ubin(c, GCC_JIT_BINARY_OP_LSHIFT, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, u, 0x8000), 16);
  gcc_jit_rvalue *em = keep(c, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, u, 0x7fff), c->t_u32);
  gcc_jit_rvalue *o = keep(c, ubin(c, GCC_JIT_BINARY_OP_LSHIFT, em, 13), c->t_u32);
  gcc_jit_rvalue *min_normal = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f32, 0x1p-14);
  gcc_jit_rvalue *sub = bin(c, GCC_JIT_BINARY_OP_MINUS, c->t_f32,
                            bits_f32(c, ubin(c, GCC_JIT_BINARY_OP_PLUS, o, 0x38800000)), min_normal);
  gcc_jit_rvalue *r = usel(c, ucmp(c, GCC_JIT_COMPARISON_LT, em, 0x400), f32_bits(c, sub),
                           ubin(c, GCC_JIT_BINARY_OP_PLUS, o, 0x38000000));
  r = usel(c, ucmp(c, GCC_JIT_COMPARISON_GE, em, 0x7c00), ubin(c, GCC_JIT_BINARY_OP_PLUS, o, 0x70000000), r);
  return bits_f32(c, bin(c, GCC_JIT_BINARY_OP_BITWISE_OR, c->t_u32, sign, r));
}

/* f64 -> f32 rounded to odd (so one later rounding to a half type is the
 * correctly rounded result; runtime/half.h td_f64_to_f32_odd). */
static gcc_jit_rvalue *f64_to_f32_odd(cg *c, gcc_jit_rvalue *d) {
  d = keep(c, d, c->t_f64);
  gcc_jit_rvalue *f = keep(c, cast(c, d, c->t_f32), c->t_f32);
  gcc_jit_rvalue *u = f32_bits(c, f), *back = keep(c, cast(c, f, c->t_f64), c->t_f64);
  gcc_jit_rvalue *zero = gcc_jit_context_new_rvalue_from_double(c->ctx, c->t_f64, 0.0);
  gcc_jit_rvalue *inexact = bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32,
                                cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_NE, back, d), c->t_i32), c->t_u32),
                                cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_EQ, d, d), c->t_i32), c->t_u32));
  gcc_jit_rvalue *above = bin(c, GCC_JIT_BINARY_OP_BITWISE_XOR, c->t_u32,
                              cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_GT, back, d), c->t_i32), c->t_u32),
                              cast(c, cast(c, cmp(c, GCC_JIT_COMPARISON_LT, d, zero), c->t_i32), c->t_u32));
  gcc_jit_rvalue *adj = usel(c, ucmp(c, GCC_JIT_COMPARISON_NE, above, 0), ubin(c, GCC_JIT_BINARY_OP_MINUS, u, 1),
                             ubin(c, GCC_JIT_BINARY_OP_PLUS, u, 1));
  /* inexact and u even: adj */
  gcc_jit_rvalue *take = bin(c, GCC_JIT_BINARY_OP_BITWISE_AND, c->t_u32, inexact,
                             ubin(c, GCC_JIT_BINARY_OP_BITWISE_XOR, ubin(c, GCC_JIT_BINARY_OP_BITWISE_AND, u, 1), 1));
  return bits_f32(c, usel(c, ucmp(c, GCC_JIT_COMPARISON_NE, take, 0), adj, u));
}

/* Any dtype -> f16/bf16 with one rounding. */
/* The primitive conversions the shared rules (kexpr.c's td_kx_convert)
 * combine, over gccjit rvalues. */
static void *kx_cast(void *be, void *a, td_dtype from, td_dtype to) {
  (void)from;
  return cast(be, a, ((cg *)be)->vt[to]);
}

static void *kx_f2i(void *be, void *a, td_dtype from, td_dtype to) {
  (void)from;
  return float_to_int(be, a, to);
}

static void *kx_half_to_f32(void *be, void *a, td_dtype from) {
  return keep(be, half_to_f32(be, a, from), ((cg *)be)->t_f32);
}

static void *kx_f64_to_f32_odd(void *be, void *a) { return f64_to_f32_odd(be, a); }

static void *kx_f32_to_half(void *be, void *a, td_dtype to) {
  cg *c = be;
  a = keep(c, a, c->t_f32);
  return to == TD_BF16 ? f32_to_bf16(c, a) : f32_to_f16(c, a);
}

gcc_jit_rvalue *cg_convert(cg *c, gcc_jit_rvalue *a, td_dtype from, td_dtype to) {
  td_kxgen x = cg_kxgen(c);
  return td_kx_convert(&x, a, from, to);
}

/* ---- op formulas -------------------------------------------------------------- */

/* Python's floor division and modulo on integers, never trapping. */
static gcc_jit_rvalue *int_divmod(cg *c, int is_mod, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_type *t = c->vt[dt];
  gcc_jit_rvalue *zero = cg_const(c, dt, 0, 0), *one = cg_const(c, dt, 1, 1);
  gcc_jit_rvalue *b0 = cmp(c, GCC_JIT_COMPARISON_EQ, b, zero);
  gcc_jit_rvalue *bm1 = cmp(c, GCC_JIT_COMPARISON_EQ, b, cg_const(c, dt, -1, -1));
  gcc_jit_rvalue *special = keep(c, lor(c, b0, bm1), c->t_bool);
  gcc_jit_rvalue *bs = cg_select(c, special, one, b, t);
  gcc_jit_rvalue *r = keep(c, bin(c, GCC_JIT_BINARY_OP_MODULO, t, a, bs), t);
  gcc_jit_rvalue *nz = cmp(c, GCC_JIT_COMPARISON_NE, r, zero);
  if (is_mod) {
    gcc_jit_rvalue *adj = land(c, nz, cmp(c, GCC_JIT_COMPARISON_NE, cmp(c, GCC_JIT_COMPARISON_LT, r, zero),
                                          cmp(c, GCC_JIT_COMPARISON_LT, b, zero)));
    r = cg_select(c, adj, bin(c, GCC_JIT_BINARY_OP_PLUS, t, r, b), r, t);
    return cg_select(c, special, zero, r, t);
  }
  gcc_jit_rvalue *q = bin(c, GCC_JIT_BINARY_OP_DIVIDE, t, a, bs);
  gcc_jit_rvalue *adj = land(c, nz, cmp(c, GCC_JIT_COMPARISON_NE, cmp(c, GCC_JIT_COMPARISON_LT, a, zero),
                                        cmp(c, GCC_JIT_COMPARISON_LT, b, zero)));
  q = cg_select(c, adj, bin(c, GCC_JIT_BINARY_OP_MINUS, t, q, one), q, t);
  q = cg_select(c, bm1, bin(c, GCC_JIT_BINARY_OP_MINUS, t, zero, a), q, t);
  return cg_select(c, b0, zero, q, t);
}

/* Python's float modulo: fmod moved into the divisor's sign. */
static gcc_jit_rvalue *float_mod(cg *c, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_type *t = c->vt[dt];
  gcc_jit_rvalue *zero = cg_const(c, dt, 0, 0);
  gcc_jit_rvalue *r = keep(c, fcall(c, "fmod", dt, a, b), t);
  gcc_jit_rvalue *adj = cmp(c, GCC_JIT_COMPARISON_NE, cmp(c, GCC_JIT_COMPARISON_LT, r, zero),
                            cmp(c, GCC_JIT_COMPARISON_LT, b, zero));
  gcc_jit_rvalue *r1 = cg_select(c, adj, bin(c, GCC_JIT_BINARY_OP_PLUS, t, r, b), r, t);
  return cg_select(c, cmp(c, GCC_JIT_COMPARISON_NE, r, zero), r1, fcall(c, "copysign", dt, zero, b), t);
}

/* Python's float // with runtime/scalar.h's operations (td_floordiv_f32):
 * (a - fmod(a, b)) / b, one lower where fmod's sign is not b's, rounded
 * to the nearest integer; a zero quotient takes the sign of a / b, and
 * b == 0 gives a / b. */
static gcc_jit_rvalue *float_floordiv(cg *c, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_type *t = c->vt[dt];
  gcc_jit_rvalue *zero = cg_const(c, dt, 0, 0), *one = cg_const(c, dt, 1, 1);
  gcc_jit_rvalue *m = keep(c, fcall(c, "fmod", dt, a, b), t);
  gcc_jit_rvalue *q = bin(c, GCC_JIT_BINARY_OP_DIVIDE, t, bin(c, GCC_JIT_BINARY_OP_MINUS, t, a, m), b);
  gcc_jit_rvalue *adj = land(c, cmp(c, GCC_JIT_COMPARISON_NE, m, zero),
                             cmp(c, GCC_JIT_COMPARISON_NE, cmp(c, GCC_JIT_COMPARISON_LT, b, zero),
                                 cmp(c, GCC_JIT_COMPARISON_LT, m, zero)));
  q = keep(c, cg_select(c, adj, bin(c, GCC_JIT_BINARY_OP_MINUS, t, q, one), q, t), t);
  gcc_jit_rvalue *f = keep(c, fcall(c, "floor", dt, q, NULL), t);
  gcc_jit_rvalue *up = cmp(c, GCC_JIT_COMPARISON_GT, bin(c, GCC_JIT_BINARY_OP_MINUS, t, q, f), cg_const(c, dt, 0.5, 0));
  gcc_jit_rvalue *r = cg_select(c, up, bin(c, GCC_JIT_BINARY_OP_PLUS, t, f, one), f, t);
  gcc_jit_rvalue *ab = keep(c, bin(c, GCC_JIT_BINARY_OP_DIVIDE, t, a, b), t);
  r = cg_select(c, cmp(c, GCC_JIT_COMPARISON_EQ, q, zero), fcall(c, "copysign", dt, zero, ab), r, t);
  return cg_select(c, cmp(c, GCC_JIT_COMPARISON_EQ, b, zero), ab, r, t);
}

int64_t tdc_pow_i64(int64_t a, int64_t b) { return td_pow_i64(a, b); }
int32_t tdc_pow_i32(int32_t a, int32_t b) { return td_pow_i32(a, b); }

/* Integer power through a runtime helper (rare; exact with wrap-around). */
static gcc_jit_rvalue *int_pow(cg *c, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_type *t = c->vt[dt], *ps[2] = {t, t};
  gcc_jit_rvalue *args[2] = {a, b};
  return cg_rt_call(c, dt == TD_I32 ? TDC_RT_POW_I32 : TDC_RT_POW_I64, t, 2, ps, args);
}

static gcc_jit_rvalue *minmax(cg *c, int is_max, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  if (dt == TD_BOOL) return is_max ? lor(c, a, b) : land(c, a, b);
  gcc_jit_rvalue *better = cmp(c, is_max ? GCC_JIT_COMPARISON_GT : GCC_JIT_COMPARISON_LT, a, b);
  if (td_dtype_is_float(dt)) better = lor(c, better, cmp(c, GCC_JIT_COMPARISON_NE, a, a));
  return cg_select(c, better, a, b, c->vt[dt]);
}

/* Float pow as libm's.  GCC's vectoriser turns pow(x, 0.5) into sqrt(x)
 * whatever the math flags (its pow pattern), which is wrong at -inf (pow
 * gives +inf, sqrt NaN) and at -0 (+0, not -0): those two are put back
 * for an exponent of 0.5 (found by tests/difftest, seed 2027). */
static gcc_jit_rvalue *float_pow(cg *c, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  gcc_jit_type *t = c->vt[dt];
  a = keep(c, a, t);
  b = keep(c, b, t);
  gcc_jit_rvalue *p = keep(c, fcall(c, "pow", dt, a, b), t);
  gcc_jit_rvalue *half = keep(c, cmp(c, GCC_JIT_COMPARISON_EQ, b, cg_const(c, dt, 0.5, 0)), c->t_bool);
  gcc_jit_rvalue *inf = cg_const(c, dt, __builtin_inf(), 0);
  gcc_jit_rvalue *minf = cg_const(c, dt, -__builtin_inf(), 0);
  p = keep(c, cg_select(c, land(c, half, cmp(c, GCC_JIT_COMPARISON_EQ, a, minf)), inf, p, t), t);
  return cg_select(c, half, bin(c, GCC_JIT_BINARY_OP_PLUS, t, p, cg_const(c, dt, 0.0, 0)), p, t);
}

static gcc_jit_rvalue *compare(cg *c, td_op op, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  static const enum gcc_jit_comparison ops[] = {GCC_JIT_COMPARISON_LT, GCC_JIT_COMPARISON_LE,
                                                GCC_JIT_COMPARISON_GT, GCC_JIT_COMPARISON_GE,
                                                GCC_JIT_COMPARISON_EQ, GCC_JIT_COMPARISON_NE};
  if (dt == TD_BOOL) {
    a = cast(c, a, c->t_i32);
    b = cast(c, b, c->t_i32);
  }
  return cmp(c, ops[op - TD_IR_LT], a, b);
}

/* ---- one emitter per elementwise op ------------------------------------------------
 *
 * op_NAME(c, dt, a): the value of op NAME on a[0..arity) in dtype dt (the
 * node's; a comparison's operands'), or NULL when this backend has no
 * code for NAME at dt (the evaluator reports it).  The table below is
 * generated from lang/ops.def, so an elementwise op added there without
 * its op_NAME here does not build. */

#define OP(E) static gcc_jit_rvalue *op_##E(cg *c, td_dtype dt, gcc_jit_rvalue *const *a)
#define FL td_dtype_is_float(dt)
#define T (c->vt[dt])
#define ZERO cg_const(c, dt, 0, 0)
#define ONE cg_const(c, dt, 1, 1)

static gcc_jit_rvalue *neg_int(cg *c, td_dtype dt, gcc_jit_rvalue *a) {
  return bin(c, GCC_JIT_BINARY_OP_MINUS, T, ZERO, a);
}

OP(NEG) { return FL ? gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, T, a[0]) : neg_int(c, dt, a[0]); }
OP(ABS) {
  if (FL) return fcall(c, "fabs", dt, a[0], NULL);
  return cg_select(c, cmp(c, GCC_JIT_COMPARISON_LT, a[0], ZERO), neg_int(c, dt, a[0]), a[0], T);
}
OP(EXP) { return FL ? exp_of(c, dt, a[0]) : NULL; }
OP(LOG) { return !FL ? NULL : dt == TD_F32 ? log_f32(c, a[0]) : fcall(c, "log", dt, a[0], NULL); }
OP(SQRT) { return FL ? fcall(c, "sqrt", dt, a[0], NULL) : NULL; }
OP(RSQRT) { return FL ? bin(c, GCC_JIT_BINARY_OP_DIVIDE, T, ONE, fcall(c, "sqrt", dt, a[0], NULL)) : NULL; }
OP(SIN) { return FL ? fcall(c, "sin", dt, a[0], NULL) : NULL; }
OP(LOG1P) { return FL ? fcall(c, "log1p", dt, a[0], NULL) : NULL; }
OP(COS) { return FL ? fcall(c, "cos", dt, a[0], NULL) : NULL; }
OP(TANH) { return !FL ? NULL : dt == TD_F32 ? tanh_f32(c, a[0]) : fcall(c, "tanh", dt, a[0], NULL); }
OP(ERF) { return !FL ? NULL : dt == TD_F32 ? erf_f32(c, a[0]) : fcall(c, "erf", dt, a[0], NULL); }

/* num / (1 + e^-a): sigmoid (num = 1) and silu (num = a). */
static gcc_jit_rvalue *over_1_exp(cg *c, td_dtype dt, gcc_jit_rvalue *a, gcc_jit_rvalue *num) {
  gcc_jit_rvalue *e = exp_of(c, dt, gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_MINUS, T, a));
  return bin(c, GCC_JIT_BINARY_OP_DIVIDE, T, num, bin(c, GCC_JIT_BINARY_OP_PLUS, T, ONE, e));
}
OP(SIGMOID) { return FL ? over_1_exp(c, dt, a[0], ONE) : NULL; }
OP(SILU) { return FL ? over_1_exp(c, dt, a[0], a[0]) : NULL; }
OP(RELU) { return cg_select(c, cmp(c, GCC_JIT_COMPARISON_LT, a[0], ZERO), ZERO, a[0], T); }
OP(GELU) {
  if (!FL) return NULL;
  if (dt == TD_F32) return gelu_f32(c, a[0]);
  gcc_jit_rvalue *s = bin(c, GCC_JIT_BINARY_OP_MULT, T, a[0], cg_const(c, dt, 0.70710678118654752440, 0));
  gcc_jit_rvalue *h = bin(c, GCC_JIT_BINARY_OP_MULT, T, cg_const(c, dt, 0.5, 0), a[0]);
  return bin(c, GCC_JIT_BINARY_OP_MULT, T, h, bin(c, GCC_JIT_BINARY_OP_PLUS, T, ONE, fcall(c, "erf", dt, s, NULL)));
}
/* floor, ceil and round of an integer are the integer */
OP(FLOOR) { return FL ? fcall(c, "floor", dt, a[0], NULL) : a[0]; }
OP(CEIL) { return FL ? fcall(c, "ceil", dt, a[0], NULL) : a[0]; }
OP(ROUND) { return FL ? fcall(c, "rint", dt, a[0], NULL) : a[0]; }
OP(NOT) { (void)dt; return gcc_jit_context_new_unary_op(c->ctx, NULL, GCC_JIT_UNARY_OP_LOGICAL_NEGATE, c->t_bool, a[0]); }
/* never called: the evaluator converts (kexpr.c's td_kx_convert) */
OP(CAST) { (void)c, (void)dt, (void)a; return NULL; }
OP(ADD) { return bin(c, GCC_JIT_BINARY_OP_PLUS, T, a[0], a[1]); }
OP(SUB) { return bin(c, GCC_JIT_BINARY_OP_MINUS, T, a[0], a[1]); }
OP(MUL) { return bin(c, GCC_JIT_BINARY_OP_MULT, T, a[0], a[1]); }
OP(DIV) { return FL ? bin(c, GCC_JIT_BINARY_OP_DIVIDE, T, a[0], a[1]) : int_divmod(c, 0, dt, a[0], a[1]); }
OP(MOD) { return FL ? float_mod(c, dt, a[0], a[1]) : int_divmod(c, 1, dt, a[0], a[1]); }
OP(FLOORDIV) { return FL ? float_floordiv(c, dt, a[0], a[1]) : int_divmod(c, 0, dt, a[0], a[1]); }
OP(POW) { return FL ? float_pow(c, dt, a[0], a[1]) : int_pow(c, dt, a[0], a[1]); }
OP(MIN) { return minmax(c, 0, dt, a[0], a[1]); }
OP(MAX) { return minmax(c, 1, dt, a[0], a[1]); }
OP(LT) { return compare(c, TD_IR_LT, dt, a[0], a[1]); }
OP(LE) { return compare(c, TD_IR_LE, dt, a[0], a[1]); }
OP(GT) { return compare(c, TD_IR_GT, dt, a[0], a[1]); }
OP(GE) { return compare(c, TD_IR_GE, dt, a[0], a[1]); }
OP(EQ) { return compare(c, TD_IR_EQ, dt, a[0], a[1]); }
OP(NE) { return compare(c, TD_IR_NE, dt, a[0], a[1]); }
OP(AND) { (void)dt; return land(c, a[0], a[1]); }
OP(OR) { (void)dt; return lor(c, a[0], a[1]); }
OP(WHERE) { return cg_select(c, a[0], a[1], a[2], T); }

#undef OP
#undef FL
#undef T
#undef ZERO
#undef ONE

typedef gcc_jit_rvalue *(*cg_opfn)(cg *c, td_dtype dt, gcc_jit_rvalue *const *a);

/* The emitter of each op, by kind: elementwise kinds name op_ENUM (which
 * must exist), the others have none. */
#define CG_EMITTER_TD_K_UNARY(E) op_##E
#define CG_EMITTER_TD_K_BINARY(E) op_##E
#define CG_EMITTER_TD_K_COMPARE(E) op_##E
#define CG_EMITTER_TD_K_TERNARY(E) op_##E
#define CG_EMITTER_TD_K_LEAF(E) NULL
#define CG_EMITTER_TD_K_RANDOM(E) NULL
#define CG_EMITTER_TD_K_REDUCE(E) NULL
#define CG_EMITTER_TD_K_MATMUL(E) NULL
#define CG_EMITTER_TD_K_CONV(E) NULL
#define CG_EMITTER_TD_K_MOVE(E) NULL
#define CG_EMITTER_TD_K_GATHER(E) NULL
#define CG_EMITTER_TD_K_SCAN(E) NULL
#define CG_EMITTER_TD_K_EFFECT(E) NULL
static const cg_opfn op_emitter[TD_IR_OP_COUNT] = {
#define TD_OP(E, name, K, A, C) [TD_IR_##E] = CG_EMITTER_##K(E),
#include "lang/ops.def"
#undef TD_OP
};

static void *kx_op(void *be, td_op op, td_dtype dt, void *const *a) {
  gcc_jit_rvalue *v[3] = {NULL, NULL, NULL};
  for (int i = 0; i < td_ops[op].arity && i < 3; i++) v[i] = a[i];
  return op_emitter[op] ? op_emitter[op](be, dt, v) : NULL;
}
/* ---- indices: the shared index layer (index.c) over gccjit rvalues ---------------------- */

static td_ix *ix_new_b(void *be, int rank) { return cg_ix_new(be, rank); }
static void *ix_cst(void *be, int64_t v) { return cg_i64(be, v); }
static void *ix_size(void *be, td_dim d) { return cg_dim(be, d); }
static void *ix_add(void *be, void *a, void *b) { return bin(be, GCC_JIT_BINARY_OP_PLUS, ((cg *)be)->t_i64, a, b); }
static void *ix_mul(void *be, void *a, void *b) { return bin(be, GCC_JIT_BINARY_OP_MULT, ((cg *)be)->t_i64, a, b); }
static void *ix_div(void *be, void *a, void *b) { return bin(be, GCC_JIT_BINARY_OP_DIVIDE, ((cg *)be)->t_i64, a, b); }
static void *ix_mod(void *be, void *a, void *b) { return bin(be, GCC_JIT_BINARY_OP_MODULO, ((cg *)be)->t_i64, a, b); }
static void *ix_keep(void *be, void *a) { return keep(be, a, ((cg *)be)->t_i64); }
static void *ix_sub(void *be, void *a, void *b) { return bin(be, GCC_JIT_BINARY_OP_MINUS, ((cg *)be)->t_i64, a, b); }

/* Derived coordinates stay expressions (GCC's optimiser merges repeated
 * arithmetic); only a reshape's linear index is kept in a local. */
static const td_ix_ops ix_ops = {ix_new_b, ix_cst, ix_size, ix_add, ix_mul, ix_div, ix_mod, ix_keep, 0};

td_ixgen cg_ixgen(cg *c) {
  return (td_ixgen){&ix_ops, c, c->g, c->arena, &c->ixmemo, &c->n_ixmemo, &c->cap_ixmemo};
}

gcc_jit_rvalue *cg_offset(cg *c, int n, const cg_ix *ix) {
  td_ixgen x = cg_ixgen(c);
  gcc_jit_rvalue *off = td_ix_lin(&x, ND(c, n), ix, 0, ND(c, n)->rank);
  return off ? off : cg_i64(c, 0);
}


/* ---- loads, stores, creation ------------------------------------------------------------ */

int tdc_debug_bounds(void) { return td_debug_has("bounds"); }

gcc_jit_lvalue *cg_element(cg *c, int n, const cg_ix *ix) {
  gcc_jit_rvalue *base = cg_bufptr(c, n), *off = cg_offset(c, n, ix);
  if (!c->bounds) return gcc_jit_context_new_array_access(c->ctx, NULL, base, off);
  const td_node *nd = ND(c, n);
  gcc_jit_rvalue *numel = cg_i64(c, 1);
  for (int k = 0; k < nd->rank; k++) numel = bin(c, GCC_JIT_BINARY_OP_MULT, c->t_i64, numel, cg_dim(c, nd->shape[k]));
  off = keep(c, off, c->t_i64);
  gcc_jit_rvalue *bad = keep(c, lor(c, cmp(c, GCC_JIT_COMPARISON_LT, off, cg_i64(c, 0)),
                                    cmp(c, GCC_JIT_COMPARISON_GE, off, numel)), c->t_bool);
  gcc_jit_block *t = cg_block(c, "outside"), *j = cg_block(c, "inside");
  gcc_jit_block_end_with_conditional(c->blk, NULL, bad, t, j);
  gcc_jit_block_add_assignment(t, NULL, gcc_jit_rvalue_dereference(c->p_status, NULL),
                               cg_status_code(c, n, 1));
  gcc_jit_block_end_with_jump(t, NULL, j);
  c->blk = j;
  gcc_jit_lvalue *spare = cg_local(c, c->st[nd->dtype], "spare");
  gcc_jit_type *pt = gcc_jit_type_get_pointer(c->st[nd->dtype]);
  gcc_jit_rvalue *at = gcc_jit_lvalue_get_address(gcc_jit_context_new_array_access(c->ctx, NULL, base, cg_select(c, bad, cg_i64(c, 0), off, c->t_i64)), NULL);
  return gcc_jit_rvalue_dereference(cg_select(c, bad, gcc_jit_lvalue_get_address(spare, NULL), at, pt), NULL);
}

static gcc_jit_rvalue *load(cg *c, int n, const cg_ix *ix) {
  gcc_jit_lvalue *el = cg_element(c, n, ix);
  gcc_jit_rvalue *v = as_rv(el);
  if (ND(c, n)->dtype == TD_BOOL) v = cast(c, v, c->t_bool);
  return v;
}

void cg_store(cg *c, int n, const cg_ix *ix, gcc_jit_rvalue *v) {
  gcc_jit_lvalue *el = cg_element(c, n, ix);
  if (ND(c, n)->dtype == TD_BOOL) v = cast(c, v, c->t_u8);
  cg_assign(c, el, v);
}

/* ---- random numbers ------------------------------------------------------------------ */

/* Philox4x32-10 as in runtime/philox.c (philox.h fixes the mapping). */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static gcc_jit_rvalue *u64c(cg *c, uint64_t v) {
  return gcc_jit_context_new_rvalue_from_long(c->ctx, c->t_u64, (long)v);
}

static gcc_jit_rvalue *u_op(cg *c, enum gcc_jit_binary_op op, gcc_jit_rvalue *a, gcc_jit_rvalue *b) {
  return bin(c, op, c->t_u64, a, b);
}

static gcc_jit_rvalue *u_hi(cg *c, gcc_jit_rvalue *a) { return u_op(c, GCC_JIT_BINARY_OP_RSHIFT, a, u64c(c, 32)); }

static gcc_jit_rvalue *u_lo(cg *c, gcc_jit_rvalue *a) {
  return u_op(c, GCC_JIT_BINARY_OP_BITWISE_AND, a, u64c(c, 0xffffffffu));
}

static gcc_jit_rvalue *u_xor(cg *c, gcc_jit_rvalue *a, gcc_jit_rvalue *k) {
  return u_op(c, GCC_JIT_BINARY_OP_BITWISE_XOR, a, k);
}

/* The key of random node n as a uint64 rvalue: attr.seed as a constant,
 * or the value of its seed input (a rank-0 i32 / i64 buffer: fuse.c
 * materialises it), sign-extended, loaded once into a local of the entry
 * block so that the loops see a loop-invariant key.  The local is kept in
 * hoisted[] under the seed's node, which is no random node (an integer). */
static gcc_jit_rvalue *philox_seed(cg *c, int n) {
  const td_node *nd = ND(c, n);
  if (!nd->n_in) return u64c(c, nd->attr.seed);
  int sn = nd->in[0];
  if (!c->hoisted[sn]) {
    gcc_jit_block *save = c->blk;
    c->blk = c->entry;
    /* element 0 directly: cg_element's bounds check would end the entry
     * block, and a rank-0 buffer has that one element */
    gcc_jit_rvalue *v = as_rv(gcc_jit_context_new_array_access(c->ctx, NULL, cg_bufptr(c, sn), cg_i64(c, 0)));
    gcc_jit_lvalue *l = cg_local(c, c->t_u64, "seed");
    cg_assign(c, l, cast(c, cast(c, v, c->t_i64), c->t_u64));
    c->blk = save;
    c->hoisted[sn] = l;
  }
  return as_rv(c->hoisted[sn]);
}

/* The ten round keys of each key word of random node n: constants when
 * the seed is attr.seed (the code of a compile-time seed), otherwise
 * loop-invariant expressions of the loaded key, which GCC hoists. */
static void philox_keys(cg *c, int n, gcc_jit_rvalue *k0[10], gcc_jit_rvalue *k1[10]) {
  const td_node *nd = ND(c, n);
  if (!nd->n_in) {
    uint32_t a = (uint32_t)nd->attr.seed, b = (uint32_t)(nd->attr.seed >> 32);
    for (int r = 0; r < 10; r++, a += PHILOX_W0, b += PHILOX_W1) {
      k0[r] = u64c(c, a);
      k1[r] = u64c(c, b);
    }
    return;
  }
  gcc_jit_rvalue *seed = philox_seed(c, n);
  k0[0] = u_lo(c, seed);
  k1[0] = u_hi(c, seed);
  for (int r = 1; r < 10; r++) {
    k0[r] = u_lo(c, u_op(c, GCC_JIT_BINARY_OP_PLUS, k0[0], u64c(c, (uint64_t)r * PHILOX_W0)));
    k1[r] = u_lo(c, u_op(c, GCC_JIT_BINARY_OP_PLUS, k1[0], u64c(c, (uint64_t)r * PHILOX_W1)));
  }
}

/* Output word r0 of Philox4x32-10 for counter {lo(i), hi(i), lo(s), hi(s)}
 * and key {lo(seed), hi(seed)} (i, s: uint64 rvalues), as a uint64 below
 * 2^32, emitted into c->blk.  Every 32-bit word lives zero-extended in a
 * uint64 and each 32x32->64 product is one uint64 multiply, so a loop of
 * these has no branch, call or 128-bit arithmetic and vectorises: GCC 12
 * emits vpmullq at x86-64-v4 (it has no widening multiply of 16 lanes,
 * and never proves the high halves zero for vpmuludq), vpmuludq sequences
 * at v3.  The round keys (philox_keys) are constants when the seed is
 * known when the kernel is built, else loop-invariant.  Words 1 and 3 are
 * kept xor-ed with the next round's key word, as (lo(p) ^ k) & mask, so
 * each product's high half meets one xor on the dependency chain (GCC
 * reassociates h ^ c ^ k to (h ^ c) ^ k; an AND in between stops it):
 * what matters for a single draw, hoisted. */
static gcc_jit_rvalue *philox_r0(cg *c, int n, gcc_jit_rvalue *s, gcc_jit_rvalue *i) {
  gcc_jit_type *u = c->t_u64;
  gcc_jit_rvalue *k0[10], *k1[10];
  philox_keys(c, n, k0, k1);
  i = keep(c, i, u);
  gcc_jit_rvalue *w[4] = {u_lo(c, i), u_xor(c, u_hi(c, i), k0[0]), u_lo(c, s), u_xor(c, u_hi(c, s), k1[0])};
  for (int r = 0; r < 10; r++) {
    gcc_jit_rvalue *p0 = keep(c, u_op(c, GCC_JIT_BINARY_OP_MULT, w[0], u64c(c, PHILOX_M0)), u);
    gcc_jit_rvalue *p1 = keep(c, u_op(c, GCC_JIT_BINARY_OP_MULT, w[2], u64c(c, PHILOX_M1)), u);
    w[0] = keep(c, u_op(c, GCC_JIT_BINARY_OP_BITWISE_XOR, u_hi(c, p1), w[1]), u);
    if (r == 9) break;  /* only r0 is used */
    w[2] = keep(c, u_op(c, GCC_JIT_BINARY_OP_BITWISE_XOR, u_hi(c, p0), w[3]), u);
    w[1] = keep(c, u_lo(c, u_xor(c, p1, k0[r + 1])), u);
    w[3] = keep(c, u_lo(c, u_xor(c, p0, k1[r + 1])), u);
  }
  return w[0];
}

/* The uniform number (r0 >> 8) * 2^-24 of dtype dt from r0 (uint64).  The
 * 24-bit integer converts exactly (through int32, which vectorises on every
 * ISA level), and its product with 2^-24 is exact in f32 as in f64, so f32
 * computed directly equals the runtime's double rounded to f32. */
static gcc_jit_rvalue *uniform_of(cg *c, gcc_jit_rvalue *r0, td_dtype dt) {
  gcc_jit_rvalue *x = cast(c, u_op(c, GCC_JIT_BINARY_OP_RSHIFT, r0, u64c(c, 8)), c->t_i32);
  gcc_jit_type *ft = dt == TD_F32 ? c->t_f32 : c->t_f64;
  gcc_jit_rvalue *scale = gcc_jit_context_new_rvalue_from_double(c->ctx, ft, 1.0 / 16777216.0);
  gcc_jit_rvalue *v = bin(c, GCC_JIT_BINARY_OP_MULT, ft, cast(c, x, ft), scale);
  return dt == TD_F32 || dt == TD_F64 ? v : cast(c, v, c->vt[dt]);
}

/* Element `i` (uint64 rvalue) of random node n, emitted into c->blk: rand
 * inline (philox_r0), randn through the runtime's td_rand_normal, whose
 * log and cos in double are libm's. */
static gcc_jit_rvalue *random_at(cg *c, int n, gcc_jit_rvalue *i) {
  const td_node *nd = ND(c, n);
  gcc_jit_rvalue *s = cast(c, cg_rand_stream(c, n), c->t_u64);
  if (nd->op == TD_IR_RAND) return uniform_of(c, philox_r0(c, n, s, i), nd->dtype);
  gcc_jit_type *ps[3] = {c->t_u64, c->t_u64, c->t_u64};
  gcc_jit_rvalue *args[3] = {philox_seed(c, n), s, i};
  return cast(c, cg_rt_call(c, TDC_RT_RAND_NORMAL, c->t_f64, 3, ps, args), c->vt[nd->dtype]);
}

static gcc_jit_rvalue *random_value(cg *c, int n, const cg_ix *ix) {
  const td_node *nd = ND(c, n);
  int one = 1;
  for (int k = 0; k < nd->rank; k++) one &= nd->shape[k] == 1;
  if (!one) return random_at(c, n, cast(c, cg_offset(c, n, ix), c->t_u64));
  /* one number per call: drawn once in the entry block, however many
   * places of the kernel (a matmul's tiles and edges) read it */
  if (!c->hoisted[n]) {
    cg_rand_stream(c, n);  /* its load from dv goes first in the entry block */
    gcc_jit_block *save = c->blk;
    c->blk = c->entry;
    gcc_jit_lvalue *l = cg_local(c, c->vt[nd->dtype], "rnd");
    cg_assign(c, l, random_at(c, n, u64c(c, 0)));
    c->blk = save;
    c->hoisted[n] = l;
  }
  return as_rv(c->hoisted[n]);
}

/* ---- gather and concat: the branches ------------------------------------------------------ */

/* The index iv on an axis of size d: wrapped when negative, and a bad
 * index sets the status and reads nothing (the value is 0: the data may
 * be empty, and its index arithmetic then divides by 0). */
static void *kx_take_begin(void *be, td_kxbranch *b, int n, td_dtype dt, void *iv_, td_dim size) {
  cg *c = be;
  gcc_jit_rvalue *iv = keep(c, iv_, c->t_i64);
  gcc_jit_rvalue *d = cg_dim(c, size), *zero = cg_i64(c, 0);
  iv = keep(c, cg_select(c, cmp(c, GCC_JIT_COMPARISON_LT, iv, zero),
                         bin(c, GCC_JIT_BINARY_OP_PLUS, c->t_i64, iv, d), iv, c->t_i64), c->t_i64);
  gcc_jit_rvalue *bad = keep(c, lor(c, cmp(c, GCC_JIT_COMPARISON_LT, iv, zero),
                                    cmp(c, GCC_JIT_COMPARISON_GE, iv, d)), c->t_bool);
  gcc_jit_lvalue *r = cg_local(c, c->vt[dt], "tk");
  gcc_jit_block *t = cg_block(c, "oob"), *j = cg_block(c, "inb"), *done = cg_block(c, "tk_end");
  gcc_jit_block_end_with_conditional(c->blk, NULL, bad, t, j);
  gcc_jit_block_add_assignment(t, NULL, gcc_jit_rvalue_dereference(c->p_status, NULL),
                               cg_status_code(c, n, 0));
  gcc_jit_block_add_assignment(t, NULL, r, gcc_jit_context_zero(c->ctx, c->vt[dt]));
  gcc_jit_block_end_with_jump(t, NULL, done);
  c->blk = j;
  b->var = r;
  b->join = done;
  return iv;
}

static void *kx_take_end(void *be, td_kxbranch *b, void *v) {
  cg *c = be;
  cg_assign(c, b->var, v);
  gcc_jit_block_end_with_jump(c->blk, NULL, b->join);
  c->blk = b->join;
  return as_rv(b->var);
}

static void kx_cat_begin(void *be, td_kxbranch *b, td_dtype dt) {
  cg *c = be;
  b->var = cg_local(c, c->vt[dt], "cat");
  b->join = cg_block(c, "cat_end");
}

static void kx_cat_case(void *be, td_kxbranch *b, void *coord, td_dim lim, int last) {
  cg *c = be;
  gcc_jit_block *in = c->blk, *next = NULL;
  if (!last) {
    in = cg_block(c, "cat_in");
    next = cg_block(c, "cat_next");
    gcc_jit_block_end_with_conditional(c->blk, NULL, cmp(c, GCC_JIT_COMPARISON_LT, coord, cg_dim(c, lim)), in, next);
  }
  c->blk = in;
  b->next = next;
}

static void kx_cat_value(void *be, td_kxbranch *b, void *v) {
  cg *c = be;
  cg_assign(c, b->var, v);
  gcc_jit_block_end_with_jump(c->blk, NULL, b->join);
  c->blk = b->next;
}

static void *kx_cat_end(void *be, td_kxbranch *b) {
  cg *c = be;
  c->blk = b->join;
  return as_rv(b->var);
}

/* ---- the evaluator: kexpr.c's, over gccjit rvalues ---------------------------------------- */

static int kx_failed(void *be) { return cg_failed(be) != 0; }

static void kx_fail(void *be, const char *msg) {
  cg *c = be;
  if (!c->err->msg[0]) td_err_set(c->err, "%s", msg);
}

static void *kx_load(void *be, int n, const td_ix *ix) { return load(be, n, ix); }
static void *kx_keep(void *be, td_dtype dt, void *v) { return keep(be, v, ((cg *)be)->vt[dt]); }
static void *kx_lit(void *be, td_dtype dt, double f, int64_t i) { return cg_const(be, dt, f, i); }
static void *kx_random(void *be, int n, const td_ix *ix) { return random_value(be, n, ix); }

static const td_kx_ops kx_ops = {
    .name = "CPU", .failed = kx_failed, .fail = kx_fail, .load = kx_load, .keep = kx_keep, .lit = kx_lit,
    .random = kx_random, .isub = ix_sub, .op = kx_op, .cast = kx_cast, .f2i = kx_f2i, .half_to_f32 = kx_half_to_f32,
    .f64_to_f32_odd = kx_f64_to_f32_odd, .f32_to_half = kx_f32_to_half, .take_begin = kx_take_begin,
    .take_end = kx_take_end, .cat_begin = kx_cat_begin, .cat_case = kx_cat_case, .cat_value = kx_cat_value,
    .cat_end = kx_cat_end};

td_kxgen cg_kxgen(cg *c) {
  return (td_kxgen){&kx_ops, cg_ixgen(c), c->k, c->in_k, c->red_val, c->mm_acc, &c->memo, &c->n_memo, &c->cap_memo};
}

gcc_jit_rvalue *cg_eval(cg *c, int n, const cg_ix *ix) {
  td_kxgen x = cg_kxgen(c);
  return td_kx_eval(&x, n, ix);
}

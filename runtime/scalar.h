/* scalar.h - the scalar helpers named in lang/ops.def's C column.
 *
 * Every elementwise op whose formula is not the same C operator for every
 * dtype of its domain is spelled td_NAME(a) or td_NAME(a, b) in ops.def.
 * This header defines those names for the interpreter, the constant folder
 * and generated C and CUDA code, so all backends compute the same value
 * for the same element; what differs between dtypes is decided here:
 *
 *   - one typed function per dtype (td_exp_f32, td_exp_f64, td_div_i32, ...);
 *   - in C, td_NAME(...) is a _Generic macro choosing the typed function
 *     from the argument's type (for binary helpers, the type of a + b);
 *     in C++ (CUDA), td_NAME is an overload set of the same functions.
 *
 * Semantics fixed here (the reference for every backend):
 *   td_neg / td_add / td_sub / td_mul  floats: the C operators.  Ints:
 *            two's complement wrap-around (computed unsigned, never UB).
 *   td_div   floats: true division.  Ints: floor division (Python's //);
 *            x / 0 == 0 and MIN / -1 == MIN (wraps) instead of trapping.
 *   td_mod   the result takes the sign of the divisor (Python's %), for
 *            ints and floats; ints: x % 0 == 0.  Floats: x % 0 is NaN.
 *   td_floordiv  Python's // (numpy's floor_divide).  Ints: td_div.
 *            Floats: the quotient of a - fmod(a, b) by b, lowered by one
 *            where fmod's sign is not b's, then rounded to the nearest
 *            integer (it is one already up to the division's rounding),
 *            which is exact where floor(a / b) is not (1 // 0.1 is 9, as
 *            1 - 0.1 * 9 > 0, while 1 / 0.1 rounds to 10); a zero quotient
 *            takes the sign of a / b; x // 0 is a / 0 (inf or NaN); an
 *            infinite a gives NaN (fmod of inf), as numpy does.
 *   td_pow   floats: pow.  Ints: exact power with wrap-around; a negative
 *            exponent gives 1 for a == 1, +-1 for a == -1 and 0 otherwise.
 *   td_min / td_max  propagate NaN (either operand NaN -> NaN).
 *   td_relu  max(a, 0) with NaN propagating (relu(NaN) is NaN).
 *   td_round half to even (rint under the default rounding mode).
 *   td_gelu  the exact form 0.5 * a * (1 + erf(a / sqrt(2))).
 *   f32 exp, log, tanh, erf, gelu (and sigmoid, silu through exp) are
 *            tdsl's own polynomial and rational approximations, not libm's
 *            (see "f32 transcendentals" below): the compiled code
 *            (compiler/codegen_expr.c) emits these very operations in this
 *            order, so eager, compiled and CUDA results agree bit for bit.
 *            f64 uses libm, and so does compiled code.
 *   td_f2i32 / td_f2i64  float -> int CAST: truncate, saturate, NaN -> 0.
 *   td_floor/td_ceil/td_round/td_abs/td_relu/td_min/td_max also accept
 *            ints (exact); the transcendental helpers take f32 or f64 only
 *            (an integer argument selects the f64 version).  bool (0 or 1
 *            in a byte) promotes to int, so td_min / td_max of bools are
 *            the i32 versions: logical and / or.
 *
 * TD_SCALAR_FN (default `static inline`) lets the CUDA backend prefix its
 * own qualifiers (e.g. `static __device__ inline`) before including this.
 */
#ifndef TD_SCALAR_H
#define TD_SCALAR_H

#include <math.h>
#include <stdint.h>

#ifndef TD_SCALAR_FN
#define TD_SCALAR_FN static inline
#endif

/* ---- f32 transcendentals ----
 *
 * Vectorisable approximations (no libm call, both sides of every case split
 * computed, then one selected), the reference for compiler/codegen_expr.c,
 * which emits the same operations in the same order (exp_f32_k, tanh_f32,
 * erf_parts, gelu_f32, log_f32 there; constants are rounded
 * decimal -> double -> float there too, hence the (float) casts).  The
 * fused multiply-adds are explicit (fmaf: one rounding, the same value on
 * every CPU and GPU; one instruction where the ISA has FMA), and nothing
 * else may be contracted into one (the build uses -ffp-contract=off;
 * generated code too; CUDA --fmad=false).  Errors
 * against float64 libm are measured by tests/unit/test_mathfns.c (the
 * table in docs/compiler.md): exp and tanh relative 4e-7, erf absolute
 * 2e-7, gelu absolute 1.5e-7, log relative 3e-7 away from 1. */
typedef union td_f32_bits_ {
  float f;
  int32_t i;
} td_f32_bits_;

TD_SCALAR_FN float td_f32_from_bits_(int32_t i) {
  td_f32_bits_ u;
  u.i = i;
  return u.f;
}

TD_SCALAR_FN int32_t td_f32_to_bits_(float f) {
  td_f32_bits_ u;
  u.f = f;
  return u.i;
}

/* Horner: k[0] + u (k[1] + u (... + u k[n-1])), one FMA per step. */
TD_SCALAR_FN float td_horner_f32_(const float *k, int n, float u) {
  float p = k[n - 1];
  for (int i = n - 2; i >= 0; i--) p = fmaf(p, u, k[i]);
  return p;
}

/* Cody-Waite x = n ln2 + r, Cephes' degree-6 polynomial for e^r, and 2^n
 * as 2^h 2^(n-h), h = n >> 1, both factors normal; x clamped to [-110, 89]
 * first (NaN passes the clamps, and so through the arithmetic). */
TD_SCALAR_FN float td_exp_f32(float x) {
  const float cf[6] = {(float)1.9875691500e-4, (float)1.3981999507e-3, (float)8.3334519073e-3,
                              (float)4.1665795894e-2, (float)1.6666665459e-1, (float)5.0000001201e-1};
  float t = x > 89.0f ? 89.0f : x;
  float xc = t < -110.0f ? -110.0f : t;
  float n = rintf(xc * (float)1.44269504088896341);
  float r = fmaf(n, -0.693359375f, xc);
  r = fmaf(n, -(float)-2.12194440e-4, r);
  float p = cf[0];
  for (int i = 1; i < 6; i++) p = fmaf(p, r, cf[i]);
  p = fmaf(p, r * r, r) + 1.0f;
  int32_t ni = n == n ? (int32_t)n : 0;   /* NaN: p is NaN whatever the scale */
  int32_t h = ni >> 1;
  p = p * td_f32_from_bits_((h + 127) << 23);
  return p * td_f32_from_bits_((ni - h + 127) << 23);
}

/* |x| < 0.625: x P(x^2); else +-(1 - 2 / (e^(2|x|) + 1)), |x| clamped at 10. */
TD_SCALAR_FN float td_tanh_f32(float x) {
  const float P[6] = {(float)1.0, (float)-0.33333155512809753, (float)0.13329674303531647,
                             (float)-0.053638387471437454, (float)0.02038448303937912,
                             (float)-0.00547208683565259};
  float ax = fabsf(x);
  float small = x * td_horner_f32_(P, 6, x * x);
  float axc = ax > 10.0f ? 10.0f : ax;
  float e = td_exp_f32(axc * 2.0f);
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0.0f ? -big : big;
  return ax < 0.625f ? small : big;
}

/* erf's parts at x: *small = erf(x) for |x| < 1 (x P(x^2)); the return
 * value erfc(|x|) for |x| >= 1 (e^-x^2 Q(1/|x|), Q fitted to erfcx on
 * [1, 4]; 0 beyond 4); *ax = |x|. */
TD_SCALAR_FN float td_erf_parts_f32_(float x, float *ax, float *small) {
  const float P[6] = {(float)1.1283791065216064, (float)-0.3761230707168579,
                             (float)0.11280214786529541, (float)-0.026714764535427094,
                             (float)0.004923390224575996, (float)-0.0005660624592565};
  const float Q[9] = {(float)0.00024081504670903087, (float)0.5595282912254333,
                             (float)0.038611654192209244, (float)-0.45846399664878845,
                             (float)0.4659734070301056, (float)-0.19677415490150452,
                             (float)-0.016038144007325172, (float)0.047995295375585556,
                             (float)-0.013489649631083012};
  *ax = fabsf(x);
  *small = x * td_horner_f32_(P, 6, x * x);
  float t = *ax < 1.0f ? 1.0f : *ax;
  t = t > 4.0f ? 4.0f : t;
  float u = 1.0f / t;
  float e = td_exp_f32(-(t * t));
  float tl = e * td_horner_f32_(Q, 9, u);
  return *ax > 4.0f ? 0.0f : tl;
}

TD_SCALAR_FN float td_erf_f32(float x) {
  float ax, small, tail = td_erf_parts_f32_(x, &ax, &small);
  float big = 1.0f - tail;
  big = x < 0.0f ? -big : big;
  return ax < 1.0f ? small : big;
}

/* 0.5 a (1 + erf(a / sqrt 2)), with 1 + erf(s) for s <= -1 taken as
 * erfc(|s|) directly (no cancellation). */
TD_SCALAR_FN float td_gelu_f32(float a) {
  float s = a * 0.70710678118654752f;
  float ax, small, tl = td_erf_parts_f32_(s, &ax, &small);
  float big = s < 0.0f ? tl : 2.0f - tl;
  float one_p = ax < 1.0f ? 1.0f + small : big;
  return (0.5f * a) * one_p;
}

/* x = m 2^e, m in [0.707, 1.414), log m = 2 atanh((m - 1) / (m + 1)) as an
 * odd series to s^9; subnormals scaled by 2^23 first; 0 -> -inf, < 0 ->
 * NaN, +inf and NaN returned as they are. */
TD_SCALAR_FN float td_log_f32(float x) {
  const float S[4] = {(float)(2.0 / 3), (float)(2.0 / 5), (float)(2.0 / 7), (float)(2.0 / 9)};
  int sub = x < 0x1p-126f;
  float xs = sub ? x * 0x1p23f : x;
  int32_t bits = td_f32_to_bits_(xs);
  int32_t e = ((bits >> 23) - 127) - (sub ? 23 : 0);
  float m = td_f32_from_bits_((bits & 0x7fffff) | 0x3f800000);
  int big = m > (float)1.41421356237;
  m = big ? m * 0.5f : m;
  float ef = (float)(e + (big ? 1 : 0));
  float sx = (m - 1.0f) / (m + 1.0f);
  float z = sx * sx;
  float lm = fmaf(sx * z, td_horner_f32_(S, 4, z), sx * 2.0f);
  float r = fmaf(ef, 0.693359375f, fmaf(ef, (float)-2.12194440e-4, lm));
  float inf = td_f32_from_bits_(0x7f800000);
  r = x == inf ? x : r;
  r = x == 0.0f ? -inf : r;
  r = x < 0.0f ? td_f32_from_bits_(0x7fc00000) : r;
  return x != x ? x : r;
}

/* ---- float arithmetic (the C operators, named for ops.def) ---- */
TD_SCALAR_FN float td_neg_f32(float a) { return -a; }
TD_SCALAR_FN double td_neg_f64(double a) { return -a; }
TD_SCALAR_FN float td_add_f32(float a, float b) { return a + b; }
TD_SCALAR_FN double td_add_f64(double a, double b) { return a + b; }
TD_SCALAR_FN float td_sub_f32(float a, float b) { return a - b; }
TD_SCALAR_FN double td_sub_f64(double a, double b) { return a - b; }
TD_SCALAR_FN float td_mul_f32(float a, float b) { return a * b; }
TD_SCALAR_FN double td_mul_f64(double a, double b) { return a * b; }

/* ---- float transcendental and rounding helpers ---- */
TD_SCALAR_FN double td_exp_f64(double a) { return exp(a); }
TD_SCALAR_FN double td_log_f64(double a) { return log(a); }
TD_SCALAR_FN float td_sqrt_f32(float a) { return sqrtf(a); }
TD_SCALAR_FN double td_sqrt_f64(double a) { return sqrt(a); }
TD_SCALAR_FN float td_rsqrt_f32(float a) { return 1.0f / sqrtf(a); }
TD_SCALAR_FN double td_rsqrt_f64(double a) { return 1.0 / sqrt(a); }
TD_SCALAR_FN float td_sin_f32(float a) { return sinf(a); }
TD_SCALAR_FN double td_sin_f64(double a) { return sin(a); }
TD_SCALAR_FN float td_cos_f32(float a) { return cosf(a); }
TD_SCALAR_FN double td_cos_f64(double a) { return cos(a); }
TD_SCALAR_FN double td_tanh_f64(double a) { return tanh(a); }
TD_SCALAR_FN double td_erf_f64(double a) { return erf(a); }
TD_SCALAR_FN float td_log1p_f32(float a) { return log1pf(a); }
TD_SCALAR_FN double td_log1p_f64(double a) { return log1p(a); }
TD_SCALAR_FN float td_sigmoid_f32(float a) { return 1.0f / (1.0f + td_exp_f32(-a)); }
TD_SCALAR_FN double td_sigmoid_f64(double a) { return 1.0 / (1.0 + exp(-a)); }
TD_SCALAR_FN float td_silu_f32(float a) { return a / (1.0f + td_exp_f32(-a)); }
TD_SCALAR_FN double td_silu_f64(double a) { return a / (1.0 + exp(-a)); }
TD_SCALAR_FN double td_gelu_f64(double a) {
  return 0.5 * a * (1.0 + erf(a * 0.70710678118654752440));
}
TD_SCALAR_FN float td_floor_f32(float a) { return floorf(a); }
TD_SCALAR_FN double td_floor_f64(double a) { return floor(a); }
TD_SCALAR_FN float td_ceil_f32(float a) { return ceilf(a); }
TD_SCALAR_FN double td_ceil_f64(double a) { return ceil(a); }
TD_SCALAR_FN float td_round_f32(float a) { return rintf(a); }
TD_SCALAR_FN double td_round_f64(double a) { return rint(a); }
TD_SCALAR_FN float td_abs_f32(float a) { return fabsf(a); }
TD_SCALAR_FN double td_abs_f64(double a) { return fabs(a); }
/* `a < 0` is false for NaN, so NaN passes through. */
TD_SCALAR_FN float td_relu_f32(float a) { return a < 0.0f ? 0.0f : a; }
TD_SCALAR_FN double td_relu_f64(double a) { return a < 0.0 ? 0.0 : a; }

/* ---- float binary helpers ---- */
TD_SCALAR_FN float td_div_f32(float a, float b) { return a / b; }
TD_SCALAR_FN double td_div_f64(double a, double b) { return a / b; }
TD_SCALAR_FN float td_pow_f32(float a, float b) { return powf(a, b); }
TD_SCALAR_FN double td_pow_f64(double a, double b) { return pow(a, b); }
TD_SCALAR_FN float td_min_f32(float a, float b) { return (a < b || a != a) ? a : b; }
TD_SCALAR_FN double td_min_f64(double a, double b) { return (a < b || a != a) ? a : b; }
TD_SCALAR_FN float td_max_f32(float a, float b) { return (a > b || a != a) ? a : b; }
TD_SCALAR_FN double td_max_f64(double a, double b) { return (a > b || a != a) ? a : b; }
/* Python's float %: fmod, then moved into the divisor's sign. */
TD_SCALAR_FN float td_mod_f32(float a, float b) {
  float r = fmodf(a, b);
  if (r != 0.0f) {
    if ((r < 0.0f) != (b < 0.0f)) r += b;
  } else {
    r = copysignf(0.0f, b);
  }
  return r;
}
TD_SCALAR_FN double td_mod_f64(double a, double b) {
  double r = fmod(a, b);
  if (r != 0.0) {
    if ((r < 0.0) != (b < 0.0)) r += b;
  } else {
    r = copysign(0.0, b);
  }
  return r;
}

/* Python's float // (see td_floordiv above); one formula for both widths. */
#define TD_FLOORDIV_F_(T, S, FMOD, FLOOR, COPYSIGN)                               \
  TD_SCALAR_FN T td_floordiv_##S(T a, T b) {                                      \
    if (b == 0) return a / b;                                                     \
    T m = FMOD(a, b), q = (a - m) / b;                                            \
    if (m != 0 && ((b < 0) != (m < 0))) q -= 1;                                   \
    if (q == 0) return COPYSIGN((T)0, a / b);                                     \
    T f = FLOOR(q);                                                               \
    return q - f > (T)0.5 ? f + 1 : f;                                            \
  }
TD_FLOORDIV_F_(float, f32, fmodf, floorf, copysignf)
TD_FLOORDIV_F_(double, f64, fmod, floor, copysign)
#undef TD_FLOORDIV_F_

/* ---- float -> int conversion (CAST): truncate toward zero, saturate out
 * of range, NaN -> 0 (a plain C cast is undefined there) ---- */
TD_SCALAR_FN int32_t td_f2i32(double x) {
  if (x != x) return 0;
  if (x >= 2147483647.0) return INT32_MAX;
  if (x <= -2147483648.0) return INT32_MIN;
  return (int32_t)x;
}
TD_SCALAR_FN int64_t td_f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}

/* ---- integer helpers (wrap-around arithmetic, never trap) ---- */
#define TD_SCALAR_INT_(T, U, S)                                                   \
  TD_SCALAR_FN T td_neg_##S(T a) { return (T)(0 - (U)a); }                        \
  TD_SCALAR_FN T td_add_##S(T a, T b) { return (T)((U)a + (U)b); }                \
  TD_SCALAR_FN T td_sub_##S(T a, T b) { return (T)((U)a - (U)b); }                \
  TD_SCALAR_FN T td_mul_##S(T a, T b) { return (T)((U)a * (U)b); }                \
  TD_SCALAR_FN T td_abs_##S(T a) { return a < 0 ? (T)(0 - (U)a) : a; }            \
  TD_SCALAR_FN T td_relu_##S(T a) { return a < 0 ? 0 : a; }                       \
  TD_SCALAR_FN T td_floor_##S(T a) { return a; }                                  \
  TD_SCALAR_FN T td_ceil_##S(T a) { return a; }                                   \
  TD_SCALAR_FN T td_round_##S(T a) { return a; }                                  \
  TD_SCALAR_FN T td_min_##S(T a, T b) { return a < b ? a : b; }                   \
  TD_SCALAR_FN T td_max_##S(T a, T b) { return a > b ? a : b; }                   \
  TD_SCALAR_FN T td_div_##S(T a, T b) {                                           \
    if (b == 0) return 0;                                                         \
    if (b == -1) return (T)(0 - (U)a);                                            \
    T q = a / b;                                                                  \
    return (a % b != 0 && ((a < 0) != (b < 0))) ? (T)(q - 1) : q;                 \
  }                                                                               \
  TD_SCALAR_FN T td_floordiv_##S(T a, T b) { return td_div_##S(a, b); }         \
  TD_SCALAR_FN T td_mod_##S(T a, T b) {                                           \
    if (b == 0 || b == -1) return 0;                                              \
    T r = a % b;                                                                  \
    return (r != 0 && ((r < 0) != (b < 0))) ? (T)(r + b) : r;                     \
  }                                                                               \
  TD_SCALAR_FN T td_pow_##S(T a, T b) {                                           \
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;              \
    U r = 1, x = (U)a;                                                            \
    while (b > 0) {                                                               \
      if (b & 1) r *= x;                                                          \
      x *= x;                                                                     \
      b >>= 1;                                                                    \
    }                                                                             \
    return (T)r;                                                                  \
  }
TD_SCALAR_INT_(int32_t, uint32_t, i32)
TD_SCALAR_INT_(int64_t, uint64_t, i64)
#undef TD_SCALAR_INT_

#ifndef __cplusplus
/* ---- C: choose the typed helper from the argument type ---- */
#define TD_GEN_F_(name, a) _Generic((a), float: name##_f32, default: name##_f64)(a)
#define TD_GEN_FI_(name, a)                                                       \
  _Generic((a), float: name##_f32, int32_t: name##_i32, int64_t: name##_i64,     \
           default: name##_f64)(a)
#define TD_GEN_FI2_(name, a, b)                                                   \
  _Generic((a) + (b), float: name##_f32, int32_t: name##_i32,                     \
           int64_t: name##_i64, default: name##_f64)(a, b)
#define td_exp(a) TD_GEN_F_(td_exp, a)
#define td_log(a) TD_GEN_F_(td_log, a)
#define td_sqrt(a) TD_GEN_F_(td_sqrt, a)
#define td_rsqrt(a) TD_GEN_F_(td_rsqrt, a)
#define td_sin(a) TD_GEN_F_(td_sin, a)
#define td_cos(a) TD_GEN_F_(td_cos, a)
#define td_tanh(a) TD_GEN_F_(td_tanh, a)
#define td_erf(a) TD_GEN_F_(td_erf, a)
#define td_log1p(a) TD_GEN_F_(td_log1p, a)
#define td_sigmoid(a) TD_GEN_F_(td_sigmoid, a)
#define td_silu(a) TD_GEN_F_(td_silu, a)
#define td_gelu(a) TD_GEN_F_(td_gelu, a)
#define td_neg(a) TD_GEN_FI_(td_neg, a)
#define td_abs(a) TD_GEN_FI_(td_abs, a)
#define td_relu(a) TD_GEN_FI_(td_relu, a)
#define td_floor(a) TD_GEN_FI_(td_floor, a)
#define td_ceil(a) TD_GEN_FI_(td_ceil, a)
#define td_round(a) TD_GEN_FI_(td_round, a)
#define td_add(a, b) TD_GEN_FI2_(td_add, a, b)
#define td_sub(a, b) TD_GEN_FI2_(td_sub, a, b)
#define td_mul(a, b) TD_GEN_FI2_(td_mul, a, b)
#define td_div(a, b) TD_GEN_FI2_(td_div, a, b)
#define td_mod(a, b) TD_GEN_FI2_(td_mod, a, b)
#define td_floordiv(a, b) TD_GEN_FI2_(td_floordiv, a, b)
#define td_pow(a, b) TD_GEN_FI2_(td_pow, a, b)
#define td_min(a, b) TD_GEN_FI2_(td_min, a, b)
#define td_max(a, b) TD_GEN_FI2_(td_max, a, b)
#else
/* ---- C++: overloads with the same names ---- */
#define TD_OVL1_(name, T, S) TD_SCALAR_FN T name(T a) { return name##_##S(a); }
#define TD_OVL2_(name, T, S) TD_SCALAR_FN T name(T a, T b) { return name##_##S(a, b); }
#define TD_OVL_F_(name) TD_OVL1_(name, float, f32) TD_OVL1_(name, double, f64)
#define TD_OVL_FI_(name) TD_OVL_F_(name) TD_OVL1_(name, int32_t, i32) TD_OVL1_(name, int64_t, i64)
#define TD_OVL_FI2_(name)                                                         \
  TD_OVL2_(name, float, f32) TD_OVL2_(name, double, f64)                          \
  TD_OVL2_(name, int32_t, i32) TD_OVL2_(name, int64_t, i64)
TD_OVL_F_(td_exp) TD_OVL_F_(td_log) TD_OVL_F_(td_sqrt) TD_OVL_F_(td_rsqrt)
TD_OVL_F_(td_sin) TD_OVL_F_(td_cos) TD_OVL_F_(td_tanh) TD_OVL_F_(td_erf)
TD_OVL_F_(td_log1p)
TD_OVL_F_(td_sigmoid) TD_OVL_F_(td_silu) TD_OVL_F_(td_gelu)
TD_OVL_FI_(td_neg) TD_OVL_FI_(td_abs) TD_OVL_FI_(td_relu) TD_OVL_FI_(td_floor) TD_OVL_FI_(td_ceil)
TD_OVL_FI_(td_round)
TD_OVL_FI2_(td_add) TD_OVL_FI2_(td_sub) TD_OVL_FI2_(td_mul)
TD_OVL_FI2_(td_div) TD_OVL_FI2_(td_mod) TD_OVL_FI2_(td_floordiv) TD_OVL_FI2_(td_pow) TD_OVL_FI2_(td_min)
TD_OVL_FI2_(td_max)
#endif

#endif

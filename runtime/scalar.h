/* scalar.h - the scalar helpers named in lang/ops.def's C column.
 *
 * Every elementwise op that is not a plain C operator is spelled td_NAME(a)
 * or td_NAME(a, b) in ops.def.  This header defines those names for the
 * interpreter and for generated C code, so all backends compute the same
 * value for the same element:
 *
 *   - one typed function per dtype (td_exp_f32, td_exp_f64, td_div_i32, ...);
 *   - in C, td_NAME(...) is a _Generic macro choosing the typed function
 *     from the argument's type (for binary helpers, the type of a + b);
 *     in C++ (CUDA), td_NAME is an overload set of the same functions.
 *
 * Semantics fixed here (the reference for every backend):
 *   td_div   floats: true division.  Ints: floor division (Python's //);
 *            x / 0 == 0 and MIN / -1 == MIN (wraps) instead of trapping.
 *   td_mod   the result takes the sign of the divisor (Python's %), for
 *            ints and floats; ints: x % 0 == 0.  Floats: x % 0 is NaN.
 *   td_pow   floats: pow.  Ints: exact power with wrap-around; a negative
 *            exponent gives 1 for a == 1, +-1 for a == -1 and 0 otherwise.
 *   td_min / td_max  propagate NaN (either operand NaN -> NaN).
 *   td_relu  max(a, 0) with NaN propagating (relu(NaN) is NaN).
 *   td_round half to even (rint under the default rounding mode).
 *   td_gelu  the exact form 0.5 * a * (1 + erf(a / sqrt(2))).
 *   td_f2i32 / td_f2i64  float -> int CAST: truncate, saturate, NaN -> 0.
 *   td_floor/td_ceil/td_round/td_abs/td_relu/td_min/td_max also accept
 *            ints (exact); the transcendental helpers take f32 or f64 only
 *            (an integer argument selects the f64 version).
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

/* ---- float transcendental and rounding helpers ---- */
TD_SCALAR_FN float td_exp_f32(float a) { return expf(a); }
TD_SCALAR_FN double td_exp_f64(double a) { return exp(a); }
TD_SCALAR_FN float td_log_f32(float a) { return logf(a); }
TD_SCALAR_FN double td_log_f64(double a) { return log(a); }
TD_SCALAR_FN float td_sqrt_f32(float a) { return sqrtf(a); }
TD_SCALAR_FN double td_sqrt_f64(double a) { return sqrt(a); }
TD_SCALAR_FN float td_rsqrt_f32(float a) { return 1.0f / sqrtf(a); }
TD_SCALAR_FN double td_rsqrt_f64(double a) { return 1.0 / sqrt(a); }
TD_SCALAR_FN float td_sin_f32(float a) { return sinf(a); }
TD_SCALAR_FN double td_sin_f64(double a) { return sin(a); }
TD_SCALAR_FN float td_cos_f32(float a) { return cosf(a); }
TD_SCALAR_FN double td_cos_f64(double a) { return cos(a); }
TD_SCALAR_FN float td_tanh_f32(float a) { return tanhf(a); }
TD_SCALAR_FN double td_tanh_f64(double a) { return tanh(a); }
TD_SCALAR_FN float td_erf_f32(float a) { return erff(a); }
TD_SCALAR_FN double td_erf_f64(double a) { return erf(a); }
TD_SCALAR_FN float td_sigmoid_f32(float a) { return 1.0f / (1.0f + expf(-a)); }
TD_SCALAR_FN double td_sigmoid_f64(double a) { return 1.0 / (1.0 + exp(-a)); }
TD_SCALAR_FN float td_silu_f32(float a) { return a / (1.0f + expf(-a)); }
TD_SCALAR_FN double td_silu_f64(double a) { return a / (1.0 + exp(-a)); }
TD_SCALAR_FN float td_gelu_f32(float a) {
  return 0.5f * a * (1.0f + erff(a * 0.70710678118654752f));
}
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
#define td_sigmoid(a) TD_GEN_F_(td_sigmoid, a)
#define td_silu(a) TD_GEN_F_(td_silu, a)
#define td_gelu(a) TD_GEN_F_(td_gelu, a)
#define td_abs(a) TD_GEN_FI_(td_abs, a)
#define td_relu(a) TD_GEN_FI_(td_relu, a)
#define td_floor(a) TD_GEN_FI_(td_floor, a)
#define td_ceil(a) TD_GEN_FI_(td_ceil, a)
#define td_round(a) TD_GEN_FI_(td_round, a)
#define td_div(a, b) TD_GEN_FI2_(td_div, a, b)
#define td_mod(a, b) TD_GEN_FI2_(td_mod, a, b)
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
TD_OVL_F_(td_sigmoid) TD_OVL_F_(td_silu) TD_OVL_F_(td_gelu)
TD_OVL_FI_(td_abs) TD_OVL_FI_(td_relu) TD_OVL_FI_(td_floor) TD_OVL_FI_(td_ceil)
TD_OVL_FI_(td_round)
TD_OVL_FI2_(td_div) TD_OVL_FI2_(td_mod) TD_OVL_FI2_(td_pow) TD_OVL_FI2_(td_min)
TD_OVL_FI2_(td_max)
#endif

#endif

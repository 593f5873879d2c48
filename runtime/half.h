/* half.h - conversions between f32/f64 and the 16-bit float storage types.
 *
 * f16 is IEEE 754 binary16 (1 sign, 5 exponent, 10 fraction bits); bf16 is
 * bfloat16 (1 sign, 8 exponent, 7 fraction bits: the top half of an f32).
 * Both are stored as uint16_t bit patterns; every operation on them computes
 * in f32 and rounds once (docs/language.md).  These helpers are the
 * reference for every backend (the compiler and the CUDA generator emit the
 * same integer formulas):
 *
 *   td_f32_to_bf16  round to nearest even; NaN stays NaN (quiet, sign kept);
 *                   values past the largest bf16 round to +-inf.
 *   td_bf16_to_f32  exact: a 16-bit shift.
 *   td_f32_to_f16   round to nearest even, subnormals included; |x| >= 65520
 *                   gives +-inf; NaN gives the quiet NaN 0x7e00 (sign kept).
 *   td_f16_to_f32   exact, subnormals included.
 *   td_f64_to_*     one rounding from f64: the f64 is first rounded to f32
 *                   with round-to-odd (exact for a later rounding to <= 22
 *                   significant bits), then to the half type.
 *
 * They are branch-free (conditional selects only) so loops over them
 * vectorise.
 */
#ifndef TD_HALF_H
#define TD_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t td_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float td_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t td_f32_to_bf16(float f) {
  uint32_t u = td_f32_bits(f);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x40u;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

static inline float td_bf16_to_f32(uint16_t h) { return td_bits_f32((uint32_t)h << 16); }

static inline uint16_t td_f32_to_f16(float f) {
  uint32_t u = td_f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  /* normal range: rebias the exponent (127 -> 15), round at bit 13 */
  uint32_t m = a - 0x38000000u;
  uint32_t norm = (m + 0xfffu + ((m >> 13) & 1u)) >> 13;
  /* subnormal range (|x| < 2^-14): the significand shifted to units of
   * 2^-24, rounded to nearest even; the shift is clamped to [14, 25] */
  uint32_t e = a >> 23, s = 126u - (e < 112u ? e : 112u);
  s = s > 25u ? 25u : s;
  uint32_t sig = (a & 0x7fffffu) | 0x800000u, q = sig >> s;
  uint32_t rem = sig & ((1u << s) - 1u), halfway = 1u << (s - 1u);
  uint32_t sub = q + (uint32_t)(rem > halfway || (rem == halfway && (q & 1u)));
  uint32_t r = a < 0x38800000u ? sub : norm;
  r = a >= 0x477ff000u ? 0x7c00u : r;
  r = a > 0x7f800000u ? 0x7e00u : r;
  return (uint16_t)(sign | r);
}

static inline float td_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16, em = (uint32_t)h & 0x7fffu;
  uint32_t o = em << 13;
  uint32_t norm = o + 0x38000000u;
  uint32_t special = o + 0x70000000u; /* inf and NaN keep exponent all ones */
  /* subnormal: (1 + m/1024) * 2^-14 - 2^-14 = m * 2^-24, exact */
  uint32_t sub = td_f32_bits(td_bits_f32(o + 0x38800000u) - 0x1p-14f);
  uint32_t r = em < 0x400u ? sub : norm;
  r = em >= 0x7c00u ? special : r;
  return td_bits_f32(sign | r);
}

/* f64 -> f32 with round-to-odd: the truncation, with its last bit set when
 * the conversion was inexact.  NaN and infinities pass through. */
static inline float td_f64_to_f32_odd(double d) {
  float f = (float)d;
  uint32_t u = td_f32_bits(f);
  int inexact = (double)f != d && d == d;
  int above = ((double)f > d) != (d < 0); /* |f| > |d| */
  uint32_t adj = above ? u - 1u : u + 1u;
  return td_bits_f32(inexact && !(u & 1u) ? adj : u);
}

static inline uint16_t td_f64_to_bf16(double d) { return td_f32_to_bf16(td_f64_to_f32_odd(d)); }
static inline uint16_t td_f64_to_f16(double d) { return td_f32_to_f16(td_f64_to_f32_odd(d)); }

#endif

# Integer tensors: `/` is true division and gives f32 (like torch.div), so
# floor division is floor(a / b); `%` takes the sign of the divisor
# (Python's rule) and keeps the integer dtype.  Floats: `%` also follows the
# divisor's sign.  Integer `%` never traps: x % 0 is 0, and MIN % -1 is 0
# (its quotient, -MIN, does not fit; the remainder does), for i32 and i64;
# MIN / -1 is true division, 2^63 as an f32.  The operands come from rand
# so that the compiler cannot fold them away.
fn main() {
  let a = arange(7) - 3                       # -3 .. 3
  let n = a * 2 + where(a > 0, 1, -1) * where(a == 0, 0, 1)  # -7 -5 -3 0 3 5 7
  print("n", n)
  # expect: n [-7, -5, -3,  0,  3,  5,  7] (i64[7])
  print("div2", n / 2)
  # expect: div2 [-3.5000, -2.5000, -1.5000,  0.0000,  1.5000,  2.5000,  3.5000] (f32[7])
  print("divm2", n / -2)
  # expect: divm2 [ 3.5000,  2.5000,  1.5000, -0.0000, -1.5000, -2.5000, -3.5000] (f32[7])
  print("floordiv", floor(n / 2), i64(floor(n / -2)))
  # expect: floordiv [-4.0000, -3.0000, -2.0000,  0.0000,  1.0000,  2.0000,  3.0000] (f32[7]) [ 3,  2,  1,  0, -2, -3, -4] (i64[7])
  print("mod3", n % 3)
  # expect: mod3 [2, 1, 0, 0, 0, 2, 1] (i64[7])
  print("modm3", n % -3)
  # expect: modm3 [-1, -2,  0,  0,  0, -1, -2] (i64[7])
  print("ii", n / (a + 10))
  # expect: ii [-1.0000, -0.6250, -0.3333,  0.0000,  0.2727,  0.4167,  0.5385] (f32[7])
  print("fmod", f32(n) % 3.0)
  # expect: fmod [2.0000, 1.0000, 0.0000, 0.0000, 0.0000, 2.0000, 1.0000] (f32[7])
  print("fmodm", f32(n) % -2.5)
  # expect: fmodm [-2.0000, -0.0000, -0.5000, -0.0000, -2.0000, -0.0000, -0.5000] (f32[7])
  print("i32", i32(n) / i32(4), i32(n) % i32(4))
  # expect: i32 [-1.7500, -1.2500, -0.7500,  0.0000,  0.7500,  1.2500,  1.7500] (f32[7]) [1, 3, 1, 0, 3, 1, 3] (i32[7])
  let zero = i64(rand([2], seed = 1) * 0)
  let lo = zero + (-9223372036854775807 - 1)
  let lo32 = i32(zero) + i32(-2147483647 - 1)
  print("min", lo % -1, lo % (zero - 1), lo % zero, lo / -1)
  # expect: min [0, 0] (i64[2]) [0, 0] (i64[2]) [0, 0] (i64[2]) [9.2234e+18, 9.2234e+18] (f32[2])
  print("min32", lo32, lo32 % i32(-1), lo32 % i32(zero))
  # expect: min32 [-2147483648, -2147483648] (i32[2]) [0, 0] (i32[2]) [0, 0] (i32[2])
}

# `//` is floor division, as Python's // and torch.floor_divide /
# numpy.floor_divide: it rounds toward minus infinity and keeps the
# operands' dtype (ints stay ints, unlike `/`).  Integer `//` never traps:
# x // 0 is 0 (like x % 0) and MIN // -1 is MIN (wraps around).  Floats
# follow numpy: 1.0 // 0.1 is 9 (not floor(1.0 / 0.1) == 10), x // 0 is
# +-inf (NaN for 0 // 0), inf // x is NaN, a zero keeps the sign of a / b.
# Compile-time numbers and sizes divide exactly the same way.
# Expected values: tests/data/floordiv_ref.py (Python's own //, and numpy
# where installed).  The operands come from rand so that the compiler
# cannot fold them away.
fn main() {
  let zero = i64(rand([7], seed = 1) * 0)
  let n = zero + arange(7) * 2 - 7             # -7 -5 -3 -1 1 3 5
  print("int2", n // 2, n // -2)
  # expect: int2 [-4, -3, -2, -1,  0,  1,  2] (i64[7]) [ 3,  2,  1,  0, -1, -2, -3] (i64[7])
  print("int3", n // (zero + 3), i32(n) // i32(-3))
  # expect: int3 [-3, -2, -1, -1,  0,  1,  1] (i64[7]) [ 2,  1,  1,  0, -1, -1, -2] (i32[7])
  print("rev", 13 // n)
  # expect: rev [ -2,  -3,  -5, -13,  13,   4,   2] (i64[7])
  let lo = zero[0:2] + (-9223372036854775807 - 1)
  print("min", lo // -1, lo // (zero[0:2] - 1), i32(lo) // i32(0))
  # expect: min [-9223372036854775808, -9223372036854775808] (i64[2]) [-9223372036854775808, -9223372036854775808] (i64[2]) [0, 0] (i32[2])
  let f = f32(n) / 4
  print("f05", f // 0.5, f // -0.75)
  # expect: f05 [-4.0000, -3.0000, -2.0000, -1.0000,  0.0000,  1.0000,  2.0000] (f32[7]) [ 2.0000,  1.0000,  1.0000,  0.0000, -1.0000, -1.0000, -2.0000] (f32[7])
  print("mixed", n // 2.5, f64(n) // f32(2))
  # expect: mixed [-3.0000, -2.0000, -2.0000, -1.0000,  0.0000,  1.0000,  2.0000] (f32[7]) [-4.0000, -3.0000, -2.0000, -1.0000,  0.0000,  1.0000,  2.0000] (f64[7])
  let s = f64(zero[0])
  print("tenths", stack([s + 1.0, s - 1.0, s + 0.3, s + 7.0]) // stack([s + 0.1, s + 0.1, s + 0.1, s + 0.7]))
  # expect: tenths [  9.0000, -10.0000,   2.0000,  10.0000] (f64[4])
  let one = f64(zero[0:4]) + 1
  print("zero", stack([s + 1.0, s - 1.0, s, s + 5.0]) // stack([s, s, s, s + 1.0]))
  # expect: zero [   inf,   -inf,    nan, 5.0000] (f64[4])
  print("special", one // (one / 0), -one // (one / 0), (one / 0) // one, -(one * 0) // 1, one * 0 // -1)
  # expect: special [0.0000, 0.0000, 0.0000, 0.0000] (f64[4]) [-1.0000, -1.0000, -1.0000, -1.0000] (f64[4]) [nan, nan, nan, nan] (f64[4]) [-0.0000, -0.0000, -0.0000, -0.0000] (f64[4]) [-0.0000, -0.0000, -0.0000, -0.0000] (f64[4])
  print("const", 7 // 2, -7 // 2, 7.5 // 2, -7.5 // 2.0, 4611686018427387904 // -3)
  # expect: const 3 -4 3 -4 -1537228672809129302
  print("tenth", 1 // 0.1 == 9.0, -1 // 0.1 == -10.0, 0.3 // 0.1 == 2.0)
  # expect: tenth true true true
  let z = zeros([7 // 2, -9 // -4])
  print("shape", z.shape[0], z.shape[1])
  # expect: shape 3 2
}

# Integer tensors: `/` is floor division and `%` takes the sign of the
# divisor (Python's rules), see docs/language.md.  Floats: `%` also follows
# the divisor's sign.
fn main() {
  let a = arange(7) - 3                       # -3 .. 3
  let n = a * 2 + where(a > 0, 1, -1) * where(a == 0, 0, 1)  # -7 -5 -3 0 3 5 7
  print("n", n)
  # expect: n [-7, -5, -3,  0,  3,  5,  7] (i64[7])
  print("div2", n / 2)
  # expect: div2 [-4, -3, -2,  0,  1,  2,  3] (i64[7])
  print("divm2", n / -2)
  # expect: divm2 [ 3,  2,  1,  0, -2, -3, -4] (i64[7])
  print("mod3", n % 3)
  # expect: mod3 [2, 1, 0, 0, 0, 2, 1] (i64[7])
  print("modm3", n % -3)
  # expect: modm3 [-1, -2,  0,  0,  0, -1, -2] (i64[7])
  print("ii", n / (a + 10))
  # expect: ii [-1, -1, -1,  0,  0,  0,  0] (i64[7])
  print("fmod", f32(n) % 3.0)
  # expect: fmod [2.0000, 1.0000, 0.0000, 0.0000, 0.0000, 2.0000, 1.0000] (f32[7])
  print("fdiv", f32(n) / 2)
  # expect: fdiv [-3.5000, -2.5000, -1.5000,  0.0000,  1.5000,  2.5000,  3.5000] (f32[7])
  print("i32", i32(n) / i32(4))
  # expect: i32 [-2, -2, -1,  0,  0,  1,  1] (i32[7])
}

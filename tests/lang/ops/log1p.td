# log1p(x) = log(1 + x), exact near 0 where log(1 + x) loses the digits of
# x to the rounding of 1 + x.  Reference values from numpy's float64
# log1p, rounded to f32.
fn main() {
  let x = (f32(arange(5)) - 1.0) * 0.5      # -0.5 .. 1.5
  print("log1p", log1p(x))
  # expect: log1p [-0.6931,  0.0000,  0.4055,  0.6931,  0.9163] (f32[5])
  let s = f32(arange(1, 4)) * 1.0e-7
  print("small", log1p(s), log(1.0 + s))
  # expect: small [1.0000e-07, 2.0000e-07, 3.0000e-07] (f32[3]) [1.1921e-07, 2.3842e-07, 3.5763e-07] (f32[3])
  print("f64", log1p(f64(arange(3)) * 3.0))
  # expect: f64 [0.0000, 1.3863, 1.9459] (f64[3])
  # a number gives a number (computed at compile time); ints compute in f32
  print("ints", log1p(3), log1p(i32(arange(3))))
  # expect: ints 1.3862944 [0.0000, 0.6931, 1.0986] (f32[3])
}

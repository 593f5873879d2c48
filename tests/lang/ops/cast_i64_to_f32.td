# i64 -> f32 rounds once, to nearest even, as numpy's astype(float32)
# does.  2^54 + 2^30 + 1 lies just above the midpoint between two f32
# neighbours 2^31 apart, so it rounds up to 2^54 + 2^31; a conversion that
# went through f64 first would round it to 2^54 + 2^30 (f64 steps of 4 lose
# the +1), then tie to even, down to 2^54 (a backend doing that prints 0).
fn main() {
  let big = i64(arange(2)) * 1073741824 + 18014399583223809   # 2^54 + 2^30 + 1, + 2^30
  print("above 2^54", f32(big) - f32(i64(arange(2)) * 0 + 18014398509481984))
  # expect: above 2^54 [2.1475e+09, 2.1475e+09] (f32[2])
}

# Parameters without a weights file: zeros(), ones(), full(v); a param with
# `if cond` exists only when cond holds; members and methods see them by
# name, and m.name reads them from outside.
model Affine(d: int, has_bias: bool = true) {
  param weight: f32[d] = full(2.0)
  param bias: f32[d] = full(0.5) if has_bias
  param gain: f32[] = ones()
  param count: i64[2] = zeros()
  fn forward(x: f32[N, d]) -> f32[N, d] {
    let y = x * weight * gain
    if has_bias { y + bias } else { y }
  }
}

fn main() {
  let a = Affine(3)
  let b = Affine(3, has_bias = false)
  let x = reshape(f32(arange(6)), [2, 3])
  print("a", a(x))
  # expect: a [[ 0.5000,  2.5000,  4.5000],
  # expect:    [ 6.5000,  8.5000, 10.5000]] (f32[2, 3])
  print("b", b(x))
  # expect: b [[ 0.0000,  2.0000,  4.0000],
  # expect:    [ 6.0000,  8.0000, 10.0000]] (f32[2, 3])
  print("params", a.weight, a.bias, a.gain, b.count)
  # expect: params [2.0000, 2.0000, 2.0000] (f32[3]) [0.5000, 0.5000, 0.5000] (f32[3]) 1.0000 [0, 0] (i64[2])
}

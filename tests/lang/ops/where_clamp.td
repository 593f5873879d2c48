# where(cond, a, b) with broadcasting and numbers; clamp, minimum, maximum.
fn main() {
  let x = reshape(f32(arange(6)), [2, 3]) - 2.5
  print("w", where(x > 0, x, 0.0))
  # expect: w [[0.0000, 0.0000, 0.0000],
  # expect:    [0.5000, 1.5000, 2.5000]] (f32[2, 3])
  print("wb", where(x > 0, 1, -1))
  # expect: wb [[-1, -1, -1],
  # expect:     [ 1,  1,  1]] (i64[2, 3])
  print("wrow", where(arange(3) == 1, x, -x))
  # expect: wrow [[ 2.5000, -1.5000,  0.5000],
  # expect:       [-0.5000,  1.5000, -2.5000]] (f32[2, 3])
  print("wcol", where(reshape(arange(2), [2, 1]) == 0, 100.0, x))
  # expect: wcol [[100.0000, 100.0000, 100.0000],
  # expect:       [  0.5000,   1.5000,   2.5000]] (f32[2, 3])
  print("clamp", clamp(x, -1.0, 1.0))
  # expect: clamp [[-1.0000, -1.0000, -0.5000],
  # expect:        [ 0.5000,  1.0000,  1.0000]] (f32[2, 3])
  print("clamp-lo", clamp(x, lo = 0.0))
  # expect: clamp-lo [[0.0000, 0.0000, 0.0000],
  # expect:           [0.5000, 1.5000, 2.5000]] (f32[2, 3])
  print("clamp-hi", clamp(x, hi = -0.5))
  # expect: clamp-hi [[-2.5000, -1.5000, -0.5000],
  # expect:           [-0.5000, -0.5000, -0.5000]] (f32[2, 3])
  print("clamp-int", clamp(arange(6), 1, 4))
  # expect: clamp-int [1, 1, 2, 3, 4, 4] (i64[6])
  print("minmax", minimum(x, 0.5), maximum(x, -0.5))
  # expect: minmax [[-2.5000, -1.5000, -0.5000],
  # expect:         [ 0.5000,  0.5000,  0.5000]] (f32[2, 3]) [[-0.5000, -0.5000, -0.5000],
  # expect:                                                   [ 0.5000,  1.5000,  2.5000]] (f32[2, 3])
}

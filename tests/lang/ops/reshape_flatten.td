# reshape (with one -1), flatten, and reshape to and from rank 0.
fn main() {
  let x = arange(12)
  print("r34", reshape(x, [3, 4]))
  # expect: r34 [[ 0,  1,  2,  3],
  # expect:      [ 4,  5,  6,  7],
  # expect:      [ 8,  9, 10, 11]] (i64[3, 4])
  print("r2m1", reshape(x, [2, -1]))
  # expect: r2m1 [[ 0,  1,  2,  3,  4,  5],
  # expect:       [ 6,  7,  8,  9, 10, 11]] (i64[2, 6])
  print("rm123", reshape(x, [-1, 2, 3]))
  # expect: rm123 [[[ 0,  1,  2],
  # expect:         [ 3,  4,  5]],
  # expect: 
  # expect:        [[ 6,  7,  8],
  # expect:         [ 9, 10, 11]]] (i64[2, 2, 3])
  print("flat", flatten(reshape(x, [2, 3, 2])))
  # expect: flat [ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11] (i64[12])
  print("scalar", reshape(full([1, 1], 7), []))
  # expect: scalar 7.0000
  print("up", reshape(full([], 7), [1, 1, 1]))
  # expect: up [[[7.0000]]] (f32[1, 1, 1])
  print("int-size", reshape(x, 12))
  # expect: int-size [ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11] (i64[12])
}

# NumPy broadcasting: trailing alignment, size-1 axes, rank-0 tensors and
# plain numbers.
fn main() {
  let m = reshape(f32(arange(6)), [2, 3])
  let row = f32(arange(3)) * 10.0             # [3]
  let col = reshape(f32(arange(2)) * 100.0, [2, 1])
  let s = full([], 0.5)                       # rank 0
  let one = ones([1, 1])
  print("m+row", m + row)
  # expect: m+row [[ 0.0000, 11.0000, 22.0000],
  # expect:        [ 3.0000, 14.0000, 25.0000]] (f32[2, 3])
  print("m*col", m * col)
  # expect: m*col [[  0.0000,   0.0000,   0.0000],
  # expect:        [300.0000, 400.0000, 500.0000]] (f32[2, 3])
  print("col+row", col + row)
  # expect: col+row [[  0.0000,  10.0000,  20.0000],
  # expect:          [100.0000, 110.0000, 120.0000]] (f32[2, 3])
  print("m-s", m - s)
  # expect: m-s [[-0.5000,  0.5000,  1.5000],
  # expect:      [ 2.5000,  3.5000,  4.5000]] (f32[2, 3])
  print("s*s", s * s)
  # expect: s*s 0.2500
  print("m+one", m + one)
  # expect: m+one [[1.0000, 2.0000, 3.0000],
  # expect:        [4.0000, 5.0000, 6.0000]] (f32[2, 3])
  print("3d", reshape(m, [2, 1, 3]) + reshape(m, [1, 2, 3]))
  # expect: 3d [[[ 0.0000,  2.0000,  4.0000],
  # expect:      [ 3.0000,  5.0000,  7.0000]],
  # expect: 
  # expect:     [[ 3.0000,  5.0000,  7.0000],
  # expect:      [ 6.0000,  8.0000, 10.0000]]] (f32[2, 2, 3])
  print("num", 2 * m - 1)
  # expect: num [[-1.0000,  1.0000,  3.0000],
  # expect:      [ 5.0000,  7.0000,  9.0000]] (f32[2, 3])
  print("rsub", 10 - row)
  # expect: rsub [ 10.0000,   0.0000, -10.0000] (f32[3])
}

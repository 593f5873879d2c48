# `for` over a compile-time range lo..hi or a list unrolls at compile time;
# the loop variable is a compile-time integer, usable as an index or size.
fn main() {
  let x = reshape(arange(12), [4, 3])
  let total = zeros([3], dtype = i64)
  for i in 0..4 { total = total + x[i] }
  print("rows", total)
  # expect: rows [18, 22, 26] (i64[3])
  let parts = 0
  for k in [10, 20, 30] { parts = parts + k }
  print("list", parts)
  # expect: list 60
  let grid = 0
  for i in 0..3 {
    for j in i..3 { grid = grid + 10 * i + j }
  }
  print("nested", grid)
  # expect: nested 48
  let none = 7
  for i in 5..2 { none = 0 }        # an empty range runs zero times
  print("empty", none)
  # expect: empty 7
  let h = f32(arange(3))
  for t in [h, h * 2.0] { h = h + t }
  print("tensors", h)
  # expect: tensors [0.0000, 4.0000, 8.0000] (f32[3])
  let sizes = 0
  for n in 1..4 { sizes = sizes + sum(ones([n, n], dtype = i64)) }
  print("sizes", sizes)
  # expect: sizes 14
  let m = 3
  let cols = [x[:, c] for c in 0..m]
  print("cols", cols[2])
  # expect: cols [ 2,  5,  8, 11] (i64[4])
}

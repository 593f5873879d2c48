# Reductions over all axes give rank-0 tensors.
fn main() {
  let x = reshape(f32(arange(1, 7)), [2, 3])   # [[1 2 3] [4 5 6]]
  print("sum", sum(x))
  # expect: sum 21.0000
  print("mean", mean(x))
  # expect: mean 3.5000
  print("max", max(x))
  # expect: max 6.0000
  print("min", min(x))
  # expect: min 1.0000
  print("prod", prod(x))
  # expect: prod 720.0000
  let i = reshape(arange(1, 7), [2, 3]) - 3     # i64 [[-2 -1 0] [1 2 3]]
  print("isum", sum(i))
  # expect: isum 3
  print("imean", mean(i))
  # expect: imean 0.5000
  print("imax", max(i), "imin", min(i))
  # expect: imax 3 imin -2
  print("iprod", prod(i + 3))
  # expect: iprod 720
  print("bsum", sum(i > 0))
  # expect: bsum 3
}

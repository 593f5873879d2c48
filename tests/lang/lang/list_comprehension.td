# List comprehensions over ranges and lists build compile-time lists: of
# numbers, of tensors (for stack/concat) and of sub-models.
fn main() {
  let sq = [i * i for i in 0..6]
  print("sq", sq[3], sq[-1])
  # expect: sq 9 25
  let x = f32(arange(3))
  print("stack", stack([x * f32(i) for i in 0..3]))
  # expect: stack [[0.0000, 0.0000, 0.0000],
  # expect:        [0.0000, 1.0000, 2.0000],
  # expect:        [0.0000, 2.0000, 4.0000]] (f32[3, 3])
  print("concat", concat([arange(n) for n in 1..4]))
  # expect: concat [0, 0, 1, 0, 1, 2] (i64[6])
  print("over list", [k + 1 for k in [10, 20]][1])
  # expect: over list 21
  print("nested", [[i + j for j in 0..3] for i in 0..2][1][2])
  # expect: nested 3
}

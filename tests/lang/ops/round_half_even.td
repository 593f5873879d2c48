# round() rounds half to even, like numpy and PyTorch; floor/ceil/round of
# negative halves.
fn main() {
  let r = f32(arange(8)) * 0.5 - 1.5         # -1.5 -1 -0.5 0 0.5 1 1.5 2
  print("round", round(r))
  # expect: round [-2.0000, -1.0000, -0.0000,  0.0000,  0.0000,  1.0000,  2.0000,  2.0000] (f32[8])
  print("floor", floor(r))
  # expect: floor [-2.0000, -1.0000, -1.0000,  0.0000,  0.0000,  1.0000,  1.0000,  2.0000] (f32[8])
  print("ceil", ceil(r))
  # expect: ceil [-1.0000, -1.0000, -0.0000,  0.0000,  1.0000,  1.0000,  2.0000,  2.0000] (f32[8])
  let big = f32(arange(4)) + 2.5               # 2.5 3.5 4.5 5.5
  print("round", round(big))
  # expect: round [2.0000, 4.0000, 4.0000, 6.0000] (f32[4])
}

# + - * / ** and minimum/maximum/pow on f32 tensors of the same shape.
fn main() {
  let a = reshape(f32(arange(6)) - 2.0, [2, 3])    # [[-2 -1 0] [1 2 3]]
  let b = reshape(f32(arange(6)) * 0.5 + 0.5, [2, 3]) # [[0.5 1 1.5] [2 2.5 3]]
  print("add", a + b)
  # expect: add [[-1.5000,  0.0000,  1.5000],
  # expect:      [ 3.0000,  4.5000,  6.0000]] (f32[2, 3])
  print("sub", a - b)
  # expect: sub [[-2.5000, -2.0000, -1.5000],
  # expect:      [-1.0000, -0.5000,  0.0000]] (f32[2, 3])
  print("mul", a * b)
  # expect: mul [[-1.0000, -1.0000,  0.0000],
  # expect:      [ 2.0000,  5.0000,  9.0000]] (f32[2, 3])
  print("div", a / b)
  # expect: div [[-4.0000, -1.0000,  0.0000],
  # expect:      [ 0.5000,  0.8000,  1.0000]] (f32[2, 3])
  print("pow", b ** 2)
  # expect: pow [[0.2500, 1.0000, 2.2500],
  # expect:      [4.0000, 6.2500, 9.0000]] (f32[2, 3])
  print("powt", pow(b, a))
  # expect: powt [[ 4.0000,  1.0000,  1.0000],
  # expect:       [ 2.0000,  6.2500, 27.0000]] (f32[2, 3])
  print("min", minimum(a, b))
  # expect: min [[-2.0000, -1.0000,  0.0000],
  # expect:      [ 1.0000,  2.0000,  3.0000]] (f32[2, 3])
  print("max", maximum(a, b))
  # expect: max [[0.5000, 1.0000, 1.5000],
  # expect:      [2.0000, 2.5000, 3.0000]] (f32[2, 3])
  print("mod", a % b)
  # expect: mod [[0.0000, 0.0000, 0.0000],
  # expect:      [1.0000, 2.0000, 0.0000]] (f32[2, 3])
  print("chain", (a + 1) * (b - 1) / 2)
  # expect: chain [[0.2500, 0.0000, 0.2500],
  # expect:        [1.0000, 2.2500, 4.0000]] (f32[2, 3])
  print("prec", -a ** 2)
  # expect: prec [[-4.0000, -1.0000, -0.0000],
  # expect:       [-1.0000, -4.0000, -9.0000]] (f32[2, 3])
  print("rassoc", 2 ** a ** 2)
  # expect: rassoc [[ 16.0000,   2.0000,   1.0000],
  # expect:         [  2.0000,  16.0000, 512.0000]] (f32[2, 3])
}

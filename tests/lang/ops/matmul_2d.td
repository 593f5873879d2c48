# @ on matrices, on integer matrices (i64 result) and with .T
fn main() {
  let a = reshape(f32(arange(6)), [2, 3]) - 2.0
  let b = f32(reshape(arange(12), [3, 4]) % 5) - 1.0
  print("ab", a @ b)
  # expect: ab [[-1.0000,  1.0000, -2.0000, -5.0000],
  # expect:     [11.0000,  7.0000, -2.0000,  4.0000]] (f32[2, 4])
  print("bTaT", b.T @ a.T)
  # expect: bTaT [[-1.0000, 11.0000],
  # expect:       [ 1.0000,  7.0000],
  # expect:       [-2.0000, -2.0000],
  # expect:       [-5.0000,  4.0000]] (f32[4, 2])
  print("aaT", a @ a.T)
  # expect: aaT [[ 5.0000, -4.0000],
  # expect:      [-4.0000, 14.0000]] (f32[2, 2])
  print("int", reshape(arange(6), [2, 3]) @ reshape(arange(6), [3, 2]))
  # expect: int [[10, 13],
  # expect:      [28, 40]] (i64[2, 2])
  print("chain", a @ b @ ones([4, 1]))
  # expect: chain [[-7.0000],
  # expect:        [20.0000]] (f32[2, 1])
}

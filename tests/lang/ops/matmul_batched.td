# Batched @: equal batch dims, a 2-D operand against a batch, and batch dims
# that broadcast ([2, 1, ...] @ [3, ...] gives [2, 3, ...]).
fn main() {
  let x = f32(reshape(arange(24), [2, 3, 4]) % 5) - 2.0
  let w = reshape(f32(arange(8)), [4, 2]) - 3.0
  let y = f32(reshape(arange(16), [2, 4, 2]) % 3)
  print("xy", x @ y)
  # expect: xy [[[-2.0000, -1.0000],
  # expect:      [-5.0000,  0.0000],
  # expect:      [ 2.0000, -4.0000]],
  # expect: 
  # expect:     [[-3.0000,  4.0000],
  # expect:      [ 2.0000,  1.0000],
  # expect:      [-3.0000, -2.0000]]] (f32[2, 3, 2])
  print("xw", x @ w)
  # expect: xw [[[ 10.0000,   8.0000],
  # expect:      [ -5.0000,  -6.0000],
  # expect:      [-10.0000, -10.0000]],
  # expect: 
  # expect:     [[ -5.0000,  -4.0000],
  # expect:      [ 10.0000,  12.0000],
  # expect:      [ 10.0000,   8.0000]]] (f32[2, 3, 2])
  print("wTx", w.T @ transpose(x, 1, 2))
  # expect: wTx [[[ 10.0000,  -5.0000, -10.0000],
  # expect:       [  8.0000,  -6.0000, -10.0000]],
  # expect: 
  # expect:      [[ -5.0000,  10.0000,  10.0000],
  # expect:       [ -4.0000,  12.0000,   8.0000]]] (f32[2, 2, 3])
  let p = reshape(f32(arange(6)), [2, 1, 1, 3])
  let q = reshape(f32(arange(18)), [3, 3, 2]) - 8.0
  print("pq", p @ q)
  # expect: pq [[[[-14.0000, -11.0000]],
  # expect: 
  # expect:      [[  4.0000,   7.0000]],
  # expect: 
  # expect:      [[ 22.0000,  25.0000]]],
  # expect: 
  # expect: 
  # expect:     [[[-68.0000, -56.0000]],
  # expect: 
  # expect:      [[  4.0000,  16.0000]],
  # expect: 
  # expect:      [[ 76.0000,  88.0000]]]] (f32[2, 3, 1, 2])
}

# Reductions along axes: one axis, negative axes, several axes, keepdims.
fn main() {
  let y = f32(reshape(arange(24), [2, 3, 4]) % 7) - 3.0
  print("y", y)
  # expect: y [[[-3.0000, -2.0000, -1.0000,  0.0000],
  # expect:     [ 1.0000,  2.0000,  3.0000, -3.0000],
  # expect:     [-2.0000, -1.0000,  0.0000,  1.0000]],
  # expect: 
  # expect:    [[ 2.0000,  3.0000, -3.0000, -2.0000],
  # expect:     [-1.0000,  0.0000,  1.0000,  2.0000],
  # expect:     [ 3.0000, -3.0000, -2.0000, -1.0000]]] (f32[2, 3, 4])
  print("sum0", sum(y, axis = 0))
  # expect: sum0 [[-1.0000,  1.0000, -4.0000, -2.0000],
  # expect:       [ 0.0000,  2.0000,  4.0000, -1.0000],
  # expect:       [ 1.0000, -4.0000, -2.0000,  0.0000]] (f32[3, 4])
  print("sum-1", sum(y, axis = -1))
  # expect: sum-1 [[-6.0000,  3.0000, -2.0000],
  # expect:        [ 0.0000,  2.0000, -3.0000]] (f32[2, 3])
  print("sum02", sum(y, axis = [0, 2]))
  # expect: sum02 [-6.0000,  5.0000, -5.0000] (f32[3])
  print("sumk", sum(y, axis = 1, keepdims = true))
  # expect: sumk [[[-4.0000, -1.0000,  2.0000, -2.0000]],
  # expect: 
  # expect:       [[ 4.0000,  0.0000, -4.0000, -1.0000]]] (f32[2, 1, 4])
  print("mean1", mean(y, axis = 1))
  # expect: mean1 [[-1.3333, -0.3333,  0.6667, -0.6667],
  # expect:        [ 1.3333,  0.0000, -1.3333, -0.3333]] (f32[2, 4])
  print("meank", mean(y, axis = [-1, -3], keepdims = true))
  # expect: meank [[[-0.7500],
  # expect:         [ 0.6250],
  # expect:         [-0.6250]]] (f32[1, 3, 1])
  print("max2", max(y, axis = 2))
  # expect: max2 [[0.0000, 3.0000, 1.0000],
  # expect:       [3.0000, 2.0000, 3.0000]] (f32[2, 3])
  print("min0", min(y, axis = -3))
  # expect: min0 [[-3.0000, -2.0000, -3.0000, -2.0000],
  # expect:       [-1.0000,  0.0000,  1.0000, -3.0000],
  # expect:       [-2.0000, -3.0000, -2.0000, -1.0000]] (f32[3, 4])
  print("prod1", prod(y, axis = 1))
  # expect: prod1 [[ 6.0000,  4.0000, -0.0000, -0.0000],
  # expect:        [-6.0000, -0.0000,  6.0000,  4.0000]] (f32[2, 4])
  print("maxk", max(y, axis = [1, 2], keepdims = true))
  # expect: maxk [[[3.0000]],
  # expect: 
  # expect:       [[3.0000]]] (f32[2, 1, 1])
  print("all", sum(y, axis = [0, 1, 2]))
  # expect: all -6.0000
}

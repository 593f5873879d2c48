# take (a gather with a tensor of indices, any axis, indices of any rank)
# and one_hot.
fn main() {
  let e = reshape(f32(arange(12)), [4, 3]) * 10.0
  let idx = (arange(4) * 3 + 3) % 4          # [3 2 1 0]
  print("idx", idx)
  # expect: idx [3, 2, 1, 0] (i64[4])
  print("rows", take(e, idx))
  # expect: rows [[ 90.0000, 100.0000, 110.0000],
  # expect:       [ 60.0000,  70.0000,  80.0000],
  # expect:       [ 30.0000,  40.0000,  50.0000],
  # expect:       [  0.0000,  10.0000,  20.0000]] (f32[4, 3])
  print("cols", take(e, idx % 3, axis = 1))
  # expect: cols [[  0.0000,  20.0000,  10.0000,   0.0000],
  # expect:       [ 30.0000,  50.0000,  40.0000,  30.0000],
  # expect:       [ 60.0000,  80.0000,  70.0000,  60.0000],
  # expect:       [ 90.0000, 110.0000, 100.0000,  90.0000]] (f32[4, 4])
  let i2 = reshape(arange(4), [2, 2])
  let j2 = where(i2 == 2, 1, where(i2 == 3, 3, i2))    # [[0 1] [1 3]]
  print("j2", j2)
  # expect: j2 [[0, 1],
  # expect:     [1, 3]] (i64[2, 2])
  print("rows2d", take(e, j2))
  # expect: rows2d [[[  0.0000,  10.0000,  20.0000],
  # expect:          [ 30.0000,  40.0000,  50.0000]],
  # expect: 
  # expect:         [[ 30.0000,  40.0000,  50.0000],
  # expect:          [ 90.0000, 100.0000, 110.0000]]] (f32[2, 2, 3])
  print("cols2d", take(e, j2 % 3, axis = -1))
  # expect: cols2d [[[  0.0000,  10.0000],
  # expect:          [ 10.0000,   0.0000]],
  # expect: 
  # expect:         [[ 30.0000,  40.0000],
  # expect:          [ 40.0000,  30.0000]],
  # expect: 
  # expect:         [[ 60.0000,  70.0000],
  # expect:          [ 70.0000,  60.0000]],
  # expect: 
  # expect:         [[ 90.0000, 100.0000],
  # expect:          [100.0000,  90.0000]]] (f32[4, 2, 2])
  print("i32idx", take(arange(5) * 2, i32(idx)))
  # expect: i32idx [6, 4, 2, 0] (i64[4])
  print("scalar-idx", take(e, sum(idx) - 5))
  # expect: scalar-idx [30.0000, 40.0000, 50.0000] (f32[3])
  print("onehot", one_hot(idx, 4))
  # expect: onehot [[0.0000, 0.0000, 0.0000, 1.0000],
  # expect:         [0.0000, 0.0000, 1.0000, 0.0000],
  # expect:         [0.0000, 1.0000, 0.0000, 0.0000],
  # expect:         [1.0000, 0.0000, 0.0000, 0.0000]] (f32[4, 4])
  print("onehot-i64", one_hot(j2, 4, dtype = i64))
  # expect: onehot-i64 [[[1, 0, 0, 0],
  # expect:              [0, 1, 0, 0]],
  # expect: 
  # expect:             [[0, 1, 0, 0],
  # expect:              [0, 0, 0, 1]]] (i64[2, 2, 4])
}

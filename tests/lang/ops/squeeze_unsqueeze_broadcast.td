# squeeze (all size-1 axes, or one), unsqueeze (negative axes count from the
# end of the result), broadcast_to, zeros_like/ones_like.
fn main() {
  let x = reshape(arange(3), [1, 3, 1])
  print("sq", squeeze(x))
  # expect: sq [0, 1, 2] (i64[3])
  print("sq0", squeeze(x, 0))
  # expect: sq0 [[0],
  # expect:      [1],
  # expect:      [2]] (i64[3, 1])
  print("sq-1", squeeze(x, axis = -1))
  # expect: sq-1 [[0, 1, 2]] (i64[1, 3])
  print("un0", unsqueeze(arange(3), 0))
  # expect: un0 [[0, 1, 2]] (i64[1, 3])
  print("un-1", unsqueeze(arange(3), -1))
  # expect: un-1 [[0],
  # expect:       [1],
  # expect:       [2]] (i64[3, 1])
  print("un1", unsqueeze(reshape(arange(4), [2, 2]), 1))
  # expect: un1 [[[0, 1]],
  # expect: 
  # expect:      [[2, 3]]] (i64[2, 1, 2])
  print("bt", broadcast_to(arange(3), [2, 3]))
  # expect: bt [[0, 1, 2],
  # expect:     [0, 1, 2]] (i64[2, 3])
  print("bt1", broadcast_to(reshape(arange(2), [2, 1]), [2, 2, 3]))
  # expect: bt1 [[[0, 0, 0],
  # expect:       [1, 1, 1]],
  # expect: 
  # expect:      [[0, 0, 0],
  # expect:       [1, 1, 1]]] (i64[2, 2, 3])
  print("btnum", broadcast_to(1.5, [2]))
  # expect: btnum [1.5000, 1.5000] (f32[2])
  print("zl", zeros_like(x), "ol", ones_like(f32(x)))
  # expect: zl [[[0],
  # expect:      [0],
  # expect:      [0]]] (i64[1, 3, 1]) ol [[[1.0000],
  # expect:                                [1.0000],
  # expect:                                [1.0000]]] (f32[1, 3, 1])
}

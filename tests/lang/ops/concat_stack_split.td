# concat along an axis (default 0, negative axes), stack (a new axis) and
# split into equal parts (a tuple).
fn main() {
  let a = reshape(arange(6), [2, 3])
  let b = a + 10
  print("c0", concat([a, b]))
  # expect: c0 [[ 0,  1,  2],
  # expect:     [ 3,  4,  5],
  # expect:     [10, 11, 12],
  # expect:     [13, 14, 15]] (i64[4, 3])
  print("c1", concat([a, b, a], axis = 1))
  # expect: c1 [[ 0,  1,  2, 10, 11, 12,  0,  1,  2],
  # expect:     [ 3,  4,  5, 13, 14, 15,  3,  4,  5]] (i64[2, 9])
  print("cm1", concat([a, b[:, 0:1]], axis = -1))
  # expect: cm1 [[ 0,  1,  2, 10],
  # expect:      [ 3,  4,  5, 13]] (i64[2, 4])
  print("cmix", concat([f32(a), b]))
  # expect: cmix [[ 0.0000,  1.0000,  2.0000],
  # expect:       [ 3.0000,  4.0000,  5.0000],
  # expect:       [10.0000, 11.0000, 12.0000],
  # expect:       [13.0000, 14.0000, 15.0000]] (f32[4, 3])
  print("s0", stack([a, b]))
  # expect: s0 [[[ 0,  1,  2],
  # expect:      [ 3,  4,  5]],
  # expect: 
  # expect:     [[10, 11, 12],
  # expect:      [13, 14, 15]]] (i64[2, 2, 3])
  print("s1", stack([a, b], axis = 1))
  # expect: s1 [[[ 0,  1,  2],
  # expect:      [10, 11, 12]],
  # expect: 
  # expect:     [[ 3,  4,  5],
  # expect:      [13, 14, 15]]] (i64[2, 2, 3])
  print("s-1", stack([a, b], axis = -1))
  # expect: s-1 [[[ 0, 10],
  # expect:       [ 1, 11],
  # expect:       [ 2, 12]],
  # expect: 
  # expect:      [[ 3, 13],
  # expect:       [ 4, 14],
  # expect:       [ 5, 15]]] (i64[2, 3, 2])
  print("sscalar", stack([sum(a), sum(b)]))
  # expect: sscalar [15, 75] (i64[2])
  let (p, q, r) = split(a, 3, axis = 1)
  print("split1", p, q, r)
  # expect: split1 [[0],
  # expect:         [3]] (i64[2, 1]) [[1],
  # expect:                           [4]] (i64[2, 1]) [[2],
  # expect:                                             [5]] (i64[2, 1])
  let (top, bottom) = split(concat([a, b]), 2)
  print("split0", top, bottom)
  # expect: split0 [[0, 1, 2],
  # expect:         [3, 4, 5]] (i64[2, 3]) [[10, 11, 12],
  # expect:                                 [13, 14, 15]] (i64[2, 3])
  let parts = split(arange(6), 2)
  print("parts", parts[1])
  # expect: parts [3, 4, 5] (i64[3])
}

# argmax/argmin along one axis (i64 results, the first index on ties) or over
# all elements (flattened, like numpy).
fn main() {
  # z = [[3 1 4 1 5] [9 2 6 5 3] [5 8 9 7 9]] built from digits of pi
  let d = arange(15)
  let z = f32(where(d == 0, 3, where(d == 1, 1, where(d == 2, 4, where(d == 3, 1, where(d == 4, 5,
          where(d == 5, 9, where(d == 6, 2, where(d == 7, 6, where(d == 8, 5, where(d == 9, 3,
          where(d == 10, 5, where(d == 11, 8, where(d == 12, 9, where(d == 13, 7, 9)))))))))))))))
  let m = reshape(z, [3, 5])
  print("m", m)
  # expect: m [[3.0000, 1.0000, 4.0000, 1.0000, 5.0000],
  # expect:    [9.0000, 2.0000, 6.0000, 5.0000, 3.0000],
  # expect:    [5.0000, 8.0000, 9.0000, 7.0000, 9.0000]] (f32[3, 5])
  print("argmax1", argmax(m, axis = 1))
  # expect: argmax1 [4, 0, 2] (i64[3])
  print("argmax0", argmax(m, axis = 0))
  # expect: argmax0 [1, 2, 2, 2, 2] (i64[5])
  print("argmin-1", argmin(m, axis = -1))
  # expect: argmin-1 [1, 1, 0] (i64[3])
  print("argmin0", argmin(m, axis = 0))
  # expect: argmin0 [0, 0, 0, 0, 1] (i64[5])
  print("all", argmax(m), argmin(m))
  # expect: all 5 1
  print("keep", argmax(m, axis = 1, keepdims = true))
  # expect: keep [[4],
  # expect:       [0],
  # expect:       [2]] (i64[3, 1])
  print("int", argmax(i64(m) % 4, axis = 1))
  # expect: int [0, 4, 3] (i64[3])
}

# zeros, ones, full, eye, zeros_like/ones_like with dtypes.
fn main() {
  print("zeros", zeros([2, 3]))
  # expect: zeros [[0.0000, 0.0000, 0.0000],
  # expect:        [0.0000, 0.0000, 0.0000]] (f32[2, 3])
  print("ones-i64", ones([3], dtype = i64))
  # expect: ones-i64 [1, 1, 1] (i64[3])
  print("full", full([2, 2], 2.5))
  # expect: full [[2.5000, 2.5000],
  # expect:       [2.5000, 2.5000]] (f32[2, 2])
  print("full-int", full([3], 4))
  # expect: full-int [4.0000, 4.0000, 4.0000] (f32[3])
  print("full-i32", full([3], 4, dtype = i32))
  # expect: full-i32 [4, 4, 4] (i32[3])
  print("full-bool", full([2], true))
  # expect: full-bool [true, true] (bool[2])
  print("scalar", full([], -1.25))
  # expect: scalar -1.2500
  print("eye", eye(3))
  # expect: eye [[1.0000, 0.0000, 0.0000],
  # expect:      [0.0000, 1.0000, 0.0000],
  # expect:      [0.0000, 0.0000, 1.0000]] (f32[3, 3])
  print("eye-i64", eye(2, dtype = i64))
  # expect: eye-i64 [[1, 0],
  # expect:          [0, 1]] (i64[2, 2])
  print("eye-bool", eye(2, dtype = bool))
  # expect: eye-bool [[ true, false],
  # expect:           [false,  true]] (bool[2, 2])
  print("f64", zeros([2], dtype = f64) + 0.1)
  # expect: f64 [0.1000, 0.1000] (f64[2])
  print("empty", zeros([0]))
  # expect: empty [] (f32[0])
  print("empty2", ones([2, 0], dtype = i64))
  # expect: empty2 [] (i64[2, 0])
}

# print: parts joined by spaces; strings and numbers as they are; tensors as
# runtime/format.c writes them (4 decimals or e-notation, aligned columns,
# blank lines between blocks, summaries above 1000 elements, wrapping before
# 75 columns) with continuation lines aligned under the first, and the dtype
# and shape after arrays of rank >= 1.
fn main() {
  print("numbers", 1, 2.5, true, -3)
  # expect: numbers 1 2.5 true -3
  print("scalar", full([], 3.0), arange(3)[1])
  # expect: scalar 3.0000 1
  print(reshape(arange(12), [2, 2, 3]))
  # expect: [[[ 0,  1,  2],
  # expect:   [ 3,  4,  5]],
  # expect: 
  # expect:  [[ 6,  7,  8],
  # expect:   [ 9, 10, 11]]] (i64[2, 2, 3])
  print("sci", f32(arange(4)) * 0.00001 + 0.00001)
  # expect: sci [1.0000e-05, 2.0000e-05, 3.0000e-05, 4.0000e-05] (f32[4])
  print("ratio", f32(arange(3)) * 1000.0 + 1.0)
  # expect: ratio [1.0000e+00, 1.0010e+03, 2.0010e+03] (f32[3])
  print("bools", arange(3) > 0)
  # expect: bools [false,  true,  true] (bool[3])
  print("empty", zeros([0, 3]))
  # expect: empty [] (f32[0, 3])
  print("wrap", f32(arange(20)) - 10.0)
  # expect: wrap [-10.0000,  -9.0000,  -8.0000,  -7.0000,  -6.0000,  -5.0000,  -4.0000,
  # expect:        -3.0000,  -2.0000,  -1.0000,   0.0000,   1.0000,   2.0000,   3.0000,
  # expect:         4.0000,   5.0000,   6.0000,   7.0000,   8.0000,   9.0000] (f32[20])
  print("two", eye(2), "and", ones([2, 2], dtype = i64))
  # expect: two [[1.0000, 0.0000],
  # expect:      [0.0000, 1.0000]] (f32[2, 2]) and [[1, 1],
  # expect:                                         [1, 1]] (i64[2, 2])
  print("long", arange(2000))
  # expect: long [   0,    1,    2, ..., 1997, 1998, 1999] (i64[2000])
  print("long2d", reshape(arange(1200), [40, 30]))
  # expect: long2d [[   0,    1,    2, ...,   27,   28,   29],
  # expect:         [  30,   31,   32, ...,   57,   58,   59],
  # expect:         [  60,   61,   62, ...,   87,   88,   89],
  # expect:         ...,
  # expect:         [1110, 1111, 1112, ..., 1137, 1138, 1139],
  # expect:         [1140, 1141, 1142, ..., 1167, 1168, 1169],
  # expect:         [1170, 1171, 1172, ..., 1197, 1198, 1199]] (i64[40, 30])
  print("edge", arange(1000)[995:])
  # expect: edge [995, 996, 997, 998, 999] (i64[5])
  print("neg zero", -zeros([2]))
  # expect: neg zero [-0.0000, -0.0000] (f32[2])
  print("escapes\tq\"\\")
  # expect: escapes	q"\
}

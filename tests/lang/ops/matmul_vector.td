# 1-D operands: a row vector on the left, a column vector on the right; the
# vector's axis is dropped from the result, as in numpy.
fn main() {
  let m = reshape(f32(arange(6)), [2, 3]) + 1.0
  let v3 = f32(arange(3)) * 1.5 - 1.0 + where(arange(3) == 0, 2.0, 0.0) + where(arange(3) == 1, -1.5, 0.0)
  let v2 = f32(arange(2)) * -5.0 + 2.0
  print("v3", v3, "v2", v2)
  # expect: v3 [ 1.0000, -1.0000,  2.0000] (f32[3]) v2 [ 2.0000, -3.0000] (f32[2])
  print("mv", m @ v3)
  # expect: mv [ 5.0000, 11.0000] (f32[2])
  print("vm", v2 @ m)
  # expect: vm [-10.0000, -11.0000, -12.0000] (f32[3])
  print("vv", v3 @ v3)
  # expect: vv 6.0000
  let b = reshape(f32(arange(12)), [2, 2, 3])
  print("bv", b @ v3)
  # expect: bv [[ 3.0000,  9.0000],
  # expect:     [15.0000, 21.0000]] (f32[2, 2])
  print("vb", v2 @ b)
  # expect: vb [[ -9.0000, -10.0000, -11.0000],
  # expect:     [-15.0000, -16.0000, -17.0000]] (f32[2, 3])
}

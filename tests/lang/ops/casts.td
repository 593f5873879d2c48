# Casts between dtypes: float to int truncates toward zero, bool is
# "non-zero", bool to number gives 0/1.  On compile-time numbers casts
# convert the number.
fn main() {
  let f = (f32(arange(7)) - 3.0) * 0.75        # -2.25 .. 2.25
  print("f", f)
  # expect: f [-2.2500, -1.5000, -0.7500,  0.0000,  0.7500,  1.5000,  2.2500] (f32[7])
  print("i64", i64(f))
  # expect: i64 [-2, -1,  0,  0,  0,  1,  2] (i64[7])
  print("i32", i32(f))
  # expect: i32 [-2, -1,  0,  0,  0,  1,  2] (i32[7])
  print("bool", bool(f))
  # expect: bool [ true,  true,  true, false,  true,  true,  true] (bool[7])
  print("f64", f64(f))
  # expect: f64 [-2.2500, -1.5000, -0.7500,  0.0000,  0.7500,  1.5000,  2.2500] (f64[7])
  print("back", f32(bool(f)))
  # expect: back [1.0000, 1.0000, 1.0000, 0.0000, 1.0000, 1.0000, 1.0000] (f32[7])
  print("i2f", f32(arange(3)) / 2)
  # expect: i2f [0.0000, 0.5000, 1.0000] (f32[3])
  print("b2i", i64(arange(4) > 1))
  # expect: b2i [0, 0, 1, 1] (i64[4])
  print("consts", i64(2.9), f32(3), bool(0), int(-2.5), float(7))
  # expect: consts 2 3 false -2 7
}

# NaN and infinities: printed as nan/inf/-inf; relu, maximum, minimum, max
# and min propagate NaN (as in PyTorch); integer `%` by zero gives 0 (runtime/scalar.h) and
# `/` is true division, so an integer divided by 0 is inf or nan.
fn main() {
  let z = f32(arange(3)) - 1.0                # -1 0 1
  let lz = log(z)
  print("log", lz)
  # expect: log [   nan,   -inf, 0.0000] (f32[3])
  print("sqrt", sqrt(z))
  # expect: sqrt [   nan, 0.0000, 1.0000] (f32[3])
  print("recip", 1.0 / z)
  # expect: recip [-1.0000,     inf,  1.0000] (f32[3])
  print("relu", relu(lz))
  # expect: relu [   nan, 0.0000, 0.0000] (f32[3])
  print("maximum", maximum(lz, 0.0))
  # expect: maximum [   nan, 0.0000, 0.0000] (f32[3])
  print("minimum", minimum(lz, 0.0))
  # expect: minimum [   nan,   -inf, 0.0000] (f32[3])
  print("max", max(lz), "min", min(lz), "sum", sum(lz))
  # expect: max nan min nan sum nan
  print("finite max", max(lz[1:]))
  # expect: finite max 0.0000
  print("isnan", lz != lz)
  # expect: isnan [ true, false, false] (bool[3])
  print("where", where(z > 0, lz, 0.0))
  # expect: where [0.0000, 0.0000, 0.0000] (f32[3])
  print("exp", exp(f32(arange(3)) * 50.0))
  # expect: exp [1.0000e+00, 5.1847e+21,        inf] (f32[3])
  print("idiv0", arange(3) / 0, arange(3) % 0)
  # expect: idiv0 [nan, inf, inf] (f32[3]) [0, 0, 0] (i64[3])
}

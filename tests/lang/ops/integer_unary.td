# abs, neg and relu keep integer dtypes; math that needs floats converts to f32.
fn main() {
  let i = arange(6) - 3                        # i64: -3 .. 2
  print("abs", abs(i))
  # expect: abs [3, 2, 1, 0, 1, 2] (i64[6])
  print("neg", -i)
  # expect: neg [ 3,  2,  1,  0, -1, -2] (i64[6])
  print("relu", relu(i))
  # expect: relu [0, 0, 0, 0, 1, 2] (i64[6])
  print("exp", exp(i))
  # expect: exp [0.0498, 0.1353, 0.3679, 1.0000, 2.7183, 7.3891] (f32[6])
  print("sqrt", sqrt(abs(i)))
  # expect: sqrt [1.7321, 1.4142, 1.0000, 0.0000, 1.0000, 1.4142] (f32[6])
}

# Arithmetic on compile-time numbers (printed as numbers: integers plainly,
# floats with %.8g): `/` of integers is exact when it divides, `%` follows
# the divisor's sign, `**` is right-associative and binds tighter than
# unary minus.
fn main() {
  print("7 / 2", 7 / 2)
  # expect: 7 / 2 3.5
  print("6 / 3", 6 / 3)
  # expect: 6 / 3 2
  print("-7 % 3", -7 % 3)
  # expect: -7 % 3 2
  print("7 % -3", 7 % -3)
  # expect: 7 % -3 -2
  print("2 ** 10", 2 ** 10)
  # expect: 2 ** 10 1024
  print("2 ** -1", 2 ** -1)
  # expect: 2 ** -1 0.5
  print("1 + 2 * 3", 1 + 2 * 3)
  # expect: 1 + 2 * 3 7
  print("(1 + 2) * 3", (1 + 2) * 3)
  # expect: (1 + 2) * 3 9
  print("-2 ** 2", -2 ** 2)
  # expect: -2 ** 2 -4
  print("10 - 3 - 2", 10 - 3 - 2)
  # expect: 10 - 3 - 2 5
  print("2 ** 3 ** 2", 2 ** 3 ** 2)
  # expect: 2 ** 3 ** 2 512
  print("7.5 % 2", 7.5 % 2)
  # expect: 7.5 % 2 1.5
  print("-7.5 % 2", -7.5 % 2)
  # expect: -7.5 % 2 0.5
  print("0x2a + 1_000", 0x2a + 1_000)
  # expect: 0x2a + 1_000 1042
  print("2. * 3", 2. * 3)
  # expect: 2. * 3 6
  print("1e-5", 1e-5)
  # expect: 1e-5 1e-05
  print("3 < 4", 3 < 4)
  # expect: 3 < 4 true
  print("1 == 1.0", 1 == 1.0)
  # expect: 1 == 1.0 true
  print("not true or false", not true or false)
  # expect: not true or false false
  print("true and not false", true and not false)
  # expect: true and not false true
  print("sqrt(16)", sqrt(16))
  # expect: sqrt(16) 4
  print("exp(0)", exp(0))
  # expect: exp(0) 1
  print("abs(-3)", abs(-3))
  # expect: abs(-3) 3
  print("floor(2.7)", floor(2.7))
  # expect: floor(2.7) 2
  print("minimum(3, 5)", minimum(3, 5))
  # expect: minimum(3, 5) 3
  print("maximum(2.5, 1)", maximum(2.5, 1))
  # expect: maximum(2.5, 1) 2.5
  print("int(3.9)", int(3.9))
  # expect: int(3.9) 3
  print("float(2) / 4", float(2) / 4)
  # expect: float(2) / 4 0.5
  print("'a' == 'a'", "a" == "a")
  # expect: 'a' == 'a' true
  print("true or false and false", true or false and false)
  # expect: true or false and false true
  print("not 1 < 2", not 1 < 2)
  # expect: not 1 < 2 false
  print("[10, 20, 30][-1]", [10, 20, 30][-1])
  # expect: [10, 20, 30][-1] 30
  print("([1, 2] + [3])[2]", ([1, 2] + [3])[2])
  # expect: ([1, 2] + [3])[2] 3
  print("(4, 5)[0]", (4, 5)[0])
  # expect: (4, 5)[0] 4
  print("1 / 3", 1 / 3)
  # expect: 1 / 3 0.33333333
}

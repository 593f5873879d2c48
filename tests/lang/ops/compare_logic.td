# Comparisons give bool tensors; and/or/not combine them; where selects.
fn main() {
  let x = arange(6) - 2                       # -2 .. 3
  print("eq", x == 1)
  # expect: eq [false, false, false,  true, false, false] (bool[6])
  print("ne", x != 1)
  # expect: ne [ true,  true,  true, false,  true,  true] (bool[6])
  print("lt", x < 0)
  # expect: lt [ true,  true, false, false, false, false] (bool[6])
  print("le", x <= 0)
  # expect: le [ true,  true,  true, false, false, false] (bool[6])
  print("gt", x > 0.5)
  # expect: gt [false, false, false,  true,  true,  true] (bool[6])
  print("ge", x >= 2)
  # expect: ge [false, false, false, false,  true,  true] (bool[6])
  print("and", (x > -2) and (x < 2))
  # expect: and [false,  true,  true,  true, false, false] (bool[6])
  print("or", x < -1 or x > 2)
  # expect: or [ true, false, false, false, false,  true] (bool[6])
  print("not", not (x == 0))
  # expect: not [ true,  true, false,  true,  true,  true] (bool[6])
  print("tensor-tensor", x == -x)
  # expect: tensor-tensor [false, false,  true, false, false, false] (bool[6])
  print("count", sum(x > 0))
  # expect: count 3
  print("mixed", f32(x) * 0.5 <= x)
  # expect: mixed [false, false,  true,  true,  true,  true] (bool[6])
}

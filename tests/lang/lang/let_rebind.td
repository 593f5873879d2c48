# let, re-binding with `=`, shadowing with a second let, and scopes: a block
# has its own lets, but `=` inside an `if` branch or a `for` body updates the
# enclosing binding.
fn main() {
  let x = 1
  x = x + 1
  let y = arange(3)
  y = y * 2
  let y = y + 1         # a new let of the same name
  print("x", x, "y", y)
  # expect: x 2 y [1, 3, 5] (i64[3])
  let acc = 0
  for i in 0..5 { acc = acc + i }
  print("acc", acc)
  # expect: acc 10
  let v = zeros([2])
  if true { v = v + 1.0 } else { v = v - 1.0 }
  print("v", v)
  # expect: v [1.0000, 1.0000] (f32[2])
  let z = 5
  if true {
    let z = 10           # local to the branch
    print("inner", z)
  # expect: inner 10
  }
  print("outer", z)
  # expect: outer 5
  let w: f32[2] = v * 3.0
  let n: int = 4
  let s: f32[] = sum(w)
  print("typed", w, n, s)
  # expect: typed [3.0000, 3.0000] (f32[2]) 4 6.0000
  let a = 1; let b = 2; a = b; b = 7     # statements separated by ;
  print("a b", a, b)
  # expect: a b 2 7
  let long = 1 +
    2 *
    3                   # a line ending in an operator continues
  let eq =
    long + 1            # ... and so does one ending in =
  print("long", long, eq)
  # expect: long 7 8
}

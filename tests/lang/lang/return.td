# `return` ends a function early, also from inside an `if` or a `for`.
fn sign(k: int) -> int {
  if k < 0 { return -1 }
  if k == 0 { return 0 }
  1
}

fn first_over(limit: int) -> int {
  for i in 0..100 {
    if i * i > limit { return i }
  }
  return -1
}

fn clipped(x) {
  let y = relu(x)
  return y * 2
}

fn main() {
  print("sign", sign(-3), sign(0), sign(8))
  # expect: sign -1 0 1
  print("first_over", first_over(10), first_over(100000))
  # expect: first_over 4 -1
  print("clipped", clipped(arange(4) - 2))
  # expect: clipped [0, 0, 0, 2] (i64[4])
}

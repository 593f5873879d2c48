# `if` on compile-time conditions: a statement or an expression, else-if
# chains, conditions from model parameters, bools and literal sizes.
fn classify(k: int) -> int {
  if k < 0 { -1 } else if k == 0 { 0 } else if k < 10 { 1 } else { 2 }
}

fn pick(x, use_exp: bool = false) {
  if use_exp { exp(x) } else { x }
}

fn describe(x) {
  if x.shape[0] == 3 and x.ndim == 1 { "vector of 3" } else { "something else" }
}

fn main() {
  print("classify", classify(-5), classify(0), classify(3), classify(42))
  # expect: classify -1 0 1 2
  print("pick", pick(zeros([2])), pick(zeros([2]), use_exp = true))
  # expect: pick [0.0000, 0.0000] (f32[2]) [1.0000, 1.0000] (f32[2])
  let v = arange(3)
  print(describe(v), describe(zeros([2, 2])))
  # expect: vector of 3 something else
  let y = if v.shape[0] > 2 { v * 10 } else { v }
  print("expr", y)
  # expect: expr [ 0, 10, 20] (i64[3])
  if false { print("never") }
  if not false {
    print("no else")
  # expect: no else
  }
  # `}` then `else` on the next line continues the if
  if v.ndim == 2 {
    print("two")
  }
  else if v.ndim == 1 {
    print("one")
  # expect: one
  }
  else {
    print("other")
  }
}

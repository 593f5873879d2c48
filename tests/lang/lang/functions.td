# Functions: inlined at compile time; default arguments, keyword arguments,
# typed parameters binding size names, functions and built-ins passed as
# values, compile-time recursion.
fn scale(x, k: float = 2.0, shift: float = 0.0) { x * k + shift }

# N and D are bound from the argument; the result type is checked
fn row_sums(x: f32[N, D]) -> f32[N] { sum(x, axis = 1) }

fn width(x: f32[N, D]) -> int { D }

fn apply(f, x) { f(x) }

fn twice(f, x) { f(f(x)) }

fn fact(n: int) -> int { if n <= 1 { 1 } else { n * fact(n - 1) } }

fn gelu_tanh(x) {                               # untyped: any tensor
  0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
}

fn main() {
  let x = f32(arange(3))
  print("defaults", scale(x))
  # expect: defaults [0.0000, 2.0000, 4.0000] (f32[3])
  print("keyword", scale(x, shift = 1.0))
  # expect: keyword [1.0000, 3.0000, 5.0000] (f32[3])
  print("positional", scale(x, 3.0, 0.5))
  # expect: positional [0.5000, 3.5000, 6.5000] (f32[3])
  print("all keywords", scale(shift = -1.0, x = x, k = 0.5))
  # expect: all keywords [-1.0000, -0.5000,  0.0000] (f32[3])
  print("typed", row_sums(reshape(x, [1, 3])), row_sums(reshape(f32(arange(6)), [2, 3])))
  # expect: typed [3.0000] (f32[1]) [ 3.0000, 12.0000] (f32[2])
  print("size", width(zeros([4, 7])))
  # expect: size 7
  print("builtin value", apply(relu, x - 1.0))
  # expect: builtin value [0.0000, 0.0000, 1.0000] (f32[3])
  print("fn value", twice(scale, x))
  # expect: fn value [0.0000, 4.0000, 8.0000] (f32[3])
  print("recursion", fact(5))
  # expect: recursion 120
  print("gelu_tanh", gelu_tanh(f32(arange(4)) - 1.0))
  # expect: gelu_tanh [-0.1588,  0.0000,  0.8412,  1.9546] (f32[4])
}

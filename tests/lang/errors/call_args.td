# Calls are checked against the declaration: too many or missing
# arguments, unknown or repeated keywords, and the same for built-ins.
fn two(a, b: int = 1) { a * b }

model Lin(in: int, out: int) {
  param w: f32[out, in] = zeros()
  fn forward(x) { x @ w.T }
}

fn main() {
  let x = ones([2])
  let a = two(x, 1, 2)                   # error: too many arguments: 'two' takes 2
  let b = two()                          # error: missing argument 'a' in the call of 'two'
  let c = two(x, c = 3)                  # error: 'two' has no parameter named 'c'
  let d = two(x, a = x)                  # error: parameter 'a' is given twice
  let e = two(b = 2, x)                  # error: a positional argument follows a keyword argument
  let f = sum(x, axes = 0)               # error: sum() has no parameter named 'axes'
  let g = exp(x, x)                      # error: too many arguments: exp() takes at most 1
  let h = reshape(x)                     # error: reshape() is missing its argument 'shape'
  let m = Lin(2)                         # error: missing argument 'out' in the call of 'Lin'
  let n = Lin(2, 3, 4)                   # error: too many arguments: 'Lin' takes 2
  let o = x(1)                           # error: a tensor cannot be called
}
# help: sum(x, axis, keepdims)

# Gradients of the composites at the points where a naive formula divides
# by zero, under --check-numerics (every value computed, also the ones a
# where discards, must be finite): prod and cumprod at zeros (the product
# of the other factors), norm at a zero vector (0).  Expected values worked
# out by hand: d/dx (x0 - 2 x0 x1 + 0.5 x0 x1 x2) at (2, 0, 3) is
# (1, -1, 0); d/dx (x0 x1 x2) is (0, 6, 0).
# args: --check-numerics
fn w(x) { sum(cumprod(x, 0) * tensor([1.0, -2.0, 0.5])) }
fn p(x) { prod(x) }
fn n2(x) { norm(x) }
fn main() {
  let x = tensor([2.0, 0.0, 3.0])
  print(grad(w)(x), grad(p)(x), grad(n2)(zeros([2])))
}
# expect: [ 1.0000, -1.0000,  0.0000] (f32[3]) [0.0000, 6.0000, 0.0000] (f32[3]) [0.0000, 0.0000] (f32[2])

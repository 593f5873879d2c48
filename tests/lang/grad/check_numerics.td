# --check-numerics stops at the first Inf or NaN, also in a backward pass,
# and names the forward line whose gradient produced it: d sqrt(y) / dy is
# 1 / (2 sqrt(y)), infinite at y = 0.
# args: --check-numerics
fn loss(x) {
  let y = x * 2
  sum(sqrt(y))        # error: the gradient of sqrt (its op 'div') produced Inf (first at flat index 0)
}
fn main() {
  print(grad(loss)(zeros([3])))
}

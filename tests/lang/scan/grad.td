# Gradients through scan (lang/grad.c, r_scan): with respect to the weights
# the step captures, the initial carry and the sequence, for a scan and a
# reversed one; the gradient of the unrolled loop must agree.  Expected
# values: central finite differences of the loop in numpy float64
# (tests/lang/scan/reference.py, --grad).
fn cell(h, x, w) {
  let h2 = tanh(h @ w + x)
  (h2, h2 * h2)
}
fn loss(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w)
  sum(h * 3.0) + sum(ys)
}
fn loss_rev(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w, reverse = true)
  sum(h * 3.0) + sum(ys)
}
fn loss_unrolled(w, h0, xs) {
  let h = h0
  let s = 0.0
  for t in 0..4 {
    let (h2, y) = cell(h, xs[t], w)
    h = h2
    s = s + sum(y)
  }
  sum(h * 3.0) + s
}
fn main() {
  let xs = reshape(arange(24.0), [4, 2, 3]) * 0.05
  let w = reshape(arange(9.0), [3, 3]) * 0.1 - 0.3
  let h0 = reshape(arange(6.0), [2, 3]) * 0.1
  let (l, g) = value_and_grad(loss, argnums = [0, 1, 2])(w, h0, xs)
  print("loss", l)
  # expect: loss 24.8436
  print("dw", g[0][0], g[0][2])
  # expect: dw [2.5445, 2.6823, 2.6029] (f32[3]) [3.4288, 4.1625, 4.4726] (f32[3])
  print("dh0", g[1][1])
  # expect: dh0 [-0.3275,  0.4027,  1.1328] (f32[3])
  print("dxs", g[2][0][0], g[2][3][1])
  # expect: dxs [-0.3162,  0.6748,  1.6109] (f32[3]) [1.6408, 1.0574, 0.6488] (f32[3])
  let gu = grad(loss_unrolled, argnums = [0, 1, 2])(w, h0, xs)
  print("unrolled", max(abs(gu[0] - g[0])) < 1e-5, max(abs(gu[1] - g[1])) < 1e-5, max(abs(gu[2] - g[2])) < 1e-5)
  # expect: unrolled true true true
  let gr = grad(loss_rev, argnums = [0, 1])(w, h0, xs)
  print("reverse", gr[0][1], gr[1][0])
  # expect: reverse [3.9167, 7.6043, 8.3793] (f32[3]) [-0.3748,  0.2610,  0.8968] (f32[3])
}

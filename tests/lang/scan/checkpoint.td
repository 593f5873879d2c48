# Checkpointed gradients (scan(..., checkpoint = k), lang/grad.c): 7 steps
# in segments of 3 (a head of 1 step, 2 segments), a reverse scan in
# segments of 2, a fold over the step index with checkpoint = true (3
# steps a segment).  Expected values: central differences of the loops in
# numpy float64 (tests/lang/scan/reference.py --checkpoint); each
# gradient is also the plain one bit for bit.
fn cell(h, x, w) {
  let h2 = tanh(h @ w + x)
  (h2, h2 * h2)
}
fn step(c, i, w) { tanh(c @ w + f64(i) * 0.1) }
fn loss(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w, checkpoint = 3)
  sum(h * 3.0) + sum(ys)
}
fn loss_plain(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w)
  sum(h * 3.0) + sum(ys)
}
fn loss_rev(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w, reverse = true, checkpoint = 2)
  sum(h * 3.0) + sum(ys)
}
fn loss_rev_plain(w, h0, xs) {
  let (h, ys) = scan(cell, h0, xs, args = w, reverse = true)
  sum(h * 3.0) + sum(ys)
}
fn loss_i(w, h0) { sum(fold(step, h0, length = 7, args = w, checkpoint = true)) }
fn loss_i_plain(w, h0) { sum(fold(step, h0, length = 7, args = w)) }
fn same(a, b) { max(abs(a - b)) == 0.0 }

fn main() {
  let xs = f64(reshape(arange(42.0), [7, 2, 3]) * 0.05)
  let w = f64(reshape(arange(9.0), [3, 3]) * 0.1 - 0.3)
  let h0 = f64(reshape(arange(6.0), [2, 3]) * 0.1)
  let (l, g) = value_and_grad(loss, argnums = [0, 1, 2])(w, h0, xs)
  print("loss", l)
  # expect: loss 43.2629
  print("dw", g[0][0], g[0][2])
  # expect: dw [3.0931, 2.7847, 2.4474] (f64[3]) [3.8242, 4.0573, 4.0778] (f64[3])
  print("dh0", g[1][1])
  # expect: dh0 [-0.3293,  0.3966,  1.1226] (f64[3])
  print("dxs", g[2][0][0], g[2][6][1])
  # expect: dxs [-0.2717,  0.6473,  1.5149] (f64[3]) [0.3722, 0.1945, 0.1004] (f64[3])
  let gp = grad(loss_plain, argnums = [0, 1, 2])(w, h0, xs)
  print("same", same(g[0], gp[0]), same(g[1], gp[1]), same(g[2], gp[2]))
  # expect: same true true true
  let gr = grad(loss_rev, argnums = [0, 1, 2])(w, h0, xs)
  print("reverse", gr[0][1], gr[1][0], gr[2][6][0])
  # expect: reverse [5.8819, 9.2217, 9.3960] (f64[3]) [-0.0948,  0.0448,  0.1843] (f64[3]) [0.1635, 0.1555, 0.1462] (f64[3])
  let grp = grad(loss_rev_plain, argnums = [0, 1, 2])(w, h0, xs)
  print("same", same(gr[0], grp[0]), same(gr[1], grp[1]), same(gr[2], grp[2]))
  # expect: same true true true
  let gi = grad(loss_i, argnums = [0, 1])(w, h0)
  print("index", gi[0][1], gi[1][0])
  # expect: index [0.5498, 0.7897, 0.9251] (f64[3]) [-0.0012,  0.0022,  0.0056] (f64[3])
  let gip = grad(loss_i_plain, argnums = [0, 1])(w, h0)
  print("same", same(gi[0], gip[0]), same(gi[1], gip[1]))
  # expect: same true true
}

# scan and fold (lang/builtins_scan.c): a carry through the steps, per-step
# outputs stacked along axis 0, reverse, the step index (length = n),
# tuples as carries and sequences, extra arguments (args), a model's
# method as the step, a scan inside a scan.  Expected values: the same
# loops written out in numpy float64 (tests/lang/scan/reference.py);
# each scan is also compared with its unrolled for-loop form.
fn cell(h, x) {
  let h2 = tanh(h * 0.5 + x)
  (h2, h2 * 2.0)
}
fn acc(s, x) { s + x }
fn count(c, i) { (c + i, i * i) }
fn pair(c, x) {
  let (a, b) = c
  let (u, v) = x
  ((a + u, b * v), a - b)
}
fn affine(h, x, w, b) { (tanh(h @ w + x + b), sum(h)) }
fn row_sums(c, row) {
  let (s, _) = scan(count, c, length = 3)
  (s, sum(row) + f32(s))
}
model Rnn {
  param w: f32[3, 3] = full(0.1)
  fn step(h, x) { (tanh(h @ w + x), h) }
  fn forward(xs) { scan(step, zeros([2, 3]), xs) }
}

fn main() {
  let xs = reshape(arange(12.0), [4, 3]) * 0.1
  let h0 = zeros([3])
  let (h, ys) = scan(cell, h0, xs)
  print("h", h)
  # expect: h [0.8386, 0.8766, 0.9041] (f32[3])
  print("ys", ys[0], ys[3])
  # expect: ys [0.0000, 0.1993, 0.3948] (f32[3]) [1.6771, 1.7531, 1.8082] (f32[3])
  let u = h0
  let rows = []
  for t in 0..4 {
    let (u2, y) = cell(u, xs[t])
    u = u2
    rows = rows + [y]
  }
  print("unrolled", max(abs(u - h)), max(abs(stack(rows) - ys)))
  # expect: unrolled 0.0000 0.0000
  print("fold", fold(acc, zeros([3]), xs))
  # expect: fold [1.8000, 2.2000, 2.6000] (f32[3])
  let (hr, yr) = scan(cell, h0, xs, reverse = true)
  print("reverse", hr, yr[0], yr[3])
  # expect: reverse [0.2849, 0.4062, 0.5096] (f32[3]) [0.5699, 0.8125, 1.0192] (f32[3]) [1.4326, 1.5232, 1.6010] (f32[3])
  let (c, sq) = scan(count, zeros([], dtype = i64), length = 5)
  print("index", c, sq)
  # expect: index 10 [ 0,  1,  4,  9, 16] (i64[5])
  let (c0, _) = scan(count, zeros([], dtype = i64), length = 0)
  print("no steps", c0, fold(acc, ones([3]), xs[0:0]))
  # expect: no steps 0 [1.0000, 1.0000, 1.0000] (f32[3])
  let (ab, d) = scan(pair, (ones([2]), full([2], 2.0)), (xs[:, 0:2], xs[:, 1:3] + 1.0))
  let (a, b) = ab
  print("tuples", a, b, d[3])
  # expect: tuples [2.8000, 3.2000] (f32[2]) [10.4720, 13.6080] (f32[2]) [-3.3360, -4.2800] (f32[2])
  let w = reshape(arange(9.0), [3, 3]) * 0.1 - 0.3
  let (ha, s) = scan(affine, ones([2, 3]), reshape(arange(24.0), [4, 2, 3]) * 0.05, args = (w, 0.25))
  print("args", ha[1], s)
  # expect: args [0.8722, 0.9289, 0.9609] (f32[3]) [6.0000, 3.3373, 4.4436, 5.0167] (f32[4])
  let (ci, rs) = scan(row_sums, zeros([], dtype = i64), xs)
  print("nested", ci, rs)
  # expect: nested 12 [ 3.3000,  7.2000, 11.1000, 15.0000] (f32[4])
  let m = Rnn()
  let (hm, prev) = m(reshape(arange(24.0), [4, 2, 3]) * 0.05)
  print("model", hm[0], prev[1][0])
  # expect: model [0.7973, 0.8148, 0.8310] (f32[3]) [0.0000, 0.0500, 0.0997] (f32[3])
}

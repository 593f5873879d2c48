# A print in a step that grad differentiates prints wherever the step
# runs: the program's fold (h = 1, 2), the checkpoints' forward (1, 2),
# and, for each segment from the last, its recomputation and the
# backward's step (2, 2, then 1, 1).  Compiled code keeps every scan whose
# step prints, as eager mode runs it (test_compiled.c compares the text).
# h0 = 1, xs = [2, 3]: h = 1 * 2 * 3, so the gradient is [3, 2].
fn step(h, x) {
  print("h", h)
  h * x
}
fn l(xs) { fold(step, ones([]), xs, checkpoint = 1) }
fn main() {
  let g = grad(l)(tensor([2.0, 3.0]))
  # expect: h 1.0000
  # expect: h 2.0000
  # expect: h 1.0000
  # expect: h 2.0000
  # expect: h 2.0000
  # expect: h 2.0000
  # expect: h 1.0000
  # expect: h 1.0000
  print("g", g)
  # expect: g [3.0000, 2.0000] (f32[2])
}

# checkpoint's teaching errors: not a bool or a number of steps >= 1; a
# step that draws random numbers (a segment run again in the backward
# would draw others); checkpoint = true with a symbolic number of steps; a
# sequence of rank 8 (no room for the segments' axis).  The last three are
# reported where grad takes the gradient of the scan.
fn plain(h, x) { (h + x, x) }
fn noisy(h, x) { h + x * rand([3]) }
fn lnoisy(xs) { sum(fold(noisy, zeros([3]), xs, checkpoint = 2)) }   # error: checkpoint: the step draws random numbers (line 7)
fn cell(h, x) { tanh(h + x) }
fn lsqrt(xs) { sum(fold(cell, zeros([3]), xs, checkpoint = true)) }  # error: checkpoint = true needs a number of steps known when the graph is built, and this scan has T
fn tot(h, x) { h + sum(x) }
fn lrank(xs) { fold(tot, zeros([]), xs, checkpoint = 2) }   # error: checkpoint: a sequence of rank 8 has no room for the segments' axis
fn sym(xs: f32[T, 3]) {
  grad(lsqrt)(xs)
}
fn main() {
  let xs = zeros([4, 3])
  let h = zeros([3])
  let a = scan(plain, h, xs, checkpoint = 0)        # error: scan: checkpoint must be true, false or a number of steps >= 1, found a number below 1
  let b = fold(cell, h, xs, checkpoint = 1.5)       # error: fold: checkpoint must be true, false or a number of steps >= 1, found a float
  let g = grad(lnoisy)(xs)
  let r = grad(lrank)(ones([4, 1, 1, 1, 1, 1, 1, 2]))
}
# help: draw the noise before the scan and pass it as a sequence, or drop checkpoint
# help: give the segment length instead, e.g. checkpoint = 32

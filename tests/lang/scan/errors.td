# scan's teaching errors: a carry whose shape or dtype changes, a step that
# does not return (carry, y), sequences of different lengths, a scalar
# sequence, no sequence and no length, a model made inside the step, a
# length that disagrees with the sequences, a carry that is not a tensor.
model Lin {
  param w: f32[3, 3] = full(0.1)
  fn forward(x) { x @ w }
}
fn grow(h, x) { (concat([h, x], axis = 0), x) }
fn widen(h, x) { (f64(h) + f64(x), x) }
fn no_pair(h, x) { h + x }
fn plain(h, x) { (h + x, x) }
fn makes_model(h, x) {
  let m = Lin()
  (m(h), x)
}
fn main() {
  let xs = zeros([4, 3])
  let h = zeros([3])
  let a = scan(grow, h, xs)                     # error: carry 0 goes into the step as f32[3] but comes out as f32[6]
  let b = scan(widen, h, xs)                    # error: carry 0 goes into the step as f32[3] but comes out as f64[3]
  let c = scan(no_pair, h, xs)                  # error: the step function must return (carry, y), found a tensor
  let d = scan(plain, h, (xs, zeros([5, 3])))   # error: the sequences disagree on the number of steps: 4 for sequence 0, 5 for sequence 1
  let e = scan(plain, h, zeros([]))             # error: sequence 0 is a scalar (f32[])
  let f = scan(plain, h)                        # error: scan needs sequences to step through or a number of steps
  let g = scan(makes_model, h, xs)              # error: the step function declares parameters
  let k = scan(plain, h, xs, length = 3)        # error: length = 3, but the sequences have 4 steps
  let l = fold(plain, 1.5, xs)                  # error: the initial carry must be a tensor or a tuple of tensors, found a float
}
# help: a carry keeps its dtype and shape at every step
# help: to keep only the carry, use fold(f, init, xs)
# help: make the model outside the loop
# help: or scan(f, init, length = n)

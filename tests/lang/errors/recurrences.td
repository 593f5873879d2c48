# A loop that carries a value from step to step is a recurrence: when it
# cannot be unrolled (over a tensor's rows, a symbolic count, or too many
# steps) the help writes the user's loop out as a fold, which stays one
# loop in the graph (docs/language.md, "Loops that stay loops").
fn rnn(x: f32[T, 4], w: f32[4, 4]) -> f32[4] {
  let h = zeros([4])
  for r in x { h = tanh(h @ w + r) }           # error: a loop over the values of a tensor
  h
}
fn long(w: f32[4, 4]) -> f32[4] {
  let h = ones([4])
  for i in 0..200000 { h = tanh(h @ w) }       # error: this loop unrolls 200000 times (at most 100000)
  h
}
fn offset(w: f32[4, 4]) -> f32[4] {
  let h = ones([4])
  for i in 1..200001 { h = tanh(h @ w) }       # error: this loop unrolls 200000 times (at most 100000)
  h
}
# help: the loop carries h from step to step (a recurrence): a scan runs it as one loop in the graph, for every length of x: fn step(h, r) { h = tanh(h @ w + r); h } h = fold(step, h, x)
# help: compiled once, not 200000 times: fn step(h, i) { h = tanh(h @ w); h } h = fold(step, h, length = 200000)
# help: a for loop is unrolled into the graph; vectorise the body instead

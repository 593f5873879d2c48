# Entry points: their arguments need fixed-rank tensor types (the graph's
# inputs), and they return tensors, numbers and tuples or lists of them.
model NoInputs {
  fn forward(x: f32[..., 4]) { x }      # not an entry point (no fixed rank): fine
  fn helper() { 1 }                     # not an entry point (no arguments): fine
  fn returns_model(x: f32[N]) { NoInputs() }   # error: an entry point can only return tensors, numbers and tuples or lists of them, not a model instance
  fn returns_fn(x: f32[N]) { relu }     # error: an entry point can only return tensors, numbers and tuples or lists of them, not a built-in function
}

fn recursion(x: f32[N]) { recursion(x) }  # error: calls nest more than 200 deep

fn too_big(x: f32[N]) {
  let y = x
  for i in 0..200000 { y = y + 1.0 }  # error: this loop unrolls 200000 times (at most 100000)
  y
}
# help: tdsl inlines every call into the graph, so recursion must end at compile time

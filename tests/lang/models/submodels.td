# Sub-models: a member holding a model, a list of models built by a
# comprehension (layers[i]), models nested two deep, and models passed to
# functions as values.
model Scale(k: float) {
  param w: f32[] = full(k)
  fn forward(x) { x * w }
}

model Chain(n: int) {
  layers = [Scale(f32(i + 1)) for i in 0..n]
  fn forward(x) {
    let h = x
    for i in 0..n { h = layers[i](h) }
    h
  }
}

model Outer {
  inner = Chain(3)
  last = Scale(0.5)
  fn forward(x) { last(inner(x)) }
}

fn apply_twice(m, x) { m(m(x)) }

fn main() {
  let x = f32(arange(3)) + 1.0
  let c = Chain(4)
  let o = Outer()
  print("chain", c(x))
  # expect: chain [24.0000, 48.0000, 72.0000] (f32[3])
  print("outer", o(x))
  # expect: outer [3.0000, 6.0000, 9.0000] (f32[3])
  print("one layer", c.layers[2](x), o.inner.layers[0].w)
  # expect: one layer [3.0000, 6.0000, 9.0000] (f32[3]) 1.0000
  print("twice", apply_twice(o.last, x))
  # expect: twice [0.2500, 0.5000, 0.7500] (f32[3])
}

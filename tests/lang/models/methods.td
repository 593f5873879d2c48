# Methods: call each other by name, see model parameters and members (a
# member may use the members before it), take extra compile-time arguments,
# and are called from outside as m.method(x); m(x) calls forward.
model Poly(n: int, base: float = 1.0) {
  scale = 1.0 / n
  half = scale / 2
  param c: f32[n] = full(base)
  fn powers(x: f32[N]) -> f32[N, n] {
    stack([x ** f32(i) for i in 0..n], axis = 1)
  }
  fn forward(x: f32[N]) -> f32[N] { powers(x) @ c * scale }
  fn shifted(x, by: float) { forward(x + by) + half }
  fn both(x) { (forward(x), shifted(x, 1.0)) }
}

fn main() {
  let p = Poly(3)
  let x = f32(arange(3))
  print("powers", p.powers(x))
  # expect: powers [[1.0000, 0.0000, 0.0000],
  # expect:         [1.0000, 1.0000, 1.0000],
  # expect:         [1.0000, 2.0000, 4.0000]] (f32[3, 3])
  print("forward", p(x))
  # expect: forward [0.3333, 1.0000, 2.3333] (f32[3])
  print("shifted", p.shifted(x, 2.0))
  # expect: shifted [2.5000, 4.5000, 7.1667] (f32[3])
  let (f, s) = Poly(2, base = 2.0).both(x)
  print("both", f, s)
  # expect: both [1.0000, 2.0000, 3.0000] (f32[3]) [2.2500, 3.2500, 4.2500] (f32[3])
  print("members", p.scale, p.half)
  # expect: members 0.33333333 0.16666667
}

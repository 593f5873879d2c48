fn gelu_tanh(x) {
  0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
}
fn scale(x: f32[N, D], k: float = 2.0) -> f32[N, D] { x * k }

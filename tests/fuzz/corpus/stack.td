import nn

model Stack(d: int, n: int) {
  layers = [nn.Linear(d, d) for i in 0..n]   # layers.0.weight ...
  scale = 1.0 / n
  fn forward(x: f32[B, d]) -> f32[B, d] {
    let h = x
    for i in 0..n { h = relu(layers[i](h)) }
    h * scale
  }
}

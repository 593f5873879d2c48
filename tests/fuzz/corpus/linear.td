model Linear(in: int, out: int, has_bias: bool = true) {
  param weight: f32[out, in] = uniform(-1 / sqrt(in), 1 / sqrt(in))
  param bias: f32[out] = uniform(-1 / sqrt(in), 1 / sqrt(in)) if has_bias
  fn forward(x: f32[..., in]) -> f32[..., out] {
    let y = x @ weight.T
    if has_bias { y + bias } else { y }
  }
}

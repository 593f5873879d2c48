# The model of the weight-file cases (hostile.sh writes the files).
model M {
  param w: f32[4] = zeros()
  fn forward(x: f32[4]) -> f32[4] { x * w }
}

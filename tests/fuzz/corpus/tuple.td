model ReturnTensorForLog {
  h = Linear(16, 1)
  fn forward(x: f32[N, 16]) -> (f32[N, 1], f32[]) {
    let y = h(x)
    print("mean\t\"m\"", mean(y))
    (y, mean(y))
  }
}
fn pair(x) -> (f32[N], f32[N],) { let (a, b) = split(x, 2, axis = 0); return (a, b,) }

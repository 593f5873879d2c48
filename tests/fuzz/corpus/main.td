model Simple {
  fc = Linear(4, 2)
  fn forward(x: f32[N, 4]) -> f32[N, 2] { relu(fc(x)) }
}
fn main() {
  let m = Simple()
  print("out", m(randn([3, 4], seed = 0)))
}

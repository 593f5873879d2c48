# The seed's first model: relu(fc(x)).  One graph, no breaks.
import nn

model Simple {
  fc = nn.Linear(4, 2)
  fn forward(x: f32[N, 4]) -> f32[N, 2] {
    relu(fc(x))
  }
}

fn main() {
  let m = Simple()
  print(m(randn([3, 4], seed = 0)))
}

# The fix for bad_if.td: choose with where, which stays inside one graph.
import nn

model GoodWhere {
  h = nn.Linear(16, 16)
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    let y = h(x)
    where(rand([1]) > 0.5, y + 1, y - 1)
  }
}

fn main() {
  let m = GoodWhere()
  print(m(randn([4, 16], seed = 0)))
}

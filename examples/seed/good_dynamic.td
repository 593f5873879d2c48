# The fix for bad_shape_branch.td: write the computation for any N.  One
# graph serves every batch size; nothing recompiles.
import nn

model GoodDynamic {
  h = nn.Linear(16, 16)
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    h(x)
  }
}

fn main() {
  let m = GoodDynamic()
  print(m(randn([8, 16], seed = 0)))
  print(m(randn([16, 16], seed = 1)))
}

# --seed changes the run's seed, so parameters get other values (the same
# recipe as models/linear_init.td with seed 3).
# args: --seed 3
import nn

model One {
  fc = nn.Linear(2, 3)
  emb = nn.Embedding(4, 2)
  fn forward(x: f32[N, 2]) -> f32[N, 3] { fc(x) }
}

fn main() {
  let m = One()
  print("weight", m.fc.weight)
  # expect: weight [[-0.6402, -0.0897],
  # expect:         [ 0.2797, -0.0041],
  # expect:         [-0.5015, -0.0940]] (f32[3, 2])
  print("embedding", m.emb(arange(4) % 3))
  # expect: embedding [[-1.0482,  1.4094],
  # expect:            [ 0.9418,  1.5950],
  # expect:            [-0.3739,  0.8960],
  # expect:            [-1.0482,  1.4094]] (f32[4, 2])
}

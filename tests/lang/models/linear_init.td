# nn.Linear's uniform(-1/sqrt(in), 1/sqrt(in)) initialisation without a
# weights file: element i of parameter P is lo + (hi - lo) * u where u is
# Philox uniform with the run's seed (0) and stream FNV-1a(P's state_dict
# path), interp/params.c.  Expected values come from an independent Python
# Philox; this is examples/seed/simple.td.
import nn

model Simple {
  fc = nn.Linear(4, 2)
  fn forward(x: f32[N, 4]) -> f32[N, 2] { relu(fc(x)) }
}

fn main() {
  let m = Simple()
  print("weight", m.fc.weight)
  # expect: weight [[-0.4246, -0.0296, -0.1554, -0.1679],
  # expect:         [-0.1657,  0.4767, -0.2449, -0.3365]] (f32[2, 4])
  print("bias", m.fc.bias)
  # expect: bias [0.2950, 0.2097] (f32[2])
  print("out", m(randn([3, 4], seed = 0)))
  # expect: out [[0.1630, 0.4631],
  # expect:      [0.1194, 0.4564],
  # expect:      [0.5797, 0.2727]] (f32[3, 2])
}

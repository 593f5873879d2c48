# The seed's mistake 1: a Python `if` on a tensor's value.  In PyTorch this
# makes one graph per branch (Graph Count 2).  tdsl rejects it; see
# good_where.td for the fix.
import nn

model BadIf {
  h = nn.Linear(16, 16)
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    if rand([1]) > 0.5 { h(x) + 1 } else { h(x) - 1 }  # error: `if` on a tensor
  }
}
# help: where(rand([1]) > 0.5, h(x) + 1, h(x) - 1)

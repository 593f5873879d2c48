# The seed's mistake 4: branching on an input's shape.  In PyTorch each new
# shape recompiles.  In tdsl N is symbolic (bound at call time), so `if` on it
# is rejected; see good_dynamic.td for the fix.
import nn

model BadShapeBranch {
  a = nn.Linear(16, 16)
  b = nn.Linear(32, 16)
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    if N == 16 { a(x) } else { b(x) }  # error: N is bound at call time
  }
}
# help: make N a model parameter

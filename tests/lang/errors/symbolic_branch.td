# `if` on a symbolic size is the seed's fourth mistake (a recompile per
# shape in PyTorch): N is bound at call time, so the condition is unknown
# when the graph is built.  Literal sizes and model parameters are fine.
model M(d: int = 16) {
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    let a = if N == 16 { x } else { x * 2.0 }          # error: N is bound at call time
    let b = if x.shape[0] == 3 { a } else { a + 1.0 }  # error: N is bound at call time
    let c = if x.shape[1] == 16 { b } else { a }       # fine: dimension 1 is the literal 16
    let e = if d == 16 { c } else { a }                # fine: d is a model parameter
    if N > 4 { print("big") }                          # error: N is bound at call time, so this condition is not known
    e
  }
  fn two(x: f32[B, T, 16]) -> f32[B, T, 16] {
    if B * T != 64 { x } else { x + 1.0 }              # error: B*T depends on sizes bound at call time
  }
}
# help: make N a model parameter (model M(N: int) { ... }) so each value gets its own model, or write the computation for any N

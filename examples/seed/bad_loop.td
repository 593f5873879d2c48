# The seed's mistake 3: a loop over runtime values (in PyTorch, a Python loop
# that is traced and unrolled, iteration by iteration).  tdsl rejects loops
# over a tensor's values; see good_vectorized.td for the fix.
model BadLoop {
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    let out = x
    for i in arange(5) {  # error: a loop over the values of a tensor
      out = out + i
    }
    out
  }
}
# help: out + sum(arange(5))

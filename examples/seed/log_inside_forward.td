# The seed's mistake 2: reading a tensor on the host inside forward (.item()
# for logging).  In PyTorch: a graph break and a GPU->CPU sync.  tdsl rejects
# it; see return_tensor_for_log.td for the fix.
import nn

model LogInsideForward {
  h = nn.Linear(16, 1)
  fn forward(x: f32[N, 16]) -> f32[N, 1] {
    let y = h(x)
    let m = mean(y).item()  # error: tensors never leave the graph
    y
  }
}
# help: return the value from the entry point

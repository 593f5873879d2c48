# @ needs matching inner sizes; batch dims must broadcast.
fn f(a: f32[N, 3], b: f32[4, 5], v: f32[4], p: f32[2, 3, 3], q: f32[5, 3, 3]) {
  let x = a @ b                          # error: matmul of f32[N, 3] and f32[4, 5]: the inner sizes 3 and 4 differ
  let y = a @ v                          # error: matmul of f32[N, 3] and f32[4]: the inner sizes 3 and 4 differ
  let z = p @ q                          # error: matmul of f32[2, 3, 3] and f32[5, 3, 3]: the batch dimensions 2 and 5 differ
  let s = a @ 2.0                        # error: @ multiplies tensors, found a tensor and a float
  let r = sum(a) @ a                     # error: @ needs tensors of rank 1 or more
  a
}
# help: a @ b needs a[..., M, K] and b[..., K, N]; did you mean to transpose one (b.T)?
# help: the dimensions before the last two broadcast like elementwise operands

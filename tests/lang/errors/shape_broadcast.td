# Elementwise operations broadcast like NumPy; when they cannot, the error
# names both shapes (symbolic ones too) and the offending dimension.
fn f(a: f32[N, 3], b: f32[N, 4], c: f32[M, 3]) {
  let x = a + b                          # error: shapes f32[N, 3] and f32[N, 4] cannot be broadcast together: dimension -1 is 3 on the left and 4 on the right
  let y = a * c                          # error: shapes f32[N, 3] and f32[M, 3] cannot be broadcast together: dimension -2 is N on the left and M on the right
  let z = where(a > 0.0, a, b)           # error: shapes f32[N, 3] and f32[N, 4] cannot be broadcast together
  let w = broadcast_to(a, [N, 6])        # error: cannot broadcast f32[N, 3] to f32[N, 6]
  let ok = a + ones([3]) + ones([1, 1]) + full([], 2.0)
  ok
}
# help: sizes must be equal or 1 (aligned from the right)

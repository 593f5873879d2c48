# w3_gemm.td - W3: square f32 GEMM C = A @ B (256, 1024, 2048 in bench/run).
fn gemm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] {
  a @ b
}

# probes.td - single-op and variant programs behind the findings in
# bench/NOTES.md (run them with the harness; commands are in NOTES.md).
# Not part of bench/run's tables.
import nn

# 100 dependent adds of two tensors: no constant nodes (compare op_chain in
# w1_seed.td, whose `+ 1.0` adds one CONST node per add).
fn chain_xx(x: f32[4, 16]) -> f32[4, 16] {
  let y = x
  for i in 0..100 { y = y + x }
  y
}
fn mul_s(x: f32[N]) -> f32[N] { x * 1.25 }
fn add_a(x: f32[N], w: f32[N]) -> f32[N] { x + w }
fn tanh_1(x: f32[N]) -> f32[N] { tanh(x) }
fn exp_1(x: f32[N]) -> f32[N] { exp(x) }
fn gelu_1(x: f32[N]) -> f32[N] { gelu(x) }
fn rowmax(x: f32[M, N]) -> f32[M, 1] { max(x, axis = -1, keepdims = true) }
fn rowsum(x: f32[M, N]) -> f32[M, 1] { sum(x, axis = -1, keepdims = true) }
fn sub_b(x: f32[M, N], m: f32[M, 1]) -> f32[M, N] { x - m }
fn transp(w: f32[512, 784]) -> f32[784, 512] { transpose(w) }
# The W4 MLP with weights stored [in, out]: no transpose per call
# (nn.Linear computes x @ weight.T, which eager materialises).
model MLPT {
  param w1: f32[784, 512] = uniform(-0.03, 0.03)
  param b1: f32[512] = uniform(-0.03, 0.03)
  param w2: f32[512, 512] = uniform(-0.04, 0.04)
  param b2: f32[512] = uniform(-0.04, 0.04)
  param w3: f32[512, 10] = uniform(-0.04, 0.04)
  param b3: f32[10] = uniform(-0.04, 0.04)
  fn forward(x: f32[N, 784]) -> f32[N, 10] {
    relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3
  }
}

# Dropout-style mask over x: one uniform number per element (rand inline
# in the kernel as Philox4x32-10; before, one runtime call per element).
fn dropout(x: f32[N]) -> f32[N] { where(rand([N]) > 0.1, x * 1.1111111, 0.0) }

# w5_norm.td - W5: softmax and layer_norm over the last axis of [4096, 4096]
# (the stdlib definitions, as a user would write them; eps 1e-5, affine
# weight and bias as in ../shared/peers/w5_norm.py).
import nn

fn softmax_last(x: f32[M, N]) -> f32[M, N] {
  nn.softmax(x, axis = -1)
}

fn layernorm_last(x: f32[M, N], g: f32[N], b: f32[N]) -> f32[M, N] {
  nn.layer_norm(x, g, b, 0.00001)
}

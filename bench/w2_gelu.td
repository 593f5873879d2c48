# w2_gelu.td - W2: y = gelu(x * w + b) over 16M f32 (one fused loop is the
# floor; eager runs it op by op).
#
# The peers (../shared/peers/w2_gelu.py) time the tanh approximation
# (F.gelu(approximate="tanh") and the formula spelled out), so gelu_s and
# gelu_a use nn.gelu_tanh; w and b are the scalars 1.25 and 0.1 there, as in
# the peers, or same-shape arrays.  gelu_erf_s uses the exact built-in gelu
# (one primitive), for comparison with the formula.
import nn

fn gelu_s(x: f32[N]) -> f32[N] {
  nn.gelu_tanh(x * 1.25 + 0.1)
}

fn gelu_a(x: f32[N], w: f32[N], b: f32[N]) -> f32[N] {
  nn.gelu_tanh(x * w + b)
}

fn gelu_erf_s(x: f32[N]) -> f32[N] {
  gelu(x * 1.25 + 0.1)
}

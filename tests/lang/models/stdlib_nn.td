# Functions and models of stdlib/nn.td against numpy references.
import nn

fn main() {
  let s = f32(reshape(arange(8), [2, 4]) % 3) - 1.0
  print("softmax", nn.softmax(s))
  # expect: softmax [[0.0826, 0.2245, 0.6103, 0.0826],
  # expect:          [0.1966, 0.5344, 0.0723, 0.1966]] (f32[2, 4])
  print("softmax0", nn.softmax(s, axis = 0))
  # expect: softmax0 [[0.2689, 0.2689, 0.8808, 0.2689],
  # expect:           [0.7311, 0.7311, 0.1192, 0.7311]] (f32[2, 4])
  print("log_softmax", nn.log_softmax(s))
  # expect: log_softmax [[-2.4938, -1.4938, -0.4938, -2.4938],
  # expect:              [-1.6265, -0.6265, -2.6265, -1.6265]] (f32[2, 4])
  let w = f32(arange(4) % 2) + 1.0
  let b = floor(f32(arange(4)) / 2.0)
  print("layer_norm", nn.layer_norm(s, w, b))
  # expect: layer_norm [[-0.9045,  0.6030,  2.5075, -0.8091],
  # expect:             [ 0.0000,  2.8284, -0.4142,  1.0000]] (f32[2, 4])
  print("LayerNorm", nn.LayerNorm(4)(s))
  # expect: LayerNorm [[-0.9045,  0.3015,  1.5075, -0.9045],
  # expect:            [ 0.0000,  1.4142, -1.4142,  0.0000]] (f32[2, 4])
  print("rms_norm", nn.rms_norm(s + 2.0, w))
  # expect: rms_norm [[0.5164, 2.0656, 1.5492, 1.0328],
  # expect:           [0.9428, 2.8284, 0.4714, 1.8856]] (f32[2, 4])
  print("RMSNorm", nn.RMSNorm(4)(s))
  # expect: RMSNorm [[-1.1547,  0.0000,  1.1547, -1.1547],
  # expect:          [ 0.0000,  1.4142, -1.4142,  0.0000]] (f32[2, 4])
  print("leaky_relu", nn.leaky_relu(s, slope = 0.5))
  # expect: leaky_relu [[-0.5000,  0.0000,  1.0000, -0.5000],
  # expect:             [ 0.0000,  1.0000, -0.5000,  0.0000]] (f32[2, 4])
  print("gelu_tanh", nn.gelu_tanh(f32(arange(4)) - 1.0))
  # expect: gelu_tanh [-0.1588,  0.0000,  0.8412,  1.9546] (f32[4])
  print("causal_mask", nn.causal_mask(3))
  # expect: causal_mask [[ true, false, false],
  # expect:              [ true,  true, false],
  # expect:              [ true,  true,  true]] (bool[3, 3])
  print("cross_entropy", nn.cross_entropy(s, arange(2) * 2 + 1))
  # expect: cross_entropy 1.5602
  let q = f32(reshape(arange(6), [1, 3, 2]) % 4) * 0.5
  let k = f32(reshape(arange(6), [1, 3, 2]) % 3) - 1.0
  let v = reshape(f32(arange(6)), [1, 3, 2])
  print("attention", nn.attention(q, k, v))
  # expect: attention [[[2.2713, 3.2713],
  # expect:             [3.1731, 4.1731],
  # expect:             [2.2713, 3.2713]]] (f32[1, 3, 2])
  print("causal", nn.attention(q, k, v, causal = true))
  # expect: causal [[[0.0000, 1.0000],
  # expect:          [1.1750, 2.1750],
  # expect:          [2.2713, 3.2713]]] (f32[1, 3, 2])
  let h = reshape(f32(arange(24)), [1, 3, 8])
  let heads = nn.split_heads(h, 2)
  print("split_heads", heads[0, 1])
  # expect: split_heads [[ 4.0000,  5.0000,  6.0000,  7.0000],
  # expect:              [12.0000, 13.0000, 14.0000, 15.0000],
  # expect:              [20.0000, 21.0000, 22.0000, 23.0000]] (f32[3, 4])
  print("roundtrip", sum(nn.merge_heads(heads) != h))
  # expect: roundtrip 0
}

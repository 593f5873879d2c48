# nn.td - neural-network building blocks, written in tdsl itself.
#
# Everything here is ordinary tdsl: the compiler inlines and fuses through
# it exactly like user code.  Parameter names follow PyTorch's state_dict
# (Linear has `weight` [out, in] and `bias` [out]; LayerNorm has `weight`
# and `bias`), so weights exported from torch.nn load as they are.

# ---- layers ----

# y = x @ weight.T + bias, like torch.nn.Linear (same initialisation range).
model Linear(in: int, out: int, has_bias: bool = true) {
  param weight: f32[out, in] = uniform(-1 / sqrt(in), 1 / sqrt(in))
  param bias: f32[out] = uniform(-1 / sqrt(in), 1 / sqrt(in)) if has_bias
  fn forward(x: f32[..., in]) -> f32[..., out] {
    let y = x @ weight.T
    if has_bias { y + bias } else { y }
  }
}

# Rows of `weight` selected by integer indices: [..., ] -> [..., d].
model Embedding(n: int, d: int) {
  param weight: f32[n, d] = normal(0.0, 1.0)
  fn forward(idx) {
    take(weight, idx, axis = 0)
  }
}

# Layer normalisation over the last axis, like torch.nn.LayerNorm(d).
model LayerNorm(d: int, eps: float = 0.00001) {
  param weight: f32[d] = ones()
  param bias: f32[d] = zeros()
  fn forward(x: f32[..., d]) -> f32[..., d] {
    layer_norm(x, weight, bias, eps)
  }
}

# Root-mean-square normalisation over the last axis (LLaMA-style).
model RMSNorm(d: int, eps: float = 0.000001) {
  param weight: f32[d] = ones()
  fn forward(x: f32[..., d]) -> f32[..., d] {
    rms_norm(x, weight, eps)
  }
}

# Two Linear layers with a GELU between them (a transformer's feed-forward).
model MLP(d: int, hidden: int) {
  fc1 = Linear(d, hidden)
  fc2 = Linear(hidden, d)
  fn forward(x: f32[..., d]) -> f32[..., d] {
    fc2(gelu(fc1(x)))
  }
}

# Multi-head self-attention over x: [B, T, d], with an optional causal mask.
model MultiHeadAttention(d: int, heads: int, causal: bool = true) {
  q = Linear(d, d)
  k = Linear(d, d)
  v = Linear(d, d)
  o = Linear(d, d)
  fn forward(x: f32[B, T, d]) -> f32[B, T, d] {
    let qh = split_heads(q(x), heads)
    let kh = split_heads(k(x), heads)
    let vh = split_heads(v(x), heads)
    let a = attention(qh, kh, vh, causal)
    o(merge_heads(a))
  }
}

# A pre-norm transformer block: x + attn(ln1(x)), then h + mlp(ln2(h)).
model TransformerBlock(d: int, heads: int, hidden: int, causal: bool = true) {
  ln1 = LayerNorm(d)
  attn = MultiHeadAttention(d, heads, causal)
  ln2 = LayerNorm(d)
  mlp = MLP(d, hidden)
  fn forward(x: f32[B, T, d]) -> f32[B, T, d] {
    let h = x + attn(ln1(x))
    h + mlp(ln2(h))
  }
}

# Dropout as a layer: each call takes the seed of its mask (a compile-time
# int, or a rank-0 integer tensor such as a step counter that the training
# step increments with `assign`).  The train/eval switch is the
# compile-time parameter `training`: an entry built with
# Dropout(p, training = false) is a graph without any random op.
model Dropout(p: float = 0.5, training: bool = true) {
  fn forward(x, seed) {
    dropout(x, p, seed, training)
  }
}

# ---- functions ----

# Inverted dropout, like torch.nn.functional.dropout: in training an element
# is zeroed with probability p and the others are scaled by 1 / (1 - p), so
# the mean is kept; without training, or with p == 0, x itself.  The mask is
# rand(x.shape, seed = seed) >= p: Philox keyed by `seed` (a compile-time
# int or a rank-0 i32 / i64 tensor) in the stream of this call, so it is
# the same in every backend, and two dropouts fed one counter differ.
fn dropout(x, p: float, seed, training: bool = true) {
  if p < 0.0 or p >= 1.0 { error("dropout: p must be in [0, 1)") }
  if training and p > 0.0 { where(rand(x.shape, seed = seed) >= p, x / (1.0 - p), 0) } else { x }
}

# exp(x) / sum(exp(x)) along `axis`, computed stably (the max is subtracted).
fn softmax(x, axis: int = -1) {
  let e = exp(x - max(x, axis = axis, keepdims = true))
  e / sum(e, axis = axis, keepdims = true)
}

# log(softmax(x)) along `axis`, without forming softmax.
fn log_softmax(x, axis: int = -1) {
  let s = x - max(x, axis = axis, keepdims = true)
  s - log(sum(exp(s), axis = axis, keepdims = true))
}

# (x - mean) / sqrt(var + eps) * weight + bias over the last axis
# (biased variance, like PyTorch).
fn layer_norm(x, weight, bias, eps: float = 0.00001) {
  let xc = x - mean(x, axis = -1, keepdims = true)
  let var = mean(xc * xc, axis = -1, keepdims = true)
  xc * rsqrt(var + eps) * weight + bias
}

# x / sqrt(mean(x^2) + eps) * weight over the last axis.
fn rms_norm(x, weight, eps: float = 0.000001) {
  x * rsqrt(mean(x * x, axis = -1, keepdims = true) + eps) * weight
}

# GELU with the tanh approximation (PyTorch's approximate="tanh"),
# 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), written as
# the equal x * sigmoid(2u): one exp and one division, and no cancellation
# where tanh(u) is near -1 (1 + tanh(u) loses all its digits there).
fn gelu_tanh(x) {
  x * sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
}

fn leaky_relu(x, slope: float = 0.01) {
  where(x >= 0, x, x * slope)
}

# A [T, T] bool mask that is true where key position <= query position.
fn causal_mask(t) {
  let i = arange(t)
  unsqueeze(i, 1) >= unsqueeze(i, 0)
}

# Scaled dot-product attention: q, k, v are [..., T, dh].  With causal,
# position i attends to positions <= i (masked scores are set to -1e30, so
# their softmax weight is exactly 0).
fn attention(q, k, v, causal: bool = false) {
  let t = q.shape[-2]
  let scores = (q @ transpose(k, -1, -2)) * (1 / sqrt(q.shape[-1]))
  let masked = if causal { where(causal_mask(t), scores, -1e30) } else { scores }
  softmax(masked, axis = -1) @ v
}

# [B, T, H * dh] -> [B, H, T, dh]
fn split_heads(x: f32[B, T, D], heads: int) {
  transpose(reshape(x, [B, T, heads, D / heads]), 1, 2)
}

# [B, H, T, dh] -> [B, T, H * dh]
fn merge_heads(x: f32[B, H, T, E]) {
  reshape(transpose(x, 1, 2), [B, T, H * E])
}

# ---- losses (as torch.nn.functional, mean over the batch) ----

# Cross-entropy of logits [N, C] against integer labels [N], computed from
# log_softmax (log-sum-exp, stable for any logits).  With label_smoothing e
# the target is (1 - e) * one_hot + e / C, as in PyTorch.
fn cross_entropy(logits: f32[N, C], labels, label_smoothing: float = 0.0) {
  let logp = log_softmax(logits)
  let target = if label_smoothing == 0.0 { one_hot(labels, C) }
               else { (1 - label_smoothing) * one_hot(labels, C) + label_smoothing / C }
  -mean(sum(logp * target, axis = -1))
}

# Negative log-likelihood of log-probabilities [N, C] at integer labels [N].
fn nll_loss(logp: f32[N, C], labels) {
  -mean(sum(logp * one_hot(labels, C), axis = -1))
}

# Mean squared error.
fn mse_loss(x, target) {
  let d = x - target
  mean(d * d)
}

# Binary cross-entropy of logits x against targets in [0, 1]:
# max(x, 0) - x * y + log(1 + exp(-|x|)), stable for any x.
fn binary_cross_entropy_with_logits(x, target) {
  mean(maximum(x, 0.0) - x * target + log1p(exp(-abs(x))))
}

# ---- convolutional layers ----
# (at the end of the file: random streams are keyed by their call site's
# place in it, so what comes before must not move)

# A 2-D convolution over [N, in, H, W] (or [in, H, W]), like
# torch.nn.Conv2d with a square kernel: `weight` [out, in / groups, k, k]
# and `bias` [out], both initialised as PyTorch's reset_parameters does
# (kaiming_uniform with a = sqrt(5), so uniform within 1 / sqrt(fan_in),
# fan_in = in / groups * k * k).  stride, padding and dilation take what
# conv2d takes: an int, a list of two, or padding "same" / "valid".
model Conv2d(in: int, out: int, kernel_size: int, stride = 1, padding = 0, dilation = 1, groups: int = 1,
             has_bias: bool = true) {
  param weight: f32[out, in / groups, kernel_size, kernel_size] = uniform(-1 / sqrt(in / groups * kernel_size * kernel_size), 1 / sqrt(in / groups * kernel_size * kernel_size))
  param bias: f32[out] = uniform(-1 / sqrt(in / groups * kernel_size * kernel_size), 1 / sqrt(in / groups * kernel_size * kernel_size)) if has_bias
  fn forward(x) {
    if has_bias {
      conv2d(x, weight, bias, stride = stride, padding = padding, dilation = dilation, groups = groups)
    } else {
      conv2d(x, weight, stride = stride, padding = padding, dilation = dilation, groups = groups)
    }
  }
}

# torch.nn.MaxPool2d: the first maximum of each window (stride defaults to
# the kernel size; [] says so, as in PyTorch).
model MaxPool2d(kernel_size, stride = [], padding = 0, dilation = 1, ceil_mode: bool = false) {
  fn forward(x) {
    max_pool2d(x, kernel_size, stride = stride, padding = padding,
               dilation = dilation, ceil_mode = ceil_mode)
  }
}

# torch.nn.AvgPool2d: the mean of each window, counting the padding unless
# count_include_pad is false.
model AvgPool2d(kernel_size, stride = [], padding = 0, ceil_mode: bool = false, count_include_pad: bool = true) {
  fn forward(x) {
    avg_pool2d(x, kernel_size, stride = stride, padding = padding,
               ceil_mode = ceil_mode, count_include_pad = count_include_pad)
  }
}

# ---- recurrent layers (at the end: random streams are keyed by source position,
# so code added above dropout would change its masks) ----

# Recurrent layers, like torch.nn.LSTM and torch.nn.GRU with one layer:
# the same gate order, state_dict names (weight_ih_l0 [G*hidden, in],
# weight_hh_l0 [G*hidden, hidden], bias_ih_l0, bias_hh_l0) and
# initialisation (uniform(-1/sqrt(hidden), 1/sqrt(hidden)) for every
# weight), so PyTorch checkpoints load.  The input is [T, B, in] (or
# [B, T, in] with batch_first), T and B symbolic: the steps are one scan,
# whatever T is.  The input projection of every step is one matmul before
# the loop; each step adds h @ weight_hh_l0.T.
#   LSTM: forward(x) -> (output [T, B, hidden], (h_n, c_n)), h_n and c_n
#         [1, B, hidden] as PyTorch's; run(x, h0, c0) starts from a state
#         ([B, hidden] each).  Gates i, f, g, o.
#   GRU:  forward(x) -> (output, h_n); run(x, h0).  Gates r, z, n.
model LSTM(in: int, hidden: int, batch_first: bool = false) {
  param weight_ih_l0: f32[4 * hidden, in] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param weight_hh_l0: f32[4 * hidden, hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param bias_ih_l0: f32[4 * hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param bias_hh_l0: f32[4 * hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  fn step(state, xw) {
    let (h, c) = state
    let gates = split(xw + h @ weight_hh_l0.T + bias_hh_l0, 4, axis = -1)
    let c2 = sigmoid(gates[1]) * c + sigmoid(gates[0]) * tanh(gates[2])
    let h2 = sigmoid(gates[3]) * tanh(c2)
    ((h2, c2), h2)
  }
  fn run(x, h0, c0) {
    let xt = if batch_first { transpose(x, 0, 1) } else { x }
    let (state, ys) = scan(step, (h0, c0), xt @ weight_ih_l0.T + bias_ih_l0)
    let (h, c) = state
    (if batch_first { transpose(ys, 0, 1) } else { ys }, (unsqueeze(h, 0), unsqueeze(c, 0)))
  }
  fn forward(x) {
    let b = if batch_first { x.shape[0] } else { x.shape[1] }
    run(x, zeros([b, hidden]), zeros([b, hidden]))
  }
}

model GRU(in: int, hidden: int, batch_first: bool = false) {
  param weight_ih_l0: f32[3 * hidden, in] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param weight_hh_l0: f32[3 * hidden, hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param bias_ih_l0: f32[3 * hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  param bias_hh_l0: f32[3 * hidden] = uniform(-1 / sqrt(hidden), 1 / sqrt(hidden))
  fn step(h, xw) {
    let xg = split(xw, 3, axis = -1)
    let hg = split(h @ weight_hh_l0.T + bias_hh_l0, 3, axis = -1)
    let r = sigmoid(xg[0] + hg[0])
    let z = sigmoid(xg[1] + hg[1])
    let n = tanh(xg[2] + r * hg[2])
    let h2 = (1.0 - z) * n + z * h
    (h2, h2)
  }
  fn run(x, h0) {
    let xt = if batch_first { transpose(x, 0, 1) } else { x }
    let (h, ys) = scan(step, h0, xt @ weight_ih_l0.T + bias_ih_l0)
    (if batch_first { transpose(ys, 0, 1) } else { ys }, unsqueeze(h, 0))
  }
  fn forward(x) {
    let b = if batch_first { x.shape[0] } else { x.shape[1] }
    run(x, zeros([b, hidden]))
  }
}

# ---- more convolutional layers (appended last, for the same reason) ----

# torch.nn.ConvTranspose2d with a square kernel: `weight` [in, out / groups,
# k, k] (PyTorch's layout) and `bias` [out], initialised as PyTorch does
# (its fan_in is the weight's axis 1 times k * k: out / groups * k * k).
model ConvTranspose2d(in: int, out: int, kernel_size: int, stride = 1, padding = 0, output_padding = 0,
                      groups: int = 1, has_bias: bool = true, dilation = 1) {
  param weight: f32[in, out / groups, kernel_size, kernel_size] = uniform(-1 / sqrt(out / groups * kernel_size * kernel_size), 1 / sqrt(out / groups * kernel_size * kernel_size))
  param bias: f32[out] = uniform(-1 / sqrt(out / groups * kernel_size * kernel_size), 1 / sqrt(out / groups * kernel_size * kernel_size)) if has_bias
  fn forward(x) {
    if has_bias {
      conv_transpose2d(x, weight, bias, stride = stride, padding = padding, output_padding = output_padding,
                       groups = groups, dilation = dilation)
    } else {
      conv_transpose2d(x, weight, stride = stride, padding = padding, output_padding = output_padding,
                       groups = groups, dilation = dilation)
    }
  }
}

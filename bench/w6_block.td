# w6_block.td - W6: one pre-norm transformer block, the block of
# ../shared/peers/w6_transformer.py: d = 256, 4 heads of 64, MLP 1024 with
# the exact (erf) GELU, no attention mask, no dropout, LayerNorm eps 1e-5,
# one fused qkv projection laid out like torch's reshape(b, s, 3, 4, 64).
#   x = x + proj(attn(ln1(x)));  x = x + fc2(gelu(fc1(ln2(x))))
# Timed at B = 8, S = 128 by bench/run.  The LayerNorm weights start away
# from 1 and 0 (as the peers set them) so a wrong affine step shows up.
import nn

model Block(d: int = 256, heads: int = 4, hidden: int = 1024) {
  param ln1_w: f32[d] = uniform(0.5, 1.5)
  param ln1_b: f32[d] = uniform(-0.2, 0.2)
  qkv = nn.Linear(d, 3 * d)
  proj = nn.Linear(d, d)
  param ln2_w: f32[d] = uniform(0.5, 1.5)
  param ln2_b: f32[d] = uniform(-0.2, 0.2)
  fc1 = nn.Linear(d, hidden)
  fc2 = nn.Linear(hidden, d)
  fn forward(x: f32[B, S, d]) -> f32[B, S, d] {
    let h = nn.layer_norm(x, ln1_w, ln1_b, 0.00001)
    let t = permute(reshape(qkv(h), [B, S, 3, heads, d / heads]), [2, 0, 3, 1, 4])
    let att = nn.softmax((t[0] @ transpose(t[1], -1, -2)) * (1 / sqrt(d / heads)), axis = -1)
    let o = reshape(transpose(att @ t[2], 1, 2), [B, S, d])
    let x1 = x + proj(o)
    x1 + fc2(gelu(fc1(nn.layer_norm(x1, ln2_w, ln2_b, 0.00001))))
  }
}

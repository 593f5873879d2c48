# A file without `export`: a top-level function with a typed signature that
# another function or model of the file uses is a helper, checked only
# through its callers, with their sizes (docs/language.md, "Entry points").
# On its own split_heads would not check (D / H is not a whole size for
# every D and H); through Attn.forward, D = 8 and H = 2.  `tdsl check`
# elaborates Attn.forward and pooled, the entry points, and through them
# the helpers.
fn split_heads(x: f32[B, T, D], h: f32[H]) -> f32[B, H, T, D / H] {
  permute(reshape(x, [B, T, H, D / H]), [0, 2, 1, 3])
}
fn first4(x: f32[N, D]) -> f32[4, D] { x[0:4] }
model Attn(d: int = 8, heads: int = 2) {
  fn forward(x: f32[B, T, d]) -> f32[B, heads, T, d / heads] { split_heads(x, zeros([heads])) }
}
fn pooled(x: f32[8, 3]) -> f32[3] { mean(first4(x), axis = 0) }

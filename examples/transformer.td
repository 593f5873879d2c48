# transformer.td - a pre-norm transformer block (d=64, 4 heads, MLP 256) on a
# batch of random token embeddings, with causal self-attention.
#
#   tdsl run examples/transformer.td
#   tdsl run examples/transformer.td --entry Block.forward --in x=x.npy
import nn

model Block {
  blk = nn.TransformerBlock(64, 4, 256)
  fn forward(x: f32[B, T, 64]) -> f32[B, T, 64] {
    blk(x)
  }
}

model TinyLM(vocab: int = 100, d: int = 64, layers: int = 2) {
  emb = nn.Embedding(vocab, d)
  blocks = [nn.TransformerBlock(d, 4, 4 * d) for i in 0..layers]
  ln = nn.LayerNorm(d)
  head = nn.Linear(d, vocab, false)
  fn forward(tokens: i64[B, T]) -> f32[B, T, vocab] {
    let h = emb(tokens)
    for i in 0..layers { h = blocks[i](h) }
    head(ln(h))
  }
}

fn main() {
  let m = Block()
  let x = randn([2, 8, 64], seed = 1)
  let y = m(x)
  print("block output", y)
  print("mean", mean(y), "std", sqrt(mean((y - mean(y)) ** 2)))

  let lm = TinyLM()
  let tokens = i64(floor(rand([1, 8], seed = 2) * 100))
  let logits = lm(tokens)
  print("next-token prediction", argmax(logits[:, -1, :], axis = -1))
}

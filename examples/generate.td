# generate.td - autoregressive decoding with a key/value cache, in one graph.
#
# A GPT-2-style decoder (token and position embeddings, pre-norm blocks of
# stdlib/nn.td, a final LayerNorm, a linear head).  GPT.generate(prompt, n,
# temp) returns K new tokens per row of the prompt: a scan of K steps whose
# carry holds every layer's key and value cache and the last token, so one
# call of the compiled entry generates all K tokens, for any K (K is the
# length of n, whose values are unused) and any prompt length P, with no
# trip to the host per token.
#
#   tdsl run examples/generate.td                 # eager
#   tdsl run examples/generate.td --compiled      # the same tokens
#   tdsl run examples/generate.td --entry GPT.generate --in prompt=p.npy \
#       --in n=n.npy --in temp=t.npy --out tokens.npy --compiled
#
# Each step feeds one token at position pos (the prompt's last token first)
# through every layer: its key and value are written into row pos of the
# layer's caches ([B, heads, P - 1 + K, d / heads], filled by the prompt's
# first P - 1 tokens before the loop), its query attends to rows 0 .. pos,
# and the next token is argmax(logits + temp * Gumbel noise): a draw from
# softmax(logits / temp), greedy at temp 0, among the top_k most likely
# tokens when top_k > 0 (ties at the k-th value are all kept).  The noise
# comes from rand, so every step draws its own numbers, the same eager and
# compiled.
import nn

model GPT(vocab: int = 100, ctx: int = 64, d: int = 64, heads: int = 4, layers: int = 2, top_k: int = 0) {
  wte = nn.Embedding(vocab, d)
  wpe = nn.Embedding(ctx, d)
  blocks = [nn.TransformerBlock(d, heads, 4 * d) for i in 0..layers]
  ln_f = nn.LayerNorm(d)
  head = nn.Linear(d, vocab, false)

  # logits of the next token after every position (no cache): [B, T] -> [B, T, vocab]
  fn forward(tokens: i64[B, T]) -> f32[B, T, vocab] {
    let h = wte(tokens) + wpe(arange(T))
    for i in 0..layers { h = blocks[i](h) }
    head(ln_f(h))
  }

  # layer l for one token x [B, 1, d] at position pos (an i64[]): writes its
  # key and value into row pos of the caches kc, vc [B, heads, C, dh] and
  # attends to rows 0 .. pos.  -> (the layer's output, kc, vc)
  fn layer_step(l: int, x, kc, vc, pos) {
    let b = blocks[l]
    let a = b.ln1(x)
    let q = nn.split_heads(b.attn.q(a), heads)
    let rows = arange(kc.shape[2])
    let at = reshape(rows == pos, [1, 1, -1, 1])
    let kc2 = where(at, nn.split_heads(b.attn.k(a), heads), kc)
    let vc2 = where(at, nn.split_heads(b.attn.v(a), heads), vc)
    let scores = (q @ transpose(kc2, -1, -2)) * (1 / sqrt(q.shape[-1]))
    let w = nn.softmax(where(reshape(rows <= pos, [1, 1, 1, -1]), scores, -1e30), axis = -1)
    let h = x + b.attn.o(nn.merge_heads(w @ vc2))
    (h + b.mlp(b.ln2(h)), kc2, vc2)
  }

  # the k-th largest value of each row of x [B, V], as [B, 1]
  fn kth_largest(x, k: int) {
    let m = max(x, axis = -1, keepdims = true)
    for j in 1..k { m = max(where(x < m, x, -1e30), axis = -1, keepdims = true) }
    m
  }

  # one decoding step: feeds tok [B, 1] at position p0 + i, picks the next token
  fn decode_step(carry, i, p0, temp) {
    let (caches, tok) = carry
    let pos = i + p0
    let h = wte(tok) + wpe(reshape(pos, [1]))
    let out = []
    for l in 0..layers {
      let (kc, vc) = caches[l]
      let (h2, kc2, vc2) = layer_step(l, h, kc, vc, pos)
      h = h2
      out = out + [(kc2, vc2)]
    }
    let logits = head(ln_f(h))[:, 0, :]
    let g = -log(-log(rand(logits.shape) * 0.999998 + 0.000001))
    let kept = if top_k > 0 { where(logits >= kth_largest(logits, top_k), logits, -1e30) } else { logits }
    let next = argmax(kept + temp * g, axis = -1)
    ((out, unsqueeze(next, 1)), next)
  }

  # K tokens after each row of prompt (P >= 1, P - 1 + K <= ctx): the first
  # P - 1 tokens fill the caches in one pass, then a scan of K steps starts
  # from the last one.  -> [B, K]
  fn generate(prompt: i64[B, P], n: i64[K], temp: f32[]) -> i64[B, K] {
    let h = wte(prompt[:, 0:P - 1]) + wpe(arange(P - 1))
    let pad = zeros([B, heads, K, d // heads])
    let caches = []
    for l in 0..layers {
      let b = blocks[l]
      let a = b.ln1(h)
      caches = caches + [(concat([nn.split_heads(b.attn.k(a), heads), pad], axis = 2),
                          concat([nn.split_heads(b.attn.v(a), heads), pad], axis = 2))]
      h = b(h)
    }
    let (carry, toks) = scan(decode_step, (caches, prompt[:, P - 1:P]), length = K, args = (P - 1, temp))
    transpose(toks, 0, 1)
  }

  # the reference: R greedy tokens, each from the full forward pass over
  # every token so far (no cache; the loop is unrolled, R literal)
  fn greedy_reference(prompt: i64[B, P], r: int) {
    let tokens = prompt
    for j in 0..r {
      let next = argmax(forward(tokens)[:, -1, :], axis = -1)
      tokens = concat([tokens, unsqueeze(next, 1)], axis = 1)
    }
    tokens[:, P:P + r]
  }
}

fn main() {
  let lm = GPT()
  let prompt = i64(floor(rand([2, 5], seed = 3) * 100))
  let greedy = lm.generate(prompt, zeros([8], dtype = i64), zeros([]))
  print("greedy", greedy)
  print("tokens that differ from the full forward pass at every step:",
        sum(i64(greedy != lm.greedy_reference(prompt, 8))))
  let one = lm.generate(prompt[:, 0:1], zeros([6], dtype = i64), zeros([]))
  print("from a one-token prompt, tokens that differ:", sum(i64(one != lm.greedy_reference(prompt[:, 0:1], 6))))
  print("sampled at temperature 1", lm.generate(prompt, zeros([8], dtype = i64), ones([])))
  let top = GPT(top_k = 3)
  print("top-3 at temperature 1", top.generate(prompt, zeros([8], dtype = i64), ones([])))
}
# expect: greedy [[ 6,  2, 72, 54, 44, 44, 68, 14],
# expect:         [35,  2, 72, 54, 44, 44, 68, 14]] (i64[2, 8])
# expect: tokens that differ from the full forward pass at every step: 0
# expect: from a one-token prompt, tokens that differ: 0
# expect: sampled at temperature 1 [[13, 53, 20, 81, 78, 70, 17, 72],
# expect:                           [90, 65, 58, 69,  7, 38, 83, 33]] (i64[2, 8])
# expect: top-3 at temperature 1 [[33, 33, 62, 15, 86, 12, 12, 44],
# expect:                         [96, 41, 63, 89, 86, 12, 82, 76]] (i64[2, 8])

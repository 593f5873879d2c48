# w11_generate.td - W11 (PERFORMANCE.md): greedy decoding with a KV cache at a
# GPT-2-like size (vocab 50257, d 768, 12 heads, 12 layers, random weights),
# batch 1: examples/generate.td's GPT.generate, K tokens in one call.
# bench/w11_generate.py times it beside PyTorch eager with a KV cache and
# torch.compile.
import generate

model W11 {
  lm = generate.GPT(vocab = 50257, ctx = 256, d = 768, heads = 12, layers = 12)
  fn forward(prompt: i64[B, P], n: i64[K], temp: f32[]) -> i64[B, K] {
    lm.generate(prompt, n, temp)
  }
}

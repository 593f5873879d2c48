# Entry points with symbolic sizes (N, B, T bound at call time) must check:
# one graph serves every size.  `tdsl check` lowers every entry point.
# cmd: check
import nn

model Block {
  blk = nn.TransformerBlock(8, 2, 16)
  fn forward(x: f32[B, T, 8]) -> f32[B, T, 8] { blk(x) }
  fn pooled(x: f32[B, T, 8]) -> f32[B, 8] { mean(blk(x), axis = 1) }
}

model Classifier(classes: int = 3) {
  emb = nn.Embedding(10, 8)
  head = nn.Linear(8, classes)
  fn forward(tokens: i64[B, T]) -> f32[B, classes] {
    let h = emb(tokens)                                # f32[B, T, 8]
    head(sum(h, axis = 1) / f32(T))
  }
  fn loss(tokens: i64[B, T], labels: i64[B]) -> f32[] {
    nn.cross_entropy(forward(tokens), labels)
  }
  fn predict(tokens: i64[B, T]) -> i64[B] { argmax(forward(tokens), axis = -1) }
}

fn shapes(x: f32[N, T, D], y: f32[T, D]) -> (f32[N * T, D], f32[N, D], f32[N, T - 1, D], f32[N, 2 * T, D]) {
  let flat = reshape(x, [N * T, D])
  let back = reshape(flat, [N, T, D])
  let last = back[:, -1]
  let diffs = x[:, 1:] - x[:, :-1]
  (flat, last + y[0], diffs, concat([x, x + y], axis = 1))
}

fn sizes(x: f32[N, 2]) -> (i64[N], f32[N, N], f32[N, 1], i64[]) {
  let n = x.shape[0]
  (arange(n), eye(n), reshape(sum(x, axis = 1), [n, 1]), i64(n) * 0 + n)
}

fn matmuls(a: f32[B, M, K], b: f32[K, P], v: f32[K]) -> (f32[B, M, P], f32[B, M], f32[P]) {
  (a @ b, a @ v, v @ b)
}

# a dimension can be a size expression of names bound before it
fn halves(y: f32[D], x: f32[N, 2 * D]) -> (f32[N, D], f32[N, D]) {
  (x[:, :D] + y, x[:, D:])
}

# arange from a negative literal to a symbolic size has N + 2 elements
fn aranges(x: f32[N]) -> (i64[N + 2], i64[N - 1]) { (arange(-2, N), arange(1, N)) }

# many symbols in a term: the byte counts of f32[A, B, C, D, E] (issue 12),
# a rank-8 shape and the FLOPs of a rank-8 matmul (2*K per element)
fn five(x: f32[A, B, C, D, E], w: f32[E, F]) -> f32[A, B, C, D, F] {
  let y = exp(x) * 2.0
  tanh(y @ w) + sum(y, axis = 4, keepdims = true)
}
fn rank8(x: f32[A, B, C, D, E, F, M, K], w: f32[K, P]) -> f32[A, B, C, D, E, F, M, P] {
  x @ w + sum(x, axis = -1, keepdims = true)
}

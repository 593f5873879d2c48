# models.td - nn.LSTM and nn.GRU as tests/rnn_models.sh runs them against
# PyTorch (reference values: make_refs.py in this directory).
import nn

model LSTMRef {
  rnn = nn.LSTM(4, 6)
  fn forward(x: f32[T, B, 4]) {
    let (y, s) = rnn(x)
    let (h, c) = s
    (y, h, c)
  }
  fn loss(x, r) {
    let (y, s) = rnn(x)
    let (h, c) = s
    sum(y * r) + 2.0 * sum(h) + sum(c)
  }
  fn grads(x: f32[T, B, 4], r: f32[T, B, 6]) { value_and_grad(loss, wrt = rnn)(x, r) }
}

model GRURef {
  rnn = nn.GRU(4, 6)
  fn forward(x: f32[T, B, 4]) { rnn(x) }
  fn loss(x, r) {
    let (y, h) = rnn(x)
    sum(y * r) + 2.0 * sum(h)
  }
  fn grads(x: f32[T, B, 4], r: f32[T, B, 6]) { value_and_grad(loss, wrt = rnn)(x, r) }
}

# w10_lstm.td - W10 (PERFORMANCE.md): a one-layer LSTM, hidden 256, batch 32,
# over T steps (T symbolic: one compiled graph serves T = 128 and 1024),
# forward and a training step (mean squared error of the last hidden state
# against a target, SGD lr 0.01).  bench/w10_lstm.py times it beside
# PyTorch's nn.LSTM, torch.compile and JAX lax.scan.
import nn
import optim

model W10 {
  lstm = nn.LSTM(256, 256)
  opt = optim.SGD(lstm, lr = 0.01)
  fn forward(x: f32[T, B, 256]) -> f32[B, 256] {
    let (ys, state) = lstm(x)
    let (h, c) = state
    h[0]
  }
  fn loss(x, y) { mean((forward(x) - y) ** 2.0) }
  fn step(x: f32[T, B, 256], y: f32[B, 256]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = lstm)(x, y)
    opt.step(g)
    l
  }
}

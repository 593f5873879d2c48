# w8_mlp.td - W8: the training step of the W4 MLP (784-512-512-10, ReLU),
# cross-entropy, AdamW (lr 1e-3, PyTorch's defaults otherwise); forward,
# loss, backward and update are one graph.  bench/w8_train.py times it with
# `tdsl train` beside PyTorch eager, torch.compile and JAX.
import nn
import optim

model MLP {
  fc1 = nn.Linear(784, 512)
  fc2 = nn.Linear(512, 512)
  fc3 = nn.Linear(512, 10)
  fn forward(x: f32[B, 784]) -> f32[B, 10] {
    fc3(relu(fc2(relu(fc1(x)))))
  }
}

model W8 {
  net = MLP()
  opt = optim.AdamW(net, lr = 0.001)
  fn loss(x, y) { nn.cross_entropy(net(x), y) }
  fn step(x: f32[B, 784], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(g)
    l
  }
}

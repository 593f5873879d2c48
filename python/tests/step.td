# step.td - a training step the Python package's tests (test_step.py)
# build with `tdsl build` and call from numpy: a 2x2 linear classifier,
# cross-entropy, SGD with momentum, from w = 0 (values worked by hand).
import nn
import optim

model Net {
  param w: f32[2, 2] = zeros()
  fn forward(x) { x @ transpose(w) }
}

model Train {
  net = Net()
  opt = optim.SGD(net, lr = 0.5, momentum = 0.9)
  fn loss(x, y) { nn.cross_entropy(net(x), y) }
  # one step: the batch's loss; updates net.w, its momentum buffer and
  # the step count in place
  fn step(x: f32[B, 2], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(g)
    l
  }
  fn forward(x: f32[B, 2]) -> f32[B, 2] { net(x) }
}

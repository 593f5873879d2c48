# models.td - one training model per optimizer configuration of
# make_refs.py; tests/optim_steps.sh runs 5 steps of each and compares the
# weights with torch.optim's.
import nn
import optim

model Net {
  fc1 = nn.Linear(4, 3)
  fc2 = nn.Linear(3, 2)
  fn forward(x) { fc2(tanh(fc1(x))) }
}

fn mse(net, x, y) { nn.mse_loss(net(x), y) }

fn train_step(net, opt, x, y, clip: float = 0.0) {
  let (l, g) = value_and_grad(mse, wrt = net)(net, x, y)
  opt.step(if clip > 0.0 { optim.clip_grad_norm(g, clip) } else { g })
  l
}

model sgd {
  net = Net()
  opt = optim.SGD(net, lr = 0.1)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model sgd_momentum {
  net = Net()
  opt = optim.SGD(net, lr = 0.05, momentum = 0.9, dampening = 0.1, weight_decay = 0.01)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model sgd_nesterov {
  net = Net()
  opt = optim.SGD(net, lr = 0.05, momentum = 0.9, nesterov = true, weight_decay = 0.01)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model adam {
  net = Net()
  opt = optim.Adam(net, lr = 0.01, weight_decay = 0.01)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model adamw {
  net = Net()
  opt = optim.AdamW(net, lr = 0.01, weight_decay = 0.1)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model adamw_cosine {
  net = Net()
  opt = optim.AdamW(net, lr = 0.02, schedule = optim.CosineWarmup(2, 5, min_factor = 0.1))
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model sgd_steplr {
  net = Net()
  opt = optim.SGD(net, lr = 0.1, schedule = optim.StepLR(2, gamma = 0.5))
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y) }
}
model sgd_clip {
  net = Net()
  opt = optim.SGD(net, lr = 0.1)
  fn step(x: f32[B, 4], y: f32[B, 2]) -> f32[] { train_step(net, opt, x, y, clip = 0.05) }
}

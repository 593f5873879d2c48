# models.td - the models whose gradients tests/grad_models.sh compares with
# PyTorch autograd (reference values: make_refs.py in this directory).
import nn

model MLPNet {
  fc1 = nn.Linear(12, 16)
  fc2 = nn.Linear(16, 16)
  fc3 = nn.Linear(16, 5)
  fn forward(x) { fc3(tanh(fc2(relu(fc1(x))))) }
}

model MLPGrad {
  net = MLPNet()
  fn loss(x, y) { nn.cross_entropy(net(x), y, label_smoothing = 0.1) }
  fn grads(x: f32[B, 12], y: i64[B]) { value_and_grad(loss, wrt = net)(x, y) }
}

model BlockGrad {
  net = nn.TransformerBlock(16, 2, 32)
  fn loss(x, r) { sum(net(x) * r) }
  fn grads(x: f32[B, T, 16], r: f32[B, T, 16]) { value_and_grad(loss, wrt = net)(x, r) }
}

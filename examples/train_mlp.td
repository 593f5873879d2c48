# train_mlp.td - an MLP trained on Fashion-MNIST: forward, loss, backward and
# the AdamW update of each step are one graph.
#
#   tdsl train examples/train_mlp.td --dataset fashion-mnist --epochs 8
#
# The recipe: a 784-512-512-10 ReLU MLP, AdamW (lr 1e-3, weight decay 1e-4),
# batch 128, the learning rate warmed up over 200 steps and then decayed on
# a cosine to 0 at the end of epoch `epochs` (469 steps per epoch of
# 60 000 images); about 88.5 % test accuracy after 8 epochs.
# Images arrive as their raw bytes (f32 values 0..255); the normalisation is
# written here, with Fashion-MNIST's training-set mean and deviation.
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

fn prep(x: f32[B, 28, 28]) -> f32[B, 784] {
  reshape((x / 255 - 0.2860) / 0.3530, [B, 784])
}

model Train(lr: float = 0.001, epochs: int = 8) {
  net = MLP()
  opt = optim.AdamW(net, lr = lr, weight_decay = 0.0001,
                    schedule = optim.CosineWarmup(200, 469 * epochs))
  classes = 10
  fn loss(x, y) { nn.cross_entropy(net(prep(x)), y) }
  # one training step: the batch's mean loss; updates net and opt in place
  fn step(x: f32[B, 28, 28], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(g)
    l
  }
  # the batch's mean loss and its number of correct predictions
  fn evaluate(x: f32[B, 28, 28], y: i64[B]) -> (f32[], i64[]) {
    let logits = net(prep(x))
    (nn.cross_entropy(logits, y), sum(i64(argmax(logits, axis = -1) == y)))
  }
}

# train_mlp.td - a Fashion-MNIST classifier trained by `tdsl train`.
#
#   tdsl train examples/train_mlp.td --dataset fashion-mnist --epochs 5
#
# The convention of tdsl train (docs/training.md): a model with
#   fn step(x, y) -> f32[]             the batch's mean loss; updates the parameters
#   fn evaluate(x, y) -> (f32[], i64[])  the mean loss and the number of correct predictions
# Both take the images as they are in the file (u8 values 0..255 as f32) and
# the labels as i64; normalising is written here.
#
# Placeholder: the optimizer update (grad, AdamW from stdlib/optim.td,
# assign) comes with autodiff; until then step computes the loss only.
import nn

model MLP {
  fc1 = nn.Linear(784, 128)
  fc2 = nn.Linear(128, 10)
  fn forward(x: f32[N, 784]) -> f32[N, 10] {
    fc2(relu(fc1(x)))
  }
}

model Train {
  net = MLP()
  fn logits(x: f32[B, 28, 28]) -> f32[B, 10] {
    net(reshape(x, [B, 784]) / 255.0)
  }
  fn step(x: f32[B, 28, 28], y: i64[B]) -> f32[] {
    nn.cross_entropy(logits(x), y)
  }
  fn evaluate(x: f32[B, 28, 28], y: i64[B]) -> (f32[], i64[]) {
    let l = logits(x)
    (nn.cross_entropy(l, y), sum(i64(argmax(l, axis = -1) == y)))
  }
}

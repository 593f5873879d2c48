# lenet.td - a LeNet-5-style classifier for 1x28x28 images (Fashion-MNIST's
# shape): two convolutions with max pooling, then three linear layers.
#
#   tdsl run examples/lenet.td                     runs main below
#   tdsl run examples/lenet.td --compiled          the same, compiled
#   tdsl run examples/lenet.td --entry LeNet.forward --in x=x.npy [--weights w.safetensors]
#
# Weight names are PyTorch's (conv1.weight, conv1.bias, ..., fc3.bias), so
# the state_dict of the same torch.nn.Module, saved as safetensors, loads as
# is; nn.Conv2d and nn.Linear initialise as PyTorch does.
import nn

model LeNet {
  conv1 = nn.Conv2d(1, 6, 5, padding = 2)   # [N, 6, 28, 28]
  conv2 = nn.Conv2d(6, 16, 5)               # [N, 16, 10, 10]
  pool = nn.MaxPool2d(2)
  fc1 = nn.Linear(16 * 5 * 5, 120)
  fc2 = nn.Linear(120, 84)
  fc3 = nn.Linear(84, 10)
  fn forward(x: f32[N, 1, 28, 28]) -> f32[N, 10] {
    let h = pool(relu(conv1(x)))            # [N, 6, 14, 14]
    let h2 = pool(relu(conv2(h)))           # [N, 16, 5, 5]
    let f = reshape(h2, [N, 16 * 5 * 5])
    fc3(relu(fc2(relu(fc1(f)))))
  }
  # class probabilities and the predicted class of each image
  fn predict(x: f32[N, 1, 28, 28]) -> (f32[N, 10], i64[N]) {
    let logits = forward(x)
    (nn.softmax(logits), argmax(logits, axis = -1))
  }
}

fn main() {
  let m = LeNet()
  let x = rand([4, 1, 28, 28], seed = 7)    # four fake images in [0, 1)
  let (p, cls) = m.predict(x)
  print("probabilities", p)
  print("predicted classes", cls)
  print("rows sum to one", sum(p, axis = -1))
}

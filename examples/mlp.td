# mlp.td - a 784-512-512-10 classifier (the shape of an MNIST MLP), run end to end.
#
#   tdsl run examples/mlp.td                       runs main below
#   tdsl run examples/mlp.td --entry MLP.forward --in x=x.npy [--weights w.safetensors]
#
# Weight names are PyTorch's: fc1.weight, fc1.bias, ..., so a state_dict saved
# with safetensors from the equivalent torch.nn.Sequential-free module loads as is.
import nn

model MLP {
  fc1 = nn.Linear(784, 512)
  fc2 = nn.Linear(512, 512)
  fc3 = nn.Linear(512, 10)
  fn forward(x: f32[N, 784]) -> f32[N, 10] {
    fc3(relu(fc2(relu(fc1(x)))))
  }
  # class probabilities and the predicted class of each row
  fn predict(x: f32[N, 784]) -> (f32[N, 10], i64[N]) {
    let logits = forward(x)
    (nn.softmax(logits), argmax(logits, axis = -1))
  }
}

fn main() {
  let m = MLP()
  let x = rand([4, 784], seed = 7)          # four fake 28x28 images in [0, 1)
  let (p, cls) = m.predict(x)
  print("probabilities", p)
  print("predicted classes", cls)
  print("rows sum to one", sum(p, axis = -1))
}

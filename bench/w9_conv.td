# w9_conv.td - the first rows of issue 18's W9: one 3x3 convolution layer
# (64 -> 64 channels, 56x56, padding 1, bias and relu) and LeNet-5's
# forward (examples/lenet.td).  Timed by hand with bench/harness.c for
# docs/compiler.md, "Convolutions"; not in bench/run yet.
import nn

model Conv3x3 {
  c = nn.Conv2d(64, 64, 3, padding = 1)
  fn forward(x: f32[N, 64, 56, 56]) -> f32[N, 64, 56, 56] { relu(c(x)) }
}

model LeNet {
  conv1 = nn.Conv2d(1, 6, 5, padding = 2)
  conv2 = nn.Conv2d(6, 16, 5)
  pool = nn.MaxPool2d(2)
  fc1 = nn.Linear(400, 120)
  fc2 = nn.Linear(120, 84)
  fc3 = nn.Linear(84, 10)
  fn forward(x: f32[N, 1, 28, 28]) -> f32[N, 10] {
    let h = pool(relu(conv2(pool(relu(conv1(x))))))
    fc3(relu(fc2(relu(fc1(reshape(h, [N, 400]))))))
  }
}

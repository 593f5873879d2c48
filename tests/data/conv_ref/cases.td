# cases.td - written by make_refs.py (do not edit): one model per case of
# tests/conv_refs.sh, its tensors as parameters, the loss sum(op(...) * r)
# with the output as the auxiliary value; last, LeNet from nn's layers.
import nn

model ConvBasic {
  param x: f32[2, 3, 7, 8] = normal(0, 1)
  param w: f32[4, 3, 3, 3] = normal(0, 1)
  param b: f32[4] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b)
    (sum(y * r), y)
  }
}
model ConvBasicGrad {
  net = ConvBasic()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 4, 5, 6]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvStridePad {
  param x: f32[2, 3, 9, 8] = normal(0, 1)
  param w: f32[5, 3, 3, 3] = normal(0, 1)
  param b: f32[5] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b, stride = 2, padding = 1)
    (sum(y * r), y)
  }
}
model ConvStridePadGrad {
  net = ConvStridePad()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 5, 5, 4]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvDilation {
  param x: f32[1, 2, 9, 9] = normal(0, 1)
  param w: f32[3, 2, 3, 3] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, padding = 2, dilation = 2)
    (sum(y * r), y)
  }
}
model ConvDilationGrad {
  net = ConvDilation()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 3, 9, 9]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvGroups {
  param x: f32[2, 4, 6, 6] = normal(0, 1)
  param w: f32[6, 2, 3, 3] = normal(0, 1)
  param b: f32[6] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b, stride = [2, 1], padding = 1, groups = 2)
    (sum(y * r), y)
  }
}
model ConvGroupsGrad {
  net = ConvGroups()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 6, 3, 6]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvDepthwise {
  param x: f32[2, 4, 7, 7] = normal(0, 1)
  param w: f32[4, 1, 3, 3] = normal(0, 1)
  param b: f32[4] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b, padding = 1, groups = 4)
    (sum(y * r), y)
  }
}
model ConvDepthwiseGrad {
  net = ConvDepthwise()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 4, 7, 7]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvAsym {
  param x: f32[2, 3, 8, 11] = normal(0, 1)
  param w: f32[4, 3, 2, 5] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, stride = [1, 2], padding = [2, 1], dilation = [2, 1])
    (sum(y * r), y)
  }
}
model ConvAsymGrad {
  net = ConvAsym()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 4, 10, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvSameEven {
  param x: f32[1, 3, 6, 7] = normal(0, 1)
  param w: f32[2, 3, 4, 4] = normal(0, 1)
  param b: f32[2] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b, padding = "same")
    (sum(y * r), y)
  }
}
model ConvSameEvenGrad {
  net = ConvSameEven()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 6, 7]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model Conv1x1 {
  param x: f32[2, 3, 5, 5] = normal(0, 1)
  param w: f32[6, 3, 1, 1] = normal(0, 1)
  param b: f32[6] = normal(0, 1)
  fn forward(r) {
    let y = conv2d(x, w, b)
    (sum(y * r), y)
  }
}
model Conv1x1Grad {
  net = Conv1x1()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 6, 5, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model Conv1d {
  param x: f32[2, 3, 10] = normal(0, 1)
  param w: f32[4, 3, 3] = normal(0, 1)
  param b: f32[4] = normal(0, 1)
  fn forward(r) {
    let y = conv1d(x, w, b, stride = 2, padding = 1)
    (sum(y * r), y)
  }
}
model Conv1dGrad {
  net = Conv1d()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 4, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model Maxpool2 {
  param x: f32[2, 3, 8, 8] = normal(0, 1)
  fn forward(r) {
    let y = max_pool2d(x, 2)
    (sum(y * r), y)
  }
}
model Maxpool2Grad {
  net = Maxpool2()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 3, 4, 4]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model MaxpoolCeil {
  param x: f32[2, 3, 9, 10] = normal(0, 1)
  fn forward(r) {
    let y = max_pool2d(x, 3, stride = 2, padding = 1, ceil_mode = true)
    (sum(y * r), y)
  }
}
model MaxpoolCeilGrad {
  net = MaxpoolCeil()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 3, 5, 6]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model MaxpoolDilation {
  param x: f32[1, 2, 7, 7] = normal(0, 1)
  fn forward(r) {
    let y = max_pool2d(x, 2, stride = 1, dilation = 2)
    (sum(y * r), y)
  }
}
model MaxpoolDilationGrad {
  net = MaxpoolDilation()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 5, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model MaxpoolTies {
  param x: f32[1, 2, 6, 6] = normal(0, 1)
  fn forward(r) {
    let y = max_pool2d(x, [3, 2], stride = [1, 2])
    (sum(y * r), y)
  }
}
model MaxpoolTiesGrad {
  net = MaxpoolTies()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 4, 3]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model Avgpool2 {
  param x: f32[2, 3, 8, 8] = normal(0, 1)
  fn forward(r) {
    let y = avg_pool2d(x, 2)
    (sum(y * r), y)
  }
}
model Avgpool2Grad {
  net = Avgpool2()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 3, 4, 4]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model AvgpoolCeilPad {
  param x: f32[1, 2, 8, 9] = normal(0, 1)
  fn forward(r) {
    let y = avg_pool2d(x, 3, stride = 2, padding = 1, ceil_mode = true)
    (sum(y * r), y)
  }
}
model AvgpoolCeilPadGrad {
  net = AvgpoolCeilPad()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 5, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model AvgpoolCeilNopad {
  param x: f32[1, 2, 8, 9] = normal(0, 1)
  fn forward(r) {
    let y = avg_pool2d(x, 3, stride = 2, padding = 1, ceil_mode = true, count_include_pad = false)
    (sum(y * r), y)
  }
}
model AvgpoolCeilNopadGrad {
  net = AvgpoolCeilNopad()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 5, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model AvgpoolRect {
  param x: f32[2, 2, 7, 6] = normal(0, 1)
  fn forward(r) {
    let y = avg_pool2d(x, [3, 2], stride = [2, 1], padding = [1, 0], count_include_pad = false)
    (sum(y * r), y)
  }
}
model AvgpoolRectGrad {
  net = AvgpoolRect()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 2, 4, 5]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model MaxpoolCeilEdge {
  param x: f32[1, 2, 5, 7] = normal(0, 1)
  fn forward(r) {
    let y = max_pool2d(x, 2, padding = 1, ceil_mode = true)
    (sum(y * r), y)
  }
}
model MaxpoolCeilEdgeGrad {
  net = MaxpoolCeilEdge()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 3, 4]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model AvgpoolCeilEdge {
  param x: f32[1, 2, 5, 7] = normal(0, 1)
  fn forward(r) {
    let y = avg_pool2d(x, 2, padding = 1, ceil_mode = true)
    (sum(y * r), y)
  }
}
model AvgpoolCeilEdgeGrad {
  net = AvgpoolCeilEdge()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 2, 3, 4]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvtStride {
  param x: f32[2, 4, 5, 6] = normal(0, 1)
  param w: f32[4, 3, 3, 3] = normal(0, 1)
  param b: f32[3] = normal(0, 1)
  fn forward(r) {
    let y = conv_transpose2d(x, w, b, stride = 2, padding = 1, output_padding = 1)
    (sum(y * r), y)
  }
}
model ConvtStrideGrad {
  net = ConvtStride()
  fn loss(r) { net(r) }
  fn grads(r: f32[2, 3, 10, 12]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model ConvtGroupsDilation {
  param x: f32[1, 4, 4, 5] = normal(0, 1)
  param w: f32[4, 2, 3, 2] = normal(0, 1)
  fn forward(r) {
    let y = conv_transpose2d(x, w, stride = [2, 1], padding = [1, 3], groups = 2, dilation = [1, 2])
    (sum(y * r), y)
  }
}
model ConvtGroupsDilationGrad {
  net = ConvtGroupsDilation()
  fn loss(r) { net(r) }
  fn grads(r: f32[1, 4, 7, 1]) { value_and_grad(loss, wrt = net, has_aux = true)(r) }
}

model LeNet {
  conv1 = nn.Conv2d(1, 6, 5, padding = 2)
  conv2 = nn.Conv2d(6, 16, 5)
  pool = nn.MaxPool2d(2)
  fc1 = nn.Linear(400, 120)
  fc2 = nn.Linear(120, 84)
  fc3 = nn.Linear(84, 10)
  fn forward(x, r) {
    let h = pool(relu(conv2(pool(relu(conv1(x))))))
    let y = fc3(relu(fc2(relu(fc1(reshape(h, [-1, 400]))))))
    (sum(y * r), y)
  }
}
model LenetGrad {
  net = LeNet()
  fn loss(x, r) { net(x, r) }
  fn grads(x: f32[N, 1, 28, 28], r: f32[N, 10]) { value_and_grad(loss, wrt = net, has_aux = true)(x, r) }
}

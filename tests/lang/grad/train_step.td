# One training step in main: forward, cross-entropy, backward and an SGD
# update (with momentum) in one graph.  Reads of a parameter see the value
# it had when the call began, so the print after opt.step shows the old
# weights; the loss is the one of the old weights.  Expected values
# worked out by hand: w = 0, so the logits are 0, softmax is 1/2 and the
# loss is log 2; x = [[1, 0], [0, 2]], y = [0, 1], so d loss / d logits =
# (softmax - one_hot) / 2 = [[-1/4, 1/4], [1/4, -1/4]] and
# d loss / d w = (d logits)^T @ x = [[-1/4, 1/2], [1/4, -1/2]].
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
  fn step(x, y) {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(g)
    print("w during the step", net.w)
    (l, g[0])
  }
}

fn main() {
  let t = Train()
  let (l, g) = t.step(eye(2) * zeros([2, 2]) + eye(2) * f32(arange(1, 3)), arange(2))
  print("loss", l)
  print("grad", g)
}
# expect: w during the step [[0.0000, 0.0000],
# expect:                    [0.0000, 0.0000]] (f32[2, 2])
# expect: loss 0.6931
# expect: grad [[-0.2500,  0.5000],
# expect:       [ 0.2500, -0.5000]] (f32[2, 2])

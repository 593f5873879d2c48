# conv1d, conv2d, conv3d, conv_transpose2d, the pools and their gradients on
# fixed inputs.
# The expected values are PyTorch's (torch.nn.functional in float64 on the
# same inputs); every mode runs this file, and the CUDA tests compile and
# emulate its kernels (the transposed and weight-gradient convolutions
# included).
fn loss(x, w) { sum(sin(conv2d(x, w, stride = 2, padding = 1, groups = 2))) }
fn ploss(x) {
  sum(sin(max_pool2d(x, 3, stride = 2, padding = 1, ceil_mode = true))) +
    sum(cos(avg_pool2d(x, 2, padding = 1, count_include_pad = false)))
}
fn tloss(x, w) { sum(sin(conv_transpose2d(x, w, stride = 2, padding = 1, output_padding = 1))) }
fn main() {
  let x = sin(reshape(f32(arange(2 * 4 * 7 * 6)), [2, 4, 7, 6]))
  let w = cos(reshape(f32(arange(6 * 2 * 3 * 3)), [6, 2, 3, 3])) / 4.0
  print("conv2d", sum(conv2d(x, w, stride = 2, padding = 1, groups = 2)))
  # expect: conv2d 1.3327
  let (gx, gw) = grad(loss, argnums = [0, 1])(x, w)
  print("conv2d grads", sum(gx * gx), sum(gw * gw))
  # expect: conv2d grads 192.1727 264.6411
  let dw = cos(reshape(f32(arange(4 * 1 * 3 * 3)), [4, 1, 3, 3]))
  print("depthwise dilated", sum(sin(conv2d(x, dw, padding = 2, dilation = 2, groups = 4))))
  # expect: depthwise dilated -2.1762
  print("pools", ploss(x))
  # expect: pools 153.1620
  let gp = grad(ploss)(x)
  print("pool grad", sum(gp * gp))
  # expect: pool grad 98.5342
  let x1 = reshape(x, [2, 4, 42])
  let w1 = reshape(w, [3, 4, 9])
  print("conv1d", sum(sin(conv1d(x1, w1, stride = 3, padding = 4))))
  # expect: conv1d 0.3827
  let x3 = reshape(x, [2, 2, 2, 7, 6])
  let w3 = reshape(w, [3, 2, 2, 3, 3])
  print("conv3d", sum(sin(conv3d(x3, w3, padding = [1, 0, 1]))))
  # expect: conv3d 0.1202
  # an unbatched input is one image; f64 computes in f64
  print("unbatched", sum(conv2d(x[1], w, padding = "same", groups = 2)), sum(max_pool2d(x[1], 2)))
  # expect: unbatched 1.1477 14.0569
  print("f64", sum(sin(conv2d(f64(x), f64(w), padding = [0, 2], dilation = [2, 1], groups = 2))))
  # expect: f64 2.0254
  let (tx, tw) = grad(tloss, argnums = [0, 1])(x, w[:4])
  print("conv_transpose2d", tloss(x, w[:4]), sum(tx * tx), sum(tw * tw))
  # expect: conv_transpose2d -0.1389 6.0285 1548.4083
}

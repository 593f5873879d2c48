# conv2d and the pools name both shapes and the fix when they do not fit.
fn f(x: f32[N, 3, 28, 28], w: f32[6, 1, 5, 5], v: f32[6, 3, 5, 5], s: f32[N, 3, H, W]) {
  let a = conv2d(x, w)                          # error: conv2d: the input f32[N, 3, 28, 28] has 3 channels, but the weight f32[6, 1, 5, 5] takes 1
  let b = conv2d(x, v, groups = 4)              # error: groups = 4 does not divide the weight's 6 output channels
  let c = conv2d(x, v[:4, :1], groups = 2)      # error: groups = 2 does not divide the input's 3 channels
  let d = conv2d(x[:, :, :3, :3], v)            # error: the kernel's height 5 (dilation 1: 5 elements) is larger than the padded input's height 3 + 0
  let e = conv2d(s, v, stride = 2)              # error: the output height floor((H + 0 - 5) / 2) + 1 is not a polynomial in the symbolic sizes
  let g = conv2d(x, v, stride = 2, padding = "same")  # error: padding = "same" needs stride 1, found stride 2
  let h = conv2d(x, v, padding = "full")        # error: padding must be a number, a list, "valid" or "same", found "full"
  let k = conv2d(x, v, stride = [1, 0])         # error: conv2d's stride must be an integer or a list of 2 integers, each at least 1
  let m = conv2d(x, v, bias = ones([3]))        # error: conv2d's bias must be f32[6] (one per output channel), found f32[3]
  let n = conv2d(x[0, 0], v)                    # error: conv2d needs an input of rank 4 or 3 ([N, C, H, W]), found f32[28, 28]
  let o = conv1d(x[0], v)                       # error: conv1d's weight must have rank 3, found f32[6, 3, 5, 5]
  let p = max_pool2d(x, 2, padding = 2)         # error: max_pool2d: padding 2 is more than half the kernel's height 2
  let q = avg_pool2d(s, 2)                      # error: avg_pool2d: the output height floor((H + 0 - 2) / 2) + 1 is not a polynomial
  let r = max_pool2d(i64(x), 2)                 # error: max_pool2d() computes on f32 or f64 tensors; its input is i64
  let t = conv_transpose2d(x, v)                # error: conv_transpose2d: the input f32[N, 3, 28, 28] has 3 channels, but the weight f32[6, 3, 5, 5] takes 6
  let u = conv_transpose2d(x, v[:3], stride = 2, output_padding = 2)  # error: output_padding 2 must be smaller than the stride or the dilation
  let z = conv_transpose2d(x, v[:3], padding = 20)  # error: conv_transpose2d: the output height would be -8
  x
}
# help: the weight is [out_channels, in_channels, kernel...]: make its axis 1 3
# help: the weight is [in_channels, out_channels / groups, kernel...]
# help: with stride 2 the input's symbolic height must be a multiple of 2

# var and std (torch.var / torch.std, correction = 1 by default as in
# PyTorch >= 2.0): axis (an int or a list), keepdims, correction; integer
# tensors compute in f32.  Two passes: the mean, then the squared
# deviations.  Expected values by hand (x = [[1, 2, 4], [3, 5, 10]]: mean
# 25/6, squared deviations sum to 305/6; rows: mean 7/3, sum 42/9; mean 6,
# sum 26), and gradients analytic (d var / dx = 2 (x - mean) / (n - c))
# and against central differences in f64.
fn v3(x) { var(x) }
fn s3(x) { std(x, correction = 0) }
fn sq_std(t) { std(t * t) }

fn main() {
  let x = tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 10.0]]) + rand([2, 3], seed = 1) * 0
  print("var", var(x), var(x, axis = 1), var(x, axis = 0, correction = 0))
  # expect: var 10.1667 [ 2.3333, 13.0000] (f32[2]) [1.0000, 2.2500, 9.0000] (f32[3])
  print("keep", var(x, axis = [0, 1], keepdims = true), var(x, axis = -1, keepdims = true, correction = 2))
  # expect: keep [[10.1667]] (f32[1, 1]) [[ 4.6667],
  # expect:                               [26.0000]] (f32[2, 1])
  print("std", std(x, axis = -1), std(f64(x), correction = 0), std(tensor([1, 2, 3, 4])))
  # expect: std [1.5275, 3.6056] (f32[2]) 2.9107 1.2910
  print("half", var(f16(x), axis = 1), std(bf16(x), axis = 0, correction = 0))
  # expect: half [ 2.3340, 13.0000] (f16[2]) [1.0000, 1.5000, 3.0000] (bf16[3])
  print("one", var(tensor([2.0]) + x[0, 0] * 0), std(tensor([2.0]) + x[0, 0] * 0, correction = 0))
  # expect: one nan 0.0000
  let r = x[0]                                     # [1, 2, 4], mean 7/3
  print("dvar", grad(v3)(r))
  # expect: dvar [-1.3333, -0.3333,  1.6667] (f32[3])
  print("dstd", grad(s3)(r))                       # (x - mean) / (n std), std = sqrt(14/9)
  # expect: dstd [-0.3563, -0.0891,  0.4454] (f32[3])
  let r64 = f64(r) * 1.5 - 0.25
  let h = 0.000001
  let g = grad(sq_std)(r64)
  let fd = stack([(std((r64 + h * one_hot(tensor(i), 3, dtype = f64)) ** 2) - std((r64 - h * one_hot(tensor(i), 3, dtype = f64)) ** 2)) / (2 * h) for i in 0..3])
  print("fd", max(abs(g - fd)) < 0.000001)
  # expect: fd true
}

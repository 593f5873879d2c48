# Softmax of rows holding +inf, or only -inf, is NaN, as in NumPy
# (exp(x - max) / sum: inf - inf is NaN); the compiled kernels must agree
# (the differential test runs this file compiled too).
import nn

fn main() {
  let inf = 1.0 / zeros([1, 1])
  let x = concat([reshape(f32(arange(3)), [1, 3]), inf], axis = 1)
  print(nn.softmax(x))
  print(nn.softmax(broadcast_to(-inf, [1, 3])))
  print(nn.softmax(reshape(f32(arange(2)), [1, 2]) * 0.0))
}
# expect: [[nan, nan, nan, nan]] (f32[1, 4])
# expect: [[nan, nan, nan]] (f32[1, 3])
# expect: [[0.5000, 0.5000]] (f32[1, 2])

# logsumexp over all axes, one axis and with keepdims; stable for large values.
fn main() {
  let x = (reshape(f32(arange(6)), [2, 3]) - 2.0) * 0.5
  print("all", logsumexp(x))
  # expect: all 2.3817
  print("axis1", logsumexp(x, axis = 1))
  # expect: axis1 [0.6803, 2.1803] (f32[2])
  print("axis0k", logsumexp(x, axis = 0, keepdims = true))
  # expect: axis0k [[0.7014, 1.2014, 1.7014]] (f32[1, 3])
  # exp(89) overflows f32: the max is subtracted first
  print("big", logsumexp(full([2, 3], 89.0), axis = -1))
  # expect: big [90.0986, 90.0986] (f32[2])
}

# Axis arguments are compile-time integers within the tensor's rank.
fn f(x: f32[N, 4]) {
  let a = sum(x, axis = 2)             # error: axis 2 is out of range for a tensor of rank 2
  let b = mean(x, axis = -3)           # error: axis -3 is out of range for a tensor of rank 2
  let c = max(x, axis = [0, 0])        # error: axis 0 is listed twice
  let d = argmax(x, axis = [0, 1])     # error: argmax() takes one axis
  let e = squeeze(x, 1)                # error: cannot squeeze axis 1: its size is 4, not 1
  let g = permute(x, [0])              # error: permute needs a list of 2 axes
  let h = permute(x, [1, 1])           # error: axis 1 appears twice
  let k = transpose(x, 0)              # error: transpose(x, a, b) needs both axes
  let m = concat([x, x], axis = 2)     # error: axis 2 is out of range for rank 2
  let n = sum(x, axis = 0.5)           # error: an axis must be an integer, found a float
  let o = split(x, 0, axis = 1)        # error: split's count must be a positive integer
  x
}
# help: valid axes are -2..1 (negative axes count from the end)

# Reading a tensor's value on the host (.item(), int(x), float(x), a tensor
# used as a shape, an axis, an index or a size) is the seed's second
# mistake: a sync and a graph break in PyTorch.  Each is a compile-time error.
model Log {
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let m = mean(x).item()                      # error: tensors never leave the graph: .item()
    let n = int(sum(x))                         # error: tensors never leave the graph: int() would read a tensor's value on the host
    let f = float(max(x))                       # error: tensors never leave the graph: float() would read a tensor's value on the host
    x
  }
}

fn main() {
  let x = ones([2, 3])
  let a = zeros([sum(x)])                       # error: tensors never leave the graph: a tensor's value cannot be used as a dimension
  let b = sum(x, axis = argmax(x))              # error: tensors never leave the graph: a tensor's value cannot be used as an axis
  let c = reshape(x, [3, max(x)])               # error: tensors never leave the graph: a tensor's value cannot be used as a dimension
  let d = [1, 2, 3][argmax(x)]                  # error: tensors never leave the graph: a tensor's value cannot be used as a list index
  let e = eye(sum(x))                           # error: tensors never leave the graph: a tensor's value cannot be used as eye's size
  let f = x[argmax(x)]                          # error: indexing with a tensor
  let g = x.tolist()                            # error: tensors never leave the graph: .tolist() would copy a value to the host
}
# help: return the value from the entry point, e.g. (y, mean(x))
# help: i64(sum(x))
# help: f32(max(x))
# help: take(x, argmax(x), axis = 0)

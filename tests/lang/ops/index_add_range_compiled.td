# index_add_range.td compiled: out-of-range indices of index_add and
# scatter_add are found by the compiled code too (it prints after the
# call, so nothing is printed).
# args: --compiled --no-cache
fn main() {
  let idx = tensor([[0, 1], [-3, 2]])
  print(scatter_add(zeros([3, 2]), idx - 1, ones([2, 2]), 0))   # error: take: an index is out of range for axis 0 of size 3
}

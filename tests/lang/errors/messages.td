# Messages name what was written, never the op it is made of (stack of
# numbers once said "unsqueeze() needs a tensor"), and their help writes
# code that works (a boolean mask once got `take` with the mask as
# indices; the where/sum forms of the help run in tests/lang/ops/where.td).
fn main() {
  let v = arange(5)
  let a = stack([1, 1, 9])                # error@18: stack() stacks tensors, but element 0 of the list is an integer
  # help: to make a tensor of these numbers write tensor([1, 1, 9])
  let b = stack([v, 2])                   # error@21: stack() stacks tensors, but element 1 of the list is an integer
  let c = v[v > 3]                        # error@13: indexing with a boolean mask: the number of elements it selects depends on the values
  # help: keep the shape and zero what the mask drops: where(v > 3, v, 0)
  # help: or reduce over the selected elements: sum(where(v > 3, v, 0)), or count them: sum(i64(v > 3))
  print(a, b, c)
}

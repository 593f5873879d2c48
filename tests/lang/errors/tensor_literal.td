# tensor(...) literals: ragged lists, non-numbers, and a cast of a list
# (i64([1, 1, 9]) is not a literal: the error points to tensor(...)).
fn main() {
  let x = f32(arange(2))
  let a = tensor([[1, 2], [3]])                    # error@27: ragged tensor literal: this list has 1 item, the first at its depth has 2
  # help: every row of a tensor literal has the same length, e.g. tensor([[1, 2], [3, 4]])
  let b = tensor([[1, 2], 3])                      # error@27: ragged tensor literal: expected a list of 2 items here, found an integer
  let c = tensor([1, [2, 3]])                      # error@22: ragged tensor literal: expected a number here, found a list
  let d = tensor([x, x])                           # error@19: tensor() takes numbers and lists of numbers, found a tensor
  # help: to combine tensors use stack([...]) or concat([...])
  let e = tensor([1, 2], dtype = "i64")            # error: dtype must be one of f32, f64, i32, i64, bool, f16, bf16
  let f = i64([1, 1, 9])                           # error@11: i64() needs a number or a tensor, found a list
  # help: for a tensor of these numbers write tensor([1, 1, 9], dtype = i64)
  print(a, b, c, d, e, f)
}

# concat and stack take any number of tensors (once "concat of more than
# 64 tensors"): beyond 64 they become a tree of concats, eager and
# compiled, and their gradient flows back to every piece.  Expected values
# by hand: row i of the stack is [i, i + 1]; sum over i < 300 of (2i + 1)
# is 300^2 = 90000; d/dx sum((x*i)^2 for i < 130) = 2x * sum(i^2) =
# 2x * 129*130*259/6 = 1447810 x.
fn sq_sum(x) { sum(stack([x * f32(i) for i in 0..130]) ** 2) }

fn main() {
  let xs = [f32(arange(2)) + f32(i) for i in 0..300]
  let s = stack(xs)
  print("stack", s.shape[0], s.shape[1], sum(s), s[299], s[64], s[63])
  # expect: stack 300 2 90000.0000 [299.0000, 300.0000] (f32[2]) [64.0000, 65.0000] (f32[2]) [63.0000, 64.0000] (f32[2])
  let c = concat(xs)
  print("concat", c.shape[0], c[128], c[599])
  # expect: concat 600 64.0000 300.0000
  print("stack1", stack(xs, axis = 1).shape[1], stack(xs, axis = 1)[1, 4096 // 16])
  # expect: stack1 300 257.0000
  print("grad", grad(sq_sum)(f32(arange(2)) + 1))
  # expect: grad [1447810.0000, 2895620.0000] (f32[2])
}

# concat and stack take any number of tensors (once "concat of more than
# 64 tensors"): beyond 64 they become a tree of concats, eager and
# compiled, and their gradient flows back to every piece.  (100 and 70
# pieces: past 64 without making every CUDA module of the suite's NVRTC
# test minutes long.)  Expected values by hand: row i of the stack is
# [i, i + 1]; sum over i < 100 of (2i + 1) is 100^2 = 10000;
# d/dx sum((x*i)^2 for i < 70) = 2x * sum(i^2) = 2x * 69*70*139/6 =
# 223790 x.
fn sq_sum(x) { sum(stack([x * f32(i) for i in 0..70]) ** 2) }

fn main() {
  let xs = [f32(arange(2)) + f32(i) for i in 0..100]
  let s = stack(xs)
  print("stack", s.shape[0], s.shape[1], sum(s), s[99], s[64], s[63])
  # expect: stack 100 2 10000.0000 [ 99.0000, 100.0000] (f32[2]) [64.0000, 65.0000] (f32[2]) [63.0000, 64.0000] (f32[2])
  let c = concat(xs)
  print("concat", c.shape[0], c[128], c[199])
  # expect: concat 200 64.0000 100.0000
  print("stack1", stack(xs, axis = 1).shape[1], stack(xs, axis = 1)[1, 130 // 2])
  # expect: stack1 100 66.0000
  print("grad", grad(sq_sum)(f32(arange(2)) + 1))
  # expect: grad [223790.0000, 447580.0000] (f32[2])
}

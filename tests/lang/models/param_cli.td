# A model's parameters from the command line: --entry 'Scale(T=3, k=2).forward'
# makes Scale(T = 3, k = 2.0) (k's annotation makes the 2 a float); without
# them T = 8 would not fit x.  tests/data/f32_2x3.npy is
# [[0.5, -1.25, 2], [3, 4.75, -6]]; x * [0, 1, 2] * 2 by hand.
# args: --entry 'Scale(T=3, k=2).forward' --in x=tests/data/f32_2x3.npy
model Scale(T: int = 8, k: float = 1.0) {
  fn forward(x: f32[N, T]) { x * f32(arange(T)) * k }
}
# expect: f32[2, 3]
# expect: [[  0.0000,  -2.5000,   8.0000],
# expect:  [  0.0000,   9.5000, -24.0000]]

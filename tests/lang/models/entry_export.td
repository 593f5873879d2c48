# Entry points marked with `export` (docs/language.md, "Entry points"): in a
# file that marks any function, exactly fn main() and the marked functions
# are entry points.  split_rows and first_rows have typed signatures for the
# reader, but make sense only with their callers' sizes (alone, D / H is not
# a whole size, and 2 rows may not exist): they are helpers, checked through
# Heads.forward only.  tests/data/f32_2x3.npy is [[0.5, -1.25, 2], [3, 4.75, -6]].
# args: --entry Heads.forward --in x=tests/data/f32_2x3.npy
fn split_rows(x: f32[B, D], h: f32[H]) -> f32[B, H, D / H] { reshape(x, [B, H, D / H]) }
fn first_rows(x: f32[N, D]) -> f32[2, D] { x[0:2] }
model Heads(d: int = 3) {
  export fn forward(x: f32[B, d]) -> f32[2, 3, 1] {
    split_rows(first_rows(x) * 2, zeros([3]))
  }
  fn unused(x: f32[N, d]) { relus(x) }   # not exported, never used: not checked
}
# x * 2 by hand, as [2, 3, 1]
# expect: f32[2, 3, 1]
# expect: [[[  1.0000],
# expect:   [ -2.5000],
# expect:   [  4.0000]],
# expect:
# expect:  [[  6.0000],
# expect:   [  9.5000],
# expect:   [-12.0000]]]

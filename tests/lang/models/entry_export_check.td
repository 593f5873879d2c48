# `tdsl check` on a file that marks its entry points with `export`: only
# fn main() and the exported functions are elaborated on their own.  The
# functions below that are not exported would fail if they were (an unknown
# name, sizes that do not match), but nothing uses them, so, like an untyped
# function, they are not checked (docs/language.md, "Entry points").
fn helper(x: f32[N, 4], w: f32[4, M]) -> f32[N, M] { x @ w }
fn lonely(x: f32[N, 3]) -> f32[N, 3] { x @ ones([4, 3]) }
model Net(d: int = 4) {
  param w: f32[d, 2] = ones()
  export fn forward(x: f32[N, d]) -> f32[N, 2] { helper(x, w) }
  fn draft(x: f32[N, d]) { relus(x) }
}
export fn twice(x: f32[N]) -> f32[N] { x * 2 }

# topk on an axis of symbolic size: k <= the axis' size is checked when
# the graph runs (here D = 3 < k = 4), before anything runs, by every
# backend (a size check of lang/checks.c).
# args: --entry f --in x=tests/data/i64_3x3.npy
fn f(x: i64[N, D]) {
  let (v, i) = topk(x, 4)   # error: slice out of range: axis 0 of size 3, start 0, step 1, 4 elements
  v
}

# topk_range.td compiled: k <= the axis' size of a symbolic axis is
# checked by the compiled backend too, with the same message.
# args: --compiled --no-cache --entry f --in x=tests/data/i64_3x3.npy
fn f(x: i64[N, D]) {
  let (v, i) = topk(x, 4)   # error: slice out of range: axis 0 of size 3, start 0, step 1, 4 elements
  v
}

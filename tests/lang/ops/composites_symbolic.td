# The composite built-ins on symbolic sizes (x: i64[N, D], run at N = D = 3):
# cumsum, cumprod, sort, topk with k = 2 on an axis of symbolic size (k <= D
# is then checked when the graph runs), index_add, scatter_add, einsum and
# norm.  composites_symbolic_compiled.td runs the same entry compiled.
# Expected values: tests/data/composites_ref.py (numpy).
# args: --entry f --in x=tests/data/i64_3x3.npy
fn f(x: i64[N, D]) {
  let xf = f32(x)
  let (sv, si) = sort(-x, axis = 1)
  let (tv, ti) = topk(xf * (-1.0) ** xf, 2)
  (cumsum(x, 0), cumprod(x + 1, 1), sv, si, tv, ti,
   index_add(xf, tensor([2, 0, 2]), ones([N, 3]), axis = 1),
   scatter_add(xf, x % 3, xf, 0),
   einsum("nd,md->nm", xf, xf), norm(xf, axis = 1))
}
# expect: output 0: i64[3, 3]
# expect: [[ 0,  1,  2],
# expect:  [ 3,  5,  7],
# expect:  [ 9, 12, 15]]
# expect: output 1: i64[3, 3]
# expect: [[  1,   2,   6],
# expect:  [  4,  20, 120],
# expect:  [  7,  56, 504]]
# expect: output 2: i64[3, 3]
# expect: [[-2, -1,  0],
# expect:  [-5, -4, -3],
# expect:  [-8, -7, -6]]
# expect: output 3: i64[3, 3]
# expect: [[2, 1, 0],
# expect:  [2, 1, 0],
# expect:  [2, 1, 0]]
# expect: output 4: f32[3, 2]
# expect: [[ 2.0000,  0.0000],
# expect:  [ 4.0000, -3.0000],
# expect:  [ 8.0000,  6.0000]]
# expect: output 5: i64[3, 2]
# expect: [[2, 0],
# expect:  [1, 0],
# expect:  [2, 0]]
# expect: output 6: f32[3, 3]
# expect: [[ 1.0000,  1.0000,  4.0000],
# expect:  [ 4.0000,  4.0000,  7.0000],
# expect:  [ 7.0000,  7.0000, 10.0000]]
# expect: output 7: f32[3, 3]
# expect: [[ 9.0000,  1.0000,  2.0000],
# expect:  [ 3.0000, 16.0000,  5.0000],
# expect:  [ 6.0000,  7.0000, 23.0000]]
# expect: output 8: f32[3, 3]
# expect: [[  5.0000,  14.0000,  23.0000],
# expect:  [ 14.0000,  50.0000,  86.0000],
# expect:  [ 23.0000,  86.0000, 149.0000]]
# expect: output 9: f32[3]
# expect: [ 2.2361,  7.0711, 12.2066]

# composites_symbolic.td's entry point compiled: symbolic sizes in the
# compiled kernels of cumsum, cumprod, sort, topk, index_add, scatter_add,
# einsum and norm.  Expected values: tests/data/composites_ref.py (numpy).
# args: --compiled --no-cache --entry f --in x=tests/data/i64_3x3.npy
import composites_symbolic

fn f(x: i64[N, D]) { composites_symbolic.f(x) }
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

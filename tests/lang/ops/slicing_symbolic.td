# Slices and reshapes of symbolic dimensions, run as an entry point on the
# integer inputs in tests/data (x = arange(9) as [3, 3], y = 10 + arange(12)
# as [6, 2], k = arange(3), b = arange(8) as [2, 2, 2]; so N = 3, K = 3):
#  - a negative step on a symbolic axis, with and without bounds (the
#    slice starts at N - 1);
#  - a step that divides the span: y[1::2] of [2 * N, 2] has
#    ceil((2*N - 1) / 2) = N rows for every N;
#  - -1 in reshape found by polynomial division (2*(K-1)^2 / (K-1)^2).
# slicing_symbolic_compiled.td runs the same entry point compiled.  The
# expected values are numpy's (array2string with ", ").
# args: --entry f --in x=tests/data/i64_3x3.npy --in y=tests/data/i64_6x2.npy
# args: --in k=tests/data/i64_3.npy --in b=tests/data/i64_2x2x2.npy
fn f(x: i64[N, 3], y: i64[2 * N, 2], k: i64[K], b: i64[2, K - 1, K - 1]) -> (i64[N, 3], i64[3, N],
    i64[N - 1, 3], i64[N, 2], i64[N, 2], i64[2, K - 1, K - 1], i64[K - 1, 2 * K - 2]) {
  (x[::-1], transpose(x)[:, ::-1], x[N - 1:0:-1], y[1::2], y[::-2],
   reshape(b, [-1, K - 1, K - 1]), reshape(b, [K - 1, -1]))
}
# expect: output 0: i64[3, 3]
# expect: [[6, 7, 8],
# expect:  [3, 4, 5],
# expect:  [0, 1, 2]]
# expect: output 1: i64[3, 3]
# expect: [[6, 3, 0],
# expect:  [7, 4, 1],
# expect:  [8, 5, 2]]
# expect: output 2: i64[2, 3]
# expect: [[6, 7, 8],
# expect:  [3, 4, 5]]
# expect: output 3: i64[3, 2]
# expect: [[12, 13],
# expect:  [16, 17],
# expect:  [20, 21]]
# expect: output 4: i64[3, 2]
# expect: [[20, 21],
# expect:  [16, 17],
# expect:  [12, 13]]
# expect: output 5: i64[2, 2, 2]
# expect: [[[0, 1],
# expect:   [2, 3]],
# expect:
# expect:  [[4, 5],
# expect:   [6, 7]]]
# expect: output 6: i64[2, 4]
# expect: [[0, 1, 2, 3],
# expect:  [4, 5, 6, 7]]

# slicing_symbolic.td's entry point compiled (symbolic sizes in compiled
# kernels: a slice starting at N - 1 with step -1, a step of 2 over 2 * N
# rows, a reshape with a -1 found by polynomial division).
# args: --compiled --no-cache --entry f --in x=tests/data/i64_3x3.npy --in y=tests/data/i64_6x2.npy
# args: --in k=tests/data/i64_3.npy --in b=tests/data/i64_2x2x2.npy
import slicing_symbolic

fn f(x: i64[N, 3], y: i64[2 * N, 2], k: i64[K], b: i64[2, K - 1, K - 1]) -> (i64[N, 3], i64[3, N],
    i64[N - 1, 3], i64[N, 2], i64[N, 2], i64[2, K - 1, K - 1], i64[K - 1, 2 * K - 2]) {
  slicing_symbolic.f(x, y, k, b)
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

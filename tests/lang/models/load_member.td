# load() in a model member: it is elaborated when the model is made, before
# the entry's arguments, and the file's tensor is not an argument: --in
# names only x.  tests/data/i64_3.npy is [0, 1, 2], i64_3x3.npy
# [[0, 1, 2], [3, 4, 5], [6, 7, 8]]; the sums are by hand.
# args: --entry Shift.forward --in x=tests/data/i64_3x3.npy
model Shift {
  bias = load("tests/data/i64_3.npy")
  fn forward(x: i64[N, 3]) { x + bias }
}
# expect: i64[3, 3]
# expect: [[ 0,  2,  4],
# expect:  [ 3,  5,  7],
# expect:  [ 6,  8, 10]]

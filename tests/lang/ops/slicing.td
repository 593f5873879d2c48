# Indexing: an integer removes its axis, a slice keeps it, `...` stands for
# the axes not named; steps, negative indices and negative steps.
fn main() {
  let x = reshape(arange(24), [4, 6])
  print("x[0]", x[0])
  # expect: x[0] [0, 1, 2, 3, 4, 5] (i64[6])
  print("x[-1]", x[-1])
  # expect: x[-1] [18, 19, 20, 21, 22, 23] (i64[6])
  print("x[1, 2]", x[1, 2])
  # expect: x[1, 2] 8
  print("x[-1, -1]", x[-1, -1])
  # expect: x[-1, -1] 23
  print("x[:, 1:3]", x[:, 1:3])
  # expect: x[:, 1:3] [[ 1,  2],
  # expect:            [ 7,  8],
  # expect:            [13, 14],
  # expect:            [19, 20]] (i64[4, 2])
  print("x[1:3]", x[1:3])
  # expect: x[1:3] [[ 6,  7,  8,  9, 10, 11],
  # expect:         [12, 13, 14, 15, 16, 17]] (i64[2, 6])
  print("x[..., -1]", x[..., -1])
  # expect: x[..., -1] [ 5, 11, 17, 23] (i64[4])
  print("x[..., 1:2]", x[..., 1:2])
  # expect: x[..., 1:2] [[ 1],
  # expect:              [ 7],
  # expect:              [13],
  # expect:              [19]] (i64[4, 1])
  print("x[2, ...]", x[2, ...])
  # expect: x[2, ...] [12, 13, 14, 15, 16, 17] (i64[6])
  print("x[::2]", x[::2])
  # expect: x[::2] [[ 0,  1,  2,  3,  4,  5],
  # expect:         [12, 13, 14, 15, 16, 17]] (i64[2, 6])
  print("x[:, ::3]", x[:, ::3])
  # expect: x[:, ::3] [[ 0,  3],
  # expect:            [ 6,  9],
  # expect:            [12, 15],
  # expect:            [18, 21]] (i64[4, 2])
  print("x[1::2, 1::2]", x[1::2, 1::2])
  # expect: x[1::2, 1::2] [[ 7,  9, 11],
  # expect:                [19, 21, 23]] (i64[2, 3])
  print("x[:, ::-1]", x[:, ::-1])
  # expect: x[:, ::-1] [[ 5,  4,  3,  2,  1,  0],
  # expect:             [11, 10,  9,  8,  7,  6],
  # expect:             [17, 16, 15, 14, 13, 12],
  # expect:             [23, 22, 21, 20, 19, 18]] (i64[4, 6])
  print("x[::-1, 0]", x[::-1, 0])
  # expect: x[::-1, 0] [18, 12,  6,  0] (i64[4])
  print("x[3:0:-1, 5]", x[3:0:-1, 5])
  # expect: x[3:0:-1, 5] [23, 17, 11] (i64[3])
  print("x[-2:, -3:]", x[-2:, -3:])
  # expect: x[-2:, -3:] [[15, 16, 17],
  # expect:              [21, 22, 23]] (i64[2, 3])
  print("x[1:-1, 2:-2]", x[1:-1, 2:-2])
  # expect: x[1:-1, 2:-2] [[ 8,  9],
  # expect:                [14, 15]] (i64[2, 2])
  print("x[:, -1:-5:-2]", x[:, -1:-5:-2])
  # expect: x[:, -1:-5:-2] [[ 5,  3],
  # expect:                 [11,  9],
  # expect:                 [17, 15],
  # expect:                 [23, 21]] (i64[4, 2])
  print("x[:]", x[:])
  # expect: x[:] [[ 0,  1,  2,  3,  4,  5],
  # expect:       [ 6,  7,  8,  9, 10, 11],
  # expect:       [12, 13, 14, 15, 16, 17],
  # expect:       [18, 19, 20, 21, 22, 23]] (i64[4, 6])
  print("x[0][2:4]", x[0][2:4])
  # expect: x[0][2:4] [2, 3] (i64[2])
  print("x[:, 4:100]", x[:, 4:100])
  # expect: x[:, 4:100] [[ 4,  5],
  # expect:              [10, 11],
  # expect:              [16, 17],
  # expect:              [22, 23]] (i64[4, 2])
  let n = x.shape[1] - 2                      # compile-time sizes work as bounds
  print("x[:, n:]", x[:, n:])
  # expect: x[:, n:] [[ 4,  5],
  # expect:           [10, 11],
  # expect:           [16, 17],
  # expect:           [22, 23]] (i64[4, 2])
}

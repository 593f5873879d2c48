# transpose (all axes reversed, or two swapped), permute and .T
fn main() {
  let t = reshape(arange(24), [2, 3, 4])
  print("rev", transpose(t))
  # expect: rev [[[ 0, 12],
  # expect:       [ 4, 16],
  # expect:       [ 8, 20]],
  # expect: 
  # expect:      [[ 1, 13],
  # expect:       [ 5, 17],
  # expect:       [ 9, 21]],
  # expect: 
  # expect:      [[ 2, 14],
  # expect:       [ 6, 18],
  # expect:       [10, 22]],
  # expect: 
  # expect:      [[ 3, 15],
  # expect:       [ 7, 19],
  # expect:       [11, 23]]] (i64[4, 3, 2])
  print("sw01", transpose(t, 0, 1))
  # expect: sw01 [[[ 0,  1,  2,  3],
  # expect:        [12, 13, 14, 15]],
  # expect: 
  # expect:       [[ 4,  5,  6,  7],
  # expect:        [16, 17, 18, 19]],
  # expect: 
  # expect:       [[ 8,  9, 10, 11],
  # expect:        [20, 21, 22, 23]]] (i64[3, 2, 4])
  print("swneg", transpose(t, -1, -2))
  # expect: swneg [[[ 0,  4,  8],
  # expect:         [ 1,  5,  9],
  # expect:         [ 2,  6, 10],
  # expect:         [ 3,  7, 11]],
  # expect: 
  # expect:        [[12, 16, 20],
  # expect:         [13, 17, 21],
  # expect:         [14, 18, 22],
  # expect:         [15, 19, 23]]] (i64[2, 4, 3])
  print("perm", permute(t, [1, 2, 0]))
  # expect: perm [[[ 0, 12],
  # expect:        [ 1, 13],
  # expect:        [ 2, 14],
  # expect:        [ 3, 15]],
  # expect: 
  # expect:       [[ 4, 16],
  # expect:        [ 5, 17],
  # expect:        [ 6, 18],
  # expect:        [ 7, 19]],
  # expect: 
  # expect:       [[ 8, 20],
  # expect:        [ 9, 21],
  # expect:        [10, 22],
  # expect:        [11, 23]]] (i64[3, 4, 2])
  print("T", t.T)
  # expect: T [[[ 0,  4,  8],
  # expect:     [ 1,  5,  9],
  # expect:     [ 2,  6, 10],
  # expect:     [ 3,  7, 11]],
  # expect: 
  # expect:    [[12, 16, 20],
  # expect:     [13, 17, 21],
  # expect:     [14, 18, 22],
  # expect:     [15, 19, 23]]] (i64[2, 4, 3])
  print("T2", reshape(arange(6), [2, 3]).T)
  # expect: T2 [[0, 3],
  # expect:     [1, 4],
  # expect:     [2, 5]] (i64[3, 2])
  print("T1", arange(3).T)
  # expect: T1 [0, 1, 2] (i64[3])
}

# x.shape (a list of sizes), x.ndim and x.T on tensors of every rank.
fn main() {
  let x = zeros([2, 3, 4])
  print("shape", x.shape[0], x.shape[1], x.shape[-1], x.ndim)
  # expect: shape 2 3 4 3
  print("T", x.T.shape[1], x.T.shape[2])
  # expect: T 4 3
  print("rank0", sum(x).ndim, "rank1", arange(5).shape[0])
  # expect: rank0 0 rank1 5
  let (a, b, c) = (x.shape[0], x.shape[1], x.shape[2])
  print("sizes", a * b * c)
  # expect: sizes 24
  print("as dims", zeros(x.shape).ndim, reshape(x, [x.shape[0], -1]).shape[1])
  # expect: as dims 3 12
}

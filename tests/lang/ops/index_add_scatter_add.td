# index_add (torch.index_add: whole slices of src added at a 1-D list of
# positions along an axis, repeated and negative positions) and
# scatter_add (torch.scatter_add: one position per element of src), on
# floats and integers, an infinity reaching only its own row, and
# gradients with respect to x and src.  Expected values:
# tests/data/composites_ref.py (numpy float64; gradients by central finite
# differences).
fn w_index_add(x, s) {
  let w = tensor([[1.0, -1.0], [2.0, 0.5], [-3.0, 1.0], [0.25, 4.0]])
  sum(w * index_add(x, tensor([0, 2, 0, -1]), s))
}
fn w_scatter_add(x, s) {
  let w = tensor([[1.0, -2.0], [0.5, 4.0], [2.0, 2.0]])
  sum(w * scatter_add(x, tensor([[0, 2], [1, 0], [0, 0], [2, 1]]), s, axis = 0))
}

fn main() {
  let x = tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
  let src = tensor([[0.5, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
  print("rows", index_add(x, tensor([0, 2, 0, -1]), src))
  let src1 = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.5, 2.5, 3.5]])
  print("cols", index_add(x, tensor([1, 1, 0], dtype = i32), src1, axis = 1))
  print("int", index_add(zeros([3], dtype = i32), tensor([2, 2]), tensor([5, 7], dtype = i32), 0))
  print("inf", index_add(zeros([3]), tensor([1]), tensor([1.0]) / tensor([0.0])))
  print("alpha", index_add(zeros([3]), tensor([0, 0, 2]), tensor([1.0, 2.0, 3.0]), alpha = -0.5),
        index_add(zeros([2], dtype = i64), tensor([1]), tensor([3]), 0, 2))
  print("scatter1d", scatter_add(zeros([3]), tensor([0, 2, 0, 1]), tensor([1.0, 2.0, 3.0, 4.0]), 0))
  let i2 = tensor([[0, 1, 0, 2], [2, 2, 1, 0]])
  let s2 = tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
  print("scatter-axis1", scatter_add(zeros([2, 3]), i2, s2, axis = -1))
  let i0 = tensor([[0, 2], [1, 0], [0, 0], [2, 1]])
  let s0 = tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
  print("scatter-axis0", scatter_add(ones([3, 2]), i0, s0, 0))
  let (gx, gs) = grad(w_index_add, argnums = [0, 1])(x, src)
  print("grad index_add", gx, gs)
  let (hx, hs) = grad(w_scatter_add, argnums = [0, 1])(ones([3, 2]), s0)
  print("grad scatter_add", hx, hs)
  # expect: rows [[ 5.5000,  8.0000],
  # expect:       [ 3.0000,  4.0000],
  # expect:       [ 7.0000,  9.0000],
  # expect:       [13.0000, 15.0000]] (f32[4, 2])
  # expect: cols [[ 4.0000,  5.0000],
  # expect:       [ 9.0000, 13.0000],
  # expect:       [14.0000, 21.0000],
  # expect:       [10.5000, 12.0000]] (f32[4, 2])
  # expect: int [ 0,  0, 12] (i32[3])
  # expect: inf [0.0000,    inf, 0.0000] (f32[3])
  # expect: alpha [-1.5000,  0.0000, -1.5000] (f32[3]) [0, 6] (i64[2])
  # expect: scatter1d [4.0000, 4.0000, 2.0000] (f32[3])
  # expect: scatter-axis1 [[ 4.0000,  2.0000,  4.0000],
  # expect:                [ 8.0000,  7.0000, 11.0000]] (f32[2, 3])
  # expect: scatter-axis0 [[ 7.0000, 11.0000],
  # expect:                [ 4.0000,  9.0000],
  # expect:                [ 8.0000,  3.0000]] (f32[3, 2])
  # expect: grad index_add [[ 1.0000, -1.0000],
  # expect:                 [ 2.0000,  0.5000],
  # expect:                 [-3.0000,  1.0000],
  # expect:                 [ 0.2500,  4.0000]] (f32[4, 2]) [[ 1.0000, -1.0000],
  # expect:                                                  [-3.0000,  1.0000],
  # expect:                                                  [ 1.0000, -1.0000],
  # expect:                                                  [ 0.2500,  4.0000]] (f32[4, 2])
  # expect: grad scatter_add [[ 1.0000, -2.0000],
  # expect:                   [ 0.5000,  4.0000],
  # expect:                   [ 2.0000,  2.0000]] (f32[3, 2]) [[ 1.0000,  2.0000],
  # expect:                                                    [ 0.5000, -2.0000],
  # expect:                                                    [ 1.0000, -2.0000],
  # expect:                                                    [ 2.0000,  4.0000]] (f32[4, 2])
}

# sort, argsort and topk (torch.sort with stable = true, torch.argsort,
# torch.topk): ascending and descending, ties kept in index order, NaN
# after every number (first when descending, as PyTorch), -inf, along
# either axis, integers and bools, and the gradient of the values (it
# reaches the element each value came from).  Expected values:
# tests/data/composites_ref.py (Python's stable sort; gradients by central
# finite differences in numpy float64).
fn w_sort(x) {
  let w = tensor([[1.0, 2.0, -1.0, 0.5], [-3.0, 1.0, 2.0, 4.0]])
  let (v, i) = sort(x, descending = true)
  sum(w * v)
}
fn w_topk(x) {
  let w = tensor([[1.0, 2.0], [-3.0, 1.0]])
  let (v, i) = topk(x, 2, largest = false)
  sum(w * v)
}

fn main() {
  let v = tensor([3.0, -1.0, 2.0, -1.0, 0.0, 2.0, -1.0]) / tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0])
  let (s, i) = sort(v)
  print("asc", s)
  print("asc-idx", i)
  let (sd, id) = sort(v, descending = true)
  print("desc", sd)
  print("desc-idx", id)
  print("argsort", argsort(v), argsort(v, descending = true))
  let (tv, ti) = topk(v, 3)
  print("top3", tv, ti)
  let (bv, bi) = topk(v, 3, largest = false)
  print("bottom3", bv, bi)
  let m = tensor([[2.0, 1.0, 3.0], [1.0, 1.0, 0.0], [5.0, -2.0, 2.0]])
  let (rv, ri) = sort(m)
  print("rows", rv, ri)
  let (cv, ci) = sort(m, axis = 0, descending = true)
  print("cols", cv, ci)
  let (kv, ki) = topk(m, 2, axis = 0)
  print("top2-axis0", kv, ki)
  let (nv, ni) = sort(tensor([5, 3, 5, 1], dtype = i32))
  print("int", nv, ni)
  print("bool", argsort(tensor([true, false, true, false])))
  # PyTorch's stable = and sorted = are accepted (the result is stable and sorted anyway)
  let (kv2, ki2) = topk(tensor([1.0, 3.0, 2.0]), 2, sorted = false)
  print("stable-kw", argsort(tensor([2, 1, 2]), stable = false), kv2)
  let x = tensor([[0.5, -1.5, 2.0, 1.0], [3.0, 0.25, -2.0, 1.5]])
  print("grad sort", grad(w_sort)(x))
  print("grad topk", grad(w_topk)(x))
  # expect: asc [   -inf, -1.0000, -1.0000,  2.0000,  2.0000,  3.0000,     nan] (f32[7])
  # expect: asc-idx [6, 1, 3, 2, 5, 0, 4] (i64[7])
  # expect: desc [    nan,  3.0000,  2.0000,  2.0000, -1.0000, -1.0000,    -inf] (f32[7])
  # expect: desc-idx [4, 0, 2, 5, 1, 3, 6] (i64[7])
  # expect: argsort [6, 1, 3, 2, 5, 0, 4] (i64[7]) [4, 0, 2, 5, 1, 3, 6] (i64[7])
  # expect: top3 [   nan, 3.0000, 2.0000] (f32[3]) [4, 0, 2] (i64[3])
  # expect: bottom3 [   -inf, -1.0000, -1.0000] (f32[3]) [6, 1, 3] (i64[3])
  # expect: rows [[ 1.0000,  2.0000,  3.0000],
  # expect:       [ 0.0000,  1.0000,  1.0000],
  # expect:       [-2.0000,  2.0000,  5.0000]] (f32[3, 3]) [[1, 0, 2],
  # expect:                                                 [2, 0, 1],
  # expect:                                                 [1, 2, 0]] (i64[3, 3])
  # expect: cols [[ 5.0000,  1.0000,  3.0000],
  # expect:       [ 2.0000,  1.0000,  2.0000],
  # expect:       [ 1.0000, -2.0000,  0.0000]] (f32[3, 3]) [[2, 0, 0],
  # expect:                                                 [0, 1, 2],
  # expect:                                                 [1, 2, 1]] (i64[3, 3])
  # expect: top2-axis0 [[5.0000, 1.0000, 3.0000],
  # expect:             [2.0000, 1.0000, 2.0000]] (f32[2, 3]) [[2, 0, 0],
  # expect:                                                    [0, 1, 2]] (i64[2, 3])
  # expect: int [1, 3, 5, 5] (i32[4]) [3, 1, 0, 2] (i64[4])
  # expect: bool [1, 3, 0, 2] (i64[4])
  # expect: stable-kw [1, 0, 2] (i64[3]) [3.0000, 2.0000] (f32[2])
  # expect: grad sort [[-1.0000,  0.5000,  1.0000,  2.0000],
  # expect:            [-3.0000,  2.0000,  4.0000,  1.0000]] (f32[2, 4])
  # expect: grad topk [[ 2.0000,  1.0000,  0.0000,  0.0000],
  # expect:            [ 0.0000,  1.0000, -3.0000,  0.0000]] (f32[2, 4])
}

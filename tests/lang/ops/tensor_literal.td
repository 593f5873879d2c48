# tensor(...): torch.tensor literals from (nested) lists of numbers.  The
# dtype is i64 for integers only, f32 once a float appears, bool for bools
# only (as PyTorch), or dtype = ...; floats cast to an integer dtype
# truncate toward zero, as in torch.tensor([-1.5], dtype=torch.int64).
# Values by hand.
fn main() {
  print("ints", tensor([1, 1, 9]))
  # expect: ints [1, 1, 9] (i64[3])
  print("nested", tensor([[1.0, 2.0], [3.0, 4.5]]))
  # expect: nested [[1.0000, 2.0000],
  # expect:         [3.0000, 4.5000]] (f32[2, 2])
  print("neg", tensor([[1, -2], [-3, 4]], dtype = f64), tensor([-1.5, 2.7], dtype = i64))
  # expect: neg [[ 1.0000, -2.0000],
  # expect:      [-3.0000,  4.0000]] (f64[2, 2]) [-1,  2] (i64[2])
  print("mixed", tensor([1, 2.5]), tensor([true, false]), tensor((3, 4), dtype = i32))
  # expect: mixed [1.0000, 2.5000] (f32[2]) [ true, false] (bool[2]) [3, 4] (i32[2])
  print("3d", tensor([[[1], [2]], [[3], [4]], [[5], [6]]]).shape[0], sum(tensor([[[1], [2]], [[3], [4]], [[5], [6]]]), axis = [1, 2]))
  # expect: 3d 3 [ 3,  7, 11] (i64[3])
  print("rank0", tensor(2.5) * 2, tensor([]), tensor([[], []], dtype = i64))
  # expect: rank0 5.0000 [] (f32[0]) [] (i64[2, 0])
  let big = tensor([i * 0.5 for i in 0..100])
  print("big", big.shape[0], sum(big), big[99])
  # expect: big 100 2475.0000 49.5000
  let x = rand([3], seed = 1) * 0
  print("use", tensor([1.0, 2.0, 3.0]) + x, tensor([1, 2, 3]) // 2 + i64(x))
  # expect: use [1.0000, 2.0000, 3.0000] (f32[3]) [0, 1, 1] (i64[3])
}

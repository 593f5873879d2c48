# einsum (numpy.einsum / torch.einsum): matmul, implicit output (letters
# that appear once, in alphabetical order), transpose, sums, trace and
# diagonal (a letter repeated in one operand), outer and elementwise
# products, batched matmul, three operands, `...` (also of fewer axes in
# one operand, and in the middle), upper-case letters, integers, and
# gradients with respect to both operands.  Expected values:
# tests/data/composites_ref.py (numpy float64; gradients by central finite
# differences).
fn w_einsum(a, b) {
  let w = tensor([[1.0, -1.0, 2.0, 0.5], [3.0, 0.0, -2.0, 1.0]])
  sum(w * einsum("ij,jk->ik", a, b))
}

fn main() {
  let a = reshape(f32(arange(6)), [2, 3]) - 2
  let b = reshape(f32(arange(12)), [3, 4]) / 4
  let c = tensor([[1.0, -1.0], [2.0, 0.5], [0.0, 1.0], [-1.0, 3.0]])
  let s = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
  let p = reshape(f32(arange(12)), [2, 2, 3]) - 5
  let q = reshape(f32(arange(12)), [2, 3, 2]) / 2
  let u = tensor([1.0, -2.0, 3.0])
  print("matmul", einsum("ij,jk->ik", a, b))
  print("implicit", einsum("ij,jk", a, b), einsum("ij", a), einsum("ji", a))
  print("transpose", einsum(" ij -> ji ", a), "sum", einsum("ij->", a))
  print("trace", einsum("ii->", s), einsum("ii->i", s), einsum("ii", s))
  print("outer", einsum("i,j->ij", u, u[0:2]))
  print("hadamard", einsum("ij,ij->ij", a, a), einsum("ij,ij->", a, a))
  print("batched", einsum("bij,bjk->bik", p, q))
  print("chain", einsum("ij,jk,kl->il", a, b, c))
  print("ellipsis", einsum("...ij->...ji", p))
  print("ellipsis-mm", einsum("...ij,...jk->...ik", p, q))
  print("ellipsis-rank", einsum("...ij,...jk->...ik", p, b))
  print("mid-ellipsis", einsum("i...j,j->...i", p, u), einsum("Ba", a))
  print("matvec", einsum("ij,j->i", a, u), "dot", einsum("i,i->", u, u))
  print("bsum", einsum("bij->bj", p))
  print("int", einsum("ij,jk->ik", tensor([[1, 2], [3, 4]]), tensor([[5, 6], [7, 8]])))
  let (ga, gb) = grad(w_einsum, argnums = [0, 1])(a, b)
  print("grad", ga, gb)
  # expect: matmul [[-1.0000, -1.7500, -2.5000, -3.2500],
  # expect:         [ 8.0000,  9.5000, 11.0000, 12.5000]] (f32[2, 4])
  # expect: implicit [[-1.0000, -1.7500, -2.5000, -3.2500],
  # expect:           [ 8.0000,  9.5000, 11.0000, 12.5000]] (f32[2, 4]) [[-2.0000, -1.0000,  0.0000],
  # expect:                                                              [ 1.0000,  2.0000,  3.0000]] (f32[2, 3]) [[-2.0000,  1.0000],
  # expect:                                                                                                        [-1.0000,  2.0000],
  # expect:                                                                                                        [ 0.0000,  3.0000]] (f32[3, 2])
  # expect: transpose [[-2.0000,  1.0000],
  # expect:            [-1.0000,  2.0000],
  # expect:            [ 0.0000,  3.0000]] (f32[3, 2]) sum 3.0000
  # expect: trace 16.0000 [ 1.0000,  5.0000, 10.0000] (f32[3]) 16.0000
  # expect: outer [[ 1.0000, -2.0000],
  # expect:        [-2.0000,  4.0000],
  # expect:        [ 3.0000, -6.0000]] (f32[3, 2])
  # expect: hadamard [[4.0000, 1.0000, 0.0000],
  # expect:           [1.0000, 4.0000, 9.0000]] (f32[2, 3]) 19.0000
  # expect: batched [[[-10.0000, -16.0000],
  # expect:           [ -1.0000,  -2.5000]],
  # expect:
  # expect:          [[ 26.0000,  29.0000],
  # expect:           [ 62.0000,  69.5000]]] (f32[2, 2, 2])
  # expect: chain [[ -1.2500, -12.1250],
  # expect:        [ 14.5000,  45.2500]] (f32[2, 2])
  # expect: ellipsis [[[-5.0000, -2.0000],
  # expect:            [-4.0000, -1.0000],
  # expect:            [-3.0000,  0.0000]],
  # expect:
  # expect:           [[ 1.0000,  4.0000],
  # expect:            [ 2.0000,  5.0000],
  # expect:            [ 3.0000,  6.0000]]] (f32[2, 3, 2])
  # expect: ellipsis-mm [[[-10.0000, -16.0000],
  # expect:               [ -1.0000,  -2.5000]],
  # expect:
  # expect:              [[ 26.0000,  29.0000],
  # expect:               [ 62.0000,  69.5000]]] (f32[2, 2, 2])
  # expect: ellipsis-rank [[[-10.0000, -13.0000, -16.0000, -19.0000],
  # expect:                 [ -1.0000,  -1.7500,  -2.5000,  -3.2500]],
  # expect:
  # expect:                [[  8.0000,   9.5000,  11.0000,  12.5000],
  # expect:                 [ 17.0000,  20.7500,  24.5000,  28.2500]]] (f32[2, 2, 4])
  # expect: mid-ellipsis [[-6.0000,  6.0000],
  # expect:               [ 0.0000, 12.0000]] (f32[2, 2]) [[-2.0000, -1.0000,  0.0000],
  # expect:                                                [ 1.0000,  2.0000,  3.0000]] (f32[2, 3])
  # expect: matvec [0.0000, 6.0000] (f32[2]) dot 14.0000
  # expect: bsum [[-7.0000, -5.0000, -3.0000],
  # expect:       [ 5.0000,  7.0000,  9.0000]] (f32[2, 3])
  # expect: int [[19, 22],
  # expect:      [43, 50]] (i64[2, 2])
  # expect: grad [[ 1.1250,  3.6250,  6.1250],
  # expect:       [-0.2500,  1.7500,  3.7500]] (f32[2, 3]) [[ 1.0000,  2.0000, -6.0000,  0.0000],
  # expect:                                                 [ 5.0000,  1.0000, -6.0000,  1.5000],
  # expect:                                                 [ 9.0000,  0.0000, -6.0000,  3.0000]] (f32[3, 4])
}

# norm (torch.linalg.vector_norm): p = 2 (the default), 1, "inf", "-inf",
# 0 (the count of non-zeros), other positive and negative p, over all
# elements, one axis, a list of axes, keepdims, f64, and gradients (0 at a
# zero vector, as PyTorch).
# Expected values: tests/data/composites_ref.py (numpy float64; gradients
# by central finite differences).
fn n2(y) { norm(y) }
fn n1(y) { norm(y, p = 1) }
fn n3(y) { sum(norm(y, 3, axis = 1) * tensor([1.0, -2.0])) }

fn main() {
  let x = tensor([[3.0, -4.0, 0.0], [1.0, 2.0, -2.0]])
  print("p2", norm(x), "p1", norm(x, 1), "inf", norm(x, "inf"), "-inf", norm(x, "-inf"), "p0", norm(x, 0))
  print("p3", norm(x, 3), "p0.5", norm(x, 0.5), "p-1", norm(x[1], -1))
  print("axis1", norm(x, axis = 1), norm(x, 1, axis = -1))
  print("axis0-keep", norm(x, axis = 0, keepdims = true))
  print("axes", norm(x, 2, axis = [0, 1]), norm(f64(x), "inf", axis = 1, keepdims = true))
  let y = tensor([[0.5, -1.5, 2.0], [1.0, 3.0, -0.25]])
  print("grad p2", grad(n2)(y))
  print("grad p1", grad(n1)(y))
  print("grad p3 axis1", grad(n3)(y))
  # at a zero vector: 0 (torch's subgradient; hand-computed), not NaN
  print("grad at zero", grad(n2)(zeros([3])), grad(n3)(zeros([2, 2])))
  # expect: p2 5.8310 p1 12.0000 inf 4.0000 -inf 0.0000 p0 5.0000
  # expect: p3 4.7622 p0.5 57.1608 p-1 0.5000
  # expect: axis1 [5.0000, 3.0000] (f32[2]) [7.0000, 5.0000] (f32[2])
  # expect: axis0-keep [[3.1623, 4.4721, 2.0000]] (f32[1, 3])
  # expect: axes 5.8310 [[4.0000],
  # expect:              [2.0000]] (f64[2, 1])
  # expect: grad p2 [[ 0.1229, -0.3686,  0.4914],
  # expect:          [ 0.2457,  0.7372, -0.0614]] (f32[2, 3])
  # expect: grad p1 [[ 1.0000, -1.0000,  1.0000],
  # expect:          [ 1.0000,  1.0000, -1.0000]] (f32[2, 3])
  # expect: grad p3 axis1 [[ 0.0491, -0.4416,  0.7851],
  # expect:                [-0.2168, -1.9514,  0.0136]] (f32[2, 3])
  # expect: grad at zero [0.0000, 0.0000, 0.0000] (f32[3]) [[0.0000, 0.0000],
  # expect:                                                 [0.0000, 0.0000]] (f32[2, 2])
}

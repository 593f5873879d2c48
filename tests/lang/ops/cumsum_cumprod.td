# cumsum and cumprod (torch.cumsum / torch.cumprod) along either axis,
# integers and bools (accumulated in i64, as PyTorch), infinities and NaN,
# f64, and gradients (also at zeros, where prod's gradient is the product
# of the other factors, as PyTorch's).  Expected values: tests/data/composites_ref.py
# (numpy float64; gradients by central finite differences).
fn w_cumsum1(x) { sum(tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * cumsum(x, 1)) }
fn w_cumsum0(x) { sum(tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * cumsum(x, axis = 0)) }
fn w_cumprod1(x) { sum(tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * cumprod(x, -1)) }
fn w_prod(x) { sum(prod(x, axis = 1) * tensor([1.0, 2.0])) }
fn w_cumprod0(x) { sum(tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]]) * cumprod(x, 0)) }

fn main() {
  let x = tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
  print("cumsum1", cumsum(x, 1))
  print("cumsum0", cumsum(x, 0))
  print("cumprod1", cumprod(x, -1))
  print("cumprod0", cumprod(x, axis = 0))
  let n = tensor([3, -1, 4, 1, -5], dtype = i32)
  print("int", cumsum(n, 0), cumprod(n, 0))
  print("bool", cumsum(tensor([true, false, true, true]), 0))
  let s = tensor([1.0, 1.0, -1.0, 2.0]) / tensor([1.0, 0.0, 0.0, 1.0])
  print("special", cumsum(s, 0), cumprod(tensor([2.0, 0.0, 1.0, 3.0]) / tensor([1.0, 1.0, 0.0, 1.0]), 0))
  let d = tensor([0.1, 0.2, 0.3, 0.4], dtype = f64) * 3
  print("f64", cumsum(d, 0), cumprod(d, 0))
  print("grad cumsum1", grad(w_cumsum1)(x))
  print("grad cumsum0", grad(w_cumsum0)(x))
  print("grad cumprod1", grad(w_cumprod1)(x))
  print("grad cumprod0", grad(w_cumprod0)(x))
  # zeros: the product of the other factors, as torch (not y / x)
  let z = tensor([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]])
  print("grad cumprod zeros", grad(w_cumprod1)(z))
  print("grad prod zeros", grad(w_prod)(z))
  # expect: cumsum1 [[ 1.5000, -0.5000,  2.5000],
  # expect:          [ 0.5000,  4.5000,  3.5000]] (f32[2, 3])
  # expect: cumsum0 [[ 1.5000, -2.0000,  3.0000],
  # expect:          [ 2.0000,  2.0000,  2.0000]] (f32[2, 3])
  # expect: cumprod1 [[ 1.5000, -3.0000, -9.0000],
  # expect:           [ 0.5000,  2.0000, -2.0000]] (f32[2, 3])
  # expect: cumprod0 [[ 1.5000, -2.0000,  3.0000],
  # expect:           [ 0.7500, -8.0000, -3.0000]] (f32[2, 3])
  # expect: int [3, 2, 6, 7, 2] (i64[5]) [  3,  -3, -12, -12,  60] (i64[5])
  # expect: bool [1, 1, 2, 3] (i64[4])
  # expect: special [1.0000,    inf,    nan,    nan] (f32[4]) [2.0000, 0.0000,    nan,    nan] (f32[4])
  # expect: f64 [0.3000, 0.9000, 1.8000, 3.0000] (f64[4]) [0.3000, 0.1800, 0.1620, 0.1944] (f64[4])
  # expect: grad cumsum1 [[-0.5000, -1.5000,  0.5000],
  # expect:               [ 3.0000,  0.0000, -1.0000]] (f32[2, 3])
  # expect: grad cumsum0 [[ 4.0000, -1.0000, -0.5000],
  # expect:               [ 3.0000,  1.0000, -1.0000]] (f32[2, 3])
  # expect: grad cumprod1 [[ 2.0000, -0.7500, -1.5000],
  # expect:                [11.0000,  1.0000, -2.0000]] (f32[2, 3])
  # expect: grad cumprod0 [[ 2.5000,  2.0000,  1.5000],
  # expect:                [ 4.5000, -2.0000, -3.0000]] (f32[2, 3])
  # expect: grad cumprod zeros [[ 1.0000, -1.0000,  0.0000],
  # expect:                     [ 3.0000,  0.0000,  0.0000]] (f32[2, 3])
  # expect: grad prod zeros [[0.0000, 6.0000, 0.0000],
  # expect:                  [0.0000, 0.0000, 0.0000]] (f32[2, 3])
}

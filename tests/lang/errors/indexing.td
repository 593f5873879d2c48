# Indexing errors: out-of-range literal indices, too many indices, two
# `...`, a zero step, slices that are empty for every size, list indices.
fn f(x: f32[N, 4]) {
  let a = x[:, 4]                      # error: index 4 is out of range for a dimension of size 4
  let b = x[:, -5]                     # error: index -5 is out of range for a dimension of size 4
  let c = x[0, 1, 2]                   # error: too many indices (3) for a tensor f32[N, 4]
  let d = x[..., 0, ...]               # error: only one ... per index
  let e = x[:, ::0]                    # error: a slice step cannot be zero
  let g = x[::-2]                      # error: slice of N elements with step -2: the count ceil(N / 2) is not a polynomial in the symbolic sizes
  let h = x[:, 1.5]                    # error: an index must be a size (an integer), found a float
  let k = [1, 2][5]                    # error: index 5 is out of range for a list of 2 elements
  let m = x[3:1]                       # error: this slice is empty for every size (stop before start)
  let n = x[1::2]                      # error: slice of N - 1 elements with step 2: the count ceil((N - 1) / 2) is not a polynomial
  x
}

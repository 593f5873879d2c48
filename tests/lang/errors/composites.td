# Mistakes with the composite built-ins (cumsum, index_add, scatter_add,
# sort, topk, einsum, norm): each names what is wrong and how to fix it.
fn f(x: f32[N, 4], y: f32[4, 5], i: i64[3], k: i64[N, 4]) {
  let a = einsum("ij,jk->ii", x, y)        # error: letter 'i' appears twice in the output
  let b = einsum("ij,jk->ik", x, x)        # error: einsum: letter 'j' has size 4 in operand 1 and size N in operand 2
  let c = einsum("ij,jk->ik", x)           # error: einsum's equation "ij,jk->ik" has 2 operands, but 1 tensor is given
  let d = einsum("ijk->i", x)              # error: einsum: operand 1 is f32[N, 4], of 2 dimensions, but the equation names 3
  let e = einsum("ij->iz", x)              # error: output letter 'z' names no axis of an operand
  let g = einsum(x, y)                     # error: einsum's first argument must be its equation, a string, found a tensor
  let h = einsum("ij,jk->ik", x, f64(y))   # error: einsum needs operands of one dtype: operand 2 is f64, operand 1 is f32
  let m = einsum("i.j->i", x)              # error: einsum's equation "i.j->i": operand 1 has a '.' that is not part of '...'
  let n = einsum("i1->i", x)               # error: einsum's equation "i1->i": '1' is not a letter
  let o = cumsum(x, 2)                     # error: axis 2 is out of range for a tensor of rank 2
  let p = cumsum(x)                        # error: cumsum() is missing its argument 'axis'
  let q = index_add(x, i, y, 0)            # error: index_add needs a 1-D idx and src shaped like x but with len(idx) along axis 0
  let r = index_add(x, f32(i), x, 0)       # error: index_add's indices must be integers, found f32
  let s = scatter_add(x, i, x, 0)          # error: scatter_add needs idx and src of one shape
  let t = index_add(x, i, f64(x), 0)       # error: index_add needs src of x's dtype f32, found f64
  let u = sort(sum(x))                     # error: sort needs a tensor of rank 1 or more
  let v = topk(y, 6)                       # error: topk's k = 6 is larger than axis 1's size 5
  let w = topk(y, 2, largest = 1)          # error: expected true or false, found an integer
  let z = norm(k)                          # error: norm needs a float tensor, found i64
  let zz = norm(x, p = "two")              # error: norm's p must be a number or "inf" or "-inf", found a string
  x
}
# help: every axis named by one letter must have one size
# help: each output letter names one axis of the result; for a diagonal write it twice in an operand
# help: give one letter per axis (or ... for the leading ones) in operand 1 of "ijk->i"
# help: convert it: f32(f64(x))
# help: k can be at most the size of the axis
# help: convert first: norm(f32(x))

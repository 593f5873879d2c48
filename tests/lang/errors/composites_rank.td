# The composites that add an axis (cumsum, cumprod, sort, argsort, topk,
# index_add, scatter_add) refuse a tensor of the largest rank, saying so.
fn f(r8: f32[1, 1, 1, 1, 1, 1, 1, N], i: i64[1]) {
  let c8 = cumprod(r8, 0)                  # error: cumprod needs a tensor of at most 7 dimensions
  let s8 = argsort(r8)                     # error: argsort needs a tensor of at most 7 dimensions
  let i8 = index_add(r8, i, r8)            # error: index_add needs x of at most 7 dimensions
  let e8 = einsum("abcdefgh->hgfedcba", r8)
  e8
}

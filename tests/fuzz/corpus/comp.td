model Deep(d: int, n: int) {
  blocks = [Block(d, i) for i in 0..n]
  fn forward(x) {
    let h = x
    for i in 0..n {
      h = blocks[i](h)
      h = h + mean(h, axis = [-1], keepdims = true)
    }
    for j in [1, 2, 3] { h = h * j }
    h.T.shape[0]
  }
  fn other(x) -> f32 { sum(x) }
}

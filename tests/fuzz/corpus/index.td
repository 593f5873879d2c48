fn f(x: f32[N, 8]) {
  let a = x[:, 1:3]
  let b = x[..., -1]
  let c = x[::2] + x[::-1] + x[0] + x[N - 1:, :2:]
  let d: f32[2 * N, 8] = concat([x, x], axis = 0)
  (a, b, c, d, ())
}

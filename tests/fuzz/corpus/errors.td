def f(x):
  return x
fn g(x) {
  if x = 1 { x } elif { 2 }
  let y = (x + )
  let z = f(a b
}
model M(a: int b: int) {
  param w f32[3] = zeros()
}

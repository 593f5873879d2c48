# grad and value_and_grad: with respect to arguments (argnums), to a
# model's parameters (wrt), with auxiliary outputs (has_aux), and of a
# gradient (second order).  Expected values are the derivatives worked out
# by hand.
fn cube_sum(x) { sum(x * x * x) }
fn cube(x) { x * x * x }
fn dot(a, b) { sum(a * b) }
fn with_aux(x) { (sum(x * x), x + 1) }
fn dcube(x) { grad(cube)(x) }

model Lin {
  param w: f32[3] = full(2.0)
  param b: f32[] = full(0.5)
  fn loss(x) { sum(w * x) + b * b }
}

fn main() {
  let x = arange(1, 4, dtype = f32) * f32(-1) ** arange(0, 3, dtype = f32)   # [1, -2, 3]
  print("d/dx sum(x^3)", grad(cube_sum)(x))
  # expect: d/dx sum(x^3) [ 3.0000, 12.0000, 27.0000] (f32[3])
  let (v, g) = value_and_grad(cube_sum)(x)
  print("value", v, "grad", g)
  # expect: value 20.0000 grad [ 3.0000, 12.0000, 27.0000] (f32[3])
  let (ga, gb) = grad(dot, argnums = [0, 1])(x, x * 2)
  print("d dot / d a", ga, "d dot / d b", gb)
  # expect: d dot / d a [ 2.0000, -4.0000,  6.0000] (f32[3]) d dot / d b [ 1.0000, -2.0000,  3.0000] (f32[3])
  print("d dot / d b only", grad(dot, argnums = 1)(x, x))
  # expect: d dot / d b only [ 1.0000, -2.0000,  3.0000] (f32[3])
  let (p, q) = grad(dot, argnums = [0, 1])(x, x)
  print("same tensor twice", p, q)
  # expect: same tensor twice [ 1.0000, -2.0000,  3.0000] (f32[3]) [ 1.0000, -2.0000,  3.0000] (f32[3])
  let (la, gx) = value_and_grad(with_aux, has_aux = true)(x)
  let (l, aux) = la
  print("aux", l, aux, gx)
  # expect: aux 14.0000 [ 2.0000, -1.0000,  4.0000] (f32[3]) [ 2.0000, -4.0000,  6.0000] (f32[3])
  let t = f32(2.0) + zeros([])
  print("second derivative of x^3 at 2", grad(dcube)(t))
  # expect: second derivative of x^3 at 2 12.0000
  let m = Lin()
  let gm = grad(m.loss, wrt = m)(x)
  print("wrt model", gm[0], gm[1], len(gm))
  # expect: wrt model [ 1.0000, -2.0000,  3.0000] (f32[3]) 1.0000 2
  print("params", len(params(m)))
  # expect: params 2
}

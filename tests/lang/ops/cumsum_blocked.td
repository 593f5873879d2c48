# cumsum and cumprod over an axis longer than 64 (here 70), which is
# scanned in blocks of about sqrt(n) (an inclusive scan per block, then
# the blocks' totals): sums, infinities and NaN reaching only the
# positions after them, integers, products, axis 0, and gradients through
# the blocks (cumprod's also across a zero).  Expected values:
# tests/data/composites_ref.py (numpy float64; gradients by central finite
# differences).
fn xs() { f32((arange(70) * 7) % 9 - 4) * 0.25 }
fn ws() { cos(f32(arange(70)) * 0.3) }
fn w_cumsum(x) { sum(ws() * cumsum(x, 0)) }
fn w_cumprod(z) { sum(ws() * cumprod(z, -1)) }

fn main() {
  let x = xs()
  let cs = cumsum(x, 0)
  print("head", cs[0:5], "tail", cs[62:70])
  let i = arange(70)
  let y = where(i == 20, 1.0 / tensor(0.0), where(i == 40, -1.0 / tensor(0.0), x))
  let cy = cumsum(y, 0)
  print("special", cy[18:22], cy[38:42], cy[66:70])
  print("int", cumsum(i32((i * 7) % 9 - 4), 0)[60:70])
  let z = where(i % 3 == 0, 2.0, where(i % 3 == 1, 0.5, 1.0))
  let cz = cumprod(z, 0)
  print("prod", cz[0:6], cz[64:70])
  print("axis0", cumsum(stack([x, -x], axis = 1), 0)[65:70])
  let g = grad(w_cumsum)(x)
  print("grad", g[0:5], g[65:70])
  let gp = grad(w_cumprod)(where(i == 50, 0.0, z))
  print("grad prod", gp[46:52], gp[64:70])
  # expect: head [-1.0000, -0.2500,  0.0000, -0.2500, -1.0000] (f32[5]) tail [ 0.0000, -1.0000, -0.2500,  0.0000, -0.2500, -1.0000,  0.0000,  0.5000] (f32[8])
  # expect: special [-1.0000, -0.2500,     inf,     inf] (f32[4]) [inf, inf, nan, nan] (f32[4]) [nan, nan, nan, nan] (f32[4])
  # expect: int [ 2,  2,  0, -4, -1,  0, -1, -4,  0,  2] (i64[10])
  # expect: prod [2.0000, 1.0000, 1.0000, 2.0000, 1.0000, 1.0000] (f32[6]) [1.0000, 1.0000, 2.0000, 1.0000, 1.0000, 2.0000] (f32[6])
  # expect: axis0 [[ 0.0000,  0.0000],
  # expect:        [-0.2500,  0.2500],
  # expect:        [-1.0000,  1.0000],
  # expect:        [ 0.0000,  0.0000],
  # expect:        [ 0.5000, -0.5000]] (f32[5, 2])
  # expect: grad [3.5418, 2.5418, 1.5864, 0.7611, 0.1395] (f32[5]) [ 1.4364,  0.6406,  0.0592, -0.2557, -0.2760] (f32[5])
  # expect: grad prod [-1.3705, -1.0161, -0.5266, -1.0672,  0.4978,  0.0000] (f32[6]) [0.0000, 0.0000, 0.0000, 0.0000, 0.0000, 0.0000] (f32[6])
}

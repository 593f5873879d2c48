fn ops(a, b, c, d) {
  let p = -a ** 2 + b * c @ d - c / 2 % 3
  let q = not a == b or a < b and b >= c or a != d
  let r = (a <= b) and (c > d)
  let s = 1_000 + 0x2a + 3.5 + 1e-5 + 2. + .5 + true + false
  where(q, p, s)
}

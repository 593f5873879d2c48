fn long(x, y,
        z) {
  let s = x +
          y *
          z
  let t = f(x,
            y = 2,
  )
  [s, t,
   s]
}

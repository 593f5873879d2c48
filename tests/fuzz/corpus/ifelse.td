fn pick(x, flag: bool, n: int) {
  let y = if flag { x } else if n > 2 { x * 2 }
  else { x * 3 }
  if n == 0 {
    return y
  }
  while n < 3 { y = y + 1 }
  y
}

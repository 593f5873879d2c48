fn f() {
  let s = "unterminated
  let t = "bad \q escape" $ 'x' && y || !z
  let n = 99999999999999999999 + 1e999 + 1_ + 0x + 12ab
}

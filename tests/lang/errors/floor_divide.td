# `//` on compile-time numbers and symbolic sizes: division by zero and a
# quotient that does not fit are errors, and a size divides exactly or not
# at all (docs/language.md, Expressions).
fn numbers(x: f32[4]) {
  let a = 7 // 0                                   # error@11: division by zero in a compile-time expression
  let b = 7.5 // 0.0                               # error@11: division by zero in a compile-time expression
  let c = (-9223372036854775807 - 1) // -1         # error: integer overflow in a compile-time expression: -9223372036854775808 // -1 does not fit in 64 bits
  x
}

fn sizes(x: f32[N, 4]) {
  let h = x.shape[0] // 2                          # error: N // 2 is not a whole size for every value of the symbols
  # help: restructure the shape so the division is exact
  let ok = zeros([x.shape[0] * 6 // 3])            # exact: 2*N
  x
}

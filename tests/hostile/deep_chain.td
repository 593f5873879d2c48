# A 20 000-deep chain of sin: the kernel emitters once recursed per op
# (a 10^5-deep chain overflowed the stack of --compiled and tdsl build).
fn f(x: f32[4]) {
  let y = x + 1
  for i in 0..20000 { y = sin(y) }
  sum(y)
}

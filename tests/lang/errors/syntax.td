# Syntax errors: the parser reports several per run, each with what it
# expected, and a hint where the fix is obvious.
fn main() {
  print(x y)                           # error@11: unexpected identifier 'y', expected ')' or ','
  let ok1 = 1
  if ok1 = 1 { print("a") }            # error: unexpected '=', expected an operator or '{'
  let ok2 = 2
  let z = [1, 2,, 3]                   # error@17: unexpected ','
  let ok3 = 3
  let w = 3 +* 4                       # error: unexpected '*', expected an expression
  let ok4 = 4
  let chained = 1 < 2 < 3              # error@23: unexpected '<'
}
def foo():                             # error@1: unexpected identifier 'def', expected 'model', 'fn' or 'import'
  pass
model M {
  fn forward(x) { x }
  param w f32[2] = zeros()             # error: unexpected identifier 'f32', expected ':'
}
fn g(a b) { a }                        # error: unexpected identifier 'b', expected ')' or ','
fn h(x) { x ) }                        # error: unexpected ')'
# help: `=` is assignment; use `==` to compare
# help: did you mean 'fn'?
# help: comparisons do not chain: write `a < b and b < c`

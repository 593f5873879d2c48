# A forgotten closing bracket is reported where it was opened, and the
# rest of the file still parses (a statement keyword at the start of a line
# cannot be inside the brackets).
fn f(x) {
  let a = (x + 1                       # error: unclosed '('
  let b = [1, 2                        # error: unclosed '['
  let c = sum(x, axis = 0              # error@14: unclosed '('
  return a
}
# help: add the missing ')'
# help: add the missing ']'

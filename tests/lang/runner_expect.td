# Runner self-test: the `# expect:` lines of a file, in order, must equal
# what `tdsl run` prints (trailing blanks ignored).
fn main() {
  print("runner", "expect")      # expect: runner expect
  let x = ones([2])
  print("sum", sum(x))           # expect: sum 2.0000
}

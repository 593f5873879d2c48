# Runner self-test: `tdsl check` must exit 1 and report every `# error:`
# on its own line (`# error@COL:` also checks the column), nothing else;
# `# help:` must appear in a help text.
model M {
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let y = nosuch + x             # error@13: unknown name 'nosuch'
    if sum(x) > 0 { y } else { -y }  # error: `if` on a tensor
  }
}
# help: where(sum(x) > 0, y, -y)

# `tdsl run` prints what main returns: each output's dtype and shape, then
# its values; with several outputs each is labelled "output i:".
fn main() {
  (arange(3), full([], 2.5), 7)
}
# expect: output 0: i64[3]
# expect: [0, 1, 2]
# expect: output 1: f32[]
# expect: 2.5000
# expect: output 2: i64[]
# expect: 7

# nn.dropout, nn.Dropout and rand with a seed tensor (docs/language.md
# "Random numbers").  A seed tensor is the Philox key at run time and the
# stream is the call site's, so the exact numbers are checked where the
# stream is chosen, in tests/unit/test_compiled.c (random::seed_input_*,
# against tests/data/philox_ref.py); here, what holds for any stream.
import nn

fn main() {
  # a seed the compiler cannot know: computed from other random numbers
  # (rand([4], seed = 1) sums to 2.5673...)
  let s = i64(sum(rand([4], seed = 1)) * 1000.0)
  print("seed", s)
  # expect: seed 2567
  let x = f32(arange(1, 20001)) * 0.001
  let y = nn.dropout(x, 0.25, s)
  print("zeros ~ p", abs(mean(f32(y == 0.0)) - 0.25) < 0.01)
  # expect: zeros ~ p true
  print("kept are x / (1 - p)", sum(where(y != 0.0, y != x / 0.75, false)))
  # expect: kept are x / (1 - p) 0
  print("the mean is kept", abs(sum(y) / sum(x) - 1.0) < 0.02)
  # expect: the mean is kept true
  print("eval is x", sum(nn.dropout(x, 0.25, s, training = false) != x))
  # expect: eval is x 0
  print("p = 0 is x", sum(nn.dropout(x, 0.0, s) != x))
  # expect: p = 0 is x 0
  let drop = nn.Dropout(0.5)
  let keep = nn.Dropout(0.5, training = false)
  print("Dropout(training = false) is x", sum(keep(x, s) != x))
  # expect: Dropout(training = false) is x 0
  # about half of the elements differ between independent masks
  let m1 = drop(x, s) == 0.0
  let m2 = drop(x, s + 1) == 0.0
  print("seeds differ", abs(mean(f32(m1 != m2)) - 0.5) < 0.02)
  # expect: seeds differ true
  # one seed tensor at two call sites: two streams, two masks
  print("call sites differ", abs(mean(f32(m1 != (drop(x, s) == 0.0))) - 0.5) < 0.02)
  # expect: call sites differ true
  # an i32 seed; the rate holds for a seed whose high word is set too
  let u32 = rand([20000], seed = i32(s))
  let big = rand([20000], seed = s * 4294967296 + 5)
  print("uniform", abs(mean(u32) - 0.5) < 0.01, abs(mean(big) - 0.5) < 0.01, min(big) >= 0.0, max(big) < 1.0)
  # expect: uniform true true true true
  let z = randn([20000], seed = s)
  print("normal", abs(mean(z)) < 0.03, abs(mean(z * z) - 1.0) < 0.05)
  # expect: normal true true
  # the dtype is x's
  print("f64", nn.dropout(f64(x), 0.5, s)[0:2])
  # expect: f64 [0.0020, 0.0040] (f64[2])
}

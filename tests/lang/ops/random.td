# rand/randn with seed = s are Philox4x32-10 with key s, stream 0 and
# counter i (runtime/philox.h); the expected values come from an independent
# Python Philox checked against Random123's known-answer vectors.  Unseeded
# calls are only checked for their properties.
fn main() {
  print("u", rand([6], seed = 42))
  # expect: u [0.6130, 0.9877, 0.8259, 0.7296, 0.3264, 0.3148] (f32[6])
  print("u2d", rand([2, 3], seed = 7))
  # expect: u2d [[0.9546, 0.4070, 0.0061],
  # expect:      [0.3902, 0.2899, 0.3386]] (f32[2, 3])
  print("n", randn([5], seed = 3))
  # expect: n [ 0.4726, -1.5380,  0.1599,  1.1118, -0.4037] (f32[5])
  print("prefix", rand([3], seed = 42) == rand([6], seed = 42)[0:3])
  # expect: prefix [true, true, true] (bool[3])
  print("big-seed", rand([2], seed = 4294967297))
  # expect: big-seed [0.6321, 0.9099] (f32[2])
  # Deep in a large tensor (compiled: lanes of the vectorised loop and of
  # its remainder); the equalities are exact, the literals being the
  # 24-bit numbers k / 2^24 from the Python Philox.
  let big = rand([3, 100003], seed = 4294967297)
  print("tail", big[2, 99999:100003])
  # expect: tail [0.5792, 0.3796, 0.1402, 0.7340] (f32[4])
  print("exact", big[2, 99999] == 0.5791909098625183, big[2, 100002] == 0.733959972858429)
  # expect: exact true true
  let wide = rand([3, 100003], seed = 12345678901234567)
  print("wide seed", wide[2, 100002] == 0.48841726779937744, wide[2, 100001] == 0.7096081376075745)
  # expect: wide seed true true
  let a = rand([4000])
  let b = rand([4000])
  print("range", min(a) >= 0.0, max(a) < 1.0)
  # expect: range true true
  print("calls differ", sum(a == b))
  # expect: calls differ 0
  print("mean ~ 0.5", abs(mean(a) - 0.5) < 0.02)
  # expect: mean ~ 0.5 true
  let z = randn([4000], seed = 11)
  print("normal", abs(mean(z)) < 0.05, abs(mean(z * z) - 1.0) < 0.08)
  # expect: normal true true
  print("seeds differ", sum(rand([100], seed = 1) == rand([100], seed = 2)))
  # expect: seeds differ 0
}

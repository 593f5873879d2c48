# print inside the steps of a fold and of a scan (reverse, with a scan
# nested in its step): every step prints, in the order eager mode runs
# them, and a print before or after a scan prints before or after all of
# its steps' lines.  test_compiled.c compares the text printed compiled
# with eager mode's; test_scan.c does the same for a symbolic trip count
# and a built artifact.  Expected values computed by hand in the comments.
fn show(s, x) {
  print("step", x, s)
  s + x
}
fn inner(c, i) {
  print("inner", i)
  (c + i, i)
}
fn outer(c, x) {
  print("outer", x)
  let (s, _) = scan(inner, zeros([], dtype = i64), length = 2)
  print("after", s)
  (c + s, x * 2.0)
}

fn main() {
  print("before")
  # expect: before
  # xs = [[0, 1], [2, 3], [4, 5]]; s goes [0, 0] -> [0, 1] -> [2, 4] -> [6, 9]
  let f = fold(show, zeros([2]), reshape(arange(6.0), [3, 2]))
  # expect: step [0.0000, 1.0000] (f32[2]) [0.0000, 0.0000] (f32[2])
  # expect: step [2.0000, 3.0000] (f32[2]) [0.0000, 1.0000] (f32[2])
  # expect: step [4.0000, 5.0000] (f32[2]) [2.0000, 4.0000] (f32[2])
  print("f", f)
  # expect: f [6.0000, 9.0000] (f32[2])
  # reverse: x = 1 then x = 0; each step's inner scan prints i = 0, 1 and sums to 1
  let (c, ys) = scan(outer, zeros([], dtype = i64), arange(2.0), reverse = true)
  # expect: outer 1.0000
  # expect: inner 0
  # expect: inner 1
  # expect: after 1
  # expect: outer 0.0000
  # expect: inner 0
  # expect: inner 1
  # expect: after 1
  print("end", c, ys)
  # expect: end 2 [0.0000, 2.0000] (f32[2])
}

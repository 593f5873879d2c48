# `import name` finds name.td next to the importing file; its functions and
# models are used as name.item, and its own imports (nn) work too.
import mathutil
import nn

fn main() {
  print("square", mathutil.square(arange(4)))
  # expect: square [0, 1, 4, 9] (i64[4])
  print("norm2", mathutil.norm2(f32(arange(3)) + 2.0))
  # expect: norm2 5.3852
  print("Doubler", mathutil.Doubler(k = 3.0)(f32(arange(3))))
  # expect: Doubler [0.0000, 3.0000, 6.0000] (f32[3])
  print("same nn", nn.softmax(zeros([2])))
  # expect: same nn [0.5000, 0.5000] (f32[2])
}

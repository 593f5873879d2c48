# Slice bounds past either end of a literal-size axis clamp, as in Python,
# for positive and negative steps, up to the ends of int64 (the limits of
# bounds and steps; expected values from numpy).
fn main() {
  let x = arange(4)
  print("x[-10:]", x[-10:])
  # expect: x[-10:] [0, 1, 2, 3] (i64[4])
  print("x[:-10]", x[:-10])
  # expect: x[:-10] [] (i64[0])
  print("x[-10::-1]", x[-10::-1])
  # expect: x[-10::-1] [] (i64[0])
  print("x[2:-10:-1]", x[2:-10:-1])
  # expect: x[2:-10:-1] [2, 1, 0] (i64[3])
  print("x[10::-1]", x[10::-1])
  # expect: x[10::-1] [3, 2, 1, 0] (i64[4])
  print("x[-2:-10:-1]", x[-2:-10:-1])
  # expect: x[-2:-10:-1] [2, 1, 0] (i64[3])
  print("x[1:-10]", x[1:-10])
  # expect: x[1:-10] [] (i64[0])
  print("x[::-1]", x[::-1])
  # expect: x[::-1] [3, 2, 1, 0] (i64[4])
  print("x[3:0:-2]", x[3:0:-2])
  # expect: x[3:0:-2] [3, 1] (i64[2])
  print("x[5:7]", x[5:7])
  # expect: x[5:7] [] (i64[0])
  print("x[-3:10:2]", x[-3:10:2])
  # expect: x[-3:10:2] [1, 3] (i64[2])
  print("x[:100]", x[:100])
  # expect: x[:100] [0, 1, 2, 3] (i64[4])
  let lo = -9223372036854775807 - 1
  let hi = 9223372036854775807
  print("x[lo:]", x[lo:], "x[:lo]", x[:lo], "x[:lo:-1]", x[:lo:-1], "x[hi::-1]", x[hi::-1])
  # expect: x[lo:] [0, 1, 2, 3] (i64[4]) x[:lo] [] (i64[0]) x[:lo:-1] [3, 2, 1, 0] (i64[4]) x[hi::-1] [3, 2, 1, 0] (i64[4])
  print("x[::lo]", x[::lo], "x[::hi]", x[::hi], "x[2::-hi]", x[2::-hi])
  # expect: x[::lo] [3] (i64[1]) x[::hi] [0] (i64[1]) x[2::-hi] [2] (i64[1])
}

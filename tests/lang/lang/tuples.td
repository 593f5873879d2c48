# Tuples group values: functions return them, `let (a, b) = ...`
# destructures, t[i] indexes (negative from the end).
fn minmax(x) { (min(x), max(x)) }
fn divmod(a: int, b: int) { (a / b, a % b) }
fn three() { (1, (2.5, "s"), arange(2)) }

fn main() {
  let (lo, hi) = minmax(arange(5) - 2)
  print("minmax", lo, hi)
  # expect: minmax -2 2
  let (q, r) = divmod(-7, 2)
  print("divmod", q, r)
  # expect: divmod -3.5 1
  let t = three()
  print("index", t[0], t[1][1], t[-1])
  # expect: index 1 s [0, 1] (i64[2])
  let (a, b) = (arange(2), 5)
  let (p, q2) = split(reshape(arange(6), [3, 2]), 2, axis = 1)
  print("mixed", a, b, p, q2)
  # expect: mixed [0, 1] (i64[2]) 5 [[0],
  # expect:                          [2],
  # expect:                          [4]] (i64[3, 1]) [[1],
  # expect:                                            [3],
  # expect:                                            [5]] (i64[3, 1])
}

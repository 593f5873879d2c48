# Operations that need particular dtypes say which and how to convert.
fn f(x: f32[N], i: i64[N], b: bool[N]) {
  let a = b + b                        # error: arithmetic on bool values
  let c = not x                        # error: `not` needs bool values, found f32
  let d = x and b                      # error: `and` needs bool tensors, found f32
  let e = take(x, x)                   # error: take's indices must be integers, found f32
  let g = where(x, x, x)               # error: where's condition must be a bool tensor, found f32
  let h = one_hot(x, 3)                # error: one_hot needs integer indices
  let k = -b                           # error: neg on bool values; convert with f32(x) first
  let m = zeros([2], dtype = "f32")    # error: dtype must be one of f32, f64, i32, i64, bool
  let n = exp(b)                       # error: exp on bool values
  let p = clamp(b, 0, 1)               # error: clamp on bool values; convert with f32(x) first
  let ok = (b + 1, f32(b) * x, i + b, take(x, i % 2), where(b, x, 0.0), clamp(i64(b), 0, 1))
  ok
}
# help: convert first: f32(mask) or i32(mask)
# help: compare first, e.g. not (x > 0), or use x == 0
# help: convert with i64(idx)
# help: compare to get a mask, e.g. where(x > 0, a, b)
# help: write it without quotes: dtype = i64

# Reductions without keepdims of shapes whose sizes are equal: each row's
# value goes to its own element (values by hand: rows 0 1 2 / 3 4 5 / 6 7 8).
fn main() {
  let s = reshape(f32(arange(9)), [3, 3])
  print(sum(s, axis = 1))             # expect: [ 3.0000, 12.0000, 21.0000] (f32[3])
  print(max(s, axis = 1))             # expect: [2.0000, 5.0000, 8.0000] (f32[3])
  print(min(s, axis = 1))             # expect: [0.0000, 3.0000, 6.0000] (f32[3])
  print(argmax(s, axis = 1))          # expect: [2, 2, 2] (i64[3])
  print(sum(s, axis = 0))             # expect: [ 9.0000, 12.0000, 15.0000] (f32[3])
}

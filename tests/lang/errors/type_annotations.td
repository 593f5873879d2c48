# Type annotations on lets, parameters and results are checked: dtype,
# rank and each dimension, with the declared type named.
fn takes_vec(v: f32[3]) { v }
fn takes_int(k: int) { k }
fn takes_pair(x: f32[N, N]) { x }

fn f(x: f32[N, 4], i: i64[N]) -> f32[N, 3] {
  let a: i64[N, 4] = x                 # error: a should be i64[N, 4], found f32[N, 4]
  let b: f32[N] = x                    # error: b should have rank 1 (f32[N]), found f32[N, 4]
  let c: f32[N, 5] = x                 # error: c should be f32[N, 5], found f32[N, 4]: dimension 1 is 4, expected 5
  let d = takes_vec(x[0])              # error: argument 'v' of 'takes_vec' should be f32[3], found f32[4]: dimension 0 is 4, expected 3
  let e = takes_int(x)                 # error: argument 'k' of 'takes_int' should be int, found a tensor f32[N, 4]
  let g = takes_pair(x)                # error: argument 'x' of 'takes_pair' should be f32[N, N], found f32[N, 4]: dimension 1 is 4, expected N
  let h: f32[..., 4] = x               # fine: any leading dimensions
  let k: bool = 3                      # error: k should be bool, found an integer
  let m: f8[N] = i                     # error: unknown dtype 'f8'
  x                                    # error: the result of 'f' should be f32[N, 3], found f32[N, 4]: dimension 1 is 4, expected 3
}
# help: convert explicitly with i64(...)
# help: dtypes are f32, f64, i32, i64, bool, f16 and bf16

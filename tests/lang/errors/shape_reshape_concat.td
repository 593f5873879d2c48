# reshape checks element counts (as polynomials in the symbolic sizes);
# concat, stack and split check the other dimensions and even division.
fn f(x: f32[N, 6], y: f32[N, 4], t: f32[B, T, D]) {
  let a = reshape(x, [N, 4])             # error: cannot reshape f32[N, 6] into f32[N, 4]: the element counts differ
  let b = reshape(x, [-1, 4])            # error: cannot reshape f32[N, 6]: 6*N elements do not divide evenly by 4
  let c = reshape(t, [B * T, T])         # error: cannot reshape f32[B, T, D] into f32[B*T, T]
  let d = reshape(x, [-1, -1])           # error: only one dimension can be -1
  let e = concat([x, y], axis = 0)       # error: concat along axis 0: f32[N, 4] does not fit f32[N, 6]
  let g = stack([x, y])                  # error: stack needs tensors of one shape: f32[N, 6] and f32[N, 4] differ
  let h = split(x, 4, axis = 1)          # error: cannot split a dimension of size 6 into 4 equal parts
  let k = split(x, 2)                    # error: cannot split a dimension of size N into 2 equal parts
  let ok = (reshape(t, [B * T, D]), concat([x, y], axis = 1), split(x, 3, axis = -1))
  ok
}

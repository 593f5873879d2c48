# Size and index arithmetic is exact or an error at the operation that
# overflows, never a wrong size: sizes are polynomials with 64-bit
# coefficients, at most 16 symbols in a term and 256 terms, and every
# tensor's element count times 8 bytes must fit in 64 bits.
fn literal_sizes(x: f32[4]) {
  let a = x[-9223372036854775807 - 1]              # error: index -9223372036854775808 is out of range for a dimension of size 4
  let b = reshape(x, [2 ** 32, 2 ** 32, 0])        # error: size arithmetic overflows: the element count of f32[4294967296, 4294967296, 0] does not fit
  let c = reshape(x, [-1, 2 ** 62, 4])             # error: size arithmetic overflows: the product of the sizes given to reshape does not fit
  let d = zeros([2 ** 61])                         # error: size arithmetic overflows: the element count of f32[2305843009213693952] times 8
  let big = zeros([2 ** 60 - 1])
  let e = concat([big, big, big, big, big, big, big, big, big])  # error: size arithmetic overflows: concat along axis 0: 9223372036854775800 + 1152921504606846975 does not fit
  let h = x
  for i in 0..70 { h = concat([h, h]) }            # error: size arithmetic overflows: the element count of f32[1152921504606846976] times 8
  x
}

fn symbolic(x: f32[A, B, C, D, E, F, G, H], y: f32[I, J, K, L, M, O, P, Q], z: f32[R]) {
  let k = A * 2 ** 62 * 4                          # error: size arithmetic overflows: 4611686018427387904*A * 4 does not fit
  let ok = A * B * C * D * E * F * G * H * I * J * K * L * M * O * P * Q    # 16 symbols fit in a term
  let s = ok * R                                   # error: size arithmetic overflows: A*B*C*D*E*F*G*H*I*J*K*L*M*O*P*Q * R does not fit
  let t = (A + 1) * (B + 1) * (C + 1) * (D + 1) * (E + 1) * (F + 1) * (G + 1) * (H + 1) * (I + 1)  # error: size arithmetic overflows: this product of sizes does not fit
  let u = reshape(x, [A, B, C, D, E, F, G * H])    # rank 8 and beyond: fine
  let v = zeros([R * 2 ** 61, 1])                  # error: size arithmetic overflows: the element count of f32[2305843009213693952*R, 1] times 8
  x
}

fn compile_time_integers(x: f32[1]) {
  let a = 2 ** 63                                  # error: integer overflow in a compile-time expression: 2 ** 63 does not fit in 64 bits
  let b = 3037000500 * 3037000500                  # error: integer overflow in a compile-time expression: 3037000500 * 3037000500
  let c = (-9223372036854775807 - 1) % -1          # error: integer overflow in a compile-time expression: -9223372036854775808 % -1 overflows
  let d = -9223372036854775807 - 2                 # error: integer overflow in a compile-time expression: -9223372036854775807 - 2
  let e = 9223372036854775807 + 1                  # error: integer overflow in a compile-time expression: 9223372036854775807 + 1
  let f = -(-9223372036854775807 - 1)              # error: integer overflow in a compile-time expression: -(-9223372036854775808)
  let ok = (-9223372036854775807 - 1, 2 ** 62 + (2 ** 62 - 1), 7 % -1, (-2) ** 63, (-1) ** 1000001)
  (ok, x)
}

# f16 and bf16 (docs/language.md, "Half precision"): values are stored in
# 16 bits and every operation computes in f32 and rounds its result once,
# to nearest even; reductions and matmul accumulate in f32 and round once.
# Expected values worked out by hand (bf16 keeps 8 significant bits, f16
# 11, f16's largest finite value is 65504) and checked with numpy.float16.
model Half() {
  param w: bf16[2] = full(0.1)
  param v: f16[2] = full(0.1)
  fn forward(x: bf16[N, 2]) -> bf16[N, 2] {
    x * w
  }
}

fn main() {
  let h = f16(arange(4))
  let b = bf16(arange(4))
  print("f16 + bf16", h + b)
  # expect: f16 + bf16 [0.0000, 2.0000, 4.0000, 6.0000] (f32[4])
  print("bf16 + f32", b + f32(arange(4)))
  # expect: bf16 + f32 [0.0000, 2.0000, 4.0000, 6.0000] (f32[4])
  print("f16 + f64", h + f64(arange(4)))
  # expect: f16 + f64 [0.0000, 2.0000, 4.0000, 6.0000] (f64[4])
  print("i32 + bf16", i32(arange(4)) + b)
  # expect: i32 + bf16 [0.0000, 2.0000, 4.0000, 6.0000] (bf16[4])
  print("bool * f16", (arange(4) > 1) * h)
  # expect: bool * f16 [0.0000, 0.0000, 2.0000, 3.0000] (f16[4])
  print("bf16 * 2.5", b * 2.5)
  # expect: bf16 * 2.5 [0.0000, 2.5000, 5.0000, 7.5000] (bf16[4])
  print("f16 + 1", h + 1)
  # expect: f16 + 1 [1.0000, 2.0000, 3.0000, 4.0000] (f16[4])
  print("f16 / 3", h / 3)
  # expect: f16 / 3 [0.0000, 0.3333, 0.6665, 1.0000] (f16[4])
  print("bf16 / 3", b / 3)
  # expect: bf16 / 3 [0.0000, 0.3340, 0.6680, 1.0000] (bf16[4])
  print("f32(bf16(0.1))", f32(bf16(f32(arange(4)) * 0.1)))
  # expect: f32(bf16(0.1)) [0.0000, 0.1001, 0.2002, 0.3008] (f32[4])

  # ties go to even: 257 -> 256, 259 -> 260, 261 -> 260 in bf16 (255 is exact);
  # 2049 -> 2048, 2051 -> 2052, 2053 -> 2052, 2055 -> 2056 in f16
  let t = f32(arange(4)) * 2.0 + 255.0
  print("bf16 ties", bf16(t))
  # expect: bf16 ties [255.0000, 256.0000, 260.0000, 260.0000] (bf16[4])
  print("f16 ties", f16(t + 1794.0))
  # expect: f16 ties [2048.0000, 2052.0000, 2052.0000, 2056.0000] (f16[4])

  # one rounding per op: (256 + 1) + 1 stays 256 in bf16; a sum or a
  # matmul accumulates in f32 and gives 258
  let c = bf16(full([3], 1.0) + where(arange(3) == 0, 255.0, 0.0))
  print("c", c)
  # expect: c [256.0000,   1.0000,   1.0000] (bf16[3])
  print("step by step", c[0] + c[1] + c[2])
  # expect: step by step 256.0000
  print("sum", sum(c), mean(c))
  # expect: sum 258.0000 86.0000
  print("matmul", bf16(full([3], 1.0)) @ c)
  # expect: matmul 258.0000

  # overflow, subnormals and NaN in f16
  print("f16 range", f16(f32(arange(3)) + 65518.0))
  # expect: f16 range [65504.0000, 65504.0000,        inf] (f16[3])
  print("f16 tiny", f16(f32(arange(4)) * 0.0000000298023223876953125))
  # expect: f16 tiny [0.0000e+00, 0.0000e+00, 5.9605e-08, 1.1921e-07] (f16[4])
  print("nan", log(h - 1.0))
  # expect: nan [   nan,   -inf, 0.0000, 0.6934] (f16[4])

  # parameters are initialised with their values rounded to the dtype
  let m = Half()
  print("params", m.w, m.v)
  # expect: params [0.1001, 0.1001] (bf16[2]) [0.1000, 0.1000] (f16[2])
  print("forward", m(reshape(bf16(arange(4)), [2, 2])))
  # expect: forward [[0.0000, 0.1001],
  # expect:          [0.2002, 0.3008]] (bf16[2, 2])
}

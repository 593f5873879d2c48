# cuda_stress.td - what tests/tsan/cuda_stress.c runs on several threads at
# once, through `tdsl run --device cuda`'s runtime (td_cuda_run) and through
# a CUDA artifact built from this file: a pointwise chain, a row reduction,
# a matmul and a softmax with a print.  The names are distinct and none is
# a prefix of another (the stand-in driver picks a module's emulation by
# the name NVRTC writes into it).
import nn

fn stress_a(x: f32[N, 16]) -> f32[N, 16] { relu(x * 2.0 + 1.0) - x }

fn stress_b(x: f32[N, 16]) -> f32[N] { sum(exp(x), axis = 1) }

fn stress_c(x: f32[N, 16], w: f32[16, 8]) -> f32[N, 8] { tanh(x @ w) }

fn stress_d(x: f32[N, 16]) -> f32[N, 16] {
  print("stress_d rows", x.shape[0], "first", x[0, 0])
  nn.softmax(x, axis = -1)
}

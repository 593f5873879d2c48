# cpu_stress.td - what tests/tsan/cpu_stress.c runs on several threads at
# once: eagerly (td_interp_run), compiled (td_compile / td_compiled_run,
# with and without the compile cache) and through a CPU artifact built
# from this file.  Two symbolic sizes; a pointwise chain, a row reduction,
# a matmul of two inputs, a softmax with a print, and a model whose
# weights are parameters (prepacked by the compiled code and the
# artifact; replaced by load_weights).
import nn

fn cs_point(x: f32[N, M]) -> f32[N, M] { relu(x * 2.0 + 1.0) - exp(-x * x) }

fn cs_rows(x: f32[N, M]) -> f32[N] { sum(exp(x), axis = 1) }

fn cs_mm(a: f32[N, M], b: f32[M, 24]) -> f32[N, 24] { tanh(a @ b) }

fn cs_soft(x: f32[N, M]) -> f32[N, M] {
  print("cs_soft rows", x.shape[0], "cols", x.shape[1], "first", x[0, 0])
  nn.softmax(x, axis = -1)
}

model CsNet {
  fc1 = nn.Linear(16, 32)
  fc2 = nn.Linear(32, 8)
  fn forward(x: f32[N, 16]) -> f32[N, 8] { tanh(fc2(relu(fc1(x)))) }
}

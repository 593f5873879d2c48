# N*N*N*N + 4 wraps int64 at N = 65536: it once matched a 4-element y and
# read heap bytes (compiled), segfaulted (the built executable) or hung.
fn f(x: f32[N], y: f32[N * N * N * N + 4]) { y[0:4] * 2 }

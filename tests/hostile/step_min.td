# x[::-2^63] once segfaulted the shape checker; it is x[3:4] (Python's rule).
fn f(x: f32[4]) { x[::(-9223372036854775807 - 1)] + 1 }

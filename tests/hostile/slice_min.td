# x[-2^63:] once segfaulted the shape checker; it is all of x.
fn f(x: f32[4]) { x[(-9223372036854775807 - 1):] + 1 }

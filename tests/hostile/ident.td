# The entry of the input-file cases (hostile.sh writes the files).
fn f(x: f32[N]) { x * 2 }

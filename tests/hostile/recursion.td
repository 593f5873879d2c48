fn f(x) { f(x) }
fn main() { f(1) }

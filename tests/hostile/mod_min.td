# (-2^63) % -1 once said "modulo by zero".
fn main() { print((-9223372036854775807 - 1) % -1) }

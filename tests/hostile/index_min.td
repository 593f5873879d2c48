# x[-2^63] once segfaulted the shape checker (negating the index).
fn main() {
  let x = zeros([4])
  x[-9223372036854775807 - 1]
}

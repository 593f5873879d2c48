# What a seed may be: a compile-time int or a rank-0 i32 / i64 tensor; and
# error(), with which nn.dropout refuses p outside [0, 1).
fn main() {
  let a = rand([3], seed = ones([2], dtype = i64))    # error: a seed tensor must be a rank-0 i32 or i64, found i64[2]
  let b = randn([3], seed = ones([], dtype = f32))    # error: a seed tensor must be a rank-0 i32 or i64, found f32[]
  let c = rand([3], seed = 1.5)                       # error: seed must be an integer or a rank-0 integer tensor
  error("this program is not finished")               # error@3: this program is not finished
  error(3)                                            # error: error() takes a string, found an integer
}

# The fix for log_inside_forward.td: return the value (or print it: print
# never forces a sync; in compiled code its values become extra outputs).
import nn

model ReturnTensorForLog {
  h = nn.Linear(16, 1)
  fn forward(x: f32[N, 16]) -> (f32[N, 1], f32[]) {
    let y = h(x)
    print("mean", mean(y))
    (y, mean(y))
  }
}

fn main() {
  let m = ReturnTensorForLog()
  let (y, avg) = m(randn([8, 16], seed = 0))
  print("returned mean", avg)
}

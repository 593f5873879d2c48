# Two instances of one model get different initial weights (like two
# nn.Linear in PyTorch); one instance keeps its weights for every call.
import nn

fn main() {
  let a = nn.Linear(4, 3)
  let b = nn.Linear(4, 3)
  print(max(abs(a.weight - b.weight)) > 0.0)
  let x = ones([2, 4])
  print(max(abs(a(x) - a(x))) == 0.0)
}
# expect: true
# expect: true

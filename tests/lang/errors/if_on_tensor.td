# `if` on a tensor's value is the seed's first mistake (one graph per branch
# in PyTorch).  tdsl rejects it wherever it appears and shows the where()
# rewrite when both branches are single expressions.
import nn

fn pick(x) {
  if mean(x) > 0.0 { x } else { -x }          # error: `if` on a tensor
}

model Gate {
  h = nn.Linear(4, 4)
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let y = h(x)
    if rand([1]) > 0.5 { y + 1 } else { y - 1 }  # error@8: `if` on a tensor
  }
  fn nested(x: f32[N, 4]) -> f32[N, 4] {
    if true {
      if sum(x) > 0.0 { print("positive") }  # error: `if` on a tensor: a tensor's value is known only when the graph runs, so the graph would split
    }
    x
  }
  fn chain(x: f32[N, 4]) -> f32[N, 4] {
    if false { x } else if max(x) > 1.0 { x * 2.0 } else { x }  # error@28: `if` on a tensor: a tensor's value is known only when the graph runs
  }
}

fn main() {
  let x = ones([3])
  print(pick(x))
  let flag = x[0] == 1.0
  let z = if flag { 1 } else { 2 }          # error: `if` on a tensor
}
# help: where(mean(x) > 0.0, x, -x)
# help: where(rand([1]) > 0.5, y + 1, y - 1)
# help: where(max(x) > 1.0, x * 2.0, x)
# help: choose with where(cond, a, b), which keeps one graph: compute both branches

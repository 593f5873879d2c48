# models.td - the models the Python package's tests (python/tests/) build
# with `tdsl build` and call from numpy.
import nn

# A two-layer perceptron with PyTorch's parameter names (fc1.weight, ...).
model Tiny {
  fc1 = nn.Linear(4, 8)
  fc2 = nn.Linear(8, 3)
  fn forward(x: f32[N, 4]) -> f32[N, 3] {
    fc2(relu(fc1(x)))
  }
  # the scores and the best class of each row: two outputs
  fn predict(x: f32[N, 4]) -> (f32[N, 3], i64[N]) {
    let y = forward(x)
    (y, argmax(y, axis = -1))
  }
  # two inputs sharing N; the output's rows are a polynomial of it
  fn pair(a: f32[N, 4], b: f32[N, 4]) -> f32[2*N, 4] {
    concat([a, b], axis = 0)
  }
}

fn scale64(x: f64[B, T]) -> f64[B, T] { x * 2.0 }

fn twice16(x: f16[K]) -> f16[K] { x + x }

fn count(x: i64[K], keep: bool[K]) -> i64[] { sum(where(keep, x, 0)) }

fn shout(x: f32[K]) -> f32[K] {
  print("total", sum(x))
  x + 1.0
}

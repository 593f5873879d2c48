# lib.td - a small library that commands.session loads with :load.
import nn

fn square(t) { t * t }

model Twice(n: int) {
  param s: f32[n] = full(2.0)
  fn forward(x: f32[..., n]) -> f32[..., n] { x * s }
}

fn main() {
  print("main of lib.td", square(arange(1, 4)))
}

# w1_seed.td - W1 (per-call latency) models that bench/ cannot take from
# examples/seed/ as they are.
#
# Simple, GoodWhere, GoodVectorized and GoodDynamic are timed straight from
# examples/seed/*.td.  examples/seed/return_tensor_for_log.td also prints
# the mean inside forward; the peers' ReturnTensorForLog (../shared/peers/
# w1_seed.py) does not, so the timed version here is the same model without
# the print.  OpChain is not a seed model: 100 dependent `x + 1` on [4, 16],
# whose time per call divided by 100 is the interpreter's per-op overhead.
import nn

model ReturnTensorForLog {
  h = nn.Linear(16, 1)
  fn forward(x: f32[N, 16]) -> (f32[N, 1], f32[]) {
    let y = h(x)
    (y, mean(y))
  }
}

fn op_chain(x: f32[4, 16]) -> f32[4, 16] {
  let y = x
  for i in 0..100 {
    y = y + 1.0
  }
  y
}

# optim.td - optimizers, learning-rate schedules and gradient clipping,
# written in tdsl itself.
#
# An optimizer is a model over another model's parameters: its state (Adam's
# moments, SGD's momentum buffer, the step count) is declared with
# state_like/buffer, so it is named after the parameter it belongs to
# (`net.fc1.weight.exp_avg`) and saved in the same safetensors file as the
# weights.  opt.step(grads) writes the new parameters and state with
# assign(): inside a training step that is part of the step's one graph, so
# the compiler fuses the update with the backward that produced the
# gradients.  grads is the list grad(f, wrt = net) returns, in the order of
# params(net).
#
#   model Train {
#     net = MLP()
#     opt = optim.AdamW(net, lr = 0.001)
#     fn loss(x, y) { nn.cross_entropy(net(x), y) }
#     fn step(x: f32[B, 784], y: i64[B]) -> f32[] {
#       let (l, g) = value_and_grad(loss, wrt = net)(x, y)
#       opt.step(g)
#       l
#     }
#   }
#
# The formulas are PyTorch's (torch.optim.SGD, Adam, AdamW with their
# default options), so a recipe ported from PyTorch trains the same way.
# The step count t starts at 1 on the first step.

# ---- learning-rate schedules: factor(t) multiplies the base rate ----

# The base rate at every step.
model Constant {
  fn factor(t) { t * 0 + 1 }
}

# The rate times gamma every step_size steps (torch.optim.lr_scheduler.StepLR
# stepped once per optimizer step).
model StepLR(step_size: int, gamma: float = 0.1) {
  fn factor(t) { gamma ** floor((t - 1) / step_size) }
}

# Linear warm-up from base/warmup to the base rate over `warmup` steps,
# then a half cosine down to min_factor * base at step `total` (and that
# rate after it).
model CosineWarmup(warmup: int, total: int, min_factor: float = 0.0) {
  fn factor(t) {
    let w = maximum(warmup, 1)
    let progress = minimum(maximum((t - warmup) / maximum(total - warmup, 1), 0.0), 1.0)
    let cosine = min_factor + (1 - min_factor) * 0.5 * (1 + cos(3.141592653589793 * progress))
    where(t <= warmup, t / w, cosine)
  }
}

# ---- optimizers ----

# Stochastic gradient descent with momentum, dampening, Nesterov momentum and
# (coupled, L2) weight decay, as torch.optim.SGD.
model SGD(net, lr: float = 0.01, momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
          nesterov: bool = false, schedule = Constant()) {
  momentum_buffer = if momentum != 0.0 { state_like(net, "momentum_buffer") } else { [] }
  num_steps = buffer([])
  fn step(grads) {
    let ps = params(net)
    let t = num_steps + 1
    let rate = lr * schedule.factor(t)
    for i in 0..len(ps) {
      let p = ps[i]
      let g = if weight_decay != 0.0 { grads[i] + weight_decay * p } else { grads[i] }
      if momentum != 0.0 {
        # the first step's buffer is the gradient itself, as in PyTorch
        let b = where(t == 1, g, momentum * momentum_buffer[i] + (1 - dampening) * g)
        assign(momentum_buffer[i], b)
        g = if nesterov { g + momentum * b } else { b }
      }
      assign(p, p - rate * g)
    }
    assign(num_steps, t)
  }
}

# Adam (torch.optim.Adam): weight_decay adds weight_decay * p to the
# gradient (L2); use AdamW for decoupled weight decay.
model Adam(net, lr: float = 0.001, beta1: float = 0.9, beta2: float = 0.999, eps: float = 0.00000001,
           weight_decay: float = 0.0, schedule = Constant()) {
  exp_avg = state_like(net, "exp_avg")
  exp_avg_sq = state_like(net, "exp_avg_sq")
  num_steps = buffer([])
  fn step(grads) {
    let ps = params(net)
    let t = num_steps + 1
    let rate = lr * schedule.factor(t)
    let bc1 = 1 - beta1 ** t
    let bc2 = 1 - beta2 ** t
    for i in 0..len(ps) {
      let p = ps[i]
      let g = if weight_decay != 0.0 { grads[i] + weight_decay * p } else { grads[i] }
      let m = beta1 * exp_avg[i] + (1 - beta1) * g
      let v = beta2 * exp_avg_sq[i] + (1 - beta2) * g * g
      assign(exp_avg[i], m)
      assign(exp_avg_sq[i], v)
      assign(p, p - rate * (m / bc1) / (sqrt(v / bc2) + eps))
    }
    assign(num_steps, t)
  }
}

# AdamW (torch.optim.AdamW): Adam with decoupled weight decay, p is first
# scaled by 1 - rate * weight_decay.
model AdamW(net, lr: float = 0.001, beta1: float = 0.9, beta2: float = 0.999, eps: float = 0.00000001,
            weight_decay: float = 0.01, schedule = Constant()) {
  exp_avg = state_like(net, "exp_avg")
  exp_avg_sq = state_like(net, "exp_avg_sq")
  num_steps = buffer([])
  fn step(grads) {
    let ps = params(net)
    let t = num_steps + 1
    let rate = lr * schedule.factor(t)
    let bc1 = 1 - beta1 ** t
    let bc2 = 1 - beta2 ** t
    for i in 0..len(ps) {
      let p = ps[i]
      let g = grads[i]
      let m = beta1 * exp_avg[i] + (1 - beta1) * g
      let v = beta2 * exp_avg_sq[i] + (1 - beta2) * g * g
      assign(exp_avg[i], m)
      assign(exp_avg_sq[i], v)
      assign(p, p * (1 - rate * weight_decay) - rate * (m / bc1) / (sqrt(v / bc2) + eps))
    }
    assign(num_steps, t)
  }
}

# ---- gradient clipping ----

# sqrt of the sum of squares of every element of every tensor of xs.
fn global_norm(xs) {
  let s = 0.0
  for x in xs { s = s + sum(x * x) }
  sqrt(s)
}

# The gradients scaled so that their global norm is at most max_norm
# (torch.nn.utils.clip_grad_norm_: the factor is max_norm / (norm + 1e-6),
# capped at 1).
fn clip_grad_norm(grads, max_norm: float) {
  let scale = minimum(max_norm / (global_norm(grads) + 0.000001), 1.0)
  [g * scale for g in grads]
}

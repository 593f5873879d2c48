# Parameters need a tensor type with sizes known when the model is built
# and one of the initialisers zeros(), ones(), full(v), uniform(lo, hi),
# normal(mean, std); uniform/normal are not for computations.
model Bad(d: int = 4) {
  param a: f32[d] = rand([d])                   # error: a param's initialiser must be zeros(), ones(), full(v), uniform(lo, hi) or normal(mean, std)
  param b: f32[d] = uniform(0.0)                # error: a param's initialiser must be
  param c: f32[d] = full(ones([1]))             # error: tensors never leave the graph: a tensor's value cannot be used as an initialiser argument
  param e: int = zeros()                        # error: a param needs a tensor type like f32[out, in]
  param g: f32[d] = zeros() if 1                # error: a param's condition must be a compile-time bool
  param h: f32[d] = normal(0.0, 1.0)
  fn forward(x: f32[N, 4]) -> f32[N, 4] { x * h }
}

model Computes {
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let r = uniform(-1.0, 1.0)                  # error: uniform() initialises a param; it is only allowed after `param name: type =`
    x * r
  }
}

model Sym {
  fn forward(x: f32[N, 4]) -> f32[N, 4] {
    let inner = Holder(x.shape[0])
    x
  }
}

model Holder(n: int) {
  param w: f32[n] = zeros()                     # error: a param's shape must be known when the model is built
}
# help: e.g. param weight: f32[out, in] = uniform(-0.1, 0.1)
# help: for random tensors inside a computation use rand(shape) or randn(shape)
# help: use literals or model parameters for weight shapes

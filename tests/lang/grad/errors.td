# The errors of grad and value_and_grad, and of the state builtins.
fn vec(x) { x * 2 }
fn count(x) { sum(x) }
fn f(x) { sum(x) }

model Opt(net) {
  s = state_like(net, "exp.avg")     # error: state_like's name must be a non-empty string without dots
  fn go(x) { buffer([2]) }           # error: buffer() declares a model's state; it is only allowed as a model member
}

model Net {
  param w: f32[2] = ones()
  fn forward(x) { sum(x * w) }
}

fn main() {
  let x = ones([3])
  let a = grad(vec)(x)               # error: grad needs a function that returns a scalar float loss, found a tensor f32[3]
  let b = grad(count)(arange(3))     # error: grad with respect to argument 0 needs a float tensor
  let c = grad(f, argnums = 2)(x)    # error: grad: argnums names argument 2, but the call passes 1 positional argument
  let d = grad(x)                    # error: grad() needs a function to differentiate, found a tensor
  let e = grad(f, wrt = 3)           # error: wrt must be a model instance (its parameters), found an integer
  let o = Opt(Net())
  let g = o.go(x)
  let h = value_and_grad(f, has_aux = true)(x)   # error: the function must return a tuple (loss, aux...)
  x
}
# help: reduce the loss to one value, e.g. mean(...) or sum(...)

# Loops whose trip count depends on runtime values cannot be unrolled into
# one graph (the seed's third mistake): for over a tensor, while, a range
# with a symbolic or tensor bound.
model Bad {
  fn forward(x: f32[N, 16]) -> f32[N, 16] {
    let out = x
    for i in arange(5) {                        # error: a loop over the values of a tensor
      out = out + i
    }
    for i in 0..N { out = out * 2.0 }           # error: this loop runs N times, and N is bound at call time
    for r in x { out = out + r }                # error: a loop over the values of a tensor
    while sum(out) > 0.0 { out = out - 1.0 }    # error: a while loop's trip count depends on runtime values
    let s = [out for i in 0..x.shape[0]]        # error: this loop runs N times
    for i in 0..i64(sum(x)) { out = out + 1.0 } # error: a loop bound is a tensor
    out
  }
}
# help: write out + sum(arange(5))
# help: instead of adding each r of x in turn, write out + sum(x, axis = 0)
# help: the loop carries out from step to step (a recurrence): a scan runs it as one loop in the graph, for every N: fn step(out, i) { out = out * 2.0; out } out = fold(step, out, length = N)
# help: vectorise: operate on the whole axis at once
# help: or loop a compile-time number of times: for i in 0..n { ... }

# Entry points marked with `export` (docs/language.md, "Entry points").
# (`export model` is a syntax error: export_model.td; entry points without
# `export`: entry_points.td)

# an exported function's arguments come from .npy files: each needs a tensor type
export fn untyped(x) { x }   # error@19: entry point argument 'x' needs a tensor type
export fn sized(x: f32[N], k: int) { x * k }   # error: entry point argument 'k' must be a tensor, not int
export fn ranked(x: f32[..., 4]) { x }   # error: an entry point argument needs a fixed rank

# an exported method's model is made with its parameters' defaults
model NoDefault(T: int) {   # error: missing argument 'T' in the call of 'NoDefault'
  export fn forward(x: f32[T]) { x }
}

# an error in a helper is reported where it is, once per entry point that
# reaches it (each with a note naming that entry point: see test_cli.c)
fn widen(x: f32[N, 4]) -> f32[N, 4] { x @ ones([3, 4]) }   # error: the inner sizes 4 and 3 differ
export fn a(x: f32[N, 4]) { widen(x) }

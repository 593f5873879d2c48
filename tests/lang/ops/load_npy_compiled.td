# load("FILE.npy"): NumPy's np.load while the program is elaborated.  The
# tensor takes the file's dtype and shape (from its header), so what follows
# is checked against them; the data is read when the graph runs.  Paths are
# relative to the working directory (the runner's is the source tree).
# tests/data/f32_2x3.npy holds [[0.5, -1.25, 2], [3, 4.75, -6]] (float32),
# tests/data/i64_3.npy [0, 1, 2] (int64); the values below are by hand.
# The same as load_npy.td, through the compiler (--compiled).
# args: --compiled
fn main() {
  let a = load("tests/data/f32_2x3.npy")
  let i = load("tests/data/i64_3.npy")
  print("a", a)
  # expect: a [[ 0.5000, -1.2500,  2.0000],
  # expect:    [ 3.0000,  4.7500, -6.0000]] (f32[2, 3])
  print("shape", a.shape[0], a.shape[1], i.shape[0])
  # expect: shape 2 3 3
  print("rows", sum(a, axis = 1), a @ f32(i))
  # expect: rows [1.2500, 1.7500] (f32[2]) [ 2.7500, -7.2500] (f32[2])
  print("i", i * 10 + 1)
  # expect: i [ 1, 11, 21] (i64[3])
  a.T * 2
  # expect: f32[3, 2]
  # expect: [[  1.0000,   6.0000],
  # expect:  [ -2.5000,   9.5000],
  # expect:  [  4.0000, -12.0000]]
}

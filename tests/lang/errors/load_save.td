# load() and save(): a file name is a string, the file must open as a .npy
# (the messages of --in), bf16 has no .npy dtype, and neither may be inside
# a scan's step function.
fn bad_name() {
  load(3)            # error: load() takes a file name (a string), found an integer
}
fn missing() {
  load("tests/data/no_such_file.npy")   # error: tests/data/no_such_file.npy: cannot open
  # help: a relative path is read from the working directory
}
fn not_npy() {
  load("tests/lang/errors/load_save.td")   # error: tests/lang/errors/load_save.td: not a .npy file
}
fn bf16_save() {
  save("out.npy", bf16(ones([2])))   # error: save() cannot write a bf16 tensor
  # help: save f32(t)
}
fn save_list() {
  save("out.npy", [1, 2])   # error: save() writes a tensor, found a list
}
fn step(c, t) { (c + load("tests/data/i64_3.npy"), c) }   # error: load() inside a scan's step function
fn in_scan() {
  scan(step, zeros([3], dtype = i64), length = 2)
}
fn save_step(c, t) {
  save("out.npy", c)   # error: save() inside a scan's step function
  (c, c)
}
fn save_in_scan() {
  scan(save_step, zeros([3]), length = 2)
}
fn main() {
  bad_name()
  missing()
  not_npy()
  bf16_save()
  save_list()
  in_scan()
  save_in_scan()
}

# index_add and scatter_add check their indices when the graph runs, as
# take does (index_add_range_compiled.td: the same, compiled): an index
# outside -size..size-1 stops the run at the call's line.
# cmd: run
fn main() {
  let idx = tensor([0, 3, 1])
  print("ok", index_add(zeros([3]), idx - 1, ones([3])))
  print(index_add(zeros([3, 2]), idx, ones([3, 2])))    # error: take: index 3 is out of range for axis 0 of size 3
}
# expect: ok [1.0000, 0.0000, 2.0000] (f32[3])

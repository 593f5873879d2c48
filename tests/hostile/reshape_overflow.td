# Overflowed signed arithmetic in lang/ir.c (UBSan).
fn main() { reshape(zeros([4]), [4294967296, 4294967296, 0]) }

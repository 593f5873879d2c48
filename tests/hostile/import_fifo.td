# Imports fifo_mod, which the test makes a FIFO: opening it must not block.
import fifo_mod
fn main() { fifo_mod.x() }

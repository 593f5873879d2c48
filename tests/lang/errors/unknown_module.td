# An import that cannot be found names the places searched.
import nn
import no_such_module                  # error: cannot find module 'no_such_module'

fn main() { print(nn.softmax(zeros([2]))) }
# help: looked for no_such_module.td next to this file, in $TDSL_PATH and in the installed stdlib

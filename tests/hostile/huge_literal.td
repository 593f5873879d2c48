# Literals past int64 and double: errors at the literal, not wrapped values.
fn f(x: f32[4]) { x + 99999999999999999999 + 1e999 }

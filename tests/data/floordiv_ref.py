#!/usr/bin/env python3
"""Reference values for tests/lang/ops/floor_divide.td: Python's own //
(CPython's float and int floor division, which numpy.floor_divide
follows), and numpy's float32 floor_divide where numpy is installed.
Prints one line per `print` of the test, as Python lists."""
import math

n = [2 * i - 7 for i in range(7)]
print("int2", [v // 2 for v in n])
print("intm2", [v // -2 for v in n])
print("int3", [v // 3 for v in n], [v // -3 for v in n])
print("rev", [13 // v for v in n])
print("mixed", [v // 2.5 for v in n], [v // 2.0 for v in n])
f = [v / 4 for v in n]
print("f", f)
print("f05", [v // 0.5 for v in f])
print("fm075", [v // -0.75 for v in f])
print("tenths", [1.0 // 0.1, -1.0 // 0.1, 0.3 // 0.1, 7.0 // 0.7])
inf = math.inf
print("special", [1.0 // inf, -1.0 // inf, -0.0 // 1.0, 0.0 // -1.0])
print("const", 7 // 2, -7 // 2, 7.5 // 2, -7.5 // 2.0, 2 ** 62 // -3)
print("tenth", 1 // 0.1 == 9.0, -1 // 0.1 == -10.0, 0.3 // 0.1 == 2.0)
print("shape", 7 // 2, -9 // -4)
try:
    import numpy as np
    a = np.array(f, dtype=np.float32)
    print("np f32 f05", np.floor_divide(a, np.float32(0.5)).tolist())
    print("np f32 fm075", np.floor_divide(a, np.float32(-0.75)).tolist())
    t = np.float32(0.1)
    print("np f32 tenth", np.floor_divide(np.array([1, -1], np.float32), t).tolist())
    with np.errstate(all="ignore"):
        print("np zero", np.floor_divide(np.array([1.0, -1.0, 0.0, 5.0, inf]), np.array([0.0, 0.0, 0.0, 1.0, 1.0])).tolist())
except ImportError:
    print("(numpy absent: float32 and division-by-zero lines not checked here)")

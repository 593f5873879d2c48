"""compare_refs.py - tdsl's outputs against PyTorch reference tensors, for
tests/grad_models.sh and tests/conv_refs.sh.

  python3 compare_refs.py GRADS WEIGHTS WORKDIR LEADING

GRADS is a safetensors file of float64 references, WEIGHTS the weights
file the model loaded; WORKDIR holds tdsl's outputs out0.npy, out1.npy ...:
first the entries named by LEADING (comma separated, e.g. "loss" or
"loss,y"), then one gradient per weight in the weights file's order (the
models' declaration order).  Each must match to 1e-5, relative to the
largest magnitude of its reference (at least 1/1000 of the largest
gradient, for one that is zero in exact arithmetic).  Prints a line per
mismatch; exit status 1 when there is one.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import load  # noqa: E402  (tests/safetensors_io.py)


def main():
    grads, _ = load(sys.argv[1])
    _, names = load(sys.argv[2])
    work, leading = sys.argv[3], sys.argv[4].split(",")
    bad = []
    # a gradient that is zero in exact arithmetic (the key bias of attention:
    # softmax does not see a shift) is compared against the model's scale
    scale = max(float(np.max(np.abs(grads[n]))) for n in names)
    for i, name in enumerate(leading + names):
        got = np.load(f"{work}/out{i}.npy").astype(np.float64)
        want = grads[name].reshape(got.shape) if grads[name].size == got.size else grads[name]
        if got.shape != want.shape:
            bad.append(f"{name}: shape {got.shape}, expected {want.shape}")
            continue
        err = np.max(np.abs(got - want), initial=0) / max(np.max(np.abs(want), initial=0), 1e-3 * scale, 1e-30)
        if not err <= 1e-5:
            bad.append(f"{name}: relative error {err:.3g}")
    for b in bad:
        print("# " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

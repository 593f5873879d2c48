"""safetensors_io.py - a minimal safetensors reader and writer for the test
scripts (tests/data/*/make_refs.py, tests/grad_models.sh,
tests/optim_steps.sh, tests/train_modes.sh): an 8-byte little-endian header
length, a JSON header, then the raw little-endian data.  Written from the
format's description, with numpy only, so the tests need no safetensors
package.
"""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}


def save(path, tensors):
    """tensors: name -> numpy array (f32, f64 or i64), in file order."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a).reshape(np.shape(a))   # (ascontiguousarray makes a 0-d array 1-d)
        b = a.tobytes()
        header[name] = {"dtype": NAMES[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load(path):
    """(name -> float64 or int64 array, the names in file order)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    names = [k for k in h if k != "__metadata__"]
    out = {}
    for k in names:
        a, b = h[k]["data_offsets"]
        t = np.frombuffer(data[a:b], dtype=DTYPES[h[k]["dtype"]]).reshape(h[k]["shape"])
        out[k] = t.astype(np.int64 if t.dtype == np.int64 else np.float64)
    return out, names

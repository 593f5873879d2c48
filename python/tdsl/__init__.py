"""tdsl - call models built by `tdsl build` from Python, on numpy arrays.

    import numpy as np, tdsl
    m = tdsl.load("out/mlp.so")
    y = m.forward(np.zeros((5, 784), np.float32))

Pure Python over the artifact's own C API (ctypes): the library describes
its entry points, their inputs and outputs and the parameters
(PREFIX_tdsl_describe), so nothing is declared by hand.  See
docs/python.md.
"""
from ._model import ABI, Entry, Error, Model, load
from ._compile import compile, find_tdsl

__all__ = ["ABI", "Entry", "Error", "Model", "compile", "find_tdsl", "load"]
__version__ = "0.1.0"

"""_model.py - a built artifact loaded through ctypes (tdsl.load).

Everything about the model comes from the library itself: PREFIX_tdsl_new
makes a model whatever its signature, PREFIX_tdsl_describe says what it
holds (JSON: entry points, their size arguments, inputs and outputs, the
parameters), PREFIX_tdsl_bind binds an entry's sizes from the inputs'
shapes with the checks and messages of `tdsl run`, and PREFIX_tdsl_call
calls it through its generated function (the C API's fast path).  The
argument types given to ctypes below are those of the generated header's
PREFIX_tdsl_* declarations (compiler/build.c, artifact/artifact.h).

Arrays: inputs that are C-contiguous, aligned numpy arrays of the
argument's dtype are passed as they are (their memory, no copy); others
are copied into such an array first.  Outputs are numpy arrays the call
allocates (or the caller's, with out=), which the model writes directly.

An entry point that assigns parameters (a training step: Train.step)
returns its own outputs (the loss) and updates the model's parameters and
optimizer state in place, in the model's memory: state_dict() then reads
the new values (Entry.updates names them).
"""
import ctypes
import json
import os
import sys
import threading

import numpy as np

from . import _elf

# The artifact ABI this package reads: artifact/artifact.h's TDRT_ABI.
ABI = 7


class Error(Exception):
    """A failure of tdsl: the runtime's message where it has one (the words
    of `tdsl run`), else one of this package's in the same style."""


# tdsl dtypes as numpy's; bf16 has no numpy dtype.
_NUMPY = {
    "bool": np.dtype(np.bool_),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
}
_TDSL = {v: k for k, v in _NUMPY.items()}
# Which kinds of values (numpy's dtype.kind) a Python number or list may
# hold to take a tdsl dtype: bools anywhere, ints into ints and floats.
_FITS = {"bool": "b", "i32": "bi", "i64": "bi", "f32": "bif", "f64": "bif", "f16": "bif"}

_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_i64_p = ctypes.POINTER(ctypes.c_int64)
_PRINT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)

# The files this process has loaded, by absolute path: (device, inode,
# mtime, size) when loaded.  dlopen gives the library already loaded
# under a path again, so a file rebuilt since cannot be loaded anew.
_loaded = {}
_loaded_lock = threading.Lock()


def _numpy_dtype(td, what):
    if td == "bf16":
        raise Error(f"{what} is bf16, which numpy has no dtype for: the Python package takes and returns "
                    f"bool, i32, i64, f16, f32 and f64 (see docs/python.md)")
    return _NUMPY[td]


def _shape_text(dtype_name, shape):
    return f"{dtype_name}[{', '.join(str(int(d)) for d in shape)}]"


def _dtype_name(dt):
    """tdsl's name of a numpy dtype (either byte order), else numpy's."""
    return _TDSL.get(dt) or _TDSL.get(dt.newbyteorder("=")) or str(dt)


def _stat_key(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _open_library(path, name):
    """(ctypes library, prefix) of the artifact at path."""
    if not os.path.exists(path):
        raise Error(f"{path}: no such file")
    if os.path.isdir(path):
        raise Error(f"{path} is a directory; load the PREFIX.so that `tdsl build` wrote into it")
    full = os.path.abspath(path)
    with _loaded_lock:
        key = _stat_key(full)
        if _loaded.get(full, key) != key:
            raise Error(f"{path} changed since this process loaded it, and a process cannot load a second "
                        f"library under one path (dlopen keeps the first): load the new build in a new "
                        f"process, or build it under another directory or --name")
        try:
            lib = ctypes.CDLL(full)
        except OSError as e:
            raise Error(f"{path} is not a shared library this process can load: {e}") from None
        _loaded[full] = key
    stem = os.path.basename(path).split(".")[0]
    candidates = [name] if name else [stem] + [p for p in _elf.describe_prefixes(full) if p != stem]
    for p in candidates:
        if hasattr(lib, p + "_tdsl_describe"):
            return lib, p
    for p in candidates:
        if hasattr(lib, p + "_abi_version"):
            fn = getattr(lib, p + "_abi_version")
            fn.restype, fn.argtypes = ctypes.c_int, []
            raise Error(f"{path} is a tdsl artifact of ABI {fn()}, without the description this package "
                        f"reads (ABI {ABI}): rebuild it with this tdsl's `tdsl build`")
    what = f"no {name}_tdsl_describe" if name else "no PREFIX_tdsl_describe"
    raise Error(f"{path} is not a tdsl CPU artifact ({what}; `tdsl build MODEL.td -o DIR` makes one)")


class Entry:
    """One entry point of a model: call it with numpy arrays, one per input
    (positionally or by name); returns the output, a tuple of outputs, or
    None.  out= (an array, or a tuple of them) writes into the caller's
    arrays instead of new ones.  An entry with updates (a training step)
    also updates those parameters of the model in place at each call."""

    def __init__(self, model, index, d):
        self._model = model
        self.index = index
        self.name = d["name"]                       # "MLP.forward"
        self.method = self.name.rsplit(".", 1)[-1]  # "forward"
        self.sizes = tuple(d["sizes"])              # the symbolic sizes bound per call ("N", ...)
        self.inputs = tuple(d["inputs"])            # each: name, dtype, shape, type ("f32[N, 784]")
        self.outputs = tuple(d["outputs"])          # each: dtype, shape, type
        # a training step: the parameters each call updates in place (names)
        self.updates = tuple(model._params[i]["name"] for i in d.get("updates", []))
        self._by_name = {a["name"]: i for i, a in enumerate(self.inputs)}
        self.signature = (f"{self.name}({', '.join(a['name'] + ': ' + a['type'] for a in self.inputs)}) -> "
                          f"({', '.join(o['type'] for o in self.outputs)})")
        self.__doc__ = self.signature

    def __call__(self, *args, out=None, **kwargs):
        return self._model._run(self, args, kwargs, out)

    def __repr__(self):
        return f"<tdsl entry {self.signature}>"


class Model:
    """A model of a built artifact (tdsl.load): its entry points as methods
    (m.forward(x)) or through m.call("MLP.forward", x), its parameters
    through load_weights, state_dict and load_state_dict.  One call at a
    time per model: calls from several threads take turns."""

    def __init__(self, path, name=None):
        self.path = os.fspath(path)
        self._m = None
        self._lib, self.prefix = _open_library(self.path, name)
        self._free = self._fn("free", None, [ctypes.c_void_p])
        self._error = self._fn("error", ctypes.c_char_p, [ctypes.c_void_p])
        abi = self._fn("abi_version", ctypes.c_int, [])()
        if abi != ABI:
            raise Error(f"{self.path} is a tdsl artifact of ABI {abi}, this package reads ABI {ABI}: use the "
                        f"Python package of the tdsl that built it, or rebuild it with this one")
        new = self._fn("tdsl_new", ctypes.c_void_p, [ctypes.c_int])
        describe = self._fn("tdsl_describe", ctypes.c_char_p, [ctypes.c_void_p])
        self._bind = self._fn("tdsl_bind", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _c_int_p, _c_int_p,
                                                          _c_i64_p, _c_i64_p, _c_i64_p])
        self._call = self._fn("tdsl_call", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, _c_i64_p,
                                                          ctypes.POINTER(ctypes.c_void_p)])
        self._get_param = self._fn("tdsl_get_param", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                                                    ctypes.c_void_p, ctypes.c_size_t])
        self._set_param = self._fn("tdsl_set_param", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int,
                                                                    ctypes.c_void_p, ctypes.c_size_t])
        self._load = self._fn("load_weights", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                             ctypes.c_size_t])
        set_print = self._fn("set_print", None, [ctypes.c_void_p, _PRINT_FN, ctypes.c_void_p])
        handle = new(ABI)
        if not handle:
            raise Error(f"{self.path}: cannot create the model: {self._error(None).decode()}")
        self._m = ctypes.c_void_p(handle)
        self._lock = threading.Lock()
        text = describe(self._m)
        if text is None:
            raise Error(f"{self.path}: cannot describe the model: {self._message()}")
        self.description = json.loads(text.decode())
        self._dtype_code = {n: i for i, n in enumerate(self.description["dtypes"])}
        self._params = self.description["params"]
        self._entries = [Entry(self, i, d) for i, d in enumerate(self.description["entries"])]
        self.entries = tuple(e.name for e in self._entries)
        # print() inside an entry goes to Python's sys.stdout (a notebook's
        # cell, pytest's capture), not to the C library's stdout
        self._print_fn = _PRINT_FN(lambda ud, text: sys.stdout.write(text.decode("utf-8", "replace")))
        set_print(self._m, self._print_fn, None)

    def _fn(self, suffix, restype, argtypes):
        f = getattr(self._lib, f"{self.prefix}_{suffix}")
        f.restype, f.argtypes = restype, argtypes
        return f

    def _message(self):
        return self._error(self._m).decode("utf-8", "replace")

    # ---- entry points ----

    def entry(self, name):
        """The entry point called name: its full name ("MLP.forward") or its
        method's when no other entry shares it ("forward")."""
        for e in self._entries:
            if e.name == name:
                return e
        same = [e for e in self._entries if e.method == name]
        if len(same) == 1:
            return same[0]
        if same:
            raise Error(f"'{name}' names {len(same)} entry points ({', '.join(e.name for e in same)}): "
                        f"give the full name")
        raise Error(f"{self.path} has no entry point '{name}' (it has {', '.join(self.entries) or 'none'})")

    def call(self, name, *args, out=None, **kwargs):
        """Calls the entry point called name (see entry) on args."""
        return self.entry(name)(*args, out=out, **kwargs)

    def __getattr__(self, attr):
        # only names that are not the model's own attributes get here
        if attr.startswith("_") or "_entries" not in self.__dict__:
            raise AttributeError(attr)
        try:
            return self.entry(attr)
        except Error as e:
            raise AttributeError(str(e)) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | {e.method for e in self.__dict__.get("_entries", [])})

    def _input(self, e, k, value):
        """Input k of e as an array of its dtype that can be passed as it is."""
        spec = e.inputs[k]
        what = f"{e.name}: argument '{spec['name']}'"
        want = _numpy_dtype(spec["dtype"], what)
        if isinstance(value, np.ndarray):
            a = value
        elif isinstance(value, np.generic):
            a = np.asarray(value)
        else:
            # Python numbers and lists have no precision of their own: they
            # take the argument's dtype where their kind of value fits
            try:
                a = np.asarray(value)
            except Exception as x:
                raise Error(f"{what}: expected {spec['type']}, got a {type(value).__name__} that is not an "
                            f"array ({x})") from None
            if a.dtype.kind not in "biuf":
                raise Error(f"{what}: expected {spec['type']}, got a {type(value).__name__}")
            if a.dtype.kind not in _FITS[spec["dtype"]]:
                raise Error(f"{what}: expected {spec['type']}, got a {type(value).__name__} of "
                            f"{_shape_text(_dtype_name(a.dtype), a.shape)}, whose values do not all fit "
                            f"{spec['dtype']}")
            a = a.astype(want)
        if a.dtype != want and a.dtype.newbyteorder("=") == want:
            a = a.astype(want)   # the other byte order: the same values, copied
        if _dtype_name(a.dtype) not in _NUMPY:
            raise Error(f"{what}: expected {spec['type']}, got {_shape_text(str(a.dtype), a.shape)}: numpy's "
                        f"{a.dtype} is no tdsl dtype")
        if not (a.flags.c_contiguous and a.flags.aligned):
            a = np.ascontiguousarray(a)   # strided or unaligned: copied
        return a

    def _outputs(self, e, shapes, out):
        """The arrays e's outputs are written to: new ones, or the caller's."""
        want = [(_numpy_dtype(o["dtype"], f"{e.name}: output {i}"), tuple(s))
                for i, (o, s) in enumerate(zip(e.outputs, shapes))]
        if out is None:
            return [np.empty(s, dtype=d) for d, s in want]
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(outs) != len(want):
            raise Error(f"{e.name} returns {len(want)} value{'s' if len(want) != 1 else ''}, "
                        f"but out= gives {len(outs)}")
        for i, (a, (d, s)) in enumerate(zip(outs, want)):
            what = f"{e.name}: out" + (f"[{i}]" if len(want) > 1 else "")
            if not isinstance(a, np.ndarray):
                raise Error(f"{what}: expected a numpy array, got a {type(a).__name__}")
            if a.dtype != d or a.shape != s:
                raise Error(f"{what}: expected {_shape_text(_TDSL[d], s)} ({e.outputs[i]['type']} for these "
                            f"sizes), got {_shape_text(_dtype_name(a.dtype), a.shape)}")
            if not (a.flags.c_contiguous and a.flags.aligned and a.flags.writeable):
                raise Error(f"{what}: the array must be C-contiguous, aligned and writeable (the model "
                            f"writes it in place)")
        return list(outs)

    def _run(self, e, args, kwargs, out):
        n = len(e.inputs)
        if len(args) > n:
            names = ", ".join(a["name"] for a in e.inputs)
            raise Error(f"{e.name} takes {n} argument{'s' if n != 1 else ''} ({names}), got {len(args)}")
        given = list(args) + [None] * (n - len(args))
        have = [True] * len(args) + [False] * (n - len(args))
        for key, value in kwargs.items():
            k = e._by_name.get(key)
            if k is None:
                names = ", ".join(a["name"] for a in e.inputs) or "none"
                raise Error(f"{e.name} has no argument '{key}' (its arguments: {names})")
            if have[k]:
                raise Error(f"{e.name}: argument '{key}' is given twice")
            given[k], have[k] = value, True
        for k in range(n):
            if not have[k]:
                raise Error(f"{e.name}: argument '{e.inputs[k]['name']}' ({e.inputs[k]['type']}) is missing")
        arrays = [self._input(e, k, v) for k, v in enumerate(given)]
        dtypes = (ctypes.c_int * max(n, 1))(*[self._dtype_code[_TDSL[a.dtype]] for a in arrays])
        ranks = (ctypes.c_int * max(n, 1))(*[a.ndim for a in arrays])
        dims = [d for a in arrays for d in a.shape]
        shapes = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        syms = (ctypes.c_int64 * max(len(e.sizes), 1))()
        n_out_dims = sum(len(o["shape"]) for o in e.outputs)
        out_dims = (ctypes.c_int64 * max(n_out_dims, 1))()
        with self._lock:
            if self._m is None:
                raise Error(f"{self.path}: the model was closed")
            if self._bind(self._m, e.index, dtypes, ranks, shapes, syms, out_dims):
                raise Error(self._message())
            at, out_shapes = 0, []
            for o in e.outputs:
                out_shapes.append(out_dims[at:at + len(o["shape"])])
                at += len(o["shape"])
            outs = self._outputs(e, out_shapes, out)
            for i, o in enumerate(outs):
                for k, a in enumerate(arrays):
                    if np.may_share_memory(o, a):
                        raise Error(f"{e.name}: out{f'[{i}]' if len(outs) > 1 else ''} overlaps argument "
                                    f"'{e.inputs[k]['name']}'")
            ptrs = (ctypes.c_void_p * max(n + len(outs), 1))(*[a.ctypes.data for a in arrays + outs])
            if self._call(self._m, e.index, syms, ptrs):
                raise Error(self._message())
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- parameters ----

    @property
    def parameters(self):
        """Each parameter's name (PyTorch's: "fc1.weight") with its dtype and
        shape, in the model's order."""
        return {p["name"]: (p["dtype"], tuple(p["shape"])) for p in self._params}

    def state_dict(self):
        """Every parameter as a new numpy array (a copy: changing it does not
        change the model; load_state_dict does), by name."""
        d = {}
        with self._lock:
            self._check_open()
            for i, p in enumerate(self._params):
                a = np.empty(p["shape"], dtype=_numpy_dtype(p["dtype"], f"parameter '{p['name']}'"))
                if self._get_param(self._m, i, a.ctypes.data, a.nbytes):
                    raise Error(self._message())
                d[p["name"]] = a
        return d

    def load_state_dict(self, state):
        """Replaces every parameter from state (name -> array of the
        parameter's dtype and shape: all of them, nothing else).  Nothing
        changes unless all of them fit; the problems are listed as
        load_weights lists them."""
        problems, values = [], []
        for p in self._params:
            want = f"{p['dtype']}[{', '.join(map(str, p['shape']))}]"
            if p["name"] not in state:
                problems.append(f"missing weight '{p['name']}' ({want})")
                continue
            a = np.asarray(state[p["name"]])
            dt = _numpy_dtype(p["dtype"], f"parameter '{p['name']}'")
            if _dtype_name(a.dtype) != p["dtype"]:
                problems.append(f"weight '{p['name']}' has dtype {_dtype_name(a.dtype)}, expected {p['dtype']} "
                                f"({want})")
            elif tuple(a.shape) != tuple(p["shape"]):
                problems.append(f"weight '{p['name']}' is {_shape_text(p['dtype'], a.shape)}, expected {want}")
            else:
                values.append(np.ascontiguousarray(a, dtype=dt))
        names = {p["name"] for p in self._params}
        for k in state:
            if k not in names:
                problems.append(f"unexpected weight '{k}': the model has no parameter of that name")
        if problems:
            raise Error(f"the state dict does not fit {', '.join(self.entries)}:\n" + "\n".join(problems))
        with self._lock:
            self._check_open()
            for i, a in enumerate(values):
                if self._set_param(self._m, i, a.ctypes.data, a.nbytes):
                    raise Error(self._message())

    def load_weights(self, path):
        """Replaces every parameter from a safetensors file (PyTorch's names,
        exact dtypes and shapes; checked from its header first: nothing
        changes unless it fits)."""
        err = ctypes.create_string_buffer(4096)
        with self._lock:
            self._check_open()
            if self._load(self._m, os.fsencode(path), err, len(err)):
                raise Error(err.value.decode("utf-8", "replace"))

    # ---- life ----

    def _check_open(self):
        if self._m is None:
            raise Error(f"{self.path}: the model was closed")

    def close(self):
        """Frees the model (also done when it is garbage collected)."""
        m, self._m = self._m, None
        if m is not None:
            self._free(m)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass   # at interpreter exit, ctypes may be gone

    def __repr__(self):
        return f"<tdsl model {self.path}: {', '.join(self.entries)}>"


def load(path, name=None):
    """The model of the artifact at path (a PREFIX.so of `tdsl build`),
    with the parameters it was built with (`tdsl run --seed N`'s).  name:
    the C prefix when the file was renamed and its symbols are ambiguous."""
    return Model(path, name)

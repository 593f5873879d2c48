"""peers.py - the peers of bench/run: numpy, PyTorch, jax.jit and ONNX Runtime on W1-W6.

The workloads, inputs and systems are those of ../shared/peers/ (w1_seed.py,
w2_gelu.py, w3_gemm.py, w4_mlp.py, w5_norm.py, w6_transformer.py), written
again here so that one long-lived process serves a whole bench run: bench/run
starts it once per thread count (and once more with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset, for the GEMM peer), then sends it one workload name
per line and reads one JSON object per result line, then {"done": NAME}.
That lets bench/run alternate tdsl and the peers workload by workload
without paying the torch import each time.

Timing (as ../shared/peers/common.py): warm-up calls, then `runs` timed
runs; a run is `inner` back-to-back calls (chosen so that a run lasts about
TARGET seconds) and reports time / inner.  Every system's result is checked
against a float64 reference first; the error metric is the peers' one.

--only jax / --only ort (run with --peers-python's interpreter) runs only
the jax.jit rows or only the ONNX Runtime rows, importing neither torch nor
the other; the compiled rows (those two and torch.compile) also record
their first call, compile time and calls at the new sizes of PROBES.

usage: /usr/bin/python3 peers.py --threads T [--quick] [--tuned | --only jax|ort] [--serve | w1 w2 ...]
Needs numpy; torch rows are skipped (with a "missing" record) without torch.
--tuned runs only the PyTorch rows and names them "... [tuned]": bench/run
starts such a process in the "tuned" environment of PERFORMANCE.md
(ATEN_CPU_CAPABILITY=avx512, OMP_WAIT_POLICY=PASSIVE, tcmalloc preloaded,
the OpenBLAS variables unset), the configuration the targets are set
against.
"""
import json
import math
import os
import statistics
import sys
import time
import warnings


def arg_value(name, default):
    for i, a in enumerate(sys.argv):
        if a == name and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return default


T = int(arg_value("--threads", "1"))
QUICK = "--quick" in sys.argv
TUNED = "--tuned" in sys.argv
# --only jax | ort: this process runs only JAX's jax.jit rows or only ONNX
# Runtime's (peers_jit.py), and imports neither torch nor the other one.
ONLY = arg_value("--only", None)
if ONLY == "jax":
    # XLA reads its thread settings when it starts: bench/run sets them, and
    # so does this, for a process started by hand
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=%s intra_op_parallelism_threads=%d" % (
        "true" if T > 1 else "false", T))
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Thread counts must be in the environment before numpy/torch load OpenBLAS/OpenMP.
for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = str(T)

import numpy as np  # noqa: E402

try:
    if ONLY:
        raise ImportError("--only: no torch in this process")
    import torch  # noqa: E402
    import torch.nn as nn  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
    torch.set_num_threads(T)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(0)
except ImportError:
    torch = None

warnings.filterwarnings("ignore")
RUNS = 5 if QUICK else 20
WARMUP = 2 if QUICK else 3
TARGET = 0.005 if QUICK else 0.02
f32 = np.float32


def is_torch_row(system):
    return system.startswith(("torch", "F.", "nn."))


def wanted(system):
    """Whether this process reports `system`'s rows."""
    if ONLY == "jax":
        return system.startswith("jax")
    if ONLY == "ort":
        return system.startswith("ONNX Runtime")
    return not TUNED or is_torch_row(system)


def emit(d):
    d.setdefault("threads", T)
    system = d.get("system")
    if system not in (None, "peers") and not wanted(system):
        return
    if TUNED and system not in (None, "peers"):
        if not is_torch_row(system):
            return  # the default process reports numpy and OpenBLAS
        d["system"] = system + " [tuned]"
    print(json.dumps(d), flush=True)


def timeit(fn, runs=None, warmup=None):
    runs = runs or RUNS
    for _ in range(warmup if warmup is not None else WARMUP):
        fn()
    t0 = time.perf_counter()
    fn()
    one = time.perf_counter() - t0
    inner = max(1, min(100000, int(TARGET / max(one, 1e-9))))
    pc = time.perf_counter_ns
    ts = []
    rng = range(inner)
    for _ in range(runs):
        a = pc()
        for _ in rng:
            fn()
        ts.append((pc() - a) / 1e9 / inner)
    return {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts), "runs": runs, "inner": inner}


def fail_reason(e):
    return str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__


def bench(wl, case, system, fn, check=None, after=None, **extra):
    """Runs fn once for the check, then times it; emits one record.
    after(record), when given, runs after the timing and returns more
    fields for the record (compile time, calls at other sizes)."""
    if not wanted(system):
        return
    try:
        err = check(fn()) if check else None
        r = timeit(fn)
        if after is not None:
            r.update(after(r))
    except Exception as e:  # a peer that fails is reported, not fatal
        emit(dict(workload=wl, case=case, system=system, status="failed", reason=fail_reason(e)))
        return
    r.update(workload=wl, case=case, system=system, status="ok", **extra)
    if err is not None:
        r["relerr"] = float(err)
    emit(r)


def first_call(fn):
    """Seconds of one call of fn (which waits for its result)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compile_fields(first_s, probe=(), count=None, recompiles_never=None):
    """The `after` of bench() for a compiled peer: the first call's time
    (compile + run) and compile_s = first call - the steady median; then,
    for each (label, fn, check) of probe (the same compiled function called
    at another batch size, in order), the first and the second call's time,
    the error, and whether it compiled again: count() (the number of
    compiled graphs or cache entries) grew; recompiles_never: the reason
    the system has no per-size compile (ONNX Runtime)."""
    def after(r):
        d = {"first_call_s": first_s, "compile_s": max(first_s - r["median_s"], 0.0)}
        if not probe:
            return d
        shapes = []
        for label, fn, check in probe:
            n0 = count() if count else None
            holder = []
            t1 = first_call(lambda: holder.append(fn()))
            n1 = count() if count else None
            t2 = first_call(fn)
            e = {"shape": label, "first_call_s": t1, "second_call_s": t2}
            if n0 is not None and n1 is not None:
                e["recompiled"], e["compiles"] = n1 > n0, n1 - n0
            elif recompiles_never:
                e["recompiled"], e["why"] = False, recompiles_never
            if check is not None:
                e["relerr"] = float(check(holder[0]))
            shapes.append(e)
        d["new_shapes"] = shapes
        return d
    return after


def missing(wl, what, why):
    emit(dict(workload=wl, case="*", system=what, status="not available", reason=why))


# The compiled peers (torch.compile, jax.jit, ONNX Runtime) of these cases
# are called, after their timed runs, at these other sizes of dim 0 of the
# first input, in order; bench/driver.py's NEW_SHAPES gives tdsl compiled
# the same sizes (harness --new-shape).
PROBES = {("W1", "GoodDynamic[8,16]"): (16, 24),
          ("W2", "gelu(x*w+b) scalar w,b"): (8 * 1024 * 1024, 4 * 1024 * 1024),
          ("W4", "MLP B=32"): (256, 64, 1),
          ("W5", "softmax [4096,4096]"): (2048, 1024),
          ("W5", "layer_norm [4096,4096]"): (2048, 1024),
          ("W6", "block B=8 S=128 d=256"): (4, 2)}


def probe_inputs(wl, case, make):
    """[(label, x, check)] for PROBES[(wl, case)]; make(n) -> (x, check)."""
    out = []
    for n in PROBES.get((wl, case), ()):
        x, chk = make(n)
        out.append(("[%s]" % ",".join(str(d) for d in x.shape), x, chk))
    return out


def torch_probe(probe, *rest):
    return [(label, (torch.from_numpy(x),) + rest, chk) for label, x, chk in probe]


HAVE_COMPILE = torch is not None and hasattr(torch, "compile")
COMPILE_TIMES = []  # (case, seconds of the first call) for W7


def dynamo_graphs():
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def bench_compiled(wl, case, fn, check, *args, probe=()):
    """A torch.compile row (PyTorch 2.x only), compiled afresh
    (torch._dynamo.reset()); the first call, which compiles, is timed
    separately and kept for W7.  probe: [(label, args, check)] at other
    batch sizes (dim 0 of the first argument), called in order after the
    timing: PyTorch's default (dynamic=None) compiles the first size
    static, compiles again, with dynamic sizes, at the second ("automatic
    dynamic"), and specialises sizes 0 and 1.  With a probe, a second row
    marks dim 0 dynamic (torch._dynamo.mark_dynamic) before the first call."""
    if not HAVE_COMPILE:
        return
    variants = [("torch.compile", False)] + ([("torch.compile, mark_dynamic(x, 0)", True)] if probe else [])
    for system, dyn in variants:
        try:
            torch._dynamo.reset()
            cf = torch.compile(fn)
            a0 = args
            if dyn:
                a0 = (args[0].clone(),) + tuple(args[1:])
                torch._dynamo.mark_dynamic(a0[0], 0)
            t0 = time.perf_counter()
            cf(*a0)
            first = time.perf_counter() - t0
            if not dyn:
                COMPILE_TIMES.append((wl + " " + case, first))
        except Exception as e:
            emit(dict(workload=wl, case=case, system=system, status="failed", reason=fail_reason(e)))
            continue
        pr = [(label, (lambda cf=cf, pa=pa: cf(*pa)), chk) for label, pa, chk in probe]
        bench(wl, case, system, lambda cf=cf, a0=a0: cf(*a0), check,
              after=compile_fields(first, pr, count=dynamo_graphs))


def to_np(y):
    if torch is not None and isinstance(y, torch.Tensor):
        return y.detach().numpy()
    return np.asarray(y)


def err_max_over_max(ref):
    """max|y - r| / max|r| (W1, W3, W4, W6)."""
    def f(y):
        y = to_np(y).astype(np.float64)
        return np.max(np.abs(y - ref)) / max(np.max(np.abs(ref)), 1e-30)
    return f


# ---------------------------------------------------------------- W1
def linear_weights(rng, i, o):
    """torch.nn.Linear's initialisation range: U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1 / math.sqrt(i)
    return (rng.uniform(-bound, bound, (o, i)).astype(np.float32), rng.uniform(-bound, bound, o).astype(np.float32))


def w1():
    rng = np.random.default_rng(0)
    WB = {k: linear_weights(rng, *k) for k in ((4, 2), (16, 16), (16, 1))}

    def wb(k):
        return WB[k]
    W4, b4 = wb((4, 2))
    W16, b16 = wb((16, 16))
    W1, b1 = wb((16, 1))
    nrng = np.random.default_rng(1)

    def np_simple(x): return np.maximum(x @ W4.T + b4, f32(0))

    def np_goodwhere(x):
        y = x @ W16.T + b16
        return np.where(nrng.random(1, dtype=np.float32) > 0.5, y + f32(1), y - f32(1))

    def np_ret(x):
        y = x @ W1.T + b1
        return y, y.mean()

    def np_goodvec(x): return x + np.arange(5, dtype=np.float32).sum()

    def np_dyn(x): return x @ W16.T + b16

    def r64_linear(x, W, b): return x.astype(np.float64) @ W.T.astype(np.float64) + b

    cases = [
        ("Simple[1,4]", "Simple", np_simple, (1, 4), lambda x: np.maximum(r64_linear(x, W4, b4), 0), None),
        ("GoodWhere[4,16]", "GoodWhere", np_goodwhere, (4, 16), None, (W16, b16)),
        ("ReturnTensorForLog[8,16]", "ReturnTensorForLog", np_ret, (8, 16), lambda x: r64_linear(x, W1, b1), None),
        ("GoodVectorized[32,16]", "GoodVectorized", np_goodvec, (32, 16), lambda x: x.astype(np.float64) + 10,
         None),
        ("GoodDynamic[8,16]", "GoodDynamic", np_dyn, (8, 16), lambda x: r64_linear(x, W16, b16), None),
        ("GoodDynamic[16,16]", "GoodDynamic", np_dyn, (16, 16), lambda x: r64_linear(x, W16, b16), None),
    ]
    models = w1_torch_models(WB) if torch is not None else {}
    if torch is None:
        missing("W1", "torch", "torch is not importable")
    for case, cls, npf, shape, reff, pm in cases:
        xn = rng.standard_normal(shape, dtype=np.float32)

        def check(y, xn=xn, reff=reff, pm=pm):
            y = y[0] if isinstance(y, tuple) else y
            if pm is not None:  # GoodWhere: y = linear(x) + 1 or - 1
                base = r64_linear(xn, *pm)
                return min(err_max_over_max(base + 1)(y), err_max_over_max(base - 1)(y))
            return err_max_over_max(reff(xn))(y)
        if models:
            probe = probe_inputs("W1", case, lambda n: w1_dyn_probe(n, W16, b16)) if HAVE_COMPILE else []
            w1_torch_case(case, models[cls](), torch.from_numpy(xn), check, torch_probe(probe))
        bench("W1", case, "numpy", lambda: npf(xn), check)
    # per-op overhead: one `x + 1` on [4, 16]
    xn = rng.standard_normal((4, 16), dtype=np.float32)
    chk = err_max_over_max(xn.astype(np.float64) + 1)
    if torch is not None:
        xt = torch.from_numpy(xn)
        with torch.no_grad():
            bench("W1", "per-op: x + 1 [4,16]", "torch eager no_grad", lambda: xt + 1, chk)
    bench("W1", "per-op: x + 1 [4,16]", "numpy", lambda: xn + f32(1), chk)


def w1_dyn_probe(n, W, b):
    """GoodDynamic's input at batch n and its check."""
    x = np.random.default_rng(100 + n).standard_normal((n, 16), dtype=np.float32)
    return x, err_max_over_max(x.astype(np.float64) @ W.T.astype(np.float64) + b)


def w1_torch_case(case, m, xt, check, probe=()):
    """The torch systems of one W1 case."""
    m = m.eval()
    bench("W1", case, "torch eager", lambda: m(xt), check)
    with torch.no_grad():
        try:
            sm = torch.jit.script(m)
            bench("W1", case, "torch.jit.script", lambda: sm(xt), check)
        except Exception as e:
            emit(dict(workload="W1", case=case, system="torch.jit.script", status="failed", reason=str(e)[:200]))
        bench("W1", case, "torch eager no_grad", lambda: m(xt), check)
        bench_compiled("W1", case, m, check, xt, probe=probe)
        if not QUICK:
            tm = torch.jit.freeze(torch.jit.trace(m, xt))
            bench("W1", case, "torch.jit.trace+freeze", lambda: tm(xt), check)


def w1_torch_models(WB):
    """The seed's models as in ../shared/peers/w1_seed.py, with weights WB."""
    def lin(k):
        m = nn.Linear(*k)
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(WB[k][0]))
            m.bias.copy_(torch.from_numpy(WB[k][1]))
        return m

    class Simple(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lin((4, 2))

        def forward(self, x):
            return torch.relu(self.fc(x))

    class GoodWhere(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = lin((16, 16))

        def forward(self, x):
            y = self.h(x)
            return torch.where(torch.rand(1) > 0.5, y + 1, y - 1)

    class ReturnTensorForLog(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = lin((16, 1))

        def forward(self, x):
            y = self.h(x)
            return y, y.mean().detach()

    class GoodVectorized(nn.Module):
        def forward(self, x):
            return x + torch.arange(5, device=x.device).sum()

    class GoodDynamic(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = lin((16, 16))

        def forward(self, x):
            return self.h(x)

    return {"Simple": Simple, "GoodWhere": GoodWhere, "ReturnTensorForLog": ReturnTensorForLog,
            "GoodVectorized": GoodVectorized, "GoodDynamic": GoodDynamic}


# ---------------------------------------------------------------- W2
K0, K1 = 0.7978845608028654, 0.044715
N2 = 16 * 1024 * 1024


def w2_check(arr, xn, wn, bn, ws=1.25, bs=0.1):
    x = xn[::97].astype(np.float64)
    z = x * (wn[::97].astype(np.float64) if arr else ws) + (bn[::97].astype(np.float64) if arr else bs)
    r = 0.5 * z * (1 + np.tanh(K0 * (z + K1 * z ** 3)))
    return lambda y: float(np.max(np.abs(to_np(y)[::97] - r) / np.maximum(np.abs(r), 1.0)))


def w2_probe(case):
    """The scalar case's inputs at other lengths."""
    def make(n):
        x = np.random.default_rng(n).uniform(-4, 4, n).astype(np.float32)
        return x, w2_check(False, x, None, None)
    return probe_inputs("W2", case, make)


def w2():
    rng = np.random.default_rng(0)
    xn = rng.uniform(-4, 4, N2).astype(np.float32)
    wn = rng.uniform(0.5, 1.5, N2).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, N2).astype(np.float32)
    ws, bs = 1.25, 0.1

    mkcheck = lambda arr: w2_check(arr, xn, wn, bn)

    def np_expr(x, w, b):
        z = x * w + b
        return f32(0.5) * z * (f32(1) + np.tanh(f32(K0) * (z + f32(K1) * (z * z * z))))

    out, tmp = np.empty_like(xn), np.empty_like(xn)

    def np_inplace(x, w, b):
        np.multiply(x, w, out=out); np.add(out, b, out=out)
        np.multiply(out, out, out=tmp); np.multiply(tmp, out, out=tmp)
        np.multiply(tmp, f32(K1), out=tmp); np.add(tmp, out, out=tmp)
        np.multiply(tmp, f32(K0), out=tmp); np.tanh(tmp, out=tmp)
        np.add(tmp, f32(1), out=tmp); np.multiply(tmp, out, out=out)
        np.multiply(out, f32(0.5), out=out)
        return out

    for arr in (False, True):
        case = "gelu(x*w+b) %s w,b" % ("array" if arr else "scalar")
        chk = mkcheck(arr)
        w, b = (wn, bn) if arr else (f32(ws), f32(bs))
        bench("W2", case, "numpy expression", lambda: np_expr(xn, w, b), chk)
        if not QUICK:
            bench("W2", case, "numpy in-place (out=)", lambda: np_inplace(xn, w, b), chk)
        if torch is None:
            continue
        xt, wt, bt = torch.from_numpy(xn), torch.from_numpy(wn), torch.from_numpy(bn)
        args = (xt, wt, bt) if arr else (xt, ws, bs)
        with torch.no_grad():
            bench("W2", case, "torch eager F.gelu(tanh)",
                  lambda: F.gelu(args[0] * args[1] + args[2], approximate="tanh"), chk)
            bench_compiled("W2", case, lambda x, w, b: F.gelu(x * w + b, approximate="tanh"), chk, *args,
                           probe=[] if arr or not HAVE_COMPILE else torch_probe(w2_probe(case), ws, bs))
            if not QUICK:
                def formula(x, w, b):
                    z = x * w + b
                    return 0.5 * z * (1.0 + torch.tanh(K0 * (z + K1 * (z * z * z))))
                bench("W2", case, "torch eager formula (9 ops)", lambda: formula(*args), chk)
    if torch is None:
        missing("W2", "torch", "torch is not importable")


# ---------------------------------------------------------------- W3
def openblas_core():
    try:
        from threadpoolctl import threadpool_info
        for d in threadpool_info():
            if d.get("internal_api") == "openblas":
                return "%s (threadpoolctl: %s, %s threads)" % (d.get("architecture"), d.get("version"),
                                                                d.get("num_threads"))
    except ImportError:
        pass
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return "%s (libopenblas.so.0, %d threads)" % (lib.openblas_get_corename().decode(),
                                                       lib.openblas_get_num_threads())
    except (OSError, AttributeError):
        return "unknown (no threadpoolctl, no libopenblas.so.0)"


def w3():
    core = openblas_core()
    env = "OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s" % (os.environ.get("OPENBLAS_CORETYPE", "<unset>"),
                                                        os.environ.get("OPENBLAS_L2_SIZE", "<unset>"))
    emit(dict(workload="W3", case="*", system="openblas", status="info", openblas_core=core, env=env))
    for n in (256, 1024, 2048):
        rng = np.random.default_rng(n)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        rows = np.arange(0, n, max(1, n // 64))
        ref = a[rows].astype(np.float64) @ b.astype(np.float64)

        def chk(y, rows=rows, ref=ref):
            return float(np.max(np.abs(to_np(y)[rows] - ref)) / np.max(np.abs(ref)))
        case = "sgemm n=%d" % n
        bench("W3", case, "numpy a@b (OpenBLAS)", lambda: a @ b, chk, openblas_core=core)
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            with torch.no_grad():
                bench("W3", case, "torch.mm", lambda: torch.mm(ta, tb), chk, openblas_core=core)
    if torch is None:
        missing("W3", "torch", "torch is not importable")


# ---------------------------------------------------------------- W4
def w4_probe(n, ref_mlp):
    x = np.random.default_rng(n).standard_normal((n, 784), dtype=np.float32)
    return x, err_max_over_max(ref_mlp(x))


def w4():
    if torch is None:
        missing("W4", "torch", "torch is not importable")

    dims = (784, 512, 512, 10)
    rng = np.random.default_rng(4)
    Ws = []
    for i in range(3):
        bound = 1 / math.sqrt(dims[i])
        Ws.append((rng.uniform(-bound, bound, (dims[i + 1], dims[i])).astype(np.float32),
                   rng.uniform(-bound, bound, dims[i + 1]).astype(np.float32)))
    Wn = [(w.T.copy(), b) for w, b in Ws]  # numpy: [in, out] weights, as in w4_mlp.py

    def np_mlp(x):
        (W1, b1), (W2, b2), (W3, b3) = Wn
        h = np.maximum(x @ W1 + b1, f32(0))
        h = np.maximum(h @ W2 + b2, f32(0))
        return h @ W3 + b3

    def ref_mlp(x):
        h = x.astype(np.float64)
        for i, (w, b) in enumerate(Ws):
            h = h @ w.T.astype(np.float64) + b
            if i < 2:
                h = np.maximum(h, 0)
        return h

    if torch is not None:
        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 512), nn.Linear(512, 10)

            def forward(self, x):
                x = torch.relu(self.fc1(x))
                x = torch.relu(self.fc2(x))
                return self.fc3(x)
        m = MLP().eval()
        with torch.no_grad():
            for lin, (w, b) in zip((m.fc1, m.fc2, m.fc3), Ws):
                lin.weight.copy_(torch.from_numpy(w))
                lin.bias.copy_(torch.from_numpy(b))
    for B in (1, 32, 256):
        xn = np.random.default_rng(B).standard_normal((B, 784), dtype=np.float32)
        chk = err_max_over_max(ref_mlp(xn))
        case = "MLP B=%d" % B
        bench("W4", case, "numpy", lambda: np_mlp(xn), chk)
        if torch is None:
            continue
        xt = torch.from_numpy(xn)
        if not QUICK:
            bench("W4", case, "torch eager", lambda: m(xt), chk)
        with torch.no_grad():
            bench("W4", case, "torch eager no_grad", lambda: m(xt), chk)
            sm = torch.jit.script(m)
            bench("W4", case, "torch.jit.script", lambda: sm(xt), chk)
            probe = probe_inputs("W4", case, lambda n: w4_probe(n, ref_mlp)) if HAVE_COMPILE else []
            bench_compiled("W4", case, m, chk, xt, probe=torch_probe(probe))
            if not QUICK:
                tf = torch.jit.freeze(torch.jit.trace(m, xt))
                bench("W4", case, "torch.jit.trace+freeze", lambda: tf(xt), chk)


# ---------------------------------------------------------------- W5
def w5_refs(x, g, b, eps):
    """32 sampled rows of x, and softmax's and layer_norm's float64 results on them."""
    rows = np.arange(0, x.shape[0], x.shape[0] // 32)
    x64 = x[rows].astype(np.float64)
    e64 = np.exp(x64 - x64.max(-1, keepdims=True))
    mu = x64.mean(-1, keepdims=True)
    return rows, e64 / e64.sum(-1, keepdims=True), \
        (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + eps) * g + b


def w5_probe(case, xn, gn, bn, eps):
    """The first n rows of the same input, and their check."""
    def make(n):
        x = xn[:n]
        rows, sm_ref, ln_ref = w5_refs(x, gn, bn, eps)
        ref, floor = (sm_ref, 1e-3) if case.startswith("softmax") else (ln_ref, 1.0)
        return x, lambda y: float(np.max(np.abs(to_np(y)[rows] - ref) / np.maximum(np.abs(ref), floor)))
    return probe_inputs("W5", case, make)


def w5():
    M = N = 4096
    eps = 1e-5
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal((M, N), dtype=np.float32) * 3).astype(np.float32)
    gn = rng.uniform(0.5, 1.5, N).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, N).astype(np.float32)
    rows = np.arange(0, M, M // 32)
    x64 = xn[rows].astype(np.float64)
    e64 = np.exp(x64 - x64.max(-1, keepdims=True))
    sm_ref = e64 / e64.sum(-1, keepdims=True)
    mu = x64.mean(-1, keepdims=True)
    ln_ref = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + eps) * gn + bn

    def chk(ref, floor):
        return lambda y: float(np.max(np.abs(to_np(y)[rows] - ref) / np.maximum(np.abs(ref), floor)))

    def np_softmax(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def np_layernorm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        d = x - mu
        var = (d * d).mean(-1, keepdims=True)
        return d / np.sqrt(var + f32(eps)) * g + b

    sm, ln = "softmax [4096,4096]", "layer_norm [4096,4096]"
    bench("W5", sm, "numpy formula", lambda: np_softmax(xn), chk(sm_ref, 1e-3))
    bench("W5", ln, "numpy formula", lambda: np_layernorm(xn, gn, bn), chk(ln_ref, 1.0))
    if torch is None:
        return missing("W5", "torch", "torch is not importable")
    xt, gt, bt = torch.from_numpy(xn), torch.from_numpy(gn), torch.from_numpy(bn)
    with torch.no_grad():
        bench("W5", sm, "torch.softmax", lambda: torch.softmax(xt, -1), chk(sm_ref, 1e-3))
        bench("W5", ln, "F.layer_norm", lambda: F.layer_norm(xt, (N,), gt, bt, eps), chk(ln_ref, 1.0))
        bench_compiled("W5", sm, lambda x: torch.softmax(x, -1), chk(sm_ref, 1e-3), xt,
                       probe=torch_probe(w5_probe(sm, xn, gn, bn, eps)) if HAVE_COMPILE else [])
        bench_compiled("W5", ln, lambda x: F.layer_norm(x, (N,), gt, bt, eps), chk(ln_ref, 1.0), xt,
                       probe=torch_probe(w5_probe(ln, xn, gn, bn, eps)) if HAVE_COMPILE else [])
        if not QUICK:
            def t_softmax(x):
                e = torch.exp(x - x.amax(-1, keepdim=True))
                return e / e.sum(-1, keepdim=True)
            bench("W5", sm, "torch eager formula", lambda: t_softmax(xt), chk(sm_ref, 1e-3))


# ---------------------------------------------------------------- W6
def w6():
    if torch is None:
        return missing("W6", "torch", "torch is not importable")
    B, S, D, H, FF = 8, 128, 256, 4, 1024

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.fc1 = nn.Linear(D, FF)
            self.fc2 = nn.Linear(FF, D)

        def forward(self, x):
            b, s, d = x.shape
            h = self.ln1(x)
            qkv = self.qkv(h).reshape(b, s, 3, 4, 64).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = torch.softmax((q @ k.transpose(-2, -1)) * 0.125, dim=-1)
            o = (att @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.proj(o)
            x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
            return x

    blk = Block().eval()
    with torch.no_grad():
        for ln in (blk.ln1, blk.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.2, 0.2)
    tel = nn.TransformerEncoderLayer(D, H, dim_feedforward=FF, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=True).eval()
    with torch.no_grad():
        tel.self_attn.in_proj_weight.copy_(blk.qkv.weight); tel.self_attn.in_proj_bias.copy_(blk.qkv.bias)
        tel.self_attn.out_proj.weight.copy_(blk.proj.weight); tel.self_attn.out_proj.bias.copy_(blk.proj.bias)
        tel.linear1.weight.copy_(blk.fc1.weight); tel.linear1.bias.copy_(blk.fc1.bias)
        tel.linear2.weight.copy_(blk.fc2.weight); tel.linear2.bias.copy_(blk.fc2.bias)
        tel.norm1.weight.copy_(blk.ln1.weight); tel.norm1.bias.copy_(blk.ln1.bias)
        tel.norm2.weight.copy_(blk.ln2.weight); tel.norm2.bias.copy_(blk.ln2.bias)
        x = torch.randn(B, S, D)
        ref = Block().double().eval()
        ref.load_state_dict({k: v.double() for k, v in blk.state_dict().items()})
        chk = err_max_over_max(ref(x.double()).numpy())
    case = "block B=8 S=128 d=256"
    if not QUICK:
        bench("W6", case, "torch eager (hand Block)", lambda: blk(x), chk)
    with torch.no_grad():
        bench("W6", case, "torch eager no_grad (hand Block)", lambda: blk(x), chk)
        sb = torch.jit.script(blk)
        bench("W6", case, "torch.jit.script (hand Block)", lambda: sb(x), chk)
        def make(n):
            xp = torch.randn(n, S, D)
            return xp.numpy(), err_max_over_max(ref(xp.double()).numpy())
        bench_compiled("W6", case, blk, chk, x,
                       probe=torch_probe(probe_inputs("W6", case, make)) if HAVE_COMPILE else [])
        bench("W6", case, "nn.TransformerEncoderLayer fast path", lambda: tel(x), chk)


# ================================================================ jax.jit and ONNX Runtime
# Run by the processes started with --only jax / --only ort (bench/run gives
# them the interpreter of --peers-python).  Same workloads, inputs and checks
# as above; each row's record also has first_call_s (the first call:
# jax.jit's trace + XLA compile + run; ONNX Runtime's InferenceSession
# creation, with its graph optimisations, + the first run), compile_s (that
# minus the steady median) and, for the cases of PROBES, new_shapes.
JAX_SYS = "jax.jit"
ORT_SYS = "ONNX Runtime (CPU)"


def jax_mod():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def jax_bench(wl, case, fn, args, check, probe=(), system=JAX_SYS):
    """Times jax.jit(fn)(*args) (waiting for the result); probe: [(label,
    np input, check)] replacing args[0]."""
    jax, jnp = jax_mod()
    try:
        # cold: nothing from an earlier row (the same function at another
        # size, e.g. MLP B=256 after the B=32 row's probe) in JAX's caches
        jax.clear_caches()
        jf = jax.jit(lambda *a: fn(*a))
        ja = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        call = lambda: jax.block_until_ready(jf(*ja))
        first = first_call(call)
        COMPILE_TIMES.append((wl + " " + case, first))
    except Exception as e:
        emit(dict(workload=wl, case=case, system=system, status="failed", reason=fail_reason(e)))
        return

    def count():
        try:
            return jf._cache_size()
        except AttributeError:  # no such method in this JAX: say "unknown"
            return None
    pr = [(label, (lambda xp=jnp.asarray(x): jax.block_until_ready(jf(xp, *ja[1:]))), chk)
          for label, x, chk in probe]
    bench(wl, case, system, call, check, after=compile_fields(first, pr, count=count),
          xla_flags=os.environ.get("XLA_FLAGS", ""))


def jax_w1():
    jax, jnp = jax_mod()
    rng = np.random.default_rng(0)
    WB = {k: linear_weights(rng, *k) for k in ((4, 2), (16, 16), (16, 1))}
    (W4, b4), (W16, b16), (W1, b1) = WB[(4, 2)], WB[(16, 16)], WB[(16, 1)]
    key = jax.random.PRNGKey(0)

    def r64_linear(x, W, b): return x.astype(np.float64) @ W.T.astype(np.float64) + b

    def goodwhere(x, W, b, key):  # torch.rand(1) > 0.5; here a fixed key, drawn each call
        y = x @ W.T + b
        return jnp.where(jax.random.uniform(key, (1,)) > 0.5, y + 1, y - 1)

    def ret(x, W, b):
        y = x @ W.T + b
        return y, y.mean()
    cases = [
        ("Simple[1,4]", lambda x, W, b: jax.nn.relu(x @ W.T + b), (1, 4), (W4, b4),
         lambda x: np.maximum(r64_linear(x, W4, b4), 0)),
        ("GoodWhere[4,16]", goodwhere, (4, 16), (W16, b16, key), None),
        ("ReturnTensorForLog[8,16]", ret, (8, 16), (W1, b1), lambda x: r64_linear(x, W1, b1)),
        ("GoodVectorized[32,16]", lambda x: x + jnp.arange(5).sum(), (32, 16), (),
         lambda x: x.astype(np.float64) + 10),
        ("GoodDynamic[8,16]", lambda x, W, b: x @ W.T + b, (8, 16), (W16, b16), lambda x: r64_linear(x, W16, b16)),
        ("GoodDynamic[16,16]", lambda x, W, b: x @ W.T + b, (16, 16), (W16, b16),
         lambda x: r64_linear(x, W16, b16)),
    ]
    for case, fn, shape, rest, reff in cases:
        xn = rng.standard_normal(shape, dtype=np.float32)

        def check(y, xn=xn, reff=reff):
            y = y[0] if isinstance(y, tuple) else y
            if reff is None:  # GoodWhere: linear(x) + 1 or - 1
                base = r64_linear(xn, W16, b16)
                return min(err_max_over_max(base + 1)(y), err_max_over_max(base - 1)(y))
            return err_max_over_max(reff(xn))(y)
        jax_bench("W1", case, fn, (xn,) + rest, check,
                  probe_inputs("W1", case, lambda n: w1_dyn_probe(n, W16, b16)))
    xn = rng.standard_normal((4, 16), dtype=np.float32)
    jax_bench("W1", "per-op: x + 1 [4,16]", lambda x: x + 1, (xn,), err_max_over_max(xn.astype(np.float64) + 1))


def jax_w2():
    jax, jnp = jax_mod()
    rng = np.random.default_rng(0)
    xn = rng.uniform(-4, 4, N2).astype(np.float32)
    wn = rng.uniform(0.5, 1.5, N2).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, N2).astype(np.float32)
    gelu = lambda x, w, b: jax.nn.gelu(x * w + b, approximate=True)   # the tanh form
    case = "gelu(x*w+b) scalar w,b"
    jax_bench("W2", case, gelu, (xn, np.float32(1.25), np.float32(0.1)), w2_check(False, xn, wn, bn),
              w2_probe(case))
    jax_bench("W2", "gelu(x*w+b) array w,b", gelu, (xn, wn, bn), w2_check(True, xn, wn, bn))


def w3_data(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    rows = np.arange(0, n, max(1, n // 64))
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    return a, b, lambda y: float(np.max(np.abs(to_np(y)[rows] - ref)) / np.max(np.abs(ref)))


def jax_w3():
    for n in (256, 1024, 2048):
        a, b, chk = w3_data(n)
        jax_bench("W3", "sgemm n=%d" % n, lambda a, b: a @ b, (a, b), chk)


def w4_weights():
    dims = (784, 512, 512, 10)
    rng = np.random.default_rng(4)
    Ws = []
    for i in range(3):
        bound = 1 / math.sqrt(dims[i])
        Ws.append((rng.uniform(-bound, bound, (dims[i + 1], dims[i])).astype(np.float32),
                   rng.uniform(-bound, bound, dims[i + 1]).astype(np.float32)))

    def ref_mlp(x):
        h = x.astype(np.float64)
        for i, (w, b) in enumerate(Ws):
            h = h @ w.T.astype(np.float64) + b
            if i < 2:
                h = np.maximum(h, 0)
        return h
    return Ws, ref_mlp


def jax_w4():
    jax, jnp = jax_mod()
    Ws, ref_mlp = w4_weights()
    Wn = [(w.T.copy(), b) for w, b in Ws]

    def mlp(x, W1, b1, W2, b2, W3, b3):
        h = jax.nn.relu(x @ W1 + b1)
        h = jax.nn.relu(h @ W2 + b2)
        return h @ W3 + b3
    flat = tuple(a for wb in Wn for a in wb)
    for B in (1, 32, 256):
        xn = np.random.default_rng(B).standard_normal((B, 784), dtype=np.float32)
        case = "MLP B=%d" % B
        jax_bench("W4", case, mlp, (xn,) + flat, err_max_over_max(ref_mlp(xn)),
                  probe_inputs("W4", case, lambda n: w4_probe(n, ref_mlp)))


def w5_data():
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal((4096, 4096), dtype=np.float32) * 3).astype(np.float32)
    gn = rng.uniform(0.5, 1.5, 4096).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, 4096).astype(np.float32)
    rows, sm_ref, ln_ref = w5_refs(xn, gn, bn, 1e-5)

    def chk(ref, floor):
        return lambda y: float(np.max(np.abs(to_np(y)[rows] - ref) / np.maximum(np.abs(ref), floor)))
    return xn, gn, bn, chk(sm_ref, 1e-3), chk(ln_ref, 1.0)


def jax_w5():
    jax, jnp = jax_mod()
    xn, gn, bn, sm_chk, ln_chk = w5_data()
    sm, ln = "softmax [4096,4096]", "layer_norm [4096,4096]"

    def layernorm(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b
    jax_bench("W5", sm, lambda x: jax.nn.softmax(x, axis=-1), (xn,), sm_chk, w5_probe(sm, xn, gn, bn, 1e-5))
    jax_bench("W5", ln, layernorm, (xn, gn, bn), ln_chk, w5_probe(ln, xn, gn, bn, 1e-5))


W6_CASE = "block B=8 S=128 d=256"


def w6_numpy_params():
    """The W6 block's weights (torch's initialisation ranges; the layer
    norms' g in [0.5, 1.5], b in [-0.2, 0.2], as the torch peer sets them)."""
    rng = np.random.default_rng(6)
    D, FF = 256, 1024
    p = {}
    for name, i, o in (("qkv", D, 3 * D), ("proj", D, D), ("fc1", D, FF), ("fc2", FF, D)):
        p[name + "_w"], p[name + "_b"] = linear_weights(rng, i, o)
    for ln in ("ln1", "ln2"):
        p[ln + "_g"] = rng.uniform(0.5, 1.5, D).astype(np.float32)
        p[ln + "_b"] = rng.uniform(-0.2, 0.2, D).astype(np.float32)
    return p


def w6_ref64(p, x):
    """The block in float64 numpy (exact gelu through math.erf)."""
    q = {k: v.astype(np.float64) for k, v in p.items()}
    x = x.astype(np.float64)
    b, s, d = x.shape

    def ln(h, g, bb):
        mu = h.mean(-1, keepdims=True)
        return (h - mu) / np.sqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + bb
    qkv = (ln(x, q["ln1_g"], q["ln1_b"]) @ q["qkv_w"].T + q["qkv_b"]).reshape(b, s, 3, 4, 64).transpose(2, 0, 3, 1, 4)
    att = qkv[0] @ qkv[1].transpose(0, 1, 3, 2) * 0.125
    att = np.exp(att - att.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    o = (att @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + o @ q["proj_w"].T + q["proj_b"]
    h = ln(x, q["ln2_g"], q["ln2_b"]) @ q["fc1_w"].T + q["fc1_b"]
    h = 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))
    return x + h @ q["fc2_w"].T + q["fc2_b"]


def w6_inputs():
    """x [8,128,256], its check (batch element 0 against w6_ref64), the
    weights and the probe's inputs."""
    p = w6_numpy_params()
    x = np.random.default_rng(60).standard_normal((8, 128, 256), dtype=np.float32)

    def check_of(x):
        ref = w6_ref64(p, x[:1])
        return lambda y: err_max_over_max(ref[0])(to_np(y)[0])

    def make(n):
        xp = np.random.default_rng(60 + n).standard_normal((n, 128, 256), dtype=np.float32)
        return xp, check_of(xp)
    return x, check_of(x), p, probe_inputs("W6", W6_CASE, make)


def jax_w6():
    jax, jnp = jax_mod()
    x, chk, p, probe = w6_inputs()

    def ln(h, g, b):
        mu = h.mean(-1, keepdims=True)
        return (h - mu) * jax.lax.rsqrt(((h - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

    def block(x, p):
        b, s, d = x.shape
        qkv = (ln(x, p["ln1_g"], p["ln1_b"]) @ p["qkv_w"].T + p["qkv_b"]).reshape(b, s, 3, 4, 64)
        qkv = qkv.transpose(2, 0, 3, 1, 4)
        att = jax.nn.softmax(qkv[0] @ qkv[1].transpose(0, 1, 3, 2) * 0.125, axis=-1)
        o = (att @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, s, d)
        x = x + o @ p["proj_w"].T + p["proj_b"]
        return x + jax.nn.gelu(ln(x, p["ln2_g"], p["ln2_b"]) @ p["fc1_w"].T + p["fc1_b"],
                               approximate=False) @ p["fc2_w"].T + p["fc2_b"]
    jax_bench("W6", W6_CASE, block, (x, {k: jnp.asarray(v) for k, v in p.items()}), chk, probe)


# ---------------------------------------------------------------- ONNX Runtime
def ort_graph(nodes, inputs, outputs, inits, opset=17):
    """A serialised ONNX model built with onnx.helper: inputs [(name,
    shape with str for a symbolic dim)], outputs [names], inits {name: array}."""
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph(
        nodes, "tdsl_bench",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), name=k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tdsl bench/peers.py")
    m.ir_version = 8   # readable by every ONNX Runtime of the last years
    return m.SerializeToString()


def N(op, ins, outs, **attrs):
    from onnx import helper
    return helper.make_node(op, ins, outs, **attrs)


def ort_bench(wl, case, model, feeds, check, probe=()):
    """Times session.run on feeds (dict); the session is made here: CPU
    provider, all graph optimisations, intra_op_num_threads = T, one
    inter-op thread, sequential execution.  probe: [(label, np input,
    check)] replacing the first feed."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = T
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL

    def run(f):
        out = sess.run(None, f)
        return out[0] if len(out) == 1 else tuple(out)
    try:
        t0 = time.perf_counter()
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        run(feeds)
        first = time.perf_counter() - t0
        COMPILE_TIMES.append((wl + " " + case, first))
    except Exception as e:
        emit(dict(workload=wl, case=case, system=ORT_SYS, status="failed", reason=fail_reason(e)))
        return
    k0 = next(iter(feeds))
    pr = [(label, (lambda f=dict(feeds, **{k0: x}): run(f)), chk) for label, x, chk in probe]
    bench(wl, case, ORT_SYS, lambda: run(feeds), check,
          after=compile_fields(first, pr, recompiles_never="one session for every size: the batch dim is "
                                                            "symbolic in the graph, nothing is compiled per size"),
          ort_threads="intra_op_num_threads=%d inter_op_num_threads=1 sequential, ORT_ENABLE_ALL" % T)


def gemm_nodes(x, W, b, y, prefix, inits, relu=False):
    """y = x @ W.T + b (Gemm, transB) [then relu]; adds W, b to inits."""
    inits[prefix + "_w"], inits[prefix + "_b"] = W, b
    if not relu:
        return [N("Gemm", [x, prefix + "_w", prefix + "_b"], [y], transB=1)]
    return [N("Gemm", [x, prefix + "_w", prefix + "_b"], [prefix + "_pre"], transB=1), N("Relu", [prefix + "_pre"], [y])]


def ort_w1():
    rng = np.random.default_rng(0)
    WB = {k: linear_weights(rng, *k) for k in ((4, 2), (16, 16), (16, 1))}
    (W4, b4), (W16, b16), (W1, b1) = WB[(4, 2)], WB[(16, 16)], WB[(16, 1)]

    def r64_linear(x, W, b): return x.astype(np.float64) @ W.T.astype(np.float64) + b
    models = {}
    i = {}
    models["Simple"] = ort_graph(gemm_nodes("x", W4, b4, "y", "fc", i, relu=True), [("x", ["N", 4])], ["y"], i)
    i = {"one": np.float32(1), "half": np.float32(0.5)}
    models["GoodWhere"] = ort_graph(gemm_nodes("x", W16, b16, "h", "h", i) + [
        N("RandomUniform", [], ["r"], shape=[1], dtype=1), N("Greater", ["r", "half"], ["c"]),
        N("Add", ["h", "one"], ["hp"]), N("Sub", ["h", "one"], ["hm"]), N("Where", ["c", "hp", "hm"], ["y"])],
        [("x", ["N", 16])], ["y"], i)
    i = {}
    models["ReturnTensorForLog"] = ort_graph(gemm_nodes("x", W1, b1, "y", "h", i) + [
        N("ReduceMean", ["y"], ["m"], keepdims=0)], [("x", ["N", 16])], ["y", "m"], i)
    i = {"s": np.int64(0), "l": np.int64(5), "d": np.int64(1)}
    models["GoodVectorized"] = ort_graph([
        N("Range", ["s", "l", "d"], ["r"]), N("ReduceSum", ["r"], ["t"], keepdims=0), N("Cast", ["t"], ["tf"], to=1),
        N("Add", ["x", "tf"], ["y"])], [("x", ["N", 16])], ["y"], i)
    i = {}
    models["GoodDynamic"] = ort_graph(gemm_nodes("x", W16, b16, "y", "h", i), [("x", ["N", 16])], ["y"], i)
    cases = [("Simple[1,4]", "Simple", (1, 4), lambda x: np.maximum(r64_linear(x, W4, b4), 0)),
             ("GoodWhere[4,16]", "GoodWhere", (4, 16), None),
             ("ReturnTensorForLog[8,16]", "ReturnTensorForLog", (8, 16), lambda x: r64_linear(x, W1, b1)),
             ("GoodVectorized[32,16]", "GoodVectorized", (32, 16), lambda x: x.astype(np.float64) + 10),
             ("GoodDynamic[8,16]", "GoodDynamic", (8, 16), lambda x: r64_linear(x, W16, b16)),
             ("GoodDynamic[16,16]", "GoodDynamic", (16, 16), lambda x: r64_linear(x, W16, b16))]
    for case, cls, shape, reff in cases:
        xn = rng.standard_normal(shape, dtype=np.float32)

        def check(y, xn=xn, reff=reff):
            y = y[0] if isinstance(y, tuple) else y
            if reff is None:
                base = r64_linear(xn, W16, b16)
                return min(err_max_over_max(base + 1)(y), err_max_over_max(base - 1)(y))
            return err_max_over_max(reff(xn))(y)
        ort_bench("W1", case, models[cls], {"x": xn}, check,
                  probe_inputs("W1", case, lambda n: w1_dyn_probe(n, W16, b16)))
    xn = rng.standard_normal((4, 16), dtype=np.float32)
    ort_bench("W1", "per-op: x + 1 [4,16]", ort_graph([N("Add", ["x", "one"], ["y"])], [("x", [4, 16])], ["y"],
                                                      {"one": np.float32(1)}),
              {"x": xn}, err_max_over_max(xn.astype(np.float64) + 1))


def gelu_tanh_nodes(z, y, inits):
    """0.5 z (1 + tanh(K0 (z + K1 z^3))), the form torch.onnx.export writes
    for F.gelu(approximate="tanh") below opset 20 (ONNX Runtime fuses it)."""
    inits.update(k0=np.float32(K0), k1=np.float32(K1), one=np.float32(1), half=np.float32(0.5))
    return [N("Mul", [z, z], ["z2"]), N("Mul", ["z2", z], ["z3"]), N("Mul", ["z3", "k1"], ["a"]),
            N("Add", [z, "a"], ["s"]), N("Mul", ["s", "k0"], ["u"]), N("Tanh", ["u"], ["t"]),
            N("Add", ["t", "one"], ["t1"]), N("Mul", [z, "t1"], ["zt"]), N("Mul", ["zt", "half"], [y])]


def ort_w2():
    rng = np.random.default_rng(0)
    xn = rng.uniform(-4, 4, N2).astype(np.float32)
    wn = rng.uniform(0.5, 1.5, N2).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, N2).astype(np.float32)
    case = "gelu(x*w+b) scalar w,b"
    i = {"w": np.float32(1.25), "b": np.float32(0.1)}
    nodes = [N("Mul", ["x", "w"], ["xw"]), N("Add", ["xw", "b"], ["z"])] + gelu_tanh_nodes("z", "y", i)
    ort_bench("W2", case, ort_graph(nodes, [("x", ["N"])], ["y"], i), {"x": xn}, w2_check(False, xn, wn, bn),
              w2_probe(case))
    i = {}
    nodes = [N("Mul", ["x", "w"], ["xw"]), N("Add", ["xw", "b"], ["z"])] + gelu_tanh_nodes("z", "y", i)
    ort_bench("W2", "gelu(x*w+b) array w,b", ort_graph(nodes, [("x", ["N"]), ("w", ["N"]), ("b", ["N"])], ["y"], i),
              {"x": xn, "w": wn, "b": bn}, w2_check(True, xn, wn, bn))


def ort_w3():
    for n in (256, 1024, 2048):
        a, b, chk = w3_data(n)
        ort_bench("W3", "sgemm n=%d" % n, ort_graph([N("MatMul", ["a", "b"], ["y"])], [("a", [n, n]), ("b", [n, n])],
                                                    ["y"], {}), {"a": a, "b": b}, chk)


def ort_w4():
    Ws, ref_mlp = w4_weights()
    i = {}
    nodes = (gemm_nodes("x", *Ws[0], "h1", "fc1", i, relu=True) + gemm_nodes("h1", *Ws[1], "h2", "fc2", i, relu=True)
             + gemm_nodes("h2", *Ws[2], "y", "fc3", i))
    model = ort_graph(nodes, [("x", ["B", 784])], ["y"], i)
    for B in (1, 32, 256):
        xn = np.random.default_rng(B).standard_normal((B, 784), dtype=np.float32)
        case = "MLP B=%d" % B
        ort_bench("W4", case, model, {"x": xn}, err_max_over_max(ref_mlp(xn)),
                  probe_inputs("W4", case, lambda n: w4_probe(n, ref_mlp)))


def ort_w5():
    xn, gn, bn, sm_chk, ln_chk = w5_data()
    sm, ln = "softmax [4096,4096]", "layer_norm [4096,4096]"
    ort_bench("W5", sm, ort_graph([N("Softmax", ["x"], ["y"], axis=-1)], [("x", ["M", 4096])], ["y"], {}),
              {"x": xn}, sm_chk, w5_probe(sm, xn, gn, bn, 1e-5))
    ort_bench("W5", ln, ort_graph([N("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                                  [("x", ["M", 4096])], ["y"], {"g": gn, "b": bn}),
              {"x": xn}, ln_chk, w5_probe(ln, xn, gn, bn, 1e-5))


def ort_w6():
    x, chk, p, probe = w6_inputs()
    i = {k: v for k, v in p.items() if k.startswith("ln")}
    for name in ("qkv", "proj", "fc1", "fc2"):   # MatMul takes [in, out]
        i[name + "_wt"], i[name + "_b"] = p[name + "_w"].T.copy(), p[name + "_b"]
    i.update(shp5=np.array([0, 0, 3, 4, 64], np.int64), shp3=np.array([0, 0, 256], np.int64),
             i0=np.int64(0), i1=np.int64(1), i2=np.int64(2), scale=np.float32(0.125),
             sqrt2=np.float32(math.sqrt(2)), one=np.float32(1), half=np.float32(0.5))

    def lin(x, name, y):
        return [N("MatMul", [x, name + "_wt"], [y + "_m"]), N("Add", [y + "_m", name + "_b"], [y])]
    nodes = ([N("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], axis=-1, epsilon=1e-5)] + lin("h", "qkv", "qkv")
             + [N("Reshape", ["qkv", "shp5"], ["q5"]), N("Transpose", ["q5"], ["qt"], perm=[2, 0, 3, 1, 4]),
                N("Gather", ["qt", "i0"], ["q"], axis=0), N("Gather", ["qt", "i1"], ["k"], axis=0),
                N("Gather", ["qt", "i2"], ["v"], axis=0), N("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                N("MatMul", ["q", "kt"], ["s0"]), N("Mul", ["s0", "scale"], ["s"]),
                N("Softmax", ["s"], ["a"], axis=-1), N("MatMul", ["a", "v"], ["o4"]),
                N("Transpose", ["o4"], ["o4t"], perm=[0, 2, 1, 3]), N("Reshape", ["o4t", "shp3"], ["o"])]
             + lin("o", "proj", "po") + [N("Add", ["x", "po"], ["x1"]),
                                         N("LayerNormalization", ["x1", "ln2_g", "ln2_b"], ["h2"], axis=-1,
                                           epsilon=1e-5)]
             + lin("h2", "fc1", "f1") + [N("Div", ["f1", "sqrt2"], ["fd"]), N("Erf", ["fd"], ["fe"]),
                                         N("Add", ["fe", "one"], ["fe1"]), N("Mul", ["f1", "fe1"], ["fm"]),
                                         N("Mul", ["fm", "half"], ["g"])]
             + lin("g", "fc2", "f2") + [N("Add", ["x1", "f2"], ["y"])])
    ort_bench("W6", W6_CASE, ort_graph(nodes, [("x", ["B", 128, 256])], ["y"], i), {"x": x}, chk, probe)


JAX_WORKLOADS = {"w1": jax_w1, "w2": jax_w2, "w3": jax_w3, "w4": jax_w4, "w5": jax_w5, "w6": jax_w6}
ORT_WORKLOADS = {"w1": ort_w1, "w2": ort_w2, "w3": ort_w3, "w4": ort_w4, "w5": ort_w5, "w6": ort_w6}


def w7():
    if ONLY:
        what = {"jax": JAX_SYS + " first call (trace + XLA compile + run)",
                "ort": ORT_SYS + " first call (InferenceSession with graph optimisations + run)"}[ONLY]
        for case, secs in COMPILE_TIMES:
            if case.startswith(("W4 MLP B=1", "W6")):
                emit(dict(workload="W7", case=case, system=what, status="ok", median_s=secs, min_s=secs,
                          max_s=secs, runs=1, entry=case))
        return
    if torch is None or not hasattr(torch, "compile"):
        v = torch.__version__ if torch is not None else "none"
        missing("W7", "torch.compile", "torch.compile needs PyTorch 2.x (this torch: %s)" % v)
        return
    if not COMPILE_TIMES:
        emit(dict(workload="W7", case="*", system="torch.compile", status="not available",
                  reason="no torch.compile row ran before W7 (run W4 and W6 first)"))
    for case, secs in COMPILE_TIMES:
        if case.startswith(("W4 MLP B=1", "W6")):
            emit(dict(workload="W7", case=case, system="torch.compile first call (compile + run), cold",
                      status="ok", median_s=secs, min_s=secs, max_s=secs, runs=1, entry=case))


WORKLOADS = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5, "w6": w6, "w7": w7}


def serve_one(name):
    f = {"jax": JAX_WORKLOADS, "ort": ORT_WORKLOADS}.get(ONLY, WORKLOADS).get(name)
    if ONLY and name == "w7":
        f = w7
    if f is None:
        if name not in WORKLOADS:
            emit({"status": "failed", "reason": "unknown workload %r" % name})
    else:
        f()
    print(json.dumps({"done": name}), flush=True)


def hello():
    """The first record: versions and this process's thread settings."""
    d = dict(status="info", system="peers", numpy=np.__version__, only=ONLY,
             torch=(torch.__version__ if torch is not None else None),
             torch_threads=(torch.get_num_threads() if torch is not None else None))
    try:
        d["cpus"] = sorted(os.sched_getaffinity(0))
    except AttributeError:
        pass
    if ONLY == "jax":
        jax, _ = jax_mod()
        d.update(jax=jax.__version__, devices=[str(x) for x in jax.devices()],
                 threads_how="XLA_FLAGS=%s" % os.environ.get("XLA_FLAGS", ""))
    elif ONLY == "ort":
        import onnx
        import onnxruntime as ort
        d.update(onnxruntime=ort.__version__, onnx=onnx.__version__,
                 threads_how="SessionOptions intra_op_num_threads=%d, inter_op_num_threads=1, sequential, "
                             "ORT_ENABLE_ALL, CPUExecutionProvider" % T)
    elif torch is not None:
        d["threads_how"] = "torch.set_num_threads(%d), set_num_interop_threads(1), OMP/OPENBLAS/MKL_NUM_THREADS=%d" % (
            T, T)
        if HAVE_COMPILE:
            try:  # inductor's CPU vector ISA: INVALID_VEC_ISA means scalar kernels
                from torch._inductor.cpu_vec_isa import pick_vec_isa
                d["inductor_vec_isa"] = str(pick_vec_isa())
            except Exception as e:
                d["inductor_vec_isa"] = "unknown (%s)" % fail_reason(e)
    else:
        d["threads_how"] = "OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=%d" % T
    return d


def main():
    emit(hello())
    if "--serve" in sys.argv:
        print(json.dumps({"done": "hello"}), flush=True)
        for line in sys.stdin:
            name = line.strip()
            if name in ("", "quit"):
                break
            serve_one(name)
        return
    for a in sys.argv[1:]:
        if a in WORKLOADS:
            serve_one(a)


if __name__ == "__main__":
    main()

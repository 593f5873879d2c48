"""peers.py - the peers of bench/run: numpy and PyTorch on W1-W6.

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

usage: /usr/bin/python3 peers.py --threads T [--quick] [--tuned] [--serve | w1 w2 ...]
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


def arg_threads():
    for i, a in enumerate(sys.argv):
        if a == "--threads":
            return int(sys.argv[i + 1])
    return 1


T = arg_threads()
QUICK = "--quick" in sys.argv
TUNED = "--tuned" in sys.argv
# Thread counts must be in the environment before numpy/torch load OpenBLAS/OpenMP.
for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = str(T)

import numpy as np  # noqa: E402

try:
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


def emit(d):
    d.setdefault("threads", T)
    system = d.get("system")
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


def bench(wl, case, system, fn, check=None, **extra):
    """Runs fn once for the check, then times it; emits one record."""
    if TUNED and not is_torch_row(system):
        return
    try:
        err = check(fn()) if check else None
        r = timeit(fn)
    except Exception as e:  # a peer that fails is reported, not fatal
        emit(dict(workload=wl, case=case, system=system, status="failed",
                  reason=str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__))
        return
    r.update(workload=wl, case=case, system=system, status="ok", **extra)
    if err is not None:
        r["relerr"] = float(err)
    emit(r)


def missing(wl, what, why):
    emit(dict(workload=wl, case="*", system=what, status="not available", reason=why))


HAVE_COMPILE = torch is not None and hasattr(torch, "compile")
COMPILE_TIMES = []  # (case, seconds of the first call) for W7


def bench_compiled(wl, case, fn, check, *args):
    """A torch.compile row (PyTorch 2.x only); the first call, which
    compiles, is timed separately and kept for W7."""
    if not HAVE_COMPILE:
        return
    try:
        cf = torch.compile(fn)
        t0 = time.perf_counter()
        cf(*args)
        COMPILE_TIMES.append((wl + " " + case, time.perf_counter() - t0))
    except Exception as e:
        emit(dict(workload=wl, case=case, system="torch.compile", status="failed",
                  reason=(str(e).strip().splitlines() or [type(e).__name__])[0][:200]))
        return
    bench(wl, case, "torch.compile", lambda: cf(*args), check)


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
            w1_torch_case(case, models[cls](), torch.from_numpy(xn), check)
        bench("W1", case, "numpy", lambda: npf(xn), check)
    # per-op overhead: one `x + 1` on [4, 16]
    xn = rng.standard_normal((4, 16), dtype=np.float32)
    chk = err_max_over_max(xn.astype(np.float64) + 1)
    if torch is not None:
        xt = torch.from_numpy(xn)
        with torch.no_grad():
            bench("W1", "per-op: x + 1 [4,16]", "torch eager no_grad", lambda: xt + 1, chk)
    bench("W1", "per-op: x + 1 [4,16]", "numpy", lambda: xn + f32(1), chk)


def w1_torch_case(case, m, xt, check):
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
        bench_compiled("W1", case, m, check, xt)
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


def w2():
    rng = np.random.default_rng(0)
    xn = rng.uniform(-4, 4, N2).astype(np.float32)
    wn = rng.uniform(0.5, 1.5, N2).astype(np.float32)
    bn = rng.uniform(-0.5, 0.5, N2).astype(np.float32)
    ws, bs = 1.25, 0.1

    def mkcheck(arr):
        x = xn[::97].astype(np.float64)
        z = x * (wn[::97].astype(np.float64) if arr else ws) + (bn[::97].astype(np.float64) if arr else bs)
        r = 0.5 * z * (1 + np.tanh(K0 * (z + K1 * z ** 3)))
        return lambda y: float(np.max(np.abs(to_np(y)[::97] - r) / np.maximum(np.abs(r), 1.0)))

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
            bench_compiled("W2", case, lambda x, w, b: F.gelu(x * w + b, approximate="tanh"), chk, *args)
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
            bench_compiled("W4", case, m, chk, xt)
            if not QUICK:
                tf = torch.jit.freeze(torch.jit.trace(m, xt))
                bench("W4", case, "torch.jit.trace+freeze", lambda: tf(xt), chk)


# ---------------------------------------------------------------- W5
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
        bench_compiled("W5", sm, lambda x: torch.softmax(x, -1), chk(sm_ref, 1e-3), xt)
        bench_compiled("W5", ln, lambda x: F.layer_norm(x, (N,), gt, bt, eps), chk(ln_ref, 1.0), xt)
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
        bench_compiled("W6", case, blk, chk, x)
        bench("W6", case, "nn.TransformerEncoderLayer fast path", lambda: tel(x), chk)


def w7():
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
    f = WORKLOADS.get(name)
    if f is None:
        emit({"status": "failed", "reason": "unknown workload %r" % name})
    else:
        f()
    print(json.dumps({"done": name}), flush=True)


def main():
    emit(dict(status="info", system="peers", numpy=np.__version__,
              torch=(torch.__version__ if torch is not None else None),
              torch_threads=(torch.get_num_threads() if torch is not None else None)))
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

#!/usr/bin/python3
"""w7_compile.py - W7 (PERFORMANCE.md): cold and cached compile time of the
W4 MLP (784-512-512-10, batch 32), the W6 block (d 256, 4 heads, MLP 1024,
B 8, S 128), a 12-layer GPT-2-sized forward (d 768, 12 heads, MLP 3072,
B 1, T 128, random weights) beside its 1-layer cut, and the W8 training
step (AdamW, batch 128): tdsl beside torch.compile's and JAX jit's first
call, in one run, at each thread count.

  bench/w7_compile.py --tdsl BUILD/tdsl [--threads 1,2] [--python2 ~/torch2/bin/python]

tdsl: `tdsl run FILE --entry E --compiled` with TDSL_DEBUG=time in a fresh
compile cache (cold), then again in the same cache (cached); the time is
the sum of the phases TDSL_DEBUG=time prints (front end, lowering, passes,
planning, code generation, libgccjit or the cache hit: everything from the
source text to callable code), so the random initialisation of the weights
and the run itself are left out.  Best of 3 cold runs (each with its own
empty cache) and of 3 cached ones.

Peers (in --python2, a venv with PyTorch 2.x and JAX from PyPI): the first
call minus the median of later calls (torch.compile with the default
inductor backend, a fresh process per model so nothing is cached in
memory, and TORCHINDUCTOR_FX_GRAPH_CACHE off for cold; JAX: jit's
lower + compile).  Threads pinned with taskset and the libraries' own
settings.  Prints a Markdown table.
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

GPT = '''import nn
model GPT(layers: int = {L}, d: int = 768, heads: int = 12, hidden: int = 3072) {{
  blocks = [nn.TransformerBlock(d, heads, hidden) for i in 0..layers]
  ln = nn.LayerNorm(d)
  fn forward(x: f32[1, 128, d]) -> f32[1, 128, d] {{
    let h = x
    for i in 0..layers {{ h = blocks[i](h) }}
    ln(h)
  }}
}}
'''

# name, file (or GPT layers), entry, inputs (name, shape, dtype)
MODELS = [
    ("W4 MLP", os.path.join(HERE, "w8_mlp.td"), "MLP.forward", [("x", (32, 784), "f32")]),
    ("W6 block", os.path.join(HERE, "w6_block.td"), "Block.forward", [("x", (8, 128, 256), "f32")]),
    ("GPT 1 layer", 1, "GPT.forward", [("x", (1, 128, 768), "f32")]),
    ("GPT 12 layers", 12, "GPT.forward", [("x", (1, 128, 768), "f32")]),
    ("W8 step", os.path.join(HERE, "w8_mlp.td"), "W8.step", [("x", (128, 784), "f32"), ("y", (128,), "i64")]),
]

PHASE = re.compile(r"^tdsl: time: (.*?) ([0-9.]+) ms", re.M)


def tdsl_compile_ms(tdsl, path, entry, ins, cache, threads):
    env = dict(os.environ, TDSL_DEBUG="time", TDSL_CACHE_DIR=cache, TDSL_NUM_THREADS=str(threads))
    cmd = ["taskset", "-c", ",".join(str(i) for i in range(threads)), tdsl, "run", path, "--entry", entry, "--compiled"]
    for n, f in ins:
        cmd += ["--in", "%s=%s" % (n, f)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("tdsl failed: %s\n%s" % (" ".join(cmd), r.stderr))
    phases = PHASE.findall(r.stderr)
    return sum(float(ms) for _, ms in phases), {p: float(ms) for p, ms in phases}


PEER = r'''
import json, os, sys, time, statistics
model, T, system = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.environ["OMP_NUM_THREADS"] = str(T)
os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
import numpy as np
rng = np.random.default_rng(0)
def timed(f, args):
    t0 = time.perf_counter(); f(*args); first = time.perf_counter() - t0
    ts = []
    for _ in range(5):
        t0 = time.perf_counter(); f(*args); ts.append(time.perf_counter() - t0)
    return first - statistics.median(ts)
out = {}
if system == "torch.compile":
    import torch, torch.nn as nn, torch.nn.functional as F
    torch.set_num_threads(T); torch.manual_seed(0)
    out["version"] = torch.__version__
    class Block(nn.Module):
        def __init__(s, d, h, f):
            super().__init__(); s.h = h
            s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            s.q, s.k, s.v, s.o = (nn.Linear(d, d) for _ in range(4))
            s.fc1, s.fc2 = nn.Linear(d, f), nn.Linear(f, d)
        def forward(s, x):
            B, T_, D = x.shape; E = D // s.h
            y = s.ln1(x)
            sp = lambda t: t.view(B, T_, s.h, E).transpose(1, 2)
            a = F.scaled_dot_product_attention(sp(s.q(y)), sp(s.k(y)), sp(s.v(y)), is_causal=True)
            x = x + s.o(a.transpose(1, 2).reshape(B, T_, D))
            return x + s.fc2(F.gelu(s.fc1(s.ln2(x))))
    class GPT(nn.Module):
        def __init__(s, L):
            super().__init__(); s.b = nn.ModuleList(Block(768, 12, 3072) for _ in range(L)); s.ln = nn.LayerNorm(768)
        def forward(s, x):
            for b in s.b: x = b(x)
            return s.ln(x)
    mlp = lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    with torch.no_grad():
        if model == "W4 MLP": m, x = mlp(), (torch.rand(32, 784),)
        elif model == "W6 block": m, x = Block(256, 4, 1024), (torch.rand(8, 128, 256),)
        elif model.startswith("GPT"): m, x = GPT(int(model.split()[1])), (torch.rand(1, 128, 768),)
    if model == "W8 step":
        m = mlp(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        x, y = torch.rand(128, 784), torch.randint(0, 10, (128,))
        @torch.compile
        def step(x, y):
            opt.zero_grad(set_to_none=True)
            l = F.cross_entropy(m(x), y); l.backward(); opt.step(); return l
        out["compile_s"] = timed(step, (x, y))
    else:
        cm = torch.compile(m)
        with torch.no_grad():
            out["compile_s"] = timed(cm, x)
else:
    import jax, jax.numpy as jnp
    out["version"] = jax.__version__
    k = iter(jax.random.split(jax.random.PRNGKey(0), 1000))
    def lin(i, o):
        b = 1 / np.sqrt(i)
        return (jax.random.uniform(next(k), (i, o), minval=-b, maxval=b), jnp.zeros((o,)))
    def ln(x, eps=1e-5):
        m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + eps)
    def block(p, x, h, causal):
        B, T_, D = x.shape; E = D // h
        y = ln(x)
        sp = lambda t: t.reshape(B, T_, h, E).transpose(0, 2, 1, 3)
        q, kk, v = (sp(y @ p[i][0] + p[i][1]) for i in range(3))
        s = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(E)
        if causal: s = jnp.where(jnp.tril(jnp.ones((T_, T_), bool)), s, -jnp.inf)
        a = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T_, D)
        x = x + a @ p[3][0] + p[3][1]
        return x + jax.nn.gelu(ln(x) @ p[4][0] + p[4][1]) @ p[5][0] + p[5][1]
    bp = lambda d, f: [lin(d, d), lin(d, d), lin(d, d), lin(d, d), lin(d, f), lin(f, d)]
    mp = [lin(784, 512), lin(512, 512), lin(512, 10)]
    def mlp(p, x):
        for j, (w, b) in enumerate(p):
            x = x @ w + b
            if j < 2: x = jax.nn.relu(x)
        return x
    if model == "W4 MLP": f, args = mlp, (mp, jnp.ones((32, 784)))
    elif model == "W6 block": f, args = (lambda p, x: block(p, x, 4, False)), (bp(256, 1024), jnp.ones((8, 128, 256)))
    elif model.startswith("GPT"):
        L = int(model.split()[1])
        f = lambda p, x: ln(__import__("functools").reduce(lambda h, q: block(q, h, 12, True), p, x))
        args = ([bp(768, 3072) for _ in range(L)], jnp.ones((1, 128, 768)))
    else:
        def loss(p, x, y):
            lp = jax.nn.log_softmax(mlp(p, x))
            return -jnp.mean(jnp.take_along_axis(lp, y[:, None], axis=1))
        def f(state, x, y):
            p, m, v, t = state
            l, g = jax.value_and_grad(loss)(p, x, y)
            t = t + 1
            m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
            v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
            p = jax.tree_util.tree_map(lambda p, m, v: p * (1 - 1e-5) - 1e-3 * (m / (1 - 0.9 ** t)) /
                                       (jnp.sqrt(v / (1 - 0.999 ** t)) + 1e-8), p, m, v)
            return (p, m, v, t), l
        z = jax.tree_util.tree_map(jnp.zeros_like, mp)
        args = ((mp, z, z, jnp.zeros(())), jnp.ones((128, 784)), jnp.zeros((128,), jnp.int32))
    t0 = time.perf_counter()
    jax.jit(f).lower(*args).compile()
    out["compile_s"] = time.perf_counter() - t0
print(json.dumps(out))
'''


def peer(py, model, threads, system):
    cmd = ["taskset", "-c", ",".join(str(i) for i in range(threads)), py, "-c", PEER, model, str(threads), system]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), XLA_FLAGS="--xla_cpu_multi_thread_eigen=%s" % (
        "false" if threads == 1 else "true"))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        return None, "failed: " + r.stderr.strip().splitlines()[-1][:120] if r.stderr.strip() else "failed"
    d = json.loads(r.stdout.strip().splitlines()[-1])
    return d["compile_s"] * 1e3, d["version"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdsl", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--python2", default=os.path.expanduser("~/torch2/bin/python"))
    ap.add_argument("--no-peers", action="store_true")
    a = ap.parse_args()
    import numpy as np
    work = tempfile.mkdtemp(prefix="w7.")
    rows = []
    try:
        for name, src, entry, ins in MODELS:
            path = src
            if isinstance(src, int):
                path = os.path.join(work, "gpt%d.td" % src)
                with open(path, "w") as f:
                    f.write(GPT.format(L=src))
            files = []
            for n, shape, dt in ins:
                fn = os.path.join(work, "%s_%s.npy" % (name.replace(" ", "_"), n))
                v = np.random.default_rng(1).random(shape).astype(np.float32) if dt == "f32" else \
                    np.random.default_rng(1).integers(0, 10, shape).astype(np.int64)
                np.save(fn, v)
                files.append((n, fn))
            for T in [int(t) for t in a.threads.split(",")]:
                cold, warm, detail = [], [], None
                for rep in range(3):
                    cache = os.path.join(work, "cache_%s_%d_%d" % (name.replace(" ", "_"), T, rep))
                    ms, det = tdsl_compile_ms(a.tdsl, path, entry, files, cache, T)
                    if not cold or ms < min(cold):
                        detail = det
                    cold.append(ms)
                    warm.append(tdsl_compile_ms(a.tdsl, path, entry, files, cache, T)[0])
                row = {"model": name, "T": T, "cold": min(cold), "cached": min(warm),
                       "jit": detail.get("libgccjit compile, into the cache, and load", 0)}
                if not a.no_peers:
                    row["torch"], row["torch_v"] = peer(a.python2, name, T, "torch.compile")
                    row["jax"], row["jax_v"] = peer(a.python2, name, T, "jax")
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fmt = lambda v: "-" if v is None else "%.0f" % v
    print("| model | threads | tdsl cold (ms) | of it libgccjit | tdsl cached (ms) | torch.compile first call (ms) | JAX jit (ms) | tdsl / best peer |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        peers = [v for v in (r.get("torch"), r.get("jax")) if isinstance(v, float)]
        ratio = "%.2f" % (r["cold"] / min(peers)) if peers else "-"
        print("| %s | %d | %s | %s | %.1f | %s | %s | %s |" % (r["model"], r["T"], fmt(r["cold"]), fmt(r["jit"]),
              r["cached"], fmt(r.get("torch")), fmt(r.get("jax")), ratio))
    v = next((r for r in rows if r.get("torch_v")), None)
    if v:
        print("\nPyTorch %s, JAX %s." % (v.get("torch_v"), v.get("jax_v")))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""w10_lstm.py - W10 (PERFORMANCE.md): a one-layer LSTM (hidden 256, batch
32, input 256) over T = 128 and T = 1024 steps, forward and a training step
(mean squared error of the last hidden state, SGD lr 0.01), tdsl beside
PyTorch's nn.LSTM, torch.compile and JAX lax.scan, in one run, at each
thread count; and the compile time of rolled loops (scan) against unrolled
ones as the trip count grows.

  bench/w10_lstm.py --build BUILD [--threads 1,2] [--quick] [--python2 ~/venv/bin/python]

tdsl: bench/w10_lstm.td through bench/harness.c --mode compiled (the CPU
compiler, compile cache off for the cold compile): T is symbolic there, so
one compiled graph serves both lengths.  The compile-time table compiles,
cold, programs whose trip count is written in the source: the LSTM with a
literal T (16 and 1024), a `fold` of tanh(h @ w + b) with length 10 and
10 000, and the same recurrence as an unrolled `for` loop of 10, 100 and
1000 steps (what every loop was before scan).

Peers: Debian's PyTorch 1.13 (this interpreter: nn.LSTM eager, forward
under no_grad) and, in --python2 (a venv from PyPI with PyTorch 2.x and
JAX), PyTorch 2.x eager, torch.compile (inductor, of the module's forward
and of the whole training step) and JAX (jit of a lax.scan LSTM, the step
with jax.grad).  The time is the median of 5 timed chunks after warm-up
(compile excluded).  Threads pinned with taskset and the libraries' own
settings.  Prints Markdown tables.
"""
import argparse, json, os, re, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
H, B, I = 256, 32, 256

PEER = r'''
import json, os, sys, time, statistics
T, threads, system, kind, quick = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] == "1"
os.environ["OMP_NUM_THREADS"] = str(threads)
import numpy as np
H, B, I = 256, 32, 256
rng = np.random.default_rng(0)
X = rng.standard_normal((T, B, I), dtype=np.float32)
Y = rng.standard_normal((B, H), dtype=np.float32)
def timed(fn):
    for i in range(1 if quick else 3): fn()       # warm-up (and compile)
    per = 1 if (quick or T > 256) else 3
    ts = []
    for c in range(3 if quick else 5):
        t0 = time.perf_counter()
        for i in range(per): fn()
        ts.append((time.perf_counter() - t0) / per)
    return statistics.median(ts)
if system.startswith("torch"):
    import torch
    torch.set_num_threads(threads)
    m = torch.nn.LSTM(I, H)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    def fwd(x):
        return m(x)[1][0][0]
    def step(x, y):
        opt.zero_grad()
        l = ((m(x)[1][0][0] - y) ** 2).mean()
        l.backward()
        opt.step()
        return l
    if system == "torch.compile":
        fwd, step = torch.compile(fwd), torch.compile(step)
    if kind == "forward":
        def run():
            with torch.no_grad(): fwd(x)
    else:
        def run(): step(x, y).item()
    s = timed(run)
    print(json.dumps({"system": system + " " + torch.__version__.split("+")[0], "s": s}))
else:
    import jax, jax.numpy as jnp
    k = 1.0 / np.sqrt(H)
    p = {n: jnp.asarray(rng.uniform(-k, k, s).astype(np.float32)) for n, s in
         (("wi", (4 * H, I)), ("wh", (4 * H, H)), ("bi", (4 * H,)), ("bh", (4 * H,)))}
    def last(p, x):
        xw = x @ p["wi"].T + p["bi"]
        def cell(s, xt):
            h, c = s
            g = xt + h @ p["wh"].T + p["bh"]
            i, f, gg, o = jnp.split(g, 4, axis=-1)
            c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
            h2 = jax.nn.sigmoid(o) * jnp.tanh(c2)
            return (h2, c2), None
        (h, c), _ = jax.lax.scan(cell, (jnp.zeros((B, H)), jnp.zeros((B, H))), xw)
        return h
    fwd = jax.jit(last)
    def loss(p, x, y): return jnp.mean((last(p, x) - y) ** 2)
    @jax.jit
    def step(p, x, y):
        l, g = jax.value_and_grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), l
    x, y = jnp.asarray(X), jnp.asarray(Y)
    state = [p]
    if kind == "forward":
        def run(): fwd(p, x).block_until_ready()
    else:
        def run():
            state[0], l = step(state[0], x, y)
            l.block_until_ready()
    s = timed(run)
    print(json.dumps({"system": "JAX " + jax.__version__, "s": s}))
'''

FOLD = '''fn cell(h, i, w, b) {{ tanh(h @ w + b) }}
fn f(h0: f32[32, 256], w: f32[256, 256], b: f32[256]) -> f32[32, 256] {{
  fold(cell, h0, length = {n}, args = (w, b))
}}
'''
UNROLLED = '''fn f(h0: f32[32, 256], w: f32[256, 256], b: f32[256]) -> f32[32, 256] {{
  let h = h0
  for i in 0..{n} {{ h = tanh(h @ w + b) }}
  h
}}
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build_harness(build, out):
    vals = {}
    with open(os.path.join(build, "Makefile")) as f:
        for line in f:
            m = re.match(r"^(GCCJIT_LIBS|LIBS|CC)\s*=\s*(.*)$", line.rstrip("\n"))
            if m:
                vals[m.group(1)] = m.group(2).strip()
    cc = (os.environ.get("CC") or vals.get("CC") or "gcc").split()[0]
    exe = os.path.join(out, "harness")
    cmd = [cc, "-O2", "-std=gnu11", "-I" + ROOT, "-o", exe, os.path.join(HERE, "harness.c"),
           os.path.join(build, "libtdsl.a")] + (vals.get("GCCJIT_LIBS", "") + " " + vals.get("LIBS", "")).split() + [
               "-lm", "-pthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit("w10_lstm.py: building the harness failed:\n" + p.stderr)
    return exe


def harness(exe, path, entry, ins, threads, extra):
    cmd = ["taskset", "-c", ",".join(str(i) for i in range(threads)), exe, path, "--entry", entry,
           "--mode", "compiled", "--check", "none", "--search", os.path.join(ROOT, "stdlib")] + extra
    for n, spec in ins:
        cmd += ["--in", "%s=%s" % (n, spec)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TDSL_NUM_THREADS=str(threads)))
    if r.returncode:
        log("harness failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
        return None
    return json.loads(r.stdout)


def peer(python, T, threads, system, kind, quick):
    cmd = ["taskset", "-c", ",".join(str(i) for i in range(threads)), python, "-c", PEER, str(T), str(threads),
           system, kind, "1" if quick else "0"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), XLA_FLAGS="--xla_cpu_multi_thread_eigen=%s intra_op_parallelism_threads=%d" % (
        "true" if threads > 1 else "false", threads))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        log("%s (%s, T=%d) failed: %s" % (system, kind, T, r.stderr.strip().splitlines()[-1:] or r.returncode))
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def has(python, mod):
    return python and subprocess.run([python, "-c", "import " + mod], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("TDSL_BUILD", ROOT))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--python2", default=os.environ.get("TDSL_BENCH_TORCH2_PYTHON"))
    ap.add_argument("--lengths", default="128,1024")
    ap.add_argument("--kinds", default="forward,step")
    ap.add_argument("--no-compile-table", action="store_true")
    ap.add_argument("--no-debian-torch", action="store_true",
                    help="leave out /usr/bin/python3's PyTorch (Debian's 1.13): --python2's 2.x is the same peer")
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="w10-")
    exe = build_harness(a.build, out)
    threads = [int(t) for t in a.threads.split(",")]
    lengths = [int(t) for t in a.lengths.split(",")]
    td = os.path.join(HERE, "w10_lstm.td")
    runs = ["--runs", "3", "--warmup", "1"] if a.quick else ["--runs", "5", "--warmup", "2"]
    print("## W10: LSTM hidden %d, batch %d, input %d (seconds per call; ratio = peer / tdsl, > 1: tdsl faster)\n" % (H, B, I))
    print("| kind | T | threads | tdsl compiled | peer | peer s | peer / tdsl |")
    print("|---|---|---|---|---|---|---|")
    for kind in a.kinds.split(","):
        for T in lengths:
            for th in threads:
                ins = [("x", "f32[%d,%d,%d]:randn" % (T, B, I))]
                if kind == "step":
                    ins.append(("y", "f32[%d,%d]:randn" % (B, H)))
                r = harness(exe, td, "W10." + kind, ins, th, runs + (["--inner", "1"] if T > 256 else []))
                t = r["median_s"] if r else None
                rows = []
                if not a.no_debian_torch and has("/usr/bin/python3", "torch"):
                    rows.append(peer("/usr/bin/python3", T, th, "torch", kind, a.quick))
                if has(a.python2, "torch"):
                    rows.append(peer(a.python2, T, th, "torch", kind, a.quick))
                    rows.append(peer(a.python2, T, th, "torch.compile", kind, a.quick))
                if has(a.python2, "jax"):
                    rows.append(peer(a.python2, T, th, "jax", kind, a.quick))
                for p in rows:
                    if not p:
                        continue
                    print("| %s | %d | %d | %s | %s | %.4g | %s |" % (
                        kind, T, th, "%.4g" % t if t else "failed", p["system"], p["s"],
                        "%.2f" % (p["s"] / t) if t else "-"))
                if not rows:
                    print("| %s | %d | %d | %s | (no peer installed) | | |" % (kind, T, th, "%.4g" % t if t else "failed"))
                sys.stdout.flush()
    if a.no_compile_table:
        return
    print("\n## Compile time against the trip count (cold, compile cache off; seconds)\n")
    print("| program | steps | compile s |")
    print("|---|---|---|")
    progs = []
    for T in (16, 1024):
        src = open(td).read().replace("f32[T, B, 256]", "f32[%d, 32, 256]" % T).replace("f32[B, 256]", "f32[32, 256]")
        progs.append(("LSTM forward, literal T", T, src, "W10.forward", [("x", "f32[%d,32,256]:randn" % T)]))
        progs.append(("LSTM training step, literal T", T, src, "W10.step",
                      [("x", "f32[%d,32,256]:randn" % T), ("y", "f32[32,256]:randn")]))
    for n in (10, 10000):
        progs.append(("fold of tanh(h @ w + b)", n, FOLD.format(n=n), "f", []))
    for n in (10, 100, 1000):
        progs.append(("unrolled for loop", n, UNROLLED.format(n=n), "f", []))
    for name, n, src, entry, ins in progs:
        path = os.path.join(out, "p.td")
        with open(path, "w") as f:
            f.write(src)
        if not ins:
            ins = [("h0", "f32[32,256]:randn"), ("w", "f32[256,256]:normal:0:0.05"), ("b", "f32[256]:randn")]
        best = None
        for rep in range(1 if a.quick else 3):
            r = harness(exe, path, entry, ins, 1, ["--compile-only"])
            if r and (best is None or r["compile_cold_s"] < best["compile_cold_s"]):
                best = r
        print("| %s | %d | %s |" % (name, n, "%.3f" % best["compile_cold_s"] if best else "failed"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()

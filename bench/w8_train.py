#!/usr/bin/python3
"""w8_train.py - W8 (PERFORMANCE.md): the training step of the W4 MLP
(784-512-512-10, ReLU, cross-entropy, AdamW lr 1e-3, batch 128), tdsl beside
PyTorch eager, torch.compile and JAX jit, in one run, at each thread count.

  bench/w8_train.py --tdsl BUILD/tdsl [--threads 1,2] [--steps 300] [--python2 ~/torch2/bin/python]

Every system trains on the same synthetic batches (random images with
values 0..1, random labels) for --steps steps after a warm-up; the time per
step is the median over 5 timed chunks of steps/5 steps.  tdsl runs
`tdsl train` (the host loop of the CLI, compiled step, updates in place)
and the per-step time comes from its CSV log (seconds after each step), so
the first steps (compile) are left out.  PyTorch 2.x and JAX run in the
--python2 interpreter (a venv from PyPI); Debian's PyTorch 1.13 in this one
gives the eager row too.  The FLOP bound is 3x the forward's FLOPs at the
peak FLOP rate measured here (the best of numpy/torch sgemm 1024^3).
Prints a Markdown table.
"""
import argparse, csv, json, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
B, DIMS = 128, (784, 512, 512, 10)
FWD_FLOPS = 2.0 * B * sum(DIMS[i] * DIMS[i + 1] for i in range(3))

PEER = r'''
import json, os, sys, time, statistics
T, steps, system = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ["OMP_NUM_THREADS"] = str(T)
import numpy as np
rng = np.random.default_rng(0)
X = rng.random((steps + 20, 128, 784), dtype=np.float32)
Y = rng.integers(0, 10, (steps + 20, 128))
def chunks(fn):
    for i in range(20): fn(i)          # warm-up (and compile)
    ts, per = [], max(1, steps // 5)
    for c in range(5):
        t0 = time.perf_counter()
        for i in range(per): fn(20 + (c * per + i) % steps)
        ts.append((time.perf_counter() - t0) / per)
    return statistics.median(ts)
out = {}
if system.startswith("torch"):
    import torch
    torch.set_num_threads(T)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                            torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    Xt, Yt = torch.from_numpy(X), torch.from_numpy(Y)
    lossf = torch.nn.functional.cross_entropy
    if system == "torch eager":
        def step(i):
            opt.zero_grad(set_to_none=True)
            l = lossf(m(Xt[i]), Yt[i]); l.backward(); opt.step()
            return l
    else:
        cm = torch.compile(m)
        @torch.compile(fullgraph=False)
        def opt_step():
            opt.step()
        def step(i):
            opt.zero_grad(set_to_none=True)
            l = lossf(cm(Xt[i]), Yt[i]); l.backward(); opt_step()
            return l
        t0 = time.perf_counter(); step(0); out["first_call_s"] = time.perf_counter() - t0
    out["version"] = torch.__version__
    out["step_s"] = chunks(step)
else:
    import jax, jax.numpy as jnp
    out["version"] = jax.__version__
    k = jax.random.PRNGKey(0)
    def init(k, i, o):
        b = 1 / np.sqrt(i); k1, k2 = jax.random.split(k)
        return (jax.random.uniform(k1, (i, o), minval=-b, maxval=b), jax.random.uniform(k2, (o,), minval=-b, maxval=b))
    ks = jax.random.split(k, 3)
    params = [init(ks[j], DI, DO) for j, (DI, DO) in enumerate([(784, 512), (512, 512), (512, 10)])]
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.zeros((), jnp.float32))
    def loss(p, x, y):
        h = x
        for j, (w, b) in enumerate(p):
            h = h @ w + b
            if j < 2: h = jax.nn.relu(h)
        lp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(lp, y[:, None], axis=1))
    def update(state, x, y):
        p, m, v, t = state
        l, g = jax.value_and_grad(loss)(p, x, y)
        t = t + 1
        lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 0.01
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        p = jax.tree_util.tree_map(lambda p, m, v: p * (1 - lr * wd) - lr * (m / bc1) / (jnp.sqrt(v / bc2) + eps), p, m, v)
        return (p, m, v, t), l
    up = jax.jit(update, donate_argnums=(0,))
    Xj, Yj = [jnp.asarray(X[i]) for i in range(len(X))], [jnp.asarray(Y[i]) for i in range(len(Y))]
    box = [state]
    def step(i):
        box[0], l = up(box[0], Xj[i], Yj[i])
        return l
    t0 = time.perf_counter(); step(0); jax.block_until_ready(box[0]); out["first_call_s"] = time.perf_counter() - t0
    def step_sync(i):
        l = step(i); l.block_until_ready()
    out["step_s"] = chunks(step_sync)
print(json.dumps(out))
'''

PEAK = r'''
import sys, os, time
os.environ["OMP_NUM_THREADS"] = sys.argv[1]; os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[1]
import numpy as np
a = np.random.default_rng(1).random((1024, 1024), dtype=np.float32); b = a.copy()
best = 1e9
for _ in range(8):
    t0 = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t0)
print(2 * 1024 ** 3 / best)
'''


def peer(python, T, steps, system, env):
    try:
        r = subprocess.run([python, "-c", PEER, str(T), str(steps), system], capture_output=True, text=True,
                           timeout=1800, env=env)
        if r.returncode:
            return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"}
        return json.loads(r.stdout.strip().splitlines()[-1])
    except Exception as e:  # a missing peer is reported, the rest runs
        return {"error": str(e)}


def tdsl_row(tdsl, T, steps, work):
    import numpy as np
    rng = np.random.default_rng(0)
    n = B * (steps + 60)
    np.save(os.path.join(work, "x.npy"), rng.random((n, 784), dtype=np.float32))
    np.save(os.path.join(work, "y.npy"), rng.integers(0, 10, n))
    log = os.path.join(work, "log.csv")
    env = dict(os.environ, TDSL_CACHE_DIR=os.path.join(work, "cache%d" % T))
    t0 = time.perf_counter()
    r = subprocess.run([tdsl, "train", os.path.join(HERE, "w8_mlp.td"), "--train",
                        "%s,%s" % (os.path.join(work, "x.npy"), os.path.join(work, "y.npy")),
                        "--epochs", "1", "--batch", str(B), "--threads", str(T), "--log", log],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        return {"error": r.stderr.strip()[-300:]}
    with open(log) as f:
        rows = list(csv.DictReader(f))
    secs = [float(x["seconds"]) for x in rows]
    per = max(1, (len(secs) - 50) // 5)
    ts = [(secs[50 + (c + 1) * per - 1] - secs[50 + c * per - 1]) / per for c in range(5)]
    ts.sort()
    # cold compile: a step with an empty cache, the data loading left out (--max-steps 1 on 128 examples)
    cold = subprocess.run([tdsl, "train", os.path.join(HERE, "w8_mlp.td"), "--train",
                           "%s,%s" % (os.path.join(work, "x.npy"), os.path.join(work, "y.npy")), "--limit", "128",
                           "--batch", str(B), "--threads", str(T), "--log", log + "2"],
                          capture_output=True, text=True, env=dict(env, TDSL_CACHE_DIR=os.path.join(work, "cold%d" % T)))
    first = None
    if cold.returncode == 0:
        with open(log + "2") as f:
            first = float(list(csv.DictReader(f))[0]["seconds"])
    return {"step_s": ts[2], "first_step_s": first, "wall_s": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tdsl", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--python2", default=os.path.expanduser("~/torch2/bin/python"))
    a = ap.parse_args()
    cpu = subprocess.run("lscpu | grep -m1 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    print("# W8: MLP 784-512-512-10 training step, batch 128, AdamW, cross-entropy\n")
    print("machine: %s, %d cores; %s" % (cpu, os.cpu_count(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    print("forward FLOPs per step %.1f M; FLOP bound = 3x that at the measured sgemm peak\n" % (FWD_FLOPS / 1e6))
    print("| threads | system | step (ms) | vs tdsl | first call / cold step (s) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for T in [int(t) for t in a.threads.split(",")]:
            env = dict(os.environ, OMP_NUM_THREADS=str(T), OPENBLAS_NUM_THREADS=str(T))
            peak = float(subprocess.run([sys.executable, "-c", PEAK, str(T)], capture_output=True, text=True,
                                        env=env).stdout.strip() or "nan")
            rows = [("tdsl (tdsl train, compiled)", tdsl_row(a.tdsl, T, a.steps, work))]
            rows.append(("PyTorch %s eager (Debian)" % "1.13", peer(sys.executable, T, a.steps, "torch eager", env)))
            if os.path.exists(a.python2):
                for s in ("torch eager", "torch.compile", "jax"):
                    rows.append((s + " [venv]", peer(a.python2, T, a.steps, s, env)))
            base = rows[0][1].get("step_s")
            for name, r in rows:
                if "error" in r:
                    print("| %d | %s | failed: %s | | |" % (T, name, r["error"][:80]))
                    continue
                ver = " %s" % r["version"] if "version" in r else ""
                fc = r.get("first_call_s", r.get("first_step_s"))
                print("| %d | %s%s | %.2f | %.2fx | %s |" % (T, name, ver, r["step_s"] * 1e3,
                                                            r["step_s"] / base if base else float("nan"),
                                                            "%.2f" % fc if fc is not None else ""))
            bound = 3 * FWD_FLOPS / peak
            print("| %d | FLOP bound (3x forward at %.0f GFLOP/s sgemm) | %.2f | %.2fx | |" %
                  (T, peak / 1e9, bound * 1e3, bound / base if base else float("nan")))


if __name__ == "__main__":
    main()

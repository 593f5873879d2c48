#!/usr/bin/python3
"""w11_generate.py - W11 (PERFORMANCE.md): greedy decoding of 64 tokens after a
128-token prompt, batch 1, with a GPT-2-like decoder (vocab 50257, d 768,
12 heads, 12 layers, MLP 3072, random weights) and a key/value cache: tdsl
(bench/w11_generate.td, examples/generate.td's GPT.generate: the prompt's
pass and all 64 steps are one call of one compiled graph) beside PyTorch
eager with a KV cache and torch.compile of its decoding step, in one run,
at each thread count.  Tokens per second = 64 / (seconds of the whole
generation, prompt included); ratio = tdsl / peer (> 1: tdsl faster).

  bench/w11_generate.py --build BUILD [--threads 1,2] [--python2 ~/venv/bin/python]

The peers run the same architecture (pre-norm blocks, GELU MLP, learned
position embeddings, a final LayerNorm, a linear head) written in PyTorch,
with a preallocated cache [1, heads, 192, 64] per layer and per K and V,
row pos written each step (as tdsl does), the prompt's keys and values
from one pass; torch.compile compiles the one-token step (fixed shapes),
and its compile time is left out (warm-up).  Median of 3 generations.
"""
import argparse, json, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from w10_lstm import build_harness  # noqa: E402  (the same harness build)
ROOT = os.path.dirname(HERE)
P, K = 128, 64

PEER = r'''
import json, sys, time, statistics
threads, system = int(sys.argv[1]), sys.argv[2]
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(threads)
torch.manual_seed(0)
V, D, H, L, C, P, K = 50257, 768, 12, 12, 256, 128, 64
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        s.q, s.k, s.v, s.o = (nn.Linear(D, D) for _ in range(4))
        s.fc1, s.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def heads(s, x): return x.view(x.shape[0], x.shape[1], H, D // H).transpose(1, 2)
    def forward(s, x, kc, vc, pos, n):
        # x [1, n, D] at positions pos .. pos + n - 1; writes the cache rows
        a = s.ln1(x)
        q, k, v = s.heads(s.q(a)), s.heads(s.k(a)), s.heads(s.v(a))
        kc[:, :, pos:pos + n] = k
        vc[:, :, pos:pos + n] = v
        keys, vals = kc[:, :, :pos + n], vc[:, :, :pos + n]
        sc = (q @ keys.transpose(-1, -2)) / (D // H) ** 0.5
        if n > 1:
            mask = torch.ones(n, pos + n, dtype=torch.bool).tril(pos)
            sc = sc.masked_fill(~mask, -1e30)
        w = sc.softmax(-1) @ vals
        h = x + s.o(w.transpose(1, 2).reshape(x.shape[0], n, D))
        return h + s.fc2(F.gelu(s.fc1(s.ln2(h))))
class GPT(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(C, D)
        s.blocks = nn.ModuleList(Block() for _ in range(L))
        s.ln, s.head = nn.LayerNorm(D), nn.Linear(D, V, bias=False)
    def run(s, tok, caches, pos, n):
        h = s.wte(tok) + s.wpe(torch.arange(pos, pos + n))
        for b, (kc, vc) in zip(s.blocks, caches):
            h = b(h, kc, vc, pos, n)
        return s.head(s.ln(h[:, -1]))
m = GPT().eval()
prompt = torch.randint(0, V, (1, P))
# the one-token step with a static cache: fixed shapes, a mask over the rows
class Step(nn.Module):
    def __init__(s, m): super().__init__(); s.m = m
    def forward(s, tok, caches, pos):
        m = s.m
        h = m.wte(tok) + m.wpe(pos).unsqueeze(0)
        rows = torch.arange(C)
        for b, (kc, vc) in zip(m.blocks, caches):
            a = b.ln1(h)
            q, k, v = b.heads(b.q(a)), b.heads(b.k(a)), b.heads(b.v(a))
            at = (rows == pos).view(1, 1, C, 1)
            kc.copy_(torch.where(at, k, kc)); vc.copy_(torch.where(at, v, vc))
            sc = (q @ kc.transpose(-1, -2)) / (D // H) ** 0.5
            sc = sc.masked_fill((rows > pos).view(1, 1, 1, C), -1e30)
            h2 = h + b.o((sc.softmax(-1) @ vc).transpose(1, 2).reshape(1, 1, D))
            h = h2 + b.fc2(F.gelu(b.fc1(b.ln2(h2))))
        return m.head(m.ln(h[:, -1])).argmax(-1, keepdim=True)
step = Step(m)
if system == "torch.compile":
    step = torch.compile(step)
def generate():
    caches = [(torch.zeros(1, H, C, D // H), torch.zeros(1, H, C, D // H)) for _ in range(L)]
    with torch.no_grad():
        m.run(prompt[:, :P - 1], caches, 0, P - 1)
        tok, out = prompt[:, P - 1:], []
        for i in range(K):
            tok = step(tok, caches, torch.tensor([P - 1 + i]))
            out.append(tok)
    return torch.cat(out, 1)
generate(); generate()
ts = []
for r in range(3):
    t0 = time.perf_counter(); generate(); ts.append(time.perf_counter() - t0)
print(json.dumps({"system": system + " " + torch.__version__.split("+")[0], "s": statistics.median(ts)}))
'''


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("TDSL_BUILD", ROOT))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--python2", default=os.environ.get("TDSL_BENCH_TORCH2_PYTHON"))
    ap.add_argument("--no-debian-torch", action="store_true",
                    help="leave out /usr/bin/python3's PyTorch (Debian's 1.13): --python2's 2.x is the same peer")
    a = ap.parse_args()
    exe = build_harness(a.build, tempfile.mkdtemp(prefix="w11-"))
    print("## W11: greedy decoding, %d tokens after a %d-token prompt, GPT-2-like (tokens/s; ratio = tdsl / peer)\n" % (K, P))
    print("| threads | tdsl compiled tok/s | tdsl compile s | peer | peer tok/s | tdsl / peer |")
    print("|---|---|---|---|---|---|")
    for th in [int(t) for t in a.threads.split(",")]:
        pin = ["taskset", "-c", ",".join(str(i) for i in range(th))]
        cmd = pin + [exe, os.path.join(HERE, "w11_generate.td"), "--entry", "W11.forward", "--mode", "compiled",
                     "--check", "none", "--search", os.path.join(ROOT, "stdlib"), "--search", os.path.join(ROOT, "examples"),
                     "--in", "prompt=i64[1,%d]:uniform:0:50257" % P, "--in", "n=i64[%d]:uniform:0:1" % K,
                     "--in", "temp=f32[]:uniform:0:0", "--runs", "3", "--warmup", "1", "--inner", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, TDSL_NUM_THREADS=str(th)))
        t = json.loads(r.stdout) if r.returncode == 0 else None
        if not t:
            log("tdsl failed: " + r.stderr[-2000:])
        rate = K / t["median_s"] if t else None
        peers = [] if a.no_debian_torch else [("/usr/bin/python3", "torch")]
        if a.python2:
            peers += [(a.python2, "torch"), (a.python2, "torch.compile")]
        for py, system in peers:
            p = subprocess.run(pin + [py, "-c", PEER, str(th), system], capture_output=True, text=True,
                               env=dict(os.environ, OMP_NUM_THREADS=str(th)))
            if p.returncode:
                log("%s failed: %s" % (system, (p.stderr.strip().splitlines() or ["?"])[-1]))
                continue
            pr = json.loads(p.stdout.strip().splitlines()[-1])
            prate = K / pr["s"]
            print("| %d | %s | %s | %s | %.2f | %s |" % (th, "%.2f" % rate if rate else "failed",
                                                       "%.1f" % t["compile_cold_s"] if t else "-", pr["system"], prate,
                                                       "%.2f" % (rate / prate) if rate else "-"))
            sys.stdout.flush()


if __name__ == "__main__":
    main()

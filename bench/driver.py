"""driver.py - the body of bench/run: tdsl beside numpy, PyTorch and the C floors.

One run, on one machine, per thread count T:
  1. measures the machine's limits (floors.c: copy bandwidth, FMA peak,
     clock, fresh-page cost),
  2. then, workload by workload (W1..W6), runs tdsl eager through
     harness.c (in-process timing of td_interp_run, checked against float64),
     tdsl compiled (harness --mode compiled: compile once, time td_compiled_run;
     labelled "library" in W1), for W1 the built artifact's C API (tdsl build
     --exe into the results dir, its entry function timed by the executable's
     --bench, its outputs checked by harness --mode outputs), the
     hand-written C floor where there is one, and the peers (peers.py: numpy,
     PyTorch eager and TorchScript; the GEMM peer with OPENBLAS_CORETYPE and
     OPENBLAS_L2_SIZE unset), so that drift of the machine hits all of them
     alike;
  3. W7 (compile time): the front end, and the compiler cold and from its cache.
Writes bench/results/<UTC timestamp>/: results.json (every record and the
machine), tables.md (one table per workload case), chart.png, and the logs.
Installs nothing: a missing peer is reported with the command that would
install it, and the rest still runs.

usage: bench/run [--quick] [--threads 1,2] [--workloads w1,w3] [--build DIR]
                 [--out DIR] [--no-peers] [--peers-python PYTHON] [--no-jit-peers]
--peers-python (or --torch2): a PyPI venv's interpreter; its torch.compile,
jax.jit and ONNX Runtime rows run in their own processes, each pinned with
taskset like everything else, and each compiled row also records its
compile time and what calls at new batch sizes cost.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
EX = os.path.join(ROOT, "examples")
STDLIB = os.path.join(ROOT, "stdlib")
# The interpreter that runs the peers: Debian's sees python3-numpy/-torch.
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
SYS_PY = os.environ.get("TDSL_BENCH_PYTHON") or (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else (shutil.which("python3") or sys.executable))
N2 = 16 * 1024 * 1024
MLP_FLOP_ROW = 2.0 * (784 * 512 + 512 * 512 + 512 * 10)
MLP_WEIGHT_BYTES = 4.0 * (784 * 512 + 512 * 512 + 512 * 10 + 512 + 512 + 10)
W6_FLOP = 2.0 * 1024 * (256 * 768 + 256 * 256 + 256 * 1024 * 2) + 2 * (2.0 * 8 * 4 * 128 * 128 * 64)

WL_TITLES = {
    "W1": "W1 - seed models, per-call latency",
    "W2": "W2 - y = gelu_tanh(x*w + b) over 16M f32",
    "W3": "W3 - square f32 GEMM",
    "W4": "W4 - MLP 784-512-512-10 (relu)",
    "W5": "W5 - softmax / layer_norm over the last axis of [4096,4096]",
    "W6": "W6 - pre-norm transformer block, B=8 S=128 d=256, 4 heads, MLP 1024 (exact gelu)",
    "W7": "W7 - compile time",
}
LIMIT_TEXT = {
    "W1": "limit = the hand-written C floor (one non-inlined call, T=1)",
    "W2": "limit = bytes (inputs read + output written) / copy bandwidth measured at T",
    "W3": "limit = 2n^3 FLOP / FMA peak measured at T",
    "W4": "limit = the larger of matmul FLOP / FMA peak and the weights' 2.69 MB / their measured read rate from "
          "L3 (floors.c weights_read), both at T",
    "W5": "limit = 2 x 64 MiB / copy bandwidth measured at T",
    "W6": "limit = matmul FLOP (%.3f GFLOP) / FMA peak measured at T" % (W6_FLOP / 1e9),
}


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------- cases
def seed(name):
    return os.path.join(EX, "seed", name)


def bench_file(name):
    return os.path.join(BENCH, name)


def tdsl_cases(quick):
    """(workload, case, file, entry, [--in specs], check, heavy, divisor)."""
    c = [
        ("W1", "Simple[1,4]", seed("simple.td"), "Simple.forward", ["x=f32[1,4]"], "linear:fc:relu"),
        ("W1", "GoodWhere[4,16]", seed("good_where.td"), "GoodWhere.forward", ["x=f32[4,16]"], "where_pm1:h"),
        ("W1", "ReturnTensorForLog[8,16]", bench_file("w1_seed.td"), "ReturnTensorForLog.forward",
         ["x=f32[8,16]"], "linear_mean:h"),
        ("W1", "GoodVectorized[32,16]", seed("good_vectorized.td"), "GoodVectorized.forward", ["x=f32[32,16]"],
         "add_const:10"),
        ("W1", "GoodDynamic[8,16]", seed("good_dynamic.td"), "GoodDynamic.forward", ["x=f32[8,16]"], "linear:h"),
        ("W1", "GoodDynamic[16,16]", seed("good_dynamic.td"), "GoodDynamic.forward", ["x=f32[16,16]"], "linear:h"),
        ("W1", "per-op: x + 1 [4,16]", bench_file("w1_seed.td"), "op_chain", ["x=f32[4,16]"], "add_const:100",
         False, 100),
        ("W2", "gelu(x*w+b) scalar w,b", bench_file("w2_gelu.td"), "gelu_s", ["x=f32[%d]:uniform:-4:4" % N2],
         "gelu_tanh:1.25:0.1", True),
        ("W2", "gelu(x*w+b) array w,b", bench_file("w2_gelu.td"), "gelu_a",
         ["x=f32[%d]:uniform:-4:4" % N2, "w=f32[%d]:uniform:0.5:1.5" % N2, "b=f32[%d]:uniform:-0.5:0.5" % N2],
         "gelu_tanh", True),
    ]
    if not quick:
        c.append(("W2", "gelu_erf(x*w+b) scalar w,b", bench_file("w2_gelu.td"), "gelu_erf_s",
                  ["x=f32[%d]:uniform:-4:4" % N2], "gelu_erf:1.25:0.1", True))
    for n in (256, 1024, 2048):
        c.append(("W3", "sgemm n=%d" % n, bench_file("w3_gemm.td"), "gemm", ["a=f32[%d,%d]" % (n, n),
                  "b=f32[%d,%d]" % (n, n)], "gemm", n >= 2048))
    for b in (1, 32, 256):
        c.append(("W4", "MLP B=%d" % b, os.path.join(EX, "mlp.td"), "MLP.forward", ["x=f32[%d,784]" % b], "mlp"))
    c += [
        ("W5", "softmax [4096,4096]", bench_file("w5_norm.td"), "softmax_last", ["x=f32[4096,4096]:normal:0:3"],
         "softmax", True),
        ("W5", "layer_norm [4096,4096]", bench_file("w5_norm.td"), "layernorm_last",
         ["x=f32[4096,4096]:normal:0:3", "g=f32[4096]:uniform:0.5:1.5", "b=f32[4096]:uniform:-0.5:0.5"],
         "layernorm:1e-5", True),
        ("W6", "block B=8 S=128 d=256", bench_file("w6_block.td"), "Block.forward", ["x=f32[8,128,256]"], "block"),
    ]
    out = []
    for t in c:
        t = tuple(t) + (False, 1)[len(t) - 6:]
        out.append(t[:8])
    return out


FLOOR_NAMES = {("w2", "scalar w,b"): ("W2", "gelu(x*w+b) scalar w,b"),
               ("w2", "array w,b"): ("W2", "gelu(x*w+b) array w,b"),
               ("w5", "softmax"): ("W5", "softmax [4096,4096]"),
               ("w5", "layernorm"): ("W5", "layer_norm [4096,4096]")}
FLOOR_SYSTEM = "C floor (hand-written)"
# After its timed runs, tdsl compiled is called at these other sizes
# (harness --new-shape; the same compiled entry, nothing compiled again), and
# so are torch.compile, jax.jit and ONNX Runtime (peers.py's PROBES: keep the
# two lists alike).
NEW_SHAPES = {("W1", "GoodDynamic[8,16]"): ["x=f32[16,16]", "x=f32[24,16]"],
              ("W2", "gelu(x*w+b) scalar w,b"): ["x=f32[%d]:uniform:-4:4" % (N2 // 2),
                                                 "x=f32[%d]:uniform:-4:4" % (N2 // 4)],
              ("W4", "MLP B=32"): ["x=f32[256,784]", "x=f32[64,784]", "x=f32[1,784]"],
              ("W5", "softmax [4096,4096]"): ["x=f32[2048,4096]:normal:0:3", "x=f32[1024,4096]:normal:0:3"],
              ("W5", "layer_norm [4096,4096]"): ["x=f32[2048,4096]:normal:0:3", "x=f32[1024,4096]:normal:0:3"],
              ("W6", "block B=8 S=128 d=256"): ["x=f32[4,128,256]", "x=f32[2,128,256]"]}
JAX_SYSTEM, ORT_SYSTEM = "jax.jit", "ONNX Runtime (CPU)"


def cpus_for(threads):
    """The CPUs a run at `threads` threads is pinned to: the first
    `threads` this process may use."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:
        allowed = list(range(os.cpu_count() or 1))
    return allowed[:max(1, threads)]


TASKSET = shutil.which("taskset")


def pinned(cmd, threads):
    """cmd under `taskset -c CPUS` (when taskset is installed)."""
    if not TASKSET:
        return cmd
    return [TASKSET, "-c", ",".join(str(c) for c in cpus_for(threads))] + list(cmd)
# W1's compiled rows: the built artifact's C API (what the W1 target names)
# and the in-process library call td_compiled_run.
ARTIFACT_SYSTEM = "tdsl compiled, artifact C API (tdsl build; PREFIX_entry via exe --bench)"
LIBRARY_SYSTEM = "tdsl compiled, library (td_compiled_run)"


# --------------------------------------------------------------------- build
def makefile_vars(build):
    vals = {}
    try:
        with open(os.path.join(build, "Makefile")) as f:
            for line in f:
                m = re.match(r"^(GCCJIT_LIBS|LIBS|PTHREAD_CFLAGS|CC)\s*=\s*(.*)$", line.rstrip("\n"))
                if m:
                    vals[m.group(1)] = m.group(2).strip()
    except OSError:
        pass
    return vals


def find_build(arg):
    cands = [arg] if arg else [os.environ.get("TDSL_BUILD"), os.path.join(ROOT, "build"), ROOT]
    for c in cands:
        if c and os.path.exists(os.path.join(c, "libtdsl.a")):
            return os.path.abspath(c)
    return None


def stale_warning(build):
    lib = os.path.getmtime(os.path.join(build, "libtdsl.a"))
    newest = max((os.path.getmtime(p) for d in ("lang", "interp", "runtime")
                  for p in glob.glob(os.path.join(ROOT, d, "**", "*.[ch]"), recursive=True)), default=0)
    if newest > lib:
        log("warning: %s/libtdsl.a is older than the sources; run `make -C %s` for current numbers" % (build, build))


def run_cmd(cmd, logf, env=None):
    logf.write("$ %s\n" % " ".join(cmd))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    logf.write(p.stdout + p.stderr)
    logf.flush()
    return p


def build_tools(build, bindir, logf):
    mv = makefile_vars(build)
    cc = os.environ.get("CC") or mv.get("CC") or "gcc"
    cc = cc.split()[0]
    harness = os.path.join(bindir, "harness")
    libs = " ".join(x for x in (mv.get("GCCJIT_LIBS", ""), mv.get("LIBS", "")) if x).split()
    cmd = [cc, "-O2", "-std=gnu11", "-I" + ROOT, "-o", harness, os.path.join(BENCH, "harness.c"),
           os.path.join(build, "libtdsl.a")] + libs + ["-lm", "-pthread"]
    p = run_cmd(cmd, logf)
    if p.returncode:
        sys.exit("bench/run: building the harness failed:\n%s%s" % (p.stdout, p.stderr))
    floors = os.path.join(bindir, "floors")
    fcmd = [cc, "-O3", "-march=native", "-fopenmp", "-ffp-contract=fast", "-o", floors,
            os.path.join(BENCH, "floors.c"), "-lm"]
    p = run_cmd(fcmd, logf)
    if p.returncode:
        log("bench/run: building the C floors failed (limits and floors will be missing):\n" + p.stderr[-2000:])
        floors = None
    return harness, floors, " ".join(cmd), " ".join(fcmd)


# --------------------------------------------------------------------- machine
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    except OSError:
        return ""


def machine_info():
    lscpu = sh("lscpu")
    get = lambda k: (re.search(r"^%s:\s*(.*)$" % re.escape(k), lscpu, re.M) or [None, ""])[1].strip()
    flags = sh("grep -m1 '^flags' /proc/cpuinfo").split()
    simd = [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                        "avx512_bf16", "avx512_vnni", "avx512vbmi", "avx512ifma", "avx_vnni", "amx_tile", "neon",
                        "asimd", "sve") if f in flags]
    mhz = sh("grep -m1 'cpu MHz' /proc/cpuinfo | awk '{print $4}'")
    return {
        "cpu_model": get("Model name") or platform.processor(),
        "vendor": get("Vendor ID"), "family": get("CPU family"), "model": get("Model"),
        "cpus": get("CPU(s)") or str(os.cpu_count()), "threads_per_core": get("Thread(s) per core"),
        "caches": ", ".join("%s %s" % (k, get(k)) for k in ("L1d cache", "L2 cache", "L3 cache") if get(k)),
        "hypervisor": get("Hypervisor vendor"),
        "simd_flags": " ".join(simd),
        "nominal_mhz": mhz,
        "memory": sh("free -g | awk '/Mem:/{print $2\" GiB\"}'"),
        "thp": sh("cat /sys/kernel/mm/transparent_hugepage/enabled"),
        "kernel": platform.release(),
        "os": sh("cat /etc/debian_version") and "Debian " + sh("cat /etc/debian_version"),
        "gcc": sh("gcc --version | head -1"),
        "python_for_peers": "%s (%s)" % (SYS_PY, sh(SYS_PY + " --version")),
        "env": " ".join("%s=%s" % (v, os.environ.get(v, "<unset>")) for v in
                        ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                         "ATEN_CPU_CAPABILITY", "LD_PRELOAD")),
        "loadavg_start": sh("cat /proc/loadavg"),
    }


def check_python_module(mod):
    p = subprocess.run([SYS_PY, "-c", "import %s" % mod], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p.returncode == 0


def module_version(python, mod, also=None):
    """The version of `mod` that `python` imports (with numpy, and `also`
    when given), else None and why."""
    code = "import numpy, %s%s; print(%s.__version__)" % (mod, (", " + also) if also else "", mod)
    try:
        p = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if p.returncode:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return p.stdout.strip().splitlines()[-1], None


def torch2_version(python):
    """The PyTorch version `python` imports when it has torch.compile and
    numpy, else None and why."""
    try:
        p = subprocess.run([python, "-c", "import numpy, torch; assert hasattr(torch, 'compile'), "
                            "'its torch %s has no torch.compile' % torch.__version__; "
                            "print(torch.__version__)"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if p.returncode:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return p.stdout.strip(), None


# --------------------------------------------------------------------- runners
class PeerServer:
    """One peers.py --serve process (one thread count, one environment)."""

    def __init__(self, threads, quick, env, errlog, tag, extra=(), python=None):
        cmd = [python or SYS_PY, os.path.join(BENCH, "peers.py"), "--threads", str(threads), "--serve"] + list(extra)
        if quick:
            cmd.append("--quick")
        cmd = pinned(cmd, threads)
        self.tag = tag
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
                                  text=True, env=env, bufsize=1)
        self.hello = []
        self.read_until("hello", self.hello)

    def read_until(self, name, out):
        for line in self.p.stdout:
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("done") == name:
                return True
            d["peer_env"] = self.tag
            # the environment is part of the system's name everywhere (tables,
            # summary, W7, JSON); "tuned" rows are named by peers.py itself
            if self.tag not in ("default", "tuned", "jax", "ort") and d.get("system") not in (None, "peers"):
                d["system"] += " [%s]" % self.tag
            out.append(d)
        return False

    def run(self, name):
        out = []
        try:
            self.p.stdin.write(name + "\n")
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            return [dict(workload=name.upper(), case="*", system="peers", status="failed",
                         reason="the peer process died (see peers_*.log)")]
        if not self.read_until(name, out):
            out.append(dict(workload=name.upper(), case="*", system="peers", status="failed",
                            reason="the peer process died (see peers_*.log)"))
        return out

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def run_floors(floors, threads, parts, quick, logf):
    if not floors:
        return []
    cmd = pinned([floors, str(threads)] + (["--quick"] if quick else []) + parts, threads)
    p = run_cmd(cmd, logf, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    recs = []
    for line in p.stdout.splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
    return recs


def run_harness(harness, case, threads, quick, mode, logf):
    wl, name, path, entry, ins, check, heavy, div = case
    cmd = [harness, path, "--entry", entry, "--check", check, "--search", STDLIB, "--label", name, "--mode", mode]
    for s in ins:
        cmd += ["--in", s]
    if quick:
        cmd += ["--warmup", "1", "--runs", "3" if heavy else "5", "--target-ms", "5"]
    else:
        cmd += ["--warmup", "2", "--runs", "7" if heavy else "15", "--target-ms", "20"]
    if mode == "compiled":
        for sp in NEW_SHAPES.get((wl, name), []):
            cmd += ["--new-shape", sp]
    p = run_cmd(pinned(cmd, threads), logf, env=dict(os.environ, TDSL_NUM_THREADS=str(threads)))
    try:
        d = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return dict(workload=wl, case=name, system=LIBRARY_SYSTEM if mode == "compiled" and wl == "W1" else
                    "tdsl " + mode, status="failed", threads=threads,
                    reason=(p.stderr.strip().splitlines() or ["no output"])[-1][:300])
    system = LIBRARY_SYSTEM if mode == "compiled" and wl == "W1" else "tdsl " + mode
    d.update(workload=wl, case=name, system=system, threads=threads)
    if d.get("status") == "ok" and div != 1:
        for k in ("median_s", "min_s", "max_s"):
            d[k] /= div
        d["note"] = "time of %d chained ops / %d" % (div, div)
    return d


BENCH_LINE = re.compile(r"(\d+) calls, per-call latency median ([\d.]+) (ns|us|ms|s), "
                        r"mean ([\d.]+) (ns|us|ms|s), min ([\d.]+) (ns|us|ms|s)")
UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def build_artifact(harness, tdsl, case, out, logf):
    """Builds case's file as an artifact (tdsl build --exe) under
    out/artifacts/<case>, writes its inputs there (harness --write-inputs),
    runs it once and checks the outputs (harness --mode outputs).  Returns
    (dir info, check record) or (None, failure record)."""
    wl, name, path, entry, ins, check, heavy, div = case
    d = os.path.join(out, "artifacts", re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_"))
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ, TDSL_PATH=STDLIB)
    base = [path, "--entry", entry, "--search", STDLIB, "--label", name]
    for sp in ins:
        base += ["--in", sp]

    def failed(p, what):
        return None, dict(status="failed", reason=("%s: " % what + ((p.stderr or p.stdout).strip().splitlines()
                                                                   or ["no output"])[-1])[:300])
    if not os.access(tdsl, os.X_OK):
        return None, dict(status="not available", reason="no %s (the tdsl CLI) in the build dir" % tdsl)
    p = run_cmd([tdsl, "build", path, "-o", d, "--exe", "--name", "bench"], logf, env=env)
    if p.returncode:
        return failed(p, "tdsl build")
    p = run_cmd([harness] + base + ["--write-inputs", d], logf)
    try:
        n_out = int(json.loads(p.stdout.strip().splitlines()[-1])["outputs"])
    except (ValueError, IndexError, KeyError):
        return failed(p, "harness --write-inputs")
    args = ["--entry", entry]
    for sp in ins:
        nm = sp.split("=")[0]
        args += ["--in", "%s=%s" % (nm, os.path.join(d, nm + ".npy"))]
    exe = os.path.join(d, "bench")
    outs = [os.path.join(d, "out%d.npy" % i) for i in range(n_out)]
    p = run_cmd([exe] + args + [x for o in outs for x in ("--out", o)], logf)
    if p.returncode:
        return failed(p, "artifact run")
    p = run_cmd([harness] + base + ["--mode", "outputs", "--outputs", ",".join(outs), "--check", check], logf)
    try:
        chk = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return failed(p, "harness --mode outputs")
    return (exe, args), chk


def run_artifact(built, case, threads, quick, logf):
    """Times the built artifact's entry with its executable's --bench: each
    run is N back-to-back calls (the mean: the per-run time, as the harness's
    runs); median/min/max over the runs.  Also keeps the executable's median
    of calls timed one by one (call_median_s, includes one clock read)."""
    wl, name, path, entry, ins, check, heavy, div = case
    rec = dict(workload=wl, case=name, system=ARTIFACT_SYSTEM, threads=threads)
    info, chk = built
    if not info:
        return dict(rec, **chk)
    exe, args = info
    n = max(1000, (100000 if quick else 400000) // div)
    means, medians, mins = [], [], []
    for _ in range(3 if quick else 7):
        p = run_cmd(pinned([exe] + args + ["--bench", str(n)], threads), logf,
                    env=dict(os.environ, TDSL_NUM_THREADS=str(threads)))
        m = BENCH_LINE.search(p.stdout)
        if p.returncode or not m:
            return dict(rec, status="failed", reason=("artifact --bench: " + (p.stderr or p.stdout).strip())[-300:])
        medians.append(float(m.group(2)) * UNIT_S[m.group(3)] / div)
        means.append(float(m.group(4)) * UNIT_S[m.group(5)] / div)
        mins.append(float(m.group(6)) * UNIT_S[m.group(7)] / div)
    means.sort()
    medians.sort()
    rec.update(status="ok", median_s=means[len(means) // 2], min_s=means[0], max_s=means[-1], runs=len(means),
               inner=n, call_median_s=medians[len(medians) // 2], call_min_s=min(mins),
               relerr=chk.get("relerr"), tol=chk.get("tol"), correct=chk.get("correct"), check=check)
    if div != 1:
        rec["note"] = "time of %d chained ops / %d" % (div, div)
    return rec


# --------------------------------------------------------------------- limits
def limit_rate(limits, threads, key):
    """The machine's capability at `threads`: the best run (a busy neighbour
    only slows runs down), and never less than at fewer threads."""
    rates = [limits[t][key].get("rate_best") for t in limits if t <= threads and key in limits[t]]
    rates = [r for r in rates if r]
    return max(rates) if rates else None


def limit_of(wl, case, threads, limits, floors_w1):
    bw = limit_rate(limits, threads, "copy")
    peak = limit_rate(limits, threads, "fma_peak")
    if wl == "W1":
        t = floors_w1.get(case)
        return (t, "C floor") if t else (None, None)
    if wl == "W2" and bw:
        nbytes = (4 if "array" in case else 2) * N2 * 4
        return nbytes / 1e9 / bw, "%.0f MB / %.1f GB/s" % (nbytes / 1e6, bw)
    if wl == "W5" and bw:
        return 2 * 4096 * 4096 * 4 / 1e9 / bw, "134 MB / %.1f GB/s" % bw
    if not peak:
        return None, None
    if wl == "W3":
        n = int(case.split("=")[1])
        return 2.0 * n ** 3 / 1e9 / peak, "%.2f GFLOP / %.0f GFLOP/s" % (2.0 * n ** 3 / 1e9, peak)
    if wl == "W4":
        b = int(case.split("=")[1])
        t, desc = b * MLP_FLOP_ROW / 1e9 / peak, "%.4f GFLOP / %.0f GFLOP/s" % (b * MLP_FLOP_ROW / 1e9, peak)
        wr = limit_rate(limits, threads, "weights_read")
        if wr and MLP_WEIGHT_BYTES / 1e9 / wr > t:
            t, desc = MLP_WEIGHT_BYTES / 1e9 / wr, "%.2f MB / %.0f GB/s" % (MLP_WEIGHT_BYTES / 1e6, wr)
        return t, desc
    if wl == "W6":
        return W6_FLOP / 1e9 / peak, "%.3f GFLOP / %.0f GFLOP/s" % (W6_FLOP / 1e9, peak)
    return None, None


# --------------------------------------------------------------------- formatting
def ft(s):
    if s is None:
        return "-"
    if s < 1e-6:
        return "%.1f ns" % (s * 1e9)
    if s < 1e-3:
        return "%.2f µs" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3)
    return "%.2f s" % s


def fr(x):
    if x is None:
        return "-"
    return "%.3g×" % x if x < 100 else "%.0f×" % x


def fe(e):
    return "-" if e is None else "%.1e" % e


def ok_records(recs):
    return [r for r in recs if r.get("status") == "ok" and r.get("median_s")]


def is_peer(r):
    return not r["system"].startswith("tdsl") and r["system"] != FLOOR_SYSTEM


def build_tables(recs, limits, floors_w1, threads_list, wls):
    good = ok_records(recs)
    md, summary = [], []
    summary.append("| workload | case | T | tdsl | median | best peer | tdsl ÷ best peer | C floor | tdsl ÷ floor "
                   "| limit | tdsl ÷ limit | rel. error | correct |")
    summary.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for wl in wls:
        if wl == "W7":
            continue
        cases = []
        for r in good:
            if r["workload"] == wl and r["case"] not in cases:
                cases.append(r["case"])
        if not cases:
            continue
        md.append("\n## %s\n\n%s.  \"tdsl eager ÷ this\" > 1: tdsl eager is that many times slower than the row; "
                  "\"÷ limit\": the row's median over the limit.\n" % (WL_TITLES[wl], LIMIT_TEXT.get(wl, "")))
        for case in cases:
            md.append("\n**%s**\n\n| T | system | median | min | max | tdsl eager ÷ this | ÷ limit | rel. error |"
                      % case)
            md.append("|---|---|---|---|---|---|---|---|")
            for t in threads_list:
                rows = [r for r in good if r["workload"] == wl and r["case"] == case and r["threads"] == t]
                if wl == "W1":  # the C floors run at T=1 only
                    rows += [r for r in good if r["workload"] == wl and r["case"] == case and r["threads"] == 1
                             and r["system"] == FLOOR_SYSTEM and t != 1]
                rows.sort(key=lambda r: (not r["system"].startswith("tdsl"), r["median_s"]))
                td = next((r for r in rows if r["system"] == "tdsl eager"), None)
                lim, limdesc = limit_of(wl, case, t, limits, floors_w1)
                for r in rows:
                    ratio = td["median_s"] / r["median_s"] if td else None
                    name = r["system"]
                    if r.get("note"):
                        name += " (%s)" % r["note"]
                    md.append("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                        t, name, ft(r["median_s"]), ft(r["min_s"]), ft(r["max_s"]), fr(ratio),
                        fr(r["median_s"] / lim) if lim else "-", fe(r.get("relerr"))))
                if lim and wl != "W1":
                    md.append("| %d | *limit: %s* | %s | | | %s | 1× | |" % (
                        t, limdesc, ft(lim), fr(td["median_s"] / lim) if td else "-"))
                peers = [r for r in rows if is_peer(r)]
                best = min(peers, key=lambda r: r["median_s"]) if peers else None
                fl = next((r for r in rows if r["system"] == FLOOR_SYSTEM), None)
                for mine in [r for r in rows if r["system"] in ("tdsl eager", "tdsl compiled", LIBRARY_SYSTEM,
                                                                ARTIFACT_SYSTEM)]:
                    summary.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        wl, case, t, mine["system"][5:], ft(mine["median_s"]),
                        "%s (%s)" % (ft(best["median_s"]), best["system"]) if best else "-",
                        fr(mine["median_s"] / best["median_s"]) if best else "-",
                        ft(fl["median_s"]) if fl else "-",
                        fr(mine["median_s"] / fl["median_s"]) if fl else "-",
                        ft(lim), fr(mine["median_s"] / lim) if lim else "-", fe(mine.get("relerr")),
                        "yes" if mine.get("correct") else "**NO**"))
    return md, summary


def compile_tables(recs, threads_list, wls):
    """Two tables: the compile time of every compiled system per case, and,
    for the cases of NEW_SHAPES, what a call at another batch size costs and
    whether it compiled again."""
    good = [dict(r, system="tdsl compiled" if r["system"] == LIBRARY_SYSTEM else r["system"])
            for r in ok_records(recs) if r["workload"] in wls and r["workload"] != "W7" and
            (r.get("compile_s") is not None or r.get("compile_cold_s") is not None)]
    if not good:
        return []
    systems = []
    for r in good:
        if r["system"] not in systems:
            systems.append(r["system"])
    systems.sort(key=lambda sy: not sy.startswith("tdsl"))
    out = ["", "## Compile time", "",
           "Per compiled system: tdsl compiled: optimise + plan + libgccjit, cold (compile cache off) / from the "
           "cache (harness --mode compiled); the peers: the first call (torch.compile: dynamo + inductor + the "
           "C++ compiler; jax.jit: trace + XLA compile; ONNX Runtime: InferenceSession with all graph optimisations) "
           "minus the median of the timed calls.  Each row compiles afresh in its own process (torch._dynamo.reset(), "
           "jax.clear_caches(), a new session; no inductor FX graph cache).", "",
           "| workload | case | T | " + " | ".join(systems) + " |", "|---|---|---|" + "---|" * len(systems)]
    cases = []
    for r in good:
        if (r["workload"], r["case"]) not in cases:
            cases.append((r["workload"], r["case"]))
    for wl, case in cases:
        for t in threads_list:
            cells = []
            for sy in systems:
                r = next((r for r in good if r["workload"] == wl and r["case"] == case and r["threads"] == t
                          and r["system"] == sy), None)
                if r is None:
                    cells.append("-")
                elif r.get("compile_cold_s") is not None:
                    cells.append("%s / %s" % (ft(r["compile_cold_s"]), ft(r.get("compile_cached_s"))))
                else:
                    cells.append(ft(r["compile_s"]))
            if any(c != "-" for c in cells):
                out.append("| %s | %s | %d | %s |" % (wl, case, t, " | ".join(cells)))
    probes = [r for r in good if r.get("new_shapes")]
    if probes:
        out += ["", "## Calls at a new batch size", "",
                "After its timed runs at the case's size, each compiled system is called at the sizes listed, in "
                "order (dim 0 of the first input).  Each entry: the first call at that size (the second call in "
                "parentheses) and whether it compiled again.  tdsl compiled runs the same compiled entry, its "
                "symbolic sizes bound at each call: it never compiles again.  torch.compile (default, "
                "dynamic=None) compiles the first size with static shapes, compiles again with dynamic shapes "
                "at the second size it sees (\"automatic dynamic\") and specialises sizes 0 and 1; the "
                "mark_dynamic row marks dim 0 dynamic before the first call.  jax.jit compiles once per "
                "distinct shape (counted with its cache size).  ONNX Runtime's graph has a symbolic batch dim: "
                "one session runs every size and nothing is compiled per size.", "",
                "| workload | case | T | system | steady | compile | at new sizes: first call (second call), "
                "compiled again? |", "|---|---|---|---|---|---|---|"]
        for wl, case in cases:
            for t in threads_list:
                for r in probes:
                    if r["workload"] != wl or r["case"] != case or r["threads"] != t:
                        continue
                    items = []
                    for e in r["new_shapes"]:
                        shape = e["shape"] if isinstance(e["shape"], str) else "[%s]" % ",".join(
                            str(d) for d in e["shape"])
                        rc = e.get("recompiled")
                        again = "?" if rc is None else ("**yes**" + (" (%d graphs)" % e["compiles"]
                                                                     if e.get("compiles", 1) > 1 else "")
                                                        if rc else "no")
                        bad = e.get("relerr") is not None and e["relerr"] > 1e-4
                        items.append("%s: %s (%s), %s%s" % (shape, ft(e.get("first_call_s")),
                                                            ft(e.get("second_call_s")), again,
                                                            ", **wrong** (rel. error %s)" % fe(e["relerr"])
                                                            if bad else ""))
                    comp = r.get("compile_s") if r.get("compile_s") is not None else r.get("compile_cold_s")
                    out.append("| %s | %s | %d | %s | %s | %s | %s |" % (wl, case, t, r["system"], ft(r["median_s"]),
                                                                       ft(comp), "; ".join(items)))
    return out


def w7_table(recs):
    rows = ["\n## %s\n" % WL_TITLES["W7"], "| what | entry | median | min | max | graph nodes |",
            "|---|---|---|---|---|---|"]
    for r in recs:
        if r.get("workload") != "W7":
            continue
        if r.get("status") == "ok":
            rows.append("| %s | %s | %s | %s | %s | %s |" % (r["system"], r.get("entry", ""), ft(r["median_s"]),
                                                            ft(r["min_s"]), ft(r["max_s"]), r.get("nodes", "")))
        else:
            rows.append("| %s | %s | %s | | | |" % (r["system"], r.get("case", ""), r.get("status", "") + ": " +
                                                    r.get("reason", "")))
    return rows


def missing_lines(recs):
    out, seen = [], set()
    for r in recs:
        if r.get("status") in ("not available", "failed"):
            key = (r.get("system"), r.get("reason"))
            if key in seen:
                continue
            seen.add(key)
            out.append("- %s %s %s: %s — %s" % (r.get("workload", ""), r.get("case", ""), r.get("system", ""),
                                                 r["status"], r.get("reason", "")))
    return out


# --------------------------------------------------------------------- chart
def chart(path, recs, limits, floors_w1, threads_list, wls):
    """One panel per workload and thread count: median ÷ limit (log) per case
    for tdsl eager, tdsl compiled (W1: through the artifact's C API), the
    best numpy, the best torch and the C floor."""
    groups = [("tdsl eager", lambda s: s == "tdsl eager"),
              ("tdsl compiled", lambda s: s in ("tdsl compiled", ARTIFACT_SYSTEM)),
              ("numpy (best)", lambda s: s.startswith("numpy")),
              ("torch (best)", lambda s: s.startswith(("torch", "F.", "nn."))),
              ("jax.jit", lambda s: s.startswith(JAX_SYSTEM)),
              ("ONNX Runtime", lambda s: s.startswith(ORT_SYSTEM)),
              ("C floor", lambda s: s == FLOOR_SYSTEM)]
    good = ok_records(recs)
    data = {}
    for wl in [w for w in wls if w != "W7"]:
        for t in threads_list:
            cases = []
            for r in good:
                if r["workload"] == wl and r["case"] not in cases:
                    cases.append(r["case"])
            vals = {}
            for case in cases:
                lim, _ = limit_of(wl, case, t, limits, floors_w1)
                if not lim:
                    continue
                for g, pred in groups:
                    ts = [r["median_s"] for r in good if r["workload"] == wl and r["case"] == case
                          and (r["threads"] == t or (wl == "W1" and r["system"] == FLOOR_SYSTEM)) and pred(r["system"])]
                    if ts:
                        vals[(case, g)] = min(ts) / lim
            if vals:
                data[(wl, t)] = ([c for c in cases if any((c, g) in vals for g, _ in groups)], vals)
    if not data:
        return "no data to chart"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return chart_gnuplot(path, data, groups)
    keys = sorted(data)
    wlist = sorted({k[0] for k in keys})
    fig, axes = plt.subplots(len(wlist), len(threads_list), figsize=(7 * len(threads_list), 3.2 * len(wlist)),
                             squeeze=False)
    for i, wl in enumerate(wlist):
        for j, t in enumerate(threads_list):
            ax = axes[i][j]
            if (wl, t) not in data:
                ax.set_visible(False)
                continue
            cases, vals = data[(wl, t)]
            width = 0.8 / len(groups)
            for k, (g, _) in enumerate(groups):
                xs = [ci + k * width for ci, c in enumerate(cases) if (c, g) in vals]
                ys = [vals[(c, g)] for c in cases if (c, g) in vals]
                ax.bar(xs, ys, width, label=g)
            ax.set_yscale("log")
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xticks([ci + 0.4 - width / 2 for ci in range(len(cases))])
            ax.set_xticklabels(cases, fontsize=7, rotation=15)
            ax.set_title("%s, T=%d" % (WL_TITLES[wl][:60], t), fontsize=8)
            ax.set_ylabel("median ÷ limit", fontsize=8)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return "chart: %s (matplotlib)" % path


def chart_gnuplot(path, data, groups):
    gp = shutil.which("gnuplot")
    if not gp:
        return ("no chart: neither matplotlib (for %s: apt-get install python3-matplotlib) nor gnuplot "
                "(apt-get install gnuplot-nox) is installed" % SYS_PY)
    dat = path[:-4] + ".dat"
    with open(dat, "w") as f:
        f.write("case " + " ".join('"%s"' % g for g, _ in groups) + "\n")
        for (wl, t), (cases, vals) in sorted(data.items()):
            for c in cases:
                f.write('"%s %s T=%d" ' % (wl, c.replace('"', ""), t) +
                        " ".join(("%g" % vals[(c, g)]) if (c, g) in vals else "?" for g, _ in groups) + "\n")
    script = ("set terminal png size 1400,700; set output '%s'; set style data histograms; set style fill solid; "
              "set logscale y; set ylabel 'median / limit'; set xtics rotate by -45 font ',7'; set key autotitle "
              "columnhead; plot for [i=2:%d] '%s' using i:xtic(1)\n" % (path, len(groups) + 1, dat))
    subprocess.run([gp], input=script, text=True)
    return "chart: %s (gnuplot)" % path


# --------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (whole run < 2 min on 2 cores)")
    ap.add_argument("--threads", default="1,2", help="thread counts, e.g. 1,2")
    ap.add_argument("--workloads", default="w1,w2,w3,w4,w5,w6,w7")
    ap.add_argument("--build", help="configured build dir holding libtdsl.a (default: $TDSL_BUILD, ./build, .)")
    ap.add_argument("--out", help="results dir (default bench/results/<UTC timestamp>)")
    ap.add_argument("--no-peers", action="store_true", help="skip numpy/PyTorch")
    ap.add_argument("--no-tuned", dest="tuned", action="store_false",
                    help="skip the [tuned] PyTorch rows (PERFORMANCE.md's tuned configuration)")
    ap.add_argument("--peers-python", "--torch2", dest="torch2", metavar="PYTHON",
                    default=os.environ.get("TDSL_BENCH_PEERS_PYTHON") or os.environ.get("TDSL_BENCH_TORCH2_PYTHON"),
                    help="a Python (a venv from PyPI: python3 -m venv V && V/bin/pip install numpy torch jax "
                         "onnx onnxruntime) whose PyTorch 2.x adds torch eager and torch.compile rows (tuned), "
                         "whose JAX adds jax.jit rows and whose onnx + onnxruntime add ONNX Runtime rows; "
                         "what it lacks is said, with the pip command, and skipped (default: "
                         "$TDSL_BENCH_PEERS_PYTHON or $TDSL_BENCH_TORCH2_PYTHON, else, without --quick, the "
                         "python3 on PATH when it has one of them)")
    ap.add_argument("--no-jit-peers", dest="jit_peers", action="store_false",
                    help="leave out the jax.jit and ONNX Runtime rows even when --peers-python has them")
    a = ap.parse_args()
    t_start = time.time()
    threads_list = [int(x) for x in a.threads.split(",") if x.strip()]
    wls = [w.strip().upper() for w in a.workloads.split(",") if w.strip()]
    build = find_build(a.build)
    if not build:
        sys.exit("bench/run: no libtdsl.a found (looked in --build, $TDSL_BUILD, ./build, .).\n"
                 "Build first, out of tree:  mkdir -p build && cd build && ../configure && make\n"
                 "then:  bench/run --build build")
    stale_warning(build)
    stamp = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    out = a.out or os.path.join(BENCH, "results", stamp)
    bindir = os.path.join(out, "bin")
    os.makedirs(bindir, exist_ok=True)
    logf = open(os.path.join(out, "commands.log"), "w")
    harness, floors, hcmd, fcmd = build_tools(build, bindir, logf)
    mach = machine_info()
    log("bench/run: results in %s" % out)
    log("machine: %s (%s cores, %s), SIMD %s; %s; %s" % (mach["cpu_model"], mach["cpus"], mach["caches"],
                                                        mach["simd_flags"], mach["os"], mach["gcc"]))
    log("env: %s; load average at start: %s" % (mach["env"], mach["loadavg_start"]))
    try:
        load1 = float(mach["loadavg_start"].split()[0])
    except (ValueError, IndexError):
        load1 = 0.0
    if load1 > 0.5:
        log("warning: load average %.2f: other processes are running; medians (T=2 above all) will be noisy" %
            load1)

    have_np = not a.no_peers and check_python_module("numpy")
    have_torch = have_np and check_python_module("torch")
    notes = []
    if not a.no_peers and not have_np:
        notes.append("numpy is not importable by %s: peers skipped (install: apt-get install python3-numpy)" % SYS_PY)
    if have_np and not have_torch:
        notes.append("torch is not importable by %s: torch rows skipped (install: apt-get install python3-torch)"
                     % SYS_PY)
    torch2, have_jax, have_ort = None, None, None
    if not a.no_peers:
        # torch.compile rows come from SYS_PY's own torch when it is 2.x; else
        # from --peers-python (or $TDSL_BENCH_PEERS_PYTHON), else (not with
        # --quick) from the python3 first on PATH when that is another
        # interpreter with PyTorch 2.x, JAX or ONNX Runtime.  jax.jit and ONNX
        # Runtime rows come from that interpreter only.
        own = torch2_version(SYS_PY)[0] if have_torch else None
        cand, auto = a.torch2, False
        if not cand and not a.quick:   # --quick stays quick: cold torch.compile takes minutes
            path_py = shutil.which("python3")
            if path_py and os.path.realpath(path_py) != os.path.realpath(SYS_PY):
                cand, auto = path_py, True
        if cand and not shutil.which(cand):
            notes.append("--peers-python %s: no such executable: no torch.compile, jax.jit or ONNX Runtime rows"
                         % cand)
            cand = a.torch2 = None
        if cand:
            how = "the python3 on PATH" if auto else "--peers-python"
            t2, why = (None, "%s has it" % SYS_PY) if own else torch2_version(cand)
            have_jax, jax_why = module_version(cand, "jax") if a.jit_peers else (None, "--no-jit-peers")
            have_ort, ort_why = module_version(cand, "onnxruntime", also="onnx") if a.jit_peers else \
                (None, "--no-jit-peers")
            if auto and not (t2 or have_jax or have_ort):
                cand = None
            else:
                a.torch2 = cand
                pip = "%s -m pip install" % cand
                if t2:
                    torch2 = t2
                    mach["torch2"] = "%s (PyTorch %s; %s)" % (cand, torch2, how)
                elif not own:
                    notes.append("%s %s: no PyTorch 2.x with numpy there (%s): no torch.compile rows (install: "
                                 "%s torch numpy)" % (how, cand, why, pip))
                if have_jax:
                    mach["jax"] = "%s (JAX %s; %s)" % (cand, have_jax, how)
                elif a.jit_peers:
                    notes.append("jax is not importable by %s (%s): no jax.jit rows (install: %s jax)" % (
                        cand, jax_why, pip))
                if have_ort:
                    mach["onnxruntime"] = "%s (onnxruntime %s; %s)" % (cand, have_ort, how)
                elif a.jit_peers:
                    notes.append("onnx and onnxruntime are not both importable by %s (%s): no ONNX Runtime rows "
                                 "(install: %s onnx onnxruntime)" % (cand, ort_why, pip))
        if not cand:
            venv = "python3 -m venv V && V/bin/pip install numpy torch jax onnx onnxruntime"
            if not own:
                notes.append("torch.compile: not available (%s has no PyTorch 2.x); pass --peers-python PYTHON "
                             "with one (a venv: %s)" % (SYS_PY, venv))
            if a.jit_peers:
                notes.append("jax.jit and ONNX Runtime: not run (no --peers-python PYTHON that has them; a venv: "
                             "%s, then bench/run --peers-python V/bin/python)" % venv)
    for n in notes:
        log("note: " + n)
    unset_env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    separate_blas_env = len(unset_env) != len(os.environ)
    # PERFORMANCE.md's "tuned" PyTorch, the configuration its targets are set
    # against: AVX-512 ATen kernels, passive OpenMP waiting, tcmalloc.
    # ATen's AVX-512 kernels only where the CPU has AVX-512 (elsewhere they
    # die of SIGILL): AVX2 otherwise.
    flags = mach["simd_flags"].split()
    tuned_env = dict(unset_env, OMP_WAIT_POLICY="PASSIVE")
    if "avx512f" in flags or "avx2" in flags:
        tuned_env["ATEN_CPU_CAPABILITY"] = "avx512" if "avx512f" in flags else "avx2"
    if os.path.exists(TCMALLOC):
        tuned_env["LD_PRELOAD"] = TCMALLOC
    elif have_torch:
        log("note: %s not found: the [tuned] torch rows run without tcmalloc "
            "(install: apt-get install libtcmalloc-minimal4)" % TCMALLOC)

    cases = [c for c in tdsl_cases(a.quick) if c[0] in wls]
    recs, limits, floors_w1, peer_hello = [], {}, {}, []
    tdsl, artifacts = os.path.join(build, "tdsl"), {}
    # The compiled path: one probe; a harness built without the compiler
    # answers "not available" and then no compiled rows are run.
    compiled = bool(cases)
    if cases:
        probe = run_harness(harness, cases[0], threads_list[0], a.quick, "compiled", logf)
        if probe.get("status") == "not available":
            compiled = False
            recs.append(dict(probe, workload="all", case="*"))
            log("tdsl compiled: %s" % probe.get("reason"))
    for t in threads_list:
        servers = {}
        if have_np:
            errlog = open(os.path.join(out, "peers_T%d.log" % t), "w")
            servers["default"] = PeerServer(t, a.quick, dict(os.environ), errlog, "default")
            peer_hello += servers["default"].hello
            if separate_blas_env and "W3" in wls:
                servers["blas"] = PeerServer(t, a.quick, unset_env, errlog, "OPENBLAS_CORETYPE/L2_SIZE unset")
            if have_torch and a.tuned:
                servers["tuned"] = PeerServer(t, a.quick, tuned_env, errlog, "tuned", ["--tuned"])
                mach["tuned_env"] = " ".join("%s=%s" % (k, tuned_env[k]) for k in (
                    "ATEN_CPU_CAPABILITY", "OMP_WAIT_POLICY", "LD_PRELOAD") if k in tuned_env) + \
                    ", OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset"
            if torch2:
                errlog2 = open(os.path.join(out, "peers_torch2_T%d.log" % t), "w")
                # a fresh inductor cache: W7's first call is a cold compile, not
                # a read of an earlier run's kernels (/tmp/torchinductor_$USER by default)
                env2 = dict(tuned_env, TORCHINDUCTOR_CACHE_DIR=os.path.join(out, "torchinductor_T%d" % t))
                # and no FX graph cache: each torch.compile in the run (they are reset
                # in between) compiles its graph, not a read of an earlier row's
                env2.update(TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
                servers["torch2"] = PeerServer(t, a.quick, env2, errlog2, "torch2", ["--tuned"], python=a.torch2)
                peer_hello += servers["torch2"].hello
            for only, have in (("jax", have_jax), ("ort", have_ort)):
                if not have:
                    continue
                errlog3 = open(os.path.join(out, "peers_%s_T%d.log" % (only, t)), "w")
                env3 = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
                    "--xla_cpu_multi_thread_eigen=%s intra_op_parallelism_threads=%d" % (
                        "true" if t > 1 else "false", t)))
                servers[only] = PeerServer(t, a.quick, env3 if only == "jax" else dict(os.environ), errlog3, only,
                                           ["--only", only], python=a.torch2)
                peer_hello += servers[only].hello
        log("[T=%d] limits" % t)
        for r in run_floors(floors, t, ["limits"], a.quick, logf):
            limits.setdefault(t, {})[r["name"]] = r
            recs.append(dict(r, workload="W0", case=r["name"], system="limit"))
            log("  %-14s %s" % (r["name"], ("%.1f %s" % (r["rate"], r["unit"])) if "rate" in r else ft(r["median_s"])))
        for wl in wls:
            if wl == "W7":
                continue
            for c in [c for c in cases if c[0] == wl]:
                r = run_harness(harness, c, t, a.quick, "eager", logf)
                recs.append(r)
                log("[T=%d] %s %-26s tdsl eager %s%s" % (t, wl, c[1], ft(r.get("median_s")) if r.get("status") ==
                    "ok" else r.get("status") + ": " + r.get("reason", ""),
                    "" if r.get("correct", True) else "  WRONG (rel. error %s)" % fe(r.get("relerr"))))
                if compiled:
                    rc = run_harness(harness, c, t, a.quick, "compiled", logf)
                    recs.append(rc)
                    log("[T=%d] %s %-26s tdsl compiled%s %s" % (t, wl, c[1], " (library)" if wl == "W1" else "",
                        ft(rc.get("median_s")) if rc.get("status") == "ok" else rc.get("status") + ": " +
                        rc.get("reason", "")))
                if wl == "W1":
                    if c[1] not in artifacts:
                        artifacts[c[1]] = build_artifact(harness, tdsl, c, out, logf)
                    ra = run_artifact(artifacts[c[1]], c, t, a.quick, logf)
                    recs.append(ra)
                    log("[T=%d] %s %-26s tdsl artifact C API %s%s" % (t, wl, c[1], ft(ra.get("median_s"))
                        if ra.get("status") == "ok" else ra.get("status") + ": " + ra.get("reason", ""),
                        "" if ra.get("correct", True) else "  WRONG (rel. error %s)" % fe(ra.get("relerr"))))
            part = {"W1": "w1", "W2": "w2", "W5": "w5"}.get(wl)
            if part and (wl != "W1" or t == 1):
                for r in run_floors(floors, t, [part], a.quick, logf):
                    wlc = ("W1", r["name"]) if part == "w1" else FLOOR_NAMES.get((part, r["name"]))
                    if not wlc:
                        continue
                    recs.append(dict(r, workload=wlc[0], case=wlc[1], system=FLOOR_SYSTEM, status="ok"))
                    if part == "w1":
                        floors_w1[r["name"]] = r["median_s"]
            if servers:
                srv = servers["blas"] if wl == "W3" and "blas" in servers else servers["default"]
                got = srv.run(wl.lower())
                for extra in ("tuned", "torch2", "jax", "ort"):
                    if extra in servers:
                        got += servers[extra].run(wl.lower())
                recs += got
                n_ok = sum(1 for r in got if r.get("status") == "ok")
                log("[T=%d] %s peers: %d results%s" % (t, wl, n_ok, "".join(
                    "; %s: %s" % (r["system"], r.get("reason", "")) for r in got
                    if r.get("status") in ("failed", "not available"))))
                for r in got:
                    if r.get("system") == "openblas":
                        log("[T=%d] W3 OpenBLAS kernel: %s (%s)" % (t, r.get("openblas_core"), r.get("env")))
        if "W7" in wls and t == threads_list[0]:
            for c in [c for c in tdsl_cases(a.quick) if c[1] in ("MLP B=1", "block B=8 S=128 d=256")]:
                cmd = [harness, c[2], "--entry", c[3], "--search", STDLIB, "--frontend-only", "--runs",
                       "5" if a.quick else "20", "--label", c[1]]
                p = run_cmd(cmd, logf)
                try:
                    d = json.loads(p.stdout.strip().splitlines()[-1])
                    d.update(workload="W7", case=c[1], system="tdsl front end (parse + elaborate + verify), cold",
                             threads=t)
                except (ValueError, IndexError):
                    d = dict(workload="W7", case=c[1], system="tdsl front end", status="failed", reason=p.stderr[-300:])
                recs.append(d)
                if compiled:
                    cmd = [harness, c[2], "--entry", c[3], "--search", STDLIB, "--mode", "compiled",
                           "--compile-only", "--label", c[1]]
                    p = run_cmd(cmd, logf)
                    try:
                        d = json.loads(p.stdout.strip().splitlines()[-1])
                    except (ValueError, IndexError):
                        d = dict(status="failed", reason=p.stderr[-300:])
                    for key, what in (("compile_cold_s", "cold"), ("compile_cached_s", "cached")):
                        r = dict(d, workload="W7", case=c[1], threads=t,
                                 system="tdsl compiled: optimise + plan + compile, %s" % what)
                        if d.get("status") == "ok":
                            r.update(median_s=d[key], min_s=d[key], max_s=d[key], runs=1)
                        recs.append(r)
            if servers:
                recs += servers["default"].run("w7")
                for extra in ("torch2", "jax", "ort"):
                    if extra in servers:
                        recs += servers[extra].run("w7")
        for s in servers.values():
            s.close()

    mach["loadavg_end"] = sh("cat /proc/loadavg")
    clock = limits.get(threads_list[0], {}).get("clock", {}).get("rate")
    mach["measured_clock_ghz"] = round(clock, 2) if clock else None
    for h in peer_hello:
        if h.get("system") == "peers" and h.get("peer_env") in (None, "default"):
            mach["numpy"], mach["torch"] = h.get("numpy"), h.get("torch")
    mach["pinning"] = "; ".join("T=%d: %s" % (t, ("taskset -c " + ",".join(str(c) for c in cpus_for(t)))
                                             if TASKSET else "not pinned (no taskset)") for t in threads_list) + \
        " (tdsl, the C floors and every peer process alike)"
    for h in peer_hello:
        isa = h.get("inductor_vec_isa")
        if isa is not None:
            mach["inductor_vec_isa"] = isa
            if "INVALID" in isa or isa.startswith("unknown"):
                notes.append("torch.compile's inductor found no usable CPU vector ISA (%s) in %s: its kernels are "
                             "scalar code, so the torch.compile rows understate it (bench/NOTES.md section 8)" %
                             (isa, h.get("peer_env")))
                break
    mach["peer_threads"] = ["%s, T=%d: %s" % (h.get("peer_env"), h.get("threads"), h.get("threads_how", "?"))
                            for h in peer_hello if h.get("system") == "peers"]
    def is_tc(r):
        return r.get("system", "").startswith("torch.compile")
    if any(is_tc(r) and r.get("status") == "ok" for r in recs):
        # PyTorch 2.x (--torch2) ran them: Debian's torch 1.13 saying it cannot is noise
        recs = [r for r in recs if not (is_tc(r) and r.get("status") == "not available")]
    md_tables, summary = build_tables(recs, limits, floors_w1, threads_list, wls)
    lim_lines = ["Median run (best run).  The limits used below are the best run, and at T=2 never less "
                 "than at T=1.", "",
                 "| T | copy | copy (non-temporal) | FMA peak | W4 weights read (L3) | fresh 64 MiB, 4 KiB pages | same, THP |",
                 "|---|---|---|---|---|---|---|"]
    for t in threads_list:
        L = limits.get(t, {})
        g = lambda k: ("%.1f (%.1f) %s" % (L[k]["rate"], L[k]["rate_best"], L[k]["unit"])) \
            if k in L and "rate" in L[k] else "-"
        lim_lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (t, g("copy"), g("copy_nt"), g("fma_peak"),
                         g("weights_read"),
                         ft(L.get("fault64M_4k", {}).get("median_s")), ft(L.get("fault64M_thp", {}).get("median_s"))))
    head = ["# tdsl bench %s%s" % (stamp, " (--quick)" if a.quick else ""), "",
            "Machine: %s, %s CPUs (%s threads/core), %s; SIMD: %s; nominal %s MHz, measured clock %s GHz; "
            "%s RAM; THP %s; %s, kernel %s; %s." % (
                mach["cpu_model"], mach["cpus"], mach["threads_per_core"], mach["caches"], mach["simd_flags"],
                mach["nominal_mhz"], mach["measured_clock_ghz"], mach["memory"], mach["thp"], mach["os"],
                mach["kernel"], mach["gcc"]),
            "Peers: %s numpy %s, torch %s.  Environment: %s.  Load average start / end: %s / %s." % (
                mach["python_for_peers"], mach.get("numpy"), mach.get("torch"), mach["env"],
                mach["loadavg_start"], mach["loadavg_end"]) + (
                "  Rows marked [tuned]: PyTorch in PERFORMANCE.md's tuned configuration (%s)." % mach["tuned_env"]
                if mach.get("tuned_env") else "") + (
                "  Rows marked [torch2]: %s, in the tuned configuration." % mach["torch2"]
                if mach.get("torch2") else "  torch.compile: not available (no --peers-python PYTHON given).") + (
                "  jax.jit rows: %s." % mach["jax"] if mach.get("jax") else "") + (
                "  ONNX Runtime rows: %s (models built with the onnx helper API, opset 17)." % mach["onnxruntime"]
                if mach.get("onnxruntime") else ""),
            "Threads: %s.  Each peer process: %s." % (mach["pinning"], "; ".join(mach["peer_threads"]) or "none"),
            "tdsl eager is the interpreter: single-threaded except large matmuls, which use TDSL_NUM_THREADS.",
            "", "## Limits measured in this run", ""] + lim_lines + ["", "## Summary", ""] + summary
    miss = missing_lines(recs)
    tail = compile_tables(recs, threads_list, wls) + w7_table(recs) + ["", "## Not available / failed", ""] + (miss or ["- nothing"]) + \
        ([""] + ["- " + n for n in notes] if notes else [])
    text = "\n".join(head + md_tables + tail) + "\n"
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write(text)
    chart_msg = chart(os.path.join(out, "chart.png"), recs, limits, floors_w1, threads_list, wls)
    res = {"meta": dict(mach, stamp=stamp, quick=a.quick, threads=threads_list, workloads=wls, build=build,
                        harness_build=hcmd, floors_build=fcmd, seconds=round(time.time() - t_start, 1),
                        notes=notes, chart=chart_msg),
           "limits": {str(k): v for k, v in limits.items()}, "records": recs}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    log("")
    log(text)
    log(chart_msg)
    log("bench/run: done in %.0f s; %s/{results.json,tables.md,chart.png}" % (time.time() - t_start, out))


if __name__ == "__main__":
    main()

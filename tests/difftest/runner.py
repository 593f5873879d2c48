"""runner.py - runs programs on every backend and compares the outcomes.

Backends, all on the same .npy inputs (and safetensors weights for models):

  eager     tdsl run FILE --entry E --in ... --out ...
  comp1     the same with --compiled, TDSL_NUM_THREADS=1
  comp2     the same with --compiled, TDSL_NUM_THREADS=2
  artifact  tdsl build FILE -o DIR --exe, then DIR/NAME --entry E ...
            (TDSL_NUM_THREADS=2)

The compiled runs share a private TDSL_CACHE_DIR per worker, so a graph
compiles once and then serves every binding of its symbols (as it
should: one compiled graph serves every size).  Several programs go into
one .td file, one entry point each, so one `tdsl build` serves them all.

Checks, per program and binding of the symbols:
  * no backend crashes (a signal), times out or prints a sanitizer report;
  * the status class agrees: all succeed, or all fail with an error;
    eager's error also has to be the one the semantics predict
    (the reference raises RefError) and vice versa;
  * every output has the reference's dtype and shape, and values within
    the tolerance contract of refops.py (unreliable elements skipped);
    backends agree with eager within twice that tolerance;
  * print() output agrees between backends (numbers to print precision).
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import time

import numpy as np

import refops as R

BACKENDS = ("eager", "comp1", "comp2", "artifact")
SANITIZER = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       r"ThreadSanitizer|runtime error:|MemorySanitizer)")


class Config:
    def __init__(self, tdsl, srcdir, workdir, timeout=60.0, backends=BACKENDS, keep=False, big=1 << 18,
                 specials=0.1):
        self.big = big
        self.specials = specials
        self.tdsl = tdsl
        self.srcdir = srcdir
        self.workdir = workdir
        self.timeout = timeout
        self.backends = tuple(backends)
        self.keep = keep


class Failure:
    """One finding: what differed, where, and how to run it again."""

    def __init__(self, prog, kind, backends, detail, binding=None, bindex=None):
        self.prog, self.kind, self.backends = prog, kind, tuple(backends)
        self.detail, self.binding, self.bindex = detail, binding, bindex

    def key(self):
        return (self.kind, self.backends)

    def __repr__(self):
        b = "" if self.binding is None else " at %s" % _fmt_env(self.binding)
        return "%s [%s]%s: %s" % (self.kind, ",".join(self.backends), b, self.detail)


def _fmt_env(env):
    return "{%s}" % ", ".join("%s=%d" % kv for kv in sorted(env.items())) if env else "{}"


# ---- files ----

def write_safetensors(path, tensors):
    """A safetensors file of f32 tensors (format: 8-byte header length,
    JSON header, raw little-endian data)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def batch_source(progs):
    """The .td text of several programs and each one's line range."""
    text = "import nn\n\n"
    ranges = {}
    for p in progs:
        start = text.count("\n") + 1
        text += p.render() + "\n"
        ranges[p.name] = (start, text.count("\n"))
    return text, ranges


# ---- processes ----

class Run:
    __slots__ = ("rc", "out", "err", "secs", "timed_out", "outputs")

    def __init__(self, rc, out, err, secs, timed_out):
        self.rc, self.out, self.err, self.secs, self.timed_out = rc, out, err, secs, timed_out
        self.outputs = None

    def status(self):
        """ok, error, or crash (a signal, a timeout, a sanitizer report, an
        exit status that is neither 0 nor 1)."""
        if self.timed_out:
            return "crash"
        if SANITIZER.search(self.err):
            return "crash"
        if self.rc == 0:
            return "ok"
        if self.rc == 1 and "error" in self.err:
            return "error"
        return "crash"

    def why(self):
        if self.timed_out:
            return "timed out"
        m = SANITIZER.search(self.err)
        if m:
            return "sanitizer: " + _line_of(self.err, m.start())
        if self.rc < 0:
            return "killed by signal %d" % -self.rc
        return "exit %d: %s" % (self.rc, self.err.strip().splitlines()[-1] if self.err.strip() else "")


def _line_of(text, pos):
    s = text.rfind("\n", 0, pos) + 1
    e = text.find("\n", pos)
    return text[s:e if e >= 0 else None][:200]


def run_cmd(cmd, env, timeout, cwd=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        r = Run(p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"),
                time.time() - t0, False)
    except subprocess.TimeoutExpired as e:
        r = Run(-9, (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace"),
                time.time() - t0, True)
    return r


def base_env(cfg, threads):
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    env["TDSL_NUM_THREADS"] = str(threads)
    env["TDSL_CACHE_DIR"] = os.path.join(cfg.workdir, "cache")
    env.setdefault("TDSL_PATH", os.path.join(cfg.srcdir, "stdlib"))
    return env


def backend_cmd(cfg, backend, tdfile, artdir, prog, inputs, outs, weights):
    """(argv, threads) of one backend run."""
    args = ["--entry", prog.entry()]
    for name, path in inputs:
        args += ["--in", "%s=%s" % (name, path)]
    if weights:
        args += ["--weights", weights]
    for o in outs:
        args += ["--out", o]
    if backend == "eager":
        return [cfg.tdsl, "run", tdfile] + args, 1
    if backend in ("comp1", "comp2"):
        return [cfg.tdsl, "run", tdfile] + args + ["--compiled"], 1 if backend == "comp1" else 2
    return [os.path.join(artdir, "batch")] + args, 2


# ---- comparing ----

def expected_shapes(prog, env):
    return [tuple(d.eval(env) for d in o.shape) for o in prog.outputs]


def compare_value(got, ref, dt, scale=1.0):
    """(ok, message) for one output against a reference Val."""
    if dt == "bool" or dt in R.INTS:
        g = got.astype(np.int64) if dt != "bool" else got.astype(np.bool_)
        bad = (g != ref.v) & ~ref.bad
        if np.any(bad):
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            return False, "element %s: got %s, expected %s (%d of %d differ)" % (
                i, g[i], ref.v[i], int(bad.sum()), bad.size)
        return True, ""
    g = got.astype(np.float64)
    v = ref.v
    tol = scale * (R.SAFETY * ref.e + R.ATOL[dt])
    with np.errstate(all="ignore"):
        same = (g == v) | (np.isnan(g) & np.isnan(v))
        close = np.isfinite(v) & np.isfinite(g) & (np.abs(g - v) <= tol)
    bad = ~(same | close | ref.bad)
    if np.any(bad):
        i = tuple(int(k) for k in np.argwhere(bad)[0])
        with np.errstate(all="ignore"):
            err = np.where(bad & ~np.isnan(g - v), np.abs(g - v), 0)
        return False, "element %s: got %r, expected %r (tolerance %.3g; %d of %d differ, max error %.3g)" % (
            i, float(g[i]), float(v[i]), float(tol[i]), int(bad.sum()), bad.size, float(np.max(err)))
    return True, ""


NUM = re.compile(r"^[-+]?(\d+\.?\d*([eE][-+]?\d+)?|inf|nan)$")


def prints_agree(a, b):
    ta, tb = re.findall(r"[^\s\[\],()]+", a), re.findall(r"[^\s\[\],()]+", b)
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb):
        if x == y:
            continue
        if NUM.match(x) and NUM.match(y):
            fx, fy = float(x), float(y)
            if np.isnan(fx) and np.isnan(fy):
                continue
            if abs(fx - fy) <= 2e-3 * max(abs(fx), abs(fy)) + 2e-4:
                continue
        return False
    return True


# ---- one program ----

class Outcome:
    """What running one program gave: failures, counts, timings."""

    def __init__(self, prog):
        self.prog = prog
        self.failures = []
        self.runs = 0
        self.bindings = 0
        self.checked = 0        # output elements compared with the reference
        self.skipped = 0        # ...and those skipped as unreliable
        self.ref_errors = 0     # bindings where the semantics require an error
        self.secs = {b: 0.0 for b in BACKENDS}


def plan_inputs(prog, rng_seed, cfg):
    """The bindings, weights and input values a program runs with, all
    from its seed: [(env, values)], params."""
    rng = np.random.default_rng(rng_seed)
    bindings = prog.bindings(random.Random(rng_seed), cfg.big)
    params = prog.make_params(rng) if prog.is_model else {}
    special = rng.random() < cfg.specials and prog.specials
    return [(env, prog.make_inputs(env, rng, special)) for env in bindings], params


def run_program(cfg, prog, tdfile, artdir, pdir, plan, params, art_weights=None, build_err=None):
    """Runs every backend at every binding of plan; returns an Outcome.
    An artifact holds the parameters of every model of its file and loads
    them all at once: art_weights is that file's (default: prog's own)."""
    out = Outcome(prog)
    os.makedirs(pdir, exist_ok=True)
    weights = None
    if params:
        weights = os.path.join(pdir, "weights.safetensors")
        write_safetensors(weights, params)
    for bi, (env, values) in enumerate(plan):
        fails = run_binding(cfg, prog, tdfile, artdir, pdir, env, bi, values, params, weights, out,
                            build_err, art_weights or weights)
        out.failures.extend(fails)
        out.bindings += 1
    return out


def save_inputs(pdir, bi, values):
    paths = []
    for name, v in values.items():
        p = os.path.join(pdir, "b%d_%s.npy" % (bi, name))
        np.save(p, v)
        paths.append((name, p))
    return paths


def run_binding(cfg, prog, tdfile, artdir, pdir, env, bi, values, params, weights, out, build_err,
                art_weights=None):
    fails = []
    inputs = save_inputs(pdir, bi, values)
    try:
        ref = prog.reference(env, values, params)
        ref_err = None
    except R.RefError as e:
        ref, ref_err = None, e
        out.ref_errors += 1
    except Exception as e:                                    # a tester bug: report it
        import traceback
        return [Failure(prog, "internal", ["reference"], "%s: %s\n%s" % (
            type(e).__name__, e, traceback.format_exc()), env, bi)]
    runs = {}
    for b in cfg.backends:
        if b == "artifact" and build_err is not None:
            continue
        outs = [os.path.join(pdir, "b%d_%s_out%d.npy" % (bi, b, k)) for k in range(len(prog.outputs))]
        for o in outs:
            if os.path.exists(o):
                os.unlink(o)
        argv, threads = backend_cmd(cfg, b, tdfile, artdir, prog, inputs, outs,
                                    art_weights or weights if b == "artifact" else weights)
        r = run_cmd(argv, base_env(cfg, threads), cfg.timeout)
        out.runs += 1
        out.secs[b] += r.secs
        if r.status() == "ok":
            try:
                r.outputs = [np.load(o) for o in outs]
            except Exception as e:
                r.rc, r.err = 99, "cannot read its outputs: %s" % e
        runs[b] = r
    # crashes
    for b, r in runs.items():
        if r.status() == "crash":
            fails.append(Failure(prog, "crash", [b], r.why(), env, bi))
    if fails:
        return fails
    # status classes
    eager = runs.get("eager")
    if eager is not None:
        want = "error" if ref_err else "ok"
        if eager.status() != want:
            what = ("eager fails (%s) where the semantics give a value" % _last_line(eager.err)) \
                if want == "ok" else ("eager succeeds where the semantics require an error (%s)" % ref_err)
            fails.append(Failure(prog, "ref-status", ["eager"], what, env, bi))
        differ = [b for b, r in runs.items() if b != "eager" and r.status() != eager.status()]
        if differ:
            what = "; ".join("%s %s" % (b, _describe(runs[b])) for b in differ)
            fails.append(Failure(prog, "status", differ, "%s; eager %s" % (what, _describe(eager)), env, bi))
    if ref_err is not None:
        return fails
    shapes = expected_shapes(prog, env)
    # values against the reference
    wrong = {}
    for b, r in runs.items():
        if r.status() != "ok":
            continue
        for k, (o, g) in enumerate(zip(prog.outputs, r.outputs)):
            if str(g.dtype) != np.dtype(R.NP_DTYPE[o.dt]).name or tuple(g.shape) != shapes[k]:
                wrong.setdefault(b, []).append("output %d is %s%s, expected %s%s" % (
                    k, g.dtype, list(g.shape), np.dtype(R.NP_DTYPE[o.dt]).name, list(shapes[k])))
                continue
            ok, msg = compare_value(g, ref[k], o.dt)
            if ok and b == "eager":
                out.checked += int(ref[k].v.size)
                out.skipped += int(ref[k].bad.sum())
            if not ok:
                wrong.setdefault(b, []).append("output %d: %s" % (k, msg))
    if wrong:
        # one finding per group of backends that are wrong alike
        bad = sorted(wrong, key=BACKENDS.index)
        fails.append(Failure(prog, "value", bad, "; ".join("%s: %s" % (b, wrong[b][0]) for b in bad), env, bi))
    # backends against eager, where the reference could not decide
    if eager is not None and eager.status() == "ok" and "eager" not in wrong:
        for b, r in runs.items():
            if b == "eager" or r.status() != "ok" or b in wrong:
                continue
            for k, o in enumerate(prog.outputs):
                ok, msg = compare_value(r.outputs[k], R.Val(eager.outputs[k].astype(
                    np.float64 if o.dt in R.FLOATS else np.int64 if o.dt != "bool" else np.bool_), o.dt,
                    ref[k].e, ref[k].bad), o.dt, scale=2.0)
                if not ok:
                    fails.append(Failure(prog, "value", [b], "against eager: output %d: %s" % (k, msg), env, bi))
                    break
    # print output
    if eager is not None and eager.status() == "ok":
        for b, r in runs.items():
            if b != "eager" and r.status() == "ok" and not prints_agree(eager.out, r.out):
                fails.append(Failure(prog, "print", [b], "printed %r, eager %r" % (r.out[:300], eager.out[:300]),
                                     env, bi))
    return fails


def _last_line(s):
    s = s.strip().splitlines()
    return s[-1][:300] if s else ""


def _describe(r):
    st = r.status()
    return "succeeds" if st == "ok" else "fails (%s)" % _last_line(r.err)


# ---- a batch of programs ----

def build_one(cfg, prog, pdir, env):
    """Builds one program's artifact alone: (its dir, the failed Run or None)."""
    os.makedirs(pdir, exist_ok=True)
    single = os.path.join(pdir, "single.td")
    with open(single, "w") as f:
        f.write(batch_source([prog])[0])
    artdir = os.path.join(pdir, "art")
    b = run_cmd([cfg.tdsl, "build", single, "-o", artdir, "--exe", "--name", "batch"], env, cfg.timeout * 2)
    return artdir, (None if b.status() == "ok" else b)


def run_batch(cfg, progs, bdir, seeds):
    """Writes one .td file for progs, checks and builds it once, runs each
    program; returns their Outcomes."""
    os.makedirs(bdir, exist_ok=True)
    text, ranges = batch_source(progs)
    tdfile = os.path.join(bdir, "batch.td")
    with open(tdfile, "w") as f:
        f.write(text)
    env = base_env(cfg, 1)
    outcomes = []
    chk = run_cmd([cfg.tdsl, "check", tdfile], env, cfg.timeout)
    rejected = {}
    if chk.status() != "ok":
        for m in re.finditer(r"batch\.td:(\d+):\d+: error: (.*)", chk.err):
            line = int(m.group(1))
            for p in progs:
                lo, hi = ranges[p.name]
                if lo <= line <= hi:
                    rejected.setdefault(p.name, m.group(2))
        if not rejected:
            for p in progs:
                rejected[p.name] = chk.why() if chk.status() == "crash" else _last_line(chk.err)
        good = [p for p in progs if p.name not in rejected]
        for p in progs:
            if p.name in rejected:
                o = Outcome(p)
                kind = "crash" if chk.status() == "crash" else "check-rejected"
                o.failures.append(Failure(p, kind, ["check"], rejected[p.name]))
                outcomes.append(o)
        if not good:
            return outcomes
        text, ranges = batch_source(good)
        with open(tdfile, "w") as f:
            f.write(text)
        progs = good
    plans = {p.name: plan_inputs(p, seeds[p.name], cfg) for p in progs}
    allparams = {}
    for p in progs:
        allparams.update(plans[p.name][1])
    batch_weights = None
    if allparams:
        batch_weights = os.path.join(bdir, "weights.safetensors")
        write_safetensors(batch_weights, allparams)
    artdir = os.path.join(bdir, "art")
    batch_built = True
    if "artifact" in cfg.backends:
        b = run_cmd([cfg.tdsl, "build", tdfile, "-o", artdir, "--exe", "--name", "batch"], env, cfg.timeout * 2)
        batch_built = b.status() == "ok"
    for p in progs:
        pdir = os.path.join(bdir, p.name)
        part, build_err, aw = artdir, None, batch_weights
        if not batch_built:
            # find who breaks the build: each program built on its own
            part, build_err = build_one(cfg, p, pdir, env)
            aw = None
        plan, params = plans[p.name]
        o = run_program(cfg, p, tdfile, part, pdir, plan, params, aw, build_err)
        if build_err is not None:
            o.failures.append(Failure(p, "crash" if build_err.status() == "crash" else "build",
                                      ["artifact"], "tdsl build: " + build_err.why()))
        outcomes.append(o)
        if not cfg.keep and not o.failures:
            shutil.rmtree(pdir, ignore_errors=True)
    return outcomes

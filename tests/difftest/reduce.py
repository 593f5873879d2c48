"""reduce.py - shrinks a failing program to a minimal one that still fails.

Greedy delta debugging over one program and the binding it failed at.
A candidate is kept when running it reproduces a failure of the same kind
on at least one of the same backends (runner.run_binding decides).  The
steps, tried in this order and repeated until none applies:

  sizes    each symbol towards 0, 1, 2, ... (inputs drawn again)
  outputs  drop one output, or one print
  cut      replace a node by a new input holding the node's reference
           value, so everything above it goes away but the values below
           stay what they were
  bypass   replace a node by one of its operands of the same type
  values   simpler input values (integers, then all ones)

then, cosmetically, every node on its own line and no return type.  The
result goes to a directory: repro.td, the inputs (.npy), the weights,
repro.sh with the command line of every backend, and failure.txt.
"""
import os
import shutil
import time

import numpy as np

import ops
import refops as R
import runner
from program import Program

MAX_TESTS = 200      # candidates tried per failure, at most
MAX_SECS = 120.0     # ...and seconds spent


class State:
    def __init__(self, prog, env, values, params):
        self.prog, self.env, self.values, self.params = prog, dict(env), dict(values), params


def _same_failure(fails, kind, backends):
    return any(f.kind == kind and set(f.backends) & set(backends) for f in fails)


def needed_backends(kind, failing):
    """The backends a candidate runs on: the cheapest one that failed, and
    eager where the finding is a disagreement with eager."""
    cheapest = [b for b in ("comp1", "comp2", "eager", "artifact") if b in failing][:1]
    if kind in ("value", "crash") or "eager" in failing:
        need = set(cheapest)
    elif kind == "ref-status":
        need = {"eager"}
    else:
        need = {"eager"} | set(cheapest)
    return tuple(b for b in runner.BACKENDS if b in need)


class Reducer:
    def __init__(self, cfg, kind, backends, workdir):
        self.cfg, self.kind, self.backends = cfg, kind, tuple(backends)
        self.workdir = workdir
        self.tests = 0
        self.t0 = time.time()
        self.last = None
        self.run_backends = needed_backends(kind, self.backends)

    def budget(self):
        return self.tests < MAX_TESTS and time.time() - self.t0 < MAX_SECS

    def interesting(self, st):
        """Does st still fail the same way?"""
        self.tests += 1
        d = os.path.join(self.workdir, "t%d" % self.tests)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        try:
            fails = self.run(st, d)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        if _same_failure(fails, self.kind, self.backends):
            self.last = [f for f in fails if f.kind == self.kind and set(f.backends) & set(self.backends)][0]
            return True
        return False

    def run(self, st, d):
        cfg = runner.Config(self.cfg.tdsl, self.cfg.srcdir, self.cfg.workdir, self.cfg.timeout,
                            self.run_backends, False, self.cfg.big, self.cfg.specials)
        tdfile = os.path.join(d, "repro.td")
        text = runner.batch_source([st.prog])[0]
        with open(tdfile, "w") as f:
            f.write(text)
        env = runner.base_env(cfg, 1)
        chk = runner.run_cmd([cfg.tdsl, "check", tdfile], env, cfg.timeout)
        if chk.status() != "ok":
            kind = "crash" if chk.status() == "crash" else "check-rejected"
            return [runner.Failure(st.prog, kind, ["check"], runner._last_line(chk.err))]
        build_err, artdir = None, os.path.join(d, "art")
        if "artifact" in cfg.backends:
            b = runner.run_cmd([cfg.tdsl, "build", tdfile, "-o", artdir, "--exe", "--name", "batch"],
                               env, cfg.timeout * 2)
            if b.status() != "ok":
                build_err = b
                kind = "crash" if b.status() == "crash" else "build"
                return [runner.Failure(st.prog, kind, ["artifact"], b.why())]
        weights = None
        if st.params:
            weights = os.path.join(d, "weights.safetensors")
            runner.write_safetensors(weights, st.params)
        out = runner.Outcome(st.prog)
        return runner.run_binding(cfg, st.prog, tdfile, artdir, d, st.env, 0, st.values, st.params,
                                  weights, out, build_err)

    # ---- the steps ----
    def shrink(self, st):
        progress = True
        while progress and self.budget():
            progress = False
            for step in (self.step_outputs, self.step_sizes, self.step_cut, self.step_bypass,
                         self.step_values):
                for cand in step(st):
                    if not self.budget():
                        return st
                    if self.interesting(cand):
                        st = cand
                        progress = True
                        break
                if progress:
                    break
        for cand in self.step_cosmetic(st):
            if self.budget() and self.interesting(cand):
                st = cand
        return st

    def step_sizes(self, st):
        """Smaller sizes: first the leading part of the same values, then
        values drawn afresh."""
        rng = np.random.default_rng(12345)
        for s in sorted(st.prog.used_symbols()):
            v = st.env.get(s, 0)
            for w in sorted({0, 1, 2, 3, v // 2, v - 1}):
                if 0 <= w < v:
                    env = dict(st.env)
                    env[s] = w
                    yield State(st.prog, env, _prefix_values(st.prog, st.values, env), st.params)
                    yield State(st.prog, env, st.prog.make_inputs(env, rng), st.params)

    def step_outputs(self, st):
        p = st.prog
        for k, o in enumerate(p.outputs):
            # return something it is computed from instead (any type but
            # bf16, which .npy lacks), the nearest first
            seen, frontier = set(), o.operands()
            while frontier:
                nxt = []
                for a in frontier:
                    if id(a) in seen:
                        continue
                    seen.add(id(a))
                    nxt.extend(a.operands())
                    if a.dt != "bf16" and a.op not in ("split", "input"):
                        q = p.copy()
                        q.outputs = p.outputs[:k] + [a] + p.outputs[k + 1:]
                        yield self.with_prog(st, q.live())
                frontier = nxt
        if len(p.outputs) > 1:
            for k in range(len(p.outputs)):
                q = p.copy()
                q.outputs = p.outputs[:k] + p.outputs[k + 1:]
                yield self.with_prog(st, q.live())
        for n in p.nodes:
            if n.op == "print":
                q = p.copy()
                q.nodes = [m for m in p.nodes if m is not n]
                yield self.with_prog(st, q.live())

    def with_prog(self, st, prog):
        values = {x.attrs["name"]: st.values[x.attrs["name"]] for x in prog.inputs if x.attrs["name"] in st.values}
        for x in prog.inputs:     # binders added by live()
            if x.attrs["name"] not in values:
                values[x.attrs["name"]] = np.zeros(tuple(d.eval(st.env) for d in x.shape), np.float32)
        return State(prog, st.env, values, _used_params(prog, st.params))

    def step_cut(self, st):
        p = st.prog
        vals = {}
        try:
            p.reference_all(st.env, st.values, st.params, vals)
        except R.RefError:
            pass
        except Exception:
            return
        names = {x.attrs["name"] for x in p.inputs}
        k = 0
        while "c%d" % k in names:
            k += 1
        for n in reversed(p.nodes):
            if n.op in ("split", "print") or id(n) not in vals or n.dt == "bf16":
                continue
            if not all(d.is_const() or d.is_sym() for d in n.shape):
                continue
            v = vals[id(n)]
            name = "c%d" % k
            x = ops.mk_input(name, n.dt, n.shape)
            q = rebuild(p, {id(n): x}, [x])
            values = dict(st.values)
            values[name] = _as_array(v, n.dt)
            yield self.with_values(st, q, values)

    def with_values(self, st, prog, values):
        s = self.with_prog(State(prog, st.env, values, st.params), prog)
        return s

    def step_bypass(self, st):
        p = st.prog
        for n in reversed(p.nodes):
            if n.op in ("split", "print", "input"):
                continue
            for a in n.operands():
                if a.dt == n.dt and a.shape == n.shape and a.op != "split":
                    yield self.with_prog(st, rebuild(p, {id(n): a}, []))
                    break

    def step_values(self, st):
        for x in st.prog.inputs:
            name = x.attrs["name"]
            v = st.values[name]
            if x.attrs.get("role", "data") != "data" or v.size == 0:
                continue
            if x.dt in R.FLOATS:
                simpler = [np.where(np.isfinite(v), 1, v), np.round(v), np.ones_like(v)]
            elif x.dt in R.INTS:
                simpler = [np.ones_like(v)]
            else:
                simpler = [np.ones_like(v)]
            for s in simpler:
                if not np.array_equal(s, v, equal_nan=True):
                    values = dict(st.values)
                    values[name] = s.astype(v.dtype)
                    yield State(st.prog, st.env, values, st.params)

    def step_cosmetic(self, st):
        q = st.prog.copy()
        q.ret_type = False
        yield self.with_prog(st, q)
        if any(n.inline for n in st.prog.nodes):
            m = {}
            for n in st.prog.nodes:
                c = _clone(n, n.args, m)
                c.inline = False
                m[id(n)] = c
            yield self.with_prog(st, rebuild(st.prog, {}, [], memo=m))


def _prefix_values(prog, values, env):
    """The inputs cut down to the sizes of env (leading elements kept)."""
    out = {}
    for x in prog.inputs:
        v = values[x.attrs["name"]]
        shape = tuple(d.eval(env) for d in x.shape)
        out[x.attrs["name"]] = v[tuple(slice(0, k) for k in shape)] if v.ndim else v
    return out


def _as_array(v, dt):
    if dt == "bool":
        return v.v.astype(np.bool_)
    if dt in R.INTS:
        return v.v.astype(R.NP_DTYPE[dt])
    return v.v.astype(R.NP_DTYPE[dt])


def _used_params(prog, params):
    keep = set()
    for l in prog.layers:
        keep.update(l.params())
    return {k: v for k, v in params.items() if k in keep}


def _clone(n, args, memo):
    c = ops.Node(n.op, args, n.attrs, n.dt, n.shape)
    c.inline = n.inline
    c.name = n.name
    return c


def rebuild(prog, subst, new_inputs, memo=None):
    """prog with node id(old) replaced by subst[id(old)] everywhere;
    nodes whose operands change are copied; new_inputs join the inputs."""
    memo = dict(memo or {})
    memo.update(subst)

    def remap(a):
        if isinstance(a, ops.Node):
            return memo.get(id(a), a)
        if isinstance(a, list):
            return [remap(x) for x in a]
        return a
    nodes = []
    for n in prog.nodes:
        if id(n) in subst:
            continue
        args = [remap(a) for a in n.args]
        if id(n) not in memo and any(x is not y for x, y in zip(_flat(args), _flat(n.args))):
            memo[id(n)] = _clone(n, args, memo)
        elif id(n) in memo:
            memo[id(n)].args = args
        nodes.append(memo.get(id(n), n))
    q = Program(prog.name, prog.syms, prog.inputs + list(new_inputs), nodes,
                [memo.get(id(o), o) for o in prog.outputs], prog.layers, prog.seed, prog.ret_type)
    return q.live()


def _flat(args):
    out = []
    for a in args:
        if isinstance(a, list):
            out.extend(a)
        else:
            out.append(a)
    return out


# ---- the result ----

def _cmdline(cfg, backend, prog, names, outs, weights):
    args = ["--entry", prog.entry()]
    for n in names:
        args += ["--in", "%s=%s.npy" % (n, n)]
    if weights:
        args += ["--weights", "weights.safetensors"]
    for o in outs:
        args += ["--out", o]
    a = " ".join(args)
    if backend == "eager":
        return "$TDSL run repro.td %s" % a
    if backend in ("comp1", "comp2"):
        return "TDSL_NUM_THREADS=%d $TDSL run repro.td %s --compiled --no-cache" % (
            1 if backend == "comp1" else 2, a)
    return "$TDSL build repro.td -o art --exe --name batch && TDSL_NUM_THREADS=2 art/batch %s" % a


def describe_reference(st):
    try:
        ref = st.prog.reference(st.env, st.values, st.params)
    except R.RefError as e:
        return "the semantics require a run-time error (%s: %s)" % (e.kind, e)
    lines = []
    for k, v in enumerate(ref):
        arr = np.where(v.bad, np.nan, v.v) if v.dt in R.FLOATS else v.v
        lines.append("output %d (%s%s): %s" % (k, v.dt, list(v.shape), _array_str(np.asarray(arr))))
    return "\n".join(lines)


def _array_str(a):
    return np.array2string(a, threshold=24, edgeitems=2, precision=6, separator=", ").replace("\n", " ")


def write_result(cfg, st, fail, outdir, campaign_seed, index, last):
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    text = runner.batch_source([st.prog])[0]
    with open(os.path.join(outdir, "repro.td"), "w") as f:
        f.write(text)
    names = [x.attrs["name"] for x in st.prog.inputs]
    for n in names:
        np.save(os.path.join(outdir, n + ".npy"), st.values[n])
    weights = bool(st.params)
    if weights:
        runner.write_safetensors(os.path.join(outdir, "weights.safetensors"), st.params)
    cmds = []
    for b in runner.BACKENDS:
        outs = ["%s_out%d.npy" % (b, k) for k in range(len(st.prog.outputs))]
        cmds.append((b, _cmdline(cfg, b, st.prog, names, outs, weights)))
    inputs_txt = []
    for n in names:
        v = st.values[n]
        if v.size > 64:
            inputs_txt.append("%s: %s%s in %s.npy" % (n, v.dtype, list(v.shape), n))
        else:
            inputs_txt.append("%s = %s" % (n, _array_str(v)))
    what = "%s [%s]" % (fail["kind"], ",".join(fail["backends"]))
    body = ["# found by: scripts/difftest --seed %d --only %d" % (campaign_seed, index),
            "# failure: %s" % what,
            "# reduced: %s" % (last.detail.split("\n")[0] if last else fail["detail"].split("\n")[0]),
            "# sizes: %s" % runner._fmt_env({k: v for k, v in st.env.items()
                                             if k in st.prog.used_symbols()})]
    body += ["# input %s" % t for t in inputs_txt]
    body += ["# reference: %s" % l for l in describe_reference(st).split("\n")]
    with open(os.path.join(outdir, "repro.sh"), "w") as f:
        f.write("#!/bin/sh\n# Run from this directory; TDSL is the tdsl binary.\n")
        f.write("\n".join(body) + "\nTDSL=${TDSL:-tdsl}\ncd \"$(dirname \"$0\")\"\n")
        for b, c in cmds:
            f.write("echo '== %s'; %s; echo \"exit $?\"\n" % (b, c))
    os.chmod(os.path.join(outdir, "repro.sh"), 0o755)
    with open(os.path.join(outdir, "failure.txt"), "w") as f:
        f.write("original: %s\n%s\n" % (what, fail["detail"]))
        if last:
            f.write("reduced: %s\n" % last)
    report = text.replace("import nn\n\n", "") + "\n".join(body) + "\n" + "\n".join(
        "#   %s" % c for _, c in cmds)
    return report


def reduce_failure(cfg, prog, seed, fail, outdir, campaign_seed, index):
    """Reduces one failure of prog; writes outdir; returns a summary dict."""
    t0 = time.time()
    plan, params = runner.plan_inputs(prog, seed, cfg)
    bi = fail["bindex"] if fail["bindex"] is not None else 0
    env, values = plan[bi]
    work = os.path.join(cfg.workdir, "reduce-" + os.path.basename(outdir))
    os.makedirs(work, exist_ok=True)
    red = Reducer(cfg, fail["kind"], fail["backends"], work)
    st = State(prog, env, values, params)
    if fail["kind"] in ("internal",) or not red.interesting(st):
        small = st
        what = "%s [%s], not reproduced alone" % (fail["kind"], ",".join(fail["backends"]))
    else:
        small = red.shrink(st)
        what = "%s [%s]" % (fail["kind"], ",".join(fail["backends"]))
    text = write_result(cfg, small, fail, outdir, campaign_seed, index, red.last)
    shutil.rmtree(work, ignore_errors=True)
    return dict(outdir=outdir, what=what, text=text, tests=red.tests, secs=time.time() - t0,
                nodes_before=len(prog.nodes), nodes_after=len(small.prog.nodes))

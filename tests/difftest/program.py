"""program.py - one generated program: its source, reference and inputs.

A Program is an entry point (a `fn`, or a `model` when it uses nn layers)
over typed inputs with symbolic sizes, a list of Nodes (ops.py) in SSA
order and the nodes it returns.  This module turns it into tdsl source,
evaluates the float64 reference for one binding of the symbols, and makes
the input values (and the layers' weights) for a binding.

Rendering: a node becomes `let vK = ...` unless it is marked inline and
used exactly once, in which case its expression is written at the use.
"""
import numpy as np

import ops
import refops as R
from dims import Dim, render_shape


class Program:
    def __init__(self, name, syms, inputs, nodes, outputs, layers=(), seed=0, ret_type=False):
        self.name = name
        self.syms = list(syms)
        self.inputs = list(inputs)
        self.nodes = list(nodes)
        self.outputs = list(outputs)
        self.layers = list(layers)
        self.seed = seed
        self.ret_type = ret_type
        self.specials = True     # may get NaN/inf/-0 inputs

    def copy(self):
        """A copy sharing Nodes (the reducer rebuilds what it changes)."""
        p = Program(self.name, self.syms, self.inputs, self.nodes, self.outputs, self.layers,
                    self.seed, self.ret_type)
        p.specials = self.specials
        return p

    @property
    def is_model(self):
        return bool(self.layers)

    def entry(self):
        return "%s.forward" % self.model_name() if self.is_model else self.name

    def model_name(self):
        return self.name[0].upper() + self.name[1:]

    # ---- structure ----
    def uses(self):
        """{id(node): number of uses} over nodes and outputs."""
        u = {}
        for n in self.nodes:
            for x in n.operands():
                u[id(x)] = u.get(id(x), 0) + 1
        for o in self.outputs:
            u[id(o)] = u.get(id(o), 0) + 1
        return u

    def live(self):
        """Drops nodes and inputs that no output or print depends on."""
        need = set()
        stack = list(self.outputs) + [n for n in self.nodes if n.op == "print"]
        while stack:
            n = stack.pop()
            if id(n) in need:
                continue
            need.add(id(n))
            stack.extend(n.operands())
        # a split is needed when one of its parts is
        for n in self.nodes:
            if n.op == "part" and id(n) in need:
                need.add(id(n.args[0]))
        p = self.copy()
        p.nodes = [n for n in self.nodes if id(n) in need]
        p.inputs = [n for n in self.inputs if id(n) in need or n.attrs.get("binder")]
        # every symbol the program names must be bound by an input axis
        bound = {d.symbols()[0] for x in p.inputs for d in x.shape if d.is_sym()}
        for s in sorted(p.used_symbols() - bound):
            b = ops.mk_input("b%s" % s, "f32", (Dim.of(s),), binder=True)
            p.inputs.append(b)
        used_layers = {id(n.attrs["layer"]) for n in p.nodes if n.op == "layer"}
        p.layers = [l for l in self.layers if id(l) in used_layers]
        return p

    def used_symbols(self):
        found = set()

        def scan(v):
            if isinstance(v, Dim):
                found.update(v.symbols())
            elif isinstance(v, ops.Lit):
                scan(v.value)
            elif isinstance(v, (list, tuple)):
                for x in v:
                    scan(x)
            elif isinstance(v, dict):
                for x in v.values():
                    scan(x)
        for n in self.inputs + self.nodes:
            scan(n.shape)
            scan([a for a in n.args if not isinstance(a, ops.Node)])
            scan({k: v for k, v in n.attrs.items() if k != "layer"})
        return found

    # ---- source ----
    def render(self):
        names = {}
        for x in self.inputs:
            names[id(x)] = x.attrs["name"]
        uses = self.uses()
        outs = {id(o) for o in self.outputs}
        inline = set()
        for n in self.nodes:
            if (n.inline and uses.get(id(n), 0) == 1 and id(n) not in outs and
                    n.op not in ("split", "part", "print")):
                inline.add(id(n))
        k = 0
        for n in self.nodes:
            if n.op in ("split", "print") or id(n) in inline:
                continue
            names[id(n)] = "v%d" % k
            k += 1

        def expr(n):
            return ops.render(n, operand)

        def operand(x, ctx):
            if x is None:
                return "?"
            if isinstance(x, ops.Lit):
                return x.render()
            if id(x) in names:
                return names[id(x)]
            s = expr(x)
            return s if ctx == "arg" else "(%s)" % s

        lines = []
        for n in self.nodes:
            if id(n) in inline or n.op == "part":
                continue
            if n.op == "split":
                parts = [m for m in self.nodes if m.op == "part" and m.args[0] is n]
                byk = {m.attrs["k"]: names[id(m)] for m in parts}
                tgt = ", ".join(byk.get(i, "_u%d_%d" % (k, i)) for i in range(n.attrs["n"]))
                lines.append("let (%s) = %s" % (tgt, expr(n)))
            elif n.op == "print":
                lines.append(expr(n))
            else:
                lines.append("let %s = %s" % (names[id(n)], expr(n)))
        res = [operand(o, "arg") for o in self.outputs]
        lines.append(res[0] if len(res) == 1 else "(%s)" % ", ".join(res))
        sig = ", ".join("%s: %s%s" % (x.attrs["name"], x.dt, render_shape(x.shape)) for x in self.inputs)
        ret = ""
        if self.ret_type:
            ts = ["%s%s" % (o.dt, render_shape(o.shape)) for o in self.outputs]
            ret = " -> " + (ts[0] if len(ts) == 1 else "(%s)" % ", ".join(ts))
        if not self.is_model:
            body = "".join("  %s\n" % l for l in lines)
            return "fn %s(%s)%s {\n%s}\n" % (self.name, sig, ret, body)
        body = "".join("    %s\n" % l for l in lines)
        members = "".join("  %s\n" % l.render() for l in self.layers)
        return "model %s {\n%s  fn forward(%s)%s {\n%s  }\n}\n" % (self.model_name(), members, sig, ret, body)

    # ---- reference ----
    def reference(self, env, values, params):
        """The outputs' reference Vals for a binding; raises RefError."""
        vals = self.reference_all(env, values, params)
        return [vals[id(o)] for o in self.outputs]

    def reference_all(self, env, values, params, partial=None):
        """Every node's reference Val, {id(node): Val}; raises RefError
        (with what was computed before the error left in `partial`)."""
        vals = {} if partial is None else partial
        for x in self.inputs:
            shape = tuple(d.eval(env) for d in x.shape)
            vals[id(x)] = R.Val(values[x.attrs["name"]].reshape(shape).astype(
                np.float64 if x.dt in R.FLOATS else (np.bool_ if x.dt == "bool" else np.int64)), x.dt)
        P = {k: R.Val(v.astype(np.float64), "f32") for k, v in params.items()}
        for n in self.nodes:
            shape = tuple(d.eval(env) for d in n.shape)
            if n.op not in ("print", "split"):
                R.check_shape(shape)
            v = ops.evaluate(n, lambda x: vals[id(x)], env, P)
            if n.op not in ("print", "split", "part") and v is not None:
                if tuple(v.shape) != shape or v.dt != n.dt:
                    raise AssertionError("reference of %s: %s %s, expected %s %s" % (
                        n.op, v.dt, v.shape, n.dt, shape))
            vals[id(n)] = v
        return vals

    # ---- inputs ----
    def bindings(self, rng, big=1 << 18):
        """Sizes to run at: all 1, each symbol 0 in turn, random small
        ones, and one large binding (for the threaded paths) whose largest
        tensor has at most `big` elements (0: none)."""
        if not self.syms:
            return [{}]
        out = [{s: 1 for s in self.syms}]
        for s in self.syms:
            b = {t: rng.choice([2, 3]) for t in self.syms}
            b[s] = 0
            out.append(b)
        out.append({s: rng.choice([2, 3, 4, 5, 7]) for s in self.syms})
        if len(self.syms) > 1:
            v = rng.choice([2, 3])
            out.append({s: v for s in self.syms})
        if big:
            b = self.big_binding(big)
            if b:
                out.append(b)
        return out

    def big_binding(self, limit):
        for v in (1000, 512, 256, 128, 64, 33, 17):
            env = {s: v for s in self.syms}
            if self.cost(env) <= limit:
                return env
        return None

    def cost(self, env):
        """The largest tensor (elements, its zero dims left out: tdsl's size
        limit counts them so) or matmul (multiply-adds / 16)."""
        worst = 0
        for n in self.inputs + self.nodes:
            try:
                sz = int(np.prod([max(d.eval(env), 1) for d in n.shape]))
            except OverflowError:
                return 1 << 60
            if n.op == "matmul":
                a = n.args[0]
                sz = sz * max(a.shape[-1].eval(env), 1) // 16
            if n.op == "layer":
                sz *= 64
            worst = max(worst, sz)
        return worst

    def make_inputs(self, env, rng, special=False):
        """Input arrays (numpy, in the input's dtype) for one binding."""
        out = {}
        for x in self.inputs:
            shape = tuple(d.eval(env) for d in x.shape)
            out[x.attrs["name"]] = _input_values(x, shape, env, rng, special)
        return out

    def make_params(self, rng):
        P = {}
        for l in self.layers:
            for name, shape in l.params().items():
                P[name] = (rng.integers(-8, 9, size=shape) / 16.0).astype(np.float32)
        return P


def _input_values(x, shape, env, rng, special):
    with np.errstate(over="ignore"):      # 3e9 in f16 is inf, as it should be
        return _values(x, shape, env, rng, special)


def _values(x, shape, env, rng, special):
    at = x.attrs
    role = at.get("role", "data")
    dt = x.dt
    if role in ("index", "labels", "onehot"):
        bound = Dim.of(at["bound"]).eval(env) if not isinstance(at["bound"], int) else at["bound"]
        if role == "onehot":
            v = rng.integers(-1, bound + 1, size=shape)
        elif role == "labels":
            v = rng.integers(0, max(bound, 1), size=shape)
        else:
            lo = -bound if at.get("neg") else 0
            v = rng.integers(lo, max(bound, lo + 1), size=shape)
            if at.get("oob") and v.size:
                v.flat[rng.integers(v.size)] = bound
        return v.astype(R.NP_DTYPE[dt])
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt in R.INTS:
        v = rng.integers(-5, 6, size=shape).astype(R.NP_DTYPE[dt])
        if special and v.size:
            # the extremes, where arithmetic wraps around
            info = np.iinfo(R.NP_DTYPE[dt])
            pos = rng.integers(v.size, size=max(1, v.size // 8))
            v.flat[pos] = rng.choice([info.min, info.max, info.max - 1, info.min + 1], size=pos.size)
        return v
    # floats: multiples of 1/16 in [-4, 4] (exact in every float dtype)
    v = rng.integers(-64, 65, size=shape) / 16.0
    if special and v.size:
        k = max(1, v.size // 8)
        pos = rng.integers(v.size, size=k)
        v.flat[pos] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 1e4, -1e4, 3e9, -1e20], size=k)
    return v.astype(R.NP_DTYPE[dt])

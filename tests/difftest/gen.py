"""gen.py - random, well-typed tdsl programs (NNSmith-style).

A program grows one op at a time over a pool of typed values: each step
picks an op family by weight, takes operands from the pool (preferring
values nobody uses yet, so the graph stays connected) and, when the op
needs an operand the pool does not have, makes a fresh input of exactly
the type it needs.  Every value nothing uses is an output.  Types are
computed by ops.mk_*, which raise ops.Invalid for what tdsl would reject;
a step that hits Invalid is retried with other choices.

The families are weighted towards the shapes that break compilers:
symbolic sizes that are 0 or 1 at run time, shapes with equal dims
([3, 3], [N, N]), size-1 broadcasting and rank 0, reductions with and
without keepdims, indices and slices whose bounds are symbolic, and
zero-size literal dims.

`avoid` names generator features to leave out (tests/difftest/known-bugs
lists those that trigger bugs not fixed yet, so that the make check
sample stays green until they are):
  reduce-equal-dims   reductions of shapes with equal dims
  index-runtime       integer indices on symbolic axes (out of range at 0)
  slice-past-end      slice bounds given by a symbol (may pass the data)
  negative-size       slices whose count may be negative at run time
  empty-reduce        max/min/argmax/argmin/logsumexp/softmax over an axis
                      that may be empty at run time
  take-empty          take() whose indices may be out of range while its
                      result is empty (an axis of size 0, or a bad index)
  pow-sqrt            pow(x, 0.5) (and x ** 0.5)
  many-args           more than eight inputs and outputs together
  inf-inputs          NaN, inf and -0 among the input values
  f64                 f64 values (inputs, casts, eye/full dtypes)
  broadcast-equal-dims  elementwise ops that broadcast to a shape with two
                      equal symbolic dims ([N, N, N, N * N * N])
  size-degree-5       shapes whose element count has a term of degree 5 or
                      more in the symbols (N * N * N * N * N)
  reduce-rank-0       reductions of rank-0 tensors
"""
import random

import ops
from dims import Dim, numel
from ops import Invalid, Lit
from program import Program

FEATURES = ("reduce-equal-dims", "index-runtime", "slice-past-end", "negative-size",
            "empty-reduce", "take-empty", "pow-sqrt", "many-args", "inf-inputs", "f64", "broadcast-equal-dims",
            "size-degree-5", "reduce-rank-0")

FRESH_DTYPES = [("f32", 70), ("f16", 6), ("f64", 6), ("i32", 4), ("i64", 7), ("bool", 4)]
UNARY_W = [("exp", 3), ("log", 3), ("sqrt", 2), ("rsqrt", 1), ("abs", 2), ("neg", 2),
           ("sin", 2), ("cos", 1), ("tanh", 3), ("sigmoid", 2), ("relu", 3), ("gelu", 2),
           ("silu", 2), ("erf", 1), ("floor", 1), ("ceil", 1), ("round", 1)]
BINARY_W = [("add", 5), ("sub", 4), ("mul", 5), ("div", 3), ("mod", 1), ("pow", 1),
            ("minimum", 2), ("maximum", 2)]
REDUCE_W = [("sum", 4), ("mean", 2), ("max", 3), ("min", 1), ("prod", 1), ("logsumexp", 2),
            ("argmax", 2), ("argmin", 1)]
ORDER_REDUCE = ("max", "min", "argmax", "argmin", "logsumexp")


def wchoice(rng, items):
    total = sum(w for _, w in items)
    r = rng.random() * total
    for v, w in items:
        r -= w
        if r < 0:
            return v
    return items[-1][0]


def expressible(d):
    """Can an input axis have this size (a literal or a bare symbol)?"""
    return d.is_const() or d.is_sym()


def has_equal_dims(shape):
    return len(set(shape)) < len(shape)


class Gen:
    def __init__(self, seed, avoid=(), max_ops=10):
        self.rng = random.Random(seed)
        self.seed = seed
        self.avoid = set(avoid)
        self.max_ops = max_ops

    # ---- the program ----
    def program(self, name):
        rng = self.rng
        self.name = name
        self.syms = ["N", "M"][:wchoice(rng, [(0, 1), (1, 5), (2, 5)])]
        self.inputs, self.nodes, self.layers = [], [], []
        self.uses = {}
        self.allow_layers = rng.random() < 0.15
        for _ in range(rng.choice([1, 1, 2])):
            try:
                self.fresh(self.fresh_dtype(), self.fresh_shape())
            except Invalid:
                pass
        n_ops = rng.randint(2, self.max_ops)
        done = 0
        for _ in range(n_ops * 6):
            if done >= n_ops:
                break
            fam = wchoice(rng, self.families())
            saved = (len(self.inputs), len(self.nodes), len(self.layers), dict(self.uses))
            try:
                if getattr(self, "g_" + fam)():
                    done += 1
            except Invalid:
                # undo what the failed step added
                del self.inputs[saved[0]:], self.nodes[saved[1]:], self.layers[saved[2]:]
                self.uses = saved[3]
        outs = [n for n in self.pool() if self.uses.get(id(n), 0) == 0]
        if not outs:
            outs = [self.pool()[-1]]
        extra = [n for n in self.pool() if n not in outs]
        if extra and rng.random() < 0.25:
            outs.append(rng.choice(extra))
        outs = [self.to_saveable(o) for o in outs]
        # inputs nobody uses are dropped
        p = Program(name, self.syms, self.inputs, self.nodes, outs, self.layers, self.seed,
                    ret_type=rng.random() < 0.5)
        p = p.live()
        while "many-args" in self.avoid and len(p.inputs) + len(p.outputs) > 8 and len(p.outputs) > 1:
            p.outputs = p.outputs[:-1]
            p = p.live()
        p.specials = "inf-inputs" not in self.avoid
        return p

    def families(self):
        f = [("unary", 12), ("binary", 14), ("where", 5), ("clamp", 2), ("logic", 1),
             ("reduce", 15), ("nn", 5), ("matmul", 7), ("reshape", 4), ("flatten", 1),
             ("permute", 4), ("concat", 3), ("stack", 2), ("split", 2), ("squeeze", 3),
             ("broadcast_to", 2), ("index", 11), ("take", 3), ("one_hot", 1), ("cumsum", 2), ("cast", 5),
             ("create", 3), ("print", 1), ("movechain", 4)]
        if self.allow_layers:
            f.append(("layer", 6))
        return f

    # ---- pool and fresh inputs ----
    def pool(self):
        return self.inputs + [n for n in self.nodes if n.op not in ("split", "print")]

    def add(self, n, inline_p=0.35):
        if "broadcast-equal-dims" in self.avoid and n.op in ("binary", "compare", "where", "logic", "clamp") \
                and any(x.shape != n.shape for x in n.operands()):
            sym = [d for d in n.shape if not d.is_const()]
            if len(set(sym)) < len(sym):
                raise Invalid("avoid")
        if "size-degree-5" in self.avoid and _degree(numel(n.shape)) > 4:
            raise Invalid("avoid")
        for x in n.operands():
            self.uses[id(x)] = self.uses.get(id(x), 0) + 1
        n.inline = self.rng.random() < inline_p
        self.nodes.append(n)
        return n

    def pick(self, pred=lambda n: True, fresh=None):
        """A pool value satisfying pred (unused ones preferred), or a fresh
        input from fresh() when there is none (or, rarely, anyway)."""
        if getattr(self, "prefer", None) is not None and pred(self.prefer):
            p, self.prefer = self.prefer, None
            return p
        cands = [n for n in self.pool() if pred(n)]
        if cands and (fresh is None or self.rng.random() < 0.85):
            w = [(n, 4 if self.uses.get(id(n), 0) == 0 else 1) for n in cands]
            return wchoice(self.rng, w)
        if fresh is None:
            raise Invalid("no operand")
        return fresh()

    def fresh_dtype(self, floats=False):
        if floats:
            dt = wchoice(self.rng, [("f32", 85), ("f16", 7), ("f64", 8)])
        else:
            dt = wchoice(self.rng, FRESH_DTYPES)
        return "f32" if dt == "f64" and "f64" in self.avoid else dt

    def fresh_dim(self):
        rng = self.rng
        if self.syms and rng.random() < 0.45:
            return Dim.of(rng.choice(self.syms))
        if rng.random() < 0.03:
            return Dim.of(0)
        return Dim.of(rng.choice([1, 1, 2, 3, 3, 4, 5, 6, 8]))

    def fresh_shape(self, rank=None):
        rng = self.rng
        if rank is None:
            rank = wchoice(rng, [(0, 1), (1, 4), (2, 6), (3, 3), (4, 1)])
        shape = [self.fresh_dim() for _ in range(rank)]
        if rank >= 2 and rng.random() < 0.3:   # equal dims: [3, 3], [N, N]
            i, j = rng.sample(range(rank), 2)
            shape[j] = shape[i]
        return tuple(shape)

    def fresh(self, dt, shape, role="data", **extra):
        if dt == "bf16":    # .npy has no bfloat16: bf16 values come from casts
            dt = "f32"
        shape = tuple(Dim.of(d) for d in shape)
        if "size-degree-5" in self.avoid and _degree(numel(shape)) > 4:
            raise Invalid("avoid")
        assert all(expressible(d) for d in shape), shape
        x = ops.mk_input("x%d" % len(self.inputs), dt, shape, role, **extra)
        self.inputs.append(x)
        return x

    def like_shape(self, shape):
        """A shape that broadcasts against `shape`: the same, some dims 1,
        a suffix, or rank 0; non-expressible dims become 1."""
        rng = self.rng
        r = rng.random()
        s = [d if expressible(d) else Dim.of(1) for d in shape]
        if r < 0.45:
            return tuple(s)
        if r < 0.7:
            return tuple(Dim.of(1) if rng.random() < 0.5 else d for d in s)
        if r < 0.9 and s:
            return tuple(s[rng.randint(0, len(s)):])
        return ()

    def partner(self, x, dt=None, allow_lit=True):
        """A second elementwise operand for x."""
        rng = self.rng
        r = rng.random()
        if allow_lit and r < 0.25:
            return self.literal(x.dt)
        if r < 0.3:
            return x
        if r < 0.36:
            return self.creation_like(x)

        def ok(n):
            try:
                ops.broadcast(x.shape, n.shape)
                return n is not x
            except Invalid:
                return False
        dt = dt or (x.dt if rng.random() < 0.8 else self.fresh_dtype())
        return self.pick(ok, lambda: self.fresh(dt, self.like_shape(x.shape)))

    def literal(self, dt):
        rng = self.rng
        r = rng.random()
        if self.syms and r < 0.08:
            s = Dim.of(rng.choice(self.syms))
            return Lit("size", s if rng.random() < 0.7 else s + rng.choice([1, -1, 2]))
        if dt in ops.FLOATS and r < 0.75:
            return Lit("float", rng.choice([0.5, 2.0, -1.5, 3.0, 0.25, -0.1, 1e-3, 10.0, 1.0]))
        return Lit("int", rng.choice([1, 2, 3, -1, -2, 0, 5]))

    def creation_like(self, x):
        """zeros_like / ones_like / full / arange / eye shaped to fit x."""
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            return self.add(ops.mk_like(rng.choice(["zeros_like", "ones_like"]), x), 0.8)
        if r < 0.55 and x.rank >= 1:
            return self.add(ops.mk_arange(x.shape[-1]), 0.8)
        if r < 0.75 and x.rank >= 2 and x.shape[-1] == x.shape[-2]:
            return self.add(ops.mk_eye(x.shape[-1], rng.choice([None, None, "f64" if "f64" not in self.avoid
                                                                else "f16", "i32"])), 0.8)
        v = self.literal(x.dt)
        if v.kind == "size":
            v = Lit("int", 2)
        dt = rng.choice([None, None, "f32", "i64", "f16"])
        return self.add(ops.mk_full(x.shape, v, dt), 0.8)

    def to_saveable(self, o):
        """bf16 cannot be saved as .npy: such outputs are cast to f32."""
        if o.dt == "bf16":
            return self.add(ops.mk_cast(o, "f32"), 0)
        return o

    # ---- op families (each returns True when it added a node) ----
    def g_unary(self):
        x = self.pick(lambda n: n.dt != "bool")
        fn = wchoice(self.rng, UNARY_W)
        if fn in ("log", "sqrt", "rsqrt") and self.rng.random() < 0.6 and x.dt in ops.FLOATS:
            # keep most elements in the domain
            x = self.add(ops.mk_binary("add", self.add(ops.mk_unary("abs", x), 0.9),
                                       Lit("float", 0.5)), 0.9)
        style = "minus" if fn == "neg" and self.rng.random() < 0.5 else "call"
        self.add(ops.mk_unary(fn, x, style))
        return True

    def g_binary(self):
        x = self.pick(lambda n: n.dt != "bool")
        fn = wchoice(self.rng, BINARY_W)
        y = self.partner(x)
        if fn == "pow":
            if self.rng.random() < 0.7:
                y = Lit("int", self.rng.choice([2, 3, -1])) if x.dt not in ops.FLOATS else \
                    Lit("float", self.rng.choice([2.0, 3.0, -1.0] + ([] if "pow-sqrt" in self.avoid else [0.5])))
            else:
                x = self.add(ops.mk_binary("add", self.add(ops.mk_unary("abs", x), 0.9),
                                           Lit("float", 0.5)), 0.9)
        if fn == "mod" and isinstance(y, Lit) and y.number({s: 1 for s in self.syms}) == 0:
            y = Lit("int", 3)
        if self.rng.random() < 0.15:
            x, y = y, x
        style = "call" if fn == "pow" and self.rng.random() < 0.5 else "op"
        self.add(ops.mk_binary(fn, x, y, style))
        return True

    def g_where(self):
        rng = self.rng
        x = self.pick(lambda n: n.dt != "bool")
        if rng.random() < 0.3:
            c = self.pick(lambda n: n.dt == "bool", lambda: self.fresh("bool", self.like_shape(x.shape)))
        else:
            c = self.add(ops.mk_compare(wchoice(rng, [(k, 1) for k in ops.CMP_OPS]), x,
                                        self.partner(x)), 0.7)
        a = x if rng.random() < 0.6 else self.partner(x)
        b = self.partner(x)
        self.add(ops.mk_where(c, a, b))
        return True

    def g_clamp(self):
        x = self.pick(lambda n: n.dt != "bool")
        lo, hi = sorted(self.rng.sample([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5], 2))
        if x.dt in ops.INTS and self.rng.random() < 0.5:
            lo, hi = int(lo), int(hi) + 1
        mk = lambda v: Lit("float", v) if isinstance(v, float) else Lit("int", v)
        r = self.rng.random()
        self.add(ops.mk_clamp(x, mk(lo) if r < 0.8 else None, mk(hi) if r > 0.1 else None))
        return True

    def g_logic(self):
        a = self.pick(lambda n: n.dt == "bool")
        rng = self.rng
        if rng.random() < 0.3:
            self.add(ops.mk_logic("not", a))
        else:
            b = self.pick(lambda n: n.dt == "bool" and n is not a and _bcast_ok(a, n),
                          lambda: self.fresh("bool", self.like_shape(a.shape)))
            self.add(ops.mk_logic(rng.choice(["and", "or"]), a, b))
        return True

    def axis_ok_for_order_reduce(self, x, axes):
        """Under avoid=empty-reduce: only axes whose size is a nonzero literal."""
        if "empty-reduce" not in self.avoid:
            return True
        ax = ops.norm_axes(axes, x.rank)
        return all(x.shape[a].is_const() and x.shape[a].const() > 0 for a in ax) and \
            all(d.is_const() and d.const() > 0 for d in x.shape) if axes is None else \
            all(x.shape[a].is_const() and x.shape[a].const() > 0 for a in ax)

    def reduce_axes(self, x, one=False):
        rng = self.rng
        r = rng.random()
        if x.rank == 0 or (r < 0.2 and not one):
            return None
        if x.rank >= 2 and r > 0.8 and not one:
            a, b = rng.sample(range(x.rank), 2)
            return [a - x.rank if rng.random() < 0.3 else a, b]
        a = rng.randrange(x.rank)
        return a - x.rank if rng.random() < 0.3 else a

    def g_reduce(self):
        rng = self.rng
        fn = wchoice(rng, REDUCE_W)
        x = self.pick(lambda n: n.dt != "bool" or fn not in ("logsumexp",))
        if rng.random() < 0.2 and "reduce-equal-dims" not in self.avoid:
            # a square operand: the equal-dims case
            d = self.fresh_dim()
            x = self.fresh(self.fresh_dtype(floats=True), (d, d) + (() if rng.random() < 0.6 else (self.fresh_dim(),)))
        if x.rank == 0 and "reduce-rank-0" in self.avoid:
            raise Invalid("avoid")
        axes = self.reduce_axes(x, one=fn in ("argmax", "argmin") and rng.random() < 0.8)
        if fn == "prod" and axes is not None and not all(
                x.shape[a].is_const() for a in ops.norm_axes(axes, x.rank)):
            fn = "sum"
        if fn == "prod" and axes is None:
            fn = "sum"
        if fn in ORDER_REDUCE and not self.axis_ok_for_order_reduce(x, axes):
            fn = "sum"
        keep = rng.random() < 0.4
        if "reduce-equal-dims" in self.avoid and has_equal_dims(x.shape) and \
                not (fn in ("argmax", "argmin") and axes is None):
            # also with keepdims: a squeeze or reshape after it goes wrong alike
            raise Invalid("avoid")
        self.add(ops.mk_reduce(fn, x, axes, keep))
        return True

    def g_nn(self):
        rng = self.rng
        x = self.pick(lambda n: n.dt in ops.FLOATS and n.rank >= 1)
        fn = wchoice(rng, [("softmax", 4), ("log_softmax", 2), ("layer_norm", 2), ("rms_norm", 1),
                           ("gelu_tanh", 1), ("leaky_relu", 1), ("cross_entropy", 1)])
        if fn in ("softmax", "log_softmax"):
            axis = rng.randrange(-x.rank, x.rank) if rng.random() < 0.7 else None
            if not self.axis_ok_for_order_reduce(x, -1 if axis is None else axis):
                raise Invalid("avoid")
            attrs = {} if axis is None else {"axis": axis}
            self.add(ops.mk_nn(fn, x, **attrs))
        elif fn in ("layer_norm", "rms_norm"):
            d = x.shape[-1]
            if not expressible(d):
                raise Invalid("norm size")
            w = self.fresh(rng.choice(["f32", "f32", x.dt]), (d,))
            rest = [w] if fn == "rms_norm" else [w, self.fresh("f32", (d,))]
            attrs = {"eps": rng.choice([1e-5, 0.1])} if rng.random() < 0.3 else {}
            self.add(ops.mk_nn(fn, x, *rest, **attrs))
        elif fn == "cross_entropy":
            if x.dt != "f32" or x.rank != 2 or not expressible(x.shape[0]) or not expressible(x.shape[1]):
                raise Invalid("cross_entropy")
            if "reduce-equal-dims" in self.avoid and x.shape[0] == x.shape[1]:
                raise Invalid("avoid")
            if not self.axis_ok_for_order_reduce(x, 1):
                raise Invalid("avoid")
            lab = self.fresh(rng.choice(["i64", "i32"]), (x.shape[0],), "labels", bound=x.shape[1])
            self.add(ops.mk_nn(fn, x, lab))
        elif fn == "leaky_relu":
            self.add(ops.mk_nn(fn, x, **({"slope": 0.1} if rng.random() < 0.5 else {})))
        else:
            self.add(ops.mk_nn(fn, x))
        return True

    def g_matmul(self):
        rng = self.rng
        a = self.pick(lambda n: n.rank >= 1 and (n.dt in ops.FLOATS or rng.random() < 0.2))
        K = a.shape[-1]
        if rng.random() < 0.2 and a.rank >= 2:
            # a @ a.T: always fits
            b = self.add(ops.mk_permute(a, list(range(a.rank - 2)) + [a.rank - 1, a.rank - 2], "T"), 0.8)
            self.add(ops.mk_matmul(a, b))
            return True
        if not expressible(K):
            raise Invalid("inner size")
        P = self.fresh_dim() if rng.random() < 0.8 else K
        r = rng.random()
        if r < 0.15:
            bshape = (K,)
        elif r < 0.65 or a.rank <= 2:
            bshape = (K, P)
            if r > 0.55 and self.syms:
                bshape = (self.fresh_dim(), K, P)
        else:
            batch = [d if expressible(d) and rng.random() < 0.8 else Dim.of(1) for d in a.shape[:-2]]
            bshape = tuple(batch) + (K, P)
        dt = a.dt if rng.random() < 0.85 else self.fresh_dtype(floats=True)

        def fits(n):
            try:
                ops.mk_matmul(a, n)
                return n.rank >= 2
            except Invalid:
                return False
        b = self.pick(fits, lambda: self.fresh(dt, bshape))
        if rng.random() < 0.15:
            a, b = (b, a) if b.rank >= 2 and a.rank == 1 else (a, b)
        self.add(ops.mk_matmul(a, b))
        return True

    def g_reshape(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank >= 1)
        s = list(x.shape)
        r = rng.random()
        if r < 0.2:
            items = [-1]
        elif r < 0.4 and len(s) >= 2:
            i = rng.randrange(len(s) - 1)
            items = s[:i] + [s[i] * s[i + 1]] + s[i + 2:]
        elif r < 0.6:
            # split a literal dim into factors, or add 1s
            i = rng.randrange(len(s))
            d = s[i]
            if d.is_const() and d.const() in (4, 6, 8):
                f = 2
                items = s[:i] + [Dim.of(f), Dim.of(d.const() // f)] + s[i + 1:]
            else:
                items = s[:i] + [Dim.of(1), d] + s[i + 1:]
        elif r < 0.8:
            items = list(reversed(s))
        else:
            items = list(s)
            rng.shuffle(items)
        if rng.random() < 0.3 and len(items) >= 1 and items != [-1]:
            i = rng.randrange(len(items))
            if not (items[i] == Dim.of(0)):
                items[i] = -1
        if len(items) > 8:
            raise Invalid("rank")
        n = ops.mk_reshape(x, items)
        # some sizes written as x.shape[k]
        refs = {}
        for i, d in enumerate(items):
            if not isinstance(d, int) and not d.is_const() and rng.random() < 0.4:
                ks = [k for k, e in enumerate(x.shape) if e == d]
                if ks:
                    refs[i] = rng.choice(ks)
        n.attrs["refs"] = refs
        self.add(n)
        return True

    def g_movechain(self):
        """Two to four movement ops in a row, written as one expression:
        views of views are where index arithmetic goes wrong."""
        rng = self.rng
        steps = [self.g_permute, self.g_index, self.g_reshape, self.g_squeeze, self.g_broadcast_to,
                 self.g_concat]
        k = rng.randint(2, 4)
        self.prefer = None
        for i in range(k):
            try:
                rng.choice(steps)()
            except Invalid:
                if i == 0:
                    raise
                break
            last = self.nodes[-1]
            last.inline = i < k - 1
            self.prefer = last
        self.prefer = None
        return True

    def g_flatten(self):
        self.add(ops.mk_flatten(self.pick(lambda n: n.rank >= 2)))
        return True

    def g_permute(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank >= 2)
        r = rng.random()
        rank = x.rank
        if r < 0.25:
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            style = "T"
        elif r < 0.45:
            perm = list(reversed(range(rank)))
            style = "reverse"
        elif r < 0.7:
            i, j = sorted(rng.sample(range(rank), 2))
            perm = list(range(rank))
            perm[i], perm[j] = j, i
            style = "swap"
        else:
            perm = list(range(rank))
            rng.shuffle(perm)
            style = "permute"
        if perm == list(range(rank)):
            raise Invalid("identity")
        n = ops.mk_permute(x, perm, style)
        n.attrs["neg"] = rng.random() < 0.3
        self.add(n)
        return True

    def g_concat(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank >= 1)
        axis = rng.randrange(-x.rank, x.rank)
        ax = axis % x.rank
        xs = [x]
        for _ in range(rng.choice([1, 1, 2])):
            def fits(n, ax=ax):
                return n.rank == x.rank and all(k == ax or n.shape[k] == x.shape[k] for k in range(x.rank))
            r = rng.random()
            if r < 0.25:
                xs.append(x)
            elif all(expressible(d) for k, d in enumerate(x.shape) if k != ax):
                shape = list(x.shape)
                shape[ax] = self.fresh_dim()
                dt = x.dt if rng.random() < 0.8 else self.fresh_dtype()
                xs.append(self.pick(fits, lambda: self.fresh(dt, shape)))
            else:
                xs.append(self.pick(fits) if r < 0.6 else x)
        self.add(ops.mk_concat(xs, axis))
        return True

    def g_stack(self):
        rng = self.rng
        x = self.pick()
        xs = [x]
        for _ in range(rng.choice([1, 2])):
            r = rng.random()
            if r < 0.3 or not all(expressible(d) for d in x.shape):
                if x.dt == "bool":
                    xs.append(x)
                else:
                    xs.append(self.add(ops.mk_binary("mul", x, self.literal(x.dt)), 0.9))
            else:
                xs.append(self.pick(lambda n: n.shape == x.shape and n is not x,
                                    lambda: self.fresh(x.dt, x.shape)))
        axis = rng.randrange(-x.rank - 1, x.rank + 1)
        self.add(ops.mk_stack(xs, axis))
        return True

    def g_split(self):
        rng = self.rng

        def splittable(n):
            return any(d.div_exact(2) is not None and d != Dim.of(0) for d in n.shape)
        x = self.pick(splittable)
        axes = [k for k, d in enumerate(x.shape) if d.div_exact(2) is not None and d != Dim.of(0)]
        ax = rng.choice(axes)
        d = x.shape[ax]
        ns = [k for k in (2, 3, 4) if d.div_exact(k) is not None]
        n = rng.choice(ns)
        s, parts = ops.mk_split(x, n, ax - x.rank if rng.random() < 0.3 else ax)
        self.add(s, 0)
        keep = rng.sample(parts, rng.randint(1, n))
        for p in parts:
            if p in keep:
                self.add(p, 0)
        return True

    def g_squeeze(self):
        rng = self.rng
        if rng.random() < 0.5:
            x = self.pick(lambda n: Dim.of(1) in n.shape)
            ones = [k for k, d in enumerate(x.shape) if d == Dim.of(1)]
            axis = None if rng.random() < 0.3 else rng.choice(ones)
            if axis is not None and rng.random() < 0.3:
                axis -= x.rank
            self.add(ops.mk_squeeze(x, axis))
        else:
            x = self.pick(lambda n: n.rank < 8)
            self.add(ops.mk_unsqueeze(x, rng.randrange(-x.rank - 1, x.rank + 1)))
        return True

    def g_broadcast_to(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank < 6)
        shape = [self.fresh_dim() if d == Dim.of(1) and rng.random() < 0.7 else d for d in x.shape]
        lead = [self.fresh_dim() for _ in range(rng.choice([0, 1, 1, 2]))]
        self.add(ops.mk_broadcast_to(x, lead + shape))
        return True

    def index_item(self, d):
        """One index item for an axis of size d."""
        rng = self.rng
        avoid = self.avoid
        r = rng.random()
        if d.is_const():
            L = d.const()
            if r < 0.35 and L > 0:
                k = rng.randrange(L)
                return ("idx", k - L if rng.random() < 0.4 else k)
            if r < 0.5 and self.syms and "slice-past-end" not in avoid:
                # a symbolic bound on a literal axis: w[0:N]
                s = Dim.of(rng.choice(self.syms))
                return ("slice", rng.choice([None, 0, 1]), s, None) if rng.random() < 0.7 else \
                    ("slice", s, None, None)
            lo = rng.choice([None, None, 0, 1, 2, -1, -2, L + 1, -L - 2])
            hi = rng.choice([None, None, 1, 2, L, -1, L + 2, -L - 1])
            st = rng.choice([None, None, 1, 2, 3, -1, -2])
            return ("slice", lo, hi, st)
        # a symbolic axis
        if r < 0.3:
            if "index-runtime" in avoid:
                return ("full",)
            return ("idx", rng.choice([0, 1, -1, -2, d - 1] if d.is_sym() else [0, 1, -1, -2]))
        if "negative-size" in avoid:
            return ("full",)
        lo = rng.choice([None, 0, 1, 2, -1, -2])
        hi = rng.choice([None, None, -1, -2, 1, 2, 3, d - 1])
        if self.syms and rng.random() < 0.2 and "slice-past-end" not in avoid:
            other = Dim.of(rng.choice(self.syms))
            hi = other if rng.random() < 0.7 else other - 1
        st = None
        if rng.random() < 0.2:
            st = rng.choice([2, 3])
        return ("slice", lo, hi, st)

    def g_index(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank >= 1)
        items = []
        for d in x.shape:
            items.append(self.index_item(d) if rng.random() < 0.6 else ("full",))
        if all(it[0] == "full" for it in items):
            k = rng.randrange(x.rank)
            items[k] = self.index_item(x.shape[k])
        if all(it[0] == "full" for it in items):
            raise Invalid("no-op")
        ell = any(it[0] == "full" for it in items) and rng.random() < 0.3
        self.add(ops.mk_index(x, items, ell))
        return True

    def g_take(self):
        rng = self.rng
        x = self.pick(lambda n: n.rank >= 1)
        axis = rng.randrange(x.rank)
        d = x.shape[axis]
        safe = "take-empty" in self.avoid
        if safe and not (d.is_const() and d.const() > 0):
            raise Invalid("avoid")
        ishape = self.fresh_shape(rng.choice([0, 1, 1, 2]))
        idx = self.fresh(rng.choice(["i64", "i32"]), ishape, "index", bound=d,
                         neg=rng.random() < 0.3, oob=not safe and rng.random() < 0.04)
        self.add(ops.mk_take(x, idx, axis - x.rank if rng.random() < 0.3 else axis))
        return True

    def g_cumsum(self):
        rng = self.rng
        x = self.pick(lambda n: 1 <= n.rank < 8)
        axis = rng.randrange(x.rank)
        fn = "cumsum" if rng.random() < 0.7 else "cumprod"
        self.add(ops.mk_cum(fn, x, axis - x.rank if rng.random() < 0.3 else axis))
        return True

    def g_one_hot(self):
        rng = self.rng
        n = rng.choice([1, 2, 3, 5])
        idx = self.pick(lambda t: t.dt in ops.INTS,
                        lambda: self.fresh(rng.choice(["i64", "i32"]), self.fresh_shape(rng.choice([0, 1, 2])),
                                           "onehot", bound=n))
        self.add(ops.mk_one_hot(idx, n))
        return True

    def g_cast(self):
        rng = self.rng
        x = self.pick()
        to = wchoice(rng, [("f32", 4), ("f16", 3), ("bf16", 3), ("f64", 2), ("i32", 2),
                           ("i64", 2), ("bool", 1)])
        if to == x.dt or to == "f64" and "f64" in self.avoid:
            raise Invalid("same dtype")
        self.add(ops.mk_cast(x, to), 0.5)
        return True

    def g_create(self):
        x = self.pick()
        c = self.creation_like(x)
        if c is x or not isinstance(c, ops.Node):
            raise Invalid("no creation")
        return True

    def g_print(self):
        x = self.pick()
        self.add(ops.mk_print("v", [x]), 0)
        self.uses[id(x)] -= 1   # a print alone does not use a value up
        return True

    def g_layer(self):
        rng = self.rng
        kind = wchoice(rng, [("Linear", 5), ("LayerNorm", 2), ("RMSNorm", 1), ("MLP", 2),
                             ("Embedding", 2), ("MultiHeadAttention", 1)])
        name = "%s_l%d" % (self.name, len(self.layers))   # unique in a batch
        if kind == "Embedding":
            nrows, d = rng.choice([3, 5, 8]), rng.choice([2, 4])
            layer = ops.Layer(name, kind, (nrows, d))
            idx = self.fresh(rng.choice(["i64", "i32"]), self.fresh_shape(rng.choice([1, 2])), "index",
                             bound=nrows, neg=rng.random() < 0.3)
            n = ops.mk_layer(layer, idx)
        else:
            def ok(t):
                return t.dt == "f32" and t.rank >= 1 and t.shape[-1].is_const() and t.shape[-1].const() > 0 \
                    and (kind != "MultiHeadAttention" or (t.rank == 3 and t.shape[-1].const() % 2 == 0))
            if kind == "MultiHeadAttention":
                fresh = lambda: self.fresh("f32", (self.fresh_dim(), self.fresh_dim(), Dim.of(rng.choice([4, 8]))))
            else:
                fresh = lambda: self.fresh("f32", self.fresh_shape(rng.choice([1, 2, 3]))[:-1] +
                                           (Dim.of(rng.choice([2, 3, 4, 8])),))
            x = self.pick(ok, fresh)
            d = x.shape[-1].const()
            if kind == "Linear":
                layer = ops.Layer(name, kind, (d, rng.choice([1, 2, 3, 5]), rng.random() < 0.8))
            elif kind in ("LayerNorm", "RMSNorm"):
                layer = ops.Layer(name, kind, (d,))
            elif kind == "MLP":
                layer = ops.Layer(name, kind, (d, rng.choice([2, 4, 6])))
            else:
                layer = ops.Layer(name, kind, (d, 2, rng.random() < 0.7))
            n = ops.mk_layer(layer, x)
        self.layers.append(layer)
        self.add(n)
        return True


def _degree(d):
    return max((len(m) for m, _ in d.terms), default=0)


def _bcast_ok(a, b):
    try:
        ops.broadcast(a.shape, b.shape)
        return True
    except Invalid:
        return False

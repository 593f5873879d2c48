"""ops.py - the ops the generator uses: typing, tdsl spelling, reference.

A program is a list of Nodes in SSA order.  Each op here has three faces,
kept side by side so they cannot drift apart:

  mk_*      builds a Node and computes its dtype and symbolic shape with
            tdsl's rules (docs/language.md; lang/shapes.c's promotion),
            raising Invalid for what tdsl rejects at compile time, so the
            generator only emits well-typed programs;
  render    the node as tdsl source, given its operands' text;
  evaluate  the node's reference value (refops.Val) from its operands'
            values and the binding of the symbols, in numpy float64.

The composite built-ins (mean, logsumexp, clamp, ...) and the stdlib
functions and layers (nn.softmax, nn.Linear, ...) are evaluated as the
same compositions of primitives that docs/language.md and stdlib/nn.td
define, on the reference primitives of refops.py.
"""
import numpy as np

import refops as R
from dims import Dim, numel

FLOATS = R.FLOATS
INTS = R.INTS


class Invalid(Exception):
    """A combination tdsl rejects at compile time (the generator retries)."""


class Lit:
    """A number in the source: int, float, bool or a symbolic size (weak)."""
    __slots__ = ("kind", "value")

    def __init__(self, kind, value):
        self.kind, self.value = kind, value

    def weak_dtype(self):
        return {"int": "i64", "size": "i64", "float": "f32", "bool": "bool"}[self.kind]

    def render(self):
        if self.kind == "bool":
            return "true" if self.value else "false"
        if self.kind == "size":
            s = self.value.render()
            return s if self.value.is_sym() or self.value.is_const() and self.value.const() >= 0 else "(%s)" % s
        if self.kind == "int":
            return str(self.value) if self.value >= 0 else "(%d)" % self.value
        r = repr(float(self.value))
        return r if self.value >= 0 else "(%s)" % r

    def number(self, env):
        if self.kind == "size":
            return self.value.eval(env)
        return self.value


class Node:
    """One op application: op name, operands (Nodes, Lits, lists), attrs."""
    __slots__ = ("op", "args", "attrs", "dt", "shape", "inline", "name")

    def __init__(self, op, args, attrs, dt, shape):
        self.op, self.args, self.attrs = op, list(args), dict(attrs)
        self.dt, self.shape = dt, tuple(shape)
        self.inline = False
        self.name = None

    def operands(self):
        """The Node operands, flattened out of lists."""
        out = []
        for a in self.args:
            if isinstance(a, Node):
                out.append(a)
            elif isinstance(a, list):
                out.extend(x for x in a if isinstance(x, Node))
        return out

    @property
    def rank(self):
        return len(self.shape)


def is_tensor(x):
    return isinstance(x, Node)


def dtype_of(x):
    return x.dt if isinstance(x, Node) else x.weak_dtype()


# ---- dtype promotion (lang/shapes.c: promote) ----

def promote2(a, b):
    """The dtype of an elementwise op on a and b (Nodes or weak Lits)."""
    da, db = dtype_of(a), dtype_of(b)
    wa, wb = not is_tensor(a), not is_tensor(b)
    if wa and not wb:
        return _weak_meets(da, db)
    if wb and not wa:
        return _weak_meets(db, da)
    return R.promote(da, db)


def _weak_meets(weak, t):
    if weak == "f32" and t not in FLOATS:
        return "f32"
    if weak == "i64" and t == "bool":
        return "i64"
    return t


def broadcast(sa, sb):
    r = max(len(sa), len(sb))
    sa = (Dim.of(1),) * (r - len(sa)) + tuple(sa)
    sb = (Dim.of(1),) * (r - len(sb)) + tuple(sb)
    out = []
    for da, db in zip(sa, sb):
        if da == db or db == Dim.of(1):
            out.append(da)
        elif da == Dim.of(1):
            out.append(db)
        else:
            raise Invalid("shapes do not broadcast")
    return tuple(out)


def shape_of(x):
    return x.shape if isinstance(x, Node) else ()


def node(op, args, attrs, dt, shape):
    if len(shape) > 8:
        raise Invalid("rank > 8")
    return Node(op, args, attrs, dt, shape)


# ---- constructors with tdsl's typing rules ----

UNARY_FNS = ("exp", "log", "sqrt", "rsqrt", "abs", "neg", "sin", "cos", "tanh", "sigmoid",
             "relu", "gelu", "silu", "erf", "floor", "ceil", "round")


def mk_input(name, dt, shape, role="data", **extra):
    n = node("input", [], dict(name=name, role=role, **extra), dt, shape)
    n.name = name
    return n


def mk_unary(fn, x, style="call"):
    if x.dt == "bool":
        raise Invalid("math on bool")
    keep = fn in ("neg", "abs", "relu")
    dt = x.dt if x.dt in FLOATS or keep else "f32"
    return node("unary", [x], dict(fn=fn, style=style), dt, x.shape)


BIN_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "pow": "**"}
CMP_OPS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def mk_binary(op, a, b, style="op"):
    if not is_tensor(a) and not is_tensor(b):
        raise Invalid("no tensor operand")
    t = promote2(a, b)
    if op == "div" and t not in FLOATS:
        t = "f32"
    if op == "pow" and t not in FLOATS and isinstance(b, Lit) and b.kind == "int" and b.value < 0:
        t = "f32"
    if t == "bool" and op not in ("minimum", "maximum"):
        raise Invalid("arithmetic on bool")
    shape = broadcast(shape_of(a), shape_of(b))
    if op in ("minimum", "maximum"):
        style = "call"
    return node("binary", [a, b], dict(fn=op, style=style), t, shape)


def mk_compare(op, a, b):
    if not is_tensor(a) and not is_tensor(b):
        raise Invalid("no tensor operand")
    t = promote2(a, b)
    shape = broadcast(shape_of(a), shape_of(b))
    return node("compare", [a, b], dict(fn=op, cdt=t), "bool", shape)


def mk_logic(op, a, b=None):
    if op == "not":
        if a.dt != "bool":
            raise Invalid("not on non-bool")
        return node("logic", [a], dict(fn="not"), "bool", a.shape)
    if dtype_of(a) != "bool" or dtype_of(b) != "bool":
        raise Invalid("and/or on non-bool")
    if not is_tensor(a) and not is_tensor(b):
        raise Invalid("no tensor operand")
    return node("logic", [a, b], dict(fn=op), "bool", broadcast(shape_of(a), shape_of(b)))


def mk_where(c, a, b):
    if c.dt != "bool":
        raise Invalid("where needs a bool condition")
    t = promote2(a, b)
    s = broadcast(shape_of(a), shape_of(b))
    return node("where", [c, a, b], dict(cdt=t), t, broadcast(c.shape, s))


def mk_clamp(x, lo, hi):
    """clamp(x, lo, hi) = minimum(maximum(x, lo), hi); lo or hi may be None."""
    t, shape = x.dt, x.shape
    tmp = x
    for bound in (lo, hi):
        if bound is not None:
            t = promote2(tmp, bound)
            shape = broadcast(shape, shape_of(bound))
            tmp = Node("tmp", [], {}, t, shape)
    if t == "bool":
        raise Invalid("clamp of bool")
    return node("clamp", [x, lo, hi], {}, t, shape)


REDUCE_FNS = ("sum", "mean", "max", "min", "prod", "logsumexp", "argmax", "argmin")


def norm_axes(axes, rank):
    """tdsl's axis mask as a sorted tuple; Invalid when out of range/twice."""
    if axes is None:
        return tuple(range(rank))
    lst = axes if isinstance(axes, list) else [axes]
    out = []
    for a in lst:
        p = a + rank if a < 0 else a
        if p < 0 or p >= rank or p in out:
            raise Invalid("bad axis")
        out.append(p)
    return tuple(sorted(out))


def mk_reduce(fn, x, axes=None, keepdims=False):
    rank = x.rank
    ax = norm_axes(axes, rank)
    if fn in ("argmax", "argmin"):
        if axes is None:
            return node("reduce", [x], dict(fn=fn, axes=None, keepdims=keepdims), "i64", ())
        if len(ax) != 1:
            raise Invalid("argmax takes one axis")
        dt = "i64"
    elif fn in ("mean", "logsumexp"):
        dt = x.dt if x.dt in FLOATS else "f32"
    elif fn in ("sum", "prod") and x.dt == "bool":
        dt = "i64"
    else:
        dt = x.dt
    if keepdims or not ax:
        shape = tuple(Dim.of(1) if i in ax else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in ax)
    return node("reduce", [x], dict(fn=fn, axes=axes, keepdims=keepdims), dt, shape)


NN_FNS = ("softmax", "log_softmax", "layer_norm", "rms_norm", "gelu_tanh", "leaky_relu",
          "cross_entropy")


def mk_nn(fn, x, *rest, **attrs):
    """The stdlib functions of nn.td on float x (typed like their bodies)."""
    if x.dt not in FLOATS:
        raise Invalid("nn functions on floats only")
    if fn in ("softmax", "log_softmax"):
        norm_axes(attrs.get("axis", -1), x.rank)
        if x.rank == 0:
            raise Invalid("softmax of rank 0")
        return node("nn", [x], dict(fn=fn, **attrs), x.dt, x.shape)
    if fn in ("gelu_tanh", "leaky_relu"):
        return node("nn", [x], dict(fn=fn, **attrs), x.dt, x.shape)
    if fn in ("layer_norm", "rms_norm"):
        if x.rank == 0:
            raise Invalid("norm of rank 0")
        dt = x.dt
        for w in rest:
            if w.shape != (x.shape[-1],):
                raise Invalid("norm weight shape")
            dt = R.promote(dt, w.dt)
        return node("nn", [x] + list(rest), dict(fn=fn, **attrs), dt, x.shape)
    if fn == "cross_entropy":
        labels = rest[0]
        if x.dt != "f32" or x.rank != 2 or labels.dt not in INTS or labels.shape != (x.shape[0],):
            raise Invalid("cross_entropy types")
        return node("nn", [x, labels], dict(fn=fn), "f32", ())
    raise Invalid(fn)


def mk_matmul(a, b):
    if a.rank == 0 or b.rank == 0:
        raise Invalid("matmul of rank 0")
    t = R.promote(a.dt, b.dt)
    if t == "bool":
        t = "f32"
    sa = a.shape if a.rank > 1 else (Dim.of(1),) + a.shape
    sb = b.shape if b.rank > 1 else b.shape + (Dim.of(1),)
    if sa[-1] != sb[-2]:
        raise Invalid("matmul inner sizes")
    batch = broadcast(sa[:-2], sb[:-2])
    shape = batch + ((sa[-2],) if a.rank > 1 else ()) + ((sb[-1],) if b.rank > 1 else ())
    return node("matmul", [a, b], {}, t, shape)


def mk_reshape(x, items):
    """items: Dims, and at most one -1."""
    total = numel(x.shape)
    known = Dim.of(1)
    infer = [i for i, d in enumerate(items) if isinstance(d, int) and d == -1]
    if len(infer) > 1:
        raise Invalid("two -1")
    shape = []
    for d in items:
        if isinstance(d, int) and d == -1:
            shape.append(None)
        else:
            shape.append(Dim.of(d))
            known = known * Dim.of(d)
    if infer:
        q = _poly_div(total, known)
        if q is None:
            raise Invalid("-1 does not divide")
        shape[infer[0]] = q
    elif numel(shape) != total:
        raise Invalid("element counts differ")
    return node("reshape", [x], dict(items=list(items)), x.dt, tuple(shape))


def _poly_div(total, known):
    """total / known when known is a constant or a monomial dividing every term."""
    if known.is_const():
        return total.div_exact(known.const())
    if len(known.terms) != 1:
        return None
    (mono, coef), = known.terms
    out = {}
    for m, c in total.terms:
        rest = list(m)
        for s in mono:
            if s not in rest:
                return None
            rest.remove(s)
        if c % coef:
            return None
        out[tuple(rest)] = c // coef
    return Dim(out)


def mk_flatten(x):
    return node("flatten", [x], {}, x.dt, (numel(x.shape),))


def mk_permute(x, perm, style="permute"):
    """style: permute(x, [..]), transpose(x) (reversed), transpose(x, a, b), x.T."""
    if sorted(perm) != list(range(x.rank)):
        raise Invalid("bad permutation")
    return node("permute", [x], dict(perm=list(perm), style=style), x.dt,
                tuple(x.shape[p] for p in perm))


def mk_concat(xs, axis):
    if xs[0].rank == 0:
        raise Invalid("concat of rank 0")
    rank = xs[0].rank
    ax = axis + rank if axis < 0 else axis
    if not 0 <= ax < rank:
        raise Invalid("concat axis")
    t = xs[0].dt
    total = Dim.of(0)
    for x in xs:
        if x.rank != rank or any(k != ax and x.shape[k] != xs[0].shape[k] for k in range(rank)):
            raise Invalid("concat shapes")
        t = R.promote(t, x.dt)
        total = total + x.shape[ax]
    shape = list(xs[0].shape)
    shape[ax] = total
    return node("concat", [list(xs)], dict(axis=axis), t, tuple(shape))


def mk_stack(xs, axis):
    for x in xs:
        if x.shape != xs[0].shape:
            raise Invalid("stack shapes")
    rank = xs[0].rank + 1
    ax = axis + rank if axis < 0 else axis
    if not 0 <= ax < rank:
        raise Invalid("stack axis")
    t = xs[0].dt
    for x in xs:
        t = R.promote(t, x.dt)
    shape = list(xs[0].shape)
    shape.insert(ax, Dim.of(len(xs)))
    return node("stack", [list(xs)], dict(axis=axis), t, tuple(shape))


def mk_split(x, n, axis):
    """The split node (rendered as `let (a, b) = split(...)`) and its parts."""
    if x.rank == 0:
        raise Invalid("split of rank 0")
    ax = axis + x.rank if axis < 0 else axis
    if not 0 <= ax < x.rank:
        raise Invalid("split axis")
    piece = x.shape[ax].div_exact(n)
    if piece is None:
        raise Invalid("split does not divide")
    shape = list(x.shape)
    shape[ax] = piece
    s = node("split", [x], dict(n=n, axis=axis), x.dt, tuple(shape))
    parts = [node("part", [s], dict(k=k), x.dt, tuple(shape)) for k in range(n)]
    return s, parts


def mk_squeeze(x, axis=None):
    if axis is None:
        shape = tuple(d for d in x.shape if d != Dim.of(1))
    else:
        ax = axis + x.rank if axis < 0 else axis
        if not 0 <= ax < x.rank or x.shape[ax] != Dim.of(1):
            raise Invalid("squeeze axis")
        shape = tuple(d for i, d in enumerate(x.shape) if i != ax)
    return node("squeeze", [x], dict(axis=axis), x.dt, shape)


def mk_unsqueeze(x, axis):
    rank = x.rank + 1
    ax = axis + rank if axis < 0 else axis
    if not 0 <= ax < rank:
        raise Invalid("unsqueeze axis")
    shape = list(x.shape)
    shape.insert(ax, Dim.of(1))
    return node("unsqueeze", [x], dict(axis=axis), x.dt, tuple(shape))


def mk_broadcast_to(x, shape):
    shape = tuple(Dim.of(d) for d in shape)
    if x.rank > len(shape):
        raise Invalid("broadcast_to rank")
    for d, o in zip(x.shape, shape[len(shape) - x.rank:]):
        if d != o and d != Dim.of(1):
            raise Invalid("broadcast_to shape")
    return node("broadcast_to", [x], dict(shape=list(shape)), x.dt, shape)


def mk_take(x, idx, axis):
    if x.rank == 0 or idx.dt not in INTS:
        raise Invalid("take types")
    ax = axis + x.rank if axis < 0 else axis
    if not 0 <= ax < x.rank:
        raise Invalid("take axis")
    shape = x.shape[:ax] + idx.shape + x.shape[ax + 1:]
    return node("take", [x, idx], dict(axis=axis), x.dt, shape)


def mk_cum(fn, x, axis):
    """cumsum / cumprod along axis: ints and bools accumulate in i64."""
    if x.rank == 0 or x.rank > 7:
        raise Invalid("cumsum rank")
    ax = axis + x.rank if axis < 0 else axis
    if not 0 <= ax < x.rank:
        raise Invalid("cumsum axis")
    return node("cum", [x], dict(fn=fn, axis=axis), x.dt if x.dt in FLOATS else "i64", x.shape)


def mk_one_hot(idx, n):
    if idx.dt not in INTS:
        raise Invalid("one_hot of non-int")
    return node("one_hot", [idx], dict(n=n), "f32", idx.shape + (Dim.of(n),))


def mk_cast(x, dt):
    return node("cast", [x], dict(to=dt), dt, x.shape)


def mk_like(fn, x):
    return node("like", [x], dict(fn=fn), x.dt, x.shape)


def mk_full(shape, value, dt=None):
    """full(shape, v[, dtype = dt]); the default dtype follows the value."""
    dflt = "bool" if value.kind == "bool" else "f32"
    return node("full", [value], dict(shape=list(shape), dtype=dt), dt or dflt, tuple(shape))


def mk_arange(n):
    """arange(n) over a size (i64)."""
    return node("arange", [], dict(n=n), "i64", (Dim.of(n),))


def mk_eye(n, dt=None):
    return node("eye", [], dict(n=n, dtype=dt), dt or "f32", (Dim.of(n), Dim.of(n)))


def mk_print(label, xs):
    return node("print", list(xs), dict(label=label), "bool", ())


# ---- indexing: lang/shapes.c el_apply_index, symbolically ----

def index_plan(shape, items):
    """Per axis (kind, start, step, count) for items (one per axis):
    ("full",), ("idx", i), ("slice", lo, hi, step); i, lo, hi: int, Dim
    or None.  Mirrors the elaborator, Python's clamping on literal sizes
    included; Invalid for what it rejects."""
    plan = []
    for length, it in zip(shape, items):
        if it[0] == "full":
            plan.append(("full", Dim.of(0), 1, length))
            continue
        if it[0] == "idx":
            p = _pos(it[1], length)
            if length.is_const() and p.is_const() and p.const() >= length.const():
                raise Invalid("index out of range")
            if p.is_const() and p.const() < 0:
                raise Invalid("negative index")
            plan.append(("idx", p, 1, Dim.of(1)))
            continue
        _, lo, hi, st = it
        st = 1 if st is None else st
        if st == 0:
            raise Invalid("zero step")
        to_front = False
        b = None
        if st > 0:
            a = Dim.of(0) if lo is None else _pos(lo, length)
            b = length if hi is None else _pos(hi, length)
        else:
            if not length.is_const() and (lo is None or hi is None):
                raise Invalid("negative step on a symbolic axis")
            a = length - 1 if lo is None else _pos(lo, length)
            if hi is None:
                to_front = True
            else:
                b = _pos(hi, length)
        if length.is_const() and a.is_const() and (to_front or b.is_const()):
            L, A = length.const(), a.const()
            if st > 0:
                B = b.const()
                A = min(max(A, 0), L)
                B = min(max(B, 0), L)
                cnt = (B - A + st - 1) // st if B > A else 0
            else:
                A = min(max(A, -1), L - 1)
                B = -1 if to_front else min(max(b.const(), -1), L - 1)
                cnt = (A - B + (-st) - 1) // (-st) if A > B else 0
            plan.append(("slice", Dim.of(A if cnt > 0 else 0), st, Dim.of(cnt)))
            continue
        if st < 0:
            raise Invalid("negative step needs literal sizes")
        span = b - a
        if span.is_const() and span.const() < 0:
            raise Invalid("empty for every size")
        cnt = span if st == 1 else span.div_exact(st)
        if cnt is None:
            raise Invalid("inexact symbolic step")
        plan.append(("slice", a, st, cnt))
    return plan


def _pos(v, length):
    if isinstance(v, int):
        return length - (-v) if v < 0 else Dim.of(v)
    return Dim.of(v)


def mk_index(x, items, ellipsis=False):
    """x[items]: items has one entry per axis of x."""
    if len(items) != x.rank or x.rank == 0:
        raise Invalid("index rank")
    if all(it[0] == "full" for it in items):
        raise Invalid("no-op index")
    plan = index_plan(x.shape, items)
    shape = tuple(p[3] for p in plan if p[0] != "idx")
    return node("index", [x], dict(items=list(items), ellipsis=ellipsis), x.dt, shape)


# ---- layers (stdlib/nn.td models) ----

class Layer:
    """A sub-model of the entry's model: kind, constructor args, params."""

    def __init__(self, name, kind, args):
        self.name, self.kind, self.args = name, kind, tuple(args)

    def params(self):
        """{state_dict name: shape (ints)} as nn.td declares them."""
        k, a = self.kind, self.args
        p = self.name + "."
        if k == "Linear":
            d = {p + "weight": (a[1], a[0])}
            if a[2]:
                d[p + "bias"] = (a[1],)
            return d
        if k in ("LayerNorm",):
            return {p + "weight": (a[0],), p + "bias": (a[0],)}
        if k == "RMSNorm":
            return {p + "weight": (a[0],)}
        if k == "Embedding":
            return {p + "weight": (a[0], a[1])}
        if k == "MLP":
            d, h = a
            return {p + "fc1.weight": (h, d), p + "fc1.bias": (h,), p + "fc2.weight": (d, h),
                    p + "fc2.bias": (d,)}
        if k == "MultiHeadAttention":
            d = a[0]
            out = {}
            for m in "qkvo":
                out[p + m + ".weight"] = (d, d)
                out[p + m + ".bias"] = (d,)
            return out
        raise ValueError(k)

    def render(self):
        args = []
        for v in self.args:
            args.append(("true" if v else "false") if isinstance(v, bool) else str(v))
        return "%s = nn.%s(%s)" % (self.name, self.kind, ", ".join(args))


def mk_layer(layer, x):
    k, a = layer.kind, layer.args
    if k == "Embedding":
        if x.dt not in INTS:
            raise Invalid("embedding of non-int")
        return node("layer", [x], dict(layer=layer), "f32", x.shape + (Dim.of(a[1]),))
    if x.dt != "f32" or x.rank == 0:
        raise Invalid("layers take f32")
    d_in = a[0]
    if x.shape[-1] != Dim.of(d_in):
        raise Invalid("layer input size")
    if k == "Linear":
        return node("layer", [x], dict(layer=layer), "f32", x.shape[:-1] + (Dim.of(a[1]),))
    if k == "MultiHeadAttention" and x.rank != 3:
        raise Invalid("attention takes [B, T, d]")
    return node("layer", [x], dict(layer=layer), "f32", x.shape)


# ---- rendering ----

def _kw(name, v):
    return "%s = %s" % (name, v)


def _axes_str(axes):
    if isinstance(axes, list):
        return "[" + ", ".join(str(a) for a in axes) + "]"
    return str(axes)


def _slice_bound(v):
    if v is None:
        return ""
    if isinstance(v, int):
        return str(v)
    return v.render()


def render(n, a):
    """n as tdsl source; a(x) renders operand x (parenthesised as needed)."""
    op, at = n.op, n.attrs
    if op == "unary":
        if at["style"] == "minus":
            return "-" + a(n.args[0], "unary")
        return "%s(%s)" % (at["fn"], a(n.args[0], "arg"))
    if op == "binary":
        fn = at["fn"]
        if at["style"] == "op":
            return "%s %s %s" % (a(n.args[0], "binop"), BIN_OPS[fn], a(n.args[1], "binop"))
        return "%s(%s, %s)" % (fn, a(n.args[0], "arg"), a(n.args[1], "arg"))
    if op == "compare":
        return "%s %s %s" % (a(n.args[0], "binop"), CMP_OPS[at["fn"]], a(n.args[1], "binop"))
    if op == "logic":
        if at["fn"] == "not":
            return "not %s" % a(n.args[0], "binop")
        return "%s %s %s" % (a(n.args[0], "binop"), at["fn"], a(n.args[1], "binop"))
    if op == "where":
        return "where(%s)" % ", ".join(a(x, "arg") for x in n.args)
    if op == "clamp":
        x, lo, hi = n.args
        parts = [a(x, "arg")]
        if lo is not None and hi is not None:
            parts += [a(lo, "arg"), a(hi, "arg")]
        elif lo is not None:
            parts.append(_kw("lo", a(lo, "arg")))
        else:
            parts.append(_kw("hi", a(hi, "arg")))
        return "clamp(%s)" % ", ".join(parts)
    if op == "reduce":
        parts = [a(n.args[0], "arg")]
        if at["axes"] is not None:
            parts.append(_kw("axis", _axes_str(at["axes"])))
        if at["keepdims"]:
            parts.append(_kw("keepdims", "true"))
        return "%s(%s)" % (at["fn"], ", ".join(parts))
    if op == "nn":
        fn = at["fn"]
        parts = [a(x, "arg") for x in n.args]
        if "axis" in at:
            parts.append(_kw("axis", at["axis"]))
        if "slope" in at:
            parts.append(_kw("slope", repr(at["slope"])))
        if "eps" in at:
            parts.append(repr(at["eps"]))
        return "nn.%s(%s)" % (fn, ", ".join(parts))
    if op == "matmul":
        return "%s @ %s" % (a(n.args[0], "binop"), a(n.args[1], "binop"))
    if op == "reshape":
        refs = at.get("refs", {})
        items = ", ".join("-1" if isinstance(d, int) and d == -1 else
                          "%s.shape[%d]" % (a(n.args[0], "postfix"), refs[i]) if i in refs else
                          Dim.of(d).render() for i, d in enumerate(at["items"]))
        return "reshape(%s, [%s])" % (a(n.args[0], "arg"), items)
    if op == "flatten":
        return "flatten(%s)" % a(n.args[0], "arg")
    if op == "permute":
        st, perm, x = at["style"], at["perm"], n.args[0]
        if st == "T":
            return "%s.T" % a(x, "postfix")
        if st == "reverse":
            return "transpose(%s)" % a(x, "arg")
        if st == "swap":
            i, j = [k for k in range(len(perm)) if perm[k] != k]
            return "transpose(%s, %d, %d)" % (a(x, "arg"), i, j - len(perm) if at.get("neg") else j)
        return "permute(%s, [%s])" % (a(x, "arg"), ", ".join(str(p) for p in perm))
    if op in ("concat", "stack"):
        xs = ", ".join(a(x, "arg") for x in n.args[0])
        if at["axis"] == 0 and at.get("default_axis"):
            return "%s([%s])" % (op, xs)
        return "%s([%s], axis = %d)" % (op, xs, at["axis"])
    if op == "split":
        return "split(%s, %d, axis = %d)" % (a(n.args[0], "arg"), at["n"], at["axis"])
    if op == "squeeze":
        if at["axis"] is None:
            return "squeeze(%s)" % a(n.args[0], "arg")
        return "squeeze(%s, %d)" % (a(n.args[0], "arg"), at["axis"])
    if op == "unsqueeze":
        return "unsqueeze(%s, %d)" % (a(n.args[0], "arg"), at["axis"])
    if op == "broadcast_to":
        return "broadcast_to(%s, [%s])" % (a(n.args[0], "arg"), ", ".join(d.render() for d in at["shape"]))
    if op == "index":
        return "%s[%s]" % (a(n.args[0], "postfix"), _render_items(at["items"], at["ellipsis"]))
    if op == "take":
        return "take(%s, %s, axis = %d)" % (a(n.args[0], "arg"), a(n.args[1], "arg"), at["axis"])
    if op == "cum":
        return "%s(%s, %d)" % (at["fn"], a(n.args[0], "arg"), at["axis"])
    if op == "one_hot":
        return "one_hot(%s, %d)" % (a(n.args[0], "arg"), at["n"])
    if op == "cast":
        return "%s(%s)" % (at["to"], a(n.args[0], "arg"))
    if op == "like":
        return "%s(%s)" % (at["fn"], a(n.args[0], "arg"))
    if op == "full":
        s = "full([%s], %s" % (", ".join(d.render() for d in at["shape"]), n.args[0].render())
        return s + (", dtype = %s)" % at["dtype"] if at["dtype"] else ")")
    if op == "arange":
        return "arange(%s)" % Dim.of(at["n"]).render()
    if op == "eye":
        s = "eye(%s" % Dim.of(at["n"]).render()
        return s + (", dtype = %s)" % at["dtype"] if at["dtype"] else ")")
    if op == "layer":
        return "%s(%s)" % (at["layer"].name, a(n.args[0], "arg"))
    if op == "print":
        return "print(%s)" % ", ".join(['"%s"' % at["label"]] + [a(x, "arg") for x in n.args])
    raise ValueError(op)


def _render_items(items, ellipsis):
    strs = []
    for it in items:
        if it[0] == "full":
            strs.append(":")
        elif it[0] == "idx":
            strs.append(_slice_bound(it[1]))
        else:
            _, lo, hi, st = it
            s = "%s:%s" % (_slice_bound(lo), _slice_bound(hi))
            if st is not None:
                s += ":%d" % st
            strs.append(s)
    if ellipsis:
        # the first run of full items becomes `...`
        i = 0
        while i < len(strs) and strs[i] != ":":
            i += 1
        j = i
        while j < len(strs) and strs[j] == ":":
            j += 1
        if i < len(strs):
            strs = strs[:i] + ["..."] + strs[j:]
    else:
        while len(strs) > 1 and strs[-1] == ":":
            strs.pop()
    return ", ".join(strs)


# ---- reference evaluation ----

def _val(x, env):
    """An operand: a Val, or a Python number for a weak Lit."""
    return x if isinstance(x, R.Val) else x.number(env)


def rcast_to(x, dt):
    if isinstance(x, R.Val):
        return R.cast(x, dt)
    return R.const(x, dt)


def rbin(op, a, b, dt=None):
    """Elementwise a OP b on Vals or Python numbers, typed like tdsl."""
    if dt is None:
        dt = _rpromote(a, b)
        if op == "div" and dt not in FLOATS:
            dt = "f32"
        if op == "pow" and dt not in FLOATS and isinstance(b, int) and not isinstance(b, bool) and b < 0:
            dt = "f32"
    return R.binary(op, rcast_to(a, dt), rcast_to(b, dt), dt)


def _rdtype(x):
    if isinstance(x, R.Val):
        return x.dt, False
    if isinstance(x, bool):
        return "bool", True
    if isinstance(x, int):
        return "i64", True
    return "f32", True


def _rpromote(a, b):
    da, wa = _rdtype(a)
    db, wb = _rdtype(b)
    if wa and not wb:
        return _weak_meets(da, db)
    if wb and not wa:
        return _weak_meets(db, da)
    return R.promote(da, db)


def rcmp(op, a, b):
    dt = _rpromote(a, b)
    return R.binary(op, rcast_to(a, dt), rcast_to(b, dt), dt)


def rmean(x, axes, keepdims):
    """mean = sum / count, in f32 for ints and halves (lang/builtins.c)."""
    half = x.dt in ("f16", "bf16")
    xf = x if x.dt in ("f32", "f64") else R.cast(x, "f32")
    if isinstance(axes, int):
        axes = [axes]
    ax = R._axes_norm(axes, x.v.ndim)
    cnt = R._count(x.shape, ax)
    s = R.reduce("sum", xf, axes, keepdims)
    q = R.binary("div", s, R.cast(R.const(cnt, "i64"), s.dt), s.dt)
    return R.cast(q, x.dt) if half else q


def rreduce(fn, x, axes, keepdims):
    if isinstance(axes, int):
        axes = [axes]
    if fn == "mean":
        return rmean(x, axes, keepdims)
    if fn == "logsumexp":
        return R.logsumexp(x, axes, keepdims)
    if fn in ("argmax", "argmin") and axes is None:
        flat = x.map(lambda t: t.reshape(-1))
        return R.reduce(fn, flat, [0], False)
    return R.reduce(fn, x, axes, keepdims)


def rsoftmax(x, axis, log=False):
    m = R.reduce("max", x, [axis], True)
    if log:
        s = rbin("sub", x, m)
        return rbin("sub", s, R.unary("log", R.reduce("sum", R.unary("exp", s), [axis], True)))
    e = R.unary("exp", rbin("sub", x, m))
    return rbin("div", e, R.reduce("sum", e, [axis], True))


def rlayer_norm(x, w, b, eps):
    xc = rbin("sub", x, rmean(x, [-1], True))
    var = rmean(rbin("mul", xc, xc), [-1], True)
    return rbin("add", rbin("mul", rbin("mul", xc, R.unary("rsqrt", rbin("add", var, eps))), w), b)


def rrms_norm(x, w, eps):
    return rbin("mul", rbin("mul", x, R.unary("rsqrt", rbin("add", rmean(rbin("mul", x, x), [-1], True), eps))), w)


def rmatmul(a, b):
    t = R.promote(a.dt, b.dt)
    return R.matmul(a, b, "f32" if t == "bool" else t)


def rlinear(x, w, b):
    y = rmatmul(x, _swap_last(w))
    return rbin("add", y, b) if b is not None else y


def _swap_last(x):
    return x.map(lambda t: np.swapaxes(t, -1, -2))


def rgelu_tanh(x):
    inner = rbin("mul", 0.7978845608028654, rbin("add", x, rbin("mul", rbin("mul", rbin("mul", 0.044715, x), x), x)))
    return rbin("mul", rbin("mul", 0.5, x), rbin("add", 1, R.unary("tanh", inner)))


def rattention(x, layer, P):
    d, heads = layer.args[0], layer.args[1]
    causal = layer.args[2] if len(layer.args) > 2 else True
    p = layer.name + "."
    B, T = x.shape[0], x.shape[1]

    def split_heads(y):
        return y.map(lambda t: np.swapaxes(t.reshape(B, T, heads, d // heads), 1, 2))

    qh = split_heads(rlinear(x, P[p + "q.weight"], P[p + "q.bias"]))
    kh = split_heads(rlinear(x, P[p + "k.weight"], P[p + "k.bias"]))
    vh = split_heads(rlinear(x, P[p + "v.weight"], P[p + "v.bias"]))
    scale = 1 / np.sqrt(d // heads)
    scores = rbin("mul", rmatmul(qh, _swap_last(kh)), float(scale))
    if causal:
        i = np.arange(T)
        mask = R.Val(i[:, None] >= i[None, :], "bool")
        scores = R.where(mask, scores, R.const(-1e30, scores.dt), scores.dt)
    a = rmatmul(rsoftmax(scores, -1), vh)
    merged = a.map(lambda t: np.swapaxes(t, 1, 2).reshape(B, T, d))
    return rlinear(merged, P[p + "o.weight"], P[p + "o.bias"])


def rlayer(layer, x, P):
    k, p = layer.kind, layer.name + "."
    if k == "Linear":
        return rlinear(x, P[p + "weight"], P.get(p + "bias"))
    if k == "LayerNorm":
        return rlayer_norm(x, P[p + "weight"], P[p + "bias"], 0.00001)
    if k == "RMSNorm":
        return rrms_norm(x, P[p + "weight"], 0.000001)
    if k == "Embedding":
        return R.take(P[p + "weight"], x, 0)
    if k == "MLP":
        h = R.unary("gelu", rlinear(x, P[p + "fc1.weight"], P[p + "fc1.bias"]))
        return rlinear(h, P[p + "fc2.weight"], P[p + "fc2.bias"])
    if k == "MultiHeadAttention":
        return rattention(x, layer, P)
    raise ValueError(k)


def evaluate(n, get, env, params):
    """The reference Val of node n; get(x) gives an operand's Val."""
    op, at = n.op, n.attrs
    args = [get(x) if isinstance(x, Node) else
            [get(y) for y in x] if isinstance(x, list) else x for x in n.args]
    if op == "unary":
        return R.unary(at["fn"], args[0])
    if op == "binary":
        return rbin(at["fn"], _val(args[0], env), _val(args[1], env), n.dt)
    if op == "compare":
        dt = at["cdt"]
        return R.binary(at["fn"], rcast_to(_val(args[0], env), dt), rcast_to(_val(args[1], env), dt), dt)
    if op == "logic":
        if at["fn"] == "not":
            x = args[0]
            return R.Val(~x.v, "bool", 0, x.bad)
        return R.binary(at["fn"], rcast_to(_val(args[0], env), "bool"), rcast_to(_val(args[1], env), "bool"), "bool")
    if op == "where":
        dt = at["cdt"]
        return R.where(args[0], rcast_to(_val(args[1], env), dt), rcast_to(_val(args[2], env), dt), dt)
    if op == "clamp":
        x = args[0]
        if args[1] is not None:
            x = rbin("maximum", x, _val(args[1], env))
        if args[2] is not None:
            x = rbin("minimum", x, _val(args[2], env))
        return x
    if op == "reduce":
        return rreduce(at["fn"], args[0], at["axes"], at["keepdims"])
    if op == "nn":
        fn, x = at["fn"], args[0]
        if fn in ("softmax", "log_softmax"):
            return rsoftmax(x, at.get("axis", -1), fn == "log_softmax")
        if fn == "layer_norm":
            return rlayer_norm(x, args[1], args[2], at.get("eps", 0.00001))
        if fn == "rms_norm":
            return rrms_norm(x, args[1], at.get("eps", 0.000001))
        if fn == "gelu_tanh":
            return rgelu_tanh(x)
        if fn == "leaky_relu":
            return R.where(rcmp("ge", x, 0), x, rbin("mul", x, at.get("slope", 0.01)), x.dt)
        if fn == "cross_entropy":
            labels = args[1]
            C = x.shape[1]
            oh = R.cast(rcmp("eq", labels.map(lambda t: t[:, None]), R.Val(np.arange(C), labels.dt)), "f32")
            ls = rsoftmax(x, -1, log=True)
            s = R.reduce("sum", rbin("mul", ls, oh), [-1], False)
            return R.unary("neg", rmean(s, None, False))
        raise ValueError(fn)
    if op == "matmul":
        return R.matmul(args[0], args[1], n.dt)
    if op in ("reshape", "flatten"):
        shape = tuple(d.eval(env) for d in n.shape)
        R.check_shape(shape)
        return args[0].map(lambda t: t.reshape(shape))
    if op == "permute":
        perm = at["perm"]
        return args[0].map(lambda t: np.transpose(t, perm))
    if op == "concat":
        return R.concat(args[0], at["axis"], n.dt)
    if op == "stack":
        xs = [get(x) for x in n.args[0]]
        ax = at["axis"]
        xs = [R.cast(x, n.dt) for x in xs]
        return R.Val(np.stack([x.v for x in xs], ax), n.dt, np.stack([x.e for x in xs], ax),
                     np.stack([x.bad for x in xs], ax))
    if op == "split":
        x = args[0]
        ax = at["axis"] % x.v.ndim
        piece = x.shape[ax] // at["n"]
        return [R.slice_axis(x, ax, k * piece, 1, piece) for k in range(at["n"])]
    if op == "part":
        return args[0][at["k"]]
    if op in ("squeeze", "unsqueeze"):
        shape = tuple(d.eval(env) for d in n.shape)
        return args[0].map(lambda t: t.reshape(shape))
    if op == "broadcast_to":
        shape = tuple(d.eval(env) for d in n.shape)
        return args[0].map(lambda t: np.broadcast_to(t, shape).copy())
    if op == "index":
        return rindex(args[0], n.args[0].shape, at["items"], env)
    if op == "take":
        return R.take(args[0], args[1], at["axis"] % args[0].v.ndim)
    if op == "cum":
        # each prefix is its own sum (product): reduce's bound for i + 1 terms
        x = R.cast(args[0], n.dt)
        ax = at["axis"] % x.v.ndim
        L = x.shape[ax]
        if L == 0:
            return x
        fn = "sum" if at["fn"] == "cumsum" else "prod"
        return R.concat([R.reduce(fn, R.slice_axis(x, ax, 0, 1, i + 1), [ax], True) for i in range(L)], ax, n.dt)
    if op == "one_hot":
        idx = args[0]
        eq = rcmp("eq", idx.map(lambda t: t[..., None]), R.Val(np.arange(at["n"]), idx.dt))
        return R.cast(eq, "f32")
    if op == "cast":
        return R.cast(args[0], at["to"])
    if op == "like":
        x = args[0]
        return R.Val(np.full(x.shape, 1 if at["fn"] == "ones_like" else 0), x.dt)
    if op == "full":
        shape = tuple(d.eval(env) for d in n.shape)
        R.check_shape(shape)
        c = R.const(args[0].number(env), n.dt)
        return R.Val(np.full(shape, c.v), n.dt)
    if op == "arange":
        k = Dim.of(at["n"]).eval(env)
        R.check_shape((k,))
        return R.Val(np.arange(k), "i64")
    if op == "eye":
        k = Dim.of(at["n"]).eval(env)
        R.check_shape((k,))
        return R.cast(R.Val(np.eye(k, dtype=bool), "bool"), n.dt)
    if op == "layer":
        return rlayer(at["layer"], args[0], params)
    if op == "print":
        return None
    raise ValueError(op)


def rindex(x, shape, items, env):
    plan = index_plan(shape, items)
    # every count is checked before any range, like eager's node_shape
    for kind, start, step, cnt in plan:
        c = cnt.eval(env)
        if c < 0:
            raise R.RefError("negative-size", "size evaluates to %d" % c)
    out = x
    drop = []
    for ax, (kind, start, step, cnt) in enumerate(plan):
        if kind == "full":
            continue
        out = R.slice_axis(out, ax, start.eval(env), step, cnt.eval(env))
        if kind == "idx":
            drop.append(ax)
    if drop:
        out = out.map(lambda t: np.squeeze(t, axis=tuple(drop)))
    return out

#!/usr/bin/env python3
"""Reference values for the composite built-ins' tests (cumsum, cumprod,
index_add, scatter_add, sort, argsort, topk, einsum, norm):
tests/lang/ops/{cumsum_cumprod,index_add_scatter_add,sort_topk,einsum,norm,
composites_symbolic}.td.  Values are numpy float64 (np.cumsum, np.add.at,
np.einsum, ...; sorting is Python's stable sort with NaN largest, as
torch.sort orders it); gradients are central finite differences in
float64 of the same numpy functions.  Prints every test's `# expect:`
lines in tdsl's print format (4 decimals, right-aligned, PyTorch's rule
for e-notation refused so the data stays in plain notation).

    /usr/bin/python3 tests/data/composites_ref.py [NAME]
"""
import math
import sys

import numpy as np

nan, inf = math.nan, math.inf


def elems(a, kind):
    out = []
    for v in a.reshape(-1).tolist():
        if kind == "f":
            if math.isnan(v):
                out.append("nan")
            elif math.isinf(v):
                out.append("inf" if v > 0 else "-inf")
            else:
                out.append("%.4f" % v)
        elif kind == "b":
            out.append("true" if v else "false")
        else:
            out.append("%d" % v)
    if kind == "f":
        mags = [abs(v) for v in a.reshape(-1).tolist() if math.isfinite(v) and v != 0]
        if mags and (max(mags) > 1e8 or min(mags) < 1e-4 or max(mags) / min(mags) > 1000):
            raise SystemExit("values would print in e-notation: choose other data: %r" % (a.tolist(),))
    return out


def tensor_text(a, dt, col):
    """Text of array a (tdsl dtype name dt) whose '[' is at column col."""
    kind = "f" if dt[0] in "fb" and dt != "bool" else ("b" if dt == "bool" else "i")
    a = np.asarray(a)
    if a.ndim == 0:
        return elems(a, kind)[0]
    strs = elems(a, kind)
    w = max(len(s) for s in strs)
    it = iter(s.rjust(w) for s in strs)

    def block(shape, depth):
        if len(shape) == 1:
            return "[" + ", ".join(next(it) for _ in range(shape[0])) + "]"
        sep = "," + "\n" * (len(shape) - 1) + " " * (col + depth + 1)
        return "[" + sep.join(block(shape[1:], depth + 1) for _ in range(shape[0])) + "]"

    return block(a.shape, 0) + " (%s[%s])" % (dt, ", ".join(str(d) for d in a.shape))


def line(*parts):
    """Lines of print(parts...): strings, numbers, or (array, dtype) pairs."""
    text = ""
    for i, p in enumerate(parts):
        if i:
            text += " "
        if isinstance(p, tuple):
            col = len(text) - (text.rfind("\n") + 1)
            text += tensor_text(p[0], p[1], col)
        elif isinstance(p, float):
            text += tensor_text(np.float64(p), "f32", 0)
        else:
            text += str(p)
    for ln in text.split("\n"):
        print(("  # expect: " + ln).rstrip())


def output(k, a, dt):
    a = np.asarray(a)
    print("# expect: output %d: %s[%s]" % (k, dt, ", ".join(str(d) for d in a.shape)))
    for ln in tensor_text(a, dt, 0).split("\n"):
        if a.ndim:
            ln = ln.rsplit(" (", 1)[0] if ln.endswith(")") and "[" in ln.rsplit(" (", 1)[-1] else ln
        print(("# expect: " + ln).rstrip())


def fd(f, *xs, argnum=0, h=1e-6):
    """Central finite differences of the scalar f at xs, by xs[argnum]."""
    xs = [np.array(x, dtype=np.float64) for x in xs]
    x = xs[argnum]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        hi = f(*xs)
        x[i] = old - h
        lo = f(*xs)
        x[i] = old
        g[i] = (hi - lo) / (2 * h)
    g[np.abs(g) < 1e-6] = 0.0   # exact zeros, not the differences' rounding noise
    return g


def ranks_order(v, desc):
    """Stable order of the 1-D v with NaN largest (torch.sort)."""
    def key(i):
        x = v[i]
        if math.isnan(x):
            return (1, 0.0)
        return (0, x)
    order = sorted(range(len(v)), key=key)
    if desc:   # stable descending: larger first, ties by index
        def dkey(i):
            x = v[i]
            return (0, 0.0) if math.isnan(x) else (1, -x)
        order = sorted(range(len(v)), key=dkey)
    return order


def sort_np(x, axis=-1, desc=False):
    x = np.asarray(x, dtype=np.float64) if np.asarray(x).dtype.kind == "f" else np.asarray(x)
    xm = np.moveaxis(x, axis, -1)
    idx = np.zeros(xm.shape, dtype=np.int64)
    for r in np.ndindex(xm.shape[:-1]):
        idx[r] = ranks_order(xm[r].tolist(), desc)
    vals = np.take_along_axis(xm, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


# ---------------------------------------------------------------------------

def cumsum_cumprod():
    x = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    line("cumsum1", (np.cumsum(x, 1), "f32"))
    line("cumsum0", (np.cumsum(x, 0), "f32"))
    line("cumprod1", (np.cumprod(x, 1), "f32"))
    line("cumprod0", (np.cumprod(x, 0), "f32"))
    n = np.array([3, -1, 4, 1, -5])
    line("int", (np.cumsum(n), "i64"), (np.cumprod(n), "i64"))
    line("bool", (np.cumsum(np.array([True, False, True, True])), "i64"))
    with np.errstate(all="ignore"):
        s = np.array([1.0, 1.0, -1.0, 2.0]) / np.array([1.0, 0.0, 0.0, 1.0])
        line("special", (np.cumsum(s), "f32"), (np.cumprod(np.array([2.0, 0.0, inf, 3.0])), "f32"))
    d = np.array([0.1, 0.2, 0.3, 0.4]) * 3
    line("f64", (np.cumsum(d), "f64"), (np.cumprod(d), "f64"))
    w = np.array([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]])
    line("grad cumsum1", (fd(lambda x: np.sum(w * np.cumsum(x, 1)), x), "f32"))
    line("grad cumsum0", (fd(lambda x: np.sum(w * np.cumsum(x, 0)), x), "f32"))
    line("grad cumprod1", (fd(lambda x: np.sum(w * np.cumprod(x, 1)), x), "f32"))
    line("grad cumprod0", (fd(lambda x: np.sum(w * np.cumprod(x, 0)), x), "f32"))
    z = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5]])
    line("grad cumprod zeros", (fd(lambda x: np.sum(w * np.cumprod(x, 1)), z), "f32"))
    line("grad prod zeros", (fd(lambda x: np.sum(np.prod(x, 1) * np.array([1.0, 2.0])), z), "f32"))


def cumsum_blocked():
    i = np.arange(70)
    x = ((i * 7) % 9 - 4) * 0.25
    cs = np.cumsum(x)
    line("head", (cs[0:5], "f32"), "tail", (cs[62:70], "f32"))
    y = x.copy()
    y[20], y[40] = inf, -inf
    with np.errstate(all="ignore"):
        cy = np.cumsum(y)
    line("special", (cy[18:22], "f32"), (cy[38:42], "f32"), (cy[66:70], "f32"))
    line("int", (np.cumsum((i * 7) % 9 - 4)[60:70], "i64"))
    z = np.where(i % 3 == 0, 2.0, np.where(i % 3 == 1, 0.5, 1.0))
    cz = np.cumprod(z)
    line("prod", (cz[0:6], "f32"), (cz[64:70], "f32"))
    m = np.stack([x, -x], 1)
    line("axis0", (np.cumsum(m, 0)[65:70], "f32"))
    w = np.cos(i * 0.3)
    g = fd(lambda x: np.sum(w * np.cumsum(x)), x)
    line("grad", (g[0:5], "f32"), (g[65:70], "f32"))
    z0 = z.copy()
    z0[50] = 0.0
    gp = fd(lambda z: np.sum(w * np.cumprod(z)), z0)
    line("grad prod", (gp[46:52], "f32"), (gp[64:70], "f32"))


def index_add(x, idx, src, axis):
    out = np.array(x, dtype=np.float64 if np.asarray(x).dtype.kind == "f" else np.int64)
    xm = np.moveaxis(out, axis, 0)
    sm = np.moveaxis(np.asarray(src), axis, 0)
    for j, i in enumerate(idx):
        xm[i] += sm[j]
    return out


def scatter_add(x, idx, src, axis):
    out = np.array(x, dtype=np.float64)
    idx = np.asarray(idx)
    for pos in np.ndindex(idx.shape):
        t = list(pos)
        t[axis] = idx[pos]
        out[tuple(t)] += src[pos]
    return out


def index_add_scatter_add():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    idx = [0, 2, 0, -1]
    src = np.array([[0.5, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    line("rows", (index_add(x, idx, src, 0), "f32"))
    src1 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.5, 2.5, 3.5]])
    line("cols", (index_add(x, [1, 1, 0], src1, 1), "f32"))
    line("int", (index_add(np.zeros(3, np.int64), [2, 2], np.array([5, 7]), 0), "i32"))
    line("inf", (index_add(np.zeros(3), [1], np.array([inf]), 0), "f32"))
    line("alpha", (index_add(np.zeros(3), [0, 0, 2], -0.5 * np.array([1.0, 2.0, 3.0]), 0), "f32"),
         (index_add(np.zeros(2, np.int64), [1], 2 * np.array([3]), 0), "i64"))
    line("scatter1d", (scatter_add(np.zeros(3), [0, 2, 0, 1], np.array([1.0, 2.0, 3.0, 4.0]), 0), "f32"))
    i2 = np.array([[0, 1, 0, 2], [2, 2, 1, 0]])
    s2 = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    line("scatter-axis1", (scatter_add(np.zeros((2, 3)), i2, s2, 1), "f32"))
    i0 = np.array([[0, 2], [1, 0], [0, 0], [2, 1]])
    s0 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    line("scatter-axis0", (scatter_add(np.ones((3, 2)), i0, s0, 0), "f32"))
    w = np.array([[1.0, -1.0], [2.0, 0.5], [-3.0, 1.0], [0.25, 4.0]])
    f = lambda x, s: np.sum(w * index_add(x, idx, s, 0))
    line("grad index_add", (fd(f, x, src, argnum=0), "f32"), (fd(f, x, src, argnum=1), "f32"))
    w3 = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0], [2.0, 2.0, 1.0]])
    g = lambda x, s: np.sum(w3[:, :2] * scatter_add(x, i0, s, 0))
    line("grad scatter_add", (fd(g, np.ones((3, 2)), s0, argnum=0), "f32"), (fd(g, np.ones((3, 2)), s0, argnum=1), "f32"))


def sort_topk():
    with np.errstate(all="ignore"):
        v = np.array([3.0, -1.0, 2.0, -1.0, 0.0, 2.0, -1.0]) / np.array([1, 1, 1, 1, 0, 1, 0.0])
    s, i = sort_np(v)
    line("asc", (s, "f32"))
    line("asc-idx", (i, "i64"))
    s, i = sort_np(v, desc=True)
    line("desc", (s, "f32"))
    line("desc-idx", (i, "i64"))
    line("argsort", (sort_np(v)[1], "i64"), (sort_np(v, desc=True)[1], "i64"))
    s, i = sort_np(v, desc=True)
    line("top3", (s[:3], "f32"), (i[:3], "i64"))
    s, i = sort_np(v)
    line("bottom3", (s[:3], "f32"), (i[:3], "i64"))
    m = np.array([[2.0, 1.0, 3.0], [1.0, 1.0, 0.0], [5.0, -2.0, 2.0]])
    s, i = sort_np(m)
    line("rows", (s, "f32"), (i, "i64"))
    s, i = sort_np(m, axis=0, desc=True)
    line("cols", (s, "f32"), (i, "i64"))
    s, i = sort_np(m, axis=0, desc=True)
    line("top2-axis0", (s[:2], "f32"), (i[:2], "i64"))
    n = np.array([5, 3, 5, 1])
    s, i = sort_np(n)
    line("int", (s, "i32"), (i, "i64"))
    line("bool", (sort_np(np.array([1, 0, 1, 0]))[1], "i64"))
    line("stable-kw", (sort_np(np.array([2, 1, 2]))[1], "i64"), (sort_np(np.array([1.0, 3.0, 2.0]), desc=True)[0][:2], "f32"))
    x = np.array([[0.5, -1.5, 2.0, 1.0], [3.0, 0.25, -2.0, 1.5]])
    w = np.array([[1.0, 2.0, -1.0, 0.5], [-3.0, 1.0, 2.0, 4.0]])
    line("grad sort", (fd(lambda x: np.sum(w * sort_np(x, desc=True)[0]), x), "f32"))
    line("grad topk", (fd(lambda x: np.sum(w[:, :2] * sort_np(x)[0][:, :2]), x), "f32"))


def einsum():
    a = np.arange(6.0).reshape(2, 3) - 2
    b = np.arange(12.0).reshape(3, 4) / 4
    c = np.array([[1.0, -1.0], [2.0, 0.5], [0.0, 1.0], [-1.0, 3.0]])
    s = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
    p = np.arange(12.0).reshape(2, 2, 3) - 5
    q = np.arange(12.0).reshape(2, 3, 2) / 2
    u = np.array([1.0, -2.0, 3.0])
    line("matmul", (np.einsum("ij,jk->ik", a, b), "f32"))
    line("implicit", (np.einsum("ij,jk", a, b), "f32"), (np.einsum("ij", a), "f32"), (np.einsum("ji", a), "f32"))
    line("transpose", (np.einsum("ij->ji", a), "f32"), "sum", float(np.einsum("ij->", a)))
    line("trace", float(np.einsum("ii->", s)), (np.einsum("ii->i", s), "f32"), float(np.einsum("ii", s)))
    line("outer", (np.einsum("i,j->ij", u, u[:2]), "f32"))
    line("hadamard", (np.einsum("ij,ij->ij", a, a), "f32"), float(np.einsum("ij,ij->", a, a)))
    line("batched", (np.einsum("bij,bjk->bik", p, q), "f32"))
    line("chain", (np.einsum("ij,jk,kl->il", a, b, c), "f32"))
    line("ellipsis", (np.einsum("...ij->...ji", p), "f32"))
    line("ellipsis-mm", (np.einsum("...ij,...jk->...ik", p, q), "f32"))
    line("ellipsis-rank", (np.einsum("...ij,...jk->...ik", p, b), "f32"))
    line("mid-ellipsis", (np.einsum("i...j,j->...i", p, u), "f32"), (np.einsum("Ba", a), "f32"))
    line("matvec", (np.einsum("ij,j->i", a, u), "f32"), "dot", float(np.einsum("i,i->", u, u)))
    line("bsum", (np.einsum("bij->bj", p), "f32"))
    line("int", (np.einsum("ij,jk->ik", np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])), "i64"))
    w = np.array([[1.0, -1.0, 2.0, 0.5], [3.0, 0.0, -2.0, 1.0]])
    f = lambda a, b: np.sum(w * np.einsum("ij,jk->ik", a, b))
    line("grad", (fd(f, a, b, argnum=0), "f32"), (fd(f, a, b, argnum=1), "f32"))


def vnorm(x, p=2, axis=None, keepdims=False):
    x = np.abs(np.asarray(x, dtype=np.float64))
    if p == inf:
        return np.max(x, axis=axis, keepdims=keepdims)
    if p == -inf:
        return np.min(x, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(np.float64)
    return np.sum(x ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def norm():
    x = np.array([[3.0, -4.0, 0.0], [1.0, 2.0, -2.0]])
    line("p2", float(vnorm(x)), "p1", float(vnorm(x, 1)), "inf", float(vnorm(x, inf)),
         "-inf", float(vnorm(x, -inf)), "p0", float(vnorm(x, 0)))
    line("p3", float(vnorm(x, 3)), "p0.5", float(vnorm(x, 0.5)), "p-1", float(vnorm(x[1], -1)))
    line("axis1", (vnorm(x, 2, axis=1), "f32"), (vnorm(x, 1, axis=-1), "f32"))
    line("axis0-keep", (vnorm(x, 2, axis=0, keepdims=True), "f32"))
    line("axes", float(vnorm(x, 2, axis=(0, 1))), (vnorm(x, inf, axis=1, keepdims=True), "f64"))
    y = np.array([[0.5, -1.5, 2.0], [1.0, 3.0, -0.25]])
    line("grad p2", (fd(lambda y: vnorm(y), y), "f32"))
    line("grad p1", (fd(lambda y: vnorm(y, 1), y), "f32"))
    line("grad p3 axis1", (fd(lambda y: np.sum(vnorm(y, 3, axis=1) * np.array([1.0, -2.0])), y), "f32"))


def symbolic():
    x = np.arange(9).reshape(3, 3)
    xf = x.astype(np.float64)
    outs = [
        (np.cumsum(x, 0), "i64"),
        (np.cumprod(x + 1, 1), "i64"),
        (sort_np(-x, axis=1)[0], "i64"),
        (sort_np(-x, axis=1)[1], "i64"),
        (sort_np(xf * ((-1.0) ** x), axis=1, desc=True)[0][:, :2], "f32"),
        (sort_np(xf * ((-1.0) ** x), axis=1, desc=True)[1][:, :2], "i64"),
        (index_add(xf, [2, 0, 2], np.ones((3, 3)), 1), "f32"),
        (scatter_add(xf, x % 3, xf, 0), "f32"),
        (np.einsum("nd,md->nm", xf, xf), "f32"),
        (vnorm(xf, 2, axis=1), "f32"),
    ]
    for k, (a, dt) in enumerate(outs):
        output(k, a, dt)


TESTS = {
    "cumsum_cumprod": cumsum_cumprod,
    "cumsum_blocked": cumsum_blocked,
    "index_add_scatter_add": index_add_scatter_add,
    "sort_topk": sort_topk,
    "einsum": einsum,
    "norm": norm,
    "composites_symbolic": symbolic,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or TESTS:
        print("## " + name)
        TESTS[name]()

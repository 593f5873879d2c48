"""refops.py - the float64 reference: numpy values with an error bound.

Every reference value is a Val: the value `v` (float64 for float dtypes,
int64 for integers, bool for bool) already rounded to its tdsl dtype, an
absolute error bound `e` (float64, same shape) and a mask `bad` of the
elements whose value is not determined by the semantics within that bound
(see below).  The functions here implement each primitive's documented
semantics (docs/language.md, runtime/scalar.h's contract) in numpy, and
propagate `e` alongside: nothing is computed by tdsl.

THE TOLERANCE CONTRACT (the one place it is stated)
--------------------------------------------------------------------------
A backend's value `got` for a reference element (v, e) passes when

    |got - v| <= SAFETY * e + atol(dtype)        (ints and bools: got == v)

where e is a first-order running error bound built op by op:

  * elementwise f(a, b, ...): the propagated error, max |f(corner) - f(v)|
    over the corners a±ea, b±eb (exact for the monotone and bilinear ops,
    a first-order bound for the rest), plus the op's own rounding,
    ULPS[op] * u(compute dtype) * |result| (+ ABS_ULPS[op] * u * |input|
    for the few whose documented error is absolute), plus u(dtype) * |r|
    when a half type rounds an f32 result;
  * sum over n elements: sum e_i + n * u * sum |x_i| (scaled to the
    reduction length, any summation order); prod: prod(|x|+e) - prod|x|
    + n * u * |r|; max/min: max e_i;
  * matmul with inner size K: (|A|+EA)@(|B|+EB) - |A|@|B| + K * u * |A|@|B|.

So a pointwise-only chain is checked to a few ulps of its dtype, and
reductions and matmuls to a bound that grows with their length.
u(f64, f32, f16, bf16) = 2^-53, 2^-24, 2^-11, 2^-8 (unit roundoff).

Unreliable elements (`bad`): where a discontinuous op (floor/ceil/round,
comparisons, casts to int or bool, %, argmax/argmin, overflow to inf)
could go either way within the error bound of its input, the element and
everything computed from it is skipped (and counted), never guessed.
Non-finite reference values (NaN, inf) must be matched exactly when every
corner agrees on them, and are unreliable otherwise.
"""
import math

import numpy as np

SAFETY = 2.0            # headroom over the first-order bound
ULPS = {                # an op's own rounding error, in ulps of its compute dtype
    "exact": 0, "add": 1, "sub": 1, "mul": 1, "div": 2, "sqrt": 1, "rsqrt": 2,
    "exp": 8, "log": 8, "sin": 4, "cos": 4, "tanh": 8, "erf": 8, "sigmoid": 12,
    "silu": 12, "gelu": 16, "pow": 8, "mod": 2,
}
ABS_ULPS = {            # ...and absolute terms, in ulps times |input| ("x") or 1 ("1")
    "gelu": (4, "x"), "silu": (2, "x"), "erf": (4, "1"), "log": (4, "1"),
    "sin": (1, "1"), "cos": (1, "1"), "tanh": (1, "1"), "sigmoid": (1, "1"),
}

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
UNIT = {"f64": 2.0 ** -53, "f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
DENORM_MIN = {"f64": 5e-324, "f32": 1.4e-45, "f16": 2.0 ** -24, "bf16": 9.2e-41}
# Flushing of f32/f64 subnormals is tolerated (generated code may run with
# FTZ); f16/bf16 subnormals are part of their documented range.
ATOL = {"f64": 2.3e-308, "f32": 1.2e-38, "f16": 0.0, "bf16": 1.2e-38}
MAX = {"f64": 1.7976931348623157e308, "f32": 3.4028234663852886e38, "f16": 65504.0,
       "bf16": 3.3895313892515355e38}
NP_DTYPE = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16,
            "f32": np.float32, "f64": np.float64}
# The promotion order of docs/language.md: bool < i32 < i64 < f16, bf16 < f32 < f64.
RANK = {"bool": 0, "i32": 1, "i64": 2, "f16": 3, "bf16": 3, "f32": 4, "f64": 5}


class RefError(Exception):
    """A run-time error the semantics require (eager's `error:`)."""

    def __init__(self, kind, msg):
        super().__init__(msg)
        self.kind = kind


def is_float(dt):
    return dt in FLOATS


def compute_dtype(dt):
    """The dtype an op on `dt` computes in (halves compute in f32)."""
    return "f32" if dt in ("f16", "bf16") else dt


def promote(a, b):
    """Promotion between two tensor dtypes (not weak numbers)."""
    if a == b:
        return a
    if {a, b} == {"f16", "bf16"}:
        return "f32"
    return a if RANK[a] > RANK[b] else b


def _bf16_round(x):
    """Rounds float64 values to bfloat16 (nearest, ties to even), as float64."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        m, ex = np.frexp(x)
        r = np.ldexp(np.rint(np.ldexp(m, 8)), ex - 8)
        big = (1 - 2.0 ** -9) * 2.0 ** 128      # halfway to the next binade
        r = np.where(np.abs(x) >= big, np.copysign(np.inf, x), r)
        r = np.where(np.isfinite(x), r, x)
    return r


def round_to(x, dt):
    """float64 values rounded to float dtype `dt` (overflow gives inf)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        if dt == "f64":
            return x.copy()
        if dt == "f32":
            return x.astype(np.float32).astype(np.float64)
        if dt == "f16":
            return x.astype(np.float16).astype(np.float64)
        if dt == "bf16":
            return _bf16_round(x)
    raise ValueError(dt)


def to_int(x, dt):
    """float -> int cast: truncate toward zero, saturate, NaN -> 0."""
    lo, hi = (-2.0 ** 31, 2.0 ** 31 - 1) if dt == "i32" else (-2.0 ** 63, 2.0 ** 63 - 1)
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        t = np.trunc(np.where(np.isnan(x), 0.0, x))
        r = np.clip(t, lo, hi).astype(np.int64)
        if dt == "i64":
            r = np.where(t >= 2.0 ** 63, np.iinfo(np.int64).max, r)
    return r


def wrap_int(x, dt):
    x = np.asarray(x, dtype=np.int64)
    return x.astype(np.int32).astype(np.int64) if dt == "i32" else x


class Val:
    """A reference tensor: value, error bound, unreliable mask, dtype."""
    __slots__ = ("v", "e", "bad", "dt")

    def __init__(self, v, dt, e=None, bad=None):
        self.dt = dt
        if dt == "bool":
            self.v = np.asarray(v, dtype=np.bool_)
        elif dt in INTS:
            self.v = np.asarray(v, dtype=np.int64)
        else:
            self.v = np.asarray(v, dtype=np.float64)
        shape = self.v.shape
        self.e = np.zeros(shape) if e is None else np.broadcast_to(np.asarray(e, np.float64), shape).copy()
        self.bad = np.zeros(shape, np.bool_) if bad is None else \
            np.broadcast_to(np.asarray(bad, np.bool_), shape).copy()

    @property
    def shape(self):
        return self.v.shape

    def fv(self):
        """The value as float64 (for float computations on any dtype)."""
        return self.v.astype(np.float64)

    def map(self, fn):
        """A movement op: the same index map on value, bound and mask."""
        return Val(fn(self.v), self.dt, fn(self.e), fn(self.bad))


def const(value, dt):
    """A weak number converted to the op's dtype (a CONST node)."""
    if dt == "bool":
        return Val(np.asarray(bool(value)), dt)
    if dt in INTS:
        if isinstance(value, float):
            value = int(value)
        return Val(np.asarray(wrap_int(value, dt)), dt)
    return Val(round_to(np.asarray(float(value)), dt), dt)


# ---- casts ----

def cast(x, dt):
    if x.dt == dt:
        return x
    if dt == "bool":
        if x.dt in FLOATS:
            r = x.v != 0
            lo, hi = x.v - x.e, x.v + x.e
            amb = (x.e > 0) & ((lo <= 0) & (hi >= 0))
            return Val(r, dt, 0, x.bad | amb)
        return Val(x.v != 0, dt, 0, x.bad)
    if dt in INTS:
        if x.dt in FLOATS:
            r = to_int(x.v, dt)
            amb = (x.e > 0) & ((to_int(x.v - x.e, dt) != r) | (to_int(x.v + x.e, dt) != r))
            amb |= (x.e > 0) & np.isnan(x.v - x.e) & ~np.isnan(x.v)
            return Val(r, dt, 0, x.bad | amb)
        return Val(wrap_int(x.v.astype(np.int64), dt), dt, 0, x.bad)
    # to a float dtype
    src = x.fv()
    r = round_to(src, dt)
    e = x.e + UNIT[dt] * np.abs(np.where(np.isfinite(r), r, 0)) + 0.5 * DENORM_MIN[dt]
    out = Val(r, dt, np.where(np.isfinite(r), e, 0), x.bad)
    _overflow_check(out, src, x.e)
    return out


def _overflow_check(out, exact, e):
    """Marks elements whose rounding may overflow to inf, or not, within e."""
    if out.dt not in FLOATS:
        return
    with np.errstate(all="ignore"):
        lo = round_to(np.abs(exact) - e, out.dt)
        hi = round_to(np.abs(exact) + e, out.dt)
    amb = np.isfinite(exact) & (np.isinf(lo) != np.isinf(hi))
    out.bad |= amb
    # an inf reached from finite values within the bound is exact only if
    # the whole interval overflows
    out.e = np.where(np.isinf(out.v) & np.isfinite(exact), 0.0, out.e)


# ---- elementwise ----

def _bcast(vals):
    shape = np.broadcast_shapes(*[a.shape for a in vals])
    return [Val(np.broadcast_to(a.v, shape), a.dt, np.broadcast_to(a.e, shape),
                np.broadcast_to(a.bad, shape)) for a in vals], shape


def elementwise(fn, args, out_dt, cdt, ulps=0, abs_ulps=None, disc=False, int_fn=None, lipschitz=False):
    """f applied elementwise to Vals already cast to the op's dtype.

    fn works on float64 arrays; int_fn (default fn) on int64 arrays when
    the op's dtype is an integer or bool (exact).  out_dt is the result's
    dtype (bool for comparisons), cdt the dtype the op computes in.
    disc: the op is discontinuous (comparisons, floor, ...): elements whose
    corners disagree are unreliable and the result's error is 0.
    lipschitz: a periodic op with slope at most 1 (sin, cos): the corners of
    an input interval can land on equal values while an extremum lies
    inside (cos of 1e9 +- 64 is anything), so the deviation is also bounded
    by the input's error itself, at most 2.
    """
    args, shape = _bcast(args)
    bad = np.zeros(shape, np.bool_)
    for a in args:
        bad = bad | a.bad
    if cdt not in FLOATS:
        with np.errstate(all="ignore"):
            r = (int_fn or fn)(*[a.v for a in args])
        r = np.asarray(r)
        if out_dt in INTS:
            r = wrap_int(r, out_dt)
        return Val(np.broadcast_to(r, shape), out_dt, 0, bad)
    xs = [a.fv() for a in args]
    with np.errstate(all="ignore"):
        r = np.broadcast_to(np.asarray(fn(*xs), dtype=np.float64), shape)
        dev = np.zeros(shape)
        special_bad = np.zeros(shape, np.bool_)
        finite = np.isfinite(r)
        perturbed = [i for i, a in enumerate(args) if np.any(a.e > 0)]
        for signs in range(1 << len(perturbed)):
            ys = list(xs)
            for k, i in enumerate(perturbed):
                s = 1.0 if (signs >> k) & 1 else -1.0
                ys[i] = xs[i] + s * args[i].e
            c = np.broadcast_to(np.asarray(fn(*ys), dtype=np.float64), shape)
            cf = np.isfinite(c)
            d = np.where(finite & cf, np.abs(c - r), 0.0)
            d = np.where(finite & ~cf, np.inf, d)
            dev = np.maximum(dev, d)
            same = (c == r) | (np.isnan(c) & np.isnan(r))
            special_bad |= ~finite & ~same
        if lipschitz:
            dev = np.maximum(dev, np.minimum(np.broadcast_to(args[0].e, shape), 2.0))
        if disc:
            bad = bad | (dev > 0) | special_bad
            e = np.zeros(shape)
        else:
            bad = bad | special_bad
            scale = np.abs(np.where(finite, r, 0.0))
            e = dev + UNIT[cdt] * ulps * scale
            if abs_ulps:
                k, kind = abs_ulps
                if kind == "x":
                    x = xs[0]
                    e = e + UNIT[cdt] * k * np.where(np.isfinite(x), np.abs(x), 0.0)
                else:
                    e = e + UNIT[cdt] * k
            if out_dt != cdt and out_dt in FLOATS:
                e = e + UNIT[out_dt] * scale
            e = e + 0.5 * DENORM_MIN[out_dt] if out_dt in FLOATS else e
            e = np.where(finite, e, 0.0)
            bad = bad | (finite & np.isinf(e))
    if out_dt == "bool":
        return Val(r != 0, out_dt, 0, bad)
    if out_dt in INTS:
        return Val(to_int(r, out_dt), out_dt, 0, bad)
    out = Val(round_to(r, out_dt), out_dt, e, bad)
    _overflow_check(out, r, e)
    return out


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x) if np.size(x) else np.asarray(x, np.float64)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


UNARY_F = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "abs": np.abs, "neg": np.negative, "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.where(np.isnan(x), x, np.maximum(x, 0.0)),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "silu": lambda x: x * _sigmoid(x),
    "erf": _erf, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
}
EXACT_UNARY = ("abs", "neg", "relu")
DISC_UNARY = ("floor", "ceil", "round")


def unary(op, x):
    """A unary math op; integer inputs of float-only ops compute in f32."""
    dt = x.dt
    if op in EXACT_UNARY and dt in INTS:
        f = {"abs": np.abs, "neg": np.negative, "relu": lambda a: np.maximum(a, 0)}[op]
        return elementwise(f, [x], dt, dt)
    if dt not in FLOATS:
        x = cast(x, "f32")
        dt = "f32"
    ulps = 0 if op in EXACT_UNARY or op in DISC_UNARY else ULPS[op]
    return elementwise(UNARY_F[op], [x], dt, compute_dtype(dt), ulps, ABS_ULPS.get(op),
                       disc=op in DISC_UNARY, lipschitz=op in ("sin", "cos"))


def _fmod_py(a, b):
    r = np.fmod(a, b)
    r = np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
    return np.where(r == 0, np.copysign(0.0, b), r)


def _imod(a, b):
    safe = np.where((b == 0) | (b == -1), 1, b)
    r = np.remainder(a, safe)
    return np.where((b == 0) | (b == -1), 0, r)


def _ipow(a, b):
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    a, b = np.broadcast_arrays(a, b)
    out = np.ones(a.shape, np.int64)
    base = a.copy()
    e = np.where(b < 0, 0, b)
    with np.errstate(all="ignore"):
        for _ in range(64):
            if not np.any(e > 0):
                break
            out = np.where(e & 1, out * base, out)
            base = base * base
            e = e >> 1
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b & 1, -1, 1), 0))
    return np.where(b < 0, neg, out)


def _nanmax(a, b):
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.maximum(a, b))


def _nanmin(a, b):
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.minimum(a, b))


BINARY_F = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "mod": _fmod_py, "pow": np.power, "maximum": _nanmax, "minimum": _nanmin,
}
BINARY_I = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "mod": _imod, "pow": _ipow,
    "maximum": np.maximum, "minimum": np.minimum,
}
COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
           "eq": np.equal, "ne": np.not_equal}


def binary(op, a, b, dt):
    """a OP b with both operands already of dtype dt (the promoted one)."""
    a, b = cast(a, dt), cast(b, dt)
    if op in COMPARE:
        r = elementwise(COMPARE[op], [a, b], "bool", compute_dtype(dt), disc=True)
        if op in ("eq", "ne") and dt in FLOATS:
            # equality is a single point: no corner lands on it, so the
            # result is undetermined wherever |a - b| is within the bounds
            (a2, b2), _ = _bcast([a, b])
            with np.errstate(invalid="ignore"):
                tol = a2.e + b2.e
                r.bad |= (tol > 0) & (np.abs(a2.v - b2.v) <= tol)
        return r
    if op in ("and", "or"):
        f = np.logical_and if op == "and" else np.logical_or
        return elementwise(f, [a, b], "bool", "bool")
    if dt == "bool":   # maximum/minimum of bools
        f = np.logical_or if op == "maximum" else np.logical_and
        return elementwise(f, [a, b], "bool", "bool")
    if dt in INTS:
        return elementwise(BINARY_I[op], [a, b], dt, dt)
    if op == "mod":
        # % jumps where a / b crosses an integer: unreliable there
        r = elementwise(_fmod_py, [a, b], dt, compute_dtype(dt), ULPS["mod"])
        q = elementwise(lambda x, y: np.floor(x / y), [a, b], "f64", "f64", disc=True)
        r.bad |= q.bad
        return r
    ulps = 0 if op in ("maximum", "minimum") else ULPS[op]
    r = elementwise(BINARY_F[op], [a, b], dt, compute_dtype(dt), ulps)
    # a pole between the corners: a divisor (or the base of a negative
    # power) whose interval holds 0 leaves the result undetermined
    if op == "div":
        r.bad |= np.broadcast_to(_holds_zero(b), r.shape)
    elif op == "pow":
        with np.errstate(invalid="ignore"):
            neg = np.broadcast_to(b.v < 0, r.shape)
        r.bad |= neg & np.broadcast_to(_holds_zero(a), r.shape)
    return r


def _holds_zero(x):
    """Elements whose interval [v - e, v + e] holds 0 without being exact."""
    with np.errstate(invalid="ignore"):
        return (x.e > 0) & (np.abs(x.v) <= x.e)


def where(c, a, b, dt):
    a, b = cast(a, dt), cast(b, dt)
    (c, a, b), shape = _bcast([c, a, b])
    v = np.where(c.v, a.v, b.v)
    e = np.where(c.v, a.e, b.e)
    bad = c.bad | np.where(c.v, a.bad, b.bad)
    return Val(v, dt, e, bad)


# ---- reductions ----

def _axes_norm(axes, rank):
    if axes is None:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in axes))


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _check_nonempty(x, axes, name):
    out_numel = 1
    for i, s in enumerate(x.shape):
        if i not in axes:
            out_numel *= s
    if x.v.size == 0 and out_numel > 0:
        raise RefError("empty-reduce", "%s over an empty axis has no value" % name)


def reduce(op, x, axes, keepdims):
    """sum prod max min argmax argmin over `axes` (None = all)."""
    axes = _axes_norm(axes, x.v.ndim)
    kd = dict(axis=axes, keepdims=True)
    dt = x.dt
    if op in ("sum", "prod") and dt == "bool":
        x = cast(x, "i64")
        dt = "i64"
    n = _count(x.shape, axes)
    bad = np.any(x.bad, **kd) if x.v.size else np.zeros(_kshape(x.shape, axes), np.bool_)
    if op in ("max", "min"):
        _check_nonempty(x, axes, op)
        if x.v.size == 0:
            r = np.zeros(_kshape(x.shape, axes), x.v.dtype)
            out = Val(r, dt, 0, bad)
        else:
            if dt in FLOATS:
                r = np.max(x.v, **kd) if op == "max" else np.min(x.v, **kd)   # NaN propagates
            else:
                r = np.max(x.v, **kd) if op == "max" else np.min(x.v, **kd)
            out = Val(r, dt, np.max(x.e, **kd), bad)
    elif op in ("argmax", "argmin"):
        _check_nonempty(x, axes, op)
        assert len(axes) == 1
        ax = axes[0]
        ks = _kshape(x.shape, axes)
        if x.v.size == 0:
            out = Val(np.zeros(ks, np.int64), "i64", 0, bad)
        elif dt not in FLOATS:
            # integers are exact (and past 2^53 a float64 copy would tie)
            f = np.argmax if op == "argmax" else np.argmin
            idx = np.expand_dims(f(x.v, axis=ax), ax)
            out = Val(idx, "i64", 0, bad)
        else:
            xv = x.fv()
            s = xv if op == "argmax" else -xv
            idx = np.argmax(s, axis=ax)
            idx = np.expand_dims(idx, ax)
            best = np.take_along_axis(s, idx, ax)
            ebest = np.take_along_axis(x.e, idx, ax)
            # another element could be the extreme within the error bound
            cand = (s + x.e >= best - ebest) & ((x.e > 0) | (ebest > 0))
            amb = np.sum(cand, axis=ax, keepdims=True) > 1
            amb |= np.any(np.isnan(xv), axis=ax, keepdims=True)
            out = Val(idx, "i64", 0, bad | amb)
    elif dt in INTS:
        f = np.sum if op == "sum" else np.prod
        r = f(x.v, **kd)
        out = Val(wrap_int(r, dt), dt, 0, bad)
    else:
        cdt = compute_dtype(dt)
        u = UNIT[cdt]
        with np.errstate(all="ignore"):
            fin = np.where(np.isfinite(x.v), np.abs(x.v), 0.0)
            if op == "sum":
                r = np.sum(x.v, **kd)
                e = np.sum(x.e, **kd) + n * u * np.sum(np.abs(x.v), **kd)
                # partial sums may overflow in some orders and not in others
                bad = bad | (np.sum(fin, **kd) > MAX[cdt])
            else:
                r = np.prod(x.v, **kd)
                ax_ = np.abs(x.v)
                e = np.prod(ax_ + x.e, **kd) - np.prod(ax_, **kd) + n * u * np.abs(r)
                bad = bad | (np.prod(np.maximum(fin, 1.0), **kd) > MAX[cdt])
            e = np.where(np.isfinite(e), e, np.inf)
            finite = np.isfinite(r)
            if dt != cdt:
                e = e + UNIT[dt] * np.abs(np.where(finite, r, 0))
            e = e + 0.5 * DENORM_MIN[dt]
            bad = bad | (finite & np.isinf(e))
            # a non-finite sum is exact only when all its terms are exact
            exact_terms = np.all(x.e == 0, **kd) if x.v.size else np.ones(_kshape(x.shape, axes), np.bool_)
            bad = bad | (~finite & ~exact_terms)
            e = np.where(finite, e, 0.0)
        out = Val(round_to(r, dt), dt, e, bad)
        _overflow_check(out, r, e)
    if not keepdims:
        out = out.map(lambda a: np.squeeze(a, axis=axes) if axes else a)
    return out


def _kshape(shape, axes):
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def logsumexp(x, axes, keepdims):
    """m + log(sum(exp(x - m))), m the max; computed in f32 for halves/ints."""
    dt = x.dt if x.dt in ("f32", "f64") else "f32"
    out_dt = x.dt if x.dt in FLOATS else "f32"
    x = cast(x, dt)
    axes = _axes_norm(axes, x.v.ndim)
    _check_nonempty(x, axes, "max")
    kd = dict(axis=axes, keepdims=True)
    n = _count(x.shape, axes)
    u = UNIT[dt]
    ks = _kshape(x.shape, axes)
    if x.v.size == 0:
        out = Val(np.zeros(ks), out_dt)
    else:
        with np.errstate(all="ignore"):
            m = np.max(x.v, **kd)
            r = m + np.log(np.sum(np.exp(x.v - m), **kd))
            e = np.max(x.e, **kd) + u * (n + 16 + np.abs(np.where(np.isfinite(m), m, 0)) +
                                         2 * np.abs(np.where(np.isfinite(r), r, 0)))
            if out_dt != dt:
                e = e + UNIT[out_dt] * np.abs(np.where(np.isfinite(r), r, 0))
            bad = np.any(x.bad, **kd) | ~np.isfinite(r)
        out = Val(round_to(r, out_dt), out_dt, np.where(np.isfinite(r), e, 0), bad)
    if not keepdims:
        out = out.map(lambda a: np.squeeze(a, axis=axes) if axes else a)
    return out


# ---- matmul ----

def matmul(a, b, dt):
    """a @ b with numpy's 1-D rules; ints stay ints, bools become f32."""
    a, b = cast(a, dt), cast(b, dt)
    a1, b1 = a.v.ndim == 1, b.v.ndim == 1
    av, ae, ab = a.v, a.e, a.bad
    bv, be, bb = b.v, b.e, b.bad
    if a1:
        av, ae, ab = av[None, :], ae[None, :], ab[None, :]
    if b1:
        bv, be, bb = bv[:, None], be[:, None], bb[:, None]
    K = av.shape[-1]
    fa = ab.astype(np.float64)
    fb = bb.astype(np.float64)
    bad = (np.matmul(fa, np.ones(bv.shape)) + np.matmul(np.ones(av.shape), fb)) > 0
    if dt in INTS:
        r = wrap_int(np.matmul(av, bv), dt)
        out = Val(r, dt, 0, bad)
    else:
        cdt = compute_dtype(dt)
        with np.errstate(all="ignore"):
            if np.all(np.isfinite(av)) and np.all(np.isfinite(bv)):
                r = np.matmul(av, bv)
            else:
                # BLAS does not propagate NaN and inf faithfully: sum the
                # products themselves
                r = np.sum(av[..., :, :, None] * bv[..., None, :, :], axis=-2)
            A, B = np.abs(av), np.abs(bv)
            AB = np.matmul(np.where(np.isfinite(A), A, 0.0), np.where(np.isfinite(B), B, 0.0))
            # a product or partial sum past the largest finite value: inf
            # without FMA, finite with it, NaN against an inf term
            over = AB > MAX[cdt]
            e = np.matmul(A + ae, B + be) - AB + K * UNIT[cdt] * AB
            finite = np.isfinite(r)
            if dt != cdt:
                e = e + UNIT[dt] * np.abs(np.where(finite, r, 0))
            e = e + 0.5 * DENORM_MIN[dt]
            e = np.where(np.isfinite(e), e, np.inf)
            exact = (np.matmul((ae > 0).astype(np.float64), np.ones(bv.shape)) +
                     np.matmul(np.ones(av.shape), (be > 0).astype(np.float64))) == 0
            bad = bad | (finite & np.isinf(e)) | (~finite & ~exact) | over
            e = np.where(finite, e, 0.0)
        out = Val(round_to(r, dt), dt, e, bad)
        _overflow_check(out, r, e)
    if a1 and b1:
        out = out.map(lambda t: t[..., 0, 0])
    elif a1:
        out = out.map(lambda t: t[..., 0, :])
    elif b1:
        out = out.map(lambda t: t[..., 0])
    return out


# ---- movement ----

def slice_axis(x, axis, start, step, count):
    """out[i] = x[start + step * i] along `axis`, with eager's range check."""
    d = x.shape[axis]
    if count < 0:
        raise RefError("negative-size", "size evaluates to %d" % count)
    if count > 0:
        last = start + step * (count - 1)
        if start < 0 or start >= d or last < 0 or last >= d:
            raise RefError("slice-range", "slice out of range: size %d, start %d, step %d, %d elements"
                           % (d, start, step, count))
    idx = start + step * np.arange(count)
    return x.map(lambda a: np.take(a, idx, axis=axis))


def take(x, idx, axis):
    d = x.shape[axis]
    iv = idx.v
    # docs/language.md: the indices that are read are checked; an empty
    # result (another axis of size 0) reads nothing and checks none
    n_out = int(np.prod(x.shape[:axis] + tuple(iv.shape) + x.shape[axis + 1:]))
    if n_out and (np.any(iv < -d) or np.any(iv >= d)):
        raise RefError("take-range", "take: index out of range for an axis of size %d" % d)
    j = np.where(iv < 0, iv + d, iv)
    if not n_out:   # nothing is read: any index stands for an empty gather
        shape = x.shape[:axis] + tuple(iv.shape) + x.shape[axis + 1:]
        return x.map(lambda a: np.zeros(shape, dtype=a.dtype))
    out = x.map(lambda a: np.take(a, j, axis=axis))
    # an unreliable index makes its whole gathered row unreliable
    ib = idx.bad.reshape((1,) * axis + idx.bad.shape + (1,) * (x.v.ndim - axis - 1))
    out.bad = out.bad | np.broadcast_to(ib, out.shape)
    return out


def concat(xs, axis, dt):
    xs = [cast(x, dt) for x in xs]
    return Val(np.concatenate([x.v for x in xs], axis), dt,
               np.concatenate([x.e for x in xs], axis), np.concatenate([x.bad for x in xs], axis))


def check_shape(shape, what="size"):
    for s in shape:
        if s < 0:
            raise RefError("negative-size", "%s evaluates to %d" % (what, s))

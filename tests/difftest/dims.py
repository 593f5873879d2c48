"""dims.py - sizes as polynomials over symbolic sizes, the way tdsl sees them.

A tdsl dimension is a literal, a symbol bound at call time (`N`) or a
polynomial of symbols (`N - 1`, `2 * N`, `N * M`); two shapes are equal
only when their sizes are equal as polynomials (docs/language.md, "Types
and shapes").  The generator needs exactly that equality to decide what
broadcasts, concatenates or multiplies at compile time, and the reference
needs to evaluate sizes for one binding of the symbols.

A Dim is immutable and hashable: a frozenset of (monomial, coefficient)
with monomials as sorted tuples of symbol names (() is the constant term).
"""


class Dim:
    __slots__ = ("terms",)

    def __init__(self, terms=None):
        clean = {}
        for mono, coef in (terms or {}).items():
            if coef:
                clean[mono] = clean.get(mono, 0) + coef
        self.terms = frozenset((m, c) for m, c in clean.items() if c)

    # ---- construction ----
    @staticmethod
    def of(x):
        """A Dim from an int, a symbol name or a Dim."""
        if isinstance(x, Dim):
            return x
        if isinstance(x, int):
            return Dim({(): x})
        if isinstance(x, str):
            return Dim({(x,): 1})
        raise TypeError("not a size: %r" % (x,))

    def _dict(self):
        return dict(self.terms)

    def __add__(self, other):
        d = self._dict()
        for m, c in Dim.of(other).terms:
            d[m] = d.get(m, 0) + c
        return Dim(d)

    __radd__ = __add__

    def __neg__(self):
        return Dim({m: -c for m, c in self.terms})

    def __sub__(self, other):
        return self + (-Dim.of(other))

    def __rsub__(self, other):
        return Dim.of(other) - self

    def __mul__(self, other):
        o = Dim.of(other)
        d = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2))
                d[m] = d.get(m, 0) + c1 * c2
        return Dim(d)

    __rmul__ = __mul__

    def div_exact(self, k):
        """self / k for an int k when every coefficient divides; else None."""
        if k == 0 or any(c % k for _, c in self.terms):
            return None
        return Dim({m: c // k for m, c in self.terms})

    # ---- queries ----
    def __eq__(self, other):
        if isinstance(other, (int, str)):
            other = Dim.of(other)
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self):
        return hash(self.terms)

    def is_const(self):
        return all(m == () for m, _ in self.terms)

    def const(self):
        """The value of a constant Dim (0 for the empty polynomial)."""
        assert self.is_const()
        return sum(c for _, c in self.terms)

    def is_sym(self):
        """A bare symbol (`N`), which an input axis can bind."""
        if len(self.terms) != 1:
            return False
        mono, coef = next(iter(self.terms))
        return coef == 1 and len(mono) == 1

    def symbols(self):
        return sorted({s for m, _ in self.terms for s in m})

    def eval(self, env):
        total = 0
        for m, c in self.terms:
            v = c
            for s in m:
                v *= env[s]
            total += v
        return total

    def may_be_negative(self):
        """Whether some binding of symbols >= 0 makes this negative."""
        return any(c < 0 for _, c in self.terms)

    # ---- rendering in tdsl syntax ----
    def render(self):
        if not self.terms:
            return "0"
        items = sorted(self.terms, key=lambda t: (-len(t[0]), t[0]))
        items = [t for t in items if t[1] > 0] + [t for t in items if t[1] < 0]
        out = ""
        for i, (m, c) in enumerate(items):
            mag = abs(c)
            body = " * ".join(list(m)) if m else str(mag)
            if m and mag != 1:
                body = "%d * %s" % (mag, body)
            if i == 0:
                out = ("0 - " + body) if c < 0 else body
            else:
                out += (" - " if c < 0 else " + ") + body
        return out

    def __repr__(self):
        return self.render()

    def __str__(self):
        return self.render()


def dims(*xs):
    return tuple(Dim.of(x) for x in xs)


def numel(shape):
    n = Dim.of(1)
    for d in shape:
        n = n * d
    return n


def eval_shape(shape, env):
    return tuple(d.eval(env) for d in shape)


def render_shape(shape):
    return "[" + ", ".join(d.render() for d in shape) + "]"

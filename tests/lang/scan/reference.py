#!/usr/bin/python3
"""The expected values of tests/lang/scan/*.td: each scan of those files
written out as a Python loop in numpy float64 (run by hand; prints what
the `# expect:` lines say, at print()'s 4 decimals)."""
import sys
import numpy as np

def fmt(a):
    return np.array2string(np.asarray(a), precision=4, floatmode="fixed", separator=", ")

xs = np.arange(12.0).reshape(4, 3) * 0.1
def cell(h, x):
    h2 = np.tanh(h * 0.5 + x)
    return h2, h2 * 2.0
h = np.zeros(3); ys = []
for x in xs:
    h, y = cell(h, x); ys.append(y)
print("h", fmt(h)); print("ys", fmt(ys[0]), fmt(ys[3]))
print("fold", fmt(xs.sum(0)))
h = np.zeros(3); yr = [None] * 4
for t in range(3, -1, -1):
    h, yr[t] = cell(h, xs[t])
print("reverse", fmt(h), fmt(yr[0]), fmt(yr[3]))
a, b = np.ones(2), np.full(2, 2.0); d = []
for t in range(4):
    u, v = xs[t, 0:2], xs[t, 1:3] + 1.0
    d.append(a - b); a, b = a + u, b * v
print("tuples", fmt(a), fmt(b), fmt(d[3]))
w = np.arange(9.0).reshape(3, 3) * 0.1 - 0.3
x3 = np.arange(24.0).reshape(4, 2, 3) * 0.05
h = np.ones((2, 3)); s = []
for t in range(4):
    s.append(h.sum()); h = np.tanh(h @ w + x3[t] + 0.25)
print("args", fmt(h[1]), fmt(s))
c = 0; rs = []
for t in range(4):
    c += 0 + 1 + 2
    rs.append(xs[t].sum() + c)
print("nested", c, fmt(rs))
wm = np.full((3, 3), 0.1); h = np.zeros((2, 3)); prev = []
for t in range(4):
    prev.append(h); h = np.tanh(h @ wm + x3[t])
print("model", fmt(h[0]), fmt(prev[1][0]))

if "--grad" in sys.argv:   # grad.td: central differences of the loss
    def loss(w, h0, xs, reverse=False):
        h, s = h0, 0.0
        for t in (range(3, -1, -1) if reverse else range(4)):
            h = np.tanh(h @ w + xs[t]); s += (h * h).sum()
        return (h * 3.0).sum() + s
    def fd(f, a, eps=1e-6):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            ap, am = a.copy(), a.copy(); ap[i] += eps; am[i] -= eps
            g[i] = (f(ap) - f(am)) / (2 * eps)
        return g
    h0 = np.arange(6.0).reshape(2, 3) * 0.1
    print("loss", round(loss(w, h0, x3), 4))
    gw = fd(lambda a: loss(a, h0, x3), w)
    print("dw", fmt(gw[0]), fmt(gw[2]))
    print("dh0", fmt(fd(lambda a: loss(w, a, x3), h0)[1]))
    gx = fd(lambda a: loss(w, h0, a), x3)
    print("dxs", fmt(gx[0][0]), fmt(gx[3][1]))
    print("reverse", fmt(fd(lambda a: loss(a, h0, x3, True), w)[1]), fmt(fd(lambda a: loss(w, a, x3, True), h0)[0]))

if "--checkpoint" in sys.argv:   # checkpoint.td: central differences, T = 7 steps
    x7 = np.arange(42.0).reshape(7, 2, 3) * 0.05
    h0 = np.arange(6.0).reshape(2, 3) * 0.1
    def loss7(w, h0, xs, reverse=False):
        h, s = h0, 0.0
        for t in (range(6, -1, -1) if reverse else range(7)):
            h = np.tanh(h @ w + xs[t]); s += (h * h).sum()
        return (h * 3.0).sum() + s
    def loss_i(w, h0):
        h = h0
        for t in range(7):
            h = np.tanh(h @ w + t * 0.1)
        return h.sum()
    def fd(f, a, eps=1e-6):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            ap, am = a.copy(), a.copy(); ap[i] += eps; am[i] -= eps
            g[i] = (f(ap) - f(am)) / (2 * eps)
        return g
    print("loss", fmt(loss7(w, h0, x7)))
    gw = fd(lambda a: loss7(a, h0, x7), w)
    print("dw", fmt(gw[0]), fmt(gw[2]))
    print("dh0", fmt(fd(lambda a: loss7(w, a, x7), h0)[1]))
    gx = fd(lambda a: loss7(w, h0, a), x7)
    print("dxs", fmt(gx[0][0]), fmt(gx[6][1]))
    print("reverse", fmt(fd(lambda a: loss7(a, h0, x7, True), w)[1]), fmt(fd(lambda a: loss7(w, a, x7, True), h0)[0]),
          fmt(fd(lambda a: loss7(w, h0, a, True), x7)[6][0]))
    print("index", fmt(fd(lambda a: loss_i(a, h0), w)[1]), fmt(fd(lambda a: loss_i(w, a), h0)[0]))

#!/usr/bin/python3
"""make_refs.py - reference gradients from PyTorch autograd for tests/grad_models.sh.

Writes, next to this script, for two models written independently of tdsl
(a 12-16-16-5 MLP with cross-entropy, and a pre-norm transformer block as
stdlib/nn.td's TransformerBlock, with a weighted-sum loss):
  <model>_weights.safetensors  the weights (f32, PyTorch state_dict names)
  <model>_<input>.npy          the inputs
  <model>_grads.safetensors    the loss (key "loss") and d loss / d weight
                               per weight, computed in float64
Run with Debian's python3 (python3-torch, python3-numpy):
  /usr/bin/python3 tests/data/grad_ref/make_refs.py
The files are small and checked in; the test reads them, so the test does
not need PyTorch.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from safetensors_io import save as save_safetensors  # noqa: E402  (tests/safetensors_io.py)


def linear(x, w, b):
    return x @ w.T + b


def grads_of(loss_fn, weights):
    """loss and d loss / d w in float64 from f32 weights."""
    w64 = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in weights.items()}
    loss = loss_fn(w64)
    loss.backward()
    out = {"loss": np.array(loss.item(), dtype=np.float64)}
    for k, t in w64.items():
        out[k] = t.grad.numpy().astype(np.float64)
    return out


def mlp(rng):
    dims = [(16, 12), (16, 16), (5, 16)]
    w = {}
    for i, (o, n) in enumerate(dims, 1):
        w[f"net.fc{i}.weight"] = rng.uniform(-0.4, 0.4, (o, n)).astype(np.float32)
        w[f"net.fc{i}.bias"] = rng.uniform(-0.4, 0.4, (o,)).astype(np.float32)
    x = rng.normal(0, 1, (6, 12)).astype(np.float32)
    y = np.array([0, 4, 2, 2, 1, 3], dtype=np.int64)

    def loss_fn(p):
        h = torch.tensor(x, dtype=torch.float64)
        h = torch.relu(linear(h, p["net.fc1.weight"], p["net.fc1.bias"]))
        h = torch.tanh(linear(h, p["net.fc2.weight"], p["net.fc2.bias"]))
        logits = linear(h, p["net.fc3.weight"], p["net.fc3.bias"])
        return torch.nn.functional.cross_entropy(logits, torch.tensor(y), label_smoothing=0.1)

    return w, {"x": x, "y": y}, grads_of(loss_fn, w)


def block(rng):
    d, heads, hidden, B, T = 16, 2, 32, 2, 5
    w = {}
    for name, shape in [("ln1.weight", (d,)), ("ln1.bias", (d,)),
                        ("attn.q.weight", (d, d)), ("attn.q.bias", (d,)),
                        ("attn.k.weight", (d, d)), ("attn.k.bias", (d,)),
                        ("attn.v.weight", (d, d)), ("attn.v.bias", (d,)),
                        ("attn.o.weight", (d, d)), ("attn.o.bias", (d,)),
                        ("ln2.weight", (d,)), ("ln2.bias", (d,)),
                        ("mlp.fc1.weight", (hidden, d)), ("mlp.fc1.bias", (hidden,)),
                        ("mlp.fc2.weight", (d, hidden)), ("mlp.fc2.bias", (d,))]:
        lo = 0.5 if name.startswith("ln") and name.endswith("weight") else -0.3
        hi = 1.5 if lo == 0.5 else 0.3
        w["net." + name] = rng.uniform(lo, hi, shape).astype(np.float32)
    x = rng.normal(0, 1, (B, T, d)).astype(np.float32)
    r = rng.normal(0, 1, (B, T, d)).astype(np.float32)

    def loss_fn(p):
        g = lambda k: p["net." + k]
        xt = torch.tensor(x, dtype=torch.float64)
        ln = lambda v, k: torch.nn.functional.layer_norm(v, (d,), g(k + ".weight"), g(k + ".bias"), 1e-5)
        a = ln(xt, "ln1")
        split = lambda v: v.reshape(B, T, heads, d // heads).transpose(1, 2)
        q = split(linear(a, g("attn.q.weight"), g("attn.q.bias")))
        k = split(linear(a, g("attn.k.weight"), g("attn.k.bias")))
        v = split(linear(a, g("attn.v.weight"), g("attn.v.bias")))
        s = (q @ k.transpose(-1, -2)) * (1 / np.sqrt(d // heads))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        s = torch.where(mask, s, torch.tensor(-1e30, dtype=torch.float64))
        att = torch.softmax(s, dim=-1) @ v
        att = att.transpose(1, 2).reshape(B, T, d)
        h = xt + linear(att, g("attn.o.weight"), g("attn.o.bias"))
        m = linear(torch.nn.functional.gelu(linear(ln(h, "ln2"), g("mlp.fc1.weight"), g("mlp.fc1.bias"))),
                   g("mlp.fc2.weight"), g("mlp.fc2.bias"))
        out = h + m
        return (out * torch.tensor(r, dtype=torch.float64)).sum()

    return w, {"x": x, "r": r}, grads_of(loss_fn, w)


def main():
    rng = np.random.default_rng(15)
    for name, make in [("mlp", mlp), ("block", block)]:
        w, inputs, grads = make(rng)
        save_safetensors(os.path.join(HERE, f"{name}_weights.safetensors"), w)
        for k, a in inputs.items():
            np.save(os.path.join(HERE, f"{name}_{k}.npy"), a)
        save_safetensors(os.path.join(HERE, f"{name}_grads.safetensors"), grads)
        print(f"{name}: loss {float(grads['loss']):.9g}, {len(w)} weights")


if __name__ == "__main__":
    main()

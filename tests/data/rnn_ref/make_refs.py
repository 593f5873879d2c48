#!/usr/bin/python3
"""make_refs.py - PyTorch references for tests/rnn_models.sh: torch.nn.LSTM
and torch.nn.GRU (one layer), forward and autograd gradients.

Writes, next to this script, for each of lstm and gru (input 4, hidden 6,
T = 5 steps, batch 3, random weights):
  <m>_weights.safetensors  the weights, f32, named as a module `rnn` of a
                           container would be (rnn.weight_ih_l0, ...)
  <m>_x.npy, <m>_r.npy     the input [T, B, 4] and a loss weighting [T, B, 6]
  <m>_ref.safetensors      in float64: the output, h_n (and c_n), the loss
                           sum(output * r) + 2 sum(h_n) (+ sum(c_n)) and its
                           gradient per weight
Run by hand with Debian's python3 (python3-torch, python3-numpy):
  /usr/bin/python3 tests/data/rnn_ref/make_refs.py
The files are small and checked in, so the test does not need PyTorch.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from safetensors_io import save as save_safetensors  # noqa: E402  (tests/safetensors_io.py)

T, B, IN, H = 5, 3, 4, 6


def make(kind, seed):
    rng = np.random.default_rng(seed)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    mod = cls(IN, H).double()
    weights = {}
    with torch.no_grad():
        for name, p in mod.named_parameters():
            w = rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)
            p.copy_(torch.tensor(w, dtype=torch.float64))
            weights["rnn." + name] = w
    x = rng.normal(0, 1, (T, B, IN)).astype(np.float32)
    r = rng.normal(0, 1, (T, B, H)).astype(np.float32)
    y, state = mod(torch.tensor(x, dtype=torch.float64))
    ref = {"output": y.detach().numpy()}
    if kind == "lstm":
        h, c = state
        loss = (y * torch.tensor(r, dtype=torch.float64)).sum() + 2 * h.sum() + c.sum()
        ref["c_n"] = c.detach().numpy()
    else:
        h = state
        loss = (y * torch.tensor(r, dtype=torch.float64)).sum() + 2 * h.sum()
    ref["h_n"] = h.detach().numpy()
    loss.backward()
    ref["loss"] = np.array(loss.item(), dtype=np.float64)
    for name, p in mod.named_parameters():
        ref["grad.rnn." + name] = p.grad.numpy()
    save_safetensors(os.path.join(HERE, f"{kind}_weights.safetensors"), weights)
    save_safetensors(os.path.join(HERE, f"{kind}_ref.safetensors"), {k: np.asarray(v, dtype=np.float64) for k, v in ref.items()})
    np.save(os.path.join(HERE, f"{kind}_x.npy"), x)
    np.save(os.path.join(HERE, f"{kind}_r.npy"), r)


make("lstm", 1)
make("gru", 2)

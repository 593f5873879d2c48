#!/usr/bin/python3
"""make_refs.py - reference trajectories of torch.optim for tests/optim_steps.sh.

A 4-3-2 tanh MLP with an MSE loss, trained for 5 steps on one fixed batch by
each optimizer configuration below, in float64 from the same f32 initial
weights.  Writes next to this script:
  x.npy, y.npy                   the batch
  <config>_init.safetensors      the initial weights and zero optimizer state,
                                 under tdsl's names (optim.td: the state of
                                 parameter P is P.exp_avg, ..., the step count
                                 opt.num_steps)
  <config>_ref.safetensors       the weights after 5 steps and the 5 losses
Run with Debian's python3 (python3-torch, python3-numpy):
  /usr/bin/python3 tests/data/optim_ref/make_refs.py
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from safetensors_io import save as save_safetensors  # noqa: E402  (tests/safetensors_io.py)
STEPS = 5


def cosine_warmup(warmup, total, min_factor=0.0):
    """optim.CosineWarmup's factor at 1-based step t."""
    def factor(t):
        if t <= warmup:
            return t / max(warmup, 1)
        p = min(max((t - warmup) / max(total - warmup, 1), 0.0), 1.0)
        return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * p))
    return factor


# name: (optimizer factory, state names per parameter, schedule factor or None, clip norm or None)
CONFIGS = {
    "sgd": (lambda p: torch.optim.SGD(p, lr=0.1), [], None, None),
    "sgd_momentum": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
                     ["momentum_buffer"], None, None),
    "sgd_nesterov": (lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
                     ["momentum_buffer"], None, None),
    "adam": (lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.01), ["exp_avg", "exp_avg_sq"], None, None),
    "adamw": (lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1), ["exp_avg", "exp_avg_sq"], None, None),
    "adamw_cosine": (lambda p: torch.optim.AdamW(p, lr=0.02), ["exp_avg", "exp_avg_sq"], cosine_warmup(2, 5, 0.1), None),
    "sgd_steplr": (lambda p: torch.optim.SGD(p, lr=0.1), [], lambda t: 0.5 ** ((t - 1) // 2), None),
    "sgd_clip": (lambda p: torch.optim.SGD(p, lr=0.1), [], None, 0.05),
}


def main():
    rng = np.random.default_rng(17)
    init = {
        "net.fc1.weight": rng.uniform(-0.5, 0.5, (3, 4)).astype(np.float32),
        "net.fc1.bias": rng.uniform(-0.5, 0.5, (3,)).astype(np.float32),
        "net.fc2.weight": rng.uniform(-0.5, 0.5, (2, 3)).astype(np.float32),
        "net.fc2.bias": rng.uniform(-0.5, 0.5, (2,)).astype(np.float32),
    }
    x = rng.normal(0, 1, (5, 4)).astype(np.float32)
    y = rng.normal(0, 1, (5, 2)).astype(np.float32)
    np.save(os.path.join(HERE, "x.npy"), x)
    np.save(os.path.join(HERE, "y.npy"), y)
    for name, (make, states, factor, clip) in CONFIGS.items():
        params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in init.items()}
        opt = make(list(params.values()))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: factor(k + 1)) if factor else None
        xt, yt = torch.tensor(x, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            h = torch.tanh(xt @ params["net.fc1.weight"].T + params["net.fc1.bias"])
            out = h @ params["net.fc2.weight"].T + params["net.fc2.bias"]
            loss = ((out - yt) ** 2).mean()
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_(list(params.values()), clip)
            opt.step()
            if sched:
                sched.step()
            losses.append(loss.item())
        first = dict(init)
        for k, v in init.items():
            for s in states:
                first[f"{k}.{s}"] = np.zeros_like(v)
        first["opt.num_steps"] = np.zeros((), dtype=np.float32)
        save_safetensors(os.path.join(HERE, f"{name}_init.safetensors"), first)
        ref = {k: t.detach().numpy().astype(np.float64) for k, t in params.items()}
        ref["losses"] = np.array(losses, dtype=np.float64)
        save_safetensors(os.path.join(HERE, f"{name}_ref.safetensors"), ref)
        print(f"{name}: losses {' '.join(f'{l:.6f}' for l in losses)}")


if __name__ == "__main__":
    main()

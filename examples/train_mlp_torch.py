#!/usr/bin/python3
"""train_mlp_torch.py - examples/train_mlp.td's recipe in PyTorch, to compare
accuracies: a 784-512-512-10 ReLU MLP on Fashion-MNIST, inputs (x/255 -
0.2860)/0.3530, AdamW (lr 1e-3, weight decay 1e-4), batch 128, shuffled
every epoch, cross-entropy, the learning rate warmed up linearly over 200
steps then decayed on a cosine to 0 at the end of the last epoch
(optim.CosineWarmup(200, 469 * epochs)).  Prints the test accuracy after
each epoch.

  /usr/bin/python3 examples/train_mlp_torch.py [--epochs 8] [--threads 2] [--seed 0]

Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
"""
import argparse, gzip, math, os, struct, time

import numpy as np
import torch

D = "/usr/share/datasets/fashion-mnist"


def idx(name):
    with gzip.open(os.path.join(D, name)) as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    rank = magic & 0xFF
    dims = struct.unpack(">%dI" % rank, data[4:4 + 4 * rank])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    prep = lambda x: ((torch.from_numpy(x.astype(np.float32)) / 255 - 0.2860) / 0.3530).reshape(len(x), 784)
    xtr, ytr = prep(idx("train-images-idx3-ubyte.gz")), torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    xte, yte = prep(idx("t10k-images-idx3-ubyte.gz")), torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    m = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-4)
    steps_per_epoch, warmup = math.ceil(len(xtr) / 128), 200
    total = steps_per_epoch * a.epochs

    def factor(k):   # optim.CosineWarmup at 1-based step t = k + 1
        t = k + 1
        if t <= warmup:
            return t / warmup
        p = min(max((t - warmup) / max(total - warmup, 1), 0.0), 1.0)
        return 0.5 * (1 + math.cos(math.pi * p))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    g = torch.Generator().manual_seed(a.seed)
    t0 = time.time()
    for e in range(a.epochs):
        perm = torch.randperm(len(xtr), generator=g)
        for i in range(0, len(xtr), 128):
            b = perm[i:i + 128]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(xtr[b]), ytr[b]).backward()
            opt.step()
            sched.step()
        with torch.no_grad():
            acc = (m(xte).argmax(-1) == yte).float().mean().item()
        print("epoch %d: test accuracy %.2f%% (%.0f s)" % (e + 1, 100 * acc, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""make_refs.py - PyTorch references for tests/conv_refs.sh: conv1d, conv2d,
conv_transpose2d, max_pool2d and avg_pool2d, forward and backward.

Each case is one call of torch.nn.functional on f32 tensors drawn here
(x, the weight w, the bias b) and a cotangent r; the loss is sum(y * r),
and d loss / d x, w, b are the vector-Jacobian products of the op.  For
case NAME this writes, next to this script:
  NAME_weights.safetensors  net.x, net.w, net.b (f32), the tensors the tdsl
                            model of the case loads as parameters
  NAME_r.npy                the cotangent r (f32), the model's input
  NAME_grads.safetensors    "loss", the output "y" and d loss / d each
                            parameter, in float64
and cases.td, the tdsl models (one per case, the same call in tdsl's
spelling, returning the loss and y).  Last, "lenet": examples/lenet.td's
network built from torch.nn layers (PyTorch's own initialisation and
state_dict names), its input x (lenet_x.npy) and its weight gradients.  Run by hand with Debian's python3 (python3-torch):
  /usr/bin/python3 tests/data/conv_ref/make_refs.py
The files are small and checked in; the test needs numpy only.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from safetensors_io import save as save_safetensors  # noqa: E402  (tests/safetensors_io.py)

# name, x shape, w shape (None: a pooling), bias?, tdsl arguments, torch call
CASES = [
    ("conv_basic", (2, 3, 7, 8), (4, 3, 3, 3), True, "", lambda x, w, b: F.conv2d(x, w, b)),
    ("conv_stride_pad", (2, 3, 9, 8), (5, 3, 3, 3), True, "stride = 2, padding = 1",
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1)),
    ("conv_dilation", (1, 2, 9, 9), (3, 2, 3, 3), False, "padding = 2, dilation = 2",
     lambda x, w, b: F.conv2d(x, w, None, padding=2, dilation=2)),
    ("conv_groups", (2, 4, 6, 6), (6, 2, 3, 3), True, "stride = [2, 1], padding = 1, groups = 2",
     lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)),
    ("conv_depthwise", (2, 4, 7, 7), (4, 1, 3, 3), True, "padding = 1, groups = 4",
     lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4)),
    ("conv_asym", (2, 3, 8, 11), (4, 3, 2, 5), False, "stride = [1, 2], padding = [2, 1], dilation = [2, 1]",
     lambda x, w, b: F.conv2d(x, w, None, stride=(1, 2), padding=(2, 1), dilation=(2, 1))),
    ("conv_same_even", (1, 3, 6, 7), (2, 3, 4, 4), True, "padding = \"same\"",
     lambda x, w, b: F.conv2d(x, w, b, padding="same")),
    ("conv_1x1", (2, 3, 5, 5), (6, 3, 1, 1), True, "", lambda x, w, b: F.conv2d(x, w, b)),
    ("conv1d", (2, 3, 10), (4, 3, 3), True, "stride = 2, padding = 1",
     lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1)),
    ("maxpool_2", (2, 3, 8, 8), None, False, "2", lambda x: F.max_pool2d(x, 2)),
    ("maxpool_ceil", (2, 3, 9, 10), None, False, "3, stride = 2, padding = 1, ceil_mode = true",
     lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)),
    ("maxpool_dilation", (1, 2, 7, 7), None, False, "2, stride = 1, dilation = 2",
     lambda x: F.max_pool2d(x, 2, stride=1, dilation=2)),
    ("maxpool_ties", (1, 2, 6, 6), None, False, "[3, 2], stride = [1, 2]",
     lambda x: F.max_pool2d(x, (3, 2), stride=(1, 2))),
    ("avgpool_2", (2, 3, 8, 8), None, False, "2", lambda x: F.avg_pool2d(x, 2)),
    ("avgpool_ceil_pad", (1, 2, 8, 9), None, False, "3, stride = 2, padding = 1, ceil_mode = true",
     lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)),
    ("avgpool_ceil_nopad", (1, 2, 8, 9), None, False,
     "3, stride = 2, padding = 1, ceil_mode = true, count_include_pad = false",
     lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avgpool_rect", (2, 2, 7, 6), None, False, "[3, 2], stride = [2, 1], padding = [1, 0], count_include_pad = false",
     lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 1), padding=(1, 0), count_include_pad=False)),
    # the last window would start at the end of the padded input: dropped
    ("maxpool_ceil_edge", (1, 2, 5, 7), None, False, "2, padding = 1, ceil_mode = true",
     lambda x: F.max_pool2d(x, 2, padding=1, ceil_mode=True)),
    ("avgpool_ceil_edge", (1, 2, 5, 7), None, False, "2, padding = 1, ceil_mode = true",
     lambda x: F.avg_pool2d(x, 2, padding=1, ceil_mode=True)),
    # transposed convolutions: the weight is [in, out / groups, k...]
    ("convt_stride", (2, 4, 5, 6), (4, 3, 3, 3), True, "stride = 2, padding = 1, output_padding = 1",
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)),
    ("convt_groups_dilation", (1, 4, 4, 5), (4, 2, 3, 2), False,
     "stride = [2, 1], padding = [1, 3], groups = 2, dilation = [1, 2]",
     lambda x, w, b: F.conv_transpose2d(x, w, None, stride=(2, 1), padding=(1, 3), groups=2, dilation=(1, 2))),
]


def bias_size(name, ws):
    """The output channels: the weight's axis 0, or 1 for a transposed
    convolution (the cases with a bias have groups = 1)."""
    return ws[1] if name.startswith("convt") else ws[0]


def fmt_shape(s):
    return "f32[" + ", ".join(str(d) for d in s) + "]"


def model_of(name, xs, ws, bias, args, ys):
    """The tdsl model of one case: the tensors as parameters, the loss."""
    cam = "".join(p.capitalize() for p in name.split("_"))
    lines = [f"model {cam} {{", f"  param x: {fmt_shape(xs)} = normal(0, 1)"]
    if ws is None:
        op = "max_pool2d" if name.startswith("max") else "avg_pool2d"
        call = f"{op}(x, {args})"
    else:
        lines.append(f"  param w: {fmt_shape(ws)} = normal(0, 1)")
        if bias:
            lines.append(f"  param b: f32[{bias_size(name, ws)}] = normal(0, 1)")
        op = "conv_transpose2d" if name.startswith("convt") else "conv1d" if len(xs) == 3 else "conv2d"
        call = f"{op}(x, w" + (", b" if bias else "") + (", " + args if args else "") + ")"
    lines.append(f"  fn forward(r) {{")
    lines.append(f"    let y = {call}")
    lines.append("    (sum(y * r), y)")
    lines.append("  }")
    lines.append("}")
    lines.append(f"model {cam}Grad {{")
    lines.append(f"  net = {cam}()")
    lines.append("  fn loss(r) { net(r) }")
    lines.append(f"  fn grads(r: {fmt_shape(ys)}) {{ value_and_grad(loss, wrt = net, has_aux = true)(r) }}")
    lines.append("}")
    return "\n".join(lines)


LENET_TD = """model LeNet {
  conv1 = nn.Conv2d(1, 6, 5, padding = 2)
  conv2 = nn.Conv2d(6, 16, 5)
  pool = nn.MaxPool2d(2)
  fc1 = nn.Linear(400, 120)
  fc2 = nn.Linear(120, 84)
  fc3 = nn.Linear(84, 10)
  fn forward(x, r) {
    let h = pool(relu(conv2(pool(relu(conv1(x))))))
    let y = fc3(relu(fc2(relu(fc1(reshape(h, [-1, 400]))))))
    (sum(y * r), y)
  }
}
model LenetGrad {
  net = LeNet()
  fn loss(x, r) { net(x, r) }
  fn grads(x: f32[N, 1, 28, 28], r: f32[N, 10]) { value_and_grad(loss, wrt = net, has_aux = true)(x, r) }
}"""


def lenet(rng):
    """examples/lenet.td's model in PyTorch (nn layers, their state_dict
    names), weights drawn as PyTorch's default initialisation would."""
    class LeNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
            self.conv2 = torch.nn.Conv2d(6, 16, 5)
            self.fc1 = torch.nn.Linear(400, 120)
            self.fc2 = torch.nn.Linear(120, 84)
            self.fc3 = torch.nn.Linear(84, 10)

        def forward(self, x):
            h = F.max_pool2d(F.relu(self.conv1(x)), 2)
            h = F.max_pool2d(F.relu(self.conv2(h)), 2)
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(h.reshape(-1, 400))))))

    torch.manual_seed(18)
    m = LeNet()
    w = {"net." + k: v.detach().numpy().astype(np.float32) for k, v in m.state_dict().items()}
    m = m.double()
    for k, v in m.state_dict().items():
        v.copy_(torch.tensor(w["net." + k], dtype=torch.float64))
    x = rng.uniform(0, 1, (3, 1, 28, 28)).astype(np.float32)
    y = m(torch.tensor(x, dtype=torch.float64))
    r = rng.normal(0, 1, tuple(y.shape)).astype(np.float32)
    loss = (y * torch.tensor(r, dtype=torch.float64)).sum()
    loss.backward()
    grads = {"loss": np.array(loss.item(), dtype=np.float64), "y": y.detach().numpy()}
    for k, v in m.named_parameters():
        grads["net." + k] = v.grad.numpy().astype(np.float64)
    return w, x, r, grads


def main():
    rng = np.random.default_rng(18)
    models = []
    for name, xs, ws, bias, args, fn in CASES:
        w = {"net.x": rng.normal(0, 1, xs).astype(np.float32)}
        if name == "maxpool_ties":   # many equal values: the first maximum takes the gradient
            w["net.x"] = np.round(w["net.x"] * 1.5).astype(np.float32)
        if ws is not None:
            w["net.w"] = rng.uniform(-0.5, 0.5, ws).astype(np.float32)
            if bias:
                w["net.b"] = rng.uniform(-0.5, 0.5, (bias_size(name, ws),)).astype(np.float32)
        t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in w.items()}
        args_t = [t["net.x"]] if ws is None else [t["net.x"], t["net.w"], t.get("net.b")]
        y = fn(*args_t)
        r = rng.normal(0, 1, tuple(y.shape)).astype(np.float32)
        loss = (y * torch.tensor(r, dtype=torch.float64)).sum()
        loss.backward()
        grads = {"loss": np.array(loss.item(), dtype=np.float64), "y": y.detach().numpy()}
        for k, v in t.items():
            grads[k] = v.grad.numpy().astype(np.float64)
        save_safetensors(os.path.join(HERE, f"{name}_weights.safetensors"), w)
        save_safetensors(os.path.join(HERE, f"{name}_grads.safetensors"), grads)
        np.save(os.path.join(HERE, f"{name}_r.npy"), r)
        models.append(model_of(name, xs, ws, bias, args, tuple(y.shape)))
        print(f"{name}: y {tuple(y.shape)}, loss {loss.item():.9g}")
    w, x, r, grads = lenet(rng)
    save_safetensors(os.path.join(HERE, "lenet_weights.safetensors"), w)
    save_safetensors(os.path.join(HERE, "lenet_grads.safetensors"), grads)
    np.save(os.path.join(HERE, "lenet_x.npy"), x)
    np.save(os.path.join(HERE, "lenet_r.npy"), r)
    models.append(LENET_TD)
    print(f"lenet: loss {float(grads['loss']):.9g}")
    with open(os.path.join(HERE, "cases.td"), "w") as f:
        f.write("# cases.td - written by make_refs.py (do not edit): one model per case of\n"
                "# tests/conv_refs.sh, its tensors as parameters, the loss sum(op(...) * r)\n"
                "# with the output as the auxiliary value; last, LeNet from nn's layers.\nimport nn\n\n")
        f.write("\n\n".join(models) + "\n")


if __name__ == "__main__":
    main()

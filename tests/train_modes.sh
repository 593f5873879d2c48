#!/bin/sh
# train_modes.sh - 50 training steps eagerly and compiled give the same
# losses: `tdsl train` of a small classifier (two Linear layers, AdamW with
# a cosine schedule, cross-entropy) on a synthetic data set, once with
# --eager (the interpreter, op by op) and once compiled; every step's loss
# in the CSV logs must agree to 1e-4 relative, and the final weights and
# optimizer state (--save-weights) to 1e-4 of each tensor's largest
# magnitude.  Needs python3 with numpy for the data and the comparison
# (skipped, saying why, without).  Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
. "$srcdir/tests/ref_common.sh"
ref_start 1 "eager and compiled training agree" trainmodes
cat > "$work/m.td" <<'TD'
import nn
import optim
model Net {
  fc1 = nn.Linear(16, 32)
  fc2 = nn.Linear(32, 4)
  fn forward(x: f32[B, 16]) -> f32[B, 4] { fc2(tanh(fc1(x))) }
}
model Train {
  net = Net()
  opt = optim.AdamW(net, lr = 0.01, schedule = optim.CosineWarmup(5, 50))
  fn loss(x, y) { nn.cross_entropy(net(x / 255), y, label_smoothing = 0.05) }
  fn step(x: f32[B, 16], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(optim.clip_grad_norm(g, 1.0))
    l
  }
}
TD
"$py" - "$work" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(5)
y = rng.integers(0, 4, 800)
x = (rng.random((800, 16)) * 128 + 64 * (np.arange(16) % 4 == y[:, None])).astype(np.float32)
np.save(sys.argv[1] + "/x.npy", x)
np.save(sys.argv[1] + "/y.npy", y.astype(np.int64))
PY
ok=1
for mode in eager compiled; do
  flag=
  [ $mode = eager ] && flag=--eager
  if ! timeout 300 "$tdsl" train "$work/m.td" --train "$work/x.npy,$work/y.npy" --batch 16 --epochs 1 \
       --log "$work/$mode.csv" --save-weights "$work/$mode.safetensors" $flag >"$work/$mode.log" 2>&1; then
    ok=0
    sed 's/^/# /' "$work/$mode.log" | head -20
  fi
done
if [ $ok = 1 ] && "$py" - "$work" "$srcdir/tests" >"$work/cmp" 2>&1 <<'PY'
import csv, sys
import numpy as np
w = sys.argv[1]
def losses(m):
    with open(f"{w}/{m}.csv") as f:
        return np.array([float(r["train_loss"]) for r in csv.DictReader(f)])
sys.path.insert(0, sys.argv[2])
from safetensors_io import load   # tests/safetensors_io.py
def weights(m):
    return load(f"{w}/{m}.safetensors")[0]
e, c = losses("eager"), losses("compiled")
bad = []
if len(e) != 50 or len(c) != 50:
    bad.append(f"steps: {len(e)} eager, {len(c)} compiled, expected 50")
elif not np.all(np.abs(e - c) <= 1e-4 * np.abs(e)):
    bad.append(f"losses differ: max relative {np.max(np.abs(e - c) / np.abs(e)):.3g}")
if len(e) and not e[-1] < e[0]:
    bad.append(f"the loss did not go down: {e[0]} -> {e[-1]}")
we, wc = weights("eager"), weights("compiled")
if sorted(we) != sorted(wc) or not any(k.endswith(".exp_avg") for k in we):
    bad.append(f"the saved tensors differ or hold no optimizer state: {sorted(we)} / {sorted(wc)}")
for k in we:
    if k in wc and not np.max(np.abs(we[k] - wc[k])) <= 1e-4 * max(np.max(np.abs(we[k])), 1e-12):
        bad.append(f"{k} differs")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
then
  echo "ok 1 - 50 steps eager and compiled give the same losses and weights"
else
  echo "not ok 1 - 50 steps eager and compiled give the same losses and weights"
  sed 's/^/# /' "$work/cmp" 2>/dev/null
  exit 1
fi

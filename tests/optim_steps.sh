#!/bin/sh
# optim_steps.sh - stdlib/optim.td against torch.optim.
#
# For each optimizer configuration of tests/data/optim_ref/make_refs.py
# (SGD plain, with momentum and dampening, Nesterov, weight decay; Adam;
# AdamW; a cosine warm-up and a step schedule; gradient clipping), five
# training steps, each a separate `tdsl run` of the model's step that
# loads the previous weights and state and saves the updated ones: the five
# losses and the final weights must match PyTorch's float64 run to 1e-5
# (relative to the largest magnitude of each reference tensor), eagerly and
# compiled.  So this also shows that the state round-trips through
# safetensors.  Needs python3 with numpy (skipped, saying why, without).
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
ref="$srcdir/tests/data/optim_ref"
configs="sgd sgd_momentum sgd_nesterov adam adamw adamw_cosine sgd_steplr sgd_clip"
. "$srcdir/tests/ref_common.sh"
ref_start 16 "optimizer steps" optim

n=0
failed=0
for cfg in $configs; do
  for mode in eager compiled; do
    n=$((n + 1))
    flag=
    [ $mode = compiled ] && flag=--compiled
    cp "$ref/${cfg}_init.safetensors" "$work/w0.safetensors"
    ok=1
    k=0
    while [ $k -lt 5 ]; do
      if ! timeout 120 "$tdsl" run "$ref/models.td" --entry "$cfg.step" --weights "$work/w$k.safetensors" \
           --in x="$ref/x.npy" --in y="$ref/y.npy" --out "$work/loss$k.npy" \
           --save-weights "$work/w$((k + 1)).safetensors" $flag >"$work/log" 2>&1; then
        ok=0
        break
      fi
      k=$((k + 1))
    done
    if [ $ok = 1 ] && "$py" - "$ref/${cfg}_ref.safetensors" "$work" "$srcdir/tests" >"$work/cmp" 2>&1 <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from safetensors_io import load   # tests/safetensors_io.py
ref = load(sys.argv[1])[0]
got = load(sys.argv[2] + "/w5.safetensors")[0]
got["losses"] = np.array([float(np.load(f"{sys.argv[2]}/loss{k}.npy")) for k in range(5)])
bad = []
for name, want in ref.items():
    if name not in got:
        bad.append(f"{name}: missing from tdsl's weights")
        continue
    err = np.max(np.abs(got[name] - want)) / max(np.max(np.abs(want)), 1e-30)
    if not err <= 1e-5:
        bad.append(f"{name}: relative error {err:.3g} (got {got[name].ravel()[:4]}, want {want.ravel()[:4]})")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
    then
      echo "ok $n - $cfg: 5 steps match torch.optim ($mode)"
    else
      failed=$((failed + 1))
      echo "not ok $n - $cfg: 5 steps match torch.optim ($mode)"
      sed 's/^/# /' "$work/log" "$work/cmp" 2>/dev/null | head -30
    fi
  done
done
[ $failed -eq 0 ]

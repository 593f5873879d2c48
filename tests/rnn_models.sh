#!/bin/sh
# rnn_models.sh - stdlib/nn.td's LSTM and GRU (one scan over the steps)
# against torch.nn.LSTM / torch.nn.GRU on the same weights.
#
# tests/data/rnn_ref/make_refs.py (run by hand with Debian's PyTorch) wrote
# the weights, the inputs, and the float64 outputs, final states, loss and
# gradients per weight.  Here tdsl runs the models of models.td eagerly
# and compiled (the scan's body compiled once, run per step): outputs and
# states must match to 1e-5 and gradients to 1e-5 relative to their
# largest magnitude.  Needs
# python3 with numpy to compare (skipped, saying why, without it).
# Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
ref="$srcdir/tests/data/rnn_ref"
. "$srcdir/tests/ref_common.sh"
ref_start 8 "rnn models" rnn

# compare MODEL NAMES...: out0.npy.. against the reference's NAMES
# (grad.* names are gradients, compared relative to their largest value)
compare() {
  "$py" - "$ref/$1_ref.safetensors" "$work" "$srcdir/tests" "$@" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from safetensors_io import load   # tests/safetensors_io.py
ref, _ = load(sys.argv[1])
bad = []
for i, name in enumerate(sys.argv[5:]):
    got = np.load(f"{sys.argv[2]}/out{i}.npy").astype(np.float64)
    want = ref[name]
    if got.shape != want.shape:
        bad.append(f"{name}: shape {got.shape}, expected {want.shape}")
        continue
    scale = max(float(np.max(np.abs(want))), 1e-3) if name.startswith("grad.") or name == "loss" else 1.0
    err = float(np.max(np.abs(got - want))) / scale if got.size else 0.0
    if not err <= 1e-5:
        bad.append(f"{name}: error {err:.3g}")
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
}

w="grad.rnn.weight_ih_l0 grad.rnn.weight_hh_l0 grad.rnn.bias_ih_l0 grad.rnn.bias_hh_l0"
n=0
failed=0
for model in lstm gru; do
  case $model in
    lstm) m=LSTMRef; fwd="output h_n c_n" ;;
    gru) m=GRURef; fwd="output h_n" ;;
  esac
  for what in forward grads; do
  for mode in eager compiled; do
    n=$((n + 1))
    flag=
    [ $mode = compiled ] && flag=--compiled
    if [ $what = forward ]; then names=$fwd; ins="--in x=$ref/${model}_x.npy"
    else names="loss $w"; ins="--in x=$ref/${model}_x.npy --in r=$ref/${model}_r.npy"; fi
    outs=
    i=0
    for _ in $names; do outs="$outs --out $work/out$i.npy"; i=$((i + 1)); done
    rm -f "$work"/out*.npy
    # shellcheck disable=SC2086  # the option lists are meant to split
    if timeout 300 "$tdsl" run $flag "$ref/models.td" --entry $m.$what --weights "$ref/${model}_weights.safetensors" \
         $ins $outs >"$work/log" 2>&1 && compare $model $names >"$work/cmp" 2>&1; then
      echo "ok $n - $model $what matches PyTorch ($mode)"
    else
      failed=$((failed + 1))
      echo "not ok $n - $model $what matches PyTorch ($mode)"
      sed 's/^/# /' "$work/log" "$work/cmp" 2>/dev/null | head -40
    fi
  done
  done
done
[ $failed -eq 0 ]

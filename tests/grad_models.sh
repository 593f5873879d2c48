#!/bin/sh
# grad_models.sh - whole-model gradients against PyTorch autograd.
#
# tests/data/grad_ref/make_refs.py (run by hand with Debian's PyTorch) wrote
# the weights, inputs and float64 reference gradients of two models: an MLP
# with label-smoothed cross-entropy and a pre-norm transformer block.  Here
# tdsl computes value_and_grad of the same models (models.td) eagerly and
# compiled, and every gradient must match to 1e-5, relative to the largest
# magnitude of its reference tensor (at least 1/1000 of the model's largest
# gradient, for one that is zero in exact arithmetic).  Needs python3 with numpy to compare
# (skipped, saying why, without it).  Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
ref="$srcdir/tests/data/grad_ref"
. "$srcdir/tests/ref_common.sh"
ref_start 4 "grad models" grad

# compare MODEL: outputs out0.npy (loss) .. outN.npy against the reference
# (tests/compare_refs.py)
compare() {
  "$py" "$srcdir/tests/compare_refs.py" "$ref/$1_grads.safetensors" "$ref/$1_weights.safetensors" "$work" loss
}

n=0
failed=0
for model in mlp block; do
  case $model in
    mlp) entry=MLPGrad.grads; ins="--in x=$ref/mlp_x.npy --in y=$ref/mlp_y.npy"; nw=6 ;;
    block) entry=BlockGrad.grads; ins="--in x=$ref/block_x.npy --in r=$ref/block_r.npy"; nw=16 ;;
  esac
  outs=
  i=0
  while [ $i -le $nw ]; do outs="$outs --out $work/out$i.npy"; i=$((i + 1)); done
  for mode in eager compiled; do
    n=$((n + 1))
    flag=
    [ $mode = compiled ] && flag=--compiled
    rm -f "$work"/out*.npy
    # shellcheck disable=SC2086  # the option lists are meant to split
    if timeout 300 "$tdsl" run "$ref/models.td" --entry $entry --weights "$ref/${model}_weights.safetensors" \
         $ins $outs $flag >"$work/log" 2>&1 && compare $model >"$work/cmp" 2>&1; then
      echo "ok $n - $model gradients match PyTorch ($mode)"
    else
      failed=$((failed + 1))
      echo "not ok $n - $model gradients match PyTorch ($mode)"
      sed 's/^/# /' "$work/log" "$work/cmp" 2>/dev/null | head -40
    fi
  done
done
[ $failed -eq 0 ]

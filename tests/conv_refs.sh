#!/bin/sh
# conv_refs.sh - conv1d, conv2d, conv_transpose2d and the pools against PyTorch,
# forward and backward, eager and compiled.
#
# tests/data/conv_ref/make_refs.py (run by hand with Debian's PyTorch) wrote,
# per case, the f32 tensors of one call (input, weight, bias, cotangent r)
# and float64 references of the output y, the loss sum(y * r) and its
# gradients.  cases.td holds the same calls as tdsl models, the tensors as
# their parameters and r as the entry's input; lenet is LeNet-5 made of
# nn.Conv2d, nn.MaxPool2d and nn.Linear against the torch.nn module with
# PyTorch's state_dict, its input x an entry argument too.  Every gradient
# must match to 1e-5 relative to the largest magnitude of its reference.
# Needs python3 with numpy to compare (skipped, saying why, without it).
# Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
ref="$srcdir/tests/data/conv_ref"
. "$srcdir/tests/ref_common.sh"

cases="conv_basic conv_stride_pad conv_dilation conv_groups conv_depthwise conv_asym conv_same_even conv_1x1
conv1d maxpool_2 maxpool_ceil maxpool_dilation maxpool_ties avgpool_2 avgpool_ceil_pad avgpool_ceil_nopad avgpool_rect
maxpool_ceil_edge avgpool_ceil_edge convt_stride convt_groups_dilation lenet"
total=0
for c in $cases; do total=$((total + 2)); done
ref_start "$total" "conv references" conv

# compare CASE: out0.npy (loss), out1.npy (y), then the gradients
# (tests/compare_refs.py)
compare() {
  "$py" "$srcdir/tests/compare_refs.py" "$ref/$1_grads.safetensors" "$ref/$1_weights.safetensors" "$work" loss,y
}

n=0
failed=0
for c in $cases; do
  model=$(echo "$c" | "$py" -c "import sys; print(''.join(p.capitalize() for p in sys.stdin.read().strip().split('_')))")
  nw=$("$py" -c "import sys; sys.path.insert(0, sys.argv[2]); from safetensors_io import load; print(len(load(sys.argv[1])[1]))" \
    "$ref/${c}_weights.safetensors" "$srcdir/tests")
  outs=
  i=0
  while [ $i -le $((nw + 1)) ]; do outs="$outs --out $work/out$i.npy"; i=$((i + 1)); done
  for mode in eager compiled; do
    n=$((n + 1))
    flag=
    [ $mode = compiled ] && flag=--compiled
    rm -f "$work"/out*.npy
    xin=
    [ -f "$ref/${c}_x.npy" ] && xin="--in x=$ref/${c}_x.npy"
    # shellcheck disable=SC2086  # the option lists are meant to split
    if timeout 300 "$tdsl" run "$ref/cases.td" --entry "${model}Grad.grads" --weights "$ref/${c}_weights.safetensors" \
         --in r="$ref/${c}_r.npy" $xin $outs $flag >"$work/log" 2>&1 && compare "$c" >"$work/cmp" 2>&1; then
      echo "ok $n - $c matches PyTorch ($mode)"
    else
      failed=$((failed + 1))
      echo "not ok $n - $c matches PyTorch ($mode)"
      sed 's/^/# /' "$work/log" "$work/cmp" 2>/dev/null | head -40
    fi
  done
done
[ $failed -eq 0 ]

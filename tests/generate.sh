#!/bin/sh
# generate.sh - examples/generate.td, decoding with a key/value cache in a
# scan: GPT.generate compiled gives the tokens eager mode gives, for prompts
# of 1 and 5 tokens, K = 3 and 20 new tokens, greedy and at temperature 1,
# from ONE compiled program (the first call compiles, the seven others are
# compile-cache hits); and the example's main (top-k sampling, and the check
# against the full forward pass at every step) prints the same compiled as
# eager.  The eager main's output, with the check's "differ: 0", is pinned by
# the # expect: lines of the example (tests/lang_runner).  Needs python3
# with numpy to write the inputs.  Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
. "$srcdir/tests/ref_common.sh"
ref_start 3 "KV-cache generation" generate
ex="$srcdir/examples/generate.td"
"$py" - "$work" <<'PY' || exit 1
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/p1.npy", np.array([[5], [61]], dtype=np.int64))
np.save(d + "/p5.npy", np.array([[5, 17, 3, 99, 42], [0, 0, 1, 2, 3]], dtype=np.int64))
for k in (3, 20):
    np.save(d + "/n%d.npy" % k, np.zeros(k, dtype=np.int64))
np.save(d + "/t0.npy", np.zeros((), dtype=np.float32))
np.save(d + "/t1.npy", np.ones((), dtype=np.float32))
PY
bad=
hits=0
for p in p1 p5; do
  for n in n3 n20; do
    for t in t0 t1; do
      args="--entry GPT.generate --in prompt=$work/$p.npy --in n=$work/$n.npy --in temp=$work/$t.npy"
      # shellcheck disable=SC2086
      "$tdsl" run "$ex" $args --out "$work/e.npy" 2> "$work/err" || { bad="$bad $p/$n/$t: eager failed: $(cat "$work/err")"; continue; }
      # shellcheck disable=SC2086
      TDSL_DEBUG=time "$tdsl" run "$ex" $args --out "$work/c.npy" --compiled 2> "$work/err" ||
        { bad="$bad $p/$n/$t: compiled failed: $(grep -v 'time:' "$work/err")"; continue; }
      grep -q "compile cache hit .*(GPT.generate.scan)" "$work/err" && hits=$((hits + 1))
      cmp -s "$work/e.npy" "$work/c.npy" || bad="$bad $p/$n/$t: the tokens differ"
    done
  done
done
if [ -z "$bad" ]; then
  echo "ok 1 - GPT.generate: the same tokens compiled as eager for P in {1, 5}, K in {3, 20}, temperature 0 and 1"
else
  echo "not ok 1 - GPT.generate eager and compiled:$bad"
fi
if [ "$hits" -eq 7 ]; then
  echo "ok 2 - one compiled scan body served all eight calls (seven compile-cache hits)"
else
  echo "not ok 2 - the scan body was compiled again: $hits cache hits of 7"
fi
"$tdsl" run "$ex" > "$work/main_eager.txt" 2>&1
"$tdsl" run "$ex" --compiled > "$work/main_compiled.txt" 2>&1
if grep -q "differ: 0" "$work/main_eager.txt" && cmp -s "$work/main_eager.txt" "$work/main_compiled.txt"; then
  echo "ok 3 - main (greedy checked against the full forward pass, sampling, top-k) prints the same compiled"
else
  diff "$work/main_eager.txt" "$work/main_compiled.txt" | sed 's/^/# /'
  echo "not ok 3 - main compiled differs from eager"
fi

# ref_common.sh - sourced by the tests that compare tdsl with reference
# files made by PyTorch (grad_models.sh, rnn_models.sh, conv_refs.sh,
# optim_steps.sh) or need numpy to compare (train_modes.sh).
#
# ref_start N WHAT TAG: prints the TAP plan 1..N.  Without a python3 that
# has numpy (to compare), each of the N tests is a SKIP saying why and the
# script exits 0; otherwise $py is that python and $work a fresh directory
# (removed at exit) that also holds the compile cache.  Before sourcing,
# srcdir and builddir are set from TDSL_SRCDIR and TDSL_BUILDDIR.
tdsl="$builddir/tdsl"

ref_start() {
  py=
  for p in "${PYTHON:-}" /usr/bin/python3 python3; do
    if [ -n "$p" ] && "$p" -c "import numpy" 2>/dev/null; then py=$p; break; fi
  done
  echo "1..$1"
  if [ -z "$py" ]; then
    i=1
    while [ "$i" -le "$1" ]; do
      echo "ok $i - $2 # SKIP no python3 with numpy (apt-get install python3-numpy)"
      i=$((i + 1))
    done
    exit 0
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/tdsl-$3.XXXXXX") || exit 1
  trap 'rm -rf "$work"' EXIT
  export TDSL_CACHE_DIR="$work/cache"
}

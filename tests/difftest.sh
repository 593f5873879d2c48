#!/bin/sh
# difftest.sh - a small fixed-seed sample of the differential random-program
# tester (scripts/difftest, tests/difftest/) as one TAP test for make check.
#
# It needs Debian's python3 with numpy; without them it says why and skips.
# It leaves out the generator features of tests/difftest/known-bugs
# (--avoid-known), and in sanitizer builds the artifact backend (the
# runtime archive is then instrumented and cannot be linked into an
# artifact, as in tests/unit/test_build.c).  Environment (set by
# Makefile.am): TDSL_SRCDIR, TDSL_BUILDDIR, TDSL_CFLAGS;
# TDSL_DIFFTEST_N (default 30) and TDSL_DIFFTEST_SEED (default 12).
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
n=${TDSL_DIFFTEST_N:-30}
seed=${TDSL_DIFFTEST_SEED:-12}

echo "1..1"
py=
for p in "${PYTHON:-}" /usr/bin/python3 python3; do
  if [ -n "$p" ] && "$p" -c 'import numpy' >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "ok 1 - difftest sample # SKIP no python3 with numpy (apt-get install python3-numpy)"
  echo "difftest: skipped: no python3 with numpy (scripts/install-deps installs python3-numpy)" >&2
  exit 0
fi

backends=eager,comp1,comp2,artifact
case "${TDSL_CFLAGS:-}" in
  *-fsanitize*)
    backends=eager,comp1,comp2
    echo "difftest: sanitizer build: the artifact backend is left out" >&2 ;;
esac

out=$(mktemp -d "${TMPDIR:-/tmp}/tdsl-difftest.XXXXXX") || exit 1
PYTHONDONTWRITEBYTECODE=1 "$py" "$srcdir/tests/difftest/difftest.py" "$n" --seed "$seed" --jobs 1 \
  --avoid-known --reduce 3 --quiet --big 32768 --tdsl "$builddir/tdsl" --srcdir "$srcdir" \
  --backends "$backends" --out "$out" >&2
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "ok 1 - difftest sample: $n programs, seed $seed"
  echo "Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0" >&2
  rm -rf "$out"
else
  echo "not ok 1 - difftest sample: $n programs, seed $seed (exit $rc; see the log, files in $out)"
  echo "Synthesis: Tested: 1 | Passing: 0 | Failing: 1 | Crashing: 0" >&2
fi
exit 0

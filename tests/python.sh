#!/bin/sh
# python.sh - the Python package (python/tdsl) against the built tdsl: its
# pytest tests (python/tests/) build python/tests/models.td with this tree's
# tdsl and call it on numpy arrays, comparing with numpy float64.  One TAP
# test; skipped, saying why, without a python3 that has numpy and pytest.
# Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
. "$srcdir/tests/ref_common.sh"
ref_start 1 "python package" python
if ! "$py" -c "import pytest" 2>/dev/null; then
  echo "ok 1 - python package # SKIP $py has no pytest (apt-get install python3-pytest)"
  exit 0
fi
# A sanitizer build's artifacts need the sanitizer runtimes loaded first:
# preload them into the (uninstrumented) interpreter, whose own allocations
# are not ours to leak-check.
case " ${TDSL_CFLAGS:-} " in
  *-fsanitize=*)
    cc=${CC:-gcc}
    pre=
    for rt in address:asan undefined:ubsan; do
      case " $TDSL_CFLAGS " in
        *-fsanitize=*"${rt%%:*}"*)
          f=$("$cc" -print-file-name="lib${rt#*:}.so")
          [ -f "$f" ] && pre="$pre${pre:+:}$f" ;;
      esac
    done
    export LD_PRELOAD="$pre" ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    ;;
esac
# the tree's package, not an installed one; the tree's tdsl
if (cd "$work" && TDSL="$tdsl" PYTHONPATH="$srcdir/python" PYTHONDONTWRITEBYTECODE=1 \
    "$py" -m pytest -q -p no:cacheprovider --basetemp="$work/pytest" "$srcdir/python/tests" > "$work/log" 2>&1); then
  echo "ok 1 - python package ($(tail -n 1 "$work/log"))"
else
  sed 's/^/# /' "$work/log"
  echo "not ok 1 - python package"
fi

#!/bin/sh
# layers.sh - scripts/check-layers as TAP: the tree's includes respect the
# layers (docs/architecture.md, "Layers"), and the check itself still
# catches a forbidden include and an unqualified one in a small fake tree.
src=${TDSL_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
echo "1..3"
if ! command -v python3 >/dev/null 2>&1; then
  for i in 1 2 3; do echo "ok $i # SKIP python3 not found (scripts/check-layers is Python)"; done
  exit 0
fi
if out=$(python3 "$src/scripts/check-layers" "$src" 2>&1); then
  echo "ok 1 - every include of the tree allowed"
else
  echo "not ok 1 - forbidden includes"; printf '%s\n' "$out" | sed 's/^/# /'
fi
fake=$(mktemp -d) || exit 1
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/runtime" "$fake/lang"
printf '#include "lang/ir.h"\n' >"$fake/runtime/bad.c"
printf '#include "runtime/ok.h"\n' >"$fake/lang/ir.h"
: >"$fake/runtime/ok.h"
out=$(python3 "$src/scripts/check-layers" "$fake" 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q 'runtime/bad.c:1: #include "lang/ir.h" crosses the layers'; then
  echo "ok 2 - runtime/ including lang/ is refused"
else
  echo "not ok 2 - runtime/ including lang/ was not refused"; printf '%s\n' "$out" | sed 's/^/# /'
fi
printf '#include "ok.h"\n' >"$fake/runtime/bad.c"
out=$(python3 "$src/scripts/check-layers" "$fake" 2>&1)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q 'is not path-qualified (write "runtime/ok.h")'; then
  echo "ok 3 - an unqualified include is refused, with its qualified spelling"
else
  echo "not ok 3 - an unqualified include was not refused"; printf '%s\n' "$out" | sed 's/^/# /'
fi

#!/bin/sh
# hostile.sh - the hostile-input corpus (tests/hostile/, see its README.md)
# as TAP tests for make check: every case in every mode it applies to.
#
# A failing case must exit with status 1 (not a signal, not a sanitizer's
# status) and print its message; a passing one must print the same output
# in every mode.  Every run has a time limit (a hang fails), and stderr
# must hold no sanitizer report.  In sanitizer builds the executables of
# `tdsl build` are left out (the runtime archive is then instrumented and
# cannot be linked into an artifact, as in tests/unit/test_build.c), with
# a line saying so.  Environment (Makefile.am): TDSL_SRCDIR,
# TDSL_BUILDDIR, TDSL_CFLAGS.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
tdsl="$builddir/tdsl"
corpus="$srcdir/tests/hostile"
limit=${TDSL_HOSTILE_TIMEOUT:-300}

exe=1
case "${TDSL_CFLAGS:-}" in
  *-fsanitize*) exe=0 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/tdsl-hostile.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cp "$corpus"/*.td "$work"/ || exit 1
cd "$work" || exit 1
export TDSL_CACHE_DIR="$work/cache"

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }

# run NAME CMD...: runs CMD under the time limit; sets rc, out, err.
run() {
  name=$1
  shift
  timeout -k 5 "$limit" "$@" >out.txt 2>err.txt
  rc=$?
  out=$(cat out.txt)
  err=$(cat err.txt)
}

sanitizer_report() { grep -q 'Sanitizer\|runtime error:' err.txt; }

# fails NAME WANT CMD...: CMD must exit 1 with WANT in its stderr.
fails() {
  f_label=$1
  f_want=$2
  shift 2
  run "$f_label" "$@"
  if [ "$rc" -eq 1 ] && ! sanitizer_report && grep -qF -- "$f_want" err.txt; then ok "$f_label"
  else not_ok "$f_label" "exit $rc (want 1), wanted in stderr: $f_want" "stderr: $(head -c 1500 err.txt)"; fi
}

# same NAME WANT_FILE CMD...: CMD must exit 0 printing WANT_FILE's text.
same() {
  s_label=$1
  s_want=$2
  shift 2
  run "$s_label" "$@"
  if [ "$rc" -eq 0 ] && ! sanitizer_report && cmp -s out.txt "$s_want"; then ok "$s_label"
  else not_ok "$s_label" "exit $rc (want 0), stdout differs from eager mode's or a report" \
    "stdout: $(head -c 500 out.txt)" "stderr: $(head -c 1500 err.txt)"; fi
}

# npy NAME DESCR SHAPE DATA_BYTES: a version 1.0 .npy file (header padded
# to 64 bytes) followed by DATA_BYTES zero bytes.
npy() {
  hdr="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  len=$(( ${#hdr} + 1 ))
  pad=$(( (64 - (10 + len) % 64) % 64 ))
  tot=$(( len + pad ))
  {
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((tot % 256)))\\$(printf %03o $((tot / 256)))"
    printf '%s' "$hdr"
    printf "%${pad}s" ''
    printf '\n'
    head -c "$4" /dev/zero
  } >"$1"
}
# st NAME JSON DATA_BYTES: a safetensors file (8-byte little-endian header
# length, the JSON header, DATA_BYTES zero bytes).
st() {
  len=${#2}
  { printf "\\$(printf %03o $((len % 256)))\\$(printf %03o $((len / 256)))\\000\\000\\000\\000\\000\\000"
    printf '%s' "$2"; head -c "$3" /dev/zero; } >"$1"
}

npy ok4.npy '<f4' '(4,)' 16

# ---- programs that are refused at compile time, in every mode ----------
# file | what stderr must hold (the position first) | entry: main runs
# (tdsl build builds the other entries, and says main has none to build)
while IFS='|' read -r file want entry; do
  [ -n "$file" ] || continue
  fails "$file: check" "$file:$want" "$tdsl" check "$file"
  rm -rf art
  if [ "$entry" = main ]; then
    fails "$file: run" "$file:$want" "$tdsl" run "$file"
    fails "$file: run --compiled" "$file:$want" "$tdsl" run "$file" --compiled
    fails "$file: build" "has no entry point to build (only main)" "$tdsl" build "$file" -o art --exe
  else
    fails "$file: run" "$file:$want" "$tdsl" run "$file" --entry "$entry" --in x=ok4.npy
    fails "$file: run --compiled" "$file:$want" "$tdsl" run "$file" --entry "$entry" --in x=ok4.npy --compiled
    fails "$file: build" "$file:$want" "$tdsl" build "$file" -o art --exe
  fi
  if [ -e art ]; then not_ok "$file: a failed build leaves no output directory" "art exists"
  else ok "$file: a failed build leaves no output directory"; fi
done <<'EOF'
index_min.td|4:5: error: index -9223372036854775808 is out of range|main
reshape_overflow.td|2:13: error: size arithmetic overflows|main
reshape_infer_overflow.td|1:13: error: size arithmetic overflows|main
symbolic_overflow.td|1:19: error: size arithmetic overflows|f
concat_doubling.td|4:24: error: size arithmetic overflows|main
mod_min.td|2:19: error: integer overflow in a compile-time expression|main
recursion.td|1:11: error: calls nest more than 200 deep|main
huge_literal.td|2:23: error: integer literal is too large|f
EOF

# ---- files: written here byte by byte -------------------------------------
npy x65536.npy '<f4' '(65536,)' 262144
npy y4.npy '<f4' '(4,)' 16
# ---- programs that run: the same output in every mode -----------------
# (an entry f(x: f32[4]), so that tdsl build builds it)
for file in slice_min.td step_min.td deep_if.td deep_chain.td; do
  run "$file: eager" "$tdsl" run "$file" --entry f --in x=ok4.npy
  if [ "$rc" -ne 0 ] || sanitizer_report; then
    not_ok "$file: eager" "exit $rc" "stderr: $(head -c 1500 err.txt)"
    continue
  fi
  ok "$file: eager"
  cp out.txt want.txt
  same "$file: --compiled" want.txt "$tdsl" run "$file" --entry f --in x=ok4.npy --compiled
  same "$file: --compiled (a cache hit)" want.txt "$tdsl" run "$file" --entry f --in x=ok4.npy --compiled
  if [ "$exe" = 1 ]; then
    rm -rf art
    run "$file: build" "$tdsl" build "$file" -o art --exe --name prog
    if [ "$rc" -eq 0 ]; then ok "$file: build"; same "$file: executable" want.txt art/prog --entry f --in x=ok4.npy
    else not_ok "$file: build" "exit $rc" "stderr: $(head -c 1500 err.txt)"; fi
  fi
done
[ "$exe" = 1 ] || echo "# sanitizer build: the executables of tdsl build are left out" >&2

# N*N*N*N + 4 wraps int64 at N = 65536: refused at the binding, in every mode
fails "size_wrap.td: eager" "does not fit in 64 bits" "$tdsl" run size_wrap.td --entry f --in x=x65536.npy --in y=y4.npy
fails "size_wrap.td: --compiled" "does not fit in 64 bits" \
  "$tdsl" run size_wrap.td --entry f --in x=x65536.npy --in y=y4.npy --compiled
if [ "$exe" = 1 ]; then
  rm -rf art
  run "size_wrap.td: build" "$tdsl" build size_wrap.td -o art --exe --name prog
  fails "size_wrap.td: executable" "does not fit in 64 bits" art/prog --entry f --in x=x65536.npy --in y=y4.npy
fi

# malformed .npy inputs: name | descr | shape | data bytes | message
while IFS='|' read -r file descr shape bytes want; do
  [ -n "$file" ] || continue
  npy "$file" "$descr" "$shape" "$bytes"
  fails "$file: eager" "$want" "$tdsl" run ident.td --entry f --in "x=$file"
  fails "$file: --compiled" "$want" "$tdsl" run ident.td --entry f --in "x=$file" --compiled
done <<'EOF'
truncated.npy|<f4|(8,)|16|file is truncated: expected 32 bytes of data, found 16
huge_shape.npy|<f4|(4611686018427387904, 4)|16|is too large
negative_dim.npy|<f4|(-1,)|16|negative dimension in shape
bad_dtype.npy|<c8|(2,)|16|unsupported dtype '<c8'
open_shape.npy|<f4|(2|8|expected a dimension in shape
EOF
printf 'NOTNUMPY' >bad_magic.npy
fails "bad_magic.npy: eager" "not a .npy file (bad magic)" "$tdsl" run ident.td --entry f --in x=bad_magic.npy

# malformed weights: name | JSON header | data bytes | message
while IFS='|' read -r file json bytes want; do
  [ -n "$file" ] || continue
  st "$file" "$json" "$bytes"
  fails "$file: eager" "$want" "$tdsl" run weights.td --entry M.forward --in x=ok4.npy --weights "$file"
  fails "$file: --compiled" "$want" "$tdsl" run weights.td --entry M.forward --in x=ok4.npy --weights "$file" --compiled
done <<'EOF'
past_end.safetensors|{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,64]}}|16|data_offsets [0, 64] out of range
huge.safetensors|{"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,16]}}|16|shape is too large
cut.safetensors|{"w":{"dtype":"F32","shape":[4],"data_offsets":[8,24|16|invalid JSON header
EOF
printf '\377\377\377\377\377\377\377\177{}' >long_header.safetensors
fails "long_header.safetensors: eager" "header length 9223372036854775807 exceeds the file size" \
  "$tdsl" run weights.td --entry M.forward --in x=ok4.npy --weights long_header.safetensors

# FIFOs where a file is expected: refused, never waited on
mkfifo fifo_mod.td fifo.npy fifo.safetensors
fails "import of a FIFO" "not a regular file" "$tdsl" run import_fifo.td
fails "a FIFO as an input" "not a regular file" "$tdsl" run ident.td --entry f --in x=fifo.npy
fails "a FIFO as weights" "not a regular file" \
  "$tdsl" run weights.td --entry M.forward --in x=ok4.npy --weights fifo.safetensors

echo "1..$n"
if [ "$failed" -eq 0 ]; then echo "Synthesis: Tested: $n | Passing: $n | Failing: 0 | Crashing: 0" >&2
else echo "Synthesis: Tested: $n | Passing: $((n - failed)) | Failing: $failed | Crashing: 0" >&2; fi
exit 0

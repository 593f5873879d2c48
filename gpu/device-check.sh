#!/bin/sh
# device-check.sh - the CUDA backend on a GPU machine, in under 5 minutes.
#
#   gpu/device-check.sh LOGDIR
#
# On a machine with an NVIDIA GPU (the H200 is the target), its driver, the
# CUDA toolkit and tdsl's build dependencies (a C compiler, make, re2c,
# Bison 3.8, Criterion; libgccjit optional), this script
#   1. builds tdsl out of tree in LOGDIR/build from the tree it lives in;
#   2. runs the differential tests: every program under examples/ and
#      tests/lang/ with a `fn main` that the interpreter runs (files with
#      # error, # args, # cmd or # runner directives are left out, as in
#      tests/unit/test_compiled.c) runs again with --device cuda, and again
#      with --device cuda --cuda-graph; the printed output must match the
#      interpreter's, numbers within a relative 2e-3 (the printed digits)
#      and everything else exactly;
#   2b. the scans on their own row: examples/generate.td (KV-cache decoding
#      in a scan) and tests/lang/scan/basics.td (carries, reverse, nested
#      scans) through `tdsl run --device cuda`, plain and as a CUDA Graph,
#      against the interpreter (the host loop of runtime_cuda.c), timed;
#   3. builds the CUDA artifacts of examples/mlp.td and
#      examples/transformer.td (`tdsl build --device cuda`) and calls
#      MLP.forward and Block.forward through tests/gpu/artifact_check.c with host
#      pointers and with device pointers (allocated with the driver API),
#      comparing both with the CPU interpreter's `tdsl run --out` (within
#      1e-3 of the largest value), and timing 200 calls of each kind;
#   4. runs bench/bench_gpu.c: fused pointwise bandwidth against a
#      device-to-device copy, a 4096^3 GEMM in f32, TF32, bf16 and f16
#      against cuBLAS (sgemm, sgemm with TF32 math, GemmEx with bf16 / f16
#      inputs and f32 compute; the TF32, bf16 and f16 results are checked
#      against tdsl's f32 product of the same values: a max relative error
#      of 1e-2 or more fails the check), and the per-call latency of the
#      MLP and transformer examples, plain and as a CUDA Graph;
# and prints one short table.  Everything, including each failing diff,
# goes to LOGDIR/device-check.log.  Nothing is installed; when a dependency
# is missing the script says which and stops (exit 2).  Exit code: 0 when
# the build, every differential test, the scan rows, the artifact checks and
# the GEMM checks passed, 1 otherwise.
set -u
if [ $# -ne 1 ]; then
  echo "usage: gpu/device-check.sh LOGDIR" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
log=$out/device-check.log
exec 3>&1 >"$log" 2>&1
t_start=$(date +%s)
say() { echo "$*" >&3; echo "$*"; }
row() { printf '%-24s %s\n' "$1" "$2" >&3; printf '%-24s %s\n' "$1" "$2"; }
elapsed() { echo $(( $(date +%s) - t_start )); }

# ---- 1. prerequisites and build ----------------------------------------------
missing=
for tool in cc make re2c bison timeout awk; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
echo '#include <criterion/criterion.h>' | cc -E - >/dev/null 2>&1 || missing="$missing criterion(libcriterion-dev)"
if [ ! -x "$src/configure" ]; then
  command -v autoreconf >/dev/null 2>&1 || missing="$missing autoreconf(configure is not generated)"
fi
if [ -n "$missing" ]; then
  say "device-check: missing:$missing (scripts/install-deps installs them on Debian/Ubuntu)"
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
say "tdsl device check: ${gpu:-no nvidia-smi}; log in $log"

if [ ! -x "$src/configure" ]; then
  (cd "$src" && autoreconf -fi) || { say "device-check: autoreconf failed"; exit 2; }
fi
mkdir -p "$out/build"
jobs=$(nproc 2>/dev/null || echo 4)
if (cd "$out/build" && timeout 200 "$src/configure" -q && timeout 200 make -j"$jobs"); then
  row build "ok ($(elapsed) s)"
else
  row build "FAILED (see $log)"
  exit 1
fi
tdsl=$out/build/tdsl
export TDSL_CACHE_DIR="$out/cache"   # compiled modules of this check only
# One probe: without a usable GPU every test would fail the same way.
if ! "$tdsl" run "$src/examples/seed/simple.td" --device cuda >/dev/null 2>"$out/probe.err"; then
  row GPU "not usable: $(head -n 1 "$out/probe.err")"
  exit 1
fi

# ---- 2. differential tests ---------------------------------------------------------
# Tokens of a program's output, one per line (numbers compared with a
# tolerance by same_output).
tokens() { tr -s ' \t[](),:=;' '\n\n\n\n\n\n\n\n\n' <"$1"; }
same_output() {
  tokens "$1" >"$out/a.tok"
  tokens "$2" >"$out/b.tok"
  [ "$(wc -l <"$out/a.tok")" -eq "$(wc -l <"$out/b.tok")" ] || return 1
  paste "$out/a.tok" "$out/b.tok" | awk -F '\t' '
    function isnum(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
    {
      if ($1 == $2) next
      if (isnum($1) && isnum($2)) {
        a = $1 + 0; b = $2 + 0; d = a - b; if (d < 0) d = -d
        m = (a < 0 ? -a : a); if ((b < 0 ? -b : b) > m) m = (b < 0 ? -b : b)
        if (d <= 2e-3 * m + 1e-6) next
      }
      print "differs at token " NR ": cpu " $1 " gpu " $2; bad = 1; exit
    }
    END { exit bad }'
}

pass=0 fail=0 skip=0
failed=
files=$( (find "$src/examples" "$src/tests/lang" -name '*.td' | sort) 2>/dev/null)
for f in $files; do
  if grep -Eq '^#[[:space:]]*(error|args|cmd|runner)[[:space:]]*:' "$f" || ! grep -q '^fn main' "$f"; then
    skip=$((skip + 1)); continue
  fi
  if ! (cd "$(dirname "$f")" && timeout 60 "$tdsl" run "$f") >"$out/cpu.txt" 2>"$out/cpu.err"; then
    skip=$((skip + 1)); continue
  fi
  for mode in plain graph; do
    flag=; [ $mode = graph ] && flag=--cuda-graph
    if (cd "$(dirname "$f")" && timeout 60 "$tdsl" run "$f" --device cuda $flag) >"$out/gpu.txt" 2>"$out/gpu.err" &&
       same_output "$out/cpu.txt" "$out/gpu.txt"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      failed="$failed ${f#$src/}($mode)"
      echo "=== FAIL $f ($mode)"; cat "$out/gpu.err"; diff "$out/cpu.txt" "$out/gpu.txt" | head -n 40
    fi
  done
  if [ "$(elapsed)" -gt 150 ]; then
    say "  (time budget: differential tests stopped after ${f#$src/})"
    break
  fi
done
row "differential tests" "$pass passed, $fail failed, $skip programs skipped"
if [ -n "$failed" ]; then
  echo "failed:$failed"
  say "  failed: $(echo $failed | tr ' ' '\n' | head -n 8 | tr '\n' ' ')(all in the log)"
fi

# ---- 2b. scans ----------------------------------------------------------------------
# The host loop launching a body's kernels per step: its own row, whether
# or not the differential tests reached these files in their time budget.
scan_fail=0
for f in examples/generate.td tests/lang/scan/basics.td; do
  if ! (cd "$src/$(dirname "$f")" && timeout 60 "$tdsl" run "$src/$f") >"$out/scan-cpu.txt" 2>&1; then
    row "scan ${f##*/}" "FAILED in the interpreter (see $log)"; scan_fail=1; continue
  fi
  res=
  for mode in plain graph; do
    flag=; [ $mode = graph ] && flag=--cuda-graph
    t0=$(date +%s%N)
    if (cd "$src/$(dirname "$f")" && timeout 60 "$tdsl" run "$src/$f" --device cuda $flag) >"$out/scan-gpu.txt" \
         2>"$out/scan-gpu.err" && same_output "$out/scan-cpu.txt" "$out/scan-gpu.txt"; then
      res="$res $mode ok ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
    else
      res="$res $mode FAILED"; scan_fail=1
      echo "=== FAIL scan $f ($mode)"; cat "$out/scan-gpu.err"; diff "$out/scan-cpu.txt" "$out/scan-gpu.txt" | head -n 40
    fi
  done
  row "scan ${f##*/}" "${res# }"
done

# ---- 3. CUDA artifacts -----------------------------------------------------------
# artifact NAME FILE ENTRY C_ENTRY SYMS IN_N OUT_N: build, call both ways, compare.
art_fail=0
artifact() {
  a_dir=$out/artifact-$1
  rm -rf "$a_dir" && mkdir -p "$a_dir"
  echo "=== artifact $1"
  if ! timeout 120 "$tdsl" build "$src/examples/$2" -o "$a_dir" --device cuda; then
    row "artifact $1" "build FAILED (see $log)"; art_fail=1; return
  fi
  if ! cc -std=c11 -O2 -I"$a_dir" "-DTD_HEADER=\"$1.h\"" -DTD_PREFIX="$1" -DTD_ENTRY="$4" -DTD_SYMS="$5" \
        -DTD_IN_N="$6" -DTD_OUT_N="$7" "$src/tests/gpu/artifact_check.c" "$a_dir/$1.so" -Wl,-rpath,"$a_dir" -ldl -lm \
        -o "$a_dir/check" ||
     ! "$a_dir/check" input "$a_dir/x.npy" ||
     ! timeout 60 "$tdsl" run "$src/examples/$2" --entry "$3" --in x="$a_dir/x.npy" --out "$a_dir/ref.npy"; then
    row "artifact $1" "FAILED to prepare (see $log)"; art_fail=1; return
  fi
  if res=$(timeout 60 "$a_dir/check" compare "$a_dir/ref.npy" 200 2>&1); then
    row "artifact $1 $3" "ok: $res"
  else
    row "artifact $1 $3" "FAILED: $res"; art_fail=1
  fi
}
if [ "$(elapsed)" -lt 210 ]; then
  artifact mlp mlp.td MLP.forward mlp_forward 4 3136 40
  artifact transformer transformer.td Block.forward transformer_block_forward 2,8 1024 1024
else
  row "artifacts" "skipped (time budget)"
fi

# ---- 4. benchmarks ---------------------------------------------------------------
gemm_fail=0
jit=$(sed -n 's/^GCCJIT_LIBS = //p' "$out/build/Makefile")
pth=$(sed -n 's/^PTHREAD_CFLAGS = //p' "$out/build/Makefile")
if cc -std=c11 -O2 -D_GNU_SOURCE -I"$src" -I"$out/build" \
      -o "$out/bench_gpu" "$src/bench/bench_gpu.c" "$out/build/libtdsl.a" $jit -ldl -lm -lpthread $pth; then
  left=$((285 - $(elapsed)))
  [ "$left" -lt 30 ] && left=30
  if timeout "$left" "$out/bench_gpu" "$src" >"$out/bench.txt"; then
    cat "$out/bench.txt"
    while read -r name value unit rest; do
      row "$name" "$value $unit ${rest:-}"
    done <"$out/bench.txt"
    # the tensor-core GEMMs against the f32 product (fragment layouts)
    if ! awk '$1 ~ /^gemm_.*_max_rel_err$/ { n++; if (!($2 >= 0 && $2 < 1e-2)) bad = 1 }
              END { exit bad || n < 3 }' "$out/bench.txt"; then
      row "GEMM check" "FAILED: a tensor-core GEMM differs from the f32 product"; gemm_fail=1
    fi
  else
    row benchmarks "FAILED (see $log)"
  fi
else
  row benchmarks "bench_gpu did not build (see $log)"
fi
row "total time" "$(elapsed) s"
[ "$fail" -eq 0 ] && [ "$scan_fail" -eq 0 ] && [ "$art_fail" -eq 0 ] && [ "$gemm_fail" -eq 0 ] || exit 1
exit 0

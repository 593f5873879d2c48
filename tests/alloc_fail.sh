#!/bin/sh
# alloc_fail.sh - the tdsl command line under allocation failure, as TAP
# tests for make check (issue 13, "Robust under hostile input and faults").
#
# TDSL_TEST_FAIL_ALLOC=K (cli/main.c) makes allocation K of tdsl's own
# (everything through runtime/mem.c) and every later one fail; with =count
# nothing fails and tdsl prints "tdsl: N allocations" on stderr at exit.
# Each scenario below runs on examples/mlp.td, first without failures (its
# reference stdout and files, and N), then under every K = 1, 2, ..., N+1
# (no stride).  Each run must
#   - end by itself within $TDSL_ALLOC_TIMEOUT seconds (default 60), by exit,
#     not by a signal, and print no sanitizer report;
#   - either exit 0 with the reference stdout (a failure it can do without,
#     such as the compile cache's, may give a warning that says "out of
#     memory", nothing else), or exit 1 with "out of memory" on stderr,
#     no other message (every line that says "error" or "warning" says "out
#     of memory") and the start of the reference stdout on stdout;
#   - leave every output file (--out, --save-weights, build -o DIR) as it was
#     before (a sentinel) or complete (as in the reference run), and nothing
#     else in the output directory (no temporaries);
# and K = N+1 must succeed.  In sanitizer builds (TDSL_CFLAGS has
# -fsanitize) LeakSanitizer is switched on and first checked to report a
# leak, so a leak at any K fails.
#
# `tdsl build` and `run --compiled` call libgccjit, which aborts the process
# when its own allocations fail; the hook fails only tdsl's, so gccjit is
# not made to fail here (docs/compiler.md, "Out of memory").
#
# Environment (set by Makefile.am): TDSL_SRCDIR, TDSL_BUILDDIR, TDSL_CFLAGS;
# TDSL_BIN runs another tdsl; TDSL_ALLOC_ONLY=NAME,... runs only those
# scenarios (the list is below); TDSL_ALLOC_KEEP=1 keeps the scratch dir.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
tdsl=${TDSL_BIN:-$builddir/tdsl}
limit=${TDSL_ALLOC_TIMEOUT:-60}
scenarios="check run entry out save compiled compiled-warm compiled-out build repl"

case $tdsl in /*) ;; *) tdsl=$(pwd)/$tdsl ;; esac
cd "$srcdir" || exit 1
W=$(mktemp -d "${TMPDIR:-/tmp}/tdsl-allocfail.XXXXXX") || exit 1
[ -n "${TDSL_ALLOC_KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
export NO_COLOR=1 XDG_STATE_HOME="$W/state" TDSL_PATH="${TDSL_PATH:-$srcdir/stdlib}"
mlp=examples/mlp.td

say() { echo "alloc_fail: $*" >&2; }

san=0
case "${TDSL_CFLAGS:-}" in *-fsanitize*) san=1 ;; esac
if [ "$san" = 1 ]; then
  # later options win: leaks always fail, and any report gives exit 86
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:exitcode=86"
  export ASAN_OPTIONS
fi

n_tests=0
for s in $scenarios; do
  case ",${TDSL_ALLOC_ONLY:-$s}," in *",$s,"*) n_tests=$((n_tests + 1)) ;; esac
done
[ "$san" = 1 ] && n_tests=$((n_tests + 1))
echo "1..$n_tests"
t=0 passed=0 failed=0

report() {   # ok|not-ok TEXT
  t=$((t + 1))
  if [ "$1" = ok ]; then echo "ok $t - $2"; passed=$((passed + 1))
  else echo "not ok $t - $2"; failed=$((failed + 1)); fi
}

if [ "$san" = 1 ]; then
  printf '#include <stdlib.h>\nint main(void) { void *volatile p = malloc(33); p = 0; return p != 0; }\n' >"$W/leak.c"
  # shellcheck disable=SC2086
  if ! ${CC:-cc} $TDSL_CFLAGS -o "$W/leak" "$W/leak.c" >"$W/leak.err" 2>&1; then
    report not-ok "LeakSanitizer probe: cannot build it with ${CC:-cc} $TDSL_CFLAGS"
    cat "$W/leak.err" >&2
  elif "$W/leak" 2>"$W/leak.err"; [ $? -ne 86 ] || ! grep -q 'ERROR: LeakSanitizer' "$W/leak.err"; then
    report not-ok "LeakSanitizer probe: a leak is not reported (ASAN_OPTIONS=$ASAN_OPTIONS)"
    cat "$W/leak.err" >&2
  else
    report ok "LeakSanitizer probe: a leak is reported"
  fi
fi

# ---- inputs: an .npy argument and a weights file, made by tdsl itself ----
printf 'fn main() {\n  rand([3, 784], seed = 5)\n}\n' >"$W/gen.td"
mkdir -p "$W/in" "$W/state"
if ! "$tdsl" run "$W/gen.td" --out "$W/in/x.npy" </dev/null >&2 ||
   ! "$tdsl" run $mlp --seed 3 --save-weights "$W/in/w.safetensors" </dev/null >/dev/null; then
  say "cannot make the inputs with $tdsl"
  while [ $t -lt $n_tests ]; do report not-ok "inputs: tdsl cannot make them"; done
  exit 0
fi
printf 'let m = MLP()\nlet x = rand([2, 784], seed = 1)\nlet (p, c) = m.predict(x)\np\nprint("classes", c)\nsum(p, axis = -1)\n' >"$W/in/repl.txt"

# ---- scenarios ----
# cmd NAME: the command line (run by sh -c, in $srcdir, with $O the output
# dir); outs NAME: the files it writes into $O; stdin NAME: its input.
cmd() {
  case $1 in
    check) echo "\"\$T\" check $mlp" ;;
    run) echo "\"\$T\" run $mlp" ;;
    entry) echo "\"\$T\" run $mlp --entry MLP.predict --in x=\"$W/in/x.npy\"" ;;
    out) echo "\"\$T\" run $mlp --entry MLP.predict --in x=\"$W/in/x.npy\" --weights \"$W/in/w.safetensors\" --out \"\$O/p.npy\" --out \"\$O/c.npy\"" ;;
    save) echo "\"\$T\" run $mlp --save-weights \"\$O/w.safetensors\"" ;;
    compiled) echo "TDSL_CACHE_DIR=\"\$O/cache\" \"\$T\" run --compiled $mlp" ;;
    compiled-warm) echo "TDSL_CACHE_DIR=\"$W/warm\" \"\$T\" run --compiled $mlp" ;;
    compiled-out) echo "TDSL_CACHE_DIR=\"$W/warm\" \"\$T\" run --compiled $mlp --entry MLP.predict --in x=\"$W/in/x.npy\" --out \"\$O/p.npy\" --out \"\$O/c.npy\"" ;;
    build) echo "\"\$T\" build $mlp -o \"\$O\"" ;;
    repl) echo "\"\$T\" repl $mlp" ;;
  esac
}
outs() {
  case $1 in
    out | compiled-out) echo "p.npy c.npy" ;;
    save) echo "w.safetensors" ;;
    build) echo "mlp.so mlp.h" ;;
  esac
}
stdin_of() { if [ "$1" = repl ]; then echo "$W/in/repl.txt"; else echo /dev/null; fi; }

# A fresh output dir $O holding a sentinel in place of each output file.
fresh_out() {
  rm -rf "$O" && mkdir -p "$O" || exit 1
  for f in $(outs "$1"); do echo "sentinel $f" >"$O/$f"; done
}

# Runs scenario $1 under TDSL_TEST_FAIL_ALLOC=$2 into $W/run.{out,err}.
run_one() {
  fresh_out "$1"
  O=$O T=$tdsl TDSL_TEST_FAIL_ALLOC=$2 timeout -k 5 "$limit" sh -c "$(cmd "$1")" \
    <"$(stdin_of "$1")" >"$W/run.out" 2>"$W/run.err"
}

# Is the file $1 complete, as the reference's $2?  A shared library is
# not the same bytes twice: it must be an ELF file exporting the model.
complete() {
  case $1 in
    *.so) head -c 4 "$1" | grep -q ELF && nm -D --defined-only "$1" 2>/dev/null | grep -q ' mlp_create' ;;
    *) cmp -s "$1" "$2" ;;
  esac
}

# Checks the run of scenario $1 at K=$2 (exit status $3); prints why it is
# wrong, or nothing.
verdict() {
  name=$1 k=$2 rc=$3
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "no end within ${limit}s (exit $rc)"; return; fi
  if [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128))"; return; fi
  if grep -q -E 'Sanitizer|runtime error:' "$W/run.err" || [ "$rc" -eq 86 ]; then echo "sanitizer report (exit $rc)"; return; fi
  if [ "$rc" -eq 0 ]; then
    cmp -s "$W/run.out" "$W/ref/$name.out" || { echo "exit 0 with another stdout"; return; }
    bad=$(grep -i -E 'error|warning' "$W/run.err" | grep -v 'warning: .*out of memory' | head -n 1)
    [ -z "$bad" ] || { echo "exit 0 with a message: $bad"; return; }
  elif [ "$rc" -eq 1 ]; then
    grep -q 'out of memory' "$W/run.err" || { echo "exit 1 without 'out of memory' on stderr"; return; }
    bad=$(grep -i -E 'error|warning' "$W/run.err" | grep -v 'out of memory' | head -n 1)
    [ -z "$bad" ] || { echo "a message other than 'out of memory': $bad"; return; }
    n=$(wc -c <"$W/run.out")
    head -c "$n" "$W/ref/$name.out" | cmp -s - "$W/run.out" ||
      { echo "stdout is not the start of the reference stdout"; return; }
  else
    echo "exit $rc (want 0, or 1 for out of memory)"; return
  fi
  for f in $(outs "$name"); do
    if [ ! -f "$O/$f" ]; then echo "$f is gone"; return; fi
    if [ "$rc" -eq 0 ] || ! grep -q -x "sentinel $f" "$O/$f"; then
      complete "$O/$f" "$W/ref/$name.files/$f" || { echo "$f is neither the one before nor complete"; return; }
    fi
  done
  extra=$(ls -A "$O" | grep -v -x -F "$(outs "$name" | tr ' ' '\n')" | grep -v -x cache | head -n 3 | tr '\n' ' ')
  [ -z "$extra" ] || { echo "left in the output dir: $extra"; return; }
  if [ -d "$O/cache" ]; then
    tmp=$(ls -A "$O/cache" | grep -v -E '^[0-9a-f]{16}\.(so|key|sum)$' | head -n 3 | tr '\n' ' ')
    [ -z "$tmp" ] || { echo "left in the cache dir: $tmp"; return; }
  fi
  case $name in compiled-warm | compiled-out)
    for f in "$W/warm-ref"/*; do
      cmp -s "$f" "$W/warm/${f##*/}" || { echo "the cache entry ${f##*/} changed"; return; }
    done ;;
  esac
}

O=$W/o
mkdir -p "$W/ref" "$W/warm"
# the warm cache of compiled-warm and compiled-out: filled once, kept as is
TDSL_CACHE_DIR="$W/warm" "$tdsl" run --compiled $mlp </dev/null >/dev/null 2>&1
TDSL_CACHE_DIR="$W/warm" "$tdsl" run --compiled $mlp --entry MLP.predict --in x="$W/in/x.npy" \
  --out "$W/p.npy" --out "$W/c.npy" </dev/null >/dev/null 2>&1
mkdir -p "$W/warm-ref" && cp "$W/warm"/* "$W/warm-ref/" 2>/dev/null

total_start=$(date +%s)
for name in $scenarios; do
  case ",${TDSL_ALLOC_ONLY:-$name}," in *",$name,"*) ;; *) continue ;; esac
  start=$(date +%s)
  run_one "$name" count
  rc=$?
  n=$(sed -n 's/^tdsl: \([0-9][0-9]*\) allocations$/\1/p' "$W/run.err" | tail -n 1)
  if [ "$rc" -ne 0 ] || [ -z "$n" ] || [ "$(grep -c -v '^tdsl: [0-9]* allocations$' "$W/run.err")" -ne 0 ]; then
    report not-ok "$name: the run without failures: exit $rc"
    head -n 20 "$W/run.err" >&2
    continue
  fi
  cp "$W/run.out" "$W/ref/$name.out"
  rm -rf "$W/ref/$name.files" && mkdir -p "$W/ref/$name.files"
  for f in $(outs "$name"); do cp "$O/$f" "$W/ref/$name.files/$f"; done
  bad=0 shown=0 k=1
  while [ "$k" -le $((n + 1)) ]; do
    run_one "$name" "$k"
    rc=$?
    why=$(verdict "$name" "$k" "$rc")
    [ -n "$why" ] || [ "$k" -le "$n" ] || [ "$rc" -eq 0 ] || why="K = N+1 = $k fails (exit $rc)"
    if [ -n "$why" ]; then
      bad=$((bad + 1))
      shown=$((shown + 1))
      if [ "$shown" -le 5 ]; then   # the first few in full, then one line each
        say "$name, TDSL_TEST_FAIL_ALLOC=$k: $why; $(cmd "$name" | sed "s|\$O|$O|g; s|\"\$T\"|tdsl|g")"
        sed -e 's/^/    stderr: /' "$W/run.err" | head -n 8 >&2
      elif [ "$shown" -le 50 ]; then
        say "$name, TDSL_TEST_FAIL_ALLOC=$k: $why"
      fi
    fi
    k=$((k + 1))
  done
  secs=$(( $(date +%s) - start ))
  if [ "$bad" -eq 0 ]; then
    report ok "$name: K = 1..$((n + 1)), every K ($n allocations), ${secs}s"
  else
    report not-ok "$name: $bad of K = 1..$((n + 1)) wrong ($n allocations), ${secs}s"
  fi
done
say "all scenarios: $(( $(date +%s) - total_start ))s"

echo "Synthesis: Tested: $t | Passing: $passed | Failing: $failed | Crashing: 0" >&2
exit 0

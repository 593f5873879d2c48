#!/bin/sh
# char_rnn.sh - examples/char_rnn.td, the character-level LSTM, at a small
# size (hidden 16, windows of 16 characters of the GPL, batch 8):
#  1. the first five `tdsl train` steps give the same losses --eager and
#     compiled (labels i64[N, T], the next character at every position; x
#     i64 ids);
#  2. 50 compiled steps bring the loss down (the mean of the last ten steps'
#     losses is 0.5 below the first's);
#  3. `sample` (a scan of K generation steps) gives the same characters
#     eager and compiled, greedy and at temperature 1, with the weights of 2;
#  4. labels of the wrong shape are refused naming the file and both
#     shapes, and so is a label outside the vocabulary.
# Needs python3 (standard library only: examples/char_rnn_data.py writes
# the .npy files) and /usr/share/common-licenses/GPL-3 (Debian's
# base-files); each test says SKIP and why without them.
# Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
tdsl="$builddir/tdsl"
text=/usr/share/common-licenses/GPL-3
data="$srcdir/examples/char_rnn_data.py"
echo "1..4"
why=
command -v python3 >/dev/null 2>&1 || why="no python3"
[ -r "$text" ] || why="no $text (Debian's base-files)"
if [ -n "$why" ]; then
  for i in 1 2 3 4; do echo "ok $i - char_rnn # SKIP $why"; done
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tdsl-charrnn.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export TDSL_CACHE_DIR="$work/cache"
export TDSL_PATH="$srcdir/examples${TDSL_PATH:+:$TDSL_PATH}"
fail=0
cat > "$work/small.td" <<'TD'
import char_rnn
model Small {
  t = char_rnn.Train(hidden = 16, lr = 0.01)
  fn step(x: i64[B, T], y: i64[B, T]) -> f32[] { t.step(x, y) }
  fn evaluate(x: i64[B, T], y: i64[B, T]) -> (f32[], i64[]) { t.evaluate(x, y) }
  fn sample(prime: i64[P], n: i64[K], temp: f32[]) -> i64[K] { t.sample(prime, n, temp) }
}
TD
if ! python3 "$data" windows "$text" "$work" --window 16 --stride 8 >"$work/data.log" 2>&1 ||
   ! python3 "$data" encode "This License" "$work/prime.npy" ||
   ! python3 "$data" count 40 "$work/n.npy" ||
   ! python3 "$data" temp 0 "$work/t0.npy" || ! python3 "$data" temp 1 "$work/t1.npy"; then
  echo "Bail out! examples/char_rnn_data.py failed"
  sed 's/^/# /' "$work/data.log"
  exit 1
fi
train() { # train NAME STEPS [FLAGS...]: a run of `tdsl train`, its log in NAME.csv
  name=$1 steps=$2
  shift 2
  timeout 300 "$tdsl" train "$work/small.td" --model Small --train "$work/train_x.npy,$work/train_y.npy" \
    --batch 8 --max-steps "$steps" --log "$work/$name.csv" "$@" >"$work/$name.log" 2>&1 && return 0
  sed 's/^/# /' "$work/$name.log" | tail -20
  return 1
}
# the loss of each step from the running means of the log (train_loss is
# the epoch's mean so far: loss_s = s * mean_s - (s - 1) * mean_(s-1))
step_losses() {
  awk -F, 'NR > 1 { s = $2; m = $4; print s * m - (s - 1) * prev; prev = m }' "$work/$1.csv"
}

# 50 compiled steps (tests 1 to 3) and five eager ones (test 1); the same
# seed, so the same batches in the same order
trained=0
train long 50 --save-weights "$work/w.safetensors" && trained=1
# 1: eager and compiled, the first five steps
if train eager 5 --eager && [ $trained = 1 ] &&
   step_losses eager >"$work/e" && step_losses long | head -5 >"$work/c" &&
   paste "$work/e" "$work/c" | awk '{ n++; d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 * $1) bad++ }
       END { exit !(n == 5 && !bad) }'; then
  echo "ok 1 - the first five steps on i64[N, T] windows give the same losses eager and compiled"
else
  echo "not ok 1 - the first five steps on i64[N, T] windows give the same losses eager and compiled"
  paste "$work/e" "$work/c" 2>/dev/null | sed 's/^/# eager compiled: /'
  fail=1
fi

# 2: 50 steps: the mean of the last ten steps' losses is below the first's
if [ $trained = 1 ] && step_losses long >"$work/l" &&
   awk '{ l[NR] = $1 } END { for (i = 41; i <= 50; i++) s += l[i]; printf "# first %.4f, last ten %.4f\n", l[1], s / 10
        exit !(NR == 50 && s / 10 < l[1] - 0.5) }' "$work/l" >"$work/l.sum"; then
  echo "ok 2 - 50 steps bring the loss down"
  cat "$work/l.sum"
else
  echo "not ok 2 - 50 steps bring the loss down"
  cat "$work/l.sum" 2>/dev/null
  fail=1
fi

# 3: sampling, eager and compiled, from the weights of 2
ok=1
[ -f "$work/w.safetensors" ] || ok=0
for temp in t0 t1; do
  for mode in eager compiled; do
    flag=
    [ $mode = compiled ] && flag=--compiled
    [ $ok = 1 ] || break
    if ! timeout 300 "$tdsl" run "$work/small.td" --entry Small.sample --weights "$work/w.safetensors" \
         --in prime="$work/prime.npy" --in n="$work/n.npy" --in temp="$work/$temp.npy" \
         --out "$work/$temp-$mode.npy" $flag >"$work/s.log" 2>&1 ||
       ! python3 "$data" decode "$work/$temp-$mode.npy" >"$work/$temp-$mode.txt"; then
      ok=0
      sed 's/^/# /' "$work/s.log" | tail -20
    fi
  done
  if [ $ok = 1 ] && ! cmp -s "$work/$temp-eager.npy" "$work/$temp-compiled.npy"; then
    ok=0
    echo "# $temp: the samples differ:"
    sed 's/^/#   eager:    /' "$work/$temp-eager.txt"
    sed 's/^/#   compiled: /' "$work/$temp-compiled.txt"
  fi
done
if [ $ok = 1 ] && [ "$(wc -c <"$work/t0-eager.npy")" -gt 40 ] && ! cmp -s "$work/t0-eager.npy" "$work/t1-eager.npy"; then
  echo "ok 3 - 40 sampled characters are the same eager and compiled (greedy and temperature 1)"
  sed 's/^/#   greedy: /' "$work/t0-eager.txt"
  sed 's/^/#   temp 1: /' "$work/t1-eager.txt"
else
  echo "not ok 3 - 40 sampled characters are the same eager and compiled (greedy and temperature 1)"
  [ $ok = 1 ] && echo "# greedy and temperature 1 gave the same characters"
  fail=1
fi

# 4: labels whose window is not the images' are refused before training
# (windows of 17 every 8 characters: as many as those of 16)
python3 "$data" windows "$text" "$work/w17" --window 17 --stride 8 >/dev/null
n=$(sed -n 's/.*train_y.npy: \([0-9]*\) windows.*/\1/p' "$work/data.log")
"$tdsl" train "$work/small.td" --model Small --train "$work/train_x.npy,$work/w17/train_y.npy" --max-steps 1 \
  >"$work/bad.log" 2>&1
rc=$?
want="$work/w17/train_y.npy: the labels are i64[$n, 17], but Small.step's argument y is i64[B, T]: dimension 1 is 17, expected 16 as in $work/train_x.npy"
# and a label outside the 96 characters (flat index 20: example 1 of 16)
python3 - "$srcdir/examples" "$work" <<'PY'
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, sys.argv[1])
import char_rnn_data as d
y = d.read_npy(sys.argv[2] + "/train_y.npy")
y[20] = 96
d.write_npy(sys.argv[2] + "/bad_y.npy", y, [len(y) // 16, 16])
PY
"$tdsl" train "$work/small.td" --model Small --train "$work/train_x.npy,$work/bad_y.npy" --max-steps 1 \
  >"$work/bad2.log" 2>&1
rc2=$?
want2="$work/bad_y.npy: label 20 (of example 1) is 96, outside [0, 96): Small.step has 96 classes"
if [ $rc = 1 ] && grep -qF "$want" "$work/bad.log" && [ $rc2 = 1 ] && grep -qF "$want2" "$work/bad2.log"; then
  echo "ok 4 - labels of another window or outside the characters are refused naming the files and shapes"
else
  echo "not ok 4 - labels of another window or outside the characters are refused naming the files and shapes"
  echo "# expected (status 1, then 1; were $rc, $rc2): $want"
  echo "# and: $want2"
  sed 's/^/# /' "$work/bad.log" "$work/bad2.log"
  fail=1
fi
exit $fail

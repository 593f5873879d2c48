#!/bin/sh
# build_step.sh - a training step in a built CPU artifact (`tdsl build` of
# an entry that assigns parameters), called through the generated C API
# by a small C program compiled here with the system cc:
#  1. one SGD step (momentum 0.9) of a 2x2 linear classifier from w = 0,
#     against values worked out by hand; the parameters' addresses
#     (tdsl_param_data) are the same before and after the calls, a step
#     after the first allocates nothing (the program counts malloc & co.),
#     and the model's forward entry sees the updated weights; assign(b, a + x);
#     assign(a, b) swaps through a copy, as `tdsl run` does;
#  2. three steps of it against numpy float64 (softmax cross-entropy and
#     PyTorch's SGD with momentum written out);
#  3. five AdamW steps (cosine warmup, gradient clipping) of a two-layer
#     classifier against `tdsl run --entry Train.step` chained through
#     --weights/--save-weights, eager and --compiled: every loss and every
#     final parameter and optimizer state tensor;
#  4. `tdsl build --device cuda` refuses such an entry, saying what to do.
# Needs python3 with numpy and a C compiler (skipped, saying why, without).
# Environment: TDSL_SRCDIR, TDSL_BUILDDIR.
srcdir=${TDSL_SRCDIR:-.}
builddir=${TDSL_BUILDDIR:-.}
. "$srcdir/tests/ref_common.sh"
ref_start 4 "a training step in a built artifact" buildstep
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  for i in 1 2 3 4; do echo "ok $i - training step in an artifact # SKIP no C compiler ($cc)"; done
  exit 0
fi

# A sanitizer build's artifact runtime is instrumented: so is the program
# that loads it.
san=
for f in ${TDSL_CFLAGS:-}; do
  case $f in -fsanitize=*|-fno-sanitize*) san="$san $f" ;; esac
done
count=-DCOUNT_ALLOCS
[ -n "$san" ] && count=

# ---- 1 and 2: the hand-computed step, and numpy --------------------------------
cat > "$work/hand.td" <<'TD'
import nn
import optim
model Net {
  param w: f32[2, 2] = zeros()
  fn forward(x) { x @ transpose(w) }
}
model Train {
  net = Net()
  opt = optim.SGD(net, lr = 0.5, momentum = 0.9)
  fn loss(x, y) { nn.cross_entropy(net(x), y) }
  fn step(x: f32[B, 2], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(g)
    l
  }
  fn forward(x: f32[B, 2]) -> f32[B, 2] { net(x) }
}
model Swap {
  param a: f32[3] = ones()
  param b: f32[3] = full(3.0)
  fn step(x: f32[3]) -> f32[3] {
    # b is overwritten before a takes its old value: copied first
    assign(b, a + x)
    assign(a, b)
    a
  }
}
TD
cat > "$work/hand.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "hand.h"
/* Counts the allocations of the process (glibc's own functions do them):
 * a step after the first must make none.  Not with the sanitizers, which
 * replace these functions themselves. */
#ifdef COUNT_ALLOCS
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t),
    *__libc_memalign(size_t, size_t);
static long allocs;
void *malloc(size_t n) { allocs++; return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { allocs++; return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { allocs++; return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { allocs++; return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) {
  allocs++;
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}
#else
static long allocs = -1;
#endif
/* Prints what the checks below read: the description, then per line a
 * tag and values. */
int main(void) {
  hand_model *m = hand_create();
  if (!m) return printf("create: %s\n", hand_error(NULL)), 1;
  printf("%s", hand_tdsl_describe(m));
  float x[4] = {1, 0, 0, 2}, out[4], loss, xs[3] = {10, 20, 30}, o3[3];
  int64_t y[2] = {0, 1};
  void *at[5];
  for (int i = 0; i < 5; i++) at[i] = hand_tdsl_param_data(m, i);
  if (hand_forward(m, 2, x, out)) return printf("forward: %s\n", hand_error(m)), 1;
  printf("forward %.9g %.9g %.9g %.9g\n", out[0], out[1], out[2], out[3]);
  for (int s = 0; s < 3; s++) {
    long before = allocs;
    if (hand_train_step(m, 2, x, y, &loss)) return printf("step: %s\n", hand_error(m)), 1;
    if (s > 0 && allocs >= 0) printf("allocs %ld\n", allocs - before);
    printf("loss %.9g\n", loss);
    for (int i = 0; i < 3; i++) {
      const float *d = hand_tdsl_param_data(m, i);
      printf("param%d", i);
      for (int k = 0; k < (i == 2 ? 1 : 4); k++) printf(" %.9g", d[k]);
      printf("\n");
    }
    if (hand_forward(m, 2, x, out)) return printf("forward: %s\n", hand_error(m)), 1;
    printf("forward %.9g %.9g %.9g %.9g\n", out[0], out[1], out[2], out[3]);
  }
  for (int s = 0; s < 2; s++) {
    long before = allocs;
    if (hand_swap_step(m, xs, o3)) return printf("swap: %s\n", hand_error(m)), 1;
    if (s > 0 && allocs >= 0) printf("allocs %ld\n", allocs - before);
    const float *a = hand_tdsl_param_data(m, 3), *b = hand_tdsl_param_data(m, 4);
    printf("swap %g %g %g a %g %g %g b %g %g %g\n", o3[0], o3[1], o3[2], a[0], a[1], a[2], b[0], b[1], b[2]);
  }
  int same = 1;
  for (int i = 0; i < 5; i++) same &= at[i] == hand_tdsl_param_data(m, i) && at[i] != NULL;
  printf("same %d\n", same);
  hand_free(m);
  return 0;
}
C
ok=1
if ! "$tdsl" build "$work/hand.td" -o "$work/hand" > "$work/hand.log" 2>&1 ||
   ! "$cc" $san $count -I"$work/hand" "$work/hand.c" "$work/hand/hand.so" -Wl,-rpath,"$work/hand" -o "$work/hand_run" \
       >> "$work/hand.log" 2>&1 ||
   ! "$work/hand_run" > "$work/hand.txt" 2>> "$work/hand.log"; then
  ok=0
  sed 's/^/# /' "$work/hand.log" "$work/hand.txt" 2>/dev/null | head -30
fi
cat > "$work/check.py" <<'PY'
import json, sys
import numpy as np
text = open(sys.argv[1]).read()
desc, rest = text[:text.rindex("}") + 1], text[text.rindex("}") + 1:].split("\n")
d = json.loads(desc)
lines = [l.split() for l in rest if l.strip()]
bad = []
names = [p["name"] for p in d["params"]]
step = [e for e in d["entries"] if e["name"] == "Train.step"][0]
if sorted(names[i] for i in step["updates"]) != ["net.w", "net.w.momentum_buffer", "opt.num_steps"]:
    bad.append(f"Train.step's updates: {[names[i] for i in step['updates']]}")
if [e for e in d["entries"] if e["name"] == "Train.forward"][0]["updates"] != []:
    bad.append("Train.forward says it updates parameters")
if step["outputs"] != [{"dtype": "f32", "shape": [], "type": "f32[]"}]:
    bad.append(f"Train.step's outputs: {step['outputs']}")
vals = lambda tag: [[float(v) for v in l[1:]] for l in lines if l[0] == tag]
loss, fwd = vals("loss"), vals("forward")
w, buf, t = vals("param0"), vals("param1"), vals("param2")
def close(a, b, what, tol=1e-6):
    if not np.allclose(np.array(a, float), np.array(b, float), rtol=tol, atol=tol):
        bad.append(f"{what}: {a}, expected {b}")
# by hand: w = 0, so the logits are 0 and the loss log 2; x = [[1, 0],
# [0, 2]], y = [0, 1]: d loss / d logits = (softmax - one_hot) / 2 =
# [[-1/4, 1/4], [1/4, -1/4]], d loss / d w = that^T @ x = [[-1/4, 1/2],
# [1/4, -1/2]]; the first step's momentum buffer is the gradient, and
# w = 0 - 0.5 * g; then the forward is x @ w^T
g = [-0.25, 0.5, 0.25, -0.5]
close(loss[0], [0.6931471805599453], "loss of step 1")
close(buf[0], g, "momentum buffer after step 1")
close(w[0], [0.125, -0.25, -0.125, 0.25], "w after step 1")
close(t[0], [1], "num_steps after step 1")
close(fwd[0], [0, 0, 0, 0], "forward before the step")
close(fwd[1], [0.125, -0.125, -0.5, 0.5], "forward after step 1")
if sys.argv[2] == "1":
    sw = [l for l in lines if l[0] == "swap"]
    want = ["swap 1 1 1 a 3 3 3 b 11 21 31".split(), "swap 3 3 3 a 11 21 31 b 13 23 33".split()]
    if sw != want:
        bad.append(f"assign(b, a + x); assign(a, b): {sw}, expected {want}")
    if vals("same") != [[1.0]]:
        bad.append("a parameter's address changed across the calls")
    if any(a != [0.0] for a in vals("allocs")):
        bad.append(f"steps after the first allocated memory: {vals('allocs')} allocations")
else:
    # numpy float64: softmax cross-entropy, PyTorch's SGD with momentum
    x = np.array([[1.0, 0], [0, 2]]); y = np.array([0, 1])
    W = np.zeros((2, 2)); B = None
    for s in range(3):
        z = x @ W.T
        p = np.exp(z - z.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
        L = -np.mean(np.log(p[np.arange(2), y]))
        dz = (p - np.eye(2)[y]) / 2
        G = dz.T @ x
        B = G if B is None else 0.9 * B + G
        W = W - 0.5 * B
        close(loss[s], [L], f"loss of step {s + 1}", 1e-5)
        close(w[s], W.ravel(), f"w after step {s + 1}", 1e-5)
        close(buf[s], B.ravel(), f"momentum buffer after step {s + 1}", 1e-5)
        close(fwd[s + 1], (x @ W.T).ravel(), f"forward after step {s + 1}", 1e-5)
        close(t[s], [s + 1], f"num_steps after step {s + 1}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
if [ $ok = 1 ] && "$py" "$work/check.py" "$work/hand.txt" 1 > "$work/cmp1" 2>&1; then
  echo "ok 1 - an artifact's SGD step is the hand-computed one, in place (same addresses, no allocation); assign(b, a + x); assign(a, b)"
else
  sed 's/^/# /' "$work/cmp1" 2>/dev/null
  echo "not ok 1 - an artifact's SGD step is the hand-computed one"
fi
if [ $ok = 1 ] && "$py" "$work/check.py" "$work/hand.txt" 2 > "$work/cmp2" 2>&1; then
  echo "ok 2 - three SGD steps of an artifact agree with numpy float64"
else
  sed 's/^/# /' "$work/cmp2" 2>/dev/null
  echo "not ok 2 - three SGD steps of an artifact agree with numpy float64"
fi

# ---- 3: AdamW steps against `tdsl run`, eager and compiled ------------------------
cat > "$work/mlp.td" <<'TD'
import nn
import optim
model Net {
  fc1 = nn.Linear(16, 32)
  fc2 = nn.Linear(32, 4)
  fn forward(x: f32[B, 16]) -> f32[B, 4] { fc2(tanh(fc1(x))) }
}
model Train {
  net = Net()
  opt = optim.AdamW(net, lr = 0.01, schedule = optim.CosineWarmup(2, 10))
  fn loss(x, y) { nn.cross_entropy(net(x), y, label_smoothing = 0.05) }
  fn step(x: f32[B, 16], y: i64[B]) -> f32[] {
    let (l, g) = value_and_grad(loss, wrt = net)(x, y)
    opt.step(optim.clip_grad_norm(g, 1.0))
    l
  }
}
TD
cat > "$work/mlp.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "mlp.h"
/* mlp_run DIR STEPS: step s reads DIR/x<s>.bin (f32[8, 16]) and
 * DIR/y<s>.bin (i64[8]) and prints its loss; then each parameter i is
 * written to DIR/p<i>.bin and the description to DIR/desc.json.  The
 * first parameter's address must not change. */
int main(int argc, char **argv) {
  mlp_model *m = mlp_create();
  if (!m || argc < 3) return printf("create: %s\n", mlp_error(NULL)), 1;
  float x[8 * 16], loss;
  int64_t y[8];
  char path[4096];
  const char *desc = mlp_tdsl_describe(m);
  snprintf(path, sizeof path, "%s/desc.json", argv[1]);
  FILE *f = fopen(path, "w");
  fputs(desc, f);
  fclose(f);
  void *at = mlp_tdsl_param_data(m, 0);
  for (int s = 0; s < atoi(argv[2]); s++) {
    snprintf(path, sizeof path, "%s/x%d.bin", argv[1], s);
    f = fopen(path, "rb");
    if (!f || fread(x, sizeof x, 1, f) != 1) return 1;
    fclose(f);
    snprintf(path, sizeof path, "%s/y%d.bin", argv[1], s);
    f = fopen(path, "rb");
    if (!f || fread(y, sizeof y, 1, f) != 1) return 1;
    fclose(f);
    if (mlp_step(m, 8, x, y, &loss)) return printf("step: %s\n", mlp_error(m)), 1;
    printf("%.9g\n", loss);
  }
  if (at != mlp_tdsl_param_data(m, 0)) return printf("parameter 0 moved\n"), 1;
  for (int i = 0; mlp_tdsl_param_data(m, i); i++) {
    snprintf(path, sizeof path, "%s/p%d.bin", argv[1], i);
    f = fopen(path, "wb");
    /* its size (the description, JSON, is not parsed here): the one
     * get_param accepts, a whole number of f32s below 1 MiB */
    static unsigned char buf[1 << 20];
    size_t n = 4;
    while (n < sizeof buf && mlp_tdsl_get_param(m, i, buf, n)) n += 4;
    fwrite(buf, 1, n, f);
    fclose(f);
  }
  mlp_free(m);
  return 0;
}
C
steps=5
"$py" - "$work" $steps <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(11)
for s in range(int(sys.argv[2])):
    y = rng.integers(0, 4, 8)
    x = (rng.random((8, 16)) * 128 + 64 * (np.arange(16) % 4 == y[:, None])).astype(np.float32) / 64
    x.tofile(f"{sys.argv[1]}/x{s}.bin"); y.astype(np.int64).tofile(f"{sys.argv[1]}/y{s}.bin")
    np.save(f"{sys.argv[1]}/x{s}.npy", x); np.save(f"{sys.argv[1]}/y{s}.npy", y.astype(np.int64))
PY
ok=1
if ! "$tdsl" build "$work/mlp.td" -o "$work/mlp" --entry Train.step > "$work/mlp.log" 2>&1 ||
   ! "$cc" $san -I"$work/mlp" "$work/mlp.c" "$work/mlp/mlp.so" -Wl,-rpath,"$work/mlp" -o "$work/mlp_run" \
       >> "$work/mlp.log" 2>&1 ||
   ! "$work/mlp_run" "$work" $steps > "$work/artifact.txt" 2>> "$work/mlp.log"; then
  ok=0
  sed 's/^/# /' "$work/mlp.log" "$work/artifact.txt" 2>/dev/null | head -30
fi
for mode in eager compiled; do
  flag=
  [ $mode = compiled ] && flag=--compiled
  s=0
  weights=
  : > "$work/$mode.txt"
  while [ $ok = 1 ] && [ $s -lt $steps ]; do
    if ! "$tdsl" run "$work/mlp.td" --entry Train.step --in x="$work/x$s.npy" --in y="$work/y$s.npy" $weights \
         --out "$work/$mode.loss$s.npy" --save-weights "$work/$mode.$s.safetensors" $flag >> "$work/$mode.log" 2>&1; then
      ok=0
      sed 's/^/# /' "$work/$mode.log" | head -20
    fi
    weights="--weights $work/$mode.$s.safetensors"
    s=$((s + 1))
  done
done
if [ $ok = 1 ] && "$py" - "$work" $steps "$srcdir/tests" > "$work/cmp3" 2>&1 <<'PY'
import json, sys
import numpy as np
w, steps = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from safetensors_io import load   # tests/safetensors_io.py
bad = []
art = np.loadtxt(f"{w}/artifact.txt", ndmin=1)
d = json.load(open(f"{w}/desc.json"))
params = {p["name"]: np.fromfile(f"{w}/p{i}.bin", dtype=np.float32).reshape(p["shape"])
          for i, p in enumerate(d["params"])}
if len(d["entries"][0]["updates"]) != len(params):
    bad.append(f"Train.step updates {len(d['entries'][0]['updates'])} of {len(params)} parameters")
if not any(k.endswith("exp_avg") for k in params):
    bad.append(f"no optimizer state among the parameters: {sorted(params)}")
for mode, tol in (("compiled", 1e-5), ("eager", 1e-4)):
    ref = np.array([np.load(f"{w}/{mode}.loss{s}.npy") for s in range(steps)], dtype=np.float64)
    if len(art) != steps or not np.all(np.abs(art - ref) <= tol * np.abs(ref)):
        bad.append(f"losses differ from {mode}: {art} / {ref}")
    if not ref[-1] < ref[0]:
        bad.append(f"{mode}: the loss did not go down: {ref}")
    final = load(f"{w}/{mode}.{steps - 1}.safetensors")[0]
    if sorted(final) != sorted(params):
        bad.append(f"{mode} saved {sorted(final)}, the artifact has {sorted(params)}")
    for k in final:
        if k in params and not np.max(np.abs(final[k] - params[k])) <= tol * max(np.max(np.abs(final[k])), 1e-12):
            bad.append(f"{k} differs from {mode} by {np.max(np.abs(final[k] - params[k]))}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
then
  echo "ok 3 - $steps AdamW steps of an artifact agree with tdsl run, eager and compiled (losses, weights, state)"
else
  sed 's/^/# /' "$work/cmp3" 2>/dev/null
  echo "not ok 3 - $steps AdamW steps of an artifact agree with tdsl run, eager and compiled"
fi

# ---- 4: CUDA artifacts refuse a training step --------------------------------------
"$tdsl" build "$work/hand.td" -o "$work/cuda" --device cuda > "$work/cuda.log" 2>&1
rc=$?
if [ $rc != 0 ] && grep -q "entry 'Train.step' assigns parameters (a training step), which CUDA artifacts cannot run yet; build it for the CPU" "$work/cuda.log"; then
  echo "ok 4 - tdsl build --device cuda refuses a training step"
else
  sed 's/^/# /' "$work/cuda.log"
  echo "not ok 4 - tdsl build --device cuda refuses a training step (exit $rc)"
fi

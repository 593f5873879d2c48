/* bench_gpu.c - GPU benchmarks for gpu/device-check.sh (a tool, not built by make).
 *
 *   bench_gpu SRCDIR
 *
 * Prints one line per measurement, "name value unit [reference]":
 *   pointwise   relu(x * 2 + 1) over 2^26 f32 through tdsl, in GB/s (bytes
 *               read + written), against a device-to-device copy of the
 *               same bytes (cuMemcpyDtoDAsync);
 *   gemm_f32    4096^3 through tdsl (f32, CUDA cores), in TFLOP/s, against
 *               cuBLAS sgemm (f32) and sgemm with TF32 tensor cores;
 *   gemm_bf16, gemm_f16   4096^3 with bf16 / f16 operands and result
 *               through tdsl (m16n8k16 tensor cores, f32 accumulation),
 *               against cuBLAS GemmEx with the same input type and f32
 *               output and compute; each result is checked against the
 *               f32 tdsl product of the same (widened) values:
 *               max |half - f32| / max |f32| should stay below 1e-2 (the
 *               result's own rounding is 2^-9 for bf16, 2^-12 for f16);
 *   mlp, transformer   fn main of the examples, per-call latency in
 *               microseconds, with plain launches and with --cuda-graph.
 * cuBLAS is loaded with dlopen; without it the references are "n/a".
 * Timing: the kernels of one call are launched `repeat` times after one
 * warm-up call and the stream is synchronised (runtime_cuda.h).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/driver.h"
#include "lang/elab.h"
#include "runtime/half.h"
#include "runtime/cuda_loader.h"
#include "gpu/runtime_cuda.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *srcdir = ".";

static void on_print(void *ud, const char *text) {
  (void)ud;
  (void)text;
}

/* Runs `entry` of the program text with the given inputs `repeat` times;
 * returns ms per call, or -1. */
static double time_entry(const char *path, const char *text, const char *entry, td_tensor **inputs, int repeat,
                         int graph, td_tensor **keep) {
  td_arena *a = td_arena_new();
  td_diags d;
  td_diags_init(&d, a);
  td_program *p = td_program_new(a, &d);
  char stdlib[2048];
  snprintf(stdlib, sizeof stdlib, "%s/stdlib", srcdir);
  td_program_add_search_dir(p, stdlib);
  double ms = -1;
  if (text ? td_program_load_text(p, path, text) : td_program_load_file(p, path)) {
    td_diag_render(&d, stderr, 0);
    td_arena_free(a);
    return -1;
  }
  td_graph *g = td_program_lower(p, entry);
  td_tensor *params[256] = {0};
  td_err err;
  if (g && g->n_params <= 256 && !td_make_params(g, NULL, 0, params, &err)) {
    td_run_opts io;
    memset(&io, 0, sizeof io);
    io.on_print = on_print;
    io.print_threshold = 1000;
    td_cuda_opts co = {graph, NULL, repeat, &ms};
    td_tensor **outs = NULL;
    td_span sp;
    td_plan *plan = td_lower(g, NULL, NULL, &err);
    if (!plan || td_cuda_run(plan, inputs, params, &io, &co, &outs, &err, &sp)) {
      fprintf(stderr, "bench_gpu: %s: %s\n", entry, err.msg);
      ms = -1;
    }
    if (keep && outs && g->n_outputs) *keep = td_tensor_retain(outs[0]);
    for (int i = 0; outs && i < g->n_outputs; i++) td_tensor_release(outs[i]);
    free(outs);
    for (int i = 0; i < g->n_params; i++) td_tensor_release(params[i]);
  }
  td_arena_free(a);
  return ms;
}

static td_tensor *random_tensor(int rank, const int64_t *shape) {
  td_err err;
  td_tensor *t = td_tensor_new(TD_F32, rank, shape, &err);
  if (!t) return NULL;
  float *f = t->data;
  for (int64_t i = 0; i < t->numel; i++) f[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  return t;
}

/* A copy of f32 tensor t in f16 or bf16 (rounded to nearest even), and t
 * itself rounded the same way (so f32 products see the same values). */
static td_tensor *half_copy(td_tensor *t, td_dtype dt) {
  td_err err;
  td_tensor *h = td_tensor_new(dt, t->rank, t->shape, &err);
  if (!h) return NULL;
  float *f = t->data;
  uint16_t *u = h->data;
  for (int64_t i = 0; i < t->numel; i++) {
    u[i] = dt == TD_F16 ? td_f32_to_f16(f[i]) : td_f32_to_bf16(f[i]);
    f[i] = dt == TD_F16 ? td_f16_to_f32(u[i]) : td_bf16_to_f32(u[i]);
  }
  return h;
}

/* max |got - want| / max |want| over two tensors of equal size (got f32,
 * f16 or bf16; want f32); -1 when either is missing. */
static double max_rel_err(const td_tensor *got, const td_tensor *want) {
  if (!got || !want || got->numel != want->numel) return -1;
  double m = 0, d = 0;
  const float *w = want->data;
  for (int64_t i = 0; i < want->numel; i++) {
    double g = td_tensor_get(got, i), v = w[i] < 0 ? -w[i] : w[i], e = g - w[i];
    if (v > m) m = v;
    if ((e < 0 ? -e : e) > d || e != e) d = e != e ? 1e30 : (e < 0 ? -e : e);
  }
  return m > 0 ? d / m : d;
}

/* ---- cuBLAS through dlopen ---- */

typedef int (*create_fn)(void **);
typedef int (*stream_fn)(void *, void *);
typedef int (*mode_fn)(void *, int);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const void *, int, const void *, int,
                        const float *, void *, int);
typedef int (*gemmex_fn)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                         int, const void *, void *, int, int, int, int);

static double cublas_ms(const td_cuda_api *cu, int kind, int n, int repeat) {
  void *lib = dlopen("libcublas.so.13", RTLD_NOW);
  if (!lib) lib = dlopen("libcublas.so.12", RTLD_NOW);
  if (!lib) lib = dlopen("/usr/local/cuda/lib64/libcublas.so", RTLD_NOW);
  if (!lib) return -1;
  create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
  stream_fn set_stream = (stream_fn)dlsym(lib, "cublasSetStream_v2");
  mode_fn set_mode = (mode_fn)dlsym(lib, "cublasSetMathMode");
  sgemm_fn sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
  gemmex_fn gemmex = (gemmex_fn)dlsym(lib, "cublasGemmEx");
  void *h = NULL;
  if (!create || !set_stream || !set_mode || !sgemm || !gemmex || create(&h)) return -1;
  td_cu_stream s;
  td_cu_deviceptr a, b, c;
  size_t bytes = (size_t)n * (size_t)n * 4;
  if (cu->cuStreamCreate(&s, 1) || cu->cuMemAlloc(&a, bytes) || cu->cuMemAlloc(&b, bytes) || cu->cuMemAlloc(&c, bytes))
    return -1;
  cu->cuMemsetD32Async(a, 0x3c23d70a, (size_t)n * n, s);  /* 0.01f */
  cu->cuMemsetD32Async(b, 0x3c23d70a, (size_t)n * n, s);
  set_stream(h, s);
  set_mode(h, kind == 1 ? 3 /* CUBLAS_TF32_TENSOR_OP_MATH */ : 0);
  const float one = 1, zero = 0;
  double t0 = 0;
  int rc = 0;
  for (int i = 0; i <= repeat && !rc; i++) {
    if (i == 1) {
      cu->cuStreamSynchronize(s);
      t0 = now_ms();
    }
    if (kind >= 2) {  /* bf16 (CUDA_R_16BF = 14) or f16 (CUDA_R_16F = 2) inputs, f32 output, f32 compute (68) */
      int t = kind == 2 ? 14 : 2;
      rc = gemmex(h, 0, 0, n, n, n, &one, (void *)a, t, n, (void *)b, t, n, &zero, (void *)c, 0, n, 68, -1);
    }
    else rc = sgemm(h, 0, 0, n, n, n, &one, (void *)a, n, (void *)b, n, &zero, (void *)c, n);
  }
  cu->cuStreamSynchronize(s);
  double ms = rc ? -1 : (now_ms() - t0) / repeat;
  cu->cuMemFree(a);
  cu->cuMemFree(b);
  cu->cuMemFree(c);
  return ms;
}

static double d2d_ms(const td_cuda_api *cu, size_t bytes, int repeat) {
  td_cu_stream s;
  td_cu_deviceptr a, b;
  if (cu->cuStreamCreate(&s, 1) || cu->cuMemAlloc(&a, bytes) || cu->cuMemAlloc(&b, bytes)) return -1;
  cu->cuMemcpyDtoDAsync(b, a, bytes, s);
  cu->cuStreamSynchronize(s);
  double t0 = now_ms();
  for (int i = 0; i < repeat; i++) cu->cuMemcpyDtoDAsync(b, a, bytes, s);
  cu->cuStreamSynchronize(s);
  double ms = (now_ms() - t0) / repeat;
  cu->cuMemFree(a);
  cu->cuMemFree(b);
  return ms;
}

static void row(const char *name, double v, const char *unit, const char *ref_name, double ref) {
  printf("%-22s %10.4g %-8s", name, v, v < 0 ? "(failed)" : unit);
  if (ref_name) printf("  %s %.4g", ref_name, ref);
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_gpu SRCDIR\n");
    return 2;
  }
  srcdir = argv[1];
  const char *bench = "fn pw(x: f32[N]) {\n  relu(x * 2.0 + 1.0)\n}\n"
                      "fn mm(a: f32[N, N], b: f32[N, N]) {\n  a @ b\n}\n"
                      "fn mmbf(a: bf16[N, N], b: bf16[N, N]) {\n  a @ b\n}\n"
                      "fn mmh(a: f16[N, N], b: f16[N, N]) {\n  a @ b\n}\n";
  int64_t n_pw = (int64_t)1 << 26, n_mm[2] = {4096, 4096};
  td_tensor *x = random_tensor(1, &n_pw);
  td_tensor *ab[2] = {random_tensor(2, n_mm), random_tensor(2, n_mm)};
  td_err err;
  double pw = time_entry("bench.td", bench, "pw", &x, 50, 0, NULL);
  const td_cuda_api *cu = td_cuda_load_driver(&err);
  if (!cu) {
    fprintf(stderr, "bench_gpu: %s\n", err.msg);
    return 1;
  }
  double bytes = (double)n_pw * 8;
  double cp = d2d_ms(cu, (size_t)n_pw * 4, 50);
  row("pointwise_GB/s", bytes / (pw * 1e6), "GB/s", "d2d_copy", bytes / (cp * 1e6));
  double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  td_tensor *c32 = NULL, *c_tf = NULL;
  double mm = time_entry("bench.td", bench, "mm", ab, 10, 0, &c32);
  setenv("TDSL_CUDA_TF32", "1", 1);
  double mm_tf = time_entry("bench.td", bench, "mm", ab, 10, 0, &c_tf);
  unsetenv("TDSL_CUDA_TF32");
  double err_tf = -1;   /* max |tf32 - f32| / max |f32|: checks the mma fragment layout */
  if (c32 && c_tf) {
    double m = 0, d = 0;
    const float *p32 = c32->data, *ptf = c_tf->data;
    for (int64_t i = 0; i < c32->numel; i++) {
      double v = p32[i] < 0 ? -p32[i] : p32[i], e = p32[i] - ptf[i];
      if (v > m) m = v;
      if ((e < 0 ? -e : e) > d) d = e < 0 ? -e : e;
    }
    err_tf = m > 0 ? d / m : d;
  }
  /* bf16 and f16: the operands rounded, the f32 product of the rounded
   * values (CUDA cores, f32 FMA) as the reference */
  static const char *const hname[2] = {"bf16", "f16"};
  double mm_h[2] = {-1, -1}, err_h[2] = {-1, -1};
  for (int t = 0; t < 2; t++) {
    td_tensor *ref[2] = {random_tensor(2, n_mm), random_tensor(2, n_mm)};
    td_tensor *hab[2] = {NULL, NULL}, *c_h = NULL, *c_ref = NULL;
    if (ref[0] && ref[1] && (hab[0] = half_copy(ref[0], t ? TD_F16 : TD_BF16)) &&
        (hab[1] = half_copy(ref[1], t ? TD_F16 : TD_BF16))) {
      mm_h[t] = time_entry("bench.td", bench, t ? "mmh" : "mmbf", hab, 10, 0, &c_h);
      time_entry("bench.td", bench, "mm", ref, 1, 0, &c_ref);
      err_h[t] = max_rel_err(c_h, c_ref);
    }
    for (int i = 0; i < 2; i++) {
      td_tensor_release(ref[i]);
      td_tensor_release(hab[i]);
    }
    td_tensor_release(c_h);
    td_tensor_release(c_ref);
  }
  double cb[4];
  for (int k = 0; k < 4; k++) cb[k] = cublas_ms(cu, k, 4096, 10);
  row("gemm_f32_TFLOP/s", flops / (mm * 1e9), "TFLOP/s", "cublas_f32", cb[0] > 0 ? flops / (cb[0] * 1e9) : -1);
  row("gemm_tf32_TFLOP/s", flops / (mm_tf * 1e9), "TFLOP/s", "cublas_tf32", cb[1] > 0 ? flops / (cb[1] * 1e9) : -1);
  row("gemm_tf32_max_rel_err", err_tf, "", "ok_below", 0.01);
  for (int t = 0; t < 2; t++) {
    char name[64], ref[64];
    snprintf(name, sizeof name, "gemm_%s_TFLOP/s", hname[t]);
    snprintf(ref, sizeof ref, "cublas_%s", hname[t]);
    row(name, mm_h[t] > 0 ? flops / (mm_h[t] * 1e9) : -1, "TFLOP/s", ref,
        cb[2 + t] > 0 ? flops / (cb[2 + t] * 1e9) : -1);
    snprintf(name, sizeof name, "gemm_%s_max_rel_err", hname[t]);
    row(name, err_h[t], "", "ok_below", 0.01);
  }
  char path[2048];
  const char *ex[2] = {"mlp", "transformer"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/examples/%s.td", argv[1], ex[i]);
    double plain = time_entry(path, NULL, "main", NULL, 100, 0, NULL);
    double graph = time_entry(path, NULL, "main", NULL, 100, 1, NULL);
    char name[64];
    snprintf(name, sizeof name, "%s_us_per_call", ex[i]);
    row(name, plain * 1e3, "us", "with_cuda_graph", graph * 1e3);
  }
  td_tensor_release(x);
  td_tensor_release(ab[0]);
  td_tensor_release(ab[1]);
  td_tensor_release(c32);
  td_tensor_release(c_tf);
  return 0;
}

/* artifact_check.c - calls a CUDA artifact (`tdsl build --device cuda`)
 * with host pointers and with device pointers, against a reference.
 *
 *   tdsl build examples/mlp.td -o out --device cuda
 *   cc -std=c11 -I out -DTD_HEADER='"mlp.h"' -DTD_PREFIX=mlp -DTD_ENTRY=mlp_forward \
 *      -DTD_SYMS=4 -DTD_IN_N=3136 -DTD_OUT_N=40 tests/gpu/artifact_check.c out/mlp.so \
 *      -Wl,-rpath,"$PWD/out" -o check
 *   ./check input x.npy          writes the input (f32, TD_IN_N values)
 *   tdsl run examples/mlp.td --entry MLP.forward --in x=x.npy --out ref.npy
 *   ./check compare ref.npy [N]  runs the entry both ways, compares with ref
 *
 * TD_ENTRY is called as TD_ENTRY(m, TD_SYMS, x, out) with one f32 input of
 * TD_IN_N values and one f32 output of TD_OUT_N (shape [4, 784] and [4, 10]
 * above).  The device-pointer call gets memory from the driver API itself
 * (libcuda.so.1 by dlopen: cuMemAlloc, copies on the model's stream), so
 * no CUDA header or toolkit is needed.  `compare` prints one line,
 *   host max|err| 1.2e-07 device max|err| 1.2e-07 (of max|ref| 0.93) [host 0.05 ms device 0.03 ms]
 * and exits 0 when both are within 1e-3 of max|ref|, 1 otherwise (2 when
 * something cannot run).  With N > 0 it also times N calls of each kind
 * (the minimum).  Used by gpu/device-check.sh on a GPU and by
 * tests/unit/test_gpu_build.c under a stand-in driver.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include TD_HEADER

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define P(name) CAT(TD_PREFIX, name)
#define ENTRY_DEVICE CAT(TD_ENTRY, _device)

typedef int (*alloc_fn)(uint64_t *p, size_t n);
typedef int (*free_fn)(uint64_t p);
typedef int (*htod_fn)(uint64_t dst, const void *src, size_t n, void *stream);
typedef int (*dtoh_fn)(void *dst, uint64_t src, size_t n, void *stream);
typedef int (*sync_fn)(void *stream);

static float value(size_t i) { return (float)(0.5 * sin(0.37 * (double)i + 1.0)); }

/* A little-endian f32 .npy of n values, shape [n] (tdsl run reshapes nothing,
 * so the shape must be the entry's: given as dims). */
static int write_npy(const char *path, const float *v, const int64_t *dims, int rank) {
  char shape[128] = "", hdr[256];
  size_t at = 0;
  for (int k = 0; k < rank; k++) at += (size_t)snprintf(shape + at, sizeof shape - at, "%lld, ", (long long)dims[k]);
  if (rank > 1) shape[at - 2] = 0;
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
  int total = 10 + n + 1, pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  uint16_t len = (uint16_t)(n + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fwrite(&len, 2, 1, f);
  fwrite(hdr, 1, (size_t)n, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  size_t count = 1;
  for (int k = 0; k < rank; k++) count *= (size_t)dims[k];
  fwrite(v, sizeof *v, count, f);
  return fclose(f);
}

/* The values of an f32 .npy (version 1) with n values; 0 or -1. */
static int read_npy(const char *path, float *v, size_t n) {
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  if (!f) return -1;
  int ok = fread(head, 1, 10, f) == 10 && !memcmp(head, "\x93NUMPY", 6);
  size_t len = ok ? (size_t)head[8] | (size_t)head[9] << 8 : 0;
  char hdr[4096];
  ok = ok && len < sizeof hdr && fread(hdr, 1, len, f) == len;
  if (ok) hdr[len] = 0;
  ok = ok && strstr(hdr, "'<f4'") && fread(v, sizeof *v, n, f) == n;
  fclose(f);
  return ok ? 0 : -1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double max_err(const float *got, const float *want, size_t n, double *scale) {
  double e = 0, s = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= e)) e = d;   /* NaN counts as the largest error */
    if (fabs((double)want[i]) > s) s = fabs((double)want[i]);
  }
  *scale = s;
  return e;
}

int main(int argc, char **argv) {
  static const int64_t syms[] = {TD_SYMS};
  static float x[TD_IN_N], ref[TD_OUT_N], host[TD_OUT_N], dev[TD_OUT_N];
  for (size_t i = 0; i < TD_IN_N; i++) x[i] = value(i);
  if (argc == 3 && !strcmp(argv[1], "input")) {
    int64_t dims[8];
    int rank = 0;
    size_t rest = TD_IN_N;
    for (size_t k = 0; k < sizeof syms / sizeof *syms; k++) {
      dims[rank++] = syms[k];
      rest /= (size_t)syms[k];
    }
    dims[rank++] = (int64_t)rest;   /* the entry's input is [syms..., rest] */
    return write_npy(argv[2], x, dims, rank) ? 2 : 0;
  }
  if (argc < 3 || strcmp(argv[1], "compare")) {
    fprintf(stderr, "usage: %s input X.npy | compare REF.npy [N]\n", argv[0]);
    return 2;
  }
  long timed = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
  if (read_npy(argv[2], ref, TD_OUT_N)) {
    fprintf(stderr, "%s: cannot read %d f32 values from %s\n", argv[0], TD_OUT_N, argv[2]);
    return 2;
  }
  P(_model) *m = P(_create)();
  if (!m) {
    fprintf(stderr, "%s: %s\n", argv[0], P(_error)(NULL));
    return 2;
  }
  double t_host = 1e300, t_dev = 1e300;
  int rc = TD_ENTRY(m, TD_SYMS, x, host);
  for (long i = 0; i < timed && !rc; i++) {
    double t0 = now_ms();
    rc = TD_ENTRY(m, TD_SYMS, x, host);
    if (now_ms() - t0 < t_host) t_host = now_ms() - t0;
  }
  if (rc) {
    fprintf(stderr, "%s: host-pointer call: %s\n", argv[0], P(_error)(m));
    return 2;
  }
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  alloc_fn mem_alloc = cu ? (alloc_fn)dlsym(cu, "cuMemAlloc_v2") : NULL;
  free_fn mem_free = cu ? (free_fn)dlsym(cu, "cuMemFree_v2") : NULL;
  htod_fn htod = cu ? (htod_fn)dlsym(cu, "cuMemcpyHtoDAsync_v2") : NULL;
  dtoh_fn dtoh = cu ? (dtoh_fn)dlsym(cu, "cuMemcpyDtoHAsync_v2") : NULL;
  sync_fn sync = cu ? (sync_fn)dlsym(cu, "cuStreamSynchronize") : NULL;
  uint64_t dx = 0, dy = 0;
  void *s = P(_stream)(m);
  if (!mem_alloc || !mem_free || !htod || !dtoh || !sync || mem_alloc(&dx, sizeof x) || mem_alloc(&dy, sizeof dev) ||
      htod(dx, x, sizeof x, s)) {
    fprintf(stderr, "%s: the driver API cannot allocate or copy\n", argv[0]);
    return 2;
  }
  const float *px = (const float *)(uintptr_t)dx;
  float *py = (float *)(uintptr_t)dy;
  rc = ENTRY_DEVICE(m, TD_SYMS, px, py);
  if (!rc) rc = P(_synchronize)(m);
  for (long i = 0; i < timed && !rc; i++) {
    double t0 = now_ms();
    rc = ENTRY_DEVICE(m, TD_SYMS, px, py);
    if (!rc) rc = P(_synchronize)(m);
    if (now_ms() - t0 < t_dev) t_dev = now_ms() - t0;
  }
  if (rc || dtoh(dev, dy, sizeof dev, s) || sync(s)) {
    fprintf(stderr, "%s: device-pointer call: %s\n", argv[0], rc ? P(_error)(m) : "cannot copy the output back");
    return 2;
  }
  mem_free(dx);
  mem_free(dy);
  P(_free)(m);
  double scale, e_host = max_err(host, ref, TD_OUT_N, &scale), e_dev = max_err(dev, ref, TD_OUT_N, &scale);
  printf("host max|err| %.2g device max|err| %.2g (of max|ref| %.2g)", e_host, e_dev, scale);
  if (timed > 0) printf(" host %.3f ms device %.3f ms", t_host, t_dev);
  printf("\n");
  double tol = 1e-3 * (scale > 1 ? scale : 1);
  return e_host <= tol && e_dev <= tol ? 0 : 1;
}

/* test_runtime.c - unit tests for runtime/mem.c and the runtime core:
 * allocation hook and failure injection, arenas, tensors, dtypes, the
 * tensor printer (against hand-written expected text), Philox (against
 * Random123's known-answer vectors and distribution statistics) and the
 * thread pool (every task exactly once, never after its job returned).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/philox.h"
#include "runtime/pool.h"
#include "runtime/sig.h"
#include "runtime/tensor.h"
#include <unistd.h>

/* ---- allocation hook ---------------------------------------------------- */

/* A size that could not be represented evaluates to -1 with the overflow
 * flag, without reading a polynomial table (none is given here). */
Test(sizes, a_bad_dim_evaluates_to_an_overflow) {
  td_sizes none = {0};
  int ovf = 0;
  cr_expect_eq(td_sizes_eval_ovf(&none, TD_DIM_BAD, NULL, &ovf), -1);
  cr_expect_eq(ovf, 1);
  cr_expect_eq(td_sizes_eval(&none, TD_DIM_BAD, NULL), -1);
  ovf = 0;
  cr_expect_eq(td_sizes_eval_ovf(&none, 12, NULL, &ovf), 12);
  cr_expect_eq(ovf, 0);
}

Test(mem, fail_after_counts_requests) {
  td_mem_fail_after(3);
  void *a = td_malloc(8), *b = td_calloc(2, 8);
  cr_assert(a && b);
  cr_assert_null(td_malloc(8));
  cr_assert_null(td_malloc(8), "stays failing after the n-th request");
  cr_assert_null(td_strdup("x"));
  td_mem_fail_after(0);
  void *c = td_realloc(NULL, 16);
  cr_assert_not_null(c);
  td_free(a);
  td_free(b);
  td_free(c);
}

Test(mem, calloc_zeroes_and_checks_overflow) {
  unsigned char *p = td_calloc(100, 3);
  cr_assert_not_null(p);
  for (int i = 0; i < 300; i++)
    cr_assert_eq(p[i], 0);
  td_free(p);
  cr_assert_null(td_calloc(SIZE_MAX / 2, 3));
}

Test(mem, aligned_alloc_is_aligned_and_injectable) {
  void *p = td_aligned_alloc(64, 100);
  cr_assert_not_null(p);
  cr_assert_eq((uintptr_t)p % 64, 0);
  td_aligned_free(p);
  td_mem_fail_after(1);
  cr_assert_null(td_aligned_alloc(64, 100));
  td_mem_fail_after(0);
}

Test(mem, realloc_keeps_contents) {
  char *p = td_strdup("hello");
  p = td_realloc(p, 1000);
  cr_assert_str_eq(p, "hello");
  td_free(p);
}

/* ---- arenas ------------------------------------------------------------- */

Test(arena, zeroed_aligned_allocations) {
  td_arena *a = td_arena_new();
  cr_assert_not_null(a);
  static const size_t sizes[] = {1, 3, 16, 17, 100, 5000, 70000, 200000, 0, 7};
  for (int rep = 0; rep < 50; rep++) {
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      unsigned char *p = td_arena_alloc(a, sizes[k]);
      cr_assert_not_null(p);
      cr_assert_eq((uintptr_t)p % 16, 0);
      for (size_t i = 0; i < sizes[k]; i++)
        cr_assert_eq(p[i], 0);
      memset(p, 0xAB, sizes[k]); /* ASan catches overlapping blocks */
    }
  }
  td_arena_free(a);
  td_arena_free(NULL);
}

Test(arena, strings) {
  td_arena *a = td_arena_new();
  cr_assert_str_eq(td_arena_strdup(a, "abc"), "abc");
  cr_assert_str_eq(td_arena_strndup(a, "abcdef", 4), "abcd");
  cr_assert_str_eq(td_arena_strndup(a, "ab", 10), "ab");
  cr_assert_str_eq(td_arena_printf(a, "%s-%d-%.2f", "x", 42, 1.5), "x-42-1.50");
  char big[3000];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  char *s = td_arena_printf(a, "<%s>", big);
  cr_assert_eq(strlen(s), sizeof big + 1);
  cr_assert_eq(s[0], '<');
  cr_assert_eq(s[sizeof big], '>');
  td_arena_free(a);
}

Test(arena, vec_push_many) {
  td_arena *a = td_arena_new();
  td_vec v = {0};
  for (intptr_t i = 0; i < 5000; i++)
    cr_assert_eq(td_vec_push(a, &v, (void *)(i + 1)), 0);
  cr_assert_eq(v.n, 5000);
  for (intptr_t i = 0; i < 5000; i++)
    cr_assert_eq((intptr_t)v.items[i], i + 1);
  td_arena_free(a);
}

Test(arena, out_of_memory_is_reported) {
  td_arena *a = td_arena_new();
  td_vec v = {0};
  td_mem_fail_after(1);
  cr_assert_null(td_arena_alloc(a, 10), "first chunk cannot be made");
  cr_assert_eq(td_vec_push(a, &v, a), -1);
  cr_assert_null(td_arena_printf(a, "%d", 1));
  td_mem_fail_after(0);
  cr_assert_not_null(td_arena_alloc(a, 10));
  td_arena_free(a);
  td_mem_fail_after(1);
  cr_assert_null(td_arena_new());
  td_mem_fail_after(0);
}

/* ---- errors and dtypes -------------------------------------------------- */

Test(tensor, err_set) {
  td_err e;
  cr_assert_eq(td_err_set(&e, "bad %s %d", "thing", 7), -1);
  cr_assert_str_eq(e.msg, "bad thing 7");
  cr_assert_eq(td_err_set(NULL, "ignored"), -1);
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  td_err_set(&e, "%s", big);
  cr_assert_eq(strlen(e.msg), sizeof e.msg - 1, "truncated, terminated");
}

Test(tensor, dtype_helpers) {
  static const struct {
    td_dtype dt;
    const char *name;
    size_t size;
    int is_float;
  } want[] = {{TD_BOOL, "bool", 1, 0}, {TD_I32, "i32", 4, 0}, {TD_I64, "i64", 8, 0},
              {TD_F32, "f32", 4, 1},   {TD_F64, "f64", 8, 1},   {TD_F16, "f16", 2, 1},
              {TD_BF16, "bf16", 2, 1}};
  for (int i = 0; i < 7; i++) {
    td_dtype got;
    cr_assert_str_eq(td_dtype_name(want[i].dt), want[i].name);
    cr_assert_eq(td_dtype_size(want[i].dt), want[i].size);
    cr_assert_eq(td_dtype_is_float(want[i].dt), want[i].is_float);
    cr_assert_eq(td_dtype_from_name(want[i].name, &got), 0);
    cr_assert_eq(got, want[i].dt);
  }
  td_dtype got;
  cr_assert_eq(td_dtype_from_name("f8", &got), -1);
  cr_assert_eq(td_dtype_from_name("", &got), -1);
}

/* ---- tensors ------------------------------------------------------------ */

Test(tensor, new_and_release) {
  td_err e;
  int64_t shape[] = {2, 3};
  td_tensor *t = td_tensor_new(TD_F32, 2, shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  cr_assert_eq(t->numel, 6);
  cr_assert_eq(t->rank, 2);
  cr_assert_eq(t->shape[0], 2);
  cr_assert_eq(t->shape[1], 3);
  cr_assert_eq(t->refcount, 1);
  cr_assert_eq((uintptr_t)t->data % 64, 0);
  cr_assert_eq(td_tensor_retain(t), t);
  cr_assert_eq(t->refcount, 2);
  td_tensor_release(t);
  cr_assert_eq(t->refcount, 1);
  td_tensor_release(t);
  td_tensor_release(NULL);
}

Test(tensor, zeros_every_dtype) {
  td_err e;
  int64_t shape[] = {3, 5, 7};
  for (int d = 0; d < TD_DTYPE_COUNT; d++) {
    td_tensor *t = td_tensor_zeros((td_dtype)d, 3, shape, &e);
    cr_assert_not_null(t);
    cr_assert_eq(t->numel, 105);
    for (int64_t i = 0; i < t->numel; i++)
      cr_assert_eq(td_tensor_get(t, i), 0.0);
    td_tensor_release(t);
  }
}

Test(tensor, rank0_and_zero_size) {
  td_err e;
  td_tensor *s = td_tensor_new(TD_F64, 0, NULL, &e);
  cr_assert_not_null(s);
  cr_assert_eq(s->numel, 1);
  td_tensor_release(s);
  int64_t shape[] = {4, 0, 3};
  td_tensor *z = td_tensor_zeros(TD_I64, 3, shape, &e);
  cr_assert_not_null(z);
  cr_assert_eq(z->numel, 0);
  cr_assert_not_null(z->data);
  td_tensor_release(z);
}

Test(tensor, bad_shapes) {
  td_err e;
  int64_t neg[] = {2, -1};
  cr_assert_null(td_tensor_new(TD_F32, 2, neg, &e));
  cr_assert(strstr(e.msg, "negative"), "%s", e.msg);
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  cr_assert_null(td_tensor_new(TD_F32, 9, nine, &e));
  cr_assert(strstr(e.msg, "rank 9"), "%s", e.msg);
  int64_t huge[] = {(int64_t)1 << 62, (int64_t)1 << 62};
  cr_assert_null(td_tensor_new(TD_F32, 2, huge, &e));
  cr_assert(strstr(e.msg, "too large"), "%s", e.msg);
  int64_t huge0[] = {(int64_t)1 << 62, (int64_t)1 << 62, 0};
  cr_assert_null(td_tensor_new(TD_F32, 3, huge0, &e), "a zero does not hide overflow");
  int64_t big[] = {(int64_t)1 << 40, 1 << 10}; /* 4 PiB of f32 */
  cr_assert_null(td_tensor_new(TD_F32, 2, big, &e));
  cr_assert(strstr(e.msg, "TDSL_MAX_TENSOR_BYTES"), "%s", e.msg);
  /* an empty tensor holds no bytes: the limit does not refuse it (NumPy
   * makes np.zeros((0, 2**40)); it was refused as 4 TiB) */
  int64_t empty_big[] = {0, (int64_t)1 << 40};
  td_tensor *z = td_tensor_new(TD_F32, 2, empty_big, &e);
  cr_assert_not_null(z, "%s", e.msg);
  cr_expect_eq(z->numel, 0);
  td_tensor_release(z);
}

Test(tensor, max_bytes_env) {
  unsetenv("TDSL_MAX_TENSOR_BYTES");
  td_tensor_limits_reload();
  cr_assert_eq(td_tensor_max_bytes(), (size_t)16 << 30);
  setenv("TDSL_MAX_TENSOR_BYTES", "100", 1);
  cr_assert_eq(td_tensor_max_bytes(), (size_t)16 << 30, "read once per process");
  td_tensor_limits_reload();
  cr_assert_eq(td_tensor_max_bytes(), 100);
  td_err e;
  int64_t ok[] = {25}, bad[] = {26};
  td_tensor *t = td_tensor_new(TD_F32, 1, ok, &e);
  cr_assert_not_null(t, "100 bytes is allowed");
  td_tensor_release(t);
  cr_assert_null(td_tensor_new(TD_F32, 1, bad, &e), "104 bytes is not");
  cr_assert(strstr(e.msg, "f32[26]"), "%s", e.msg);
  setenv("TDSL_MAX_TENSOR_BYTES", "lots", 1);
  td_tensor_limits_reload();
  cr_assert_eq(td_tensor_max_bytes(), (size_t)16 << 30, "garbage -> default");
  unsetenv("TDSL_MAX_TENSOR_BYTES");
}

Test(tensor, get_set_conversions) {
  td_err e;
  int64_t n[] = {6};
  td_tensor *b = td_tensor_zeros(TD_BOOL, 1, n, &e);
  td_tensor *i = td_tensor_zeros(TD_I32, 1, n, &e);
  td_tensor *l = td_tensor_zeros(TD_I64, 1, n, &e);
  td_tensor *f = td_tensor_zeros(TD_F32, 1, n, &e);
  static const double in[6] = {2.0, -3.7, 1e20, -1e20, NAN, 0.1};
  for (int k = 0; k < 6; k++) {
    td_tensor_set(b, k, in[k]);
    td_tensor_set(i, k, in[k]);
    td_tensor_set(l, k, in[k]);
    td_tensor_set(f, k, in[k]);
  }
  static const double wb[6] = {1, 1, 1, 1, 1, 1};
  static const double wi[6] = {2, -3, 2147483647.0, -2147483648.0, 0, 0};
  for (int k = 0; k < 6; k++) {
    cr_assert_eq(td_tensor_get(b, k), wb[k]);
    cr_assert_eq(td_tensor_get(i, k), wi[k]);
  }
  cr_assert_eq(((int64_t *)l->data)[2], INT64_MAX);
  cr_assert_eq(((int64_t *)l->data)[3], INT64_MIN);
  cr_assert_eq(((int64_t *)l->data)[1], -3);
  cr_assert_eq(((float *)f->data)[5], 0.1f);
  cr_assert(isnan(td_tensor_get(f, 4)));
  td_tensor_release(b);
  td_tensor_release(i);
  td_tensor_release(l);
  td_tensor_release(f);
}

Test(tensor, allocation_failure_is_clean) {
  td_err e;
  int64_t shape[] = {10, 10};
  for (long n = 1; n <= 2; n++) {
    td_mem_fail_after(n);
    cr_assert_null(td_tensor_new(TD_F32, 2, shape, &e), "request %ld fails", n);
    cr_assert(strstr(e.msg, "out of memory"), "%s", e.msg);
    td_mem_fail_after(0);
  }
  td_mem_fail_after(3);
  td_tensor *t = td_tensor_new(TD_F32, 2, shape, &e);
  td_mem_fail_after(0);
  cr_assert_not_null(t, "two requests suffice");
  td_tensor_release(t);
}

/* ---- shape text and printing ---------------------------------------------- */

Test(format, shape_str) {
  char buf[64];
  int64_t s[] = {2, 3};
  cr_assert_str_eq(td_shape_str(TD_F32, 2, s, buf, sizeof buf), "f32[2, 3]");
  cr_assert_str_eq(td_shape_str(TD_I64, 0, NULL, buf, sizeof buf), "i64[]");
  int64_t one[] = {7};
  cr_assert_str_eq(td_shape_str(TD_BOOL, 1, one, buf, sizeof buf), "bool[7]");
  char small[6];
  td_shape_str(TD_F32, 2, s, small, sizeof small);
  cr_assert_str_eq(small, "f32[2");
}

/* Builds a tensor from doubles. */
static td_tensor *mk(td_dtype dt, int rank, const int64_t *shape, const double *v) {
  td_err e;
  td_tensor *t = td_tensor_new(dt, rank, shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  for (int64_t i = 0; i < t->numel; i++)
    td_tensor_set(t, i, v ? v[i] : (double)i);
  return t;
}

static void check_format(td_tensor *t, int64_t threshold, const char *want) {
  char *s = td_tensor_format(t, threshold);
  cr_assert_not_null(s);
  cr_assert_str_eq(s, want);
  td_free(s);
  td_tensor_release(t);
}

Test(format, floats_fixed) {
  int64_t s[] = {2, 2};
  double v[] = {1.0, -2.5, 0.0, 3.14159265};
  check_format(mk(TD_F32, 2, s, v), 1000,
               "[[ 1.0000, -2.5000],\n [ 0.0000,  3.1416]]");
  check_format(mk(TD_F64, 2, s, v), 1000,
               "[[ 1.0000, -2.5000],\n [ 0.0000,  3.1416]]");
}

Test(format, floats_scientific) {
  int64_t s[] = {2};
  double big[] = {1e10, 1.0}, tiny[] = {1e-5, -2.0};
  check_format(mk(TD_F64, 1, s, big), 1000, "[1.0000e+10, 1.0000e+00]");
  check_format(mk(TD_F64, 1, s, tiny), 1000, "[ 1.0000e-05, -2.0000e+00]");
  int64_t s3[] = {3};
  double zeros[] = {0.0, 0.0, 0.0};
  check_format(mk(TD_F32, 1, s3, zeros), 1000, "[0.0000, 0.0000, 0.0000]");
}

Test(format, nonfinite) {
  int64_t s[] = {4};
  double v[] = {NAN, INFINITY, -INFINITY, 1.5};
  check_format(mk(TD_F32, 1, s, v), 1000, "[   nan,    inf,   -inf, 1.5000]");
}

Test(format, ints_and_bools) {
  int64_t s[] = {3};
  double v[] = {1, -20, 300};
  check_format(mk(TD_I32, 1, s, v), 1000, "[  1, -20, 300]");
  check_format(mk(TD_I64, 1, s, v), 1000, "[  1, -20, 300]");
  int64_t s2[] = {2};
  double b[] = {1, 0};
  check_format(mk(TD_BOOL, 1, s2, b), 1000, "[ true, false]");
}

Test(format, rank0_and_empty) {
  double f = 2.5, i = -7, b = 1;
  check_format(mk(TD_F64, 0, NULL, &f), 1000, "2.5000");
  check_format(mk(TD_I64, 0, NULL, &i), 1000, "-7");
  check_format(mk(TD_BOOL, 0, NULL, &b), 1000, "true");
  int64_t z[] = {2, 0};
  check_format(mk(TD_F32, 2, z, NULL), 1000, "[]");
}

Test(format, rank3_blocks) {
  int64_t s[] = {2, 2, 2};
  check_format(mk(TD_I32, 3, s, NULL), 1000,
               "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
}

Test(format, long_rows_wrap) {
  int64_t s[] = {30};
  check_format(mk(TD_I32, 1, s, NULL), 1000,
               "[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, "
               "16, 17,\n 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]");
}

Test(format, summarised_2000) {
  int64_t s[] = {40, 50};
  check_format(mk(TD_I32, 2, s, NULL), 1000,
               "[[   0,    1,    2, ...,   47,   48,   49],\n"
               " [  50,   51,   52, ...,   97,   98,   99],\n"
               " [ 100,  101,  102, ...,  147,  148,  149],\n"
               " ...,\n"
               " [1850, 1851, 1852, ..., 1897, 1898, 1899],\n"
               " [1900, 1901, 1902, ..., 1947, 1948, 1949],\n"
               " [1950, 1951, 1952, ..., 1997, 1998, 1999]]");
  /* the same tensor under a higher threshold is printed in full */
  td_tensor *t = mk(TD_I32, 2, s, NULL);
  char *full = td_tensor_format(t, 5000);
  cr_assert_null(strstr(full, "..."));
  int rows = 0;
  for (char *c = full; *c; c++)
    rows += *c == '[';
  cr_assert_eq(rows, 41);
  cr_assert(strstr(full, " [1950, 1951, 1952, 1953,"));
  td_free(full);
  td_tensor_release(t);
}

Test(format, summarised_1d_float) {
  int64_t s[] = {2000};
  td_tensor *t = mk(TD_F32, 1, s, NULL);
  for (int64_t i = 0; i < 2000; i++)
    ((float *)t->data)[i] = 0.5f * (float)i;
  /* shown magnitudes span 0.5 .. 999.5, a ratio above 1000: e-notation */
  check_format(t, 1000, "[0.0000e+00, 5.0000e-01, 1.0000e+00, ..., 9.9850e+02, "
                        "9.9900e+02,\n 9.9950e+02]");
}

Test(format, out_of_memory) {
  int64_t s[] = {3};
  td_tensor *t = mk(TD_F32, 1, s, NULL);
  td_mem_fail_after(1);
  cr_assert_null(td_tensor_format(t, 1000));
  td_mem_fail_after(0);
  td_tensor_release(t);
}

/* ---- Philox ------------------------------------------------------------- */

static void kat(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                uint32_t k1, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  uint32_t ctr[4] = {c0, c1, c2, c3}, key[2] = {k0, k1}, out[4];
  td_philox4x32_10(ctr, key, out);
  cr_assert_eq(out[0], r0, "got %08x want %08x", out[0], r0);
  cr_assert_eq(out[1], r1, "got %08x want %08x", out[1], r1);
  cr_assert_eq(out[2], r2, "got %08x want %08x", out[2], r2);
  cr_assert_eq(out[3], r3, "got %08x want %08x", out[3], r3);
}

Test(philox, random123_known_answers) {
  kat(0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
  kat(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
      0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd);
  kat(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
      0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1);
}

Test(philox, mapping_of_seed_stream_index) {
  /* seed 0, stream 0, i 0 is counter {0,0,0,0} key {0,0}: r0 = 0x6627e8d5 */
  cr_assert_eq(td_rand_uniform(0, 0, 0), (double)(0x6627e8d5u >> 8) / 16777216.0);
  double u1 = ((double)(0x6627e8d5u >> 8) + 1.0) / 16777216.0;
  double u2 = (double)(0xe169c58du >> 8) / 16777216.0;
  double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
  cr_assert_float_eq(td_rand_normal(0, 0, 0), z, 1e-15);
  /* all ones: counter and key all 0xffffffff */
  cr_assert_eq(td_rand_uniform(UINT64_MAX, UINT64_MAX, UINT64_MAX),
               (double)(0x408f276du >> 8) / 16777216.0);
  /* the index's high word is counter word 1, the stream's low word is 2 */
  uint32_t ctr[4] = {5, 7, 11, 13}, key[2] = {17, 19}, out[4];
  td_philox4x32_10(ctr, key, out);
  uint64_t i = (uint64_t)7 << 32 | 5, st = (uint64_t)13 << 32 | 11;
  uint64_t seed = (uint64_t)19 << 32 | 17;
  cr_assert_eq(td_rand_uniform(seed, st, i), (double)(out[0] >> 8) / 16777216.0);
}

Test(philox, uniform_statistics) {
  const int n = 1000000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  for (int i = 0; i < n; i++) {
    double u = td_rand_uniform(42, 7, (uint64_t)i);
    cr_assert(u >= 0.0 && u < 1.0);
    sum += u;
    sum2 += u * u;
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  cr_assert(fabs(mean - 0.5) < 2e-3, "mean %f", mean);
  cr_assert(fabs(var - 1.0 / 12.0) < 1e-3, "var %f", var);
  cr_assert(lo < 1e-4 && hi > 1 - 1e-4);
}

Test(philox, normal_statistics) {
  const int n = 1000000;
  double sum = 0, sum2 = 0, sum4 = 0;
  for (int i = 0; i < n; i++) {
    double z = td_rand_normal(1234, 99, (uint64_t)i);
    cr_assert(isfinite(z));
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  cr_assert(fabs(mean) < 5e-3, "mean %f", mean);
  cr_assert(fabs(var - 1.0) < 1e-2, "var %f", var);
  cr_assert(fabs(sum4 / n - 3.0) < 5e-2, "fourth moment %f", sum4 / n);
}

Test(philox, streams_differ) {
  int same = 0;
  for (uint64_t i = 0; i < 1000; i++)
    same += td_rand_uniform(1, 1, i) == td_rand_uniform(1, 2, i);
  cr_assert_lt(same, 5);
}

Test(philox, hashes) {
  cr_assert_eq(td_hash_str(""), 0xcbf29ce484222325ull);
  cr_assert_eq(td_hash_str("a"), 0xaf63dc4c8601ec8cull);
  cr_assert_eq(td_hash_str("foobar"), 0x85944171f73967e8ull);
  /* splitmix64's first output for state 0 mixes the golden gamma */
  cr_assert_eq(td_hash_mix(0x9e3779b97f4a7c15ull, 0), 0xe220a8397b1dcdafull);
  cr_assert_neq(td_hash_mix(1, 2), td_hash_mix(2, 1));
}

/* ---- thread pool --------------------------------------------------------- */

/* A job's context lives on the caller's stack and the next job reuses the
 * same memory: a task that ran twice, ran for the wrong job or ran after
 * td_pool_run returned shows as a count other than 1. */
typedef struct pjob {
  _Atomic int hits[64];
  int64_t n;
  int threads;
  _Atomic int bad, other_tid;
  int sleep_us;
} pjob;

static void pool_task(void *ctx, int64_t i, int tid) {
  pjob *j = ctx;
  if (i < 0 || i >= j->n || tid < 0 || tid >= j->threads) {
    atomic_store(&j->bad, 1);
    return;
  }
  if (j->sleep_us) usleep((useconds_t)j->sleep_us);
  if (tid != 0) atomic_store(&j->other_tid, 1);
  atomic_fetch_add(&j->hits[i], 1);
}

/* jobs of 1..64 tasks back to back; returns how many went wrong (no
 * asserts here: a second caller runs it on a thread of its own) */
static int pool_jobs(int threads, int jobs) {
  int wrong = 0;
  for (int r = 0; r < jobs; r++) {
    pjob j;
    memset(&j, 0, sizeof j);
    j.n = 1 + (r * 7919) % 64;
    j.threads = threads;
    td_pool_run(pool_task, &j, j.n);
    int ok = atomic_load(&j.bad) == 0;
    for (int64_t i = 0; i < j.n; i++) ok = ok && atomic_load(&j.hits[i]) == 1;
    wrong += !ok;
    memset(&j, 0xff, sizeof j);   /* what a late task would find */
  }
  return wrong;
}

static void pool_setup(const char *threads, const char *spin_us) {
  setenv("TDSL_NUM_THREADS", threads, 1);   /* before the pool starts: each test is its own process */
  setenv("TDSL_SPIN_US", spin_us, 1);
  cr_assert_eq(td_pool_threads(), atoi(threads));
}

Test(pool, every_task_once_with_watching_workers, .timeout = 120) {
  pool_setup("3", "50");
  cr_assert_eq(pool_jobs(3, 50000), 0);
}

Test(pool, every_task_once_with_parking_workers, .timeout = 120) {
  pool_setup("3", "0");   /* every job wakes parked workers, every wait sleeps */
  cr_assert_eq(pool_jobs(3, 5000), 0);
}

/* The workers take part: slow tasks (0.2 ms) leave them time to claim some. */
Test(pool, workers_run_tasks, .timeout = 120) {
  pool_setup("2", "50");
  int seen = 0;
  for (int r = 0; r < 50 && !seen; r++) {
    pjob j;
    memset(&j, 0, sizeof j);
    j.n = 8;
    j.threads = 2;
    j.sleep_us = 200;
    td_pool_run(pool_task, &j, j.n);
    for (int i = 0; i < 8; i++) cr_assert_eq(atomic_load(&j.hits[i]), 1);
    seen = atomic_load(&j.other_tid);
  }
  cr_assert(seen, "no task ran on a worker in 50 jobs of 8 slow tasks");
}

/* Two callers at once: one gets the pool, the other runs its tasks itself. */
static void *pool_caller(void *arg) {
  *(int *)arg = pool_jobs(3, 20000);
  return NULL;
}

Test(pool, concurrent_callers, .timeout = 120) {
  pool_setup("3", "50");
  pthread_t th;
  int other = -1;
  cr_assert_eq(pthread_create(&th, NULL, pool_caller, &other), 0);
  int mine = pool_jobs(3, 20000);
  pthread_join(th, NULL);
  cr_assert_eq(mine, 0);
  cr_assert_eq(other, 0);
}

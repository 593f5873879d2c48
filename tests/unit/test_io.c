/* test_io.c - unit tests for runtime/io.h: .npy and safetensors files.
 *
 * Reference files are built byte by byte in this file (the layout NumPy and
 * the safetensors library write), so the tests need no Python.  Malformed
 * files are written at run time into a fresh temporary directory per test:
 * truncations at every byte, bad magic, absurd lengths and shapes, wrong
 * dtypes, bad JSON.  Every failure must be an error message, never a crash
 * or a leak (run under ASan).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"
#include "runtime/mem.h"
#include "runtime/sig.h"

/* ---- fixtures and helpers ----------------------------------------------- */

static char tmpdir[64];

static void setup(void) {
  strcpy(tmpdir, "/tmp/tdsl_io_XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) < 0)
      rm_tree(p);
  }
  closedir(d);
  rmdir(dir);
}

static void teardown(void) { rm_tree(tmpdir); }

TestSuite(npy, .init = setup, .fini = teardown);
TestSuite(st, .init = setup, .fini = teardown);
TestSuite(map);

static const char *tmp(const char *name) {
  static char buf[4][256];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

/* Number of entries in the temporary directory. */
static int dir_entries(void) {
  DIR *d = opendir(tmpdir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* Whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

/* A byte buffer assembled piece by piece. */
typedef struct bytes {
  unsigned char d[4096];
  size_t n;
} bytes;

static void put(bytes *b, const void *p, size_t n) {
  cr_assert(b->n + n <= sizeof b->d);
  memcpy(b->d + b->n, p, n);
  b->n += n;
}

static void puts_(bytes *b, const char *s) { put(b, s, strlen(s)); }

static void put_le(bytes *b, uint64_t v, int nbytes) {
  for (int i = 0; i < nbytes; i++) {
    unsigned char c = (unsigned char)(v >> (8 * i));
    put(b, &c, 1);
  }
}

/* b's bytes, then a hole up to size bytes (a sparse file: no disk used). */
static const char *sparse_file(const char *name, const bytes *b, uint64_t size) {
  const char *p = tmp(name);
  write_file(p, b->d, b->n);
  cr_assert_eq(truncate(p, (off_t)size), 0);
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A .npy file as NumPy writes it: magic, version, header length, the dict,
 * spaces and '\n' up to a multiple of 64, then the data. */
static bytes npy_file(int major, const char *dict, const void *data, size_t n) {
  bytes b = {.n = 0};
  size_t prefix = major == 1 ? 10 : 12;
  size_t total = (prefix + strlen(dict) + 1 + 63) / 64 * 64;
  puts_(&b, "\x93NUMPY");
  unsigned char ver[2] = {(unsigned char)major, 0};
  put(&b, ver, 2);
  put_le(&b, total - prefix, (int)prefix - 8);
  puts_(&b, dict);
  while (b.n < total - 1)
    puts_(&b, " ");
  puts_(&b, "\n");
  if (n)
    put(&b, data, n);
  return b;
}

/* Reads path expecting failure; returns the message (static). */
static const char *npy_fail(const char *path) {
  static td_err e;
  td_tensor *t = (td_tensor *)1;
  e.msg[0] = '\0';
  cr_assert_eq(td_npy_read(path, &t, &e), -1, "reading %s should fail", path);
  cr_assert_null(t);
  cr_assert_neq(e.msg[0], '\0');
  cr_assert_eq(strncmp(e.msg, path, strlen(path)), 0, "starts with path: %s", e.msg);
  return e.msg;
}

static void npy_expect_error(const bytes *b, const char *needle) {
  const char *p = tmp("bad.npy");
  write_file(p, b->d, b->n);
  const char *msg = npy_fail(p);
  cr_assert(strstr(msg, needle), "message '%s' lacks '%s'", msg, needle);
}

/* A tensor of dtype dt and shape with varied values. */
static td_tensor *sample(td_dtype dt, int rank, const int64_t *shape) {
  td_err e;
  td_tensor *t = td_tensor_new(dt, rank, shape, &e);
  cr_assert_not_null(t, "%s", e.msg);
  for (int64_t i = 0; i < t->numel; i++) {
    double v = dt == TD_BOOL ? (double)(i % 3 == 0)
               : td_dtype_is_float(dt) ? (double)i * 0.37 - 3.0 + 1e-3
                                       : (double)(i * 7919 % 1000) - 500;
    td_tensor_set(t, i, v);
  }
  return t;
}

static void assert_same(const td_tensor *a, const td_tensor *b) {
  cr_assert_eq(a->dtype, b->dtype);
  cr_assert_eq(a->rank, b->rank);
  for (int i = 0; i < a->rank; i++)
    cr_assert_eq(a->shape[i], b->shape[i]);
  cr_assert_eq(a->numel, b->numel);
  cr_assert_eq(memcmp(a->data, b->data, (size_t)a->numel * td_dtype_size(a->dtype)), 0);
}

static const int64_t shapes[][4] = {{0}, {5}, {0}, {3, 4}, {0, 3},
                                    {2, 3, 4}, {2, 0, 1}, {2, 1, 3, 2}, {1, 2, 0, 3}};
static const int ranks[] = {0, 1, 1, 2, 2, 3, 3, 4, 4};
#define NSHAPES (int)(sizeof ranks / sizeof ranks[0])

/* ---- npy: round trips and reference bytes -------------------------------- */

Test(npy, round_trip_every_dtype_and_rank) {
  td_err e;
  for (int d = 0; d < TD_DTYPE_COUNT; d++) {
    if (d == TD_BF16) continue; /* NumPy has no bfloat16 (test_half.c) */
    for (int s = 0; s < NSHAPES; s++) {
      td_tensor *t = sample((td_dtype)d, ranks[s], shapes[s]), *back = NULL;
      const char *p = tmp("rt.npy");
      cr_assert_eq(td_npy_write(p, t, &e), 0, "%s", e.msg);
      cr_assert_eq(td_npy_read(p, &back, &e), 0, "%s", e.msg);
      assert_same(t, back);
      td_tensor_release(t);
      td_tensor_release(back);
    }
  }
  cr_assert_eq(dir_entries(), 1, "no temporary files left behind");
}

Test(npy, writer_matches_numpy_bytes) {
  /* np.save of np.arange(6, dtype='<f4').reshape(2, 3) */
  static const char want_hdr[] =
      "\x93NUMPY\x01\x00\x76\x00"
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
      "                                                          \n";
  cr_assert_eq(sizeof want_hdr - 1, 128);
  int64_t shape[] = {2, 3};
  td_err e;
  td_tensor *t = td_tensor_new(TD_F32, 2, shape, &e);
  for (int i = 0; i < 6; i++)
    ((float *)t->data)[i] = (float)i;
  cr_assert_eq(td_npy_write(tmp("a.npy"), t, &e), 0, "%s", e.msg);
  size_t n;
  unsigned char *got = slurp(tmp("a.npy"), &n);
  cr_assert_eq(n, 128 + 24);
  cr_assert_eq(memcmp(got, want_hdr, 128), 0);
  static const unsigned char f32_2[4] = {0x00, 0x00, 0x00, 0x40}; /* 2.0f LE */
  cr_assert_eq(memcmp(got + 128 + 8, f32_2, 4), 0);
  free(got);
  td_tensor_release(t);
}

Test(npy, writer_rank0_and_rank1_headers) {
  td_err e;
  td_tensor *s = td_tensor_zeros(TD_I64, 0, NULL, &e);
  cr_assert_eq(td_npy_write(tmp("s.npy"), s, &e), 0);
  size_t n;
  unsigned char *got = slurp(tmp("s.npy"), &n);
  static const char want0[] = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
  cr_assert_eq(n, 128 + 8);
  cr_assert_eq(memcmp(got + 10, want0, sizeof want0 - 1), 0);
  free(got);
  td_tensor_release(s);
  int64_t three[] = {3};
  td_tensor *b = td_tensor_zeros(TD_BOOL, 1, three, &e);
  cr_assert_eq(td_npy_write(tmp("b.npy"), b, &e), 0);
  got = slurp(tmp("b.npy"), &n);
  static const char want1[] = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }";
  cr_assert_eq(n, 128 + 3);
  cr_assert_eq(memcmp(got + 10, want1, sizeof want1 - 1), 0);
  free(got);
  td_tensor_release(b);
}

Test(npy, reads_hand_built_files) {
  static const struct {
    int major;
    const char *dict;
    td_dtype dt;
    int rank;
    int64_t shape[2];
  } cases[] = {
      {1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", TD_F64, 2, {2, 2}},
      {1, "{'shape':(4,),'fortran_order':False,'descr':'<i4'}", TD_I32, 1, {4}},
      {1, "{ \"descr\" : \"=i8\" , \"fortran_order\" : False , \"shape\" : ( 2 , 1 , ) , }",
       TD_I64, 2, {2, 1}},
      {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }", TD_F32, 1, {4}},
      {3, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }", TD_BOOL, 2, {2, 2}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    /* element k holds k+1 (bools: k % 2) in the file's dtype */
    unsigned char data[64];
    size_t es = td_dtype_size(cases[c].dt), n = 4;
    for (size_t k = 0; k < n; k++) {
      double f64 = (double)k + 1;
      float f32 = (float)k + 1;
      int32_t i32 = (int32_t)k + 1;
      int64_t i64 = (int64_t)k + 1;
      unsigned char b = k % 2;
      const void *src = cases[c].dt == TD_F64   ? (const void *)&f64
                        : cases[c].dt == TD_F32 ? (const void *)&f32
                        : cases[c].dt == TD_I32 ? (const void *)&i32
                        : cases[c].dt == TD_I64 ? (const void *)&i64
                                                : (const void *)&b;
      memcpy(data + k * es, src, es);
    }
    if (cases[c].rank == 2 && cases[c].shape[1] == 1)
      n = 2;
    bytes f = npy_file(cases[c].major, cases[c].dict, data, n * es);
    write_file(tmp("h.npy"), f.d, f.n);
    td_tensor *t;
    td_err e;
    cr_assert_eq(td_npy_read(tmp("h.npy"), &t, &e), 0, "case %zu: %s", c, e.msg);
    cr_assert_eq(t->dtype, cases[c].dt);
    cr_assert_eq(t->rank, cases[c].rank);
    for (int i = 0; i < t->rank; i++)
      cr_assert_eq(t->shape[i], cases[c].shape[i]);
    for (int64_t k = 0; k < t->numel; k++)
      cr_assert_eq(td_tensor_get(t, k),
                   cases[c].dt == TD_BOOL ? (double)(k % 2) : (double)k + 1);
    td_tensor_release(t);
  }
}

/* ---- npy: malformed files ------------------------------------------------ */

Test(npy, truncated_at_every_byte) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                     data, sizeof data);
  cr_assert_eq(f.n, 152);
  for (size_t len = 0; len < f.n; len++) {
    write_file(tmp("t.npy"), f.d, len);
    const char *msg = npy_fail(tmp("t.npy"));
    if (len >= 128) {
      char want[100];
      snprintf(want, sizeof want, "file is truncated: expected 24 bytes of data, "
               "found %zu", len - 128);
      cr_assert(strstr(msg, want), "len %zu: %s", len, msg);
    }
  }
  write_file(tmp("t.npy"), f.d, f.n);
  td_tensor *t;
  td_err e;
  cr_assert_eq(td_npy_read(tmp("t.npy"), &t, &e), 0, "the whole file reads");
  td_tensor_release(t);
}

Test(npy, trailing_data) {
  float data[7] = {0};
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                     data, sizeof data);
  npy_expect_error(&f, "28 bytes of data, expected 24");
}

Test(npy, bad_magic_and_version) {
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                     "\0\0\0\0", 4);
  f.d[1] = 'n';
  npy_expect_error(&f, "not a .npy file (bad magic)");
  f.d[1] = 'N';
  f.d[6] = 4;
  npy_expect_error(&f, "unsupported .npy format version 4.0");
  bytes g = {.n = 0};
  puts_(&g, "PK\3\4 this is a zip");
  npy_expect_error(&g, "bad magic");
}

Test(npy, header_length_beyond_file) {
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                     "\0\0\0\0", 4);
  f.d[8] = 0xff;
  f.d[9] = 0xff;
  npy_expect_error(&f, "header length 65535 exceeds the file size (132 bytes)");
  bytes g = npy_file(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                     "\0\0\0\0", 4);
  g.d[11] = 0x80; /* 2 GiB header in a 132-byte file */
  npy_expect_error(&g, "exceeds the file size");
}

Test(npy, absurd_shapes) {
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (4611686018427387904, 4611686018427387904), }", NULL, 0);
  npy_expect_error(&f, "shape (4611686018427387904, 4611686018427387904) is too large");
  /* fits in 64 bits but the file holds nothing: no allocation is tried */
  bytes g = npy_file(1, "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (1099511627776, 1048576), }", NULL, 0);
  npy_expect_error(&g, "expected 4611686018427387904 bytes of data, found 0");
  bytes h = npy_file(1, "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (99999999999999999999,), }", NULL, 0);
  npy_expect_error(&h, "dimension too large");
  bytes k = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                     NULL, 0);
  npy_expect_error(&k, "negative dimension");
  bytes r = npy_file(1, "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", "\0\0\0\0", 4);
  npy_expect_error(&r, "more than 8 dimensions");
}

Test(npy, unsupported_dtypes) {
  static const struct {
    const char *descr, *needle;
  } cases[] = {
      {">f4", "big-endian dtype '>f4' is not supported"},
      {">i8", "big-endian dtype '>i8'"},
      {"<u2", "unsupported dtype '<u2'"},
      {"|u1", "unsupported dtype '|u1'"},
      {"<c8", "unsupported dtype '<c8'"},
      {"<U3", "unsupported dtype '<U3'"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char dict[128];
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", cases[c].descr);
    bytes f = npy_file(1, dict, "\0\0\0\0\0\0\0\0", 8);
    npy_expect_error(&f, cases[c].needle);
  }
  bytes s = npy_file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                     "\0\0\0\0", 4);
  npy_expect_error(&s, "structured dtypes are not supported");
}

Test(npy, fortran_order) {
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                     "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
  npy_expect_error(&f, "Fortran-order arrays are not supported; save with "
                       "np.ascontiguousarray");
}

Test(npy, bad_bools) {
  bytes f = npy_file(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                     "\1\0\2", 3);
  npy_expect_error(&f, "bool element 2 has byte value 2");
}

Test(npy, bad_header_dicts) {
  static const struct {
    const char *dict, *needle;
  } cases[] = {
      {"{'descr': '<f4', 'shape': (), }", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'descr': '<f4'}",
       "'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}",
       "unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ()} junk", "after the dict"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': ()}", "expected ',' or '}'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': ()}", "at byte 19: expected ':'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': ()}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (", "expected a dimension"},
      {"", "expected '{'"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    bytes f = npy_file(1, cases[c].dict, NULL, 0);
    npy_expect_error(&f, cases[c].needle);
  }
}

Test(npy, missing_file) {
  const char *msg = npy_fail(tmp("nope.npy"));
  cr_assert(strstr(msg, "cannot open"), "%s", msg);
}

Test(npy, limit_from_environment) {
  setenv("TDSL_MAX_TENSOR_BYTES", "16", 1);
  td_tensor_limits_reload();
  float data[6] = {0};
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                     data, sizeof data);
  npy_expect_error(&f, "TDSL_MAX_TENSOR_BYTES");
  unsetenv("TDSL_MAX_TENSOR_BYTES");
}

/* Opening reads and checks the header alone: a 2 GiB array (a sparse
 * file) is described at once; its data is read only when loaded. */
Test(npy, open_reads_only_the_header) {
  bytes f = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 8192), }", NULL, 0);
  const char *p = sparse_file("big.npy", &f, f.n + 2147483648ull);
  td_npy_file nf;
  td_err e;
  double t0 = now_s();
  cr_assert_eq(td_npy_open(p, &nf, &e), 0, "%s", e.msg);
  cr_expect_lt(now_s() - t0, 0.5, "the header alone is read");
  cr_assert_eq(nf.head.dtype, TD_F32);
  cr_assert_eq(nf.head.rank, 2);
  cr_assert_eq(nf.head.shape[0], 65536);
  cr_assert_eq(nf.head.shape[1], 8192);
  cr_assert_eq(nf.head.numel, 536870912);
  cr_assert_null(nf.head.data);
  cr_assert_eq(nf.data_off, f.n);
  td_npy_close(&nf);
  cr_assert_eq(nf.fd, -1);
  /* what td_npy_read refuses, opening refuses too */
  cr_assert_eq(truncate(p, (off_t)(f.n + 2147483647ull)), 0);
  cr_assert_eq(td_npy_open(p, &nf, &e), -1);
  cr_assert(strstr(e.msg, "file is truncated: expected 2147483648 bytes of data, found 2147483647"), "%s", e.msg);
  cr_assert_eq(nf.fd, -1);
}

Test(npy, failed_write_leaves_nothing) {
  td_err e;
  int64_t shape[] = {4};
  td_tensor *t = sample(TD_F32, 1, shape);
  mkdir(tmp("adir"), 0755); /* rename onto a directory fails */
  cr_assert_eq(td_npy_write(tmp("adir"), t, &e), -1);
  cr_assert(strstr(e.msg, "adir"), "%s", e.msg);
  cr_assert_eq(dir_entries(), 1, "temporary file removed");
  cr_assert_eq(td_npy_write(tmp("no/such/dir.npy"), t, &e), -1);
  cr_assert(strstr(e.msg, "cannot create temporary file"), "%s", e.msg);
  td_mem_fail_after(1);
  cr_assert_eq(td_npy_write(tmp("oom.npy"), t, &e), -1);
  td_mem_fail_after(0);
  cr_assert_eq(dir_entries(), 1);
  /* an existing file is replaced whole */
  write_file(tmp("x.npy"), "old", 3);
  cr_assert_eq(td_npy_write(tmp("x.npy"), t, &e), 0);
  td_tensor *back;
  cr_assert_eq(td_npy_read(tmp("x.npy"), &back, &e), 0, "%s", e.msg);
  assert_same(t, back);
  td_tensor_release(back);
  td_tensor_release(t);
}

Test(npy, allocation_failures_are_clean) {
  td_err e;
  int64_t shape[] = {3, 2};
  td_tensor *t = sample(TD_I64, 2, shape);
  cr_assert_eq(td_npy_write(tmp("m.npy"), t, &e), 0);
  int ok = 0;
  for (long n = 1; n <= 10; n++) {
    td_tensor *back = NULL;
    td_mem_fail_after(n);
    int rc = td_npy_read(tmp("m.npy"), &back, &e);
    td_mem_fail_after(0);
    if (rc == 0) {
      assert_same(t, back);
      td_tensor_release(back);
      ok++;
    } else {
      cr_assert(strstr(e.msg, "out of memory"), "%s", e.msg);
    }
  }
  cr_assert_gt(ok, 0);
  td_tensor_release(t);
}

/* ---- tensor maps --------------------------------------------------------- */

Test(map, put_get_free) {
  td_tensor_map m;
  td_err e;
  td_tensor_map_init(&m);
  int64_t s[] = {2};
  td_tensor *a = sample(TD_F32, 1, s), *b = sample(TD_I32, 1, s);
  for (int i = 0; i < 20; i++) {
    char name[16];
    snprintf(name, sizeof name, "t%d", i);
    cr_assert_eq(td_tensor_map_put(&m, name, i % 2 ? a : b, &e), 0);
  }
  cr_assert_eq(a->refcount, 11);
  cr_assert_eq(td_tensor_map_put(&m, "t3", a, &e), -1);
  cr_assert(strstr(e.msg, "duplicate tensor name 't3'"), "%s", e.msg);
  cr_assert_eq(td_tensor_map_get(&m, "t4"), b);
  cr_assert_eq(td_tensor_map_get(&m, "t5"), a);
  cr_assert_null(td_tensor_map_get(&m, "t20"));
  td_tensor_map_free(&m);
  cr_assert_eq(m.n, 0);
  cr_assert_eq(a->refcount, 1);
  td_tensor_release(a);
  td_tensor_release(b);
}

/* ---- safetensors ----------------------------------------------------------- */

/* header length (u64 LE), the JSON text, then data bytes */
static bytes st_file(const char *json, const void *data, size_t n) {
  bytes b = {.n = 0};
  put_le(&b, strlen(json), 8);
  puts_(&b, json);
  if (n)
    put(&b, data, n);
  return b;
}

/* Writes f to the file `name` and reads it into m (which keeps what it
 * held). */
static void st_read_ok(const char *name, const bytes *f, td_tensor_map *m) {
  td_err e;
  write_file(tmp(name), f->d, f->n);
  cr_assert_eq(td_safetensors_read(tmp(name), m, &e), 0, "%s", e.msg);
}

static const char *st_fail(const char *path) {
  static td_err e;
  td_tensor_map m;
  td_tensor_map_init(&m);
  e.msg[0] = '\0';
  cr_assert_eq(td_safetensors_read(path, &m, &e), -1, "reading %s should fail", path);
  cr_assert_eq(m.n, 0);
  td_tensor_map_free(&m);
  cr_assert_eq(strncmp(e.msg, path, strlen(path)), 0, "starts with path: %s", e.msg);
  return e.msg;
}

static void st_expect_error(const bytes *b, const char *needle) {
  const char *p = tmp("w.safetensors");
  write_file(p, b->d, b->n);
  const char *msg = st_fail(p);
  cr_assert(strstr(msg, needle), "message '%s' lacks '%s'", msg, needle);
}

Test(st, round_trip_every_dtype_and_rank) {
  td_tensor_map m, back;
  td_err e;
  td_tensor_map_init(&m);
  td_tensor_map_init(&back);
  for (int d = 0; d < TD_DTYPE_COUNT; d++) {
    for (int s = 0; s < NSHAPES; s++) {
      char name[32];
      snprintf(name, sizeof name, "layer.%d.%s", s, td_dtype_name((td_dtype)d));
      td_tensor *t = sample((td_dtype)d, ranks[s], shapes[s]);
      cr_assert_eq(td_tensor_map_put(&m, name, t, &e), 0);
      td_tensor_release(t);
    }
  }
  cr_assert_eq(td_safetensors_write(tmp("m.safetensors"), &m, &e), 0, "%s", e.msg);
  cr_assert_eq(td_safetensors_read(tmp("m.safetensors"), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.n, m.n);
  for (int i = 0; i < m.n; i++) {
    td_tensor *t = td_tensor_map_get(&back, m.items[i].name);
    cr_assert_not_null(t, "%s", m.items[i].name);
    assert_same(m.items[i].tensor, t);
  }
  for (int i = 1; i < back.n; i++)
    cr_assert_lt(strcmp(back.items[i - 1].name, back.items[i].name), 0, "sorted");
  td_tensor_map_free(&m);
  td_tensor_map_free(&back);
  cr_assert_eq(dir_entries(), 1);
}

Test(st, writer_matches_reference_bytes) {
  td_tensor_map m;
  td_err e;
  td_tensor_map_init(&m);
  int64_t two[] = {2};
  td_tensor *b = td_tensor_new(TD_F32, 1, two, &e), *a = td_tensor_new(TD_I32, 0, NULL, &e);
  ((float *)b->data)[0] = 1.0f;
  ((float *)b->data)[1] = 2.0f;
  ((int32_t *)a->data)[0] = 7;
  td_tensor_map_put(&m, "b", b, &e);
  td_tensor_map_put(&m, "a", a, &e);
  static const unsigned char want[] =
      "\x70\0\0\0\0\0\0\0"
      "{\"a\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}     "
      "\x07\0\0\0"
      "\0\0\x80\x3f\0\0\0\x40";
  cr_assert_eq(td_safetensors_write(tmp("r.safetensors"), &m, &e), 0, "%s", e.msg);
  size_t n;
  unsigned char *got = slurp(tmp("r.safetensors"), &n);
  cr_assert_eq(n, sizeof want - 1);
  cr_assert_eq(memcmp(got, want, n), 0);
  free(got);
  td_tensor_map_free(&m);
  td_tensor_release(a);
  td_tensor_release(b);
}

Test(st, reads_hand_built_file) {
  /* metadata, spaces, escapes in a name, keys in any order, offsets unsorted */
  const char *json =
      "{ \"__metadata__\": {\"format\": \"pt\"},\n"
      "  \"fc.bias\" : {\"data_offsets\": [8, 16], \"shape\": [2], \"dtype\": \"I32\"},\n"
      "  \"fc\\u002eweight\": {\"dtype\": \"F64\", \"shape\": [1, 1], "
      "\"data_offsets\": [0, 8]},\n"
      "  \"mask\": {\"dtype\": \"BOOL\", \"shape\": [3], \"data_offsets\": [16, 19]},\n"
      "  \"empty\": {\"dtype\": \"F32\", \"shape\": [0, 4], \"data_offsets\": [19, 19]} }  ";
  double w = -1.5;
  int32_t bias[2] = {3, -4};
  unsigned char data[19];
  memcpy(data, &w, 8);
  memcpy(data + 8, bias, 8);
  memcpy(data + 16, "\1\0\1", 3);
  bytes f = st_file(json, data, sizeof data);
  td_tensor_map m;
  td_tensor_map_init(&m);
  st_read_ok("h.safetensors", &f, &m);
  cr_assert_eq(m.n, 4);
  td_tensor *tw = td_tensor_map_get(&m, "fc.weight"), *tb = td_tensor_map_get(&m, "fc.bias");
  td_tensor *tm = td_tensor_map_get(&m, "mask"), *te = td_tensor_map_get(&m, "empty");
  cr_assert(tw && tb && tm && te);
  cr_assert_eq(tw->dtype, TD_F64);
  cr_assert_eq(tw->rank, 2);
  cr_assert_eq(td_tensor_get(tw, 0), -1.5);
  cr_assert_eq(td_tensor_get(tb, 0), 3.0);
  cr_assert_eq(td_tensor_get(tb, 1), -4.0);
  cr_assert_eq(td_tensor_get(tm, 2), 1.0);
  cr_assert_eq(td_tensor_get(tm, 1), 0.0);
  cr_assert_eq(te->numel, 0);
  cr_assert_eq(te->shape[1], 4);
  cr_assert_null(td_tensor_map_get(&m, "__metadata__"));
  td_tensor_map_free(&m);
}

Test(st, truncated_at_every_byte) {
  const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  float data[2] = {1, 2};
  bytes f = st_file(json, data, sizeof data);
  for (size_t len = 0; len < f.n; len++) {
    write_file(tmp("t.safetensors"), f.d, len);
    st_fail(tmp("t.safetensors"));
  }
}

Test(st, header_length_checks) {
  bytes f = {.n = 0};
  put_le(&f, 1000, 8);
  puts_(&f, "{}");
  st_expect_error(&f, "header length 1000 exceeds the file size (10 bytes)");
  bytes g = {.n = 0};
  put_le(&g, UINT64_MAX, 8);
  st_expect_error(&g, "exceeds the file size");
  /* a 101 MB sparse file whose header claims 100 MB + 1 */
  const char *p = tmp("w.safetensors");
  bytes h = {.n = 0};
  put_le(&h, 100000001, 8);
  write_file(p, h.d, h.n);
  cr_assert_eq(truncate(p, 101000000), 0);
  cr_assert(strstr(st_fail(p), "header length 100000001 is above the 100 MB limit"));
}

Test(st, bad_json) {
  static const struct {
    const char *json, *needle;
  } cases[] = {
      {"{\"a\":}", "invalid JSON header at byte 13: unexpected character"},
      {"{\"a\":1,}", "expected a string key"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\":[1 2]}", "expected ',' or ']'"},
      {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
      {"{\"a\":\"abc}", "unterminated string"},
      {"{\"a\":\"a\tb\"}", "control character"},
      {"{\"a\":\"\\x\"}", "invalid escape"},
      {"{\"a\":\"\\u12\"}", "4 hex digits"},
      {"{\"a\":\"\\udc00\"}", "lone low surrogate"},
      {"{\"a\":\"\\ud800x\"}", "not followed by a low surrogate"},
      {"{\"a\":01}", "leading zero"},
      {"{\"a\":1.}", "expected a digit"},
      {"{\"a\":-}", "expected a digit"},
      {"{\"a\":tru}", "unexpected character"},
      {"{} {}", "unexpected text after"},
      {"{", "expected a string key"},
      {"", "unexpected end"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]"
       "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
       "nesting too deep"},
      {"[]", "header is not a JSON object"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    bytes f = st_file(cases[c].json, NULL, 0);
    st_expect_error(&f, cases[c].needle);
  }
}

Test(st, bad_entries) {
  static const struct {
    const char *json, *needle;
  } cases[] = {
      {"{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[0,99]}}",
       "w.safetensors: tensor 'fc.weight': data_offsets [0, 99] out of range "
       "(data is 64 bytes)"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}",
       "tensor 'x': data_offsets [8, 0] are reversed (begin 8 > end 0)"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
       "tensor 'x': data_offsets [0, 8] hold 8 bytes but f32[3] needs 12"},
      {"{\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,2]}}",
       "tensor 'x': data_offsets [0, 2] hold 2 bytes but f16[2] needs 4"},
      {"{\"y\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}",
       "tensor 'y': dtype F8_E4M3 is not supported"},
      {"{\"z\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
       "tensor 'z': dtype U8 is not supported"},
      {"{\"x\":{\"shape\":[2],\"data_offsets\":[0,8]}}", "missing or non-string \"dtype\""},
      {"{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", "missing or non-array \"shape\""},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}",
       "shape entry 0 is not a non-negative integer"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}",
       "shape entry 0"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}",
       "shape entry 0"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4611686018427387904],"
       "\"data_offsets\":[0,8]}}",
       "tensor 'x': shape is too large"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
       "rank 9 is above the maximum 8"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}",
       "\"data_offsets\" must be [begin, end]"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,18446744073709551616]}}",
       "\"data_offsets\" must be"},
      {"{\"x\":[1,2]}", "tensor 'x': entry is not an object"},
      {"{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
       "duplicate tensor name 'x'"},
      {"{\"b\":{\"dtype\":\"BOOL\",\"shape\":[64],\"data_offsets\":[0,64]}}",
       "tensor 'b': bool element 63 has byte value 7"},
      {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
       "NUL character"},
  };
  unsigned char data[64] = {0};
  data[63] = 7;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    bytes f = st_file(cases[c].json, data, sizeof data);
    st_expect_error(&f, cases[c].needle);
  }
}

/* The format requires the tensors' byte ranges to tile the data area:
 * sorted by offset, each starts where the previous one ended, and the last
 * ends at the end of the file.  Each way of breaking that is refused with
 * the tensors involved named (ranges in offset order, whatever the order
 * of the header). */
Test(st, data_offsets_must_tile_the_data_area) {
  static const struct {
    const char *json;
    size_t data;
    const char *needle;
  } cases[] = {
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]}}",
       24, "w.safetensors: tensors 'a' [0, 16] and 'b' [8, 24] overlap"},
      {"{\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,24]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
       24, "tensors 'a' [0, 16] and 'b' [8, 24] overlap"},
      {"{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       8, "tensors 'a' [0, 8] and 'b' [0, 8] overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
       "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}",
       16, "tensors 'a' [0, 16] and 'z' [8, 8] overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
       20, "a gap of 4 bytes between tensors 'a' [0, 8] and 'b' [12, 20]"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
       12, "a gap of 4 bytes before the first tensor 'a' [4, 12]"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
       12, "4 trailing bytes after the last tensor 'a' [0, 8] (the data area is 12 bytes"},
      {"{\"__metadata__\":{\"k\":\"v\"}}", 3, "3 bytes of data, but the header names no tensors"},
  };
  unsigned char data[32] = {0};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    bytes f = st_file(cases[c].json, data, cases[c].data);
    st_expect_error(&f, cases[c].needle);
    st_expect_error(&f, "the tensors' data_offsets must tile the data area exactly");
  }
  /* empty tensors where a range ends (twice at one offset) tile nothing,
   * and an empty file of no tensors is fine */
  const char *ok =
      "{\"e0\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"e1\":{\"dtype\":\"BOOL\",\"shape\":[0,3],\"data_offsets\":[8,8]},"
      "\"e2\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[8,8]}}";
  bytes f = st_file(ok, data, 8), none = st_file("{}", NULL, 0);
  td_tensor_map m;
  td_tensor_map_init(&m);
  st_read_ok("ok.safetensors", &f, &m);
  cr_assert_eq(m.n, 4);
  st_read_ok("none.safetensors", &none, &m);
  cr_assert_eq(m.n, 4);
  td_tensor_map_free(&m);
}

/* Opening reads the header alone: a 2 GiB tensor (a sparse file, no disk
 * used) is described at once, before any of its data is read. */
Test(st, open_reads_only_the_header) {
  const char *json = "{\"big\":{\"dtype\":\"F32\",\"shape\":[536870912],\"data_offsets\":[8,2147483656]},"
                     "\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  int32_t w[2] = {5, -6};
  bytes f = st_file(json, w, sizeof w);
  const char *p = sparse_file("big.safetensors", &f, f.n - 8 + 2147483656ull);
  td_st_file sf;
  td_err e;
  double t0 = now_s();
  cr_assert_eq(td_safetensors_open(p, &sf, &e), 0, "%s", e.msg);
  cr_expect_lt(now_s() - t0, 0.5, "the header alone is read");
  cr_assert_eq(sf.n, 2);
  cr_assert_str_eq(sf.items[0].name, "big");
  cr_assert_eq(sf.items[0].tensor->dtype, TD_F32);
  cr_assert_eq(sf.items[0].tensor->rank, 1);
  cr_assert_eq(sf.items[0].tensor->shape[0], 536870912);
  cr_assert_null(sf.items[0].tensor->data);
  cr_assert_str_eq(sf.items[1].name, "w");
  td_tensor *t = NULL;
  cr_assert_eq(td_safetensors_load(&sf, 1, &t, &e), 0, "%s", e.msg);
  cr_assert_eq(td_tensor_get(t, 0), 5.0);
  cr_assert_eq(td_tensor_get(t, 1), -6.0);
  td_tensor_release(t);
  td_safetensors_close(&sf);
  cr_assert_eq(sf.fd, -1);
  td_safetensors_close(&sf); /* closing twice is fine */
}

Test(st, read_into_map_with_same_name_fails_cleanly) {
  td_tensor_map m, m2;
  td_err e;
  td_tensor_map_init(&m);
  td_tensor_map_init(&m2);
  int64_t s[] = {2};
  td_tensor *t = sample(TD_F32, 1, s);
  td_tensor_map_put(&m, "w", t, &e);
  td_tensor_map_put(&m2, "v", t, &e);
  cr_assert_eq(td_safetensors_write(tmp("a.safetensors"), &m, &e), 0);
  cr_assert_eq(td_safetensors_read(tmp("a.safetensors"), &m2, &e), 0, "%s", e.msg);
  cr_assert_eq(m2.n, 2, "appended");
  cr_assert_eq(td_safetensors_read(tmp("a.safetensors"), &m2, &e), -1);
  cr_assert(strstr(e.msg, "tensor 'w' is already loaded"), "%s", e.msg);
  cr_assert_eq(m2.n, 2, "unchanged");
  td_tensor_map_free(&m);
  td_tensor_map_free(&m2);
  td_tensor_release(t);
}

Test(st, writer_is_deterministic_and_atomic) {
  td_tensor_map m1, m2;
  td_err e;
  td_tensor_map_init(&m1);
  td_tensor_map_init(&m2);
  static const char *names[] = {"z", "a.b\"q\\", "m\n", "B"};
  int64_t s[] = {3};
  for (int i = 0; i < 4; i++) {
    td_tensor *t = sample((td_dtype)i, 1, s);
    td_tensor_map_put(&m1, names[i], t, &e);
    td_tensor_release(t);
  }
  for (int i = 3; i >= 0; i--)
    td_tensor_map_put(&m2, names[i], td_tensor_map_get(&m1, names[i]), &e);
  cr_assert_eq(td_safetensors_write(tmp("1.st"), &m1, &e), 0, "%s", e.msg);
  cr_assert_eq(td_safetensors_write(tmp("2.st"), &m2, &e), 0, "%s", e.msg);
  size_t n1, n2;
  unsigned char *b1 = slurp(tmp("1.st"), &n1), *b2 = slurp(tmp("2.st"), &n2);
  cr_assert_eq(n1, n2);
  cr_assert_eq(memcmp(b1, b2, n1), 0);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | b1[i];
  cr_assert_eq(hlen % 8, 0, "header padded to 8");
  cr_assert_eq(b1[8 + hlen - 1], '}' == b1[8 + hlen - 1] ? '}' : ' ');
  free(b1);
  free(b2);
  td_tensor_map back;
  td_tensor_map_init(&back);
  cr_assert_eq(td_safetensors_read(tmp("1.st"), &back, &e), 0, "%s", e.msg);
  for (int i = 0; i < 4; i++)
    assert_same(td_tensor_map_get(&m1, names[i]), td_tensor_map_get(&back, names[i]));
  td_tensor_map_free(&back);
  mkdir(tmp("d"), 0755);
  cr_assert_eq(td_safetensors_write(tmp("d"), &m1, &e), -1);
  cr_assert_eq(dir_entries(), 3, "only 1.st 2.st d");
  td_tensor_map_free(&m1);
  td_tensor_map_free(&m2);
}

Test(st, allocation_failures_are_clean, .timeout = 30) {
  td_tensor_map m;
  td_err e;
  td_tensor_map_init(&m);
  int64_t s[] = {2, 3};
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", i);
    td_tensor *t = sample((td_dtype)(i + 1), 2, s);
    td_tensor_map_put(&m, name, t, &e);
    td_tensor_release(t);
  }
  cr_assert_eq(td_safetensors_write(tmp("f.st"), &m, &e), 0);
  int ok = 0;
  for (long n = 1; n <= 80; n++) {
    td_tensor_map back;
    td_tensor_map_init(&back);
    td_mem_fail_after(n);
    int rc = td_safetensors_read(tmp("f.st"), &back, &e);
    int wc = td_safetensors_write(tmp("g.st"), &m, &e);
    td_mem_fail_after(0);
    if (rc == 0) {
      cr_assert_eq(back.n, 3);
      ok++;
    } else {
      cr_assert_eq(back.n, 0);
    }
    (void)wc;
    td_tensor_map_free(&back);
  }
  cr_assert_gt(ok, 0);
  /* the writer alone, failing from each of its allocations on (one in the
   * header's middle once left its padding loop spinning): whole or absent;
   * names of growing length so that the header grows several times, at
   * lengths that are not multiples of 8 */
  for (int i = 0; i < 9; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%.*s", i, "xxxxxxxxx");
    td_tensor *t = sample(TD_F32, 2, s);
    td_tensor_map_put(&m, name, t, &e);
    td_tensor_release(t);
  }
  int written = 0;
  for (long n = 1; n <= 20 && !written; n++) {
    unlink(tmp("w.st"));
    td_mem_fail_after(n);
    int wc = td_safetensors_write(tmp("w.st"), &m, &e);
    td_mem_fail_after(0);
    if (wc == 0) written = 1;
    else cr_expect(strstr(e.msg, "out of memory"), "n = %ld: %s", n, e.msg);
    cr_expect_eq(access(tmp("w.st"), F_OK) == 0, wc == 0, "n = %ld", n);
  }
  cr_expect(written, "the write never succeeded");
  td_tensor_map_free(&m);
}

/* 100 000 tensors: writing, reading (duplicate names found by sorting, a
 * hash index in the map) and checking them against as many parameters take
 * well under a second; every step was quadratic (16 s to refuse a file of
 * 100 000 tensors for a model with one parameter). */
Test(st, a_hundred_thousand_tensors_in_linear_time, .timeout = 15) {
  enum { N = 100000 };
  td_tensor_map m, back;
  td_err e;
  td_tensor_map_init(&m);
  td_tensor_map_init(&back);
  int64_t one = 1;
  td_tensor *t = td_tensor_zeros(TD_F32, 1, &one, &e);
  cr_assert_not_null(t);
  static char names[N][16];
  static td_sig_arg params[N];
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "w%d", i);
    cr_assert_eq(td_tensor_map_put(&m, names[i], t, &e), 0, "%s", e.msg);
    params[i] = (td_sig_arg){names[i], TD_F32, 1, &one};
  }
  cr_expect_eq(td_tensor_map_put(&m, "w77", t, &e), -1, "a duplicate name is refused");
  cr_assert_eq(td_safetensors_write(tmp("big.safetensors"), &m, &e), 0, "%s", e.msg);
  cr_assert_eq(td_safetensors_read(tmp("big.safetensors"), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back.n, N);
  cr_expect_not_null(td_tensor_map_get(&back, "w99999"));
  cr_expect_null(td_tensor_map_get(&back, "w100000"));
  cr_expect_eq(td_sig_check_weights(NULL, NULL, params, N, back.items, back.n, &e), 0, "%s", e.msg);
  cr_expect_eq(td_sig_check_weights(NULL, NULL, params, 1, back.items, back.n, &e), -1);
  cr_expect(strstr(e.msg, "unexpected weight 'w1'") && strstr(e.msg, "more problems"), "%s", e.msg);
  td_tensor_release(t);
  td_tensor_map_free(&m);
  td_tensor_map_free(&back);
}

/* Two tensors of one name in a header are refused, whatever their order. */
Test(st, duplicate_names_in_a_header) {
  const char *hdr = "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
  size_t n = strlen(hdr), pad = (8 - n % 8) % 8;
  FILE *f = fopen(tmp("dup.safetensors"), "wb");
  cr_assert_not_null(f);
  uint64_t len = n + pad;
  fwrite(&len, 8, 1, f);
  fputs(hdr, f);
  for (size_t i = 0; i < pad; i++) fputc(' ', f);
  for (int i = 0; i < 12; i++) fputc(0, f);
  fclose(f);
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err e;
  cr_expect_eq(td_safetensors_read(tmp("dup.safetensors"), &m, &e), -1);
  cr_expect(strstr(e.msg, "duplicate tensor name 'b'"), "%s", e.msg);
  td_tensor_map_free(&m);
}

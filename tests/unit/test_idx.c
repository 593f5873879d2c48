/* test_idx.c - runtime/idx.c: IDX files plain and gzip-compressed, every
 * element type, .npy through td_data_read, and hostile files (truncated,
 * a bad magic, dimensions whose product overflows or that promise more
 * than the file holds); and safetensors' __metadata__ (runtime/io.h).
 *
 * Files are built byte by byte here (big-endian by hand), gzip ones with
 * zlib's gzwrite, so the reader is checked against the format, not
 * against a writer of its own.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/idx.h"
#include "runtime/io.h"
#include "runtime/mem.h"

#include "scratch_dir.h"

static void setup(void) { make_dir("tdsl_idx"); }
static void teardown(void) { remove_dir(); }

TestSuite(idx, .init = setup, .fini = teardown, .timeout = 30);

/* Writes bytes b[0..n) to name, gzip-compressed when gz. */
static void put(const char *name, const unsigned char *b, size_t n, int gz) {
  if (gz) {
    gzFile f = gzopen(path(name), "wb");
    cr_assert_not_null(f);
    if (n) cr_assert_eq(gzwrite(f, b, (unsigned)n), (int)n);
    cr_assert_eq(gzclose(f), Z_OK);
    return;
  }
  FILE *f = fopen(path(name), "wb");
  cr_assert_not_null(f);
  if (n) cr_assert_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* An IDX header: 00 00 type rank, then the dims big-endian, into b. */
static size_t header(unsigned char *b, int type, int rank, const uint32_t *dims) {
  b[0] = b[1] = 0;
  b[2] = (unsigned char)type;
  b[3] = (unsigned char)rank;
  for (int i = 0; i < rank; i++) {
    b[4 + 4 * i] = (unsigned char)(dims[i] >> 24);
    b[5 + 4 * i] = (unsigned char)(dims[i] >> 16);
    b[6 + 4 * i] = (unsigned char)(dims[i] >> 8);
    b[7 + 4 * i] = (unsigned char)dims[i];
  }
  return 4 + 4 * (size_t)rank;
}

Test(idx, u8_images_plain_and_gzip_read_as_f32_with_raw_values) {
  for (int gz = 0; gz < 2; gz++) {
    unsigned char b[64];
    uint32_t dims[3] = {2, 2, 3};
    size_t n = header(b, 0x08, 3, dims);
    for (int i = 0; i < 12; i++) b[n + i] = (unsigned char)(i * 21 + 3); /* 3 .. 234 */
    put("img.idx", b, n + 12, gz);
    td_tensor *t;
    td_err err;
    cr_assert_eq(td_idx_read(path("img.idx"), TD_F32, &t, &err), 0, "gz=%d: %s", gz, err.msg);
    cr_assert_eq(t->dtype, TD_F32);
    cr_assert_eq(t->rank, 3);
    cr_expect(t->shape[0] == 2 && t->shape[1] == 2 && t->shape[2] == 3);
    for (int i = 0; i < 12; i++) cr_expect_eq(((float *)t->data)[i], (float)(i * 21 + 3), "gz=%d element %d", gz, i);
    td_tensor_release(t);
  }
}

Test(idx, labels_read_as_i64_and_every_element_type_converts) {
  unsigned char b[128];
  uint32_t d1[1] = {3};
  size_t n = header(b, 0x08, 1, d1);
  b[n] = 0, b[n + 1] = 9, b[n + 2] = 255;
  put("lab.idx.gz", b, n + 3, 1);
  td_tensor *t;
  td_err err;
  cr_assert_eq(td_data_read(path("lab.idx.gz"), TD_I64, &t, &err), 0, "%s", err.msg);
  cr_expect(t->dtype == TD_I64 && t->rank == 1 && t->shape[0] == 3);
  cr_expect(((int64_t *)t->data)[0] == 0 && ((int64_t *)t->data)[1] == 9 && ((int64_t *)t->data)[2] == 255);
  td_tensor_release(t);

  /* i8 -2, i16 -300, i32 -70000, f32 1.5, f64 -0.25: big-endian bytes by hand */
  struct { int type; unsigned char bytes[8]; int size; double want; } cases[] = {
      {0x09, {0xfe}, 1, -2},
      {0x0B, {0xfe, 0xd4}, 2, -300},
      {0x0C, {0xff, 0xfe, 0xee, 0x90}, 4, -70000},
      {0x0D, {0x3f, 0xc0, 0, 0}, 4, 1.5},
      {0x0E, {0xbf, 0xd0, 0, 0, 0, 0, 0, 0}, 8, -0.25},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint32_t d[1] = {1};
    n = header(b, cases[c].type, 1, d);
    memcpy(b + n, cases[c].bytes, (size_t)cases[c].size);
    put("one.idx", b, n + (size_t)cases[c].size, (int)(c & 1));
    cr_assert_eq(td_idx_read(path("one.idx"), TD_F64, &t, &err), 0, "type 0x%02x: %s", cases[c].type, err.msg);
    cr_expect_eq(((double *)t->data)[0], cases[c].want, "type 0x%02x", cases[c].type);
    td_tensor_release(t);
  }
}

Test(idx, npy_through_td_data_read_is_converted) {
  int64_t s[2] = {2, 2};
  td_err err;
  td_tensor *t = td_tensor_new(TD_I32, 2, s, &err);
  for (int i = 0; i < 4; i++) ((int32_t *)t->data)[i] = 7 - i;
  cr_assert_eq(td_npy_write(path("a.npy"), t, &err), 0, "%s", err.msg);
  td_tensor_release(t);
  cr_assert_eq(td_data_read(path("a.npy"), TD_F32, &t, &err), 0, "%s", err.msg);
  cr_expect(t->dtype == TD_F32 && t->rank == 2 && ((float *)t->data)[3] == 4.0f);
  td_tensor_release(t);
}

/* td_idx_read of name must fail with a message holding the file's name and what. */
static void refused(const char *name, const char *what) {
  td_tensor *t = (td_tensor *)1;
  td_err err;
  err.msg[0] = 0;
  cr_expect_eq(td_idx_read(path(name), TD_F32, &t, &err), -1, "%s was accepted", name);
  cr_expect_null(t);
  cr_expect(strstr(err.msg, path(name)) != NULL, "the message does not name the file: %s", err.msg);
  cr_expect(strstr(err.msg, what) != NULL, "expected '%s' in: %s", what, err.msg);
}

Test(idx, hostile_files_are_refused_with_the_file_and_the_problem) {
  unsigned char b[256];
  uint32_t dims[3] = {4, 2, 2};
  for (int gz = 0; gz < 2; gz++) {
    size_t n = header(b, 0x08, 3, dims);
    memset(b + n, 1, 16);
    put("cut.idx", b, n + 15, gz); /* one byte short */
    refused("cut.idx", "truncated IDX file: the data needs 16 bytes");
    b[n + 16] = 0;
    put("long.idx", b, n + 17, gz);
    refused("long.idx", "trailing garbage");
    put("hdr.idx", b, 9, gz); /* the dims cut */
    refused("hdr.idx", "truncated IDX file: the header needs 16 bytes");
    put("short.idx", b, 2, gz);
    refused("short.idx", "the magic number needs 4 bytes");
    put("empty.idx", b, 0, gz);
    refused("empty.idx", "truncated");
  }
  memcpy(b, "\x93NUMPY", 6);
  put("magic.idx", b, 20, 0);
  refused("magic.idx", "not an IDX file");
  uint32_t d1[1] = {1};
  header(b, 0x0A, 1, d1);
  put("type.idx", b, 9, 0);
  refused("type.idx", "unknown IDX element type 0x0a");
  header(b, 0x08, 0, d1);
  put("rank0.idx", b, 4, 0);
  refused("rank0.idx", "rank 0");
  uint32_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  header(b, 0x08, 9, d9);
  put("rank9.idx", b, 4, 0);
  refused("rank9.idx", "rank 9");
  /* 2^32-1 ^ 3 elements of f64 overflow 2^63 bytes */
  uint32_t big[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  for (int gz = 0; gz < 2; gz++) {
    size_t n = header(b, 0x0E, 3, big);
    put("over.idx", b, n + 8, gz);
    refused("over.idx", "overflow");
  }
  /* a compressed header promising 64 GiB, with 8 bytes of data: refused
   * without allocating what the header says (the data holds 8 bytes) */
  uint32_t huge[2] = {1u << 16, 1u << 20};
  size_t n = header(b, 0x08, 2, huge);
  memset(b + n, 0, 8);
  put("huge.idx.gz", b, n + 8, 1);
  refused("huge.idx.gz", "the decompressed data holds 8");
  put("huge.idx", b, n + 8, 0);
  refused("huge.idx", "the file holds 8");
  /* gzip magic but garbage after it */
  memcpy(b, "\x1f\x8b\x08\x00garbage-garbage-garbage", 27);
  put("bad.gz", b, 27, 0);
  td_tensor *t;
  td_err err;
  cr_expect_eq(td_idx_read(path("bad.gz"), TD_F32, &t, &err), -1);
  cr_expect(strstr(err.msg, path("bad.gz")) != NULL, "%s", err.msg);
  cr_expect_eq(td_idx_read(path("missing.idx"), TD_F32, &t, &err), -1);
  cr_expect(strstr(err.msg, "cannot open") != NULL, "%s", err.msg);
}

Test(idx, safetensors_metadata_round_trips_and_tensors_are_unchanged) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  int64_t s[1] = {3};
  td_err err;
  td_tensor *t = td_tensor_new(TD_F32, 1, s, &err);
  for (int i = 0; i < 3; i++) ((float *)t->data)[i] = (float)i;
  cr_assert_eq(td_tensor_map_put(&m, "w", t, &err), 0);
  const char *kv[] = {"format", "tdsl-train-1", "entry", "T.step", "quote", "a\"b\\c"};
  cr_assert_eq(td_safetensors_write_meta(path("c.safetensors"), &m, kv, 3, &err), 0, "%s", err.msg);
  td_st_file f;
  cr_assert_eq(td_safetensors_open(path("c.safetensors"), &f, &err), 0, "%s", err.msg);
  cr_expect_eq(f.n, 1);
  cr_expect_eq(f.n_meta, 3);
  cr_expect_str_eq(td_safetensors_meta(&f, "entry"), "T.step");
  cr_expect_str_eq(td_safetensors_meta(&f, "quote"), "a\"b\\c");
  cr_expect_null(td_safetensors_meta(&f, "nothing"));
  td_safetensors_close(&f);
  td_tensor_map r;
  td_tensor_map_init(&r);
  cr_assert_eq(td_safetensors_read(path("c.safetensors"), &r, &err), 0, "%s", err.msg);
  cr_expect_eq(r.n, 1);
  cr_expect_eq(((float *)td_tensor_map_get(&r, "w")->data)[2], 2.0f);
  td_tensor_map_free(&r);
  td_tensor_map_free(&m);
  td_tensor_release(t);
}

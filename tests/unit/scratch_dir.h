/* scratch_dir.h - a fresh temporary directory per test, for the tests that
 * run the tdsl binary on files (test_cli.c, test_build.c).
 *
 * make_dir("tdsl_cli") in a suite's .init makes /tmp/tdsl_cli_XXXXXX;
 * remove_dir() in its .fini deletes it; path("x.npy") names a file in it
 * (the last 8 results stay valid, so several can be passed in one call).
 * sparse_npy and sparse_safetensors write hand-built headers followed by a
 * hole: files of gigabytes that use no disk, for checking that a reader
 * refuses a wrong file from its header alone.
 */
#ifndef TD_SCRATCH_DIR_H
#define TD_SCRATCH_DIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static char dir[256];

static void make_dir(const char *stem) {
  snprintf(dir, sizeof dir, "/tmp/%s_XXXXXX", stem);
  cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) { /* best effort */ }
}

static const char *path(const char *name) {
  static char buf[8][512];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

/* A .npy file (format 1.0) of dtype descr ("<f4") and shape (Python tuple
 * text, "(2, 3)"), its header padded to 64 bytes as NumPy pads it, then
 * data_bytes of hole. */
static inline void sparse_npy(const char *name, const char *descr, const char *shape, uint64_t data_bytes) {
  char h[256], dict[200];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  size_t total = (10 + (size_t)n + 1 + 63) / 64 * 64;
  cr_assert_lt(total, sizeof h);
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)((total - 10) & 0xff);
  h[9] = (char)((total - 10) >> 8);
  memcpy(h + 10, dict, (size_t)n);
  memset(h + 10 + n, ' ', total - 10 - (size_t)n - 1);
  h[total - 1] = '\n';
  FILE *f = fopen(path(name), "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(h, 1, total, f), total);
  fclose(f);
  cr_assert_eq(truncate(path(name), (off_t)(total + data_bytes)), 0);
}

/* A safetensors file: the header json, the n bytes of data, then a hole
 * up to a data area of data_size bytes. */
static inline void sparse_safetensors(const char *name, const char *json, const void *data, size_t n,
                                      uint64_t data_size) {
  unsigned char len[8];
  size_t jn = strlen(json);
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)jn >> (8 * i));
  FILE *f = fopen(path(name), "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(len, 1, 8, f), 8);
  cr_assert_eq(fwrite(json, 1, jn, f), jn);
  if (n) cr_assert_eq(fwrite(data, 1, n, f), n);
  fclose(f);
  cr_assert_eq(truncate(path(name), (off_t)(8 + jn + data_size)), 0);
}

#endif

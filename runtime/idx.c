/* idx.c - reading IDX files (plain or gzip) and data set arrays (runtime/idx.h).
 *
 * Both kinds of file go through one reader over zlib's gzFile: gzdopen
 * reads a plain file as it is (zlib's transparent mode) and decompresses
 * a gzip one, so the header and data code is shared.  Whether the file is
 * compressed is decided from its first two bytes, never from its name:
 * a plain file's size bounds the data before anything is allocated; a
 * compressed file's data is read into a buffer that doubles as bytes
 * arrive, up to what the header needs, so the memory used is at most
 * twice what was decompressed.
 */
#include "runtime/idx.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/fileio.h"
#include "runtime/io.h"
#include "runtime/mem.h"

#define IDX_FIRST_CHUNK ((size_t)1 << 20) /* a compressed file's buffer starts at 1 MiB */

static const struct {
  unsigned char code;
  int size;
  const char *name;
} idx_types[] = {{0x08, 1, "u8"}, {0x09, 1, "i8"}, {0x0B, 2, "i16"},
                 {0x0C, 4, "i32"}, {0x0D, 4, "f32"}, {0x0E, 8, "f64"}};
#define IDX_NTYPES (int)(sizeof idx_types / sizeof idx_types[0])

typedef struct idx_reader {
  const char *path;
  gzFile gz;
  int compressed;
  td_err *err;
} idx_reader;

/* Reads up to n bytes; the count read, or -1 after an error message. */
static int64_t rd(idx_reader *r, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    unsigned want = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
    int k = gzread(r->gz, (char *)buf + got, want);
    if (k < 0) {
      int code;
      const char *msg = gzerror(r->gz, &code);
      td_err_set(r->err, "%s: %s: %s", r->path,
                 r->compressed ? "corrupt gzip data" : "read error",
                 code == Z_ERRNO ? strerror(errno) : msg);
      return -1;
    }
    if (k == 0)
      break;
    got += (size_t)k;
  }
  return (int64_t)got;
}

/* What a short read means: the data ends early, or the stream is cut. */
static int truncated(idx_reader *r, const char *what, uint64_t want, uint64_t got) {
  int code = Z_OK;
  const char *msg = r->compressed ? gzerror(r->gz, &code) : NULL;
  return td_err_set(r->err, "%s: truncated IDX file: %s needs %llu bytes, the %s holds %llu%s%s",
                    r->path, what, (unsigned long long)want,
                    r->compressed ? "decompressed data" : "file", (unsigned long long)got,
                    code != Z_OK && msg && *msg ? "; zlib: " : "",
                    code != Z_OK && msg && *msg ? msg : "");
}

/* The header: magic, type and dims; *esize, *type (index into idx_types),
 * shape and rank, and the data's byte count *bytes (overflow checked). */
static int read_header(idx_reader *r, int *type, int *rank, int64_t *shape, uint64_t *bytes) {
  unsigned char m[4];
  int64_t k = rd(r, m, 4);
  if (k < 0)
    return -1;
  if (k < 4)
    return truncated(r, "the magic number", 4, (uint64_t)k);
  if (m[0] != 0 || m[1] != 0)
    return td_err_set(r->err, "%s: not an IDX file: its magic number is %02x %02x %02x %02x, an IDX "
                      "file starts with 00 00 TYPE RANK (e.g. 00 00 08 03)", r->path, m[0], m[1], m[2], m[3]);
  *type = -1;
  for (int i = 0; i < IDX_NTYPES; i++)
    if (idx_types[i].code == m[2])
      *type = i;
  if (*type < 0)
    return td_err_set(r->err, "%s: unknown IDX element type 0x%02x (known: 0x08 u8, 0x09 i8, 0x0B i16, "
                      "0x0C i32, 0x0D f32, 0x0E f64)", r->path, m[2]);
  if (m[3] < 1 || m[3] > TD_MAX_RANK)
    return td_err_set(r->err, "%s: IDX rank %d is not supported (1 to %d)", r->path, m[3], TD_MAX_RANK);
  *rank = m[3];
  unsigned char d[4 * TD_MAX_RANK];
  k = rd(r, d, 4 * (size_t)*rank);
  if (k < 0)
    return -1;
  if (k < 4 * *rank)
    return truncated(r, "the header", 4 + 4 * (uint64_t)*rank, 4 + (uint64_t)k);
  uint64_t n = (uint64_t)idx_types[*type].size;
  int zero = 0;
  for (int i = 0; i < *rank; i++) {
    uint64_t v = (uint64_t)d[4 * i] << 24 | (uint64_t)d[4 * i + 1] << 16 | (uint64_t)d[4 * i + 2] << 8 | d[4 * i + 3];
    shape[i] = (int64_t)v;
    if (v == 0)
      zero = 1;
    else if (n > (uint64_t)INT64_MAX / v)
      return td_err_set(r->err, "%s: IDX dimensions overflow: their product is above 2^63 bytes", r->path);
    else
      n *= v;
  }
  *bytes = zero ? 0 : n;
  return 0;
}

/* The data of a plain file, checked against its size first. */
static int read_plain(idx_reader *r, uint64_t file_size, uint64_t hdr, uint64_t bytes, unsigned char **data) {
  if (file_size - hdr < bytes)
    return truncated(r, "the data", bytes, file_size - hdr);
  if (file_size - hdr > bytes)
    return td_err_set(r->err, "%s: IDX file has %llu bytes of data, its dimensions need %llu "
                      "(trailing garbage)", r->path, (unsigned long long)(file_size - hdr),
                      (unsigned long long)bytes);
  if (bytes > td_tensor_max_bytes())
    return td_err_set(r->err, "%s: IDX data of %llu bytes is above the tensor size limit (%llu bytes, "
                      "TDSL_MAX_TENSOR_BYTES)", r->path, (unsigned long long)bytes,
                      (unsigned long long)td_tensor_max_bytes());
  *data = td_malloc(bytes ? (size_t)bytes : 1);
  if (!*data)
    return td_err_set(r->err, "%s: out of memory", r->path);
  int64_t k = rd(r, *data, (size_t)bytes);
  if (k < 0 || (uint64_t)k < bytes) {
    if (k >= 0)
      truncated(r, "the data", bytes, (uint64_t)k);
    td_free(*data);
    *data = NULL;
    return -1;
  }
  return 0;
}

/* The data of a compressed file: the buffer grows only as data arrives. */
static int read_gz(idx_reader *r, uint64_t bytes, unsigned char **data) {
  size_t cap = bytes < IDX_FIRST_CHUNK ? (size_t)(bytes ? bytes : 1) : IDX_FIRST_CHUNK, have = 0;
  unsigned char *buf = td_malloc(cap);
  if (!buf)
    return td_err_set(r->err, "%s: out of memory", r->path);
  for (;;) {
    int64_t k = rd(r, buf + have, (size_t)((bytes < cap ? bytes : cap) - have));
    if (k < 0)
      goto fail;
    have += (size_t)k;
    if (have == bytes)
      break;
    if (have < cap) {
      truncated(r, "the data", bytes, have);
      goto fail;
    }
    if (bytes > td_tensor_max_bytes()) {
      td_err_set(r->err, "%s: IDX data of %llu bytes is above the tensor size limit (%llu bytes, "
                 "TDSL_MAX_TENSOR_BYTES)", r->path, (unsigned long long)bytes,
                 (unsigned long long)td_tensor_max_bytes());
      goto fail;
    }
    size_t ncap = bytes - cap < cap ? (size_t)bytes : 2 * cap;
    unsigned char *nb = td_realloc(buf, ncap);
    if (!nb) {
      td_err_set(r->err, "%s: out of memory", r->path);
      goto fail;
    }
    buf = nb;
    cap = ncap;
  }
  unsigned char extra;
  int64_t k = rd(r, &extra, 1);
  if (k != 0) {
    if (k > 0)
      td_err_set(r->err, "%s: the decompressed IDX data is longer than its dimensions need (%llu bytes; "
                 "trailing garbage)", r->path, (unsigned long long)bytes);
    goto fail;
  }
  *data = buf;
  return 0;
fail:
  td_free(buf);
  return -1;
}

/* Element i of big-endian data of type t, as a double or an int64. */
static int64_t be_int(const unsigned char *p, int t) {
  switch (idx_types[t].code) {
  case 0x08: return p[0];
  case 0x09: return (int8_t)p[0];
  case 0x0B: return (int16_t)(uint16_t)(p[0] << 8 | p[1]);
  default: return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
  }
}

static double be_float(const unsigned char *p, int t) {
  uint64_t v = 0;
  for (int i = 0; i < idx_types[t].size; i++)
    v = v << 8 | p[i];
  if (idx_types[t].code == 0x0D) {
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &v, 8);
  return d;
}

/* Converts the raw data into t (dtype `as`). */
static void convert(const unsigned char *src, int type, td_tensor *t) {
  int es = idx_types[type].size, is_float = idx_types[type].code >= 0x0D;
  for (int64_t i = 0; i < t->numel; i++) {
    const unsigned char *p = src + (size_t)i * (size_t)es;
    if (!is_float) {
      int64_t v = be_int(p, type);
      switch (t->dtype) {
      case TD_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
      case TD_I64: ((int64_t *)t->data)[i] = v; break;
      case TD_F32: ((float *)t->data)[i] = (float)v; break;
      default: td_tensor_set(t, i, (double)v); break;
      }
    } else if (t->dtype == TD_F32) {
      ((float *)t->data)[i] = (float)be_float(p, type);
    } else {
      td_tensor_set(t, i, be_float(p, type));
    }
  }
}

int td_idx_read(const char *path, td_dtype as, td_tensor **out, td_err *err) {
  idx_reader r = {path, NULL, 0, err};
  uint64_t size;
  int fd, type = 0, rank = 0;
  int64_t shape[TD_MAX_RANK];
  uint64_t bytes = 0;
  unsigned char *data = NULL, magic[2] = {0, 0};
  *out = NULL;
  if (as == TD_BOOL || (unsigned)as >= TD_DTYPE_COUNT)
    return td_err_set(err, "%s: IDX data cannot be read as %s", path, td_dtype_name(as));
  if (td_io_open(path, &fd, &size, err) < 0)
    return -1;
  if (size >= 2 && td_io_pread(fd, magic, 2, 0) < 0) {
    td_io_close(fd);
    return td_err_set(err, "%s: read error", path);
  }
  r.compressed = magic[0] == 0x1f && magic[1] == 0x8b;
  r.gz = gzdopen(fd, "rb");
  if (!r.gz) {
    td_io_close(fd);
    return td_err_set(err, "%s: out of memory", path);
  }
  int rc = read_header(&r, &type, &rank, shape, &bytes);
  if (rc == 0)
    rc = r.compressed ? read_gz(&r, bytes, &data) : read_plain(&r, size, 4 + 4 * (uint64_t)rank, bytes, &data);
  gzclose(r.gz); /* closes fd */
  if (rc)
    return -1;
  td_err terr;
  td_tensor *t = td_tensor_new(as, rank, shape, &terr);
  if (!t) {
    td_free(data);
    return td_err_set(err, "%s: %s", path, terr.msg);
  }
  convert(data, type, t);
  td_free(data);
  *out = t;
  return 0;
}

/* t converted to dtype as (a new reference; t itself when it has it). */
static td_tensor *cast_to(td_tensor *t, td_dtype as, const char *path, td_err *err) {
  if (t->dtype == as)
    return td_tensor_retain(t);
  td_err terr;
  td_tensor *c = td_tensor_new(as, t->rank, t->shape, &terr);
  if (!c) {
    td_err_set(err, "%s: %s", path, terr.msg);
    return NULL;
  }
  for (int64_t i = 0; i < t->numel; i++)
    td_tensor_set(c, i, td_tensor_get(t, i));
  return c;
}

int td_data_read(const char *path, td_dtype as, td_tensor **out, td_err *err) {
  uint64_t size;
  int fd;
  unsigned char m[6] = {0};
  *out = NULL;
  if (td_io_open(path, &fd, &size, err) < 0)
    return -1;
  int npy = size >= 6 && td_io_pread(fd, m, 6, 0) == 0 && !memcmp(m, "\x93NUMPY", 6);
  td_io_close(fd);
  if (!npy)
    return td_idx_read(path, as, out, err);
  td_tensor *t;
  if (td_npy_read(path, &t, err) < 0)
    return -1;
  *out = cast_to(t, as, path, err);
  td_tensor_release(t);
  return *out ? 0 : -1;
}

/* npy.c - reading and writing NumPy .npy files (format versions 1.0-3.0).
 *
 * Layout: "\x93NUMPY", major, minor, header length (u16 LE for 1.x, u32 LE
 * for 2.x/3.x), then a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the raw C-order data.
 * The reader checks every length against the file size before allocating,
 * and requires the data to be exactly numel * itemsize bytes; opening a
 * file checks all of that from the header alone, loading reads the data.
 * f16 is '<f2'.  bf16 has no NumPy dtype, so writing one is an error that
 * points to safetensors (which has BF16) or to an f32 cast.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/fileio.h"
#include "runtime/io.h"
#include "runtime/mem.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1u << 20) /* real headers are under 1 KiB */
#define NPY_ALIGN 64

/* ---- header parsing --------------------------------------------------- */

typedef struct npy_header {
  char descr[32];
  int fortran;
  int rank;
  int64_t shape[TD_MAX_RANK];
  unsigned seen; /* bit 0 descr, 1 fortran_order, 2 shape */
} npy_header;

typedef struct hparser {
  const char *s;
  size_t pos, len;
  size_t base; /* file offset of s[0], for messages */
  const char *path;
  td_err *err;
} hparser;

static int hp_fail(hparser *p, const char *what) {
  return td_err_set(p->err, "%s: invalid .npy header at byte %zu: %s", p->path,
                    p->base + p->pos, what);
}

static void hp_ws(hparser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

/* Consumes c after optional spaces; 1 if it was there. */
static int hp_eat(hparser *p, char c) {
  hp_ws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return 1;
  }
  return 0;
}

/* A quoted Python string without escapes ('...' or "...") into buf. */
static int hp_string(hparser *p, char *buf, size_t cap) {
  hp_ws(p);
  if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
    return hp_fail(p, "expected a quoted string");
  char q = p->s[p->pos++];
  size_t n = 0;
  while (p->pos < p->len && p->s[p->pos] != q) {
    if (p->s[p->pos] == '\\' || n + 1 >= cap)
      return hp_fail(p, "unsupported or overlong string");
    buf[n++] = p->s[p->pos++];
  }
  if (p->pos >= p->len)
    return hp_fail(p, "unterminated string");
  p->pos++;
  buf[n] = '\0';
  return 0;
}

static int hp_bool(hparser *p, int *out) {
  hp_ws(p);
  const char *s = p->s + p->pos;
  size_t left = p->len - p->pos;
  if (left >= 4 && memcmp(s, "True", 4) == 0) {
    *out = 1;
    p->pos += 4;
  } else if (left >= 5 && memcmp(s, "False", 5) == 0) {
    *out = 0;
    p->pos += 5;
  } else {
    return hp_fail(p, "expected True or False");
  }
  return 0;
}

/* A non-negative decimal integer (Python 2's "L" suffix allowed). */
static int hp_int(hparser *p, int64_t *out) {
  hp_ws(p);
  if (p->pos < p->len && p->s[p->pos] == '-')
    return hp_fail(p, "negative dimension in shape");
  if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9')
    return hp_fail(p, "expected a dimension in shape");
  int64_t v = 0;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    int d = p->s[p->pos++] - '0';
    if (v > (INT64_MAX - d) / 10)
      return hp_fail(p, "dimension too large");
    v = v * 10 + d;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'L' || p->s[p->pos] == 'l'))
    p->pos++;
  *out = v;
  return 0;
}

/* A tuple of dimensions: (), (3,), (2, 3), (2, 3,). */
static int hp_shape(hparser *p, npy_header *h) {
  if (!hp_eat(p, '('))
    return hp_fail(p, "expected '(' for shape");
  h->rank = 0;
  while (!hp_eat(p, ')')) {
    if (h->rank == TD_MAX_RANK)
      return td_err_set(p->err, "%s: arrays with more than %d dimensions are "
                        "not supported", p->path, TD_MAX_RANK);
    if (hp_int(p, &h->shape[h->rank++]) < 0)
      return -1;
    if (hp_eat(p, ','))
      continue;
    if (!hp_eat(p, ')'))
      return hp_fail(p, "expected ',' or ')' in shape");
    break;
  }
  return 0;
}

/* One "key: value" entry of the dict. */
static int hp_entry(hparser *p, npy_header *h) {
  char key[32];
  if (hp_string(p, key, sizeof key) < 0)
    return -1;
  if (!hp_eat(p, ':'))
    return hp_fail(p, "expected ':'");
  unsigned bit;
  int rc;
  if (strcmp(key, "descr") == 0) {
    bit = 1;
    hp_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '[')
      return td_err_set(p->err, "%s: structured dtypes are not supported", p->path);
    rc = hp_string(p, h->descr, sizeof h->descr);
  } else if (strcmp(key, "fortran_order") == 0) {
    bit = 2;
    rc = hp_bool(p, &h->fortran);
  } else if (strcmp(key, "shape") == 0) {
    bit = 4;
    rc = hp_shape(p, h);
  } else {
    return td_err_set(p->err, "%s: invalid .npy header: unexpected key '%s'",
                      p->path, key);
  }
  if (rc < 0)
    return -1;
  if (h->seen & bit)
    return td_err_set(p->err, "%s: invalid .npy header: key '%s' appears twice",
                      p->path, key);
  h->seen |= bit;
  return 0;
}

static int parse_header(const char *s, size_t len, size_t base, const char *path,
                        npy_header *h, td_err *err) {
  hparser p = {s, 0, len, base, path, err};
  memset(h, 0, sizeof *h);
  if (!hp_eat(&p, '{'))
    return hp_fail(&p, "expected '{'");
  while (!hp_eat(&p, '}')) {
    if (hp_entry(&p, h) < 0)
      return -1;
    if (hp_eat(&p, ','))
      continue;
    if (!hp_eat(&p, '}'))
      return hp_fail(&p, "expected ',' or '}'");
    break;
  }
  hp_ws(&p);
  if (p.pos != p.len)
    return hp_fail(&p, "unexpected text after the dict");
  static const char *const names[] = {"descr", "fortran_order", "shape"};
  for (int i = 0; i < 3; i++)
    if (!(h->seen & (1u << i)))
      return td_err_set(err, "%s: invalid .npy header: missing key '%s'", path,
                        names[i]);
  return 0;
}

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
  char kind;
  int size;
  td_dtype dt;
  const char *descr; /* what the writer writes */
} npy_types[] = {
    {'f', 4, TD_F32, "<f4"}, {'f', 8, TD_F64, "<f8"}, {'i', 4, TD_I32, "<i4"},
    {'i', 8, TD_I64, "<i8"}, {'b', 1, TD_BOOL, "|b1"}, {'f', 2, TD_F16, "<f2"},
};
#define NPY_NTYPES (int)(sizeof npy_types / sizeof npy_types[0])

/* Maps a descr such as "<f4" to a dtype.  A byte order of '<', '=' or '|'
 * is accepted (this host is little-endian); '>' only for 1-byte types. */
static int descr_dtype(const char *path, const char *d, td_dtype *out, td_err *err) {
  char order = d[0];
  const char *body = d;
  if (order == '<' || order == '>' || order == '=' || order == '|')
    body = d + 1;
  for (int i = 0; i < NPY_NTYPES; i++) {
    char want[8];
    snprintf(want, sizeof want, "%c%d", npy_types[i].kind, npy_types[i].size);
    if (strcmp(body, want) != 0)
      continue;
    if (order == '>' && npy_types[i].size > 1)
      return td_err_set(err, "%s: big-endian dtype '%s' is not supported; "
                        "convert with arr.astype('<%s')", path, d, body);
    *out = npy_types[i].dt;
    return 0;
  }
  return td_err_set(err, "%s: unsupported dtype '%s' (supported: <f2 <f4 <f8 "
                    "<i4 <i8 |b1)", path, d);
}

/* ---- reading ----------------------------------------------------------- */

/* Byte size of the data described by h; -1 on overflow. */
static int data_bytes(const npy_header *h, size_t esize, uint64_t *out) {
  uint64_t n = 1;
  int zero = 0;
  for (int i = 0; i < h->rank; i++) {
    uint64_t d = (uint64_t)h->shape[i];
    if (d == 0) {
      zero = 1;
      continue;
    }
    if (n > (uint64_t)INT64_MAX / d)
      return -1;
    n *= d;
  }
  if (n > (uint64_t)INT64_MAX / esize)
    return -1;
  *out = zero ? 0 : n * esize;
  return 0;
}

static const char *shape_text(const npy_header *h, char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < h->rank && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, i ? ", %lld" : "%lld",
                            (long long)h->shape[i]);
  if (len < cap)
    snprintf(buf + len, cap - len, h->rank == 1 ? ",)" : ")");
  return buf;
}

/* Reads and checks the prefix and the header dict; *data_off is where the
 * array data starts. */
static int read_header(int fd, uint64_t size, const char *path, npy_header *h,
                       uint64_t *data_off, td_err *err) {
  unsigned char pre[12];
  size_t have = size < sizeof pre ? (size_t)size : sizeof pre;
  if (td_io_pread(fd, pre, have, 0) < 0)
    return td_err_set(err, "%s: read error", path);
  if (memcmp(pre, NPY_MAGIC, have < NPY_MAGIC_LEN ? have : NPY_MAGIC_LEN) != 0)
    return td_err_set(err, "%s: not a .npy file (bad magic)", path);
  if (have < 8)
    return td_err_set(err, "%s: file is truncated: %zu bytes, too short for a "
                      ".npy header", path, have);
  int major = pre[6];
  if (major < 1 || major > 3)
    return td_err_set(err, "%s: unsupported .npy format version %d.%d", path,
                      major, pre[7]);
  size_t prefix = major == 1 ? 10 : 12;
  if (have < prefix)
    return td_err_set(err, "%s: file is truncated: %zu bytes, too short for a "
                      ".npy header", path, have);
  uint64_t hlen = major == 1 ? (uint64_t)(pre[8] | pre[9] << 8) : td_io_le32(pre + 8);
  if (hlen > size - prefix)
    return td_err_set(err, "%s: header length %llu exceeds the file size "
                      "(%llu bytes)", path, (unsigned long long)hlen,
                      (unsigned long long)size);
  if (hlen > NPY_MAX_HEADER)
    return td_err_set(err, "%s: header length %llu is unreasonably large", path,
                      (unsigned long long)hlen);
  char *text = td_malloc((size_t)hlen + 1);
  if (!text)
    return td_err_set(err, "%s: out of memory", path);
  int rc = td_io_pread(fd, text, (size_t)hlen, prefix);
  if (rc < 0)
    td_err_set(err, "%s: read error", path);
  else
    rc = parse_header(text, (size_t)hlen, prefix, path, h, err);
  td_free(text);
  *data_off = prefix + hlen;
  return rc;
}

/* Checks that bool data holds only 0 and 1. */
static int check_bools(const char *path, const td_tensor *t, td_err *err) {
  const unsigned char *b = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    if (b[i] > 1)
      return td_err_set(err, "%s: bool element %lld has byte value %d (must be "
                        "0 or 1)", path, (long long)i, b[i]);
  return 0;
}

/* Checks that the file holds exactly the data h describes. */
static int check_data_size(uint64_t size, uint64_t off, const char *path,
                           const npy_header *h, td_dtype dt, td_err *err) {
  char sbuf[200];
  uint64_t want;
  if (data_bytes(h, td_dtype_size(dt), &want) < 0)
    return td_err_set(err, "%s: shape %s is too large", path,
                      shape_text(h, sbuf, sizeof sbuf));
  uint64_t found = size - off;
  if (found < want)
    return td_err_set(err, "%s: file is truncated: expected %llu bytes of data, "
                      "found %llu", path, (unsigned long long)want,
                      (unsigned long long)found);
  if (found > want)
    return td_err_set(err, "%s: file has %llu bytes of data, expected %llu "
                      "(trailing garbage)", path, (unsigned long long)found,
                      (unsigned long long)want);
  return 0;
}

int td_npy_open(const char *path, td_npy_file *f, td_err *err) {
  uint64_t size;
  npy_header h;
  td_dtype dt = TD_F32;
  memset(f, 0, sizeof *f);
  f->path = path;
  f->fd = -1;
  if (td_io_open(path, &f->fd, &size, err) < 0)
    return -1;
  int rc = read_header(f->fd, size, path, &h, &f->data_off, err);
  if (rc == 0)
    rc = descr_dtype(path, h.descr, &dt, err);
  if (rc == 0 && h.fortran)
    rc = td_err_set(err, "%s: Fortran-order arrays are not supported; save with "
                    "np.ascontiguousarray", path);
  if (rc == 0)
    rc = check_data_size(size, f->data_off, path, &h, dt, err);
  if (rc) {
    td_npy_close(f);
    return rc;
  }
  f->head.dtype = dt;
  f->head.rank = h.rank;
  f->head.numel = 1;
  for (int i = 0; i < h.rank; i++)
    f->head.numel *= f->head.shape[i] = h.shape[i];
  f->head.refcount = 1;
  return 0;
}

int td_npy_load(const td_npy_file *f, td_tensor **out, td_err *err) {
  const td_tensor *h = &f->head;
  td_err terr;
  td_tensor *t = td_tensor_new(h->dtype, h->rank, h->shape, &terr);
  if (!t)
    return td_err_set(err, "%s: %s", f->path, terr.msg);
  size_t bytes = (size_t)t->numel * td_dtype_size(t->dtype);
  if (bytes && td_io_pread(f->fd, t->data, bytes, f->data_off) < 0) {
    td_tensor_release(t);
    return td_err_set(err, "%s: read error", f->path);
  }
  if (t->dtype == TD_BOOL && check_bools(f->path, t, err) < 0) {
    td_tensor_release(t);
    return -1;
  }
  *out = t;
  return 0;
}

void td_npy_close(td_npy_file *f) {
  td_io_close(f->fd);
  f->fd = -1;
}

int td_npy_read(const char *path, td_tensor **out, td_err *err) {
  td_npy_file f;
  *out = NULL;
  if (td_npy_open(path, &f, err) < 0)
    return -1;
  int rc = td_npy_load(&f, out, err);
  td_npy_close(&f);
  return rc;
}

/* ---- writing ----------------------------------------------------------- */

/* Builds prefix + header dict + padding into buf; returns its length, a
 * multiple of 64, or 0 when it does not fit. */
static size_t build_header(const td_tensor *t, unsigned char *buf, size_t cap) {
  const char *descr = "";
  for (int i = 0; i < NPY_NTYPES; i++)
    if (npy_types[i].dt == t->dtype)
      descr = npy_types[i].descr;
  char dict[400];
  size_t n = (size_t)snprintf(dict, sizeof dict,
                              "{'descr': '%s', 'fortran_order': False, "
                              "'shape': (", descr);
  for (int i = 0; i < t->rank; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld",
                          (long long)t->shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, t->rank == 1 ? ",), }" : "), }");
  size_t prefix = 10;
  size_t total = (prefix + n + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  if (total - prefix > 65535) {
    prefix = 12;
    total = (prefix + n + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  }
  if (total > cap)
    return 0;
  size_t hlen = total - prefix;
  memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
  buf[6] = prefix == 10 ? 1 : 2;
  buf[7] = 0;
  for (size_t i = 0; i < prefix - 8; i++)
    buf[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + prefix, dict, n);
  memset(buf + prefix + n, ' ', total - prefix - n - 1);
  buf[total - 1] = '\n';
  return total;
}

int td_npy_write(const char *path, const td_tensor *t, td_err *err) {
  unsigned char hdr[512];
  if ((unsigned)t->dtype >= TD_DTYPE_COUNT || t->rank < 0 || t->rank > TD_MAX_RANK)
    return td_err_set(err, "%s: invalid tensor", path);
  if (t->dtype == TD_BF16) /* NumPy has no bfloat16 dtype */
    return td_err_set(err, "%s: a bf16 tensor cannot be saved as .npy (NumPy has no bfloat16 "
                      "dtype); save it as safetensors, or cast it with f32(x) first", path);
  size_t hl = build_header(t, hdr, sizeof hdr);
  if (hl == 0)
    return td_err_set(err, "%s: .npy header too long", path);
  td_io_chunk chunks[2] = {
      {hdr, hl}, {t->data, (size_t)t->numel * td_dtype_size(t->dtype)}};
  return td_io_write_atomic(path, chunks, 2, err);
}

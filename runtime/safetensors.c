/* safetensors.c - named tensor maps and the safetensors file format.
 *
 * Layout: u64 LE header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}
 * (optionally "__metadata__": {...}), then the data area; offsets are
 * relative to the start of the data area.  The reader validates each entry
 * against the data area's size before allocating and reads each tensor with
 * pread.  The writer sorts tensors by name, packs them without gaps, and pads
 * the header with spaces to a multiple of 8 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "io.h"
#include "strbuf.h"
#include "json.h"
#include "mem.h"

#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000) /* 100 MB */

/* ---- tensor maps -------------------------------------------------------- */

void td_tensor_map_init(td_tensor_map *m) { memset(m, 0, sizeof *m); }

void td_tensor_map_free(td_tensor_map *m) {
  for (int i = 0; i < m->n; i++) {
    td_free(m->items[i].name);
    td_tensor_release(m->items[i].tensor);
  }
  td_free(m->items);
  td_tensor_map_init(m);
}

static int map_find(const td_tensor_map *m, const char *name) {
  for (int i = 0; i < m->n; i++)
    if (strcmp(m->items[i].name, name) == 0)
      return i;
  return -1;
}

int td_tensor_map_put(td_tensor_map *m, const char *name, td_tensor *t, td_err *err) {
  if (map_find(m, name) >= 0)
    return td_err_set(err, "duplicate tensor name '%s'", name);
  if (m->n == m->cap) {
    int cap = m->cap ? m->cap * 2 : 8;
    td_named_tensor *items = td_realloc(m->items, (size_t)cap * sizeof *items);
    if (!items)
      return td_err_set(err, "out of memory");
    m->items = items;
    m->cap = cap;
  }
  char *copy = td_strdup(name);
  if (!copy)
    return td_err_set(err, "out of memory");
  m->items[m->n].name = copy;
  m->items[m->n].tensor = td_tensor_retain(t);
  m->n++;
  return 0;
}

td_tensor *td_tensor_map_get(const td_tensor_map *m, const char *name) {
  int i = map_find(m, name);
  return i < 0 ? NULL : m->items[i].tensor;
}

/* ---- dtypes ------------------------------------------------------------- */

static const struct {
  const char *name;
  td_dtype dt;
} st_types[] = {{"F32", TD_F32}, {"F64", TD_F64}, {"I32", TD_I32},
                {"I64", TD_I64}, {"BOOL", TD_BOOL}, {"F16", TD_F16},
                {"BF16", TD_BF16}};
#define ST_NTYPES (int)(sizeof st_types / sizeof st_types[0])

static const char *st_dtype_name(td_dtype dt) {
  for (int i = 0; i < ST_NTYPES; i++)
    if (st_types[i].dt == dt)
      return st_types[i].name;
  return "?";
}

/* ---- reading ------------------------------------------------------------ */

/* What one header entry says, after validation. */
typedef struct st_entry {
  td_dtype dt;
  int rank;
  int64_t shape[TD_MAX_RANK];
  uint64_t begin, end;
} st_entry;

typedef struct st_reader {
  const char *path;
  int fd;
  uint64_t data_start, data_size;
  td_err *err;
} st_reader;

static int entry_dtype(st_reader *r, const char *name, const td_json *e, st_entry *out) {
  const td_json *d = td_json_get(e, "dtype");
  if (!d || d->kind != TD_JSON_STRING)
    return td_err_set(r->err, "%s: tensor '%s': missing or non-string \"dtype\"",
                      r->path, name);
  for (int i = 0; i < ST_NTYPES; i++) {
    if (strcmp(d->text, st_types[i].name) == 0) {
      out->dt = st_types[i].dt;
      return 0;
    }
  }
  return td_err_set(r->err, "%s: tensor '%s': dtype %s is not supported "
                    "(supported: F32 F64 F16 BF16 I32 I64 BOOL)", r->path, name, d->text);
}

/* Shape entries, and the byte size they need (overflow checked). */
static int entry_shape(st_reader *r, const char *name, const td_json *e,
                       st_entry *out, uint64_t *bytes) {
  const td_json *s = td_json_get(e, "shape");
  if (!s || s->kind != TD_JSON_ARRAY)
    return td_err_set(r->err, "%s: tensor '%s': missing or non-array \"shape\"",
                      r->path, name);
  if (s->n > TD_MAX_RANK)
    return td_err_set(r->err, "%s: tensor '%s': rank %d is above the maximum %d",
                      r->path, name, s->n, TD_MAX_RANK);
  uint64_t n = td_dtype_size(out->dt);
  int zero = 0;
  out->rank = s->n;
  for (int i = 0; i < s->n; i++) {
    uint64_t d;
    if (td_json_uint64(s->items[i], &d) < 0 || d > (uint64_t)INT64_MAX)
      return td_err_set(r->err, "%s: tensor '%s': shape entry %d is not a "
                        "non-negative integer", r->path, name, i);
    out->shape[i] = (int64_t)d;
    if (d == 0)
      zero = 1;
    else if (n > (uint64_t)INT64_MAX / d)
      return td_err_set(r->err, "%s: tensor '%s': shape is too large", r->path, name);
    else
      n *= d;
  }
  *bytes = zero ? 0 : n;
  return 0;
}

static int entry_offsets(st_reader *r, const char *name, const td_json *e,
                         st_entry *out, uint64_t bytes) {
  const td_json *o = td_json_get(e, "data_offsets");
  if (!o || o->kind != TD_JSON_ARRAY || o->n != 2 ||
      td_json_uint64(o->items[0], &out->begin) < 0 ||
      td_json_uint64(o->items[1], &out->end) < 0)
    return td_err_set(r->err, "%s: tensor '%s': \"data_offsets\" must be "
                      "[begin, end] with non-negative integers", r->path, name);
  if (out->begin > out->end || out->end > r->data_size)
    return td_err_set(r->err, "%s: tensor '%s': data_offsets [%llu, %llu] out of "
                      "range (data is %llu bytes)", r->path, name,
                      (unsigned long long)out->begin, (unsigned long long)out->end,
                      (unsigned long long)r->data_size);
  if (out->end - out->begin != bytes) {
    char sbuf[256];
    return td_err_set(r->err, "%s: tensor '%s': data_offsets [%llu, %llu] hold "
                      "%llu bytes but %s needs %llu", r->path, name,
                      (unsigned long long)out->begin, (unsigned long long)out->end,
                      (unsigned long long)(out->end - out->begin),
                      td_shape_str(out->dt, out->rank, out->shape, sbuf, sizeof sbuf),
                      (unsigned long long)bytes);
  }
  return 0;
}

/* Validates one entry, then allocates and reads its tensor. */
static int read_entry(st_reader *r, const char *name, const td_json *e,
                      td_tensor **out) {
  st_entry se;
  uint64_t bytes = 0;
  if (e->kind != TD_JSON_OBJECT)
    return td_err_set(r->err, "%s: tensor '%s': entry is not an object", r->path, name);
  if (entry_dtype(r, name, e, &se) < 0 || entry_shape(r, name, e, &se, &bytes) < 0 ||
      entry_offsets(r, name, e, &se, bytes) < 0)
    return -1;
  td_err terr;
  td_tensor *t = td_tensor_new(se.dt, se.rank, se.shape, &terr);
  if (!t)
    return td_err_set(r->err, "%s: tensor '%s': %s", r->path, name, terr.msg);
  if (bytes && td_io_pread(r->fd, t->data, (size_t)bytes, r->data_start + se.begin) < 0) {
    td_tensor_release(t);
    return td_err_set(r->err, "%s: tensor '%s': read error", r->path, name);
  }
  const unsigned char *b = t->data;
  for (int64_t i = 0; se.dt == TD_BOOL && i < t->numel; i++) {
    if (b[i] > 1) {
      td_err_set(r->err, "%s: tensor '%s': bool element %lld has byte value %d "
                 "(must be 0 or 1)", r->path, name, (long long)i, b[i]);
      td_tensor_release(t);
      return -1;
    }
  }
  *out = t;
  return 0;
}

/* Reads every entry of the parsed header into m. */
static int read_entries(st_reader *r, const td_json *root, td_tensor_map *m) {
  if (root->kind != TD_JSON_OBJECT)
    return td_err_set(r->err, "%s: header is not a JSON object", r->path);
  for (int i = 0; i < root->n; i++) {
    const char *name = root->keys[i];
    if (strlen(name) != root->key_lens[i])
      return td_err_set(r->err, "%s: tensor name with a NUL character", r->path);
    if (strcmp(name, "__metadata__") == 0)
      continue;
    td_tensor *t = NULL;
    if (read_entry(r, name, root->items[i], &t) < 0)
      return -1;
    td_err terr;
    int rc = td_tensor_map_put(m, name, t, &terr);
    td_tensor_release(t);
    if (rc < 0)
      return td_err_set(r->err, "%s: %s", r->path, terr.msg);
  }
  return 0;
}

/* Reads the length prefix and the header text (NUL-terminated, td_malloc'd). */
static int read_header(st_reader *r, uint64_t size, char **text, uint64_t *len) {
  unsigned char pre[8];
  if (size < 8)
    return td_err_set(r->err, "%s: file is truncated: %llu bytes, too short for "
                      "a safetensors header", r->path, (unsigned long long)size);
  if (td_io_pread(r->fd, pre, 8, 0) < 0)
    return td_err_set(r->err, "%s: read error", r->path);
  uint64_t n = td_io_le64(pre);
  if (n > size - 8)
    return td_err_set(r->err, "%s: header length %llu exceeds the file size "
                      "(%llu bytes)", r->path, (unsigned long long)n,
                      (unsigned long long)size);
  if (n > ST_MAX_HEADER)
    return td_err_set(r->err, "%s: header length %llu is above the 100 MB limit",
                      r->path, (unsigned long long)n);
  char *h = td_malloc((size_t)n + 1);
  if (!h)
    return td_err_set(r->err, "%s: out of memory", r->path);
  if (td_io_pread(r->fd, h, (size_t)n, 8) < 0) {
    td_free(h);
    return td_err_set(r->err, "%s: read error", r->path);
  }
  h[n] = '\0';
  *text = h;
  *len = n;
  r->data_start = 8 + n;
  r->data_size = size - 8 - n;
  return 0;
}

/* Moves every item of src to the end of dst (names must be new there). */
static int map_move(td_tensor_map *dst, td_tensor_map *src, const char *path,
                    td_err *err) {
  for (int i = 0; i < src->n; i++)
    if (map_find(dst, src->items[i].name) >= 0)
      return td_err_set(err, "%s: tensor '%s' is already loaded", path,
                        src->items[i].name);
  if (dst->n + src->n > dst->cap) {
    int cap = dst->n + src->n;
    td_named_tensor *items = td_realloc(dst->items, (size_t)cap * sizeof *items);
    if (!items)
      return td_err_set(err, "%s: out of memory", path);
    dst->items = items;
    dst->cap = cap;
  }
  if (src->n)
    memcpy(dst->items + dst->n, src->items, (size_t)src->n * sizeof *src->items);
  dst->n += src->n;
  src->n = 0;
  return 0;
}

int td_safetensors_read(const char *path, td_tensor_map *out, td_err *err) {
  st_reader r = {path, -1, 0, 0, err};
  uint64_t size, hlen = 0;
  char *text = NULL;
  if (td_io_open(path, &r.fd, &size, err) < 0)
    return -1;
  int rc = read_header(&r, size, &text, &hlen);
  td_arena *a = NULL;
  td_tensor_map m;
  td_tensor_map_init(&m);
  if (rc == 0 && !(a = td_arena_new()))
    rc = td_err_set(err, "%s: out of memory", path);
  if (rc == 0) {
    td_json *root;
    size_t off;
    const char *msg;
    if (td_json_parse(a, text, (size_t)hlen, &root, &off, &msg) < 0)
      rc = td_err_set(err, "%s: invalid JSON header at byte %zu: %s", path,
                      (size_t)8 + off, msg);
    else
      rc = read_entries(&r, root, &m);
  }
  if (rc == 0)
    rc = map_move(out, &m, path, err);
  td_tensor_map_free(&m);
  td_arena_free(a);
  td_free(text);
  td_io_close(r.fd);
  return rc;
}

/* ---- writing ------------------------------------------------------------ */


static void sb_fmt(td_strbuf *b, const char *fmt, unsigned long long v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, fmt, v);
  td_sb_add(b, tmp, (size_t)n);
}

/* A JSON string literal with the escapes JSON requires. */
static void sb_json_str(td_strbuf *b, const char *s) {
  td_sb_add(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      td_sb_add(b, e, 2);
    } else if (c < 0x20) {
      sb_fmt(b, "\\u%04llx", c);
    } else {
      td_sb_add(b, s, 1);
    }
  }
  td_sb_add(b, "\"", 1);
}

static int cmp_by_name(const void *a, const void *b) {
  const td_named_tensor *x = *(const td_named_tensor *const *)a;
  const td_named_tensor *y = *(const td_named_tensor *const *)b;
  return strcmp(x->name, y->name);
}

/* Header JSON for the tensors in `order`, padded to a multiple of 8. */
static void build_st_header(td_strbuf *b, td_named_tensor **order, int n) {
  uint64_t off = 0;
  td_sb_add(b, "{", 1);
  for (int i = 0; i < n; i++) {
    const td_tensor *t = order[i]->tensor;
    uint64_t bytes = (uint64_t)t->numel * td_dtype_size(t->dtype);
    if (i)
      td_sb_add(b, ",", 1);
    sb_json_str(b, order[i]->name);
    td_sb_add(b, ":{\"dtype\":\"", 11);
    td_sb_add(b, st_dtype_name(t->dtype), strlen(st_dtype_name(t->dtype)));
    td_sb_add(b, "\",\"shape\":[", 11);
    for (int k = 0; k < t->rank; k++)
      sb_fmt(b, k ? ",%llu" : "%llu", (unsigned long long)t->shape[k]);
    sb_fmt(b, "],\"data_offsets\":[%llu,", off);
    sb_fmt(b, "%llu]}", off + bytes);
    off += bytes;
  }
  td_sb_add(b, "}", 1);
  while (b->len % 8)
    td_sb_add(b, " ", 1);
}

int td_safetensors_write(const char *path, const td_tensor_map *m, td_err *err) {
  int n = m->n;
  td_named_tensor **order = td_malloc((size_t)(n ? n : 1) * sizeof *order);
  td_io_chunk *chunks = td_malloc((size_t)(n + 2) * sizeof *chunks);
  td_strbuf hdr = {0};
  int rc = -1;
  if (!order || !chunks) {
    td_err_set(err, "%s: out of memory", path);
    goto done;
  }
  for (int i = 0; i < n; i++)
    order[i] = &m->items[i];
  qsort(order, (size_t)n, sizeof *order, cmp_by_name);
  for (int i = 1; i < n; i++)
    if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
      td_err_set(err, "%s: duplicate tensor name '%s'", path, order[i]->name);
      goto done;
    }
  build_st_header(&hdr, order, n);
  if (hdr.oom) {
    td_err_set(err, "%s: out of memory", path);
    goto done;
  }
  unsigned char len8[8];
  td_io_put_le64(len8, hdr.len);
  chunks[0] = (td_io_chunk){len8, 8};
  chunks[1] = (td_io_chunk){hdr.s, hdr.len};
  for (int i = 0; i < n; i++) {
    const td_tensor *t = order[i]->tensor;
    chunks[i + 2] = (td_io_chunk){t->data, (size_t)t->numel * td_dtype_size(t->dtype)};
  }
  rc = td_io_write_atomic(path, chunks, n + 2, err);
done:
  td_free(hdr.s);
  td_free(chunks);
  td_free(order);
  return rc;
}

/* safetensors.c - named tensor maps and the safetensors file format.
 *
 * Layout: u64 LE header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}
 * (optionally "__metadata__": {...}), then the data area; offsets are
 * relative to the start of the data area.  Opening a file validates the
 * whole header - each entry against the data area's size, and that the
 * entries' ranges tile the data area exactly (sorted by offset, each begins
 * where the one before ended, the last ends where the file does) - before
 * any tensor data is read or allocated; loading reads one tensor with pread.  The writer sorts tensors by name, packs them without gaps, and pads
 * the header with spaces to a multiple of 8 bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/fileio.h"
#include "runtime/io.h"
#include "runtime/strbuf.h"
#include "runtime/json.h"
#include "runtime/mem.h"

#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000) /* 100 MB */

/* ---- tensor maps -------------------------------------------------------- */

void td_tensor_map_init(td_tensor_map *m) { memset(m, 0, sizeof *m); }

void td_tensor_map_free(td_tensor_map *m) {
  for (int i = 0; i < m->n; i++) {
    td_free(m->items[i].name);
    td_tensor_release(m->items[i].tensor);
  }
  td_free(m->items);
  td_free(m->index);
  td_tensor_map_init(m);
}


/* Slot of name in m->index (its entry, or the empty slot where it goes). */
static int index_slot(const td_tensor_map *m, const char *name) {
  uint32_t mask = (uint32_t)m->index_cap - 1, k = td_str_hash(name) & mask;
  while (m->index[k] && strcmp(m->items[m->index[k] - 1].name, name) != 0) k = (k + 1) & mask;
  return (int)k;
}

/* Grows items to cap entries with an index of twice that, rebuilt; on
 * failure m is as it was (so its index never fills up). */
static int map_reserve(td_tensor_map *m, int cap) {
  size_t slots = 16;
  while (slots < 2 * (size_t)cap) slots *= 2;   /* a power of two: index_slot masks */
  int *idx = td_calloc(slots, sizeof *idx);
  td_named_tensor *items = idx ? td_realloc(m->items, (size_t)cap * sizeof *items) : NULL;
  if (!items) {
    td_free(idx);
    return -1;
  }
  m->items = items;
  m->cap = cap;
  td_free(m->index);
  m->index = idx;
  m->index_cap = (int)slots;
  for (int i = 0; i < m->n; i++) m->index[index_slot(m, m->items[i].name)] = i + 1;
  return 0;
}

static int map_find(const td_tensor_map *m, const char *name) {
  if (!m->index_cap) return -1;
  int s = m->index[index_slot(m, name)];
  return s - 1;
}

int td_tensor_map_put(td_tensor_map *m, const char *name, td_tensor *t, td_err *err) {
  if (map_find(m, name) >= 0)
    return td_err_set(err, "duplicate tensor name '%s'", name);
  if (m->n == m->cap && map_reserve(m, m->cap ? m->cap * 2 : 8))
    return td_err_set(err, "out of memory");
  char *copy = td_strdup(name);
  if (!copy)
    return td_err_set(err, "out of memory");
  m->items[m->n].name = copy;
  m->items[m->n].tensor = td_tensor_retain(t);
  m->index[index_slot(m, copy)] = m->n + 1;
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

typedef struct st_reader {
  const char *path;
  int fd;
  uint64_t data_start, data_size;
  td_err *err;
} st_reader;

static int entry_dtype(st_reader *r, const char *name, const td_json *e, td_tensor *h) {
  const td_json *d = td_json_get(e, "dtype");
  if (!d || d->kind != TD_JSON_STRING)
    return td_err_set(r->err, "%s: tensor '%s': missing or non-string \"dtype\"",
                      r->path, name);
  for (int i = 0; i < ST_NTYPES; i++) {
    if (strcmp(d->text, st_types[i].name) == 0) {
      h->dtype = st_types[i].dt;
      return 0;
    }
  }
  return td_err_set(r->err, "%s: tensor '%s': dtype %s is not supported "
                    "(supported: F32 F64 F16 BF16 I32 I64 BOOL)", r->path, name, d->text);
}

/* Shape entries into h (numel too), and the byte size they need (overflow
 * checked). */
static int entry_shape(st_reader *r, const char *name, const td_json *e,
                       td_tensor *h, uint64_t *bytes) {
  const td_json *s = td_json_get(e, "shape");
  if (!s || s->kind != TD_JSON_ARRAY)
    return td_err_set(r->err, "%s: tensor '%s': missing or non-array \"shape\"",
                      r->path, name);
  if (s->n > TD_MAX_RANK)
    return td_err_set(r->err, "%s: tensor '%s': rank %d is above the maximum %d",
                      r->path, name, s->n, TD_MAX_RANK);
  uint64_t n = td_dtype_size(h->dtype);
  int zero = 0;
  h->rank = s->n;
  for (int i = 0; i < s->n; i++) {
    uint64_t d;
    if (td_json_uint64(s->items[i], &d) < 0 || d > (uint64_t)INT64_MAX)
      return td_err_set(r->err, "%s: tensor '%s': shape entry %d is not a "
                        "non-negative integer", r->path, name, i);
    h->shape[i] = (int64_t)d;
    if (d == 0)
      zero = 1;
    else if (n > (uint64_t)INT64_MAX / d)
      return td_err_set(r->err, "%s: tensor '%s': shape is too large", r->path, name);
    else
      n *= d;
  }
  *bytes = zero ? 0 : n;
  h->numel = (int64_t)(*bytes / td_dtype_size(h->dtype));
  return 0;
}

static int entry_offsets(st_reader *r, const char *name, const td_json *e,
                         const td_tensor *h, uint64_t bytes, uint64_t *off) {
  const td_json *o = td_json_get(e, "data_offsets");
  if (!o || o->kind != TD_JSON_ARRAY || o->n != 2 ||
      td_json_uint64(o->items[0], &off[0]) < 0 ||
      td_json_uint64(o->items[1], &off[1]) < 0)
    return td_err_set(r->err, "%s: tensor '%s': \"data_offsets\" must be "
                      "[begin, end] with non-negative integers", r->path, name);
  unsigned long long b = off[0], e2 = off[1];
  if (b > e2)
    return td_err_set(r->err, "%s: tensor '%s': data_offsets [%llu, %llu] are "
                      "reversed (begin %llu > end %llu)", r->path, name, b, e2, b, e2);
  if (e2 > r->data_size)
    return td_err_set(r->err, "%s: tensor '%s': data_offsets [%llu, %llu] out of "
                      "range (data is %llu bytes)", r->path, name, b, e2,
                      (unsigned long long)r->data_size);
  if (e2 - b != bytes) {
    char sbuf[256];
    return td_err_set(r->err, "%s: tensor '%s': data_offsets [%llu, %llu] hold "
                      "%llu bytes but %s needs %llu", r->path, name, b, e2, e2 - b,
                      td_shape_str(h->dtype, h->rank, h->shape, sbuf, sizeof sbuf),
                      (unsigned long long)bytes);
  }
  return 0;
}

/* Checks one entry of the header into f's next slot. */
static int add_entry(st_reader *r, const char *name, const td_json *e, td_st_file *f) {
  td_tensor *h = &f->heads[f->n];
  uint64_t bytes = 0, *off = &f->offs[2 * f->n];
  memset(h, 0, sizeof *h);
  h->refcount = 1;
  if (e->kind != TD_JSON_OBJECT)
    return td_err_set(r->err, "%s: tensor '%s': entry is not an object", r->path, name);
  if (entry_dtype(r, name, e, h) < 0 || entry_shape(r, name, e, h, &bytes) < 0 ||
      entry_offsets(r, name, e, h, bytes, off) < 0)
    return -1;
  if (!(f->items[f->n].name = td_strdup(name)))
    return td_err_set(r->err, "%s: out of memory", r->path);
  f->items[f->n++].tensor = h;
  return 0;
}

static int cmp_by_name(const void *a, const void *b);

/* No two entries share a name (sorted once: a header may hold 100 000). */
static int check_unique(st_reader *r, td_st_file *f) {
  td_named_tensor **order = td_malloc((size_t)(f->n ? f->n : 1) * sizeof *order);
  if (!order)
    return td_err_set(r->err, "%s: out of memory", r->path);
  for (int i = 0; i < f->n; i++)
    order[i] = &f->items[i];
  qsort(order, (size_t)f->n, sizeof *order, cmp_by_name);
  int rc = 0;
  for (int i = 1; i < f->n && rc == 0; i++)
    if (strcmp(order[i - 1]->name, order[i]->name) == 0)
      rc = td_err_set(r->err, "%s: duplicate tensor name '%s'", r->path, order[i]->name);
  td_free(order);
  return rc;
}

/* Keeps the string members of "__metadata__" in f->meta (an object's;
 * anything else there is ignored). */
static int add_meta(st_reader *r, const td_json *m, td_st_file *f) {
  if (m->kind != TD_JSON_OBJECT)
    return 0; /* not the format's string map: ignored, as it always was */
  f->meta = td_calloc(2 * (size_t)m->n + 1, sizeof *f->meta);
  if (!f->meta)
    return td_err_set(r->err, "%s: out of memory", r->path);
  for (int i = 0; i < m->n; i++) {
    if (m->items[i]->kind != TD_JSON_STRING)
      continue;
    char *k = td_strdup(m->keys[i]), *v = td_strdup(m->items[i]->text);
    if (!k || !v) {
      td_free(k);
      td_free(v);
      return td_err_set(r->err, "%s: out of memory", r->path);
    }
    f->meta[2 * f->n_meta] = k;
    f->meta[2 * f->n_meta++ + 1] = v;
  }
  return 0;
}

const char *td_safetensors_meta(const td_st_file *f, const char *key) {
  for (int i = 0; i < f->n_meta; i++)
    if (!strcmp(f->meta[2 * i], key))
      return f->meta[2 * i + 1];
  return NULL;
}

/* Checks every entry of the parsed header into f. */
static int add_entries(st_reader *r, const td_json *root, td_st_file *f) {
  if (root->kind != TD_JSON_OBJECT)
    return td_err_set(r->err, "%s: header is not a JSON object", r->path);
  size_t cap = (size_t)root->n + 1;
  f->items = td_calloc(cap, sizeof *f->items);
  f->heads = td_calloc(cap, sizeof *f->heads);
  f->offs = td_calloc(2 * cap, sizeof *f->offs);
  if (!f->items || !f->heads || !f->offs)
    return td_err_set(r->err, "%s: out of memory", r->path);
  for (int i = 0; i < root->n; i++) {
    const char *name = root->keys[i];
    if (strlen(name) != root->key_lens[i])
      return td_err_set(r->err, "%s: tensor name with a NUL character", r->path);
    if (strcmp(name, "__metadata__") == 0 ? !f->meta && add_meta(r, root->items[i], f) < 0
                                          : add_entry(r, name, root->items[i], f) < 0)
      return -1;
  }
  return check_unique(r, f);
}

/* ---- the tiling of the data area ---- */

typedef struct st_range {
  uint64_t begin, end;
  int i;
} st_range;

static int cmp_range(const void *a, const void *b) {
  const st_range *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

#define ST_TILE_RULE "the tensors' data_offsets must tile the data area exactly"

/* The first problem of ranges s[0..n) (sorted) tiling [0, size): an
 * overlap, a gap, or bytes after the last tensor; 0 when there is none. */
static int tiling_problem(const st_reader *r, const td_st_file *f, const st_range *s,
                          int n) {
  uint64_t pos = 0;
  const st_range *prev = NULL;
  for (int k = 0; k < n; k++) {
    const st_range *c = &s[k];
    const char *cn = f->items[c->i].name;
    unsigned long long cb = c->begin, ce = c->end;
    if (prev && c->begin < pos)
      return td_err_set(r->err, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] "
                        "overlap (" ST_TILE_RULE ")", r->path, f->items[prev->i].name,
                        (unsigned long long)prev->begin, (unsigned long long)prev->end,
                        cn, cb, ce);
    if (c->begin > pos && prev)
      return td_err_set(r->err, "%s: a gap of %llu bytes between tensors '%s' [%llu, %llu] "
                        "and '%s' [%llu, %llu] (" ST_TILE_RULE ")", r->path,
                        (unsigned long long)(c->begin - pos), f->items[prev->i].name,
                        (unsigned long long)prev->begin, (unsigned long long)prev->end,
                        cn, cb, ce);
    if (c->begin > pos)
      return td_err_set(r->err, "%s: a gap of %llu bytes before the first tensor '%s' "
                        "[%llu, %llu] (" ST_TILE_RULE ")", r->path, cb, cn, cb, ce);
    pos = c->end;
    prev = c;
  }
  if (pos == r->data_size)
    return 0;
  unsigned long long left = r->data_size - pos;
  if (!prev)
    return td_err_set(r->err, "%s: %llu bytes of data, but the header names no tensors "
                      "(" ST_TILE_RULE ")", r->path, left);
  return td_err_set(r->err, "%s: %llu trailing bytes after the last tensor '%s' "
                    "[%llu, %llu] (the data area is %llu bytes; " ST_TILE_RULE ")",
                    r->path, left, f->items[prev->i].name, (unsigned long long)prev->begin,
                    (unsigned long long)prev->end, (unsigned long long)r->data_size);
}

static int check_tiling(const st_reader *r, const td_st_file *f) {
  st_range *s = td_malloc((size_t)(f->n + 1) * sizeof *s);
  if (!s)
    return td_err_set(r->err, "%s: out of memory", r->path);
  for (int i = 0; i < f->n; i++)
    s[i] = (st_range){f->offs[2 * i], f->offs[2 * i + 1], i};
  qsort(s, (size_t)f->n, sizeof *s, cmp_range);
  int rc = tiling_problem(r, f, s, f->n);
  td_free(s);
  return rc;
}

/* ---- opening and loading ---- */

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

/* Parses the header text and checks its entries into f. */
static int parse_entries(st_reader *r, const char *text, uint64_t len, td_st_file *f) {
  td_arena *a = td_arena_new();
  if (!a)
    return td_err_set(r->err, "%s: out of memory", r->path);
  td_json *root;
  size_t off;
  const char *msg;
  int rc;
  if (td_json_parse(a, text, (size_t)len, &root, &off, &msg) < 0)
    rc = td_err_set(r->err, "%s: invalid JSON header at byte %zu: %s", r->path,
                    (size_t)8 + off, msg);
  else
    rc = add_entries(r, root, f);
  td_arena_free(a);
  return rc;
}

int td_safetensors_open(const char *path, td_st_file *f, td_err *err) {
  st_reader r = {path, -1, 0, 0, err};
  uint64_t size, hlen = 0;
  char *text = NULL;
  memset(f, 0, sizeof *f);
  f->path = path;
  f->fd = -1;
  if (td_io_open(path, &r.fd, &size, err) < 0)
    return -1;
  f->fd = r.fd;
  int rc = read_header(&r, size, &text, &hlen);
  if (rc == 0)
    rc = parse_entries(&r, text, hlen, f);
  if (rc == 0)
    rc = check_tiling(&r, f);
  td_free(text);
  f->data_start = r.data_start;
  if (rc)
    td_safetensors_close(f);
  return rc;
}

int td_safetensors_load(const td_st_file *f, int i, td_tensor **out, td_err *err) {
  const td_tensor *h = &f->heads[i];
  const char *name = f->items[i].name;
  size_t bytes = (size_t)(f->offs[2 * i + 1] - f->offs[2 * i]);
  td_err terr;
  td_tensor *t = td_tensor_new(h->dtype, h->rank, h->shape, &terr);
  if (!t)
    return td_err_set(err, "%s: tensor '%s': %s", f->path, name, terr.msg);
  if (bytes && td_io_pread(f->fd, t->data, bytes, f->data_start + f->offs[2 * i]) < 0) {
    td_tensor_release(t);
    return td_err_set(err, "%s: tensor '%s': read error", f->path, name);
  }
  const unsigned char *b = t->data;
  for (int64_t k = 0; h->dtype == TD_BOOL && k < t->numel; k++) {
    if (b[k] > 1) {
      td_err_set(err, "%s: tensor '%s': bool element %lld has byte value %d "
                 "(must be 0 or 1)", f->path, name, (long long)k, b[k]);
      td_tensor_release(t);
      return -1;
    }
  }
  *out = t;
  return 0;
}

void td_safetensors_close(td_st_file *f) {
  for (int i = 0; f->items && i < f->n; i++)
    td_free(f->items[i].name);
  td_free(f->items);
  td_free(f->heads);
  td_free(f->offs);
  for (int i = 0; i < 2 * f->n_meta; i++)
    td_free(f->meta[i]);
  td_free(f->meta);
  td_io_close(f->fd);
  const char *path = f->path;
  memset(f, 0, sizeof *f);
  f->path = path;
  f->fd = -1;
}

/* Moves every item of src to the end of dst (names must be new there). */
static int map_move(td_tensor_map *dst, td_tensor_map *src, const char *path,
                    td_err *err) {
  for (int i = 0; i < src->n; i++)
    if (map_find(dst, src->items[i].name) >= 0)
      return td_err_set(err, "%s: tensor '%s' is already loaded", path,
                        src->items[i].name);
  if (dst->n + src->n > dst->cap && map_reserve(dst, dst->n + src->n))
    return td_err_set(err, "%s: out of memory", path);
  for (int i = 0; i < src->n; i++) {
    dst->items[dst->n] = src->items[i];
    dst->index[index_slot(dst, dst->items[dst->n].name)] = dst->n + 1;
    dst->n++;
  }
  src->n = 0;
  return 0;
}

int td_safetensors_load_all(const td_st_file *f, td_tensor_map *out, td_err *err) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  int rc = 0;
  for (int i = 0; i < f->n && rc == 0; i++) {
    td_tensor *t = NULL;
    td_err terr;
    rc = td_safetensors_load(f, i, &t, err);
    if (rc == 0 && td_tensor_map_put(&m, f->items[i].name, t, &terr) < 0)
      rc = td_err_set(err, "%s: %s", f->path, terr.msg);
    td_tensor_release(t);
  }
  if (rc == 0)
    rc = map_move(out, &m, f->path, err);
  td_tensor_map_free(&m);
  return rc;
}

int td_safetensors_read(const char *path, td_tensor_map *out, td_err *err) {
  td_st_file f;
  if (td_safetensors_open(path, &f, err) < 0)
    return -1;
  int rc = td_safetensors_load_all(&f, out, err);
  td_safetensors_close(&f);
  return rc;
}

/* ---- writing ------------------------------------------------------------ */


static void sb_fmt(td_strbuf *b, const char *fmt, unsigned long long v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, fmt, v);
  td_sb_add(b, tmp, (size_t)n);
}

static int cmp_by_name(const void *a, const void *b) {
  const td_named_tensor *x = *(const td_named_tensor *const *)a;
  const td_named_tensor *y = *(const td_named_tensor *const *)b;
  return strcmp(x->name, y->name);
}

/* Header JSON for the tensors in `order` (after the metadata pairs kv),
 * padded to a multiple of 8. */
static void build_st_header(td_strbuf *b, td_named_tensor **order, int n, const char *const *kv, int n_kv) {
  uint64_t off = 0;
  td_sb_add(b, "{", 1);
  if (n_kv) {
    td_sb_add(b, "\"__metadata__\":{", strlen("\"__metadata__\":{"));
    for (int i = 0; i < n_kv; i++) {
      if (i)
        td_sb_add(b, ",", 1);
      td_sb_json_str(b, kv[2 * i]);
      td_sb_add(b, ":", 1);
      td_sb_json_str(b, kv[2 * i + 1]);
    }
    td_sb_add(b, n ? "}," : "}", n ? 2 : 1);
  }
  for (int i = 0; i < n; i++) {
    const td_tensor *t = order[i]->tensor;
    uint64_t bytes = (uint64_t)t->numel * td_dtype_size(t->dtype);
    if (i)
      td_sb_add(b, ",", 1);
    td_sb_json_str(b, order[i]->name);
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
  while (b->len % 8 && !b->oom)   /* an append that ran out of memory adds nothing */
    td_sb_add(b, " ", 1);
}

int td_safetensors_write(const char *path, const td_tensor_map *m, td_err *err) {
  return td_safetensors_write_meta(path, m, NULL, 0, err);
}

int td_safetensors_write_meta(const char *path, const td_tensor_map *m, const char *const *kv, int n_kv,
                              td_err *err) {
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
  build_st_header(&hdr, order, n, kv, n_kv);
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

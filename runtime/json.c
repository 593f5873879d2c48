/* json.c - a small strict JSON reader (recursive descent).
 *
 * Grammar as in RFC 8259: objects, arrays, strings with all escapes
 * (including surrogate pairs, decoded to UTF-8), numbers in JSON's exact
 * syntax, true/false/null.  Raw control characters in strings, lone
 * surrogates, trailing commas, leading zeros and trailing text are errors.
 * Nesting is limited so hostile input cannot exhaust the stack.
 */
#include "runtime/json.h"

#include <string.h>

#define JSON_MAX_DEPTH 64

typedef struct jparser {
  td_arena *a;
  const char *s;
  size_t len, pos;
  int depth;
  size_t err_off;
  const char *err_msg;
} jparser;

static int jfail(jparser *p, const char *msg) {
  p->err_off = p->pos;
  p->err_msg = msg;
  return -1;
}

static void jws(jparser *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                             p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static int jpeek(const jparser *p) {
  return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static td_json *jnode(jparser *p, td_json_kind k) {
  td_json *v = td_arena_alloc(p->a, sizeof *v);
  if (!v) {
    jfail(p, "out of memory");
    return NULL;
  }
  v->kind = k;
  v->offset = p->pos;
  return v;
}

static int jvalue(jparser *p, td_json **out);

/* ---- strings ------------------------------------------------------------ */

static int hex4(jparser *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int c = jpeek(p);
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return jfail(p, "bad \\u escape (expected 4 hex digits)");
    v = v * 16 + (unsigned)d;
    p->pos++;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | cp >> 6);
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | cp >> 12);
    o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | cp >> 18);
  o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* After "\u": one code point, pairing surrogates; appended to o. */
static int junicode(jparser *p, char *o, size_t *n) {
  unsigned cp, lo;
  if (hex4(p, &cp) < 0)
    return -1;
  if (cp >= 0xDC00 && cp <= 0xDFFF)
    return jfail(p, "lone low surrogate in \\u escape");
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
      return jfail(p, "high surrogate not followed by a low surrogate");
    p->pos += 2;
    if (hex4(p, &lo) < 0)
      return -1;
    if (lo < 0xDC00 || lo > 0xDFFF)
      return jfail(p, "high surrogate not followed by a low surrogate");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  *n += put_utf8(o + *n, cp);
  return 0;
}

static int jescape(jparser *p, char *o, size_t *n) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  int c = jpeek(p);
  if (c == 'u') {
    p->pos++;
    return junicode(p, o, n);
  }
  const char *k = c > 0 ? strchr(from, c) : NULL;
  if (!k)
    return jfail(p, "invalid escape in string");
  o[(*n)++] = to[k - from];
  p->pos++;
  return 0;
}

/* A string starting at '"'; the decoded text is never longer than the
 * source, so one buffer of the source length suffices. */
static int jstring(jparser *p, td_json **out) {
  td_json *v = jnode(p, TD_JSON_STRING);
  if (!v)
    return -1;
  p->pos++; /* opening quote */
  size_t end = p->pos;
  while (end < p->len && p->s[end] != '"')
    end += p->s[end] == '\\' ? 2 : 1;
  char *o = td_arena_alloc(p->a, (end > p->len ? p->len : end) - p->pos + 1);
  if (!o)
    return jfail(p, "out of memory");
  size_t n = 0;
  for (;;) {
    int c = jpeek(p);
    if (c < 0)
      return jfail(p, "unterminated string");
    if (c == '"')
      break;
    if (c < 0x20)
      return jfail(p, "control character in string");
    p->pos++;
    if (c == '\\') {
      if (jescape(p, o, &n) < 0)
        return -1;
    } else {
      o[n++] = (char)c;
    }
  }
  p->pos++;
  o[n] = '\0';
  v->text = o;
  v->len = n;
  *out = v;
  return 0;
}

/* ---- numbers and literals ---------------------------------------------- */

static int jdigits(jparser *p) {
  size_t start = p->pos;
  while (jpeek(p) >= '0' && jpeek(p) <= '9')
    p->pos++;
  return p->pos > start ? 0 : jfail(p, "expected a digit");
}

static int jnumber(jparser *p, td_json **out) {
  td_json *v = jnode(p, TD_JSON_NUMBER);
  if (!v)
    return -1;
  size_t start = p->pos;
  if (jpeek(p) == '-')
    p->pos++;
  if (jpeek(p) == '0') {
    p->pos++;
    if (jpeek(p) >= '0' && jpeek(p) <= '9')
      return jfail(p, "leading zero in number");
  } else if (jdigits(p) < 0) {
    return -1;
  }
  if (jpeek(p) == '.') {
    p->pos++;
    if (jdigits(p) < 0)
      return -1;
  }
  if (jpeek(p) == 'e' || jpeek(p) == 'E') {
    p->pos++;
    if (jpeek(p) == '+' || jpeek(p) == '-')
      p->pos++;
    if (jdigits(p) < 0)
      return -1;
  }
  v->text = td_arena_strndup(p->a, p->s + start, p->pos - start);
  if (!v->text)
    return jfail(p, "out of memory");
  v->len = p->pos - start;
  *out = v;
  return 0;
}

static int jliteral(jparser *p, td_json **out) {
  static const struct {
    const char *word;
    td_json_kind kind;
    int b;
  } lits[] = {{"true", TD_JSON_BOOL, 1}, {"false", TD_JSON_BOOL, 0},
              {"null", TD_JSON_NULL, 0}};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(lits[i].word);
    if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[i].word, n) == 0) {
      td_json *v = jnode(p, lits[i].kind);
      if (!v)
        return -1;
      v->b = lits[i].b;
      p->pos += n;
      *out = v;
      return 0;
    }
  }
  return jfail(p, "unexpected character");
}

/* ---- arrays and objects ------------------------------------------------- */

/* Hands a td_vec's items (arena memory) to the node. */
static void jtake_items(td_json *v, const td_vec *items) {
  v->n = items->n;
  v->items = (td_json **)items->items;
}

static int jarray(jparser *p, td_json **out) {
  td_json *v = jnode(p, TD_JSON_ARRAY);
  td_vec items = {0};
  if (!v)
    return -1;
  p->pos++;
  jws(p);
  if (jpeek(p) == ']') {
    p->pos++;
    *out = v;
    return 0;
  }
  for (;;) {
    td_json *item;
    if (jvalue(p, &item) < 0)
      return -1;
    if (td_vec_push(p->a, &items, item) < 0)
      return jfail(p, "out of memory");
    jws(p);
    if (jpeek(p) == ']')
      break;
    if (jpeek(p) != ',')
      return jfail(p, "expected ',' or ']' in array");
    p->pos++;
  }
  p->pos++;
  jtake_items(v, &items);
  *out = v;
  return 0;
}

/* Turns the collected key strings into the keys/key_lens arrays. */
static int jtake_keys(jparser *p, td_json *v, const td_vec *keys) {
  if (keys->n == 0)
    return 0;
  v->keys = td_arena_alloc(p->a, (size_t)keys->n * sizeof *v->keys);
  v->key_lens = td_arena_alloc(p->a, (size_t)keys->n * sizeof *v->key_lens);
  if (!v->keys || !v->key_lens)
    return jfail(p, "out of memory");
  for (int i = 0; i < keys->n; i++) {
    const td_json *k = keys->items[i];
    v->keys[i] = k->text;
    v->key_lens[i] = k->len;
  }
  return 0;
}

/* One "key": value member, pushed onto keys/items. */
static int jmember(jparser *p, td_vec *keys, td_vec *items) {
  td_json *k, *val;
  jws(p);
  if (jpeek(p) != '"')
    return jfail(p, "expected a string key in object");
  if (jstring(p, &k) < 0)
    return -1;
  jws(p);
  if (jpeek(p) != ':')
    return jfail(p, "expected ':' after object key");
  p->pos++;
  if (jvalue(p, &val) < 0)
    return -1;
  if (td_vec_push(p->a, keys, k) < 0 || td_vec_push(p->a, items, val) < 0)
    return jfail(p, "out of memory");
  return 0;
}

static int jobject(jparser *p, td_json **out) {
  td_json *v = jnode(p, TD_JSON_OBJECT);
  td_vec keys = {0}, items = {0};
  if (!v)
    return -1;
  p->pos++;
  jws(p);
  if (jpeek(p) == '}') {
    p->pos++;
    *out = v;
    return 0;
  }
  for (;;) {
    if (jmember(p, &keys, &items) < 0)
      return -1;
    jws(p);
    if (jpeek(p) == '}')
      break;
    if (jpeek(p) != ',')
      return jfail(p, "expected ',' or '}' in object");
    p->pos++;
  }
  p->pos++;
  jtake_items(v, &items);
  if (jtake_keys(p, v, &keys) < 0)
    return -1;
  *out = v;
  return 0;
}

static int jvalue(jparser *p, td_json **out) {
  jws(p);
  int c = jpeek(p);
  if (c < 0)
    return jfail(p, "unexpected end of JSON");
  if (c == '"')
    return jstring(p, out);
  if (c == '-' || (c >= '0' && c <= '9'))
    return jnumber(p, out);
  if (c != '{' && c != '[')
    return jliteral(p, out);
  if (p->depth >= JSON_MAX_DEPTH)
    return jfail(p, "nesting too deep");
  p->depth++;
  int rc = c == '{' ? jobject(p, out) : jarray(p, out);
  p->depth--;
  return rc;
}

int td_json_parse(td_arena *a, const char *text, size_t len, td_json **out,
                  size_t *err_off, const char **err_msg) {
  jparser p = {a, text, len, 0, 0, 0, NULL};
  int rc = jvalue(&p, out);
  if (rc == 0) {
    jws(&p);
    if (p.pos != p.len)
      rc = jfail(&p, "unexpected text after the JSON value");
  }
  if (rc < 0) {
    *err_off = p.err_off;
    *err_msg = p.err_msg;
  }
  return rc;
}

const td_json *td_json_get(const td_json *obj, const char *key) {
  if (!obj || obj->kind != TD_JSON_OBJECT)
    return NULL;
  size_t n = strlen(key);
  for (int i = 0; i < obj->n; i++)
    if (obj->key_lens[i] == n && memcmp(obj->keys[i], key, n) == 0)
      return obj->items[i];
  return NULL;
}

int td_json_uint64(const td_json *v, uint64_t *out) {
  if (!v || v->kind != TD_JSON_NUMBER)
    return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < v->len; i++) {
    char c = v->text[i];
    if (c < '0' || c > '9')
      return -1;
    unsigned d = (unsigned)(c - '0');
    if (x > (UINT64_MAX - d) / 10)
      return -1;
    x = x * 10 + d;
  }
  *out = x;
  return 0;
}

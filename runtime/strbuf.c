/* strbuf.c - growable strings (see strbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "runtime/mem.h"
#include "runtime/strbuf.h"

void td_sb_add(td_strbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = td_realloc(b->s, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void td_sb_puts(td_strbuf *b, const char *s) { td_sb_add(b, s, strlen(s)); }

void td_sb_printf(td_strbuf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    td_sb_add(b, small, (size_t)n);
    return;
  }
  char *big = td_malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  td_sb_add(b, big, (size_t)n);
  td_free(big);
}

void td_sb_add_aligned(td_strbuf *b, const char *text) {
  size_t col = 0;
  while (col < b->len && b->s[b->len - col - 1] != '\n') col++;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (p != text && len > 0)
      for (size_t i = 0; i < col; i++) td_sb_add(b, " ", 1);
    td_sb_add(b, p, len);
    if (!nl) break;
    td_sb_add(b, "\n", 1);
    p = nl + 1;
  }
}

void td_sb_json_str(td_strbuf *b, const char *s) {
  td_sb_add(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      td_sb_add(b, e, 2);
    } else if (c < 0x20) {
      td_sb_printf(b, "\\u%04x", c);
    } else {
      td_sb_add(b, s, 1);
    }
  }
  td_sb_add(b, "\"", 1);
}

uint32_t td_str_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

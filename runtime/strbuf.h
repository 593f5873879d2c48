/* strbuf.h - a growable NUL-terminated string, through the allocation hook.
 *
 * Appends never fail visibly: when memory runs out, `oom` is set and later
 * appends are ignored, so a caller checks once at the end.  A zeroed
 * td_strbuf is empty; the caller frees `s` with td_free.
 */
#ifndef TD_STRBUF_H
#define TD_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct td_strbuf {
  char *s;        /* the text (NULL while empty) */
  size_t len;     /* bytes in s, not counting the NUL */
  size_t cap;     /* bytes allocated */
  int oom;        /* an append ran out of memory */
} td_strbuf;

void td_sb_add(td_strbuf *b, const char *s, size_t n);
void td_sb_puts(td_strbuf *b, const char *s);
/* Appends text, indenting its later lines to the column where it starts
 * (print() of several values, one of them a multi-line array). */
void td_sb_add_aligned(td_strbuf *b, const char *text);
void td_sb_printf(td_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as a JSON string literal, quoted, with the escapes JSON requires (a
 * safetensors header, an artifact's description). */
void td_sb_json_str(td_strbuf *b, const char *s);

/* A hash of a NUL-terminated string for power-of-two tables: FNV-1a, then
 * a finaliser, so names that differ in their last characters ("w1", "w2")
 * differ in the low bits. */
uint32_t td_str_hash(const char *s);

#endif

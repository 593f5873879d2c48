/* json.h - a small strict JSON reader for safetensors headers (internal).
 *
 * Parses RFC 8259 JSON into a tree allocated in a td_arena.  Anything
 * malformed is rejected with the byte offset where it went wrong.  Numbers
 * keep their text so that 64-bit offsets convert exactly.
 */
#ifndef TD_JSON_H
#define TD_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/mem.h"

typedef enum td_json_kind {
  TD_JSON_NULL,
  TD_JSON_BOOL,   /* b */
  TD_JSON_NUMBER, /* text: the number as written */
  TD_JSON_STRING, /* text, len: decoded UTF-8, NUL-terminated */
  TD_JSON_ARRAY,  /* items[0..n-1] */
  TD_JSON_OBJECT  /* keys[i] -> items[i], in file order */
} td_json_kind;

typedef struct td_json {
  td_json_kind kind;
  size_t offset; /* byte offset of the value in the parsed text */
  int b;
  const char *text;
  size_t len;
  int n;
  struct td_json **items;
  const char **keys;
  size_t *key_lens;
} td_json;

/* Parses text[0..len) (whitespace around the value allowed).  On failure
 * returns -1 with *err_off and *err_msg (a static string) set. */
int td_json_parse(td_arena *a, const char *text, size_t len, td_json **out,
                  size_t *err_off, const char **err_msg);

/* The member `key` of an object, or NULL. */
const td_json *td_json_get(const td_json *obj, const char *key);

/* A number written as a plain non-negative integer that fits; 0 or -1. */
int td_json_uint64(const td_json *v, uint64_t *out);

#endif

/* fuzz_front.c - libFuzzer target for the front end (lexer and parser).
 *
 * Each input is treated as one source file: it is parsed, the AST dumped
 * and the diagnostics rendered (both to /dev/null), so every byte sequence
 * must come back without a crash, a leak or undefined behaviour.  Later
 * stages (the checker) belong in run_front too.
 *
 * Build and run (seed corpus in tests/fuzz/corpus/):
 *   clang -g -fsanitize=fuzzer,address,undefined -Ilang -I<build>/lang/parser \
 *     -Ilang/lexer tests/fuzz/fuzz_front.c lang/ast.c lang/diag.c lang/mem.c \
 *     <build>/lang/lexer/lexer.c <build>/lang/parser/parser.c -o fuzz_front
 *   ./fuzz_front -max_total_time=60 tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "ast.h"

static FILE *sink;

/* Runs the front end on one NUL-terminated source text. */
static void run_front(const char *text) {
  td_arena *arena = td_arena_new();
  if (!arena) return;
  td_diags diags;
  td_diags_init(&diags, arena);
  int file = td_diags_add_source(&diags, "fuzz.td", text, strlen(text));
  if (file >= 0) {
    td_ast *module = td_parse(&diags, file);
    if (module) td_ast_dump(module, sink);
    td_diag_render(&diags, sink, 0);
  }
  td_arena_free(arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char buf[1 << 16];
  if (!sink) sink = fopen("/dev/null", "w");
  if (!sink || size >= sizeof buf) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  run_front(buf);
  return 0;
}

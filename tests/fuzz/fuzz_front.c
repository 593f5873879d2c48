/* fuzz_front.c - libFuzzer target for the front end (lexer, parser and
 * the elaborator, i.e. the type and shape checker and the lowering to IR).
 *
 * Each input is treated as one source file: it is parsed, the AST dumped,
 * every entry point elaborated (imports found in $TDSL_PATH, which
 * scripts/fuzz points at stdlib/) and the diagnostics rendered (all to
 * /dev/null), so every byte sequence must come back without a crash, a
 * leak, a hang or undefined behaviour.
 *
 * Build and run (seed corpus in tests/fuzz/corpus/):
 *   clang -g -fsanitize=fuzzer,address,undefined -Ilang -I<build>/lang/parser \
 *     -Ilang/lexer tests/fuzz/fuzz_front.c lang/ast.c lang/diag.c runtime/mem.c \
 *     <build>/lang/lexer/lexer.c <build>/lang/parser/parser.c -o fuzz_front
 *   ./fuzz_front -max_total_time=60 tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "lang/ast.h"
#include "lang/elab.h"

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

  /* the whole front end: load (parse + imports) and elaborate every entry */
  arena = td_arena_new();
  if (!arena) return;
  td_diags_init(&diags, arena);
  td_program *p = td_program_new(arena, &diags);
  if (p) {
    const char *dir = getenv("TDSL_PATH");
    if (dir) td_program_add_search_dir(p, dir);
    td_program_set_node_limit(p, 20000);
    if (td_program_load_text(p, "fuzz.td", text) == 0) {
      const char **names;
      int n = td_program_entries(p, &names);
      for (int i = 0; i < n; i++) {
        td_graph *g = td_program_lower(p, names[i]);
        if (g) td_graph_print(g, &diags, sink);
      }
    }
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

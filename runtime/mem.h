/* mem.h - the one allocation hook, and arenas.
 *
 * Every allocation of the compiler and runtime goes through td_malloc /
 * td_realloc / td_free, so tests can make the Nth allocation fail
 * (td_mem_fail_after).  An arena owns everything of one compilation (AST,
 * IR, diagnostics' text) and is freed in one call.
 */
#ifndef TD_MEM_H
#define TD_MEM_H

#include <stddef.h>

void *td_malloc(size_t n);
void *td_calloc(size_t count, size_t n);
void *td_realloc(void *p, size_t n);
void td_free(void *p);
char *td_strdup(const char *s);
/* `align` (a power of two) aligned memory through the same hook; freed only
 * with td_aligned_free. */
void *td_aligned_alloc(size_t align, size_t n);
void td_aligned_free(void *p);

/* Test hook: the n-th allocation from now (1 = the next) and all after it
 * fail; n <= 0 turns failure injection off. */
void td_mem_fail_after(long n);
/* The requests counted since td_mem_fail_after armed the hook (0 when it
 * is off); td_mem_fail_after(LONG_MAX) counts without failing. */
long td_mem_requests(void);

typedef struct td_arena td_arena;

td_arena *td_arena_new(void);
void td_arena_free(td_arena *a);                 /* NULL is fine */
/* Zeroed, 16-byte aligned memory that lives as long as the arena.
 * Returns NULL only when memory runs out. */
void *td_arena_alloc(td_arena *a, size_t n);
char *td_arena_strdup(td_arena *a, const char *s);
char *td_arena_strndup(td_arena *a, const char *s, size_t n);
char *td_arena_printf(td_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* How many of a's requests failed for want of memory (0 for NULL): what a
 * compilation made in a cannot be trusted once this grows (diag.h). */
long td_arena_failures(const td_arena *a);

/* A growable array of pointers in an arena (old blocks are left in it). */
typedef struct td_vec {
  void **items;
  int n, cap;
} td_vec;
int td_vec_push(td_arena *a, td_vec *v, void *item); /* 0 or -1 (OOM) */

#endif

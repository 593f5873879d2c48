/* mem.c - the one allocation hook, and arenas.
 *
 * Every heap request of the compiler and runtime lands in mem_hook(), which
 * implements failure injection (td_mem_fail_after) before calling the C
 * library.  Arenas are singly linked lists of chunks taken from the hook;
 * small requests are carved from the newest chunk, large ones get a chunk of
 * their own.  Arena memory is zeroed and 16-byte aligned.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* posix_memalign, strnlen */
#endif
#include "runtime/mem.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

/* ---- the hook ---------------------------------------------------------- */

/* Atomic so a worker thread allocating while a test arms the hook is not a
 * data race; each request (malloc, calloc, realloc, aligned) counts once. */
static _Atomic long fail_at;    /* 0: injection off; else the failing request */
static _Atomic long fail_count; /* requests seen since td_mem_fail_after */

/* True when this request must fail because of td_mem_fail_after. */
static int mem_should_fail(void) {
  if (fail_at <= 0)
    return 0;
  return ++fail_count >= fail_at;
}

void td_mem_fail_after(long n) {
  fail_at = n > 0 ? n : 0;
  fail_count = 0;
}

long td_mem_requests(void) { return fail_count; }

/* The hook: realloc semantics (p may be NULL); n == 0 is treated as 1 so a
 * successful call never returns NULL. */
static void *mem_hook(void *p, size_t n) {
  if (mem_should_fail())
    return NULL;
  return realloc(p, n ? n : 1);
}

void *td_malloc(size_t n) { return mem_hook(NULL, n); }

void *td_calloc(size_t count, size_t n) {
  if (n && count > SIZE_MAX / n)
    return NULL;
  void *p = mem_hook(NULL, count * n);
  if (p)
    memset(p, 0, count * n);
  return p;
}

void *td_realloc(void *p, size_t n) { return mem_hook(p, n); }

void td_free(void *p) { free(p); }

char *td_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = td_malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* A few freed large blocks are kept for reuse: glibc returns blocks this
 * big to the kernel on free, so a program that allocates a 64 MiB output
 * per call would fault in fresh pages every call (5-30 ms per 64 MiB,
 * bench/NOTES.md).  Blocks of 4 MiB .. 512 MiB, at most BIG_KEEP of them;
 * a request reuses a kept block at most 25 % (+ 2 MiB) larger than it. */
#define BIG_MIN ((size_t)4 << 20)
#define BIG_MAX ((size_t)512 << 20)
#define BIG_KEEP 4
static struct {
  void *p;
  size_t n;
} big_kept[BIG_KEEP];
static atomic_flag big_lock = ATOMIC_FLAG_INIT;

static void big_acquire(void) {
  while (atomic_flag_test_and_set_explicit(&big_lock, memory_order_acquire)) {
  }
}

static void big_release(void) { atomic_flag_clear_explicit(&big_lock, memory_order_release); }

static void *big_take(size_t n) {
  void *p = NULL;
  big_acquire();
  for (int i = 0; i < BIG_KEEP && !p; i++)
    if (big_kept[i].p && big_kept[i].n >= n && big_kept[i].n - n <= n / 4 + ((size_t)2 << 20)) {
      p = big_kept[i].p;
      big_kept[i].p = NULL;
    }
  big_release();
  return p;
}

/* Keeps p (usable size n) for reuse; returns the block to free instead
 * (p itself, or the oldest kept block), or NULL. */
static void *big_keep(void *p, size_t n) {
  big_acquire();
  int slot = -1;
  for (int i = 0; i < BIG_KEEP && slot < 0; i++)
    if (!big_kept[i].p) slot = i;
  void *evict = NULL;
  if (slot < 0) {
    evict = big_kept[0].p;
    memmove(big_kept, big_kept + 1, (BIG_KEEP - 1) * sizeof big_kept[0]);
    slot = BIG_KEEP - 1;
  }
  big_kept[slot].p = p, big_kept[slot].n = n;
  big_release();
  return evict;
}

void *td_aligned_alloc(size_t align, size_t n) {
  void *p = NULL;
  if (mem_should_fail())
    return NULL;
  if (align < sizeof(void *))
    align = sizeof(void *);
  /* Large blocks: align to 2 MiB and ask for transparent huge pages, which
   * makes first touch of fresh memory ~10x cheaper (PERFORMANCE.md). */
  int huge = n >= BIG_MIN;
  if (huge && align < ((size_t)2 << 20))
    align = (size_t)2 << 20;
  if (huge && align == ((size_t)2 << 20) && (p = big_take(n)))
    return p;
  if (posix_memalign(&p, align, n ? n : 1) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  if (huge)
    (void)madvise(p, n, MADV_HUGEPAGE);
#endif
  return p;
}

void td_aligned_free(void *p) {
  size_t n = p ? malloc_usable_size(p) : 0;
  if (n >= BIG_MIN && n <= BIG_MAX && ((uintptr_t)p & (((size_t)2 << 20) - 1)) == 0)
    p = big_keep(p, n);
  free(p);
}

/* ---- arenas ------------------------------------------------------------ */

#define ARENA_ALIGN 16
#define ARENA_CHUNK 65536 /* default chunk payload */

typedef struct arena_chunk {
  struct arena_chunk *next;
  size_t used, cap; /* bytes of payload used / available */
  _Alignas(ARENA_ALIGN) unsigned char data[];
} arena_chunk;

struct td_arena {
  arena_chunk *head; /* newest chunk first */
  long failures;     /* requests refused: out of memory */
};

td_arena *td_arena_new(void) { return td_calloc(1, sizeof(td_arena)); }

void td_arena_free(td_arena *a) {
  if (!a)
    return;
  arena_chunk *c = a->head;
  while (c) {
    arena_chunk *next = c->next;
    td_free(c);
    c = next;
  }
  td_free(a);
}

/* Adds a chunk with at least `need` bytes of payload behind the head (a big
 * dedicated chunk goes second so the head's free space stays usable). */
static arena_chunk *arena_grow(td_arena *a, size_t need) {
  size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
  if (cap > SIZE_MAX - sizeof(arena_chunk))
    return NULL;
  arena_chunk *c = td_malloc(sizeof(arena_chunk) + cap);
  if (!c)
    return NULL;
  c->used = 0;
  c->cap = cap;
  if (need > ARENA_CHUNK / 4 && a->head) {
    c->next = a->head->next;
    a->head->next = c;
  } else {
    c->next = a->head;
    a->head = c;
  }
  return c;
}

void *td_arena_alloc(td_arena *a, size_t n) {
  if (!a)
    return NULL;
  if (n > SIZE_MAX - ARENA_ALIGN) {
    a->failures++;
    return NULL;
  }
  size_t sz = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (sz == 0)
    sz = ARENA_ALIGN;
  arena_chunk *c = a->head;
  if (!c || c->cap - c->used < sz) {
    c = arena_grow(a, sz);
    if (!c) {
      a->failures++;
      return NULL;
    }
  }
  void *p = c->data + c->used;
  c->used += sz;
  memset(p, 0, sz);
  return p;
}

long td_arena_failures(const td_arena *a) { return a ? a->failures : 0; }

char *td_arena_strndup(td_arena *a, const char *s, size_t n) {
  size_t len = strnlen(s, n);
  char *d = td_arena_alloc(a, len + 1);
  if (d)
    memcpy(d, s, len); /* terminator already zero */
  return d;
}

char *td_arena_strdup(td_arena *a, const char *s) {
  return td_arena_strndup(a, s, strlen(s));
}

char *td_arena_printf(td_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0)
    return NULL;
  char *d = td_arena_alloc(a, (size_t)len + 1);
  if (!d)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(d, (size_t)len + 1, fmt, ap);
  va_end(ap);
  return d;
}

int td_vec_push(td_arena *a, td_vec *v, void *item) {
  if (v->n == v->cap) {
    if (v->cap > (1 << 29))
      return -1;
    int cap = v->cap ? v->cap * 2 : 8;
    void **items = td_arena_alloc(a, (size_t)cap * sizeof(void *));
    if (!items)
      return -1;
    if (v->n)
      memcpy(items, v->items, (size_t)v->n * sizeof(void *));
    v->items = items;
    v->cap = cap;
  }
  v->items[v->n++] = item;
  return 0;
}

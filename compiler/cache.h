/* cache.h - the on-disk compile cache shared by the CPU compiler
 * (compiler/compiled.c: H.so, H.key, H.sum) and the CUDA runtime
 * (gpu/runtime_cuda.c: cuda-H.cubin), H being 16 lowercase hex digits.
 *
 * Where it lives: $TDSL_CACHE_DIR, else $XDG_CACHE_HOME/tdsl, else
 * ~/.cache/tdsl; TDSL_CACHE=0 turns it off.
 *
 * How big it may grow: TDSL_CACHE_MAX_MB (MiB, fractions allowed; default
 * 1024).  After writing an entry (a miss) its writer calls td_cache_trim,
 * which removes whole entries, least recently used first, until the
 * entries' files total at most the limit or only the new entry is left.
 * A hit calls td_cache_touch, so an entry's time (the newest mtime of its
 * files) is when it was last written or used.  Nothing here ever fails
 * its caller's work: the cache is an optimisation.  Errors of eviction (a
 * file that vanished under another process's eviction, no permission) are
 * ignored; a directory that cannot be used or written is reported (err)
 * for the caller to warn about, and the caller compiles in memory.
 */
#ifndef TD_CACHE_H
#define TD_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor.h"

/* The default of TDSL_CACHE_MAX_MB. */
#define TD_CACHE_DEFAULT_MB 1024

/* The cache directory into buf (created with its parents); -1 when the
 * cache is off (TDSL_CACHE=0, err->msg empty) or when no directory can be
 * found, made or used (err says why: "cannot use the compile cache DIR:
 * Not a directory").  err may be NULL. */
int td_cache_dir(char *buf, size_t n, td_err *err);

/* Creates an empty file path.TID.tmp<suffix> (mode 0644, or 0755 with
 * exec) for this thread to fill (TID: the calling thread's id, the PID in
 * the main thread, so threads writing the same entry at once each have
 * their own), its name into tmp: exclusively, so a link planted under
 * that name is replaced, never followed.  0, or -1 with err ("cannot
 * write DIR: Permission denied"). */
int td_cache_tmp(const char *path, const char *suffix, int exec, char *tmp, size_t n, td_err *err);

/* Writes n bytes to path through td_cache_tmp and a rename; 0, or -1 with
 * err (nothing is left behind then). */
int td_cache_write(const char *path, const void *data, size_t n, td_err *err);

/* The size limit in bytes: TDSL_CACHE_MAX_MB MiB.  Unset, empty or not a
 * plain non-negative decimal number ("512", "0.5"; not "-1", "1G", "abc"):
 * the default.  0 keeps only the entry just written. */
uint64_t td_cache_limit(void);

/* Marks the cache file at path as used now (its mtime; atime may be off). */
void td_cache_touch(const char *path);

/* Evicts entries of dir, least recently used first, while the cache's files
 * total more than limit bytes, never the entry named keep ("H" or
 * "cuda-H"; NULL: none).  Counts and removes only files whose names are
 * the cache's own; a writer's temporary file (NAME.TID.tmp...) is left
 * alone unless it is more than a day old, when it is removed.  The files
 * of a CPU entry go .sum first, then .so, then .key: an entry missing any of
 * them is a miss, never loaded. */
void td_cache_trim(const char *dir, const char *keep, uint64_t limit);

#endif

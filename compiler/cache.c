/* cache.c - the compile cache's directory, size limit and eviction (see
 * cache.h).
 *
 * td_cache_trim reads the directory once (one readdir and one fstatat per
 * file), groups the cache's files into entries by name, and only when they
 * total more than the limit sorts the entries by time and unlinks the
 * oldest.  Several processes may trim the same directory at once: a file
 * that is gone by the time it is looked at or removed is simply skipped,
 * and a process that has an evicted shared object loaded keeps its mapping.
 */
#include "compiler/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/mem.h"

/* A writer's temporary file older than this is a leftover of a crash. */
#define STALE_TMP_SECONDS (24 * 60 * 60)

int td_cache_dir(char *buf, size_t n, td_err *err) {
  const char *off = getenv("TDSL_CACHE"), *dir = getenv("TDSL_CACHE_DIR");
  if (err) err->msg[0] = 0;
  if (off && !strcmp(off, "0")) return -1;
  if (dir && *dir) snprintf(buf, n, "%s", dir);
  else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) snprintf(buf, n, "%s/tdsl", dir);
  else if ((dir = getenv("HOME")) && *dir) snprintf(buf, n, "%s/.cache/tdsl", dir);
  else return -1;
  struct stat st;
  for (char *s = buf + 1; *s; s++)   /* mkdir -p */
    if (*s == '/') {
      *s = 0;
      int bad = mkdir(buf, 0755) && errno != EEXIST;
      *s = '/';
      if (bad) break;
    }
  if ((mkdir(buf, 0755) && errno != EEXIST) || stat(buf, &st))
    return td_err_set(err, "cannot use the compile cache %s: %s", buf, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return td_err_set(err, "cannot use the compile cache %s: %s", buf, strerror(ENOTDIR));
  return 0;
}

/* The directory part of path into buf. */
static const char *dir_part(const char *path, char *buf, size_t n) {
  const char *slash = strrchr(path, '/');
  snprintf(buf, n, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  return buf;
}

int td_cache_tmp(const char *path, const char *suffix, int exec, char *tmp, size_t n, td_err *err) {
  char dir[1024];
  /* the thread's id, not the process's: two threads of one process writing
   * the same entry must not take (and unlink) each other's file.  It is
   * the PID in the main thread, and unique among live threads. */
  snprintf(tmp, n, "%s.%ld.tmp%s", path, (long)gettid(), suffix);
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, exec ? 0755 : 0644);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    if (errno != EEXIST) break;
    unlink(tmp);   /* left by a dead thread that had this id, or planted */
  }
  return td_err_set(err, "cannot write the compile cache %s: %s", dir_part(path, dir, sizeof dir), strerror(errno));
}

int td_cache_write(const char *path, const void *data, size_t n, td_err *err) {
  char tmp[1100], dir[1024];
  if (td_cache_tmp(path, "", 0, tmp, sizeof tmp, err)) return -1;
  int fd = open(tmp, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  const unsigned char *p = data;
  size_t left = n;
  while (fd >= 0 && left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= (size_t)w;
  }
  int e = fd < 0 || left ? (errno ? errno : EIO) : 0;
  if (fd >= 0 && close(fd) && !e) e = errno;
  if (!e && rename(tmp, path)) e = errno;
  if (!e) return 0;
  unlink(tmp);
  return td_err_set(err, "cannot write the compile cache %s: %s", dir_part(path, dir, sizeof dir), strerror(e));
}

uint64_t td_cache_limit(void) {
  const uint64_t dflt = (uint64_t)TD_CACHE_DEFAULT_MB << 20;
  const char *s = getenv("TDSL_CACHE_MAX_MB");
  if (!s || !*s) return dflt;
  /* digits, at most one '.', at least one digit: nothing strtod would
   * read differently (no sign, exponent, hex, inf or spaces) */
  int digits = 0, dots = 0;
  for (const char *p = s; *p; p++) {
    if (*p >= '0' && *p <= '9') digits++;
    else if (*p == '.' && !dots) dots++;
    else return dflt;
  }
  if (!digits) return dflt;
  double mb = strtod(s, NULL);
  if (!(mb >= 0)) return dflt;
  if (mb >= 1e12) return UINT64_MAX;   /* a million terabytes: no limit */
  return (uint64_t)(mb * 1048576.0);
}

void td_cache_touch(const char *path) {
  if (utimensat(AT_FDCWD, path, NULL, 0)) { /* ignored: a hit stays a hit */ }
}

static int is_hex16(const char *s) {
  for (int i = 0; i < 16; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

/* How a name in the cache directory is treated. */
enum { NOT_OURS, ENTRY_FILE, TEMP_FILE };

/* Classifies name.  For an entry's file, *stem is the length of the entry's
 * name ("H" or "cuda-H") and *rank the file's place in the removal order. */
static int classify(const char *name, size_t *stem, int *rank) {
  /* in removal order; .c is the key file of tdsl 0.1.0's first cache format,
   * counted and evicted like the rest */
  static const char *const cpu_ext[] = {".sum", ".so", ".key", ".c"};
  const char *ext;
  if (!strncmp(name, "cuda-", 5) && is_hex16(name + 5) && !strncmp(name + 21, ".cubin", 6)) {
    *stem = 21;
    *rank = 0;
    ext = name + 27;
  } else if (is_hex16(name)) {
    *stem = 16;
    *rank = -1;
    for (int i = 0; i < 4; i++) {
      size_t l = strlen(cpu_ext[i]);
      if (!strncmp(name + 16, cpu_ext[i], l) && (name[16 + l] == 0 || name[16 + l] == '.')) {
        *rank = i;
        ext = name + 16 + l;
        break;
      }
    }
    if (*rank < 0) return NOT_OURS;
  } else return NOT_OURS;
  if (!*ext) return ENTRY_FILE;
  /* a writer's temporary: NAME.TID.tmp (compiled.c's .so: NAME.TID.tmp.so) */
  const char *p = ext + 1;
  if (*p < '0' || *p > '9') return NOT_OURS;
  while (*p >= '0' && *p <= '9') p++;
  return !strcmp(p, ".tmp") || !strcmp(p, ".tmp.so") ? TEMP_FILE : NOT_OURS;
}

typedef struct cfile {
  char name[32];
  size_t stem;
  int rank;
  uint64_t size;
  struct timespec mtime;
} cfile;

typedef struct centry {
  int first, n;             /* its files: files[first .. first + n) */
  const char *name;         /* its first file's name (ties in by_age) */
  uint64_t size;
  struct timespec time;     /* the newest mtime of its files */
  int keep;
} centry;

static int ts_cmp(struct timespec a, struct timespec b) {
  if (a.tv_sec != b.tv_sec) return a.tv_sec < b.tv_sec ? -1 : 1;
  return a.tv_nsec < b.tv_nsec ? -1 : a.tv_nsec > b.tv_nsec;
}

static int by_entry(const void *x, const void *y) {
  const cfile *a = x, *b = y;
  if (a->stem != b->stem) return a->stem < b->stem ? -1 : 1;
  int c = strncmp(a->name, b->name, a->stem);
  return c ? c : a->rank - b->rank;
}

static int by_age(const void *x, const void *y) {
  const centry *a = x, *b = y;
  int c = ts_cmp(a->time, b->time);
  return c ? c : strcmp(a->name, b->name);
}

void td_cache_trim(const char *dir, const char *keep, uint64_t limit) {
  DIR *d = opendir(dir);
  if (!d) return;
  int fd = dirfd(d), n = 0, cap = 0;
  cfile *files = NULL;
  time_t now = time(NULL);
  uint64_t total = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t stem;
    int rank, kind = classify(de->d_name, &stem, &rank);
    struct stat st;
    if (kind == NOT_OURS || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
    size_t len = strlen(de->d_name);
    if (kind == TEMP_FILE) {
      if (now - st.st_mtime > STALE_TMP_SECONDS) unlinkat(fd, de->d_name, 0);
      continue;
    }
    if (len >= sizeof files->name) continue;   /* cannot happen: an entry's name is at most 27 bytes */
    if (n == cap) {
      cfile *grown = td_realloc(files, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *files);
      if (!grown) goto done;
      files = grown;
    }
    cfile *f = &files[n++];
    memcpy(f->name, de->d_name, len + 1);
    f->stem = stem;
    f->rank = rank;
    f->size = (uint64_t)st.st_size;
    f->mtime = st.st_mtim;
    total += f->size;
  }
  if (total <= limit) goto done;
  qsort(files, (size_t)n, sizeof *files, by_entry);
  centry *ents = td_malloc((size_t)n * sizeof *ents);
  if (!ents) goto done;
  int ne = 0;
  for (int i = 0; i < n; i++) {
    centry *e = ne ? &ents[ne - 1] : NULL;
    if (!e || files[e->first].stem != files[i].stem || strncmp(files[e->first].name, files[i].name, files[i].stem)) {
      e = &ents[ne++];
      *e = (centry){i, 0, files[i].name, 0, files[i].mtime, 0};
      e->keep = keep && strlen(keep) == files[i].stem && !strncmp(keep, files[i].name, files[i].stem);
    }
    e->n++;
    e->size += files[i].size;
    if (ts_cmp(files[i].mtime, e->time) > 0) e->time = files[i].mtime;
  }
  qsort(ents, (size_t)ne, sizeof *ents, by_age);
  for (int k = 0; k < ne && total > limit; k++) {
    if (ents[k].keep) continue;
    for (int i = ents[k].first; i < ents[k].first + ents[k].n; i++) unlinkat(fd, files[i].name, 0);
    total -= ents[k].size;
  }
  td_free(ents);
done:
  td_free(files);
  closedir(d);
}

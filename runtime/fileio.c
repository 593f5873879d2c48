/* fileio.c - checked reads and atomic writes for the tensor file formats,
 * and the regular-file reader of modules and the compile cache.
 *
 * Opening: O_NONBLOCK, so that opening a FIFO returns at once instead of
 * waiting for a writer, then fstat on the descriptor (not the path, which
 * may have changed since): anything but a regular file is closed unread.
 *
 * Atomic write: mkstemp("path.tdsl-tmp.PID.XXXXXX") in the target's
 * directory, write every chunk, fsync, rename over the target, then fsync
 * the directory (best effort).  Any failure unlinks the temporary file; a
 * writer killed before it could leaves it, and td_io_clean_stale, which
 * every atomic write runs on its directory first, removes it later.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pread, mkstemp, fsync */
#endif
#include "runtime/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/mem.h"

int td_io_open_fd(const char *path, uint64_t *size, int *why) {
  int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block */
  struct stat st;
  if (f < 0 || fstat(f, &st) < 0) {
    *why = errno;
    if (f >= 0)
      close(f);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = S_ISDIR(st.st_mode) ? EISDIR : TD_IO_ENOTREG;
    close(f);
    return -1;
  }
  *size = (uint64_t)st.st_size;
  return f;
}

const char *td_io_why(int why) {
  return why == TD_IO_ENOTREG ? "not a regular file" : strerror(why);
}

int td_io_read_all(const char *path, size_t max, char **data, size_t *len, int *why) {
  uint64_t size;
  int fd = td_io_open_fd(path, &size, why);
  *data = NULL;
  if (fd < 0)
    return -1;
  char *buf = size > max ? NULL : td_malloc((size_t)size + 1);
  *why = size > max ? EFBIG : !buf ? ENOMEM : 0;
  if (buf && td_io_pread(fd, buf, (size_t)size, 0) < 0) {
    *why = errno ? errno : EIO; /* 0: the file shrank while it was read */
    td_free(buf);
    buf = NULL;
  }
  close(fd);
  if (!buf)
    return -1;
  buf[size] = 0;
  *data = buf;
  *len = (size_t)size;
  return 0;
}

int td_io_open(const char *path, int *fd, uint64_t *size, td_err *err) {
  int why;
  *fd = td_io_open_fd(path, size, &why);
  if (*fd >= 0)
    return 0;
  if (why == EISDIR || why == TD_IO_ENOTREG)
    return td_err_set(err, "%s: not a regular file", path);
  return td_err_set(err, "%s: cannot open: %s", path, strerror(why));
}

void td_io_close(int fd) {
  if (fd >= 0)
    close(fd);
}

int td_io_pread(int fd, void *buf, size_t n, uint64_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    size_t want = n > (1u << 30) ? (1u << 30) : n;
    ssize_t r = pread(fd, p, want, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (r == 0)
        errno = 0;
      return -1;
    }
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

static int write_all(int fd, const void *data, size_t n) {
  const unsigned char *p = data;
  while (n > 0) {
    size_t want = n > (1u << 30) ? (1u << 30) : n;
    ssize_t w = write(fd, p, want);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The directory part of path ("." when there is none), td_malloc'd. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
  char *dir = td_malloc(n + 1);
  if (dir) {
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
  }
  return dir;
}

/* fsync of the directory holding path, so the rename itself is durable. */
static void sync_dir(const char *path) {
  char *dir = dir_of(path);
  int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  td_free(dir);
}

int td_io_write_atomic(const char *path, const td_io_chunk *chunks, int n,
                       td_err *err) {
  size_t plen = strlen(path);
  char *tmp = td_malloc(plen + 64), *dir = dir_of(path);
  if (!tmp || !dir) {
    td_free(tmp);
    td_free(dir);
    return td_err_set(err, "%s: out of memory", path);
  }
  td_io_clean_stale(dir); /* a killed writer's 1 GB temporary goes before a new one is written */
  td_free(dir);
  snprintf(tmp, plen + 64, "%s" TD_IO_TMP_MARK "%ld.XXXXXX", path, (long)getpid());
  int fd = mkstemp(tmp);
  if (fd < 0) {
    td_err_set(err, "%s: cannot create temporary file: %s", path, strerror(errno));
    td_free(tmp);
    return -1;
  }
  const char *what = NULL;
  fchmod(fd, 0644); /* mkstemp makes 0600; a data file is usually shared */
  for (int i = 0; i < n && !what; i++)
    if (chunks[i].len && write_all(fd, chunks[i].data, chunks[i].len) < 0)
      what = "cannot write";
  if (!what && fsync(fd) < 0)
    what = "cannot sync";
  int e = errno;
  if (close(fd) < 0 && !what) {
    what = "cannot close";
    e = errno;
  }
  if (!what && rename(tmp, path) < 0) {
    what = "cannot rename temporary file";
    e = errno;
  }
  if (what) {
    unlink(tmp);
    td_free(tmp);
    return td_err_set(err, "%s: %s: %s", path, what, strerror(e));
  }
  td_free(tmp);
  sync_dir(path);
  return 0;
}

/* ---- what killed writers left ---- */

#define STALE_GONE_SECONDS (10 * 60)       /* untouched this long, its writer gone */
#define STALE_ANY_SECONDS (24 * 60 * 60)   /* untouched this long, whoever wrote it */

/* The writer's PID in a temporary's name (NAME.tdsl-tmp.PID.XXXXXX), or -1
 * when name is not one. */
static long tmp_writer(const char *name) {
  const char *m = strstr(name, TD_IO_TMP_MARK), *p;
  if (!m)
    return -1;
  long pid = 0;
  for (p = m + strlen(TD_IO_TMP_MARK); *p >= '0' && *p <= '9' && pid < 1000000000L; p++)
    pid = pid * 10 + (*p - '0');
  return *p == '.' && strlen(p + 1) == 6 && pid > 0 ? pid : -1;
}

static int is_stale(long pid, time_t mtime, time_t now) {
  if (now - mtime > STALE_ANY_SECONDS)
    return 1;
  return now - mtime > STALE_GONE_SECONDS && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/* Removes the files of directory name (in dfd), then the directory. */
static void remove_staging(int dfd, const char *name) {
  int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
  if (!d) {
    if (sub >= 0)
      close(sub);
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      unlinkat(sub, de->d_name, 0);
  closedir(d);
  unlinkat(dfd, name, AT_REMOVEDIR);
}

void td_io_clean_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  int dfd = dirfd(d);
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d))) {
    long pid = tmp_writer(de->d_name);
    struct stat st;
    if (pid < 0 || fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !is_stale(pid, st.st_mtime, now))
      continue;
    if (S_ISDIR(st.st_mode))
      remove_staging(dfd, de->d_name);
    else
      unlinkat(dfd, de->d_name, 0);
  }
  closedir(d);
}

uint64_t td_io_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

uint32_t td_io_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

void td_io_put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

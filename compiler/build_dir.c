/* build_dir.c - how `tdsl build` updates its output directory: as a whole,
 * also when it is killed (build_common.h; CPU and CUDA builders alike).
 *
 * A build writes all of its files, and the entry objects it links, into a
 * staging directory of its own inside DIR, DIR/.PREFIX.tdsl-tmp.PID.XXXXXX,
 * and publishes the outputs (PREFIX.so, PREFIX.h, the executable PREFIX)
 * in two steps:
 *   1. rename the staging directory, now holding the outputs only, to
 *      DIR/.PREFIX.tdsl-commit (TDA_COMMIT_DIR): the commit point, one
 *      rename, before which DIR holds the earlier build's files only;
 *   2. rename each output from there into DIR, then remove the empty
 *      commit directory.
 * A build killed during step 2 leaves the commit directory with the
 * outputs it had not moved yet.  While it exists the artifact runtime
 * refuses to create a model (artifact_common.c, tda_update_pending), so no
 * program runs a mix of two builds' files, and the next build into DIR
 * finishes the moves first (recover).  A build killed before step 1 leaves
 * its staging directory, which td_io_clean_stale removes once its process
 * is gone and it was untouched for ten minutes (or a day old).
 *
 * Several builds of one prefix at once: each stages alone; a commit finds
 * the commit directory taken while another is moving its files, finishes
 * those moves (moving a file twice is harmless: the second finds it gone)
 * and takes it.  The last build to commit wins, whole.
 */
#include "compiler/build_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/fileio.h"
#include "artifact/artifact_common.h"

/* TDSL_TEST_KILL_BUILD=N, for tests only: the build kills itself (SIGKILL,
 * as kill -9 would) at point N of its commit: 0 before the commit rename,
 * 1 after it, 2, 3, ... after each output moved. */
static void kill_point(int n) {
  const char *s = getenv("TDSL_TEST_KILL_BUILD");
  if (s && *s && atoi(s) == n) raise(SIGKILL);
}

/* Is name one of the outputs of prefix (PREFIX, PREFIX.so, PREFIX.h)? */
static int is_output(const char *name, const char *prefix, size_t plen) {
  return !strncmp(name, prefix, plen) && (!name[plen] || !strcmp(name + plen, ".so") || !strcmp(name + plen, ".h"));
}

/* Moves the outputs of prefix from the commit directory `commit` (in dfd)
 * into dfd, removes anything else there, then the directory.  0, or -1
 * with errno when an output could not be moved. */
static int finish(int dfd, const char *commit, const char *prefix) {
  int cfd = openat(dfd, commit, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rc = 0, e = 0;
  DIR *d = cfd >= 0 ? fdopendir(cfd) : NULL;
  if (!d) {
    if (cfd >= 0) close(cfd);
    if (errno == ENOTDIR || errno == ELOOP) return unlinkat(dfd, commit, 0);   /* a file or link planted there */
    return errno == ENOENT ? 0 : -1;   /* finished meanwhile by its own build */
  }
  size_t plen = strlen(prefix);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (!is_output(de->d_name, prefix, plen)) unlinkat(cfd, de->d_name, 0);
    else if (renameat(cfd, de->d_name, dfd, de->d_name) && errno != ENOENT && !rc) rc = -1, e = errno;
  }
  closedir(d);
  if (!rc) unlinkat(dfd, commit, AT_REMOVEDIR);   /* fails, harmlessly, when another build took it meanwhile */
  errno = e;
  return rc;
}

/* Finishes every interrupted commit in dir (.P.tdsl-commit, any prefix P). */
static void recover(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  size_t sl = strlen(TDA_COMMIT_DIR);
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    char prefix[256];
    if (de->d_name[0] != '.' || n <= sl + 1 || n - sl >= sizeof prefix || strcmp(de->d_name + n - sl, TDA_COMMIT_DIR))
      continue;
    snprintf(prefix, sizeof prefix, "%.*s", (int)(n - sl - 1), de->d_name + 1);
    (void)finish(dirfd(d), de->d_name, prefix);
  }
  closedir(d);
}

int tdb_dir_begin(tdb_builder *b, tdb_outs *out) {
  static const char *const suffix[3] = {".so", ".h", ""};
  const td_build_opts *o = b->o;
  recover(o->dir);
  td_io_clean_stale(o->dir);
  snprintf(out->stage, sizeof out->stage, "%s/.%s" TD_IO_TMP_MARK "%ld.XXXXXX", o->dir, o->prefix, (long)getpid());
  snprintf(out->commit, sizeof out->commit, "%s/.%s%s", o->dir, o->prefix, TDA_COMMIT_DIR);
  if (!mkdtemp(out->stage)) {
    int e = errno;
    out->stage[0] = 0;
    return td_err_set(b->err, "cannot write into %s: %s", o->dir, strerror(e));
  }
  out->n = o->exe ? 3 : 2;
  for (int i = 0; i < out->n; i++) {
    snprintf(out->final[i], sizeof out->final[i], "%s/%s%s", o->dir, o->prefix, suffix[i]);
    snprintf(out->tmp[i], sizeof out->tmp[i], "%s/%s%s", out->stage, o->prefix, suffix[i]);
  }
  return 0;
}

void tdb_dir_end(const tdb_outs *out) {
  if (!out->stage[0]) return;
  DIR *d = opendir(out->stage);   /* gone after a commit */
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) unlinkat(dirfd(d), de->d_name, 0);
  if (d) closedir(d);
  rmdir(out->stage);
}

/* fsync of a file or directory (best effort: durability, not correctness). */
static void sync_path(const char *p, int dir) {
  int fd = open(p, O_RDONLY | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

int tdb_commit(tdb_builder *b, const tdb_outs *out) {
  const char *dir = b->o->dir, *slash = strrchr(out->commit, '/');
  struct stat st;
  for (int i = 0; i < out->n; i++)   /* nothing changes in dir unless every output can take its place */
    if (!lstat(out->final[i], &st) && S_ISDIR(st.st_mode))
      return td_err_set(b->err, "cannot write %s: %s", out->final[i], strerror(EISDIR));
  DIR *d = opendir(out->stage);     /* the staging directory keeps the outputs only */
  struct dirent *de;
  size_t plen = strlen(b->o->prefix);
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && !is_output(de->d_name, b->o->prefix, plen))
      unlinkat(dirfd(d), de->d_name, 0);
  if (d) closedir(d);
  for (int i = 0; i < out->n; i++) sync_path(out->tmp[i], 0);
  kill_point(0);
  int tries = 0, rc;
  while ((rc = rename(out->stage, out->commit)) && (errno == EEXIST || errno == ENOTEMPTY) && tries++ < 3) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);   /* another build's commit: finish it first */
    if (dfd >= 0) {
      (void)finish(dfd, slash + 1, b->o->prefix);
      close(dfd);
    }
  }
  if (rc) return td_err_set(b->err, "cannot write into %s: %s", dir, strerror(errno));
  kill_point(1);
  for (int i = 0; i < out->n; i++) {
    char from[1200];
    snprintf(from, sizeof from, "%s/%s", out->commit, strrchr(out->final[i], '/') + 1);
    if (rename(from, out->final[i]) && errno != ENOENT)
      return td_err_set(b->err, "cannot write %s: %s; the rest of this build waits in %s, which the next tdsl build "
                        "into %s moves into place", out->final[i], strerror(errno), out->commit, dir);
    kill_point(2 + i);
  }
  rmdir(out->commit);
  sync_path(dir, 1);
  return 0;
}

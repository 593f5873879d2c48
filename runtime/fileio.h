/* fileio.h - file helpers shared by the .npy and safetensors code, the
 * module loader, the compile cache and tdsl build (internal).
 *
 * Readers open only regular files, and never block doing so: a FIFO, a
 * device or a socket planted where a file is expected is refused at once
 * (O_NONBLOCK, then fstat).  They use a file descriptor with its size
 * known up front, so every length read from a file can be checked against
 * the real size before anything is allocated.  Writers hand a list of byte
 * ranges to td_io_write_atomic, which writes them to a temporary file next
 * to the target and renames it into place; what a killed writer leaves
 * behind is removed by a later writer in that directory (td_io_clean_stale).
 */
#ifndef TD_FILEIO_H
#define TD_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/tensor.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tdsl file I/O assumes a little-endian host"
#endif

/* The reason td_io_open_fd gives for a path that exists but is neither a
 * regular file nor a directory (a FIFO, a device, a socket); not an errno
 * value. */
#define TD_IO_ENOTREG 0x10000

/* Opens path for reading when it is a regular file (a symbolic link to one
 * is fine), without blocking.  Returns the descriptor and its size, or -1
 * with *why: open's or fstat's errno, EISDIR for a directory, TD_IO_ENOTREG
 * for anything else. */
int td_io_open_fd(const char *path, uint64_t *size, int *why);
/* The text of a reason of td_io_open_fd ("Permission denied", "not a
 * regular file"). */
const char *td_io_why(int why);
/* The whole regular file at path, td_malloc'd with a NUL after its *len
 * bytes; 0, or -1 with *why as td_io_open_fd's (EFBIG: more than max bytes,
 * EIO: a read error, ENOMEM). */
int td_io_read_all(const char *path, size_t max, char **data, size_t *len, int *why);

/* Opens path for reading and returns its size; -1 with "path: reason". */
int td_io_open(const char *path, int *fd, uint64_t *size, td_err *err);
void td_io_close(int fd);

/* Reads exactly n bytes at offset off; 0 on success, -1 on an error or a
 * short read (errno is 0 for a short read). */
int td_io_pread(int fd, void *buf, size_t n, uint64_t off);

/* One range of bytes to write. */
typedef struct td_io_chunk {
  const void *data;
  size_t len;
} td_io_chunk;

/* Writes the chunks in order to a temporary file in path's directory
 * (path.tdsl-tmp.PID.XXXXXX), fsyncs and renames it to path.  On failure
 * nothing is left behind and err says "path: reason".  First removes what
 * killed writers left in that directory (td_io_clean_stale). */
int td_io_write_atomic(const char *path, const td_io_chunk *chunks, int n,
                       td_err *err);

/* The marker in the name of every temporary file or directory of a tdsl
 * writer: NAME.tdsl-tmp.PID.XXXXXX, PID the writer's process. */
#define TD_IO_TMP_MARK ".tdsl-tmp."

/* Removes, in dir, the temporaries (TD_IO_TMP_MARK names: regular files,
 * or directories holding only files, as tdsl build's staging) of writers
 * that are gone: untouched for ten minutes and their process no longer
 * exists, or untouched for a day (a process of another host or PID
 * namespace cannot be seen).  Symbolic links are removed, never followed.
 * Errors are ignored: cleaning never fails a write. */
void td_io_clean_stale(const char *dir);

/* Little-endian loads and stores. */
uint64_t td_io_le64(const unsigned char *p);
uint32_t td_io_le32(const unsigned char *p);
void td_io_put_le64(unsigned char *p, uint64_t v);

#endif

/* fileio.h - file helpers shared by the .npy and safetensors code (internal).
 *
 * Readers use a file descriptor with its size known up front, so every
 * length read from a file can be checked against the real size before
 * anything is allocated.  Writers hand a list of byte ranges to
 * td_io_write_atomic, which writes them to a temporary file next to the
 * target and renames it into place.
 */
#ifndef TD_FILEIO_H
#define TD_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tdsl file I/O assumes a little-endian host"
#endif

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

/* Writes the chunks in order to path.tmp.XXXXXX in path's directory, fsyncs
 * and renames it to path.  On failure nothing is left behind and err says
 * "path: reason". */
int td_io_write_atomic(const char *path, const td_io_chunk *chunks, int n,
                       td_err *err);

/* Little-endian loads and stores. */
uint64_t td_io_le64(const unsigned char *p);
uint32_t td_io_le32(const unsigned char *p);
void td_io_put_le64(unsigned char *p, uint64_t v);

#endif

/* idx.h - data sets from files: IDX (MNIST's format), gzip-compressed or
 * not, and .npy.
 *
 * IDX: four magic bytes 00 00 TYPE RANK (0x00000803: u8 images of rank
 * 3, 0x00000801: u8 labels), TYPE one of
 *   0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64,
 * then one big-endian u32 per dimension, then the elements in C order,
 * big-endian.
 * A file that starts with the gzip magic (1f 8b) is decompressed as it is
 * read (zlib), whatever its name.  The reader checks the magic, the type,
 * the rank (1 to TD_MAX_RANK) and that the data is exactly what the
 * dimensions need: a plain file against its size before anything is
 * allocated, a compressed one against the bytes actually decompressed
 * (its buffer grows as data arrives, so a header claiming terabytes
 * costs no more memory than the file really holds).  Every problem is an
 * error naming the file and what is wrong.
 *
 * This file needs zlib, so it is part of libtdsl.a only, never of the
 * artifacts' runtime (libtdsl_rt.a needs nothing but libc).
 */
#ifndef TD_IDX_H
#define TD_IDX_H

#include "runtime/tensor.h"

/* Reads the IDX file at path into a new tensor of dtype `as` (any dtype
 * but bool; values are converted as C converts them: u8, i8 and i16 are
 * exact in every dtype, i32 in i32/i64/f64).  0, or -1 with err filled. */
int td_idx_read(const char *path, td_dtype as, td_tensor **out, td_err *err);

/* A data set array from path: .npy (by its magic, runtime/io.h) or IDX,
 * converted to dtype `as` as td_idx_read converts. */
int td_data_read(const char *path, td_dtype as, td_tensor **out, td_err *err);

#endif

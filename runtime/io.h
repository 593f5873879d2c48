/* io.h - .npy and safetensors files.
 *
 * Readers validate everything they read (magic, header length, dtype, shape,
 * data length, offsets) and turn any malformed file into an error message
 * naming the file and the problem; they never crash and never allocate more
 * than the data the file really holds.  Writers write to a temporary file in
 * the same directory and rename it, so an output is complete or absent.
 */
#ifndef TD_IO_H
#define TD_IO_H

#include "runtime/tensor.h"

/* .npy version 1.0/2.0/3.0, C order, dtypes <f4 <f8 <i4 <i8 |b1 (also |u1 as
 * bool is NOT accepted).  Fortran order or other dtypes -> clear error. */
int td_npy_read(const char *path, td_tensor **out, td_err *err);

/* A .npy file whose header has been read and checked - dtype, order, and
 * that the file holds exactly the data the shape needs - but none of its
 * data: a caller can refuse a wrong file before reading (or allocating)
 * its data.  td_npy_read is td_npy_open, td_npy_load, td_npy_close. */
typedef struct td_npy_file {
  const char *path;  /* as given to td_npy_open (not copied) */
  int fd;            /* -1 when closed */
  td_tensor head;    /* dtype, rank, shape and numel; data NULL (never
                        retain or release it) */
  uint64_t data_off; /* where the data starts */
} td_npy_file;

/* 0, or -1 with err filled and nothing left open. */
int td_npy_open(const char *path, td_npy_file *f, td_err *err);
/* Reads the data into a new tensor (bools checked to be 0 or 1). */
int td_npy_load(const td_npy_file *f, td_tensor **out, td_err *err);
void td_npy_close(td_npy_file *f); /* also on a closed one */
int td_npy_write(const char *path, const td_tensor *t, td_err *err);

/* A list of named tensors, as in a safetensors file or a state_dict. */
typedef struct td_named_tensor {
  char *name;        /* malloc'd */
  td_tensor *tensor; /* owned reference */
} td_named_tensor;

typedef struct td_tensor_map {
  int n, cap;
  td_named_tensor *items;
  int *index;        /* open addressing by name: item + 1, 0 empty */
  int index_cap;     /* a power of two, at least 2 * cap */
} td_tensor_map;

void td_tensor_map_init(td_tensor_map *m);
void td_tensor_map_free(td_tensor_map *m);
/* Adds (retains t).  Fails when the name is already present. */
int td_tensor_map_put(td_tensor_map *m, const char *name, td_tensor *t, td_err *err);
td_tensor *td_tensor_map_get(const td_tensor_map *m, const char *name);

/* safetensors: 8-byte little-endian header length, JSON header, data.
 * Supported dtypes: F32 F64 F16 BF16 I32 I64 BOOL; others are reported by
 * name.  "__metadata__" is not a tensor: td_safetensors_open keeps its
 * string members (td_st_file.meta) and ignores the rest.  The tensors' data_offsets
 * must tile the data area exactly (no overlap, no gap, nothing after the
 * last tensor), as the format requires.  Adds every tensor to out (names
 * must be new there); on failure out is unchanged. */
int td_safetensors_read(const char *path, td_tensor_map *out, td_err *err);

/* A safetensors file whose header has been read and checked (every entry
 * and the tiling), but none of its data: names, dtypes and shapes come
 * from the header alone, so a caller can refuse a file that does not fit
 * before reading any data. */
typedef struct td_st_file {
  const char *path;          /* as given to td_safetensors_open (not copied) */
  int fd;                    /* -1 when closed */
  int n;                     /* tensors, without "__metadata__" */
  td_named_tensor *items;    /* per tensor, in header order: its name and a
                                header-only tensor (data NULL; never retain
                                or release it) */
  td_tensor *heads;          /* what items[i].tensor points to */
  uint64_t *offs;            /* tensor i's data_offsets: offs[2i], offs[2i + 1] */
  uint64_t data_start;       /* file offset of the data area */
  int n_meta;                /* "__metadata__"'s string members, in order: */
  char **meta;               /* meta[2k] the key, meta[2k + 1] its value */
} td_st_file;

/* The value of metadata key `key` of an open file, or NULL. */
const char *td_safetensors_meta(const td_st_file *f, const char *key);

/* 0, or -1 with err filled and nothing left open. */
int td_safetensors_open(const char *path, td_st_file *f, td_err *err);
/* Reads tensor i's data into a new tensor (bools checked). */
int td_safetensors_load(const td_st_file *f, int i, td_tensor **out, td_err *err);
/* Reads every tensor of f into out (names must be new there); on failure
 * out is unchanged. */
int td_safetensors_load_all(const td_st_file *f, td_tensor_map *out, td_err *err);
void td_safetensors_close(td_st_file *f); /* also on a closed one */
int td_safetensors_write(const char *path, const td_tensor_map *m, td_err *err);
/* The same, with "__metadata__": {kv[0]: kv[1], kv[2]: kv[3], ...}, n_kv
 * pairs of strings, first in the header. */
int td_safetensors_write_meta(const char *path, const td_tensor_map *m, const char *const *kv, int n_kv,
                              td_err *err);

#endif

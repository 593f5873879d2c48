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

#include "tensor.h"

/* .npy version 1.0/2.0/3.0, C order, dtypes <f4 <f8 <i4 <i8 |b1 (also |u1 as
 * bool is NOT accepted).  Fortran order or other dtypes -> clear error. */
int td_npy_read(const char *path, td_tensor **out, td_err *err);
int td_npy_write(const char *path, const td_tensor *t, td_err *err);

/* A list of named tensors, as in a safetensors file or a state_dict. */
typedef struct td_named_tensor {
  char *name;        /* malloc'd */
  td_tensor *tensor; /* owned reference */
} td_named_tensor;

typedef struct td_tensor_map {
  int n, cap;
  td_named_tensor *items;
} td_tensor_map;

void td_tensor_map_init(td_tensor_map *m);
void td_tensor_map_free(td_tensor_map *m);
/* Adds (retains t).  Fails when the name is already present. */
int td_tensor_map_put(td_tensor_map *m, const char *name, td_tensor *t, td_err *err);
td_tensor *td_tensor_map_get(const td_tensor_map *m, const char *name);

/* safetensors: 8-byte little-endian header length, JSON header, data.
 * Supported dtypes: F32 F64 I32 I64 BOOL; others are reported by name.
 * "__metadata__" is accepted and ignored. */
int td_safetensors_read(const char *path, td_tensor_map *out, td_err *err);
int td_safetensors_write(const char *path, const td_tensor_map *m, td_err *err);

#endif

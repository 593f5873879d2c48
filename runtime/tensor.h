/* tensor.h - runtime tensors shared by the interpreter and later backends.
 *
 * A td_tensor is a dense, C-ordered (row-major), contiguous array with a dtype
 * and a concrete shape.  Tensors are reference counted: td_tensor_retain adds
 * an owner, td_tensor_release drops one and frees the tensor with the last.
 * The count is atomic, so several threads may read one tensor and retain or
 * release it at once (e.g. weights shared by calls on different threads);
 * writing a tensor's data while another thread reads it is a race.
 * Runtime functions never print and never exit: they return 0 on success and
 * -1 on failure, filling a td_err with one readable sentence.
 */
#ifndef TD_TENSOR_H
#define TD_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define TD_MAX_RANK 8

/* Element types.  The numbers are stable (compiled artifacts store them):
 * new dtypes are appended.  Promotion uses td_dtype_promote, not the order.
 * f16 and bf16 are storage types held as uint16_t bit patterns
 * (runtime/half.h); arithmetic on them happens in f32. */
typedef enum td_dtype {
  TD_BOOL, /* 1 byte, 0 or 1 */
  TD_I32,  /* int32_t */
  TD_I64,  /* int64_t */
  TD_F32,  /* float */
  TD_F64,  /* double */
  TD_F16,  /* IEEE binary16, uint16_t bits */
  TD_BF16, /* bfloat16, uint16_t bits */
  TD_DTYPE_COUNT
} td_dtype;

/* An error message filled by runtime functions. */
typedef struct td_err {
  char msg[1024];
} td_err;

/* Formats msg into err (printf style); always returns -1 so callers can
 * write `return td_err_set(err, ...)`.  err may be NULL. */
int td_err_set(td_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

size_t td_dtype_size(td_dtype t);       /* bytes per element */
const char *td_dtype_name(td_dtype t);  /* "f32", "i64", ... */
int td_dtype_is_float(td_dtype t);      /* f16, bf16, f32 or f64 */
int td_dtype_is_half(td_dtype t);       /* f16 or bf16 */
int td_dtype_from_name(const char *name, td_dtype *out); /* 0 or -1 */
/* The dtype two tensor dtypes promote to (PyTorch's table): the wider
 * kind wins (bool < ints < floats), within a kind the wider type, and
 * f16 with bf16 gives f32. */
td_dtype td_dtype_promote(td_dtype a, td_dtype b);

typedef struct td_tensor {
  td_dtype dtype;
  int rank;                      /* 0 .. TD_MAX_RANK */
  int64_t shape[TD_MAX_RANK];    /* shape[0..rank-1]; each >= 0 */
  int64_t numel;                 /* product of shape (1 for rank 0) */
  void *data;                    /* numel * dtype size bytes, 64-byte aligned */
  int refcount;                  /* owners; freed when it reaches 0 (changed atomically) */
  /* Unique in the process (from 1; 0 for headers not made by
   * td_tensor_new): tells tensors apart where an address may be reused
   * after a free (compiled.c keys its prepacked weights on it). */
  uint64_t id;
} td_tensor;

/* Gives t a new id: its data was changed in place (a training step's
 * update), so what is cached under the old id (packed weights) is stale. */
void td_tensor_touch(td_tensor *t);

/* Largest tensor the runtime agrees to allocate (bytes); guards against
 * absurd shapes in files.  Overridable with TDSL_MAX_TENSOR_BYTES. */
size_t td_tensor_max_bytes(void);
/* The limit is read once per process; this makes the next call read
 * TDSL_MAX_TENSOR_BYTES again (for tests and embedders that change it). */
void td_tensor_limits_reload(void);

/* New tensor with uninitialised (td_tensor_new) or zeroed (td_tensor_zeros)
 * data.  Fails (NULL, err filled) on overflow, on a size above
 * td_tensor_max_bytes, or when memory runs out. */
td_tensor *td_tensor_new(td_dtype dt, int rank, const int64_t *shape, td_err *err);
td_tensor *td_tensor_zeros(td_dtype dt, int rank, const int64_t *shape, td_err *err);
td_tensor *td_tensor_retain(td_tensor *t);
void td_tensor_release(td_tensor *t); /* NULL is fine */

/* Element i (flat C-order index) read as double / written from double.
 * Slow; for tests, printing and I/O, not for kernels. */
double td_tensor_get(const td_tensor *t, int64_t i);
void td_tensor_set(td_tensor *t, int64_t i, double v);

/* "f32[2, 3]" into buf; returns buf. */
char *td_shape_str(td_dtype dt, int rank, const int64_t *shape, char *buf, size_t n);

/* NumPy-like text of a tensor, summarised with "..." when it has more than
 * `threshold` elements (edgeitems 3, like numpy).  Returns a malloc'd string
 * the caller frees, or NULL when memory runs out. */
char *td_tensor_format(const td_tensor *t, int64_t threshold);

/* The text of one print(): its n_parts parts joined by single spaces, then
 * '\n'.  Part p is text[p] as is when that is not NULL, else the tensor
 * vals[p]: td_tensor_format's text, followed for rank >= 1 by
 * " (f32[2, 3])", its continuation lines indented to the column where it
 * started (empty lines stay empty).  Every backend prints through this, so
 * compiled and eager prints are the same bytes.  A td_malloc'd string, or
 * NULL when memory runs out. */
char *td_print_line(int n_parts, const char *const *text, const td_tensor *const *vals,
                    int64_t threshold);

#endif

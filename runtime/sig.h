/* sig.h - what an entry point's arguments and a model's parameters must be,
 * checked in one place, with one set of messages, by `tdsl run` (eager,
 * compiled and CUDA) and by built artifacts (the --exe command line and
 * PREFIX_load_weights), which link only the runtime.
 *
 *  - Symbolic sizes: a td_dim is a literal size or names a polynomial over
 *    named symbols ("N", "2*T + 1"); a td_sizes is a view of one
 *    signature's symbols and polynomials (a graph's, or an entry of an
 *    artifact's descriptor).
 *  - td_sig_bind binds the symbols from the arguments' shapes and checks
 *    every argument against its declared type:
 *      argument 'x': expected f32[N, 4], got f32[2, 5]: dimension 1 is 5, expected 4
 *  - td_sig_check_weights checks the names, dtypes and shapes a weights
 *    file holds against the parameters and lists every problem.
 *  - td_sig_open_inputs matches --in NAME=FILE.npy options to the arguments
 *    and opens and checks each file from its header alone; only when all
 *    of them fit does td_sig_load_inputs read their data.
 * "Got" values are tensors or header-only tensors (data NULL): nothing here
 * reads data.
 */
#ifndef TD_SIG_H
#define TD_SIG_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/io.h"
#include "runtime/tensor.h"

/* ---- symbolic sizes ---- */
typedef int64_t td_dim;      /* >= 0: literal; TD_DIM_BAD; else -(1 + index into the polynomials) */
#define TD_DIM_IS_CONST(d) ((d) >= 0)
/* What size arithmetic (lang/ir.c) gives when its exact result cannot be
 * represented: a coefficient outside int64, a term of more than
 * TD_MONO_MAX symbols, a polynomial of more than TD_POLY_MAX terms, or
 * memory running out.  Every td_dim_* operation given it returns it again,
 * so it reaches whoever looks; the elaborator reports it at the operation
 * that produced it (so no checked graph, plan or artifact holds it).
 * Never a legal size. */
#define TD_DIM_BAD INT64_MIN
#define TD_DIM_IS_BAD(d) ((d) == TD_DIM_BAD)

#define TD_MONO_MAX 16       /* symbols in one term, repeats counted (N*N is 2) */
#define TD_POLY_MAX 256      /* terms in one polynomial */
typedef struct td_mono {     /* coef * sym[0] * ... * sym[n-1] (sorted) */
  int64_t coef;
  int n;
  int sym[TD_MONO_MAX];
} td_mono;

typedef struct td_poly {     /* canonical: sorted, no zero coefficients */
  int n;
  td_mono *t;
} td_poly;

/* The symbols and polynomials one signature's td_dims refer to. */
typedef struct td_sizes {
  const char *const *syms;   /* symbol names, by symbol id */
  int n_syms;
  const td_poly *dims;       /* td_dim d < 0 is dims[-d - 1] */
} td_sizes;

/* The value of d for the symbol values symvals (NULL: every symbol 0);
 * wrapped around when it does not fit an int64 ... */
int64_t td_sizes_eval(const td_sizes *s, td_dim d, const int64_t *symvals);
/* ... which this one reports by setting *overflow (else left alone); for
 * TD_DIM_BAD it returns -1 with *overflow set (td_sizes_eval: -1). */
int64_t td_sizes_eval_ovf(const td_sizes *s, td_dim d, const int64_t *symvals, int *overflow);
/* "4", "N", "2*N + 1" into buf; returns buf. */
char *td_sizes_dim_str(const td_sizes *s, td_dim d, char *buf, size_t n);
/* "f32[N, 4]" into buf; returns buf. */
char *td_sizes_type_str(const td_sizes *s, td_dtype dt, int rank, const td_dim *shape,
                        char *buf, size_t n);

/* ---- arguments and parameters ---- */

/* One argument of an entry point, or one parameter of a model (whose
 * sizes are literal). */
typedef struct td_sig_arg {
  const char *name;          /* NULL: shown as "#k", k its position */
  td_dtype dtype;
  int rank;
  const td_dim *shape;
} td_sig_arg;

/* Binds the symbols of s from got[k]'s shapes (got[k] for args[k]; the
 * first axis that is exactly a symbol binds it) into symvals (s->n_syms
 * entries; symbols no axis binds are 0), then checks each dtype, rank and
 * size.  0, or -1 with one message naming the argument, its declared type
 * and what it got. */
int td_sig_bind(const td_sizes *s, const td_sig_arg *args, int n, const td_tensor *const *got,
                int64_t *symvals, td_err *err);

/* Derived symbols: a symbol named "T//k" (made by the gradient of a
 * checkpointed scan, lang/grad.c: the number of whole segments of k steps)
 * is the floor of symbol T's value divided by k.  Sets each from the
 * values before it (td_sig_bind and td_sig_open_inputs call it; a caller
 * that sets the symbols itself calls it after). */
void td_sig_derive(const char *const *syms, int n_syms, int64_t *symvals);

/* Checks the tensors a weights file holds (have: names with tensors or
 * header-only tensors) against the parameters: every parameter present
 * with its dtype and shape, nothing else.  0, or -1 with every problem on
 * a line of its own, under "FILE does not fit WHAT:" when file is not
 * NULL:
 *   missing weight 'fc.bias' (f32[2])
 *   weight 'fc.weight' is f32[3, 2], expected f32[2, 3]
 *   weight 'fc.weight' has dtype f64, expected f32 (f32[2, 3])
 *   unexpected weight 'fc.extra': the model has no parameter of that name
 * A parameter named twice is checked once. */
int td_sig_check_weights(const char *file, const char *what, const td_sig_arg *params, int n,
                         const td_named_tensor *have, int n_have, td_err *err);

/* The .npy inputs of entry point `entry` (its n arguments args, symbols
 * s), given as names[i]=paths[i] (n_given of them): each argument must be
 * given once and every name must be an argument; files[k] is opened for
 * args[k] and its header checked; then the headers are bound as by
 * td_sig_bind (into symvals).  No data is read.  0 with every file open,
 * or -1 with nothing open and every problem on a line of its own (a
 * missing input is followed by a "help: " line saying how to pass it). */
int td_sig_open_inputs(const td_sizes *s, const char *entry, const td_sig_arg *args, int n,
                       const char *const *names, const char *const *paths, int n_given,
                       td_npy_file *files, int64_t *symvals, td_err *err);
/* Reads the data of the n files opened by td_sig_open_inputs into out[k]
 * and closes every file, also on failure (then out[] is all NULL). */
int td_sig_load_inputs(td_npy_file *files, int n, td_tensor **out, td_err *err);
void td_sig_close_inputs(td_npy_file *files, int n);

/* Writes a message of several problems as a command line reports them:
 * each line as "PROG: error: LINE", a line starting with "help: " as it
 * is. */
void td_sig_print_errors(FILE *out, const char *prog, const char *msg);

#endif

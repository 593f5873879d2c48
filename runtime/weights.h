/* weights.h - matching a safetensors file to a model's parameters, with
 * the options a PyTorch checkpoint needs: `tdsl run --weights-prefix
 * --weights-strict=false --weights-convert` and the REPL's :load-weights.
 *
 *  - prefix "FROM=TO": a file name that starts with FROM is read as TO
 *    followed by the rest ("model.=" strips "model.", "=net." adds "net."
 *    to every name); other names are read as they are.
 *  - strict (the default): every parameter must be in the file with its
 *    dtype and shape, and nothing else (runtime/sig.h's
 *    td_sig_check_weights, whose message then gets "did you mean" lines for
 *    near-miss names: an edit distance of at most a third of the name, or
 *    a file name that ends with the parameter's name, which a prefix fixes).
 *    Not strict (PyTorch's load_state_dict(strict=False)): names the model
 *    lacks are ignored and parameters the file lacks keep their initial
 *    values, both listed in one note; a name present in both must still
 *    have the parameter's dtype (after conversion) and shape.
 *  - convert: an f64, f16 or bf16 tensor for an f32 parameter is converted
 *    to f32 (f16 and bf16 exactly; f64 rounded to the nearest f32, ties to
 *    even).  Without it a dtype difference is an error.
 * runtime/weights.c.
 */
#ifndef TD_WEIGHTS_H
#define TD_WEIGHTS_H

#include "runtime/io.h"
#include "runtime/sig.h"

typedef struct td_weights_opts {
  const char *prefix;   /* "FROM=TO", or NULL */
  int lenient;          /* 1: not strict */
  int convert;          /* 1: f64/f16/bf16 -> f32 */
} td_weights_opts;

/* Whether s is a valid prefix option ("FROM=TO", either may be empty). */
int td_weights_prefix_ok(const char *s);

/* Chooses for each parameter params[k] (n of them, literal shapes) the
 * entry of f it loads: src[k] (an index into f->items), or -1 (not
 * strict: the file lacks it).  *note (may be NULL) receives, when not
 * strict and something was ignored or missing, one malloc'd line saying
 * what ("FILE: ignored ...; missing ..."), else NULL.  0, or -1 with every
 * problem in err under "FILE does not fit WHAT:". */
int td_weights_match(const char *file, const char *what, const td_sig_arg *params, int n, const td_st_file *f,
                     const td_weights_opts *o, int *src, char **note, td_err *err);

/* Reads entry i of f as dtype want (converting an f64/f16/bf16 entry to
 * f32, as td_weights_match allowed).  NULL with err filled. */
td_tensor *td_weights_load(const td_st_file *f, int i, td_dtype want, td_err *err);

/* The edit distance of a and b: insertions, deletions, substitutions and
 * swaps of two neighbours ("sacle" for "scale") count one each (each
 * string cut at 255 characters). */
int td_edit_distance(const char *a, const char *b);

#endif

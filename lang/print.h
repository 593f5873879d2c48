/* print.h - the text of a PRINT node, the same for every backend.
 *
 * The interpreter prints a PRINT node when it runs; compiled code (CPU or
 * CUDA) returns the printed values as extra outputs and prints them after
 * the call.  Both make the text here, from the node's parts and the values
 * of its inputs (runtime/tensor.h's td_print_line), so the bytes agree.
 */
#ifndef TD_PRINT_H
#define TD_PRINT_H

#include "lang/ir.h"

/* The line PRINT node n prints when its inputs have the values in[0 ..
 * n->n_in), into *out (td_malloc'd, ends with '\n').  threshold: elements
 * above which a tensor is summarised (0: 1000).  0, or -1 with err filled
 * (a part naming no input, out of memory). */
int td_print_text(const td_node *n, td_tensor *const *in, int64_t threshold, char **out,
                  td_err *err);

#endif

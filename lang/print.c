/* print.c - the text of a PRINT node (see print.h). */
#include "lang/print.h"
#include "runtime/mem.h"

int td_print_text(const td_node *n, td_tensor *const *in, int64_t threshold, char **out,
                  td_err *err) {
  int np = n->attr.n_parts;
  const char **text = td_malloc((size_t)(np + 1) * sizeof *text);
  const td_tensor **vals = td_malloc((size_t)(np + 1) * sizeof *vals);
  int rc = text && vals ? 0 : td_err_set(err, "out of memory");
  for (int p = 0; p < np && rc == 0; p++) {
    const td_print_part *part = &n->attr.parts[p];
    text[p] = part->text;
    vals[p] = NULL;
    if (part->text) continue;
    if (part->input >= 0 && part->input < n->n_in) vals[p] = in[part->input];
    else rc = td_err_set(err, "print part %d names input %d of %d", p, part->input, n->n_in);
  }
  *out = NULL;
  if (rc == 0 && !(*out = td_print_line(np, text, vals, threshold ? threshold : 1000)))
    rc = td_err_set(err, "out of memory");
  td_free(text);
  td_free(vals);
  return rc;
}

/* format.c - text of shapes and tensors.
 *
 * td_tensor_format prints like NumPy's str() with PyTorch's float style:
 *   - floats with 4 decimals ("%.4f"), or all in e-notation ("%.4e") when
 *     the shown finite non-zero magnitudes are above 1e8, below 1e-4 or
 *     span a ratio above 1000 (PyTorch's rule); nan, inf, -inf spelled so;
 *   - integers plain, bools true/false;
 *   - every element right-aligned to the widest one shown;
 *   - rows on their own lines, blank lines between higher-rank blocks;
 *   - when the tensor has more than `threshold` elements, each axis longer
 *     than 6 shows its first 3 and last 3 entries around "..." (a negative
 *     threshold never summarises);
 *   - rank 0 is the bare value, a tensor with no elements is "[]";
 *   - innermost rows wrap before 75 columns, like NumPy's linewidth.
 * The printer makes three walks over the shown elements: one to choose the
 * float style, one to find the width, one to write.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/strbuf.h"
#include "runtime/tensor.h"

#define EDGE 3        /* edge items per axis in summaries */
#define LINE_WIDTH 75 /* wrap innermost rows before this column */

char *td_shape_str(td_dtype dt, int rank, const int64_t *shape, char *buf, size_t n) {
  if (!buf || n == 0)
    return buf;
  size_t len = 0;
  int w = snprintf(buf, n, "%s[", td_dtype_name(dt));
  for (int i = 0; i < rank && w >= 0; i++) {
    len += (size_t)w;
    if (len >= n)
      return buf;
    w = snprintf(buf + len, n - len, i ? ", %lld" : "%lld", (long long)shape[i]);
  }
  if (w >= 0) {
    len += (size_t)w;
    if (len < n)
      snprintf(buf + len, n - len, "]");
  }
  return buf;
}

/* ---- growable string ---------------------------------------------------- */

typedef struct sbuf {
  td_strbuf sb;
  size_t col; /* characters since the last newline */
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  td_sb_add(&b->sb, s, n);
  for (size_t i = 0; i < n; i++)
    b->col = s[i] == '\n' ? 0 : b->col + 1;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_spaces(sbuf *b, int n) {
  for (int i = 0; i < n; i++)
    sb_put(b, " ", 1);
}

/* ---- elements ----------------------------------------------------------- */

typedef struct fmt_ctx {
  const td_tensor *t;
  int64_t stride[TD_MAX_RANK]; /* elements per step along each axis */
  int summarise;
  int sci;                     /* floats in e-notation */
  double max_abs, min_abs;     /* over shown finite non-zero floats */
  int width;                   /* widest shown element */
  sbuf out;
} fmt_ctx;

/* Text of element i into buf (at least 64 bytes); returns its length. */
static int elem_text(const fmt_ctx *c, int64_t i, char *buf, size_t n) {
  const td_tensor *t = c->t;
  double v = td_tensor_get(t, i);
  switch (t->dtype) {
  case TD_BOOL: return snprintf(buf, n, "%s", v != 0.0 ? "true" : "false");
  case TD_I32: return snprintf(buf, n, "%d", ((const int32_t *)t->data)[i]);
  case TD_I64:
    return snprintf(buf, n, "%lld", (long long)((const int64_t *)t->data)[i]);
  default: break;
  }
  if (isnan(v))
    return snprintf(buf, n, "nan");
  if (isinf(v))
    return snprintf(buf, n, v > 0 ? "inf" : "-inf");
  return snprintf(buf, n, c->sci ? "%.4e" : "%.4f", v);
}

/* Calls fn on every shown element below axis `axis` starting at flat `base`. */
typedef void (*visit_fn)(fmt_ctx *c, int64_t i);

static int shown_skip(const fmt_ctx *c, int axis, int64_t k) {
  int64_t n = c->t->shape[axis];
  return c->summarise && n > 2 * EDGE && k >= EDGE && k < n - EDGE;
}

static void visit(fmt_ctx *c, int axis, int64_t base, visit_fn fn) {
  if (axis == c->t->rank) {
    fn(c, base);
    return;
  }
  for (int64_t k = 0; k < c->t->shape[axis]; k++) {
    if (shown_skip(c, axis, k)) {
      k = c->t->shape[axis] - EDGE - 1;
      continue;
    }
    visit(c, axis + 1, base + k * c->stride[axis], fn);
  }
}

static void stat_magnitude(fmt_ctx *c, int64_t i) {
  double a = fabs(td_tensor_get(c->t, i));
  if (!isfinite(a) || a == 0.0)
    return;
  if (a > c->max_abs)
    c->max_abs = a;
  if (c->min_abs == 0.0 || a < c->min_abs)
    c->min_abs = a;
}

static void stat_width(fmt_ctx *c, int64_t i) {
  char buf[64];
  int w = elem_text(c, i, buf, sizeof buf);
  if (w > c->width)
    c->width = w;
}

static void put_elem(fmt_ctx *c, int64_t i) {
  char buf[64];
  int w = elem_text(c, i, buf, sizeof buf);
  sb_spaces(&c->out, c->width - w);
  sb_put(&c->out, buf, (size_t)w);
}

/* ---- layout ------------------------------------------------------------- */

/* Separator before an entry of the innermost axis: ", " or a wrap. */
static void put_inner_sep(fmt_ctx *c, int axis) {
  int closing = c->t->rank - axis; /* brackets that may follow */
  sb_put(&c->out, ",", 1);
  if (c->out.col + 1 + (size_t)c->width + (size_t)closing + 1 > LINE_WIDTH) {
    sb_put(&c->out, "\n", 1);
    sb_spaces(&c->out, axis + 1);
  } else {
    sb_put(&c->out, " ", 1);
  }
}

/* Separator between sub-arrays of `axis`: a newline per remaining level. */
static void put_outer_sep(fmt_ctx *c, int axis) {
  sb_put(&c->out, ",", 1);
  for (int k = axis; k < c->t->rank - 1; k++)
    sb_put(&c->out, "\n", 1);
  sb_spaces(&c->out, axis + 1);
}

static void emit(fmt_ctx *c, int axis, int64_t base) {
  int inner = axis == c->t->rank - 1;
  sb_put(&c->out, "[", 1);
  for (int64_t k = 0; k < c->t->shape[axis]; k++) {
    if (k > 0) {
      if (inner)
        put_inner_sep(c, axis);
      else
        put_outer_sep(c, axis);
    }
    if (shown_skip(c, axis, k)) {
      sb_str(&c->out, "...");
      k = c->t->shape[axis] - EDGE - 1;
      continue;
    }
    if (inner)
      put_elem(c, base + k);
    else
      emit(c, axis + 1, base + k * c->stride[axis]);
  }
  sb_put(&c->out, "]", 1);
}

char *td_tensor_format(const td_tensor *t, int64_t threshold) {
  fmt_ctx c;
  memset(&c, 0, sizeof c);
  c.t = t;
  c.summarise = threshold >= 0 && t->numel > threshold;
  int64_t s = 1;
  for (int a = t->rank - 1; a >= 0; a--) {
    c.stride[a] = s;
    s *= t->shape[a];
  }
  if (t->numel == 0) {
    sb_str(&c.out, "[]");
  } else {
    if (td_dtype_is_float(t->dtype)) {
      visit(&c, 0, 0, stat_magnitude);
      c.sci = c.max_abs > 0.0 && (c.max_abs > 1e8 || c.min_abs < 1e-4 ||
                                  c.max_abs / c.min_abs > 1000.0);
    }
    if (t->rank == 0) {
      put_elem(&c, 0);
    } else {
      visit(&c, 0, 0, stat_width);
      emit(&c, 0, 0);
    }
  }
  if (c.out.sb.oom) {
    td_free(c.out.sb.s);
    return NULL;
  }
  return c.out.sb.s;
}

/* ---- print() lines ---- */

/* A tensor as print() shows it: its text, then " (f32[2, 3])" for rank >= 1;
 * a multi-line array keeps its shape after what came before it. */
static void add_shown(td_strbuf *b, const td_tensor *t, int64_t threshold) {
  char *s = td_tensor_format(t, threshold);
  if (!s) {
    b->oom = 1;
    return;
  }
  td_sb_add_aligned(b, s);
  td_free(s);
  if (t->rank > 0) {
    char shp[256];
    td_sb_puts(b, " (");
    td_sb_puts(b, td_shape_str(t->dtype, t->rank, t->shape, shp, sizeof shp));
    td_sb_puts(b, ")");
  }
}

char *td_print_line(int n_parts, const char *const *text, const td_tensor *const *vals,
                    int64_t threshold) {
  td_strbuf b = {0};
  for (int p = 0; p < n_parts; p++) {
    if (p > 0) td_sb_puts(&b, " ");
    if (text[p]) td_sb_puts(&b, text[p]);
    else add_shown(&b, vals[p], threshold);
  }
  td_sb_puts(&b, "\n");
  if (b.oom) {
    td_free(b.s);
    return NULL;
  }
  return b.s;
}

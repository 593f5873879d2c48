/* builtins.c - the built-in functions of tdsl.
 *
 * One table lists every built-in with its parameter names; calls are
 * matched against it (positional, then keyword) and dispatched to a small
 * handler that checks its arguments and emits IR through shapes.c.  On
 * compile-time numbers the math functions compute the value at compile
 * time (so `1 / sqrt(in)` is a constant), everywhere else they emit nodes.
 * Composite built-ins (mean, logsumexp, clamp, stack, split, one_hot...) are
 * lowered to primitives of ops.def here, so no backend needs to know them.
 */
#include <math.h>
#include <string.h>
#include "lang/elab_impl.h"
#include "runtime/philox.h"
#include "runtime/half.h"

td_value el_binary_ir(el_ctx *c, td_op op, const td_value *a, const td_value *b, td_span sp);
td_value el_apply_index(el_ctx *c, int in, const int *kind, const td_value *lo,
                        const td_value *hi, const td_value *step, td_span sp);

typedef enum {
  B_UNARY, B_BINARY, B_REDUCE, B_CAST, B_CREATE, B_OTHER, B_TRAIN, B_SCAN, B_CONV, B_IO, B_EXTRA
} bkind;

#define BUILTIN_MAX_PARAMS 8

typedef struct builtin {
  const char *name;
  bkind kind;
  int op;               /* td_op for unary/binary/reduce, dtype for casts */
  int required;         /* number of required positional parameters */
  const char *params[BUILTIN_MAX_PARAMS];
} builtin;

static const builtin table[] = {
  /* elementwise unary */
  {"exp", B_UNARY, TD_IR_EXP, 1, {"x"}},
  {"log", B_UNARY, TD_IR_LOG, 1, {"x"}},
  {"sqrt", B_UNARY, TD_IR_SQRT, 1, {"x"}},
  {"rsqrt", B_UNARY, TD_IR_RSQRT, 1, {"x"}},
  {"abs", B_UNARY, TD_IR_ABS, 1, {"x"}},
  {"neg", B_UNARY, TD_IR_NEG, 1, {"x"}},
  {"sin", B_UNARY, TD_IR_SIN, 1, {"x"}},
  {"cos", B_UNARY, TD_IR_COS, 1, {"x"}},
  {"tanh", B_UNARY, TD_IR_TANH, 1, {"x"}},
  {"sigmoid", B_UNARY, TD_IR_SIGMOID, 1, {"x"}},
  {"relu", B_UNARY, TD_IR_RELU, 1, {"x"}},
  {"gelu", B_UNARY, TD_IR_GELU, 1, {"x"}},
  {"silu", B_UNARY, TD_IR_SILU, 1, {"x"}},
  {"erf", B_UNARY, TD_IR_ERF, 1, {"x"}},
  {"log1p", B_UNARY, TD_IR_LOG1P, 1, {"x"}},
  {"floor", B_UNARY, TD_IR_FLOOR, 1, {"x"}},
  {"ceil", B_UNARY, TD_IR_CEIL, 1, {"x"}},
  {"round", B_UNARY, TD_IR_ROUND, 1, {"x"}},
  /* elementwise binary */
  {"minimum", B_BINARY, TD_IR_MIN, 2, {"a", "b"}},
  {"maximum", B_BINARY, TD_IR_MAX, 2, {"a", "b"}},
  {"pow", B_BINARY, TD_IR_POW, 2, {"a", "b"}},
  /* reductions */
  {"sum", B_REDUCE, TD_IR_SUM, 1, {"x", "axis", "keepdims"}},
  {"prod", B_REDUCE, TD_IR_PROD, 1, {"x", "axis", "keepdims"}},
  {"max", B_REDUCE, TD_IR_RMAX, 1, {"x", "axis", "keepdims"}},
  {"min", B_REDUCE, TD_IR_RMIN, 1, {"x", "axis", "keepdims"}},
  {"argmax", B_REDUCE, TD_IR_ARGMAX, 1, {"x", "axis", "keepdims"}},
  {"argmin", B_REDUCE, TD_IR_ARGMIN, 1, {"x", "axis", "keepdims"}},
  {"mean", B_REDUCE, -1, 1, {"x", "axis", "keepdims"}},
  {"logsumexp", B_REDUCE, -2, 1, {"x", "axis", "keepdims"}},
  {"var", B_REDUCE, -3, 1, {"x", "axis", "keepdims", "correction"}},
  {"std", B_REDUCE, -4, 1, {"x", "axis", "keepdims", "correction"}},
  /* casts */
  {"f32", B_CAST, TD_F32, 1, {"x"}},
  {"f64", B_CAST, TD_F64, 1, {"x"}},
  {"f16", B_CAST, TD_F16, 1, {"x"}},
  {"bf16", B_CAST, TD_BF16, 1, {"x"}},
  {"i32", B_CAST, TD_I32, 1, {"x"}},
  {"i64", B_CAST, TD_I64, 1, {"x"}},
  {"bool", B_CAST, TD_BOOL, 1, {"x"}},
  {"int", B_CAST, -1, 1, {"x"}},
  {"float", B_CAST, -2, 1, {"x"}},
  /* creation */
  {"zeros", B_CREATE, 0, 1, {"shape", "dtype"}},
  {"ones", B_CREATE, 1, 1, {"shape", "dtype"}},
  {"full", B_CREATE, 2, 2, {"shape", "value", "dtype"}},
  {"zeros_like", B_CREATE, 3, 1, {"x"}},
  {"ones_like", B_CREATE, 4, 1, {"x"}},
  {"arange", B_CREATE, 5, 1, {"start", "stop", "step", "dtype"}},
  {"eye", B_CREATE, 6, 1, {"n", "dtype"}},
  {"rand", B_CREATE, 7, 1, {"shape", "seed"}},
  {"randn", B_CREATE, 8, 1, {"shape", "seed"}},
  /* everything else */
  {"where", B_OTHER, 0, 3, {"cond", "a", "b"}},
  {"clamp", B_OTHER, 1, 1, {"x", "lo", "hi"}},
  {"reshape", B_OTHER, 2, 2, {"x", "shape"}},
  {"transpose", B_OTHER, 3, 1, {"x", "a", "b"}},
  {"permute", B_OTHER, 4, 2, {"x", "axes"}},
  {"concat", B_OTHER, 5, 1, {"xs", "axis"}},
  {"stack", B_OTHER, 6, 1, {"xs", "axis"}},
  {"split", B_OTHER, 7, 2, {"x", "n", "axis"}},
  {"broadcast_to", B_OTHER, 8, 2, {"x", "shape"}},
  {"squeeze", B_OTHER, 9, 1, {"x", "axis"}},
  {"unsqueeze", B_OTHER, 10, 2, {"x", "axis"}},
  {"flatten", B_OTHER, 11, 1, {"x"}},
  {"take", B_OTHER, 12, 2, {"x", "idx", "axis"}},
  {"one_hot", B_OTHER, 13, 2, {"idx", "n", "dtype"}},
  {"print", B_OTHER, 14, 0, {NULL}},
  {"uniform", B_OTHER, 15, 2, {"lo", "hi"}},
  {"normal", B_OTHER, 16, 2, {"mean", "std"}},
  {"error", B_OTHER, 17, 1, {"message"}},
  {"tensor", B_OTHER, 18, 1, {"data", "dtype"}},
  /* training (builtins_grad.c) */
  {"grad", B_TRAIN, 0, 1, {"f", "wrt", "argnums", "has_aux"}},
  {"value_and_grad", B_TRAIN, 1, 1, {"f", "wrt", "argnums", "has_aux"}},
  {"params", B_TRAIN, 2, 1, {"model"}},
  {"state_like", B_TRAIN, 3, 2, {"model", "name", "value"}},
  {"buffer", B_TRAIN, 4, 1, {"shape", "value", "dtype"}},
  {"len", B_TRAIN, 5, 1, {"x"}},
  {"assign", B_TRAIN, 6, 2, {"p", "value"}},
  /* loops (builtins_scan.c) */
  {"scan", B_SCAN, 0, 2, {"f", "init", "xs", "length", "reverse", "args", "checkpoint"}},
  {"fold", B_SCAN, 1, 2, {"f", "init", "xs", "length", "reverse", "args", "checkpoint"}},
  /* convolution and pooling (builtins_conv.c) */
  {"conv1d", B_CONV, 1, 2, {"x", "weight", "bias", "stride", "padding", "dilation", "groups"}},
  {"conv2d", B_CONV, 2, 2, {"x", "weight", "bias", "stride", "padding", "dilation", "groups"}},
  {"conv3d", B_CONV, 3, 2, {"x", "weight", "bias", "stride", "padding", "dilation", "groups"}},
  {"conv_transpose1d", B_CONV, 4, 2, {"x", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"}},
  {"conv_transpose2d", B_CONV, 5, 2, {"x", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"}},
  {"conv_transpose3d", B_CONV, 6, 2, {"x", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"}},
  {"max_pool2d", B_CONV, 10, 2, {"x", "kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
  {"avg_pool2d", B_CONV, 11, 2, {"x", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}},
  /* files (builtins_io.c) */
  {"load", B_IO, 0, 1, {"path"}},
  {"save", B_IO, 1, 2, {"path", "x"}},
  /* composites over the primitives (builtins_extra.c) */
  {"cumsum", B_EXTRA, 0, 2, {"x", "axis"}},
  {"cumprod", B_EXTRA, 1, 2, {"x", "axis"}},
  {"index_add", B_EXTRA, 2, 3, {"x", "idx", "src", "axis", "alpha"}},
  {"scatter_add", B_EXTRA, 3, 3, {"x", "idx", "src", "axis"}},
  {"sort", B_EXTRA, 4, 1, {"x", "axis", "descending", "stable"}},
  {"argsort", B_EXTRA, 5, 1, {"x", "axis", "descending", "stable"}},
  {"topk", B_EXTRA, 6, 2, {"x", "k", "axis", "largest", "sorted"}},
  {"einsum", B_EXTRA, 7, 1, {"equation"}},
  {"norm", B_EXTRA, 8, 1, {"x", "p", "axis", "keepdims"}},
};
#define N_BUILTINS ((int)(sizeof table / sizeof table[0]))

int el_builtin_find(const char *name) {
  for (int i = 0; i < N_BUILTINS; i++)
    if (!strcmp(table[i].name, name)) return i;
  return -1;
}
const char *el_builtin_name(int i) { return table[i].name; }
int el_builtin_count(void) { return N_BUILTINS; }

int el_builtin_dtype(const td_value *v) {
  if (v->k != V_BUILTIN || table[v->i].kind != B_CAST || table[v->i].op < 0) return -1;
  return table[v->i].op;
}

/* Matches args to the builtin's parameters into out[] (V_NONE = absent). */
static int getargs(el_ctx *c, const builtin *b, td_value *args, const char **kw, int n,
                   td_value *out, td_span sp) {
  int np = 0;
  while (np < BUILTIN_MAX_PARAMS && b->params[np]) np++;
  for (int i = 0; i < np; i++) out[i] = el_none(sp);
  int pos = 0;
  for (int i = 0; i < n; i++) {
    int k = -1;
    if (!kw[i]) k = pos++;
    else
      for (int j = 0; j < np; j++)
        if (!strcmp(b->params[j], kw[i])) k = j;
    if (k < 0 || k >= np) {
      td_diag *g;
      if (kw[i]) g = td_error(c->diags, args[i].span, "%s() has no parameter named '%s'", b->name, kw[i]);
      else g = td_error(c->diags, args[i].span, "too many arguments: %s() takes at most %d", b->name, np);
      char sig[256];
      size_t w = 0;
      for (int j = 0; j < np; j++) w += (size_t)snprintf(sig + w, sizeof sig - w, "%s%s", j ? ", " : "", b->params[j]);
      td_diag_help(c->diags, g, "%s(%s)", b->name, sig);
      return -1;
    }
    if (out[k].k != V_NONE) { td_error(c->diags, args[i].span, "argument '%s' given twice", b->params[k]); return -1; }
    out[k] = args[i];
  }
  for (int j = 0; j < b->required; j++)
    if (out[j].k == V_NONE) {
      td_error(c->diags, sp, "%s() is missing its argument '%s'", b->name, b->params[j]);
      return -1;
    }
  return 0;
}

static int want_tensor(el_ctx *c, const td_value *v, const char *fn) {
  if (v->k == V_TENSOR) return 0;
  if (v->k != V_ERR) td_error(c->diags, v->span, "%s() needs a tensor, found %s", fn, el_kind_name(v));
  return -1;
}

static int opt_dtype(el_ctx *c, const td_value *v, td_dtype def, td_dtype *out) {
  if (v->k == V_NONE) { *out = def; return 0; }
  int d = el_builtin_dtype(v);
  if (d < 0) {
    td_diag *g = td_error(c->diags, v->span, "dtype must be one of f32, f64, i32, i64, bool, f16, bf16");
    td_diag_help(c->diags, g, "write it without quotes: dtype = i64");
    return -1;
  }
  *out = (td_dtype)d;
  return 0;
}

static int opt_bool(el_ctx *c, const td_value *v, int def, int *out) {
  if (v->k == V_NONE) { *out = def; return 0; }
  if (v->k != V_BOOL) { td_error(c->diags, v->span, "expected true or false, found %s", el_kind_name(v)); return -1; }
  *out = (int)v->i;
  return 0;
}

static td_value tensor_of(int node, td_span sp) { return node < 0 ? el_err() : el_tensor(node, sp); }

/* ---- unary math ---- */

static double const_unary(td_op op, double x) {
  switch (op) {
  case TD_IR_EXP: return exp(x);
  case TD_IR_LOG: return log(x);
  case TD_IR_SQRT: return sqrt(x);
  case TD_IR_RSQRT: return 1 / sqrt(x);
  case TD_IR_ABS: return fabs(x);
  case TD_IR_NEG: return -x;
  case TD_IR_SIN: return sin(x);
  case TD_IR_COS: return cos(x);
  case TD_IR_TANH: return tanh(x);
  case TD_IR_SIGMOID: return 1 / (1 + exp(-x));
  case TD_IR_RELU: return x > 0 ? x : (x != x ? x : 0);
  case TD_IR_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case TD_IR_SILU: return x / (1 + exp(-x));
  case TD_IR_ERF: return erf(x);
  case TD_IR_LOG1P: return log1p(x);
  case TD_IR_FLOOR: return floor(x);
  case TD_IR_CEIL: return ceil(x);
  case TD_IR_ROUND: return nearbyint(x);
  default: return x;
  }
}

static td_value b_unary(el_ctx *c, const builtin *b, td_value *a, td_span sp) {
  if (a->k == V_INT || a->k == V_FLOAT) {
    td_op op = (td_op)b->op;
    int keep_int = a->k == V_INT && (op == TD_IR_ABS || op == TD_IR_NEG || op == TD_IR_RELU ||
                                    op == TD_IR_FLOOR || op == TD_IR_CEIL || op == TD_IR_ROUND);
    if (keep_int) return el_int(el_f2i(const_unary(op, (double)a->i)), sp);
    return el_float(const_unary(op, a->k == V_INT ? (double)a->i : a->f), sp);
  }
  return el_unary_op(c, (td_op)b->op, a, sp);
}

/* ---- reductions ---- */

/* Axis mask from an optional axis argument (int or list); all axes when absent. */
static int axes_mask(el_ctx *c, const td_value *ax, int rank, uint32_t *mask) {
  *mask = 0;
  if (ax->k == V_NONE) { *mask = rank ? (uint32_t)((1u << rank) - 1) : 0; return 0; }
  if (ax->k == V_LIST || ax->k == V_TUPLE) {
    for (int i = 0; i < ax->n; i++) {
      int a;
      if (el_axis(c, &ax->items[i], rank, &a)) return -1;
      if (*mask >> a & 1) { td_error(c->diags, ax->items[i].span, "axis %d is listed twice", a); return -1; }
      *mask |= 1u << a;
    }
    return 0;
  }
  int a;
  if (el_axis(c, ax, rank, &a)) return -1;
  *mask = 1u << a;
  return 0;
}

/* The number of reduced elements as a value (int or size). */
static td_value reduced_count(el_ctx *c, const td_node *n, uint32_t mask, td_span sp) {
  td_dim cnt = 1;
  for (int i = 0; i < n->rank; i++)
    if (mask >> i & 1) cnt = td_dim_mul(c->g, cnt, n->shape[i]);
  return el_size(c, cnt, sp);
}

/* var and std (torch.var / torch.std with correction): two passes, the
 * mean, then the squared deviations from it summed and divided by
 * count - correction (0 or less gives inf or NaN, as PyTorch); std is
 * the square root.  x is f32 or f64; half: the dtype to round to at the
 * end (else TD_F32, meaning none). */
static td_value var_std(el_ctx *c, int is_std, const td_value *x, uint32_t mask, int keep,
                        const td_value *corr, td_dtype half, td_span sp) {
  td_value k = corr->k == V_NONE ? el_int(1, sp) : *corr;
  if (k.k != V_INT && k.k != V_FLOAT) {
    td_diag *g = td_error(c->diags, corr->span, "correction must be a number, found %s", el_kind_name(corr));
    td_diag_help(c->diags, g, "correction = 1 divides by n - 1 (the default, unbiased), correction = 0 by n");
    return el_err();
  }
  td_value cnt = reduced_count(c, el_node(c, x), mask, sp);
  td_value s = el_reduce(c, TD_IR_SUM, x, mask, 1, sp);
  if (s.k == V_ERR) return el_err();
  td_value m = el_binary(c, TD_OP_DIV, &s, &cnt, sp);
  td_value d = m.k == V_ERR ? m : el_binary(c, TD_OP_SUB, x, &m, sp);
  td_value d2 = d.k == V_ERR ? d : el_binary(c, TD_OP_MUL, &d, &d, sp);
  td_value ss = d2.k == V_ERR ? d2 : el_reduce(c, TD_IR_SUM, &d2, mask, keep, sp);
  td_value den = el_binary(c, TD_OP_SUB, &cnt, &k, sp);
  if (den.k == V_SIZE) den = el_cast(c, &den, el_node(c, x)->dtype, sp);   /* a symbolic count */
  td_value v = ss.k == V_ERR || den.k == V_ERR ? el_err() : el_binary(c, TD_OP_DIV, &ss, &den, sp);
  if (is_std && v.k != V_ERR) v = el_unary_op(c, TD_IR_SQRT, &v, sp);
  return half != TD_F32 && v.k != V_ERR ? el_cast(c, &v, half, sp) : v;
}

static td_value b_reduce(el_ctx *c, const builtin *b, td_value *a, td_span sp) {
  td_value *x = &a[0];
  /* Python-style max(a, b) on compile-time numbers */
  if ((b->op == TD_IR_RMAX || b->op == TD_IR_RMIN) && x->k != V_TENSOR && a[1].k != V_NONE &&
      a[1].k != V_TENSOR && a[2].k == V_NONE) {
    td_error(c->diags, sp, "%s() reduces a tensor; for two values use %s(a, b)", b->name,
             b->op == TD_IR_RMAX ? "maximum" : "minimum");
    return el_err();
  }
  if (want_tensor(c, x, b->name)) return el_err();
  const td_node *n = el_node(c, x);
  int rank = n->rank;
  uint32_t mask;
  int keep;
  if (axes_mask(c, &a[1], rank, &mask) || opt_bool(c, &a[2], 0, &keep)) return el_err();
  if ((b->op == TD_IR_ARGMAX || b->op == TD_IR_ARGMIN) && a[1].k != V_NONE && __builtin_popcount(mask) != 1) {
    td_error(c->diags, a[1].span, "%s() takes one axis", b->name);
    return el_err();
  }
  if ((b->op == TD_IR_ARGMAX || b->op == TD_IR_ARGMIN) && a[1].k == V_NONE) {
    /* over all elements: flatten first, like numpy */
    td_dim total = 1;
    for (int i = 0; i < rank; i++) total = td_dim_mul(c->g, total, n->shape[i]);
    td_value flat = el_reshape(c, x, 1, &total, sp);
    if (flat.k == V_ERR) return el_err();
    td_value r = el_reduce(c, (td_op)b->op, &flat, 1, 0, sp);
    return r;
  }
  if (b->op >= 0) return el_reduce(c, (td_op)b->op, x, mask, keep, sp);
  td_dtype t = n->dtype;
  /* f16/bf16 compute in f32 and round once at the end */
  int half = td_dtype_is_half(t);
  td_value xf = td_dtype_is_float(t) && !half ? *x : el_cast(c, x, TD_F32, sp);
  if (xf.k == V_ERR) return el_err();
  if (b->op == -1) { /* mean = sum / count */
    td_value cnt = reduced_count(c, el_node(c, &xf), mask, sp);
    td_value s = el_reduce(c, TD_IR_SUM, &xf, mask, keep, sp);
    if (s.k == V_ERR) return el_err();
    td_value q = el_binary(c, TD_OP_DIV, &s, &cnt, sp);
    return half && q.k != V_ERR ? el_cast(c, &q, t, sp) : q;
  }
  if (b->op == -3 || b->op == -4) return var_std(c, b->op == -4, &xf, mask, keep, &a[3], half ? t : TD_F32, sp);
  /* logsumexp = m + log(sum(exp(x - m))), m = max (0 where infinite) */
  td_value m = el_reduce(c, TD_IR_RMAX, &xf, mask, 1, sp);
  if (m.k == V_ERR) return el_err();
  td_value d = el_binary(c, TD_OP_SUB, &xf, &m, sp);
  td_value e = el_unary_op(c, TD_IR_EXP, &d, sp);
  td_value s = el_reduce(c, TD_IR_SUM, &e, mask, 1, sp);
  td_value l = el_unary_op(c, TD_IR_LOG, &s, sp);
  td_value r = el_binary(c, TD_OP_ADD, &m, &l, sp);
  if (half && r.k != V_ERR) r = el_cast(c, &r, t, sp);
  if (r.k == V_ERR || keep) return r;
  td_dim out[TD_MAX_RANK];
  int k = 0;
  const td_node *rn = el_node(c, &r);
  for (int i = 0; i < rn->rank; i++)
    if (!(mask >> i & 1)) out[k++] = rn->shape[i];
  return el_reshape(c, &r, k, out, sp);
}

/* ---- casts ---- */

static td_value b_cast(el_ctx *c, const builtin *b, td_value *a, td_span sp) {
  td_value *x = &a[0];
  if (x->k == V_TENSOR) {
    if (b->op < 0) {
      const char *src = td_span_text(c->diags, x->span);
      td_diag *g = td_error(c->diags, sp, "tensors never leave the graph: %s() would read a tensor's value on the host",
                            b->name);
      td_diag_help(c->diags, g, "to change the dtype inside the graph write %s(%s); to see the value, "
                   "return it or print it", b->op == -1 ? "i64" : "f32", src);
      return el_err();
    }
    return el_cast(c, x, (td_dtype)b->op, sp);
  }
  if (x->k == V_SIZE) {
    if (b->op == -1) return *x;
    return el_cast(c, x, b->op == -2 ? TD_F32 : (td_dtype)b->op, sp);
  }
  if (x->k != V_INT && x->k != V_FLOAT && x->k != V_BOOL) {
    td_diag *g = td_error(c->diags, sp, "%s() needs a number or a tensor, found %s", b->name, el_kind_name(x));
    if ((x->k == V_LIST || x->k == V_TUPLE) && b->op >= 0)
      td_diag_help(c->diags, g, "for a tensor of these numbers write tensor(%s, dtype = %s)",
                   td_span_text(c->diags, x->span), b->name);
    return el_err();
  }
  double v = x->k == V_FLOAT ? x->f : (double)x->i;
  switch (b->op) {
  case -1: case TD_I32: case TD_I64:
    if (x->k == V_FLOAT && !(fabs(v) < 9.2e18)) { td_error(c->diags, sp, "%g does not fit in an integer", v); return el_err(); }
    return el_int(x->k == V_FLOAT ? (int64_t)v : x->i, sp);
  case TD_BOOL: return el_bool(v != 0, sp);
  case TD_F16: return el_float(td_f16_to_f32(td_f64_to_f16(v)), sp); /* the rounded value */
  case TD_BF16: return el_float(td_bf16_to_f32(td_f64_to_bf16(v)), sp);
  default: return el_float(v, sp);
  }
}

/* ---- creation ---- */

static td_value fill(el_ctx *c, td_value v, td_dtype dt, int rank, const td_dim *shape, td_span sp) {
  int id = el_as_tensor(c, &v, dt, sp);
  if (id < 0) return el_err();
  td_value t = el_tensor(id, sp);
  return el_broadcast_to(c, &t, rank, shape, sp);
}

static td_value b_arange(el_ctx *c, td_value *a, td_span sp) {
  td_value lo = a[0], hi = a[1], st = a[2];
  if (hi.k == V_NONE) { hi = lo; lo = el_int(0, sp); }
  if (st.k == V_NONE) st = el_int(1, sp);
  int fl = lo.k == V_FLOAT || hi.k == V_FLOAT || st.k == V_FLOAT;
  td_dtype dt;
  if (opt_dtype(c, &a[3], fl ? TD_F32 : TD_I64, &dt)) return el_err();
  td_attr at;
  memset(&at, 0, sizeof at);
  td_dim n;
  if (lo.k == V_INT && st.k == V_INT && st.i == 1 && hi.k == V_SIZE) {
    n = td_dim_sub(c->g, hi.dim, td_dim_const(c->g, lo.i));
  } else {
    for (int i = 0; i < 3; i++) {
      td_value *v = i == 0 ? &lo : i == 1 ? &hi : &st;
      if (v->k == V_TENSOR) { el_err_host_read(c, v, "an arange bound"); return el_err(); }
      if (v->k != V_INT && v->k != V_FLOAT) { td_error(c->diags, v->span, "arange bounds must be numbers"); return el_err(); }
    }
    double l = lo.k == V_FLOAT ? lo.f : (double)lo.i, h = hi.k == V_FLOAT ? hi.f : (double)hi.i;
    double s = st.k == V_FLOAT ? st.f : (double)st.i;
    if (s == 0) { td_error(c->diags, st.span, "arange step cannot be zero"); return el_err(); }
    double cnt = ceil((h - l) / s);
    if (!(cnt < 1e12)) { td_error(c->diags, sp, "arange has too many elements"); return el_err(); }
    n = cnt > 0 ? (td_dim)cnt : 0;
  }
  at.f = lo.k == V_FLOAT ? lo.f : (double)lo.i;
  at.f2 = st.k == V_FLOAT ? st.f : (double)st.i;
  at.i = el_f2i(at.f);
  at.i2 = el_f2i(at.f2);
  return tensor_of(el_emit(c, TD_IR_ARANGE, dt, 1, &n, NULL, 0, &at, sp), sp);
}

static td_value b_random(el_ctx *c, int normal, td_value *a, td_span sp) {
  int rank;
  td_dim shape[TD_MAX_RANK];
  if (el_shape_arg(c, &a[0], &rank, shape, sp)) return el_err();
  td_attr at;
  memset(&at, 0, sizeof at);
  int seed_in = -1;
  /* a stream per call site and occurrence */
  uint64_t site = td_hash_mix(td_hash_mix((uint64_t)sp.file + 1, (uint64_t)sp.start), (uint64_t)c->n_rand + 1);
  if (a[1].k == V_TENSOR) {
    /* the seed known at run time (a step counter): the key is its value;
     * the stream stays the call site's, so that two dropouts fed the same
     * counter draw different masks */
    const td_node *sn = el_node(c, &a[1]);
    if ((sn->dtype != TD_I32 && sn->dtype != TD_I64) || sn->rank) {
      char t[128];
      td_error(c->diags, a[1].span, "a seed tensor must be a rank-0 i32 or i64, found %s",
               td_type_str(c->g, sn->dtype, sn->rank, sn->shape, t, sizeof t));
      return el_err();
    }
    seed_in = a[1].node;
    at.stream = site;
  } else if (a[1].k != V_NONE) {
    if (a[1].k != V_INT) { td_error(c->diags, a[1].span, "seed must be an integer or a rank-0 integer tensor"); return el_err(); }
    at.seed = (uint64_t)a[1].i;
    at.stream = 0;
  } else {
    /* the run's seed */
    at.seed = c->seed;
    at.stream = site;
  }
  c->n_rand++;
  int id = el_emit(c, normal ? TD_IR_RANDN : TD_IR_RAND, TD_F32, rank, shape, seed_in >= 0 ? &seed_in : NULL,
                   seed_in >= 0, &at, sp);
  return id < 0 ? el_err() : el_tensor(id, sp);
}

static td_value b_create(el_ctx *c, const builtin *b, td_value *a, td_span sp) {
  int rank;
  td_dim shape[TD_MAX_RANK];
  td_dtype dt;
  switch (b->op) {
  case 0: case 1: case 2: {
    if (el_shape_arg(c, &a[0], &rank, shape, sp)) return el_err();
    td_value v = b->op == 0 ? el_int(0, sp) : b->op == 1 ? el_int(1, sp) : a[1];
    int def = TD_F32;
    if (b->op == 2 && v.k == V_BOOL) def = TD_BOOL;
    if (b->op == 2 && v.k == V_TENSOR) { el_err_host_read(c, &v, "a fill value"); return el_err(); }
    if (b->op == 2 && v.k != V_INT && v.k != V_FLOAT && v.k != V_BOOL) {
      td_error(c->diags, v.span, "full() needs a number, found %s", el_kind_name(&v));
      return el_err();
    }
    if (opt_dtype(c, &a[b->op == 2 ? 2 : 1], (td_dtype)def, &dt)) return el_err();
    return fill(c, v, dt, rank, shape, sp);
  }
  case 3: case 4: {
    if (want_tensor(c, &a[0], b->name)) return el_err();
    td_node n = *el_node(c, &a[0]);
    return fill(c, el_int(b->op == 4, sp), n.dtype, n.rank, n.shape, sp);
  }
  case 5: return b_arange(c, a, sp);
  case 6: { /* eye(n) = arange(n)[:, None] == arange(n)[None, :] */
    td_dim n;
    if (el_size_arg(c, &a[0], &n, "eye's size") || opt_dtype(c, &a[1], TD_F32, &dt)) return el_err();
    td_attr at;
    memset(&at, 0, sizeof at);
    at.i2 = 1;
    at.f2 = 1;
    td_value r = tensor_of(el_emit(c, TD_IR_ARANGE, TD_I64, 1, &n, NULL, 0, &at, sp), sp);
    td_dim s1[2] = {n, 1}, s2[2] = {1, n};
    td_value col = el_reshape(c, &r, 2, s1, sp), row = el_reshape(c, &r, 2, s2, sp);
    td_value eq = el_binary(c, TD_OP_EQ, &col, &row, sp);
    return eq.k == V_ERR ? eq : el_cast(c, &eq, dt, sp);
  }
  case 7: case 8: return b_random(c, b->op == 8, a, sp);
  }
  return el_err();
}

/* ---- shape and other built-ins ---- */

static td_value b_reshape(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "reshape")) return el_err();
  const td_value *sv = &a[1];
  if (sv->k != V_LIST && sv->k != V_TUPLE) {
    int r1;
    td_dim s1[TD_MAX_RANK];
    if (el_shape_arg(c, sv, &r1, s1, sp)) return el_err();
    return el_reshape(c, &a[0], r1, s1, sp);
  }
  int rank = sv->n, infer = -1;
  td_dim shape[TD_MAX_RANK];
  if (rank > TD_MAX_RANK) { td_error(c->diags, sv->span, "at most %d dimensions", TD_MAX_RANK); return el_err(); }
  td_dim known = 1;
  for (int i = 0; i < rank; i++) {
    if (sv->items[i].k == V_INT && sv->items[i].i == -1) {
      if (infer >= 0) { td_error(c->diags, sv->items[i].span, "only one dimension can be -1"); return el_err(); }
      infer = i;
      continue;
    }
    if (el_size_arg(c, &sv->items[i], &shape[i], "a dimension")) return el_err();
    known = td_dim_mul(c->g, known, shape[i]);
  }
  if (infer >= 0 && TD_DIM_IS_BAD(known)) {
    el_err_overflow(c, sp, "the product of the sizes given to reshape does not fit");
    return el_err();
  }
  if (infer >= 0) {
    const td_node *n = el_node(c, &a[0]);
    td_dim total = 1;
    for (int i = 0; i < n->rank; i++) total = td_dim_mul(c->g, total, n->shape[i]);
    if (td_dim_div(c->g, total, known, &shape[infer])) {
      char t[256], d[64], k[64];
      td_error(c->diags, sp, "cannot reshape %s: %s elements do not divide evenly by %s",
               td_type_str(c->g, n->dtype, n->rank, n->shape, t, sizeof t),
               td_dim_str(c->g, total, d, sizeof d), td_dim_str(c->g, known, k, sizeof k));
      return el_err();
    }
  }
  return el_reshape(c, &a[0], rank, shape, sp);
}

static td_value b_transpose(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "transpose")) return el_err();
  int rank = el_node(c, &a[0])->rank, perm[TD_MAX_RANK];
  for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
  if (a[1].k != V_NONE) {
    int x, y;
    if (a[2].k == V_NONE) { td_error(c->diags, sp, "transpose(x, a, b) needs both axes"); return el_err(); }
    if (el_axis(c, &a[1], rank, &x) || el_axis(c, &a[2], rank, &y)) return el_err();
    for (int i = 0; i < rank; i++) perm[i] = i;
    perm[x] = y;
    perm[y] = x;
  }
  return el_permute(c, &a[0], perm, sp);
}

static td_value b_permute(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "permute")) return el_err();
  int rank = el_node(c, &a[0])->rank, perm[TD_MAX_RANK];
  if ((a[1].k != V_LIST && a[1].k != V_TUPLE) || a[1].n != rank) {
    td_error(c->diags, a[1].span, "permute needs a list of %d axes", rank);
    return el_err();
  }
  unsigned seen = 0;
  for (int i = 0; i < rank; i++) {
    if (el_axis(c, &a[1].items[i], rank, &perm[i])) return el_err();
    if (seen >> perm[i] & 1) { td_error(c->diags, a[1].items[i].span, "axis %d appears twice", perm[i]); return el_err(); }
    seen |= 1u << perm[i];
  }
  return el_permute(c, &a[0], perm, sp);
}

static int list_arg(el_ctx *c, const td_value *v, const char *fn) {
  if (v->k == V_LIST || v->k == V_TUPLE) return 0;
  if (v->k != V_ERR) td_error(c->diags, v->span, "%s() takes a list of tensors, e.g. %s([a, b])", fn, fn);
  return -1;
}

static td_value b_unsqueeze(el_ctx *c, const td_value *x, const td_value *axv, td_span sp) {
  if (want_tensor(c, x, "unsqueeze")) return el_err();
  const td_node *n = el_node(c, x);
  int ax;
  if (el_axis(c, axv, n->rank + 1, &ax)) return el_err();
  td_dim s[TD_MAX_RANK];
  if (n->rank + 1 > TD_MAX_RANK) { td_error(c->diags, sp, "at most %d dimensions", TD_MAX_RANK); return el_err(); }
  for (int i = 0, k = 0; i <= n->rank; i++) s[i] = i == ax ? 1 : n->shape[k++];
  return el_reshape(c, x, n->rank + 1, s, sp);
}

static td_value b_stack(el_ctx *c, td_value *a, td_span sp) {
  if (list_arg(c, &a[0], "stack")) return el_err();
  td_value ax = a[1].k == V_NONE ? el_int(0, sp) : a[1];
  td_value *xs = td_arena_alloc(c->arena, (size_t)(a[0].n + 1) * sizeof *xs);
  if (!xs) return el_err();
  for (int i = 1; i < a[0].n; i++) { /* same shapes (checked here to name them as given) */
    const td_value *x0 = &a[0].items[0], *xi = &a[0].items[i];
    if (x0->k != V_TENSOR || xi->k != V_TENSOR) break; /* reported below */
    const td_node *n0 = el_node(c, x0), *ni = el_node(c, xi);
    if (n0->rank != ni->rank || memcmp(n0->shape, ni->shape, (size_t)n0->rank * sizeof *n0->shape)) {
      char t0[256], ti[256];
      td_diag *g = td_error(c->diags, sp, "stack needs tensors of one shape: %s and %s differ",
                            td_type_str(c->g, n0->dtype, n0->rank, n0->shape, t0, sizeof t0),
                            td_type_str(c->g, ni->dtype, ni->rank, ni->shape, ti, sizeof ti));
      td_diag_note(c->diags, g, x0->span, "%s comes from here", t0);
      td_diag_note(c->diags, g, xi->span, "%s comes from here", ti);
      return el_err();
    }
  }
  for (int i = 0; i < a[0].n; i++)   /* named as stack's, not as the unsqueeze it is made of */
    if (a[0].items[i].k != V_TENSOR) {
      if (a[0].items[i].k == V_ERR) return el_err();
      int numbers = 1;
      for (int j = 0; j < a[0].n; j++) numbers &= a[0].items[j].k == V_INT || a[0].items[j].k == V_FLOAT ||
                                                  a[0].items[j].k == V_BOOL;
      td_diag *g = td_error(c->diags, a[0].items[i].span, "stack() stacks tensors, but element %d of the list is %s",
                            i, el_kind_name(&a[0].items[i]));
      if (numbers)
        td_diag_help(c->diags, g, "to make a tensor of these numbers write tensor(%s)",
                     td_span_text(c->diags, a[0].span));
      return el_err();
    }
  for (int i = 0; i < a[0].n; i++) {
    xs[i] = b_unsqueeze(c, &a[0].items[i], &ax, sp);
    if (xs[i].k == V_ERR) return el_err();
  }
  int axis = 0;
  if (a[0].n && el_axis(c, &ax, el_node(c, &xs[0])->rank, &axis)) return el_err();
  return el_concat(c, xs, a[0].n, axis, sp);
}

/* ---- tensor literals ---- */

#define RAGGED_HELP "every row of a tensor literal has the same length, e.g. tensor([[1, 2], [3, 4]])"

/* The literal's nesting: its shape (from the first item at each depth)
 * and its kind (2 when a float appears, 1 for ints only, 0 for bools
 * only, -1 before the first number, which fixes the rank).  v is at
 * depth `depth`; -1 after a diagnostic naming the ragged or misplaced
 * item. */
static int literal_shape(el_ctx *c, const td_value *v, int depth, int *rank, td_dim *shape, int *kind) {
  int is_list = v->k == V_LIST || v->k == V_TUPLE;
  if (depth == *rank && is_list && *kind < 0) {   /* the first path sets the shape */
    if (*rank == TD_MAX_RANK) { td_error(c->diags, v->span, "a tensor literal has at most %d dimensions", TD_MAX_RANK); return -1; }
    shape[(*rank)++] = v->n;
  } else if (depth < *rank && !is_list) {
    td_diag *g = td_error(c->diags, v->span, "ragged tensor literal: expected a list of %lld items here, found %s",
                          (long long)shape[depth], el_kind_name(v));
    td_diag_help(c->diags, g, RAGGED_HELP);
    return -1;
  }
  if (!is_list) {
    if (v->k != V_INT && v->k != V_FLOAT && v->k != V_BOOL) {
      td_diag *g = td_error(c->diags, v->span, "tensor() takes numbers and lists of numbers, found %s", el_kind_name(v));
      td_diag_help(c->diags, g, v->k == V_TENSOR ? "to combine tensors use stack([...]) or concat([...])"
                   : RAGGED_HELP);
      return -1;
    }
    int k = v->k == V_FLOAT ? 2 : v->k == V_INT;
    if (k > *kind) *kind = k;
    return 0;
  }
  if (depth >= *rank) {
    td_diag *g = td_error(c->diags, v->span, "ragged tensor literal: expected a number here, found a list");
    td_diag_help(c->diags, g, RAGGED_HELP);
    return -1;
  }
  if (v->n != shape[depth]) {
    td_diag *g = td_error(c->diags, v->span, "ragged tensor literal: this list has %d item%s, the first at its depth has %lld",
                          v->n, v->n == 1 ? "" : "s", (long long)shape[depth]);
    td_diag_help(c->diags, g, RAGGED_HELP);
    return -1;
  }
  for (int i = 0; i < v->n; i++)
    if (literal_shape(c, &v->items[i], depth + 1, rank, shape, kind)) return -1;
  return 0;
}

/* The numbers of a well-formed literal, in C order, into out[*n...). */
static void literal_items(const td_value *v, td_value *out, int *n) {
  if (v->k != V_LIST && v->k != V_TUPLE) { out[(*n)++] = *v; return; }
  for (int i = 0; i < v->n; i++) literal_items(&v->items[i], out, n);
}

/* tensor([[1, 2], [3, 4]], dtype = ...): torch.tensor.  The default dtype
 * is bool for bools only, i64 for ints, f32 once a float appears (as
 * PyTorch).  The graph holds one constant per number, concatenated. */
static td_value b_tensor(el_ctx *c, td_value *a, td_span sp) {
  int rank = 0, kind = -1;
  td_dim shape[TD_MAX_RANK];
  if (literal_shape(c, &a[0], 0, &rank, shape, &kind)) return el_err();
  td_dtype dt;
  if (opt_dtype(c, &a[1], kind == 1 ? TD_I64 : kind == 0 ? TD_BOOL : TD_F32, &dt)) return el_err();
  int64_t total = 1;
  for (int i = 0; i < rank; i++) total *= shape[i];
  if (rank == 0) {   /* tensor(3.5): a rank-0 tensor */
    int k = el_as_tensor(c, &a[0], dt, sp);
    return k < 0 ? el_err() : el_tensor(k, sp);
  }
  if (total == 0) {
    td_value z = el_float(0, sp);
    int k = el_as_tensor(c, &z, dt, sp);
    if (k < 0) return el_err();
    td_value zt = el_tensor(k, sp);
    return el_broadcast_to(c, &zt, rank, shape, sp);
  }
  td_value *nums = td_arena_alloc(c->arena, (size_t)total * sizeof *nums);
  if (!nums) { td_error(c->diags, sp, "out of memory"); return el_err(); }
  int n = 0;
  literal_items(&a[0], nums, &n);
  td_dim one = 1;
  for (int i = 0; i < n; i++) {
    int k = el_as_tensor(c, &nums[i], dt, nums[i].span);
    if (k < 0) return el_err();
    td_value t = el_tensor(k, nums[i].span);
    nums[i] = el_reshape(c, &t, 1, &one, nums[i].span);
    if (nums[i].k == V_ERR) return el_err();
  }
  td_value flat = el_concat(c, nums, n, 0, sp);
  return flat.k == V_ERR || rank == 1 ? flat : el_reshape(c, &flat, rank, shape, sp);
}

static td_value b_split(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "split")) return el_err();
  const td_node *n = el_node(c, &a[0]);
  int rank = n->rank, ax = 0;
  if (a[2].k != V_NONE && el_axis(c, &a[2], rank, &ax)) return el_err();
  if (rank == 0) { td_error(c->diags, sp, "cannot split a rank-0 tensor"); return el_err(); }
  if (a[1].k != V_INT || a[1].i <= 0 || a[1].i > 4096) {
    td_error(c->diags, a[1].span, "split's count must be a positive integer");
    return el_err();
  }
  int64_t parts = a[1].i;
  td_dim len = n->shape[ax], piece;
  if (td_dim_div(c->g, len, parts, &piece)) {
    char d[64];
    td_error(c->diags, sp, "cannot split a dimension of size %s into %lld equal parts",
             td_dim_str(c->g, len, d, sizeof d), (long long)parts);
    return el_err();
  }
  td_value r = el_none(sp);
  r.k = V_TUPLE;
  r.n = (int)parts;
  r.items = td_arena_alloc(c->arena, (size_t)(parts + 1) * sizeof *r.items);
  if (!r.items) return el_err();
  for (int64_t p = 0; p < parts; p++) {
    int kind[TD_MAX_RANK] = {0};
    td_value lo[TD_MAX_RANK], hi[TD_MAX_RANK], st[TD_MAX_RANK];
    for (int i = 0; i < TD_MAX_RANK; i++) lo[i] = hi[i] = st[i] = el_none(sp);
    kind[ax] = 2;
    lo[ax] = el_size(c, td_dim_mul(c->g, piece, p), sp);
    hi[ax] = el_size(c, td_dim_mul(c->g, piece, p + 1), sp);
    r.items[p] = el_apply_index(c, a[0].node, kind, lo, hi, st, sp);
    if (r.items[p].k == V_ERR) return el_err();
  }
  return r;
}

static td_value b_squeeze(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "squeeze")) return el_err();
  const td_node *n = el_node(c, &a[0]);
  td_dim s[TD_MAX_RANK];
  int k = 0, ax = -1;
  if (a[1].k != V_NONE) {
    if (el_axis(c, &a[1], n->rank, &ax)) return el_err();
    if (n->shape[ax] != 1) {
      char d[64];
      td_error(c->diags, a[1].span, "cannot squeeze axis %d: its size is %s, not 1", ax, td_dim_str(c->g, n->shape[ax], d, sizeof d));
      return el_err();
    }
  }
  for (int i = 0; i < n->rank; i++)
    if (!(n->shape[i] == 1 && (ax < 0 || ax == i))) s[k++] = n->shape[i];
  return el_reshape(c, &a[0], k, s, sp);
}

static td_value b_take(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "take") || want_tensor(c, &a[1], "take")) return el_err();
  const td_node *x = el_node(c, &a[0]), *ix = el_node(c, &a[1]);
  if (ix->dtype != TD_I32 && ix->dtype != TD_I64) {
    td_diag *g = td_error(c->diags, a[1].span, "take's indices must be integers, found %s", td_dtype_name(ix->dtype));
    td_diag_help(c->diags, g, "convert with i64(idx)");
    return el_err();
  }
  int ax = 0;
  if (x->rank == 0) { td_error(c->diags, sp, "take needs a tensor of rank 1 or more"); return el_err(); }
  if (a[2].k != V_NONE && el_axis(c, &a[2], x->rank, &ax)) return el_err();
  int rank = x->rank - 1 + ix->rank;
  if (rank > TD_MAX_RANK) { td_error(c->diags, sp, "the result would have more than %d dimensions", TD_MAX_RANK); return el_err(); }
  td_dim s[TD_MAX_RANK];
  int k = 0;
  for (int i = 0; i < ax; i++) s[k++] = x->shape[i];
  for (int i = 0; i < ix->rank; i++) s[k++] = ix->shape[i];
  for (int i = ax + 1; i < x->rank; i++) s[k++] = x->shape[i];
  td_attr at;
  memset(&at, 0, sizeof at);
  at.axis = ax;
  int in[2] = {a[0].node, a[1].node};
  return tensor_of(el_emit(c, TD_IR_GATHER, x->dtype, rank, s, in, 2, &at, sp), sp);
}

static td_value b_one_hot(el_ctx *c, td_value *a, td_span sp) {
  if (want_tensor(c, &a[0], "one_hot")) return el_err();
  td_dim n;
  td_dtype dt;
  if (el_size_arg(c, &a[1], &n, "one_hot's class count") || opt_dtype(c, &a[2], TD_F32, &dt)) return el_err();
  const td_node *ix = el_node(c, &a[0]);
  if (ix->dtype != TD_I32 && ix->dtype != TD_I64) { td_error(c->diags, a[0].span, "one_hot needs integer indices"); return el_err(); }
  td_value last = el_int(-1, sp);
  td_value u = b_unsqueeze(c, &a[0], &last, sp);
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i2 = 1;
  at.f2 = 1;
  td_value r = tensor_of(el_emit(c, TD_IR_ARANGE, ix->dtype, 1, &n, NULL, 0, &at, sp), sp);
  td_value eq = el_binary(c, TD_OP_EQ, &u, &r, sp);
  return eq.k == V_ERR ? eq : el_cast(c, &eq, dt, sp);
}

/* print(a, b, ...): literal parts and tensor inputs of one PRINT node. */
static td_value b_print(el_ctx *c, td_value *args, const char **kw, int n, td_span sp) {
  td_print_part *parts = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *parts);
  int *ins = td_arena_alloc(c->arena, (size_t)(n + 1) * sizeof *ins);
  if (!parts || !ins) return el_err();
  int ni = 0;
  for (int i = 0; i < n; i++) {
    if (kw[i]) { td_error(c->diags, args[i].span, "print() takes no keyword arguments"); return el_err(); }
    td_value *v = &args[i];
    parts[i].input = -1;
    switch (v->k) {
    case V_STR: parts[i].text = v->s; break;
    case V_INT: parts[i].text = td_arena_printf(c->arena, "%lld", (long long)v->i); break;
    case V_FLOAT: parts[i].text = td_arena_printf(c->arena, "%.8g", v->f); break;
    case V_BOOL: parts[i].text = v->i ? "true" : "false"; break;
    case V_SIZE: case V_TENSOR: {
      int id = v->k == V_SIZE ? el_as_tensor(c, v, TD_I64, v->span) : v->node;
      if (id < 0) return el_err();
      parts[i].input = ni;
      ins[ni++] = id;
      break;
    }
    case V_ERR: return el_err();
    default:
      td_error(c->diags, v->span, "print() cannot show %s", el_kind_name(v));
      return el_err();
    }
  }
  td_attr at;
  memset(&at, 0, sizeof at);
  at.parts = parts;
  at.n_parts = n;
  if (el_emit(c, TD_IR_PRINT, TD_BOOL, 0, NULL, ins, ni, &at, sp) < 0) return el_err();
  return el_none(sp);
}

static td_value b_other(el_ctx *c, const builtin *b, td_value *a, td_span sp) {
  switch (b->op) {
  case 0: return el_where(c, &a[0], &a[1], &a[2], sp);
  case 1: { /* clamp(x, lo, hi) = minimum(maximum(x, lo), hi) */
    td_value r = a[0];
    if (want_tensor(c, &r, "clamp")) return el_err();
    if (el_node(c, &r)->dtype == TD_BOOL) { /* as el_unary_op says for every other elementwise op */
      td_error(c->diags, sp, "clamp on bool values; convert with f32(x) first");
      return el_err();
    }
    if (a[1].k != V_NONE) r = el_binary_ir(c, TD_IR_MAX, &r, &a[1], sp);
    if (r.k != V_ERR && a[2].k != V_NONE) r = el_binary_ir(c, TD_IR_MIN, &r, &a[2], sp);
    return r;
  }
  case 2: return b_reshape(c, a, sp);
  case 3: return b_transpose(c, a, sp);
  case 4: return b_permute(c, a, sp);
  case 5: {
    if (list_arg(c, &a[0], "concat")) return el_err();
    int axis = 0;
    if (a[1].k != V_NONE) {
      if (a[1].k != V_INT) { td_error(c->diags, a[1].span, "axis must be an integer"); return el_err(); }
      axis = (int)a[1].i;
    }
    return el_concat(c, a[0].items, a[0].n, axis, sp);
  }
  case 6: return b_stack(c, a, sp);
  case 7: return b_split(c, a, sp);
  case 18: return b_tensor(c, a, sp);
  case 8: {
    int rank;
    td_dim shape[TD_MAX_RANK];
    if (el_shape_arg(c, &a[1], &rank, shape, sp)) return el_err();
    return el_broadcast_to(c, &a[0], rank, shape, sp);
  }
  case 9: return b_squeeze(c, a, sp);
  case 10: return b_unsqueeze(c, &a[0], &a[1], sp);
  case 11: {
    if (want_tensor(c, &a[0], "flatten")) return el_err();
    const td_node *n = el_node(c, &a[0]);
    td_dim total = 1;
    for (int i = 0; i < n->rank; i++) total = td_dim_mul(c->g, total, n->shape[i]);
    return el_reshape(c, &a[0], 1, &total, sp);
  }
  case 12: return b_take(c, a, sp);
  case 13: return b_one_hot(c, a, sp);
  case 17:
    /* a compile-time error of the program's own, for what a library
     * cannot compute with (dropout's p outside [0, 1)) */
    if (a[0].k != V_STR) { td_error(c->diags, a[0].span, "error() takes a string, found %s", el_kind_name(&a[0])); return el_err(); }
    td_error(c->diags, sp, "%s", a[0].s);
    return el_err();
  case 15: case 16: {
    td_diag *g = td_error(c->diags, sp, "%s() initialises a param; it is only allowed after `param name: type =`", b->name);
    td_diag_help(c->diags, g, "for random tensors inside a computation use rand(shape) or randn(shape)");
    return el_err();
  }
  }
  return el_err();
}

td_value el_builtin_call(el_ctx *c, int bi, td_value *args, const char **kw, int n,
                         td_span sp, const td_ast *call) {
  (void)call;
  const builtin *b = &table[bi];
  if (b->kind == B_OTHER && b->op == 14) return b_print(c, args, kw, n, sp);
  if (b->kind == B_EXTRA && b->op == 7) return el_einsum(c, args, kw, n, sp);
  td_value a[BUILTIN_MAX_PARAMS];
  if (getargs(c, b, args, kw, n, a, sp)) return el_err();
  for (int i = 0; i < BUILTIN_MAX_PARAMS && b->params[i]; i++)
    if (a[i].k == V_ERR) return el_err();
  switch (b->kind) {
  case B_UNARY: return b_unary(c, b, &a[0], sp);
  case B_BINARY:
    if ((a[0].k == V_INT || a[0].k == V_FLOAT) && (a[1].k == V_INT || a[1].k == V_FLOAT)) {
      double x = a[0].k == V_FLOAT ? a[0].f : (double)a[0].i, y = a[1].k == V_FLOAT ? a[1].f : (double)a[1].i;
      int both_int = a[0].k == V_INT && a[1].k == V_INT;
      if (b->op == TD_IR_MIN) return both_int ? el_int(a[0].i < a[1].i ? a[0].i : a[1].i, sp) : el_float(fmin(x, y), sp);
      if (b->op == TD_IR_MAX) return both_int ? el_int(a[0].i > a[1].i ? a[0].i : a[1].i, sp) : el_float(fmax(x, y), sp);
      return el_float(pow(x, y), sp);
    }
    return el_binary_ir(c, (td_op)b->op, &a[0], &a[1], sp);
  case B_REDUCE: return b_reduce(c, b, a, sp);
  case B_CAST: return b_cast(c, b, a, sp);
  case B_CREATE: return b_create(c, b, a, sp);
  case B_OTHER: return b_other(c, b, a, sp);
  case B_TRAIN: return el_train_builtin(c, b->op, a, sp);
  case B_SCAN: return el_scan_builtin(c, b->op, a, sp);
  case B_CONV: return el_conv_builtin(c, b->op, a, sp);
  case B_IO: return el_io_builtin(c, b->op, a, sp);
  case B_EXTRA: return el_extra_builtin(c, b->op, a, sp);
  }
  return el_err();
}

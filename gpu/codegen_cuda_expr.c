/* codegen_cuda_expr.c - the value of one IR node at one index, as CUDA C
 * text: this backend's pieces of the shared evaluator (compiler/kexpr.h).
 *
 * cu_ev(n, ix) returns the name of a local (or a literal) holding node n's
 * value at index ix, emitting the statements that compute it.  The walk
 * (loads outside the kernel; elementwise inputs at their broadcast
 * indices, movement, concat, gather, creation inside it; the memo; the
 * conversion rules) is compiler/kexpr.c's, shared with the CPU generator;
 * the index mappings are compiler/index.c's.  What this file supplies:
 *
 *   ops           every elementwise op as lang/ops.def's C spelling, its
 *                 a, b, c replaced by the operands (the helpers are
 *                 runtime/scalar.h's, compiled into the module), with
 *                 three rules of C++ on top: integer arithmetic written
 *                 with a C operator (+, -, *, unary -) is done in the
 *                 unsigned type of its width, so it wraps (the CPU's
 *                 -fwrapv); bools compare as int32; min/max of bools are
 *                 and/or; a transcendental helper has no integer overload,
 *                 so an integer operand is passed as double;
 *   conversions   the half and float -> int helpers of the module;
 *   loads         b<i>[offset], or a component of this iteration's
 *                 16-byte vector in vectorised pointwise kernels;
 *   branches      gather's bounds check and concat's cases as if/else;
 *   random        the module's td_rand_uniform / td_rand_normal (Philox).
 */
#include <string.h>

#include "gpu/codegen_cuda_impl.h"

/* ---- ops: ops.def's C column ---- */

static int ident_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* ops.def's C spelling of op with its operands a, b, c replaced by
 * pre + a[k]; in parentheses unless it is a call of a scalar.h helper. */
static const char *spell(cx *c, td_op op, const char *pre, const char *const *a) {
  const char *t = td_ops[op].cexpr;
  size_t widest = 0, n = strlen(t);
  for (int k = 0; k < td_ops[op].arity && k < 3; k++)
    if (strlen(a[k]) > widest) widest = strlen(a[k]);
  char *r = td_arena_alloc(c->a, n * (strlen(pre) + widest + 1) + 3);
  if (!r) {
    if (!c->failed) td_err_set(c->err, "out of memory");
    c->failed = 1;
    return "0";
  }
  int call = !strncmp(t, "td_", 3);
  char *o = r;
  if (!call) *o++ = '(';
  for (const char *p = t; *p; p++) {
    int k = *p - 'a';
    if (k >= 0 && k < 3 && k < td_ops[op].arity && (p == t || !ident_char(p[-1])) && !ident_char(p[1])) {
      o += strlen(strcpy(o, pre));
      o += strlen(strcpy(o, a[k]));
    } else *o++ = *p;
  }
  if (!call) *o++ = ')';
  *o = 0;
  return r;
}

/* The unary helpers of scalar.h with integer overloads (the others take
 * f32 or f64 only). */
static int int_overload(td_op op) {
  return op == TD_IR_ABS || op == TD_IR_RELU || op == TD_IR_FLOOR || op == TD_IR_CEIL || op == TD_IR_ROUND;
}

static void *kx_op(void *be, td_op op, td_dtype dt, void *const *av) {
  cx *c = be;
  const char *a[3] = {"", "", ""};
  for (int k = 0; k < td_ops[op].arity && k < 3; k++) a[k] = av[k];
  if (op == TD_IR_CAST) return NULL;   /* never asked: the evaluator converts */
  if (dt == TD_BOOL && (op == TD_IR_MIN || op == TD_IR_MAX)) op = op == TD_IR_MIN ? TD_IR_AND : TD_IR_OR;
  td_opkind kind = td_ops[op].kind;
  int call = !strncmp(td_ops[op].cexpr, "td_", 3);
  if (kind == TD_K_COMPARE && dt == TD_BOOL) return cu_ixv(spell(c, op, "(int32_t)", a));
  if (!call && (kind == TD_K_UNARY || kind == TD_K_BINARY) && (dt == TD_I32 || dt == TD_I64))
    return cu_ixv(cu_fmt(c, "((%s)%s)", cu_vtn[dt], spell(c, op, cu_fmt(c, "(%s)", cu_utn[dt]), a)));
  if (call && kind == TD_K_UNARY && !td_dtype_is_float(dt) && !int_overload(op))
    return cu_ixv(spell(c, op, "(double)", a));
  return cu_ixv(spell(c, op, "", a));
}

/* ---- conversions: the primitives kexpr.c's rules combine ---- */

static void *kx_cast(void *be, void *a, td_dtype from, td_dtype to) {
  (void)from;
  return cu_ixv(cu_fmt(be, "((%s)%s)", cu_vtn[to], (const char *)a));
}

static void *kx_f2i(void *be, void *a, td_dtype from, td_dtype to) {
  (void)from;
  return cu_ixv(cu_fmt(be, "td_f2i%s((double)%s)", to == TD_I32 ? "32" : "64", (const char *)a));
}

static void *kx_half_to_f32(void *be, void *a, td_dtype from) {
  return cu_ixv(cu_fmt(be, "td_%s_to_f32(%s)", from == TD_F16 ? "f16" : "bf16", (const char *)a));
}

static void *kx_f64_to_f32_odd(void *be, void *a) {
  return cu_ixv(cu_fmt(be, "td_f64_to_f32_odd(%s)", (const char *)a));
}

static void *kx_f32_to_half(void *be, void *a, td_dtype to) {
  return cu_ixv(cu_fmt(be, "td_f32_to_%s(%s)", to == TD_F16 ? "f16" : "bf16", (const char *)a));
}

/* ---- indices: the shared index layer (compiler/index.c) over C source text ---- */

static td_ix *ix_new_b(void *be, int rank) { return cu_ix_new(be, rank); }
static void *ix_cst(void *be, int64_t v) { return cu_ixv(cu_fmt(be, "%lldLL", (long long)v)); }
static void *ix_size(void *be, td_dim d) { return cu_ixv(cu_dim(be, d)); }
static void *ix_add(void *be, void *a, void *b) { return cu_ixv(cu_fmt(be, "%s + %s", (const char *)a, (const char *)b)); }
static void *ix_sub(void *be, void *a, void *b) { return cu_ixv(cu_fmt(be, "%s - %s", (const char *)a, (const char *)b)); }
static void *ix_mul(void *be, void *a, void *b) { return cu_ixv(cu_fmt(be, "%s * %s", (const char *)a, (const char *)b)); }
static void *ix_div(void *be, void *a, void *b) { return cu_ixv(cu_fmt(be, "(%s / %s)", (const char *)a, (const char *)b)); }
static void *ix_mod(void *be, void *a, void *b) { return cu_ixv(cu_fmt(be, "(%s %% %s)", (const char *)a, (const char *)b)); }
static void *ix_keep(void *be, void *a) { return cu_ixv(cu_keep(be, "int64_t", a)); }

/* Derived coordinates are kept in int64_t locals: each use of an
 * expression would repeat its text. */
static const td_ix_ops ix_ops = {ix_new_b, ix_cst, ix_size, ix_add, ix_mul, ix_div, ix_mod, ix_keep, 1};

td_ixgen cu_ixgen(cx *c) {
  return (td_ixgen){&ix_ops, c, c->g, c->a, &c->ixmemo, &c->n_ixmemo, &c->cap_ixmemo};
}

const char *cu_offset(cx *c, int n, const cx_ix *ix) {
  td_ixgen x = cu_ixgen(c);
  const char *off = td_ix_lin(&x, ND(c, n), ix, 0, ND(c, n)->rank);
  return off ? off : "0";
}

/* ---- loads, stores, random numbers ---- */

const char *const cu_lane_name[4] = {"x", "y", "z", "w"};

static const char *load(cx *c, int n, const cx_ix *ix) {
  const char *b = cu_bufname(c, n);
  if (c->vec_lane >= 0) {   /* a component of this iteration's vector */
    int bi = c->p->buf_of[n];
    td_dtype dt = ND(c, n)->dtype;
    if (!c->vec_loaded[bi]) {
      cu_line(c, "const %s4 L%s = ((const %s4 *)%s)[q];", dt == TD_F32 ? "float" : "int", b,
              dt == TD_F32 ? "float" : "int", b);
      c->vec_loaded[bi] = 1;
    }
    return cu_fmt(c, "L%s.%s", b, cu_lane_name[c->vec_lane]);
  }
  if (ND(c, n)->dtype == TD_BOOL) return cu_fmt(c, "(%s[%s] != 0)", b, cu_offset(c, n, ix));
  return cu_fmt(c, "%s[%s]", b, cu_offset(c, n, ix));
}

void cu_store(cx *c, int n, const cx_ix *ix, const char *v) {
  const char *b = cu_bufname(c, n);
  if (ND(c, n)->dtype == TD_BOOL) cu_line(c, "%s[%s] = (uint8_t)%s;", b, cu_offset(c, n, ix), v);
  else cu_line(c, "%s[%s] = %s;", b, cu_offset(c, n, ix), v);
}

static const char *random_value(cx *c, int n, const cx_ix *ix) {
  const td_node *nd = ND(c, n);
  int e = cu_dim_entry(c, 0, n);
  if (e < c->n_dims) c->dim_used[e] = 1;
  /* the key: attr.seed, or the seed input's one element sign-extended
   * (fuse.c materialises it; read directly, never as a vector lane) */
  const char *seed = nd->n_in ? cu_fmt(c, "(uint64_t)(int64_t)%s[0]", cu_bufname(c, nd->in[0]))
                              : cu_fmt(c, "%lluULL", (unsigned long long)nd->attr.seed);
  return cu_fmt(c, "((%s)td_rand_%s(%s, (uint64_t)d%d, (uint64_t)(%s)))", cu_vtn[nd->dtype],
                nd->op == TD_IR_RANDN ? "normal" : "uniform", seed, e, cu_offset(c, n, ix));
}

/* ---- gather and concat: the branches ---- */

/* A negative index is wrapped; a bad one sets the status and reads
 * nothing (the data may be empty). */
static void *kx_take_begin(void *be, td_kxbranch *b, int n, td_dtype dt, void *iv, td_dim size) {
  cx *c = be;
  const char *g = cu_fmt(c, "v%d", c->nv++), *d = cu_dim(c, size);
  cu_line(c, "int64_t %s = %s;", g, (const char *)iv);
  cu_line(c, "if (%s < 0) %s += %s;", g, g, d);
  const char *r = cu_fmt(c, "v%d", c->nv++);
  cu_line(c, "%s %s = 0;", cu_vtn[dt], r);
  cu_line(c, "if (%s < 0 || %s >= %s) *status = %d;", g, g, d, n + 1);
  cu_open(c, "else");
  b->var = cu_ixv(r);
  return cu_ixv(g);
}

static void *kx_take_end(void *be, td_kxbranch *b, void *v) {
  cu_line(be, "%s = %s;", (const char *)b->var, (const char *)v);
  cu_close(be);
  return b->var;
}

static void kx_cat_begin(void *be, td_kxbranch *b, td_dtype dt) {
  cx *c = be;
  const char *r = cu_fmt(c, "v%d", c->nv++);
  cu_line(c, "%s %s;", cu_vtn[dt], r);
  b->var = cu_ixv(r);
}

static void kx_cat_case(void *be, td_kxbranch *b, void *coord, td_dim lim, int last) {
  cx *c = be;
  if (!last) cu_open(c, cu_fmt(c, "if (%s < %s)", (const char *)coord, cu_dim(c, lim)));
  else cu_open(c, "");
  b->last = last;
}

static void kx_cat_value(void *be, td_kxbranch *b, void *v) {
  cx *c = be;
  cu_line(c, "%s = %s;", (const char *)b->var, (const char *)v);
  c->indent--;
  if (!b->last) {
    cu_line(c, "} else {");
    c->indent++;
    b->opened++;
  } else cu_line(c, "}");
}

static void *kx_cat_end(void *be, td_kxbranch *b) {
  while (b->opened--) cu_close(be);
  return b->var;
}

/* ---- the evaluator: kexpr.c's, over C text ---- */

static int kx_failed(void *be) { return ((cx *)be)->failed; }

static void kx_fail(void *be, const char *msg) {
  cx *c = be;
  if (!c->failed) td_err_set(c->err, "%s", msg);
  c->failed = 1;
}

static void *kx_load(void *be, int n, const td_ix *ix) { return cu_ixv(load(be, n, ix)); }
static void *kx_keep(void *be, td_dtype dt, void *v) { return cu_ixv(cu_keep(be, cu_vtn[dt], v)); }
static void *kx_lit(void *be, td_dtype dt, double f, int64_t i) { return cu_ixv(cu_lit(be, dt, f, i)); }
static void *kx_random(void *be, int n, const td_ix *ix) { return cu_ixv(random_value(be, n, ix)); }

static const td_kx_ops kx_ops = {
    .name = "CUDA", .failed = kx_failed, .fail = kx_fail, .load = kx_load, .keep = kx_keep, .lit = kx_lit,
    .random = kx_random, .isub = ix_sub, .op = kx_op, .cast = kx_cast, .f2i = kx_f2i,
    .half_to_f32 = kx_half_to_f32, .f64_to_f32_odd = kx_f64_to_f32_odd, .f32_to_half = kx_f32_to_half,
    .take_begin = kx_take_begin, .take_end = kx_take_end, .cat_begin = kx_cat_begin, .cat_case = kx_cat_case,
    .cat_value = kx_cat_value, .cat_end = kx_cat_end};

td_kxgen cu_kxgen(cx *c) {
  return (td_kxgen){&kx_ops, cu_ixgen(c), c->k, c->in_k, c->red_val, cu_ixv(c->mm_acc),
                    &c->memo, &c->n_memo, &c->cap_memo};
}

const char *cu_ev(cx *c, int n, const cx_ix *ix) {
  td_kxgen x = cu_kxgen(c);
  return td_kx_eval(&x, n, ix);
}

const char *cu_convert(cx *c, const char *a, td_dtype from, td_dtype to) {
  td_kxgen x = cu_kxgen(c);
  return td_kx_convert(&x, cu_ixv(a), from, to);
}

td_kxmark cu_mark(cx *c) { return (td_kxmark){c->n_memo, c->n_ixmemo}; }

void cu_release(cx *c, td_kxmark m) {
  c->n_memo = m.memo;
  c->n_ixmemo = m.ixmemo;
}

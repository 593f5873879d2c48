/* sig.c - binding and checking entry-point arguments and model weights
 * (sig.h), for the interpreter, the compilers and the artifact runtimes.
 *
 * Binding runs in two passes: the first checks each argument's dtype and
 * rank and binds every symbol from the first axis that is exactly that
 * symbol; the second checks every declared size against the actual one,
 * saying where the expected value of a symbol came from.  Problems that
 * can all be reported at once (weights, --in options) are collected one
 * per line into the message, with a count of those that did not fit.
 */
#include "runtime/sig.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mem.h"

/* ---- symbolic sizes ---- */

int64_t td_sizes_eval(const td_sizes *s, td_dim d, const int64_t *symvals) {
  int overflow = 0;
  return td_sizes_eval_ovf(s, d, symvals, &overflow);
}

int64_t td_sizes_eval_ovf(const td_sizes *s, td_dim d, const int64_t *symvals, int *overflow) {
  if (TD_DIM_IS_CONST(d)) return d;
  if (TD_DIM_IS_BAD(d)) {   /* no plan holds it; never index dims[] with it */
    *overflow = 1;
    return -1;
  }
  const td_poly *p = &s->dims[-d - 1];
  uint64_t v = 0;   /* wraps: no undefined behaviour, and *overflow says so */
  for (int i = 0; i < p->n; i++) {
    int64_t m = p->t[i].coef;
    for (int k = 0; k < p->t[i].n; k++)
      if (__builtin_mul_overflow(m, symvals ? symvals[p->t[i].sym[k]] : 0, &m)) *overflow = 1;
    int64_t sum;
    if (__builtin_add_overflow((int64_t)v, m, &sum)) *overflow = 1;
    v += (uint64_t)m;
  }
  return (int64_t)v;
}

char *td_sizes_dim_str(const td_sizes *s, td_dim d, char *buf, size_t n) {
  if (TD_DIM_IS_CONST(d) || TD_DIM_IS_BAD(d) || !s) { /* without a signature, a symbol has no name */
    if (TD_DIM_IS_CONST(d)) snprintf(buf, n, "%lld", (long long)d);
    else snprintf(buf, n, "?");
    return buf;
  }
  const td_poly *p = &s->dims[-d - 1];
  size_t w = 0;
  buf[0] = 0;
  /* highest-degree terms first reads best: "2*N + 1" */
  for (int i = p->n - 1; i >= 0 && w < n; i--) {
    const td_mono *m = &p->t[i];
    int64_t c = m->coef;
    if (i != p->n - 1) w += (size_t)snprintf(buf + w, n - w, c < 0 ? " - " : " + ");
    else if (c < 0) w += (size_t)snprintf(buf + w, n - w, "-");
    if (w >= n) break;
    uint64_t ac = c < 0 ? 0 - (uint64_t)c : (uint64_t)c;   /* INT64_MIN too */
    if (m->n == 0 || ac != 1) w += (size_t)snprintf(buf + w, n - w, "%llu%s", (unsigned long long)ac, m->n ? "*" : "");
    for (int k = 0; k < m->n && w < n; k++)
      w += (size_t)snprintf(buf + w, n - w, "%s%s", k ? "*" : "", s->syms[m->sym[k]]);
  }
  return buf;
}

char *td_sizes_type_str(const td_sizes *s, td_dtype dt, int rank, const td_dim *shape,
                        char *buf, size_t n) {
  size_t w = (size_t)snprintf(buf, n, "%s[", td_dtype_name(dt));
  for (int i = 0; i < rank && w < n; i++) {
    char d[128];
    w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : "", td_sizes_dim_str(s, shape[i], d, sizeof d));
  }
  if (w < n) snprintf(buf + w, n - w, "]");
  return buf;
}

/* The symbol of a dim that is exactly one symbol with coefficient 1, or -1. */
static int single_sym(const td_sizes *s, td_dim d) {
  if (TD_DIM_IS_CONST(d)) return -1;
  const td_poly *p = &s->dims[-d - 1];
  if (p->n != 1 || p->t[0].coef != 1 || p->t[0].n != 1) return -1;
  return p->t[0].sym[0];
}

/* The first symbol of d not yet bound, or -1. */
static int unbound_sym(const td_sizes *s, td_dim d, const int *bound_arg) {
  if (TD_DIM_IS_CONST(d)) return -1;
  const td_poly *p = &s->dims[-d - 1];
  for (int i = 0; i < p->n; i++)
    for (int k = 0; k < p->t[i].n; k++)
      if (bound_arg[p->t[i].sym[k]] < 0) return p->t[i].sym[k];
  return -1;
}

/* ---- binding ---- */

static const char *arg_name(const td_sig_arg *a, int k, char *buf, size_t len) {
  if (a->name) return a->name;
  snprintf(buf, len, "#%d", k);
  return buf;
}

/* "argument 'x': expected f32[N, 4], got f32[3, 5]: " and the reason. */
static int arg_error(const td_sizes *s, const td_sig_arg *a, int k, const td_tensor *t,
                     td_err *err, const char *reason) {
  char nb[32], want[256], got[256];
  td_sizes_type_str(s, a->dtype, a->rank, a->shape, want, sizeof want);
  td_shape_str(t->dtype, t->rank, t->shape, got, sizeof got);
  return td_err_set(err, "argument '%s': expected %s, got %s: %s", arg_name(a, k, nb, sizeof nb),
                    want, got, reason);
}

/* Where each symbol was bound: the argument and its axis (-1: unbound). */
typedef struct binding {
  int *arg, *axis;
} binding;

/* Pass 1: dtype and rank of every argument, and the symbols they bind. */
static int bind_pass(const td_sizes *s, const td_sig_arg *args, int n, const td_tensor *const *got,
                     int64_t *symvals, binding *b, td_err *err) {
  char why[256], nb[32];
  for (int k = 0; k < n; k++) {
    const td_sig_arg *a = &args[k];
    const td_tensor *t = got[k];
    if (!t) return td_err_set(err, "argument '%s' is missing", arg_name(a, k, nb, sizeof nb));
    if (t->dtype != a->dtype) {
      snprintf(why, sizeof why, "dtype is %s, expected %s", td_dtype_name(t->dtype), td_dtype_name(a->dtype));
      return arg_error(s, a, k, t, err, why);
    }
    if (t->rank != a->rank) {
      snprintf(why, sizeof why, "rank is %d, expected %d", t->rank, a->rank);
      return arg_error(s, a, k, t, err, why);
    }
    for (int d = 0; d < a->rank; d++) {
      int sym = single_sym(s, a->shape[d]);
      if (sym >= 0 && b->arg[sym] < 0) {
        symvals[sym] = t->shape[d];
        b->arg[sym] = k;
        b->axis[sym] = d;
      }
    }
  }
  return 0;
}

/* Why size d of argument k is not what it should be, into why. */
static void size_reason(const td_sizes *s, const td_sig_arg *args, int k, int d, int64_t have,
                        int64_t want, const binding *b, char *why, size_t n) {
  char ds[128], nb[32];
  td_dim dim = args[k].shape[d];
  int sym = single_sym(s, dim);
  td_sizes_dim_str(s, dim, ds, sizeof ds);
  if (TD_DIM_IS_CONST(dim))
    snprintf(why, n, "dimension %d is %lld, expected %s", d, (long long)have, ds);
  else if (sym >= 0)
    snprintf(why, n, "dimension %d is %lld, expected %s = %lld (from argument '%s', dimension %d)", d,
             (long long)have, ds, (long long)want,
             arg_name(&args[b->arg[sym]], b->arg[sym], nb, sizeof nb), b->axis[sym]);
  else
    snprintf(why, n, "dimension %d is %lld, expected %s = %lld", d, (long long)have, ds, (long long)want);
}

/* Pass 2: every declared dim against the actual size. */
static int check_pass(const td_sizes *s, const td_sig_arg *args, int n, const td_tensor *const *got,
                      const int64_t *symvals, const binding *b, td_err *err) {
  char why[512], ds[128];
  for (int k = 0; k < n; k++) {
    const td_tensor *t = got[k];
    for (int d = 0; d < args[k].rank; d++) {
      td_dim dim = args[k].shape[d];
      int u = unbound_sym(s, dim, b->arg), ovf = 0;
      int64_t want = u < 0 ? td_sizes_eval_ovf(s, dim, symvals, &ovf) : 0;
      if (u < 0 && !ovf && want == t->shape[d]) continue; /* the common case: no text */
      if (ovf) {
        snprintf(why, sizeof why, "size %s of dimension %d does not fit in 64 bits for these sizes",
                 td_sizes_dim_str(s, dim, ds, sizeof ds), d);
        return arg_error(s, &args[k], k, t, err, why);
      }
      if (u >= 0) {
        snprintf(why, sizeof why, "size %s of dimension %d needs %s, which no argument "
                 "dimension binds on its own", td_sizes_dim_str(s, dim, ds, sizeof ds), d, s->syms[u]);
        return arg_error(s, &args[k], k, t, err, why);
      }
      size_reason(s, args, k, d, t->shape[d], want, b, why, sizeof why);
      return arg_error(s, &args[k], k, t, err, why);
    }
  }
  return 0;
}

int td_sig_bind(const td_sizes *s, const td_sig_arg *args, int n, const td_tensor *const *got,
                int64_t *symvals, td_err *err) {
  int ns = s->n_syms > 0 ? s->n_syms : 1;
  int *mem = td_malloc(2 * (size_t)ns * sizeof *mem);
  if (!mem) return td_err_set(err, "out of memory");
  binding b = {mem, mem + ns};
  for (int i = 0; i < s->n_syms; i++) {
    symvals[i] = 0;
    b.arg[i] = -1;
  }
  int rc = bind_pass(s, args, n, got, symvals, &b, err);
  if (rc == 0) rc = check_pass(s, args, n, got, symvals, &b, err);
  td_free(mem);
  if (rc == 0) td_sig_derive(s->syms, s->n_syms, symvals);
  return rc;
}

void td_sig_derive(const char *const *syms, int n_syms, int64_t *symvals) {
  for (int i = 0; syms && i < n_syms; i++) {
    const char *d = syms[i] ? strstr(syms[i], "//") : NULL;
    if (!d) continue;
    for (const char *e; (e = strstr(d + 2, "//"));) d = e;   /* "T//3//2": (T//3)//2 */
    long long k = atoll(d + 2);
    size_t len = (size_t)(d - syms[i]);
    symvals[i] = 0;
    for (int j = 0; j < i; j++)
      if (syms[j] && strlen(syms[j]) == len && !strncmp(syms[j], syms[i], len)) {
        symvals[i] = k >= 1 && symvals[j] > 0 ? symvals[j] / k : 0;
        break;
      }
  }
}

/* ---- problems, one per line ---- */

/* Problems collected one per line into err->msg; later ones are counted
 * when it is full. */
typedef struct problems {
  char *buf;
  size_t cap, len;
  int n, dropped;
} problems;

static void problem(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(problems *p, const char *fmt, ...) {
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t need = strlen(line) + (p->len ? 1 : 0);
  p->n++;
  if (p->dropped || p->len + need + 48 >= p->cap) {
    p->dropped++;
    return;
  }
  p->len += (size_t)snprintf(p->buf + p->len, p->cap - p->len, "%s%s", p->len ? "\n" : "", line);
}

/* -1 after closing the list with the count of dropped problems; 0 when
 * there were none. */
static int problems_end(problems *p) {
  if (p->n == 0) return 0;
  if (p->dropped)
    snprintf(p->buf + p->len, p->cap - p->len, "\n(and %d more problem%s)", p->dropped,
             p->dropped == 1 ? "" : "s");
  return -1;
}

/* ---- weights ---- */

/* The first of a[0..n) named name, or -1 (a few arguments: a scan). */
static int named(const td_sig_arg *a, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (a[k].name && strcmp(a[k].name, name) == 0) return k;
  return -1;
}

/* Names sorted for lookups by bsearch: a weights file may hold 100 000
 * tensors, a model as many parameters. */
typedef struct name_ix {
  const char *name;
  int at;                    /* position in the caller's array */
} name_ix;

static int cmp_name_ix(const void *a, const void *b) {
  const name_ix *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->at > y->at) - (x->at < y->at);   /* the first of equal names first */
}

/* The first position of name in the sorted ix[0..n), or -1. */
static int ix_find(const name_ix *ix, int n, const char *name) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (strcmp(ix[mid].name, name) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && strcmp(ix[lo].name, name) == 0 ? ix[lo].at : -1;
}

static void check_param(const td_sig_arg *a, const td_named_tensor *have, const name_ix *have_ix, int n_have,
                        problems *p) {
  char want[256], got[256];
  const char *name = a->name ? a->name : "";
  td_sizes_type_str(NULL, a->dtype, a->rank, a->shape, want, sizeof want);
  int at = ix_find(have_ix, n_have, name);
  const td_tensor *t = at < 0 ? NULL : have[at].tensor;
  if (!t) {
    problem(p, "missing weight '%s' (%s)", name, want);
    return;
  }
  td_shape_str(t->dtype, t->rank, t->shape, got, sizeof got);
  int same = t->rank == a->rank;
  for (int k = 0; same && k < a->rank; k++) same = t->shape[k] == a->shape[k];
  if (t->dtype != a->dtype)
    problem(p, "weight '%s' has dtype %s, expected %s (%s)", name, td_dtype_name(t->dtype),
            td_dtype_name(a->dtype), want);
  else if (!same)
    problem(p, "weight '%s' is %s, expected %s", name, got, want);
}

int td_sig_check_weights(const char *file, const char *what, const td_sig_arg *params, int n,
                         const td_named_tensor *have, int n_have, td_err *err) {
  td_err local;
  td_err *e = err ? err : &local;
  problems p = {e->msg, sizeof e->msg, 0, 0, 0};
  e->msg[0] = 0;
  if (file) p.len = (size_t)snprintf(e->msg, sizeof e->msg, "%s does not fit %s:", file, what ? what : "the model");
  if (p.len >= p.cap) p.len = p.cap - 1;
  name_ix *pix = td_malloc((size_t)(n + 1) * sizeof *pix), *hix = td_malloc((size_t)(n_have + 1) * sizeof *hix);
  if (!pix || !hix) {
    td_free(pix);
    td_free(hix);
    return td_err_set(e, "out of memory");
  }
  int np = 0;
  for (int k = 0; k < n; k++)
    if (params[k].name) pix[np++] = (name_ix){params[k].name, k};
  for (int i = 0; i < n_have; i++) hix[i] = (name_ix){have[i].name, i};
  qsort(pix, (size_t)np, sizeof *pix, cmp_name_ix);
  qsort(hix, (size_t)n_have, sizeof *hix, cmp_name_ix);
  for (int k = 0; k < n; k++) {   /* a parameter named twice is checked once */
    int first = params[k].name ? ix_find(pix, np, params[k].name) : -1;
    if (first < 0 || first == k) check_param(&params[k], have, hix, n_have, &p);
  }
  for (int i = 0; i < n_have; i++)
    if (ix_find(pix, np, have[i].name) < 0)
      problem(&p, "unexpected weight '%s': the model has no parameter of that name", have[i].name);
  td_free(pix);
  td_free(hix);
  return problems_end(&p);
}

/* ---- .npy inputs ---- */

void td_sig_close_inputs(td_npy_file *files, int n) {
  for (int k = 0; k < n; k++) td_npy_close(&files[k]);
}

/* Every --in name that is no argument, then each argument's file. */
static void match_inputs(const char *entry, const td_sig_arg *args, int n, const char *const *names,
                         const char *const *paths, int n_given, const char **path_of, problems *p) {
  for (int i = 0; i < n_given; i++) {
    if (named(args, n, names[i]) >= 0) continue;
    char list[512];
    size_t w = 0;
    list[0] = 0;
    for (int k = 0; k < n && w < sizeof list; k++)
      w += (size_t)snprintf(list + w, sizeof list - w, " %s", args[k].name ? args[k].name : "?");
    problem(p, "%s has no argument named '%s' (arguments:%s)", entry, names[i], list);
  }
  for (int k = 0; k < n; k++) {
    const char *name = args[k].name ? args[k].name : "?";
    path_of[k] = NULL;
    for (int i = 0; i < n_given; i++)
      if (!strcmp(names[i], name)) path_of[k] = paths[i];
    if (!path_of[k])
      problem(p, "missing input for argument '%s' of %s\nhelp: pass it with --in %s=FILE.npy", name, entry, name);
  }
}

int td_sig_open_inputs(const td_sizes *s, const char *entry, const td_sig_arg *args, int n,
                       const char *const *names, const char *const *paths, int n_given,
                       td_npy_file *files, int64_t *symvals, td_err *err) {
  td_err local;
  td_err *e = err ? err : &local;
  problems p = {e->msg, sizeof e->msg, 0, 0, 0};
  const char **path_of = td_malloc((size_t)(n + 1) * sizeof *path_of);
  const td_tensor **heads = td_malloc((size_t)(n + 1) * sizeof *heads);
  e->msg[0] = 0;
  for (int k = 0; k < n; k++) files[k].fd = -1;
  if (!path_of || !heads) {
    td_free(path_of);
    td_free(heads);
    return td_err_set(err, "out of memory");
  }
  match_inputs(entry, args, n, names, paths, n_given, path_of, &p);
  for (int k = 0; k < n; k++) {
    td_err fe;
    if (path_of[k] && td_npy_open(path_of[k], &files[k], &fe) < 0) problem(&p, "%s", fe.msg);
    heads[k] = &files[k].head;
  }
  int rc = problems_end(&p);
  if (rc == 0) rc = td_sig_bind(s, args, n, heads, symvals, e);
  if (rc) td_sig_close_inputs(files, n);
  td_free(path_of);
  td_free(heads);
  return rc;
}

int td_sig_load_inputs(td_npy_file *files, int n, td_tensor **out, td_err *err) {
  int rc = 0;
  for (int k = 0; k < n; k++) out[k] = NULL;
  for (int k = 0; k < n && rc == 0; k++) rc = td_npy_load(&files[k], &out[k], err);
  td_sig_close_inputs(files, n);
  for (int k = 0; rc && k < n; k++) {
    td_tensor_release(out[k]);
    out[k] = NULL;
  }
  return rc;
}

void td_sig_print_errors(FILE *out, const char *prog, const char *msg) {
  for (const char *s = msg; *s;) {
    size_t len = strcspn(s, "\n");
    if (strncmp(s, "help: ", 6)) fprintf(out, "%s: error: ", prog);
    fprintf(out, "%.*s\n", (int)len, s);
    s += len + (s[len] == '\n');
  }
}

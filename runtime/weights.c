/* weights.c - a safetensors file matched to a model's parameters with the
 * options of weights.h: a name prefix replaced, strict or not, dtypes
 * converted to f32.  The checks themselves are runtime/sig.c's
 * td_sig_check_weights, run on the file's entries as the options make them
 * (renamed, converted); this file adds the options and the "did you mean"
 * lines.
 */
#include <stdio.h>
#include <string.h>

#include "runtime/mem.h"
#include "runtime/weights.h"

int td_weights_prefix_ok(const char *s) {
  return s && strchr(s, '=');
}

int td_edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 255) n = 255;
  if (m > 255) m = 255;
  int rows[3][256];   /* rows i - 2, i - 1 and i, in turn */
  for (size_t j = 0; j <= m; j++) rows[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int *row = rows[i % 3], *prev = rows[(i + 2) % 3], *prev2 = rows[(i + 1) % 3];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      int del = prev[j] + 1, ins = row[j - 1] + 1;
      int best = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
        best = prev2[j - 2] + 1;   /* two neighbours swapped: one edit */
      row[j] = best;
    }
  }
  return rows[n % 3][m];
}

/* The name entry `name` is read as under prefix "FROM=TO" (malloc'd). */
static char *renamed(const char *name, const char *prefix) {
  const char *eq = prefix ? strchr(prefix, '=') : NULL;
  size_t nf = eq ? (size_t)(eq - prefix) : 0;
  if (!eq || strncmp(name, prefix, nf)) return td_strdup(name);
  size_t nt = strlen(eq + 1), nr = strlen(name + nf);
  char *s = td_malloc(nt + nr + 1);
  if (!s) return NULL;
  memcpy(s, eq + 1, nt);
  memcpy(s + nt, name + nf, nr + 1);
  return s;
}

static int convertible(td_dtype from, td_dtype to) {
  return to == TD_F32 && (from == TD_F64 || from == TD_F16 || from == TD_BF16);
}

static int find_param(const td_sig_arg *params, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (params[k].name && !strcmp(params[k].name, name)) return k;
  return -1;
}

static int find_have(const td_named_tensor *have, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(have[i].name, name)) return i;
  return -1;
}

/* Appends s to the message (dropping what does not fit). */
static void msg_add(td_err *err, const char *s) {
  size_t len = strlen(err->msg);
  if (len + 1 < sizeof err->msg) snprintf(err->msg + len, sizeof err->msg - len, "%s", s);
}

/* "did you mean" lines for the parameters the file lacks: a file name
 * that ends with the parameter's name (a prefix option fixes all of them),
 * else the nearest name the model lacks, within a third of its length;
 * and how to convert a dtype. */
static void suggest(const td_sig_arg *params, int n, const td_named_tensor *have, int n_have,
                    const td_weights_opts *o, td_err *err) {
  int prefix_said = 0, convert_said = 0, lines = 0;
  char line[768];
  for (int k = 0; k < n && lines < 8; k++) {
    const char *p = params[k].name;
    if (!p || find_param(params, k, p) >= 0) continue;
    int at = find_have(have, n_have, p);
    if (at >= 0) {
      if (!o->convert && !convert_said && have[at].tensor->dtype != params[k].dtype &&
          convertible(have[at].tensor->dtype, params[k].dtype)) {
        msg_add(err, "\nhelp: --weights-convert (the REPL: --convert) converts f64, f16 and bf16 weights to f32");
        convert_said = 1;
        lines++;
      }
      continue;
    }
    size_t lp = strlen(p);
    int best = -1, best_d = 0;
    for (int i = 0; i < n_have; i++) {
      const char *h = have[i].name;
      if (find_param(params, n, h) >= 0) continue;
      size_t lh = strlen(h);
      if (!prefix_said && lh > lp && !strcmp(h + lh - lp, p)) {
        snprintf(line, sizeof line, "\nhelp: the file has '%s': to read its names without '%.*s', "
                 "give --weights-prefix %.*s= (the REPL: --prefix %.*s=)", h, (int)(lh - lp), h,
                 (int)(lh - lp), h, (int)(lh - lp), h);
        msg_add(err, line);
        prefix_said = 1;
        lines++;
        best = -2;
        break;
      }
      int d = td_edit_distance(p, h);
      if (3 * d <= (int)lp && (best < 0 || d < best_d)) {
        best = i;
        best_d = d;
      }
    }
    if (best >= 0) {
      snprintf(line, sizeof line, "\nhelp: did you mean '%s' for the parameter '%s'?", have[best].name, p);
      msg_add(err, line);
      lines++;
    }
  }
}

/* One line naming up to 8 names of a list, into b. */
static size_t name_list(char *b, size_t cap, const char *const *names, int n) {
  size_t w = 0;
  for (int i = 0; i < n && i < 8 && w < cap; i++)
    w += (size_t)snprintf(b + w, cap - w, "%s'%s'", i ? ", " : "", names[i]);
  if (n > 8 && w < cap) w += (size_t)snprintf(b + w, cap - w, " and %d more", n - 8);
  return w < cap ? w : cap - 1;
}

int td_weights_match(const char *file, const char *what, const td_sig_arg *params, int n, const td_st_file *f,
                     const td_weights_opts *o, int *src, char **note, td_err *err) {
  static const td_weights_opts none = {NULL, 0, 0};
  if (!o) o = &none;
  if (note) *note = NULL;
  int nh = f->n, rc = -1;
  td_named_tensor *have = td_calloc((size_t)nh + 1, sizeof *have);
  td_tensor *heads = td_calloc((size_t)nh + 1, sizeof *heads);
  td_sig_arg *sub = td_calloc((size_t)n + 1, sizeof *sub);
  td_named_tensor *hsub = td_calloc((size_t)nh + 1, sizeof *hsub);
  const char **ignored = td_calloc((size_t)nh + 1, sizeof *ignored), **missing = td_calloc((size_t)n + 1, sizeof *missing);
  if (!have || !heads || !sub || !hsub || !ignored || !missing) {
    td_err_set(err, "out of memory");
    goto done;
  }
  for (int i = 0; i < nh; i++) {
    if (!(have[i].name = renamed(f->items[i].name, o->prefix))) {
      td_err_set(err, "out of memory");
      goto done;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(have[j].name, have[i].name)) {
        td_err_set(err, "%s: --weights-prefix %s reads '%s' and '%s' both as '%s'", file, o->prefix,
                   f->items[j].name, f->items[i].name, have[i].name);
        goto done;
      }
    heads[i] = *f->items[i].tensor;
    int k = find_param(params, n, have[i].name);
    if (o->convert && k >= 0 && convertible(heads[i].dtype, params[k].dtype)) heads[i].dtype = params[k].dtype;
    have[i].tensor = &heads[i];
  }
  int nsub = 0, nhsub = 0, ni = 0, nm = 0;
  for (int k = 0; k < n; k++) {
    int i = params[k].name ? find_have(have, nh, params[k].name) : -1;
    src[k] = i;
    if (i >= 0 || !o->lenient) sub[nsub++] = params[k];
    else if (find_param(params, k, params[k].name) < 0) missing[nm++] = params[k].name;
  }
  for (int i = 0; i < nh; i++) {
    if (!o->lenient || find_param(params, n, have[i].name) >= 0) hsub[nhsub++] = have[i];
    else ignored[ni++] = f->items[i].name;
  }
  if (td_sig_check_weights(file, what, sub, nsub, hsub, nhsub, err)) {
    suggest(params, n, have, nh, o, err);
    goto done;
  }
  rc = 0;
  if (note && (ni || nm)) {
    char line[2048];
    size_t w = (size_t)snprintf(line, sizeof line, "%s: loaded %d of %d parameters", file, n - nm, n);
    if (ni && w < sizeof line) {
      w += (size_t)snprintf(line + w, sizeof line - w, "; ignored %d weight%s the model lacks: ", ni, ni == 1 ? "" : "s");
      if (w < sizeof line) w += name_list(line + w, sizeof line - w, ignored, ni);
    }
    if (nm && w < sizeof line) {
      w += (size_t)snprintf(line + w, sizeof line - w, "; %d parameter%s missing from the file kept %s initial value%s: ",
                            nm, nm == 1 ? "" : "s", nm == 1 ? "its" : "their", nm == 1 ? "" : "s");
      if (w < sizeof line) name_list(line + w, sizeof line - w, missing, nm);
    }
    *note = td_strdup(line);
  }
done:
  for (int i = 0; have && i < nh; i++) td_free(have[i].name);
  td_free(have);
  td_free(heads);
  td_free(sub);
  td_free(hsub);
  td_free(ignored);
  td_free(missing);
  return rc;
}

td_tensor *td_weights_load(const td_st_file *f, int i, td_dtype want, td_err *err) {
  td_tensor *t = NULL;
  if (td_safetensors_load(f, i, &t, err)) return NULL;
  if (t->dtype == want) return t;
  if (!convertible(t->dtype, want)) {
    td_err_set(err, "%s: weight '%s' has dtype %s, expected %s", f->path, f->items[i].name,
               td_dtype_name(t->dtype), td_dtype_name(want));
    td_tensor_release(t);
    return NULL;
  }
  td_tensor *c = td_tensor_new(want, t->rank, t->shape, err);
  if (c) {
    float *d = c->data;
    /* td_tensor_get widens f16 and bf16 exactly; a double cast to float
     * rounds to the nearest, ties to even (the default rounding mode) */
    for (int64_t k = 0; k < t->numel; k++) d[k] = (float)td_tensor_get(t, k);
  }
  td_tensor_release(t);
  return c;
}

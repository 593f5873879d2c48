/* program.c - programs: loading files and their imports, the entry
 * points of the main file, and the driver that lowers one entry point to a
 * graph (instantiate its model, make INPUT nodes for its arguments,
 * evaluate its body, turn the result into graph outputs, verify).
 *
 * The evaluation itself is elab.c's; see elab.h for the overview.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lang/elab_impl.h"
#include "runtime/fileio.h"

/* The longest source file read: more is certainly not a program. */
#define SOURCE_MAX ((size_t)64 << 20)

/* ---- modules and loading ---- */

/* The main file, named by the user: read as a stream, so that a pipe
 * (`tdsl check /dev/stdin`, `<(...)`) works.  Imports are found by
 * searching and read with td_io_read_all instead (regular files only). */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = td_malloc(cap + 1);
  int e = buf ? 0 : ENOMEM;
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
    if (n == cap) {
      char *nb = cap > SOURCE_MAX ? NULL : td_realloc(buf, 2 * cap + 1);
      if (!nb) { td_free(buf); buf = NULL; e = cap > SOURCE_MAX ? EFBIG : ENOMEM; break; }
      buf = nb;
      cap *= 2;
    }
  }
  if (buf && ferror(f)) { td_free(buf); buf = NULL; e = errno ? errno : EIO; }
  fclose(f);
  if (buf) { buf[n] = 0; *len = n; }
  errno = e;
  return buf;
}

static const char *dir_of(td_arena *a, const char *path) {
  const char *sl = strrchr(path, '/');
  if (!sl) return ".";
  return td_arena_strndup(a, path, (size_t)(sl - path > 0 ? sl - path : 1));
}

td_program *td_program_new(td_arena *a, td_diags *d) {
  td_program *p = td_arena_alloc(a, sizeof *p);
  if (!p) return NULL;
  p->arena = a;
  p->diags = d;
  p->node_limit = p->node_limit_set = 1000000;
  p->step_limit = 10000000L;
  return p;
}

void td_program_add_search_dir(td_program *p, const char *dir) {
  const char **nd = td_arena_alloc(p->arena, (size_t)(p->n_dirs + 1) * sizeof *nd);
  if (!nd) return;
  if (p->n_dirs) memcpy(nd, p->dirs, (size_t)p->n_dirs * sizeof *nd);
  nd[p->n_dirs++] = td_arena_strdup(p->arena, dir);
  p->dirs = nd;
}

void td_program_dump_ast(td_program *p, FILE *out) {
  if (p->main) td_ast_dump(p->main->ast, out);
}

void td_program_set_node_limit(td_program *p, int n) {
  p->node_limit = p->node_limit_set = n > 0 ? n : 1;
  p->step_limit = 100L * p->node_limit;
}

void td_program_set_seed(td_program *p, uint64_t seed) { p->seed = seed; }

const td_diags *td_program_diags(const td_program *p) { return p->diags; }

static el_module *load_module(td_program *p, const char *name, const char *path,
                              const char *text, size_t len);

/* Finds, or loads and binds, the module that `import` item `it` of module m
 * names; NULL after a diagnostic, or with *oom set when memory ran out. */
static el_module *import_module(td_program *p, el_module *m, const td_ast *it, int *oom) {
  el_module *im = NULL;
  for (int k = 0; k < p->n_mods; k++)
    if (!strcmp(p->mods[k]->name, it->name)) im = p->mods[k];
  if (im && im->loading) {
    td_error(p->diags, it->span, "import cycle: '%s' imports itself through its imports", it->name);
    return NULL;
  }
  if (im) return im;
  const char *dirs[66];
  int nd = 0;
  dirs[nd++] = m->dir;
  for (int k = 0; k < p->n_dirs && nd < 66; k++) dirs[nd++] = p->dirs[k];
  for (int k = 0; k < nd && !im; k++) {
    char *path = td_arena_printf(p->arena, "%s/%s.td", dirs[k], it->name), *txt;
    size_t l;
    int why;
    if (!path) { *oom = 1; return NULL; }
    /* only a regular file, opened without blocking: a FIFO or a device
     * planted on the search path is refused, never waited for */
    if (td_io_read_all(path, SOURCE_MAX, &txt, &l, &why)) {
      if (why == ENOENT || why == ENOTDIR) continue;   /* not in this directory */
      if (why == ENOMEM) { *oom = 1; return NULL; }
      td_error(p->diags, it->span, "cannot read module '%s' from %s: %s", it->name, path, td_io_why(why));
      return NULL;
    }
    im = load_module(p, it->name, path, txt, l);
    td_free(txt);
    if (!im) { *oom = 1; return NULL; }
  }
  if (!im) {
    td_diag *g = td_error(p->diags, it->span, "cannot find module '%s'", it->name);
    td_diag_help(p->diags, g, "looked for %s.td next to this file, in $TDSL_PATH and in the installed stdlib", it->name);
  }
  return im;
}

int el_bind_item(td_program *p, el_module *m, const td_ast *it, int redefine) {
  td_value v = el_none(it->span);
  if (it->kind == TD_A_IMPORT) {
    int oom = 0;
    el_module *im = import_module(p, m, it, &oom);
    if (!im) return oom ? -1 : 0;
    v.k = V_MODULE;
    v.mod = im;
    return el_bind(p, m->globals, it->name, v);
  }
  if (it->kind != TD_A_MODEL && it->kind != TD_A_FN) return 0;
  const td_value *old = el_lookup(m->globals, it->name);
  if (!redefine && old && old->k != V_MODULE) {
    td_error(p->diags, it->span, "'%s' is defined twice in this file", it->name);
    return 0;
  }
  v.k = it->kind == TD_A_MODEL ? V_MODELDEF : V_FUNC;
  v.def = it;
  v.mod = m;
  return el_bind(p, m->globals, it->name, v);
}

/* Binds every item of a module in its globals (imports load the module). */
static int bind_items(td_program *p, el_module *m) {
  for (int i = 0; i < m->ast->n; i++)
    if (el_bind_item(p, m, m->ast->list[i], 0)) return -1;
  return 0;
}

static el_module *load_module(td_program *p, const char *name, const char *path,
                              const char *text, size_t len) {
  int fid = td_diags_add_source(p->diags, path, text, len);
  if (fid < 0) return NULL;
  td_ast *ast = td_parse(p->diags, fid);
  if (!ast) return NULL;
  el_module *m = td_arena_alloc(p->arena, sizeof *m);
  el_module **nm = td_arena_alloc(p->arena, (size_t)(p->n_mods + 1) * sizeof *nm);
  if (!m || !nm) return NULL;
  m->name = td_arena_strdup(p->arena, name);
  m->path = td_arena_strdup(p->arena, path);
  m->dir = dir_of(p->arena, path);
  m->ast = ast;
  m->globals = el_scope_new(p, NULL);
  if (!m->name || !m->path || !m->dir || !m->globals) return NULL;
  if (p->n_mods) memcpy(nm, p->mods, (size_t)p->n_mods * sizeof *nm);
  nm[p->n_mods++] = m;
  p->mods = nm;
  m->loading = 1;
  int r = bind_items(p, m);
  m->loading = 0;
  return r ? NULL : m;
}

/* A step that failed with no error reported ran out of memory (the only
 * failure that returns without a diagnostic). */
static void failed_oom(td_program *p, int errors_before) {
  td_span none = {-1, 0, 0, 0, 0};
  if (p->diags->n_errors == errors_before) td_diags_oom(p->diags, none);
}

int td_program_load_text(td_program *p, const char *path, const char *text) {
  int before = p->diags->n_errors;
  el_module *m = load_module(p, "", path, text, strlen(text));
  if (!m) return failed_oom(p, before), -1;
  p->main = m;
  return p->diags->n_errors > before ? -1 : 0;
}

int td_program_load_file(td_program *p, const char *path) {
  size_t len;
  char *text = read_file(path, &len);
  td_span none = {-1, 0, 0, 0, 0};
  if (!text) {
    if (errno == ENOMEM) td_diags_oom(p->diags, none);
    else td_error(p->diags, none, "cannot read %s: %s", path, strerror(errno ? errno : EIO));
    return -1;
  }
  if (memchr(text, 0, len)) {
    td_error(p->diags, none, "%s is not a text file (it contains NUL bytes)", path);
    td_free(text);
    return -1;
  }
  int before = p->diags->n_errors;
  el_module *m = load_module(p, "", path, text, len);
  td_free(text);
  if (!m) return failed_oom(p, before), -1;
  p->main = m;
  return p->diags->n_errors > before ? -1 : 0;
}

/* ---- entry points ----
 *
 * docs/language.md, "Entry points": a main file that marks any function
 * `export` has exactly fn main() and its exported functions (top-level or
 * methods) as entry points.  A file without `export` keeps the rule from
 * before the marker: fn main(), every method whose arguments all have
 * tensor types of a model whose parameters all have defaults, and every such
 * top-level function that no other function or model of the file uses by
 * name (one that is used is a helper, checked through its callers). */

/* Why fn cannot take its arguments from the command line: NULL when every
 * parameter has a tensor type of fixed rank; else the reason (arena text
 * when p is given, "" without p or when memory ran out), *at the
 * parameter. */
static const char *signature_why(td_program *p, const td_ast *fn, const td_ast **at) {
  for (int i = 0; i < fn->n; i++) {
    const td_ast *pd = fn->list[i], *t = pd->a;
    const char *fmt = NULL, *what = NULL;
    td_dtype dt;
    *at = pd;
    if (!t)
      fmt = "its parameter '%s' has no type%s";
    else if (t->kind == TD_A_TTENSOR) {
      for (int k = 0; k < t->n && !fmt; k++)
        if (t->list[k]->kind == TD_A_ELLIPSIS) fmt = "its parameter '%s' has '...' in its shape (no fixed rank)%s";
    } else if (t->kind != TD_A_TNAME)
      fmt = "its parameter '%s' is not a tensor%s";
    else if (td_dtype_from_name(t->name, &dt))
      fmt = "its parameter '%s' is a compile-time %s, not a tensor", what = t->name;
    if (!fmt) continue;
    const char *why = p ? td_arena_printf(p->arena, fmt, pd->name, what ? what : "") : NULL;
    return why ? why : "";
  }
  return NULL;
}

static int fn_is_entry(td_program *p, const td_ast *fn) {
  const td_ast *at;
  (void)p;
  return fn->n > 0 && !signature_why(NULL, fn, &at);
}

static int model_is_entry(const td_ast *m) {
  for (int i = 0; i < m->n; i++)
    if (!m->list[i]->b) return 0; /* a model parameter without a default */
  return 1;
}

/* Whether the main file marks entry points with `export` (remembered:
 * every lowering asks). */
static int marks_entries(td_program *p) {
  const td_ast *mod = p->main->ast;
  if (p->marked_mod == mod && p->marked_items == mod->n) return p->marked;
  int marked = 0;
  for (int i = 0; i < mod->n && !marked; i++) {
    const td_ast *it = mod->list[i];
    if (it->kind == TD_A_FN && it->ival) marked = 1;
    for (int k = 0; it->kind == TD_A_MODEL && it->a && k < it->a->n; k++)
      if (it->a->list[k]->kind == TD_A_FN && it->a->list[k]->ival) marked = 1;
  }
  p->marked_mod = mod;
  p->marked_items = mod->n;
  return p->marked = marked;
}

/* Where the items of the main file use names: for each name, its first
 * use (a NAME node) by an item, the using function or model (*user) and
 * the model of a using method (*umodel).  A function's uses of a name it
 * binds itself (a parameter, a let or a loop variable: it hides the item)
 * and of its own name do not count.  Built in one walk of the module, so
 * that a file of many functions costs linear time. */
struct el_use {
  const char *name;
  const td_ast *use, *user, *umodel;
};

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot of name in table t (cap a power of two): its entry or the empty one. */
static struct el_use *use_slot(struct el_use *t, size_t cap, const char *name) {
  for (size_t i = (size_t)name_hash(name) & (cap - 1);; i = (i + 1) & (cap - 1))
    if (!t[i].name || !strcmp(t[i].name, name)) return &t[i];
}

static void count_nodes(const td_ast *n, size_t *k, int depth) {
  if (!n || depth > 10000) return;
  ++*k;
  count_nodes(n->a, k, depth + 1);
  count_nodes(n->b, k, depth + 1);
  count_nodes(n->c, k, depth + 1);
  for (int i = 0; i < n->n; i++) count_nodes(n->list[i], k, depth + 1);
}

/* Adds the names n binds (params, lets, loop variables) to table t. */
static void add_bound(const td_ast *n, struct el_use *t, size_t cap, int depth) {
  if (!n || depth > 10000) return;
  if ((n->kind == TD_A_PARAMDECL || n->kind == TD_A_LET || n->kind == TD_A_FOR || n->kind == TD_A_LISTCOMP) &&
      n->name)
    use_slot(t, cap, n->name)->name = n->name;
  if (n->kind == TD_A_LET && !n->name)   /* let (a, b) = ... */
    for (int i = 0; i < n->n; i++)
      if (n->list[i]->name) use_slot(t, cap, n->list[i]->name)->name = n->list[i]->name;
  add_bound(n->a, t, cap, depth + 1);
  add_bound(n->b, t, cap, depth + 1);
  add_bound(n->c, t, cap, depth + 1);
  for (int i = 0; i < n->n; i++) add_bound(n->list[i], t, cap, depth + 1);
}

/* Records the uses in n not hidden by bound (NULL: none) nor of self. */
static void add_uses(td_program *p, const td_ast *n, const struct el_use *bound, size_t bcap, const char *self,
                     const td_ast *user, const td_ast *umodel, int depth) {
  if (!n || depth > 10000) return;
  if (n->kind == TD_A_NAME && n->name && !(self && !strcmp(n->name, self)) &&
      !(bound && use_slot((struct el_use *)bound, bcap, n->name)->name)) {
    struct el_use *u = use_slot(p->uses, p->uses_cap, n->name);
    if (!u->name) {
      u->name = n->name;
      u->use = n;
      u->user = user;
      u->umodel = umodel;
    }
  }
  add_uses(p, n->a, bound, bcap, self, user, umodel, depth + 1);
  add_uses(p, n->b, bound, bcap, self, user, umodel, depth + 1);
  add_uses(p, n->c, bound, bcap, self, user, umodel, depth + 1);
  for (int i = 0; i < n->n; i++) add_uses(p, n->list[i], bound, bcap, self, user, umodel, depth + 1);
}

static size_t pow2_above(size_t n) {
  size_t c = 16;
  while (c < 2 * n + 16) c *= 2;
  return c;
}

/* The uses of a function's body: its bound names first, in a table of its own. */
static void add_fn_uses(td_program *p, const td_ast *fn, const char *self, const td_ast *umodel) {
  size_t k = 0;
  count_nodes(fn, &k, 0);
  size_t cap = pow2_above(k);
  struct el_use *bound = td_arena_alloc(p->arena, cap * sizeof *bound);
  if (!bound) return;
  memset(bound, 0, cap * sizeof *bound);
  add_bound(fn, bound, cap, 0);
  add_uses(p, fn, bound, cap, self, fn, umodel, 0);
}

static int build_uses(td_program *p) {
  const td_ast *mod = p->main->ast;
  if (p->uses_mod == mod && p->uses_items == mod->n && p->uses) return 0;
  size_t k = 0;
  count_nodes(mod, &k, 0);
  p->uses_cap = pow2_above(k);
  p->uses = td_arena_alloc(p->arena, p->uses_cap * sizeof *p->uses);
  if (!p->uses) return -1;
  memset(p->uses, 0, p->uses_cap * sizeof *p->uses);
  for (int i = 0; i < mod->n; i++) {
    const td_ast *it = mod->list[i];
    if (it->kind == TD_A_FN) {
      add_fn_uses(p, it, it->name, NULL);
    } else if (it->kind == TD_A_MODEL) {
      for (int j = 0; j < it->n; j++) add_uses(p, it->list[j], NULL, 0, NULL, it, NULL, 0);  /* parameter defaults */
      for (int j = 0; it->a && j < it->a->n; j++) {
        const td_ast *m = it->a->list[j];
        if (m->kind == TD_A_FN) add_fn_uses(p, m, NULL, it);
        else add_uses(p, m, NULL, 0, NULL, it, it, 0);
      }
    }
  }
  p->uses_mod = mod;
  p->uses_items = mod->n;
  return 0;
}

/* Where another function or model of the main file uses top-level function
 * fn by name: the NAME node, *user the using function or model, *user_model
 * the model of a using method (else NULL); NULL when none. */
static const td_ast *helper_use(td_program *p, const td_ast *fn, const td_ast **user, const td_ast **user_model) {
  *user = *user_model = NULL;
  if (build_uses(p)) return NULL;
  const struct el_use *u = use_slot(p->uses, p->uses_cap, fn->name);
  if (!u->name) return NULL;
  *user = u->user;
  *user_model = u->umodel;
  return u->use;
}

/* Whether top-level function or method fn (of model, or NULL) is an entry
 * point of the main file (marked: whether the file uses `export`). */
static int is_entry(td_program *p, int marked, const td_ast *model, const td_ast *fn) {
  const td_ast *u1, *u2;
  if (!model && !strcmp(fn->name, "main")) return fn->n == 0;
  if (marked) return fn->ival != 0;
  if (model) return fn_is_entry(p, fn);   /* the model's parameters: see td_program_entries */
  return fn_is_entry(p, fn) && !helper_use(p, fn, &u1, &u2);
}

/* Appends name (NULL: out of memory) to *out (n used, *cap allocated). */
static int push_entry(td_program *p, const char ***out, int *n, int *cap, const char *name) {
  if (!name) return -1;
  if (*n == *cap) {
    const char **no = td_arena_alloc(p->arena, (size_t)*cap * 2 * sizeof *no);
    if (!no) return -1;
    memcpy(no, *out, (size_t)*n * sizeof *no);
    *out = no;
    *cap *= 2;
  }
  (*out)[(*n)++] = name;
  return 0;
}

int td_program_entries(td_program *p, const char ***names) {
  int n = 0, cap = 16;
  const char **out = td_arena_alloc(p->arena, (size_t)cap * sizeof *out);
  td_span none = {-1, 0, 0, 0, 0};
  *names = out;
  if (!p->main) return 0;
  if (!out) return td_diags_oom(p->diags, none), 0;
  int marked = marks_entries(p);
  for (int i = 0; i < p->main->ast->n; i++) {
    const td_ast *it = p->main->ast->list[i];
    int bad = 0;
    if (it->kind == TD_A_FN && is_entry(p, marked, NULL, it))
      bad = push_entry(p, &out, &n, &cap, it->name);
    else if (it->kind == TD_A_MODEL && (marked || model_is_entry(it)) && it->a)
      for (int k = 0; k < it->a->n && !bad; k++) {
        const td_ast *m = it->a->list[k];
        if (m->kind == TD_A_FN && is_entry(p, marked, it, m))
          bad = push_entry(p, &out, &n, &cap, td_arena_printf(p->arena, "%s.%s", it->name, m->name));
      }
    *names = out;
    if (bad) return td_diags_oom(p->diags, none), n;
  }
  return n;
}

/* Turns the entry's result into graph outputs (tensors, numbers, tuples). */
static int add_outputs(el_ctx *c, const td_value *v, td_span sp) {
  switch (v->k) {
  case V_NONE: return 0;
  case V_ERR: return -1;
  case V_TUPLE: case V_LIST:  /* a list of tensors: grad(f, wrt = model)'s gradients */
    for (int i = 0; i < v->n; i++)
      if (add_outputs(c, &v->items[i], sp)) return -1;
    return 0;
  case V_TENSOR: return td_graph_add_output(c->g, v->node);
  case V_INT: case V_FLOAT: case V_BOOL: case V_SIZE: {
    td_dtype dt;
    int weak;
    el_value_dtype(v, &dt, &weak);
    int id = el_as_tensor(c, v, dt, v->span);
    return id < 0 ? -1 : td_graph_add_output(c->g, id);
  }
  default:
    td_error(c->diags, v->span.file >= 0 ? v->span : sp, "an entry point can only return tensors, "
             "numbers and tuples or lists of them, not %s", el_kind_name(v));
    return -1;
  }
}

/* Finds the declaration of entry "fn", "main" or "Model.method". */
static int find_entry(td_program *p, const char *entry, const td_ast **model, const td_ast **fn) {
  *model = *fn = NULL;
  const char *dot = strchr(entry, '.');
  for (int i = 0; i < p->main->ast->n; i++) {
    const td_ast *it = p->main->ast->list[i];
    if (!dot && it->kind == TD_A_FN && !strcmp(it->name, entry)) { *fn = it; return 0; }
    if (dot && it->kind == TD_A_MODEL && strlen(it->name) == (size_t)(dot - entry) &&
        !strncmp(it->name, entry, (size_t)(dot - entry))) {
      *model = it;
      for (int k = 0; it->a && k < it->a->n; k++)
        if (it->a->list[k]->kind == TD_A_FN && !strcmp(it->a->list[k]->name, dot + 1)) { *fn = it->a->list[k]; return 0; }
    }
  }
  return -1;
}

/* The entry points as a list "a, b, c" (arena; "" when none). */
static const char *entry_list(td_program *p, const char *skip) {
  const char **names;
  int n = td_program_entries(p, &names);
  char buf[1024] = "";
  size_t w = 0;
  for (int i = 0; i < n && w < sizeof buf - 64; i++)
    if (!skip || strcmp(names[i], skip))
      w += (size_t)snprintf(buf + w, sizeof buf - w, "%s%s", w ? ", " : "", names[i]);
  const char *r = td_arena_strdup(p->arena, buf);
  return r ? r : "";
}

const char *td_program_not_entry(td_program *p, const char *entry, const char **help, td_span *where) {
  const td_ast *model, *fn, *at;
  td_span none = {-1, 0, 0, 0, 0};
  *help = NULL;
  *where = none;
  if (!p->main) return NULL;
  if (find_entry(p, entry, &model, &fn)) return NULL;
  int marked = marks_entries(p);
  *where = fn->span;
  if (!marked && model && fn_is_entry(p, fn) && !model_is_entry(model)) {
    *help = td_arena_printf(p->arena, "give the model's parameters defaults (model %s(T: int = 8)), or mark the "
                            "method `export fn %s(...)` and give them with --param T=8", model->name, fn->name);
    return td_arena_printf(p->arena, "'%s' is not an entry point: model '%s' has parameters without defaults",
                           entry, model->name);
  }
  if (is_entry(p, marked, model, fn)) return NULL;
  const char *sig = fn->n ? signature_why(p, fn, &at) : NULL;
  if (!model && !strcmp(fn->name, "main")) {
    *help = "fn main() takes no arguments; give the inputs to another function: fn f(x: f32[N, 4])";
    return td_arena_printf(p->arena, "'main' is not an entry point: it has parameters");
  }
  if (sig && (!marked || fn->ival)) {
    *help = "an entry point's arguments are tensors given as .npy files (--in x=x.npy): declare each "
            "one's dtype and shape, e.g. x: f32[N, 16]; compile-time values belong to the model: model M(k: int)";
    return td_arena_printf(p->arena, "'%s' cannot be an entry point: %s", entry, sig);
  }
  if (marked) {
    *help = td_arena_printf(p->arena, "mark it an entry point: export fn %s(...); this file marks its entry points "
                            "with `export`, so only fn main() and the exported functions are entry points", fn->name);
    return td_arena_printf(p->arena, "'%s' is not an entry point: it is not marked `export`", entry);
  }
  if (!model && fn->n == 0) {
    const char *others = entry_list(p, "main");
    *help = td_arena_printf(p->arena, "mark it an entry point: export fn %s().  In a file that uses `export`, "
                            "exactly fn main() and the exported functions are entry points%s%s", fn->name,
                            *others ? ", so mark these as well: " : "", others);
    return td_arena_printf(p->arena, "'%s' is not an entry point: it has no parameters", entry);
  }
  const td_ast *user, *umodel;
  const td_ast *use = model ? NULL : helper_use(p, fn, &user, &umodel);
  if (use) {
    const char *uname = umodel && user != umodel ? td_arena_printf(p->arena, "%s.%s", umodel->name, user->name)
                                                 : user->name;
    const char *others = entry_list(p, "main");
    *help = td_arena_printf(p->arena, "to run or build it on its own, mark it an entry point: export fn %s(...).  "
                            "In a file that uses `export`, exactly fn main() and the exported functions are entry "
                            "points%s%s", fn->name, *others ? ", so mark these as well: " : "", others);
    return td_arena_printf(p->arena, "'%s' is not an entry point: it is a helper, used by '%s' at line %d, "
                           "and checked through its callers", entry, uname ? uname : "?", use->span.line);
  }
  return td_arena_printf(p->arena, "'%s' is not an entry point", entry);
}

static void entry_not_found(td_program *p, const char *entry) {
  td_span none = {-1, 0, 0, 0, 0};
  const char *help, *why;
  td_span at;
  if ((why = td_program_not_entry(p, entry, &help, &at))) {
    td_diag *g = td_error(p->diags, at, "%s", why);
    if (help) td_diag_help(p->diags, g, "%s", help);
    return;
  }
  const char *list = entry_list(p, NULL);
  td_diag *g = td_error(p->diags, none, "no entry point '%s' in %s", entry, p->main ? p->main->path : "the program");
  if (*list) {
    td_diag_help(p->diags, g, "entry points here: %s", list);
  } else {
    td_diag_help(p->diags, g, "an entry point is fn main(), a function marked `export` (export fn f(x: f32[N, 4])), "
                 "or in a file without `export` a model method whose arguments all have tensor types "
                 "(model M { fn forward(x: f32[N, 4]) ... }) or such a top-level fn that no other uses");
  }
}

td_graph *el_graph_begin(td_program *p, td_arena *a, const char *name) {
  p->g = td_graph_new(a, name);
  p->depth = 0;
  p->node_limit = p->node_limit_set;
  p->steps = 0;
  p->n_rand = 0;
  p->n_insts = 0;
  p->ret = NULL;
  p->inst_prefix = NULL;
  p->n_loads = p->n_saves = 0;
  return p->g;
}

static td_graph *lower(td_program *p, const td_ast *model, const td_ast *fn, const char *entry);

/* Every error from diagnostic `first` on whose place is outside fn (in a
 * function or model it reached, here or in a module) gets a note naming
 * the entry point that was being checked. */
static void note_entry(td_program *p, int first, const td_ast *fn, const char *entry) {
  for (int i = first; i < p->diags->n; i++) {
    td_diag *g = &p->diags->items[i];
    if (g->sev != TD_SEV_ERROR || g->span.file < 0) continue;
    if (g->span.file == fn->span.file && g->span.start >= fn->span.start && g->span.end <= fn->span.end) continue;
    td_diag_note(p->diags, g, fn->span, "while checking entry point '%s'", entry);
  }
}

td_graph *td_program_lower(td_program *p, const char *entry) {
  if (!p->main) return NULL;
  const td_ast *model, *fn;
  int before = p->diags->n_errors;
  if (find_entry(p, entry, &model, &fn) || !is_entry(p, marks_entries(p), model, fn)) {
    entry_not_found(p, entry);
    return failed_oom(p, before), NULL;
  }
  int first = p->diags->n;
  td_graph *g = lower(p, model, fn, entry);
  if (!g) failed_oom(p, before);
  note_entry(p, first, fn, entry);
  return g;
}

static td_graph *lower(td_program *p, const td_ast *model, const td_ast *fn, const char *entry) {
  int before = p->diags->n_errors;
  if (!el_graph_begin(p, p->arena, entry)) return NULL;
  p->n_roots = 0; /* each entry point initialises its models alike */
  el_scope *env = p->main->globals;
  el_inst *inst = NULL;
  if (model) {
    td_value def = el_none(model->span);
    def.k = V_MODELDEF;
    def.def = model;
    def.mod = p->main;
    td_value *margs;
    const char **mkw;
    int nm = el_entry_model_args(p, model, &margs, &mkw);   /* --param (model_args.c) */
    if (nm < 0) return NULL;
    td_value m = el_instantiate(p, &def, margs, mkw, nm, model->span);
    if (m.k != V_MODEL) return NULL;
    inst = m.inst;
    env = inst->env;
  }
  el_scope *s = el_scope_new(p, env);
  if (!s) return NULL;
  td_value *args = td_arena_alloc(p->arena, (size_t)(fn->n + 1) * sizeof *args);
  const char **kw = td_arena_alloc(p->arena, (size_t)(fn->n + 1) * sizeof *kw);
  if (!args || !kw) return NULL;
  for (int i = 0; i < fn->n; i++) {
    args[i] = el_make_input(p, s, fn->list[i], p->g->n_inputs);   /* after any load() of a member */
    kw[i] = NULL;
  }
  if (p->diags->n_errors > before) return NULL;
  /* the body sees the dims bound by the inputs (scope s) */
  el_scope *body = el_scope_new(p, s);
  if (!body || el_bind_args(p, fn, body, s, args, kw, fn->n, fn->span, 0)) return NULL;
  td_value r = el_eval_block(p, body, fn->b);
  if (p->ret) { r = *p->ret; p->ret = NULL; }
  if (fn->a && r.k != V_ERR)
    el_check_type(p, body, fn->a, &r, td_arena_printf(p->arena, "the result of '%s'", entry), 0);
  if (p->diags->n_errors > before) return NULL;
  if (add_outputs(p, &r, fn->span) || p->diags->n_errors > before) return NULL;
  td_err err;
  if (td_graph_verify(p->g, &err)) {
    td_span none = {-1, 0, 0, 0, 0};
    td_error(p->diags, none, "internal compiler error: %s", err.msg);
    return NULL;
  }
  return p->g;
}

int td_program_check(td_program *p) {
  if (!p->main) return p->diags->n_errors;
  const char **names;
  int n = td_program_entries(p, &names);
  for (int i = 0; i < n; i++) (void)td_program_lower(p, names[i]);
  return p->diags->n_errors;
}

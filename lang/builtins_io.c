/* builtins_io.c - load("x.npy") and save("y.npy", t): NumPy's np.load and
 * np.save inside a program.
 *
 * tdsl has no run-time I/O: a graph computes and returns values.  So the
 * two are split between elaboration and the run, as print() is:
 *
 *   load(path)     opens the file while the program is elaborated and reads
 *                  its header (runtime/npy.c checks it as it does an --in
 *                  file), so the tensor has the file's dtype and literal
 *                  shape and everything after it is checked against them;
 *                  the call becomes an INPUT node beyond the entry's
 *                  arguments, and whoever runs the graph reads the data
 *                  (td_host_read) before the run - eager and compiled
 *                  alike, so a compiled graph does not hold the data and a
 *                  cache entry serves any file of that type.
 *   save(path, t)  records t's node; whoever runs the graph makes it an
 *                  output and writes the file after the run (td_host_write:
 *                  a temporary file renamed, as --out does), in program
 *                  order, for every backend.
 *
 * Only callers that do both allow them (td_program_allow_files): `tdsl
 * run`, `tdsl check` and the REPL.  A built artifact, `tdsl train` and
 * `tdsl explain` run graphs whose inputs are their arguments, so there the
 * calls are errors naming the line, never silently ignored.  Neither may be
 * inside a scan's step function (the step runs once per step, in a body
 * graph of its own).
 */
#include <string.h>

#include "lang/elab_impl.h"
#include "runtime/io.h"
#include "runtime/mem.h"

void td_program_allow_files(td_program *p, int allow) { p->files_ok = allow; }

int td_program_loads(const td_program *p, const td_host_file **out) {
  *out = p->loads;
  return p->n_loads;
}

int td_program_saves(const td_program *p, const td_host_file **out) {
  *out = p->saves;
  return p->n_saves;
}

int td_program_arg_inputs(const td_program *p, const td_graph *g, int *pos) {
  int n = 0;
  for (int k = 0; k < g->n_inputs; k++) {
    int is_load = 0;
    for (int j = 0; j < p->n_loads && !is_load; j++) is_load = p->loads[j].node == g->inputs[k];
    if (!is_load) pos[n++] = k;
  }
  return n;
}

/* Appends a record to *list (in the program's arena); -1 when memory runs out. */
static int push_file(el_ctx *c, td_host_file **list, int *n, int *cap, int node, const char *path, td_span sp) {
  if (*n == *cap) {
    int nc = *cap ? 2 * *cap : 8;
    td_host_file *nl = td_arena_alloc(c->arena, (size_t)nc * sizeof *nl);
    if (!nl) return -1;
    if (*n) memcpy(nl, *list, (size_t)*n * sizeof *nl);
    *list = nl;
    *cap = nc;
  }
  (*list)[(*n)++] = (td_host_file){node, path, sp};
  return 0;
}

/* The checks both calls share: a file name, allowed here, not in a scan. */
static int usable(el_ctx *c, const char *fn, const td_value *path, td_span sp) {
  if (path->k != V_STR) {
    td_diag *d = td_error(c->diags, path->span, "%s() takes a file name (a string), found %s", fn, el_kind_name(path));
    td_diag_help(c->diags, d, "%s", !strcmp(fn, "load") ? "load(\"x.npy\")" : "save(\"y.npy\", t)");
    return -1;
  }
  if (!c->files_ok) {
    td_diag *d = td_error(c->diags, sp, "%s() %s a file, which only `tdsl run`, `tdsl check` and the REPL do", fn,
                          !strcmp(fn, "load") ? "reads" : "writes");
    td_diag_help(c->diags, d, "a built artifact, `tdsl train` and `tdsl explain` run an entry point on its "
                 "arguments: make the tensor an argument (an input, given with --in NAME=FILE.npy) or %s",
                 !strcmp(fn, "load") ? "a parameter (loaded with --weights)" : "a result (written with --out)");
    return -1;
  }
  if (c->in_scan) {
    td_diag *d = td_error(c->diags, sp, "%s() inside a scan's step function", fn);
    td_diag_help(c->diags, d, "%s", !strcmp(fn, "load") ? "load the file before the scan and pass the tensor in "
                 "(args = or as a captured value)" : "save the scan's result after it");
    return -1;
  }
  return 0;
}

static td_value b_load(el_ctx *c, td_value *a, td_span sp) {
  if (usable(c, "load", &a[0], sp)) return el_err();
  td_npy_file f;
  td_err err;
  if (td_npy_open(a[0].s, &f, &err)) {
    td_diag *d = td_error(c->diags, a[0].span, "%s", err.msg);
    td_diag_help(c->diags, d, "a relative path is read from the working directory, as NumPy's np.load does");
    return el_err();
  }
  td_dim shape[TD_MAX_RANK];
  for (int k = 0; k < f.head.rank; k++) shape[k] = f.head.shape[k];
  td_attr at;
  memset(&at, 0, sizeof at);
  at.i = c->g->n_inputs;
  int id = el_emit(c, TD_IR_INPUT, f.head.dtype, f.head.rank, shape, NULL, 0, &at, sp);
  td_npy_close(&f);
  if (id < 0) return el_err();
  c->g->nodes[id].name = a[0].s;
  if (push_file(c, &c->loads, &c->n_loads, &c->cap_loads, id, a[0].s, sp)) {
    td_diags_oom(c->diags, sp);
    return el_err();
  }
  return el_tensor(id, sp);
}

static td_value b_save(el_ctx *c, td_value *a, td_span sp) {
  if (usable(c, "save", &a[0], sp)) return el_err();
  td_value x = a[1];
  if (x.k == V_INT || x.k == V_FLOAT || x.k == V_BOOL || x.k == V_SIZE) {
    td_dtype dt;
    int weak;
    if (el_value_dtype(&x, &dt, &weak) == 0) {
      int k = el_as_tensor(c, &x, dt, x.span);
      if (k < 0) return el_err();
      x = el_tensor(k, x.span);
    }
  }
  if (x.k != V_TENSOR) {
    td_error(c->diags, a[1].span, "save() writes a tensor, found %s", el_kind_name(&a[1]));
    return el_err();
  }
  const td_node *n = el_node(c, &x);
  if (n->dtype == TD_BF16) {
    td_diag *d = td_error(c->diags, a[1].span, "save() cannot write a bf16 tensor: NumPy's .npy has no bf16 dtype");
    td_diag_help(c->diags, d, "save f32(t) (exact), or write the model's weights as safetensors (--save-weights)");
    return el_err();
  }
  if (push_file(c, &c->saves, &c->n_saves, &c->cap_saves, x.node, a[0].s, sp)) {
    td_diags_oom(c->diags, sp);
    return el_err();
  }
  return el_none(sp);
}

td_value el_io_builtin(el_ctx *c, int which, td_value *a, td_span sp) {
  return which == 0 ? b_load(c, a, sp) : b_save(c, a, sp);
}

/* ---- the runner's side ----------------------------------------------------- */

td_tensor *td_host_read(const td_host_file *f, const td_node *n, td_err *err) {
  td_npy_file h;
  if (td_npy_open(f->path, &h, err)) return NULL;
  int same = h.head.dtype == n->dtype && h.head.rank == n->rank;
  for (int k = 0; same && k < n->rank; k++) same = h.head.shape[k] == n->shape[k];
  td_tensor *t = NULL;
  if (!same) {
    char a[128], b[128];
    int64_t s[TD_MAX_RANK];
    for (int k = 0; k < n->rank; k++) s[k] = n->shape[k];
    td_err_set(err, "%s changed after the program was checked: it holds %s, load() gave %s", f->path,
               td_shape_str(h.head.dtype, h.head.rank, h.head.shape, a, sizeof a),
               td_shape_str(n->dtype, n->rank, s, b, sizeof b));
  } else {
    (void)td_npy_load(&h, &t, err);
  }
  td_npy_close(&h);
  return t;
}

int td_host_write(const td_host_file *f, const td_tensor *t, td_err *err) {
  return td_npy_write(f->path, t, err);
}

/* elab_impl.h - internals shared by the elaborator's files (elab.c: values,
 * scopes, statements, expressions, models; builtins.c: built-in functions;
 * shapes.c: shape rules and the tensor operations they check).
 *
 * The elaborator is a partial evaluator.  Every expression evaluates to a
 * td_value: compile-time values (numbers, sizes, lists, models, functions)
 * are computed on the spot; tensor values are IR nodes of the graph being
 * built.  See elab.h.
 */
#ifndef TD_ELAB_IMPL_H
#define TD_ELAB_IMPL_H

#include "lang/elab.h"

typedef enum vkind {
  V_ERR,      /* an error was already reported: propagate silently */
  V_NONE,     /* no value (print, a statement, an absent optional param) */
  V_INT,      /* i: a compile-time integer (also every literal size) */
  V_FLOAT,    /* f */
  V_BOOL,     /* i: 0 or 1 */
  V_STR,      /* s */
  V_SIZE,     /* dim: a symbolic size (never a literal: those are V_INT) */
  V_TENSOR,   /* node: id in the current graph */
  V_LIST,     /* items, n */
  V_TUPLE,    /* items, n */
  V_RANGE,    /* lo..hi: i = lo, dim = hi (both compile-time) */
  V_MODEL,    /* inst: a model instance */
  V_MODELDEF, /* def: a model declaration (calling it instantiates) */
  V_FUNC,     /* fn: a function or a method bound to inst */
  V_MODULE,   /* mod */
  V_BUILTIN,  /* i: index into the builtin table */
  V_GRADFN,   /* grad(f)/value_and_grad(f): items = f, wrt, argnums; i = flags
                 (builtins_grad.c) */
} vkind;

struct el_module;
struct el_inst;
struct el_scope;

typedef struct td_value {
  vkind k;
  int64_t i;
  double f;
  const char *s;
  td_dim dim;
  int node;
  struct td_value *items;
  int n;
  struct el_inst *inst;
  const td_ast *def;          /* V_MODELDEF, V_FUNC: the declaration */
  struct el_module *mod;      /* V_MODELDEF, V_FUNC, V_MODULE: defining module */
  td_span span;               /* where the value was written */
} td_value;

typedef struct el_binding {
  const char *name;
  td_value v;
} el_binding;

typedef struct el_scope {
  struct el_scope *parent;
  el_binding *b;              /* names are unique in a scope */
  int n, cap;
  /* A hash index of b by name, once a scope has more than a few bindings
   * (20 000 functions in one file): slot -> binding index + 1 (0: empty).
   * It describes idx_b[0..idx_n); a scope whose b or n was set back (the
   * REPL's rollback) is indexed again on its next lookup. */
  int *idx;
  int idx_cap, idx_n;
  el_binding *idx_b;
} el_scope;

typedef struct el_module {
  const char *name;           /* import name, or "" for the main file */
  const char *path;
  const char *dir;            /* directory of the file (for imports) */
  td_ast *ast;
  el_scope *globals;
  int loading;                /* import cycle detection */
} el_module;

typedef struct el_inst {      /* an instantiated model */
  const td_ast *def;
  el_module *mod;
  el_scope *env;              /* model params and members */
  const char *prefix;         /* state_dict prefix: "", "fc.", "layers.0." */
  uint64_t salt;              /* parameter-init stream salt: 0 for the first
                                 top-level instance, k for the k-th; sub-models
                                 share their root's (their names differ) */
} el_inst;

struct td_program {
  td_arena *arena;
  td_diags *diags;
  const char **dirs;
  int n_dirs;
  el_module **mods;
  int n_mods;
  el_module *main;
  uint64_t seed;              /* run seed for rand without seed= */
  /* state of the graph being built */
  td_graph *g;
  const char *inst_prefix;    /* prefix for the next model instantiated */
  int depth;                  /* call depth (inlining) */
  int n_rand;                 /* random ops made so far (stream ids) */
  int n_insts;                /* instances made */
  uint64_t n_roots;           /* top-level instances made (salts); kept across
                                 the graphs of one REPL session */
  uint64_t cur_salt;          /* salt of the instance being built */
  td_value *ret;              /* set by `return` while unwinding */
  int node_limit;              /* graph size cap for this lowering */
  int node_limit_set;          /* the configured cap */
  long steps, step_limit;      /* evaluation steps: bounds compile-time work */
  /* load() and save() of the graph being built (builtins_io.c) */
  int files_ok;                /* td_program_allow_files: they may be used */
  int in_scan;                 /* elaborating a scan's step function */
  td_host_file *loads, *saves;
  int n_loads, cap_loads, n_saves, cap_saves;
  /* which items of the main file use which names (program.c, helper_use):
   * an open-addressing table, built once per main module (and count of
   * items: a REPL module grows) */
  const td_ast *uses_mod;
  int uses_items, marked_items;
  struct el_use *uses;
  size_t uses_cap;
  const td_ast *marked_mod;    /* the module `marked` describes */
  int marked;                  /* whether it marks entry points with `export` */
  /* --param NAME=VALUE: an entry model's parameters (model_args.c) */
  const char **marg_names, **marg_vals;
  int n_margs, cap_margs;
};

typedef struct td_program el_ctx;

/* ---- values and scopes (elab.c) ---- */
td_value el_err(void);
td_value el_none(td_span sp);
td_value el_int(int64_t i, td_span sp);
td_value el_float(double f, td_span sp);
td_value el_bool(int b, td_span sp);
td_value el_size(el_ctx *c, td_dim d, td_span sp);  /* INT when literal */
td_value el_tensor(int node, td_span sp);
const char *el_kind_name(const td_value *v);
el_scope *el_scope_new(el_ctx *c, el_scope *parent);
int el_bind(el_ctx *c, el_scope *s, const char *name, td_value v);
td_value *el_lookup(el_scope *s, const char *name);

/* A growing list of node ids in the arena; el_ints_push: 0, or -1 on OOM. */
typedef struct el_ints {
  int *ids;
  int n, cap;
} el_ints;
int el_ints_push(el_ctx *c, el_ints *l, int id);

/* ---- the graph (shapes.c) ---- */
/* double -> int64 saturating (NaN -> 0), like the runtime's casts. */
int64_t el_f2i(double f);
const td_node *el_node(el_ctx *c, const td_value *v);
int el_emit(el_ctx *c, td_op op, td_dtype dt, int rank, const td_dim *shape,
            const int *in, int n_in, const td_attr *attr, td_span sp);
/* A number or tensor as a tensor of dtype dt (numbers become CONST nodes;
 * tensors are cast when their dtype differs).  -1 after an error. */
int el_as_tensor(el_ctx *c, const td_value *v, td_dtype dt, td_span sp);
/* Dtype a value has / would take next to others (weak numbers). */
int el_value_dtype(const td_value *v, td_dtype *dt, int *weak);
td_value el_cast(el_ctx *c, const td_value *v, td_dtype dt, td_span sp);
td_value el_binary(el_ctx *c, int op, const td_value *a, const td_value *b, td_span sp);
td_value el_unary_op(el_ctx *c, td_op op, const td_value *a, td_span sp);
td_value el_where(el_ctx *c, const td_value *cond, const td_value *a, const td_value *b, td_span sp);
td_value el_reshape(el_ctx *c, const td_value *x, int rank, const td_dim *shape, td_span sp);
td_value el_broadcast_to(el_ctx *c, const td_value *x, int rank, const td_dim *shape, td_span sp);
td_value el_permute(el_ctx *c, const td_value *x, const int *perm, td_span sp);
td_value el_reduce(el_ctx *c, td_op op, const td_value *x, uint32_t axes, int keepdims, td_span sp);
td_value el_matmul(el_ctx *c, const td_value *a, const td_value *b, td_span sp);
td_value el_concat(el_ctx *c, const td_value *xs, int n, int axis, td_span sp);
/* Broadcast result shape of two nodes; -1 with a diagnostic on mismatch. */
int el_broadcast_shapes(el_ctx *c, const td_node *a, const td_node *b, td_span sa,
                        td_span sb, td_span sp, int *rank, td_dim *shape);
/* Evaluates the shape argument v (a list/tuple of sizes) into dims. */
int el_shape_arg(el_ctx *c, const td_value *v, int *rank, td_dim *shape, td_span sp);
/* A compile-time size from v (INT >= 0 or SIZE); -1 with a diagnostic. */
int el_size_arg(el_ctx *c, const td_value *v, td_dim *out, const char *what);
/* Normalises an axis (negative counts from the end); -1 on error. */
int el_axis(el_ctx *c, const td_value *v, int rank, int *out);
/* Teaching error: a tensor used where a compile-time value is needed. */
void el_err_host_read(el_ctx *c, const td_value *v, const char *what);
/* Reports size arithmetic at sp that gave TD_DIM_BAD:
 * "size arithmetic overflows: WHAT", with the limits as help.  -1. */
int el_err_overflow(el_ctx *c, td_span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The element count of a shape (TD_DIM_BAD when it overflows), multiplied
 * left to right as the compiler's planner does. */
td_dim el_numel(el_ctx *c, int rank, const td_dim *shape);

/* ---- builtins (builtins.c) ---- */
int el_builtin_find(const char *name);
const char *el_builtin_name(int i);
int el_builtin_count(void);
/* Calls builtin bi with evaluated args; kwnames[i] is NULL for positional. */
td_value el_builtin_call(el_ctx *c, int bi, td_value *args, const char **kwnames,
                         int n, td_span sp, const td_ast *call);
/* ---- training builtins (builtins_grad.c) ---- */
/* grad (0), value_and_grad (1), params (2), state_like (3), buffer (4),
 * with the table's arguments matched into a[]. */
td_value el_train_builtin(el_ctx *c, int which, td_value *a, td_span sp);
/* conv1d, conv2d, conv3d (which = 1, 2, 3), conv_transpose1d/2d/3d (4, 5, 6), max_pool2d (10),
 * avg_pool2d (11) (builtins_conv.c) */
td_value el_conv_builtin(el_ctx *c, int which, td_value *a, td_span sp);
/* cumsum (0), cumprod (1), index_add (2), scatter_add (3), sort (4),
 * argsort (5), topk (6), norm (8) (builtins_extra.c) */
td_value el_extra_builtin(el_ctx *c, int which, td_value *a, td_span sp);
/* einsum(equation, operands...), with the call's arguments as written */
td_value el_einsum(el_ctx *c, td_value *args, const char **kw, int n, td_span sp);
/* Calls a V_GRADFN: evaluates f, then appends its gradient. */
td_value el_call_gradfn(el_ctx *c, const td_value *gf, td_value *args, const char **kw, int n, td_span sp);
/* ---- loops (builtins_scan.c) ---- */
/* scan (0) and fold (1), with f, init, xs, length, reverse in a[]. */
td_value el_scan_builtin(el_ctx *c, int which, td_value *a, td_span sp);
/* ---- command-line model parameters (model_args.c) ---- */
/* The --param values model declares, as keyword arguments (*args, *kw in
 * the arena); their count, or -1 when memory runs out. */
int el_entry_model_args(el_ctx *c, const td_ast *model, td_value **args, const char ***kw);
/* ---- files (builtins_io.c) ---- */
/* load (0) and save (1), with path and x in a[]. */
td_value el_io_builtin(el_ctx *c, int which, td_value *a, td_span sp);
/* dtype named by a cast builtin value (f32 ...), or -1. */
int el_builtin_dtype(const td_value *v);

/* ---- evaluation (elab.c), used by the driver in program.c ---- */
/* Evaluates a block (or an expression) in a new scope under s. */
td_value el_eval_block(el_ctx *c, el_scope *s, const td_ast *b);
/* Checks v against type annotation ty, binding new dim names in s; what
 * names the value in messages.  0, or -1 after a diagnostic. */
int el_check_type(el_ctx *c, el_scope *s, const td_ast *ty, const td_value *v, const char *what, int entry);
/* An INPUT node for entry argument pd (its type gives dtype and shape;
 * new dim names become symbols of the graph, bound in s). */
td_value el_make_input(el_ctx *c, el_scope *s, const td_ast *pd, int index);
/* Instantiates model `def` with call arguments (declares its params). */
td_value el_instantiate(el_ctx *c, const td_value *def, td_value *args, const char **kw, int n, td_span sp);
/* Binds call arguments to decl's parameters in `into` (defaults evaluated
 * in defenv), checking their type annotations. */
int el_bind_args(el_ctx *c, const td_ast *decl, el_scope *into, el_scope *defenv,
                 td_value *args, const char **kw, int n, td_span sp, int skip_self);
/* Evaluates an expression, or executes a statement (LET, ASSIGN, FOR, ...)
 * in scope s and returns V_NONE. */
td_value el_eval(el_ctx *c, el_scope *s, const td_ast *e);
td_value el_call_value(el_ctx *c, const td_value *callee, td_value *args,
                       const char **kwnames, int n, td_span sp, const td_ast *call);

/* ---- hooks for the REPL session (driver/session.c) ---- */
/* Starts a new graph named `name` in arena a as the graph being built, and
 * resets the per-lowering state (call depth, node and step budgets, random
 * and instance counters).  NULL when memory runs out. */
td_graph *el_graph_begin(td_program *p, td_arena *a, const char *name);
/* Binds one item (import, model or fn) in module m's globals; an import
 * loads its module (searched next to m->dir, then in the search path).
 * redefine != 0 lets a model or fn replace an earlier binding of its name,
 * as the REPL does; otherwise that is an error.  -1 only when memory runs
 * out (every other problem is a diagnostic). */
int el_bind_item(td_program *p, el_module *m, const td_ast *it, int redefine);

#endif

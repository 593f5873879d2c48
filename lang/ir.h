/* ir.h - the Graph IR: one SSA dataflow graph per entry point.
 *
 * This is the waist of tdsl: the interpreter, the CPU compiler and the CUDA
 * backend all consume a td_graph and never re-derive shapes or dtypes.
 *
 *  - Nodes are stored in one array in topological order; a node's id is its
 *    index; inputs always have smaller ids.  Values are immutable.
 *  - Every node has a dtype, a rank and a shape of td_dims.  A td_dim >= 0 is
 *    a literal size; a td_dim < 0 names a symbolic size expression (a
 *    polynomial over the graph's symbols, interned in the graph, so two dims
 *    are equal exactly when their td_dim values are equal).
 *  - Every node has the source span of the expression that produced it.
 *  - PRINT nodes are the only effects; their order in the node array is the
 *    program order.
 *  - The graph's outputs are a list of node ids; its inputs are the INPUT
 *    nodes (entry arguments) and PARAM nodes (model weights).
 *  - Updates (a training step's `assign`): pairs (PARAM node, value node)
 *    of the same dtype and shape, each PARAM at most once.  Every read of a
 *    PARAM in the graph sees the value it had when the call began; when the
 *    call ends, the parameter's tensor holds the value node's value (a
 *    backend writes it in place, into the caller's tensor).  Update values
 *    are roots like outputs: passes keep them and carry the list.
 */
#ifndef TD_IR_H
#define TD_IR_H

#include <stdint.h>
#include "lang/diag.h"
#include "runtime/param_init.h"
#include "runtime/sig.h"
#include "runtime/tensor.h"

typedef enum td_opkind {
  TD_K_LEAF, TD_K_RANDOM, TD_K_UNARY, TD_K_BINARY, TD_K_COMPARE, TD_K_TERNARY,
  TD_K_REDUCE, TD_K_MATMUL, TD_K_CONV, TD_K_MOVE, TD_K_GATHER, TD_K_EFFECT, TD_K_SCAN
} td_opkind;

typedef enum td_op {
#define TD_OP(e, name, kind, arity, c) TD_IR_##e,
#include "lang/ops.def"
#undef TD_OP
  TD_IR_OP_COUNT
} td_op;

typedef struct td_opinfo {
  const char *name;
  td_opkind kind;
  int arity;
  const char *cexpr;
} td_opinfo;
extern const td_opinfo td_ops[TD_IR_OP_COUNT];

/* ---- symbolic sizes: td_dim, td_mono, td_poly (runtime/sig.h) ---- */

/* A part of a PRINT: either a literal string or input number `input`. */
typedef struct td_print_part {
  const char *text;          /* non-NULL: literal text */
  int input;                 /* else: index into the node's inputs */
} td_print_part;

/* td_init_kind, how a PARAM is initialised without weights: runtime/param_init.h */

/* CONV's attributes (lang/conv.c).  Spatial axis a of the output reads
 * the input "dilated" by ldil[a] (ldil - 1 zeros between elements: a
 * transposed convolution's input, as gradients make them) at
 *   q = o * stride[a] + k * dil[a] - pad[a]   (the input's element q / ldil
 * when q >= 0, q % ldil == 0 and q / ldil < size, else zero).  pad is the
 * padding before the first element and may be negative (a crop); the
 * padding after it is implied by the output size. */
#define TD_CONV_MAX_SPATIAL 3
typedef struct td_conv_attr {
  int32_t spatial;                       /* 1, 2 or 3 spatial axes */
  int32_t groups;                        /* C / groups input channels per output channel */
  int32_t stride[TD_CONV_MAX_SPATIAL];
  int32_t dil[TD_CONV_MAX_SPATIAL];      /* kernel (rhs) dilation */
  int32_t ldil[TD_CONV_MAX_SPATIAL];     /* input (lhs) dilation */
  int32_t pad[TD_CONV_MAX_SPATIAL];      /* before the first element, signed */
} td_conv_attr;

typedef struct td_attr {
  int64_t i, i2;             /* CONST (ints), ARANGE start/step (ints), INPUT/PARAM slot */
  double f, f2;              /* CONST (floats), ARANGE start/step (floats) */
  td_dim dim;                /* DIM */
  uint64_t seed, stream;     /* RAND, RANDN */
  uint32_t axes;             /* reductions: bit k set = axis k reduced */
  int axis;                  /* CONCAT, GATHER */
  int perm[TD_MAX_RANK];     /* PERMUTE */
  td_dim start[TD_MAX_RANK]; /* SLICE: first index per axis (may be symbolic) */
  int64_t step[TD_MAX_RANK]; /* SLICE: step per axis (non-zero) */
  td_print_part *parts;      /* PRINT */
  int n_parts;
  td_init_kind init;         /* PARAM: initialiser ... */
  double init_a, init_b;     /* ... its arguments (lo/hi, mean/std, value) */
  const struct td_graph *body; /* SCAN: the loop body; with attr.dim (the
                                trip count), n_carry, n_xs, index, reverse */
  int n_carry, n_xs;         /* SCAN: carries, sequences (see ops.def) */
  int index, reverse;        /* SCAN: the body reads the step index; last step first */
  int buffer;                /* PARAM: 1 = non-trainable state (optimizer
                                state, running statistics): saved and loaded
                                with the weights, never differentiated by
                                grad(f, wrt = model) */
  td_conv_attr conv;         /* CONV */
} td_attr;

/* An update: when the call ends, PARAM node `param` holds node `value`. */
typedef struct td_update {
  int param, value;
  td_span span;              /* the assign that made it (messages only) */
} td_update;

typedef struct td_node {
  td_op op;
  td_dtype dtype;
  int rank;
  td_dim shape[TD_MAX_RANK];
  int n_in;
  int *in;                   /* node ids, all < this node's id */
  td_attr attr;
  const char *name;          /* INPUT/PARAM: argument name or state_dict path;
                                PRINT: a label; else NULL or a let-name hint */
  td_span span;
} td_node;

typedef struct td_graph {
  td_arena *arena;           /* owns everything below (not owned by graph) */
  const char *name;          /* "Simple.forward", "main" */
  td_node *nodes;
  int n_nodes, cap_nodes;
  int *outputs;
  int n_outputs;
  int *inputs;               /* INPUT node ids in argument order */
  int n_inputs;
  int *params;               /* PARAM node ids in declaration order */
  int n_params;
  td_update *updates;        /* in the order they were made */
  int n_updates;
  /* Set by the driver when it made the updates outputs (driver.c): the
   * last n_update_outs outputs are update values, output n_outputs -
   * n_update_outs + k updating parameter slot update_slots[k], which a
   * backend may write in place (compiler/plan.c, "in place"). */
  const int *update_slots;
  int n_update_outs;
  const char **syms;         /* symbolic size names ("N", "T", "_0") */
  int n_syms, cap_syms;
  td_poly *dims;             /* interned symbolic dims */
  int n_dims, cap_dims;
  struct td_check *checks;   /* run-time size checks (checks.h) of the graph as
                                written, carried through the passes */
  int n_checks;
  int has_checks;            /* checks derived (else a backend derives them) */
  /* A SCAN's body: the graph it belongs to.  A body has no symbols and no
   * polynomials of its own: every function of this header that reads or
   * makes sizes works on the outermost graph's (td_graph_root). */
  struct td_graph *parent;
} td_graph;

td_graph *td_graph_new(td_arena *a, const char *name);
/* g, or the outermost graph a SCAN body belongs to: the owner of its sizes. */
td_graph *td_graph_root(const td_graph *g);

/* ---- dims ---- */
int td_sym_new(td_graph *g, const char *name);           /* new symbol id */
td_dim td_dim_sym(td_graph *g, int sym);
/* The size arithmetic below is exact or gives TD_DIM_BAD (never a wrong
 * size, never undefined behaviour), for any operands. */
/* The integer v as a td_dim: the literal when v >= 0, else an interned
 * negative constant (which no shape holds, but sizes in the making can). */
td_dim td_dim_const(td_graph *g, int64_t v);
td_dim td_dim_add(td_graph *g, td_dim a, td_dim b);
td_dim td_dim_sub(td_graph *g, td_dim a, td_dim b);
td_dim td_dim_mul(td_graph *g, td_dim a, td_dim b);
/* a / b when exact for every value of the symbols: a == b * q with q a
 * polynomial with integer coefficients (polynomial division, so also
 * (K*K - 2*K + 1) / (K - 1) == K - 1).  Returns 0 and sets *out (to
 * TD_DIM_BAD when an operand is, or the division overflows), or -1 when
 * not exact (b == 0 included). */
int td_dim_div(td_graph *g, td_dim a, td_dim b, td_dim *out);
/* ceil(a / m) for m >= 1 (at most 2^63) when that is a polynomial for
 * every value of the symbols: every non-constant coefficient of a is a
 * multiple of m.  0 and *out (TD_DIM_BAD when a is), or -1. */
int td_dim_ceil_div(td_graph *g, td_dim a, uint64_t m, td_dim *out);
/* The td_dim of polynomial p, interned into g as size arithmetic would
 * (found, or appended to g->dims); TD_DIM_BAD when p is not a valid
 * polynomial of g's symbols (each term's symbols sorted, non-zero
 * coefficients, within the limits) or memory runs out.  For polynomials
 * read back from storage (the compile cache, compiled.c). */
td_dim td_dim_intern(td_graph *g, const td_poly *p);
/* Value of d given symbol values (indexed by symbol id). */
int64_t td_dim_eval(const td_graph *g, td_dim d, const int64_t *symvals);
/* "N", "2*N + 1", "16" into buf ("?" for TD_DIM_BAD); returns buf. */
char *td_dim_str(const td_graph *g, td_dim d, char *buf, size_t n);
/* "f32[N, 4]" into buf. */
char *td_type_str(const td_graph *g, td_dtype dt, int rank, const td_dim *shape,
                  char *buf, size_t n);
/* The graph's symbols and polynomials as runtime/sig.h views them (valid
 * while the graph is not changed). */
td_sizes td_graph_sizes(const td_graph *g);
/* An INPUT or PARAM node as an argument or parameter of runtime/sig.h. */
td_sig_arg td_node_sig(const td_node *n);

/* ---- building ---- */
/* Appends a node (inputs copied); returns its id, or -1 on OOM. */
int td_graph_add(td_graph *g, td_op op, td_dtype dt, int rank, const td_dim *shape,
                 const int *in, int n_in, const td_attr *attr, td_span sp);
int td_graph_add_output(td_graph *g, int node);
/* Records that PARAM node `param` takes node `value`'s value when the call
 * ends; 0, or -1 on OOM (the caller checks dtype, shape and uniqueness;
 * td_graph_verify does again). */
int td_graph_add_update(td_graph *g, int param, int value);
/* The graph a backend runs for g: g itself without updates, else a copy
 * (sharing g's nodes, in g's arena) whose outputs are g's, then each
 * update's value, and which has no updates; with in_place, update_slots
 * names their parameters so that the CPU plan may write them in place.
 * The caller writes the values into the parameters after the call
 * (driver.c's td_prepared_run).  NULL with err set when memory runs out. */
const td_graph *td_graph_with_update_outputs(const td_graph *g, int in_place, td_err *err);

/* ---- checking and printing ---- */
/* Checks every invariant of this header and of ops.def's typing contract.
 * Returns 0, or -1 with a message in err naming the node. */
int td_graph_verify(const td_graph *g, td_err *err);
/* Text form for --dump=ir:  %3 = add f32[N, 16] %1, %2   # model.td:7:5 */
void td_graph_print(const td_graph *g, const td_diags *d, FILE *out);

#endif

/* plan.h - the kernel plan: what the compiler will run for one graph.
 *
 * td_plan_build groups the nodes of an (optimised) graph into kernels, each
 * one loop nest, and plans the buffers between them:
 *
 *   POINTWISE  a loop nest over the output's shape; every elementwise,
 *              movement, gather and creation op inside is evaluated per
 *              element by index arithmetic (a broadcast is a zero stride, a
 *              transpose a swapped index, a reshape a re-linearised index):
 *              nothing inside is ever copied to memory.
 *   REDUCE     rows: the outer loops run over the kept axes of `space`, and
 *              each "stage" is one pass over the reduced axes computing one
 *              or more reductions; a final pass writes the output row
 *              (or, for a row_root kernel, one value per row).  Softmax and
 *              layer_norm are one kernel with three passes (see td_kstage).
 *   MATMUL     a (batched) matmul whose operands are strided views of
 *              buffers, with a pointwise epilogue (bias, activation,
 *              residual, scaling...) applied to each accumulated element
 *              before it is stored.
 *
 * Buffers: every INPUT and PARAM, every kernel's output.  Outputs of the
 * graph and values printed by PRINT nodes get OUTPUT buffers of their own
 * (handed to the caller, never reused); the other kernel outputs are
 * TEMP buffers placed in one arena by liveness (a slot is reused once the
 * last kernel reading its previous occupant has run).  Sizes are td_dims,
 * so one plan serves every value of the symbolic sizes.
 *
 * Everything is allocated in the graph's arena.
 */
#ifndef TD_PLAN_H
#define TD_PLAN_H

#include <stdio.h>
#include "lang/ir.h"

typedef enum td_kkind {
  TD_KERN_POINTWISE,  /* one loop nest over space (the root's shape) */
  TD_KERN_REDUCE,     /* row loops: kept axes outside, passes over red_axes */
  TD_KERN_MATMUL,     /* matmul + pointwise epilogue */
  TD_KERN_OTHER,      /* reserved for ops no other kind covers */
  TD_KERN_SCAN        /* a SCAN: its body's plan run once per step (plan_scan.c) */
} td_kkind;

/* One pass over the reduced axes of every row: reductions that do not
 * depend on each other.  A reduction that needs another one's finished
 * value (the sum of exp(x - max) of softmax, the variance of layer_norm,
 * which needs the mean) is in a later pass, as eager mode computes it. */
typedef struct td_kstage {
  int *reds;           /* REDUCE nodes computed in this pass (ascending ids) */
  int n_reds;
} td_kstage;

/* An operand of a matmul read in place: element (i0, ..., ir-1) of the
 * operand is base_buffer[offset + sum_k i_k * stride[k]] (in elements). */
typedef struct td_view {
  int base;                   /* materialised node whose buffer is read */
  int rank;
  td_dim shape[TD_MAX_RANK];
  td_dim stride[TD_MAX_RANK]; /* may be 0 (broadcast) or negative */
  td_dim offset;
} td_view;

typedef struct td_kernel {
  td_kkind kind;
  const char *name;           /* "k3_matmul_add_relu": index and fused ops */
  int root;                   /* the node whose value the kernel stores */
  int *nodes;                 /* IR nodes evaluated inside, ascending ids */
  int n_nodes;
  int *reads;                 /* materialised nodes whose buffers it reads */
  int n_reads;
  int rank;                   /* iteration space */
  td_dim space[TD_MAX_RANK];
  /* REDUCE */
  uint32_t red_axes;          /* axes of space reduced in each row */
  int row_root;               /* root stored once per row (else per element) */
  td_kstage *stages;
  int n_stages;
  int n_passes;               /* passes over each row (stages + output pass) */
  /* MATMUL */
  int matmul;                 /* the MATMUL node, -1 otherwise */
  td_view a, b;
  /* cost, as functions of the symbolic sizes */
  td_dim bytes_read, bytes_written, flops;
  /* SCAN: the plan of the body (its graph optimised on its own, with a
   * copy of this graph's size tables, so its sizes are evaluated with this
   * plan's symbol values); the SCAN_OUT nodes after the root are the
   * buffers it writes */
  struct td_plan *body;
} td_kernel;

typedef enum td_bkind {
  TD_BUF_INPUT,   /* an entry argument (index = argument number) */
  TD_BUF_PARAM,   /* a parameter (index = parameter slot) */
  TD_BUF_OUTPUT,  /* returned to the caller (index = position in out_nodes) */
  TD_BUF_TEMP,    /* an intermediate in the arena (index = slot) */
  TD_BUF_UPDATE   /* an update's value, written into parameter slot index's own
                     memory (the graph's update_slots; plan.c "in place") */
  /* (these values are stored in built artifacts: artifact/artifact.h) */
} td_bkind;

typedef struct td_buffer {
  int node;
  td_bkind kind;
  int index;
  td_dim bytes;
  td_dim offset;              /* TEMP: byte offset in the arena (unaligned; see slots) */
  int first, last;            /* kernel writing it (-1: a leaf) and last kernel reading it */
} td_buffer;

typedef struct td_plan {
  td_graph *g;
  td_kernel *kernels;         /* in execution order */
  int n_kernels;
  td_buffer *bufs;
  int n_bufs;
  int *buf_of;                /* per node: index in bufs, or -1 */
  int *kernel_of;             /* per node: kernel computing it (-1: leaf, view or duplicated) */
  /* What the caller gets back: the graph's outputs, then every tensor
   * printed by a PRINT node (in program order, one per tensor part). */
  int *out_nodes;
  int n_out_nodes;
  /* The arena of temporaries: slot i holds the buffers with index i, one
   * after another in time; slots are laid out in order, each rounded up
   * to 64 bytes at run time. */
  td_dim *slot_bytes;
  int n_slots;
  td_dim arena_bytes;         /* sum of slot_bytes (before rounding) */
  td_dim output_bytes;        /* all OUTPUT buffers */
  int n_ops;                  /* compute ops of the graph (td_graph_count_ops) */
} td_plan;

/* Builds the plan of g (which should be optimised and verified).  Returns
 * NULL with err filled on failure (out of memory, an op the compiler does
 * not handle, a size that cannot be represented, or a plan that
 * td_plan_verify rejects: an internal error).  Every plan it returns has
 * passed td_plan_verify. */
td_plan *td_plan_build(td_graph *g, td_err *err);

/* Checks the plan against its graph: the ops fused into each kernel agree
 * on its iteration space and reduction axes, every op's inputs are
 * evaluated in its kernel or read from a buffer written before it, every
 * buffer has its value's bytes, no two temporaries live at once in one
 * arena slot, and the outputs and printed tensors are all handed back, in
 * order (plan_verify.c; docs/compiler.md, "The plan verifier").  0, or -1
 * with err naming the kernel, the op and its source line.  Allocates
 * sizes in the graph's arena. */
int td_plan_verify(const td_plan *p, td_err *err);

/* A matmul whose B operand is a parameter read at literal sizes, offset
 * and strides, the same matrix for every batch index (nn.Linear's
 * x @ w.T): compiled code packs it once per weight tensor and keeps the
 * packed copy (compiled.h) instead of packing it in every call. */
typedef struct td_prepack {
  int buf;                        /* the PARAM buffer (index in bufs) */
  int64_t n, k, off, sbk, sbn;    /* B[kk, j] = buf[off + kk*sbk + j*sbn] (elements) */
} td_prepack;

/* 1 with *pp filled when kernel k's B operand can be prepacked, else 0
 * (not a matmul, not f32/f64, B not a parameter, or symbolic sizes). */
int td_kernel_prepack(const td_plan *p, const td_kernel *k, td_prepack *pp);

/* Kernels with the same code identity (kernel_key.c): equal but for the
 * buffers they read and write, so one compiled function serves them all.
 * rep[k] is the first kernel of k's group (k itself for the first);
 * nodes[first[k] ...] lists the nodes kernel k's key numbers, in key
 * order (its own nodes in order, then the nodes it loads), so position i
 * of two kernels of one group is the same node of their code. */
typedef struct td_kgroups {
  int *rep;
  int *first;
  int *nodes;
  size_t n_nodes;
  int n_kernels, n_distinct;
} td_kgroups;
/* 0 with kg filled (td_kgroups_free), or -1 when memory runs out. */
int td_kernel_groups(const td_plan *p, td_kgroups *kg);
void td_kgroups_free(td_kgroups *kg);

/* "matmul+epilogue", "reduce", ... */
const char *td_kkind_name(td_kkind k);

/* Bytes of one value of node n (numel * dtype size) as a td_dim. */
td_dim td_node_bytes(td_graph *g, const td_node *n);

/* Is a <= b for every value of the symbols (all >= 0)?  Decided on the
 * coefficients of b - a: a sufficient test, exact for literals. */
int td_dim_le(td_graph *g, td_dim a, td_dim b);

/* The first SCAN node of the plan, or -1 (a backend that runs no scans
 * refuses such a plan with its source line). */
int td_plan_first_scan(const td_plan *p);
/* A print inside the step of one of p's scans (nested ones too), or NULL:
 * the CPU compiler and its artifacts print them, CUDA does not yet. */
const td_node *td_plan_scan_print(const td_plan *p);

/* Writes the plan as text (the --dump=fused format). */
void td_plan_print(const td_plan *p, const td_diags *d, FILE *out);

#endif

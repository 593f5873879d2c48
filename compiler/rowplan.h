/* rowplan.h - the roles of a row kernel's reductions, decided once for the
 * code generators.
 *
 * A REDUCE kernel's stage (plan.h's td_kstage) computes several reductions
 * in one pass over the reduced axes; the fusion pass pairs some of them
 * (td_kstage.partner).  Both code generators (the CPU one,
 * compiler/codegen_reduce.c, and the CUDA one, gpu/codegen_cuda.c) turn
 * each reduction into accumulators updated per element and finished per
 * row, and both decide the same things about it first: its role in a pair
 * (online softmax or moments), which node's value updates it, which
 * accumulators it keeps and in which type, their identity, the type of the
 * finished value, and (a moments tail) the node of the row's mean.  Those
 * decisions are made here, by pure analysis of the graph and the stage
 * (nothing is emitted or allocated); the generators only emit code for
 * them.  Strategy choices that one backend alone makes (the CPU's chunked,
 * wide-lane and stored-exp paths, CUDA's column mode) stay with it.
 */
#ifndef TD_ROWPLAN_H
#define TD_ROWPLAN_H

#include <stdint.h>

#include "../lang/ir.h"
#include "plan.h"

/* The role of a reduction in its stage.  The values are stable (0..4). */
typedef enum td_rrole {
  TD_RR_PLAIN = 0,         /* alone: sum, prod, max, min, argmax, argmin */
  TD_RR_ONLINE_HEAD = 1,   /* the running max m of an online-softmax pair */
  TD_RR_ONLINE_TAIL = 2,   /* s = sum(exp(x - m)), rescaled when m grows */
  TD_RR_MOMENTS_HEAD = 3,  /* sum(x) of a moments pair; also sums x*x */
  TD_RR_MOMENTS_TAIL = 4   /* sum((x - mu)^2), from its head's two sums */
} td_rrole;

/* The identity an accumulator starts from. */
typedef enum td_rinit {
  TD_RI_ZERO,      /* 0 (sums, the online tail, the moments head) */
  TD_RI_ONE,       /* 1 (products) */
  TD_RI_LOWEST,    /* -inf, or the integer minimum (max, argmax, online head) */
  TD_RI_HIGHEST    /* +inf, or the integer maximum (min, argmin) */
} td_rinit;

/* What a generator needs to know about one reduction of a stage. */
typedef struct td_rred {
  int node;            /* the REDUCE node */
  td_rrole role;
  int partner;         /* a tail: its head's index in the stage; else -1 */
  int src;             /* the node whose value at each element updates it
                          (an online tail: its head's input, the x of
                          exp(x - m); else the reduction's own input) */
  int steps;           /* 1: the generator emits its per-element update
                          (plain, online tail, moments head); 0: its
                          partner's update drives it (online head, moments
                          tail) */
  int has_acc;         /* keeps an accumulator (all but a moments tail) */
  int has_sq;          /* keeps a second f64 accumulator, of x*x (moments head) */
  int has_idx;         /* keeps an i64 index of the best element, -1 at first
                          (plain argmax/argmin) */
  td_dtype acc_dt;     /* the accumulator's dtype: F64 for float sums and
                          products, the online tail and the moments head,
                          I64 for integer sums and products, else the input
                          dtype (acc_dt and init: only where has_acc) */
  td_rinit init;       /* the accumulator's identity, kind ... */
  double init_f;       /* ... and value: init_f for float accumulators */
  int64_t init_i;      /* (0 else), init_i for integer ones (0 else) */
  td_dtype fin_dt;     /* the dtype of the finished value before it is
                          converted to the node's dtype: I64 (the index of
                          an arg), F64 (online tail, moments head and tail;
                          sums and products of a float dtype), I64 (of an
                          integer dtype), else the node's dtype */
  int mu;              /* a moments tail: the node of the row's mean mu
                          (the tail sums (x - mu)^2); else -1 */
} td_rred;

/* Fills out[0 .. S->n_reds) with the analysis of stage S's reductions in
 * graph g (the plan's graph): roles from S->partner (a pair whose tail
 * sums an EXP is an online softmax, any other pair is moments), then every
 * other field from the role and the nodes.  Pure: reads g and S only. */
void td_rowplan_stage(const td_graph *g, const td_kstage *S, td_rred *out);

/* The identity of reduction op (SUM, PROD, RMAX, RMIN, ARGMAX, ARGMIN)
 * for an accumulator of dtype acc_dt: its kind is returned, its value set
 * in *f (a float acc_dt; else 0) or *i (an integer or bool one; else 0):
 * 0 or 1 for sums and products, -inf / +inf for floats, the dtype's
 * minimum / maximum for I32 and I64, false / true for BOOL. */
td_rinit td_rowplan_identity(td_op op, td_dtype acc_dt, double *f, int64_t *i);

#endif

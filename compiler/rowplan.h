/* rowplan.h - the accumulators of a row kernel's reductions, decided once
 * for the code generators.
 *
 * A REDUCE kernel's stage (plan.h's td_kstage) computes several independent
 * reductions in one pass over the reduced axes.  Both code generators (the
 * CPU one, compiler/codegen_reduce.c, and the CUDA one, gpu/codegen_cuda_reduce.c)
 * turn each reduction into accumulators updated per element and finished
 * per row, and both decide the same things about it first: which
 * accumulators it keeps and in which type, their identity and the type of
 * the finished value.  Those decisions are made here, by pure analysis of
 * the graph and the stage (nothing is emitted or allocated); the
 * generators only emit code for them.  Strategy choices that one backend
 * alone makes (the CPU's 16 lanes and stored exp, CUDA's column mode) stay
 * with it.
 */
#ifndef TD_ROWPLAN_H
#define TD_ROWPLAN_H

#include <stdint.h>

#include "lang/ir.h"
#include "compiler/plan.h"

/* The identity an accumulator starts from. */
typedef enum td_rinit {
  TD_RI_ZERO,      /* 0 (sums) */
  TD_RI_ONE,       /* 1 (products) */
  TD_RI_LOWEST,    /* -inf, or the integer minimum (max, argmax) */
  TD_RI_HIGHEST    /* +inf, or the integer maximum (min, argmin) */
} td_rinit;

/* What a generator needs to know about one reduction of a stage. */
typedef struct td_rred {
  int node;            /* the REDUCE node */
  int src;             /* its input: the node whose value at each element
                          updates it */
  int has_idx;         /* keeps an i64 index of the best element, -1 at first
                          (argmax/argmin) */
  td_dtype acc_dt;     /* the accumulator's dtype: F64 for float sums and
                          products, I64 for integer ones, else the input
                          dtype */
  td_rinit init;       /* the accumulator's identity, kind ... */
  double init_f;       /* ... and value: init_f for float accumulators */
  int64_t init_i;      /* (0 else), init_i for integer ones (0 else) */
  td_dtype fin_dt;     /* the dtype of the finished value before it is
                          converted to the node's dtype: I64 (the index of
                          an arg), F64 (sums and products of a float dtype),
                          I64 (of an integer dtype), else the node's dtype */
} td_rred;

/* Fills out[0 .. S->n_reds) with the analysis of stage S's reductions in
 * graph g (the plan's graph).  Pure: reads g and S only. */
void td_rowplan_stage(const td_graph *g, const td_kstage *S, td_rred *out);

/* The identity of reduction op (SUM, PROD, RMAX, RMIN, ARGMAX, ARGMIN)
 * for an accumulator of dtype acc_dt: its kind is returned, its value set
 * in *f (a float acc_dt; else 0) or *i (an integer or bool one; else 0):
 * 0 or 1 for sums and products, -inf / +inf for floats, the dtype's
 * minimum / maximum for I32 and I64, false / true for BOOL. */
td_rinit td_rowplan_identity(td_op op, td_dtype acc_dt, double *f, int64_t *i);

#endif

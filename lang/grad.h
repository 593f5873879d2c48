/* grad.h - reverse-mode automatic differentiation on the Graph IR.
 *
 * An IR -> IR transformation: td_grad appends to a graph the nodes that
 * compute the gradient of one node with respect to others.  The result is
 * ordinary graph nodes (of ops.def's primitives, typed by ops.def's
 * contract), so every backend runs forward and backward as one graph and
 * the compiler fuses them together; gradients of gradients work the same
 * way.  This module uses only lang/ir.h and lang/diag.h: the elaborator
 * calls it (grad, value_and_grad), and nothing in it knows a backend.
 *
 * Each primitive's rule is in grad.c's table, one entry per ops.def line;
 * an op without a rule is reported, at the forward node's source line, as
 * "no gradient for <op>" when a gradient has to flow through it.
 * Non-differentiable ops (comparisons, argmax/argmin, casts to integers
 * or bool, random draws, integer arithmetic) pass no gradient, as in JAX.
 */
#ifndef TD_GRAD_H
#define TD_GRAD_H

#include "lang/diag.h"
#include "lang/ir.h"

/* Appends to g the gradient of node y with respect to nodes wrt[0..n_wrt):
 * grads[i] receives the id of a node with wrt[i]'s dtype and shape (a zero
 * tensor when y does not depend on wrt[i]; an integer or bool wrt[i] gets
 * zeros).  y must have a float dtype.  The cotangent seeded at y is node
 * `seed` (y's dtype and shape), or 1 when seed < 0 (y must then be rank 0).
 * New nodes carry the span of the forward node whose rule made them, so a
 * NaN found in the backward names the forward line.  Returns 0, or -1
 * after a diagnostic in d at `where` (or at the forward op's span for
 * "no gradient for <op>"), or -1 without one when memory runs out (the
 * caller reports it). */
int td_grad(td_graph *g, td_diags *d, td_span where, int y, int seed,
            const int *wrt, int n_wrt, int *grads);

/* 1 when op has a gradient rule (or is declared non-differentiable). */
int td_grad_has_rule(td_op op);

#endif

/* plan_impl.h - internal interface between the parts of the kernel planner
 * (fuse.c groups nodes into kernels, plan.c plans buffers and costs). */
#ifndef TD_PLAN_IMPL_H
#define TD_PLAN_IMPL_H

#include "compiler/plan.h"

/* Fills p->kernels, p->n_kernels and p->kernel_of from p->g (fuse.c). */
int tdc_fuse(td_plan *p, td_err *err);

/* Is the node a materialised value (a leaf or a kernel's root)? */
int tdc_is_materialised(const td_plan *p, int node);

/* Elementwise kinds: unary, binary, compare, ternary. */
int tdc_is_elementwise(td_op op);
/* May output node n, the update of parameter slot `slot`, be written into
 * the parameter's memory (plan.c)? */
int tdc_update_in_place_ok(const td_plan *p, int n, int slot);

/* The body plan of every scan kernel (plan_scan.c), and a scan kernel's
 * costs. */
int tdc_plan_scans(td_plan *p, td_err *err);
void tdc_scan_costs(td_plan *p, td_kernel *k);

/* Do two shapes have the same sizes apart from axes of size 1? */
int tdc_squeeze_eq(const td_dim *a, int ra, const td_dim *b, int rb);

#endif

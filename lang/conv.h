/* conv.h - the CONV primitive's rules, shared by the front end, the
 * verifier, the gradient and the backends: the typing contract of one
 * node, its printed attributes, and the size arithmetic that decides the
 * output size of a convolution or a pooling window. */
#ifndef TD_CONV_H
#define TD_CONV_H

#include <stdio.h>
#include "lang/ir.h"

/* Checks CONV node id against ops.def's contract: ranks 2 + spatial,
 * batch and channel sizes, groups, dtypes, attributes in range.  0, or -1
 * with err naming the node. */
int td_conv_verify(const td_graph *g, int id, td_err *err);

/* The attributes as int32s, in declaration order (for the keys of the
 * compile cache and of kernel sharing, compiler/plan_key.c). */
#define TD_CONV_ATTR_INTS ((int)(sizeof(td_conv_attr) / sizeof(int32_t)))
void td_conv_attr_ints(const td_conv_attr *a, int32_t *out);

/* " stride=[2,2] pad=[1,1] ..." for --dump=ir. */
void td_conv_print_attr(const td_conv_attr *a, FILE *out);

/* The value of d when it is a constant (a literal, or an interned
 * negative constant): 1 with *v set, else 0. */
int td_dim_const_value(const td_graph *g, td_dim d, int64_t *v);

/* The number of windows along one axis of a convolution or a pooling,
 * PyTorch's rule: floor((size + pad_lo + pad_hi - dil * (k - 1) - 1) /
 * stride) + 1, which is ceil((size + pad_lo + pad_hi - dil * (k - 1)) /
 * stride).  0 with *out set, -1 when a symbolic size makes it no
 * polynomial (the symbolic part of `size` is not a multiple of stride),
 * -2 when the padded input is shorter than the dilated kernel. */
int td_conv_windows(td_graph *g, td_dim size, int64_t pad_lo, int64_t pad_hi, int64_t k, int64_t dil,
                    int64_t stride, td_dim *out);

#endif

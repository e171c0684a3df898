/* The derivatives of the recorded operations (lib/autograd/derivatives.c), above the
 * operations they are computed with: the backward pass's table, keyed by the ids the
 * operations record (lib/graph/graph.h). */
#ifndef CLT_AUTOGRAD_DERIVATIVES_H
#define CLT_AUTOGRAD_DERIVATIVES_H

#include "graph/graph.h"

/* The derivative of operation op; NULL for CLT__OP_LEAF, a leaf's accumulation node. */
clt__backward_fn clt__derivative(clt__op op);

#endif

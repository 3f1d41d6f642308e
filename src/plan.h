/* The per-sparse-matrix plan: ME-TCF on the GPU plus statistics, cached with the descriptor. */
#ifndef TC_PLAN_H
#define TC_PLAN_H

#include "internal.h"

/* Frees the descriptor's plan, if any (destroy, set pointers, strided batch change). */
void tc_plan_invalidate(struct tcsparseSpMatDescr *d);

#endif

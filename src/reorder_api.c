/* Public functions of the row reordering (tcsparse_ext.h, docs/reorder.md). */
#include <stddef.h>
#include "error.h"
#include "internal.h"
#include "plan.h"
#include "reorder.h"

tcsparseStatus_t tcsparseSpMatSetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t mode)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorder: spMatDescr is NULL or destroyed");
    if ((int)mode < (int)TCSPARSE_REORDER_DEFAULT || (int)mode > (int)TCSPARSE_REORDER_ALWAYS)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorder: mode %d is not a tcsparseReorder_t "
                            "(DEFAULT 0, OFF 1, AUTO 2, ALWAYS 3)", (int)mode);
    /* the setting belongs to the plan, a cache: const descriptors take it too */
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    tc_spmat_lock(d);
    if (d->reorder != (int)mode) {
        d->reorder = (int)mode;
        tc_plan_invalidate(d);
    }
    tc_spmat_unlock(d);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t *mode)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetReorder: spMatDescr is NULL or destroyed");
    if (mode == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseSpMatGetReorder: mode is NULL");
    tc_spmat_lock(spMatDescr);
    *mode = (tcsparseReorder_t)spMatDescr->reorder;
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatSetReorderOrderings(tcsparseConstSpMatDescr_t spMatDescr,
                                                  unsigned orderings)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorderOrderings: spMatDescr is NULL or destroyed");
    if (orderings != 0 && ((orderings & ~(TC_ORD_ALL_CANDIDATES | 1u)) != 0 ||
                           (orderings & TC_ORD_ALL_CANDIDATES) == 0))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorderOrderings: mask 0x%x names no ordering or "
                            "one past TCSPARSE_ORDERING_MINHASH (bits 1-4)", orderings);
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    tc_spmat_lock(d);
    const unsigned m = orderings & TC_ORD_ALL_CANDIDATES;
    if (d->reorder_orderings != m) {
        d->reorder_orderings = m;
        tc_plan_invalidate(d);
    }
    tc_spmat_unlock(d);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetReorderOrderings(tcsparseConstSpMatDescr_t spMatDescr,
                                                  unsigned *orderings)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetReorderOrderings: spMatDescr is NULL or destroyed");
    if (orderings == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetReorderOrderings: orderings is NULL");
    tc_spmat_lock(spMatDescr);
    *orderings = spMatDescr->reorder_orderings;
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

const char *tcsparseGetOrderingName(tcsparseOrdering_t ordering)
{
    const int k = (int)ordering;
    return k >= 0 && k < TC_ORD_COUNT ? tc_ordering_name(k) : NULL;
}

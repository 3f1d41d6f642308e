/* Public functions of the row reordering (tcsparse_ext.h, docs/reorder.md). */
#include <stddef.h>
#include "error.h"
#include "internal.h"
#include "plan.h"
#include "reorder.h"

/* A reordering setting of the descriptor (d->reorder or d->reorder_orderings) set under its
 * lock; the settings belong to the plan, a cache, so const descriptors take them too, and a
 * change drops a plan built with the old one. */
static void set_setting(tcsparseConstSpMatDescr_t spMatDescr, int *field, int v)
{
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    tc_spmat_lock(d);
    if (*field != v) {
        *field = v;
        tc_plan_invalidate(d);
    }
    tc_spmat_unlock(d);
}

/* A getter's checks (the descriptor alive, somewhere to write), then the setting read under
 * the descriptor's lock into *v. */
static tcsparseStatus_t get_setting(const char *fn, tcsparseConstSpMatDescr_t d,
                                    const int *field, const void *out, const char *out_name,
                                    int *v)
{
    if (!tc_spmat_ok(d))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: spMatDescr is NULL or destroyed",
                            fn);
    if (out == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "%s: %s is NULL", fn, out_name);
    tc_spmat_lock(d);
    *v = *field;
    tc_spmat_unlock(d);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatSetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t mode)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorder: spMatDescr is NULL or destroyed");
    if ((int)mode < (int)TCSPARSE_REORDER_DEFAULT || (int)mode > (int)TCSPARSE_REORDER_LATE)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatSetReorder: mode %d is not a tcsparseReorder_t "
                            "(DEFAULT 0, OFF 1, AUTO 2, ALWAYS 3, LATE 4)", (int)mode);
    set_setting(spMatDescr, &((struct tcsparseSpMatDescr *)spMatDescr)->reorder, (int)mode);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetReorder(tcsparseConstSpMatDescr_t spMatDescr,
                                         tcsparseReorder_t *mode)
{
    tc_error_clear();
    int v = 0;
    tcsparseStatus_t st = get_setting("tcsparseSpMatGetReorder", spMatDescr,
                                      spMatDescr ? &spMatDescr->reorder : NULL, mode, "mode", &v);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *mode = (tcsparseReorder_t)v;
    return st;
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
                            "one past TCSPARSE_ORDERING_BFS (bits 1-5)", orderings);
    set_setting(spMatDescr, &((struct tcsparseSpMatDescr *)spMatDescr)->reorder_orderings,
                (int)(orderings & TC_ORD_ALL_CANDIDATES));
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetReorderOrderings(tcsparseConstSpMatDescr_t spMatDescr,
                                                  unsigned *orderings)
{
    tc_error_clear();
    int v = 0;
    tcsparseStatus_t st = get_setting("tcsparseSpMatGetReorderOrderings", spMatDescr,
                                      spMatDescr ? &spMatDescr->reorder_orderings : NULL,
                                      orderings, "orderings", &v);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *orderings = (unsigned)v;
    return st;
}

const char *tcsparseGetOrderingName(tcsparseOrdering_t ordering)
{
    const int k = (int)ordering;
    return k >= 0 && k < TC_ORD_COUNT ? tc_ordering_name(k) : NULL;
}

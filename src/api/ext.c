#include "error.h"
#include "internal.h"
#include "route.h"

tcsparseStatus_t tcsparseSetMathMode(tcsparseHandle_t handle, tcsparseMathMode_t mode)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetMathMode: handle is NULL or not a live tcsparse handle");
    if (mode != TCSPARSE_MATH_DEFAULT && mode != TCSPARSE_MATH_TF32)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetMathMode: mode %d is not a tcsparseMathMode_t", (int)mode);
    handle->math = mode;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseGetMathMode(tcsparseHandle_t handle, tcsparseMathMode_t *mode)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetMathMode: handle is NULL or not a live tcsparse handle");
    if (mode == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetMathMode: mode is NULL");
    *mode = handle->math;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSetRoute(tcsparseHandle_t handle, tcsparseRoute_t route)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetRoute: handle is NULL or not a live tcsparse handle");
    switch (route) {
    case TCSPARSE_ROUTE_AUTO:
    case TCSPARSE_ROUTE_TC:
    case TCSPARSE_ROUTE_CUSPARSE:
    case TCSPARSE_ROUTE_TC_BASE:
    case TCSPARSE_ROUTE_TC_BALANCED:
    case TCSPARSE_ROUTE_CUDA_CORE: break;
    default:
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetRoute: route %d is not a tcsparseRoute_t", (int)route);
    }
    handle->route = route;
    return TCSPARSE_STATUS_SUCCESS;
}

/* Returns the handle's setting; a TCSPARSE_ROUTE environment override is applied when a call
 * is routed, not here, so that a set/get round trip is exact. */
tcsparseStatus_t tcsparseGetRoute(tcsparseHandle_t handle, tcsparseRoute_t *route)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetRoute: handle is NULL or not a live tcsparse handle");
    if (route == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetRoute: route is NULL");
    *route = handle->route;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseGetLastRoute(tcsparseHandle_t handle, tcsparseRouteInfo_t *info)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetLastRoute: handle is NULL or not a live tcsparse handle");
    if (info == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetLastRoute: info is NULL");
    if (handle->pending_reason.kind != 0) { /* a model decision's text, made on demand */
        tc_reason_format(&handle->pending_reason, handle->last_route.reason,
                         sizeof handle->last_route.reason);
        handle->pending_reason.kind = 0;
    }
    *info = handle->last_route;
    return TCSPARSE_STATUS_SUCCESS;
}

#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "error.h"
#include "fallback.h"
#include "plan.h"

/* TCSPARSE_MATH=tf32 opts a whole program into TF32 without a code change, like
 * NVIDIA_TF32_OVERRIDE does for cuBLAS. */
static tcsparseMathMode_t tc_math_from_env(void)
{
    return tc_config_get()->math_tf32 ? TCSPARSE_MATH_TF32 : TCSPARSE_MATH_DEFAULT;
}

tcsparseStatus_t tcsparseCreate(tcsparseHandle_t *handle)
{
    tc_error_clear();
    if (handle == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseCreate: handle is NULL");
    struct tcsparseContext *h = calloc(1, sizeof *h);
    if (h == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tcsparseCreate: out of host memory");
    /* No CUDA call here: a handle must be creatable on a machine without a GPU. */
    h->magic = TC_MAGIC_HANDLE;
    h->stream = 0;
    h->pointer_mode = TCSPARSE_POINTER_MODE_HOST;
    h->math = tc_math_from_env();
    h->route = TCSPARSE_ROUTE_AUTO;
    h->cusp = NULL;
    h->device = -1;
    h->last_route.path = TCSPARSE_PATH_NONE;
    h->last_route.predicted_tc_us = -1.0;
    h->last_route.predicted_cusparse_us = -1.0;
    *handle = h;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseDestroy(tcsparseHandle_t handle)
{
    tc_error_clear();
    /* NULL is a no-op, as in cuSPARSE (and free). */
    if (handle == NULL)
        return TCSPARSE_STATUS_SUCCESS;
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseDestroy: handle is not a live tcsparse handle");
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    /* The workspaces and the cuSPARSE handle are the handle's device's: released with that
     * device current (the caller's may be another), then the caller's is put back. */
    int cur = -1;
    const int other = handle->cusp != NULL && cudaGetDevice(&cur) == cudaSuccess &&
                      cur != handle->device && cudaSetDevice(handle->device) == cudaSuccess;
    tc_alg3_release_all(handle);
    if (handle->cusp != NULL)
        st = tc_error_cusparse(cusparseDestroy(handle->cusp), "tcsparseDestroy: cusparseDestroy");
    handle->cusp = NULL;
    if (other)
        (void)cudaSetDevice(cur);
    handle->magic = TC_MAGIC_DEAD;
    tc_retire(handle); /* kept a while, so that a use after destroy reads the wiped magic */
    return st;
}

tcsparseStatus_t tcsparseGetVersion(tcsparseHandle_t handle, int *version)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetVersion: handle is NULL or not a live tcsparse handle");
    if (version == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetVersion: version is NULL");
    *version = TCSPARSE_VERSION;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseGetProperty(libraryPropertyType type, int *value)
{
    tc_error_clear();
    if (value == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetProperty: value is NULL");
    switch (type) {
    case MAJOR_VERSION: *value = TCSPARSE_VER_MAJOR; break;
    case MINOR_VERSION: *value = TCSPARSE_VER_MINOR; break;
    case PATCH_LEVEL: *value = TCSPARSE_VER_PATCH; break;
    default:
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetProperty: unknown libraryPropertyType %d", (int)type);
    }
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSetStream(tcsparseHandle_t handle, cudaStream_t streamId)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetStream: handle is NULL or not a live tcsparse handle");
    if (streamId != handle->stream)
        tc_alg3_stream_change(handle, handle->stream);
    /* The cuSPARSE handle first: on its failure the two must not disagree. */
    if (handle->cusp != NULL) {
        tcsparseStatus_t st = tc_error_cusparse(cusparseSetStream(handle->cusp, streamId),
                                                "tcsparseSetStream: cusparseSetStream");
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
    }
    handle->stream = streamId;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseGetStream(tcsparseHandle_t handle, cudaStream_t *streamId)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetStream: handle is NULL or not a live tcsparse handle");
    if (streamId == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetStream: streamId is NULL");
    *streamId = handle->stream;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseGetPointerMode(tcsparseHandle_t handle, tcsparsePointerMode_t *mode)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseGetPointerMode: handle is NULL or not a live tcsparse handle");
    if (mode == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseGetPointerMode: mode is NULL");
    *mode = handle->pointer_mode;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSetPointerMode(tcsparseHandle_t handle, tcsparsePointerMode_t mode)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetPointerMode: handle is NULL or not a live tcsparse handle");
    if (mode != TCSPARSE_POINTER_MODE_HOST && mode != TCSPARSE_POINTER_MODE_DEVICE)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSetPointerMode: mode %d is not a tcsparsePointerMode_t",
                            (int)mode);
    if (handle->cusp != NULL) {
        tcsparseStatus_t st =
            tc_error_cusparse(cusparseSetPointerMode(handle->cusp, (cusparsePointerMode_t)mode),
                              "tcsparseSetPointerMode: cusparseSetPointerMode");
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
    }
    handle->pointer_mode = mode;
    return TCSPARSE_STATUS_SUCCESS;
}

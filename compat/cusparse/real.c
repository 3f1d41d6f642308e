/* The interposer's ground (shim.h): the real cuSPARSE functions, found once (dlvsym for the
 * libcusparse.so.12 version, else dlsym(RTLD_NEXT)); the settings read from the environment,
 * in tc_shim_init alone; the rules of when a call may be routed or touch the tables; the log.
 * tcsparse's own cuSPARSE route is pointed at the real functions here (tc_hook_set_cusparse)
 * before any call, so that it never reaches the interposer's names. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

tc_shim_real_fns tc_shim_real;
tc_shim_settings tc_shim; /* filled by tc_shim_init from the core's configuration */
__thread int tc_shim_depth;
__thread cusparseStatus_t tc_shim_real_status;

static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

static void tc_atfork_child(void)
{
    tc_shim.forked = 1;
}

static void *tc_find(const char *name)
{
    void *f = dlvsym(RTLD_NEXT, name, "libcusparse.so.12");
    if (f == NULL)
        f = dlsym(RTLD_NEXT, name);
    return f;
}

static void tc_shim_init(void)
{
    /* a forked child forwards every call: a flag its fork handler raises, so that no call
     * pays for a getpid() */
    (void)pthread_atfork(NULL, NULL, tc_atfork_child);
#define TC_FIND(field, name) \
    (tc_shim_real.field = (__typeof__(tc_shim_real.field))tc_find(name)) != NULL
    /* each name on its own: a function missing from an older cuSPARSE must not leave the
     * others unresolved (they are still forwarded); routing needs all of them */
    int found = 1;
    found &= TC_FIND(spmm_buffer_size, "cusparseSpMM_bufferSize");
    found &= TC_FIND(spmm_preprocess, "cusparseSpMM_preprocess");
    found &= TC_FIND(spmm, "cusparseSpMM");
    found &= TC_FIND(sddmm_buffer_size, "cusparseSDDMM_bufferSize");
    found &= TC_FIND(sddmm_preprocess, "cusparseSDDMM_preprocess");
    found &= TC_FIND(sddmm, "cusparseSDDMM");
    found &= TC_FIND(destroy_spmat, "cusparseDestroySpMat");
    found &= TC_FIND(csr_set_pointers, "cusparseCsrSetPointers");
    found &= TC_FIND(csc_set_pointers, "cusparseCscSetPointers");
    found &= TC_FIND(coo_set_pointers, "cusparseCooSetPointers");
    found &= TC_FIND(spmat_set_values, "cusparseSpMatSetValues");
    found &= TC_FIND(csr_set_strided_batch, "cusparseCsrSetStridedBatch");
    found &= TC_FIND(coo_set_strided_batch, "cusparseCooSetStridedBatch");
    found &= TC_FIND(destroy, "cusparseDestroy");
    tc_shim.ready = found;
#undef TC_FIND
    if (tc_shim.ready) {
        /* tcsparse's own cuSPARSE route must reach the real cuSPARSE, never this library */
        const tc_cusparse_entry_points real = {
            tc_shim_real.spmm_buffer_size,  tc_shim_real.spmm_preprocess,
            tc_shim_real.spmm,              tc_shim_real.sddmm_buffer_size,
            tc_shim_real.sddmm_preprocess,  tc_shim_real.sddmm,
        };
        (void)tc_hook_set_cusparse(&real); /* all six are non-NULL: it cannot refuse */
    }
    tc_hook_settings set;
    (void)tc_hook_get_settings(&set); /* a non-NULL argument: it cannot refuse */
    tc_shim.passthrough = set.passthrough;
    tc_shim.log = set.log;
    tc_shim.keep = set.keep;
    tc_shim.convert_after = set.convert_after;
    tc_shim.trust = set.trust_pointers;
    tc_shim.measure = set.measure;
    if (!tc_shim.ready)
        fprintf(stderr, "tcsparse-preload: some real cuSPARSE functions were not found: the "
                        "others are forwarded, no call is routed, and a missing one fails "
                        "with CUSPARSE_STATUS_NOT_INITIALIZED\n");
    else if (tc_shim.log)
        fprintf(stderr, "tcsparse-preload: loaded (%s)\n",
                tc_shim.passthrough ? "TCSPARSE_ROUTE=cusparse: pass-through" : "routing");
}

void tc_shim_once(void)
{
    pthread_once(&tc_once, tc_shim_init);
}

__attribute__((constructor)) static void tc_preload_ctor(void)
{
    tc_shim_once();
}

int tc_shim_route_on(void)
{
    tc_shim_once();
    return tc_shim.ready && tc_shim_depth == 0 && !tc_shim.passthrough && !tc_shim.forked;
}

int tc_shim_top(void)
{
    tc_shim_once();
    return tc_shim_depth == 0 && !tc_shim.forked;
}

void tc_shim_logf(const char *fmt, ...)
{
    if (!tc_shim.log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tcsparse-preload: %s\n", line);
}

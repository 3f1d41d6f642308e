/* libtcsparse_grb_preload.so: GrB_mxm for unmodified SuiteSparse:GraphBLAS programs.
 *
 * With LD_PRELOAD naming this module, a dynamically linked program's GrB_mxm calls land
 * here and go through the adapter; whatever it does not accelerate goes to the real
 * GrB_mxm, found once with dlsym(RTLD_NEXT) (the next definition after this module: the
 * GraphBLAS library).  Nothing in this module calls GrB_mxm by name, and the version script
 * exports GrB_mxm alone.  TCSPARSE_LOG=1 prints one line per intercepted call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "grb_internal.h"

static tc_grb_mxm_fn tc_real_mxm;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;

static void tc_find_real(void)
{
    void *f = dlsym(RTLD_NEXT, "GrB_mxm");
    memcpy(&tc_real_mxm, &f, sizeof f); /* object pointer to function pointer, as POSIX allows */
    if (tc_real_mxm == NULL)
        fprintf(stderr, "tcsparse-grb: the real GrB_mxm was not found: %s\n", dlerror());
}

__attribute__((visibility("default"))) GrB_Info GrB_mxm(GrB_Matrix C, const GrB_Matrix Mask,
                                                        const GrB_BinaryOp accum,
                                                        const GrB_Semiring semiring,
                                                        const GrB_Matrix A, const GrB_Matrix B,
                                                        const GrB_Descriptor desc)
{
    pthread_once(&tc_once, tc_find_real);
    if (tc_real_mxm == NULL)
        return GrB_PANIC;
    return tc_grb_mxm(tc_real_mxm, "GrB_mxm intercepted", C, Mask, accum, semiring, A, B, desc);
}

/* The adapter library's entry point (libtcsparse_grb): the real GrB_mxm is the one the
 * program links against.  The preload module has its own entry point (grb_preload.c). */
#include "grb_internal.h"

GrB_Info tcsparse_GrB_mxm(GrB_Matrix C, const GrB_Matrix Mask, const GrB_BinaryOp accum,
                          const GrB_Semiring semiring, const GrB_Matrix A, const GrB_Matrix B,
                          const GrB_Descriptor desc)
{
    return tc_grb_mxm(GrB_mxm, "tcsparse_GrB_mxm", C, Mask, accum, semiring, A, B, desc);
}

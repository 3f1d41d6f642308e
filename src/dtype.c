#include "internal.h"

/* The value types tcsparse descriptors accept: those cuSPARSE's generic SpMM/SDDMM list. */
size_t tc_dtype_size(cudaDataType t)
{
    switch (t) {
    case CUDA_R_8I: return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
    case CUDA_R_32F:
    case CUDA_R_32I: return 4;
    case CUDA_R_64F:
    case CUDA_C_32F: return 8;
    case CUDA_C_64F: return 16;
    default: return 0;
    }
}

const char *tc_dtype_name(cudaDataType t)
{
    switch (t) {
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_C_16F: return "CUDA_C_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_C_16BF: return "CUDA_C_16BF";
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_C_32F: return "CUDA_C_32F";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_C_64F: return "CUDA_C_64F";
    case CUDA_R_4I: return "CUDA_R_4I";
    case CUDA_C_4I: return "CUDA_C_4I";
    case CUDA_R_4U: return "CUDA_R_4U";
    case CUDA_C_4U: return "CUDA_C_4U";
    case CUDA_R_8I: return "CUDA_R_8I";
    case CUDA_C_8I: return "CUDA_C_8I";
    case CUDA_R_8U: return "CUDA_R_8U";
    case CUDA_C_8U: return "CUDA_C_8U";
    case CUDA_R_16I: return "CUDA_R_16I";
    case CUDA_C_16I: return "CUDA_C_16I";
    case CUDA_R_16U: return "CUDA_R_16U";
    case CUDA_C_16U: return "CUDA_C_16U";
    case CUDA_R_32I: return "CUDA_R_32I";
    case CUDA_C_32I: return "CUDA_C_32I";
    case CUDA_R_32U: return "CUDA_R_32U";
    case CUDA_C_32U: return "CUDA_C_32U";
    case CUDA_R_64I: return "CUDA_R_64I";
    case CUDA_C_64I: return "CUDA_C_64I";
    case CUDA_R_64U: return "CUDA_R_64U";
    case CUDA_C_64U: return "CUDA_C_64U";
    case CUDA_R_8F_E4M3: return "CUDA_R_8F_E4M3";
    case CUDA_R_8F_E5M2: return "CUDA_R_8F_E5M2";
    default: return "unknown cudaDataType";
    }
}

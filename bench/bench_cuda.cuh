// What the hand-built CUDA benchmark programs of bench/ (csr_rows_spmm.cu, window_rows_spmm.cu)
// share: error checks that end the program with its name and the failing step, an upload, and
// the median of the timings.  Each program names itself first: bench::program() = "...".
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime_api.h>
#include <cusparse.h>

namespace bench {

inline const char *&program()
{
    static const char *name = "bench";
    return name;
}

inline void cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s: %s\n", program(), what, cudaGetErrorString(e));
        exit(1);
    }
}

inline void sparse_ok(cusparseStatus_t e, const char *what)
{
    if (e != CUSPARSE_STATUS_SUCCESS) {
        fprintf(stderr, "%s: %s: %s\n", program(), what, cusparseGetErrorString(e));
        exit(1);
    }
}

template <class X>
X *upload(const std::vector<X> &v)
{
    X *d = nullptr;
    cuda_ok(cudaMalloc(&d, std::max<size_t>(1, v.size()) * sizeof(X)), "cudaMalloc");
    if (!v.empty())
        cuda_ok(cudaMemcpy(d, v.data(), v.size() * sizeof(X), cudaMemcpyHostToDevice), "upload");
    return d;
}

inline float median(std::vector<float> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? NAN : v[v.size() / 2];
}

} // namespace bench

// csr_rows_spmm: the library's CUDA-core CSR SpMM (tc_spmm_csr_launch, kernels/spmm/spmm_csr.cu,
// on the schedule of tc_csr_sched_build, built once outside the timing: its time and bytes a
// nonzero are printed to stderr) against cuSPARSE ALG_DEFAULT, CSR_ALG2 and CSR_ALG3
// (preprocessed outside the timing), FP32,
// B and C row-major, all in one process, interleaved: each repetition runs every variant once
// (CUDA events, 3 warm-up rounds, median).  Every output is checked against a CPU reference in
// double (C poisoned with NaN first, so every element must be written; relative Frobenius
// error at most 1e-5).
//
// Build on the GPU machine, from a configured build tree (config.h) of the source tree:
//   nvcc -O3 -std=c++17 -arch=sm_90 -DHAVE_CONFIG_H -I. -Iinclude -Ikernels -Ikernels/common \
//       -Itools/common -o csr_rows_spmm bench/csr_rows_spmm.cu kernels/spmm/spmm_csr.cu \
//       kernels/spmm/spmm_csr_sched.cu tools/common/gen.c tools/common/mmio.c \
//       -lcusparse -lz
//   ./csr_rows_spmm [-n N] [-r REPS] INPUT...   (a Matrix Market file or a generator spec)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include <cusparse.h>
#include "bench_cuda.cuh"
extern "C" {
#include "gen.h"
}
#include "kernels.h"

using bench::cuda_ok;
using bench::median;
using bench::sparse_ok;
using bench::upload;

int main(int argc, char **argv)
{
    bench::program() = "csr_rows_spmm";
    int N = 128, reps = 20;
    int ai = 1;
    for (; ai < argc && argv[ai][0] == '-'; ++ai) {
        if (!strcmp(argv[ai], "-n") && ai + 1 < argc)
            N = atoi(argv[++ai]);
        else if (!strcmp(argv[ai], "-r") && ai + 1 < argc)
            reps = atoi(argv[++ai]);
        else {
            fprintf(stderr, "usage: csr_rows_spmm [-n N] [-r REPS] INPUT...\n");
            return 2;
        }
    }
    if (N <= 0 || N % 4 != 0 || reps <= 0 || ai >= argc) {
        fprintf(stderr, "csr_rows_spmm: N a positive multiple of 4, REPS > 0, an input\n");
        return 2;
    }
    cusparseHandle_t h;
    sparse_ok(cusparseCreate(&h), "cusparseCreate");
    printf("input,rows,nnz,max_row,N,variant,ms,x_best_cusparse,relerr\n");
    for (; ai < argc; ++ai) {
        tc_csr m{};
        char err[256];
        if (tc_csr_load(argv[ai], &m, err, sizeof err) != 0) {
            fprintf(stderr, "csr_rows_spmm: %s\n", err);
            return 1;
        }
        if (m.nnz >= INT32_MAX || m.rows >= INT32_MAX || m.cols >= INT32_MAX) {
            fprintf(stderr, "csr_rows_spmm: %s: too large for 32-bit indices\n", argv[ai]);
            return 1;
        }
        const int32_t M = (int32_t)m.rows, K = (int32_t)m.cols;
        std::vector<int32_t> off(M + 1);
        int32_t max_row = 0;
        for (int32_t r = 0; r <= M; ++r)
            off[r] = (int32_t)m.row_off[r];
        for (int32_t r = 0; r < M; ++r)
            max_row = std::max(max_row, off[r + 1] - off[r]);
        std::vector<float> val(m.nnz), B((size_t)K * N);
        for (int64_t k = 0; k < m.nnz; ++k)
            val[k] = (float)m.val[k];
        srand(7);
        for (auto &x : B)
            x = (float)rand() / RAND_MAX * 2.f - 1.f;
        std::vector<double> ref((size_t)M * N, 0.0);
        for (int32_t r = 0; r < M; ++r)
            for (int32_t k = off[r]; k < off[r + 1]; ++k)
                for (int c = 0; c < N; ++c)
                    ref[(size_t)r * N + c] += (double)val[k] * B[(size_t)m.col[k] * N + c];
        double ref_norm = 0;
        for (double x : ref)
            ref_norm += x * x;
        ref_norm = std::sqrt(ref_norm);

        std::vector<int32_t> colv(m.col, m.col + m.nnz);
        int32_t *d_off = upload(off), *d_col = upload(colv);
        float *d_val = upload(val), *d_B = upload(B), *d_C = nullptr;
        const size_t cbytes = (size_t)M * N * sizeof(float);
        cuda_ok(cudaMalloc(&d_C, std::max<size_t>(cbytes, 4)), "cudaMalloc C");

        cusparseSpMatDescr_t A;
        cusparseDnMatDescr_t Bd, Cd;
        sparse_ok(cusparseCreateCsr(&A, M, K, m.nnz, d_off, d_col, d_val, CUSPARSE_INDEX_32I,
                                    CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                  "csr");
        sparse_ok(cusparseCreateDnMat(&Bd, K, N, N, d_B, CUDA_R_32F, CUSPARSE_ORDER_ROW), "B");
        sparse_ok(cusparseCreateDnMat(&Cd, M, N, N, d_C, CUDA_R_32F, CUSPARSE_ORDER_ROW), "C");
        const float alpha = 1.f, beta = 0.f;
        const cusparseSpMMAlg_t algs[3] = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG2,
                                           CUSPARSE_SPMM_CSR_ALG3};
        void *ws[3] = {};
        for (int i = 0; i < 3; ++i) {
            size_t bytes = 0;
            sparse_ok(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                              CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A, Bd,
                                              &beta, Cd, CUDA_R_32F, algs[i], &bytes),
                      "bufferSize");
            cuda_ok(cudaMalloc(&ws[i], std::max<size_t>(bytes, 16)), "ws");
            if (algs[i] == CUSPARSE_SPMM_CSR_ALG3)
                sparse_ok(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                  CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A,
                                                  Bd, &beta, Cd, CUDA_R_32F, algs[i], ws[i]),
                          "preprocess");
        }

        struct Variant {
            std::string name;
            std::function<void()> run;
        };
        std::vector<Variant> vs;
        const char *alg_names[3] = {"cusparse ALG_DEFAULT", "cusparse CSR_ALG2",
                                    "cusparse CSR_ALG3"};
        for (int i = 0; i < 3; ++i)
            vs.push_back({alg_names[i], [&, i] {
                              sparse_ok(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                     CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A,
                                                     Bd, &beta, Cd, CUDA_R_32F, algs[i], ws[i]),
                                        "SpMM");
                          }});
        tc_spmm_args a{};
        a.M = M; a.K = K; a.N = N;
        a.ab_type = a.c_type = TC_T_F32;
        a.a_val = d_val; a.B = d_B; a.ldb = N; a.C = d_C; a.ldc = N;
        a.alpha = alpha; a.beta = beta;
        tc_csr_arrays csr{};
        csr.nnz = m.nnz; csr.offsets = d_off; csr.indices = d_col;
        tc_csr_sched sched{};
        {
            char msg[200];
            cudaEvent_t s0, s1;
            cuda_ok(cudaEventCreate(&s0), "event");
            cuda_ok(cudaEventCreate(&s1), "event");
            cuda_ok(cudaEventRecord(s0), "record");
            if (tc_csr_sched_build(&csr, M, 0, &sched, msg, sizeof msg) !=
                TCSPARSE_STATUS_SUCCESS) {
                fprintf(stderr, "csr_rows_spmm: %s\n", msg);
                return 1;
            }
            cuda_ok(cudaEventRecord(s1), "record");
            cuda_ok(cudaEventSynchronize(s1), "schedule");
            float ms = 0;
            cuda_ok(cudaEventElapsedTime(&ms, s0, s1), "elapsed");
            fprintf(stderr, "%s: schedule %.3f ms, %d units (%d pieces of %d split rows), "
                    "%.2f bytes a nonzero\n", argv[ai], ms, sched.nunits, sched.nsplit_units,
                    sched.nsplit_rows, (double)sched.bytes / (double)(m.nnz > 0 ? m.nnz : 1));
            cudaEventDestroy(s0);
            cudaEventDestroy(s1);
        }
        vs.push_back({"tcsparse CUDA cores", [&] {
                          char msg[200];
                          if (tc_spmm_csr_launch(&a, &csr, &sched, 0, msg, sizeof msg) !=
                              TCSPARSE_STATUS_SUCCESS) {
                              fprintf(stderr, "csr_rows_spmm: %s\n", msg);
                              exit(1);
                          }
                      }});

        // check every variant once (C poisoned with NaN first)
        std::vector<double> errs(vs.size());
        std::vector<float> out((size_t)M * N);
        for (size_t v = 0; v < vs.size(); ++v) {
            cuda_ok(cudaMemset(d_C, 0xff, cbytes), "poison");
            vs[v].run();
            cuda_ok(cudaDeviceSynchronize(), vs[v].name.c_str());
            cuda_ok(cudaMemcpy(out.data(), d_C, cbytes, cudaMemcpyDeviceToHost), "download");
            double e = 0;
            bool finite = true;
            for (size_t i = 0; i < out.size(); ++i) {
                finite = finite && std::isfinite(out[i]);
                e += (out[i] - ref[i]) * (out[i] - ref[i]);
            }
            errs[v] = finite ? std::sqrt(e) / (ref_norm > 0 ? ref_norm : 1) : INFINITY;
            if (!(errs[v] <= 1e-5)) {
                fprintf(stderr, "csr_rows_spmm: %s: %s: relative error %g%s\n", argv[ai],
                        vs[v].name.c_str(), errs[v], finite ? "" : " (non-finite output)");
                return 1;
            }
        }
        // interleaved timing: each repetition runs every variant once
        std::vector<std::vector<float>> t(vs.size());
        cudaEvent_t e0, e1;
        cuda_ok(cudaEventCreate(&e0), "event");
        cuda_ok(cudaEventCreate(&e1), "event");
        for (int r = 0; r < reps + 3; ++r)
            for (size_t v = 0; v < vs.size(); ++v) {
                cuda_ok(cudaEventRecord(e0), "record");
                vs[v].run();
                cuda_ok(cudaEventRecord(e1), "record");
                cuda_ok(cudaEventSynchronize(e1), vs[v].name.c_str());
                float ms = 0;
                cuda_ok(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
                if (r >= 3)
                    t[v].push_back(ms);
            }
        float best_cs = INFINITY;
        for (int v = 0; v < 3; ++v)
            best_cs = std::min(best_cs, median(t[v]));
        for (size_t v = 0; v < vs.size(); ++v)
            printf("%s,%d,%lld,%d,%d,%s,%.4f,%.3f,%.2e\n", argv[ai], M, (long long)m.nnz,
                   max_row, N, vs[v].name.c_str(), median(t[v]), best_cs / median(t[v]),
                   errs[v]);
        fflush(stdout);
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        for (auto p : ws)
            cudaFree(p);
        cusparseDestroySpMat(A);
        cusparseDestroyDnMat(Bd);
        cusparseDestroyDnMat(Cd);
        tc_csr_sched_free(&sched);
        cudaFree(d_off); cudaFree(d_col); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C);
        tc_csr_free(&m);
    }
    cusparseDestroy(h);
    return 0;
}

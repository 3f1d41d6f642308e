// window_rows_spmm: what 32-row windows buy the pipelined tensor-core SpMM on a GPU.
//
// The library's plans have 16-row windows.  bench/window_heights.c counted on the CPU how many
// fewer rows of B a block of 8 distinct columns gathers when its window is 32 rows tall (two
// 16 x 8 MMA tiles over the same 8 B rows).  This program measures it: for each input it builds
// both ME-TCF forms here on the host, uploads them, and times the library's pipelined kernel
// (spmm_pipe_kernel, TF32, J = 4, 3-slot ring: the default for TF32; warps a thread block as
// the library sets them) with R = 1 and R = 2 tiles a block, base (one thread block a window)
// and balanced (chunks of the conversion's default length for the device's SMs), next to
// cuSPARSE ALG_DEFAULT, all in one process: CUDA events, 3 warm-up runs, median of the rest.
// The balanced kernel's time includes a pass that zeroes its split windows' rows (the
// library's beta pass with beta = 0); its chunks are the same number of blocks for both
// plans, so a 32-row chunk holds about twice the MMAs.
// Every kernel's output is checked against a CPU reference in double (C poisoned with NaN
// first, so every element must be written): the run fails on a non-finite element, on an
// element whose error passes 4e-3 times the sum of |a||b| of its products (TF32 rounds each
// factor to 11 significant bits), or on a relative Frobenius error above 5e-3.
//
// The 32-row plan here is the CPU's: the library's conversion does not build it.
// Build on the GPU machine, from a configured build tree (config.h) of the source tree (the
// figures are in docs/performance.md, "Tried"):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DHAVE_CONFIG_H -I. -Iinclude -Isrc -Ikernels \
//       -Ikernels/common -Itools/common -o window_rows_spmm bench/window_rows_spmm.cu \
//       tools/common/gen.c tools/common/mmio.c -lcusparse -lz
//   ./window_rows_spmm [-n N] [-r REPS] INPUT...   (a Matrix Market file or a generator spec)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cusparse.h>
#include "bench_cuda.cuh"
extern "C" {
#include "gen.h"
#include "metcf_rules.h"
}
#include "spmm/spmm_kernel_pipe.cuh"

namespace {

using bench::cuda_ok;
using bench::median;
using bench::sparse_ok;
using bench::upload;

using tc::SpmmParams;
using tc::Tf32;

// ME-TCF with windows of `rows` rows, on the host (the layout of src/plan/metcf.h: blocks of 8
// distinct columns of one window, ascending; a block's nonzeros by position row * 8 + col).
struct Plan {
    int rows = 0;
    std::vector<int32_t> win_off{0}, blk_off{0}, blk_col, val_idx;
    std::vector<uint8_t> blk_pos;
    std::vector<int4> chunks; // balanced schedule: window, first block, end, split
    std::vector<int32_t> split_windows;
    int32_t windows() const { return (int32_t)win_off.size() - 1; }
    int32_t blocks() const { return (int32_t)blk_off.size() - 1; }
};

Plan build(const tc_csr &m, int rows, int sms)
{
    Plan h;
    h.rows = rows;
    const int64_t windows = (m.rows + rows - 1) / rows;
    std::vector<std::pair<int64_t, int32_t>> ents; // (column << 6 | row in window, nonzero)
    std::vector<std::pair<int, int32_t>> blk;      // (position, nonzero)
    for (int64_t w = 0; w < windows; ++w) {
        const int64_t r0 = w * rows, r1 = std::min<int64_t>(r0 + rows, m.rows);
        ents.clear();
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t e = m.row_off[r]; e < m.row_off[r + 1]; ++e)
                ents.push_back({((int64_t)m.col[e] << 6) | (r - r0), (int32_t)e});
        std::sort(ents.begin(), ents.end());
        size_t i = 0;
        while (i < ents.size()) { // one block: up to 8 distinct columns
            int32_t cols[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
            int cc = -1;
            blk.clear();
            for (; i < ents.size(); ++i) {
                const int32_t c = (int32_t)(ents[i].first >> 6);
                if (cc < 0 || c != cols[cc]) {
                    if (cc == 7)
                        break;
                    cols[++cc] = c;
                }
                blk.push_back({(int)(ents[i].first & 63) * 8 + cc, ents[i].second});
            }
            std::sort(blk.begin(), blk.end());
            for (const auto &x : blk) {
                h.blk_pos.push_back((uint8_t)x.first);
                h.val_idx.push_back(x.second);
            }
            h.blk_col.insert(h.blk_col.end(), cols, cols + 8);
            h.blk_off.push_back((int32_t)h.val_idx.size());
        }
        h.win_off.push_back(h.blocks());
    }
    const int32_t len = (int32_t)tc_default_chunk_blocks(h.blocks(), sms);
    for (int32_t w = 0; w < h.windows(); ++w) {
        const int32_t b0 = h.win_off[w], b1 = h.win_off[w + 1];
        const int split = b1 - b0 > len;
        if (split)
            h.split_windows.push_back(w);
        int32_t b = b0;
        do { // every window, even an empty one, has a chunk
            const int32_t e = std::min(b + len, b1);
            h.chunks.push_back(make_int4(w, b, e, split));
            b = e;
        } while (b < b1);
    }
    return h;
}

// Median time of run() between two events over reps runs, after 3 warm-up runs; before() runs
// ahead of each, outside the events.
template <class Before, class Run>
float time_median(int reps, Before before, Run run)
{
    cudaEvent_t a, b;
    cuda_ok(cudaEventCreate(&a), "event");
    cuda_ok(cudaEventCreate(&b), "event");
    std::vector<float> t;
    for (int it = 0; it < reps + 3; ++it) {
        before();
        cuda_ok(cudaEventRecord(a), "event");
        run();
        cuda_ok(cudaEventRecord(b), "event");
        cuda_ok(cudaEventSynchronize(b), "timed run");
        float ms = 0;
        cuda_ok(cudaEventElapsedTime(&ms, a, b), "event time");
        if (it >= 3)
            t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

struct Problem {
    const tc_csr *m;
    int64_t N;
    const float *dA, *dB;
    float *dC;
    const std::vector<double> *ref, *mag; // the products' sum and the sum of their |a||b|
    int reps;
};

constexpr double kElemTol = 4e-3, kFrobTol = 5e-3;

// Relative Frobenius error of C against the reference (infinity if an element is not finite
// or passes kElemTol times its magnitude).
double check(const Problem &pr)
{
    std::vector<float> c((size_t)(pr.m->rows * pr.N));
    cuda_ok(cudaMemcpy(c.data(), pr.dC, c.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "read back");
    double num = 0, den = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        const double d = c[i] - (*pr.ref)[i];
        if (!std::isfinite(c[i]) || std::fabs(d) > kElemTol * (*pr.mag)[i] + 1e-30)
            return INFINITY;
        num += d * d;
        den += (*pr.ref)[i] * (*pr.ref)[i];
    }
    return std::sqrt(num / (den > 0 ? den : 1.0));
}

// The rows of the listed windows zeroed: what the library's beta pass does with beta = 0
// before the balanced kernel adds into split windows.
__global__ void zero_windows(float *C, int64_t N, int64_t M, int rows, const int32_t *wins,
                             int32_t nwins)
{
    const int64_t per = (int64_t)rows * N, total = per * nwins;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t row = (int64_t)wins[i / per] * rows + (i % per) / N;
        if (row < M)
            C[row * N + i % N] = 0.0f;
    }
}

template <int R, bool kBalanced>
float time_kernel(const Problem &pr, const Plan &h, double *relerr)
{
    int32_t *win_off = upload(h.win_off), *blk_off = upload(h.blk_off);
    int32_t *blk_col = upload(h.blk_col), *val_idx = upload(h.val_idx);
    uint8_t *blk_pos = upload(h.blk_pos);
    int4 *chunks = upload(h.chunks);
    int32_t *split = upload(h.split_windows);
    const int32_t nsplit = (int32_t)h.split_windows.size();
    SpmmParams p{};
    p.M = pr.m->rows;
    p.N = pr.N;
    p.win_off = win_off; p.blk_off = blk_off; p.blk_col = blk_col;
    p.val_idx = val_idx; p.blk_pos = blk_pos;
    p.a_val = pr.dA; p.B = pr.dB; p.ldb = pr.N; p.C = pr.dC; p.ldc = pr.N;
    p.alpha = 1.0f;
    p.beta = 0.0f;
    p.chunks = kBalanced ? chunks : nullptr;
    p.items = kBalanced ? (int32_t)h.chunks.size() : h.windows();
    // warps a thread block as the library's launcher sets them (cta_warps): enough for N, at
    // most 4
    constexpr int kJ = 4, kS = 3, kWarps = tc::kMaxCtaWarps;
    const int64_t want = (pr.N + 8 * kJ - 1) / (8 * kJ);
    const int warps = want < kWarps ? (int)want : kWarps;
    p.n_slices = (int32_t)((pr.N + 8 * kJ * warps - 1) / (8 * kJ * warps));
    p.b_vec = p.c_vec = pr.N % 4 == 0; // cudaMalloc'ed: aligned when rows are 16 bytes
    const int smem = tc::spmm::pipe_smem_bytes<Tf32, kJ, R>(warps, kS);
    static_assert(tc::spmm::pipe_smem_bytes<Tf32, kJ, R>(kWarps, kS) <= 48 * 1024,
                  "launched without the shared-memory opt-in");
    auto kernel = tc::spmm::spmm_pipe_kernel<Tf32, float, kJ, kBalanced, kS, R>;
    const float ms = time_median(
        pr.reps,
        [&] {
            cuda_ok(cudaMemsetAsync(pr.dC, 0xff, (size_t)(pr.m->rows * pr.N) * sizeof(float)),
                    "poison");
        },
        [&] {
            if (kBalanced && nsplit > 0)
                zero_windows<<<1024, 256>>>(pr.dC, pr.N, pr.m->rows, h.rows, split, nsplit);
            if (p.items > 0 && p.n_slices > 0)
                kernel<<<dim3((unsigned)p.items, (unsigned)p.n_slices), warps * 32, smem>>>(p);
            cuda_ok(cudaGetLastError(), "launch");
        });
    *relerr = check(pr);
    cudaFree(win_off); cudaFree(blk_off); cudaFree(blk_col); cudaFree(val_idx);
    cudaFree(blk_pos); cudaFree(chunks); cudaFree(split);
    return ms;
}

float time_cusparse(const Problem &pr, cusparseHandle_t hs)
{
    const tc_csr &m = *pr.m;
    std::vector<int32_t> ro(m.row_off, m.row_off + m.rows + 1); // narrowed: nnz < 2^31 here
    std::vector<int32_t> ci(m.col, m.col + m.nnz);
    int32_t *d_ro = upload(ro), *d_ci = upload(ci);
    cusparseSpMatDescr_t a;
    cusparseDnMatDescr_t b, c;
    sparse_ok(cusparseCreateCsr(&a, m.rows, m.cols, m.nnz, d_ro, d_ci, (void *)pr.dA,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                CUDA_R_32F), "cusparseCreateCsr");
    sparse_ok(cusparseCreateDnMat(&b, m.cols, pr.N, pr.N, (void *)pr.dB, CUDA_R_32F,
                                  CUSPARSE_ORDER_ROW), "cusparseCreateDnMat");
    sparse_ok(cusparseCreateDnMat(&c, m.rows, pr.N, pr.N, pr.dC, CUDA_R_32F, CUSPARSE_ORDER_ROW),
              "cusparseCreateDnMat");
    const float alpha = 1.0f, beta = 0.0f;
    const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    size_t bytes = 0;
    sparse_ok(cusparseSpMM_bufferSize(hs, op, op, &alpha, a, b, &beta, c, CUDA_R_32F,
                                      CUSPARSE_SPMM_ALG_DEFAULT, &bytes), "bufferSize");
    void *buf = nullptr;
    cuda_ok(cudaMalloc(&buf, bytes + 16), "cudaMalloc");
    const float ms = time_median(pr.reps, [] {}, [&] {
        sparse_ok(cusparseSpMM(hs, op, op, &alpha, a, b, &beta, c, CUDA_R_32F,
                               CUSPARSE_SPMM_ALG_DEFAULT, buf), "cusparseSpMM");
    });
    cusparseDestroySpMat(a);
    cusparseDestroyDnMat(b);
    cusparseDestroyDnMat(c);
    cudaFree(buf); cudaFree(d_ro); cudaFree(d_ci);
    return ms;
}

} // namespace

int main(int argc, char **argv)
{
    bench::program() = "window_rows_spmm";
    int64_t N = 128;
    int reps = 20, first = 1;
    for (; first < argc && argv[first][0] == '-'; first += 2) {
        if (first + 1 >= argc)
            break;
        if (strcmp(argv[first], "-n") == 0)
            N = atoll(argv[first + 1]);
        else if (strcmp(argv[first], "-r") == 0)
            reps = atoi(argv[first + 1]);
        else
            break;
    }
    if (first >= argc || N < 1 || reps < 1) {
        fprintf(stderr, "usage: window_rows_spmm [-n N] [-r REPS] INPUT...\n");
        return 2;
    }
    cusparseHandle_t hs;
    sparse_ok(cusparseCreate(&hs), "cusparseCreate");
    int dev = 0, sms = 0;
    cuda_ok(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    int occ1 = 0, occ2 = 0;
    cuda_ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &occ1, tc::spmm::spmm_pipe_kernel<Tf32, float, 4, false, 3, 1>, 128,
                tc::spmm::pipe_smem_bytes<Tf32, 4, 1>(4, 3)), "occupancy");
    cuda_ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &occ2, tc::spmm::spmm_pipe_kernel<Tf32, float, 4, false, 3, 2>, 128,
                tc::spmm::pipe_smem_bytes<Tf32, 4, 2>(4, 3)), "occupancy");
    printf("# TF32, N = %lld, median of %d; thread blocks an SM: 16-row %d, 32-row %d\n",
           (long long)N, reps, occ1, occ2);
    printf("input,nnz,blocks16,blocks32,cusparse_ms,base16_ms,bal16_ms,base32_ms,bal32_ms,"
           "best16_over_best32,cusparse_over_best16,cusparse_over_best_of_both,max_relerr\n");
    int status = 0;
    for (int ai = first; ai < argc; ++ai) {
        tc_csr m;
        char err[256];
        if (tc_csr_load(argv[ai], &m, err, sizeof err) != 0) {
            fprintf(stderr, "window_rows_spmm: %s: %s\n", argv[ai], err);
            status = 1;
            continue;
        }
        if (m.nnz >= (1ll << 31) || m.rows >= (1ll << 31) - 32) {
            fprintf(stderr, "window_rows_spmm: %s: beyond the int32 plan\n", argv[ai]);
            tc_csr_free(&m);
            status = 1;
            continue;
        }
        std::vector<float> A(m.val, m.val + m.nnz), B((size_t)(m.cols * N));
        uint64_t x = 88172645463325252ull; // xorshift: B uniform in [-1, 1)
        for (float &v : B) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            v = (float)((double)(x >> 11) / 4503599627370496.0 - 1.0);
        }
        std::vector<double> ref((size_t)(m.rows * N), 0.0), mag(ref.size(), 0.0);
        for (int64_t r = 0; r < m.rows; ++r)
            for (int64_t e = m.row_off[r]; e < m.row_off[r + 1]; ++e) {
                const double a = A[e];
                const float *brow = &B[(size_t)m.col[e] * N];
                double *crow = &ref[(size_t)(r * N)], *mrow = &mag[(size_t)(r * N)];
                for (int64_t n = 0; n < N; ++n) {
                    crow[n] += a * brow[n];
                    mrow[n] += std::fabs(a * brow[n]);
                }
            }
        float *dA = upload(A), *dB = upload(B), *dC = nullptr;
        cuda_ok(cudaMalloc(&dC, std::max<size_t>(1, (size_t)(m.rows * N)) * sizeof(float)),
                "cudaMalloc");
        const Problem pr{&m, N, dA, dB, dC, &ref, &mag, reps};
        const float cu = time_cusparse(pr, hs);
        const Plan h16 = build(m, 16, sms), h32 = build(m, 32, sms);
        double e[4];
        const float t0 = time_kernel<1, false>(pr, h16, &e[0]);
        const float t1 = time_kernel<1, true>(pr, h16, &e[1]);
        const float t2 = time_kernel<2, false>(pr, h32, &e[2]);
        const float t3 = time_kernel<2, true>(pr, h32, &e[3]);
        const double worst = std::max(std::max(e[0], e[1]), std::max(e[2], e[3]));
        const float b16 = std::min(t0, t1), b32 = std::min(t2, t3);
        const char *name = strrchr(argv[ai], '/') ? strrchr(argv[ai], '/') + 1 : argv[ai];
        printf("%s,%lld,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.2e\n", name,
               (long long)m.nnz, h16.blocks(), h32.blocks(), cu, t0, t1, t2, t3, b16 / b32,
               cu / b16, cu / std::min(b16, b32), worst);
        fflush(stdout);
        if (!(worst <= kFrobTol)) {
            fprintf(stderr, "window_rows_spmm: %s: relative error %.3g (bound %.0e), an element "
                    "past %.0e of its magnitude, or one not written\n", argv[ai], worst, kFrobTol,
                    kElemTol);
            status = 1;
        }
        cudaFree(dA); cudaFree(dB); cudaFree(dC);
        tc_csr_free(&m);
    }
    cusparseDestroy(hs);
    return status;
}

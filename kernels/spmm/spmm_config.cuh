// Tile shapes and precision traits of the tensor-core SpMM.
//
// One warp computes a 16-row window times WARP_N = 8*J columns of B: J mma tiles of n8.
// Columns are interleaved so that each lane's B loads and C stores are contiguous:
// fragment column n of tile j is output column n0 + n*J + j.  Lane (g = lane/4, t = lane%4)
// then reads J consecutive elements of two B rows and writes 2*J consecutive elements of
// two C rows.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tc {

constexpr int kWinRows = 16;
constexpr int kBlkCols = 8;

struct Tf32 {     // FP32 data, one TF32 product
    using T = float;
    static constexpr bool kSplit = false;
    static constexpr bool kHalf = false;
};
struct Tf32x3 {   // FP32 data, 3xTF32: big*big in TF32, big*small + small*big in one BF16 MMA
    using T = float;
    static constexpr bool kSplit = true;
    static constexpr bool kHalf = false;
};
struct F16 {
    using T = __half;
    static constexpr bool kSplit = false;
    static constexpr bool kHalf = true;
};
struct Bf16 {
    using T = __nv_bfloat16;
    static constexpr bool kSplit = false;
    static constexpr bool kHalf = true;
};

template <class P, int J>
struct Shape {
    static constexpr int kJ = J;
    static constexpr int kWarpN = 8 * J;
    // bytes one lane reads from one B row: a whole number of 16-byte vectors
    static constexpr int kRowBytes = J * (int)sizeof(typename P::T);
    static_assert(kRowBytes % 16 == 0, "B loads must be whole 16-byte vectors");
    static_assert(J >= 4 && J <= 16, "J tiles per warp out of the tuned range");
};

} // namespace tc

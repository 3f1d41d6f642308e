// Window-local conversion of CSR on the GPU (no sort; convert_kernel.cuh has the sorted path
// and what both share).  Over 600 lines because the window-local pass is one piece: its
// short/long/both kernel kinds, the count-then-scan numbering of blocks and the small scans
// share their constants and device helpers, and splitting them would scatter one algorithm.
#pragma once
#include "convert_kernel.cuh"

namespace tc {

// ---- Window-local conversion of CSR (no row permutation, at most kLocalMaxCols columns) ----
//
// A CSR window's nonzeros are one contiguous range of the caller's arrays, and they keep that
// range in ME-TCF (windows in order, each window's nonzeros together), so one thread block
// can convert a window without any global sort.  A column's condensed index is the number of
// distinct columns of the window below it, found
//   * in a window of at most kShortMax nonzeros (a few a thread), by comparing the column
//     with those of the window's first occurrences, held in shared memory;
//   * in a longer window, from a bitmap of the window's columns over [min, max] in shared
//     memory and the prefix count of its words.
// A nonzero's slot in its block is then counted with the block's 128-bit occupancy mask, as
// in the sorted path (shared memory, or global memory for windows of more than
// kLocalOccBlocks blocks).  window_local<false, *> counts each window's blocks for the scan
// that numbers them, window_local<true, *> writes the window's blocks; each kernel takes the
// windows of its kind (short, long, or both: kBothKind below) and leaves the others.  The
// arrays are identical to the sorted path's; the columns within a row need not be sorted.
constexpr int kShortThreads = 64, kShortItems = 4; // short windows: at most 256 nonzeros
constexpr int kShortMax = kShortThreads * kShortItems;
constexpr int kLongThreads = 512; // 1024 measured slower on the BlogCatalog replicas and mdual
constexpr int kLongItems = 4;     // long windows: nonzeros a thread reads at a time (for_cols)
// The long kinds' registers bounded for 3 thread blocks of kLongThreads an SM (40 a thread).
// Unbounded, the placing kernels took 64, which leaves 2 blocks an SM: one wave of ogbl-ddi's
// 267 windows needs 3 on 132 SMs (local_fit_stage fits the staging area for 3).  The
// ordered-rows (kOrd) placing kernels spill a little at 40 (ptxas: up to 40 bytes stored,
// 92 loaded a thread).
constexpr int kLongMinBlocks = 3;
constexpr int64_t kLocalMaxCols = 1 << 18; // long windows' bitmap and prefix counts: 64 KiB
constexpr int kLocalOccBlocks = 1024;      // long windows' occupancy in shared memory (20 KiB)

struct MinOp {
    __device__ __forceinline__ int operator()(int a, int b) const { return a < b ? a : b; }
};
struct MaxOp {
    __device__ __forceinline__ int operator()(int a, int b) const { return a > b ? a : b; }
};

// Row of nonzero j within its window: the last r with ro[r] <= j.
template <typename T>
__device__ __forceinline__ int row_in_window(const T *ro, T j)
{
    int r = 0;
    for (int step = 8; step > 0; step >>= 1)
        if (ro[r + step] <= j)
            r += step;
    return r;
}

// Row r's nonzeros [b, e) in the caller's arrays, clamped into [0, nnz]; a decreasing pair
// reads as an empty row (check_offsets flags both).
__device__ __forceinline__ void row_range(const void *off, int off64, int64_t r, int64_t nnz,
                                          int base, int64_t &b, int64_t &e)
{
    b = ld_any(off, off64, r) - base;
    e = ld_any(off, off64, r + 1) - base;
    b = b < 0 ? 0 : b > nnz ? nnz : b;
    e = e < b ? b : e > nnz ? nnz : e;
}

// Short windows run in thread blocks of kShortThreads (many windows in flight on an SM),
// long ones in blocks of kLongThreads (a long window's passes spread over more threads):
// kKind = kShortKind and kLongKind, each kernel taking the windows of its kind.  When windows
// are few (at most kBothMaxWindows) one kernel of kLongThreads takes both kinds (kBothKind; a
// short window then on its first kShortThreads threads): one launch a pass instead of two,
// whose host time was on the path to the placing pass.
constexpr int kShortKind = 0, kLongKind = 1, kBothKind = 2;
constexpr int32_t kBothMaxWindows = 4096;
constexpr size_t kBothMaxBitmap = 16 * 1024; // bytes of bitmap and prefix counts (4096 words each)

// The order in which a window_local pass of one thread block a window (kBothKind) takes the
// windows: thread block b takes window order[tc_snake_rank(b, windows, sm_count)]
// (metcf_rules.h), order listing the windows by decreasing nonzeros, so that an SM's windows
// add up to about the mean.  In the caller's order an SM could get two of the longest:
// ogbl-ddi's busiest SM had 1.8 times the mean nonzeros (29,149 against 16,180; 1.31 times
// with this order), and its passes took as long as that SM (docs/performance.md, "Plan build").

// The short windows' barrier: the block's, or in a kBothKind block (whose other threads have
// left) a named barrier of its first kShortThreads threads (two whole warps).
template <int kKind>
__device__ __forceinline__ void short_sync()
{
    static_assert(kShortThreads % 32 == 0, "the named barrier counts whole warps");
    if constexpr (kKind == kBothKind)
        asm volatile("bar.sync 1, %0;" ::"n"(kShortThreads) : "memory");
    else
        __syncthreads();
}

// The window offsets a window_local pass reads (clamped into [0, nnz]), row r (at most rows):
// the window's own in window_local_one, its two ends in find_long_windows, which must class
// the windows as the pass does.
template <bool kOrd>
__device__ __forceinline__ int64_t window_row_offset(const void *off, int off64, int64_t rows,
                                                     int64_t nnz, int base,
                                                     const int32_t *perm, const int64_t *pro,
                                                     int64_t r)
{
    r = r < rows ? r : rows;
    const int64_t v = kOrd && perm != nullptr ? pro[r] : ld_any(off, off64, r) - base;
    return v < 0 ? 0 : v > nnz ? nnz : v;
}

template <bool kPlace, int kKind, bool kOrd = false>
__device__ __forceinline__ void
    window_local_one(const int32_t w, const void *off, int off64, const void *idx, int idx64,
                     int64_t rows, int64_t cols, int64_t nnz, int base, int32_t windows,
                     int64_t bub, int wmax, int stage_cap, const int32_t *perm_in,
                     const int64_t *pro, const int *ordered, int32_t *nblk, int2 *crange,
                     const int32_t *win_off, int32_t *blk_col, int32_t *blk_off, unsigned *occ,
                     uint8_t *blk_pos, int32_t *val_idx, int *flags)
{
    constexpr bool kLong = kKind != kShortKind; // the long windows' code and block size
    constexpr int NT = kLong ? kLongThreads : kShortThreads;
    using Reduce = cub::BlockReduce<int, NT>;
    using Scan = cub::BlockScan<int, NT>;
    __shared__ union {
        typename Reduce::TempStorage r;
        typename Scan::TempStorage s;
        int col[2][kKind == kLongKind ? 1 : kShortMax]; // short windows: columns, first occurrences
    } tmp;
    __shared__ int64_t ro[17];
    __shared__ int64_t rdel[16]; // rows ordered (perm): a nonzero's caller position minus its own
    __shared__ int ro32[17], rdel32[16]; // the same in 32 bits (positions <= nnz < 2^31)
    __shared__ int sh_a, sh_b, sh_bad;
    __shared__ uint4 so[kLong ? kLocalOccBlocks : kShortMax / 8];
    __shared__ int sboff[kLong ? kLocalOccBlocks : kShortMax / 8];
    // long windows: bitmap, then prefix counts (wmax words each), then (placing, stage_cap > 0)
    // the staged value indices (stage_cap words; first the condensed columns) and positions
    // (stage_cap bytes)
    extern __shared__ unsigned smem[];
    const int t = threadIdx.x;
    // Rows ordered on the GPU (kOrd kernels only, so that the others are compiled as if the
    // order did not exist): when perm_in is given and, with `ordered`, the order was taken.
    const int32_t *perm =
        kOrd && perm_in != nullptr && (ordered == nullptr || *ordered) ? perm_in : nullptr;
    // The window's row offsets, clamped into [0, nnz] (check_offsets flags them).  With rows
    // ordered on the GPU, window row i is the caller's row perm[16 w + i]: the offsets are
    // the ordered ones (pro), where the window's nonzeros are numbered contiguously as in
    // the plan, and rdel maps that number back to the caller's arrays.
    if (t < 17) {
        ro[t] = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro,
                                        (int64_t)w * 16 + t);
        ro32[t] = (int)ro[t];
    }
    if (perm != nullptr && t < 16) {
        const int64_t r = (int64_t)w * 16 + t;
        int64_t b = 0, e = 0;
        if (r < rows)
            row_range(off, off64, perm[r], nnz, base, b, e);
        rdel[t] = b; // minus ro[t] below, once ro is complete
    }
    if (kPlace && kKind != kLongKind && w == windows - 1 && t == 0) {
        const int32_t tot = win_off[windows];
        if (tot >= 0 && tot <= bub)
            blk_off[tot] = (int32_t)nnz;
    }
    __syncthreads();
    // Invalid offsets (flagged by check_offsets, which ran before on the stream, or
    // decreasing inside this window) would make windows overlap: their nonzeros counted
    // again for every window, work without bound and more blocks than the plan holds.  Every
    // window then stops here; the writes below are bounded by the plan's sizes in any case.
    if (t == 0) {
        int bad = *reinterpret_cast<volatile int *>(flags) & kBadOffsets;
        for (int k = 0; k < 16; k++)
            bad |= ro[k + 1] < ro[k];
        sh_a = bad;
    }
    if (perm != nullptr && t < 16) {
        rdel[t] -= ro[t];
        rdel32[t] = (int)rdel[t];
    }
    __syncthreads();
    // the caller's position of the window's nonzero j (window row r)
    auto src = [&](int64_t j, int r) -> int64_t { return perm != nullptr ? j + rdel[r] : j; };
    if (sh_a) {
        if (!kPlace && kKind != kLongKind && t == 0) { // one counting kernel reports it
            nblk[w] = 0;
            atomicOr(flags, kBadOffsets);
        }
        return;
    }
    const int64_t s = ro[0], e = ro[16];
    const bool is_long = e - s > kShortMax; // uniform over the block
    if ((kKind == kShortKind && is_long) || (kKind == kLongKind && !is_long))
        return; // the other kernel's window
    const int32_t wo = kPlace ? win_off[w] : 0, nb = kPlace ? win_off[w + 1] - wo : 0;
    __syncthreads(); // sh_a is reused below

    if (kKind != kLongKind && !is_long) {
        if (kKind == kBothKind && t >= kShortThreads)
            return; // the rest is done by the first kShortThreads (short_sync)
        // item k of thread t is the window's nonzero t + k * kShortThreads
        const int n = (int)(e - s);
        int c[kShortItems], lrow[kShortItems], lc[kShortItems];
        bool first[kShortItems];
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            const int i = t + k * kShortThreads;
            c[k] = -1;
            lrow[k] = 0;
            lc[k] = 0;
            if (i < n) {
                const int r = row_in_window(ro, s + i);
                const int64_t cc = ld_any(idx, idx64, src(s + i, r)) - base;
                if (cc >= 0 && cc < cols) {
                    c[k] = (int)cc;
                    lrow[k] = r;
                } else if (!kPlace) {
                    atomicOr(flags, kBadIndex);
                }
            }
            tmp.col[0][i] = c[k];
        }
        short_sync<kKind>();
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            const int i = t + k * kShortThreads;
            first[k] = c[k] >= 0;
            for (int q = 0; first[k] && q < i; q++)
                first[k] = tmp.col[0][q] != c[k];
            tmp.col[1][i] = first[k] ? c[k] : INT_MAX;
        }
        short_sync<kKind>();
        int d = 0; // condensed index: distinct columns below c
        for (int q = 0; q < n; q++) {
            const int f = tmp.col[1][q];
            d += f != INT_MAX;
#pragma unroll
            for (int k = 0; k < kShortItems; k++)
                lc[k] += f < c[k];
        }
        if (!kPlace) {
            if (t == 0)
                nblk[w] = (d + 7) / 8;
            return;
        }
        if (nb != (d + 7) / 8 || wo < 0 || (int64_t)wo + nb > bub) { // never, but bounded
            if (t == 0)
                atomicOr(flags, kBadOffsets);
            return;
        }
#pragma unroll
        for (int k = 0; k < kShortItems; k++)
            if (first[k])
                blk_col[((int64_t)wo + lc[k] / 8) * 8 + lc[k] % 8] = c[k];
        if (t < nb * 8 - d)
            blk_col[(int64_t)wo * 8 + d + t] = -1;
        if (t < nb)
            so[t] = make_uint4(0, 0, 0, 0);
        short_sync<kKind>();
        unsigned *sw = reinterpret_cast<unsigned *>(so);
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            if (c[k] < 0)
                continue;
            const int pos = lrow[k] * 8 + lc[k] % 8;
            const unsigned bit = 1u << (pos & 31);
            if (atomicOr(&sw[lc[k] / 8 * 4 + (pos >> 5)], bit) & bit)
                atomicOr(flags, kDuplicate); // the same row and column twice
        }
        short_sync<kKind>();
        if (t < 32) { // nb <= 32: one warp numbers the blocks' nonzeros
            const int cnt = t < nb ? popc4(so[t]) : 0;
            int inc = cnt;
            for (int k = 1; k < 32; k <<= 1) {
                const int y = __shfl_up_sync(0xffffffffu, inc, k);
                if (t >= k)
                    inc += y;
            }
            if (t < nb) {
                sboff[t] = inc - cnt;
                blk_off[wo + t] = (int32_t)(s + inc - cnt);
            }
        }
        short_sync<kKind>();
#pragma unroll
        for (int k = 0; k < kShortItems; k++) {
            if (c[k] < 0)
                continue;
            const int lb = lc[k] / 8, pos = lrow[k] * 8 + lc[k] % 8;
            const int64_t dst = s + sboff[lb] + rank_in(so[lb], pos);
            if (dst < e) {
                blk_pos[dst] = (uint8_t)pos;
                val_idx[dst] = (int32_t)src(s + t + k * kShortThreads, lrow[k]);
            }
        }
        return;
    }

    // Long windows read their nonzeros' columns in every loop below, kLongItems a thread at a
    // time, in two phases: prep(r, p, c) for each (window row r, found when kRow or for
    // ordered rows; caller position p; column c), which only loads, then commit(prep's
    // result) for each, which stores.  So the items' loads (the columns' from global memory,
    // then the bitmap's, prefix counts' and occupancy's from shared memory) are in flight
    // together: one item at a time, each item's loads waited for the stores of the one
    // before (the compiler cannot tell the shared-memory arrays apart), and the passes were
    // bound by those loads' latency (ogbl-ddi, 267 windows of 8,000 nonzeros: 23 + 58 us).
    // Within a window, in 32 bits: positions (j, p) are below nnz < 2^31 (tc_convert_gpu
    // refuses more); a column out of range reads as c = -1.
    const int s32 = (int)s, e32 = (int)e;
    auto for_cols = [&](auto kRowTag, auto &&prep, auto &&commit) {
        constexpr bool kRow = decltype(kRowTag)::value;
        using Item = decltype(prep(0, 0, 0));
        for (int64_t j0 = s + t; j0 < e; j0 += (int64_t)kLongItems * NT) {
            int c[kLongItems], p[kLongItems], r[kLongItems];
#pragma unroll
            for (int u = 0; u < kLongItems; u++) {
                const int64_t j = j0 + (int64_t)u * NT;
                const int jj = j < e ? (int)j : s32; // past the end: a valid place, not used
                r[u] = kRow || perm != nullptr ? row_in_window(ro32, jj) : 0;
                p[u] = perm != nullptr ? jj + rdel32[r[u]] : jj;
                const int64_t cc = ld_any(idx, idx64, p[u]) - base;
                c[u] = cc >= 0 && cc < cols ? (int)cc : -1;
            }
            Item v[kLongItems];
#pragma unroll
            for (int u = 0; u < kLongItems; u++)
                v[u] = prep(r[u], p[u], c[u]);
#pragma unroll
            for (int u = 0; u < kLongItems; u++)
                if (j0 + (int64_t)u * NT < e)
                    commit(v[u]);
        }
    };
    auto col_of = [](int, int, int c) { return c; };
    using NoRow = std::integral_constant<bool, false>;
    using WithRow = std::integral_constant<bool, true>;
    // long windows: the column range; invalid columns are flagged and skipped after
    // (the counting pass finds it and keeps it in crange for the placing pass)
    int cmin = INT_MAX, cmax = -1;
    if (kPlace) {
        const int2 cr = crange[w];
        cmin = cr.x;
        cmax = cr.y;
    } else {
        for_cols(NoRow{}, col_of, [&](int c) {
            if (c < 0) {
                atomicOr(flags, kBadIndex);
                return;
            }
            cmin = min(cmin, c);
            cmax = max(cmax, c);
        });
        int v = Reduce(tmp.r).Reduce(cmin, MinOp());
        if (t == 0)
            sh_a = v;
        __syncthreads();
        v = Reduce(tmp.r).Reduce(cmax, MaxOp());
        if (t == 0) {
            sh_b = v;
            crange[w] = make_int2(sh_a, v);
        }
        __syncthreads();
        cmin = sh_a;
        cmax = sh_b;
    }
    if (cmin > cmax || cmin < 0 || cmax >= cols) // crange only ever holds a valid range
        cmax = -1;
    if (cmax < 0) { // no valid nonzero: no block
        if (!kPlace && t == 0)
            nblk[w] = 0;
        return;
    }
    const int nw = (cmax - cmin) / 32 + 1;
    unsigned *bm = smem, *pref = smem + wmax; // wmax = ceil(cols / 32) >= nw
    for (int i = t; i < nw; i += NT)
        bm[i] = 0;
    __syncthreads();
    for_cols(NoRow{}, col_of, [&](int c) {
        if (c >= 0)
            atomicOr(&bm[(c - cmin) >> 5], 1u << ((c - cmin) & 31));
    });
    __syncthreads();
    // each thread counts a contiguous run of words; the scan numbers the distinct columns
    const int per = (nw + NT - 1) / NT, w0 = t * per;
    const int w1 = w0 + per < nw ? w0 + per : nw;
    int mine = 0;
    for (int i = w0; i < w1; i++)
        mine += __popc(bm[i]);
    int first, d;
    Scan(tmp.s).ExclusiveSum(mine, first, d);
    if (!kPlace) {
        if (t == 0)
            nblk[w] = (d + 7) / 8;
        return;
    }
    if (nb != (d + 7) / 8 || wo < 0 || (int64_t)wo + nb > bub) {
        if (t == 0)
            atomicOr(flags, kBadOffsets);
        return;
    }
    // The condensed columns and their prefix counts.  A thread writes the columns of its run of
    // words, so a warp's stores are 32 runs apart: written straight to the plan, each touched a
    // sector of its own (ogbl-ddi's placing pass: 49% of its global sectors were excess).  When
    // they fit the staging area (free until the nonzeros are staged, below) they go there and
    // are copied out in order after the next barrier.
    int32_t *sval = reinterpret_cast<int32_t *>(smem + 2 * wmax);
    const bool cols_staged = nb * 8 <= stage_cap; // uniform over the block
    int32_t *cdst = cols_staged ? sval : blk_col + (int64_t)wo * 8;
    for (int i = w0, lc = first; i < w1; i++) {
        pref[i] = lc;
        for (unsigned bits = bm[i]; bits != 0; bits &= bits - 1, lc++)
            cdst[lc] = cmin + 32 * i + __ffs(bits) - 1;
    }
    if (t < nb * 8 - d)
        cdst[d + t] = -1;
    // occupancy in shared memory when the window's blocks fit, else in the scratch
    const bool in_smem = nb <= kLocalOccBlocks;
    uint4 *o4 = in_smem ? so : reinterpret_cast<uint4 *>(occ) + wo;
    for (int b = t; b < nb; b += NT)
        o4[b] = make_uint4(0, 0, 0, 0);
    if (t == 0)
        sh_bad = 0;
    __syncthreads();
    if (cols_staged) // read before the barrier after the occupancy pass; staging comes after it
        for (int i = t; i < nb * 8; i += NT)
            blk_col[(int64_t)wo * 8 + i] = sval[i];
    // a nonzero's block (lb; -1: its column is out of range) and position in it, and (the
    // placing loop) its place in the plan (dst) and caller position (p)
    struct Slot {
        int lb, pos, dst, p;
    };
    auto place = [&](int r, int p, int c) {
        Slot q{-1, 0, 0, p};
        if (c >= 0) {
            const int i = c - cmin;
            const int lc = pref[i >> 5] + __popc(bm[i >> 5] & ((1u << (i & 31)) - 1u));
            q.lb = lc / 8;
            q.pos = r * 8 + lc % 8;
        }
        return q;
    };
    unsigned *ow = reinterpret_cast<unsigned *>(o4);
    for_cols(WithRow{}, place, [&](const Slot &q) {
        if (q.lb < 0) { // a column out of range (flagged by the counting pass)
            sh_bad = 1;
            return;
        }
        const unsigned bit = 1u << (q.pos & 31);
        if (atomicOr(&ow[q.lb * 4 + (q.pos >> 5)], bit) & bit) {
            atomicOr(flags, kDuplicate);
            sh_bad = 1;
        }
    });
    __syncthreads();
    // The plan is refused: nothing more to write.  (Duplicates would share a place, and a
    // skipped nonzero would leave a staged slot unwritten.)
    if (sh_bad)
        return;
    // each block's first nonzero: the window's start plus the nonzeros of the blocks before
    int carry = 0;
    for (int b0 = 0; b0 < nb; b0 += NT) {
        const int b = b0 + t;
        const int cnt = b < nb ? popc4(in_smem ? so[b] : __ldcg(&o4[b])) : 0;
        int ex, tot;
        Scan(tmp.s).ExclusiveSum(cnt, ex, tot);
        if (b < nb) {
            blk_off[wo + b] = (int32_t)(s + carry + ex);
            if (in_smem)
                sboff[b] = carry + ex;
        }
        carry += tot;
        __syncthreads();
    }
    // A nonzero's place in the window's range is scattered over it: a window that fits the
    // staging area is written there first and copied out in order (coalesced), the others
    // straight to global memory.  (On ogbl-ddi, 63% of the pass's global sectors were the
    // scattered writes' excess.)
    const bool staged = e - s <= (int64_t)stage_cap; // uniform over the block
    uint8_t *spos = reinterpret_cast<uint8_t *>(sval + stage_cap);
    for_cols(
        WithRow{},
        [&](int r, int p, int c) {
            Slot q = place(r, p, c);
            if (q.lb >= 0) {
                const int first_nz = in_smem ? s32 + sboff[q.lb] : __ldcg(&blk_off[wo + q.lb]);
                q.dst = first_nz + rank_in(in_smem ? so[q.lb] : __ldcg(&o4[q.lb]), q.pos);
            }
            return q;
        },
        [&](const Slot &q) {
            if (q.lb < 0 || q.dst < s32 || q.dst >= e32)
                return;
            if (staged) {
                spos[q.dst - s32] = (uint8_t)q.pos;
                sval[q.dst - s32] = q.p;
            } else {
                blk_pos[q.dst] = (uint8_t)q.pos;
                val_idx[q.dst] = q.p;
            }
        });
    if (staged) {
        __syncthreads();
        // slots no nonzero was placed in exist only for invalid input (duplicates, columns
        // out of range), which the flags reject: the plan is then discarded
        const int n = (int)(e - s);
        for (int i = t; i < n; i += NT) {
            blk_pos[s + i] = spos[i];
            val_idx[s + i] = sval[i];
        }
    }
}

// The long windows of a pass (more than kShortMax nonzeros, as window_local_one decides),
// listed for the long kernel: list[lq[0]++] (in no particular order: each window is converted
// on its own).  One thread a window.
template <bool kOrd = false>
__global__ void __launch_bounds__(256)
    find_long_windows(const void *off, int off64, int64_t rows, int64_t nnz, int base,
                      int32_t windows, const int32_t *perm_in, const int64_t *pro,
                      const int *ordered, int32_t *list, int *lq)
{
    const int64_t w = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= windows)
        return;
    const int32_t *perm =
        kOrd && perm_in != nullptr && (ordered == nullptr || *ordered) ? perm_in : nullptr;
    const int64_t s = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro, w * 16),
                  e = window_row_offset<kOrd>(off, off64, rows, nnz, base, perm, pro, w * 16 + 16);
    if (e - s > kShortMax)
        list[atomicAdd(&lq[0], 1)] = (int32_t)w;
}

// The counting pass of one thread block a window (kBothKind, at most kBothMaxWindows windows)
// also numbers the blocks: its last thread block to finish (counted, cleared with the
// summary) scans the windows' block counts into out[0 .. windows] (window offsets, the total
// last), which took a launch of its own (scan_small) on the host's path to the placing pass.
// One warp does it, with no block barrier and no shared memory: a block's count (nblk[w]) is
// written by its thread 0, which also takes the ticket, and the window's other threads may
// have left through a named barrier (short_sync).
__device__ __forceinline__ void count_then_scan(const int32_t *nblk, int32_t windows,
                                                int32_t *out, int *counted)
{
    if (threadIdx.x >= 32)
        return;
    __syncwarp();
    const int lane = (int)threadIdx.x;
    int last = 0;
    if (lane == 0) {
        __threadfence(); // nblk[w], written by this thread, before the ticket
        last = atomicAdd(counted, 1) == (int)gridDim.x - 1;
        __threadfence(); // the ticket before this block's reads of the counts
    }
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    __syncwarp(); // orders the other lanes' reads below after lane 0's fence (a shuffle does not)
    // tiles of 32 windows, 4 tiles' counts loaded at a time (a lane's contiguous run of 128
    // windows, read one after another, took the pass from 19 to 36 us on ogbl-ddi)
    constexpr int kTiles = 4;
    int32_t carry = 0;
    for (int32_t t0 = 0; t0 < windows; t0 += 32 * kTiles) {
        int32_t v[kTiles];
#pragma unroll
        for (int u = 0; u < kTiles; u++) {
            const int32_t i = t0 + u * 32 + lane;
            v[u] = i < windows ? __ldcg(&nblk[i]) : 0;
        }
#pragma unroll
        for (int u = 0; u < kTiles; u++) {
            int32_t inc = v[u];
            for (int k = 1; k < 32; k <<= 1) {
                const int32_t y = __shfl_up_sync(0xffffffffu, inc, k);
                if (lane >= k)
                    inc += y;
            }
            const int32_t i = t0 + u * 32 + lane;
            if (i < windows)
                out[i] = carry + inc - v[u];
            carry += __shfl_sync(0xffffffffu, inc, 31);
        }
    }
    if (lane == 0)
        out[windows] = carry; // the total
}

// A window_local pass: one window a thread block for the short kinds (kShortKind, kBothKind);
// the long kind (kLongKind) persistent: its thread blocks take the windows find_long_windows
// listed (list[0 .. lq[0]), lq[1] counting those taken) one after another.  Launched over
// every window, the long kernel's thread blocks found their window short and left at once,
// but each held the long kernel's shared memory (its bitmap is sized by the columns, up to
// 64 KiB: 3 thread blocks an SM): on mdual (16,161 windows, none long) its two launches took
// 44 and 64 us of GPU time in a 0.3 ms build.
template <bool kPlace, int kKind, bool kOrd = false>
__global__ void __launch_bounds__(kKind != kShortKind ? kLongThreads : kShortThreads,
                               kKind != kShortKind ? kLongMinBlocks : 1)
    window_local(const void *off, int off64, const void *idx, int idx64, int64_t rows,
                 int64_t cols, int64_t nnz, int base, int32_t windows, int64_t bub, int wmax,
                 int stage_cap, const int32_t *perm_in, const int64_t *pro,
                 const int *ordered, int32_t *nblk,
                 int2 *crange, const int32_t *win_off, int32_t *blk_col, int32_t *blk_off,
                 unsigned *occ, uint8_t *blk_pos, int32_t *val_idx, int *flags,
                 const int32_t *long_list, int *lq, int sm_count, int32_t *scan_out,
                 int *counted)
{
    if constexpr (kKind == kLongKind) {
        __shared__ int taken;
        const int n = *reinterpret_cast<volatile int *>(&lq[0]); // find_long_windows ran before
        for (;;) {
            if (threadIdx.x == 0)
                taken = atomicAdd(&lq[1], 1);
            __syncthreads();
            const int i = taken;
            if (i >= n)
                return; // uniform over the block
            window_local_one<kPlace, kKind, kOrd>(
                long_list[i], off, off64, idx, idx64, rows, cols, nnz, base, windows, bub, wmax,
                stage_cap, perm_in, pro, ordered, nblk, crange, win_off, blk_col, blk_off, occ,
                blk_pos, val_idx, flags);
            __syncthreads(); // every thread is done with the window's shared memory (and taken)
        }
    } else {
        // kBothKind: long_list, when given, is the windows' order (check_offsets_small)
        const int32_t b = (int32_t)blockIdx.x;
        const int32_t w = kKind == kBothKind && long_list != nullptr
                              ? long_list[tc_snake_rank(b, windows, sm_count)]
                              : b;
        window_local_one<kPlace, kKind, kOrd>(
            w, off, off64, idx, idx64, rows, cols, nnz, base, windows, bub,
            wmax, stage_cap, perm_in, pro, ordered, nblk, crange, win_off, blk_col, blk_off, occ,
            blk_pos, val_idx, flags);
        if constexpr (kKind == kBothKind && !kPlace)
            if (scan_out != nullptr)
                count_then_scan(nblk, windows, scan_out, counted);
    }
}

// Exclusive scan of n block counts into out[0..n] (out[n]: the total) by one thread block,
// for the window offsets when windows are few (at most kSmallScanMax): one launch where
// CUB's scan costs two and its host-side queries, on the path to the placing pass (on
// ogbl-ddi, 267 windows, the host spent 19 us in CUB's scan and the GPU 6 us).
constexpr int kSmallScanThreads = 1024, kSmallScanItems = 4;
constexpr int64_t kSmallScanMax = 1 << 16;

__global__ void __launch_bounds__(kSmallScanThreads)
    scan_small(const int32_t *in, int32_t n, int32_t *out)
{
    using Scan = cub::BlockScan<int32_t, kSmallScanThreads>;
    __shared__ typename Scan::TempStorage tmp;
    constexpr int kTile = kSmallScanThreads * kSmallScanItems;
    int32_t carry = 0;
    for (int32_t base = 0; base < n; base += kTile) {
        int32_t v[kSmallScanItems];
        const int32_t first = base + (int32_t)threadIdx.x * kSmallScanItems;
#pragma unroll
        for (int i = 0; i < kSmallScanItems; i++)
            v[i] = first + i < n ? in[first + i] : 0;
        int32_t tile_total;
        Scan(tmp).ExclusiveSum(v, v, tile_total);
#pragma unroll
        for (int i = 0; i < kSmallScanItems; i++)
            if (first + i < n)
                out[first + i] = carry + v[i];
        carry += tile_total;
        __syncthreads(); // tmp is reused by the next tile
    }
    if (threadIdx.x == 0)
        out[n] = carry;
}

// The conversion's summary, read back by the host after its one synchronisation.
struct summary {
    int flags;
    int32_t blocks, chunk_blocks, nchunks, nsplit;
    unsigned long long empty, maxb, hist[16];
    // rows ordered on the GPU: blocks in the caller's order, and whether the plan takes the
    // order (choose_order)
    long long blocks_id;
    int ordered;
    // window_local's long windows, per pass (counting, counting the caller's order, placing):
    // how many find_long_windows listed, and how many the long kernel has taken
    int lq[3][2];
    // the one-block-a-window counting pass's thread blocks done (count_then_scan)
    int counted;
};

// The summary cleared and the offsets (if any) checked by one thread block, for at most
// kSmallScanMax offsets: the same checks as check_offsets (offset_bad).  With order, also the
// windows (at most kSmallScanThreads * kSmallScanItems) by decreasing nonzeros (worder: the
// CSR offsets the windows are read from; ties in window order).
__global__ void __launch_bounds__(kSmallScanThreads)
    check_offsets_small(const void *off, int is64, int64_t dim, int64_t nnz, int base,
                        summary *sum, const void *worder, int32_t windows, int32_t *order)
{
    using Sort = cub::BlockRadixSort<unsigned, kSmallScanThreads, kSmallScanItems, int32_t>;
    __shared__ typename Sort::TempStorage sort_tmp;
    __shared__ int bad;
    if (threadIdx.x == 0)
        bad = 0;
    int *words = reinterpret_cast<int *>(sum);
    for (int i = threadIdx.x; i < (int)(sizeof(summary) / sizeof(int)); i += blockDim.x)
        words[i] = 0;
    __syncthreads();
    if (off != nullptr) {
        for (int64_t i = threadIdx.x; i <= dim; i += blockDim.x)
            if (offset_bad(off, is64, i, dim, nnz, base))
                bad = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0 && bad)
        sum->flags = kBadOffsets;
    if (order == nullptr || windows > kSmallScanThreads * kSmallScanItems)
        return;
    // The windows' nonzeros (offsets clamped as window_local reads them), then 8-bit keys
    // for a decreasing order: 254 - 254 n / (the most), past the windows 255 (last); equal
    // keys stay in window order.  (The balance needs sizes only roughly: 32-bit keys took the
    // sort 18 us on the H100, 2 passes of 4 bits take a few.)
    __shared__ int most;
    if (threadIdx.x == 0)
        most = 0;
    int n[kSmallScanItems];
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        const int32_t w = (int32_t)threadIdx.x * kSmallScanItems + k;
        n[k] = -1;
        if (w < windows) {
            const int64_t b = window_row_offset<false>(worder, is64, dim, nnz, base, nullptr,
                                                       nullptr, (int64_t)w * 16),
                          e = window_row_offset<false>(worder, is64, dim, nnz, base, nullptr,
                                                       nullptr, (int64_t)w * 16 + 16);
            n[k] = e > b ? (int)(e - b) : 0;
        }
    }
    __syncthreads();
    int mine = 0;
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++)
        mine = max(mine, n[k]);
    if (mine > 0)
        atomicMax(&most, mine);
    __syncthreads();
    const int64_t top = most > 0 ? most : 1;
    unsigned key[kSmallScanItems];
    int32_t val[kSmallScanItems];
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        key[k] = n[k] < 0 ? 255u : 254u - (unsigned)(254 * (int64_t)n[k] / top);
        val[k] = (int32_t)threadIdx.x * kSmallScanItems + k;
    }
    Sort(sort_tmp).Sort(key, val, 0, 8); // ascending and stable
#pragma unroll
    for (int k = 0; k < kSmallScanItems; k++) {
        const int32_t r = (int32_t)threadIdx.x * kSmallScanItems + k;
        if (r < windows)
            order[r] = val[k];
    }
}

} // namespace tc

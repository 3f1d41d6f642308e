/* CPU reference conversion of CSR, CSC or COO to ME-TCF.  The GPU converter is checked
 * against this one on every shared matrix, so it favours plain, linear passes:
 *   1. validate everything the caller gave (offsets, index ranges) before allocating;
 *   2. find each 16-row window's entries (CSR: contiguous already; CSC/COO: one counting
 *      scatter by window);
 *   3. per window, sort (column, row) keys with an LSD radix sort (insertion sort when
 *      small), condense distinct columns, and emit 16x8 blocks with their nonzeros ordered
 *      by (row, column).
 * Memory beyond the output is O(nnz) for CSC/COO and O(largest window) for CSR; nothing is
 * O(cols), so hypersparse matrices with huge dimensions cost what their nonzeros cost. */
#include <stdlib.h>
#include <string.h>
#include "error.h"
#include "metcf.h"

#define PFX "ME-TCF conversion: "
#define TC_INDEX_LIMIT ((int64_t)1 << 31) /* blk_col is int32 */

/* One nonzero while its window is sorted.  key = column << 4 | row in window, so sorting
 * keys gives (column, row) order; after condensing, key is reused to hold blk_pos. */
typedef struct {
    uint64_t key;
    int64_t pos; /* index into the caller's arrays */
} tc_ent;

static inline int64_t ld_idx(const void *p, int wide, int64_t i)
{
    return wide ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

static void *alloc_n(int64_t n, size_t size)
{
    if (n < 1)
        n = 1; /* keep arrays non-NULL on success, even when empty */
    if ((uint64_t)n > SIZE_MAX / size)
        return NULL;
    return malloc((size_t)n * size);
}

/* ---- validation ---------------------------------------------------------------------- */

/* First position whose index lies outside [lo, hi), or -1.  Split by width so that the
 * common all-valid case is a tight loop. */
static int64_t find_out_of_range(const void *p, int wide, int64_t n, int64_t lo, int64_t hi)
{
    if (wide) {
        const int64_t *a = p;
        for (int64_t i = 0; i < n; i++)
            if (a[i] < lo || a[i] >= hi)
                return i;
    } else {
        const int32_t *a = p;
        for (int64_t i = 0; i < n; i++)
            if (a[i] < lo || a[i] >= hi)
                return i;
    }
    return -1;
}

static tcsparseStatus_t check_indices(const void *p, int wide, int64_t nnz, int64_t dim,
                                      int64_t base, const char *what)
{
    int64_t bad = find_out_of_range(p, wide, nnz, base, dim + base);
    if (bad < 0)
        return TCSPARSE_STATUS_SUCCESS;
    return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                        PFX "%s index %lld at position %lld is outside [%lld, %lld)", what,
                        (long long)ld_idx(p, wide, bad), (long long)bad, (long long)base,
                        (long long)(dim + base));
}

/* offsets has n+1 entries: starts at base, never decreases, ends at nnz + base. */
static tcsparseStatus_t check_offsets(const void *off, int wide, int64_t n, int64_t nnz,
                                      int64_t base, const char *what)
{
    int64_t prev = ld_idx(off, wide, 0);
    if (prev != base)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            PFX "%s offsets[0] = %lld, expected the index base %lld", what,
                            (long long)prev, (long long)base);
    for (int64_t i = 1; i <= n; i++) {
        int64_t x = ld_idx(off, wide, i);
        if (x < prev)
            return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                                PFX "%s offsets decrease at %lld (%lld after %lld)", what,
                                (long long)i, (long long)x, (long long)prev);
        prev = x;
    }
    if (prev != nnz + base)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            PFX "%s offsets[%lld] = %lld, expected nnz + base = %lld", what,
                            (long long)n, (long long)prev, (long long)(nnz + base));
    return TCSPARSE_STATUS_SUCCESS;
}

static int width_ok(tcsparseIndexType_t t)
{
    return t == TCSPARSE_INDEX_32I || t == TCSPARSE_INDEX_64I;
}

static tcsparseStatus_t validate(const tc_sparse_view *v)
{
    const tcsparseStatus_t bad = TCSPARSE_STATUS_INVALID_VALUE;
    if (v == NULL)
        return tc_error_set(bad, PFX "the matrix view is NULL");
    if (v->format != TCSPARSE_FORMAT_CSR && v->format != TCSPARSE_FORMAT_CSC &&
        v->format != TCSPARSE_FORMAT_COO)
        return tc_error_set(bad, PFX "format %d is not CSR, CSC or COO", (int)v->format);
    if (v->rows < 0 || v->cols < 0 || v->nnz < 0)
        return tc_error_set(bad, PFX "negative size (rows %lld, cols %lld, nnz %lld)",
                            (long long)v->rows, (long long)v->cols, (long long)v->nnz);
    if (v->rows >= TC_INDEX_LIMIT || v->cols >= TC_INDEX_LIMIT)
        return tc_error_set(bad,
                            PFX "%lld x %lld is too large: rows and cols must be below 2^31 "
                                "(ME-TCF keeps them in int32)",
                            (long long)v->rows, (long long)v->cols);
    if (v->nnz > 0 && (v->rows == 0 || v->cols == 0))
        return tc_error_set(bad, PFX "nnz = %lld but the matrix is %lld x %lld",
                            (long long)v->nnz, (long long)v->rows, (long long)v->cols);
    if (v->base != TCSPARSE_INDEX_BASE_ZERO && v->base != TCSPARSE_INDEX_BASE_ONE)
        return tc_error_set(bad, PFX "index base %d is not 0 or 1", (int)v->base);
    if (!width_ok(v->offsets_type) || !width_ok(v->indices_type))
        return tc_error_set(bad, PFX "index types %d/%d: only 32I and 64I are accepted",
                            (int)v->offsets_type, (int)v->indices_type);
    if (v->format == TCSPARSE_FORMAT_COO && v->offsets_type != v->indices_type)
        return tc_error_set(bad, PFX "COO row and column indices must have one index type");

    const int64_t base = v->base;
    const int woff = v->offsets_type == TCSPARSE_INDEX_64I;
    const int widx = v->indices_type == TCSPARSE_INDEX_64I;
    if (v->format == TCSPARSE_FORMAT_COO) {
        if (v->nnz > 0 && (v->offsets == NULL || v->indices == NULL))
            return tc_error_set(bad, PFX "COO %s indices are NULL with nnz = %lld",
                                v->offsets == NULL ? "row" : "column", (long long)v->nnz);
        tcsparseStatus_t st = check_indices(v->offsets, woff, v->nnz, v->rows, base, "COO row");
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
        return check_indices(v->indices, widx, v->nnz, v->cols, base, "COO column");
    }

    const int csr = v->format == TCSPARSE_FORMAT_CSR;
    const char *name = csr ? "CSR row" : "CSC column";
    const int64_t major = csr ? v->rows : v->cols, minor = csr ? v->cols : v->rows;
    if (v->offsets == NULL) {
        if (major > 0)
            return tc_error_set(bad, PFX "%s offsets are NULL with %lld %s", name,
                                (long long)major, csr ? "rows" : "columns");
    } else {
        tcsparseStatus_t st = check_offsets(v->offsets, woff, major, v->nnz, base, name);
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
    }
    if (v->nnz > 0 && v->indices == NULL)
        return tc_error_set(bad, PFX "%s indices are NULL with nnz = %lld",
                            csr ? "CSR column" : "CSC row", (long long)v->nnz);
    return check_indices(v->indices, widx, v->nnz, minor, base,
                         csr ? "CSR column" : "CSC row");
}

/* ---- per-window sort ------------------------------------------------------------------- */

static void insertion_sort(tc_ent *a, int64_t n)
{
    for (int64_t i = 1; i < n; i++) {
        tc_ent x = a[i];
        int64_t j = i;
        while (j > 0 && a[j - 1].key > x.key) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* Sorts a[0..n) by key, using tmp[0..n) as the other buffer; returns whichever holds the
 * result.  LSD radix on key - min, skipping digits that all entries share. */
static tc_ent *sort_window(tc_ent *a, tc_ent *tmp, int64_t n)
{
    if (n <= 32) {
        insertion_sort(a, n);
        return a;
    }
    uint64_t kmin = a[0].key, kmax = a[0].key;
    for (int64_t i = 1; i < n; i++) {
        if (a[i].key < kmin)
            kmin = a[i].key;
        if (a[i].key > kmax)
            kmax = a[i].key;
    }
    const int dbits = n >= 4096 ? 11 : 8;
    const uint64_t dmask = ((uint64_t)1 << dbits) - 1;
    int64_t count[1 << 11];
    for (int shift = 0; shift < 64 && ((kmax - kmin) >> shift) != 0; shift += dbits) {
        memset(count, 0, sizeof(int64_t) << dbits);
        for (int64_t i = 0; i < n; i++)
            count[((a[i].key - kmin) >> shift) & dmask]++;
        if (count[((a[0].key - kmin) >> shift) & dmask] == n)
            continue;
        int64_t sum = 0;
        for (uint64_t d = 0; d <= dmask; d++) {
            int64_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[count[((a[i].key - kmin) >> shift) & dmask]++] = a[i];
        tc_ent *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/* ---- emission ---------------------------------------------------------------------------- */

/* Writes one block's nonzeros at out0.  run[] holds blk_pos in .key, in (column, row)
 * order; the kernel wants (row, column), i.e. ascending blk_pos. */
static void emit_block(const tc_ent *run, int64_t k, int64_t out0, tc_metcf *m)
{
    uint8_t *bp = m->blk_pos + out0;
    int64_t *vi = m->val_idx + out0;
    if (k <= 8) {
        for (int64_t j = 0; j < k; j++) {
            uint8_t p = (uint8_t)run[j].key;
            int64_t t = j;
            while (t > 0 && bp[t - 1] > p) {
                bp[t] = bp[t - 1];
                vi[t] = vi[t - 1];
                t--;
            }
            bp[t] = p;
            vi[t] = run[j].pos;
        }
        return;
    }
    /* Stable counting sort by row keeps columns ascending within each row. */
    int64_t at[TC_WIN_ROWS + 1] = {0};
    for (int64_t j = 0; j < k; j++)
        at[(run[j].key >> 3) + 1]++;
    for (int r = 0; r < TC_WIN_ROWS; r++)
        at[r + 1] += at[r];
    for (int64_t j = 0; j < k; j++) {
        int64_t s = at[run[j].key >> 3]++;
        bp[s] = (uint8_t)run[j].key;
        vi[s] = run[j].pos;
    }
}

/* Condenses one sorted window (entries e[0..n), written from nonzero out0 on) into blocks
 * starting at *nblk. */
static tcsparseStatus_t emit_window(tc_ent *e, int64_t n, int64_t w, int64_t out0,
                                    int64_t *nblk, tc_metcf *m, int64_t base)
{
    int64_t blk = *nblk - 1, run0 = 0, c = -1;
    uint64_t prev_key = UINT64_MAX, prev_col = UINT64_MAX;
    for (int64_t j = 0; j < n; j++) {
        uint64_t key = e[j].key, col = key >> 4;
        if (key == prev_key)
            return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                                PFX "duplicate entry at row %lld, column %lld (index base %lld; "
                                    "positions %lld and %lld)",
                                (long long)(w * TC_WIN_ROWS + (int64_t)(key & 15) + base),
                                (long long)((int64_t)col + base), (long long)base,
                                (long long)(e[j - 1].pos < e[j].pos ? e[j - 1].pos : e[j].pos),
                                (long long)(e[j - 1].pos < e[j].pos ? e[j].pos : e[j - 1].pos));
        prev_key = key;
        if (col != prev_col) {
            prev_col = col;
            c++;
            if ((c & 7) == 0) {
                if (c > 0)
                    emit_block(e + run0, j - run0, out0 + run0, m);
                blk++;
                run0 = j;
                m->blk_off[blk] = out0 + j;
                for (int s = 0; s < TC_BLK_COLS; s++)
                    m->blk_col[blk * TC_BLK_COLS + s] = -1;
            }
            m->blk_col[blk * TC_BLK_COLS + (c & 7)] = (int32_t)col;
        }
        e[j].key = (key & 15) * TC_BLK_COLS + (uint64_t)(c & 7);
    }
    if (n > 0)
        emit_block(e + run0, n - run0, out0 + run0, m);
    *nblk = blk + 1;
    return TCSPARSE_STATUS_SUCCESS;
}

/* ---- driver ------------------------------------------------------------------------------ */

/* Sets win_off[w] to the end (exclusive) of window w's entries in window order; for CSC/COO
 * also scatters all entries into ents by window.  CSR needs no scatter: a window's entries
 * are contiguous in the caller's arrays. */
static void bucket_by_window(const tc_sparse_view *v, tc_metcf *m, tc_ent *ents)
{
    const int64_t base = v->base, W = m->windows;
    const int woff = v->offsets_type == TCSPARSE_INDEX_64I;
    const int widx = v->indices_type == TCSPARSE_INDEX_64I;
    int64_t *end = m->win_off;
    if (v->format == TCSPARSE_FORMAT_CSR) {
        for (int64_t w = 0; w < W; w++) {
            int64_t r = (w + 1) * TC_WIN_ROWS < v->rows ? (w + 1) * TC_WIN_ROWS : v->rows;
            end[w] = ld_idx(v->offsets, woff, r) - base;
        }
        return;
    }
    /* Count into end[w+1], prefix to starts, then scatter with end[w] as the cursor, which
     * leaves end[w] at the end of window w. */
    memset(end, 0, (size_t)(W + 1) * sizeof *end);
    if (v->format == TCSPARSE_FORMAT_COO) {
        for (int64_t i = 0; i < v->nnz; i++)
            end[((ld_idx(v->offsets, woff, i) - base) >> 4) + 1]++;
    } else {
        for (int64_t i = 0; i < v->nnz; i++)
            end[((ld_idx(v->indices, widx, i) - base) >> 4) + 1]++;
    }
    for (int64_t w = 0; w < W; w++)
        end[w + 1] += end[w];
    if (v->format == TCSPARSE_FORMAT_COO) {
        for (int64_t i = 0; i < v->nnz; i++) {
            int64_t r = ld_idx(v->offsets, woff, i) - base;
            int64_t c = ld_idx(v->indices, widx, i) - base;
            ents[end[r >> 4]++] = (tc_ent){((uint64_t)c << 4) | (uint64_t)(r & 15), i};
        }
    } else {
        for (int64_t c = 0; c < v->cols; c++) {
            int64_t lo = ld_idx(v->offsets, woff, c) - base;
            int64_t hi = ld_idx(v->offsets, woff, c + 1) - base;
            for (int64_t i = lo; i < hi; i++) {
                int64_t r = ld_idx(v->indices, widx, i) - base;
                ents[end[r >> 4]++] = (tc_ent){((uint64_t)c << 4) | (uint64_t)(r & 15), i};
            }
        }
    }
}

/* Copies CSR window w's entries (positions lo..hi) into a as keys. */
static void gather_csr_window(const tc_sparse_view *v, int64_t w, tc_ent *a)
{
    const int64_t base = v->base;
    const int woff = v->offsets_type == TCSPARSE_INDEX_64I;
    const int widx = v->indices_type == TCSPARSE_INDEX_64I;
    int64_t r0 = w * TC_WIN_ROWS, r1 = r0 + TC_WIN_ROWS < v->rows ? r0 + TC_WIN_ROWS : v->rows;
    int64_t k = 0, i = ld_idx(v->offsets, woff, r0) - base;
    for (int64_t r = r0; r < r1; r++) {
        int64_t hi = ld_idx(v->offsets, woff, r + 1) - base;
        uint64_t rw = (uint64_t)(r - r0);
        if (widx) {
            const int64_t *col = v->indices;
            for (; i < hi; i++)
                a[k++] = (tc_ent){((uint64_t)(col[i] - base) << 4) | rw, i};
        } else {
            const int32_t *col = v->indices;
            for (; i < hi; i++)
                a[k++] = (tc_ent){((uint64_t)(col[i] - base) << 4) | rw, i};
        }
    }
}

tcsparseStatus_t tc_metcf_build_cpu(const tc_sparse_view *v, tc_metcf *out)
{
    if (out == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, PFX "the output is NULL");
    memset(out, 0, sizeof *out);
    tcsparseStatus_t st = validate(v);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;

    tc_metcf m = {.rows = v->rows, .cols = v->cols, .nnz = v->nnz};
    m.windows = (v->rows + TC_WIN_ROWS - 1) / TC_WIN_ROWS;
    const int csr = v->format == TCSPARSE_FORMAT_CSR;
    tc_ent *ents = NULL, *scratch = NULL, *scratch2 = NULL;

    m.win_off = alloc_n(m.windows + 1, sizeof *m.win_off);
    m.blk_pos = alloc_n(m.nnz, sizeof *m.blk_pos);
    m.val_idx = alloc_n(m.nnz, sizeof *m.val_idx);
    if (!csr)
        ents = alloc_n(m.nnz, sizeof *ents);
    if (!m.win_off || !m.blk_pos || !m.val_idx || (!csr && !ents))
        goto nomem;
    bucket_by_window(v, &m, ents);

    /* Distinct columns never exceed nonzeros, so sum ceil(nnz_w / 8) bounds the blocks. */
    int64_t cap = 0, widest = 0, prev = 0;
    for (int64_t w = 0; w < m.windows; w++) {
        int64_t n = m.win_off[w] - prev;
        prev = m.win_off[w];
        cap += (n + TC_BLK_COLS - 1) / TC_BLK_COLS;
        if (n > widest)
            widest = n;
    }
    m.blk_off = alloc_n(cap + 1, sizeof *m.blk_off);
    m.blk_col = alloc_n(cap * TC_BLK_COLS, sizeof *m.blk_col);
    scratch = alloc_n(widest, sizeof *scratch);
    if (csr)
        scratch2 = alloc_n(widest, sizeof *scratch2);
    if (!m.blk_off || !m.blk_col || !scratch || (csr && !scratch2))
        goto nomem;

    /* win_off[w] holds the end of window w until the window is processed, then its first
     * block: each slot is read before it is overwritten. */
    int64_t lo = 0, nblk = 0;
    for (int64_t w = 0; w < m.windows; w++) {
        int64_t hi = m.win_off[w];
        m.win_off[w] = nblk;
        if (hi == lo)
            continue;
        tc_ent *e;
        if (csr) {
            gather_csr_window(v, w, scratch2);
            e = sort_window(scratch2, scratch, hi - lo);
        } else {
            e = sort_window(ents + lo, scratch, hi - lo);
        }
        st = emit_window(e, hi - lo, w, lo, &nblk, &m, v->base);
        if (st != TCSPARSE_STATUS_SUCCESS)
            goto fail;
        lo = hi;
    }
    m.win_off[m.windows] = nblk;
    m.blk_off[nblk] = m.nnz;
    m.blocks = nblk;

    /* Give back the unused part of the bound; a failed shrink leaves a valid larger array. */
    void *p = realloc(m.blk_off, (size_t)(nblk + 1) * sizeof *m.blk_off);
    if (p)
        m.blk_off = p;
    if (nblk > 0 && (p = realloc(m.blk_col, (size_t)nblk * TC_BLK_COLS * sizeof *m.blk_col)))
        m.blk_col = p;
    free(ents);
    free(scratch);
    free(scratch2);
    *out = m;
    return TCSPARSE_STATUS_SUCCESS;

nomem:
    st = tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED,
                      PFX "out of host memory for a %lld x %lld matrix with %lld nonzeros",
                      (long long)v->rows, (long long)v->cols, (long long)v->nnz);
fail:
    free(ents);
    free(scratch);
    free(scratch2);
    tc_metcf_free(&m);
    return st;
}

void tc_metcf_free(tc_metcf *m)
{
    if (m == NULL)
        return;
    free(m->win_off);
    free(m->blk_off);
    free(m->blk_pos);
    free(m->blk_col);
    free(m->val_idx);
    memset(m, 0, sizeof *m);
}

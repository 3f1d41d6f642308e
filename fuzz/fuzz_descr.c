/* Fuzz harness: sparse descriptors and the CPU ME-TCF conversion on arbitrary CSR/CSC/COO
 * arrays.  The bytes decode into (see decode() for the layout):
 *   format, index widths (32/64, or an invalid type), index base (0, 1 or invalid), value type,
 *   const or not, a misaligned values pointer, sizes (small, or edge values such as 2^31 and
 *   INT64_MAX), and the arrays, either raw bytes ("raw" mode) or built from a list of
 *   (row, column) entries ("constructive" mode), optionally corrupted at one position.
 * Checks:
 *   - creation either succeeds, with every getter giving back what was passed, or fails with a
 *     status, a message and the output untouched;
 *   - the CPU conversion of a constructive input without duplicates or corruption succeeds,
 *     and one with duplicates fails; any successful conversion has consistent arrays and
 *     statistics and reconstructs exactly the input's (row, column, position) triples;
 *   - destroy succeeds once; a second destroy and a use after destroy give INVALID_VALUE.
 * Arrays are allocated at exactly their declared length, so AddressSanitizer sees any read
 * past them. */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "metcf.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"

#define H "descr"
#define MAX_ARRAY ((int64_t)1 << 16)   /* longest array the harness allocates */
#define MAX_CONVERT_ROWS ((int64_t)1 << 20) /* win_off is O(rows / 16) */

typedef struct {
    const uint8_t *p;
    size_t n, i;
} reader;

static unsigned rd8(reader *r) { return r->i < r->n ? r->p[r->i++] : 0u; }
static unsigned rd16(reader *r)
{
    unsigned a = rd8(r);
    return a | rd8(r) << 8;
}

static const int64_t edge_sizes[8] = {
    -1, 0, ((int64_t)1 << 31) - 1, (int64_t)1 << 31, ((int64_t)1 << 31) - 16,
    ((int64_t)1 << 32) + 5, INT64_MAX, (int64_t)1 << 20};

/* A size: mostly small (0..cap), sometimes an edge value. */
static int64_t rd_size(reader *r, unsigned cap)
{
    unsigned b = rd8(r);
    if (b >= 0xf8)
        return edge_sizes[b - 0xf8];
    return (int64_t)((b | rd8(r) << 8) % (cap + 1));
}

static const cudaDataType value_types[16] = {
    CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF, CUDA_C_32F, CUDA_C_64F, CUDA_R_8I,
    CUDA_R_32I, CUDA_C_16F, CUDA_R_8U, CUDA_C_16BF, CUDA_R_32F, CUDA_R_32F, CUDA_R_16F,
    (cudaDataType)999, (cudaDataType)-1};

typedef struct {
    int fmt;  /* 0 CSR, 1 CSC, 2 COO, 3 CSR whose conversion view gets an invalid format */
    int is_const, misalign, constructive, corrupt, reverse;
    tcsparseIndexType_t off_t, idx_t;
    tcsparseIndexBase_t base;
    cudaDataType vt;
    int64_t rows, cols, nnz;
    void *off, *idx; /* exactly sized, or NULL */
    int64_t noff;    /* entries in off */
    int dups;        /* constructive: the entry list has a repeated (row, column) */
} fuzz_case;

static int64_t get_at(const void *a, int wide, int64_t i)
{
    return wide ? ((const int64_t *)a)[i] : (int64_t)((const int32_t *)a)[i];
}

static void put_at(void *a, int wide, int64_t i, int64_t v)
{
    if (wide)
        ((int64_t *)a)[i] = v;
    else
        ((int32_t *)a)[i] = (int32_t)v;
}

static void *alloc_index(int64_t n, int wide)
{
    return malloc((size_t)(n > 0 ? n : 1) * (wide ? 8 : 4));
}

typedef struct {
    int64_t r, c, pos;
} triple;

static int cmp_triple(const void *a, const void *b)
{
    const triple *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? -1 : 1;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Constructive mode: entries from the bytes, then the format's arrays from the entries. */
static void build_arrays(reader *r, fuzz_case *c)
{
    const int wo = c->off_t == TCSPARSE_INDEX_64I, wi = c->idx_t == TCSPARSE_INDEX_64I;
    const int64_t base = c->base == TCSPARSE_INDEX_BASE_ONE ? 1 : 0;
    if (c->rows <= 0 || c->cols <= 0 || c->rows > 4096 || c->cols > 1 << 20 ||
        c->nnz > MAX_ARRAY) {
        c->nnz = c->rows > 0 && c->cols > 0 ? c->nnz : 0;
        return;
    }
    triple *e = malloc(sizeof *e * (size_t)(c->nnz > 0 ? c->nnz : 1));
    int64_t n = 0;
    /* a rectangle of entries first (dense windows reach the radix sort), then pairs */
    unsigned h = rd8(r) % 17, w = rd16(r) % 1100;
    int64_t r0 = (int64_t)rd16(r) % c->rows, c0 = (int64_t)rd16(r) % c->cols;
    for (int64_t i = r0; i < r0 + h && i < c->rows; i++)
        for (int64_t j = c0; j < c0 + w && j < c->cols && n < c->nnz; j++)
            e[n++] = (triple){i, j, 0};
    while (n < c->nnz && r->i + 4 <= r->n) {
        int64_t i = (int64_t)rd16(r) % c->rows, j = (int64_t)rd16(r) % c->cols;
        e[n++] = (triple){i, j, 0};
    }
    c->nnz = n;
    if (c->reverse)
        for (int64_t k = 0; k < n / 2; k++) {
            triple t = e[k];
            e[k] = e[n - 1 - k];
            e[n - 1 - k] = t;
        }
    /* duplicates: sort a copy */
    triple *s = malloc(sizeof *s * (size_t)(n > 0 ? n : 1));
    memcpy(s, e, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_triple);
    c->dups = 0;
    for (int64_t k = 1; k < n; k++)
        if (s[k].r == s[k - 1].r && s[k].c == s[k - 1].c)
            c->dups = 1;
    free(s);

    if (c->fmt == 2) { /* COO: row indices in off, column indices in idx */
        c->noff = n;
        c->off = alloc_index(n, wo);
        c->idx = alloc_index(n, wi);
        for (int64_t k = 0; k < n; k++) {
            put_at(c->off, wo, k, e[k].r + base);
            put_at(c->idx, wi, k, e[k].c + base);
        }
    } else {
        const int csc = c->fmt == 1;
        const int64_t major = csc ? c->cols : c->rows;
        if (major + 1 > MAX_ARRAY) {
            free(e);
            return;
        }
        int64_t *cnt = calloc((size_t)major + 1, sizeof *cnt);
        for (int64_t k = 0; k < n; k++)
            cnt[(csc ? e[k].c : e[k].r) + 1]++;
        for (int64_t m = 0; m < major; m++)
            cnt[m + 1] += cnt[m];
        c->noff = major + 1;
        c->off = alloc_index(major + 1, wo);
        c->idx = alloc_index(n, wi);
        for (int64_t m = 0; m <= major; m++)
            put_at(c->off, wo, m, cnt[m] + base);
        for (int64_t k = 0; k < n; k++) { /* stable: keeps the list order within a row */
            int64_t at = cnt[csc ? e[k].c : e[k].r]++;
            put_at(c->idx, wi, at, (csc ? e[k].r : e[k].c) + base);
        }
        free(cnt);
    }
    free(e);
}

/* Raw mode: the arrays' values straight from the bytes (small signed numbers, so that some
 * offsets and indices fall in range). */
static void raw_arrays(reader *r, fuzz_case *c)
{
    const int wo = c->off_t == TCSPARSE_INDEX_64I, wi = c->idx_t == TCSPARSE_INDEX_64I;
    const int64_t major = c->fmt == 1 ? c->cols : c->rows;
    if ((c->fmt != 2 && (major < 0 || major >= MAX_ARRAY)) || c->nnz < 0 || c->nnz > MAX_ARRAY)
        return;
    const int64_t noff = c->fmt == 2 ? c->nnz : major + 1;
    c->noff = noff;
    c->off = alloc_index(noff, wo);
    c->idx = alloc_index(c->nnz, wi);
    for (int64_t k = 0; k < noff; k++)
        put_at(c->off, wo, k, (int16_t)rd16(r));
    for (int64_t k = 0; k < c->nnz; k++)
        put_at(c->idx, wi, k, (int16_t)rd16(r));
}

static void decode(reader *r, fuzz_case *c)
{
    unsigned f = rd8(r), g = rd8(r), m = rd8(r);
    memset(c, 0, sizeof *c);
    c->fmt = (int)(f & 3);
    c->off_t = f & 4 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    c->idx_t = f & 8 ? TCSPARSE_INDEX_64I : TCSPARSE_INDEX_32I;
    c->base = f & 16 ? TCSPARSE_INDEX_BASE_ONE : TCSPARSE_INDEX_BASE_ZERO;
    c->constructive = (f & 32) != 0;
    c->misalign = (f & 64) != 0;
    c->is_const = (f & 128) != 0;
    c->vt = value_types[g & 15];
    switch (g >> 4) { /* rarely, an invalid enum */
    case 15: c->off_t = TCSPARSE_INDEX_16U; break;
    case 14: c->idx_t = (tcsparseIndexType_t)7; break;
    case 13: c->base = (tcsparseIndexBase_t)2; break;
    case 12: c->idx_t = c->off_t; break;
    default:
        if (c->fmt == 2 || c->constructive)
            c->idx_t = c->off_t; /* mixed widths are refused: mostly keep them equal */
        break;
    }
    c->corrupt = (m & 3) == 3;
    c->reverse = (m & 4) != 0;
    c->rows = rd_size(r, 600);
    c->cols = rd_size(r, 3000);
    c->nnz = rd_size(r, 6000);
    if (c->off_t != TCSPARSE_INDEX_32I && c->off_t != TCSPARSE_INDEX_64I)
        return;
    if (c->idx_t != TCSPARSE_INDEX_32I && c->idx_t != TCSPARSE_INDEX_64I)
        return;
    if (c->constructive && c->base != (tcsparseIndexBase_t)2)
        build_arrays(r, c);
    else
        raw_arrays(r, c);
    if (c->corrupt && (c->off != NULL || c->idx != NULL)) {
        const int use_off = c->idx == NULL || c->nnz == 0 || (rd8(r) & 1);
        void *a = use_off ? c->off : c->idx;
        int64_t len = use_off ? c->noff : c->nnz;
        int wide = (use_off ? c->off_t : c->idx_t) == TCSPARSE_INDEX_64I;
        if (a != NULL && len > 0) {
            int64_t at = (int64_t)rd16(r) % len;
            put_at(a, wide, at, get_at(a, wide, at) + (int16_t)rd16(r));
        }
    }
}

/* The input's (row, column, position) triples, 0-based; NULL when the arrays do not describe a
 * valid matrix (which a successful conversion must never claim). */
static triple *reference_triples(const fuzz_case *c)
{
    const int wo = c->off_t == TCSPARSE_INDEX_64I, wi = c->idx_t == TCSPARSE_INDEX_64I;
    const int64_t base = c->base == TCSPARSE_INDEX_BASE_ONE ? 1 : 0;
    triple *t = malloc(sizeof *t * (size_t)(c->nnz > 0 ? c->nnz : 1));
    if (c->fmt == 2) {
        for (int64_t k = 0; k < c->nnz; k++)
            t[k] = (triple){get_at(c->off, wo, k) - base, get_at(c->idx, wi, k) - base, k};
    } else {
        const int csc = c->fmt == 1;
        const int64_t major = csc ? c->cols : c->rows;
        if (c->nnz > 0 && (c->off == NULL || c->noff != major + 1)) {
            free(t);
            return NULL;
        }
        for (int64_t m = 0; m < major && c->nnz > 0; m++) {
            int64_t lo = get_at(c->off, wo, m) - base, hi = get_at(c->off, wo, m + 1) - base;
            if (lo < 0 || hi > c->nnz || lo > hi) {
                free(t);
                return NULL;
            }
            for (int64_t k = lo; k < hi; k++) {
                int64_t o = get_at(c->idx, wi, k) - base;
                t[k] = csc ? (triple){o, m, k} : (triple){m, o, k};
            }
        }
    }
    for (int64_t k = 0; k < c->nnz; k++)
        if (t[k].r < 0 || t[k].r >= c->rows || t[k].c < 0 || t[k].c >= c->cols) {
            free(t);
            return NULL;
        }
    return t;
}

static void check_metcf(const fuzz_case *c, const tc_metcf *m)
{
    if (m->rows != c->rows || m->cols != c->cols || m->nnz != c->nnz ||
        m->windows != (c->rows + 15) / 16)
        tc_fuzz_fail(H, "ME-TCF header %lld x %lld, nnz %lld, %lld windows",
                     (long long)m->rows, (long long)m->cols, (long long)m->nnz,
                     (long long)m->windows);
    if (m->win_off[0] != 0 || m->win_off[m->windows] != m->blocks || m->blk_off[0] != 0 ||
        m->blk_off[m->blocks] != m->nnz)
        tc_fuzz_fail(H, "ME-TCF offsets do not span the blocks and nonzeros");
    for (int64_t w = 0; w < m->windows; w++)
        if (m->win_off[w + 1] < m->win_off[w])
            tc_fuzz_fail(H, "win_off decreases at %lld", (long long)w);
    for (int64_t b = 0; b < m->blocks; b++) {
        if (m->blk_off[b + 1] <= m->blk_off[b])
            tc_fuzz_fail(H, "block %lld is empty or blk_off decreases", (long long)b);
        for (int s = 0; s < TC_BLK_COLS; s++) {
            int32_t col = m->blk_col[b * TC_BLK_COLS + s];
            if (col < -1 || col >= c->cols)
                tc_fuzz_fail(H, "blk_col %d outside [-1, %lld)", col, (long long)c->cols);
        }
        for (int64_t k = m->blk_off[b]; k < m->blk_off[b + 1]; k++) {
            if (m->blk_pos[k] >= TC_WIN_ROWS * TC_BLK_COLS ||
                m->blk_col[b * TC_BLK_COLS + (m->blk_pos[k] & 7)] < 0)
                tc_fuzz_fail(H, "nonzero %lld at blk_pos %u points at padding", (long long)k,
                             m->blk_pos[k]);
            if (k > m->blk_off[b] && m->blk_pos[k] <= m->blk_pos[k - 1])
                tc_fuzz_fail(H, "block %lld: blk_pos not ascending", (long long)b);
        }
    }
    tcsparseMetcfStats_t st;
    tc_metcf_stats(m, &st);
    int64_t hist = 0;
    for (int k = 0; k < 16; k++)
        hist += st.blocks_per_window_hist[k];
    if (st.rows != c->rows || st.cols != c->cols || st.nnz != c->nnz ||
        st.windows != m->windows || st.blocks != m->blocks || hist != m->windows ||
        st.empty_windows < 0 || st.empty_windows > st.windows ||
        st.max_blocks_per_window < 0 || (st.blocks > 0 && st.mean_nnz_per_block < 1.0) ||
        st.mean_nnz_per_block > TC_WIN_ROWS * TC_BLK_COLS || st.metcf_bytes <= 0 ||
        st.csr_bytes <= 0)
        tc_fuzz_fail(H, "inconsistent statistics (windows %lld, blocks %lld, hist %lld)",
                     (long long)st.windows, (long long)st.blocks, (long long)hist);

    /* reconstruction equals the input */
    triple *ref = reference_triples(c);
    if (ref == NULL)
        tc_fuzz_fail(H, "the conversion accepted arrays that are not a valid matrix");
    qsort(ref, (size_t)c->nnz, sizeof *ref, cmp_triple);
    const size_t n1 = (size_t)(c->nnz > 0 ? c->nnz : 1);
    int64_t *ro = malloc(sizeof *ro * (size_t)(c->rows + 1));
    int64_t *col = malloc(sizeof *col * n1), *vi = malloc(sizeof *vi * n1);
    tc_metcf_to_csr(m, ro, col, vi);
    if (ro[0] != 0 || ro[c->rows] != c->nnz)
        tc_fuzz_fail(H, "reconstructed offsets %lld..%lld, nnz %lld", (long long)ro[0],
                     (long long)ro[c->rows], (long long)c->nnz);
    for (int64_t i = 0; i < c->rows; i++)
        for (int64_t k = ro[i]; k < ro[i + 1]; k++)
            if (ref[k].r != i || ref[k].c != col[k] || ref[k].pos != vi[k])
                tc_fuzz_fail(H, "reconstruction differs at %lld: (%lld, %lld, %lld) vs input "
                             "(%lld, %lld, %lld)", (long long)k, (long long)i,
                             (long long)col[k], (long long)vi[k], (long long)ref[k].r,
                             (long long)ref[k].c, (long long)ref[k].pos);
    free(ro);
    free(col);
    free(vi);
    free(ref);
}

static void convert(const fuzz_case *c)
{
    if (c->rows > MAX_CONVERT_ROWS && c->rows < ((int64_t)1 << 31))
        return;
    tc_sparse_view v = {.format = c->fmt == 0   ? TCSPARSE_FORMAT_CSR
                                  : c->fmt == 1 ? TCSPARSE_FORMAT_CSC
                                  : c->fmt == 2 ? TCSPARSE_FORMAT_COO
                                                : (tcsparseFormat_t)77,
                        .rows = c->rows, .cols = c->cols, .nnz = c->nnz,
                        .offsets = c->off, .indices = c->idx, .offsets_type = c->off_t,
                        .indices_type = c->idx_t, .base = c->base};
    /* NULL arrays are only passed where the converter may not read them */
    if ((c->off == NULL || c->idx == NULL) && c->nnz > 0 && c->rows > 0 && c->cols > 0 &&
        c->rows < ((int64_t)1 << 31) && c->cols < ((int64_t)1 << 31)) {
        v.offsets = NULL;
        v.indices = NULL;
    }
    if (c->fmt != 2 && c->off == NULL && c->nnz == 0)
        v.offsets = NULL;
    tc_metcf m;
    memset(&m, 0x5a, sizeof m);
    tcsparseStatus_t st = tc_metcf_build_cpu(&v, &m);
    const int valid_by_construction = c->constructive && !c->corrupt && c->fmt != 3 &&
                                      c->off != NULL && c->base != (tcsparseIndexBase_t)2;
    if (st != TCSPARSE_STATUS_SUCCESS) {
        if (st != TCSPARSE_STATUS_INVALID_VALUE)
            tc_fuzz_fail(H, "conversion returned status %d", (int)st);
        if (tcsparseGetLastErrorMessage()[0] == '\0')
            tc_fuzz_fail(H, "conversion failed without a message");
        if (m.win_off != NULL || m.blk_off != NULL || m.nnz != 0)
            tc_fuzz_fail(H, "failed conversion left output behind");
        if (valid_by_construction && !c->dups)
            tc_fuzz_fail(H, "conversion refused a valid %s matrix %lld x %lld, nnz %lld: %s",
                         c->fmt == 0 ? "CSR" : c->fmt == 1 ? "CSC" : "COO",
                         (long long)c->rows, (long long)c->cols, (long long)c->nnz,
                         tcsparseGetLastErrorMessage());
        return;
    }
    if (c->fmt == 3)
        tc_fuzz_fail(H, "conversion accepted an invalid format");
    if (valid_by_construction && c->dups)
        tc_fuzz_fail(H, "conversion accepted duplicate entries");
    check_metcf(c, &m);
    tc_metcf_free(&m);
}

static int64_t tc_fuzz_major(const fuzz_case *c)
{
    return c->fmt == 1 ? c->cols : c->rows;
}

/* Creation, getters, setters, destroy and use after destroy. */
static void descriptor(reader *r, const fuzz_case *c)
{
    static double values_storage[8];
    char *vals = (char *)values_storage + (c->misalign ? 1 : 0);
    tcsparseSpMatDescr_t d = (tcsparseSpMatDescr_t)(uintptr_t)0x1234;
    tcsparseStatus_t st;
    switch (c->fmt) {
    case 1:
        st = c->is_const
                 ? tcsparseCreateConstCsc((tcsparseConstSpMatDescr_t *)&d, c->rows, c->cols, c->nnz,
                                          c->off, c->idx, vals, c->off_t, c->idx_t, c->base, c->vt)
                 : tcsparseCreateCsc(&d, c->rows, c->cols, c->nnz, c->off, c->idx, vals, c->off_t,
                                     c->idx_t, c->base, c->vt);
        break;
    case 2:
        st = c->is_const
                 ? tcsparseCreateConstCoo((tcsparseConstSpMatDescr_t *)&d, c->rows, c->cols, c->nnz,
                                          c->off, c->idx, vals, c->off_t, c->base, c->vt)
                 : tcsparseCreateCoo(&d, c->rows, c->cols, c->nnz, c->off, c->idx, vals, c->off_t,
                                     c->base, c->vt);
        break;
    default:
        st = c->is_const
                 ? tcsparseCreateConstCsr((tcsparseConstSpMatDescr_t *)&d, c->rows, c->cols, c->nnz,
                                          c->off, c->idx, vals, c->off_t, c->idx_t, c->base, c->vt)
                 : tcsparseCreateCsr(&d, c->rows, c->cols, c->nnz, c->off, c->idx, vals, c->off_t,
                                     c->idx_t, c->base, c->vt);
        break;
    }
    if (st != TCSPARSE_STATUS_SUCCESS) {
        if (tcsparseGetLastErrorMessage()[0] == '\0')
            tc_fuzz_fail(H, "creation failed (%d) without a message", (int)st);
        if (d != (tcsparseSpMatDescr_t)(uintptr_t)0x1234)
            tc_fuzz_fail(H, "failed creation wrote its output");
        if (st != TCSPARSE_STATUS_INVALID_VALUE && st != TCSPARSE_STATUS_NOT_SUPPORTED)
            tc_fuzz_fail(H, "creation returned status %d", (int)st);
        return;
    }
    if (c->rows < 0 || c->cols < 0 || c->nnz < 0 || (c->nnz > 0 && c->rows == 0))
        tc_fuzz_fail(H, "created a %lld x %lld descriptor with nnz %lld", (long long)c->rows,
                     (long long)c->cols, (long long)c->nnz);

    int64_t rows, cols, nnz;
    void *o, *i, *v;
    tcsparseIndexType_t ot, it;
    tcsparseIndexBase_t b;
    cudaDataType vt;
    tcsparseFormat_t fm;
    const tcsparseFormat_t want_fm = c->fmt == 1 ? TCSPARSE_FORMAT_CSC
                                     : c->fmt == 2 ? TCSPARSE_FORMAT_COO : TCSPARSE_FORMAT_CSR;
    if (tcsparseSpMatGetSize(d, &rows, &cols, &nnz) != TCSPARSE_STATUS_SUCCESS ||
        rows != c->rows || cols != c->cols || nnz != c->nnz)
        tc_fuzz_fail(H, "tcsparseSpMatGetSize disagrees");
    if (tcsparseSpMatGetFormat(d, &fm) != TCSPARSE_STATUS_SUCCESS || fm != want_fm)
        tc_fuzz_fail(H, "tcsparseSpMatGetFormat disagrees");
    if (tcsparseSpMatGetIndexBase(d, &b) != TCSPARSE_STATUS_SUCCESS || b != c->base)
        tc_fuzz_fail(H, "tcsparseSpMatGetIndexBase disagrees");
    if (c->fmt == 2) {
        st = tcsparseCooGet(d, &rows, &cols, &nnz, &o, &i, &v, &it, &b, &vt);
        ot = it;
    } else if (c->fmt == 1) {
        st = tcsparseCscGet(d, &rows, &cols, &nnz, &o, &i, &v, &ot, &it, &b, &vt);
    } else {
        st = tcsparseCsrGet(d, &rows, &cols, &nnz, &o, &i, &v, &ot, &it, &b, &vt);
    }
    if (st != TCSPARSE_STATUS_SUCCESS || o != c->off || i != c->idx || v != (void *)vals ||
        ot != c->off_t || it != (c->fmt == 2 ? c->off_t : c->idx_t) || vt != c->vt)
        tc_fuzz_fail(H, "the format's getter disagrees (%d)", (int)st);
    /* a getter of another format must refuse */
    st = c->fmt == 2 ? tcsparseCsrGet(d, &rows, &cols, &nnz, &o, &i, &v, &ot, &it, &b, &vt)
                     : tcsparseCooGet(d, &rows, &cols, &nnz, &o, &i, &v, &it, &b, &vt);
    if (st != TCSPARSE_STATUS_INVALID_VALUE)
        tc_fuzz_fail(H, "a getter of the wrong format returned %d", (int)st);
    /* setters: the same pointers again, then a strided batch decoded from the bytes */
    st = c->fmt == 2 ? tcsparseCooSetPointers(d, c->off, c->idx, vals)
         : c->fmt == 1 ? tcsparseCscSetPointers(d, c->off, c->idx, vals)
                       : tcsparseCsrSetPointers(d, c->off, c->idx, vals);
    if (st != TCSPARSE_STATUS_SUCCESS)
        tc_fuzz_fail(H, "setting the same pointers again failed: %s",
                     tcsparseGetLastErrorMessage());
    int count = (int)(int8_t)rd8(r);
    int64_t s1 = rd_size(r, 7000), s2 = rd_size(r, 7000);
    st = c->fmt == 2 ? tcsparseCooSetStridedBatch(d, count, s1)
                     : tcsparseCsrSetStridedBatch(d, count, s1, s2);
    int got = -1;
    if (tcsparseSpMatGetStridedBatch(d, &got) != TCSPARSE_STATUS_SUCCESS)
        tc_fuzz_fail(H, "tcsparseSpMatGetStridedBatch failed");
    if (st == TCSPARSE_STATUS_SUCCESS ? got != count : got != 1)
        tc_fuzz_fail(H, "strided batch %d: status %d, count now %d", count, (int)st, got);
    if (st == TCSPARSE_STATUS_SUCCESS &&
        (count < 1 || s1 < 0 || (c->fmt == 2 && s1 != 0 && s1 < c->nnz) ||
         (c->fmt != 2 && s1 != 0 && s1 - 1 < tc_fuzz_major(c))))
        tc_fuzz_fail(H, "strided batch (%d, %lld, %lld) accepted", count, (long long)s1,
                     (long long)s2);

    if (tcsparseDestroySpMat(d) != TCSPARSE_STATUS_SUCCESS)
        tc_fuzz_fail(H, "destroy failed: %s", tcsparseGetLastErrorMessage());
    /* the quarantine keeps the shell: both must be refused, not crash */
    if (tcsparseDestroySpMat(d) != TCSPARSE_STATUS_INVALID_VALUE)
        tc_fuzz_fail(H, "a second destroy was not refused");
    if (tcsparseSpMatGetSize(d, &rows, &cols, &nnz) != TCSPARSE_STATUS_INVALID_VALUE)
        tc_fuzz_fail(H, "a use after destroy was not refused");
}

/* Dense descriptors from the next bytes. */
static void dense(reader *r)
{
    static double storage[4];
    unsigned f = rd8(r);
    int64_t rows = rd_size(r, 300), cols = rd_size(r, 300), ld = rd_size(r, 400);
    tcsparseOrder_t order = f & 1 ? TCSPARSE_ORDER_ROW : TCSPARSE_ORDER_COL;
    if (f & 2)
        order = (tcsparseOrder_t)(f >> 4);
    cudaDataType vt = value_types[(f >> 2) & 15];
    tcsparseDnMatDescr_t d = NULL;
    tcsparseStatus_t st =
        tcsparseCreateDnMat(&d, rows, cols, ld, (char *)storage + (f & 64 ? 2 : 0), vt, order);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        if (tcsparseGetLastErrorMessage()[0] == '\0' || d != NULL)
            tc_fuzz_fail(H, "dense creation failed (%d) badly", (int)st);
        return;
    }
    int64_t lead = order == TCSPARSE_ORDER_COL ? rows : cols;
    if (rows < 0 || cols < 0 || ld < lead)
        tc_fuzz_fail(H, "dense %lld x %lld, ld %lld accepted", (long long)rows,
                     (long long)cols, (long long)ld);
    int64_t r2, c2, l2;
    void *v;
    cudaDataType t2;
    tcsparseOrder_t o2;
    if (tcsparseDnMatGet(d, &r2, &c2, &l2, &v, &t2, &o2) != TCSPARSE_STATUS_SUCCESS ||
        r2 != rows || c2 != cols || l2 != ld || t2 != vt || o2 != order)
        tc_fuzz_fail(H, "tcsparseDnMatGet disagrees");
    int count = (int)(int8_t)rd8(r);
    int64_t stride = rd_size(r, 200000);
    (void)tcsparseDnMatSetStridedBatch(d, count, stride);
    if (tcsparseDestroyDnMat(d) != TCSPARSE_STATUS_SUCCESS ||
        tcsparseDestroyDnMat(d) != TCSPARSE_STATUS_INVALID_VALUE)
        tc_fuzz_fail(H, "dense destroy, then a second destroy, misbehaved");
}

int tc_fuzz_descr(const uint8_t *data, size_t size)
{
    reader r = {data, size, 0};
    fuzz_case c;
    decode(&r, &c);
    convert(&c);
    descriptor(&r, &c);
    dense(&r);
    free(c.off);
    free(c.idx);
    return 0;
}

#ifdef TC_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tc_fuzz_descr(data, size);
}
#endif

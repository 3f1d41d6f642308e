/* Matrix Market reader: good files, every malformed case with its line number, gzip
 * (files and memory), long lines, mutated inputs, and the shared data set when present.  One
 * file over 600 lines: every group of tests reads through the same data-directory and
 * reader helpers, and each group is too small to be a program of its own. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "mmio.h"

static char found_dir[2048];

static int try_dir(const char *a, const char *b)
{
    char probe[2100];
    int n = snprintf(probe, sizeof probe, "%s%s/good_general.mtx", a, b);
    if (n < 0 || (size_t)n >= sizeof probe || access(probe, R_OK) != 0)
        return 0;
    snprintf(found_dir, sizeof found_dir, "%s%s", a, b);
    return 1;
}

/* tests/data, wherever the test runs from: $TC_TEST_DATA (set by `make check`),
 * $TC_TEST_DATA_DIR, the build's define, or
 * relative to $srcdir (set by automake's test harness) or the working directory. */
static const char *data_dir(void)
{
    const char *env = getenv("TC_TEST_DATA"), *env2 = getenv("TC_TEST_DATA_DIR");
    const char *srcdir = getenv("srcdir");
    if ((env && try_dir(env, "")) || (env2 && try_dir(env2, "")))
        return found_dir;
#ifdef TC_TEST_DATA_DIR
    if (try_dir(TC_TEST_DATA_DIR, ""))
        return found_dir;
#endif
    if (srcdir && (try_dir(srcdir, "/tests/data") || try_dir(srcdir, "/data") ||
                   try_dir(srcdir, "/../data")))
        return found_dir;
    if (try_dir("tests/data", "") || try_dir("data", "") || try_dir("../data", "") ||
        try_dir("../../tests/data", ""))
        return found_dir;
    cr_assert_fail("tests/data not found (set TC_TEST_DATA)");
    return NULL;
}

static char *data_path(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s", data_dir(), name);
    return p;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void read_ok(const char *name, tc_mm_matrix *m)
{
    char err[512] = "untouched";
    int r = tc_mm_read(data_path(name), m, err, sizeof err);
    cr_assert_eq(r, 0, "%s: %s", name, err);
    cr_assert_str_empty(err);
}

static void expect_entry(const tc_mm_matrix *m, int64_t k, int64_t i, int64_t j, double v)
{
    cr_assert_lt(k, m->nnz);
    cr_expect(m->row[k] == i && m->col[k] == j && m->val[k] == v,
              "entry %lld: (%lld, %lld, %g), expected (%lld, %lld, %g)", (long long)k,
              (long long)m->row[k], (long long)m->col[k], m->val[k], (long long)i, (long long)j,
              v);
}

Test(mmio, general_with_comments_blank_lines_and_whitespace)
{
    tc_mm_matrix m;
    read_ok("good_general.mtx", &m);
    cr_assert(m.rows == 5 && m.cols == 4 && m.nnz == 7 && !m.is_pattern && m.symmetry == 0);
    expect_entry(&m, 0, 0, 0, 0.5);
    expect_entry(&m, 1, 0, 3, -0.225);
    expect_entry(&m, 2, 1, 1, 3.0);
    expect_entry(&m, 3, 3, 0, -1.5);
    expect_entry(&m, 4, 3, 2, 7.0);
    expect_entry(&m, 5, 4, 1, 8.0);
    expect_entry(&m, 6, 4, 3, -0.125);
    tc_mm_free(&m);
    cr_assert(m.row == NULL && m.nnz == 0);
}

Test(mmio, crlf_no_final_newline_and_banner_case)
{
    tc_mm_matrix m;
    read_ok("good_crlf.mtx", &m);
    cr_assert(m.rows == 3 && m.nnz == 3);
    expect_entry(&m, 1, 1, 2, -2.5);
    expect_entry(&m, 2, 2, 1, 0.25);
    tc_mm_free(&m);
    read_ok("good_noeol.mtx", &m);
    cr_assert(m.rows == 2 && m.cols == 3 && m.nnz == 2);
    expect_entry(&m, 1, 1, 0, -0.5);
    tc_mm_free(&m);
    read_ok("good_case.mtx", &m);
    cr_assert(m.nnz == 1);
    tc_mm_free(&m);
}

Test(mmio, symmetric_expansion)
{
    tc_mm_matrix m;
    read_ok("good_symmetric.mtx", &m);
    /* 6 stored: 3 diagonal (not mirrored) + 3 off-diagonal (mirrored) = 9. */
    cr_assert(m.rows == 4 && m.nnz == 9 && m.symmetry == 1);
    expect_entry(&m, 0, 0, 0, 2.5);
    expect_entry(&m, 1, 1, 0, -0.75);
    expect_entry(&m, 2, 0, 1, -0.75);
    expect_entry(&m, 5, 2, 2, 4.0);
    expect_entry(&m, 6, 3, 1, 1.5);
    expect_entry(&m, 7, 1, 3, 1.5);
    expect_entry(&m, 8, 3, 3, -3.0);
    tc_mm_free(&m);

    read_ok("good_skew.mtx", &m);
    cr_assert(m.nnz == 4 && m.symmetry == 2);
    expect_entry(&m, 0, 1, 0, 0.5);
    expect_entry(&m, 1, 0, 1, -0.5);
    expect_entry(&m, 3, 1, 2, 1.25);
    tc_mm_free(&m);

    read_ok("good_pattern_sym.mtx", &m);
    cr_assert(m.nnz == 5 && m.is_pattern && m.symmetry == 1);
    tc_mm_free(&m);
}

Test(mmio, pattern_and_integer)
{
    tc_mm_matrix m;
    read_ok("good_pattern.mtx", &m);
    cr_assert(m.rows == 3 && m.cols == 6 && m.nnz == 5 && m.is_pattern);
    for (int64_t k = 0; k < m.nnz; k++)
        cr_expect_eq(m.val[k], 1.0);
    expect_entry(&m, 1, 0, 5, 1.0);
    tc_mm_free(&m);
    read_ok("good_integer.mtx", &m);
    cr_assert(m.nnz == 4 && !m.is_pattern);
    expect_entry(&m, 1, 1, 2, -12.0);
    expect_entry(&m, 2, 2, 0, 4.0);
    expect_entry(&m, 3, 2, 2, 0.0);
    tc_mm_free(&m);
}

Test(mmio, empty_matrix_and_csr)
{
    tc_mm_matrix m;
    read_ok("good_empty.mtx", &m);
    cr_assert(m.rows == 7 && m.cols == 5 && m.nnz == 0);
    int64_t *off, nnz = -1;
    int32_t *col;
    double *val;
    cr_assert_eq(tc_mm_to_csr(&m, &off, &col, &val, &nnz), 0);
    cr_assert_eq(nnz, 0);
    for (int i = 0; i <= 7; i++)
        cr_expect_eq(off[i], 0);
    free(off), free(col), free(val);
    tc_mm_free(&m);
}

Test(mmio, csr_sorts_and_sums_duplicates)
{
    tc_mm_matrix m;
    read_ok("good_dups.mtx", &m);
    int64_t *off, nnz;
    int32_t *col;
    double *val;
    cr_assert_eq(tc_mm_to_csr(&m, &off, &col, &val, &nnz), 0);
    /* (0,0) -1; (0,2) 0.5+0.25; row 1 empty; (2,0) 2; (2,3) 1+0.5 */
    int64_t eo[] = {0, 2, 2, 4};
    int32_t ec[] = {0, 2, 0, 3};
    double ev[] = {-1.0, 0.75, 2.0, 1.5};
    cr_assert_eq(nnz, 4);
    for (int i = 0; i < 4; i++)
        cr_expect_eq(off[i], eo[i]);
    for (int k = 0; k < 4; k++)
        cr_expect(col[k] == ec[k] && val[k] == ev[k], "k=%d: %d %g", k, col[k], val[k]);
    free(off), free(col), free(val);
    tc_mm_free(&m);
}

/* A random file, unsorted, with duplicates and long rows (the qsort path), against a dense
 * accumulation. */
Test(mmio, csr_matches_dense_reference)
{
    const int rows = 37, cols = 29, entries = 1000;
    double *dense = calloc((size_t)rows * cols, sizeof *dense);
    int *seen = calloc((size_t)rows * cols, sizeof *seen);
    size_t cap = 64 + (size_t)entries * 40, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n",
                            rows, cols, entries);
    srand(7);
    for (int k = 0; k < entries; k++) {
        /* rows 3 and 20 stay empty; row 5 gets many entries */
        int i = k % 4 == 0 ? 5 : rand() % rows;
        if (i == 3 || i == 20)
            i = 6;
        int j = rand() % cols;
        int q = rand() % 2001 - 1000;
        double v = q / 256.0;
        dense[i * cols + j] += v;
        seen[i * cols + j] = 1;
        len += (size_t)snprintf(text + len, cap - len, "%d %d %.10g\n", i + 1, j + 1, v);
    }
    tc_mm_matrix m;
    char err[256];
    cr_assert_eq(tc_mm_read_mem(text, len, "rand", &m, err, sizeof err), 0, "%s", err);
    int64_t *off, nnz;
    int32_t *col;
    double *val;
    cr_assert_eq(tc_mm_to_csr(&m, &off, &col, &val, &nnz), 0);
    int64_t expect_nnz = 0;
    for (int p = 0; p < rows * cols; p++)
        expect_nnz += seen[p];
    cr_assert_eq(nnz, expect_nnz);
    cr_assert_eq(off[0], 0);
    cr_assert_eq(off[rows], nnz);
    cr_expect_eq(off[4], off[3]);
    cr_expect_eq(off[21], off[20]);
    for (int i = 0; i < rows; i++)
        for (int64_t k = off[i]; k < off[i + 1]; k++) {
            cr_assert(k == off[i] || col[k] > col[k - 1], "row %d not strictly sorted", i);
            cr_assert(seen[i * cols + col[k]]);
            /* sums of multiples of 1/256 are exact */
            cr_expect_eq(val[k], dense[i * cols + col[k]], "(%d,%d)", i, col[k]);
        }
    free(off), free(col), free(val);
    tc_mm_free(&m);
    free(text), free(dense), free(seen);
}

Test(mmio, csr_rejects_wide_matrices)
{
    tc_mm_matrix m;
    char err[256];
    const char *t = "%%MatrixMarket matrix coordinate real general\n2 3000000000 1\n1 2999999999 1\n";
    cr_assert_eq(tc_mm_read_mem(t, strlen(t), "wide", &m, err, sizeof err), 0, "%s", err);
    int64_t *off, nnz;
    int32_t *col;
    double *val;
    cr_assert_eq(tc_mm_to_csr(&m, &off, &col, &val, &nnz), -1);
    cr_assert(off == NULL && col == NULL && val == NULL);
    tc_mm_free(&m);
}

typedef struct {
    const char *file;
    int line;
    const char *what;
} bad_case;

static const bad_case bad_cases[] = {
    {"bad_empty.mtx", 1, "empty input"},
    {"bad_banner.mtx", 1, "missing %%MatrixMarket banner"},
    {"bad_no_banner.mtx", 1, "missing %%MatrixMarket banner"},
    {"bad_banner_short.mtx", 1, "banner needs"},
    {"bad_banner_extra.mtx", 1, "unexpected 'extra'"},
    {"bad_object.mtx", 1, "object 'vector' not supported"},
    {"bad_complex.mtx", 1, "complex not supported"},
    {"bad_hermitian.mtx", 1, "hermitian not supported"},
    {"bad_array.mtx", 1, "array (dense) format not supported"},
    {"bad_field.mtx", 1, "unknown field 'quaternion'"},
    {"bad_symmetry.mtx", 1, "unknown symmetry 'diagonal'"},
    {"bad_pattern_skew.mtx", 1, "cannot be skew-symmetric"},
    {"bad_no_size.mtx", 3, "file ends before the size line"},
    {"bad_size_negative.mtx", 3, "negative row count -3"},
    {"bad_size_overflow.mtx", 2, "column count '99999999999999999999' out of range"},
    {"bad_size_missing.mtx", 2, "size line needs ROWS COLS ENTRIES"},
    {"bad_size_extra.mtx", 2, "unexpected '4' after the size line"},
    {"bad_size_text.mtx", 2, "column count 'three' is not an integer"},
    {"bad_size_float.mtx", 2, "column count '3.0' is not an integer"},
    {"bad_size_positions.mtx", 2, "5 entries declared but a 2 x 2 matrix has 4 positions"},
    {"bad_size_sym_square.mtx", 2, "symmetric matrix must be square"},
    {"bad_row_zero.mtx", 4, "row index 0 out of range 1..3"},
    {"bad_row_range.mtx", 4, "row index 4 out of range 1..3"},
    {"bad_col_range.mtx", 5, "column index 9 out of range 1..3"},
    {"bad_index_text.mtx", 4, "row index 'x' is not an integer"},
    {"bad_index_float.mtx", 4, "column index '2.5' is not an integer"},
    {"bad_index_huge.mtx", 3, "out of range"},
    {"bad_value_text.mtx", 4, "value 'abc' is not a number"},
    {"bad_value_suffix.mtx", 4, "value '1.5x' is not a number"},
    {"bad_value_missing.mtx", 4, "missing value"},
    {"bad_value_nan.mtx", 4, "value 'nan' is not finite"},
    {"bad_value_inf.mtx", 4, "value '-inf' is not finite"},
    {"bad_value_overflow.mtx", 4, "value '1e999' is out of range"},
    {"bad_int_value.mtx", 4, "value '1.5' is not an integer"},
    {"bad_trailing.mtx", 4, "unexpected '7' after the entry"},
    {"bad_pattern_value.mtx", 4, "unexpected '1.0' after the entry"},
    {"bad_too_few.mtx", 5, "file ends after 2 of 3 declared entries"},
    {"bad_too_many.mtx", 6, "more entries than the 2 declared"},
    {"bad_sym_upper.mtx", 4, "entry (1, 3) above the diagonal"},
    {"bad_skew_diag.mtx", 4, "diagonal entry (2, 2)"},
    {"bad_separator.mtx", 3, "row index '1,1,1.0' is not an integer"},
};

static void expect_error(int r, const tc_mm_matrix *m, const char *err, const char *name,
                         int line, const char *what)
{
    char prefix[4400];
    snprintf(prefix, sizeof prefix, "%s:%d: ", name, line);
    cr_expect_eq(r, -1, "%s: accepted", name);
    cr_expect(strncmp(err, prefix, strlen(prefix)) == 0, "%s: message '%s', expected prefix '%s'",
              name, err, prefix);
    cr_expect(strstr(err, what) != NULL, "%s: message '%s' lacks '%s'", name, err, what);
    cr_expect(m->row == NULL && m->col == NULL && m->val == NULL && m->nnz == 0 && m->rows == 0,
              "%s: output not zeroed", name);
}

Test(mmio, malformed_files_report_file_and_line)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        char path[4400], err[512];
        tc_mm_matrix m;
        snprintf(path, sizeof path, "%s", data_path(c->file));
        memset(&m, 0x5a, sizeof m);
        int r = tc_mm_read(path, &m, err, sizeof err);
        expect_error(r, &m, err, path, c->line, c->what);
        /* the memory reader shares the parser: same verdict, with the given name */
        size_t len;
        char *buf = slurp(path, &len);
        r = tc_mm_read_mem(buf, len, c->file, &m, err, sizeof err);
        expect_error(r, &m, err, c->file, c->line, c->what);
        free(buf);
    }
}

Test(mmio, missing_file_and_directory)
{
    tc_mm_matrix m;
    char err[512];
    cr_assert_eq(tc_mm_read("/nonexistent/x.mtx", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "/nonexistent/x.mtx:0: cannot open") == err, "%s", err);
    cr_assert_eq(tc_mm_read(data_dir(), &m, err, sizeof err), -1);
    cr_expect(strstr(err, data_dir()) == err, "%s", err);
    cr_expect_eq(m.row, NULL);
    /* a tiny error buffer is never overrun */
    char small[8];
    memset(small, 'x', sizeof small);
    cr_assert_eq(tc_mm_read("/nonexistent/x.mtx", &m, small, 5), -1);
    cr_expect_eq(strlen(small), 4);
    cr_expect_eq(small[5], 'x');
}

Test(mmio, memory_reader_names_and_embedded_nul)
{
    tc_mm_matrix m;
    char err[256];
    static const char t[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\0junk\n";
    cr_assert_eq(tc_mm_read_mem(t, sizeof t - 1, NULL, &m, err, sizeof err), -1);
    cr_expect(strstr(err, "<memory>:3: ") == err, "%s", err);
    static const char h[] = "%%MatrixMarket matrix coordinate real general\n2 2\0 1\n1 1 1.0\n";
    cr_assert_eq(tc_mm_read_mem(h, sizeof h - 1, "h", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "h:2: NUL byte") == err, "%s", err);
    cr_assert_eq(tc_mm_read_mem(NULL, 0, "nothing", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "nothing:1: empty input") == err, "%s", err);
}

/* Builds "banner, a comment of clen bytes, size line, entry lines" with one entry line of
 * at least dlen bytes when dlen > 0. */
static char *long_text(size_t clen, size_t dlen, size_t *len)
{
    size_t cap = clen + dlen + 256;
    char *t = malloc(cap);
    size_t n = (size_t)sprintf(t, "%%%%MatrixMarket matrix coordinate real general\n%%");
    memset(t + n, 'c', clen);
    n += clen;
    n += (size_t)sprintf(t + n, "\n2 2 2\n1 1 0.5\n2 2 ");
    if (dlen) {
        memset(t + n, '0', dlen);
        n += dlen;
    }
    n += (size_t)sprintf(t + n, "1.25\n");
    *len = n;
    return t;
}

Test(mmio, long_lines)
{
    tc_mm_matrix m;
    char err[256];
    size_t len;
    /* a comment much longer than the line buffer is skipped */
    char *t = long_text(3u << 20, 0, &len);
    cr_assert_eq(tc_mm_read_mem(t, len, "c", &m, err, sizeof err), 0, "%s", err);
    cr_expect(m.nnz == 2 && m.val[1] == 1.25);
    tc_mm_free(&m);
    free(t);
    /* a data line that long is refused, with its line number, without overflow */
    t = long_text(10, 1u << 20, &len);
    cr_assert_eq(tc_mm_read_mem(t, len, "d", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "d:5: line longer than") == err, "%s", err);
    free(t);
    /* so is a line of nothing but blanks that long */
    t = long_text(10, 0, &len);
    char *w = malloc(len + (1u << 20));
    size_t head = (size_t)(strstr(t, "2 2 2\n") - t);
    memcpy(w, t, head);
    memset(w + head, ' ', 1u << 20);
    memcpy(w + head + (1u << 20), t + head, len - head);
    cr_assert_eq(tc_mm_read_mem(w, len + (1u << 20), "w", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "w:3: line longer than") == err, "%s", err);
    free(w);
    free(t);
    /* one that fits is read (leading zeros) */
    t = long_text(10, 100000, &len);
    cr_assert_eq(tc_mm_read_mem(t, len, "e", &m, err, sizeof err), 0, "%s", err);
    cr_expect(m.val[1] == 1.25);
    tc_mm_free(&m);
    free(t);
}

static char tmpdir[] = "/tmp/test_mmio_XXXXXX";

static void make_tmpdir(void) { cr_assert(mkdtemp(tmpdir) != NULL); }

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    char p[4400];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(tmpdir);
}

static void write_gz(const char *path, const char *data, size_t len, int members)
{
    for (int k = 0; k < members; k++) {
        gzFile g = gzopen(path, k ? "ab" : "wb");
        cr_assert(g);
        size_t part = len / (size_t)members, beg = part * (size_t)k;
        size_t n = k == members - 1 ? len - beg : part;
        cr_assert_eq(gzwrite(g, data + beg, (unsigned)n), (int)n);
        gzclose(g);
    }
}

static void expect_same(const tc_mm_matrix *a, const tc_mm_matrix *b)
{
    cr_assert(a->rows == b->rows && a->cols == b->cols && a->nnz == b->nnz);
    for (int64_t k = 0; k < a->nnz; k++)
        cr_assert(a->row[k] == b->row[k] && a->col[k] == b->col[k] && a->val[k] == b->val[k]);
}

Test(mmio, gzip_files_and_buffers, .init = make_tmpdir, .fini = remove_tmpdir)
{
    const char *names[] = {"good_general.mtx", "good_symmetric.mtx", "good_pattern.mtx"};
    for (int f = 0; f < 3; f++) {
        tc_mm_matrix plain, z;
        char err[512], gz[4400];
        size_t len, zlen;
        read_ok(names[f], &plain);
        char *text = slurp(data_path(names[f]), &len);
        for (int members = 1; members <= 3; members += 2) {
            snprintf(gz, sizeof gz, "%s/m%d.mtx.gz", tmpdir, members);
            write_gz(gz, text, len, members);
            cr_assert_eq(tc_mm_read(gz, &z, err, sizeof err), 0, "%s", err);
            expect_same(&plain, &z);
            tc_mm_free(&z);
            char *zb = slurp(gz, &zlen);
            cr_assert_eq(tc_mm_read_mem(zb, zlen, "zbuf", &z, err, sizeof err), 0, "%s", err);
            expect_same(&plain, &z);
            tc_mm_free(&z);
            free(zb);
        }
        tc_mm_free(&plain);
        free(text);
    }
}

Test(mmio, gzip_errors_carry_the_line, .init = make_tmpdir, .fini = remove_tmpdir)
{
    tc_mm_matrix m;
    char err[512], gz[4400];
    size_t len, zlen;
    char *text = slurp(data_path("bad_too_many.mtx"), &len);
    snprintf(gz, sizeof gz, "%s/bad.mtx.gz", tmpdir);
    write_gz(gz, text, len, 1);
    cr_assert_eq(tc_mm_read(gz, &m, err, sizeof err), -1);
    char prefix[4500];
    snprintf(prefix, sizeof prefix, "%s:6: more entries", gz);
    cr_expect(strstr(err, prefix) == err, "%s", err);
    free(text);

    /* truncated and corrupted compressed streams are errors, not crashes */
    size_t big = 200000, n = 0;
    char *many = malloc(big * 24 + 200);
    n += (size_t)sprintf(many, "%%%%MatrixMarket matrix coordinate real general\n%zu 9 %zu\n",
                         big, big);
    for (size_t k = 0; k < big; k++)
        n += (size_t)sprintf(many + n, "%zu %zu 0.5\n", k + 1, k % 9 + 1);
    write_gz(gz, many, n, 1);
    char *zb = slurp(gz, &zlen);
    cr_assert_eq(tc_mm_read_mem(zb, zlen, "full", &m, err, sizeof err), 0, "%s", err);
    cr_expect_eq(m.nnz, (int64_t)big);
    tc_mm_free(&m);
    cr_assert_eq(tc_mm_read_mem(zb, zlen / 2, "half", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "half:") == err && strstr(err, "truncated"), "%s", err);
    FILE *f = fopen(gz, "wb");
    fwrite(zb, 1, zlen / 2, f);
    fclose(f);
    cr_assert_eq(tc_mm_read(gz, &m, err, sizeof err), -1);
    cr_expect(strstr(err, gz) == err && strstr(err, "truncated"), "%s", err);
    for (size_t k = 20; k < 60; k++)
        zb[k] ^= 0x5a;
    cr_assert_eq(tc_mm_read_mem(zb, zlen, "corrupt", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "corrupt:") == err, "%s", err);
    cr_expect_eq(m.row, NULL);
    free(zb), free(many);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A 70-byte file declaring 2,000,000,000 rows needs 14.9 GiB of CSR row offsets: with
 * 8 GiB to use it is refused at its size line, at once, from a file or from memory; with the
 * machine's own limit it is refused exactly when it does not fit. */
Test(mmio, huge_header_refused_before_allocating)
{
    tc_mm_matrix m;
    char err[512];
    char path[4400];
    snprintf(path, sizeof path, "%s", data_path("bad_size_huge_rows.mtx"));
    const char *what = "a 2000000000 x 1000 matrix with 1 entries needs 14.9 GiB to read and "
                       "convert to CSR, more than the 8.0 GiB of memory available";
    tc_mm_set_memory_limit((uint64_t)8 << 30);
    cr_assert_eq(tc_mm_memory_limit(), (uint64_t)8 << 30);
    memset(&m, 0x5a, sizeof m);
    double t0 = now_s();
    int r = tc_mm_read(path, &m, err, sizeof err);
    double took = now_s() - t0;
    expect_error(r, &m, err, path, 2, what);
    cr_expect(took < 0.5, "refused after %.2f s", took);
    size_t len;
    char *text = slurp(path, &len);
    cr_expect_eq(len, 70);
    r = tc_mm_read_mem(text, len, "huge", &m, err, sizeof err);
    expect_error(r, &m, err, "huge", 2, what);

    /* the machine's limit: physical memory or less */
    tc_mm_set_memory_limit(0);
    const uint64_t have = tc_mm_memory_limit();
    const uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    cr_expect(have > 0 && have <= phys, "limit %llu of %llu bytes", (unsigned long long)have,
              (unsigned long long)phys);
    const uint64_t need = (2000000000ull + 2) * 8 + 36;
    r = tc_mm_read_mem(text, len, "huge", &m, err, sizeof err);
    cr_expect_eq(r, need > have ? -1 : 0, "%s", err);
    tc_mm_free(&m);
    free(text);
}

/* A tall matrix that fits: 2,000,000 rows with 3 entries (16 MB of CSR row offsets), read
 * and converted under the machine's own limit. */
Test(mmio, tall_header_with_small_body_parses)
{
    tc_mm_matrix m;
    read_ok("good_tall.mtx", &m);
    cr_assert(m.rows == 2000000 && m.cols == 2000000 && m.nnz == 3);
    expect_entry(&m, 1, 999999, 6, -2.0);
    int64_t *off, nnz;
    int32_t *col;
    double *val;
    cr_assert_eq(tc_mm_to_csr(&m, &off, &col, &val, &nnz), 0);
    cr_expect(nnz == 3 && off[1] == 1 && off[999999] == 1 && off[1000000] == 2 &&
              off[1999999] == 2 && off[2000000] == 3);
    cr_expect(col[2] == 1999999 && val[2] == 4.0);
    free(off), free(col), free(val);
    tc_mm_free(&m);
}

/* The memory check counts the entries a plain input's bytes can hold when it declares more
 * (it then fails where its entries end); a gzip input's compressed size bounds nothing. */
Test(mmio, entry_bound_only_for_plain_inputs, .init = make_tmpdir, .fini = remove_tmpdir)
{
    tc_mm_matrix m;
    char err[512], gz[4400];
    size_t n = 0;
    char *text = malloc(80 + 20000 * 8);
    n += (size_t)sprintf(text, "%%%%MatrixMarket matrix coordinate pattern general\n"
                               "200 200 20000\n");
    for (int k = 0; k < 20000; k++)
        n += (size_t)sprintf(text + n, "%d %d\n", k % 200 + 1, k / 200 + 1);
    snprintf(gz, sizeof gz, "%s/dense.mtx.gz", tmpdir);
    write_gz(gz, text, n, 1);
    size_t zlen;
    char *zb = slurp(gz, &zlen);
    /* fewer bytes than 20000 entry lines could fit in */
    cr_assert_lt((zlen + 1) / 4, (size_t)20000, "compressed to %zu bytes", zlen);
    cr_assert_eq(tc_mm_read(gz, &m, err, sizeof err), 0, "%s", err);
    cr_expect_eq(m.nnz, 20000);
    tc_mm_free(&m);
    cr_assert_eq(tc_mm_read_mem(zb, zlen, "zbuf", &m, err, sizeof err), 0, "%s", err);
    cr_expect_eq(m.nnz, 20000);
    tc_mm_free(&m);
    /* with 256 KiB to use, 20000 entries (720 KB) do not fit: refused at the size line,
     * plain or gzip */
    tc_mm_set_memory_limit((uint64_t)256 << 10);
    cr_assert_eq(tc_mm_read_mem(text, n, "plain", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "plain:2: a 200 x 200 matrix with 20000 entries needs") == err, "%s",
              err);
    cr_assert_eq(tc_mm_read_mem(zb, zlen, "zbuf", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "zbuf:2: a 200 x 200 matrix with 20000 entries needs") == err, "%s",
              err);
    /* the same header and 4 entry lines of plain text (79 bytes): what they can hold fits,
     * and the read fails where they end */
    cr_assert_eq(tc_mm_read_mem(text, 79, "short", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "short:6: file ends after 4 of 20000 declared entries") == err, "%s",
              err);
    free(zb), free(text);
}

/* Random byte edits of valid files: every result is a matrix or a "NAME:LINE: " error. */
Test(mmio, mutated_inputs_never_crash)
{
    const char *names[] = {"good_general.mtx", "good_symmetric.mtx", "good_pattern.mtx",
                           "good_integer.mtx", "good_crlf.mtx"};
    static const char alphabet[] = "0123456789 \t\n\r-+.eE%xn:\0\x1f\x8b";
    uint64_t s = 12345;
    int accepted = 0;
    for (int f = 0; f < 5; f++) {
        size_t len;
        char *orig = slurp(data_path(names[f]), &len);
        char *buf = malloc(len + 64);
        for (int it = 0; it < 3000; it++) {
            memcpy(buf, orig, len);
            size_t n = len;
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int edits = 1 + (int)(s >> 60) % 4;
            for (int e = 0; e < edits; e++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                size_t pos = (size_t)(s >> 33) % n;
                int op = (int)(s >> 20) % 3;
                char c = alphabet[(s >> 40) % (sizeof alphabet - 1)];
                if (op == 0)
                    buf[pos] = c;
                else if (op == 1 && n > 1)
                    memmove(buf + pos, buf + pos + 1, --n - pos);
                else if (n < len + 60) {
                    memmove(buf + pos + 1, buf + pos, n++ - pos);
                    buf[pos] = c;
                }
            }
            tc_mm_matrix m;
            char err[256];
            int r = tc_mm_read_mem(buf, n, "fz", &m, err, sizeof err);
            if (r == 0) {
                accepted++;
                for (int64_t k = 0; k < m.nnz; k++)
                    cr_assert(m.row[k] >= 0 && m.row[k] < m.rows && m.col[k] >= 0 &&
                              m.col[k] < m.cols);
                tc_mm_free(&m);
            } else {
                long line;
                cr_assert(sscanf(err, "fz:%ld: ", &line) == 1 && line >= 0, "%s", err);
            }
        }
        free(buf), free(orig);
    }
    cr_log_info("mutated inputs accepted: %d of 15000", accepted);
}

/* The header's entry count, symmetric or not, read independently of the parser. */
static int header_count(const char *path, int64_t *stored, int *symmetric)
{
    gzFile g = gzopen(path, "rb");
    char line[4096];
    if (!g || !gzgets(g, line, sizeof line))
        return -1;
    *symmetric = strstr(line, "symmetric") != NULL;
    int r = -1;
    while (gzgets(g, line, sizeof line))
        if (line[0] != '%' && line[0] != '\n') {
            long long a, b, c;
            if (sscanf(line, "%lld %lld %lld", &a, &b, &c) == 3)
                *stored = c, r = 0;
            break;
        }
    gzclose(g);
    return r;
}

Test(mmio, shared_data_files)
{
    const char *dir = getenv("TC_DATA_DIR");
    struct stat st;
    if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        cr_skip_test("TC_DATA_DIR is not set to a directory (e.g. ../shared/data)");
    DIR *d = opendir(dir);
    cr_assert(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 7 || strcmp(e->d_name + n - 7, ".mtx.gz") != 0)
            continue;
        char path[4400], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int64_t stored = -1;
        int sym = 0;
        cr_assert_eq(header_count(path, &stored, &sym), 0, "%s: no size line", path);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tc_mm_matrix m;
        int r = tc_mm_read(path, &m, err, sizeof err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_expect_eq(r, 0, "%s", err);
        if (r)
            continue;
        int64_t diag = 0;
        for (int64_t k = 0; k < m.nnz; k++)
            diag += m.row[k] == m.col[k];
        int64_t expect = sym ? 2 * stored - diag : stored;
        cr_expect_eq(m.nnz, expect, "%s: %lld entries, expected %lld", e->d_name,
                     (long long)m.nnz, (long long)expect);
        if (m.nnz > 1000000)
            cr_log_info("%s: %lld entries read in %.3f s", e->d_name, (long long)m.nnz,
                        (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        tc_mm_free(&m);
        files++;
    }
    closedir(d);
    cr_expect_gt(files, 0, "no .mtx.gz files in %s", dir);
}

/* Matrix Market coordinate reader.  One parser runs over a "line source" that hides
 * where the bytes come from (a zlib gzFile, which reads plain and gzip files alike, a
 * plain memory buffer, or a gzip memory buffer inflated on the fly), so the file and
 * memory entry points cannot drift apart.  It stays one file: every parser works on that
 * file-local line source and its error reporting (fail), which a split would have to expose
 * in a header. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "mmio.h"

#define LS_BUF (256u * 1024u) /* longest data line accepted; comments may be longer */

typedef struct line_src line_src;
struct line_src {
    int (*fill)(line_src *s, char *dst, size_t cap); /* bytes read, 0 at end, -1 error */
    gzFile gz;
    const unsigned char *mem;
    size_t mem_len, mem_pos;
    z_stream zs;
    int zs_live, zs_done;
    char *buf; /* LS_BUF + 1 bytes: room for a terminating NUL after the last line */
    size_t beg, end;
    int eof;
    int64_t lineno;
    int64_t total;  /* bytes of the input when known (a plain file or buffer), else -1 */
    int64_t filled; /* bytes the fill function has delivered so far */
    const char *name;
    char *err;
    size_t errlen;
};

static int fail(line_src *s, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(line_src *s, int64_t line, const char *fmt, ...)
{
    if (s->err && s->errlen) {
        int n = snprintf(s->err, s->errlen, "%s:%lld: ", s->name, (long long)line);
        if (n >= 0 && (size_t)n < s->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int fill_gz(line_src *s, char *dst, size_t cap)
{
    int n = gzread(s->gz, dst, (unsigned)cap), code = Z_OK;
    const char *msg = n <= 0 ? gzerror(s->gz, &code) : NULL;
    /* gzread reports a truncated stream as a plain end of file, with Z_BUF_ERROR set. */
    if (n == 0 && code == Z_BUF_ERROR)
        return fail(s, s->lineno + 1, "gzip data truncated");
    if (n < 0) {
        size_t k = strlen(s->name); /* zlib's message repeats the path */
        if (msg && strncmp(msg, s->name, k) == 0 && msg[k] == ':' && msg[k + 1] == ' ')
            msg += k + 2;
        return fail(s, s->lineno + 1, "read error: %s",
                    code == Z_ERRNO ? strerror(errno) : msg);
    }
    return n;
}

static int fill_mem(line_src *s, char *dst, size_t cap)
{
    size_t n = s->mem_len - s->mem_pos;
    if (n > cap)
        n = cap;
    if (n == 0)
        return 0;
    memcpy(dst, s->mem + s->mem_pos, n);
    s->mem_pos += n;
    return (int)n;
}

static int fill_inflate(line_src *s, char *dst, size_t cap)
{
    z_stream *z = &s->zs;
    z->next_out = (unsigned char *)dst;
    z->avail_out = (unsigned)cap;
    while (z->avail_out == cap && !s->zs_done) {
        if (z->avail_in == 0) {
            if (s->mem_pos >= s->mem_len)
                return fail(s, s->lineno + 1, "gzip data truncated");
            size_t n = s->mem_len - s->mem_pos;
            if (n > (1u << 30))
                n = 1u << 30;
            z->next_in = (unsigned char *)(s->mem + s->mem_pos);
            z->avail_in = (unsigned)n;
            s->mem_pos += n;
        }
        int r = inflate(z, Z_NO_FLUSH);
        if (r == Z_STREAM_END) {
            /* Concatenated gzip members are one stream (as gzread treats them); anything
             * else after the member is ignored, again like gzread. */
            size_t left = z->avail_in + (s->mem_len - s->mem_pos);
            const unsigned char *next = z->next_in;
            if (z->avail_in == 0 && left)
                next = s->mem + s->mem_pos;
            if (left >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
                if (inflateReset(z) != Z_OK)
                    return fail(s, s->lineno + 1, "gzip error");
            } else {
                s->zs_done = 1;
            }
        } else if (r == Z_BUF_ERROR && z->avail_in == 0) {
            continue; /* needs more input: the loop supplies it or reports truncation */
        } else if (r != Z_OK) {
            return fail(s, s->lineno + 1, "corrupt gzip data: %s",
                        z->msg ? z->msg : "inflate failed");
        }
    }
    return (int)(cap - z->avail_out);
}

/* Next line, NUL-terminated, without its "\n" or "\r\n": 1, or 0 at end, -1 on error. */
static int next_line(line_src *s, char **line, size_t *len)
{
    for (;;) {
        char *start = s->buf + s->beg;
        char *nl = memchr(start, '\n', s->end - s->beg);
        if (nl || (s->eof && s->beg < s->end)) {
            char *stop = nl ? nl : s->buf + s->end;
            *stop = '\0';
            s->beg = (size_t)(stop - s->buf) + (nl ? 1 : 0);
            if (stop > start && stop[-1] == '\r')
                *--stop = '\0';
            s->lineno++;
            *line = start;
            *len = (size_t)(stop - start);
            return 1;
        }
        if (s->eof)
            return 0;
        if (s->beg > 0) {
            memmove(s->buf, start, s->end - s->beg);
            s->end -= s->beg;
            s->beg = 0;
        }
        if (s->end == LS_BUF) {
            /* A full buffer without a newline: fine for a comment, which is dropped
             * through its end; too long for anything else. */
            const char *p = s->buf, *stop = s->buf + s->end;
            while (p < stop && (*p == ' ' || *p == '\t'))
                p++;
            if (p == stop || *p != '%' || s->lineno == 0)
                return fail(s, s->lineno + 1, "line longer than %u bytes", LS_BUF);
            s->lineno++;
            for (;;) {
                int n = s->fill(s, s->buf, LS_BUF);
                if (n < 0)
                    return -1;
                s->filled += n;
                if (n == 0) {
                    s->eof = 1;
                    s->beg = s->end = 0;
                    return 0;
                }
                nl = memchr(s->buf, '\n', (size_t)n);
                if (nl) {
                    s->beg = (size_t)(nl - s->buf) + 1;
                    s->end = (size_t)n;
                    break;
                }
            }
            continue;
        }
        int n = s->fill(s, s->buf + s->end, LS_BUF - s->end);
        if (n < 0)
            return -1;
        s->filled += n;
        if (n == 0)
            s->eof = 1;
        s->end += (size_t)n;
    }
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static const char *skip_ws(const char *p)
{
    while (is_ws(*p))
        p++;
    return p;
}

static int is_blank(const char *p) { return *skip_ws(p) == '\0'; }

/* The token at p for messages: at most 24 characters, non-printables as '?'. */
static const char *token(const char *p, char out[32])
{
    size_t i = 0;
    if (!*p)
        return "\\0";
    while (i < 24 && p[i] && !is_ws(p[i])) {
        unsigned char c = (unsigned char)p[i];
        out[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
        i++;
    }
    if (i == 24 && p[i] && !is_ws(p[i]))
        out[i++] = '.', out[i++] = '.', out[i++] = '.';
    out[i] = '\0';
    return out;
}

/* Decimal integer followed by whitespace or end: 0, -1 when not one, -2 on overflow. */
static int parse_i64(const char **pp, int64_t *v)
{
    const char *p = skip_ws(*pp);
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = (*p++ == '-');
    if (*p < '0' || *p > '9')
        return -1;
    uint64_t x = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int over = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (x > (lim - d) / 10)
            over = 1;
        else
            x = x * 10 + d;
    }
    if (*p && !is_ws(*p))
        return -1;
    if (over)
        return -2;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    *pp = p;
    return 0;
}

typedef struct {
    int field;    /* 0 real, 1 integer, 2 pattern */
    int symmetry; /* as tc_mm_matrix */
} mm_kind;

static int parse_banner(line_src *s, const char *line, mm_kind *k)
{
    char tok[5][32];
    int n = 0;
    const char *p = line;
    for (;;) {
        p = skip_ws(p);
        if (!*p)
            break;
        if (n == 5)
            return fail(s, 1, "unexpected '%s' after the banner's four words", token(p, tok[0]));
        size_t len = 0;
        while (p[len] && !is_ws(p[len]))
            len++;
        if (len >= sizeof tok[0])
            len = sizeof tok[0] - 1;
        memcpy(tok[n], p, len);
        tok[n][len] = '\0';
        while (*p && !is_ws(*p))
            p++;
        n++;
    }
    if (n == 0 || strcasecmp(tok[0], "%%MatrixMarket") != 0)
        return fail(s, 1, "missing %%%%MatrixMarket banner");
    if (n < 5)
        return fail(s, 1, "banner needs 'matrix coordinate FIELD SYMMETRY'");
    if (strcasecmp(tok[1], "matrix") != 0)
        return fail(s, 1, "object '%s' not supported (only 'matrix')", tok[1]);
    if (strcasecmp(tok[2], "array") == 0)
        return fail(s, 1, "array (dense) format not supported (only 'coordinate')");
    if (strcasecmp(tok[2], "coordinate") != 0)
        return fail(s, 1, "unknown format '%s' (expected 'coordinate')", tok[2]);
    if (strcasecmp(tok[3], "real") == 0 || strcasecmp(tok[3], "double") == 0)
        k->field = 0;
    else if (strcasecmp(tok[3], "integer") == 0)
        k->field = 1;
    else if (strcasecmp(tok[3], "pattern") == 0)
        k->field = 2;
    else if (strcasecmp(tok[3], "complex") == 0)
        return fail(s, 1, "complex not supported");
    else
        return fail(s, 1, "unknown field '%s' (expected real, integer or pattern)", tok[3]);
    if (strcasecmp(tok[4], "general") == 0)
        k->symmetry = 0;
    else if (strcasecmp(tok[4], "symmetric") == 0)
        k->symmetry = 1;
    else if (strcasecmp(tok[4], "skew-symmetric") == 0)
        k->symmetry = 2;
    else if (strcasecmp(tok[4], "hermitian") == 0)
        return fail(s, 1, "hermitian not supported");
    else
        return fail(s, 1, "unknown symmetry '%s'", tok[4]);
    if (k->field == 2 && k->symmetry == 2)
        return fail(s, 1, "pattern matrices cannot be skew-symmetric");
    return 0;
}

static uint64_t mm_limit_set; /* tc_mm_set_memory_limit's bytes; 0: the machine's */

void tc_mm_set_memory_limit(uint64_t bytes) { mm_limit_set = bytes; }

/* MemAvailable of /proc/meminfo in bytes (what can be allocated without swapping), or 0
 * where it cannot be read. */
static uint64_t mm_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb << 10;
}

uint64_t tc_mm_memory_limit(void)
{
    if (mm_limit_set)
        return mm_limit_set;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t lim = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    const uint64_t avail = mm_mem_available();
    if (avail > 0 && avail < lim)
        lim = avail;
    lim /= 2; /* the rest is for the tool's other copies (device staging, references) */
    static const int which[2] = {RLIMIT_AS, RLIMIT_DATA};
    for (int i = 0; i < 2; i++) {
        struct rlimit rl;
        if (getrlimit(which[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            (uint64_t)rl.rlim_cur < lim)
            lim = (uint64_t)rl.rlim_cur;
    }
    return lim;
}

/* a*b + c, saturating at UINT64_MAX */
static uint64_t mul_add_sat(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t p;
    if (__builtin_mul_overflow(a, b, &p) || __builtin_add_overflow(p, c, &p))
        return UINT64_MAX;
    return p;
}

/* Bytes held at once while a matrix of these sizes is read and converted to CSR: the
 * reader's row, column and value arrays (24 bytes an entry, with the mirrored entries of a
 * symmetric file) and tc_mm_to_csr's rows + 2 offsets of 8 bytes, 4-byte columns and
 * 8-byte values. */
static uint64_t mm_bytes_needed(int64_t rows, int64_t nnz, int symmetric)
{
    const uint64_t entries = (uint64_t)nnz * (symmetric ? 2u : 1u);
    return mul_add_sat(entries, 24 + 12, mul_add_sat((uint64_t)rows + 2, 8, 0));
}

/* Reads the three sizes into sz and checks them against each other and against
 * tc_mm_memory_limit(), so that a header asking for more memory than there is is refused
 * before anything is allocated.  *room gets the entries the input can hold: the declared
 * count, or fewer when the bytes left in a plain input (left >= 0) cannot hold that many; a
 * file that declares more entries than its bytes hold fails where its entries end, with
 * their count. */
static int parse_size(line_src *s, const char *line, const mm_kind *k, int64_t left,
                      int64_t sz[3], int64_t *room)
{
    static const char *what[3] = {"row count", "column count", "entry count"};
    char tb[32];
    const char *p = line;
    for (int i = 0; i < 3; i++) {
        const char *q = skip_ws(p);
        if (!*q)
            return fail(s, s->lineno, "size line needs ROWS COLS ENTRIES");
        int r = parse_i64(&p, &sz[i]);
        if (r == -2)
            return fail(s, s->lineno, "%s '%s' out of range", what[i], token(q, tb));
        if (r < 0)
            return fail(s, s->lineno, "%s '%s' is not an integer", what[i], token(q, tb));
        if (sz[i] < 0)
            return fail(s, s->lineno, "negative %s %lld", what[i], (long long)sz[i]);
    }
    if (!is_blank(p))
        return fail(s, s->lineno, "unexpected '%s' after the size line's three numbers",
                    token(skip_ws(p), tb));
    int64_t rows = sz[0], cols = sz[1], nnz = sz[2];
    if (k->symmetry && rows != cols)
        return fail(s, s->lineno, "%s matrix must be square, is %lld x %lld",
                    k->symmetry == 1 ? "symmetric" : "skew-symmetric", (long long)rows,
                    (long long)cols);
    /* More entries than positions is a broken header (int64 may overflow: then any
     * int64 count fits). */
    int64_t cap = INT64_MAX;
    if (k->symmetry == 0 && (rows == 0 || cols <= INT64_MAX / rows))
        cap = rows * cols;
    else if (k->symmetry && rows < ((int64_t)1 << 31))
        cap = k->symmetry == 1 ? rows * (rows + 1) / 2 : rows * (rows - 1) / 2;
    if (nnz > cap)
        return fail(s, s->lineno, "%lld entries declared but a %s%lld x %lld matrix has %lld "
                    "positions", (long long)nnz, k->symmetry ? "triangle of a " : "",
                    (long long)rows, (long long)cols, (long long)cap);
    /* The shortest entry line is "1 1" (pattern) or "1 1 1", and entries are one a line
     * (the last one may lack its newline).  A gzip input's size says nothing of its text. */
    const int64_t shortest = k->field == 2 ? 4 : 6;
    *room = left >= 0 && nnz > (left + 1) / shortest ? (left + 1) / shortest : nnz;
    const uint64_t need = mm_bytes_needed(rows, *room, k->symmetry != 0),
                   have = tc_mm_memory_limit();
    if (need > have)
        return fail(s, s->lineno, "a %lld x %lld matrix with %lld entries needs %.1f GiB to "
                    "read and convert to CSR, more than the %.1f GiB of memory available",
                    (long long)rows, (long long)cols, (long long)nnz, need / 1073741824.0,
                    have / 1073741824.0);
    return 0;
}

static int grow(tc_mm_matrix *m, int64_t *cap, int64_t need)
{
    if (need <= *cap)
        return 0;
    int64_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    int64_t *r = realloc(m->row, (size_t)c * sizeof *r);
    if (r)
        m->row = r;
    int64_t *cl = r ? realloc(m->col, (size_t)c * sizeof *cl) : NULL;
    if (cl)
        m->col = cl;
    double *v = cl ? realloc(m->val, (size_t)c * sizeof *v) : NULL;
    if (v)
        m->val = v;
    if (!v)
        return -1;
    *cap = c;
    return 0;
}

static int parse_index(line_src *s, const char **p, int64_t lim, const char *what, int64_t *out)
{
    char tb[32];
    const char *q = skip_ws(*p);
    if (!*q)
        return fail(s, s->lineno, "missing %s index", what);
    int r = parse_i64(p, out);
    if (r == -2)
        return fail(s, s->lineno, "%s index '%s' out of range 1..%lld", what, token(q, tb),
                    (long long)lim);
    if (r < 0)
        return fail(s, s->lineno, "%s index '%s' is not an integer", what, token(q, tb));
    if (*out < 1 || *out > lim)
        return fail(s, s->lineno, "%s index %lld out of range 1..%lld", what, (long long)*out,
                    (long long)lim);
    (*out)--;
    return 0;
}

static int parse_value(line_src *s, const char **pp, int field, double *v)
{
    char tb[32];
    const char *p = skip_ws(*pp);
    if (!*p)
        return fail(s, s->lineno, "missing value");
    if (field == 1) {
        int64_t x;
        int r = parse_i64(pp, &x);
        if (r == -2)
            return fail(s, s->lineno, "integer value '%s' out of range", token(p, tb));
        if (r < 0)
            return fail(s, s->lineno, "value '%s' is not an integer", token(p, tb));
        *v = (double)x;
        return 0;
    }
    char *end;
    errno = 0;
    *v = strtod(p, &end);
    if (end == p || (*end && !is_ws(*end)))
        return fail(s, s->lineno, "value '%s' is not a number", token(p, tb));
    if (!isfinite(*v))
        return fail(s, s->lineno, "value '%s' is %s", token(p, tb),
                    errno == ERANGE ? "out of range" : "not finite");
    *pp = end;
    return 0;
}

/* room: the entries the input can hold (parse_size) */
static int parse_entries(line_src *s, const mm_kind *k, const int64_t sz[3], int64_t room,
                         tc_mm_matrix *m)
{
    int64_t declared = sz[2], seen = 0, cap = 0, n = 0;
    int64_t want = room > (1 << 20) ? (1 << 20) : room;
    if (want && grow(m, &cap, k->symmetry ? 2 * want : want))
        return fail(s, s->lineno, "out of memory");
    char *line;
    size_t len;
    int r;
    char tb[32];
    while ((r = next_line(s, &line, &len)) == 1) {
        const char *p = skip_ws(line);
        if (*p == '\0' || *p == '%')
            continue;
        if (seen == declared)
            return fail(s, s->lineno, "more entries than the %lld declared", (long long)declared);
        int64_t i, j;
        double v = 1.0;
        if (parse_index(s, &p, sz[0], "row", &i) || parse_index(s, &p, sz[1], "column", &j))
            return -1;
        if (k->field != 2 && parse_value(s, &p, k->field, &v))
            return -1;
        p = skip_ws(p);
        if (p != line + len)
            return fail(s, s->lineno, "unexpected '%s' after the entry", token(p, tb));
        if (k->symmetry && i < j)
            return fail(s, s->lineno, "entry (%lld, %lld) above the diagonal in a %s file",
                        (long long)i + 1, (long long)j + 1,
                        k->symmetry == 1 ? "symmetric" : "skew-symmetric");
        if (k->symmetry == 2 && i == j)
            return fail(s, s->lineno, "diagonal entry (%lld, %lld) in a skew-symmetric file",
                        (long long)i + 1, (long long)j + 1);
        if (grow(m, &cap, n + 2))
            return fail(s, s->lineno, "out of memory");
        m->row[n] = i, m->col[n] = j, m->val[n] = v, n++;
        if (k->symmetry && i != j) {
            m->row[n] = j, m->col[n] = i, m->val[n] = k->symmetry == 2 ? -v : v, n++;
        }
        seen++;
    }
    if (r < 0)
        return -1;
    if (seen < declared)
        return fail(s, s->lineno, "file ends after %lld of %lld declared entries",
                    (long long)seen, (long long)declared);
    m->nnz = n;
    return 0;
}

static int parse(line_src *s, tc_mm_matrix *m)
{
    char *line;
    size_t len;
    mm_kind k = {0, 0};
    int64_t sz[3], room = 0;
    memset(m, 0, sizeof *m);
    s->buf = malloc(LS_BUF + 1);
    if (!s->buf)
        return fail(s, 0, "out of memory");
    int r = next_line(s, &line, &len);
    if (r < 0)
        return -1;
    if (r == 0)
        return fail(s, 1, "empty input (expected a %%%%MatrixMarket banner)");
    if (strlen(line) != len)
        return fail(s, 1, "NUL byte in the banner");
    if (parse_banner(s, line, &k))
        return -1;
    while ((r = next_line(s, &line, &len)) == 1) {
        const char *p = skip_ws(line);
        if (*p != '\0' && *p != '%')
            break;
    }
    if (r < 0)
        return -1;
    if (r == 0)
        return fail(s, s->lineno, "file ends before the size line");
    if (strlen(line) != len)
        return fail(s, s->lineno, "NUL byte in the size line");
    /* bytes of the input after the size line: delivered ones less those not yet parsed */
    const int64_t left = s->total >= 0 ? s->total - (s->filled - (int64_t)(s->end - s->beg)) : -1;
    if (parse_size(s, line, &k, left, sz, &room) || parse_entries(s, &k, sz, room, m))
        return -1;
    m->rows = sz[0];
    m->cols = sz[1];
    m->is_pattern = k.field == 2;
    m->symmetry = k.symmetry;
    return 0;
}

static int finish(line_src *s, tc_mm_matrix *out, int r)
{
    free(s->buf);
    if (r) {
        tc_mm_free(out);
        return -1;
    }
    if (s->err && s->errlen)
        s->err[0] = '\0';
    return 0;
}

int tc_mm_read(const char *path, tc_mm_matrix *out, char *err, size_t errlen)
{
    line_src s = {.fill = fill_gz, .total = -1, .name = path ? path : "(null)", .err = err,
                  .errlen = errlen};
    memset(out, 0, sizeof *out);
    if (!path)
        return fail(&s, 0, "no file name");
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return fail(&s, 0, "cannot open: %s", strerror(errno));
    s.gz = gzdopen(fd, "rb");
    if (!s.gz) {
        close(fd);
        return fail(&s, 0, "cannot open: out of memory");
    }
    gzbuffer(s.gz, 128u * 1024u);
    /* a plain file's size bounds the entries it can hold (gzdirect: not gzip) */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && gzdirect(s.gz))
        s.total = (int64_t)st.st_size;
    int r = parse(&s, out);
    gzclose(s.gz);
    return finish(&s, out, r);
}

int tc_mm_read_mem(const char *buf, size_t len, const char *name, tc_mm_matrix *out, char *err,
                   size_t errlen)
{
    line_src s = {.fill = fill_mem, .mem = (const unsigned char *)buf, .mem_len = buf ? len : 0,
                  .name = name ? name : "<memory>", .err = err, .errlen = errlen};
    s.total = (int64_t)s.mem_len;
    memset(out, 0, sizeof *out);
    if (s.mem_len >= 2 && s.mem[0] == 0x1f && s.mem[1] == 0x8b) {
        if (inflateInit2(&s.zs, 16 + MAX_WBITS) != Z_OK)
            return fail(&s, 0, "out of memory");
        s.zs_live = 1;
        s.fill = fill_inflate;
        s.total = -1;
    }
    int r = parse(&s, out);
    if (s.zs_live)
        inflateEnd(&s.zs);
    return finish(&s, out, r);
}

void tc_mm_free(tc_mm_matrix *m)
{
    if (!m)
        return;
    free(m->row);
    free(m->col);
    free(m->val);
    memset(m, 0, sizeof *m);
}

typedef struct {
    int32_t c;
    int64_t i; /* position in file order: ties keep it, so duplicates sum in file order */
} col_pos;

static int cmp_col_pos(const void *a, const void *b)
{
    const col_pos *x = a, *y = b;
    if (x->c != y->c)
        return x->c < y->c ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Sorts one row's (column, value) pairs by column, stably. */
static void sort_row(int32_t *c, double *v, int64_t n, col_pos *tmp, double *tv)
{
    int64_t k = 1;
    while (k < n && c[k - 1] <= c[k])
        k++;
    if (k >= n)
        return;
    if (n <= 32) {
        for (int64_t a = 1; a < n; a++) {
            int32_t ca = c[a];
            double va = v[a];
            int64_t b = a;
            for (; b > 0 && c[b - 1] > ca; b--)
                c[b] = c[b - 1], v[b] = v[b - 1];
            c[b] = ca, v[b] = va;
        }
        return;
    }
    for (int64_t a = 0; a < n; a++)
        tmp[a].c = c[a], tmp[a].i = a, tv[a] = v[a];
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_col_pos);
    for (int64_t a = 0; a < n; a++)
        c[a] = tmp[a].c, v[a] = tv[tmp[a].i];
}

int tc_mm_to_csr(const tc_mm_matrix *m, int64_t **row_off, int32_t **col, double **val,
                 int64_t *nnz_out)
{
    int64_t rows = m->rows, n = m->nnz, maxlen = 0;
    int64_t *off = NULL;
    int32_t *c = NULL;
    double *v = NULL, *tv = NULL;
    col_pos *tmp = NULL;
    int ret = -1;
    *row_off = NULL, *col = NULL, *val = NULL, *nnz_out = 0;
    if (rows < 0 || n < 0 || m->cols < 0 || m->cols > INT32_MAX || (size_t)rows > SIZE_MAX / 16)
        return -1;
    /* off[r + 2] counts row r, so that after the placement pass off[r + 1] is row r's end. */
    off = calloc((size_t)rows + 2, sizeof *off);
    c = malloc((size_t)(n ? n : 1) * sizeof *c);
    v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!off || !c || !v)
        goto done;
    for (int64_t k = 0; k < n; k++) {
        if (m->row[k] < 0 || m->row[k] >= rows || m->col[k] < 0 || m->col[k] >= m->cols)
            goto done;
        off[m->row[k] + 2]++;
    }
    for (int64_t r = 0; r < rows; r++) {
        if (off[r + 2] > maxlen)
            maxlen = off[r + 2];
        off[r + 2] += off[r + 1];
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t p = off[m->row[k] + 1]++;
        c[p] = (int32_t)m->col[k];
        v[p] = m->val[k];
    }
    if (maxlen > 32) {
        tmp = malloc((size_t)maxlen * sizeof *tmp);
        tv = malloc((size_t)maxlen * sizeof *tv);
        if (!tmp || !tv)
            goto done;
    }
    int64_t w = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = off[r], e = off[r + 1], start = w;
        sort_row(c + b, v + b, e - b, tmp, tv);
        for (int64_t k = b; k < e; k++) {
            if (w > start && c[w - 1] == c[k]) {
                v[w - 1] += v[k];
            } else {
                c[w] = c[k], v[w] = v[k];
                w++;
            }
        }
        off[r] = start;
    }
    off[rows] = w;
    *row_off = off, *col = c, *val = v, *nnz_out = w;
    off = NULL, c = NULL, v = NULL;
    ret = 0;
done:
    free(off);
    free(c);
    free(v);
    free(tmp);
    free(tv);
    return ret;
}

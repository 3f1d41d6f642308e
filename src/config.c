/* The configuration (config.h): the one place that reads the environment. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "reorder.h"

int64_t tc_parse_bytes(const char *s)
{
    if (s == NULL)
        return -1;
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift != 0 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'b' || end[1] == 'B'))
        end += 2;
    else if (end[0] == 'b' || end[0] == 'B')
        end++;
    if (*end != '\0' || v > (unsigned long long)(INT64_MAX >> shift))
        return -1;
    return (int64_t)(v << shift);
}

/* ---- readers of one variable ----------------------------------------------------------
 * Each returns the value, or dflt when the variable is unset, empty or unreadable (then
 * with one line on stderr: what the value should be, and what happens instead). */

static const char *tc_env(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && e[0] != '\0' ? e : NULL;
}

static void tc_bad(const char *name, const char *value, const char *what, const char *instead)
{
    fprintf(stderr, "tcsparse: %s='%s' is not %s; %s\n", name, value, what, instead);
}

#define TC_DEFAULT "the default is in effect"

/* 1 when e is a whole decimal integer. */
static int tc_parse_long(const char *e, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(e, &end, 10);
    return errno == 0 && end != e && *end == '\0';
}

/* An integer in [lo, hi]. */
static long tc_env_long(const char *name, long lo, long hi, long dflt, const char *what)
{
    const char *e = tc_env(name);
    long v;
    if (e == NULL)
        return dflt;
    if (tc_parse_long(e, &v) && v >= lo && v <= hi)
        return v;
    tc_bad(name, e, what, TC_DEFAULT);
    return dflt;
}

/* 0 or 1. */
static int tc_env_switch(const char *name, int dflt)
{
    return (int)tc_env_long(name, 0, 1, dflt, "0 or 1");
}

/* One of the n values in vals[] (all non-zero); 0 when unset. */
static int tc_env_one_of(const char *name, const int *vals, int n, const char *what)
{
    const char *e = tc_env(name);
    long v;
    if (e == NULL)
        return 0;
    if (tc_parse_long(e, &v))
        for (int i = 0; i < n; i++)
            if (v == vals[i])
                return vals[i];
    tc_bad(name, e, what, TC_DEFAULT);
    return 0;
}

/* A number in [lo, hi) (the whole value). */
static double tc_env_double(const char *name, double lo, double hi, double dflt,
                            const char *what)
{
    const char *e = tc_env(name);
    if (e == NULL)
        return dflt;
    char *end;
    const double v = strtod(e, &end);
    if (end != e && *end == '\0' && isfinite(v) && v >= lo && v < hi)
        return v;
    tc_bad(name, e, what, TC_DEFAULT);
    return dflt;
}

static size_t tc_env_bytes(const char *name, size_t dflt, const char *instead)
{
    const char *e = tc_env(name);
    if (e == NULL)
        return dflt;
    const int64_t v = tc_parse_bytes(e);
    if (v >= 0 && (uint64_t)v < SIZE_MAX)
        return (size_t)v;
    tc_bad(name, e, "a byte count (digits with an optional K, M or G)", instead);
    return dflt;
}

/* ---- the variables ----------------------------------------------------------------------- */

#define TC_MEM_RESERVE_SHARE 0.05 /* the default: 5% of the device's memory */

/* TCSPARSE_MEM_RESERVE: a percentage ("5%", "12.5%") or a byte count ("2G"). */
static void tc_read_mem_reserve(tc_config *c)
{
    c->mem_reserve_share = TC_MEM_RESERVE_SHARE;
    c->mem_reserve_bytes = 0;
    const char *e = tc_env("TCSPARSE_MEM_RESERVE");
    if (e == NULL)
        return;
    const size_t len = strlen(e);
    if (e[len - 1] == '%') {
        char num[64], *end;
        /* decimal digits with at most one point ("5", "12.5", ".5"): no sign, exponent or hex */
        size_t digits = 0, points = 0;
        for (size_t i = 0; i + 1 < len; i++) {
            digits += e[i] >= '0' && e[i] <= '9';
            points += e[i] == '.';
        }
        if (digits > 0 && digits + points == len - 1 && points <= 1 && len - 1 < sizeof num) {
            memcpy(num, e, len - 1);
            num[len - 1] = '\0';
            const double v = strtod(num, &end);
            if (*end == '\0' && isfinite(v) && v >= 0.0 && v <= 100.0) {
                c->mem_reserve_share = v / 100.0;
                return;
            }
        }
    } else {
        const int64_t v = tc_parse_bytes(e);
        if (v >= 0 && (uint64_t)v < SIZE_MAX) {
            c->mem_reserve_share = -1.0;
            c->mem_reserve_bytes = (size_t)v;
            return;
        }
    }
    tc_bad("TCSPARSE_MEM_RESERVE", e,
           "a percentage up to 100% or a byte count (digits with an optional K, M or G)",
           "5% of the device's memory is kept free");
}

static void tc_read_reorder(tc_config *c)
{
    c->reorder.mode = TC_CFG_REORDER_LATE;
    const char *e = tc_env("TCSPARSE_REORDER");
    if (e != NULL) {
        const int k = tc_ordering_parse(e);
        if (strcmp(e, "late") == 0) {
            c->reorder.mode = TC_CFG_REORDER_LATE;
        } else if (strcmp(e, "1") == 0 || strcmp(e, "auto") == 0 || strcmp(e, "on") == 0) {
            c->reorder.mode = TC_CFG_REORDER_AUTO;
        } else if (strcmp(e, "always") == 0) {
            c->reorder.mode = TC_CFG_REORDER_ALWAYS;
        } else if (k > TC_ORD_IDENTITY) {
            c->reorder.mode = TC_CFG_REORDER_ONE;
            c->reorder.ordering = k;
        } else if (strcmp(e, "0") == 0 || strcmp(e, "off") == 0) {
            c->reorder.mode = TC_CFG_REORDER_OFF;
        } else {
            tc_bad("TCSPARSE_REORDER", e, "late, 0, 1, off, auto, always or an ordering name",
                   "late ordering, the default, is in effect");
        }
    }
    /* a comma-separated list of ordering names (not identity) */
    const char *list = tc_env("TCSPARSE_X_REORDER_ORDERINGS");
    int unknown = 0;
    for (const char *s = list; s != NULL; s += strcspn(s, ",") + 1) {
        const size_t len = strcspn(s, ",");
        char name[32];
        int k = -1;
        if (len > 0 && len < sizeof name) {
            memcpy(name, s, len);
            name[len] = '\0';
            k = tc_ordering_parse(name);
        }
        if (k > TC_ORD_IDENTITY)
            c->reorder.orderings |= 1u << k;
        else if (len > 0)
            unknown = 1;
        if (s[len] == '\0')
            break;
    }
    if (unknown)
        tc_bad("TCSPARSE_X_REORDER_ORDERINGS", list, "a comma-separated list of ordering names",
               "its unknown names are ignored");
    c->reorder.threads = (int)tc_env_long("TCSPARSE_X_REORDER_THREADS", 1, INT_MAX, 0,
                                          "a number of threads >= 1");
    const double gain = tc_env_double("TCSPARSE_X_REORDER_MIN_GAIN", 0.0, 100.0, -1.0,
                                      "a percentage in [0, 100)");
    c->reorder.min_gain = gain < 0.0 ? -1.0 : gain / 100.0;
    c->reorder.late_bfs = tc_env_switch("TCSPARSE_X_REORDER_LATE_BFS", TC_CFG_RULE);
}

static void tc_read_user(tc_config *c)
{
    const char *e = tc_env("TCSPARSE_ROUTE");
    c->route = TC_CFG_ROUTE_HANDLE;
    if (e != NULL) {
        if (strcmp(e, "tc") == 0)
            c->route = TC_CFG_ROUTE_TC;
        else if (strcmp(e, "cusparse") == 0)
            c->route = TC_CFG_ROUTE_CUSPARSE;
        else if (strcmp(e, "tc-base") == 0)
            c->route = TC_CFG_ROUTE_TC_BASE;
        else if (strcmp(e, "tc-balanced") == 0)
            c->route = TC_CFG_ROUTE_TC_BALANCED;
        else if (strcmp(e, "cuda-core") == 0)
            c->route = TC_CFG_ROUTE_CUDA_CORE;
        else {
            c->route = TC_CFG_ROUTE_AUTO;
            if (strcmp(e, "auto") != 0)
                tc_bad("TCSPARSE_ROUTE", e,
                       "auto, tc, tc-base, tc-balanced, cuda-core or cusparse",
                       "the automatic route is in effect");
        }
    }
    e = tc_env("TCSPARSE_MATH");
    c->math_tf32 = e != NULL && (strcmp(e, "tf32") == 0 || strcmp(e, "TF32") == 0);
    if (e != NULL && !c->math_tf32)
        tc_bad("TCSPARSE_MATH", e, "tf32", "the default math mode is in effect");
    e = tc_env("TCSPARSE_LOG");
    c->log = e != NULL && strcmp(e, "0") != 0;
    e = tc_env("TCSPARSE_SELECT");
    c->select = TC_CFG_SELECT_EXECUTIONS;
    if (e != NULL) {
        if (strcmp(e, "model") == 0)
            c->select = TC_CFG_SELECT_MODEL;
        else if (strcmp(e, "measure") == 0)
            c->select = TC_CFG_SELECT_MEASURE;
        else
            tc_bad("TCSPARSE_SELECT", e, "model or measure",
                   "candidates are measured on the executions, the default");
    }
    c->cache_bytes = tc_env_bytes("TCSPARSE_CACHE_BYTES", SIZE_MAX, "the plan cache is unlimited");
    tc_read_mem_reserve(c);
    e = tc_env("TCSPARSE_GRB");
    c->grb.on = !(e != NULL && (strcmp(e, "off") == 0 || strcmp(e, "0") == 0));
    tc_read_reorder(c);
}

static void tc_read_knobs(tc_config *c)
{
    const long alg3 = tc_env_long("TCSPARSE_X_CUSPARSE_ALG3", 0, 1, -1, "0 or 1");
    c->cusparse_alg3 = alg3 == 0 ? TC_CFG_ALG3_NEVER : alg3 == 1 ? TC_CFG_ALG3_ALWAYS
                                                                 : TC_CFG_ALG3_MODEL;
    c->explore_factor = tc_env_double("TCSPARSE_X_EXPLORE_FACTOR", 1.0, HUGE_VAL, 0.0,
                                      "a number >= 1");
    c->tune = tc_env_switch("TCSPARSE_X_TUNE", 1);
    c->check_buffer = tc_env_switch("TCSPARSE_X_CHECK_BUFFER", 1);
    c->fault_plan_alloc = tc_env_long("TCSPARSE_X_FAULT_PLAN_ALLOC", 0, LONG_MAX, 0,
                                      "a count >= 0");

    /* unused conversion memory a device's pool keeps between plan builds: about the scratch
     * of a 2M-nonzero matrix (kernels/convert/convert_launch.cu) */
    c->convert.keep = tc_env_bytes("TCSPARSE_X_CONVERT_KEEP", (size_t)64 << 20,
                                   "keeping the default");
    c->convert.sort = tc_env_switch("TCSPARSE_X_CONVERT_SORT", 0);
    c->convert.side = tc_env_switch("TCSPARSE_X_CONVERT_SIDE", 1);
    c->convert.stage = tc_env_switch("TCSPARSE_X_CONVERT_STAGE", 1);
    c->convert.chunk_blocks = (int)tc_env_long("TCSPARSE_X_CHUNK_BLOCKS", 1, INT_MAX, 0,
                                               "a number of blocks >= 1");

    static const int spmm_j[] = {4, 8}, spmm_stages[] = {3, 4, 6, 8};
    c->spmm.j = tc_env_one_of("TCSPARSE_X_SPMM_J", spmm_j, 2, "4 or 8");
    c->spmm.pipe = tc_env_switch("TCSPARSE_X_SPMM_PIPE", TC_CFG_RULE);
    c->spmm.pipe_stages = tc_env_one_of("TCSPARSE_X_SPMM_PIPE_STAGES", spmm_stages, 4,
                                        "3, 4, 6 or 8");
    c->spmm.wide_l1 = tc_env_switch("TCSPARSE_X_SPMM_WIDE_L1", TC_CFG_RULE);

    static const int sddmm_stages[] = {2, 3, 4}, sddmm_ksplit[] = {1, 2, 4};
    c->sddmm.pipe = tc_env_switch("TCSPARSE_X_SDDMM_PIPE", TC_CFG_RULE);
    c->sddmm.pipe_stages = tc_env_one_of("TCSPARSE_X_SDDMM_PIPE_STAGES", sddmm_stages, 3,
                                         "2, 3 or 4");
    c->sddmm.wide_l1 = tc_env_switch("TCSPARSE_X_SDDMM_WIDE_L1", TC_CFG_RULE);
    c->sddmm.ksplit = tc_env_one_of("TCSPARSE_X_SDDMM_KSPLIT", sddmm_ksplit, 3, "1, 2 or 4");
}

static void tc_read_preload(tc_config *c)
{
    c->preload.keep = (int)tc_env_long("TCSPARSE_X_PRELOAD_KEEP", 0, 1024, 8,
                                       "a number of plans in 0..1024");
    c->preload.convert_after = (int)tc_env_long("TCSPARSE_X_PRELOAD_CONVERT_AFTER", 1, 1000000,
                                                2, "an execution count in 1..1000000");
    c->preload.trust_pointers = tc_env_switch("TCSPARSE_X_PRELOAD_TRUST_POINTERS", 0);
    c->preload.measure = tc_env_switch("TCSPARSE_X_PRELOAD_MEASURE", 1);
}

static void tc_read_grb(tc_config *c)
{
    c->grb.min_flops = tc_env_double("TCSPARSE_X_GRB_MIN_FLOPS", -HUGE_VAL, HUGE_VAL, 2097152.0,
                                     "a number");
    const char *e = tc_env("TCSPARSE_X_GRB_BACKEND");
    c->grb.backend = TC_CFG_GRB_GPU;
    if (e != NULL) {
        if (strcmp(e, "host") == 0)
            c->grb.backend = TC_CFG_GRB_HOST;
        else if (strcmp(e, "fail") == 0)
            c->grb.backend = TC_CFG_GRB_FAIL;
        else
            tc_bad("TCSPARSE_X_GRB_BACKEND", e, "host or fail", "the GPU computes, the default");
    }
    c->grb.nounpack = tc_env_switch("TCSPARSE_X_GRB_NOUNPACK", 0);
    c->grb.fresh_c = tc_env_switch("TCSPARSE_X_GRB_FRESH_C", 0);
    c->grb.staging = tc_env_switch("TCSPARSE_X_GRB_STAGING", 1);
    long v;
    e = tc_env("TCSPARSE_X_GRB_STAGE_KB");
    c->grb.stage_kb = 2048;
    if (e != NULL && tc_parse_long(e, &v) && v >= 64 && v <= 16384 && v % 64 == 0)
        c->grb.stage_kb = (int)v;
    else if (e != NULL)
        tc_bad("TCSPARSE_X_GRB_STAGE_KB", e, "a multiple of 64 in 64..16384", TC_DEFAULT);
    c->grb.pipe = tc_env_switch("TCSPARSE_X_GRB_PIPE", TC_CFG_RULE);
    e = tc_env("TCSPARSE_X_GRB_WAVE");
    c->grb.wave = TC_CFG_RULE;
    if (e != NULL && tc_parse_long(e, &v) && (v == 0 || (v >= 2 && v <= 32)))
        c->grb.wave = (int)v;
    else if (e != NULL)
        tc_bad("TCSPARSE_X_GRB_WAVE", e, "0 or 2..32", TC_DEFAULT);
    c->grb.join = tc_env_switch("TCSPARSE_X_GRB_JOIN", 1);
    c->grb.flow = tc_env_switch("TCSPARSE_X_GRB_FLOW", 1);
    c->grb.omp = tc_env_switch("TCSPARSE_X_GRB_OMP", 1);
    c->grb.threads = (int)tc_env_long("TCSPARSE_X_GRB_THREADS", 1, INT_MAX, 0,
                                      "a number of threads >= 1");
}

static void tc_config_read(tc_config *c)
{
    memset(c, 0, sizeof *c);
    tc_read_user(c);
    tc_read_knobs(c);
    tc_read_preload(c);
    tc_read_grb(c);
}

/* ---- once per process, and again on request ---------------------------------------------- */

/* Each reload's values in a node of their own, kept for the process: a pointer a reader took
 * before a reload stays valid. */
typedef struct tc_config_node {
    tc_config c;
    struct tc_config_node *prev;
} tc_config_node;

static tc_config_node tc_cfg_first;
static tc_config_node *tc_cfg_last = &tc_cfg_first;
static _Atomic(const tc_config *) tc_cfg_now;
static pthread_once_t tc_cfg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t tc_cfg_mu = PTHREAD_MUTEX_INITIALIZER;

static void tc_config_first(void)
{
    tc_config_read(&tc_cfg_first.c);
    atomic_store_explicit(&tc_cfg_now, &tc_cfg_first.c, memory_order_release);
}

const tc_config *tc_config_get(void)
{
    const tc_config *c = atomic_load_explicit(&tc_cfg_now, memory_order_acquire);
    if (c != NULL)
        return c;
    pthread_once(&tc_cfg_once, tc_config_first);
    return atomic_load_explicit(&tc_cfg_now, memory_order_acquire);
}

void tc_config_reload(void)
{
    pthread_once(&tc_cfg_once, tc_config_first);
    tc_config_node *n = malloc(sizeof *n);
    if (n == NULL) {
        fprintf(stderr, "tcsparse: out of host memory reading the environment again; the "
                        "previous configuration stays in effect\n");
        return;
    }
    tc_config_read(&n->c);
    pthread_mutex_lock(&tc_cfg_mu);
    n->prev = tc_cfg_last;
    tc_cfg_last = n;
    atomic_store_explicit(&tc_cfg_now, &n->c, memory_order_release);
    pthread_mutex_unlock(&tc_cfg_mu);
}

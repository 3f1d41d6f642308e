/* The configuration module (src/config.h): the defaults, each kind of value (switch, integer,
 * one of a set, number, byte count, name, list), unreadable values falling back to the
 * default with one line on stderr, and tc_config_reload picking up a change.  (tc_parse_bytes
 * is tested in test_misuse.c.) */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "plan.h"
#include "reorder.h"

extern char **environ;

/* Unsets every TCSPARSE_ variable, then reads the configuration again. */
static void clean_environment(void)
{
    for (;;) {
        char **v = environ;
        while (*v != NULL && strncmp(*v, "TCSPARSE_", 9) != 0)
            v++;
        if (*v == NULL)
            break;
        char name[256];
        const size_t len = strcspn(*v, "=");
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), *v);
        unsetenv(name);
    }
    tc_config_reload();
}

static void clean_and_redirect(void)
{
    cr_redirect_stderr();
    clean_environment();
}

Test(config, defaults)
{
    clean_environment();
    const tc_config *c = tc_config_get();
    cr_assert_eq(c->route, TC_CFG_ROUTE_HANDLE);
    cr_assert_eq(c->math_tf32, 0);
    cr_assert_eq(c->log, 0);
    cr_assert_eq(c->select, TC_CFG_SELECT_EXECUTIONS);
    cr_assert_eq(c->cache_bytes, SIZE_MAX);
    cr_assert_eq(c->reorder.mode, TC_CFG_REORDER_LATE);
    cr_assert_eq(c->reorder.orderings, 0u);
    cr_assert_eq(c->reorder.threads, 0);
    cr_assert(c->reorder.min_gain < 0.0);
    cr_assert_eq(c->reorder.late_bfs, TC_CFG_RULE);
    cr_assert_eq(c->cusparse_alg3, TC_CFG_ALG3_MODEL);
    cr_assert_eq(c->explore_factor, 0.0);
    cr_assert_eq(c->tune, 1);
    cr_assert_eq(c->check_buffer, 1);
    cr_assert_eq(c->fault_plan_alloc, 0);
    cr_assert_eq(c->convert.keep, (size_t)64 << 20);
    cr_assert_eq(c->convert.sort, 0);
    cr_assert_eq(c->convert.side, 1);
    cr_assert_eq(c->convert.stage, 1);
    cr_assert_eq(c->convert.chunk_blocks, 0);
    cr_assert_eq(c->spmm.j, 0);
    cr_assert_eq(c->spmm.pipe, TC_CFG_RULE);
    cr_assert_eq(c->spmm.pipe_stages, 0);
    cr_assert_eq(c->spmm.wide_l1, TC_CFG_RULE);
    cr_assert_eq(c->sddmm.pipe, TC_CFG_RULE);
    cr_assert_eq(c->sddmm.pipe_stages, 0);
    cr_assert_eq(c->sddmm.wide_l1, TC_CFG_RULE);
    cr_assert_eq(c->sddmm.ksplit, 0);
    cr_assert_eq(c->preload.keep, 8);
    cr_assert_eq(c->preload.convert_after, 2);
    cr_assert_eq(c->preload.trust_pointers, 0);
    cr_assert_eq(c->grb.on, 1);
    cr_assert_eq(c->grb.min_flops, 2097152.0);
    cr_assert_eq(c->grb.backend, TC_CFG_GRB_GPU);
    cr_assert_eq(c->grb.nounpack, 0);
    cr_assert_eq(c->grb.fresh_c, 0);
    cr_assert_eq(c->grb.staging, 1);
    cr_assert_eq(c->grb.stage_kb, 2048);
    cr_assert_eq(c->grb.pipe, TC_CFG_RULE);
    cr_assert_eq(c->grb.wave, TC_CFG_RULE);
    cr_assert_eq(c->grb.join, 1);
    cr_assert_eq(c->grb.flow, 1);
    cr_assert_eq(c->grb.omp, 1);
    cr_assert_eq(c->grb.threads, 0);
    /* no reload: the same values */
    cr_assert_eq(tc_config_get(), c);
}

Test(config, each_kind_of_value)
{
    clean_environment();
    setenv("TCSPARSE_ROUTE", "tc-balanced", 1);       /* a name */
    setenv("TCSPARSE_MATH", "TF32", 1);
    setenv("TCSPARSE_LOG", "yes", 1);                 /* set, and not 0 */
    setenv("TCSPARSE_SELECT", "measure", 1);
    setenv("TCSPARSE_CACHE_BYTES", "64M", 1);         /* a byte count */
    setenv("TCSPARSE_MEM_RESERVE", "12.5%", 1);       /* a percentage */
    setenv("TCSPARSE_REORDER", "degree", 1);          /* an ordering's name */
    setenv("TCSPARSE_X_REORDER_ORDERINGS", "cluster,bfs", 1); /* a list */
    setenv("TCSPARSE_X_REORDER_MIN_GAIN", "5", 1);    /* a number: a percentage */
    setenv("TCSPARSE_X_REORDER_LATE_BFS", "0", 1);    /* a switch */
    setenv("TCSPARSE_X_CUSPARSE_ALG3", "1", 1);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    setenv("TCSPARSE_X_TUNE", "0", 1);
    setenv("TCSPARSE_X_FAULT_PLAN_ALLOC", "3", 1);    /* an integer */
    setenv("TCSPARSE_X_CONVERT_KEEP", "1KiB", 1);
    setenv("TCSPARSE_X_CHUNK_BLOCKS", "12", 1);
    setenv("TCSPARSE_X_SPMM_PIPE_STAGES", "6", 1);    /* one of a set */
    setenv("TCSPARSE_X_SDDMM_PIPE", "1", 1);
    setenv("TCSPARSE_X_PRELOAD_KEEP", "0", 1);
    setenv("TCSPARSE_GRB", "off", 1);
    setenv("TCSPARSE_X_GRB_BACKEND", "fail", 1);
    setenv("TCSPARSE_X_GRB_STAGE_KB", "128", 1);
    setenv("TCSPARSE_X_GRB_WAVE", "0", 1);
    setenv("TCSPARSE_X_GRB_MIN_FLOPS", "0", 1);
    tc_config_reload();
    const tc_config *c = tc_config_get();
    cr_assert_eq(c->route, TC_CFG_ROUTE_TC_BALANCED);
    cr_assert_eq(c->math_tf32, 1);
    cr_assert_eq(c->log, 1);
    cr_assert_eq(c->select, TC_CFG_SELECT_MEASURE);
    cr_assert_eq(c->cache_bytes, (size_t)64 << 20);
    cr_assert_float_eq(c->mem_reserve_share, 0.125, 1e-12);
    cr_assert_eq(c->reorder.mode, TC_CFG_REORDER_ONE);
    cr_assert_eq(c->reorder.ordering, TC_ORD_DEGREE);
    cr_assert_eq(c->reorder.orderings, (1u << TC_ORD_CLUSTER) | (1u << TC_ORD_BFS));
    cr_assert_float_eq(c->reorder.min_gain, 0.05, 1e-12);
    cr_assert_eq(c->reorder.late_bfs, 0);
    cr_assert_eq(c->cusparse_alg3, TC_CFG_ALG3_ALWAYS);
    cr_assert_eq(c->explore_factor, 1e9);
    cr_assert_eq(c->tune, 0);
    cr_assert_eq(c->fault_plan_alloc, 3);
    cr_assert_eq(c->convert.keep, (size_t)1024);
    cr_assert_eq(c->convert.chunk_blocks, 12);
    cr_assert_eq(c->spmm.pipe_stages, 6);
    cr_assert_eq(c->sddmm.pipe, 1);
    cr_assert_eq(c->preload.keep, 0);
    cr_assert_eq(c->grb.on, 0);
    cr_assert_eq(c->grb.backend, TC_CFG_GRB_FAIL);
    cr_assert_eq(c->grb.stage_kb, 128);
    cr_assert_eq(c->grb.wave, 0);
    cr_assert_eq(c->grb.min_flops, 0.0);
    clean_environment();
}

/* Empty is unset; the user-facing switches keep their lenient readings. */
Test(config, empty_is_unset)
{
    clean_environment();
    setenv("TCSPARSE_LOG", "", 1);
    setenv("TCSPARSE_ROUTE", "", 1);
    setenv("TCSPARSE_X_SPMM_PIPE", "", 1);
    setenv("TCSPARSE_X_CONVERT_KEEP", "", 1);
    tc_config_reload();
    const tc_config *c = tc_config_get();
    cr_assert_eq(c->log, 0);
    cr_assert_eq(c->route, TC_CFG_ROUTE_HANDLE);
    cr_assert_eq(c->spmm.pipe, TC_CFG_RULE);
    cr_assert_eq(c->convert.keep, (size_t)64 << 20);
    setenv("TCSPARSE_LOG", "0", 1);
    setenv("TCSPARSE_ROUTE", "auto", 1);
    tc_config_reload();
    c = tc_config_get();
    cr_assert_eq(c->log, 0);
    cr_assert_eq(c->route, TC_CFG_ROUTE_AUTO);
    clean_environment();
}

/* An unreadable value: the default, and one line saying so. */
Test(config, unreadable_values_keep_the_default, .init = clean_and_redirect)
{
    setenv("TCSPARSE_CACHE_BYTES", "lots", 1);
    setenv("TCSPARSE_X_SPMM_PIPE_STAGES", "5", 1);
    setenv("TCSPARSE_X_GRB_STAGE_KB", "100", 1);
    tc_config_reload();
    const tc_config *c = tc_config_get();
    cr_assert_eq(c->cache_bytes, SIZE_MAX);
    cr_assert_eq(c->spmm.pipe_stages, 0);
    cr_assert_eq(c->grb.stage_kb, 2048);
    clean_environment();
    fflush(stderr);
    cr_expect_stderr_eq_str(
        "tcsparse: TCSPARSE_CACHE_BYTES='lots' is not a byte count (digits with an optional K, "
        "M or G); the plan cache is unlimited\n"
        "tcsparse: TCSPARSE_X_SPMM_PIPE_STAGES='5' is not 3, 4, 6 or 8; the default is in "
        "effect\n"
        "tcsparse: TCSPARSE_X_GRB_STAGE_KB='100' is not a multiple of 64 in 64..16384; the "
        "default is in effect\n");
}

Test(config, unreadable_values_of_each_kind, .init = clean_and_redirect)
{
    setenv("TCSPARSE_ROUTE", "fast", 1);            /* the automatic route, as before */
    setenv("TCSPARSE_SELECT", "maybe", 1);
    setenv("TCSPARSE_REORDER", "sideways", 1);
    setenv("TCSPARSE_X_REORDER_ORDERINGS", "degree,nope", 1); /* the known names stay */
    setenv("TCSPARSE_X_REORDER_MIN_GAIN", "100", 1);
    setenv("TCSPARSE_X_TUNE", "2", 1);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "0.5", 1);
    setenv("TCSPARSE_X_FAULT_PLAN_ALLOC", "-1", 1);
    setenv("TCSPARSE_X_CONVERT_KEEP", "12Q", 1);
    setenv("TCSPARSE_X_SPMM_J", "16", 1);
    setenv("TCSPARSE_X_PRELOAD_KEEP", "2000", 1);
    setenv("TCSPARSE_X_PRELOAD_CONVERT_AFTER", "0", 1);
    setenv("TCSPARSE_X_GRB_WAVE", "1", 1);
    setenv("TCSPARSE_X_GRB_MIN_FLOPS", "many", 1);
    setenv("TCSPARSE_X_GRB_THREADS", "0", 1);
    tc_config_reload();
    const tc_config *c = tc_config_get();
    cr_assert_eq(c->route, TC_CFG_ROUTE_AUTO);
    cr_assert_eq(c->select, TC_CFG_SELECT_EXECUTIONS);
    cr_assert_eq(c->reorder.mode, TC_CFG_REORDER_LATE);
    cr_assert_eq(c->reorder.orderings, 1u << TC_ORD_DEGREE);
    cr_assert(c->reorder.min_gain < 0.0);
    cr_assert_eq(c->tune, 1);
    cr_assert_eq(c->explore_factor, 0.0);
    cr_assert_eq(c->fault_plan_alloc, 0);
    cr_assert_eq(c->convert.keep, (size_t)64 << 20);
    cr_assert_eq(c->spmm.j, 0);
    cr_assert_eq(c->preload.keep, 8);
    cr_assert_eq(c->preload.convert_after, 2);
    cr_assert_eq(c->grb.wave, TC_CFG_RULE);
    cr_assert_eq(c->grb.min_flops, 2097152.0);
    cr_assert_eq(c->grb.threads, 0);
    clean_environment();
    fflush(stderr);
    /* one line for each unreadable value */
    FILE *f = cr_get_redirected_stderr();
    char line[512];
    int lines = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        cr_expect(strncmp(line, "tcsparse: TCSPARSE_", 19) == 0, "%s", line);
        lines++;
    }
    cr_expect_eq(lines, 15);
}

Test(config, reload_picks_up_a_change)
{
    clean_environment();
    const tc_config *before = tc_config_get();
    cr_assert_eq(before->spmm.pipe, TC_CFG_RULE);
    setenv("TCSPARSE_X_SPMM_PIPE", "0", 1);
    cr_assert_eq(tc_config_get()->spmm.pipe, TC_CFG_RULE, "read before the reload");
    tc_config_reload();
    const tc_config *after = tc_config_get();
    cr_assert_eq(after->spmm.pipe, 0);
    cr_assert_eq(before->spmm.pipe, TC_CFG_RULE, "a pointer taken before keeps its values");
    unsetenv("TCSPARSE_X_SPMM_PIPE");
    tc_config_reload();
    cr_assert_eq(tc_config_get()->spmm.pipe, TC_CFG_RULE);
}

/* TCSPARSE_MEM_RESERVE: 5% of the device by default, a percentage or a byte count; and the
 * room a plan build asks for (plan.c). */
Test(config, mem_reserve, .init = clean_and_redirect)
{
    const size_t total = (size_t)80 << 30;
    const tc_config *c = tc_config_get();
    cr_assert_eq(tc_mem_reserve(c, total), (size_t)4 << 30);
    setenv("TCSPARSE_MEM_RESERVE", "2G", 1);
    tc_config_reload();
    c = tc_config_get();
    cr_assert_eq(tc_mem_reserve(c, total), (size_t)2 << 30);
    setenv("TCSPARSE_MEM_RESERVE", "0", 1);
    tc_config_reload();
    cr_assert_eq(tc_mem_reserve(tc_config_get(), total), 0);
    setenv("TCSPARSE_MEM_RESERVE", "100%", 1);
    tc_config_reload();
    cr_assert_eq(tc_mem_reserve(tc_config_get(), total), total);
    setenv("TCSPARSE_MEM_RESERVE", ".5%", 1);
    tc_config_reload();
    cr_assert_eq(tc_mem_reserve(tc_config_get(), total), total / 200);
    const char *bad[] = {"101%", "%", "-1%", "x%", "5%%", "lots", "0x10%", "1e1%", "1.2.3%", ".%"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("TCSPARSE_MEM_RESERVE", bad[i], 1);
        tc_config_reload();
        cr_assert_eq(tc_mem_reserve(tc_config_get(), total), (size_t)4 << 30, "%s", bad[i]);
    }
    clean_environment();
    /* free 10 GiB, 4 GiB kept: 6 GiB of plan fit, one byte more does not */
    const size_t g = (size_t)1 << 30;
    cr_assert(tc_plan_room(10 * g, 6 * g, 4 * g));
    cr_assert_not(tc_plan_room(10 * g, 6 * g + 1, 4 * g));
    cr_assert_not(tc_plan_room(3 * g, 0, 4 * g)); /* already under the reserve */
    cr_assert_not(tc_plan_room(g, 2 * g, 0));     /* more than is free */
    cr_assert(tc_plan_room(g, g, 0));
    fflush(stderr);
    cr_expect_stderr_eq_str(
        "tcsparse: TCSPARSE_MEM_RESERVE='101%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='-1%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='x%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='5%%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='lots' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='0x10%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='1e1%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='1.2.3%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n"
        "tcsparse: TCSPARSE_MEM_RESERVE='.%' is not a percentage up to 100% or a byte count "
        "(digits with an optional K, M or G); 5% of the device's memory is kept free\n");
}

/* The plan's allocation as the GPU conversion lays it out (the size a plan build checks
 * against TCSPARSE_MEM_RESERVE first), by hand for 32 x 100 with 40 nonzeros: 2 windows,
 * blocks <= (40 + 7 * 2) / 8 = 6, 2 + 6 / 16 + 1 = 3 chunk slots, parts 16-byte aligned. */
Test(plan, layout_of_a_small_matrix)
{
    tc_plan_layout l = tc_plan_layout_of(32, 100, 40, 0, 0);
    cr_assert_eq(l.windows, 2);
    cr_assert_eq(l.blocks_bound, 6);
    cr_assert_eq(l.slots, 3);
    cr_assert_eq(l.blk_off, 16);  /* win_off: 3 ints */
    cr_assert_eq(l.blk_col, 48);  /* blk_off: 7 ints */
    cr_assert_eq(l.val_idx, 240); /* blk_col: 6 blocks of 8 ints */
    cr_assert_eq(l.blk_pos, 400); /* val_idx: 40 ints */
    cr_assert_eq(l.chunks, 448);  /* blk_pos: 40 bytes */
    cr_assert_eq(l.split, 496);   /* chunks: 3 of 16 bytes */
    cr_assert_eq(l.bytes, 505);   /* split: 2 ints, and a byte */
    l = tc_plan_layout_of(32, 100, 40, 0, 1);
    cr_assert_eq(l.win_row, 512);
    cr_assert_eq(l.bytes, 640); /* 16 rows a window */
    /* few columns bound the blocks: 2 windows x 1 block; chunks of 1 block */
    l = tc_plan_layout_of(32, 5, 40, 1, 0);
    cr_assert_eq(l.blocks_bound, 2);
    cr_assert_eq(l.slots, 5);
}

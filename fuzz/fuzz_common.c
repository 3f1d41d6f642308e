/* What the harnesses share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "fuzz.h"

void tc_fuzz_fail(const char *harness, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tcsparse fuzz: %s: ", harness);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* Host conversions between float and the 16-bit formats (IEEE half, bfloat16), round to
 * nearest even, for C code that cannot use cuda_fp16.h's C++ types (tools and tests). */
#ifndef TC_HALFCONV_H
#define TC_HALFCONV_H

#include <stdint.h>
#include <string.h>

static inline uint16_t tc_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float tc_bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t tc_f2h(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (absu >= 0x477ff000u) /* rounds to >= 65520: overflow to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) { /* subnormal half (or zero): scale by 2^24 and round */
        float a;
        memcpy(&a, &absu, 4);
        float s = a * 16777216.0f; /* exact */
        uint32_t m = (uint32_t)s;
        float rem = s - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
            m++;
        return (uint16_t)(sign | m);
    }
    uint32_t e = (absu >> 23) - 127 + 15, mant = absu & 0x7fffffu;
    uint32_t h = (e << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

static inline float tc_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0) {
        float f = (float)m / 16777216.0f;
        return sign ? -f : f;
    }
    if (e == 31)
        u = sign | 0x7f800000u | (m << 13);
    else
        u = sign | ((e - 15 + 127) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif

/* common.c: the thread-local error buffer and scalar half-precision conversions. */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char gb_errbuf[512];

int gb_error(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gb_errbuf, sizeof gb_errbuf, fmt, ap);
    va_end(ap);
    return status;
}

const char *gb_last_error(void) { return gb_errbuf[0] ? gb_errbuf : "unknown error in glmbench C core"; }

/* IEEE binary16 <-> binary32, portable (the vector paths use F16C where compiled for it). */
float gb_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { e++; man <<= 1; } while ((man & 0x400u) == 0);
            man &= 0x3ffu;
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t gb_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);          /* NaN */
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);         /* overflow -> inf */
    if (absx < 0x38800000u) {                                           /* subnormal or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t half = m >> (shift - 1 + 0);
        /* round to nearest even */
        uint32_t r = (half >> 1) + ((half & 1u) && ((m & ((1u << (shift - 1)) - 1)) || ((half >> 1) & 1u)));
        return (uint16_t)(sign | r);
    }
    uint32_t r = absx + 0xc8000fffu + ((absx >> 13) & 1u); /* rebias exponent, round to even */
    return (uint16_t)(sign | (r >> 13));
}

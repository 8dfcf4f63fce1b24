/* common.c: the thread-local error buffer, the workspace ledger and scalar half-precision
 * conversions. */
#include "common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- workspace ledger ------------------------------------------------------------------------
 * Block layout: [padding][ws_header][the caller's bytes]. The header sits right before the
 * returned pointer; its size is a multiple of alignof(max_align_t), so a malloc block keeps
 * malloc's alignment, and an aligned block puts the header at the end of `align` bytes of padding
 * (the padding is a multiple of `align`). `offset` leads back to the start for free(), which
 * releases aligned_alloc blocks too. */
typedef struct {
    _Alignas(max_align_t) size_t bytes; /* requested by the caller: what the counters hold */
    size_t offset;                      /* returned pointer - start of the underlying block */
} ws_header;

#define WS_HDR sizeof(ws_header)

static atomic_size_t ws_current, ws_peak, ws_blocks;

static void *ws_track(void *base, size_t offset, size_t bytes) {
    if (!base) return NULL;
    char *p = (char *)base + offset;
    ws_header *h = (ws_header *)p - 1;
    h->bytes = bytes;
    h->offset = offset;
    atomic_fetch_add_explicit(&ws_blocks, 1, memory_order_relaxed);
    size_t cur = atomic_fetch_add_explicit(&ws_current, bytes, memory_order_relaxed) + bytes;
    size_t peak = atomic_load_explicit(&ws_peak, memory_order_relaxed);
    /* atomic max: a failed exchange reloads `peak`; stop once it is at least ours */
    while (cur > peak && !atomic_compare_exchange_weak_explicit(&ws_peak, &peak, cur, memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    return p;
}

void *gb_ws_malloc(size_t bytes) {
    if (bytes > SIZE_MAX - WS_HDR) return NULL;
    return ws_track(malloc(WS_HDR + bytes), WS_HDR, bytes);
}

void *gb_ws_calloc(size_t n, size_t size) {
    if (size && n > (SIZE_MAX - WS_HDR) / size) return NULL;
    return ws_track(calloc(1, WS_HDR + n * size), WS_HDR, n * size);
}

void *gb_ws_aligned_alloc(size_t align, size_t bytes) {
    if (align == 0 || (align & (align - 1))) return NULL; /* not a power of two */
    if (align <= _Alignof(max_align_t)) return gb_ws_malloc(bytes);
    const size_t pad = (WS_HDR + align - 1) & ~(align - 1);
    if (bytes > SIZE_MAX - pad - align) return NULL;
    const size_t total = (pad + bytes + align - 1) & ~(align - 1); /* C11: a multiple of align */
    return ws_track(aligned_alloc(align, total), pad, bytes);
}

void gb_ws_free(void *p) {
    if (!p) return;
    ws_header *h = (ws_header *)p - 1;
    const size_t bytes = h->bytes, offset = h->offset;
    atomic_fetch_sub_explicit(&ws_current, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&ws_blocks, 1, memory_order_relaxed);
    free((char *)p - offset);
}

size_t gb_ws_current(void) { return atomic_load_explicit(&ws_current, memory_order_relaxed); }
size_t gb_ws_peak(void) { return atomic_load_explicit(&ws_peak, memory_order_relaxed); }
size_t gb_ws_blocks(void) { return atomic_load_explicit(&ws_blocks, memory_order_relaxed); }
void gb_ws_reset_peak(void) { atomic_store_explicit(&ws_peak, gb_ws_current(), memory_order_relaxed); }

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

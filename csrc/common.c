/* common.c: the thread-local error buffer, the workspace ledger and scalar half-precision
 * conversions. */
#include "common.h"

#include <pthread.h>
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
 * Block layout: [padding][ws_header][the caller's bytes], all from one malloc block. The header
 * sits right before the returned pointer; its size is a multiple of alignof(max_align_t), so a
 * block without padding keeps malloc's alignment, and an aligned block (gb_ws_aligned_alloc) is
 * allocated `align` bytes larger and pads up to the first multiple of `align` that leaves room for
 * the header. `offset` leads back to the start for free() and for the kept-block list, which takes
 * both kinds. */
typedef struct {
    _Alignas(max_align_t) size_t bytes; /* requested by the caller: what the counters hold */
    size_t offset;                      /* returned pointer - start of the underlying block */
    size_t cap;                         /* bytes usable after a header at the block's start */
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

/* ---- kept blocks --------------------------------------------------------------------------
 * Large scratch blocks (>= WS_KEEP_MIN) are kept after gb_ws_free, up to WS_KEEP_N blocks and
 * WS_KEEP_BYTES in all, and handed to the next request they fit (at most twice its size): a
 * prefill's per-call buffers (attention's row states, 5-25 MB at T=512) came back from malloc as
 * fresh mmap'd pages, which the kernel zeroed on first touch (clear_page_erms under memset: a third
 * of the samples of a GLM-4.7-Flash pp512 at depth 0 on the shared machine). Kept blocks are not
 * workspace: gb_ws_current counts live blocks only; gb_ws_kept() says what is kept, gb_ws_trim()
 * gives it back. */
#define WS_KEEP_MIN ((size_t)1 << 20)
#define WS_KEEP_N 16
#define WS_KEEP_BYTES ((size_t)256 << 20)
static pthread_mutex_t ws_keep_lock = PTHREAD_MUTEX_INITIALIZER;
static void *ws_keep[WS_KEEP_N]; /* underlying blocks (header at the start), NULL = empty slot */
static size_t ws_keep_cap[WS_KEEP_N], ws_keep_total;

/* the smallest kept block with cap in [bytes, 2 bytes], taken out of the list; NULL if none */
static void *ws_take(size_t bytes, size_t *cap) {
    if (bytes < WS_KEEP_MIN) return NULL;
    void *got = NULL;
    pthread_mutex_lock(&ws_keep_lock);
    int best = -1;
    for (int i = 0; i < WS_KEEP_N; i++)
        if (ws_keep[i] && ws_keep_cap[i] >= bytes && ws_keep_cap[i] / 2 <= bytes &&
            (best < 0 || ws_keep_cap[i] < ws_keep_cap[best]))
            best = i;
    if (best >= 0) {
        got = ws_keep[best];
        *cap = ws_keep_cap[best];
        ws_keep[best] = NULL;
        ws_keep_total -= ws_keep_cap[best];
    }
    pthread_mutex_unlock(&ws_keep_lock);
    return got;
}

/* keep the block (1) or not (0: the caller frees it); room is made by dropping the largest kept */
static int ws_put(void *base, size_t cap) {
    if (cap < WS_KEEP_MIN || cap > WS_KEEP_BYTES) return 0;
    int kept = 0;
    pthread_mutex_lock(&ws_keep_lock);
    while (ws_keep_total + cap > WS_KEEP_BYTES) {
        int big = -1;
        for (int i = 0; i < WS_KEEP_N; i++)
            if (ws_keep[i] && (big < 0 || ws_keep_cap[i] > ws_keep_cap[big])) big = i;
        free(ws_keep[big]);
        ws_keep_total -= ws_keep_cap[big];
        ws_keep[big] = NULL;
    }
    for (int i = 0; i < WS_KEEP_N && !kept; i++)
        if (!ws_keep[i]) {
            ws_keep[i] = base;
            ws_keep_cap[i] = cap;
            ws_keep_total += cap;
            kept = 1;
        }
    pthread_mutex_unlock(&ws_keep_lock);
    return kept;
}

size_t gb_ws_kept(void) {
    pthread_mutex_lock(&ws_keep_lock);
    size_t t = ws_keep_total;
    pthread_mutex_unlock(&ws_keep_lock);
    return t;
}

void gb_ws_trim(void) {
    pthread_mutex_lock(&ws_keep_lock);
    for (int i = 0; i < WS_KEEP_N; i++) {
        free(ws_keep[i]);
        ws_keep[i] = NULL;
    }
    ws_keep_total = 0;
    pthread_mutex_unlock(&ws_keep_lock);
}

static void *ws_block(size_t bytes, int zero) {
    size_t cap = 0;
    void *base = ws_take(bytes, &cap);
    if (base) {
        if (zero) memset((char *)base + WS_HDR, 0, bytes);
    } else {
        base = zero ? calloc(1, WS_HDR + bytes) : malloc(WS_HDR + bytes);
        cap = bytes;
    }
    char *p = ws_track(base, WS_HDR, bytes);
    if (p) ((ws_header *)p - 1)->cap = cap;
    return p;
}

void *gb_ws_malloc(size_t bytes) {
    if (bytes > SIZE_MAX - WS_HDR) return NULL;
    return ws_block(bytes, 0);
}

void *gb_ws_calloc(size_t n, size_t size) {
    if (size && n > (SIZE_MAX - WS_HDR) / size) return NULL;
    return ws_block(n * size, 1);
}

void *gb_ws_aligned_alloc(size_t align, size_t bytes) {
    if (align == 0 || (align & (align - 1))) return NULL; /* not a power of two */
    if (align <= _Alignof(max_align_t)) return gb_ws_malloc(bytes);
    if (bytes > SIZE_MAX - WS_HDR - align) return NULL;
    /* a malloc block (kept or fresh) with align bytes of slack, the pointer moved up to the next
     * multiple of align: [pad][header][bytes] as ws_block's, so gb_ws_free keeps it as one of them.
     * (aligned_alloc blocks were freed each call: megabyte ones freed every call raised glibc's mmap
     * threshold, and later calls' buffers then grew the heap: RSS +270 KB over 300 calls) */
    const size_t need = bytes + align;
    size_t cap = 0;
    void *base = ws_take(need, &cap);
    if (!base) {
        base = malloc(WS_HDR + need);
        cap = need;
    }
    if (!base) return NULL;
    const uintptr_t at = ((uintptr_t)base + WS_HDR + align - 1) & ~(uintptr_t)(align - 1);
    char *p = ws_track(base, (size_t)(at - (uintptr_t)base), bytes);
    ((ws_header *)p - 1)->cap = cap;
    return p;
}

void gb_ws_free(void *p) {
    if (!p) return;
    ws_header *h = (ws_header *)p - 1;
    const size_t bytes = h->bytes, offset = h->offset, cap = h->cap;
    atomic_fetch_sub_explicit(&ws_current, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&ws_blocks, 1, memory_order_relaxed);
    if (cap && ws_put((char *)p - offset, cap)) return;
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

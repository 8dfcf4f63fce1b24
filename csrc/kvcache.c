/* kvcache.c: the paged KV cache (layout in kvcache.h). Blocks come from the system on first use
 * and are recycled through the cache's pool; every byte is returned in gb_kvcache_destroy. */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np (glibc): writer-preferring lock */
#include "kvcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "quant.h"

/* 64-byte alignment: a block starts on a cache line, so whole-line loads never straddle two. */
#define GB_KV_ALIGN 64
/* Most bytes of block tables (table + pool: 16 bytes per block and layer) a cache may take. */
#define GB_KV_MAX_TABLE_BYTES (INT64_C(1) << 30)

static const char *fmt_name(int fmt) {
    switch (fmt) {
    case GB_F32: return "f32";
    case GB_F16: return "f16";
    case GB_BF16: return "bf16";
    case GB_Q8_0: return "q8_0";
    case GB_Q4_0: return "q4_0";
    default: return "?";
    }
}

int gb_kvcache_create(gb_kvcache **out, int kind, int fmt, int64_t n_layers, int64_t capacity, int64_t n_heads,
                      int64_t dk, int64_t dv, int64_t block_size) {
    *out = NULL;
    const char *kn = kind == GB_KV_MLA ? "kv_lora_rank" : "head_dim";
    const char *vn = kind == GB_KV_MLA ? "rope_dim" : "v_head_dim";
    if (kind != GB_KV_GQA && kind != GB_KV_MLA) return gb_error(GB_EVALUE, "unknown cache kind %d", kind);
    if (n_layers < 1) return gb_error(GB_EVALUE, "`n_layers` must be >= 1, got %ld", (long)n_layers);
    if (capacity < 1) return gb_error(GB_EVALUE, "`capacity_tokens` must be >= 1, got %ld", (long)capacity);
    if (n_heads < 1) return gb_error(GB_EVALUE, "`n_kv_heads` must be >= 1, got %ld", (long)n_heads);
    if (dk < 1) return gb_error(GB_EVALUE, "`%s` must be >= 1, got %ld", kn, (long)dk);
    if (dv < 1) return gb_error(GB_EVALUE, "`%s` must be >= 1, got %ld", vn, (long)dv);
    if (block_size < 1) return gb_error(GB_EVALUE, "`block_size` must be >= 1, got %ld", (long)block_size);
    /* A block never holds more tokens than the cache can: a block_size past the capacity is cut to it (its
     * one block was allocated whole, e.g. 8 GiB for a 10-token cache of block_size 2^20). */
    if (block_size > capacity) block_size = capacity;
    int64_t kb = gb_row_bytes(fmt, dk), vb = gb_row_bytes(fmt, dv);
    if ((kb < 0 || vb < 0) && gb_is_float_fmt(fmt)) /* float rows: only a size past 64 bits has none */
        return gb_error(GB_EVALUE, "`%s`=%ld: a row of that many values is too large to count in 64 bits", kb < 0 ? kn : vn,
                        (long)(kb < 0 ? dk : dv));
    if (kb < 0)
        return gb_error(GB_EVALUE, "`kv`=%s stores rows in blocks of 32; `%s`=%ld is not a multiple of 32",
                        fmt_name(fmt), kn, (long)dk);
    if (vb < 0)
        return gb_error(GB_EVALUE, "`kv`=%s stores rows in blocks of 32; `%s`=%ld is not a multiple of 32",
                        fmt_name(fmt), vn, (long)dv);
    /* The block table and the pool hold one pointer each per block of every layer: bounded, so a
     * capacity no model has is an error at once, not gigabytes of zeroed tables (found by
     * bench/fuzz) or an n_layers x blocks product that overflows. */
    const int64_t blocks = capacity / block_size + (capacity % block_size != 0);
    if (blocks > GB_KV_MAX_TABLE_BYTES / 16 / n_layers)
        return gb_error(GB_EVALUE,
                        "KV cache: %ld layers x %ld blocks (capacity_tokens=%ld / block_size=%ld) need %.3g GiB of "
                        "block tables, more than the %d GiB allowed: a smaller capacity_tokens or a larger block_size",
                        (long)n_layers, (long)blocks, (long)capacity, (long)block_size,
                        16.0 * (double)n_layers * (double)blocks / (double)(1 << 30), (int)(GB_KV_MAX_TABLE_BYTES >> 30));
    /* one block's bytes, counted without signed overflow (huge head counts or dims from the caller) */
    const int64_t rowb = kb > INT64_MAX - vb ? -1 : kb + vb; /* MLA: one row holds both; GQA: a K and a V row */
    const int64_t bbytes = gb_size_mul(gb_size_mul(block_size, kind == GB_KV_MLA ? 1 : n_heads), rowb);
    if (bbytes < 0 || bbytes > INT64_MAX - GB_KV_ALIGN)
        return gb_error(GB_EVALUE, "KV cache: one block (%ld tokens x %ld heads x rows of %s=%ld and %s=%ld) is too large to count in 64 bits",
                        (long)block_size, (long)(kind == GB_KV_MLA ? 1 : n_heads), kn, (long)dk, vn, (long)dv);
    gb_kvcache *c = (gb_kvcache *)calloc(1, sizeof *c);
    if (!c) return gb_error(GB_ENOMEM, "KV cache: out of memory");
    c->kind = kind;
    c->fmt = fmt;
    c->n_layers = n_layers;
    c->capacity = capacity;
    c->block_size = block_size;
    c->n_heads = kind == GB_KV_MLA ? 1 : n_heads;
    c->dk = dk;
    c->dv = dv;
    if (kind == GB_KV_MLA) {
        c->k_row_bytes = kb + vb; /* one row: latent then rope key */
        c->v_row_bytes = 0;
    } else {
        c->k_row_bytes = kb;
        c->v_row_bytes = vb;
    }
    c->block_bytes = (bbytes + GB_KV_ALIGN - 1) / GB_KV_ALIGN * GB_KV_ALIGN;
    c->max_blocks = blocks;
    c->len = (int64_t *)calloc((size_t)n_layers, sizeof(int64_t));
    c->table = (uint8_t **)calloc((size_t)(n_layers * c->max_blocks), sizeof(uint8_t *));
    c->pool = (uint8_t **)calloc((size_t)(n_layers * c->max_blocks), sizeof(uint8_t *));
    c->window = (int64_t *)calloc((size_t)n_layers, sizeof(int64_t));
    c->ring = (int64_t *)calloc((size_t)n_layers, sizeof(int64_t));
    if (!c->len || !c->table || !c->pool || !c->window || !c->ring) {
        gb_kvcache_destroy(c);
        return gb_error(GB_ENOMEM, "KV cache: out of memory for the block tables");
    }
    pthread_rwlock_t *lock = (pthread_rwlock_t *)malloc(sizeof *lock);
    pthread_rwlockattr_t attr;
    int lst = lock ? pthread_rwlockattr_init(&attr) : ENOMEM;
    if (!lst) {
#if defined(__GLIBC__)
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
        lst = pthread_rwlock_init(lock, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    if (lst) {
        free(lock);
        gb_kvcache_destroy(c);
        return gb_error(GB_ENOMEM, "KV cache: cannot create its lock (%s)", strerror(lst));
    }
    c->lock = lock;
    *out = c;
    return GB_OK;
}

void gb_kvcache_destroy(gb_kvcache *c) {
    if (!c) return;
    if (c->table)
        for (int64_t i = 0; i < c->n_layers * c->max_blocks; i++) free(c->table[i]);
    if (c->pool)
        for (int64_t i = 0; i < c->n_pool; i++) free(c->pool[i]);
    free(c->table);
    free(c->pool);
    free(c->len);
    free(c->window);
    free(c->ring);
    if (c->lock) {
        pthread_rwlock_destroy((pthread_rwlock_t *)c->lock);
        free(c->lock);
    }
    free(c);
}

int gb_kvcache_lock(gb_kvcache *c, int exclusive) {
    pthread_rwlock_t *l = (pthread_rwlock_t *)c->lock;
    return exclusive ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
}

int gb_kvcache_trylock(gb_kvcache *c, int exclusive) {
    pthread_rwlock_t *l = (pthread_rwlock_t *)c->lock;
    return exclusive ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l);
}

void gb_kvcache_unlock(gb_kvcache *c) { pthread_rwlock_unlock((pthread_rwlock_t *)c->lock); }

int64_t gb_kvcache_bytes_per_token(const gb_kvcache *c) {
    return c->n_layers * c->n_heads * (c->k_row_bytes + c->v_row_bytes);
}

int64_t gb_kvcache_tokens_held(const gb_kvcache *c) {
    int64_t n = 0;
    for (int64_t l = 0; l < c->n_layers; l++) n += gb_kvcache_held(c, l);
    return n;
}

int gb_kvcache_set_windows(gb_kvcache *c, const int64_t *windows, int64_t chunk) {
    if (c->kind != GB_KV_GQA) return gb_error(GB_EVALUE, "sliding windows need a GQA cache, got an MLA cache");
    if (chunk < 1) return gb_error(GB_EVALUE, "`chunk` (the most tokens appended at once) must be >= 1, got %ld", (long)chunk);
    for (int64_t l = 0; l < c->n_layers; l++) {
        if (c->len[l])
            return gb_error(GB_EVALUE, "sliding windows can only be set on an empty cache (layer %ld holds %ld tokens)",
                            (long)l, (long)c->len[l]);
        if (windows && windows[l] < 0)
            return gb_error(GB_EVALUE, "`windows`[%ld] = %ld: a window must be >= 1 token (0 = full attention)", (long)l,
                            (long)windows[l]);
    }
    gb_kvcache_reset(c); /* blocks of the old layout back to the pool */
    for (int64_t l = 0; l < c->n_layers; l++) {
        const int64_t w = windows ? windows[l] : 0;
        int64_t r = 0;
        if (w > 0) {
            if (w > INT64_MAX / 2 - chunk)
                return gb_error(GB_EVALUE, "`windows`[%ld] = %ld is too large", (long)l, (long)w);
            /* W + chunk cells, llama.cpp's SWA cache rule (n_swa + n_ubatch, llama-kv-cache-iswa.cpp):
             * one slot more than the W - 1 + chunk attention needs, so both count the same cells */
            r = (w + chunk + c->block_size - 1) / c->block_size;
            if (r >= c->max_blocks) r = 0; /* the ring would be no smaller than the whole layer */
        }
        c->window[l] = w;
        c->ring[l] = r;
    }
    c->chunk = chunk;
    return GB_OK;
}

/* Make sure `layer` has blocks for tokens [0, n) (a ring: all its blocks once n fills it). */
static int ensure_blocks(gb_kvcache *c, int64_t layer, int64_t n) {
    int64_t need = (n + c->block_size - 1) / c->block_size;
    if (c->ring[layer] && need > c->ring[layer]) need = c->ring[layer];
    uint8_t **tab = c->table + layer * c->max_blocks;
    for (int64_t b = 0; b < need; b++) {
        if (tab[b]) continue;
        if (c->n_pool > 0) {
            tab[b] = c->pool[--c->n_pool];
            continue;
        }
        tab[b] = (uint8_t *)aligned_alloc(GB_KV_ALIGN, (size_t)c->block_bytes);
        if (!tab[b]) return gb_error(GB_ENOMEM, "KV cache: out of memory allocating a block of %ld bytes", (long)c->block_bytes);
        c->n_obtained++;
    }
    return GB_OK;
}

/* Slots past a layer's length hold all-ones bytes: NaN in f32, f16 and bf16 and a NaN scale in
 * q8_0/q4_0, so a kernel that reads past the length shows it in the tests (FlashMLA does the same
 * with its padding). Done when a block joins a layer. */
static int ensure_blocks_poisoned(gb_kvcache *c, int64_t layer, int64_t n) {
    uint8_t **tab = c->table + layer * c->max_blocks;
    int64_t have = 0;
    while (have < c->max_blocks && tab[have]) have++;
    int st = ensure_blocks(c, layer, n);
    int64_t need = (n + c->block_size - 1) / c->block_size;
    if (c->ring[layer] && need > c->ring[layer]) need = c->ring[layer];
    for (int64_t b = have; b < need && tab[b]; b++) memset(tab[b], 0xff, (size_t)c->block_bytes);
    return st;
}

static uint8_t *k_ptr_w(gb_kvcache *c, int64_t layer, int64_t head, int64_t t) {
    return (uint8_t *)gb_kvcache_k_ptr(c, layer, head, t);
}
static uint8_t *v_ptr_w(gb_kvcache *c, int64_t layer, int64_t head, int64_t t) {
    return (uint8_t *)gb_kvcache_v_ptr(c, layer, head, t);
}

static int check_layer(const gb_kvcache *c, int64_t layer) {
    if (layer < 0 || layer >= c->n_layers)
        return gb_error(GB_EVALUE, "`layer`=%ld is out of range for a cache of %ld layers", (long)layer, (long)c->n_layers);
    return GB_OK;
}

/* Encode token t's rows; a: this token's a-part, b: its b-part (shapes as in append). Nonzero if
 * a row cannot be stored: a q8_0/q4_0 block scale or an f16/bf16 value overflowed (gb_encode_row's
 * status). */
static int write_token(gb_kvcache *c, int64_t layer, int64_t t, const float *a, const float *b) {
    int bad = 0;
    if (c->kind == GB_KV_MLA) {
        uint8_t *dst = k_ptr_w(c, layer, 0, t);
        bad |= gb_encode_row(c->fmt, a, dst, c->dk);
        bad |= gb_encode_row(c->fmt, b, dst + gb_row_bytes(c->fmt, c->dk), c->dv);
    } else {
        for (int64_t h = 0; h < c->n_heads; h++) {
            bad |= gb_encode_row(c->fmt, a + h * c->dk, k_ptr_w(c, layer, h, t), c->dk);
            bad |= gb_encode_row(c->fmt, b + h * c->dv, v_ptr_w(c, layer, h, t), c->dv);
        }
    }
    return bad;
}

/* Nonzero if a row of the T tokens cannot be stored in c's format (gb_encode_row's status), found by
 * encoding into scratch, not into the cache; GB_ENOMEM without scratch. */
static int rows_unstorable(const gb_kvcache *c, const float *a, const float *b, int64_t T) {
    const int64_t rb = gb_row_bytes(c->fmt, c->dk > c->dv ? c->dk : c->dv);
    uint8_t *tmp = (uint8_t *)gb_ws_malloc((size_t)rb);
    if (!tmp) return GB_ENOMEM;
    int bad = 0;
    for (int64_t r = 0; r < T * c->n_heads && !bad; r++)
        bad = gb_encode_row(c->fmt, a + r * c->dk, tmp, c->dk) != GB_OK || gb_encode_row(c->fmt, b + r * c->dv, tmp, c->dv) != GB_OK;
    gb_ws_free(tmp);
    return bad;
}

static int unstorable_error(const gb_kvcache *c) {
    const char *why = c->fmt == GB_Q8_0   ? "a block scale overflows float16 (largest |value| above 8.3e6)"
                      : c->fmt == GB_Q4_0 ? "a block scale overflows float16 (largest |value| above 5.2e5)"
                      : c->fmt == GB_F16  ? "a value overflows float16 (|value| of 65520 or more)"
                                          : "a value overflows bfloat16 (|value| of 3.3961e38 or more)";
    return gb_error(GB_EVALUE, "cannot store these values in a %s KV cache: %s", fmt_name(c->fmt), why);
}

int gb_kvcache_append(gb_kvcache *c, int64_t layer, const float *a, const float *b, int64_t T) {
    int st;
    if ((st = check_layer(c, layer))) return st;
    if (T < 0) return gb_error(GB_EVALUE, "cannot append %ld tokens", (long)T);
    int64_t L = c->len[layer];
    if (L + T > c->capacity)
        return gb_error(GB_EFULL, "KV cache full: layer %ld holds %ld of %ld tokens, cannot append %ld", (long)layer,
                        (long)L, (long)c->capacity, (long)T);
    const int64_t W = c->window[layer], R = gb_kvcache_ring_tokens(c, layer);
    if (c->ring[layer] && T > R - W + 1)
        return gb_error(GB_EVALUE,
                        "layer %ld keeps a sliding window of %ld tokens in a ring of %ld: at most %ld tokens can be "
                        "appended (and attended) at once, got %ld",
                        (long)layer, (long)W, (long)R, (long)(R - W + 1), (long)T);
    /* A ring whose new rows land on slots of rows it still holds (T > R - held: only appends longer
     * than the chunk) checks first that every row can be stored: a refused append must leave the
     * window attention reads as it was, which writing row by row would not. */
    const int64_t held = L < W ? L : W;
    if (c->ring[layer] && c->fmt != GB_F32 && T > R - held) {
        const int u = rows_unstorable(c, a, b, T);
        if (u == GB_ENOMEM) return gb_error(GB_ENOMEM, "KV cache: out of memory for a scratch row");
        if (u) return unstorable_error(c);
    }
    if ((st = ensure_blocks_poisoned(c, layer, L + T))) return st;
    int64_t as = c->n_heads * c->dk, bs = c->n_heads * c->dv;
    int bad = 0;
#pragma omp parallel for schedule(static) if (T * as > 65536) reduction(| : bad)
    for (int64_t i = 0; i < T; i++) bad |= write_token(c, layer, L + i, a + i * as, b + i * bs);
    if (bad) /* the length is not advanced: the rows written stay beyond it (or, in a ring, on free slots), unread */
        return unstorable_error(c);
    c->len[layer] = L + T;
    return GB_OK;
}

int gb_kvcache_read(const gb_kvcache *c, int64_t layer, float *a, float *b) {
    int st;
    if ((st = check_layer(c, layer))) return st;
    int64_t as = c->n_heads * c->dk, bs = c->n_heads * c->dv;
    const int64_t t0 = c->len[layer] - gb_kvcache_held(c, layer);
    for (int64_t t = t0; t < c->len[layer]; t++) {
        const int64_t i = t - t0;
        if (c->kind == GB_KV_MLA) {
            const uint8_t *src = gb_kvcache_k_ptr(c, layer, 0, t);
            gb_decode_row(c->fmt, src, a + i * as, c->dk);
            gb_decode_row(c->fmt, src + gb_row_bytes(c->fmt, c->dk), b + i * bs, c->dv);
        } else {
            for (int64_t h = 0; h < c->n_heads; h++) {
                gb_decode_row(c->fmt, gb_kvcache_k_ptr(c, layer, h, t), a + i * as + h * c->dk, c->dk);
                gb_decode_row(c->fmt, gb_kvcache_v_ptr(c, layer, h, t), b + i * bs + h * c->dv, c->dv);
            }
        }
    }
    return GB_OK;
}

void gb_kvcache_reset(gb_kvcache *c) {
    for (int64_t i = 0; i < c->n_layers * c->max_blocks; i++)
        if (c->table[i]) {
            c->pool[c->n_pool++] = c->table[i];
            c->table[i] = NULL;
        }
    memset(c->len, 0, (size_t)c->n_layers * sizeof(int64_t));
}

/* splitmix64 (Steele, Lea, Flood 2014): a good 64-bit mixer from a counter, so each (layer, token)
 * gets its own stream and the result does not depend on which thread writes it. */
static inline uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int gb_kvcache_fill_synthetic(gb_kvcache *c, int64_t n, uint64_t seed) {
    if (n < 0 || n > c->capacity)
        return gb_error(GB_EVALUE, "`n_tokens`=%ld must be in [0, capacity_tokens=%ld]", (long)n, (long)c->capacity);
    gb_kvcache_reset(c);
    int st;
    for (int64_t l = 0; l < c->n_layers; l++)
        if ((st = ensure_blocks_poisoned(c, l, n))) return st;
    int64_t as = c->n_heads * c->dk, bs = c->n_heads * c->dv;
    int failed = 0;
#pragma omp parallel
    {
        float *buf = (float *)gb_ws_malloc((size_t)(as + bs) * sizeof(float));
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static) collapse(2)
        for (int64_t l = 0; l < c->n_layers; l++)
            for (int64_t t = 0; t < n; t++) {
                /* a ring keeps the last ring_tokens: the same values a full layer holds there */
                if (!buf || t < n - gb_kvcache_ring_tokens(c, l)) continue;
                uint64_t s = seed * 0x2545f4914f6cdd1dull ^ ((uint64_t)l << 40) ^ (uint64_t)t;
                for (int64_t i = 0; i < as + bs; i++)
                    buf[i] = (float)((int64_t)(splitmix64(&s) >> 40) - (1 << 23)) * (1.0f / (1 << 23));
                write_token(c, l, t, buf, buf + as);
            }
        gb_ws_free(buf);
    }
    if (failed) return gb_error(GB_ENOMEM, "fill_synthetic: out of memory");
    for (int64_t l = 0; l < c->n_layers; l++) c->len[l] = n;
    return GB_OK;
}

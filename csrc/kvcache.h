/* kvcache.h: the paged KV cache (pure C; bindings in bind_kvcache.c).
 *
 * A cache holds n_layers independent sequences of tokens. Each layer owns a block table of up to
 * ceil(capacity / block_size) blocks; a block holds block_size tokens (at most capacity: a larger
 * block_size is cut to it) and is taken on demand from the cache's pool (blocks freed by reset() go
 * back to the pool, not to the system).
 *
 * Storage per token, in the cache's row format (csrc/quant.h codec: f32, f16, bf16, q8_0, q4_0):
 *   GQA  K: n_heads rows of dk, V: n_heads rows of dv. Block layout: K[head][slot][dk] then
 *        V[head][slot][dv], so one head's keys of a block are one contiguous run (a tile decodes
 *        as a single long row, and a decode split streams memory in order).
 *   MLA  one row of dk + dv = kv_lora_rank latent followed by the rope key (the absorbed kernel
 *        reads the 576-wide key and its first 512 as the value from the same row).
 *        Block layout: [slot][dk + dv].
 * For q8_0/q4_0 every stored row part must be a whole number of 32-element blocks.
 *
 * Sliding windows (gb_kvcache_set_windows): a GQA layer with window W > 0 keeps only the last
 * tokens in a ring of ring[layer] blocks (ring_tokens = ring x block_size >= W + chunk, chunk =
 * the most tokens appended at once; llama.cpp's n_swa + n_ubatch cells): token t lives in slot
 * t mod ring_tokens, so len[layer] still counts every token appended (the position of the next
 * one) while only the last ring_tokens are stored. Attention of the T newest queries needs keys from len - T - W + 1 on, hence the bound
 * T <= ring_tokens - W + 1 on an append. Held (the bytes a layer accounts for): min(len, W).
 */
#ifndef GLMBENCH_KVCACHE_H
#define GLMBENCH_KVCACHE_H
#include <stdint.h>

enum { GB_KV_GQA = 0, GB_KV_MLA = 1 };

typedef struct gb_kvcache {
    int kind;               /* GB_KV_GQA | GB_KV_MLA */
    int fmt;                /* GB_F32 | GB_F16 | GB_BF16 | GB_Q8_0 | GB_Q4_0 */
    int64_t n_layers, capacity, block_size;
    int64_t n_heads;        /* GQA: kv heads; MLA: 1 */
    int64_t dk, dv;         /* GQA: head_dim, v_head_dim; MLA: kv_lora_rank, rope_dim */
    int64_t k_row_bytes;    /* GQA: one head's key row; MLA: the whole dk+dv row */
    int64_t v_row_bytes;    /* GQA: one head's value row; MLA: 0 */
    int64_t block_bytes;
    int64_t max_blocks;     /* per layer */
    int64_t *len;           /* [n_layers] tokens held */
    uint8_t **table;        /* [n_layers * max_blocks], NULL where not allocated */
    uint8_t **pool;         /* free blocks */
    int64_t n_pool;
    int64_t n_obtained;     /* blocks obtained from the system (held + pooled) */
    void *lock;             /* a pthread_rwlock_t (kvcache.c): shared for readers, exclusive for writers */
    int64_t *window;        /* [n_layers] sliding window in tokens, 0 = full attention */
    int64_t *ring;          /* [n_layers] blocks of a windowed layer's ring, 0 = not a ring (grows to capacity) */
    int64_t chunk;          /* the most tokens a windowed layer takes at once (set_windows), 0 = no windows */
} gb_kvcache;

/* Create a cache; *out is NULL on failure. */
int gb_kvcache_create(gb_kvcache **out, int kind, int fmt, int64_t n_layers, int64_t capacity, int64_t n_heads,
                      int64_t dk, int64_t dv, int64_t block_size);
void gb_kvcache_destroy(gb_kvcache *c);

/* Sliding windows per layer (windows[n_layers], 0 = full attention; NULL = none): windowed layers
 * become rings of ceil((W + chunk) / block_size) blocks, llama.cpp's n_swa + n_ubatch cells
 * (never more than capacity needs).
 * Only on an empty cache (every layer at length 0); GQA caches only. */
int gb_kvcache_set_windows(gb_kvcache *c, const int64_t *windows, int64_t chunk);

/* Tokens a ring holds (ring x block_size), or capacity for a layer that is not a ring. */
static inline int64_t gb_kvcache_ring_tokens(const gb_kvcache *c, int64_t layer) {
    return c->ring[layer] ? c->ring[layer] * c->block_size : c->capacity;
}

/* Tokens of `layer` attention can still see: min(len, window) for a windowed layer, else len. */
static inline int64_t gb_kvcache_held(const gb_kvcache *c, int64_t layer) {
    const int64_t w = c->window[layer], n = c->len[layer];
    return w > 0 && n > w ? w : n;
}

/* The oldest token whose rows are still stored (0 unless a ring has wrapped). */
static inline int64_t gb_kvcache_first(const gb_kvcache *c, int64_t layer) {
    const int64_t r = gb_kvcache_ring_tokens(c, layer), n = c->len[layer];
    return n > r ? n - r : 0;
}

/* Bytes per token summed over layers, in the storage format. */
int64_t gb_kvcache_bytes_per_token(const gb_kvcache *c);
int64_t gb_kvcache_tokens_held(const gb_kvcache *c);

/* Append T tokens to `layer`. GQA: a = K[T][n_heads][dk], b = V[T][n_heads][dv].
 * MLA: a = latent[T][dk], b = rope key[T][dv]. Fails (GB_EFULL) without writing anything when
 * the tokens do not fit. */
int gb_kvcache_append(gb_kvcache *c, int64_t layer, const float *a, const float *b, int64_t T);

/* Decode the gb_kvcache_held tokens of `layer` (the last ones) into float32: a, b in the shapes
 * append takes. */
int gb_kvcache_read(const gb_kvcache *c, int64_t layer, float *a, float *b);

void gb_kvcache_reset(gb_kvcache *c);

/* Concurrent use (one cache, several threads). The functions above do not lock: a caller that may
 * share a cache between threads (every Python binding does) holds the cache's lock around them:
 * shared (exclusive = 0) for what only reads it (read, attention, the sizes), exclusive for what
 * changes it (append, reset, fill_synthetic, a layer's forward). Writers are preferred, so a
 * stream of readers cannot starve a reset. trylock returns 0 when taken, nonzero when another
 * thread holds it in a conflicting mode. Not recursive: never take it twice in one thread. */
int gb_kvcache_lock(gb_kvcache *c, int exclusive);
int gb_kvcache_trylock(gb_kvcache *c, int exclusive);
void gb_kvcache_unlock(gb_kvcache *c);

/* Every layer to exactly n tokens of pseudo-random finite values in [-1, 1), deterministic in
 * (seed, layer, token) and independent of the thread count. */
int gb_kvcache_fill_synthetic(gb_kvcache *c, int64_t n, uint64_t seed);

/* Pointer to the stored bytes of key rows for (layer, head, token t): GQA rows of one head from t
 * to the end of t's block are contiguous (k_row_bytes apart); MLA rows likewise. In a ring, t's
 * block is block t / block_size mod ring (whole blocks, so a tile never straddles the wrap). */
static inline const uint8_t *gb_kvcache_blk(const gb_kvcache *c, int64_t layer, int64_t t) {
    const int64_t b = t / c->block_size, r = c->ring[layer];
    return c->table[layer * c->max_blocks + (r ? b % r : b)];
}
static inline const uint8_t *gb_kvcache_k_ptr(const gb_kvcache *c, int64_t layer, int64_t head, int64_t t) {
    const uint8_t *blk = gb_kvcache_blk(c, layer, t);
    int64_t s = t % c->block_size;
    return blk + (head * c->block_size + s) * c->k_row_bytes;
}
static inline const uint8_t *gb_kvcache_v_ptr(const gb_kvcache *c, int64_t layer, int64_t head, int64_t t) {
    const uint8_t *blk = gb_kvcache_blk(c, layer, t);
    int64_t s = t % c->block_size;
    return blk + c->n_heads * c->block_size * c->k_row_bytes + (head * c->block_size + s) * c->v_row_bytes;
}

#endif

/* attention_gqa.h: flash-form GQA attention over the paged KV cache, and the online-softmax core
 * it shares with MLA (attention_mla.c).
 *
 * Core: a set of nr query rows (already multiplied by the softmax scale) keeps a running state
 * (m = max score, l = sum of exp, o = unnormalised sum of p * v). gb_attn_tile folds one tile of
 * keys/values into it; gb_attn_combine merges the states of several splits of the cache
 * (flash-decoding) and normalises. Memory is O(rows x (dv + tile)), never O(rows x tokens).
 */
#ifndef GLMBENCH_ATTENTION_GQA_H
#define GLMBENCH_ATTENTION_GQA_H
#include <stdint.h>

#include "kvcache.h"

/* Tokens per tile: 32 keys of 576 floats (MLA) stay in L2 with room for the queries. */
#define GB_ATTN_TILE 32

/* Fold keys/values [t0, t0 + nt) into the state of rows [0, nr).
 *   q[nr][dk], k rows at k + j*ks (dk used), v rows at v + j*vs (dv used)
 *   lim: row r may see keys with index < lim[r] (causal); NULL = all; rows must be ordered so
 *        lim is nondecreasing; a row with lim[r] <= t0 is left untouched.
 *   m[nr] (start -INFINITY), l[nr] (start 0), o[nr][dv] (start 0); sbuf: nr * GB_ATTN_TILE floats. */
void gb_attn_tile(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v, int64_t vs,
                  int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l, float *o, float *sbuf);

/* gb_attn_tile with a sliding window and logit soft-capping:
 *   lo: row r sees keys with index >= lo[r] too (NULL = no lower bound); nondecreasing like lim;
 *       rows with lo[r] >= t0 + nt are left untouched (every row of the tile must see a key:
 *       lo[r] < lim[r]).
 *   softcap > 0: each score s (query already scaled) becomes softcap * tanh(s / softcap) before
 *       the softmax (Gemma 2's attn_logit_softcapping); 0 = off. */
void gb_attn_tile_ex(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v, int64_t vs,
                     int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo, float softcap, float *m,
                     float *l, float *o, float *sbuf);

/* ---- rows in lanes (AVX-512 and AVX2 + FMA + F16C builds: GB_ATTN_HAVE_LANES) ----
 * gb_attn_tile_ex for up to GB_ATTN_LANES rows with the queries given transposed, qT[dk][GB_ATTN_LANES]
 * (gb_attn_lanes_pack; lanes past nr zero): the prefill tile as an outer-product GEMM, the softmax
 * lane-parallel over rows. Same contract as gb_attn_tile_ex otherwise (nt <= GB_ATTN_LANES_TILE, below);
 * sbuf: GB_ATTN_LANES * (GB_ATTN_LANES_TILE + 1) floats. */
#define GB_ATTN_LANES 64
/* Keys per rows-in-lanes tile (callers of gb_attn_tile_lanes pass nt <= this; sbuf then
 * GB_ATTN_LANES * (GB_ATTN_LANES_TILE + 1) floats). AVX-512: 64, twice the other tiles' 32: the
 * output rows (MLA: 128 KB per 64 rows) rescaled, read and written once per 64 keys, and half the
 * softmax passes. Zen 4, 2 threads, T = 512, f16 cache, alternating builds
 * (bench/bench_attention_prefill.py): MLA at 16K 1855-1870 -> 1791-1822 ms (85 -> 87-88% of the f32
 * FMA peak), at 4K 521-525 -> 503-504 ms; GQA at 16K 1530-1596 -> 1484-1525 ms, at 4K 407-408 ->
 * 379-386 ms; 128 keys no faster than 64. AVX2 builds keep 32 (their score kernel's dim chunks are
 * sized for a 32-key tile in L1; not measured). */
#ifndef GB_ATTN_LANES_TILE
#ifdef __AVX512F__
#define GB_ATTN_LANES_TILE 64
#else
#define GB_ATTN_LANES_TILE GB_ATTN_TILE
#endif
#endif
/* Rows per prefill work item on that path (whole multiples of GB_ATTN_LANES): each cache tile is
 * decoded to float32 once per work item, so more rows share that pass. AVX-512: 256 (Qwen3-32B's
 * heads, T = 512, 2 threads, Zen 4, alternating builds: 16K 179-185 -> 189-193 GFLOP/s, 4K 179-191
 * -> 183-193; 512 rows no faster than 256); AVX2 builds keep 128 (not measured there). */
#ifdef __AVX512F__
#define GB_ATTN_LANES_BLOCK 256
#else
#define GB_ATTN_LANES_BLOCK 128
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#define GB_ATTN_HAVE_LANES 1
void gb_attn_lanes_pack(const float *q, int64_t nr, int64_t dk, float *qT);
void gb_attn_tile_lanes(const float *qT, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v,
                        int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo,
                        float softcap, float *m, float *l, float *o, float *sbuf);
#else
#define GB_ATTN_HAVE_LANES 0
#endif

/* ---- bfloat16 dot-product tile (AVX512_BF16: vdpbf16ps, 32 multiply-adds per instruction) ----
 * The tile kernel above widens bf16 keys and values to float32 and multiplies in float32. This one
 * reads bf16 rows straight from the cache and multiplies pairs of bf16 in the instruction, with
 * float32 accumulation: twice the multiply-adds per instruction and no widening pass. The query
 * and the softmax weights p are rounded to bf16 first (relative error <= 2^-9 each), as FlashMLA
 * does on GPUs and llama.cpp does for its f16 cache on CPUs; scores, the softmax and o stay float32.
 *   qb[nr][dk] bf16 (scaled), k rows at k + j*ks, v rows at v + j*vs (bf16 elements, dv % 32 == 0);
 *   lim/m/l as gb_attn_tile; o[nr][dv] is kept in the kernel's pair-interleaved order (see
 *   gb_attn_bf16_unpermute): start it at 0, and unpermute after the last tile (or after combining
 *   splits, which works lane by lane); sbuf: nr * GB_ATTN_TILE floats + nr * GB_ATTN_TILE / 2 words;
 *   pf (may be NULL): pf_bytes to prefetch (the next tile's rows), spread over the micro-kernels.
 * gb_attn_bf16_ok(): compiled in (AVX512_BF16) and not switched off by gb_attn_set_bf16(0). */
int gb_attn_bf16_ok(void);
void gb_attn_set_bf16(int on);

/* GQA decode (T = 1) over an f16 or bf16 cache on AVX2 builds without AVX-512 runs the 16-bit tile on
 * 8 lanes (attn_tile_f16.h: rows widened in registers). gb_gqa_f16_tile_ok(): compiled in and on;
 * gb_gqa_set_f16_tile(0) sends those calls back through the widened float32 tile (tests, A/B timings). */
int gb_gqa_f16_tile_ok(void);
void gb_gqa_set_f16_tile(int on);
void gb_attn_tile_bf16(const uint16_t *qb, int64_t nr, int64_t dk, const uint16_t *k, int64_t ks, const uint16_t *v,
                       int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l,
                       float *o, float *sbuf, const void *pf, int64_t pf_bytes);
/* Rows [0, nr) of o[nr][dv] from the bf16 tile's order back to natural order, in place. */
void gb_attn_bf16_unpermute(float *o, int64_t nr, int64_t dv);
/* float32 -> bf16 (round to nearest even), n elements. */
void gb_attn_to_bf16(const float *x, int64_t n, uint16_t *out);

/* Rows of a cache tile as float32: the stored bytes themselves for f32, else decoded into
 * `scratch` (n elements). */
const float *gb_attn_rows(int fmt, const uint8_t *src, int64_t n, float *scratch);

/* out[r * out_stride + :dv] = sum_s e^(m_s - M) o_s / sum_s e^(m_s - M) l_s over n_splits states laid out
 * as m[s * split_stride + r], l[s * split_stride + r], o[(s * split_stride + r) * dv]. */
void gb_attn_combine(int64_t nr, int64_t dv, int64_t n_splits, int64_t split_stride, const float *m, const float *l,
                     const float *o, float *out, int64_t out_stride);
/* The same with one sink logit per row (sink[r]; NULL: none): one more term e^(sink - M) in the
 * denominator, none in the numerator (GPT-OSS's learned sinks: a logit whose probability is dropped). */
void gb_attn_combine_sink(int64_t nr, int64_t dv, int64_t n_splits, int64_t split_stride, const float *m,
                          const float *l, const float *o, const float *sink, float *out, int64_t out_stride);

/* Prefetch the next n lines (64 bytes) from *p, not past end, advancing *p: the tiles spread the
 * next tile's rows over their micro-kernels this way (issued all at once, prefetches stall the core
 * on its few miss buffers). Every line: every other one (the adjacent-line prefetcher left to fetch
 * its pair) measured GQA decode 1.3-1.5x slower on a Zen 3 (bench/results/attention_decode_avx2_zen3_s15_2026-12-03.md).
 * Into L2 (locality 2, prefetcht1), as gb_attn_prefetch. */
static inline void gb_attn_pf_step(const char **p, const char *end, int64_t n) {
    for (int64_t i = 0; i < n && *p < end; i++, *p += 64) __builtin_prefetch(*p, 0, 2);
}

/* Ask for `bytes` at p to be brought into the cache while the current tile computes (software
 * prefetch: the hardware stream prefetcher stops at 4 KB page edges, and a tile of one head's keys
 * is 8-16 KB of a block). */
void gb_attn_prefetch(const void *p, int64_t bytes);

/* Tokens in the tile that starts at t: up to max (GB_ATTN_TILE; the rows-in-lanes tile's
 * GB_ATTN_LANES_TILE), never past t1 or the end of t's block (0 when t >= t1). */
static inline int64_t gb_attn_tile_len_max(int64_t t, int64_t t1, int64_t block_size, int64_t max) {
    int64_t n = t1 - t, inblk = block_size - t % block_size;
    if (n > max) n = max;
    if (n > inblk) n = inblk;
    return n > 0 ? n : 0;
}
static inline int64_t gb_attn_tile_len(int64_t t, int64_t t1, int64_t block_size) {
    return gb_attn_tile_len_max(t, t1, block_size, GB_ATTN_TILE);
}

/* Multiply-adds below which an attention call runs on one thread: starting a team and meeting at its
 * barrier costs ~10 us on an idle machine and milliseconds when the cores are shared, more than the
 * work itself for short caches. */
#define GB_ATTN_PAR_MIN (1 << 20)

/* Splits used when n_splits <= 0: enough (head x row-block x split) work items for the threads,
 * each split at least `min_tokens` long. */
int64_t gb_attn_default_splits(int64_t work_items, int64_t n_tokens, int64_t min_tokens);

/* GQA attention for the LAST T tokens held in cache layer `layer`:
 *   q[T][Hq][Dh] -> out[T][Hq][Dv]; query head j uses kv head j / (Hq / Hkv); causal;
 *   scale <= 0 means 1/sqrt(Dh); n_splits <= 0 picks a default (flash-decoding split of the cache).
 * Runs gb_gqa_attention_ex with the layer's own window (0 = full attention) and no soft-capping. */
int gb_gqa_attention(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                     int64_t n_splits, float *out);

/* The same with a sliding window and soft-capping:
 *   window > 0: the query at position p sees keys p - window + 1 .. p (HF's sliding_window: `window`
 *       keys, itself included); 0 = the layer's window (c->window[layer]; 0 there = full attention).
 *       Only keys in the window are read: decode reads min(window, len) rows, not len. The keys
 *       needed must still be stored (a ring keeps the last ring_tokens), else GB_EVALUE.
 *   softcap > 0: logits soft-capped as gb_attn_tile_ex (the float32 tile kernels; off: 0). */
int gb_gqa_attention_ex(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                        int64_t window, float softcap, int64_t n_splits, float *out);

/* The same with attention sinks (GPT-OSS): sinks[Hq] (NULL: none), one logit per query head in the
 * same units as the scaled scores, added to each row's softmax denominator and not to its output
 * (HF modeling_gpt_oss.eager_attention_forward); non-finite sinks -> GB_EVALUE. Every kernel path
 * runs unchanged: the sinks enter where the splits' softmax states are combined. */
int gb_gqa_attention_sk(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                        int64_t window, float softcap, const float *sinks, int64_t n_splits, float *out);

#endif

/* attention_gqa.c: the online-softmax attention core (shared with MLA) and GQA over the paged cache.
 *
 * Versions of the tile kernel (one launcher, gb_attn_tile):
 *   tile_avx512  scores as a (5 rows x 4 keys) register block of 16-lane partial dot products,
 *                reduced four at a time; p*V as (10 rows x 32 dims) accumulators; vector exp.
 *   tile_avx2    CPUs with AVX2 + FMA + F16C but no AVX-512: (4 rows x 2 keys) score blocks of 8
 *                lanes, vector exp, p*V as (4 rows x 16 dims); head dims that are multiples of 8.
 *   tile_scalar  plain loops, for builds with neither (GLMBENCH_NATIVE=0) and other head dims.
 *   gb_attn_tile_lanes  prefill (16+ rows): rows in vector lanes, the queries transposed once per work
 *                item; the softmax lane-parallel. AVX-512: scores as (4 x 16 rows x 6 keys) outer
 *                products, p*V as the 6 x 64 kernel. AVX2 + FMA + F16C (no AVX-512): scores as
 *                (3 x 8 rows x 4 keys) outer products over 64-dim chunks (L1-resident), p*V as
 *                6 rows x 16 dims, row blocks outside. Builds with neither run gb_attn_tile_ex's
 *                portable path for prefill too.
 * Each key/value row of a tile is read once per row group; the query rows of one KV head (the G
 * query heads of a group, times the chunk's tokens) all share that read.
 */
#include "attention_gqa.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attn_tile_f16.h"
#include "common.h"
#include "quant.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#endif
/* CPUs with AVX2 + FMA + F16C but no AVX-512 (Zen 2/3, Intel client cores): tile_avx2 below */
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_ATTN_AVX2 1
#else
#define GB_ATTN_AVX2 0
#endif

#define AI static inline __attribute__((always_inline))

/* ---- tile rows as float32 ------------------------------------------------------------------ */

const float *gb_attn_rows(int fmt, const uint8_t *src, int64_t n, float *scratch) {
    if (fmt == GB_F32) return (const float *)src;
#ifdef __AVX512F__
    int64_t i = 0;
    const uint16_t *h = (const uint16_t *)src;
    if (fmt == GB_BF16) {
        for (; i + 16 <= n; i += 16) {
            __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(h + i)));
            _mm512_storeu_ps(scratch + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
        }
        for (; i < n; i++) scratch[i] = gb_bf16_to_f32(h[i]);
        return scratch;
    }
    if (fmt == GB_F16) {
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(scratch + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
        for (; i < n; i++) scratch[i] = gb_f16_to_f32(h[i]);
        return scratch;
    }
#endif
#if GB_ATTN_AVX2
    if (fmt == GB_BF16 || fmt == GB_F16) {
        int64_t i = 0;
        const uint16_t *h = (const uint16_t *)src;
        if (fmt == GB_BF16)
            for (; i + 8 <= n; i += 8) {
                const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i)));
                _mm256_storeu_ps(scratch + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
            }
        else
            for (; i + 8 <= n; i += 8) _mm256_storeu_ps(scratch + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
        for (; i < n; i++) scratch[i] = fmt == GB_BF16 ? gb_bf16_to_f32(h[i]) : _cvtsh_ss(h[i]);
        return scratch;
    }
#endif
    gb_decode_row(fmt, src, scratch, n);
    return scratch;
}



/* Prefetch into L2 (locality 2, prefetcht1), not L1: a tile of keys and values plus its decoded float32
 * copy already exceed the 32 KB L1; measured ~10% faster bf16 decode than prefetcht0. */
#define GB_PF_LOCALITY 2
#ifndef GB_ATTN_PF_TILES
#define GB_ATTN_PF_TILES 3
#endif
void gb_attn_prefetch(const void *p, int64_t bytes) {
    const char *c = (const char *)p;
    for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 0, GB_PF_LOCALITY);
}

/* ---- the tile kernel ----------------------------------------------------------------------- */

/* Row r's scores s[0, nt) before its softmax: soft-capped (Gemma 2: cap * tanh(s / cap) on the scaled
 * logits, before the mask) and -inf before its window; returns its count of valid keys (causal lim). */
static inline int64_t row_scores_prep(float *sr, int64_t r, int64_t nt, int64_t t0, const int64_t *lim,
                                      const int64_t *lo, float softcap) {
    int64_t nv = lim ? lim[r] - t0 : nt;
    if (nv > nt) nv = nt;
    if (softcap > 0.0f)
        for (int64_t j = 0; j < nv; j++) sr[j] = softcap * tanhf(sr[j] / softcap);
    if (lo)
        for (int64_t j = 0; j < lo[r] - t0 && j < nv; j++) sr[j] = -INFINITY; /* before the window */
    return nv;
}


#ifdef __AVX512F__
static inline __mmask16 tail_mask(int64_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u); }

/* Sum each of a, b, c, d across its 16 lanes; the four sums land in s[0..3]. */
AI void reduce4(__m512 a, __m512 b, __m512 c, __m512 d, float *s) {
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4E));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xB1));
    _mm_storeu_ps(s, _mm512_castps512_ps128(_mm512_maskz_compress_ps(0x1111, x)));
}

/* s[i * sld + t] = q_i . k_t for RB query rows x TB keys. The accumulators are named variables
 * (a00..a43) selected by the compile-time RB/TB: GCC spills arrays of vectors, not scalars. */
#define SC_RT(i, t, X) if (RB > i && TB > t) { X(i, t) }
#define SC_ROW(i, X) SC_RT(i, 0, X) SC_RT(i, 1, X) SC_RT(i, 2, X) SC_RT(i, 3, X)
#define SC_ALL(X) SC_ROW(0, X) SC_ROW(1, X) SC_ROW(2, X) SC_ROW(3, X) SC_ROW(4, X)
#define SC_ZERO(i, t) a##i##t = _mm512_setzero_ps();
#define SC_FMA(i, t) a##i##t = _mm512_fmadd_ps(q##i, k##t, a##i##t);
#define SC_LOADQ(i) if (RB > i) { q##i = LOADQ(q + i * dk + d); __asm__("" : "+v"(q##i)); } /* one load, kept in a register */
#define SC_LOADK(t) if (TB > t) k##t = LOADK(k + t * ks + d);
#define SC_STEP                                                                                     \
    SC_LOADK(0) SC_LOADK(1) SC_LOADK(2) SC_LOADK(3)                                                 \
    SC_LOADQ(0) SC_LOADQ(1) SC_LOADQ(2) SC_LOADQ(3) SC_LOADQ(4)                                     \
    SC_ALL(SC_FMA)
#define SC_RED(i)                                                                                   \
    if (RB > i) {                                                                                   \
        if (TB == 4) reduce4(a##i##0, a##i##1, a##i##2, a##i##3, s + i * sld);                     \
        else {                                                                                      \
            if (TB > 0) s[i * sld + 0] = _mm512_reduce_add_ps(a##i##0);                             \
            if (TB > 1) s[i * sld + 1] = _mm512_reduce_add_ps(a##i##1);                             \
            if (TB > 2) s[i * sld + 2] = _mm512_reduce_add_ps(a##i##2);                             \
        }                                                                                           \
    }
AI void score_mk(const float *q, int64_t dk, const float *k, int64_t ks, float *s, int64_t sld, const int RB,
                 const int TB) {
    __m512 a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33, a40, a41, a42, a43;
    __m512 q0, q1, q2, q3, q4, k0, k1, k2, k3;
    a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = a40 = a41 =
        a42 = a43 = q0 = q1 = q2 = q3 = q4 = k0 = k1 = k2 = k3 = _mm512_setzero_ps();
    int64_t d = 0;
#define LOADQ(p) _mm512_loadu_ps(p)
#define LOADK(p) _mm512_loadu_ps(p)
    for (; d + 16 <= dk; d += 16) { SC_STEP }
#undef LOADQ
#undef LOADK
    if (d < dk) {
        __mmask16 mk = tail_mask(dk - d);
#define LOADQ(p) _mm512_maskz_loadu_ps(mk, p)
#define LOADK(p) _mm512_maskz_loadu_ps(mk, p)
        SC_STEP
#undef LOADQ
#undef LOADK
    }
    SC_RED(0) SC_RED(1) SC_RED(2) SC_RED(3) SC_RED(4)
}

#define SCORE_ROWS(RB)                                                                                 \
    do {                                                                                               \
        int64_t j = 0;                                                                                 \
        for (; j + 4 <= nt; j += 4) score_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 4);     \
        switch (nt - j) {                                                                              \
        case 3: score_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 3); break;                  \
        case 2: score_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 2); break;                  \
        case 1: score_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 1); break;                  \
        }                                                                                              \
    } while (0)

static void scores_avx512(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, int64_t nt, float *s) {
    for (int64_t r = 0; r < nr; r += 5) {
        const float *qr = q + r * dk;
        float *sr = s + r * GB_ATTN_TILE;
        switch (nr - r >= 5 ? 5 : nr - r) {
        case 5: SCORE_ROWS(5); break;
        case 4: SCORE_ROWS(4); break;
        case 3: SCORE_ROWS(3); break;
        case 2: SCORE_ROWS(2); break;
        case 1: SCORE_ROWS(1); break;
        }
    }
}

/* o[i] = alpha[i] o[i] + sum_j p[i][j] v[j] over dims [d, d + 32) for RB rows (named accumulators
 * c00..c91, as in score_mk). */
#define PV_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define PV_INIT(i)                                                                                 \
    if (RB > i) {                                                                                  \
        __m512 a = _mm512_set1_ps(alpha[i]);                                                       \
        c##i##0 = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m0, o + i * dv + d));                     \
        c##i##1 = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m1, o + i * dv + d + 16));                \
    }
#define PV_FMA(i)                                                                                  \
    if (RB > i) {                                                                                  \
        __m512 pb = _mm512_set1_ps(p[i * PRS + j * PKS]);                                          \
        c##i##0 = _mm512_fmadd_ps(pb, v0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(pb, v1, c##i##1);                                                \
    }
#define PV_STORE(i)                                                                                \
    if (RB > i) {                                                                                  \
        _mm512_mask_storeu_ps(o + i * dv + d, m0, c##i##0);                                        \
        _mm512_mask_storeu_ps(o + i * dv + d + 16, m1, c##i##1);                                   \
    }
AI void pv_mk(const float *p, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv, int64_t d,
              const float *alpha, const int RB, const int64_t PRS, const int64_t PKS) {
    __mmask16 m0 = tail_mask(dv - d), m1 = dv - d > 16 ? tail_mask(dv - d - 16) : 0;
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71, c80, c81, c90, c91;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = c80 = c81 =
        c90 = c91 = _mm512_setzero_ps();
    PV_ALL(PV_INIT)
    for (int64_t j = 0; j < nt; j++) {
        __m512 v0 = _mm512_maskz_loadu_ps(m0, v + j * vs + d), v1 = _mm512_maskz_loadu_ps(m1, v + j * vs + d + 16);
        PV_ALL(PV_FMA)
    }
    PV_ALL(PV_STORE)
}

/* The same over dims [d, d + 64) for RB <= 6 rows (dv a multiple of 64): 4 value vectors per key feed
 * 4 x RB FMAs, 4 + RB loads per 4 RB FMAs (10 per 24 against pv_mk's 12 per 20), and the output
 * is read and written once per 64 dims. */
#define PW_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define PW_INIT(i)                                                                                 \
    if (RB > i) {                                                                                  \
        __m512 a = _mm512_set1_ps(alpha[i]);                                                       \
        c##i##0 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d));                               \
        c##i##1 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d + 16));                          \
        c##i##2 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d + 32));                          \
        c##i##3 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d + 48));                          \
    }
#define PW_FMA(i)                                                                                  \
    if (RB > i) {                                                                                  \
        __m512 pb = _mm512_set1_ps(p[i * PRS + j * PKS]);                                          \
        c##i##0 = _mm512_fmadd_ps(pb, v0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(pb, v1, c##i##1);                                                \
        c##i##2 = _mm512_fmadd_ps(pb, v2, c##i##2);                                                \
        c##i##3 = _mm512_fmadd_ps(pb, v3, c##i##3);                                                \
    }
#define PW_STORE(i)                                                                                \
    if (RB > i) {                                                                                  \
        _mm512_storeu_ps(o + i * dv + d, c##i##0);                                                 \
        _mm512_storeu_ps(o + i * dv + d + 16, c##i##1);                                            \
        _mm512_storeu_ps(o + i * dv + d + 32, c##i##2);                                            \
        _mm512_storeu_ps(o + i * dv + d + 48, c##i##3);                                            \
    }
AI void pv_mk64(const float *p, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv, int64_t d,
                const float *alpha, const int RB, const int64_t PRS, const int64_t PKS) {
    __m512 c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33, c40, c41, c42, c43, c50,
        c51, c52, c53;
    c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = c40 = c41 = c42 =
        c43 = c50 = c51 = c52 = c53 = _mm512_setzero_ps();
    PW_ALL(PW_INIT)
    for (int64_t j = 0; j < nt; j++) {
        const float *vj = v + j * vs + d;
        __m512 v0 = _mm512_loadu_ps(vj), v1 = _mm512_loadu_ps(vj + 16), v2 = _mm512_loadu_ps(vj + 32),
               v3 = _mm512_loadu_ps(vj + 48);
        PW_ALL(PW_FMA)
    }
    PW_ALL(PW_STORE)
}

AI void pv_rows(const float *p, int64_t nr, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv,
                const float *alpha, const int64_t PRS, const int64_t PKS) {
    if (dv % 64 == 0) { /* MLA's 512, GQA's 128: the 6 x 64 kernel (in-process A/B, 1 thread: GQA 104-108 -> 114-129 GFLOP/s) */
        /* rows in equal blocks of at most 6 (MLA's 20 heads: 5,5,5,5, not 6,6,6,2, whose 2-row block
         * loads 4 value vectors per 8 FMAs; in-process A/B, GLM-4.7-Flash decode at 2K, f16, 1 thread:
         * best of 80 0.896/0.939 -> 0.858/0.893 ms) */
        const int64_t nbk = (nr + 5) / 6, rbk = (nr + nbk - 1) / nbk;
        for (int64_t d = 0; d < dv; d += 64)
            for (int64_t r = 0; r < nr; r += rbk) {
                const float *pr = p + r * PRS;
                float *orow = o + r * dv;
                switch (nr - r >= rbk ? rbk : nr - r) {
                case 6: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 6, PRS, PKS); break;
                case 5: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 5, PRS, PKS); break;
                case 4: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 4, PRS, PKS); break;
                case 3: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 3, PRS, PKS); break;
                case 2: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 2, PRS, PKS); break;
                case 1: pv_mk64(pr, nt, v, vs, orow, dv, d, alpha + r, 1, PRS, PKS); break;
                }
            }
        return;
    }
    for (int64_t d = 0; d < dv; d += 32)
        for (int64_t r = 0; r < nr; r += 10) {
            const float *pr = p + r * PRS;
            float *orow = o + r * dv;
            switch (nr - r >= 10 ? 10 : nr - r) {
            case 10: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 10, PRS, PKS); break;
            case 9: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 9, PRS, PKS); break;
            case 8: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 8, PRS, PKS); break;
            case 7: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 7, PRS, PKS); break;
            case 6: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 6, PRS, PKS); break;
            case 5: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 5, PRS, PKS); break;
            case 4: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 4, PRS, PKS); break;
            case 3: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 3, PRS, PKS); break;
            case 2: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 2, PRS, PKS); break;
            case 1: pv_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 1, PRS, PKS); break;
            }
        }
}

/* p[r][j] at p + r * GB_ATTN_TILE + j (the row-major tile) */
static void pv_avx512(const float *p, int64_t nr, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv,
                      const float *alpha) {
    pv_rows(p, nr, nt, v, vs, o, dv, alpha, GB_ATTN_TILE, 1);
}

/* Online-softmax update of one row's scores s[0, nt) with nv valid keys: s becomes p. */
static void softmax_row(float *s, int64_t nt, int64_t nv, float *m, float *l, float *alpha) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < nv; j += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask(nv - j), s + j));
    float mnew = fmaxf(*m, _mm512_reduce_max_ps(mx));
    *alpha = *m == -INFINITY ? 0.0f : expf(*m - mnew);
    __m512 sum = _mm512_setzero_ps(), mb = _mm512_set1_ps(mnew);
    for (int64_t j = 0; j < nt; j += 16) {
        __mmask16 valid = j < nv ? tail_mask(nv - j) : 0;
        __m512 p = _mm512_maskz_mov_ps(valid, gb_exp512(_mm512_sub_ps(_mm512_loadu_ps(s + j), mb)));
        _mm512_mask_storeu_ps(s + j, tail_mask(nt - j), p);
        sum = _mm512_add_ps(sum, p);
    }
    *l = *l * *alpha + _mm512_reduce_add_ps(sum);
    *m = mnew;
}
#endif /* __AVX512F__ */

#if GB_ATTN_AVX2
/* ---- the tile on 8 lanes (AVX2 + FMA): dk and dv multiples of 8 -------------------------------
 * scores as (RB <= 4 rows x TB <= 2 keys) register blocks of 8-lane partial dot products (8 FMAs per
 * 2 key + 4 query loads); the online softmax with gb_exp256; p*V as (4 rows x 16 dims) accumulators
 * (8 FMAs per 2 value loads + 4 broadcasts). Measured on a Zen 3: bench/results/attention_avx2_2026-12-02.md. */
AI float hsum8a(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

AI void score2_mk(const float *q, int64_t dk, const float *k, int64_t ks, float *s, int64_t sld, const int RB,
                  const int TB) {
    __m256 a[5][2];
    for (int i = 0; i < 5; i++) a[i][0] = a[i][1] = _mm256_setzero_ps();
    for (int64_t d = 0; d < dk; d += 8) {
        const __m256 k0 = _mm256_loadu_ps(k + d), k1 = TB > 1 ? _mm256_loadu_ps(k + ks + d) : k0;
        for (int i = 0; i < RB; i++) {
            const __m256 qv = _mm256_loadu_ps(q + i * dk + d);
            a[i][0] = _mm256_fmadd_ps(qv, k0, a[i][0]);
            if (TB > 1) a[i][1] = _mm256_fmadd_ps(qv, k1, a[i][1]);
        }
    }
    for (int i = 0; i < RB; i++)
        for (int t = 0; t < TB; t++) s[i * sld + t] = hsum8a(a[i][t]);
}

/* Query rows per register block of the AVX2 score and p.V kernels: 5 rows x 2 keys (10 accumulators)
 * and 5 rows x 16 dims, where 4 left FMA latency exposed. 1 thread, f16 cache, Zen 3, 2026-12-02
 * (bench/bench_attention_decode.py, in-process A/B): GLM-4.7-Flash MLA decode (20 rows) 16K 19.3-20.9
 * -> 12.7-14.8 ms, 4K 3.7-4.5 -> 2.9-3.2 ms; GQA (8 rows: 5 + 3) 4K 5.15 -> 4.96, 16K 23.1 -> 21.5;
 * 6 rows no faster. */
#ifndef AVX2_RB
#define AVX2_RB 5
#endif
static void scores_avx2(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, int64_t nt, float *s) {
    for (int64_t r = 0; r < nr; r += AVX2_RB) {
        const float *qr = q + r * dk;
        float *sr = s + r * GB_ATTN_TILE;
        for (int64_t j = 0; j < nt; j += 2) {
            const int tb = nt - j >= 2 ? 2 : 1;
#define SC2(RB) (tb == 2 ? score2_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 2) \
                         : score2_mk(qr, dk, k + j * ks, ks, sr + j, GB_ATTN_TILE, RB, 1))
            switch (nr - r >= AVX2_RB ? AVX2_RB : nr - r) {
            case 5: SC2(5); break;
            case 4: SC2(4); break;
            case 3: SC2(3); break;
            case 2: SC2(2); break;
            default: SC2(1); break;
            }
#undef SC2
        }
    }
}

/* the online-softmax update of one row (s[0, nv) valid of nt): s becomes p (0 past nv), o scaled by alpha */
static void softmax_row_avx2(float *s, int64_t nt, int64_t nv, float *m, float *l, float *o, int64_t dv) {
    float mx = -INFINITY;
    int64_t j = 0;
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (; j + 8 <= nv; j += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(s + j));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    mx = _mm_cvtss_f32(h);
    for (; j < nv; j++) mx = fmaxf(mx, s[j]);
    const float mnew = fmaxf(*m, mx), alpha = *m == -INFINITY ? 0.0f : expf(*m - mnew);
    const __m256 mb = _mm256_set1_ps(mnew);
    __m256 vs = _mm256_setzero_ps();
    j = 0;
    for (; j + 8 <= nv; j += 8) {
        const __m256 p = gb_exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j), mb));
        _mm256_storeu_ps(s + j, p);
        vs = _mm256_add_ps(vs, p);
    }
    float sum = hsum8a(vs);
    for (; j < nv; j++) sum += (s[j] = expf(s[j] - mnew));
    for (; j < nt; j++) s[j] = 0.0f;
    *l = *l * alpha + sum;
    *m = mnew;
    const __m256 va = _mm256_set1_ps(alpha);
    for (int64_t d = 0; d < dv; d += 8) _mm256_storeu_ps(o + d, _mm256_mul_ps(va, _mm256_loadu_ps(o + d)));
}

/* o[i][d, d + 8 * NV) += sum_j p[i][j] v_j[d, d + 8 * NV) for RB <= 5 rows */
AI void pv2_mk(const float *p, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv, int64_t d, const int RB,
               const int NV) {
    __m256 c[5][2];
    for (int i = 0; i < RB; i++)
        for (int u = 0; u < NV; u++) c[i][u] = _mm256_loadu_ps(o + i * dv + d + 8 * u);
    for (int64_t j = 0; j < nt; j++) {
        const __m256 v0 = _mm256_loadu_ps(v + j * vs + d), v1 = NV > 1 ? _mm256_loadu_ps(v + j * vs + d + 8) : v0;
        for (int i = 0; i < RB; i++) {
            const __m256 pb = _mm256_broadcast_ss(p + i * GB_ATTN_TILE + j);
            c[i][0] = _mm256_fmadd_ps(pb, v0, c[i][0]);
            if (NV > 1) c[i][1] = _mm256_fmadd_ps(pb, v1, c[i][1]);
        }
    }
    for (int i = 0; i < RB; i++)
        for (int u = 0; u < NV; u++) _mm256_storeu_ps(o + i * dv + d + 8 * u, c[i][u]);
}

static void pv_avx2(const float *p, int64_t nr, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv) {
    for (int64_t r = 0; r < nr; r += AVX2_RB) {
        const float *pr = p + r * GB_ATTN_TILE;
        float *orow = o + r * dv;
        const int rb = nr - r >= AVX2_RB ? AVX2_RB : (int)(nr - r);
        for (int64_t d = 0; d < dv; d += 16) {
            const int nv = dv - d >= 16 ? 2 : 1;
#define PV2(RB) (nv == 2 ? pv2_mk(pr, nt, v, vs, orow, dv, d, RB, 2) : pv2_mk(pr, nt, v, vs, orow, dv, d, RB, 1))
            switch (rb) {
            case 5: PV2(5); break;
            case 4: PV2(4); break;
            case 3: PV2(3); break;
            case 2: PV2(2); break;
            default: PV2(1); break;
            }
#undef PV2
        }
    }
}

static void tile_avx2(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v, int64_t vs,
                      int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo, float softcap, float *m,
                      float *l, float *o, float *sbuf) {
    scores_avx2(q, nr, dk, k, ks, nt, sbuf);
    for (int64_t r = 0; r < nr; r++) {
        float *sr = sbuf + r * GB_ATTN_TILE;
        const int64_t nv = row_scores_prep(sr, r, nt, t0, lim, lo, softcap);
        softmax_row_avx2(sr, nt, nv, m + r, l + r, o + r * dv, dv);
    }
    pv_avx2(sbuf, nr, nt, v, vs, o, dv);
}
#endif

static void tile_scalar(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v,
                        int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo,
                        float softcap, float *m, float *l, float *o, float *s) {
    for (int64_t r = 0; r < nr; r++) {
        int64_t nv = lim ? lim[r] - t0 : nt;
        if (nv > nt) nv = nt;
        const int64_t j0 = lo && lo[r] > t0 ? lo[r] - t0 : 0; /* keys before the row's window */
        float *sr = s + r * GB_ATTN_TILE, mx = -INFINITY;
        for (int64_t j = 0; j < nv; j++) {
            float acc = 0.0f;
            for (int64_t d = 0; d < dk; d++) acc += q[r * dk + d] * k[j * ks + d];
            if (softcap > 0.0f) acc = softcap * tanhf(acc / softcap);
            if (j < j0) acc = -INFINITY;
            sr[j] = acc;
            mx = fmaxf(mx, acc);
        }
        float mnew = fmaxf(m[r], mx), alpha = m[r] == -INFINITY ? 0.0f : expf(m[r] - mnew), sum = 0.0f;
        for (int64_t j = 0; j < nv; j++) sum += (sr[j] = expf(sr[j] - mnew));
        l[r] = l[r] * alpha + sum;
        m[r] = mnew;
        float *orow = o + r * dv;
        for (int64_t d = 0; d < dv; d++) orow[d] *= alpha;
        for (int64_t j = 0; j < nv; j++)
            for (int64_t d = 0; d < dv; d++) orow[d] += sr[j] * v[j * vs + d];
    }
}

void gb_attn_tile(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v, int64_t vs,
                  int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l, float *o, float *sbuf) {
    gb_attn_tile_ex(q, nr, dk, k, ks, v, vs, dv, nt, t0, lim, NULL, 0.0f, m, l, o, sbuf);
}

void gb_attn_tile_ex(const float *q, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v, int64_t vs,
                     int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo, float softcap, float *m,
                     float *l, float *o, float *sbuf) {
    int64_t r0 = 0;
    if (lim)
        while (r0 < nr && lim[r0] <= t0) r0++; /* rows that see none of these keys: before them */
    if (lo)
        while (nr > r0 && lo[nr - 1] >= t0 + nt) nr--; /* ... and past their window */
    if (r0 >= nr || nt <= 0) return;
    q += r0 * dk;
    nr -= r0;
    m += r0;
    l += r0;
    o += r0 * dv;
    if (lim) lim += r0;
    if (lo) lo += r0;
#ifdef __AVX512F__
    float *alpha = sbuf + nr * GB_ATTN_TILE;
    scores_avx512(q, nr, dk, k, ks, nt, sbuf);
    for (int64_t r = 0; r < nr; r++) {
        float *sr = sbuf + r * GB_ATTN_TILE;
        const int64_t nv = row_scores_prep(sr, r, nt, t0, lim, lo, softcap);
        softmax_row(sr, nt, nv, m + r, l + r, alpha + r);
    }
    pv_avx512(sbuf, nr, nt, v, vs, o, dv, alpha);
#else
#if GB_ATTN_AVX2
    if (dk % 8 == 0 && dv % 8 == 0) {
        tile_avx2(q, nr, dk, k, ks, v, vs, dv, nt, t0, lim, lo, softcap, m, l, o, sbuf);
        return;
    }
#endif
    tile_scalar(q, nr, dk, k, ks, v, vs, dv, nt, t0, lim, lo, softcap, m, l, o, sbuf);
#endif
}

/* ---- rows in lanes: the float32 prefill tile as two small GEMMs ------------------------------
 * Sixteen query rows per vector, the queries transposed once per work item (qT[d][GB_ATTN_LANES]):
 * the scores are an outer product (per dim: RZ vectors of queries times KB broadcast keys, RZ x KB
 * accumulators, no horizontal sums), the online softmax runs lane-parallel over rows (the running
 * max, l and alpha of 16 rows per vector), and p*V reads p from the key-major score tile. Measured
 * (1 thread, CPU time, f16 cache, T=256 at depth 2048, machine shared): see
 * bench/results/attention_prefill_2026-12-01.md. */
#if GB_ATTN_HAVE_LANES
/* shared by the AVX-512 and AVX2 versions of the rows-in-lanes tile below */
void gb_attn_lanes_pack(const float *q, int64_t nr, int64_t dk, float *qT) {
    for (int64_t d = 0; d < dk; d++) {
        float *dst = qT + d * GB_ATTN_LANES;
        int64_t r = 0;
        for (; r < nr; r++) dst[r] = q[r * dk + d];
        for (; r < GB_ATTN_LANES; r++) dst[r] = 0.0f;
    }
}

/* the rows [*r0, *r1) of nr that see a key of the tile [t0, t0 + nt) (lim: causal ends, lo: window
 * starts, both nondecreasing over rows); 0 when none does */
static int lanes_rows(int64_t nr, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo, int64_t *r0, int64_t *r1) {
    if (nt <= 0 || nr <= 0) return 0;
    int64_t a = 0, b = nr;
    if (lim)
        while (a < b && lim[a] <= t0) a++;
    if (lo)
        while (b > a && lo[b - 1] >= t0 + nt) b--;
    *r0 = a;
    *r1 = b;
    return a < b;
}
#endif

#ifdef __AVX512F__
#define LS_JZ(j, z, X) if (KB > j && RZ > z) { X(j, z) }
#define LS_J(j, X) LS_JZ(j, 0, X) LS_JZ(j, 1, X) LS_JZ(j, 2, X) LS_JZ(j, 3, X)
#define LS_ALL(X) LS_J(0, X) LS_J(1, X) LS_J(2, X) LS_J(3, X) LS_J(4, X) LS_J(5, X)
#define LS_ZERO(j, z) a##j##z = _mm512_setzero_ps();
#define LS_STORE(j, z) _mm512_storeu_ps(sT + j * GB_ATTN_LANES + 16 * z, a##j##z);
#define LS_LOADQ(z) if (RZ > z) { q##z = _mm512_loadu_ps(qd + 16 * z); __asm__("" : "+v"(q##z)); }
/* one broadcast key at a time: 24 accumulators + 4 queries + 1 key fit the 32 registers */
#define LS_KEY(j)                                                                                  \
    if (KB > j) {                                                                                  \
        const __m512 kb = _mm512_set1_ps(k[j * ks + d]);                                           \
        if (RZ > 0) a##j##0 = _mm512_fmadd_ps(q0, kb, a##j##0);                                    \
        if (RZ > 1) a##j##1 = _mm512_fmadd_ps(q1, kb, a##j##1);                                    \
        if (RZ > 2) a##j##2 = _mm512_fmadd_ps(q2, kb, a##j##2);                                    \
        if (RZ > 3) a##j##3 = _mm512_fmadd_ps(q3, kb, a##j##3);                                    \
    }
AI void lscore_mk(const float *qT, int64_t dk, const float *k, int64_t ks, float *sT, const int RZ, const int KB) {
    __m512 a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33, a40, a41, a42, a43, a50,
        a51, a52, a53;
    __m512 q0, q1, q2, q3;
    a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = a40 = a41 = a42 =
        a43 = a50 = a51 = a52 = a53 = q0 = q1 = q2 = q3 = _mm512_setzero_ps();
    for (int64_t d = 0; d < dk; d++) {
        const float *qd = qT + d * GB_ATTN_LANES;
        LS_LOADQ(0) LS_LOADQ(1) LS_LOADQ(2) LS_LOADQ(3)
        LS_KEY(0) LS_KEY(1) LS_KEY(2) LS_KEY(3) LS_KEY(4) LS_KEY(5)
    }
    LS_ALL(LS_STORE)
}

#define LSCORE_KB(RZ)                                                                                  \
    do {                                                                                               \
        int64_t j = 0;                                                                                 \
        for (; j + 6 <= nt; j += 6) lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 6);  \
        switch (nt - j) {                                                                              \
        case 5: lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 5); break;               \
        case 4: lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 4); break;               \
        case 3: lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 3); break;               \
        case 2: lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 2); break;               \
        case 1: lscore_mk(qT, dk, k + j * ks, ks, sT + j * GB_ATTN_LANES, RZ, 1); break;               \
        }                                                                                              \
    } while (0)

static void scores_lanes(const float *qT, int64_t nr, int64_t dk, const float *k, int64_t ks, int64_t nt, float *sT) {
    switch ((nr + 15) / 16) {
    case 4: LSCORE_KB(4); break;
    case 3: LSCORE_KB(3); break;
    case 2: LSCORE_KB(2); break;
    default: LSCORE_KB(1); break;
    }
}

void gb_attn_tile_lanes(const float *qT, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v,
                        int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo,
                        float softcap, float *m, float *l, float *o, float *sbuf) {
    int64_t r0, r1; /* rows that see a key of this tile: [r0, r1) */
    if (!lanes_rows(nr, nt, t0, lim, lo, &r0, &r1)) return;
    float *sT = sbuf, *alpha = sbuf + GB_ATTN_LANES_TILE * GB_ATTN_LANES;
    scores_lanes(qT, r1, dk, k, ks, nt, sT);
    if (softcap > 0.0f) /* Gemma 2: cap * tanh(s / cap) on the scaled logits, before the mask */
        for (int64_t j = 0; j < nt; j++)
            for (int64_t r = r0; r < r1; r++) sT[j * GB_ATTN_LANES + r] = softcap * tanhf(sT[j * GB_ATTN_LANES + r] / softcap);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int64_t z = r0 / 16; z * 16 < r1; z++) {
        const int64_t rb = z * 16;
        int32_t hi[16], lw[16]; /* valid keys of lane i: [lw[i], hi[i]) */
        for (int i = 0; i < 16; i++) {
            const int64_t r = rb + i;
            int64_t h = r < r0 || r >= r1 ? 0 : (lim ? lim[r] - t0 : nt), w = lo && r < r1 ? lo[r] - t0 : 0;
            hi[i] = (int32_t)(h < 0 ? 0 : h > nt ? nt : h);
            lw[i] = (int32_t)(w < 0 ? 0 : w > nt ? nt : w);
        }
        const __m512i hv = _mm512_loadu_si512((const void *)hi), lv = _mm512_loadu_si512((const void *)lw);
        const __mmask16 rm = tail_mask(r1 - rb) & (__mmask16)(rb >= r0 ? 0xffff : (0xffffu << (r0 - rb)));
        const __m512 mold = _mm512_mask_loadu_ps(ninf, rm, m + rb);
        __m512 mx = ninf;
        for (int64_t j = 0; j < nt; j++) {
            const __m512i jv = _mm512_set1_epi32((int)j);
            const __mmask16 ok = _mm512_cmpgt_epi32_mask(hv, jv) & _mm512_cmple_epi32_mask(lv, jv);
            mx = _mm512_mask_max_ps(mx, ok, mx, _mm512_loadu_ps(sT + j * GB_ATTN_LANES + rb));
        }
        const __m512 mnew = _mm512_max_ps(mold, mx);
        /* alpha = e^(m_old - m_new); 0 where m_old = -inf (no key yet: o is 0), 1 where no key here */
        const __m512 al = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(mold, ninf, _CMP_NEQ_OQ),
                                              gb_exp512(_mm512_sub_ps(mold, mnew)));
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < nt; j++) {
            const __m512i jv = _mm512_set1_epi32((int)j);
            const __mmask16 ok = _mm512_cmpgt_epi32_mask(hv, jv) & _mm512_cmple_epi32_mask(lv, jv);
            float *sp = sT + j * GB_ATTN_LANES + rb;
            const __m512 pj = _mm512_maskz_mov_ps(ok, gb_exp512(_mm512_sub_ps(_mm512_loadu_ps(sp), mnew)));
            _mm512_storeu_ps(sp, pj);
            sum = _mm512_add_ps(sum, pj);
        }
        const __m512 lold = _mm512_maskz_loadu_ps(rm, l + rb);
        _mm512_mask_storeu_ps(l + rb, rm, _mm512_fmadd_ps(lold, al, sum));
        _mm512_mask_storeu_ps(m + rb, rm, mnew);
        _mm512_mask_storeu_ps(alpha + rb, rm, al);
    }
    pv_rows(sT + r0, r1 - r0, nt, v, vs, o + r0 * dv, dv, alpha + r0, 1, GB_ATTN_LANES);
}
#endif /* __AVX512F__ */

#if GB_ATTN_AVX2
/* ---- rows in lanes on 8 lanes (AVX2 + FMA + F16C, no AVX-512) ----------------------------------
 * The same contract and layout as the AVX-512 version above (qT[d][GB_ATTN_LANES], key-major scores
 * sT[j][GB_ATTN_LANES], alpha after them), sized for 16 ymm registers:
 *   scores  (LZ <= 3 vectors of 8 rows) x (LK <= 4 broadcast keys) = 12 accumulators + 3 query
 *           vectors + 1 broadcast key; the dims cut into chunks of GB_ATTN_AVX2_DC so that the
 *           chunk of qT (64 lanes) and of the tile's keys stay in L1 (MLA's 576-dim qT is 147 KB),
 *           the partial scores kept in sT between chunks (the same sum order per lane: each lane's
 *           score is one FMA chain over d in order).
 *   softmax lane-parallel over rows (8 per vector), masks from integer compares.
 *   p*V     (<= 6 rows) x 16 columns = 12 accumulators + 2 value vectors + 1 broadcast p; 8-column
 *           and scalar tails for dv % 16.
 * Rows before the first row that sees a key of the tile are skipped a vector at a time. */
#ifndef GB_ATTN_AVX2_DC
#define GB_ATTN_AVX2_DC 64
#endif
#define L2_JZ(j, z, X) if (LK > j && LZ > z) { X(j, z) }
#define L2_J(j, X) L2_JZ(j, 0, X) L2_JZ(j, 1, X) L2_JZ(j, 2, X)
#define L2_ALL(X) L2_J(0, X) L2_J(1, X) L2_J(2, X) L2_J(3, X)
#define L2_INIT(j, z) a##j##z = first ? _mm256_setzero_ps() : _mm256_loadu_ps(sT + j * GB_ATTN_LANES + 8 * z);
#define L2_STORE(j, z) _mm256_storeu_ps(sT + j * GB_ATTN_LANES + 8 * z, a##j##z);
#define L2_LOADQ(z) if (LZ > z) { q##z = _mm256_loadu_ps(qd + 8 * z); __asm__("" : "+x"(q##z)); }
#define L2_KEY(j)                                                                                  \
    if (LK > j) {                                                                                  \
        const __m256 kb = _mm256_broadcast_ss(k + j * ks + d);                                     \
        if (LZ > 0) a##j##0 = _mm256_fmadd_ps(q0, kb, a##j##0);                                    \
        if (LZ > 1) a##j##1 = _mm256_fmadd_ps(q1, kb, a##j##1);                                    \
        if (LZ > 2) a##j##2 = _mm256_fmadd_ps(q2, kb, a##j##2);                                    \
    }
/* sT[j][8z + i] (+)= sum over d in [d0, d1) of qT[d][8z + i] k_j[d], j < LK, z < LZ (qT, sT offset to
 * the first vector); first: start from 0, else from the partial sums in sT */
AI void lscore2_mk(const float *qT, int64_t d0, int64_t d1, const float *k, int64_t ks, float *sT, int first,
                   const int LZ, const int LK) {
    __m256 a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32, q0, q1, q2;
    a00 = a01 = a02 = a10 = a11 = a12 = a20 = a21 = a22 = a30 = a31 = a32 = q0 = q1 = q2 = _mm256_setzero_ps();
    L2_ALL(L2_INIT)
    for (int64_t d = d0; d < d1; d++) {
        const float *qd = qT + d * GB_ATTN_LANES;
        L2_LOADQ(0) L2_LOADQ(1) L2_LOADQ(2)
        L2_KEY(0) L2_KEY(1) L2_KEY(2) L2_KEY(3)
    }
    L2_ALL(L2_STORE)
}

#define LSCORE2_KB(LZ)                                                                                 \
    do {                                                                                               \
        const float *qz = qT + 8 * z;                                                                  \
        float *sz = sT + 8 * z;                                                                        \
        int64_t j = 0;                                                                                 \
        for (; j + 4 <= nt; j += 4) lscore2_mk(qz, d0, d1, k + j * ks, ks, sz + j * GB_ATTN_LANES, first, LZ, 4); \
        switch (nt - j) {                                                                              \
        case 3: lscore2_mk(qz, d0, d1, k + j * ks, ks, sz + j * GB_ATTN_LANES, first, LZ, 3); break;   \
        case 2: lscore2_mk(qz, d0, d1, k + j * ks, ks, sz + j * GB_ATTN_LANES, first, LZ, 2); break;   \
        case 1: lscore2_mk(qz, d0, d1, k + j * ks, ks, sz + j * GB_ATTN_LANES, first, LZ, 1); break;   \
        }                                                                                              \
    } while (0)

/* scores of the row vectors [z0, z1) (8 rows each) for nt keys */
static void scores_lanes_avx2(const float *qT, int64_t z0, int64_t z1, int64_t dk, const float *k, int64_t ks,
                              int64_t nt, float *sT) {
    for (int64_t d0 = 0; d0 < dk; d0 += GB_ATTN_AVX2_DC) {
        const int64_t d1 = dk - d0 > GB_ATTN_AVX2_DC ? d0 + GB_ATTN_AVX2_DC : dk;
        const int first = d0 == 0;
        /* vectors in groups of 3, the last two groups balanced (8 -> 3 3 2, 4 -> 2 2, 5 -> 3 2) */
        for (int64_t z = z0; z < z1;) {
            const int64_t left = z1 - z;
            const int lz = left >= 5 || left == 3 ? 3 : left == 1 ? 1 : 2;
            switch (lz) {
            case 3: LSCORE2_KB(3); break;
            case 2: LSCORE2_KB(2); break;
            default: LSCORE2_KB(1); break;
            }
            z += lz;
        }
    }
}

/* o[i][d, d + 8 NV) = alpha[i] o[i][d, d + 8 NV) + sum_j p[j][i] v_j[d, d + 8 NV) for RB <= 6 rows;
 * p[j][i] at p + j * GB_ATTN_LANES + i */
#define P2_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define P2_INIT(i)                                                                                 \
    if (RB > i) {                                                                                  \
        const __m256 a = _mm256_set1_ps(alpha[i]);                                                 \
        c##i##0 = _mm256_mul_ps(a, _mm256_loadu_ps(o + i * dv + d));                               \
        if (NV > 1) c##i##1 = _mm256_mul_ps(a, _mm256_loadu_ps(o + i * dv + d + 8));               \
    }
#define P2_FMA(i)                                                                                  \
    if (RB > i) {                                                                                  \
        const __m256 pb = _mm256_broadcast_ss(pj + i);                                             \
        c##i##0 = _mm256_fmadd_ps(pb, v0, c##i##0);                                                \
        if (NV > 1) c##i##1 = _mm256_fmadd_ps(pb, v1, c##i##1);                                    \
    }
#define P2_STORE(i)                                                                                \
    if (RB > i) {                                                                                  \
        _mm256_storeu_ps(o + i * dv + d, c##i##0);                                                 \
        if (NV > 1) _mm256_storeu_ps(o + i * dv + d + 8, c##i##1);                                 \
    }
AI void pv_lanes2_mk(const float *p, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv, int64_t d,
                     const float *alpha, const int RB, const int NV) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    P2_ALL(P2_INIT)
    for (int64_t j = 0; j < nt; j++) {
        const float *vj = v + j * vs + d, *pj = p + j * GB_ATTN_LANES;
        const __m256 v0 = _mm256_loadu_ps(vj), v1 = NV > 1 ? _mm256_loadu_ps(vj + 8) : v0;
        P2_ALL(P2_FMA)
    }
    P2_ALL(P2_STORE)
}

#define PV2_RB(NV)                                                                                     \
    switch (nr - r >= rbk ? rbk : nr - r) {                                                            \
    case 6: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 6, NV); break;                \
    case 5: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 5, NV); break;                \
    case 4: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 4, NV); break;                \
    case 3: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 3, NV); break;                \
    case 2: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 2, NV); break;                \
    default: pv_lanes2_mk(p + r, nt, v, vs, o + r * dv, dv, d, alpha + r, 1, NV); break;               \
    }

/* rows [0, nr) of o (o, p and alpha offset to the first row) */
static void pv_lanes_avx2(const float *p, int64_t nr, int64_t nt, const float *v, int64_t vs, float *o, int64_t dv,
                          const float *alpha) {
    /* rows in equal blocks of at most 6 (as pv_rows) */
    const int64_t nbk = (nr + 5) / 6, rbk = (nr + nbk - 1) / nbk;
    const int64_t d16 = dv / 16 * 16, d8 = dv / 8 * 8;
    /* row blocks outside, columns inside: each block's o rows are read in order (the prefetcher
     * follows them; MLA's o is 128 KB per 64 rows, past L1 and, with 256-row work items and their qT,
     * past a Zen 3's 512 KB L2), the value columns come from L2. Columns outside (a block's o rows
     * read 64 bytes at a time, 2 KB apart) measured 45 -> 57-66% of the FMA peak, 1 thread, MLA T=256
     * at depth 4096. */
    for (int64_t r = 0; r < nr; r += rbk) {
        for (int64_t d = 0; d < d16; d += 16) { PV2_RB(2) }
        for (int64_t d = d16; d < d8; d += 8) { PV2_RB(1) }
    }
    for (int64_t d = d8; d < dv; d++) /* dv % 8 columns */
        for (int64_t r = 0; r < nr; r++) {
            float acc = alpha[r] * o[r * dv + d];
            for (int64_t j = 0; j < nt; j++) acc = fmaf(p[j * GB_ATTN_LANES + r], v[j * vs + d], acc);
            o[r * dv + d] = acc;
        }
}

void gb_attn_tile_lanes(const float *qT, int64_t nr, int64_t dk, const float *k, int64_t ks, const float *v,
                        int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, const int64_t *lo,
                        float softcap, float *m, float *l, float *o, float *sbuf) {
    int64_t r0, r1; /* rows that see a key of this tile: [r0, r1) */
    if (!lanes_rows(nr, nt, t0, lim, lo, &r0, &r1)) return;
    float *sT = sbuf, *alpha = sbuf + GB_ATTN_LANES_TILE * GB_ATTN_LANES;
    const int64_t z0 = r0 / 8, z1 = (r1 + 7) / 8;
    scores_lanes_avx2(qT, z0, z1, dk, k, ks, nt, sT);
    if (softcap > 0.0f) /* Gemma 2: cap * tanh(s / cap) on the scaled logits, before the mask */
        for (int64_t j = 0; j < nt; j++)
            for (int64_t r = r0; r < r1; r++) sT[j * GB_ATTN_LANES + r] = softcap * tanhf(sT[j * GB_ATTN_LANES + r] / softcap);
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int64_t z = z0; z < z1; z++) {
        const int64_t rb = z * 8;
        int32_t hi[8], lw[8], in[8]; /* valid keys of lane i: [lw[i], hi[i]); in: the row is in [r0, r1) */
        int full = 1; /* every lane sees every key of the tile: no masks (the same results) */
        for (int i = 0; i < 8; i++) {
            const int64_t r = rb + i;
            in[i] = r >= r0 && r < r1 ? -1 : 0;
            int64_t h = in[i] ? (lim ? lim[r] - t0 : nt) : 0, w = lo && in[i] ? lo[r] - t0 : 0;
            hi[i] = (int32_t)(h < 0 ? 0 : h > nt ? nt : h);
            lw[i] = (int32_t)(w < 0 ? 0 : w > nt ? nt : w);
            full &= in[i] && hi[i] == nt && lw[i] == 0;
        }
        const __m256i hv = _mm256_loadu_si256((const __m256i *)hi), lv = _mm256_loadu_si256((const __m256i *)lw);
        const __m256i rmi = _mm256_loadu_si256((const __m256i *)in);
        const __m256 rm = _mm256_castsi256_ps(rmi);
        const __m256 mold = _mm256_blendv_ps(ninf, _mm256_maskload_ps(m + rb, rmi), rm);
        __m256 mx = ninf;
        if (full)
            for (int64_t j = 0; j < nt; j++) mx = _mm256_max_ps(mx, _mm256_loadu_ps(sT + j * GB_ATTN_LANES + rb));
        else
        for (int64_t j = 0; j < nt; j++) {
            const __m256i jv = _mm256_set1_epi32((int)j);
            /* j < hi and !(lw > j) */
            const __m256 ok = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(lv, jv), _mm256_cmpgt_epi32(hv, jv)));
            mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, _mm256_loadu_ps(sT + j * GB_ATTN_LANES + rb)), ok);
        }
        const __m256 mnew = _mm256_max_ps(mold, mx);
        /* alpha = e^(m_old - m_new); 0 where m_old = -inf (no key yet: o is 0), 1 where no key here */
        const __m256 al = _mm256_and_ps(_mm256_cmp_ps(mold, ninf, _CMP_NEQ_OQ), gb_exp256(_mm256_sub_ps(mold, mnew)));
        __m256 sum = _mm256_setzero_ps();
        if (full)
            for (int64_t j = 0; j < nt; j++) {
                float *sp = sT + j * GB_ATTN_LANES + rb;
                const __m256 pj = gb_exp256(_mm256_sub_ps(_mm256_loadu_ps(sp), mnew));
                _mm256_storeu_ps(sp, pj);
                sum = _mm256_add_ps(sum, pj);
            }
        else
        for (int64_t j = 0; j < nt; j++) {
            const __m256i jv = _mm256_set1_epi32((int)j);
            const __m256 ok = _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_cmpgt_epi32(lv, jv), _mm256_cmpgt_epi32(hv, jv)));
            float *sp = sT + j * GB_ATTN_LANES + rb;
            const __m256 pj = _mm256_and_ps(ok, gb_exp256(_mm256_sub_ps(_mm256_loadu_ps(sp), mnew)));
            _mm256_storeu_ps(sp, pj);
            sum = _mm256_add_ps(sum, pj);
        }
        const __m256 lold = _mm256_maskload_ps(l + rb, rmi);
        _mm256_maskstore_ps(l + rb, rmi, _mm256_fmadd_ps(lold, al, sum));
        _mm256_maskstore_ps(m + rb, rmi, mnew);
        _mm256_maskstore_ps(alpha + rb, rmi, al);
    }
    pv_lanes_avx2(sT + r0, r1 - r0, nt, v, vs, o + r0 * dv, dv, alpha + r0);
}
#endif /* GB_ATTN_AVX2 */

/* ---- bfloat16 dot-product tile ---------------------------------------------------------------- */

#if defined(__AVX512BF16__) && defined(__AVX512F__)
static int bf16_on = 1;
int gb_attn_bf16_ok(void) { return bf16_on; }
void gb_attn_set_bf16(int on) { bf16_on = on ? 1 : 0; }

/* s[i * GB_ATTN_TILE + t] = qb_i . k_t for RB rows x TB keys, 32 bf16 pairs per step (masked tail). */
#define BS_RT(i, t, X) if (RB > i && TB > t) { X(i, t) }
#define BS_ROW(i, X) BS_RT(i, 0, X) BS_RT(i, 1, X) BS_RT(i, 2, X) BS_RT(i, 3, X)
#define BS_ALL(X) BS_ROW(0, X) BS_ROW(1, X) BS_ROW(2, X) BS_ROW(3, X) BS_ROW(4, X)
#define BS_DP(i, t) a##i##t = _mm512_dpbf16_ps(a##i##t, (__m512bh)q##i, (__m512bh)k##t);
#define BS_LOADQ(i) if (RB > i) { q##i = LOAD16(q + i * dk + d); __asm__("" : "+v"(q##i)); }
#define BS_LOADK(t) if (TB > t) k##t = LOAD16(k + t * ks + d);
#define BS_STEP BS_LOADK(0) BS_LOADK(1) BS_LOADK(2) BS_LOADK(3) \
    BS_LOADQ(0) BS_LOADQ(1) BS_LOADQ(2) BS_LOADQ(3) BS_LOADQ(4) BS_ALL(BS_DP)
AI void score_bf16_mk(const uint16_t *q, int64_t dk, const uint16_t *k, int64_t ks, float *s, const int RB,
                      const int TB) {
    __m512 a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33, a40, a41, a42, a43;
    __m512i q0, q1, q2, q3, q4, k0, k1, k2, k3;
    a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = a20 = a21 = a22 = a23 = a30 = a31 = a32 = a33 = a40 = a41 =
        a42 = a43 = _mm512_setzero_ps();
    q0 = q1 = q2 = q3 = q4 = k0 = k1 = k2 = k3 = _mm512_setzero_si512();
    int64_t d = 0;
#define LOAD16(p) _mm512_loadu_si512((const void *)(p))
    for (; d + 32 <= dk; d += 32) { BS_STEP }
#undef LOAD16
    if (d < dk) {
        const __mmask32 mk = (__mmask32)((1ull << (dk - d)) - 1ull);
#define LOAD16(p) _mm512_maskz_loadu_epi16(mk, (const void *)(p))
        BS_STEP
#undef LOAD16
    }
    const int64_t sld = GB_ATTN_TILE;
    SC_RED(0) SC_RED(1) SC_RED(2) SC_RED(3) SC_RED(4)
}

#define SCORE_BF16_ROWS(RB)                                                                            \
    do {                                                                                               \
        int64_t j = 0;                                                                                 \
        for (; j + 4 <= nt; j += 4) score_bf16_mk(qr, dk, k + j * ks, ks, sr + j, RB, 4);              \
        switch (nt - j) {                                                                              \
        case 3: score_bf16_mk(qr, dk, k + j * ks, ks, sr + j, RB, 3); break;                           \
        case 2: score_bf16_mk(qr, dk, k + j * ks, ks, sr + j, RB, 2); break;                           \
        case 1: score_bf16_mk(qr, dk, k + j * ks, ks, sr + j, RB, 1); break;                           \
        }                                                                                              \
    } while (0)

/* o[i] (pair-interleaved, dims [d, d + 32)) = alpha[i] o[i] + sum over key pairs of (p_j, p_j+1) .
 * (v_j, v_j+1): unpacklo/hi_epi16 of rows j and j+1 put the pair (v_j[x], v_j+1[x]) in one 32-bit
 * lane, lane 4L+u of lo holding x = 8L+u and of hi x = 8L+4+u (L = the 128-bit lane); o keeps that
 * order until gb_attn_bf16_unpermute. pp[i][jp] holds (p_2jp, p_2jp+1) as two bf16 in one word. */
#define PB_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)
#define PB_INIT(i) if (RB > i) { __m512 a = _mm512_set1_ps(alpha[i]);                              \
        c##i##0 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d));                                  \
        c##i##1 = _mm512_mul_ps(a, _mm512_loadu_ps(o + i * dv + d + 16)); }
#define PB_DP(i) if (RB > i) { __m512i pb = _mm512_set1_epi32((int)pp[i * (GB_ATTN_TILE / 2) + jp]);   \
        c##i##0 = _mm512_dpbf16_ps(c##i##0, (__m512bh)pb, (__m512bh)lo);                              \
        c##i##1 = _mm512_dpbf16_ps(c##i##1, (__m512bh)pb, (__m512bh)hi); }
#define PB_STORE(i) if (RB > i) { _mm512_storeu_ps(o + i * dv + d, c##i##0);                         \
        _mm512_storeu_ps(o + i * dv + d + 16, c##i##1); }
AI void pv_bf16_mk(const uint32_t *pp, int64_t nt, const uint16_t *v, int64_t vs, float *o, int64_t dv, int64_t d,
                   const float *alpha, const int RB) {
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71, c80, c81, c90, c91;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = c80 = c81 =
        c90 = c91 = _mm512_setzero_ps();
    PB_ALL(PB_INIT)
    for (int64_t jp = 0; 2 * jp < nt; jp++) {
        const __m512i va = _mm512_loadu_si512((const void *)(v + 2 * jp * vs + d));
        const __m512i vb = 2 * jp + 1 < nt ? _mm512_loadu_si512((const void *)(v + (2 * jp + 1) * vs + d))
                                           : _mm512_setzero_si512(); /* odd tile: never read past it */
        const __m512i lo = _mm512_unpacklo_epi16(va, vb), hi = _mm512_unpackhi_epi16(va, vb);
        PB_ALL(PB_DP)
    }
    PB_ALL(PB_STORE)
}


void gb_attn_tile_bf16(const uint16_t *qb, int64_t nr, int64_t dk, const uint16_t *k, int64_t ks, const uint16_t *v,
                       int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l,
                       float *o, float *sbuf, const void *pf, int64_t pf_bytes) {
    const char *pfp = (const char *)pf, *pfe = pfp ? pfp + pf_bytes : NULL;
    const int64_t pf_n = pfp ? (pf_bytes / 64 + (nr + 4) / 5 + dv / 32 * ((nr + 9) / 10)) / ((nr + 4) / 5 + dv / 32 * ((nr + 9) / 10)) : 0;
    int64_t r0 = 0;
    if (lim)
        while (r0 < nr && lim[r0] <= t0) r0++;
    if (r0 == nr || nt <= 0) return;
    const int64_t nr_all = nr;
    qb += r0 * dk;
    nr -= r0;
    m += r0;
    l += r0;
    o += r0 * dv;
    if (lim) lim += r0;
    float *s = sbuf, *alpha = sbuf + nr_all * GB_ATTN_TILE;
    uint32_t *pp = (uint32_t *)(alpha + nr_all); /* nr x GB_ATTN_TILE / 2 words (caller: sbuf of nr*(1.5T+1)) */
    for (int64_t r = 0; r < nr; r += 5) {
        const uint16_t *qr = qb + r * dk;
        float *sr = s + r * GB_ATTN_TILE;
        switch (nr - r >= 5 ? 5 : nr - r) {
        case 5: SCORE_BF16_ROWS(5); break;
        case 4: SCORE_BF16_ROWS(4); break;
        case 3: SCORE_BF16_ROWS(3); break;
        case 2: SCORE_BF16_ROWS(2); break;
        case 1: SCORE_BF16_ROWS(1); break;
        }
        if (pfp) gb_attn_pf_step(&pfp, pfe, pf_n);
    }
    for (int64_t r = 0; r < nr; r++) {
        int64_t nv = lim ? lim[r] - t0 : nt;
        float *sr = s + r * GB_ATTN_TILE;
        softmax_row(sr, nt, nv > nt ? nt : nv, m + r, l + r, alpha + r);
        for (int64_t j = nt; j < GB_ATTN_TILE; j++) sr[j] = 0.0f; /* the pair of an odd tile's last key */
        /* p as bf16 pairs: cvtne2ps puts its second operand in the low half, in order */
        _mm512_storeu_si512((void *)(pp + r * (GB_ATTN_TILE / 2)),
                            (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(sr + 16), _mm512_loadu_ps(sr)));
    }
    for (int64_t d = 0; d < dv; d += 32)
        for (int64_t r = 0; r < nr; r += 10) {
            const uint32_t *pr = pp + r * (GB_ATTN_TILE / 2);
            float *orow = o + r * dv;
            switch (nr - r >= 10 ? 10 : nr - r) {
            case 10: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 10); break;
            case 9: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 9); break;
            case 8: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 8); break;
            case 7: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 7); break;
            case 6: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 6); break;
            case 5: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 5); break;
            case 4: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 4); break;
            case 3: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 3); break;
            case 2: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 2); break;
            case 1: pv_bf16_mk(pr, nt, v, vs, orow, dv, d, alpha + r, 1); break;
            }
            if (pfp) gb_attn_pf_step(&pfp, pfe, pf_n);
        }
    if (pfp) gb_attn_pf_step(&pfp, pfe, pf_bytes); /* whatever is left */
}

void gb_attn_bf16_unpermute(float *o, int64_t nr, int64_t dv) {
    for (int64_t r = 0; r < nr; r++)
        for (int64_t d = 0; d < dv; d += 32) {
            float *p = o + r * dv + d;
            /* lo = [L0 L1 L2 L3], hi = [H0 H1 H2 H3] (128-bit lanes) -> [L0 H0 L1 H1], [L2 H2 L3 H3] */
            const __m512 lo = _mm512_loadu_ps(p), hi = _mm512_loadu_ps(p + 16);
            const __m512 a = _mm512_shuffle_f32x4(lo, hi, 0x44), b = _mm512_shuffle_f32x4(lo, hi, 0xEE);
            _mm512_storeu_ps(p, _mm512_shuffle_f32x4(a, a, 0xD8));
            _mm512_storeu_ps(p + 16, _mm512_shuffle_f32x4(b, b, 0xD8));
        }
}

void gb_attn_to_bf16(const float *x, int64_t n, uint16_t *out) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        _mm512_storeu_si512((void *)(out + i),
                            (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
    for (; i < n; i++) out[i] = gb_f32_to_bf16(x[i]);
}
#else
int gb_attn_bf16_ok(void) { return 0; }
void gb_attn_set_bf16(int on) { (void)on; }
void gb_attn_tile_bf16(const uint16_t *qb, int64_t nr, int64_t dk, const uint16_t *k, int64_t ks, const uint16_t *v,
                       int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l,
                       float *o, float *sbuf, const void *pf, int64_t pf_bytes) {
    (void)pf; (void)pf_bytes;
    (void)qb; (void)nr; (void)dk; (void)k; (void)ks; (void)v; (void)vs; (void)dv; (void)nt; (void)t0; (void)lim;
    (void)m; (void)l; (void)o; (void)sbuf; /* never called: gb_attn_bf16_ok() is 0 in this build */
}
void gb_attn_bf16_unpermute(float *o, int64_t nr, int64_t dv) { (void)o; (void)nr; (void)dv; }
void gb_attn_to_bf16(const float *x, int64_t n, uint16_t *out) {
    for (int64_t i = 0; i < n; i++) out[i] = gb_f32_to_bf16(x[i]);
}
#endif

void gb_attn_combine(int64_t nr, int64_t dv, int64_t n_splits, int64_t split_stride, const float *m, const float *l,
                     const float *o, float *out, int64_t out_stride) {
    gb_attn_combine_sink(nr, dv, n_splits, split_stride, m, l, o, NULL, out, out_stride);
}

void gb_attn_combine_sink(int64_t nr, int64_t dv, int64_t n_splits, int64_t split_stride, const float *m,
                          const float *l, const float *o, const float *sink, float *out, int64_t out_stride) {
    for (int64_t r = 0; r < nr; r++) {
        /* a sink is one more state: m = its logit, l = 1, o = 0 (a key whose value is zero) */
        float M = sink ? sink[r] : -INFINITY;
        for (int64_t s = 0; s < n_splits; s++) M = fmaxf(M, m[s * split_stride + r]);
        float *y = out + r * out_stride;
        double den = sink ? (double)expf(sink[r] - M) : 0.0;
        for (int64_t d = 0; d < dv; d++) y[d] = 0.0f;
        for (int64_t s = 0; s < n_splits; s++) {
            const int64_t i = s * split_stride + r;
            if (m[i] == -INFINITY) continue; /* a split this row cannot see */
            const float w = expf(m[i] - M);
            den += (double)w * l[i];
            const float *os = o + i * dv;
            for (int64_t d = 0; d < dv; d++) y[d] += w * os[d];
        }
        const float inv = (float)(1.0 / den);
        for (int64_t d = 0; d < dv; d++) y[d] *= inv;
    }
}

int64_t gb_attn_default_splits(int64_t work_items, int64_t n_tokens, int64_t min_tokens) {
    int64_t nth = omp_get_max_threads();
    if (work_items >= 2 * nth) return 1;
    int64_t s = (2 * nth + work_items - 1) / work_items;
    int64_t most = n_tokens / (min_tokens > 0 ? min_tokens : 1);
    if (s > most) s = most;
    return s < 1 ? 1 : s;
}

/* the G=8 decode kernel's bf16 dot-product arithmetic is compiled in */
#if defined(__AVX512BF16__) && defined(__AVX512F__)
#define GB_HAVE_G8_DP 1
#else
#define GB_HAVE_G8_DP 0
#endif

#ifdef __AVX512F__
/* ---- bf16 / f16 decode for groups of 8 query heads -------------------------------------------
 * One query (T = 1), G = 8 query heads per KV head, bf16 or f16 cache: each K/V row is loaded and
 * widened once (f16: vcvtph2ps, exact; always float32 arithmetic) and feeds all 8 heads. Against the
 * float32 tile (the tile widened into a buffer, then 5-row x 4-key score blocks), Qwen3-32B f16
 * decode, 1 thread, in-process runs on a shared machine: 4K 2.9 -> 1.2 ms, 16K CPU time 12.2 -> 5.1 ms
 * (bench/results/attention_decode_2026-12-02.md). Scores of a 32-token tile are computed as (8 heads x 2 keys) blocks of
 * 16-lane partial dots, reduced 16 at a time into one vector (lane 2g+t = head g, key t of the pair),
 * so the online softmax runs on 16 such vectors with no per-key horizontal work; p.V keeps
 * (8 heads x 32 dims) accumulators, one widened V chunk per key. */
#define DEC_TILE 32
#define G8_QT_MAX 256 /* longest head_dim the transposed-query scores take (QT on the stack) */
#ifndef DEC_PF_LOC
#define DEC_PF_LOC 2
#endif

AI __m512 bf16x16(const uint16_t *p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
/* 16 cache elements widened to float32: f16 (vcvtph2ps, exact) or bf16 (F16 a constant after inlining) */
AI __m512 row16x16(const uint16_t *p, const int F16) {
    return F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)) : bf16x16(p);
}

/* out lane i = sum of a[i]'s 16 lanes. */
AI __m512 reduce16(const __m512 *a) {
    __m512 b[8], c[4];
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++)
        c[i] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x44), _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xEE));
    __m512 d0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x44), _mm512_shuffle_f32x4(c[0], c[1], 0xEE));
    __m512 d1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], 0x44), _mm512_shuffle_f32x4(c[2], c[3], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(d0, d1, 0x88), _mm512_shuffle_f32x4(d0, d1, 0xDD));
}

/* The tile of kv head h that starts at t: its length (returned), and the rows of the tile PF tiles
 * ahead to prefetch during this one (*kf, *vf, *nf rows; NULL/0 past t1). */
static inline int64_t g8_tile(const gb_kvcache *c, int64_t layer, int64_t h, int64_t t, int64_t t1, int PF,
                              const char **kf, const char **vf, int64_t *nf) {
    const int64_t bs = c->block_size;
    int64_t nt = t1 - t, inblk = bs - t % bs;
    if (nt > DEC_TILE) nt = DEC_TILE;
    if (nt > inblk) nt = inblk;
    *kf = *vf = NULL;
    *nf = 0;
    const int64_t u = t + PF * DEC_TILE;
    if (u < t1) {
        int64_t n = bs - u % bs;
        if (n > DEC_TILE) n = DEC_TILE;
        if (n > t1 - u) n = t1 - u;
        *nf = n;
        *kf = (const char *)gb_kvcache_k_ptr(c, layer, h, u);
        *vf = (const char *)gb_kvcache_v_ptr(c, layer, h, u);
    }
    return nt;
}

/* Prefetch rows 2j, 2j+1 of the tile ahead (spread over the score loop). */
AI void g8_prefetch_pair(const gb_kvcache *c, const char *kf, const char *vf, int64_t nf, int64_t j) {
    if (2 * j >= nf) return;
    const int64_t nb = (2 * j + 2 <= nf ? 2 : 1) * c->k_row_bytes, vb = (2 * j + 2 <= nf ? 2 : 1) * c->v_row_bytes;
    for (int64_t i = 0; i < nb; i += 64) __builtin_prefetch(kf + 2 * j * c->k_row_bytes + i, 0, DEC_PF_LOC);
    for (int64_t i = 0; i < vb; i += 64) __builtin_prefetch(vf + 2 * j * c->v_row_bytes + i, 0, DEC_PF_LOC);
}

/* Online softmax over a tile's np score vectors S[j] (lane 2g+t = head g, key 2j+t; an odd tile's
 * last key masked): updates the running max *mv and sum *lv, writes p to P[j * 16 + lane], and
 * returns the factor the old o must be scaled by (lane 2g: head g). */
AI __m512 g8_softmax(__m512 *S, int64_t np, int64_t nt, __m512 *mv, __m512 *lv, float *P) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < np; j++) {
        __mmask16 valid = (__mmask16)(2 * j + 1 < nt ? 0xFFFF : 0x5555);
        S[j] = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), valid, S[j]);
        mx = _mm512_max_ps(mx, S[j]);
    }
    mx = _mm512_max_ps(mx, _mm512_permute_ps(mx, 0xB1));
    const __m512 mnew = _mm512_max_ps(*mv, mx);
    const __m512 alpha = gb_exp512(_mm512_sub_ps(*mv, mnew)); /* -inf - finite -> 0 */
    *mv = mnew;
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < np; j++) {
        __m512 p = gb_exp512(_mm512_sub_ps(S[j], mnew));
        _mm512_store_ps(P + j * 16, p);
        sum = _mm512_add_ps(sum, p);
    }
    *lv = _mm512_fmadd_ps(*lv, alpha, sum);
    return alpha;
}

/* The 8 heads' running max and sum out of the lane-pair vectors. */
AI void g8_finish(__m512 mv, __m512 lv, float *m, float *l) {
    float mf[16], lf[16];
    _mm512_storeu_ps(mf, mv);
    _mm512_storeu_ps(lf, lv);
    for (int g = 0; g < 8; g++) {
        m[g] = mf[2 * g];
        l[g] = lf[2 * g] + lf[2 * g + 1];
    }
}

/* Keys [t, t1) of kv head h into the state of its 8 query heads: m[8], l[8], o[8][Dv]; q is the 8
 * scaled queries [8][Dh], float32 (DP = 0) or bf16 (DP = 1; a constant after inlining).
 *   DP = 0: float32 arithmetic, each K/V row widened once and shared by the 8 heads.
 *   DP = 1: bf16 dot products (vdpbf16ps, the bf16 tile's arithmetic: q and p rounded to bf16,
 *           float32 accumulation): scores as (8 heads x 2 keys) blocks of 32-pair partial dots,
 *           p.V on key pairs (unpacklo/hi_epi16 of rows 2j and 2j+1), o kept in the bf16 tile's
 *           pair-interleaved order (gb_attn_bf16_unpermute after the combine). Half the multiply
 *           instructions of DP = 0, which at 8 query heads per KV head is compute-bound. */
AI void gqa_decode_g8(const gb_kvcache *c, int64_t layer, int64_t h, int64_t t, int64_t t1, const void *q, float *m,
                      float *l, float *o, const int DP, const int F16) {
    const int64_t Dh = c->dk, Dv = c->dv;
    const float *qf = (const float *)q;
    const uint16_t *qb = (const uint16_t *)q;
    float P[DEC_TILE / 2 * 16] __attribute__((aligned(64)));
    uint32_t PP[DEC_TILE / 2 * 8] __attribute__((aligned(64)));
    float al[16] __attribute__((aligned(64)));
    __m512 mv = _mm512_set1_ps(-INFINITY), lv = _mm512_setzero_ps();
    const int PF = 2; /* tiles ahead: 2 measured best (1: -3%, 3-4: -10-40%) */
    const __mmask32 tailm = (__mmask32)((Dh % 32) ? ((1ull << (Dh % 32)) - 1ull) : 0xFFFFFFFFull);
    (void)qf, (void)qb, (void)PP, (void)tailm;
#if GB_HAVE_G8_DP
    /* The 8 queries transposed for the scores: QT[s] lane 2g+t = head g's bf16 pair 2s+t (a 32-bit
     * word), so one vdpbf16ps against a key's pairs (2s, 2s+1) broadcast to every lane pair does 8
     * heads x 2 pairs, and a key's 8 scores build up in one register with no horizontal sums.
     * The (8 heads x 2 keys) register blocks did 4 steps per accumulator at head_dim 128 and then
     * 45 shuffle/add ops to reduce 16 of them. In-process A/B, Qwen3-32B decode (8 KV heads of 128,
     * 2 threads): 4K 0.62 -> 0.54 ms; 32K 6.5 ms either way (there the cache's streaming bounds it). */
    __m512i QT[G8_QT_MAX / 4];
    const int qt_ok = DP && Dh % 8 == 0 && Dh <= G8_QT_MAX;
    if (qt_ok) {
        const uint32_t *qw = (const uint32_t *)qb;
        for (int64_t s2 = 0; s2 < Dh / 4; s2++) {
            uint32_t lane[16];
            for (int g = 0; g < 8; g++) {
                lane[2 * g] = qw[g * (Dh / 2) + 2 * s2];
                lane[2 * g + 1] = qw[g * (Dh / 2) + 2 * s2 + 1];
            }
            QT[s2] = _mm512_loadu_si512((const void *)lane);
        }
    }
#endif
    while (t < t1) {
        const char *kf, *vf;
        int64_t nf;
        const int64_t nt = g8_tile(c, layer, h, t, t1, PF, &kf, &vf, &nf);
        const uint16_t *K = (const uint16_t *)gb_kvcache_k_ptr(c, layer, h, t);
        const uint16_t *V = (const uint16_t *)gb_kvcache_v_ptr(c, layer, h, t);
        const int64_t np = (nt + 1) / 2;
        __m512 S[DEC_TILE / 2];
        int64_t j0 = 0;
#if GB_HAVE_G8_DP
        if (DP && qt_ok) /* scores from the transposed queries, two key pairs at a time */
            for (; j0 < np; j0 += 2) {
                const int two = j0 + 1 < np;
                const uint64_t *kk[4];
                for (int u = 0; u < 4; u++) {
                    int64_t key = 2 * j0 + u;
                    if (key >= nt) key = nt - 1; /* past the tile: any valid row (masked by the softmax) */
                    kk[u] = (const uint64_t *)(K + key * Dh);
                }
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
                for (int64_t s2 = 0; s2 < Dh / 4; s2 += 2) {
                    const __m512bh q0 = (__m512bh)QT[s2], q1 = (__m512bh)QT[s2 + 1];
                    a0 = _mm512_dpbf16_ps(a0, q0, (__m512bh)_mm512_set1_epi64((long long)kk[0][s2]));
                    a1 = _mm512_dpbf16_ps(a1, q0, (__m512bh)_mm512_set1_epi64((long long)kk[1][s2]));
                    a2 = _mm512_dpbf16_ps(a2, q0, (__m512bh)_mm512_set1_epi64((long long)kk[2][s2]));
                    a3 = _mm512_dpbf16_ps(a3, q0, (__m512bh)_mm512_set1_epi64((long long)kk[3][s2]));
                    b0 = _mm512_dpbf16_ps(b0, q1, (__m512bh)_mm512_set1_epi64((long long)kk[0][s2 + 1]));
                    b1 = _mm512_dpbf16_ps(b1, q1, (__m512bh)_mm512_set1_epi64((long long)kk[1][s2 + 1]));
                    b2 = _mm512_dpbf16_ps(b2, q1, (__m512bh)_mm512_set1_epi64((long long)kk[2][s2 + 1]));
                    b3 = _mm512_dpbf16_ps(b3, q1, (__m512bh)_mm512_set1_epi64((long long)kk[3][s2 + 1]));
                }
                /* lanes 2g and 2g+1 hold head g's two halves: add them, then key 2j in lane 2g and
                 * key 2j+1 in lane 2g+1 (the layout g8_softmax reads) */
                a0 = _mm512_add_ps(a0, b0);
                a1 = _mm512_add_ps(a1, b1);
                a2 = _mm512_add_ps(a2, b2);
                a3 = _mm512_add_ps(a3, b3);
                a0 = _mm512_add_ps(a0, _mm512_permute_ps(a0, 0xB1));
                a1 = _mm512_add_ps(a1, _mm512_permute_ps(a1, 0xB1));
                a2 = _mm512_add_ps(a2, _mm512_permute_ps(a2, 0xB1));
                a3 = _mm512_add_ps(a3, _mm512_permute_ps(a3, 0xB1));
                S[j0] = _mm512_mask_blend_ps((__mmask16)0xAAAA, a0, a1);
                g8_prefetch_pair(c, kf, vf, nf, j0);
                if (two) {
                    S[j0 + 1] = _mm512_mask_blend_ps((__mmask16)0xAAAA, a2, a3);
                    g8_prefetch_pair(c, kf, vf, nf, j0 + 1);
                }
            }
#endif
        for (int64_t j = j0; j < np; j++) {
            const uint16_t *k0p = K + (2 * j) * Dh, *k1p = K + (2 * j + 1 < nt ? 2 * j + 1 : 2 * j) * Dh;
            __m512 a[16];
            for (int i = 0; i < 16; i++) a[i] = _mm512_setzero_ps();
            if (!DP) {
                for (int64_t d = 0; d < Dh; d += 16) {
                    __m512 k0 = row16x16(k0p + d, F16), k1 = row16x16(k1p + d, F16);
                    for (int g = 0; g < 8; g++) {
                        __m512 qg = _mm512_loadu_ps(qf + g * Dh + d);
                        __asm__("" : "+v"(qg)); /* one load feeding both FMAs (GCC would fold it into each) */
                        a[2 * g] = _mm512_fmadd_ps(qg, k0, a[2 * g]);
                        a[2 * g + 1] = _mm512_fmadd_ps(qg, k1, a[2 * g + 1]);
                    }
                }
            }
#if GB_HAVE_G8_DP
            if (DP) {
                for (int64_t d = 0; d < Dh; d += 32) {
                    const __mmask32 mk = d + 32 <= Dh ? (__mmask32)0xFFFFFFFFu : tailm;
                    const __m512i k0 = _mm512_maskz_loadu_epi16(mk, k0p + d), k1 = _mm512_maskz_loadu_epi16(mk, k1p + d);
                    for (int g = 0; g < 8; g++) {
                        __m512i qg = _mm512_maskz_loadu_epi16(mk, qb + g * Dh + d);
                        __asm__("" : "+v"(qg)); /* one load feeding both products */
                        a[2 * g] = _mm512_dpbf16_ps(a[2 * g], (__m512bh)qg, (__m512bh)k0);
                        a[2 * g + 1] = _mm512_dpbf16_ps(a[2 * g + 1], (__m512bh)qg, (__m512bh)k1);
                    }
                }
            }
#endif
            S[j] = reduce16(a);
            g8_prefetch_pair(c, kf, vf, nf, j);
        }
        _mm512_store_ps(al, g8_softmax(S, np, nt, &mv, &lv, P));
#if GB_HAVE_G8_DP
        if (DP) /* lanes (2g, 2g+1) of pair j's p are head g's p for keys 2j, 2j+1: as bf16, word g is that pair */
            for (int64_t j = 0; j < np; j++)
                _mm256_store_si256((__m256i *)(PP + j * 8), (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(P + j * 16)));
#endif
        for (int64_t dc = 0; dc < Dv; dc += 32) {
            __m512 cc[16];
            for (int g = 0; g < 8; g++) {
                __m512 ab = _mm512_set1_ps(al[2 * g]);
                cc[2 * g] = _mm512_mul_ps(ab, _mm512_loadu_ps(o + g * Dv + dc));
                cc[2 * g + 1] = _mm512_mul_ps(ab, _mm512_loadu_ps(o + g * Dv + dc + 16));
            }
            if (!DP) {
                for (int64_t u = 0; u < nt; u++) {
                    __m512 v0 = row16x16(V + u * Dv + dc, F16), v1 = row16x16(V + u * Dv + dc + 16, F16);
                    const float *pu = P + (u >> 1) * 16 + (u & 1);
                    for (int g = 0; g < 8; g++) {
                        __m512 pb = _mm512_set1_ps(pu[2 * g]);
                        cc[2 * g] = _mm512_fmadd_ps(pb, v0, cc[2 * g]);
                        cc[2 * g + 1] = _mm512_fmadd_ps(pb, v1, cc[2 * g + 1]);
                    }
                }
            }
#if GB_HAVE_G8_DP
            if (DP) {
                for (int64_t j = 0; j < np; j++) {
                    const __m512i va = _mm512_loadu_si512((const void *)(V + 2 * j * Dv + dc));
                    const __m512i vb = 2 * j + 1 < nt ? _mm512_loadu_si512((const void *)(V + (2 * j + 1) * Dv + dc))
                                                      : _mm512_setzero_si512(); /* odd tile: never read past it */
                    const __m512i lo = _mm512_unpacklo_epi16(va, vb), hi = _mm512_unpackhi_epi16(va, vb);
                    for (int g = 0; g < 8; g++) {
                        const __m512i pb = _mm512_set1_epi32((int)PP[j * 8 + g]);
                        cc[2 * g] = _mm512_dpbf16_ps(cc[2 * g], (__m512bh)pb, (__m512bh)lo);
                        cc[2 * g + 1] = _mm512_dpbf16_ps(cc[2 * g + 1], (__m512bh)pb, (__m512bh)hi);
                    }
                }
            }
#endif
            for (int g = 0; g < 8; g++) {
                _mm512_storeu_ps(o + g * Dv + dc, cc[2 * g]);
                _mm512_storeu_ps(o + g * Dv + dc + 16, cc[2 * g + 1]);
            }
        }
        t += nt;
    }
    g8_finish(mv, lv, m, l);
}

static void gqa_decode_g8_bf16(const gb_kvcache *c, int64_t layer, int64_t h, int64_t t, int64_t t1, const float *q,
                               float *m, float *l, float *o) {
    gqa_decode_g8(c, layer, h, t, t1, q, m, l, o, 0, 0);
}
/* f16 cache: float32 arithmetic (exact products of the stored values), each row widened once */
static void gqa_decode_g8_f16(const gb_kvcache *c, int64_t layer, int64_t h, int64_t t, int64_t t1, const float *q,
                              float *m, float *l, float *o) {
    gqa_decode_g8(c, layer, h, t, t1, q, m, l, o, 0, 1);
}
#if GB_HAVE_G8_DP
static void gqa_decode_g8_bf16dp(const gb_kvcache *c, int64_t layer, int64_t h, int64_t t, int64_t t1,
                                 const uint16_t *qb, float *m, float *l, float *o) {
    gqa_decode_g8(c, layer, h, t, t1, qb, m, l, o, 1, 0);
}
#endif
#endif /* __AVX512F__ */

/* ---- GQA over the paged cache -------------------------------------------------------------- */

static int gqa_f16_tile_on = 1;
void gb_gqa_set_f16_tile(int on) { gqa_f16_tile_on = on ? 1 : 0; }
int gb_gqa_f16_tile_ok(void) { return GB_ATTN_F16_AVX2 && gqa_f16_tile_on; }

int gb_gqa_attention(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                     int64_t n_splits, float *out) {
    return gb_gqa_attention_ex(c, layer, q, T, Hq, scale, 0, 0.0f, n_splits, out);
}

int gb_gqa_attention_ex(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                        int64_t window, float softcap, int64_t n_splits, float *out) {
    return gb_gqa_attention_sk(c, layer, q, T, Hq, scale, window, softcap, NULL, n_splits, out);
}

int gb_gqa_attention_sk(const gb_kvcache *c, int64_t layer, const float *q, int64_t T, int64_t Hq, float scale,
                        int64_t window, float softcap, const float *sinks, int64_t n_splits, float *out) {
    if (c->kind != GB_KV_GQA) return gb_error(GB_EVALUE, "`cache` must be a GQA cache, got an MLA cache");
    if (layer < 0 || layer >= c->n_layers)
        return gb_error(GB_EVALUE, "`layer`=%ld is out of range for a cache of %ld layers", (long)layer, (long)c->n_layers);
    const int64_t Hkv = c->n_heads, Dh = c->dk, Dv = c->dv, L = c->len[layer], bs = c->block_size;
    if (Hq < 1 || Hq % Hkv)
        return gb_error(GB_EVALUE, "`q` has %ld heads, which is not a multiple of the cache's n_kv_heads=%ld", (long)Hq,
                        (long)Hkv);
    if (T > L)
        return gb_error(GB_EVALUE,
                        "`q` has %ld tokens but layer %ld holds only %ld: append the new tokens' K/V before attending",
                        (long)T, (long)layer, (long)L);
    if (window < 0) return gb_error(GB_EVALUE, "`window` must be >= 1 token (0 = the layer's own), got %ld", (long)window);
    if (!(softcap >= 0.0f) || isinf(softcap))
        return gb_error(GB_EVALUE, "`softcap` must be a finite number >= 0 (0 = off), got %g", (double)softcap);
    if (sinks)
        for (int64_t j = 0; j < Hq; j++)
            if (!isfinite(sinks[j])) return gb_error(GB_EVALUE, "`sinks`[%ld] is %g: sink logits must be finite", (long)j, (double)sinks[j]);
    const int64_t W = window > 0 ? window : c->window[layer];
    /* the keys these queries see: [kb, L); the first query's window starts at L - T - W + 1 */
    const int64_t kb = W > 0 && L - T - W + 1 > 0 ? L - T - W + 1 : 0;
    if (kb < gb_kvcache_first(c, layer))
        return gb_error(GB_EVALUE,
                        "layer %ld no longer stores the keys these %ld queries need with a window of %ld: tokens "
                        "from %ld on are needed, the ring keeps %ld on (attend after each append of at most %ld tokens)",
                        (long)layer, (long)T, (long)W, (long)kb, (long)gb_kvcache_first(c, layer),
                        (long)(gb_kvcache_ring_tokens(c, layer) - (W > 0 ? W : 1) + 1));
    if (T == 0) return GB_OK;
    if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)Dh);
    const int64_t G = Hq / Hkv, nr = T * G, span = L - kb;
    const int nth = omp_get_max_threads();
    /* Row blocks of up to 64 rows bound the per-thread state (64 x (Dh + Dv + tile) floats). */
    int64_t rblk = nr < 64 ? nr : 64;
    /* prefill (16 or more rows per block): the rows-in-lanes tile, on work items of up to
     * GB_ATTN_LANES_BLOCK rows (each tile decoded once for all of them) */
    const int lanes = GB_ATTN_HAVE_LANES && T > 1 && rblk >= 16;
    if (lanes) rblk = nr < GB_ATTN_LANES_BLOCK ? nr : GB_ATTN_LANES_BLOCK;
    const int64_t nrb = (nr + rblk - 1) / rblk;
    int64_t S = n_splits > 0 ? n_splits : gb_attn_default_splits(Hkv * nrb, span, 256);
    if (S > span) S = span;
    const int64_t nw = Hkv * nrb * S;
    float *pm = (float *)gb_ws_malloc((size_t)(S * Hkv * nr) * sizeof(float));
    float *pl = (float *)gb_ws_malloc((size_t)(S * Hkv * nr) * sizeof(float));
    float *po = (float *)gb_ws_malloc((size_t)(S * Hkv * nr * Dv) * sizeof(float));
    int64_t *lim = (int64_t *)gb_ws_malloc((size_t)nr * sizeof(int64_t));
    int64_t *lo = (int64_t *)gb_ws_malloc((size_t)nr * sizeof(int64_t));
    int failed = 0;
    if (!pm || !pl || !po || !lim || !lo) {
        failed = 1;
        goto done;
    }
    for (int64_t r = 0; r < nr; r++) {
        lim[r] = L - T + r / G + 1;
        lo[r] = W > 0 && lim[r] - W > 0 ? lim[r] - W : 0;
    }
    /* the G=8 bf16 decode kernel has no soft-capping; a window is only its range of keys */
    const int fast_g8 = T == 1 && G == 8 && (c->fmt == GB_BF16 || c->fmt == GB_F16) && Dh % 16 == 0 && Dv % 32 == 0 &&
                        softcap == 0.0f;
    /* ... with bf16 dot products where compiled in and on, for a bf16 cache only (o then in the bf16
     * tile's lane order); an f16 cache keeps float32 arithmetic */
    const int g8_dp = fast_g8 && c->fmt == GB_BF16 && GB_HAVE_G8_DP && gb_attn_bf16_ok();
    (void)fast_g8;
    /* AVX2 builds: decode over an f16, bf16, q8_0 or q4_0 cache on the 8-lane tile (the G heads of a KV head as its rows) */
    const int f16t = T == 1 && gb_gqa_f16_tile_ok() && softcap == 0.0f &&
                     (((c->fmt == GB_F16 || c->fmt == GB_BF16) && Dh % 8 == 0 && Dv % 16 == 0) ||
                      ((c->fmt == GB_Q8_0 || c->fmt == GB_Q4_0) && Dh % 32 == 0 && Dv % 32 == 0));
    const int64_t sfl = lanes ? GB_ATTN_LANES * (GB_ATTN_LANES_TILE + 1) : rblk * (GB_ATTN_TILE + 1);
#pragma omp parallel num_threads(nw < nth ? (int)nw : nth) if (T * Hq * span * (Dh + Dv) >= GB_ATTN_PAR_MIN)
    {
        float *qs = (float *)gb_ws_malloc((size_t)(rblk * Dh) * sizeof(float));
        float *sbuf = (float *)gb_ws_malloc((size_t)(f16t && GB_ATTN_F16_SBUF(rblk) > sfl ? GB_ATTN_F16_SBUF(rblk) : sfl) * sizeof(float));
        const int64_t tl = lanes ? GB_ATTN_LANES_TILE : GB_ATTN_TILE; /* keys per tile */
        float *kbuf = f16t ? NULL : (float *)gb_ws_malloc((size_t)(tl * Dh) * sizeof(float));
        float *vbuf = f16t ? NULL : (float *)gb_ws_malloc((size_t)(tl * Dv) * sizeof(float));
        uint16_t *qb = g8_dp ? (uint16_t *)gb_ws_malloc((size_t)(rblk * Dh) * sizeof(uint16_t)) : NULL;
        float *qT = lanes ? (float *)gb_ws_malloc((size_t)(GB_ATTN_LANES_BLOCK * Dh) * sizeof(float)) : NULL;
        int ok = qs && sbuf && ((kbuf && vbuf) || f16t) && (!g8_dp || qb) && (!lanes || qT);
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t w = 0; w < nw; w++) {
            if (!ok) continue;
            const int64_t h = w / (nrb * S), rb = (w / S) % nrb, s = w % S;
            const int64_t r0 = rb * rblk, rn = r0 + rblk <= nr ? rblk : nr - r0;
            for (int64_t rr = 0; rr < rn; rr++) {
                const int64_t r = r0 + rr, i = r / G, g = r % G;
                const float *src = q + (i * Hq + h * G + g) * Dh;
                for (int64_t d = 0; d < Dh; d++) qs[rr * Dh + d] = src[d] * scale;
            }
            const int64_t base = (s * Hkv + h) * nr + r0;
            float *m = pm + base, *l = pl + base, *o = po + base * Dv;
            for (int64_t rr = 0; rr < rn; rr++) {
                m[rr] = -INFINITY;
                l[rr] = 0.0f;
            }
            memset(o, 0, (size_t)(rn * Dv) * sizeof(float));
            int64_t t = kb + s * span / S, t1 = kb + (s + 1) * span / S;
            if (t1 > lim[r0 + rn - 1]) t1 = lim[r0 + rn - 1];
            if (t < lo[r0]) t = lo[r0]; /* keys before the window of every row here */
            const int64_t t0 = t;
            /* decode: the one query sees every key of [kb, L) */
            const int64_t *lr = T > 1 ? lim + r0 : NULL, *lw = T > 1 && W > 0 ? lo + r0 : NULL;
#ifdef __AVX512F__
            if (fast_g8) {
#if GB_HAVE_G8_DP
                if (g8_dp) {
                    gb_attn_to_bf16(qs, rn * Dh, qb);
                    if (t < t1) gqa_decode_g8_bf16dp(c, layer, h, t, t1, qb, m, l, o);
                    continue;
                }
#endif
                if (t < t1) {
                    if (c->fmt == GB_F16) gqa_decode_g8_f16(c, layer, h, t, t1, qs, m, l, o);
                    else gqa_decode_g8_bf16(c, layer, h, t, t1, qs, m, l, o);
                }
                continue;
            }
#endif
            while (t < t1) {
                const int64_t n = gb_attn_tile_len_max(t, t1, bs, tl);
#if GB_ATTN_F16_AVX2
                if (f16t) { /* the next tile's K and V rows prefetched from inside this one's micro-kernels */
                    /* one tile ahead: 1 thread, Qwen3-32B's heads, Zen 3, in-process A/B of builds
                     * (bench_attention_decode.py): 16K 8.5-8.9 ms; two or three tiles ahead 8.7-9.0;
                     * none (the hardware's prefetchers only) 12.5-12.6 */
                    const int64_t u = t + n, nu = gb_attn_tile_len(u, t1, bs);
                    if (t == t0) {
                        gb_attn_prefetch(gb_kvcache_k_ptr(c, layer, h, t), n * c->k_row_bytes);
                        gb_attn_prefetch(gb_kvcache_v_ptr(c, layer, h, t), n * c->v_row_bytes);
                    }
                    const void *pk = nu ? gb_kvcache_k_ptr(c, layer, h, u) : NULL, *pv = nu ? gb_kvcache_v_ptr(c, layer, h, u) : NULL;
                    const uint8_t *kr = gb_kvcache_k_ptr(c, layer, h, t), *vr = gb_kvcache_v_ptr(c, layer, h, t);
                    const int64_t ks = c->k_row_bytes, vs = c->v_row_bytes, pkb = nu * ks, pvb = nu * vs;
                    const int qwen = Dh == 128 && Dv == 128; /* Llama / Qwen heads: their own build */
#define GQA_F16T(DH, DV, FMT) gb_attn_tile_f16_8(qs, rn, DH, kr, ks, vr, vs, DV, n, t, NULL, m, l, o, sbuf, pk, pkb, pv, pvb, FMT)
                    if (c->fmt == GB_F16) { if (qwen) GQA_F16T(128, 128, M8_F16); else GQA_F16T(Dh, Dv, M8_F16); }
                    else if (c->fmt == GB_BF16) { if (qwen) GQA_F16T(128, 128, M8_BF16); else GQA_F16T(Dh, Dv, M8_BF16); }
                    /* q8_0 widened in registers too (scale per 32 values): 1 thread, Qwen3-32B's heads at 16K,
                     * 16.6 -> 11.0-11.3 ms; widened into float32 buffers first and read by this tile: 16.1-16.2 */
                    else if (c->fmt == GB_Q8_0) { if (qwen) GQA_F16T(128, 128, M8_Q8); else GQA_F16T(Dh, Dv, M8_Q8); }
                    else { if (qwen) GQA_F16T(128, 128, M8_Q4); else GQA_F16T(Dh, Dv, M8_Q4); }
#undef GQA_F16T
                    t += n;
                    continue;
                }
#endif
                if (t == t0) /* the pipeline's first tile */
                    for (int64_t u = t; u < t1 && u < t + tl; u++) {
                        __builtin_prefetch(gb_kvcache_k_ptr(c, layer, h, u), 0, 2);
                        __builtin_prefetch(gb_kvcache_v_ptr(c, layer, h, u), 0, 2);
                    }
                /* keep GB_ATTN_PF_TILES tiles in flight: at the first tile ask for all of them, then
                 * for the one GB_ATTN_PF_TILES ahead */
                for (int64_t a = 1, u = t + n; a <= GB_ATTN_PF_TILES && u < t1; a++) {
                    const int64_t nu = gb_attn_tile_len_max(u, t1, bs, tl);
                    if (a == GB_ATTN_PF_TILES || t == t0) {
                        gb_attn_prefetch(gb_kvcache_k_ptr(c, layer, h, u), nu * c->k_row_bytes);
                        gb_attn_prefetch(gb_kvcache_v_ptr(c, layer, h, u), nu * c->v_row_bytes);
                    }
                    u += nu;
                }
                const float *kr = gb_attn_rows(c->fmt, gb_kvcache_k_ptr(c, layer, h, t), n * Dh, kbuf);
                const float *vr = gb_attn_rows(c->fmt, gb_kvcache_v_ptr(c, layer, h, t), n * Dv, vbuf);
#if GB_ATTN_HAVE_LANES
                if (lanes) {
                    for (int64_t b = 0; b < rn; b += GB_ATTN_LANES) {
                        const int64_t nb = rn - b < GB_ATTN_LANES ? rn - b : GB_ATTN_LANES;
                        if (t == t0) gb_attn_lanes_pack(qs + b * Dh, nb, Dh, qT + b * Dh);
                        gb_attn_tile_lanes(qT + b * Dh, nb, Dh, kr, Dh, vr, Dv, Dv, n, t, lr ? lr + b : NULL,
                                           lw ? lw + b : NULL, softcap, m + b, l + b, o + b * Dv, sbuf);
                    }
                } else
#endif
                    gb_attn_tile_ex(qs, rn, Dh, kr, Dh, vr, Dv, Dv, n, t, lr, lw, softcap, m, l, o, sbuf);
                t += n;
            }
        }
        gb_ws_free(qs);
        gb_ws_free(sbuf);
        gb_ws_free(kbuf);
        gb_ws_free(vbuf);
        gb_ws_free(qb);
        gb_ws_free(qT);
    }
    if (failed) goto done;
    /* Combine the splits: kv head h, token i -> query heads h*G .. h*G+G-1 of token i. */
#pragma omp parallel for schedule(static) collapse(2) if (T * Hq * Dv > 65536)
    for (int64_t h = 0; h < Hkv; h++)
        for (int64_t i = 0; i < T; i++) {
            const int64_t base = h * nr + i * G;
            gb_attn_combine_sink(G, Dv, S, Hkv * nr, pm + base, pl + base, po + base * Dv, sinks ? sinks + h * G : NULL,
                                 out + (i * Hq + h * G) * Dv, Dv);
        }
    if (g8_dp) gb_attn_bf16_unpermute(out, T * Hq, Dv); /* the combine works lane by lane */
done:
    gb_ws_free(pm);
    gb_ws_free(pl);
    gb_ws_free(po);
    gb_ws_free(lim);
    gb_ws_free(lo);
    if (failed) return gb_error(GB_ENOMEM, "gqa_attention: out of memory");
    return GB_OK;
}

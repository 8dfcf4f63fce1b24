/* attn_tile_f16.h: the decode tile on 8 lanes, shared by MLA and GQA decode (named for its first
 * format, f16; it also reads bf16, q8_0 and q4_0 rows, and float32 ones).
 *
 * For CPUs with AVX2 + FMA + F16C but no AVX-512 (Zen 2/3, Intel client cores); AVX-512 builds have
 * their own (attention_mla.c's md_tile, attention_gqa.c's gqa_decode_g8). A few query rows (decode:
 * MLA's H heads, GQA's G heads of one KV head; small T: T x those) against one tile of cache rows,
 * widened in registers as the micro-kernels read them (f16 by vcvtph2ps, bf16 by a 16-bit shift, q8_0
 * and q4_0 as d * q with the block's scale read once per 32 values: each the stored value exactly; no
 * float32 copy of the tile):
 *   scores  (RB <= 6 rows x 2 keys) register blocks, or (RB <= 4 x 3 keys): per 8 dims the widened
 *           keys and RB query loads feed KB x RB FMAs (12 accumulators + the keys + 1 query of the 16
 *           ymm registers); one horizontal reduction per 4 dot products, stored key-major (s[key][row]).
 *   softmax online, float32, 8 rows per vector over the key-major scores (masked to each row's lim).
 *   p*V     (RB <= 6 rows x 16 columns) blocks: per key 2 widened value vectors and RB broadcast p's
 *           feed 2 x RB FMAs; o is read (scaled by the softmax's alpha) and written once per tile and block.
 * Rows are cut into equal blocks of <= 6 (GLM-4.7-Flash's 20 heads: 4 x 5; GQA's 8: 2 x 4). float32
 * arithmetic throughout, each score one sum in dimension order per lane. Measured on a Zen 3:
 * bench/results/attention_decode_avx2_zen3_s15_2026-12-03.md. Everything here is static inline, so
 * each caller compiles it with its own constant sizes and row format. */
#ifndef GB_ATTN_TILE_F16_H
#define GB_ATTN_TILE_F16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention_gqa.h"
#include "common.h"

/* floats of the decode tiles' score/alpha buffer for nr rows (this one's and AVX-512's md_tile): key-major
 * scores, rows padded to whole 16-lane vectors */
#define GB_ATTN_F16_SBUF(nr) (((nr) + 15) / 16 * 16 * (GB_ATTN_TILE + 1))

#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_ATTN_F16_AVX2 1
#include <immintrin.h>

#define M8_RB 6

/* the sums of a, b, c, d across their 8 lanes, in lanes 0..3 */
static inline __attribute__((always_inline)) __m128 m8_reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 x = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
}

/* The cache row formats the tile reads (a constant at each call site) */
#define M8_F16 0
#define M8_BF16 1
#define M8_Q8 2 /* ggml's q8_0: blocks of 32 int8 after an f16 scale, 34 bytes */
#define M8_F32 3 /* float32 rows (another format widened into a buffer first) */
#define M8_Q4 4 /* ggml's q4_0: blocks of 16 bytes of nibbles (value j low, j + 16 high) after an f16 scale, 18 bytes */
#define M8_BLOCKED(FMT) ((FMT) == M8_Q8 || (FMT) == M8_Q4)

/* values d .. d+7 of a row, widened to float32: f16 by vcvtph2ps, bf16 by a 16-bit shift (both exact);
 * q8_0 / q4_0 (d % 8 == 0, so within one block): the integers (q4_0: nibble - 8), unscaled (m8_scale) */
static inline __attribute__((always_inline)) __m256 m8_ld(const uint8_t *row, int64_t d, const int FMT) {
    if (FMT == M8_Q8)
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(row + (d >> 5) * 34 + 2 + (d & 31)))));
    if (FMT == M8_Q4) {
        const int64_t o = d & 31;
        const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(row + (d >> 5) * 18 + 2 + (o & 15))));
        const __m256i w = o < 16 ? _mm256_and_si256(b, _mm256_set1_epi32(15)) : _mm256_srli_epi32(b, 4);
        return _mm256_cvtepi32_ps(_mm256_sub_epi32(w, _mm256_set1_epi32(8)));
    }
    if (FMT == M8_F32) return _mm256_loadu_ps((const float *)row + d);
    const __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * d));
    if (FMT == M8_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* the scale of the q8_0 / q4_0 block holding value d of a row, in every lane (d * q: the stored value,
 * as gb_decode_row makes it: one float32 product) */
static inline __attribute__((always_inline)) __m256 m8_scale(const uint8_t *row, int64_t d, const int FMT) {
    uint16_t h;
    memcpy(&h, row + (d >> 5) * (FMT == M8_Q4 ? 18 : 34), 2);
    return _mm256_set1_ps(_cvtsh_ss(h));
}

#define M8_RT(i, X) if (RB > i) { X(i) }
#define M8_ROWS(X) M8_RT(0, X) M8_RT(1, X) M8_RT(2, X) M8_RT(3, X) M8_RT(4, X) M8_RT(5, X)
#define M8_SFMA(i)                                                                                 \
    {                                                                                              \
        __m256 qv = _mm256_loadu_ps(q + i * dk + d);                                               \
        __asm__("" : "+x"(qv));                                                                    \
        a##i##0 = _mm256_fmadd_ps(qv, k0, a##i##0);                                                \
        if (KB > 1) a##i##1 = _mm256_fmadd_ps(qv, k1, a##i##1);                                    \
        if (KB > 2) a##i##2 = _mm256_fmadd_ps(qv, k2, a##i##2);                                    \
    }
#define M8_SPUT(i) { acc[0][i] = a##i##0; if (KB > 1) acc[1][i] = a##i##1; if (KB > 2) acc[2][i] = a##i##2; }
/* s[t * sld + i] = q_i . k_t for RB <= 6 rows x KB (1 to 3) keys ks bytes apart, dk a multiple of 8 (q8_0: of 32) */
static inline __attribute__((always_inline)) void m8_score_mk(const float *q, int64_t dk, const uint8_t *k, int64_t ks,
                                                              float *s, int64_t sld, const int RB, const int KB, const int FMT) {
    __m256 a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32, a40, a41, a42, a50, a51, a52;
    a00 = a01 = a02 = a10 = a11 = a12 = a20 = a21 = a22 = a30 = a31 = a32 = a40 = a41 = a42 = a50 = a51 = a52 =
        _mm256_setzero_ps();
    if (M8_BLOCKED(FMT)) /* a block at a time: each key's scale read once per 32 values */
        for (int64_t d0 = 0; d0 < dk; d0 += 32) {
            const __m256 s0 = m8_scale(k, d0, FMT), s1 = KB > 1 ? m8_scale(k + ks, d0, FMT) : s0,
                         s2 = KB > 2 ? m8_scale(k + 2 * ks, d0, FMT) : s0;
            for (int64_t d = d0; d < d0 + 32; d += 8) {
                const __m256 k0 = _mm256_mul_ps(m8_ld(k, d, FMT), s0);
                const __m256 k1 = KB > 1 ? _mm256_mul_ps(m8_ld(k + ks, d, FMT), s1) : k0;
                const __m256 k2 = KB > 2 ? _mm256_mul_ps(m8_ld(k + 2 * ks, d, FMT), s2) : k0;
                M8_ROWS(M8_SFMA)
            }
        }
    else
        for (int64_t d = 0; d < dk; d += 8) {
            const __m256 k0 = m8_ld(k, d, FMT);
            const __m256 k1 = KB > 1 ? m8_ld(k + ks, d, FMT) : k0;
            const __m256 k2 = KB > 2 ? m8_ld(k + 2 * ks, d, FMT) : k0;
            M8_ROWS(M8_SFMA)
        }
    __m256 acc[3][M8_RB], rest[12];
    M8_ROWS(M8_SPUT)
    const __m256 z = _mm256_setzero_ps();
    int nrest = 0;
    for (int t = 0; t < KB; t++) {
        int i = 0;
        for (; i + 4 <= RB; i += 4) _mm_storeu_ps(s + t * sld + i, m8_reduce4(acc[t][i], acc[t][i + 1], acc[t][i + 2], acc[t][i + 3]));
        for (; i < RB; i++) rest[nrest++] = acc[t][i];
    }
    if (nrest) { /* the rows past the last whole four, both keys': key t's at sum[t * nl + i] */
        float sum[12];
        for (int j = 0; j < nrest; j += 4)
            _mm_storeu_ps(sum + j, m8_reduce4(rest[j], j + 1 < nrest ? rest[j + 1] : z, j + 2 < nrest ? rest[j + 2] : z,
                                              j + 3 < nrest ? rest[j + 3] : z));
        const int r4 = RB / 4 * 4, nl = RB - r4;
        for (int t = 0; t < KB; t++)
            for (int i = 0; i < nl; i++) s[t * sld + r4 + i] = sum[t * nl + i];
    }
}

/* o[i][c0, c0 + 16) = alpha[i] o[i] + sum_j p[j * ps + i] v_j[c0, c0 + 16) for RB <= 6 rows, nt value rows vs bytes apart */
#define M8_PINIT(i)                                                                                \
    {                                                                                              \
        const __m256 al = _mm256_set1_ps(alpha[i]);                                                \
        c##i##0 = _mm256_mul_ps(al, _mm256_loadu_ps(o + i * dv + c0));                            \
        c##i##1 = _mm256_mul_ps(al, _mm256_loadu_ps(o + i * dv + c0 + 8));                         \
    }
#define M8_PFMA(i)                                                                                 \
    {                                                                                              \
        const __m256 pb = _mm256_broadcast_ss(p + j * ps + i);                                     \
        c##i##0 = _mm256_fmadd_ps(pb, v0, c##i##0);                                                \
        c##i##1 = _mm256_fmadd_ps(pb, v1, c##i##1);                                                \
    }
#define M8_PSTORE(i) { _mm256_storeu_ps(o + i * dv + c0, c##i##0); _mm256_storeu_ps(o + i * dv + c0 + 8, c##i##1); }
static inline __attribute__((always_inline)) void m8_pv_mk(const float *p, int64_t ps, int64_t nt, const uint8_t *v,
                                                           int64_t vs, float *o, int64_t dv, int64_t c0,
                                                           const float *alpha, const int RB, const int FMT) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    M8_ROWS(M8_PINIT)
    for (int64_t j = 0; j < nt; j++) {
        const uint8_t *vj = v + j * vs;
        __m256 v0 = m8_ld(vj, c0, FMT), v1 = m8_ld(vj, c0 + 8, FMT);
        if (M8_BLOCKED(FMT)) { /* c0 % 16 == 0: both in one block */
            const __m256 sc = m8_scale(vj, c0, FMT);
            v0 = _mm256_mul_ps(v0, sc);
            v1 = _mm256_mul_ps(v1, sc);
        }
        M8_ROWS(M8_PFMA)
    }
    M8_ROWS(M8_PSTORE)
}

#define M8_SCORE(RB, KB) m8_score_mk(qr, dk, k + j * ks, ks, s + j * sr + r, sr, RB, KB, FMT)
#define M8_SCORE_RB(RB)                                                                            \
    {                                                                                              \
        if (RB <= 4 && kstep == 3 && nt - j >= 3) M8_SCORE(RB, 3);                                             \
        else if (nt - j >= 2) M8_SCORE(RB, 2);                                                     \
        else M8_SCORE(RB, 1);                                                                      \
    }                                                                                              \
    break
#define M8_PV(RB) m8_pv_mk(s + r, sr, nt, v, vs, o + r * dv, dv, c0, alpha + r, RB, FMT); break


/* The online-softmax tile (gb_attn_tile's contract: q scaled float32 [nr][dk], lim (NULL: every row
 * sees all nt keys), running m, l, o[nr][dv]) for keys at k + j*ks and values at v + j*vs (bytes) in
 * format FMT (M8_F16, M8_BF16, M8_Q8, M8_Q4, M8_F32; a constant at each call site);
 * dk % 8 == 0, dv % 16 == 0 (q8_0 / q4_0: dk and dv % 32 == 0), nt <= GB_ATTN_TILE; sbuf: GB_ATTN_F16_SBUF(nr) floats. pf (may be
 * NULL): pf_bytes to prefetch (the next tile), spread over the score micro-kernels (all at once,
 * they stall the core on its few miss buffers: GQA decode with gb_attn_prefetch ahead of each tile
 * spent 17% of its samples in the prefetch loop); pf2 (may be NULL): pf2_bytes more (GQA: the next
 * tile's values), spread over the p*V micro-kernels. */
static inline __attribute__((always_inline)) void gb_attn_tile_f16_8(const float *q, int64_t nr, const int64_t dk, const uint8_t *k,
                                                          const int64_t ks, const uint8_t *v, const int64_t vs,
                                                          const int64_t dv, int64_t nt, int64_t t0, const int64_t *lim,
                                                          float *m, float *l, float *o, float *sbuf, const void *pf,
                                                          int64_t pf_bytes, const void *pf2, int64_t pf2_bytes, const int FMT) {
    const char *pfp = (const char *)pf, *pfe = pfp ? pfp + pf_bytes : NULL;
    const char *pfp2 = (const char *)pf2, *pfe2 = pfp2 ? pfp2 + pf2_bytes : NULL;
    int64_t r0 = 0;
    if (lim)
        while (r0 < nr && lim[r0] <= t0) r0++; /* rows that see none of these keys: before them */
    if (r0 < nr && nt > 0) {
        const int64_t nr_all = nr;
        q += r0 * dk;
        nr -= r0;
        m += r0;
        l += r0;
        o += r0 * dv;
        if (lim) lim += r0;
        const int64_t sr = (nr_all + 15) / 16 * 16; /* s[j * sr + r]: key-major, rows padded to whole vectors */
        float *s = sbuf, *alpha = sbuf + GB_ATTN_TILE * sr;
        const int64_t nb = (nr + M8_RB - 1) / M8_RB, rb = (nr + nb - 1) / nb; /* equal row blocks of <= 6 */
        const int64_t kstep = rb <= 4 ? 3 : 2, ncall = nb * ((nt + kstep - 1) / kstep); /* keys per score call */
        const int64_t pf_n = pfp ? (pf_bytes / 64 + ncall - 1) / ncall : 0;
        for (int64_t r = 0; r < nr; r += rb) {
            const float *qr = q + r * dk;
            for (int64_t j = 0; j < nt; j += kstep) {
                switch (nr - r >= rb ? rb : nr - r) {
                case 6: M8_SCORE_RB(6);
                case 5: M8_SCORE_RB(5);
                case 4: M8_SCORE_RB(4);
                case 3: M8_SCORE_RB(3);
                case 2: M8_SCORE_RB(2);
                default: M8_SCORE_RB(1);
                }
                if (pfp) gb_attn_pf_step(&pfp, pfe, pf_n);
            }
        }
        /* online softmax, 8 rows per vector (s key-major): s becomes p, 0 past each row's lim; the
         * lanes past nr read the padding of s and are masked out */
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        for (int64_t z0 = 0; z0 < nr; z0 += 8) {
            const int nv = nr - z0 < 8 ? (int)(nr - z0) : 8;
            int32_t hi[8];
            float mo[8], lo[8], mn[8], ln[8];
            for (int i = 0; i < 8; i++) {
                const int64_t h = i >= nv ? 0 : lim ? lim[z0 + i] - t0 : nt;
                hi[i] = (int32_t)(h > nt ? nt : h);
                mo[i] = i < nv ? m[z0 + i] : -INFINITY;
                lo[i] = i < nv ? l[z0 + i] : 0.0f;
            }
            const __m256i hv = _mm256_loadu_si256((const __m256i *)hi);
            __m256 mx = ninf;
            for (int64_t j = 0; j < nt; j++) {
                const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(hv, _mm256_set1_epi32((int)j)));
                mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, _mm256_loadu_ps(s + j * sr + z0)), keep);
            }
            const __m256 mold = _mm256_loadu_ps(mo), mnew = _mm256_max_ps(mold, mx);
            /* alpha = e^(m_old - m_new), 0 where m_old = -inf (no key yet: o is 0) */
            const __m256 al = _mm256_and_ps(_mm256_cmp_ps(mold, ninf, _CMP_NEQ_OQ), gb_exp256(_mm256_sub_ps(mold, mnew)));
            __m256 sum = _mm256_setzero_ps();
            for (int64_t j = 0; j < nt; j++) {
                float *sp = s + j * sr + z0;
                const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(hv, _mm256_set1_epi32((int)j)));
                const __m256 pj = _mm256_and_ps(keep, gb_exp256(_mm256_sub_ps(_mm256_loadu_ps(sp), mnew)));
                _mm256_storeu_ps(sp, pj);
                sum = _mm256_add_ps(sum, pj);
            }
            _mm256_storeu_ps(ln, _mm256_fmadd_ps(_mm256_loadu_ps(lo), al, sum));
            _mm256_storeu_ps(mn, mnew);
            _mm256_storeu_ps(alpha + z0, al);
            for (int i = 0; i < nv; i++) {
                l[z0 + i] = ln[i];
                m[z0 + i] = mn[i];
            }
        }
        const int64_t pb = rb; /* p*V in the same equal blocks (blocks of 6 then the rest: 20 rows 7% slower) */
        const int64_t pcall = ((nr + pb - 1) / pb) * (dv / 16), pf2_n = pfp2 ? (pf2_bytes / 64 + pcall - 1) / pcall : 0;
        for (int64_t c0 = 0; c0 < dv; c0 += 16)
            for (int64_t r = 0; r < nr; r += pb) {
                if (pfp2) gb_attn_pf_step(&pfp2, pfe2, pf2_n);
                switch (nr - r >= pb ? pb : nr - r) {
                case 6: M8_PV(6);
                case 5: M8_PV(5);
                case 4: M8_PV(4);
                case 3: M8_PV(3);
                case 2: M8_PV(2);
                default: M8_PV(1);
                }
            }
    }
    if (pfp) gb_attn_pf_step(&pfp, pfe, pf_bytes); /* whatever is left */
    if (pfp2) gb_attn_pf_step(&pfp2, pfe2, pf2_bytes);
}
#else
#define GB_ATTN_F16_AVX2 0
#endif
#endif /* GB_ATTN_TILE_F16_H */

/* quant_iq.c: ggml's iq4_nl and mxfp4 (32-value blocks, 4-bit indices into a non-linear table,
 * one scale per block) as stored: dequantize and the quantized linear (decode GEMV and prefill
 * GEMM share one driver). See quant_iq.h for the layouts and the arithmetic both versions follow.
 *
 * Driver: activations quantized to q8_0 once per call and laid out for the dot (int8 values padded
 * to whole groups of 16 blocks, per-block float scale and 128 * sum in lane order); tokens in chunks
 * whose activations stay in L2; OpenMP over weight rows. Per (row, chunk) the row is decoded once
 * into unsigned bytes kvalue + 128 and lane-ordered float scales (one contiguous read of the row as
 * stored, no repacked copy), then dotted with every token of the chunk from L1. */
#include "quant_iq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common.h"
#include "quant.h"
#include "quant_k.h"

#define QB 32

static inline float h2f(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return gb_f16_to_f32(h);
#endif
}

/* ggml-common.h kvalues_iq4nl and kvalues_mxfp4 (E2M1 doubled) */
static const int8_t kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const int8_t kv_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
/* float lane l of a group of 16 blocks holds block lane_blk[l] (the order the VNNI reduction gives) */
static const int lane_blk[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

int gb_is_iqfmt(int fmt) { return fmt == GB_IQ4_NL || fmt == GB_MXFP4; }

static inline int64_t iq_blk_bytes(int fmt) { return fmt == GB_IQ4_NL ? 18 : 17; }
static inline int iq_head(int fmt) { return fmt == GB_IQ4_NL ? 2 : 1; }
static inline const int8_t *iq_table(int fmt) { return fmt == GB_IQ4_NL ? kv_iq4nl : kv_mxfp4; }

int64_t gb_iq_row_bytes(int fmt, int64_t n) {
    if (!gb_is_iqfmt(fmt) || n < 0 || n % QB) return -1;
    return n / QB * iq_blk_bytes(fmt);
}

/* ggml's GGML_E8M0_TO_FP32_HALF: 2^(e - 128) as float bits */
static inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline float blk_scale(int fmt, const uint8_t *b) { return fmt == GB_IQ4_NL ? h2f(b) : e8m0_half(b[0]); }

/* ---- dequantize: d * (float)kvalue, float32, as ggml and the gguf package ---------------------- */

static void dequantize_row_iq(int fmt, const uint8_t *src, float *y, int64_t k) {
    const int8_t *kv = iq_table(fmt);
    const int64_t bb = iq_blk_bytes(fmt);
    const int hd = iq_head(fmt);
    for (int64_t i = 0; i < k / QB; i++) {
        const uint8_t *b = src + i * bb, *qs = b + hd;
        const float d = blk_scale(fmt, b);
        for (int j = 0; j < 16; j++) {
            y[QB * i + j] = d * (float)kv[qs[j] & 0x0f];
            y[QB * i + 16 + j] = d * (float)kv[qs[j] >> 4];
        }
    }
}

int gb_iq_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k) {
    const int64_t rb = gb_iq_row_bytes(fmt, k);
    if (rb < 0) return gb_error(GB_EVALUE, "dequantize: format %d with k=%ld is not an iq4_nl/mxfp4 row (k %% 32 == 0)", fmt, (long)k);
#pragma omp parallel for schedule(static) if (rows * k > 1 << 18)
    for (int64_t r = 0; r < rows; r++) dequantize_row_iq(fmt, (const uint8_t *)src + r * rb, y + r * k, k);
    return GB_OK;
}

/* ---- one row decoded for the dot: u = kvalue + 128 (nbp blocks, padding 128), dwp in lane order -- */

static __attribute__((noinline)) void decode_row_ref(int fmt, const uint8_t *restrict src, int64_t nb, int64_t nbp,
                                                     uint8_t *restrict u, float *restrict dwp) {
    const int8_t *kv = iq_table(fmt);
    const int64_t bb = iq_blk_bytes(fmt);
    const int hd = iq_head(fmt);
    for (int64_t i = 0; i < nbp; i++) {
        uint8_t *ub = u + QB * i;
        if (i >= nb) {
            memset(ub, 128, QB);
            continue;
        }
        const uint8_t *qs = src + i * bb + hd;
        for (int j = 0; j < 16; j++) {
            ub[j] = (uint8_t)(kv[qs[j] & 0x0f] + 128);
            ub[16 + j] = (uint8_t)(kv[qs[j] >> 4] + 128);
        }
    }
    for (int64_t c = 0; c < nbp / 16; c++)
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * c + lane_blk[l];
            dwp[16 * c + l] = b < nb ? blk_scale(fmt, src + b * bb) : 0.0f;
        }
}

static inline float reduce16(const float lane[16]) {
    float h8[8], h4[4], h2[2];
    for (int i = 0; i < 8; i++) h8[i] = lane[i] + lane[i + 8];
    for (int i = 0; i < 4; i++) h4[i] = h8[i] + h8[i + 4];
    for (int i = 0; i < 2; i++) h2[i] = h4[i] + h4[i + 2];
    return h2[0] + h2[1];
}

/* one (row, token): nc groups of 16 blocks */
static float dot_ref(const uint8_t *u, const float *dwp, const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t nc) {
    float lane[16] = {0};
    for (int64_t c = 0; c < nc; c++)
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * c + lane_blk[l];
            int32_t s = 0;
            for (int j = 0; j < QB; j++) s += (int32_t)u[QB * b + j] * (int32_t)xq[QB * b + j];
            s -= xsp[16 * c + l];
            lane[l] += (dwp[16 * c + l] * dxp[16 * c + l]) * (float)s;
        }
    return reduce16(lane);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define GB_HAVE_IQ_VNNI 1

static void row_scales_vnni(int fmt, const uint8_t *restrict src, int64_t nb, int64_t nbp, float *restrict dwp);
static inline __attribute__((always_inline)) __m512 group_scales(int fmt, const uint8_t *src, int64_t nb, int64_t c);

/* noinline, restrict: inlined into the OpenMP body, the byte stores to u could alias its shared
 * variables and the compiler reloaded them every block */
static __attribute__((noinline)) void decode_row_vnni(int fmt, const uint8_t *restrict src, int64_t nb, int64_t nbp,
                                                      uint8_t *restrict u, float *restrict dwp) {
    const int8_t *kv = iq_table(fmt);
    uint8_t t8[16];
    for (int j = 0; j < 16; j++) t8[j] = (uint8_t)(kv[j] + 128);
    const __m128i tbl = _mm_loadu_si128((const __m128i *)t8), m4 = _mm_set1_epi8(0x0f);
    const int64_t bb = iq_blk_bytes(fmt);
    const int hd = iq_head(fmt);
    for (int64_t i = 0; i < nb; i++) {
        const __m128i q = _mm_loadu_si128((const __m128i *)(src + i * bb + hd));
        uint8_t *up = u + 128 * (i / 4) + 16 * (i % 4); /* quad layout: lo(4i..4i+3), hi(4i..4i+3) */
        _mm_store_si128((__m128i *)up, _mm_shuffle_epi8(tbl, _mm_and_si128(q, m4)));
        _mm_store_si128((__m128i *)(up + 64), _mm_shuffle_epi8(tbl, _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
    }
    for (int64_t i = nb; i < nbp; i++) {
        memset(u + 128 * (i / 4) + 16 * (i % 4), 128, 16);
        memset(u + 128 * (i / 4) + 16 * (i % 4) + 64, 128, 16);
    }
    row_scales_vnni(fmt, src, nb, nbp, dwp);
}

/* the scales in lane order, 16 at a time: one gather of the 4 bytes at each block's start
 * (inside the block: 17 or 18 bytes), then f16 -> f32 or E8M0 -> 2^(e-128), as blk_scale */
/* the scales of blocks 16c + lane_blk[l] in lane order: one gather of the 4 bytes at each block's
 * start (inside the block: 17 or 18 bytes), then f16 -> f32 or E8M0 -> 2^(e-128), as blk_scale;
 * 0 past the row */
static inline __attribute__((always_inline)) __m512 group_scales(int fmt, const uint8_t *src, int64_t nb, int64_t c) {
    const int64_t bb = iq_blk_bytes(fmt);
    const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const __m512i off = _mm512_mullo_epi32(perm, _mm512_set1_epi32((int)bb));
    const int64_t left = nb - 16 * c;
    const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)_mm512_cmplt_epi32_mask(perm, _mm512_set1_epi32((int)left));
    const __m512i raw = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, off, (const void *)(src + 16 * c * bb), 1);
    __m512 d;
    if (fmt == GB_IQ4_NL) {
        d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_and_si512(raw, _mm512_set1_epi32(0xffff))));
    } else {
        const __m512i e = _mm512_and_si512(raw, _mm512_set1_epi32(0xff));
        const __m512i big = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        d = _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2)), big, small));
    }
    return _mm512_maskz_mov_ps(m, d);
}

static void row_scales_vnni(int fmt, const uint8_t *restrict src, int64_t nb, int64_t nbp, float *restrict dwp) {
    for (int64_t c = 0; c < nbp / 16; c++) _mm512_storeu_ps(dwp + 16 * c, group_scales(fmt, src, nb, c));
}

/* The VNNI row kernels read weights and activations in quad layout: per 4 blocks 128 bytes
 * lo(4i) .. lo(4i+3) hi(4i) .. hi(4i+3) (16 bytes each: elements 0-15 and 16-31 of a block). */
static inline __attribute__((always_inline)) __m512i dot16_reduce(__m512i *v);

/* one (row, token) with the row decoded in registers (T = 1: no store and reload of the decode) */
static __attribute__((noinline)) float dot_vnni_fused(int fmt, const uint8_t *restrict src, int64_t nb,
                                                      const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t nc) {
    const int8_t *kv = iq_table(fmt);
    uint8_t t8[16];
    for (int j = 0; j < 16; j++) t8[j] = (uint8_t)(kv[j] + 128);
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t8)), m4 = _mm512_set1_epi8(0x0f);
    const int64_t bb = iq_blk_bytes(fmt);
    const int hd = iq_head(fmt);
    const __m512i z = _mm512_setzero_si512();
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < nc; c++) {
        const int8_t *xc = xq + 512 * c;
        __m512i v[4];
        for (int i = 0; i < 4; i++) {
            const int64_t b0 = 16 * c + 4 * i;
            __m512i q;
            if (b0 + 3 < nb) {
                q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(src + b0 * bb + hd)));
                q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + (b0 + 1) * bb + hd)), 1);
                q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + (b0 + 2) * bb + hd)), 2);
                q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + (b0 + 3) * bb + hd)), 3);
            } else {
                q = _mm512_setzero_si512();
                if (b0 < nb) q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + b0 * bb + hd)), 0);
                if (b0 + 1 < nb) q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + (b0 + 1) * bb + hd)), 1);
                if (b0 + 2 < nb) q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *)(src + (b0 + 2) * bb + hd)), 2);
            }
            const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(q, m4));
            const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
            v[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, lo, _mm512_load_si512((const void *)(xc + 128 * i))), hi,
                                       _mm512_load_si512((const void *)(xc + 128 * i + 64)));
        }
        const __m512i s = _mm512_sub_epi32(dot16_reduce(v), _mm512_loadu_si512((const void *)(xsp + 16 * c)));
        /* the scales after the group's blocks were loaded (a gather of lines already in L1) */
        const __m512 p = _mm512_mul_ps(_mm512_mul_ps(group_scales(fmt, src, nb, c), _mm512_loadu_ps(dxp + 16 * c)), _mm512_cvtepi32_ps(s));
        acc = _mm512_add_ps(acc, p);
    }
    const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* v[i] (quad layout): 128-bit lane k holds 4 partial sums of block 4i + k -> one zmm of 16 block
 * sums, lane 4k + j block 4j + k (= lane_blk) */
static inline __attribute__((always_inline)) __m512i dot16_reduce(__m512i *v) {
    const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[0], v[1]), _mm512_unpackhi_epi32(v[0], v[1]));
    const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2], v[3]), _mm512_unpackhi_epi32(v[2], v[3]));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
}

static float dot_vnni(const uint8_t *u, const float *dwp, const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t nc) {
    __m512 acc = _mm512_setzero_ps();
    const __m512i z = _mm512_setzero_si512();
    for (int64_t c = 0; c < nc; c++) {
        const uint8_t *uc = u + 512 * c;
        const int8_t *xc = xq + 512 * c;
        __m512i v[4];
        for (int i = 0; i < 4; i++)
            v[i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, _mm512_load_si512((const void *)(uc + 128 * i)),
                                                           _mm512_load_si512((const void *)(xc + 128 * i))),
                                       _mm512_load_si512((const void *)(uc + 128 * i + 64)), _mm512_load_si512((const void *)(xc + 128 * i + 64)));
        const __m512i s = _mm512_sub_epi32(dot16_reduce(v), _mm512_loadu_si512((const void *)(xsp + 16 * c)));
        const __m512 p = _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(dwp + 16 * c), _mm512_loadu_ps(dxp + 16 * c)), _mm512_cvtepi32_ps(s));
        acc = _mm512_add_ps(acc, p);
    }
    const __m256 h8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    const __m128 h4 = _mm_add_ps(_mm256_castps256_ps128(h8), _mm256_extractf128_ps(h8, 1));
    const __m128 h2 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
    return _mm_cvtss_f32(_mm_add_ss(h2, _mm_shuffle_ps(h2, h2, 1)));
}

/* Prefill: the 16 rows of a group decoded once per call into a panel where, per block, zmm z holds
 * bytes 4z..4z+3 of each of the 16 rows (kvalue + 128) and a float[16] holds the rows' scales; one
 * vpdpbusd per (4 weights of 16 rows, token) with the token's 4 activation bytes broadcast. Per
 * (row, token) the 16 float lanes of quant_iq.h live in memory (acc[t][lane][row], L1), so the
 * arithmetic is exactly the row kernel's: block b goes to lane pos[b % 16], in block order. */
typedef struct {
    uint8_t q[8][64];
    float d[16];
} ipanel;

static const int lane_pos[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}; /* lane_blk is its own inverse */

static void ipanel_fill(int fmt, const uint8_t *w, int64_t rb, int nr, int64_t nb, ipanel *P) {
    const int8_t *kv = iq_table(fmt);
    uint8_t t8[16];
    for (int j = 0; j < 16; j++) t8[j] = (uint8_t)(kv[j] + 128);
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t8)), m4 = _mm512_set1_epi8(0x0f);
    const __m512i i0 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13), i1 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const int64_t bb = iq_blk_bytes(fmt);
    const int hd = iq_head(fmt);
    for (int64_t b = 0; b < nb; b++) {
        /* Z[i]: row i's 32 values (8 dwords) in its low half, row i + 8's in its high half */
        __m512i Z[8], t[8], u[8];
        for (int i = 0; i < 8; i++) {
            const __m128i qa = i < nr ? _mm_loadu_si128((const __m128i *)(w + i * rb + b * bb + hd)) : _mm_setzero_si128();
            const __m128i qb = i + 8 < nr ? _mm_loadu_si128((const __m128i *)(w + (i + 8) * rb + b * bb + hd)) : _mm_setzero_si128();
            const __m256i a = _mm256_inserti128_si256(_mm256_castsi128_si256(qa), qb, 1);
            __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(a), _mm256_srli_epi16(a, 4), 1); /* qa qb qa>>4 qb>>4 */
            z = _mm512_shuffle_i32x4(z, z, _MM_SHUFFLE(3, 1, 2, 0));                                /* qa qa>>4 qb qb>>4 */
            Z[i] = _mm512_shuffle_epi8(tbl, _mm512_and_si512(z, m4));
        }
        /* 8 x 8 dword transpose in both halves at once */
        for (int i = 0; i < 4; i++) {
            t[2 * i] = _mm512_unpacklo_epi32(Z[2 * i], Z[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(Z[2 * i], Z[2 * i + 1]);
        }
        for (int h = 0; h < 2; h++) {
            u[4 * h + 0] = _mm512_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
            u[4 * h + 1] = _mm512_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
            u[4 * h + 2] = _mm512_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
            u[4 * h + 3] = _mm512_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
        }
        for (int j = 0; j < 4; j++) {
            _mm512_store_si512((void *)P[b].q[j], _mm512_permutex2var_epi64(u[j], i0, u[4 + j]));
            _mm512_store_si512((void *)P[b].q[4 + j], _mm512_permutex2var_epi64(u[j], i1, u[4 + j]));
        }
        for (int r = 0; r < 16; r++) P[b].d[r] = r < nr ? blk_scale(fmt, w + r * rb + b * bb) : 0.0f;
    }
}

/* NG (1 or 2) groups of 16 rows x TT tokens: per 4 values of a block one load per group and one
 * broadcast per token feed NG x TT vpdpbusd, two chains per (group, token) (the 8 x 4-value chunks of
 * a block alternate between them): 16 independent chains at 2 x 4 (1 x 4 had 4, latency-bound). */
static inline __attribute__((always_inline)) void ipanel_tile(const ipanel *P0, const ipanel *P1, int64_t nb, int64_t nbp,
                                                              const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t t0,
                                                              float *y, int64_t ldy, const float *bias, __mmask16 m0, __mmask16 m1,
                                                              const int NG, const int TT) {
    __m512 acc[2][4][16];
    for (int g = 0; g < NG; g++)
        for (int t = 0; t < TT; t++)
            for (int l = 0; l < 16; l++) acc[g][t][l] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const ipanel *p[2] = {P0 + b, NG > 1 ? P1 + b : P0 + b};
        __m512i i0[2][4], i1[2][4];
        for (int g = 0; g < NG; g++)
            for (int t = 0; t < TT; t++) i0[g][t] = i1[g][t] = _mm512_setzero_si512();
        const int32_t *xb[4];
        for (int t = 0; t < TT; t++) xb[t] = (const int32_t *)(xq + (t0 + t) * nbp * QB + b * QB);
        for (int z = 0; z < 4; z++) {
            __m512i w0[2], w1[2];
            for (int g = 0; g < NG; g++) {
                w0[g] = _mm512_load_si512((const void *)p[g]->q[z]);
                w1[g] = _mm512_load_si512((const void *)p[g]->q[z + 4]);
                __asm__("" : "+v"(w0[g]), "+v"(w1[g])); /* one load per 4 values: gcc otherwise reloaded them per token */
            }
            for (int t = 0; t < TT; t++) {
                const __m512i xa = _mm512_set1_epi32(xb[t][z]), xc = _mm512_set1_epi32(xb[t][z + 4]);
                for (int g = 0; g < NG; g++) {
                    i0[g][t] = _mm512_dpbusd_epi32(i0[g][t], w0[g], xa);
                    i1[g][t] = _mm512_dpbusd_epi32(i1[g][t], w1[g], xc);
                }
            }
        }
        const int l = lane_pos[b % 16];
        const int64_t li = 16 * (b / 16) + l;
        for (int g = 0; g < NG; g++) {
            const __m512 vd = _mm512_load_ps(p[g]->d);
            for (int t = 0; t < TT; t++) {
                const __m512i s = _mm512_sub_epi32(_mm512_add_epi32(i0[g][t], i1[g][t]), _mm512_set1_epi32(xsp[(t0 + t) * nbp + li]));
                const __m512 pr = _mm512_mul_ps(_mm512_mul_ps(vd, _mm512_set1_ps(dxp[(t0 + t) * nbp + li])), _mm512_cvtepi32_ps(s));
                acc[g][t][l] = _mm512_add_ps(acc[g][t][l], pr);
            }
        }
    }
    for (int g = 0; g < NG; g++) {
        const __mmask16 m = g ? m1 : m0;
        const __m512 vb = bias ? _mm512_maskz_loadu_ps(m, bias + 16 * g) : _mm512_setzero_ps();
        for (int t = 0; t < TT; t++) {
            __m512 h8[8], h4[4], h2[2];
            for (int i = 0; i < 8; i++) h8[i] = _mm512_add_ps(acc[g][t][i], acc[g][t][i + 8]);
            for (int i = 0; i < 4; i++) h4[i] = _mm512_add_ps(h8[i], h8[i + 4]);
            for (int i = 0; i < 2; i++) h2[i] = _mm512_add_ps(h4[i], h4[i + 2]);
            _mm512_mask_storeu_ps(y + (t0 + t) * ldy + 16 * g, m, _mm512_add_ps(_mm512_add_ps(h2[0], h2[1]), vb));
        }
    }
}

#define IPANEL_ROWS(name, NG)                                                                                         \
    static void name(const ipanel *P0, const ipanel *P1, int64_t nb, int64_t nbp, const int8_t *xq, const float *dxp,  \
                     const int32_t *xsp, int64_t T, float *y, int64_t ldy, const float *bias, __mmask16 m0, __mmask16 m1) { \
        int64_t t0 = 0;                                                                                               \
        for (; t0 + 4 <= T; t0 += 4) ipanel_tile(P0, P1, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, m0, m1, NG, 4);     \
        switch (T - t0) {                                                                                             \
        case 3: ipanel_tile(P0, P1, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, m0, m1, NG, 3); break;                   \
        case 2: ipanel_tile(P0, P1, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, m0, m1, NG, 2); break;                   \
        case 1: ipanel_tile(P0, P1, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, m0, m1, NG, 1); break;                   \
        default: break;                                                                                               \
        }                                                                                                             \
    }
IPANEL_ROWS(ipanel_rows1, 1)
IPANEL_ROWS(ipanel_rows2, 2)

/* groups g0 and g0 + 1 (ng of them) of an N-row output from their panels P0, P1 */
static void ipanel_rows(int ng, const ipanel *P0, const ipanel *P1, int64_t nb, int64_t nbp, const int8_t *xq, const float *dxp,
                        const int32_t *xsp, int64_t T, float *y, int64_t ldy, const float *bias, int64_t g0, int64_t N) {
    const int nr0 = (int)(N - 16 * g0 < 16 ? N - 16 * g0 : 16), nr1 = (int)(N - 16 * (g0 + 1) < 16 ? N - 16 * (g0 + 1) : 16);
    const __mmask16 m0 = (__mmask16)((1u << nr0) - 1), m1 = ng > 1 ? (__mmask16)((1u << nr1) - 1) : m0;
    (ng > 1 ? ipanel_rows2 : ipanel_rows1)(P0, ng > 1 ? P1 : P0, nb, nbp, xq, dxp, xsp, T, y + 16 * g0, ldy, bias ? bias + 16 * g0 : NULL, m0, m1);
}
#endif

/* ---- the repacked layout (quant_iq.h): per (group of 16 rows, block) 256 bytes of nibbles, zmm k
 * (k < 4) byte 4r+i = stored qs[4k+i] of row r (low nibble value 4k+i, high nibble value 16+4k+i),
 * then the 16 rows' scales as stored (iq4_nl f16[16], mxfp4 E8M0 uint8[16]). Rows past N zero. */
int64_t gb_iqp_block_bytes(int fmt) { return !gb_is_iqfmt(fmt) ? -1 : fmt == GB_IQ4_NL ? 288 : 272; }

int64_t gb_iqp_bytes(int fmt, int64_t N, int64_t K) {
    if (!gb_is_iqfmt(fmt) || N < 0 || K <= 0 || K % QB) return -1;
    return gb_size_mul(gb_size_mul(N / 16 + (N % 16 != 0), K / QB), gb_iqp_block_bytes(fmt));
}

/* one 16-row group (nr rows from w, rb bytes apart) into the packed records; rows past nr zero */
static void iq_repack_group(int fmt, const uint8_t *w, int64_t rb, int nr, int64_t nb, uint8_t *out) {
    const int64_t bb = iq_blk_bytes(fmt), pb = gb_iqp_block_bytes(fmt);
    const int hd = iq_head(fmt);
    memset(out, 0, (size_t)(nb * pb));
    for (int64_t b = 0; b < nb; b++)
        for (int r = 0; r < nr; r++) {
            const uint8_t *blk = w + r * rb + b * bb;
            uint8_t *o = out + b * pb;
            for (int k = 0; k < 4; k++) memcpy(o + 64 * k + 4 * r, blk + hd + 4 * k, 4);
            memcpy(o + 256 + hd * r, blk, (size_t)hd);
        }
}

int gb_iqrepack(int fmt, const void *w, void *packed, int64_t N, int64_t K) {
    if (!gb_is_iqfmt(fmt)) return gb_error(GB_EVALUE, "iqrepack: format %d is not iq4_nl (20) or mxfp4 (39)", fmt);
    if (N < 0 || K <= 0 || K % QB) return gb_error(GB_EVALUE, "iqrepack: N=%ld, K=%ld (K a positive multiple of 32)", (long)N, (long)K);
    const int64_t nb = K / QB, rb = gb_iq_row_bytes(fmt, K), pb = gb_iqp_block_bytes(fmt), G = (N + 15) / 16;
#pragma omp parallel for schedule(static) if (N * K > 1 << 20)
    for (int64_t g = 0; g < G; g++)
        iq_repack_group(fmt, (const uint8_t *)w + 16 * g * rb, rb, (int)(N - 16 * g < 16 ? N - 16 * g : 16), nb, (uint8_t *)packed + g * nb * pb);
    return GB_OK;
}

/* row r of a packed group -> the portable decoded row (u, dwp as decode_row_ref gives them) */
static void decode_row_packed_ref(int fmt, const uint8_t *P, int r, int64_t nb, int64_t nbp, uint8_t *u, float *dwp) {
    const int8_t *kv = iq_table(fmt);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    const int hd = iq_head(fmt);
    for (int64_t i = 0; i < nbp; i++) {
        uint8_t *ub = u + QB * i;
        if (i >= nb) {
            memset(ub, 128, QB);
            continue;
        }
        const uint8_t *o = P + i * pb;
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 4; j++) {
                const uint8_t q = o[64 * k + 4 * r + j];
                ub[4 * k + j] = (uint8_t)(kv[q & 0x0f] + 128);
                ub[16 + 4 * k + j] = (uint8_t)(kv[q >> 4] + 128);
            }
    }
    for (int64_t c = 0; c < nbp / 16; c++)
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * c + lane_blk[l];
            dwp[16 * c + l] = b < nb ? blk_scale(fmt, P + b * pb + 256 + hd * r) : 0.0f;
        }
}

#ifdef GB_HAVE_IQ_VNNI
/* the 16 rows' scales of a packed record, float32 (blk_scale's values) */
static inline __attribute__((always_inline)) __m512 iqp_scales(int fmt, const uint8_t *s) {
    if (fmt == GB_IQ4_NL) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)s));
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)s));
    const __m512i big = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i small = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2)), big, small));
}

/* a packed group decoded into the prefill panel (ipanel_fill's result, from the packed records) */
static void ipanel_fill_packed(int fmt, const uint8_t *P, int64_t nb, ipanel *Pn) {
    const int8_t *kv = iq_table(fmt);
    uint8_t t8[16];
    for (int j = 0; j < 16; j++) t8[j] = (uint8_t)(kv[j] + 128);
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t8)), m4 = _mm512_set1_epi8(0x0f);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = P + b * pb;
        for (int k = 0; k < 5; k++) _mm_prefetch((const char *)(o + 64 * k + 24 * pb), _MM_HINT_T0); /* as iqp_tile */
        for (int k = 0; k < 4; k++) {
            const __m512i Q = _mm512_loadu_si512((const void *)(o + 64 * k));
            _mm512_store_si512((void *)Pn[b].q[k], _mm512_shuffle_epi8(tbl, _mm512_and_si512(Q, m4)));
            _mm512_store_si512((void *)Pn[b].q[4 + k], _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(Q, 4), m4)));
        }
        _mm512_store_ps(Pn[b].d, iqp_scales(fmt, o + 256));
    }
}

#ifndef GB_IQP_GEMV_PF
#define GB_IQP_GEMV_PF 0 /* 1: the GEMV tiles prefetch each record 24 records ahead (iqp_tile) */
#endif

#ifndef IQP_VPERMB
#define IQP_VPERMB 1
#endif
/* TT tokens x the 16 rows of a packed group (ipanel_tile's arithmetic, the nibbles decoded in
 * registers: one vpermb per 64 values of 16 rows where the CPU has AVX-512 VBMI, else an and-mask
 * and a vpshufb) */
static inline __attribute__((always_inline)) void iqp_tile(const int fmt, const uint8_t *P, int64_t nb, int64_t nbp, const int8_t *xq,
                                                           const float *dxp, const int32_t *xsp, int64_t t0, float *y, int64_t ldy,
                                                           __m512 vb, __mmask16 m, const int TT) {
    const int8_t *kv = iq_table(fmt);
    uint8_t t8[16];
    for (int j = 0; j < 16; j++) t8[j] = (uint8_t)(kv[j] + 128);
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t8)), m4 = _mm512_set1_epi8(0x0f);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    __m512 acc[4][16];
    for (int t = 0; t < TT; t++)
        for (int l = 0; l < 16; l++) acc[t][l] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = P + b * pb;
        __m512i i0[4], i1[4];
        for (int t = 0; t < TT; t++) i0[t] = i1[t] = _mm512_setzero_si512();
        const int32_t *xb[4];
        for (int t = 0; t < TT; t++) xb[t] = (const int32_t *)(xq + (t0 + t) * nbp * QB + b * QB);
        for (int k = 0; k < 4; k++) {
            const __m512i Q = _mm512_loadu_si512((const void *)(o + 64 * k));
            /* GB_IQP_GEMV_PF: ~6.5 KB ahead (measured best of 4-32 records on a Zen 3), every line of
             * the record; off since session 34: on a Zen 4 the hardware prefetchers alone stream the
             * GEMV from DRAM 1.07-1.14x (iq4_nl) and 1.01-1.09x (mxfp4) faster at a 60-70 GB/s read
             * probe (bench/results/kgemv_prefetch_q4k_q6k_zen4_s34_2026-12-05.md) */
            if (GB_IQP_GEMV_PF) {
                _mm_prefetch((const char *)(o + 64 * k + 24 * pb), _MM_HINT_T0);
                if (k == 3) _mm_prefetch((const char *)(o + 64 * 4 + 24 * pb), _MM_HINT_T0);
            }
#if defined(__AVX512VBMI__) && IQP_VPERMB
            /* vpermb reads the low 6 bits of each index: the 16-value table repeated 4 times takes each
             * nibble with no and-mask (as csrc/quant_k.c's iq4_xs decode): 3 ops per 64 bytes, not 5 */
            const __m512i lo = _mm512_permutexvar_epi8(Q, tbl), hi = _mm512_permutexvar_epi8(_mm512_srli_epi16(Q, 4), tbl);
            (void)m4;
#else
            const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(Q, m4));
            const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(Q, 4), m4));
#endif
            for (int t = 0; t < TT; t++) {
                i0[t] = _mm512_dpbusd_epi32(i0[t], lo, _mm512_set1_epi32(xb[t][k]));
                i1[t] = _mm512_dpbusd_epi32(i1[t], hi, _mm512_set1_epi32(xb[t][4 + k]));
            }
        }
        const int l = lane_pos[b % 16];
        const int64_t li = 16 * (b / 16) + l;
        const __m512 vd = iqp_scales(fmt, o + 256);
        for (int t = 0; t < TT; t++) {
            const __m512i s = _mm512_sub_epi32(_mm512_add_epi32(i0[t], i1[t]), _mm512_set1_epi32(xsp[(t0 + t) * nbp + li]));
            const __m512 p = _mm512_mul_ps(_mm512_mul_ps(vd, _mm512_set1_ps(dxp[(t0 + t) * nbp + li])), _mm512_cvtepi32_ps(s));
            acc[t][l] = _mm512_add_ps(acc[t][l], p);
        }
    }
    for (int t = 0; t < TT; t++) {
        __m512 h8[8], h4[4], h2[2];
        for (int i = 0; i < 8; i++) h8[i] = _mm512_add_ps(acc[t][i], acc[t][i + 8]);
        for (int i = 0; i < 4; i++) h4[i] = _mm512_add_ps(h8[i], h8[i + 4]);
        for (int i = 0; i < 2; i++) h2[i] = _mm512_add_ps(h4[i], h4[i + 2]);
        _mm512_mask_storeu_ps(y + (t0 + t) * ldy, m, _mm512_add_ps(_mm512_add_ps(h2[0], h2[1]), vb));
    }
}

#define IQP_ROWS(name, F)                                                                                             \
    static void name(const uint8_t *P, int64_t nb, int64_t nbp, const int8_t *xq, const float *dxp, const int32_t *xsp, \
                     int64_t T, float *y, int64_t ldy, const float *bias, __mmask16 m) {                              \
        const __m512 vb = bias ? _mm512_maskz_loadu_ps(m, bias) : _mm512_setzero_ps();                                \
        int64_t t0 = 0;                                                                                               \
        for (; t0 + 2 <= T; t0 += 2) iqp_tile(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, vb, m, 2);                      \
        if (T - t0) iqp_tile(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, vb, m, 1);                                       \
    }
IQP_ROWS(iqp_rows_nl, GB_IQ4_NL)
IQP_ROWS(iqp_rows_mx, GB_MXFP4)
#endif

/* ---- AVX2 (+FMA +F16C): the packed records (quant_iq.h), 8 rows per ymm ------------------------
 * Each 64-byte chunk k of a record is two ymm: rows 0-7 (bytes 0-31) and rows 8-15 (32-63), 4
 * nibble bytes per row; vpshufb maps the nibbles to table values. iq4_nl: the signed values, the
 * int8 x int8 products through ggml's sign trick, vpmaddubsw(|w|, sign(x, w)): a pair is at most
 * 2 * 127 * 127 = 32258, no int16 saturation, and sum(kvalue * x) directly (the integer
 * sum(u * x) - 128 * sum(x) of the other versions), each result widened by vpmaddwd. mxfp4: the
 * values + 12 (0..24, unsigned) straight into vpmaddubsw against x, int16 sums of at most 4 pairs
 * (<= 4 * 2 * 24 * 127 = 24384) widened, then 12 * sum(x_block) (xsp / 128 * 12) taken off: the
 * same integer.
 * Then the float steps of quant_iq.h, lane l of the 16 float lanes held per row in
 * memory (16 x 8-row vectors per token and half), the same expression as the other versions, so every
 * output is bit-identical to kquant_ref and kquant_vnni. */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_HAVE_IQ_AVX2 1

#ifndef IQ_XCHUNK_AVX2
#define IQ_XCHUNK_AVX2 (160 << 10) /* the packed GEMM's token chunk, bytes of prepared activations (L2: 512 KB on Zen 3) */
#endif
#ifndef IQ_AVX2_GEMV1
#define IQ_AVX2_GEMV1 1 /* gb_iqp_rows at T = 1 (routed experts' decode): the GEMV loop on one group (0: the 1-token tile) */
#endif
/* The GEMV's software prefetch distance in bytes of the group's record stream (as qgemm_avx2's). */
#ifndef GB_IQ_AVX2_AHEAD
#define GB_IQ_AVX2_AHEAD 2048
#endif

/* the 8 scales of rows 8h..8h+7 of a packed record (s: its scales) as float, blk_scale's values */
static inline __attribute__((always_inline)) __m256 iqp_scales_avx2(int fmt, const uint8_t *s, int h) {
    if (fmt == GB_IQ4_NL) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 16 * h)));
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(s + 8 * h)));
    const __m256i big = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(big, small, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}

/* one 32-byte chunk of a packed record (8 rows x 4 bytes): its low and high nibbles as table values */
static inline __attribute__((always_inline)) void iqp_nibbles_avx2(__m256i tbl, __m256i m4, const uint8_t *c, __m256i *lo, __m256i *hi) {
    const __m256i raw = _mm256_loadu_si256((const __m256i *)c);
    *lo = _mm256_shuffle_epi8(tbl, _mm256_and_si256(raw, m4));
    *hi = _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4));
}

static inline __m256i bc4_avx2(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* y[t * ldy + r] (r < nr, t < TT) = the 16 float lanes of acc [16][TS][2] (lane, token, half) summed
 * in the order of the reference's reduction, + bias (or + 0.0f: -0.0f + 0.0f = 0.0f as kquant_ref) */
static inline void iqp_store_avx2(const __m256 *acc, int TS, int TT, int nr, const float *bias, float *y, int64_t ldy) {
#define IQ_ACC(l, t, h) acc[((l) * TS + (t)) * 2 + (h)]
    for (int h = 0; h < 2; h++) {
        const int r0 = 8 * h, nv = nr - r0;
        if (nv <= 0) continue;
        __m256 vb = _mm256_setzero_ps();
        if (bias) {
            float tb[8] = {0};
            memcpy(tb, bias + r0, (size_t)(nv < 8 ? nv : 8) * sizeof(float));
            vb = _mm256_loadu_ps(tb);
        }
        for (int t = 0; t < TT; t++) {
            __m256 h8[8], h4[4], h2[2];
            for (int i = 0; i < 8; i++) h8[i] = _mm256_add_ps(IQ_ACC(i, t, h), IQ_ACC(i + 8, t, h));
            for (int i = 0; i < 4; i++) h4[i] = _mm256_add_ps(h8[i], h8[i + 4]);
            for (int i = 0; i < 2; i++) h2[i] = _mm256_add_ps(h4[i], h4[i + 2]);
            const __m256 r = _mm256_add_ps(_mm256_add_ps(h2[0], h2[1]), vb);
            float *dst = y + t * ldy + r0;
            if (nv >= 8) {
                _mm256_storeu_ps(dst, r);
            } else {
                float tmp[8];
                _mm256_storeu_ps(tmp, r);
                memcpy(dst, tmp, (size_t)nv * sizeof(float));
            }
        }
    }
#undef IQ_ACC
}

/* One packed group x TT <= 4 tokens from t0 (the GEMM's tiles after the 8-token ones, iqp_tile8_avx2):
 * y[t * ldy + r] for r < nr (bias per row, or NULL). One half (8 rows) after the other per record:
 * the TT int accumulators, the decoded chunk and the broadcasts stay in the 16 ymm registers. Decoding
 * the records in registers per tile measured 10-25% faster than a panel decoded once per group (its
 * signed values and magnitudes, 1 KB per record, did not stay in L1). iq4_nl: the signed values by
 * vpshufb, ggml's sign trick, vpmaddwd per vpmaddubsw. mxfp4: the values + 12 (0..24, unsigned) by
 * vpshufb, vpmaddubsw against x directly, low and high nibbles in separate int16 sums (4 pairs of
 * at most 2 * 24 * 127: <= 24384), then 12 * sum(x_block) (xsp / 128 * 12) taken off: the same isum. */
/* an empty asm on a running sum: gcc keeps each token's adds in order (reassociated, the partial
 * sums outnumbered the 16 ymm registers and spilled) */
#define IQ_PIN(v) __asm__("" : "+x"(v))
static const int8_t kv_mxfp4_u12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0}; /* kvalues_mxfp4 + 12 */

static inline __attribute__((always_inline)) void iqp_tile_avx2(const int fmt, const uint8_t *P, int64_t nb, int64_t nbp,
                                                                const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t t0,
                                                                float *y, int64_t ldy, const float *bias, int nr, const int TT) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(fmt == GB_MXFP4 ? kv_mxfp4_u12 : iq_table(fmt))));
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    __m256 acc[16][4][2]; /* [lane][t][half] */
    for (int l = 0; l < 16; l++)
        for (int t = 0; t < TT; t++) acc[l][t][0] = acc[l][t][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = xq + t0 * nbp * QB + b * QB;
        const int l = lane_blk[b % 16];
        const int64_t li = 16 * (b / 16) + l;
        const uint8_t *o = P + b * pb;
#pragma GCC unroll 1
        for (int h = 0; h < 2; h++) {
            __m256i ia[4], ib[4];
            for (int t = 0; t < TT; t++) ia[t] = ib[t] = _mm256_setzero_si256();
#pragma GCC unroll 1
            for (int k = 0; k < 4; k++) {
                __m256i lo, hi;
                iqp_nibbles_avx2(tbl, m4, o + 64 * k + 32 * h, &lo, &hi);
                if (fmt == GB_MXFP4) {
#pragma GCC unroll 8
                    for (int t = 0; t < TT; t++) {
                        ia[t] = _mm256_add_epi16(ia[t], _mm256_maddubs_epi16(lo, bc4_avx2(xb + t * nbp * QB + 4 * k)));
                        ib[t] = _mm256_add_epi16(ib[t], _mm256_maddubs_epi16(hi, bc4_avx2(xb + t * nbp * QB + 16 + 4 * k)));
                    }
                } else {
                    const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
#pragma GCC unroll 8
                    for (int t = 0; t < TT; t++) {
                        const __m256i x0 = bc4_avx2(xb + t * nbp * QB + 4 * k), x1 = bc4_avx2(xb + t * nbp * QB + 16 + 4 * k);
                        const __m256i p0 = _mm256_maddubs_epi16(alo, _mm256_sign_epi8(x0, lo));
                        const __m256i p1 = _mm256_maddubs_epi16(ahi, _mm256_sign_epi8(x1, hi));
                        ia[t] = _mm256_add_epi32(ia[t], _mm256_add_epi32(_mm256_madd_epi16(p0, ones), _mm256_madd_epi16(p1, ones)));
                    }
                }
            }
            const __m256 vd = iqp_scales_avx2(fmt, o + 256, h);
            for (int t = 0; t < TT; t++) {
                const __m256i s = fmt == GB_MXFP4 ? _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(ia[t], ones), _mm256_madd_epi16(ib[t], ones)),
                                                                       _mm256_set1_epi32(xsp[(t0 + t) * nbp + li] / 128 * 12))
                                                    : ia[t];
                const __m256 p = _mm256_mul_ps(_mm256_mul_ps(vd, _mm256_set1_ps(dxp[(t0 + t) * nbp + li])), _mm256_cvtepi32_ps(s));
                acc[l][t][h] = _mm256_add_ps(acc[l][t][h], p);
            }
        }
    }
    iqp_store_avx2(&acc[0][0][0], 4, TT, nr, bias, y + t0 * ldy, ldy);
}

/* The 8-token tiles' activations, interleaved per block so that one pointer reaches every token's
 * values: per (tile of tokens 8j..8j+7, block b) a record of the 8 tokens' 32 int8 values (token t
 * at 32 t), their 8 q8_0 scales (float) and their 8 -12 sum(x_block) (int32: mxfp4's starting
 * sums). Built once per call (iq_x8_build) from iq_prep's layout. The tile read iq_prep's rows
 * directly before (session 16): 8 token pointers with a run-time stride took 8 general registers,
 * were spilled and reloaded per block, and the per-token scales and sums were loaded, scaled and
 * stored per block: a third of the tile's time was outside its integer loop (Zen 3, perf). */
#define IQ_X8_REC (8 * QB + 8 * 4 + 8 * 4)
#define IQ_HAVE_X8 1

/* tile j's records (nb of them, IQ_X8_REC bytes apart) from the prepared activations of its 8 tokens */
static void iq_x8_build(const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t nb, int64_t nbp, int64_t j, uint8_t *out) {
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *r = out + b * IQ_X8_REC;
        const int64_t li = 16 * (b / 16) + lane_blk[b % 16];
        float dv[8];
        int32_t cv[8];
        for (int t = 0; t < 8; t++) {
            const int64_t tt = 8 * j + t;
            memcpy(r + QB * t, xq + tt * nbp * QB + b * QB, QB);
            dv[t] = dxp[tt * nbp + li];
            cv[t] = -(xsp[tt * nbp + li] / 128 * 12);
        }
        memcpy(r + 8 * QB, dv, sizeof dv);
        memcpy(r + 8 * QB + sizeof dv, cv, sizeof cv);
    }
}

/* One packed group x 8 tokens (their records X8, IQ_X8_REC bytes per block): y[t * ldy + r] for r <
 * nr. iqp_tile_avx2's integers and float steps (same bits), one 8-row half at a time: iq4_nl low then
 * high nibbles for the 8 tokens (two decoded ymm live, the sums pinned); mxfp4 one int32 sum per
 * token started at -12 sum(x_block), per two nibble ymm (chunks k, k + 1) one int16 sum
 * of 4 vpmaddubsw (8 pairs of at most 24 * 127), then vpmaddwd. */
static inline __attribute__((always_inline)) void iqp_tile8_avx2(const int fmt, const uint8_t *P, int64_t nb, const uint8_t *X8,
                                                                 float *y, int64_t ldy, const float *bias, int nr) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(fmt == GB_MXFP4 ? kv_mxfp4_u12 : iq_table(fmt))));
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    __m256 acc[16][8][2]; /* [lane][t][half] */
    for (int l = 0; l < 16; l++)
        for (int t = 0; t < 8; t++) acc[l][t][0] = acc[l][t][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = (const int8_t *)(X8 + b * IQ_X8_REC);
        const float *dx = (const float *)(X8 + b * IQ_X8_REC + 8 * QB);
        const int32_t *mc = (const int32_t *)(X8 + b * IQ_X8_REC + 8 * QB + 32);
        const int l = lane_blk[b % 16];
        const uint8_t *o = P + b * pb;
#pragma GCC unroll 1
        for (int h = 0; h < 2; h++) {
            __m256i ia[8];
            for (int t = 0; t < 8; t++) ia[t] = fmt == GB_MXFP4 ? _mm256_set1_epi32(mc[t]) : _mm256_setzero_si256();
            if (fmt == GB_MXFP4) { /* chunk pairs k, k + 1 in int16 (4 vpmaddubsw of <= 24 * 127 pairs: <= 24384)
                                    * before one vpmaddwd, as the GEMV: on a Zen 2 (one multiply pipe) 1.02-1.07x
                                    * against one vpmaddwd per chunk (session 21), the same integers */
#pragma GCC unroll 1
                for (int k = 0; k < 4; k += 2) {
                    __m256i lo0, hi0, lo1, hi1;
                    iqp_nibbles_avx2(tbl, m4, o + 64 * k + 32 * h, &lo0, &hi0);
                    iqp_nibbles_avx2(tbl, m4, o + 64 * (k + 1) + 32 * h, &lo1, &hi1);
#pragma GCC unroll 8
                    for (int t = 0; t < 8; t++) {
                        const int8_t *xt = xb + QB * t + 4 * k;
                        const __m256i a = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo0, bc4_avx2(xt)), _mm256_maddubs_epi16(hi0, bc4_avx2(xt + 16))),
                                                           _mm256_add_epi16(_mm256_maddubs_epi16(lo1, bc4_avx2(xt + 4)), _mm256_maddubs_epi16(hi1, bc4_avx2(xt + 20))));
                        ia[t] = _mm256_add_epi32(ia[t], _mm256_madd_epi16(a, ones));
                        IQ_PIN(ia[t]);
                    }
                }
            } else
#pragma GCC unroll 1
            for (int k = 0; k < 4; k++) { /* iq4_nl */
                __m256i lo, hi;
                iqp_nibbles_avx2(tbl, m4, o + 64 * k + 32 * h, &lo, &hi);
                const __m256i alo = _mm256_abs_epi8(lo);
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    ia[t] = _mm256_add_epi32(ia[t], _mm256_madd_epi16(_mm256_maddubs_epi16(alo, _mm256_sign_epi8(bc4_avx2(xb + QB * t + 4 * k), lo)), ones));
                    IQ_PIN(ia[t]);
                }
                const __m256i ahi = _mm256_abs_epi8(hi);
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    ia[t] = _mm256_add_epi32(ia[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ahi, _mm256_sign_epi8(bc4_avx2(xb + QB * t + 16 + 4 * k), hi)), ones));
                    IQ_PIN(ia[t]);
                }
            }
            const __m256 vd = iqp_scales_avx2(fmt, o + 256, h);
            for (int t = 0; t < 8; t++) {
                const __m256 p = _mm256_mul_ps(_mm256_mul_ps(vd, _mm256_set1_ps(dx[t])), _mm256_cvtepi32_ps(ia[t]));
                acc[l][t][h] = _mm256_add_ps(acc[l][t][h], p);
            }
        }
    }
    iqp_store_avx2(&acc[0][0][0], 8, 8, nr, bias, y, ldy);
}

/* Decode GEMV of NG = 2 packed groups side by side (two record streams from DRAM, as qgemm_avx2's
 * q4_0 GEMV), or of NG = 1 (P1, y1, b1, nr1 unused: a routed expert's group, gb_iqp_rows at T = 1):
 * per block the 4 broadcasts of each nibble half feed 2 NG units (group u / 2, rows 8 (u % 2) ..),
 * all in registers; the float steps as iqp_tile_avx2's (same bits). */
static inline __attribute__((always_inline)) void iqp_gemv2_avx2(const int fmt, const uint8_t *P0, const uint8_t *P1, int64_t nb,
                                                                 const int8_t *xq, const float *dxp, const int32_t *xsp, float *y0,
                                                                 float *y1, const float *b0, const float *b1, int nr0, int nr1,
                                                                 const int NG) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(fmt == GB_MXFP4 ? kv_mxfp4_u12 : iq_table(fmt))));
    const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const int64_t pb = gb_iqp_block_bytes(fmt);
    const uint8_t *Pg[2] = {P0, P1};
    __m256 acc[16][4];
    for (int l = 0; l < 16; l++)
        for (int u = 0; u < 2 * NG; u++) acc[l][u] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = xq + b * QB;
        const int l = lane_blk[b % 16];
        const int64_t li = 16 * (b / 16) + l;
        for (int g = 0; g < NG; g++)
            for (int i = 0; i < 5; i++) _mm_prefetch((const char *)(Pg[g] + b * pb + GB_IQ_AVX2_AHEAD + 64 * i), _MM_HINT_T0);
        __m256i ia[4], i16[4];
        for (int u = 0; u < 2 * NG; u++) ia[u] = i16[u] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m256i x0 = bc4_avx2(xb + 4 * k), x1 = bc4_avx2(xb + 16 + 4 * k);
            const __m256i ax0 = _mm256_abs_epi8(x0), ax1 = _mm256_abs_epi8(x1); /* iq4_nl: shared by the 2 NG units */
#pragma GCC unroll 4
            for (int u = 0; u < 2 * NG; u++) {
                __m256i lo, hi;
                iqp_nibbles_avx2(tbl, m4, Pg[u >> 1] + b * pb + 64 * k + 32 * (u & 1), &lo, &hi);
                if (fmt == GB_MXFP4) { /* values + 12 against x (as iqp_tile_avx2); int16 sums of 2 chunks (<= 24384) */
                    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, x0), _mm256_maddubs_epi16(hi, x1));
                    i16[u] = k & 1 ? _mm256_add_epi16(i16[u], p) : p;
                    if (k & 1) ia[u] = _mm256_add_epi32(ia[u], _mm256_madd_epi16(i16[u], ones));
                } else { /* |x| against the values with x's sign (the sign moved to the weights: no |value| per chunk),
                          * each product's int32 sum added in order (IQ_PIN: gcc otherwise spilled the 8 sums of a block) */
                    const __m256i p0 = _mm256_maddubs_epi16(ax0, _mm256_sign_epi8(lo, x0));
                    const __m256i p1 = _mm256_maddubs_epi16(ax1, _mm256_sign_epi8(hi, x1));
                    ia[u] = _mm256_add_epi32(ia[u], _mm256_madd_epi16(p0, ones));
                    IQ_PIN(ia[u]);
                    ia[u] = _mm256_add_epi32(ia[u], _mm256_madd_epi16(p1, ones));
                    IQ_PIN(ia[u]);
                }
            }
        }
        const __m256 dx = _mm256_set1_ps(dxp[li]);
        for (int u = 0; u < 2 * NG; u++) {
            const __m256 vd = iqp_scales_avx2(fmt, Pg[u >> 1] + b * pb + 256, u & 1);
            const __m256i s = fmt == GB_MXFP4 ? _mm256_sub_epi32(ia[u], _mm256_set1_epi32(xsp[li] / 128 * 12)) : ia[u];
            acc[l][u] = _mm256_add_ps(acc[l][u], _mm256_mul_ps(_mm256_mul_ps(vd, dx), _mm256_cvtepi32_ps(s)));
        }
    }
    float *yg[2] = {y0, y1};
    const float *bg[2] = {b0, b1};
    const int ng[2] = {nr0, nr1};
    for (int u = 0; u < 2 * NG; u++) {
        const int g = u >> 1, r0 = 8 * (u & 1), nv = ng[g] - r0;
        if (nv <= 0) continue;
        __m256 vb = _mm256_setzero_ps();
        if (bg[g]) {
            float tb[8] = {0};
            memcpy(tb, bg[g] + r0, (size_t)(nv < 8 ? nv : 8) * sizeof(float));
            vb = _mm256_loadu_ps(tb);
        }
        __m256 h8[8], h4[4], h2[2];
        for (int i = 0; i < 8; i++) h8[i] = _mm256_add_ps(acc[i][u], acc[i + 8][u]);
        for (int i = 0; i < 4; i++) h4[i] = _mm256_add_ps(h8[i], h8[i + 4]);
        for (int i = 0; i < 2; i++) h2[i] = _mm256_add_ps(h4[i], h4[i + 2]);
        const __m256 r = _mm256_add_ps(_mm256_add_ps(h2[0], h2[1]), vb);
        if (nv >= 8) {
            _mm256_storeu_ps(yg[g] + r0, r);
        } else {
            float tmp[8];
            _mm256_storeu_ps(tmp, r);
            memcpy(yg[g] + r0, tmp, (size_t)nv * sizeof(float));
        }
    }
}

#define IQP_ROWS_AVX2(name, F)                                                                                          \
    static void name(const uint8_t *P, int64_t nb, int64_t nbp, const int8_t *xq, const float *dxp, const int32_t *xsp,   \
                     const uint8_t *x8, int64_t T, float *y, int64_t ldy, const float *bias, int nr) {                  \
        int64_t t0 = 0;                                                                                                 \
        for (; x8 && t0 + 8 <= T; t0 += 8) /* x8: the records of tokens [0, T / 8 * 8) (iq_x8_build) */               \
            iqp_tile8_avx2(F, P, nb, x8 + t0 / 8 * nb * IQ_X8_REC, y + t0 * ldy, ldy, bias, nr);                        \
        for (; t0 + 4 <= T; t0 += 4) iqp_tile_avx2(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, nr, 4);               \
        switch (T - t0) {                                                                                               \
        case 3: iqp_tile_avx2(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, nr, 3); break;                             \
        case 2: iqp_tile_avx2(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, nr, 2); break;                             \
        case 1: iqp_tile_avx2(F, P, nb, nbp, xq, dxp, xsp, t0, y, ldy, bias, nr, 1); break;                             \
        default: break;                                                                                                 \
        }                                                                                                               \
    }                                                                                                                   \
    static void name##_gemv2(const uint8_t *P0, const uint8_t *P1, int64_t nb, int64_t nbp, const int8_t *xq,           \
                             const float *dxp, const int32_t *xsp, float *y0, float *y1, const float *b0, const float *b1,   \
                             int nr0, int nr1) {                                                                        \
        (void)nbp;                                                                                                      \
        iqp_gemv2_avx2(F, P0, P1, nb, xq, dxp, xsp, y0, y1, b0, b1, nr0, nr1, 2);                                       \
    }                                                                                                                   \
    /* one group's GEMV (routed experts at decode: gb_iqp_rows with T = 1), both halves per block */                   \
    static void name##_gemv1(const uint8_t *P, int64_t nb, const int8_t *xq, const float *dxp, const int32_t *xsp,     \
                             float *y, const float *bias, int nr) {                                                     \
        iqp_gemv2_avx2(F, P, P, nb, xq, dxp, xsp, y, y, bias, bias, nr, nr, 1);                                         \
    }
IQP_ROWS_AVX2(iqp_rows_avx2_nl, GB_IQ4_NL)
IQP_ROWS_AVX2(iqp_rows_avx2_mx, GB_MXFP4)

/* groups [g0, g1) of a packed [N, K] matrix for T tokens (y: row 0 of token 0, rows N apart). The
 * GEMV (T = 1) reads the run's first half beside its second (two streams from DRAM), as qgemm_avx2. */
static void iqp_groups_avx2(int fmt, const uint8_t *wp, int64_t g0, int64_t g1, int64_t nb, int64_t nbp, const int8_t *xq,
                            const float *dxp, const int32_t *xsp, const uint8_t *x8, int64_t T, float *y, const float *bias, int64_t N) {
    const int64_t gbytes = nb * gb_iqp_block_bytes(fmt);
#define IQ_NR(g) ((int)(N - 16 * (g) < 16 ? N - 16 * (g) : 16))
#define IQ_B(g) (bias ? bias + 16 * (g) : NULL)
    int64_t g = g0;
    if (T == 1) {
        const int64_t half = (g1 - g0) / 2;
        for (int64_t i = 0; i < half; i++) {
            const int64_t ga = g0 + i, gb = g0 + half + i;
            (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl_gemv2 : iqp_rows_avx2_mx_gemv2)(wp + ga * gbytes, wp + gb * gbytes, nb, nbp, xq, dxp, xsp,
                                                                               y + 16 * ga, y + 16 * gb, IQ_B(ga), IQ_B(gb), IQ_NR(ga), IQ_NR(gb));
        }
        g = g0 + 2 * half;
        if (g < g1) /* an odd group out */
            (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl_gemv1 : iqp_rows_avx2_mx_gemv1)(wp + g * gbytes, nb, xq, dxp, xsp, y + 16 * g, IQ_B(g),
                                                                               IQ_NR(g));
        return;
    }
    for (; g < g1; g++)
        (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl : iqp_rows_avx2_mx)(wp + g * gbytes, nb, nbp, xq, dxp, xsp, x8, T, y + 16 * g, N, IQ_B(g),
                                                               IQ_NR(g));
#undef IQ_NR
#undef IQ_B
}
#endif

static int iqlinear_impl(int fmt, const float *x, const void *w, const void *wp, const float *bias, float *y, int64_t T, int64_t N,
                         int64_t K, int version);
#ifndef IQ_HAVE_X8
#define IQ_HAVE_X8 0
#define IQ_X8_REC 1
#endif

/* one token's activations for the kernels: q8_0 blocks (scratch q8, K/32 of them), the int8
 * values padded to whole groups of 16 blocks (natural order, or the quad layout of the VNNI row
 * kernels if xpair), the block scales and 128 * block sums in lane order */
static void iq_prep(const float *x, int64_t K, int xpair, uint8_t *q8, int8_t *xt, float *dxt, int32_t *xst) {
    const int64_t nb = K / QB, nbp = (nb + 15) / 16 * 16, nc = nbp / 16;
    const gb_block_q8_0 *qb = (const gb_block_q8_0 *)q8;
    gb_quantize_row_q8_0(x, (void *)qb, K);
    for (int64_t b = 0; b < nbp; b++) {
        int8_t *lo = xpair ? xt + 128 * (b / 4) + 16 * (b % 4) : xt + QB * b, *hi = xpair ? lo + 64 : lo + 16;
        if (b < nb) {
            memcpy(lo, qb[b].qs, 16);
            memcpy(hi, qb[b].qs + 16, 16);
        } else {
            memset(lo, 0, 16);
            memset(hi, 0, 16);
        }
    }
    for (int64_t c = 0; c < nc; c++)
        for (int l = 0; l < 16; l++) {
            const int64_t b = 16 * c + lane_blk[l];
            int32_t s = 0;
            if (b < nb)
                for (int j = 0; j < QB; j++) s += qb[b].qs[j];
            dxt[16 * c + l] = b < nb ? h2f((const uint8_t *)&qb[b].d) : 0.0f;
            xst[16 * c + l] = 128 * s;
        }
}

int64_t gb_iqp_blocks(int64_t K) { return (K / QB + 15) / 16 * 16; }

void gb_iqp_prepare(const float *x, int64_t K, void *q8, int8_t *xq, float *dxp, int32_t *xsp) {
    iq_prep(x, K, 0, (uint8_t *)q8, xq, dxp, xsp);
}

int64_t gb_iqp_x8_bytes(int64_t K, int64_t T) { return IQ_HAVE_X8 ? T * (K / QB) * (IQ_X8_REC / 8) : 0; }

void gb_iqp_x8(const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t K, int64_t T, void *x8) {
#if IQ_HAVE_X8
    const int64_t nb = K / QB, nbp = gb_iqp_blocks(K);
    for (int64_t j = 0; j < T / 8; j++) iq_x8_build(xq, dxp, xsp, nb, nbp, j, (uint8_t *)x8 + j * nb * IQ_X8_REC);
#else
    (void)xq, (void)dxp, (void)xsp, (void)K, (void)T, (void)x8;
#endif
}

int gb_iqp_gemv_pair(int fmt, const void *w1, int64_t N1, int64_t g1, float *y1, const void *w2, int64_t N2, int64_t g2, float *y2,
                     int64_t K, const int8_t *xq, const float *dxp, const int32_t *xsp, int version) {
#ifdef GB_HAVE_IQ_AVX2
    if (version == GB_KV_AVX2 && IQ_AVX2_GEMV1 && gb_is_iqfmt(fmt) && N1 - 16 * g1 >= 16 && N2 - 16 * g2 >= 16) {
        const int64_t nb = K / QB, gbytes = nb * gb_iqp_block_bytes(fmt);
        (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl_gemv2 : iqp_rows_avx2_mx_gemv2)((const uint8_t *)w1 + g1 * gbytes, (const uint8_t *)w2 + g2 * gbytes,
                                                                           nb, gb_iqp_blocks(K), xq, dxp, xsp, y1, y2, NULL, NULL, 16, 16);
        return 1;
    }
#endif
    (void)fmt, (void)w1, (void)N1, (void)g1, (void)y1, (void)w2, (void)N2, (void)g2, (void)y2, (void)K, (void)xq, (void)dxp, (void)xsp,
        (void)version;
    return 0;
}

int gb_iqp_rows(int fmt, const void *wp, int64_t N, int64_t K, int64_t g, const int8_t *xq, const float *dxp, const int32_t *xsp,
                const void *x8, int64_t T, float *y, int64_t ldy, int version) {
    const int64_t nb = K / QB, nbp = gb_iqp_blocks(K), nc = nbp / 16;
    const uint8_t *P = (const uint8_t *)wp + g * nb * gb_iqp_block_bytes(fmt);
    const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
#ifdef GB_HAVE_IQ_VNNI
    if (version == GB_KV_VNNI) {
        (fmt == GB_IQ4_NL ? iqp_rows_nl : iqp_rows_mx)(P, nb, nbp, xq, dxp, xsp, T, y, ldy, NULL, (__mmask16)((1u << nr) - 1));
        return GB_OK;
    }
#endif
#ifdef GB_HAVE_IQ_AVX2
    if (version == GB_KV_AVX2) {
        if (T == 1 && IQ_AVX2_GEMV1) /* both halves of the group per block, as the dense GEMV (iqp_gemv2_avx2) */
            (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl_gemv1 : iqp_rows_avx2_mx_gemv1)(P, nb, xq, dxp, xsp, y, NULL, nr);
        else
            (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl : iqp_rows_avx2_mx)(P, nb, nbp, xq, dxp, xsp, (const uint8_t *)x8, T, y, ldy, NULL, nr);
        return GB_OK;
    }
#endif
    uint8_t *u = (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(nbp * QB));
    float *dwp = (float *)gb_ws_aligned_alloc(64, (size_t)nbp * sizeof(float));
    if (!u || !dwp) {
        gb_ws_free(u);
        gb_ws_free(dwp);
        return GB_ENOMEM;
    }
    for (int r = 0; r < nr; r++) {
        decode_row_packed_ref(fmt, P, r, nb, nbp, u, dwp);
        for (int64_t t = 0; t < T; t++) y[t * ldy + r] = dot_ref(u, dwp, xq + t * nbp * QB, dxp + t * nbp, xsp + t * nbp, nc) + 0.0f;
    }
    gb_ws_free(u);
    gb_ws_free(dwp);
    return GB_OK;
}

int gb_iqlinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
                int64_t K, int version) {
    return iqlinear_impl(fmt, x, w, NULL, bias, y, T, N, K, version);
}

int gb_iqlinear_packed(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                       int version) {
    return iqlinear_impl(fmt, x, NULL, wp, bias, y, T, N, K, version);
}

/* ---- the launcher -------------------------------------------------------------------------- */

static int iqlinear_impl(int fmt, const float *x, const void *w, const void *wp, const float *bias, float *y, int64_t T, int64_t N,
                         int64_t K, int version) {
    if (!gb_is_iqfmt(fmt)) return gb_error(GB_EVALUE, "iqlinear: format %d is not iq4_nl (20) or mxfp4 (39)", fmt);
    if (K <= 0 || K % QB) return gb_error(GB_EVALUE, "iqlinear: K=%ld must be a positive multiple of 32", (long)K);
    if (T < 0 || N < 0) return gb_error(GB_EVALUE, "iqlinear: T=%ld and N=%ld must be >= 0", (long)T, (long)N);
    int vnni = 0, avx2 = 0;
#ifdef GB_HAVE_IQ_VNNI
    if (version == GB_KV_AUTO || version == GB_KV_VNNI) vnni = 1;
#endif
#ifdef GB_HAVE_IQ_AVX2
    if ((version == GB_KV_AUTO && !vnni) || version == GB_KV_AVX2) avx2 = 1;
#endif
    if (version == GB_KV_AUTO) version = vnni ? GB_KV_VNNI : avx2 ? GB_KV_AVX2 : GB_KV_REF;
    if (version != GB_KV_REF && !vnni && !avx2)
        return gb_error(GB_EVALUE, "iqlinear: kernel version %d (%s) is not compiled in on this build", version, gb_kversion_name(version));
    if (T == 0 || N == 0) return GB_OK;
    const int64_t nb = K / QB, nbp = (nb + 15) / 16 * 16, nc = nbp / 16, rb = gb_iq_row_bytes(fmt, K);
    int8_t *xq = (int8_t *)gb_ws_aligned_alloc(64, (size_t)(T * nbp * QB));
    float *dxp = (float *)gb_ws_aligned_alloc(64, (size_t)(T * nbp) * sizeof(float));
    int32_t *xsp = (int32_t *)gb_ws_aligned_alloc(64, (size_t)(T * nbp) * sizeof(int32_t));
    uint8_t *q8 = (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(T * nb) * sizeof(gb_block_q8_0));
    /* the AVX2 GEMM's 8-token tiles read their activations interleaved (iq_x8_build) */
    const int64_t nx8 = IQ_HAVE_X8 && version == GB_KV_AVX2 ? T / 8 : 0;
    uint8_t *x8 = nx8 ? (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(nx8 * nb * IQ_X8_REC)) : NULL;
    if (!xq || !dxp || !xsp || !q8 || (nx8 && !x8)) {
        gb_ws_free(xq);
        gb_ws_free(dxp);
        gb_ws_free(xsp);
        gb_ws_free(q8);
        gb_ws_free(x8);
        return gb_error(GB_ENOMEM, "iqlinear: cannot allocate the q8_0 activations (%ld rows of %ld)", (long)T, (long)K);
    }
    /* tokens per chunk: their prepared activations (40 bytes per 32 values) within ~256 KB of L2 */
    int64_t tc = (256 * 1024) / (nbp * 40);
    tc = tc < 1 ? 1 : tc;
    const uint8_t *wb = (const uint8_t *)w;
    /* from this many tokens the VNNI version decodes 16-row panels once per call (prefill) */
    const int panel = version == GB_KV_VNNI && T >= 16;
    const int xpair = version == GB_KV_VNNI && !panel && !wp;
    int fail = 0;
#pragma omp parallel if (N * K * T > 65536)
    {
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++)
            iq_prep(x + t * K, K, xpair, q8 + t * nb * sizeof(gb_block_q8_0), xq + t * nbp * QB, dxp + t * nbp, xsp + t * nbp);
#pragma omp for schedule(static)
        for (int64_t j = 0; j < nx8; j++) gb_iqp_x8(xq + 8 * j * nbp * QB, dxp + 8 * j * nbp, xsp + 8 * j * nbp, K, 8, x8 + j * nb * IQ_X8_REC);
        if (wp) { /* repacked: work by 16-row groups, each one stream of records */
            const int64_t G = (N + 15) / 16, gbytes = nb * gb_iqp_block_bytes(fmt);
#ifdef GB_HAVE_IQ_VNNI
            ipanel *Pn = panel ? (ipanel *)gb_ws_aligned_alloc(64, (size_t)(2 * nb) * sizeof(ipanel)) : NULL;
            if (panel && !Pn) {
#pragma omp atomic write
                fail = 1;
            }
#endif
            uint8_t *u = version == GB_KV_REF ? (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(nbp * QB)) : NULL;
            float *dwp = version == GB_KV_REF ? (float *)gb_ws_aligned_alloc(64, (size_t)nbp * sizeof(float)) : NULL;
            if (version == GB_KV_REF && (!u || !dwp)) {
#pragma omp atomic write
                fail = 1;
            }
#ifdef GB_HAVE_IQ_VNNI
            if (panel) { /* prefill: two groups per step (ipanel_tile), each decoded once per call */
#pragma omp for schedule(dynamic, 1)
                for (int64_t s2 = 0; s2 < (G + 1) / 2; s2++) {
                    if (!Pn) continue;
                    const int64_t g = 2 * s2;
                    const int ng = g + 1 < G ? 2 : 1;
                    for (int i = 0; i < ng; i++) ipanel_fill_packed(fmt, (const uint8_t *)wp + (g + i) * gbytes, nb, Pn + i * nb);
                    ipanel_rows(ng, Pn, Pn + nb, nb, nbp, xq, dxp, xsp, T, y, N, bias, g, N);
                }
            }
#endif
            const int64_t run = gbytes >= (256 << 10) ? 1 : (256 << 10) / gbytes; /* as gb_klinear_packed */
            int64_t Gr = panel ? 0 : G;
#ifdef GB_HAVE_IQ_AVX2
            if (version == GB_KV_AVX2) { /* runs of groups (the GEMV pairs each run's halves: iqp_groups_avx2) */
                Gr = 0;
                const int64_t step = T == 1 ? (run < 8 ? 8 : run) : 1;
                /* the GEMM in token chunks of about IQ_XCHUNK_AVX2 bytes of prepared activations (multiples
                 * of 8 tokens), chunk-major, every group per chunk: a chunk stays in L2 while the groups
                 * pass (all T per group streamed them from L3 once per group); the same steps per token */
                int64_t tc = T;
                if (T > 1 && IQ_XCHUNK_AVX2 > 0) {
                    tc = (int64_t)IQ_XCHUNK_AVX2 / (nbp * 40) / 8 * 8;
                    if (tc < 8) tc = 8;
                    if (tc > T) tc = T;
                }
                const int64_t ns = (G + step - 1) / step, nck = (T + tc - 1) / tc;
#pragma omp for schedule(dynamic, 1)
                for (int64_t w = 0; w < nck * ns; w++) {
                    const int64_t s = w % ns, t0 = w / ns * tc, tn = T - t0 < tc ? T - t0 : tc;
                    iqp_groups_avx2(fmt, (const uint8_t *)wp, s * step, (s + 1) * step < G ? (s + 1) * step : G, nb, nbp, xq + t0 * nbp * QB,
                                    dxp + t0 * nbp, xsp + t0 * nbp, x8 ? x8 + t0 / 8 * nb * IQ_X8_REC : NULL, tn, y + t0 * N, bias, N);
                }
            }
#endif
#pragma omp for schedule(dynamic, run)
            for (int64_t g = 0; g < Gr; g++) {
                const uint8_t *P = (const uint8_t *)wp + g * gbytes;
                const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
#ifdef GB_HAVE_IQ_VNNI
                const __mmask16 m = (__mmask16)((1u << nr) - 1);
                if (version == GB_KV_VNNI) {
                    (fmt == GB_IQ4_NL ? iqp_rows_nl : iqp_rows_mx)(P, nb, nbp, xq, dxp, xsp, T, y + 16 * g, N, bias ? bias + 16 * g : NULL, m);
                    continue;
                }
#endif
                if (!u || !dwp) continue;
                for (int r = 0; r < nr; r++) {
                    decode_row_packed_ref(fmt, P, r, nb, nbp, u, dwp);
                    const float bn = bias ? bias[16 * g + r] : 0.0f;
                    for (int64_t t = 0; t < T; t++)
                        y[t * N + 16 * g + r] = dot_ref(u, dwp, xq + t * nbp * QB, dxp + t * nbp, xsp + t * nbp, nc) + bn;
                }
            }
#ifdef GB_HAVE_IQ_VNNI
            gb_ws_free(Pn);
#endif
            gb_ws_free(u);
            gb_ws_free(dwp);
        }
#ifdef GB_HAVE_IQ_VNNI
        if (panel && !wp) {
            ipanel *P = (ipanel *)gb_ws_aligned_alloc(64, (size_t)(2 * nb) * sizeof(ipanel));
            if (!P) {
#pragma omp atomic write
                fail = 1;
            }
            const int64_t Gn = (N + 15) / 16;
#pragma omp for schedule(dynamic, 1)
            for (int64_t s2 = 0; s2 < (Gn + 1) / 2; s2++) { /* two groups per step (ipanel_tile) */
                if (!P) continue;
                const int64_t g = 2 * s2;
                const int ng = g + 1 < Gn ? 2 : 1;
                for (int i = 0; i < ng; i++) {
                    const int nr = (int)(N - 16 * (g + i) < 16 ? N - 16 * (g + i) : 16);
                    ipanel_fill(fmt, wb + 16 * (g + i) * rb, rb, nr, nb, P + i * nb);
                }
                ipanel_rows(ng, P, P + nb, nb, nbp, xq, dxp, xsp, T, y, N, bias, g, N);
            }
            gb_ws_free(P);
        }
#endif
#ifdef GB_HAVE_IQ_AVX2
        if (version == GB_KV_AVX2 && !wp) { /* as stored: two 16-row groups at a time repacked in L1/L2, then the packed kernels */
            const int64_t gbytes = nb * gb_iqp_block_bytes(fmt), Gn = (N + 15) / 16;
            uint8_t *buf = (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(2 * gbytes));
            if (!buf) {
#pragma omp atomic write
                fail = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t s2 = 0; s2 < (Gn + 1) / 2; s2++) {
                if (!buf) continue;
                const int64_t g = 2 * s2;
                const int ng = g + 1 < Gn ? 2 : 1;
                int nr[2];
                for (int i = 0; i < ng; i++) {
                    nr[i] = (int)(N - 16 * (g + i) < 16 ? N - 16 * (g + i) : 16);
                    iq_repack_group(fmt, wb + 16 * (g + i) * rb, rb, nr[i], nb, buf + i * gbytes);
                }
                const float *b0 = bias ? bias + 16 * g : NULL, *b1 = bias && ng > 1 ? bias + 16 * (g + 1) : NULL;
                if (T == 1 && ng == 2) {
                    (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl_gemv2 : iqp_rows_avx2_mx_gemv2)(buf, buf + gbytes, nb, nbp, xq, dxp, xsp, y + 16 * g,
                                                                                       y + 16 * (g + 1), b0, b1, nr[0], nr[1]);
                    continue;
                }
                for (int i = 0; i < ng; i++)
                    (fmt == GB_IQ4_NL ? iqp_rows_avx2_nl : iqp_rows_avx2_mx)(buf + i * gbytes, nb, nbp, xq, dxp, xsp, x8, T, y + 16 * (g + i), N,
                                                                           i ? b1 : b0, nr[i]);
            }
            gb_ws_free(buf);
        }
#endif
        uint8_t *u = (uint8_t *)gb_ws_aligned_alloc(64, (size_t)(nbp * QB));
        float *dwp = (float *)gb_ws_aligned_alloc(64, (size_t)nbp * sizeof(float));
        if (!u || !dwp) {
#pragma omp atomic write
            fail = 1;
        }
        for (int64_t t0 = 0; t0 < T && !panel && !wp && version != GB_KV_AVX2; t0 += tc) {
            const int64_t tt = T - t0 < tc ? T - t0 : tc;
#pragma omp for schedule(static, 4)
            for (int64_t n = 0; n < N; n++) {
                if (!u || !dwp) continue;
                const float bn = bias ? bias[n] : 0.0f;
#ifdef GB_HAVE_IQ_VNNI
                if (version == GB_KV_VNNI && tt == 1) {
                    y[t0 * N + n] = dot_vnni_fused(fmt, wb + n * rb, nb, xq + t0 * nbp * QB, dxp + t0 * nbp, xsp + t0 * nbp, nc) + bn;
                    continue;
                }
                if (version == GB_KV_VNNI) {
                    decode_row_vnni(fmt, wb + n * rb, nb, nbp, u, dwp);
                    for (int64_t t = t0; t < t0 + tt; t++)
                        y[t * N + n] = dot_vnni(u, dwp, xq + t * nbp * QB, dxp + t * nbp, xsp + t * nbp, nc) + bn;
                    continue;
                }
#endif
                decode_row_ref(fmt, wb + n * rb, nb, nbp, u, dwp);
                for (int64_t t = t0; t < t0 + tt; t++)
                    y[t * N + n] = dot_ref(u, dwp, xq + t * nbp * QB, dxp + t * nbp, xsp + t * nbp, nc) + bn;
            }
        }
        gb_ws_free(u);
        gb_ws_free(dwp);
    }
    gb_ws_free(xq);
    gb_ws_free(dxp);
    gb_ws_free(xsp);
    gb_ws_free(q8);
    gb_ws_free(x8);
    if (fail) return gb_error(GB_ENOMEM, "iqlinear: cannot allocate the decoded row (%ld blocks)", (long)nbp);
    return GB_OK;
}

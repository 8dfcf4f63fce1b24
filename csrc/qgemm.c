/* qgemm.c: integer GEMM/GEMV on repacked q8_0 / q4_0 weights (layout in qgemm.h), the portable
 * scalar version and the AVX-512 VNNI micro-kernel, and the routed-experts driver gb_qmoe.
 *
 * Micro-kernel (VNNI): NG groups of 16 weight rows x TT tokens. Per 32-weight block: the 16 f16
 * scales of each group, then 8 vpdpbusd per (group, token) - each one 16 rows x 4 weights against
 * 4 activation bytes broadcast from memory - into int32 accumulators that start at
 * -zero_point * sum(x_block); then one int->float conversion and one FMA with d_w * d_x.
 * A 16-row group's weights for a whole row (K/32 blocks) are read once per token tile, from L1/L2;
 * token chunks of GB_QG_TCHUNK keep the quantized activations in L2 while all groups stream past. */
#include "qgemm.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common.h"
#include "linear.h"
#include "moe.h"
#include "quant.h"

#define QK GB_QK
#define NR GB_QPACK_ROWS
#define GB_QG_TCHUNK 128

static inline float h2f(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return gb_f16_to_f32(h);
#endif
}

static inline int64_t blk_bytes(int fmt) { return fmt == GB_Q8_0 ? (int64_t)sizeof(gb_block_q8_0) : (int64_t)sizeof(gb_block_q4_0); }

int64_t gb_qpacked_bytes(int fmt, int64_t N, int64_t K) {
    if ((fmt != GB_Q8_0 && fmt != GB_Q4_0) || K <= 0 || K % QK || N < 0) return -1;
    return gb_size_mul(gb_size_mul(gb_size_roundup(N, NR), K / QK), blk_bytes(fmt));
}

/* ---- repack / unpack ------------------------------------------------------------------------ */

static void repack_group(int fmt, const uint8_t *w, uint8_t *out, int64_t g, int64_t N, int64_t nb, int64_t rb) {
    const int64_t bb = blk_bytes(fmt);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *o = out + (g * nb + b) * NR * bb;
        memset(o, 0, (size_t)(NR * bb));
        uint16_t *d = (uint16_t *)o;
        uint8_t *q = o + 2 * NR;
        for (int r = 0; r < NR; r++) {
            const int64_t n = g * NR + r;
            if (n >= N) {
                if (fmt == GB_Q8_0) /* zero weight = 128 unsigned (scale 0 anyway) */
                    for (int j = 0; j < 8; j++) memset(q + j * 64 + r * 4, 0x80, 4);
                continue;
            }
            const uint8_t *src = w + n * rb + b * bb;
            memcpy(&d[r], src, 2);
            if (fmt == GB_Q8_0) {
                for (int j = 0; j < 8; j++)
                    for (int p = 0; p < 4; p++) q[j * 64 + r * 4 + p] = (uint8_t)((int)(int8_t)src[2 + 4 * j + p] + 128);
            } else {
                const uint8_t *qs = src + 2;
                for (int j = 0; j < 4; j++)
                    for (int p = 0; p < 4; p++) {
                        const int e0 = 4 * j + p, e1 = 16 + 4 * j + p; /* element e0 low nibble of qs[e0], e1 high nibble of qs[e0] */
                        q[j * 64 + r * 4 + p] = (uint8_t)((qs[e0] & 0x0f) | (qs[e1 - 16] & 0xf0));
                    }
            }
        }
    }
}

int gb_qrepack(int fmt, const void *w, void *packed, int64_t N, int64_t K) {
    if (gb_qpacked_bytes(fmt, N, K) < 0) return gb_error(GB_EVALUE, "qrepack: format %d with K=%ld cannot be packed", fmt, (long)K);
    const int64_t nb = K / QK, rb = gb_row_bytes(fmt, K), G = (N + NR - 1) / NR;
#pragma omp parallel for schedule(static) if (N * K > 1 << 20)
    for (int64_t g = 0; g < G; g++) repack_group(fmt, (const uint8_t *)w, (uint8_t *)packed, g, N, nb, rb);
    return GB_OK;
}

int gb_qunpack(int fmt, const void *packed, void *w, int64_t N, int64_t K) {
    if (gb_qpacked_bytes(fmt, N, K) < 0) return gb_error(GB_EVALUE, "qunpack: format %d with K=%ld cannot be packed", fmt, (long)K);
    const int64_t nb = K / QK, rb = gb_row_bytes(fmt, K), bb = blk_bytes(fmt);
#pragma omp parallel for schedule(static) if (N * K > 1 << 20)
    for (int64_t n = 0; n < N; n++) {
        const int64_t g = n / NR, r = n % NR;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *o = (const uint8_t *)packed + (g * nb + b) * NR * bb, *q = o + 2 * NR;
            uint8_t *dst = (uint8_t *)w + n * rb + b * bb;
            memcpy(dst, o + 2 * r, 2);
            if (fmt == GB_Q8_0) {
                for (int j = 0; j < 8; j++)
                    for (int p = 0; p < 4; p++) dst[2 + 4 * j + p] = (uint8_t)(int8_t)((int)q[j * 64 + r * 4 + p] - 128);
            } else {
                for (int j = 0; j < 4; j++)
                    for (int p = 0; p < 4; p++) dst[2 + 4 * j + p] = q[j * 64 + r * 4 + p];
            }
        }
    }
    return GB_OK;
}

/* ---- quantized activations ------------------------------------------------------------------ */

/* Rows of activations quantized to q8_0: int8 values (K per row, rows `K` apart), the f16-rounded
 * scales as float and the zero-point correction -zp * sum(q) per block (zp 128 for q8_0 weights
 * stored +128, 8 for q4_0 nibbles). */
typedef struct {
    int8_t *qs;
    float *d;
    int32_t *c;
    int64_t rows, K, nb;
} xact;

static void xact_free(xact *a) {
    gb_ws_free(a->qs);
    gb_ws_free(a->d);
    gb_ws_free(a->c);
    a->qs = NULL;
    a->d = NULL;
    a->c = NULL;
}

static int xact_alloc(xact *a, int64_t rows, int64_t K) {
    a->rows = rows;
    a->K = K;
    a->nb = K / QK;
    const int64_t r = rows > 0 ? rows : 1;
    a->qs = (int8_t *)gb_ws_aligned_alloc(64, (size_t)(r * K + 64));
    a->d = (float *)gb_ws_malloc((size_t)(r * a->nb) * sizeof(float));
    a->c = (int32_t *)gb_ws_malloc((size_t)(r * a->nb) * sizeof(int32_t));
    if (!a->qs || !a->d || !a->c) {
        xact_free(a);
        return gb_error(GB_ENOMEM, "qgemm: cannot allocate the quantized activations (%ld rows of %ld)", (long)rows, (long)K);
    }
    return GB_OK;
}

static void xact_row(int fmt, const float *x, xact *a, int64_t t, gb_block_q8_0 *tmp) {
    const int64_t nb = a->nb;
    const int zp = fmt == GB_Q8_0 ? 128 : 8;
    gb_quantize_row_q8_0(x, tmp, a->K);
    for (int64_t b = 0; b < nb; b++) {
        memcpy(a->qs + t * a->K + b * QK, tmp[b].qs, QK);
        a->d[t * nb + b] = h2f(tmp[b].d);
#if defined(__AVX2__)
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)tmp[b].qs)),
                                            _mm256_set1_epi16(1));
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1));
        const int s = _mm_cvtsi128_si32(h);
#else
        int s = 0;
        for (int j = 0; j < QK; j++) s += tmp[b].qs[j];
#endif
        a->c[t * nb + b] = -zp * s;
    }
}

/* Quantize rows x[rows[t]] (rows NULL: x[t]), t < T, each row `ldx` floats apart. */
static int xact_prepare(int fmt, const float *x, int64_t ldx, const int64_t *rows, int64_t T, int64_t K, xact *a) {
    int st = xact_alloc(a, T, K);
    if (st != GB_OK) return st;
    const int64_t nb = K / QK;
    int fail = 0;
#pragma omp parallel if (T * K > 65536)
    {
        gb_block_q8_0 *tmp = (gb_block_q8_0 *)malloc((size_t)nb * sizeof(gb_block_q8_0));
        if (!tmp) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++)
            if (tmp) xact_row(fmt, x + (rows ? rows[t] : t) * ldx, a, t, tmp);
        free(tmp);
    }
    if (fail) {
        xact_free(a);
        return gb_error(GB_ENOMEM, "qgemm: out of memory quantizing activations");
    }
    return GB_OK;
}

/* ---- the portable version -------------------------------------------------------------------- */

static void tile_ref(int fmt, const uint8_t *gp, const xact *a, int64_t t0, int64_t tt, int64_t nvalid, float *y,
                     int64_t ldy) {
    const int64_t nb = a->nb, bb = blk_bytes(fmt) * NR, K = a->K;
    for (int64_t t = t0; t < t0 + tt; t++) {
        float acc[NR] = {0};
        const int8_t *xq = a->qs + t * K;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *o = gp + b * bb, *q = o + 2 * NR;
            const float dx = a->d[t * nb + b];
            for (int r = 0; r < NR; r++) {
                uint16_t dh;
                memcpy(&dh, o + 2 * r, 2);
                int32_t s = a->c[t * nb + b];
                if (fmt == GB_Q8_0) {
                    for (int j = 0; j < 8; j++)
                        for (int p = 0; p < 4; p++) s += (int32_t)q[j * 64 + r * 4 + p] * xq[b * QK + 4 * j + p];
                } else {
                    for (int j = 0; j < 4; j++)
                        for (int p = 0; p < 4; p++) {
                            const uint8_t v = q[j * 64 + r * 4 + p];
                            s += (int32_t)(v & 0x0f) * xq[b * QK + 4 * j + p] + (int32_t)(v >> 4) * xq[b * QK + 16 + 4 * j + p];
                        }
                }
                acc[r] += (float)s * (h2f(dh) * dx);
            }
        }
        for (int r = 0; r < nvalid; r++) y[(t - t0) * ldy + r] = acc[r];
    }
}

/* ---- AVX-512 VNNI ---------------------------------------------------------------------------- */

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#define GB_HAVE_QG_VNNI 1

static inline __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* NG groups (gstride bytes apart) x TT tokens (t0..), all blocks; y rows ldy apart, group i's 16
 * outputs at y + 16 i, the last group masked to mlast lanes. */
static inline __attribute__((always_inline)) void tile_vnni(const int fmt, const uint8_t *gp, int64_t gstride, const xact *a,
                                                            int64_t t0, float *y, int64_t ldy, __mmask16 mlast,
                                                            const int NG, const int TT) {
    const int64_t nb = a->nb, K = a->K, bb = (fmt == GB_Q8_0 ? 34 : 18) * NR;
    __m512 acc[4][8];
    for (int g = 0; g < NG; g++)
        for (int t = 0; t < TT; t++) acc[g][t] = _mm512_setzero_ps();
    const int8_t *xq = a->qs + t0 * K;
    const float *xd = a->d + t0 * nb;
    const int32_t *xc = a->c + t0 * nb;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        __m512i ia[4][8];
        for (int g = 0; g < NG; g++)
            for (int t = 0; t < TT; t++) ia[g][t] = _mm512_set1_epi32(xc[t * nb + b]);
        if (fmt == GB_Q8_0) {
            for (int j = 0; j < 8; j++) {
                __m512i w[4];
                for (int g = 0; g < NG; g++) w[g] = _mm512_loadu_si512((const void *)(gp + g * gstride + b * bb + 32 + 64 * j));
                for (int t = 0; t < TT; t++) {
                    const __m512i xv = bcast4(xq + t * K + b * QK + 4 * j);
                    for (int g = 0; g < NG; g++) ia[g][t] = _mm512_dpbusd_epi32(ia[g][t], w[g], xv);
                }
            }
        } else {
            for (int j = 0; j < 4; j++) {
                __m512i lo[4], hi[4];
                for (int g = 0; g < NG; g++) {
                    const __m512i raw = _mm512_loadu_si512((const void *)(gp + g * gstride + b * bb + 32 + 64 * j));
                    lo[g] = _mm512_and_si512(raw, m4);
                    hi[g] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
                }
                for (int t = 0; t < TT; t++) {
                    const __m512i x0 = bcast4(xq + t * K + b * QK + 4 * j), x1 = bcast4(xq + t * K + b * QK + 16 + 4 * j);
                    for (int g = 0; g < NG; g++) {
                        ia[g][t] = _mm512_dpbusd_epi32(ia[g][t], lo[g], x0);
                        ia[g][t] = _mm512_dpbusd_epi32(ia[g][t], hi[g], x1);
                    }
                }
            }
        }
        for (int g = 0; g < NG; g++) {
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(gp + g * gstride + b * bb)));
            for (int t = 0; t < TT; t++)
                acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][t]), _mm512_mul_ps(dw, _mm512_set1_ps(xd[t * nb + b])), acc[g][t]);
        }
    }
    for (int t = 0; t < TT; t++)
        for (int g = 0; g < NG; g++) {
            if (g == NG - 1) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, mlast, acc[g][t]);
            else _mm512_storeu_ps(y + t * ldy + 16 * g, acc[g][t]);
        }
}

/* Decode GEMV (one token): ng consecutive groups one after another, so a thread reads its run of the
 * matrix as one sequential stream (the prefetchers see a single stream, not the four interleaved ones
 * of the 4-group tiles: lm_head 178 MB on 1 thread 24.8 -> 31.7 GB/s). A software prefetch
 * GB_QGEMV_PF bytes ahead (0: none) was 7104 (at 1 KB a thread streamed q4_0 from DRAM at 29 GB/s, at
 * 6.6 KB 35.6: 1 thread, the read-only probe 33 GB/s, 2026-12-02, a Zen 3); on a Zen 4 (session 34,
 * alternating builds, 2 threads) the hardware prefetchers alone stream it faster: q4_0 1.01-1.05x,
 * q8_0 1.03-1.13x at read probes of 35 and 60-65 GB/s, the routed experts' 2048x1536 1.02-1.30x
 * (bench/results/kgemv_prefetch_q4k_q6k_zen4_s34_2026-12-05.md). Per block two independent int32 chains
 * (low and high nibbles / even and odd chunks) summed before the one FMA: the same integers and the
 * same float operations in the same order as tile_vnni with TT = 1, so bit-identical results. */
#ifndef GB_QGEMV_PF
#define GB_QGEMV_PF 0
#endif
static inline __attribute__((always_inline)) void gemv_vnni_run(const int fmt, const uint8_t *gp, int64_t ng, const xact *a,
                                                                float *y, __mmask16 mlast) {
    const int64_t nb = a->nb, bb = (fmt == GB_Q8_0 ? 34 : 18) * NR;
    const int8_t *xq = a->qs;
    const float *xd = a->d;
    const int32_t *xc = a->c;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int64_t g = 0; g < ng; g++) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *o = gp + b * bb;
            for (int64_t pf = 0; GB_QGEMV_PF && pf < bb; pf += 64) _mm_prefetch((const char *)(o + GB_QGEMV_PF + pf), _MM_HINT_T0);
            __m512i i0 = _mm512_set1_epi32(xc[b]), i1 = _mm512_setzero_si512();
            const int8_t *xb = xq + b * QK;
            if (fmt == GB_Q8_0) {
                for (int j = 0; j < 8; j += 2) {
                    i0 = _mm512_dpbusd_epi32(i0, _mm512_loadu_si512((const void *)(o + 32 + 64 * j)), bcast4(xb + 4 * j));
                    i1 = _mm512_dpbusd_epi32(i1, _mm512_loadu_si512((const void *)(o + 96 + 64 * j)), bcast4(xb + 4 * j + 4));
                }
            } else {
                for (int j = 0; j < 4; j++) {
                    const __m512i raw = _mm512_loadu_si512((const void *)(o + 32 + 64 * j));
                    i0 = _mm512_dpbusd_epi32(i0, _mm512_and_si512(raw, m4), bcast4(xb + 4 * j));
                    i1 = _mm512_dpbusd_epi32(i1, _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4), bcast4(xb + 16 + 4 * j));
                }
            }
            const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)o));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), _mm512_mul_ps(dw, _mm512_set1_ps(xd[b])), acc);
        }
        if (g == ng - 1) _mm512_mask_storeu_ps(y + 16 * g, mlast, acc);
        else _mm512_storeu_ps(y + 16 * g, acc);
        gp += nb * bb;
    }
}
static void gemv_vnni_q8(const uint8_t *gp, int64_t ng, const xact *a, float *y, __mmask16 m) { gemv_vnni_run(GB_Q8_0, gp, ng, a, y, m); }
static void gemv_vnni_q4(const uint8_t *gp, int64_t ng, const xact *a, float *y, __mmask16 m) { gemv_vnni_run(GB_Q4_0, gp, ng, a, y, m); }

#define TILE_CASES(FMT, NGc)                                                                       \
    switch (tt) {                                                                                  \
    case 1: tile_vnni(FMT, gp, gstride, a, t0, y, ldy, mlast, NGc, 1); break;                      \
    case 2: tile_vnni(FMT, gp, gstride, a, t0, y, ldy, mlast, NGc, 2); break;                      \
    case 3: tile_vnni(FMT, gp, gstride, a, t0, y, ldy, mlast, NGc, 3); break;                      \
    default: tile_vnni(FMT, gp, gstride, a, t0, y, ldy, mlast, NGc, 4); break;                     \
    }

/* prefill tiles: 2 groups x up to 4 tokens (16 int + 8 float accumulators); decode: 4 groups x 1-3 */
static void tile_vnni_q8_ng(int ng, const uint8_t *gp, int64_t gstride, const xact *a, int64_t t0, int64_t tt, float *y,
                            int64_t ldy, __mmask16 mlast) {
    if (ng == 4) { TILE_CASES(GB_Q8_0, 4) }
    else if (ng == 2) { TILE_CASES(GB_Q8_0, 2) }
    else { TILE_CASES(GB_Q8_0, 1) }
}
static void tile_vnni_q4_ng(int ng, const uint8_t *gp, int64_t gstride, const xact *a, int64_t t0, int64_t tt, float *y,
                            int64_t ldy, __mmask16 mlast) {
    if (ng == 4) { TILE_CASES(GB_Q4_0, 4) }
    else if (ng == 2) { TILE_CASES(GB_Q4_0, 2) }
    else { TILE_CASES(GB_Q4_0, 1) }
}
#endif

/* ---- AVX2 (+FMA +F16C) --------------------------------------------------------------------------- */

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_HAVE_QG_AVX2 1

/* The same integer block sums as the portable version, through vpmaddubsw (u8 x s8 -> s16 pairs)
 * and vpmaddwd with ones (-> s32), on half groups: a ymm holds 8 rows x 4 weights of a 64-byte
 * chunk (rows 0-7 at +0, rows 8-15 at +32). No int16 result saturates:
 *   q4_0: nibbles 0..15 against activations in [-127, 127]: a pair is at most 3810 in magnitude and
 *         the 8 pairs of a block (4 chunks x low/high nibbles) add up to at most 30480, so they are
 *         summed in int16 and widened once per block; the start -8 * sum(x_block) as the others.
 *   q8_0: stored + 128 (0..255) would overflow a pair, so the weights go back to signed
 *         (w = u ^ 0x80) and ggml's sign trick |w| x sign(x, w) runs (a pair is at most
 *         2 * 128 * 127 = 32512): sum(w x) directly, which is sum((w + 128) x) - 128 sum(x), the
 *         other versions' integer.
 * Then the same float steps: one int -> float conversion and one FMA with d_w * d_x per block, in
 * block order, so every output is bit-identical to qgemm_vnni (and to qgemm_ref where the compiler
 * contracts its multiply-add, as -march=native builds do). */
/* The GEMV's software prefetch distance: measured on a Zen 3 (25600x5120 from DRAM, 1 thread,
 * CPU time), 2 KB ahead read 13.2 / 12.6 GB/s (q4_0 / q8_0) where none read 10.5 / 10.3 and 1, 4,
 * 8 KB in between (prefetches past the end of the buffer do not fault). */
#define GB_QG_AVX2_AHEAD 2048
/* The two-stream GEMVs' distances (gemv2_avx2_q4 / _q8: each stream prefetched this far ahead): far
 * more than one stream's 2 KB. Zen 3, 25600 x 5120 from DRAM (2026-12-03, session 20, a host whose
 * read ceiling was 45 GB/s at 2 threads, 24.5 at 1): q4_0 2 KB 30.0 / 17.1 GB/s (2 threads / 1),
 * 34 KB 34.0 / 19.4, 68 KB 32.7 / 19.7; q8_0 (two streams) 2 KB 25.0 / 14.4, 34 KB 30.7 / 16.1,
 * 68 KB 29.7-32.9 / 18.1, 136 KB 27.8 / 16.9, 272 KB 26.6 / 15.6; NTA at 8.5 or 34 KB below T0. Small
 * matrices from DRAM (1.8-4.5 MB) are no slower. */
/* q4_0's since session 24 (Zen 2, 2 threads, from DRAM, every q4_0 run of groups an even count so
 * that the two streams cover it all (gemm_core): 2368 bytes ahead, NTA (GB_QG_AVX2_HINT4), about four
 * records, the K-quant GEMVs' distance: against 34816 / T0 on the old odd runs 1.02-1.18x best,
 * 1.03-1.14x median on 1.8-175 MB; against it T0 at 2368 0.83-1.00x best / 0.97-1.01x median, NTA at
 * 4736 0.96-0.99x / 0.98-1.00x; 34816 / T0 with even runs 0.91-1.03x (bench/results/session24_iq4_gemv_zen2_2026-12-04.md). Session 20's Zen 3 rows above
 * (2 KB, T0, 0.88x of 34 KB) were on 25600 x 5120, whose runs of 5 groups left one to the one-stream
 * tile; not re-measured on a Zen 3. */
#ifndef GB_QG_AVX2_AHEAD4
#define GB_QG_AVX2_AHEAD4 2368
#endif
#ifndef GB_QG_AVX2_HINT4
#define GB_QG_AVX2_HINT4 _MM_HINT_NTA
#endif
#ifndef GB_QG_AVX2_AHEAD8
#define GB_QG_AVX2_AHEAD8 69632
#endif
/* The two-stream GEMVs prefetch one line per stream per step of a block's j loop (GEMV2_PF_STEP), not
 * all of a block's lines at its start as before session 21. Zen 2 (family 23, 2 threads, 25600 x
 * 5120 and 151552 x 2048 from DRAM, 2026-12-03, three A/B runs): q8_0 1.04-1.06x (74-76% -> 78-81%
 * of the read ceiling), q4_0 1.00-1.02x. Presumably a burst of 18 prefetches fills the core's miss
 * buffers while the block's own loads wait, as the attention tiles measured (attn_tile_f16.h); not
 * measured directly here (no counters on these VMs). */
/* step j of a two-stream GEMV's block b (the caller's gpp, b, bb and j): line j of each stream AHEAD
 * bytes on, and at j = 0 the line TAIL bytes into it (the record's last: 256 for q4_0's 288-byte
 * records, 512 for q8_0's 544) */
#define GEMV2_PF_STEP(AHEAD, HINT, TAIL)                                                            \
    for (int g = 0; g < 2; g++) {                                                                  \
        const char *q_ = (const char *)(gpp[g] + b * bb + (AHEAD));                               \
        _mm_prefetch(q_ + 64 * j, HINT);                                                           \
        if (j == 0) _mm_prefetch(q_ + (TAIL), HINT);                                               \
    }
#ifndef GB_QG_AVX2_HINT8
#define GB_QG_AVX2_HINT8 _MM_HINT_T0
#endif
/* q8_0's GEMV as two streams too (gemv2_avx2_q8; 0: one stream, tile_avx2): same host, 2 threads,
 * 24.4-25.9 -> 29.7-33.5 GB/s with the distance above (session 14 saw no gain at 2 KB) */
#ifndef GB_QG_AVX2_Q8_2S
#define GB_QG_AVX2_Q8_2S 1
#endif

static inline __m256i bc4_256(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Halves h0 .. h0+H-1 (8 rows each) of one 16-row group x TT tokens (t0..), all blocks. y is the
 * group's row 0 of token t0, rows ldy apart; rows >= nvalid are not written. */
static inline __attribute__((always_inline)) void tile_avx2(const int fmt, const uint8_t *gp, const xact *a, int64_t t0,
                                                            float *y, int64_t ldy, const int h0, const int H, const int TT,
                                                            int nvalid) {
    const int64_t nb = a->nb, K = a->K, bb = (fmt == GB_Q8_0 ? 34 : 18) * NR;
    __m256 acc[2][4];
    for (int h = 0; h < H; h++)
        for (int t = 0; t < TT; t++) acc[h][t] = _mm256_setzero_ps();
    const int8_t *xq = a->qs + t0 * K;
    const float *xd = a->d + t0 * nb;
    const int32_t *xc = a->c + t0 * nb;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *o = gp + b * bb;
        if (TT == 1 && H == 2) /* the GEMV: one stream from DRAM, read ahead of the hardware prefetcher */
            for (int64_t l = 0; l < bb; l += 64) _mm_prefetch((const char *)(o + GB_QG_AVX2_AHEAD + l), _MM_HINT_T0);
        __m256i ia[2][4];
        if (fmt == GB_Q8_0) {
            const __m256i flip = _mm256_set1_epi8((char)0x80);
            for (int h = 0; h < H; h++)
                for (int t = 0; t < TT; t++) ia[h][t] = _mm256_setzero_si256();
#pragma GCC unroll 1
            for (int j = 0; j < 8; j++) {
                __m256i w[2], aw[2];
                for (int h = 0; h < H; h++) {
                    w[h] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(o + 32 + 64 * j + 32 * (h0 + h))), flip);
                    aw[h] = _mm256_abs_epi8(w[h]);
                }
                for (int t = 0; t < TT; t++) {
                    const __m256i xv = bc4_256(xq + t * K + b * QK + 4 * j);
                    for (int h = 0; h < H; h++) {
                        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw[h], _mm256_sign_epi8(xv, w[h])), ones);
                        ia[h][t] = _mm256_add_epi32(ia[h][t], p);
                    }
                }
            }
        } else {
            const __m256i m4 = _mm256_set1_epi8(0x0f);
            __m256i s16[2][4];
            for (int h = 0; h < H; h++)
                for (int t = 0; t < TT; t++) s16[h][t] = _mm256_setzero_si256();
#pragma GCC unroll 1
            for (int j = 0; j < 4; j++) {
                __m256i lo[2], hi[2];
                for (int h = 0; h < H; h++) {
                    const __m256i raw = _mm256_loadu_si256((const __m256i *)(o + 32 + 64 * j + 32 * (h0 + h)));
                    lo[h] = _mm256_and_si256(raw, m4);
                    hi[h] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
                }
                for (int t = 0; t < TT; t++) {
                    const __m256i x0 = bc4_256(xq + t * K + b * QK + 4 * j), x1 = bc4_256(xq + t * K + b * QK + 16 + 4 * j);
                    for (int h = 0; h < H; h++) {
                        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo[h], x0), _mm256_maddubs_epi16(hi[h], x1));
                        s16[h][t] = _mm256_add_epi16(s16[h][t], p);
                    }
                }
            }
            for (int h = 0; h < H; h++)
                for (int t = 0; t < TT; t++)
                    ia[h][t] = _mm256_add_epi32(_mm256_madd_epi16(s16[h][t], ones), _mm256_set1_epi32(xc[t * nb + b]));
        }
        for (int h = 0; h < H; h++) {
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * (h0 + h))));
            for (int t = 0; t < TT; t++)
                acc[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[h][t]), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t * nb + b])), acc[h][t]);
        }
    }
    for (int h = 0; h < H; h++) {
        const int r0 = 8 * (h0 + h);
        for (int t = 0; t < TT; t++) {
            if (nvalid >= r0 + 8) {
                _mm256_storeu_ps(y + t * ldy + r0, acc[h][t]);
            } else if (nvalid > r0) {
                float tmp[8];
                _mm256_storeu_ps(tmp, acc[h][t]);
                memcpy(y + t * ldy + r0, tmp, (size_t)(nvalid - r0) * sizeof(float));
            }
        }
    }
}

/* Decode GEMV step of q4_0 on two groups at once (p0 and p1, anywhere): the GEMV reads its run of
 * groups as two streams (its first and second half side by side): from DRAM on the Zen 3, 25600 x
 * 5120, one thread, CPU time, 13.7-14.2 GB/s where one stream read 11.8-12.5 (q8_0 too since
 * session 20, gemv2_avx2_q8, with the distances above). Each row's integers and float steps are the tile's, so the outputs are the
 * same bits. The second group has nvalid1 valid rows. */
/* the two-group GEMVs' outputs: the first group's 16 rows, the second's nvalid1 */
static inline void gemv2_store(const __m256 acc[4], float *y0, float *y1, int nvalid1) {
    _mm256_storeu_ps(y0, acc[0]);
    _mm256_storeu_ps(y0 + 8, acc[1]);
    for (int h = 0; h < 2; h++) {
        if (nvalid1 >= 8 * h + 8) {
            _mm256_storeu_ps(y1 + 8 * h, acc[2 + h]);
        } else if (nvalid1 > 8 * h) {
            float tmp[8];
            _mm256_storeu_ps(tmp, acc[2 + h]);
            memcpy(y1 + 8 * h, tmp, (size_t)(nvalid1 - 8 * h) * sizeof(float));
        }
    }
}

static void gemv2_avx2_q4(const uint8_t *p0, const uint8_t *p1, const xact *a, float *y0, float *y1, int nvalid1) {
    const int64_t nb = a->nb, bb = 18 * NR;
    const uint8_t *gpp[2] = {p0, p1};
    __m256 acc[4];
    for (int u = 0; u < 4; u++) acc[u] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = a->qs + b * QK;
        __m256i s16[4];
        for (int u = 0; u < 4; u++) s16[u] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < 4; j++) {
            GEMV2_PF_STEP(GB_QG_AVX2_AHEAD4, GB_QG_AVX2_HINT4, 256);
            const __m256i x0 = bc4_256(xb + 4 * j), x1 = bc4_256(xb + 16 + 4 * j);
            for (int u = 0; u < 4; u++) { /* unit u: group u / 2, rows 8 (u % 2) .. + 7 */
                const __m256i raw = _mm256_loadu_si256((const __m256i *)(gpp[u >> 1] + b * bb + 32 + 64 * j + 32 * (u & 1)));
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(raw, m4), x0),
                                                   _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), x1));
                s16[u] = _mm256_add_epi16(s16[u], p);
            }
        }
        const __m256 dx = _mm256_set1_ps(a->d[b]);
        const __m256i c = _mm256_set1_epi32(a->c[b]);
        for (int u = 0; u < 4; u++) {
            const __m256i ia = _mm256_add_epi32(_mm256_madd_epi16(s16[u], ones), c);
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gpp[u >> 1] + b * bb + 16 * (u & 1))));
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia), _mm256_mul_ps(dw, dx), acc[u]);
        }
    }
    gemv2_store(acc, y0, y1, nvalid1);
}

/* q4_0's and q8_0's decode GEMV (gemvn_avx2) on NS (<= 4) whole 16-row groups at once, anywhere: the
 * T = 1 loop (gemm_core) hands a thread groups g, g + H, g + 2H, g + 3H (H = G / NS), so each thread
 * reads NS far-apart streams, as q4_K's kp_gemvn_avx2 reads three; a whole block record (288 / 544
 * bytes) of one group, then the next group's. Each row's integers and float steps are gemv2_avx2_q4's
 * / _q8's and the tile's, in the same order: the same bits. q4_0 against the runs of groups read as
 * two streams (gemv_avx2), Zen 2, 2 threads, from DRAM (2026-12-04, bench_kgemv_dram.py A/B,
 * bench/results/session25_q4_0_q8_0_gemv_zen2_2026-12-04.md): NS 4 1.18-1.28x on 1.8-178 MB (80-83% -> 87-105% of the read ceiling at K = 2048-10240); NS 3
 * 1.11-1.21x but K = 5120 0.88x of NS 4; NS 2 0.94-1.08x of NS 3. Block by block on the old two
 * streams (instead of 64 bytes of each in turn): 0.96-1.00x. */
/* q8_0 the same way (gemv2_avx2_q8's arithmetic per row, in the same order: the same bits): NS 4
 * against the two-stream runs 1.01-1.56x best (74-87% -> 88-98% of the read ceiling, the same
 * session); its prefetch 4352 bytes ahead, NTA (2368: 0.98-0.99x, 8704: 0.96-0.98x). */
#ifndef GB_QG_AVX2_AHEAD8N
#define GB_QG_AVX2_AHEAD8N 4352
#endif
#ifndef GB_QG_AVX2_HINT8N
#define GB_QG_AVX2_HINT8N _MM_HINT_NTA
#endif
static inline __attribute__((always_inline)) void gemvn_avx2(const int fmt, const int NS, const uint8_t *const *gpp,
                                                             const xact *a, float *const *ys) {
    const int64_t nb = a->nb, bb = blk_bytes(fmt) * NR;
    __m256 acc[8];
    for (int u = 0; u < 2 * NS; u++) acc[u] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f), flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = a->qs + b * QK;
        const __m256 dx = _mm256_set1_ps(a->d[b]);
        for (int g = 0; g < NS; g++) {
            const uint8_t *o = gpp[g] + b * bb;
            __m256i ia[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            if (fmt == GB_Q4_0) { /* 4 steps of 8 nibble pairs per row half, int16 sums (<= 30480), one vpmaddwd */
                __m256i s16[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 1
                for (int j = 0; j < 4; j++) {
                    _mm_prefetch((const char *)(o + GB_QG_AVX2_AHEAD4) + 64 * j, GB_QG_AVX2_HINT4);
                    if (j == 0) _mm_prefetch((const char *)(o + GB_QG_AVX2_AHEAD4) + 256, GB_QG_AVX2_HINT4);
                    const __m256i x0 = bc4_256(xb + 4 * j), x1 = bc4_256(xb + 16 + 4 * j);
                    for (int h = 0; h < 2; h++) {
                        const __m256i raw = _mm256_loadu_si256((const __m256i *)(o + 32 + 64 * j + 32 * h));
                        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(raw, m4), x0),
                                                           _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), x1));
                        s16[h] = _mm256_add_epi16(s16[h], p);
                    }
                }
                const __m256i c = _mm256_set1_epi32(a->c[b]);
                for (int h = 0; h < 2; h++) ia[h] = _mm256_add_epi32(_mm256_madd_epi16(s16[h], ones), c);
            } else { /* q8_0: 8 steps of the sign trick, int32 sums */
#pragma GCC unroll 1
                for (int j = 0; j < 8; j++) {
                    _mm_prefetch((const char *)(o + GB_QG_AVX2_AHEAD8N) + 64 * j, GB_QG_AVX2_HINT8N);
                    if (j == 0) _mm_prefetch((const char *)(o + GB_QG_AVX2_AHEAD8N) + 512, GB_QG_AVX2_HINT8N);
                    const __m256i xv = bc4_256(xb + 4 * j);
                    for (int h = 0; h < 2; h++) {
                        const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(o + 32 + 64 * j + 32 * h)), flip);
                        ia[h] = _mm256_add_epi32(ia[h], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(xv, w)), ones));
                    }
                }
            }
            for (int h = 0; h < 2; h++) {
                const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(o + 16 * h)));
                acc[2 * g + h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[h]), _mm256_mul_ps(dw, dx), acc[2 * g + h]);
            }
        }
    }
    for (int g = 0; g < NS; g++) {
        _mm256_storeu_ps(ys[g], acc[2 * g]);
        _mm256_storeu_ps(ys[g] + 8, acc[2 * g + 1]);
    }
}
/* ns (1..4) groups of format fmt: the loop compiled per format and count */
static void gemvn_q4(int ns, const uint8_t *const *gpp, const xact *a, float *const *ys) {
    if (ns == 4) gemvn_avx2(GB_Q4_0, 4, gpp, a, ys);
    else if (ns == 3) gemvn_avx2(GB_Q4_0, 3, gpp, a, ys);
    else if (ns == 2) gemvn_avx2(GB_Q4_0, 2, gpp, a, ys);
    else if (ns == 1) gemvn_avx2(GB_Q4_0, 1, gpp, a, ys);
}
static void gemvn_q8(int ns, const uint8_t *const *gpp, const xact *a, float *const *ys) {
    if (ns == 4) gemvn_avx2(GB_Q8_0, 4, gpp, a, ys);
    else if (ns == 3) gemvn_avx2(GB_Q8_0, 3, gpp, a, ys);
    else if (ns == 2) gemvn_avx2(GB_Q8_0, 2, gpp, a, ys);
    else if (ns == 1) gemvn_avx2(GB_Q8_0, 1, gpp, a, ys);
}
#ifndef GB_QG_Q8_NS
#define GB_QG_Q8_NS 4 /* q8_0's */
#endif
#ifndef GB_QG_Q4_NS
#define GB_QG_Q4_NS 4 /* q4_0's streams per thread at T = 1 (gemvn_avx2; 0: gemv_avx2's two-stream runs) */
#endif
#ifndef GB_QG_MOE_NS
/* a decode step's routed experts the same way (gb_qmoe; 0: steps of 4 groups, gemv_avx2): top-4 of 48
 * GLM-4.7-Flash-shaped experts (2048 x 1536) from DRAM, 2 threads, q4_0 34.5-35.1 -> 40.5-41.1 GB/s
 * best (1.17-1.19x), q8_0 30.0-30.6 -> 37.5-37.6 (1.23-1.25x); 1 thread q4_0 1.12x (bench_moe_decode.py) */
#define GB_QG_MOE_NS 1
#endif
/* groups g0, g0 + H, ... (< G, all of 16 rows) of a matrix of G groups gbytes apart, one token */
static void qgemv_groups(int fmt, int NS, const uint8_t *base, int64_t gbytes, int64_t G, int64_t H, int64_t g0,
                         const xact *a, float *y) {
    const uint8_t *gpp[4];
    float *ys[4];
    int ns = 0;
    for (int i = 0; i < NS; i++) {
        const int64_t gi = g0 + i * H;
        if (gi >= G) break;
        gpp[ns] = base + gi * gbytes;
        ys[ns++] = y + NR * gi;
    }
    (fmt == GB_Q4_0 ? gemvn_q4 : gemvn_q8)(ns, gpp, a, ys);
}

/* The same for q8_0: two groups at once, each row's integers (the sign trick per 4-value step, summed
 * in int32 over the block) and float steps those of tile_avx2's q8_0 GEMV, so the same bits. */
static void gemv2_avx2_q8(const uint8_t *p0, const uint8_t *p1, const xact *a, float *y0, float *y1, int nvalid1) {
    const int64_t nb = a->nb, bb = 34 * NR;
    const uint8_t *gpp[2] = {p0, p1};
    __m256 acc[4];
    for (int u = 0; u < 4; u++) acc[u] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *xb = a->qs + b * QK;
        __m256i ia[4];
        for (int u = 0; u < 4; u++) ia[u] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < 8; j++) {
            GEMV2_PF_STEP(GB_QG_AVX2_AHEAD8, GB_QG_AVX2_HINT8, 512);
            const __m256i xv = bc4_256(xb + 4 * j);
            for (int u = 0; u < 4; u++) { /* unit u: group u / 2, rows 8 (u % 2) .. + 7 */
                const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(gpp[u >> 1] + b * bb + 32 + 64 * j + 32 * (u & 1))), flip);
                ia[u] = _mm256_add_epi32(ia[u], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(xv, w)), ones));
            }
        }
        const __m256 dx = _mm256_set1_ps(a->d[b]);
        for (int u = 0; u < 4; u++) {
            const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(gpp[u >> 1] + b * bb + 16 * (u & 1))));
            acc[u] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ia[u]), _mm256_mul_ps(dw, dx), acc[u]);
        }
    }
    gemv2_store(acc, y0, y1, nvalid1);
}

/* Decode GEMV (one token): ng consecutive groups (the first half beside the second, an odd last
 * group alone; q8_0 one after another where GB_QG_AVX2_Q8_2S is 0), both halves of a group per
 * block; the last group has nlast valid rows. */
static void gemv_avx2(int fmt, const uint8_t *gp, int64_t ng, const xact *a, float *y, int nlast) {
    const int64_t gbytes = a->nb * blk_bytes(fmt) * NR, half = fmt == GB_Q4_0 || GB_QG_AVX2_Q8_2S ? ng / 2 : 0;
    for (int64_t i = 0; i < half; i++) {
        const int64_t g1 = half + i;
        (fmt == GB_Q4_0 ? gemv2_avx2_q4 : gemv2_avx2_q8)(gp + i * gbytes, gp + g1 * gbytes, a, y + NR * i, y + NR * g1, g1 == ng - 1 ? nlast : NR);
    }
    for (int64_t g = 2 * half; g < ng; g++) {
        const int nv = g == ng - 1 ? nlast : NR;
        if (fmt == GB_Q8_0) tile_avx2(GB_Q8_0, gp + g * gbytes, a, 0, y + NR * g, 0, 0, 2, 1, nv);
        else tile_avx2(GB_Q4_0, gp + g * gbytes, a, 0, y + NR * g, 0, 0, 2, 1, nv);
    }
}

#define TILE_AVX2_CASES(FMT)                                                                       \
    switch (tt) {                                                                                  \
    case 1: tile_avx2(FMT, gp, a, t0, y, ldy, 0, 2, 1, nvalid); break;                             \
    case 2: tile_avx2(FMT, gp, a, t0, y, ldy, 0, 2, 2, nvalid); break;                             \
    case 3: tile_avx2(FMT, gp, a, t0, y, ldy, 0, 2, 3, nvalid); break;                             \
    default: tile_avx2(FMT, gp, a, t0, y, ldy, 0, 2, 4, nvalid); break;                            \
    }

/* One 16-row group x up to 4 tokens: 8 int accumulators in registers, the 8 float ones touched
 * once per block (measured at T=512 on a Zen 3 against 8 rows x 4 tokens and 16 x 2: q8_0 ~9%
 * faster, q4_0 within the noise; each x broadcast feeds both halves). */
static void group_avx2(int fmt, const uint8_t *gp, const xact *a, int64_t t0, int64_t tt, float *y, int64_t ldy, int nvalid) {
    if (fmt == GB_Q8_0) { TILE_AVX2_CASES(GB_Q8_0) }
    else { TILE_AVX2_CASES(GB_Q4_0) }
}
#endif

int gb_qgemm_available(int v) {
    if (v == GB_QG_REF) return 1;
#ifdef GB_HAVE_QG_VNNI
    if (v == GB_QG_VNNI) return 1;
#endif
#ifdef GB_HAVE_QG_AVX2
    if (v == GB_QG_AVX2) return 1;
#endif
    return 0;
}

const char *gb_qgemm_name(int v) {
    static const char *names[GB_QG_COUNT] = {"auto", "qgemm_ref", "qgemm_vnni", "qgemm_avx2"};
    return v >= 0 && v < GB_QG_COUNT ? names[v] : "?";
}

static int resolve(int version) {
    if (version == GB_QG_AUTO)
        return gb_qgemm_available(GB_QG_VNNI) ? GB_QG_VNNI : gb_qgemm_available(GB_QG_AVX2) ? GB_QG_AVX2 : GB_QG_REF;
    return version;
}

/* The rows of expert e inside activations gathered expert by expert. */
static inline xact xact_view(const xact *a, int64_t off, int64_t rows) {
    xact v = *a;
    v.qs = a->qs + off * a->K;
    v.d = a->d + off * a->nb;
    v.c = a->c + off * a->nb;
    v.rows = rows;
    return v;
}

/* Groups per step: decode-sized T gets 4 (4 independent accumulator chains per token), prefill 2. */
static inline int step_groups(int64_t T) { return T < 4 ? 4 : 2; }

/* One step (ng groups of 16 rows starting at group s * ng) for tokens tc..te of a. */
static void gemm_step(int fmt, int version, const xact *a, const uint8_t *packed, int64_t N, float *y, int64_t ldy, int64_t s,
                      int ng, int64_t tc, int64_t te) {
    const int64_t nb = a->nb, gbytes = nb * blk_bytes(fmt) * NR, G = (N + NR - 1) / NR;
    const int64_t g0 = s * ng;
    const int gn = (int)(g0 + ng <= G ? ng : G - g0);
    const int64_t n0 = g0 * NR;
    const uint8_t *gp = packed + g0 * gbytes;
    if (version == GB_QG_REF) {
        for (int gi = 0; gi < gn; gi++) {
            const int64_t nl = N - (g0 + gi) * NR;
            tile_ref(fmt, gp + gi * gbytes, a, tc, te - tc, nl < NR ? nl : NR, y + tc * ldy + n0 + gi * NR, ldy);
        }
        return;
    }
#ifdef GB_HAVE_QG_AVX2
    if (version == GB_QG_AVX2) {
        const int nlast = N % NR ? (int)(N % NR) : NR;
        if (te - tc == 1) { /* one token: the step's groups as one stream */
            const xact v = xact_view(a, tc, 1);
            gemv_avx2(fmt, gp, gn, &v, y + tc * ldy + n0, g0 + gn == G ? nlast : NR);
            return;
        }
        for (int64_t t0 = tc; t0 < te; t0 += 4) {
            const int64_t tt = te - t0 < 4 ? te - t0 : 4;
            for (int gi = 0; gi < gn; gi++)
                group_avx2(fmt, gp + gi * gbytes, a, t0, tt, y + t0 * ldy + n0 + gi * NR, ldy, g0 + gi == G - 1 ? nlast : NR);
        }
        return;
    }
#endif
#ifdef GB_HAVE_QG_VNNI
    const __mmask16 full = 0xffff, mN = (__mmask16)(N % NR ? (1u << (N % NR)) - 1 : 0xffff);
    if (te - tc == 1) { /* one token (a decode step's routed expert): the step's groups as one stream */
        const __mmask16 m = g0 + gn == G ? mN : full;
        float *yt = y + tc * ldy + n0;
        const xact v = xact_view(a, tc, 1);
        if (fmt == GB_Q8_0) gemv_vnni_q8(gp, gn, &v, yt, m);
        else gemv_vnni_q4(gp, gn, &v, yt, m);
        return;
    }
    for (int64_t t0 = tc; t0 < te; t0 += 4) {
        const int64_t tt = te - t0 < 4 ? te - t0 : 4;
        float *yt = y + t0 * ldy + n0;
        if (gn == ng) {
            const __mmask16 m = g0 + gn == G ? mN : full;
            if (fmt == GB_Q8_0) tile_vnni_q8_ng(ng, gp, gbytes, a, t0, tt, yt, ldy, m);
            else tile_vnni_q4_ng(ng, gp, gbytes, a, t0, tt, yt, ldy, m);
        } else {
            for (int gi = 0; gi < gn; gi++) {
                const __mmask16 m = g0 + gi == G - 1 ? mN : full;
                if (fmt == GB_Q8_0) tile_vnni_q8_ng(1, gp + gi * gbytes, gbytes, a, t0, tt, yt + gi * NR, ldy, m);
                else tile_vnni_q4_ng(1, gp + gi * gbytes, gbytes, a, t0, tt, yt + gi * NR, ldy, m);
            }
        }
    }
#endif
}

/* y[T, N] (rows ldy apart) from prepared activations; one OpenMP region. Token chunks of
 * GB_QG_TCHUNK keep the activations in L2 while every step's weights stream past. */
static void gemm_core(int fmt, int version, const xact *a, const uint8_t *packed, int64_t N, float *y, int64_t ldy) {
    const int64_t T = a->rows, G = (N + NR - 1) / NR;
    if (T == 0 || N == 0) return;
    const int ng = step_groups(T);
    const int64_t steps = (G + ng - 1) / ng;
    const int64_t tcs = T <= GB_QG_TCHUNK ? T : GB_QG_TCHUNK;
#if defined(GB_HAVE_QG_VNNI) || defined(GB_HAVE_QG_AVX2)
    if (T == 1 && version != GB_QG_REF) {
        /* runs of groups of ~256 KB, each read as one stream; dynamic, so a thread held up by another
         * job does not hold up the others (as gb_klinear_packed). The AVX2 version: NS streams per
         * thread instead (below; the runs where GB_QG_Q4_NS / GB_QG_Q8_NS is 0) */
        const int64_t gbytes = a->nb * blk_bytes(fmt) * NR, even = G / (8 * (int64_t)omp_get_max_threads());
        const int64_t run256 = gbytes >= (256 << 10) ? 1 : (256 << 10) / gbytes; /* groups in ~256 KB */
        int64_t run = run256;
        if (run > even) run = even > 1 ? even : 1; /* small matrices: >= 8 runs per thread to share */
        /* q4_0's AVX2 GEMV reads a run as two streams (its halves, gemv_avx2): an even count of
         * groups, so no group is left to the one-stream tile (K = 5120: runs of 5 read one in five
         * groups alone: with GB_QG_AVX2_AHEAD4's 2368 they read 0.93-0.95x the old code's speed, with
         * even runs 1.02-1.04x; q8_0, whose runs of 3 at K = 5120 read 1.06-1.22x faster than runs of 2,
         * keeps them) */
        if (version == GB_QG_AVX2 && fmt == GB_Q4_0 && run > 1 && run % 2) run--;
#ifdef GB_HAVE_QG_AVX2
        const int nsf = fmt == GB_Q4_0 ? GB_QG_Q4_NS : GB_QG_Q8_NS;
        if (version == GB_QG_AVX2 && nsf > 0 && G >= 2 && !omp_in_parallel()) {
            /* NS groups H apart per step (gemvn_avx2), guided as q4_K's loop; a last group of
             * fewer than 16 rows through the tile on its own. Not where the caller's own parallel loop
             * runs this GEMV on one thread (MLA's packed k_b, a head per call in mla_absorbed): there the runs read
             * a thread's heads as one sequential stream, and the NS streams restarting every 104 KB head
             * took 74-76 us where the runs took 63-67 (GLM-4.7-Flash-shaped Q4_K_M layer, q8_0 k_b) */
            const int NS = nsf > 0 ? nsf : 1; /* (nsf > 0 here; the guard keeps an NS 0 A/B build free of warnings) */
            const int64_t Gf = N % NR ? G - 1 : G, H = (Gf + NS - 1) / NS;
#pragma omp parallel for schedule(guided, run256 / (2 * NS) + 1) if (N * a->K > 65536)
            for (int64_t g = 0; g <= H; g++) {
                if (g == H) {
                    if (Gf < G) {
                        if (fmt == GB_Q4_0) tile_avx2(GB_Q4_0, packed + Gf * gbytes, a, 0, y + NR * Gf, 0, 0, 2, 1, (int)(N % NR));
                        else tile_avx2(GB_Q8_0, packed + Gf * gbytes, a, 0, y + NR * Gf, 0, 0, 2, 1, (int)(N % NR));
                    }
                    continue;
                }
                qgemv_groups(fmt, NS, packed, gbytes, Gf, H, g, a, y);
            }
            return;
        }
#endif
        const int64_t nrun = (G + run - 1) / run;
#pragma omp parallel for schedule(dynamic, 1) if (N * a->K > 65536)
        for (int64_t r = 0; r < nrun; r++) {
            const int64_t ga = r * run, gb = ga + run < G ? ga + run : G;
#ifdef GB_HAVE_QG_AVX2
            if (version == GB_QG_AVX2) {
                gemv_avx2(fmt, packed + ga * gbytes, gb - ga, a, y + ga * NR, gb == G && N % NR ? (int)(N % NR) : NR);
                continue;
            }
#endif
#ifdef GB_HAVE_QG_VNNI
            const __mmask16 m = gb == G ? (__mmask16)(N % NR ? (1u << (N % NR)) - 1 : 0xffff) : (__mmask16)0xffff;
            if (fmt == GB_Q8_0) gemv_vnni_q8(packed + ga * gbytes, gb - ga, a, y + ga * NR, m);
            else gemv_vnni_q4(packed + ga * gbytes, gb - ga, a, y + ga * NR, m);
#endif
        }
        return;
    }
#endif
    /* dynamic: on a shared machine a thread the OS parks (another job on its core) would hold up a
     * static half of every GEMM; with steps handed out as threads come for them the other takes them
     * (each step is ~32 rows x the chunk's tokens: ~10-20 us of work at prefill sizes) */
#pragma omp parallel if (N * a->K * T > 65536)
    {
        for (int64_t tc = 0; tc < T; tc += tcs) {
            const int64_t te = tc + tcs < T ? tc + tcs : T;
#pragma omp for schedule(dynamic, 1) nowait
            for (int64_t s = 0; s < steps; s++) gemm_step(fmt, version, a, packed, N, y, ldy, s, ng, tc, te);
        }
    }
}

int gb_qgemm(int fmt, const float *x, const void *packed, const float *bias, float *y, int64_t T, int64_t N,
             int64_t K, int version) {
    if (gb_qpacked_bytes(fmt, N, K) < 0) return gb_error(GB_EVALUE, "qgemm: format %d, N=%ld, K=%ld cannot be packed", fmt, (long)N, (long)K);
    if (T < 0) return gb_error(GB_EVALUE, "qgemm: T=%ld must be >= 0", (long)T);
    version = resolve(version);
    if (!gb_qgemm_available(version))
        return gb_error(GB_EVALUE, "qgemm: kernel version %d (%s) is not compiled in on this build", version, gb_qgemm_name(version));
    if (T == 0 || N == 0) return GB_OK;
    xact a;
    int st = xact_prepare(fmt, x, K, NULL, T, K, &a);
    if (st != GB_OK) return st;
    gemm_core(fmt, version, &a, (const uint8_t *)packed, N, y, N);
    xact_free(&a);
    if (bias)
        for (int64_t t = 0; t < T; t++)
            for (int64_t n = 0; n < N; n++) y[t * N + n] += bias[n];
    return GB_OK;
}

/* ---- routed experts -------------------------------------------------------------------------- */


int gb_qmoe(int fmt, const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k,
            const void *gate, const void *up, const void *down, int64_t E, int64_t F, int64_t D, float *y,
            int64_t *counts, int version) {
    const int64_t pgu = gb_qpacked_bytes(fmt, F, D), pd = gb_qpacked_bytes(fmt, D, F);
    if (pgu < 0 || pd < 0) return gb_error(GB_EVALUE, "qmoe: D=%ld and F=%ld must be multiples of 32", (long)D, (long)F);
    version = resolve(version);
    if (!gb_qgemm_available(version))
        return gb_error(GB_EVALUE, "qmoe: kernel version %d (%s) is not compiled in on this build", version, gb_qgemm_name(version));
    const int64_t i = gb_count_routes(topk_idx, T, k, E, D, y, counts);
    if (i >= 0) return gb_error(GB_EVALUE, "qmoe: topk_idx[%ld] = %ld is not in [0, %ld)", (long)(i / k), (long)topk_idx[i], (long)E);
    if (T == 0 || k == 0) return GB_OK;
    const int64_t R = T * k, nbD = D / QK;
    /* rows grouped expert by expert: off[e] .. off[e+1]; pos[t*k+j] = the row of (t, j) */
    int64_t *off = (int64_t *)gb_ws_calloc((size_t)(E + 1), sizeof(int64_t));
    int64_t *pos = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *tok = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *fill = (int64_t *)gb_ws_calloc((size_t)E, sizeof(int64_t));
    /* work items: (expert, matrix, step) for gate+up, then (expert, step) for down */
    int64_t *items = (int64_t *)gb_ws_malloc((size_t)(2 * E + 1) * sizeof(int64_t));
    float *g = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    xact xa = {0}, ga = {0}, ha = {0};
    int st = GB_OK;
    if (!off || !pos || !tok || !fill || !items || !g || !u || !o) {
        st = gb_error(GB_ENOMEM, "qmoe: cannot allocate the expert buffers (%ld rows, F=%ld)", (long)R, (long)F);
        goto done;
    }
    gb_group_rows(topk_idx, T, k, E, counts, off, fill, pos, tok);
    /* each token's activations quantized once, then gathered expert by expert */
    if ((st = xact_prepare(fmt, x, D, NULL, T, D, &xa)) != GB_OK) goto done;
    if ((st = xact_alloc(&ga, R, D)) != GB_OK) goto done;
    if ((st = xact_alloc(&ha, R, F)) != GB_OK) goto done;
    /* step counts per expert for gate/up (N = F) and down (N = D), prefix sums in items */
    const int64_t GF = (F + NR - 1) / NR, GD = (D + NR - 1) / NR;
    int64_t nup = 0, ndn = 0;
    for (int64_t e = 0; e < E; e++) {
        items[e] = nup;
        items[E + e] = ndn;
        if (counts[e]) {
            const int ng = step_groups(counts[e]);
            nup += 2 * ((GF + ng - 1) / ng);
            ndn += (GD + ng - 1) / ng;
        }
    }
    items[2 * E] = 0;
    /* decode-sized batches (every expert < 4 rows: steps of 4 groups): runs of steps of ~256 KB per
     * grab, so each thread streams long stretches of a matrix instead of every other 4-group step
     * (as gemm_core's GEMV); prefill-sized: one step per grab */
    int64_t cmax = 0;
    for (int64_t e = 0; e < E; e++) cmax = counts[e] > cmax ? counts[e] : cmax;
    const int64_t sb_up = 4 * NR * nbD * blk_bytes(fmt), sb_dn = 4 * NR * (F / QK) * blk_bytes(fmt);
    const int64_t cup = cmax < 4 ? 1 + (256 << 10) / (sb_up + 1) : 1, cdn = cmax < 4 ? 1 + (256 << 10) / (sb_dn + 1) : 1;
    const int nbF = (int)(F / QK);
    int fail = 0;
    /* decode (one row per expert) on AVX2: each matrix's groups NS at once, H apart, as the dense GEMV
     * (gemm_core, qgemv_groups); items (active expert, gate/up, g) then (active expert, g), in expert
     * order, in place of the 4-group steps */
#ifdef GB_HAVE_QG_AVX2
    const int nsm = fmt == GB_Q4_0 ? GB_QG_Q4_NS : GB_QG_Q8_NS;
    const int nsdec = GB_QG_MOE_NS && version == GB_QG_AVX2 && cmax == 1 && nsm > 0 && F % NR == 0 && D % NR == 0;
#else
    const int nsm = 1, nsdec = 0;
#endif
    const int NS = nsm > 0 ? nsm : 1;
    const int64_t HF = (GF + NS - 1) / NS, HD = (GD + NS - 1) / NS;
    const int64_t gbu = nbD * blk_bytes(fmt) * NR, gbd = (F / QK) * blk_bytes(fmt) * NR;
    int64_t nact = 0;
    for (int64_t e = 0; e < E; e++)
        if (counts[e]) fill[nact++] = e; /* fill: the active experts, in order (gb_group_rows is done with it) */
    const int64_t n_gu = nsdec ? nact * 2 * HF : nup, n_dn = nsdec ? nact * HD : ndn;
    const int64_t c_gu = nsdec ? 1 + (256 << 10) / (NS * gbu) : cup, c_dn = nsdec ? 1 + (256 << 10) / (NS * gbd) : cdn;
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t p = 0; p < R; p++) {
            const int64_t t = tok[p];
            memcpy(ga.qs + p * D, xa.qs + t * D, (size_t)D);
            memcpy(ga.d + p * nbD, xa.d + t * nbD, (size_t)nbD * sizeof(float));
            memcpy(ga.c + p * nbD, xa.c + t * nbD, (size_t)nbD * sizeof(int32_t));
        }
        /* gate and up of every expert: one pool of steps (dynamic: experts differ in rows) */
#pragma omp for schedule(dynamic, c_gu)
        for (int64_t it = 0; it < n_gu; it++) {
#ifdef GB_HAVE_QG_AVX2
            if (nsdec) {
                const int64_t e = fill[it / (2 * HF)], r = it % (2 * HF), which = r / HF, g0 = r % HF;
                const xact v = xact_view(&ga, off[e], 1);
                qgemv_groups(fmt, NS, (const uint8_t *)(which ? up : gate) + e * pgu, gbu, GF, HF, g0, &v,
                             (which ? u : g) + off[e] * F);
                continue;
            }
#endif
            int64_t e = 0;
            while (e + 1 < E && items[e + 1] <= it) e++;
            while (!counts[e]) e++;
            const int ng = step_groups(counts[e]);
            const int64_t per = (GF + ng - 1) / ng, r = it - items[e];
            const int which = r >= per; /* 0 gate, 1 up */
            const xact v = xact_view(&ga, off[e], counts[e]);
            gemm_step(fmt, version, &v, (const uint8_t *)(which ? up : gate) + e * pgu, F, (which ? u : g) + off[e] * F, F,
                      r - which * per, ng, 0, counts[e]);
        }
        /* h = silu(g) * u, quantized to q8_0 per row for down */
        gb_block_q8_0 *tmp = (gb_block_q8_0 *)malloc((size_t)nbF * sizeof(gb_block_q8_0));
        if (!tmp) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t p = 0; p < R; p++) {
            float *gr = g + p * F;
            const float *ur = u + p * F;
            gb_silu_mul(gr, ur, F);
            if (tmp) xact_row(fmt, gr, &ha, p, tmp);
        }
        free(tmp);
#pragma omp for schedule(dynamic, c_dn)
        for (int64_t it = 0; it < n_dn; it++) {
#ifdef GB_HAVE_QG_AVX2
            if (nsdec) {
                const int64_t e = fill[it / HD], g0 = it % HD;
                const xact v = xact_view(&ha, off[e], 1);
                qgemv_groups(fmt, NS, (const uint8_t *)down + e * pd, gbd, GD, HD, g0, &v, o + off[e] * D);
                continue;
            }
#endif
            int64_t e = 0;
            while (e + 1 < E && items[E + e + 1] <= it) e++;
            while (!counts[e]) e++;
            const int ng = step_groups(counts[e]);
            const xact v = xact_view(&ha, off[e], counts[e]);
            gemm_step(fmt, version, &v, (const uint8_t *)down + e * pd, D, o + off[e] * D, D, it - items[E + e], ng, 0, counts[e]);
        }
        /* y[t] = sum_j w[t, j] o[pos[t, j]] */
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++) gb_moe_combine(y, o, pos, topk_weight, t, t + 1, k, D);
    }
    if (fail) st = gb_error(GB_ENOMEM, "qmoe: out of memory");
done:
    xact_free(&xa);
    xact_free(&ga);
    xact_free(&ha);
    gb_ws_free(off);
    gb_ws_free(pos);
    gb_ws_free(tok);
    gb_ws_free(fill);
    gb_ws_free(items);
    gb_ws_free(g);
    gb_ws_free(u);
    gb_ws_free(o);
    return st;
}

/* hgemm.c: prefill GEMM on bf16/f16 weights as stored (see hgemm.h): the portable version, the
 * AVX-512 float32 and AVX512_BF16 micro-kernels (compiled with target attributes, so they exist
 * whatever -march the core is built with, and chosen at run time by what the CPU reports), their
 * packing, and the bf16 dot-product ceiling.
 *
 * Micro-kernel: NG (<= 4) groups of 16 weight rows x TT (<= 6) tokens = up to 24 zmm accumulators,
 * plus NG weight registers and one broadcast. Per step (one float32 column, or one bf16 pair):
 * NG loads of packed weights (from L1: the tile's K block is 32 KiB), TT broadcasts of the
 * activation, NG x TT FMAs (or vdpbf16ps, two multiply-adds per lane each). */
#include "hgemm.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define NR 16   /* rows per group: one zmm of outputs */
#define NG 4    /* groups per tile: 64 rows */
#ifndef TTM
#define TTM 6   /* tokens per register tile */
#endif
/* K blocks: 512 bf16 pairs / 512 float32 columns (4 groups x 512 x 16 lanes x 4 B = 128 KiB of panel,
 * L2-resident). They were 128 (a 32 KiB panel, L1-sized, chosen on a shared Zen 5); on a Zen 4 (2 threads,
 * GLM-4.7-Flash's projections at T = 512, builds alternating in one process, three runs) 256 ran 1.03-1.23x
 * and 512 1.08-1.37x the speed of 128, for bf16 and f16 alike (the equal K = 512 case aside):
 * bench/results/session29_hgemm_kblock_zen4_2026-12-04.md. The sums are the same either way (each block
 * continues the float32 accumulation from y in k order). */
#ifndef KCP
#define KCP 512 /* bf16 pairs per K block (1024 weights a row) */
#endif
#ifndef KCF
#define KCF 512 /* float32 columns per K block */
#endif
#define ROWS (NR * NG)
#ifndef GB_HG_AVX2_AUTO
/* GB_HG_AUTO picks the AVX2 F32FMA version (hgemm_avx2) over panel + OpenBLAS sgemm where AVX-512 is
 * not reported (0: sgemm, as before session 17) */
#define GB_HG_AVX2_AUTO 1
#endif
/* Below this many multiply-adds one thread does the whole product. */
#define PAR_MIN_MACS (1 << 20)

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define GB_HG_X86 1
#include <immintrin.h>
#define TGT_F32 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c,fma")))
#define TGT_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,f16c,fma")))
#define AI static inline __attribute__((always_inline))
#else
#define GB_HG_X86 0
#endif

/* ---- what the CPU reports ------------------------------------------------------------------ */

int gb_hgemm_cpu_features(void) {
    static int feats = -1; /* cached; threads racing to fill it store the same value (atomics: no data race) */
    const int c = __atomic_load_n(&feats, __ATOMIC_RELAXED);
    if (c >= 0) return c;
    int f = 0;
#if GB_HG_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        f |= 1;
    if (__builtin_cpu_supports("avx512bf16")) f |= 2;
    if (__builtin_cpu_supports("f16c")) f |= 4;
    if (__builtin_cpu_supports("fma")) f |= 8;
    if (__builtin_cpu_supports("avx2")) f |= 16;
#endif
    __atomic_store_n(&feats, f, __ATOMIC_RELAXED);
    return f;
}

static int has_f32fma(void) { return (gb_hgemm_cpu_features() & (1 | 4 | 8)) == (1 | 4 | 8); }
static int has_bf16dot(void) { return has_f32fma() && (gb_hgemm_cpu_features() & 2); }
/* the AVX2 version of GB_HG_F32FMA (hgemm_avx2), where AVX-512 is not reported */
static int has_avx2fma(void) { return (gb_hgemm_cpu_features() & (4 | 8 | 16)) == (4 | 8 | 16); }

int gb_hgemm_available(int v, int fmt) {
    if (fmt != GB_BF16 && fmt != GB_F16) return 0;
    switch (v) {
    case GB_HG_AUTO:
    case GB_HG_REF:
    case GB_HG_SGEMM: return 1;
    case GB_HG_F32FMA: return has_f32fma() || has_avx2fma();
    case GB_HG_BF16DOT: return fmt == GB_BF16 && has_bf16dot();
    default: return 0;
    }
}

const char *gb_hgemm_name(int v) {
    static const char *names[GB_HG_COUNT] = {"auto", "ref", "f32fma", "bf16dot", "sgemm"};
    return v >= 0 && v < GB_HG_COUNT ? names[v] : "?";
}

int gb_hgemm_pick(int fmt) {
    if (fmt == GB_BF16 && has_bf16dot()) return GB_HG_BF16DOT;
    if (has_f32fma() || (GB_HG_AVX2_AUTO && has_avx2fma())) return GB_HG_F32FMA;
    return GB_HG_SGEMM;
}

/* ---- the portable version --------------------------------------------------------------------- */

static inline float wval(const void *w, int fmt, int64_t i) {
    const uint16_t h = ((const uint16_t *)w)[i];
    return fmt == GB_BF16 ? gb_bf16_to_f32(h) : gb_f16_to_f32(h);
}

/* bf16: x rounded to bf16 first (xr), then per (k, k+1) pair the two exact products added into
 * the float32 sum, the arithmetic of vdpbf16ps; f16: float32 x as given. */
static int hgemm_ref(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y) {
    float *xr = NULL;
    const float *xs = x;
    if (fmt == GB_BF16) {
        xr = (float *)gb_ws_malloc((size_t)(T * K) * sizeof(float));
        if (!xr) return gb_error(GB_ENOMEM, "hgemm: cannot allocate %ld x %ld rounded activations", (long)T, (long)K);
        for (int64_t i = 0; i < T * K; i++) xr[i] = gb_bf16_to_f32(gb_f32_to_bf16(x[i]));
        xs = xr;
    }
#pragma omp parallel for schedule(static) if ((double)T * (double)N * (double)K >= PAR_MIN_MACS)
    for (int64_t n = 0; n < N; n++) {
        for (int64_t t = 0; t < T; t++) {
            const float *xt = xs + t * K;
            float acc = 0.0f;
            int64_t k = 0;
            for (; k + 2 <= K; k += 2) {
                acc += wval(w, fmt, n * K + k) * xt[k];
                acc += wval(w, fmt, n * K + k + 1) * xt[k + 1];
            }
            if (k < K) acc += wval(w, fmt, n * K + k) * xt[k];
            y[t * N + n] = acc;
        }
    }
    gb_ws_free(xr);
    return GB_OK;
}

#if GB_HG_X86
/* ---- packing ---------------------------------------------------------------------------------- */

/* out[c] lane r = in[r] lane c for 16 x 16 32-bit elements. */
TGT_F32 AI void transpose16(__m512i in[16], __m512i out[16]) {
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* rows 4i..4i+3: u[4i + c] holds column c (mod 4) of those rows */
        u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88), v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        out[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
        out[c + 8] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
        out[c + 4] = _mm512_shuffle_i32x4(v1, v3, 0x88);
        out[c + 12] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
    }
}

/* The tile of rows n0.. (gn groups) as bf16 pairs: pk[((kb * NG + g) * KCP + p) * 16 + r] =
 * w[n][k] | w[n][k + 1] << 16 with n = n0 + 16 g + r, k = 2 (kb KCP + p); zero past N and K. */
TGT_F32 static void pack_pairs(const uint16_t *w, int64_t N, int64_t K, int64_t n0, int gn, uint32_t *pk) {
    const int64_t K2 = (K + 1) / 2, nkb = (K2 + KCP - 1) / KCP, Kfull = K / 2;
    for (int g = 0; g < gn; g++) {
        const int64_t r0 = n0 + (int64_t)g * NR, nr = N - r0 < NR ? N - r0 : NR;
        for (int64_t kb = 0; kb < nkb; kb++) {
            const int64_t pb = kb * KCP, pe = pb + KCP < K2 ? pb + KCP : K2;
            uint32_t *dst = pk + (kb * NG + g) * KCP * NR;
            int64_t p = pb;
            if (nr == NR)
                for (; p + 16 <= pe && p + 16 <= Kfull; p += 16) {
                    __m512i in[16], out[16];
                    for (int r = 0; r < NR; r++) in[r] = _mm512_loadu_si512((const void *)(w + (r0 + r) * K + 2 * p));
                    transpose16(in, out);
                    for (int c = 0; c < 16; c++) _mm512_store_si512((void *)(dst + (p - pb + c) * NR), out[c]);
                }
            for (; p < pe; p++)
                for (int r = 0; r < NR; r++) {
                    uint32_t v = 0;
                    if (r < nr) {
                        const uint16_t *row = w + (r0 + r) * K;
                        v = row[2 * p];
                        if (2 * p + 1 < K) v |= (uint32_t)row[2 * p + 1] << 16;
                    }
                    dst[(p - pb) * NR + r] = v;
                }
        }
    }
}

/* 16 weights of a row from element k, widened to float32 bits. */
TGT_F32 AI __m512i widen16(const uint16_t *p, int fmt) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (fmt == GB_BF16) return _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    return _mm512_castps_si512(_mm512_cvtph_ps(h));
}

/* The tile of rows n0.. (gn groups) widened to float32: pf[((kb * NG + g) * KCF + k) * 16 + r]
 * = w[n0 + 16 g + r][kb KCF + k]; zero past N. */
TGT_F32 AI void pack_f32_fmt(const uint16_t *w, int fmt, int64_t N, int64_t K, int64_t n0, int gn, float *pf) {
    const int64_t nkb = (K + KCF - 1) / KCF;
    for (int g = 0; g < gn; g++) {
        const int64_t r0 = n0 + (int64_t)g * NR, nr = N - r0 < NR ? N - r0 : NR;
        for (int64_t kb = 0; kb < nkb; kb++) {
            const int64_t kbeg = kb * KCF, kend = kbeg + KCF < K ? kbeg + KCF : K;
            float *dst = pf + (kb * NG + g) * KCF * NR;
            int64_t k = kbeg;
            if (nr == NR)
                for (; k + 16 <= kend; k += 16) {
                    __m512i in[16], out[16];
                    for (int r = 0; r < NR; r++) in[r] = widen16(w + (r0 + r) * K + k, fmt);
                    transpose16(in, out);
                    for (int c = 0; c < 16; c++) _mm512_store_si512((void *)(dst + (k - kbeg + c) * NR), out[c]);
                }
            for (; k < kend; k++)
                for (int r = 0; r < NR; r++) dst[(k - kbeg) * NR + r] = r < nr ? wval(w, fmt, (r0 + r) * K + k) : 0.0f;
        }
    }
}

TGT_F32 static void pack_f32(const uint16_t *w, int fmt, int64_t N, int64_t K, int64_t n0, int gn, float *pf) {
    if (fmt == GB_BF16) pack_f32_fmt(w, GB_BF16, N, K, n0, gn, pf);
    else pack_f32_fmt(w, GB_F16, N, K, n0, gn, pf);
}

/* ---- micro-kernels ---------------------------------------------------------------------------- */

/* y[t, 16 g + r] (+)= sum over this K block, for G groups x TT tokens; the last group's stores
 * masked to mlast; acc: add to what y holds (a later K block). */
#define MK_BODY(STEP)                                                                                                 \
    __m512 acc[NG][TTM];                                                                                              \
    for (int g = 0; g < G; g++)                                                                                       \
        for (int t = 0; t < TT; t++) {                                                                                \
            const __mmask16 m = g == G - 1 ? mlast : (__mmask16)0xffff;                                               \
            acc[g][t] = add ? _mm512_maskz_loadu_ps(m, y + t * ldy + 16 * g) : _mm512_setzero_ps();                   \
        }                                                                                                             \
    STEP                                                                                                              \
    for (int g = 0; g < G; g++)                                                                                       \
        for (int t = 0; t < TT; t++) {                                                                                \
            if (g == G - 1) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, mlast, acc[g][t]);                            \
            else _mm512_storeu_ps(y + t * ldy + 16 * g, acc[g][t]);                                                   \
        }

/* pk: this K block's first group (groups KCP * 16 apart); xb: token 0's pair at this block's start,
 * tokens ldx pairs apart; np pairs. */
TGT_BF16 AI void mk_bf16(const uint32_t *pk, const uint32_t *xb, int64_t ldx, int64_t np, float *y, int64_t ldy,
                         int add, __mmask16 mlast, const int G, const int TT) {
    MK_BODY(for (int64_t p = 0; p < np; p++) {
        __m512bh wv[NG];
        for (int g = 0; g < G; g++) wv[g] = (__m512bh)_mm512_load_si512((const void *)(pk + (g * KCP + p) * NR));
        for (int t = 0; t < TT; t++) {
            const __m512bh xv = (__m512bh)_mm512_set1_epi32((int)xb[t * ldx + p]);
            for (int g = 0; g < G; g++) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], wv[g], xv);
        }
    })
}

TGT_F32 AI void mk_f32(const float *pf, const float *x, int64_t ldx, int64_t nk, float *y, int64_t ldy, int add,
                       __mmask16 mlast, const int G, const int TT) {
    MK_BODY(for (int64_t k = 0; k < nk; k++) {
        __m512 wv[NG];
        for (int g = 0; g < G; g++) wv[g] = _mm512_load_ps(pf + (g * KCF + k) * NR);
        for (int t = 0; t < TT; t++) {
            const __m512 xv = _mm512_set1_ps(x[t * ldx + k]);
            for (int g = 0; g < G; g++) acc[g][t] = _mm512_fmadd_ps(wv[g], xv, acc[g][t]);
        }
    })
}

#define MK_TT(FN, G)                                                                                                  \
    switch (tt) {                                                                                                     \
    case 1: FN(G, 1); break;                                                                                          \
    case 2: FN(G, 2); break;                                                                                          \
    case 3: FN(G, 3); break;                                                                                          \
    case 4: FN(G, 4); break;                                                                                          \
    case 5: FN(G, 5); break;                                                                                          \
    default: FN(G, 6); break;                                                                                         \
    }
#define MK_G(FN)                                                                                                      \
    switch (gn) {                                                                                                     \
    case 1: MK_TT(FN, 1) break;                                                                                       \
    case 2: MK_TT(FN, 2) break;                                                                                       \
    case 3: MK_TT(FN, 3) break;                                                                                       \
    default: MK_TT(FN, 4) break;                                                                                      \
    }

TGT_BF16 static void tile_bf16(int gn, int tt, const uint32_t *pk, const uint32_t *xb, int64_t ldx, int64_t np,
                               float *y, int64_t ldy, int add, __mmask16 mlast) {
#define CALL(G, TT) mk_bf16(pk, xb, ldx, np, y, ldy, add, mlast, G, TT)
    MK_G(CALL)
#undef CALL
}

TGT_F32 static void tile_f32(int gn, int tt, const float *pf, const float *x, int64_t ldx, int64_t nk, float *y,
                             int64_t ldy, int add, __mmask16 mlast) {
#define CALL(G, TT) mk_f32(pf, x, ldx, nk, y, ldy, add, mlast, G, TT)
    MK_G(CALL)
#undef CALL
}

/* x[T, K] -> bf16 pairs xb[T, K2] (round to nearest even; an odd K's last pair padded with 0). */
TGT_BF16 static void round_x(const float *x, int64_t T, int64_t K, uint32_t *xb) {
    const int64_t K2 = (K + 1) / 2;
#pragma omp parallel for schedule(static) if (T * K >= 65536)
    for (int64_t t = 0; t < T; t++) {
        const float *xt = x + t * K;
        uint16_t *o = (uint16_t *)(xb + t * K2);
        int64_t k = 0;
        for (; k + 16 <= K; k += 16) _mm256_storeu_si256((__m256i *)(o + k), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(xt + k)));
        for (; k < K; k++) o[k] = gb_f32_to_bf16(xt[k]);
        if (K & 1) o[K] = 0;
    }
}

/* Token chunks of the drivers' work items (ntiles row tiles x chunks): enough items (8 per thread)
 * for a dynamic schedule to even out a small N, each chunk at least 48 tokens (a tile's packing is
 * repeated once per chunk), whole register tiles of ttm tokens; *tcs: tokens per chunk. */
static int64_t token_chunks(int64_t T, int64_t ntiles, int nth, int ttm, int64_t *tcs) {
    int64_t tchunks = (8 * (int64_t)nth + ntiles - 1) / ntiles;
    const int64_t tmax = (T + 47) / 48;
    if (tchunks > tmax) tchunks = tmax;
    if (tchunks < 1) tchunks = 1;
    *tcs = ((T + tchunks - 1) / tchunks + ttm - 1) / ttm * ttm;
    return (T + *tcs - 1) / *tcs;
}

/* ---- the AVX2 + FMA + F16C version of GB_HG_F32FMA (CPUs without AVX-512) -------------------------
 * The same blocking with 8 rows per ymm: a tile of A2_ROWS rows is widened exactly to float32 into
 * panels pf[((kb * A2_G + g) * A2_KC + k) * 8 + r] = w[n0 + 8 g + r][kb A2_KC + k] (zero past N);
 * the register tile is 2 groups (16 rows) x 6 tokens: 12 ymm accumulators, 2 weight loads and one
 * broadcast per column, the shape of the 6x16 float32 micro-kernels BLIS and OpenBLAS run on
 * Haswell/Zen. Against the panel + sgemm path it replaces (gb_linear's version 4), the widening
 * runs inside each thread's work item instead of serially between sgemm calls. The same products
 * and float32 sums as every F32FMA version, in its own order. */
#define TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define A2_NR 8                  /* rows per ymm */
#define A2_G 8                   /* 8-row groups per tile: 64 rows */
#define A2_ROWS (A2_NR * A2_G)
#ifndef A2_KC
/* float32 columns per K block: a 16-row register tile's panel 16 KiB (L1), the tile's 64 KiB (L2).
 * Zen 3, 2 threads, against 128 and 192 (2 rounds): T = 512 1.00-1.06x OpenBLAS's sgemm (128:
 * 0.93-1.03x), T = 128 1.15-1.22x (1.04-1.16x). The other loop order (the register tile's groups
 * outside the tokens) was slower at 64, 128 and 256. */
#define A2_KC 256
#endif
#define A2_TT 6                  /* tokens per register tile */

/* out[c] lane r = in[r] lane c, 8 x 8 float32 */
TGT_AVX2 AI void transpose8_avx2(__m256 in[8], __m256 out[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(in[2 * i], in[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(in[2 * i], in[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        out[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        out[c + 4] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* 8 weights of a row from element k, widened exactly to float32 */
TGT_AVX2 AI __m256 widen8_avx2(const uint16_t *p, int fmt) {
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (fmt == GB_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* K block kb of the tile of rows n0.. (gn groups) */
TGT_AVX2 AI void pack_avx2_fmt(const uint16_t *w, int fmt, int64_t N, int64_t K, int64_t n0, int gn, int64_t kb, float *pf) {
    const int64_t kbeg = kb * A2_KC, kend = kbeg + A2_KC < K ? kbeg + A2_KC : K;
    for (int g = 0; g < gn; g++) {
        const int64_t r0 = n0 + (int64_t)g * A2_NR, nr = N - r0 < A2_NR ? N - r0 : A2_NR;
        float *dst = pf + (kb * A2_G + g) * A2_KC * A2_NR;
        int64_t k = kbeg;
        if (nr == A2_NR)
            for (; k + 8 <= kend; k += 8) {
                __m256 in[8], out[8];
                for (int r = 0; r < A2_NR; r++) in[r] = widen8_avx2(w + (r0 + r) * K + k, fmt);
                transpose8_avx2(in, out);
                for (int c = 0; c < 8; c++) _mm256_store_ps(dst + (k - kbeg + c) * A2_NR, out[c]);
            }
        for (; k < kend; k++)
            for (int r = 0; r < A2_NR; r++) dst[(k - kbeg) * A2_NR + r] = r < nr ? wval(w, fmt, (r0 + r) * K + k) : 0.0f;
    }
}

TGT_AVX2 static void pack_avx2(const uint16_t *w, int fmt, int64_t N, int64_t K, int64_t n0, int gn, int64_t kb, float *pf) {
    if (fmt == GB_BF16) pack_avx2_fmt(w, GB_BF16, N, K, n0, gn, kb, pf);
    else pack_avx2_fmt(w, GB_F16, N, K, n0, gn, kb, pf);
}

/* y[t, 8 g + r] (+)= this K block's sums for G (1 or 2) groups from pf (the first group's panel,
 * groups A2_KC * 8 apart) x TT tokens; nlast: the rows of the last group to store (1..8); add: to
 * what y holds (a later K block). Rows past N are computed on zero weights and not stored. */
TGT_AVX2 AI void mk_avx2(const float *pf, const float *x, int64_t ldx, int64_t nk, float *y, int64_t ldy, int add,
                         int nlast, const int G, const int TT) {
    __m256 acc[2][A2_TT];
    /* lane r < nlast; made again after the loop (the asm keeps gcc from holding it in a register
     * through the loop, where the 12 accumulators, 2 weights and the broadcast need 15 of the 16) */
    __m256i mlast = _mm256_cmpgt_epi32(_mm256_set1_epi32(nlast), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 2
    for (int g = 0; g < G; g++)
#pragma GCC unroll 6
        for (int t = 0; t < TT; t++) {
            float *yp = y + t * ldy + 8 * g;
            acc[g][t] = !add ? _mm256_setzero_ps() : g == G - 1 && nlast < 8 ? _mm256_maskload_ps(yp, mlast) : _mm256_loadu_ps(yp);
        }
    for (int64_t k = 0; k < nk; k++) {
        __m256 wv[2];
#pragma GCC unroll 2
        for (int g = 0; g < G; g++) wv[g] = _mm256_load_ps(pf + (g * A2_KC + k) * A2_NR);
#pragma GCC unroll 6
        for (int t = 0; t < TT; t++) {
            const __m256 xv = _mm256_broadcast_ss(x + t * ldx + k);
#pragma GCC unroll 2
            for (int g = 0; g < G; g++) acc[g][t] = _mm256_fmadd_ps(wv[g], xv, acc[g][t]);
        }
    }
    __asm__("" : "+r"(nlast));
    mlast = _mm256_cmpgt_epi32(_mm256_set1_epi32(nlast), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 2
    for (int g = 0; g < G; g++)
#pragma GCC unroll 6
        for (int t = 0; t < TT; t++) {
            float *yp = y + t * ldy + 8 * g;
            if (g == G - 1 && nlast < 8) _mm256_maskstore_ps(yp, mlast, acc[g][t]);
            else _mm256_storeu_ps(yp, acc[g][t]);
        }
}

TGT_AVX2 static void tile_avx2(int gn, int tt, const float *pf, const float *x, int64_t ldx, int64_t nk, float *y, int64_t ldy,
                               int add, int nlast) {
#define CALL(G, TT) mk_avx2(pf, x, ldx, nk, y, ldy, add, nlast, G, TT)
#define A2_TTS(G)                                                                                                     \
    switch (tt) {                                                                                                     \
    case 1: CALL(G, 1); break;                                                                                        \
    case 2: CALL(G, 2); break;                                                                                        \
    case 3: CALL(G, 3); break;                                                                                        \
    case 4: CALL(G, 4); break;                                                                                        \
    case 5: CALL(G, 5); break;                                                                                        \
    default: CALL(G, 6); break;                                                                                       \
    }
    if (gn == 1) A2_TTS(1)
    else A2_TTS(2)
#undef A2_TTS
#undef CALL
}

static int hgemm_avx2(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y) {
    const int64_t nkb = (K + A2_KC - 1) / A2_KC;
    const size_t pbytes = (size_t)(nkb * A2_G * A2_NR * A2_KC) * sizeof(float);
    const int64_t ntiles = (N + A2_ROWS - 1) / A2_ROWS;
    const int nth = (double)T * (double)N * (double)K >= PAR_MIN_MACS ? omp_get_max_threads() : 1;
    int64_t tcs;
    const int64_t tchunks = token_chunks(T, ntiles, nth, A2_TT, &tcs), items = ntiles * tchunks;
    int fail = 0;
#pragma omp parallel num_threads(nth)
    {
        float *buf = (float *)gb_ws_aligned_alloc(64, pbytes);
        int64_t packed = -1, kpacked = 0; /* the tile in buf, and its K blocks packed so far */
        if (!buf) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            if (!buf) continue;
            const int64_t nt = it / tchunks, tc = it % tchunks;
            const int64_t n0 = nt * A2_ROWS, nrows = N - n0 < A2_ROWS ? N - n0 : A2_ROWS;
            const int gn = (int)((nrows + A2_NR - 1) / A2_NR);
            const int64_t t0 = tc * tcs, t1 = t0 + tcs < T ? t0 + tcs : T;
            if (packed != nt) { /* consecutive items of one tile on this thread share the packing */
                packed = nt;
                kpacked = 0;
            }
            for (int64_t kb = 0; kb < nkb; kb++) {
                const int64_t kbeg = kb * A2_KC, nk = K - kbeg < A2_KC ? K - kbeg : A2_KC;
                /* each K block packed right before its first use, so it is read back from L2 (the whole
                 * tile at K = 5120 is 1.3 MB: packed up front, every block came back from L3) */
                if (kb == kpacked) {
                    pack_avx2((const uint16_t *)w, fmt, N, K, n0, gn, kb, buf);
                    kpacked = kb + 1;
                }
                for (int64_t t = t0; t < t1; t += A2_TT)
                    for (int g = 0; g < gn; g += 2) { /* 16-row register tiles over the tile's groups */
                        const int tt = (int)(t1 - t < A2_TT ? t1 - t : A2_TT);
                        const int g2 = gn - g < 2 ? gn - g : 2;
                        const int64_t rl = nrows - 8 * (g + g2 - 1); /* rows of the last group stored */
                        tile_avx2(g2, tt, buf + (kb * A2_G + g) * A2_KC * A2_NR, x + t * K + kbeg, K, nk, y + t * N + n0 + 8 * g, N,
                                  kb > 0, (int)(rl < 8 ? rl : 8));
                    }
            }
        }
        gb_ws_free(buf);
    }
    if (fail) return gb_error(GB_ENOMEM, "hgemm: cannot allocate a %zu-byte packed weight tile", pbytes);
    return GB_OK;
}

/* ---- the driver ------------------------------------------------------------------------------- */

static int hgemm_simd(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y, int version) {
    const int bf = version == GB_HG_BF16DOT;
    const int64_t K2 = (K + 1) / 2;
    uint32_t *xb = NULL;
    if (bf) {
        xb = (uint32_t *)gb_ws_aligned_alloc(64, (size_t)(T * K2) * sizeof(uint32_t));
        if (!xb) return gb_error(GB_ENOMEM, "hgemm: cannot allocate %ld x %ld bf16 activations", (long)T, (long)K);
        round_x(x, T, K, xb);
    }
    /* packed tile: NG groups x all K blocks */
    const int64_t nkb = bf ? (K2 + KCP - 1) / KCP : (K + KCF - 1) / KCF;
    const size_t pbytes = (size_t)(nkb * NG * NR) * (size_t)(bf ? KCP * sizeof(uint32_t) : KCF * sizeof(float));
    const int64_t ntiles = (N + ROWS - 1) / ROWS;
    const int nth = (double)T * (double)N * (double)K >= PAR_MIN_MACS ? omp_get_max_threads() : 1;
    int64_t tcs;
    const int64_t tchunks = token_chunks(T, ntiles, nth, TTM, &tcs), items = ntiles * tchunks;
    int fail = 0;
#pragma omp parallel num_threads(nth)
    {
        void *buf = gb_ws_aligned_alloc(64, pbytes);
        int64_t packed = -1;
        if (!buf) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < items; it++) {
            if (!buf) continue;
            const int64_t nt = it / tchunks, tc = it % tchunks;
            const int64_t n0 = nt * ROWS, nrows = N - n0 < ROWS ? N - n0 : ROWS;
            const int gn = (int)((nrows + NR - 1) / NR);
            const __mmask16 mlast = nrows % NR ? (__mmask16)((1u << (nrows % NR)) - 1u) : (__mmask16)0xffff;
            const int64_t t0 = tc * tcs, t1 = t0 + tcs < T ? t0 + tcs : T;
            if (packed != nt) { /* consecutive items of one tile on this thread share the packing */
                if (bf) pack_pairs((const uint16_t *)w, N, K, n0, gn, (uint32_t *)buf);
                else pack_f32((const uint16_t *)w, fmt, N, K, n0, gn, (float *)buf);
                packed = nt;
            }
            for (int64_t kb = 0; kb < nkb; kb++) {
                for (int64_t t = t0; t < t1; t += TTM) {
                    const int tt = (int)(t1 - t < TTM ? t1 - t : TTM);
                    float *yt = y + t * N + n0;
                    if (bf) {
                        const int64_t pb = kb * KCP, np = K2 - pb < KCP ? K2 - pb : KCP;
                        tile_bf16(gn, tt, (const uint32_t *)buf + kb * NG * KCP * NR, xb + t * K2 + pb, K2, np, yt, N,
                                  kb > 0, mlast);
                    } else {
                        const int64_t kbeg = kb * KCF, nk = K - kbeg < KCF ? K - kbeg : KCF;
                        tile_f32(gn, tt, (const float *)buf + kb * NG * KCF * NR, x + t * K + kbeg, K, nk, yt, N,
                                 kb > 0, mlast);
                    }
                }
            }
        }
        gb_ws_free(buf);
    }
    gb_ws_free(xb);
    if (fail) return gb_error(GB_ENOMEM, "hgemm: cannot allocate a %zu-byte packed weight tile", pbytes);
    return GB_OK;
}

/* ---- the bf16 dot-product ceiling -------------------------------------------------------------- */

TGT_BF16 static double bf16dot_loop(int64_t iters, int tid) {
    __m512 acc[16];
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f7f3f7f), b = (__m512bh)_mm512_set1_epi32(0x33d633d6); /* ~1, ~1e-7 */
    for (int j = 0; j < 16; j++) acc[j] = _mm512_set1_ps((float)(j + tid));
    for (int64_t i = 0; i < iters; i++)
        for (int j = 0; j < 16; j++) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
    __m512 s = acc[0];
    for (int j = 1; j < 16; j++) s = _mm512_add_ps(s, acc[j]);
    return _mm512_reduce_add_ps(s);
}
#endif /* GB_HG_X86 */

int gb_bench_bf16dot(int64_t iters, int reps, double *gflops) {
    if (iters < 1 || reps < 1 || iters > ((int64_t)1 << 32) || reps > 1000)
        return gb_error(GB_EVALUE, "bench_bf16dot: need 1 <= iters <= 2^32 and 1 <= reps <= 1000, got %ld, %d", (long)iters,
                        reps);
#if GB_HG_X86
    if (!has_bf16dot()) return gb_error(GB_EVALUE, "bench_bf16dot: this CPU does not report avx512_bf16");
    double best = 1e30, sink = 0.0;
    int nthreads = 1;
    for (int r = 0; r < reps; r++) {
        const double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
        {
#pragma omp single
            nthreads = omp_get_num_threads();
            sink += bf16dot_loop(iters, omp_get_thread_num());
        }
        const double dt = omp_get_wtime() - t0;
        if (dt < best) best = dt;
    }
    *gflops = (double)iters * 16 * 64 * nthreads / best / 1e9;
    return sink == -1.0 ? GB_EINTERNAL : GB_OK;
#else
    (void)gflops;
    return gb_error(GB_EVALUE, "bench_bf16dot: not an x86 build");
#endif
}

int gb_hgemm(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y, int version) {
    if (fmt != GB_BF16 && fmt != GB_F16) return gb_error(GB_ETYPE, "hgemm: weights must be bf16 or f16, got format %d", fmt);
    if (T < 0 || K <= 0 || N <= 0)
        return gb_error(GB_EVALUE, "hgemm: sizes must be positive, got T=%ld K=%ld N=%ld", (long)T, (long)K, (long)N);
    if (version == GB_HG_AUTO) {
        version = gb_hgemm_pick(fmt);
        if (version == GB_HG_SGEMM) version = GB_HG_REF;
    }
    if (version == GB_HG_SGEMM || !gb_hgemm_available(version, fmt))
        return gb_error(GB_EVALUE, "hgemm: kernel %s does not run %s weights on this CPU", gb_hgemm_name(version),
                        fmt == GB_BF16 ? "bf16" : "f16");
    if (T == 0) return GB_OK;
    if (version == GB_HG_REF) return hgemm_ref(x, T, K, w, fmt, N, y);
#if GB_HG_X86
    if (version == GB_HG_F32FMA && !has_f32fma()) return hgemm_avx2(x, T, K, w, fmt, N, y);
    return hgemm_simd(x, T, K, w, fmt, N, y, version);
#else
    return gb_error(GB_EINTERNAL, "hgemm: no SIMD kernels in this build");
#endif
}

/* quant_k.c: ggml K-quants (q4_K, q5_K, q6_K) as stored: dequantize, q8_K activations, and the
 * quantized linear (decode GEMV and prefill GEMM share one driver). See quant_k.h for the layouts
 * and the arithmetic every version follows.
 *
 * Driver: activations quantized to q8_K once per call; token chunks small enough to stay in L2;
 * OpenMP over weight rows. Per (row, super-block) the weights are decoded once - the portable
 * version into a small struct, the VNNI version into four zmm of unsigned bytes plus per-lane int32
 * scales - and dotted with every token of the chunk. The weights are read in the ggml layout as
 * stored (no repacked copy): a row of super-blocks is one contiguous stream. The AVX2 version
 * (kp_tile_avx2, kp_tile2_avx2) reads the repacked layout only; elsewhere it runs the portable code. */
#include "quant_k.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif
/* the AVX2 version (repacked K formats): compiled wherever AVX2, FMA and F16C are */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_HAVE_K_AVX2 1
#endif

#include "common.h"

#ifdef _OPENMP
#include <omp.h>
#else
static inline int omp_get_num_threads(void) { return 1; }
#endif

#define QKK GB_QKK

static inline float h2f(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return gb_f16_to_f32(h);
#endif
}

int gb_is_kfmt(int fmt) {
    return fmt == GB_Q2_K || fmt == GB_Q3_K || fmt == GB_Q4_K || fmt == GB_Q5_K || fmt == GB_Q6_K || fmt == GB_IQ4_XS;
}

static inline int64_t kblk_bytes(int fmt) {
    return fmt == GB_Q2_K ? 84 : fmt == GB_Q3_K ? 110 : fmt == GB_Q4_K ? 144 : fmt == GB_Q5_K ? 176 : fmt == GB_Q6_K ? 210 : 136;
}

/* iq4_nl's non-linear 4-bit grid (ggml-common.h kvalues_iq4nl), which iq4_xs indexes */
static const int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* q3_K's 16 6-bit scales (ggml's aux trick), as stored: subtract 32 for the signed scale */
static inline void q3_scales(const uint8_t *s12, uint32_t aux[4]) {
    memcpy(aux, s12, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & 0x0f0f0f0fu) | (((tmp >> 4) & 0x03030303u) << 4);
    aux[3] = ((aux[1] >> 4) & 0x0f0f0f0fu) | (((tmp >> 6) & 0x03030303u) << 4);
    aux[0] = (aux[0] & 0x0f0f0f0fu) | (((tmp >> 0) & 0x03030303u) << 4);
    aux[1] = (aux[1] & 0x0f0f0f0fu) | (((tmp >> 2) & 0x03030303u) << 4);
}

int64_t gb_k_row_bytes(int fmt, int64_t n) {
    if (!gb_is_kfmt(fmt) || n < 0 || n % QKK) return -1;
    return n / QKK * kblk_bytes(fmt);
}

/* ---- one super-block decoded (portable) ------------------------------------------------------ */

/* The 6-bit scale and min of sub-block j (ggml's get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* unsigned values q[256], an int scale and an int min weight per 16 values, the two float scales */
typedef struct {
    float d, dm;
    int off; /* 1: msum is only the values' offset (q6_K, iq4_xs): (d*dx)*(isum - msum), see quant_k.h */
    int32_t sc[16];
    int16_t mn[16];
    uint8_t q[QKK];
} kdec;

static inline int k_off_only(int fmt) { return fmt == GB_Q6_K || fmt == GB_Q3_K || fmt == GB_IQ4_XS; }

/* one super-block's float32 term, the formula of every version (quant_k.h) */
static inline float kterm(int off, float d, float dm, float dx, int32_t isum, int32_t msum) {
    if (off) return (d * dx) * (float)(int32_t)((uint32_t)isum - (uint32_t)msum);
    return (d * dx) * (float)isum - (dm * dx) * (float)msum;
}

static void kdecode(int fmt, const uint8_t *b, kdec *o) {
    o->off = k_off_only(fmt);
    if (fmt == GB_IQ4_XS) {
        /* 8 sub-blocks of 32: 6-bit scale (low nibble in scales_l, 2 high bits in scales_h) - 32;
         * values kvalues[nibble] stored + 128 (unsigned), the offset comes off as 128 * sc * bsum */
        const uint16_t sh = (uint16_t)(b[2] | (b[3] << 8));
        const uint8_t *sl = b + 4, *qs = b + 8;
        o->d = o->dm = h2f(b);
        for (int ib = 0; ib < 8; ib++) {
            const int ls = ((sl[ib / 2] >> (4 * (ib % 2))) & 0x0f) | (((sh >> (2 * ib)) & 3) << 4);
            o->sc[2 * ib] = o->sc[2 * ib + 1] = ls - 32;
            o->mn[2 * ib] = o->mn[2 * ib + 1] = (int16_t)(128 * (ls - 32));
            for (int j = 0; j < 16; j++) {
                o->q[32 * ib + j] = (uint8_t)(kvalues_iq4nl[qs[16 * ib + j] & 0x0f] + 128);
                o->q[32 * ib + 16 + j] = (uint8_t)(kvalues_iq4nl[qs[16 * ib + j] >> 4] + 128);
            }
        }
        return;
    }
    if (fmt == GB_Q2_K || fmt == GB_Q3_K) {
        /* 2-bit values: value 128n + 32j + m (m < 32) is bits 2j..2j+1 of qs[32n + m] */
        const uint8_t *qs = fmt == GB_Q2_K ? b + 16 : b + 32;
        for (int n = 0; n < 2; n++)
            for (int j = 0; j < 4; j++)
                for (int m = 0; m < 32; m++) {
                    int v = (qs[32 * n + m] >> (2 * j)) & 3;
                    if (fmt == GB_Q3_K) v |= ((b[m] >> (4 * n + j)) & 1) << 2; /* hmask bit 4n + j: value - 4 when clear */
                    o->q[128 * n + 32 * j + m] = (uint8_t)v;
                }
        if (fmt == GB_Q2_K) {
            o->d = h2f(b + 80);
            o->dm = h2f(b + 82);
            for (int c = 0; c < 16; c++) {
                o->sc[c] = b[c] & 0x0f;
                o->mn[c] = (int16_t)(b[c] >> 4);
            }
        } else {
            uint32_t aux[4];
            q3_scales(b + 96, aux);
            const uint8_t *sc = (const uint8_t *)aux;
            o->d = o->dm = h2f(b + 108);
            for (int c = 0; c < 16; c++) {
                o->sc[c] = (int)sc[c] - 32;
                o->mn[c] = (int16_t)(4 * o->sc[c]); /* the stored value is q + 4 (hmask set) or q: offset 4 */
            }
        }
        return;
    }
    if (fmt == GB_Q6_K) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        o->d = o->dm = h2f(b + 208);
        for (int c = 0; c < 16; c++) {
            o->sc[c] = sc[c];
            o->mn[c] = (int16_t)(32 * sc[c]);
        }
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const uint8_t *L = ql + 64 * h, *H = qh + 32 * h;
                uint8_t *q = o->q + 128 * h;
                q[l] = (uint8_t)((L[l] & 0x0f) | (((H[l] >> 0) & 3) << 4));
                q[l + 32] = (uint8_t)((L[l + 32] & 0x0f) | (((H[l] >> 2) & 3) << 4));
                q[l + 64] = (uint8_t)((L[l] >> 4) | (((H[l] >> 4) & 3) << 4));
                q[l + 96] = (uint8_t)((L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4));
            }
        return;
    }
    o->d = h2f(b);
    o->dm = h2f(b + 2);
    const uint8_t *scales = b + 4;
    for (int j = 0; j < 8; j++) {
        int s, m;
        scale_min_k4(j, scales, &s, &m);
        o->sc[2 * j] = o->sc[2 * j + 1] = s;
        o->mn[2 * j] = o->mn[2 * j + 1] = (int16_t)m;
    }
    const uint8_t *qs = fmt == GB_Q4_K ? b + 16 : b + 48, *qh = b + 16;
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 0x0f, hi = qs[32 * c + l] >> 4;
            if (fmt == GB_Q5_K) {
                lo += ((qh[l] >> (2 * c)) & 1) << 4;
                hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            o->q[64 * c + l] = (uint8_t)lo;
            o->q[64 * c + 32 + l] = (uint8_t)hi;
        }
}

/* ---- dequantize ------------------------------------------------------------------------------ */

/* ggml's arithmetic: (d*sc)*q - (dmin*m) for q2_K/q4_K/q5_K, (d*sc)*(q-32) for q6_K, (d*(sc-32))*(q-4)
 * for q3_K (q the 3-bit value with the hmask bit on top), (d*(ls-32))*kvalue for iq4_xs, float32, no FMA */
static void dequantize_row_k(int fmt, const uint8_t *src, float *y, int64_t k) {
    kdec o;
    for (int64_t i = 0; i < k / QKK; i++) {
        kdecode(fmt, src + i * kblk_bytes(fmt), &o);
        float *yb = y + i * QKK;
        for (int c = 0; c < 16; c++) {
            const float d1 = o.d * (float)o.sc[c];
            if (fmt == GB_Q6_K || fmt == GB_Q3_K || fmt == GB_IQ4_XS) {
                const int off = fmt == GB_Q6_K ? 32 : fmt == GB_Q3_K ? 4 : 128;
                for (int j = 0; j < 16; j++) yb[16 * c + j] = d1 * (float)((int)o.q[16 * c + j] - off);
            } else {
                const float m1 = o.dm * (float)o.mn[c];
                for (int j = 0; j < 16; j++) yb[16 * c + j] = d1 * (float)o.q[16 * c + j] - m1;
            }
        }
    }
}

int gb_k_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k) {
    const int64_t rb = gb_k_row_bytes(fmt, k);
    if (rb < 0) return gb_error(GB_EVALUE, "dequantize: format %d with k=%ld is not a K-quant row (k %% 256 == 0)", fmt, (long)k);
#pragma omp parallel for schedule(static) if (rows * k > 1 << 18)
    for (int64_t r = 0; r < rows; r++) dequantize_row_k(fmt, (const uint8_t *)src + r * rb, y + r * k, k);
    return GB_OK;
}

/* ---- q8_K activations -------------------------------------------------------------------------- */

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* one block, the same bytes as the portable loop below: the first value of largest magnitude
 * found by a vector max then a compare, values rounded by vcvtps2dq (round half to even, the
 * default MXCSR mode, as rintf), clipped at 127, each 16-value sum from the clipped values */
static void quantize_block_q8_K_avx512(const float *xb, gb_block_q8_K *y) {
    const __m512 sgn = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 vm = _mm512_setzero_ps();
    for (int j = 0; j < QKK / 16; j++) vm = _mm512_max_ps(vm, _mm512_and_ps(_mm512_loadu_ps(xb + 16 * j), sgn));
    const float amax = _mm512_reduce_max_ps(vm);
    if (!amax) {
        memset(y, 0, sizeof(gb_block_q8_K));
        return;
    }
    float max = 0.0f;
    const __m512 va = _mm512_set1_ps(amax);
    for (int j = 0; j < QKK / 16; j++) {
        const __mmask16 m = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(xb + 16 * j), sgn), va, _CMP_EQ_OQ);
        if (m) {
            max = xb[16 * j + __builtin_ctz((unsigned)m)];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    for (int j = 0; j < QKK / 16; j++) {
        const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vs, _mm512_loadu_ps(xb + 16 * j))), _mm512_set1_epi32(127));
        _mm_storeu_si128((__m128i *)(y->qs + 16 * j), _mm512_cvtepi32_epi8(v));
        y->bsums[j] = (int16_t)_mm512_reduce_add_epi32(v);
    }
    y->d = 1.0f / iscale;
}
#endif

/* one block, portable (ggml's quantize_row_q8_K_ref) */
static void quantize_block_q8_K_ref(const float *xb, gb_block_q8_K *y) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < QKK; j++) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (!amax) {
        memset(y, 0, sizeof(gb_block_q8_K));
        return;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < QKK; j++) {
        const int v = gb_f2i(rintf(iscale * xb[j])); /* ggml's nearest_int: round half to even (NaN: INT32_MIN -> 0) */
        y->qs[j] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < QKK / 16; j++) {
        int s = 0;
        for (int l = 0; l < 16; l++) s += y->qs[16 * j + l];
        y->bsums[j] = (int16_t)s;
    }
    y->d = 1.0f / iscale;
}

#if defined(__AVX2__) && !(defined(__AVX512F__) && defined(__AVX512BW__))
/* one block in AVX2, the bytes of the portable loop: the first value of largest magnitude by a
 * vector max then a compare, values rounded by vcvtps2dq (round half to even, the default MXCSR
 * mode, as rintf). Every value is then in [-127, 127], so the saturating packs are exact. Returns 0,
 * writing nothing, for a block the portable loop must do: a non-finite value, or a scale -127/max
 * that overflows (max tiny), where the portable loop's int conversions of inf/NaN decide the bytes. */
static int quantize_block_q8_K_avx2(const float *xb, gb_block_q8_K *y) {
    const __m256 sgn = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), inf = _mm256_set1_ps(INFINITY);
    __m256 vm = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int j = 0; j < QKK / 8; j++) {
        const __m256 a = _mm256_and_ps(_mm256_loadu_ps(xb + 8 * j), sgn);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ)); /* inf or NaN */
        vm = _mm256_max_ps(vm, a);
    }
    if (_mm256_movemask_ps(bad)) return 0;
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    const float amax = _mm_cvtss_f32(m);
    if (!amax) {
        memset(y, 0, sizeof(gb_block_q8_K));
        return 1;
    }
    float max = 0.0f;
    const __m256 va = _mm256_set1_ps(amax);
    for (int j = 0; j < QKK / 8; j++) {
        const int mk = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(xb + 8 * j), sgn), va, _CMP_EQ_OQ));
        if (mk) {
            max = xb[8 * j + __builtin_ctz((unsigned)mk)];
            break;
        }
    }
    const float iscale = -127.0f / max;
    if (!isfinite(iscale)) return 0;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i c127 = _mm256_set1_epi32(127);
    for (int j = 0; j < QKK / 16; j++) {
        const __m256i a = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(xb + 16 * j))), c127);
        const __m256i b = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(xb + 16 * j + 8))), c127);
        const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8); /* a0..7 | b0..7 as int16 */
        _mm_storeu_si128((__m128i *)(y->qs + 16 * j), _mm_packs_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1)));
        const __m256i s8 = _mm256_add_epi32(a, b);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        y->bsums[j] = (int16_t)_mm_cvtsi128_si32(s4);
    }
    y->d = 1.0f / iscale;
    return 1;
}
#endif

void gb_quantize_row_q8_K(const float *x, gb_block_q8_K *y, int64_t k) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
    for (int64_t i = 0; i < k / QKK; i++) quantize_block_q8_K_avx512(x + i * QKK, &y[i]);
#elif defined(__AVX2__)
    for (int64_t i = 0; i < k / QKK; i++)
        if (!quantize_block_q8_K_avx2(x + i * QKK, &y[i])) quantize_block_q8_K_ref(x + i * QKK, &y[i]);
#else
    for (int64_t i = 0; i < k / QKK; i++) quantize_block_q8_K_ref(x + i * QKK, &y[i]);
#endif
}

/* ---- kernels: one token chunk of one weight row --------------------------------------------- */

/* acc[t] += over super-blocks of row w: (d*dx)*isum - (dm*dx)*msum, tokens t < tt of xq (nb blocks each) */
/* one decoded super-block against tokens t < tt (x[t * ldx]): the arithmetic every version follows */
static inline void kdot_ref(const kdec *o, const gb_block_q8_K *x0, int64_t ldx, int64_t tt, float *acc) {
    for (int64_t t = 0; t < tt; t++) {
        const gb_block_q8_K *x = x0 + t * ldx;
        int32_t isum = 0, msum = 0;
        for (int c = 0; c < 16; c++) {
            int32_t s = 0;
            for (int j = 0; j < 16; j++) s += (int32_t)o->q[16 * c + j] * x->qs[16 * c + j];
            isum += o->sc[c] * s;
            msum += (int32_t)o->mn[c] * x->bsums[c];
        }
        acc[t] += kterm(o->off, o->d, o->dm, x->d, isum, msum);
    }
}

static void row_ref(int fmt, const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc) {
    kdec o;
    const int64_t bb = kblk_bytes(fmt);
    for (int64_t b = 0; b < nb; b++) {
        kdecode(fmt, w + b * bb, &o);
        kdot_ref(&o, xq + b, nb, tt, acc);
    }
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__AVX2__)
#define GB_HAVE_K_VNNI 1

/* s[z]: the int16 scale of each pair of values in zmm z, from the 16 group scales (16 values each).
 * Natural order (perm 0): int16 lane k of zmm z covers group 4z + k/8. perm 1 (q4_K/q5_K, whose
 * nibbles are used as loaded, the activations permuted to match, see permute_x): zmm 2h holds
 * groups 8h, 8h+1, 8h+4, 8h+5, zmm 2h+1 groups 8h+2, 8h+3, 8h+6, 8h+7. */
static inline __attribute__((always_inline)) void scales16(__m256i sc16, __m512i s[4], int perm) {
    const __m512i v = _mm512_castsi256_si512(sc16);
    for (int z = 0; z < 4; z++) {
        const int h = z / 2, o = 2 * (z % 2);
        const long long g0 = perm ? 8 * h + o : 4 * z, g1 = perm ? 8 * h + o + 1 : 4 * z + 1;
        const long long g2 = perm ? 8 * h + o + 4 : 4 * z + 2, g3 = perm ? 8 * h + o + 5 : 4 * z + 3;
        const long long r = 0x0001000100010001LL;
        s[z] = _mm512_permutexvar_epi16(_mm512_set_epi64(r * g3, r * g3, r * g2, r * g2, r * g1, r * g1, r * g0, r * g0), v);
    }
}

/* The activation order the VNNI row kernels read for q4_K/q5_K and iq4_xs, whose nibbles they use
 * as loaded (no shuffle of the weights): per half h of a block, q4_K/q5_K take values
 * [0..31, 64..95, 32..63, 96..127], iq4_xs [0..15, 32..47, 64..79, 96..111, 16..31, 48..63, ...].
 * Only the order of the terms of exact integer sums changes. */
static int x_permuted(int fmt) { return fmt == GB_Q4_K || fmt == GB_Q5_K || fmt == GB_IQ4_XS; }

static void permute_x(int fmt, gb_block_q8_K *blk, int64_t nb) {
    int8_t t[GB_QKK];
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *q = blk[b].qs;
        for (int h = 0; h < 2; h++) {
            const int8_t *src = q + 128 * h;
            int8_t *dst = t + 128 * h;
            if (fmt == GB_IQ4_XS) {
                for (int k = 0; k < 4; k++) {
                    memcpy(dst + 16 * k, src + 32 * k, 16);
                    memcpy(dst + 64 + 16 * k, src + 32 * k + 16, 16);
                }
            } else {
                memcpy(dst, src, 32);
                memcpy(dst + 32, src + 64, 32);
                memcpy(dst + 64, src + 32, 32);
                memcpy(dst + 96, src + 96, 32);
            }
        }
        memcpy(blk[b].qs, t, GB_QKK);
    }
}

/* iq4_xs's 16 grid values (kvalues_iq4nl) + 128 (unsigned: the sign bit flipped) in every 128-bit lane:
 * a vpshufb table, and for vpermb a 64-entry one whose low 6 index bits take the 16 values repeated */
static inline __m512i kiq4_grid512(void) {
    return _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)kvalues_iq4nl)), _mm512_set1_epi8((char)0x80));
}

/* w[z]: the 64 unsigned values 64z..64z+63 in order; s[z]: int16 scale of each pair of values (scales16) */
static inline __attribute__((always_inline)) void kdecode_vnni(int fmt, const uint8_t *b, __m512i w[4], __m512i s[4],
                                                               __m256i *mn, float *d, float *dm) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    if (fmt == GB_IQ4_XS) {
        /* values up to 241 (kvalue + 128): s[z] are int32 scales per vpdpbusd lane (4 values), see dot_vnni */
        const __m512i tbl = kiq4_grid512();
        for (int h = 0; h < 2; h++) {
            /* sub-blocks 4h..4h+3, 16 bytes each: low nibbles the first 16 values, high the next 16;
             * used as loaded, the activations permuted to match (permute_x) */
            const __m512i r = _mm512_loadu_si512((const void *)(b + 8 + 64 * h));
            w[2 * h] = _mm512_shuffle_epi8(tbl, _mm512_and_si512(r, m4));
            w[2 * h + 1] = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(r, 4), m4));
        }
        uint16_t sh;
        uint32_t sl;
        memcpy(&sh, b + 2, 2);
        memcpy(&sl, b + 4, 4);
        uint64_t ls = 0;
        for (int ib2 = 0; ib2 < 8; ib2++) /* 6-bit scales, one byte each (the compiler unrolls this) */
            ls |= (uint64_t)(((sl >> (4 * ib2)) & 0x0f) | (((sh >> (2 * ib2)) & 3) << 4)) << (8 * ib2);
        const __m128i sc8 = _mm_sub_epi8(_mm_cvtsi64_si128((long long)ls), _mm_set1_epi8(32));
        const __m512i sc32 = _mm512_cvtepi8_epi32(sc8);
        for (int z = 0; z < 4; z++) { /* int32 lane i of zmm 2h or 2h+1: sub-block 4h + i/4 */
            const int g = 4 * (z / 2);
            s[z] = _mm512_permutexvar_epi32(_mm512_setr_epi32(g, g, g, g, g + 1, g + 1, g + 1, g + 1, g + 2, g + 2, g + 2, g + 2,
                                                              g + 3, g + 3, g + 3, g + 3), sc32);
        }
        *mn = _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sc8, sc8)), 7);
        *d = *dm = h2f(b);
        return;
    }
    if (fmt == GB_Q2_K || fmt == GB_Q3_K) {
        const __m512i m3 = _mm512_set1_epi8(3), m1 = _mm512_set1_epi8(1);
        const uint8_t *qs = fmt == GB_Q2_K ? b + 16 : b + 32;
        const __m512i H = fmt == GB_Q3_K ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)b)) : _mm512_setzero_si512();
        for (int z = 0; z < 4; z++) {
            /* values 64z..64z+63: n = z/2, j = 2(z%2) (bytes 0..31) and j+1 (bytes 32..63) */
            const int n = z / 2, j = 2 * (z % 2);
            const __m512i Q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * n)));
            const __m512i cnt = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * j)), _mm256_set1_epi16((short)(2 * j + 2)), 1);
            __m512i v = _mm512_and_si512(_mm512_srlv_epi16(Q, cnt), m3);
            if (fmt == GB_Q3_K) {
                const __m512i hc = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * n + j)), _mm256_set1_epi16((short)(4 * n + j + 1)), 1);
                v = _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, hc), m1), 2));
            }
            w[z] = v;
        }
        if (fmt == GB_Q2_K) {
            const __m128i sc8 = _mm_loadu_si128((const __m128i *)b);
            scales16(_mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(0x0f))), s, 0);
            *mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(0x0f)));
            *d = h2f(b + 80);
            *dm = h2f(b + 82);
        } else {
            uint32_t aux[4];
            q3_scales(b + 96, aux);
            const __m256i sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)aux)), _mm256_set1_epi16(32));
            scales16(sc16, s, 0);
            *mn = _mm256_slli_epi16(sc16, 2);
            *d = *dm = h2f(b + 108);
        }
        return;
    }
    if (fmt == GB_Q6_K) {
        const __m512i m3 = _mm512_set1_epi8(3);
        const __m512i c02 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
        const __m512i c46 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
        for (int h = 0; h < 2; h++) {
            const __m512i L = _mm512_loadu_si512((const void *)(b + 64 * h));
            const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b + 128 + 32 * h)));
            w[2 * h] = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, c02), m3), 4));
            w[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                           _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, c46), m3), 4));
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 192)));
        scales16(sc16, s, 0);
        *mn = _mm256_slli_epi16(sc16, 5);
        *d = *dm = h2f(b + 208);
        return;
    }
    *d = h2f(b);
    *dm = h2f(b + 2);
    /* the 6-bit scales and mins in 32-bit words (ggml's kmask trick): bytes 0..7 the scales, 8..15 the mins */
    uint32_t u[4];
    memcpy(u, b + 4, 12);
    u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
    const uint32_t mlo = u[1] & 0x3f3f3f3fu;
    u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
    u[2] = mlo;
    u[0] &= 0x3f3f3f3fu;
    const __m128i scm = _mm_set_epi32((int)u[3], (int)u[2], (int)u[1], (int)u[0]);
    scales16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(scm, scm)), s, 1); /* sc[c/2] for each 16 values c */
    *mn = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scm, scm)); /* m[c/2] for each 16 values c */
    const uint8_t *qs = fmt == GB_Q4_K ? b + 16 : b + 48;
    __m512i H = _mm512_setzero_si512();
    if (fmt == GB_Q5_K) H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b + 16)));
    const __m512i m1 = _mm512_set1_epi8(1);
    for (int h = 0; h < 2; h++) {
        /* chunks 2h (bytes 0..31) and 2h+1 (32..63): lo = [c 2h low, c 2h+1 low], hi = the high nibbles */
        const __m512i r = _mm512_loadu_si512((const void *)(qs + 64 * h));
        __m512i lo = _mm512_and_si512(r, m4), hi = _mm512_and_si512(_mm512_srli_epi16(r, 4), m4);
        if (fmt == GB_Q5_K) {
            const __m512i clo = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * h)), _mm256_set1_epi16((short)(4 * h + 2)), 1);
            const __m512i chi = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * h + 1)), _mm256_set1_epi16((short)(4 * h + 3)), 1);
            lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, clo), m1), 4));
            hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, chi), m1), 4));
        }
        w[2 * h] = lo; /* values 128h + [0..31, 64..95]: the activations are permuted to match (permute_x) */
        w[2 * h + 1] = hi;
    }
}

/* The int32 dot of one token's q8_K block with the decoded super-block: isum per lane (any order of
 * the integer sums gives the same exact value). */
static inline __attribute__((always_inline)) __m512i dot_vnni(int fmt, const __m512i wv[4], const __m512i sv[4], const int8_t *qs) {
    if (fmt == GB_IQ4_XS) { /* values up to 241: u8 x s8 pairs could pass int16, so vpdpbusd and int32 scales */
        const __m512i z = _mm512_setzero_si512();
        __m512i p = _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, wv[0], _mm512_loadu_si512((const void *)qs)), sv[0]);
        p = _mm512_add_epi32(p, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, wv[1], _mm512_loadu_si512((const void *)(qs + 64))), sv[1]));
        p = _mm512_add_epi32(p, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, wv[2], _mm512_loadu_si512((const void *)(qs + 128))), sv[2]));
        return _mm512_add_epi32(p, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, wv[3], _mm512_loadu_si512((const void *)(qs + 192))), sv[3]));
    }
    /* u8 x s8 pairs into int16 (|.| <= 2 * 63 * 127, no saturation), then x scale and pairwise into int32 */
    __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(wv[0], _mm512_loadu_si512((const void *)qs)), sv[0]);
    p = _mm512_dpwssd_epi32(p, _mm512_maddubs_epi16(wv[1], _mm512_loadu_si512((const void *)(qs + 64))), sv[1]);
    p = _mm512_dpwssd_epi32(p, _mm512_maddubs_epi16(wv[2], _mm512_loadu_si512((const void *)(qs + 128))), sv[2]);
    return _mm512_dpwssd_epi32(p, _mm512_maddubs_epi16(wv[3], _mm512_loadu_si512((const void *)(qs + 192))), sv[3]);
}

/* 16 tokens' lane vectors -> one vector whose lane t is the sum of v[t] (a transposing reduction:
 * one pass of adds and shuffles for all 16 instead of 16 horizontal sums) */
static inline __attribute__((always_inline)) __m512i pair1(__m512i a, __m512i b) {
    return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
static inline __attribute__((always_inline)) __m512i pair2(__m512i a, __m512i b) {
    return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}
static inline __attribute__((always_inline)) __m512i pair3(__m512i a, __m512i b) {
    return _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x88), _mm512_shuffle_i32x4(a, b, 0xdd));
}

/* Activations of 16-token groups transposed for the tile path: per (group, block), the 8 pairs of
 * 16-value sums as int16 pairs, token-major (bsT[((G*nb + b)*8 + c2)*16 + t]), and the scales
 * (dxT[(G*nb + b)*16 + t]). */
typedef struct {
    const int32_t *bsT;
    const float *dxT;
} kx16;

static void row_vnni(int fmt, const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g16) {
    const int64_t bb = kblk_bytes(fmt);
    const int ng = g16.bsT ? (int)(tt / 16) : 0; /* full groups of 16 tokens (tt <= 64) */
    __m512 accv[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        __m512i wv[4], sv[4];
        __m256i mn;
        float d, dm;
        kdecode_vnni(fmt, w + b * bb, wv, sv, &mn, &d, &dm);
        if (b + 1 < nb) _mm_prefetch((const char *)(w + (b + 1) * bb + 128), _MM_HINT_T0);
        if (ng) {
            const __m512i mnv = _mm512_castsi256_si512(mn);
            __m512i mp[8];
            for (int c2 = 0; c2 < 8; c2++) mp[c2] = _mm512_permutexvar_epi32(_mm512_set1_epi32(c2), mnv);
            const __m512 vd = _mm512_set1_ps(d), vdm = _mm512_set1_ps(dm);
            for (int g = 0; g < ng; g++) {
                const gb_block_q8_K *xg = xq + 16 * g * nb + b;
                __m512i l1[8], l2[4];
                for (int k = 0; k < 8; k++) l1[k] = pair1(dot_vnni(fmt, wv, sv, xg[2 * k * nb].qs), dot_vnni(fmt, wv, sv, xg[(2 * k + 1) * nb].qs));
                for (int k = 0; k < 4; k++) l2[k] = pair2(l1[2 * k], l1[2 * k + 1]);
                const __m512i isum = pair3(pair3(l2[0], l2[1]), pair3(l2[2], l2[3]));
                const int32_t *bs = g16.bsT + (g * nb + b) * 128;
                __m512i msum = _mm512_setzero_si512();
                for (int c2 = 0; c2 < 8; c2++) msum = _mm512_dpwssd_epi32(msum, _mm512_loadu_si512((const void *)(bs + 16 * c2)), mp[c2]);
                const __m512 dx = _mm512_loadu_ps(g16.dxT + (g * nb + b) * 16);
                /* lane by lane the scalar formula (kterm), then added (no FMA) */
                const __m512 r = k_off_only(fmt) ? _mm512_mul_ps(_mm512_mul_ps(vd, dx), _mm512_cvtepi32_ps(_mm512_sub_epi32(isum, msum)))
                                 : _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(vd, dx), _mm512_cvtepi32_ps(isum)),
                                                 _mm512_mul_ps(_mm512_mul_ps(vdm, dx), _mm512_cvtepi32_ps(msum)));
                accv[g] = _mm512_add_ps(accv[g], r);
            }
        }
        for (int64_t t = 16 * ng; t < tt; t++) {
            const gb_block_q8_K *x = &xq[t * nb + b];
            const __m512i p = dot_vnni(fmt, wv, sv, x->qs);
            /* both sums in one reduction: [isum, msum, isum, msum] */
            const __m256i m8 = _mm256_madd_epi16(mn, _mm256_loadu_si256((const __m256i *)x->bsums));
            __m256i h = _mm256_hadd_epi32(_mm256_add_epi32(_mm512_castsi512_si256(p), _mm512_extracti64x4_epi64(p, 1)), m8);
            h = _mm256_hadd_epi32(h, h);
            const __m128i r = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            const int32_t isum = _mm_cvtsi128_si32(r), msum = _mm_extract_epi32(r, 1);
            acc[t] += kterm(k_off_only(fmt), d, dm, x->d, isum, msum);
        }
    }
    for (int g = 0; g < ng; g++) _mm512_storeu_ps(acc + 16 * g, _mm512_add_ps(_mm512_loadu_ps(acc + 16 * g), accv[g]));
}

static void row_vnni_q4(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_Q4_K, w, xq, nb, tt, acc, g); }
static void row_vnni_q5(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_Q5_K, w, xq, nb, tt, acc, g); }
static void row_vnni_q6(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_Q6_K, w, xq, nb, tt, acc, g); }
static void row_vnni_q2(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_Q2_K, w, xq, nb, tt, acc, g); }
static void row_vnni_q3(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_Q3_K, w, xq, nb, tt, acc, g); }
static void row_vnni_iq4xs(const uint8_t *w, const gb_block_q8_K *xq, int64_t nb, int64_t tt, float *acc, kx16 g) { row_vnni(GB_IQ4_XS, w, xq, nb, tt, acc, g); }
#endif

#ifdef GB_HAVE_K_VNNI
/* ---- prefill: 16-row panels (VNNI) ----------------------------------------------------------
 * For prefill-sized T the 16 rows of a group are decoded once per call (the portable decoder) into
 * a panel per super-block whose every zmm holds 4 values of each of the 16 rows: one vpdpbusd per
 * 4 activation bytes (broadcast) feeds 16 output rows, as csrc/qgemm.c does for q4_0/q8_0. Lane r
 * computes row r's isum and msum exactly and combines them with the same float32 formula as the
 * portable version, so the outputs stay bit-identical to it. */
typedef struct {
    uint32_t q[64 * 16]; /* [4-value chunk][row] */
    int32_t sc[16 * 16]; /* [16-value group][row] (q2_K/q3_K: unread by the tile, the values carry them: panel_premul) */
    int32_t mn[8 * 16];  /* [pair of groups][row]: int16 pairs for vpdpwssd */
    int32_t corr[16];    /* signed panels (panel_signed): -128 * sum_c sc[c] * (sum of group c's values); q3_K: -128 * (sum of its bytes) (panel_premul) */
    float d[16], dm[16];
} kpanel;

/* row r of a panel super-block from its decoded form */
static void panel_put(kpanel *p, int r, const kdec *o) {
    for (int c4 = 0; c4 < 64; c4++) memcpy(&p->q[c4 * 16 + r], o->q + 4 * c4, 4);
    for (int c = 0; c < 16; c++) p->sc[c * 16 + r] = o->sc[c];
    for (int c2 = 0; c2 < 8; c2++)
        p->mn[c2 * 16 + r] = (int32_t)((uint32_t)(uint16_t)o->mn[2 * c2] | ((uint32_t)(uint16_t)o->mn[2 * c2 + 1] << 16));
    p->d[r] = o->d;
    p->dm[r] = o->dm;
}

static void panel_fill(int fmt, const uint8_t *w, int64_t rb, int nr, int64_t nb, kpanel *P) {
    const int64_t bb = kblk_bytes(fmt);
    kdec o;
    memset(P, 0, (size_t)nb * sizeof(kpanel));
    for (int r = 0; r < nr; r++)
        for (int64_t b = 0; b < nb; b++) {
            kdecode(fmt, w + r * rb + b * bb, &o);
            panel_put(P + b, r, &o);
        }
}

/* Scales per 32 values (q4_K/q5_K/iq4_xs: each 16-value group's panel scale repeated): SUB = 2. Their
 * mins are per 32 values too, and the tile takes msum from 4 int16 pairs per super-block,
 * (mn[4k], mn[4k + 2]) of the panel against the activations' sums of 32 values (panel_pairs32 and
 * x_pairs32 rewrite both in place, once per call): the same int32 as the 8 pairs of 16-value sums,
 * half the vpdpwssd and broadcasts per token and super-block. */
static inline int panel_sub(int fmt) { return fmt == GB_Q4_K || fmt == GB_Q5_K || fmt == GB_IQ4_XS ? 2 : 1; }

static void panel_pairs32(kpanel *P, int64_t nb) {
    for (int64_t b = 0; b < nb; b++)
        for (int k = 0; k < 4; k++) /* reads pairs 2k, 2k + 1 >= k: in place in increasing k */
            for (int r = 0; r < 16; r++)
                P[b].mn[k * 16 + r] = (int32_t)(((uint32_t)P[b].mn[2 * k * 16 + r] & 0xffffu) | ((uint32_t)P[b].mn[(2 * k + 1) * 16 + r] << 16));
}

/* bsums[j] = the sum of values 32j..32j+31 for j < 8 (|sum| <= 32 * 128: an int16); the rest unread */
static void x_pairs32(gb_block_q8_K *x, int64_t nb) {
    for (int64_t b = 0; b < nb; b++)
        for (int j = 0; j < 8; j++) x[b].bsums[j] = (int16_t)(x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
}

/* q6_K, q3_K and iq4_xs (d = dm, msum only the values' offset: kterm's exact difference isum - msum) take
 * their panel values signed (q - 32, kvalue; q3_K's times their scales, PRE below) and the activations
 * unsigned (x + 128, x_unsigned):
 * per 4 values sum (x + 128) q = sum x q + 128 sum q, and the second term, the weights' own, is taken
 * off once per row and super-block (corr, the initial isum). The tile then needs no 16-value sums
 * of the activations and no msum: the same int32 isum - msum, so the same float32 result. */
static inline int panel_sgn(int fmt) { return fmt == GB_Q6_K || fmt == GB_Q3_K || fmt == GB_IQ4_XS; }

/* q3_K (PRE): the panel's signed values times their group's scale, negated, in the bytes themselves:
 * v in [-4, 3] times -sc in [-31, 32] is in [-128, 124], a signed byte (v * sc is not: +128 at v = -4,
 * sc = -32, the scale the quantizer gives a super-block's largest group), so the tile adds every
 * chunk into one sum per row and token with no scale step: 64 vpdpbusd per super-block and token,
 * where two groups' sums as int16 halves times their pair of scales (one vpdpwssd, a shift and an
 * add per two groups) had cost 64 + 8 + 16 (T = 512: 1.08x). corr = 128 sum v sc = -128 x (the sum of
 * the stored bytes), so with the activations + 128 (as the signed panels') the tile's sum is minus the
 * exact isum - msum, negated again before the float32 step: the same int32, the same outputs. Both
 * fills (panel_premul, panel_fill_packed2) form the bytes by kp_premul4. q2_K likewise: its values 0..3
 * times scales 0..15 are at most 45, an unsigned byte as they stand (no negation, no corr); its mins
 * stay in msum (1.15-1.17x). The other formats' products do not fit a byte. */
static inline int panel_pre(int fmt) { return fmt == GB_Q3_K || fmt == GB_Q2_K; }

/* unsigned bytes x times the int32 lane's s (|s| < 128, the same for its 4 bytes), low 8 bits of each
 * product: vpmaddubsw against (s, 0) and (0, s) byte pairs (x * s fits an int16: no saturation) */
static inline __m512i kp_mul_u8_lane(__m512i x, __m512i s32) {
    const __m512i sb = _mm512_and_si512(s32, _mm512_set1_epi32(0xff));
    const __m512i se = _mm512_or_si512(sb, _mm512_slli_epi32(sb, 16));
    const __m512i pe = _mm512_maddubs_epi16(x, se), po = _mm512_maddubs_epi16(x, _mm512_slli_epi32(se, 8));
    return _mm512_mask_blend_epi8((__mmask64)0xAAAAAAAAAAAAAAAAull, pe, _mm512_slli_epi16(po, 8));
}

/* PRE's bytes of 4 stored values per row (x: q2_K 0..3, q3_K q + 4 in 0..7) of a group with scale sc
 * (one int32 lane per row): q2_K x sc; q3_K (x - 4) (-sc) = x (-sc) + 4 sc, byte-wise modulo 256 (the
 * result is in [-128, 124]); wsum += the 4 bytes' sum per row (q3_K's corr: 128 sum v sc = -128 wsum) */
static inline __attribute__((always_inline)) __m512i kp_premul4(const int fmt, __m512i x, __m512i sc, __m512i *wsum) {
    if (fmt == GB_Q2_K) return kp_mul_u8_lane(x, sc);
    const __m512i c4 = _mm512_mullo_epi32(_mm512_and_si512(_mm512_slli_epi32(sc, 2), _mm512_set1_epi32(0xff)), _mm512_set1_epi32(0x01010101));
    const __m512i v = _mm512_add_epi8(kp_mul_u8_lane(x, _mm512_sub_epi32(_mm512_setzero_si512(), sc)), c4);
    *wsum = _mm512_dpbusd_epi32(*wsum, _mm512_set1_epi8(1), v);
    return v;
}

/* a filled panel (the stored values) into PRE's form, in place */
static void panel_premul(int fmt, kpanel *P, int64_t nb) {
    for (int64_t b = 0; b < nb; b++) {
        __m512i ws = _mm512_setzero_si512();
        for (int c = 0; c < 16; c++) {
            const __m512i sc = _mm512_load_si512((const void *)(P[b].sc + c * 16));
            for (int j = 0; j < 4; j++) {
                uint32_t *q = P[b].q + (4 * c + j) * 16;
                _mm512_store_si512((void *)q, kp_premul4(fmt, _mm512_load_si512((const void *)q), sc, &ws));
            }
        }
        if (fmt == GB_Q3_K) _mm512_store_si512((void *)P[b].corr, _mm512_mullo_epi32(ws, _mm512_set1_epi32(-128)));
    }
}

static void panel_signed(int fmt, kpanel *P, int64_t nb) {
    const __m512i off = _mm512_set1_epi8((char)(fmt == GB_Q6_K ? 32 : 128)), one = _mm512_set1_epi8(1); /* q6_K, iq4_xs (q3_K: panel_premul) */
    for (int64_t b = 0; b < nb; b++) {
        __m512i corr = _mm512_setzero_si512();
        for (int c = 0; c < 16; c++) { /* 16-value group c: chunks 4c..4c+3 */
            __m512i ws = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) {
                uint32_t *q = P[b].q + (4 * c + j) * 16;
                const __m512i v = _mm512_sub_epi8(_mm512_load_si512((const void *)q), off);
                _mm512_store_si512((void *)q, v);
                ws = _mm512_dpbusd_epi32(ws, one, v);
            }
            corr = _mm512_add_epi32(corr, _mm512_mullo_epi32(ws, _mm512_load_si512((const void *)(P[b].sc + c * 16))));
        }
        _mm512_store_si512((void *)P[b].corr, _mm512_mullo_epi32(corr, _mm512_set1_epi32(-128)));
    }
}

/* the activations' values + 128 as unsigned bytes, in place (sums and scale unchanged, unread) */
static void x_unsigned(gb_block_q8_K *x, int64_t nb) {
    const __m512i s = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++)
        for (int j = 0; j < 4; j++) {
            int8_t *q = x[b].qs + 64 * j;
            _mm512_storeu_si512((void *)q, _mm512_xor_si512(_mm512_loadu_si512((const void *)q), s));
        }
}

/* One block for the prefill panels, the bytes of quantize_block_q8_K_avx512 in one pass less: the
 * 16-value sums from the stored bytes (vpsadbw of the values + 128, no per-16 reduction), the
 * panels' form of the block (mode 1: x_pairs32, mode 2: x_unsigned) and whether it holds a
 * non-finite value (returned; the block is then quantized by the general path, byte for byte as
 * before). */
static int quantize_block_q8_K_panel(const float *xb, gb_block_q8_K *y, int mode) {
    const __m512 sgn = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff)), inf = _mm512_set1_ps(INFINITY);
    __m512 vm = _mm512_setzero_ps();
    __mmask16 bad = 0;
    for (int j = 0; j < QKK / 16; j++) {
        const __m512 a = _mm512_and_ps(_mm512_loadu_ps(xb + 16 * j), sgn);
        bad |= _mm512_cmp_ps_mask(a, inf, _CMP_NLT_UQ); /* inf or NaN */
        vm = _mm512_max_ps(vm, a);
    }
    if (bad) {
        quantize_block_q8_K_avx512(xb, y);
        if (mode == 1) x_pairs32(y, 1);
        else if (mode == 2) x_unsigned(y, 1);
        return 1;
    }
    const float amax = _mm512_reduce_max_ps(vm);
    if (!amax) {
        memset(y, 0, sizeof(gb_block_q8_K));
        if (mode == 2) memset(y->qs, 0x80, QKK);
        return 0;
    }
    float max = 0.0f;
    const __m512 va = _mm512_set1_ps(amax);
    for (int j = 0; j < QKK / 16; j++) {
        const __mmask16 m = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(xb + 16 * j), sgn), va, _CMP_EQ_OQ);
        if (m) {
            max = xb[16 * j + __builtin_ctz((unsigned)m)];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i sad[4];
    for (int z = 0; z < 4; z++) {
        __m128i b4[4];
        for (int i = 0; i < 4; i++) {
            const __m512i v = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(vs, _mm512_loadu_ps(xb + 64 * z + 16 * i))), _mm512_set1_epi32(127));
            b4[i] = _mm512_cvtepi32_epi8(v);
        }
        __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(b4[1], b4[0])), _mm256_set_m128i(b4[3], b4[2]), 1);
        const __m512i u = _mm512_xor_si512(q, flip); /* value + 128 */
        sad[z] = _mm512_sad_epu8(u, _mm512_setzero_si512()); /* qword i: 8 values + 1024 */
        _mm512_storeu_si512((void *)(y->qs + 64 * z), mode == 2 ? u : q);
    }
    /* 16-value sums: qwords 2i + 2i+1 of each zmm, j = 4z + i */
    const __m512i ev = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), od = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i s01 = _mm512_add_epi64(_mm512_permutex2var_epi64(sad[0], ev, sad[1]), _mm512_permutex2var_epi64(sad[0], od, sad[1]));
    const __m512i s23 = _mm512_add_epi64(_mm512_permutex2var_epi64(sad[2], ev, sad[3]), _mm512_permutex2var_epi64(sad[2], od, sad[3]));
    const __m128i off16 = _mm_set1_epi16(2048);
    const __m128i b0 = _mm_sub_epi16(_mm512_cvtepi64_epi16(s01), off16), b1 = _mm_sub_epi16(_mm512_cvtepi64_epi16(s23), off16);
    if (mode == 1) { /* x_pairs32: bsums[j < 8] the 32-value sums, the rest the 16-value sums */
        const __m512i p32 = _mm512_add_epi64(_mm512_permutex2var_epi64(s01, ev, s23), _mm512_permutex2var_epi64(s01, od, s23));
        _mm_storeu_si128((__m128i *)y->bsums, _mm_sub_epi16(_mm512_cvtepi64_epi16(p32), _mm_set1_epi16(4096)));
    } else
        _mm_storeu_si128((__m128i *)y->bsums, b0);
    _mm_storeu_si128((__m128i *)(y->bsums + 8), b1);
    y->d = 1.0f / iscale;
    return 0;
}

/* a row of nb blocks as the prefill panels take it (quantize_block_q8_K_panel's mode by format);
 * returns whether it holds a non-finite value */
static int quant_row_panel(int fmt, const float *x, gb_block_q8_K *y, int64_t nb) {
    const int mode = panel_sgn(fmt) ? 2 : panel_sub(fmt) == 2 ? 1 : 0;
    int bad = 0;
    for (int64_t b = 0; b < nb; b++) bad |= quantize_block_q8_K_panel(x + b * QKK, y + b, mode);
    return bad;
}


/* one 4-value chunk ch of NG groups' panels p against TT tokens' activations xb into sums a */
static inline __attribute__((always_inline)) void panel_chunk(const kpanel *const *p, const int8_t *const *xb, const int ch,
                                                              __m512i (*a)[8], const int NG, const int TT, const int SGN) {
    __m512i wq[2];
    for (int g = 0; g < NG; g++) {
        wq[g] = _mm512_load_si512((const void *)(p[g]->q + ch * 16));
        __asm__("" : "+v"(wq[g])); /* one load per chunk: gcc otherwise reloaded it per token */
    }
    for (int t = 0; t < TT; t++) {
        int32_t xv;
        memcpy(&xv, xb[t] + 4 * ch, 4);
        const __m512i xb4 = _mm512_set1_epi32(xv);
        for (int g = 0; g < NG; g++) a[g][t] = SGN ? _mm512_dpbusd_epi32(a[g][t], xb4, wq[g]) : _mm512_dpbusd_epi32(a[g][t], wq[g], xb4);
    }
}

/* NG (1 or 2) groups of 16 rows x TT tokens (t0..), the nb super-blocks from P0/P1 and xq (token
 * rows ldx blocks apart); group i's outputs y[t * ldy + 16 i + r], masked by m0/m1. first: the
 * running sums start at 0, else from y (an earlier pass); last: + bias. Per 4-value chunk: one load
 * per group and one broadcast per token feed NG x TT vpdpbusd (2 x 4: 6 loads per 8, where 1 x 4 took
 * 5 per 4). SUB: 16-value groups per scale (2 for q4_K/q5_K/iq4_xs, whose scales are per 32 values:
 * one vpmulld per 32 values). SGN: q6_K/q3_K/iq4_xs's signed panels (panel_signed). PRE: q2_K/q3_K's
 * values times their scales (panel_premul): no scale step. */
static inline __attribute__((always_inline)) void panel_tile(const kpanel *P0, const kpanel *P1, int64_t nb, const gb_block_q8_K *xq,
                                                             int64_t ldx, int64_t t0, float *y, int64_t ldy, const float *bias,
                                                             __mmask16 m0, __mmask16 m1, int first, int last, const int NG,
                                                             const int TT, const int SUB, const int SGN, const int PRE) {
    __m512 acc[2][8];
    for (int g = 0; g < NG; g++)
        for (int t = 0; t < TT; t++)
            acc[g][t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(g ? m1 : m0, y + (t0 + t) * ldy + 16 * g);
    for (int64_t b = 0; b < nb; b++) {
        const kpanel *p[2] = {P0 + b, NG > 1 ? P1 + b : P0 + b};
        const int8_t *xb[8];
        for (int t = 0; t < TT; t++) xb[t] = xq[(t0 + t) * ldx + b].qs;
        __m512i isum[2][8];
        for (int g = 0; g < NG; g++)
            for (int t = 0; t < TT; t++) isum[g][t] = SGN ? _mm512_load_si512((const void *)p[g]->corr) : _mm512_setzero_si512();
        /* PRE: the values already times their scales (q3_K negated: panel_premul): every chunk into isum */
        for (int ch = 0; ch < 64 && PRE; ch++) panel_chunk(p, xb, ch, isum, NG, TT, SGN);
        for (int s = 0; s < 16 / SUB && !PRE; s++) {
            __m512i ia[2][8];
            for (int g = 0; g < NG; g++)
                for (int t = 0; t < TT; t++) ia[g][t] = _mm512_setzero_si512();
            for (int cj = 0; cj < 4 * SUB; cj++) panel_chunk(p, xb, 4 * SUB * s + cj, ia, NG, TT, SGN);
            for (int g = 0; g < NG; g++) {
                const __m512i sc = _mm512_load_si512((const void *)(p[g]->sc + SUB * s * 16));
                for (int t = 0; t < TT; t++)
                    isum[g][t] = _mm512_add_epi32(isum[g][t], _mm512_mullo_epi32(ia[g][t], sc));
            }
        }
        for (int t = 0; t < TT && SGN; t++) { /* kterm's (d*dx)*(isum - msum), corr having taken msum off */
            const __m512 dx = _mm512_set1_ps(xq[(t0 + t) * ldx + b].d);
            for (int g = 0; g < NG; g++)
                acc[g][t] = _mm512_add_ps(acc[g][t], _mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(p[g]->d), dx),
                                                                   _mm512_cvtepi32_ps(PRE ? _mm512_sub_epi32(_mm512_setzero_si512(), isum[g][t]) : isum[g][t])));
        }
        for (int t = 0; t < TT && !SGN; t++) {
            const gb_block_q8_K *x = &xq[(t0 + t) * ldx + b];
            __m512i msum[2];
            for (int g = 0; g < NG; g++) msum[g] = _mm512_setzero_si512();
            for (int c2 = 0; c2 < 8 / SUB; c2++) { /* SUB = 2: pairs of 32-value sums (panel_pairs32) */
                int32_t pr;
                memcpy(&pr, x->bsums + 2 * c2, 4);
                const __m512i bp = _mm512_set1_epi32(pr);
                for (int g = 0; g < NG; g++) msum[g] = _mm512_dpwssd_epi32(msum[g], _mm512_load_si512((const void *)(p[g]->mn + c2 * 16)), bp);
            }
            const __m512 dx = _mm512_set1_ps(x->d);
            for (int g = 0; g < NG; g++) {
                /* lane by lane the scalar formula: (d*dx)*isum - (dm*dx)*msum, then added (no FMA) */
                const __m512 r = _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(p[g]->d), dx), _mm512_cvtepi32_ps(isum[g][t])),
                                               _mm512_mul_ps(_mm512_mul_ps(_mm512_load_ps(p[g]->dm), dx), _mm512_cvtepi32_ps(msum[g])));
                acc[g][t] = _mm512_add_ps(acc[g][t], r);
            }
        }
    }
    for (int g = 0; g < NG; g++) {
        const __mmask16 m = g ? m1 : m0;
        const __m512 vb = bias && last ? _mm512_maskz_loadu_ps(m, bias + 16 * g) : _mm512_setzero_ps();
        for (int t = 0; t < TT; t++) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + 16 * g, m, last ? _mm512_add_ps(acc[g][t], vb) : acc[g][t]);
    }
}

/* One group of 16 rows x all T tokens (t0 = 0..): tiles of 8 tokens (then 4, 3, 2, 1). A group's
 * panel (~45 KB for K = 2048) stays in L1 across its tiles; two groups' (the tile of 2 groups x 4
 * tokens it replaced, 2026-12-02) did not, and were re-read from L2 by every tile. */
#define PANEL_ROWS(name, SUB, SGN, PRE)                                                                                  \
    static void name(const kpanel *P, int64_t nb, const gb_block_q8_K *xq, int64_t ldx, int64_t T, float *y, int64_t ldy,  \
                     const float *bias, __mmask16 m, int first, int last) {                                         \
        int64_t t0 = 0;                                                                                             \
        for (; t0 + 8 <= T; t0 += 8) panel_tile(P, P, nb, xq, ldx, t0, y, ldy, bias, m, m, first, last, 1, 8, SUB, SGN, PRE); \
        for (; t0 + 4 <= T; t0 += 4) panel_tile(P, P, nb, xq, ldx, t0, y, ldy, bias, m, m, first, last, 1, 4, SUB, SGN, PRE); \
        switch (T - t0) {                                                                                           \
        case 3: panel_tile(P, P, nb, xq, ldx, t0, y, ldy, bias, m, m, first, last, 1, 3, SUB, SGN, PRE); break;          \
        case 2: panel_tile(P, P, nb, xq, ldx, t0, y, ldy, bias, m, m, first, last, 1, 2, SUB, SGN, PRE); break;          \
        case 1: panel_tile(P, P, nb, xq, ldx, t0, y, ldy, bias, m, m, first, last, 1, 1, SUB, SGN, PRE); break;          \
        default: break;                                                                                             \
        }                                                                                                           \
    }
PANEL_ROWS(panel_rows_s1p, 1, 0, 1)  /* q2_K */
PANEL_ROWS(panel_rows_s1gp, 1, 1, 1) /* q3_K */
PANEL_ROWS(panel_rows_s2, 2, 0, 0)   /* q4_K, q5_K */
PANEL_ROWS(panel_rows_s1g, 1, 1, 0)  /* q6_K */
PANEL_ROWS(panel_rows_s2g, 2, 1, 0)  /* iq4_xs */
/* two groups (P, P + ldp) x 4 tokens */
#define PANEL_ROWS2(name, SUB, SGN, PRE)                                                                                 \
    static void name(const kpanel *P, int64_t ldp, int64_t nb, const gb_block_q8_K *xq, int64_t ldx, int64_t T, float *y, \
                     int64_t ldy, const float *bias, __mmask16 m0, __mmask16 m1, int first, int last) {              \
        int64_t t0 = 0;                                                                                             \
        for (; t0 + 4 <= T; t0 += 4) panel_tile(P, P + ldp, nb, xq, ldx, t0, y, ldy, bias, m0, m1, first, last, 2, 4, SUB, SGN, PRE); \
        switch (T - t0) {                                                                                           \
        case 3: panel_tile(P, P + ldp, nb, xq, ldx, t0, y, ldy, bias, m0, m1, first, last, 2, 3, SUB, SGN, PRE); break;  \
        case 2: panel_tile(P, P + ldp, nb, xq, ldx, t0, y, ldy, bias, m0, m1, first, last, 2, 2, SUB, SGN, PRE); break;  \
        case 1: panel_tile(P, P + ldp, nb, xq, ldx, t0, y, ldy, bias, m0, m1, first, last, 2, 1, SUB, SGN, PRE); break;  \
        default: break;                                                                                             \
        }                                                                                                           \
    }
PANEL_ROWS2(panel_rows2_s1p, 1, 0, 1)
PANEL_ROWS2(panel_rows2_s1gp, 1, 1, 1)
PANEL_ROWS2(panel_rows2_s2, 2, 0, 0)
PANEL_ROWS2(panel_rows2_s1g, 1, 1, 0)
PANEL_ROWS2(panel_rows2_s2g, 2, 1, 0)

/* groups g (and g + 1 if ng = 2, its panel at P + nb) of an N-row output from their panels,
 * super-blocks [b0, b0 + nbc) of the nb: the running sums kept in y between the chunks (a float32
 * stored and loaded back is the same float32, and the terms are added in the same order), the bias
 * added after the last. */
static void panel_rows(int fmt, int ng, const kpanel *P, int64_t nb, int64_t b0, int64_t nbc, const gb_block_q8_K *xq, int64_t T,
                       float *y, int64_t ldy, const float *bias, int64_t g, int64_t N) {
    const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
    const __mmask16 m0 = (__mmask16)((1u << nr) - 1);
    if (ng == 2) {
        const int nr1 = (int)(N - 16 * (g + 1) < 16 ? N - 16 * (g + 1) : 16);
        (fmt == GB_Q6_K ? panel_rows2_s1g : fmt == GB_Q3_K ? panel_rows2_s1gp : fmt == GB_IQ4_XS ? panel_rows2_s2g : panel_sub(fmt) == 2 ? panel_rows2_s2 : panel_rows2_s1p)(
            P + b0, nb, nbc, xq + b0, nb, T, y + 16 * g, ldy, bias ? bias + 16 * g : NULL, m0, (__mmask16)((1u << nr1) - 1), b0 == 0,
            b0 + nbc == nb);
        return;
    }
    (fmt == GB_Q6_K ? panel_rows_s1g : fmt == GB_Q3_K ? panel_rows_s1gp : fmt == GB_IQ4_XS ? panel_rows_s2g : panel_sub(fmt) == 2 ? panel_rows_s2 : panel_rows_s1p)(
        P + b0, nbc, xq + b0, nb, T, y + 16 * g, ldy, bias ? bias + 16 * g : NULL, m0, b0 == 0, b0 + nbc == nb);
}
#endif

#ifdef GB_HAVE_K_VNNI
/* The prefill blocking: a step decodes the panels of sp groups (~384 KB at most) and runs them over
 * blocks of tb tokens whose q8_K rows (~384 KB) stay in L2 between the groups: the activations are
 * read from L3 once per step instead of once per group (512 tokens of K = 2048 are 1.2 MB, past the
 * 1 MB L2), and at least 2 steps per thread. Returns sp; tb a multiple of the tile's 8 tokens. Called
 * in the parallel region. */
static int panel_blocking(int64_t nb, int64_t G, int64_t *tb) {
    const int64_t grp = nb * (int64_t)sizeof(kpanel), row = nb * (int64_t)sizeof(gb_block_q8_K);
    const int64_t t = (384 << 10) / row;
    *tb = t < 8 ? 8 : t - t % 8;
    int64_t sp = (384 << 10) / grp;
    const int64_t fair = G / (2 * omp_get_num_threads()); /* >= 2 steps per thread (dynamic) */
    if (sp > fair) sp = fair;
    return sp < 1 ? 1 : sp > 8 ? 8 : (int)sp;
}

#ifndef GB_K_PANEL_CHUNK
#define GB_K_PANEL_CHUNK 2 /* super-blocks per pass of a 2-group tile (panel_rows) */
#endif
#ifndef GB_PT2
#define GB_PT2 1
#endif
/* one step: groups [g0, g0 + n), panels already in P (group g0 + i at P + i * nb) */
static void panel_step(int fmt, const kpanel *P, int64_t g0, int n, int64_t nb, const gb_block_q8_K *xq, int64_t T, int64_t tb,
                       float *y, int64_t N, const float *bias) {
    const int64_t kc = GB_PT2 ? GB_K_PANEL_CHUNK : nb;
    for (int64_t t0 = 0; t0 < T; t0 += tb)
        for (int i = 0; i < n; i += GB_PT2 ? 2 : 1)
            for (int64_t b0 = 0; b0 < nb; b0 += kc)
                panel_rows(fmt, GB_PT2 && i + 1 < n ? 2 : 1, P + i * nb, nb, b0, nb - b0 < kc ? nb - b0 : kc, xq + t0 * nb,
                           T - t0 < tb ? T - t0 : tb, y + t0 * N, N, bias, g0 + i, N);
}

/* the tile's forms of a freshly filled panel (signed values, or 32-value mins) */
static void panel_prep(int fmt, kpanel *P, int64_t nb) {
    if (panel_pre(fmt)) panel_premul(fmt, P, nb);
    else if (panel_sgn(fmt)) panel_signed(fmt, P, nb);
    else if (panel_sub(fmt) == 2) panel_pairs32(P, nb);
}
#endif

/* ---- the launcher -------------------------------------------------------------------------- */

int gb_kversion_available(int v) {
    if (v == GB_KV_REF) return 1;
#ifdef GB_HAVE_K_VNNI
    if (v == GB_KV_VNNI) return 1;
#endif
#ifdef GB_HAVE_K_AVX2
    if (v == GB_KV_AVX2) return 1;
#endif
    return 0;
}

int gb_kversion_best(void) {
    return gb_kversion_available(GB_KV_VNNI) ? GB_KV_VNNI : gb_kversion_available(GB_KV_AVX2) ? GB_KV_AVX2 : GB_KV_REF;
}

const char *gb_kversion_name(int v) {
    static const char *names[GB_KV_COUNT] = {"auto", "kquant_ref", "kquant_vnni", "kquant_avx2"};
    return v >= 0 && v < GB_KV_COUNT ? names[v] : "?";
}

#define GB_K_TMAX 64
/* from this many tokens the VNNI version decodes 16-row panels once per call (prefill); on the
 * repacked layout from 16 (the 2-group panel tile was as fast as the group kernel at 16-32 tokens
 * for q4_K and 1.4x faster for q6_K: a routed expert's share of a 512-token prefill is ~32) */
#define GB_K_PANEL_MIN_T 64
#define GB_KP_PANEL_MIN_T 16

int gb_klinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
               int64_t K, int version) {
    if (!gb_is_kfmt(fmt)) return gb_error(GB_EVALUE, "klinear: format %d is not q2_K (10), q3_K (11), q4_K (12), q5_K (13), q6_K (14) or iq4_xs (23)", fmt);
    if (K <= 0 || K % QKK) return gb_error(GB_EVALUE, "klinear: K=%ld must be a positive multiple of 256", (long)K);
    if (T < 0 || N < 0) return gb_error(GB_EVALUE, "klinear: T=%ld and N=%ld must be >= 0", (long)T, (long)N);
    if (version == GB_KV_AUTO) version = gb_kversion_best();
    if (!gb_kversion_available(version))
        return gb_error(GB_EVALUE, "klinear: kernel version %d (%s) is not compiled in on this build", version, gb_kversion_name(version));
    if (T == 0 || N == 0) return GB_OK;
    const int64_t nb = K / QKK, rb = gb_k_row_bytes(fmt, K);
    gb_block_q8_K *xq = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)(T * nb) * sizeof(gb_block_q8_K));
    if (!xq) return gb_error(GB_ENOMEM, "klinear: cannot allocate the q8_K activations (%ld rows of %ld)", (long)T, (long)K);
    /* tokens per chunk: their q8_K rows (292 bytes per 256 values) fit in L1 where they can, so every
     * weight row of the chunk re-reads them from there; at least one 16-token group */
    int64_t tc = (40 * 1024) / (nb * (int64_t)sizeof(gb_block_q8_K));
    tc = tc < 16 ? 16 : tc > GB_K_TMAX ? GB_K_TMAX : tc - tc % 16;
    const uint8_t *wb = (const uint8_t *)w;
    const int64_t G = T / 16;
    int32_t *bsT = NULL;
    float *dxT = NULL;
#ifdef GB_HAVE_K_VNNI
    void (*row)(const uint8_t *, const gb_block_q8_K *, int64_t, int64_t, float *, kx16) = NULL;
    if (version == GB_KV_VNNI)
        row = fmt == GB_Q2_K ? row_vnni_q2 : fmt == GB_Q3_K ? row_vnni_q3 : fmt == GB_Q4_K ? row_vnni_q4 : fmt == GB_Q5_K ? row_vnni_q5
            : fmt == GB_Q6_K ? row_vnni_q6 : row_vnni_iq4xs;
    if (row && G && tc >= 16 && T < GB_K_PANEL_MIN_T) {
        bsT = (int32_t *)gb_ws_aligned_alloc(64, (size_t)(G * nb * 128) * sizeof(int32_t));
        dxT = (float *)gb_ws_aligned_alloc(64, (size_t)(G * nb * 16) * sizeof(float));
        if (!bsT || !dxT) {
            gb_ws_free(bsT);
            gb_ws_free(dxT);
            gb_ws_free(xq);
            return gb_error(GB_ENOMEM, "klinear: cannot allocate the transposed activation sums (%ld tokens)", (long)T);
        }
    }
#endif
    const int panel = version == GB_KV_VNNI && T >= GB_K_PANEL_MIN_T;
    int fail = 0;
#pragma omp parallel if (N * K * T > 65536)
    {
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++) {
#ifdef GB_HAVE_K_VNNI
            if (panel) {
                quant_row_panel(fmt, x + t * K, xq + t * nb, nb);
                continue;
            }
#endif
            gb_quantize_row_q8_K(x + t * K, xq + t * nb, K);
#ifdef GB_HAVE_K_VNNI
            if (row && x_permuted(fmt)) permute_x(fmt, xq + t * nb, nb);
#endif
        }
#ifdef GB_HAVE_K_VNNI
        if (panel) {
            int64_t tb;
            const int sp = panel_blocking(nb, (N + 15) / 16, &tb);
            kpanel *P = (kpanel *)gb_ws_aligned_alloc(64, (size_t)(sp * nb) * sizeof(kpanel));
            if (!P) {
#pragma omp atomic write
                fail = 1;
            }
            const int64_t Gn = (N + 15) / 16;
#pragma omp for schedule(dynamic, 1)
            for (int64_t st = 0; st < (Gn + sp - 1) / sp; st++) { /* sp groups per step (panel_blocking) */
                if (!P) continue;
                const int64_t g0 = st * sp;
                const int n = Gn - g0 < sp ? (int)(Gn - g0) : sp;
                for (int i = 0; i < n; i++) {
                    const int64_t g = g0 + i;
                    const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
                    panel_fill(fmt, wb + 16 * g * rb, rb, nr, nb, P + i * nb);
                    panel_prep(fmt, P + i * nb, nb);
                }
                panel_step(fmt, P, g0, n, nb, xq, T, tb, y, N, bias);
            }
            gb_ws_free(P);
        }
#endif
        if (bsT) {
#pragma omp for schedule(static)
            for (int64_t gb = 0; gb < G * nb; gb++) {
                const int64_t g = gb / nb, b = gb % nb;
                for (int t = 0; t < 16; t++) {
                    const gb_block_q8_K *blk = &xq[(16 * g + t) * nb + b];
                    dxT[gb * 16 + t] = blk->d;
                    for (int c2 = 0; c2 < 8; c2++)
                        bsT[(gb * 8 + c2) * 16 + t] = (int32_t)((uint32_t)(uint16_t)blk->bsums[2 * c2] | ((uint32_t)(uint16_t)blk->bsums[2 * c2 + 1] << 16));
                }
            }
        }
        for (int64_t t0 = 0; t0 < T && !panel; t0 += tc) {
            const int64_t tt = T - t0 < tc ? T - t0 : tc;
#pragma omp for schedule(static, 8) nowait
            for (int64_t n = 0; n < N; n++) {
                float acc[GB_K_TMAX];
                for (int64_t t = 0; t < tt; t++) acc[t] = 0.0f;
#ifdef GB_HAVE_K_VNNI
                if (row) {
                    const kx16 g16 = {bsT ? bsT + t0 / 16 * nb * 128 : NULL, dxT ? dxT + t0 / 16 * nb * 16 : NULL};
                    row(wb + n * rb, xq + t0 * nb, nb, tt, acc, g16);
                } else
#endif
                    row_ref(fmt, wb + n * rb, xq + t0 * nb, nb, tt, acc);
                for (int64_t t = 0; t < tt; t++) y[(t0 + t) * N + n] = acc[t] + (bias ? bias[n] : 0.0f);
            }
        }
    }
    gb_ws_free(bsT);
    gb_ws_free(dxT);
    gb_ws_free(xq);
    if (fail) return gb_error(GB_ENOMEM, "klinear: cannot allocate the 16-row weight panels (%ld super-blocks)", (long)nb);
    return GB_OK;
}

/* ---- the repacked layout: 16 rows interleaved, scales pre-decoded (decode GEMV) ------------------
 * See quant_k.h. Per group of 16 rows and super-block b, one record of gb_kp_block_bytes(fmt):
 *   qs  [32][64]  zmm k, byte 4r+i: low nibble value 8k+i of row r, high nibble value 8k+4+i
 *   qh  q5_K [8][64]: byte 4r+i of entry m, bit 2j = bit 4 of value 8k+i, bit 2j+1 of value 8k+4+i
 *       (k = 4m+j);
 *       q6_K [16][64]: byte 4r+i of entry m, bits 2j..2j+1 = bits 4..5 of value 16m+4j+i
 *       (q5_K/q6_K: qs and qh interleaved in runs, kp_qs_at / kp_hb_at, so a record is one stream)
 *   sc  int8 [nsub][16] (nsub 8 sub-blocks of 32, 16 of 16 for q6_K): the scale, signed
 *   mn  int8 [8][16] (q4_K, q5_K): the min
 *   d   f16 [16], dmin f16 [16] (q4_K, q5_K), as stored
 * q2_K/q3_K: see kp_2bit below. Rows past N are zero. Records go group by group, super-blocks in
 * order: a group is one stream. */

int gb_kp_is_fmt(int fmt) { return gb_is_kfmt(fmt); }

/* q2_K and q3_K (2-bit planes): qs [16][64], zmm m byte 4r+i bits 2j..2j+1 = value 16m+4j+i of
 * row r; q3_K's third bits as [16][4] uint64 byte masks (mask j of zmm m: value 16m+4j+i, bit
 * 4r+i); q2_K's scale | min << 4 as stored, one byte per (sub-block, row); q3_K's scale - 32 int8 */
static inline int kp_2bit(int fmt) { return fmt == GB_Q2_K || fmt == GB_Q3_K; }
static inline int kp_nsub(int fmt) { return fmt == GB_Q6_K || kp_2bit(fmt) ? 16 : 8; }
static inline int64_t kp_sc_off(int fmt) {
    return fmt == GB_Q2_K ? 1024 : fmt == GB_Q3_K ? 1536 : 2048 + (fmt == GB_Q5_K ? 512 : fmt == GB_Q6_K ? 1024 : 0);
}
static inline int64_t kp_mn_off(int fmt) { return fmt == GB_Q2_K ? kp_sc_off(fmt) : kp_sc_off(fmt) + 16 * kp_nsub(fmt); }
static inline int kp_has_min(int fmt) { return fmt == GB_Q4_K || fmt == GB_Q5_K || fmt == GB_Q2_K; }
/* q5_K/q6_K: the high bits sit next to the nibbles they complete, so a record is read front to
 * back as one stream: q5_K in runs of 4 nibble zmm + their 64 bytes of fifth bits (320 bytes),
 * q6_K in runs of 2 nibble zmm + their 64 bytes of 2-bit fields (192 bytes) */
static inline int64_t kp_qs_at(int fmt, int k) {
    return fmt == GB_Q5_K ? 320 * (k / 4) + 64 * (k % 4) : fmt == GB_Q6_K ? 192 * (k / 2) + 64 * (k % 2) : 64 * k;
}
static inline int64_t kp_hb_at(int fmt, int k) { return fmt == GB_Q5_K ? 320 * (k / 4) + 256 : 192 * (k / 2) + 128; }
static inline int64_t kp_d_off(int fmt) {
    return kp_2bit(fmt) ? kp_sc_off(fmt) + 256 : kp_mn_off(fmt) + (kp_has_min(fmt) ? 128 : 0);
}

/* a record's bytes as a constant the kernels' loops fold (gb_kp_block_bytes is exported: under -fPIC
 * an interposable call the compiler neither inlines nor folds) */
static inline int64_t kp_pb(int fmt) { return kp_d_off(fmt) + (kp_has_min(fmt) ? 64 : 32); }

int64_t gb_kp_block_bytes(int fmt) {
    if (!gb_kp_is_fmt(fmt)) return -1;
    return kp_pb(fmt);
}

int64_t gb_kp_bytes(int fmt, int64_t N, int64_t K) {
    if (!gb_kp_is_fmt(fmt) || N < 0 || K <= 0 || K % QKK) return -1;
    return gb_size_mul(gb_size_mul(N / 16 + (N % 16 != 0), K / QKK), gb_kp_block_bytes(fmt));
}

/* offsets of the stored f16 d (and dmin) inside a ggml block */
static inline int k_d_at(int fmt) { return fmt == GB_Q6_K ? 208 : fmt == GB_Q2_K ? 80 : fmt == GB_Q3_K ? 108 : 0; }
static inline int k_dm_at(int fmt) { return fmt == GB_Q2_K ? 82 : 2; }

/* row r of one packed record -> the decoded form kdecode gives for the stored block */
static void kp_unpack(int fmt, const uint8_t *p, int r, kdec *o) {
    o->off = k_off_only(fmt);
    if (kp_2bit(fmt)) {
        for (int m = 0; m < 16; m++)
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    int v = (p[64 * m + 4 * r + i] >> (2 * j)) & 3;
                    if (fmt == GB_Q3_K) {
                        uint64_t hm;
                        memcpy(&hm, p + 1024 + 32 * m + 8 * j, 8);
                        v |= (int)((hm >> (4 * r + i)) & 1) << 2;
                    }
                    o->q[16 * m + 4 * j + i] = (uint8_t)v;
                }
        const uint8_t *sc = p + kp_sc_off(fmt), *dp = p + kp_d_off(fmt);
        for (int c = 0; c < 16; c++) {
            if (fmt == GB_Q2_K) {
                o->sc[c] = sc[16 * c + r] & 0x0f;
                o->mn[c] = (int16_t)(sc[16 * c + r] >> 4);
            } else {
                o->sc[c] = (int8_t)sc[16 * c + r];
                o->mn[c] = (int16_t)(4 * o->sc[c]);
            }
        }
        o->d = h2f(dp + 2 * r);
        o->dm = fmt == GB_Q2_K ? h2f(dp + 32 + 2 * r) : o->d;
        return;
    }
    for (int k = 0; k < 32; k++)
        for (int i = 0; i < 4; i++) {
            const uint8_t byte = p[kp_qs_at(fmt, k) + 4 * r + i];
            int lo = byte & 0x0f, hi = byte >> 4;
            if (fmt == GB_Q5_K) {
                const uint8_t H = p[kp_hb_at(fmt, k) + 4 * r + i];
                lo |= ((H >> (2 * (k % 4))) & 1) << 4;
                hi |= ((H >> (2 * (k % 4) + 1)) & 1) << 4;
            } else if (fmt == GB_Q6_K) {
                const uint8_t H = p[kp_hb_at(fmt, k) + 4 * r + i];
                const int s = 4 * (k % 2);
                lo |= ((H >> s) & 3) << 4;
                hi |= ((H >> (s + 2)) & 3) << 4;
            }
            if (fmt == GB_IQ4_XS) {
                lo = kvalues_iq4nl[lo] + 128;
                hi = kvalues_iq4nl[hi] + 128;
            }
            o->q[8 * k + i] = (uint8_t)lo;
            o->q[8 * k + 4 + i] = (uint8_t)hi;
        }
    const int8_t *sc = (const int8_t *)(p + kp_sc_off(fmt));
    const uint8_t *dp = p + kp_d_off(fmt);
    o->d = h2f(dp + 2 * r);
    o->dm = kp_has_min(fmt) ? h2f(dp + 32 + 2 * r) : o->d;
    for (int c = 0; c < 16; c++) {
        const int s = fmt == GB_Q6_K ? sc[16 * c + r] : sc[16 * (c / 2) + r];
        o->sc[c] = s;
        o->mn[c] = (int16_t)(fmt == GB_Q6_K ? 32 * s : fmt == GB_IQ4_XS ? 128 * s : p[kp_mn_off(fmt) + 16 * (c / 2) + r]);
    }
}

/* the stored block of row r -> its part of a packed record (zeroed beforehand) */
static void kp_put(int fmt, const uint8_t *blk, int r, uint8_t *p) {
    kdec o;
    kdecode(fmt, blk, &o);
    if (kp_2bit(fmt)) {
        for (int m = 0; m < 16; m++)
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    const int v = o.q[16 * m + 4 * j + i];
                    p[64 * m + 4 * r + i] |= (uint8_t)((v & 3) << (2 * j));
                    if (fmt == GB_Q3_K && (v & 4)) {
                        uint64_t hm;
                        memcpy(&hm, p + 1024 + 32 * m + 8 * j, 8);
                        hm |= (uint64_t)1 << (4 * r + i);
                        memcpy(p + 1024 + 32 * m + 8 * j, &hm, 8);
                    }
                }
        uint8_t *sc = p + kp_sc_off(fmt), *dp = p + kp_d_off(fmt);
        for (int c = 0; c < 16; c++)
            sc[16 * c + r] = fmt == GB_Q2_K ? (uint8_t)(o.sc[c] | (o.mn[c] << 4)) : (uint8_t)(int8_t)o.sc[c];
        memcpy(dp + 2 * r, blk + k_d_at(fmt), 2);
        if (fmt == GB_Q2_K) memcpy(dp + 32 + 2 * r, blk + k_dm_at(fmt), 2);
        return;
    }
    for (int k = 0; k < 32; k++)
        for (int i = 0; i < 4; i++) {
            int lo = o.q[8 * k + i], hi = o.q[8 * k + 4 + i];
            if (fmt == GB_IQ4_XS) { /* back to the 4-bit index (the grid's values are distinct) */
                int a = 0, b = 0;
                for (int j = 0; j < 16; j++) {
                    if (kvalues_iq4nl[j] + 128 == lo) a = j;
                    if (kvalues_iq4nl[j] + 128 == hi) b = j;
                }
                lo = a;
                hi = b;
            }
            p[kp_qs_at(fmt, k) + 4 * r + i] = (uint8_t)((lo & 0x0f) | ((hi & 0x0f) << 4));
            if (fmt == GB_Q5_K) {
                const int j = k % 4;
                p[kp_hb_at(fmt, k) + 4 * r + i] |= (uint8_t)((((lo >> 4) & 1) << (2 * j)) | (((hi >> 4) & 1) << (2 * j + 1)));
            } else if (fmt == GB_Q6_K) {
                const int s = 4 * (k % 2);
                p[kp_hb_at(fmt, k) + 4 * r + i] |= (uint8_t)((((lo >> 4) & 3) << s) | (((hi >> 4) & 3) << (s + 2)));
            }
        }
    int8_t *sc = (int8_t *)(p + kp_sc_off(fmt));
    for (int c = 0; c < 16; c++) {
        if (fmt == GB_Q6_K) sc[16 * c + r] = (int8_t)o.sc[c];
        else if (c % 2 == 0) {
            sc[16 * (c / 2) + r] = (int8_t)o.sc[c];
            if (kp_has_min(fmt)) p[kp_mn_off(fmt) + 16 * (c / 2) + r] = (uint8_t)o.mn[c];
        }
    }
    uint8_t *dp = p + kp_d_off(fmt);
    memcpy(dp + 2 * r, blk + k_d_at(fmt), 2);
    if (kp_has_min(fmt)) memcpy(dp + 32 + 2 * r, blk + k_dm_at(fmt), 2);
}

int gb_krepack(int fmt, const void *w, void *packed, int64_t N, int64_t K) {
    if (!gb_kp_is_fmt(fmt)) return gb_error(GB_EVALUE, "krepack: format %d is not a K-quant (q2_K..q6_K, iq4_xs)", fmt);
    if (N < 0 || K <= 0 || K % QKK) return gb_error(GB_EVALUE, "krepack: N=%ld, K=%ld (K a positive multiple of 256)", (long)N, (long)K);
    const int64_t nb = K / QKK, rb = gb_k_row_bytes(fmt, K), pb = gb_kp_block_bytes(fmt), G = (N + 15) / 16;
    const uint8_t *src = (const uint8_t *)w;
#pragma omp parallel for schedule(static) if (N * K > 1 << 20)
    for (int64_t g = 0; g < G; g++) {
        uint8_t *out = (uint8_t *)packed + g * nb * pb;
        memset(out, 0, (size_t)(nb * pb));
        const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < nr; r++) kp_put(fmt, src + (16 * g + r) * rb + b * kblk_bytes(fmt), r, out + b * pb);
    }
    return GB_OK;
}

/* portable: the rows of one group (nr of 16), tokens x[t * nb], outputs y[t * ldy + r] */
static void kp_group_ref(int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, int64_t T, float *y, int64_t ldy,
                         const float *bias, int nr) {
    const int64_t pb = gb_kp_block_bytes(fmt);
    kdec o;
    float acc[GB_K_TMAX];
    for (int r = 0; r < nr; r++)
        for (int64_t t0 = 0; t0 < T; t0 += GB_K_TMAX) {
            const int64_t tt = T - t0 < GB_K_TMAX ? T - t0 : GB_K_TMAX;
            for (int64_t t = 0; t < tt; t++) acc[t] = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                kp_unpack(fmt, P + b * pb, r, &o);
                kdot_ref(&o, xq + t0 * nb + b, nb, tt, acc);
            }
            for (int64_t t = 0; t < tt; t++) y[(t0 + t) * ldy + r] = acc[t] + (bias ? bias[r] : 0.0f);
        }
}

#ifdef GB_HAVE_K_VNNI
static inline int32_t ld32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

#ifndef KP_ONE_TT
#define KP_ONE_TT 2
#endif
#ifndef KP_ONE_CHAIN
#define KP_ONE_CHAIN 1
#endif
#ifndef KP_MN_PAIR
#define KP_MN_PAIR 1
#endif
/* vpermw's index taking int16 r and 16 + r to lane r: two 16-row int16 vectors as pairs per row */
static inline __m512i kp_pair_idx(void) {
    return _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
}
#ifndef KP_Q4_HI16
#define KP_Q4_HI16 1
#endif
#ifndef KP_IQ4XS_VPERMB
#define KP_IQ4XS_VPERMB 1
#endif

/* zmm k of a packed record (Q its nibble bytes) -> the unsigned values 8k..8k+3 (lo) and 8k+4..8k+7
 * (hi) of the 16 rows, 4 bytes per row: with the fifth bit (q5_K), the 2 high bits (q6_K) or
 * through the iq4_nl grid + 128 (iq4_xs) */
static inline __attribute__((always_inline)) void kp_decode_z(const int fmt, const uint8_t *p, const int k, __m512i Q, __m512i *plo,
                                                              __m512i *phi) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), c16 = _mm512_set1_epi8(0x10);
    __m512i lo = _mm512_and_si512(Q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(Q, 4), m4);
    if (fmt == GB_Q5_K) {
        /* byte 4r+i of the run's fifth-bit zmm: bit 2j for lo, 2j+1 for hi (j = k % 4) */
        const __m512i H = _mm512_loadu_si512((const void *)(p + kp_hb_at(fmt, k)));
        const int j = k % 4;
#if defined(__GFNI__)
        /* the bit to bit 4, zero elsewhere (one affine transform: row 3 of the matrix picks output
         * bit 4), joined to the nibble by a bit select (vpternlogd 0xe4, as q6_K) */
        const __m512i flo = _mm512_gf2p8affine_epi64_epi8(H, _mm512_set1_epi64((long long)(1ull << (2 * j) << 24)), 0);
        const __m512i fhi = _mm512_gf2p8affine_epi64_epi8(H, _mm512_set1_epi64((long long)(2ull << (2 * j) << 24)), 0);
        *plo = _mm512_ternarylogic_epi32(Q, flo, m4, 0xe4);
        *phi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(Q, 4), fhi, m4, 0xe4);
        (void)c16;
        (void)m30;
        return;
#else
        const __m512i flo = 2 * j <= 4 ? _mm512_slli_epi16(H, 4 - 2 * j) : _mm512_srli_epi16(H, 2 * j - 4);
        const __m512i fhi = 2 * j + 1 <= 4 ? _mm512_slli_epi16(H, 3 - 2 * j) : _mm512_srli_epi16(H, 2 * j - 3);
        lo = _mm512_or_si512(lo, _mm512_and_si512(flo, c16));
        hi = _mm512_or_si512(hi, _mm512_and_si512(fhi, c16));
#endif
    } else if (fmt == GB_Q6_K) {
        const __m512i H = _mm512_loadu_si512((const void *)(p + kp_hb_at(fmt, k)));
#if defined(__GFNI__)
        /* the 2-bit field to bits 4..5 of each byte, zero elsewhere, in one affine transform (row 7-i
         * of the matrix picks output bit i), then the nibble below it by a bit select (vpternlogd
         * 0xe4: bits of the first operand where the third is set, else the second's): 5 ops per
         * 64 bytes of nibbles instead of 8-9 */
        const int s0 = 4 * (k % 2);
        const __m512i flo = _mm512_gf2p8affine_epi64_epi8(H, _mm512_set1_epi64((long long)((1ull << s0 << 24) | (2ull << s0 << 16))), 0);
        const __m512i fhi = _mm512_gf2p8affine_epi64_epi8(H, _mm512_set1_epi64((long long)((4ull << s0 << 24) | (8ull << s0 << 16))), 0);
        *plo = _mm512_ternarylogic_epi32(Q, flo, m4, 0xe4);
        *phi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(Q, 4), fhi, m4, 0xe4);
        (void)m30;
        return;
#endif
        if (k % 2 == 0) {
            lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_slli_epi16(H, 4), m30));
            hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_slli_epi16(H, 2), m30));
        } else {
            lo = _mm512_or_si512(lo, _mm512_and_si512(H, m30));
            hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_srli_epi16(H, 2), m30));
        }
    } else if (fmt == GB_IQ4_XS) {
#if defined(__AVX512VBMI__) && KP_IQ4XS_VPERMB
        /* vpermb reads the low 6 bits of each index byte: a 64-entry table of the 16 grid values
         * repeated 4 times takes the nibble as it lies (lo) or shifted down with the neighbour's bits
         * above it (hi), with no and-mask: 3 ops per 64 bytes of nibbles instead of 5 */
        const __m512i t64 = kiq4_grid512();
        *plo = _mm512_permutexvar_epi8(Q, t64);
        *phi = _mm512_permutexvar_epi8(_mm512_srli_epi16(Q, 4), t64);
        (void)lo, (void)hi, (void)c16, (void)m30;
        return;
#endif
        const __m512i tbl = kiq4_grid512();
        lo = _mm512_shuffle_epi8(tbl, lo);
        hi = _mm512_shuffle_epi8(tbl, hi);
    }
    *plo = lo;
    *phi = hi;
}

/* Software prefetch distance of the repacked decode kernels, in bytes: q4_K's (3 records of 2368),
 * the one format whose GEMV streamed from DRAM at 95% of the read bandwidth on 2 threads in the run
 * that opened issue 28 (2026-12-02); the others used whole records nearest 6.5 KB, 5.8-6.7 KB
 * (q5_K 5760, q6_K 6720: 50-55% there). Any distance covers every line: record b's lines are
 * fetched at p + pfd + 64 k. */
/* ... and the level it prefetches to: the L2 (prefetcht1), not the L1. On a Zen 4 (2 threads, from
 * DRAM, 2026-12-04, bench/results/session29_kgemv_prefetch_zen4_2026-12-04.md) prefetcht0 this far
 * ahead held the GEMV at 51-86% of the read bandwidth (q3_K 51%: the L1's few miss buffers full of
 * prefetches the loads wait behind); prefetcht1 88-102% (q3_K 2.0-2.7x, q4_K/q5_K/q6_K 1.06-1.1x),
 * prefetcht2 the same, prefetchnta no gain; 3552 or 14208 bytes ahead no better than 7104. The
 * iq4_nl/mxfp4 and q4_0/q8_0 GEMVs, at 90-97% with prefetcht0, measured no gain and keep it. */
#ifndef KP_PF_HINT
#define KP_PF_HINT _MM_HINT_T1
#endif
/* which formats' GEMV tiles prefetch at all: q4_K and q6_K stream from DRAM faster on the hardware
 * prefetchers alone (Zen 4, session 34, alternating builds: 1.03-1.09x at a 35 GB/s read ceiling,
 * 1.04-1.17x at 60-70 GB/s, a whole Q4_K_M model's decode 1.07-1.13x; q5_K mixed, iq4_xs even, q2_K /
 * q3_K 0.3-0.7x without: bench/results/kgemv_prefetch_q4k_q6k_zen4_s34_2026-12-05.md). A matrix
 * partly in the cache (one 76-108 MB matrix called again and again) is the case the prefetch still
 * wins (1.2-1.3x); a model's decode reads each weight once per token from DRAM. Session 36, the same
 * Zen 4, with the lighter decode of that session (iq4_xs by vpermb, the mins in pairs): iq4_xs 1.04x
 * at ~35 GB/s and 1.08-1.18x at ~58-61 GB/s without, q5_K 1.01-1.35x (best; medians 0.93-1.20x, 10 of
 * 12 pairs above 1) at 30-52 GB/s: both join them (bench/results/kgemv_iq4xs_vpermb_zen4_s36_2026-12-05.md). */
#ifndef KP_GEMV_PF
#define KP_GEMV_PF(fmt) ((fmt) != GB_Q4_K && (fmt) != GB_Q5_K && (fmt) != GB_Q6_K && (fmt) != GB_IQ4_XS)
#endif
#ifndef KP_PF_BYTES
#define KP_PF_BYTES 7104
#endif

/* TT tokens x the 16 rows of a group, all super-blocks: lane r of every vector is row r, so each
 * lane follows the portable arithmetic exactly (exact int32 isum and msum per super-block, then the
 * float32 formula) and the results are bit-identical to it. Per 64 bytes of nibbles: two vpdpbusd
 * (the token's 4 activation bytes broadcast) per token; per sub-block one vpmulld by the scales. */
static inline __attribute__((always_inline)) void kp_tile(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                          float *y, int64_t ldy, __m512 vb, __mmask16 m, const int TT) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), mno = kp_mn_off(fmt), dof = kp_d_off(fmt);
    const int64_t pfd = KP_PF_BYTES;
    const int nsub = kp_nsub(fmt), zps = 32 / nsub;
    const int MP = KP_MN_PAIR && fmt != GB_Q6_K; /* q4_K, q5_K, iq4_xs: msum in pairs of 32-value sub-blocks */
    /* ONE: a sub-block's lo and hi products summed in one accumulator, not two then an add: q6_K always (its
     * 16-value sub-blocks make a chain of 4 per token: 1.06-1.07x at one token, 1.32x at four), the 32-value
     * formats from KP_ONE_TT tokens on (1.03-1.07x; at one token their chain of 8 was 0.98x). HI16: q4_K at one
     * token keeps its high nibbles in place instead (16 x the values in a1, shifted back per sub-block). */
    const int HI16 = fmt == GB_Q4_K && KP_Q4_HI16 && TT < KP_ONE_TT;
    const int ONE = KP_ONE_CHAIN && (fmt == GB_Q6_K || TT >= KP_ONE_TT);
    __m512 acc[4];
    for (int t = 0; t < TT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        __m512i isum[4], msum[4];
        for (int t = 0; t < TT; t++) isum[t] = msum[t] = _mm512_setzero_si512();
        __m512i sc_prev = _mm512_setzero_si512();
        int32_t s32p[4][8]; /* MP: the token's 32-value sums as int16 pairs, pair k in dword (k % 2) + 4 (k / 2) */
        for (int t = 0; t < TT && MP; t++) {
            const __m256i s32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)xq[t * nb + b].bsums), _mm256_set1_epi16(1));
            _mm256_storeu_si256((__m256i *)s32p[t], _mm256_packs_epi32(s32, s32)); /* |sum| <= 32 * 127: no saturation */
        }
#pragma GCC unroll 16
        for (int s = 0; s < nsub; s++) {
            __m512i a0[4], a1[4];
            for (int t = 0; t < TT; t++) a0[t] = a1[t] = _mm512_setzero_si512();
            for (int kk = 0; kk < zps; kk++) {
                const int k = s * zps + kk;
                const __m512i Q = _mm512_loadu_si512((const void *)(p + kp_qs_at(fmt, k)));
                /* the record KP_PF_BYTES ahead, all its lines (<= 64): the high-bit planes and scales too */
                if (KP_GEMV_PF(fmt)) {
                    _mm_prefetch((const char *)(p + pfd + 64 * k), KP_PF_HINT);
                    if (64 * (k + 32) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (k + 32)), KP_PF_HINT);
                }
                __m512i lo, hi;
                if (HI16) { /* the high nibbles left in place: 16 x the values, a1 16 x its sum */
                    lo = _mm512_and_si512(Q, _mm512_set1_epi8(0x0f));
                    hi = _mm512_and_si512(Q, _mm512_set1_epi8((char)0xf0));
                } else
                    kp_decode_z(fmt, p, k, Q, &lo, &hi);
                for (int t = 0; t < TT; t++) {
                    const int8_t *xs = xq[t * nb + b].qs + 8 * k;
                    a0[t] = _mm512_dpbusd_epi32(a0[t], lo, _mm512_set1_epi32(ld32(xs)));
                    if (ONE) a0[t] = _mm512_dpbusd_epi32(a0[t], hi, _mm512_set1_epi32(ld32(xs + 4)));
                    else a1[t] = _mm512_dpbusd_epi32(a1[t], hi, _mm512_set1_epi32(ld32(xs + 4)));
                }
            }
            const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * s)));
            if (MP && s % 2) {
                /* msum two 32-value sub-blocks per vpdpwssd: lane r the int16 pair (mn[s-1][r], mn[s][r]) from
                 * the two sub-blocks' 32 bytes by one vpermw, against the pair of 32-value activation sums */
                const __m512i pw = _mm512_permutexvar_epi16(kp_pair_idx(),
                                                            _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p + (kp_has_min(fmt) ? mno : sco) + 16 * (s - 1)))));
                for (int t = 0; t < TT; t++) msum[t] = _mm512_dpwssd_epi32(msum[t], pw, _mm512_set1_epi32(s32p[t][(s / 2) % 2 + 4 * (s / 4)]));
            }
            if (fmt == GB_Q6_K && s % 2) {
                /* msum two sub-blocks per vpdpwssd: lane r holds the int16 pair (sc[s-1][r], sc[s][r])
                 * against the pair (bsums[s-1], bsums[s]) broadcast; the same exact int32 */
                const __m512i pr = _mm512_ternarylogic_epi32(sc_prev, _mm512_slli_epi32(sc, 16), _mm512_set1_epi32(0xffff), 0xe4);
                for (int t = 0; t < TT; t++) msum[t] = _mm512_dpwssd_epi32(msum[t], pr, _mm512_set1_epi32(ld32(xq[t * nb + b].bsums + s - 1)));
            }
            sc_prev = sc;
            for (int t = 0; t < TT; t++) {
                const __m512i a1t = HI16 ? _mm512_srai_epi32(a1[t], 4) : a1[t]; /* exact: a multiple of 16 */
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(ONE ? a0[t] : _mm512_add_epi32(a0[t], a1t), sc));
                if (fmt == GB_Q6_K || MP) continue; /* msum above */
                const __m512i mn = kp_has_min(fmt) ? _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + mno + 16 * s))) : sc;
                const int16_t *bs = xq[t * nb + b].bsums;
                msum[t] = _mm512_add_epi32(msum[t], _mm512_mullo_epi32(mn, _mm512_set1_epi32((int32_t)bs[2 * s] + bs[2 * s + 1])));
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof)));
        const __m512 dm = kp_has_min(fmt) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof + 32))) : d;
        for (int t = 0; t < TT; t++) {
            /* mn = 32 * sc (q6_K), 128 * sc (iq4_xs): the same exact msum */
            const __m512i ms = fmt == GB_Q6_K ? _mm512_slli_epi32(msum[t], 5) : fmt == GB_IQ4_XS ? _mm512_slli_epi32(msum[t], 7) : msum[t];
            const __m512 dx = _mm512_set1_ps(xq[t * nb + b].d);
            const __m512 r = k_off_only(fmt) ? _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t], ms)))
                             : _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[t])),
                                             _mm512_mul_ps(_mm512_mul_ps(dm, dx), _mm512_cvtepi32_ps(ms)));
            acc[t] = _mm512_add_ps(acc[t], r);
        }
    }
    for (int t = 0; t < TT; t++) _mm512_mask_storeu_ps(y + t * ldy, m, _mm512_add_ps(acc[t], vb));
}

/* q2_K / q3_K: per zmm (one 16-value sub-block of 16 rows) 4 fields of 2 bits, each one vpdpbusd
 * per token; q3_K's third bit by a masked vpaddb; the same per-lane arithmetic as kp_tile */
static inline __attribute__((always_inline)) void kp_decode2(const int fmt, const uint8_t *p, const int m, const int j, __m512i Q,
                                                             __m512i *v) {
#if defined(__GFNI__)
    /* bits 2j, 2j+1 of every byte to bits 0, 1 in one affine transform (row 7-i of the matrix picks
     * output bit i) instead of a shift and an and */
    __m512i x = _mm512_gf2p8affine_epi64_epi8(Q, _mm512_set1_epi64((long long)(((uint64_t)(1u << (2 * j)) << 56) | ((uint64_t)(2u << (2 * j)) << 48))), 0);
#else
    __m512i x = _mm512_and_si512(j ? _mm512_srli_epi16(Q, 2 * j) : Q, _mm512_set1_epi8(3));
#endif
    if (fmt == GB_Q3_K) {
        uint64_t hm;
        memcpy(&hm, p + 1024 + 32 * m + 8 * j, 8);
        x = _mm512_mask_add_epi8(x, (__mmask64)hm, x, _mm512_set1_epi8(4));
    }
    *v = x;
}

/* the decode tile's q2_K / q3_K pairs (kp_tile2, KP2_PAIR): two 16-value sums as the int16 halves of one
 * int32 lane, the low one + PANEL_PAIR_BIAS so >= 0 (no borrow from the high half). Until session 38 the
 * prefill panels took the same pairs (one vpdpwssd per two groups); now their values carry the scales. */
#ifndef PANEL_PAIR_BIAS
#define PANEL_PAIR_BIAS 16384
#endif

#ifndef KP2_ONE_TT
#define KP2_ONE_TT 1
#endif
#ifndef KP2_PAIR
#define KP2_PAIR 1
#endif
#if KP2_PAIR && PANEL_PAIR_BIAS != (1 << 14)
#error "kp_tile2 takes the bias off as a shift by 14"
#endif
static inline __attribute__((always_inline)) void kp_tile2(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                           float *y, int64_t ldy, __m512 vb, __mmask16 msk, const int TT) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), dof = kp_d_off(fmt);
    const int64_t pfd = KP_PF_BYTES; /* as kp_tile */
    const int ONE2 = KP_ONE_CHAIN && TT >= KP2_ONE_TT; /* the 4 fields' products into one sum (kp_tile's ONE) */
    __m512 acc[4];
    for (int t = 0; t < TT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        __m512i isum[4], msum[4], iprev[4];
        __m512i sc_even = _mm512_setzero_si512();
        for (int t = 0; t < TT; t++) isum[t] = msum[t] = iprev[t] = _mm512_setzero_si512();
        for (int m = 0; m < 16; m++) {
            const __m512i Q = _mm512_loadu_si512((const void *)(p + 64 * m));
            if (KP_GEMV_PF(fmt)) {
                _mm_prefetch((const char *)(p + pfd + 64 * m), KP_PF_HINT);
                if (64 * (m + 16) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (m + 16)), KP_PF_HINT);
            }
            __m512i a0[4], a1[4];
            for (int t = 0; t < TT; t++) a0[t] = a1[t] = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++) {
                __m512i v;
                kp_decode2(fmt, p, m, j, Q, &v);
                for (int t = 0; t < TT; t++) {
                    const __m512i xv = _mm512_set1_epi32(ld32(xq[t * nb + b].qs + 16 * m + 4 * j));
                    if (j % 2 && !ONE2) a1[t] = _mm512_dpbusd_epi32(a1[t], v, xv);
                    else a0[t] = _mm512_dpbusd_epi32(a0[t], v, xv);
                }
            }
            if (KP2_PAIR) {
                /* sub-blocks m - 1, m as the int16 halves of one lane (|sum| <= 16 * 7 * 128 < 2^14: the even
                 * one + PANEL_PAIR_BIAS so no borrow reaches the high half), times the pair
                 * of scales by one vpdpwssd, and the pair of mins against the pair of 16-value activation
                 * sums (adjacent int16) by another: 2 ops per token and pair of sub-blocks, not 4 vpmulld.
                 * The pairs of scales (and mins) from the two sub-blocks' 32 bytes by one vpermw. */
                if (m % 2 == 0) {
                    for (int t = 0; t < TT; t++) iprev[t] = ONE2 ? a0[t] : _mm512_add_epi32(a0[t], a1[t]);
                    continue;
                }
                const __m256i s32 = _mm256_loadu_si256((const __m256i *)(p + sco + 16 * (m - 1)));
                const __m512i pw = _mm512_permutexvar_epi16(kp_pair_idx(), fmt == GB_Q2_K ? _mm512_cvtepu8_epi16(s32) : _mm512_cvtepi8_epi16(s32));
                const __m512i scp = fmt == GB_Q2_K ? _mm512_and_si512(pw, _mm512_set1_epi16(15)) : pw;
                const __m512i mnp = fmt == GB_Q2_K ? _mm512_srli_epi16(pw, 4) : pw;
                sc_even = _mm512_add_epi32(sc_even, scp); /* the low halves' sum, |.| < 2^15 */
                for (int t = 0; t < TT; t++) {
                    const __m512i pr = _mm512_add_epi32(_mm512_add_epi32(iprev[t], _mm512_set1_epi32(PANEL_PAIR_BIAS)),
                                                        _mm512_slli_epi32(ONE2 ? a0[t] : _mm512_add_epi32(a0[t], a1[t]), 16));
                    isum[t] = _mm512_dpwssd_epi32(isum[t], pr, scp);
                    msum[t] = _mm512_dpwssd_epi32(msum[t], mnp, _mm512_set1_epi32(ld32(xq[t * nb + b].bsums + m - 1)));
                }
                continue;
            }
            __m512i sc, mn;
            if (fmt == GB_Q2_K) {
                const __m512i sm = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * m)));
                sc = _mm512_and_si512(sm, _mm512_set1_epi32(15));
                mn = _mm512_srli_epi32(sm, 4);
            } else {
                sc = mn = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * m)));
            }
            for (int t = 0; t < TT; t++) {
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_add_epi32(a0[t], a1[t]), sc));
                msum[t] = _mm512_add_epi32(msum[t], _mm512_mullo_epi32(mn, _mm512_set1_epi32(xq[t * nb + b].bsums[m])));
            }
        }
        if (KP2_PAIR) { /* the bias off again: - PANEL_PAIR_BIAS * (the even sub-blocks' scales, sign-extended from the low halves) */
            const __m512i cb = _mm512_srai_epi32(_mm512_slli_epi32(sc_even, 16), 2);
            for (int t = 0; t < TT; t++) isum[t] = _mm512_sub_epi32(isum[t], cb);
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof)));
        const __m512 dm = fmt == GB_Q2_K ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof + 32))) : d;
        for (int t = 0; t < TT; t++) {
            const __m512 dx = _mm512_set1_ps(xq[t * nb + b].d);
            const __m512 r = fmt == GB_Q3_K /* mn = 4 (sc - 32), d = dm: kterm's exact difference */
                                 ? _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[t], _mm512_slli_epi32(msum[t], 2))))
                                 : _mm512_sub_ps(_mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum[t])),
                                                 _mm512_mul_ps(_mm512_mul_ps(dm, dx), _mm512_cvtepi32_ps(msum[t])));
            acc[t] = _mm512_add_ps(acc[t], r);
        }
    }
    for (int t = 0; t < TT; t++) _mm512_mask_storeu_ps(y + t * ldy, msk, _mm512_add_ps(acc[t], vb));
}


/* the prefill panels' prefetches to the L2 as the GEMV's (KP_PF_HINT): routed experts at T = 512 (about
 * 32 tokens each, the panels decoded per call) 1.10x (q5_K) and 1.16x (q6_K) on the Zen 4, q4_K 1.01-1.04x,
 * T = 64-128 unchanged (bench/results/session29_kgemv_prefetch_zen4_2026-12-04.md) */
#ifndef KP_PANEL_HINT
#define KP_PANEL_HINT _MM_HINT_T1
#endif
/* a packed q2_K/q3_K group -> the prefill panels in the tile's forms (what panel_fill then panel_prep
 * make from the stored rows): the values times their scales (q3_K's signed and negated, with its corr) */
static inline __attribute__((always_inline)) void panel_fill_packed2(const int fmt, const uint8_t *P, int64_t nb, kpanel *K) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), dof = kp_d_off(fmt);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        kpanel *o = K + b;
        __m512i mn[16], ws = _mm512_setzero_si512();
        const int64_t pfd = (6500 + pb / 2) / pb * pb; /* as kp_tile2 */
        for (int m = 0; m < 16; m++) {
            const __m512i Q = _mm512_loadu_si512((const void *)(p + 64 * m));
            _mm_prefetch((const char *)(p + pfd + 64 * m), KP_PANEL_HINT);
            if (64 * (m + 16) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (m + 16)), KP_PANEL_HINT);
            __m512i sc;
            if (fmt == GB_Q2_K) {
                const __m512i sm = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * m)));
                sc = _mm512_and_si512(sm, _mm512_set1_epi32(15));
                mn[m] = _mm512_srli_epi32(sm, 4);
            } else { /* q3_K: its offset goes into corr (signed panels): no mins */
                sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * m)));
            }
            for (int j = 0; j < 4; j++) {
                __m512i x;
                kp_decode2(fmt, p, m, j, Q, &x); /* the stored value (q3_K: q + 4) */
                _mm512_store_si512((void *)(o->q + (4 * m + j) * 16), kp_premul4(fmt, x, sc, &ws)); /* panel_premul's */
            }
        }
        if (fmt == GB_Q3_K) _mm512_store_si512((void *)o->corr, _mm512_mullo_epi32(ws, _mm512_set1_epi32(-128))); /* panel_premul's corr */
        for (int c2 = 0; c2 < 8 && fmt == GB_Q2_K; c2++)
            _mm512_store_si512((void *)(o->mn + c2 * 16), _mm512_or_si512(_mm512_and_si512(mn[2 * c2], _mm512_set1_epi32(0xffff)),
                                                                          _mm512_slli_epi32(mn[2 * c2 + 1], 16)));
        _mm512_store_ps(o->d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof))));
        _mm512_store_ps(o->dm, fmt == GB_Q2_K ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof + 32))) : _mm512_load_ps(o->d));
    }
}

#define KP_GROUP(name, F, TILE)                                                                                        \
    static void name(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, int64_t T, float *y, int64_t ldy,          \
                     const float *bias, __mmask16 m) {                                                                 \
        const __m512 vb = bias ? _mm512_maskz_loadu_ps(m, bias) : _mm512_setzero_ps();                                 \
        int64_t t0 = 0;                                                                                                \
        for (; t0 + 4 <= T; t0 += 4) TILE(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, vb, m, 4);                        \
        switch (T - t0) {                                                                                              \
        case 3: TILE(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, vb, m, 3); break;                                      \
        case 2: TILE(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, vb, m, 2); break;                                      \
        case 1: TILE(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, vb, m, 1); break;                                      \
        default: break;                                                                                                \
        }                                                                                                              \
    }
KP_GROUP(kp_group_q4, GB_Q4_K, kp_tile)
KP_GROUP(kp_group_q5, GB_Q5_K, kp_tile)
KP_GROUP(kp_group_q6, GB_Q6_K, kp_tile)
KP_GROUP(kp_group_iq4xs, GB_IQ4_XS, kp_tile)
KP_GROUP(kp_group_q2, GB_Q2_K, kp_tile2)
KP_GROUP(kp_group_q3, GB_Q3_K, kp_tile2)

/* a packed group -> the prefill panels (what panel_fill then panel_prep make from the stored rows;
 * padding rows are zero in both): the decoded zmm of a record are the panel's 4-value chunks as they
 * are; q6_K/iq4_xs made signed with their corr, q4_K/q5_K's mins written as 32-value pairs */
static inline __attribute__((always_inline)) void panel_fill_packed_f(const int fmt, const uint8_t *P, int64_t nb, kpanel *K) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), mno = kp_mn_off(fmt), dof = kp_d_off(fmt);
    const int SGN = panel_sgn(fmt);
    const __m512i off = _mm512_set1_epi8((char)(fmt == GB_Q6_K ? 32 : 128)), one = _mm512_set1_epi8(1);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        kpanel *o = K + b;
        const int64_t pfd = (6500 + pb / 2) / pb * pb; /* as kp_tile: the record ~6.5 KB ahead, every line */
        __m512i ws = _mm512_setzero_si512(), corr = _mm512_setzero_si512();
        for (int k = 0; k < 32; k++) {
            __m512i lo, hi;
            _mm_prefetch((const char *)(p + pfd + 64 * k), KP_PANEL_HINT);
            if (64 * (k + 32) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (k + 32)), KP_PANEL_HINT);
            kp_decode_z(fmt, p, k, _mm512_loadu_si512((const void *)(p + kp_qs_at(fmt, k))), &lo, &hi);
            if (SGN) { /* panel_signed's work on the fly: values signed, corr from the 16-value groups' sums */
                lo = _mm512_sub_epi8(lo, off);
                hi = _mm512_sub_epi8(hi, off);
                ws = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(ws, one, lo), one, hi);
                if (k % 2) { /* group c = k / 2 done: chunks 4c..4c+3 */
                    const int c = k / 2, sub = fmt == GB_Q6_K ? c : c / 2;
                    corr = _mm512_add_epi32(corr, _mm512_mullo_epi32(ws, _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * sub)))));
                    ws = _mm512_setzero_si512();
                }
            }
            _mm512_store_si512((void *)(o->q + (2 * k) * 16), lo);
            _mm512_store_si512((void *)(o->q + (2 * k + 1) * 16), hi);
        }
        if (SGN) _mm512_store_si512((void *)o->corr, _mm512_mullo_epi32(corr, _mm512_set1_epi32(-128)));
        for (int c = 0; c < 16; c++) {
            const int sub = fmt == GB_Q6_K ? c : c / 2;
            _mm512_store_si512((void *)(o->sc + c * 16), _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + sco + 16 * sub))));
        }
        for (int k = 0; k < 4 && !SGN; k++) { /* q4_K/q5_K: panel_pairs32's form, the int16 pair (min 2k, min 2k + 1) per row */
            const __m512i a = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + mno + 16 * (2 * k))));
            const __m512i b2 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + mno + 16 * (2 * k + 1))));
            _mm512_store_si512((void *)(o->mn + k * 16), _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(b2, 16)));
        }
        _mm512_store_ps(o->d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof))));
        _mm512_store_ps(o->dm, kp_has_min(fmt) ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + dof + 32)))
                                               : _mm512_load_ps(o->d));
    }
}

static void panel_fill_packed(int fmt, const uint8_t *P, int nr, int64_t nb, kpanel *K) {
    (void)nr; /* rows past N are zero in the packed group, as panel_fill leaves them */
    switch (fmt) {
    case GB_Q2_K: panel_fill_packed2(GB_Q2_K, P, nb, K); break;
    case GB_Q3_K: panel_fill_packed2(GB_Q3_K, P, nb, K); break;
    case GB_Q4_K: panel_fill_packed_f(GB_Q4_K, P, nb, K); break;
    case GB_Q5_K: panel_fill_packed_f(GB_Q5_K, P, nb, K); break;
    case GB_Q6_K: panel_fill_packed_f(GB_Q6_K, P, nb, K); break;
    default: panel_fill_packed_f(GB_IQ4_XS, P, nb, K); break;
    }
}
#endif

#ifndef KP_PF_BYTES_AVX2
#define KP_PF_BYTES_AVX2 14208 /* software prefetch distance of the AVX2 version, bytes: 9.5-9.8 GB/s q4_K, 6.9-8.8 q6_K from DRAM at 1 thread (0: 5-6.5; 7104: 8.6-9.0, 5.1-8.1; 28416: 6.8-7.4; Zen 3, 2026-12-02) */
#endif
#ifndef KP_PF_HINT_AVX2
#define KP_PF_HINT_AVX2 _MM_HINT_T0
#endif
#ifndef KP_AVX2_UNROLL
#define KP_AVX2_UNROLL 1 /* sub-block loop: unrolling it cost registers (spills), no speed */
#endif
#ifndef KP_AVX2_HB1
#define KP_AVX2_HB1 2 /* halves per pass of the 1-token tile (the GEMV) */
#endif
#ifndef KP_AVX2_HB2
#define KP_AVX2_HB2 1 /* of the 2-token tile */
#endif
#ifndef KP_AVX2_TQ6
#define KP_AVX2_TQ6 8 /* tokens per tile of the q6_K GEMM (the 4-token tile's decode shared by 8) */
#endif
#ifndef KP_AVX2_TQ5
#define KP_AVX2_TQ5 8
#endif
#ifndef KP_AVX2_TQ4
#define KP_AVX2_TQ4 8
#endif
#ifndef KP_AVX2_KPS8_Q5
#define KP_AVX2_KPS8_Q5 2 /* q5_K's nibble ymm per int16 sum in the 8-token tile (1: 0.9x) */
#endif
#ifndef KP_AVX2_KPS8_Q4
#define KP_AVX2_KPS8_Q4 4 /* q4_K's (2: about the same) */
#endif
#define KP_TT_AVX2 8 /* the most tokens of one tile */
#ifndef KP_XCHUNK_AVX2
#define KP_XCHUNK_AVX2 (160 << 10) /* gb_klinear_packed's token chunk, bytes of q8_K activations (L2: 512 KB on Zen 3) */
#endif
#define KP_AVX2_PRAGMA_(x) _Pragma(#x)
#define KP_AVX2_PRAGMA(x) KP_AVX2_PRAGMA_(x)
#ifdef GB_HAVE_K_AVX2
/* ---- the AVX2 version (repacked K formats) -----------------------------------------------------------
 * The repacked record as it is (no layout of its own): each zmm-sized 64 bytes of nibbles is two
 * ymm, rows 0..7 and rows 8..15, 4 bytes per row, so int32 lane r of a ymm is row r of the half
 * and follows the portable arithmetic exactly, as the VNNI version's zmm lanes do. Per 32 bytes of
 * nibbles and token: two vpmaddubsw (unsigned weights x the token's 4 signed activation bytes
 * broadcast, pairs into int16; q4_K values 0..15, q5_K 0..31, q6_K 0..63 against |x| <= 127 cannot
 * saturate), their int16 sums over as many nibble ymm as cannot overflow (q4_K 4: 8 x 2 x 15 x 127
 * = 30480, q5_K 2: 31496, q6_K 1: 32004), then one vpmaddwd by the sub-block's scale repeated in
 * both int16 halves (int32: scale x the 4-value sums) into isum. msum by vpmaddwd of (mn[2c],
 * mn[2c+1]) int16 pairs against the token's pair of 32-value sums (q4_K/q5_K) or of 16-value sums
 * with the scales (q6_K, then x 32). Then the float32 formula of kterm lane by lane, in block
 * order: bit-identical to the portable version. Half a group (8 rows) per pass over a record. */
static inline int32_t ld32a(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Software prefetch of a record of pb bytes at a (any alignment), slice i of n: its lines in address
 * order, slice by slice, so the prefetches walk the weights strictly forward. Measured on the Zen 3
 * (1 thread, from DRAM, 25600x5120, quiet, 2026-12-02): q4_K 60% -> 73-83% of the read ceiling, q5_K
 * 61% -> 78-84%, q6_K 56% -> 73-80%, against the order it replaced (line k with line k + 32, or a run's
 * lines with the record's tail's), bit-identical (bench/results/kgemv_fwd_prefetch_zen3_s12_2026-12-02.md).
 * The GEMV paths only: the GEMM tiles keep the old order (1-4% faster with it), as do iq4_xs's GEMV
 * (8 points faster with it) and q2_K/q3_K's (compute-bound, no faster either way). */
#ifndef KP_PF_GEMV_HINT_AVX2
#define KP_PF_GEMV_HINT_AVX2 _MM_HINT_NTA /* the GEMV reads each weight once: NTA 0-12% faster than T0 (q4_K, q5_K; q6_K 1.00-1.05x), 6 runs, Zen 3 */
#endif
static inline __attribute__((always_inline)) void kp_pf_fwd(const uint8_t *a, const int64_t pb, const int i, const int n) {
    const int nl = (int)((pb + 127) / 64); /* the lines a record of pb bytes can touch */
    for (int l = i * nl / n; l < (i + 1) * nl / n; l++) _mm_prefetch((const char *)(a + 64 * l), KP_PF_GEMV_HINT_AVX2);
}

/* int8 a[r], b[r] (r < 8) -> the int16 pair (a[r], b[r]) in int32 lane r */
static inline __attribute__((always_inline)) __m256i pairs8(const uint8_t *a, const uint8_t *b) {
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b)));
}

/* half h (rows 8h..8h+7) of zmm k of a record -> the unsigned values 8k..8k+3 (lo) and 8k+4..8k+7 (hi) */
static inline __attribute__((always_inline)) void kp_decode_y(const int fmt, const uint8_t *p, const int k, const int h, __m256i *plo,
                                                              __m256i *phi) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i Q = _mm256_loadu_si256((const __m256i *)(p + kp_qs_at(fmt, k) + 32 * h));
    __m256i lo = _mm256_and_si256(Q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(Q, 4), m4);
    if (fmt == GB_Q5_K) {
        /* byte 4r+i of the run's fifth-bit ymm: bit 2j for lo, 2j+1 for hi (j = k % 4), moved to bit 4 */
        const __m256i H = _mm256_loadu_si256((const __m256i *)(p + kp_hb_at(fmt, k) + 32 * h)), c16 = _mm256_set1_epi8(0x10);
        const int j = k % 4;
        const __m256i flo = 2 * j <= 4 ? _mm256_slli_epi16(H, 4 - 2 * j) : _mm256_srli_epi16(H, 2 * j - 4);
        const __m256i fhi = 2 * j + 1 <= 4 ? _mm256_slli_epi16(H, 3 - 2 * j) : _mm256_srli_epi16(H, 2 * j - 3);
        lo = _mm256_or_si256(lo, _mm256_and_si256(flo, c16));
        hi = _mm256_or_si256(hi, _mm256_and_si256(fhi, c16));
    } else if (fmt == GB_IQ4_XS) {
        /* the grid values themselves, signed (-127..113): the tile multiplies them by the activations
         * through |x| and x's sign (vpsignb), so no +128 offset and no msum: isum is kterm's exact
         * isum - msum of the portable version's unsigned values */
        const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_iq4nl));
        lo = _mm256_shuffle_epi8(tbl, lo);
        hi = _mm256_shuffle_epi8(tbl, hi);
    } else if (fmt == GB_Q6_K) {
        /* bits 4(k%2)..+1 for lo, the next two for hi, moved to bits 4..5 */
        const __m256i H = _mm256_loadu_si256((const __m256i *)(p + kp_hb_at(fmt, k) + 32 * h)), m30 = _mm256_set1_epi8(0x30);
        if (k % 2 == 0) {
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(H, 4), m30));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(H, 2), m30));
        } else {
            lo = _mm256_or_si256(lo, _mm256_and_si256(H, m30));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(H, 2), m30));
        }
    }
    *plo = lo;
    *phi = hi;
}

/* y[t * ldy + r] = acc[r / 8][t][r % 8] + bz[r] for the nr (<= 16) rows of a group and TT tokens */
/* acc: [2][TS][8] (TS tokens per half: KP_TT_AVX2, or 16 for kp_tile16_avx2_q3) */
static inline void kp_store_acc_avx2(const float *acc, const int TS, int nh, int nr, int TT, const float *bz, float *y, int64_t ldy) {
    for (int h = 0; h < nh; h++) {
        const __m256 vb = _mm256_loadu_ps(bz + 8 * h);
        const int n = nr - 8 * h < 8 ? nr - 8 * h : 8;
        for (int t = 0; t < TT && n > 0; t++) {
            const __m256 v = _mm256_add_ps(_mm256_loadu_ps(acc + 8 * (h * TS + t)), vb);
            if (n == 8) _mm256_storeu_ps(y + t * ldy + 8 * h, v);
            else {
                float tmp[8];
                _mm256_storeu_ps(tmp, v);
                memcpy(y + t * ldy + 8 * h, tmp, (size_t)n * sizeof(float));
            }
        }
    }
}
static inline void kp_store_avx2(float acc[2][KP_TT_AVX2][8], int nh, int nr, int TT, const float *bz, float *y, int64_t ldy) {
    kp_store_acc_avx2(&acc[0][0][0], KP_TT_AVX2, nh, nr, TT, bz, y, ldy);
}

/* TT tokens (xq[t * nb]) x the nr rows of a group, all super-blocks: y[t * ldy + r] = sum + bias[r]
 * (bz: 16 floats, zero without a bias). HB halves per pass over a record: 1 (rows 0..7, then 8..15
 * if nr > 8: the registers of 4 tokens), or 2 (both halves at once: one pair of activation
 * broadcasts feeds 4 vpmaddubsw and the record is read front to back once; the GEMV) */
static inline __attribute__((always_inline)) void kp_tile_avx2(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                               float *y, int64_t ldy, const float *bz, int nr, const int TT,
                                                               const int HB, int pf) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), mno = kp_mn_off(fmt), dof = kp_d_off(fmt);
    const int64_t pfd = KP_PF_BYTES_AVX2;
    const int nsub = kp_nsub(fmt), zps = 32 / nsub;
    /* nibble ymm per int16 partial sum (the 8-token tile: fewer, so the partial sums fit the registers) */
    const int kps = fmt == GB_Q4_K ? (TT == 8 ? KP_AVX2_KPS8_Q4 : 4) : fmt == GB_Q5_K ? (TT == 8 ? KP_AVX2_KPS8_Q5 : 2) : 1;
    const int nh = HB == 2 || nr > 8 ? 2 : 1;
    const int iq = fmt == GB_IQ4_XS; /* signed grid values: no msum (see kp_decode_y) */
    /* the float32 running sums in memory (L1): 8 ymm held across the loop left too few for the tile */
    float acc[2][KP_TT_AVX2][8];
    memset(acc, 0, sizeof(acc));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        /* per token the int16 pairs msum is taken against: (32-value sums 2c, 2c+1), q6_K (16-value sums 2c, 2c+1) */
        int32_t bp[KP_TT_AVX2][8];
        for (int t = 0; t < TT; t++) {
            const int16_t *bs = xq[t * nb + b].bsums;
            if (fmt == GB_Q6_K)
                for (int c = 0; c < 8; c++) bp[t][c] = ld32a(bs + 2 * c);
            else
                for (int c = 0; c < 4; c++)
                    bp[t][c] = (int32_t)((uint32_t)(uint16_t)(bs[4 * c] + bs[4 * c + 1]) | ((uint32_t)(uint16_t)(bs[4 * c + 2] + bs[4 * c + 3]) << 16));
        }
        for (int h0 = 0; h0 < nh; h0 += HB) {
            __m256i isum[2][KP_TT_AVX2];
            for (int hh = 0; hh < HB; hh++)
                for (int t = 0; t < TT; t++) isum[hh][t] = _mm256_setzero_si256();
            KP_AVX2_PRAGMA(GCC unroll KP_AVX2_UNROLL)
            for (int s = 0; s < nsub; s++) {
                __m256i sc[2];
                for (int hh = 0; hh < HB; hh++) {
                    const __m128i s8 = _mm_loadl_epi64((const __m128i *)(p + sco + 16 * s + 8 * (h0 + hh)));
                    sc[hh] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8)); /* (sc, sc) per row */
                }
#pragma GCC unroll 4
                for (int k0 = 0; k0 < zps; k0 += kps) { /* unrolled: k % 4 (q5_K's bit) and k % 2 (q6_K's) constant */
                    __m256i a16[2][KP_TT_AVX2];
#pragma GCC unroll 4
                    for (int kk = k0; kk < k0 + kps; kk++) {
                        const int k = s * zps + kk;
                        if (pfd && pf && h0 == 0) { /* the record pfd bytes ahead */
                            if (TT == 1 && !iq) kp_pf_fwd(p + pfd, pb, k, 32); /* the GEMV */
                            else { /* line k with line k + 32 (the scales): iq4_xs at T = 1 70-76% of the read ceiling where the
                                    * forward walk read 65-67%, the GEMM tiles 1-4% faster (Zen 3, 2026-12-02) */
                                _mm_prefetch((const char *)(p + pfd + 64 * k), KP_PF_HINT_AVX2);
                                if (64 * (k + 32) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (k + 32)), KP_PF_HINT_AVX2);
                            }
                        }
                        __m256i lo[2], hi[2];
                        for (int hh = 0; hh < HB; hh++) kp_decode_y(fmt, p, k, h0 + hh, &lo[hh], &hi[hh]);
#pragma GCC unroll 8
                        for (int t = 0; t < TT; t++) {
                            const int8_t *xs = xq[t * nb + b].qs + 8 * k;
                            const __m256i x0 = _mm256_set1_epi32(ld32a(xs)), x1 = _mm256_set1_epi32(ld32a(xs + 4));
                            if (iq) { /* |x| x (w with x's sign): pairs <= 2 * 127 * 127, one vpmaddwd each */
                                const __m256i ax0 = _mm256_abs_epi8(x0), ax1 = _mm256_abs_epi8(x1);
                                for (int hh = 0; hh < HB; hh++)
                                    isum[hh][t] = _mm256_add_epi32(
                                        isum[hh][t], _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(ax0, _mm256_sign_epi8(lo[hh], x0)), sc[hh]),
                                                                      _mm256_madd_epi16(_mm256_maddubs_epi16(ax1, _mm256_sign_epi8(hi[hh], x1)), sc[hh])));
                                continue;
                            }
                            for (int hh = 0; hh < HB; hh++) {
                                const __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(lo[hh], x0), _mm256_maddubs_epi16(hi[hh], x1));
                                a16[hh][t] = kk == k0 ? v : _mm256_add_epi16(a16[hh][t], v);
                                /* into isum as soon as complete (q6_K: at once, fewer live registers) */
                                if (kk == k0 + kps - 1) isum[hh][t] = _mm256_add_epi32(isum[hh][t], _mm256_madd_epi16(a16[hh][t], sc[hh]));
                            }
                        }
                    }
                }
            }
            for (int hh = 0; hh < HB; hh++) {
                const int h = h0 + hh;
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 16 * h)));
                const __m256 dm = kp_has_min(fmt) ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 32 + 16 * h))) : d;
                const int np = fmt == GB_Q6_K ? 8 : iq ? 0 : 4;
                const int64_t mo = fmt == GB_Q6_K ? sco : mno;
                __m256i mp[8];
                for (int c = 0; c < np; c++) mp[c] = pairs8(p + mo + 16 * (2 * c) + 8 * h, p + mo + 16 * (2 * c + 1) + 8 * h);
                for (int t = 0; t < TT; t++) {
                    if (iq) { /* isum is already kterm's exact isum - msum */
                        const __m256 r = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(xq[t * nb + b].d)), _mm256_cvtepi32_ps(isum[hh][t]));
                        _mm256_storeu_ps(acc[h][t], _mm256_add_ps(_mm256_loadu_ps(acc[h][t]), r));
                        continue;
                    }
                    __m256i msum = _mm256_madd_epi16(mp[0], _mm256_set1_epi32(bp[t][0]));
                    for (int c = 1; c < np; c++) msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mp[c], _mm256_set1_epi32(bp[t][c])));
                    const __m256 dx = _mm256_set1_ps(xq[t * nb + b].d);
                    /* lane by lane kterm: q6_K (d*dx)*(isum - 32 msum), else (d*dx)*isum - (dm*dx)*msum, then added */
                    const __m256 r = fmt == GB_Q6_K
                                         ? _mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[hh][t], _mm256_slli_epi32(msum, 5))))
                                         : _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[hh][t])),
                                                         _mm256_mul_ps(_mm256_mul_ps(dm, dx), _mm256_cvtepi32_ps(msum)));
                    _mm256_storeu_ps(acc[h][t], _mm256_add_ps(_mm256_loadu_ps(acc[h][t]), r));
                }
            }
        }
    }
    kp_store_avx2(acc, nh, nr, TT, bz, y, ldy);
}

/* q6_K GEMM, 8 tokens x the nr rows of a group: kp_tile_avx2's steps (TT 8, HB 1) written for the q6_K
 * record: per run s (192 bytes) the half's 2-bit ymm read once for both nibble ymm, the token rows by
 * pointer, the prefetch as kp_gemv_avx2_q6's; the same integers and float32 steps, bit-identical */
static void kp_tile8_avx2_q6(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, int64_t ldy, const float *bz, int nr,
                             int pf) {
    const int64_t pb = kp_pb(GB_Q6_K), pfd = KP_PF_BYTES_AVX2;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    const int nh = nr > 8 ? 2 : 1;
    float acc[2][KP_TT_AVX2][8];
    memset(acc, 0, sizeof(acc));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb, *sc = p + 3072;
        const int8_t *xs[8];
        for (int t = 0; t < 8; t++) xs[t] = xq[t * nb + b].qs;
        for (int h = 0; h < nh; h++) {
            __m256i is[8];
            for (int t = 0; t < 8; t++) is[t] = _mm256_setzero_si256();
            for (int s = 0; s < 16; s++) {
                const uint8_t *q = p + 192 * s;
                if (pfd && pf && h == 0) { /* the record pfd bytes ahead: its 3 lines of this run, the scales' 5 */
                    for (int l = 0; l < 3; l++) _mm_prefetch((const char *)(q + pfd + 64 * l), KP_PF_HINT_AVX2);
                    if (s < 5) _mm_prefetch((const char *)(sc + pfd + 64 * s), KP_PF_HINT_AVX2);
                }
                const __m128i s8 = _mm_loadl_epi64((const __m128i *)(sc + 16 * s + 8 * h));
                const __m256i scv = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
                const __m256i H = _mm256_loadu_si256((const __m256i *)(q + 128 + 32 * h));
                const __m256i Q0 = _mm256_loadu_si256((const __m256i *)(q + 32 * h));
                __m256i lo = _mm256_or_si256(_mm256_and_si256(Q0, m4), _mm256_and_si256(_mm256_slli_epi16(H, 4), m30));
                __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q0, 4), m4), _mm256_and_si256(_mm256_slli_epi16(H, 2), m30));
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    const __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(ld32a(xs[t] + 16 * s))),
                                                       _mm256_maddubs_epi16(hi, _mm256_set1_epi32(ld32a(xs[t] + 16 * s + 4))));
                    is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(v, scv));
                }
                const __m256i Q1 = _mm256_loadu_si256((const __m256i *)(q + 64 + 32 * h));
                lo = _mm256_or_si256(_mm256_and_si256(Q1, m4), _mm256_and_si256(H, m30));
                hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(H, 2), m30));
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    const __m256i v = _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(ld32a(xs[t] + 16 * s + 8))),
                                                       _mm256_maddubs_epi16(hi, _mm256_set1_epi32(ld32a(xs[t] + 16 * s + 12))));
                    is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(v, scv));
                }
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 3328 + 16 * h)));
            __m256i mp[8];
            for (int c = 0; c < 8; c++) mp[c] = pairs8(sc + 16 * (2 * c) + 8 * h, sc + 16 * (2 * c + 1) + 8 * h);
            for (int t = 0; t < 8; t++) {
                const int16_t *bs = xq[t * nb + b].bsums;
                __m256i msum = _mm256_madd_epi16(mp[0], _mm256_set1_epi32(ld32a(bs)));
                for (int c = 1; c < 8; c++) msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mp[c], _mm256_set1_epi32(ld32a(bs + 2 * c))));
                const __m256 dx = _mm256_set1_ps(xq[t * nb + b].d);
                const __m256 r = _mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(is[t], _mm256_slli_epi32(msum, 5))));
                _mm256_storeu_ps(acc[h][t], _mm256_add_ps(_mm256_loadu_ps(acc[h][t]), r));
            }
        }
    }
    kp_store_avx2(acc, nh, nr, 8, bz, y, ldy);
}

#ifndef KP_AVX2_OWN_Q6
#define KP_AVX2_OWN_Q6 1 /* the q6_K 8-token tile's own loop (0: kp_tile_avx2's) */
#endif

/* q5_K GEMM, 8 tokens x the nr rows of a group: kp_tile_avx2's steps (TT 8, HB 1, int16 sums over 2
 * nibble ymm) written for the q5_K record: per run s (320 bytes) the half's fifth-bit ymm read once for
 * its 4 nibble ymm, token rows by pointer; the same integers and float32 steps, bit-identical */
static void kp_tile8_avx2_q5(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, int64_t ldy, const float *bz, int nr,
                             int pf) {
    const int64_t pb = kp_pb(GB_Q5_K), pfd = KP_PF_BYTES_AVX2;
    const __m256i m4 = _mm256_set1_epi8(0x0f), c16 = _mm256_set1_epi8(0x10);
    const int nh = nr > 8 ? 2 : 1;
    float acc[2][KP_TT_AVX2][8];
    memset(acc, 0, sizeof(acc));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb, *sc = p + 2560, *mn = p + 2688;
        const int8_t *xs[8];
        for (int t = 0; t < 8; t++) xs[t] = xq[t * nb + b].qs;
        for (int h = 0; h < nh; h++) {
            __m256i is[8];
            for (int t = 0; t < 8; t++) is[t] = _mm256_setzero_si256();
            for (int s = 0; s < 8; s++) {
                const uint8_t *q = p + 320 * s;
                if (pfd && pf && h == 0) { /* the record pfd bytes ahead: the 5 lines of this run, the scales' 5 */
                    for (int l = 0; l < 5; l++) _mm_prefetch((const char *)(q + pfd + 64 * l), KP_PF_HINT_AVX2);
                    if (s < 5) _mm_prefetch((const char *)(sc + pfd + 64 * s), KP_PF_HINT_AVX2);
                }
                const __m128i s8 = _mm_loadl_epi64((const __m128i *)(sc + 16 * s + 8 * h));
                const __m256i scv = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
                const __m256i H = _mm256_loadu_si256((const __m256i *)(q + 256 + 32 * h));
#pragma GCC unroll 2
                for (int j0 = 0; j0 < 4; j0 += 2) { /* nibble ymm j0, j0 + 1 (k = 4s + j): one int16 sum */
                    __m256i lo[2], hi[2];
#pragma GCC unroll 2
                    for (int u = 0; u < 2; u++) {
                        const int j = j0 + u;
                        const __m256i Q = _mm256_loadu_si256((const __m256i *)(q + 64 * j + 32 * h));
                        const __m256i flo = 2 * j <= 4 ? _mm256_slli_epi16(H, 4 - 2 * j) : _mm256_srli_epi16(H, 2 * j - 4);
                        const __m256i fhi = 2 * j + 1 <= 4 ? _mm256_slli_epi16(H, 3 - 2 * j) : _mm256_srli_epi16(H, 2 * j - 3);
                        lo[u] = _mm256_or_si256(_mm256_and_si256(Q, m4), _mm256_and_si256(flo, c16));
                        hi[u] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q, 4), m4), _mm256_and_si256(fhi, c16));
                    }
#pragma GCC unroll 8
                    for (int t = 0; t < 8; t++) {
                        const int8_t *x = xs[t] + 32 * s + 8 * j0;
                        const __m256i v0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo[0], _mm256_set1_epi32(ld32a(x))),
                                                            _mm256_maddubs_epi16(hi[0], _mm256_set1_epi32(ld32a(x + 4))));
                        const __m256i v1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo[1], _mm256_set1_epi32(ld32a(x + 8))),
                                                            _mm256_maddubs_epi16(hi[1], _mm256_set1_epi32(ld32a(x + 12))));
                        is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(_mm256_add_epi16(v0, v1), scv));
                    }
                }
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2816 + 16 * h)));
            const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2848 + 16 * h)));
            __m256i mp[4];
            for (int c = 0; c < 4; c++) mp[c] = pairs8(mn + 16 * (2 * c) + 8 * h, mn + 16 * (2 * c + 1) + 8 * h);
            for (int t = 0; t < 8; t++) {
                const int16_t *bs = xq[t * nb + b].bsums;
                __m256i msum = _mm256_setzero_si256();
                for (int c = 0; c < 4; c++) {
                    const int32_t bp = (int32_t)((uint32_t)(uint16_t)(bs[4 * c] + bs[4 * c + 1]) | ((uint32_t)(uint16_t)(bs[4 * c + 2] + bs[4 * c + 3]) << 16));
                    const __m256i m = _mm256_madd_epi16(mp[c], _mm256_set1_epi32(bp));
                    msum = c ? _mm256_add_epi32(msum, m) : m;
                }
                const __m256 dx = _mm256_set1_ps(xq[t * nb + b].d);
                const __m256 r = _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(is[t])),
                                               _mm256_mul_ps(_mm256_mul_ps(dm, dx), _mm256_cvtepi32_ps(msum)));
                _mm256_storeu_ps(acc[h][t], _mm256_add_ps(_mm256_loadu_ps(acc[h][t]), r));
            }
        }
    }
    kp_store_avx2(acc, nh, nr, 8, bz, y, ldy);
}

#ifndef KP_AVX2_OWN_Q5
#define KP_AVX2_OWN_Q5 1 /* the q5_K 8-token tile's own loop (0: kp_tile_avx2's) */
#endif

/* iq4_xs GEMM, 8 tokens x the nr rows of a group: kp_tile_avx2's integers with the sign moved to the
 * activations: vpmaddubsw(|w|, x with w's sign) (|w| <= 127 by a table of the grid's magnitudes) is
 * the same int16 pairs as vpmaddubsw(|x|, w with x's sign) (q8_K values are in [-127, 127]: the
 * quantizers clamp at 127 and -127/max scales the largest magnitude to -127, never -128), so the
 * token's |x| is not taken per ymm; each nibble ymm decoded once (2 lookups per half-byte) for its 8
 * tokens, low then high nibbles (fewer live registers); isum and the float32 steps as kp_tile_avx2's:
 * bit-identical */
/* an empty asm on a running sum: gcc then keeps the token's adds in order (reassociated, they held
 * more partial sums than the 16 ymm registers and spilled) */
#ifndef KP_PIN_SUMS
#define KP_PIN_SUMS 1
#endif
#if KP_PIN_SUMS
#define KP_PIN(v) __asm__("" : "+x"(v))
#else
#define KP_PIN(v) (void)0
#endif
#ifndef KP_IQ_ABS_TBL
#define KP_IQ_ABS_TBL 0 /* |w| by a second lookup (1) or vpabsb of w (0: one register fewer) */
#endif
#if KP_IQ_ABS_TBL
static const int8_t kvalues_iq4nl_abs[16] = {127, 104, 83, 65, 49, 35, 22, 10, 1, 13, 25, 38, 53, 69, 89, 113};
#define KP_IQ_ABS(w, i) _mm256_shuffle_epi8(atbl, i)
#else
#define KP_IQ_ABS(w, i) _mm256_abs_epi8(w)
#endif
static void kp_tile8_avx2_iq4xs(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, int64_t ldy, const float *bz,
                                int nr, int pf) {
    const int64_t pb = gb_kp_block_bytes(GB_IQ4_XS), pfd = KP_PF_BYTES_AVX2;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_iq4nl));
#if KP_IQ_ABS_TBL
    const __m256i atbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_iq4nl_abs));
#endif
    const int nh = nr > 8 ? 2 : 1;
    float acc[2][KP_TT_AVX2][8];
    memset(acc, 0, sizeof(acc));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb, *sc = p + 2048;
        const int8_t *xs[8];
        for (int t = 0; t < 8; t++) xs[t] = xq[t * nb + b].qs;
        for (int h = 0; h < nh; h++) {
            __m256i is[8];
            for (int t = 0; t < 8; t++) is[t] = _mm256_setzero_si256();
            for (int s = 0; s < 8; s++) {
                const __m128i s8 = _mm_loadl_epi64((const __m128i *)(sc + 16 * s + 8 * h));
                const __m256i scv = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    const int k = 4 * s + j;
                    if (pfd && pf && h == 0) { /* the record pfd bytes ahead, every line of it */
                        _mm_prefetch((const char *)(p + pfd + 64 * k), KP_PF_HINT_AVX2);
                        if (64 * (k + 32) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (k + 32)), KP_PF_HINT_AVX2);
                    }
                    const __m256i Q = _mm256_loadu_si256((const __m256i *)(p + 64 * k + 32 * h));
                    const __m256i ilo = _mm256_and_si256(Q, m4), ihi = _mm256_and_si256(_mm256_srli_epi16(Q, 4), m4);
                    const __m256i wl = _mm256_shuffle_epi8(tbl, ilo), al = KP_IQ_ABS(wl, ilo);
#pragma GCC unroll 8
                    for (int t = 0; t < 8; t++) {
                        const __m256i x0 = _mm256_set1_epi32(ld32a(xs[t] + 8 * k));
                        is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(_mm256_maddubs_epi16(al, _mm256_sign_epi8(x0, wl)), scv));
                        KP_PIN(is[t]);
                    }
                    const __m256i wh = _mm256_shuffle_epi8(tbl, ihi), ah = KP_IQ_ABS(wh, ihi);
#pragma GCC unroll 8
                    for (int t = 0; t < 8; t++) {
                        const __m256i x1 = _mm256_set1_epi32(ld32a(xs[t] + 8 * k + 4));
                        is[t] = _mm256_add_epi32(is[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ah, _mm256_sign_epi8(x1, wh)), scv));
                        KP_PIN(is[t]);
                    }
                }
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2176 + 16 * h)));
            for (int t = 0; t < 8; t++) {
                const __m256 r = _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(xq[t * nb + b].d)), _mm256_cvtepi32_ps(is[t]));
                _mm256_storeu_ps(acc[h][t], _mm256_add_ps(_mm256_loadu_ps(acc[h][t]), r));
            }
        }
    }
    kp_store_avx2(acc, nh, nr, 8, bz, y, ldy);
}

#ifndef KP_AVX2_TIQ4XS
#define KP_AVX2_TIQ4XS 8 /* tokens per tile of the iq4_xs GEMM (4: kp_tile_avx2's 4-token tile only) */
#endif

#define KP_GROUP_AVX2(name, F, TB)                                                                                          \
    /* tiles of TB tokens (8: q6_K), of 4, then the rest; software prefetch in the first tile only (the group's records   \
     * come from DRAM once; the later tiles find them in L1/L2, where prefetching the next group's     \
     * records would only evict them) */                                                               \
    static void name(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, int64_t T, float *y, int64_t ldy,            \
                     const float *bias, int nr) {                                                                        \
        float bz[16] = {0};                                                                                              \
        if (bias) memcpy(bz, bias, (size_t)nr * sizeof(float));                                                          \
        int64_t t0 = 0;                                                                                                  \
        if (TB == 8) {                                                                                                   \
            for (; t0 + 8 <= T; t0 += 8) {                                                                               \
                if (F == GB_Q6_K && KP_AVX2_OWN_Q6) kp_tile8_avx2_q6(P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, t0 == 0); \
                else if (F == GB_Q5_K && KP_AVX2_OWN_Q5) kp_tile8_avx2_q5(P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, t0 == 0); \
                else if (F == GB_IQ4_XS) kp_tile8_avx2_iq4xs(P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, t0 == 0);       \
                else kp_tile_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 8, 1, t0 == 0);                   \
            }                                                                                                            \
        }                                                                                                                \
        for (; t0 + 4 <= T; t0 += 4) kp_tile_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 4, 1, t0 == 0);     \
        switch (T - t0) {                                                                                                \
        case 3: kp_tile_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 3, 1, t0 == 0); break;                   \
        case 2: kp_tile_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 2, KP_AVX2_HB2, t0 == 0); break;         \
        case 1: kp_tile_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 1, KP_AVX2_HB1, t0 == 0); break;         \
        default: break;                                                                                                  \
        }                                                                                                                \
    }
KP_GROUP_AVX2(kp_group_avx2_q4, GB_Q4_K, KP_AVX2_TQ4)
KP_GROUP_AVX2(kp_group_avx2_q5, GB_Q5_K, KP_AVX2_TQ5)
KP_GROUP_AVX2(kp_group_avx2_q6, GB_Q6_K, KP_AVX2_TQ6)
KP_GROUP_AVX2(kp_group_avx2_iq4xs, GB_IQ4_XS, KP_AVX2_TIQ4XS)

/* the end of a super-block in the q4_K/q5_K GEMV loops: msum from the mins' (2c, 2c+1) int16 pairs
 * against the token's pairs of 32-value sums, then the float32 steps of kp_tile_avx2 (d at dp, dmin at
 * dp + 32) into the two halves' running sums */
static inline __attribute__((always_inline)) void kp_gemv_min_block(const uint8_t *mn, const uint8_t *dp, const gb_block_q8_K *xb,
                                                                    __m256i is0, __m256i is1, __m256 *acc0, __m256 *acc1) {
    __m256i ms0 = _mm256_setzero_si256(), ms1 = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        const int16_t *bs = xb->bsums;
        const __m128i a = _mm_loadu_si128((const __m128i *)(mn + 32 * c)), a2 = _mm_loadu_si128((const __m128i *)(mn + 32 * c + 16));
        const __m256i bp = _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)(bs[4 * c] + bs[4 * c + 1]) |
                                                       ((uint32_t)(uint16_t)(bs[4 * c + 2] + bs[4 * c + 3]) << 16)));
        ms0 = _mm256_add_epi32(ms0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, a2)), bp));
        ms1 = _mm256_add_epi32(ms1, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, a2)), bp));
    }
    const __m256 dx = _mm256_set1_ps(xb->d);
    const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dp)), d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dp + 16)));
    const __m256 m0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dp + 32))), m1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dp + 48)));
    *acc0 = _mm256_add_ps(*acc0, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(is0)),
                                               _mm256_mul_ps(_mm256_mul_ps(m0, dx), _mm256_cvtepi32_ps(ms0))));
    *acc1 = _mm256_add_ps(*acc1, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(is1)),
                                               _mm256_mul_ps(_mm256_mul_ps(m1, dx), _mm256_cvtepi32_ps(ms1))));
}

/* y[0..15] = the two halves' sums + bias (+ 0.0f without one, as kp_store_avx2: -0.0f + 0.0f = 0.0f);
 * the end of every whole-group GEMV loop */
static inline __attribute__((always_inline)) void kp_gemv_store(__m256 acc0, __m256 acc1, const float *bias, float *y) {
    _mm256_storeu_ps(y, _mm256_add_ps(acc0, bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps()));
    _mm256_storeu_ps(y + 8, _mm256_add_ps(acc1, bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps()));
}

#ifndef KP_PF_GEMV_AVX2
/* the q4_K / q5_K GEMV's prefetch distance, bytes, per stream (KP_AVX2_GEMV_NS): with two streams
 * 2.4-7 KB read alike and 14 KB 0-5% less; T0 instead of NTA at 28 or 71 KB 5-10% less (Zen 3, 2 threads,
 * from DRAM, 2026-12-03) */
#define KP_PF_GEMV_AVX2 7104
#endif
#ifndef KP_PF_GEMV_Q4_AVX2
/* q4_K's since session 22 (its loop interleaved, three streams): 2368 bytes (about one record) read
 * 0.92-0.94x the time of 7104 from DRAM (25600x5120, 151552x2048, 2048x1536; Zen 2, 2 threads, two
 * A/B runs: 90-97% of the read ceiling), 3552 0.96-0.99x, 10656 1.02-1.05x */
#define KP_PF_GEMV_Q4_AVX2 2368
#endif
#define KP_GEMV_MAXS 4 /* streams a GEMV loop can walk at once (KP_AVX2_GEMV_NS <= 4) */
#ifndef KP_AVX2_GEMV_Q4
#define KP_AVX2_GEMV_Q4 1 /* the q4_K GEMV's own loop (0: kp_group_avx2_q4's 1-token tile) */
#endif
/* q4_K / q5_K GEMV (T = 1), one whole group of 16 rows: kp_tile_avx2's arithmetic (TT 1, HB 2) written
 * for the record's layout. Per sub-block s (q4_K: nibble zmm 4s..4s+3, 256 bytes; q5_K: the same then
 * their fifth bits, 320 bytes) the 8 activation broadcasts once for both halves; q5_K reads each half's
 * fifth-bit ymm once for its 4 nibble ymm. The int16 sums as kp_tile_avx2's: q4_K over the 4 nibble
 * ymm pairs (<= 8 x 2 x 15 x 127 = 30480, its KPS 4), q5_K over 2 (k 4s, 4s+1 and 4s+2, 4s+3); scales
 * and mins by 16-byte loads, the running sums in registers: the same integers and float32 steps,
 * bit-identical to kp_tile_avx2. q4_K's loop of its own (session 13): cache-resident compute 25 -> 30
 * GB/s, from DRAM at 2 threads 83% -> 91% of the read ceiling (25600x5120; before: the tile).
 * _recn: one super-block's record of each of NS groups (pp[i], NS a constant after inlining) into
 * their running sums (acc[2i], acc[2i + 1]), sub-block by sub-block, the groups' runs of one
 * sub-block side by side sharing its activation broadcasts (each group's integers and float steps as
 * NS 1's, in its order: the same bits); _rec: NS 1; kp_gemv_avx2_q45 walks one group's records,
 * kp_gemvn_avx2 several groups' side by side. */
static inline __attribute__((always_inline)) void kp_gemv_avx2_q45_recn(const int fmt, const int NS, const uint8_t *const *pp,
                                                                        const gb_block_q8_K *xb, __m256 *acc) {
    const int64_t pb = kp_pb(fmt), pfd = fmt == GB_Q5_K ? KP_PF_GEMV_AVX2 : KP_PF_GEMV_Q4_AVX2, run = fmt == GB_Q5_K ? 320 : 256;
    const __m256i m4 = _mm256_set1_epi8(0x0f), c16 = _mm256_set1_epi8(0x10);
    __m256i isv[KP_GEMV_MAXS][2];
#pragma GCC unroll 4
    for (int i = 0; i < NS; i++) isv[i][0] = isv[i][1] = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        const int8_t *xs = xb->qs + 32 * s;
        __m256i xv[8];
        for (int i = 0; i < 8; i++) xv[i] = _mm256_set1_epi32(ld32a(xs + 4 * i));
#pragma GCC unroll 4
        for (int i = 0; i < NS; i++) {
            const uint8_t *p = pp[i], *q = p + run * s, *sc = p + kp_sc_off(fmt);
            __m256i is0 = isv[i][0], is1 = isv[i][1];
            if (pfd) kp_pf_fwd(p + pfd, pb, s, 8); /* the record pfd bytes ahead */
            const __m128i s8 = _mm_loadu_si128((const __m128i *)(sc + 16 * s));
            const __m256i sc0 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8)), sc1 = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s8, s8));
            if (fmt == GB_Q5_K) {
#define KP_Q5_VAL(Q, H, j, lo, hi)                                                                                       \
    do {                                                                                                                 \
        const __m256i flo = 2 * (j) <= 4 ? _mm256_slli_epi16(H, 4 - 2 * (j)) : _mm256_srli_epi16(H, 2 * (j) - 4);        \
        const __m256i fhi = 2 * (j) + 1 <= 4 ? _mm256_slli_epi16(H, 3 - 2 * (j)) : _mm256_srli_epi16(H, 2 * (j) - 3);    \
        lo = _mm256_or_si256(_mm256_and_si256(Q, m4), _mm256_and_si256(flo, c16));                                      \
        hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q, 4), m4), _mm256_and_si256(fhi, c16));                \
    } while (0)
#define KP_Q5_HALF(h, is, scv)                                                                                           \
    do {                                                                                                                 \
        const __m256i H = _mm256_loadu_si256((const __m256i *)(q + 256 + 32 * (h)));                                     \
        __m256i l0, h0, l1, h1, l2, h2, l3, h3;                                                                          \
        KP_Q5_VAL(_mm256_loadu_si256((const __m256i *)(q + 32 * (h))), H, 0, l0, h0);                                    \
        KP_Q5_VAL(_mm256_loadu_si256((const __m256i *)(q + 64 + 32 * (h))), H, 1, l1, h1);                               \
        KP_Q5_VAL(_mm256_loadu_si256((const __m256i *)(q + 128 + 32 * (h))), H, 2, l2, h2);                              \
        KP_Q5_VAL(_mm256_loadu_si256((const __m256i *)(q + 192 + 32 * (h))), H, 3, l3, h3);                              \
        const __m256i a0 = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(l0, xv[0]), _mm256_maddubs_epi16(h0, xv[1])), \
                                            _mm256_add_epi16(_mm256_maddubs_epi16(l1, xv[2]), _mm256_maddubs_epi16(h1, xv[3]))); \
        const __m256i a1 = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(l2, xv[4]), _mm256_maddubs_epi16(h2, xv[5])), \
                                            _mm256_add_epi16(_mm256_maddubs_epi16(l3, xv[6]), _mm256_maddubs_epi16(h3, xv[7]))); \
        is = _mm256_add_epi32(is, _mm256_add_epi32(_mm256_madd_epi16(a0, scv), _mm256_madd_epi16(a1, scv)));            \
    } while (0)
                KP_Q5_HALF(0, is0, sc0);
                KP_Q5_HALF(1, is1, sc1);
#undef KP_Q5_HALF
#undef KP_Q5_VAL
            } else {
#define KP_Q4_PAIR(j, h) \
    _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)(q + 64 * (j) + 32 * (h))), m4), xv[2 * (j)]), \
                     _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(q + 64 * (j) + 32 * (h))), 4), m4), xv[2 * (j) + 1]))
#define KP_Q4_HALF(h, is, scv)                                                                                           \
    do {                                                                                                                 \
        const __m256i a = _mm256_add_epi16(_mm256_add_epi16(KP_Q4_PAIR(0, h), KP_Q4_PAIR(1, h)),                         \
                                           _mm256_add_epi16(KP_Q4_PAIR(2, h), KP_Q4_PAIR(3, h)));                        \
        is = _mm256_add_epi32(is, _mm256_madd_epi16(a, scv));                                                           \
    } while (0)
                KP_Q4_HALF(0, is0, sc0);
                KP_Q4_HALF(1, is1, sc1);
#undef KP_Q4_HALF
#undef KP_Q4_PAIR
            }
            isv[i][0] = is0;
            isv[i][1] = is1;
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NS; i++) kp_gemv_min_block(pp[i] + kp_mn_off(fmt), pp[i] + kp_d_off(fmt), xb, isv[i][0], isv[i][1], &acc[2 * i], &acc[2 * i + 1]);
}
static inline __attribute__((always_inline)) void kp_gemv_avx2_q45_rec(const int fmt, const uint8_t *p, const gb_block_q8_K *xb,
                                                                       __m256 *acc0p, __m256 *acc1p) {
    __m256 a[2] = {*acc0p, *acc1p};
    kp_gemv_avx2_q45_recn(fmt, 1, &p, xb, a);
    *acc0p = a[0];
    *acc1p = a[1];
}
static inline __attribute__((always_inline)) void kp_gemv_avx2_q45(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                                   float *y, const float *bias) {
    const int64_t pb = kp_pb(fmt);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) kp_gemv_avx2_q45_rec(fmt, P + b * pb, xq + b, &acc0, &acc1);
    kp_gemv_store(acc0, acc1, bias, y);
}
static void kp_gemv_avx2_q4(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, const float *bias) { kp_gemv_avx2_q45(GB_Q4_K, P, nb, xq, y, bias); }
static void kp_gemv_avx2_q5(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, const float *bias) { kp_gemv_avx2_q45(GB_Q5_K, P, nb, xq, y, bias); }

#ifndef KP_PF_Q6_AVX2
/* the q6_K GEMV's prefetch distance, bytes: 7104 as KP_PF_GEMV_AVX2 until session 22; with its loop
 * interleaved, 3552 read 0.92-0.98x the time of 7104 (Zen 2, 2 threads, from DRAM, two A/B runs), 2368
 * 0.97-1.10x, 10656 1.01-1.08x */
#define KP_PF_Q6_AVX2 3552
#endif
/* q6_K GEMV (T = 1), one whole group of 16 rows: kp_tile_avx2's arithmetic (TT 1, HB 2) written for
 * the record's q6_K layout. Per run s (sub-block s: 192 bytes, nibbles of zmm 2s, 2s+1, then their
 * 2-bit fields) each half's 2-bit ymm is read once for both nibble ymm, the 16 rows' scales in one
 * 16-byte load, addresses by pointer; the running sums stay in registers. isum and msum are the
 * same integers, the float32 steps the same, lane by lane: bit-identical to kp_tile_avx2. _recn: one
 * super-block's record of each of NS groups, as kp_gemv_avx2_q45_recn; _rec: NS 1. */
static inline __attribute__((always_inline)) void kp_gemv_avx2_q6_recn(const int NS, const uint8_t *const *pp, const gb_block_q8_K *xb,
                                                                       __m256 *acc) {
    const int64_t pb = kp_pb(GB_Q6_K), pfd = KP_PF_Q6_AVX2;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
    __m256i isv[KP_GEMV_MAXS][2];
#pragma GCC unroll 4
    for (int i = 0; i < NS; i++) isv[i][0] = isv[i][1] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int s = 0; s < 16; s++) {
        const int8_t *xs = xb->qs + 16 * s;
        const __m256i x00 = _mm256_set1_epi32(ld32a(xs)), x01 = _mm256_set1_epi32(ld32a(xs + 4));
        const __m256i x10 = _mm256_set1_epi32(ld32a(xs + 8)), x11 = _mm256_set1_epi32(ld32a(xs + 12));
#pragma GCC unroll 4
        for (int i = 0; i < NS; i++) {
            const uint8_t *p = pp[i], *q = p + 192 * s, *sc = p + 3072;
            __m256i is0 = isv[i][0], is1 = isv[i][1];
            if (pfd) kp_pf_fwd(p + pfd, pb, s, 16); /* the record pfd bytes ahead */
            const __m128i s8 = _mm_loadu_si128((const __m128i *)(sc + 16 * s));
            const __m256i sc0 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8)), sc1 = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s8, s8));
#define KP_Q6_HALF(h, is, scv)                                                                                           \
    do {                                                                                                                 \
        const __m256i Q0 = _mm256_loadu_si256((const __m256i *)(q + 32 * (h)));                                          \
        const __m256i Q1 = _mm256_loadu_si256((const __m256i *)(q + 64 + 32 * (h)));                                     \
        const __m256i H = _mm256_loadu_si256((const __m256i *)(q + 128 + 32 * (h)));                                     \
        const __m256i lo0 = _mm256_or_si256(_mm256_and_si256(Q0, m4), _mm256_and_si256(_mm256_slli_epi16(H, 4), m30));   \
        const __m256i hi0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q0, 4), m4),                            \
                                            _mm256_and_si256(_mm256_slli_epi16(H, 2), m30));                            \
        const __m256i lo1 = _mm256_or_si256(_mm256_and_si256(Q1, m4), _mm256_and_si256(H, m30));                         \
        const __m256i hi1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Q1, 4), m4),                            \
                                            _mm256_and_si256(_mm256_srli_epi16(H, 2), m30));                            \
        const __m256i a0 = _mm256_add_epi16(_mm256_maddubs_epi16(lo0, x00), _mm256_maddubs_epi16(hi0, x01));            \
        const __m256i a1 = _mm256_add_epi16(_mm256_maddubs_epi16(lo1, x10), _mm256_maddubs_epi16(hi1, x11));            \
        is = _mm256_add_epi32(is, _mm256_add_epi32(_mm256_madd_epi16(a0, scv), _mm256_madd_epi16(a1, scv)));            \
    } while (0)
            KP_Q6_HALF(0, is0, sc0);
            KP_Q6_HALF(1, is1, sc1);
#undef KP_Q6_HALF
            isv[i][0] = is0;
            isv[i][1] = is1;
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < NS; i++) {
        const uint8_t *sc = pp[i] + 3072;
        const __m256i is0 = isv[i][0], is1 = isv[i][1];
        __m256 acc0 = acc[2 * i], acc1 = acc[2 * i + 1];
        /* msum: the scales' (2c, 2c+1) int16 pairs against the token's 16-value sums (2c, 2c+1) */
        __m256i ms0 = _mm256_setzero_si256(), ms1 = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(sc + 32 * c)), a2 = _mm_loadu_si128((const __m128i *)(sc + 32 * c + 16));
            const __m256i bp = _mm256_set1_epi32(ld32a(xb->bsums + 2 * c));
            ms0 = _mm256_add_epi32(ms0, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, a2)), bp));
            ms1 = _mm256_add_epi32(ms1, _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, a2)), bp));
        }
        const __m256 dx = _mm256_set1_ps(xb->d);
        const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 256))), d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sc + 272)));
        acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(is0, _mm256_slli_epi32(ms0, 5)))));
        acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(is1, _mm256_slli_epi32(ms1, 5)))));
        acc[2 * i] = acc0;
        acc[2 * i + 1] = acc1;
    }
}
static inline __attribute__((always_inline)) void kp_gemv_avx2_q6_rec(const uint8_t *p, const gb_block_q8_K *xb, __m256 *acc0p,
                                                                      __m256 *acc1p) {
    __m256 a[2] = {*acc0p, *acc1p};
    kp_gemv_avx2_q6_recn(1, &p, xb, a);
    *acc0p = a[0];
    *acc1p = a[1];
}
/* iq4_xs's GEMV loop: its prefetch distance per stream (bytes) and order (1: kp_pf_fwd, address order,
 * NTA; 0: line k with line k + 32, T0, as kp_tile_avx2). 25600 x 5120 from DRAM, Zen 3, 2026-12-03: the
 * 1-token tile (one stream) 22.3-22.9 / 12.4 GB/s (2 threads / 1), this loop on two streams with the
 * tile's order 23.2-23.6 / 12.7, with the forward order 7 KB ahead 27.8-29.4 / 16.7. Session 22 (Zen 2,
 * 2 threads, two A/B runs): 2368 bytes ahead (about one record) 0.92-0.96x the time of 7104, 3552
 * 0.92-0.96x; interleaving its two streams by sub-block (as q4_K's) still 1.10-1.20x slower at 2368 */
#ifndef KP_PF_IQ4XS_AVX2
#define KP_PF_IQ4XS_AVX2 2368
#endif
#ifndef KP_IQ4XS_GEMV_FWD
#define KP_IQ4XS_GEMV_FWD 1
#endif
/* iq4_xs GEMV (T = 1), one super-block's record of a whole group: kp_tile_avx2's arithmetic (TT 1, HB 2,
 * the signed grid values through |x| and x's sign) with the activation broadcasts of a sub-block shared
 * by both halves and the sums in registers: the same integers and float32 steps, bit-identical. Its
 * streams stay record by record (interleaved by sub-block as q4_K's, it read slower on the Zen 2:
 * KP_AVX2_GEMV_NS's note). */
static inline __attribute__((always_inline)) void kp_gemv_avx2_iq4xs_rec(const uint8_t *p, const gb_block_q8_K *xb, __m256 *acc0p,
                                                                         __m256 *acc1p) {
    const int64_t pb = kp_pb(GB_IQ4_XS), pfd = KP_PF_IQ4XS_AVX2, sco = kp_sc_off(GB_IQ4_XS), dof = kp_d_off(GB_IQ4_XS);
    const __m256i m4 = _mm256_set1_epi8(0x0f), tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_iq4nl));
    __m256i is0 = _mm256_setzero_si256(), is1 = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        if (pfd && KP_IQ4XS_GEMV_FWD) kp_pf_fwd(p + pfd, pb, s, 8);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)(p + sco + 16 * s));
        const __m256i sc0 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8)), sc1 = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s8, s8));
#pragma GCC unroll 4
        for (int kk = 0; kk < 4; kk++) {
            const int k = 4 * s + kk;
            if (pfd && !KP_IQ4XS_GEMV_FWD) {
                _mm_prefetch((const char *)(p + pfd + 64 * k), KP_PF_HINT_AVX2);
                if (64 * (k + 32) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (k + 32)), KP_PF_HINT_AVX2);
            }
            const int8_t *xs = xb->qs + 8 * k;
            const __m256i x0 = _mm256_set1_epi32(ld32a(xs)), x1 = _mm256_set1_epi32(ld32a(xs + 4));
            const __m256i ax0 = _mm256_abs_epi8(x0), ax1 = _mm256_abs_epi8(x1);
#define KP_IQ_HALF(h, is, scv)                                                                                            \
    do {                                                                                                                  \
        const __m256i Q = _mm256_loadu_si256((const __m256i *)(p + 64 * k + 32 * (h)));                                   \
        const __m256i lo = _mm256_shuffle_epi8(tbl, _mm256_and_si256(Q, m4));                                             \
        const __m256i hi = _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(Q, 4), m4));                       \
        is = _mm256_add_epi32(is, _mm256_madd_epi16(_mm256_maddubs_epi16(ax0, _mm256_sign_epi8(lo, x0)), scv));          \
        KP_PIN(is);                                                                                                       \
        is = _mm256_add_epi32(is, _mm256_madd_epi16(_mm256_maddubs_epi16(ax1, _mm256_sign_epi8(hi, x1)), scv));          \
        KP_PIN(is);                                                                                                       \
    } while (0)
            KP_IQ_HALF(0, is0, sc0);
            KP_IQ_HALF(1, is1, sc1);
#undef KP_IQ_HALF
        }
    }
    const __m256 dx = _mm256_set1_ps(xb->d);
    const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof))), d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 16)));
    *acc0p = _mm256_add_ps(*acc0p, _mm256_mul_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(is0)));
    *acc1p = _mm256_add_ps(*acc1p, _mm256_mul_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(is1)));
}

static void kp_gemv_avx2_q6(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, const float *bias) {
    const int64_t pb = kp_pb(GB_Q6_K);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) kp_gemv_avx2_q6_rec(P + b * pb, xq + b, &acc0, &acc1);
    kp_gemv_store(acc0, acc1, bias, y);
}

#ifndef KP_GEMVN_IQ4XS
#define KP_GEMVN_IQ4XS 1 /* iq4_xs's GEMV through kp_gemvn_avx2 too (0: kp_tile_avx2's 1-token tile) */
#endif
#define KP_GEMVN_FMT(f) ((f) == GB_Q4_K || (f) == GB_Q5_K || (f) == GB_Q6_K || (KP_GEMVN_IQ4XS && (f) == GB_IQ4_XS))
#ifndef KP_AVX2_GEMV_NS
/* Groups per GEMV step (1..4): the T = 1 loop of gb_klinear_packed hands a thread NS whole groups
 * H = G / NS apart and it reads them record by record, NS streams at once (the read ceiling's
 * bench_read reads two per thread too). From DRAM (q4_K / q5_K / q6_K 25600 x 5120, Zen 3, a host
 * with a 45 GB/s 2-thread read ceiling, 2026-12-03): 2 threads 26-30 -> 31-34 GB/s (1.10-1.17x),
 * 1 thread 14.6-16.3 -> 16.5-17.7; 3 streams about the same as 2, 4 slower (0.9x). Every row's
 * integers and float steps are its group's own, in the same order: the same bits as NS 1.
 * Session 22 (Zen 2, 2026-12-03): the q4_K / q5_K / q6_K loops walk two streams' records sub-block by
 * sub-block (_recn, NS 2: 256-320 bytes of one stream, then the other's, the activation broadcasts
 * shared) instead of record by record (2.3-3.3 KB runs): 7-18% faster from DRAM at 1 and 2 threads,
 * 1.8-260 MB (q4_K 25600x5120 73-77% -> 86-91% of the read ceiling), 3-8% on cache-resident weights.
 * A C probe of the host: two streams alternating 0.5-1 KB runs read 7-9% more than 128-byte runs
 * (bench_read's) and 2.3 KB runs 3% less, with no software prefetch. q4_K then gains 8-11% more with
 * three streams (KP_AVX2_GEMV_NS_Q4: 85-87% of the ceiling at 25600x5120); q5_K / q6_K not (0.98-1.05x).
 * iq4_xs stays record by record: interleaved it read 18-33% slower (its loop is compute-bound here:
 * 33-34 GB/s cache-resident at 2 threads). */
#define KP_AVX2_GEMV_NS 2
#endif
#ifndef KP_AVX2_GEMV_NS_Q4
#define KP_AVX2_GEMV_NS_Q4 3 /* q4_K's streams per GEMV step (above) */
#endif
/* ns (<= 4) whole groups at once: q4_K / q5_K / q6_K two (q4_K three) interleaved by sub-block
 * (kp_gemvn_recn with NS > 1), otherwise record by record, stream after stream */
static inline __attribute__((always_inline)) void kp_gemvn_recn(const int fmt, const int NS, const uint8_t *const *Ps, int64_t b,
                                                                const gb_block_q8_K *xq, __m256 *acc) {
    const int64_t pb = kp_pb(fmt);
    const uint8_t *pp[KP_GEMV_MAXS];
#pragma GCC unroll 4
    for (int i = 0; i < NS; i++) pp[i] = Ps[i] + b * pb;
    if (fmt == GB_Q6_K) kp_gemv_avx2_q6_recn(NS, pp, xq + b, acc);
    else if (fmt == GB_IQ4_XS)
        for (int i = 0; i < NS; i++) kp_gemv_avx2_iq4xs_rec(pp[i], xq + b, &acc[2 * i], &acc[2 * i + 1]);
    else kp_gemv_avx2_q45_recn(fmt, NS, pp, xq + b, acc);
}
static inline __attribute__((always_inline)) void kp_gemvn_avx2(const int fmt, const uint8_t *const *Ps, const int ns, int64_t nb,
                                                                const gb_block_q8_K *xq, float *const *ys, const float *const *bs) {
    __m256 acc[2 * KP_GEMV_MAXS];
    for (int i = 0; i < 2 * ns; i++) acc[i] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        if (fmt != GB_IQ4_XS && ns == 2) kp_gemvn_recn(fmt, 2, Ps, b, xq, acc);
        else if (fmt == GB_Q4_K && ns == 3) kp_gemvn_recn(fmt, 3, Ps, b, xq, acc);
        else
            for (int i = 0; i < ns; i++) kp_gemvn_recn(fmt, 1, Ps + i, b, xq, acc + 2 * i);
    }
    for (int i = 0; i < ns; i++) kp_gemv_store(acc[2 * i], acc[2 * i + 1], bs[i], ys[i]);
}
static void kp_gemvn_avx2_q4(const uint8_t *const *Ps, int ns, int64_t nb, const gb_block_q8_K *xq, float *const *ys, const float *const *bs) { kp_gemvn_avx2(GB_Q4_K, Ps, ns, nb, xq, ys, bs); }
static void kp_gemvn_avx2_q5(const uint8_t *const *Ps, int ns, int64_t nb, const gb_block_q8_K *xq, float *const *ys, const float *const *bs) { kp_gemvn_avx2(GB_Q5_K, Ps, ns, nb, xq, ys, bs); }
static void kp_gemvn_avx2_q6(const uint8_t *const *Ps, int ns, int64_t nb, const gb_block_q8_K *xq, float *const *ys, const float *const *bs) { kp_gemvn_avx2(GB_Q6_K, Ps, ns, nb, xq, ys, bs); }
static void kp_gemvn_avx2_iq4xs(const uint8_t *const *Ps, int ns, int64_t nb, const gb_block_q8_K *xq, float *const *ys, const float *const *bs) { kp_gemvn_avx2(GB_IQ4_XS, Ps, ns, nb, xq, ys, bs); }
/* the loop of format fmt (KP_GEMVN_FMT) on ns whole groups */
static void kp_gemvn_fmt(int fmt, const uint8_t *const *Ps, int ns, int64_t nb, const gb_block_q8_K *xq, float *const *ys, const float *const *bs) {
    (fmt == GB_Q4_K ? kp_gemvn_avx2_q4 : fmt == GB_Q5_K ? kp_gemvn_avx2_q5 : fmt == GB_Q6_K ? kp_gemvn_avx2_q6 : kp_gemvn_avx2_iq4xs)(Ps, ns, nb, xq, ys, bs);
}

/* q2_K / q3_K (the 2-bit planes of kp_2bit): per 32 bytes of a plane (one 16-value sub-block of 8
 * rows) 4 fields of 2 bits, each one vpmaddubsw per token (values 0..3, q3_K's third bit from its
 * byte mask: 0..7; 4 pairs <= 4 * 2 * 7 * 127 in int16), one vpmaddwd by the sub-block's scale;
 * msum by vpmaddwd of (min, min) pairs (q2_K; q3_K: (sc, sc), x 4) against the token's 16-value
 * sums. The portable arithmetic lane by lane, as kp_tile_avx2. */
static inline __attribute__((always_inline)) void kp_tile2_sums(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                                int nr, const int TT, int pf, float *acc, const int TS) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), dof = kp_d_off(fmt);
    const int64_t pfd = KP_PF_BYTES_AVX2;
    const int nh = nr > 8 ? 2 : 1;
    const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(0x0f), c4 = _mm256_set1_epi8(4);
    const __m256i bsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i bidx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        for (int h = 0; h < nh; h++) {
            __m256i isum[16];
            for (int t = 0; t < TT; t++) isum[t] = _mm256_setzero_si256();
            for (int m = 0; m < 16; m++) {
                if (pfd && pf && h == 0) {
                    _mm_prefetch((const char *)(p + pfd + 64 * m), _MM_HINT_T0);
                    if (64 * (m + 16) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (m + 16)), _MM_HINT_T0);
                }
                const __m256i Q = _mm256_loadu_si256((const __m256i *)(p + 64 * m + 32 * h));
                __m128i s8 = _mm_loadl_epi64((const __m128i *)(p + sco + 16 * m + 8 * h));
                if (fmt == GB_Q2_K) s8 = _mm_and_si128(s8, _mm_set1_epi8(0x0f));
                const __m256i sc = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s8, s8));
                __m256i v[4];
#pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    v[j] = _mm256_and_si256(j ? _mm256_srli_epi16(Q, 2 * j) : Q, m3);
                    if (fmt == GB_Q3_K) { /* bit 4r+i of the half's 32-bit mask: + 4 to byte 4r+i */
                        const __m256i hm = _mm256_shuffle_epi8(_mm256_set1_epi32(ld32a(p + 1024 + 32 * m + 8 * j + 4 * h)), bidx);
                        v[j] = _mm256_add_epi8(v[j], _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bsel), bsel), c4));
                    }
                }
#pragma GCC unroll 16
                for (int t = 0; t < TT; t++) {
                    const int8_t *xs = xq[t * nb + b].qs + 16 * m;
                    __m256i a16 = _mm256_maddubs_epi16(v[0], _mm256_set1_epi32(ld32a(xs)));
                    for (int j = 1; j < 4; j++) a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(v[j], _mm256_set1_epi32(ld32a(xs + 4 * j))));
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(a16, sc));
                }
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 16 * h)));
            const __m256 dm = fmt == GB_Q2_K ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 32 + 16 * h))) : d;
            __m256i mp[8];
            for (int c = 0; c < 8; c++) {
                if (fmt == GB_Q2_K) { /* the mins: high nibbles */
                    const __m128i a = _mm_loadl_epi64((const __m128i *)(p + sco + 16 * (2 * c) + 8 * h));
                    const __m128i a2 = _mm_loadl_epi64((const __m128i *)(p + sco + 16 * (2 * c + 1) + 8 * h));
                    const __m128i lo = _mm_and_si128(_mm_srli_epi16(a, 4), _mm256_castsi256_si128(m4));
                    const __m128i hi = _mm_and_si128(_mm_srli_epi16(a2, 4), _mm256_castsi256_si128(m4));
                    mp[c] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
                } else
                    mp[c] = pairs8(p + sco + 16 * (2 * c) + 8 * h, p + sco + 16 * (2 * c + 1) + 8 * h);
            }
            for (int t = 0; t < TT; t++) {
                const int16_t *bs = xq[t * nb + b].bsums;
                __m256i msum = _mm256_madd_epi16(mp[0], _mm256_set1_epi32(ld32a(bs)));
                for (int c = 1; c < 8; c++) msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mp[c], _mm256_set1_epi32(ld32a(bs + 2 * c))));
                const __m256 dx = _mm256_set1_ps(xq[t * nb + b].d);
                const __m256 r = fmt == GB_Q3_K /* mn = 4 (sc - 32), d = dm: kterm's exact difference */
                                     ? _mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t], _mm256_slli_epi32(msum, 2))))
                                     : _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d, dx), _mm256_cvtepi32_ps(isum[t])),
                                                     _mm256_mul_ps(_mm256_mul_ps(dm, dx), _mm256_cvtepi32_ps(msum)));
                _mm256_storeu_ps(acc + 8 * (h * TS + t), _mm256_add_ps(_mm256_loadu_ps(acc + 8 * (h * TS + t)), r));
            }
        }
    }
}
static inline __attribute__((always_inline)) void kp_tile2_avx2(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq,
                                                                float *y, int64_t ldy, const float *bz, int nr, const int TT, int pf) {
    float acc[2][KP_TT_AVX2][8];
    memset(acc, 0, sizeof(acc));
    kp_tile2_sums(fmt, P, nb, xq, nr, TT, pf, &acc[0][0][0], KP_TT_AVX2);
    kp_store_avx2(acc, nr > 8 ? 2 : 1, nr, TT, bz, y, ldy);
}


#ifndef KP_AVX2_TQ2
#define KP_AVX2_TQ2 8 /* tokens per tile of the q2_K/q3_K GEMM (the plane decode shared by 8; q2_K at 16 measured the same) */
#endif
#ifndef KP_AVX2_TQ3
#define KP_AVX2_TQ3 16 /* q3_K's first tiles (kp_tile16_avx2_q3: its third bits' decode shared by 16; 1.04-1.07x over 8) */
#endif
#define KP_GROUP2_AVX2(name, F)                                                                                          \
    static void name(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, int64_t T, float *y, int64_t ldy,            \
                     const float *bias, int nr) {                                                                        \
        float bz[16] = {0};                                                                                              \
        if (bias) memcpy(bz, bias, (size_t)nr * sizeof(float));                                                          \
        int64_t t0 = 0;                                                                                                  \
        if (KP_AVX2_TQ2 == 8)                                                                                            \
            for (; t0 + 8 <= T; t0 += 8) kp_tile2_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 8, t0 == 0);   \
        for (; t0 + 4 <= T; t0 += 4) kp_tile2_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 4, t0 == 0);       \
        switch (T - t0) {                                                                                                \
        case 3: kp_tile2_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 3, t0 == 0); break;                     \
        case 2: kp_tile2_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 2, t0 == 0); break;                     \
        case 1: kp_tile2_avx2(F, P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, 1, t0 == 0); break;                     \
        default: break;                                                                                                  \
        }                                                                                                                \
    }
KP_GROUP2_AVX2(kp_group_avx2_q2, GB_Q2_K)
KP_GROUP2_AVX2(kp_group_avx2_q3, GB_Q3_K)
/* (defined after the group functions: the code before them keeps its place) */
/* q3_K GEMM, 16 tokens x the nr rows of a group: kp_tile2_avx2's steps (fmt q3_K, TT 16), its own
 * function so that the smaller tiles and the GEMV keep their stack frame and code: the third bits'
 * decode (3 times q2_K's) shared by 16 tokens; the same integers and float32 steps, bit-identical */
static __attribute__((noinline)) void kp_tile16_avx2_q3(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, int64_t ldy, const float *bz, int nr, int pf) {
    float acc[2][16][8];
    memset(acc, 0, sizeof(acc));
    kp_tile2_sums(GB_Q3_K, P, nb, xq, nr, 16, pf, &acc[0][0][0], 16);
    kp_store_acc_avx2(&acc[0][0][0], 16, nr > 8 ? 2 : 1, nr, 16, bz, y, ldy);
}

#ifndef KP_AVX2_GEMV_Q3
#define KP_AVX2_GEMV_Q3 1 /* the q3_K GEMV's own loop (0: kp_group_avx2_q3's 1-token tile): 1.13-1.22x */
#endif
#ifndef KP_AVX2_GEMV_Q2
#define KP_AVX2_GEMV_Q2 1 /* q2_K's */
#endif
/* q3_K GEMV (T = 1), one whole group of 16 rows: kp_tile2_avx2's arithmetic (TT 1) with both halves
 * per sub-block: the token's 4 broadcasts and the 16 rows' scales (one 16-byte load) shared by the
 * halves, the running sums in registers; the same integers and float32 steps, bit-identical */
static inline __attribute__((always_inline)) void kp_gemv2_avx2(const int fmt, const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y,
                                                                const float *bias) {
    const int64_t pb = gb_kp_block_bytes(fmt), sco = kp_sc_off(fmt), dof = kp_d_off(fmt), pfd = KP_PF_BYTES_AVX2;
    const __m256i m3 = _mm256_set1_epi8(3), c4 = _mm256_set1_epi8(4);
    const __m256i bsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i bidx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = P + b * pb;
        const gb_block_q8_K *xb = xq + b;
        __m256i is0 = _mm256_setzero_si256(), is1 = _mm256_setzero_si256();
        for (int m = 0; m < 16; m++) {
            if (pfd) { /* q2_K/q3_K: compute-bound (~16 / 12 GB/s from DRAM, Zen 3), the forward walk (kp_pf_fwd) no faster */
                _mm_prefetch((const char *)(p + pfd + 64 * m), _MM_HINT_T0);
                if (64 * (m + 16) < pb) _mm_prefetch((const char *)(p + pfd + 64 * (m + 16)), _MM_HINT_T0);
            }
            __m128i s16 = _mm_loadu_si128((const __m128i *)(p + sco + 16 * m));
            if (fmt == GB_Q2_K) s16 = _mm_and_si128(s16, _mm_set1_epi8(0x0f)); /* the scales: low nibbles */
            const __m256i sc0 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(s16, s16)), sc1 = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(s16, s16));
            const int8_t *xs = xb->qs + 16 * m;
            const __m256i x0 = _mm256_set1_epi32(ld32a(xs)), x1 = _mm256_set1_epi32(ld32a(xs + 4));
            const __m256i x2 = _mm256_set1_epi32(ld32a(xs + 8)), x3 = _mm256_set1_epi32(ld32a(xs + 12));
#define KP_Q3_V(Q, j, h)                                                                                                 \
    (fmt == GB_Q2_K ? _mm256_and_si256((j) ? _mm256_srli_epi16(Q, 2 * (j)) : Q, m3)                                    \
                    : _mm256_add_epi8(_mm256_and_si256((j) ? _mm256_srli_epi16(Q, 2 * (j)) : Q, m3),                    \
                                      _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(          \
                                          _mm256_set1_epi32(ld32a(p + 1024 + 32 * m + 8 * (j) + 4 * (h))), bidx), bsel), bsel), c4)))
#define KP_Q3_HALF(h, is, scv)                                                                                           \
    do {                                                                                                                 \
        const __m256i Q = _mm256_loadu_si256((const __m256i *)(p + 64 * m + 32 * (h)));                                  \
        __m256i a16 = _mm256_maddubs_epi16(KP_Q3_V(Q, 0, h), x0);                                                        \
        a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(KP_Q3_V(Q, 1, h), x1));                                         \
        a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(KP_Q3_V(Q, 2, h), x2));                                         \
        a16 = _mm256_add_epi16(a16, _mm256_maddubs_epi16(KP_Q3_V(Q, 3, h), x3));                                         \
        is = _mm256_add_epi32(is, _mm256_madd_epi16(a16, scv));                                                          \
    } while (0)
            KP_Q3_HALF(0, is0, sc0);
            KP_Q3_HALF(1, is1, sc1);
#undef KP_Q3_HALF
#undef KP_Q3_V
        }
        __m256i ms0 = _mm256_setzero_si256(), ms1 = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            __m128i a = _mm_loadu_si128((const __m128i *)(p + sco + 32 * c)), a2 = _mm_loadu_si128((const __m128i *)(p + sco + 32 * c + 16));
            const __m256i bp = _mm256_set1_epi32(ld32a(xb->bsums + 2 * c));
            __m256i mp0, mp1;
            if (fmt == GB_Q2_K) { /* the mins: high nibbles */
                a = _mm_and_si128(_mm_srli_epi16(a, 4), _mm_set1_epi8(0x0f));
                a2 = _mm_and_si128(_mm_srli_epi16(a2, 4), _mm_set1_epi8(0x0f));
                mp0 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, a2));
                mp1 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, a2));
            } else {
                mp0 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, a2));
                mp1 = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, a2));
            }
            ms0 = _mm256_add_epi32(ms0, _mm256_madd_epi16(mp0, bp));
            ms1 = _mm256_add_epi32(ms1, _mm256_madd_epi16(mp1, bp));
        }
        const __m256 dx = _mm256_set1_ps(xb->d);
        const __m256 d0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof))), d1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 16)));
        if (fmt == GB_Q3_K) { /* mn = 4 (sc - 32), d = dm: kterm's exact difference */
            acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(is0, _mm256_slli_epi32(ms0, 2)))));
            acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(_mm256_sub_epi32(is1, _mm256_slli_epi32(ms1, 2)))));
            continue;
        }
        const __m256 m0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 32)));
        const __m256 m1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + dof + 48)));
        acc0 = _mm256_add_ps(acc0, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(is0)),
                                                 _mm256_mul_ps(_mm256_mul_ps(m0, dx), _mm256_cvtepi32_ps(ms0))));
        acc1 = _mm256_add_ps(acc1, _mm256_sub_ps(_mm256_mul_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(is1)),
                                                 _mm256_mul_ps(_mm256_mul_ps(m1, dx), _mm256_cvtepi32_ps(ms1))));
    }
    kp_gemv_store(acc0, acc1, bias, y);
}

static void kp_gemv_avx2_q2(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, const float *bias) { kp_gemv2_avx2(GB_Q2_K, P, nb, xq, y, bias); }
static void kp_gemv_avx2_q3(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, float *y, const float *bias) { kp_gemv2_avx2(GB_Q3_K, P, nb, xq, y, bias); }

/* q3_K GEMM of T >= 16 tokens: 16-token tiles, then kp_group_avx2_q3 for the rest (its own function, so
 * the GEMV's code in kp_group_avx2_q3 stays as it was) */
static void kp_group16_avx2_q3(const uint8_t *P, int64_t nb, const gb_block_q8_K *xq, int64_t T, float *y, int64_t ldy,
                               const float *bias, int nr) {
    float bz[16] = {0};
    if (bias) memcpy(bz, bias, (size_t)nr * sizeof(float));
    int64_t t0 = 0;
    for (; t0 + 16 <= T; t0 += 16) kp_tile16_avx2_q3(P, nb, xq + t0 * nb, y + t0 * ldy, ldy, bz, nr, t0 == 0);
    if (t0 < T) kp_group_avx2_q3(P, nb, xq + t0 * nb, T - t0, y + t0 * ldy, ldy, bias, nr);
}
#endif

void gb_kp_rows(int fmt, const void *wp, int64_t N, int64_t K, int64_t g, const gb_block_q8_K *xq, int64_t T, float *y,
                int64_t ldy, const float *bias, int version) {
    const int64_t nb = K / QKK;
    const uint8_t *P = (const uint8_t *)wp + g * nb * gb_kp_block_bytes(fmt);
    const int nr = (int)(N - 16 * g < 16 ? N - 16 * g : 16);
#ifdef GB_HAVE_K_VNNI
    if (version == GB_KV_VNNI) {
        const __mmask16 m = (__mmask16)((1u << nr) - 1);
        (fmt == GB_Q4_K ? kp_group_q4 : fmt == GB_Q5_K ? kp_group_q5 : fmt == GB_Q6_K ? kp_group_q6 : fmt == GB_Q2_K ? kp_group_q2
         : fmt == GB_Q3_K ? kp_group_q3 : kp_group_iq4xs)(P, nb, xq, T, y, ldy, bias, m);
        return;
    }
#endif
#ifdef GB_HAVE_K_AVX2
    if (version == GB_KV_AVX2) {
        if (T == 1 && nr == 16 && (fmt == GB_Q6_K || fmt == GB_Q5_K || (fmt == GB_Q4_K && KP_AVX2_GEMV_Q4) || (fmt == GB_Q3_K && KP_AVX2_GEMV_Q3) || (fmt == GB_Q2_K && KP_AVX2_GEMV_Q2))) {
            /* the GEMV over a whole group: the formats' own loops */
            (fmt == GB_Q6_K ? kp_gemv_avx2_q6 : fmt == GB_Q5_K ? kp_gemv_avx2_q5 : fmt == GB_Q4_K ? kp_gemv_avx2_q4 : fmt == GB_Q3_K ? kp_gemv_avx2_q3 : kp_gemv_avx2_q2)(P, nb, xq, y, bias);
            return;
        }
        (fmt == GB_Q4_K ? kp_group_avx2_q4 : fmt == GB_Q5_K ? kp_group_avx2_q5 : fmt == GB_Q6_K ? kp_group_avx2_q6
         : fmt == GB_Q2_K ? kp_group_avx2_q2 : fmt == GB_Q3_K ? (KP_AVX2_TQ3 == 16 && T >= 16 ? kp_group16_avx2_q3 : kp_group_avx2_q3)
         : kp_group_avx2_iq4xs)(P, nb, xq, T, y, ldy, bias, nr);
        return;
    }
#endif
    (void)version;
    kp_group_ref(fmt, P, nb, xq, T, y, ldy, bias, nr);
}

int gb_kp_gemv_pair(int fmt, const void *w1, int64_t N1, int64_t g1, float *y1, const void *w2, int64_t N2, int64_t g2, float *y2,
                    int64_t K, const gb_block_q8_K *xq, int version) {
#ifdef GB_HAVE_K_AVX2
    if (KP_AVX2_GEMV_NS > 1 && version == GB_KV_AVX2 && KP_GEMVN_FMT(fmt) && N1 - 16 * g1 >= 16 &&
        N2 - 16 * g2 >= 16) {
        const int64_t nb = K / QKK, gbytes = nb * gb_kp_block_bytes(fmt);
        const uint8_t *Ps[2] = {(const uint8_t *)w1 + g1 * gbytes, (const uint8_t *)w2 + g2 * gbytes};
        float *ys[2] = {y1, y2};
        const float *bs[2] = {NULL, NULL};
        kp_gemvn_fmt(fmt, Ps, 2, nb, xq, ys, bs);
        return 1;
    }
#endif
    (void)fmt, (void)w1, (void)N1, (void)g1, (void)y1, (void)w2, (void)N2, (void)g2, (void)y2, (void)K, (void)xq, (void)version;
    return 0;
}

/* Prefill panels for callers that share one parallel region among several matrices (csrc/moe_k.c's
 * prefill: every routed expert's gate/up rows, then every down, as work items of one region). The
 * same steps gb_klinear_packed runs per pair of 16-row groups, so the outputs are bit-identical. */
int gb_kp_panel_ok(int version) {
#ifdef GB_HAVE_K_VNNI
    return version == GB_KV_VNNI;
#else
    (void)version;
    return 0;
#endif
}

size_t gb_kp_panel_scratch(int64_t K) {
#ifdef GB_HAVE_K_VNNI
    return (size_t)(2 * (K / QKK)) * sizeof(kpanel);
#else
    (void)K;
    return 0;
#endif
}

/* the activations' panel form a format's tile takes (quantize_block_q8_K_panel's mode): 0 plain
 * q8_K, 1 32-value sums (x_pairs32: q4_K/q5_K), 2 unsigned values (x_unsigned: q6_K/q3_K/iq4_xs) */
int gb_kp_panel_x_kind(int fmt) {
#ifdef GB_HAVE_K_VNNI
    return panel_sgn(fmt) ? 2 : panel_sub(fmt) == 2 ? 1 : 0;
#else
    (void)fmt;
    return 0;
#endif
}

/* a q8_K row (gb_quantize_row_q8_K) into that form in place: the bytes quant_row_panel writes */
void gb_kp_panel_prep_x(int fmt, gb_block_q8_K *xq, int64_t K) {
#ifdef GB_HAVE_K_VNNI
    const int kind = gb_kp_panel_x_kind(fmt);
    if (kind == 1) x_pairs32(xq, K / QKK);
    else if (kind == 2) x_unsigned(xq, K / QKK);
#else
    (void)fmt;
    (void)xq;
    (void)K;
#endif
}

void gb_kp_panel_step(int fmt, const void *wp, int64_t N, int64_t K, int64_t s2, const gb_block_q8_K *xq, int64_t T, float *y,
                      int64_t ldy, void *scratch) {
#ifdef GB_HAVE_K_VNNI
    const int64_t nb = K / QKK, G = (N + 15) / 16, gbytes = nb * gb_kp_block_bytes(fmt), g = 2 * s2;
    const int ng = g + 1 < G ? 2 : 1;
    kpanel *Pn = (kpanel *)scratch;
    for (int i = 0; i < ng; i++) {
        panel_fill_packed(fmt, (const uint8_t *)wp + (g + i) * gbytes, 16, nb, Pn + i * nb);
    }
    /* as panel_step: the groups in passes of GB_K_PANEL_CHUNK super-blocks, the running sums in y */
    const int64_t kc = GB_PT2 ? GB_K_PANEL_CHUNK : nb;
    for (int i = 0; i < ng; i += GB_PT2 ? 2 : 1)
        for (int64_t b0 = 0; b0 < nb; b0 += kc)
            panel_rows(fmt, GB_PT2 && i + 1 < ng ? 2 : 1, Pn + i * nb, nb, b0, nb - b0 < kc ? nb - b0 : kc, xq, T, y, ldy, NULL,
                       g + i, N);
#else
    (void)fmt; (void)wp; (void)N; (void)K; (void)s2; (void)xq; (void)T; (void)y; (void)ldy; (void)scratch;
#endif
}

int gb_klinear_packed(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                      int version) {
    return gb_klinear_packed_chk(fmt, x, wp, bias, y, T, N, K, version, NULL);
}

/* whether the K floats at x are all finite (the rows the panel quantizer does not see) */
static int row_finite(const float *x, int64_t K) {
    int64_t i = 0;
#if defined(__AVX512F__)
    const __m512 sgn = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff)), inf = _mm512_set1_ps(INFINITY);
    __mmask16 bad = 0;
    for (; i + 16 <= K; i += 16) bad |= _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(x + i), sgn), inf, _CMP_NLT_UQ);
    if (bad) return 0;
#endif
    for (; i < K; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

int gb_klinear_packed_chk(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                          int version, int *nonfinite) {
    if (nonfinite) *nonfinite = 0;
    if (!gb_kp_is_fmt(fmt)) return gb_error(GB_EVALUE, "klinear_packed: format %d is not a K-quant (q2_K..q6_K, iq4_xs)", fmt);
    if (K <= 0 || K % QKK) return gb_error(GB_EVALUE, "klinear_packed: K=%ld must be a positive multiple of 256", (long)K);
    if (T < 0 || N < 0) return gb_error(GB_EVALUE, "klinear_packed: T=%ld and N=%ld must be >= 0", (long)T, (long)N);
    if (version == GB_KV_AUTO) version = gb_kversion_best();
    if (!gb_kversion_available(version))
        return gb_error(GB_EVALUE, "klinear_packed: kernel version %d (%s) is not compiled in on this build", version, gb_kversion_name(version));
    if (T == 0 || N == 0) return GB_OK;
    const int64_t nb = K / QKK, G = (N + 15) / 16, gbytes = nb * gb_kp_block_bytes(fmt);
    gb_block_q8_K *xq = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)(T * nb) * sizeof(gb_block_q8_K));
    if (!xq) return gb_error(GB_ENOMEM, "klinear_packed: cannot allocate the q8_K activations (%ld rows of %ld)", (long)T, (long)K);
    const int panel = version == GB_KV_VNNI && T >= GB_KP_PANEL_MIN_T;
    const uint8_t *wb = (const uint8_t *)wp;
    int fail = 0, nonf = 0;
#pragma omp parallel if (N * K * T > 65536)
    {
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++) {
            int bad;
#ifdef GB_HAVE_K_VNNI
            if (panel) bad = quant_row_panel(fmt, x + t * K, xq + t * nb, nb);
            else
#endif
            {
                gb_quantize_row_q8_K(x + t * K, xq + t * nb, K);
                bad = nonfinite && !row_finite(x + t * K, K);
            }
            if (bad && nonfinite) {
#pragma omp atomic write
                nonf = 1;
            }
        }
        /* (the loop's barrier) a non-finite input: nothing is computed */
#ifdef GB_HAVE_K_VNNI
        if (panel && !nonf) { /* prefill: the 16-row groups decoded once per call into byte panels */
            int64_t tb;
            const int sp = panel_blocking(nb, G, &tb);
            kpanel *Pn = (kpanel *)gb_ws_aligned_alloc(64, (size_t)(sp * nb) * sizeof(kpanel));
            if (!Pn) {
#pragma omp atomic write
                fail = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t st = 0; st < (G + sp - 1) / sp; st++) { /* sp groups per step (panel_blocking) */
                if (!Pn) continue;
                const int64_t g0 = st * sp;
                const int n = G - g0 < sp ? (int)(G - g0) : sp;
                for (int i = 0; i < n; i++) {
                    panel_fill_packed(fmt, wb + (g0 + i) * gbytes, 16, nb, Pn + i * nb);
                }
                panel_step(fmt, Pn, g0, n, nb, xq, T, tb, y, N, bias);
            }
            gb_ws_free(Pn);
        }
#endif
        if (!panel && !nonf) {
            /* runs of groups of ~256 KB: long streams, and a thread held up by another job does not
             * hold up the others (dynamic). The AVX2 version: token chunks of about KP_XCHUNK_AVX2
             * bytes of q8_K activations (multiples of 8 tokens, the q6_K tile), every group per chunk,
             * so a chunk's activations stay in L2 while the groups pass (all T per group streamed them
             * from L3 once per group); each token's outputs are the same steps either way */
            const int64_t run = gbytes >= (256 << 10) ? 1 : (256 << 10) / gbytes;
            int64_t tc = T;
#ifdef GB_HAVE_K_AVX2
            if (version == GB_KV_AVX2 && KP_XCHUNK_AVX2 > 0) {
                tc = (int64_t)KP_XCHUNK_AVX2 / (nb * (int64_t)sizeof(gb_block_q8_K)) / 8 * 8;
                if (tc < 8) tc = 8;
                if (tc > T) tc = T;
            }
#endif
            const int64_t nc = (T + tc - 1) / tc;
            if (T == 1) {
                /* decode: guided, runs of at least half the above: the first grabs are long (fewer,
                 * longer streams than dynamic's 256 KB runs), the last short (a held-up thread still
                 * gets help at the end). From DRAM at 2 threads, Zen 3 (2026-12-03): 1.03-1.10x the
                 * dynamic runs on q4_K/q6_K matrices of 1.8-260 MB (session 14's note in docs/QUANT.md) */
#ifdef GB_HAVE_K_AVX2
                if (KP_AVX2_GEMV_NS > 1 && version == GB_KV_AVX2 && KP_GEMVN_FMT(fmt) && G >= 2) {
                    /* NS groups H apart at once (q4_K: KP_AVX2_GEMV_NS_Q4), walked by kp_gemvn_avx2 */
                    const int NS = fmt == GB_Q4_K ? KP_AVX2_GEMV_NS_Q4 : KP_AVX2_GEMV_NS;
                    const int64_t H = (G + NS - 1) / NS;
#pragma omp for schedule(guided, run / (2 * NS) + 1)
                    for (int64_t g = 0; g < H; g++) {
                        const uint8_t *Ps[4];
                        float *ys[4];
                        const float *bs[4];
                        int ns = 0;
                        for (int i = 0; i < NS; i++) {
                            const int64_t gi = g + i * H;
                            if (gi >= G) break;
                            if (N - 16 * gi < 16) { /* a group of fewer rows: on its own */
                                gb_kp_rows(fmt, wb, N, K, gi, xq, 1, y + 16 * gi, N, bias ? bias + 16 * gi : NULL, version);
                                continue;
                            }
                            Ps[ns] = wb + gi * gbytes;
                            ys[ns] = y + 16 * gi;
                            bs[ns++] = bias ? bias + 16 * gi : NULL;
                        }
                        if (ns) kp_gemvn_fmt(fmt, Ps, ns, nb, xq, ys, bs);
                    }
                } else
#endif
                {
#pragma omp for schedule(guided, run / 2 + 1)
                    for (int64_t g = 0; g < G; g++) gb_kp_rows(fmt, wb, N, K, g, xq, 1, y + 16 * g, N, bias ? bias + 16 * g : NULL, version);
                }
            } else {
#pragma omp for schedule(dynamic, run)
                for (int64_t w = 0; w < nc * G; w++) {
                    const int64_t g = w % G, t0 = w / G * tc, tn = T - t0 < tc ? T - t0 : tc;
                    gb_kp_rows(fmt, wb, N, K, g, xq + t0 * nb, tn, y + t0 * N + 16 * g, N, bias ? bias + 16 * g : NULL, version);
                }
            }
        }
    }
    gb_ws_free(xq);
    if (nonf) {
        *nonfinite = 1;
        return gb_error(GB_EVALUE, "klinear_packed: `x` has a non-finite value");
    }
    if (fail) return gb_error(GB_ENOMEM, "klinear_packed: cannot allocate the 16-row weight panels (%ld super-blocks)", (long)nb);
    return GB_OK;
}

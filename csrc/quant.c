/* quant.c: ggml q8_0 / q4_0 blocks: row encode/decode (scalar reference + AVX-512 versions that
 * reproduce it bit for bit), the generic row codec the KV cache uses for every cache format, and
 * the quantized linear kernels (numbered versions behind one launcher, gb_qlinear; see quant.h).
 *
 * Rounding follows ggml's reference quantizers (ggml-quants.c, quantize_row_q8_0_ref and
 * quantize_row_q4_0_ref): d = amax / 127 and q = roundf(x * (1/d)) for q8_0; d = max / -8 (max = the
 * signed value of largest magnitude) and q = min(15, (int8)(x * (1/d) + 8.5)) for q4_0, all in
 * float32. ggml's own SIMD quantizers round differently (127/amax, round-half-even); we keep the
 * reference so that glmbench bytes equal ggml's reference bytes. */
#include "quant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "common.h"

/* OpenBLAS from scipy-openblas32 (symbols prefixed scipy_; 32-bit ints). */
enum { GB_CblasRowMajor = 101, GB_CblasNoTrans = 111, GB_CblasTrans = 112 };
extern void scipy_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                              int lda, const float *b, int ldb, float beta, float *c, int ldc);

static inline float f16_to_f32(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    return gb_f16_to_f32(h);
#endif
}

static inline uint16_t load_u16(const void *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

int64_t gb_row_bytes(int fmt, int64_t n) {
    if (n < 0) return -1;
    switch (fmt) {
    case GB_F32: return gb_size_mul(4, n);
    case GB_F16:
    case GB_BF16: return gb_size_mul(2, n);
    case GB_Q8_0: return n % GB_QK ? -1 : n / GB_QK * (int64_t)sizeof(gb_block_q8_0);
    case GB_Q4_0: return n % GB_QK ? -1 : n / GB_QK * (int64_t)sizeof(gb_block_q4_0);
    default: return -1;
    }
}

/* ---- block encode / decode ----------------------------------------------------------------- */

/* roundf(): half away from zero, as ggml's reference uses. */
static void quantize_block_q8_0_scalar(const float *xb, gb_block_q8_0 *b) {
    float amax = 0.0f;
    for (int j = 0; j < GB_QK; j++) amax = fmaxf(amax, fabsf(xb[j]));
    const float d = amax / 127.0f;
    const float id = d ? 1.0f / d : 0.0f;
    b->d = gb_f32_to_f16(d);
    for (int j = 0; j < GB_QK; j++) b->qs[j] = (int8_t)gb_f2i(roundf(xb[j] * id)); /* NaN (non-finite x): 0 */
}

static void quantize_block_q4_0_scalar(const float *xb, gb_block_q4_0 *b) {
    float amax = 0.0f, max = 0.0f; /* the signed value of largest magnitude, first one on ties, as ggml */
    for (int j = 0; j < GB_QK; j++)
        if (fabsf(xb[j]) > amax) { amax = fabsf(xb[j]); max = xb[j]; }
    const float d = max / -8.0f;
    const float id = d ? 1.0f / d : 0.0f;
    b->d = gb_f32_to_f16(d);
    for (int j = 0; j < GB_QK / 2; j++) {
        /* x * id lies in [-8, 8]: + 8.5 is >= 0.5, so truncation never goes negative; 16 clips to 15 */
        int q0 = gb_f2i(xb[j] * id + 8.5f), q1 = gb_f2i(xb[j + GB_QK / 2] * id + 8.5f); /* NaN: clipped to 0 */
        q0 = q0 > 15 ? 15 : (q0 < 0 ? 0 : q0);
        q1 = q1 > 15 ? 15 : (q1 < 0 ? 0 : q1);
        b->qs[j] = (uint8_t)(q0 | (q1 << 4));
    }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* roundf() on 16 lanes, exactly: v - trunc(v) is exact for |v| < 2^23 (here |v| <= 127). */
static inline __m512i round_away_epi32(__m512 v) {
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_abs_ps(_mm512_sub_ps(v, t));
    const __mmask16 up = _mm512_cmp_ps_mask(f, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(_mm512_set1_ps(1.0f)),
        _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u))));
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

static void quantize_block_q8_0_avx512(const float *xb, gb_block_q8_0 *b) {
    const __m512 a = _mm512_loadu_ps(xb), c = _mm512_loadu_ps(xb + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(c)));
    const float d = amax / 127.0f;
    const float id = d ? 1.0f / d : 0.0f;
    b->d = gb_f32_to_f16(d);
    const __m512 vid = _mm512_set1_ps(id);
    _mm_storeu_si128((__m128i *)b->qs, _mm512_cvtepi32_epi8(round_away_epi32(_mm512_mul_ps(a, vid))));
    _mm_storeu_si128((__m128i *)(b->qs + 16), _mm512_cvtepi32_epi8(round_away_epi32(_mm512_mul_ps(c, vid))));
}

static void quantize_block_q4_0_avx512(const float *xb, gb_block_q4_0 *b) {
    const __m512 a = _mm512_loadu_ps(xb), c = _mm512_loadu_ps(xb + 16);
    const __m512 aa = _mm512_abs_ps(a), ac = _mm512_abs_ps(c);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(aa, ac));
    const __m512 vmax = _mm512_set1_ps(amax);
    const __mmask16 ma = _mm512_cmp_ps_mask(aa, vmax, _CMP_EQ_OQ), mc = _mm512_cmp_ps_mask(ac, vmax, _CMP_EQ_OQ);
    /* the first element of largest magnitude, as the scalar loop's strict '>' picks */
    const float max = amax == 0.0f ? 0.0f : (ma ? xb[__builtin_ctz(ma)] : xb[16 + __builtin_ctz(mc)]);
    const float d = max / -8.0f;
    const float id = d ? 1.0f / d : 0.0f;
    b->d = gb_f32_to_f16(d);
    const __m512 vid = _mm512_set1_ps(id), half = _mm512_set1_ps(8.5f);
    const __m512i fifteen = _mm512_set1_epi32(15);
    /* mul then add, two roundings, as the reference (no FMA contraction) */
    __m512i q0 = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(a, vid), half));
    __m512i q1 = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(c, vid), half));
    q0 = _mm512_max_epi32(_mm512_min_epi32(q0, fifteen), _mm512_setzero_si512());
    q1 = _mm512_max_epi32(_mm512_min_epi32(q1, fifteen), _mm512_setzero_si512());
    _mm_storeu_si128((__m128i *)b->qs, _mm512_cvtepi32_epi8(_mm512_or_si512(q0, _mm512_slli_epi32(q1, 4))));
}
#define quantize_block_q8_0 quantize_block_q8_0_avx512
#define quantize_block_q4_0 quantize_block_q4_0_avx512
#elif defined(__AVX2__)
/* q8_0 on 8 lanes (the activation quantizer of the integer GEMMs on an AVX2 CPU), the same bytes
 * as the scalar version: max |x| is exact in any order, d and 1/d are the scalar's, and roundf()
 * is done exactly (v - trunc(v) is exact for |v| < 2^23). A block with NaN or inf, or whose 1/d
 * overflows (d subnormal), goes to the scalar version (its NaN-ordering of fmaxf and the
 * float -> int conversion of non-finite products are not reproduced here). */
static inline __m256i round_away_epi32_avx2(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 sgn = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
    const __m256 f = _mm256_andnot_ps(sgn, _mm256_sub_ps(v, t)); /* |v - t|: v - t has v's sign or is 0 */
    const __m256 up = _mm256_cmp_ps(f, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), sgn);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
}

static void quantize_block_q8_0_avx2(const float *xb, gb_block_q8_0 *b) {
    const __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8), x2 = _mm256_loadu_ps(xb + 16), x3 = _mm256_loadu_ps(xb + 24);
    const __m256 nan = _mm256_or_ps(_mm256_or_ps(_mm256_cmp_ps(x0, x0, _CMP_UNORD_Q), _mm256_cmp_ps(x1, x1, _CMP_UNORD_Q)),
                                    _mm256_or_ps(_mm256_cmp_ps(x2, x2, _CMP_UNORD_Q), _mm256_cmp_ps(x3, x3, _CMP_UNORD_Q)));
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(x0, absm), _mm256_and_ps(x1, absm)),
                             _mm256_max_ps(_mm256_and_ps(x2, absm), _mm256_and_ps(x3, absm)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const float d = amax / 127.0f;
    const float id = d ? 1.0f / d : 0.0f;
    if (_mm256_movemask_ps(nan) || !(amax <= 3.4028235e38f) || !(id <= 3.4028235e38f)) {
        quantize_block_q8_0_scalar(xb, b);
        return;
    }
    b->d = gb_f32_to_f16(d);
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i q0 = round_away_epi32_avx2(_mm256_mul_ps(x0, vid)), q1 = round_away_epi32_avx2(_mm256_mul_ps(x1, vid));
    const __m256i q2 = round_away_epi32_avx2(_mm256_mul_ps(x2, vid)), q3 = round_away_epi32_avx2(_mm256_mul_ps(x3, vid));
    /* packs work per 128-bit lane: dwords come out as [q0 0:4, q1 0:4, q2 0:4, q3 0:4 | q0 4:8, ...] */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    _mm256_storeu_si256((__m256i *)b->qs, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
#define quantize_block_q8_0 quantize_block_q8_0_avx2
#define quantize_block_q4_0 quantize_block_q4_0_scalar
#else
#define quantize_block_q8_0 quantize_block_q8_0_scalar
#define quantize_block_q4_0 quantize_block_q4_0_scalar
#endif

void gb_quantize_row_q8_0(const float *x, void *dst, int64_t n) {
    gb_block_q8_0 *b = (gb_block_q8_0 *)dst;
    for (int64_t i = 0; i < n / GB_QK; i++) quantize_block_q8_0(x + i * GB_QK, b + i);
}

void gb_quantize_row_q4_0(const float *x, void *dst, int64_t n) {
    gb_block_q4_0 *b = (gb_block_q4_0 *)dst;
    for (int64_t i = 0; i < n / GB_QK; i++) quantize_block_q4_0(x + i * GB_QK, b + i);
}

void gb_dequantize_row_q8_0(const void *src, float *y, int64_t n) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)src;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float d = f16_to_f32(b[i].d);
#if defined(__AVX512F__)
        const __m512 vd = _mm512_set1_ps(d);
        _mm512_storeu_ps(y + i * GB_QK, _mm512_mul_ps(vd, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                              _mm_loadu_si128((const __m128i *)b[i].qs)))));
        _mm512_storeu_ps(y + i * GB_QK + 16, _mm512_mul_ps(vd, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                                   _mm_loadu_si128((const __m128i *)(b[i].qs + 16))))));
#else
        for (int j = 0; j < GB_QK; j++) y[i * GB_QK + j] = d * (float)b[i].qs[j];
#endif
    }
}

void gb_dequantize_row_q4_0(const void *src, float *y, int64_t n) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)src;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float d = f16_to_f32(b[i].d);
#if defined(__AVX512F__)
        const __m512 vd = _mm512_set1_ps(d);
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b[i].qs));
        const __m512i eight = _mm512_set1_epi32(8), m4 = _mm512_set1_epi32(0x0f);
        _mm512_storeu_ps(y + i * GB_QK, _mm512_mul_ps(vd, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(v, m4), eight))));
        _mm512_storeu_ps(y + i * GB_QK + 16,
                         _mm512_mul_ps(vd, _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(v, 4), eight))));
#else
        for (int j = 0; j < GB_QK / 2; j++) {
            y[i * GB_QK + j] = d * (float)((b[i].qs[j] & 0x0f) - 8);
            y[i * GB_QK + j + GB_QK / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
#endif
    }
}

/* ---- the generic row codec (KV cache, weights) ---------------------------------------------- */

static void encode_f16(const float *x, uint16_t *h, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(h + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; i++) h[i] = gb_f32_to_f16(x[i]);
}

static void decode_f16(const uint16_t *h, float *y, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
#endif
    for (; i < n; i++) y[i] = f16_to_f32(h[i]);
}

static void encode_bf16(const float *x, uint16_t *h, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__)
    /* round-to-nearest-even on the bits, NaN kept quiet: the same as gb_f32_to_bf16 (the BF16
     * instruction vcvtneps2bf16 would flush subnormals, so it is not used) */
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), absm = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512((const void *)(x + i));
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, _mm512_and_si512(_mm512_srli_epi32(u, 16), one))), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf);
        r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet));
        _mm256_storeu_si256((__m256i *)(h + i), _mm512_cvtepi32_epi16(r));
    }
#endif
    for (; i < n; i++) h[i] = gb_f32_to_bf16(x[i]);
}

static void decode_bf16(const uint16_t *h, float *y, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_si512((void *)(y + i), _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(h + i))), 16));
#endif
    for (; i < n; i++) y[i] = gb_bf16_to_f32(h[i]);
}

/* A block scale that rounds to inf in float16 cannot be stored (ggml would decode it as NaN). */
static int check_scales(int fmt, const void *dst, int64_t n) {
    const int64_t nb = n / GB_QK, bb = fmt == GB_Q8_0 ? (int64_t)sizeof(gb_block_q8_0) : (int64_t)sizeof(gb_block_q4_0);
    for (int64_t i = 0; i < nb; i++) {
        const uint16_t d = load_u16((const char *)dst + i * bb);
        if ((d & 0x7c00u) == 0x7c00u)
            return gb_error(GB_EVALUE, "%s block %ld: its scale overflows float16 (largest |x| above %s)",
                            fmt == GB_Q8_0 ? "q8_0" : "q4_0", (long)i, fmt == GB_Q8_0 ? "8.3e6" : "5.2e5");
    }
    return GB_OK;
}

/* A finite float32 past a 16-bit format's range rounds to inf (f16: |x| >= 65520; bf16: >= 3.3961e38):
 * refused as a q8_0/q4_0 block scale that overflows is (check_scales), not stored as inf. */
static int check_inf16(int fmt, const uint16_t *h, int64_t n) {
    const uint16_t e = fmt == GB_F16 ? 0x7c00u : 0x7f80u;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad |= (h[i] & e) == e;
    if (!bad) return GB_OK;
    return gb_error(GB_EVALUE, "%s: a value overflows %s (|x| of %s or more)", fmt == GB_F16 ? "f16" : "bf16",
                    fmt == GB_F16 ? "float16" : "bfloat16", fmt == GB_F16 ? "65520" : "3.3961e38");
}

int gb_encode_row(int fmt, const float *x, void *dst, int64_t n) {
    if (gb_row_bytes(fmt, n) < 0) return gb_error(GB_EVALUE, "format %d cannot store a row of %ld elements", fmt, (long)n);
    switch (fmt) {
    case GB_F32: memcpy(dst, x, (size_t)n * 4); break;
    case GB_F16: encode_f16(x, (uint16_t *)dst, n); return check_inf16(fmt, (const uint16_t *)dst, n);
    case GB_BF16: encode_bf16(x, (uint16_t *)dst, n); return check_inf16(fmt, (const uint16_t *)dst, n);
    case GB_Q8_0: gb_quantize_row_q8_0(x, dst, n); return check_scales(fmt, dst, n);
    case GB_Q4_0: gb_quantize_row_q4_0(x, dst, n); return check_scales(fmt, dst, n);
    }
    return GB_OK;
}

int gb_decode_row(int fmt, const void *src, float *y, int64_t n) {
    if (gb_row_bytes(fmt, n) < 0) return gb_error(GB_EVALUE, "format %d cannot store a row of %ld elements", fmt, (long)n);
    switch (fmt) {
    case GB_F32: memcpy(y, src, (size_t)n * 4); break;
    case GB_F16: decode_f16((const uint16_t *)src, y, n); break;
    case GB_BF16: decode_bf16((const uint16_t *)src, y, n); break;
    case GB_Q8_0: gb_dequantize_row_q8_0(src, y, n); break;
    case GB_Q4_0: gb_dequantize_row_q4_0(src, y, n); break;
    }
    return GB_OK;
}

int gb_quantize_rows(int fmt, const float *x, void *dst, int64_t rows, int64_t k) {
    const int64_t rb = gb_row_bytes(fmt, k);
    if (rb < 0 || rows < 0) return gb_error(GB_EVALUE, "format %d cannot store rows of %ld elements", fmt, (long)k);
    int64_t bad = rows; /* the first failing row; the message is written after the loop, on the
                         * calling thread (gb_error's buffer is thread-local) */
#pragma omp parallel for schedule(static) if (rows * k > 65536) reduction(min : bad)
    for (int64_t r = 0; r < rows; r++)
        if (gb_encode_row(fmt, x + r * k, (char *)dst + r * rb, k) != GB_OK && r < bad) bad = r;
    if (bad < rows)
        return gb_error(GB_EVALUE, "row %ld: a block scale overflows float16 (largest |x| above %s)", (long)bad,
                        fmt == GB_Q8_0 ? "8.3e6" : "5.2e5");
    return GB_OK;
}

int gb_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k) {
    const int64_t rb = gb_row_bytes(fmt, k);
    if (rb < 0 || rows < 0) return gb_error(GB_EVALUE, "format %d cannot store rows of %ld elements", fmt, (long)k);
#pragma omp parallel for schedule(static) if (rows * k > 65536)
    for (int64_t r = 0; r < rows; r++) gb_decode_row(fmt, (const char *)src + r * rb, y + r * k, k);
    return GB_OK;
}

/* ---- quantized linear: the activation row quantized to q8_0 (versions 3-5) ------------------ */

/* One activation row quantized to q8_0, unpacked for the kernels: int8 values (K), the float16-
 * rounded block scales as float (ggml keeps the activation scale in f16 too) and each block's sum
 * of int8 values (as float), which folds the weights' zero point (8 for q4_0, or the +128 that
 * makes q8_0 weights unsigned for vpdpbusd) into one correction per row. For the VNNI q4_0 kernel
 * the int8 values of each pair of blocks are stored as [b0 0:16, b1 0:16, b0 16:32, b1 16:32], the
 * order in which the low and high nibbles of two blocks land in one zmm. */
typedef struct {
    int8_t *qs;
    float *d;
    float *s;
} xq_row;

static void prepare_xq(const float *x, int64_t K, int pair_interleave, xq_row *r) {
    const int64_t nb = K / GB_QK;
    gb_block_q8_0 blk;
    for (int64_t i = 0; i < nb; i++) {
        quantize_block_q8_0(x + i * GB_QK, &blk);
        r->d[i] = f16_to_f32(blk.d);
        int s = 0;
        for (int j = 0; j < GB_QK; j++) s += blk.qs[j];
        r->s[i] = (float)s;
        if (pair_interleave && (i & 1) == 0 && i + 1 < nb) {
            memcpy(r->qs + i * GB_QK, blk.qs, 16);          /* b0 0:16 */
            memcpy(r->qs + i * GB_QK + 32, blk.qs + 16, 16); /* b0 16:32 */
        } else if (pair_interleave && (i & 1) == 1) {
            memcpy(r->qs + (i - 1) * GB_QK + 16, blk.qs, 16);      /* b1 0:16 */
            memcpy(r->qs + (i - 1) * GB_QK + 48, blk.qs + 16, 16); /* b1 16:32 */
        } else {
            memcpy(r->qs + i * GB_QK, blk.qs, GB_QK);
        }
    }
}

/* version 3: portable scalar integer block dots; block i alone also ends the SIMD versions' odd counts */
static inline float block_q8_0(const gb_block_q8_0 *b, const xq_row *x, int64_t i) {
    int s = 0;
    for (int j = 0; j < GB_QK; j++) s += (int)b[i].qs[j] * (int)x->qs[i * GB_QK + j];
    return f16_to_f32(b[i].d) * x->d[i] * (float)s;
}

static inline float block_q4_0(const gb_block_q4_0 *b, const xq_row *x, int64_t i) {
    int s = 0;
    for (int j = 0; j < GB_QK / 2; j++)
        s += ((b[i].qs[j] & 0x0f) - 8) * (int)x->qs[i * GB_QK + j] + ((b[i].qs[j] >> 4) - 8) * (int)x->qs[i * GB_QK + j + 16];
    return f16_to_f32(b[i].d) * x->d[i] * (float)s;
}

static float dot_q8_0_ref(const void *wrow, const xq_row *x, int64_t nb) {
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) acc += block_q8_0((const gb_block_q8_0 *)wrow, x, i);
    return acc;
}

static float dot_q4_0_ref(const void *wrow, const xq_row *x, int64_t nb) {
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) acc += block_q4_0((const gb_block_q4_0 *)wrow, x, i);
    return acc;
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GB_HAVE_AVX2_Q8 1
static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* version 4: AVX2. q8_0 uses ggml's sign trick: |w| (unsigned) x sign(w)*x (signed) through
 * vpmaddubsw; pairs of products stay within int16 because quantized values are in [-127, 127]. */
static float dot_q8_0_avx2(const void *wrow, const xq_row *x, int64_t nb) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)wrow;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m256i w = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x->qs + i * GB_QK));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w)), ones);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(f16_to_f32(b[i].d) * x->d[i]), acc);
    }
    return hsum256(acc);
}

/* q4_0: nibbles 0..15 are already unsigned; subtract 8 * sum(x) per block at the end. */
static float dot_q4_0_avx2(const void *wrow, const xq_row *x, int64_t nb) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)wrow;
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    float corr = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        const __m128i raw = _mm_loadu_si128((const __m128i *)b[i].qs);
        const __m256i w = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1), m4);
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x->qs + i * GB_QK));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w, xv), ones);
        const float sc = f16_to_f32(b[i].d) * x->d[i];
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(sc), acc);
        corr += sc * x->s[i];
    }
    return hsum256(acc) - 8.0f * corr;
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#define GB_HAVE_VNNI_Q8 1
/* Two blocks' scales [dw0*dx0, dw1*dx1, 0, 0]; the f16 weight scales sit 34 or 18 bytes apart. */
static inline __m128 pair_scales(uint16_t d0, uint16_t d1, const float *xd) {
    const __m128 dw = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(d0), d1, 1));
    return _mm_mul_ps(dw, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)xd)));
}

/* version 5: AVX-512 VNNI, two blocks per zmm. vpdpbusd multiplies unsigned by signed bytes, so
 * q8_0 weights are shifted to unsigned (w ^ 0x80 = w + 128) and 128 * sum(x) comes off per block. */
static float dot_q8_0_vnni(const void *wrow, const xq_row *x, int64_t nb) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)wrow;
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m128 corr = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m512i w = _mm512_xor_si512(flip, _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)b[i].qs)),
                                                                      _mm256_loadu_si256((const __m256i *)b[i + 1].qs), 1));
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512((const void *)(x->qs + i * GB_QK)));
        const __m128 sc = pair_scales(b[i].d, b[i + 1].d, x->d + i);
        corr = _mm_fmadd_ps(sc, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(x->s + i))), corr);
        const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(sc)));
        if (i & 2) acc1 = _mm512_add_ps(acc1, f);
        else acc0 = _mm512_add_ps(acc0, f);
    }
    float r = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) - 128.0f * (corr[0] + corr[1]);
    if (i < nb) { /* odd block count: the last block without the pair layout */
        r += block_q8_0(b, x, i);
    }
    return r;
}

static float dot_q4_0_vnni(const void *wrow, const xq_row *x, int64_t nb) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)wrow;
    const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m128 corr = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        /* [lo0, lo1, hi0, hi1]: matches the pair-interleaved activation layout */
        const __m256i r = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)b[i].qs)),
                                                  _mm_loadu_si128((const __m128i *)b[i + 1].qs), 1);
        const __m512i w = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(r), _mm256_srli_epi16(r, 4), 1), m4);
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512((const void *)(x->qs + i * GB_QK)));
        const __m128 sc = pair_scales(b[i].d, b[i + 1].d, x->d + i);
        corr = _mm_fmadd_ps(sc, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(x->s + i))), corr);
        const __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(sc)));
        if (i & 2) acc1 = _mm512_add_ps(acc1, f);
        else acc0 = _mm512_add_ps(acc0, f);
    }
    float r = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) - 8.0f * (corr[0] + corr[1]);
    if (i < nb) {
        r += block_q4_0(b, x, i);
    }
    return r;
}
#endif

/* ---- quantized linear: float32 activations (versions 1-2) ------------------------------------ */

/* version 1: decode a block to floats, float dot */
static float dot_f32_q8_0_ref(const void *wrow, const float *x, int64_t nb) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)wrow;
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        float s = 0.0f;
        for (int j = 0; j < GB_QK; j++) s += (float)b[i].qs[j] * x[i * GB_QK + j];
        acc += f16_to_f32(b[i].d) * s;
    }
    return acc;
}

static float dot_f32_q4_0_ref(const void *wrow, const float *x, int64_t nb) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)wrow;
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        float s = 0.0f;
        for (int j = 0; j < GB_QK / 2; j++)
            s += (float)((b[i].qs[j] & 0x0f) - 8) * x[i * GB_QK + j] + (float)((b[i].qs[j] >> 4) - 8) * x[i * GB_QK + j + 16];
        acc += f16_to_f32(b[i].d) * s;
    }
    return acc;
}

#if defined(__AVX512F__) && defined(__F16C__)
#define GB_HAVE_AVX512_F32 1
/* version 2: AVX-512F, weights decoded in registers (int8 -> int32 -> float), two FMAs per block */
static float dot_f32_q8_0_avx512(const void *wrow, const float *x, int64_t nb) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)wrow;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512 w0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b[i].qs)));
        const __m512 w1 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b[i].qs + 16))));
        const __m512 s = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i * GB_QK + 16), _mm512_mul_ps(w0, _mm512_loadu_ps(x + i * GB_QK)));
        if (i & 1) acc1 = _mm512_fmadd_ps(s, _mm512_set1_ps(f16_to_f32(b[i].d)), acc1);
        else acc0 = _mm512_fmadd_ps(s, _mm512_set1_ps(f16_to_f32(b[i].d)), acc0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

static float dot_f32_q4_0_avx512(const void *wrow, const float *x, int64_t nb) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)wrow;
    const __m512i m4 = _mm512_set1_epi32(0x0f), eight = _mm512_set1_epi32(8);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b[i].qs));
        const __m512 w0 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(v, m4), eight));
        const __m512 w1 = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(v, 4), eight));
        const __m512 s = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + i * GB_QK + 16), _mm512_mul_ps(w0, _mm512_loadu_ps(x + i * GB_QK)));
        if (i & 1) acc1 = _mm512_fmadd_ps(s, _mm512_set1_ps(f16_to_f32(b[i].d)), acc1);
        else acc0 = _mm512_fmadd_ps(s, _mm512_set1_ps(f16_to_f32(b[i].d)), acc0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
#endif

/* ---- the launcher ------------------------------------------------------------------------------ */

int gb_qversion_available(int v) {
    switch (v) {
    case GB_QV_REF_F32:
    case GB_QV_REF_Q8:
    case GB_QV_BLAS_F32: return 1;
#ifdef GB_HAVE_AVX512_F32
    case GB_QV_AVX512_F32: return 1;
#endif
#ifdef GB_HAVE_AVX2_Q8
    case GB_QV_AVX2_Q8: return 1;
#endif
#ifdef GB_HAVE_VNNI_Q8
    case GB_QV_VNNI_Q8: return 1;
#endif
    default: return 0;
    }
}

const char *gb_qversion_name(int v) {
    static const char *names[GB_QV_COUNT] = {"auto", "ref_f32", "avx512_f32", "ref_q8", "avx2_q8", "vnni_q8", "blas_f32"};
    return v >= 0 && v < GB_QV_COUNT ? names[v] : "?";
}

static int best_q8(void) {
#ifdef GB_HAVE_VNNI_Q8
    return GB_QV_VNNI_Q8;
#elif defined(GB_HAVE_AVX2_Q8)
    return GB_QV_AVX2_Q8;
#else
    return GB_QV_REF_Q8;
#endif
}

static int best_f32(void) {
#ifdef GB_HAVE_AVX512_F32
    return GB_QV_AVX512_F32;
#else
    return GB_QV_REF_F32;
#endif
}

typedef float (*dot_f32_fn)(const void *, const float *, int64_t);
typedef float (*dot_q8_fn)(const void *, const xq_row *, int64_t);

/* Rows of W per OpenMP chunk: enough work per chunk to hide scheduling, small enough for balance. */
#define GB_QROWS_CHUNK 16

static int qlinear_blas(int fmt, const float *x, const void *w, float *y, int64_t T, int64_t N, int64_t K) {
    const int64_t rb = gb_row_bytes(fmt, K);
    /* a panel of ~4 MB of float32 weights: L2/L3-sized, small next to any real weight matrix */
    int64_t pr = (1 << 20) / K;
    if (pr < 16) pr = 16;
    if (pr > N) pr = N;
    float *panel = (float *)gb_ws_malloc((size_t)(pr * K) * sizeof(float));
    if (!panel) return gb_error(GB_ENOMEM, "qlinear: cannot allocate a %ld x %ld float32 panel", (long)pr, (long)K);
    for (int64_t n0 = 0; n0 < N; n0 += pr) {
        const int64_t nr = n0 + pr <= N ? pr : N - n0;
        gb_dequantize_rows(fmt, (const char *)w + n0 * rb, panel, nr, K);
        scipy_cblas_sgemm(GB_CblasRowMajor, GB_CblasNoTrans, GB_CblasTrans, (int)T, (int)nr, (int)K, 1.0f, x, (int)K, panel,
                          (int)K, 0.0f, y + n0, (int)N);
    }
    gb_ws_free(panel);
    return GB_OK;
}

int gb_qlinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
               int64_t K, int compute, int version) {
    if (fmt != GB_Q8_0 && fmt != GB_Q4_0) return gb_error(GB_EVALUE, "qlinear: format %d is not q8_0 (8) or q4_0 (9)", fmt);
    if (K <= 0 || K % GB_QK) return gb_error(GB_EVALUE, "qlinear: K=%ld must be a positive multiple of 32", (long)K);
    if (T < 0 || N < 0) return gb_error(GB_EVALUE, "qlinear: T=%ld and N=%ld must be >= 0", (long)T, (long)N);
    if (compute < GB_QC_AUTO || compute > GB_QC_Q8) return gb_error(GB_EVALUE, "qlinear: unknown compute mode %d", compute);
    if (version == GB_QV_AUTO) {
        if (T >= GB_QGEMM_MIN_T && compute != GB_QC_Q8) version = GB_QV_BLAS_F32;
        else version = compute == GB_QC_F32 ? best_f32() : best_q8();
    }
    if (!gb_qversion_available(version))
        return gb_error(GB_EVALUE, "qlinear: kernel version %d (%s) is not compiled in on this build", version, gb_qversion_name(version));
    if (T == 0 || N == 0) return GB_OK;
    const int64_t rb = gb_row_bytes(fmt, K), nb = K / GB_QK;
    const char *wb = (const char *)w;
    int st = GB_OK;

    if (version == GB_QV_BLAS_F32) {
        st = qlinear_blas(fmt, x, w, y, T, N, K);
    } else if (version == GB_QV_REF_F32 || version == GB_QV_AVX512_F32) {
        dot_f32_fn dot = fmt == GB_Q8_0 ? dot_f32_q8_0_ref : dot_f32_q4_0_ref;
#ifdef GB_HAVE_AVX512_F32
        if (version == GB_QV_AVX512_F32) dot = fmt == GB_Q8_0 ? dot_f32_q8_0_avx512 : dot_f32_q4_0_avx512;
#endif
#pragma omp parallel for schedule(static, GB_QROWS_CHUNK) if (N * K * T > 65536)
        for (int64_t n = 0; n < N; n++)
            for (int64_t t = 0; t < T; t++) y[t * N + n] = dot(wb + n * rb, x + t * K, nb);
    } else {
        dot_q8_fn dot = fmt == GB_Q8_0 ? dot_q8_0_ref : dot_q4_0_ref;
        int interleave = 0;
#ifdef GB_HAVE_AVX2_Q8
        if (version == GB_QV_AVX2_Q8) dot = fmt == GB_Q8_0 ? dot_q8_0_avx2 : dot_q4_0_avx2;
#endif
#ifdef GB_HAVE_VNNI_Q8
        if (version == GB_QV_VNNI_Q8) {
            dot = fmt == GB_Q8_0 ? dot_q8_0_vnni : dot_q4_0_vnni;
            interleave = fmt == GB_Q4_0;
        }
#endif
        /* per row: K int8 + nb scales + nb sums; 64-byte aligned for the zmm loads */
        const int64_t stride = ((K + 8 * nb) + 63) / 64 * 64;
        char *buf = (char *)gb_ws_aligned_alloc(64, (size_t)(T * stride));
        xq_row *rows = (xq_row *)gb_ws_malloc((size_t)T * sizeof(xq_row));
        if (!buf || !rows) {
            gb_ws_free(buf);
            gb_ws_free(rows);
            return gb_error(GB_ENOMEM, "qlinear: cannot allocate the quantized activations (%ld rows of %ld)", (long)T, (long)K);
        }
        for (int64_t t = 0; t < T; t++) {
            rows[t].qs = (int8_t *)(buf + t * stride);
            rows[t].d = (float *)(buf + t * stride + K);
            rows[t].s = rows[t].d + nb;
        }
        /* a decode row or a few: quantize them here, so the parallel region has one barrier (a
         * barrier costs a scheduler time slice whenever another job holds one of the cores) */
#pragma omp parallel for schedule(static) if (T * K > 65536)
        for (int64_t t = 0; t < T; t++) prepare_xq(x + t * K, K, interleave, &rows[t]);
#pragma omp parallel for schedule(static, GB_QROWS_CHUNK) if (N * K * T > 65536)
        for (int64_t n = 0; n < N; n++)
            for (int64_t t = 0; t < T; t++) y[t * N + n] = dot(wb + n * rb, &rows[t], nb);
        gb_ws_free(buf);
        gb_ws_free(rows);
    }
    if (st == GB_OK && bias)
        for (int64_t t = 0; t < T; t++)
            for (int64_t n = 0; n < N; n++) y[t * N + n] += bias[n];
    return st;
}

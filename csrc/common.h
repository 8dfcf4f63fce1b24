/* common.h: status codes, the error message buffer and small numeric helpers shared by every
 * op family in csrc/. Pure C: no Python.h here (only module.c and bind_*.c see Python).
 *
 * Convention: every C-core entry point returns an int status (GB_OK on success). On failure it
 * calls gb_error(status, fmt, ...) which records a message in a thread-local buffer; the binding
 * turns (status, message) into a Python exception. Library code never exit()s or abort()s.
 *
 * Workspace ledger: kernel scratch is allocated with gb_ws_malloc / gb_ws_calloc /
 * gb_ws_aligned_alloc and released with gb_ws_free (never with free()), so the C core can say how
 * many bytes of workspace it holds now and at most (gb_ws_current, gb_ws_peak). Memory that the
 * KV cache owns (kvcache.c's blocks and tables, counted as KV bytes) stays on malloc/free.
 */
#ifndef GLMBENCH_COMMON_H
#define GLMBENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

enum {
    GB_OK = 0,
    GB_EVALUE = 1,   /* bad value or shape: ValueError */
    GB_ETYPE = 2,    /* bad dtype: TypeError */
    GB_ENOMEM = 3,   /* allocation failed: MemoryError */
    GB_EFULL = 4,    /* a cache or buffer is full: ValueError naming the capacity */
    GB_EINTERNAL = 5 /* a bug: RuntimeError */
};

/* Record an error message (printf-style) and return `status` so callers can write
 * `return gb_error(GB_EVALUE, "...", ...);`. */
int gb_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message recorded on this thread. */
const char *gb_last_error(void);

/* Weight storage formats understood by the linear/MoE kernels. Values are part of the Python
 * contract (glmbench/ops.py maps names to them). */
enum {
    GB_F32 = 0,
    GB_F16 = 1,
    GB_BF16 = 2,  /* stored as uint16, the high half of an IEEE float32 */
    GB_Q8_0 = 8,  /* ggml block formats (csrc/quant.c) */
    GB_Q4_0 = 9
};

/* Byte and element counts from sizes a caller passed in (through the bindings, user input): a * b,
 * or -1 when an operand is negative or the product does not fit int64. Signed overflow is undefined
 * behaviour; the fuzzer under UBSan (bench/fuzz/run_asan.sh with FUZZ_UBSAN=1) found size products
 * of absurd n / k / head counts that wrapped. -1 is what the size functions already return for
 * sizes they cannot serve, and gb_check_dim turns it into one clear error. */
static inline int64_t gb_size_mul(int64_t a, int64_t b) {
    int64_t r;
    return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}
/* n rounded up to a multiple of m (m >= 1), or -1 (n < 0, or past int64) */
static inline int64_t gb_size_roundup(int64_t n, int64_t m) {
    return n < 0 ? -1 : gb_size_mul(n / m + (n % m != 0), m);
}

/* (int32_t)v, truncated toward zero, as x86's cvttss2si gives it: INT32_MIN for NaN and for values
 * past int32. C leaves a float-to-integer cast out of range undefined; the quantizers of activations
 * met NaN there (a NaN or inf activation, or inf * 0 in the block's scaling: UBSan's
 * float-cast-overflow under the fuzzer), and this keeps the results the x86 builds always gave. */
static inline int32_t gb_f2i(float v) { return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN; }

/* whether fmt holds float elements (GB_F32, GB_F16, GB_BF16), not blocks */
static inline int gb_is_float_fmt(int fmt) { return fmt == GB_F32 || fmt == GB_F16 || fmt == GB_BF16; }

static inline float gb_bf16_to_f32(uint16_t h) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}

/* Round-to-nearest-even, as torch and ggml do; NaN stays NaN. */
static inline uint16_t gb_f32_to_bf16(float f) {
    union { uint32_t u; float f; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)((v.u + rounding) >> 16);
}

/* ---- workspace ledger (common.c) ----------------------------------------------------------
 * Each block carries a header in front of the returned pointer that records its size; the
 * pointer keeps malloc's alignment (alignof(max_align_t)) or, for gb_ws_aligned_alloc, `align`
 * (a power of two; the kernels use 64). The counters are atomic (the kernels allocate from OpenMP
 * threads) and count the bytes requested, not the headers. All return NULL when out of memory;
 * gb_ws_free(NULL) does nothing. */
void *gb_ws_malloc(size_t bytes);
void *gb_ws_calloc(size_t n, size_t size);
void *gb_ws_aligned_alloc(size_t align, size_t bytes);
void gb_ws_free(void *p);
size_t gb_ws_current(void);   /* bytes in live workspace blocks */
size_t gb_ws_peak(void);      /* the most gb_ws_current has been since the last reset */
size_t gb_ws_blocks(void);    /* live workspace blocks */
void gb_ws_reset_peak(void);  /* peak := current */
/* Freed blocks of 1 MiB or more are kept for the next request they fit (at most 16 blocks, 256 MiB;
 * not counted by gb_ws_current): gb_ws_kept() = their bytes, gb_ws_trim() frees them. */
size_t gb_ws_kept(void);
void gb_ws_trim(void);

float gb_f16_to_f32(uint16_t h);
uint16_t gb_f32_to_f16(float f);

#ifdef __AVX512F__
#include <immintrin.h>
/* e^x for x <= 0 (a softmax; SwiGLU's exp(-|g|)): Cody-Waite reduction x = n ln2 + r (|r| <= ln2/2,
 * ln2 split in Cephes' two parts so n*C1 is exact), e^r by its degree-7 Taylor polynomial
 * (truncation error < 0.35^8/8! = 6e-9 relative), 2^n by scalef. x < -87 (e^x near FLT_MIN, and the
 * -inf of masked keys) gives exactly 0. */
static inline __attribute__((always_inline)) __m512 gb_exp512(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    x = _mm512_max_ps(x, lo);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(p, n));
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
/* gb_exp512's steps on 8 lanes (CPUs without AVX-512): the same reduction and polynomial; 2^n by
 * adding n to the exponent field (n >= -126 here: x >= -87), x < -87 gives exactly 0. */
static inline __attribute__((always_inline)) __m256 gb_exp256(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.0f);
    const __m256 keep = _mm256_cmp_ps(x, lo, _CMP_GE_OQ);
    x = _mm256_max_ps(x, lo);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* p in [0.7, 1.42]: adding n (>= -126) to its exponent stays a normal number */
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    const __m256 y = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
    return _mm256_and_ps(keep, y);
}
#endif

#endif

/* quant.h: ggml block formats q8_0 and q4_0 (byte-exact with ggml-common.h), so GGUF tensors can
 * be used without conversion. Owned by the quantization work (csrc/quant.c); the KV cache and the
 * linear/MoE kernels call these row functions.
 *
 *   block_q8_0 { uint16_t d (f16 scale); int8_t qs[32]; }          34 bytes, x = d * q
 *   block_q4_0 { uint16_t d (f16 scale); uint8_t qs[16]; }          18 bytes, x = d * (q - 8),
 *       element j (0..15) in the low nibble of qs[j], element j+16 in the high nibble of qs[j]
 * Row lengths must be multiples of 32.
 *
 * Encoding follows ggml's reference quantizers (quantize_row_q8_0_ref / quantize_row_q4_0_ref)
 * exactly, float32 arithmetic and rounding included; the vector versions reproduce them bit for bit.
 */
#ifndef GLMBENCH_QUANT_H
#define GLMBENCH_QUANT_H
#include <stdint.h>

#define GB_QK 32

typedef struct { uint16_t d; int8_t qs[GB_QK]; } gb_block_q8_0;
typedef struct { uint16_t d; uint8_t qs[GB_QK / 2]; } gb_block_q4_0;

/* Bytes for a row of n elements in `fmt` (GB_F32/GB_F16/GB_BF16/GB_Q8_0/GB_Q4_0); -1 if n is not
 * a whole number of blocks or fmt is unknown. */
int64_t gb_row_bytes(int fmt, int64_t n);

/* Encode / decode one row of n floats (n % 32 == 0 for the block formats). */
void gb_quantize_row_q8_0(const float *x, void *dst, int64_t n);
void gb_dequantize_row_q8_0(const void *src, float *y, int64_t n);
void gb_quantize_row_q4_0(const float *x, void *dst, int64_t n);
void gb_dequantize_row_q4_0(const void *src, float *y, int64_t n);

/* Generic: encode/decode a row in any cache/weight format (f32, f16, bf16, q8_0, q4_0).
 * gb_encode_row returns GB_EVALUE (with a message) if a block's scale overflows float16
 * (|x| > ~8.3e6 for q8_0, > ~5.2e5 for q4_0): ggml would store inf there and decode NaN. */
int gb_encode_row(int fmt, const float *x, void *dst, int64_t n);
int gb_decode_row(int fmt, const void *src, float *y, int64_t n);

/* Many rows at once (OpenMP over rows); dst/src rows are gb_row_bytes(fmt, k) apart. */
int gb_quantize_rows(int fmt, const float *x, void *dst, int64_t rows, int64_t k);
int gb_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k);

/* Quantized linear y[T, N] = x[T, K] . W^T (+ bias), W[N, K] stored as N rows of q8_0/q4_0 blocks.
 *
 * `compute` says how the dot products are done:
 *   GB_QC_AUTO  decode-sized T (< GB_QGEMM_MIN_T) uses GB_QC_Q8, larger T dequantizes panels of W and
 *               calls OpenBLAS sgemm (the f32 numerics)
 *   GB_QC_F32   weights dequantized in registers, float32 FMA with the float32 activations: exact
 *               up to float32 rounding against the dequantized weights
 *   GB_QC_Q8    activations quantized to q8_0 per row (as ggml does), integer block dot products
 *               (AVX-512 VNNI vpdpbusd / AVX2 vpmaddubsw), one float scale per block pair
 * `version` picks a numbered kernel (GB_QV_*) for tests and benchmarks; 0 = best compiled in.
 * Kernel versions (one launcher, gb_qlinear):
 *   1 ref_f32      portable scalar: decode each block to floats, float dot
 *   2 avx512_f32   AVX-512F: decode in registers, FMA
 *   3 ref_q8       portable scalar: int32 block dots against the q8_0 activation row
 *   4 avx2_q8      AVX2 vpmaddubsw/vpmaddwd block dots
 *   5 vnni_q8      AVX-512 VNNI vpdpbusd, two blocks per zmm
 *   6 blas_f32     dequantize panels of W to float32 and call OpenBLAS sgemm (prefill-sized T)
 */
enum { GB_QC_AUTO = 0, GB_QC_F32 = 1, GB_QC_Q8 = 2 };
enum { GB_QV_AUTO = 0, GB_QV_REF_F32 = 1, GB_QV_AVX512_F32 = 2, GB_QV_REF_Q8 = 3, GB_QV_AVX2_Q8 = 4,
       GB_QV_VNNI_Q8 = 5, GB_QV_BLAS_F32 = 6, GB_QV_COUNT = 7 };
#define GB_QGEMM_MIN_T 16

/* 1 if version v was compiled in (depends on -march), else 0. */
int gb_qversion_available(int v);
const char *gb_qversion_name(int v);

int gb_qlinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
               int64_t K, int compute, int version);

#endif

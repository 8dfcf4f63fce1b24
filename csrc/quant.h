/* quant.h: ggml block formats q8_0 and q4_0 (byte-exact with ggml-common.h), so GGUF tensors can
 * be used without conversion. Owned by the quantization work (csrc/quant.c); the KV cache and the
 * linear/MoE kernels call these row functions.
 *
 *   block_q8_0 { uint16_t d (f16 scale); int8_t qs[32]; }          34 bytes, x = d * q
 *   block_q4_0 { uint16_t d (f16 scale); uint8_t qs[16]; }          18 bytes, x = d * (q - 8),
 *       element j (0..15) in the low nibble of qs[j], element j+16 in the high nibble of qs[j]
 * Row lengths must be multiples of 32.
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

/* Generic: encode/decode a row in any cache/weight format (f32, f16, bf16, q8_0, q4_0). */
int gb_encode_row(int fmt, const float *x, void *dst, int64_t n);
int gb_decode_row(int fmt, const void *src, float *y, int64_t n);

#endif

/* quant.c: ggml q8_0 / q4_0 row encode and decode (scalar reference versions; the quantization
 * work adds the fused dot products and vector paths), and the generic row codec used by the KV
 * cache for every cache format. Rounding follows ggml's reference quantizers. */
#include "quant.h"

#include <math.h>
#include <string.h>

#include "common.h"

int64_t gb_row_bytes(int fmt, int64_t n) {
    switch (fmt) {
    case GB_F32: return 4 * n;
    case GB_F16:
    case GB_BF16: return 2 * n;
    case GB_Q8_0: return n % GB_QK ? -1 : n / GB_QK * (int64_t)sizeof(gb_block_q8_0);
    case GB_Q4_0: return n % GB_QK ? -1 : n / GB_QK * (int64_t)sizeof(gb_block_q4_0);
    default: return -1;
    }
}

void gb_quantize_row_q8_0(const float *x, void *dst, int64_t n) {
    gb_block_q8_0 *b = (gb_block_q8_0 *)dst;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float *xb = x + i * GB_QK;
        float amax = 0.0f;
        for (int j = 0; j < GB_QK; j++) amax = fmaxf(amax, fabsf(xb[j]));
        const float d = amax / 127.0f;
        const float id = d ? 1.0f / d : 0.0f;
        b[i].d = gb_f32_to_f16(d);
        for (int j = 0; j < GB_QK; j++) b[i].qs[j] = (int8_t)roundf(xb[j] * id);
    }
}

void gb_dequantize_row_q8_0(const void *src, float *y, int64_t n) {
    const gb_block_q8_0 *b = (const gb_block_q8_0 *)src;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float d = gb_f16_to_f32(b[i].d);
        for (int j = 0; j < GB_QK; j++) y[i * GB_QK + j] = d * (float)b[i].qs[j];
    }
}

void gb_quantize_row_q4_0(const float *x, void *dst, int64_t n) {
    gb_block_q4_0 *b = (gb_block_q4_0 *)dst;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float *xb = x + i * GB_QK;
        float amax = 0.0f, max = 0.0f; /* the signed value of largest magnitude, as ggml */
        for (int j = 0; j < GB_QK; j++)
            if (fabsf(xb[j]) > amax) { amax = fabsf(xb[j]); max = xb[j]; }
        const float d = max / -8.0f;
        const float id = d ? 1.0f / d : 0.0f;
        b[i].d = gb_f32_to_f16(d);
        for (int j = 0; j < GB_QK / 2; j++) {
            int q0 = (int)(xb[j] * id + 8.5f), q1 = (int)(xb[j + GB_QK / 2] * id + 8.5f);
            q0 = q0 > 15 ? 15 : (q0 < 0 ? 0 : q0);
            q1 = q1 > 15 ? 15 : (q1 < 0 ? 0 : q1);
            b[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void gb_dequantize_row_q4_0(const void *src, float *y, int64_t n) {
    const gb_block_q4_0 *b = (const gb_block_q4_0 *)src;
    for (int64_t i = 0; i < n / GB_QK; i++) {
        const float d = gb_f16_to_f32(b[i].d);
        for (int j = 0; j < GB_QK / 2; j++) {
            y[i * GB_QK + j] = d * (float)((b[i].qs[j] & 0x0f) - 8);
            y[i * GB_QK + j + GB_QK / 2] = d * (float)((b[i].qs[j] >> 4) - 8);
        }
    }
}

int gb_encode_row(int fmt, const float *x, void *dst, int64_t n) {
    if (gb_row_bytes(fmt, n) < 0) return gb_error(GB_EVALUE, "format %d cannot store a row of %ld elements", fmt, (long)n);
    switch (fmt) {
    case GB_F32: memcpy(dst, x, (size_t)n * 4); break;
    case GB_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = gb_f32_to_f16(x[i]); break;
    case GB_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = gb_f32_to_bf16(x[i]); break;
    case GB_Q8_0: gb_quantize_row_q8_0(x, dst, n); break;
    case GB_Q4_0: gb_quantize_row_q4_0(x, dst, n); break;
    }
    return GB_OK;
}

int gb_decode_row(int fmt, const void *src, float *y, int64_t n) {
    if (gb_row_bytes(fmt, n) < 0) return gb_error(GB_EVALUE, "format %d cannot store a row of %ld elements", fmt, (long)n);
    switch (fmt) {
    case GB_F32: memcpy(y, src, (size_t)n * 4); break;
    case GB_F16: for (int64_t i = 0; i < n; i++) y[i] = gb_f16_to_f32(((const uint16_t *)src)[i]); break;
    case GB_BF16: for (int64_t i = 0; i < n; i++) y[i] = gb_bf16_to_f32(((const uint16_t *)src)[i]); break;
    case GB_Q8_0: gb_dequantize_row_q8_0(src, y, n); break;
    case GB_Q4_0: gb_dequantize_row_q4_0(src, y, n); break;
    }
    return GB_OK;
}

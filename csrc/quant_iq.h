/* quant_iq.h: ggml's 32-value non-linear 4-bit formats iq4_nl and mxfp4 (byte-exact with
 * ggml-common.h), read as stored by the decode GEMV and the prefill GEMM (csrc/quant_iq.c).
 * Format ids are ggml's type numbers (GGMLQuantizationType).
 *
 *   block_iq4_nl { f16 d; uint8 qs[16]; }   18 bytes / 32 weights
 *       x[j] = d * kvalues_iq4nl[qs[j] & 15], x[j+16] = d * kvalues_iq4nl[qs[j] >> 4]
 *   block_mxfp4  { uint8 e; uint8 qs[16]; } 17 bytes / 32 weights (gpt-oss's expert format)
 *       x = d * kvalues_mxfp4[nibble] (same nibble order), kvalues_mxfp4 = E2M1 values doubled
 *       {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, ..., -12}, d = ggml's E8M0_TO_FP32_HALF(e) = 2^(e-128)
 *       (float bits (e-1)<<23 for e >= 2, 0x00200000<<e for e < 2): the halved scale makes up for
 *       the doubled table. e = 255 is 2^127 (finite; not OCP's NaN), as in ggml.
 * Row lengths must be multiples of 32.
 *
 * Activations are quantized per row to ggml's q8_0 (quantize_row_q8_0_ref), as ggml's CPU backend
 * does for both types. Per block an exact int32 sum isum = sum_j kvalue[j] * x[j] (the weights held
 * as kvalue + 128, unsigned, and 128 * sum(x_block) taken off), then p = (dw * dx) * (float)isum in
 * float32. The p of blocks 16c + perm[l] go to float lane l (perm = 0,4,8,12,1,5,9,13,2,...,15,
 * the order the VNNI reduction produces), lanes summed in block order, then the 16 lanes by halves
 * (l + 8, then + 4, + 2, + 1). Both versions compute exactly this, so they are bit-identical.
 *
 * Versions (GB_KV_* of quant_k.h): 1 ref (portable C), 2 vnni (AVX-512 VNNI vpdpbusd, nibbles
 * decoded with one vpshufb per block), 3 avx2 (AVX2 + FMA + F16C: the packed records, 8 rows per
 * ymm, nibbles decoded by vpshufb; iq4_nl's signed values times x by ggml's sign trick, mxfp4's
 * values + 12 (unsigned) times x with 12 * sum(x) taken off: the same isum; what auto runs where
 * VNNI is not compiled in; stored rows are repacked 2 groups at a time). */
#ifndef GLMBENCH_QUANT_IQ_H
#define GLMBENCH_QUANT_IQ_H
#include <stdint.h>

enum { GB_IQ4_NL = 20, GB_MXFP4 = 39 };

int gb_is_iqfmt(int fmt);
/* Bytes of a row of n elements; -1 if n is not whole blocks of 32 or fmt unknown. */
int64_t gb_iq_row_bytes(int fmt, int64_t n);
/* Decode rows to float32, bit for bit as ggml's dequantize_row_iq4_nl / _mxfp4. OpenMP over rows. */
int gb_iq_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k);
/* y[T, N] = x[T, K] . W^T (+ bias), W [N, K] as N rows of blocks as stored. */
int gb_iqlinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
                int64_t K, int version);

/* The repacked layout for the decode GEMV: per (group of 16 rows, block of 32) one record, the 16
 * rows' 16 nibble bytes interleaved 4 bytes per row per 64 (the operand of one vpdpbusd feeding
 * 16 rows) followed by their scales as stored: iq4_nl 288 bytes per 16 x 18, mxfp4 272 per 16 x 17
 * (no overhead but the rows padding N to a multiple of 16); records group by group. gb_iqrepack
 * only reads the stored rows. gb_iqlinear_packed computes exactly gb_iqlinear's arithmetic (lane r
 * of every vector is row r), bit-identical for both versions; T >= 16 (VNNI) decodes the packed
 * group into the prefill panel. */
int64_t gb_iqp_block_bytes(int fmt);
int64_t gb_iqp_bytes(int fmt, int64_t N, int64_t K);
int gb_iqrepack(int fmt, const void *w, void *packed, int64_t N, int64_t K);
int gb_iqlinear_packed(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                       int version);

/* For callers that split work over matrices x 16-row groups (csrc/moe_k.c): one token's activations
 * prepared once (q8 scratch of K/32 q8_0 blocks; xq gb_iqp_blocks(K) * 32 int8, dxp and xsp
 * gb_iqp_blocks(K) each; tokens back to back at those strides), then the 16 rows of group g of a
 * packed [N, K] matrix for T tokens: y[t * ldy + r], gb_iqlinear_packed's numbers. version 1 or 2
 * (resolved); GB_ENOMEM if the portable version cannot get its row buffer. */
int64_t gb_iqp_blocks(int64_t K);
void gb_iqp_prepare(const float *x, int64_t K, void *q8, int8_t *xq, float *dxp, int32_t *xsp);
int gb_iqp_rows(int fmt, const void *wp, int64_t N, int64_t K, int64_t g, const int8_t *xq, const float *dxp, const int32_t *xsp,
                const void *x8, int64_t T, float *y, int64_t ldy, int version);
/* The AVX2 version's 8-token tiles read the prepared activations of tokens [0, T / 8 * 8) interleaved
 * per block: x8, built once from T prepared tokens by gb_iqp_x8 (gb_iqp_x8_bytes(K, T) bytes, a whole
 * multiple per token: the records of the tokens from o0 start gb_iqp_x8_bytes(K, o0) in; 0 where the
 * AVX2 version is not compiled in). gb_iqp_rows with x8 NULL runs those tokens in smaller tiles. */
int64_t gb_iqp_x8_bytes(int64_t K, int64_t T);
void gb_iqp_x8(const int8_t *xq, const float *dxp, const int32_t *xsp, int64_t K, int64_t T, void *x8);
/* One token (T = 1) against group g1 of packed [N1, K] w1 and group g2 of packed [N2, K] w2 side by
 * side, two record streams (the dense GEMV's loop: routed experts' gate and up, or two down groups):
 * 16 outputs each to y1 / y2. Returns 1 when done (the AVX2 version, both groups whole), 0 when the
 * caller should run gb_iqp_rows on each instead; the same bits either way. */
int gb_iqp_gemv_pair(int fmt, const void *w1, int64_t N1, int64_t g1, float *y1, const void *w2, int64_t N2, int64_t g2, float *y2,
                     int64_t K, const int8_t *xq, const float *dxp, const int32_t *xsp, int version);

#endif

/* qgemm.h: integer GEMM/GEMV on q8_0 / q4_0 weights repacked once into a 16-row interleaved layout
 * (the layout ggml's CPU "repack" buffers use for the same reason: the micro-kernel reads one
 * weight stream and every zmm load feeds 16 output rows).
 *
 * Packed layout of a weight matrix W[N, K] (nb = K/32 blocks per row, G = ceil(N/16) groups of 16
 * rows; rows past N are zero weights with scale 0):
 *   group g, block b, at offset (g * nb + b) * 16 * block_bytes:
 *     16 x f16 scales d[r] (32 bytes), rows r = 16g .. 16g+15
 *     q8_0: 8 x 64 bytes; chunk j, lane r, byte p = (uint8)(q[r][4j + p] + 128)
 *     q4_0: 4 x 64 bytes; chunk j, lane r, byte p = q[r][4j + p] | q[r][16 + 4j + p] << 4 (nibbles
 *           0..15 as stored, element 16+.. in the high nibble)
 * so the packed matrix has exactly 16 * G * row_bytes bytes (the ggml bytes plus the padding rows).
 * Both formats are stored unsigned for vpdpbusd (u8 x s8): the zero point (128 or 8) times the
 * block sum of the activation's int8 values comes off once per block, as the accumulator's start.
 *
 * Activations are quantized to q8_0 per row (ggml's reference rounding, scale rounded to f16) as
 * ggml's CPU backend does for these weight types.
 *
 * Versions: 1 ref (portable scalar, any build), 2 vnni (AVX-512 VNNI), 3 avx2 (AVX2 + FMA + F16C:
 * vpmaddubsw / vpmaddwd, the same integers and float steps); 0 = best compiled in (vnni, else avx2,
 * else ref). */
#ifndef GLMBENCH_QGEMM_H
#define GLMBENCH_QGEMM_H
#include <stdint.h>

#define GB_QPACK_ROWS 16
enum { GB_QG_AUTO = 0, GB_QG_REF = 1, GB_QG_VNNI = 2, GB_QG_AVX2 = 3, GB_QG_COUNT = 4 };

/* Bytes of the packed form of an [N, K] matrix in fmt (q8_0/q4_0); -1 if K is not whole blocks. */
int64_t gb_qpacked_bytes(int fmt, int64_t N, int64_t K);

/* ggml rows (N x row_bytes) -> packed (gb_qpacked_bytes). */
int gb_qrepack(int fmt, const void *w, void *packed, int64_t N, int64_t K);
/* packed -> ggml rows (the inverse, byte for byte). */
int gb_qunpack(int fmt, const void *packed, void *w, int64_t N, int64_t K);

int gb_qgemm_available(int version);
const char *gb_qgemm_name(int version);

/* y[T, N] = x[T, K] . W^T (+ bias) with W packed. OpenMP over 16-row groups (and token chunks). */
int gb_qgemm(int fmt, const float *x, const void *packed, const float *bias, float *y, int64_t T, int64_t N,
             int64_t K, int version);

/* Routed experts with packed q8_0/q4_0 weights: gate/up [E] x packed [F, D], down [E] x packed
 * [D, F] (each expert's matrices pe_* bytes apart). For each expert the tokens routed to it are
 * gathered, their activations quantized once, run through gate and up, SiLU(g) * u quantized
 * again, through down, and added into y[T, D] (zeroed here) weighted by topk_weight. counts[E]
 * gets the tokens per expert. No Python per expert. */
int gb_qmoe(int fmt, const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k,
            const void *gate, const void *up, const void *down, int64_t E, int64_t F, int64_t D, float *y,
            int64_t *counts, int version);

#endif

/* quant_k.h: ggml's K-quant super-block formats q2_K, q3_K, q4_K, q5_K, q6_K and iq4_xs (byte-exact with
 * ggml-common.h), read as stored by the decode GEMV and the prefill GEMM (csrc/quant_k.c).
 * Format ids are ggml's own type numbers (GGMLQuantizationType), next to common.h's GB_Q8_0/GB_Q4_0.
 *
 *   block_q4_K { f16 d, dmin; uint8 scales[12]; uint8 qs[128]; }              144 bytes / 256 weights
 *       8 sub-blocks of 32: 6-bit scale sc and min m (packed in scales[12]); x = d*sc*q - dmin*m,
 *       q in 0..15: element 64c+l (l < 32) in the low nibble of qs[32c+l], 64c+32+l in its high one
 *   block_q5_K { f16 d, dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128]; } 176 bytes
 *       as q4_K with a fifth bit: element 64c+l gets bit 2c of qh[l], 64c+32+l bit 2c+1; q in 0..31
 *   block_q6_K { uint8 ql[128]; uint8 qh[64]; int8 scales[16]; f16 d; }        210 bytes
 *       16 sub-blocks of 16 with an int8 scale each; x = d*sc*(q - 32), q in 0..63
 *   block_q2_K { uint8 scales[16]; uint8 qs[64]; f16 d, dmin; }                84 bytes
 *       16 sub-blocks of 16: 4-bit scale (low) and min (high) per byte; x = d*sc*q - dmin*m, q in 0..3,
 *       value 128n + 32j + m (m < 32) in bits 2j..2j+1 of qs[32n + m]
 *   block_q3_K { uint8 hmask[32]; uint8 qs[64]; uint8 scales[12]; f16 d; }      110 bytes
 *       2-bit values as q2_K plus bit 4n + j of hmask[m] on top (value - 4 when it is clear),
 *       16 6-bit scales stored + 32; x = d*(sc - 32)*(q - 4) with q the 3-bit value, 0..7
 *   block_iq4_xs { f16 d; uint16 scales_h; uint8 scales_l[4]; uint8 qs[128]; } 136 bytes
 *       8 sub-blocks of 32 with a 6-bit scale ls (4 low bits in scales_l, 2 in scales_h); 4-bit
 *       indices into ggml's non-linear grid kvalues_iq4nl (low nibbles the first 16 values of a
 *       sub-block); x = d*(ls - 32)*kvalue. Held as kvalue + 128 (unsigned), the 128 coming off
 *       through the 16-value sums like the mins of the other formats.
 * Row lengths must be multiples of 256.
 *
 * Activations are quantized per row to ggml's q8_K (quantize_row_q8_K_ref: float32 scale
 * d = max/-127 of the signed value of largest magnitude, int8 values rounded to nearest even,
 * sums of each 16 values), as ggml's CPU backend does for these weight types. Each super-block's
 * dot product is two exact int32 sums, isum = sum_c sc[c] * sum_j q[j] x[j] and
 * msum = sum_c mn[c] * bsum[c] (mn = dmin-scaled mins for q2_K/q4_K/q5_K, 32 * sc for q6_K, 4 * sc for q3_K), combined
 * in float32 as (d*dx)*isum - (dm*dx)*msum and added in block order. q6_K, q3_K and iq4_xs, whose
 * msum is only the offset of the stored values (d = dm), take the exact int32 difference once:
 * (d*dx)*(isum - msum), ggml's own form for them (one rounding where the two products took three;
 * since 2026-12-02, q3_K since 2026-12-04, issue 28). Every kernel version computes these the same way, so the portable
 * and SIMD versions give bit-identical outputs.
 *
 * Versions: 1 ref (portable C, any build), 2 vnni (AVX-512 VNNI vpdpbusd, super-blocks decoded in
 * registers), 3 avx2 (AVX2 + FMA + F16C: the repacked GEMV/GEMM of every K format by vpmaddubsw and
 * vpmaddwd, 8 rows per ymm; every other format and the stored layout run the portable code under
 * it); 0 = best compiled in (vnni, else avx2, else ref). */
#ifndef GLMBENCH_QUANT_K_H
#define GLMBENCH_QUANT_K_H
#include <stddef.h>
#include <stdint.h>

#define GB_QKK 256
enum { GB_Q2_K = 10, GB_Q3_K = 11, GB_Q4_K = 12, GB_Q5_K = 13, GB_Q6_K = 14, GB_IQ4_XS = 23 };
enum { GB_KV_AUTO = 0, GB_KV_REF = 1, GB_KV_VNNI = 2, GB_KV_AVX2 = 3, GB_KV_COUNT = 4 };

/* ggml's block_q8_K: float32 scale, 256 int8 values, 16 sums of 16 values. 292 bytes. */
typedef struct {
    float d;
    int8_t qs[GB_QKK];
    int16_t bsums[GB_QKK / 16];
} gb_block_q8_K;

int gb_is_kfmt(int fmt);
/* Bytes of a row of n elements in a K format; -1 if n is not whole super-blocks or fmt unknown. */
int64_t gb_k_row_bytes(int fmt, int64_t n);

/* Decode rows of a K format to float32, bit for bit as ggml's dequantize_row_* (and the gguf
 * package's NumPy dequantizer). OpenMP over rows. */
int gb_k_dequantize_rows(int fmt, const void *src, float *y, int64_t rows, int64_t k);

/* One row of k floats (k % 256 == 0) -> k/256 q8_K blocks, as ggml's reference. */
void gb_quantize_row_q8_K(const float *x, gb_block_q8_K *y, int64_t k);

int gb_kversion_available(int v);
const char *gb_kversion_name(int v);
/* what version 0 (auto) runs: vnni where compiled in, else avx2, else ref */
int gb_kversion_best(void);

/* y[T, N] = x[T, K] . W^T (+ bias), W [N, K] as N rows of K-format super-blocks as stored. */
int gb_klinear(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N,
               int64_t K, int version);


/* ---- repacked layout for the decode GEMV (every K format) -----------------------------------------
 * Made once from the stored rows (gb_krepack; the source is only read): 16 rows interleaved per
 * super-block, one record of gb_kp_block_bytes(fmt) bytes per (group of 16 rows, super-block),
 * records group by group, so a thread's rows are one contiguous stream. A record holds the 4-bit
 * parts of the 16 rows' values interleaved 4 bytes per row per 64 (the operand of one vpdpbusd that
 * feeds 16 rows), the fifth bit (q5_K, one bit per value, 4 zmm's in a byte) or the 2 high bits
 * (q6_K), the scales and mins
 * decoded to int8 per (sub-block, row) and the f16 d/dmin of the 16 rows: q4_K 2368 bytes per
 * 16 x 144 (+2.8%), q5_K 2880 per 16 x 176 (+2.3%), q6_K 3360 per 16 x 210 (+0%), iq4_xs 2208 per
 * 16 x 136 (+1.5%), q2_K 1344 per 16 x 84 (+0%; its 2-bit values 4 fields per byte, scale | min
 * << 4 as stored), q3_K 1824 per 16 x 110 (+3.6%; 2-bit planes, third bits as byte masks, int8
 * scales), plus the zero rows that pad N to a multiple of 16. The arithmetic is the one
 * above, lane r of every vector being row r, so results are bit-identical to gb_klinear on the
 * stored rows, for both versions. Layout details in csrc/quant_k.c. */
int gb_kp_is_fmt(int fmt);
/* bytes of one record; of a whole [N, K] matrix (-1 if fmt has no repacked layout or K is not whole super-blocks) */
int64_t gb_kp_block_bytes(int fmt);
int64_t gb_kp_bytes(int fmt, int64_t N, int64_t K);
/* stored rows w [N, K] -> packed (gb_kp_bytes bytes). OpenMP over groups. */
int gb_krepack(int fmt, const void *w, void *packed, int64_t N, int64_t K);
/* y[T, N] = x[T, K] . W^T (+ bias) with W repacked; T < 64 the interleaved GEMV/GEMM kernel, T >= 64
 * (VNNI) the prefill panels decoded from the packed records */
int gb_klinear_packed(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                      int version);
/* the same, with nonfinite != NULL also checking x while quantizing it (one pass, not a separate scan):
 * a NaN or inf sets *nonfinite = 1 and returns GB_EVALUE with nothing computed (the caller names the
 * first one); NULL: no check, as gb_klinear_packed */
int gb_klinear_packed_chk(int fmt, const float *x, const void *wp, const float *bias, float *y, int64_t T, int64_t N, int64_t K,
                          int version, int *nonfinite);
/* the 16 rows of group g of a packed [N, K] matrix (masked at N) for T tokens of q8_K activations
 * xq (K/256 blocks each): y[t * ldy + r] (+ bias[r]); for callers that split work over matrices x groups
 * (csrc/moe_k.c). version 1 or 2 (resolved). */
void gb_kp_rows(int fmt, const void *wp, int64_t N, int64_t K, int64_t g, const gb_block_q8_K *xq, int64_t T, float *y,
                int64_t ldy, const float *bias, int version);
/* One token (T = 1, no bias): group g1 of packed [N1, K] matrix w1 into y1[0..15] and group g2 of
 * [N2, K] matrix w2 into y2[0..15], read side by side (two streams), where the version and format have
 * such a loop (AVX2, q4_K / q5_K / q6_K / iq4_xs) and both groups are whole: returns 1. Else nothing is done,
 * returns 0 (the caller runs gb_kp_rows on each). The same bits as gb_kp_rows. */
int gb_kp_gemv_pair(int fmt, const void *w1, int64_t N1, int64_t g1, float *y1, const void *w2, int64_t N2, int64_t g2, float *y2,
                    int64_t K, const gb_block_q8_K *xq, int version);

/* Prefill panels on a packed matrix, for callers that run several matrices' work items in one
 * parallel region (csrc/moe_k.c). Only where gb_kp_panel_ok(version) (the VNNI version). The
 * activations: q8_K rows, then gb_kp_panel_prep_x(fmt, row, K) on each (in place; rows prepared
 * for one format serve every format of the same gb_kp_panel_x_kind). Step s2 computes groups
 * 2 s2 and 2 s2 + 1 (when < ceil(N / 16)) of W [N, K] for T tokens: y[t * ldy + n], n in those
 * rows (masked at N), with `scratch` a 64-byte aligned buffer of gb_kp_panel_scratch(K) bytes of
 * the calling thread's own. Bit-identical to gb_klinear_packed. */
int gb_kp_panel_ok(int version);
size_t gb_kp_panel_scratch(int64_t K);
int gb_kp_panel_x_kind(int fmt);
void gb_kp_panel_prep_x(int fmt, gb_block_q8_K *xq, int64_t K);
void gb_kp_panel_step(int fmt, const void *wp, int64_t N, int64_t K, int64_t s2, const gb_block_q8_K *xq, int64_t T, float *y,
                      int64_t ldy, void *scratch);

#endif

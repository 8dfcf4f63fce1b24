/* attention_mla.h: Multi-head Latent Attention (DeepSeek-V2 / GLM-4.7-Flash) over an MLA cache that
 * holds, per token, the latent c (kv_lora_rank R, after kv_a_layernorm) and the shared rope key
 * (Dr, already rotated). kv_b [H*(Dn+Dv)][R] expands c to head h's k_nope = W_k,h c (rows
 * h*(Dn+Dv) .. +Dn) and v = W_v,h c (the next Dv rows).
 *
 * Strategies (same numbers up to float32 rounding):
 *   GB_MLA_NAIVE     decompress the cache to per-head K = [k_nope, k_rope] and V every call (in chunks
 *                    of tokens, so memory stays bounded), then ordinary attention per head.
 *   GB_MLA_ABSORBED  q_lat,h = W_k,h^T q_nope,h; attention as MQA over [c, k_rope] (R + Dr) keys and
 *                    c (R) values, all H heads sharing each cached row; out_h = W_v,h o_lat,h.
 *                    Threads split the query rows (heads); each reads the whole cache.
 *   GB_MLA_FLASH     absorbed, with the cache split across threads (partial softmax per split, then
 *                    a combine: flash-decoding).
 */
#ifndef GLMBENCH_ATTENTION_MLA_H
#define GLMBENCH_ATTENTION_MLA_H
#include <stdint.h>

#include "kvcache.h"

enum { GB_MLA_NAIVE = 0, GB_MLA_ABSORBED = 1, GB_MLA_FLASH = 2, GB_MLA_N_STRATEGIES = 3 };
/* Their names, indexed by the enum: the bindings parse names with this table and the module
 * exports it as `_core.MLA_STRATEGIES` (glmbench.vocab.MLA_STRATEGIES must equal it; a test checks). */
static const char *const gb_mla_strategy_names[GB_MLA_N_STRATEGIES] = {"naive", "absorbed", "flash"};

/* q_nope[T][H][Dn], q_rope[T][H][Dr] for the LAST T tokens held at `layer`; kv_b [H*(Dn+Dv)][R] in
 * format wfmt (GB_F32, GB_F16 or GB_BF16); scale <= 0 means 1/sqrt(Dn + Dr); n_splits <= 0 picks a default (flash only).
 * -> out[T][H][Dv]. */
int gb_mla_attention(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                     int64_t H, int64_t Dn, int64_t Dv, const void *kv_b, int wfmt, float scale, int strategy,
                     int64_t n_splits, float *out);

/* kv_b as GGUF deepseek2 files store it, split (llama.cpp's MLA layout): k_b [H][R][Dn] (W_k,h
 * transposed: R rows of Dn per head) and v_b [H][Dv][R], each in its own format as stored (f32, f16,
 * bf16, q8_0, q4_0, the K formats for rows of whole super-blocks, iq4_nl, mxfp4). Decode (T = 1,
 * absorbed/flash) reads them as stored: q_lat[h] = k_b[h] . q_nope[h] and out[h] = v_b[h] . o_lat[h]
 * with the format's own GEMV (activations quantized per block as ggml does). Prefill and the naive
 * strategy join them into a float32 kv_b for the call (gb_mla_kv_b_f32) and run gb_mla_attention.
 * v_packed (may be NULL): v_b in a K format repacked per head (gb_krepack of each [Dv, R]; Dv a multiple
 * of 16), read at decode by gb_kp_rows (bit-identical to the stored rows' GEMV).
 * k_packed (may be NULL): k_b in q8_0/q4_0 packed per head (gb_qrepack of each [R, Dn], csrc/qgemm.h),
 * read at decode by gb_qgemm: the same integer block dots as the stored rows' GEMV, the float32 sums
 * in qgemm's order (within float32 rounding of it; the portable versions of the two agree bit for bit). */
int gb_mla_attention_kb_vb(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                           int64_t H, int64_t Dn, int64_t Dv, const void *k_b, int kfmt, const void *v_b, int vfmt,
                           const void *v_packed, const void *k_packed, float scale, int strategy, int64_t n_splits,
                           float *out);
/* The one place the split pair becomes what the joined paths need: kv_b [H*(Dn+Dv)][R] float32
 * (head h: rows h*(Dn+Dv) + i = column i of k_b[h], then the Dv rows of v_b[h]). */
int gb_mla_kv_b_f32(const void *k_b, int kfmt, const void *v_b, int vfmt, int64_t H, int64_t Dn, int64_t Dv, int64_t R,
                    float *kv_b);
/* Absorbed/flash with an f16 cache, T = 1 or T x H <= 40 query rows, on AVX-512 or AVX2 + F16C builds: the f16 decode tile
 * (rows widened in registers, register-blocked scores and p*V; float32 arithmetic as the float32
 * tile). gb_mla_f16_tile_ok(): compiled in and on; gb_mla_set_f16_tile(0) sends those calls through
 * the float32 tile instead (tests, before/after timings). */
int gb_mla_f16_tile_ok(void);
void gb_mla_set_f16_tile(int on);
/* The absorbed/flash prefill's per-head products with a float32 kv_b (q_nope . W_k, o_lat . W_v^T)
 * on AVX-512 builds: packed 64-column panels and 6 x 64 register tiles (attention_mla.c mg_gemm)
 * rather than OpenBLAS sgemm. gb_mla_own_gemm_ok(): compiled in and on; gb_mla_set_own_gemm(0)
 * sends them back to OpenBLAS (tests, before/after timings). */
int gb_mla_own_gemm_ok(void);
void gb_mla_set_own_gemm(int on);
/* bytes of one row of K elements in format fmt (-1: not storable) */
int64_t gb_mla_row_bytes(int fmt, int64_t K);

#endif

/* gbcuda.h: the C interface of the CUDA kernels (the kernels/ .cu files), called by kernels/cuda_module.c.
 *
 * Every function returns an int status: GB_OK (0), GB_EVALUE (a bad size or option: ValueError)
 * or GBC_ECUDA (a CUDA/cuBLAS error: RuntimeError). The message is in gbc_last_error(), e.g.
 *   "CUDA error 100 (cudaErrorNoDevice): no CUDA-capable device is detected, in
 *    cudaStreamCreateWithFlags (kernels/runtime.cu:61)".
 * Nothing here calls exit() or abort().
 *
 * Device pointers travel as `void *` (the binding passes Python ints). Storage: activations,
 * weights and caches bf16 (`uint16_t` bits), accumulation fp32; router weights and routing
 * weights fp32; positions int64; expert indices int32. All work goes on one stream (gbc_stream)
 * so that a sequence of launches can be captured as a CUDA graph.
 *
 * `version` arguments pick a numbered kernel (see each .cu file's header); 0 = the launcher's
 * choice (the fastest version that supports the shape).
 */
#ifndef GLMBENCH_GBCUDA_H
#define GLMBENCH_GBCUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { GBC_OK = 0, GBC_EVALUE = 1, GBC_ECUDA = 6 };

const char *gbc_last_error(void);

/* ---- runtime (runtime.cu) ---------------------------------------------------------------- */
int gbc_init(void);                                  /* device 0, the stream, cuBLAS (if built) */
int gbc_device_count(int *n);
int gbc_device_info(char *name, size_t name_len, int *sm_count, int *cc_major, int *cc_minor,
                    size_t *total_mem, size_t *l2_bytes, int *smem_optin);
int gbc_mem_info(size_t *free_b, size_t *total_b);
int gbc_have_cublas(void);                           /* 1 if compiled with cuBLAS */
int gbc_malloc(void **p, size_t n);
int gbc_free(void *p);
int gbc_upload(void *dst, const void *src, size_t n);      /* synchronous */
int gbc_download(void *dst, const void *src, size_t n);    /* synchronous */
int gbc_copy(void *dst, const void *src, size_t n);        /* device to device, on the stream */
int gbc_fill_u16(void *dst, uint16_t value, size_t count); /* e.g. 0x7FC0 = bf16 NaN poison */
int gbc_fill_u32(void *dst, uint32_t value, size_t count);
int gbc_random_bf16(void *dst, size_t count, uint64_t seed, float scale); /* uniform(-scale, scale) */
int gbc_synchronize(void);
int gbc_event_create(void **ev);
int gbc_event_destroy(void *ev);
int gbc_event_record(void *ev);
int gbc_event_elapsed(void *start, void *stop, float *ms);
int gbc_capture_begin(void);
int gbc_capture_end(void **graph_exec);
int gbc_graph_launch(void *graph_exec);
int gbc_graph_destroy(void *graph_exec);

/* ---- norm.cu ----------------------------------------------------------------------------- */
int gbc_rms_norm(const void *x, const void *w, void *y, int64_t rows, int64_t dim, float eps, int version);

/* ---- rope.cu: layout 0 = interleaved pairs, 1 = half (rotate_half) ------------------------ */
int gbc_rope(const void *x, const int64_t *pos, void *y, int64_t T, int64_t H, int64_t Dh, double theta,
             int64_t rot_dim, int64_t rot_offset, int layout, int version);

/* ---- linear.cu: y[T, N] = x[T, K] . w[N, K]^T (+ bias[N]); all bf16 ------------------------ */
int gbc_linear(const void *x, const void *w, const void *bias, void *y, int64_t T, int64_t N, int64_t K,
               int version);
/* The decode GEMV with fusions: y = RMSNorm(x; norm_w, eps) . w^T (+ bias) (+ residual[T, N]);
 * norm_w / residual NULL to skip; only version 0/2 (T <= 8). */
int gbc_linear_ex(const void *x, const void *w, const void *bias, void *y, int64_t T, int64_t N, int64_t K,
                  const void *norm_w, float eps, const void *residual, int version);
/* h[T, F] = silu(g[T, F]) * u[T, F]; g and u may be the two halves of one [T, 2F] row when
 * ld = 2F (fused gate_up). */
int gbc_silu_mul(const void *g, const void *u, void *h, int64_t T, int64_t F, int64_t ld_in, int version);
int gbc_add(const void *a, const void *b, void *y, int64_t n);  /* y = a + b (residuals) */
/* h[T, F] = silu(x . wg^T) * (x . wu^T) in one pass, T <= 8 (decode SwiGLU). */
int gbc_swiglu_gemv(const void *x, const void *wg, const void *wu, void *h, int64_t T, int64_t F, int64_t K);
/* Peak references measured in the same run as the kernels: a device copy and a cuBLAS GEMM. */
int gbc_copy_bench(void *dst, const void *src, size_t n);

/* ---- moe.cu ------------------------------------------------------------------------------ */
/* scoring 0 = sigmoid (+ bias chooses), 1 = softmax. group_score: how a group is scored when
 * n_group > 1, 0 = the sum of its top-2 choices (goes with sigmoid: noaux_tc), 1 = its max choice
 * (goes with softmax: DeepSeek-V2 group_limited_greedy); other pairs are a ValueError, as on the
 * CPU. logits fp32 from bf16 x and fp32 w_r, into logits_ws[T, E] (device workspace). */
int gbc_moe_route(const void *x, const float *w_r, const float *bias, int32_t *topk_idx, float *topk_w,
                  int64_t T, int64_t D, int64_t E, int64_t k, int scoring, int64_t n_group,
                  int64_t topk_group, int group_score, int norm_topk, float scale, float *logits_ws,
                  int version);
/* Stable counting sort of the T*k assignments by expert (ties keep token order). Outputs (device):
 * counts[E] int64, offsets[E+1] int32, sorted_tok[T*k] int32 (source token of each sorted row),
 * slot_of[T*k] int32 (sorted row of assignment t*k+j), tiles[2 * gbc_moe_max_tiles(T*k, E)] int32
 * ((expert, first row) of each 64-row tile of the grouped GEMM), n_tiles[1] int32. */
int64_t gbc_moe_max_tiles(int64_t rows, int64_t E);
int gbc_moe_permute(const int32_t *topk_idx, int64_t T, int64_t k, int64_t E, int64_t *counts,
                    int32_t *offsets, int32_t *sorted_tok, int32_t *slot_of, int32_t *tiles, int32_t *n_tiles);
int gbc_moe_gather(const void *x, const int32_t *sorted_tok, void *xs, int64_t rows, int64_t D);
/* ys[rows, N] = xs[rows, K] . W[e(row), N, K]^T, rows grouped by expert through offsets. */
int gbc_moe_grouped_linear(const void *xs, const void *w, void *ys, const int32_t *offsets,
                           const int32_t *tiles, const int32_t *n_tiles, int64_t rows, int64_t E,
                           int64_t N, int64_t K, int version);
/* Decode: h[rows, F] = silu(x[sorted_tok[row]] . Wg[e(row)]^T) * (x[...] . Wu[e(row)]^T), the
 * gather, both grouped GEMVs and silu_mul in one launch. */
int gbc_moe_swiglu(const void *x, const int32_t *sorted_tok, const void *wg, const void *wu, void *h,
                   const int32_t *offsets, int64_t rows, int64_t E, int64_t F, int64_t D);
/* y[t, :] = sum_j topk_w[t, j] * ys[slot_of[t*k + j], :] (+ shared[t, :]) (+ residual[t, :]);
 * shared / residual NULL to skip. */
int gbc_moe_unpermute(const void *ys, const int32_t *slot_of, const float *topk_w, const void *shared,
                      const void *residual, void *y, int64_t T, int64_t k, int64_t D);

/* ---- kvcache.cu: paged rows -------------------------------------------------------------- */
/* pages: [n_pages, page_size, row_width] bf16; table[i] = page holding tokens
 * [i*page_size, (i+1)*page_size). Writes src[T, src_width] into columns
 * [col_off, col_off+src_width) of tokens start..start+T-1. */
int gbc_paged_append(void *pages, const int32_t *table, int64_t page_size, int64_t row_width,
                     int64_t col_off, const void *src, int64_t src_width, int64_t T, int64_t start);
/* dst[L, width] = columns [col_off, col_off+width) of tokens 0..L-1 (naive MLA's expansion). */
int gbc_paged_gather(const void *pages, const int32_t *table, int64_t page_size, int64_t row_width,
                     int64_t col_off, void *dst, int64_t width, int64_t L);

/* ---- attention_gqa.cu -------------------------------------------------------------------- */
/* q[T, Hq, Dh] bf16; K pages [., page, Hkv, Dh], V pages [., page, Hkv, Dv]; the T queries are the
 * last T of the L cached tokens (causal). out[T, Hq, Dv] bf16. ws: fp32 workspace of
 * gbc_gqa_workspace_bytes(). n_splits 0 = choose. */
size_t gbc_gqa_workspace_bytes(int64_t T, int64_t Hq, int64_t Dv, int64_t n_splits);
/* What version 0 / n_splits 0 would choose for these sizes (assuming 16-byte aligned buffers). */
int gbc_gqa_plan(int64_t T, int64_t L, int64_t Hq, int64_t Hkv, int64_t Dh, int64_t Dv, int version,
                 int *version_out, int64_t *splits_out);
/* The split-K combine alone: ws = [m: rows x S][l: rows x S][acc: rows x S x Dv] floats as the split
 * kernels write them; out[rows, Dv] bf16. version 0 = 2 (S <= 256), 1 the one-block-per-row kernel. */
int gbc_attention_combine_ex(void *ws, void *out, int64_t rows, int64_t S, int64_t Dv, int version);
int gbc_gqa_attention(const void *q, const void *k_pages, const void *v_pages, const int32_t *table,
                      int64_t page_size, void *out, int64_t T, int64_t L, int64_t Hq, int64_t Hkv,
                      int64_t Dh, int64_t Dv, float scale, int64_t n_splits, void *ws, size_t ws_bytes,
                      int version);

/* ---- attention_mla.cu -------------------------------------------------------------------- */
/* Absorbed MLA over the latent cache: pages [., page, R + Dr] bf16 (latent then rope key).
 * q_lat[T, H, R] and q_rope[T, H, Dr] bf16 -> o_lat[T, H, R] bf16. */
size_t gbc_mla_workspace_bytes(int64_t T, int64_t H, int64_t R, int64_t n_splits);
int64_t gbc_mla_plan(int64_t T, int64_t L, int64_t H); /* n_splits 0 would choose this */
int gbc_mla_absorbed_attention(const void *q_lat, const void *q_rope, const void *pages, const int32_t *table,
                               int64_t page_size, void *o_lat, int64_t T, int64_t L, int64_t H, int64_t R,
                               int64_t Dr, float scale, int64_t n_splits, void *ws, size_t ws_bytes,
                               int version);
/* Per-head projections with kv_b [H*(Dn+Dv), R]:
 * absorb_q: q_lat[t, h, r] = sum_n q_nope[t, h, n] * kv_b[h*(Dn+Dv) + n, r]
 * absorb_o: out[t, h, v]   = sum_r o_lat[t, h, r]  * kv_b[h*(Dn+Dv) + Dn + v, r] */
int gbc_mla_absorb_q(const void *q_nope, const void *kv_b, void *q_lat, int64_t T, int64_t H, int64_t Dn,
                     int64_t Dv, int64_t R, int version); /* 0: 2 when T <= 8 and R % 64 == 0, else 1 */
int gbc_mla_absorb_o(const void *o_lat, const void *kv_b, void *out, int64_t T, int64_t H, int64_t Dn,
                     int64_t Dv, int64_t R);
/* Naive MLA's key/value assembly from expanded kv[L, H*(Dn+Dv)] and the cached rope keys
 * rope[L, Dr]: k[L, H, Dn+Dr] = [k_nope, rope], v[L, H, Dv]. */
int gbc_mla_split_kv(const void *kv, const void *rope, void *k, void *v, int64_t L, int64_t H, int64_t Dn,
                     int64_t Dr, int64_t Dv);
/* One launch for the glue between the projections and attention: q_nope[T, H, Dn] = q[..., :Dn];
 * q_rope[T, H, Dr] = rope(q[..., Dn:]); cache row of token start+t = [RMSNorm(c[t, :R]) * w,
 * rope(c[t, R:])]. layout 0 interleaved, 1 half. */
int gbc_mla_prepare(const void *q, const void *c, const void *kv_norm_w, float eps, const int64_t *pos, double theta,
                    int layout, void *pages, const int32_t *table, int64_t page_size, int64_t start, void *q_nope,
                    void *q_rope, int64_t T, int64_t H, int64_t Dn, int64_t Dr, int64_t R);
/* q[T, H, Dn+Dr] = [q_nope, q_rope] */
int gbc_concat_heads(const void *a, const void *b, void *y, int64_t rows, int64_t Da, int64_t Db);

#ifdef __cplusplus
}
#endif
#endif

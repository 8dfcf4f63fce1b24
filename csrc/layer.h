/* layer.h: one whole decoder layer in one C call (the path of a token through a layer, without
 * the Python interpreter between the kernels).
 *
 * glmbench/model.py's Layer.forward_py runs the same layer as a sequence of Python calls to the
 * op kernels; it stays the readable definition (and the path of a quantized layer's prefill: block
 * formats run here at decode only, T = 1). This file
 * runs the same kernels in the same order with the same arithmetic, so both paths give the same
 * numbers (tests/test_layer.py compares them). Why it exists: at decode every weight matrix is
 * streamed from DRAM once, which evicts the interpreter's own working set from the caches, and
 * each Python step after a stream then runs cold; measured at GLM-4.7-Flash's MoE layer (4K
 * context, 2 threads) that glue cost ~230 us of a ~5.1 ms layer.
 *
 * Layer = x + MLP(RMSNorm_post(x + Attn(RMSNorm_in(x)))), attention MLA (GLM-4.7-Flash,
 * DeepSeek-V2) or GQA (Qwen3, Llama, Mistral, Seed-OSS), MLP dense SwiGLU or MoE (router, routed
 * experts, shared expert). GQA may attend within a sliding window (Mistral, Gemma) with logit
 * soft-capping (Gemma 2) and its own rope base (Gemma 3's local layers: the plan's theta).
 * Gemma 2/3 (gemma = 1): the sandwich-norm layer, x1 = x + RMSNorm_post(Attn(RMSNorm_in(x))),
 * y = x1 + RMSNorm_post_ffn(GeGLU(RMSNorm_pre_ffn(x1))), norm weights already held as 1 + w. */
#ifndef GLMBENCH_LAYER_H
#define GLMBENCH_LAYER_H
#include <stdint.h>

#include "kvcache.h"
#include "moe.h"

/* A weight matrix: data and format; p == NULL: absent. GB_F32/GB_F16/GB_BF16: the elements, read by
 * gb_linear. A block format: p holds its packed layout (as quant.QTensor.repack makes it, the
 * matrix's 16-row groups one after another): GB_Q8_0/GB_Q4_0 read by gb_qgemm (csrc/qgemm.h),
 * q2_K..q6_K/iq4_xs by gb_klinear_packed (csrc/quant_k.h), iq4_nl/mxfp4 by gb_iqlinear_packed
 * (csrc/quant_iq.h): the calls quant.linear makes. A 3-D expert stack: E such buffers back to back. */
typedef struct {
    const void *p;
    int fmt;
} gb_wmat;

enum { GB_LAYER_GQA = 0, GB_LAYER_MLA = 1 };

typedef struct {
    int attention; /* GB_LAYER_GQA | GB_LAYER_MLA */
    int64_t D;     /* hidden size */
    float eps;     /* rms_norm_eps */
    const float *ln_in, *ln_post;
    /* rope (gb_rope's arguments); scale: the softmax scale (0: the kernel's default) */
    double theta, attn_factor;
    int64_t rot_dim;
    int rope_layout;
    const double *inv_freq; /* NULL: theta^(-2i/rot_dim) */
    float scale;
    /* GQA: window > 0: each query sees its last `window` keys (0: the cache layer's own, none =
     * full attention); softcap > 0: scores become softcap * tanh(s / softcap) (0: off) */
    int64_t window;
    float softcap;
    /* Gemma 2/3: sandwich norms (post-attention = ln_post, pre/post-feedforward) and GeGLU MLP */
    int gemma;
    const float *ln_pre_ffn, *ln_post_ffn;
    /* GQA: q/k/v [Hq*Dh | Hkv*Dh | Hkv*Dv, D], optional biases, optional per-head q/k RMSNorm */
    int64_t Hq, Hkv, Dh, Dv;
    gb_wmat wq, wk, wv;
    const float *bq, *bk, *bv, *q_norm, *k_norm;
    /* MLA: QL = q_lora_rank (0: one q_proj [H*(Dn+Dr), D]); q_a [QL, D], q_b [H*(Dn+Dr), QL],
     * kv_a [R+Dr, D], kv_b [H*(Dn+Dvm), R]; deinterleave: write the rotated rope dims evens then
     * odds (HF glm4_moe_lite, see attention._hf_deinterleaves) */
    int64_t H, Dn, Dr, Dvm, R, QL;
    gb_wmat q_a, q_b, q_proj, kv_a, kv_b;
    const float *q_a_bias, *kv_a_bias, *q_a_ln, *kv_a_ln;
    float latent_eps;
    int deinterleave;
    /* o_proj [D, heads*Dv] */
    gb_wmat wo;
    const float *bo;
    /* MLP: dense gate/up [F, D], down [D, F]; or MoE */
    int moe;
    int64_t F;
    gb_wmat gate, up, down;
    const float *router, *rbias; /* router [E, D] float32; rbias [E] or NULL */
    int64_t E, Fe, top_k, n_group, topk_group;
    int scoring, group_score, norm_topk;
    double rscale;
    gb_wmat eg, eu, ed; /* [E, Fe, D], [E, Fe, D], [E, D, Fe] */
    int has_shared;
    gb_shared_expert shared;
    /* Packed block-format matrices (quantized GGUF weights), decode only (T = 1: layer_forward refuses
     * more tokens; Layer.forward runs forward_py there). quant: any matrix is in a block format.
     * Stacked pairs (quant.fuse_rows: one matrix of both parts' rows, read by one call; p NULL: the
     * parts apart): qa_kva = q_a then kv_a, gate_up = gate then up, sgu = the shared expert's.
     * qshared: the shared expert as three wmats of width Fs (some in a block format; `shared` unused).
     * kv_split: MLA's kv_b as GGUF stores it (attention.KVBSplit): k_b [H, R, Dn] and v_b [H, Dv, R]
     * rows in formats kb_fmt / vb_fmt, with their packed copies (NULL: none), read by
     * gb_mla_attention_kb_vb (kv_b unused). */
    int quant, qshared, kv_split;
    gb_wmat qa_kva, gate_up, sgu, sg, su, sd;
    int64_t Fs;
    const void *k_b, *v_b, *k_packed, *v_packed;
    int kb_fmt, vb_fmt;
} gb_layer;

/* y[n_out, D] = the layer applied to x[T, D] at positions pos[T] (its last n_out rows), appending the
 * T tokens' keys to cache layer `layer` (kind and dims must match: the binding checks). Attention
 * runs on all T tokens; the feed-forward part only on the last n_out rows (1 <= n_out <= T; T: the
 * whole layer), as llama.cpp's graphs do in the last layer when only the last token's logits are
 * wanted (the rows dropped there feed nothing). counts[E] (MoE only, may be NULL) = (token, slot)
 * pairs per expert. mla_strategy: GB_MLA_NAIVE/ABSORBED/FLASH (a kv_split layer: ABSORBED or FLASH). A layer with
 * block-format matrices (L->quant) takes T = 1 only. */
int gb_layer_forward(const gb_layer *L, gb_kvcache *c, int64_t layer, const float *x, int64_t T, const int64_t *pos,
                     int mla_strategy, int64_t n_out, float *y, int64_t *counts);

#endif

/* layer.c: one decoder layer in one call (see layer.h). Each step names the Python line of
 * glmbench/model.py / attention.py / ops.py it mirrors; the kernels are the same ones. */
#include "layer.h"

#include <math.h>
#include <string.h>

#include "attention_gqa.h"
#include "attention_mla.h"
#include "common.h"
#include "linear.h"
#include "moe_k.h"
#include "norm.h"
#include "qgemm.h"
#include "quant_iq.h"
#include "quant_k.h"
#include "rope.h"

/* The rotated rope dims of rows [n][Dr] rewritten evens then odds (HF glm4_moe_lite). */
static void deinterleave_rows(float *a, int64_t n, int64_t Dr) {
    float tmp[Dr];
    for (int64_t r = 0; r < n; r++) {
        float *p = a + r * Dr;
        for (int64_t i = 0; i < Dr / 2; i++) {
            tmp[i] = p[2 * i];
            tmp[Dr / 2 + i] = p[2 * i + 1];
        }
        memcpy(p, tmp, (size_t)Dr * sizeof(float));
    }
}

/* dst[r][0, w) = src[r][off, off + w) for n rows of stride ld. */
static void take_cols(float *dst, const float *src, int64_t n, int64_t ld, int64_t off, int64_t w) {
    for (int64_t r = 0; r < n; r++) memcpy(dst + r * w, src + r * ld + off, (size_t)w * sizeof(float));
}

/* y[T, N] = x[T, K] . W^T (+ bias) by the kernel quant.linear / ops.linear call for W's format (the
 * packed layouts, default versions). A block format quantizes x: non-finite x is an error there, as
 * the bindings' check makes it (forward_py raises the same ValueError kind). */
static int wlinear(const gb_wmat *w, const float *x, int64_t T, int64_t K, int64_t N, const float *bias, float *y) {
    if (gb_is_float_fmt(w->fmt)) return gb_linear(x, T, K, w->p, w->fmt, N, bias, y);
    for (int64_t i = 0; i < T * K; i++)
        if (!isfinite(x[i]))
            return gb_error(GB_EVALUE, "layer: x holds a non-finite value (NaN or inf) at index %ld before a block-format "
                            "matrix (format %d)", (long)i, w->fmt);
    if (w->fmt == GB_Q8_0 || w->fmt == GB_Q4_0) return gb_qgemm(w->fmt, x, w->p, bias, y, T, N, K, GB_QG_AUTO);
    if (gb_is_iqfmt(w->fmt)) return gb_iqlinear_packed(w->fmt, x, w->p, bias, y, T, N, K, GB_KV_AUTO);
    return gb_klinear_packed(w->fmt, x, w->p, bias, y, T, N, K, GB_KV_AUTO);
}

/* (a x + bias_a, b x + bias_b) into ya[T, Na], yb[T, Nb]: one call on their stacked matrix ab where
 * there is one (quant.linear_pair; rows are computed independently, so the same numbers) */
static int wlinear_pair(const gb_wmat *ab, const gb_wmat *a, const gb_wmat *b, const float *x, int64_t T, int64_t K,
                        int64_t Na, int64_t Nb, const float *bias_a, const float *bias_b, float *ya, float *yb) {
    int st;
    if (!ab->p) {
        if ((st = wlinear(a, x, T, K, Na, bias_a, ya))) return st;
        return wlinear(b, x, T, K, Nb, bias_b, yb);
    }
    float *t = (float *)gb_ws_malloc((size_t)(T * (Na + Nb)) * sizeof(float));
    if (!t) return gb_error(GB_ENOMEM, "layer: out of memory for a stacked pair's output");
    if (!(st = wlinear(ab, x, T, K, Na + Nb, NULL, t))) {
        take_cols(ya, t, T, Na + Nb, 0, Na);
        take_cols(yb, t, T, Na + Nb, Na, Nb);
    }
    gb_ws_free(t);
    return st;
}

/* ops.swiglu: y[T, D] = down(silu(gate x) * up x); float weights: gb_swiglu (_core.swiglu), otherwise
 * quant.swiglu's steps (the stacked gate + up gu where there is one, gb_silu_act, down) */
static int wswiglu(const gb_wmat *g, const gb_wmat *u, const gb_wmat *gu, const gb_wmat *d, const float *x, int64_t T,
                   int64_t D, int64_t F, float *y) {
    if (gb_is_float_fmt(g->fmt) && gb_is_float_fmt(u->fmt) && gb_is_float_fmt(d->fmt))
        return gb_swiglu(x, T, D, g->p, g->fmt, u->p, u->fmt, d->p, d->fmt, F, y);
    float *h = (float *)gb_ws_malloc((size_t)(T * F) * sizeof(float));
    float *hu = (float *)gb_ws_malloc((size_t)(T * F) * sizeof(float));
    int st;
    if (!h || !hu) st = gb_error(GB_ENOMEM, "layer: out of memory for the SwiGLU activations");
    else if (!(st = wlinear_pair(gu, g, u, x, T, D, F, F, NULL, NULL, h, hu))) {
        gb_silu_act(h, hu, T * F);
        st = wlinear(d, h, T, F, D, NULL, y);
    }
    gb_ws_free(h);
    gb_ws_free(hu);
    return st;
}

/* attention.mla_block: h (already input_layernorm-ed) -> a[T, D] */
static int mla_block(const gb_layer *L, gb_kvcache *c, int64_t layer, const float *h, int64_t T, const int64_t *pos,
                     int strategy, float *a) {
    const int64_t H = L->H, Dn = L->Dn, Dr = L->Dr, Dq = Dn + Dr, R = L->R, D = L->D;
    float *q = (float *)gb_ws_malloc((size_t)(T * H * Dq) * sizeof(float));
    float *qa = L->QL ? (float *)gb_ws_malloc((size_t)(T * L->QL) * sizeof(float)) : NULL;
    float *ckv = (float *)gb_ws_malloc((size_t)(T * (R + Dr)) * sizeof(float));
    float *lat = (float *)gb_ws_malloc((size_t)(T * R) * sizeof(float));
    float *kr = (float *)gb_ws_malloc((size_t)(T * Dr) * sizeof(float));
    float *kr2 = (float *)gb_ws_malloc((size_t)(T * Dr) * sizeof(float));
    float *qn = (float *)gb_ws_malloc((size_t)(T * H * Dn) * sizeof(float));
    float *qr = (float *)gb_ws_malloc((size_t)(T * H * Dr) * sizeof(float));
    float *qr2 = (float *)gb_ws_malloc((size_t)(T * H * Dr) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(T * H * L->Dvm) * sizeof(float));
    int st = GB_OK;
    if (!q || (L->QL && !qa) || !ckv || !lat || !kr || !kr2 || !qn || !qr || !qr2 || !o) {
        st = gb_error(GB_ENOMEM, "layer: out of memory for the MLA scratch");
        goto done;
    }
    /* q = q_b(RMSNorm(q_a x)) or q_proj x; [c, k_rope] = kv_a x (q_a and kv_a read the same h: one
     * call on their stacked matrix where there is one) */
    if (L->QL) {
        if ((st = wlinear_pair(&L->qa_kva, &L->q_a, &L->kv_a, h, T, D, L->QL, R + Dr, L->q_a_bias, L->kv_a_bias, qa, ckv)))
            goto done;
        if ((st = gb_rms_norm(qa, L->q_a_ln, qa, T, L->QL, L->latent_eps))) goto done;
        if ((st = wlinear(&L->q_b, qa, T, L->QL, H * Dq, NULL, q))) goto done;
    } else {
        if ((st = wlinear(&L->q_proj, h, T, D, H * Dq, NULL, q))) goto done;
        if ((st = wlinear(&L->kv_a, h, T, D, R + Dr, L->kv_a_bias, ckv))) goto done;
    }
    /* latent = kv_a_layernorm(c) */
    take_cols(lat, ckv, T, R + Dr, 0, R);
    if ((st = gb_rms_norm(lat, L->kv_a_ln, lat, T, R, L->latent_eps))) goto done;
    /* rope on q's last Dr dims and on k_rope */
    take_cols(qr, q, T * H, Dq, Dn, Dr);
    take_cols(qn, q, T * H, Dq, 0, Dn);
    if ((st = gb_rope(qr, qr2, pos, T, H, Dr, L->theta, Dr, 0, L->rope_layout, L->inv_freq, L->attn_factor))) goto done;
    take_cols(kr, ckv, T, R + Dr, R, Dr);
    if ((st = gb_rope(kr, kr2, pos, T, 1, Dr, L->theta, Dr, 0, L->rope_layout, L->inv_freq, L->attn_factor))) goto done;
    if (L->deinterleave) {
        deinterleave_rows(qr2, T * H, Dr);
        deinterleave_rows(kr2, T, Dr);
    }
    if ((st = gb_kvcache_append(c, layer, lat, kr2, T))) goto done;
    if (L->kv_split) /* attention.mla_attention with a KVBSplit (decode: its rows as stored, or packed) */
        st = gb_mla_attention_kb_vb(c, layer, qn, qr2, T, H, Dn, L->Dvm, L->k_b, L->kb_fmt, L->v_b, L->vb_fmt, L->v_packed,
                                    L->k_packed, L->scale, strategy, 0, o);
    else
        st = gb_mla_attention(c, layer, qn, qr2, T, H, Dn, L->Dvm, L->kv_b.p, L->kv_b.fmt, L->scale, strategy, 0, o);
    if (st) goto done;
    st = wlinear(&L->wo, o, T, H * L->Dvm, D, L->bo, a);
done:
    gb_ws_free(q);
    gb_ws_free(qa);
    gb_ws_free(ckv);
    gb_ws_free(lat);
    gb_ws_free(kr);
    gb_ws_free(kr2);
    gb_ws_free(qn);
    gb_ws_free(qr);
    gb_ws_free(qr2);
    gb_ws_free(o);
    return st;
}

/* attention.gqa_block: h -> a[T, D] */
static int gqa_block(const gb_layer *L, gb_kvcache *c, int64_t layer, const float *h, int64_t T, const int64_t *pos,
                     float *a) {
    const int64_t Hq = L->Hq, Hkv = L->Hkv, Dh = L->Dh, Dv = L->Dv, D = L->D;
    float *q = (float *)gb_ws_malloc((size_t)(T * Hq * Dh) * sizeof(float));
    float *k = (float *)gb_ws_malloc((size_t)(T * Hkv * Dh) * sizeof(float));
    float *v = (float *)gb_ws_malloc((size_t)(T * Hkv * Dv) * sizeof(float));
    float *q2 = (float *)gb_ws_malloc((size_t)(T * Hq * Dh) * sizeof(float));
    float *k2 = (float *)gb_ws_malloc((size_t)(T * Hkv * Dh) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(T * Hq * Dv) * sizeof(float));
    int st = GB_OK;
    if (!q || !k || !v || !q2 || !k2 || !o) {
        st = gb_error(GB_ENOMEM, "layer: out of memory for the GQA scratch");
        goto done;
    }
    if ((st = wlinear(&L->wq, h, T, D, Hq * Dh, L->bq, q))) goto done;
    if ((st = wlinear(&L->wk, h, T, D, Hkv * Dh, L->bk, k))) goto done;
    if ((st = wlinear(&L->wv, h, T, D, Hkv * Dv, L->bv, v))) goto done;
    if (L->q_norm && (st = gb_rms_norm(q, L->q_norm, q, T * Hq, Dh, L->eps))) goto done;
    if (L->k_norm && (st = gb_rms_norm(k, L->k_norm, k, T * Hkv, Dh, L->eps))) goto done;
    if ((st = gb_rope(q, q2, pos, T, Hq, Dh, L->theta, L->rot_dim, 0, L->rope_layout, L->inv_freq, L->attn_factor)))
        goto done;
    if ((st = gb_rope(k, k2, pos, T, Hkv, Dh, L->theta, L->rot_dim, 0, L->rope_layout, L->inv_freq, L->attn_factor)))
        goto done;
    if ((st = gb_kvcache_append(c, layer, k2, v, T))) goto done;
    if ((st = gb_gqa_attention_ex(c, layer, q2, T, Hq, L->scale, L->window, L->softcap, 0, o))) goto done;
    st = wlinear(&L->wo, o, T, Hq * Dv, D, L->bo, a);
done:
    gb_ws_free(q);
    gb_ws_free(k);
    gb_ws_free(v);
    gb_ws_free(q2);
    gb_ws_free(k2);
    gb_ws_free(o);
    return st;
}

/* ops.moe: route, then the routed and shared experts -> m[T, D]. Float experts: gb_moe_experts, with a
 * float shared expert in its parallel regions (_core.moe_experts); block-format experts: the one call
 * quant.moe_experts makes (gb_qmoe for q8_0/q4_0, gb_kmoe_packed for the K and IQ formats), then
 * m += the shared expert (qshared: ops.swiglu's steps), as ops.moe adds it. */
static int moe_block(const gb_layer *L, const float *h, int64_t T, float *m, int64_t *counts) {
    const int64_t D = L->D, n = T * L->top_k;
    int32_t *idx = (int32_t *)gb_ws_malloc((size_t)n * sizeof(int32_t));
    float *wt = (float *)gb_ws_malloc((size_t)n * sizeof(float));
    int64_t *cnt = counts ? counts : (int64_t *)gb_ws_malloc((size_t)L->E * sizeof(int64_t));
    int64_t *idx64 = NULL;
    float *s = NULL;
    int st = GB_OK;
    if (!idx || !wt || !cnt) {
        st = gb_error(GB_ENOMEM, "layer: out of memory for the router's output");
        goto done;
    }
    if ((st = gb_moe_route(h, T, L->D, L->router, L->E, L->top_k, L->scoring, L->rbias, L->n_group, L->topk_group,
                           L->group_score, L->norm_topk, L->rscale, idx, wt)))
        goto done;
    if (gb_is_float_fmt(L->eg.fmt))
        st = gb_moe_experts(h, T, D, idx, wt, L->top_k, L->eg.p, L->eg.fmt, L->eu.p, L->eu.fmt, L->ed.p, L->ed.fmt, L->E,
                            L->Fe, L->has_shared ? &L->shared : NULL, m, cnt);
    else {
        if (!(idx64 = (int64_t *)gb_ws_malloc((size_t)n * sizeof(int64_t)))) {
            st = gb_error(GB_ENOMEM, "layer: out of memory for the router's output");
            goto done;
        }
        for (int64_t i = 0; i < n; i++) idx64[i] = idx[i];
        if (L->eg.fmt == GB_Q8_0 || L->eg.fmt == GB_Q4_0)
            st = gb_qmoe(L->eg.fmt, h, idx64, wt, T, L->top_k, L->eg.p, L->eu.p, L->ed.p, L->E, L->Fe, D, m, cnt, GB_QG_AUTO);
        else
            st = gb_kmoe_packed(h, idx64, wt, T, L->top_k, L->eg.fmt, L->eg.p, L->eu.fmt, L->eu.p, L->ed.fmt, L->ed.p, L->E,
                                L->Fe, D, m, cnt, GB_KV_AUTO);
    }
    if (st || !L->qshared) goto done;
    if (!(s = (float *)gb_ws_malloc((size_t)(T * D) * sizeof(float)))) {
        st = gb_error(GB_ENOMEM, "layer: out of memory for the shared expert's output");
        goto done;
    }
    if ((st = wswiglu(&L->sg, &L->su, &L->sgu, &L->sd, h, T, D, L->Fs, s))) goto done;
    for (int64_t i = 0; i < T * D; i++) m[i] += s[i];
done:
    gb_ws_free(idx);
    gb_ws_free(wt);
    gb_ws_free(idx64);
    gb_ws_free(s);
    if (!counts) gb_ws_free(cnt);
    return st;
}

int gb_layer_forward(const gb_layer *L, gb_kvcache *c, int64_t layer, const float *x, int64_t T, const int64_t *pos,
                     int mla_strategy, int64_t n_out, float *y, int64_t *counts) {
    if (T <= 0) return T == 0 ? GB_OK : gb_error(GB_EVALUE, "layer: T=%ld must be >= 0", (long)T);
    if (n_out < 1 || n_out > T) return gb_error(GB_EVALUE, "layer: n_out=%ld must be in [1, T=%ld]", (long)n_out, (long)T);
    if (L->quant && T != 1)
        return gb_error(GB_EVALUE, "layer: a layer with block-format matrices runs one token at a time (decode), got T=%ld",
                        (long)T);
    if (L->kv_split && mla_strategy == GB_MLA_NAIVE)
        return gb_error(GB_EVALUE, "layer: the naive MLA strategy needs the joined float32 kv_b, not GGUF's k_b / v_b");
    const int64_t D = L->D, T0 = T - n_out; /* the first T0 rows leave after the attention */
    float *h = (float *)gb_ws_malloc((size_t)(T * D) * sizeof(float));
    float *a = (float *)gb_ws_malloc((size_t)(T * D) * sizeof(float));
    int st = GB_OK;
    if (!h || !a) {
        st = gb_error(GB_ENOMEM, "layer: out of memory for %ld x %ld activations", (long)T, (long)D);
        goto done;
    }
    /* h = input_layernorm(x); x = x + attn(h) */
    if ((st = gb_rms_norm(x, L->ln_in, h, T, D, L->eps))) goto done;
    st = L->attention == GB_LAYER_MLA ? mla_block(L, c, layer, h, T, pos, mla_strategy, a)
                                      : gqa_block(L, c, layer, h, T, pos, a);
    if (st) goto done;
    /* from here on the last n_out rows only: ak = a's, xk = x's */
    float *ak = a + T0 * D;
    const float *xk = x + T0 * D;
    const int64_t N = n_out;
    if (L->gemma) { /* _forward_gemma: x + post_attention_layernorm(a); x + post_ffn(geglu(pre_ffn(x))) */
        if ((st = gb_rms_norm(ak, L->ln_post, ak, N, D, L->eps))) goto done;
        for (int64_t i = 0; i < N * D; i++) ak[i] = xk[i] + ak[i];
        if ((st = gb_rms_norm(ak, L->ln_pre_ffn, h, N, D, L->eps))) goto done;
        if ((st = gb_geglu(h, N, D, L->gate.p, L->gate.fmt, L->up.p, L->up.fmt, L->down.p, L->down.fmt, L->F, y)))
            goto done;
        if ((st = gb_rms_norm(y, L->ln_post_ffn, y, N, D, L->eps))) goto done;
        for (int64_t i = 0; i < N * D; i++) y[i] = ak[i] + y[i];
        goto done;
    }
    for (int64_t i = 0; i < N * D; i++) ak[i] = xk[i] + ak[i];
    /* h = post_attention_layernorm(x); y = x + mlp(h) */
    if ((st = gb_rms_norm(ak, L->ln_post, h, N, D, L->eps))) goto done;
    if (L->moe) st = moe_block(L, h, N, y, counts);
    else st = wswiglu(&L->gate, &L->up, &L->gate_up, &L->down, h, N, D, L->F, y);
    if (st) goto done;
    for (int64_t i = 0; i < N * D; i++) y[i] = ak[i] + y[i];
done:
    gb_ws_free(h);
    gb_ws_free(a);
    return st;
}

/* linear_attn.c: the Gated DeltaNet layer's ops (Qwen3-Next / Qwen3.5 linear attention). The recurrence
 * runs one value head per OpenMP iteration, its tokens in order; the state is kept in the API's layout
 * [dk, dv] so every inner loop runs over dv, contiguous, and vectorises. The conv runs one output row
 * (token) per iteration, its inner loops over the channels. */
#include "linear_attn.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "linear.h" /* gb_silu_mul */

/* dst[0, n) = src * inv(src) * mul, inv = 1 / sqrt(sum(src^2) + eps) (l2norm; the sum in float64) or 1 */
static void scale_row(const float *src, float *dst, int64_t n, int l2norm, float eps, float mul) {
    float inv = 1.0f;
    if (l2norm) {
        double part[16] = {0};
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            for (int j = 0; j < 16; j++) part[j] += (double)src[i + j] * (double)src[i + j];
        double ss = 0.0;
        for (int j = 0; j < 16; j++) ss += part[j];
        for (; i < n; i++) ss += (double)src[i] * src[i];
        inv = (float)(1.0 / sqrt(ss + (double)eps));
    }
    for (int64_t i = 0; i < n; i++) dst[i] = src[i] * inv * mul;
}

int gb_gated_delta_rule(const float *q, const float *k, const float *v, const float *g, const float *beta,
                        const float *state0, float *o, float *state, int64_t T, int64_t Hk, int64_t Hv, int64_t dk,
                        int64_t dv, float scale, int l2norm, float l2_eps) {
    if (T < 1 || Hk < 1 || Hv < 1 || dk < 1 || dv < 1)
        return gb_error(GB_EVALUE, "gated_delta_rule: T, heads and head dims must be >= 1, got T=%ld Hk=%ld Hv=%ld dk=%ld dv=%ld",
                        (long)T, (long)Hk, (long)Hv, (long)dk, (long)dv);
    if (Hv % Hk)
        return gb_error(GB_EVALUE, "gated_delta_rule: the value heads (%ld) must be a multiple of the key heads (%ld)", (long)Hv,
                        (long)Hk);
    if (!isfinite(scale)) return gb_error(GB_EVALUE, "`scale` must be finite, got %g", (double)scale);
    if (!(l2_eps >= 0.0f) || !isfinite(l2_eps)) return gb_error(GB_EVALUE, "`l2_eps` must be finite and >= 0, got %g", (double)l2_eps);
    const int64_t nqk = gb_size_mul(gb_size_mul(T, Hk), dk), nst = gb_size_mul(gb_size_mul(Hv, dk), dv);
    if (nqk < 0 || nst < 0 || gb_size_mul(gb_size_mul(T, Hv), dv) < 0)
        return gb_error(GB_EVALUE, "gated_delta_rule: sizes too large");
    /* q and k once per key head, normalised (and q scaled): [T, Hk, dk] each; kv_mem / delta per value head */
    float *qn = (float *)gb_ws_malloc((size_t)nqk * sizeof(float));
    float *kn = (float *)gb_ws_malloc((size_t)nqk * sizeof(float));
    float *kv = (float *)gb_ws_malloc((size_t)(Hv * dv) * sizeof(float));
    if (!qn || !kn || !kv) {
        gb_ws_free(qn);
        gb_ws_free(kn);
        gb_ws_free(kv);
        return gb_error(GB_ENOMEM, "gated_delta_rule: out of memory for %ld floats of workspace", (long)(2 * nqk + Hv * dv));
    }
    const int64_t rows = T * Hk;
#pragma omp parallel for schedule(static) if (nqk > 32768)
    for (int64_t r = 0; r < rows; r++) {
        scale_row(q + r * dk, qn + r * dk, dk, l2norm, l2_eps, scale);
        scale_row(k + r * dk, kn + r * dk, dk, l2norm, l2_eps, 1.0f);
    }
    if (state0)
        memcpy(state, state0, (size_t)nst * sizeof(float));
    else
        memset(state, 0, (size_t)nst * sizeof(float));
    const int64_t rep = Hv / Hk;
#pragma omp parallel for schedule(static) if (Hv > 1 && gb_size_mul(T, nst) > 65536)
    for (int64_t h = 0; h < Hv; h++) {
        float *S = state + h * dk * dv;
        float *km = kv + h * dv;
        const int64_t hk = h / rep;
        for (int64_t t = 0; t < T; t++) {
            const float *qt = qn + (t * Hk + hk) * dk, *kt = kn + (t * Hk + hk) * dk;
            const float *vt = v + (t * Hv + h) * dv;
            float *ot = o + (t * Hv + h) * dv;
            const float decay = expf(g[t * Hv + h]), b = beta[t * Hv + h];
            /* pass 1: decay the state and read it with k: kv_mem = k^T (S * decay) */
            for (int64_t j = 0; j < dv; j++) km[j] = 0.0f;
            for (int64_t i = 0; i < dk; i++) {
                float *Si = S + i * dv;
                const float ki = kt[i];
                for (int64_t j = 0; j < dv; j++) {
                    const float s = Si[j] * decay;
                    Si[j] = s;
                    km[j] += s * ki;
                }
            }
            for (int64_t j = 0; j < dv; j++) km[j] = (vt[j] - km[j]) * b; /* delta */
            /* pass 2: the rank-1 update S += k delta^T and the output o = q^T S */
            for (int64_t j = 0; j < dv; j++) ot[j] = 0.0f;
            for (int64_t i = 0; i < dk; i++) {
                float *Si = S + i * dv;
                const float ki = kt[i], qi = qt[i];
                for (int64_t j = 0; j < dv; j++) {
                    const float s = Si[j] + ki * km[j];
                    Si[j] = s;
                    ot[j] += s * qi;
                }
            }
        }
    }
    gb_ws_free(qn);
    gb_ws_free(kn);
    gb_ws_free(kv);
    return GB_OK;
}

int gb_causal_conv1d(const float *x, const float *w, const float *state0, float *y, float *state, int64_t T, int64_t C,
                     int64_t K, int silu) {
    if (T < 1 || C < 1 || K < 1)
        return gb_error(GB_EVALUE, "causal_conv1d: T, channels and kernel size must be >= 1, got T=%ld C=%ld K=%ld", (long)T,
                        (long)C, (long)K);
    if (gb_size_mul(K, C) < 0) return gb_error(GB_EVALUE, "causal_conv1d: sizes too large");
    /* the weight transposed to [K, C]: tap j's row runs over the channels, as x's rows do */
    float *wt = (float *)gb_ws_malloc((size_t)(K * C) * sizeof(float));
    if (!wt) return gb_error(GB_ENOMEM, "causal_conv1d: out of memory for %ld floats of workspace", (long)(K * C));
    for (int64_t c = 0; c < C; c++)
        for (int64_t j = 0; j < K; j++) wt[j * C + c] = w[c * K + j];
    const int64_t P = K - 1; /* rows of state in front of x */
    /* silu through the SwiGLU activation's vectorised kernel (gb_silu_mul against ones): one silu in the
     * core, and no scalar expf per element (which took ~3x the convolution itself) */
    float *ones = NULL;
    if (silu) {
        ones = (float *)gb_ws_malloc((size_t)C * sizeof(float));
        if (!ones) {
            gb_ws_free(wt);
            return gb_error(GB_ENOMEM, "causal_conv1d: out of memory for %ld floats of workspace", (long)C);
        }
        for (int64_t c = 0; c < C; c++) ones[c] = 1.0f;
    }
#pragma omp parallel for schedule(static) if (T * K * C > 65536)
    for (int64_t t = 0; t < T; t++) {
        float *yr = y + t * C;
        for (int64_t c = 0; c < C; c++) yr[c] = 0.0f;
        for (int64_t j = 0; j < K; j++) {
            const int64_t r = t + j; /* row of xx = [state0; x] */
            const float *src = r < P ? (state0 ? state0 + r * C : NULL) : x + (r - P) * C;
            if (!src) continue; /* a zero row of the default state */
            const float *wj = wt + j * C;
            for (int64_t c = 0; c < C; c++) yr[c] += wj[c] * src[c];
        }
        if (silu) gb_silu_mul(yr, ones, C);
    }
    if (ones) gb_ws_free(ones);
    /* the new state: rows T .. T+P-1 of xx */
    for (int64_t r = 0; r < P; r++) {
        const int64_t s = T + r;
        if (s >= P)
            memcpy(state + r * C, x + (s - P) * C, (size_t)C * sizeof(float));
        else if (state0)
            memcpy(state + r * C, state0 + s * C, (size_t)C * sizeof(float));
        else
            memset(state + r * C, 0, (size_t)C * sizeof(float));
    }
    gb_ws_free(wt);
    return GB_OK;
}

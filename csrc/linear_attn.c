/* linear_attn.c: the Gated DeltaNet layer's ops (Qwen3-Next / Qwen3.5 linear attention) and Mamba-2's
 * selective scan (Nemotron-H / Granite-4.0-H). The recurrences run one (value) head per OpenMP iteration,
 * its tokens in order; each state is kept in the API's layout ([dk, dv]; [P, N]) so every inner loop runs
 * over its last axis, contiguous, and vectorises. The conv runs one output row (token) per iteration, its
 * inner loops over the channels. */
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

int gb_causal_conv1d(const float *x, const float *w, const float *bias, const float *state0, float *y, float *state,
                     int64_t T, int64_t C, int64_t K, int silu) {
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
        if (bias)
            memcpy(yr, bias, (size_t)C * sizeof(float)); /* Mamba-2's conv1d has a bias; the taps add onto it */
        else
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

/* Eight rows p .. p+7 of one head's state [P, N] for one token: S_i = src_i * dA + xd_i * B; out_i = S_i . C.
 * src may be dst (the state updated in place) or the caller's state0 (the first token: read there, written
 * here, one pass). The rows share the loads of B and C, and their eight sums are independent chains. */
static inline void ssm_rows8(const float *src, float *dst, int64_t N, float dA, const float *xd, const float *Bt,
                             const float *Ct, float *out) {
    const float *r0 = src, *r1 = src + N, *r2 = src + 2 * N, *r3 = src + 3 * N;
    const float *r4 = src + 4 * N, *r5 = src + 5 * N, *r6 = src + 6 * N, *r7 = src + 7 * N;
    float *w0 = dst, *w1 = dst + N, *w2 = dst + 2 * N, *w3 = dst + 3 * N;
    float *w4 = dst + 4 * N, *w5 = dst + 5 * N, *w6 = dst + 6 * N, *w7 = dst + 7 * N;
    const float x0 = xd[0], x1 = xd[1], x2 = xd[2], x3 = xd[3], x4 = xd[4], x5 = xd[5], x6 = xd[6], x7 = xd[7];
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
#pragma omp simd reduction(+ : a0, a1, a2, a3, a4, a5, a6, a7)
    for (int64_t n = 0; n < N; n++) {
        const float b = Bt[n], c = Ct[n];
        const float s0 = r0[n] * dA + x0 * b, s1 = r1[n] * dA + x1 * b;
        const float s2 = r2[n] * dA + x2 * b, s3 = r3[n] * dA + x3 * b;
        const float s4 = r4[n] * dA + x4 * b, s5 = r5[n] * dA + x5 * b;
        const float s6 = r6[n] * dA + x6 * b, s7 = r7[n] * dA + x7 * b;
        w0[n] = s0, w1[n] = s1, w2[n] = s2, w3[n] = s3;
        w4[n] = s4, w5[n] = s5, w6[n] = s6, w7[n] = s7;
        a0 += s0 * c, a1 += s1 * c, a2 += s2 * c, a3 += s3 * c;
        a4 += s4 * c, a5 += s5 * c, a6 += s6 * c, a7 += s7 * c;
    }
    out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
    out[4] = a4, out[5] = a5, out[6] = a6, out[7] = a7;
}

/* The same for one row (a head dim not a multiple of 8: its last rows) */
static inline float ssm_row(const float *src, float *dst, int64_t N, float dA, float xd, const float *Bt, const float *Ct) {
    float a = 0.0f;
#pragma omp simd reduction(+ : a)
    for (int64_t n = 0; n < N; n++) {
        const float s = src[n] * dA + xd * Bt[n];
        dst[n] = s;
        a += s * Ct[n];
    }
    return a;
}

/* Tokens per chunk of the scan: a chunk's B and C rows (2 * tc * N floats) take ~16 KiB of L1, so a block
 * of eight state rows (8 * N floats) runs through the chunk's tokens with everything it touches in L1,
 * and the state goes to L2 and back once per chunk instead of once per token. (Blocks of 8 rows, the
 * chunks and the copied B / C rows took Nemotron-H-8B's layer over 512 tokens from ~26 to ~40 GFLOP/s on
 * one Zen 4 core, Granite-4.0-H-Small's to ~47: bench/results/ssm_scan_zen_s46_2026-12-06.md.) */
#define SSM_TC_MAX 64
static int64_t ssm_chunk_tokens(int64_t N) {
    const int64_t tc = 2048 / N;
    return tc < 1 ? 1 : tc > SSM_TC_MAX ? SSM_TC_MAX : tc;
}

int gb_ssm_scan(const float *x, const float *dt, const float *A, const float *B, const float *C, const float *D,
                const float *dt_bias, const float *state0, float *y, float *state, int64_t T, int64_t H, int64_t P,
                int64_t G, int64_t N, int dt_softplus, float dt_min, float dt_max) {
    if (T < 1 || H < 1 || P < 1 || G < 1 || N < 1)
        return gb_error(GB_EVALUE,
                        "ssm_scan: T, heads, head dim, groups and d_state must be >= 1, got T=%ld H=%ld P=%ld G=%ld N=%ld",
                        (long)T, (long)H, (long)P, (long)G, (long)N);
    if (H % G)
        return gb_error(GB_EVALUE, "ssm_scan: the heads (%ld) must be a multiple of the groups (%ld)", (long)H, (long)G);
    if (isnan(dt_min) || isnan(dt_max) || dt_min > dt_max || dt_min == INFINITY || dt_max == -INFINITY)
        return gb_error(GB_EVALUE,
                        "ssm_scan: `dt_min` and `dt_max` must be numbers with dt_min <= dt_max, dt_min < inf and "
                        "dt_max > -inf, got %g and %g",
                        (double)dt_min, (double)dt_max);
    const int64_t nst = gb_size_mul(gb_size_mul(H, P), N);
    if (nst < 0 || gb_size_mul(gb_size_mul(T, H), P) < 0 || gb_size_mul(gb_size_mul(T, G), N) < 0 || gb_size_mul(T, nst) < 0)
        return gb_error(GB_EVALUE, "ssm_scan: sizes too large");
    const int64_t rep = H / G, PN = P * N, TC = ssm_chunk_tokens(N);
    /* Each row p of a head's state is its own recurrence (x[t, h, p] in, y[t, h, p] out; d, B and C shared),
     * so the rows may run through the tokens in any order of rows: per chunk of tokens, a block of rows
     * takes every token of the chunk before the next block. Each state entry still sees the same float32
     * operations in token order, so the bits do not depend on the chunking (nor on the threads). */
#pragma omp parallel for schedule(static) if (H > 1 && gb_size_mul(T, nst) > 65536)
    for (int64_t h = 0; h < H; h++) {
        float *S = state + h * PN;
        const float *S0 = S; /* the rows the first token reads: state0's own (one pass), or zeros here */
        if (state0)
            S0 = state0 + h * PN;
        else
            memset(S, 0, (size_t)PN * sizeof(float));
        const float a = A[h], dskip = D ? D[h] : 0.0f, bias = dt_bias ? dt_bias[h] : 0.0f;
        const int64_t g = h / rep;
        float dd[SSM_TC_MAX], dA[SSM_TC_MAX], xd[8], acc[8];
        /* with several groups, a chunk's B and C rows lie G * N floats apart (4 KiB for Nemotron-H-8B: all
         * in the same L1 sets, which then thrash); they are copied here, side by side (TC * N <= 2048) */
        _Alignas(64) float bc[2 * 2048];
        const int copy = G > 1 && TC > 1;
        for (int64_t t0 = 0; t0 < T; t0 += TC) {
            const int64_t tn = T - t0 < TC ? T - t0 : TC;
            const float *Bc = B + (t0 * G + g) * N, *Cc = C + (t0 * G + g) * N; /* row i at + i * ldb */
            int64_t ldb = G * N;
            if (copy && tn > 1) {
                for (int64_t i = 0; i < tn; i++) {
                    memcpy(bc + i * N, Bc + i * ldb, (size_t)N * sizeof(float));
                    memcpy(bc + (tn + i) * N, Cc + i * ldb, (size_t)N * sizeof(float));
                }
                Bc = bc, Cc = bc + tn * N, ldb = N;
            }
            for (int64_t i = 0; i < tn; i++) {
                float d = dt[(t0 + i) * H + h] + bias;
                if (dt_softplus) d = d > 20.0f ? d : log1pf(expf(d)); /* torch's softplus, threshold 20 */
                d = fminf(fmaxf(d, dt_min), dt_max);
                dd[i] = d;
                dA[i] = expf(d * a);
            }
            int64_t p = 0;
            for (; p + 8 <= P; p += 8) /* blocks of 8 rows (the models' head dims: 64) */
                for (int64_t i = 0; i < tn; i++) {
                    const int64_t t = t0 + i;
                    const float *xt = x + (t * H + h) * P + p, *Bt = Bc + i * ldb, *Ct = Cc + i * ldb;
                    float *yt = y + (t * H + h) * P + p;
                    for (int j = 0; j < 8; j++) xd[j] = dd[i] * xt[j];
                    ssm_rows8((t ? S : S0) + p * N, S + p * N, N, dA[i], xd, Bt, Ct, acc);
                    for (int j = 0; j < 8; j++) yt[j] = D ? acc[j] + dskip * xt[j] : acc[j];
                }
            for (; p < P; p++)
                for (int64_t i = 0; i < tn; i++) {
                    const int64_t t = t0 + i;
                    const float xp = x[(t * H + h) * P + p];
                    const float o =
                        ssm_row((t ? S : S0) + p * N, S + p * N, N, dA[i], dd[i] * xp, Bc + i * ldb, Cc + i * ldb);
                    y[(t * H + h) * P + p] = D ? o + dskip * xp : o;
                }
        }
    }
    return GB_OK;
}

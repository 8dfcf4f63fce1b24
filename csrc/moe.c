/* moe.c: routers and expert dispatch grouped by expert (see moe.h). */
#include "moe.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "linear.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

/* Up to this many tokens the router logits are computed directly (float64 accumulation of the
 * float32 inputs, no conversion copies, no OpenBLAS call); beyond, x and the router weight are
 * widened to float64 and dgemm runs. Decode (T = 1) is the case that matters: there dgemv's
 * conversion of the whole router weight cost more than the product (76 us against NumPy's 54
 * at 64 x 2048). */
#define ROUTER_DIRECT_MAX_T 8
/* router weights of at least this many values (E x D) are read by all threads (router_logits_direct) */
#ifndef ROUTER_PAR_MIN
#define ROUTER_PAR_MIN (1 << 16)
#endif

/* out[e] = sum_d x[d] * w[e, d] in float64. The experts are shared out over the threads where the
 * weight is large enough (each expert's sum is its own: the same bits on any thread count): at decode
 * the router's 64 x 2048 float32 (0.5 MB) comes from DRAM after the attention's matrices, and one
 * thread read it at ~16 GB/s (GLM-4.7-Flash-shaped decode, Zen 2, 33 us of a 1.47 ms layer). */
static void router_logits_direct(const float *x, int64_t D, const float *w, int64_t E, double *out) {
#pragma omp parallel for schedule(static) if (E * D >= ROUTER_PAR_MIN)
    for (int64_t e = 0; e < E; e++) {
        const float *we = w + e * D;
        int64_t d = 0;
        double acc = 0.0;
#if defined(__AVX512F__)
        __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
        for (; d + 16 <= D; d += 16) {
            a0 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + d)), _mm512_cvtps_pd(_mm256_loadu_ps(we + d)), a0);
            a1 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + d + 8)),
                                 _mm512_cvtps_pd(_mm256_loadu_ps(we + d + 8)), a1);
        }
        acc = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
#elif defined(__AVX2__) && defined(__FMA__)
        /* AVX2 CPUs: 4 float64 accumulators of 4 lanes (the scalar loop is one dependent add per
         * product: 64 x 2048 took ~0.13 ms on a Zen 3, against ~0.02 ms for reading the weight) */
        __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
        for (; d + 16 <= D; d += 16) {
            a0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + d)), _mm256_cvtps_pd(_mm_loadu_ps(we + d)), a0);
            a1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + d + 4)), _mm256_cvtps_pd(_mm_loadu_ps(we + d + 4)), a1);
            a2 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + d + 8)), _mm256_cvtps_pd(_mm_loadu_ps(we + d + 8)), a2);
            a3 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + d + 12)), _mm256_cvtps_pd(_mm_loadu_ps(we + d + 12)), a3);
        }
        const __m256d a = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
        const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
        acc = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
#endif
        for (; d < D; d++) acc += (double)x[d] * (double)we[d];
        out[e] = acc;
    }
}

/* Index of the largest v[i] among i < n with ok[i] (ok may be NULL); strict '>' so equal values
 * resolve to the lower index. -1 if none. */
static int64_t argmax_lower(const double *v, const unsigned char *ok, int64_t n) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
        if ((!ok || ok[i]) && (best < 0 || v[i] > v[best])) best = i;
    return best;
}

int gb_moe_route(const float *x, int64_t T, int64_t D, const float *w_router, int64_t E, int64_t top_k,
                 int scoring, const float *bias, int64_t n_group, int64_t topk_group, int group_score,
                 int norm_topk_prob, double scaling, int32_t *topk_idx, float *topk_weight) {
    if (scoring != GB_SCORE_SIGMOID && scoring != GB_SCORE_SOFTMAX)
        return gb_error(GB_EVALUE, "`scoring` must be 'sigmoid' or 'softmax' (got code %d)", scoring);
    if (E <= 0 || D <= 0) return gb_error(GB_EVALUE, "moe_route: E=%ld and D=%ld must be > 0", (long)E, (long)D);
    if (E > INT32_MAX || D > INT32_MAX || T > INT32_MAX)
        return gb_error(GB_EVALUE, "moe_route: sizes must fit in int32, got T=%ld D=%ld E=%ld", (long)T, (long)D, (long)E);
    if (top_k < 1 || top_k > E)
        return gb_error(GB_EVALUE, "`top_k` must be in [1, n_experts=%ld], got %ld", (long)E, (long)top_k);
    if (n_group < 1 || E % n_group)
        return gb_error(GB_EVALUE, "`n_group`=%ld must be >= 1 and divide n_experts=%ld", (long)n_group, (long)E);
    if (topk_group < 1 || topk_group > n_group)
        return gb_error(GB_EVALUE, "`topk_group` must be in [1, n_group=%ld], got %ld", (long)n_group, (long)topk_group);
    if (topk_group * (E / n_group) < top_k)
        return gb_error(GB_EVALUE, "`top_k`=%ld exceeds the %ld experts in topk_group=%ld groups of %ld", (long)top_k,
                        (long)(topk_group * (E / n_group)), (long)topk_group, (long)(E / n_group));
    if (group_score != GB_GROUP_TOP2_SUM && group_score != GB_GROUP_MAX)
        return gb_error(GB_EVALUE, "`group_score` must be 'top2_sum' or 'max' (got code %d)", group_score);
    if (scoring == GB_SCORE_SIGMOID && group_score != GB_GROUP_TOP2_SUM)
        return gb_error(GB_EVALUE, "`group_score`='max' goes with scoring='softmax' (DeepSeek-V2 group_limited_greedy); "
                                   "scoring='sigmoid' (noaux_tc) scores groups by 'top2_sum'");
    if (scoring == GB_SCORE_SOFTMAX && group_score != GB_GROUP_MAX)
        return gb_error(GB_EVALUE, "`group_score`='top2_sum' goes with scoring='sigmoid' (noaux_tc); "
                                   "scoring='softmax' (DeepSeek-V2 group_limited_greedy) scores groups by 'max'");
    if (!isfinite(scaling))
        return gb_error(GB_EVALUE, "`routed_scaling_factor` must be finite, got %g", scaling);
    if (T == 0) return GB_OK;

    const int64_t gs = E / n_group;
    int status = GB_OK;
    const int direct = T <= ROUTER_DIRECT_MAX_T;
    double *xd = direct ? NULL : (double *)gb_ws_malloc((size_t)(T * D) * sizeof(double));
    double *wd = direct ? NULL : (double *)gb_ws_malloc((size_t)(E * D) * sizeof(double));
    double *logits = (double *)gb_ws_malloc((size_t)(T * E) * sizeof(double));
    double *s = (double *)gb_ws_malloc((size_t)E * sizeof(double));
    double *choice = (double *)gb_ws_malloc((size_t)E * sizeof(double));
    double *gscore = (double *)gb_ws_malloc((size_t)n_group * sizeof(double));
    unsigned char *ok = (unsigned char *)gb_ws_malloc((size_t)E);
    unsigned char *gok = (unsigned char *)gb_ws_malloc((size_t)n_group);
    double *wk = (double *)gb_ws_malloc((size_t)top_k * sizeof(double));
    if ((!direct && (!xd || !wd)) || !logits || !s || !choice || !gscore || !ok || !gok || !wk) {
        status = gb_error(GB_ENOMEM, "moe_route: out of memory");
        goto done;
    }
    /* float64 logits: a float32 router would flip choices that the reference keeps whenever two
     * scores differ by less than ~1e-7, which happens in a few percent of tokens at E=64. */
    if (T <= ROUTER_DIRECT_MAX_T) {
        for (int64_t t = 0; t < T; t++) router_logits_direct(x + t * D, D, w_router, E, logits + t * E);
    } else {
        for (int64_t i = 0; i < T * D; i++) xd[i] = x[i];
        for (int64_t i = 0; i < E * D; i++) wd[i] = w_router[i];
        scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)E, (blasint)D, 1.0, xd,
                          (blasint)D, wd, (blasint)D, 0.0, logits, (blasint)E);
    }

    /* x was checked finite by the caller, so a non-finite logit means the router weight holds
     * NaN/inf; checking E logits per token is cheaper than scanning the E x D weight each call. */
    for (int64_t i = 0; i < T * E; i++)
        if (!isfinite(logits[i])) {
            status = gb_error(GB_EVALUE, "`router_weight` contains NaN or inf (the logit of token %ld, expert %ld is %g)",
                              (long)(i / E), (long)(i % E), logits[i]);
            goto done;
        }
    for (int64_t t = 0; t < T; t++) {
        const double *l = logits + t * E;
        if (scoring == GB_SCORE_SIGMOID) {
            for (int64_t e = 0; e < E; e++) s[e] = 1.0 / (1.0 + exp(-l[e]));
        } else {
            double m = l[0], sum = 0.0;
            for (int64_t e = 1; e < E; e++) m = l[e] > m ? l[e] : m;
            for (int64_t e = 0; e < E; e++) sum += (s[e] = exp(l[e] - m));
            for (int64_t e = 0; e < E; e++) s[e] /= sum;
        }
        for (int64_t e = 0; e < E; e++) choice[e] = bias ? s[e] + (double)bias[e] : s[e];

        for (int64_t e = 0; e < E; e++) ok[e] = 1;
        if (n_group > 1) {
            for (int64_t g = 0; g < n_group; g++) {
                const double *c = choice + g * gs;
                int64_t b1 = argmax_lower(c, NULL, gs);
                double v = c[b1];
                if (group_score == GB_GROUP_TOP2_SUM && gs > 1) { /* second best: the best of the rest */
                    int64_t b2 = -1;
                    for (int64_t i = 0; i < gs; i++)
                        if (i != b1 && (b2 < 0 || c[i] > c[b2])) b2 = i;
                    v += c[b2];
                }
                gscore[g] = v;
                gok[g] = 1;
            }
            unsigned char *keep = ok; /* reuse: mark kept groups, then expand to experts */
            memset(keep, 0, (size_t)E);
            for (int64_t j = 0; j < topk_group; j++) {
                int64_t g = argmax_lower(gscore, gok, n_group);
                gok[g] = 0;
                memset(keep + g * gs, 1, (size_t)gs);
            }
        }
        int32_t *idx = topk_idx + t * top_k;
        float *wout = topk_weight + t * top_k;
        double wsum = 0.0;
        for (int64_t j = 0; j < top_k; j++) {
            int64_t e = argmax_lower(choice, ok, E);
            ok[e] = 0;
            idx[j] = (int32_t)e;
            wsum += (wk[j] = s[e]);
        }
        double norm = norm_topk_prob ? 1.0 / (wsum + 1e-20) : 1.0;
        for (int64_t j = 0; j < top_k; j++) wout[j] = (float)(wk[j] * norm * scaling);
    }
done:
    gb_ws_free(xd);
    gb_ws_free(wd);
    gb_ws_free(logits);
    gb_ws_free(s);
    gb_ws_free(choice);
    gb_ws_free(gscore);
    gb_ws_free(ok);
    gb_ws_free(gok);
    gb_ws_free(wk);
    return status;
}

/* Every expert in two parallel regions, used when each has at most gemv_max_t tokens (MoE
 * prefill: 512 tokens x top-4 over 64 experts is ~32 each; decode goes to experts_decode unless a
 * token names an expert twice). Region 1: gate/up/silu for
 * every (expert, 16-row block of F) work item into h[q, F], q = the slot in the expert-sorted
 * token list. Region 2: each 16-row block of D runs the down projection of every hit expert in
 * ascending expert order and adds weight x result into its rows of y; a thread owns its rows, so
 * there are no races and the order of additions is the same for any thread count. Against one
 * expert at a time this saves two fork/joins per expert and balances small experts across
 * threads. */
static int experts_tiled(const float *x, int64_t D, const int64_t *tok, const float *wt, const int64_t *start,
                         const int64_t *counts, int64_t maxn, const void *wg, const void *wu, const void *wd, int fmt_gu,
                         int fmt_d, int64_t E, int64_t F, float *y) {
    const int64_t P = start[E];
    const int eg = gb_weight_elem_bytes(fmt_gu), ed = gb_weight_elem_bytes(fmt_d);
    float *xs = (float *)gb_ws_malloc((size_t)(P * D) * sizeof(float));
    float *h = (float *)gb_ws_malloc((size_t)(P * F) * sizeof(float));
    int64_t *hit = (int64_t *)gb_ws_malloc((size_t)E * sizeof(int64_t));
    int status = GB_OK;
    if (!xs || !h || !hit) {
        status = gb_error(GB_ENOMEM, "moe_experts: out of memory for %ld x (%ld + %ld) scratch", (long)P, (long)D,
                          (long)F);
        goto done;
    }
    int64_t nh = 0;
    for (int64_t e = 0; e < E; e++)
        if (counts[e]) hit[nh++] = e;
    for (int64_t q = 0; q < P; q++) memcpy(xs + q * D, x + tok[q] * D, (size_t)D * sizeof(float));

    const int64_t nbf = (F + GB_ROW_BLOCK - 1) / GB_ROW_BLOCK, nbd = (D + GB_ROW_BLOCK - 1) / GB_ROW_BLOCK;
    const int par = nh * F * D >= (1 << 16);
    /* dynamic chunks (4 blocks of 16 rows), as the decode GEMV: a thread slowed by a neighbour on
     * its core takes fewer; each item writes its own rows of h, so the schedule changes nothing */
#pragma omp parallel for schedule(dynamic, 4) if (par)
    for (int64_t it = 0; it < nh * nbf; it++) {
        const int64_t e = hit[it / nbf], f0 = (it % nbf) * GB_ROW_BLOCK;
        const int64_t f1 = f0 + GB_ROW_BLOCK < F ? f0 + GB_ROW_BLOCK : F;
        gb_gate_up_rows(xs + start[e] * D, counts[e], D, (const char *)wg + (size_t)(e * F * D) * eg,
                        (const char *)wu + (size_t)(e * F * D) * eg, fmt_gu, F, f0, f1, h + start[e] * F);
    }
#pragma omp parallel if (par)
    {
        float *tmp = (float *)gb_ws_malloc((size_t)(maxn * GB_ROW_BLOCK) * sizeof(float));
        if (!tmp) {
#pragma omp atomic write
            status = GB_ENOMEM;
        }
#pragma omp for schedule(dynamic, 2) /* each block's sums in expert order, on whichever thread */
        for (int64_t b = 0; b < nbd; b++) {
            if (!tmp) continue;
            const int64_t r0 = b * GB_ROW_BLOCK, r1 = r0 + GB_ROW_BLOCK < D ? r0 + GB_ROW_BLOCK : D;
            for (int64_t j = 0; j < nh; j++) {
                const int64_t e = hit[j], n = counts[e];
                gb_gemv_rows(h + start[e] * F, n, F, (const char *)wd + (size_t)(e * D * F) * ed, fmt_d, r0, r1, tmp,
                             GB_ROW_BLOCK);
                for (int64_t i = 0; i < n; i++) {
                    float *yr = y + tok[start[e] + i] * D;
                    const float w = wt[start[e] + i], *src = tmp + i * GB_ROW_BLOCK;
                    for (int64_t r = r0; r < r1; r++) yr[r] += w * src[r - r0];
                }
            }
        }
        gb_ws_free(tmp);
    }
    if (status != GB_OK) status = gb_error(status, "moe_experts: out of memory");
done:
    gb_ws_free(xs);
    gb_ws_free(h);
    gb_ws_free(hit);
    return status;
}

/* Decode (every hit expert has one token, token 0: T = 1): each hit expert's three matrices, and
 * the shared expert's, are read as whole-row streams in chunks handed out dynamically. Region 1:
 * gate/up/silu, items of (expert, MOE1_CHUNK rows of F), gate row f and up row f side by side.
 * Region 2: the down projection, items of (expert, MOE1_CHUNK rows of D) read as two halves
 * (gb_gemv1_rows) into that expert's own output row; then y = sum of weight x output in ascending
 * expert order, as experts_tiled adds them, and the shared expert's output last (weight 1).
 * experts_tiled's down items (16 rows of D for every hit expert in turn) jumped between the
 * experts' matrices every 48 KB: at GLM-4.7-Flash's shape (4 experts of 2048 x 1536) it ran at
 * ~0.6 of the read bandwidth when the memory was fast; in-process A/B at ~31 GB/s 26.6 -> 28.5 GB/s.
 * The shared expert in the same regions saves a SwiGLU call's two joins and load imbalance. */
#define MOE1_CHUNK 128
typedef struct {
    const void *g, *u, *d;
    int fgu, fd;
    int64_t F, hoff; /* width, offset of its h in the scratch */
    float w;
} moe1_mat;

static int experts_decode(const float *x, int64_t D, const float *wt, const int64_t *start, const int64_t *counts,
                          const void *wg, const void *wu, const void *wd, int fmt_gu, int fmt_d, int64_t E, int64_t F,
                          const gb_shared_expert *sh, float *y) {
    const int eg = gb_weight_elem_bytes(fmt_gu), ed = gb_weight_elem_bytes(fmt_d);
    moe1_mat mat[E + 1];
    int64_t n = 0, hsum = 0;
    for (int64_t e = 0; e < E; e++)
        if (counts[e]) {
            mat[n] = (moe1_mat){(const char *)wg + (size_t)(e * F * D) * eg, (const char *)wu + (size_t)(e * F * D) * eg,
                                (const char *)wd + (size_t)(e * D * F) * ed, fmt_gu, fmt_d, F, hsum, wt[start[e]]};
            hsum += F;
            n++;
        }
    if (sh) {
        mat[n++] = (moe1_mat){sh->gate, sh->up, sh->down, sh->fmt_gate, sh->fmt_down, sh->F, hsum, 1.0f};
        hsum += sh->F;
    }
    /* work items: (matrix, first row) for region 1 and region 2 */
    int64_t n1 = 0, n2 = 0;
    for (int64_t j = 0; j < n; j++) n1 += (mat[j].F + MOE1_CHUNK - 1) / MOE1_CHUNK;
    n2 = n * ((D + MOE1_CHUNK - 1) / MOE1_CHUNK);
    float *h = (float *)gb_ws_malloc((size_t)hsum * sizeof(float));
    float *ye = (float *)gb_ws_malloc((size_t)(n * D) * sizeof(float));
    int64_t *it1 = (int64_t *)gb_ws_malloc((size_t)(2 * n1) * sizeof(int64_t));
    if (!h || !ye || !it1) {
        gb_ws_free(h);
        gb_ws_free(ye);
        gb_ws_free(it1);
        return gb_error(GB_ENOMEM, "moe_experts: out of memory for %ld x (%ld + %ld) scratch", (long)n, (long)D,
                        (long)F);
    }
    for (int64_t j = 0, q = 0; j < n; j++)
        for (int64_t f0 = 0; f0 < mat[j].F; f0 += MOE1_CHUNK, q++) {
            it1[2 * q] = j;
            it1[2 * q + 1] = f0;
        }
    const int par = hsum * D >= (1 << 16);
#pragma omp parallel for schedule(dynamic, 1) if (par)
    for (int64_t q = 0; q < n1; q++) {
        const moe1_mat *m = &mat[it1[2 * q]];
        const int64_t f0 = it1[2 * q + 1], f1 = f0 + MOE1_CHUNK < m->F ? f0 + MOE1_CHUNK : m->F;
        gb_gate_up_rows(x, 1, D, m->g, m->u, m->fgu, m->F, f0, f1, h + m->hoff);
    }
    const int64_t cd = (D + MOE1_CHUNK - 1) / MOE1_CHUNK;
#pragma omp parallel for schedule(dynamic, 1) if (par)
    for (int64_t q = 0; q < n2; q++) {
        const int64_t j = q / cd, r0 = (q % cd) * MOE1_CHUNK, r1 = r0 + MOE1_CHUNK < D ? r0 + MOE1_CHUNK : D;
        gb_gemv1_rows(h + mat[j].hoff, mat[j].F, mat[j].d, mat[j].fd, r0, r1, ye + j * D + r0);
    }
    for (int64_t j = 0; j < n; j++) {
        const float w = mat[j].w, *src = ye + j * D;
        for (int64_t d = 0; d < D; d++) y[d] += w * src[d];
    }
    gb_ws_free(h);
    gb_ws_free(ye);
    gb_ws_free(it1);
    return GB_OK;
}

int gb_moe_experts(const float *x, int64_t T, int64_t D, const int32_t *topk_idx, const float *topk_weight,
                   int64_t top_k, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
                   const void *w_down, int fmt_down, int64_t E, int64_t F, const gb_shared_expert *shared,
                   float *y, int64_t *counts) {
    const int eg = gb_weight_elem_bytes(fmt_gate), eu = gb_weight_elem_bytes(fmt_up), ed = gb_weight_elem_bytes(fmt_down);
    if (!eg || !eu || !ed)
        return gb_error(GB_ETYPE, "moe_experts: unsupported weight format (%d, %d, %d)", fmt_gate, fmt_up, fmt_down);
    if (E <= 0 || D <= 0 || F <= 0 || top_k <= 0)
        return gb_error(GB_EVALUE, "moe_experts: E=%ld D=%ld F=%ld top_k=%ld must be > 0", (long)E, (long)D, (long)F,
                        (long)top_k);
    memset(counts, 0, (size_t)E * sizeof(int64_t));
    memset(y, 0, (size_t)(T * D) * sizeof(float));
    const int64_t P = T * top_k;
    for (int64_t p = 0; p < P; p++) {
        int32_t e = topk_idx[p];
        if (e < 0 || e >= E)
            return gb_error(GB_EVALUE, "`topk_idx`[%ld, %ld] = %d is not an expert index in [0, %ld)",
                            (long)(p / top_k), (long)(p % top_k), (int)e, (long)E);
        counts[e]++;
    }
    if (P == 0) return GB_OK;

    int status = GB_OK;
    int64_t *start = (int64_t *)gb_ws_malloc((size_t)(E + 1) * sizeof(int64_t));
    int64_t *tok = (int64_t *)gb_ws_malloc((size_t)P * sizeof(int64_t));
    float *wt = (float *)gb_ws_malloc((size_t)P * sizeof(float));
    int64_t maxn = 0;
    for (int64_t e = 0; e < E; e++) maxn = counts[e] > maxn ? counts[e] : maxn;
    float *xe = (float *)gb_ws_malloc((size_t)(maxn * D) * sizeof(float));
    float *ye = (float *)gb_ws_malloc((size_t)(maxn * D) * sizeof(float));
    if (!start || !tok || !wt || !xe || !ye) {
        status = gb_error(GB_ENOMEM, "moe_experts: out of memory");
        goto done;
    }
    /* per-expert token lists, tokens in ascending order within each expert (counting sort) */
    start[0] = 0;
    for (int64_t e = 0; e < E; e++) start[e + 1] = start[e] + counts[e];
    {
        int64_t *fill = (int64_t *)gb_ws_calloc((size_t)E, sizeof(int64_t));
        if (!fill) {
            status = gb_error(GB_ENOMEM, "moe_experts: out of memory");
            goto done;
        }
        for (int64_t p = 0; p < P; p++) {
            int32_t e = topk_idx[p];
            int64_t q = start[e] + fill[e]++;
            tok[q] = p / top_k;
            wt[q] = topk_weight[p];
        }
        gb_ws_free(fill);
    }
    if (fmt_gate == fmt_up && T == 1 && maxn == 1 && (!shared || shared->fmt_gate == shared->fmt_up)) {
        /* decode, no expert named twice */
        status = experts_decode(x, D, wt, start, counts, w_gate, w_up, w_down, fmt_gate, fmt_down, E, F, shared, y);
        goto done;
    }
    if (fmt_gate == fmt_up && maxn <= gb_linear_gemv_max_t()) {
        status = experts_tiled(x, D, tok, wt, start, counts, maxn, w_gate, w_up, w_down, fmt_gate, fmt_down, E, F, y);
        goto shared_add;
    }
    for (int64_t e = 0; e < E && status == GB_OK; e++) {
        const int64_t n = counts[e];
        if (!n) continue;
        const int64_t *te = tok + start[e];
        const float *we = wt + start[e];
        for (int64_t i = 0; i < n; i++) memcpy(xe + i * D, x + te[i] * D, (size_t)D * sizeof(float));
        status = gb_swiglu(xe, n, D, (const char *)w_gate + (size_t)(e * F * D) * eg, fmt_gate,
                           (const char *)w_up + (size_t)(e * F * D) * eu, fmt_up,
                           (const char *)w_down + (size_t)(e * D * F) * ed, fmt_down, F, ye);
        if (status != GB_OK) break;
        for (int64_t i = 0; i < n; i++) {
            float *yr = y + te[i] * D;
            const float *src = ye + i * D, w = we[i];
            for (int64_t d = 0; d < D; d++) yr[d] += w * src[d];
        }
    }
shared_add:
    if (status == GB_OK && shared) { /* after the routed experts, as the decode path adds it */
        float *ys = (float *)gb_ws_malloc((size_t)(T * D) * sizeof(float));
        if (!ys) {
            status = gb_error(GB_ENOMEM, "moe_experts: out of memory for the shared expert");
            goto done;
        }
        status = gb_swiglu(x, T, D, shared->gate, shared->fmt_gate, shared->up, shared->fmt_up, shared->down,
                           shared->fmt_down, shared->F, ys);
        if (status == GB_OK)
            for (int64_t i = 0; i < T * D; i++) y[i] += ys[i];
        gb_ws_free(ys);
    }
done:
    gb_ws_free(start);
    gb_ws_free(tok);
    gb_ws_free(wt);
    gb_ws_free(xe);
    gb_ws_free(ye);
    return status;
}

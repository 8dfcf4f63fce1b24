/* moe_k.c: routed experts in K-quant / iq4_nl / mxfp4 formats as stored, one call (see moe_k.h). */
#include "moe_k.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "linear.h"
#include "moe.h"
#include "quant_iq.h"
#include "quant.h"
#include "quant_k.h"

static int64_t rowb(int fmt, int64_t k) { return gb_is_iqfmt(fmt) ? gb_iq_row_bytes(fmt, k) : gb_k_row_bytes(fmt, k); }

static int lin(int fmt, const float *x, const void *w, float *y, int64_t T, int64_t N, int64_t K, int version) {
    return gb_is_iqfmt(fmt) ? gb_iqlinear(fmt, x, w, NULL, y, T, N, K, version) : gb_klinear(fmt, x, w, NULL, y, T, N, K, version);
}

int gb_kmoe(const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k, int fg,
            const void *gate, int fu, const void *up, int fd, const void *down, int64_t E, int64_t F, int64_t D,
            float *y, int64_t *counts, int version) {
    const int64_t rg = rowb(fg, D), ru = rowb(fu, D), rd = rowb(fd, F);
    if (rg < 0 || ru < 0 || rd < 0)
        return gb_error(GB_EVALUE, "kmoe: formats %d/%d/%d with D=%ld, F=%ld are not whole blocks of a K-quant/iq4_nl/mxfp4 format",
                        fg, fu, fd, (long)D, (long)F);
    const int64_t i = gb_count_routes(topk_idx, T, k, E, D, y, counts);
    if (i >= 0) return gb_error(GB_EVALUE, "kmoe: topk_idx[%ld] = %ld is not in [0, %ld)", (long)(i / k), (long)topk_idx[i], (long)E);
    if (T == 0 || k == 0) return GB_OK;
    const int64_t R = T * k;
    int64_t *off = (int64_t *)gb_ws_calloc((size_t)(E + 1), sizeof(int64_t));
    int64_t *pos = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *tok = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *fill = (int64_t *)gb_ws_calloc((size_t)E, sizeof(int64_t));
    float *xg = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    float *g = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    int st = GB_OK;
    if (!off || !pos || !tok || !fill || !xg || !g || !u || !o) {
        st = gb_error(GB_ENOMEM, "kmoe: cannot allocate the expert buffers (%ld rows, F=%ld, D=%ld)", (long)R, (long)F, (long)D);
        goto done;
    }
    gb_group_rows(topk_idx, T, k, E, counts, off, fill, pos, tok);
    for (int64_t p = 0; p < R; p++) memcpy(xg + p * D, x + tok[p] * D, (size_t)D * sizeof(float));
    for (int64_t e = 0; e < E && st == GB_OK; e++) {
        const int64_t c = counts[e], o0 = off[e];
        if (!c) continue;
        if ((st = lin(fg, xg + o0 * D, (const uint8_t *)gate + e * F * rg, g + o0 * F, c, F, D, version)) != GB_OK) break;
        if ((st = lin(fu, xg + o0 * D, (const uint8_t *)up + e * F * ru, u + o0 * F, c, F, D, version)) != GB_OK) break;
        gb_silu_mul(g + o0 * F, u + o0 * F, c * F);
        st = lin(fd, g + o0 * F, (const uint8_t *)down + e * D * rd, o + o0 * D, c, D, F, version);
    }
    if (st != GB_OK) goto done;
    gb_moe_combine(y, o, pos, topk_weight, 0, T, k, D);
done:
    gb_ws_free(off);
    gb_ws_free(pos);
    gb_ws_free(tok);
    gb_ws_free(fill);
    gb_ws_free(xg);
    gb_ws_free(g);
    gb_ws_free(u);
    gb_ws_free(o);
    return st;
}

/* Repacked experts (csrc/quant_k.h gb_krepack, each expert's matrix packed on its own, E back to
 * back). Decode-sized batches (every expert fewer than 64 tokens) run as one OpenMP region whose
 * work is split over (expert, matrix, 16-row group) items: at T = 1 the 4 selected experts' gate
 * and up rows are shared out between the threads in contiguous runs (each thread streams its part
 * of every matrix, no per-expert fork/join), then SwiGLU, then the same for down. Every output row
 * is computed exactly as gb_klinear_packed computes it, so results are bit-identical to gb_kmoe on
 * the stored bytes (iq4_nl/mxfp4 matrices through gb_iqp_rows, 16-row groups of their packed
 * layout). Prefill-sized batches go expert by expert through gb_klinear_packed / gb_iqlinear_packed. */
static int64_t pbytes(int fmt, int64_t n, int64_t k) { return gb_is_iqfmt(fmt) ? gb_iqp_bytes(fmt, n, k) : gb_kp_bytes(fmt, n, k); }

static int linp(int fmt, const float *x, const void *w, const float *bias, float *y, int64_t T, int64_t N, int64_t K, int version) {
    return (gb_is_iqfmt(fmt) ? gb_iqlinear_packed : gb_klinear_packed)(fmt, x, w, bias, y, T, N, K, version);
}

/* the activations of R rows of width K prepared for the packed kernels of the formats that read
 * them: q8_K blocks (K formats) and/or the iq4_nl/mxfp4 layout (gb_iqp_prepare) */
typedef struct {
    int64_t K, nbk, nbp;
    gb_block_q8_K *k;
    int8_t *q;
    float *d;
    int32_t *s;
    uint8_t *q8;
    uint8_t *x8; /* the AVX2 iq tiles' interleaved records (gb_iqp_x8), per expert from its first row's offset */
} mact;

static int mact_alloc(mact *a, int64_t R, int64_t K, int need_k, int need_iq, int version) {
    memset(a, 0, sizeof(*a));
    a->K = K;
    a->nbk = need_k ? K / GB_QKK : 0;
    a->nbp = need_iq ? gb_iqp_blocks(K) : 0;
    a->k = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)(R * a->nbk + 1) * sizeof(gb_block_q8_K));
    a->q = (int8_t *)gb_ws_aligned_alloc(64, (size_t)(R * a->nbp * 32 + 64));
    a->d = (float *)gb_ws_aligned_alloc(64, (size_t)(R * a->nbp + 1) * sizeof(float));
    a->s = (int32_t *)gb_ws_aligned_alloc(64, (size_t)(R * a->nbp + 1) * sizeof(int32_t));
    a->q8 = (uint8_t *)gb_ws_malloc((size_t)(R * (need_iq ? K / 32 : 0) + 1) * sizeof(gb_block_q8_0));
    const int64_t x8b = need_iq && version == GB_KV_AVX2 ? gb_iqp_x8_bytes(K, R) : 0;
    a->x8 = x8b ? (uint8_t *)gb_ws_aligned_alloc(64, (size_t)x8b) : NULL;
    return a->k && a->q && a->d && a->s && a->q8 && (!x8b || a->x8) ? GB_OK : GB_ENOMEM;
}

static void mact_free(mact *a) {
    gb_ws_free(a->k);
    gb_ws_free(a->q);
    gb_ws_free(a->d);
    gb_ws_free(a->s);
    gb_ws_free(a->q8);
    gb_ws_free(a->x8);
}

static void mact_prep(const mact *a, int64_t p, const float *x) {
    if (a->nbk) gb_quantize_row_q8_K(x, a->k + p * a->nbk, a->K);
    if (a->nbp)
        gb_iqp_prepare(x, a->K, a->q8 + p * (a->K / 32) * sizeof(gb_block_q8_0), a->q + p * a->nbp * 32, a->d + p * a->nbp, a->s + p * a->nbp);
}

/* the interleaved records of the c rows of a from row o0 (one expert's), once for all its groups */
static void mact_x8(const mact *a, int64_t o0, int64_t c) {
    if (a->x8 && c >= 8)
        gb_iqp_x8(a->q + o0 * a->nbp * 32, a->d + o0 * a->nbp, a->s + o0 * a->nbp, a->K, c, a->x8 + gb_iqp_x8_bytes(a->K, o0));
}

/* the 16 rows of group g of matrix w [N, a->K] for the c rows of a from row o0 */
static int mact_rows(int fmt, const void *w, int64_t N, const mact *a, int64_t g, int64_t o0, int64_t c, float *y, int64_t ldy,
                     int version) {
    if (gb_is_iqfmt(fmt))
        return gb_iqp_rows(fmt, w, N, a->K, g, a->q + o0 * a->nbp * 32, a->d + o0 * a->nbp, a->s + o0 * a->nbp,
                           a->x8 ? a->x8 + gb_iqp_x8_bytes(a->K, o0) : NULL, c, y, ldy, version);
    gb_kp_rows(fmt, w, N, a->K, g, a->k + o0 * a->nbk, c, y, ldy, NULL, version);
    return GB_OK;
}

/* Decode batches read each selected expert's matrices group by group in memory order (1) or, where the
 * format has a two-stream GEMV, two groups side by side (0: gate's and up's group gi; down's gi and
 * gi + GD/2, through mact_pair). The pairs were measured faster on a Zen 2 / Zen 3 (AVX2 kernels,
 * sessions 17-24); on a Zen 4 (AVX-512 VNNI kernels, session 35) in order is: a GLM-4.7-Flash-shaped
 * Q4_K_M MoE layer 1.391 -> 1.288 ms and 1.724 -> 1.682 ms in two in-process A/Bs
 * (bench/results/mla_vb_stream_zen4_s35_2026-12-05.md). The same numbers either way. K formats only:
 * iq4_nl / mxfp4 experts keep their pairs (gb_iqp_gemv_pair), not measured in order. */
#ifndef KMOE_DEC_INORDER
#define KMOE_DEC_INORDER(version) ((version) == GB_KV_VNNI)
#endif

/* one token (row o0 of a) against group g1 of w1 and group g2 of w2 side by side, two streams, where
 * the format has that GEMV (gb_kp_gemv_pair, gb_iqp_gemv_pair: 1, done; 0: run mact_rows on each) */
static int mact_pair(int fmt, const void *w1, int64_t N1, int64_t g1, float *y1, const void *w2, int64_t N2, int64_t g2, float *y2,
                     const mact *a, int64_t o0, int version) {
    if (gb_is_iqfmt(fmt))
        return a->nbp && gb_iqp_gemv_pair(fmt, w1, N1, g1, y1, w2, N2, g2, y2, a->K, a->q + o0 * a->nbp * 32, a->d + o0 * a->nbp,
                                           a->s + o0 * a->nbp, version);
    return a->nbk && gb_kp_gemv_pair(fmt, w1, N1, g1, y1, w2, N2, g2, y2, a->K, a->k + o0 * a->nbk, version);
}

/* Prefill-sized batches of K formats: every routed expert in ONE parallel region, rather
 * than three gb_klinear_packed calls (three regions, each with its own fork, quantization and
 * join) per expert: 64 experts made ~190 regions per MoE layer, each a barrier where a thread
 * that the OS has parked (a shared machine) holds up the other. Phases, each an `omp for`:
 *   1. the gathered rows quantized to q8_K (and, VNNI, prepared for the panels where the expert has
 *      >= 16 rows: gb_kp_panel_prep_x; fewer rows, and every expert on the AVX2 and reference
 *      versions, run the packed group kernel gb_kp_rows, as gb_klinear_packed does there);
 *   2. gate and up: work items (expert, matrix, pair of 16-row groups), dynamic, so the experts'
 *      uneven token counts balance across threads;
 *   3. h = SiLU(g) * u per row (gb_silu_mul, as gb_kmoe), quantized for down;
 *   4. down: items (expert, pair of groups).
 * Every output is computed by the same kernel steps as gb_klinear_packed on the expert alone
 * (gb_kp_panel_step / gb_kp_rows), so the results are bit-identical to the per-expert calls. */
static int kmoe_prefill(const float *xg, int64_t R, int64_t na, const int64_t *act, const int64_t *counts, const int64_t *off,
                        int fg, const void *gate, int64_t pg, int fu, const void *up, int64_t pu, int fd, const void *down,
                        int64_t pd, int64_t F, int64_t D, float *g, float *u, float *o, int version, int panels) {
    /* experts with pmin or more rows run the byte panels; without panels (kernel versions other than
     * VNNI: gb_kp_panel_ok) every expert runs the packed group kernel, as gb_klinear_packed does */
    const int64_t nbD = D / GB_QKK, nbF = F / GB_QKK, SF = (F + 31) / 32, SD = (D + 31) / 32, pmin = panels ? 16 : INT64_MAX;
    gb_block_q8_K *xq = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)(R * nbD + 1) * sizeof(gb_block_q8_K));
    gb_block_q8_K *hq = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)(R * nbF + 1) * sizeof(gb_block_q8_K));
    uint8_t *big = (uint8_t *)gb_ws_malloc((size_t)R + 1);
    if (!xq || !hq || !big) {
        gb_ws_free(xq);
        gb_ws_free(hq);
        gb_ws_free(big);
        return gb_error(GB_ENOMEM, "kmoe: cannot allocate the prepared activations (%ld rows, F=%ld, D=%ld)", (long)R, (long)F, (long)D);
    }
    for (int64_t j = 0; j < na; j++) memset(big + off[act[j]], counts[act[j]] >= pmin, (size_t)counts[act[j]]);
    const size_t scr = panels ? gb_kp_panel_scratch(nbD > nbF ? D : F) : 0;
    int fail = 0;
#pragma omp parallel
    {
        void *P = panels ? gb_ws_aligned_alloc(64, scr) : (void *)big; /* (no panels: a non-NULL token) */
        if (!P) {
#pragma omp atomic write
            fail = 1;
        }
#pragma omp for schedule(static)
        for (int64_t p = 0; p < R; p++) {
            gb_quantize_row_q8_K(xg + p * D, xq + p * nbD, D);
            if (big[p]) gb_kp_panel_prep_x(fg, xq + p * nbD, D);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < na * 2 * SF; it++) {
            if (!P) continue;
            const int64_t e = act[it / (2 * SF)], s2 = it % SF, o0 = off[e], c = counts[e];
            const int isup = (int)((it / SF) % 2);
            const int fmt = isup ? fu : fg;
            const uint8_t *w = (const uint8_t *)(isup ? up : gate) + e * (isup ? pu : pg);
            float *y = (isup ? u : g) + o0 * F;
            if (c >= pmin)
                gb_kp_panel_step(fmt, w, F, D, s2, xq + o0 * nbD, c, y, F, P);
            else
                for (int64_t gi = 2 * s2; gi < 2 * s2 + 2 && 16 * gi < F; gi++)
                    gb_kp_rows(fmt, w, F, D, gi, xq + o0 * nbD, c, y + 16 * gi, F, NULL, version);
        }
#pragma omp for schedule(static)
        for (int64_t p = 0; p < R; p++) {
            float *gp = g + p * F;
            const float *up_ = u + p * F;
            gb_silu_mul(gp, up_, F);
            gb_quantize_row_q8_K(gp, hq + p * nbF, F);
            if (big[p]) gb_kp_panel_prep_x(fd, hq + p * nbF, F);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < na * SD; it++) {
            if (!P) continue;
            const int64_t e = act[it / SD], s2 = it % SD, o0 = off[e], c = counts[e];
            const uint8_t *w = (const uint8_t *)down + e * pd;
            if (c >= pmin)
                gb_kp_panel_step(fd, w, D, F, s2, hq + o0 * nbF, c, o + o0 * D, D, P);
            else
                for (int64_t gi = 2 * s2; gi < 2 * s2 + 2 && 16 * gi < D; gi++)
                    gb_kp_rows(fd, w, D, F, gi, hq + o0 * nbF, c, o + o0 * D + 16 * gi, D, NULL, version);
        }
        if (panels) gb_ws_free(P);
    }
    gb_ws_free(xq);
    gb_ws_free(hq);
    gb_ws_free(big);
    if (fail) return gb_error(GB_ENOMEM, "kmoe: cannot allocate the 16-row weight panels (%ld super-blocks)", (long)(nbD > nbF ? nbD : nbF));
    return GB_OK;
}

int gb_kmoe_packed(const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k, int fg,
                   const void *gate, int fu, const void *up, int fd, const void *down, int64_t E, int64_t F, int64_t D,
                   float *y, int64_t *counts, int version) {
    const int64_t pg = pbytes(fg, F, D), pu = pbytes(fu, F, D), pd = pbytes(fd, D, F);
    if (pg < 0 || pu < 0 || pd < 0)
        return gb_error(GB_EVALUE, "kmoe: formats %d/%d/%d with D=%ld, F=%ld have no repacked layout (q4_K, q5_K, q6_K, iq4_xs with D "
                        "and F multiples of 256, iq4_nl, mxfp4 multiples of 32)", fg, fu, fd, (long)D, (long)F);
    const int iqx = gb_is_iqfmt(fg) || gb_is_iqfmt(fu), kx = !gb_is_iqfmt(fg) || !gb_is_iqfmt(fu);
    /* decode-sized batches in one region: fewer than 16 tokens per expert (the packed linears switch
     * to their prefill panels there) */
    const int64_t fuse_max = 16;
    if (version == GB_KV_AUTO) version = gb_kversion_best();
    if (!gb_kversion_available(version))
        return gb_error(GB_EVALUE, "kmoe: kernel version %d (%s) is not compiled in on this build", version, gb_kversion_name(version));
    const int64_t i = gb_count_routes(topk_idx, T, k, E, D, y, counts);
    if (i >= 0) return gb_error(GB_EVALUE, "kmoe: topk_idx[%ld] = %ld is not in [0, %ld)", (long)(i / k), (long)topk_idx[i], (long)E);
    if (T == 0 || k == 0) return GB_OK;
    const int64_t R = T * k, GF = (F + 15) / 16, GD = (D + 15) / 16;
    mact xa = {0}, ha = {0};
    int64_t *off = (int64_t *)gb_ws_calloc((size_t)(E + 1), sizeof(int64_t));
    int64_t *pos = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *tok = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *fill = (int64_t *)gb_ws_calloc((size_t)E, sizeof(int64_t));
    int64_t *act = (int64_t *)gb_ws_malloc((size_t)E * sizeof(int64_t));
    float *xg = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    float *g = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    int st = GB_OK;
    if (!off || !pos || !tok || !fill || !act || !xg || !g || !u || !o) {
        st = gb_error(GB_ENOMEM, "kmoe: cannot allocate the expert buffers (%ld rows, F=%ld, D=%ld)", (long)R, (long)F, (long)D);
        goto done;
    }
    gb_group_rows(topk_idx, T, k, E, counts, off, fill, pos, tok);
    for (int64_t p = 0; p < R; p++) memcpy(xg + p * D, x + tok[p] * D, (size_t)D * sizeof(float));
    int64_t na = 0, cmax = 0;
    for (int64_t e = 0; e < E; e++)
        if (counts[e]) {
            act[na++] = e;
            if (counts[e] > cmax) cmax = counts[e];
        }
    const int kall = !gb_is_iqfmt(fg) && !gb_is_iqfmt(fu) && !gb_is_iqfmt(fd);
    const int panels = gb_kp_panel_ok(version);
    if (cmax >= fuse_max && kall && (!panels || gb_kp_panel_x_kind(fg) == gb_kp_panel_x_kind(fu))) {
        st = kmoe_prefill(xg, R, na, act, counts, off, fg, gate, pg, fu, up, pu, fd, down, pd, F, D, g, u, o, version, panels);
        if (st != GB_OK) goto done;
    } else if (cmax >= fuse_max) { /* prefill-sized: expert by expert */
        for (int64_t j = 0; j < na && st == GB_OK; j++) {
            const int64_t e = act[j], c = counts[e], o0 = off[e];
            if ((st = linp(fg, xg + o0 * D, (const uint8_t *)gate + e * pg, NULL, g + o0 * F, c, F, D, version)) != GB_OK) break;
            if ((st = linp(fu, xg + o0 * D, (const uint8_t *)up + e * pu, NULL, u + o0 * F, c, F, D, version)) != GB_OK) break;
            gb_silu_mul(g + o0 * F, u + o0 * F, c * F);
            st = linp(fd, g + o0 * F, (const uint8_t *)down + e * pd, NULL, o + o0 * D, c, D, F, version);
        }
        if (st != GB_OK) goto done;
    } else {
        if (mact_alloc(&xa, R, D, kx, iqx, version) != GB_OK || mact_alloc(&ha, R, F, !gb_is_iqfmt(fd), gb_is_iqfmt(fd), version) != GB_OK) {
            st = gb_error(GB_ENOMEM, "kmoe: cannot allocate the prepared activations (%ld rows, F=%ld, D=%ld)", (long)R, (long)F, (long)D);
            goto done;
        }
        int fail = 0;
#pragma omp parallel if (R * F * D > 65536)
        {
#pragma omp for schedule(static)
            for (int64_t p = 0; p < R; p++) mact_prep(&xa, p, xg + p * D);
#pragma omp for schedule(dynamic, 1)
            for (int64_t j = 0; j < na; j++) mact_x8(&xa, off[act[j]], counts[act[j]]);
            /* guided grabs of at least ~128 KB of weights: long streams first (each selected expert's
             * matrices lie in turn), short ones at the end, so a thread held up by another job does not
             * hold up the others (as gb_klinear_packed's decode; before 2026-12-03: dynamic 256 KB runs) */
            const int64_t rgu = (int64_t)1 + (128 << 10) / (pg / GF + 1), rdn = (int64_t)1 + (128 << 10) / (pd / GD + 1);
            const int inorder = KMOE_DEC_INORDER(version) && !gb_is_iqfmt(fg) && !gb_is_iqfmt(fu) && !gb_is_iqfmt(fd);
            if (inorder) {
                /* items: (expert, gate or up, group gi), each matrix's groups in memory order */
#pragma omp for schedule(guided, rgu / 2 + 1)
                for (int64_t it = 0; it < na * 2 * GF; it++) {
                    const int64_t e = act[it / (2 * GF)], r = it % (2 * GF), which = r / GF, gi = r % GF, o0 = off[e];
                    const uint8_t *w = which ? (const uint8_t *)up + e * pu : (const uint8_t *)gate + e * pg;
                    if (mact_rows(which ? fu : fg, w, F, &xa, gi, o0, counts[e], (which ? u : g) + o0 * F + 16 * gi, F, version) != GB_OK) {
#pragma omp atomic write
                        fail = 1;
                    }
                }
            } else
            /* items: (expert, group gi of gate and of up): where one token meets the expert and the format
             * has a two-stream GEMV (mact_pair), both matrices' group gi side by side */
#pragma omp for schedule(guided, rgu / 2 + 1)
            for (int64_t it = 0; it < na * GF; it++) {
                const int64_t e = act[it / GF], gi = it % GF, o0 = off[e];
                const uint8_t *wg = (const uint8_t *)gate + e * pg, *wu = (const uint8_t *)up + e * pu;
                if (counts[e] == 1 && fg == fu && mact_pair(fg, wg, F, gi, g + o0 * F + 16 * gi, wu, F, gi, u + o0 * F + 16 * gi, &xa, o0, version))
                    continue;
                if (mact_rows(fg, wg, F, &xa, gi, o0, counts[e], g + o0 * F + 16 * gi, F, version) != GB_OK ||
                    mact_rows(fu, wu, F, &xa, gi, o0, counts[e], u + o0 * F + 16 * gi, F, version) != GB_OK) {
#pragma omp atomic write
                    fail = 1;
                }
            }
#pragma omp for schedule(static)
            for (int64_t p = 0; p < R; p++) {
                float *gp = g + p * F;
                const float *up_ = u + p * F;
                gb_silu_mul(gp, up_, F);
                mact_prep(&ha, p, gp);
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t j = 0; j < na; j++) mact_x8(&ha, off[act[j]], counts[act[j]]);
            const int64_t HD = (GD + 1) / 2;
            if (inorder) {
                /* items: (expert, group gi of down), in memory order */
#pragma omp for schedule(guided, rdn / 2 + 1)
                for (int64_t it = 0; it < na * GD; it++) {
                    const int64_t e = act[it / GD], gi = it % GD, o0 = off[e];
                    if (mact_rows(fd, (const uint8_t *)down + e * pd, D, &ha, gi, o0, counts[e], o + o0 * D + 16 * gi, D, version) != GB_OK) {
#pragma omp atomic write
                        fail = 1;
                    }
                }
            } else
            /* items: (expert, groups gi and gi + HD of down), side by side where mact_pair can */
#pragma omp for schedule(guided, rdn / 2 + 1)
            for (int64_t it = 0; it < na * HD; it++) {
                const int64_t e = act[it / HD], gi = it % HD, g2 = gi + HD, o0 = off[e];
                const uint8_t *wd = (const uint8_t *)down + e * pd;
                if (g2 < GD && counts[e] == 1 && mact_pair(fd, wd, D, gi, o + o0 * D + 16 * gi, wd, D, g2, o + o0 * D + 16 * g2, &ha, o0, version))
                    continue;
                if (mact_rows(fd, wd, D, &ha, gi, o0, counts[e], o + o0 * D + 16 * gi, D, version) != GB_OK ||
                    (g2 < GD && mact_rows(fd, wd, D, &ha, g2, o0, counts[e], o + o0 * D + 16 * g2, D, version) != GB_OK)) {
#pragma omp atomic write
                    fail = 1;
                }
            }
        }
        if (fail) {
            st = gb_error(GB_ENOMEM, "kmoe: cannot allocate a row buffer of the portable kernel");
            goto done;
        }
    }
    gb_moe_combine(y, o, pos, topk_weight, 0, T, k, D);
done:
    gb_ws_free(off);
    gb_ws_free(pos);
    gb_ws_free(tok);
    gb_ws_free(fill);
    gb_ws_free(act);
    gb_ws_free(xg);
    gb_ws_free(g);
    gb_ws_free(u);
    gb_ws_free(o);
    mact_free(&xa);
    mact_free(&ha);
    return st;
}

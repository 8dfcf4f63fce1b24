"""One-call GPU check (run through bench/gpu_check.sh): validate every CUDA kernel against the
float64 reference on fresh random data, time each one against ceilings measured in the same run,
time the PyTorch peers on the same shapes, and sweep whole models over depths.

    python bench/gpu_check.py --out DIR [--budget-s 420] [--quick] [--no-models] [--no-peers]

Method (what the lending device library's method notes and the house style ask):
  * validate before timing: every output buffer is NaN-poisoned before the kernel runs
    (cuda.set_poison), every cache page past the cached tokens holds bf16 NaN and the block table
    is shuffled, so a missed write or a stray read shows as NaN; then ||out - ref|| / ||ref|| against
    a bound per op (bf16 storage, fp32 accumulation: 4e-3 for one rounding of the output, 1e-2
    where intermediates are rounded to bf16 as well);
  * inputs are random normals on the bf16 grid (the reference sees exactly what the kernel sees),
    never zeros;
  * time with CUDA events around graph replays (capture), median of 5, inputs rotated over enough
    copies to exceed 4x the L2 cache, so the memory-bound numbers are DRAM numbers;
  * ceilings: our 16-byte copy kernel and cudaMemcpy (bytes read + written), cuBLAS bf16 GEMM
    8192^3 -- all in this run on this card.
  * --emulate runs all of it on a CPU stand-in with tiny sizes (tests/cuda_emulator.py) to check
    this script itself before a GPU session; it measures nothing.
Output in --out: validation.csv, kernels.csv, peers.csv (SDPA; peers_hf.csv when the HF peer runs
in another process), models.csv (records, evidence=measured), log.txt (appended by each process).
Kernels that fail validation are neither timed nor used by the model sweep (load_failures).
"""
from __future__ import annotations

import argparse
import csv
import gc
import io
import math
import os
import re
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import glmbench  # noqa: E402
from glmbench import cuda  # noqa: E402
from glmbench.results import records  # noqa: E402
from glmbench.core import reference as ref  # noqa: E402

T0 = time.time()
LOG = []

# Sizes: FULL for a real card; TINY for --emulate (tests/cuda_emulator.py on the CPU), which runs
# the whole script quickly to catch mistakes in this file before a GPU session spends its time.
FULL = dict(copy_bytes=2 << 30, gemm_n=8192,
            gemv=[(1, 25600, 5120), (1, 2048, 5120), (4, 25600, 5120)],
            gemm=[(4096, 25600, 5120), (4096, 2048, 2048)],
            norm=[(1, 2048), (4096, 5120)], rope=(4096, 64, 128),
            moe=(64, 4, 2048, 1536), moe_T=(1, 4096),
            gqa=(64, 8, 128), mla=(20, 512, 64),
            depths=(1024, 4096, 16384, 32768, 65536, 131072), depths_quick=(1024, 8192, 32768),
            prefill_T=4096, prefill_T_quick=2048,
            model_depths=(1024, 4096, 16384, 32768, 65536, 131072), model_depths_quick=(1024, 4096, 32768),
            pp_depths=(0, 4096, 32768), pp_depths_quick=(0, 4096), n_prompt=512, hf_prompt=512)
TINY = dict(copy_bytes=1 << 20, gemm_n=128,
            gemv=[(1, 256, 128), (4, 64, 64)], gemm=[(64, 128, 64)],
            norm=[(1, 64), (16, 128)], rope=(16, 4, 32),
            moe=(8, 2, 64, 32), moe_T=(1, 16),
            gqa=(8, 2, 128), mla=(4, 32, 8),
            depths=(64, 200), depths_quick=(64,), prefill_T=32, prefill_T_quick=16,
            model_depths=(16, 40), model_depths_quick=(16,), pp_depths=(0, 8), pp_depths_quick=(0,),
            n_prompt=8, hf_prompt=8)
P = FULL
EMULATED = False


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


class Table:
    """Rows written to CSV (atomically) after every add, so a run cut short keeps what it did."""

    def __init__(self, path, resume=False):
        self.path, self.rows = path, []
        if resume and os.path.exists(path):
            with open(path) as f:
                self.rows = [dict(r, ok=r.get("ok") == "True") if "ok" in r else dict(r) for r in csv.DictReader(f)]

    def add(self, **row):
        self.rows.append(row)
        keys = []
        for r in self.rows:
            keys += [k for k in r if k not in keys]
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        w.writeheader()
        for r in self.rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
        records.atomic_write_text(self.path, buf.getvalue())


def bf(rng, *shape, scale=1.0):
    return cuda.bf16_to_f32(cuda.f32_to_bf16(rng.standard_normal(shape).astype(np.float32) * scale))


def rel(out, want):
    out, want = np.asarray(out, np.float64), np.asarray(want, np.float64)
    if not np.all(np.isfinite(out)):
        return float("nan")
    return float(np.linalg.norm(out - want) / max(np.linalg.norm(want), 1e-300))


def route_margin(s, choice, k, n_group, topk_group, rule):
    """For each token of a router with scores s[T, E] and choices[T, E] (float64, before group
    limiting): the smallest gap between neighbouring choices among the first k + 1 of the kept
    groups (they decide which experts and in what order), and with n_group > 1 the gap between
    the topk_group-th and the next group score (by `rule`, "top2_sum" | "max"): the closest call
    that a fp32 router could decide otherwise than the float64 reference."""
    T, E = choice.shape
    gs = E // n_group
    c = choice.copy()
    margin = np.full(T, np.inf)
    if n_group > 1 and topk_group < n_group:
        grp = np.sort(c.reshape(T, n_group, gs), axis=2)[:, :, ::-1]
        g = grp[:, :, 0] + grp[:, :, 1] if rule == "top2_sum" and gs > 1 else grp[:, :, 0]
        order = np.argsort(-g, axis=1, kind="stable")
        gsorted = np.take_along_axis(g, order, axis=1)
        margin = gsorted[:, topk_group - 1] - gsorted[:, topk_group]
        kept = np.zeros((T, n_group), bool)
        np.put_along_axis(kept, order[:, :topk_group], True, axis=1)
        c[~np.repeat(kept, gs, axis=1)] = -np.inf
    cs = np.sort(c, axis=1)[:, ::-1][:, :k + 1]
    gaps = cs[:, :-1] - cs[:, 1:]  # -inf past the kept experts gives an inf gap: no competitor
    return np.minimum(margin, np.nan_to_num(gaps, nan=np.inf, posinf=np.inf).min(axis=1))


# ---- validation -----------------------------------------------------------------------------
def validate(tab, quick, model_names=(), start=0):
    rng = np.random.default_rng(int(time.time()))  # fresh data every run
    cuda.set_poison(True)

    def check(op, version, shape, err, bound, note=""):
        ok = err == err and err <= bound  # NaN fails
        tab.add(op=op, version=version, shape=shape, rel_err=f"{err:.3e}", bound=bound, ok=ok, note=note)
        log(f"  {'ok  ' if ok else 'FAIL'} {op:<28} v{version} {shape:<34} rel_err {err:.2e} (bound {bound:g}) {note}")

    groups = []  # (name, check function), run in order below

    # rms_norm
    def t_norm():
        for rows, dim, versions in ((7, 2048, (1, 2)), (3, 5120, (1, 2)), (5, 513, (1,)), (64, 128, (1, 2))):
            x, w = bf(rng, rows, dim), bf(rng, dim)
            want = ref.rms_norm(x, w, 1e-5)
            for v in versions:
                y = cuda.rms_norm(cuda.to_device(x), cuda.to_device(w), 1e-5, version=v).to_numpy()
                check("rms_norm", v, f"{rows}x{dim}", rel(y, want), 4e-3)
    groups.append(("rms_norm", t_norm))

    def t_rope():
        for layout, T, H, Dh, rd, off in (("interleaved", 5, 20, 64, 64, 0), ("half", 7, 8, 128, 128, 0),
                                          ("interleaved", 3, 4, 256, 64, 192), ("half", 2, 3, 96, 32, 16)):
            x = bf(rng, T, H, Dh)
            pos = rng.integers(0, 200_000, T).astype(np.int64)
            want = ref.rope(x, pos, theta=1e6, rot_dim=rd, rot_offset=off, layout=layout)
            y = cuda.rope(cuda.to_device(x), cuda.to_device(pos), theta=1e6, rot_dim=rd, rot_offset=off,
                          layout=layout).to_numpy()
            check(f"rope[{layout}]", 1, f"T{T} H{H} Dh{Dh} rot{rd}@{off}", rel(y, want), 4e-3, "positions to 2e5")
    groups.append(("rope", t_rope))

    def t_linear():
        cases = [(1, 2048, 5120, (1, 2, 3, 4)), (3, 768, 2048, (1, 2, 3, 4)), (8, 512, 1024, (2, 3, 4)),
                 (70, 300, 264, (1, 3, 4)), (257, 1000, 777, (1, 3, 4)), (512, 2048, 2048, (3, 4))]
        for T, N, K, versions in cases:
            x, w, b = bf(rng, T, K), bf(rng, N, K, scale=K ** -0.5), bf(rng, N, scale=0.1)
            want = ref.linear(x, w, b)
            for v in versions:
                if v == 4 and not cuda.have_cublas():
                    continue
                if v == 2 and K % 8:
                    continue
                y = cuda.linear(cuda.to_device(x), cuda.to_device(w), cuda.to_device(b), version=v).to_numpy()
                check("linear(+bias)", v, f"T{T} N{N} K{K}", rel(y, want), 4e-3)
    groups.append(("linear", t_linear))

    def t_swiglu():
        T, D, F = 9, 512, 1536
        x, g, u, d = bf(rng, T, D), bf(rng, F, D, scale=D ** -0.5), bf(rng, F, D, scale=D ** -0.5), bf(rng, D, F, scale=F ** -0.5)
        y = cuda.swiglu(*(cuda.to_device(a) for a in (x, g, u, d))).to_numpy()
        # gate/up outputs and their product are rounded to bf16 before the down projection
        check("swiglu", 0, f"T{T} D{D} F{F}", rel(y, ref.swiglu(x, g, u, d)), 1e-2)
    groups.append(("swiglu", t_swiglu))

    def t_swiglu_fused():
        for T, D, F in ((1, 2048, 10240), (5, 512, 1536)):
            x, g, u = bf(rng, T, D), bf(rng, F, D, scale=D ** -0.5), bf(rng, F, D, scale=D ** -0.5)
            d = bf(rng, D, F, scale=F ** -0.5)
            y = cuda.swiglu(*(cuda.to_device(a) for a in (x, g, u, d)), fused=True).to_numpy()
            check("swiglu (fused gate/up/silu)", 1, f"T{T} D{D} F{F}", rel(y, ref.swiglu(x, g, u, d)), 1e-2)
    groups.append(("swiglu_fused", t_swiglu_fused))

    def t_prepare():
        T, H, Dn, Dr, R, start = 3, 20, 192, 64, 512, 70
        q, c, w = bf(rng, T, H, Dn + Dr), bf(rng, T, R + Dr), bf(rng, R)
        pos = (start + np.arange(T)).astype(np.int64)
        cache = cuda.PagedCache.mla(1, 256, R, Dr, block_size=64, shuffle_seed=4)
        cache.set_length(0, start)  # rows before `start` stay NaN-poisoned: only the new rows are read back
        qn, qr = cuda.empty((T, H, Dn)), cuda.empty((T, H, Dr))
        dq, dc, dw, dpos = cuda.to_device(q), cuda.to_device(c), cuda.to_device(w), cuda.to_device(pos)  # held alive
        cuda._lib().mla_prepare(dq.ptr, dc.ptr, dw.ptr, 1e-6, dpos.ptr, 1e6, 0, cache.layer_pages(0).ptr,
                                cache.layer_table(0).ptr, cache.block_size, start, qn.ptr, qr.ptr, T, H, Dn, Dr, R)
        cache.set_length(0, start + T)
        lat, kr = cache.read(0)
        want_qr = ref.rope(q[..., Dn:], pos, theta=1e6, rot_dim=Dr)
        want_lat = ref.rms_norm(c[:, :R], w, 1e-6)
        want_kr = ref.rope(c[:, None, R:], pos, theta=1e6, rot_dim=Dr)[:, 0]
        err = max(rel(qn.to_numpy(), q[..., :Dn]), rel(qr.to_numpy(), want_qr), rel(lat[start:], want_lat),
                  rel(kr[start:], want_kr))
        check("mla_prepare (fused glue)", 1, f"T{T} H{H} start{start}", err, 4e-3, "q split/rope, norm+rope+append")
    groups.append(("mla_prepare", t_prepare))

    def t_route():
        # (scoring, E, k, n_group, topk_group, bias, norm, scale): GLM-4.7-Flash (sigmoid + bias,
        # plain and noaux_tc groups by top-2 sum), Qwen3-MoE (softmax top-k), DeepSeek-V2
        # group_limited_greedy (softmax, 8 groups of 20 scored by their max, 3 kept, top-6, no
        # renormalisation, x16); k > topk_group, else the max rule picks what plain top-k picks.
        for scoring, E, k, ng, tg, bias, norm, scale in (("sigmoid", 64, 4, 1, 1, True, True, 1.8),
                                                         ("sigmoid", 64, 8, 8, 4, True, True, 1.8),
                                                         ("softmax", 128, 8, 1, 1, False, True, 1.8),
                                                         ("softmax", 160, 6, 8, 3, False, False, 16.0)):
            T, D = 37, 512
            x = bf(rng, T, D)
            wr = (rng.standard_normal((E, D)) * D ** -0.5).astype(np.float32)
            b = (rng.standard_normal(E) * 0.1).astype(np.float32) if bias else None
            kw = dict(top_k=k, scoring=scoring, n_group=ng, topk_group=tg, norm_topk_prob=norm,
                      routed_scaling_factor=scale)
            ri, rw = ref.moe_route(x, wr, bias=b, **kw)
            idx, w = cuda.moe_route(cuda.to_device(x), cuda.to_device(wr, "f32"),
                                    bias=None if b is None else cuda.to_device(b, "f32"), **kw)
            idx, w = idx.to_numpy(), w.to_numpy()
            # fp32 logits vs fp64: a choice can flip only where two scores are within ~1e-5;
            # rows where the ordered top-k or the kept groups hang on a gap that small are not compared.
            logits = x.astype(np.float64) @ wr.T.astype(np.float64)
            s = 1 / (1 + np.exp(-logits)) if scoring == "sigmoid" else np.exp(logits - logits.max(1, keepdims=True))
            if scoring == "softmax":
                s /= s.sum(1, keepdims=True)
            rule = "top2_sum" if scoring == "sigmoid" else "max"
            clear = route_margin(s, s + (b if b is not None else 0), k, ng, tg, rule) > 1e-5
            same = np.all(idx[clear] == ri[clear])
            err = rel(w[clear], rw[clear]) if same else float("nan")
            note = f"indices equal on {clear.sum()}/{T} rows"
            if ng > 1 and rule == "max":
                # the case must exercise the limit: tokens whose experts differ from plain top-k
                plain, _ = ref.moe_route(x, wr, top_k=k, scoring=scoring)
                bites = int(np.any(np.sort(ri, 1) != np.sort(plain, 1), axis=1).sum())
                note += f"; the group limit changes {bites}/{T} tokens' experts"
                err = err if bites else float("nan")
            check(f"moe_route[{scoring}]", 1, f"T{T} E{E} k{k} g{ng}/{tg}", err, 1e-4, note)
    groups.append(("moe_route", t_route))

    def t_experts():
        for T, E, k, D, F, versions in ((1, 64, 4, 2048, 1536, (1, 2)), (5, 8, 2, 256, 96, (1, 2)),
                                        (150, 16, 4, 512, 256, (2,))):
            x = bf(rng, T, D)
            g, u = bf(rng, E, F, D, scale=D ** -0.5), bf(rng, E, F, D, scale=D ** -0.5)
            d = bf(rng, E, D, F, scale=F ** -0.5)
            idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T)]).astype(np.int32)
            w = rng.random((T, k)).astype(np.float32)
            want, counts_ref = ref.moe_experts(x, idx, w, g, u, d)
            dg, du, dd = cuda.to_device(g), cuda.to_device(u), cuda.to_device(d)
            for v in versions:
                y, counts = cuda.moe_experts(cuda.to_device(x), cuda.to_device(idx, "i32"), cuda.to_device(w, "f32"),
                                             dg, du, dd, version=v)
                same = np.array_equal(counts.to_numpy(), counts_ref)
                check("moe_experts", v, f"T{T} E{E} k{k} D{D} F{F}", rel(y.to_numpy(), want) if same else float("nan"),
                      1e-2, "counts equal" if same else "COUNTS DIFFER")
    groups.append(("moe_experts", t_experts))

    def t_cache():
        cache = cuda.PagedCache.mla(2, 500, 512, 64, block_size=64, shuffle_seed=1)
        lat, kr = bf(rng, 130, 512), bf(rng, 130, 64)
        cache.append(1, cuda.to_device(lat[:57]), cuda.to_device(kr[:57]))
        cache.append(1, cuda.to_device(lat[57:]), cuda.to_device(kr[57:]))
        a, b = cache.read(1)
        exact = np.array_equal(a, lat) and np.array_equal(b, kr) and cache.length(0) == 0
        check("paged_append[mla]", 1, "2 appends, 130 rows", 0.0 if exact else float("nan"), 0.0, "bit-exact")
    groups.append(("paged_append", t_cache))

    def t_gqa():
        cases = [(1, 1000, 64, 8, 128, 128), (4, 777, 32, 8, 128, 128), (1, 3000, 80, 8, 128, 128),
                 (2, 500, 16, 16, 256, 256), (300, 300, 8, 2, 128, 128), (100, 400, 12, 4, 64, 96),
                 (130, 1000, 16, 2, 128, 128), (64, 64, 4, 4, 64, 64),
                 # pages that tiles straddle (kernel 5 keeps the rows of two tiles ahead)
                 (1, 2000, 64, 8, 128, 128, 17), (3, 1500, 40, 8, 64, 64, 48)]
        for T, L, Hq, Hkv, Dh, Dv, *bs in cases:
            k, v, q = bf(rng, L, Hkv, Dh), bf(rng, L, Hkv, Dv), bf(rng, T, Hq, Dh)
            want = ref.gqa_attention(q, k, v)
            cache = cuda.PagedCache.gqa(1, L + 100, Hkv, Dh, Dv, block_size=bs[0] if bs else 64, shuffle_seed=2)
            cache.append(0, cuda.to_device(k), cuda.to_device(v))
            versions = [1]
            if T <= 4 and Dh == Dv == 128:
                versions.append(2)
            if T <= 4 and Dh % 16 == 0 and Dv % 32 == 0 and Dh <= 256 and Dv <= 256:
                versions.append(3)
            if Dh % 16 == 0 and Dv % 16 == 0 and Dh <= 128 and Dv <= 128:
                versions.append(4)
            if T <= 4 and Dh % 16 == 0 and Dv % 32 == 0 and Dh <= 128 and Dv <= 128:
                versions.append(5)
            for ver in versions:
                for splits in ((1, 0) if ver not in (4, 5) else (1,) if ver == 4 else (1, 0, 7)):  # 4: no split-K
                    out = cuda.gqa_attention(cuda.to_device(q), cache, 0, n_splits=splits, version=ver).to_numpy()
                    check("gqa_attention", ver, f"T{T} L{L} Hq{Hq} Hkv{Hkv} Dh{Dh} Dv{Dv}"
                          + (f" page{bs[0]}" if bs else ""), rel(out, want), 1e-2,
                          f"splits={'auto' if splits == 0 else splits}")
    groups.append(("gqa_attention", t_gqa))

    def t_mla():
        H, Dn, Dr, Dv, R = 20, 192, 64, 256, 512
        for T, L, bs in ((1, 700, 64), (3, 2000, 64), (1, 5, 64), (200, 200, 64), (1, 3000, 17), (2, 1200, 48)):
            lat, kr = bf(rng, L, R), bf(rng, L, Dr)
            kvb = bf(rng, H * (Dn + Dv), R, scale=R ** -0.5)
            qn, qr = bf(rng, T, H, Dn), bf(rng, T, H, Dr)
            want = ref.mla_attention(qn, qr, lat, kr, kvb, Dv, 1 / 16)
            cache = cuda.PagedCache.mla(1, L + 64, R, Dr, block_size=bs, shuffle_seed=3)
            cache.append(0, cuda.to_device(lat), cuda.to_device(kr))
            dkvb = cuda.to_device(kvb)
            for strat, ver, splits in (("naive", 0, None), ("absorbed", 1, None), ("absorbed", 2, None),
                                       ("absorbed", 3, None), ("flash", 1, None), ("flash", 2, None),
                                       ("flash", 3, None), ("flash", 3, 5)):
                if strat == "naive" and T * L > 500_000:
                    continue
                out = cuda.mla_attention(cuda.to_device(qn), cuda.to_device(qr), cache, 0, dkvb, v_head_dim=Dv,
                                         scale=1 / 16, strategy=strat, n_splits=splits, version=ver).to_numpy()
                # q_lat, p and o_lat are rounded to bf16 on the way (as FlashMLA does with p)
                check(f"mla_attention[{strat}]", ver, f"T{T} L{L} H{H} R{R}" + (f" page{bs}" if bs != 64 else ""),
                      rel(out, want), 2e-2, "" if splits is None else f"splits={splits}")
    groups.append(("mla_attention", t_mla))

    def t_glue():
        # the split-K combine alone (partials as the split kernels write them; empty splits with
        # m = -inf and NaN partials, which must not leak) and MLA's q absorption, every version
        for rows, S, Dv in ((20, 32, 512), (64, 49, 128), (7, 3, 96), (5, 200, 64), (3, 1, 40)):
            m = rng.standard_normal((rows, S)).astype(np.float32) * 3
            lse = rng.uniform(0.5, 40.0, (rows, S)).astype(np.float32)
            acc = rng.standard_normal((rows, S, Dv)).astype(np.float32) * lse[..., None]
            if S > 2:
                m[:, 1], acc[:, 1] = -np.inf, np.nan   # an empty split
            e = np.where(np.isneginf(m), 0.0, np.exp(m - m.max(axis=1, keepdims=True)))
            want = np.einsum("rs,rsd->rd", e, np.nan_to_num(acc)) / (e * lse).sum(axis=1, keepdims=True)
            ws = cuda.to_device(np.concatenate([m.ravel(), lse.ravel(), acc.ravel()]), "f32")
            for v in (1, 2):
                out = cuda.empty((rows, Dv))
                cuda._lib().attention_combine(ws.ptr, out.ptr, rows, S, Dv, v)
                check("attention_combine", v, f"rows{rows} S{S} Dv{Dv}", rel(out.to_numpy(), want), 4e-3)
        for T, H, Dn, Dv, R in ((1, 20, 192, 256, 512), (3, 20, 192, 256, 512), (8, 16, 128, 128, 512),
                                (2, 5, 24, 40, 128), (12, 20, 192, 256, 512)):
            qn, kvb = bf(rng, T, H, Dn), bf(rng, H * (Dn + Dv), R, scale=R ** -0.5)
            want = np.einsum("thn,hnr->thr", qn.astype(np.float64),
                             kvb.astype(np.float64).reshape(H, Dn + Dv, R)[:, :Dn])
            dq, dk = cuda.to_device(qn), cuda.to_device(kvb)
            for v in (1, 2):
                out = cuda.empty((T, H, R))
                cuda._lib().mla_absorb_q(dq.ptr, dk.ptr, out.ptr, T, H, Dn, Dv, R, v)
                check("mla_absorb_q", v, f"T{T} H{H} Dn{Dn} R{R}", rel(out.to_numpy(), want), 4e-3)
    groups.append(("attention_glue", t_glue))

    def t_models():
        # Whole-model wiring at full width, 2 decoder layers (GLM: one dense, one MoE): CudaModel
        # against the C-core Model on the same weights (float32 activations there, bf16 here).
        from glmbench.models import configs
        from glmbench.models.model import Model
        for name in model_names:
            cfg = name if isinstance(name, configs.ModelConfig) else configs.load(name)
            m = cuda.CudaModel(cfg, max_context=64, layers=2, seed=5)
            m.pin_routing()  # near-ties in the router would compare roundings, not wiring
            hw = m.host_weights()
            hf = {k: v for k, v in cfg.hf.items() if not k.startswith("_")}
            hf["num_hidden_layers"] = 2
            cpu = Model(configs.load(hf), state_dict=hw, weights="bf16", kv="f32", max_context=64)
            toks = [int(t) for t in rng.integers(0, cfg.vocab_size, 6)]
            got, want = m.prefill(toks).to_numpy(), cpu.prefill(np.array(toks))
            check(f"CudaModel vs C core [{cfg.name}]", 0, "2 layers, pp6", rel(got, want), 5e-2)
            got, want = m.decode(toks[0]).to_numpy()[0], cpu.decode(toks[0])
            check(f"CudaModel vs C core [{cfg.name}]", 0, "2 layers, tg@6", rel(got, want), 5e-2)
            u = cuda.CudaModel(cfg, max_context=64, layers=2, seed=5, fused=False)
            u.pin_routing()
            m.reset()
            # both round activations to bf16 at different points: ~1e-2 apart, as each is from the C core
            check(f"CudaModel fused vs unfused [{cfg.name}]", 0, "2 layers, pp6",
                  rel(m.prefill(toks).to_numpy(), u.prefill(toks).to_numpy()), 5e-2)
            del m, u, cpu, hw
            gc.collect()
    groups.append(("models", t_models))

    def t_hf():
        # Oracle 2: tiny HF transformers models (float32 on the CPU) with the same weights loaded
        # into CudaModel; routing pinned in both so that a near-tie cannot decide the comparison.
        import inspect
        import torch
        import transformers
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        import cuda_emulator
        from glmbench.models import configs
        for kind in ("glm", "qwen"):
            dims = {k: v for k, v in cuda_emulator.tiny_config(kind).hf.items() if not k.startswith("_")}
            hc = transformers.AutoConfig.for_model(dims.pop("model_type"), **dims)
            hc._attn_implementation = "eager"
            torch.manual_seed(0)
            hf = transformers.AutoModelForCausalLM.from_config(hc, dtype=torch.float32).eval()
            g = torch.Generator().manual_seed(int(rng.integers(1 << 30)))
            with torch.no_grad():
                for name, prm in hf.named_parameters():
                    prm.copy_(1.0 + 0.1 * torch.randn(prm.shape, generator=g) if prm.ndim == 1
                              else torch.randn(prm.shape, generator=g) / prm.shape[-1] ** 0.5)
                    if not name.endswith("mlp.gate.weight"):  # what CudaModel stores in bf16, HF gets rounded
                        prm.copy_(prm.to(torch.bfloat16).to(torch.float32))
                k = hc.to_dict().get("num_experts_per_tok") or 0
                for name, b in hf.named_buffers():
                    if name.endswith("e_score_correction_bias"):
                        b.zero_()
                        b[:k] = 10.0
            cfg = configs.load(hc.to_dict())
            m = cuda.CudaModel(cfg, max_context=32)
            m.load_hf_weights({n: v.numpy() for n, v in hf.state_dict().items()})
            prompt = [int(t) for t in rng.integers(0, cfg.vocab_size, 7)]
            steps = [int(t) for t in rng.integers(0, cfg.vocab_size, 3)]
            kw = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"
            with torch.no_grad():
                r = hf(torch.tensor([prompt]), use_cache=True)
                want = [r.logits[0].numpy()]
                for t in steps:
                    r = hf(torch.tensor([[t]]), use_cache=True, **{kw: getattr(r, kw)})
                    want.append(r.logits[0, -1].numpy())
            got = [m.prefill(prompt).to_numpy()] + [m.decode(t).to_numpy()[0] for t in steps]
            err = max(rel(a, b) for a, b in zip(got, want))
            # bf16 activations through 2-3 layers of a 64-wide model: 0.8e-2 to 2e-2 seen on the emulator
            check(f"CudaModel vs HF transformers [{cfg.name}]", 0, "tiny, pp7 + 3 decode steps", err, 5e-2,
                  "same bf16 weights; HF float32 activations")
    groups.append(("hf_oracle", t_hf))

    def t_graph():
        x, w = bf(rng, 4, 1024), bf(rng, 1024)
        dx, dw = cuda.to_device(x), cuda.to_device(w)
        g = cuda.capture(lambda: cuda.rms_norm(dx, dw, 1e-6))
        g.launch()
        cuda.synchronize()
        check("graph replay (rms_norm)", 0, "4x1024", rel(g.result.to_numpy(), ref.rms_norm(x, w, 1e-6)), 4e-3)
    groups.append(("graph", t_graph))
    for gi in range(start, len(groups)):
        name, fn = groups[gi]
        try:
            fn()
        except Exception as e:  # a crash is a failed check, recorded with its message
            tab.add(op=name, version="", shape="", rel_err="", bound="", ok=False, note=f"{type(e).__name__}: {e}")
            log(f"  FAIL {name}: {type(e).__name__}: {e}")
            traceback.print_exc()
            if re.search(r"CUDA error 7\d\d ", str(e)):
                # a sticky error (illegal address, launch failure...): this process's context is
                # gone; gpu_check.sh starts a new one at the next group
                return None, gi + 1
    cuda.set_poison(False)
    n_bad = sum(1 for r in tab.rows if not r["ok"])
    log(f"validation: {len(tab.rows) - n_bad} passed, {n_bad} failed")
    return n_bad, None


FAILED = set()  # (op, version) that failed validation in this run: not timed, not used by models


def load_failures(out):
    """Read validation.csv (written by the validate section, maybe by another process) and steer
    the rest of the run away from what failed: such kernels are not timed, and the models use the
    fallback versions / the unfused path."""
    path = os.path.join(out, "validation.csv")
    if not os.path.exists(path):
        return
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["ok"] != "True":
                FAILED.add((r["op"], r["version"]))
    if FAILED:
        log(f"  failed validation, skipped below: {sorted(FAILED)}")
    if failed("gqa_attention", 5):  # the decode default; then kernel 3, 2, 1
        cuda.prefer("gqa", next((v for v in (3, 2) if not failed("gqa_attention", v)), 1))
    mla_bad = lambda v: failed("mla_attention[flash]", v) or failed("mla_attention[absorbed]", v)  # noqa: E731
    if mla_bad(3):
        cuda.prefer("mla", 1 if mla_bad(2) else 2)


def failed(op, version):
    """Failed its own check, or sits in a check group that crashed (version "" rows: which version
    crashed is not known, so none of the group's is trusted)."""
    return (op, str(version)) in FAILED or any(v == "" and op.startswith(g) for g, v in FAILED)


def fused_ok():
    return not (any(op.startswith(("mla_prepare", "swiglu (fused", "swiglu_fused", "CudaModel fused"))
                    for op, _ in FAILED) or failed("moe_experts", 1))


# ---- timing ---------------------------------------------------------------------------------
def rotated(make, nbytes_one, l2):
    """Enough independent input sets that one pass over them exceeds 4x L2 (at most 64)."""
    n = max(1, min(64, math.ceil(4 * l2 / max(nbytes_one, 1))))
    return [make(i) for i in range(n)]


def time_sets(fns):
    """Median device ms of one call, with the calls of all sets captured in one graph."""
    g = cuda.capture(lambda: [f() for f in fns])
    t = cuda.time_ms(g, warmup=2, iters=max(1, 20 // len(fns)), repeats=5)
    return t["median_ms"] / len(fns), t


def kernels(tab, ceil, quick, budget, glue_only=False):
    info = cuda.device_info()
    l2 = info["l2_bytes"]
    rng = np.random.default_rng(7)
    bw = ceil["copy_gbs"]

    def row(op, version, shape, ms, nbytes=0.0, flops=0.0, note=""):
        gbs = nbytes / ms / 1e6 if nbytes else None
        tfs = flops / ms / 1e9 if flops else None
        tab.add(op=op, version=version, shape=shape, ms=f"{ms:.4f}", gbs=None if gbs is None else f"{gbs:.0f}",
                pct_copy=None if gbs is None else f"{100 * gbs / bw:.0f}",
                tflops=None if tfs is None else f"{tfs:.1f}",
                pct_gemm=None if tfs is None or not ceil.get("gemm_tflops") else f"{100 * tfs / ceil['gemm_tflops']:.0f}",
                note=note)
        extra = (f" {gbs:7.0f} GB/s ({100 * gbs / bw:3.0f}% copy)" if gbs else "") + (f" {tfs:7.1f} TFLOP/s" if tfs else "")
        log(f"  {op:<26} v{version} {shape:<30} {ms * 1e3:9.1f} us{extra} {note}")

    def rand_dev(shape, scale=1.0):
        a = cuda.empty(shape)
        cuda._lib().random_bf16(a.ptr, a.size, int(rng.integers(1 << 62)), scale)
        return a

    if glue_only:
        glue(tab, row, rand_dev)
        return
    # GEMV (decode) and GEMM (prefill)
    for T, N, K in P["gemv"]:
        for v in (2, 4) if cuda.have_cublas() else (2,):
            if failed("linear(+bias)", v):
                continue
            sets = rotated(lambda i: (rand_dev((T, K)), rand_dev((N, K), K ** -0.5)), N * K * 2, l2)
            ms, _ = time_sets([lambda s=s: cuda.linear(s[0], s[1], version=v) for s in sets])
            row("linear", v, f"T{T} N{N} K{K}", ms, nbytes=N * K * 2, flops=2 * T * N * K)
    for T, N, K in P["gemm"]:
        x, w = rand_dev((T, K)), rand_dev((N, K), K ** -0.5)
        for v in (3, 4) if cuda.have_cublas() else (3,):
            if failed("linear(+bias)", v):
                continue
            ms, _ = time_sets([lambda: cuda.linear(x, w, version=v)])
            row("linear", v, f"T{T} N{N} K{K}", ms, flops=2 * T * N * K)
    if time.time() - T0 > budget:
        return
    # small ops at decode and prefill sizes
    for rows, dim in P["norm"]:
        x, w = rand_dev((rows, dim)), rand_dev((dim,))
        for v in (1, 2):
            if failed("rms_norm", v):
                continue
            ms, _ = time_sets([lambda: cuda.rms_norm(x, w, version=v)])
            row("rms_norm", v, f"{rows}x{dim}", ms, nbytes=2 * rows * dim * 2)
    T, H, Dh = P["rope"]
    x = rand_dev((T, H, Dh))
    pos = cuda.to_device(np.arange(T, dtype=np.int64))
    ms, _ = time_sets([lambda: cuda.rope(x, pos, theta=1e6, rot_dim=Dh, layout="half")])
    row("rope[half]", 1, f"T{T} H{H} Dh{Dh}", ms, nbytes=2 * x.nbytes)

    # MoE layer, GLM-4.7-Flash shapes: decode (T=1) and prefill (T=4096)
    E, k, D, F = P["moe"]
    wg, wu, wd = rand_dev((E, F, D), D ** -0.5), rand_dev((E, F, D), D ** -0.5), rand_dev((E, D, F), F ** -0.5)
    wr = cuda.to_device((rng.standard_normal((E, D)) * D ** -0.5).astype(np.float32), "f32")
    for T in P["moe_T"]:
        x = rand_dev((T, D))
        for v in (1, 2) if T == 1 else (2,):
            if failed("moe_experts", v):
                continue

            def f(x=x, v=v):
                idx, w = cuda.moe_route(x, wr, top_k=k, scoring="sigmoid", routed_scaling_factor=1.8)
                return cuda.moe_experts(x, idx, w, wg, wu, wd, version=v)
            ms, _ = time_sets([f])
            chosen = min(E, T * k)
            row("moe (route+experts)", v, f"T{T} E{E} k{k} D{D} F{F}", ms, nbytes=chosen * 3 * F * D * 2,
                flops=T * k * 6 * F * D, note="bytes: chosen experts' weights")
    glue(tab, row, rand_dev)
    if time.time() - T0 > budget:
        return
    # attention at depth
    depths = P["depths_quick"] if quick else P["depths"]
    Hq, Hkv, Dh = P["gqa"]  # Qwen3-32B
    for L in depths:
        kv_bytes = L * Hkv * Dh * 2 * 2

        def mk(i):
            c = cuda.PagedCache.gqa(1, L + 64, Hkv, Dh, poison=False, shuffle_seed=i)
            c.fill_synthetic(L, seed=i)
            return c, rand_dev((1, Hq, Dh))
        sets = rotated(mk, kv_bytes, l2)
        for v in (1, 2, 3, 5):
            if failed("gqa_attention", v):
                continue
            ms, _ = time_sets([lambda s=s: cuda.gqa_attention(s[1], s[0], 0, version=v) for s in sets])
            row("gqa decode (Qwen3-32B)", v, f"L{L} Hq{Hq} Hkv{Hkv}", ms, nbytes=kv_bytes,
                flops=4 * Hq * Dh * L)
        del sets
        H, R, Dr = P["mla"]  # GLM-4.7-Flash
        lat_bytes = L * (R + Dr) * 2

        def mk2(i):
            c = cuda.PagedCache.mla(1, L + 64, R, Dr, poison=False, shuffle_seed=i)
            c.fill_synthetic(L, seed=i, scale=0.1)
            return c, rand_dev((1, H, R)), rand_dev((1, H, Dr))
        sets = rotated(mk2, lat_bytes, l2)

        def mla_core(s, v):
            c, ql, qr = s
            S = cuda._lib().mla_plan(1, L, H)
            wsb = cuda._lib().mla_workspace_bytes(1, H, R, S)
            ws = cuda.empty((wsb // 4,), "f32")
            o = cuda.empty((1, H, R))
            cuda._lib().mla_absorbed_attention(ql.ptr, qr.ptr, c.layer_pages(0).ptr, c.layer_table(0).ptr,
                                               c.block_size, o.ptr, 1, L, H, R, Dr, 1 / 16, S, ws.ptr, wsb, v)
            return o
        for v in (1, 2, 3):
            if failed("mla_attention[flash]", v):
                continue
            ms, _ = time_sets([lambda s=s: mla_core(s, v) for s in sets])
            row("mla absorbed split-K (GLM)", v, f"L{L} H{H} R{R}", ms, nbytes=lat_bytes,
                flops=2 * H * (R + Dr + R) * L, note="attention kernel + combine")
        del sets
        gc.collect()
        if time.time() - T0 > budget:
            return
    # prefill attention from empty
    T = P["prefill_T_quick"] if quick else P["prefill_T"]
    c = cuda.PagedCache.gqa(1, T, Hkv, Dh, poison=False)
    c.fill_synthetic(T)
    q = rand_dev((T, Hq, Dh))
    for v in (1, 4):
        if failed("gqa_attention", v):
            continue
        ms, _ = time_sets([lambda: cuda.gqa_attention(q, c, 0, version=v)])
        row("gqa prefill (Qwen3-32B)", v, f"T{T} causal", ms, flops=4 * Hq * Dh * T * T / 2)


def glue(tab, row, rand_dev):
    """The split-K combine and MLA's q absorption, each version, at GLM-4.7-Flash's and Qwen3-32B's
    decode shapes (bytes: what the kernel must read and write)."""
    lib = cuda._lib()
    for rows, S, Dv, what in ((20, 32, 512, "GLM @4K"), (20, 132, 512, "GLM @32K+"), (64, 49, 128, "Qwen3")):
        ws = cuda.empty((rows * S * (Dv + 2),), "f32")
        lib.fill_u32(ws.ptr, 0x3F800000, ws.size)  # 1.0f: finite partials
        out = cuda.empty((rows, Dv))
        for v in (1, 2):
            if failed("attention_combine", v):
                continue
            ms, _ = time_sets([lambda: lib.attention_combine(ws.ptr, out.ptr, rows, S, Dv, v)])
            row("attention combine", v, f"rows{rows} S{S} Dv{Dv} ({what})", ms, nbytes=rows * S * (Dv + 2) * 4)
    T, H, Dn, Dv, R = 1, 20, 192, 256, 512
    sets = [(rand_dev((T, H, Dn)), rand_dev((H * (Dn + Dv), R), R ** -0.5), cuda.empty((T, H, R))) for _ in range(16)]
    for v in (1, 2):
        if failed("mla_absorb_q", v):
            continue
        ms, _ = time_sets([lambda s=s: lib.mla_absorb_q(s[0].ptr, s[1].ptr, s[2].ptr, T, H, Dn, Dv, R, v)
                           for s in sets])
        row("mla absorb_q (GLM)", v, f"T{T} H{H} Dn{Dn} R{R}", ms, nbytes=H * Dn * R * 2)


def ceilings(tab):
    c = cuda.copy_bandwidth(P["copy_bytes"])
    out = {"copy_gbs": max(c["kernel_gbs"], c["memcpy_gbs"])}
    size = f"{c['nbytes'] / 2**20:.0f} MiB"
    tab.add(op="copy (16-byte kernel)", version="", shape=size, ms="", gbs=f"{c['kernel_gbs']:.0f}", note="read+write")
    tab.add(op="copy (cudaMemcpy d2d)", version="", shape=size, ms="", gbs=f"{c['memcpy_gbs']:.0f}", note="read+write")
    log(f"  copy ceiling: kernel {c['kernel_gbs']:.0f} GB/s, cudaMemcpy {c['memcpy_gbs']:.0f} GB/s")
    if cuda.have_cublas():
        n = P["gemm_n"]
        rng = np.random.default_rng(3)
        a = cuda.to_device(rng.standard_normal((n, n)).astype(np.float32))
        b = cuda.to_device(rng.standard_normal((n, n)).astype(np.float32) / math.sqrt(n))
        g = cuda.capture(lambda: cuda.linear(a, b, version=4))
        t = cuda.time_ms(g, warmup=3, iters=10, repeats=5)
        out["gemm_tflops"] = 2 * n ** 3 / t["median_ms"] / 1e9
        tab.add(op="cuBLAS bf16 GEMM", version=4, shape=f"{n}^3", ms=f"{t['median_ms']:.4f}",
                tflops=f"{out['gemm_tflops']:.1f}", note="random data")
        log(f"  GEMM ceiling: cuBLAS bf16 {n}^3 {out['gemm_tflops']:.0f} TFLOP/s")
    return out


# ---- peers ----------------------------------------------------------------------------------
def peers(tab, quick, budget):
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        log(f"  PyTorch not importable ({e}); no peers")
        return
    if not torch.cuda.is_available():
        log("  PyTorch sees no GPU; no peers")
        return
    dev = "cuda"

    def t_torch(fn, iters=20):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) / iters)
        return float(np.median(ts))

    Hq, Hkv, Dh = P["gqa"]
    for L in P["depths_quick"] if quick else P["depths"]:
        n = max(1, min(16, math.ceil(4 * 60e6 / (L * Hkv * Dh * 4))))
        sets = [(torch.randn(1, Hq, 1, Dh, device=dev, dtype=torch.bfloat16),
                 torch.randn(1, Hkv, L, Dh, device=dev, dtype=torch.bfloat16),
                 torch.randn(1, Hkv, L, Dh, device=dev, dtype=torch.bfloat16)) for _ in range(n)]
        ms = t_torch(lambda: [F.scaled_dot_product_attention(q, k, v, enable_gqa=True) for q, k, v in sets]) / n
        gbs = L * Hkv * Dh * 4 / ms / 1e6
        tab.add(peer="torch sdpa", op="gqa decode (Qwen3-32B)", shape=f"L{L}", ms=f"{ms:.4f}", gbs=f"{gbs:.0f}")
        log(f"  torch sdpa gqa decode L{L}: {ms * 1e3:.1f} us {gbs:.0f} GB/s")
        sets = None
        if time.time() - T0 > budget:
            return
    T = P["prefill_T_quick"] if quick else P["prefill_T"]
    q = torch.randn(1, Hq, T, Dh, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, Hkv, T, Dh, device=dev, dtype=torch.bfloat16)
    v = torch.randn(1, Hkv, T, Dh, device=dev, dtype=torch.bfloat16)
    ms = t_torch(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), iters=5)
    tab.add(peer="torch sdpa", op="gqa prefill (Qwen3-32B)", shape=f"T{T} causal", ms=f"{ms:.4f}",
            tflops=f"{4 * Hq * Dh * T * T / 2 / ms / 1e9:.1f}")
    log(f"  torch sdpa gqa prefill T{T}: {ms:.3f} ms")
    q = k = v = None
    torch.cuda.empty_cache()


def hf_peer(tab, names, budget):
    """HF transformers forward of the same architectures, 2 decoder layers each (random bf16 init on
    the GPU), against CudaModel with the same 2 layers: prefill 512 tokens, and one decode step
    after it (HF eager with its DynamicCache; ours as a graph replay and eagerly)."""
    try:
        import torch
        import transformers
    except Exception as e:  # noqa: BLE001
        log(f"  transformers not importable ({e}); no HF peer")
        return
    from glmbench.models import configs
    if not torch.cuda.is_available():
        log("  PyTorch sees no GPU; no HF peer")
        return
    for name in names:
        if time.time() - T0 > budget:
            return
        try:
            cfg = name if isinstance(name, configs.ModelConfig) else configs.load(name)
            name = cfg.name
            hf = {k: v for k, v in cfg.hf.items() if not k.startswith("_")}
            hf["num_hidden_layers"] = 2
            hf.pop("num_nextn_predict_layers", None)
            conf = transformers.AutoConfig.for_model(hf["model_type"], **{k: v for k, v in hf.items() if k != "model_type"})
            with torch.device("cuda"):
                try:
                    model = transformers.AutoModelForCausalLM.from_config(conf, dtype=torch.bfloat16).eval()
                except TypeError:  # transformers 4.x spells it torch_dtype
                    model = transformers.AutoModelForCausalLM.from_config(conf, torch_dtype=torch.bfloat16).eval()
            n = P["hf_prompt"]
            ids = torch.randint(0, cfg.vocab_size, (1, n), device="cuda")
            with torch.no_grad():
                model(ids)  # warm-up
                torch.cuda.synchronize()
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                out = model(ids, use_cache=True)
                b.record()
                b.synchronize()
                pp_ms = a.elapsed_time(b)
                past = out.past_key_values
                tok = ids[:, -1:]
                ts = []
                for _ in range(10):
                    a.record()
                    model(tok, past_key_values=past, use_cache=True)
                    b.record()
                    b.synchronize()
                    ts.append(a.elapsed_time(b))
                tg_ms = float(np.median(ts))
            del model, out, past
            torch.cuda.empty_cache()
            m = cuda.CudaModel(cfg, max_context=2 * n + 8, layers=2, fused=fused_ok())
            gp = m.prefill_graph(n, 0)
            ours_pp = cuda.time_ms(gp, warmup=1, iters=1, repeats=3)["median_ms"]
            del gp
            g = m.decode_graph(n)
            ours_tg = cuda.time_ms(g, iters=10, repeats=5)["median_ms"]
            del g, m
            gc.collect()
            tab.add(peer="HF transformers (eager)", op=f"{name} 2 layers pp{n}", ms=f"{pp_ms:.3f}", ours_ms=f"{ours_pp:.3f}")
            tab.add(peer="HF transformers (eager)", op=f"{name} 2 layers tg@{n}", ms=f"{tg_ms:.3f}",
                    ours_ms=f"{ours_tg:.3f}", note="ours: CUDA graph replay")
            log(f"  HF {name} 2 layers: pp{n} {pp_ms:.2f} ms (ours {ours_pp:.2f}), tg@{n} {tg_ms:.2f} ms (ours {ours_tg:.2f})")
        except Exception as e:  # noqa: BLE001
            tab.add(peer="HF transformers", op=name, note=f"{type(e).__name__}: {e}")
            log(f"  HF peer {name} failed: {type(e).__name__}: {e}")


# ---- whole models ---------------------------------------------------------------------------
def models(path, names, ceil, quick, budget):
    from glmbench.models import configs
    from glmbench.measure import decode_bytes_per_token
    recs = []
    info = cuda.device_info()
    depths = P["model_depths_quick"] if quick else P["model_depths"]
    pp_depths = P["pp_depths_quick"] if quick else P["pp_depths"]
    n_prompt = P["n_prompt"]
    for name in names:
        cfg = name if isinstance(name, configs.ModelConfig) else configs.load(name)
        name = cfg.name
        if time.time() - T0 > budget:
            log(f"  budget spent: {name} skipped")
            break
        base = dict(evidence="measured", model=cfg.name, model_type=cfg.model_type, device=f"GPU: {info['name']}",
                    n_cards=1, split="none", weights="bf16", type_k="bf16", type_v="bf16",
                    mla_strategy="flash" if cfg.attention == "mla" else "", runtime="glmbench-cuda",
                    glmbench_version=glmbench.__version__, copy_gbs=round(ceil["copy_gbs"]),
                    fused=fused_ok(), attention_versions=str(cuda._PREFER or "launcher default"))
        if EMULATED:
            base.update(device="CPU emulator (not a measurement)", emulated=True)
        t_build = time.time()
        m = cuda.CudaModel(cfg, max_context=max(depths) + n_prompt + 8, fused=fused_ok())
        free, total = cuda.mem_info()
        r = dict(base, test="mem", n_depth=max(depths), n_prompt=0, n_gen=0, weight_bytes=m.weight_bytes,
                 kv_bytes=m.cache.bytes_per_token * max(depths), kv_bytes_allocated=m.cache.bytes_allocated,
                 device_bytes_used=m.device_bytes_used, device_free_bytes=free, device_total_bytes=total,
                 build_s=round(time.time() - t_build, 2))
        recs.append(r)
        records.write_records(path, recs)
        log(f"  {name}: weights {m.weight_bytes / 1e9:.1f} GB, cache {m.cache.bytes_allocated / 1e9:.1f} GB, "
            f"device used {m.device_bytes_used / 1e9:.1f} GB")
        for d in depths:
            if time.time() - T0 > budget:
                break
            g = m.decode_graph(d)
            logits = g.result.to_numpy()
            finite = bool(np.all(np.isfinite(logits)))
            t = cuda.time_ms(g, warmup=2, iters=5, repeats=5)
            floor_b = decode_bytes_per_token(cfg, "bf16", "bf16", d)
            floor_ms = floor_b / ceil["copy_gbs"] / 1e6
            r = dict(base, test="tg", n_depth=d, n_prompt=0, n_gen=1, avg_ts=1e3 / t["median_ms"],
                     step_ms=t["median_ms"], step_ms_min=t["min_ms"], step_ms_max=t["max_ms"], floor_bytes=floor_b,
                     floor_ms=floor_ms, x_floor=t["median_ms"] / floor_ms, logits_finite=finite)
            recs.append(r)
            records.write_records(path, recs)
            log(f"  {name} tg@{d}: {t['median_ms']:.3f} ms = {1e3 / t['median_ms']:.1f} tok/s, "
                f"{t['median_ms'] / floor_ms:.2f}x the bytes/bandwidth floor{'' if finite else ' NON-FINITE LOGITS'}")
            del g
            gc.collect()
        for d in pp_depths:
            if time.time() - T0 > budget:
                break
            g = m.prefill_graph(n_prompt, d)
            t = cuda.time_ms(g, warmup=1, iters=1, repeats=3)
            del g
            r = dict(base, test="pp", n_depth=d, n_prompt=n_prompt, n_gen=0, avg_ts=n_prompt * 1e3 / t["median_ms"],
                     step_ms=t["median_ms"])
            recs.append(r)
            records.write_records(path, recs)
            log(f"  {name} pp{n_prompt}@{d}: {t['median_ms']:.2f} ms = {n_prompt * 1e3 / t['median_ms']:.0f} tok/s")
        del m
        gc.collect()
    return recs


SECTIONS = ("validate", "kernels", "glue", "peers", "models", "hf")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting new sections after this")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma list of sections to run (default: all of {','.join(SECTIONS)}); gpu_check.sh runs "
                         "them in three processes so that a kernel fault (a sticky CUDA error) in one cannot stop "
                         "the others")
    ap.add_argument("--quick", action="store_true", help="fewer depths")
    ap.add_argument("--start-group", type=int, default=0, help="validation: resume at this check group "
                    "(after a sticky CUDA error ended the previous process)")
    ap.add_argument("--models", default="glm-4.7-flash,qwen3-32b")
    ap.add_argument("--emulate", action="store_true",
                    help="run on tests/cuda_emulator.py with tiny sizes: checks this script, not the kernels")
    a = ap.parse_args(argv)
    only = [x for x in a.only.split(",") if x]
    bad = [x for x in only if x not in SECTIONS]
    if bad:
        ap.error(f"--only: unknown sections {bad}; choose from {SECTIONS}")
    os.makedirs(a.out, exist_ok=True)
    names = [n for n in a.models.split(",") if n]
    global P, EMULATED
    if a.emulate:
        EMULATED = True
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        import cuda_emulator
        cuda_emulator.install()
        P = TINY
        names = [cuda_emulator.tiny_config("glm"), cuda_emulator.tiny_config("qwen")]
        log("EMULATED: glmbench.cuda._cuda replaced by the CPU emulator; no number below is a GPU measurement")
    info = cuda.device_info()
    free, total = cuda.mem_info()
    log(f"device: {info['name']} cc {info['compute_capability']} SMs {info['sm_count']} L2 {info['l2_bytes'] >> 20} MiB "
        f"memory {total / 2**30:.1f} GiB ({free / 2**30:.1f} free); cuBLAS {'yes' if cuda.have_cublas() else 'no'}; "
        f"sections {','.join(only)}")
    status = 0
    try:
        if "validate" in only:
            log("== validation (fresh random data, poisoned outputs and cache padding)"
                + (f", from check group {a.start_group}" if a.start_group else ""))
            vtab = Table(os.path.join(a.out, "validation.csv"), resume=a.start_group > 0)
            n_bad, next_group = validate(vtab, a.quick, names, a.start_group)
            if next_group is not None:
                log(f"sticky CUDA error: validation continues in a new process at group {next_group}")
                print(f"NEXT_GROUP={next_group}")
                return 3
            status = 1 if n_bad else 0
        load_failures(a.out)
        ceil = None
        if "kernels" in only or "glue" in only or "models" in only:
            keep = "kernels" in only or "glue" in only
            ktab = Table(os.path.join(a.out, "kernels.csv" if keep else "ceilings.tmp.csv"))
            log("== ceilings")
            ceil = ceilings(ktab)
        if "kernels" in only:
            log("== kernels")
            kernels(ktab, ceil, a.quick, a.budget_s * 0.6)
        elif "glue" in only:
            log("== the attention's glue kernels (combine, q absorption)")
            kernels(ktab, ceil, a.quick, 0.0, glue_only=True)
        ptab = Table(os.path.join(a.out, "peers.csv" if "peers" in only else "peers_hf.csv"))
        if "peers" in only:
            log("== peers: PyTorch SDPA")
            peers(ptab, a.quick, a.budget_s * 0.9)
        if "models" in only:
            log("== whole models")
            models(os.path.join(a.out, "models.csv"), names, ceil, a.quick, a.budget_s * 0.8)
        if "hf" in only:
            log("== peers: HF transformers (2 layers)")
            hf_peer(ptab, names, a.budget_s)
    except Exception:
        log(traceback.format_exc())
        status = 2
    finally:
        log(f"elapsed {time.time() - T0:.0f} s")
        with open(os.path.join(a.out, "log.txt"), "a") as f:  # one log for the three processes
            f.write("\n".join(LOG) + "\n")
        tmp = os.path.join(a.out, "ceilings.tmp.csv")
        if os.path.exists(tmp):
            os.unlink(tmp)
    return status


if __name__ == "__main__":
    sys.exit(main())

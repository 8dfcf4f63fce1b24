"""Kernel benchmark: this machine's ceilings, then one line per op and shape.

    python -m glmbench.bench kernels [--quick] [--out FILE.md] [--threads N] [--only TEXT]
    python -m glmbench.bench ceilings

Ceilings are measured in the same run, in C (csrc/bench.c): memory bandwidth with a STREAM-like
triad over arrays of 4x the L3 (plus a read-only sum, the access pattern of a GEMV), and float32
FMA peak with a register-resident loop of independent AVX-512 FMA chains on every thread.

Each case reports: best time, GB/s (the bytes it must move / time), GFLOP/s, % of the ceiling that
bounds it (triad bandwidth for memory-bound cases, FMA peak for compute-bound ones), and the speed
ratio against the same op written in NumPy (">1" = glmbench faster). Every case is validated
against its NumPy twin before it is timed; the "check" column says whether they agreed.

The NumPy twins do what NumPy must do with the same inputs: 16-bit weights are converted to
float32 on every call (NumPy has no bf16 matmul), MoE loops over the chosen experts.

Op families contribute more cases from glmbench/bench/<family>.py modules exposing
`cases() -> list[Case]` (bench.attention, bench.quant); the unit of work is bench/case.py.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import inspect
import os
import shlex
import sys
import time

from typing import Any, Callable

import numpy as np

import glmbench
from glmbench import vocab
from glmbench.core._loader import _core
from glmbench.results.records import atomic_write_text
from glmbench.bench.case import Case  # noqa: F401  (the benchmark's unit, used by the family modules)
from glmbench.measure.machine import _l3_bytes, cpu_name, measure_ceilings, probe_bandwidth  # noqa: F401

__all__ = ["Case", "measure_ceilings", "run_cases", "kernel_cases", "main"]


# ---- timing and validation --------------------------------------------------------------------

def time_best(fn: Callable[[], Any], repeats: int = 5, min_seconds: float = 0.3, max_calls: int = 2000) -> float:
    """Best wall time of fn() over at least `repeats` calls and `min_seconds` (after one warm-up
    call by the caller). The best, not the mean: on a shared machine other work only adds time."""
    best, total, calls = float("inf"), 0.0, 0
    while calls < max_calls and (calls < repeats or total < min_seconds):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, total, calls = min(best, dt), total + dt, calls + 1
        if dt > 2.0 and calls >= 1:  # a multi-second case: one timed call after the warm-up
            break
    return best


def _agree(a, b, rtol: float = 1e-3) -> str:
    """'ok' if glmbench's output matches the NumPy twin's: integer arrays exactly, float arrays
    within rtol of the largest magnitude (default 1e-3: both sides use the same rounded weights,
    so float32 accumulation differs by ~1e-6 and a wrong kernel by far more)."""
    aa = a if isinstance(a, tuple) else (a,)
    bb = b if isinstance(b, tuple) else (b,)
    if len(aa) != len(bb):
        return "MISMATCH (arity)"
    worst = 0.0
    for x, y in zip(aa, bb):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"MISMATCH shape {x.shape} vs {y.shape}"
        if x.dtype.kind in "iu":
            if not np.array_equal(x, y):
                return "MISMATCH (indices)"
            continue
        scale = float(np.abs(y).max()) if y.size else 0.0
        err = float(np.abs(x.astype(np.float64) - y).max()) if y.size else 0.0
        worst = max(worst, err / (scale + 1e-30))
    return "ok" if worst <= rtol else f"MISMATCH {worst:.1e}"


def run_case(case: Case, ceilings: dict, repeats: int, min_seconds: float) -> dict:
    out = case.run()
    check = "-"
    t_np = None
    if case.numpy_run is not None:
        ref = case.numpy_run()
        check = _agree(out, ref, case.rtol)
        del ref
        t_np = time_best(case.numpy_run, repeats, min_seconds)
    del out
    # NumPy's bundled OpenBLAS keeps its worker threads spinning for a while after a call; let
    # them go to sleep so they do not take a core from the timed glmbench calls (2-core machine)
    time.sleep(0.2)
    t = time_best(case.run, repeats, min_seconds)
    gbs = case.bytes / t / 1e9
    gfs = case.flops / t / 1e9
    # memory: of the triad; compute: of the float32 FMA peak; int8 (quantized GEMMs on integer dot
    # products): of the int8 dot-product peak (NaN where the build has none)
    ceil = {"memory": ceilings["bandwidth_gbs"], "compute": ceilings["fma_gflops"],
            "int8": ceilings.get("int8_gops", float("nan"))}[case.bound]
    pct = 100 * ((gbs if case.bound == "memory" else gfs) / ceil)
    return {"name": case.name, "seconds": t, "gbs": gbs, "gflops": gfs, "bound": case.bound, "pct": pct,
            "numpy_seconds": t_np, "vs_numpy": (t_np / t) if t_np else None, "check": check, "tags": case.tags}


def _fmt_time(s: float) -> str:
    return f"{s * 1e6:8.1f} us" if s < 1e-3 else f"{s * 1e3:8.2f} ms"


def format_row(r: dict) -> str:
    ratio = f"{r['vs_numpy']:6.2f}x" if r["vs_numpy"] is not None else "     -"
    return (f"| {r['name']:<58} | {_fmt_time(r['seconds'])} | {r['gbs']:7.1f} | {r['gflops']:8.1f} | "
            f"{r['pct']:5.1f}% {r['bound'][:3]} | {ratio} | {r['check']} |")


HEADER = ("| op and shape" + " " * 46 + " | time        |    GB/s |  GFLOP/s | % ceiling  | vs NumPy | check |\n"
          "|" + "-" * 60 + "|-------------|---------|----------|------------|----------|-------|")


# ---- cases: norm, rope, linear, swiglu, moe --------------------------------------------------

# Shapes from docs/SOURCES.md §1-§2: GLM-4.7-Flash (hidden 2048, MLA projections, dense layer-0 FFN 10240,
# 64 experts x 1536, top-4, sigmoid router) and Qwen3-32B (hidden 5120, 64/8 heads x 128, FFN 25600).
GLM_PROJ = {"q_a": (768, 2048), "q_b": (5120, 768), "kv_a": (576, 2048), "kv_b": (8960, 512), "o_proj": (2048, 5120)}
QWEN_PROJ = {"q_proj": (8192, 5120), "k_proj": (1024, 5120), "v_proj": (1024, 5120), "o_proj": (5120, 8192)}


def _bf16(a: np.ndarray) -> np.ndarray:
    return vocab.to_bf16(a)


def _f32(w: np.ndarray) -> np.ndarray:
    """What NumPy must do to use a bf16 weight: widen it to float32."""
    return (w.astype(np.uint32) << 16).view(np.float32)


def _weights(rng, shape, scale_dim) -> np.ndarray:
    return _bf16((rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(scale_dim))))


def _np_silu(g):
    return g / (1.0 + np.exp(-g))


def _copies(w: np.ndarray) -> list[np.ndarray]:
    """Enough copies of a weight to total >= 4x the L3 (at most 64). A decode step reads each
    matrix once between ~46 other layers' weights, so it comes from DRAM; timing one matrix in a
    loop would serve it from L3 (measured 10x the DRAM bandwidth for a 9 MB matrix here)."""
    n = int(min(64, max(1, -(-4 * _l3_bytes() // w.nbytes))))
    return [w] + [w.copy() for _ in range(n - 1)]


class _Cycle:
    """Calls fn(next item) round-robin: each timed call touches memory the previous ones did not."""

    def __init__(self, items, fn):
        self.items, self.fn, self.i = items, fn, 0

    def __call__(self):
        item = self.items[self.i]
        self.i = (self.i + 1) % len(self.items)
        return self.fn(item)


def _linear_cases(model: str, proj: dict, T: int, rng, fmt: str = "bf16") -> list[Case]:
    """fmt bf16 (uint16 bits) or f16. Prefill (T > 64) runs csrc/hgemm.c; with bf16 weights its
    dot-product kernel rounds the activations to bf16 (as ggml does), so the check against the
    float32 twin allows 1e-2 there."""
    out = []
    prefill_rtol = 1e-2 if fmt == "bf16" and _core._linear_hgemm("bf16") in ("bf16dot", "ref") else 1e-3
    for name, (N, K) in proj.items():
        w = _weights(rng, (N, K), K)
        if fmt == "f16":
            w = _f32(w).astype(np.float16)
        x = rng.standard_normal((T, K), dtype=np.float32)
        flops = 2.0 * T * N * K
        nbytes = 2.0 * N * K + 4.0 * T * (N + K)
        ws = _copies(w) if T <= 8 else [w]  # memory-bound cases read from DRAM, as in a real step
        widen = _f32 if fmt == "bf16" else (lambda w: w.astype(np.float32))
        out.append(Case(f"linear {fmt} T={T} {model} {name} {N}x{K}",
                        run=_Cycle(ws, lambda w, x=x: glmbench.linear(x, w)),
                        numpy_run=_Cycle(ws, lambda w, x=x, widen=widen: x @ widen(w).T),
                        flops=flops, bytes=nbytes, bound="memory" if T <= 8 else "compute",
                        tags=(f"gemv_{fmt}",) if T == 1 else (f"gemv_{fmt}_batch",) if T <= 8 else (f"gemm_{fmt}",),
                        rtol=prefill_rtol if T > 64 else 1e-3))
    return out


def _f32_linear_cases(rng) -> list[Case]:
    N, K = GLM_PROJ["o_proj"]
    w = rng.standard_normal((N, K), dtype=np.float32)
    ws = _copies(w)
    out = []
    for T in (1, 512):
        x = rng.standard_normal((T, K), dtype=np.float32)
        out.append(Case(f"linear f32 (OpenBLAS) T={T} glm o_proj {N}x{K}",
                        run=_Cycle(ws if T == 1 else [w], lambda w, x=x: glmbench.linear(x, w)),
                        numpy_run=_Cycle(ws if T == 1 else [w], lambda w, x=x: x @ w.T),
                        flops=2.0 * T * N * K, bytes=4.0 * N * K + 4.0 * T * (N + K),
                        bound="memory" if T == 1 else "compute"))
    return out


def _swiglu_cases(model: str, D: int, F: int, Ts, rng) -> list[Case]:
    g, u = _weights(rng, (F, D), D), _weights(rng, (F, D), D)
    d = _weights(rng, (D, F), F)
    out = []
    for T in Ts:
        x = rng.standard_normal((T, D), dtype=np.float32)

        def np_run(x=x):
            return (_np_silu(x @ _f32(g).T) * (x @ _f32(u).T)) @ _f32(d).T
        out.append(Case(f"swiglu bf16 T={T} {model} {D}->{F}->{D}",
                        run=lambda x=x: glmbench.swiglu(x, g, u, d), numpy_run=np_run,
                        flops=6.0 * T * F * D, bytes=6.0 * F * D + 8.0 * T * D,
                        bound="memory" if T <= 8 else "compute", tags=("swiglu",)))
    return out


def _np_route(x, wr, top_k, scoring, bias, scale):
    """The router in NumPy, float64 like glmbench's (so choices can be compared exactly);
    ungrouped (n_group = 1, as in both benchmarked models)."""
    lg = x.astype(np.float64) @ wr.astype(np.float64).T
    if scoring == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-lg))
    else:
        e = np.exp(lg - lg.max(1, keepdims=True))
        s = e / e.sum(1, keepdims=True)
    c = s + (bias.astype(np.float64) if bias is not None else 0.0)
    idx = np.argsort(-c, axis=1, kind="stable")[:, :top_k].astype(np.int32)
    w = np.take_along_axis(s, idx, 1)
    w = w / (w.sum(1, keepdims=True) + 1e-20) * scale
    return idx, w.astype(np.float32)


def _np_experts(x, idx, w, g, u, d):
    E = g.shape[0]
    y = np.zeros_like(x)
    for e in np.unique(idx):
        rows, slots = np.nonzero(idx == e)
        xe = x[rows]
        h = _np_silu(xe @ _f32(g[e]).T) * (xe @ _f32(u[e]).T)
        np.add.at(y, rows, w[rows, slots][:, None] * (h @ _f32(d[e]).T))
    return y, np.bincount(idx.ravel(), minlength=E).astype(np.int64)


def _moe_cases(model: str, D: int, E: int, F: int, k: int, scoring: str, scale: float, Ts, rng) -> list[Case]:
    # One random expert copied E times: distinct memory per expert (nothing is shared in cache),
    # without generating E x 3 x F x D random numbers.
    g1, u1, d1 = _weights(rng, (F, D), D), _weights(rng, (F, D), D), _weights(rng, (D, F), F)
    g = np.empty((E, F, D), np.uint16)
    u = np.empty((E, F, D), np.uint16)
    d = np.empty((E, D, F), np.uint16)
    g[:], u[:], d[:] = g1, u1, d1
    wr = (rng.standard_normal((E, D), dtype=np.float32) / np.float32(np.sqrt(D)))
    bias = (rng.standard_normal(E, dtype=np.float32) * np.float32(0.01)) if scoring == "sigmoid" else None
    rk = dict(top_k=k, scoring=scoring, bias=bias, routed_scaling_factor=scale)
    expert_bytes = 6.0 * F * D
    out = []
    for T in Ts:
        # 8 different batches of tokens, used in turn: in decode the next token's experts differ
        xs = [rng.standard_normal((T, D), dtype=np.float32) for _ in range(8 if T <= 8 else 1)]
        routed = [(x,) + tuple(glmbench.moe_route(x, wr, **rk)) for x in xs]
        hit = float(np.mean([len(np.unique(r[1])) for r in routed]))
        out.append(Case(f"moe router {scoring} T={T} {model} E={E} top{k}",
                        run=_Cycle(xs, lambda x: glmbench.moe_route(x, wr, **rk)),
                        numpy_run=_Cycle(xs, lambda x: _np_route(x, wr, k, scoring, bias, scale)),
                        flops=2.0 * T * E * D, bytes=4.0 * E * D + 4.0 * T * D, bound="memory", tags=("router",)))
        out.append(Case(f"moe experts bf16 T={T} {model} E={E}x{F} top{k} ({hit:.0f} hit)",
                        run=_Cycle(routed, lambda r: glmbench.moe_experts(*r, g, u, d)),
                        numpy_run=_Cycle(routed, lambda r: _np_experts(*r, g, u, d)),
                        flops=6.0 * T * k * F * D, bytes=hit * expert_bytes + 8.0 * T * D,
                        bound="memory" if T <= 8 else "compute", tags=("moe",)))
    return out


def _norm_rope_cases(T: int, rng) -> list[Case]:
    out = []
    for model, D in (("glm", 2048), ("qwen3-32b", 5120)):
        x = rng.standard_normal((T, D), dtype=np.float32)
        wn = rng.standard_normal(D, dtype=np.float32)

        def np_norm(x=x, wn=wn):
            return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(1e-5)) * wn
        out.append(Case(f"rms_norm T={T} {model} D={D}", run=lambda x=x, wn=wn: glmbench.rms_norm(x, wn, 1e-5),
                        numpy_run=np_norm, flops=4.0 * T * D, bytes=8.0 * T * D + 4.0 * D))
    pos = np.arange(1000, 1000 + T, dtype=np.int64)
    for model, H, Dh, r, off, layout in (("glm q", 20, 256, 64, 192, "interleaved"),
                                         ("qwen3-32b q", 64, 128, 128, 0, "half")):
        q = rng.standard_normal((T, H, Dh), dtype=np.float32)

        def np_rope(q=q, r=r, off=off, layout=layout):
            inv = (1e6 ** (-np.arange(0, r, 2) / r))
            ang = pos[:, None] * inv[None]
            c, s = np.cos(ang).astype(np.float32)[:, None], np.sin(ang).astype(np.float32)[:, None]
            y = q.copy()
            seg = q[..., off:off + r]
            if layout == "interleaved":
                a, b = seg[..., 0::2], seg[..., 1::2]
                y[..., off:off + r:2] = a * c - b * s
                y[..., off + 1:off + r:2] = b * c + a * s
            else:
                a, b = seg[..., :r // 2], seg[..., r // 2:]
                y[..., off:off + r] = np.concatenate([a * c - b * s, b * c + a * s], -1)
            return y
        out.append(Case(f"rope {layout} T={T} {model} {H}x{Dh} (rot {r})",
                        run=lambda q=q, r=r, off=off, layout=layout: glmbench.rope(
                            q, pos, theta=1e6, rot_dim=r, rot_offset=off, layout=layout),
                        numpy_run=np_rope, flops=3.0 * T * H * r, bytes=8.0 * T * H * Dh))
    return out


def kernel_cases(quick: bool = False):
    """This module's cases, as (group name, builder) pairs: each builder allocates its weights when
    called, so only one group's arrays (up to ~1.3 GB for the Qwen3 FFN) are alive at a time."""
    rng = np.random.default_rng(0)
    T_pre = 128 if quick else 512
    groups = [
        ("norm and rope", lambda: _norm_rope_cases(1, rng) + _norm_rope_cases(T_pre, rng)),
        ("linear f32 OpenBLAS", lambda: _f32_linear_cases(rng)),
        ("linear bf16 decode", lambda: _linear_cases("glm", GLM_PROJ, 1, rng)
         + _linear_cases("qwen3-32b", QWEN_PROJ, 1, rng)),
        ("linear bf16 small batch", lambda: _linear_cases("glm", {"q_a": GLM_PROJ["q_a"]}, 4, rng)),
        ("linear bf16 prefill", lambda: _linear_cases("glm", GLM_PROJ, T_pre, rng)
         + ([] if quick else _linear_cases("qwen3-32b", QWEN_PROJ, T_pre, rng))),
        ("linear f16 prefill", lambda: _linear_cases("glm", GLM_PROJ, T_pre, rng, fmt="f16")),
        ("swiglu glm dense", lambda: _swiglu_cases("glm layer0", 2048, 10240, (1, T_pre), rng)),
        ("moe glm", lambda: _moe_cases("glm", 2048, 16 if quick else 64, 1536, 4, "sigmoid", 1.8,
                                       (1, T_pre), rng)),
    ]
    if not quick:
        groups += [
            ("swiglu qwen3-32b", lambda: _swiglu_cases("qwen3-32b", 5120, 25600, (1, T_pre), rng)),
            ("moe qwen3-30b-a3b", lambda: _moe_cases("qwen3-30b-a3b", 2048, 128, 768, 8, "softmax", 1.0,
                                                     (1, T_pre), rng)),
        ]
    return groups


def _family_groups(quick: bool):
    """Cases other op families contribute (glmbench/bench/<family>.py with cases())."""
    groups, notes = [], []
    for mod in ("bench.attention", "bench.quant"):
        try:
            m = importlib.import_module(f"glmbench.{mod}")
        except ModuleNotFoundError as e:
            if e.name == f"glmbench.{mod}":
                notes.append(f"glmbench.{mod}: not present, its cases are skipped")
                continue
            raise
        fn = getattr(m, "cases", None)
        if fn is None:
            notes.append(f"glmbench.{mod}: has no cases(), skipped")
            continue
        kw = {"quick": quick} if "quick" in inspect.signature(fn).parameters else {}
        groups.append((mod, lambda fn=fn, kw=kw: fn(**kw)))
    return groups, notes


# ---- the run ----------------------------------------------------------------------------------

def run_cases(groups, ceilings: dict, repeats: int, min_seconds: float, only: str | None = None,
              stream=sys.stdout) -> list[dict]:
    rows = []
    for gname, build in groups:
        try:
            cases = build()
        except Exception as e:  # one family's failure must not hide the others' numbers
            print(f"| {gname}: FAILED to build cases: {type(e).__name__}: {e} |", file=stream, flush=True)
            rows.append({"name": f"{gname} (build failed)", "error": f"{type(e).__name__}: {e}"})
            continue
        for c in cases:
            if only and only not in c.name:
                continue
            try:
                r = run_case(c, ceilings, repeats, min_seconds)
            except Exception as e:
                print(f"| {c.name}: FAILED: {type(e).__name__}: {e} |", file=stream, flush=True)
                rows.append({"name": c.name, "error": f"{type(e).__name__}: {e}"})
                continue
            rows.append(r)
            print(format_row(r), file=stream, flush=True)
        del cases
    return rows


def targets(rows: list[dict]) -> list[str]:
    """The issue's performance targets, each with the evidence from this run."""
    ok = [r for r in rows if "error" not in r]
    out = []

    def line(label, sel, test, want):
        if not sel:
            out.append(f"- {label}: no case in this run")
            return
        met = [r for r in sel if test(r)]
        worst = min(sel, key=lambda r: r[want])
        out.append(f"- {label}: {'MET' if len(met) == len(sel) else 'NOT MET'} ({len(met)} of {len(sel)} cases meet it; "
                   f"worst: {worst['name']}, {worst[want]:.1f}{'%' if want == 'pct' else 'x'})")

    line("bf16 decode GEMV >= 80% of triad bandwidth", [r for r in ok if "gemv_bf16" in r["tags"]],
         lambda r: r["pct"] >= 80, "pct")
    line("prefill GEMM (bf16 weights) >= 70% of FMA peak", [r for r in ok if "gemm_bf16" in r["tags"]],
         lambda r: r["pct"] >= 70, "pct")
    line("prefill GEMM (f16 weights) >= 60% of FMA peak", [r for r in ok if "gemm_f16" in r["tags"]],
         lambda r: r["pct"] >= 60, "pct")
    line("no op slower than its NumPy version", [r for r in ok if r["vs_numpy"] is not None],
         lambda r: r["vs_numpy"] >= 1.0, "vs_numpy")
    line("MoE experts clearly (>= 2x) faster than NumPy", [r for r in ok if "moe" in r["tags"]],
         lambda r: r["vs_numpy"] >= 2.0, "vs_numpy")
    # attention targets (cases and tags from glmbench/bench/attention.py)
    line("GQA decode at 32K >= 70% of triad bandwidth", [r for r in ok if "gqa_decode_32k" in r["tags"]],
         lambda r: r["pct"] >= 70, "pct")
    line("absorbed MLA decode at 32K >= 50% of FMA peak",
         [r for r in ok if {"mla_absorbed_decode_32k", "mla_flash_decode_32k"} & set(r["tags"])],
         lambda r: r["pct"] >= 50, "pct")
    swa = {int(t[len("swa_decode_"):-1]): r for r in ok for t in r["tags"] if t.startswith("swa_decode_")}
    if len(swa) >= 2:   # a windowed decode reads the window at any depth: its time must not grow with it
        lo, hi = min(swa), max(swa)
        g = swa[hi]["seconds"] / swa[lo]["seconds"]
        out.append(f"- sliding-window decode reads the window, not the depth: {'MET' if g <= 1.5 else 'NOT MET'} "
                   f"(time at {hi}K / at {lo}K = {g:.2f}, <= 1.5 wanted; the global layer's rows beside it)")
    swp = {int(t[len("swa_prefill_"):-1]): r for r in ok for t in r["tags"] if t.startswith("swa_prefill_")}
    if len(swp) >= 2:   # a windowed prefill chunk: each query sees the window at any depth
        lo, hi = min(swp), max(swp)
        g = swp[hi]["seconds"] / swp[lo]["seconds"]
        out.append(f"- sliding-window prefill works on the window, not the depth: {'MET' if g <= 1.5 else 'NOT MET'} "
                   f"(time at {hi}K / at {lo}K = {g:.2f}, <= 1.5 wanted)")
    line("attention clearly (>= 2x) faster than NumPy",
         [r for r in ok if "attention" in r["tags"] and r["vs_numpy"] is not None],
         lambda r: r["vs_numpy"] >= 2.0, "vs_numpy")
    bad = [r["name"] for r in ok if r["check"] not in ("ok", "-")]
    out.append(f"- validation against the NumPy twins: {'all agree' if not bad else 'MISMATCH in ' + ', '.join(bad)}")
    errs = [r["name"] for r in rows if "error" in r]
    if errs:
        out.append(f"- cases that failed to run: {', '.join(errs)}")
    return out


def bf16_dot_peak(quick: bool = False) -> float | None:
    """GFLOP/s of vdpbf16ps on every thread (64 FLOPs an instruction), or None where the CPU lacks
    avx512_bf16: the ceiling of the bf16 prefill GEMM's dot products."""
    if not _core._hgemm_kernels("bf16")["bf16dot"]:
        return None
    return _core.bench_bf16dot(1_000_000, 10 if quick else 40)


def kernels(quick: bool = False, out: str | None = None, only: str | None = None, stream=sys.stdout) -> list[dict]:
    t0 = time.time()
    ceil = measure_ceilings(quick=quick)
    bf16_peak = bf16_dot_peak(quick)
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"# glmbench kernels benchmark{' (--quick)' if quick else ''}", "",
            f"- date: {when}", f"- CPU: {ceil['cpu']} ({os.cpu_count()} logical CPUs), threads: {ceil['threads']}",
            f"- glmbench {glmbench.__version__}, NumPy {np.__version__}, AVX-512 kernels: "
            f"{'yes' if _core._linear_has_avx512() else 'no'}",
            f"- ceilings: triad bandwidth {ceil['bandwidth_gbs']:.1f} GB/s (read-only {ceil['bandwidth_read_gbs']:.1f} GB/s), "
            f"float32 FMA peak {ceil['fma_gflops']:.1f} GFLOP/s ({ceil['fma_vector_bits']}-bit)"
            + (f", bf16 dot-product peak {bf16_peak:.1f} GFLOP/s (vdpbf16ps)" if bf16_peak else "")
            + (f", int8 dot-product peak {ceil['int8_gops']:.1f} GOP/s ({ceil['int8_instr']})" if ceil.get("int8_instr") else ""),
            f"- 16-bit prefill GEMM kernel (csrc/hgemm.c, picked by cpuid): bf16 {_core._linear_hgemm('bf16')}, "
            f"f16 {_core._linear_hgemm('f16')}",
            "- time: best of repeated calls; % ceiling: of the triad bandwidth (mem), the float32 FMA peak (com) "
            "or the int8 dot-product peak (int: quantized GEMMs, GFLOP/s column = GOP/s); "
            "vs NumPy: NumPy time / glmbench time", ""]
    print("\n".join(head), file=stream, flush=True)
    print(HEADER, file=stream, flush=True)
    fam, notes = _family_groups(quick)
    repeats, min_s = (2, 0.05) if quick else (5, 0.3)
    rows = run_cases(kernel_cases(quick) + fam, ceil, repeats, min_s, only=only, stream=stream)
    tail = ["", "Targets:"] + targets(rows) + [f"- {n}" for n in notes] + \
        ["", f"Command: python -m glmbench.bench kernels{' --quick' if quick else ''}"
             f"{' --only ' + shlex.quote(only) if only else ''}; run time {time.time() - t0:.0f} s"]
    print("\n".join(tail), file=stream, flush=True)
    if out:
        body = [format_row(r) for r in rows if "error" not in r]
        body += [f"| {r['name']} | FAILED: {r['error']} | | | | | |" for r in rows if "error" in r]
        atomic_write_text(out, "\n".join(head + [HEADER] + body + tail) + "\n")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m glmbench.bench", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels", help="ceilings, then one line per op and shape")
    k.add_argument("--quick", action="store_true", help="fewer repeats, smaller shapes (a smoke run)")
    k.add_argument("--out", metavar="FILE.md", help="also write the table (atomically) to this Markdown file")
    k.add_argument("--threads", type=int, help="OpenMP/OpenBLAS threads (default: all)")
    k.add_argument("--only", metavar="TEXT", help="run only cases whose name contains TEXT")
    c = sub.add_parser("ceilings", help="print this machine's measured ceilings")
    c.add_argument("--quick", action="store_true")
    c.add_argument("--threads", type=int)
    a = p.parse_args(argv)
    if a.threads is not None:
        if a.threads < 1:
            p.error(f"--threads must be >= 1, got {a.threads}")
        _core.set_num_threads(a.threads)
    if a.cmd == "ceilings":
        for key, v in measure_ceilings(quick=a.quick).items():
            print(f"{key}: {v:.1f}" if isinstance(v, float) else f"{key}: {v}")
        return 0
    kernels(quick=a.quick, out=a.out, only=a.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())

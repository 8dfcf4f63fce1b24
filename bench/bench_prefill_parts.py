"""Where a whole-model prefill's time goes, by C-core call: each call's seconds, its count of
multiply-adds (the weight GEMMs and routed experts as int8 dot products, the MLA attention as
float32), the rate that makes, and the machine's ceiling beside it; plus the OpenMP parallel
regions each call opens and the time outside the C core (Python, NumPy). A tool for a shared
machine: one GGUF file, one depth, a few prefills, medians.

    PYTHONPATH=$PWD python bench/bench_prefill_parts.py FILE.gguf [--depth 0] [--n-prompt 512] \\
        [--threads 1] [--reps 4] [--out parts.md]

The model is glmbench.Model(FILE's state as stored, kv="f16", mla_strategy="flash"), as
glmbench.measure.cpu.measure builds it; each repeat fills the cache to the depth (outside the
timing, KVCache.fill_synthetic) and runs Model.prefill(n_prompt random tokens, logits="last"). Every
function of glmbench.core._core is wrapped for the run (the Python modules that call it see the
wrapper), so the per-call time includes the binding's argument checks. With --threads 1 the times
are the calling thread's CPU time (time.thread_time: what the work costs, close to unaffected by
neighbours on a shared machine); with more threads wall time. Ceilings, measured at the start at
the same thread count, from CPU time (see _ceilings): the int8 dot-product peak (_core.bench_int8: vpdpbusd, or
vpmaddubsw + vpmaddwd on AVX2-only CPUs) for
the quantized weight GEMMs (2 ops per multiply-add), the float32 FMA peak (_core.bench_fma) for the
attention.
OpenMP regions are counted where a counting shim is preloaded (GLMBENCH_GOMP_COUNT=path to a
library exporting gompcount_par(); otherwise the column is left out).
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import os
import platform
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from glmbench.core import _core  # noqa: E402
from glmbench.core.ops import get_num_threads, set_num_threads  # noqa: E402
from glmbench.measure.machine import cpu_name  # noqa: E402
from glmbench.models import checkpoint  # noqa: E402
from glmbench.models.model import Model  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

WRAPPED_MODULES = ("glmbench.core.ops", "glmbench.core.quant", "glmbench.core.attention", "glmbench.core.kvcache")


def _regions():
    path = os.environ.get("GLMBENCH_GOMP_COUNT")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path)
        f = lib.gompcount_par
        f.restype = ctypes.c_long
        return f
    except (OSError, AttributeError):
        return None


def _ceilings(threads) -> tuple[float, float, str]:
    """(int8 dot-product GOP/s, float32 FMA GFLOP/s, the int8 instruction) on `threads` threads, from
    the process's CPU time over the register-resident loops (_core.bench_int8: vpdpbusd, 16 chains x 64
    int8 multiply-adds per iteration, or on AVX2-only CPUs vpmaddubsw + vpmaddwd + vpaddd, 12 chains x
    32; _core.bench_fma: 16 chains x 16 lanes or 12 x 8), times the threads: on a shared machine their
    own wall-clock best understates the peak (a 1-thread vpdpbusd loop read 306-328 GOP/s by the wall
    clock and 887-901 by CPU time, 2026-12-02)."""
    it, reps = 2_000_000, 10
    t = time.process_time()
    try:
        _, instr = _core.bench_int8(it, reps)
        per_iter = {"vpdpbusd": 16 * 64 * 2, "vpmaddubsw": 12 * 32 * 2}[instr]
        int8 = it * per_iter * reps * threads / (time.process_time() - t) / 1e9
    except ValueError:  # neither VNNI nor AVX2 in this build
        int8, instr = float("nan"), "none"
    t = time.process_time()
    _, bits = _core.bench_fma(it, reps)
    per_iter = {512: 16 * 16 * 2, 256: 12 * 8 * 2}.get(int(bits))   # csrc/bench.c's chains x lanes x 2
    f32 = it * per_iter * reps * threads / (time.process_time() - t) / 1e9 if per_iter else float("nan")
    return int8, f32, instr


def _macs(name, args, cfg) -> tuple[float, str]:
    """(multiply-adds, arithmetic) of one call, 0 where the call is not counted."""
    a0 = args[0] if args else None
    if name in ("klinear_packed", "klinear", "qgemm") and isinstance(a0, np.ndarray) and a0.ndim == 2:
        n = int(args[3] if name in ("klinear_packed", "qgemm") else (args[1].shape[0]))
        return float(a0.shape[0]) * n * a0.shape[1], "int8"
    if name in ("kmoe", "qmoe") and isinstance(a0, np.ndarray):
        routes = int(np.asarray(args[1]).size)
        F, D = int(cfg.moe_intermediate_size), int(cfg.hidden_size)
        return float(routes) * 3 * F * D, "int8"
    if name in ("mla_attention", "mla_attention_kb_vb") and isinstance(a0, np.ndarray) and a0.ndim == 3:
        T, H, Dn = a0.shape
        R, Dr, Dv = int(cfg.kv_lora_rank), int(cfg.qk_rope_head_dim), int(cfg.v_head_dim)
        L = int(args[2].length(int(args[3])))
        pairs = sum(L - T + t + 1 for t in range(T))   # causal: query t sees L - T + t + 1 keys
        return float(T) * H * Dn * R + float(T) * H * R * Dv + float(pairs) * H * (R + Dr + R), "f32"
    return 0.0, ""


def _key(name, args) -> str:
    a0 = args[0] if args else None
    shp = f"x{tuple(a0.shape)}" if isinstance(a0, np.ndarray) else ""
    if name in ("klinear_packed", "qgemm"):
        return f"{name} {shp} fmt {args[2]} N {args[3]}"
    return f"{name} {shp}"


def run(path, depth, n_prompt, threads, reps, warm=2) -> dict:
    set_num_threads(threads)
    ceil_int8, ceil_f32, int8_instr = _ceilings(threads)
    cfg, state = checkpoint.state_dict(path)
    m = Model(cfg, state, weights="stored", kv="f16", max_context=depth + n_prompt + 1, mla_strategy="flash")
    clock = time.thread_time if threads == 1 else time.perf_counter
    regions = _regions()
    stats = collections.defaultdict(lambda: [0, 0.0, 0.0, "", 0])
    on = [False]

    def wrap(name, f):
        def g(*a, **k):
            r0 = regions() if regions else 0
            t0 = clock()
            out = f(*a, **k)
            dt = clock() - t0
            if on[0]:
                s = stats[_key(name, a)]
                macs, kind = _macs(name, a, cfg)
                s[0] += 1
                s[1] += dt
                s[2] += macs
                s[3] = kind
                s[4] += (regions() - r0) if regions else 0
            return out
        return g

    class Proxy:
        def __getattr__(self, n):
            f = getattr(_core, n)
            return wrap(n, f) if callable(f) and n[:1].islower() else f

    mods = [sys.modules[n] for n in WRAPPED_MODULES if n in sys.modules]
    saved = [(mod, mod._core) for mod in mods]
    rng = np.random.default_rng(0)
    totals, cpu_main = [], []
    try:
        for mod in mods:
            mod._core = Proxy()
        for r in range(warm + reps):
            if depth:
                m.fill_synthetic(depth)
            else:
                m.reset()
            toks = rng.integers(0, cfg.vocab_size, n_prompt)
            on[0] = r >= warm
            c0, t0 = time.thread_time(), time.perf_counter()
            m.prefill(toks, logits="last")
            if on[0]:
                totals.append(time.perf_counter() - t0)
                cpu_main.append(time.thread_time() - c0)
    finally:
        for mod, c in saved:
            mod._core = c
        on[0] = False
    return dict(stats={k: list(v) for k, v in stats.items()}, totals=totals, cpu_main=cpu_main, reps=reps,
                ceil_int8=ceil_int8, ceil_f32=ceil_f32, int8_instr=int8_instr, threads=threads, regions=regions is not None,
                file=os.path.basename(path), depth=depth, n_prompt=n_prompt)


def render(res) -> str:
    reps, th = res["reps"], res["threads"]
    clock = "calling thread's CPU ms (time.thread_time)" if th == 1 else "wall ms"
    rows = sorted(res["stats"].items(), key=lambda kv: -kv[1][1])
    in_core = sum(v[1] for v in res["stats"].values()) / reps
    main = (float(np.median(res["cpu_main"])) if th == 1 else float(np.median(res["totals"])))
    out = [f"### {res['file']}, pp{res['n_prompt']} at depth {res['depth']}, {th} thread{'s' if th > 1 else ''}", "",
           f"- per prefill: {main * 1e3:.1f} ms ({clock}; wall median {np.median(res['totals']) * 1e3:.1f} ms), "
           f"of it in C-core calls {in_core * 1e3:.1f} ms, outside (Python, NumPy) "
           + (f"{(main - in_core) * 1e3:.1f} ms" if main >= in_core else "~0 ms (the two clocks' readings differ by more)"),
           f"- ceilings at {th} thread{'s' if th > 1 else ''} (measured at the start): int8 {res.get('int8_instr', 'vpdpbusd')} "
           f"{res['ceil_int8']:.0f} GOP/s, float32 FMA {res['ceil_f32']:.0f} GFLOP/s", "",
           "| C-core call (shape, format id, output rows) | calls | ms | share | GOP | GOP/s | ceiling GOP/s | x ceiling |"
           + (" OpenMP regions |" if res["regions"] else ""),
           "|---|---|---|---|---|---|---|---|" + ("---|" if res["regions"] else "")]
    for k, (n, s, macs, kind, reg) in rows:
        ms = s / reps * 1e3
        gop = 2 * macs / reps / 1e9
        ceil = res["ceil_int8"] if kind == "int8" else res["ceil_f32"] if kind == "f32" else None
        rate = gop / (ms / 1e3) if gop and ms else None
        out.append(f"| {k} | {n // reps} | {ms:.2f} | {ms / (main * 1e3):.0%} | "
                   + (f"{gop:.1f} ({kind}) | {rate:.0f} | {ceil:.0f} | {rate / ceil:.2f}" if rate and ceil else "| | | ")
                   + (f" | {reg // reps} |" if res["regions"] else " |"))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--out", default=None, help="write the Markdown here (atomically)")
    a = ap.parse_args(argv)
    if not os.path.isfile(a.file):
        raise SystemExit(f"{a.file}: no such GGUF file")
    before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    threads_before = get_num_threads()
    try:
        res = run(a.file, a.depth, a.n_prompt, a.threads, a.reps)
    finally:
        set_num_threads(threads_before)
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    text = (f"<!-- {cpu_name()}, {platform.platform()}; load before `{before}`, after `{after}` -->\n" + render(res))
    if a.out:
        atomic_write_text(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

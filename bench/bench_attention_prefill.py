"""Prefill attention at T tokens over a cache of depth d: MLA (GLM-4.7-Flash shape, absorbed /
flash strategy) and GQA (Qwen3-32B shape), the f16 cache Model uses by default. Prints GFLOP/s
(measured) by wall time and by CPU time (the process's user+system seconds: on a machine shared with
other jobs the wall time counts the waits for a core, the CPU time does not), and the % of the f32
FMA peak measured the same way in this run (bench_fma: wall and per CPU second).

    PYTHONPATH=$PWD python bench/bench_attention_prefill.py [--depths 0 4096 16384] [--T 512] [--kv f16]
        [--mla-strategies flash naive]

FLOPs counted: the keys the causal mask lets through, 2 x heads x (score dims + value dims) each
(MLA absorbed: 576 + 512 per head and key; the absorb and W_v products are not counted). The naive
strategy (the cache's latent rows expanded to per-head keys and values by kv_b, chunk by chunk, then
plain attention) is counted with the same absorbed FLOPs, so its GFLOP/s is the absorbed work per
second: a rate beside flash's, not its own arithmetic (it does ~11% fewer multiply-adds at T = 512
and 16K, the expansion included)."""
import argparse
import time

import numpy as np

import glmbench
from glmbench.core.attention import gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache

MLA = dict(H=20, Dn=192, Dr=64, Dv=256, R=512)
GQA = dict(Hq=64, Hkv=8, Dh=128)


def keys(T, d):
    return T * d + T * (T + 1) / 2


def fma_peak():
    """(wall GFLOP/s, GFLOP per CPU second) of the register-resident f32 FMA loop on every thread
    (csrc/bench.c), measured now: the best of 3."""
    from glmbench.core._loader import _core
    best = (0.0, 0.0)
    for _ in range(3):
        c, w = time.process_time(), time.perf_counter()
        gf, _bits = _core.bench_fma(20_000_000, 3)
        c, w = time.process_time() - c, time.perf_counter() - w
        best = max(best, (gf, gf * w / c))
    return best


def timed(fn, reps):
    """(best wall seconds, mean CPU seconds per call) of reps calls after one warm-up call. The CPU
    time is the process clock over all the calls / reps: Linux adds another thread's time to it at
    its scheduler ticks, so one call's own reading can miss part of its workers' time (a 2 ms
    2-thread call read 2.2-7.2 ms; 2026-12-03), and the smallest reading of several was too low."""
    fn()
    best = float("inf")
    c = time.process_time()
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best, (time.process_time() - c) / reps


def line(name, d, T, dt, fl, peak):
    (w, c), (pw, pc) = dt, peak
    return (f"{name:12s} d={d:6d} T={T}: wall {w*1e3:8.1f} ms {fl/w/1e9:6.1f} GFLOP/s {100*fl/w/1e9/pw:5.1f}% | "
            f"cpu {c*1e3:8.1f} ms {fl/c/1e9:6.1f} GFLOP/cpu-s {100*fl/c/1e9/pc:5.1f}%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[0, 4096, 16384])
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--kv", default="f16")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--only", choices=["mla", "gqa"], default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--mla-strategies", nargs="+", choices=["flash", "absorbed", "naive"], default=["flash"])
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    if a.threads:
        glmbench.set_num_threads(a.threads)
    peak = fma_peak()
    print(f"threads={glmbench.get_num_threads()} kv={a.kv} T={a.T} f32 FMA peak (measured now): "
          f"{peak[0]:.0f} GFLOP/s wall, {peak[1]:.0f} GFLOP per CPU second")
    T = a.T
    for d in a.depths:
        if a.only in (None, "mla"):
            m = MLA
            c = KVCache.mla(1, d + T, m["R"], m["Dr"], kv=a.kv)
            c.fill_synthetic(d)
            c.append(0, rng.standard_normal((T, m["R"]), dtype=np.float32),
                     rng.standard_normal((T, m["Dr"]), dtype=np.float32))
            qn = rng.standard_normal((T, m["H"], m["Dn"]), dtype=np.float32)
            qr = rng.standard_normal((T, m["H"], m["Dr"]), dtype=np.float32)
            kvb = (rng.standard_normal((m["H"] * (m["Dn"] + m["Dv"]), m["R"]), dtype=np.float32) * 0.05)
            for st in a.mla_strategies:
                dt = timed(lambda: mla_attention(qn, qr, c, 0, kvb, v_head_dim=m["Dv"], strategy=st), a.reps)
                fl = 2.0 * m["H"] * (m["R"] + m["Dr"] + m["R"]) * keys(T, d)
                print(line(f"MLA {st}", d, T, dt, fl, peak), flush=True)
            del c
        if a.only in (None, "gqa"):
            g = GQA
            c = KVCache.gqa(1, d + T, g["Hkv"], g["Dh"], kv=a.kv)
            c.fill_synthetic(d)
            c.append(0, rng.standard_normal((T, g["Hkv"], g["Dh"]), dtype=np.float32),
                     rng.standard_normal((T, g["Hkv"], g["Dh"]), dtype=np.float32))
            q = rng.standard_normal((T, g["Hq"], g["Dh"]), dtype=np.float32)
            dt = timed(lambda: gqa_attention(q, c, 0), a.reps)
            fl = 2.0 * g["Hq"] * 2 * g["Dh"] * keys(T, d)
            print(line("GQA", d, T, dt, fl, peak), flush=True)
            del c


if __name__ == "__main__":
    main()

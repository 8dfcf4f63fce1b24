"""Prefill attention at T tokens over a cache of depth d: MLA (GLM-4.7-Flash shape, absorbed /
flash strategy) and GQA (Qwen3-32B shape), the f16 cache Model uses by default. Prints GFLOP/s
(measured) and the % of the measured 2-thread f32 FMA peak (bench_fma, this run).

    PYTHONPATH=$PWD python bench/bench_attention_prefill.py [--depths 0 4096 16384] [--T 512] [--kv f16]

FLOPs counted: the keys the causal mask lets through, 2 x heads x (score dims + value dims) each
(MLA absorbed: 576 + 512 per head and key; the absorb and W_v products are not counted)."""
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
    """GFLOP/s of the register-resident f32 FMA loop on every thread (csrc/bench.c), measured now."""
    from glmbench.core._loader import _core
    return _core.bench_fma(2_000_000, 10)[0]


def timed(fn, reps):
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[0, 4096, 16384])
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--kv", default="f16")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--only", choices=["mla", "gqa"], default=None)
    ap.add_argument("--peak", type=float, default=None, help="GFLOP/s; default: measured now")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    peak = a.peak
    if peak is None:
        peak = fma_peak()
    print(f"threads={glmbench.get_num_threads()} kv={a.kv} T={a.T} f32 FMA peak={peak:.0f} GFLOP/s")
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
            for st in ("flash",):
                dt = timed(lambda: mla_attention(qn, qr, c, 0, kvb, v_head_dim=m["Dv"], strategy=st), a.reps)
                fl = 2.0 * m["H"] * (m["R"] + m["Dr"] + m["R"]) * keys(T, d)
                print(f"MLA {st:8s} d={d:6d} T={T}: {dt*1e3:8.1f} ms  {fl/dt/1e9:6.1f} GFLOP/s  "
                      f"{100*fl/dt/1e9/peak:5.1f}% of peak", flush=True)
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
            print(f"GQA          d={d:6d} T={T}: {dt*1e3:8.1f} ms  {fl/dt/1e9:6.1f} GFLOP/s  "
                  f"{100*fl/dt/1e9/peak:5.1f}% of peak", flush=True)
            del c


if __name__ == "__main__":
    main()

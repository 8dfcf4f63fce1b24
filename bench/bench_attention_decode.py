"""Decode attention (T=1) over a deep cache: one layer's step at depths 4K / 16K / 32K for
Qwen3-32B GQA (64 query / 8 KV heads of 128) and GLM-4.7-Flash MLA (20 heads, latent 512 + rope 64,
absorbed/"flash" strategy), f16 cache (Model's default) or bf16. Prints, per case (all measured):
  ms      best wall time of one call over --reps calls (the median beside it: on a machine shared
          with other jobs the best call is one nobody interrupted), the calls going round enough
          cache layers that their rows total >= 4x the L3 (as in a model step, the rows come from
          DRAM, not a warm cache)
  cpu ms  CPU time per call, the mean over the --reps calls (user + system of every thread): on a
          shared machine the wall time counts waits for a core, the CPU time does not (at 1 thread
          the comparison). One call's own reading is not used: Linux adds another thread's time to
          the process clock at its scheduler ticks, so a 2 ms call at 2 threads read 2.2-7.2 ms
          (2026-12-03, Zen 3); over the calls it sums to the right total
  GB/s    cache bytes read (each row once) / time, and % of the read-only bandwidth measured in
          this run (glmbench.measure.machine.measure_ceilings, all threads)
  GFLOP/s 2 x multiply-adds over the cache / time, and % of the f32 FMA peak measured in this run
  numpy   the same attention in NumPy float32 (matmul/einsum on float32 copies of the layer's rows,
          made once outside the timing, so it reads twice the bytes; softmax in float32), best wall
          time, one layer (warm when it fits the L3)
  err     max |C - NumPy| / max |NumPy| of the outputs
MLA: mla_attention includes folding kv_b (f16 here) into the query and the output (~4.6M MAC,
the same at every depth); the "att" column is the time minus the same call at depth 64 (the
faster of two, run before and after the deep case), i.e. the part that grows with the cache, and GB/s / GFLOP/s are computed on it (kv_b read from DRAM in both:
the calls go round copies of it totalling >= 4x the L3).

    PYTHONPATH=$PWD python bench/bench_attention_decode.py [--depths 4096 16384 32768] [--kv f16]
        [--only gqa|mla|sink] [--reps 15] [--threads N] [--f16-tile on|off|both] [--T 1] [--max-layers N]

"sink" rows: GQA with GPT-OSS's attention sinks (gpt-oss-20b/120b's full-attention layers: 64 query / 8
KV heads of 64; one sink logit per query head), the NumPy twin with the sink as one more logit per
head. --only gqa|mla|sink runs one kind.

--f16-tile both (alias --mla-tile): each row twice in the same run, "mla-" / "gqa-" with the decode
tile off (the cache rows widened into a float32 tile first: the path before it) and "mla" / "gqa" with it
on (the default; GQA's is the AVX2 tile, compiled in on CPUs with AVX2 but no AVX-512). --T: query
tokens per call (1 = decode; a few = speculative decoding), MLA only.
"""
import argparse
import os
import statistics
import time

import numpy as np

import glmbench
from glmbench.core.attention import gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.measure.machine import _l3_bytes, cpu_name, measure_ceilings

MLA = dict(H=20, Dn=192, Dr=64, Dv=256, R=512)
GQA = dict(Hq=64, Hkv=8, Dh=128)
OSS = dict(Hq=64, Hkv=8, Dh=64)   # gpt-oss-20b/120b's full-attention layers, with their sinks


# cache bytes per stored value (q8_0 / q4_0: 34- / 18-byte blocks of 32)
BYTES = {"f16": 2.0, "bf16": 2.0, "f32": 4.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


MAX_LAYERS = [None]   # --max-layers: a cap on the copies (a smoke run, whose rows then sit in the caches)


def n_layers_for(row_bytes_per_layer):
    n = int(max(1, -(-4 * _l3_bytes() // max(1, row_bytes_per_layer))))
    return min(n, MAX_LAYERS[0]) if MAX_LAYERS[0] else n


def med_time(fn, n_layers, reps):
    """Best wall ms over reps calls (layer l = i mod n_layers), after one call per layer: on a
    shared machine the best call is one no other job interrupted (the median is printed too)."""
    for l in range(n_layers):
        fn(l)
    ts = []
    c_all = time.process_time()
    for i in range(reps):
        t0 = time.perf_counter()
        fn(i % n_layers)
        ts.append(time.perf_counter() - t0)
    MED.append(1e3 * statistics.median(ts))
    CPU.append(1e3 * (time.process_time() - c_all) / reps)
    return 1e3 * min(ts)


MED, CPU = [], []   # per timed case: median wall ms, mean CPU ms per call (process time, all threads)


def np_softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(axis=-1, keepdims=True)


def gqa(d, kv, reps, rng, shape=None, sinks=False):
    g = shape or GQA
    Hq, Hkv, Dh = g["Hq"], g["Hkv"], g["Dh"]
    sk = rng.standard_normal(Hq).astype(np.float32) if sinks else None
    L = d + 1
    bytes_ = int(L * Hkv * 2 * Dh * BYTES[kv])
    nl = n_layers_for(bytes_)
    c = KVCache.gqa(nl, L, Hkv, Dh, kv=kv)
    c.fill_synthetic(L, seed=1)
    q = rng.standard_normal((1, Hq, Dh), dtype=np.float32)
    ms = med_time(lambda l: gqa_attention(q, c, l, sinks=sk), nl, reps)
    k, v = (np.ascontiguousarray(x, dtype=np.float32) for x in c.read(0))   # [L, Hkv, Dh]
    kT = np.ascontiguousarray(k.transpose(1, 2, 0))                           # [Hkv, Dh, L]
    vv = np.ascontiguousarray(v.transpose(1, 0, 2))                           # [Hkv, L, Dh]
    qq = (q[0] * np.float32(Dh ** -0.5)).reshape(Hkv, Hq // Hkv, Dh)

    def np_run():
        s = np.matmul(qq, kT)                                                 # [Hkv, G, L]
        if sk is None:
            return np.matmul(np_softmax(s), vv).reshape(1, Hq, Dh)
        # the sink as one more logit per head, its probability dropped (HF GPT-OSS)
        p = np_softmax(np.concatenate([s, sk.reshape(Hkv, Hq // Hkv, 1)], axis=-1))[..., :-1]
        return np.matmul(p, vv).reshape(1, Hq, Dh)

    ref = np_run()
    np_ms = med_time(lambda l: np_run(), 1, max(3, reps // 3))
    err = float(np.abs(gqa_attention(q, c, 0, sinks=sk) - ref).max() / np.abs(ref).max())
    del c
    return dict(ms=ms, att_ms=ms, bytes=bytes_, mac=Hq * L * 2 * Dh, np_ms=np_ms, err=err, layers=nl)


def sink(d, kv, reps, rng):
    """GQA with GPT-OSS's sinks, at gpt-oss's full-attention heads (OSS)."""
    return gqa(d, kv, reps, rng, OSS, sinks=True)


def mla(d, kv, reps, rng, T=1):
    m = MLA
    H, Dn, Dr, Dv, R = m["H"], m["Dn"], m["Dr"], m["Dv"], m["R"]
    kvb = (rng.standard_normal((H * (Dn + Dv), R), dtype=np.float32) * 0.05).astype(np.float16)
    qn = rng.standard_normal((T, H, Dn), dtype=np.float32)
    qr = rng.standard_normal((T, H, Dr), dtype=np.float32)
    # kv_b (9 MB at f16) from DRAM in every call, as in a model step: copies totalling >= 4x the L3,
    # layer l using copy l mod their number. With one copy, the depth-64 base ran with kv_b warm in
    # the L3 while the deep calls' stream evicted it, and "att" counted kv_b's DRAM reads.
    kvbs = [kvb] + [kvb.copy() for _ in range(n_layers_for(kvb.nbytes) - 1)]

    def timed_at(depth):
        L = depth + 1
        nl = n_layers_for(int(L * (R + Dr) * BYTES[kv]))
        c = KVCache.mla(nl, L, R, Dr, kv=kv)
        c.fill_synthetic(L, seed=2)
        ms = med_time(lambda l: mla_attention(qn, qr, c, l, kvbs[l % len(kvbs)], v_head_dim=Dv, strategy="flash"),
                      nl, reps)
        return c, ms, nl

    # the depth-64 base before and after the deep case, the faster of the two: a base slowed by a
    # neighbour's burst made "att" too small (one run on 2026-12-03 put it at 111% of the FMA peak)
    _, base_ms, _ = timed_at(64)
    c, ms, nl = timed_at(d)
    base_ms = min(base_ms, timed_at(64)[1])
    MED.pop()   # keep the deep call's entries last (main reads MED[-2], CPU[-2])
    CPU.pop()
    L = d + 1
    lat, rope = (np.ascontiguousarray(x, dtype=np.float32) for x in c.read(0))    # [L, R], [L, Dr]
    W = kvb.astype(np.float32).reshape(H, Dn + Dv, R)
    scale = np.float32((Dn + Dr) ** -0.5)

    causal = np.where(np.arange(L)[None, :] > (L - T + np.arange(T))[:, None], -np.inf, 0.0).astype(np.float32)

    def np_run():
        ql = np.einsum("thn,hnr->thr", qn, W[:, :Dn]) * scale                  # absorbed query
        s = ql @ lat.T + (qr * scale) @ rope.T + causal[:, None, :]            # [T, H, L]
        ol = np_softmax(s) @ lat                                               # [T, H, R]
        return np.einsum("thr,hvr->thv", ol, W[:, Dn:])

    ref = np_run()
    np_ms = med_time(lambda l: np_run(), 1, max(3, reps // 3))
    err = float(np.abs(mla_attention(qn, qr, c, 0, kvb, v_head_dim=Dv, strategy="flash") - ref).max()
                / np.abs(ref).max())
    del c
    return dict(ms=ms, att_ms=ms - base_ms, bytes=int(L * (R + Dr) * BYTES[kv]), mac=T * H * L * (R + Dr + R), np_ms=np_ms,
                err=err, layers=nl)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", type=int, nargs="+", default=[4096, 16384, 32768])
    ap.add_argument("--kv", default="f16", choices=list(BYTES))
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", choices=["mla", "gqa", "sink"], default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--f16-tile", "--mla-tile", dest="f16_tile", choices=["on", "off", "both"], default="on")
    ap.add_argument("--T", type=int, default=1)
    ap.add_argument("--max-layers", type=int, default=None,
                    help="at most this many cache layers / kv_b copies (a smoke run: the rows stay in the caches, "
                         "so its times are not the DRAM figures)")
    a = ap.parse_args()
    MAX_LAYERS[0] = a.max_layers
    from glmbench.core import _core
    tiles = {"on": [True], "off": [False], "both": [False, True]}[a.f16_tile]
    if a.threads:
        glmbench.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    ce = measure_ceilings()
    bw, peak = ce["bandwidth_read_gbs"], ce["fma_gflops"]
    print(f"# {cpu_name()}, threads={glmbench.get_num_threads()}, kv={a.kv}, load {os.getloadavg()[0]:.2f}; "
          f"measured now: read bandwidth {bw:.1f} GB/s, f32 FMA peak {peak:.0f} GFLOP/s")
    print(f"{'case':4s} {'depth':>6s} {'layers':>6s} {'ms':>7s} {'med ms':>7s} {'cpu ms':>7s} {'att ms':>7s} {'GB/s':>6s} {'%bw':>5s} "
          f"{'GFLOP/s':>8s} {'%peak':>6s} {'numpy ms':>9s} {'xNumPy':>7s} {'err':>8s}")
    for d in a.depths:
        runs = [("gqa" if on else "gqa-", gqa, on) for on in tiles] + [("mla" if on else "mla-", mla, on) for on in tiles] \
            + [("sink" if on else "sink-", sink, on) for on in tiles]
        for name, fn, on in runs:
            if a.only not in (None, name.rstrip("-")):
                continue
            MED.clear()
            CPU.clear()
            get, put = ((_core._mla_f16_tile, _core._mla_set_f16_tile) if fn is mla
                        else (_core._gqa_f16_tile, _core._gqa_set_f16_tile))
            was = get()
            put(on)
            try:
                r = fn(d, a.kv, a.reps, rng, a.T) if fn is mla else fn(d, a.kv, a.reps, rng)
            finally:
                put(was)
            med, cpu = MED[-2], CPU[-2]   # the C call at depth d (the last entry is the NumPy twin)
            t = r["att_ms"] / 1e3
            gbs, gfl = r["bytes"] / t / 1e9, 2 * r["mac"] / t / 1e9
            print(f"{name:4s} {d:6d} {r['layers']:6d} {r['ms']:7.3f} {med:7.3f} {cpu:7.3f} {r['att_ms']:7.3f} {gbs:6.1f} {100 * gbs / bw:5.0f} "
                  f"{gfl:8.1f} {100 * gfl / peak:6.1f} {r['np_ms']:9.2f} {r['np_ms'] / r['ms']:7.1f} {r['err']:8.1e}",
                  flush=True)


if __name__ == "__main__":
    main()

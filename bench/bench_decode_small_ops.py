"""Two decode-step ops of an MoE + MLA model outside the big matrices, timed as the model runs them:

1. the router at decode (T = 1): GLM-4.7-Flash's 64 x 2048 float32 router, float64 logits, sigmoid scores with the
   correction bias, top-4 (csrc/moe.c gb_moe_route), this build against another build's .so (--before), both called
   by ctypes alternately on the same inputs;
2. the MLA decode attention over GGUF's split kv_b (csrc/attention_mla.c gb_mla_attention_kb_vb): k_b q8_0
   [20, 512, 192] and v_b q4_K [20, 256, 512] (GLM-4.7-Flash's heads; llama-quantize's types in a Q4_K_M file),
   an f16 latent cache of a few tokens, its k_b read from the stored rows against packed per head
   (KVBSplit.packed_k), alternately, the weights evicted from the caches before every call by a read-only pass over a
   buffer of 3x the last-level cache (a written buffer would leave dirty lines to write back during the call).

    python bench/bench_decode_small_ops.py --before OLD_core.so --threads 1,2 --out bench/results/...md

Prints (and with --out writes, atomically) a Markdown table: median and best microseconds per call, the speed-up.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import glmbench  # noqa: E402
from glmbench.bench.quant import kquant_weights  # noqa: E402
from glmbench.core import _loader, quant  # noqa: E402
from glmbench.core.attention import KVBSplit  # noqa: E402
from glmbench.core.kvcache import KVCache  # noqa: E402
from glmbench.core.quant import QTensor  # noqa: E402
from glmbench.measure.machine import llc_bytes  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

E, D, TOPK = 64, 2048, 4            # GLM-4.7-Flash's router
H, R, DN, DV, DR = 20, 512, 192, 256, 64


def _route_fn(path):
    f = ctypes.CDLL(path).gb_moe_route
    i64, p = ctypes.c_int64, ctypes.c_void_p
    f.argtypes = [p, i64, i64, p, i64, i64, ctypes.c_int, p, i64, i64, ctypes.c_int, ctypes.c_int, ctypes.c_double, p, p]
    f.restype = ctypes.c_int
    return f


def bench_router(paths: dict, reps: int) -> list:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(D).astype(np.float32)
    w = (rng.standard_normal((E, D)) * 0.02).astype(np.float32)
    bias = (rng.standard_normal(E) * 0.1).astype(np.float32)
    fns = {k: _route_fn(v) for k, v in paths.items()}
    out = {k: (np.zeros(TOPK, np.int32), np.zeros(TOPK, np.float32)) for k in paths}
    ts = {k: [] for k in paths}
    for i in range(reps):
        for k in (list(paths) if i % 2 == 0 else list(paths)[::-1]):
            idx, wt = out[k]
            t = time.perf_counter()
            st = fns[k](x.ctypes.data, 1, D, w.ctypes.data, E, TOPK, 0, bias.ctypes.data, 1, 1, 0, 1, 2.5,
                        idx.ctypes.data, wt.ctypes.data)
            ts[k].append(time.perf_counter() - t)
            if st:
                raise SystemExit(f"gb_moe_route of {paths[k]} returned {st}")
    if len(paths) == 2:
        a, b = out.values()
        assert np.array_equal(a[0], b[0]), "the two builds chose different experts"
    return [("router T=1, 64 x 2048 f32, sigmoid + bias, top-4", {k: np.array(v) for k, v in ts.items()})]


def _split():
    rng = np.random.default_rng(1)
    kb = quant.quantize((rng.standard_normal((H * R, DN)) / np.sqrt(DN)).astype(np.float32), "q8_0")
    k_b = QTensor(kb.data.reshape(H, R, -1), "q8_0", (H, R, DN))
    vb = kquant_weights(H * DV, R, "q4_K")
    v_b = QTensor(np.ascontiguousarray(vb.data).reshape(H, DV, -1), "q4_K", (H, DV, R))
    return KVBSplit(k_b, v_b)


def bench_mla(reps: int, depth: int = 8) -> list:
    rng = np.random.default_rng(2)
    sp = _split()
    c = KVCache.mla(1, 64, R, DR, kv="f16")
    c.append(0, rng.standard_normal((depth, R)).astype(np.float32), rng.standard_normal((depth, DR)).astype(np.float32))
    qn = rng.standard_normal((1, H, DN)).astype(np.float32)
    qr = rng.standard_normal((1, H, DR)).astype(np.float32)
    core = _loader._core
    args = (qn, qr, c, 0, *sp._args(), DV, 0.0, "flash", 0, sp.packed_v())
    big = np.ones(3 * llc_bytes() // 4, np.float32)
    ts = {"k_b stored rows": [], "k_b packed": []}
    outs = {}
    for i in range(reps):
        order = [("k_b stored rows", None), ("k_b packed", sp.packed_k())]
        for name, kp in (order if i % 2 == 0 else order[::-1]):
            float(big.sum())                      # read-only eviction
            t = time.perf_counter()
            outs[name] = core.mla_attention_kb_vb(*args, kp)
            ts[name].append(time.perf_counter() - t)
    a, b = outs.values()
    err = float(np.abs(a - b).max() / np.abs(a).max())
    # q_lat in float32 sums of another order (~1e-7 apart); v_b's product quantizes o_lat to q8_K, where
    # a value that close can round to the next integer: one step of 1/127 of its block's largest value
    # (seen: 5e-4 of the output scale with the AVX2 f16 tile, whose o_lat differs by float32 rounding
    # from the widened tile's). Both sides are ~1e-2 from the float64 reference (the q8 activations).
    assert err < 5e-3, err
    return [(f"MLA decode attention, k_b q8_0 [20, 512, 192] + v_b q4_K [20, 256, 512], f16 cache of {depth}, weights cold "
             f"(outputs within {err:.1e})", {k: np.array(v) for k, v in ts.items()})]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default=None, help="another build's _core .so for the router (label: before)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    threads = [int(t) for t in a.threads.split(",")]
    paths = {"after": _loader._core.__file__}
    if a.before:
        paths = {"before": a.before, **paths}
    load0 = os.getloadavg()[0]
    L = [f"# Decode-step small ops ({datetime.date.today().isoformat()})", "",
         f"- machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
         f"load before: {load0:.2f}",
         f"- this build: {paths['after']}" + (f"; before: {a.before}" if a.before else ""),
         f"- command: python bench/bench_decode_small_ops.py {' '.join(argv if argv is not None else sys.argv[1:])}", "",
         "| op | threads | variant | median us | best us | speed-up (median) |", "|---|---|---|---|---|---|"]
    prev = glmbench.get_num_threads()
    try:
        for th in threads:
            glmbench.set_num_threads(th)
            for name, res in bench_router(paths, a.reps) + bench_mla(max(a.reps // 4, 20)):
                keys = list(res)
                base = np.median(res[keys[0]])
                for k in keys:
                    m = np.median(res[k])
                    L.append(f"| {name} | {th} | {k} | {m * 1e6:.1f} | {res[k].min() * 1e6:.1f} | "
                             f"{base / m:.2f}x |")
    finally:
        glmbench.set_num_threads(prev)
    text = "\n".join(L + ["", f"- load after: {os.getloadavg()[0]:.2f}", ""])
    if a.out:   # written first, then shown
        atomic_write_text(a.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real timings of whole models on a CUDA GPU (evidence="measured"): the same protocol and
records as the CPU backend (measure/protocol.py), with `device` set to the card.

  tg   decode at each depth, one step captured as a CUDA graph and replayed (n_gen = 1: a step)
  pp   a prefill of n_prompt tokens at each depth
  mem  cudaMemGetInfo around building the model and its cache, at the deepest depth

Weights are random bf16 drawn on the device (glmbench.cuda.CudaModel); the cache is bf16.
"""
from __future__ import annotations

import numpy as np

from glmbench import cuda
from glmbench.measure import protocol
from glmbench.models import configs

# What the CUDA path runs: bf16 weights and a bf16 paged cache (kernels/).
WEIGHTS = "bf16"
KV = "bf16"


def measure(model, *, depths=(4096,), n_prompt: int = 512, n_gen: int = 1, tests=protocol.TESTS,
            mla_strategy: str = "flash", repeats: int = 5, iters: int = 10, seed: int = 0,
            layers: int | None = None, out=None, weights: str = WEIGHTS, kv: str = KV) -> list[dict]:
    """Measure a whole model on the GPU. `out` (.json) makes it resumable (protocol.run)."""
    depths, tests = protocol.check_args(depths, n_prompt, n_gen, repeats, 0, tests)
    if (weights, kv) != (WEIGHTS, KV):
        raise ValueError(f"the CUDA path runs bf16 weights and a bf16 cache, got weights={weights!r}, kv={kv!r}")
    if not cuda.available():
        raise RuntimeError("no CUDA device here (glmbench.cuda.available() is False)")
    cfg = configs.load(model)
    dev = cuda.device_info()
    base = protocol.base_record(cfg, device=f"GPU: {dev['name']}", weights=weights, kv=kv,
                                mla_strategy=mla_strategy, runtime="glmbench-cuda", repeats=repeats,
                                iters=int(iters), layers_timed=cfg.n_layers if layers is None else int(layers))
    points = protocol.plan(base, depths, tests, n_prompt, n_gen)
    store = protocol.store_for(out)
    if not protocol.todo(points, store):
        return protocol.run(points, store, None)
    capacity = max(depths) + max(n_prompt, 1) + 1
    m = cuda.CudaModel(cfg, max_context=capacity, mla_strategy=mla_strategy, seed=seed, layers=layers)

    def time_point(p: dict) -> dict:
        r, d = dict(p), p["n_depth"]
        if p["test"] == "tg":
            g = m.decode_graph(d)
            logits = g.result.to_numpy()
            if not np.all(np.isfinite(logits)):
                raise RuntimeError(f"{cfg.name}: decode at depth {d} gave non-finite logits; not timing it")
            t = cuda.time_ms(g, iters=iters, repeats=repeats)
            r.update(avg_ts=1e3 / t["median_ms"], step_ms=t["median_ms"], step_ms_min=t["min_ms"],
                     step_ms_max=t["max_ms"])
        elif p["test"] == "pp":
            g = m.prefill_graph(n_prompt, d)
            t = cuda.time_ms(g, warmup=1, iters=1, repeats=repeats)
            r.update(avg_ts=n_prompt * 1e3 / t["median_ms"], step_ms=t["median_ms"])
        else:
            m.cache.fill_synthetic(d)
            free, total = cuda.mem_info()
            r.update(weight_bytes=m.weight_bytes, kv_bytes=m.cache.bytes_per_token * d,
                     kv_bytes_allocated=m.cache.bytes_allocated, device_bytes_used=m.device_bytes_used,
                     device_free_bytes=free, device_total_bytes=total)
        return r

    return protocol.run(points, store, time_point)

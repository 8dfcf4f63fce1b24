"""Real timings of whole models on a CUDA GPU (evidence="measured"): the same protocol and
records as the CPU backend (measure/protocol.py), with `device` set to the card.

  tg   decode at each depth, one step captured as a CUDA graph and replayed (n_gen = 1: a step)
  pp   a prefill of n_prompt tokens at each depth
  mem  cudaMemGetInfo around building the model and its cache, at the deepest depth

Weights are random bf16 drawn on the device (glmbench.cuda.CudaModel); the cache is bf16 and
filled synthetically to each depth (`kv_fill`). tg/pp records carry the CPU backend's rate fields
(avg_ts, stddev_ts, median_ts, min_ts, max_ts over the repeats; avg_ns, stddev_ns, samples_ns,
samples_ts as llama-bench), and step_ms, step_ms_min, step_ms_max: the median and range of one
step's device time (CUDA events around `iters` graph replays per repeat for tg, one per repeat for pp).
`layers=k` builds and times the first k layers only (layers_mode "first<k>", nothing scaled).
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
    if n_gen != 1:
        raise ValueError(f"`n_gen` must be 1 on the CUDA path (a tg point is one decode step at its depth, "
                         f"replayed as a CUDA graph), got {n_gen!r}")
    if isinstance(iters, bool) or not isinstance(iters, (int, np.integer)) or iters < 1:
        raise ValueError(f"`iters` must be an integer >= 1, got {iters!r}")
    if (weights, kv) != (WEIGHTS, KV):
        raise ValueError(f"the CUDA path runs bf16 weights and a bf16 cache, got weights={weights!r}, kv={kv!r}")
    cfg = configs.load(model)
    n_built = cfg.n_layers if layers is None else layers
    if isinstance(n_built, bool) or not isinstance(n_built, (int, np.integer)) or not 1 <= n_built <= cfg.n_layers:
        raise ValueError(f"`layers` must be None (all {cfg.n_layers}) or an integer in 1..{cfg.n_layers}, "
                         f"got {layers!r}")
    n_built = int(n_built)
    if not cuda.available():
        raise RuntimeError("no CUDA device here (glmbench.cuda.available() is False)")
    dev = cuda.device_info()
    base = protocol.base_record(cfg, device=f"GPU: {dev['name']}", weights=weights, kv=kv,
                                mla_strategy=mla_strategy, runtime="glmbench-cuda", repeats=repeats,
                                code=protocol.code_version(getattr(cuda, "_C", None)),
                                settings={"seed": int(seed)},
                                iters=int(iters), sampled=False,
                                # its prefill graph (glmbench.cuda Model.prefill_graph) runs every row
                                # through every layer (the CPU backend's full models: the last row only
                                # after the last layer's attention, measure.cpu)
                                prefill_last_layer="all rows",
                                # part of the resume key: a run of the first k layers is another point
                                layers_mode="full" if n_built == cfg.n_layers else f"first{n_built}",
                                layers_timed=",".join(map(str, range(n_built))),
                                model_size=cfg.weight_bytes(weights), model_n_params=cfg.total_params())
    points = protocol.plan(base, depths, tests, n_prompt, n_gen)
    store = protocol.store_for(out)
    if not protocol.todo(points, store):
        return protocol.run(points, store, None)
    capacity = max(depths) + max(n_prompt, 1) + 1
    try:
        m = cuda.CudaModel(cfg, max_context=capacity, mla_strategy=mla_strategy, seed=seed, layers=n_built)
    except KeyboardInterrupt:   # Ctrl-C in the build: nothing measured yet (the CLI says so)
        raise protocol.Interrupted(0) from None

    def time_point(p: dict) -> dict:
        r, d = dict(p), p["n_depth"]
        if p["test"] == "mem":
            m.cache.fill_synthetic(d)
            free, total = cuda.mem_info()
            r.update(weight_bytes=m.weight_bytes, kv_bytes=m.cache.bytes_per_token * d,
                     kv_bytes_allocated=m.cache.bytes_allocated, kv_bytes_per_token=m.cache.bytes_per_token,
                     weight_bytes_model=cfg.weight_bytes(weights), kv_bytes_model=cfg.kv_bytes_per_token(kv) * d,
                     device_bytes_used=m.device_bytes_used, device_free_bytes=free, device_total_bytes=total,
                     kv_fill="synthetic" if d else "none", avg_ts=None, stddev_ts=None)
            return r
        tg = p["test"] == "tg"
        g = m.decode_graph(d) if tg else m.prefill_graph(n_prompt, d)
        # validate before timing: the captured run's logits must be finite, or the numbers mean nothing
        if not np.all(np.isfinite(g.result.to_numpy())):
            raise RuntimeError(f"{cfg.name}: {'decode' if tg else f'a prefill of {n_prompt}'} at depth {d} gave "
                               "non-finite logits; not timing it")
        n = 1 if tg else n_prompt
        t = cuda.time_ms(g, iters=iters, repeats=repeats) if tg else cuda.time_ms(g, warmup=1, iters=1, repeats=repeats)
        secs = [ms / 1e3 for ms in t["samples_ms"]]
        rates = [n / s for s in secs]
        r.update(protocol.stats(rates))
        r.update(protocol.stability(rates))  # spread of the repeats only: no host-side probe of a GPU
        r.update(avg_ns=float(np.mean(secs) * 1e9),
                 stddev_ns=float(np.std(secs, ddof=1) * 1e9) if len(secs) > 1 else 0.0,
                 samples_ns=[float(s * 1e9) for s in secs], samples_ts=[float(x) for x in rates],
                 step_ms=t["median_ms"], step_ms_min=t["min_ms"], step_ms_max=t["max_ms"],
                 kv_fill="synthetic" if d else "none")
        if p["test"] == "pp" and d == 0:
            r["ttft_s"] = float(np.median(secs))
        return r

    return protocol.run(points, store, time_point)

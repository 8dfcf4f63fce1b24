"""Whole-model prefill at depth: a GGUF run as stored (weights="stored", kv f16, mla_strategy flash),
the cache filled to `d` tokens with fill_synthetic, then prefill(T tokens, logits="last"); the best
of `reps` runs, with the seconds per layer (Model.last_timing) and the CPU seconds of the process
(user + system, all threads: on a shared machine the wall time also counts waits for a core).
Measured on this CPU.

    PYTHONPATH=$PWD python bench/bench_prefill_depth.py FILE.gguf [--depths 0 4096 16384] [--T 512] [--reps 2]
"""
import argparse
import time

import numpy as np

from glmbench.models import checkpoint
from glmbench.models.model import Model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("--depths", type=int, nargs="+", default=[0, 4096, 16384])
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    if a.threads:
        import glmbench
        glmbench.set_num_threads(a.threads)
    cfg, state = checkpoint.state_dict(a.gguf)
    m = Model(cfg, state, weights="stored", kv="f16", max_context=max(a.depths) + a.T, mla_strategy="flash")
    rng = np.random.default_rng(0)
    toks = rng.integers(0, cfg.vocab_size, a.T)
    for d in a.depths:
        best, timing, cpu = float("inf"), None, 0.0
        for _ in range(a.reps + 1):   # the first run warms up (repacking, page faults)
            m.reset()
            if d:
                m.fill_synthetic(d)
            c0, t0 = time.process_time(), time.perf_counter()
            m.prefill(toks, logits="last")
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            if dt < best:
                best, timing, cpu = dt, dict(m.last_timing), dc
        layers = " ".join(f"{x * 1e3:.0f}" for x in timing["layer_s"])
        print(f"pp{a.T} d={d:6d}: {best:7.3f} s  {a.T / best:7.1f} tok/s  layers ms: {layers}  "
              f"head {timing['head_s'] * 1e3:.0f} ms  cpu {cpu:.3f} s", flush=True)


if __name__ == "__main__":
    main()

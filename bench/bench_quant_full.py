"""A full-size model with quantized weights, built and decoded on this machine without layer
sampling: every layer is generated straight into ggml blocks (glmbench.core.quant.quantize_chunks), so
the float model never exists in memory. Reports the bytes held, the measured RSS (current and
peak), build time and decode speed.

    python bench/bench_quant_full.py                          # GLM-4.7-Flash, q4_0 weights, f16 cache
    python bench/bench_quant_full.py --model qwen3-30b-a3b --weights q4_0 --gen 8

Refuses to start (and says why) when MemAvailable is below the model's bytes plus a margin; the
process marks itself first in line for the OOM killer so that other jobs on a shared machine are
not the ones to go.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

import glmbench
from glmbench.models import configs
from glmbench.results import records
from glmbench.models.model import Model


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return -1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="glm-4.7-flash")
    ap.add_argument("--weights", default="q4_0", choices=["q8_0", "q4_0"])
    ap.add_argument("--kv", default="f16")
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--prompt", type=int, default=8)
    ap.add_argument("--gen", type=int, default=4)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--margin-gb", type=float, default=1.5, help="free memory to leave to other jobs")
    ap.add_argument("--out", default=os.path.join("bench", "results", "quant_full.json"))
    args = ap.parse_args(argv)
    if args.threads:
        glmbench.set_num_threads(args.threads)
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    cfg = configs.load(args.model)
    want = cfg.weight_bytes(args.weights)
    avail = _mem_available()
    if avail >= 0 and avail < want + args.margin_gb * 1e9:
        raise SystemExit(f"not starting: {args.model} in {args.weights} needs ~{want / 1e9:.1f} GB, "
                         f"MemAvailable is {avail / 1e9:.1f} GB (margin {args.margin_gb} GB)")
    print(f"{args.model}: {cfg.n_layers} layers, {args.weights} checkpoint {want / 1e9:.2f} GB; "
          f"MemAvailable {avail / 1e9:.1f} GB", flush=True)
    t0 = time.perf_counter()

    def progress(i, n):
        if i == n or i % 8 == 0:
            print(f"  built {i}/{n} layers, RSS {_status_kb('VmRSS') / 2**20:.2f} GiB, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)

    m = Model(cfg, weights=args.weights, kv=args.kv, max_context=args.context, seed=0, progress=progress)
    build_s = time.perf_counter() - t0
    rss_built = _status_kb("VmRSS") * 1024
    assert not m.sampled and len(m.layers) == cfg.n_layers
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, cfg.vocab_size, args.prompt)
    t1 = time.perf_counter()
    logits = m.prefill(prompt, logits="last")
    pp_s = time.perf_counter() - t1
    tok = int(np.argmax(logits))
    dts = []
    for _ in range(args.gen):
        t2 = time.perf_counter()
        logits = m.decode(tok)
        dts.append(time.perf_counter() - t2)
        if not np.all(np.isfinite(logits)):
            raise SystemExit("decode produced non-finite logits")
        tok = int(np.argmax(logits))
    rec = {
        "evidence": "measured", "test": "tg", "model": args.model, "model_type": cfg.model_type,
        "device": f"{platform.processor() or platform.machine()} ({glmbench.get_num_threads()} threads)",
        "n_threads": glmbench.get_num_threads(), "weights": args.weights, "type_k": args.kv, "type_v": args.kv,
        "mla_strategy": m.mla_strategy if cfg.attention == "mla" else "", "n_prompt": args.prompt,
        "n_gen": args.gen, "n_depth": args.prompt, "avg_ts": 1.0 / float(np.mean(dts)),
        "stddev_ts": float(np.std([1.0 / d for d in dts])), "layer_sampling": False,
        "weight_bytes_held": m.weight_bytes, "weight_bytes_config": want,
        "rss_bytes_after_build": rss_built, "rss_bytes_peak": _status_kb("VmHWM") * 1024,
        "build_s": build_s, "prefill_s": pp_s,
    }
    print(json.dumps(rec, indent=1))
    if args.out:
        records.write_records(args.out, [rec])
    return rec


if __name__ == "__main__":
    main()

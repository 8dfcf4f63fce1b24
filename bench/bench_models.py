"""Decode speed of whole models vs the memory-bandwidth floor on this machine (issue 4).

    python bench/bench_models.py                       # GLM-4.7-Flash and Qwen3-32B, tg16 @ 4096, bf16
    python bench/bench_models.py --depths 0,4096 --models glm-4.7-flash --out bench/results/models.json

For each model and depth: the measured decode time per token (glmbench.measure.measure, layer-sampled when
the model does not fit in RAM, cache filled synthetically to the depth) and its floor, the bytes a
token must read (active weights: only the chosen experts of each MoE layer and one embedding row,
plus the whole KV cache at that depth; measure.decode_bytes_per_token) divided by the memory
bandwidth (glmbench.measure.machine.measure_ceilings at the start). Target: ratio <= 1.4.

The bandwidth is measured right after every timed decode step (measure(..., bandwidth_probe=True):
one ~6 ms triad pass, not counted in the step) and each repeat takes the mean of its steps' probes:
this shared VM's bandwidth moves by tens of percent within seconds to minutes, so each repeat's
time is divided by the floor at the bandwidth measured alongside it, and the ratio reported is the
median of those per-repeat ratios (`ratio`). `ratio_maxbw` divides by the floor at the highest
bandwidth seen in the whole run instead: the conservative figure, shown beside it.
One line per case; a validation pass (finite logits) runs inside measure before any timing counts.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import glmbench
from glmbench.models import configs
from glmbench import measure as M
from glmbench.measure.machine import measure_ceilings
from glmbench.results import records

TARGET = 1.4


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="glm-4.7-flash,qwen3-32b")
    ap.add_argument("--depths", default="4096")
    ap.add_argument("--n-gen", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--weights", default="bf16")
    ap.add_argument("--kv", default="bf16", help="KV-cache format (default bf16, as the recorded results; glmbench measure's default is f16)")
    ap.add_argument("--layers", default="auto", help="'auto', 'full', 'sampled' or k layers of each kind")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default=None, help="write the records (with floor and ratio) to this .json/.csv")
    a = ap.parse_args(argv)
    if a.out and not a.out.endswith((".csv", ".json")):   # said before the timings, not after them
        ap.error(f"--out {a.out}: a records file ends in .csv or .json")
    if a.threads:
        glmbench.set_num_threads(a.threads)
    depths = [int(d) for d in a.depths.split(",")]
    ceil = measure_ceilings()
    bw0 = float(ceil["bandwidth_gbs"])
    print(f"# {ceil.get('cpu', M.cpu_name())}, {ceil.get('threads', glmbench.get_num_threads())} threads: "
          f"memory bandwidth {bw0:.1f} GB/s at the start; probed again after every timed decode step")
    print(f"{'model':<16} {'depth':>6} {'mode':<8} {'tok/s':>8} {'ms/tok':>9} {'GB/s':>11} {'floor ms':>9} "
          f"{'ratio':>6} {'maxbw':>6}  spread")
    out, worst, rows = [], 0.0, []
    for name in a.models.split(","):
        cfg = configs.load(name)
        recs = M.measure(cfg, depths=depths, n_gen=a.n_gen, weights=a.weights, kv=a.kv, repeats=a.repeats,
                         layers=a.layers, tests=("tg",), progress=True, bandwidth_probe=True)
        rows += [(name, cfg, r) for r in recs]
    # the highest bandwidth of the whole run: the start, and every repeat of every model
    bw_max = max([bw0] + [b for _, _, r in rows for b in r["bandwidth_gbs_samples"]])
    for name, cfg, r in rows:
        d = r["n_depth"]
        nbytes = M.decode_bytes_per_token(cfg, a.weights, a.kv, d)
        n_gen = r["n_gen"]
        # per repeat: seconds per token over the floor at the bandwidth measured right after it
        ratios = [(ns / 1e9 / n_gen) / (nbytes / (bw * 1e9))
                  for ns, bw in zip(r["samples_ns"], r["bandwidth_gbs_samples"])]
        ratio = float(statistics.median(ratios))
        bw = float(r["bandwidth_gbs"])
        ms = 1e3 / r["median_ts"]
        floor_ms = 1e3 * nbytes / (bw * 1e9)
        ratio_max = ms / (1e3 * nbytes / (bw_max * 1e9))
        worst = max(worst, ratio)
        spread = ", ".join(f"{k[len('layer_spread_'):]} {100 * v:.0f}%" for k, v in r.items()
                           if k.startswith("layer_spread_"))
        per = ", ".join(f"{k[len('layer_ms_'):]} {v:.1f} ms" for k, v in r.items() if k.startswith("layer_ms_"))
        bws = r["bandwidth_gbs_samples"]
        print(f"{name:<16} {d:>6} {r['layers_mode']:<8} {r['median_ts']:>8.3f} {ms:>9.1f} "
              f"{min(bws):>5.1f}-{max(bws):<5.1f} {floor_ms:>9.1f} {ratio:>6.2f} {ratio_max:>6.2f}  "
              f"per-repeat ratios {', '.join(f'{x:.2f}' for x in ratios)}; layers {r['layers_timed']} ({spread}); "
              f"per layer {per}; lm_head {r['head_ms']:.1f} ms", flush=True)
        out.append(dict(r, bytes_per_token=nbytes, floor_ms=floor_ms, ms_per_token=ms,
                        ratio_to_floor=ratio, ratio_to_floor_samples=ratios, bandwidth_gbs_max_run=bw_max,
                        ratio_to_floor_maxbw=ratio_max, target_ratio=TARGET))
    print(f"# worst ratio {worst:.2f} (target <= {TARGET})")
    if a.out:
        records.write_records(a.out, out)
        print(f"# wrote {len(out)} records to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

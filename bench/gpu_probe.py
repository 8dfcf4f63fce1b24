"""bench/gpu_probe.py: where the GPU time of a whole step goes, kernel by kernel, and how the decode
attention kernels respond to their split count. For a session that has a GPU; bench/gpu_check.sh
runs it after its own sections (`--probe`).

  python bench/gpu_probe.py --out DIR [--layers 5] [--depth 4096] [--emulate]

1. breakdown: CudaModel with the first `--layers` layers of GLM-4.7-Flash and Qwen3-32B (random
   bf16 weights, the real shapes), one decode step at `--depth` and one 512-token prefill captured
   as CUDA graphs and replayed under torch.profiler: CUPTI records every kernel of the process,
   glmbench's own included. Per kernel: launches and device microseconds per step, share of the
   step. The graph's own time (CUDA events) is printed beside the kernels' sum: the difference is
   the gaps between kernels.
2. splits: GQA decode (Qwen3-32B heads) and absorbed MLA decode (GLM-4.7-Flash) at 32K and 128K
   for each kernel version and several split counts, GB/s against the copy ceiling of this run.

Writes probe.txt (everything printed) and probe.csv (one row per kernel or timing) in --out.
"""
from __future__ import annotations

import argparse
import csv
import gc
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench import cuda  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_check import time_sets  # noqa: E402

LOG: list[str] = []
ROWS: list[dict] = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


def kernel_times(prof, n_steps):
    """{kernel name: (launches per step, device us per step)} from a torch.profiler run."""
    out = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = getattr(e, "cuda_time_total", 0.0)
        dev = str(getattr(e, "device_type", ""))
        if us <= 0 or "CPU" in dev and getattr(e, "self_device_time_total", us) == 0:
            continue
        if getattr(e, "is_user_annotation", False):
            continue
        out[e.key] = (e.count / n_steps, us / n_steps)
    return out


def breakdown(model, layers, depth, n_prompt=512, steps=20):
    import torch
    from torch.profiler import ProfilerActivity, profile
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        torch.cuda.init()
    lib = cuda._lib()
    t0 = time.time()
    m = cuda.CudaModel(model, max_context=depth + n_prompt + 8, layers=layers)
    log(f"== {getattr(model, 'name', model)}, first {layers} layers (built in {time.time() - t0:.1f} s)")
    for label, g in ((f"decode@{depth}", m.decode_graph(depth)), (f"prefill{n_prompt}@0", m.prefill_graph(n_prompt, 0))):
        t = cuda.time_ms(g, warmup=3, iters=10, repeats=5)
        ks = {}
        if on_gpu:
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(steps):
                    g.launch()
                lib.synchronize()
            ks = kernel_times(prof, steps)
        total = sum(us for _, us in ks.values())
        log(f"  {label}: graph {t['median_ms'] * 1e3:.1f} us per step (events); kernels sum {total:.1f} us "
            f"({len(ks)} kinds, {sum(n for n, _ in ks.values()):.0f} launches per step)")
        if not ks:
            log("  (torch.profiler recorded no device kernel)")
        for name, (n, us) in sorted(ks.items(), key=lambda kv: -kv[1][1]):
            log(f"    {us:9.1f} us {100 * us / max(total, 1e-9):5.1f}%  x{n:5.1f}  {name[:110]}")
            ROWS.append(dict(section="breakdown", model=model, layers=layers, step=label, kernel=name,
                             launches_per_step=round(n, 2), us_per_step=round(us, 2),
                             graph_us_per_step=round(t["median_ms"] * 1e3, 1)))
    del m
    gc.collect()


def splits(copy_gbs, l2):
    rng = np.random.default_rng(3)

    def rand_dev(shape, scale=1.0):
        a = cuda.empty(shape)
        cuda._lib().random_bf16(a.ptr, a.size, int(rng.integers(1 << 62)), scale)
        return a

    def timed(fns):
        return time_sets(fns)[0]  # gpu_check's: one graph over all sets, median ms per call

    def row(op, v, L, S, ms, nbytes):
        gbs = nbytes / ms / 1e6
        log(f"  {op:<5} v{v} L{L:<7} splits {S!s:<5} {ms * 1e3:8.1f} us {gbs:6.0f} GB/s ({100 * gbs / copy_gbs:3.0f}% copy)")
        ROWS.append(dict(section="splits", kernel=f"{op} v{v}", n_depth=L, n_splits=S, us=round(ms * 1e3, 2),
                         gbs=round(gbs), pct_copy=round(100 * gbs / copy_gbs, 1)))

    Hq, Hkv, Dh = 64, 8, 128     # Qwen3-32B
    H, R, Dr = 20, 512, 64       # GLM-4.7-Flash
    lib = cuda._lib()
    for L in (32768, 131072):
        kv = L * Hkv * Dh * 4
        n = max(1, min(16, math.ceil(4 * l2 / kv)))
        sets = []
        for i in range(n):
            c = cuda.PagedCache.gqa(1, L + 64, Hkv, Dh, poison=False, shuffle_seed=i)
            c.fill_synthetic(L, seed=i)
            sets.append((c, rand_dev((1, Hq, Dh))))
        for v, ss in ((3, (0, 66, 128)), (5, (0, 33, 99, 128))):
            for S in ss:
                ms = timed([lambda s=s: cuda.gqa_attention(s[1], s[0], 0, n_splits=S, version=v) for s in sets])
                row("gqa", v, L, S or "auto", ms, kv)
        del sets
        lat = L * (R + Dr) * 2
        n = max(1, min(16, math.ceil(4 * l2 / lat)))
        sets = []
        for i in range(n):
            c = cuda.PagedCache.mla(1, L + 64, R, Dr, poison=False, shuffle_seed=i)
            c.fill_synthetic(L, seed=i, scale=0.1)
            sets.append((c, rand_dev((1, H, R)), rand_dev((1, H, Dr))))

        def mla(s, v, S):
            c, ql, qr = s
            wsb = lib.mla_workspace_bytes(1, H, R, S)
            ws, o = cuda.empty((wsb // 4,), "f32"), cuda.empty((1, H, R))
            lib.mla_absorbed_attention(ql.ptr, qr.ptr, c.layer_pages(0).ptr, c.layer_table(0).ptr, c.block_size,
                                       o.ptr, 1, L, H, R, Dr, 1 / 16, S, ws.ptr, wsb, v)
            return o
        for v in (2, 3):
            for S in (66, 132):
                ms = timed([lambda s=s: mla(s, v, S) for s in sets])
                row("mla", v, L, S, ms, lat)
        del sets
        gc.collect()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=5, help="layers of each model in the breakdown")
    ap.add_argument("--depth", type=int, default=4096)
    ap.add_argument("--models", default="glm-4.7-flash,qwen3-32b")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: breakdown,splits")
    ap.add_argument("--emulate", action="store_true", help="CPU emulator, tiny sizes: checks this script only")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    skip = set(x for x in a.skip.split(",") if x)
    models = [x for x in a.models.split(",") if x]
    if a.emulate:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
        import cuda_emulator
        cuda_emulator.install()
        models = [cuda_emulator.tiny_config("glm"), cuda_emulator.tiny_config("qwen")]
        skip.add("splits")
        a.layers, a.depth = 2, 16
        log("EMULATED: no number below is a GPU measurement")
    t0 = time.time()
    info = cuda.device_info()
    log(f"device: {info['name']}, {info['sm_count']} SMs, L2 {info['l2_bytes'] >> 20} MiB")
    status = 0
    try:
        if "breakdown" not in skip:
            for name in models:
                breakdown(name, a.layers, a.depth)
        if "splits" not in skip:
            ceil = cuda.copy_bandwidth()
            log(f"== decode attention by split count (copy ceiling {ceil['kernel_gbs']:.0f} GB/s, our kernel)")
            splits(ceil["kernel_gbs"], info["l2_bytes"])
    except Exception:
        import traceback
        log(traceback.format_exc())
        status = 2
    finally:
        log(f"elapsed {time.time() - t0:.0f} s")
        with open(os.path.join(a.out, "probe.txt"), "a") as f:
            f.write("\n".join(LOG) + "\n")
        if ROWS:
            keys = []
            for r in ROWS:
                keys += [k for k in r if k not in keys]
            with open(os.path.join(a.out, "probe.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=keys)
                w.writeheader()
                w.writerows(ROWS)
    return status


if __name__ == "__main__":
    sys.exit(main())

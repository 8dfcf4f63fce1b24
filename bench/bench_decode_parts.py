"""Whole-model decode at one depth, glmbench vs llama-bench on the same GGUF files, with glmbench's
step by part (embed, each layer, head) and the bytes/bandwidth floor: a short run for a shared
machine (each side repeated, the order alternating, the triad read before each side, medians).

    PYTHONPATH=$PWD python bench/bench_decode_parts.py --llama-build /work/llama-build \\
        --files A.gguf,B.gguf [--depth 0] [--reps 3] [--out results.md] [--label after]

glmbench side: glmbench.measure.cpu.measure(FILE, depths=(DEPTH,), n_gen=N_GEN, threads=T, repeats=3,
kv="f16", tests=("tg",)) (weights as stored, MLA strategy flash, warm-up until steady). llama-bench side: its
defaults, `-m FILE -t T -p 0 -n N_GEN -d DEPTH -o json` (5 repetitions after its warm-up). The floor is
bench_whole_model.decode_bytes / the triad read right before glmbench's side.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import bench_whole_model as bw  # noqa: E402
from glmbench.measure import cpu as mcpu  # noqa: E402
from glmbench.measure.machine import cpu_name, probe_bandwidth  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402


def llama_tg(lb, path, threads, n_gen, depth) -> float:
    cmd = [os.path.join(lb, "bin", "llama-bench"), "-m", path, "-t", str(threads), "-p", "0", "-n", str(n_gen),
           "-d", str(depth), "-o", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-1500:]}")
    recs = [x for x in json.loads(r.stdout) if x.get("n_gen")]
    return float(recs[0]["avg_ts"])


def glm_tg(path, threads, n_gen, depth) -> dict:
    recs = mcpu.measure(path, depths=(depth,), n_gen=n_gen, threads=threads, repeats=3, kv="f16", tests=("tg",),
                        progress=False)
    return [r for r in recs if r["test"] == "tg"][0]


def triad() -> float:
    return max(probe_bandwidth()[0] for _ in range(3))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True)
    ap.add_argument("--files", required=True, help="comma-separated GGUF paths")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--n-gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--label", default="", help="what this run is (e.g. the commit)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    up = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    L = [f"### {a.label or 'run'}: depth {a.depth}, tg{a.n_gen}, {a.threads} threads",
         "", f"- {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; CPU {cpu_name()} ({os.cpu_count()} CPUs, "
         f"{platform.platform()}); load at start: `{up()}`",
         "", "| file | rep | first | triad before llama GB/s | llama-bench tg tok/s | triad before glmbench GB/s | "
         "glmbench tg tok/s | ratio | embed ms | layers ms | head ms | floor tok/s | x floor |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = []
    for f in a.files.split(","):
        total, head, _ = bw.decode_bytes(f, a.depth, "f16")
        rows = []
        for rep in range(a.reps):
            llama_first = rep % 2 == 0
            r = {}
            for side in (("llama", "glm") if llama_first else ("glm", "llama")):
                r[f"tri_{side}"] = triad()
                if side == "llama":
                    r["llama"] = llama_tg(a.llama_build, f, a.threads, a.n_gen, a.depth)
                else:
                    g = glm_tg(f, a.threads, a.n_gen, a.depth)
                    r["glm"] = float(g["avg_ts"])
                    r["embed"] = g.get("embed_ms", float("nan"))
                    r["layers"] = ", ".join(f"{k} {g[f'layer_ms_{k}']:.2f}" for k in ("dense", "moe") if f"layer_ms_{k}" in g)
                    r["head"] = g.get("head_ms", float("nan"))
            floor = r["tri_glm"] * 1e9 / total
            rows.append(r)
            L.append(f"| {os.path.basename(f)} | {rep} | {'llama' if llama_first else 'glmbench'} | {r['tri_llama']:.1f} | "
                     f"{r['llama']:.2f} | {r['tri_glm']:.1f} | {r['glm']:.2f} | {r['glm'] / r['llama']:.2f}x | "
                     f"{r['embed']:.2f} | {r['layers']} | {r['head']:.2f} | {floor:.1f} | {floor / r['glm']:.2f} |")
            print(L[-1], flush=True)
        med = lambda k: statistics.median(x[k] for x in rows)
        summary.append(f"| {os.path.basename(f)} | {total / 1e6:.0f} ({head / 1e6:.0f}) | {med('llama'):.2f} | "
                       f"{med('glm'):.2f} | {med('glm') / med('llama'):.2f}x | {med('tri_glm'):.1f} | "
                       f"{med('tri_glm') * 1e9 / total / med('glm'):.2f} | {med('head'):.2f} |")
    L += ["", f"load at end: `{up()}`", "", "medians of the repeats:", "",
          "| file | decode MB/token (head) | llama-bench tg tok/s | glmbench tg tok/s | ratio | triad GB/s | glmbench x floor | head ms |",
          "|---|---|---|---|---|---|---|---|"] + summary + [""]
    text = "\n".join(L)
    print(text)
    if a.out:
        prev = open(a.out).read() if os.path.exists(a.out) else ""
        atomic_write_text(a.out, prev + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

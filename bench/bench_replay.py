"""How fast a trace replays: the 12,031-request Mooncake conversation trace on one setup
(GLM-4.7-Flash on the study's two RTX 3090, layer split), with and without prefix caching.
Target: under 5 seconds per replay. Not a test; run it on a quiet machine:

    python bench/bench_replay.py                 # prints a markdown block
    python bench/bench_replay.py --out FILE.md   # also writes it (bench/results/replay_<date>.md)

Validate before timing: a 200-request slice replayed with interpolated step costs agrees with
the exact ones (every step from the cost model) within 2% on mean TTFT and end-to-end latency.
"""
import argparse
import datetime
import os
import platform
import sys
import time

from glmbench import __version__
from glmbench.predict import costmodel as cm
from glmbench.predict import hardware
from glmbench.predict import replay as rp
from glmbench.predict import traces


def _cpu() -> str:
    try:  # one CPU-name reader (glmbench.measure.machine), where the C core is built
        from glmbench.measure.machine import cpu_name
        return cpu_name()
    except ImportError:
        return platform.processor() or "unknown CPU"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the markdown here")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    setup = cm.Setup("glm-4.7-flash", hardware.study_rig(), split="layer")
    t0 = time.perf_counter()
    tr = traces.load("mooncake-conversation")
    load_s = time.perf_counter() - t0

    small = traces.from_requests([(tr.arrival_s[i] * 4, tr.prompt[i], tr.output[i], list(tr.hash_ids[i]))
                                  for i in range(200)])
    a = rp.replay(small, setup, rp.ServerConfig(step_costs="exact")).summary()
    b = rp.replay(small, setup, rp.ServerConfig(step_costs="interpolated")).summary()
    for k in ("ttft_s_mean", "e2e_s_mean"):
        if abs(b[k] - a[k]) > 0.02 * abs(a[k]):
            sys.exit(f"validation failed: interpolated {k} {b[k]:.4g} vs exact {a[k]:.4g}")

    lines = ["# glmbench trace replay benchmark", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {_cpu()} ({os.cpu_count()} logical CPUs, shared), Python {platform.python_version()}, "
             f"glmbench {__version__}, load average at start {os.getloadavg()[0]:.1f}",
             f"- trace: mooncake-conversation, {len(tr)} requests (loaded in {load_s:.2f} s)",
             f"- setup: {setup.label}",
             f"- server: {rp.ServerConfig().max_num_seqs} seqs, {rp.ServerConfig().max_batched_tokens}-token steps, "
             f"interpolated step costs (validated against exact on 200 requests: within 2%)",
             f"- time: best of {args.repeats} replays, each from a fresh step-cost cache", "",
             "| prefix cache | replay time | steps | cost-model calls | requests/s simulated | target |",
             "|---|---|---|---|---|---|"]
    for pc in (True, False):
        best = float("inf")
        for _ in range(args.repeats):
            t = time.perf_counter()
            res = rp.replay(tr, setup, rp.ServerConfig(prefix_cache=pc))
            best = min(best, time.perf_counter() - t)
        lines.append(f"| {'on' if pc else 'off'} | {best:.2f} s | {res.steps:,} | {res.cost_model_calls:,} | "
                     f"{len(tr) / best:,.0f} | {'OK' if best < 5 else 'SLOW'} (< 5 s) |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        from glmbench.results.records import atomic_write_text
        atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()

"""A million requests: `glmbench trace` (the default study's four setups: GLM-4.7-Flash and
Qwen3-32B on one and two RTX 3090) on a 1M-request trace, without and with `--out` (every file
of a trace study, trace_requests.csv's 4M rows included). Targets (issue 25): under 60 s and
500 MB of peak RSS without --out; under 1 GB with it. Not a test; run it on a quiet machine:

    python bench/bench_replay_scale.py [--requests N] [--out FILE.md]

The trace is the shipped Azure conversation trace (azure-conv-2023, 19,366 requests in one
hour), its copies laid end to end, one hour after another, until N requests: the real mix of
lengths and arrivals, at the real rate, for N / 19,366 hours. Each run is a fresh process
(`python -m glmbench trace ...`), timed by the wall clock, its peak RSS from getrusage.
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time

from glmbench import __version__
from glmbench.predict import traces


def _cpu() -> str:
    try:
        from glmbench.measure.machine import cpu_name
        return cpu_name()
    except ImportError:
        return platform.processor() or "unknown CPU"


def write_trace(path: str, n: int) -> None:
    base = traces.load("azure-conv-2023")
    k, hour = len(base), base.duration_s + 1.0
    with open(path, "w") as f:
        f.write("arrival_s,prompt_tokens,output_tokens\n")
        for i in range(n):
            j = i % k
            f.write(f"{base.arrival_s[j] + (i // k) * hour!r},{base.prompt[j]},{base.output[j]}\n")


def run(args: list) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS MB, stdout) of `python -m glmbench ARGS` in a fresh process; the
    CPU time and the peak are that child's own (os.wait4's rusage). On a shared machine the wall
    time includes the waits for a core; the CPU time is the work."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "glmbench", *args], env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit(f"glmbench {' '.join(args)} failed:\n{err.read()[-3000:]}")
        return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out.read()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--out", help="also write the markdown here")
    a = ap.parse_args(argv)
    lines = ["# glmbench trace replay at scale", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {_cpu()} ({os.cpu_count()} logical CPUs), Python {platform.python_version()}, "
             f"glmbench {__version__}; load average at start {os.getloadavg()[0]:.1f} "
             "(1/5/15 min: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + ")",
             f"- trace: azure-conv-2023 laid end to end to {a.requests:,} requests",
             "- command: `glmbench trace TRACE.csv -q` (the default study: 4 setups, no prefix hashes: 4 replays, plus "
             "the study's batched point), then the same with `--out DIR`", ""]
    with tempfile.TemporaryDirectory() as d:
        tr = os.path.join(d, "trace.csv")
        t = time.perf_counter()
        write_trace(tr, a.requests)
        lines.append(f"- trace file: {os.path.getsize(tr) / 1e6:.0f} MB, written in {time.perf_counter() - t:.1f} s")
        lines += ["", "| run | wall time | CPU time | peak RSS | target |", "|---|---|---|---|---|"]
        wall, cpu, rss, text = run(["trace", tr, "-q"])
        dec = next((l for l in text.splitlines() if l.startswith("**")), "")
        lines.append(f"| trace, no --out | {wall:.1f} s | {cpu:.1f} s | {rss:.0f} MB | time "
                     f"{'met' if wall < 60 else 'MISSED'} (< 60 s), memory {'met' if rss < 500 else 'MISSED'} (< 500 MB) |")
        wall, cpu, rss2, _ = run(["trace", tr, "-q", "--out", os.path.join(d, "out")])
        size = sum(os.path.getsize(os.path.join(d, "out", f)) for f in os.listdir(os.path.join(d, "out")))
        lines.append(f"| trace --out ({size / 1e6:.0f} MB written) | {wall:.1f} s | {cpu:.1f} s | {rss2:.0f} MB | "
                     f"memory {'met' if rss2 < 1024 else 'MISSED'} (< 1 GB) |")
    lines += ["", "- load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
              + (" (more runnable processes than CPUs: the wall times include waiting for a core; this "
                 "machine was shared with other work)" if os.getloadavg()[0] > os.cpu_count()
                 else ""),
              f"- the study's line: {dec[:300]}"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        from glmbench.results.records import atomic_write_text
        atomic_write_text(a.out, text)


if __name__ == "__main__":
    main()

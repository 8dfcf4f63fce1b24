"""How long `glmbench report` takes with the study's findings searched over every dense built-in x
every shipped runtime profile x one and two cards (report/findings.py). Target: under 30 s for the
default study. Not a test; run it on a quiet machine:

    python bench/bench_report.py                 # prints a markdown block
    python bench/bench_report.py --out FILE.md   # also writes it (bench/results/report_<date>.md)

Each repetition is a fresh process-level run of `report.run` into a new folder (charts, records,
findings, report.md), so nothing is reused between them; the findings search alone is timed too.
"""
import argparse
import datetime
import os
import platform
import sys
import tempfile
import time

from glmbench import __version__, report
from glmbench.predict import crossover as cx
from glmbench.report import findings as fd

TARGET_S = 30.0


def _cpu() -> str:
    try:  # one CPU-name reader (glmbench.measure.machine), where the C core is built
        from glmbench.measure.machine import cpu_name
        return cpu_name()
    except ImportError:
        return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="also write the markdown block to this file")
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    start = datetime.datetime.now(datetime.timezone.utc)
    runs, search = [], []
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            report.run(report.Study(), os.path.join(tmp, "rep"), progress=False)
            runs.append(time.perf_counter() - t)
        t = time.perf_counter()
        f = fd.findings(report.Study())
        search.append(time.perf_counter() - t)
    load1 = os.getloadavg()[0]
    n_combos = sum(r["n"] for r in f["rows"])
    best = min(runs)
    lines = [
        "# glmbench report benchmark (findings searched over the study's dense candidates x runtime x cards)", "",
        f"- date: {start:%Y-%m-%d %H:%M} UTC",
        f"- machine: {_cpu()} ({os.cpu_count()} logical CPUs, shared with other jobs), Python "
        f"{platform.python_version()}, glmbench {__version__}; load average {load0:.1f} at start, {load1:.1f} at end",
        "- study: the default (`glmbench report`: GLM-4.7-Flash vs Qwen3-32B, 1 and 2 x RTX 3090, depths 1K-128K)",
        f"- search: {len(cx.study_dense())} dense candidates x {len(fd.runtime_names())} runtime profiles "
        f"({', '.join(fd.runtime_names())}) x 2 card counts: {len(f['rows'])} findings, {n_combos} combinations, "
        f"{len(f['records'])} predicted records, {len(f['crossover'])} crossover-curve points",
        f"- time: {a.repeats} runs, each into a fresh folder", "",
        "| what | best | all runs | target |",
        "|---|---|---|---|",
        f"| `report.run(Study())` (sweep, decisions, findings, 6 charts, report.md) | {best:.1f} s | "
        + ", ".join(f"{x:.1f}" for x in runs) + f" s | {'OK' if best < TARGET_S else 'MISSED'} (< {TARGET_S:.0f} s) |",
        f"| `findings.findings(Study())` alone | {min(search):.1f} s | " + ", ".join(f"{x:.1f}" for x in search)
        + " s | |", "",
        f"The machine is shared (2 cores for several jobs; load average {load0:.1f}-{load1:.1f}), so the "
        "times are upper bounds of a quiet run.", ""]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    return 0 if best < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())

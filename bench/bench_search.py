"""How fast `glmbench search` runs: ~1,000 candidate setups x a 10,000-request trace (the first
10,000 requests of azure-conv-2023), target under 10 minutes on 2 cores; and whether throughput
scales with workers (a local Ray cluster of 2 workers, started here, against 1; local processes
likewise). Not a test. On a shared machine, run the sample (the default) and read the
extrapolation; `--full` runs the whole search once.

    python bench/bench_search.py                       # sample + scaling, prints markdown
    python bench/bench_search.py --full --out FILE.md  # also the full search; writes the markdown

Validate before timing: the scaling runs' records (1 and 2 workers, processes and Ray) must
equal a serial run's, number for number.
"""
import argparse
import datetime
import os
import platform
import random
import sys
import time

from glmbench import __version__
from glmbench.models import configs
from glmbench.predict import prices, search as sr, traces

# 6 models x 4 cards x (1 + 3 x 2 rigs) x 3 weights x 2 KV = 1,008 candidates (named cards: the grid stays
# the same size whatever the price table covers)
GPUS = ("rtx-3090", "rtx-4090", "rtx-a6000", "h100-sxm")
GRID = dict(cards=(1, 2, 4, 8), weights=("q4_K", "q8_0", "q6_K"), kv=("f16", "q8_0"), splits=("layer", "tensor"))
OBJ = dict(ttft_slo_s=2.0, tpot_slo_s=0.1)
KEYS = ("slo_attainment", "ttft_p99_s", "tpot_p99_s", "goodput_tok_s", "max_rate_scale", "max_goodput_tok_s")


def _cpu() -> str:
    try:
        from glmbench.measure.machine import cpu_name
        return cpu_name()
    except ImportError:
        return platform.processor() or "unknown CPU"


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _same(a, b) -> bool:
    da = {r["fingerprint"]: r for r in a.evaluated}
    db = {r["fingerprint"]: r for r in b.evaluated}
    return da.keys() == db.keys() and all(da[k][f] == db[k][f] for k in da for f in KEYS)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=40, help="setups timed one by one for the extrapolation (default 40)")
    ap.add_argument("--scaling", type=int, default=16, help="setups run with 1 and 2 workers (default 16)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each scaling configuration, interleaved (default 2)")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--full", action="store_true", help="also run the whole search on 2 workers")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args(argv)
    load0 = _load()
    t = time.perf_counter()
    tr = sr._first(traces.load("azure-conv-2023"), args.requests)
    obj = sr.Objective(**OBJ)
    pt = prices.load()
    models = configs.builtin_names()
    gpus = list(GPUS)
    setups, invalid = sr.candidates(models, gpus, **GRID)
    kept, pruned = sr.prune(setups, tr, obj, pt)
    prep_s = time.perf_counter() - t
    n_cand = len(setups) + len(invalid)
    lines = ["# glmbench search benchmark", "",
             f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"- machine: {_cpu()} ({os.cpu_count()} logical CPUs), Python {platform.python_version()}, glmbench "
             f"{__version__}; load average (1/5/15 min) "
             f"{load0} at the start",
             f"- trace: {tr.name}, {len(tr):,} requests; targets TTFT <= {obj.ttft_slo_s:g} s, TPOT <= {obj.tpot_slo_s:g} s, "
             f"{100 * obj.attainment:g}% attainment; highest sustained rate by bisection to {100 * obj.rate_tol:g}%",
             f"- grid: {len(models)} models x {len(gpus)} cards ({', '.join(gpus)}) x counts {GRID['cards']} x "
             f"splits {GRID['splits']} x weights {GRID['weights']} x KV {GRID['kv']} = **{n_cand:,} candidates**: "
             f"{len(invalid)} invalid, {len(pruned)} pruned by price/memory/context, **{len(kept):,} to evaluate** "
             f"(enumeration and pruning {prep_s:.1f} s)", ""]
    print("\n".join(lines), flush=True)

    # 1. a sample, one at a time, in this process: CPU seconds per evaluated setup
    rng = random.Random(0)
    sample = rng.sample(kept, min(args.sample, len(kept)))
    cpu, wall, reps = [], [], []
    for s in sample:
        c0, w0 = time.process_time(), time.perf_counter()
        r = sr.evaluate(s, tr, obj)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        reps.append(r["replays"])
    mean_cpu = sum(cpu) / len(cpu)
    est_2 = prep_s + len(kept) * mean_cpu / 2
    lines += ["## Sample and extrapolation", "",
              f"{len(sample)} setups drawn at random (seed 0) from the {len(kept):,}, evaluated one by one in one process: "
              f"mean {mean_cpu:.2f} CPU s per setup (min {min(cpu):.2f}, max {max(cpu):.2f}; wall mean "
              f"{sum(wall) / len(wall):.2f} s), {sum(reps) / len(reps):.1f} replays per setup (1 at the trace's rate + "
              f"the bisection).", "",
              f"**Extrapolated** (not measured) whole search on 2 cores: {prep_s:.1f} s + {len(kept):,} x "
              f"{mean_cpu:.2f} s / 2 = **{est_2 / 60:.1f} min** (target < 10 min: "
              f"{'OK' if est_2 < 600 else 'MISSED'}), assuming two workers get two whole cores.", ""]
    print("\n".join(lines[-6:]), flush=True)

    # 2. scaling: the same setups with 1 and 2 workers; records checked against a serial run first
    sc = rng.sample(kept, min(args.scaling, len(kept)))

    def run(**kw):
        return sr.search(tr, obj, setups=sc, price_table=pt, **kw)
    # each configuration run `--repeats` times, interleaved (the machine's load drifts), best kept
    serial = run(workers=1)
    n_sc = len(serial.evaluated)
    configs_ = [("local, 1 worker (this process)", dict(workers=1), None),
                ("local processes, 2 workers", dict(workers=2), None)]
    ray = None
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            ray = None
        if ray is not None:
            configs_ += [(f"local Ray cluster, {n} worker{'s' if n > 1 else ''} (started by the benchmark)",
                          dict(ray="auto"), n) for n in (1, 2)]
    best, ok_all, load_after, conc = {}, {}, {}, {}
    for _ in range(args.repeats):
        for name, kw, n_ray in configs_:
            if n_ray:
                ray.init(num_cpus=n_ray, include_dashboard=False, log_to_driver=False)
            try:
                t0 = time.perf_counter()
                res = run(**kw)
                dt = time.perf_counter() - t0
            finally:
                if n_ray:
                    ray.shutdown()
            if dt < best.get(name, float("inf")):
                conc[name] = sum(r["eval_s"] for r in res.evaluated) / dt
            best[name] = min(best.get(name, float("inf")), dt)
            ok_all[name] = ok_all.get(name, True) and _same(res, serial)
            load_after[name] = _load()
    rows = []
    for name, kw, n_ray in configs_:
        one = configs_[0][0] if not n_ray else configs_[2][0]
        rows.append((name, n_sc, best[name], n_sc / best[name], best[one] / best[name], ok_all[name], load_after[name],
                     conc[name]))
    if not args.no_ray and ray is None:
        rows.append(("Ray: not installed (pip install ray)", 0, float("nan"), float("nan"), float("nan"), True, "",
                     float("nan")))
    lines += ["## Scaling with workers", "",
              f"The same {n_sc} setups (drawn at random, seed 0; max-rate bisection included), timed wall-clock, "
              f"best of {args.repeats} runs of each configuration, the configurations interleaved (Ray: from the "
              f"search's start, the cluster already up; its 1-worker run is its baseline); every run's records "
              f"compared with a serial run's ({', '.join(KEYS)}).", "",
              "Concurrency: the evaluations' own wall time summed over the search's wall time, how many ran at once on "
              "average (the workers' overlap; it is not a speedup when each evaluation is slowed by a busy machine).", "",
              "| backend | setups | wall | setups/s | speedup vs 1 worker | concurrency | records = serial | load after |",
              "|---|---|---|---|---|---|---|---|"]
    for name, n, dt, rate, sp, ok, ld, cc in rows:
        lines.append(f"| {name} | {n} | {dt:.1f} s | {rate:.2f} | {sp:.2f}x | {cc:.2f} | {'yes' if ok else 'NO'} | {ld} |")
    lines.append("")
    busy = max(float(r[6].split("/")[0]) for r in rows if r[6])
    if busy > (os.cpu_count() or 1):
        lines += [f"The 1-minute load average reached {busy:.1f} on {os.cpu_count()} CPUs: other processes kept every "
                  "core busy, so a second worker found no idle core and the speedup above says nothing about how "
                  "the search scales; rerun on a quiet machine.", ""]
    print("\n".join(lines[-(len(rows) + 10):]), flush=True)
    if any(not r[5] for r in rows):
        sys.exit("validation failed: a parallel run's records differ from the serial run's")

    # 3. the whole search, once
    if args.full:
        import resource
        load1 = _load()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = sr.search(tr, obj, models=models, gpus=gpus, price_table=pt, workers=2, progress=True, **GRID)
        dt = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_w = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
        lines += ["## The whole search (measured)", "",
                  f"{res.n_candidates:,} candidates, {len(res.evaluated):,} evaluated on 2 local processes: "
                  f"**{dt / 60:.1f} min** wall (target < 10 min: {'OK' if dt < 600 else 'MISSED'}); load average "
                  f"{load1} before, {_load()} after. The two workers used {cpu_w:,.0f} CPU s in all, "
                  f"{cpu_w / dt:.2f} CPUs on average of the 2 they could have had; with both whole: "
                  f"{cpu_w / 2 / 60:.1f} min. Answer: {res.chosen['setup'] if res.chosen else 'none feasible'}.", ""]
        print("\n".join(lines[-3:]), flush=True)
    lines.append(f"Load average at the end: {_load()}.")
    text = "\n".join(lines) + "\n"
    if args.out:
        from glmbench.results.records import atomic_write_text
        atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()

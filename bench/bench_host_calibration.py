"""This CPU as a second source of truth: measure both study models at several depths, calibrate a
runtime profile on some depths and predict the others.

    python bench/bench_host_calibration.py --out-dir bench/results/host_<date>

Steps (the CLI equivalent of each is printed in the result file):
  1. `glmbench hardware --save-host DIR/host_profile.json`: this machine's ceilings (triad
     bandwidth, FMA peak), measured once, so that calibration and prediction use one profile.
  2. `glmbench measure MODEL --depths ... --out DIR/measured.json` for glm-4.7-flash and
     qwen3-32b (bf16 weights, f16 KV cache, layers sampled as `--layers auto` chooses: the
     models do not fit in this machine's memory whole); resumable: a rerun reuses finished points.
  3. `glmbench calibrate DIR/fit_points.json --hardware DIR/host_profile.json --out DIR/profile.json`
     on the calibration depths (`--fit-depths`) of both models together (one runtime profile for
     this machine).
  4. Every measured point predicted with ideal, typical and the calibrated profile; the error on the
     held-out depths (those not in `--fit-depths`) per model is the benchmark's number (target:
     calibrated within 10% MAPE for both models).

The calibration never sees a held-out point: the fit reads only fit_points.json.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from glmbench.measure import measure  # noqa: E402
from glmbench.measure.machine import cpu_name, host_profile, measure_ceilings  # noqa: E402
from glmbench.predict import calibrate as cal  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware  # noqa: E402
from glmbench.results.records import atomic_write_text, read_records, write_records  # noqa: E402

MODELS = ("glm-4.7-flash", "qwen3-32b")


def _ints(s: str) -> list[int]:
    out = []
    for x in s.split(","):
        x = x.strip().upper()
        out.append(int(float(x[:-1]) * 1024) if x.endswith("K") else int(x))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=f"bench/results/host_{datetime.date.today().isoformat()}")
    ap.add_argument("--depths", default="512,1K,2K,4K,8K,16K,32K", help="measured depths")
    ap.add_argument("--fit-depths", default="1K,16K", help="depths the calibration sees (the rest are held out)")
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args(argv)
    os.makedirs(a.out_dir, exist_ok=True)
    depths, fit_depths = _ints(a.depths), _ints(a.fit_depths)
    if not set(fit_depths) <= set(depths):
        ap.error("--fit-depths must be a subset of --depths")
    models = [m.strip() for m in a.models.split(",") if m.strip()]

    prof_path = os.path.join(a.out_dir, "host_profile.json")
    if not os.path.exists(prof_path):
        ceil = measure_ceilings()
        atomic_write_text(prof_path, json.dumps(hardware.profile_to_dict(host_profile(ceil)), indent=1) + "\n")
    host = hardware.load_profile(prof_path)
    print(f"host profile {prof_path}: {host.bandwidth_gbs:.1f} GB/s, {host.tflops['fp32'] * 1000:.0f} GFLOP/s",
          flush=True)

    meas_path = os.path.join(a.out_dir, "measured.json")
    t0 = time.perf_counter()
    for m in models:
        measure(m, depths=depths, n_prompt=a.n_prompt, n_gen=a.n_gen, repeats=a.repeats, out=meas_path,
                tests=("pp", "tg"), retries=a.retries, progress=True)
    print(f"measured in {time.perf_counter() - t0:.0f} s", flush=True)
    recs = [r for r in read_records(meas_path) if r.get("test") in ("pp", "tg") and r.get("model") in models]
    fit_recs = [r for r in recs if r["n_depth"] in fit_depths]
    fit_path = os.path.join(a.out_dir, "fit_points.json")
    write_records(fit_path, fit_recs)

    fit = cal.calibrate(cal.load_points([fit_path], hardware_=prof_path), name="host-cpu",
                        description="", loo=True)
    cal.write_profile(os.path.join(a.out_dir, "profile.json"), fit)
    print(fit.table(), flush=True)

    pts = cal.load_points([meas_path], hardware_=prof_path)
    pts = [p for p in pts if p.record.get("model") in models]
    profiles = {"ideal": cm.load_runtime("ideal"), "typical": cm.load_runtime("typical"), "calibrated": fit.profile}
    rows, errs = [], {}
    for p in pts:
        held = p.n_depth not in fit_depths
        pred = {k: cal.predict_point(p, v) for k, v in profiles.items()}
        rows.append((p, held, pred))
        for k, v in pred.items():
            errs.setdefault((p.setup.model.name, held, k), []).append(abs(v / p.measured - 1))
    mape = {k: float(np.mean(v)) for k, v in errs.items()}

    today = datetime.date.today().isoformat()
    L = [f"# This CPU as a second source of truth: calibrate on some depths, predict the others ({today})", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}",
         f"- host profile (measured once, {prof_path}): triad {host.bandwidth_gbs:.1f} GB/s, "
         f"FMA {host.tflops['fp32'] * 1000:.0f} GFLOP/s",
         f"- measured (evidence measured, glmbench's C core): {', '.join(models)}; bf16 weights, f16 KV cache, "
         f"MLA strategy flash; pp{a.n_prompt} and tg{a.n_gen} at depths {', '.join(map(str, depths))}; "
         f"{a.repeats} repeats, retries {a.retries} when a point was unstable ({meas_path})",
         f"- calibrated on depths {', '.join(map(str, fit_depths))} of both models together ({len(fit.points)} points, "
         f"{fit_path}); fitted: {', '.join(fit.fitted) or 'nothing'}; the held-out depths were never seen by the fit",
         f"- command: python bench/bench_host_calibration.py {' '.join(sys.argv[1:] if argv is None else argv)}",
         f"- CLI equivalent: glmbench hardware --save-host {prof_path}; glmbench measure MODEL --depths "
         f"{a.depths} --out {meas_path}; glmbench calibrate {fit_path} --hardware {prof_path} "
         f"--out {a.out_dir}/profile.json; glmbench sweep --hardware {prof_path} "
         f"--runtime calibrated:{a.out_dir}/profile.json", "",
         "## Mean absolute percentage error", "",
         "| model | points | ideal | typical | calibrated |", "|---|---|---|---|---|"]
    for m in models:
        for held in (False, True):
            n = len(errs.get((m, held, "ideal"), []))
            if not n:
                continue
            what = "held out" if held else "fitted on"
            L.append(f"| {m} | {what} ({n}) | " + " | ".join(f"{100 * mape[(m, held, k)]:.2f}%" for k in profiles) + " |")
    ok = all(mape.get((m, True, "calibrated"), 1.0) < 0.10 for m in models)
    L += ["", f"Target (calibrated within 10% MAPE on held-out depths, both models): {'met' if ok else 'NOT met'}.", "",
          "## Every point", "",
          "| model | test | depth | set | measured tok/s | ideal | typical | calibrated | calibrated error |",
          "|---|---|---|---|---|---|---|---|---|"]
    for p, held, pred in sorted(rows, key=lambda r: (r[0].setup.model.name, r[0].test, r[0].n_depth)):
        what = f"pp{p.n_prompt}" if p.test == "pp" else f"tg{p.n_gen}"
        L.append(f"| {p.setup.model.name} | {what} | {p.n_depth} | {'held out' if held else 'fit'} | {p.measured:.2f} | "
                 f"{pred['ideal']:.2f} | {pred['typical']:.2f} | {pred['calibrated']:.2f} | "
                 f"{100 * (pred['calibrated'] / p.measured - 1):+.1f}% |")
    L += ["", "## The fit", "", "```", fit.table(), "```", ""]
    text = "\n".join(L)
    atomic_write_text(os.path.join(a.out_dir, "README.md"), text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

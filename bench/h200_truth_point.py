"""The H200 truth point: glmbench's own CUDA kernels measured on an H200 SXM (2026-12-04) beside the
cost model: `ideal` and `typical` on the h200-sxm profile, and profiles calibrated on some of the
points (`glmbench calibrate`'s fit) predicting the others. Nothing is measured here.

    python bench/h200_truth_point.py [--csv bench/results/2026-12-04_NVIDIA-H200/models.csv] [--out FILE.md]

Also the shipped runtime models of llama.cpp, ik_llama.cpp and vLLM (for orientation only: not this runtime).
Fits (calibrate.calibrate, starting from `typical`, on the records as `glmbench calibrate` reads them):
  in-sample    every point of both models (with its leave-one-out error), and of each model alone
  shallow      each model's, and both models', tg at 1K/4K/16K and pp512 at 0/4K -> tg 32K/64K/128K, pp512 @ 32K
  other model  one model's in-sample profile -> the other model (leave-one-model-out)
Error = predicted / measured - 1; MAPE = mean |error|.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from glmbench.predict import calibrate as cal  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

CSV = "bench/results/2026-12-04_NVIDIA-H200/models.csv"
FIT_DEPTHS = {"tg": (1024, 4096, 16384), "pp": (0, 4096)}   # the shallow fit's points; the rest are held out
# shipped runtime models of other CUDA runtimes (fitted to public results, never to these points): for orientation
RUNTIME_MODELS = ("llama.cpp", "ik_llama.cpp", "vllm")


def shallow(p) -> bool:
    return p.n_depth in FIT_DEPTHS[p.test]


def _err(pred, meas):
    return pred / meas - 1


def _cell(pred, meas, fitted=False):
    if pred is None:
        return "–"
    return f"{pred:.1f} ({100 * _err(pred, meas):+.1f}%)" + (" fit" if fitted else "")


def _mape(errs):
    e = [abs(x) for x in errs if x is not None]
    return f"{100 * np.mean(e):.1f}%" if e else "–"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=CSV, help="the measured records (glmbench measure's CUDA records)")
    ap.add_argument("--out", help="write the tables (markdown) here instead of stdout")
    a = ap.parse_args(argv)

    pts = cal.load_points([a.csv])              # `mem` records are skipped: not a speed
    models = list(dict.fromkeys(p.setup.model.name for p in pts))
    of = {m: [p for p in pts if p.setup.model.name == m] for m in models}
    base = {n: cm.load_runtime(n) for n in ("ideal", "typical") + RUNTIME_MODELS}
    pred = {n: {p.where: cal.predict_point(p, prof) for p in pts} for n, prof in base.items()}

    def fit(name, on, loo=False):
        c = cal.calibrate(on, name=name, loo=loo)
        pred[name] = {p.where: cal.predict_point(p, c.profile) for p in pts}
        fits[name] = (c, {p.where for p in on})
        return c

    fits: dict = {}
    fit("in-sample, both models", pts, loo=True)
    loo = {}
    for m in models:
        c = fit(f"in-sample, {m}", of[m], loo=True)
        loo.update({f"{m}|{p.where}": q for p, q in zip(c.points, c.loo_predicted)})
        fit(f"shallow, {m}", [p for p in of[m] if shallow(p)])
    fit("shallow, both models", [p for p in pts if shallow(p)])
    # leave-one-model-out: one model's in-sample profile predicts the other model

    out = [f"Source: `{a.csv}` ({len(pts)} tg/pp points); hardware h200-sxm (the records' `GPU: NVIDIA H200`), "
           "bf16 weights, bf16 KV cache, MLA flash. Error = predicted / measured - 1.", ""]
    # every point
    out += ["| model | test | depth | measured tok/s | ideal | typical | calibrated in-sample (this model) | "
            "leave-one-out (this model) | shallow fit (this model) | shallow fit (both models) | "
            "fit on the other model |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in pts:
        m = p.setup.model.name
        (other,) = [x for x in models if x != m]
        row = [m, f"pp{p.n_prompt}" if p.test == "pp" else f"tg{p.n_gen}", str(p.n_depth), f"{p.measured:.1f}",
               _cell(pred["ideal"][p.where], p.measured), _cell(pred["typical"][p.where], p.measured),
               _cell(pred[f"in-sample, {m}"][p.where], p.measured), _cell(loo[f"{m}|{p.where}"], p.measured)]
        for n in (f"shallow, {m}", "shallow, both models"):
            row.append(_cell(pred[n][p.where], p.measured, fitted=p.where in fits[n][1]))
        row.append(_cell(pred[f"in-sample, {other}"][p.where], p.measured))
        out.append("| " + " | ".join(row) + " |")

    # MAPE per model and test
    out += ["", "MAPE per model and test (held out: tg 32K/64K/128K and pp512 @ 32K, which no shallow fit saw; "
            "the other model's fit never saw any point of this model):", "",
            "| model | test | points | ideal | typical | calibrated in-sample (this model) | leave-one-out (this model) "
            "| calibrated in-sample (both models) | shallow fit, held-out points (this model) | "
            "shallow fit, held-out points (both models) | typical, same held-out points | fit on the other model |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        (other,) = [x for x in models if x != m]
        for t in ("tg", "pp", "all"):
            sel = [p for p in of[m] if t in ("all", p.test)]
            held = [p for p in sel if not shallow(p)]

            def e(name, among):
                return _mape([_err(pred[name][p.where], p.measured) for p in among])
            out.append("| " + " | ".join([
                m, t, str(len(sel)), e("ideal", sel), e("typical", sel), e(f"in-sample, {m}", sel),
                _mape([_err(loo[f"{m}|{p.where}"], p.measured) if loo[f"{m}|{p.where}"] else None for p in sel]),
                e("in-sample, both models", sel), e(f"shallow, {m}", held), e("shallow, both models", held),
                e("typical", held), e(f"in-sample, {other}", sel)]) + " |")

    out += ["", "The shipped runtime models of other runtimes (`--runtime NAME`, their default options), which no "
            "glmbench-cuda point was fitted to, MAPE:", "",
            "| model | test | " + " | ".join(RUNTIME_MODELS) + " |", "|---|---|" + "---|" * len(RUNTIME_MODELS)]
    for m in models:
        for t in ("tg", "pp"):
            sel = [p for p in of[m] if p.test == t]
            out.append(f"| {m} | {t} | " + " | ".join(_mape([_err(pred[n][p.where], p.measured) for p in sel])
                                                      for n in RUNTIME_MODELS) + " |")

    # what each fit moved
    out += ["", "What each fit moved (the rest keeps `typical`'s value; calibrate's identifiability rule picks them):",
            "", "| fit | points | in-sample MAPE | fitted parameters |", "|---|---|---|---|"]
    for n, (c, _) in fits.items():
        ps = ", ".join(f"{k} = {v:.4g}" for k, v in c.profile.calibration["fitted"].items()) or "nothing"
        lo = f" (leave-one-out {100 * c.loo_mape:.1f}%)" if c.loo_mape is not None else ""
        out.append(f"| {n} | {len(c.points)} | {100 * c.mape:.1f}%{lo} | {ps} |")
    text = "\n".join(out) + "\n"
    if a.out:
        atomic_write_text(a.out, text)
        print(f"wrote {a.out}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

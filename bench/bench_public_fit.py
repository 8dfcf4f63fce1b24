"""Fit the built-in runtime models to the shipped public results and cross-validate them.

    python bench/bench_public_fit.py [--write-profiles] [--out bench/results]
    python bench/bench_public_fit.py --check DIR_OR_FILE [--check ...] [--with-fit] [--out DIR]

For each runtime (llama.cpp, ik_llama.cpp, llama.cpp-vulkan, vllm) it fits the model to every
public point of that runtime (glmbench.predict.jointfit) and measures, per source:

- `typical`: the physics-only reference, no fit;
- runtime model (in-sample): the model fitted to all of the runtime's points;
- leave-one-source-out (LOSO): fitted without the source, then predicting it;
- shallow-to-deep: fitted with the source's shallower half of depths (and the other sources),
  predicting its deeper half;
- leave-one-GPU-out (LOGO): each scoreboard card (each card, for a runtime without scoreboard
  rows) predicted from its datasheet and a fit to every point on the other cards.

It writes bench/results/public_fit_<date>.md. With --write-profiles it also writes the fitted
runtime models to glmbench/data/runtime/<runtime>.json (the kernel table, overheads, and a
`calibration` block: start profile, fitted and kept parameters, points, in-sample and
cross-validated errors; RuntimeProfile.cv_error reads the LOSO MAPE from it).

--check DIR (records written by `bench/public_records.py SRC --out DIR`, or one glmbench records
file / pasted benchmark output a user has): every single-stream point there predicted by the
runtime models as fitted to the shipped public set (glmbench/data/runtime/<runtime>.json), never
fitted to it; per source and pooled MAPE of decode and prefill beside the leave-one-source-out
targets, printed (stdout); it writes nothing unless --out DIR is given, then also
DIR/public_check_<date>.md. With --with-fit the fit above runs first, its profiles predict the
check, and the check is a section of public_fit_<date>.md (in --out, bench/results by default). Records of
several streams (llama-batched-bench) are predicted apart, in a section of their own
(predict_batched: PP = costmodel.prefill_batch, TG = B / the mean decode step of B streams; no
issue-22 target is of several streams); a vLLM serving result is kept as the fit keeps it (the
aggregate decode of its B streams, B / mean TPOT). A serving benchmark's run (closed or open
loop; vLLM's offline bench latency / throughput) is also replayed as it ran, its mean TTFT and
TPOT (or its latency, or requests/s) against the replay's (predict_serving, serving_report), and a
run partly on the CPU is priced with its placement and a host (offload_point, offload_report):
each in a section of its own, none an issue-22 target.
A point the shipped profiles were fitted to (same model, test, depth and value) is flagged.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from glmbench.measure import machine  # noqa: E402
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware  # noqa: E402
from glmbench.predict import jointfit as jf  # noqa: E402
from glmbench.predict import replay  # noqa: E402
from glmbench.predict import runtime as rtm  # noqa: E402
from glmbench.report import truth  # noqa: E402
from glmbench.results import importers  # noqa: E402
from glmbench.results import records as rec  # noqa: E402

import public_records  # noqa: E402  (bench/public_records.py: the vLLM block as a decode point)

RUNTIMES = ("llama.cpp", "ik_llama.cpp", "llama.cpp-vulkan", "vllm")
# catalog cards a public row may be another variant of: the row's name does not say which (the
# scoreboard's "H100 80 GB": the SXM5 and the PCIe card both have 80 GB; the catalog resolves the
# name to the SXM5 card, as nvidia-smi names it "NVIDIA H100 80GB HBM3"). The report gives that
# card's leave-one-GPU-out error under each variant; the targets use the catalog's resolution.
VARIANTS = {"h100-sxm": ("h100-pcie",)}
TARGETS = {"loso": (0.20, 0.30), "shallow_deep": (0.10, 0.15), "logo": (0.15, 0.25)}


def _pct(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def _pool(d: dict, test):
    pairs = [pq for v in d.values() for pq in v]
    return jf.mape(pairs, test)


def _mean_src(d: dict, test):
    v = [jf.mape(x, test) for x in d.values()]
    v = [x for x in v if x is not None]
    return float(np.mean(v)) if v else None


def run(write_profiles: bool, out_dir: str, scoreboard_only_logo=True):
    t0 = time.time()
    pts = jf.load_public()
    typical = cm.load_runtime("typical")
    res = {}
    # the stages of each runtime's fit and cross-validation, one step each (stderr; the refits of
    # leave-one-source-out and leave-one-GPU-out take most of the ~3 minutes)
    bar = tqdm(total=4 * len(RUNTIMES), desc="public fit", unit="stage", file=sys.stderr)
    for rt in RUNTIMES:
        mine = [p for p in pts if p.runtime == rt]
        start = jf._start_profile(rt)
        bar.set_postfix_str(f"{rt}: joint fit")
        fit = jf.fit_runtime(rt, mine, base=start)
        jf.PRIOR_FITS[rt] = fit.profile          # a fork's start (jointfit.PRIORS) is this run's fit
        typ = jf.predict_many(mine, typical)
        bar.update()
        bar.set_postfix_str(f"{rt}: leave-one-source-out")
        lo = jf.loso(mine, rt)
        bar.update()
        bar.set_postfix_str(f"{rt}: shallow-to-deep")
        sd = jf.shallow_deep(mine, rt)
        bar.update()
        # leave-one-GPU-out: the scoreboard's cards (each predicted by a fit to every point on the
        # other cards); without a scoreboard for the runtime, every card of its sources
        bar.set_postfix_str(f"{rt}: leave-one-GPU-out")
        sb = {p.source for p in mine if p.source.startswith("scoreboard-")} if scoreboard_only_logo else set()
        logo = jf.leave_one_gpu_out(mine, rt, test_sources=sb or None) if len({p.gpu_key for p in mine}) > 1 else {}
        bar.update()
        held = held_out_points(rt)
        res[rt] = dict(points=mine, fit=fit, typical=list(zip(mine, typ)), loso=lo, sd=sd, logo=logo, start=start,
                       variants=_variants(mine, rt, logo), held=list(zip(held, jf.predict_many(held, fit.profile))))
        if write_profiles:
            _write_profile(rt, fit, start, res[rt])
    bar.close()
    return pts, res, time.time() - t0


def _variants(mine, rt, logo) -> dict:
    """{(card, variant): [(point, predicted)]}: a leave-one-GPU-out card of VARIANTS predicted, by
    the fit to the other cards, as each other variant (its datasheet instead of the catalog's)."""
    out = {}
    for g in logo:
        if g not in VARIANTS:
            continue
        fit = jf.fit_runtime(rt, [p for p in mine if p.gpu_key != g])
        test = [p for p, _ in logo[g]]
        for v in VARIANTS[g]:
            gpu = hardware.get_gpu(v)
            alt = [dataclasses.replace(p, setup=dataclasses.replace(p.setup, rig=hardware.Rig(gpu, p.setup.n_cards)))
                   for p in test]
            out[(g, v)] = list(zip(test, jf.predict_many(alt, fit.profile)))
    return out


def _baseline(path) -> dict:
    """{(runtime, check, test): pooled MAPE text} from the targets table of an earlier results file."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for ln in f:
            c = [x.strip() for x in ln.strip().strip("|").split("|")]
            if len(c) in (7, 8) and c[1] in TARGETS and c[2] in ("tg", "pp"):
                out[(c[0], c[1], c[2])] = c[len(c) - 4]     # the pooled MAPE (after a `before` column, if any)
    return out


def _in_class(p, cls) -> bool:
    return cm.band_class(p.setup.model) == cls


def held_out_points(rt) -> list:
    """The runtime's published points shipped beside the public set but never fitted (the truth
    table's published sources whose runtime model is `rt`: the study's own GLM-4.7-Flash results)."""
    out = []
    for src in truth.published_sources():
        if src.runtime_model != rt:
            continue
        for i, r in enumerate(rec.read_records(src.path)):
            if r.get("evidence") == "measured" and r.get("test") in ("pp", "tg"):
                out.append(jf.point_from_record({**r, "runtime": rt}, f"{os.path.basename(src.path)}:{i + 1}"))
    return out


def cv_bands(pairs, held=()) -> dict:
    """{"decode"|"prefill": {"dense"|"moe"|"mla": band or None, "n": {...}, "held_out": {...}}}: the
    leave-one-source-out MAPE pooled over the pairs (point, predicted) of each test and class
    (band_class's, disjoint: "mla" every MLA model, MoE or not; "moe" the other models with routed
    experts); where `held` (point, predicted) pairs of published points never fitted hold a class,
    the larger of the two MAPEs (both are out-of-sample; held_out: their MAPE and count)."""
    out = {}
    for key, test in (("decode", "tg"), ("prefill", "pp")):
        row, n, ho = {}, {}, {}
        for cls in cm.BAND_CLASSES:
            sel = [pq for pq in pairs if pq[0].test == test and _in_class(pq[0], cls)]
            row[cls] = jf.mape(sel, test) if sel else None
            n[cls] = len(sel)
            hs = [pq for pq in held if pq[0].test == test and _in_class(pq[0], cls)]
            if hs:
                m = jf.mape(hs, test)
                ho[cls] = {"mape": m, "n": len(hs)}
                row[cls] = m if row[cls] is None else max(row[cls], m)
        out[key] = {**row, "n": n, "held_out": ho}
    return out


def _write_profile(rt, fit, start, r):
    loso_pairs = [pq for v in r["loso"].values() for pq in v]
    calib = {
        "base": "physics start (this file's `start`); fitted by bench/bench_public_fit.py with glmbench.predict.jointfit",
        "files": sorted({os.path.join("glmbench/data/public", p.record.get("public_source", "") + ".json")
                         for p in fit.points if p.record.get("public_source")}),
        "measurement_sources": sorted({p.record.get("source", "") for p in fit.points}),
        "fitted": {k: float(v) for k, v in fit.fitted.items()},
        "kept": {k: float(v) for k, v in fit.kept.items()},
        "kept_why": "not identified by the public points (sensitivity below calibrate.SELECT_TOL of the largest, or in the span "
                    "of those fitted): the physics start value stays",
        "n_points": len(fit.points),
        "mape": fit.mape(),
        "mape_decode": fit.mape("tg"),
        "mape_prefill": fit.mape("pp"),
        "loo_mape": jf.mape(loso_pairs) if loso_pairs else None,
        "loso_mape_decode": jf.mape(loso_pairs, "tg") if loso_pairs else None,
        "loso_mape_prefill": jf.mape(loso_pairs, "pp") if loso_pairs else None,
        "cv": "loo_mape is the leave-one-source-out error (each public source predicted by a fit without it); "
              "see bench/results/public_fit_<date>.md for shallow-to-deep and leave-one-GPU-out",
        "sources": {s: {"points": len(v), "loso_mape_decode": jf.mape(v, "tg"), "loso_mape_prefill": jf.mape(v, "pp")}
                    for s, v in r["loso"].items()},
        "cv_bands": cv_bands(loso_pairs, r.get("held", ())),
        "cv_bands_why": "the band of a prediction (RuntimeProfile.cv_band): leave-one-source-out MAPE pooled over this "
                        "runtime's public points of one test (decode, prefill) and model class (mla: MLA attention; "
                        "moe: the other models with routed experts; dense); n: the points behind it; where published points of this "
                        "runtime shipped in glmbench/data/measured and never fitted hold the class (held_out: their "
                        "MAPE under this fit and count), the larger of the two; null where neither holds it",
        "start": start.to_dict(),
        "points_columns": ["where", "source", "label", "options", "measured_ts", "predicted_ts", "residual"],
        "points": [[p.where, p.source, p.label, ",".join(f"{k}={v}" for k, v in p.options.items()),
                    round(p.measured, 3), round(float(q), 3), round(float(q / p.measured - 1), 4)]
                   for p, q in zip(fit.points, fit.predicted)],
    }
    if calib["loo_mape"] is None:
        calib["loo_mape"] = fit.mape()
        calib["cv"] = "one source only: no leave-one-source-out possible; loo_mape is the in-sample error (optimistic)"
    prof = fit.profile
    d = prof.to_dict()
    d["name"] = rt
    d["description"] = start.description
    d["calibration"] = calib
    srcs = dict(d.get("sources", {}))
    for k in fit.fitted:
        srcs[f"kernels.{k}" if k not in jf.OVERHEADS else k] = (
            f"fitted jointly to {len(fit.points)} public points of {rt} (glmbench/data/public/, docs/SOURCES.md)")
    d["sources"] = srcs
    path = os.path.join(rtm._RUNTIME_DIR, rt + ".json")
    cm.runtime_from_dict(d, where=path)
    rec.atomic_write_text(path, json.dumps(d, indent=1) + "\n")


def report(pts, res, seconds, baseline=None, baseline_label="") -> str:
    load = os.getloadavg()
    cpu = machine.cpu_name()
    today = datetime.date.today().isoformat()
    L = [f"# Runtime models fitted to public results ({today})", "",
         f"bench/bench_public_fit.py; {len(pts)} public points (glmbench/data/public/, docs/SOURCES.md); "
         f"all fits and cross-validation in {seconds:.0f} s on {cpu} (load {load[0]:.2f}; a shared 2-core machine).",
         "", "MAPE = mean |predicted / measured - 1|; decode (tg) and prefill (pp) separately. Targets (issue 22): "
         "LOSO decode <= 20%, prefill <= 30%; shallow-to-deep decode <= 10%, prefill <= 15%; leave-one-GPU-out "
         "decode <= 15%, prefill <= 25%.", "", "## Summary per runtime", "",
         "| runtime | points | typical tg / pp | fitted (in-sample) tg / pp | LOSO tg / pp | shallow-to-deep tg / pp | leave-one-GPU-out tg / pp |",
         "|---|---|---|---|---|---|---|"]
    verdict = []
    for rt, r in res.items():
        if not r["points"]:
            continue
        typ = {"x": r["typical"]}
        L.append(f"| {rt} | {len(r['points'])} | {_pct(_pool(typ, 'tg'))} / {_pct(_pool(typ, 'pp'))} | "
                 f"{_pct(r['fit'].mape('tg'))} / {_pct(r['fit'].mape('pp'))} | "
                 f"{_pct(_pool(r['loso'], 'tg'))} / {_pct(_pool(r['loso'], 'pp'))} | "
                 f"{_pct(_pool(r['sd'], 'tg'))} / {_pct(_pool(r['sd'], 'pp'))} | "
                 f"{_pct(_pool(r['logo'], 'tg'))} / {_pct(_pool(r['logo'], 'pp'))} |")
        for k, key in (("loso", "loso"), ("sd", "shallow_deep"), ("logo", "logo")):
            for test, lim in zip(("tg", "pp"), TARGETS[key]):
                v = _pool(r[k], test)
                if v is not None:
                    verdict.append((rt, key, test, v, lim, _mean_src(r[k], test)))
    base = _baseline(baseline)
    L += ["", "## Targets", "", "Met or not on the MAPE pooled over points; the mean of the per-source (per-card for "
          "leave-one-GPU-out) MAPEs beside it, where every source counts once."
          + (f" `before`: the pooled MAPE of {baseline_label or baseline}." if base else ""), ""]
    if base:
        L += ["| runtime | check | test | before | MAPE (pooled over points) | mean over sources | target | met |",
              "|---|---|---|---|---|---|---|---|"]
    else:
        L += ["| runtime | check | test | MAPE (pooled over points) | mean over sources | target | met |", "|---|---|---|---|---|---|---|"]
    for rt, key, test, v, lim, m in verdict:
        b = f" {base.get((rt, key, test), '–')} |" if base else ""
        L.append(f"| {rt} | {key} | {test} |{b} {_pct(v)} | {_pct(m)} | {_pct(lim)} | {'yes' if v <= lim else '**no**'} |")
    L += ["", "## Bands per test and model class", "",
          "The error band a record of each runtime model carries (RuntimeProfile.cv_band): the leave-one-source-out "
          "MAPE pooled over the runtime's points of that test and model class (MLA: MLA attention; MoE: the other "
          "models with routed experts; an MLA model takes the MLA band, else its MLP's class's, else the runtime's). Where the runtime's published "
          "points shipped in glmbench/data/measured (never fitted: the study's GLM-4.7-Flash results) hold the class, "
          "the band is the larger of that and their MAPE under the fit (in brackets: their MAPE, points). A class "
          "with neither (–) takes the next one's, else the runtime's error for the test (all classes).", "",
          "| runtime | decode dense (points) | decode MoE (points) | decode MLA (points) | prefill dense (points) "
          "| prefill MoE (points) | prefill MLA (points) |",
          "|---|---|---|---|---|---|---|"]
    for rt, r in res.items():
        b = cv_bands([pq for v in r["loso"].values() for pq in v], r.get("held", ()))

        def cell(k, c):
            h = b[k]["held_out"].get(c)
            return f"{_pct(b[k][c])} ({b[k]['n'][c]})" + (f" [{_pct(h['mape'])}, {h['n']}]" if h else "")
        L.append(f"| {rt} | " + " | ".join(cell(k, c) for k in ("decode", "prefill") for c in cm.BAND_CLASSES) + " |")
    L += ["", "## Per source", "",
          "| runtime | source | points | typical tg / pp | fitted tg / pp | LOSO tg / pp | shallow-to-deep tg / pp |",
          "|---|---|---|---|---|---|---|"]
    for rt, r in res.items():
        fitpairs = list(zip(r["fit"].points, r["fit"].predicted))
        for src in sorted({p.source for p in r["points"]}):
            typ = [(p, q) for p, q in r["typical"] if p.source == src]
            fp = [(p, q) for p, q in fitpairs if p.source == src]
            lo = r["loso"].get(src, [])
            sd = r["sd"].get(src, [])
            L.append(f"| {rt} | {src} | {len(typ)} | {_pct(jf.mape(typ, 'tg'))} / {_pct(jf.mape(typ, 'pp'))} | "
                     f"{_pct(jf.mape(fp, 'tg'))} / {_pct(jf.mape(fp, 'pp'))} | {_pct(jf.mape(lo, 'tg'))} / {_pct(jf.mape(lo, 'pp'))} | "
                     f"{_pct(jf.mape(sd, 'tg'))} / {_pct(jf.mape(sd, 'pp'))} |")
    if any(r["logo"] for r in res.values()):
        L += ["", "## Leave-one-GPU-out", "", "| runtime | card | points | tg | pp |", "|---|---|---|---|---|"]
        for rt, r in res.items():
            for g, v in r["logo"].items():
                L.append(f"| {rt} | {g} | {len(v)} | {_pct(jf.mape(v, 'tg'))} | {_pct(jf.mape(v, 'pp'))} |")
        var = [(rt, k, v) for rt, r in res.items() for k, v in r.get("variants", {}).items()]
        if var:
            L += ["", "A card whose public name does not say its variant (bench_public_fit.VARIANTS), predicted by the same "
                  "leave-one-GPU-out fit as another variant of it (that variant's datasheet); the targets above use the "
                  "catalog's resolution of the name.", "",
                  "| runtime | card (catalog) | taken as | points | tg | pp | signed error per point |",
                  "|---|---|---|---|---|---|---|"]
            for rt, (g, v), pairs in var:
                own = res[rt]["logo"][g]
                for name, pp in ((g, own), (v, pairs)):
                    sig = ", ".join(f"{p.test}{p.n_prompt if p.test == 'pp' else p.n_gen}"
                                    + (f" fa{p.options['fa']}" if "fa" in p.options else "")
                                    + f" {q / p.measured - 1:+.0%}" for p, q in pp)
                    L.append(f"| {rt} | {g} | {name} | {len(pp)} | {_pct(jf.mape(pp, 'tg'))} | {_pct(jf.mape(pp, 'pp'))} | {sig} |")
    L += ["", "## Fitted parameters", ""]
    for rt, r in res.items():
        f = r["fit"]
        L.append(f"- **{rt}**: fitted " + (", ".join(f"`{k}` = {v:.3g}" for k, v in f.fitted.items()) or "nothing")
                 + "; kept at the physics start (not identified): " + (", ".join(f"`{k}`" for k in f.kept) or "none"))
    L.append("")
    return "\n".join(L)


# ---- --check: records the fit never saw ----------------------------------------------------------
def _check_files(path) -> list[str]:
    if published_folder(path):
        return [path]       # converted when read (check_points: _from_published)
    if os.path.isdir(path):
        # glmbench records files and any other results file the importer reads (a paste without its
        # sidecar: what the file itself says; check_points notes what it cannot read)
        files = public_records.pasted_files(path)
        if not files:
            raise SystemExit(f"{path}: no records files (.json) in it, and no pasted results with a sidecar "
                             f"(<name>.txt); bench/public_records.py SRC --out {path} writes records")
        return files
    if not os.path.isfile(path):
        raise SystemExit(f"{path}: no such file or folder")
    return [path]


def published_folder(path) -> bool:
    """A folder of published results as people paste them (bench/public_records.py's input): a
    results file with its `<name>.txt` sidecar, or a subfolder holding a scoreboard copy."""
    if not os.path.isdir(path):
        return False
    if any(os.path.isfile(os.path.splitext(p)[0] + ".txt") for p in public_records.pasted_files(path)):
        return True
    return bool(_scoreboards(path))


def _scoreboards(path) -> list[str]:
    """The scoreboard copies (importers' `scoreboard-csv`) in the subfolders of `path`."""
    out = []
    for d in sorted(os.listdir(path)):
        sub = os.path.join(path, d)
        if not os.path.isdir(sub):
            continue
        for f in sorted(os.listdir(sub)):
            p = os.path.join(sub, f)
            if p.endswith(".csv") and os.path.isfile(p):
                head = public_records.text_of(p).split("\n", 1)[0]     # (UTF-8, or UTF-16)
                try:
                    if importers.detect(head, p) == "scoreboard-csv":
                        out.append(p)
                except importers.FormatError:
                    pass            # another CSV: not a scoreboard copy
    return out


def _from_published(path) -> tuple[list, list, str]:
    """(files, notes, tmp) of a published folder: its pastes turned into records by
    bench/public_records.py (its SOURCES entries, else the generic path with each sidecar) in a
    temporary folder `tmp` (the caller removes it), and the scoreboard copies of its subfolders; a
    note for each file that left out (the public_records line that says why)."""
    tmp = tempfile.mkdtemp(prefix="glmbench-check-")
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            public_records.main([path, "--out", tmp, "--keep-batched"])
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    said = buf.getvalue().splitlines()
    for ln in said:
        print(f"  {ln}")
    notes = [ln for ln in said if ln.startswith(("skipped ", "error, left out "))]
    files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".json"))
    return files + _scoreboards(path), notes, tmp


def _read_any(path) -> list[dict]:
    """A glmbench records file as it is; any other results file through the importer (its
    FormatError when neither reads it)."""
    if path.endswith((".json", ".csv")):
        try:
            return rec.read_records(path)
        except ValueError:
            pass        # another tool's JSON / CSV (llama-bench -o csv, a scoreboard copy): the importer
    return importers.read(path)


def check_points(path, batched: list | None = None, serving: list | None = None,
                 offload: list | None = None) -> tuple[list, list]:
    """(points, notes) of the records at `path` (a folder of records files, a folder of published
    results as pasted, each with its sidecar (published_folder: read by bench/public_records.py
    first), or one file): each measured single-stream pp / tg record as a point; every record or
    file left out is one note line ("file:line: why"). `batched`: a list that takes the points of
    several streams (llama-batched-bench's records, predicted apart: predict_batched); None: they
    are left out with a note. `serving`: a list that takes the serving benchmarks' runs as they ran
    (public_records' `serving_run` records: mean TTFT and TPOT, replayed apart: predict_serving);
    None: they are left out with a note. `offload`: a list that takes the runs partly on the CPU
    (`offload_run` records, priced with their placement and a host: offload_point); None: they are
    left out with a note."""
    pts, seen = [], {}
    tmp = None      # a published folder's records, made for this check: removed once read (the check writes no file)
    if published_folder(path):
        files, notes, tmp = _from_published(path)
    else:
        files, notes = _check_files(path), []
    try:
        for f in files:
            stem = os.path.splitext(os.path.basename(f))[0]
            try:
                recs = _read_any(f)
            except importers.FormatError as e:
                if not os.path.isdir(path):
                    raise SystemExit(str(e)) from None
                notes.append(f"{os.path.basename(f)}: not read ({e})")      # one file of a folder: the others still count
                continue
            for i, r in enumerate(recs):
                where = str(r.get("line") or (f"{os.path.basename(f)}:{str(r['source']).rsplit(':', 1)[1]}"
                                              if str(r.get("source", "")).startswith(f) else f"{os.path.basename(f)}:{i + 1}"))
                if r.get("offload_run"):
                    if offload is None:
                        notes.append(f"{where}: a run partly on the CPU: left out of the all-GPU check")
                        continue
                    try:
                        offload.append(offload_point(r, where))
                    except (jf.FitError, ValueError) as e:
                        notes.append(f"{where}: a run partly on the CPU, not priced: {e}")
                    continue
                if r.get("serving_run"):
                    # a serving benchmark's run as it ran: its client replayed (predict_serving), apart from the points
                    if serving is None:
                        notes.append(f"{where}: a serving benchmark's run (mean TTFT / TPOT): left out of the point check")
                        continue
                    if str(r.get("request_rate")) == "ramp-up":
                        notes.append(f"{where}: a serving run whose request rate rose over the run (vLLM's --ramp-up-strategy "
                                     f"{r.get('ramp_up_strategy')}): not replayed")
                        continue
                    if str(r.get("request_rate")) == "trace":
                        notes.append(f"{where}: a serving run at a trace's timestamps (its arrivals are not in the paste): "
                                     "not replayed")
                        continue
                    try:
                        rt, opts, setup = jf.setup_from_record(r, where)
                    except jf.FitError as e:
                        notes.append(str(e))
                        continue
                    serving.append(dict(r, where=where, setup=setup, options=opts))
                    continue
                if (r.get("test") == "serve" and r.get("tpot_s") and r.get("max_concurrency")
                        and public_records._runtime_of(r) in cm.list_runtimes()):
                    # a vLLM / SGLang serving result as the fit's decode point (public_records._vllm: B streams / mean TPOT)
                    meta = dict(file=os.path.basename(f), url=str(r.get("source") or f), date="", command="", note="")
                    r = dict(public_records._vllm(None, meta, stem, [r])[0], line=where)
                if r.get("evidence", "measured") != "measured" or r.get("test") not in ("pp", "tg"):
                    notes.append(f"{where}: not a measured pp / tg record ({r.get('evidence')}, {r.get('test')})")
                    continue
                rt = rtm.from_record(r)
                if rt is None:
                    notes.append(f"{where}: no runtime model for it (tool {r.get('tool')!r}, runtime {r.get('runtime')!r})")
                    continue
                several = r.get("tool") == "llama-batched-bench" or (int(r.get("n_streams") or 1) > 1
                                                                     and "serv" not in str(r.get("tool") or "").lower())
                if several and batched is None:
                    notes.append(f"{where}: a batched-bench record ({r.get('n_streams')} stream(s)): left out of the "
                                 "single-stream check (bench/bench_public_batched.py covers them)")
                    continue
                card = r.get("hardware") or r.get("device")
                if not card:
                    notes.append(f"{where}: names no card (a paste that does not say which GPU ran it: a sidecar "
                                 f"{stem}.txt with a `GPU:` line says it)")
                    continue
                if hardware.resolve_gpu_name(str(card)) is None:
                    notes.append(f"{where}: card {card!r} not in the catalog")
                    continue
                r = dict(r, runtime=rt, line=where, public_source=r.get("public_source") or stem)
                m = str(r.get("model") or "")
                if m.startswith("configs/"):   # an HF config public_records.py copied beside the records
                    r["model"] = os.path.join(os.path.dirname(os.path.abspath(f)), m)
                if "runtime_options" not in r:
                    r["runtime_options"] = {k: str(v) for k, v in rtm.options_from_record(cm.load_runtime(rt), r).items()}
                try:
                    pt = jf.point_from_record(r, where)
                except jf.FitError as e:
                    notes.append(str(e))
                    continue
                key = (pt.runtime, pt.gpu_key, pt.label, pt.batch, several)
                first = next((w for v, w in seen.get(key, ()) if same_measured(v, pt.measured)), None)
                if first:     # the same results in another file (llama-bench -o json and -o md of one run)
                    notes.append(f"{where}: the same point as {first}: counted once")
                    continue
                seen.setdefault(key, []).append((pt.measured, where))
                (batched if several else pts).append(pt)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return pts, notes


def predict_batched(pt, profile=None) -> float:
    """Aggregate tok/s of a batched-bench point (B streams) under a runtime model (default: its own as
    shipped) with the point's options, as bench/bench_public_batched.py predicts llama.cpp's own tables:
    PP = B prompts of n_prompt tokens, each from an empty cache (costmodel.prefill_batch); TG = B / the
    mean decode step of B streams over depths n_depth .. n_depth + n_gen - 1."""
    s = pt.setup if profile is None else dataclasses.replace(pt.setup, runtime=jf.apply_options(profile, pt.options))
    if pt.test == "pp":
        return cm.prefill_batch(s, pt.n_prompt, pt.batch, pt.n_depth).tok_s
    return pt.batch / cm._mean_decode(s, pt.n_depth, max(pt.n_gen, 1), pt.batch)[0]


def batched_report(path, pts: list, profiles: dict | None = None) -> list[str]:
    """The check's section for points of several streams: MAPE per runtime and source, then each
    point (largest |error| first)."""
    pairs = [(p, predict_batched(p, (profiles or {}).get(p.runtime))) for p in pts]
    L = ["", "### Several streams (llama-batched-bench; never fitted)", "",
         f"{len(pairs)} measured points of several streams (B prompts at once, B streams decoding) of {path}, each "
         f"predicted by its runtime model {'as shipped' if not profiles else 'as fitted by this run'}: PP = `costmodel.prefill_batch` (the B prompts in ubatches, each "
         "attending to its own cache), TG = B / the mean `costmodel.decode` step of B streams (aggregate tok/s). No "
         "target of issue 22 is of several streams; the single-stream targets above are for reference.", "",
         "| runtime | source | card | model | points | tg MAPE | pp MAPE | signed mean tg / pp |", "|---|---|---|---|---|---|---|---|"]
    for rt in sorted({p.runtime for p, _ in pairs}):
        for src in sorted({p.source for p, _ in pairs if p.runtime == rt}):
            L.append(_source_row(rt, src, [(p, q) for p, q in pairs if p.runtime == rt and p.source == src]))
    L += ["", "| runtime | where | point | B | options | measured tok/s (all streams) | predicted | error |",
          "|---|---|---|---|---|---|---|---|"]
    for p, q in sorted(pairs, key=lambda t: -abs(t[1] / t[0].measured - 1))[:POINT_ROWS]:
        opts = ",".join(f"{k}={v}" for k, v in sorted(p.options.items())) or "–"
        what = f"pp{p.n_prompt}" if p.test == "pp" else f"tg{p.n_gen} @ d{p.n_depth}"
        L.append(f"| {p.runtime} | {p.where} | {p.setup.model.name} {what} | {p.batch} | {opts} | {p.measured:.2f} | "
                 f"{q:.2f} | {q / p.measured - 1:+.1%} |")
    L.append("")
    return L


# the host a run partly on the CPU is priced with where its sidecar names none (glmbench/data/hosts/)
OFFLOAD_HOST = "desktop-ddr5"


def offload_point(r, where) -> dict:
    """A run partly on the CPU (public_records' `offload_run`: -ngl below the layer count, --n-cpu-moe,
    -ot ...=CPU) as the cost model places it (costmodel.Offload): its runtime model's Setup with that
    placement and a host (the sidecar's `host:` line, else OFFLOAD_HOST). ValueError where glmbench
    cannot place it: the KV cache on the CPU (-nkvo), tensors sent to another card, several streams."""
    if r.get("no_kv_offload"):
        raise ValueError("-nkvo keeps the KV cache on the CPU, which the offload model does not place")
    if r.get("offload_other"):
        raise ValueError(f"-ot sends tensors to another buffer than the CPU ({', '.join(r['offload_other'])})")
    if int(r.get("n_streams") or 1) > 1 or r.get("tool") == "llama-batched-bench":
        raise ValueError("several streams")
    if r.get("test") not in ("pp", "tg"):
        raise ValueError(f"test {r.get('test')!r}")
    rt, opts, setup = jf.setup_from_record(r, where)
    if setup.n_cards > 1:
        raise ValueError("the offload model places one card and its host")
    off = cm.Offload(n_gpu_layers=r.get("n_gpu_layers"), n_cpu_moe=int(r.get("n_cpu_moe") or 0),
                     override_tensor=tuple(r.get("override_tensor") or ()))
    host = r.get("host") or OFFLOAD_HOST
    setup = dataclasses.replace(setup, offload=off, host=host)
    return dict(r, where=where, setup=setup, options=opts, host_name=host, placement=off.label)


def predict_offload(run) -> float:
    """tok/s of a run partly on the CPU: pp N @ d (costmodel.prefill), or tg N @ d (one stream's mean
    decode step over depths d .. d + N - 1)."""
    s = run["setup"]
    if run["test"] == "pp":
        return cm.prefill(s, int(run["n_prompt"]), int(run.get("n_depth") or 0)).tok_s
    return 1.0 / cm._mean_decode(s, int(run.get("n_depth") or 0), max(int(run.get("n_gen") or 1), 1), 1)[0]


def offload_report(path, runs: list) -> list[str]:
    """The check's section for runs partly on the CPU: each point measured and priced with its placement."""
    L = ["", "### Partly on the CPU (never fitted; the host assumed)", "",
         f"{len(runs)} measured point(s) of {path} that ran partly on the CPU (-ngl below the layer count, "
         "--n-cpu-moe, -ot ...=CPU), each priced by its runtime model as shipped with its placement "
         "(`costmodel.Offload`: a host-held op runs on the host at its bandwidth and compute below 32 tokens, "
         "and its weights cross PCIe to the card for each ubatch from 32 tokens on) and a host profile: the "
         f"sidecar's `host:` line, else `{OFFLOAD_HOST}` (glmbench/data/hosts/: a 2-channel DDR5 desktop, 70 GB/s). "
         "The runtime models are fitted to all-GPU runs only, and the host is an assumption: these errors are "
         "not issue 22's.", "",
         "| runtime | where | card | model | placement | host | point | measured tok/s | predicted | error |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    errs = {"tg": [], "pp": []}
    for run in runs:
        q = predict_offload(run)
        e = q / float(run["avg_ts"]) - 1
        errs[run["test"]].append(abs(e))
        s = run["setup"]
        what = (f"pp{run['n_prompt']}" if run["test"] == "pp" else f"tg{run['n_gen']}") + f" @ d{run.get('n_depth') or 0}"
        placement = run["placement"].replace("|", "\\|")    # an -ot regex's alternation, not a cell's end
        L.append(f"| {run['runtime']} | {run['where']} | {s.gpu.key} | {s.model.name} | {placement} | "
                 f"{run['host_name']} | {what} | {float(run['avg_ts']):.2f} | {q:.2f} | {e:+.1%} |")
    L += ["", "MAPE over these points: decode " + (_pct(float(np.mean(errs["tg"]))) if errs["tg"] else "–")
          + ", prefill " + (_pct(float(np.mean(errs["pp"]))) if errs["pp"] else "–") + ".", ""]
    return L


def predict_serving(run, profile=None) -> dict:
    """{"ttft_s", "tpot_s"} (means) a serving benchmark's run is predicted to measure: its client
    replayed on its server (glmbench.predict.replay.bench_serve): `completed` requests of the mean
    prompt and output, its --max-concurrency (None: unlimited) and --request-rate (inf or absent:
    all at once, vLLM's default; else a Poisson process, or a gamma one of its burstiness), on the
    server's own limits where the run does not state them (replay.server_config). The runtime model
    as shipped (`profile`: another one, with the run's options)."""
    s = run["setup"] if profile is None else dataclasses.replace(run["setup"], runtime=jf.apply_options(profile, run["options"]))
    if run.get("serve_kind"):
        return _predict_offline(run, s)
    rate = run.get("request_rate")
    rate = math.inf if rate in (None, "", "inf") else float(rate)
    conc = run.get("max_concurrency")
    cfg = replay.server_config(s, run["runtime"], max_num_seqs=run.get("max_num_seqs"),
                               max_batched_tokens=run.get("max_num_batched_tokens"))
    n = int(run.get("completed") or 1)
    cl = replay.bench_serve(s, max(int(run["n_prompt"]), 1), max(int(run["n_gen"]), 1), n,
                            concurrency=int(conc) if conc else None, rate=rate,
                            burstiness=float(run.get("burstiness") or 1.0), config=cfg)
    tpot = cl["tpot_s"][np.isfinite(cl["tpot_s"])]
    ttft = cl["ttft_s"][np.isfinite(cl["ttft_s"])]
    return {"ttft_s": float(np.mean(ttft)) if len(ttft) else math.nan,
            "tpot_s": float(np.mean(tpot)) if len(tpot) else math.nan, "server": cfg}


def _predict_offline(run, s) -> dict:
    """vLLM's offline run (bench latency / bench throughput) or SGLang's (bench_offline_throughput):
    every request queued at once in the in-process engine (no client, no gap; replay.server_config's
    offline limits: vLLM's LLM class's, SGLang's engine its server's), replayed to the last token:
    {"latency_s": the whole run, "request_throughput": requests / it}."""
    cfg = replay.server_config(s, run["runtime"], max_num_seqs=run.get("max_num_seqs"),
                               max_batched_tokens=run.get("max_num_batched_tokens"), offline=True)
    n = int(run.get("completed") or run.get("n_streams") or 1)
    cl = replay.bench_serve(s, max(int(run["n_prompt"]), 1), max(int(run["n_gen"]), 1), n, config=cfg,
                            client_gap_s=0.0)
    end = float(np.nanmax(cl["sent_s"] + cl["e2e_s"]))
    return {"latency_s": end, "request_throughput": n / end, "server": cfg}


def serving_report(path, runs: list, profiles: dict | None = None) -> list[str]:
    """The check's section for serving benchmarks' runs: mean TTFT and TPOT, measured and replayed."""
    L = ["", "### Serving benchmarks (their clients replayed; never fitted)", "",
         f"{len(runs)} serving benchmark run(s) of {path} (vLLM's bench serve, SGLang's bench_serving), each "
         "replayed as it ran: its client (`replay.bench_serve`: `completed` requests of the mean prompt and "
         "output, its --max-concurrency, its --request-rate: all at once when inf, else a Poisson process of "
         "it, seeded; the next request sent on a finish reaches the server after the step then starting) on "
         "the server's limits (`replay.server_config`: its command line's, else its defaults) with the "
         f"runtime model {'as shipped' if not profiles else 'as fitted by this run'}. Error = predicted / "
         "measured - 1 on the rate (1 / TTFT, 1 / TPOT): + is too fast. A closed loop's TPOT is also a decode "
         "point of the table above (B / TPOT).", "",
         "| runtime | where | card | model | in / out | concurrency | rate /s | server seqs / step tokens | "
         "measured TTFT ms | predicted | error | measured TPOT ms | predicted | error |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    errs = {"ttft_s": [], "tpot_s": []}
    offline = [r for r in runs if r.get("serve_kind")]
    runs = [r for r in runs if not r.get("serve_kind")]
    if not runs:
        L = L[:2]
    for run in runs:
        q = predict_serving(run, (profiles or {}).get(run["runtime"]))
        cells = []
        for k in ("ttft_s", "tpot_s"):
            m = run.get(k)
            if m and q[k] == q[k] and q[k] > 0:
                e = m / q[k] - 1
                errs[k].append(e)
                cells += [f"{m * 1e3:.1f}", f"{q[k] * 1e3:.1f}", f"{e:+.1%}"]
            else:   # not published, or every request rejected in the replay (its prompt and output do not fit)
                cells += [f"{m * 1e3:.1f}" if m else "–", f"{q[k] * 1e3:.1f}" if q[k] == q[k] else "rejected", "–"]
        s = run["setup"]
        card = s.gpu.key + (f" x{s.n_cards}" if s.n_cards > 1 else "")
        rate = run.get("request_rate")
        L.append(f"| {run['runtime']} | {run['where']} | {card} | {s.model.name} | {run['n_prompt']} / {run['n_gen']} | "
                 f"{run.get('max_concurrency') or 'unlimited'} | {rate if rate not in (None, '') else 'inf'} | "
                 f"{q['server'].max_num_seqs} / {q['server'].max_batched_tokens} | " + " | ".join(cells) + " |")
    if runs:
        L += ["", "MAPE over these runs: mean TTFT " + (_pct(float(np.mean(np.abs(errs["ttft_s"])))) if errs["ttft_s"] else "–")
              + ", mean TPOT " + (_pct(float(np.mean(np.abs(errs["tpot_s"])))) if errs["tpot_s"] else "–")
              + ". No target of issue 22 is of serving latencies.", ""]
    if offline:
        L += ["", f"{len(offline)} offline run(s) of {path} (vLLM's `bench latency` / `bench throughput`, SGLang's "
              "`bench_offline_throughput`: every request queued at once in the in-process engine), each replayed to its "
              "last token (`replay.bench_serve`, no client; `replay.server_config(..., offline=True)`: vLLM's LLM-class "
              "limits, 16384 prompt tokens per step on a device of >= 70 GiB other than an A100, else 8192; SGLang's "
              "engine its server's defaults). Latency: the whole run; throughput: requests / that. Error = "
              "predicted / measured - 1 on the rate.", "",
              "| runtime | where | card | model | kind | in / out | requests | seqs / step tokens | measured | predicted | error |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        oe = []
        for run in offline:
            q = predict_serving(run, (profiles or {}).get(run["runtime"]))
            s = run["setup"]
            card = s.gpu.key + (f" x{s.n_cards}" if s.n_cards > 1 else "")
            if run["serve_kind"] == "latency":
                m, p_, unit = run["latency_s"], q["latency_s"], "s"
                e = m / p_ - 1
            else:
                m, p_, unit = run["request_throughput"], q["request_throughput"], "req/s"
                e = p_ / m - 1
            oe.append(e)
            L.append(f"| {run['runtime']} | {run['where']} | {card} | {s.model.name} | {run['serve_kind']} | "
                     f"{run['n_prompt']} / {run['n_gen']} | {run.get('completed') or run.get('n_streams')} | "
                     f"{q['server'].max_num_seqs} / {q['server'].max_batched_tokens} | {m:.3f} {unit} | {p_:.3f} {unit} | "
                     f"{e:+.1%} |")
        L += ["", f"MAPE over these runs: {_pct(float(np.mean(np.abs(oe))))}.", ""]
    return L


def same_measured(a: float, b: float) -> bool:
    """Two tok/s figures of one run as different files print them: llama-bench's md, sweep-bench's and
    batched-bench's tables round to 2 decimals, its json / csv keep 6 (4031.675437 is the md's 4031.68), so
    figures within half a unit of the 2nd decimal are one."""
    return abs(float(a) - float(b)) <= 0.005 + 1e-9 * max(abs(float(a)), abs(float(b)))


def _seen(rt) -> dict:
    """{label: [measured, ...]} of the points a shipped profile was fitted to (its calibration): a point
    of the same model, test, depth and measured value (same_measured) is one of them, whatever its file
    is named or however many decimals it prints."""
    try:
        cal = cm.load_runtime(rt).calibration or {}
    except (ValueError, OSError, AttributeError):
        return {}
    out = {}
    for row in cal.get("points", []):
        out.setdefault(row[2], []).append(float(row[4]))
    return out


def _was_fitted(p, seen: dict) -> bool:
    return any(same_measured(v, p.measured) for v in seen.get(p.label, ()))


def check(pts, profiles: dict) -> dict:
    """{runtime: [(point, predicted)]}: each point predicted by its runtime's profile."""
    out = {}
    for rt in sorted({p.runtime for p in pts}):
        mine = [p for p in pts if p.runtime == rt]
        out[rt] = list(zip(mine, jf.predict_many(mine, profiles[rt])))
    return out


def _source_row(rt: str, src: str, sv: list) -> str:
    """One source's row of a check: its cards, models, points, decode / prefill MAPE and signed mean errors."""
    sgn = []
    for t in ("tg", "pp"):
        e = [q / p.measured - 1 for p, q in sv if p.test == t]
        sgn.append(f"{np.mean(e):+.1%}" if e else "–")
    cards = ", ".join(sorted({p.gpu_key + (f" x{p.setup.n_cards}" if p.setup.n_cards > 1 else "") for p, _ in sv}))
    models = ", ".join(sorted({p.setup.model.name for p, _ in sv}))
    return (f"| {rt} | {src} | {cards} | {models} | {len(sv)} | {_pct(jf.mape(sv, 'tg'))} | {_pct(jf.mape(sv, 'pp'))} | "
            f"{sgn[0]} / {sgn[1]} |")


def check_report(path, pairs: dict, notes: list, profiles_from: str) -> list[str]:
    lim_tg, lim_pp = TARGETS["loso"]
    n = sum(len(v) for v in pairs.values())
    L = [f"## Check: {path} (never fitted)", "",
         f"{n} measured points of {path}, each predicted by the runtime model {profiles_from}; none of them "
         "was fitted to these points. MAPE of decode (tg) and prefill (pp), beside the leave-one-source-out targets "
         f"(decode <= {_pct(lim_tg)}, prefill <= {_pct(lim_pp)}) and the shipped profile's own LOSO MAPE "
         "(its `calibration`).", "",
         "| runtime | points | tg MAPE | pp MAPE | target tg / pp | met | shipped LOSO tg / pp |", "|---|---|---|---|---|---|---|"]
    allp = [pq for v in pairs.values() for pq in v]
    for rt, v in list(pairs.items()) + ([("all (pooled)", allp)] if len(pairs) > 1 else []):
        tg, pp = jf.mape(v, "tg"), jf.mape(v, "pp")
        met = [ok for ok in ((tg <= lim_tg) if tg is not None else None, (pp <= lim_pp) if pp is not None else None)
               if ok is not None]
        cal = {}
        if rt in pairs:
            try:
                cal = cm.load_runtime(rt).calibration or {}
            except (ValueError, OSError, AttributeError):
                cal = {}
        L.append(f"| {rt} | {len(v)} | {_pct(tg)} | {_pct(pp)} | {_pct(lim_tg)} / {_pct(lim_pp)} | "
                 f"{'yes' if met and all(met) else '**no**' if met else '–'} | "
                 f"{_pct(cal.get('loso_mape_decode'))} / {_pct(cal.get('loso_mape_prefill'))} |")
    L += ["", "| runtime | source | card | model | points | tg MAPE | pp MAPE | signed mean tg / pp |", "|---|---|---|---|---|---|---|---|"]
    for rt, v in pairs.items():
        for src in sorted({p.source for p, _ in v}):
            L.append(_source_row(rt, src, [(p, q) for p, q in v if p.source == src]))
    L += point_rows(pairs)
    fitted = {rt: _seen(rt) for rt in pairs}
    seen = [p for rt, v in pairs.items() for p, _ in v if _was_fitted(p, fitted[rt])]
    if seen:
        srcs = sorted({p.source for p in seen})
        L[2:2] = [f"**Not an unseen set:** {len(seen)} of these {n} points (same model, test, depth and measured value) are points the "
                  f"shipped profiles were fitted to ({len(srcs)} sources: {', '.join(srcs[:4])}{', ...' if len(srcs) > 4 else ''}); "
                  "their error is in-sample, not a check.", ""]
    if notes:
        L += ["", f"Left out ({len(notes)} records):", ""] + [f"- {x}" for x in notes[:40]]
        if len(notes) > 40:
            L.append(f"- ... and {len(notes) - 40} more")
    L.append("")
    return L


POINT_ROWS = 300     # the per-point table of a check lists at most this many points (the worst first)


def point_rows(pairs: dict) -> list[str]:
    """The check's per-point table: each point (its file:line, runtime options, measured and
    predicted tok/s, signed error), the largest |error| first; at most POINT_ROWS rows."""
    allp = sorted(((rt, p, float(q)) for rt, v in pairs.items() for p, q in v),
                  key=lambda t: -abs(t[2] / t[1].measured - 1))
    L = ["", f"Per point ({len(allp)}{f', the {POINT_ROWS} largest errors' if len(allp) > POINT_ROWS else ''}; "
         "error = predicted / measured - 1, largest |error| first):", "",
         "| runtime | source | where | card | point | options | measured tok/s | predicted tok/s | error |",
         "|---|---|---|---|---|---|---|---|---|"]
    for rt, p, q in allp[:POINT_ROWS]:
        opts = ",".join(f"{k}={v}" for k, v in sorted(p.options.items())) or "–"
        card = p.gpu_key + (f" x{p.setup.n_cards}" if p.setup.n_cards > 1 else "")
        L.append(f"| {rt} | {p.source} | {p.where} | {card} | {p.label} | {opts} | {p.measured:.2f} | {q:.2f} | "
                 f"{q / p.measured - 1:+.1%} |")
    return L


def run_checks(paths, profiles: dict | None = None) -> list[str]:
    """The check sections of the report for each path (module docstring, --check)."""
    out = []
    for path in paths:
        several: list = []
        served: list = []
        offl: list = []
        pts, notes = check_points(path, several, served, offl)
        if not pts and not several and not served and not offl:
            raise SystemExit(f"{path}: no measured point to check" + (f" ({notes[0]} ...)" if notes else ""))
        rts = sorted({p.runtime for p in pts})
        if profiles is None:
            profs = {rt: cm.load_runtime(rt) for rt in rts}
            frm = "as shipped (glmbench/data/runtime/<runtime>.json, fitted to glmbench/data/public/)"
        else:       # a runtime the run did not fit (sglang: no public point) as shipped
            profs = {**{rt: cm.load_runtime(rt) for rt in rts}, **profiles}
            frm = "as fitted by this run to glmbench/data/public/ (a runtime it does not fit: as shipped)"
        out += check_report(path, check(pts, profs), notes, frm)
        if several:
            out[-1:-1] = batched_report(path, several, None if profiles is None else profs)
        if served:
            out[-1:-1] = serving_report(path, served, None if profiles is None else profs)
        if offl:
            out[-1:-1] = offload_report(path, offl)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-profiles", action="store_true")
    ap.add_argument("--out", default=None, metavar="DIR",
                    help="folder of the result files (default bench/results; a --check without --with-fit "
                         "writes public_check_<date>.md only when --out is given, else only prints it)")
    ap.add_argument("--baseline", help="an earlier results file: its pooled MAPEs as a `before` column of the targets")
    ap.add_argument("--baseline-label", default="", help="what --baseline is (e.g. the commit it came from)")
    ap.add_argument("--check", action="append", default=[], metavar="DIR_OR_FILE",
                    help="records never fitted (bench/public_records.py --out DIR, or a records file): predicted by "
                         "the shipped runtime models; per source and pooled MAPE (repeatable)")
    ap.add_argument("--with-fit", action="store_true", help="with --check: fit first and check this run's fit")
    a = ap.parse_args(argv)
    today = datetime.date.today().isoformat()
    if a.check and not a.with_fit:
        for c in a.check:
            _check_files(c)
        t0 = time.time()
        body = run_checks(a.check)
        load = os.getloadavg()
        text = "\n".join([f"# Runtime models checked on published results they were not fitted to ({today})", "",
                          f"bench/bench_public_fit.py --check; predicted in {time.time() - t0:.0f} s on {machine.cpu_name()} "
                          f"(load {load[0]:.2f}). MAPE = mean |predicted / measured - 1|; every point is measured "
                          "(published), every prediction is the runtime model's.", ""] + body)
        print(text)
        if a.out is not None:   # a check writes into a folder only when asked (never into the checkout by default)
            path = os.path.join(a.out, f"public_check_{today}.md")
            rec.atomic_write_text(path, text)
            print(f"-> {path}")
        return
    for c in a.check:
        _check_files(c)
    out = a.out if a.out is not None else os.path.join(HERE, "results")
    pts, res, sec = run(a.write_profiles, out)
    text = report(pts, res, sec, a.baseline, a.baseline_label)
    if a.check:
        text += "\n".join(run_checks(a.check, {rt: r["fit"].profile for rt, r in res.items()}))
    path = os.path.join(out, f"public_fit_{today}.md")
    rec.atomic_write_text(path, text)
    print(text)
    print(f"-> {path}")


if __name__ == "__main__":
    main()

"""The truth table: every measured point glmbench knows beside its ideal, typical and calibrated
prediction, with the errors and the MAPE per runtime.

    glmbench truth-table [--host DIR ...] [--out docs/TRUTH_TABLE.md]

Sources:
  - the published measurements shipped in glmbench/data/measured/ (docs/SOURCES.md §6), each
    with the calibrated profile of the same name (glmbench/data/calibrated/). Those profiles were
    fitted to the very points they are shown against (in-sample), so the leave-one-out error is
    computed here (each point predicted by a profile refitted without it) and shown beside it.
  - a directory written by bench/bench_host_calibration.py (`--host DIR`): this CPU measured by
    glmbench (measured.json), the host profile it ran on (host_profile.json), the profile
    calibrated on some depths (profile.json, fitted to fit_points.json only); the points the fit did
    not see are marked held out, and their error is the out-of-sample one.
  - a directory written by bench/bench_llama_bench.sh (`--llama-bench DIR`): llama.cpp's own
    llama-bench run on this CPU (its real -o json), with the host profile, the model's config and a
    profile calibrated on all its points (leave-one-out computed here).
  - any other measured file (`--measured FILE --measured-hardware GPU|profile.json
    [--measured-model M]`), shown with ideal and typical only unless `--measured-calibrated
    PROFILE` names a profile of that runtime. Which of its points such a profile was fitted on, its
    `calibration.points` says (`fitted_entry`): those are in-sample, with the cross-validated
    prediction the profile stores for each; every other point is out-of-sample (not fitted on).

Nothing here measures: every number is read from a file or predicted by the cost model, so the
table is regenerated the same way on any machine (the C core is not needed).
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import numpy as np

from glmbench import __version__, vocab
from glmbench.predict import calibrate as cal
from glmbench.predict import costmodel as cm

MEASURED_DIR = os.path.join(vocab.DATA_DIR, "measured")


@dataclass
class Source:
    """One set of measured points and how to predict them."""
    label: str                  # "ik_llama.cpp (after its MLA fixes)", "glmbench on this CPU", ...
    path: str                   # the measured records
    calibrated: object = None   # a RuntimeProfile, or None (no profile for this runtime)
    hardware: object = None     # override of the records' hardware (a host profile path)
    model: str | None = None
    fit_path: str | None = None  # the points the calibrated profile was fitted to (None: all of them)
    loo: bool = False           # refit without each point to get its leave-one-out error
    note: str = ""
    runtime_model: str | None = None   # the runtime model of the points' runtime (llama.cpp, ...), fitted
                                       # to the public set only: how it predicts them out of the box
    option: str = "--measured-calibrated"   # the option that chose `calibrated` (named in its errors)


@dataclass
class Row:
    source: str
    point: cal.Point
    ideal: float
    typical: float
    calibrated: float | None
    held_out: bool | None       # None: the profile saw every point (in-sample)
    loo: float | None = None    # leave-one-out prediction (in-sample sources)
    model: float | None = None  # the runtime model's prediction (Source.runtime_model; never fitted to the point)
    loo_kind: str = "leave-one-out"     # how `loo` was made (a profile's own k-fold: "10-fold")
    held_kind: str = "held-out depths"  # what the held-out points are (summary's out-of-sample label)

    def err(self, v):
        return None if v is None else v / self.point.measured - 1


def published_sources() -> list[Source]:
    """The shipped measurements, each with its shipped calibrated profile."""
    out = []
    for f in sorted(os.listdir(MEASURED_DIR)):
        if not f.endswith(".json"):
            continue
        name = f[:-5]
        path = os.path.join(MEASURED_DIR, f)
        recs = cal.read_measured(path)
        runtime = recs[0][1].get("runtime", name) if recs else name
        prof = cm.load_runtime(name) if name in cm.list_calibrated() else None
        model = recs[0][1].get("runtime_model") if recs else None
        out.append(Source(f"{runtime} (published)", path, prof, loo=True,
                          note=f"glmbench/data/measured/{f}, profile `{name}` (glmbench/data/calibrated/{f})"
                          + (f"; runtime model `{model}`" if model else ""), runtime_model=model))
    return out


def _files(d: str, flag: str, writer: str, names: tuple) -> dict:
    """{name: path} of the files a results directory must hold, or one error naming the missing one."""
    need = {k: os.path.join(d, k) for k in names}
    for k, p in need.items():
        if not os.path.isfile(p):
            raise ValueError(f"{flag} {d}: {k} is missing (write it with {writer})")
    return need


def host_source(d: str) -> Source:
    """A directory written by bench/bench_host_calibration.py."""
    need = _files(d, "--host", "bench/bench_host_calibration.py",
                  ("measured.json", "host_profile.json", "profile.json", "fit_points.json"))
    prof = cm.load_runtime("calibrated:" + need["profile.json"])
    return Source("glmbench on this CPU (measured)", need["measured.json"], prof, hardware=need["host_profile.json"],
                  fit_path=need["fit_points.json"], note=f"host profile and calibration in {d}")


def llama_bench_source(d: str) -> Source:
    """A directory written by bench/bench_llama_bench.sh: llama.cpp's llama-bench run on this CPU
    (llama-bench.json, its real -o json), the host profile (host_profile.json), the file's model
    (config.json) and the profile calibrated on all of its points (llama-cpp-cpu.json; in-sample,
    so the leave-one-out error is computed)."""
    need = _files(d, "--llama-bench", "bench/bench_llama_bench.sh",
                  ("llama-bench.json", "host_profile.json", "config.json", "llama-cpp-cpu.json"))
    prof = cm.load_runtime("calibrated:" + need["llama-cpp-cpu.json"])
    return Source(f"llama.cpp llama-bench on this CPU ({os.path.basename(os.path.normpath(d))})",
                  need["llama-bench.json"], prof, hardware=need["host_profile.json"], model=need["config.json"],
                  loo=True, note=f"host profile, model config and calibration in {d}")


def _same_setup(p: cal.Point, label) -> bool:
    """`label` (a profile's `calibration.points[].setup`) is p's setup under some runtime profile:
    the same words before and after the runtime's name."""
    mine, rt = p.setup.label, p.setup.runtime.name
    k = mine.rfind(", " + rt)
    if k < 0 or not isinstance(label, str):
        return False
    pre, post = mine[:k + 2], mine[k + 2 + len(rt):]
    if len(label) <= len(pre) + len(post) or not label.startswith(pre) or not label.endswith(post):
        return False
    return ", " not in label[len(pre):len(label) - len(post)]


def _file_line(where) -> tuple:
    f, _, line = str(where).rpartition(":")
    return os.path.basename(f), line


def fitted_entry(p: cal.Point, fit: list) -> dict | None:
    """The entry of a profile's `calibration.points` (what `glmbench calibrate` fitted it to) that is
    point p, or None where the profile was not fitted on p: the same test, depth and token counts, the
    same measured speed, and the same setup (its runtime aside) or the same file and line."""
    for d in fit:
        if not isinstance(d, dict):
            continue
        try:
            same = (d.get("test") == p.test and d.get("n_depth") == p.n_depth and d.get("n_prompt") == p.n_prompt
                    and d.get("n_gen") == p.n_gen
                    and abs(float(d["measured_ts"]) - p.measured) <= 1e-9 * max(abs(p.measured), 1.0))
        except (KeyError, TypeError, ValueError):
            continue
        if same and (_same_setup(p, d.get("setup")) or (d.get("model") == p.setup.model.name
                                                          and _file_line(d.get("where")) == _file_line(p.where))):
            return d
    return None


def _profile_fit(prof) -> tuple:
    """(the points a calibrated profile lists as fitted on, how its stored out-of-sample predictions
    were made), or (None, None) where it lists none (a runtime model, a hand-written profile)."""
    c = getattr(prof, "calibration", None) or {}
    pts = c.get("points") if isinstance(c, dict) else None
    if not isinstance(pts, list) or not pts:
        return None, None
    k = c.get("cv_folds")
    return pts, (f"{k}-fold" if isinstance(k, int) and not isinstance(k, bool) else "leave-one-out")


def rows_for(src: Source) -> list[Row]:
    """Each point of the source beside its predictions. A calibrated profile that neither the source's
    fit_path nor its refits (loo) say what it saw tells it itself (`calibration.points`): a point it
    was fitted on is in-sample, with its stored cross-validated prediction; any other is held out."""
    pts = cal.load_points([src.path], hardware_=src.hardware, model=src.model, multi_stream=src.calibrated is None)
    ideal, typical = cm.load_runtime("ideal"), cm.load_runtime("typical")
    fitted = {vocab.point_key(r) for _, r in cal.read_measured(src.fit_path)} if src.fit_path else None
    loo = (cal.loo_predictions(pts) if src.loo and src.calibrated is not None else [None] * len(pts))
    if src.calibrated is not None:
        cal.check_weights_run(pts, src.calibrated, src.option)
    fit, loo_kind = (None, None)
    if src.calibrated is not None and fitted is None and not src.loo:
        fit, loo_kind = _profile_fit(src.calibrated)
    model = cm.load_runtime(src.runtime_model) if src.runtime_model else None
    out = []
    for i, p in enumerate(pts):
        held = None if fitted is None else vocab.point_key(p.record) not in fitted
        lo = loo[i]
        kinds = {}
        if fit is not None:
            d = fitted_entry(p, fit)
            held = d is None
            v = None if d is None else d.get("loo_predicted_ts")
            lo = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None
            kinds = dict(loo_kind=loo_kind, held_kind="not fitted on")
        c = None if src.calibrated is None else cal.predict_point(p, src.calibrated)
        m = None if model is None else cal.predict_point(p, model)
        out.append(Row(src.label, p, cal.predict_point(p, ideal), cal.predict_point(p, typical), c, held, lo, m,
                       **kinds))
    return out


def _mape(xs) -> float | None:
    xs = [abs(x) for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def summary(rows: list[Row]) -> list[dict]:
    """Per source: the number of points and the MAPE of each prediction (for calibrated: in-sample,
    and out-of-sample = leave-one-out or held-out depths)."""
    out = []
    for s in dict.fromkeys(r.source for r in rows):
        rs = [r for r in rows if r.source == s]
        # out-of-sample: a point's cross-validated prediction where it has one, else its error where the
        # profile never saw it (held out); in-sample: the points the profile was fitted on
        oos = [r.err(r.loo if r.loo is not None else r.calibrated) for r in rs if r.loo is not None or r.held_out]
        insample = [r.err(r.calibrated) for r in rs if not r.held_out]
        kinds = list(dict.fromkeys([r.loo_kind for r in rs if r.loo is not None]
                                   + [r.held_kind for r in rs if r.held_out and r.loo is None]))
        out.append(dict(source=s, points=len(rs), ideal=_mape(r.err(r.ideal) for r in rs),
                        typical=_mape(r.err(r.typical) for r in rs), model=_mape(r.err(r.model) for r in rs),
                        calibrated_in_sample=_mape(insample),
                        calibrated_out_of_sample=_mape(oos),
                        out_of_sample=" + ".join(kinds)))
    return out


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:+.1f}%"


def _apct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def public_summary() -> list[dict]:
    """Per public source (glmbench/data/public/, docs/SOURCES.md): its runtime, points, and the decode
    and prefill MAPE of `typical`, of the runtime model (fitted to every public point of that
    runtime, in-sample) and leave-one-source-out (the runtime model refitted without the source, as
    recorded in the profile's `calibration.sources` by bench/bench_public_fit.py)."""
    from glmbench.predict import jointfit as jf
    pts = jf.load_public()
    typical = cm.load_runtime("typical")
    out = []
    for rt in sorted({p.runtime for p in pts}):
        mine = [p for p in pts if p.runtime == rt]
        prof = cm.load_runtime(rt)
        typ = jf.predict_many(mine, typical)
        mod = jf.predict_many(mine, prof)
        loso = (prof.calibration or {}).get("sources", {})
        for src in sorted({p.source for p in mine}):
            idx = [i for i, p in enumerate(mine) if p.source == src]
            d = {"runtime": rt, "source": src, "points": len(idx), "url": mine[idx[0]].record.get("source", "")}
            for test in ("tg", "pp"):
                ii = [i for i in idx if mine[i].test == test]
                d[f"typical_{test}"] = _mape([typ[i] / mine[i].measured - 1 for i in ii])
                d[f"model_{test}"] = _mape([mod[i] / mine[i].measured - 1 for i in ii])
                key = "loso_mape_decode" if test == "tg" else "loso_mape_prefill"
                d[f"loso_{test}"] = loso.get(src, {}).get(key)
            out.append(d)
    return out


def physics_on_public(name: str = "typical") -> dict:
    """How a physics profile (`typical`, `ideal`) predicts the published points shipped in
    glmbench/data/public/, beside the runtime models fitted to them: {"points", "tg", "pp" (its MAPE
    pooled), "per_runtime": {runtime: {"points", "tg", "pp" (its MAPE on that runtime's points),
    "loso_tg", "loso_pp" (the runtime model's leave-one-source-out MAPE, its `calibration`)}}}."""
    from glmbench.predict import jointfit as jf
    pts = jf.load_public()
    pred = jf.predict_many(pts, cm.load_runtime(name))
    err = [pr / p.measured - 1 for pr, p in zip(pred, pts)]
    out = {"points": len(pts), "per_runtime": {}}
    for test in ("tg", "pp"):
        out[test] = _mape([e for e, p in zip(err, pts) if p.test == test])
    for rt in sorted({p.runtime for p in pts}):
        c = cm.load_runtime(rt).calibration or {}
        d = {"points": sum(p.runtime == rt for p in pts), "loso_tg": c.get("loso_mape_decode"),
             "loso_pp": c.get("loso_mape_prefill")}
        for test in ("tg", "pp"):
            d[test] = _mape([e for e, p in zip(err, pts) if p.runtime == rt and p.test == test])
        out["per_runtime"][rt] = d
    return out


def render_public(rows: list[dict]) -> list[str]:
    L = ["", "## Public results and the runtime models", "",
         "Published llama-bench / sweep-bench / vLLM results (glmbench/data/public/, each record with its source URL, date "
         "and command; docs/SOURCES.md) beside `typical` (physics only) and the runtime model named after the source's "
         "runtime (`--runtime llama.cpp` ...; glmbench/data/runtime/), in-sample and leave-one-source-out (LOSO: fitted "
         "without the source). MAPE, decode (tg) / prefill (pp); – where the source has no such test. Full cross-validation: "
         "bench/results/public_fit_<date>.md.", "",
         "| runtime | source | points | typical tg / pp | runtime model tg / pp | LOSO tg / pp |", "|---|---|---|---|---|---|"]
    for d in rows:
        L.append(f"| {d['runtime']} | [{d['source']}]({d['url']}) | {d['points']} | {_apct(d['typical_tg'])} / "
                 f"{_apct(d['typical_pp'])} | {_apct(d['model_tg'])} / {_apct(d['model_pp'])} | "
                 f"{_apct(d['loso_tg'])} / {_apct(d['loso_pp'])} |")
    return L


def render(rows: list[Row], sources: list[Source], command: str, public: list[dict] | None = None) -> str:
    L = ["# Truth table: every measured point beside its predictions", "",
         f"Generated by `{command}` on {datetime.date.today().isoformat()} (glmbench {__version__}).",
         "Regenerate with the same command; nothing is measured by it (every number is read from the files "
         "below or predicted by the cost model).", "",
         "Kinds of number: **measured** (the file's), **predicted** by the cost model with the `ideal` and "
         "`typical` runtime profiles, and **calibrated** (a profile fitted to measurements of that runtime). "
         "Error = predicted / measured - 1. A calibrated profile fitted to the very points it is shown against "
         "is in-sample; its out-of-sample error is the leave-one-out one (the point predicted by a profile "
         "refitted without it) or the error on points the fit never saw (held out: for this CPU, the depths "
         "its calibration left out; for a measured file, the points the profile's `calibration.points` does not "
         "list).", "",
         "## Sources", ""]
    for s in sources:
        shown = s.path if not os.path.isabs(s.path) or not s.path.startswith(MEASURED_DIR) else "shipped"
        L.append(f"- **{s.label}**: {shown if shown == 'shipped' else f'`{shown}`'}" + (f"; {s.note}" if s.note else "")
                 + ("" if s.calibrated is not None else "; no calibrated profile of this runtime"))
    L += ["", "## MAPE per runtime", "",
          "`runtime model`: the model named after the source's runtime (`--runtime ik_llama.cpp`, ...; "
          "glmbench/data/runtime/), fitted to the public results only (glmbench/data/public/), never to these "
          "points: the out-of-the-box error for a user who has none of their own measurements. Which model and "
          "options each source maps to, and why, is in its records (`runtime_model`, `runtime_options`, "
          "`assumptions`).", "",
          "| source | points | ideal | typical | runtime model (public fit) | calibrated (in-sample) | calibrated (out-of-sample) |",
          "|---|---|---|---|---|---|---|"]
    for d in summary(rows):
        oos = _apct(d["calibrated_out_of_sample"]) + (f" ({d['out_of_sample']})" if d["out_of_sample"] else "")
        L.append(f"| {d['source']} | {d['points']} | {_apct(d['ideal'])} | {_apct(d['typical'])} | "
                 f"{_apct(d['model'])} | {_apct(d['calibrated_in_sample'])} | {oos} |")
    L += ["", "## Every point", "",
          "| source | setup | test | depth | measured tok/s | ideal | typical | runtime model | calibrated | out-of-sample |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r.point
        what = f"pp{p.n_prompt}" if p.test == "pp" else f"tg{p.n_gen}"
        setup = p.setup.label.rsplit(",", 1)[0]   # the runtime name is the column's
        cal_s = "–" if r.calibrated is None else f"{r.calibrated:.1f} ({_pct(r.err(r.calibrated))})"
        if r.loo is not None:
            oos = f"{r.loo:.1f} ({_pct(r.err(r.loo))}) {r.loo_kind}"
        elif r.held_out:
            word = "held out" if r.held_kind == "held-out depths" else r.held_kind
            oos = f"{word} ({_pct(r.err(r.calibrated))})"
        elif r.held_out is False:
            oos = "fitted on"
        else:
            oos = "–"
        mod_s = "–" if r.model is None else f"{r.model:.1f} ({_pct(r.err(r.model))})"
        L.append(f"| {r.source} | {setup} | {what} | {p.n_depth} | {p.measured:.1f} | "
                 f"{r.ideal:.1f} ({_pct(r.err(r.ideal))}) | {r.typical:.1f} ({_pct(r.err(r.typical))}) | "
                 f"{mod_s} | {cal_s} | {oos} |")
    if public:
        L += render_public(public)
    return "\n".join(L) + "\n"


def build(host_dirs=(), extra: list[Source] | None = None, progress: bool = True,
          published: bool = True, llama_bench_dirs=()) -> tuple[list[Row], list[Source]]:
    """The rows of every source: the shipped measurements (unless published=False), each --host
    directory, each --llama-bench directory, then `extra`."""
    sources = ((published_sources() if published else []) + [host_source(d) for d in host_dirs]
               + [llama_bench_source(d) for d in llama_bench_dirs] + list(extra or []))
    rows = []
    it = sources
    if progress:
        from tqdm import tqdm
        it = tqdm(sources, desc="truth table sources", unit="source")
    for s in it:
        rows += rows_for(s)
    return rows, sources
